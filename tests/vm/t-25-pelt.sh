# The load signals (PELT, src/bpf/pelt.h) on a running system, read from the monitor's per-CPU
# queue lines (load, runnable, util, util_est):
#  - a busy loop pinned to CPU 2 for 3 s saturates CPU 2's signals (about 1024 each), while an
#    idle CPU's stay low;
#  - once it stops, CPU 2 runs nothing of ours and its blocked averages decay (refreshed every
#    32 ms from a busy CPU's tick, as the kernel's nohz idle balance does): near zero 0.6 s later
#    (each step samples every 0.3 s for up to 15 s more: a loaded host can stall emulated CPUs);
#  - moved to CPU 3 while running (an affinity change), its history goes with it: CPU 3's signals
#    rise, and the attach and detach/remove counters move;
#  - the frequency hand-off (CPUFREQ): the saturated CPU's performance target, the signal that
#    schedutil reads, is near the maximum too; with NO_CPUFREQ every CPU with events goes to the
#    maximum (sched_ext's own target), and back on, targets are handed over again.
# The test itself, the daemon (every thread) and the monitors it starts stay on CPU 0, so that
# CPUs 2 and 3 run only what the test puts there (and the odd kernel thread).
# The arithmetic itself is pinned by host tests against the signal's definition.
# lab: shared
. ./lib.sh
taskset -p -c 0 $$ >/dev/null || fail "cannot pin the test to CPU 0"

# sample: one monitor sample of every CPU's queue into /tmp/pelt.out.
sample() { scx_eevdf_lab monitor --count 1 0.1 >/tmp/pelt.out || fail "monitor failed"; }
# until_sampled TENTHS CONDITION...: sample every 0.3 s until CONDITION holds, at most TENTHS/10 s; then
# waited holds the seconds it took.
until_sampled() {
	n=$1 waited=0; shift
	while :; do
		sample
		"$@" && return 0
		[ $n -gt 0 ] || return 1
		sleep 0.3; n=$((n - 3)); waited=$(awk -v w="$waited" 'BEGIN { print w + 0.3 }')
	done
}
# pelt CPU FIELD: FIELD (load, runnable, util, util_est) of CPU's queue in the last sample.
pelt() {
	awk -v c="cpu$1" -v f="$2" '$1 == c { for (i = 2; i < NF; i++) if ($i == f) print $(i + 1) }' /tmp/pelt.out
}
show() { note "cpu$1: load $(pelt "$1" load) runnable $(pelt "$1" runnable) util $(pelt "$1" util) util_est $(pelt "$1" util_est) perf $(pelt "$1" perf)"; }

start_lab
# The daemon too (a shared one was started elsewhere): it serves the test's samples, and on CPU 3
# it would be what keeps that CPU's signals up. Its threads get every CPU back at the end.
pin_daemon() { for t in /proc/$LAB_PID/task/*; do taskset -p -c "$1" "${t##*/}" >/dev/null || return 1; done; }
pin_daemon 0 || fail "cannot pin the daemon to CPU 0"
# A busy CPU whose ticks keep the blocked averages moving (CPU 1), for the whole test.
taskset -c 1 sh -c 'while :; do :; done' &
ticker=$!
taskset -c 2 sh -c 'while :; do :; done' &
hog=$!
sleep 3
busy() { [ "$(pelt 2 util)" -ge 900 ] 2>/dev/null && [ "$(pelt 2 load)" -ge 900 ] 2>/dev/null && [ "$(pelt 2 runnable)" -ge 900 ] 2>/dev/null; }
until_sampled 150 busy
show 2; show 3
u=$(pelt 2 util); l=$(pelt 2 load); r=$(pelt 2 runnable)
check "a saturated CPU's utilisation is near 1024 ($u)" [ "${u:-0}" -ge 900 ]
check "its load average is near the hog's weight, 1024 ($l)" [ "${l:-0}" -ge 900 ]
check "its runnable average too ($r)" [ "${r:-0}" -ge 900 ]
i3=$(pelt 3 util)
check "an idle CPU's utilisation stays low ($i3)" [ "${i3:-9999}" -le 100 ]
p2=$(pelt 2 perf)
check "the saturated CPU's performance target is near the maximum ($p2)" [ "${p2:-0}" -ge 900 ]

before=$(counters pelt_attach pelt_detach pelt_remove pelt_blocked)
taskset -p -c 3 $hog >/dev/null || fail "taskset -p 3 $hog failed"
sleep 2
moved() { [ "$(pelt 3 util)" -ge 800 ] 2>/dev/null && [ "$(pelt 2 util)" -le 100 ] 2>/dev/null; }
until_sampled 150 moved
show 2; show 3
note "(2 s after the move, then $waited s of sampling)"
u3=$(pelt 3 util); u2=$(pelt 2 util)
check "the moved hog's CPU 3 is busy now ($u3)" [ "${u3:-0}" -ge 800 ]
check "CPU 2 decayed once nothing of ours ran there ($u2)" [ "${u2:-9999}" -le 100 ]

kill $hog; wait $hog 2>/dev/null
sleep 0.6
decayed() { [ "$(pelt 3 util)" -le 60 ] 2>/dev/null && [ "$(pelt 3 load)" -le 60 ] 2>/dev/null; }
until_sampled 150 decayed
show 3
note "(0.6 s after the exit, then $waited s of sampling)"
u3=$(pelt 3 util); l3=$(pelt 3 load)
check "once the hog exited CPU 3's utilisation decayed to near zero ($u3)" [ "${u3:-9999}" -le 60 ]
check "and its load average ($l3)" [ "${l3:-9999}" -le 60 ]
after=$(counters pelt_attach pelt_detach pelt_remove pelt_blocked)
note "attach $(delta "$before" "$after" 1) detach $(delta "$before" "$after" 2) remove $(delta "$before" "$after" 3) blocked updates $(delta "$before" "$after" 4)"
check "the move attached the history on CPU 3" [ "$(delta "$before" "$after" 1)" -ge 1 ]
check "and took it off CPU 2 (detach or remove)" \
	[ $(($(delta "$before" "$after" 2) + $(delta "$before" "$after" 3))) -ge 1 ]
check "idle CPUs' blocked averages were brought up to date" [ "$(delta "$before" "$after" 4)" -ge 10 ]
kill $ticker; wait $ticker 2>/dev/null

f0=$(counters cpuperf_set)
scx_eevdf_lab features NO_CPUFREQ >/dev/null || fail "cannot turn CPUFREQ off"
sleep 0.3
full() { [ "$(pelt 0 perf)" -eq 1024 ] 2>/dev/null; }
until_sampled 30 full
p0=$(pelt 0 perf)
check "NO_CPUFREQ: CPU 0's target is the maximum ($p0)" [ "${p0:-0}" -eq 1024 ]
scx_eevdf_lab features CPUFREQ >/dev/null || fail "cannot turn CPUFREQ on"
sleep 0.5
f1=$(counters cpuperf_set)
note "performance targets handed to cpufreq: $(delta "$f0" "$f1" 1), CPU 0's now $(sample; pelt 0 perf)"
check "targets were handed over" [ "$(delta "$f0" "$f1" 1)" -gt 0 ]
pin_daemon "0-$(($(nproc) - 1))" || fail "cannot give the daemon every CPU back"
check "still attached" lab_attached
stop_lab
