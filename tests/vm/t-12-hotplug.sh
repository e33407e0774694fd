# CPU hotplug is handled inside the scheduler (ops.cpu_offline / ops.cpu_online), without a
# reload: 50 offline/online cycles of CPUs 1-3, under CPU and pipe stress, leave it attached with
# enable_seq unchanged (no ejection, no restart); the tasks of a dying CPU move to the others
# keeping their lag and relative deadline (a dequeue without DEQUEUE_SLEEP, then PLACE_LAG and
# PLACE_REL_DEADLINE at the enqueue: place_rel_deadline counts them; what ops.cpu_offline itself
# finds in its queue and moves is counted as hotplug_moved), the live feature change stays, and
# base_slice_ns is re-derived from the normalized slice for each CPU count, as the kernel's
# update_sysctl() does (0.7 ms x (1 + ilog2(ncpus))). Tasks bound to a dying CPU (its per-CPU
# kthreads) that wait in our queue go to the global DSQ, which that CPU still consumes
# (hotplug_global).
# The one reload left: the lab starts with CPU 3 offline, so the topology it loads does not
# place CPU 3; when CPU 3 comes online the scheduler asks to be loaded again (one reload, logged,
# the live settings kept).
. ./lib.sh

CYCLES=${LAB_HOTPLUG_CYCLES:-50}	# more for a soak run: scripts/vm -- env LAB_HOTPLUG_CYCLES=500 sh tests/suite.sh t-12-hotplug.sh
for c in 1 2 3; do
	[ -w /sys/devices/system/cpu/cpu$c/online ] || fail "cpu$c cannot be taken offline in this VM"
done
echo 0 >/sys/devices/system/cpu/cpu3/online || fail "offlining cpu3 before the start"
start_lab --features NO_DELAY_ZERO
grep -q "topology: 4 CPUs .*; 1 CPU offline" "$LAB_LOG" || fail "the topology at load: $(grep topology: "$LAB_LOG")"
seq0=$(cat $SCX/enable_seq)
echo 1 >/sys/devices/system/cpu/cpu3/online || fail "onlining cpu3 after the start"
n=0
while [ "$(cat $SCX/enable_seq)" = "$seq0" ] || [ "$(scx_state)" != enabled ]; do
	sleep 0.5; n=$((n + 1))
	[ $n -lt 600 ] || fail "no reload within 300 s after cpu3, unknown at load, came online"
done
check "a CPU unknown at load coming online made the daemon reload, once" \
	sh -c "[ \"\$(cat $SCX/state)\" = enabled ] && [ \$(cat $SCX/enable_seq) -eq $((seq0 + 1)) ]"
check "the reload said why" grep -q "reloading to read its place" "$LAB_LOG"
seq0=$(cat $SCX/enable_seq)
before=$(counters cpu_offline cpu_online hotplug_moved place_rel_deadline hotplug_global)

stress-ng --cpu 6 --pipe 2 --pipe-data-size 512 --timeout 600 >/dev/null 2>&1 &
stress=$!
# Three busy loops are pinned, before each cycle, to the CPU about to go down: what of them still
# waits in its queue when ops.cpu_offline runs is bound to that CPU (the kernel breaks their
# affinity only once they run there): it must go through the global DSQ.
pinned=
for k in 1 2 3; do sh -c 'while :; do :; done' & pinned="$pinned $!"; done
sleep 2
echo 0 >/sys/devices/system/cpu/cpu3/online || fail "offlining cpu3"
sleep 1
slice3=$(scx_eevdf_lab get base_slice_ns)
echo 1 >/sys/devices/system/cpu/cpu3/online || fail "onlining cpu3"
t0=$(date +%s)
i=1
while [ $i -lt $CYCLES ]; do
	c=$((1 + i % 3))
	for p in $pinned; do taskset -p -c $c $p >/dev/null 2>&1; done
	sleep 0.1
	echo 0 >/sys/devices/system/cpu/cpu$c/online || fail "offlining cpu$c (cycle $i)"
	sleep 0.2
	echo 1 >/sys/devices/system/cpu/cpu$c/online || fail "onlining cpu$c (cycle $i)"
	sleep 0.2
	lab_attached || fail "detached after $i cycles"
	i=$((i + 1))
done
note "$CYCLES cycles in $(($(date +%s) - t0 + 1)) s"
sleep 1
kill $stress $pinned 2>/dev/null; wait $stress $pinned 2>/dev/null
after=$(counters cpu_offline cpu_online hotplug_moved place_rel_deadline hotplug_global)
note "ops.cpu_offline $(delta "$before" "$after" 1), ops.cpu_online $(delta "$before" "$after" 2), queued entities moved by ops.cpu_offline $(delta "$before" "$after" 3), enqueues that kept a relative deadline $(delta "$before" "$after" 4), bound tasks handed to the global DSQ $(delta "$before" "$after" 5)"

check "still attached, and never reloaded (enable_seq unchanged)" \
	sh -c "[ \"\$(cat $SCX/state)\" = enabled ] && [ \$(cat $SCX/enable_seq) -eq $seq0 ]"
check "no restart was asked for" sh -c "! grep -q 'asked for a restart' '$LAB_LOG'"
check "the scheduler saw every offline ($CYCLES)" [ "$(delta "$before" "$after" 1)" -ge $CYCLES ]
check "the scheduler saw every online ($CYCLES)" [ "$(delta "$before" "$after" 2)" -ge $CYCLES ]
check "tasks moved with their lag and relative deadline kept" [ "$(delta "$before" "$after" 4)" -gt 0 ]
check "the live feature change stayed" sh -c 'scx_eevdf_lab features | grep -q NO_DELAY_ZERO'
check "base_slice_ns was 0.7 ms x 2 with 3 CPUs" [ "$slice3" = 1400000 ]
check "base_slice_ns is 0.7 ms x 3 with 4 CPUs again" [ "$(scx_eevdf_lab get base_slice_ns)" = 2100000 ]
check "the re-derivation was logged" grep -q "update_sysctl" "$LAB_LOG"
stress-ng --cpu 4 --pipe 2 --pipe-data-size 512 --timeout 3 >/dev/null 2>&1 || fail "stress after the cycles"
check "still attached" lab_attached
stop_lab
