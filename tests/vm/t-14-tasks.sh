# Task bookkeeping without a fixed limit: no fork fails because of the scheduler.
#  - The daemon starts with the kernel's task limits low (threads-max 2,000: the task pool's cap
#    is chosen from them at load), then they are raised as on a big host (pid_max 4,194,304,
#    threads-max 200,000): 40,000 threads alive at once are all created and all run. The pool
#    fills its load-time cap on the way: the scheduler exits with the reason and a restart
#    request, the daemon reloads it sized for the new limits, and no fork fails meanwhile.
#  - 5,000 short-lived processes are all forked and reaped (about 4 ms each under emulation:
#    the 200,000 of a big host's day would take a quarter of an hour per kernel here).
#  - Afterwards the scheduler is attached and its task count has moved as the system's did
#    (within 16): the kernel may keep kworkers it started under the load, and they count on
#    both sides; a slot the scheduler failed to free would count on its side only.
# The slots are the scheduler's own bookkeeping, the same on every kernel: the primary kernel
# runs it (see scripts/test).
# The VM needs about 1 GiB for the threads' kernel stacks (scripts/test boots with 4 GiB).
. ./lib.sh

# The 200,000 of a soak run: scripts/vm --mem 4G -- env LAB_FORKS=200000 sh tests/suite.sh t-14-tasks.sh
FORKS=${LAB_FORKS:-5000}
threads_max0=$(cat /proc/sys/kernel/threads-max)
pid_max0=$(cat /proc/sys/kernel/pid_max)
maps0=$(cat /proc/sys/vm/max_map_count)
restore_limits() {
	echo "$threads_max0" >/proc/sys/kernel/threads-max
	echo "$pid_max0" >/proc/sys/kernel/pid_max
	echo "$maps0" >/proc/sys/vm/max_map_count
}
echo 2000 >/proc/sys/kernel/threads-max || fail "cannot lower threads-max"
start_lab
seq0=$(cat $SCX/enable_seq)
# threads: every task of the system (/proc lists each thread under its process).
threads() { ls -d /proc/[0-9]*/task/[0-9]* 2>/dev/null | wc -l; }
tasks0=$(counters tasks) sys0=$(threads)
note "attached with $(counters task_slots) slots and $tasks0 tasks; $(grep -o 'task pool: .*' "$LAB_LOG")"

echo 4194304 >/proc/sys/kernel/pid_max || { restore_limits; fail "cannot raise pid_max"; }
echo 200000 >/proc/sys/kernel/threads-max || { restore_limits; fail "cannot raise threads-max"; }
# Each thread maps its stack, a guard page and a signal stack.
echo 1000000 >/proc/sys/vm/max_map_count || { restore_limits; fail "cannot raise max_map_count"; }
out=$(scx_eevdf_lab spawn --threads 40000 --procs 4 2>&1); rc=$?
note "$out"
[ $rc -eq 0 ] || { restore_limits; fail "spawn --threads 40000 exited with $rc"; }
check "all 40,000 threads were created and ran" sh -c "echo '$out' | grep -q '40000 created, 0 failed, 40000 ran'"
check "the pool's load-time cap was reached, and the daemon said so" grep -q "task pool is full" "$LAB_LOG"
n=0; while ! lab_attached && [ $n -lt 3000 ]; do sleep 0.1; n=$((n + 1)); done
check "the daemon reloaded the scheduler (enable_seq moved) and it is attached" \
	sh -c "lab_attached() { [ \"\$(cat $SCX/state)\" = enabled ]; }; lab_attached && [ \$(cat $SCX/enable_seq) -ne $seq0 ]"
check "it is ours" sh -c "case \$(cat $SCX/root/ops) in eevdf_lab*) ;; *) exit 1 ;; esac"

out=$(scx_eevdf_lab spawn --forks $FORKS 2>&1); rc=$?
note "$out"
[ $rc -eq 0 ] || { restore_limits; fail "spawn --forks $FORKS exited with $rc"; }
check "all $FORKS processes were forked and reaped" sh -c "echo '$out' | grep -q '$FORKS reaped, 0 failed'"
check "still attached" lab_attached
tasks1=$(counters tasks) sys1=$(threads)
note "tasks with a slot: $tasks0 at the start, $tasks1 now ($(counters task_slots) slots); the system's tasks: $sys0, then $sys1"
d=$(((tasks1 - tasks0) - (sys1 - sys0)))
check "the task count moved as the system's did (within 16: $d)" [ $d -le 16 -a $d -ge -16 ]
restore_limits
stop_lab
