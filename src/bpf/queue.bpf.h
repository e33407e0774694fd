/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The queue operations: every change of a CPU's EEVDF queue, each under that queue's lock, and
 * the time accounting they start with (update_curr()). main.bpf.c's callbacks call them; they
 * turn the pure EEVDF core (eevdf.h) into locked steps. Included by main.bpf.c after its maps,
 * lookups and the hrtick.
 */
#ifndef __LAB_QUEUE_BPF_H
#define __LAB_QUEUE_BPF_H

/* The time of the operation that just took @rq's lock, for the load signals it updates: the
 * latest this queue has seen (another CPU's clock may read a little behind). */
static __always_inline void pelt_clock(struct lab_rq *rq, u64 now)
{
	if ((s64)(now - rq->cfs.clock_pelt) > 0)
		rq->cfs.clock_pelt = now;
}

/* util_est_enqueue() / util_est_dequeue() of a task when UTIL_EST is on. A ghost's estimate
 * left the queue's sum at its sleep. */
static __always_inline void util_est_enqueue_task(struct lab_cfs *cfs, const lab_se_t *se,
						  const struct lab_params *p)
{
	if (sched_feat(p, UTIL_EST))
		util_est_enqueue(cfs, se);
}

static __always_inline void util_est_dequeue_task(struct lab_cfs *cfs, const lab_se_t *se,
						  const struct lab_params *p)
{
	if (sched_feat(p, UTIL_EST) && !se->delayed)
		util_est_dequeue(cfs, se);
}

/* The kernel's runqueue of @cpu, to read its running task (rq->curr) and clock. */
static __always_inline struct rq *krq_of(s32 cpu)
{
	return bpf_per_cpu_ptr(&runqueues, cpu);
}

/*
 * The task running on @krq and its execution time current to the rq clock: what the kernel's
 * update_curr() would charge it. Plain loads, no helper: callable with a queue lock held, so that
 * the charge and what the queue does next see the same instant. Returns the task's pid (0: none).
 */
static __always_inline s32 krq_curr_exec(struct rq *krq, u64 *total)
{
	struct task_struct *curr;
	s64 d;

	*total = 0;
	if (!krq)
		return 0;
	curr = krq->curr;
	if (!curr)
		return 0;
	*total = curr->se.sum_exec_runtime;
	d = (s64)(krq->clock_task - curr->se.exec_start);
	if (d > 0)
		*total += d;
	return curr->pid;
}

/* The running task's execution time for @p running on @cpu (its rq lock held by the caller). */
static __always_inline u64 exec_now(struct task_struct *p, s32 cpu)
{
	struct rq *krq = krq_of(cpu);
	u64 total;

	if (krq && krq->curr == p && krq_curr_exec(krq, &total))
		return total;
	return p->se.sum_exec_runtime;
}

/*
 * update_curr(): charge the queue's running entity for what it ran since it was last charged.
 * Call with the queue locked; @total and @pid describe the task on the CPU right now.
 */
static __always_inline int account_curr(struct lab_cfs *cfs, lab_pool_t *pool, u64 total,
					s32 pid, const struct lab_params *p, u64 *st)
{
	lab_se_t *se;
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
 * update_curr() of @cpu's running entity, with the running task read under the lock: a remote
 * charge (a wakeup, a dequeue, a pull from another CPU). Skipped when the queue has no running
 * entity, which is the common case of a wakeup onto an idle CPU.
 */
static __always_inline int account_remote(struct lab_cfs *cfs, lab_pool_t *pool,
					  struct rq *krq, const struct lab_params *p, u64 *st)
{
	u64 total;
	s32 pid;

	if (!cfs->curr)
		return LAB_RESCHED_NONE;
	pid = krq_curr_exec(krq, &total);
	return account_curr(cfs, pool, total, pid, p, st);
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

/*
 * How many queues have two or more runnable entities: the lab's rd->overloaded. With none, a
 * newidle balance has nothing to pull and returns at once, as sched_balance_newidle() does
 * without an overloaded root domain. On its own cache line: written only when a queue crosses
 * the threshold.
 */
u64 nr_overloaded __attribute__((aligned(64)));
u64 nr_overloaded_pad[7];
/* The overloaded CPUs, one bit each: what a balance looks at, instead of every CPU. */
u64 overloaded_mask[LAB_MAX_CPUS / 64] __attribute__((aligned(64)));

/* Keep @rq's share of nr_overloaded current (call with the queue locked, after a change): two
 * or more runnable entities, or one behind a higher class's task (lab_nr_busy()). */
static __always_inline void rq_overload_update(struct lab_rq *rq)
{
	u32 q = rq->cfs.nr_queued, d = rq->cfs.nr_delayed, n = q > d ? q - d : 0;
	u8 ov = n && n + rq->released >= 2;
	u64 bit = 1ULL << (rq->cpu & 63);
	u32 w = (rq->cpu / 64) & (LAB_MAX_CPUS / 64 - 1);

	if (ov == rq->overloaded)
		return;
	rq->overloaded = ov;
	if (ov) {
		__sync_fetch_and_or(&overloaded_mask[w], bit);
		__sync_fetch_and_add(&nr_overloaded, 1);
	} else {
		__sync_fetch_and_and(&overloaded_mask[w], ~bit);
		__sync_fetch_and_add(&nr_overloaded, -1);
	}
}

/* The pick waiting in the local DSQ is @n: note it (lab_set_next() clears it). */
static __always_inline void rq_set_pending(struct lab_rq *rq, lab_se_t *se, u32 n)
{
	se->custody = 0;
	se->picked = 1;
	rq->pending = n;
	rq->pending_stale = 0;
}

/* ---------------------------------------------------------------------------------------------
 * Queue operations
 *
 * The non-static functions below are global BPF subprograms: the verifier checks each once, not
 * once per callback that calls it, which keeps the load time down under emulation. They take
 * scalars (and the task's storage), look up the rest themselves, and are never called with a
 * queue lock held. Moving an entity between queues never holds two queue locks. Each takes one
 * queue lock once; the work under it is bounded by the tree's depth (LAB_TREE_MAX_DEPTH) per
 * tree operation.
 */

/*
 * Take @n off whatever queue it is on, as a dequeue without DEQUEUE_SLEEP (dequeue_entity()): the
 * queue's running entity is accounted first (update_curr()), then the lag is saved and, with
 * PLACE_REL_DEADLINE, the deadline kept relative. A ghost is finalized instead. @migrate: the
 * entity moves to another CPU's queue (task_on_rq_migrating()): its load history goes with it.
 * Differs: a reschedule that this update_curr() would ask for waits for the CPU's next decision
 * or tick.
 */
__noinline int lab_leave(u32 n, u64 now, u32 migrate)
{
	const struct lab_params *p = params_get();
	lab_pool_t *pool = pool_get();
	u64 *st = stats_row();
	struct lab_rq *rq;
	lab_se_t *se;
	struct rq *krq;
	s32 cpu;

	if (!pool)
		return 0;
	se = SE(pool, n);
	cpu = se->cpu;
	if (cpu < 0 || !se->on_rq || !(rq = rq_get(cpu)))
		return 0;
	krq = krq_of(cpu);
	bpf_spin_lock(&rq->lock);
	if (se->on_rq && se->cpu == cpu) {
		pelt_clock(rq, now);
		account_remote(&rq->cfs, pool, krq, p, st);
		if (se->delayed) {
			dequeue_entity(&rq->cfs, pool, n, LAB_DEQ_SLEEP | LAB_DEQ_DELAYED, p, st);
			lab_count(st, LAB_ST_GHOST_FINALIZED_OTHER);
		} else {
			util_est_dequeue_task(&rq->cfs, se, p);
			dequeue_entity(&rq->cfs, pool, n, migrate ? LAB_DEQ_MIGRATE : 0, p, st);
		}
		if (rq->pending == n)
			rq->pending = 0;
		se->custody = 0;
		se->running = 0;
		se->picked = 0;
		se->cpu = -1;
		rq_overload_update(rq);
	}
	bpf_spin_unlock(&rq->lock);
	return 0;
}

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
					   u32 n, int wakeup, u32 wk_bits, bool lazy,
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
	long ret = 0;
	bool joined = true, lazy, insert = false;
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
	 * before the lock, which allows no helper calls. */
	lazy = params->preempt == LAB_PREEMPT_LAZY && cpu != bpf_get_smp_processor_id();
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
		ret = LAB_ENQ_KICK;
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

	if (wk_bits & LAB_WK_PICKED) {
		rq_set_pending(rq, se, n);
	} else if ((wk_bits & LAB_WK_CHECK) && rq->cfs.curr && rq->cfs.curr != n && se->on_rq &&
		   se->cpu == cpu) {
		curr_n = rq->cfs.curr;
		wk.curr_idle = SE(pool, curr_n)->weight == WEIGHT_IDLEPRIO;
		wk.need_resched = rq->kicked;
		wakeup = wakeup_preempt_begin(&rq->cfs, pool, n, &wk, params, st);
	} else if ((wk_bits & LAB_WK_INSERT) && !rq->cfs.curr && !rq->pending && se->on_rq &&
		   se->cpu == cpu) {
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
	ret = enqueue_finish(rq, pool, se, n, wakeup, wk_bits, lazy, params, st, ret);
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
	    (insert ? !rq->cfs.curr && !rq->pending : curr_n && rq->cfs.curr == curr_n)) {
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
	if (mask == LAB_WK_IDLE_JOIN)
		return lab_enqueue_idle(tc, cpu, wk_bits, custom_slice);
	if (mask == LAB_WK_MOVE)
		return lab_enqueue_move(tc, cpu, wk_bits, custom_slice);
	ret = lab_enqueue_task(tc, cpu, wk_bits, custom_slice);
	if (ret == LAB_ENQ_REPICK)
		ret = lab_enqueue_repick(tc, cpu, wk_bits);
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

/* Entities lab_first_movable() looks at past running and inserted ones. */
#define LAB_PULL_SCAN_OFFLINE	8

/* What lab_dispatch_pick() found. */
#define LAB_PICK_NONE	0	/* nothing to run: balance */
#define LAB_PICK_KEEP	-1	/* keep prev running */
#define LAB_PICK_BUSY	-2	/* the pick is not ours to dispatch (already dispatched) */
#define LAB_PICK_AGAIN	-3	/* the pick finalized its quota of ghosts: pick again */

/*
 * pick_task_fair(): account prev, pick (finalizing ghosts). Returns a slot to dispatch (taken
 * out of the scheduler's custody), or one of LAB_PICK_*.
 */
__noinline long lab_dispatch_pick(s32 cpu, u64 total, s32 prev_pid, u64 now)
{
	const struct lab_params *params = params_get();
	lab_pool_t *pool = pool_get();
	struct lab_rq *rq = rq_get(cpu);
	u64 *st = stats_row();
	long ret = LAB_PICK_NONE;
	u32 n;

	if (!pool || !rq)
		return LAB_PICK_NONE;
	bpf_spin_lock(&rq->lock);
	pelt_clock(rq, now);
	account_curr(&rq->cfs, pool, total, prev_pid, params, st);
	n = pick_next_entity(&rq->cfs, pool, true, params, st, NULL);
	if (n == LAB_PICK_RETRY) {
		ret = LAB_PICK_AGAIN;
	} else if (n) {
		lab_se_t *se = SE(pool, n);

		lab_count(st, LAB_ST_DISPATCH);
		if (n == rq->cfs.curr && se->running && se->pid == prev_pid) {
			ret = LAB_PICK_KEEP;
			rq->kicked = 0;	/* the reschedule we asked for happened: prev won again */
			lab_count(st, LAB_ST_DISPATCH_KEEP);
		} else if (se->custody && !rq->pending) {
			rq_set_pending(rq, se, n);
			ret = n;
		} else {
			ret = LAB_PICK_BUSY;
		}
	}
	rq_overload_update(rq);
	bpf_spin_unlock(&rq->lock);
	return ret;
}

/* Set @cpu's released (a higher class holds it) or offline flag to @val, under its lock. */
#define LAB_RQ_RELEASED	0
#define LAB_RQ_OFFLINE	1
__noinline int lab_rq_set(s32 cpu, u32 which, u32 val)
{
	struct lab_rq *rq = rq_get(cpu);

	if (!rq)
		return 0;
	bpf_spin_lock(&rq->lock);
	if (which == LAB_RQ_RELEASED)
		rq->released = val;
	else
		rq->offline = val;
	rq_overload_update(rq);
	bpf_spin_unlock(&rq->lock);
	return 0;
}

/* The first entity of @cpu's queue in the scheduler's custody (not running, not inserted), or a
 * ghost; 0 when none: what ops.cpu_offline moves away, one at a time. */
__noinline u32 lab_first_movable(s32 cpu)
{
	lab_pool_t *pool = pool_get();
	struct lab_rq *rq = rq_get(cpu);
	u32 n, found = 0;
	int i;

	if (!rq)
		return 0;
	bpf_spin_lock(&rq->lock);
	n = rb_first(&rq->cfs, pool);
	bpf_for(i, 0, LAB_PULL_SCAN_OFFLINE) {
		lab_se_t *se;

		if (!n)
			break;
		se = SE(pool, n);
		if (se->delayed || (se->custody && !se->running)) {
			found = n;
			break;
		}
		n = rb_next(pool, n);
	}
	bpf_spin_unlock(&rq->lock);
	return found;
}

/* Give @slot back to the custody of @cpu's queue after a dispatch that could not happen. */
__noinline int lab_undispatch(u32 slot, s32 cpu)
{
	lab_pool_t *pool = pool_get();
	struct lab_rq *rq = rq_get(cpu);

	if (!pool || !rq)
		return 0;
	bpf_spin_lock(&rq->lock);
	if (SE(pool, slot)->on_rq && SE(pool, slot)->cpu == cpu) {
		SE(pool, slot)->custody = 1;
		SE(pool, slot)->picked = 0;
	}
	if (rq->pending == slot)
		rq->pending = 0;
	bpf_spin_unlock(&rq->lock);
	return 0;
}

/* lab_set_next()'s answer when the pick waiting in the local DSQ is no longer the pick. */
#define LAB_SET_NEXT_REPICK	(-1)

/*
 * set_next_task_fair(): entity @n starts running on @cpu (@sum_exec: its execution time so far),
 * as the pick (@first, set_next_entity(first)) or re-run after a property change. Returns how
 * long until its deadline when the hrtick should be armed, else 0; or LAB_SET_NEXT_REPICK when
 * entities joined the queue after @n was picked and the pick now chooses another one (the
 * kernel picks when the CPU switches, not before): the caller reschedules, and ops.dispatch
 * picks again.
 */
__noinline long lab_set_next(u32 n, s32 cpu, u64 sum_exec, u64 now)
{
	const struct lab_params *params = params_get();
	lab_pool_t *pool = pool_get();
	struct lab_rq *rq = rq_get(cpu);
	u64 *st = stats_row();
	lab_se_t *se;
	long hrtick_ns = 0;

	if (!pool || !rq)
		return 0;
	se = SE(pool, n);
	bpf_spin_lock(&rq->lock);
	pelt_clock(rq, now);
	if (se->on_rq && se->cpu == cpu) {
		bool stale = rq->pending == n && rq->pending_stale && se->picked;

		if (rq->pending == n)
			rq->pending = 0;
		if (stale && pick_next_entity(&rq->cfs, pool, true, params, st, NULL) != n) {
			lab_count(st, LAB_ST_DISPATCH_REPICK);
			hrtick_ns = LAB_SET_NEXT_REPICK;
		}
		set_next_entity(&rq->cfs, pool, n, se->picked, params, st);
		se->picked = 0;
		se->running = 1;
		se->custody = 0;
		se->exec_snap = sum_exec;
		rq->kicked = hrtick_ns == LAB_SET_NEXT_REPICK;
		rq->lazy = 0;	/* __schedule() clears both need-resched bits */
		/* hrtick_start_fair(): only when there is someone to switch to. */
		if (!hrtick_ns && sched_feat(params, HRTICK) && rq->cfs.nr_queued > 1)
			hrtick_ns = (long)lab_max_u64(hrtick_delay_ns(se), 1);
		rq_overload_update(rq);
	}
	bpf_spin_unlock(&rq->lock);
	return hrtick_ns;
}

/*
 * put_prev_task_fair() for @p leaving @cpu: update_curr() with @sum_exec, its execution time so
 * far, and, when it stays runnable, back into the tree. Call with nothing locked.
 */
static __always_inline void lab_put_prev(struct lab_rq *rq, lab_pool_t *pool, u32 n, s32 cpu,
					 u64 sum_exec, s32 pid, bool runnable, u64 now,
					 const struct lab_params *params, u64 *st)
{
	lab_se_t *se = SE(pool, n);

	pelt_clock(rq, now);
	if (se->cpu == cpu) {
		account_curr(&rq->cfs, pool, sum_exec, pid, params, st);
		se->running = 0;
		se->last_ran = now;
		if (runnable)
			put_prev_entity(&rq->cfs, pool, n, params, st);
	}
}

/* ops.stopping(runnable)'s queue part: lab_put_prev() under @cpu's queue lock. */
__noinline int lab_stop(u32 n, s32 cpu, u64 sum_exec, s32 pid, u32 runnable)
{
	const struct lab_params *params = params_get();
	lab_pool_t *pool = pool_get();
	struct lab_rq *rq = rq_get(cpu);
	u64 *st = stats_row(), now = scx_bpf_now();

	if (!pool || !rq)
		return 0;
	bpf_spin_lock(&rq->lock);
	lab_put_prev(rq, pool, n, cpu, sum_exec, pid, runnable, now, params, st);
	bpf_spin_unlock(&rq->lock);
	return 0;
}

/*
 * dequeue_task_fair(): entity @n leaves its queue (@flags: LAB_DEQ_*), maybe as a ghost, after
 * update_curr() of the queue's running entity. @sum_exec != 0: the entity is the task running
 * on this CPU and stopping now (ops.stopping(false), which does nothing, ran just before): this
 * is its put_prev_task_fair() too, charged with that execution time, under the same lock.
 */
__noinline int lab_dequeue_entity(u32 n, u32 flags, u64 sum_exec, s32 pid, u64 now)
{
	const struct lab_params *params = params_get();
	lab_pool_t *pool = pool_get();
	u64 *st = stats_row();
	struct lab_rq *rq;
	lab_se_t *se;
	struct rq *krq;
	s32 cpu;

	if (!pool)
		return 0;
	se = SE(pool, n);
	cpu = se->cpu;
	if (cpu < 0 || !(rq = rq_get(cpu)))
		return 0;
	krq = sum_exec ? NULL : krq_of(cpu);
	bpf_spin_lock(&rq->lock);
	pelt_clock(rq, now);
	if (sum_exec)
		lab_put_prev(rq, pool, n, cpu, sum_exec, pid, false, now, params, st);
	else
		account_remote(&rq->cfs, pool, krq, params, st);
	if (se->on_rq && se->cpu == cpu) {
		if (rq->pending == n)
			rq->pending = 0;
		se->running = 0;
		se->custody = 0;
		se->picked = 0;
		/* dequeue_task_fair(): the estimates before the entity leaves (a ghost's went at
		 * its sleep). */
		if (!(flags & LAB_DEQ_DELAYED)) {
			util_est_dequeue_task(&rq->cfs, se, params);
			if (sched_feat(params, UTIL_EST))
				util_est_update(se, flags & LAB_DEQ_SLEEP);
		}
		if (dequeue_entity(&rq->cfs, pool, n, flags, params, st))
			se->cpu = -1;
		rq_overload_update(rq);
	}
	bpf_spin_unlock(&rq->lock);
	return 0;
}

/* sched_balance_update_blocked_averages() of @cpu's queue: bring its load signals to @now (what
 * departed is taken off). For a CPU that runs none of our tasks, whose signals nothing else
 * updates meanwhile. */
__noinline int lab_update_blocked(s32 cpu, u64 now)
{
	struct lab_rq *rq = rq_get(cpu);
	u64 *st = stats_row();

	if (!rq)
		return 0;
	bpf_spin_lock(&rq->lock);
	pelt_clock(rq, now);
	update_blocked_load(&rq->cfs, st);
	bpf_spin_unlock(&rq->lock);
	return 0;
}

/* Or'ed into lab_tick_account()'s result: a lazy reschedule was pending. */
#define LAB_RESCHED_LAZY	0x100

/* task_tick_fair(): account the running entity; returns update_curr()'s reschedule reason, with
 * LAB_RESCHED_LAZY when a lazy one was pending (sched_tick() upgrades it: the switch is now). */
__noinline int lab_tick_account(s32 cpu, u64 sum_exec, s32 pid, u64 now)
{
	const struct lab_params *params = params_get();
	lab_pool_t *pool = pool_get();
	struct lab_rq *rq = rq_get(cpu);
	u64 *st = stats_row();
	int resched;

	if (!pool || !rq)
		return 0;
	bpf_spin_lock(&rq->lock);
	pelt_clock(rq, now);
	resched = account_curr(&rq->cfs, pool, sum_exec, pid, params, st);
	entity_tick_load(&rq->cfs, pool, st);
	if (rq->lazy)
		resched |= LAB_RESCHED_LAZY;
	rq->lazy = 0;
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
	lab_pool_t *pool = pool_get();
	u64 *st = stats_row();
	struct lab_rq *rq;
	lab_se_t *se;
	struct rq *krq;
	s32 cpu;

	if (!pool)
		return 0;
	se = SE(pool, n);
	cpu = se->cpu;
	if (se->on_rq && cpu >= 0 && (rq = rq_get(cpu))) {
		krq = krq_of(cpu);
		bpf_spin_lock(&rq->lock);
		account_remote(&rq->cfs, pool, krq, params, st);
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
