/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Balancing per sched domain: sched_balance_domains(), sched_balance_rq() and the nohz idle
 * balance, level by level over the topology's domains (struct lab_topo's levels), with each
 * CPU's own domain state in lab_cpus[].sd. The decisions are domains.h's (host-tested); here
 * the facts are gathered with kfuncs and the pulls go through balance.bpf.h. Included by
 * main.bpf.c after balance.bpf.h.
 *
 *  - a busy CPU's tick (sched_balance_trigger()): nohz_balancer_kick(), then every level whose
 *    interval has passed, in the CPU_NOT_IDLE state; every LAB_BALANCE_TICKS ticks the pull
 *    from a CPU that a higher class took (release_balance());
 *  - an idle CPU that the kick woke balances its due levels in the CPU_IDLE state and passes
 *    the kick on to the next idle CPU whose balance is due;
 *  - a task imbalance that fails cache_nice_tries + 3 times in a row pushes the source's
 *    running task (active balance).
 *
 * The domain walks are global subprograms with their working set in a per-CPU scratch map: the
 * verifier checks each once, and their loops and locals stay off the callers' stacks.
 */

/* sched_balance_rq()'s answers: should_we_balance() said another CPU of this group balances
 * (stop going up). */
#define LAB_LB_STOP	2

/* update_sd_lb_stats()' working set, one per CPU (too big for the BPF stack). */
struct lab_lb_scratch {
	struct lab_sd_lb sds;
	struct lab_sg_stats cur;
	struct lab_lb_cpu c;
	struct lab_sd sd;		/* sched_balance_rq()'s, off the deepest call chain's stack */
	struct lab_lb_verdict v;
	s32 src;			/* the busiest CPU found */
	/* lab_update_sd_lb_stats()' walk: the current group's end and whether it is the local
	 * one, kept here rather than in registers, so that to the verifier they are unknown and it
	 * checks the loop's body once, not once per group */
	u32 gend;
	u32 local;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct lab_lb_scratch);
} lb_scratch SEC(".maps");

/* nohz.next_balance: the earliest balance due on an idle CPU (ns). */
u64 nohz_next_balance;

static __always_inline struct lab_lb_scratch *lb_scratch_get(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&lb_scratch, &zero);
}

/* What the decisions know of @cpu's domain at @level for a balancing CPU in state @idle. */
static __always_inline void lb_sd(u32 level, u32 idle, struct lab_sd *sd)
{
	u32 l = level & (LAB_MAX_LEVELS - 1);

	sd->flags = topo.lvl_flags[l];
	sd->imbalance_pct = topo.lvl_imbalance_pct[l];
	sd->imb_numa_nr = topo.lvl_imb_numa_nr[l];
	sd->idle = idle;
}

/* The group of @cpu in its domain at @level: the domain of the level below (the CPU alone at the
 * lowest level), as its first position in cpu_order[] and its size. Returns its flags. */
static __always_inline u32 lb_group_of(s32 cpu, u32 level, u32 *start, u32 *size)
{
	u32 c = cpu & (LAB_MAX_CPUS - 1), below = (level - 1) & (LAB_MAX_LEVELS - 1);

	if (!level) {
		*start = topo.cpu_order_pos[c];
		*size = 1;
		return 0;
	}
	*start = topo.lvl_start[below][c];
	*size = topo.lvl_size[below][c];
	return topo.lvl_flags[below];
}

/*
 * Mirrors update_cpu_capacity() for @cpu at @now: scale_rt_capacity() of the kernel's own averages
 * of the RT and deadline classes' running time and of IRQ and steal time (rq->avg_rt, avg_dl,
 * avg_irq: the sched_ext tick keeps them current through update_other_load_avgs()) against
 * get_actual_cpu_capacity(): arch_scale_cpu_capacity() (scx_bpf_cpuperf_cap()) less the larger
 * of the hardware pressure's average (rq->avg_hw) and the cpufreq pressure (the per-CPU
 * cpufreq_pressure). The IRQ part counts with NONTASK_CAPACITY only (the kernel's
 * NO_NONTASK_CAPACITY stops feeding avg_irq, which then decays to 0); each signal is read only on
 * kernels that keep it (IRQ or paravirt time accounting, SCHED_HW_PRESSURE, CPU_FREQ). The next
 * update is due after the CPU's lowest balance interval, as update_group_capacity() sets
 * sgc->next_update.
 *
 * Differs: the kernel updates a CPU's capacity from that CPU's own balance at its lowest level
 * (or the idle balancer's on its behalf); the lab's ticks do not run on a CPU that a higher class
 * holds, so whichever balance reads a CPU whose capacity is due updates it (lb_cpu_read()). A
 * global subprogram: the walks' loops call it without growing.
 */
struct rq___avg_irq {
	struct sched_avg avg_irq;
} __attribute__((preserve_access_index));

struct rq___avg_hw {
	struct sched_avg avg_hw;
} __attribute__((preserve_access_index));

extern const unsigned long cpufreq_pressure __ksym __weak;

__noinline int lab_update_cpu_capacity(s32 cpu, u64 now)
{
	u32 c = cpu & (LAB_MAX_CPUS - 1), ms = lab_cpus[c].sd[0].balance_interval;
	struct lab_rq *rq = rq_get(cpu);
	struct rq *krq = krq_of(cpu);
	u64 orig, max, hw = 0, freq = 0, irq = 0, cap;
	const unsigned long *fp;

	if (!rq || !krq)
		return 0;
	if (!ms)
		ms = topo.lvl_size[0][c];
	WRITE_ONCE(rq->capacity_next, now + (ms ? ms : 1) * 1000000ULL);
	orig = scx_bpf_cpuperf_cap(cpu);
	if (bpf_core_field_exists(((struct rq___avg_hw *)krq)->avg_hw))
		hw = READ_ONCE(((struct rq___avg_hw *)krq)->avg_hw.load_avg);
	if (bpf_ksym_exists(&cpufreq_pressure) && (fp = bpf_per_cpu_ptr(&cpufreq_pressure, cpu)))
		freq = READ_ONCE(*fp);
	max = lab_actual_cpu_capacity(orig, hw, freq);
	if (bpf_core_field_exists(((struct rq___avg_irq *)krq)->avg_irq) &&
	    sched_feat(params_get(), NONTASK_CAPACITY))
		irq = READ_ONCE(((struct rq___avg_irq *)krq)->avg_irq.util_avg);
	cap = lab_scale_rt_capacity(max, irq, READ_ONCE(krq->avg_rt.util_avg),
				    READ_ONCE(krq->avg_dl.util_avg));
	WRITE_ONCE(rq->cpu_capacity_orig, (u32)orig);
	WRITE_ONCE(rq->cpu_capacity, (u32)cap);
	stat_inc(LAB_ST_CAPACITY_UPDATE);
	return 0;
}

/* update_sg_lb_stats()'s reads of one CPU at @now: its queue counts (rq->nr_running counts the
 * higher class's task of a taken CPU too), load, utilisation and runnable averages, capacities
 * (updated first when due) and idle_cpu(). */
static __always_inline void lb_cpu_read(s32 cpu, const struct cpumask *idle, bool util_est,
					u64 now, struct lab_lb_cpu *c)
{
	struct lab_rq *rq = rq_get(cpu);
	u32 q, d;

	__builtin_memset(c, 0, sizeof(*c));
	c->capacity = LAB_CAPACITY_SCALE;
	c->capacity_orig = LAB_CAPACITY_SCALE;
	if (!rq)
		return;
	if ((s64)(now - READ_ONCE(rq->capacity_next)) >= 0)
		lab_update_cpu_capacity(cpu, now);
	c->capacity = rq_capacity(rq);
	c->capacity_orig = rq_capacity_orig(rq);
	q = READ_ONCE(rq->cfs.nr_queued);
	d = READ_ONCE(rq->cfs.nr_delayed);
	c->nr_running = q + (READ_ONCE(rq->released) ? 1 : 0);
	c->h_nr_runnable = q > d ? q - d : 0;
	c->load = READ_ONCE(rq->cfs.avg.load_avg);
	c->util = cpu_util_cfs(&rq->cfs, util_est);
	c->runnable = READ_ONCE(rq->cfs.avg.runnable_avg);
	c->idle = idle && bpf_cpumask_test_cpu(cpu, idle) && !q;
}

/* The first CPU of @cpu's core (what sg->cores counts once per core). */
static __always_inline bool lb_core_first(s32 cpu)
{
	u32 core = topo.cpu_core[cpu & (LAB_MAX_CPUS - 1)] & (LAB_MAX_CPUS - 1);

	return topo.core_cpus[topo.core_start[core] & (LAB_MAX_CPUS - 1)] == (u32)cpu;
}

/* The end of one group in lab_update_sd_lb_stats() (the group in the scratch's cur): a global
 * subprogram, so that the verifier checks the decisions once rather than on every pass of the
 * walk's loop. */
__noinline int lab_sd_lb_group_end(u32 level, u32 idle_type, u32 local)
{
	struct lab_lb_scratch *sc = lb_scratch_get();
	struct lab_sd sd;

	if (!sc)
		return 0;
	lb_sd(level, idle_type, &sd);
	lab_sd_lb_group_done(&sd, &sc->sds, &sc->cur, local);
	return 0;
}

/*
 * Mirrors update_sd_lb_stats(): the local group's and the busiest group's statistics of @dst's
 * domain at @level, into this CPU's scratch. Offline CPUs are left out (the kernel's
 * cpu_active_mask). A global subprogram: verified once, its loop off the callers' stacks.
 */
__noinline int lab_update_sd_lb_stats(s32 dst, u32 level, u32 idle_type)
{
	u32 l = level & (LAB_MAX_LEVELS - 1), d = dst & (LAB_MAX_CPUS - 1);
	u32 start = topo.lvl_start[l][d], size = topo.lvl_size[l][d];
	u32 dpos = topo.cpu_order_pos[d], i;
	struct lab_lb_scratch *sc = lb_scratch_get();
	const struct cpumask *idle;
	bool util_est;
	u64 now;

	if (!sc)
		return 0;
	util_est = sched_feat(params_get(), UTIL_EST);
	now = scx_bpf_now();
	lab_sd_lb_init(&sc->sds);
	WRITE_ONCE(sc->gend, 0);
	WRITE_ONCE(sc->local, 0);
	idle = scx_bpf_get_idle_cpumask();
	bpf_for(i, 0, size) {
		u32 pos = start + i, gstart, gsize, gflags;
		s32 c = topo.cpu_order[pos & (LAB_MAX_CPUS - 1)];

		if (pos >= READ_ONCE(sc->gend)) {
			gflags = lb_group_of(c, l, &gstart, &gsize);
			WRITE_ONCE(sc->gend, gstart + gsize);
			WRITE_ONCE(sc->local, dpos >= gstart && dpos < gstart + gsize);
			lab_sg_init(&sc->cur, gflags, (s32)gstart, gsize);
		}
		if (!cpu_offline(c)) {
			lb_cpu_read(c, idle, util_est, now, &sc->c);
			sc->c.core_first = !l || lb_core_first(c);
			lab_sg_add_cpu(&sc->cur, &sc->c);
		}
		if (pos + 1 >= READ_ONCE(sc->gend))
			lab_sd_lb_group_end(l, idle_type, READ_ONCE(sc->local));
	}
	scx_bpf_put_idle_cpumask(idle);
	return 0;
}

/*
 * Mirrors sched_balance_find_src_rq() in @dst's domain at @level, state @idle_type: the busiest
 * CPU of the busiest group (the scratch's) for the verdict's kind of migration, -1 if none; not
 * @dst.
 */
__noinline s32 lab_find_src_rq(s32 dst, u32 level, u32 idle_type, u32 type, s64 imbalance)
{
	struct lab_lb_verdict v = { .imbalance = imbalance, .migration_type = type };
	struct lab_lb_scratch *sc = lb_scratch_get();
	struct lab_src_best b;
	struct lab_lb_cpu c;
	bool util_est = sched_feat(params_get(), UTIL_EST);
	u64 now = scx_bpf_now();
	u32 i, start, size;
	struct lab_sd sd;

	if (!sc)
		return -1;
	start = (u32)sc->sds.busiest.first;
	size = sc->sds.busiest.size;
	lb_sd(level, idle_type, &sd);
	lab_src_best_init(&b);
	bpf_for(i, 0, size) {
		s32 cpu = topo.cpu_order[(start + i) & (LAB_MAX_CPUS - 1)];

		if (cpu == dst || cpu_offline(cpu))
			continue;
		lb_cpu_read(cpu, NULL, util_est, now, &c);
		lab_find_src_rq_cpu(&sd, &v, &c, cpu, &b);
	}
	return b.cpu;
}

/* is_core_idle(): every SMT sibling of @cpu idle. */
static __always_inline bool lb_core_idle(s32 cpu, const struct cpumask *idle)
{
	u32 start, n, i;

	n = core_span(cpu, &start);
	bpf_for(i, 0, n) {
		s32 sib = topo.core_cpus[(start + i) & (LAB_MAX_CPUS - 1)];

		if (sib != cpu && !available_idle(sib, idle))
			return false;
	}
	return true;
}

/*
 * Mirrors should_we_balance() for a periodic or idle balance: of @dst's group at @level, the
 * first idle CPU (on an idle core, above the SMT level), else the first idle CPU with busy
 * siblings, else the group's first CPU balances; the others leave this level and those above
 * to it. A global subprogram.
 */
__noinline int lab_should_we_balance(s32 dst, u32 level)
{
	u32 l = level & (LAB_MAX_LEVELS - 1), start, size, i;
	bool smt_level = topo.lvl_flags[l] & LAB_SD_SHARE_CPUCAPACITY;
	const struct cpumask *idle;
	s32 idle_smt = -1, first = -1, ret = -1;

	lb_group_of(dst, l, &start, &size);
	idle = scx_bpf_get_idle_cpumask();
	bpf_for(i, 0, size) {
		s32 c = topo.cpu_order[(start + i) & (LAB_MAX_CPUS - 1)];

		if (cpu_offline(c))
			continue;
		if (first < 0)
			first = c;
		if (!available_idle(c, idle))
			continue;
		if (!smt_level && !lb_core_idle(c, idle)) {
			if (idle_smt < 0)
				idle_smt = c;
			continue;
		}
		ret = c;
		break;
	}
	scx_bpf_put_idle_cpumask(idle);
	if (ret >= 0)
		return ret == dst;
	if (idle_smt >= 0)
		return idle_smt == dst;
	return first == dst;
}

/* Count a task pulled at @level. */
static __always_inline void lb_count_level(u64 *st, u32 level)
{
	u32 f = topo.lvl_flags[level & (LAB_MAX_LEVELS - 1)];

	if (f & LAB_SD_SHARE_CPUCAPACITY)
		lab_count(st, LAB_ST_LB_SMT);
	else if (f & LAB_SD_SHARE_LLC)
		lab_count(st, LAB_ST_LB_MC);
	else if (f & LAB_SD_NUMA)
		lab_count(st, LAB_ST_LB_NUMA);
	else
		lab_count(st, LAB_ST_LB_PKG);
}

/*
 * Mirrors detach_tasks() for a domain's verdict at @level: pull from @src to @dst while the
 * imbalance lasts, at most nr_migrate tasks; an idle puller leaves the source its last task; a
 * newly idle one stops after the first (a preemptible kernel's rule). Returns whether a task
 * moved (each is counted at the level; no count is carried from pass to pass, which would keep
 * the verifier from seeing the loop converge).
 */
static __always_inline bool lb_detach_tasks(s32 dst, s32 src, u32 level, u32 idle_type, u32 type,
					    s64 imbalance, u32 failed,
					    const struct lab_params *params, u64 now)
{
	struct lab_rq *srq = rq_get(src);
	bool moved = false;
	s64 amount;
	u32 i;

	if (!srq)
		return false;
	bpf_for(i, 0, params->nr_migrate) {
		if (idle_type != LAB_CPU_NOT_IDLE && rq_runnable(srq) <= 1)
			break;
		amount = lab_pull_one(dst, src, imbalance, pull_failed_type(failed, type), now);
		if (amount < 0)
			break;
		moved = true;
		lb_count_level(stats_row(), level);
		imbalance -= amount;
		if (imbalance <= 0 || idle_type == LAB_CPU_NEWLY_IDLE)
			break;
	}
	return moved;
}

/*
 * Mirrors sched_balance_rq() at @level for @dst in state @idle_type, up to the pull: should_we_balance(),
 * the busiest group and the imbalance (domains.h), the busiest CPU. Returns LAB_LB_FOUND with the
 * source and the verdict in this CPU's scratch (sc->src, sc->v) for lb_detach_tasks(); 0 when
 * balanced (the domain's state updated as the kernel's out_balanced does: nr_balance_failed
 * cleared, balance_interval doubled up to twice the domain's weight); LAB_LB_STOP when another
 * CPU of the group balances this level. Split from the pull so that the pull's calls do not
 * stack on this frame.
 */
#define LAB_LB_FOUND	4

__noinline int lab_sched_balance_find(s32 dst, u32 level, u32 idle_type)
{
	u32 l = level & (LAB_MAX_LEVELS - 1), d = dst & (LAB_MAX_CPUS - 1);
	struct lab_sd_state *state = &lab_cpus[d].sd[l];
	u32 weight = topo.lvl_size[l][d];
	struct lab_lb_scratch *sc;

	if (idle_type != LAB_CPU_NEWLY_IDLE && !lab_should_we_balance(dst, l))
		return LAB_LB_STOP;
	lab_update_sd_lb_stats(dst, l, idle_type);
	if (!(sc = lb_scratch_get()))
		return 0;
	lb_sd(l, idle_type, &sc->sd);
	if (lab_find_src_group(&sc->sd, &sc->sds, &sc->v)) {
		sc->src = lab_find_src_rq(dst, l, idle_type, sc->v.migration_type, sc->v.imbalance);
		if (sc->src >= 0)
			return LAB_LB_FOUND;
	}
	state->nr_balance_failed = 0;
	if (idle_type != LAB_CPU_NEWLY_IDLE && state->balance_interval < 2 * weight)
		state->balance_interval = state->balance_interval ? state->balance_interval * 2 : weight;
	return 0;
}

/*
 * The rest of sched_balance_rq() once lb_detach_tasks() has tried: on failure the domain's
 * nr_balance_failed grows and, past cache_nice_tries + 2 for a task imbalance, the running task
 * of the source is pushed (active balance: ops.dispatch and ops.enqueue of the source move it
 * when it is put back); balance_interval goes back to the domain's weight. Differs: no
 * LBF_DST_PINNED retry on another CPU of the group, no group_imbalanced flag for the parent.
 */
__noinline int lab_sched_balance_done(s32 dst, u32 level, u32 idle_type, u32 moved)
{
	u32 l = level & (LAB_MAX_LEVELS - 1), d = dst & (LAB_MAX_CPUS - 1);
	struct lab_sd_state *state = &lab_cpus[d].sd[l];
	struct lab_lb_scratch *sc = lb_scratch_get();
	struct lab_rq *srq, *drq;
	u32 why = LAB_ACTIVE_NONE;
	s32 src;

	if (!sc)
		return 0;
	src = sc->src;
	if (moved) {
		state->nr_balance_failed = 0;
	} else {
		lab_count(stats_row(), LAB_ST_LB_FAILED);
		if (idle_type != LAB_CPU_NEWLY_IDLE)
			state->nr_balance_failed++;
		lb_cpu_read(src, NULL, false, scx_bpf_now(), &sc->c);
		if ((srq = rq_get(src)) && (drq = rq_get(dst)))
			why = lab_need_active_balance(&sc->sd, sc->v.migration_type,
						      state->nr_balance_failed,
						      topo.lvl_cache_nice_tries[l], &sc->c,
						      rq_capacity(drq));
		if (why != LAB_ACTIVE_NONE && srq && !READ_ONCE(srq->push_cpu)) {
			WRITE_ONCE(srq->push_cpu, (u32)dst + 1);
			scx_bpf_kick_cpu(src, SCX_KICK_PREEMPT);
			if (why == LAB_ACTIVE_CAPACITY)
				lab_count(stats_row(), LAB_ST_LB_ACTIVE_CAPACITY);
		}
	}
	state->balance_interval = topo.lvl_size[l][d];
	return 0;
}

/* rq->avg_idle and rq->max_idle_balance_cost as the kernel starts them: twice and once
 * migration_cost_ns. */
static __always_inline void idle_cost_init(struct lab_cpu *pc, u64 migration_cost)
{
	if (!pc->max_idle_balance_cost) {
		pc->max_idle_balance_cost = migration_cost;
		pc->avg_idle = 2 * migration_cost;
	}
}

/*
 * Mirrors sched_balance_newidle(): @cpu found nothing to run. Nothing is tried when no queue is
 * overloaded, or when the CPU's idle periods (avg_idle) are shorter than its lowest domain's
 * newidle cost; otherwise each level, lowest first, does sched_balance_rq() in the
 * CPU_NEWLY_IDLE state (one task at most) while the time spent so far plus the level's
 * max_newidle_lb_cost stays within avg_idle, and the first level that pulls ends the walk. Each
 * level's cost (ns of this program) feeds its max_newidle_lb_cost. Pulled tasks join @cpu's
 * queue; returns whether one did. With NI_RANDOM a level whose newidle balances seldom pull is
 * skipped at random (the chance follows its success ratio); each level visited counts a call,
 * and a success when it pulled (update_newidle_stats(), with NI_RATE's allowance for rare
 * calls). Differs: the costs are the BPF scheduler's, not fair.c's.
 */
static __always_inline bool newidle_walk(s32 cpu, struct lab_rq *rq, u64 now)
{
	struct lab_cpu *pc = &lab_cpus[cpu & (LAB_MAX_CPUS - 1)];
	u64 *st = stats_row(), t0, t1, cost, curr_cost = 0;
	const struct lab_params *params = params_get();
	u32 nr = topo.nr_levels, l;
	struct lab_lb_scratch *sc;
	bool ni_random, ni_rate, moved = false;

	lab_count(st, LAB_ST_NEWIDLE);
	/* sched_balance_newidle() returns at once when the root domain is not overloaded. */
	if (!READ_ONCE(nr_overloaded)) {
		lab_count(st, LAB_ST_NEWIDLE_IDLE);
		return false;
	}
	idle_cost_init(pc, params->migration_cost);
	if (nr && pc->avg_idle < pc->sd[0].max_newidle_lb_cost) {
		lab_count(st, LAB_ST_NEWIDLE_SHORT);
		return false;
	}
	lab_update_blocked(cpu, now);
	ni_random = sched_feat(params, NI_RANDOM);
	ni_rate = sched_feat(params, NI_RATE);
	t0 = bpf_ktime_get_ns();
	bpf_for(l, 0, nr) {
		struct lab_sd_state *state = &pc->sd[l & (LAB_MAX_LEVELS - 1)];

		if (pc->avg_idle < curr_cost + state->max_newidle_lb_cost)
			break;
		if (!newidle_should_run(&state->ni, bpf_get_prandom_u32(), ni_random)) {
			lab_count(st, LAB_ST_NEWIDLE_GATED);
			newidle_account(&state->ni, false, false, now, ni_random, ni_rate);
			continue;
		}
		if (lab_sched_balance_find(cpu, l, LAB_CPU_NEWLY_IDLE) == LAB_LB_FOUND &&
		    (sc = lb_scratch_get())) {
			moved = lb_detach_tasks(cpu, sc->src, l, LAB_CPU_NEWLY_IDLE,
						sc->v.migration_type, sc->v.imbalance,
						state->nr_balance_failed, params, now);
			lab_sched_balance_done(cpu, l, LAB_CPU_NEWLY_IDLE, moved);
		}
		t1 = bpf_ktime_get_ns();
		cost = t1 - t0;
		curr_cost += cost;
		t0 = t1;
		lab_update_newidle_cost(&state->max_newidle_lb_cost, &state->last_decay_max_lb_cost,
					cost, now);
		newidle_account(&state->ni, true, moved, now, ni_random, ni_rate);
		if (moved)
			break;
	}
	if (curr_cost > pc->max_idle_balance_cost)
		pc->max_idle_balance_cost = curr_cost;
	if (moved)
		lab_count(st, LAB_ST_PULL_NEWIDLE);
	return moved;
}

/*
 * Mirrors sched_balance_newidle() around its walk (newidle_walk()): the CPU is stamped as idle
 * from here (rq->idle_stamp: the idle period that a wakeup onto it ends, ttwu_idle_end(), feeds
 * avg_idle), and the stamp is taken back when a task was pulled. A CPU that stays idle then
 * does __update_idle_core(), which the kernel runs when it picks the idle task: with SMT, beside
 * idle siblings it marks its LLC as having an idle core. Not inlined: ops.dispatch calls it from
 * two places.
 */
static __noinline bool newidle_balance(s32 cpu, struct lab_rq *rq)
{
	u64 now = scx_bpf_now();
	bool moved;

	WRITE_ONCE(rq->idle_stamp, now);
	moved = newidle_walk(cpu, rq, now);
	if (moved)
		WRITE_ONCE(rq->idle_stamp, 0);
	else if (topo.smt_active)
		update_idle_core(cpu);
	return moved;
}

/*
 * ttwu_do_activate()'s end of @cpu's idle period: a task wakes onto @cpu, which newidle_balance()
 * stamped; the period's length feeds rq->avg_idle (update_avg(), capped at twice
 * max_idle_balance_cost). The first waker takes the stamp. @now: the wakeup's time if the
 * caller has it, else 0.
 */
static __always_inline void ttwu_idle_end(s32 cpu, u64 now)
{
	struct lab_cpu *pc = &lab_cpus[cpu & (LAB_MAX_CPUS - 1)];
	struct lab_rq *rq = rq_get(cpu);
	u64 stamp;

	if (!rq || !(stamp = READ_ONCE(rq->idle_stamp)) ||
	    __sync_val_compare_and_swap(&rq->idle_stamp, stamp, 0) != stamp)
		return;
	if (!now)
		now = scx_bpf_now();
	if (pc->max_idle_balance_cost && now > stamp)
		lab_update_avg_idle(&pc->avg_idle, now - stamp, pc->max_idle_balance_cost);
}

/*
 * sched_balance_domains()' visit of every level's newidle cost: each max_newidle_lb_cost decays
 * once a second, and when the top level's did, rq->max_idle_balance_cost becomes their sum (at
 * least migration_cost_ns). A global subprogram: its loop stays off the balance walk's frame.
 */
__noinline int lab_newidle_cost_decay(s32 cpu, u64 now)
{
	struct lab_cpu *pc = &lab_cpus[cpu & (LAB_MAX_CPUS - 1)];
	u64 migration_cost = params_get()->migration_cost, max_cost = 0;
	u32 nr = topo.nr_levels, l;
	bool need_decay = false;

	bpf_for(l, 0, nr) {
		struct lab_sd_state *state = &pc->sd[l & (LAB_MAX_LEVELS - 1)];

		need_decay = lab_update_newidle_cost(&state->max_newidle_lb_cost,
						     &state->last_decay_max_lb_cost, 0, now);
		max_cost += state->max_newidle_lb_cost;
	}
	if (need_decay)
		pc->max_idle_balance_cost = max_cost > migration_cost ? max_cost : migration_cost;
	return 0;
}

/*
 * Mirrors sched_balance_domains()'s walk for @cpu in state @idle_type: each level whose interval
 * (times busy_factor on a busy CPU) has passed is looked at, lowest first, until one finds an
 * imbalance (returns that level + 1; the source and the verdict in this CPU's scratch, for the
 * caller to pull) or should_we_balance() hands a level to another CPU of the group;
 * rq->next_balance becomes the earliest next balance. Differs: the levels above the one that
 * found an imbalance wait for the next turn (the kernel goes on up after pulling). A global
 * subprogram: the pull's calls stack on its caller's frame, not on this one.
 */
__noinline int lab_balance_find(s32 cpu, u32 idle_type, u64 now)
{
	struct lab_cpu *pc = &lab_cpus[cpu & (LAB_MAX_CPUS - 1)];
	u32 tick_ms = tick_ns / 1000000, nr = topo.nr_levels, l;
	bool busy = idle_type == LAB_CPU_NOT_IDLE;
	u64 next = now + 60ULL * 1000000000ULL, due;
	int r, found = 0;

	if (!tick_ms)
		tick_ms = 1;
	lab_newidle_cost_decay(cpu, now);
	bpf_for(l, 0, nr) {
		struct lab_sd_state *state = &pc->sd[l & (LAB_MAX_LEVELS - 1)];
		u64 ms;

		if (!state->balance_interval)
			state->balance_interval = topo.lvl_size[l & (LAB_MAX_LEVELS - 1)]
							       [cpu & (LAB_MAX_CPUS - 1)];
		ms = lab_sd_balance_interval_ms(state->balance_interval, busy, tick_ms, topo.nr_cpus);
		if (now - state->last_balance >= ms * 1000000ULL) {
			r = lab_sched_balance_find(cpu, l, idle_type);
			state->last_balance = now;
			if (r == LAB_LB_FOUND) {
				found = l + 1;
				break;
			}
			if (r == LAB_LB_STOP)
				break;
			ms = lab_sd_balance_interval_ms(state->balance_interval, busy, tick_ms,
							topo.nr_cpus);
		}
		due = state->last_balance + ms * 1000000ULL;
		if (due < next)
			next = due;
	}
	WRITE_ONCE(pc->next_balance, found ? now : next);
	return found;
}

/*
 * sched_balance_domains() for @cpu in state @idle_type (a busy CPU's tick, or an idle CPU that
 * the nohz kick woke): the first level with an imbalance pulls into this CPU's queue
 * (lb_detach_tasks()) and the level's state follows the outcome. Returns whether tasks moved.
 */
static __always_inline bool domain_balance(s32 cpu, u32 idle_type, const struct lab_params *params,
					   u64 now)
{
	struct lab_lb_scratch *sc;
	int lvl;
	bool m;

	lvl = lab_balance_find(cpu, idle_type, now);
	if (lvl <= 0 || !(sc = lb_scratch_get()))
		return false;
	m = lb_detach_tasks(cpu, sc->src, lvl - 1, idle_type, sc->v.migration_type,
			    sc->v.imbalance,
			    lab_cpus[cpu & (LAB_MAX_CPUS - 1)].sd[(lvl - 1) & (LAB_MAX_LEVELS - 1)]
				    .nr_balance_failed,
			    params, now);
	lab_sched_balance_done(cpu, lvl - 1, idle_type, m);
	return m;
}

/*
 * _nohz_idle_balance()'s walk over the idle CPUs, one step: kick the first idle CPU of ours after
 * @self (around) whose balance is due, to balance for itself (rq->nohz_ilb), and set
 * nohz.next_balance to the earliest balance due on an idle CPU. A global subprogram.
 */
__noinline int lab_nohz_kick_next(s32 self, u64 now)
{
	u64 next = now + 60ULL * 1000000000ULL, due;
	const struct cpumask *idle;
	u32 nr = topo.nr_cpus, i;
	struct lab_rq *rq;
	s32 kick = -1;

	if (!nr)
		return 0;
	idle = scx_bpf_get_idle_cpumask();
	bpf_for(i, 1, nr) {
		s32 c = (self + i) % nr;

		if (cpu_offline(c) || !available_idle(c, idle))
			continue;
		due = READ_ONCE(lab_cpus[c & (LAB_MAX_CPUS - 1)].next_balance);
		if (kick < 0 && now >= due) {
			kick = c;
			continue;
		}
		if (due < next)
			next = due;
	}
	scx_bpf_put_idle_cpumask(idle);
	due = READ_ONCE(lab_cpus[self & (LAB_MAX_CPUS - 1)].next_balance);
	if (due < next)
		next = due;
	WRITE_ONCE(nohz_next_balance, next);
	if (kick >= 0 && (rq = rq_get(kick)) && !READ_ONCE(rq->nohz_ilb)) {
		WRITE_ONCE(rq->nohz_ilb, 1);
		scx_bpf_kick_cpu(kick, SCX_KICK_IDLE);
	}
	return 0;
}

/*
 * Mirrors _nohz_idle_balance(), run by an idle CPU that a busy one kicked (rq->nohz_ilb): this
 * CPU's idle balance when it is due, into its own queue, then the kick goes on to the next idle
 * CPU of ours whose balance is due, which does the same. Differs: the kernel's ILB balances on
 * behalf of every idle CPU without waking them; here each idle CPU is woken in turn and balances
 * for itself.
 */
static __always_inline void nohz_idle_balance(s32 self, struct lab_rq *rq, u64 now)
{
	u64 due = READ_ONCE(lab_cpus[self & (LAB_MAX_CPUS - 1)].next_balance);
	const struct lab_params *params = params_get();

	lab_count(stats_row(), LAB_ST_NOHZ_BALANCE);
	if (params && now >= due && !READ_ONCE(rq->cfs.nr_queued))
		domain_balance(self, LAB_CPU_IDLE, params, now);
	lab_nohz_kick_next(self, now);
}

/* Mirrors find_new_ilb(): the first idle CPU of ours other than @cpu, -1 if none. */
static __always_inline s32 find_new_ilb(s32 cpu)
{
	const struct cpumask *idle = scx_bpf_get_idle_cpumask();
	s32 ilb = -1;
	u32 i, nr = topo.nr_cpus;

	bpf_for(i, 0, nr) {
		if ((s32)i != cpu && !cpu_offline(i) && available_idle(i, idle)) {
			ilb = i;
			break;
		}
	}
	scx_bpf_put_idle_cpumask(idle);
	return ilb;
}

/* The CPUs of @cpu's LLC running something of ours or of a higher class (sds->nr_busy_cpus). */
static __always_inline u32 llc_nr_busy(s32 cpu)
{
	u32 llc = topo.cpu_llc[cpu & (LAB_MAX_CPUS - 1)] & (LAB_MAX_CPUS - 1);
	u32 size = topo.llc_size[llc], start = topo.llc_start[llc], i, n = 0;
	const struct cpumask *idle = scx_bpf_get_idle_cpumask();

	bpf_for(i, 0, size) {
		s32 c = topo.llc_cpus[(start + i) & (LAB_MAX_CPUS - 1)];

		if (!available_idle(c, idle))
			n++;
		if (n > 1)
			break;
	}
	scx_bpf_put_idle_cpumask(idle);
	return n;
}

/*
 * Mirrors nohz_balancer_kick(), from a busy CPU's tick (or the stand-in tick of a CPU that a
 * higher class holds): once nohz.next_balance has passed, with two tasks here, or one on a CPU
 * whose capacity other classes or IRQs have reduced (check_cpu_capacity() in the lowest domain),
 * or another busy CPU in the LLC, kick the first idle CPU to balance for the idle ones
 * (kick_ilb(): the next kick waits a tick at least); true if it kicked. Differs: the lab sees only its own queues (a CPU is
 * busy when it runs ours or a higher class holds it; a task of a higher class counts as one, as
 * in rq->nr_running).
 */
static bool nohz_balancer_kick(s32 cpu, struct lab_rq *rq, u64 now, u64 *st)
{
	u64 next = READ_ONCE(nohz_next_balance);
	u32 nr = rq_runnable(rq);
	struct lab_rq *irq;
	bool reduced;
	s32 ilb;

	if ((s64)(now - next) < 0)
		return false;
	if (nr && (READ_ONCE(rq->offline) || READ_ONCE(rq->released)))
		nr++;
	reduced = nr == 1 && lab_check_cpu_capacity(rq_capacity(rq), rq_capacity_orig(rq),
						    topo.lvl_imbalance_pct[0]);
	if (nr < 2 && !reduced && llc_nr_busy(cpu) < 2)
		return false;
	if (__sync_val_compare_and_swap(&nohz_next_balance, next, now + tick_ns) != next)
		return false;
	ilb = find_new_ilb(cpu);
	if (ilb < 0 || !(irq = rq_get(ilb)) || READ_ONCE(irq->nohz_ilb))
		return false;
	WRITE_ONCE(irq->nohz_ilb, 1);
	lab_count(st, LAB_ST_NOHZ_KICK);
	if (reduced)
		lab_count(st, LAB_ST_NOHZ_KICK_CAPACITY);
	scx_bpf_kick_cpu(ilb, SCX_KICK_IDLE);
	return true;
}

/*
 * A CPU where a higher class (RT, deadline) runs while ours wait, or one going offline: what
 * waits there moves to this busy CPU of the same LLC whatever the loads say (its capacity for
 * our tasks is nil, which the kernel's balancer sees through update_cpu_capacity()).
 */
static __always_inline void release_balance(s32 cpu, struct lab_rq *rq, const struct lab_params *params, u64 now)
{
	u32 llc = topo.cpu_llc[cpu & (LAB_MAX_CPUS - 1)] & (LAB_MAX_CPUS - 1);
	u32 size = topo.llc_size[llc], start = topo.llc_start[llc], i;
	struct lab_rq *srq;
	s32 src = -1;

	bpf_for(i, 0, size) {
		s32 c = topo.llc_cpus[(start + i) & (LAB_MAX_CPUS - 1)];

		if (c != cpu && (srq = rq_get(c)) && rq_runnable(srq) &&
		    (krq_rt_busy(krq_of(c)) || READ_ONCE(srq->released) || READ_ONCE(srq->offline))) {
			src = c;
			break;
		}
	}
	if (src < 0 || !(srq = rq_get(src)))
		return;
	if (!detach_tasks(cpu, src, rq, srq, -1, true, params, now))
		rq->nr_balance_failed++;
	else
		rq->nr_balance_failed = 0;
}

/*
 * Mirrors sched_balance_trigger() from @cpu's tick: nohz_balancer_kick(), then the periodic
 * balance of every domain level that is due (CPU_NOT_IDLE), and, every LAB_BALANCE_TICKS ticks,
 * the pull from a CPU that a higher class took (release_balance()).
 */
static __always_inline void periodic_balance(s32 cpu, struct lab_rq *rq, const struct lab_params *params,
			     u64 now, u64 *st)
{
	struct lab_cpu *pc = &lab_cpus[cpu & (LAB_MAX_CPUS - 1)];

	nohz_balancer_kick(cpu, rq, now, st);
	/* A CPU going offline pulls nothing into a queue that is no longer dispatched from. */
	if (READ_ONCE(rq->offline))
		return;
	if (++pc->balance_ticks >= LAB_BALANCE_TICKS) {
		pc->balance_ticks = 0;
		release_balance(cpu, rq, params, now);
	}
	domain_balance(cpu, LAB_CPU_NOT_IDLE, params, now);
}
