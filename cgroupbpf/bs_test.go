package cgroupbpf

import "testing"

func TestBackstopLoads(t *testing.T) {
	b, err := NewBackstop(12345)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, err := b.Program()
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
}
