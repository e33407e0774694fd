# cpu.max and cpu.idle, the lab against the kernel in the same boot (cpu.max with the lab knob
# CPU_MAX on, as by default).
#  - cpu.max "20000 100000" on cgroup q, whose four hogs (two in each of its children q/x and
#    q/y: a throttle above a task's own group holds it) run on every CPU: the four together
#    get 20 % of one CPU, under the lab within 5 % (relative), as under the kernel. The lab's
#    counters show queues throttled and held tasks let back in.
#  - cpu.max "max" again, live: the hogs take their CPUs back under the lab.
#  - cpu.idle on cgroup i, whose hog shares CPU 3 with a root-group hog: i's share is an idle
#    group's (WEIGHT_IDLEPRIO against NICE_0_LOAD: 0.3 %), under 2 % under both.
#
# Timing boot: the shares are guest time (2 s windows: twenty 100 ms periods).
# boot: timing
# kernels: all
. ./lib.sh

CG=/sys/fs/cgroup
WINDOW=2
SETTLE=0.5
HOGS=
AG=/proc/sys/kernel/sched_autogroup_enabled
ag0=$(cat $AG 2>/dev/null || echo)

cleanup() {
	stop_hogs
	for g in q/x q/y q i; do rmdir $CG/$g 2>/dev/null; done
	[ -n "$ag0" ] && echo "$ag0" >$AG
}
trap cleanup EXIT

grep -qw cpu $CG/cgroup.controllers || fail "no cpu controller in $CG"
echo +cpu >$CG/cgroup.subtree_control || fail "cannot enable the cpu controller"
[ -n "$ag0" ] && echo 0 >$AG
mkdir -p $CG/q/x $CG/q/y $CG/i || fail "cannot make the cgroups"
echo +cpu >$CG/q/cgroup.subtree_control || fail "cannot enable the cpu controller in q"
[ -w $CG/i/cpu.idle ] || fail "no cpu.idle"

sum_exec() { s=0; for p in "$@"; do s=$((s + $(exec_ns $p))); done; echo $s; }

# The guest's clock in ns (/proc/uptime: 10 ms steps, 0.5 % of a window).
now_ns() { awk '{printf "%.0f\n", $1 * 1e9}' /proc/uptime; }
# cpu_of PIDS...: their CPU time over the window, in CPUs (1.0 = one CPU all along).
cpu_of() {
	sleep $SETTLE
	t0=$(now_ns) e0=$(sum_exec "$@")
	sleep $WINDOW
	t1=$(now_ns) e1=$(sum_exec "$@")
	awk -v e=$((e1 - e0)) -v t=$((t1 - t0)) 'BEGIN {printf "%.4f\n", e / t}'
}

# run OUT: the capped group's CPUs, then uncapped, then the idle group's share; one a line.
run() {
	echo "20000 100000" >$CG/q/cpu.max || fail "cannot write cpu.max"
	hog 0-3 q/x; a=$HOG; hog 0-3 q/x; b=$HOG; hog 0-3 q/y; c=$HOG; hog 0-3 q/y; d=$HOG
	{
		cpu_of $a $b $c $d
		echo max >$CG/q/cpu.max || fail "cannot write cpu.max max"
		cpu_of $a $b $c $d
	} >"$1"
	stop_hogs
	echo 1 >$CG/i/cpu.idle || fail "cannot write cpu.idle"
	hog 3 i; i3=$HOG; hog 3 ""; r3=$HOG
	share $i3 $r3 >>"$1"
	stop_hogs
	echo 0 >$CG/i/cpu.idle
}

# close A B [TOL]: A within TOL (relative; 0.05 unless given) of B.
close() { awk -v a="$1" -v b="$2" -v t="${3:-0.05}" 'BEGIN {e = a / b - 1; if (e < 0) e = -e; exit !(e <= t)}'; }
below() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a < b)}'; }
pct() { awk -v x="$1" 'BEGIN {printf "%.1f %%", 100 * x}'; }
L() { sed -n "$1p" /tmp/bw.lab; }
K() { sed -n "$1p" /tmp/bw.kernel; }

run /tmp/bw.kernel
# The kernel's capped figure is the reference's sanity check (below). 7.2 once gave 4.6 % in a
# CI-equivalent run and 20.1 % in the next boot of the same tree: a figure off by more than the
# tolerance is measured again, once, and both are shown.
if ! close "$(K 1)" 0.20 0.15; then
	note "kernel: the capped group got $(pct "$(K 1)") of a CPU; measuring the kernel again"
	run /tmp/bw.kernel
fi
start_lab
scx_eevdf_lab features CPU_MAX >/dev/null || fail "cannot turn CPU_MAX on"
run /tmp/bw.lab
check "still attached" lab_attached
counters bw_period bw_throttle bw_unthrottle limbo_held limbo_released limbo_forced >/tmp/bw.counters
stop_lab

read -r periods throttled unthrottled held released forced </tmp/bw.counters
note "lab: periods $periods, queues throttled $throttled, unthrottled $unthrottled; tasks held $held, let back $released (forced $forced)"
note "cpu.max 20000 100000, four hogs: lab $(pct "$(L 1)") of a CPU, kernel $(pct "$(K 1)") (expected 20 %)"
note "cpu.max max again: lab $(L 2) CPUs, kernel $(K 2) CPUs"
note "cpu.idle group beside a root hog on CPU 3: lab $(pct "$(L 3)"), kernel $(pct "$(K 3)")"
check "lab: the capped group gets 20 % of a CPU within 5 %" close "$(L 1)" 0.20
# The kernel's own figure is the reference's sanity check: 7.2's varies more than the lab's over
# twenty periods (17.5 to 21.1 % in five boots), so it is allowed 15 %.
check "kernel: the capped group gets 20 % of a CPU within 15 %" close "$(K 1)" 0.20 0.15
check "lab: uncapped, the hogs take more than two CPUs" below 2 "$(L 2)"
check "lab: the idle group's share is under 2 %" below "$(L 3)" 0.02
check "kernel: the idle group's share is under 2 %" below "$(K 3)" 0.02
check "lab: queues were throttled and unthrottled" below 0 "$((throttled < unthrottled ? throttled : unthrottled))"
check "lab: held tasks were let back" below 0 "$released"
check "lab: none needed the watchdog guard" [ "$forced" -eq 0 ]
