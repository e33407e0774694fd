# Work conservation: 5 CPU hogs on 4 vCPUs for 5 s. Every hog gets at least 60 % of a CPU
# (a fair share is 80 %), and no CPU stays idle while another has two runnable tasks: sampled
# every 100 ms from the stats, the pattern never lasts two samples in a row.
#
# Timing boot (icount): both the CPU shares and the 100 ms sampling are guest time. In
# multi-threaded emulation a vCPU thread the host does not run for a while looks, to the guest,
# like a CPU that neither balances nor runs its hog. 5 s is 50 samples and, with 4 ms ticks and
# periodic balancing every few ms, hundreds of balancing chances per hog.
# boot: timing
. ./lib.sh

start_lab
pids=""
for i in 1 2 3 4 5; do
	sh -c 'while :; do :; done' &
	pids="$pids $!"
done
sleep 1
uptime_cs() { awk '{ split($1, a, "."); print a[1] * 100 + substr(a[2] "00", 1, 2) }' /proc/uptime; }
t0=$(uptime_cs)
for p in $pids; do eval "c0_$p=$(cpu_ticks "$p")"; done
scx_eevdf_lab monitor 0.1 --count 50 --json >/tmp/samples.json 2>/dev/null
for p in $pids; do eval "c1_$p=$(cpu_ticks "$p")"; done
t1=$(uptime_cs)
for p in $pids; do kill "$p"; wait "$p" 2>/dev/null; done

# /proc/PID/stat counts USER_HZ (100) ticks, as /proc/uptime counts centiseconds.
cs=$((t1 - t0))
note "hog shares over $((cs / 100)).$((cs % 100)) s:"
min=100
for p in $pids; do
	eval "d=\$((c1_$p - c0_$p))"
	share=$((d * 100 / cs))
	note "  hog $p: $share % of a CPU"
	[ "$share" -lt "$min" ] && min=$share
done
check "every hog got at least 60 % of a CPU (least: $min %)" [ "$min" -ge 60 ]

# Per sample: is some CPU idle (nothing queued) while another has >= 2 queued?
awk '
{
	idle = 0; busy2 = 0
	s = $0
	while (match(s, /"nr_queued":[0-9]+/)) {
		n = substr(s, RSTART + 12, RLENGTH - 12) + 0
		if (n == 0) idle = 1
		if (n >= 2) busy2 = 1
		s = substr(s, RSTART + RLENGTH)
	}
	bad = idle && busy2
	if (bad && prev) run++
	if (bad) nbad++
	prev = bad
	total++
}
END { printf "%d %d %d\n", total, nbad, run }' /tmp/samples.json >/tmp/wc.txt
read total nbad consecutive </tmp/wc.txt
note "$total samples: $nbad with an idle CPU beside a CPU with two queued tasks, $consecutive of them right after another"
check "samples were taken ($total of 50)" [ "$total" -ge 40 ]
check "no CPU stays idle beside a doubly loaded one for two samples in a row" [ "$consecutive" -eq 0 ]
counters pull_newidle pull_periodic nohz_kick migrations >/tmp/c.txt
note "pulls newidle/periodic, nohz kicks, migrations: $(cat /tmp/c.txt)"
stop_lab
