# Observability and the kernel comparison:
#  - `--match-kernel` starts from the kernel's debugfs settings (here changed first: NO_DELAY_ZERO
#    and base_slice_ns=3000000; restored at the end), so `diff-kernel` prints "(no differences)"
#    and exits 0; after a live change it lists exactly the changed feature and tunable, exit 1;
#  - `--stats 1` prints the stats every second while the scheduler runs;
#  - `--monitor 1` and `monitor --json` work as clients of the running scheduler; an unknown
#    `--field` is refused;
#  - `--help-stats` describes every field the monitor reports.
# kernels: all
. ./lib.sh

DBG=/sys/kernel/debug/sched
slice0=$(cat $DBG/base_slice_ns)
restore_kernel() { echo DELAY_ZERO >$DBG/features; echo "$slice0" >$DBG/base_slice_ns; }
trap restore_kernel EXIT
echo NO_DELAY_ZERO >$DBG/features || fail "cannot write $DBG/features"
echo 3000000 >$DBG/base_slice_ns || fail "cannot write $DBG/base_slice_ns"

start_lab --match-kernel --stats 1
sleep 2.5
n=$(grep -c "^dispatch " "$LAB_LOG")
check "--stats 1 printed the stats while running ($n samples in 2.5 s)" [ "$n" -ge 2 ]
grep -A2 -m1 "^dispatch " "$LAB_LOG" | sed 's/^/  stats| /'

# --- diff-kernel -----------------------------------------------------------------------------
out=$(scx_eevdf_lab diff-kernel); rc=$?
echo "$out" | sed 's/^/  diff| /'
check "--match-kernel took the kernel's settings: diff-kernel exits 0" [ $rc -eq 0 ]
check "diff-kernel says (no differences)" has "$out" '^\(no differences\)$'
check "the lab runs NO_DELAY_ZERO like the kernel" has "$(scx_eevdf_lab features)" ' NO_DELAY_ZERO '
check "the lab runs base_slice_ns=3000000 like the kernel" [ "$(scx_eevdf_lab get base_slice_ns)" = 3000000 ]
scx_eevdf_lab features DELAY_ZERO 2>/dev/null && scx_eevdf_lab set base_slice_ns=2100000 2>/dev/null ||
	fail "cannot change the lab's knobs"
out=$(scx_eevdf_lab diff-kernel); rc=$?
echo "$out" | sed 's/^/  diff| /'
check "after a change diff-kernel exits 1" [ $rc -eq 1 ]
check "it lists DELAY_ZERO on (lab) vs off (kernel)" has "$out" '^DELAY_ZERO +on +off$'
check "it lists base_slice_ns 2100000 (lab) vs 3000000 (kernel)" has "$out" '^base_slice_ns +2100000 +3000000$'
check "and nothing else (a header and two rows)" [ "$(echo "$out" | wc -l)" -eq 3 ]

# --- clients ---------------------------------------------------------------------------------
scx_eevdf_lab --monitor 1 >/tmp/mon.out 2>&1 &
mon=$!
sleep 2.5
kill -INT $mon
wait $mon; rc=$?
n=$(grep -c "^picks " /tmp/mon.out)
check "--monitor 1 printed samples as a client ($n in 2.5 s)" [ "$n" -ge 2 ]
check "--monitor exits 0 on SIGINT ($rc)" [ $rc -eq 0 ]

scx_eevdf_lab monitor --json --count 2 0.5 >/tmp/mon.json || fail "monitor --json failed"
head -c 300 /tmp/mon.json | sed 's/^/  json| /'; echo
check "monitor --json --count 2 printed two JSON objects" [ "$(grep -c '^{"interval_s":.*"cpus":{.*}}$' /tmp/mon.json)" -eq 2 ]
d1=$(sed -n 1p /tmp/mon.json | sed 's/.*"dispatches":\([0-9]*\).*/\1/')
i2=$(sed -n 2p /tmp/mon.json | sed 's/^{"interval_s":\([0-9.]*\).*/\1/')
check "the first sample counts since attach (dispatches $d1 > 0)" [ "$d1" -gt 0 ]
check "the second covers about the interval (interval_s $i2)" awk -v i="$i2" 'BEGIN {exit !(i > 0.2 && i < 5)}'
check "every CPU's queue is in the sample" \
	[ "$(sed -n 1p /tmp/mon.json | grep -o '"[0-9]*":{"avg_vruntime"' | wc -l)" -eq "$(nproc)" ]
out=$(scx_eevdf_lab monitor --count 1 --field no_such_counter 2>&1); rc=$?
check "an unknown --field is refused" [ $rc -ne 0 ]
check "with a clear message" has "$out" 'unknown stats field "no_such_counter"; fields: dispatches'
stop_lab

# --- --help-stats ----------------------------------------------------------------------------
scx_eevdf_lab --help-stats >/tmp/help-stats.out 2>&1 || fail "--help-stats failed: $(cat /tmp/help-stats.out)"
grep -E "^  (preempt_wakeup|scan_len_1|avg_vruntime) " /tmp/help-stats.out | sed 's/^/  help| /'
fields=$(sed -n 1p /tmp/mon.json | tr ',{' '\n\n' | sed -n 's/^"\([a-z_][a-z_0-9]*\)":.*/\1/p' | sort -u)
missing=
for c in $fields; do
	grep -Eq "^  $c +\([^)]*\) +: [a-zA-Z]" /tmp/help-stats.out || missing="$missing $c"
done
note "$(echo $fields | wc -w) fields in the monitor's JSON"
check "--help-stats describes every one of them${missing:+ (missing:$missing)}" [ -z "$missing" ]
