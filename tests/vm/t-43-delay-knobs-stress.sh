# The stress smoke under every combination of DELAY_DEQUEUE, DELAY_ZERO and the two experiment
# knobs (DELAY_WAKE_COLD, DELAY_REQUEUE_SELECT), switched live every 2 s while the stressors run;
# the scheduler stays attached and every stressor completes. The knobs' own counters move.
# lab: shared
. ./lib.sh

start_lab
seq0=$(cat $SCX/enable_seq)
b=$(counters select_wake_cold ghost_created ghost_finalized_other)
stress_mix 36 &
stress=$!
i=0
while [ $i -lt 16 ]; do
	t=""
	[ $((i & 1)) -eq 0 ] && t="$t DELAY_DEQUEUE" || t="$t NO_DELAY_DEQUEUE"
	[ $((i & 2)) -eq 0 ] && t="$t DELAY_ZERO" || t="$t NO_DELAY_ZERO"
	[ $((i & 4)) -eq 0 ] && t="$t NO_DELAY_WAKE_COLD" || t="$t DELAY_WAKE_COLD"
	[ $((i & 8)) -eq 0 ] && t="$t NO_DELAY_REQUEUE_SELECT" || t="$t DELAY_REQUEUE_SELECT"
	# shellcheck disable=SC2086
	scx_eevdf_lab features $t >/dev/null 2>&1 || fail "features $t"
	sleep 2
	i=$((i + 1))
done
wait $stress || { cat /tmp/stress.log; fail "stress-ng failed"; }
grep -q "successful run completed" /tmp/stress.log || { cat /tmp/stress.log; fail "a stressor did not finish"; }
a=$(counters select_wake_cold ghost_created ghost_finalized_other)
note "16 combinations: cold wakeups $(delta "$b" "$a" 1), ghosts $(delta "$b" "$a" 2), ghosts finalized otherwise $(delta "$b" "$a" 3)"
check "still attached after 16 combinations under stress" lab_attached
check "no reload" [ "$(cat $SCX/enable_seq)" = "$seq0" ]
check "DELAY_WAKE_COLD finalized cold ghosts at wakeup" [ "$(delta "$b" "$a" 1)" -gt 0 ]
scx_eevdf_lab features DELAY_DEQUEUE DELAY_ZERO NO_DELAY_WAKE_COLD NO_DELAY_REQUEUE_SELECT >/dev/null 2>&1
stop_lab
