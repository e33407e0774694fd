/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Balancing: the kernel's load balancer does not run for sched_ext tasks, so the lab moves
 * entities between its own queues. Included by main.bpf.c.
 *
 *  - newidle: a CPU with nothing to run pulls one task from the busiest CPU (its LLC first),
 *    gated by NI_RANDOM / NI_RATE like sched_balance_newidle();
 *  - periodic: every LAB_BALANCE_TICKS ticks a busy CPU pulls from a busier one in its LLC when
 *    the load imbalance allows it (the migrate_load rule: a task whose load, halved for every
 *    failed attempt, fits the imbalance), and kicks an idle CPU of the LLC when it has tasks
 *    waiting (the nohz idle balance);
 *  - can_migrate_task(), task_hot(), task_is_ineligible_on_dst_cpu(), the busiest-CPU choice and
 *    the migrate_load rule are the pure functions of balance.h (tested on the host); the
 *    functions here gather their facts with kfuncs and under the source queue's lock.
 *
 * A pulled task moves as the kernel's detach/attach do: the source's running entity is charged
 * first (update_curr()), then the task is dequeued without DEQUEUE_SLEEP (lag and, with
 * PLACE_REL_DEADLINE, relative deadline kept) and placed on the puller's queue, where it counts
 * as cold until it runs (lab_se.migrated). Unlike attach_task(), no wakeup preemption check
 * follows: the puller picks at its next decision.
 */

#include "balance.h"

#define LAB_BALANCE_TICKS	16	/* sd->balance_interval * busy_factor, in ticks */
#define LAB_PULL_CANDIDATES	4
#define LAB_PULL_SCAN		16	/* queued entities looked at per attempt */

/* One pull attempt (BPF functions take at most five arguments). */
struct lab_pull {
	const struct lab_params *params;
	u64 *st;
	u64 now;
	s64 max_load;		/* the imbalance left (of @type); < 0: no rule */
	u32 failed;		/* nr_balance_failed: relaxes the eligibility and hotness rules */
	u32 type;		/* LAB_MIGRATE_*: what @max_load counts */
	s32 dst, src;
	bool custody;		/* leave the pulled task in the scheduler's custody */
};

/* Mirrors the h_nr_runnable count of a queue; differs: queued minus ghosts of our queue only. */
static __always_inline u32 rq_runnable(struct lab_rq *rq)
{
	u32 q = READ_ONCE(rq->cfs.nr_queued), d = READ_ONCE(rq->cfs.nr_delayed);

	return q > d ? q - d : 0;
}

/*
 * Mirrors find_busiest_queue(): the busiest other CPU of @cpu's LLC (or of any LLC when
 * @any_llc), -1 when none has a task waiting; differs: by runnable count over single CPUs (a
 * CPU held by a higher class counting one more, lab_nr_busy()), no group statistics or capacity
 * weighting (lab_busier()). Only the overloaded CPUs are looked at (overloaded_mask): the work is
 * one word per 64 CPUs plus one snapshot per overloaded CPU, not one per CPU. A global
 * subprogram: its snapshot stays off the stack of the tick's call chain.
 */
__noinline s32 find_busiest(s32 cpu, int any_llc)
{
	u32 llc = topo.cpu_llc[cpu & (LAB_MAX_CPUS - 1)], best_nr = 1, w, b;
	u32 nr_words = (topo.nr_cpus + 63) / 64;
	s32 best = -1;

	bpf_for(w, 0, nr_words) {
		u64 bits = READ_ONCE(overloaded_mask[w & (LAB_MAX_CPUS / 64 - 1)]);

		if (!bits)
			continue;
		bpf_for(b, 0, 64) {
			struct lab_cpu_snap c;
			s32 i = w * 64 + b;

			if (!((bits >> b) & 1))
				continue;
			cpu_snap(i, NULL, NULL, &c);
			if (lab_busier(&c, cpu, llc, any_llc, best_nr)) {
				best_nr = lab_nr_busy(&c);
				best = i;
			}
		}
	}
	return best;
}

/* The lb_env of a pull: what can_migrate_task() knows of the attempt. */
static __always_inline void lb_env_init(const struct lab_pull *pl, struct lab_lb_env *env)
{
	struct lab_rq *drq = rq_get(pl->dst);

	__builtin_memset(env, 0, sizeof(*env));
	env->now = pl->now;
	env->migration_cost = pl->params->migration_cost;
	env->nr_balance_failed = pl->failed;
	env->dst_nr_queued = drq ? READ_ONCE(drq->cfs.nr_queued) : 0;
	env->smt = topo.cpu_core[pl->dst & (LAB_MAX_CPUS - 1)] ==
		   topo.cpu_core[pl->src & (LAB_MAX_CPUS - 1)];
	env->place_lag = sched_feat(pl->params, PLACE_LAG);
	env->cache_hot_buddy = sched_feat(pl->params, CACHE_HOT_BUDDY);
}

/* Count can_migrate_task()'s refusal @verdict. */
static __always_inline void count_refusal(u64 *st, u32 verdict)
{
	switch (verdict) {
	case LAB_MIGRATE_DELAYED:
		lab_count(st, LAB_ST_PULL_REFUSED_DELAYED);
		break;
	case LAB_MIGRATE_INELIGIBLE:
		lab_count(st, LAB_ST_PULL_REFUSED_INELIGIBLE);
		break;
	case LAB_MIGRATE_PINNED:
		lab_count(st, LAB_ST_PULL_REFUSED_PINNED);
		break;
	case LAB_MIGRATE_AFFINITY:
		lab_count(st, LAB_ST_PULL_REFUSED_AFFINITY);
		break;
	case LAB_MIGRATE_RUNNING:
		lab_count(st, LAB_ST_PULL_REFUSED_RUNNING);
		break;
	case LAB_MIGRATE_HOT:
		lab_count(st, LAB_ST_PULL_REFUSED_HOT);
		break;
	}
}

/*
 * Mirrors can_migrate_task()'s queue-side half, over detach_tasks()'s walk of the source queue:
 * collect up to LAB_PULL_CANDIDATES queued entities of the source, in deadline order, whose
 * queue facts (ghost, running, eligible, next buddy, last run) allow the move. Differs: the
 * task-side facts (affinity, migration disabled) need a task reference, which cannot be taken
 * under the lock: they are taken as allowing here and checked by pull_task(). Not inlined, so
 * that its frame is not on the stack of pull_task()'s deeper calls.
 */
static __noinline u32 pull_candidates(struct lab_rq *rq, lab_pool_t *pool,
				      const struct lab_pull *pl, u64 *st, u32 *cands)
{
	struct lab_cfs *cfs = &rq->cfs;
	u32 n, k, i, verdict;
	struct lab_lb_env env;

	lb_env_init(pl, &env);
	bpf_spin_lock(&rq->lock);
	WRITE_ONCE(rq->pull_found, 0);
	n = rb_first(cfs, pool);
	bpf_for(i, 0, LAB_PULL_SCAN) {
		struct lab_lb_task t = {};
		lab_se_t *se;

		k = READ_ONCE(rq->pull_found);
		if (!n || k >= LAB_PULL_CANDIDATES)
			break;
		se = SE(pool, n);
		t.last_ran = se->last_ran;
		t.delayed = se->delayed;
		t.on_cpu = !se->custody || se->running;
		t.eligible = entity_eligible(cfs, pool, se);
		t.next_buddy = cfs->next == n;
		t.idle_policy = se->weight == WEIGHT_IDLEPRIO;
		t.migrated = se->migrated;
		t.allowed = 1;
		verdict = lab_can_migrate_task(&env, &t);
		if (verdict == LAB_MIGRATE_OK) {
			cands[k & (LAB_PULL_CANDIDATES - 1)] = n;
			WRITE_ONCE(rq->pull_found, k + 1);
		} else {
			count_refusal(st, verdict);
		}
		n = rb_next(pool, n);
	}
	k = READ_ONCE(rq->pull_found);
	bpf_spin_unlock(&rq->lock);
	return k;
}

/*
 * Mirrors detach_task(): take @n off @src if it is still a movable entity there, after
 * charging @src's running entity for its time so far (update_curr() runs in the kernel's
 * dequeue before the lag is saved). Returns LAB_DETACH_OK, with LAB_DETACH_RESCHED when that
 * charge ended the running entity's slice. Differs: a pull of one entity, the lab's lock.
 */
#define LAB_DETACH_OK		1
#define LAB_DETACH_RESCHED	2
__noinline int lab_detach(u32 n, s32 src, u64 now)
{
	const struct lab_params *params = params_get();
	lab_pool_t *pool = pool_get();
	struct lab_rq *rq = rq_get(src);
	struct rq *krq = krq_of(src);
	u64 *st = stats_row();
	lab_se_t *se;
	int ret = 0;

	if (!pool || !rq)
		return 0;
	se = SE(pool, n);
	bpf_spin_lock(&rq->lock);
	if (se->on_rq && se->cpu == src && se->custody && !se->running && !se->delayed) {
		pelt_clock(rq, now);
		if (account_remote(&rq->cfs, pool, krq, params, st) && resched_curr_lazy(rq, st))
			ret |= LAB_DETACH_RESCHED;
		util_est_dequeue_task(&rq->cfs, se, params);
		dequeue_entity(&rq->cfs, pool, n, LAB_DEQ_MIGRATE, params, st);
		se->custody = 0;
		se->cpu = -1;
		ret |= LAB_DETACH_OK;
		rq_overload_update(rq);
	}
	bpf_spin_unlock(&rq->lock);
	return ret;
}

/* What a candidate counts for in detach_tasks()' rule: its task_h_load(), its util_est, or one
 * task. */
static __always_inline s64 lb_amount(u32 type, struct task_struct *p, u32 slot)
{
	lab_pool_t *pool;

	if (type == LAB_MIGRATE_TASK)
		return 1;
	if (type == LAB_MIGRATE_UTIL)
		return (pool = pool_get()) ? task_util_est(SE(pool, slot)) : 0;
	return task_load(p);
}

/*
 * Mirrors detach_tasks()' detach_task() for one task: take a task off @src for @dst. @max_load
 * >= 0 applies the migrate_load rule (periodic balance). Returns the task (a reference: release
 * it) and its slot in @slot, for attach_task(), or NULL. Differs: at most one task, taken from
 * the first LAB_PULL_SCAN entities in deadline order.
 */
static struct task_struct *pull_task(const struct lab_pull *pl, u32 *slot)
{
	lab_pool_t *pool = pool_get();
	struct lab_rq *srq = rq_get(pl->src);
	u32 cands[LAB_PULL_CANDIDATES] = {};
	struct task_struct *p = NULL;
	s32 dst = pl->dst, src = pl->src;
	u32 nr, i, verdict;
	u64 *st = pl->st;
	int r;

	if (!pool || !srq)
		return NULL;
	nr = pull_candidates(srq, pool, pl, st, cands);
	bpf_for(i, 0, LAB_PULL_CANDIDATES) {
		struct task_struct *c;

		if (i >= nr)
			break;
		c = slot_task(cands[i & (LAB_PULL_CANDIDATES - 1)]);
		if (!c)
			continue;
		/* The queue-side rules passed under the lock; now the task-side ones. */
		verdict = lab_can_migrate_affinity(c->migration_disabled,
						   bpf_cpumask_test_cpu(dst, c->cpus_ptr));
		if (verdict != LAB_MIGRATE_OK) {
			count_refusal(st, verdict);
		} else if (pl->max_load >= 0 &&
			   !lab_detach_fits(pl->type,
					    lb_amount(pl->type, c, cands[i & (LAB_PULL_CANDIDATES - 1)]),
					    pl->failed, pl->max_load, sched_feat(pl->params, LB_MIN))) {
			lab_count(st, LAB_ST_PULL_REFUSED_LOAD);
		} else if ((r = lab_detach(cands[i & (LAB_PULL_CANDIDATES - 1)], src, pl->now))) {
			if (r & LAB_DETACH_RESCHED)
				scx_bpf_kick_cpu(src, SCX_KICK_PREEMPT);
			p = c;
			break;
		}
		bpf_task_release(c);
	}
	if (p)
		*slot = cands[i & (LAB_PULL_CANDIDATES - 1)];
	return p;
}

/*
 * Mirrors attach_task(): @p, detached from its queue by pull_task(), joins @dst's queue (no
 * wakeup preemption check here), in the scheduler's custody, or as the pick that the puller
 * dispatches right away (it then leaves custody: the caller holds the reference). Called after
 * pull_task() returned, so that the enqueue's frames do not stack on the pull's.
 */
static void attach_task(struct task_struct *p, s32 dst, u32 slot, bool custody)
{
	join_queue(p, dst, custody ? 0 : LAB_WK_PICKED);
	if (!custody)
		slot_ref_drop(slot);
}

/*
 * Mirrors sched_balance_newidle(): @cpu found nothing to run. Returns a pulled task (a
 * reference) for the caller to dispatch, or NULL. Differs: one pull from the busiest CPU of the
 * LLC, else of any LLC, instead of a walk up the domains.
 */
static struct task_struct *newidle_balance(s32 cpu, struct lab_rq *rq)
{
	struct task_struct *t = NULL;
	const struct lab_params *params;
	u64 *st = stats_row(), now;
	u32 slot = 0;
	s32 src;
	bool run;

	lab_count(st, LAB_ST_NEWIDLE);
	/* sched_balance_newidle() returns at once when the root domain is not overloaded. */
	if (!READ_ONCE(nr_overloaded)) {
		lab_count(st, LAB_ST_NEWIDLE_IDLE);
		return NULL;
	}
	params = params_get();
	now = scx_bpf_now();
	lab_update_blocked(cpu, now);
	if (!rq->ni.stamp)
		newidle_init(&rq->ni, now);
	run = newidle_should_run(&rq->ni, bpf_get_prandom_u32(), sched_feat(params, NI_RANDOM));
	if (run) {
		src = find_busiest(cpu, false);
		if (src < 0)
			src = find_busiest(cpu, true);
		if (src >= 0) {
			/* The domain's nr_balance_failed relaxes newidle pulls too; only periodic
			 * failures raise it, any success clears it. */
			struct lab_pull pl = { .params = params, .st = st, .now = now, .max_load = -1,
					       .failed = rq->nr_balance_failed, .dst = cpu,
					       .src = src };

			t = pull_task(&pl, &slot);
			if (t)
				attach_task(t, cpu, slot, false);
		}
		if (t) {
			rq->nr_balance_failed = 0;
			lab_count(st, LAB_ST_PULL_NEWIDLE);
		}
	} else {
		lab_count(st, LAB_ST_NEWIDLE_GATED);
	}
	newidle_account(&rq->ni, run, t != NULL, now, sched_feat(params, NI_RANDOM),
			sched_feat(params, NI_RATE));
	return t;
}

/* lab_pull_one()'s @failed_type: nr_balance_failed, and the LAB_MIGRATE_* of the imbalance. */
#define LAB_PULL_TYPE_SHIFT	24
#define LAB_PULL_FAILED_MASK	((1U << LAB_PULL_TYPE_SHIFT) - 1)

static __always_inline u32 pull_failed_type(u32 failed, u32 type)
{
	return (failed < LAB_PULL_FAILED_MASK ? failed : LAB_PULL_FAILED_MASK) |
	       (type << LAB_PULL_TYPE_SHIFT);
}

/*
 * One detach_task() + attach_task() of a periodic balance: pull one task from @src into @dst's
 * queue, in the scheduler's custody, under the migrate_load rule for @max_load (< 0: no load
 * rule). Returns its load, or -1 when nothing could move. A subprogram of its own, so that the
 * loop below verifies one call, not the whole pull once per iteration.
 */
__noinline s64 lab_pull_one(s32 dst, s32 src, s64 max_load, u32 failed_type, u64 now)
{
	struct lab_pull pl = {};
	struct task_struct *t;
	u32 slot = 0;
	s64 load;

	pl.params = params_get();
	if (!pl.params)
		return -1;
	pl.st = stats_row();
	pl.now = now;
	pl.max_load = max_load;
	pl.failed = failed_type & LAB_PULL_FAILED_MASK;
	pl.type = failed_type >> LAB_PULL_TYPE_SHIFT;
	pl.dst = dst;
	pl.src = src;
	pl.custody = true;
	t = pull_task(&pl, &slot);
	if (!t)
		return -1;
	attach_task(t, dst, slot, true);
	lab_count(pl.st, LAB_ST_PULL_PERIODIC);
	load = lb_amount(pl.type, t, slot);
	bpf_task_release(t);
	return load;
}

/*
 * Mirrors detach_tasks(): pull from @src to @dst up to nr_migrate tasks (loop_max) while
 * @imbalance lasts; a @released source gives up what waits there whatever the loads. Returns
 * whether any task moved (no count: a counter that grows each pass would keep the verifier from
 * seeing the loop converge).
 */
static bool detach_tasks(s32 dst, s32 src, struct lab_rq *rq, struct lab_rq *srq, s64 imbalance,
			bool released, const struct lab_params *params, u64 now)
{
	u32 failed = rq->nr_balance_failed, i;
	bool moved = false;
	s64 load;

	bpf_for(i, 0, params->nr_migrate) {
		load = lab_pull_one(dst, src, released ? -1 : imbalance,
				    pull_failed_type(failed, LAB_MIGRATE_LOAD), now);
		if (load < 0)
			break;
		moved = true;
		if (!released && (imbalance -= load) <= 0)
			break;
		if (!rq_runnable(srq) || (!released && rq_runnable(srq) <= rq_runnable(rq)))
			break;
	}
	return moved;
}

/* When the blocked averages of the idle CPUs were last brought up to date (ns). */
u64 nohz_next_blocked;

/* The queue of @cpu holds load history that still decays: has_blocked_load. */
static __always_inline bool rq_has_blocked(struct lab_rq *rq)
{
	return READ_ONCE(rq->cfs.avg.load_avg) || READ_ONCE(rq->cfs.avg.util_avg) ||
	       READ_ONCE(rq->cfs.avg.runnable_avg);
}

/*
 * Mirrors the NOHZ_STATS_KICK part of nohz_idle_balance() (update_nohz_stats()), run from a
 * busy CPU's tick: every LOAD_AVG_PERIOD ms, the blocked averages of the CPUs that run none of
 * our tasks decay to now, so that an idle CPU's load and utilisation do not stay at what they
 * were when it went idle (cpu_load(), SIS_UTIL's sum). One CPU wins the turn. Differs: from the
 * tick of the winner itself, not from an idle CPU that the kick wakes.
 */
static void nohz_update_blocked(u64 now)
{
	u64 next = READ_ONCE(nohz_next_blocked);
	s32 cpu, nr = topo.nr_cpus;

	if ((s64)(now - next) < 0 ||
	    __sync_val_compare_and_swap(&nohz_next_blocked, next,
					now + LAB_LOAD_AVG_PERIOD * 1000000ULL) != next)
		return;
	bpf_for(cpu, 0, nr) {
		struct lab_rq *rq = rq_get(cpu);

		if (rq && !READ_ONCE(rq->cfs.curr) && rq_has_blocked(rq))
			lab_update_blocked(cpu, now);
	}
}

/* ---------------------------------------------------------------------------------------------
 * Balancing per sched domain (sched_balance_domains(), sched_balance_rq(), the nohz idle
 * balance). The decisions are domains.h's; here the facts are gathered, level by level, from the
 * topology's domains (struct lab_topo's levels) and each CPU's own domain state (lab_cpus[].sd).
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

/* update_sg_lb_stats()'s reads of one CPU: its queue counts (rq->nr_running counts the higher
 * class's task of a taken CPU too), load, utilisation and runnable averages, and idle_cpu(). */
static __always_inline void lb_cpu_read(s32 cpu, const struct cpumask *idle, bool util_est,
					struct lab_lb_cpu *c)
{
	struct lab_rq *rq = rq_get(cpu);
	u32 q, d;

	__builtin_memset(c, 0, sizeof(*c));
	c->capacity = LAB_CAPACITY_SCALE;
	if (!rq)
		return;
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

/*
 * Mirrors update_sd_lb_stats(): the local group's and the busiest group's statistics of @dst's
 * domain at @level, into this CPU's scratch. Offline CPUs are left out (the kernel's
 * cpu_active_mask). A global subprogram: verified once, its loop off the callers' stacks.
 */
__noinline int lab_update_sd_lb_stats(s32 dst, u32 level, u32 idle_type)
{
	u32 l = level & (LAB_MAX_LEVELS - 1), d = dst & (LAB_MAX_CPUS - 1);
	u32 start = topo.lvl_start[l][d], size = topo.lvl_size[l][d];
	u32 dpos = topo.cpu_order_pos[d], gend = 0, i;
	struct lab_lb_scratch *sc = lb_scratch_get();
	const struct cpumask *idle;
	bool util_est, local = false;
	struct lab_sd sd;

	if (!sc)
		return 0;
	lb_sd(l, idle_type, &sd);
	util_est = sched_feat(params_get(), UTIL_EST);
	lab_sd_lb_init(&sc->sds);
	idle = scx_bpf_get_idle_cpumask();
	bpf_for(i, 0, size) {
		u32 pos = start + i, gstart, gsize, gflags;
		s32 c = topo.cpu_order[pos & (LAB_MAX_CPUS - 1)];

		if (pos >= gend) {
			gflags = lb_group_of(c, l, &gstart, &gsize);
			gend = gstart + gsize;
			local = dpos >= gstart && dpos < gend;
			lab_sg_init(&sc->cur, gflags, (s32)gstart, gsize);
		}
		if (!cpu_offline(c)) {
			lb_cpu_read(c, idle, util_est, &sc->c);
			sc->c.core_first = !l || lb_core_first(c);
			lab_sg_add_cpu(&sc->cur, &sc->c);
		}
		if (pos + 1 >= gend)
			lab_sd_lb_group_done(&sd, &sc->sds, &sc->cur, local);
	}
	scx_bpf_put_idle_cpumask(idle);
	return 0;
}

/*
 * Mirrors sched_balance_find_src_rq(): the busiest CPU of the busiest group (positions @start,
 * @size of cpu_order[]) for the verdict's kind of migration, -1 if none; not @dst.
 */
__noinline s32 lab_find_src_rq(s32 dst, u32 start, u32 size, u32 type, s64 imbalance)
{
	struct lab_lb_verdict v = { .imbalance = imbalance, .migration_type = type };
	struct lab_src_best b;
	struct lab_lb_cpu c;
	bool util_est = sched_feat(params_get(), UTIL_EST);
	u32 i;

	lab_src_best_init(&b);
	bpf_for(i, 0, size) {
		s32 cpu = topo.cpu_order[(start + i) & (LAB_MAX_CPUS - 1)];

		if (cpu == dst || cpu_offline(cpu))
			continue;
		lb_cpu_read(cpu, NULL, util_est, &c);
		lab_find_src_rq_cpu(&v, &c, cpu, &b);
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
		sc->src = lab_find_src_rq(dst, (u32)sc->sds.busiest.first, sc->sds.busiest.size,
					  sc->v.migration_type, sc->v.imbalance);
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
	struct lab_rq *srq;
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
		if (lab_need_active_balance(sc->v.migration_type, state->nr_balance_failed,
					    topo.lvl_cache_nice_tries[l]) &&
		    src >= 0 && (srq = rq_get(src)) && !READ_ONCE(srq->push_cpu)) {
			WRITE_ONCE(srq->push_cpu, (u32)dst + 1);
			scx_bpf_kick_cpu(src, SCX_KICK_PREEMPT);
		}
	}
	state->balance_interval = topo.lvl_size[l][d];
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
 * Mirrors nohz_balancer_kick(), from a busy CPU's tick: once nohz.next_balance has passed, with
 * two tasks here or another busy CPU in the LLC, kick the first idle CPU to balance for the idle
 * ones (kick_ilb(): the next kick waits a tick at least). Differs: the lab sees only its own
 * queues (a CPU is busy when it runs ours or a higher class holds it).
 */
static void nohz_balancer_kick(s32 cpu, struct lab_rq *rq, u64 now, u64 *st)
{
	u64 next = READ_ONCE(nohz_next_balance);
	struct lab_rq *irq;
	s32 ilb;

	if ((s64)(now - next) < 0)
		return;
	if (rq_runnable(rq) < 2 && !(READ_ONCE(rq->offline) && rq_runnable(rq)) &&
	    llc_nr_busy(cpu) < 2)
		return;
	if (__sync_val_compare_and_swap(&nohz_next_balance, next, now + tick_ns) != next)
		return;
	ilb = find_new_ilb(cpu);
	if (ilb < 0 || !(irq = rq_get(ilb)) || READ_ONCE(irq->nohz_ilb))
		return;
	WRITE_ONCE(irq->nohz_ilb, 1);
	lab_count(st, LAB_ST_NOHZ_KICK);
	scx_bpf_kick_cpu(ilb, SCX_KICK_IDLE);
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
