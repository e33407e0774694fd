# The bench's cgroups: a composite of two hog-probe workloads, each in a cgroup of its own
# (cpu.weight 100 and 300), on CPU 3, under an eevdf and a lab arm (one attach):
#  - while it runs, the groups exist under /sys/fs/cgroup/scx_eevdf_lab.bench with their
#    weights, every thread of each part is in its group, and neither the bench nor the scheduler
#    it started is in one; the cpu controller is on in the root's subtree_control;
#  - each part reports its own metrics (light/... and heavy/...) for both arms, and the report
#    shows each part's group and weight; under the kernel's EEVDF and under the lab the heavier
#    group's hog gets more of the CPU (the weights took effect: the threads are in their groups,
#    and the lab follows them). One CPU: on two, where the hogs of each group land decides the
#    ratio as much as the weights do (1.35 to 4.05 over three boots);
#  - afterwards the groups and the bench's folder are gone and the root's subtree_control reads
#    as before; the same after SIGTERM in the middle of a run;
#  - a bench killed with SIGKILL in the middle of a run (worker processes left running in its
#    groups) leaves its groups; `scx_eevdf_lab restore` kills what runs in them, removes them and
#    puts the root's subtree_control back.
. ./lib.sh

CG=/sys/fs/cgroup
BD=$CG/scx_eevdf_lab.bench
JOURNAL=/run/scx_eevdf_lab/bench.journal

awk -v d=$CG '$2 == d && $3 == "cgroup2" { ok = 1 } END { exit !ok }' /proc/mounts ||
	fail "cgroup v2 is not mounted at $CG"
grep -qw cpu $CG/cgroup.controllers || fail "no cpu controller in $CG/cgroup.controllers"
[ ! -e $BD ] || fail "$BD exists before the test"
sub0=$(cat $CG/cgroup.subtree_control)
note "root subtree_control before: '${sub0}'"

# wait_for TENTHS COMMAND...: poll until COMMAND succeeds.
wait_for() {
	n=$1; shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.1; n=$((n - 1))
	done
	return 1
}

# lines FILE: how many lines FILE has (0 when it cannot be read).
lines() { if [ -r "$1" ]; then wc -l <"$1"; else echo 0; fi; }

# in_root PID: the process is in the root cgroup.
in_root() { [ "$(cat /proc/$1/cgroup)" = "0::/" ]; }

cleaned() {
	[ ! -e $BD ] || { note "left: $(ls $BD)"; return 1; }
	[ "$(cat $CG/cgroup.subtree_control)" = "$sub0" ] ||
		{ note "subtree_control: '$(cat $CG/cgroup.subtree_control)'"; return 1; }
	[ ! -e $JOURNAL ]
}

# --- 1. a session of two parts in cgroups, eevdf and lab ------------------------------------
W='hog-probe:probes=1:cgroup=light:cpu_weight=100+hog-probe:probes=1:cgroup=heavy:cpu_weight=300'
taskset -c 3 scx_eevdf_lab bench eevdf lab -w "$W" --quick -n 1 --window 3 --seed 3 --no-plots \
	--out /tmp/c1 >/tmp/c1.out 2>/tmp/c1.err &
pid=$!
# A run is going on when both groups hold the threads of a part: its process, a hog (one per
# allowed CPU) and a probe.
running() { [ "$(lines $BD/light/cgroup.threads)" -ge 3 ] && [ "$(lines $BD/heavy/cgroup.threads)" -ge 3 ]; }
wait_for 3000 running || { kill $pid; tail -n 20 /tmp/c1.err; fail "the parts never ran in their groups"; }
check "the groups have their weights" \
	[ "$(cat $BD/light/cpu.weight) $(cat $BD/heavy/cpu.weight)" = "100 300" ]
check "the cpu controller is on in the root and the bench's folder" \
	sh -c "grep -qw cpu $CG/cgroup.subtree_control && grep -qw cpu $BD/cgroup.subtree_control"
# Every thread of a part's process is in its group (cgroup v2 moves whole processes: the part's
# process started there before it made its threads).
for g in light heavy; do
	p=$(head -n 1 $BD/$g/cgroup.procs)
	[ -n "$p" ] || fail "no process in $g"
	for t in /proc/$p/task/*; do
		[ "$(cat $t/cgroup 2>/dev/null || echo '0::/scx_eevdf_lab.bench/'$g)" = "0::/scx_eevdf_lab.bench/$g" ] ||
			fail "thread ${t##*/} of part $g is in $(cat $t/cgroup)"
	done
	note "ok: part $g: process $p, its $(ls /proc/$p/task | wc -l) threads in $BD/$g"
done
check "the bench is not in a group" in_root $pid
# The scheduler the bench starts for the lab arm (before or after this run).
lab_running() { running && [ "$(scx_state)" = enabled ]; }
wait_for 3000 lab_running || { kill $pid; tail -n 20 /tmp/c1.err; fail "no lab run seen"; }
sched=
for d in /proc/[0-9]*; do
	case "$({ tr '\0' ' ' <$d/cmdline; } 2>/dev/null)" in
	*"scx_eevdf_lab --features"*) sched=${d#/proc/} ;;
	esac
done
[ -n "$sched" ] || fail "the lab scheduler's process was not found"
check "the lab scheduler (pid $sched) is not in a group" in_root $sched
wait $pid; rc=$?
[ $rc -eq 0 ] || { tail -n 30 /tmp/c1.err; cat /tmp/c1.out; fail "bench exited with $rc"; }
grep -v -- '-+-' /tmp/c1.out | sed -n '/^hog-probe/,/^| runs valid/p' | sed 's/^/  table| /'
check "the groups, the bench's folder and the controller are gone afterwards" cleaned
v=$(scx_eevdf_lab bench --validate /tmp/c1/bench.json) || fail "bench.json: $v"
echo "$v" | grep -q "(2 valid measured)" || { grep -A3 "Invalid runs" /tmp/c1.out; fail "not every run was valid: $v"; }
check "the report shows each part's group and weight" \
	sh -c "grep -q '  light: hog-probe — .*; cgroup light, cpu.weight 100' /tmp/c1.out &&
		grep -q '  heavy: hog-probe — .*; cgroup heavy, cpu.weight 300' /tmp/c1.out"
grep -q '"cpu_weight": 300' /tmp/c1/bench.json || fail "bench.json does not record the weights"
# value ARM METRIC: the arm's measured value of METRIC (runs.csv).
value() {
	bench_csv /tmp/c1/runs.csv | awk -F, -v a="$1" -v m="$2" \
		'$3 == a && $5 == "false" && $6 == "true" && $7 == m { print $8; exit }'
}
for a in eevdf lab; do
	for m in light/hog_iters_per_s heavy/hog_iters_per_s light/lateness_p99_us heavy/lateness_p99_us; do
		[ -n "$(value $a $m)" ] || fail "arm $a has no $m"
	done
	r=$(awk -v h="$(value $a heavy/hog_iters_per_s)" -v l="$(value $a light/hog_iters_per_s)" \
		'BEGIN { printf "%.2f", h / l }')
	note "$a: heavy/light hog iterations $r (weights 300:100)"
	eval "ratio_$a=$r"
done
note "ok: each part reports its own metrics under both arms"
awk -v r="$ratio_eevdf" 'BEGIN { exit !(r > 1.5) }' ||
	fail "under the kernel's EEVDF the heavier group's hog did not get more CPU ($ratio_eevdf)"
awk -v r="$ratio_lab" 'BEGIN { exit !(r > 1.5) }' ||
	fail "under the lab the heavier group's hog did not get more CPU ($ratio_lab)"
note "ok: the heavier group's hog got more CPU under both arms"

# --- 2. SIGTERM in the middle of a run -----------------------------------------------------
scx_eevdf_lab bench eevdf -w 'pingpong:cgroup=a:cpu_weight=50' --quick -n 1 --window 30 \
	--no-plots --out /tmp/c2 >/tmp/c2.out 2>/tmp/c2.err &
pid=$!
wait_for 600 sh -c "[ \$(wc -l <$BD/a/cgroup.threads) -ge 3 ]" 2>/dev/null ||
	{ kill $pid; tail -n 20 /tmp/c2.err; fail "SIGTERM: the part never ran"; }
sleep 0.3
kill -TERM $pid
wait $pid; rc=$?
[ $rc -eq 130 ] || { tail -n 20 /tmp/c2.err; fail "SIGTERM: bench exited with $rc (want 130)"; }
check "SIGTERM: the groups, the bench's folder and the controller are gone" cleaned

# --- 3. SIGKILL in the middle of a run, then restore ---------------------------------------
# Worker processes (--processes) outlive the part's process, which dies with the bench: they keep
# running in the groups until restore kills them.
scx_eevdf_lab bench eevdf -w 'pingpong:cgroup=a:cpu_weight=200+pipe-stream:cgroup=b' --processes \
	--quick -n 1 --window 30 --no-plots --out /tmp/c3 >/tmp/c3.out 2>/tmp/c3.err &
pid=$!
wait_for 600 sh -c "[ \$(wc -l <$BD/a/cgroup.procs) -ge 3 ] && [ \$(wc -l <$BD/b/cgroup.procs) -ge 3 ]" 2>/dev/null ||
	{ kill $pid; tail -n 20 /tmp/c3.err; fail "SIGKILL: the parts never ran"; }
grep -q "scx_eevdf_lab.bench/b" $JOURNAL || fail "the journal does not name the groups: $(cat $JOURNAL)"
sleep 0.3
kill -KILL $pid; wait $pid 2>/dev/null
sleep 0.5
left=$(($(lines $BD/a/cgroup.procs) + $(lines $BD/b/cgroup.procs)))
note "after SIGKILL: groups $(cd $BD && ls -d */ | tr '\n' ' ')with $left process(es) left in them"
[ -d $BD/a ] && [ "$left" -gt 0 ] || fail "the killed bench left no group or nothing running in one"
out=$(scx_eevdf_lab restore 2>&1); rc=$?
echo "$out" | sed 's/^/  restore| /'
check "restore exits 0" [ $rc -eq 0 ]
echo "$out" | grep -q "killed [0-9]* leftover process(es) in $BD/" || fail "restore killed nothing"
note "ok: restore killed what ran in the groups"
check "restore removed the groups, the bench's folder and put the controller back" cleaned
