/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPUs that sched_ext loses for a while: taken by a higher class (ops.cpu_release /
 * ops.cpu_acquire), or going offline and coming back (ops.cpu_offline / ops.cpu_online), without
 * a reload. (A CPU going idle is newidle_balance()'s, sd_balance.bpf.h.)
 */
#ifndef __LAB_CPUS_BPF_H
#define __LAB_CPUS_BPF_H

/*
 * cpufreq_update_util() of the fair class, from @cpu itself at its tick and at its switches (fair.c
 * calls it where it updates the root queue's averages: enqueue, dequeue, tick): hand @cpu's
 * utilisation to schedutil as its performance target (scx_bpf_cpuperf_set(), which
 * sugov_get_util() reads in place of cpu_util_cfs_boost() while sched_ext runs every task). The
 * kfunc may target only the CPU whose queue lock the kernel holds: the caller's own. With
 * CPUFREQ off the target goes back to the maximum, sched_ext's own at attach. Only a change is
 * handed over. Differs: no SCHED_CPUFREQ_IOWAIT boost (the kfunc has no flags).
 */
static __always_inline void cpufreq_update_util(s32 cpu, struct lab_rq *rq)
{
	const struct lab_params *params = params_get();
	u32 perf = LAB_SCHED_CAPACITY;

	if (cpu != bpf_get_smp_processor_id())
		return;
	if (sched_feat(params, CPUFREQ))
		perf = cpu_util_cfs_boost(&rq->cfs, sched_feat(params, UTIL_EST));
	if (perf == READ_ONCE(rq->perf_target))
		return;
	WRITE_ONCE(rq->perf_target, perf);
	scx_bpf_cpuperf_set(cpu, perf);
	stat_inc(LAB_ST_CPUPERF_SET);
}

/*
 * ops.cpu_release: a higher class (RT, deadline, stop) took @cpu. What waits in its local DSQ
 * comes back through ops.enqueue (SCX_ENQ_REENQ) and stays in this CPU's queue, as a fair task
 * that an RT one preempts stays on its runqueue: a stopper that holds the CPU for microseconds
 * moves nothing. While the higher class holds it, the CPU's tick goes on on its timer
 * (lab_release_tick()). What waits in its queue goes first when the balancer looks for the
 * busiest CPU (lab_nr_busy()), so that an idle CPU's balance or a busy one's periodic balance
 * pulls it; the kernel's equivalent is RT pressure shrinking the CPU's capacity. The kernel calls
 * this only when a task of ours ran at the switch: krq_rt_busy() covers the rest.
 */
void BPF_STRUCT_OPS(lab_cpu_release, s32 cpu, struct scx_cpu_release_args *args)
{
	stat_inc(LAB_ST_CPU_RELEASE);
	lab_rq_set(cpu, LAB_RQ_RELEASED, 1);
	scx_bpf_reenqueue_local();
	release_tick_start(cpu);
}

/*
 * The tick of @cpu while a higher class holds it, on its timer (ops.tick runs only for our
 * tasks): sched_balance_trigger()'s nohz_balancer_kick(), which with tasks of ours waiting here
 * (rq->nr_running >= 2 with the higher class's task) kicks an idle CPU to balance; every busy
 * CPU's periodic balance sees this CPU as the busiest too. Returns 1 while the CPU is held with
 * tasks waiting: the timer goes on.
 */
__noinline int lab_release_tick(s32 cpu)
{
	struct lab_rq *rq = rq_get(cpu);
	u64 *st = stats_row();

	if (!rq || !READ_ONCE(rq->released) || !rq_runnable(rq))
		return 0;
	if (nohz_balancer_kick(cpu, rq, scx_bpf_now(), st))
		lab_count(st, LAB_ST_RELEASE_KICK);
	return 1;
}

/* ops.cpu_acquire: @cpu is back for sched_ext. */
void BPF_STRUCT_OPS(lab_cpu_acquire, s32 cpu, struct scx_cpu_acquire_args *args)
{
	lab_rq_set(cpu, LAB_RQ_RELEASED, 0);
	release_tick_stop(cpu);
}

/*
 * ops.cpu_online: @cpu came up: its queue takes tasks again (the scheduler is not reloaded). A
 * CPU that was offline when the scheduler loaded has no place in its topology (no LLC, core or
 * node of its own kind): then the scheduler asks to be loaded again, which reads it.
 */
void BPF_STRUCT_OPS(lab_cpu_online, s32 cpu)
{
	if (cpu >= 0 && cpu < LAB_MAX_CPUS && !topo.cpu_known[cpu]) {
		scx_bpf_exit(SCX_ECODE_ACT_RESTART | LAB_EXIT_RSN_NEW_CPU,
			     "CPU %d came online, unknown to the topology loaded: reloading", cpu);
		return;
	}
	stat_inc(LAB_ST_CPU_ONLINE);
	__sync_fetch_and_add(&lab_nr_cpus_online, 1);
	lab_rq_set(cpu, LAB_RQ_OFFLINE, 0);
	lab_announce(LAB_EV_HOTPLUG, (1ULL << 32) | (u32)cpu);
}

/* How many entities one ops.cpu_offline moves at most (the rest are finalized by the pick's
 * retries or moved as their tasks wake); a bound for the verifier. */
#define LAB_OFFLINE_MOVES	4096

/*
 * Where ops.cpu_offline moves a task of @cpu's queue: an idle CPU it may run on, else any CPU it
 * may run on, else any other CPU still online for us -- whose ops.dispatch then finds it cannot
 * run there and hands it to the global DSQ (dispatch_rehome()): a task bound to @cpu (a per-CPU
 * kthread) must leave a queue that sched_ext no longer dispatches from. -1 when no CPU is left.
 */
static __always_inline s32 offline_dst(struct task_struct *t, s32 cpu)
{
	s32 dst = scx_bpf_pick_idle_cpu(t->cpus_ptr, 0);
	u32 i, nr = topo.nr_cpus;

	if (dst >= 0 && dst < nr && dst != cpu && !cpu_offline(dst))
		return dst;
	dst = bpf_cpumask_any_distribute(t->cpus_ptr);
	if (dst >= 0 && dst < nr && dst != cpu && !cpu_offline(dst))
		return dst;
	bpf_for(i, 1, nr) {
		dst = (cpu + i) % nr;
		if (!cpu_offline(dst))
			return dst;
	}
	return -1;
}

/*
 * ops.cpu_offline: @cpu is going down. Its queue takes nothing more, and what still waits in it
 * in our custody moves to CPUs its tasks may run on, keeping its lag, as the kernel's migration
 * off a dying CPU does (dequeue without DEQUEUE_SLEEP, enqueue elsewhere); ghosts are finalized.
 * Before this call the kernel already pushed away every task that @cpu picked since it went
 * inactive, and it moves what runs or waits in the local DSQ itself. Each move detaches the
 * entity under the queue's lock only if it is still there (a balancer may have pulled it).
 */
void BPF_STRUCT_OPS(lab_cpu_offline, s32 cpu)
{
	lab_pool_t *pool = pool_get();
	u32 i, n;

	stat_inc(LAB_ST_CPU_OFFLINE);
	/* Held tasks rejoin the queue first, throttled or not, and move with the rest. */
	bpf_for(i, 0, LAB_OFFLINE_MOVES / LAB_LIMBO_BATCH) {
		struct lab_rq *rq = rq_get(cpu);

		if (!rq || !READ_ONCE(rq->nr_limbo) || !lab_limbo_release(cpu, LAB_LIMBO_OFFLINE))
			break;
	}
	if (READ_ONCE(lab_nr_cpus_online) > 1)
		__sync_fetch_and_sub(&lab_nr_cpus_online, 1);
	lab_rq_set(cpu, LAB_RQ_OFFLINE, 1);
	lab_announce(LAB_EV_HOTPLUG, cpu);
	if (!pool)
		return;
	bpf_for(i, 0, LAB_OFFLINE_MOVES) {
		struct task_struct *t;
		s32 dst;

		n = lab_offline_next(cpu, scx_bpf_now());
		if (!n)
			break;
		t = slot_task(n);
		if (!t)	/* its reference is with a dispatch under way, or it was never taken */
			t = bpf_task_from_pid(SE(pool, n)->pid);
		if (!t) {
			/* The task is gone (ops.exit_task frees the entity). */
			lab_leave(n, scx_bpf_now(), 0);
			continue;
		}
		dst = offline_dst(t, cpu);
		if (dst < 0) {
			/* No other CPU: the kernel does not take the last one down. */
			bpf_task_release(t);
			break;
		}
		if (lab_detach(n, cpu, scx_bpf_now())) {
			join_queue(t, dst, 0);
			slot_ref_set(n, t);
			stat_inc(LAB_ST_HOTPLUG_MOVED);
			scx_bpf_kick_cpu(dst, SCX_KICK_IDLE);
		}
		bpf_task_release(t);
	}
}

#endif /* __LAB_CPUS_BPF_H */
