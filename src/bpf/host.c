/* SPDX-License-Identifier: GPL-2.0-only */
/* The host build of src/bpf/eevdf.h: exported wrappers for the Rust unit tests. */
#include "host.h"

u64 host_calc_delta_fair(u64 delta, u32 w) { return calc_delta_fair(delta, w); }
u32 host_task_weight(s32 static_prio, bool idle) { return lab_task_weight(static_prio, idle); }
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
