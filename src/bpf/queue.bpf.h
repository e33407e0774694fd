/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The queue operations: every change of a CPU's EEVDF queue, each under that queue's lock, and
 * the time accounting they start with (update_curr()). main.bpf.c's callbacks call them; they
 * turn the pure EEVDF core (eevdf.h) into locked steps. Included by main.bpf.c after its maps,
 * lookups and the hrtick.
 */
#ifndef __LAB_QUEUE_BPF_H
#define __LAB_QUEUE_BPF_H

/* Bring the queue's load average up to @now with the weight it held until now (call with the
 * queue locked, before changing what is queued). Ghosts count, as delayed tasks keep load. */
static __always_inline void rq_load_touch(struct lab_rq *rq, struct lab_pool *pool, u64 now)
{
	u64 w = rq->cfs.sum_weight;

	if (rq->cfs.curr && SE(pool, rq->cfs.curr)->on_rq)
		w += SE(pool, rq->cfs.curr)->weight;
	pelt_update(&rq->load, now, w);
}

/*
 * The running task's execution time, current to the rq clock: what the kernel's update_curr()
 * would charge. Valid with @cpu's rq lock held, which every scheduling callback for that CPU has.
 */
static __always_inline u64 exec_now(struct task_struct *p, s32 cpu)
{
	struct rq *rq = bpf_per_cpu_ptr(&runqueues, cpu);
	u64 sum = p->se.sum_exec_runtime;
	s64 d;

	if (rq && rq->curr == p) {
		d = (s64)(rq->clock_task - p->se.exec_start);
		if (d > 0)
			sum += d;
	}
	return sum;
}

/* The task currently on @cpu and its execution time (for remote update_curr()). */
static __always_inline s32 curr_exec_now(s32 cpu, u64 *total)
{
	struct rq *rq = bpf_per_cpu_ptr(&runqueues, cpu);
	struct task_struct *curr;
	s64 d;

	*total = 0;
	if (!rq)
		return 0;
	curr = rq->curr;
	if (!curr)
		return 0;
	*total = BPF_CORE_READ(curr, se.sum_exec_runtime);
	d = (s64)(BPF_CORE_READ(rq, clock_task) - BPF_CORE_READ(curr, se.exec_start));
	if (d > 0)
		*total += d;
	return BPF_CORE_READ(curr, pid);
}

/*
 * update_curr(): charge the queue's running entity for what it ran since it was last charged.
 * Call with the queue locked; @total and @pid describe the task on the CPU right now.
 */
static __always_inline int account_curr(struct lab_cfs *cfs, struct lab_pool *pool, u64 total,
					s32 pid, const struct lab_params *p, u64 *st)
{
	struct lab_se *se;
	s64 delta;

	if (!cfs->curr)
		return LAB_RESCHED_NONE;
	se = SE(pool, cfs->curr);
	if (!se->running || se->pid != pid)
		return LAB_RESCHED_NONE;
	delta = (s64)(total - se->exec_snap);
	if (delta <= 0)
		return LAB_RESCHED_NONE;
	se->exec_snap = total;
	return update_curr_math(cfs, pool, delta, p, st);
}

/*
 * resched_curr_lazy() as update_curr() calls it when a task joins @rq: ask for the CPU to
 * reschedule (counted as preempt_enqueue) unless a request is already pending. Returns true when
 * the caller must kick the CPU (after dropping the lock).
 */
static __always_inline bool resched_curr_lazy(struct lab_rq *rq, u64 *st)
{
	if (rq->kicked)
		return false;
	rq->kicked = 1;
	lab_count(st, LAB_ST_PREEMPT_ENQUEUE);
	return true;
}

/* ---------------------------------------------------------------------------------------------
 * Queue operations
 *
 * The non-static functions below are global BPF subprograms: the verifier checks each once, not
 * once per callback that calls it, which keeps the load time down under emulation. They take
 * scalars (and the task's storage), look up the rest themselves, and are never called with a
 * queue lock held. Moving an entity between queues never holds two queue locks.
 */

/* Declared ahead: lab_dispatch_pick()'s callers give back what they could not dispatch. */
__noinline int lab_undispatch(u32 slot, s32 cpu);

/*
 * Take @n off whatever queue it is on, as a dequeue without DEQUEUE_SLEEP (dequeue_entity()): the
 * queue's running entity is accounted first (update_curr()), then the lag is saved and, with
 * PLACE_REL_DEADLINE, the deadline kept relative. A ghost is finalized instead. Differs: a
 * reschedule that this update_curr() would ask for waits for the CPU's next decision or tick.
 */
__noinline int lab_leave(u32 n, u64 now)
{
	const struct lab_params *p = params_get();
	struct lab_pool *pool = pool_get();
	u64 *st = stats_row(), total;
	struct lab_rq *rq;
	struct lab_se *se;
	s32 cpu, pid;

	if (!pool)
		return 0;
	se = SE(pool, n);
	cpu = se->cpu;
	if (cpu < 0 || !se->on_rq || !(rq = rq_get(cpu)))
		return 0;
	pid = curr_exec_now(cpu, &total);
	bpf_spin_lock(&rq->lock);
	if (se->on_rq && se->cpu == cpu) {
		rq_load_touch(rq, pool, now);
		account_curr(&rq->cfs, pool, total, pid, p, st);
		if (se->delayed) {
			dequeue_entity(&rq->cfs, pool, n, LAB_DEQ_SLEEP | LAB_DEQ_DELAYED, p, st);
			lab_count(st, LAB_ST_GHOST_FINALIZED_OTHER);
		} else {
			dequeue_entity(&rq->cfs, pool, n, 0, p, st);
		}
		se->custody = 0;
		se->running = 0;
		se->picked = 0;
		se->cpu = -1;
	}
	bpf_spin_unlock(&rq->lock);
	return 0;
}

/*
 * enqueue_task_fair()'s EEVDF part for the task of @tc on @cpu: a ghost on this queue requeues,
 * anything else is placed (as a new task with @initial). A ghost elsewhere (it woke on another
 * CPU) is finalized there first. @custom_slice is the task's sched_runtime slice, 0 for none.
 * Returns LAB_JOIN_KICK when update_curr() found the running task's request or protection over:
 * the caller reschedules @cpu, as resched_curr_lazy() in the kernel's update_curr(). Otherwise,
 * with HRTICK and someone to switch to, the wall ns until the running entity's deadline for
 * hrtick_update() (enqueue_task_fair() ends with it), else 0.
 */
#define LAB_JOIN_KICK	(-1)

__noinline long lab_join(struct task_ctx *tc, s32 cpu, u32 initial, u64 custom_slice)
{
	const struct lab_params *params = params_get();
	struct lab_pool *pool = pool_get();
	u64 *st = stats_row(), total, now = scx_bpf_now();
	struct lab_rq *rq;
	struct lab_se *se;
	s32 pid;
	long ret = 0;
	u32 n;

	if (!pool || !tc || !(rq = rq_get(cpu)))
		return 0;
	n = tc->slot;
	se = SE(pool, n);
	if (se->on_rq && se->cpu != cpu)
		lab_leave(n, now);
	if (!se->on_rq)
		pelt_update(&tc->load, now, 0);	/* it was asleep */
	if (tc->last_cpu >= 0 && tc->last_cpu != cpu) {
		lab_count(st, LAB_ST_MIGRATE);
		slot_migrated[n & LAB_SLOT_MASK] = 1;
	}
	tc->last_cpu = cpu;

	pid = curr_exec_now(cpu, &total);
	bpf_spin_lock(&rq->lock);
	rq_load_touch(rq, pool, now);
	if (account_curr(&rq->cfs, pool, total, pid, params, st) && resched_curr_lazy(rq, st))
		ret = LAB_JOIN_KICK;
	if (se->on_rq && se->cpu == cpu) {
		if (se->delayed)
			requeue_delayed_entity(&rq->cfs, pool, n, params, st);
	} else if (!se->on_rq) {
		se->custom_slice = custom_slice != 0;
		if (custom_slice)
			se->slice = custom_slice;
		se->cpu = cpu;
		enqueue_entity(&rq->cfs, pool, n, (initial || se->is_new) ? LAB_PLACE_INITIAL : 0,
			       params, st);
	}
	if (!ret && sched_feat(params, HRTICK) && rq->cfs.curr && rq->cfs.nr_queued > 1) {
		struct lab_se *curr = SE(pool, rq->cfs.curr);

		if (curr->running)
			ret = (long)lab_max_u64(hrtick_delay_ns(curr), 1);
	}
	bpf_spin_unlock(&rq->lock);
	return ret;
}

/* lab_join() for @p (its sched_setattr() custom slice read here). */
static __always_inline void join_queue(struct task_struct *p, s32 cpu, bool initial)
{
	u64 custom = p->se.custom_slice ? lab_custom_slice(p->se.slice) : 0;

	long ret = lab_join(tctx_get(p), cpu, initial, custom);

	if (ret == LAB_JOIN_KICK)
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	else if (ret > 0)
		hrtick_update(cpu, ret);
}

/* Bits of lab_enqueue_entity()'s @wk: what wakeup_preempt_fair() needs to know of the wakeup. */
#define LAB_WK_CHECK	1	/* a wakeup (or a new task): check preemption */
#define LAB_WK_FORK	2
#define LAB_WK_SYNC	4
#define LAB_WK_IDLE	8	/* the wakee is SCHED_IDLE */
#define LAB_WK_NORMAL	16	/* the wakee's policy is SCHED_NORMAL or SCHED_EXT */
#define LAB_WK_SELECTED	32	/* WF_RQ_SELECTED: select_cpu ran for this wakeup */

/*
 * ops.enqueue's queue part: entity @n on @cpu comes into the scheduler's custody; for a wakeup,
 * wakeup_preempt_fair() decides against the running entity. Returns the preemption reason.
 */
__noinline int lab_enqueue_entity(u32 n, s32 cpu, u32 wk_bits)
{
	const struct lab_params *params = params_get();
	struct lab_pool *pool = pool_get();
	struct lab_wakeup wk = {};
	u64 *st = stats_row(), total;
	int preempt = LAB_PREEMPT_NO;
	struct lab_rq *rq;
	struct lab_se *se;
	s32 pid;

	if (!pool || !(rq = rq_get(cpu)))
		return 0;
	se = SE(pool, n);
	wk.fork = wk_bits & LAB_WK_FORK;
	wk.sync = wk_bits & LAB_WK_SYNC;
	wk.rq_selected = wk_bits & LAB_WK_SELECTED;
	wk.wakee_idle = wk_bits & LAB_WK_IDLE;
	wk.wakee_normal = wk_bits & LAB_WK_NORMAL;

	pid = curr_exec_now(cpu, &total);
	bpf_spin_lock(&rq->lock);
	se->custody = 1;
	if ((wk_bits & LAB_WK_CHECK) && rq->cfs.curr && rq->cfs.curr != n && se->on_rq &&
	    se->cpu == cpu) {
		struct lab_se *curr = SE(pool, rq->cfs.curr);
		int wakeup;

		if (account_curr(&rq->cfs, pool, total, pid, params, st) &&
		    resched_curr_lazy(rq, st))
			preempt = LAB_PREEMPT_ENQUEUE;
		wk.curr_idle = curr->weight == WEIGHT_IDLEPRIO;
		wk.need_resched = rq->kicked;
		wakeup = wakeup_preempt_fair(&rq->cfs, pool, n, &wk, params, st, NULL);
		if (wakeup) {
			rq->kicked = 1;
			preempt = wakeup;
		}
	}
	bpf_spin_unlock(&rq->lock);
	return preempt;
}

/* What lab_dispatch_pick() found. */
#define LAB_PICK_NONE	0	/* nothing to run: balance */
#define LAB_PICK_KEEP	-1	/* keep prev running */
#define LAB_PICK_BUSY	-2	/* the pick is not ours to dispatch (already dispatched) */

/*
 * pick_task_fair(): account prev, pick (finalizing ghosts). Returns a slot to dispatch (taken
 * out of the scheduler's custody), or one of LAB_PICK_*.
 */
__noinline long lab_dispatch_pick(s32 cpu, u64 total, s32 prev_pid, u64 now)
{
	const struct lab_params *params = params_get();
	struct lab_pool *pool = pool_get();
	struct lab_rq *rq = rq_get(cpu);
	u64 *st = stats_row();
	long ret = LAB_PICK_NONE;
	u32 n;

	if (!pool || !rq)
		return LAB_PICK_NONE;
	bpf_spin_lock(&rq->lock);
	rq_load_touch(rq, pool, now);
	account_curr(&rq->cfs, pool, total, prev_pid, params, st);
	n = pick_next_entity(&rq->cfs, pool, true, params, st, NULL);
	if (n) {
		struct lab_se *se = SE(pool, n);

		lab_count(st, LAB_ST_DISPATCH);
		if (n == rq->cfs.curr && se->running && se->pid == prev_pid) {
			ret = LAB_PICK_KEEP;
			rq->kicked = 0;	/* the reschedule we asked for happened: prev won again */
			lab_count(st, LAB_ST_DISPATCH_KEEP);
		} else if (se->custody) {
			se->custody = 0;
			se->picked = 1;
			ret = n;
		} else {
			ret = LAB_PICK_BUSY;
		}
	}
	bpf_spin_unlock(&rq->lock);
	return ret;
}

/* Give @slot back to the custody of @cpu's queue after a dispatch that could not happen. */
__noinline int lab_undispatch(u32 slot, s32 cpu)
{
	struct lab_pool *pool = pool_get();
	struct lab_rq *rq = rq_get(cpu);

	if (!pool || !rq)
		return 0;
	bpf_spin_lock(&rq->lock);
	if (SE(pool, slot)->on_rq && SE(pool, slot)->cpu == cpu) {
		SE(pool, slot)->custody = 1;
		SE(pool, slot)->picked = 0;
	}
	bpf_spin_unlock(&rq->lock);
	return 0;
}

/*
 * set_next_task_fair(): entity @n starts running on @cpu (@sum_exec: its execution time so far),
 * as the pick (@first, set_next_entity(first)) or re-run after a property change. Returns how
 * long until its deadline when the hrtick should be armed, else 0.
 */
__noinline long lab_set_next(u32 n, s32 cpu, u64 sum_exec, u64 now)
{
	const struct lab_params *params = params_get();
	struct lab_pool *pool = pool_get();
	struct lab_rq *rq = rq_get(cpu);
	struct lab_cpu *pc;
	struct lab_se *se;
	long hrtick_ns = 0;

	if (!pool || !rq)
		return 0;
	se = SE(pool, n);
	pc = &lab_cpus[cpu & (LAB_MAX_CPUS - 1)];
	bpf_spin_lock(&rq->lock);
	pelt_update(&rq->util, now, pc->running ? LAB_SCHED_CAPACITY : 0);
	pc->running = 1;
	if (se->on_rq && se->cpu == cpu) {
		set_next_entity(&rq->cfs, pool, n, se->picked, params);
		se->picked = 0;
		se->running = 1;
		se->custody = 0;
		se->exec_snap = sum_exec;
		rq->kicked = 0;
		/* hrtick_start_fair(): only when there is someone to switch to. */
		if (sched_feat(params, HRTICK) && rq->cfs.nr_queued > 1)
			hrtick_ns = (long)lab_max_u64(hrtick_delay_ns(se), 1);
	}
	bpf_spin_unlock(&rq->lock);
	return hrtick_ns;
}

/*
 * dequeue_task_fair(): entity @n leaves its queue (@flags: LAB_DEQ_*), maybe as a ghost, after
 * update_curr() of the queue's running entity. @charged: the caller knows that entity was just
 * charged (a sleeper: ops.stopping accounted it), so the remote read is skipped.
 */
__noinline int lab_dequeue_entity(u32 n, u32 flags, u32 charged, u64 now)
{
	const struct lab_params *params = params_get();
	struct lab_pool *pool = pool_get();
	u64 *st = stats_row(), total = 0;
	struct lab_rq *rq;
	struct lab_se *se;
	s32 cpu, pid = 0;

	if (!pool)
		return 0;
	se = SE(pool, n);
	cpu = se->cpu;
	if (cpu < 0 || !(rq = rq_get(cpu)))
		return 0;
	if (!charged)
		pid = curr_exec_now(cpu, &total);
	bpf_spin_lock(&rq->lock);
	rq_load_touch(rq, pool, now);
	if (!charged)
		account_curr(&rq->cfs, pool, total, pid, params, st);
	if (se->on_rq && se->cpu == cpu) {
		se->running = 0;
		se->custody = 0;
		se->picked = 0;
		if (dequeue_entity(&rq->cfs, pool, n, flags, params, st))
			se->cpu = -1;
	}
	bpf_spin_unlock(&rq->lock);
	return 0;
}

/* task_tick_fair(): account the running entity; returns update_curr()'s reschedule reason. */
__noinline int lab_tick_account(s32 cpu, u64 sum_exec, s32 pid, u64 now)
{
	const struct lab_params *params = params_get();
	struct lab_pool *pool = pool_get();
	struct lab_rq *rq = rq_get(cpu);
	u64 *st = stats_row();
	int resched;

	if (!pool || !rq)
		return 0;
	bpf_spin_lock(&rq->lock);
	rq_load_touch(rq, pool, now);
	pelt_update(&rq->util, now, LAB_SCHED_CAPACITY);
	resched = account_curr(&rq->cfs, pool, sum_exec, pid, params, st);
	if (resched)
		rq->kicked = 1;
	bpf_spin_unlock(&rq->lock);
	return resched;
}

/*
 * reweight_task_fair(): entity @n gets @weight (and its inverse), keeping its lag (and V), after
 * update_curr() of its queue. Usually the entity is not queued here: the core wraps a nice change
 * in a dequeue/enqueue pair (DEQUEUE_SAVE), so only its saved lag is rescaled.
 */
__noinline int lab_reweight(u32 n, u32 weight, u32 inv_weight)
{
	const struct lab_params *params = params_get();
	struct lab_pool *pool = pool_get();
	u64 *st = stats_row(), total;
	struct lab_rq *rq;
	struct lab_se *se;
	s32 cpu, pid;

	if (!pool)
		return 0;
	se = SE(pool, n);
	cpu = se->cpu;
	if (se->on_rq && cpu >= 0 && (rq = rq_get(cpu))) {
		pid = curr_exec_now(cpu, &total);
		bpf_spin_lock(&rq->lock);
		account_curr(&rq->cfs, pool, total, pid, params, st);
		if (se->on_rq && se->cpu == cpu)
			reweight_entity(&rq->cfs, pool, n, weight, inv_weight, params, st);
		else
			reweight_entity(NULL, pool, n, weight, inv_weight, params, NULL);
		bpf_spin_unlock(&rq->lock);
	} else {
		reweight_entity(NULL, pool, n, weight, inv_weight, params, NULL);
	}
	return 0;
}

#endif /* __LAB_QUEUE_BPF_H */
