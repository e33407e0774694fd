/* SPDX-License-Identifier: GPL-2.0-only */
/* The host build of the EEVDF core (src/bpf/eevdf.h): exported wrappers for the Rust side. */
#include "host.h"

u64 host_calc_delta_fair(u64 delta, u32 w, u32 inv_weight)
{
	struct lab_se se = { .weight = w, .inv_weight = inv_weight };

	return calc_delta_fair(delta, &se);
}
u32 host_task_weight(s32 static_prio, bool idle) { return lab_task_weight(static_prio, idle); }
u32 host_task_inv_weight(s32 static_prio, bool idle) { return lab_task_inv_weight(static_prio, idle); }
u64 host_avg_vruntime_peek(const struct lab_cfs *cfs, const struct lab_se *curr)
{
	return avg_vruntime_peek(cfs, curr);
}
u64 host_hrtick_delay_ns(const struct lab_se *se) { return hrtick_delay_ns(se); }
u64 host_avg_vruntime(struct lab_cfs *cfs, const struct lab_se *curr) { return avg_vruntime(cfs, curr); }
bool host_vruntime_eligible(const struct lab_cfs *cfs, const struct lab_se *curr, u64 v)
{
	return vruntime_eligible(cfs, curr, v);
}
bool host_sum_w_vruntime_add(struct lab_cfs *cfs, u64 v, u32 weight, bool paranoid)
{
	return sum_w_vruntime_add(cfs, v, weight, paranoid);
}
void host_sum_w_vruntime_sub(struct lab_cfs *cfs, u64 v, u32 weight) { sum_w_vruntime_sub(cfs, v, weight); }
s64 host_entity_lag(u64 avruntime, const struct lab_se *se, u64 max_slice, u64 tick_ns)
{
	return entity_lag(avruntime, se, max_slice, tick_ns);
}
s64 host_delayed_entity_lag(s64 lag_now, s64 lag_at_sleep, bool delay_zero)
{
	return delayed_entity_lag(lag_now, lag_at_sleep, delay_zero);
}
s64 host_place_lag_inflate(s64 vlag, u64 load, u64 w) { return place_lag_inflate(vlag, load, w); }
void host_rb_insert(struct lab_cfs *cfs, struct lab_pool *pool, u32 n) { rb_insert(cfs, pool, n); }
void host_rb_erase(struct lab_cfs *cfs, struct lab_pool *pool, u32 n) { rb_erase(cfs, pool, n); }
u32 host_rb_first(const struct lab_cfs *cfs, struct lab_pool *pool) { return rb_first(cfs, pool); }
u32 host_rb_next(struct lab_pool *pool, u32 n) { return rb_next(pool, n); }
void host_enqueue_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n, int flags,
			 const struct lab_params *p, u64 *st)
{
	enqueue_entity(cfs, pool, n, flags, p, st);
}
bool host_dequeue_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n, int flags,
			 const struct lab_params *p, u64 *st)
{
	return dequeue_entity(cfs, pool, n, flags, p, st);
}
void host_requeue_delayed_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n,
				 const struct lab_params *p, u64 *st)
{
	requeue_delayed_entity(cfs, pool, n, p, st);
}
void host_set_next_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n, bool first,
			  const struct lab_params *p)
{
	set_next_entity(cfs, pool, n, first, p);
}
void host_put_prev_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n, const struct lab_params *p,
			  u64 *st)
{
	put_prev_entity(cfs, pool, n, p, st);
}
int host_update_curr(struct lab_cfs *cfs, struct lab_pool *pool, u64 delta, const struct lab_params *p,
		     u64 *st)
{
	return update_curr_math(cfs, pool, delta, p, st);
}
u32 host_pick_eevdf(struct lab_cfs *cfs, struct lab_pool *pool, bool protect, const struct lab_params *p,
		    u64 *st)
{
	return pick_eevdf(cfs, pool, protect, p, st);
}
u32 host_pick_next_entity(struct lab_cfs *cfs, struct lab_pool *pool, bool protect,
			  const struct lab_params *p, u64 *st, u32 *ghosts)
{
	return pick_next_entity(cfs, pool, protect, p, st, ghosts);
}
int host_wakeup_preempt(struct lab_cfs *cfs, struct lab_pool *pool, u32 pse, const struct lab_wakeup *wk,
			const struct lab_params *p, u64 *st, u32 *ghosts)
{
	return wakeup_preempt_fair(cfs, pool, pse, wk, p, st, ghosts);
}
void host_reweight_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n, u32 weight, u32 inv_weight,
			  const struct lab_params *p, u64 *st)
{
	reweight_entity(cfs, pool, n, weight, inv_weight, p, st);
}
bool host_yield_entity(struct lab_cfs *cfs, struct lab_pool *pool, u64 *st)
{
	return yield_entity(cfs, pool, st);
}
bool host_entity_eligible(struct lab_cfs *cfs, struct lab_pool *pool, u32 n)
{
	return entity_eligible(cfs, pool, SE(pool, n));
}
u64 host_cfs_min_slice(struct lab_cfs *cfs, struct lab_pool *pool) { return cfs_min_slice(cfs, pool); }
u64 host_cfs_max_slice(struct lab_cfs *cfs, struct lab_pool *pool) { return cfs_max_slice(cfs, pool); }
void host_pelt_update(struct lab_pelt *s, u64 now, u64 value) { pelt_update(s, now, value); }
bool host_wake_wide(u32 waker_flips, u32 wakee_flips, u32 llc_size)
{
	return wake_wide_math(waker_flips, wakee_flips, llc_size);
}
bool host_wake_affine_weight(s64 this_load, s64 prev_load, s64 task_load, s64 waker_load, bool sync,
			     u32 imbalance_pct, bool bias)
{
	return wake_affine_weight_math(this_load, prev_load, task_load, waker_load, sync, imbalance_pct,
				       bias);
}
u32 host_nr_idle_scan(u64 sum_util, u32 llc_weight, u32 pct) { return nr_idle_scan_math(sum_util, llc_weight, pct); }
void host_newidle_init(struct lab_newidle *ni, u64 now) { newidle_init(ni, now); }
bool host_newidle_should_run(const struct lab_newidle *ni, u32 rnd, bool ni_random)
{
	return newidle_should_run(ni, rnd, ni_random);
}
void host_newidle_account(struct lab_newidle *ni, bool ran, bool success, u64 now, bool ni_random,
			  bool ni_rate)
{
	newidle_account(ni, ran, success, now, ni_random, ni_rate);
}
