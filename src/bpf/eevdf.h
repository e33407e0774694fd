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
	u8 pad[3];
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

#endif /* __LAB_EEVDF_H */
