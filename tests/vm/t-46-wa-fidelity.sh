# Wake-affine fidelity on the flat VM (one LLC, 4 CPUs): WA_WEIGHT's and WA_IDLE's effects on
# messaging time with 1 and with 4 groups, the lab's against the kernel's in one session
# (lib.sh's wa_fidelity() has the bars). Timing boot: the arms are compared.
# Known deviation, shown and not judged: WA_WEIGHT with 4 groups, where the lab's effect is
# weaker than the kernel's (README, wake-affine).
# boot: timing
. ./lib.sh

wa_fidelity 5 WA_WEIGHT:4
