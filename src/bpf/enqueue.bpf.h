/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The enqueue: enqueue_task_fair() under one queue lock (enqueue_task_masked()), the parts each
 * program calls (lab_enqueue_task(), lab_enqueue_idle(), lab_enqueue_move()), the repick after a
 * ghost (lab_enqueue_repick()) and the wrappers the callbacks use (enqueue_task(),
 * join_queue()). Included by queue.bpf.h, after the queue operations it builds on.
 */
#ifndef __LAB_ENQUEUE_BPF_H
#define __LAB_ENQUEUE_BPF_H

/* Bits of lab_enqueue_task()'s @wk_bits: what the enqueue is, and what wakeup_preempt_fair()
 * needs to know of a wakeup. */
#define LAB_WK_CHECK	1	/* a wakeup (or a new task): check preemption */
#define LAB_WK_FORK	2
#define LAB_WK_SYNC	4
#define LAB_WK_IDLE	8	/* the wakee is SCHED_IDLE */
#define LAB_WK_NORMAL	16	/* the wakee's policy is SCHED_NORMAL or SCHED_EXT */
#define LAB_WK_SELECTED	32	/* WF_RQ_SELECTED: select_cpu ran for this wakeup */
#define LAB_WK_INITIAL	64	/* ENQUEUE_INITIAL: a new task (placed with half a slice) */
#define LAB_WK_PICKED	128	/* the caller dispatches it right away (a newidle pull) */
#define LAB_WK_IF_IDLE	256	/* only if the queue is empty: it becomes the pick (select_cpu) */
#define LAB_WK_INSERT	512	/* the caller can insert a known pick (LAB_ENQ_INSERT/PREEMPT) */

/*
 * The BPF verifier walks a global function, with each of its branches, once in every program
 * that calls it. All of enqueue_task_fair() is ops.enqueue's; the other programs call the
 * parts they use: the wakeup of ops.select_cpu onto an idle queue, and the moves of the
 * balancer, the dispatcher and ops.running, which check no preemption.
 */
#define LAB_WK_ALL		0xffffffffU
#define LAB_WK_IDLE_JOIN	(LAB_WK_IF_IDLE | LAB_WK_INSERT | LAB_WK_INITIAL)
#define LAB_WK_MOVE		LAB_WK_PICKED

/* What lab_enqueue_task() asks its caller to do (a value >= 0: arm the hrtick that many ns). */
#define LAB_ENQ_KICK	(-1)	/* reschedule the CPU (SCX_KICK_PREEMPT) */
#define LAB_ENQ_INSERT	(-2)	/* the task is the pick of its idle queue: insert it */
#define LAB_ENQ_PREEMPT	(-3)	/* the task won the pick against curr: insert it, preempting */
#define LAB_ENQ_REFUSED	(-4)	/* LAB_WK_IF_IDLE and the queue was not empty: nothing done */
#define LAB_ENQ_REPICK	(-5)	/* the pick met a ghost: lab_enqueue_repick() decides */

/* task_ctx.repick: the action the pick judges (LAB_PREEMPT_WAKEUP or LAB_PREEMPT_SHORT) or an
 * idle queue's insert, and whether the enqueue already asks for a reschedule. */
#define LAB_REPICK_ACTION	0x0f
#define LAB_REPICK_INSERT	0x10
#define LAB_REPICK_KICK		0x20

/*
 * pick_next_entity() (@protect: curr's protection counts) for an enqueue; pick_eevdf()'s first
 * shortcut for a queue with no running entity -- a lone queued entity, here the one just
 * enqueued -- is taken without the call (counted as the pick it is).
 */
static __always_inline u32 queue_pick(struct lab_cfs *cfs, lab_pool_t *pool, bool protect,
				      const struct lab_params *params, u64 *st, const u32 mask)
{
	/*
	 * The join of an idle queue (LAB_WK_IF_IDLE, under the lock that found it empty: no
	 * entity, no curr, no ghost) always takes the shortcut; with a constant @mask the verifier
	 * then leaves the whole pick, ghost finalizing included, out of that caller.
	 */
	if ((mask == LAB_WK_IDLE_JOIN || (cfs->nr_queued == 1 && !cfs->curr && !cfs->nr_delayed)) &&
	    !lab_measure_scan(params)) {
		lab_count(st, LAB_ST_PICK);
		return cfs->root;
	}
	return pick_next_entity_opt(cfs, pool, protect, params, st, NULL, false);
}

/*
 * What an enqueue's pick @nse decides: for an idle queue's insert (@insert), whether this task
 * is the CPU's next one (then *@ret is LAB_ENQ_INSERT); for a wakeup, wakeup_preempt_end() of
 * @action against @curr_n, whose decision is returned for enqueue_finish().
 */
static __always_inline int enqueue_pick_decide(struct lab_rq *rq, lab_pool_t *pool, lab_se_t *se,
					       u32 n, bool insert, u32 curr_n, int action, u32 nse,
					       const struct lab_wakeup *wk,
					       const struct lab_params *params, u64 *st, long *ret)
{
	if (!insert)
		return wakeup_preempt_end(&rq->cfs, pool, curr_n, n, action, nse, wk, params, st);
	if (nse == n) {
		rq_set_pending(rq, se, n);
		*ret = LAB_ENQ_INSERT;
	}
	return LAB_PREEMPT_NO;
}

/*
 * The end of an enqueue under its lock: the reschedule that wakeup_preempt_fair()'s @wakeup
 * asks for (over @ret's), preempt=lazy's postponement of it, or the hrtick; see
 * lab_enqueue_task().
 */
static __always_inline long enqueue_finish(struct lab_rq *rq, lab_pool_t *pool, lab_se_t *se,
					   u32 n, int wakeup, u32 wk_bits, u32 lazy,
					   const struct lab_params *params, u64 *st, long ret)
{
	if (wakeup) {
		rq->kicked = 1;
		/* A wakee that won the pick is what the CPU picks next. */
		if (wakeup == LAB_PREEMPT_WAKEUP && (wk_bits & LAB_WK_INSERT) && !rq->pending) {
			rq_set_pending(rq, se, n);
			ret = LAB_ENQ_PREEMPT;
		} else {
			ret = LAB_ENQ_KICK;
		}
	}
	/* resched_curr_lazy() under preempt=lazy: TIF_NEED_RESCHED_LAZY, which the target's next
	 * return to user mode or its next tick acts on. On this CPU that return is at hand (the
	 * waker's syscall or the interrupt ends), so the switch is at once, as before; another
	 * CPU's task waits for its tick (its own returns to user have no sched_ext hook). A wakee
	 * that won the pick waits in the local DSQ meanwhile. */
	if (lazy && (ret == LAB_ENQ_KICK || ret == LAB_ENQ_PREEMPT)) {
		rq->lazy = 1;
		lab_count(st, LAB_ST_PREEMPT_LAZY);
		ret = ret == LAB_ENQ_PREEMPT ? LAB_ENQ_INSERT : 0;
	}
	if (!ret && sched_feat(params, HRTICK) && rq->cfs.curr && rq->cfs.nr_queued > 1) {
		lab_se_t *curr = SE(pool, rq->cfs.curr);

		if (curr->running)
			ret = (long)lab_max_u64(hrtick_delay_ns(curr), 1);
	}
	rq_overload_update(rq);
	return ret;
}

/*
 * enqueue_task_fair() for the task of @tc on @cpu, under one lock: update_curr() of the queue's
 * running entity, then a ghost on this queue requeues and anything else is placed (as a new
 * task with LAB_WK_INITIAL). An entity queued on another CPU (a ghost that woke elsewhere) must
 * have left it first (enqueue_task() does that): calling lab_leave() from here would nest one
 * more call frame on every path that enqueues.
 * The task comes into the scheduler's custody, and for a wakeup wakeup_preempt_fair() decides
 * against the running entity. @custom_slice is the task's sched_runtime slice, 0 for none.
 *
 * When the pick is already known it is delivered at once instead of through ops.dispatch: a
 * wakee that wins the pick against curr goes to the CPU's local DSQ with SCX_ENQ_PREEMPT
 * (LAB_ENQ_PREEMPT), and the pick of a queue with no running entity goes there plainly
 * (LAB_ENQ_INSERT) -- the task the CPU's next pick_task_fair() would choose. Any other
 * reschedule (update_curr() found curr's request or protection over, a short-slice, sync or
 * idle preemption) is a kick (LAB_ENQ_KICK), after which ops.dispatch picks. Otherwise, with
 * HRTICK and someone to switch to, the wall ns until the running entity's deadline for
 * hrtick_update() (enqueue_task_fair() ends with it), else 0.
 */
static __always_inline long enqueue_task_masked(struct task_ctx *tc, s32 cpu, u32 wk_bits,
						u64 custom_slice, const u32 mask)
{
	const struct lab_params *params = params_get();
	lab_pool_t *pool = pool_get();
	u64 *st = stats_row(), now = scx_bpf_now();
	struct lab_wakeup wk = {};
	struct lab_rq *rq;
	lab_se_t *se;
	struct rq *krq;
	long ret;
	bool joined = true, insert = false;
	int wakeup = LAB_PREEMPT_NO;
	u32 n, curr_n = 0;

	/* A constant @mask leaves out of the program what its callers never ask for. */
	wk_bits &= mask;
	if (!pool || !tc || !(rq = rq_get(cpu)))
		return 0;
	n = tc->slot;
	se = SE(pool, n);
	if (wk_bits & LAB_WK_IF_IDLE) {
		/* A cheap look before the lock: most wakeups that are not onto an idle queue end
		 * here. */
		if (se->on_rq || READ_ONCE(rq->cfs.nr_queued) || READ_ONCE(rq->pending))
			return LAB_ENQ_REFUSED;
	}
	if (tc->last_cpu >= 0 && tc->last_cpu != cpu) {
		struct lab_rq *old = rq_get(tc->last_cpu);

		lab_count(st, LAB_ST_MIGRATE);
		se->migrated = 1;
		/* migrate_task_rq_fair() of a task that woke elsewhere: its load history leaves
		 * the old queue (whose lock we do not take) and attaches to this one. */
		if (!se->on_rq && se->avg.last_update_time && old)
			remove_entity_load_avg(&old->cfs, se, st);
	}
	tc->last_cpu = cpu;
	wk.fork = wk_bits & LAB_WK_FORK;
	wk.sync = wk_bits & LAB_WK_SYNC;
	wk.rq_selected = wk_bits & LAB_WK_SELECTED;
	wk.wakee_idle = wk_bits & LAB_WK_IDLE;
	wk.wakee_normal = wk_bits & LAB_WK_NORMAL;
	/* Under preempt=lazy a reschedule of another CPU's task waits for its tick (below); read
	 * before the lock, which allows no helper calls. It and the kick that update_curr() may
	 * ask for below wait in the task's context until the end: a flag known to the BPF
	 * verifier as a constant would have it check every path of the enqueue once per value. */
	WRITE_ONCE(tc->enq_lazy, params->preempt == LAB_PREEMPT_LAZY &&
				 cpu != bpf_get_smp_processor_id());
	WRITE_ONCE(tc->enq_kick, 0);
	krq = krq_of(cpu);

	bpf_spin_lock(&rq->lock);
	if ((wk_bits & LAB_WK_IF_IDLE) &&
	    (se->on_rq || rq->cfs.nr_queued || rq->cfs.curr || rq->pending)) {
		bpf_spin_unlock(&rq->lock);
		return LAB_ENQ_REFUSED;
	}
	pelt_clock(rq, now);
	/* Re-enqueued from the local DSQ (ops.cpu_release): it is not waiting there any more. */
	if (rq->pending == n)
		rq->pending = 0;
	if (account_remote(&rq->cfs, pool, krq, params, st) && resched_curr_lazy(rq, st))
		WRITE_ONCE(tc->enq_kick, 1);
	if (se->on_rq && se->cpu == cpu) {
		if (se->delayed) {
			util_est_enqueue_task(&rq->cfs, se, params);
			requeue_delayed_entity(&rq->cfs, pool, n, params, st);
		} else {
			joined = false;	/* already queued here: only the custody changes */
		}
	} else if (!se->on_rq) {
		se->custom_slice = custom_slice != 0;
		if (custom_slice)
			se->slice = custom_slice;
		se->cpu = cpu;
		util_est_enqueue_task(&rq->cfs, se, params);
		enqueue_entity(&rq->cfs, pool, n,
			       ((wk_bits & LAB_WK_INITIAL) || se->is_new) ? LAB_PLACE_INITIAL : 0,
			       params, st);
	}
	se->custody = 1;
	if (joined && rq->pending)
		rq->pending_stale = 1;
	ret = -(long)READ_ONCE(tc->enq_kick);	/* LAB_ENQ_KICK or 0 */

	if (wk_bits & LAB_WK_PICKED) {
		rq_set_pending(rq, se, n);
	} else if ((wk_bits & LAB_WK_CHECK) && rq->cfs.curr && rq->cfs.curr != n && se->on_rq &&
		   se->cpu == cpu) {
		curr_n = rq->cfs.curr;
		wk.curr_idle = SE(pool, curr_n)->weight == WEIGHT_IDLEPRIO;
		wk.need_resched = rq->kicked;
		wakeup = wakeup_preempt_begin(&rq->cfs, pool, n, &wk, params, st);
	} else if ((wk_bits & LAB_WK_INSERT) && !rq->cfs.curr && !rq->pending && !rq->released &&
		   !rq->offline && !krq_rt_busy(krq) && se->on_rq && se->cpu == cpu) {
		/* No running entity: this CPU's next pick is at hand -- unless a higher class holds
		 * the CPU (then nothing of ours is picked here until it lets go, and the task waits
		 * in our custody, where the balancer can move it) or it is going down. */
		insert = true;
	}
	/* One pick for both questions, which keeps one copy of it (with its ghost finalizing) in
	 * the program: does the wakee win against curr, and what does a queue with no running
	 * entity run next (if this task: the CPU's next task)? */
	if (insert || (wakeup & LAB_PREEMPT_PICK)) {
		int action = wakeup & LAB_REPICK_ACTION;
		u32 nse = queue_pick(&rq->cfs, pool, insert || action != LAB_PREEMPT_SHORT, params,
				     st, mask);

		if (nse == LAB_PICK_RETRY) {
			/* A ghost came first: the pick that finalizes it is lab_enqueue_repick()'s. */
			tc->repick = (insert ? LAB_REPICK_INSERT : action) |
				     (ret == LAB_ENQ_KICK ? LAB_REPICK_KICK : 0);
			tc->repick_curr = curr_n;
			rq_overload_update(rq);
			bpf_spin_unlock(&rq->lock);
			return LAB_ENQ_REPICK;
		}
		wakeup = enqueue_pick_decide(rq, pool, se, n, insert, curr_n, action, nse, &wk, params,
					     st, &ret);
	}
	ret = enqueue_finish(rq, pool, se, n, wakeup, wk_bits, READ_ONCE(tc->enq_lazy), params, st,
			     ret);
	bpf_spin_unlock(&rq->lock);
	return ret;
}

__noinline long lab_enqueue_task(struct task_ctx *tc, s32 cpu, u32 wk_bits, u64 custom_slice)
{
	return enqueue_task_masked(tc, cpu, wk_bits, custom_slice, LAB_WK_ALL);
}

__noinline long lab_enqueue_idle(struct task_ctx *tc, s32 cpu, u32 wk_bits, u64 custom_slice)
{
	return enqueue_task_masked(tc, cpu, wk_bits, custom_slice, LAB_WK_IDLE_JOIN);
}

__noinline long lab_enqueue_move(struct task_ctx *tc, s32 cpu, u32 wk_bits, u64 custom_slice)
{
	return enqueue_task_masked(tc, cpu, wk_bits, custom_slice, LAB_WK_MOVE);
}

/*
 * The rest of lab_enqueue_task() when its pick met a ghost (LAB_ENQ_REPICK): under the lock
 * again, the same pick with the ghosts finalized, and the decision it was for -- if the queue
 * still holds the wakee in custody with the same running entity (with none, for an idle
 * queue's insert); otherwise the CPU's next pick decides. A program of its own keeps the
 * finalizing out of lab_enqueue_task(), where the verifier walked it on every path to the pick.
 * Differs: another CPU may change the queue while the lock is dropped; the pick that met the
 * ghost counts twice in the pick statistics.
 */
__noinline long lab_enqueue_repick(struct task_ctx *tc, s32 cpu, u32 wk_bits)
{
	const struct lab_params *params = params_get();
	lab_pool_t *pool = pool_get();
	u64 *st = stats_row();
	struct rq *krq = krq_of(cpu);
	struct lab_wakeup wk = {};
	int wakeup = LAB_PREEMPT_NO, action;
	struct lab_rq *rq;
	bool lazy, insert;
	u32 n, curr_n, nse;
	lab_se_t *se;
	long ret;

	if (!pool || !tc || !(rq = rq_get(cpu)))
		return 0;
	n = tc->slot;
	se = SE(pool, n);
	action = tc->repick & LAB_REPICK_ACTION;
	insert = tc->repick & LAB_REPICK_INSERT;
	ret = (tc->repick & LAB_REPICK_KICK) ? LAB_ENQ_KICK : 0;
	curr_n = tc->repick_curr;
	tc->repick = 0;
	wk.wakee_idle = wk_bits & LAB_WK_IDLE;
	lazy = params->preempt == LAB_PREEMPT_LAZY && cpu != bpf_get_smp_processor_id();

	bpf_spin_lock(&rq->lock);
	if (se->on_rq && se->cpu == cpu && se->custody &&
	    (insert ? !rq->cfs.curr && !rq->pending && !rq->released && !rq->offline &&
			      !krq_rt_busy(krq) :
		      curr_n && rq->cfs.curr == curr_n)) {
		nse = pick_next_entity(&rq->cfs, pool, insert || action != LAB_PREEMPT_SHORT, params,
				       st, NULL);
		if (nse == LAB_PICK_RETRY) {
			/* More ghosts than one pick finalizes: the CPU's own pick decides. */
			ret = LAB_ENQ_KICK;
		} else {
			wakeup = enqueue_pick_decide(rq, pool, se, n, insert, curr_n, action, nse, &wk,
						     params, st, &ret);
		}
	}
	ret = enqueue_finish(rq, pool, se, n, wakeup, wk_bits, lazy, params, st, ret);
	bpf_spin_unlock(&rq->lock);
	return ret;
}

/* task_dead_fair() / switched_from_fair(): a task that leaves the lab takes its load history
 * off the queue it last ran on (remove_entity_load_avg()). Call after lab_leave(). */
static __always_inline void task_load_remove(struct task_ctx *tc)
{
	lab_pool_t *pool = pool_get();
	struct lab_rq *rq;
	lab_se_t *se;

	if (!pool || tc->last_cpu < 0 || !(rq = rq_get(tc->last_cpu)))
		return;
	se = SE(pool, tc->slot);
	if (!se->on_rq && se->avg.last_update_time)
		remove_entity_load_avg(&rq->cfs, se, stats_row());
}

/* lab_enqueue_task() for @tc's entity, finalizing it first on another CPU's queue it may still
 * be on (a ghost that woke elsewhere: the kernel dequeues a delayed task that migrates). @mask,
 * a constant, is the caller's part of it: LAB_WK_ALL, LAB_WK_IDLE_JOIN or LAB_WK_MOVE. */
static __always_inline long enqueue_task(struct task_ctx *tc, s32 cpu, u32 wk_bits,
					 u64 custom_slice, const u32 mask)
{
	lab_se_t *se;
	long ret;

	if (!tc)
		return 0;
	se = SE(pool_get(), tc->slot);
	if (se->on_rq && se->cpu != cpu && !(wk_bits & LAB_WK_IF_IDLE))
		lab_leave(tc->slot, scx_bpf_now(), !se->delayed);
	/* A task of a group joins its groups' queues here first (enqueue_hierarchy(), whose
	 * effective weight the placement uses) when ops.enqueue places it in a queue. A join of an
	 * idle queue and a balancing move take the light join (group_account()): the task runs
	 * next there, and its pick folds its weight anew (lab_group_fold()). */
	if (mask == LAB_WK_ALL && se->tg && !se->on_rq)
		group_prepare(se, cpu, LAB_GROUP_ENQUEUE);
	if (mask == LAB_WK_IDLE_JOIN) {
		ret = lab_enqueue_idle(tc, cpu, wk_bits, custom_slice);
	} else if (mask == LAB_WK_MOVE) {
		ret = lab_enqueue_move(tc, cpu, wk_bits, custom_slice);
	} else {
		ret = lab_enqueue_task(tc, cpu, wk_bits, custom_slice);
		if (ret == LAB_ENQ_REPICK)
			ret = lab_enqueue_repick(tc, cpu, wk_bits);
	}
	/* A join the enqueue did not use (it found the task queued). */
	if (mask == LAB_WK_ALL && se->h_next_op == LAB_GROUP_ENQUEUE) {
		se->h_next = 0;
		se->h_next_op = 0;
		lab_group_unjoin(cpu, se->tg, se_load_w(se));
	}
	return ret;
}

/* The custom slice (sched_setattr() sched_runtime) of @p, 0 for none. */
static __always_inline u64 task_custom_slice(const struct task_struct *p)
{
	return p->se.custom_slice ? lab_custom_slice(p->se.slice) : 0;
}

/* lab_enqueue_task() for @p on @cpu with @wk_bits, for a move the caller does not insert (a
 * balancing pull, a task found running off its queue): a reschedule it asks for is a kick. */
static __always_inline void join_queue(struct task_struct *p, s32 cpu, u32 wk_bits)
{
	long ret = enqueue_task(tctx_get(p), cpu, wk_bits, task_custom_slice(p), LAB_WK_MOVE);

	if (ret == LAB_ENQ_KICK)
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	else if (ret > 0)
		hrtick_update(cpu, ret);
}

#endif /* __LAB_ENQUEUE_BPF_H */
