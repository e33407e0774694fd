# The load signals (PELT, src/bpf/pelt.h) on a running system, read from the monitor's per-CPU
# queue lines (load, runnable, util, util_est):
#  - a busy loop pinned to CPU 2 for 3 s saturates CPU 2's signals (about 1024 each), while an
#    idle CPU's stay low;
#  - once it stops, CPU 2 runs nothing of ours and its blocked averages decay (refreshed every
#    32 ms from a busy CPU's tick, as the kernel's nohz idle balance does): near zero 0.6 s later;
#  - moved to CPU 3 while running (an affinity change), its history goes with it: CPU 3's signals
#    rise, and the attach and detach/remove counters move.
# The test itself, the daemon and the monitors it starts stay on CPU 0, so that CPUs 2 and 3 run
# only what the test puts there (and the odd kernel thread).
# The arithmetic itself is pinned by host tests against the signal's definition.
. ./lib.sh
taskset -p -c 0 $$ >/dev/null || fail "cannot pin the test to CPU 0"

# sample: one monitor sample of every CPU's queue into /tmp/pelt.out.
sample() { scx_eevdf_lab monitor --count 1 0.1 >/tmp/pelt.out || fail "monitor failed"; }
# pelt CPU FIELD: FIELD (load, runnable, util, util_est) of CPU's queue in the last sample.
pelt() {
	awk -v c="cpu$1" -v f="$2" '$1 == c { for (i = 2; i < NF; i++) if ($i == f) print $(i + 1) }' /tmp/pelt.out
}
show() { note "cpu$1: load $(pelt "$1" load) runnable $(pelt "$1" runnable) util $(pelt "$1" util) util_est $(pelt "$1" util_est)"; }

start_lab
# A busy CPU whose ticks keep the blocked averages moving (CPU 1), for the whole test.
taskset -c 1 sh -c 'while :; do :; done' &
ticker=$!
taskset -c 2 sh -c 'while :; do :; done' &
hog=$!
sleep 3
sample; show 2; show 3
u=$(pelt 2 util); l=$(pelt 2 load); r=$(pelt 2 runnable)
check "a saturated CPU's utilisation is near 1024 ($u)" [ "${u:-0}" -ge 900 ]
check "its load average is near the hog's weight, 1024 ($l)" [ "${l:-0}" -ge 900 ]
check "its runnable average too ($r)" [ "${r:-0}" -ge 900 ]
i3=$(pelt 3 util)
check "an idle CPU's utilisation stays low ($i3)" [ "${i3:-9999}" -le 100 ]

before=$(counters pelt_attach pelt_detach pelt_remove pelt_blocked)
taskset -p -c 3 $hog >/dev/null || fail "taskset -p 3 $hog failed"
sleep 2
sample; show 2; show 3
u3=$(pelt 3 util); u2=$(pelt 2 util)
check "the moved hog's CPU 3 is busy now ($u3)" [ "${u3:-0}" -ge 800 ]
check "CPU 2 decayed once nothing of ours ran there ($u2)" [ "${u2:-9999}" -le 100 ]

kill $hog; wait $hog 2>/dev/null
sleep 0.6
sample; show 3
u3=$(pelt 3 util); l3=$(pelt 3 load)
check "0.6 s after the hog exited CPU 3's utilisation is near zero ($u3)" [ "${u3:-9999}" -le 60 ]
check "and its load average ($l3)" [ "${l3:-9999}" -le 60 ]
after=$(counters pelt_attach pelt_detach pelt_remove pelt_blocked)
note "attach $(delta "$before" "$after" 1) detach $(delta "$before" "$after" 2) remove $(delta "$before" "$after" 3) blocked updates $(delta "$before" "$after" 4)"
check "the move attached the history on CPU 3" [ "$(delta "$before" "$after" 1)" -ge 1 ]
check "and took it off CPU 2 (detach or remove)" \
	[ $(($(delta "$before" "$after" 2) + $(delta "$before" "$after" 3))) -ge 1 ]
check "idle CPUs' blocked averages were brought up to date" [ "$(delta "$before" "$after" 4)" -ge 10 ]
kill $ticker; wait $ticker 2>/dev/null
check "still attached" lab_attached
stop_lab
