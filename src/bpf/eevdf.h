/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The EEVDF arithmetic and runqueue of kernel/sched/fair.c, as plain C.
 *
 * Nothing in this file calls a BPF helper: it is compiled into the BPF scheduler and, with
 * LAB_HOST defined, into the host test library (src/bpf/host.c), where cargo test checks it.
 * Every function is named after the fair.c function it mirrors; comments say where we differ.
 *
 * Units. Weights are the nice table's values (nice 0 = 1024), i.e. scale_load_down() of the
 * kernel's full-resolution se->load.weight (nice 0 = 1 << 20). Every EEVDF quantity that
 * depends on weights is a ratio of weights -- V = sum(w*v)/sum(w), lag inflation (W+w)/W,
 * calc_delta_fair() = delta * NICE_0/w -- so for the nice table (whose full-resolution weights
 * are exact multiples of 1024) our results are bit-identical to the kernel's, while the
 * products that feed the sums stay 1024 times further from overflow.
 *
 * Entities live in a pool of slots (struct lab_se); trees link slots by index, slot 0 is "none".
 */
#ifndef __LAB_EEVDF_H
#define __LAB_EEVDF_H

#ifdef LAB_HOST
#include <stdbool.h>
#include <stddef.h>
#define LAB_INLINE static inline
#define LAB_NOINLINE static
/* A bounded loop: bpf_for() in BPF, a plain for loop on the host. */
#define lab_for(i, start, end) for ((i) = (start); (i) < (end); (i)++)
#else
#define LAB_INLINE static __always_inline
#define LAB_NOINLINE static __noinline
#define lab_for(i, start, end) bpf_for(i, start, end)
#endif

#include "intf.h"

/* ---------------------------------------------------------------------------------------------
 * Constants (sched.h, fair.c)
 */
#define NICE_0_LOAD		1024ULL	/* nice 0 in our units; the kernel's 1 << 20 >> 10 */
#define WEIGHT_IDLEPRIO		3	/* SCHED_IDLE */
#define LAB_MIN_CUSTOM_SLICE	100000ULL	/* __setparam_fair(): clamp of sched_runtime */
#define LAB_MAX_CUSTOM_SLICE	100000000ULL
#define LAB_SLOT_MASK		(LAB_NR_SLOTS - 1)
/* An RB tree of n < 2^32 nodes is at most 64 levels deep: the bound of every tree walk. */
#define LAB_TREE_MAX_DEPTH	64

/* sched_prio_to_weight[] (core.c), index nice + 20. */
static const u32 lab_prio_to_weight[40] = {
	/* -20 */ 88761, 71755, 56483, 46273, 36291,
	/* -15 */ 29154, 23254, 18705, 14949, 11916,
	/* -10 */ 9548, 7620, 6100, 4904, 3906,
	/*  -5 */ 3121, 2501, 1991, 1586, 1277,
	/*   0 */ 1024, 820, 655, 526, 423,
	/*   5 */ 335, 272, 215, 172, 137,
	/*  10 */ 110, 87, 70, 56, 45,
	/*  15 */ 36, 29, 23, 18, 15,
};

/* ---------------------------------------------------------------------------------------------
 * The scheduling entity (struct sched_entity) and the runqueue (struct cfs_rq).
 */
struct lab_se {
	u64 vruntime;		/* v_i */
	u64 deadline;		/* vd_i; relative to vruntime while rel_deadline */
	u64 vprot;		/* slice protection: curr is protected while vruntime < vprot */
	s64 vlag;		/* saved lag V - v_i (while not queued, or a ghost's lag at sleep) */
	u64 slice;		/* request size r_i, ns */
	u64 min_vruntime;	/* augmented: min vruntime of the subtree */
	u64 min_slice;		/* augmented: min slice of the subtree */
	u64 max_slice;		/* augmented: max slice of the subtree */
	u32 weight;		/* nice-table weight (1024 = nice 0) */
	u32 left, right, parent;	/* tree links (slots), 0 = none */
	s32 pid;		/* the task in this slot; 0 = free */
	s16 cpu;		/* the queue the entity is accounted in, -1 = none */
	u8 red;			/* RB colour */
	u8 on_rq;		/* queued: in the tree, or the queue's curr (ghosts included) */
	u8 delayed;		/* sched_delayed: asleep but kept queued (a ghost) */
	u8 rel_deadline;	/* deadline holds d - v */
	u8 custom_slice;	/* slice set through sched_setattr(sched_runtime) */
	u8 in_tree;		/* linked into its queue's tree (and counted in the sums) */
	u8 is_new;		/* not enqueued yet: the next placement is ENQUEUE_INITIAL */
	/* sched_ext bookkeeping, kept here so that it changes under the queue lock */
	u8 custody;		/* held by the scheduler (ops.enqueue), not yet dispatched */
	u8 running;		/* between ops.running and ops.stopping */
	u8 pad;
	u64 exec_snap;		/* the task's sum_exec_runtime already charged to vruntime */
	u64 last_ran;		/* when it last stopped running (task_hot()) */
};

struct lab_pool {
	struct lab_se se[LAB_NR_SLOTS];
};

struct lab_cfs {
	u32 root;		/* tree of queued entities other than curr, ordered by deadline */
	u32 curr;		/* the running entity: outside the tree and the sums */
	u32 next;		/* the next buddy */
	u32 nr_queued;		/* tree + curr, ghosts included */
	u32 nr_delayed;		/* ghosts */
	u32 sum_shift;		/* PARANOID_AVG: extra right shift of weights in the sums */
	u64 zero_vruntime;	/* v0, the origin of the keys */
	s64 sum_w_vruntime;	/* sum over the tree of (v_i - v0) * w_i' */
	u64 sum_weight;		/* sum over the tree of w_i' */
	u64 nr_overflow;	/* times a sum overflowed (the kernel WARNs) */
};

/* A PELT-like signal: the average of a piecewise-constant value, halving every 32 ms. */
struct lab_pelt {
	u64 avg;
	u64 stamp;		/* ns, advanced in whole 1024 us periods */
};

/* The newidle balance statistics of one CPU (fair.c: update_newidle_stats(), NI_RANDOM/NI_RATE). */
struct lab_newidle {
	u32 calls;
	u32 success;		/* weighted successes within the current window */
	u32 ratio;		/* successes per 1024 calls (plus NI_RATE's term), at most 1024 */
	u32 pad;
	u64 stamp;		/* ns when the last window closed */
};

/* One CPU's queue in the BPF scheduler: the EEVDF state behind its lock, and what CPU selection
 * and balancing read about it. */
struct lab_rq {
	struct bpf_spin_lock lock;
	u32 kicked;		/* a reschedule we asked for is pending (need_resched) */
	struct lab_cfs cfs;
	struct lab_pelt load;	/* cpu_load(): queued weight, ghosts included */
	struct lab_pelt util;	/* utilisation: time running one of our tasks, 0..1024 */
	struct lab_newidle ni;
	u32 nr_balance_failed;	/* periodic pulls refused in a row (hot or ineligible tasks) */
	u32 pad2;
};

#define SE(pool, i) (&(pool)->se[(i) & LAB_SLOT_MASK])

LAB_INLINE u64 lab_min_u64(u64 a, u64 b) { return a < b ? a : b; }
LAB_INLINE u64 lab_max_u64(u64 a, u64 b) { return a > b ? a : b; }
LAB_INLINE s64 lab_min_s64(s64 a, s64 b) { return a < b ? a : b; }
LAB_INLINE s64 lab_max_s64(s64 a, s64 b) { return a > b ? a : b; }
/* Virtual times wrap: compare them by signed difference, like the kernel. */
LAB_INLINE bool vruntime_gt(u64 a, u64 b) { return (s64)(a - b) > 0; }
LAB_INLINE u64 min_vruntime_of(u64 a, u64 b) { return vruntime_gt(a, b) ? b : a; }

/* ---------------------------------------------------------------------------------------------
 * Weights and virtual time (core.c set_load_weight(), fair.c calc_delta_fair())
 */

/* The weight of a task of static priority @static_prio (100..139) and policy @idle. */
LAB_INLINE u32 lab_task_weight(s32 static_prio, bool idle)
{
	s32 idx = static_prio - 100;

	if (idle)
		return WEIGHT_IDLEPRIO;
	if (idx < 0)
		idx = 0;
	if (idx > 39)
		idx = 39;
	return lab_prio_to_weight[idx];
}

/* calc_delta_fair(): wall ns at weight @w -> virtual ns. Exact while delta < 2^54 ns. */
LAB_INLINE u64 calc_delta_fair(u64 delta, u32 w)
{
	if (w == NICE_0_LOAD || !w)
		return delta;
	return delta * NICE_0_LOAD / w;
}

/* The slice of a task: the base slice, or a custom one clamped as __setparam_fair() does. */
LAB_INLINE u64 lab_custom_slice(u64 runtime)
{
	return runtime < LAB_MIN_CUSTOM_SLICE ? LAB_MIN_CUSTOM_SLICE :
	       runtime > LAB_MAX_CUSTOM_SLICE ? LAB_MAX_CUSTOM_SLICE : runtime;
}

/* ---------------------------------------------------------------------------------------------
 * V, the weighted average vruntime (fair.c: avg_vruntime() and friends)
 *
 * Lag conservation, sum_i w_i (V - v_i) = 0, makes V = sum_i w_i v_i / sum_i w_i over every
 * queued entity, curr included. To keep products small the sums hold keys relative to v0:
 *
 *   key_i = v_i - v0,  S = sum_tree key_i * w_i,  W = sum_tree w_i
 *   V = v0 + (S + key_curr * w_curr) / (W + w_curr)
 *
 * and v0 follows V (avg_vruntime() re-centres it at every call), so keys stay within a few lag
 * bounds of zero. The division floors, so an entity placed exactly at V tests eligible.
 */

LAB_INLINE s64 entity_key(const struct lab_cfs *cfs, u64 v)
{
	return (s64)(v - cfs->zero_vruntime);
}

/* avg_vruntime_weight(): the weight an entity contributes to the sums. */
LAB_INLINE u64 avg_vruntime_weight(const struct lab_cfs *cfs, u32 w)
{
	u64 r;

	if (!cfs->sum_shift)
		return w;
	r = (u64)w >> (cfs->sum_shift & 63);
	return r < 2 ? 2 : r;
}

#define INT64_MAX_LAB 0x7fffffffffffffffLL

/* s64 multiply; returns true on overflow (then *res is not meaningful). */
LAB_INLINE bool lab_mul_overflows(s64 a, s64 b, s64 *res)
{
	u64 ua = a < 0 ? -(u64)a : (u64)a;
	u64 ub = b < 0 ? -(u64)b : (u64)b;

	if (ua && ub > (u64)INT64_MAX_LAB / ua)
		return true;
	*res = a * b;
	return false;
}

LAB_INLINE bool lab_add_overflows(s64 a, s64 b, s64 *res)
{
	s64 r = (s64)((u64)a + (u64)b);

	if ((a >= 0) == (b >= 0) && (r >= 0) != (a >= 0))
		return true;
	*res = r;
	return false;
}

/*
 * __sum_w_vruntime_add() / sum_w_vruntime_add_paranoid(). Returns false when the sums overflowed:
 * with PARANOID_AVG the caller then raises sum_shift and rebuilds them (sum_w_vruntime_rebuild()),
 * without it the sums wrap and the overflow is only counted (the kernel WARNs).
 */
LAB_INLINE bool sum_w_vruntime_add(struct lab_cfs *cfs, u64 v, u32 weight, bool paranoid)
{
	u64 w = avg_vruntime_weight(cfs, weight);
	s64 key = entity_key(cfs, v), prod, sum;

	if (lab_mul_overflows(key, (s64)w, &prod) ||
	    lab_add_overflows(cfs->sum_w_vruntime, prod, &sum)) {
		cfs->nr_overflow++;
		if (paranoid)
			return false;
		cfs->sum_w_vruntime += key * (s64)w;
		cfs->sum_weight += w;
		return true;
	}
	cfs->sum_w_vruntime = sum;
	cfs->sum_weight += w;
	return true;
}

LAB_INLINE void sum_w_vruntime_sub(struct lab_cfs *cfs, u64 v, u32 weight)
{
	u64 w = avg_vruntime_weight(cfs, weight);

	cfs->sum_w_vruntime -= entity_key(cfs, v) * (s64)w;
	cfs->sum_weight -= w;
}

/* update_zero_vruntime(): move the origin by @delta, keeping V. */
LAB_INLINE void update_zero_vruntime(struct lab_cfs *cfs, s64 delta)
{
	cfs->sum_w_vruntime -= (s64)cfs->sum_weight * delta;
	cfs->zero_vruntime += delta;
}

/* Floor division of a signed sum by a positive weight (the kernel's left-biased divide). */
LAB_INLINE s64 lab_div_floor(s64 s, u64 w)
{
	if (s >= 0)
		return (s64)((u64)s / w);
	return -(s64)((-(u64)s + w - 1) / w);
}

/*
 * avg_vruntime(): V, and re-centre zero_vruntime onto it. @curr is the queue's running entity
 * when it is still queued (NULL otherwise).
 */
LAB_INLINE u64 avg_vruntime(struct lab_cfs *cfs, const struct lab_se *curr)
{
	s64 runtime = cfs->sum_w_vruntime, delta = 0;
	u64 weight = cfs->sum_weight;

	if (weight) {
		if (curr) {
			u64 w = avg_vruntime_weight(cfs, curr->weight);

			runtime += entity_key(cfs, curr->vruntime) * (s64)w;
			weight += w;
		}
		delta = lab_div_floor(runtime, weight);
	} else if (curr) {
		/* A lone running entity is its own average. */
		delta = entity_key(cfs, curr->vruntime);
	}
	update_zero_vruntime(cfs, delta);
	return cfs->zero_vruntime;
}

/*
 * vruntime_eligible(): v <= V without dividing: A >= (v - v0) * L. The kernel multiplies in 128
 * bits where it can; an s64 product that overflows is decided by the key's sign, which is exact
 * because A itself fits in s64 (a huge positive product exceeds it, a huge negative one does not).
 */
LAB_INLINE bool vruntime_eligible(const struct lab_cfs *cfs, const struct lab_se *curr, u64 v)
{
	s64 avg = cfs->sum_w_vruntime, key = entity_key(cfs, v), prod;
	u64 load = cfs->sum_weight;

	if (curr) {
		u64 w = avg_vruntime_weight(cfs, curr->weight);

		avg += entity_key(cfs, curr->vruntime) * (s64)w;
		load += w;
	}
	if (lab_mul_overflows(key, (s64)load, &prod))
		return key < 0;
	return avg >= prod;
}

/* ---------------------------------------------------------------------------------------------
 * Lag (fair.c: entity_lag(), update_entity_lag())
 */

/*
 * entity_lag(): V - v, clamped to +-(the queue's largest slice + one tick) in the entity's
 * virtual units -- the EEVDF bound -r_max < lag < max(r_max, q).
 */
LAB_INLINE s64 entity_lag(u64 avruntime, const struct lab_se *se, u64 max_slice, u64 tick_ns)
{
	s64 vlag = (s64)(avruntime - se->vruntime);
	s64 limit = (s64)calc_delta_fair(max_slice + tick_ns, se->weight);

	return vlag < -limit ? -limit : vlag > limit ? limit : vlag;
}

/*
 * The lag rule of update_entity_lag() for a delayed entity: its lag may not grow beyond what it
 * had when it went to sleep while it sat delayed (059258b0d424), and DELAY_ZERO gives it no
 * credit at all.
 */
LAB_INLINE s64 delayed_entity_lag(s64 lag_now, s64 lag_at_sleep, bool delay_zero)
{
	s64 vlag = lab_max_s64(lag_now, lag_at_sleep);

	return delay_zero ? lab_min_s64(vlag, 0) : vlag;
}

/* ---------------------------------------------------------------------------------------------
 * Deadlines and placement (fair.c: update_deadline(), place_entity())
 */

/* update_deadline(): a new request once v reaches d. Returns true when one was issued. */
LAB_INLINE bool update_deadline_math(struct lab_se *se)
{
	if ((s64)(se->vruntime - se->deadline) < 0)
		return false;
	se->deadline = se->vruntime + calc_delta_fair(se->slice, se->weight);
	return true;
}

/*
 * place_entity()'s lag inflation. Joining with lag vl moves V to V - w*vl/(W+w), which leaves
 * the entity only vl*W/(W+w) of it; placing it at V - vl*(W+w)/W therefore keeps vl. @load is W
 * (the queue's weight, curr included, before the join), @w the entity's. Truncating division,
 * as the kernel's div_s64().
 */
LAB_INLINE s64 place_lag_inflate(s64 vlag, u64 load, u64 w)
{
	s64 lag = vlag * (s64)(load + w);
	u64 mag;

	if (!load)
		load = 1;
	mag = lag < 0 ? -(u64)lag : (u64)lag;
	mag /= load;
	return lag < 0 ? -(s64)mag : (s64)mag;
}

/* ---------------------------------------------------------------------------------------------
 * The augmented RB tree (fair.c: __enqueue_entity(), __dequeue_entity(), min_vruntime_update())
 *
 * Ordered by deadline (entity_before()); every node also keeps the minimum vruntime and the
 * minimum and maximum slice of its subtree, so that pick_eevdf() finds the earliest eligible
 * deadline in O(log n) and the lag clamp and slice protection see the queue's slice range.
 */

/* entity_before(): a has the earlier deadline. */
LAB_INLINE bool entity_before(const struct lab_se *a, const struct lab_se *b)
{
	return (s64)(a->deadline - b->deadline) < 0;
}

/* min_vruntime_update() and the min/max slice callbacks: recompute one node from its children. */
LAB_INLINE void rb_augment_node(struct lab_pool *pool, u32 n)
{
	struct lab_se *se = SE(pool, n), *c;
	u64 mv = se->vruntime, mins = se->slice, maxs = se->slice;

	if (se->left) {
		c = SE(pool, se->left);
		mv = min_vruntime_of(mv, c->min_vruntime);
		mins = lab_min_u64(mins, c->min_slice);
		maxs = lab_max_u64(maxs, c->max_slice);
	}
	if (se->right) {
		c = SE(pool, se->right);
		mv = min_vruntime_of(mv, c->min_vruntime);
		mins = lab_min_u64(mins, c->min_slice);
		maxs = lab_max_u64(maxs, c->max_slice);
	}
	se->min_vruntime = mv;
	se->min_slice = mins;
	se->max_slice = maxs;
}

/* Recompute the aggregates from @n up to the root. */
LAB_INLINE void rb_augment_path(struct lab_pool *pool, u32 n)
{
	int i;

	lab_for(i, 0, LAB_TREE_MAX_DEPTH) {
		if (!n)
			break;
		rb_augment_node(pool, n);
		n = SE(pool, n)->parent;
	}
}

LAB_INLINE void rb_replace_child(struct lab_cfs *cfs, struct lab_pool *pool, u32 parent,
				 u32 old, u32 new)
{
	if (!parent)
		cfs->root = new;
	else if (SE(pool, parent)->left == old)
		SE(pool, parent)->left = new;
	else
		SE(pool, parent)->right = new;
}

/*
 * Rotations keep the aggregates: the node that moves up takes over the subtree, and with it the
 * old top's aggregate; the node that moves down is recomputed from its new children.
 */
LAB_INLINE void rb_rotate_left(struct lab_cfs *cfs, struct lab_pool *pool, u32 x)
{
	struct lab_se *sx = SE(pool, x);
	u32 y = sx->right;
	struct lab_se *sy = SE(pool, y);

	sx->right = sy->left;
	if (sy->left)
		SE(pool, sy->left)->parent = x;
	sy->parent = sx->parent;
	rb_replace_child(cfs, pool, sx->parent, x, y);
	sy->left = x;
	sx->parent = y;
	sy->min_vruntime = sx->min_vruntime;
	sy->min_slice = sx->min_slice;
	sy->max_slice = sx->max_slice;
	rb_augment_node(pool, x);
}

LAB_INLINE void rb_rotate_right(struct lab_cfs *cfs, struct lab_pool *pool, u32 x)
{
	struct lab_se *sx = SE(pool, x);
	u32 y = sx->left;
	struct lab_se *sy = SE(pool, y);

	sx->left = sy->right;
	if (sy->right)
		SE(pool, sy->right)->parent = x;
	sy->parent = sx->parent;
	rb_replace_child(cfs, pool, sx->parent, x, y);
	sy->right = x;
	sx->parent = y;
	sy->min_vruntime = sx->min_vruntime;
	sy->min_slice = sx->min_slice;
	sy->max_slice = sx->max_slice;
	rb_augment_node(pool, x);
}

LAB_INLINE bool rb_is_red(struct lab_pool *pool, u32 n)
{
	return n && SE(pool, n)->red;
}

/* Link @n into the tree by deadline and rebalance. */
LAB_NOINLINE void rb_insert(struct lab_cfs *cfs, struct lab_pool *pool, u32 n)
{
	struct lab_se *se = SE(pool, n);
	u32 p = cfs->root, parent = 0, z;
	bool left = false;
	int i;

	lab_for(i, 0, LAB_TREE_MAX_DEPTH) {
		if (!p)
			break;
		parent = p;
		left = entity_before(se, SE(pool, p));
		p = left ? SE(pool, p)->left : SE(pool, p)->right;
	}
	se->left = se->right = 0;
	se->parent = parent;
	se->red = 1;
	if (!parent)
		cfs->root = n;
	else if (left)
		SE(pool, parent)->left = n;
	else
		SE(pool, parent)->right = n;
	rb_augment_path(pool, n);

	z = n;
	lab_for(i, 0, LAB_TREE_MAX_DEPTH) {
		u32 zp = SE(pool, z)->parent, g, u;

		if (!zp || !SE(pool, zp)->red)
			break;
		g = SE(pool, zp)->parent;	/* exists: a red node is never the root */
		if (zp == SE(pool, g)->left) {
			u = SE(pool, g)->right;
			if (rb_is_red(pool, u)) {
				SE(pool, zp)->red = 0;
				SE(pool, u)->red = 0;
				SE(pool, g)->red = 1;
				z = g;
				continue;
			}
			if (z == SE(pool, zp)->right) {
				rb_rotate_left(cfs, pool, zp);
				z = zp;
				zp = SE(pool, z)->parent;
			}
			SE(pool, zp)->red = 0;
			SE(pool, g)->red = 1;
			rb_rotate_right(cfs, pool, g);
		} else {
			u = SE(pool, g)->left;
			if (rb_is_red(pool, u)) {
				SE(pool, zp)->red = 0;
				SE(pool, u)->red = 0;
				SE(pool, g)->red = 1;
				z = g;
				continue;
			}
			if (z == SE(pool, zp)->left) {
				rb_rotate_right(cfs, pool, zp);
				z = zp;
				zp = SE(pool, z)->parent;
			}
			SE(pool, zp)->red = 0;
			SE(pool, g)->red = 1;
			rb_rotate_left(cfs, pool, g);
		}
	}
	if (cfs->root)
		SE(pool, cfs->root)->red = 0;
}

/* Replace the subtree rooted at @u by the one rooted at @v (CLRS' transplant). */
LAB_INLINE void rb_transplant(struct lab_cfs *cfs, struct lab_pool *pool, u32 u, u32 v)
{
	u32 up = SE(pool, u)->parent;

	rb_replace_child(cfs, pool, up, u, v);
	if (v)
		SE(pool, v)->parent = up;
}

/* Unlink @z from the tree and rebalance. */
LAB_NOINLINE void rb_erase(struct lab_cfs *cfs, struct lab_pool *pool, u32 z)
{
	struct lab_se *sz = SE(pool, z);
	u32 x, xp, y = z;
	bool y_was_red = sz->red;
	int i;

	if (!sz->left) {
		x = sz->right;
		xp = sz->parent;
		rb_transplant(cfs, pool, z, x);
	} else if (!sz->right) {
		x = sz->left;
		xp = sz->parent;
		rb_transplant(cfs, pool, z, x);
	} else {
		/* y: the successor of z, the leftmost node of its right subtree */
		y = sz->right;
		lab_for(i, 0, LAB_TREE_MAX_DEPTH) {
			if (!SE(pool, y)->left)
				break;
			y = SE(pool, y)->left;
		}
		y_was_red = SE(pool, y)->red;
		x = SE(pool, y)->right;
		if (SE(pool, y)->parent == z) {
			xp = y;
		} else {
			xp = SE(pool, y)->parent;
			rb_transplant(cfs, pool, y, x);
			SE(pool, y)->right = sz->right;
			SE(pool, sz->right)->parent = y;
		}
		rb_transplant(cfs, pool, z, y);
		SE(pool, y)->left = sz->left;
		SE(pool, sz->left)->parent = y;
		SE(pool, y)->red = sz->red;
	}
	sz->left = sz->right = sz->parent = 0;
	/* Every node whose subtree changed is on the path from xp to the root. */
	rb_augment_path(pool, xp);

	if (y_was_red)
		return;
	lab_for(i, 0, LAB_TREE_MAX_DEPTH) {
		u32 w;

		if (x == cfs->root || rb_is_red(pool, x) || !xp)
			break;
		if (x == SE(pool, xp)->left) {
			w = SE(pool, xp)->right;
			if (rb_is_red(pool, w)) {
				SE(pool, w)->red = 0;
				SE(pool, xp)->red = 1;
				rb_rotate_left(cfs, pool, xp);
				w = SE(pool, xp)->right;
			}
			if (!rb_is_red(pool, SE(pool, w)->left) &&
			    !rb_is_red(pool, SE(pool, w)->right)) {
				SE(pool, w)->red = 1;
				x = xp;
				xp = SE(pool, x)->parent;
				continue;
			}
			if (!rb_is_red(pool, SE(pool, w)->right)) {
				SE(pool, SE(pool, w)->left)->red = 0;
				SE(pool, w)->red = 1;
				rb_rotate_right(cfs, pool, w);
				w = SE(pool, xp)->right;
			}
			SE(pool, w)->red = SE(pool, xp)->red;
			SE(pool, xp)->red = 0;
			if (SE(pool, w)->right)
				SE(pool, SE(pool, w)->right)->red = 0;
			rb_rotate_left(cfs, pool, xp);
			x = cfs->root;
			break;
		} else {
			w = SE(pool, xp)->left;
			if (rb_is_red(pool, w)) {
				SE(pool, w)->red = 0;
				SE(pool, xp)->red = 1;
				rb_rotate_right(cfs, pool, xp);
				w = SE(pool, xp)->left;
			}
			if (!rb_is_red(pool, SE(pool, w)->right) &&
			    !rb_is_red(pool, SE(pool, w)->left)) {
				SE(pool, w)->red = 1;
				x = xp;
				xp = SE(pool, x)->parent;
				continue;
			}
			if (!rb_is_red(pool, SE(pool, w)->left)) {
				SE(pool, SE(pool, w)->right)->red = 0;
				SE(pool, w)->red = 1;
				rb_rotate_left(cfs, pool, w);
				w = SE(pool, xp)->left;
			}
			SE(pool, w)->red = SE(pool, xp)->red;
			SE(pool, xp)->red = 0;
			if (SE(pool, w)->left)
				SE(pool, SE(pool, w)->left)->red = 0;
			rb_rotate_right(cfs, pool, xp);
			x = cfs->root;
			break;
		}
	}
	if (x)
		SE(pool, x)->red = 0;
}

/* __pick_first_entity(): the earliest deadline in the tree. */
LAB_INLINE u32 rb_first(const struct lab_cfs *cfs, struct lab_pool *pool)
{
	u32 n = cfs->root;
	int i;

	lab_for(i, 0, LAB_TREE_MAX_DEPTH) {
		if (!n || !SE(pool, n)->left)
			break;
		n = SE(pool, n)->left;
	}
	return n;
}

/* In-order successor, for walks over the whole queue (dumps, sum rebuilds). */
LAB_INLINE u32 rb_next(struct lab_pool *pool, u32 n)
{
	u32 p;
	int i;

	if (SE(pool, n)->right) {
		n = SE(pool, n)->right;
		lab_for(i, 0, LAB_TREE_MAX_DEPTH) {
			if (!SE(pool, n)->left)
				break;
			n = SE(pool, n)->left;
		}
		return n;
	}
	p = SE(pool, n)->parent;
	lab_for(i, 0, LAB_TREE_MAX_DEPTH) {
		if (!p || n != SE(pool, p)->right)
			break;
		n = p;
		p = SE(pool, p)->parent;
	}
	return p;
}

/* ---------------------------------------------------------------------------------------------
 * The runqueue (fair.c: the EEVDF parts of enqueue/dequeue, pick, preemption, reweight, yield)
 *
 * These functions see one queue and its entities; the BPF side calls them under that queue's
 * lock, after accounting the running entity (update_curr()), and turns their results into
 * sched_ext actions (dispatch, kick). They count what they decide in @st, a row of
 * enum lab_stat counters.
 */

/* A snapshot of the knobs the arithmetic needs. */
struct lab_params {
	u64 features;		/* 1 << LAB_FEAT_* */
	u64 base_slice;		/* sysctl_sched_base_slice */
	u64 normalized_slice;	/* normalized_sysctl_sched_base_slice */
	u64 migration_cost;	/* sysctl_sched_migration_cost */
	u64 tick_ns;		/* TICK_NSEC */
	u64 measure_scan;	/* count what a scan of a deadline-sorted DSQ would visit */
};

#define sched_feat(p, X) (((p)->features >> LAB_FEAT_##X) & 1)

LAB_INLINE void lab_count(u64 *st, u32 idx)
{
	if (st && idx < LAB_NR_STATS)
		st[idx]++;
}

/* The queue's running entity while it is queued (the kernel's "curr && curr->on_rq"). */
LAB_INLINE struct lab_se *cfs_curr(struct lab_cfs *cfs, struct lab_pool *pool)
{
	struct lab_se *curr;

	if (!cfs->curr)
		return NULL;
	curr = SE(pool, cfs->curr);
	return curr->on_rq ? curr : NULL;
}

/* cfs_rq_min_slice() / cfs_rq_max_slice(): the slice range of the queued entities. */
LAB_INLINE u64 cfs_min_slice(struct lab_cfs *cfs, struct lab_pool *pool)
{
	struct lab_se *curr = cfs_curr(cfs, pool);
	u64 min = ~0ULL;

	if (curr)
		min = curr->slice;
	if (cfs->root)
		min = lab_min_u64(min, SE(pool, cfs->root)->min_slice);
	return min;
}

LAB_INLINE u64 cfs_max_slice(struct lab_cfs *cfs, struct lab_pool *pool)
{
	struct lab_se *curr = cfs_curr(cfs, pool);
	u64 max = 0;

	if (curr)
		max = curr->slice;
	if (cfs->root)
		max = lab_max_u64(max, SE(pool, cfs->root)->max_slice);
	return max;
}

LAB_INLINE bool entity_eligible(struct lab_cfs *cfs, struct lab_pool *pool, struct lab_se *se)
{
	return vruntime_eligible(cfs, cfs_curr(cfs, pool), se->vruntime);
}

/*
 * sum_w_vruntime_add_paranoid()'s recovery: shift the weights one more bit and rebuild both sums
 * from the tree. Bounded by the pool size; the kernel BUGs at a shift of 10, we stop growing it.
 */
LAB_NOINLINE void sum_w_vruntime_rebuild(struct lab_cfs *cfs, struct lab_pool *pool, u64 *st)
{
	u32 n;
	int i;

	if (cfs->sum_shift < 10)
		cfs->sum_shift++;
	cfs->sum_w_vruntime = 0;
	cfs->sum_weight = 0;
	n = rb_first(cfs, pool);
	lab_for(i, 0, LAB_NR_SLOTS) {
		if (!n)
			break;
		sum_w_vruntime_add(cfs, SE(pool, n)->vruntime, SE(pool, n)->weight, false);
		n = rb_next(pool, n);
	}
	lab_count(st, LAB_ST_PARANOID_REBUILD);
}

/* __enqueue_entity(): into the sums and the tree. */
LAB_INLINE void __enqueue_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n,
				 const struct lab_params *p, u64 *st)
{
	struct lab_se *se = SE(pool, n);
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
LAB_INLINE void __dequeue_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n)
{
	struct lab_se *se = SE(pool, n);

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
LAB_INLINE void set_next_buddy(struct lab_cfs *cfs, struct lab_pool *pool, u32 n, bool idle)
{
	struct lab_se *se = SE(pool, n);

	if (!se->on_rq || se->delayed || idle)
		return;
	cfs->next = n;
}

/* update_entity_lag(): save V - v (clamped); returns true when the saved lag no longer matches
 * the entity's position (V - vlag != v), i.e. a requeue must re-place it. */
LAB_INLINE bool update_entity_lag(struct lab_cfs *cfs, struct lab_pool *pool, u32 n,
				  const struct lab_params *p)
{
	struct lab_se *se = SE(pool, n);
	u64 avruntime = avg_vruntime(cfs, cfs_curr(cfs, pool));
	s64 vlag = entity_lag(avruntime, se, cfs_max_slice(cfs, pool), p->tick_ns);

	if (se->delayed)
		vlag = delayed_entity_lag(vlag, se->vlag, sched_feat(p, DELAY_ZERO));
	se->vlag = vlag;
	return avruntime - (u64)vlag != se->vruntime;
}

/* update_deadline(): issue a new request once curr's vruntime reached its deadline. */
LAB_INLINE bool update_deadline(struct lab_cfs *cfs, struct lab_pool *pool, u32 n,
				const struct lab_params *p, u64 *st)
{
	struct lab_se *se = SE(pool, n);

	if ((s64)(se->vruntime - se->deadline) < 0)
		return false;
	if (!se->custom_slice)
		se->slice = p->base_slice;
	se->deadline = se->vruntime + calc_delta_fair(se->slice, se->weight);
	avg_vruntime(cfs, cfs_curr(cfs, pool));
	lab_count(st, LAB_ST_DEADLINE_NEW);
	return true;
}

/* protect_slice() / cancel_protect_slice(). */
LAB_INLINE bool protect_slice(const struct lab_se *se)
{
	return (s64)(se->vruntime - se->vprot) < 0;
}

LAB_INLINE void cancel_protect_slice(struct lab_se *se)
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
LAB_INLINE void set_protect_slice(struct lab_cfs *cfs, struct lab_pool *pool, u32 n,
				  const struct lab_params *p)
{
	struct lab_se *se = SE(pool, n);
	u64 slice = p->normalized_slice, vprot = se->deadline;

	if (sched_feat(p, RUN_TO_PARITY))
		slice = cfs_min_slice(cfs, pool);
	slice = lab_min_u64(slice, se->slice);
	if (slice != se->slice) {
		if (sched_feat(p, PREEMPT_SHORT))
			vprot = min_vruntime_of(vprot, avg_vruntime(cfs, NULL));
		else
			vprot = min_vruntime_of(vprot, se->vruntime + calc_delta_fair(slice, se->weight));
	}
	se->vprot = vprot;
}

/* update_protect_slice() (7.3): after a wakeup that did not preempt, protect curr at most the
 * queue's shortest slice beyond min(v, V). */
LAB_INLINE void update_protect_slice(struct lab_cfs *cfs, struct lab_pool *pool, u32 n, u64 *st)
{
	struct lab_se *se = SE(pool, n);
	u64 base = min_vruntime_of(se->vruntime, avg_vruntime(cfs, cfs_curr(cfs, pool)));
	u64 vprot = base + calc_delta_fair(cfs_min_slice(cfs, pool), se->weight);

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
LAB_INLINE int update_curr_math(struct lab_cfs *cfs, struct lab_pool *pool, u64 delta_exec,
				const struct lab_params *p, u64 *st)
{
	struct lab_se *curr;
	bool resched;

	if (!cfs->curr || !delta_exec)
		return LAB_RESCHED_NONE;
	curr = SE(pool, cfs->curr);
	curr->vruntime += calc_delta_fair(delta_exec, curr->weight);
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
LAB_INLINE void place_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n, int flags,
			     const struct lab_params *p, u64 *st)
{
	struct lab_se *se = SE(pool, n), *curr = cfs_curr(cfs, pool);
	u64 avruntime = avg_vruntime(cfs, curr), vslice;
	s64 lag = 0;
	bool heavy = false;

	if (!se->custom_slice)
		se->slice = p->base_slice;
	vslice = calc_delta_fair(se->slice, se->weight);

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

/*
 * enqueue_entity(): a runnable entity joins the queue -- placed, counted, and linked into the
 * tree unless it is the queue's running entity.
 */
LAB_INLINE void enqueue_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n, int flags,
			       const struct lab_params *p, u64 *st)
{
	struct lab_se *se = SE(pool, n);

	place_entity(cfs, pool, n, flags, p, st);
	se->on_rq = 1;
	se->is_new = 0;
	cfs->nr_queued++;
	if (cfs->curr != n)
		__enqueue_entity(cfs, pool, n, p, st);
}

/* Flags of dequeue_entity() (the kernel's DEQUEUE_* it looks at). */
#define LAB_DEQ_SLEEP		1	/* DEQUEUE_SLEEP */
#define LAB_DEQ_SPECIAL		2	/* DEQUEUE_SPECIAL: stopped, traced, dead... never delayed */
#define LAB_DEQ_DELAYED		4	/* DEQUEUE_DELAYED: finishing a ghost */

/*
 * dequeue_entity() / 7.3 __dequeue_task(): an entity leaves. Its lag is saved first (V still
 * counts it). A sleeper that is not eligible stays queued as a ghost (DELAY_DEQUEUE) and the
 * function returns false; otherwise it leaves the tree, the sums and the count, keeping a
 * relative deadline when it moves while runnable (PLACE_REL_DEADLINE). A departing curr stops
 * being the queue's curr either way; a ghost goes into the tree.
 */
LAB_INLINE bool dequeue_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n, int flags,
			       const struct lab_params *p, u64 *st)
{
	struct lab_se *se = SE(pool, n);

	clear_buddies(cfs, n);
	update_entity_lag(cfs, pool, n, p);

	if (!(flags & LAB_DEQ_DELAYED) && sched_feat(p, DELAY_DEQUEUE) &&
	    (flags & LAB_DEQ_SLEEP) && !(flags & LAB_DEQ_SPECIAL) &&
	    !se->delayed && !entity_eligible(cfs, pool, se)) {
		se->delayed = 1;
		cfs->nr_delayed++;
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
LAB_INLINE void requeue_delayed_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n,
				       const struct lab_params *p, u64 *st)
{
	struct lab_se *se = SE(pool, n);

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
	se->delayed = 0;
	if (cfs->nr_delayed)
		cfs->nr_delayed--;
}

/* set_next_task_fair()'s EEVDF part: @n becomes the running entity. */
LAB_INLINE void set_next_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n,
				const struct lab_params *p)
{
	struct lab_se *se = SE(pool, n);

	clear_buddies(cfs, n);
	if (se->in_tree)
		__dequeue_entity(cfs, pool, n);
	cfs->curr = n;
	if (se->on_rq)
		set_protect_slice(cfs, pool, n, p);
}

/* put_prev_entity(): the running entity stops running but stays queued. */
LAB_INLINE void put_prev_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n,
				const struct lab_params *p, u64 *st)
{
	struct lab_se *se = SE(pool, n);

	if (cfs->curr == n)
		cfs->curr = 0;
	if (se->on_rq && !se->in_tree)
		__enqueue_entity(cfs, pool, n, p, st);
}

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
LAB_INLINE void count_dsq_scan(struct lab_cfs *cfs, struct lab_pool *pool, u32 leftmost,
			       u64 *st)
{
	const struct lab_se *curr = cfs_curr(cfs, pool);
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
LAB_NOINLINE u32 pick_eevdf(struct lab_cfs *cfs, struct lab_pool *pool, bool protect,
			    const struct lab_params *p, u64 *st)
{
	struct lab_se *curr = cfs_curr(cfs, pool);
	u32 curr_n = curr ? cfs->curr : 0, best = 0, node, visited = 0, leftmost;
	int i;

	lab_count(st, LAB_ST_PICK);
	leftmost = rb_first(cfs, pool);
	if (p->measure_scan)
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
			struct lab_se *se;
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

/*
 * pick_next_entity() and pick_task_fair()'s loop: pick; a picked ghost is finalized (its lag
 * clipped by DELAY_ZERO) and the pick repeated. Returns the pick or 0 when only ghosts (or
 * nothing) were left. @ghosts counts the ghosts finalized.
 */
LAB_INLINE u32 pick_next_entity(struct lab_cfs *cfs, struct lab_pool *pool, bool protect,
				const struct lab_params *p, u64 *st, u32 *ghosts)
{
	u32 n = 0;
	int i;

	lab_for(i, 0, LAB_NR_SLOTS) {
		if (!cfs->nr_queued)
			return 0;
		n = pick_eevdf(cfs, pool, protect, p, st);
		if (!n)
			return 0;
		if (!SE(pool, n)->delayed)
			return n;
		dequeue_entity(cfs, pool, n, LAB_DEQ_SLEEP | LAB_DEQ_DELAYED, p, st);
		lab_count(st, LAB_ST_GHOST_PICKED);
		if (ghosts)
			(*ghosts)++;
	}
	return 0;
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

/*
 * wakeup_preempt_fair() (7.3): should the waking entity @pse preempt the queue's running entity?
 * The caller accounted curr first. Without preemption, RUN_TO_PARITY trims curr's protection to
 * the queue's shortest slice; with it, curr's protection is cancelled and a short-slice wakee
 * becomes the next buddy. @ghosts counts ghosts the pick finalized.
 */
LAB_INLINE int wakeup_preempt_fair(struct lab_cfs *cfs, struct lab_pool *pool, u32 pse_n,
				   const struct lab_wakeup *wk, const struct lab_params *p,
				   u64 *st, u32 *ghosts)
{
	u32 se_n = cfs->curr, nse;
	struct lab_se *se, *pse = SE(pool, pse_n);
	int action = LAB_PREEMPT_WAKEUP, ret;

	if (!se_n || se_n == pse_n)
		return LAB_PREEMPT_NO;
	se = SE(pool, se_n);
	if (!sched_feat(p, PREEMPT_SHORT) && wk->need_resched)
		return LAB_PREEMPT_NO;
	if (!sched_feat(p, WAKEUP_PREEMPTION))
		return LAB_PREEMPT_NO;
	if (wk->curr_idle && !wk->wakee_idle) {
		ret = LAB_PREEMPT_IDLE;
		goto preempt;
	}
	if (wk->curr_idle != wk->wakee_idle || !wk->wakee_normal || pse->delayed)
		goto nopreempt;

	if (sched_feat(p, PREEMPT_SHORT) && pse->slice < se->slice) {
		action = LAB_PREEMPT_SHORT;
	} else {
		if (wk->fork)
			goto nopreempt;
		if (sched_feat(p, NEXT_BUDDY)) {
			/* set_preempt_buddy(): keep a buddy with an earlier deadline. */
			bool buddy = !(cfs->next && entity_before(SE(pool, cfs->next), pse));

			if (buddy)
				set_next_buddy(cfs, pool, pse_n, wk->wakee_idle);
			if (buddy && wk->sync) {
				/* preempt_sync(): only once curr ran migration_cost (a quarter of it
				 * when select_cpu placed the wakee), and only for an earlier deadline. */
				u64 threshold = p->migration_cost;

				if (wk->rq_selected)
					threshold >>= 2;
				if (entity_before(pse, se) && wk->curr_ran_ns >= threshold) {
					ret = LAB_PREEMPT_SYNC;
					goto preempt;
				}
				return LAB_PREEMPT_NO;
			}
		}
	}

	/* pick_next_entity() finalizes the ghosts it meets and picks again. */
	nse = pick_next_entity(cfs, pool, action != LAB_PREEMPT_SHORT, p, st, ghosts);
	if (nse == pse_n) {
		ret = action;
		goto preempt;
	}
	if (action == LAB_PREEMPT_SHORT && entity_eligible(cfs, pool, pse)) {
		ret = LAB_PREEMPT_SHORT;
		goto preempt;
	}
nopreempt:
	lab_count(st, LAB_ST_WAKEUP_NO_PREEMPT);
	if (sched_feat(p, RUN_TO_PARITY) && cfs->curr == se_n)
		update_protect_slice(cfs, pool, se_n, st);
	return LAB_PREEMPT_NO;
preempt:
	cancel_protect_slice(se);
	if (ret == LAB_PREEMPT_SHORT) {
		/* set_short_buddy(): unless the current buddy has an even shorter slice. */
		if (!(cfs->next && SE(pool, cfs->next)->slice < pse->slice))
			set_next_buddy(cfs, pool, pse_n, wk->wakee_idle);
	}
	lab_count(st, ret == LAB_PREEMPT_SHORT ? LAB_ST_PREEMPT_SHORT :
		  ret == LAB_PREEMPT_IDLE ? LAB_ST_PREEMPT_IDLE :
		  ret == LAB_PREEMPT_SYNC ? LAB_ST_PREEMPT_SYNC : LAB_ST_PREEMPT_WAKEUP);
	return ret;
}

/*
 * reweight_eevdf(): a new weight keeps the entity's lag (V - v) * w, which leaves V unchanged:
 * lag, a relative deadline and a relative protection scale by old/new. @n is queued or not.
 */
LAB_INLINE void reweight_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n, u32 weight,
				const struct lab_params *p, u64 *st)
{
	struct lab_se *se = SE(pool, n);
	bool curr = cfs && cfs->curr == n, rel_vprot = false;
	u64 avruntime = 0;
	u32 old = se->weight;

	if (old == weight || !weight)
		return;
	if (se->on_rq && cfs) {
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
		if (se->in_tree)
			__dequeue_entity(cfs, pool, n);
	}
	/* rescale_entity(): truncating divisions, as the kernel's div64_long(). */
	se->vlag = (s64)(se->vlag * (s64)old) / (s64)weight;
	if (se->rel_deadline)
		se->deadline = (u64)((s64)(se->deadline * (s64)old) / (s64)weight);
	if (rel_vprot)
		se->vprot = (u64)((s64)(se->vprot * (s64)old) / (s64)weight);
	se->weight = weight;
	if (se->on_rq && cfs) {
		if (rel_vprot)
			se->vprot += avruntime;
		se->deadline += avruntime;
		se->rel_deadline = 0;
		se->vruntime = avruntime - (u64)se->vlag;
		if (!curr)
			__enqueue_entity(cfs, pool, n, p, st);
		cfs->nr_queued++;
	}
}

/*
 * yield_task_fair(): an eligible running entity forfeits the rest of its request (vruntime
 * jumps to its deadline) and takes a new one. Returns true when it did.
 */
LAB_INLINE bool yield_entity(struct lab_cfs *cfs, struct lab_pool *pool,
			     const struct lab_params *p, u64 *st)
{
	struct lab_se *curr = cfs_curr(cfs, pool);

	if (!curr || cfs->nr_queued <= 1)
		return false;
	clear_buddies(cfs, cfs->curr);
	if (!entity_eligible(cfs, pool, curr))
		return false;
	curr->vruntime = curr->deadline;
	update_deadline(cfs, pool, cfs->curr, p, st);
	lab_count(st, LAB_ST_YIELD);
	return true;
}


/* ---------------------------------------------------------------------------------------------
 * Load tracking and wake-affine arithmetic (fair.c: PELT, wake_wide(), wake_affine_weight(),
 * update_idle_cpu_scan(), the newidle statistics)
 *
 * The kernel does not maintain PELT for sched_ext tasks, so CPU selection uses the lab's own
 * signals: averages that halve every 32 periods of 1024 us, as PELT's do.
 */

#define LAB_PELT_PERIOD_SHIFT	20	/* 1024 us */
#define LAB_SCHED_CAPACITY	1024

/* 2^32 * y^i with y^32 = 1/2. */
static const u64 lab_pelt_y[32] = {
	4294967296ULL, 4202935003ULL, 4112874773ULL, 4024744347ULL, 3938502375ULL, 3854108391ULL,
	3771522796ULL, 3690706839ULL, 3611622602ULL, 3534232977ULL, 3458501653ULL, 3384393094ULL,
	3311872529ULL, 3240905930ULL, 3171459999ULL, 3103502151ULL, 3037000499ULL, 2971923841ULL,
	2908241642ULL, 2845924020ULL, 2784941737ULL, 2725266179ULL, 2666869344ULL, 2609723833ULL,
	2553802833ULL, 2499080104ULL, 2445529971ULL, 2393127307ULL, 2341847523ULL, 2291666560ULL,
	2242560871ULL, 2194507416ULL,
};

/* y^periods in 2^32 fixed point. */
LAB_INLINE u64 pelt_y(u64 periods)
{
	if (periods >= 32 * 63)
		return 0;
	return lab_pelt_y[periods & 31] >> (periods >> 5);
}

/*
 * Advance @s to @now, @value having held since s->stamp: avg <- avg*y^p + value*(1-y^p) for the
 * p whole periods that passed. A fresh signal (stamp 0) starts at @now.
 */
LAB_INLINE void pelt_update(struct lab_pelt *s, u64 now, u64 value)
{
	u64 periods, y;

	if (!s->stamp || now < s->stamp) {
		s->stamp = now;
		return;
	}
	periods = (now - s->stamp) >> LAB_PELT_PERIOD_SHIFT;
	if (!periods)
		return;
	s->stamp += periods << LAB_PELT_PERIOD_SHIFT;
	y = pelt_y(periods);
	s->avg = (s->avg * y + value * ((1ULL << 32) - y)) >> 32;
}

/*
 * wake_wide(): spread the wakee when waker and wakee each switch between many partners: the
 * one with fewer flips has at least llc_size of them and the other llc_size times as many.
 */
LAB_INLINE bool wake_wide_math(u32 waker_flips, u32 wakee_flips, u32 llc_size)
{
	u32 master = waker_flips > wakee_flips ? waker_flips : wakee_flips;
	u32 slave = waker_flips > wakee_flips ? wakee_flips : waker_flips;

	if (slave < llc_size || master < slave * llc_size)
		return false;
	return true;
}

/*
 * wake_affine_weight(): pull the wakee to the waker's CPU unless that CPU, with the wakee (and,
 * for a sync wakeup, without the waker), would carry more load than the previous CPU without
 * it; WA_BIAS inflates the previous CPU's side by half the domain's imbalance_pct, tilting the
 * choice towards the waker. Loads are capacity-normalised (equal capacities here). Returns true
 * for "this CPU".
 */
LAB_INLINE bool wake_affine_weight_math(s64 this_load, s64 prev_load, s64 task_load,
					s64 waker_load, bool sync, u32 imbalance_pct, bool bias)
{
	s64 this_eff = this_load, prev_eff;

	if (sync) {
		if (waker_load > this_eff)
			return true;
		this_eff -= waker_load;
	}
	this_eff += task_load;
	if (bias)
		this_eff *= 100;
	this_eff *= LAB_SCHED_CAPACITY;

	prev_eff = prev_load - task_load;
	if (bias)
		prev_eff *= 100 + ((s64)imbalance_pct - 100) / 2;
	prev_eff *= LAB_SCHED_CAPACITY;
	if (sync)
		prev_eff += 1;
	return this_eff < prev_eff;
}

/*
 * update_idle_cpu_scan() (SIS_UTIL): how many CPUs of an LLC the idle-CPU scan may visit,
 * shrinking quadratically with the LLC's utilisation and reaching 0 at about 100/pct.
 */
LAB_INLINE u32 nr_idle_scan_math(u64 sum_util, u32 llc_weight, u32 pct)
{
	u64 x, y;

	if (!llc_weight)
		return 0;
	x = sum_util / llc_weight;
	y = x * x * pct * pct / (10000ULL * LAB_SCHED_CAPACITY);
	if (y > LAB_SCHED_CAPACITY)
		y = LAB_SCHED_CAPACITY;
	y = LAB_SCHED_CAPACITY - y;
	return (u32)(y * llc_weight / LAB_SCHED_CAPACITY);
}

/* The newidle statistics start half successful (a ratio of 512). */
LAB_INLINE void newidle_init(struct lab_newidle *ni, u64 now)
{
	ni->calls = 512;
	ni->success = 256;
	ni->ratio = 512;
	ni->stamp = now;
}

/* NI_RANDOM: with a success ratio below 1024, run a newidle balance with chance ~(1+ratio)/1024. */
LAB_INLINE bool newidle_should_run(const struct lab_newidle *ni, u32 rnd, bool ni_random)
{
	if (!ni_random || ni->ratio >= 1024)
		return true;
	return (rnd % 1024) <= 1 + ni->ratio;
}

/*
 * update_newidle_stats(): count a call and (for a balance that ran) its success, the latter
 * weighted by 1024/(1+ratio) under NI_RANDOM to undo the sampling. Every 1024 calls the window
 * closes: ratio = successes (+ elapsed ns >> 22 with NI_RATE, so that rare newidle balancing is
 * always allowed), capped at 1024; calls and successes are halved.
 */
LAB_INLINE void newidle_account(struct lab_newidle *ni, bool ran, bool success, u64 now,
				bool ni_random, bool ni_rate)
{
	u64 r;

	ni->calls++;
	if (ran && success)
		ni->success += (ni_random && ni->ratio < 1024) ? (1024 + (1 + ni->ratio) / 2) / (1 + ni->ratio) : 1;
	if (ni->calls < 1024)
		return;
	r = ni->success;
	if (ni_rate && now > ni->stamp)
		r += (now - ni->stamp) >> 22;
	ni->ratio = r > 1024 ? 1024 : (u32)r;
	ni->calls >>= 1;
	ni->success >>= 1;
	ni->stamp = now;
}

#endif /* __LAB_EEVDF_H */
