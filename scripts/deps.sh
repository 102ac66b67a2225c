#!/usr/bin/env bash
# Installs the Debian packages kvtier's build and tests use, when they are
# missing and we can (root with apt-get). The build needs only gcc and libc
# (the shims declare what they use of CUDA and libibverbs and load both at
# run time); libibverbs-dev serves the tests (the fake libibverbs and the
# verbs ABI facts test), without qemu the soft-RoCE VM test skips with a
# line saying so, without fio the disk tier's anchor benchmark (bench/,
# go test -bench DiskVsFio) skips.
#
# usage: scripts/deps.sh [build|test]
set -u
want=(gcc libc6-dev pkg-config libibverbs-dev ibverbs-providers)
if [ "${1:-build}" = test ]; then
	want+=(iproute2 qemu-system-x86 busybox-static cpio zstd kmod ibverbs-utils openmpi-bin slurm-wlm munge fio e2fsprogs)
	# report's REPORT.html test renders the page in headless Chromium.
	want+=(chromium)
fi
missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
	echo "deps: missing ${missing[*]}; not root or no apt-get, carrying on without them" >&2
	exit 0
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/kvtier-apt.log 2>&1; then
	apt-get update -q >>/tmp/kvtier-apt.log 2>&1
	apt-get install -y -q --no-install-recommends "${missing[@]}" >>/tmp/kvtier-apt.log 2>&1 ||
		{ echo "deps: apt-get failed, see /tmp/kvtier-apt.log; carrying on" >&2; exit 0; }
fi
