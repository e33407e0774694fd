/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cpu.max in the scheduler (the arithmetic is bandwidth.h's): the kernel tells us of a group's
 * quota, period and burst (ops.cgroup_init, ops.cgroup_set_bandwidth); runtime is charged at the
 * tick and when a task stops; each group's period timer refills its pool; and the tasks of a
 * throttled queue are held in a per-CPU limbo list, off the EEVDF queue, as 7.3's task-based
 * throttling holds them on the queue's throttled_limbo_list:
 *
 *  - only a task that a tick found in user space while its queue was throttled is held (marked
 *    se->bw_user until it runs): fair.c throttles a task on its return to user space
 *    (throttle_cfs_rq_work()), never inside the kernel. The marked task is held when it is put
 *    back (SCX_OPS_ENQ_LAST sends the running task through ops.enqueue) or when the pick
 *    chooses it; a task the tick finds in the kernel, and a waking one, run on until a tick
 *    finds them in user space;
 *  - the refill marks the CPUs whose queues of the group are throttled and wakes them if idle;
 *    at that CPU's next tick or decision each held task whose queues are no longer throttled
 *    rejoins (tg_unthrottle_up(): enqueued with its lag, no wakeup preemption).
 *
 * A held task was in user space, so it holds no kernel lock and is in no RCU read-side section
 * (a task marked blocked in one is never held anyway: limbo_rcu). It is still runnable for
 * sched_ext, whose watchdog kills a scheduler that leaves a runnable task waiting
 * LAB_WATCHDOG_MS: a task that has not run for LAB_LIMBO_MAX_NS since it was first held rejoins
 * anyway and is not held again until it has run (limbo_forced; what it runs is its group's
 * debt). A CPU going offline lets out all it holds.
 *
 * The limbo list of a CPU, and the bandwidth state of its group queues, change only where that
 * CPU's runqueue lock is held (the tick, dispatch, and the enqueue, stop and dequeue of its
 * tasks); the list's links also under the queue's own lock, which the dump reads under.
 */
#ifndef __LAB_BANDWIDTH_BPF_H
#define __LAB_BANDWIDTH_BPF_H

/* Groups with a cpu.max quota: with none, nothing here runs. */
u32 lab_bw_groups;

/* How long a task may wait without running, once held, before it rejoins regardless: a third of
 * the watchdog's timeout, half the RCU stall detector's (21 s). */
#define LAB_LIMBO_MAX_NS	(LAB_WATCHDOG_MS * 1000000ULL / 3)
/* Held tasks one release lets out at most, and how far down the list it looks. */
#define LAB_LIMBO_BATCH		8
#define LAB_LIMBO_SCAN		64

/* RUNTIME_INF as ops.cgroup_set_bandwidth passes it. */
#define LAB_BW_QUOTA_INF	(~0ULL)

/* Each group's period timer (cfs_b->period_timer); the map index is the group's. */
struct lab_bw_timer {
	struct bpf_timer timer;
	u64 cgid;		/* the cgroup it runs for: a group slot reused later stops it */
	u32 tg;
	u32 armed;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LAB_MAX_TGS);
	__type(key, u32);
	__type(value, struct lab_bw_timer);
} lab_bw_timers SEC(".maps");

/* cpu.max is enforced: the lab knob CPU_MAX is on and a group has a quota. */
static __always_inline bool bw_enabled(void)
{
	return READ_ONCE(lab_bw_groups) != 0 && sched_feat(params_get(), CPU_MAX);
}

/*
 * sched_cfs_period_timer() / do_sched_cfs_period_timer(): the period turned over. A group that
 * took no runtime for a whole period and has nothing throttled lets its timer stop (cfs_b->idle);
 * otherwise the pool is refilled, every CPU with a throttled queue of the group is marked for a
 * release and woken if idle, and the timer runs on.
 */
static int bw_period_timer(void *map, int *key, struct lab_bw_timer *t)
{
	struct lab_tg *tg = tg_get(t->tg);
	struct lab_gq *gq;
	struct lab_rq *rq;
	u32 cpu, idx = t->tg;

	if (!tg || READ_ONCE(tg->cgid) != t->cgid || !tg->bw_quota || !tg->bw_period) {
		WRITE_ONCE(t->armed, 0);
		return 0;
	}
	if (READ_ONCE(tg->bw_idle) && READ_ONCE(tg->bw_throttled_now) <= 0) {
		WRITE_ONCE(t->armed, 0);
		return 0;
	}
	WRITE_ONCE(tg->bw_idle, 1);
	tg->bw_nr_periods++;
	stat_inc(LAB_ST_BW_PERIOD);
	refill_cfs_bandwidth_runtime(tg);
	if (READ_ONCE(tg->bw_throttled_now) > 0) {
		bpf_for(cpu, 0, topo.nr_cpus) {
			gq = gq_get(idx, cpu);
			if (!gq || !READ_ONCE(gq->throttled) || !(rq = rq_get(cpu)))
				continue;
			WRITE_ONCE(rq->limbo_release, 1);
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		}
	}
	bpf_timer_start(&t->timer, tg->bw_period, 0);
	return 0;
}

/* start_cfs_bandwidth(): the group's timer runs while the group takes runtime. */
static __always_inline void start_cfs_bandwidth(u32 idx, struct lab_tg *tg)
{
	struct lab_bw_timer *t = bpf_map_lookup_elem(&lab_bw_timers, &idx);

	if (!t || READ_ONCE(t->armed) || !__sync_bool_compare_and_swap(&t->armed, 0, 1))
		return;
	/* The first start initializes the timer; later ones find it initialized (-EBUSY). */
	bpf_timer_init(&t->timer, &lab_bw_timers, CLOCK_MONOTONIC);
	bpf_timer_set_callback(&t->timer, bw_period_timer);
	t->cgid = tg->cgid;
	t->tg = idx;
	bpf_timer_start(&t->timer, tg->bw_period, 0);
}

/* tg_set_cfs_bandwidth(): group @idx's cpu.max (µs, @quota_us LAB_BW_QUOTA_INF for "max"). The
 * pool starts full; each queue starts afresh when next looked at (gq_bw_sync()). True when the
 * group had a quota before: tasks held for it are to be let out (bw_release_all()). */
static __always_inline bool tg_set_cfs_bandwidth(u32 idx, u64 period_us, u64 quota_us, u64 burst_us)
{
	struct lab_tg *tg = tg_get(idx);
	bool had, has;
	u64 quota;

	if (!tg)
		return false;
	quota = quota_us == LAB_BW_QUOTA_INF || !period_us || quota_us > (1ULL << 40) ? 0 :
		quota_us * 1000;
	had = tg->bw_quota != 0;
	has = quota != 0;
	tg->bw_period = period_us * 1000;
	tg->bw_burst = has ? burst_us * 1000 : 0;
	WRITE_ONCE(tg->bw_quota, quota);
	WRITE_ONCE(tg->bw_runtime, (s64)quota);
	WRITE_ONCE(tg->bw_throttled_now, 0);
	__sync_fetch_and_add(&tg->bw_gen, 1);
	if (has && !had)
		__sync_fetch_and_add(&lab_bw_groups, 1);
	else if (had && !has)
		__sync_fetch_and_sub(&lab_bw_groups, 1);
	return had;
}

/* Every CPU holding tasks looks at them again (their queues may have been unthrottled). */
static __always_inline void bw_release_all(void)
{
	u32 cpu;

	bpf_for(cpu, 0, topo.nr_cpus) {
		struct lab_rq *rq = rq_get(cpu);

		if (rq && READ_ONCE(rq->nr_limbo)) {
			WRITE_ONCE(rq->limbo_release, 1);
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		}
	}
}

/* The task in @slot (of group @tg) ran @delta ns on @cpu: charge its groups' queues. True when one
 * ran dry: the task is to be rescheduled. */
__noinline int lab_bw_account(u32 tg, s32 cpu, u64 delta)
{
	struct lab_tg *g;
	u32 idx = tg;
	int i, ret;

	if (cpu < 0)
		return 0;
	ret = bw_account_walk(tg, cpu, delta, stats_row());
	/* start_cfs_bandwidth() for each group with a quota on the path. */
	bpf_for(i, 0, LAB_GROUP_DEPTH) {
		g = tg_get(idx);
		if (!g)
			break;
		if (g->bw_quota)
			start_cfs_bandwidth(idx, g);
		idx = g->parent;
	}
	return ret;
}

/* Is the task of group @tg throttled on @cpu (after asking the pool, bw_throttled_walk())? */
__noinline int lab_bw_throttled(u32 tg, s32 cpu)
{
	if (!tg || cpu < 0)
		return 0;
	return bw_throttled_walk(tg, cpu, stats_row());
}

/* A dequeue left the task's queues on @cpu: give back what empty ones hold above 1 ms. */
__noinline int lab_bw_return(u32 tg, s32 cpu)
{
	if (tg && cpu >= 0)
		bw_return_walk(tg, cpu);
	return 0;
}

/*
 * @p ran since its last charge: charge its groups (at the tick, and when it stops). True when a
 * queue of its ran dry (the tick then reschedules it).
 */
static __always_inline bool bw_charge(struct task_struct *p, struct task_ctx *tc, u32 tg, s32 cpu)
{
	u64 sum = p->se.sum_exec_runtime, delta = sum - tc->bw_exec;

	tc->bw_exec = sum;
	if (!tg || !bw_enabled() || (s64)delta <= 0)
		return false;
	return lab_bw_account(tg, cpu, delta);
}

#ifndef LAB_HOST
/* The interrupted registers of this CPU's interrupt (get_irq_regs()). */
extern struct pt_regs *__irq_regs __ksym __weak;
#endif

/*
 * Did the tick interrupt user space? user_mode(get_irq_regs()), as update_process_times() is told
 * at the tick. False where it cannot be told: then no task is held (cpu.max is not enforced).
 */
static __always_inline bool tick_user_mode(void)
{
	struct pt_regs **pregs, *regs;

	if (!bpf_ksym_exists(&__irq_regs))
		return false;
	pregs = bpf_this_cpu_ptr(&__irq_regs);
	regs = *pregs;
	if (!regs)
		return false;
#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(regs, cs) & 3;
#elif defined(__TARGET_ARCH_arm64)
	return (BPF_CORE_READ(regs, pstate) & 0xf) == 0;	/* PSR_MODE_EL0t */
#else
	return false;
#endif
}

/*
 * The tick's cpu.max part for @p, running on @cpu (entity @se): charge its groups
 * (account_cfs_rq_runtime()); a queue that ran dry reschedules it (resched_curr()), and one that
 * is throttled while the tick found @p in user space marks it for the limbo list, which it
 * joins when put back (throttle_cfs_rq_work() at its return to user). True: reschedule.
 */
static __always_inline bool bw_tick(struct task_struct *p, struct task_ctx *tc, lab_se_t *se,
				    s32 cpu)
{
	bool dry;

	if (!se->tg || !bw_enabled())
		return false;
	dry = bw_charge(p, tc, se->tg, cpu);
	if (se->bw_exempt || !lab_bw_throttled(se->tg, cpu))
		return dry;
	if (!tick_user_mode()) {
		stat_inc(LAB_ST_BW_KERNEL);
		return dry;
	}
	se->bw_user = 1;
	return true;
}

/* Hold entity @n (its task in custody) in @cpu's limbo list, at its tail. */
__noinline int lab_limbo_link(u32 n, s32 cpu, u64 now)
{
	lab_pool_t *pool = pool_get();
	struct lab_rq *rq = rq_get(cpu);
	lab_se_t *se;
	u32 tail;

	if (!pool || !rq || !n)
		return 0;
	se = SE(pool, n);
	bpf_spin_lock(&rq->lock);
	if (!se->limbo) {
		tail = rq->limbo_tail;
		se->limbo = 1;
		se->limbo_cpu = cpu;
		/* Waiting since it was first held; ops.running starts it afresh. */
		if (!se->limbo_since)
			se->limbo_since = now;
		se->limbo_next = 0;
		se->limbo_prev = tail;
		if (tail)
			SE(pool, tail)->limbo_next = n;
		else
			rq->limbo_head = n;
		rq->limbo_tail = n;
		rq->nr_limbo++;
	}
	bpf_spin_unlock(&rq->lock);
	return 0;
}

/* Take entity @n out of the limbo list that holds it (if any). */
__noinline int lab_limbo_unlink(u32 n)
{
	lab_pool_t *pool = pool_get();
	struct lab_rq *rq;
	lab_se_t *se;
	u32 next, prev;

	if (!pool || !n)
		return 0;
	se = SE(pool, n);
	if (!se->limbo || !(rq = rq_get(se->limbo_cpu)))
		return 0;
	bpf_spin_lock(&rq->lock);
	if (se->limbo) {
		next = se->limbo_next;
		prev = se->limbo_prev;
		if (prev)
			SE(pool, prev)->limbo_next = next;
		else
			rq->limbo_head = next;
		if (next)
			SE(pool, next)->limbo_prev = prev;
		else
			rq->limbo_tail = prev;
		if (rq->nr_limbo)
			rq->nr_limbo--;
		se->limbo = 0;
		se->limbo_next = 0;
		se->limbo_prev = 0;
	}
	bpf_spin_unlock(&rq->lock);
	return 0;
}

/*
 * @p (in @slot) joins no queue: its group is throttled on @cpu. It leaves the queue if it is on one
 * (a dequeue with DEQUEUE_THROTTLE: its lag kept, never a ghost) and waits in the scheduler's
 * custody in @cpu's limbo list.
 */
static __always_inline void limbo_hold(struct task_struct *p, u32 slot, s32 cpu)
{
	u64 now = scx_bpf_now();

	lab_leave(slot, now, 0);
	lab_limbo_link(slot, cpu, now);
	slot_ref_set(slot, p);
	stat_inc(LAB_ST_LIMBO_HELD);
}

/*
 * @p was preempted inside an RCU read-side section (preemptible RCU): rcu_note_context_switch()
 * marked it blocked when it was switched out, until its rcu_read_unlock(). (Its nesting count
 * would not do: a BPF program runs under rcu_read_lock(), which counts in the current task's.)
 */
static __always_inline bool task_in_rcu_reader(const struct task_struct *p)
{
	return bpf_core_field_exists(p->rcu_read_unlock_special) &&
	       p->rcu_read_unlock_special.b.blocked;
}

/*
 * Should @p (of entity @se) be held rather than join @cpu's queue? Only once a tick found it in
 * user space with its group throttled (se->bw_user, cleared when it runs): fair.c throttles a
 * task on its return to user space (throttle_cfs_rq_work()), never inside the kernel, where it
 * may hold locks that others wait for; a waking task runs to that return too.
 */
static __always_inline bool bw_hold(const struct task_struct *p, const lab_se_t *se, s32 cpu)
{
	if (!se->bw_user || !se->tg || se->bw_exempt || !bw_enabled() ||
	    !lab_bw_throttled(se->tg, cpu))
		return false;
	if (task_in_rcu_reader(p)) {
		stat_inc(LAB_ST_LIMBO_RCU);
		return false;
	}
	return true;
}

/* One task let out of the limbo by lab_limbo_release(): it rejoins @cpu's queue (exempt from
 * the throttle when @forced). A function of its own, so that the verifier walks the join once,
 * not once per pass of the release's loop. */
__noinline int lab_limbo_rejoin(u32 s, s32 cpu, u32 forced)
{
	lab_pool_t *pool = pool_get();
	struct task_struct *t;

	if (!pool || !s)
		return 0;
	t = slot_ref_take(s);
	if (!t)
		t = bpf_task_from_pid(SE(pool, s)->pid);
	if (!t)
		return 0;
	if (forced) {
		SE(pool, s)->bw_exempt = 1;
		stat_inc(LAB_ST_LIMBO_FORCED);
	}
	join_queue(t, cpu, 0);
	slot_ref_set(s, t);
	bpf_task_release(t);
	stat_inc(LAB_ST_LIMBO_RELEASED);
	return 1;
}

/*
 * The release: held tasks of @cpu whose queues are no longer throttled rejoin the queue
 * (unthrottle_cfs_rq() / tg_unthrottle_up()), as do, throttled or not, those held longer than
 * LAB_LIMBO_MAX_NS, and all of them for @force: LAB_LIMBO_OFFLINE (the CPU is going offline:
 * let out still throttled) or LAB_LIMBO_OFF (cpu.max is no longer enforced). Up to
 * LAB_LIMBO_BATCH per call; the release stays pending while more may be due.
 */
#define LAB_LIMBO_OFFLINE	1
#define LAB_LIMBO_OFF		2
__noinline int lab_limbo_release(s32 cpu, u32 force)
{
	lab_pool_t *pool = pool_get();
	struct lab_rq *rq = rq_get(cpu);
	u32 batch[LAB_LIMBO_BATCH], forced[LAB_LIMBO_BATCH];
	u32 n, next, nb = 0, i;
	u64 now = scx_bpf_now();
	bool more = false;

	if (!pool || !rq)
		return 0;
	WRITE_ONCE(rq->limbo_release, 0);
	n = READ_ONCE(rq->limbo_head);
	bpf_for(i, 0, LAB_LIMBO_SCAN) {
		lab_se_t *se;
		u32 f;

		if (!n)
			break;
		if (nb >= LAB_LIMBO_BATCH)
			break;
		se = SE(pool, n);
		next = se->limbo_next;
		f = force == LAB_LIMBO_OFFLINE ||
		    (!force && now - se->limbo_since > LAB_LIMBO_MAX_NS);
		if (force || f || !lab_bw_throttled(se->tg, cpu)) {
			lab_limbo_unlink(n);
			batch[nb & (LAB_LIMBO_BATCH - 1)] = n;
			forced[nb & (LAB_LIMBO_BATCH - 1)] = f;
			nb++;
		}
		n = next;
	}
	/* Entries left unlooked-at may be due too. */
	if (n)
		more = true;
	bpf_for(i, 0, nb)
		lab_limbo_rejoin(batch[i & (LAB_LIMBO_BATCH - 1)], cpu,
				 forced[i & (LAB_LIMBO_BATCH - 1)]);
	if (more)
		WRITE_ONCE(rq->limbo_release, 1);
	return nb;
}

/* The tick or a decision on @cpu: run the release a refill asked for; with cpu.max no longer
 * enforced (CPU_MAX off, or no quota left), every held task rejoins. */
static __always_inline void limbo_release_pending(s32 cpu, struct lab_rq *rq)
{
	if (READ_ONCE(rq->limbo_release))
		lab_limbo_release(cpu, bw_enabled() ? 0 : LAB_LIMBO_OFF);
	else if (READ_ONCE(rq->nr_limbo) && !bw_enabled())
		lab_limbo_release(cpu, LAB_LIMBO_OFF);
}

#endif /* __LAB_BANDWIDTH_BPF_H */
