# Attach, schedule a 30 s stress mix, detach on SIGINT. (Every later test of the boot attaches
# again after a detach.)
# kernels: all
. ./lib.sh

start_lab
check "state is enabled" [ "$(scx_state)" = enabled ]
seq0=$(cat $SCX/enable_seq)
stress_mix 30 || { cat /tmp/stress.log; fail "stress-ng failed"; }
grep -q "successful run completed" /tmp/stress.log || { cat /tmp/stress.log; fail "a stressor did not finish"; }
check "still attached after 30 s of stress (no watchdog ejection)" lab_attached
check "no reload during the run" [ "$(cat $SCX/enable_seq)" = "$seq0" ]
stop_lab
check "SIGINT returns the state to disabled with exit code 0" [ "$(scx_state)" = disabled ]
check "the knobs pin is removed" [ ! -e /sys/fs/bpf/scx_eevdf_lab/knobs ]
