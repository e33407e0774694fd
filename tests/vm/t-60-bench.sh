# The A/B bench: a quick eevdf-vs-lab session on pingpong and messaging completes, its JSON
# validates, its runs carry the system-wide counters, and every /sys/kernel/debug/sched knob
# reads back byte for byte as before — also when the bench is interrupted with SIGINT in the
# middle of a run (lab attached, and built-in EEVDF with changed features); perf bench and perf
# stat -a run in the guest and the perf workloads give valid runs; nice, renice and chrt work;
# a session with an arm that cannot start completes the other arms and reports that one failed;
# bench --trace gives both arms non-empty histograms whose switch counts match the kernel's.
. ./lib.sh

DBG=/sys/kernel/debug/sched

# knobs FILE: every regular knob file of the sched debugfs, name and content (the `debug`
# dump is left out: it prints live per-CPU statistics).
knobs() {
	: >"$1"
	for f in $DBG/*; do
		[ -f "$f" ] || continue
		[ "${f##*/}" = debug ] && continue
		echo "== ${f##*/}" >>"$1"
		cat "$f" >>"$1" 2>/dev/null
	done
}

same_knobs() { # same_knobs BEFORE AFTER
	cmp -s "$1" "$2" && return 0
	diff "$1" "$2" | sed 's/^/  knobs| /' | head -n 20
	return 1
}

no_lab_process() {
	for p in /proc/[0-9]*; do
		[ "$p" = "/proc/$$" ] && continue
		c=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)
		case "$c" in "scx_eevdf_lab --features"*) echo "  left over: $c"; return 1 ;; esac
	done
	return 0
}

# wait_for TENTHS COMMAND...: poll until COMMAND succeeds.
wait_for() {
	n=$1; shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.1; n=$((n - 1))
	done
	return 1
}

# --- 1. a complete quick session -------------------------------------------------------------
knobs /tmp/knobs.0
start=$(date +%s)
# With --trace (section 2c checks the traces): each session attaches the lab once more, which
# costs a minute of BPF verification under emulation.
scx_eevdf_lab bench eevdf lab --trace -w pingpong,messaging --quick -n 2 --seed 1 --out /tmp/b1 \
	>/tmp/b1.out 2>/tmp/b1.err
rc=$?
note "quick session took $(($(date +%s) - start)) s"
[ $rc -eq 0 ] || { tail -n 30 /tmp/b1.err; cat /tmp/b1.out; fail "bench exited with $rc"; }
cat /tmp/b1.out
knobs /tmp/knobs.1
check "the knobs read back byte for byte after the session" same_knobs /tmp/knobs.0 /tmp/knobs.1
check "sched_ext is disabled again" [ "$(scx_state)" = disabled ]
check "no lab daemon is left" no_lab_process
v=$(scx_eevdf_lab bench --validate /tmp/b1/bench.json) || fail "bench.json does not validate: $v"
note "$v"
echo "$v" | grep -q "2 arms, 2 workloads" || fail "unexpected shape: $v"
echo "$v" | grep -q "(8 valid measured)" || { grep -A3 "Invalid runs" /tmp/b1.out; fail "not every run was valid: $v"; }
check "the table names both arms" grep -q "| eevdf .*| lab " /tmp/b1.out
check "the CSV and the plots are written" [ -s /tmp/b1/runs.csv ] && [ -s /tmp/b1/pingpong.svg ]
grep -q "<svg" /tmp/b1/messaging.svg || fail "messaging.svg is not an SVG"
grep -q '"knobs_restored": true' /tmp/b1/bench.json || fail "the report does not say the knobs were restored"
# System-wide counters: every measured run has the system's switches (at least the workload's
# own), its migrations and every CPU's idle time; the table shows them.
bench_csv /tmp/b1/runs.csv | awk -F, 'NR > 1 && $5 == "false" {
	n++; if ($16 == "" || $16 < $11 + $12 || $17 == "" || split($18, c, ";") != 4) { bad++; print "  bad run: " $0 } }
	END { exit !(n > 0 && bad == 0) }' || fail "runs.csv lacks the system-wide counters"
check "the table shows system switches per run" grep -q "^| system switches per run  *| [0-9]" /tmp/b1.out
check "the table shows each CPU's idle share" grep -q "^| idle % per CPU (0 / 1 / 2 / 3) " /tmp/b1.out

# --- 2. fidelity mode ------------------------------------------------------------------------
scx_eevdf_lab bench --fidelity DELAY_ZERO -w pingpong --quick -n 2 --seed 4 --out /tmp/b4 \
	>/tmp/b4.out 2>/tmp/b4.err || { tail -n 20 /tmp/b4.err; fail "the fidelity session failed"; }
grep "^fidelity DELAY_ZERO on pingpong handoffs_per_s" /tmp/b4.out || fail "no fidelity verdict: $(cat /tmp/b4.out)"
knobs /tmp/knobs.3
check "the knobs read back byte for byte after the fidelity session" same_knobs /tmp/knobs.0 /tmp/knobs.3

# --- 2b. any sched_ext binary as an scx:PATH arm, and an arm that cannot start: the others
# complete, the report names that one as failed. The lab binary itself stands in for "another
# sched_ext scheduler" here.
scx_eevdf_lab bench eevdf scx:/bin/false "scx:/lab/bin/scx_eevdf_lab --features NO_DELAY_ZERO" \
	-w pingpong --quick -n 2 --seed 6 --out /tmp/b6 >/tmp/b6.out 2>/tmp/b6.err
rc=$?
[ $rc -eq 1 ] || { tail -n 20 /tmp/b6.err; fail "a session with a failed arm exited with $rc (want 1)"; }
v=$(scx_eevdf_lab bench --validate /tmp/b6/bench.json) || fail "failed arm: $v"
echo "$v" | grep -q "(4 valid measured)" || { grep -A3 "Invalid runs" /tmp/b6.out; fail "failed arm: the other arms did not complete: $v"; }
echo "$v" | grep -q "2 comparisons" || fail "the scx:PATH arm is not compared with eevdf: $v"
check "the report names the scx:PATH arm" grep -q "scx:/lab/bin/scx_eevdf_lab" /tmp/b6.out
grep -q "^Arm scx:/bin/false FAILED after 0 of its rounds" /tmp/b6.out || fail "the table does not report the failed arm: $(tail -n 5 /tmp/b6.out)"
grep -q '"arm": "scx:/bin/false"' /tmp/b6/bench.json || fail "bench.json does not list the failed arm"
note "scx:PATH and failed arm: $v; $(grep '^Arm scx' /tmp/b6.out | cut -c1-100)"
knobs /tmp/knobs.6
check "the knobs read back byte for byte after the sessions with an scx arm and a failed arm" same_knobs /tmp/knobs.0 /tmp/knobs.6

# --- 2c. bench --trace (the session of section 1): non-empty histograms on both arms, whose
# switch counts agree with the kernel's per-task counts (the trace and /proc are read at the same
# window edges). Pingpong's trace table comes first.
sed -n '/^trace of pingpong/,/^| run before voluntary switch p50/p' /tmp/b1.out | grep -v -- '-+-' | sed 's/^/  trace| /'
# row NAME: the cells of a table row, one per arm, separated by ';'.
row() { sed -n '/^trace of pingpong/,$p' /tmp/b1.out | grep "^| $1 " | head -n 1 | awk -F'|' '{ for (i = 3; i < NF; i++) printf "%s;", $i }'; }
row "runs traced" | grep -qx ' *2 *; *2 *;' || fail "--trace: not both arms traced 2 runs: $(row 'runs traced')"
row "wakeups, migrated / to the waker's CPU per wakeup" | awk -F';' '{ for (i = 1; i < NF; i++) { split($i, w, ","); if (w[1] + 0 <= 0) exit 1 } }' ||
	fail "--trace: an arm has no wakeups: $(row "wakeups, migrated / to the waker's CPU per wakeup")"
row "run before voluntary switch p50" | grep -q '[0-9]' || fail "--trace: no voluntary run lengths"
row "switches vol + invol: traced / counted" | awk -F';' '{
	for (i = 1; i < NF; i++) {
		n = split($i, f, /[^0-9]+/); k = 0
		for (j = 1; j <= n; j++) if (f[j] != "") v[++k] = f[j]
		t = v[1] + v[2]; c = v[3] + v[4]; d = t - c; if (d < 0) d = -d
		if (k != 4 || c == 0 || d > 0.02 * c + 20) { print "  mismatch: " $i; bad = 1 }
	} } END { exit bad }' || fail "--trace: the traced switches differ from the counted ones by more than 2%"
note "ok: --trace histograms are non-empty and their switches agree with the kernel's counts"
[ -s /tmp/b1/trace_pingpong.svg ] || fail "--trace: no trace plot"

# --- 3. SIGINT while the lab is attached and a run is going on ----------------------------
# interrupt NAME CONDITION...: start a changed-knobs session, wait for CONDITION, let a run
# start, SIGINT the bench, then require exit 130, restored knobs and a valid partial report.
interrupt() {
	name=$1; shift
	scx_eevdf_lab bench eevdf:NO_DELAY_ZERO+NO_RUN_TO_PARITY,base_slice_ns=3000000 lab:NO_DELAY_ZERO \
		-w pingpong,messaging --quick -n 4 --seed 2 --out /tmp/$name >/tmp/$name.out 2>/tmp/$name.err &
	pid=$!
	wait_for 600 "$@" || { kill -INT $pid; wait $pid; tail -n 20 /tmp/$name.err; fail "$name: the condition never held"; }
	sleep 0.4
	kill -INT $pid
	wait $pid; rc=$?
	[ $rc -eq 130 ] || { tail -n 20 /tmp/$name.err; fail "$name: bench exited with $rc after SIGINT (want 130)"; }
	knobs /tmp/knobs.$name
	check "$name: the knobs read back byte for byte after SIGINT" same_knobs /tmp/knobs.0 /tmp/knobs.$name
	check "$name: sched_ext is disabled again" [ "$(scx_state)" = disabled ]
	check "$name: no lab daemon is left" no_lab_process
	scx_eevdf_lab bench --validate /tmp/$name/bench.json >/dev/null || fail "$name: the partial bench.json does not validate"
	grep -q '"interrupted": true' /tmp/$name/bench.json || fail "$name: the report does not say it was interrupted"
	grep -q "interrupted" /tmp/$name.out || fail "$name: the table does not say it was interrupted"
	grep "^  run .*interrupted" /tmp/$name.out | head -n 2 | sed "s/^/  $name| /"
}

lab_running() { [ "$(scx_state)" = enabled ]; }
eevdf_changed() { [ "$(scx_state)" = disabled ] && grep -q NO_DELAY_ZERO $DBG/features; }

interrupt int-lab lab_running
interrupt int-eevdf eevdf_changed

# --- 4. perf in the guest: perf bench and system-wide perf stat run, and the bench's perf
# workloads give valid runs (built-in EEVDF only: this checks the tool, not an arm).
perf bench sched pipe -l 1000 >/tmp/perf.pipe 2>&1 || { cat /tmp/perf.pipe; fail "perf bench sched pipe failed"; }
grep -q "usecs/op" /tmp/perf.pipe || fail "perf bench sched pipe printed no usecs/op: $(cat /tmp/perf.pipe)"
sw=$(perf stat -a -x, -e context-switches -- perf bench sched messaging -g 1 -l 10 -t 2>&1 >/dev/null |
	awk -F, '$3 == "context-switches" { print $1 }')
note "perf stat -a: $sw context switches around perf bench sched messaging -g 1 -l 10 -t"
[ "${sw:-0}" -gt 0 ] 2>/dev/null || fail "perf stat -a -e context-switches counted nothing (${sw:-no output})"
scx_eevdf_lab bench eevdf -w perf-pipe:loops=1000,perf-messaging:groups=1:loops=10:mode=thread \
	--quick -n 1 --seed 5 --out /tmp/b5 >/tmp/b5.out 2>/tmp/b5.err ||
	{ tail -n 20 /tmp/b5.err; fail "the perf workloads' session failed"; }
v=$(scx_eevdf_lab bench --validate /tmp/b5/bench.json) || fail "perf workloads: $v"
echo "$v" | grep -q "(2 valid measured)" || { grep -A3 "Invalid runs" /tmp/b5.out; fail "perf workloads: $v"; }
note "perf workloads: $v"
# nice, renice and chrt (not busybox's) set nice levels and an RT neighbour's policy.
[ "$(nice -n 5 sh -c 'cut -d" " -f19 /proc/self/stat')" = 5 ] || fail "nice -n 5 did not set nice 5"
sleep 30 & p=$!
renice -n 7 -p $p >/dev/null && [ "$(cut -d' ' -f19 /proc/$p/stat)" = 7 ] || { kill $p; fail "renice -n 7 did not set nice 7"; }
kill $p
chrt -f 10 sh -c 'chrt -p $$' | grep -q SCHED_FIFO || fail "chrt -f 10 did not run the command as SCHED_FIFO"
note "ok: nice, renice and chrt work"
