#!/usr/bin/env bash
# gpu-check.sh: the cuda backend on a real GPU, in under six minutes.
#
# On a GPU node, one command from a clone of kvtier:
#
#     scripts/gpu-check.sh [OUTDIR]          (default $OUT, else ./gpu-check-<time>)
#
# The kvtier binary: $KVTIER_BIN if set; else `go build` where Go is
# installed; else bin/kvtier. A node without Go runs a binary built
# elsewhere and carried along (bin/ is not in git):
#
#     go build -trimpath -o bin/kvtier ./cmd/kvtier
#
# Build it on x86-64 Linux with glibc 2.34 or newer (Debian 12, Ubuntu
# 22.04, RHEL 9; the binary then needs glibc 2.34 on the node: build on
# the oldest distribution you run on). It is dynamically linked on
# purpose: libcuda.so.1, libcublas and libibverbs are dlopen'd at run time,
# which a static binary cannot do; no CUDA toolkit is needed anywhere.
#
# cuBLAS (recompute rows): $KVTIER_LIBCUBLAS if set; else the loader's
# path plus the directories pip's wheels use, which are not on it:
# site-packages/nvidia/cublas/lib (nvidia-cublas-cu12: libcublas.so.12)
# and site-packages/nvidia/cu13/lib (nvidia-cublas for CUDA 13:
# libcublas.so.13), looked for in $PYTHON's site-packages, $VIRTUAL_ENV,
# $CONDA_PREFIX, ~/.local and /usr{,/local}/lib/python3*. kvtier picks the
# soname by the driver's major version.
#
# Steps: `kvtier info` -> info.txt; sweeps over 1k..64k tokens, both
# layouts, every copy mode: recompute -> sweep-recompute/, hbm and host from
# pinned memory -> sweep-pinned/, host from pageable memory ->
# sweep-pageable/; PyTorch's contiguous pinned H2D bandwidth for the bytes
# of kvtier's contiguous TOP-token host row (torch.cuda events, warm-up)
# -> torch.txt; a summary on stdout and in summary.txt (with the GDS mode,
# the PCIe link at the start, at the end and at its max, the IOMMU mode
# and the clock throttle reasons) whose last line is
# "ratio kvtier/PyTorch: ..." (or "...: skipped (why)"); everything logged
# in gpu-check.log.
#
# A binary built elsewhere that needs a newer glibc than the node has
# (Ubuntu 20.04: 2.31, RHEL 8: 2.28) is refused at once, with the command
# that builds kvtier on the node itself.
#
# Host pools go on the GPU's NUMA node (--numa auto, read from sysfs);
# NUMA=N puts them on node N, NUMA=-1 leaves them to the kernel.
#
# Environment: KVTIER_BIN, GPU (ordinal, default 0), NUMA (default auto),
# MODEL, PYTHON (default python3), PREFIXES (default 1k,...,64k), TOP (the
# prefix in tokens of the summary and the PyTorch comparison; default
# 65536), REPS and WARMUP (default 3 and 1), BUDGET_S (default 340: the
# whole run's deadline; every step has its own timeout within it, and rows
# already measured stay when a step is cut short), KVTIER_LIBCUDA /
# KVTIER_LIBCUBLAS (library paths, read by kvtier). A dry run on the fake
# libcuda: PREFIXES=64,128 TOP=128. Nothing here needs root or the network.
set -u

T0=$(date +%s)
OUTDIR=${1:-${OUT:-./gpu-check-$(date -u +%Y%m%dT%H%M%SZ)}}
mkdir -p "$OUTDIR" || exit 2
OUTDIR=$(cd "$OUTDIR" && pwd)
LOG=$OUTDIR/gpu-check.log
GPU=${GPU:-0}
NUMA=${NUMA:-auto}
PY=${PYTHON:-python3}
PREFIXES=${PREFIXES:-1k,2k,4k,8k,16k,32k,64k}
TOP=${TOP:-65536}
MODEL_ARGS=()
[ -n "${MODEL:-}" ] && MODEL_ARGS=(--model "$MODEL")
cd "$(dirname "$0")/.." || exit 2

DEADLINE=$((T0 + ${BUDGET_S:-340}))
# left PLANNED RESERVE: seconds a step may take, PLANNED at most, keeping
# RESERVE seconds for the steps after it.
left() { local l=$((DEADLINE - $(date +%s) - ${2:-0})); [ "$l" -gt "$1" ] && l=$1; [ "$l" -lt 5 ] && l=5; echo "$l"; }
log() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$LOG"; }
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

# CSV is awk that splits each CSV line into f[1..n] as RFC 4180 says
# (quoted fields may hold commas and doubled quotes) and gives col(NAME),
# the index of NAME in the header; every awk below reads CSV with it.
CSV='
function csv(s, f,    n, i, c, q, v) {
	n = 0; v = ""; q = 0
	for (i = 1; i <= length(s); i++) {
		c = substr(s, i, 1)
		if (q) {
			if (c == "\"" && substr(s, i + 1, 1) == "\"") { v = v c; i++ }
			else if (c == "\"") q = 0
			else v = v c
		} else if (c == "\"") q = 1
		else if (c == ",") { f[++n] = v; v = "" }
		else v = v c
	}
	f[++n] = v
	return n
}
function col(name,    i) { for (i = 1; i <= ncol_; i++) if (hdr_[i] == name) return i; return 0 }
NR == 1 { sub(/\r$/, ""); ncol_ = csv($0, hdr_); next }
{ sub(/\r$/, ""); csv($0, f) }
'

# pip_cublas_dirs prints the directories pip's cuBLAS wheels use that
# exist here.
pip_cublas_dirs() {
	local sites=()
	if command -v "$PY" >/dev/null 2>&1; then
		mapfile -t sites < <("$PY" -c 'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null)
	fi
	local d
	for d in "${VIRTUAL_ENV:-}" "${CONDA_PREFIX:-}" "$HOME/.local" /usr/local /usr; do
		[ -n "$d" ] && sites+=("$d"/lib/python3*/site-packages "$d"/lib/python3*/dist-packages "$d"/lib/python3/dist-packages)
	done
	for d in "${sites[@]}"; do
		for lib in "$d/nvidia/cu13/lib/libcublas.so.13" "$d/nvidia/cublas/lib/libcublas.so.12"; do
			[ -e "$lib" ] && dirname "$lib"
		done
	done | awk '!seen[$0]++'
}

# find_cublas makes pip's cuBLAS loadable: their directories go ahead of
# LD_LIBRARY_PATH (libcublasLt sits beside libcublas) unless
# KVTIER_LIBCUBLAS names a library.
find_cublas() {
	if [ -n "${KVTIER_LIBCUBLAS:-}" ]; then
		log "cuBLAS: KVTIER_LIBCUBLAS=$KVTIER_LIBCUBLAS"
		return
	fi
	local dirs
	dirs=$(pip_cublas_dirs | paste -sd: -)
	if [ -n "$dirs" ]; then
		export LD_LIBRARY_PATH="$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
		log "cuBLAS: pip's wheels at $dirs, added to LD_LIBRARY_PATH"
	else
		log "cuBLAS: none where pip puts it; the loader's path only"
	fi
}

# find_binary sets BIN, or explains and exits 2.
find_binary() {
	BIN=${KVTIER_BIN:-}
	if [ -z "$BIN" ] && command -v go >/dev/null 2>&1; then
		log "building kvtier with $(go version)"
		if timeout "$(left 120 200)" go build -trimpath -o bin/kvtier ./cmd/kvtier >>"$LOG" 2>&1; then
			BIN=bin/kvtier
		else
			log "go build failed (see $LOG)"
		fi
	fi
	[ -z "$BIN" ] && [ -x bin/kvtier ] && BIN=bin/kvtier
	if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
		log "no kvtier binary: set KVTIER_BIN, carry bin/kvtier, or install Go (see the header of $0)"
		exit 2
	fi
	check_glibc
	log "kvtier binary: $BIN ($(ldd --version 2>&1 | head -1))"
}

# check_glibc exits 2 at once when BIN cannot start because this node's
# glibc is older than the one it was built against, saying how to build
# it here.
check_glibc() {
	local err need have
	err=$("$BIN" version 2>&1 >/dev/null) && return
	need=$(printf '%s\n' "$err" | grep -o "GLIBC_[0-9.]*' not found" | tr -d "'" | sed 's/ not found//' | sort -V | tail -1)
	[ -z "$need" ] && return
	have=$(ldd --version 2>&1 | head -1 | grep -o '[0-9]*\.[0-9]*$')
	log "$BIN needs ${need/_/ } but this node has glibc ${have:-unknown} (Ubuntu 20.04 has 2.31, RHEL 8 2.28): build kvtier on this node instead, with Go 1.26 (https://go.dev/dl, unpacked anywhere, no root needed) on PATH, from this clone:"
	log "    go build -trimpath -o bin/kvtier ./cmd/kvtier && $0 $OUTDIR"
	exit 2
}

# kvtier_row prints "BYTES GBPS" of the median of kvtier's ok contiguous
# pinned host rows at TOP tokens (layerwise; both layouts move the same
# bytes), nothing when there is none.
kvtier_row() {
	[ -f "$1" ] || return
	awk -v top="$TOP" "$CSV"'
		f[col("tier")] == "host" && f[col("copy")] == "contiguous" && f[col("prefix_tokens")] == top &&
		f[col("status")] == "ok" && f[col("layout")] == "layerwise" { print f[col("bytes")], f[col("gb_per_s")] }' "$1" |
		sort -k2 -g | awk '{ b = $1; v[NR] = $2 } END { if (NR) print b, (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# torch_h2d BYTES: PyTorch's contiguous pinned H2D GB/s for BYTES on cuda:GPU
# into torch.txt; prints the median.
torch_h2d() {
	timeout "$(left 40 0)" "$PY" - "$1" "$GPU" >"$OUTDIR/torch.txt" 2>>"$LOG" <<'EOF'
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
	awk '$1 == "gbps_median" { print $2 }' "$OUTDIR/torch.txt" 2>/dev/null
}

# ratio_line prints the summary's last line: kvtier over PyTorch for the
# same pinned H2D, or why it is skipped.
ratio_line() {
	local row bytes kv torch
	row=$(kvtier_row "$OUTDIR/sweep-pinned/sweep.csv")
	if [ -z "$row" ]; then
		echo "ratio kvtier/PyTorch: skipped (no ok contiguous $TOP-token pinned host row from kvtier)"
		return
	fi
	read -r bytes kv <<<"$row"
	if ! "$PY" -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1; then
		echo "ratio kvtier/PyTorch: skipped (PyTorch with CUDA is not installed for $PY); kvtier pinned H2D of $bytes B: $kv GB/s"
		return
	fi
	log "PyTorch contiguous pinned H2D of $bytes bytes on cuda:$GPU"
	torch=$(torch_h2d "$bytes")
	if [ -z "$torch" ]; then
		echo "ratio kvtier/PyTorch: skipped (the PyTorch run failed, see $LOG); kvtier pinned H2D of $bytes B: $kv GB/s"
		return
	fi
	awk -v a="$kv" -v b="$torch" -v n="$bytes" 'BEGIN { printf "ratio kvtier/PyTorch: %.3f (pinned H2D of %d B: kvtier %s GB/s, PyTorch %s GB/s)\n", a / b, n, a, b }'
}

# summarize prints the p50 of every configuration at TOP tokens and the
# row counts of each sweep.
summarize() {
	local d S D
	for d in sweep-recompute sweep-pinned sweep-pageable; do
		S=$OUTDIR/$d/sweep_summary.csv D=$OUTDIR/$d/sweep.csv
		[ -f "$S" ] || { echo "$d: no summary (see $LOG)"; continue; }
		echo "$d: p50 at $TOP tokens"
		awk -v top="$TOP" "$CSV"'
			f[col("prefix_tokens")] == top {
				g = f[col("gb_per_s_p50")]; fl = f[col("tflops_p50")]
				rate = (g != "") ? sprintf("%8.2f GB/s", g) : (fl != "") ? sprintf("%8.2f TFLOP/s", fl) : "       -"
				printf "  %-9s %-9s %-10s %-8s %10.3f ms %s  n=%s %s\n", f[col("tier")], f[col("layout")], f[col("copy")],
					f[col("src_mem")], f[col("seconds_p50")] * 1e3, rate, f[col("n")], f[col("reason")] }' "$S"
		[ -f "$D" ] && awk "$CSV"'
			{ st[f[col("status")]]++; if (f[col("held")] == "false") nh++ }
			END { printf "  rows:"; for (k in st) printf " %s=%d", k, st[k]; printf ", held=false on %d\n", nh }' "$D"
	done
}

# gpu_facts prints what a reader needs to trust the GB/s above: how
# cuFile runs (GPUDirect Storage or its compatibility mode, from kvtier
# info), and of GPU $GPU (by CUDA ordinal) in the pinned sweep's manifest
# the PCIe link at the start (an idle link may be trained down), at the
# end under load and at its max, the IOMMU mode of its group and the
# clock throttle reasons at both ends.
gpu_facts() {
	local gds m=$OUTDIR/sweep-pinned/manifest.json
	gds=$(sed -n 's/^ *cufile .*; GDS mode \([a-z]*\).*/\1/p' "$OUTDIR/info.txt" 2>/dev/null | head -1)
	echo "gds mode: ${gds:-none (cufile unavailable)}"
	[ -f "$m" ] || { echo "gpu$GPU: no manifest (see $LOG)"; return; }
	awk -v gpu="$GPU" '
		function val(s) { gsub(/[",]/, "", s); return s }
		function or(s, d) { return (s == "" || s == "0") ? d : s }
		$1 == "\"iommu\":" { host = $0; sub(/^[^:]*: *"/, "", host); sub(/",?$/, "", host) }
		$1 == "\"cuda_ordinal\":" { cur = (val($2) == gpu); next }
		!cur { next }
		arr != "" && /\]/ { arr = ""; next }
		arr != "" { f[arr] = f[arr] (f[arr] == "" ? "" : ",") val($1); next }
		$1 ~ /^"throttle_reasons_(start|end)":$/ { arr = val($1); sub(/:$/, "", arr); next }
		$1 ~ /^"(pcie_[a-z_]+|iommu_mode)":$/ { k = val($1); sub(/:$/, "", k); f[k] = val($2) }
		END {
			printf "gpu%s pcie link: gen%s x%s at start, gen%s x%s at the end under load, max gen%s x%s\n", gpu,
				or(f["pcie_gen"], "?"), or(f["pcie_width"], "?"), or(f["pcie_gen_end"], "?"), or(f["pcie_width_end"], "?"),
				or(f["pcie_max_gen"], "?"), or(f["pcie_max_width"], "?")
			printf "gpu%s iommu mode: %s (host: %s)\n", gpu, or(f["iommu_mode"], "unknown"), or(host, "unknown")
			printf "gpu%s throttle reasons: %s at start, %s at the end; PCIe replays during the run: %s\n", gpu,
				or(f["throttle_reasons_start"], "unknown"), or(f["throttle_reasons_end"], "unknown"),
				("pcie_replays" in f) ? f["pcie_replays"] : "unknown"
		}' "$m"
}

find_binary
find_cublas
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >"$OUTDIR/nvidia-smi.txt" 2>&1
run 30 "$BIN" info
"$BIN" info >"$OUTDIR/info.txt" 2>&1

# Recompute first in its own run, so a slow copy sweep cannot starve it.
COMMON=(--backend cuda --gpu "$GPU" --numa "$NUMA" --prefix "$PREFIXES"
	--layout layerwise,blockwise --copy percopy,batch,contiguous --reps "${REPS:-3}" --warmup "${WARMUP:-1}" --budget 10s "${MODEL_ARGS[@]}")
run "$(left 50 230)" "$BIN" sweep "${COMMON[@]}" --tiers recompute --out "$OUTDIR/sweep-recompute"
run "$(left 160 75)" "$BIN" sweep "${COMMON[@]}" --tiers hbm,host --host-mem pinned --out "$OUTDIR/sweep-pinned"
run "$(left 60 45)" "$BIN" sweep "${COMMON[@]}" --tiers host --host-mem pageable --out "$OUTDIR/sweep-pageable"

RATIO=$(ratio_line)
{
	echo "gpu-check: $(date -u +%FT%TZ), $(($(date +%s) - T0)) s, results in $OUTDIR"
	grep -E '^ *(cuda|cublas|nvml) ' "$OUTDIR/info.txt" 2>/dev/null
	grep -A2 '^GPUs' "$OUTDIR/info.txt" 2>/dev/null | tail -2
	gpu_facts
	summarize
	echo "$RATIO"
} | tee "$OUTDIR/summary.txt"
