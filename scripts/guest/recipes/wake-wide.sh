# Why WA_WEIGHT's effect on hackbench with one group differs between the kernel and the lab
# (README, "Wake-affine effects"): who wakes whom, and what wake_wide() and wake_affine() then
# decide, in the steady state of `hackbench -g G -T` (20 sender and 20 receiver threads per
# group), measured for W seconds after one second of warm-up, on the kernel's EEVDF and on the lab:
#  - wakeups by role (sched:sched_wakeup: the waker is the task the event fires in) and the
#    senders' blocking switches (sched:sched_switch with prev_state S);
#  - the kernel: its full wakeups (a probe on select_task_rq_fair, which also reads the wakee's
#    wakee_flips at the offset BTF gives), and of those the wake_affine() calls and pulls
#    (the threads' schedstats nr_wakeups_affine_attempts and nr_wakeups_affine);
#  - the lab: the same decisions from its counters (select, wake_wide, wa_*).
# Receivers wake a sender only when its socket was full; each such wakeup of another sender is
# a flip of the receiver, and wake_wide() holds for a sender's wakeup of a receiver whose flips
# reach the LLC's size (4 here). Run it in a timing boot:
#   scripts/vm --timing -- sh recipes/wake-wide.sh
# Every setting it changes (kernel.sched_schedstats, the probe) is put back.
# shellcheck shell=sh
. "$(dirname "$0")/lib.sh"
G=${G:-1} W=${W:-2}
SCHEDSTATS0=$(cat /proc/sys/kernel/sched_schedstats)
lab=

# snapshot SIDE PID: the kernel's nr_wakeups_affine and nr_wakeups_affine_attempts summed over
# PID's threads, or the lab's counters select wake_wide wa_idle_this wa_idle_prev wa_weight_this
# wa_prev.
snapshot() {
	if [ "$1" = kernel ]; then
		cat /proc/"$2"/task/*/sched 2>/dev/null | awk '/nr_wakeups_affine_attempts/ {t += $3; next}
			/nr_wakeups_affine / {a += $3} END {print a + 0, t + 0}'
	else
		scx_eevdf_lab monitor --count 1 0.1 --field select --field wake_wide --field wa_idle_this \
			--field wa_idle_prev --field wa_weight_this --field wa_prev
	fi
}
# (perf record's command below runs this script for a snapshot.)
if [ "${1:-}" = --snapshot ]; then
	snapshot "$2" "$3"
	exit
fi

say() { printf '\n== %s\n' "$*"; }
restore() {
	perf probe -q -d 'probe:lab_stf' 2>/dev/null
	echo "$SCHEDSTATS0" >/proc/sys/kernel/sched_schedstats
	[ -n "$lab" ] && kill -INT "$lab" 2>/dev/null && wait "$lab"
}
trap restore EXIT
# off FIELD: the byte offset of FIELD in struct task_struct, from the kernel's BTF.
off() {
	bpftool btf dump file /sys/kernel/btf/vmlinux format raw | awk -v f="'$1'" '
		/^\[[0-9]+\] STRUCT .task_struct. / {on = 1; next}
		on && /^\[/ {on = 0}
		on && $1 == f {for (i = 1; i <= NF; i++) if ($i ~ /^bits_offset=/) {split($i, a, "="); print a[2] / 8}}'
}
# measure SIDE: one hackbench in the steady state; prints what the header lists.
measure() {
	side=$1
	hackbench -g "$G" -l 100000000 -T >/dev/null 2>&1 &
	hb=$!
	sleep 1
	ls /proc/$hb/task | sort -n | awk -v m=$hb '$1 != m' >/tmp/tids	# receivers, then senders
	events="-e sched:sched_wakeup -e sched:sched_switch"
	[ "$side" = kernel ] && events="$events -e probe:lab_stf"
	# The counters are read by perf record's command, inside the recording, which takes a
	# while to start under emulation.
	perf record -q -a $events -o /tmp/ww.data -- sh -c \
		"sh $0 --snapshot $side $hb >/tmp/ww.before; sleep $W; sh $0 --snapshot $side $hb >/tmp/ww.after" \
		>/dev/null 2>&1
	before=$(cat /tmp/ww.before) after=$(cat /tmp/ww.after)
	kill $hb; wait $hb 2>/dev/null
	perf script -i /tmp/ww.data -F tid,event,trace 2>/dev/null >/tmp/ww.txt
	awk -v g="$G" -v before="$before" -v after="$after" -v side="$side" '
		NR == FNR {role[$1] = (FNR - 1) % 40 < 20 ? "receiver" : "sender"; next}
		function field(name,   i, a) {
			for (i = 1; i <= NF; i++) if (index($i, name "=") == 1) {split($i, a, "="); return a[2]}
			return ""
		}
		/sched_wakeup:/ {
			w = $1 + 0; p = field("pid") + 0
			if ((w in role) && (p in role)) n[role[w] " -> " role[p]]++
		}
		/sched_switch:/ && ($1 + 0) in role && role[$1 + 0] == "sender" && field("prev_state") == "S" {blocks++}
		/lab_stf:/ {
			sel++; f = field("flips") + 0
			if (f >= 4) wide_capable++
			flips += f
		}
		END {
			printf "  wakeups: sender -> receiver %d, receiver -> sender %d; senders blocked %d times\n",
				n["sender -> receiver"], n["receiver -> sender"], blocks
			split(before, b); split(after, a)
			if (side == "kernel") {
				printf "  full wakeups %d (wakee flips: mean %.1f, %d of them at 4 or more); wake_affine() calls %d, pulls %d\n",
					sel, sel ? flips / sel : 0, wide_capable, a[2] - b[2], a[1] - b[1]
			} else {
				calls = 0; for (i = 3; i <= 6; i++) calls += a[i] - b[i]
				printf "  full wakeups %d, wake_wide() %d; wake_affine() calls %d, pulls %d (WA_WEIGHT %d)\n",
					a[1] - b[1], a[2] - b[2], calls, a[3] - b[3] + a[5] - b[5], a[5] - b[5]
			}
		}' /tmp/tids /tmp/ww.txt
}

echo 1 >/proc/sys/kernel/sched_schedstats
flips=$(off wakee_flips)
perf probe -q -a "lab_stf=select_task_rq_fair flips=+$flips(%di):u32" ||
	{ echo "cannot probe select_task_rq_fair"; exit 1; }
say "kernel $(uname -r), $(nproc) CPUs; hackbench -g $G -T, $W s in the steady state"
hackbench -g "$G" -l 200 -T >/dev/null 2>&1	# the first run after boot is slower
for feat in WA_WEIGHT NO_WA_WEIGHT; do
	echo $feat >/sys/kernel/debug/sched/features
	say "kernel EEVDF, $feat"
	measure kernel
done
echo WA_WEIGHT >/sys/kernel/debug/sched/features

start_lab
for feat in WA_WEIGHT NO_WA_WEIGHT; do
	scx_eevdf_lab features $feat >/dev/null 2>&1
	say "lab, $feat"
	measure lab
done
