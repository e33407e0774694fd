/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The runqueue (fair.c: the EEVDF parts of enqueue/dequeue, update_curr(), slice protection,
 * reweight and yield).
 *
 * These functions see one queue and its entities; the BPF side calls them under that queue's
 * lock, after accounting the running entity (update_curr()), and turns their results into
 * sched_ext actions (dispatch, kick). They count what they decide in @st, a row of
 * enum lab_stat counters.
 */
#ifndef __LAB_RUNQUEUE_H
#define __LAB_RUNQUEUE_H

#include "avg_vruntime.h"
#include "rbtree.h"
#include "pelt.h"
#include "group.h"
#include "bandwidth.h"

/* The queue's running entity while it is queued (the kernel's "curr && curr->on_rq"). */
LAB_INLINE lab_se_t *cfs_curr(struct lab_cfs *cfs, lab_pool_t *pool)
{
	lab_se_t *curr;

	if (!cfs->curr)
		return NULL;
	curr = SE(pool, cfs->curr);
	return curr->on_rq ? curr : NULL;
}

/* cfs_rq_min_slice() / cfs_rq_max_slice(): the slice range of the queued entities. */
LAB_INLINE u64 cfs_min_slice(struct lab_cfs *cfs, lab_pool_t *pool)
{
	lab_se_t *curr = cfs_curr(cfs, pool);
	u64 min = ~0ULL;

	if (curr)
		min = curr->slice;
	if (cfs->root)
		min = lab_min_u64(min, SE(pool, cfs->root)->min_slice);
	return min;
}

LAB_INLINE u64 cfs_max_slice(struct lab_cfs *cfs, lab_pool_t *pool)
{
	lab_se_t *curr = cfs_curr(cfs, pool);
	u64 max = 0;

	if (curr)
		max = curr->slice;
	if (cfs->root)
		max = lab_max_u64(max, SE(pool, cfs->root)->max_slice);
	return max;
}

LAB_INLINE bool entity_eligible(struct lab_cfs *cfs, lab_pool_t *pool, lab_se_t *se)
{
	return vruntime_eligible(cfs, cfs_curr(cfs, pool), se->vruntime);
}

/*
 * sum_w_vruntime_add_paranoid()'s recovery: shift the weights one more bit and rebuild both sums
 * from the tree: O(queue length) under the lock, as in the kernel, and only after an overflow.
 * The kernel BUGs at a shift of 10, we stop growing it.
 */
LAB_NOINLINE void sum_w_vruntime_rebuild(struct lab_cfs *cfs, lab_pool_t *pool, u64 *st)
{
	u32 n;
	int i;

	if (cfs->sum_shift < 10)
		cfs->sum_shift++;
	cfs->sum_w_vruntime = 0;
	cfs->sum_weight = 0;
	n = rb_first(cfs, pool);
	lab_for(i, 0, (int)cfs->nr_queued) {
		if (!n)
			break;
		sum_w_vruntime_add(cfs, SE(pool, n)->vruntime, SE(pool, n)->weight, false);
		n = rb_next(pool, n);
	}
	lab_count(st, LAB_ST_PARANOID_REBUILD);
}

/* __enqueue_entity(): into the sums and the tree. */
LAB_INLINE void __enqueue_entity(struct lab_cfs *cfs, lab_pool_t *pool, u32 n,
				 const struct lab_params *p, u64 *st)
{
	lab_se_t *se = SE(pool, n);
	u64 ovf = cfs->nr_overflow;

	if (!sum_w_vruntime_add(cfs, se->vruntime, se->weight, sched_feat(p, PARANOID_AVG))) {
		sum_w_vruntime_rebuild(cfs, pool, st);
		sum_w_vruntime_add(cfs, se->vruntime, se->weight, false);
	}
	if (cfs->nr_overflow != ovf)
		lab_count(st, LAB_ST_SUM_OVERFLOW);
	se->min_vruntime = se->vruntime;
	se->min_slice = se->max_slice = se->slice;
	rb_insert(cfs, pool, n);
	se->in_tree = 1;
}

/* __dequeue_entity(): out of the tree and the sums. */
LAB_INLINE void __dequeue_entity(struct lab_cfs *cfs, lab_pool_t *pool, u32 n)
{
	lab_se_t *se = SE(pool, n);

	rb_erase(cfs, pool, n);
	sum_w_vruntime_sub(cfs, se->vruntime, se->weight);
	se->in_tree = 0;
}

/* clear_buddies(). */
LAB_INLINE void clear_buddies(struct lab_cfs *cfs, u32 n)
{
	if (cfs->next == n)
		cfs->next = 0;
}

/* set_next_buddy(): never a ghost, never a SCHED_IDLE task (@idle). */
LAB_INLINE void set_next_buddy(struct lab_cfs *cfs, lab_pool_t *pool, u32 n, bool idle)
{
	lab_se_t *se = SE(pool, n);

	if (!se->on_rq || se->delayed || idle)
		return;
	cfs->next = n;
}

/* update_entity_lag(): save V - v (clamped); returns true when the saved lag no longer matches
 * the entity's position (V - vlag != v), i.e. a requeue must re-place it. */
LAB_INLINE bool update_entity_lag(struct lab_cfs *cfs, lab_pool_t *pool, u32 n,
				  const struct lab_params *p)
{
	lab_se_t *se = SE(pool, n);
	u64 avruntime = avg_vruntime(cfs, cfs_curr(cfs, pool));
	s64 vlag = entity_lag(avruntime, se, cfs_max_slice(cfs, pool), p->tick_ns);

	if (se->delayed)
		vlag = delayed_entity_lag(vlag, se->vlag, sched_feat(p, DELAY_ZERO));
	se->vlag = vlag;
	return avruntime - (u64)vlag != se->vruntime;
}

/* update_deadline(): issue a new request once curr's vruntime reached its deadline. */
LAB_INLINE bool update_deadline(struct lab_cfs *cfs, lab_pool_t *pool, u32 n,
				const struct lab_params *p, u64 *st)
{
	lab_se_t *se = SE(pool, n);

	if ((s64)(se->vruntime - se->deadline) < 0)
		return false;
	if (!se->custom_slice)
		se->slice = p->base_slice;
	se->deadline = se->vruntime + calc_delta_fair(se->slice, se);
	avg_vruntime(cfs, cfs_curr(cfs, pool));
	lab_count(st, LAB_ST_DEADLINE_NEW);
	return true;
}

/* protect_slice() / cancel_protect_slice(). */
LAB_INLINE bool protect_slice(const lab_se_t *se)
{
	return (s64)(se->vruntime - se->vprot) < 0;
}

LAB_INLINE void cancel_protect_slice(lab_se_t *se)
{
	if (protect_slice(se))
		se->vprot = se->vruntime;
}

/*
 * set_protect_slice() (7.3): protect the newly picked entity until its deadline or, when a shorter
 * slice is queued (RUN_TO_PARITY) and always with the unscaled 0.7 ms quantum (NO_RUN_TO_PARITY),
 * for less: with PREEMPT_SHORT only until it reaches the zero-lag point V (7.3's short-slice
 * series; V without the entity, which has left the tree and is not curr yet in the kernel), else
 * until it has run that shorter slice (7.2). Never beyond the deadline.
 */
LAB_INLINE void set_protect_slice(struct lab_cfs *cfs, lab_pool_t *pool, u32 n,
				  const struct lab_params *p)
{
	lab_se_t *se = SE(pool, n);
	u64 slice = p->normalized_slice, vprot = se->deadline;

	if (sched_feat(p, RUN_TO_PARITY))
		slice = cfs_min_slice(cfs, pool);
	slice = lab_min_u64(slice, se->slice);
	if (slice != se->slice) {
		if (sched_feat(p, PREEMPT_SHORT))
			vprot = min_vruntime_of(vprot, avg_vruntime(cfs, NULL));
		else
			vprot = min_vruntime_of(vprot, se->vruntime + calc_delta_fair(slice, se));
	}
	se->vprot = vprot;
}

/* update_protect_slice() (7.3): after a wakeup that did not preempt, protect curr at most the
 * queue's shortest slice beyond min(v, V). */
LAB_INLINE void update_protect_slice(struct lab_cfs *cfs, lab_pool_t *pool, u32 n, u64 *st)
{
	lab_se_t *se = SE(pool, n);
	u64 base = min_vruntime_of(se->vruntime, avg_vruntime(cfs, cfs_curr(cfs, pool)));
	u64 vprot = base + calc_delta_fair(cfs_min_slice(cfs, pool), se);

	if (vruntime_gt(se->vprot, vprot)) {
		se->vprot = vprot;
		lab_count(st, LAB_ST_PROTECT_UPDATE);
	}
}

/* Why update_curr_math() asks for a reschedule. */
enum lab_resched {
	LAB_RESCHED_NONE,
	LAB_RESCHED_DEADLINE,	/* the request ran out: a new deadline was issued */
	LAB_RESCHED_PROTECT,	/* the slice protection is over */
};

/*
 * update_curr()'s EEVDF part: charge @delta_exec ns of execution to the running entity, refresh
 * its deadline, and say whether it should make way: never when alone on the queue; otherwise
 * when its request ran out or its protection ended.
 */
LAB_INLINE int update_curr_math(struct lab_cfs *cfs, lab_pool_t *pool, u64 delta_exec,
				const struct lab_params *p, u64 *st)
{
	lab_se_t *curr;
	bool resched;

	if (!cfs->curr || !delta_exec)
		return LAB_RESCHED_NONE;
	curr = SE(pool, cfs->curr);
	curr->vruntime += calc_delta_fair(delta_exec, curr);
	resched = update_deadline(cfs, pool, cfs->curr, p, st);
	if (cfs->nr_queued <= 1)
		return LAB_RESCHED_NONE;
	if (resched || !protect_slice(curr)) {
		clear_buddies(cfs, cfs->curr);
		return resched ? LAB_RESCHED_DEADLINE : LAB_RESCHED_PROTECT;
	}
	return LAB_RESCHED_NONE;
}

/* Flags of place_entity() (the kernel's ENQUEUE_* it looks at). */
#define LAB_PLACE_INITIAL	1	/* ENQUEUE_INITIAL: a new task */

/*
 * place_entity(): put an entity that joins the queue at V minus its (inflated) lag, and give it
 * a deadline: its relative one back (PLACE_REL_DEADLINE), half a slice for a new task
 * (PLACE_DEADLINE_INITIAL), else a full slice. The entity is not counted in nr_queued yet.
 */
LAB_INLINE void place_entity(struct lab_cfs *cfs, lab_pool_t *pool, u32 n, int flags,
			     const struct lab_params *p, u64 *st)
{
	lab_se_t *se = SE(pool, n), *curr = cfs_curr(cfs, pool);
	u64 avruntime = avg_vruntime(cfs, curr), vslice;
	s64 lag = 0;
	bool heavy = false;

	if (!se->custom_slice)
		se->slice = p->base_slice;
	vslice = calc_delta_fair(se->slice, se);

	if (sched_feat(p, PLACE_LAG) && cfs->nr_queued && se->vlag) {
		u64 load = cfs->sum_weight, w = avg_vruntime_weight(cfs, se->weight);

		if (curr)
			load += avg_vruntime_weight(cfs, curr->weight);
		lag = place_lag_inflate(se->vlag, load, w);
		/* A newcomer heavier than the whole queue: centre the keys on it (small products). */
		heavy = w > load;
	}
	se->vruntime = avruntime - (u64)lag;
	if (heavy)
		update_zero_vruntime(cfs, -lag);

	if (flags & LAB_PLACE_INITIAL)
		lab_count(st, LAB_ST_PLACE_INITIAL);
	else if (lag > 0)
		lab_count(st, LAB_ST_PLACE_LAG_POS);
	else if (lag < 0)
		lab_count(st, LAB_ST_PLACE_LAG_NEG);
	else
		lab_count(st, LAB_ST_PLACE_LAG_ZERO);

	if (sched_feat(p, PLACE_REL_DEADLINE) && se->rel_deadline) {
		se->deadline += se->vruntime;
		se->rel_deadline = 0;
		lab_count(st, LAB_ST_PLACE_REL_DEADLINE);
		return;
	}
	if (sched_feat(p, PLACE_DEADLINE_INITIAL) && (flags & LAB_PLACE_INITIAL))
		vslice /= 2;
	se->deadline = se->vruntime + vslice;
}

/* What a caller of reweight_eevdf_at() knows of the entity, so that a constant leaves out of
 * the program what cannot happen there: anything, off its queue, or its queue's running one. */
#define LAB_RW_ANY	0
#define LAB_RW_OFF	1
#define LAB_RW_CURR	2

LAB_INLINE void reweight_eevdf_at(struct lab_cfs *cfs, lab_pool_t *pool, u32 n, u64 h,
				  u32 inv_weight, const struct lab_params *p, u64 *st,
				  const int where);

/*
 * The effective weight of @se for @op, from a full walk of its groups (group_walk()): on the
 * host, here and now; in BPF the walk ran before the queue's lock, in a global subprogram that
 * the verifier checks once per program (lab_group_join() ...), and left its result in se->h_next. 0:
 * no walk was made for this operation.
 */
LAB_INLINE u64 group_h(struct lab_cfs *cfs, lab_se_t *se, int op, const struct lab_params *p)
{
#ifdef LAB_HOST
	u32 w = se_load_w(se);

	if (op == LAB_GROUP_FOLD)
		return group_fold(se->tg, cfs->cpu, w);
	return group_walk(se->tg, cfs->cpu, w, w, true, op, (u32)p->cgroup_mode, cfs->clock_pelt);
#else
	u64 h = se->h_next_op == (u32)op ? se->h_next : 0;

	se->h_next = 0;
	se->h_next_op = 0;
	return h;
#endif
}

/*
 * enqueue_entity(): a runnable entity joins the queue -- placed, counted, and linked into the
 * tree unless it is the queue's running entity.
 */
LAB_INLINE void enqueue_entity(struct lab_cfs *cfs, lab_pool_t *pool, u32 n, int flags,
			       const struct lab_params *p, u64 *st)
{
	lab_se_t *se = SE(pool, n);

	/* wake_up_new_task()'s post_init_entity_util_avg() of a forked task, then its load
	 * history joins (or, from another CPU, is attached to) the queue's. */
	if (se->post_init) {
		post_init_entity_util_avg(cfs, se);
		se->post_init = 0;
	}
	update_load_avg(cfs, pool, n, LAB_DO_ATTACH, st);
	/* enqueue_hierarchy() and the effective weight it returns, which the placement uses (a
	 * running task put back keeps its weight until set_next_entity() or the tick). Without a
	 * walk for it, the task joins its groups' weights and keeps its effective weight. */
	if (se->tg) {
		u64 h = group_h(cfs, se, LAB_GROUP_ENQUEUE, p);

		if (!h)
			group_account(se->tg, cfs->cpu, se_load_w(se), true, true);
		else if (cfs->curr != n)
			reweight_eevdf_at(NULL, pool, n, h, 0, p, st, LAB_RW_OFF);
	}
	place_entity(cfs, pool, n, flags, p, st);
	se->on_rq = 1;
	se->is_new = 0;
	cfs->nr_queued++;
	cfs->load_weight += se_load_w(se);
	/* enqueue_task_fair()'s h_nr_idle: a SCHED_IDLE task, or one below a cpu.idle group. */
	se->idle_counted = se_load_w(se) == WEIGHT_IDLEPRIO || tg_h_idle(se->tg);
	cfs->nr_idle += se->idle_counted;
	if (cfs->curr != n)
		__enqueue_entity(cfs, pool, n, p, st);
}

/* Flags of dequeue_entity() (the kernel's DEQUEUE_* it looks at). */
#define LAB_DEQ_SLEEP		1	/* DEQUEUE_SLEEP */
#define LAB_DEQ_SPECIAL		2	/* DEQUEUE_SPECIAL: stopped, traced, dead... never delayed */
#define LAB_DEQ_DELAYED		4	/* DEQUEUE_DELAYED: finishing a ghost */
#define LAB_DEQ_MIGRATE		8	/* task_on_rq_migrating(): a queued move to another CPU */

/*
 * dequeue_entity() / 7.3 __dequeue_task(): an entity leaves. Its lag is saved first (V still
 * counts it). A sleeper that is not eligible stays queued as a ghost (DELAY_DEQUEUE) and the
 * function returns false; otherwise it leaves the tree, the sums and the count, keeping a
 * relative deadline when it moves while runnable (PLACE_REL_DEADLINE). A departing curr stops
 * being the queue's curr either way; a ghost goes into the tree.
 */
LAB_INLINE bool dequeue_entity(struct lab_cfs *cfs, lab_pool_t *pool, u32 n, int flags,
			       const struct lab_params *p, u64 *st)
{
	lab_se_t *se = SE(pool, n);

	/* The load signals first, with the entity as it was (a migration takes its history). */
	update_load_avg(cfs, pool, n, (flags & LAB_DEQ_MIGRATE) ? LAB_DO_DETACH : 0, st);
	clear_buddies(cfs, n);
	update_entity_lag(cfs, pool, n, p);

	if (!(flags & LAB_DEQ_DELAYED) && sched_feat(p, DELAY_DEQUEUE) &&
	    (flags & LAB_DEQ_SLEEP) && !(flags & LAB_DEQ_SPECIAL) &&
	    !se->delayed && !entity_eligible(cfs, pool, se)) {
		se->delayed = 1;
		cfs->nr_delayed++;
		if (se->tg)	/* set_delayed(): its groups count one runnable task less */
			group_runnable_delta(se->tg, cfs->cpu, -1);
		if (cfs->curr == n) {
			/* put_prev_entity(): the sleeper goes back into the tree, frozen. */
			cfs->curr = 0;
			__enqueue_entity(cfs, pool, n, p, st);
		}
		lab_count(st, LAB_ST_GHOST_CREATED);
		return false;
	}

	if (sched_feat(p, PLACE_REL_DEADLINE) && !(flags & LAB_DEQ_SLEEP)) {
		se->deadline -= se->vruntime;
		se->rel_deadline = 1;
	}
	if (se->in_tree)
		__dequeue_entity(cfs, pool, n);
	if (cfs->curr == n)
		cfs->curr = 0;
	se->on_rq = 0;
	if (cfs->nr_queued)
		cfs->nr_queued--;
	if (se->idle_counted && cfs->nr_idle)
		cfs->nr_idle--;
	se->idle_counted = 0;
	cfs->load_weight = lab_sub_positive(cfs->load_weight, se_load_w(se));
	/* dequeue_hierarchy(), light (group_account()); a ghost left its groups' runnable count
	 * when it became one. */
	if (se->tg)
		group_account(se->tg, cfs->cpu, se_load_w(se), !se->delayed, false);
	if (se->delayed) {
		se->delayed = 0;
		if (cfs->nr_delayed)
			cfs->nr_delayed--;
	}
	return true;
}

/*
 * requeue_delayed_entity(): a ghost wakes up on its queue. It keeps its place (and deadline)
 * unless its lag changed while it slept; then it is re-placed with that lag (clipped to 0 by
 * DELAY_ZERO) and a fresh deadline.
 */
LAB_INLINE void requeue_delayed_entity(struct lab_cfs *cfs, lab_pool_t *pool, u32 n,
				       const struct lab_params *p, u64 *st)
{
	lab_se_t *se = SE(pool, n);

	bool moved = update_entity_lag(cfs, pool, n, p);

	lab_count(st, LAB_ST_GHOST_REQUEUED);
	if (se->vlag > 0)
		lab_count(st, LAB_ST_GHOST_REQUEUE_POS);
	if (moved) {
		lab_count(st, LAB_ST_GHOST_REQUEUE_MOVED);
		cfs->nr_queued--;
		if (se->in_tree)
			__dequeue_entity(cfs, pool, n);
		place_entity(cfs, pool, n, 0, p, st);
		if (cfs->curr != n)
			__enqueue_entity(cfs, pool, n, p, st);
		cfs->nr_queued++;
	}
	update_load_avg(cfs, pool, n, 0, st);	/* it was queued, not runnable, until now */
	se->delayed = 0;
	if (cfs->nr_delayed)
		cfs->nr_delayed--;
	if (se->tg)	/* clear_delayed() */
		group_runnable_delta(se->tg, cfs->cpu, 1);
}

/* set_next_entity(): @n becomes the running entity; @first: it was just picked (fair.c's
 * set_next_task_fair(first)). */
LAB_INLINE void set_next_entity(struct lab_cfs *cfs, lab_pool_t *pool, u32 n, bool first,
				const struct lab_params *p, u64 *st)
{
	lab_se_t *se = SE(pool, n);

	clear_buddies(cfs, n);
	if (se->in_tree)
		__dequeue_entity(cfs, pool, n);
	if (se->on_rq)
		update_load_avg(cfs, pool, n, 0, st);	/* runnable, not running, until now */
	cfs->curr = n;
	/* set_next_task_fair(): the effective weight as the groups are now. */
	if (se->tg && se->on_rq)
		reweight_eevdf_at(cfs, pool, n, group_h(cfs, se, LAB_GROUP_FOLD, p), 0, p, st,
				  LAB_RW_CURR);
	/* Only a real pick (first) starts a protection; a re-run after a property change keeps
	 * the one it had. */
	if (se->on_rq && first)
		set_protect_slice(cfs, pool, n, p);
}

/*
 * hrtick_start_fair()'s arithmetic: the wall ns until the running entity @se reaches its
 * deadline at its weight, or 0 when it is already there (the caller then reschedules at once).
 * Differs: no stretch for IRQ pressure (cpu_util_irq() is not visible to sched_ext).
 */
LAB_INLINE u64 hrtick_delay_ns(const lab_se_t *se)
{
	s64 vdelta = (s64)(se->deadline - se->vruntime);

	return vdelta > 0 ? (u64)vdelta * se->weight / NICE_0_LOAD : 0;
}

/* put_prev_entity(): the running entity stops running but stays queued. */
LAB_INLINE void put_prev_entity(struct lab_cfs *cfs, lab_pool_t *pool, u32 n,
				const struct lab_params *p, u64 *st)
{
	lab_se_t *se = SE(pool, n);

	if (se->on_rq)
		update_load_avg(cfs, pool, n, 0, st);	/* running until now */
	if (cfs->curr == n)
		cfs->curr = 0;
	if (se->on_rq && !se->in_tree)
		__enqueue_entity(cfs, pool, n, p, st);
}


/*
 * reweight_eevdf(): a new effective weight @h (full resolution; the EEVDF arithmetic takes
 * scale_load_down() of it) keeps the entity's lag (V - v) * w, which leaves V unchanged: lag, a
 * relative deadline and a relative protection scale by old/new. @n is queued or not; @cfs is
 * NULL when it is not. @inv_weight: the new weight's inverse (the nice table's for a root-group
 * task), 0 to derive it. The caller accounted curr first.
 */
LAB_INLINE void reweight_eevdf_at(struct lab_cfs *cfs, lab_pool_t *pool, u32 n, u64 h,
				  u32 inv_weight, const struct lab_params *p, u64 *st,
				  const int where)
{
	lab_se_t *se = SE(pool, n);
	bool queued = where != LAB_RW_OFF && cfs && se->on_rq, rel_vprot = false;
	bool curr = where == LAB_RW_CURR || (where == LAB_RW_ANY && cfs && cfs->curr == n);
	u64 avruntime = 0, old = se->h_load;

	if (!h)
		return;
	if (!old)
		old = lab_scale_load(se->weight);
	if (old == h) {
		se->inv_weight = inv_weight;
		return;
	}
	if (queued) {
		lab_count(st, LAB_ST_REWEIGHT);
		avruntime = avg_vruntime(cfs, cfs_curr(cfs, pool));
		se->vlag = entity_lag(avruntime, se, cfs_max_slice(cfs, pool), p->tick_ns);
		se->deadline -= avruntime;
		se->rel_deadline = 1;
		if (curr && protect_slice(se)) {
			se->vprot -= avruntime;
			rel_vprot = true;
		}
		cfs->nr_queued--;
		if (where != LAB_RW_CURR && se->in_tree)
			__dequeue_entity(cfs, pool, n);
	}
	/* rescale_entity(): truncating divisions, as the kernel's div64_long(). */
	se->vlag = (s64)(se->vlag * (s64)old) / (s64)h;
	if (se->rel_deadline)
		se->deadline = (u64)((s64)(se->deadline * (s64)old) / (s64)h);
	if (rel_vprot)
		se->vprot = (u64)((s64)(se->vprot * (s64)old) / (s64)h);
	se->h_load = h;
	se->weight = (u32)lab_scale_load_down(h);
	se->inv_weight = inv_weight;
	if (queued) {
		if (rel_vprot)
			se->vprot += avruntime;
		se->deadline += avruntime;
		se->rel_deadline = 0;
		se->vruntime = avruntime - (u64)se->vlag;
		if (where != LAB_RW_CURR && !curr)
			__enqueue_entity(cfs, pool, n, p, st);
		cfs->nr_queued++;
	}
}

LAB_INLINE void reweight_eevdf(struct lab_cfs *cfs, lab_pool_t *pool, u32 n, u64 h,
			       u32 inv_weight, const struct lab_params *p, u64 *st)
{
	reweight_eevdf_at(cfs, pool, n, h, inv_weight, p, st, LAB_RW_ANY);
}

/*
 * reweight_entity() of a task (reweight_task_fair()): its own weight @weight changes the queue's
 * load and its load average at once; its effective weight follows -- directly for a task of the
 * root group (reweight_eevdf() with the table's @inv_weight), through its groups' queues for
 * another (its own weight in them now, its effective weight at its next pick or tick; fair.c
 * folds it at once). @n is queued or not; @cfs is NULL when it is not.
 */
LAB_INLINE void reweight_entity(struct lab_cfs *cfs, lab_pool_t *pool, u32 n, u32 weight,
				u32 inv_weight, const struct lab_params *p, u64 *st)
{
	lab_se_t *se = SE(pool, n);
	u32 old = se_load_w(se);

	if (!weight)
		return;
	if (old != weight) {
		if (se->on_rq && cfs) {
			cfs->load_weight = lab_sub_positive(cfs->load_weight, old);
			dequeue_load_avg(cfs, se);
		}
		se->load_w = weight;
		/* The load average at the new weight, from the same history. */
		se->avg.load_avg = (u64)weight * se->avg.load_sum / get_pelt_divider(&se->avg);
		if (se->on_rq && cfs) {
			enqueue_load_avg(cfs, se);
			cfs->load_weight += weight;
		}
	}
	if (!se->tg) {
		reweight_eevdf(cfs, pool, n, lab_scale_load(weight), inv_weight, p, st);
	} else if (se->on_rq && cfs && old != weight) {
		/* Its groups' queues take the new weight; its effective weight follows at its next
		 * pick or tick. */
		group_account(se->tg, cfs->cpu, old, false, false);
		group_account(se->tg, cfs->cpu, weight, false, true);
	}
}

/*
 * entity_tick() of the groups: at each level of the running task's, the averages, the group-wide
 * sums and the shares brought up to date; then its effective weight follows.
 */
LAB_INLINE void entity_tick_group(struct lab_cfs *cfs, lab_pool_t *pool,
				  const struct lab_params *p, u64 *st)
{
	lab_se_t *se;

	if (!cfs->curr)
		return;
	se = SE(pool, cfs->curr);
	if (!se->tg || !se->on_rq)
		return;
	reweight_eevdf_at(cfs, pool, cfs->curr, group_h(cfs, se, LAB_GROUP_TICK, p), 0, p, st,
			  LAB_RW_CURR);
}

/* entity_tick()'s update_load_avg() of the running entity. */
LAB_INLINE void entity_tick_load(struct lab_cfs *cfs, lab_pool_t *pool, u64 *st)
{
	if (cfs->curr && SE(pool, cfs->curr)->on_rq)
		update_load_avg(cfs, pool, cfs->curr, 0, st);
}

/* update_blocked_averages() of a CPU's queue: its signal brought to its clock, what departed
 * taken off (a newidle balance does this for the CPU that runs it). */
LAB_INLINE void update_blocked_load(struct lab_cfs *cfs, u64 *st)
{
	update_cfs_rq_load_avg(cfs->clock_pelt, cfs);
	lab_count(st, LAB_ST_PELT_BLOCKED);
}

/*
 * yield_task_fair(): an eligible running entity forfeits the rest of its request: vruntime
 * jumps to its deadline and the deadline moves one request further, the slice unchanged (not
 * update_deadline(), which would also reset a base slice). Returns true when it did.
 */
LAB_INLINE bool yield_entity(struct lab_cfs *cfs, lab_pool_t *pool, u64 *st)
{
	lab_se_t *curr = cfs_curr(cfs, pool);

	if (!curr || cfs->nr_queued <= 1)
		return false;
	clear_buddies(cfs, cfs->curr);
	if (!entity_eligible(cfs, pool, curr))
		return false;
	curr->vruntime = curr->deadline;
	curr->deadline += calc_delta_fair(curr->slice, curr);
	lab_count(st, LAB_ST_YIELD);
	return true;
}

#endif /* __LAB_RUNQUEUE_H */
