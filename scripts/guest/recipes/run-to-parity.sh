# Seed experiment 5 (RUN_TO_PARITY, "curb wakeup preemption", LKML Aug 2023), in the VM:
#
#   perf stat -a -e context-switches --repeat 10 -- perf bench sched messaging -g 20 -t -l 5000
#
# with RUN_TO_PARITY on and off, on the kernel's EEVDF (debugfs; under Debian's preempt=lazy as
# booted and under preempt=full, which is how the lab preempts) and on the lab (features changed
# live), scaled to the VM: G groups of 20 senders and 20 receivers (threads), L loops, R repeats.
# Then the same workload as a `bench --fidelity RUN_TO_PARITY,preempt=full` session (N runs per
# arm, interleaved), whose "system switches per run" row counts what perf stat -a counts.
# Every setting it changes is put back; a run after boot and after the lab attaches is thrown
# away. Run it in a timing boot:
#   scripts/vm --timing --out rtp -- sh recipes/run-to-parity.sh
# shellcheck shell=sh
. "$(dirname "$0")/lib.sh"
G=${G:-2} L=${L:-200} R=${R:-10} N=${N:-5}
DBG=/sys/kernel/debug/sched
SCX=/sys/kernel/sched_ext
PREEMPT0=$(sed 's/.*(\(.*\)).*/\1/' $DBG/preempt)

say() { printf '\n== %s\n' "$*"; }
# perfstat: perf stat's summary lines (switches and elapsed time, each with its spread).
perfstat() {
	perf stat -a -e context-switches --repeat "$R" -- \
		perf bench sched messaging -g "$G" -t -l "$L" 2>&1 >/dev/null |
		grep -E 'context-switches|time elapsed' | sed 's/^ */  /'
}
restore() { echo RUN_TO_PARITY >$DBG/features; echo "$PREEMPT0" >$DBG/preempt; }
trap restore EXIT

say "kernel $(uname -r), $(nproc) CPUs; perf $(perf --version | cut -d' ' -f3); G=$G L=$L R=$R N=$N"
# The first runs after boot are slower: two of them are thrown away.
perf bench sched messaging -g "$G" -t -l "$L" >/dev/null 2>&1
perf bench sched messaging -g "$G" -t -l "$L" >/dev/null 2>&1
for preempt in "$PREEMPT0" full; do
	echo "$preempt" >$DBG/preempt
	for feat in RUN_TO_PARITY NO_RUN_TO_PARITY; do
		echo $feat >$DBG/features
		say "kernel EEVDF, preempt=$preempt, $feat: perf stat -a -e context-switches --repeat $R -- perf bench sched messaging -g $G -t -l $L"
		perfstat
	done
done
restore

start_lab
for feat in RUN_TO_PARITY NO_RUN_TO_PARITY; do
	scx_eevdf_lab features $feat >/dev/null 2>&1
	[ $feat = RUN_TO_PARITY ] && perf bench sched messaging -g "$G" -t -l "$L" >/dev/null 2>&1
	say "lab ($(cat $SCX/root/ops)), $feat: the same perf stat"
	perfstat
done
kill -INT $lab
wait $lab

say "scx_eevdf_lab bench --fidelity RUN_TO_PARITY,preempt=full -w perf-messaging:groups=$G:loops=$L:mode=thread -n $N"
scx_eevdf_lab bench --fidelity RUN_TO_PARITY,preempt=full -w "perf-messaging:groups=$G:loops=$L:mode=thread" \
	-n "$N" --seed 5 --out /out/rtp 2>/tmp/bench.err
rc=$?
[ $rc -eq 0 ] || tail -n 20 /tmp/bench.err
exit $rc
