# cases.sh: the guest's test cases, sourced by /init (busybox sh).
#
# Each case is a function case_NAME OUTDIR that records its verdict with
# verdict (OUTDIR/status, OUTDIR/why: PASS or FAIL) and leaves the CSVs it wants sent back
# to the host in OUTDIR. Every command runs under timeout, so a hang fails
# its case instead of the whole VM. Cases run in the init shell, in order:
# transfer, the refused reads, the killed client, sweep and store share
# one kvtier serve --writable (which so has to survive the refused reads
# and the client that vanished; reads never ask to write), serve_stop
# stops it.

# ALL_CASES is what "all" runs, in order. Not in it: timing (diagnostic).
ALL_CASES="infra info transfer bad_rkey out_of_pool client_killed sweep store transfer_store serve_stop peer_killed bad_gid mesh"

PORT=7470
POOL=32MiB
CHECK="awk -f /csvcheck.awk"
SHARED=       # pid of the shared serve
SHARED_PORT=
SHARED_DIR=/tmp/shared-serve

expand_cases() {
	case $1 in
	all|"") echo $ALL_CASES ;;
	*) echo "$1" | tr ',' ' ' ;;
	esac
}

# ts prints the guest's uptime, so the console shows where time goes.
ts() { echo "[t=$(cut -d' ' -f1 /proc/uptime)] $*"; }

# verdict OUTDIR PASS|FAIL WHY...
verdict() {
	d=$1 st=$2; shift 2
	echo "$st" >"$d/status"
	echo "$*" >"$d/why"
	echo "case verdict: $st $*"
}

# one_error FILE: stderr of a failed kvtier run ends in one line naming
# the problem (progress lines before it are fine) and holds no panic.
one_error() {
	if grep -qE '^(panic|fatal error|goroutine [0-9]+ )' "$1"; then
		echo "a Go panic on stderr"; return 1
	fi
	last=$(tail -1 "$1")
	case $last in
	"kvtier "*": "*) return 0 ;;
	*) echo "stderr does not end in a one-line \"kvtier CMD: problem\" error: $last"; return 1 ;;
	esac
}

# start_server DIR [ARGS...] starts kvtier serve on rxe0 in the background
# (no --gid-index: it must find the RoCE v2 GID itself) and waits for its
# "listening on" line. SERVER is its pid, PORT its port.
start_server() {
	sd=$1; shift
	mkdir -p "$sd"
	PORT=$((PORT + 1))
	ts "serve on port $PORT"
	# The shared serve outlives every case before serve_stop: on a slow
	# host that is minutes (the guest's own timeout bounds it anyway).
	timeout 600 kvtier serve --transport verbs --listen 127.0.0.1:$PORT --pool $POOL "$@" \
		>"$sd/serve.out" 2>"$sd/serve.err" &
	SERVER=$!
	i=0
	while [ $i -lt 300 ]; do
		grep -q 'listening on' "$sd/serve.out" && { ts "serve ready: $(head -1 "$sd/serve.out")"; return 0; }
		kill -0 $SERVER 2>/dev/null || break
		sleep 0.1; i=$((i + 1))
	done
	echo "serve did not come up:"; cat "$sd/serve.out" "$sd/serve.err"
	kill $SERVER 2>/dev/null
	return 1
}

# shared_server OUTDIR: the shared serve, started on first use; fails the
# case when it cannot start or has died.
shared_server() {
	if [ -n "$SHARED" ]; then
		kill -0 $SHARED 2>/dev/null && return 0
		verdict "$1" FAIL "the shared kvtier serve has died: $(tail -1 $SHARED_DIR/serve.err)"
		return 1
	fi
	if ! start_server $SHARED_DIR --writable; then
		verdict "$1" FAIL "serve did not start: $(tail -1 $SHARED_DIR/serve.err)"
		return 1
	fi
	SHARED=$SERVER SHARED_PORT=$PORT
}

# Soft-RoCE sanity check, independent of kvtier: rdma-core's RC ping-pong
# between two processes over rxe0 with the RoCE v2 GID (index 1).
case_infra() {
	d=$1
	ibv_devinfo -d rxe0 | head -20
	timeout 30 ibv_rc_pingpong -d rxe0 -g 1 -n 20 >"$d/srv.out" 2>&1 &
	srv=$!
	i=0 crc=1
	while [ $i -lt 20 ]; do
		sleep 0.5
		timeout 30 ibv_rc_pingpong -d rxe0 -g 1 -n 20 127.0.0.1 >"$d/cli.out" 2>&1 && { crc=0; break; }
		kill -0 $srv 2>/dev/null || break
		i=$((i + 1))
	done
	wait $srv; src=$?
	cat "$d/srv.out" "$d/cli.out"
	if [ $crc = 0 ] && [ $src = 0 ]; then
		verdict "$d" PASS "ibv_rc_pingpong: $(grep -m1 'bytes in' "$d/cli.out")"
	else
		verdict "$d" FAIL "ibv_rc_pingpong server exit $src client exit $crc: $(tail -1 "$d/cli.out")"
	fi
}

# kvtier info finds rxe0 through sysfs and libibverbs: verbs available,
# rxe0 among the RDMA NICs.
case_info() {
	d=$1
	timeout 60 kvtier info >"$d/info.out" 2>&1
	rc=$?
	cat "$d/info.out"
	if [ $rc != 0 ]; then verdict "$d" FAIL "kvtier info exit $rc: $(tail -1 "$d/info.out")"; return; fi
	if ! grep -qE '^ +verbs +available' "$d/info.out"; then
		verdict "$d" FAIL "kvtier info: $(grep -E '^ +verbs ' "$d/info.out" | tr -s ' ')"; return
	fi
	if ! sed -n '/^RDMA NICs/,$p' "$d/info.out" | grep -q rxe0; then verdict "$d" FAIL "kvtier info lists no rxe0 among the RDMA NICs"; return; fi
	verdict "$d" PASS "$(grep -E '^ +verbs ' "$d/info.out" | tr -s ' ' | cut -c1-120)"
}

# client OUTDIR NAME COMMAND...: runs COMMAND (through env, so it may start
# with VAR=VALUE words) with --out OUTDIR/run, keeping its output in
# OUTDIR/NAME.out and NAME.err and showing it, and copies the NAME.csv it
# wrote to OUTDIR; rc is its exit status.
client() {
	d=$1 name=$2
	shift 2
	env "$@" --out "$d/run" >"$d/$name.out" 2>"$d/$name.err"
	rc=$?
	cat "$d/$name.out" "$d/$name.err"
	cp "$d/run/$name.csv" "$d/$name.csv" 2>/dev/null
}

# transfer over rxe0: several sizes, both layouts, two QPs; every row ok,
# verified and labelled verbs/rxe0.
case_transfer() {
	d=$1
	shared_server "$d" || return
	ts "transfer"
	client "$d" transfer timeout 90 kvtier transfer --transport verbs --peer 127.0.0.1:$SHARED_PORT \
		--sizes 1MiB,4MiB,16MiB --layout layerwise,blockwise --conns 2 --reps 2 --warmup 1
	if [ $rc != 0 ]; then verdict "$d" FAIL "transfer exit $rc: $(tail -1 "$d/transfer.err")"; return; fi
	# 3 sizes x 2 layouts x 2 reps
	if ! m=$($CHECK -v all="status=ok,verified=true,transport=verbs,device=rxe0,conns=2" -v min=12 "$d/transfer.csv" 2>&1); then
		verdict "$d" FAIL "$m"; return
	fi
	verdict "$d" PASS "$m"
}

# refused OUTDIR ENV WHAT: a READ the responder must refuse (made so by the
# client's test-only ENV=1): exit 1 (rows are errors) saying remote access
# error, an error row and no ok row; the server lives on.
refused() {
	d=$1 env=$2 what=$3
	shared_server "$d" || return
	ts "transfer with $env=1"
	client "$d" transfer "$env=1" timeout 60 kvtier transfer --transport verbs --peer 127.0.0.1:$SHARED_PORT \
		--sizes 1MiB --layout layerwise --conns 2 --reps 1 --warmup 1
	if [ $rc != 1 ]; then verdict "$d" FAIL "$what: transfer exit $rc, want 1: $(tail -1 "$d/transfer.err")"; return; fi
	if ! grep -qi 'remote access' "$d/transfer.err"; then
		verdict "$d" FAIL "$what: error is not a remote access error: $(tail -1 "$d/transfer.err")"; return
	fi
	if ! m=$($CHECK -v any="status=error" "$d/transfer.csv" 2>&1); then verdict "$d" FAIL "$what: $m"; return; fi
	if $CHECK -v any="status=ok" "$d/transfer.csv" >/dev/null 2>&1; then verdict "$d" FAIL "$what: an ok row"; return; fi
	sleep 0.5
	if ! kill -0 $SHARED 2>/dev/null; then verdict "$d" FAIL "$what: serve died: $(tail -1 $SHARED_DIR/serve.err)"; return; fi
	verdict "$d" PASS "$(grep -i 'remote access' "$d/transfer.err" | head -1 | sed 's/.*failed: //')"
}

# A READ with a wrong rkey.
case_bad_rkey() { refused "$1" KVTIER_TEST_CORRUPT_RKEY "wrong rkey"; }

# A READ past the end of the peer's registered pool.
case_out_of_pool() { refused "$1" KVTIER_TEST_OUT_OF_POOL "out-of-pool read"; }

# wait_rows CSV N PID: wait until CSV holds N rows (or PID is gone).
wait_rows() {
	i=0
	while [ $i -lt 600 ]; do
		[ -f "$1" ] && [ "$(wc -l <"$1")" -gt "$2" ] && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1; i=$((i + 1))
	done
	return 1
}

# A client killed (SIGKILL) mid-transfer: the shared serve lives on (and
# the sweep after this case shows it still serves).
case_client_killed() {
	d=$1
	shared_server "$d" || return
	ts "transfer, to be killed"
	timeout 90 kvtier transfer --transport verbs --peer 127.0.0.1:$SHARED_PORT \
		--sizes 4MiB --layout layerwise --conns 2 --reps 200 --warmup 1 \
		--out "$d/run" >"$d/transfer.out" 2>"$d/transfer.err" &
	cli=$!
	wait_rows "$d/run/transfer.csv" 2 $cli || { verdict "$d" FAIL "the transfer wrote no rows: $(grep -m1 -i 'error' "$d/transfer.err")"; kill $cli; return; }
	ts "killing the client"
	kill -KILL $cli
	wait $cli
	sleep 1
	if ! kill -0 $SHARED 2>/dev/null; then verdict "$d" FAIL "serve died with its client: $(tail -1 $SHARED_DIR/serve.err)"; return; fi
	verdict "$d" PASS "serve lives on"
}

# The tier sweep's remote tier over verbs (after the refused reads and the
# killed client: the server must still serve new clients).
case_sweep() {
	d=$1
	shared_server "$d" || return
	ts "sweep"
	client "$d" sweep timeout 90 kvtier sweep --backend host --tiers remote --transport verbs \
		--peer 127.0.0.1:$SHARED_PORT --prefix 64,128 --layout layerwise,blockwise \
		--copy percopy --conns 2 --reps 2 --warmup 1
	if [ $rc != 0 ]; then verdict "$d" FAIL "sweep exit $rc: $(tail -1 "$d/sweep.err")"; return; fi
	# 2 prefixes x 2 layouts x 2 reps
	if ! m=$($CHECK -v all="tier=remote,transport=verbs,status=ok,verified=true" -v min=8 "$d/sweep.csv" 2>&1); then
		verdict "$d" FAIL "$m"; return
	fi
	verdict "$d" PASS "$m"
}

# Stores over rxe0: the shared serve (--writable) takes the remote tier's
# sweep --direction store as RDMA WRITEs into its pool; every row ok,
# verified by reading the pool back, direction store. The store writes
# the peer's pattern back when it ends, so later cases read the pool they
# expect. (transfer --direction store: its own case below.)
case_store() {
	d=$1
	shared_server "$d" || return
	ts "sweep --direction store"
	client "$d" sweep timeout 90 kvtier sweep --backend host --direction store --tiers remote --transport verbs \
		--peer 127.0.0.1:$SHARED_PORT --prefix 64 --layout layerwise --copy percopy --conns 2 --reps 2 --warmup 0
	if [ $rc != 0 ]; then verdict "$d" FAIL "sweep --direction store exit $rc: $(tail -1 "$d/sweep.err")"; return; fi
	if ! m=$($CHECK -v all="tier=remote,transport=verbs,direction=store,status=ok,verified=true" -v min=2 "$d/sweep.csv" 2>&1); then
		verdict "$d" FAIL "$m"; return
	fi
	verdict "$d" PASS "$m"
}

# transfer --direction store over rxe0: MB2's stores are RDMA WRITEs into
# the shared serve's pool, verified by reading it back, and committed, so
# the pool holds its pattern again for the cases after.
case_transfer_store() {
	d=$1
	shared_server "$d" || return
	ts "transfer --direction store"
	client "$d" transfer timeout 90 kvtier transfer --direction store --transport verbs --peer 127.0.0.1:$SHARED_PORT \
		--sizes 1MiB,4MiB --layout layerwise --conns 2 --reps 2 --warmup 1
	if [ $rc != 0 ]; then verdict "$d" FAIL "transfer --direction store exit $rc: $(tail -1 "$d/transfer.err") $(grep -o 'error,[^,]*' "$d/transfer.csv" | head -1)"; return; fi
	if ! m=$($CHECK -v all="status=ok,verified=true,transport=verbs,device=rxe0,direction=store" -v min=4 "$d/transfer.csv" 2>&1); then
		verdict "$d" FAIL "$m"; return
	fi
	verdict "$d" PASS "$m"
}

# SIGTERM ends the shared serve cleanly: exit 0, no panic.
case_serve_stop() {
	d=$1
	shared_server "$d" || return
	ts "SIGTERM to serve"
	kill -TERM $SHARED
	wait $SHARED; src=$?
	SHARED=
	cat $SHARED_DIR/serve.out $SHARED_DIR/serve.err
	if [ $src != 0 ]; then verdict "$d" FAIL "serve exit $src after SIGTERM: $(tail -1 $SHARED_DIR/serve.err)"; return; fi
	if grep -qE '^(panic|fatal error)' $SHARED_DIR/serve.err; then verdict "$d" FAIL "serve panicked"; return; fi
	verdict "$d" PASS "serve exit 0 after SIGTERM"
}

# The server killed (SIGKILL) mid-transfer: the client writes an error row,
# keeps the rows it measured, exits 1 (rows are errors) naming the peer,
# and does not hang.
case_peer_killed() {
	d=$1
	start_server "$d" || { verdict "$d" FAIL "serve did not start: $(tail -1 "$d/serve.err")"; return; }
	ts "transfer, to be cut"
	timeout 90 kvtier transfer --transport verbs --peer 127.0.0.1:$PORT \
		--sizes 4MiB --layout layerwise --conns 2 --reps 200 --warmup 1 \
		--out "$d/run" >"$d/transfer.out" 2>"$d/transfer.err" &
	cli=$!
	wait_rows "$d/run/transfer.csv" 2 $cli
	ts "killing serve"
	kill -KILL $SERVER
	wait $SERVER
	wait $cli; rc=$?
	ts "client exit $rc"
	cat "$d/transfer.out" "$d/transfer.err"
	cp "$d/run/transfer.csv" "$d/transfer.csv" 2>/dev/null
	if [ $rc = 124 ] || [ $rc = 143 ]; then verdict "$d" FAIL "client hung after the server was killed"; return; fi
	if [ $rc != 1 ]; then verdict "$d" FAIL "client exit $rc, want 1: $(tail -1 "$d/transfer.err")"; return; fi
	if ! grep -q "peer 127.0.0.1:$PORT failed" "$d/transfer.err"; then verdict "$d" FAIL "no line naming the peer: $(tail -1 "$d/transfer.err")"; return; fi
	if ! m=$($CHECK -v any="status=error" "$d/transfer.csv" 2>&1); then verdict "$d" FAIL "$m"; return; fi
	if ! k=$($CHECK -v any="status=ok,verified=true" "$d/transfer.csv" 2>&1); then verdict "$d" FAIL "rows measured before the kill lost: $k"; return; fi
	verdict "$d" PASS "exit 1: $(grep "peer 127.0.0.1:$PORT failed" "$d/transfer.err" | sed 's/.*mid-read: //'); ${k#*: }"
}

# A GID index the port does not have, on either side: exit 2 and one line
# naming the GID (transfer checks its endpoint before dialing).
case_bad_gid() {
	d=$1
	timeout 30 kvtier serve --transport verbs --listen 127.0.0.1:7599 --pool $POOL \
		--gid-index 99 >"$d/serve.out" 2>"$d/serve.err"
	rc=$?
	cat "$d/serve.out" "$d/serve.err"
	if [ $rc != 2 ]; then verdict "$d" FAIL "serve --gid-index 99: exit $rc, want 2"; return; fi
	if ! m=$(one_error "$d/serve.err"); then verdict "$d" FAIL "serve --gid-index 99: $m"; return; fi
	if ! tail -1 "$d/serve.err" | grep -qi gid; then verdict "$d" FAIL "serve --gid-index 99: error does not name the GID: $(tail -1 "$d/serve.err")"; return; fi
	timeout 30 kvtier transfer --transport verbs --peer 127.0.0.1:7599 --gid-index 99 \
		--sizes 1MiB --layout blockwise --reps 1 --out "$d/run" >"$d/transfer.out" 2>"$d/transfer.err"
	crc=$?
	cat "$d/transfer.out" "$d/transfer.err"
	if [ $crc != 2 ]; then verdict "$d" FAIL "transfer --gid-index 99: exit $crc, want 2"; return; fi
	if ! m=$(one_error "$d/transfer.err"); then verdict "$d" FAIL "transfer --gid-index 99: $m"; return; fi
	if ! tail -1 "$d/transfer.err" | grep -qi gid; then verdict "$d" FAIL "transfer --gid-index 99: error does not name the GID: $(tail -1 "$d/transfer.err")"; return; fi
	verdict "$d" PASS "$(tail -1 "$d/serve.err")"
}

# Two kvtier mesh ranks over rxe0 (the flags launcher, one node): both
# pairs measured by RDMA READ, every row ok, verified, verbs on rxe0,
# labelled intra; both ranks exit 0.
case_mesh() {
	d=$1
	ts "mesh, two ranks"
	args="--launcher flags --world-size 2 --coordinator 127.0.0.1:29500 --transport verbs --sizes 1MiB --layout blockwise --reps 2 --warmup 1 --rendezvous-timeout 60s"
	# shellcheck disable=SC2086
	KVTIER_TOKEN=vm-token timeout 120 kvtier mesh $args --rank 1 --out "$d/r1" >"$d/r1.out" 2>"$d/r1.err" &
	r1=$!
	# shellcheck disable=SC2086
	KVTIER_TOKEN=vm-token timeout 120 kvtier mesh $args --rank 0 --out "$d/run" >"$d/mesh.out" 2>"$d/mesh.err"
	rc=$?
	wait $r1; rc1=$?
	cat "$d/mesh.out" "$d/mesh.err" "$d/r1.err"
	cp "$d/run/mesh.csv" "$d/mesh.csv" 2>/dev/null
	if [ $rc != 0 ] || [ $rc1 != 0 ]; then
		verdict "$d" FAIL "mesh exit $rc (rank 0), $rc1 (rank 1): $(tail -1 "$d/mesh.err") / $(tail -1 "$d/r1.err")"; return
	fi
	# 2 pairs x 2 reps
	if ! m=$($CHECK -v all="suite=mesh,status=ok,verified=true,transport=verbs,device=rxe0,pair=intra" -v min=4 "$d/mesh.csv" 2>&1); then
		verdict "$d" FAIL "$m"; return
	fi
	verdict "$d" PASS "$m"
}

# Diagnostic, not in ALL_CASES: where a kvtier run spends its time here.
case_timing() {
	d=$1
	ts "info"; timeout 60 kvtier info >/dev/null 2>&1; ts "info done"
	ts "tcp embedded"; timeout 60 kvtier transfer --sizes 1MiB --layout layerwise --reps 1 --warmup 1 --out "$d/tcp" 2>&1; ts "tcp done"
	start_server "$d"
	ts "verbs 1MiB"; timeout 60 kvtier transfer --transport verbs --peer 127.0.0.1:$PORT --sizes 1MiB --layout layerwise --reps 1 --warmup 1 --out "$d/v" 2>&1; ts "verbs done"
	ts "tcp 1MiB"; timeout 60 kvtier transfer --transport tcp --peer 127.0.0.1:$PORT --sizes 1MiB --layout layerwise --reps 1 --warmup 1 --out "$d/t" 2>&1; ts "tcp done"
	kill -TERM $SERVER; wait $SERVER
	verdict "$d" PASS "timing"
}
