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
	set_next_entity(cfs, pool, n, first, p, NULL);
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
u32 host_pick_next_entity_unfinalized(struct lab_cfs *cfs, struct lab_pool *pool, bool protect,
				      const struct lab_params *p, u64 *st)
{
	return pick_next_entity_opt(cfs, pool, protect, p, st, NULL, false);
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
u32 host_pelt_yN_inv(u32 n) { return lab_runnable_avg_yN_inv[n & (LAB_LOAD_AVG_PERIOD - 1)]; }
u64 host_decay_load(u64 val, u64 n) { return decay_load(val, n); }
bool host_update_load_sum(u64 now, struct lab_sched_avg *sa, u64 load, u64 runnable, int running)
{
	return update_load_sum(now, sa, load, runnable, running);
}
void host_update_load_avg_sa(struct lab_sched_avg *sa, u64 load) { update_load_avg_sa(sa, load); }
bool host_update_load_avg(struct lab_cfs *cfs, struct lab_pool *pool, u32 n, int flags, u64 *st)
{
	return update_load_avg(cfs, pool, n, flags, st);
}
void host_remove_entity_load_avg(struct lab_cfs *cfs, struct lab_se *se, u64 *st)
{
	remove_entity_load_avg(cfs, se, st);
}
void host_init_entity_runnable_average(struct lab_se *se) { init_entity_runnable_average(se); }
void host_util_est_update(struct lab_se *se, bool task_sleep) { util_est_update(se, task_sleep); }
void host_util_est_enqueue(struct lab_cfs *cfs, const struct lab_se *se) { util_est_enqueue(cfs, se); }
void host_util_est_dequeue(struct lab_cfs *cfs, const struct lab_se *se) { util_est_dequeue(cfs, se); }
u64 host_cpu_util_cfs(const struct lab_cfs *cfs, bool util_est) { return cpu_util_cfs(cfs, util_est); }
u64 host_cpu_util_cfs_boost(const struct lab_cfs *cfs, bool util_est) { return cpu_util_cfs_boost(cfs, util_est); }
u64 host_task_h_load(u64 se_load_avg, u64 cfs_load_avg) { return task_h_load_math(se_load_avg, cfs_load_avg); }
void host_entity_tick_load(struct lab_cfs *cfs, struct lab_pool *pool, u64 *st) { entity_tick_load(cfs, pool, st); }
void host_update_blocked_load(struct lab_cfs *cfs, u64 *st) { update_blocked_load(cfs, st); }
bool host_wake_wide(u32 waker_flips, u32 wakee_flips, u32 llc_size)
{
	return wake_wide_math(waker_flips, wakee_flips, llc_size);
}
bool host_wake_affine_weight(s64 this_load, s64 prev_load, s64 task_load, s64 waker_load, bool sync,
			     u32 imbalance_pct, bool bias, u32 this_capacity, u32 prev_capacity)
{
	return wake_affine_weight_math(this_load, prev_load, task_load, waker_load, sync, imbalance_pct,
				       bias, this_capacity, prev_capacity);
}
u32 host_nr_idle_scan(u64 sum_util, u32 llc_weight, u32 pct) { return nr_idle_scan_math(sum_util, llc_weight, pct); }
void host_newidle_init(struct lab_newidle *ni, u64 now) { newidle_init(ni, now); }
bool host_newidle_should_run(const struct lab_newidle *ni, u32 rnd, bool ni_random)
{
	return newidle_should_run(ni, rnd, ni_random);
}
void host_update_avg_idle(u64 *avg_idle, u64 idle_ns, u64 max_idle_balance_cost)
{
	lab_update_avg_idle(avg_idle, idle_ns, max_idle_balance_cost);
}
bool host_update_newidle_cost(u64 *max_cost, u64 *last_decay, u64 cost, u64 now)
{
	return lab_update_newidle_cost(max_cost, last_decay, cost, now);
}
void host_newidle_account(struct lab_newidle *ni, bool ran, bool success, u64 now, bool ni_random,
			  bool ni_rate)
{
	newidle_account(ni, ran, success, now, ni_random, ni_rate);
}

/* ---------------------------------------------------------------------------------------------
 * CPU selection and balancing decisions (select.h, balance.h).
 */
bool host_available_idle(const struct lab_cpu_snap *c) { return lab_available_idle(c); }
bool host_sched_idle_rq(const struct lab_cpu_snap *c) { return lab_sched_idle_rq(c); }
bool host_choose_idle_cpu(const struct lab_cpu_snap *c, bool wakee_idle)
{
	return lab_choose_idle_cpu(c, wakee_idle);
}
bool host_want_affine(bool flips_known, u32 waker_flips, u32 wakee_flips, u32 llc_size,
		      bool this_allowed)
{
	return lab_want_affine(flips_known, waker_flips, wakee_flips, llc_size, this_allowed);
}
u32 host_wake_affine(const struct lab_wake_affine *wa) { return lab_wake_affine(wa); }
bool host_wake_affine_weighs(const struct lab_wake_affine *wa) { return lab_wake_affine_weighs(wa); }
u32 host_select_idle_sibling(const struct lab_sis *s, s32 *cpu) { return lab_select_idle_sibling(s, cpu); }
s32 host_idle_scan_budget(u32 nr_idle_scan, u32 llc_size, bool sis_util)
{
	return lab_idle_scan_budget(nr_idle_scan, llc_size, sis_util);
}

/* select.bpf.h's select_idle_cpu() loop over an LLC given as snapshots in llc_cpus[] order. */
s32 host_select_idle_cpu(const struct lab_cpu_snap *llc, u32 size, u32 target_pos, s32 budget,
			 bool wakee_idle, bool *limited)
{
	u32 k;

	*limited = false;
	for (k = 1; k < size + 1; k++) {
		const struct lab_cpu_snap *c = &llc[(target_pos + k) % size];
		u32 r = lab_select_idle_cpu_step(c, wakee_idle, &budget);

		if (r == LAB_SCAN_STOP) {
			*limited = true;
			break;
		}
		if (r == LAB_SCAN_FOUND)
			return c->cpu;
	}
	return -1;
}
/*
 * select_idle_cpu() with an idle core known, as select.bpf.h runs it, over an LLC given as
 * snapshots in position (CPU) order whose SMT siblings share ->core: every core once, at its first
 * allowed CPU after the target; a wholly idle core's CPU (*whole set), else the fallback.
 */
s32 host_select_idle_core_scan(const struct lab_cpu_snap *llc, u32 size, u32 target_pos,
			       bool wakee_idle, bool *whole)
{
	s32 idle_cpu = -1;
	u32 k, j;

	*whole = false;
	for (k = 1; k < size + 1; k++) {
		u32 at = (target_pos + k) % size;
		const struct lab_cpu_snap *c = &llc[at];
		bool visited = false, core_idle = true;

		if (!c->allowed)
			continue;
		for (j = 0; j < size; j++)
			if (j != at && llc[j].core == c->core && llc[j].allowed &&
			    lab_scan_rank(j, target_pos, size) < lab_scan_rank(at, target_pos, size))
				visited = true;
		if (visited)
			continue;
		for (j = 0; j < size; j++)
			if (llc[j].core == c->core &&
			    lab_select_idle_core_step(&llc[j], wakee_idle, &core_idle, &idle_cpu))
				break;
		if (core_idle) {
			*whole = true;
			return c->cpu;
		}
	}
	return idle_cpu;
}
bool host_select_idle_smt_ok(const struct lab_cpu_snap *c, s32 prev, u32 llc, bool wakee_idle)
{
	return lab_select_idle_smt_ok(c, prev, llc, wakee_idle);
}
bool host_idle_scan_stale(u64 now, u64 stamp) { return lab_idle_scan_stale(now, stamp); }
bool host_task_hot(const struct lab_lb_env *env, const struct lab_lb_task *t) { return lab_task_hot(env, t); }
bool host_task_is_ineligible_on_dst_cpu(const struct lab_lb_env *env, const struct lab_lb_task *t)
{
	return lab_task_is_ineligible_on_dst_cpu(env, t);
}
u32 host_can_migrate_task(const struct lab_lb_env *env, const struct lab_lb_task *t)
{
	return lab_can_migrate_task(env, t);
}
bool host_migrate_load_fits(s64 load, u32 nr_balance_failed, s64 imbalance, bool lb_min)
{
	return lab_migrate_load_fits(load, nr_balance_failed, imbalance, lb_min);
}

/* What the balancer weighs a CPU by (balance.h's lab_nr_busy()). */
u32 host_nr_busy(const struct lab_cpu_snap *c)
{
	return lab_nr_busy(c);
}

/* Sched domains (domains.h): update_sd_lb_stats() over @nr CPUs whose groups are runs of equal
 * @group ids, @local the balancing CPU's group, @flags each group's flags (indexed by its id). */
void host_sd_lb_stats(const struct lab_sd *sd, const struct lab_lb_cpu *cpus, const u32 *group,
		      u32 nr, u32 local, const u32 *flags, struct lab_sd_lb *sds)
{
	struct lab_sg_stats sgs;
	u32 i;

	lab_sd_lb_init(sds);
	for (i = 0; i < nr; i++) {
		if (!i || group[i] != group[i - 1]) {
			u32 n = 1;

			while (i + n < nr && group[i + n] == group[i])
				n++;
			lab_sg_init(&sgs, flags[group[i]], (s32)i, n);
		}
		lab_sg_add_cpu(&sgs, &cpus[i]);
		if (i + 1 == nr || group[i + 1] != group[i])
			lab_sd_lb_group_done(sd, sds, &sgs, group[i] == local);
	}
}
bool host_find_src_group(const struct lab_sd *sd, struct lab_sd_lb *sds, struct lab_lb_verdict *v)
{
	return lab_find_src_group(sd, sds, v);
}
s32 host_find_src_rq(const struct lab_sd *sd, const struct lab_lb_verdict *v,
		     const struct lab_lb_cpu *cpus, u32 first, u32 n)
{
	struct lab_src_best b;
	u32 i;

	lab_src_best_init(&b);
	for (i = first; i < first + n; i++)
		lab_find_src_rq_cpu(sd, v, &cpus[i], (s32)i, &b);
	return b.cpu;
}
bool host_detach_fits(u32 type, s64 amount, u32 failed, s64 imbalance, bool lb_min)
{
	return lab_detach_fits(type, amount, failed, imbalance, lb_min);
}
u32 host_need_active_balance(const struct lab_sd *sd, u32 type, u32 failed, u32 cache_nice_tries,
			     const struct lab_lb_cpu *src, u64 dst_capacity)
{
	return lab_need_active_balance(sd, type, failed, cache_nice_tries, src, dst_capacity);
}
u64 host_actual_cpu_capacity(u64 max, u64 hw, u64 cpufreq)
{
	return lab_actual_cpu_capacity(max, hw, cpufreq);
}
u64 host_scale_rt_capacity(u64 max, u64 irq, u64 rt, u64 dl)
{
	return lab_scale_rt_capacity(max, irq, rt, dl);
}
bool host_check_cpu_capacity(u64 capacity, u64 capacity_orig, u32 imbalance_pct)
{
	return lab_check_cpu_capacity(capacity, capacity_orig, imbalance_pct);
}
u64 host_sd_balance_interval_ms(u32 interval, bool busy, u32 tick_ms, u32 nr_online)
{
	return lab_sd_balance_interval_ms(interval, busy, tick_ms, nr_online);
}
s64 host_adjust_numa_imbalance(s64 imbalance, u32 dst_running, u32 imb_numa_nr)
{
	return lab_adjust_numa_imbalance(imbalance, dst_running, imb_numa_nr);
}
/* sched_balance_find_dst_group() over @nr CPUs whose groups are runs of equal @group ids, @local
 * the forking CPU's group, @allowed the CPUs the task may use; @g the local and idlest groups. */
bool host_find_dst_group(const struct lab_sd *sd, const struct lab_lb_cpu *cpus, const u32 *group,
			 const u8 *allowed, u32 nr, u32 local, struct lab_dst_group *g)
{
	struct lab_sg_stats sgs;
	u32 i, n_allowed = 0;

	lab_dst_group_init(g);
	for (i = 0; i < nr; i++) {
		if (!i || group[i] != group[i - 1]) {
			u32 n = 1;

			while (i + n < nr && group[i + n] == group[i])
				n++;
			lab_sg_init(&sgs, 0, (s32)i, n);
			n_allowed = 0;
		}
		lab_sg_add_cpu(&sgs, &cpus[i]);
		n_allowed += allowed[i] != 0;
		if ((i + 1 == nr || group[i + 1] != group[i]) && n_allowed)
			lab_dst_group_done(sd, g, &sgs, group[i] == local, n_allowed);
	}
	return lab_find_dst_group(sd, g);
}
/* sched_balance_find_dst_group_cpu() over CPUs @first .. @first + @n - 1 of @cpus. */
s32 host_find_dst_group_cpu(const struct lab_lb_cpu *cpus, const u8 *allowed, const u8 *sched_idle,
			    const u64 *idle_stamp, u32 first, u32 n, s32 this_cpu)
{
	struct lab_dst_cpu b;
	u32 i;

	if (n == 1)
		return (s32)first;
	lab_dst_cpu_init(&b, this_cpu);
	for (i = first; i < first + n; i++) {
		if (!allowed[i])
			continue;
		if (lab_dst_cpu_add(&b, (s32)i, sched_idle[i], cpus[i].idle && !cpus[i].nr_running,
				    idle_stamp[i], cpus[i].load))
			break;
	}
	return lab_dst_cpu_result(&b);
}

/* Groups: the tables that group.h's tg_get() / gq_get() read on the host. */
struct lab_tg lab_host_tg[LAB_HOST_TGS];
struct lab_gq lab_host_gq[LAB_HOST_TGS][LAB_HOST_CPUS];
u32 lab_host_nr_cpus_online = LAB_HOST_CPUS;

u64 host_shares_from_cgroup(u32 w) { return lab_shares_from_cgroup(w); }
u64 host_calc_group_shares(u32 mode, const struct lab_tg *tg, const struct lab_gq *gq)
{
	return calc_group_shares(mode, tg, gq);
}
u64 host_group_walk(u32 tg, u32 cpu, u32 load_w_old, u32 load_w, bool runnable, int op, u32 mode,
		    u64 now)
{
	return group_walk(tg, cpu, load_w_old, load_w, runnable, op, mode, now);
}
bool host_update_tg_load_avg(struct lab_tg *tg, struct lab_gq *gq, u64 now)
{
	return update_tg_load_avg(tg, gq, now);
}
void host_update_gq_load_avg(u64 now, struct lab_gq *gq) { update_gq_load_avg(now, gq); }
void host_reweight_eevdf(struct lab_cfs *cfs, struct lab_pool *pool, u32 n, u64 h, u32 inv_weight,
			 const struct lab_params *p, u64 *st)
{
	reweight_eevdf(cfs, pool, n, h, inv_weight, p, st);
}
void host_entity_tick_group(struct lab_cfs *cfs, struct lab_pool *pool, const struct lab_params *p,
			    u64 *st)
{
	entity_tick_group(cfs, pool, p, st);
}
void host_groups_reset(void)
{
	__builtin_memset(lab_host_tg, 0, sizeof(lab_host_tg));
	__builtin_memset(lab_host_gq, 0, sizeof(lab_host_gq));
	lab_host_nr_cpus_online = LAB_HOST_CPUS;
}
void host_group_runnable_delta(u32 tg, u32 cpu, int delta) { group_runnable_delta(tg, cpu, delta); }

/* CPU bandwidth (bandwidth.h). */
bool host_bw_account_walk(u32 tg, u32 cpu, u64 delta, u64 *st) { return bw_account_walk(tg, cpu, delta, st); }
bool host_bw_throttled_walk(u32 tg, u32 cpu, u64 *st) { return bw_throttled_walk(tg, cpu, st); }
void host_bw_return_walk(u32 tg, u32 cpu) { bw_return_walk(tg, cpu); }
void host_refill_cfs_bandwidth_runtime(struct lab_tg *tg) { refill_cfs_bandwidth_runtime(tg); }
bool host_throttled_hierarchy(u32 tg, u32 cpu) { return throttled_hierarchy(tg, cpu); }
