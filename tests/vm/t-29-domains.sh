# Balancing per sched domain (scripts/test's smp boot: two NUMA nodes of two SMT cores, CPUs 0-3
# and 4-7): busy loops that start on node 0 and are then allowed everywhere spread to node 1 and
# over the cores as under the kernel's balancer in the same boot, within one loop and one core
# (in four 7.3 boots the kernel gave 2/2 on 4 cores every time, the lab three times, and 3/1 on 3
# cores once); an overloaded node gives loops to the idle one; the NUMA level pulled some of them;
# the active balance pushed running loops.
# boot: smp
. ./lib.sh

[ "$(nproc)" = 8 ] || fail "this test needs the smp boot's 8 CPUs, not $(nproc)"

# placement PID...: "N0 N1 C" -- the loops on node 0, on node 1, and the distinct cores they use.
placement() {
	for p in "$@"; do
		read -r s </proc/$p/stat; set -- $s; shift 38; echo "$1"
	done | awk '{ n[int($1 / 4)]++; c[int($1 / 2)] = 1 } END { k = 0; for (i in c) k++; printf "%d %d %d\n", n[0], n[1], k }'
}
# scenario N SETTLE: N loops pinned to node 0 for a second, then allowed on every CPU; their
# placement after SETTLE seconds (the last of three samples 0.5 s apart).
scenario() {
	HOGS=
	i=0
	while [ $i -lt "$1" ]; do hog 0-3; i=$((i + 1)); done
	sleep 1
	for p in $HOGS; do taskset -p -c 0-7 $p >/dev/null; done
	sleep "$2"
	for k in 1 2 3; do last=$(placement $HOGS); sleep 0.5; done
	stop_hogs
	echo "$last"
}

kernel4=$(scenario 4 4)
kernel6=$(scenario 6 4)
note "kernel: 4 loops -> node 0, node 1, cores: $kernel4; 6 loops: $kernel6"

start_lab
has "$(cat $LAB_LOG)" 'sched domains: SMT 2, MC 4, NUMA 8 \(imb_numa_nr 2, distance 20\)' ||
	fail "the daemon's sched domains: $(grep 'sched domains' $LAB_LOG)"
F="lb_smt lb_mc lb_numa lb_active nohz_kick nohz_balance lb_failed"
b=$(counters $F)
lab4=$(scenario 4 4)
a=$(counters $F)
numa4=$(delta "$b" "$a" 3)
active=$(delta "$b" "$a" 4)
note "lab: 4 loops -> $lab4; pulled SMT $(delta "$b" "$a" 1) MC $(delta "$b" "$a" 2) NUMA $numa4, active $(delta "$b" "$a" 4), ilb kicks $(delta "$b" "$a" 5), idle balances $(delta "$b" "$a" 6), failed passes $(delta "$b" "$a" 7)"
b=$a
lab6=$(scenario 6 4)
a=$(counters $F)
numa6=$(($(delta "$b" "$a" 3) + $(delta "$b" "$a" 4)))
active=$((active + $(delta "$b" "$a" 4)))
note "lab: 6 loops -> $lab6; pulled SMT $(delta "$b" "$a" 1) MC $(delta "$b" "$a" 2) NUMA $(delta "$b" "$a" 3), active $(delta "$b" "$a" 4), ilb kicks $(delta "$b" "$a" 5), idle balances $(delta "$b" "$a" 6)"

set -- $kernel4; k1=$2 kc=$3
set -- $lab4; l0=$1 l1=$2 lc=$3
check "lab: 4 loops reach node 1 ($l0/$l1)" [ "$l1" -ge 1 ]
check "lab: 4 loops split within one loop of the kernel's split (kernel node 1: $k1, lab: $l1)" \
	[ "$l1" -ge $((k1 - 1)) -a "$l1" -le $((k1 + 1)) ]
check "lab: 4 loops on the kernel's number of cores, or one less (kernel $kc, lab $lc)" [ "$lc" -ge $((kc - 1)) ]
set -- $kernel6; k1=$2
set -- $lab6; l1=$2
check "kernel: an overloaded node gives the idle one some of its loops ($kernel6)" [ "$k1" -ge 2 ]
check "lab: an overloaded node gives the idle one some of its loops ($lab6)" [ "$l1" -ge 2 ]
check "lab: the NUMA domain's balance moved some of them ($numa4 + $numa6)" [ "$((numa4 + numa6))" -gt 0 ]
# Each CPU of node 0 runs one loop when they are let go: nothing waits to be pulled, and a running
# task moves only by active balance (in seven windows of a diagnostic run it pushed 1 to 4 each).
check "lab: the active balance pushed running loops ($active)" [ "$active" -gt 0 ]
check "still attached" lab_attached
stop_lab
