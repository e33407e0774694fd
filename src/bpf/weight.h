/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Weights and virtual time: core.c's set_load_weight() and fair.c's calc_delta_fair() with its
 * inverse-weight arithmetic (__calc_delta()).
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

/*
 * sched_prio_to_wmult[] (core.c): 2^32 / weight as an integer, index nice + 20. A task's
 * se->load.inv_weight comes from this table (set_load_weight(), and reweight_task_fair() copies
 * it after reweight_entity()), so calc_delta_fair() of a task uses these exact values.
 */
static const u32 lab_prio_to_wmult[40] = {
	/* -20 */ 48388, 59856, 76040, 92818, 118348,
	/* -15 */ 147320, 184698, 229616, 287308, 360437,
	/* -10 */ 449829, 563644, 704093, 875809, 1099582,
	/*  -5 */ 1376151, 1717300, 2157191, 2708050, 3363326,
	/*   0 */ 4194304, 5237765, 6557202, 8165337, 10153587,
	/*   5 */ 12820798, 15790321, 19976592, 24970740, 31350126,
	/*  10 */ 39045157, 49367440, 61356676, 76695844, 95443717,
	/*  15 */ 119304647, 148102320, 186737708, 238609294, 286331153,
};

#define WMULT_CONST		(~0U)		/* 2^32 - 1 */
#define WMULT_SHIFT		32
#define WMULT_IDLEPRIO		1431655765U	/* SCHED_IDLE's inv_weight */
#define LAB_MAX_RT_PRIO		100		/* static_prio of nice -20 */

/* The nice-table index (nice + 20) of static priority @static_prio, clamped to the table. */
LAB_INLINE u32 lab_prio_index(s32 static_prio)
{
	s32 idx = static_prio - LAB_MAX_RT_PRIO;

	return idx < 0 ? 0 : idx > 39 ? 39 : (u32)idx;
}

/* set_load_weight(): the weight of a task of static priority @static_prio and policy @idle. */
LAB_INLINE u32 lab_task_weight(s32 static_prio, bool idle)
{
	return idle ? WEIGHT_IDLEPRIO : lab_prio_to_weight[lab_prio_index(static_prio)];
}

/* set_load_weight(): the inverse weight that goes with lab_task_weight(). */
LAB_INLINE u32 lab_task_inv_weight(s32 static_prio, bool idle)
{
	return idle ? WMULT_IDLEPRIO : lab_prio_to_wmult[lab_prio_index(static_prio)];
}

/* __update_inv_weight(): the inverse of a weight that has none from the table (@w scaled down). */
LAB_INLINE u32 lab_inv_weight(u32 w)
{
	return w ? WMULT_CONST / w : WMULT_CONST;
}

/* generic_fls(): the 1-based position of the highest set bit of @x, 0 when none. */
LAB_INLINE u32 lab_fls32(u32 x)
{
	u32 r = 32;

	if (!x)
		return 0;
	if (!(x & 0xffff0000u)) {
		x <<= 16;
		r -= 16;
	}
	if (!(x & 0xff000000u)) {
		x <<= 8;
		r -= 8;
	}
	if (!(x & 0xf0000000u)) {
		x <<= 4;
		r -= 4;
	}
	if (!(x & 0xc0000000u)) {
		x <<= 2;
		r -= 2;
	}
	if (!(x & 0x80000000u))
		r -= 1;
	return r;
}

/* mul_u64_u32_shr(): (a * mul) >> shift through a 96-bit product; exact for shift <= 32. */
LAB_INLINE u64 mul_u64_u32_shr(u64 a, u32 mul, u32 shift)
{
	u32 ah = a >> 32, al = (u32)a;
	u64 ret = ((u64)al * mul) >> shift;

	if (ah)
		ret += ((u64)ah * mul) << (32 - shift);
	return ret;
}

/*
 * __calc_delta(): delta * weight / lw as the kernel computes it, without a division: weight
 * times the inverse weight 2^32/lw, both brought under 32 bits by dropping low bits (each
 * dropped bit lowers the final shift), then a 64x32 multiply and the shift. The dropped bits
 * and the integer inverse make it differ from the exact quotient by up to about 1e-8 of it.
 * @weight is scaled down (NICE_0_LOAD = 1024 here), as scale_load_down() makes it in fair.c.
 */
LAB_INLINE u64 __calc_delta(u64 delta, u64 weight, u32 inv_weight)
{
	u64 fact = weight;
	u32 shift = WMULT_SHIFT, fs;

	fs = lab_fls32((u32)(fact >> 32));
	fact >>= fs;
	shift -= fs;
	fact = (u64)(u32)fact * inv_weight;
	fs = lab_fls32((u32)(fact >> 32));
	fact >>= fs;
	shift -= fs;
	return mul_u64_u32_shr(delta, (u32)fact, shift);
}

/*
 * calc_delta_fair(): wall ns at @se's weight -> virtual ns, as fair.c: unchanged at nice 0,
 * else __calc_delta() with the entity's inverse weight (the table's for a task).
 */
LAB_INLINE u64 calc_delta_fair(u64 delta, const lab_se_t *se)
{
	if (se->weight == NICE_0_LOAD || !se->weight)
		return delta;
	return __calc_delta(delta, NICE_0_LOAD,
			    se->inv_weight ? se->inv_weight : lab_inv_weight(se->weight));
}

/* The slice of a task: the base slice, or a custom one clamped as __setparam_fair() does. */
LAB_INLINE u64 lab_custom_slice(u64 runtime)
{
	return runtime < LAB_MIN_CUSTOM_SLICE ? LAB_MIN_CUSTOM_SLICE :
	       runtime > LAB_MAX_CUSTOM_SLICE ? LAB_MAX_CUSTOM_SLICE : runtime;
}

#endif /* __LAB_WEIGHT_H */
