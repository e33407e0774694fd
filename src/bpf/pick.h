/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Picking and wakeup preemption: fair.c's pick_eevdf(), pick_next_entity() and
 * wakeup_preempt_fair(), with the lab's scan-length diagnostics.
 */
#ifndef __LAB_PICK_H
#define __LAB_PICK_H

#include "runqueue.h"

/*
 * Whether to count the DSQ-scan diagnostic (--measure-scan). In BPF it is set before load, a
 * constant to the verifier, which then leaves the diagnostic out of every walk when it is off.
 */
#ifdef LAB_HOST
#define lab_measure_scan(p)	((p)->measure_scan)
#else
const volatile u64 measure_scan;
#define lab_measure_scan(p)	(measure_scan)
#endif

/* The scan-length histogram of pick_eevdf()'s tree search. */
LAB_INLINE void count_scan(u64 *st, u32 visited)
{
	if (!st)
		return;
	st[LAB_ST_SCAN_NODES] += visited;
	lab_count(st, visited <= 1 ? LAB_ST_SCAN_LEN_1 : visited <= 2 ? LAB_ST_SCAN_LEN_2 :
		  visited <= 4 ? LAB_ST_SCAN_LEN_4 : visited <= 8 ? LAB_ST_SCAN_LEN_8 :
		  LAB_ST_SCAN_LEN_MORE);
}

/*
 * A diagnostic for the choice of data structure: a sched_ext scheduler that keeps its queue in a
 * DSQ sorted by deadline finds the pick by scanning from the earliest deadline to the first
 * eligible entity. Count how far that scan would go on this queue (bounded by the tree depth).
 */
LAB_INLINE void count_dsq_scan(struct lab_cfs *cfs, lab_pool_t *pool, u32 leftmost,
			       u64 *st)
{
	const lab_se_t *curr = cfs_curr(cfs, pool);
	u32 n = leftmost, len = LAB_TREE_MAX_DEPTH;
	int i;

	if (!st || !n)
		return;
	/* @len is only written on the way out (see pick_eevdf()). */
	lab_for(i, 0, LAB_TREE_MAX_DEPTH) {
		if (!n) {
			len = i;
			break;
		}
		if (vruntime_eligible(cfs, curr, SE(pool, n)->vruntime)) {
			len = i + 1;
			break;
		}
		n = rb_next(pool, n);
	}
	st[LAB_ST_DSQ_SCAN_NODES] += len;
	lab_count(st, len <= 1 ? LAB_ST_DSQ_SCAN_LEN_1 : len <= 2 ? LAB_ST_DSQ_SCAN_LEN_2 :
		  len <= 4 ? LAB_ST_DSQ_SCAN_LEN_4 : len <= 8 ? LAB_ST_DSQ_SCAN_LEN_8 :
		  LAB_ST_DSQ_SCAN_LEN_MORE);
}

/*
 * pick_eevdf(): the eligible entity with the earliest deadline, with its shortcuts in the
 * kernel's order: a lone entity; the next buddy (PICK_BUDDY); curr while its slice is protected;
 * the leftmost entity if eligible; else a descent that goes left whenever the left subtree holds
 * an eligible entity (its min_vruntime is eligible); finally curr if its deadline is earlier.
 * May return a ghost (the caller finalizes it and picks again) or 0 (empty queue).
 */
LAB_NOINLINE u32 pick_eevdf(struct lab_cfs *cfs, lab_pool_t *pool, bool protect,
			    const struct lab_params *p, u64 *st)
{
	lab_se_t *curr = cfs_curr(cfs, pool);
	u32 curr_n = curr ? cfs->curr : 0, best = 0, node, visited = 0, leftmost;
	int i;

	lab_count(st, LAB_ST_PICK);
	leftmost = rb_first(cfs, pool);
	if (lab_measure_scan(p))
		count_dsq_scan(cfs, pool, leftmost, st);
	if (cfs->nr_queued == 1) {
		if (curr_n) {
			lab_count(st, LAB_ST_PICK_CURR);
			return curr_n;
		}
		return leftmost;
	}
	if (sched_feat(p, PICK_BUDDY) && protect && cfs->next &&
	    entity_eligible(cfs, pool, SE(pool, cfs->next))) {
		lab_count(st, LAB_ST_PICK_BUDDY);
		return cfs->next;
	}
	if (curr && !entity_eligible(cfs, pool, curr))
		curr_n = 0;
	if (curr_n && protect && protect_slice(curr)) {
		lab_count(st, LAB_ST_PICK_PROTECTED);
		lab_count(st, LAB_ST_PICK_CURR);
		return curr_n;
	}

	if (leftmost && entity_eligible(cfs, pool, SE(pool, leftmost))) {
		best = leftmost;
		lab_count(st, LAB_ST_PICK_LEFTMOST);
	} else if (cfs->root) {
		lab_count(st, LAB_ST_PICK_SEARCH);
		node = cfs->root;
		/*
		 * @visited is only written on the way out of the loop: a counter carried from one
		 * iteration to the next would keep the BPF verifier from seeing the loop converge.
		 */
		lab_for(i, 0, LAB_TREE_MAX_DEPTH) {
			lab_se_t *se;
			u32 left;

			if (!node) {
				visited = i;
				break;
			}
			se = SE(pool, node);
			left = se->left;
			if (left && vruntime_eligible(cfs, curr, SE(pool, left)->min_vruntime)) {
				node = left;
				continue;
			}
			if (vruntime_eligible(cfs, curr, se->vruntime)) {
				best = node;
				visited = i + 1;
				break;
			}
			node = se->right;
		}
		count_scan(st, visited);
	}
	if (!best || (curr_n && entity_before(SE(pool, curr_n), SE(pool, best))))
		best = curr_n;
	if (!best)
		lab_count(st, LAB_ST_PICK_NONE);
	else if (best == curr_n)
		lab_count(st, LAB_ST_PICK_CURR);
	return best;
}

/* Ghosts one pick_next_entity() finalizes at most: the bound of its work under the lock. */
#define LAB_PICK_GHOSTS		16
/* pick_next_entity()'s answer when it finalized LAB_PICK_GHOSTS ghosts and more may follow. */
#define LAB_PICK_RETRY		0xffffffffU

/*
 * pick_next_entity() and pick_task_fair()'s loop: pick; a picked ghost is finalized (its lag
 * clipped by DELAY_ZERO) and the pick repeated. Returns the pick or 0 when only ghosts (or
 * nothing) were left; LAB_PICK_RETRY after LAB_PICK_GHOSTS ghosts in a row (the caller picks
 * again later, with the lock dropped in between). @ghosts counts the ghosts finalized.
 * Without @finalize (a constant) the first ghost picked ends the pick with LAB_PICK_RETRY,
 * nothing finalized: a caller whose program should not carry the finalizing picks again with
 * it in a program of its own (lab_enqueue_repick()).
 * Differs: the kernel finalizes any number of ghosts in one pick.
 */
LAB_INLINE u32 pick_next_entity_opt(struct lab_cfs *cfs, lab_pool_t *pool, bool protect,
				    const struct lab_params *p, u64 *st, u32 *ghosts,
				    const bool finalize)
{
	u32 n = 0;
	int i;

	lab_for(i, 0, LAB_PICK_GHOSTS) {
		if (!cfs->nr_queued)
			return 0;
		n = pick_eevdf(cfs, pool, protect, p, st);
		if (!n)
			return 0;
		if (!SE(pool, n)->delayed)
			return n;
		if (!finalize)
			return LAB_PICK_RETRY;
		dequeue_entity(cfs, pool, n, LAB_DEQ_SLEEP | LAB_DEQ_DELAYED, p, st);
		lab_count(st, LAB_ST_GHOST_PICKED);
		if (ghosts)
			(*ghosts)++;
	}
	return cfs->nr_queued ? LAB_PICK_RETRY : 0;
}

LAB_INLINE u32 pick_next_entity(struct lab_cfs *cfs, lab_pool_t *pool, bool protect,
				const struct lab_params *p, u64 *st, u32 *ghosts)
{
	return pick_next_entity_opt(cfs, pool, protect, p, st, ghosts, true);
}

/* What wakeup_preempt_fair() decided. */
enum lab_preempt {
	LAB_PREEMPT_NO,
	LAB_PREEMPT_WAKEUP,	/* the wakee won the pick */
	LAB_PREEMPT_SHORT,	/* a shorter-slice wakee (PREEMPT_SHORT) */
	LAB_PREEMPT_IDLE,	/* a non-idle wakee against a SCHED_IDLE curr */
	LAB_PREEMPT_SYNC,	/* NEXT_BUDDY + WF_SYNC (preempt_sync()) */
	LAB_PREEMPT_ENQUEUE,	/* not a decision of the check: the enqueue's update_curr() found
				 * curr's request or protection over */
};

/* The facts about a wakeup that wakeup_preempt_fair() needs beyond the queue. */
struct lab_wakeup {
	bool fork;		/* WF_FORK */
	bool sync;		/* WF_SYNC */
	bool rq_selected;	/* WF_RQ_SELECTED: select_cpu ran */
	bool curr_idle;		/* curr is SCHED_IDLE */
	bool wakee_idle;	/* the wakee is SCHED_IDLE */
	bool wakee_normal;	/* the wakee's policy is SCHED_NORMAL (not BATCH/IDLE) */
	bool need_resched;	/* curr already has a reschedule pending */
	u64 curr_ran_ns;	/* time since curr's exec_start (0 right after update_curr()) */
};

/* wakeup_preempt_begin()'s answer when the pick decides: with the action it judges. */
#define LAB_PREEMPT_PICK	0x100

/*
 * The end of wakeup_preempt_fair() for a preemption it decided (@ret): only the short-slice
 * action (PREEMPT_SHORT, and an idle curr, which the kernel handles as that action) ends curr's
 * protection and its buddy status; a pick-based or sync preemption leaves both for the pick to
 * judge.
 */
LAB_INLINE int wakeup_preempt_take(struct lab_cfs *cfs, lab_pool_t *pool, u32 se_n,
				   u32 pse_n, const struct lab_wakeup *wk, u64 *st, int ret)
{
	if (ret == LAB_PREEMPT_SHORT || ret == LAB_PREEMPT_IDLE) {
		cancel_protect_slice(SE(pool, se_n));
		clear_buddies(cfs, se_n);
		/* set_short_buddy(): unless the current buddy has an even shorter slice. */
		if (!(cfs->next && SE(pool, cfs->next)->slice < SE(pool, pse_n)->slice))
			set_next_buddy(cfs, pool, pse_n, wk->wakee_idle);
	}
	lab_count(st, ret == LAB_PREEMPT_SHORT ? LAB_ST_PREEMPT_SHORT :
		  ret == LAB_PREEMPT_IDLE ? LAB_ST_PREEMPT_IDLE :
		  ret == LAB_PREEMPT_SYNC ? LAB_ST_PREEMPT_SYNC : LAB_ST_PREEMPT_WAKEUP);
	return ret;
}

/*
 * wakeup_preempt_fair() (7.3) up to its pick: should the waking entity @pse preempt the queue's
 * running entity? The caller accounted curr first. Returns the decision when it needs no pick
 * (the early exits, which leave curr's protection alone, an idle curr, preempt_sync()), else
 * LAB_PREEMPT_PICK with the action the pick judges (LAB_PREEMPT_WAKEUP or LAB_PREEMPT_SHORT);
 * the caller then picks with pick_next_entity(), protecting curr unless the action is
 * LAB_PREEMPT_SHORT, and ends with wakeup_preempt_end(). Differs: need_resched and
 * WF_RQ_SELECTED come from the lab's own bookkeeping (struct lab_wakeup), not the kernel's flags.
 * The split lets ops.enqueue make one pick for a wakeup and for an idle queue's insert.
 */
LAB_INLINE int wakeup_preempt_begin(struct lab_cfs *cfs, lab_pool_t *pool, u32 pse_n,
				    const struct lab_wakeup *wk, const struct lab_params *p,
				    u64 *st)
{
	u32 se_n = cfs->curr;
	lab_se_t *se, *pse = SE(pool, pse_n);

	if (!se_n || se_n == pse_n)
		return LAB_PREEMPT_NO;
	se = SE(pool, se_n);
	if (!sched_feat(p, PREEMPT_SHORT) && wk->need_resched)
		return LAB_PREEMPT_NO;
	if (!sched_feat(p, WAKEUP_PREEMPTION))
		return LAB_PREEMPT_NO;
	if (wk->curr_idle && !wk->wakee_idle)
		return wakeup_preempt_take(cfs, pool, se_n, pse_n, wk, st, LAB_PREEMPT_IDLE);
	/* The early exits decide nothing about curr: its protection stays as it is. */
	if (wk->curr_idle != wk->wakee_idle || !wk->wakee_normal)
		goto exit;

	if (sched_feat(p, PREEMPT_SHORT) && pse->slice < se->slice)
		return LAB_PREEMPT_PICK | LAB_PREEMPT_SHORT;
	if (wk->fork || pse->delayed)
		goto exit;
	if (sched_feat(p, NEXT_BUDDY)) {
		/* set_preempt_buddy(): keep a buddy with an earlier deadline. */
		bool buddy = !(cfs->next && entity_before(SE(pool, cfs->next), pse));

		if (buddy)
			set_next_buddy(cfs, pool, pse_n, wk->wakee_idle);
		if (buddy && wk->sync) {
			/* preempt_sync(): only once curr ran migration_cost (a quarter of it when
			 * select_cpu placed the wakee), and only for an earlier deadline. */
			u64 threshold = p->migration_cost;

			if (wk->rq_selected)
				threshold >>= 2;
			if (entity_before(pse, se) && wk->curr_ran_ns >= threshold)
				return wakeup_preempt_take(cfs, pool, se_n, pse_n, wk, st,
								   LAB_PREEMPT_SYNC);
			return LAB_PREEMPT_NO;
		}
	}
	return LAB_PREEMPT_PICK | LAB_PREEMPT_WAKEUP;
exit:
	lab_count(st, LAB_ST_WAKEUP_NO_PREEMPT);
	return LAB_PREEMPT_NO;
}

/* wakeup_preempt_fair() after its pick (@nse) of @action (wakeup_preempt_begin()'s), with
 * @se_n the running entity the check began with. */
LAB_INLINE int wakeup_preempt_end(struct lab_cfs *cfs, lab_pool_t *pool, u32 se_n, u32 pse_n,
				  int action, u32 nse, const struct lab_wakeup *wk,
				  const struct lab_params *p, u64 *st)
{
	if (nse == pse_n)
		return wakeup_preempt_take(cfs, pool, se_n, pse_n, wk, st, action);
	if (action == LAB_PREEMPT_SHORT && entity_eligible(cfs, pool, SE(pool, pse_n)))
		return wakeup_preempt_take(cfs, pool, se_n, pse_n, wk, st, LAB_PREEMPT_SHORT);
	/* The pick kept curr (or chose a third entity): RUN_TO_PARITY trims curr's protection. */
	if (sched_feat(p, RUN_TO_PARITY) && cfs->curr == se_n)
		update_protect_slice(cfs, pool, se_n, st);
	lab_count(st, LAB_ST_WAKEUP_NO_PREEMPT);
	return LAB_PREEMPT_NO;
}

/* wakeup_preempt_fair(): begin, pick (which finalizes the ghosts it meets), end. @ghosts
 * counts the ghosts the pick finalized. */
LAB_INLINE int wakeup_preempt_fair(struct lab_cfs *cfs, lab_pool_t *pool, u32 pse_n,
				   const struct lab_wakeup *wk, const struct lab_params *p,
				   u64 *st, u32 *ghosts)
{
	int action = wakeup_preempt_begin(cfs, pool, pse_n, wk, p, st);
	u32 se_n = cfs->curr, nse;

	if (!(action & LAB_PREEMPT_PICK))
		return action;
	action &= ~LAB_PREEMPT_PICK;
	nse = pick_next_entity(cfs, pool, action != LAB_PREEMPT_SHORT, p, st, ghosts);
	return wakeup_preempt_end(cfs, pool, se_n, pse_n, action, nse, wk, p, st);
}

#endif /* __LAB_PICK_H */
