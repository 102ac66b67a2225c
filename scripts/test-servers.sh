#!/usr/bin/env bash
# test-servers.sh: kvtier's HTTP suites against a real, independently
# written server: Ollama v0.6.8 on this machine's CPU, serving a tiny
# LLaMA with random weights that the tests write themselves.
#
# Ollama is built from its Go module (go install github.com/ollama/
# ollama@VERSION: cgo and g++, about 2 minutes on 2 cores) once per machine
# into a cache; then the tests in internal/realserver (build tag
# "servers") start it on loopback with its own directories and run
# kvtier probe, interfere, replay and knee against it.
#
# usage: scripts/test-servers.sh [-b KVTIER_BINARY] [-k DIR] [-r REGEXP]
#   -b  the kvtier binary to test (default: build ./cmd/kvtier)
#   -k  keep each test's server log and kvtier results under DIR
#   -r  run only the tests matching REGEXP (go test -run)
#
# Exit status: 0 pass, 1 fail; when Ollama cannot be built here (no route
# to the module proxy, no g++ and not root, a failed build)
# KVTIER_SERVERS_SKIP_STATUS (default 0) after one line that starts
# "test-servers: SKIP:".
#
# Environment: KVTIER_OLLAMA_VERSION (default v0.6.8; newer versions do
# not build from the module zip), KVTIER_OLLAMA_CACHE (default
# ${XDG_CACHE_HOME:-~/.cache}/kvtier/ollama-VERSION), KVTIER_SERVERS_TIMEOUT
# (go test -timeout, default 6m).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

bin= keep= run=.
while getopts "b:k:r:h" opt; do
	case $opt in
	b) bin=$OPTARG ;;
	k) keep=$OPTARG ;;
	r) run=$OPTARG ;;
	*) sed -n '2,25s/^# \{0,1\}//p' "$0"; exit 2 ;;
	esac
done

version=${KVTIER_OLLAMA_VERSION:-v0.6.8}
cache=${KVTIER_OLLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kvtier/ollama-$version}
skip_status=${KVTIER_SERVERS_SKIP_STATUS:-0}
GO=${GO:-go}

say() { echo "test-servers: $*" >&2; }
skip() { echo "test-servers: SKIP: $*"; exit "$skip_status"; }

# need_gxx makes sure g++ is there (Ollama's cgo code is C++): installed
# from Debian's packages when root, else a skip.
need_gxx() {
	command -v g++ >/dev/null && return
	[ "$(id -u)" = 0 ] || skip "Ollama needs g++ to build, and installing it needs root"
	command -v apt-get >/dev/null || skip "Ollama needs g++ to build; no apt-get to install it"
	say "g++ is missing: installing it from Debian's packages (apt-get install -y g++)"
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++; } >&2 ||
		skip "Ollama needs g++ to build; apt-get install g++ failed"
}

# build_ollama builds Ollama into $cache/bin unless a previous run did;
# concurrent runs on one machine wait for each other's build.
build_ollama() {
	mkdir -p "$cache" || skip "cannot create the cache $cache"
	exec 9>"$cache/lock"
	flock 9
	[ -x "$cache/bin/ollama" ] && return
	need_gxx
	local log=$cache/build.log tmp=$cache/bin.partial
	say "building Ollama $version into $cache (once per machine; minutes on 2 cores)"
	if ! (cd "$cache" && "$GO" mod download -x "github.com/ollama/ollama@$version") >"$log" 2>&1; then
		skip "cannot fetch github.com/ollama/ollama@$version from the module proxy ($(go env GOPROXY)): $(tail -n 1 "$log")"
	fi
	rm -rf "$tmp"
	if ! (cd "$cache" && GOBIN=$tmp "$GO" install "github.com/ollama/ollama@$version") >>"$log" 2>&1; then
		tail -n 20 "$log" >&2
		skip "building Ollama $version failed (log: $log)"
	fi
	rm -rf "$cache/bin" && mv "$tmp" "$cache/bin" || skip "cannot move the build into $cache/bin"
	say "built $(du -h "$cache/bin/ollama" | cut -f1) $cache/bin/ollama"
}

build_ollama
ollama=$cache/bin/ollama

cd "$root" || exit 1
if [ -z "$bin" ]; then
	bin=$(mktemp -d)/kvtier
	"$GO" build -o "$bin" ./cmd/kvtier || exit 1
fi
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
args=(-ollama "$ollama" -kvtier "$bin")
[ -n "$keep" ] && args+=(-keep "$(mkdir -p "$keep" && cd "$keep" && pwd)")

"$GO" vet -tags servers ./internal/realserver || exit 1
exec "$GO" test -tags servers -count=1 -v -timeout "${KVTIER_SERVERS_TIMEOUT:-6m}" -run "$run" ./internal/realserver -args "${args[@]}"
