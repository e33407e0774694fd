/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPUs going idle (ops.update_idle), and CPUs that sched_ext loses for a while: taken by a higher
 * class (ops.cpu_release / ops.cpu_acquire), or going offline and coming back (ops.cpu_offline /
 * ops.cpu_online, built only with LAB_HOTPLUG_OPS).
 */
#ifndef __LAB_CPUS_BPF_H
#define __LAB_CPUS_BPF_H

/*
 * ops.cpu_release: a higher class (RT, deadline, stop) took @cpu. What waits in its local DSQ
 * comes back through ops.enqueue (SCX_ENQ_REENQ), which moves it to an idle CPU; what waits in
 * its queue counts as waiting behind a running task (lab_nr_busy()), so that an idle CPU's
 * newidle balance or a busy one's periodic balance pulls it -- and an idle CPU is kicked to do
 * so now. The kernel's equivalent is RT pressure shrinking the CPU's capacity.
 */
void BPF_STRUCT_OPS(lab_cpu_release, s32 cpu, struct scx_cpu_release_args *args)
{
	struct lab_rq *rq = rq_get(cpu);
	const struct cpumask *idle;
	s32 kick;

	if (!rq)
		return;
	stat_inc(LAB_ST_CPU_RELEASE);
	lab_rq_set(cpu, LAB_RQ_RELEASED, 1);
	scx_bpf_reenqueue_local();
	if (!rq_runnable(rq))
		return;
	idle = scx_bpf_get_idle_cpumask();
	kick = bpf_cpumask_any_distribute(idle);
	scx_bpf_put_idle_cpumask(idle);
	if (kick >= 0 && kick < topo.nr_cpus && kick != cpu)
		scx_bpf_kick_cpu(kick, SCX_KICK_IDLE);
}

/*
 * ops.update_idle: @cpu enters or leaves idle. With SMT, a CPU going idle beside idle siblings
 * marks its LLC as having an idle core (__update_idle_core()). SCX_OPS_KEEP_BUILTIN_IDLE keeps
 * the built-in idle masks, which CPU selection reads.
 */
void BPF_STRUCT_OPS(lab_update_idle, s32 cpu, bool idle)
{
	if (idle && topo.smt_active)
		update_idle_core(cpu);
}

/* ops.cpu_acquire: @cpu is back for sched_ext. */
void BPF_STRUCT_OPS(lab_cpu_acquire, s32 cpu, struct scx_cpu_acquire_args *args)
{
	lab_rq_set(cpu, LAB_RQ_RELEASED, 0);
}

/*
 * ops.cpu_online / ops.cpu_offline are not registered: handling hotplug inside the scheduler
 * left a task stranded in one of three VM runs of 50 cycles (a runnable task stall), so a CPU
 * going on or offline still makes the kernel ask for a restart, and the daemon reloads.
 */
#ifdef LAB_HOTPLUG_OPS
/* ops.cpu_online: @cpu came up: its queue takes tasks again (the scheduler is not reloaded). */
void BPF_STRUCT_OPS(lab_cpu_online, s32 cpu)
{
	stat_inc(LAB_ST_CPU_ONLINE);
	lab_rq_set(cpu, LAB_RQ_OFFLINE, 0);
	lab_announce(LAB_EV_HOTPLUG, (1ULL << 32) | (u32)cpu);
}

/* How many entities one ops.cpu_offline moves at most (the rest are finalized by the pick's
 * retries or moved as their tasks wake); a bound for the verifier. */
#define LAB_OFFLINE_MOVES	4096

/*
 * ops.cpu_offline: @cpu is going down. Its queue takes nothing more, and what waits in it in
 * our custody moves to CPUs its tasks may run on, keeping its lag, as the kernel's migration
 * off a dying CPU does (dequeue without DEQUEUE_SLEEP, enqueue elsewhere); ghosts are finalized.
 * The kernel moves what runs or waits in the local DSQ itself.
 */
void BPF_STRUCT_OPS(lab_cpu_offline, s32 cpu)
{
	u32 i, n;

	stat_inc(LAB_ST_CPU_OFFLINE);
	lab_rq_set(cpu, LAB_RQ_OFFLINE, 1);
	lab_announce(LAB_EV_HOTPLUG, cpu);
	bpf_for(i, 0, LAB_OFFLINE_MOVES) {
		struct task_struct *t;
		s32 dst;

		n = lab_first_movable(cpu);
		if (!n)
			break;
		t = slot_task(n);
		lab_leave(n, scx_bpf_now(), !SE(pool_get(), n)->delayed);
		if (!t)
			continue;
		dst = scx_bpf_pick_idle_cpu(t->cpus_ptr, 0);
		if (dst < 0 || cpu_offline(dst))
			dst = bpf_cpumask_any_distribute(t->cpus_ptr);
		if (dst >= 0 && dst < topo.nr_cpus && dst != cpu && !cpu_offline(dst)) {
			join_queue(t, dst, 0);
			stat_inc(LAB_ST_HOTPLUG_MOVED);
			scx_bpf_kick_cpu(dst, SCX_KICK_IDLE);
		}
		bpf_task_release(t);
	}
}

#endif /* LAB_HOTPLUG_OPS */

#endif /* __LAB_CPUS_BPF_H */
