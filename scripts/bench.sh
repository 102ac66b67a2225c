#!/usr/bin/env bash
# make bench: the tier sweep on whatever this machine has, then MB2, the
# HTTP four-tier probe and MB1, a synthetic trace's analysis and a capacity
# plan on the sweep's costs, a capacity knee on the embedded simulator,
# then plots, REPORT.md and REPORT.html (the same report as one
# self-contained page, figures inline), all under one
# results directory. Each suite writes its own subdirectory (CSV, summary,
# manifest.json); a suite that cannot run here writes skipped rows saying
# why, and the others still run.
#
# Each suite runs its shortest meaningful configuration, planned so that
# the whole run takes about 6 minutes on a 2-core machine without a GPU
# (sweep ~3 min, probe ~1 min, MB1 ~1.5 min, transfer, trace, plan and the
# knee under 30 s together); FULL=1 runs the full sweeps (every layout,
# L = 1k to 64k, MB2 to 4 GiB, the probe at 1k-64k, MB1 at D = 1,4,8 and
# P = 2k-128k, the reference's knee), which take the better part of an hour.
#
# usage: [FULL=1] scripts/bench.sh BIN OUTDIR
# Environment:
#   KVTIER_ENDPOINT   a vLLM server (http://host:port); unset: embedded kvtier sim
#   KVTIER_PRODUCER   a second vLLM instance for the remote HTTP tier
#   KVTIER_PEER       a kvtier serve peer HOST:PORT; unset: embedded loopback peer
#   KVTIER_TOKEN      the run token of that peer (kvtier serve --token); sweep and
#                     transfer send it
#   KVTIER_BACKEND    auto (default), host or cuda
#   KVTIER_PREFIXES   tier sweep prefixes (default 1k,8k,16k,32k,64k; FULL 1k-64k doubling)
#   KVTIER_LAYOUTS    tier sweep layouts (default layerwise; FULL layerwise,blockwise)
#   KVTIER_REPS       measured reps per configuration (default 3)
#   KVTIER_SIZES      transfer sizes (default 16MiB,64MiB,256MiB,1GiB; FULL to 4GiB)
#   KVTIER_DISK_DIR   the disk tier's directory (default: the results directory)
#   KVTIER_DISK_MAX   the disk tier's file at most (default 1GiB: prefixes
#                     up to 8k tokens for Qwen3-Coder, about 20 s on a
#                     1 GB/s virtual disk, a few on NVMe; FULL 4GiB, up to
#                     32k; larger ones are skipped rows saying so)
set -u
bin=${1:?usage: bench.sh BIN OUTDIR}
out=${2:?usage: bench.sh BIN OUTDIR}
mkdir -p "$out" || exit 2
backend=${KVTIER_BACKEND:-auto}
full=${FULL:-}
if [ -n "$full" ]; then
	# Said first: the simulator's cost model puts the probe at about 10
	# minutes and MB1 at about 36 (each says its own estimate as it
	# starts), the sweeps and the rest at about 15 on 2 cores.
	echo "== FULL=1: the full grids, estimated about an hour on a 2-core machine (probe ~10 min, MB1 ~36 min, sweeps ~15 min); without FULL about 6 minutes" >&2
	prefixes=${KVTIER_PREFIXES:-1k,2k,4k,8k,16k,32k,64k}
	layouts=${KVTIER_LAYOUTS:-layerwise,blockwise}
	sizes=${KVTIER_SIZES:-16MiB,64MiB,256MiB,1GiB,4GiB}
	copies=percopy,batch,contiguous
	probe_prefixes=1k,2k,4k,8k,16k,32k,64k mb1=(--decode 1,4,8 --prefill 2k,8k,32k,64k,128k --reps 3)
	knee=()
	disk_max=${KVTIER_DISK_MAX:-4GiB}
else
	# The reference's prefix lengths and 1k for the cost model's fit, the
	# engine's layout and copy modes (contiguous, the upper bound, only
	# with FULL: each copy mode sets its pools up anew, about a minute at
	# 64k on the host backend); the knee's load scaled down (see below).
	prefixes=${KVTIER_PREFIXES:-1k,8k,16k,32k,64k}
	copies=percopy,batch
	layouts=${KVTIER_LAYOUTS:-layerwise}
	sizes=${KVTIER_SIZES:-16MiB,64MiB,256MiB,1GiB}
	probe_prefixes=1k,4k,16k mb1=(--decode 1,8 --prefill 2k,8k,16k --reps 2)
	knee=(--sessions 4 --turns 4 --system-prompt 1k --turn-tokens 512 --output-tokens 16
		--capacities 0.4GB,0.8GB,1.2GB,3.2GB,4.8GB)
	disk_max=${KVTIER_DISK_MAX:-1GiB}
fi
reps=${KVTIER_REPS:-3}
status=0
interrupted=0
trap 'interrupted=1' INT TERM

step() { # name, command...
	local name=$1
	shift
	[ "$interrupted" = 1 ] && return
	echo "== $name: $*" >&2
	local t0=$SECONDS
	"$@"
	local rc=$?
	echo "== $name: $((SECONDS - t0)) s" >&2
	if [ $rc -ne 0 ]; then
		echo "== $name exited $rc (rows measured so far are kept)" >&2
		[ $rc -ge 128 ] && interrupted=1
		status=1
	fi
}

"$bin" info >"$out/info.txt" 2>&1 && cat "$out/info.txt" >&2

peer=()
[ -n "${KVTIER_PEER:-}" ] && peer=(--peer "$KVTIER_PEER")
disk=(--disk-max "$disk_max")
[ -n "${KVTIER_DISK_DIR:-}" ] && disk+=(--disk-dir "$KVTIER_DISK_DIR")
step sweep "$bin" sweep --backend "$backend" --prefix "$prefixes" --layout "$layouts" --copy "$copies" --reps "$reps" --warmup 1 \
	"${peer[@]}" "${disk[@]}" --out "$out/sweep"
step transfer "$bin" transfer "${peer[@]}" --sizes "$sizes" --reps "$reps" \
	--layout layerwise,blockwise,contiguous --out "$out/transfer"
# The store direction in its shortest configuration: what putting a 1k
# prefix into host memory, the disk (with and without fdatasync) and the
# peer's pool costs (a peer given by KVTIER_PEER must run kvtier serve
# --writable), and the disk anchor replaying kvtier's own 16 KiB reads
# and writes through fio (median kvtier/fio of 3 rounds; skipped without
# fio or go).
step "sweep store" "$bin" sweep --backend "$backend" --direction store --tiers host,disk,remote --prefix 1k \
	--layout layerwise --copy percopy --reps 2 --warmup 1 --io uring --sync none,fdatasync \
	"${peer[@]}" "${disk[@]}" --out "$out/sweep-store"
if command -v go >/dev/null && command -v fio >/dev/null; then
	step "disk vs fio" env KVTIER_FIO_PREFIX=1k KVTIER_FIO_CASES=scattered16k,scattered16k-write \
		${KVTIER_DISK_DIR:+KVTIER_DISK_DIR="$KVTIER_DISK_DIR"} \
		go test -run '^$' -bench DiskVsFio -benchtime 1x ./bench
fi

if [ -n "${KVTIER_ENDPOINT:-}" ]; then
	target=(--base-url "$KVTIER_ENDPOINT")
	remote=()
	[ -n "${KVTIER_PRODUCER:-}" ] && remote=(--producer "$KVTIER_PRODUCER")
	step probe "$bin" probe "${target[@]}" "${remote[@]}" --prefix 1k,2k,4k,8k,16k,32k,64k --reps 3 --out "$out/probe"
	step interfere "$bin" interfere "${target[@]}" --decode 1,4,8 --prefill 2k,8k,32k,64k,128k --reps 3 --out "$out/mb1"
else
	# The embedded sim runs in real time so its TTFTs read like the h20
	# reference; a short list keeps make bench to a few minutes.
	step probe "$bin" probe --sim --prefix "$probe_prefixes" --reps 3 --out "$out/probe"
	step interfere "$bin" interfere --sim "${mb1[@]}" --out "$out/mb1"
fi

# The trace planner: a synthetic trace (about 12,000 requests and 290,000
# block references), its analysis, and a plan on the sweep's measured tier
# costs (seconds, not minutes; each draws its own plots).
step "trace generate" "$bin" trace --generate "$out/trace.jsonl" --seed 1
[ -f "$out/trace.jsonl" ] && step trace "$bin" trace --trace "$out/trace.jsonl" --instances 4 --route session --out "$out/trace" >/dev/null
[ -f "$out/trace.jsonl" ] && [ -f "$out/sweep/sweep.csv" ] &&
	step plan "$bin" plan --trace "$out/trace.jsonl" --costs "$out/sweep" --hbm 40GiB,80GiB,160GiB --dram 0,512GiB,2TiB \
		--remote 0,inf --out "$out/plan" >/dev/null

# The capacity knee on the embedded simulator, in real time: by default a
# load scaled down from the reference's so that it takes about 11 s (4
# sessions of 4 turns, 1k-token system prompts, 512 new and 16 output
# tokens a turn: a 1.2 GB working set) over five capacities around its
# working set; FULL=1 runs the reference's (about 1.5 min). Its rows and
# plots say simulated and name the load.
step knee "$bin" knee "${knee[@]}" --out "$out/knee" >/dev/null

for d in "$out"/sweep "$out"/sweep-store "$out"/transfer "$out"/probe "$out"/mb1; do
	[ -d "$d" ] && step "plot $(basename "$d")" "$bin" plot "$d"
done
dirs=()
for d in "$out"/sweep "$out"/sweep-store "$out"/transfer "$out"/probe "$out"/mb1 "$out"/trace "$out"/plan "$out"/knee; do [ -d "$d" ] && dirs+=("$d"); done
step report "$bin" report --html --out "$out" "${dirs[@]}"
echo "== results in $out" >&2
[ "$interrupted" = 1 ] && exit 130
exit $status
