#!/bin/sh
# Guest side of scripts/profile: for each scheduler named, attach it (eevdf: the kernel's own
# fair class, nothing attached), print "LABPROF NAME.begin", run the workload, print
# "LABPROF NAME.end" (the host has the QEMU plugin write its block counts at each line), detach.
# The kernel's symbols go to /out: its BPF programs and trampolines per scheduler, while loaded.
#
#   sh /lab/profile.sh SCHED[,SCHED...] CMD [ARGS...]     SCHED: eevdf, lab or scx:NAME
set -u
. "$(dirname "$0")/recipes/lib.sh"	# start_lab
scheds=$1; shift
sysctl -qw net.core.bpf_jit_kallsyms=1
# The boot's own late work (key and certificate checks) ends first.
sleep 5
state() { cat /sys/kernel/sched_ext/state; }
wait_state() {
	i=0
	while [ "$(state)" != "$1" ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i + 1)); done
	[ "$(state)" = "$1" ] || { echo "profile: the scheduler did not reach '$1'" >&2; exit 1; }
}
# The host sees the line within some ms of its own; a busy loop in user space (whose blocks are
# not counted) keeps the workload from starting before the counts are written.
mark() {
	echo "LABPROF $1"
	i=0
	while [ $i -lt 100000 ]; do i=$((i + 1)); done
}
for s in $(echo "$scheds" | tr , ' '); do
	pid=
	case $s in
	eevdf) ;;
	lab) start_lab; pid=$lab ;;
	scx:*) "${s#scx:}" >"/out/${s#scx:}.log" 2>&1 & pid=$!; wait_state enabled ;;
	*) echo "profile: unknown scheduler $s" >&2; exit 2 ;;
	esac
	mark "$s.begin"
	"$@" >"/out/$s.workload" 2>&1 || { echo "profile: the workload failed under $s" >&2; exit 1; }
	mark "$s.end"
	cat "/out/$s.workload"
	# BPF programs and trampolines, which go with their scheduler.
	grep '\[bpf\]' /proc/kallsyms >"/out/$s.bpfsyms"
	[ -z "$pid" ] || { kill -INT "$pid"; wait "$pid"; wait_state disabled; }
done
grep -v '\[bpf\]' /proc/kallsyms >/out/kallsyms
