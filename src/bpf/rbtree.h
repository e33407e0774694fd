/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The augmented RB tree of a queue, ordered by deadline (fair.c's tasks_timeline with its
 * min_vruntime/min_slice/max_slice augmentation callbacks).
 */
#ifndef __LAB_RBTREE_H
#define __LAB_RBTREE_H

#include "entity.h"

/* ---------------------------------------------------------------------------------------------
 * The augmented RB tree (fair.c: __enqueue_entity(), __dequeue_entity(), min_vruntime_update())
 *
 * Ordered by deadline (entity_before()); every node also keeps the minimum vruntime and the
 * minimum and maximum slice of its subtree, so that pick_eevdf() finds the earliest eligible
 * deadline in O(log n) and the lag clamp and slice protection see the queue's slice range.
 */

/* entity_before(): a has the earlier deadline. */
LAB_INLINE bool entity_before(const lab_se_t *a, const lab_se_t *b)
{
	return (s64)(a->deadline - b->deadline) < 0;
}

/* min_vruntime_update() and the min/max slice callbacks: recompute one node from its children. */
LAB_INLINE void rb_augment_node(lab_pool_t *pool, u32 n)
{
	lab_se_t *se = SE(pool, n), *c;
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
LAB_INLINE void rb_augment_path(lab_pool_t *pool, u32 n)
{
	int i;

	lab_for(i, 0, LAB_TREE_MAX_DEPTH) {
		if (!n)
			break;
		rb_augment_node(pool, n);
		n = SE(pool, n)->parent;
	}
}

LAB_INLINE void rb_replace_child(struct lab_cfs *cfs, lab_pool_t *pool, u32 parent,
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
LAB_INLINE void rb_rotate_left(struct lab_cfs *cfs, lab_pool_t *pool, u32 x)
{
	lab_se_t *sx = SE(pool, x);
	u32 y = sx->right;
	lab_se_t *sy = SE(pool, y);

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

LAB_INLINE void rb_rotate_right(struct lab_cfs *cfs, lab_pool_t *pool, u32 x)
{
	lab_se_t *sx = SE(pool, x);
	u32 y = sx->left;
	lab_se_t *sy = SE(pool, y);

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

LAB_INLINE bool rb_is_red(lab_pool_t *pool, u32 n)
{
	return n && SE(pool, n)->red;
}

/* Link @n into the tree by deadline and rebalance. */
LAB_NOINLINE void rb_insert(struct lab_cfs *cfs, lab_pool_t *pool, u32 n)
{
	lab_se_t *se = SE(pool, n);
	u32 p = cfs->root, parent = 0, z;
	bool left = false;
	int i;

	/* Into an empty tree (a wakeup onto an idle CPU): the black root with its own aggregates,
	 * what the general path leaves, without its loops. */
	if (!p) {
		se->left = se->right = se->parent = 0;
		se->red = 0;
		cfs->root = n;
		rb_augment_node(pool, n);
		return;
	}
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
LAB_INLINE void rb_transplant(struct lab_cfs *cfs, lab_pool_t *pool, u32 u, u32 v)
{
	u32 up = SE(pool, u)->parent;

	rb_replace_child(cfs, pool, up, u, v);
	if (v)
		SE(pool, v)->parent = up;
}

/* Unlink @z from the tree and rebalance. */
LAB_NOINLINE void rb_erase(struct lab_cfs *cfs, lab_pool_t *pool, u32 z)
{
	lab_se_t *sz = SE(pool, z);
	u32 x, xp, y = z;
	bool y_was_red = sz->red;
	int i;

	/* The only node (the running entity leaving the tree of a CPU with nothing else queued):
	 * the tree is empty, what the general path leaves. */
	if (cfs->root == z && !sz->left && !sz->right) {
		cfs->root = 0;
		sz->parent = 0;
		return;
	}
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
LAB_INLINE u32 rb_first(const struct lab_cfs *cfs, lab_pool_t *pool)
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
LAB_INLINE u32 rb_next(lab_pool_t *pool, u32 n)
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

#endif /* __LAB_RBTREE_H */
