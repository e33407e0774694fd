# A CPU taken by a higher class: a SCHED_FIFO hog pinned to CPU 1 at 100 % for 8 s while 8 lab
# CPU hogs that may run anywhere are queued. When the RT task takes CPU 1, ops.cpu_release hands
# back what waits in its local DSQ, nothing is inserted there while RT tasks are runnable on it,
# and the balancer empties its queue first (a held CPU counts as busiest whatever its load):
# every hog runs elsewhere, none goes a second without CPU time (sampled every 50 ms from a
# SCHED_FIFO sampler), every one gets at least half its fair share of the three other CPUs, and
# the scheduler stays attached. CPU 1's capacity (update_cpu_capacity(), read from the kernel's
# RT average) falls to what the RT task leaves; the other CPUs keep theirs.
#
# Timing boot (icount): shares and stalls are guest time, which host load cannot stretch.
# boot: timing
. ./lib.sh

SECS=${LAB_RT_SECS:-8}	# the 30 s of a soak run: scripts/vm --timing -- env LAB_RT_SECS=30 sh tests/suite.sh t-15-rt-neighbour.sh
start_lab
seq0=$(cat $SCX/enable_seq)
before=$(counters cpu_release release_kick pull_periodic capacity_update)
# The queues' state halfway through, for the CPUs' capacities.
(sleep $((SECS / 2)); scx_eevdf_lab monitor --count 1 0.1) >/tmp/t15-monitor 2>&1 &
mon=$!
out=$(scx_eevdf_lab spawn --hogs 8 --fifo-cpu 1 --secs $SECS 2>&1) || fail "spawn --hogs: $out"
after=$(counters cpu_release release_kick pull_periodic capacity_update)
wait $mon
echo "$out" | sed 's/^/  /'
caps() { awk -v want="$1" '$1 ~ /^cpu[0-9]/ && ($1 == "cpu1") == want {
	for (i = 1; i < NF; i++) if ($i == "cap") print $(i + 1) }' /tmp/t15-monitor | sort -n; }
cap1=$(caps 1)
cap_rest=$(caps 0 | head -n 1)
note "capacity_of(): CPU 1 $cap1, the others at least $cap_rest (of 1024); $(delta "$before" "$after" 4) updates"
note "ops.cpu_release $(delta "$before" "$after" 1), idle CPUs kicked a tick later $(delta "$before" "$after" 2), periodic pulls $(delta "$before" "$after" 3)"
least=$(echo "$out" | sed -n 's/^hogs: least served \([0-9]*\) ms.*/\1/p')
stall=$(echo "$out" | sed -n 's/.*longest stall \([0-9]*\) ms.*/\1/p')
[ -n "$least" ] && [ -n "$stall" ] || fail "no summary from spawn --hogs"
# A fair share: 3 CPUs for 8 hogs.
half=$((SECS * 1000 * 3 / 8 / 2))
check "the longest stall of a hog is under 1 s ($stall ms)" [ "$stall" -lt 1000 ]
check "every hog got at least half its fair share ($least ms of $((half * 2)) ms)" [ "$least" -ge $half ]
check "ops.cpu_release ran" [ "$(delta "$before" "$after" 1)" -gt 0 ]
# update_cpu_capacity(): the RT task's utilisation (rq->avg_rt) comes off CPU 1's capacity.
check "CPU 1's capacity fell under its RT hog (${cap1:-none} of 1024)" [ "${cap1:-1024}" -lt 300 ]
check "the other CPUs kept theirs (least ${cap_rest:-none})" [ "${cap_rest:-0}" -gt 800 ]
check "capacity updates were counted" [ "$(delta "$before" "$after" 4)" -gt 0 ]
check "still attached, never ejected or reloaded" \
	sh -c "[ \"\$(cat $SCX/state)\" = enabled ] && [ \$(cat $SCX/enable_seq) -eq $seq0 ]"
stop_lab
