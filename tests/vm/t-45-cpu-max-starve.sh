# A cpu.max small enough to starve its tasks, on tasks that enter the kernel all the time, keeps
# the scheduler attached. Twenty busy loops pinned to CPU 1, each moving itself into a cgroup
# with cpu.max "1000 1000000" (1 ms a second) and exec'ing there. fair.c holds a task of a
# throttled group only on its return to user space; the lab holds only a task that a tick found
# in user space (bw_user), so none is held inside the kernel (held anywhere, a task preempted in
# an RCU reader was held 21 s here and the RCU stall detector ejected the scheduler). The kernel
# lets such a task wait as long as the quota makes it; sched_ext's watchdog would kill a
# scheduler that leaves a runnable task waiting 30 s, so a task that has not run for 10 s since
# it was held rejoins anyway (limbo_forced). After 20 s: still attached, no reload, tasks held
# and let out by the guard, and each loop has run. Then the quota goes and every held task
# rejoins.
# lab: shared
. ./lib.sh

CG=/sys/fs/cgroup
G=$CG/lab-starve
HOGS=
# (wait with no pid would wait for the shared lab's daemon too, this shell's child.)
cleanup() {
	[ -n "$HOGS" ] && kill $HOGS 2>/dev/null && wait $HOGS 2>/dev/null
	HOGS=
	rmdir $G 2>/dev/null
}
trap cleanup EXIT

grep -qw cpu $CG/cgroup.controllers || fail "no cpu controller in $CG"
echo +cpu >$CG/cgroup.subtree_control || fail "cannot enable the cpu controller"
start_lab
check "CPU_MAX is on by default" sh -c 'scx_eevdf_lab features | grep -qw CPU_MAX'
seq0=$(cat $SCX/enable_seq)
b=$(counters limbo_held limbo_forced limbo_released bw_kernel)
mkdir $G && echo "1000 1000000" >$G/cpu.max || fail "cannot make $G with its cpu.max"
i=0
while [ $i -lt 20 ]; do
	sh -c "echo \$\$ >$G/cgroup.procs && exec taskset -c 1 sh -c 'while :; do :; done'" &
	HOGS="$HOGS $!"
	i=$((i + 1))
done
sleep 20
a=$(counters limbo_held limbo_forced limbo_released bw_kernel)
ran=0
for p in $HOGS; do [ "$(awk '{print $1}' /proc/$p/schedstat)" -gt 0 ] && ran=$((ran + 1)); done
note "20 loops at 1 ms a second for 20 s: held $(delta "$b" "$a" 1), let out by the guard $(delta "$b" "$a" 2), found in the kernel at a tick $(delta "$b" "$a" 4), $ran of 20 have run"
check "still attached" lab_attached
check "no reload" [ "$(cat $SCX/enable_seq)" = "$seq0" ]
check "tasks were held" [ "$(delta "$b" "$a" 1)" -gt 0 ]
check "the guard let held tasks out" [ "$(delta "$b" "$a" 2)" -gt 0 ]
check "every loop has run" [ "$ran" -eq 20 ]
echo max >$G/cpu.max
sleep 1
a=$(counters limbo_held limbo_forced limbo_released bw_kernel)
check "every held task rejoined once the quota is gone" [ "$(delta "$b" "$a" 1)" -eq "$(delta "$b" "$a" 3)" ]
cleanup
stop_lab
