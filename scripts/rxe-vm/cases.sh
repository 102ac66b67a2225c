# cases.sh: the guest's test cases, sourced by /init (busybox sh).
#
# Each case is a function case_NAME OUTDIR that records its verdict with
# pass/fail (OUTDIR/status, OUTDIR/why) and leaves any CSV it wants sent
# back to the host in OUTDIR. Every command runs under timeout, so a hang
# fails its case instead of the whole VM.

# ALL_CASES is what "all" runs, in order.
ALL_CASES="infra transfer sweep bad_rkey peer_killed bad_gid"

PORT=7471
POOL=64MiB
CHECK="awk -f /csvcheck.awk"

expand_cases() {
	case $1 in
	all|"") echo $ALL_CASES ;;
	*) echo "$1" | tr ',' ' ' ;;
	esac
}

# verdict OUTDIR PASS|FAIL WHY...
verdict() {
	d=$1 st=$2; shift 2
	echo "$st" >"$d/status"
	echo "$*" >"$d/why"
	echo "case verdict: $st $*"
}

# need_verbs OUTDIR: true when this kvtier has the verbs transport; else
# the case is recorded as SKIP (a kvtier without it, while it is written).
need_verbs() {
	if kvtier serve -h 2>&1 | grep -q verbs; then return 0; fi
	verdict "$1" SKIP "this kvtier has no verbs transport (kvtier serve -h does not mention it)"
	return 1
}

# start_server OUTDIR [ARGS...] starts kvtier serve on rxe0 in the
# background and waits for its "listening on" line. SERVER is its pid.
start_server() {
	d=$1; shift
	PORT=$((PORT + 1))
	timeout 120 kvtier serve --transport verbs --listen 127.0.0.1:$PORT --pool $POOL "$@" \
		>"$d/serve.out" 2>"$d/serve.err" &
	SERVER=$!
	i=0
	while [ $i -lt 300 ]; do
		grep -q 'listening on' "$d/serve.out" && return 0
		kill -0 $SERVER 2>/dev/null || break
		sleep 0.1; i=$((i + 1))
	done
	echo "serve did not come up:"; cat "$d/serve.out" "$d/serve.err"
	kill $SERVER 2>/dev/null
	return 1
}

# stop_server OUTDIR: SIGTERM must end serve cleanly (exit 0).
stop_server() {
	kill -TERM $SERVER 2>/dev/null
	wait $SERVER; src=$?
	echo "serve exit $src; stderr:"; cat "$1/serve.err"
	return $src
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

# serve + transfer over rxe0: several sizes, both layouts, two QPs, every
# row ok, verified and labelled verbs/rxe0; serve exits 0 on SIGTERM.
case_transfer() {
	d=$1
	need_verbs "$d" || return
	start_server "$d" || { verdict "$d" FAIL "serve did not start: $(tail -1 "$d/serve.err")"; return; }
	timeout 90 kvtier transfer --transport verbs --peer 127.0.0.1:$PORT \
		--sizes 1MiB,4MiB,16MiB --layout layerwise,blockwise --qps 2 --reps 2 \
		--out "$d/run" >"$d/transfer.out" 2>"$d/transfer.err"
	rc=$?
	cat "$d/transfer.out" "$d/transfer.err"
	cp "$d/run/transfer.csv" "$d/transfer.csv" 2>/dev/null
	stop_server "$d"; src=$?
	if [ $rc != 0 ]; then verdict "$d" FAIL "transfer exit $rc: $(tail -1 "$d/transfer.err")"; return; fi
	if ! m=$($CHECK -v all="status=ok,verified=true,transport=verbs,device=rxe0" -v min=12 "$d/transfer.csv" 2>&1); then
		verdict "$d" FAIL "$m"; return
	fi
	if [ $src != 0 ]; then verdict "$d" FAIL "serve exit $src after SIGTERM"; return; fi
	verdict "$d" PASS "$m"
}

# The tier sweep's remote tier over verbs.
case_sweep() {
	d=$1
	need_verbs "$d" || return
	start_server "$d" || { verdict "$d" FAIL "serve did not start: $(tail -1 "$d/serve.err")"; return; }
	timeout 90 kvtier sweep --backend host --tiers remote --transport verbs \
		--peer 127.0.0.1:$PORT --prefix 1k,4k --reps 2 \
		--out "$d/run" >"$d/sweep.out" 2>"$d/sweep.err"
	rc=$?
	cat "$d/sweep.out" "$d/sweep.err"
	cp "$d/run/sweep.csv" "$d/sweep.csv" 2>/dev/null
	stop_server "$d"
	if [ $rc != 0 ]; then verdict "$d" FAIL "sweep exit $rc: $(tail -1 "$d/sweep.err")"; return; fi
	if ! m=$($CHECK -v all="tier=remote,transport=verbs,status=ok,verified=true" -v min=4 "$d/sweep.csv" 2>&1); then
		verdict "$d" FAIL "$m"; return
	fi
	verdict "$d" PASS "$m"
}

# A READ with a wrong rkey must be refused by the responder: an error row
# and exit 2, never ok rows; the server survives and serves the next client.
case_bad_rkey() {
	d=$1
	need_verbs "$d" || return
	start_server "$d" || { verdict "$d" FAIL "serve did not start: $(tail -1 "$d/serve.err")"; return; }
	KVTIER_TEST_CORRUPT_RKEY=1 timeout 60 kvtier transfer --transport verbs --peer 127.0.0.1:$PORT \
		--sizes 1MiB --layout blockwise --qps 1 --reps 1 \
		--out "$d/bad" >"$d/bad.out" 2>"$d/bad.err"
	rc=$?
	cat "$d/bad.out" "$d/bad.err"
	cp "$d/bad/transfer.csv" "$d/transfer-bad.csv" 2>/dev/null
	timeout 60 kvtier transfer --transport verbs --peer 127.0.0.1:$PORT \
		--sizes 1MiB --layout blockwise --qps 1 --reps 1 \
		--out "$d/good" >"$d/good.out" 2>"$d/good.err"
	grc=$?
	cat "$d/good.out" "$d/good.err"
	cp "$d/good/transfer.csv" "$d/transfer-after.csv" 2>/dev/null
	stop_server "$d"
	if [ $rc != 2 ]; then verdict "$d" FAIL "corrupt rkey: transfer exit $rc, want 2: $(tail -1 "$d/bad.err")"; return; fi
	if [ "$(wc -l <"$d/bad.err")" -gt 2 ]; then verdict "$d" FAIL "corrupt rkey: stderr has $(wc -l <"$d/bad.err") lines, want one"; return; fi
	if ! m=$($CHECK -v any="status=error" "$d/transfer-bad.csv" 2>&1); then verdict "$d" FAIL "corrupt rkey: $m"; return; fi
	if $CHECK -v any="status=ok" "$d/transfer-bad.csv" >/dev/null 2>&1; then verdict "$d" FAIL "corrupt rkey: an ok row"; return; fi
	if [ $grc != 0 ]; then verdict "$d" FAIL "transfer after the refused one: exit $grc: $(tail -1 "$d/good.err")"; return; fi
	verdict "$d" PASS "refused: $(tail -1 "$d/bad.err"); next client ok"
}

# The server killed (SIGKILL) mid-transfer: the client writes an error row,
# keeps the rows it measured, exits 2 with one line, and does not hang.
case_peer_killed() {
	d=$1
	need_verbs "$d" || return
	start_server "$d" || { verdict "$d" FAIL "serve did not start: $(tail -1 "$d/serve.err")"; return; }
	timeout 90 kvtier transfer --transport verbs --peer 127.0.0.1:$PORT \
		--sizes 4MiB --layout layerwise --qps 2 --reps 200 \
		--out "$d/run" >"$d/transfer.out" 2>"$d/transfer.err" &
	cli=$!
	i=0
	while [ $i -lt 300 ]; do
		[ "$(wc -l <"$d/run/transfer.csv" 2>/dev/null || echo 0)" -ge 3 ] && break
		kill -0 $cli 2>/dev/null || break
		sleep 0.1; i=$((i + 1))
	done
	kill -KILL $SERVER
	wait $SERVER
	wait $cli; rc=$?
	cat "$d/transfer.out" "$d/transfer.err"
	cp "$d/run/transfer.csv" "$d/transfer.csv" 2>/dev/null
	if [ $rc = 124 ] || [ $rc = 143 ]; then verdict "$d" FAIL "client hung after the server was killed"; return; fi
	if [ $rc != 2 ]; then verdict "$d" FAIL "client exit $rc, want 2: $(tail -1 "$d/transfer.err")"; return; fi
	if [ "$(wc -l <"$d/transfer.err")" -gt 2 ]; then verdict "$d" FAIL "stderr has $(wc -l <"$d/transfer.err") lines, want one"; return; fi
	if ! m=$($CHECK -v any="status=error" "$d/transfer.csv" 2>&1); then verdict "$d" FAIL "$m"; return; fi
	if ! k=$($CHECK -v any="status=ok,verified=true" "$d/transfer.csv" 2>&1); then verdict "$d" FAIL "rows measured before the kill lost: $k"; return; fi
	verdict "$d" PASS "exit 2: $(tail -1 "$d/transfer.err"); $k"
}

# A GID index the port does not have: exit 2 and a line naming the GID.
case_bad_gid() {
	d=$1
	need_verbs "$d" || return
	timeout 30 kvtier serve --transport verbs --listen 127.0.0.1:$((PORT + 50)) --pool $POOL \
		--gid-index 99 >"$d/serve.out" 2>"$d/serve.err"
	rc=$?
	cat "$d/serve.out" "$d/serve.err"
	if [ $rc != 2 ]; then verdict "$d" FAIL "serve --gid-index 99: exit $rc, want 2"; return; fi
	if ! grep -qi gid "$d/serve.err"; then verdict "$d" FAIL "serve --gid-index 99: error does not name the GID: $(tail -1 "$d/serve.err")"; return; fi
	verdict "$d" PASS "$(tail -1 "$d/serve.err")"
}
