/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A task's life in the lab: its entity made at fork or attach (ops.init_task, sched_fork()),
 * weighed when it switches in (ops.enable), gone when it switches out or exits (ops.disable,
 * ops.exit_task), and changed on the way (ops.set_weight, ops.set_cpumask).
 */
#ifndef __LAB_TASKS_BPF_H
#define __LAB_TASKS_BPF_H

/*
 * ops.set_weight: reweight, and remember the change for prio_changed_fair()'s check, which runs
 * when the task is back on its queue (ops.enqueue, or ops.running for the running task).
 */
void BPF_STRUCT_OPS(lab_set_weight, struct task_struct *p, u32 scx_weight)
{
	lab_pool_t *pool = pool_get();
	struct task_ctx *tc = tctx_get(p);
	u32 weight = task_weight(p), old;

	if (!tc || !pool)
		return;
	old = se_load_w(SE(pool, tc->slot));
	lab_reweight(tc->slot, weight, task_inv_weight(p));
	if (old && weight != old)
		tc->prio_changed = weight < old ? LAB_PRIO_WORSE : LAB_PRIO_CHANGED;
}

/* A ghost whose CPU left its affinity is finalized (the kernel dequeues it on migration). */
void BPF_STRUCT_OPS(lab_set_cpumask, struct task_struct *p, const struct cpumask *cpumask)
{
	lab_pool_t *pool = pool_get();
	struct task_ctx *tc = tctx_get(p);
	lab_se_t *se;

	if (!pool || !tc)
		return;
	se = SE(pool, tc->slot);
	if (se->delayed && se->cpu >= 0 && !bpf_cpumask_test_cpu(se->cpu, cpumask))
		lab_leave(tc->slot, scx_bpf_now(), 0);
}

/* ops.init_task: a slot for the task's entity (sched_fork()'s __sched_fork() of the fair
 * entity). */
s32 BPF_STRUCT_OPS_SLEEPABLE(lab_init_task, struct task_struct *p, struct scx_init_task_args *args)
{
	struct task_ctx *tc;

	/*
	 * A fork never fails because of the scheduler's bookkeeping: without memory for the task's
	 * context, or with the pool at its cap, the scheduler exits with the reason (the daemon
	 * reloads it with a pool sized anew) and the task runs without an entity meanwhile.
	 */
	tc = bpf_task_storage_get(&task_ctx_stor, p, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!tc) {
		scx_bpf_exit(LAB_EXIT_POOL_FULL, "no memory for the context of task %d", p->pid);
		return 0;
	}
	if (slot_claim(p, tc, args->fork)) {
		scx_bpf_exit(LAB_EXIT_POOL_FULL,
			     "the task pool is full (%u of %u slots, sized from pid_max and threads-max at load): reloading with a larger one",
			     READ_ONCE(lab_slots_used), lab_slots_cap);
		return 0;
	}
	wakee_history_init(p, tc, args->fork);
	/* The cgroup it joins (its parent's at fork; its own at attach). */
	if (tc->slot && pool_get() && args->cgroup)
		SE(pool_get(), tc->slot)->tg = cgroup_id_tg(BPF_CORE_READ(args, cgroup, kn, id));
	return 0;
}

/* ops.enable: the task switches to the lab; its weight as set_load_weight() computes it. */
void BPF_STRUCT_OPS(lab_enable, struct task_struct *p)
{
	lab_pool_t *pool = pool_get();
	struct task_ctx *tc = tctx_get(p);

	if (pool && tc) {
		lab_se_t *se = SE(pool, tc->slot);

		se->weight = se->load_w = task_weight(p);
		se->inv_weight = task_inv_weight(p);
		se->h_load = (u64)se->weight << LAB_SCHED_FIXEDPOINT_SHIFT;
	}
}

/* ops.disable: the task leaves the lab (switched_from_fair()): its entity leaves its queue. */
void BPF_STRUCT_OPS(lab_disable, struct task_struct *p)
{
	lab_pool_t *pool = pool_get();
	struct task_ctx *tc = tctx_get(p);

	if (pool && tc) {
		lab_limbo_unlink(tc->slot);
		lab_leave(tc->slot, scx_bpf_now(), 0);
		task_load_remove(tc);
	}
}

/* ops.exit_task: the task is gone; its entity leaves and its slot is freed. */
void BPF_STRUCT_OPS(lab_exit_task, struct task_struct *p, struct scx_exit_task_args *args)
{
	struct task_ctx *tc = tctx_get(p);

	if (!tc)
		return;
	lab_limbo_unlink(tc->slot);
	lab_leave(tc->slot, scx_bpf_now(), 0);
	task_load_remove(tc);
	slot_release(tc);
}

#endif /* __LAB_TASKS_BPF_H */
