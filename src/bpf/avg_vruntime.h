/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * V, the weighted average vruntime, eligibility and lag: fair.c's avg_vruntime(),
 * vruntime_eligible(), entity_lag() and the lag arithmetic of place_entity().
 */
#ifndef __LAB_AVG_VRUNTIME_H
#define __LAB_AVG_VRUNTIME_H

#include "weight.h"

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

/*
 * s64 multiply; returns true on overflow (then *res is not meaningful). Two factors below 2^31
 * in magnitude cannot overflow, which is every product of a key and a weight in practice; the
 * division decides the rest exactly.
 */
LAB_INLINE bool lab_mul_overflows(s64 a, s64 b, s64 *res)
{
	u64 ua = a < 0 ? -(u64)a : (u64)a;
	u64 ub = b < 0 ? -(u64)b : (u64)b;

	if (((ua | ub) >> 31) && ua && ub > (u64)INT64_MAX_LAB / ua)
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
 * The offset of V from zero_vruntime, floor((S + key_curr * w_curr) / (W + w_curr)): the one V
 * formula of the lab. avg_vruntime() applies it; the dump and the daemon's stats read V through
 * avg_vruntime_peek() without moving the origin. @curr is the queue's running entity when it is
 * still queued (NULL otherwise).
 */
LAB_INLINE s64 avg_vruntime_offset(const struct lab_cfs *cfs, const lab_se_t *curr)
{
	s64 runtime = cfs->sum_w_vruntime;
	u64 weight = cfs->sum_weight;

	if (weight) {
		if (curr) {
			u64 w = avg_vruntime_weight(cfs, curr->weight);

			runtime += entity_key(cfs, curr->vruntime) * (s64)w;
			weight += w;
		}
		return lab_div_floor(runtime, weight);
	}
	/* A lone running entity is its own average. */
	return curr ? entity_key(cfs, curr->vruntime) : 0;
}

/* avg_vruntime() without its side effect: V, leaving zero_vruntime where it is. */
LAB_INLINE u64 avg_vruntime_peek(const struct lab_cfs *cfs, const lab_se_t *curr)
{
	return cfs->zero_vruntime + (u64)avg_vruntime_offset(cfs, curr);
}

/* avg_vruntime(): V, and re-centre zero_vruntime onto it (update_zero_vruntime()). */
LAB_INLINE u64 avg_vruntime(struct lab_cfs *cfs, const lab_se_t *curr)
{
	update_zero_vruntime(cfs, avg_vruntime_offset(cfs, curr));
	return cfs->zero_vruntime;
}

/*
 * vruntime_eligible(): v <= V without dividing: A >= (v - v0) * L. The kernel multiplies in 128
 * bits where it can; an s64 product that overflows is decided by the key's sign, which is exact
 * because A itself fits in s64 (a huge positive product exceeds it, a huge negative one does not).
 */
LAB_INLINE bool vruntime_eligible(const struct lab_cfs *cfs, const lab_se_t *curr, u64 v)
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
LAB_INLINE s64 entity_lag(u64 avruntime, const lab_se_t *se, u64 max_slice, u64 tick_ns)
{
	s64 vlag = (s64)(avruntime - se->vruntime);
	s64 limit = (s64)calc_delta_fair(max_slice + tick_ns, se);

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

#endif /* __LAB_AVG_VRUNTIME_H */
