/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Weights and virtual time: core.c's set_load_weight() and fair.c's calc_delta_fair().
 */
#ifndef __LAB_WEIGHT_H
#define __LAB_WEIGHT_H

#include "entity.h"

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

#endif /* __LAB_WEIGHT_H */
