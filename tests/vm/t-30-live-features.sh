# Live control under load (stress-ng cpu, pipe and affinity stressors running throughout):
#  1. every feature is toggled away from its setting and back with `scx_eevdf_lab features X`;
#     the line printed afterwards differs from the previous one in exactly that token, and after
#     toggling everything back it equals the original line;
#  2. turning a feature off stops the counters only it drives: over a 1.5 s window under the load
#     they stay flat (e.g. NO_WAKEUP_PREEMPTION: preempt_wakeup, preempt_short...), while the same
#     window with the feature on moves them.
# lab: shared
. ./lib.sh

WIN=1.5
LOAD=
stop_load() { [ -n "$LOAD" ] && kill -INT $LOAD 2>/dev/null && wait $LOAD; LOAD=; }
trap stop_load EXIT

start_lab
orig=$(scx_eevdf_lab features)
stress-ng --cpu 2 --pipe 2 --pipe-data-size 512 --affinity 1 --timeout 600 >/tmp/load.log 2>&1 &
LOAD=$!
sleep 1

# --- 1. toggles ------------------------------------------------------------------------------
# set_features TOKEN EXPECTED_LINE: write one token and require the printed line.
set_features() {
	scx_eevdf_lab features "$1" 2>/tmp/cli.err || fail "features $1: $(cat /tmp/cli.err)"
	now=$(scx_eevdf_lab features)
	[ "$now" = "$2" ] || fail "after features $1 the line reads \"$now\", expected \"$2\""
}
n=0
for f in $(feature_names); do
	case " $orig " in
	*" NO_$f "*) away=$f back=NO_$f ;;
	*) away=NO_$f back=$f ;;
	esac
	flipped=$(echo " $orig" | sed "s/ $back / $away /")
	set_features "$away" "${flipped# }"
	set_features "$back" "$orig"
	n=$((n + 1))
done
check "$n features toggled off and on (or on and off) under load; each printed line showed exactly that change" [ $n -ge 31 ]
check "the features line equals the original one after toggling everything back" [ "$(scx_eevdf_lab features)" = "$orig" ]
check "the load is still running" kill -0 $LOAD

# --- 2. counters stop with their feature -----------------------------------------------------
# window COUNTER...: how much each counter moved over WIN seconds, space-separated.
window() {
	a=$(counters "$@")
	sleep $WIN
	b=$(counters "$@")
	echo "$a $b" | awk -v n=$# '{for (i = 1; i <= n; i++) printf "%d%s", $(i + n) - $i, (i < n) ? " " : "\n"}'
}
# toggle TOKENS...: change features and give every CPU time to pick the change up.
toggle() { scx_eevdf_lab features "$@" 2>/dev/null || fail "features $*"; sleep 0.3; }

nonzero() { for v in "$@"; do [ "$v" -gt 0 ] || return 1; done; }
allzero() { for v in "$@"; do [ "$v" -eq 0 ] || return 1; done; }

# The counters each feature drives, and what they did with everything at its default.
PAIRS="WAKEUP_PREEMPTION:preempt_wakeup,preempt_short,preempt_idle,preempt_sync,protect_update
RUN_TO_PARITY:protect_update
DELAY_DEQUEUE:ghost_created
HRTICK:preempt_hrtick
PLACE_REL_DEADLINE:place_rel_deadline
PLACE_LAG:place_lag_pos,place_lag_neg"
MOVING="preempt_wakeup protect_update ghost_created preempt_hrtick place_rel_deadline place_lag_pos"
base=$(window $MOVING ghost_requeue_pos preempt_sync)
note "with the defaults, over $WIN s:"
set -- $base
i=0
for c in $MOVING ghost_requeue_pos preempt_sync; do
	i=$((i + 1))
	eval "v=\${$i}"
	note "  $c +$v"
done
check "the load drives every counter checked below ($MOVING)" nonzero $(echo $base | cut -d' ' -f1-6)
check "DELAY_ZERO (on) keeps ghost_requeue_pos flat ($(echo $base | cut -d' ' -f7))" [ "$(echo $base | cut -d' ' -f7)" -eq 0 ]
check "NO_NEXT_BUDDY (default) keeps preempt_sync flat ($(echo $base | cut -d' ' -f8))" [ "$(echo $base | cut -d' ' -f8)" -eq 0 ]

echo "$PAIRS" | while IFS=: read -r f cs; do
	cs=$(echo "$cs" | tr ',' ' ')
	toggle NO_$f
	d=$(window $cs)
	toggle $f
	check "NO_$f keeps $(echo $cs | tr ' ' ',') flat under load (moved by $(echo $d | tr ' ' ','))" allzero $d
done || exit 1

# PICK_BUDDY needs buddies: NEXT_BUDDY makes every wakee one.
toggle NEXT_BUDDY
d1=$(window pick_buddy)
toggle NO_PICK_BUDDY
d2=$(window pick_buddy)
toggle PICK_BUDDY NO_NEXT_BUDDY
check "with NEXT_BUDDY the load picks next buddies (pick_buddy +$d1)" [ "$d1" -gt 0 ]
check "NO_PICK_BUDDY keeps pick_buddy flat (+$d2)" [ "$d2" -eq 0 ]

check "the features line equals the original one again" [ "$(scx_eevdf_lab features)" = "$orig" ]
check "still attached, and the load still runs" sh -c "kill -0 $LOAD && [ \"\$(cat $SCX/state)\" = enabled ]"
stop_load
stop_lab
