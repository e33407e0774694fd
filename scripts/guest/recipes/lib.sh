# What the recipes share. Sourced: . "$(dirname "$0")/lib.sh"
# shellcheck shell=sh

# start_lab: start the scheduler in the background (its pid in $lab, its output in /tmp/lab.log)
# and wait until it is attached and its knobs are pinned; exit 1 with its log when it does not
# get there within 300 s (loading and verifying take 40-160 s under emulation).
start_lab() {
	scx_eevdf_lab >/tmp/lab.log 2>&1 &
	lab=$!
	n=0
	while [ "$(cat /sys/kernel/sched_ext/state)" != enabled ] || [ ! -e /sys/fs/bpf/scx_eevdf_lab/knobs ]; do
		sleep 0.2; n=$((n + 1))
		if [ $n -gt 1500 ] || ! kill -0 "$lab" 2>/dev/null; then cat /tmp/lab.log; exit 1; fi
	done
}
