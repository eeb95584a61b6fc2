module github.com/nettrap/nettrap

go 1.26.0

require (
	github.com/elastic/go-seccomp-bpf v1.6.0
	github.com/spf13/pflag v1.1.0
	github.com/vishvananda/netlink v1.3.1
	golang.org/x/net v0.63.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/cilium/ebpf v0.22.0
	github.com/google/nftables v0.3.0
	github.com/moby/sys/reexec v0.1.0
	github.com/vishvananda/netns v0.0.5
	golang.org/x/arch v0.33.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/mdlayher/netlink v1.7.3-0.20250113171957-fbb4dce95f42 // indirect
	github.com/mdlayher/socket v0.5.1 // indirect
	golang.org/x/sync v0.20.0 // indirect
)
