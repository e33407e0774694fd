# The stress smoke with every feature on (the kernel's and the lab's own knobs, also the ones that
# are off by default), then with every feature off, both switched live: a 10 s stress-ng mix (cpu,
# fork, pipe, affinity) completes each time, the scheduler stays attached without a reload, and
# the features line says what was asked.
# lab: shared
. ./lib.sh

SECS=10

# smoke NAME: run the stress mix; every stressor must complete.
smoke() {
	seq0=$(cat $SCX/enable_seq)
	stress_mix $SECS || { cat /tmp/stress.log; fail "$1: stress-ng failed"; }
	grep -q "successful run completed" /tmp/stress.log || { cat /tmp/stress.log; fail "$1: a stressor did not finish"; }
	grep -E "^stress-ng: (info|metrc).*(cpu|fork|pipe|affinity) " /tmp/stress.log | sed "s/^/  $1| /"
	check "$1: every stressor completed and the scheduler is still attached" lab_attached
	check "$1: no reload during the run" [ "$(cat $SCX/enable_seq)" = "$seq0" ]
}

start_lab
orig=$(scx_eevdf_lab features)
all=$(feature_names)
off=$(for f in $all; do printf "NO_%s " "$f"; done)
note "$(echo $all | wc -w) features"
scx_eevdf_lab features $all 2>/dev/null || fail "cannot turn every feature on"
check "all on: the features line has no NO_ token" sh -c '! scx_eevdf_lab features | grep -q "NO_"'
smoke all-on
scx_eevdf_lab features $off 2>/dev/null || fail "cannot turn every feature off"
check "all off: every token of the features line is NO_" \
	sh -c '[ -z "$(scx_eevdf_lab features | tr " " "\n" | grep -v "^NO_" | grep .)" ]'
smoke all-off
note "counters since the lab attached:"
scx_eevdf_lab monitor --count 1 0.1 | sed 's/^/    /'
scx_eevdf_lab features $orig >/dev/null 2>&1 || fail "cannot put the features back"
stop_lab
