# cpu.idle groups count as idle tasks (h_nr_idle): a CPU that runs only tasks of a cpu.idle group
# is as good as idle to a wakee that is not (sched_idle_cpu() in select_idle_sibling()).
#  - A probe task on CPU 1, busy with a root-group hog, sleeps 1 s (a timer wakeup) allowed on
#    CPUs 1 and 3. CPU 3 runs one hog, in a cgroup with cpu.idle 1: the wakeup takes CPU 3. With
#    the hog in a normal cgroup instead, nothing is idle and the probe stays on CPU 1.
#  - The kernel's choices in the same boot are printed beside the lab's and must be the same.
# SIS_UTIL is off on both sides (three busy CPUs of four would stop the idle scan).
. ./lib.sh

CG=/sys/fs/cgroup
FEAT=/sys/kernel/debug/sched/features
HOGS=
cleanup() {
	stop_hogs
	rmdir $CG/idl $CG/nrm 2>/dev/null
	echo SIS_UTIL >$FEAT 2>/dev/null
}
trap cleanup EXIT

grep -qw cpu $CG/cgroup.controllers || fail "no cpu controller in $CG"
echo +cpu >$CG/cgroup.subtree_control || fail "cannot enable the cpu controller"
mkdir -p $CG/idl $CG/nrm || fail "mkdir"
echo 1 >$CG/idl/cpu.idle || fail "cannot write cpu.idle"
# This shell and what it runs stay on CPUs 0 and 2.
taskset -p -c 0,2 $$ >/dev/null

on3() { k=0; for x in $1; do [ "$x" = 3 ] && k=$((k + 1)); done; echo $k; }
# run OUT: probes with CPU 3's hog in idl, then in nrm; "idle CPUS" and "normal CPUS" in OUT.
run() {
	hog 1; hog 3 idl
	sleep 0.3
	echo "idle $(wake_probes 3 1 1,3)" >"$1"
	stop_hogs
	hog 1; hog 3 nrm
	sleep 0.3
	echo "normal $(wake_probes 3 1 1,3)" >>"$1"
	stop_hogs
}

echo NO_SIS_UTIL >$FEAT || fail "cannot set the kernel's NO_SIS_UTIL"
run /tmp/idle.kernel
echo SIS_UTIL >$FEAT
start_lab
scx_eevdf_lab features NO_SIS_UTIL >/dev/null 2>&1 || fail "cannot set NO_SIS_UTIL"
run /tmp/idle.lab
scx_eevdf_lab features SIS_UTIL >/dev/null 2>&1
check "still attached" lab_attached
stop_lab

ki=$(sed -n 's/^idle //p' /tmp/idle.kernel) kn=$(sed -n 's/^normal //p' /tmp/idle.kernel)
li=$(sed -n 's/^idle //p' /tmp/idle.lab) ln=$(sed -n 's/^normal //p' /tmp/idle.lab)
note "CPU 3 runs a cpu.idle group's hog: probes woke on CPUs: kernel $ki, lab $li"
note "CPU 3 runs a normal group's hog:   probes woke on CPUs: kernel $kn, lab $ln"
check "kernel: the wakeup takes the CPU of the idle group's hog" [ "$(on3 "$ki")" -ge 2 ]
check "lab: the wakeup takes the CPU of the idle group's hog, as the kernel" [ "$(on3 "$li")" -ge 2 ]
check "kernel: a normal group's hog keeps the probe on CPU 1" [ "$(on3 "$kn")" -le 1 ]
check "lab: a normal group's hog keeps the probe on CPU 1, as the kernel" [ "$(on3 "$ln")" -le 1 ]
