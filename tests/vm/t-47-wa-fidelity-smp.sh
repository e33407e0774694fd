# Wake-affine fidelity on the multi-level shape (two NUMA nodes of two SMT cores): WA_WEIGHT's and
# WA_IDLE's effects on messaging time with 1 and with 4 groups, the lab's against the kernel's in
# one session (lib.sh's wa_fidelity() has the bars). A timing boot of that shape: the arms are
# compared. Known deviations, judged by the band alone (README, wake-affine): WA_IDLE with 1
# group, where the lab's effect is larger than the kernel's, and WA_WEIGHT with 1 group, where it
# is smaller (the intervals met in four boots of five).
# Not in the default suite (# suite: manual): its boot took 775 s on its own and over 1,000 s
# beside the other lane on a 2-core host, too much of CI's time for four fidelity rows, two of
# them known deviations; `scripts/test --kernel 7.3 --only t-47-wa-fidelity-smp.sh` runs it.
# boot: smp-timing
# suite: manual
. ./lib.sh

[ "$(nproc)" = 8 ] || fail "this test needs the smp boot's 8 CPUs, not $(nproc)"
wa_fidelity 5 WA_IDLE:1 WA_WEIGHT:1
