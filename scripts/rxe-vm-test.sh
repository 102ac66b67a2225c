#!/usr/bin/env bash
# rxe-vm-test.sh: end-to-end test of kvtier's verbs transport on soft-RoCE.
#
# The host kernel has no RDMA, so this boots Debian's own generic kernel in
# a small qemu guest (TCG, no KVM), loads rdma_rxe on a dummy netdev and runs
# kvtier serve/transfer/sweep over the rxe0 device, plus the failure cases.
# The kernel package is downloaded once into a cache; the initramfs (busybox,
# the kvtier binary and the libraries it loads) is built on every run.
#
# usage: scripts/rxe-vm-test.sh [-b KVTIER_BINARY] [-c CASES] [-o OUTDIR]
#   -b  use this kvtier binary instead of building ./cmd/kvtier
#   -c  comma-separated guest cases to run (default: $KVTIER_RXE_CASES or
#       all; see scripts/rxe-vm/cases.sh). "infra" only checks the VM and
#       rxe with ibv_rc_pingpong, without kvtier.
#   -o  keep the console log, results log and CSVs (CASE-FILE.csv) here
#       (default: a temporary directory, removed on success)
#
# Exit status: 0 pass, 1 fail, and for a skip (not root, packages or kernel
# unavailable, another run holding the lock) KVTIER_RXE_SKIP_STATUS
# (default 0) after one line that starts
# "rxe-vm-test: SKIP:".
#
# Environment: KVTIER_RXE_CACHE (kernel cache, default
# ${XDG_CACHE_HOME:-~/.cache}/kvtier/rxe-vm), KVTIER_RXE_TIMEOUT (seconds the
# guest may go without writing a line to either serial port before it is
# stopped, default 150: a limit on progress, not on wall time, so a guest
# slowed by other work on the machine keeps running while it advances),
# KVTIER_RXE_MAX (seconds the guest may run in all, default 900),
# KVTIER_RXE_CPUS (guest CPUs, default 2),
# KVTIER_RXE_LOCK_WAIT (seconds to wait for another run on this machine
# before skipping, default 300).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
guestdir=$here/rxe-vm

bin= cases=${KVTIER_RXE_CASES:-all} outdir= keep=0
while getopts "b:c:o:h" opt; do
	case $opt in
	b) bin=$OPTARG ;;
	c) cases=$OPTARG ;;
	o) outdir=$OPTARG ;;
	*) sed -n '2,25s/^# \{0,1\}//p' "$0"; exit 2 ;;
	esac
done

skip_status=${KVTIER_RXE_SKIP_STATUS:-0}
vm_timeout=${KVTIER_RXE_TIMEOUT:-150}
vm_max=${KVTIER_RXE_MAX:-900}
cpus=${KVTIER_RXE_CPUS:-2}
cache=${KVTIER_RXE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kvtier/rxe-vm}
t0=$(date +%s)

say() { echo "rxe-vm-test: $*" >&2; }
skip() { echo "rxe-vm-test: SKIP: $*"; exit "$skip_status"; }
die() { say "FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || skip "needs root (apt-get for the kernel package and packages)"
[ "$(uname -m)" = x86_64 ] || skip "needs an x86_64 host, this is $(uname -m)"

# Host packages: the command or file each one provides.
declare -A need=(
	[qemu-system-x86]=qemu-system-x86_64
	[busybox-static]=busybox
	[cpio]=cpio
	[zstd]=zstd
	[kmod]=depmod
	[iproute2]=rdma
	[ibverbs-providers]=/etc/libibverbs.d/rxe.driver
	[libibverbs-dev]=/usr/include/infiniband/verbs.h
	[ibverbs-utils]=ibv_rc_pingpong
)
export PATH=$PATH:/usr/sbin:/sbin
missing_pkgs() {
	local p w out=()
	for p in "${!need[@]}"; do
		w=${need[$p]}
		case $w in
		/*) [ -e "$w" ] || out+=("$p") ;;
		*) command -v "$w" >/dev/null || out+=("$p") ;;
		esac
	done
	# busybox (the dynamic one) also installs /bin/busybox; we need the static one.
	if command -v busybox >/dev/null && ! file_is_static "$(command -v busybox)"; then out+=(busybox-static); fi
	echo "${out[@]}"
}
file_is_static() { ! ldd "$1" >/dev/null 2>&1; }
missing=$(missing_pkgs)
if [ -n "$missing" ]; then
	if command -v apt-get >/dev/null; then
		say "installing $missing"
		export DEBIAN_FRONTEND=noninteractive
		aptlog=$(mktemp /tmp/kvtier-rxe-apt.XXXXXX)
		# shellcheck disable=SC2086
		apt-get install -y -q --no-install-recommends $missing >"$aptlog" 2>&1 || {
			apt-get update -q >>"$aptlog" 2>&1
			apt-get install -y -q --no-install-recommends $missing >>"$aptlog" 2>&1
		} || tail -3 "$aptlog" >&2
		rm -f "$aptlog"
	fi
	missing=$(missing_pkgs)
	[ -z "$missing" ] || skip "missing Debian packages: $missing (apt-get install them)"
fi

mkdir -p "$cache" || skip "cannot create cache $cache"
# One VM at a time per cache: two runs would race on the cache and the CPUs.
exec 9>"$cache/lock"
lock_wait=${KVTIER_RXE_LOCK_WAIT:-300}
if ! flock -n 9; then
	say "waiting up to ${lock_wait}s for another rxe-vm-test to finish (lock $cache/lock)"
	flock -w "$lock_wait" 9 || skip "another rxe-vm-test on this machine held $cache/lock for over ${lock_wait}s"
fi

# The kernel: the generic flavour linux-image-amd64 depends on (the -cloud
# flavour has no CONFIG_RDMA_RXE), fetched once and reduced to vmlinuz plus
# the modules rdma_rxe needs.
kernel_pkg() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}'; }
kpkg=$(kernel_pkg)
if [ -z "$kpkg" ] && [ -z "$(ls -1 "$cache" 2>/dev/null | grep '^linux-image-')" ]; then
	# A clean machine may have no package lists yet.
	apt-get update -q >/dev/null 2>&1
	kpkg=$(kernel_pkg)
fi
if [ -z "$kpkg" ]; then
	# No package index (offline, or apt lists cleaned): use what is cached.
	kpkg=$(ls -1 "$cache" 2>/dev/null | grep '^linux-image-.*-amd64$' | sort -V | tail -1)
	[ -n "$kpkg" ] || skip "apt-cache knows no linux-image-amd64 and nothing is cached in $cache"
fi
kver=${kpkg#linux-image-}
kdir=$cache/$kpkg
if [ ! -s "$kdir/modules.order" ]; then
	say "fetching $kpkg into $cache (once)"
	work=$(mktemp -d "$cache/tmp.XXXXXX")
	( cd "$work" && apt-get download "$kpkg" >download.log 2>&1 ) ||
		(apt-get update -q >/dev/null 2>&1; cd "$work" && apt-get download "$kpkg" >download.log 2>&1) ||
		{ tail -3 "$work/download.log" >&2; rm -rf "$work"; skip "cannot download $kpkg"; }
	dpkg-deb -x "$work"/"$kpkg"_*.deb "$work/x" || { rm -rf "$work"; die "dpkg-deb -x $kpkg failed"; }
	depmod -b "$work/x" "$kver" || { rm -rf "$work"; die "depmod -b failed"; }
	# crc32_generic first: rdma_rxe uses crc32 without declaring it, and
	# without it "rdma link add" fails with "No such file or directory".
	mods=()
	for m in crc32_generic rdma_rxe ib_uverbs dummy; do
		while read -r _ path _; do
			mods+=("${path#"$work"/x/}")
		done < <(modprobe -d "$work/x" -S "$kver" --show-depends "$m" | grep '^insmod ')
	done
	[ ${#mods[@]} -ge 4 ] || { rm -rf "$work"; die "modprobe --show-depends found ${#mods[@]} modules"; }
	mkdir -p "$work/k"
	cp "$work/x/boot/vmlinuz-$kver" "$work/k/vmlinuz"
	: >"$work/k/modules.order"
	for p in "${mods[@]}"; do
		# Newer Debian kernels compress modules; busybox insmod wants them plain.
		q=${p%.xz}; q=${q%.zst}; q=${q%.gz}
		grep -qxF "$q" "$work/k/modules.order" && continue
		mkdir -p "$work/k/$(dirname "$q")"
		case $p in
		*.xz) xz -dc "$work/x/$p" >"$work/k/$q" ;;
		*.zst) zstd -qdc "$work/x/$p" >"$work/k/$q" ;;
		*.gz) gzip -dc "$work/x/$p" >"$work/k/$q" ;;
		*) cp "$work/x/$p" "$work/k/$q" ;;
		esac || { rm -rf "$work"; die "cannot unpack module $p"; }
		echo "$q" >>"$work/k/modules.order"
	done
	rm -rf "$kdir"
	mv "$work/k" "$kdir"
	rm -rf "$work"
	# Keep only the newest kernel.
	for old in "$cache"/linux-image-*; do
		[ "$old" = "$kdir" ] || rm -rf "$old"
	done
fi

# The build lives in $tmp, removed at exit. Logs and CSVs go to -o's
# directory, or to $tmp/out, which stays when the run fails.
tmp=$(mktemp -d /tmp/kvtier-rxe.XXXXXX)
if [ -n "$outdir" ]; then ownout=1; else ownout=0 outdir=$tmp/out; fi
mkdir -p "$outdir"
cleanup() {
	if [ "$ownout" = 1 ] || [ "$keep" = 0 ]; then rm -rf "$tmp"; else rm -rf "$tmp/root" "$tmp/initrd.zst" "$tmp/kvtier"; fi
}
trap cleanup EXIT

# kvtier for the host, as the Makefile builds it.
if [ -z "$bin" ]; then
	export CGO_CFLAGS=${CGO_CFLAGS:-"-O2 -g -Wno-deprecated-declarations"}
	# The fault cases need the KVTIER_TEST_* switches the shipped binary lacks.
	( cd "$root" && go build -tags kvtier_testfaults -o "$tmp/kvtier" ./cmd/kvtier ) || die "go build ./cmd/kvtier failed"
	bin=$tmp/kvtier
fi
[ -x "$bin" ] || die "$bin is not an executable"

# The initramfs: busybox, the guest scripts, kvtier, iproute2's ip and
# rdma, ibv_rc_pingpong, and every shared library they link or dlopen.
rootfs=$tmp/root
mkdir -p "$rootfs"/{bin,usr/bin,usr/lib,etc/libibverbs.d,proc,sys,dev,tmp,run,out}
# Mirror a merged /usr (Debian 12: /lib -> usr/lib), so library links
# resolve in the guest as they do here.
for d in lib lib32 lib64 libx32; do
	if [ -L "/$d" ]; then
		t=$(readlink "/$d")
		case $t in /*) ;; *) t=/$t ;; esac
		mkdir -p "$rootfs$t" && ln -s "$(readlink "/$d")" "$rootfs/$d"
	elif [ -d "/$d" ]; then mkdir -p "$rootfs/$d"; fi
done
mkdir -p "$rootfs/lib/modules"
cp "$(command -v busybox)" "$rootfs/bin/busybox"
cp "$guestdir"/init "$rootfs/init"
cp "$guestdir"/cases.sh "$guestdir"/csvcheck.awk "$rootfs/"
chmod 755 "$rootfs/init"
cp "$bin" "$rootfs/usr/bin/kvtier"
for c in ip rdma ibv_rc_pingpong ibv_devinfo; do cp "$(command -v $c)" "$rootfs/usr/bin/" || die "no $c"; done
cp /etc/libibverbs.d/rxe.driver "$rootfs/etc/libibverbs.d/"
provider=$(ls /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so | head -1)
libibverbs=$(readlink -f /usr/lib/x86_64-linux-gnu/libibverbs.so.1)
copy_file() { # copy a file and, for a link, what it points to, at the same paths
	local f=$1
	[ -e "$rootfs$f" ] && return 0
	mkdir -p "$rootfs$(dirname "$f")"
	cp -a "$f" "$rootfs$f"
	if [ -L "$f" ]; then copy_file "$(readlink -f "$f")"; fi
}
libs_of() { ldd "$1" 2>/dev/null | awk '/=> \// {print $3} /^\t\/[^ ]+ \(/ {print $1}'; }
for f in "$rootfs"/usr/bin/* "$provider" "$libibverbs"; do
	for l in $(libs_of "$f"); do copy_file "$l"; done
done
# kvtier dlopens libibverbs; the provider is dlopened by libibverbs.
copy_file /usr/lib/x86_64-linux-gnu/libibverbs.so.1
copy_file "$provider"
copy_file /lib64/ld-linux-x86-64.so.2
# Modules, in load order.
while read -r p; do
	mkdir -p "$rootfs/lib/modules/$(dirname "$p")"
	cp "$kdir/$p" "$rootfs/lib/modules/$p"
	echo "/lib/modules/$p" >>"$rootfs/lib/modules/order"
done <"$kdir/modules.order"
echo "$cases" >"$rootfs/cases"
( cd "$rootfs" && find . -print0 | cpio -o -H newc --null --quiet | zstd -q -3 -T0 ) >"$tmp/initrd.zst" ||
	die "building the initramfs failed"
t1=$(date +%s)
say "initramfs $(du -k "$tmp/initrd.zst" | cut -f1) KiB, kernel $kver; booting (stopped after ${vm_timeout}s without output, or ${vm_max}s in all)"

# watch_guest polls qemu until it exits; it stops the guest when neither
# serial log has grown for vm_timeout seconds, or when the guest has run
# vm_max seconds in all, and then prints why.
watch_guest() {
	local pid=$1 start last=-1 seen size now
	start=$(date +%s); seen=$start
	while kill -0 "$pid" 2>/dev/null; do
		sleep 2
		now=$(date +%s)
		size=$(( $(stat -c %s "$console" 2>/dev/null || echo 0) + $(stat -c %s "$results" 2>/dev/null || echo 0) ))
		[ "$size" != "$last" ] && { last=$size; seen=$now; }
		if (( now - seen >= vm_timeout )) || (( now - start >= vm_max )); then
			if (( now - seen >= vm_timeout )); then
				echo "no output for ${vm_timeout}s"
			else
				echo "still running after ${vm_max}s"
			fi
			kill -TERM "$pid" 2>/dev/null; sleep 5; kill -KILL "$pid" 2>/dev/null
			return
		fi
	done
}

# Two serial ports: ttyS0 is the console (kernel and command output),
# ttyS1 carries only results (case lines and CSVs between markers).
console=$outdir/console.log
results=$outdir/results.log
: >"$console"; : >"$results"
qemu-system-x86_64 \
	-accel tcg -cpu max -smp "$cpus" -m 2048 \
	-nodefaults -no-user-config -display none -no-reboot \
	-kernel "$kdir/vmlinuz" -initrd "$tmp/initrd.zst" \
	-append "console=ttyS0 panic=-1 loglevel=4 quiet" \
	-serial "file:$console" -serial "file:$results" \
	</dev/null >"$outdir/qemu.log" 2>&1 &
qpid=$!
# A TERM or INT (a go test deadline, Ctrl-C) is passed on to qemu.
trap 'kill -TERM $qpid 2>/dev/null; keep=1; die "interrupted; logs in $outdir"' TERM INT
stalled=$(watch_guest "$qpid")
wait $qpid
qrc=$?
trap - TERM INT
t2=$(date +%s)

# Pull the CSVs out of the results log and report each case.
awk -v dir="$outdir" '
	{ sub(/\r$/, "") }
	/^KVTIER-FILE-BEGIN: / { f = dir "/" $2; printf "" > f; next }
	/^KVTIER-FILE-END/ { close(f); f = ""; next }
	f != "" { print > f }
' "$results" 2>/dev/null
sed 's/\r$//' "$results" | grep -E '^KVTIER-(CASE|VM):' >&2
verdict=$(sed 's/\r$//' "$results" | grep -E '^KVTIER-VM: ' | tail -1 | awk '{print $2}')
timing="host $((t1 - t0))s, guest $((t2 - t1))s"
if [ -n "$stalled" ]; then
	say "console tail:"; tail -25 "$console" | sed 's/^/  | /' >&2
	keep=1
	die "guest stopped: $stalled ($timing); logs in $outdir"
fi
if [ "$verdict" != PASS ]; then
	say "console tail:"; tail -40 "$console" | sed 's/^/  | /' >&2
	[ -s "$outdir/qemu.log" ] && sed 's/^/  qemu| /' "$outdir/qemu.log" >&2
	keep=1
	die "guest verdict '${verdict:-none}' (qemu exit $qrc, $timing); logs in $outdir"
fi
npass=$(sed 's/\r$//' "$results" | grep -c '^KVTIER-CASE: [a-z_]* PASS')
say "PASS: $npass cases passed ($timing)$([ "$ownout" = 1 ] && echo "; logs and CSVs in $outdir")"
