# Wake-affine CPU choice: on a waker/wakee load (hackbench threads, pipes and sockets) the
# wake_affine_weight() outcome counter moves with WA_WEIGHT and stays flat with NO_WA_WEIGHT;
# the wake_affine_idle() outcomes likewise with WA_IDLE / NO_WA_IDLE.
# lab: shared
. ./lib.sh

F="wa_idle_this wa_idle_prev wa_weight_this wa_prev wake_wide select"
load() { hackbench -g 2 -l 150 -T >/dev/null 2>&1 && hackbench -g 2 -l 150 -T -p >/dev/null 2>&1; }
show() { note "$1: idle-this $(delta "$2" "$3" 1) idle-prev $(delta "$2" "$3" 2) weight-this $(delta "$2" "$3" 3) prev $(delta "$2" "$3" 4) wide $(delta "$2" "$3" 5) of $(delta "$2" "$3" 6) wakeups"; }

start_lab
b=$(counters $F); load; a=$(counters $F); show "defaults" "$b" "$a"
check "defaults: wake_affine_weight() chooses the waker's CPU at times" [ "$(delta "$b" "$a" 3)" -gt 0 ]
check "defaults: wake_affine_idle() decides at times" [ $(($(delta "$b" "$a" 1) + $(delta "$b" "$a" 2))) -gt 0 ]

scx_eevdf_lab features NO_WA_WEIGHT >/dev/null 2>&1
b=$(counters $F); load; a=$(counters $F); show "NO_WA_WEIGHT" "$b" "$a"
check "NO_WA_WEIGHT: no weight decision" [ "$(delta "$b" "$a" 3)" -eq 0 ]
check "NO_WA_WEIGHT: the previous CPU is kept instead" [ "$(delta "$b" "$a" 4)" -gt 0 ]

scx_eevdf_lab features WA_WEIGHT NO_WA_IDLE >/dev/null 2>&1
b=$(counters $F); load; a=$(counters $F); show "NO_WA_IDLE" "$b" "$a"
check "NO_WA_IDLE: no idle decision" [ $(($(delta "$b" "$a" 1) + $(delta "$b" "$a" 2))) -eq 0 ]
check "NO_WA_IDLE: the weight rule decides more" [ "$(delta "$b" "$a" 3)" -gt 0 ]
scx_eevdf_lab features WA_IDLE >/dev/null 2>&1
check "still attached" lab_attached
stop_lab
