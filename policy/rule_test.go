package policy

import (
	"net/netip"
	"testing"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		in     string
		prefix string
		port   uint16
	}{
		{"10.0.0.0/8", "10.0.0.0/8", 0},
		{"10.1.2.3/8", "10.0.0.0/8", 0},
		{"10.0.0.0/8:5432", "10.0.0.0/8", 5432},
		{"192.0.2.7", "192.0.2.7/32", 0},
		{"192.0.2.7:443", "192.0.2.7/32", 443},
		{"::/128", "::/128", 0},
		{"0.0.0.0/32", "0.0.0.0/32", 0},
		{"2001:db8::/32", "2001:db8::/32", 0},
		{"2001:db8::/32:443", "2001:db8::/32", 443},
		{"[2001:db8::/32]:443", "2001:db8::/32", 443},
		{"[2001:db8::1]:80", "2001:db8::1/128", 80},
		{"2001:db8::1", "2001:db8::1/128", 0},
		{" 10.0.0.0/8 ", "10.0.0.0/8", 0},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.in)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tt.in, err)
			continue
		}
		if r.Prefix.String() != tt.prefix || r.Port != tt.port {
			t.Errorf("ParseRule(%q) = %s port %d, want %s port %d", tt.in, r.Prefix, r.Port, tt.prefix, tt.port)
		}
		back, err := ParseRule(r.String())
		if err != nil || back != r {
			t.Errorf("ParseRule(%q).String() = %q does not parse back (%v, %v)", tt.in, r.String(), back, err)
		}
	}
}

func TestParseRuleRejects(t *testing.T) {
	for _, in := range []string{
		"", "example.com", "example.com:443", "localhost", "10.0.0.0/33", "10.0.0.0/8:0",
		"10.0.0.0/8:99999", "10.0.0.0/8:http", "[::1", "[::1]x", "fe80::1%eth0", "1.2.3", "10.0.0.0/8/9",
	} {
		if r, err := ParseRule(in); err == nil {
			t.Errorf("ParseRule(%q) = %v, want an error", in, r)
		}
	}
}

func TestRuleMatch(t *testing.T) {
	tests := []struct {
		rule string
		dest string
		want bool
	}{
		{"10.0.0.0/8", "10.1.2.3:80", true},
		{"10.0.0.0/8", "11.0.0.1:80", false},
		{"10.0.0.0/8:5432", "10.1.2.3:5432", true},
		{"10.0.0.0/8:5432", "10.1.2.3:5433", false},
		{"10.0.0.0/8", "[::ffff:10.1.2.3]:80", true},
		{"0.0.0.0/32", "[::ffff:0.0.0.0]:80", true},
		{"::/128", "[::]:8080", true},
		{"::/128", "0.0.0.0:8080", false},
		{"2001:db8::/32", "[2001:db8::1%eth0]:80", true},
		{"2001:db8::/32", "[2001:db9::1]:80", false},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.rule)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Match(netip.MustParseAddrPort(tt.dest)); got != tt.want {
			t.Errorf("%s matches %s = %v, want %v", tt.rule, tt.dest, got, tt.want)
		}
	}
}

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"10.0.0.0/8:5432", "[2001:db8::/32]:443", "::/128", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		back, err := ParseRule(r.String())
		if err != nil || back != r {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, r, r.String(), back, err)
		}
	})
}
