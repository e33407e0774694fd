# The preemption model as a live tunable (`preempt`, the kernel's resched_curr_lazy()):
#  - the lab starts with the kernel's current model (debugfs sched/preempt), `get preempt` shows
#    it in the kernel's word, a bad value is refused with the valid ones, and diff-kernel lists
#    preempt once the lab's differs from the kernel's;
#  - a hog on CPU 3 and a reader pinned there, woken through a pipe from CPU 2 (remote wakeups):
#    under preempt=lazy the reschedules those wakeups ask for are left for CPU 3's tick
#    (preempt_lazy moves) and the tick carries them out (preempt_lazy_tick moves); under
#    preempt=full both stay flat, switched live without a reload.
# It counts decisions, it does not time them: a functional boot.
# kernels: all
# lab: shared
. ./lib.sh

DBG=/sys/kernel/debug/sched
kernel_model=$(sed 's/.*(\(.*\)).*/\1/' $DBG/preempt)
note "kernel: $(cat $DBG/preempt)"

start_lab
check "the lab starts with the kernel's model ($kernel_model)" [ "$(scx_eevdf_lab get preempt)" = "$kernel_model" ]
err=$(scx_eevdf_lab set preempt=sometimes 2>&1); rc=$?
check "a bad model is refused with exit 2" [ $rc -eq 2 ]
check "the error lists the models" has "$err" 'none[|]voluntary[|]full[|]lazy'
check "nothing changed" [ "$(scx_eevdf_lab get preempt)" = "$kernel_model" ]
other=full; [ "$kernel_model" = full ] && other=lazy
scx_eevdf_lab set preempt=$other >/dev/null 2>&1 || fail "set preempt=$other failed"
out=$(scx_eevdf_lab diff-kernel); rc=$?
echo "$out" | sed 's/^/  diff| /'
check "diff-kernel exits 1" [ $rc -eq 1 ]
check "diff-kernel lists preempt ($other against $kernel_model)" has "$out" "^preempt .*$other.*$kernel_model"

F="preempt_lazy preempt_lazy_tick preempt_wakeup preempt_enqueue"
# load: a busy loop on CPU 3 (no syscalls: only its tick interrupts it) beside a reader of a
# pipe on CPU 3 that a writer on CPU 2 wakes 200 times.
load() {
	taskset -c 3 sh -c 'while :; do :; done' &
	hog=$!
	taskset -c 2 sh -c 'i=0; while [ $i -lt 200 ]; do echo x; sleep 0.01; i=$((i + 1)); done' |
		taskset -c 3 cat >/dev/null
	kill $hog; wait $hog 2>/dev/null
}
show() { note "$1: lazy $(delta "$2" "$3" 1) lazy-at-tick $(delta "$2" "$3" 2) wakeup $(delta "$2" "$3" 3) enqueue $(delta "$2" "$3" 4)"; }

scx_eevdf_lab set preempt=lazy >/dev/null 2>&1 || fail "set preempt=lazy failed"
seq0=$(cat $SCX/enable_seq 2>/dev/null || echo 0)
b=$(counters $F); load; a=$(counters $F); show "preempt=lazy" "$b" "$a"
check "lazy: remote wakeups leave their reschedule for the tick" [ "$(delta "$b" "$a" 1)" -gt 0 ]
check "lazy: the tick carries them out" [ "$(delta "$b" "$a" 2)" -gt 0 ]

scx_eevdf_lab set preempt=full >/dev/null 2>&1 || fail "set preempt=full failed"
b=$(counters $F); load; a=$(counters $F); show "preempt=full" "$b" "$a"
check "full: nothing is left for the tick" [ "$(delta "$b" "$a" 1)" -eq 0 ]
check "full: the tick carries nothing lazy out" [ "$(delta "$b" "$a" 2)" -eq 0 ]
check "full: the wakeups still preempt" [ $(($(delta "$b" "$a" 3) + $(delta "$b" "$a" 4))) -gt 0 ]
check "still attached" lab_attached
check "never reloaded (enable_seq $seq0)" [ "$(cat $SCX/enable_seq 2>/dev/null || echo 0)" = "$seq0" ]
stop_lab
