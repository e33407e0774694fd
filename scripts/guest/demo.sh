# The demo, inside the VM (see scripts/demo): the lab attaches, schedules a load, takes a live
# feature change and detaches; then a short A/B of the built-in EEVDF against the lab with
# DELAY_ZERO on and off (pipe hand-off with 2 and 8 threads, hackbench-like messaging).
# shellcheck shell=sh
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "kernel $(uname -r), $(nproc) CPUs, sched_ext $(cat /sys/kernel/sched_ext/state)"
say "sudo scx_eevdf_lab &"
scx_eevdf_lab >/tmp/lab.log 2>&1 &
lab=$!
n=0
while [ "$(cat /sys/kernel/sched_ext/state)" != enabled ]; do
	sleep 0.5; n=$((n + 1))
	if [ $n -gt 400 ] || ! kill -0 $lab 2>/dev/null; then cat /tmp/lab.log; exit 1; fi
done
cat /tmp/lab.log
echo "state: $(cat /sys/kernel/sched_ext/state), ops: $(cat /sys/kernel/sched_ext/root/ops)"

say "scx_eevdf_lab features"
scx_eevdf_lab features
say "hackbench -g 4 -l 100 under the lab, then its counters (scx_eevdf_lab monitor --count 1)"
hackbench -g 4 -l 100 -T
scx_eevdf_lab monitor --count 1

say "scx_eevdf_lab features NO_DELAY_ZERO NO_RUN_TO_PARITY (live, no reload)"
scx_eevdf_lab features NO_DELAY_ZERO NO_RUN_TO_PARITY
scx_eevdf_lab diff-kernel
hackbench -g 4 -l 100 -T
scx_eevdf_lab features DELAY_ZERO RUN_TO_PARITY

say "SIGINT: the scheduler detaches"
kill -INT $lab
wait $lab
echo "exit status $?, state: $(cat /sys/kernel/sched_ext/state)"
tail -n 4 /tmp/lab.log

say "scx_eevdf_lab bench eevdf eevdf:NO_DELAY_ZERO lab lab:NO_DELAY_ZERO -w pingpong,pingpong:pairs=4,messaging --quick"
scx_eevdf_lab bench eevdf eevdf:NO_DELAY_ZERO lab lab:NO_DELAY_ZERO -w pingpong,pingpong:pairs=4,messaging --quick \
	--out /out/bench
