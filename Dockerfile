# nettrap in a container: the Go toolchain, with nettrap as the entrypoint.
#
#   docker build -t nettrap .
#   docker run --rm -v "$PWD:/src" -w /src nettrap            # nettrap -- go test ./...
#   docker run --rm -v "$PWD:/src" -w /src nettrap go test -race ./pkg/...
#   docker run --rm -v "$PWD:/src" -w /src -e NETTRAP_AUDIT_LOG=/src/nettrap-audit.jsonl nettrap
#
# or as the base of a CI image (FROM nettrap). BASE is the image that
# provides the Go toolchain (GOPATH=/go, go on PATH, GOTOOLCHAIN=local), the
# official one by default, named in full (registry and all: Podman without
# unqualified-search registries refuses a short name); pass --build-arg BASE=... to build from a local
# image without a registry (scripts/container-test.sh does).
#
# The builder stage fetches nettrap's modules through GOPROXY; when the build
# context holds a vendor/ directory (go mod vendor), it builds from that and
# needs no network at all (podman build --network=none).
ARG BASE=docker.io/library/golang:1.26

FROM ${BASE} AS build
ARG VERSION=
WORKDIR /src
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
        -ldflags="-s -w -X main.version=${VERSION}" \
        -o /out/nettrap ./cmd/nettrap

FROM ${BASE}
COPY --from=build /out/nettrap /usr/local/bin/nettrap
# Any user must be able to build: --user 65534 has no writable HOME, and the
# official image's GOPATH (/go) is world-writable but its build cache is not
# under it. Override GOCACHE to keep a cache volume elsewhere.
ENV GOCACHE=/tmp/go-build
WORKDIR /src
# nettrap runs the go command confined as well (test cache mode): its own
# module downloads are allowed and audited, every test binary's calls are
# checked; see docs/running.md.
ENTRYPOINT ["nettrap", "--"]
CMD ["go", "test", "./..."]
