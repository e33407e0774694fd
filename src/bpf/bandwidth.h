/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPU bandwidth control (cpu.max) as fair.c's CFS bandwidth does it, the arithmetic only: a
 * group with a quota has a pool of runtime (cfs_b->runtime) that its period timer refills to at
 * most quota + burst; each of its queues (one per CPU) draws runtime from the pool in slices of
 * sched_cfs_bandwidth_slice_us (5 ms) as its members run (assign_cfs_rq_runtime()), spends it
 * as they run (account_cfs_rq_runtime()), and when the pool is dry the queue is throttled; the
 * period turn-over refills the pool and hands each throttled queue what it owes plus 1 ns
 * (distribute_cfs_runtime()), which unthrottles it. A queue that empties gives its runtime above
 * min_cfs_rq_runtime (1 ms) back to the pool (return_cfs_rq_runtime()).
 *
 * Where the tasks of a throttled queue go (7.3's task-based throttling: a picked task leaves the
 * queue on its way back to user space, a waking one goes straight to the limbo list, and all
 * come back at the unthrottle) is the BPF scheduler's (bandwidth.bpf.h).
 *
 * The caller holds the lock of the CPU that @gq belongs to; the pool is shared by every CPU and
 * changes with compare-and-swap only (fair.c takes cfs_b->lock).
 *
 * Differs (README, "Groups"): runtime is charged at the tick and when a task stops running (the
 * kernel charges at every update_curr()); a returned slack waits in the pool for the next period
 * or the next queue that asks (no slack timer); an unthrottled queue's tasks rejoin at that
 * CPU's next tick or decision (an idle CPU is woken, as unthrottle_cfs_rq() does).
 */
#ifndef __LAB_BANDWIDTH_H
#define __LAB_BANDWIDTH_H

#include "group.h"

#define LAB_BW_SLICE_NS		5000000LL	/* sysctl_sched_cfs_bandwidth_slice (5000 us) */
#define LAB_MIN_CFS_RQ_RUNTIME	1000000LL	/* min_cfs_rq_runtime: 1 ms */
#define LAB_BW_CAS_TRIES	16		/* compare-and-swap attempts on the pool */

/* Take up to @want ns from @tg's pool; returns what it got (>= 0). */
LAB_INLINE s64 bw_pool_take(struct lab_tg *tg, s64 want)
{
	s64 old, amount;
	int i;

	if (want <= 0)
		return 0;
	lab_for(i, 0, LAB_BW_CAS_TRIES) {
		old = READ_ONCE(tg->bw_runtime);
		if (old <= 0)
			return 0;
		amount = old < want ? old : want;
		if (__sync_bool_compare_and_swap(&tg->bw_runtime, old, old - amount))
			return amount;
	}
	return 0;
}

/* Give @amount ns back to @tg's pool, up to quota + burst. */
LAB_INLINE void bw_pool_give(struct lab_tg *tg, s64 amount)
{
	s64 old, cap = (s64)(tg->bw_quota + tg->bw_burst), nv;
	int i;

	if (amount <= 0)
		return;
	lab_for(i, 0, LAB_BW_CAS_TRIES) {
		old = READ_ONCE(tg->bw_runtime);
		nv = old + amount < cap ? old + amount : cap;
		if (nv <= old || __sync_bool_compare_and_swap(&tg->bw_runtime, old, nv))
			return;
	}
}

/*
 * assign_cfs_rq_runtime(): top @gq up to one bandwidth slice from the pool; true when it has
 * runtime left afterwards. Taking runtime marks the group busy for the period timer (cfs_b->idle
 * = 0).
 */
LAB_INLINE bool assign_cfs_rq_runtime(struct lab_tg *tg, struct lab_gq *gq)
{
	s64 amount = bw_pool_take(tg, LAB_BW_SLICE_NS - gq->runtime_remaining);

	if (amount > 0)
		tg->bw_idle = 0;
	gq->runtime_remaining += amount;
	return gq->runtime_remaining > 0;
}

/*
 * __account_cfs_rq_runtime(): @gq's members ran @delta ns. True when the queue is out of runtime
 * and the pool has none to give: the queue is to be throttled (fair.c reschedules its current
 * task and throttles the queue when it is put back, check_cfs_rq_runtime()).
 */
LAB_INLINE bool account_cfs_rq_runtime(struct lab_tg *tg, struct lab_gq *gq, u64 delta)
{
	gq->runtime_remaining -= (s64)delta;
	if (gq->runtime_remaining > 0)
		return false;
	if (gq->throttled)
		return true;
	return !assign_cfs_rq_runtime(tg, gq);
}

/* __refill_cfs_bandwidth_runtime(): the period turned over: quota more, capped at quota + burst. */
LAB_INLINE void refill_cfs_bandwidth_runtime(struct lab_tg *tg)
{
	bw_pool_give(tg, (s64)tg->bw_quota);
}

/*
 * distribute_cfs_runtime() for one throttled queue: it gets what it owes plus 1 ns, as far as
 * the pool goes. True when that unthrottles it (runtime_remaining > 0).
 */
LAB_INLINE bool distribute_cfs_runtime(struct lab_tg *tg, struct lab_gq *gq)
{
	gq->runtime_remaining += bw_pool_take(tg, 1 - gq->runtime_remaining);
	return gq->runtime_remaining > 0;
}

/* return_cfs_rq_runtime(): @gq emptied: what it holds above min_cfs_rq_runtime goes back. */
LAB_INLINE void return_cfs_rq_runtime(struct lab_tg *tg, struct lab_gq *gq)
{
	s64 slack = gq->runtime_remaining - LAB_MIN_CFS_RQ_RUNTIME;

	if (slack <= 0)
		return;
	bw_pool_give(tg, slack);
	gq->runtime_remaining -= slack;
}

/* A cpu.max write starts every queue of the group afresh (tg_set_cfs_bandwidth(): no runtime,
 * not throttled); each queue catches up with it the next time it is looked at. */
LAB_INLINE void gq_bw_sync(const struct lab_tg *tg, struct lab_gq *gq)
{
	if (gq->bw_gen == tg->bw_gen)
		return;
	gq->bw_gen = tg->bw_gen;
	gq->runtime_remaining = 0;
	gq->throttled = 0;
}

/* What bw_walk() does at each level of a group's path that has a quota. */
enum lab_bw_op {
	LAB_BW_ACCOUNT,		/* account_cfs_rq_runtime() */
	LAB_BW_THROTTLED,	/* is it throttled, after asking the pool for what it owes? */
	LAB_BW_RETURN,		/* return_cfs_rq_runtime() of an empty queue */
	LAB_BW_HIERARCHY,	/* is it throttled? (reads only) */
};

/*
 * One level of bw_walk(): @op on group @tg's queue @gq, which has a quota. True: for
 * LAB_BW_ACCOUNT, the queue is throttled (the running task is to be rescheduled); for
 * LAB_BW_THROTTLED, it still is after asking the pool for what it owes (distribute_cfs_runtime(),
 * which fair.c runs at the period turn-over for every throttled queue; the lab runs it when the
 * CPU next looks at one of the queue's tasks).
 */
LAB_INLINE bool bw_level(enum lab_bw_op op, struct lab_tg *tg, struct lab_gq *gq, u64 delta,
			 u64 *st)
{
	gq_bw_sync(tg, gq);
	switch (op) {
	case LAB_BW_ACCOUNT:
		if (!account_cfs_rq_runtime(tg, gq, delta))
			return false;
		if (!gq->throttled) {
			gq->throttled = 1;
			tg->bw_nr_throttled++;
			__sync_fetch_and_add(&tg->bw_throttled_now, 1);
			lab_count(st, LAB_ST_BW_THROTTLE);
		}
		return true;
	case LAB_BW_THROTTLED:
		if (!gq->throttled)
			return false;
		if (!distribute_cfs_runtime(tg, gq))
			return true;
		gq->throttled = 0;
		__sync_fetch_and_sub(&tg->bw_throttled_now, 1);
		lab_count(st, LAB_ST_BW_UNTHROTTLE);
		return false;
	case LAB_BW_RETURN:
		if (!READ_ONCE(gq->load_weight) && !gq->throttled)
			return_cfs_rq_runtime(tg, gq);
		return false;
	default:
		return false;
	}
}

/*
 * @op on every level of @tg_idx's path on @cpu that has a quota, from the group up (at most
 * LAB_GROUP_DEPTH levels; fair.c keeps a throttle_count per queue instead of walking for
 * throttled_hierarchy()). True when a level returned true (LAB_BW_HIERARCHY stops at the first).
 */
LAB_INLINE bool bw_walk(u32 tg_idx, u32 cpu, enum lab_bw_op op, u64 delta, u64 *st)
{
	struct lab_tg *tg;
	struct lab_gq *gq;
	u32 idx = tg_idx;
	bool ret = false;
	int i;

	lab_for(i, 0, LAB_GROUP_DEPTH) {
		tg = tg_get(idx);
		if (!tg)
			break;
		if (tg->bw_quota && (gq = gq_get(idx, cpu))) {
			if (op == LAB_BW_HIERARCHY) {
				if (READ_ONCE(gq->throttled))
					return true;
			} else if (bw_level(op, tg, gq, delta, st)) {
				ret = true;
			}
		}
		idx = tg->parent;
	}
	return ret;
}

/* account_cfs_rq_runtime() on @tg_idx's path on @cpu: its members ran @delta ns. A queue that
 * runs dry with the pool empty is throttled. True when one on the path is. */
LAB_INLINE bool bw_account_walk(u32 tg_idx, u32 cpu, u64 delta, u64 *st)
{
	return bw_walk(tg_idx, cpu, LAB_BW_ACCOUNT, delta, st);
}

/* Is a queue on @tg_idx's path on @cpu throttled, each first asking the pool for what it owes? */
LAB_INLINE bool bw_throttled_walk(u32 tg_idx, u32 cpu, u64 *st)
{
	return bw_walk(tg_idx, cpu, LAB_BW_THROTTLED, 0, st);
}

/* return_cfs_rq_runtime() for each queue on @tg_idx's path on @cpu that a dequeue left empty. */
LAB_INLINE void bw_return_walk(u32 tg_idx, u32 cpu)
{
	bw_walk(tg_idx, cpu, LAB_BW_RETURN, 0, NULL);
}

/* throttled_hierarchy(): is @tg_idx's queue on @cpu, or the queue of any group above it there,
 * throttled? */
LAB_INLINE bool throttled_hierarchy(u32 tg_idx, u32 cpu)
{
	return bw_walk(tg_idx, cpu, LAB_BW_HIERARCHY, 0, NULL);
}

#endif /* __LAB_BANDWIDTH_H */
