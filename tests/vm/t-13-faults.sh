# The fault and bad-input table of the README, one function per row: what a user can do wrong
# or what can go wrong around the daemon, and that the host is left as it was.
# T13_ROWS="input kill" runs some rows only (while developing a row). Rows share a running lab
# where they can (each start costs seconds of BPF verification): ensure_lab starts one only when
# none runs.
. ./lib.sh

DBG=/sys/kernel/debug/sched
TMPD=/tmp/t13
mkdir -p $TMPD

# kernel_knobs: the built-in EEVDF's debugfs settings, one line.
kernel_knobs() {
	echo "$(cat $DBG/features) $(cat $DBG/base_slice_ns $DBG/migration_cost_ns $DBG/nr_migrate $DBG/tunable_scaling $DBG/preempt | tr '\n' ' ')"
}

# ensure_lab: a lab attached by this test, started (with a 5 s watchdog timeout) if none is.
ensure_lab() {
	lab_attached && return 0
	export SCX_TIMEOUT_MS=5000
	start_lab
	unset SCX_TIMEOUT_MS
}

# serves_stats: the daemon answers a stats request.
serves_stats() { counters dispatches >/dev/null; }

# lab_knobs: the running lab's features, tunables and write count.
lab_knobs() { echo "$(scx_eevdf_lab features) $(scx_eevdf_lab get | tr '\n' ' ') seq=$(knob_seq)"; }

# --- malformed and oversized input to every subcommand -----------------------------------------
# Each is refused with exit status 2 and one line on stderr, prints nothing on stdout, and
# changes nothing: the kernel's debugfs knobs, the running lab's knobs, no files left behind.
row_input() {
	ensure_lab
	k0=$(kernel_knobs) l0=$(lab_knobs)
	big=$(head -c 100000 /dev/zero | tr '\0' A)
	cat >$TMPD/bad <<-EOF
	scx_eevdf_lab --features NO_SUCH
	scx_eevdf_lab --set base_slice_ns=10
	scx_eevdf_lab --stats 0
	scx_eevdf_lab --exit-dump-len x
	scx_eevdf_lab features NO_SUCH
	scx_eevdf_lab features DELAY_ZERO NO_ NO_DELAY_DEQUEUE
	scx_eevdf_lab features $big
	scx_eevdf_lab set base_slice_ns
	scx_eevdf_lab set nope=1
	scx_eevdf_lab set base_slice_ns=3000000 migration_cost_ns=x
	scx_eevdf_lab set base_slice_ns=99999999999999999999999
	scx_eevdf_lab set base_slice_ns=$big
	scx_eevdf_lab set
	scx_eevdf_lab get nope
	scx_eevdf_lab get $big
	scx_eevdf_lab diff-kernel extra
	scx_eevdf_lab monitor 0
	scx_eevdf_lab monitor 1e300
	scx_eevdf_lab monitor --count abc
	scx_eevdf_lab monitor --count 1 --field nope
	scx_eevdf_lab monitor --field $big
	scx_eevdf_lab bench nope
	scx_eevdf_lab bench eevdf:NO_SUCH lab
	scx_eevdf_lab bench eevdf,base_slice_ns=10
	scx_eevdf_lab bench lab,cgroup_mode=flat
	scx_eevdf_lab bench lab,preempt=sometimes
	scx_eevdf_lab bench scx:
	scx_eevdf_lab bench eevdf eevdf
	scx_eevdf_lab bench $big
	scx_eevdf_lab bench -w nope
	scx_eevdf_lab bench -w pingpong:pairs=0
	scx_eevdf_lab bench -w pingpong:$big
	scx_eevdf_lab bench --runs 0
	scx_eevdf_lab bench --window 1e9
	scx_eevdf_lab bench --bootstrap 5
	scx_eevdf_lab bench --order bogus
	scx_eevdf_lab bench --fidelity NO_SUCH
	scx_eevdf_lab restore extra
	scx_eevdf_lab completions bogus
	scx_eevdf_lab man extra
	scx_eevdf_lab nosuchcommand
	EOF
	n=0
	cd $TMPD/empty 2>/dev/null || { mkdir -p $TMPD/empty && cd $TMPD/empty; }
	while read -r cmd; do
		n=$((n + 1))
		# shellcheck disable=SC2086
		timeout 30 $cmd >$TMPD/out 2>$TMPD/err
		rc=$?
		what=$(echo "$cmd" | cut -c1-60)
		[ $rc -eq 2 ] || fail "exit status $rc (not 2) for: $what; stderr: $(head -c 300 $TMPD/err)"
		[ "$(wc -l <$TMPD/err)" -eq 1 ] || fail "not one line on stderr for: $what: $(head -c 300 $TMPD/err)"
		grep -q '^scx_eevdf_lab: error: ' $TMPD/err || fail "no error line for: $what"
		[ "$(wc -c <$TMPD/err)" -le 1100 ] || fail "$(wc -c <$TMPD/err)-byte error line for: $what"
		[ ! -s $TMPD/out ] || fail "output on stdout for: $what"
	done <$TMPD/bad
	cd /lab/tests
	note "ok: $n malformed or oversized command lines: exit status 2, one line each"
	check "the kernel's debugfs knobs are unchanged" [ "$(kernel_knobs)" = "$k0" ]
	check "the lab's knobs are unchanged (no write)" [ "$(lab_knobs)" = "$l0" ]
	check "nothing was created (no bench folder, no journal)" \
		sh -c "[ -z \"\$(ls -A $TMPD/empty)\" ] && [ ! -e /run/scx_eevdf_lab/bench.journal ]"
	check "the lab is still attached" lab_attached
}

# --- the daemon killed with SIGKILL under load ---------------------------------------------------
# The kernel disables the scheduler when the struct_ops link's last holder dies: tasks go back to
# its EEVDF at once. The knobs pin stays (nobody removed it); the CLI calls it left over, and the
# next start replaces it and runs with its own settings.
row_kill() {
	ensure_lab
	scx_eevdf_lab features NO_DELAY_ZERO 2>/dev/null || fail "a live change before the kill"
	stress_mix 8 & sp=$!
	sleep 3
	kill -KILL "$LAB_PID"
	wait "$LAB_PID" 2>/dev/null
	LAB_PID=
	check "the kernel disabled the scheduler within 10 s of the SIGKILL" wait_state disabled 100
	check "the kernel logged an unregistration, not an error" \
		sh -c 'dmesg | tail -n 5 | grep -q "sched_ext: BPF scheduler .* disabled (unregistered from user space)"'
	check "the knobs pin is left over" [ -e "$KNOBS_PIN" ]
	out=$(scx_eevdf_lab get 2>&1); rc=$?
	check "the CLI exits 1 and says the pin is left over" [ $rc -eq 1 ]
	echo "$out" | grep -q "left over" || fail "message: $out"
	wait $sp || fail "the stressors failed after the scheduler was gone: $(tail -n 3 /tmp/stress.log)"
	note "ok: the stressors ran on to the end under the kernel's EEVDF"
	start_lab
	check "the next start replaced the stale pin" grep -q "replacing $KNOBS_PIN left over" "$LAB_LOG"
	check "it runs with its own settings, not the killed daemon's" \
		sh -c 'scx_eevdf_lab features | grep -q " DELAY_ZERO "'
	check "it serves stats" serves_stats
}

# --- the daemon stopped (SIGSTOP) ---------------------------------------------------------------
# The BPF scheduler does not depend on its daemon: scheduling goes on and the watchdog does not
# fire (a stopped task is not a runnable one), here for more than twice a 5 s watchdog timeout.
# Control writes still land (they go to the pinned map, not through the daemon); a stats request
# fails after 10 s with a clear line; after SIGCONT the daemon serves and logs again.
STOP_S=12
row_stop() {
	ensure_lab
	check "the watchdog timeout is 5 s" grep -q "timeout_ms to 5000" "$LAB_LOG"
	seq0=$(cat $SCX/enable_seq)
	sh -c 'while :; do :; done' & h1=$!
	sh -c 'while :; do :; done' & h2=$!
	sleep 1
	kill -STOP "$LAB_PID"
	t0=$(awk '{print $1}' /proc/uptime) a0=$(cut -d' ' -f1 /proc/$h1/schedstat) b0=$(cut -d' ' -f1 /proc/$h2/schedstat)
	(timeout 60 scx_eevdf_lab monitor --count 1 --field dispatches >$TMPD/mon.out 2>$TMPD/mon.err; echo $? >$TMPD/mon.rc) &
	mp=$!
	out=$(timeout 20 scx_eevdf_lab features NO_DELAY_ZERO 2>&1) || fail "a control write while the daemon is stopped: $out"
	note "ok: a control write lands while the daemon is stopped ($out)"
	sleep $STOP_S
	t1=$(awk '{print $1}' /proc/uptime) a1=$(cut -d' ' -f1 /proc/$h1/schedstat) b1=$(cut -d' ' -f1 /proc/$h2/schedstat)
	check "still attached, never reloaded, after $STOP_S s stopped" \
		sh -c "[ \"\$(cat $SCX/state)\" = enabled ] && [ \"\$(cat $SCX/enable_seq)\" = $seq0 ]"
	# Each hog ran at least a tenth of the time (two hogs on four CPUs: they could take all).
	for d in "$((a1 - a0))" "$((b1 - b0))"; do
		awk -v d="$d" -v t0="$t0" -v t1="$t1" 'BEGIN { exit !(d / 1e9 >= (t1 - t0) / 10) }' ||
			fail "a hog ran $d ns in $(awk -v a="$t0" -v b="$t1" 'BEGIN{print b - a}') s"
	done
	note "ok: both hogs kept running ($((a1 - a0)) and $((b1 - b0)) ns of CPU)"
	wait $mp
	check "the stats request failed with exit status 1" [ "$(cat $TMPD/mon.rc)" = 1 ]
	grep -q "did not answer the stats request within 10 s (is it stopped?)" $TMPD/mon.err ||
		fail "monitor said: $(cat $TMPD/mon.err)"
	kill -CONT "$LAB_PID"
	check "after SIGCONT it serves stats" serves_stats
	check "and takes control writes" sh -c 'scx_eevdf_lab set base_slice_ns=3000000 2>/dev/null &&
		[ "$(scx_eevdf_lab get base_slice_ns)" = 3000000 ]'
	check "the write made while it was stopped is in effect" sh -c 'scx_eevdf_lab features | grep -q NO_DELAY_ZERO'
	n=0; until grep -q "features changed: NO_DELAY_ZERO" "$LAB_LOG" || [ $n -ge 50 ]; do sleep 0.1; n=$((n + 1)); done
	check "and logged by the daemon once it ran again" grep -q "features changed: NO_DELAY_ZERO" "$LAB_LOG"
	kill $h1 $h2
}

# --- control writes racing the daemon's detach ----------------------------------------------------
# Writers flip two tunables together while the daemon is stopped with SIGINT: every write exits
# 0 (made while attached) or 1 with one error line, none hangs, no reader ever sees one tunable
# of a pair without the other, and nothing is left behind.
row_race() {
	: >$TMPD/race.rc
	: >$TMPD/race.err
	ensure_lab
	(
		i=0
		while [ $i -lt 30 ]; do
			if [ $((i % 2)) = 0 ]; then p="base_slice_ns=3000000 migration_cost_ns=250000"
			else p="base_slice_ns=2100000 migration_cost_ns=500000"; fi
			# shellcheck disable=SC2086
			timeout 20 scx_eevdf_lab set $p >/dev/null 2>>$TMPD/race.err; echo "set $?" >>$TMPD/race.rc
			timeout 20 scx_eevdf_lab features NO_DELAY_ZERO >/dev/null 2>>$TMPD/race.err
			echo "features $?" >>$TMPD/race.rc
			i=$((i + 1))
		done
	) &
	wp=$!
	(
		while kill -0 $wp 2>/dev/null; do
			timeout 20 scx_eevdf_lab get >$TMPD/get 2>/dev/null || continue
			b=$(sed -n 's/^base_slice_ns=//p' $TMPD/get) m=$(sed -n 's/^migration_cost_ns=//p' $TMPD/get)
			case "$b/$m" in 3000000/250000 | 2100000/500000) ;; *) echo "torn: $b/$m" >>$TMPD/race.torn ;; esac
		done
	) &
	rp=$!
	sleep 1
	kill -INT "$LAB_PID"
	wait "$LAB_PID" || fail "the daemon exited with $? after SIGINT"
	LAB_PID=
	wait $wp
	wait $rp
	check "the scheduler is detached" wait_state disabled 50
	check "no pin and no stats socket are left" \
		sh -c '[ ! -e /sys/fs/bpf/scx_eevdf_lab ] && [ ! -e /var/run/scx/root/stats ]'
	ok=$(grep -c ' 0$' $TMPD/race.rc) failed=$(grep -c ' 1$' $TMPD/race.rc) all=$(wc -l <$TMPD/race.rc)
	check "every write exited 0 or 1 ($ok landed, $failed refused, of $all)" [ $((ok + failed)) -eq "$all" ]
	check "some writes landed before the detach" [ "$ok" -gt 0 ]
	check "every refusal is one error line" [ "$(grep -c '^scx_eevdf_lab: error: ' $TMPD/race.err)" -eq "$failed" ]
	grep '^scx_eevdf_lab: error: ' $TMPD/race.err | sed 's/^scx_eevdf_lab: error: //' | sort | uniq -c | sed 's/^/  refused: /'
	check "no reader saw a torn pair of tunables" [ ! -s $TMPD/race.torn ]
	# The narrow case, made certain: a writer that found the pin waits for the writers' lock
	# (held here) while the daemon detaches, then writes into the detached scheduler's map.
	start_lab
	(flock -x 9 && sleep 4) 9>/run/scx_eevdf_lab.lock &
	lp=$!
	sleep 0.5
	timeout 30 scx_eevdf_lab set base_slice_ns=3000000 >/dev/null 2>$TMPD/late.err &
	cp=$!
	sleep 1.5
	kill -INT "$LAB_PID"
	wait "$LAB_PID" || fail "the daemon exited with $? after SIGINT"
	LAB_PID=
	wait $lp
	wait $cp; rc=$?
	check "a write that lands after the detach exits 1" [ $rc -eq 1 ]
	grep -q "the scheduler detached while the change was being written: it is not in effect" $TMPD/late.err ||
		fail "it said: $(cat $TMPD/late.err)"
	note "ok: and says that it is not in effect"
	check "no pin is left" [ ! -e /sys/fs/bpf/scx_eevdf_lab ]
	check "no lab process is left" sh -c '! pidof scx_eevdf_lab >/dev/null'
}

# --- a bench killed with SIGKILL ---------------------------------------------------------------
# Before it changes anything a bench writes a journal of what it found; killed, it cannot put
# things back, so `scx_eevdf_lab restore` or the next bench does, from the journal. A scheduler
# the bench started detaches by itself (its parent-death signal is SIGINT).
JOURNAL=/run/scx_eevdf_lab/bench.journal
CHANGED_ARM=eevdf:NO_DELAY_ZERO+NO_RUN_TO_PARITY,base_slice_ns=3000000,preempt=full

# bench_until_changed LOG: a long bench of the changed arm in the background (BENCH_PID), back
# once the kernel runs with its settings.
bench_until_changed() {
	scx_eevdf_lab bench "$CHANGED_ARM" -w pingpong --quick -n 100 --no-plots -o $TMPD/bench \
		>"$1" 2>&1 &
	BENCH_PID=$!
	n=0
	until grep -q NO_DELAY_ZERO $DBG/features && [ "$(cat $DBG/base_slice_ns)" = 3000000 ]; do
		kill -0 $BENCH_PID 2>/dev/null || fail "the bench exited: $(tail -n 5 "$1")"
		[ $n -lt 1200 ] || fail "the bench did not set its knobs within 120 s"
		sleep 0.1; n=$((n + 1))
	done
}

row_benchkill() {
	if lab_attached; then stop_lab; fi
	k0=$(kernel_knobs)
	bench_until_changed $TMPD/bench1.log
	check "the bench keeps a journal" [ -s $JOURNAL ]
	kill -KILL $BENCH_PID; wait $BENCH_PID 2>/dev/null
	check "killed, it left the kernel's knobs changed" [ "$(kernel_knobs)" != "$k0" ]
	out=$(scx_eevdf_lab restore 2>&1); rc=$?
	echo "$out" | sed 's/^/  restore| /'
	check "scx_eevdf_lab restore exits 0" [ $rc -eq 0 ]
	check "and puts every knob back" [ "$(kernel_knobs)" = "$k0" ]
	check "and removes the journal" [ ! -e $JOURNAL ]
	out=$(scx_eevdf_lab restore 2>&1); rc=$?
	check "a second restore has nothing to do" sh -c "[ $rc -eq 0 ] && echo '$out' | grep -q 'nothing to restore'"

	bench_until_changed $TMPD/bench2.log
	kill -KILL $BENCH_PID; wait $BENCH_PID 2>/dev/null
	scx_eevdf_lab bench eevdf -w pingpong --quick -n 1 --warmup 0 --window 0.2 --no-plots \
		-o $TMPD/bench3 >$TMPD/bench3.log 2>&1 || fail "the next bench failed: $(tail -n 5 $TMPD/bench3.log)"
	check "the next bench put back what the killed one had changed" \
		grep -q "put back what an unfinished bench (pid $BENCH_PID) had changed: .*base_slice_ns: 3000000 -> " $TMPD/bench3.log
	check "the knobs are as before" [ "$(kernel_knobs)" = "$k0" ]
	check "no journal is left" [ ! -e $JOURNAL ]

	# A lab arm: the bench's scheduler child outlives it only until the parent-death signal.
	scx_eevdf_lab bench lab -w pingpong --quick -n 100 --no-plots -o $TMPD/bench4 >$TMPD/bench4.log 2>&1 &
	BENCH_PID=$!
	n=0
	until [ "$(scx_state)" = enabled ] && grep -q '"scheduler": {' $JOURNAL 2>/dev/null; do
		kill -0 $BENCH_PID 2>/dev/null || fail "the lab bench exited: $(tail -n 5 $TMPD/bench4.log)"
		[ $n -lt 3000 ] || fail "the lab bench did not attach within 300 s"
		sleep 0.1; n=$((n + 1))
	done
	note "ok: the journal names the lab scheduler the bench started"
	kill -KILL $BENCH_PID; wait $BENCH_PID 2>/dev/null
	check "the lab it had started detached by itself" wait_state disabled 300
	n=0; while pidof scx_eevdf_lab >/dev/null && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
	check "and exited" sh -c '! pidof scx_eevdf_lab >/dev/null'
	check "restore then has only the journal to remove" scx_eevdf_lab restore
	check "the knobs are as before" [ "$(kernel_knobs)" = "$k0" ]
	check "no journal, no pin is left" sh -c "[ ! -e $JOURNAL ] && [ ! -e /sys/fs/bpf/scx_eevdf_lab ]"
}

# --- an attach racing a CPU hotplug -----------------------------------------------------------
# A CPU that goes offline or online while the scheduler loads makes the kernel refuse the
# attach (the hotplug sequence it was opened with is stale). The daemon tries again, after a
# growing pause, up to 10 times in a row, instead of exiting.
CPU3=/sys/devices/system/cpu/cpu3/online
row_hotplug() {
	[ -w $CPU3 ] || fail "cpu3 cannot be taken offline in this VM"
	if lab_attached; then stop_lab; fi
	seq0=$(cat $SCX/enable_seq)
	scx_eevdf_lab >"$LAB_LOG" 2>&1 &
	LAB_PID=$!
	# Cycle cpu3 while the daemon loads (BPF verification takes seconds here) until the kernel
	# has refused an attach.
	n=0
	until grep -q "refused the attach\|failed while CPUs went on or offline" "$LAB_LOG"; do
		kill -0 "$LAB_PID" 2>/dev/null || fail "the daemon exited"
		[ $n -lt 300 ] || fail "no attach raced a hotplug in 300 cycles"
		echo 0 >$CPU3; sleep 0.2; echo 1 >$CPU3; sleep 0.2
		n=$((n + 1))
	done
	note "ok: an attach raced a hotplug after $n offline/online cycles of cpu3"
	grep "refused the attach\|failed while CPUs" "$LAB_LOG" | sed 's/^/  lab| /'
	n=0
	until [ "$(scx_state)" = enabled ] && [ "$(cat $SCX/enable_seq)" != "$seq0" ] && [ -e "$KNOBS_PIN" ]; do
		kill -0 "$LAB_PID" 2>/dev/null || fail "the daemon exited instead of trying again"
		[ $n -lt 3000 ] || fail "not attached within 300 s after the hotplug stopped"
		sleep 0.1; n=$((n + 1))
	done
	check "the daemon tried again and attached" lab_attached
	check "with its settings" sh -c 'scx_eevdf_lab get base_slice_ns | grep -q 2100000'
	stress_mix 3 || fail "stress after the retried attach: $(tail -n 3 /tmp/stress.log)"
	check "still attached" lab_attached
	stop_lab
}

for r in ${T13_ROWS:-input stop kill race benchkill hotplug}; do
	echo "  -- $r"
	row_start=$(date +%s)
	"row_$r"
	note "($r: $(($(date +%s) - row_start)) s)"
done
