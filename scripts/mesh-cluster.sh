#!/usr/bin/env bash
# mesh-cluster.sh: a three-node Slurm 22.05 cluster on one machine, for
# kvtier mesh's tests. Each logical node is a network namespace joined to
# the others by a bridge; each runs its own slurmd; slurmctld and munged
# run in the root namespace; everything lives in one work directory.
#
# usage: scripts/mesh-cluster.sh up DIR     bring the cluster up (about 1 s);
#                                         prints KEY=VALUE lines, also in DIR/env
#        scripts/mesh-cluster.sh down DIR   kill what `up` started, remove the
#                                         namespaces, veths and bridge, keep DIR
#
# Names are unique to DIR (an id derived from it): namespaces mesh-ID-n1..3,
# bridge mesh-ID, veths mesh-ID-1..3; addresses 198.19.X.1..3 and .254
# (X from the id, checked free), slurmctld on a free port. Needs root,
# slurm-wlm, munge and iproute2; exits 77 with one line "SKIP: why" when
# they are missing. Only what DIR/state records is ever killed or removed.
set -uo pipefail
export PATH=$PATH:/usr/sbin:/sbin
cmd=${1:-} dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { sed -n '2,18s/^# \{0,1\}//p' "$0"; exit 2; }
skip() { echo "SKIP: $*"; exit 77; }
die() { echo "mesh-cluster: $*" >&2; exit 1; }

down() {
	local st=$dir/state
	[ -f "$st" ] || return 0
	# shellcheck disable=SC1090
	. "$st"
	for p in ${PIDS:-}; do kill -TERM "$p" 2>/dev/null; done
	# Step daemons run with the work directory as their cwd.
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/cwd" 2>/dev/null)" = "$dir/spool" ] || [ "$(readlink "$p/cwd" 2>/dev/null)" = "$dir" ] || continue
		kill -KILL "${p#/proc/}" 2>/dev/null
	done
	for i in $(seq 50); do
		alive=0
		for p in ${PIDS:-}; do
			s=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) && [ "$s" != Z ] && alive=1
		done
		[ $alive = 0 ] && break
		sleep 0.1
	done
	for p in ${PIDS:-}; do kill -KILL "$p" 2>/dev/null; done
	for n in 1 2 3; do
		ip link del "$ID-$n" 2>/dev/null
		ip netns del "$ID-n$n" 2>/dev/null
	done
	ip link del "$ID" 2>/dev/null
	rm -f "$st"
}

if [ "$cmd" = down ]; then down; exit 0; fi
[ "$cmd" = up ] || die "unknown command $cmd"
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, slurmd as root)"
for c in slurmctld slurmd srun scontrol munged mungekey ip nsenter; do
	command -v $c >/dev/null || skip "no $c (apt-get install slurm-wlm munge iproute2)"
done
mkdir -p "$dir" && dir=$(cd "$dir" && pwd) || die "cannot create $dir"
[ -f "$dir/state" ] && down
hash=$(printf %s "$dir" | md5sum | cut -c1-6)
ID=mesh-$hash
X=$((16#${hash:0:2} % 200 + 20))
while ip route show | grep -q "^198\.19\.$X\."; do X=$(((X + 1) % 250)); done
NET=198.19.$X
PORT=$((20000 + 16#${hash:2:4} % 20000))
while ss -ltn 2>/dev/null | grep -q ":$PORT "; do PORT=$((PORT + 1)); done
echo "ID=$ID NET=$NET PIDS=''" >"$dir/state"
trap 'down; exit 1' ERR

ip link add "$ID" type bridge && ip addr add "$NET.254/24" dev "$ID" && ip link set "$ID" up || die "bridge $ID"
for n in 1 2 3; do
	ip netns add "$ID-n$n" &&
		ip link add "$ID-$n" type veth peer name eth0 netns "$ID-n$n" &&
		ip link set "$ID-$n" master "$ID" up &&
		ip -n "$ID-n$n" addr add "$NET.$n/24" dev eth0 &&
		ip -n "$ID-n$n" link set eth0 up &&
		ip -n "$ID-n$n" link set lo up &&
		ip -n "$ID-n$n" route add default via "$NET.254" || die "namespace $ID-n$n"
done

mkdir -p "$dir/munge" "$dir/spool" "$dir/state.d" "$dir/log" "$dir/tmp"
chmod 755 "$dir/munge"
[ -f "$dir/munge/key" ] || mungekey --create --keyfile="$dir/munge/key" >/dev/null 2>&1 || die "mungekey"
chmod 600 "$dir/munge/key"
munged -F --force --key-file="$dir/munge/key" --socket="$dir/munge/sock" --pid-file="$dir/munge/pid" \
	--log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" >/dev/null 2>&1 &
pids=$!

host=$(hostname)
cat >"$dir/slurm.conf" <<CONF
ClusterName=$ID
SlurmctldHost=$host($NET.254)
SlurmctldPort=$PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state.d
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
TmpFS=$dir/tmp/%n
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
InactiveLimit=0
KillWait=5
MinJobAge=5
NodeName=n1 NodeHostname=$host NodeAddr=$NET.1 Port=17001 CPUs=2 State=UNKNOWN
NodeName=n2 NodeHostname=$host NodeAddr=$NET.2 Port=17002 CPUs=2 State=UNKNOWN
NodeName=n3 NodeHostname=$host NodeAddr=$NET.3 Port=17003 CPUs=2 State=UNKNOWN
PartitionName=mesh Nodes=n[1-3] Default=YES MaxTime=INFINITE State=UP
CONF
for n in 1 2 3; do mkdir -p "$dir/spool/n$n" "$dir/tmp/n$n"; done
for i in $(seq 50); do [ -S "$dir/munge/sock" ] && break; sleep 0.05; done
export SLURM_CONF=$dir/slurm.conf
(cd "$dir" && exec slurmctld -D -i -f "$dir/slurm.conf" >"$dir/log/slurmctld.out" 2>&1) &
pids="$pids $!"
for n in 1 2 3; do
	(cd "$dir/spool" && exec nsenter --net="/run/netns/$ID-n$n" slurmd -D -N "n$n" -f "$dir/slurm.conf" >"$dir/log/slurmd-n$n.out" 2>&1) &
	pids="$pids $!"
done
echo "ID=$ID NET=$NET PIDS='$pids'" >"$dir/state"
trap - ERR
end=$((SECONDS + 20))
idle=0
while [ $SECONDS -lt $end ]; do
	idle=$(timeout 2 sinfo -h -o '%t %D' 2>/dev/null | awk '$1=="idle"{s+=$2} END{print s+0}')
	[ "$idle" = 3 ] && break
	sleep 0.1
done
if [ "$idle" != 3 ]; then
	tail -5 "$dir/log/slurmctld.log" "$dir"/log/slurmd-n*.log >&2
	down
	die "the nodes did not come up (idle: $idle of 3)"
fi
printf 'SLURM_CONF=%s\nMESH_NET=%s\nMESH_ID=%s\n' "$dir/slurm.conf" "$NET" "$ID" | tee "$dir/env"
