module github.com/nettrap/nettrap

go 1.26.0

require (
	github.com/elastic/go-seccomp-bpf v1.6.0
	github.com/spf13/pflag v1.1.0
	github.com/vishvananda/netlink v1.3.1
	golang.org/x/net v0.63.0
	golang.org/x/sys v0.50.0
)

require github.com/vishvananda/netns v0.0.5
