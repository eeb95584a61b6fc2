#!/usr/bin/env bash
# demo.sh: run the examples/ suite under nettrap, the README's first command.
#
#   scripts/demo.sh [go test flags, e.g. -v]
#
# It builds nettrap, then enters a private network namespace (unshare; as a
# user that is not root, with a user namespace) whose only interface is lo,
# puts the weather API's documentation address 203.0.113.80 on lo, serves a
# fake API there (examples/testdata/fakeapi), and runs
#
#   nettrap -- go test ./...
#
# in examples/. Nothing the suite does can leave the machine. The suite fails
# on purpose: TestForecastBergen forgot its mock and is blocked; the marked
# TestLiveForecast reaches the fake API. The exit status is nettrap's (1).
#
# Environment: DEMO_NETTRAP=path uses that nettrap binary instead of building.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
api=203.0.113.80

# outside builds everything (the go command may fetch modules here, outside
# the namespace) and re-runs this script inside a private network namespace.
outside() {
	local flags=(--net) code=0
	work=$(mktemp -d) # global: the EXIT trap needs it
	trap 'rm -rf "$work"' EXIT
	local nettrap=${DEMO_NETTRAP:-}
	if [ -z "$nettrap" ]; then
		(cd "$root" && go build -buildvcs=false -o "$work/nettrap" ./cmd/nettrap)
		nettrap=$work/nettrap
	fi
	(cd "$root/examples" && go build -buildvcs=false -o "$work/fakeapi" ./testdata/fakeapi)
	[ "$(id -u)" = 0 ] || flags+=(--map-root-user)
	if ! unshare "${flags[@]}" true 2>/dev/null; then
		echo "demo: cannot create a private network namespace (unshare ${flags[*]});" \
			"run as root or enable unprivileged user namespaces" >&2
		exit 125
	fi
	DEMO_STAGE=inside DEMO_WORK=$work DEMO_NETTRAP=$nettrap \
		unshare "${flags[@]}" -- "$0" "$@" || code=$?
	exit "$code"
}

inside() {
	local work=$DEMO_WORK fake code=0
	# A namespace made by unshare has only lo, and it is down: with nothing
	# else there is no route off the machine.
	ip link set lo up
	ip addr add "$api/32" dev lo
	"$work/fakeapi" -addr "$api:80" -log "$work/fakeapi.log" -ready "$work/ready" &
	fake=$!
	for _ in $(seq 100); do
		[ -e "$work/ready" ] && break
		kill -0 "$fake" 2>/dev/null || { echo "demo: the fake API did not start" >&2; exit 125; }
		sleep 0.1
	done
	[ -e "$work/ready" ] || { echo "demo: the fake API did not start" >&2; exit 125; }
	cd "$root/examples"
	echo "\$ nettrap -- go test ${*:+$* }./...   # in examples/, $api is a fake API on lo"
	"$DEMO_NETTRAP" -- go test "$@" ./... || code=$?
	kill "$fake"
	wait "$fake" 2>/dev/null || true
	echo
	echo "The fake API at $api received:"
	sed 's/^/  /' "$work/fakeapi.log" 2>/dev/null || true
	exit "$code"
}

if [ "${DEMO_STAGE:-}" = inside ]; then
	inside "$@"
else
	outside "$@"
fi
