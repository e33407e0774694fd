# Runs guest-side tests (default: every t-*.sh here, in name order) and prints one line per test
# and a final "N passed, N failed". Usage: sh suite.sh [TEST...]
# shellcheck shell=sh
cd "$(dirname "$0")" || exit 2
tests=$*
[ -n "$tests" ] || tests=$(ls t-*.sh)
# kill_lab SIGNAL: every scx_eevdf_lab process (busybox has no pkill).
kill_lab() {
	for d in /proc/[0-9]*; do
		[ "$(cat "$d/comm" 2>/dev/null)" = scx_eevdf_lab ] && kill -"$1" "${d#/proc/}" 2>/dev/null
	done
}
pass=0 failed=0 names=
echo "kernel $(uname -r), $(nproc) CPUs"
for t in $tests; do
	name=${t%.sh}
	start=$(date +%s)
	echo "== $name"
	sh "./$name.sh"
	rc=$?
	# Leave no scheduler (or bench) behind for the next test.
	kill_lab INT
	n=0
	while [ "$(cat /sys/kernel/sched_ext/state)" != disabled ] && [ $n -lt 100 ]; do
		sleep 0.1; n=$((n + 1))
	done
	kill_lab KILL
	rm -rf /sys/fs/bpf/scx_eevdf_lab
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1)); echo "PASS $name ($(($(date +%s) - start)) s)"
	else
		failed=$((failed + 1)); names="$names $name"; echo "FAIL $name ($(($(date +%s) - start)) s)"
	fi
done
[ $failed -eq 0 ] || echo "failed:$names"
echo "$pass passed, $failed failed"
[ $failed -eq 0 ]
