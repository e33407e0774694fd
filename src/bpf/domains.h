/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __LAB_DOMAINS_H
#define __LAB_DOMAINS_H

/* Included by balance.h, after the rules it uses (lab_migrate_load_fits()). */

/*
 * The load balancer's decisions per sched domain (fair.c: update_sg_lb_stats()'s sums,
 * group_classify(), update_sd_pick_busiest(), sibling_imbalance(), adjust_numa_imbalance(),
 * calculate_imbalance(), sched_balance_find_src_group(), sched_balance_find_src_rq()'s choice,
 * get_sd_balance_interval()).
 *
 * balance.bpf.h walks a domain's CPUs group by group, adds each CPU's facts with
 * lab_sg_add_cpu(), and asks the functions here whether there is an imbalance, what kind and
 * how much; src/domain_tests.rs pins them to the kernel's rules. No BPF helper is called here.
 *
 * Differs: no misfit, asym-packing or group_imbalanced (affinity) classes, no energy-aware
 * shortcut. Capacities are update_cpu_capacity()'s (lab_scale_rt_capacity()), summed per group
 * from the CPUs' rather than kept per group (sgc->capacity).
 */

#define LAB_CAPACITY_SCALE	1024
#define LAB_NUMA_IMBALANCE_MIN	2	/* a pair of communicating tasks */
#define LAB_MAX_PINNED_INTERVAL	512	/* ms */
#define LAB_BUSY_FACTOR		16	/* sd->busy_factor */

/* enum cpu_idle_type */
#define LAB_CPU_NOT_IDLE	0
#define LAB_CPU_IDLE		1
#define LAB_CPU_NEWLY_IDLE	2

/* enum group_type, the kernel's order (misfit 2, asym 4, imbalanced 5 are not mirrored) */
#define LAB_GROUP_HAS_SPARE	0
#define LAB_GROUP_FULLY_BUSY	1
#define LAB_GROUP_SMT_BALANCE	3
#define LAB_GROUP_OVERLOADED	6

/* enum migration_type */
#define LAB_MIGRATE_LOAD	0
#define LAB_MIGRATE_UTIL	1
#define LAB_MIGRATE_TASK	2

/*
 * get_actual_cpu_capacity(): a CPU's capacity @max (arch_scale_cpu_capacity()) less the larger of
 * its hardware pressure (@hw: rq->avg_hw, the thermal cap's average) and its cpufreq pressure
 * (@cpufreq: a policy's frequency cap).
 */
LAB_INLINE u64 lab_actual_cpu_capacity(u64 max, u64 hw, u64 cpufreq)
{
	u64 pressure = hw > cpufreq ? hw : cpufreq;

	return pressure < max ? max - pressure : 0;
}

/*
 * scale_rt_capacity(): what is left for the fair class of a CPU whose capacity is @max
 * (get_actual_cpu_capacity()) once the RT and deadline classes' utilisation (@rt, @dl: PELT
 * averages of their running time) is taken out, scaled down by the share IRQs and steal take
 * (@irq: scale_irq_capacity()). 1 when the other classes or IRQs fill the CPU;
 * update_cpu_capacity() makes a 0 a 1 as well, so capacities always divide.
 */
LAB_INLINE u64 lab_scale_rt_capacity(u64 max, u64 irq, u64 rt, u64 dl)
{
	u64 used = rt + dl, free;

	if (irq >= max || used >= max)
		return 1;
	free = max - used;
	free = free * (max - irq) / max;
	return free ? free : 1;
}

/* check_cpu_capacity(): has the CPU lost more of its capacity (@capacity of @capacity_orig) to
 * other classes and IRQs than the domain's imbalance_pct tolerates? */
LAB_INLINE bool lab_check_cpu_capacity(u64 capacity, u64 capacity_orig, u32 imbalance_pct)
{
	return capacity * imbalance_pct < capacity_orig * 100;
}

/* What the decisions read of one domain. */
struct lab_sd {
	u32 flags;		/* LAB_SD_* */
	u32 imbalance_pct;
	u32 imb_numa_nr;
	u32 idle;		/* LAB_CPU_*: the balancing CPU's state */
};

/* One CPU's facts (update_sg_lb_stats()'s reads). */
struct lab_lb_cpu {
	u64 load;		/* cpu_load() */
	u64 util;		/* cpu_util_cfs() */
	u64 runnable;		/* cpu_runnable() */
	u64 capacity;		/* capacity_of() */
	u64 capacity_orig;	/* arch_scale_cpu_capacity() */
	u32 nr_running;		/* rq->nr_running */
	u32 h_nr_runnable;	/* rq->cfs.h_nr_runnable */
	u8 idle;		/* idle_cpu() */
	u8 core_first;		/* the first CPU of its core in the group (counts sg->cores) */
	u8 pad[6];
};

/* struct sg_lb_stats, and the group's own facts that the decisions read. */
struct lab_sg_stats {
	u64 avg_load;
	u64 group_load;
	u64 group_util;
	u64 group_runnable;
	u64 group_capacity;
	u32 sum_nr_running;
	u32 sum_h_nr_running;
	u32 idle_cpus;
	u32 group_weight;
	u32 cores;		/* sg->cores */
	u32 flags;		/* sg->flags: its child domain's LAB_SD_* */
	u32 group_type;
	u32 smt_balance;	/* group_smt_balance */
	s32 first;		/* its first CPU in the domain's order; -1: none yet */
	u32 size;		/* its span: positions from @first, offline CPUs included */
};

/* struct sd_lb_stats. */
struct lab_sd_lb {
	struct lab_sg_stats local;
	struct lab_sg_stats busiest;
	u64 total_load;
	u64 total_capacity;
	u64 avg_load;
	u32 has_busiest;
	u32 prefer_sibling;
};

/* What sched_balance_find_src_group() concludes: move @imbalance of @migration_type. */
struct lab_lb_verdict {
	s64 imbalance;
	u32 migration_type;
	u32 pad;
};

LAB_INLINE void lab_sg_init(struct lab_sg_stats *sgs, u32 flags, s32 first, u32 size)
{
	__builtin_memset(sgs, 0, sizeof(*sgs));
	sgs->flags = flags;
	sgs->first = first;
	sgs->size = size;
}

/* init_sd_lb_stats(): no busiest yet, which any group with a task beats. */
LAB_INLINE void lab_sd_lb_init(struct lab_sd_lb *sds)
{
	__builtin_memset(sds, 0, sizeof(*sds));
	sds->busiest.idle_cpus = (u32)-1;
	sds->busiest.group_type = LAB_GROUP_HAS_SPARE;
	sds->local.first = -1;
	sds->busiest.first = -1;
}

/* update_sg_lb_stats()'s per-CPU sums. */
LAB_INLINE void lab_sg_add_cpu(struct lab_sg_stats *sgs, const struct lab_lb_cpu *c)
{
	sgs->group_load += c->load;
	sgs->group_util += c->util;
	sgs->group_runnable += c->runnable;
	sgs->group_capacity += c->capacity;
	sgs->sum_h_nr_running += c->h_nr_runnable;
	sgs->sum_nr_running += c->nr_running;
	sgs->group_weight++;
	sgs->cores += c->core_first;
	if (!c->nr_running && c->idle)
		sgs->idle_cpus++;
}

/* group_has_capacity() */
LAB_INLINE bool lab_group_has_capacity(u32 pct, const struct lab_sg_stats *sgs)
{
	if (sgs->sum_nr_running < sgs->group_weight)
		return true;
	if (sgs->group_capacity * pct < sgs->group_runnable * 100)
		return false;
	return sgs->group_capacity * 100 > sgs->group_util * pct;
}

/* group_is_overloaded() */
LAB_INLINE bool lab_group_is_overloaded(u32 pct, const struct lab_sg_stats *sgs)
{
	if (sgs->sum_nr_running <= sgs->group_weight)
		return false;
	if (sgs->group_capacity * 100 < sgs->group_util * pct)
		return true;
	return sgs->group_capacity * pct < sgs->group_runnable * 100;
}

/* group_classify() */
LAB_INLINE u32 lab_group_classify(u32 pct, const struct lab_sg_stats *sgs)
{
	if (lab_group_is_overloaded(pct, sgs))
		return LAB_GROUP_OVERLOADED;
	if (sgs->smt_balance)
		return LAB_GROUP_SMT_BALANCE;
	if (!lab_group_has_capacity(pct, sgs))
		return LAB_GROUP_FULLY_BUSY;
	return LAB_GROUP_HAS_SPARE;
}

/*
 * The end of update_sg_lb_stats() for a group whose CPUs have all been added: smt_balance() (a
 * remote SMT core with more than one task, seen by an idle balancer), the class, and avg_load
 * for an overloaded group.
 */
LAB_INLINE void lab_sg_finish(const struct lab_sd *sd, struct lab_sg_stats *sgs, bool local)
{
	if (!local && sd->idle != LAB_CPU_NOT_IDLE && (sgs->flags & LAB_SD_SHARE_CPUCAPACITY) &&
	    sgs->sum_h_nr_running > 1)
		sgs->smt_balance = 1;
	sgs->group_type = lab_group_classify(sd->imbalance_pct, sgs);
	if (sgs->group_type == LAB_GROUP_OVERLOADED && sgs->group_capacity)
		sgs->avg_load = sgs->group_load * LAB_CAPACITY_SCALE / sgs->group_capacity;
}

/* smt_vs_nonsmt_groups(): one of the two groups is an SMT core and the other is not. */
LAB_INLINE bool lab_smt_vs_nonsmt(u32 flags1, u32 flags2)
{
	return (flags1 & LAB_SD_SHARE_CPUCAPACITY) != (flags2 & LAB_SD_SHARE_CPUCAPACITY);
}

/* update_sd_pick_busiest(): is @sgs (not the local group) busier than @sds's busiest so far? */
LAB_INLINE bool lab_update_sd_pick_busiest(const struct lab_sd_lb *sds, const struct lab_sg_stats *sgs)
{
	const struct lab_sg_stats *busiest = &sds->busiest;

	if (!sgs->sum_h_nr_running)
		return false;
	if (sgs->group_type > busiest->group_type)
		return true;
	if (sgs->group_type < busiest->group_type)
		return false;
	switch (sgs->group_type) {
	case LAB_GROUP_OVERLOADED:
		return sgs->avg_load > busiest->avg_load;
	case LAB_GROUP_SMT_BALANCE:
		if (sgs->idle_cpus || busiest->idle_cpus)
			goto has_spare;
		/* fallthrough */
	case LAB_GROUP_FULLY_BUSY:
		if (sgs->avg_load < busiest->avg_load)
			return false;
		if (sgs->avg_load == busiest->avg_load && sds->has_busiest &&
		    (busiest->flags & LAB_SD_SHARE_CPUCAPACITY))
			return false;
		return true;
	default: /* LAB_GROUP_HAS_SPARE */
		if (sds->has_busiest && lab_smt_vs_nonsmt(busiest->flags, sgs->flags))
			return !((sgs->flags & LAB_SD_SHARE_CPUCAPACITY) && sgs->sum_h_nr_running <= 1);
has_spare:
		if (sgs->idle_cpus > busiest->idle_cpus)
			return false;
		if (sgs->idle_cpus == busiest->idle_cpus &&
		    sgs->sum_nr_running <= busiest->sum_nr_running)
			return false;
		return true;
	}
}

/* The end of a group in update_sd_lb_stats(): its class; the local group kept, another one kept
 * if it is the busiest so far; the domain's totals; prefer_sibling from the busiest group's
 * flags (its child domain's). */
LAB_INLINE void lab_sd_lb_group_done(const struct lab_sd *sd, struct lab_sd_lb *sds,
				     struct lab_sg_stats *sgs, bool local)
{
	lab_sg_finish(sd, sgs, local);
	if (local) {
		sds->local = *sgs;
	} else if (lab_update_sd_pick_busiest(sds, sgs)) {
		sds->busiest = *sgs;
		sds->has_busiest = 1;
	}
	sds->total_load += sgs->group_load;
	sds->total_capacity += sgs->group_capacity;
	sds->prefer_sibling = sds->has_busiest && (sds->busiest.flags & LAB_SD_PREFER_SIBLING);
}

/* sibling_imbalance(): the tasks to move so that both groups run as many per core. */
LAB_INLINE s64 lab_sibling_imbalance(const struct lab_sd *sd, const struct lab_sd_lb *sds)
{
	const struct lab_sg_stats *busiest = &sds->busiest, *local = &sds->local;
	s64 nb = busiest->cores, nl = local->cores, imb;

	if (sd->idle == LAB_CPU_NOT_IDLE || !busiest->sum_nr_running)
		return 0;
	if (nb == nl) {
		imb = (s64)busiest->sum_nr_running - local->sum_nr_running;
		return imb > 0 ? imb : 0;
	}
	imb = nl * busiest->sum_nr_running - nb * local->sum_nr_running;
	if (imb < 0)
		imb = 0;
	imb = (2 * imb + nl + nb) / (nl + nb);
	if (imb <= 1 && !local->sum_nr_running && busiest->sum_nr_running > 1)
		imb = 2;
	return imb;
}

/* adjust_numa_imbalance(): a destination running at most imb_numa_nr tasks may stay behind by a
 * communicating pair. */
LAB_INLINE s64 lab_adjust_numa_imbalance(s64 imbalance, u32 dst_running, u32 imb_numa_nr)
{
	if (dst_running > imb_numa_nr)
		return imbalance;
	return imbalance <= LAB_NUMA_IMBALANCE_MIN ? 0 : imbalance;
}

/* calculate_imbalance(), for the group types the lab has. */
LAB_INLINE void lab_calculate_group_imbalance(const struct lab_sd *sd, struct lab_sd_lb *sds,
					      struct lab_lb_verdict *v)
{
	struct lab_sg_stats *local = &sds->local, *busiest = &sds->busiest;
	s64 a, b;

	if (busiest->group_type == LAB_GROUP_SMT_BALANCE) {
		v->migration_type = LAB_MIGRATE_TASK;
		v->imbalance = 1;
		return;
	}
	if (local->group_type == LAB_GROUP_HAS_SPARE) {
		if (busiest->group_type > LAB_GROUP_FULLY_BUSY && !(sd->flags & LAB_SD_SHARE_LLC)) {
			u64 room = local->group_capacity > local->group_util ? local->group_capacity :
									       local->group_util;

			v->migration_type = LAB_MIGRATE_UTIL;
			v->imbalance = (s64)(room - local->group_util);
			if (sd->idle != LAB_CPU_NOT_IDLE && !v->imbalance) {
				v->migration_type = LAB_MIGRATE_TASK;
				v->imbalance = 1;
			}
			return;
		}
		v->migration_type = LAB_MIGRATE_TASK;
		if (busiest->group_weight == 1 || sds->prefer_sibling) {
			v->imbalance = lab_sibling_imbalance(sd, sds);
		} else {
			a = (s64)local->idle_cpus - (s64)busiest->idle_cpus;
			v->imbalance = a > 0 ? a : 0;
		}
		if (sd->flags & LAB_SD_NUMA)
			v->imbalance = lab_adjust_numa_imbalance(v->imbalance,
								 local->sum_nr_running + 1,
								 sd->imb_numa_nr);
		v->imbalance >>= 1;
		return;
	}
	if (local->group_type < LAB_GROUP_OVERLOADED) {
		local->avg_load = local->group_capacity ?
			local->group_load * LAB_CAPACITY_SCALE / local->group_capacity : 0;
		if (local->avg_load >= busiest->avg_load) {
			v->imbalance = 0;
			return;
		}
		sds->avg_load = sds->total_capacity ?
			sds->total_load * LAB_CAPACITY_SCALE / sds->total_capacity : 0;
		if (local->avg_load >= sds->avg_load) {
			v->imbalance = 0;
			return;
		}
	}
	v->migration_type = LAB_MIGRATE_LOAD;
	a = ((s64)busiest->avg_load - (s64)sds->avg_load) * (s64)busiest->group_capacity;
	b = ((s64)sds->avg_load - (s64)local->avg_load) * (s64)local->group_capacity;
	v->imbalance = (a < b ? a : b) / LAB_CAPACITY_SCALE;
}

/*
 * sched_balance_find_src_group() once update_sd_lb_stats() has filled @sds: is there a busiest
 * group worth pulling from, and how much? Follows the kernel's decision matrix.
 */
LAB_INLINE bool lab_find_src_group(const struct lab_sd *sd, struct lab_sd_lb *sds,
				   struct lab_lb_verdict *v)
{
	struct lab_sg_stats *local = &sds->local, *busiest = &sds->busiest;

	v->imbalance = 0;
	v->migration_type = LAB_MIGRATE_LOAD;
	if (!sds->has_busiest)
		return false;
	if (local->group_type > busiest->group_type)
		return false;
	if (local->group_type == LAB_GROUP_OVERLOADED) {
		if (local->avg_load >= busiest->avg_load)
			return false;
		sds->avg_load = sds->total_capacity ?
			sds->total_load * LAB_CAPACITY_SCALE / sds->total_capacity : 0;
		if (local->avg_load >= sds->avg_load)
			return false;
		if (100 * busiest->avg_load <= (u64)sd->imbalance_pct * local->avg_load)
			return false;
	}
	if (sds->prefer_sibling && local->group_type == LAB_GROUP_HAS_SPARE &&
	    lab_sibling_imbalance(sd, sds) > 1)
		goto force;
	if (busiest->group_type != LAB_GROUP_OVERLOADED) {
		if (sd->idle == LAB_CPU_NOT_IDLE)
			return false;
		if (busiest->group_type == LAB_GROUP_SMT_BALANCE &&
		    lab_smt_vs_nonsmt(local->flags, busiest->flags))
			goto force;
		if (busiest->group_weight > 1 && local->idle_cpus <= busiest->idle_cpus + 1)
			return false;
		if (busiest->sum_h_nr_running == 1)
			return false;
	}
force:
	lab_calculate_group_imbalance(sd, sds, v);
	return v->imbalance > 0;
}

/* The best source so far of sched_balance_find_src_rq(). */
struct lab_src_best {
	u64 load;
	u64 capacity;
	u64 util;
	u32 nr;
	s32 cpu;
};

LAB_INLINE void lab_src_best_init(struct lab_src_best *b)
{
	b->load = 0;
	b->capacity = 1;
	b->util = 0;
	b->nr = 0;
	b->cpu = -1;
}

/* sched_balance_find_src_rq(), one CPU of the busiest group of @sd: is @c (CPU @cpu) the busiest
 * so far for @v's kind of migration? A CPU with no runnable entity of ours never is; nor, for a
 * load imbalance, one whose lone task outweighs the imbalance, unless its capacity is reduced. */
LAB_INLINE bool lab_find_src_rq_cpu(const struct lab_sd *sd, const struct lab_lb_verdict *v,
				    const struct lab_lb_cpu *c, s32 cpu, struct lab_src_best *b)
{
	u32 nr = c->h_nr_runnable;

	if (!nr)
		return false;
	switch (v->migration_type) {
	case LAB_MIGRATE_LOAD:
		if (nr == 1 && (s64)c->load > v->imbalance &&
		    !lab_check_cpu_capacity(c->capacity, c->capacity_orig, sd->imbalance_pct))
			return false;
		if (c->load * b->capacity <= b->load * c->capacity)
			return false;
		b->load = c->load;
		b->capacity = c->capacity;
		break;
	case LAB_MIGRATE_UTIL:
		if (nr <= 1 || b->util >= c->util)
			return false;
		b->util = c->util;
		break;
	default:
		if (b->nr >= nr)
			return false;
		b->nr = nr;
		break;
	}
	b->cpu = cpu;
	return true;
}

/* detach_tasks()' rule for one candidate of load or utilisation @amount (1 for a task count):
 * does it fit what is left of the imbalance, halved for every failed balance? */
LAB_INLINE bool lab_detach_fits(u32 migration_type, s64 amount, u32 nr_balance_failed,
				s64 imbalance, bool lb_min)
{
	u32 shift = nr_balance_failed < 63 ? nr_balance_failed : 63;

	switch (migration_type) {
	case LAB_MIGRATE_LOAD:
		return lab_migrate_load_fits(amount, nr_balance_failed, imbalance, lb_min);
	case LAB_MIGRATE_UTIL:
		return (amount >> shift) <= imbalance;
	default:
		return true;
	}
}

/*
 * need_active_balance(), after a balance of @sd that moved nothing: a task imbalance that has
 * failed cache_nice_tries + 3 times in a row (imbalanced_active_balance()), or an idle puller
 * (@dst_capacity) beside a source running one task of ours (@src) whose capacity other classes
 * or IRQs have eaten into (check_cpu_capacity()) and that this CPU has noticeably more of, move
 * the source's running task. Returns why (LAB_ACTIVE_*), LAB_ACTIVE_NONE for no.
 */
#define LAB_ACTIVE_NONE		0
#define LAB_ACTIVE_IMBALANCED	1	/* imbalanced_active_balance() */
#define LAB_ACTIVE_CAPACITY	2	/* the source's capacity is reduced */

LAB_INLINE u32 lab_need_active_balance(const struct lab_sd *sd, u32 migration_type,
				       u32 nr_balance_failed, u32 cache_nice_tries,
				       const struct lab_lb_cpu *src, u64 dst_capacity)
{
	if (migration_type == LAB_MIGRATE_TASK && nr_balance_failed > cache_nice_tries + 2)
		return LAB_ACTIVE_IMBALANCED;
	if (sd->idle != LAB_CPU_NOT_IDLE && src->h_nr_runnable == 1 &&
	    lab_check_cpu_capacity(src->capacity, src->capacity_orig, sd->imbalance_pct) &&
	    src->capacity * sd->imbalance_pct < dst_capacity * 100)
		return LAB_ACTIVE_CAPACITY;
	return LAB_ACTIVE_NONE;
}

/* get_sd_balance_interval(), in ms: the domain's interval, times busy_factor on a busy CPU less
 * one tick, within 1 tick and max_load_balance_interval (HZ * CPUs / 10 ticks). */
LAB_INLINE u64 lab_sd_balance_interval_ms(u32 balance_interval, bool busy, u32 tick_ms,
					  u32 nr_online)
{
	u64 ms = balance_interval, max = (u64)nr_online * 100;

	if (busy)
		ms = ms * LAB_BUSY_FACTOR - tick_ms;
	if (ms < tick_ms)
		ms = tick_ms;
	if (max < tick_ms)
		max = tick_ms;
	return ms > max ? max : ms;
}

/* ---------------------------------------------------------------------------------------------
 * The slow path of a fork: sched_balance_find_dst_cpu() descends the domains from the top, and at
 * each one picks the idlest group (sched_balance_find_dst_group()) and in it a CPU
 * (sched_balance_find_dst_group_cpu()).
 */

/* sched_balance_find_dst_group()'s working set: the local group and the idlest other one. */
struct lab_dst_group {
	struct lab_sg_stats local;
	struct lab_sg_stats idlest;
	u32 has_local;		/* the local group holds a CPU the task may use */
	u32 has_idlest;
	u32 local_allowed;	/* how many of the local group's CPUs the task may use */
	u32 pad;
};

/* The start of sched_balance_find_dst_group(): no local group yet, and an idlest one that any
 * group beats (overloaded, of load UINT_MAX). */
LAB_INLINE void lab_dst_group_init(struct lab_dst_group *g)
{
	__builtin_memset(g, 0, sizeof(*g));
	g->idlest.group_type = LAB_GROUP_OVERLOADED;
	g->idlest.avg_load = 0xffffffffULL;
	g->idlest.first = -1;
	g->local.first = -1;
}

/* The end of update_sg_wakeup_stats() for a group whose CPUs have all been added: the class
 * (smt_balance is not looked at on this path), and avg_load for a fully busy or overloaded one. */
LAB_INLINE void lab_sg_wakeup_finish(const struct lab_sd *sd, struct lab_sg_stats *sgs)
{
	sgs->smt_balance = 0;
	sgs->group_type = lab_group_classify(sd->imbalance_pct, sgs);
	if ((sgs->group_type == LAB_GROUP_FULLY_BUSY || sgs->group_type == LAB_GROUP_OVERLOADED) &&
	    sgs->group_capacity)
		sgs->avg_load = sgs->group_load * LAB_CAPACITY_SCALE / sgs->group_capacity;
}

/* update_pick_idlest(): is @sgs (not the local group) idler than @idlest? */
LAB_INLINE bool lab_update_pick_idlest(const struct lab_sg_stats *idlest,
				       const struct lab_sg_stats *sgs)
{
	if (sgs->group_type < idlest->group_type)
		return true;
	if (sgs->group_type > idlest->group_type)
		return false;
	switch (sgs->group_type) {
	case LAB_GROUP_OVERLOADED:
	case LAB_GROUP_FULLY_BUSY:
		/* the lowest avg_load */
		return idlest->avg_load > sgs->avg_load;
	case LAB_GROUP_HAS_SPARE:
		/* the most idle CPUs, then the lowest utilisation */
		if (idlest->idle_cpus != sgs->idle_cpus)
			return sgs->idle_cpus > idlest->idle_cpus;
		return idlest->group_util > sgs->group_util;
	default:
		/* not used on this path */
		return false;
	}
}

/* One group's end in sched_balance_find_dst_group(), for a group with @allowed CPUs the task may
 * use (a group without any is skipped before this). */
LAB_INLINE void lab_dst_group_done(const struct lab_sd *sd, struct lab_dst_group *g,
				   struct lab_sg_stats *sgs, bool local, u32 allowed)
{
	lab_sg_wakeup_finish(sd, sgs);
	if (local) {
		g->local = *sgs;
		g->has_local = 1;
		g->local_allowed = allowed;
	} else if (lab_update_pick_idlest(&g->idlest, sgs)) {
		g->idlest = *sgs;
		g->has_idlest = 1;
	}
}

/*
 * The end of sched_balance_find_dst_group(): does the task go to the idlest group (true) or stay
 * in the local one, whose own CPUs the descent then looks at one level down? Mirrors the kernel
 * for a task without a preferred NUMA node (a new one) on CPUs of equal capacity.
 */
LAB_INLINE bool lab_find_dst_group(const struct lab_sd *sd, const struct lab_dst_group *g)
{
	const struct lab_sg_stats *local = &g->local, *idlest = &g->idlest;
	u64 imbalance;
	u32 imb_numa_nr;
	s64 diff;

	if (!g->has_idlest)
		return false;
	if (!g->has_local)
		return true;
	if (local->group_type != idlest->group_type)
		return local->group_type > idlest->group_type;
	switch (local->group_type) {
	case LAB_GROUP_OVERLOADED:
	case LAB_GROUP_FULLY_BUSY:
		/* scale_load_down(NICE_0_LOAD) * (imbalance_pct - 100) / 100 */
		imbalance = (u64)LAB_CAPACITY_SCALE * (sd->imbalance_pct - 100) / 100;
		/* across nodes, the remote group carries the imbalance: stay when it is not
		 * clearly lighter */
		if ((sd->flags & LAB_SD_NUMA) && idlest->avg_load + imbalance >= local->avg_load)
			return false;
		if (idlest->avg_load >= local->avg_load + imbalance)
			return false;
		if (100 * local->avg_load <= (u64)sd->imbalance_pct * idlest->avg_load)
			return false;
		return true;
	case LAB_GROUP_HAS_SPARE:
		if (sd->flags & LAB_SD_NUMA) {
			/* p->nr_cpus_allowed != NR_CPUS holds for any task of a kernel built for
			 * more CPUs than it runs on: the allowance is capped by the local CPUs the
			 * task may use */
			imb_numa_nr = g->local_allowed < sd->imb_numa_nr ? g->local_allowed :
									   sd->imb_numa_nr;
			diff = (s64)local->idle_cpus - (s64)idlest->idle_cpus;
			if (!lab_adjust_numa_imbalance(diff < 0 ? -diff : diff,
						       local->sum_nr_running + 1, imb_numa_nr))
				return false;
		}
		return local->idle_cpus < idlest->idle_cpus;
	default:
		return false;
	}
}

/* sched_balance_find_dst_group_cpu()'s search of one group: a CPU running only idle entities at
 * once, else the idle CPU that went idle last (the lab sees no idle states and their exit
 * latencies), else the least loaded; @this_cpu when none of them qualifies. */
struct lab_dst_cpu {
	u64 idle_stamp;		/* latest_idle_timestamp */
	u64 min_load;
	s32 idle_cpu;		/* shallowest_idle_cpu */
	s32 least_cpu;		/* least_loaded_cpu */
};

LAB_INLINE void lab_dst_cpu_init(struct lab_dst_cpu *b, s32 this_cpu)
{
	b->idle_stamp = 0;
	b->min_load = ~0ULL;
	b->idle_cpu = -1;
	b->least_cpu = this_cpu;
}

/* One allowed CPU of the group; true when it is the answer at once (sched_idle_cpu()). */
LAB_INLINE bool lab_dst_cpu_add(struct lab_dst_cpu *b, s32 cpu, bool sched_idle,
				bool available_idle, u64 idle_stamp, u64 load)
{
	if (sched_idle) {
		b->idle_cpu = cpu;
		return true;
	}
	if (available_idle) {
		if (idle_stamp > b->idle_stamp) {
			b->idle_stamp = idle_stamp;
			b->idle_cpu = cpu;
		}
	} else if (b->idle_cpu < 0 && load < b->min_load) {
		b->min_load = load;
		b->least_cpu = cpu;
	}
	return false;
}

LAB_INLINE s32 lab_dst_cpu_result(const struct lab_dst_cpu *b)
{
	return b->idle_cpu >= 0 ? b->idle_cpu : b->least_cpu;
}

#endif /* __LAB_DOMAINS_H */
