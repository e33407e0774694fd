# The fault and bad-input table of the README, one function per row: what a user can do wrong
# or what can go wrong around the daemon, and that the host is left as it was.
# T13_ROWS="input kill" runs some rows only (while developing a row).
. ./lib.sh

DBG=/sys/kernel/debug/sched
TMPD=/tmp/t13
mkdir -p $TMPD

# kernel_knobs: the built-in EEVDF's debugfs settings, one line.
kernel_knobs() {
	echo "$(cat $DBG/features) $(cat $DBG/base_slice_ns $DBG/migration_cost_ns $DBG/nr_migrate $DBG/tunable_scaling $DBG/preempt | tr '\n' ' ')"
}

# lab_knobs: the running lab's features, tunables and write count.
lab_knobs() { echo "$(scx_eevdf_lab features) $(scx_eevdf_lab get | tr '\n' ' ') seq=$(knob_seq)"; }

# --- malformed and oversized input to every subcommand -----------------------------------------
# Each is refused with exit status 2 and one line on stderr, prints nothing on stdout, and
# changes nothing: the kernel's debugfs knobs, the running lab's knobs, no files left behind.
row_input() {
	start_lab
	k0=$(kernel_knobs) l0=$(lab_knobs)
	big=$(head -c 100000 /dev/zero | tr '\0' A)
	cat >$TMPD/bad <<-EOF
	scx_eevdf_lab --features NO_SUCH
	scx_eevdf_lab --set base_slice_ns=10
	scx_eevdf_lab --stats 0
	scx_eevdf_lab --exit-dump-len x
	scx_eevdf_lab features NO_SUCH
	scx_eevdf_lab features DELAY_ZERO NO_ NO_DELAY_DEQUEUE
	scx_eevdf_lab features $big
	scx_eevdf_lab set base_slice_ns
	scx_eevdf_lab set nope=1
	scx_eevdf_lab set base_slice_ns=3000000 migration_cost_ns=x
	scx_eevdf_lab set base_slice_ns=99999999999999999999999
	scx_eevdf_lab set base_slice_ns=$big
	scx_eevdf_lab set
	scx_eevdf_lab get nope
	scx_eevdf_lab get $big
	scx_eevdf_lab diff-kernel extra
	scx_eevdf_lab monitor 0
	scx_eevdf_lab monitor 1e300
	scx_eevdf_lab monitor --count abc
	scx_eevdf_lab monitor --count 1 --field nope
	scx_eevdf_lab monitor --field $big
	scx_eevdf_lab bench nope
	scx_eevdf_lab bench eevdf:NO_SUCH lab
	scx_eevdf_lab bench eevdf,base_slice_ns=10
	scx_eevdf_lab bench lab,preempt=full
	scx_eevdf_lab bench scx:
	scx_eevdf_lab bench eevdf eevdf
	scx_eevdf_lab bench $big
	scx_eevdf_lab bench -w nope
	scx_eevdf_lab bench -w pingpong:pairs=0
	scx_eevdf_lab bench -w pingpong:$big
	scx_eevdf_lab bench --runs 0
	scx_eevdf_lab bench --window 1e9
	scx_eevdf_lab bench --bootstrap 5
	scx_eevdf_lab bench --order bogus
	scx_eevdf_lab bench --fidelity NO_SUCH
	scx_eevdf_lab restore extra
	scx_eevdf_lab completions bogus
	scx_eevdf_lab man extra
	scx_eevdf_lab nosuchcommand
	EOF
	n=0
	cd $TMPD/empty 2>/dev/null || { mkdir -p $TMPD/empty && cd $TMPD/empty; }
	while read -r cmd; do
		n=$((n + 1))
		# shellcheck disable=SC2086
		timeout 30 $cmd >$TMPD/out 2>$TMPD/err
		rc=$?
		what=$(echo "$cmd" | cut -c1-60)
		[ $rc -eq 2 ] || fail "exit status $rc (not 2) for: $what; stderr: $(head -c 300 $TMPD/err)"
		[ "$(wc -l <$TMPD/err)" -eq 1 ] || fail "not one line on stderr for: $what: $(head -c 300 $TMPD/err)"
		grep -q '^scx_eevdf_lab: error: ' $TMPD/err || fail "no error line for: $what"
		[ "$(wc -c <$TMPD/err)" -le 1100 ] || fail "$(wc -c <$TMPD/err)-byte error line for: $what"
		[ ! -s $TMPD/out ] || fail "output on stdout for: $what"
	done <$TMPD/bad
	cd /lab/tests
	note "ok: $n malformed or oversized command lines: exit status 2, one line each"
	check "the kernel's debugfs knobs are unchanged" [ "$(kernel_knobs)" = "$k0" ]
	check "the lab's knobs are unchanged (no write)" [ "$(lab_knobs)" = "$l0" ]
	check "nothing was created (no bench folder, no journal)" \
		sh -c "[ -z \"\$(ls -A $TMPD/empty)\" ] && [ ! -e /run/scx_eevdf_lab/bench.journal ]"
	check "the lab is still attached" lab_attached
	stop_lab
}

for r in ${T13_ROWS:-input}; do
	echo "  -- $r"
	"row_$r"
done
