/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Host entry points into the EEVDF core (src/bpf/eevdf.h), for the Rust unit tests (see
 * src/eevdf_tests.rs) and the daemon's V read-out (src/stats.rs).
 * Each wraps the inline function of the same name without the host_ prefix.
 */
#ifndef __LAB_HOST_H
#define __LAB_HOST_H
#include "eevdf.h"

u64 host_calc_delta_fair(u64 delta, u32 w, u32 inv_weight);
u32 host_task_weight(s32 static_prio, bool idle);
u32 host_task_inv_weight(s32 static_prio, bool idle);
u64 host_avg_vruntime_peek(const struct lab_cfs *cfs, const struct lab_se *curr);
u64 host_hrtick_delay_ns(const struct lab_se *se);
u64 host_avg_vruntime(struct lab_cfs *cfs, const struct lab_se *curr);
bool host_vruntime_eligible(const struct lab_cfs *cfs, const struct lab_se *curr, u64 v);
bool host_sum_w_vruntime_add(struct lab_cfs *cfs, u64 v, u32 weight, bool paranoid);
void host_sum_w_vruntime_sub(struct lab_cfs *cfs, u64 v, u32 weight);
s64 host_entity_lag(u64 avruntime, const struct lab_se *se, u64 max_slice, u64 tick_ns);
s64 host_delayed_entity_lag(s64 lag_now, s64 lag_at_sleep, bool delay_zero);
s64 host_place_lag_inflate(s64 vlag, u64 load, u64 w);
void host_rb_insert(struct lab_cfs *cfs, struct lab_pool *pool, u32 n);
void host_rb_erase(struct lab_cfs *cfs, struct lab_pool *pool, u32 n);
u32 host_rb_first(const struct lab_cfs *cfs, struct lab_pool *pool);
u32 host_rb_next(struct lab_pool *pool, u32 n);

void host_enqueue_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n, int flags,
			 const struct lab_params *p, u64 *st);
bool host_dequeue_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n, int flags,
			 const struct lab_params *p, u64 *st);
void host_requeue_delayed_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n,
				 const struct lab_params *p, u64 *st);
void host_set_next_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n, bool first,
			  const struct lab_params *p);
void host_put_prev_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n, const struct lab_params *p,
			  u64 *st);
int host_update_curr(struct lab_cfs *cfs, struct lab_pool *pool, u64 delta, const struct lab_params *p,
		     u64 *st);
u32 host_pick_eevdf(struct lab_cfs *cfs, struct lab_pool *pool, bool protect, const struct lab_params *p,
		    u64 *st);
u32 host_pick_next_entity(struct lab_cfs *cfs, struct lab_pool *pool, bool protect,
			  const struct lab_params *p, u64 *st, u32 *ghosts);
u32 host_pick_next_entity_unfinalized(struct lab_cfs *cfs, struct lab_pool *pool, bool protect,
				      const struct lab_params *p, u64 *st);
int host_wakeup_preempt(struct lab_cfs *cfs, struct lab_pool *pool, u32 pse, const struct lab_wakeup *wk,
			const struct lab_params *p, u64 *st, u32 *ghosts);
void host_reweight_entity(struct lab_cfs *cfs, struct lab_pool *pool, u32 n, u32 weight, u32 inv_weight,
			  const struct lab_params *p, u64 *st);
bool host_yield_entity(struct lab_cfs *cfs, struct lab_pool *pool, u64 *st);
bool host_entity_eligible(struct lab_cfs *cfs, struct lab_pool *pool, u32 n);
u64 host_cfs_min_slice(struct lab_cfs *cfs, struct lab_pool *pool);
u64 host_cfs_max_slice(struct lab_cfs *cfs, struct lab_pool *pool);
u32 host_pelt_yN_inv(u32 n);
u64 host_decay_load(u64 val, u64 n);
bool host_update_load_sum(u64 now, struct lab_sched_avg *sa, u64 load, u64 runnable, int running);
void host_update_load_avg_sa(struct lab_sched_avg *sa, u64 load);
bool host_update_load_avg(struct lab_cfs *cfs, struct lab_pool *pool, u32 n, int flags, u64 *st);
void host_remove_entity_load_avg(struct lab_cfs *cfs, struct lab_se *se, u64 *st);
void host_init_entity_runnable_average(struct lab_se *se);
void host_util_est_update(struct lab_se *se, bool task_sleep);
void host_util_est_enqueue(struct lab_cfs *cfs, const struct lab_se *se);
void host_util_est_dequeue(struct lab_cfs *cfs, const struct lab_se *se);
u64 host_cpu_util_cfs(const struct lab_cfs *cfs, bool util_est);
u64 host_cpu_util_cfs_boost(const struct lab_cfs *cfs, bool util_est);
u64 host_task_h_load(u64 se_load_avg, u64 cfs_load_avg);
void host_entity_tick_load(struct lab_cfs *cfs, struct lab_pool *pool, u64 *st);
void host_update_blocked_load(struct lab_cfs *cfs, u64 *st);
bool host_wake_wide(u32 waker_flips, u32 wakee_flips, u32 llc_size);
bool host_wake_affine_weight(s64 this_load, s64 prev_load, s64 task_load, s64 waker_load, bool sync,
			     u32 imbalance_pct, bool bias, u32 this_capacity, u32 prev_capacity);
u32 host_nr_idle_scan(u64 sum_util, u32 llc_weight, u32 pct);
void host_newidle_init(struct lab_newidle *ni, u64 now);
bool host_newidle_should_run(const struct lab_newidle *ni, u32 rnd, bool ni_random);
void host_update_avg_idle(u64 *avg_idle, u64 idle_ns, u64 max_idle_balance_cost);
bool host_update_newidle_cost(u64 *max_cost, u64 *last_decay, u64 cost, u64 now);
void host_newidle_account(struct lab_newidle *ni, bool ran, bool success, u64 now, bool ni_random,
			  bool ni_rate);

/* ---------------------------------------------------------------------------------------------
 * CPU selection and balancing decisions (select.h, balance.h), for src/select_tests.rs.
 */
#include "balance.h"

bool host_available_idle(const struct lab_cpu_snap *c);
bool host_sched_idle_rq(const struct lab_cpu_snap *c);
bool host_choose_idle_cpu(const struct lab_cpu_snap *c, bool wakee_idle);
bool host_want_affine(bool flips_known, u32 waker_flips, u32 wakee_flips, u32 llc_size,
		      bool this_allowed);
u32 host_wake_affine(const struct lab_wake_affine *wa);
bool host_wake_affine_weighs(const struct lab_wake_affine *wa);
u32 host_select_idle_sibling(const struct lab_sis *s, s32 *cpu);
s32 host_idle_scan_budget(u32 nr_idle_scan, u32 llc_size, bool sis_util);
s32 host_select_idle_cpu(const struct lab_cpu_snap *llc, u32 size, u32 target_pos, s32 budget,
			 bool wakee_idle, bool *limited);
s32 host_select_idle_core_scan(const struct lab_cpu_snap *llc, u32 size, u32 target_pos,
			       bool wakee_idle, bool *whole);
bool host_select_idle_smt_ok(const struct lab_cpu_snap *c, s32 prev, u32 llc, bool wakee_idle);
bool host_idle_scan_stale(u64 now, u64 stamp);
bool host_task_hot(const struct lab_lb_env *env, const struct lab_lb_task *t);
bool host_task_is_ineligible_on_dst_cpu(const struct lab_lb_env *env, const struct lab_lb_task *t);
u32 host_can_migrate_task(const struct lab_lb_env *env, const struct lab_lb_task *t);
bool host_migrate_load_fits(s64 load, u32 nr_balance_failed, s64 imbalance, bool lb_min);
u32 host_nr_busy(const struct lab_cpu_snap *c);
void host_sd_lb_stats(const struct lab_sd *sd, const struct lab_lb_cpu *cpus, const u32 *group,
		      u32 nr, u32 local, const u32 *flags, struct lab_sd_lb *sds);
bool host_find_src_group(const struct lab_sd *sd, struct lab_sd_lb *sds, struct lab_lb_verdict *v);
s32 host_find_src_rq(const struct lab_sd *sd, const struct lab_lb_verdict *v,
		     const struct lab_lb_cpu *cpus, u32 first, u32 n);
bool host_detach_fits(u32 type, s64 amount, u32 failed, s64 imbalance, bool lb_min);
u32 host_need_active_balance(const struct lab_sd *sd, u32 type, u32 failed, u32 cache_nice_tries,
			     const struct lab_lb_cpu *src, u64 dst_capacity);
u64 host_actual_cpu_capacity(u64 max, u64 hw, u64 cpufreq);
u64 host_scale_rt_capacity(u64 max, u64 irq, u64 rt, u64 dl);
bool host_check_cpu_capacity(u64 capacity, u64 capacity_orig, u32 imbalance_pct);
u64 host_sd_balance_interval_ms(u32 interval, bool busy, u32 tick_ms, u32 nr_online);
s64 host_adjust_numa_imbalance(s64 imbalance, u32 dst_running, u32 imb_numa_nr);
bool host_find_dst_group(const struct lab_sd *sd, const struct lab_lb_cpu *cpus, const u32 *group,
			 const u8 *allowed, u32 nr, u32 local, struct lab_dst_group *g);
s32 host_find_dst_group_cpu(const struct lab_lb_cpu *cpus, const u8 *allowed, const u8 *sched_idle,
			    const u64 *idle_stamp, u32 first, u32 n, s32 this_cpu);

/* Groups (group.h): the host tests' groups and queues, and the walks over them. */
u64 host_shares_from_cgroup(u32 w);
u64 host_calc_group_shares(u32 mode, const struct lab_tg *tg, const struct lab_gq *gq);
u64 host_group_walk(u32 tg, u32 cpu, u32 load_w_old, u32 load_w, bool runnable, int op, u32 mode,
		    u64 now);
bool host_update_tg_load_avg(struct lab_tg *tg, struct lab_gq *gq, u64 now);
void host_update_gq_load_avg(u64 now, struct lab_gq *gq);
void host_reweight_eevdf(struct lab_cfs *cfs, struct lab_pool *pool, u32 n, u64 h, u32 inv_weight,
			 const struct lab_params *p, u64 *st);
void host_entity_tick_group(struct lab_cfs *cfs, struct lab_pool *pool, const struct lab_params *p,
			    u64 *st);
void host_groups_reset(void);
void host_group_runnable_delta(u32 tg, u32 cpu, int delta);

/* CPU bandwidth (bandwidth.h) over the host tests' groups. */
bool host_bw_account_walk(u32 tg, u32 cpu, u64 delta, u64 *st);
bool host_bw_throttled_walk(u32 tg, u32 cpu, u64 *st);
void host_bw_return_walk(u32 tg, u32 cpu);
void host_refill_cfs_bandwidth_runtime(struct lab_tg *tg);
bool host_throttled_hierarchy(u32 tg, u32 cpu);

#endif
