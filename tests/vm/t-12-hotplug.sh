# CPU hotplug is handled inside the scheduler (ops.cpu_offline / ops.cpu_online), without a
# reload: 50 offline/online cycles of CPUs 1-3, under CPU and pipe stress, leave it attached with
# enable_seq unchanged (no ejection, no restart); the tasks of a dying CPU move to the others
# keeping their lag and relative deadline (a dequeue without DEQUEUE_SLEEP, then PLACE_LAG and
# PLACE_REL_DEADLINE at the enqueue: place_rel_deadline counts them; what ops.cpu_offline itself
# finds in its queue and moves is counted as hotplug_moved), the live feature change stays, and
# base_slice_ns is re-derived from the normalized slice for each CPU count, as the kernel's
# update_sysctl() does (0.7 ms x (1 + ilog2(ncpus))).
. ./lib.sh

CYCLES=50
for c in 1 2 3; do
	[ -w /sys/devices/system/cpu/cpu$c/online ] || fail "cpu$c cannot be taken offline in this VM"
done
start_lab --features NO_DELAY_ZERO
seq0=$(cat $SCX/enable_seq)
before=$(counters cpu_offline cpu_online hotplug_moved place_rel_deadline)

stress-ng --cpu 6 --pipe 2 --pipe-data-size 512 --timeout 600 >/dev/null 2>&1 &
stress=$!
sleep 2
echo 0 >/sys/devices/system/cpu/cpu3/online || fail "offlining cpu3"
sleep 1
slice3=$(scx_eevdf_lab get base_slice_ns)
echo 1 >/sys/devices/system/cpu/cpu3/online || fail "onlining cpu3"
t0=$(date +%s)
i=1
while [ $i -lt $CYCLES ]; do
	c=$((1 + i % 3))
	echo 0 >/sys/devices/system/cpu/cpu$c/online || fail "offlining cpu$c (cycle $i)"
	sleep 0.2
	echo 1 >/sys/devices/system/cpu/cpu$c/online || fail "onlining cpu$c (cycle $i)"
	sleep 0.2
	lab_attached || fail "detached after $i cycles"
	i=$((i + 1))
done
note "$CYCLES cycles in $(($(date +%s) - t0 + 1)) s"
sleep 1
kill $stress 2>/dev/null; wait $stress 2>/dev/null
after=$(counters cpu_offline cpu_online hotplug_moved place_rel_deadline)
note "ops.cpu_offline $(delta "$before" "$after" 1), ops.cpu_online $(delta "$before" "$after" 2), queued entities moved by ops.cpu_offline $(delta "$before" "$after" 3), enqueues that kept a relative deadline $(delta "$before" "$after" 4)"

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
