# Runs guest-side tests (default: every t-*.sh here, in name order) and prints one line per test
# and a final "N passed, N failed". Usage: sh suite.sh [TEST...]
# shellcheck shell=sh
cd "$(dirname "$0")" || exit 2
tests=$*
[ -n "$tests" ] || tests=$(ls t-*.sh)
pass=0 failed=0 names=
echo "kernel $(uname -r), $(nproc) CPUs"
for t in $tests; do
	name=${t%.sh}
	start=$(date +%s)
	echo "== $name"
	sh "./$name.sh"
	rc=$?
	# Leave no scheduler behind for the next test.
	if [ "$(cat /sys/kernel/sched_ext/state)" != disabled ]; then
		# (busybox has no pkill)
		kill -INT $(pidof scx_eevdf_lab) 2>/dev/null; sleep 1; kill -KILL $(pidof scx_eevdf_lab) 2>/dev/null
		n=50; while [ "$(cat /sys/kernel/sched_ext/state)" != disabled ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
	fi
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
