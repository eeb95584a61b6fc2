package classify

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func TestParseResolvConf(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"empty", "", nil},
		{"v4 and v6", "nameserver 192.0.2.53\nnameserver 2001:db8::53\n", []string{"192.0.2.53", "2001:db8::53"}},
		{"zone", "nameserver fe80::53%eth0\n", []string{"fe80::53%eth0"}},
		{"no final newline", "nameserver 192.0.2.1", []string{"192.0.2.1"}},
		{"comments", "# nameserver 192.0.2.9\n; nameserver 192.0.2.8\nnameserver 192.0.2.1 # trailing\nnameserver 192.0.2.2;x\n", []string{"192.0.2.1", "192.0.2.2"}},
		{"other keywords", "search example.test\noptions ndots:2 edns0\ndomain example.test\nnameserver 198.51.100.1\n", []string{"198.51.100.1"}},
		{"garbage", "nameserver\nnameserver not-an-ip\nnameserverx 192.0.2.3\nnameserver 192.0.2.300\nname server 192.0.2.4\n\x00\xff\n", nil},
		{"blanks and tabs", "  nameserver\t192.0.2.5  \r\n\tnameserver 192.0.2.6\r\n", []string{"192.0.2.5", "192.0.2.6"}},
		{"extra fields", "nameserver 192.0.2.7 198.51.100.7\n", []string{"192.0.2.7"}},
		{"duplicates", "nameserver 192.0.2.1\nnameserver 192.0.2.1\n", []string{"192.0.2.1"}},
		{"more than three", "nameserver 192.0.2.1\nnameserver 192.0.2.2\nnameserver 192.0.2.3\nnameserver 192.0.2.4\n", []string{"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"}},
		{"stub", "nameserver 127.0.0.53\noptions edns0 trust-ad\n", []string{"127.0.0.53"}},
		{"long line", strings.Repeat("x", 200000) + "\nnameserver 192.0.2.9\n", []string{"192.0.2.9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseResolvConf(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			var want []netip.Addr
			for _, s := range tt.want {
				want = append(want, netip.MustParseAddr(s))
			}
			if !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestParseResolvConfReadError(t *testing.T) {
	boom := errors.New("boom")
	r := iotest.DataErrReader(strings.NewReader("nameserver 192.0.2.1\n"))
	if _, err := ParseResolvConf(r); err != nil {
		t.Fatalf("DataErrReader EOF: %v", err)
	}
	if _, err := ParseResolvConf(iotest.ErrReader(boom)); !errors.Is(err, boom) {
		t.Errorf("err %v, want wrapped boom", err)
	}
}

func TestLoadResolvConf(t *testing.T) {
	dir := t.TempDir()
	got, err := LoadResolvConf(filepath.Join(dir, "missing"))
	if got != nil || err != nil {
		t.Errorf("missing file: %v, %v", got, err)
	}
	p := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(p, []byte("nameserver 192.0.2.53\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err = LoadResolvConf(p)
	if err != nil || !slices.Equal(got, []netip.Addr{netip.MustParseAddr("192.0.2.53")}) {
		t.Errorf("file: %v, %v", got, err)
	}
	if _, err := LoadResolvConf(dir); err == nil {
		t.Error("directory: no error")
	}
}

func TestDefaultResolverSockets(t *testing.T) {
	got := DefaultResolverSockets()
	for _, want := range []string{"/run/nscd/socket", "/var/run/nscd/socket", "/run/systemd/resolve/io.systemd.Resolve"} {
		if !slices.Contains(got, want) {
			t.Errorf("missing %s in %v", want, got)
		}
	}
	got[0] = "changed"
	if DefaultResolverSockets()[0] == "changed" {
		t.Error("DefaultResolverSockets shares its slice")
	}
}
