# Many writers under stress (stress-ng cpu, fork, pipe and affinity stressors in back-to-back 10 s
# runs for the whole test, every run must complete):
#  1. 250 random feature toggles and tunable changes, one CLI call each, plus 10 invalid ones
#     that must be refused: the scheduler stays attached without a reload, the knobs' seq grows by
#     exactly the number of accepted writes, and the final features and tunables are what a
#     replay of the accepted commands gives;
#  2. six concurrent CLI writers, each owning its knobs (four flip a pair of features together,
#     two set a tunable): every write is serialized -- the seq grows by the number of writes, the
#     final state is each writer's last write, and every "features changed:" line of the daemon's
#     log holds whole pairs.
# (That SIGINT detaches and removes the knobs pin is t-10's check, that the CLI then says no
# scheduler runs t-11's: this test leaves its lab to the next one.)
# lab: shared
. ./lib.sh

SEED=${SEED:-31}
NCMD=250
STRESS_PID=
stop_stress() {
	touch /tmp/stress.stop
	[ -n "$STRESS_PID" ] && wait $STRESS_PID
	STRESS_PID=
}
trap stop_stress EXIT

start_lab
orig_f=$(scx_eevdf_lab features)
orig_t=$(scx_eevdf_lab get | tr '\n' ' ')
enable0=$(cat $SCX/enable_seq)
feats=$(feature_names | tr '\n' ' ')

rm -f /tmp/stress.stop /tmp/stress.*.log
(
	i=0
	while [ ! -e /tmp/stress.stop ]; do
		i=$((i + 1))
		stress-ng --cpu 1 --fork 1 --pipe 1 --pipe-data-size 512 --affinity 1 --timeout 10 \
			--metrics-brief >/tmp/stress.$i.log 2>&1
		echo "rc=$?" >>/tmp/stress.$i.log
	done
) &
STRESS_PID=$!
sleep 1

# --- 1. random writes ------------------------------------------------------------------------
# One command per line: "features TOKENS..." or "set NAME=VALUE"; a leading "!" marks an
# invalid command that must be refused.
awk -v seed=$SEED -v n=$NCMD -v feats="$feats" 'BEGIN {
	srand(seed)
	nf = split(feats, F, " ")
	split("base_slice_ns migration_cost_ns nr_migrate tunable_scaling", T, " ")
	lo["base_slice_ns"] = 100000; hi["base_slice_ns"] = 100000000
	lo["migration_cost_ns"] = 0; hi["migration_cost_ns"] = 1000000000
	lo["nr_migrate"] = 1; hi["nr_migrate"] = 4096
	lo["tunable_scaling"] = 0; hi["tunable_scaling"] = 2
	split("!features NO_SUCH_FEATURE|!set base_slice_ns=99999|!set nr_migrate=0|!set tunable_scaling=3|!features NO_PLACE_LAG BOGUS", B, "|")
	for (i = 1; i <= n; i++) {
		if (i % 100 == 50)
			print B[1 + int(i / 100) % 5]
		if (rand() < 0.7) {
			s = "features"
			k = 1 + int(rand() * 3)
			for (j = 0; j < k; j++)
				s = s " " ((rand() < 0.5) ? "NO_" : "") F[1 + int(rand() * nf)]
			print s
		} else {
			t = T[1 + int(rand() * 4)]
			print "set " t "=" (lo[t] + int(rand() * (hi[t] - lo[t] + 1)))
		}
	}
}' >/tmp/cmds
note "$(grep -vc '^!' /tmp/cmds) random writes and $(grep -c '^!' /tmp/cmds) invalid ones (seed $SEED)"

seq0=$(knob_seq)
start=$(date +%s)
ok=0 refused=0
: >/tmp/accepted
while read -r cmd rest; do
	case $cmd in
	!*)
		if scx_eevdf_lab ${cmd#!} $rest >/dev/null 2>&1; then fail "the invalid command \"${cmd#!} $rest\" was accepted"; fi
		refused=$((refused + 1))
		;;
	*)
		scx_eevdf_lab $cmd $rest >/dev/null 2>/tmp/cli.err || fail "\"$cmd $rest\" failed: $(cat /tmp/cli.err)"
		echo "$cmd $rest" >>/tmp/accepted
		ok=$((ok + 1))
		;;
	esac
done </tmp/cmds
seq1=$(knob_seq)
note "$ok writes accepted and $refused refused in $(($(date +%s) - start)) s; knobs seq $seq0 -> $seq1"
check "still attached after the random writes, without a reload" sh -c "[ \"\$(cat $SCX/state)\" = enabled ] && [ \"\$(cat $SCX/enable_seq)\" = $enable0 ]"
check "the stress loop ran throughout the random writes" kill -0 $STRESS_PID
check "every accepted write bumped the seq once, and the refused ones did not ($((seq1 - seq0)) = $ok)" [ $((seq1 - seq0)) -eq $ok ]

# The state a replay of the accepted commands gives (tunable_scaling also re-derives a hidden
# value; the printed tunables are the four NAME=VALUE lines).
awk -v f0="$orig_f" -v t0="$orig_t" '
	BEGIN { n = split(f0, F, " "); for (i = 1; i <= n; i++) { name = F[i]; sub(/^NO_/, "", name); order[i] = name; on[name] = (F[i] !~ /^NO_/) }
		m = split(t0, T, " "); for (i = 1; i <= m; i++) { split(T[i], kv, "="); tn[i] = kv[1]; tv[kv[1]] = kv[2] } }
	$1 == "features" { for (i = 2; i <= NF; i++) { name = $i; v = (name !~ /^NO_/); sub(/^NO_/, "", name); on[name] = v } }
	$1 == "set" { split($2, kv, "="); tv[kv[1]] = kv[2] }
	END { for (i = 1; i <= n; i++) printf "%s%s ", on[order[i]] ? "" : "NO_", order[i]; printf "\n"
		for (i = 1; i <= m; i++) printf "%s=%s ", tn[i], tv[tn[i]]; printf "\n" }' /tmp/accepted >/tmp/expected
check "the features line is what the accepted writes left" [ "$(scx_eevdf_lab features)" = "$(sed -n 1p /tmp/expected)" ]
check "the tunables are what the accepted writes left" [ "$(scx_eevdf_lab get | tr '\n' ' ')" = "$(sed -n 2p /tmp/expected)" ]

# Back to the start for part 2.
scx_eevdf_lab features $orig_f 2>/dev/null || fail "cannot restore the features"
scx_eevdf_lab set $orig_t 2>/dev/null || fail "cannot restore the tunables"
check "features and tunables restored" sh -c "[ \"\$(scx_eevdf_lab features)\" = \"$orig_f\" ] && [ \"\$(scx_eevdf_lab get | tr '\n' ' ')\" = \"$orig_t\" ]"

# --- 2. concurrent writers -------------------------------------------------------------------
M=15 # writes per writer (odd: a feature pair ends flipped)
PAIRS="HRTICK_DL:NONTASK_CAPACITY TTWU_QUEUE:UTIL_EST LB_MIN:LATENCY_WARN RT_PUSH_IPI:RT_RUNTIME_SHARE"
sleep 0.3 # let the daemon log the restore before the mark
log0=$(wc -l <"$LAB_LOG")
rm -f /tmp/w?.rc /tmp/w?.err
WP=
seq0=$(knob_seq)
i=0
expect_f=" $orig_f"
for p in $PAIRS; do
	i=$((i + 1))
	a=${p%:*} b=${p#*:}
	case " $orig_f " in *" NO_$a "*) away="$a $b" back="NO_$a NO_$b" ;; *) away="NO_$a NO_$b" back="$a $b" ;; esac
	expect_f=$(echo "$expect_f" | sed "s/ $(echo $back | cut -d' ' -f1) / $(echo $away | cut -d' ' -f1) /; s/ $(echo $back | cut -d' ' -f2) / $(echo $away | cut -d' ' -f2) /")
	(
		k=0
		while [ $k -lt $M ]; do
			k=$((k + 1))
			[ $((k % 2)) -eq 1 ] && t=$away || t=$back
			scx_eevdf_lab features $t 2>>/tmp/w$i.err
			echo $? >>/tmp/w$i.rc
		done
	) &
	WP="$WP $!"
done
# tunable_writer W NAME BASE STEP: M writes of NAME=BASE+k*STEP in the background (writer W).
tunable_writer() {
	(
		k=0
		while [ $k -lt $M ]; do
			k=$((k + 1))
			scx_eevdf_lab set $2=$(($3 + k * $4)) 2>>/tmp/w$1.err
			echo $? >>/tmp/w$1.rc
		done
	) &
	WP="$WP $!"
}
tunable_writer 5 base_slice_ns 1000000 100000
tunable_writer 6 migration_cost_ns 100000 1000
# Wait for the six writers (not for the stress loop).
wait $WP
sleep 0.3 # the daemon logs a change when the first CPU sees it (an event wakes it)
seq1=$(knob_seq)
writes=$(cat /tmp/w?.rc | grep -c '^0$')
others=$(cat /tmp/w?.rc | grep -vc '^0$')
note "6 writers x $M writes: $writes accepted, $others refused; seq $seq0 -> $seq1"
[ "$others" -eq 0 ] || sed 's/^/  writer| /' /tmp/w?.err | sort | uniq -c | head -n 5
check "every write of every writer completed (serialized, none refused)" [ "$writes" -eq $((6 * M)) ]
check "the seq grew by exactly the number of writes ($((seq1 - seq0)) = $writes)" [ $((seq1 - seq0)) -eq "$writes" ]
check "the final features are each writer's last write" [ "$(scx_eevdf_lab features)" = "${expect_f# }" ]
check "the final tunables are each writer's last write" \
	[ "$(scx_eevdf_lab get base_slice_ns) $(scx_eevdf_lab get migration_cost_ns)" = "$((1000000 + M * 100000)) $((100000 + M * 1000))" ]

tail -n +$((log0 + 1)) "$LAB_LOG" | grep "features changed:" >/tmp/changes
note "the daemon logged $(wc -l </tmp/changes) feature changes, e.g.: $(head -n 1 /tmp/changes | sed 's/.*features changed: //')"
whole=yes
for p in $PAIRS; do
	a=${p%:*} b=${p#*:}
	awk -v a=$a -v b=$b '{ ta = tb = ""; for (i = 1; i <= NF; i++) { if ($i == a || $i == "NO_" a) ta = $i; if ($i == b || $i == "NO_" b) tb = $i }
		if ((ta == "") != (tb == "") || (ta ~ /^NO_/) != (tb ~ /^NO_/)) { print "  torn: " $0; bad = 1 } } END { exit bad }' /tmp/changes || whole=no
done
check "every change the daemon logged holds whole pairs (no write seen half done)" [ $whole = yes ]
check "at least one logged change" [ -s /tmp/changes ]

# --- stress ends ------------------------------------------------------------------------------
stop_stress
runs=$(ls /tmp/stress.*.log | wc -l)
bad=$(grep -L "successful run completed" /tmp/stress.*.log | wc -l)
[ "$bad" -eq 0 ] || { cat $(grep -L "successful run completed" /tmp/stress.*.log | head -n 1); }
check "all $runs back-to-back stress-ng runs completed every stressor" [ "$bad" -eq 0 ]
check "still attached without a reload" sh -c "[ \"\$(cat $SCX/state)\" = enabled ] && [ \"\$(cat $SCX/enable_seq)\" = $enable0 ]"
stop_lab
