# Group weights (cpu.weight) and 7.3's cgroup modes, the lab against the kernel in the same boot.
#  - Two cgroups of cpu.weight 100 and 300, each with a hog pinned to CPU 2 and one to CPU 3: each
#    CPU is shared 1:3 between the groups' hogs, under the lab within 5 % (relative) of 25/75, as
#    under the kernel. Measured with cgroup_mode=smp on both: under concur (and tasks) a group's
#    factor min(tg_tasks(), CPUs) is its runnable average over 1024, rounded down, and two
#    always-runnable tasks average 2046 to 2048 -- the factor flips between 1 and 2 on a rounding,
#    in the kernel as in the lab, and the two groups need not flip together.
#  - Every cgroup_mode: cgroup g (cpu.weight 100) has a hog pinned to CPU 2 and one to CPU 3; a
#    root-group hog shares CPU 3 with g's. g's share of CPU 3 follows from its entity's weight
#    there: up (tg->shares, 1024) 50 %, smp (the load-proportional half, 512) 33 %, max (4 CPUs x
#    512) 67 %, concur and tasks 33 % or 50 % by the rounding above. The lab's share is within 5 %
#    (relative) of the kernel's, for each mode the kernel has (7.3: all five; 7.2, which has no
#    cgroup_mode, against the lab's smp: 7.2's hierarchical queues give g's entity the same
#    load-proportional shares) -- except concur and tasks, where each side may land on either
#    value of the rounding: the lab's share must be one of the two (33 % or 50 %, within 5 %),
#    the kernel's is shown beside it (one run had the kernel at 33 % and the lab at 50 %).
#  - A cpuset (7.3): with g confined to CPUs 2-3 (cpuset.cpus), max counts 2 CPUs instead of 4
#    (tg_cpus() is cpuset_num_cpus()): g's entity weighs 2 x 512 on CPU 3 and gets 50 % of it. The
#    cpuset is written while the hogs run (their pinned masks do not change), so the lab must read
#    it on its own. The lab's share is within 5 % (relative) of the kernel's.
# Autogroup is turned off for the test: the kernel would give each session's root-group tasks a
# group of their own, which sched_ext does not see (README, "Groups").
#
# Timing boot: the shares are guest time. Windows of 1 s after 0.6 s of settling (the group
# averages' half-life is 32 ms; the group sums are pushed at most once a millisecond).
# boot: timing
# kernels: all
. ./lib.sh

CG=/sys/fs/cgroup
WINDOW=1
SETTLE=0.6
HOGS=
AG=/proc/sys/kernel/sched_autogroup_enabled
ag0=$(cat $AG 2>/dev/null || echo)
KMODE=/sys/kernel/debug/sched/cgroup_mode
kmode0=$(cat $KMODE 2>/dev/null | sed -n 's/.*(\(.*\)).*/\1/p')
cpuset0=$(grep -qw cpuset $CG/cgroup.subtree_control && echo on || echo off)

cleanup() {
	stop_hogs
	for g in a b g; do rmdir $CG/$g 2>/dev/null; done
	[ -n "$ag0" ] && echo "$ag0" >$AG
	[ -n "$kmode0" ] && echo "$kmode0" >$KMODE 2>/dev/null
	[ "$cpuset0" = off ] && echo -cpuset >$CG/cgroup.subtree_control 2>/dev/null
}
trap cleanup EXIT

grep -qw cpu $CG/cgroup.controllers || fail "no cpu controller in $CG"
echo +cpu >$CG/cgroup.subtree_control || fail "cannot enable the cpu controller"
[ -n "$ag0" ] && echo 0 >$AG
for g in a b g; do mkdir -p $CG/$g || fail "mkdir $CG/$g"; done
echo 100 >$CG/a/cpu.weight && echo 300 >$CG/b/cpu.weight && echo 100 >$CG/g/cpu.weight ||
	fail "cannot write cpu.weight"

# weights SETMODE OUT: the 100 / 300 groups under smp; OUT gets CPU 2's and CPU 3's share of a.
weights() {
	$1 smp || fail "cannot set cgroup_mode=smp ($1)"
	shift
	hog 2 a; a2=$HOG; hog 2 b; b2=$HOG; hog 3 a; a3=$HOG; hog 3 b; b3=$HOG
	sleep $SETTLE
	{ share $a2 $b2; share $a3 $b3; } >"$1"
	stop_hogs
}

# modes SCHED OUT: g's share of CPU 3 under each mode (set by SETMODE), one "mode share" a line.
modes() {
	hog 2 g; hog 3 g; g3=$HOG; hog 3; r3=$HOG
	: >"$2"
	for m in $MODES; do
		$1 "$m" || fail "cannot set cgroup_mode=$m ($1)"
		echo "$m $(share $g3 $r3)" >>"$2"
	done
	if [ -n "$CPUSET" ]; then
		echo 2-3 >$CG/g/cpuset.cpus || fail "cannot write g's cpuset.cpus"
		$1 max || fail "cannot set cgroup_mode=max ($1)"
		echo "cpuset $(share $g3 $r3)" >>"$2"
		echo >$CG/g/cpuset.cpus
	fi
	stop_hogs
}
kernel_mode() { [ -w $KMODE ] || return 0; echo "$1" >$KMODE; }
lab_mode() { scx_eevdf_lab set cgroup_mode="$1" >/dev/null 2>&1; }

MODES=smp CPUSET=
[ -w $KMODE ] && MODES="up smp concur max tasks"
if [ -w $KMODE ] && grep -qw cpuset $CG/cgroup.controllers; then
	echo +cpuset >$CG/cgroup.subtree_control || fail "cannot enable the cpuset controller"
	CPUSET=yes
fi

weights kernel_mode /tmp/w.kernel
modes kernel_mode /tmp/m.kernel
[ -n "$kmode0" ] && echo "$kmode0" >$KMODE
start_lab
weights lab_mode /tmp/w.lab
modes lab_mode /tmp/m.lab
check "still attached" lab_attached
counters cgroup_init cgroup_move cgroup_flattened | { read -r i m f; note "cgroups given a group $i, task moves $m, counted as their parent $f"; }
stop_lab

close() { awk -v a="$1" -v b="$2" 'BEGIN {e = a / b - 1; if (e < 0) e = -e; exit !(e <= 0.05)}'; }
either() { close "$1" 0.33333 || close "$1" 0.5; }
pct() { awk -v x="$1" 'BEGIN {printf "%.1f %%", 100 * x}'; }
# Everything is printed before the checks.
for c in 1 2; do
	l=$(sed -n ${c}p /tmp/w.lab) k=$(sed -n ${c}p /tmp/w.kernel)
	note "cpu.weight 100 vs 300 on CPU $((c + 1)): the 100 group's share: lab $(pct $l), kernel $(pct $k) (expected 25 %)"
done
[ -w $KMODE ] || note "this kernel has no cgroup_mode: its hierarchical shares against the lab's smp"
for m in $MODES; do
	l=$(awk -v m=$m '$1 == m {print $2}' /tmp/m.lab) k=$(awk -v m=$m '$1 == m {print $2}' /tmp/m.kernel)
	note "cgroup_mode=$m: g's share of CPU 3: lab $(pct $l), kernel $(pct $k)"
done
if [ -n "$CPUSET" ]; then
	l=$(awk '$1 == "cpuset" {print $2}' /tmp/m.lab) k=$(awk '$1 == "cpuset" {print $2}' /tmp/m.kernel)
	note "cgroup_mode=max, g's cpuset 2-3: g's share of CPU 3: lab $(pct $l), kernel $(pct $k) (expected 50 %)"
fi
for c in 1 2; do
	check "lab: 1:3 on CPU $((c + 1)) within 5 %" close "$(sed -n ${c}p /tmp/w.lab)" 0.25
done
for m in $MODES; do
	l=$(awk -v m=$m '$1 == m {print $2}' /tmp/m.lab) k=$(awk -v m=$m '$1 == m {print $2}' /tmp/m.kernel)
	case $m in
	concur | tasks)
		check "lab: cgroup_mode=$m gives one of the rounding's two shares (33 % or 50 %)" \
			either "$l" ;;
	*) check "lab: cgroup_mode=$m within 5 % of the kernel" close "$l" "$k" ;;
	esac
done
if [ -n "$CPUSET" ]; then
	check "lab: cgroup_mode=max with a 2-CPU cpuset within 5 % of the kernel" \
		close "$(awk '$1 == "cpuset" {print $2}' /tmp/m.lab)" "$(awk '$1 == "cpuset" {print $2}' /tmp/m.kernel)"
else
	note "no cpuset case: this kernel has no cgroup_mode or no cpuset controller"
fi
