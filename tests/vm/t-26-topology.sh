# Topology (scripts/test's smp boot: two NUMA nodes of two SMT cores, CPUs 0-3 and 4-7, siblings
# numbered next to each other): the daemon reads the levels; a woken task whose previous core is
# busy goes to a wholly idle core of its LLC (select_idle_core()) rather than to the idle sibling
# of its busy previous CPU, and to that sibling (select_idle_smt()) when no core is idle; a new
# task starts where sched_balance_find_dst_cpu() sends it.
# boot: smp
. ./lib.sh

[ "$(nproc)" = 8 ] || fail "this test needs the smp boot's 8 CPUs, not $(nproc)"
check "the guest sees SMT pairs" [ "$(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list)" = 0-1 ]
check "the guest sees two NUMA nodes" [ -d /sys/devices/system/node/node1 ]

# Everything this test runs itself stays on the second node, away from the CPUs it watches.
taskset -p -c 4-7 $$ >/dev/null

# count_in LIST SET...: how many of LIST are in SET.
count_in() { l=$1; shift; k=0; for x in $l; do for y in "$@"; do [ "$x" = "$y" ] && k=$((k + 1)); done; done; echo $k; }
hog() { taskset -c "$1" sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!; }

# A fork from CPU 0 (busy with the forking shell alone): sched_balance_find_dst_cpu() keeps the
# child on its node (one more idle CPU on node 1 is within the NUMA allowance) and sends it to
# the idle core, not to CPU 0's sibling; with a hog on CPU 2 both cores have one idle CPU and the
# busier one loses: the child stays on core 0 (on CPU 1 at the SMT level, or on CPU 0 when CPU 1
# is not idle at that moment: the kernel's own runs show both).
kfork=$(fork_probes 9 0 0-7)
h2=$(hog 2)
kfork2=$(fork_probes 9 0 0-7)
kill $h2
note "kernel: forks from CPU 0 started on CPUs $kfork; with a hog on CPU 2, on $kfork2"

# Core 0 busy (a hog on CPU 0), CPU 1 and core 1 (CPUs 2, 3) idle.
h0=$(hog 0)
kernel=$(wake_probes 3 0 0-3 3 2)
note "kernel: a probe from busy CPU 0 woke on CPUs $kernel"

start_lab
has "$(cat $LAB_LOG)" 'topology: 8 CPUs in 2 LLCs, 2 NUMA nodes, 4 cores \(SMT\)' ||
	fail "the daemon's topology line: $(grep topology: $LAB_LOG)"
note "ok: $(grep -o 'topology: .*' $LAB_LOG)"
# (CPU 0's hog gone a second ago: its utilisation, which would make core 0 the busier one, has
# decayed, as in the kernel's run above, which had none.)
kill $h0
sleep 1
b=$(counters select_fork fork_idlest)
fork=$(fork_probes 9 0 0-7)
h2=$(hog 2)
fork2=$(fork_probes 9 0 0-7)
kill $h2
a=$(counters select_fork fork_idlest)
note "lab: forks from CPU 0 started on CPUs $fork; with a hog on CPU 2, on $fork2 ($(delta "$b" "$a" 1) forks placed, $(delta "$b" "$a" 2) levels took the idlest group)"
check "lab: most forks from CPU 0 start on the idle core (CPUs 2, 3)" [ "$(count_in "$fork" 2 3)" -ge 5 ]
check "lab: with a hog on CPU 2, most start on core 0 (CPUs 0, 1)" [ "$(count_in "$fork2" 0 1)" -ge 5 ]
check "lab: the forks' descent took idlest groups" [ "$(delta "$b" "$a" 2)" -gt 0 ]
h0=$(hog 0)
F="sis_idle_core sis_smt idle_core_set sis_idle_core_none"
b=$(counters $F)
lab=$(wake_probes 3 0 0-3 3 2)
a=$(counters $F)
note "lab: a probe from busy CPU 0 woke on CPUs $lab; idle core found $(delta "$b" "$a" 1), idle cores set $(delta "$b" "$a" 3), none found $(delta "$b" "$a" 4)"
check "lab: most probes go to the idle core (CPUs 2, 3), not to CPU 1" [ "$(count_in "$lab" 2 3)" -ge 2 ]
check "lab: CPUs going idle beside idle siblings set the LLC's idle-core hint" [ "$(delta "$b" "$a" 3)" -gt 0 ]
check "lab: the wakeup scan found an idle core" [ "$(delta "$b" "$a" 1)" -gt 0 ]

# Cores 0 and 1 busy but CPU 1 idle: the idle sibling of the previous CPU. Three hogs in the LLC
# make SIS_UTIL count it as overloaded, which stops select_idle_cpu() (not select_idle_smt())
# while a stale has_idle_cores hint sends the wakeup there: NO_SIS_UTIL keeps that out of it.
scx_eevdf_lab features NO_SIS_UTIL >/dev/null || fail "cannot set NO_SIS_UTIL"
h2=$(hog 2) h3=$(hog 3)
sleep 0.5
b=$(counters $F)
lab=$(wake_probes 3 0 0-3)
a=$(counters $F)
note "lab: with CPUs 0, 2, 3 busy, probes woke on CPUs $lab; idle sibling $(delta "$b" "$a" 2), idle core scans that found none $(delta "$b" "$a" 4)"
check "lab: with no idle core, most probes go to CPU 1, the sibling of their busy CPU" [ "$(count_in "$lab" 1)" -ge 2 ]
scx_eevdf_lab features SIS_UTIL >/dev/null
kill $h0 $h2 $h3
check "still attached" lab_attached
stop_lab
