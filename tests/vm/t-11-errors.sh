# Bad input and a busy kernel give one clear error line and change nothing.
# kernels: all
. ./lib.sh

out=$(scx_eevdf_lab --features NO_SUCH_FLAG 2>&1); rc=$?
check "unknown start feature is refused" [ $rc -ne 0 ]
echo "$out" | grep -q "unknown feature NO_SUCH_FLAG" || fail "message: $out"
check "nothing attached after a refused start" [ "$(scx_state)" = disabled ]

out=$(scx_eevdf_lab get base_slice_ns 2>&1); rc=$?
check "the CLI says plainly that no scheduler runs" [ $rc -ne 0 ]
echo "$out" | grep -q "no scx_eevdf_lab scheduler is running" || fail "message: $out"
# Without the lab, features shows the kernel's own line (and says so on stderr), and
# diff-kernel shows that line with nothing to compare (exit status 2).
out=$(scx_eevdf_lab features 2>/tmp/features.err); rc=$?
check "features without the lab shows the kernel's line" [ $rc -eq 0 ]
[ "$(echo "$out" | sed 's/ *$//')" = "$(sed 's/ *$//' /sys/kernel/debug/sched/features)" ] ||
	fail "features: $out"
grep -q "no scx_eevdf_lab scheduler is running" /tmp/features.err || fail "note: $(cat /tmp/features.err)"
out=$(scx_eevdf_lab diff-kernel 2>/dev/null); rc=$?
check "diff-kernel without the lab exits 2 (nothing compared)" [ $rc -eq 2 ]
echo "$out" | grep -q "^kernel: PLACE_LAG" || fail "diff-kernel: $out"

out=$(scx_eevdf_lab --set base_slice_ns=5 2>&1); rc=$?
check "out-of-range tunable is refused" [ $rc -ne 0 ]
echo "$out" | grep -q "out of range" || fail "message: $out"

out=$(su nobody -s /bin/sh -c 'scx_eevdf_lab' 2>&1); rc=$?
check "not root is refused" [ $rc -ne 0 ]
echo "$out" | grep -q "must run as root" || fail "message: $out"

start_lab
out=$(scx_eevdf_lab 2>&1); rc=$?
check "a second daemon is refused" [ $rc -ne 0 ]
echo "$out" | grep -q "another sched_ext scheduler is attached: eevdf_lab" || fail "message: $out"
check "the first one is still attached" lab_attached
stop_lab
