#!/usr/bin/env bash
# test-servers.sh: kvtier's HTTP suites against real, independently
# written servers on this machine's CPU: Ollama v0.6.8 (its llama.cpp
# runner) and Ollama v0.9.6 with OLLAMA_NEW_ENGINE=1 (its own Go runner,
# runner/ollamarunner: another scheduler and cache), each serving a tiny
# LLaMA with random weights that the tests write themselves.
#
# Each Ollama is built from its Go module (go install github.com/ollama/
# ollama@VERSION: cgo and g++, minutes on 2 cores) once per machine into a
# cache; then the tests in internal/realserver (build tag "servers")
# start it on loopback with its own directories and run kvtier probe,
# interfere, replay and knee against it.
#
# usage: scripts/test-servers.sh [-b KVTIER_BINARY] [-k DIR] [-r REGEXP]
#   -b  the kvtier binary to test (default: build ./cmd/kvtier)
#   -k  keep each test's server log and kvtier results under DIR
#   -r  run only the tests matching REGEXP (go test -run)
#
# Exit status: 0 pass, 1 fail. When an Ollama cannot be built here (no
# route to the module proxy, no g++ and not root, a failed build) one line
# starting "test-servers: SKIP:" says so and the other engine is tested;
# when neither can be, the script exits KVTIER_SERVERS_SKIP_STATUS
# (default 0).
#
# Environment: KVTIER_OLLAMA_VERSION (default v0.6.8), KVTIER_OLLAMA_NEW_VERSION
# (default v0.9.6, run with OLLAMA_NEW_ENGINE=1; "none" skips it),
# KVTIER_OLLAMA_CACHE_ROOT (default ${XDG_CACHE_HOME:-~/.cache}/kvtier: each
# version under ollama-VERSION; KVTIER_OLLAMA_CACHE, where set, is
# KVTIER_OLLAMA_VERSION's), KVTIER_OLLAMA_CGO_FLAGS (the C and C++ flags
# of the builds, default "-O1 -g0"), KVTIER_SERVERS_TIMEOUT (go test
# -timeout, default 12m).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

bin= keep= run=.
while getopts "b:k:r:h" opt; do
	case $opt in
	b) bin=$OPTARG ;;
	k) keep=$OPTARG ;;
	r) run=$OPTARG ;;
	*) sed -n '2,30s/^# \{0,1\}//p' "$0"; exit 2 ;;
	esac
done

version=${KVTIER_OLLAMA_VERSION:-v0.6.8}
newversion=${KVTIER_OLLAMA_NEW_VERSION:-v0.9.6}
cacheroot=${KVTIER_OLLAMA_CACHE_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/kvtier}
skip_status=${KVTIER_SERVERS_SKIP_STATUS:-0}
# Ollama's C and C++ (llama.cpp and ggml, most of a fresh build's CPU
# time) compile with cgo's default -O2 -g unless told: the tests need
# neither the debug information nor the last optimisations of a tiny
# model's kernels (ggml's C kernels keep their own -O3, which comes
# after these). docs/testing.md has the measured difference.
cgoflags=${KVTIER_OLLAMA_CGO_FLAGS:--O1 -g0}
GO=${GO:-go}

# The SKIP lines go to the script's stdout, also from inside $(...).
exec 3>&1
say() { echo "test-servers: $*" >&2; }
skip() { echo "test-servers: SKIP: $*" >&3; }

# need_gxx makes sure g++ is there (Ollama's cgo code is C++): installed
# from Debian's packages when root; else it says why and fails.
need_gxx() {
	command -v g++ >/dev/null && return
	if [ "$(id -u)" != 0 ]; then
		skip "Ollama needs g++ to build, and installing it needs root"
		return 1
	fi
	if ! command -v apt-get >/dev/null; then
		skip "Ollama needs g++ to build; no apt-get to install it"
		return 1
	fi
	say "g++ is missing: installing it from Debian's packages (apt-get install -y g++)"
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++; } >&2 && return
	skip "Ollama needs g++ to build; apt-get install g++ failed"
	return 1
}

# build_ollama VERSION builds Ollama VERSION into its cache unless a
# previous run did, and prints the binary's path; concurrent runs on one
# machine wait for each other's build. On failure it prints a SKIP line
# and fails.
build_ollama() {
	local v=$1 cache=$cacheroot/ollama-$1
	[ "$v" = "$version" ] && cache=${KVTIER_OLLAMA_CACHE:-$cache}
	mkdir -p "$cache" || { skip "cannot create the cache $cache"; return 1; }
	(
		flock 9
		[ -x "$cache/bin/ollama" ] && exit 0
		need_gxx || exit 1
		log=$cache/build.log tmp=$cache/bin.partial
		say "building Ollama $v into $cache (once per machine; minutes on 2 cores)"
		if ! (cd "$cache" && "$GO" mod download -x "github.com/ollama/ollama@$v") >"$log" 2>&1; then
			skip "cannot fetch github.com/ollama/ollama@$v from the module proxy ($("$GO" env GOPROXY)): $(tail -n 1 "$log")"
			exit 1
		fi
		rm -rf "$tmp"
		if ! (cd "$cache" && GOBIN=$tmp CGO_CFLAGS=$cgoflags CGO_CXXFLAGS=$cgoflags "$GO" install "github.com/ollama/ollama@$v") >>"$log" 2>&1; then
			tail -n 20 "$log" >&2
			skip "building Ollama $v failed (log: $log)"
			exit 1
		fi
		rm -rf "$cache/bin" && mv "$tmp" "$cache/bin" || { skip "cannot move the build into $cache/bin"; exit 1; }
		say "built $(du -h "$cache/bin/ollama" | cut -f1) $cache/bin/ollama"
	) 9>"$cache/lock" || return 1
	echo "$cache/bin/ollama"
}

args=()
if ollama=$(build_ollama "$version"); then
	args+=(-ollama "$ollama" -ollama-version "$version")
fi
if [ "$newversion" != none ] && ollama_new=$(build_ollama "$newversion"); then
	args+=(-ollama-new "$ollama_new" -ollama-new-version "$newversion")
fi
if [ ${#args[@]} -eq 0 ]; then
	echo "test-servers: SKIP: no Ollama could be built here (the lines above say why)"
	exit "$skip_status"
fi

cd "$root" || exit 1
if [ -z "$bin" ]; then
	bin=$(mktemp -d)/kvtier
	"$GO" build -o "$bin" ./cmd/kvtier || exit 1
fi
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
args+=(-kvtier "$bin")
[ -n "$keep" ] && args+=(-keep "$(mkdir -p "$keep" && cd "$keep" && pwd)")

"$GO" vet -tags servers ./internal/realserver || exit 1
exec "$GO" test -tags servers -count=1 -v -timeout "${KVTIER_SERVERS_TIMEOUT:-12m}" -run "$run" ./internal/realserver -args "${args[@]}"
