# Fairness by weight: four CPU-bound loops pinned to CPU 3 at nice 0, 0, 5 and -5 share it in
# proportion to their weights (1024, 1024, 335, 3121) within 5 % (relative), measured over 3 s
# from /proc/PID/schedstat (time on CPU). The built-in EEVDF runs the same loops first in the same
# boot; its shares are printed beside ours (reference, not asserted).
#
# Timing boot (icount: guest time follows executed instructions, so host load cannot steal time
# from one loop and give it to another). 3 s is enough for 5 %: the smallest share (nice 5, 6 %)
# is 180 ms of CPU time, and EEVDF keeps every task within a few slices of its fair share (lag
# is bounded by the slice, ~3 ms here, and the 4 ms tick that enforces it), i.e. about 2 %.
# boot: timing
# lab: shared
. ./lib.sh

CPU=3
WINDOW=3
NICES="0 0 5 -5"
LOOPS=

stop_loops() { [ -n "$LOOPS" ] && kill $LOOPS 2>/dev/null; LOOPS=; }
trap stop_loops EXIT

# exec_ns PID...: the time on CPU of each task, one per line.
exec_ns() { for p in "$@"; do awk '{print $1}' "/proc/$p/schedstat"; done; }

# shares OUT: run the four loops, write "nice share" lines to OUT.
shares() {
	LOOPS=
	: >/tmp/loops
	for n in $NICES; do
		taskset -c $CPU sh -c 'while :; do :; done' &
		p=$!
		renice "$n" -p "$p" >/dev/null || fail "renice $n -p $p"
		LOOPS="$LOOPS $p"
		echo "$p $n" >>/tmp/loops
	done
	while read -r p n; do
		[ "$(awk '{print $19}' /proc/$p/stat)" = "$n" ] || fail "task $p does not run at nice $n"
	done </tmp/loops
	sleep 1 # let the reweights settle
	exec_ns $LOOPS >/tmp/exec.0
	sleep $WINDOW
	exec_ns $LOOPS >/tmp/exec.1
	stop_loops
	echo $NICES | tr ' ' '\n' | paste -d' ' - /tmp/exec.0 /tmp/exec.1 |
		awk '{n[NR] = $1; d[NR] = $3 - $2; t += d[NR]} END {for (i = 1; i <= NR; i++) printf "%d %.5f\n", n[i], d[i] / t}' >"$1"
	[ "$(wc -l <"$1")" -eq 4 ] || fail "could not read the loops' CPU time"
}

weight() { case $1 in -5) echo 3121 ;; 0) echo 1024 ;; 5) echo 335 ;; esac; }

shares /tmp/shares.kernel
start_lab
shares /tmp/shares.lab
check "still attached after the fairness run" lab_attached
stop_lab

total=0
for n in $NICES; do total=$((total + $(weight $n))); done
note "CPU shares of 4 loops on CPU $CPU over $WINDOW s (expected = weight / $total):"
note "task  nice  weight  expected   lab      (err)    kernel   (err)"
i=0
worst=0
for n in $NICES; do
	i=$((i + 1))
	lab=$(sed -n "${i}p" /tmp/shares.lab | cut -d' ' -f2)
	ker=$(sed -n "${i}p" /tmp/shares.kernel | cut -d' ' -f2)
	line=$(awk -v i=$i -v n=$n -v w=$(weight $n) -v t=$total -v l=$lab -v k=$ker 'BEGIN {
		e = w / t
		printf "%-5d %4d  %6d  %6.2f%%  %6.2f%% (%+5.1f%%) %6.2f%% (%+5.1f%%)", i, n, w, 100 * e,
			100 * l, 100 * (l / e - 1), 100 * k, 100 * (k / e - 1) }')
	note "$line"
	err=$(awk -v w=$(weight $n) -v t=$total -v l=$lab 'BEGIN {e = l / (w / t) - 1; if (e < 0) e = -e; printf "%.4f", e}')
	worst=$(awk -v a=$worst -v b=$err 'BEGIN {print (b > a) ? b : a}')
	check "lab: task $i (nice $n) gets its weight's share within 5 % (off by $(awk -v e=$err 'BEGIN {printf "%.1f", 100 * e}') %)" \
		awk -v e=$err 'BEGIN {exit !(e <= 0.05)}'
done
note "largest relative error of the lab: $(awk -v e=$worst 'BEGIN {printf "%.2f", 100 * e}') %"
