#!/usr/bin/env bash
# Installs what kvtier's build or tests need from Debian's packages, only
# when it is missing, and says what before it does.
#
#   build (make build, make bench): a C compiler and libc's headers, nothing
#     else: the shims declare what they use of CUDA, cuBLAS, cuFile and
#     libibverbs and load them at run time. Where gcc compiles a C file
#     nothing is installed; where it does not, gcc and libc6-dev are
#     installed only as root on Debian or Ubuntu without MLNX_OFED (whose
#     packages a site manages); elsewhere this says what is missing.
#   test (make test): also what the tests use (libibverbs-dev for the fake
#     libibverbs and the verbs ABI test, qemu and a kernel for the soft-RoCE
#     VM, slurm-wlm and openmpi-bin for the cluster tests, fio, chromium for
#     the HTML report's render test), as root on Debian or Ubuntu; the verbs
#     packages never where MLNX_OFED is installed. Without them the tests
#     that need them skip, saying why.
#
# usage: scripts/deps.sh [build|test]
set -u
mode=${1:-build}

# cc_works says whether gcc compiles and links a C file that includes
# libc's headers.
cc_works() {
	command -v gcc >/dev/null 2>&1 || return 1
	local d
	d=$(mktemp -d) || return 1
	printf '#include <stdlib.h>\n#include <dlfcn.h>\nint main(void){return 0;}\n' >"$d/t.c"
	gcc -o "$d/t" "$d/t.c" >/dev/null 2>&1
	local rc=$?
	rm -rf "$d"
	return $rc
}

# mlnx_ofed says whether NVIDIA/Mellanox OFED manages this node's RDMA
# packages.
mlnx_ofed() {
	command -v ofed_info >/dev/null 2>&1 && return 0
	dpkg-query -W -f='${Status}' mlnx-ofed-kernel-utils 2>/dev/null | grep -q 'install ok installed'
}

debian() { [ -f /etc/debian_version ] && command -v apt-get >/dev/null 2>&1 && command -v dpkg-query >/dev/null 2>&1; }

missing_of() {
	local p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || printf '%s ' "$p"
	done
}

install() {
	echo "deps: installing $* (apt-get, log in /tmp/kvtier-apt.log)" >&2
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y -q --no-install-recommends "$@" >/tmp/kvtier-apt.log 2>&1; then
		apt-get update -q >>/tmp/kvtier-apt.log 2>&1
		apt-get install -y -q --no-install-recommends "$@" >>/tmp/kvtier-apt.log 2>&1 ||
			{ echo "deps: apt-get failed, see /tmp/kvtier-apt.log; carrying on" >&2; return 0; }
	fi
}

want=()
if ! cc_works; then
	if ! debian || mlnx_ofed || [ "$(id -u)" != 0 ]; then
		echo "deps: the build needs gcc and libc's headers (Debian: gcc libc6-dev); install them, kvtier does not here" >&2
		[ "$mode" = build ] && exit 0
	else
		want+=(gcc libc6-dev)
	fi
fi
if [ "$mode" = test ] && debian && [ "$(id -u)" = 0 ]; then
	want+=(pkg-config iproute2 qemu-system-x86 busybox-static cpio zstd kmod openmpi-bin slurm-wlm munge fio e2fsprogs chromium)
	mlnx_ofed || want+=(libibverbs-dev ibverbs-providers ibverbs-utils)
elif [ "$mode" = test ]; then
	echo "deps: not root on Debian: installing nothing; tests that need qemu, slurm, fio or chromium skip and say why" >&2
fi
[ ${#want[@]} -eq 0 ] && exit 0
# shellcheck disable=SC2207
missing=($(missing_of "${want[@]}"))
[ ${#missing[@]} -eq 0 ] && exit 0
install "${missing[@]}"
