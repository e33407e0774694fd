/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __LAB_BALANCE_H
#define __LAB_BALANCE_H

#include "select.h"

/*
 * Balancing decisions over a snapshot (fair.c: can_migrate_task(), task_hot(),
 * task_is_ineligible_on_dst_cpu(), detach_tasks()'s migrate_load rule, and the weight of a
 * CPU for the balancer).
 *
 * balance.bpf.h reads the facts of the puller, the source queue and each candidate task and
 * asks the functions here whether and what to move; src/select_tests.rs pins them to the
 * kernel's rules. No BPF helper is called from this header.
 */

/* What can_migrate_task() knows of the balance attempt. */
struct lab_lb_env {
	u64 now;		/* the source queue's clock (rq_clock_task()) */
	u64 migration_cost;	/* sysctl_sched_migration_cost, ns; 0: nothing is hot */
	u32 nr_balance_failed;	/* sd->nr_balance_failed of the puller's domain */
	u32 dst_nr_queued;	/* the puller's queue: entities, ghosts included (rq->nr_running) */
	u8 smt;			/* source and puller are SMT siblings: the SMT domain balances */
	u8 place_lag;		/* PLACE_LAG */
	u8 cache_hot_buddy;	/* CACHE_HOT_BUDDY */
	u8 pad[5];
};

/* What can_migrate_task() knows of one candidate task. */
struct lab_lb_task {
	u64 last_ran;		/* when it last stopped running (the kernel's exec_start) */
	u8 delayed;		/* a ghost (sched_delayed) */
	u8 on_cpu;		/* running, or dispatched (task_on_cpu()) */
	u8 eligible;		/* eligible on its source queue */
	u8 next_buddy;		/* its queue's next buddy */
	u8 idle_policy;		/* SCHED_IDLE */
	u8 migrated;		/* moved queues and has not run since (exec_start = 0) */
	u8 allowed;		/* the puller is in its cpus_ptr */
	u8 migration_disabled;
};

/* can_migrate_task()'s verdicts: LAB_MIGRATE_OK or the rule that refused. */
#define LAB_MIGRATE_OK		0
#define LAB_MIGRATE_DELAYED	1
#define LAB_MIGRATE_PINNED	2	/* migration disabled */
#define LAB_MIGRATE_AFFINITY	3	/* the puller is not in its cpus_ptr */
#define LAB_MIGRATE_RUNNING	4
#define LAB_MIGRATE_INELIGIBLE	5	/* task_is_ineligible_on_dst_cpu() */
#define LAB_MIGRATE_HOT		6	/* task_hot() */

/* sd->cache_nice_tries: balance failures a hot task resists (topology.c: 0 for SMT, 1 for the
 * LLC and other non-NUMA domains). */
LAB_INLINE u32 lab_cache_nice_tries(bool smt)
{
	return smt ? 0 : 1;
}

/*
 * task_hot(): is moving the task likely to cost its cache? In the kernel's order:
 *  - a SCHED_IDLE task never is, nor is any task within the SMT domain (siblings share caches);
 *  - with CACHE_HOT_BUDDY, the next buddy is, when the puller has something to run;
 *  - migration_cost_ns 0 means nothing else is (the kernel's -1, "always hot", is outside the
 *    tunable's range here);
 *  - a task that moved queues and has not run since is not (the kernel zeroes exec_start on
 *    ENQUEUE_MIGRATED); otherwise it is if it ran within migration_cost_ns.
 * Differs: no core-scheduling cookie check, no NUMA locality (migrate_degrades_locality()).
 */
LAB_INLINE bool lab_task_hot(const struct lab_lb_env *env, const struct lab_lb_task *t)
{
	if (t->idle_policy || env->smt)
		return false;
	if (env->cache_hot_buddy && env->dst_nr_queued && t->next_buddy)
		return true;
	if (!env->migration_cost || t->migrated)
		return false;
	return (s64)(env->now - t->last_ran) < (s64)env->migration_cost;
}

/*
 * task_is_ineligible_on_dst_cpu(): with PLACE_LAG and something queued on the puller, a task
 * that is ineligible on its own queue would be placed behind on the puller too; prefer to leave
 * it. An empty puller takes it (there is no one there to compete with).
 */
LAB_INLINE bool lab_task_is_ineligible_on_dst_cpu(const struct lab_lb_env *env,
						  const struct lab_lb_task *t)
{
	return env->place_lag && env->dst_nr_queued && !t->eligible;
}

/* can_migrate_task()'s task-side rules: migration disabled, the puller outside cpus_ptr. */
LAB_INLINE u32 lab_can_migrate_affinity(bool migration_disabled, bool allowed)
{
	if (migration_disabled)
		return LAB_MIGRATE_PINNED;
	if (!allowed)
		return LAB_MIGRATE_AFFINITY;
	return LAB_MIGRATE_OK;
}

/*
 * can_migrate_task(), in the kernel's order: ghosts stay (the kernel moves them for migrate_load
 * only; the lab never does); the ineligibility rule holds until the domain has failed once;
 * then tasks not allowed on the puller (migration-disabled ones included, as the kernel's
 * cpus_ptr says for them) and running ones stay; a hot task stays until the domain has failed
 * more than cache_nice_tries times. Differs: no per-CPU kthread check (they are not ours), no
 * LBF_ACTIVE_LB, no throttled hierarchies.
 */
LAB_INLINE u32 lab_can_migrate_task(const struct lab_lb_env *env, const struct lab_lb_task *t)
{
	u32 verdict;

	if (t->delayed)
		return LAB_MIGRATE_DELAYED;
	if (!env->nr_balance_failed && lab_task_is_ineligible_on_dst_cpu(env, t))
		return LAB_MIGRATE_INELIGIBLE;
	verdict = lab_can_migrate_affinity(t->migration_disabled, t->allowed);
	if (verdict != LAB_MIGRATE_OK)
		return verdict;
	if (t->on_cpu)
		return LAB_MIGRATE_RUNNING;
	if (lab_task_hot(env, t) && env->nr_balance_failed <= lab_cache_nice_tries(env->smt))
		return LAB_MIGRATE_HOT;
	return LAB_MIGRATE_OK;
}

/*
 * detach_tasks()'s migrate_load rule: a task moves only if its load fits the imbalance left,
 * the load being halved for every failed balance (shr_bound()) so that a stuck imbalance
 * eventually moves something. With LB_MIN, a light task (load < 16) stays unless the domain
 * already failed. Loads are at least 1, as the kernel counts them.
 */
LAB_INLINE bool lab_migrate_load_fits(s64 load, u32 nr_balance_failed, s64 imbalance, bool lb_min)
{
	u32 shift = nr_balance_failed < 63 ? nr_balance_failed : 63;

	if (load < 1)
		load = 1;
	if (lb_min && load < 16 && !nr_balance_failed)
		return false;
	return (load >> shift) <= imbalance;
}

/* The runnable entities of a queue: queued minus ghosts (h_nr_runnable). */
LAB_INLINE u32 lab_nr_runnable(const struct lab_cpu_snap *c)
{
	return c->nr_queued > c->nr_delayed ? c->nr_queued - c->nr_delayed : 0;
}

/*
 * What the balancer weighs a CPU by: its runnable entities; a CPU that a higher class (RT,
 * deadline) holds, or one going offline, weighs more than any CPU that runs our tasks. The
 * kernel gets there through capacity: RT pressure shrinks the CPU's capacity
 * (update_cpu_capacity()), and find_busiest_queue() divides load by capacity, so a CPU whose
 * capacity is nearly gone and that still has fair tasks is the busiest by far. Here its tasks
 * wait behind the higher class's one whatever the other queues hold, and go first.
 */
#define LAB_NR_BUSY_RELEASED	(1U << 20)

LAB_INLINE u32 lab_nr_busy(const struct lab_cpu_snap *c)
{
	u32 n = lab_nr_runnable(c);

	return n ? n + (c->released ? LAB_NR_BUSY_RELEASED : 0) : 0;
}

/* The per-domain decisions, which use the rules above. */
#include "domains.h"

#endif /* __LAB_BALANCE_H */
