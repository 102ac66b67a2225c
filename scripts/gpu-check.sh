#!/usr/bin/env bash
# gpu-check.sh: the cuda backend on a real GPU, in under six minutes.
#
#   scripts/gpu-check.sh [OUTDIR]        (default $OUT, else ./gpu-check-<time>)
#
# 1. builds kvtier with `go build` where Go is installed; else uses
#    $KVTIER_BIN, else bin/kvtier. Machines without Go: build on any x86-64
#    Linux box first and carry the binary along:
#        CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" go build -o bin/kvtier ./cmd/kvtier
#    (no CUDA toolkit needed: libcuda.so.1 / libcublas are dlopen'd at run
#    time; the binary needs glibc only.)
# 2. `kvtier info` (driver, cuBLAS, NVML, PCIe link, NUMA) -> info.txt
# 3. sweeps over 1k..64k tokens, both layouts, every copy mode: recompute
#    -> sweep-recompute/, hbm and host from pinned memory -> sweep-pinned/,
#    host from pageable memory -> sweep-pageable/
# 4. PyTorch's contiguous pinned H2D bandwidth on the same GPU for the byte
#    count of kvtier's contiguous 64k host row (torch.cuda events, warm-up),
#    and the ratio kvtier / PyTorch -> torch.txt
# 5. a short summary on stdout and in summary.txt; everything logged in
#    gpu-check.log.
#
# Environment: KVTIER_BIN, GPU (ordinal, default 0), NUMA (default -1),
# MODEL (default: kvtier's default model), PYTHON (default python3),
# PREFIXES (default 1k,2k,4k,8k,16k,32k,64k) and TOP (the prefix, in
# tokens, of the summary and the PyTorch comparison; default 65536; a dry
# run on the fake libcuda uses PREFIXES=64,128 TOP=128),
# KVTIER_LIBCUDA / KVTIER_LIBCUBLAS (library overrides, passed through).
# REPS and WARMUP (default 3 and 1: a check, not a study);
# BUDGET_S (default 340) is the whole run's deadline: every step has its
# own `timeout` within it; rows already measured stay in the CSV when a
# step is cut short. Nothing here needs root or the network.
set -u

T0=$(date +%s)
OUTDIR=${1:-${OUT:-./gpu-check-$(date -u +%Y%m%dT%H%M%SZ)}}
mkdir -p "$OUTDIR" || exit 2
OUTDIR=$(cd "$OUTDIR" && pwd)
LOG=$OUTDIR/gpu-check.log
GPU=${GPU:-0}
NUMA=${NUMA:--1}
PY=${PYTHON:-python3}
PREFIXES=${PREFIXES:-1k,2k,4k,8k,16k,32k,64k}
TOP=${TOP:-65536}
MODEL_ARGS=()
[ -n "${MODEL:-}" ] && MODEL_ARGS=(--model "$MODEL")
cd "$(dirname "$0")/.." || exit 2

DEADLINE=$((T0 + ${BUDGET_S:-340}))
# left PLANNED: seconds a step may take, PLANNED at most, keeping RESERVE
# seconds for the steps after it.
left() { local l=$((DEADLINE - $(date +%s) - ${2:-0})); [ "$l" -gt "$1" ] && l=$1; [ "$l" -lt 5 ] && l=5; echo "$l"; }
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$LOG"; }
run() { # run TIMEOUT CMD...: logs the command and its output, returns its status
	local t=$1
	shift
	log "\$ $*"
	timeout --signal=INT --kill-after=10 "$t" "$@" >>"$LOG" 2>&1
	local rc=$?
	[ $rc -eq 124 ] && log "timed out after ${t}s (rows measured so far are kept)"
	log "exit $rc"
	return $rc
}

# --- 1. the binary ---
BIN=${KVTIER_BIN:-}
if [ -z "$BIN" ] && command -v go >/dev/null 2>&1; then
	log "building kvtier with $(go version)"
	if CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" timeout "$(left 120 200)" go build -o bin/kvtier ./cmd/kvtier >>"$LOG" 2>&1; then
		BIN=bin/kvtier
	else
		log "go build failed (see $LOG)"
	fi
fi
[ -z "$BIN" ] && [ -x bin/kvtier ] && BIN=bin/kvtier
if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
	log "no kvtier binary: install Go, or set KVTIER_BIN, or carry bin/kvtier (see the header of $0)"
	exit 2
fi
log "kvtier binary: $BIN"
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >"$OUTDIR/nvidia-smi.txt" 2>&1

# --- 2. info ---
run 30 "$BIN" info
"$BIN" info >"$OUTDIR/info.txt" 2>&1

# --- 3. sweeps ---
# Recompute first in its own run, so a slow copy sweep cannot starve it.
COMMON=(--backend cuda --gpu "$GPU" --numa "$NUMA" --prefix "$PREFIXES"
	--layout layerwise,blockwise --copy percopy,batch,contiguous --reps "${REPS:-3}" --warmup "${WARMUP:-1}" --budget 10s "${MODEL_ARGS[@]}")
run "$(left 50 230)" "$BIN" sweep "${COMMON[@]}" --tiers recompute --out "$OUTDIR/sweep-recompute"
run "$(left 160 75)" "$BIN" sweep "${COMMON[@]}" --tiers hbm,host --host-mem pinned --out "$OUTDIR/sweep-pinned"
run "$(left 60 15)" "$BIN" sweep "${COMMON[@]}" --tiers host --host-mem pageable --out "$OUTDIR/sweep-pageable"

# col FILE NAME: the column number of NAME in FILE's header
col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }

# --- 4. PyTorch reference ---
CSV=$OUTDIR/sweep-pinned/sweep.csv
BYTES="" KV_GBPS=""
if [ -f "$CSV" ]; then
	cT=$(col "$CSV" tier) cC=$(col "$CSV" copy) cP=$(col "$CSV" prefix_tokens) cS=$(col "$CSV" status)
	cB=$(col "$CSV" bytes) cG=$(col "$CSV" gbps) cL=$(col "$CSV" layout)
	# kvtier's contiguous pinned host rows at TOP tokens (layerwise; both
	# layouts move the same bytes); the median of their GB/s.
	rows=$(awk -F, -v t="$cT" -v c="$cC" -v p="$cP" -v s="$cS" -v b="$cB" -v g="$cG" -v l="$cL" -v top="$TOP" '
		NR > 1 && $t == "host" && $c == "contiguous" && $p == top && $s == "ok" && $l == "layerwise" { print $b, $g }' "$CSV")
	if [ -n "$rows" ]; then
		BYTES=$(echo "$rows" | awk 'NR == 1 { print $1 }')
		KV_GBPS=$(echo "$rows" | awk '{ print $2 }' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
	fi
fi
TORCH_GBPS=""
if [ -z "$BYTES" ]; then
	log "no ok contiguous $TOP-token host row: PyTorch comparison skipped"
elif ! "$PY" -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1; then
	log "PyTorch with CUDA not importable by $PY: comparison skipped"
else
	log "PyTorch contiguous pinned H2D of $BYTES bytes on cuda:$GPU"
	timeout "$(left 40 0)" "$PY" - "$BYTES" "$GPU" >"$OUTDIR/torch.txt" 2>>"$LOG" <<'EOF'
import sys, statistics, torch
n, gpu = int(sys.argv[1]), int(sys.argv[2])
dev = torch.device("cuda", gpu)
torch.cuda.set_device(dev)
src = torch.empty(n, dtype=torch.uint8, pin_memory=True)
src.fill_(1)
dst = torch.empty(n, dtype=torch.uint8, device=dev)
s = torch.cuda.Stream(device=dev)
start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
samples = []
with torch.cuda.stream(s):
    for i in range(3 + 10):  # 3 warm-up copies discarded
        start.record(s)
        dst.copy_(src, non_blocking=True)
        stop.record(s)
        stop.synchronize()
        if i >= 3:
            samples.append(n / (start.elapsed_time(stop) / 1e3) / 1e9)
print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(dev))
print("bytes", n)
print("gbps_samples", " ".join(f"{x:.2f}" for x in samples))
print("gbps_median", f"{statistics.median(samples):.3f}")
EOF
	cat "$OUTDIR/torch.txt" >>"$LOG"
	TORCH_GBPS=$(awk '$1 == "gbps_median" { print $2 }' "$OUTDIR/torch.txt" 2>/dev/null)
fi

# --- 5. summary ---
{
	echo "gpu-check: $(date -u +%FT%TZ), $(( $(date +%s) - T0 )) s, results in $OUTDIR"
	grep -E '^ *(cuda|cublas|nvml) ' "$OUTDIR/info.txt" 2>/dev/null
	grep -A2 '^GPUs' "$OUTDIR/info.txt" 2>/dev/null | tail -2
	for d in sweep-recompute sweep-pinned sweep-pageable; do
		S=$OUTDIR/$d/sweep_summary.csv
		[ -f "$S" ] || { echo "$d: no summary (see $LOG)"; continue; }
		echo "$d: p50 at $TOP tokens"
		awk -F, -v t="$(col "$S" tier)" -v l="$(col "$S" layout)" -v c="$(col "$S" copy)" -v p="$(col "$S" prefix_tokens)" \
			-v m="$(col "$S" src_mem)" -v g="$(col "$S" gbps_p50)" -v f="$(col "$S" tflops_p50)" -v s="$(col "$S" seconds_p50)" \
			-v n="$(col "$S" n)" -v r="$(col "$S" reason)" -v top="$TOP" '
			NR > 1 && $p == top {
				rate = ($g != "") ? sprintf("%8.2f GB/s", $g) : ($f != "") ? sprintf("%8.2f TFLOP/s", $f) : "       -"
				printf "  %-9s %-9s %-10s %-8s %10.3f ms %s  n=%s %s\n", $t, $l, $c, $m, $s * 1e3, rate, $n, $r }' "$S"
		D=$OUTDIR/$d/sweep.csv
		[ -f "$D" ] && awk -F, -v s="$(col "$D" status)" -v h="$(col "$D" held)" \
			'NR > 1 { st[$s]++; if ($h == "false") nh++ } END { printf "  rows:"; for (k in st) printf " %s=%d", k, st[k]; printf ", held=false on %d\n", nh }' "$D"
	done
	if [ -n "$BYTES" ]; then
		echo "contiguous pinned H2D of $BYTES B: kvtier ${KV_GBPS} GB/s, PyTorch ${TORCH_GBPS:-n/a} GB/s"
		[ -n "$TORCH_GBPS" ] && awk -v a="$KV_GBPS" -v b="$TORCH_GBPS" 'BEGIN { printf "ratio kvtier/PyTorch: %.3f\n", a / b }'
	fi
} | tee "$OUTDIR/summary.txt"
