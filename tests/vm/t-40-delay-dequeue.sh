# Delayed dequeue by ghosts on pipe hand-off pairs (stress-ng --pipe: 1 and 4 writer/reader
# pairs, i.e. 2 and 8 tasks on 4 vCPUs): with DELAY_DEQUEUE ghosts are created and woken ghosts
# go back to their own CPU without CPU selection; with NO_DELAY_DEQUEUE no ghost exists; with
# NO_DELAY_ZERO some ghosts wake with positive lag.
# lab: shared
. ./lib.sh

pipes() { # pipes PAIRS SECONDS
	stress-ng --pipe "$1" --pipe-data-size 512 --timeout "$2" --metrics-brief >/tmp/pipe.log 2>&1 ||
		{ cat /tmp/pipe.log; fail "stress-ng --pipe $1 failed"; }
	grep -q "successful run completed" /tmp/pipe.log || { cat /tmp/pipe.log; fail "a pipe stressor did not finish"; }
}

F="ghost_created ghost_requeued select_ghost ghost_picked ghost_requeue_pos select"
start_lab
for pairs in 1 4; do
	b=$(counters $F); pipes $pairs 8; a=$(counters $F)
	created=$(delta "$b" "$a" 1) requeued=$(delta "$b" "$a" 2) home=$(delta "$b" "$a" 3)
	picked=$(delta "$b" "$a" 4) selects=$(delta "$b" "$a" 6)
	note "DELAY_DEQUEUE, $pairs pair(s): ghosts created $created, picked $picked, requeued $requeued; wakeups $selects, of which back to the ghost's CPU $home"
	check "$pairs pair(s): ghosts are created" [ "$created" -gt 0 ]
	# With one pair on 4 CPUs each task is mostly alone on its CPU (always eligible), so ghosts
	# are rare and may all be picked before they wake; with four pairs they wake all the time.
	[ "$pairs" -gt 1 ] && check "$pairs pairs: ghosts wake up" [ "$home" -gt 0 ]
	check "$pairs pair(s): every woken ghost went back to its CPU without selection" \
		[ "$home" -ge $((requeued * 9 / 10)) ]
	check "$pairs pair(s): ... and requeued there" [ "$requeued" -ge $((home * 9 / 10)) ]
done

scx_eevdf_lab features NO_DELAY_DEQUEUE >/dev/null 2>&1 || fail "features NO_DELAY_DEQUEUE"
sleep 0.5
b=$(counters $F); pipes 4 6; a=$(counters $F)
note "NO_DELAY_DEQUEUE: ghosts created $(delta "$b" "$a" 1), ghost wakeups $(delta "$b" "$a" 3)"
check "NO_DELAY_DEQUEUE: no ghost is created" [ "$(delta "$b" "$a" 1)" -eq 0 ]

scx_eevdf_lab features DELAY_DEQUEUE NO_DELAY_ZERO >/dev/null 2>&1 || fail "features NO_DELAY_ZERO"
sleep 0.5
b=$(counters $F); pipes 4 8; a=$(counters $F)
pos=$(delta "$b" "$a" 5)
note "NO_DELAY_ZERO: ghosts $(delta "$b" "$a" 1), requeued $(delta "$b" "$a" 2), with positive lag $pos"
check "NO_DELAY_ZERO: some ghosts requeue with positive lag" [ "$pos" -gt 0 ]

scx_eevdf_lab features DELAY_ZERO >/dev/null 2>&1
b=$(counters $F); pipes 4 6; a=$(counters $F)
check "DELAY_ZERO: no ghost requeues with positive lag" [ "$(delta "$b" "$a" 5)" -eq 0 ]
check "still attached" lab_attached
stop_lab
