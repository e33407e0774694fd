/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Balancing: the kernel's load balancer does not run for sched_ext tasks, so the lab moves
 * entities between its own queues. This file has the pulls; sd_balance.bpf.h decides, domain by
 * domain, when and from where. Included by main.bpf.c.
 *
 *  - a domain balance's pull (periodic, idle or newly idle) (lab_pull_one()) takes queued entities of the source in deadline
 *    order under the rule of the imbalance's migration type;
 *  - can_migrate_task(), task_hot(), task_is_ineligible_on_dst_cpu() and the migrate_load rule are the pure functions of balance.h (tested on the host); the
 *    functions here gather their facts with kfuncs and under the source queue's lock.
 *
 * A pulled task moves as the kernel's detach/attach do: the source's running entity is charged
 * first (update_curr()), then the task is dequeued without DEQUEUE_SLEEP (lag and, with
 * PLACE_REL_DEADLINE, relative deadline kept) and placed on the puller's queue, where it counts
 * as cold until it runs (lab_se.migrated). Unlike attach_task(), no wakeup preemption check
 * follows: the puller picks at its next decision.
 */

#include "balance.h"

#define LAB_BALANCE_TICKS	16	/* release_balance()'s period, in ticks */
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

/* What can_migrate_task() reads during pull_candidates()' scan of a source queue, one set per
 * source CPU (used under its queue lock). In memory rather than on the stack: to the BPF
 * verifier the facts read back are unknown, where a task's flags on the stack were constants
 * that split the scan into a path per combination. */
struct lab_pull_scan {
	struct lab_lb_env env;
	struct lab_lb_task t;
};
struct lab_pull_scan lab_pull_scans[LAB_MAX_CPUS];

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
	struct lab_pull_scan *ps = &lab_pull_scans[rq->cpu & (LAB_MAX_CPUS - 1)];
	struct lab_cfs *cfs = &rq->cfs;
	u32 n, k, i, verdict;
	struct lab_lb_env env;

	lb_env_init(pl, &env);
	bpf_spin_lock(&rq->lock);
	ps->env = env;
	WRITE_ONCE(rq->pull_found, 0);
	n = rb_first(cfs, pool);
	bpf_for(i, 0, LAB_PULL_SCAN) {
		struct lab_lb_task *t = &ps->t;
		lab_se_t *se;

		k = READ_ONCE(rq->pull_found);
		if (!n || k >= LAB_PULL_CANDIDATES)
			break;
		se = SE(pool, n);
		__builtin_memset(t, 0, sizeof(*t));
		t->last_ran = se->last_ran;
		t->delayed = se->delayed;
		t->on_cpu = !se->custody || se->running;
		t->eligible = entity_eligible(cfs, pool, se);
		t->next_buddy = cfs->next == n;
		t->idle_policy = se->weight == WEIGHT_IDLEPRIO;
		t->migrated = se->migrated;
		t->allowed = 1;
		barrier();
		verdict = lab_can_migrate_task(&ps->env, t);
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
static __noinline struct task_struct *pull_task(const struct lab_pull *pl, u32 *slot)
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
		verdict = lab_can_migrate_affinity(task_migration_disabled(c),
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
static __noinline void attach_task(struct task_struct *p, s32 dst, u32 slot, bool custody)
{
	join_queue(p, dst, custody ? 0 : LAB_WK_PICKED);
	if (!custody)
		slot_ref_drop(slot);
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
