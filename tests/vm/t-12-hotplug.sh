# CPU hotplug: the kernel asks the scheduler to restart when a CPU goes offline or online; the
# daemon reloads itself (enable_seq moves), keeps the live feature changes and, like the kernel's
# update_sysctl(), re-derives base_slice_ns from the normalized slice for the new CPU count.
# kernels: all
. ./lib.sh

# wait_reload SEQ EVENT: wait until sched_ext was enabled again since enable_seq SEQ.
wait_reload() {
	n=0
	while [ "$(cat $SCX/enable_seq)" = "$1" ] || [ "$(scx_state)" != enabled ]; do
		sleep 0.5; n=$((n + 1))
		[ $n -lt 600 ] || fail "no reload within 300 s after $2 (state $(scx_state))"
	done
}

[ -w /sys/devices/system/cpu/cpu3/online ] || fail "cpu3 cannot be taken offline in this VM"
start_lab --features NO_DELAY_ZERO
seq0=$(cat $SCX/enable_seq)
scx_eevdf_lab set base_slice_ns=3000000 >/dev/null 2>&1 || fail "set base_slice_ns"

echo 0 >/sys/devices/system/cpu/cpu3/online || fail "offlining cpu3"
wait_reload "$seq0" "cpu3 went offline"
check "the daemon reloaded after cpu3 went offline" lab_attached
check "the restart was logged" grep -q "asked for a restart" "$LAB_LOG"
stress-ng --cpu 4 --pipe 2 --pipe-data-size 512 --timeout 5 >/dev/null 2>&1 || fail "stress with 3 CPUs"
seq1=$(cat $SCX/enable_seq)

echo 1 >/sys/devices/system/cpu/cpu3/online || fail "onlining cpu3"
wait_reload "$seq1" "cpu3 came back"
check "the daemon reloaded after cpu3 came back" lab_attached
check "the live feature change survived the restarts" sh -c 'scx_eevdf_lab features | grep -q NO_DELAY_ZERO'
check "base_slice_ns is re-derived for 4 CPUs (0.7 ms x 3), as the kernel does" \
	[ "$(scx_eevdf_lab get base_slice_ns)" = 2100000 ]
check "the re-derivation was logged" grep -q "update_sysctl" "$LAB_LOG"
stress-ng --cpu 4 --pipe 2 --pipe-data-size 512 --timeout 5 >/dev/null 2>&1 || fail "stress with 4 CPUs"
check "still attached" lab_attached
stop_lab
