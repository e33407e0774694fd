# Runs guest-side tests and prints one line per test and a final "N passed, N failed".
# Usage: sh suite.sh [TEST...]
#
# Four kinds of boot (scripts/vm, scripts/test): a test with a "# boot: timing" line in its
# header judges a timing-dependent effect (CPU shares, latencies, preemption counts, balancing
# within 100 ms) and belongs in a timing boot (`scripts/vm --timing`: icount, guest time follows
# executed instructions, host load cannot change it); one with "# boot: smp" needs a multi-level
# topology (`scripts/vm --smp SPEC`: the guest sees lab.smp=SPEC), and one with "# boot: smp-timing"
# compares arms on that topology (both options); every other test is functional
# and belongs in a normal, multi-threaded boot. Without TEST, the t-*.sh of this boot's kind run
# in name order, but those with a "# suite: manual" line (long measurements, run when named).
#
# Tests whose header has a "# lab: shared" line share one lab daemon while they come one after
# the other (see start_lab in lib.sh): the suite stops it after the last of such a row, or after
# one that fails.
# shellcheck shell=sh
cd "$(dirname "$0")" || exit 2
boot=functional
grep -qw lab.timing=1 /proc/cmdline && boot=timing
grep -q 'lab\.smp=' /proc/cmdline && boot=smp
grep -qw lab.timing=1 /proc/cmdline && grep -q 'lab\.smp=' /proc/cmdline && boot=smp-timing
boot_of() {
	case $(grep -x '# boot: [a-z-]*' "$1" | head -n1) in
	'# boot: timing') echo timing ;;
	'# boot: smp') echo smp ;;
	'# boot: smp-timing') echo smp-timing ;;
	*) echo functional ;;
	esac
}
tests=$*
if [ -z "$tests" ]; then
	for t in t-*.sh; do
		[ "$(boot_of "$t")" = $boot ] && ! grep -qx '# suite: manual' "$t" && tests="$tests $t"
	done
fi
# kill_lab SIGNAL: every scx_eevdf_lab process (busybox has no pkill).
kill_lab() {
	for d in /proc/[0-9]*; do
		[ "$(cat "$d/comm" 2>/dev/null)" = scx_eevdf_lab ] && kill -"$1" "${d#/proc/}" 2>/dev/null
	done
}
# kill_strays BEFORE [KEEP]: every process that a test left behind -- not a kernel thread, not
# in BEFORE (the pids before the test), not KEEP (a shared lab), not this shell. A busy loop a
# failed test did not stop would hold the console pipe open, and the boot would never end.
kill_strays() {
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		{ [ "$p" = $$ ] || [ "$p" = "${2:-}" ] || [ ! -s "$d/cmdline" ]; } && continue
		case " $1 " in *" $p "*) continue ;; esac
		kill -KILL "$p" 2>/dev/null
	done
}
shared_of() { [ -f "$1" ] && grep -qx '# lab: shared' "$1"; }
# stop_all: no scheduler (or bench) left behind for the next test.
stop_all() {
	kill_lab INT
	n=0
	while [ "$(cat /sys/kernel/sched_ext/state)" != disabled ] && [ $n -lt 100 ]; do
		sleep 0.1; n=$((n + 1))
	done
	kill_lab KILL
	rm -rf /sys/fs/bpf/scx_eevdf_lab /tmp/lab.shared
}
pass=0 failed=0 names=
echo "kernel $(uname -r), $(nproc) CPUs, $boot boot"
set -- $tests
while [ $# -gt 0 ]; do
	t=$1 next=${2:-}
	shift
	name=${t%.sh}
	start=$(date +%s) seq0=$(cat /sys/kernel/sched_ext/enable_seq)
	echo "== $name"
	[ -f "./$name.sh" ] && [ "$(boot_of "./$name.sh")" != $boot ] &&
		echo "  note: a $(boot_of "./$name.sh") test in a $boot boot: its verdict may not hold in the other kind"
	before=$(cd /proc && echo [0-9]*)
	share=0
	shared_of "./$name.sh" && share=1
	LAB_SHARE=$share sh "./$name.sh"
	rc=$?
	# A shared lab stays for the next test when that one shares it too and this one passed.
	# Whatever else this test left running goes.
	if [ $share = 1 ] && [ $rc -eq 0 ] && shared_of "./${next%.sh}.sh" && [ -s /tmp/lab.shared ]; then
		kill_strays "$before" "$(sed -n 1p /tmp/lab.shared)"
	else
		stop_all
		kill_strays "$before"
	fi
	# Its time and how many times a scheduler was enabled (loaded and verified: most of the time).
	took="$(($(date +%s) - start)) s, attaches: $(($(cat /sys/kernel/sched_ext/enable_seq) - seq0))"
	[ $share = 0 ] || took="$took, shared lab"
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1)); echo "PASS $name ($took)"
	else
		failed=$((failed + 1)); names="$names $name"; echo "FAIL $name ($took)"
	fi
done
[ $failed -eq 0 ] || echo "failed:$names"
echo "$pass passed, $failed failed"
[ $failed -eq 0 ]
