# Helpers for the guest-side tests (busybox sh). Sourced by each t-*.sh; runs as root in the VM
# that scripts/vm boots, with scx_eevdf_lab and the guest tools on PATH.
# shellcheck shell=sh

SCX=/sys/kernel/sched_ext
LAB_LOG=/tmp/lab.log
LAB_PID=

fail() { echo "  FAIL: $*"; [ -f "$LAB_LOG" ] && sed 's/^/  lab| /' "$LAB_LOG" | tail -n 40; exit 1; }
note() { echo "  $*"; }
check() { # check DESCRIPTION COMMAND...: fails the test unless COMMAND succeeds
	d=$1; shift
	if "$@"; then note "ok: $d"; else fail "$d"; fi
}

scx_state() { cat $SCX/state; }

# wait_state STATE [TENTHS]: poll /sys/kernel/sched_ext/state (default 10 s).
wait_state() {
	n=${2:-100}
	while [ "$n" -gt 0 ]; do
		[ "$(scx_state)" = "$1" ] && return 0
		sleep 0.1; n=$((n - 1))
	done
	return 1
}

# A shared lab: in a test whose header has a "# lab: shared" line, a plain start_lab (no
# options) takes over the daemon that the test before it, also shared, left attached, after
# putting its features and tunables back to what they were at its attach; its stop_lab leaves
# it attached for the next one (tests/vm/suite.sh stops it after the last of a row). Each start
# saved is a BPF verification, most of a start's time under emulation. Such a test counts
# decisions with before/after deltas (counters), never since attach, and may find the queues
# warm.
LAB_SHARED=/tmp/lab.shared

# start_lab [OPTIONS...]: start the scheduler in the background and wait until it is attached.
start_lab() {
	if [ $# -eq 0 ] && [ "${LAB_SHARE:-}" = 1 ] && [ -s $LAB_SHARED ]; then
		LAB_PID=$(sed -n 1p $LAB_SHARED)
		if lab_attached; then
			scx_eevdf_lab features $(sed -n 2p $LAB_SHARED) >/dev/null 2>&1 &&
				scx_eevdf_lab set $(sed -n '3,$p' $LAB_SHARED) >/dev/null 2>&1 ||
				fail "cannot put the shared lab's knobs back"
			note "the lab an earlier test attached (pid $LAB_PID), its knobs as at its attach"
			return 0
		fi
		rm -f $LAB_SHARED
	fi
	scx_eevdf_lab "$@" >"$LAB_LOG" 2>&1 &
	LAB_PID=$!
	# Loading and BPF verification under software emulation take 40-160 s (2 host cores).
	n=3000
	while [ "$(scx_state)" != enabled ]; do
		kill -0 "$LAB_PID" 2>/dev/null || fail "the daemon exited before attaching"
		[ $n -gt 0 ] || fail "the scheduler did not attach within 300 s (state $(scx_state))"
		sleep 0.1; n=$((n - 1))
	done
	n=50; while [ ! -e /sys/fs/bpf/scx_eevdf_lab/knobs ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
	case "$(cat $SCX/root/ops)" in eevdf_lab*) ;; *) fail "root/ops is $(cat $SCX/root/ops)" ;; esac
	if [ $# -eq 0 ] && [ "${LAB_SHARE:-}" = 1 ]; then
		{ echo "$LAB_PID"; scx_eevdf_lab features; scx_eevdf_lab get; } >$LAB_SHARED ||
			fail "cannot read the knobs of the lab to share"
	fi
}

# holds_shared: LAB_PID is the shared lab (see start_lab).
holds_shared() { [ "${LAB_SHARE:-}" = 1 ] && [ -s $LAB_SHARED ] && [ "$(sed -n 1p $LAB_SHARED)" = "$LAB_PID" ]; }

# stop_lab: SIGINT, then the daemon must exit 0 and sched_ext return to disabled. A shared lab
# (see start_lab) must still be attached, and stays so.
stop_lab() {
	if holds_shared; then
		lab_attached || fail "the shared lab is not attached any more"
		LAB_PID=
		return 0
	fi
	kill -INT "$LAB_PID" 2>/dev/null
	wait "$LAB_PID"; rc=$?
	LAB_PID=
	[ $rc -eq 0 ] || fail "the daemon exited with $rc after SIGINT"
	wait_state disabled 50 || fail "state is $(scx_state) after the daemon exited"
}

# release_lab: stop_lab, also of a shared lab (for a test that needs the built-in EEVDF after
# its lab part). A shared lab that an earlier test started is not this shell's child: it must
# exit within 10 s (its exit status is not this shell's to read) and sched_ext return to
# disabled.
release_lab() {
	if holds_shared; then
		rm -f $LAB_SHARED
		if [ "$(awk '{ print $4 }' "/proc/$LAB_PID/stat" 2>/dev/null)" != $$ ]; then
			kill -INT "$LAB_PID" 2>/dev/null
			n=100; while pid_alive "$LAB_PID" && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
			pid_alive "$LAB_PID" && fail "the shared lab did not exit within 10 s of SIGINT"
			LAB_PID=
			wait_state disabled 50 || fail "state is $(scx_state) after the daemon exited"
			return 0
		fi
	fi
	stop_lab
}

# pid_alive PID: the process exists and has not exited (a zombie has).
pid_alive() {
	st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ]
}

# has TEXT REGEX: TEXT has a line matching the extended REGEX.
has() { echo "$1" | grep -Eq -- "$2"; }

lab_attached() { [ "$(scx_state)" = enabled ] && kill -0 "$LAB_PID" 2>/dev/null; }

# A stressor mix that exercises wakeups, forks, pipes and affinity changes.
stress_mix() { # stress_mix SECONDS [EXTRA ARGS]
	t=$1; shift
	stress-ng --cpu 2 --fork 2 --pipe 2 --pipe-data-size 512 --affinity 2 --timeout "$t" \
		--metrics-brief "$@" >/tmp/stress.log 2>&1
}

# --- helpers of the EEVDF-core and live-control tests (t-2x, t-3x) ---------------------------

KNOBS_PIN=/sys/fs/bpf/scx_eevdf_lab/knobs

# counters NAME...: the named counters summed since attach (a fresh monitor connection's first
# sample), space-separated on one line.
counters() {
	set -- $(for f in "$@"; do printf -- '--field %s ' "$f"; done)
	scx_eevdf_lab monitor --count 1 0.1 "$@"
}

# knob_seq: the seq of the pinned knobs, which every write bumps (read with bpftool).
knob_seq() {
	bpftool map dump pinned "$KNOBS_PIN" | awk -F: '/"seq"/ {gsub(/[^0-9]/, "", $2); print $2}'
}

# bench_csv FILE: a bench runs.csv with the commas inside quoted fields (arm labels with
# tunables) turned into ';' and the quotes dropped, so that awk -F, sees the columns:
# 1 index 2 round 3 arm 4 workload 5 discarded 6 valid 7 metric 8 value 9 ops 10 elapsed_s
# 11 voluntary 12 involuntary 13 run_delay_ns 14 migrations 15 invalid_reasons 16 system_switches
# 17 system_migrations 18 cpu_idle_ms (CPU:ms;...)
bench_csv() {
	awk -F'"' -v OFS='' '{for (i = 2; i <= NF; i += 2) gsub(",", ";", $i)} 1' "$1"
}

# median: the median of the numbers on stdin, one per line (fails on no input).
median() {
	sort -n | awk '{v[NR] = $1} END {if (!NR) exit 1; print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# feature_names: every feature the running scheduler knows, in its order, without NO_.
feature_names() {
	scx_eevdf_lab features | tr ' ' '\n' | sed -n 's/^NO_//; /./p'
}

# delta BEFORE AFTER INDEX: the difference of the INDEX-th (1-based) of two counters() lines.
delta() { echo "$1 $2" | awk -v i="$3" -v n="$(echo "$1" | wc -w)" '{ print $(n + i) - $i }'; }

# cpu_ticks PID: user + system time of a process (or thread), in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# Busy loops for the share tests. hog CPUS [CGROUP]: a busy loop on CPUS, in CGROUP under /sys/fs/cgroup
# (empty or absent: where the caller is); its pid in HOG, and added to HOGS.
hog() {
	taskset -c "$1" sh -c 'while :; do :; done' &
	HOG=$!
	HOGS="$HOGS $HOG"
	[ -z "${2:-}" ] || echo $HOG >/sys/fs/cgroup/$2/cgroup.procs || fail "cannot move $HOG into $2"
}
# stop_hogs: kill and reap every loop in HOGS. (A wait with no pid would wait for every child,
# a lab daemon that start_lab started included.)
stop_hogs() { [ -n "$HOGS" ] && kill $HOGS 2>/dev/null && wait $HOGS 2>/dev/null; HOGS=; }
# exec_ns PID: its time on a CPU, in ns (schedstat).
exec_ns() { awk '{print $1}' "/proc/$1/schedstat"; }
# share P Q: P's part of the CPU time of P and Q over WINDOW seconds, after SETTLE seconds.
share() {
	sleep $SETTLE
	p0=$(exec_ns $1) q0=$(exec_ns $2)
	sleep $WINDOW
	p1=$(exec_ns $1) q1=$(exec_ns $2)
	awk -v p=$((p1 - p0)) -v q=$((q1 - q0)) 'BEGIN {printf "%.4f\n", p / (p + q)}'
}

# wa_fidelity RUNS [KNOWN...]: `bench --fidelity WA_WEIGHT+WA_IDLE` on messaging with 1 and with 4
# groups (RUNS runs per arm, interleaved; seconds per run is the metric). For each feature and
# load, the lab's effect must agree with the kernel's -- the same sign with overlapping 95 %
# intervals, or no effect on either side (both intervals hold 0) -- and where the kernel's effect
# is told apart from noise (its interval excludes 0), the lab's interval must meet the band from
# half to twice the kernel's mean (a point estimate alone flips on one slow round). A KNOWN row
# (FEATURE:GROUPS) is a deviation the README describes: it is shown and judged by that band alone
# (where the kernel's effect is told apart from noise), not by the verdict.
wa_fidelity() {
	runs=$1
	shift
	KNOWN="$*"
	scx_eevdf_lab bench --fidelity WA_WEIGHT+WA_IDLE -w messaging:groups=1,4:loops=50 -n "$runs" \
		--window 1 --warmup 0.5 --seed 11 -o /tmp/wa-fidelity >/tmp/wa-fidelity.log 2>&1 ||
		{ tail -n 40 /tmp/wa-fidelity.log; fail "the bench failed"; }
	grep -a '^fidelity .* seconds:' /tmp/wa-fidelity.log >/tmp/wa-rows || true
	sed -n '/^sweep messaging/,/^$/p' /tmp/wa-fidelity.log | grep -av '^[+|]-' | sed 's/^/  /'
	while read -r row; do note "$row"; done </tmp/wa-rows
	check "four fidelity rows (two features, two loads)" [ "$(wc -l </tmp/wa-rows)" -eq 4 ]
	while read -r row; do
		set -- $row
		what="$2 on ${4#messaging:}" key="$2:$(echo "$4" | sed -n 's/.*groups=\([0-9]*\).*/\1/p')"
		# $7 the kernel's Δ%, $8 $9 its interval "[lo," "hi]"
		k=${7%\%} lo=${8#[} hi=${9%]}
		lo=${lo%,}
		case " $KNOWN " in
		*" $key "*) note "$what: a known deviation (README, wake-affine): judged by the band alone" ;;
		*) check "$what: the lab agrees with the kernel" has "$row" '→ agrees' ;;
		esac
		if awk -v lo="$lo" -v hi="$hi" 'BEGIN {exit !(lo > 0 || hi < 0)}'; then
			set -- $(echo "$row" | sed 's/.* vs mirror [^[]*\[\([^,]*\), \([^]]*\)\].*/\1 \2/')
			check "$what: the kernel's effect ($k %) is real; the lab's interval [$1, $2] meets half to twice it" \
				awk -v k="$k" -v a="$1" -v b="$2" 'BEGIN {
					if (k < 0) { k = -k; t = a; a = -b; b = -t }
					exit !(b >= k / 2 && a <= 2 * k) }'
		fi
	done </tmp/wa-rows
}

# wake_probe FROM ALLOWED [IDLE...]: a task that ran on CPU FROM sleeps 1 s (a timer wakeup),
# allowed on the CPU list ALLOWED meanwhile; prints the CPU it woke up on (read from its own
# /proc stat with shell builtins). IDLE: CPUs to pass through in this order just before, so that
# they go idle last.
wake_probe() {
	from=$1 allowed=$2
	shift 2
	rm -f /tmp/probe.fifo /tmp/probe.out; mkfifo /tmp/probe.fifo
	taskset -c "$from" sh -c 'exec 3<>/tmp/probe.fifo; read -t 1 x <&3
		read -r s </proc/$$/stat; set -- $s; shift 38; echo "$1"' >/tmp/probe.out &
	pid=$!
	sleep 0.3
	taskset -p -c "$allowed" $pid >/dev/null
	for c in "$@"; do taskset -c "$c" true; done
	wait $pid
	cat /tmp/probe.out
}
# fork_probe FROM ALLOWED: a shell pinned to CPU FROM widens its affinity to the CPU list ALLOWED
# (it keeps running on FROM) and forks a child that prints the CPU it first runs on: where the
# scheduler placed the new task.
fork_probe() {
	taskset -c "$1" sh -c 'taskset -p -c '"$2"' $$ >/dev/null
		(read -r s </proc/self/stat; set -- $s; shift 38; echo "$1")'
}
# fork_probes N FROM ALLOWED: the CPUs of N fork probes, space-separated.
fork_probes() {
	n=$1
	shift
	i=0
	while [ $i -lt "$n" ]; do printf '%s ' "$(fork_probe "$@")"; i=$((i + 1)); done
}
# wake_probes N FROM ALLOWED [IDLE...]: the CPUs of N probes, space-separated.
wake_probes() {
	n=$1
	shift
	i=0
	while [ $i -lt "$n" ]; do printf '%s ' "$(wake_probe "$@")"; i=$((i + 1)); done
}
