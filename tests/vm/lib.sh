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

# start_lab [OPTIONS...]: start the scheduler in the background and wait until it is attached.
start_lab() {
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
}

# stop_lab: SIGINT, then the daemon must exit 0 and sched_ext return to disabled.
stop_lab() {
	kill -INT "$LAB_PID" 2>/dev/null
	wait "$LAB_PID"; rc=$?
	LAB_PID=
	[ $rc -eq 0 ] || fail "the daemon exited with $rc after SIGINT"
	wait_state disabled 50 || fail "state is $(scx_state) after the daemon exited"
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
