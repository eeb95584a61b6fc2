// Package container checks nettrap's container image for real: it runs
// scripts/container-test.sh, which builds the Dockerfile with Podman and
// runc from a Go base image made from this machine's toolchain, and runs
// leaky and clean suites through the image's entrypoint as root and as
// --user 65534, under the runtime's default seccomp profile and with
// --network=none.
//
// It takes minutes and needs root, so it runs only when
// NETTRAP_CONTAINER_TEST=1 (.ci/run sets it).
package container
