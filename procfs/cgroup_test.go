package procfs

import "testing"

func TestCgroup2Mount(t *testing.T) {
	hybrid := "25 22 0:22 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755\n" +
		"26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw\n" +
		"27 25 0:24 / /sys/fs/cgroup/cpu rw shared:11 - cgroup cgroup rw,cpu\n"
	unified := "30 1 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
	for _, c := range []struct{ in, want string }{
		{hybrid, "/sys/fs/cgroup/unified"},
		{unified, "/sys/fs/cgroup"},
		{"31 1 0:27 / /mnt/x rw - cgroup cgroup2x rw\n", ""},
		{"", ""},
	} {
		got, err := cgroup2Mount(c.in)
		if got != c.want || (err != nil) != (c.want == "") {
			t.Errorf("cgroup2Mount(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestCgroup2Path(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"4:memory:/a\n0::/user.slice/x.scope\n", "/user.slice/x.scope"},
		{"0::/\n", "/"},
		{"1:name=systemd:/\n", ""},
	} {
		got, err := cgroup2Path(c.in)
		if got != c.want || (err != nil) != (c.want == "") {
			t.Errorf("cgroup2Path(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestCgroup2Mounts(t *testing.T) {
	two := "26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw\n" +
		"27 25 0:24 / /sys/fs/cgroup/cpu rw shared:11 - cgroup cgroup rw,cpu\n" +
		"40 1 0:23 /x /mnt/with\\040space\\134 rw - cgroup2 cgroup2 rw\n" +
		"41 1 0:23 / /mnt/bad\\04 rw - cgroup2 cgroup2 rw\n"
	got := cgroup2Mounts(two)
	want := []string{"/sys/fs/cgroup/unified", `/mnt/with space\`, `/mnt/bad\04`}
	if len(got) != len(want) {
		t.Fatalf("cgroup2Mounts = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mount %d = %q, want %q", i, got[i], want[i])
		}
	}
	if got := cgroup2Mounts("31 1 0:27 / /mnt/x rw - cgroup cgroup2x rw\n"); len(got) != 0 {
		t.Errorf("a cgroup v1 mount read as cgroup2: %q", got)
	}
}
