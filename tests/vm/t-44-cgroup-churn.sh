# Groups changed live under load. The stress smoke runs in a cgroup; busy loops run in a group
# nesting 10 deep (past the 8 levels the lab follows: counted as their parent) and in an idle
# one. 100 rounds, each one: the next cgroup_mode, every task of one group moved to the other, a
# cpu.weight and a cpu.idle write, a group emptied, removed and made again with a loop moved in,
# and cpu.max written on the stress's group (5 to 20 ms per 50 ms, "max" every third round) and
# on the remade one (10 ms per 50 ms), with CPU_MAX on (as by default): tasks are held and let
# back all along.
# The scheduler stays attached without a reload, every stressor completes, the cgroup ops are
# counted, and once the cgroups are gone the lab holds as many groups as before.
# lab: shared
. ./lib.sh

CG=/sys/fs/cgroup
W=$CG/lab-churn
ROUNDS=${LAB_CGROUP_ROUNDS:-100}
HOGS=

# procs DIR: the pids in cgroup DIR.
procs() { cat "$1/cgroup.procs" 2>/dev/null; }
# move_all FROM TO: every task of cgroup FROM into TO (tasks exiting meanwhile are skipped).
move_all() { for p in $(procs "$1"); do echo "$p" >"$2/cgroup.procs" 2>/dev/null; done; }
cleanup() {
	[ -n "$HOGS" ] && kill $HOGS 2>/dev/null
	for d in $(find $W -type d 2>/dev/null); do move_all "$d" $CG; done
	find $W -depth -type d -exec rmdir {} \; 2>/dev/null
}
trap cleanup EXIT

grep -qw cpu $CG/cgroup.controllers || fail "no cpu controller in $CG"
echo +cpu >$CG/cgroup.subtree_control || fail "cannot enable the cpu controller"
start_lab
scx_eevdf_lab features CPU_MAX >/dev/null 2>&1 || fail "cannot turn CPU_MAX on"
seq0=$(cat $SCX/enable_seq)
groups0=$(counters groups)
b=$(counters cgroup_init cgroup_exit cgroup_move cgroup_flattened)
bw0=$(counters bw_throttle limbo_held limbo_released)

mkdir -p $W && echo +cpu >$W/cgroup.subtree_control || fail "cannot make $W"
for g in a b idle e; do mkdir $W/$g || fail "mkdir $W/$g"; done
echo 1 >$W/idle/cpu.idle || fail "cannot write cpu.idle"
deep=$W
for l in 1 2 3 4 5 6 7 8 9 10; do
	deep=$deep/d$l
	mkdir $deep || fail "mkdir $deep"
	[ $l -lt 10 ] && { echo +cpu >$deep/cgroup.subtree_control || fail "+cpu in $deep"; }
done
# in_group DIR CMD...: CMD in cgroup DIR, in the background; its pid in HOG.
in_group() {
	d=$1; shift
	sh -c "echo \$\$ >$d/cgroup.procs && exec \"\$@\"" sh "$@" &
	HOG=$!
	HOGS="$HOGS $HOG"
}
in_group $deep sh -c 'while :; do :; done'
in_group $W/idle sh -c 'while :; do :; done'
in_group $W/e sh -c 'while :; do :; done'
roamer=$HOG
in_group $W/a stress-ng --cpu 2 --fork 2 --pipe 2 --pipe-data-size 512 --affinity 2 \
	--timeout 60 --metrics-brief
stress=$HOG
sleep 1
check "a loop 10 levels deep is in its cgroup" [ -n "$(procs $deep)" ]

set -- up smp concur max tasks
i=0 bad=
while [ $i -lt "$ROUNDS" ]; do
	m=$(eval echo "\${$((i % 5 + 1))}")
	scx_eevdf_lab set cgroup_mode=$m >/dev/null 2>&1 || bad="$bad set:$m"
	if [ $((i & 1)) -eq 0 ]; then move_all $W/a $W/b; else move_all $W/b $W/a; fi
	# (An idle group refuses a weight.)
	echo 0 >$W/b/cpu.idle && echo $((i * 397 % 10000 + 1)) >$W/b/cpu.weight &&
		echo $((i & 1)) >$W/b/cpu.idle || bad="$bad weight/idle"
	# The roaming loop leaves e, e goes and comes back, the loop returns.
	echo $roamer >$W/a/cgroup.procs && rmdir $W/e && mkdir $W/e &&
		echo $((i % 7 * 50 + 50)) >$W/e/cpu.weight && echo $roamer >$W/e/cgroup.procs ||
		bad="$bad remake"
	q=$((i % 4 * 5000 + 5000))
	[ $((i % 3)) -eq 2 ] && q=max
	echo "$q 50000" >$W/a/cpu.max && echo "10000 50000" >$W/e/cpu.max || bad="$bad cpu.max"
	sleep 0.2
	i=$((i + 1))
done
[ -z "$bad" ] || fail "writes refused:$bad"
last=$(eval echo "\${$(((ROUNDS - 1) % 5 + 1))}")
check "get cgroup_mode is $last" [ "$(scx_eevdf_lab get cgroup_mode)" = "$last" ]
check "get cgroup_mode --choices shows the modes as the kernel's file does" \
	[ "$(scx_eevdf_lab get cgroup_mode --choices)" = "$(echo "up smp concur max tasks" | sed "s/$last/($last)/")" ]
wait $stress || fail "stress-ng failed"
a=$(counters cgroup_init cgroup_exit cgroup_move cgroup_flattened)
note "$ROUNDS rounds: groups made $(delta "$b" "$a" 1), gone $(delta "$b" "$a" 2), task moves $(delta "$b" "$a" 3), counted as their parent $(delta "$b" "$a" 4)"
check "still attached after $ROUNDS rounds" lab_attached
check "no reload" [ "$(cat $SCX/enable_seq)" = "$seq0" ]
check "every remade cgroup got a group" [ "$(delta "$b" "$a" 1)" -ge "$ROUNDS" ]
check "every removed cgroup's group went" [ "$(delta "$b" "$a" 2)" -ge "$ROUNDS" ]
check "task moves were seen" [ "$(delta "$b" "$a" 3)" -ge "$ROUNDS" ]
check "the levels past 8 counted as their parent" [ "$(delta "$b" "$a" 4)" -ge 2 ]
bw1=$(counters bw_throttle limbo_held limbo_released)
note "cpu.max: queues throttled $(delta "$bw0" "$bw1" 1), tasks held $(delta "$bw0" "$bw1" 2), let back $(delta "$bw0" "$bw1" 3)"
check "cpu.max throttled queues and held tasks" [ "$(delta "$bw0" "$bw1" 2)" -gt 0 ]
kill $HOGS 2>/dev/null
wait $HOGS 2>/dev/null
HOGS=
cleanup
sleep 0.5
check "no group left once the cgroups are gone ($(counters groups) now, $groups0 before)" \
	[ "$(counters groups)" = "$groups0" ]
stop_lab
