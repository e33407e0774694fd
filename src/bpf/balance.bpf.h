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
 *  - can_migrate_task(): never a ghost, a running or dispatched task, one not allowed on the
 *    puller or migration-disabled; with PLACE_LAG not one that is ineligible on its queue
 *    (task_is_ineligible_on_dst_cpu()), and not a cache-hot one (task_hot(): ran within
 *    migration_cost_ns, or is the next buddy with CACHE_HOT_BUDDY) -- both relaxed after
 *    failed attempts, as the kernel does (cache_nice_tries = 1 for the LLC).
 *
 * A pulled task moves as the kernel's detach/attach do: dequeued without DEQUEUE_SLEEP (lag and,
 * with PLACE_REL_DEADLINE, relative deadline kept) and placed on the puller's queue. Unlike
 * attach_task(), no wakeup preemption check follows: the puller picks at its next decision.
 */

#define LAB_BALANCE_TICKS	16	/* sd->balance_interval * busy_factor, in ticks */
#define LAB_PULL_CANDIDATES	4
#define LAB_PULL_SCAN		16	/* queued entities looked at per attempt */

/* One pull attempt (BPF functions take at most five arguments). */
struct lab_pull {
	const struct lab_params *params;
	u64 *st;
	u64 now;
	s64 max_load;		/* the migrate_load rule's imbalance; < 0: no load rule */
	u32 failed;		/* nr_balance_failed: relaxes the eligibility and hotness rules */
	s32 dst, src;
	bool custody;		/* leave the pulled task in the scheduler's custody */
};

/* Runnable entities of a queue: queued minus ghosts (the kernel's h_nr_runnable). */
static __always_inline u32 rq_runnable(struct lab_rq *rq)
{
	u32 q = READ_ONCE(rq->cfs.nr_queued), d = READ_ONCE(rq->cfs.nr_delayed);

	return q > d ? q - d : 0;
}

/* The busiest other CPU of @cpu's LLC (or of any LLC when @any_llc): most runnable entities, at
 * least two (one running, one waiting). -1 when there is none. */
static __always_inline s32 find_busiest(s32 cpu, bool any_llc)
{
	u32 llc = topo.cpu_llc[cpu & (LAB_MAX_CPUS - 1)], best_nr = 1, i, nr = topo.nr_cpus;
	s32 best = -1;

	bpf_for(i, 0, nr) {
		struct lab_rq *rq;
		u32 r;

		if ((s32)i == cpu || (!any_llc && topo.cpu_llc[i & (LAB_MAX_CPUS - 1)] != llc))
			continue;
		rq = rq_get(i);
		if (!rq)
			continue;
		r = rq_runnable(rq);
		if (r > best_nr) {
			best_nr = r;
			best = i;
		}
	}
	return best;
}

/*
 * can_migrate_task()'s checks that need the source queue's lock: collect up to
 * LAB_PULL_CANDIDATES queued entities of @src, in deadline order, that may move.
 */
static u32 pull_candidates(struct lab_rq *rq, struct lab_pool *pool, const struct lab_pull *pl,
			   u32 *cands)
{
	const struct lab_params *params = pl->params;
	struct lab_cfs *cfs = &rq->cfs;
	u32 n, k = 0, i, failed = pl->failed;
	u64 now = pl->now, *st = pl->st;

	bpf_spin_lock(&rq->lock);
	n = rb_first(cfs, pool);
	bpf_for(i, 0, LAB_PULL_SCAN) {
		struct lab_se *se;

		if (!n || k >= LAB_PULL_CANDIDATES)
			break;
		se = SE(pool, n);
		if (se->delayed) {
			lab_count(st, LAB_ST_PULL_REFUSED_DELAYED);
		} else if (!se->custody || se->running) {
			lab_count(st, LAB_ST_PULL_REFUSED_RUNNING);
		} else if (sched_feat(params, PLACE_LAG) && !failed &&
			   !entity_eligible(cfs, pool, se)) {
			lab_count(st, LAB_ST_PULL_REFUSED_INELIGIBLE);
		} else if (failed <= 1 && params->migration_cost &&
			   ((now - se->last_ran) < params->migration_cost ||
			    (sched_feat(params, CACHE_HOT_BUDDY) && cfs->next == n))) {
			lab_count(st, LAB_ST_PULL_REFUSED_HOT);
		} else {
			cands[k & (LAB_PULL_CANDIDATES - 1)] = n;
			k++;
		}
		n = rb_next(pool, n);
	}
	bpf_spin_unlock(&rq->lock);
	return k;
}

/* detach_task(): take @n off @src if it is still a movable entity there. */
__noinline int lab_detach(u32 n, s32 src, u64 now)
{
	const struct lab_params *params = params_get();
	struct lab_pool *pool = pool_get();
	struct lab_rq *rq = rq_get(src);
	u64 *st = stats_row();
	struct lab_se *se;
	int ok = 0;

	if (!pool || !rq)
		return 0;
	se = SE(pool, n);
	bpf_spin_lock(&rq->lock);
	if (se->on_rq && se->cpu == src && se->custody && !se->running && !se->delayed) {
		rq_load_touch(rq, pool, now);
		dequeue_entity(&rq->cfs, pool, n, 0, params, st);
		se->custody = 0;
		se->cpu = -1;
		ok = 1;
	}
	bpf_spin_unlock(&rq->lock);
	return ok;
}

/*
 * Pull one task from @src to @dst. @max_load >= 0 applies the migrate_load rule (periodic
 * balance). Returns the task (a reference: release it) placed on @dst's queue, or NULL.
 */
static struct task_struct *pull_task(const struct lab_pull *pl)
{
	struct lab_pool *pool = pool_get();
	struct lab_rq *srq = rq_get(pl->src);
	u32 cands[LAB_PULL_CANDIDATES] = {}, nr, i, slot = 0;
	struct task_struct *t = NULL;
	s32 dst = pl->dst, src = pl->src;
	u64 *st = pl->st;

	if (!pool || !srq)
		return NULL;
	nr = pull_candidates(srq, pool, pl, cands);
	bpf_for(i, 0, LAB_PULL_CANDIDATES) {
		struct task_struct *c;

		if (i >= nr)
			break;
		c = slot_task(cands[i]);
		if (!c)
			continue;
		if (!bpf_cpumask_test_cpu(dst, c->cpus_ptr)) {
			lab_count(st, LAB_ST_PULL_REFUSED_AFFINITY);
		} else if (c->migration_disabled) {
			lab_count(st, LAB_ST_PULL_REFUSED_PINNED);
		} else if (pl->max_load >= 0 && (task_load(c) >> (pl->failed & 31)) > pl->max_load) {
			lab_count(st, LAB_ST_PULL_REFUSED_LOAD);
		} else if (lab_detach(cands[i], src, pl->now)) {
			t = c;
			slot = cands[i];
			break;
		}
		bpf_task_release(c);
	}
	if (!t)
		return NULL;
	/* attach_task(): placed on the puller's queue (no wakeup preemption check here); a task
	 * the puller does not dispatch right away goes back into the scheduler's custody. */
	join_queue(t, dst, false);
	if (pl->custody)
		lab_undispatch(slot, dst);
	return t;
}

/*
 * sched_balance_newidle(): @cpu found nothing to run. Returns a pulled task (a reference) for
 * the caller to dispatch, or NULL.
 */
static struct task_struct *newidle_balance(s32 cpu, struct lab_rq *rq,
					   const struct lab_params *params, u64 now, u64 *st)
{
	struct task_struct *t = NULL;
	s32 src;
	bool run;

	lab_count(st, LAB_ST_NEWIDLE);
	if (!rq->ni.stamp)
		newidle_init(&rq->ni, now);
	run = newidle_should_run(&rq->ni, bpf_get_prandom_u32(), sched_feat(params, NI_RANDOM));
	if (run) {
		src = find_busiest(cpu, false);
		if (src < 0)
			src = find_busiest(cpu, true);
		if (src >= 0) {
			struct lab_pull pl = { .params = params, .st = st, .now = now, .max_load = -1,
					       .dst = cpu, .src = src };

			t = pull_task(&pl);
		}
		if (t)
			lab_count(st, LAB_ST_PULL_NEWIDLE);
	} else {
		lab_count(st, LAB_ST_NEWIDLE_GATED);
	}
	newidle_account(&rq->ni, run, t != NULL, now, sched_feat(params, NI_RANDOM),
			sched_feat(params, NI_RATE));
	return t;
}

/*
 * The periodic balance, run from @cpu's tick: kick an idle CPU of the LLC when tasks wait here
 * (nohz idle balance), and every LAB_BALANCE_TICKS ticks pull from the busiest CPU of the LLC
 * when the load imbalance calls for it.
 */
static void periodic_balance(s32 cpu, struct lab_rq *rq, const struct lab_params *params,
			     u64 now, u64 *st)
{
	u32 llc = topo.cpu_llc[cpu & (LAB_MAX_CPUS - 1)] & (LAB_MAX_CPUS - 1);
	u32 size = topo.llc_size[llc], start = topo.llc_start[llc], i;
	s64 sum = 0, avg, busiest_load, this_load, imbalance;
	struct lab_cpu *pc = &lab_cpus[cpu & (LAB_MAX_CPUS - 1)];
	struct lab_pull pl = {};
	const struct cpumask *idle;
	struct task_struct *t;
	s32 src, kick = -1;

	/* nohz idle balance: tasks wait here while a CPU of the LLC idles. */
	if (rq_runnable(rq) >= 2) {
		idle = scx_bpf_get_idle_cpumask();
		bpf_for(i, 0, size) {
			s32 c = topo.llc_cpus[(start + i) & (LAB_MAX_CPUS - 1)];

			if (c != cpu && available_idle(c, idle)) {
				kick = c;
				break;
			}
		}
		scx_bpf_put_idle_cpumask(idle);
		if (kick >= 0) {
			lab_count(st, LAB_ST_NOHZ_KICK);
			scx_bpf_kick_cpu(kick, SCX_KICK_IDLE);
		}
	}

	if (++pc->balance_ticks < LAB_BALANCE_TICKS)
		return;
	pc->balance_ticks = 0;
	src = find_busiest(cpu, false);
	if (src < 0)
		return;
	bpf_for(i, 0, size)
		sum += cpu_load(topo.llc_cpus[(start + i) & (LAB_MAX_CPUS - 1)]);
	avg = size ? sum / size : 0;
	busiest_load = cpu_load(src);
	this_load = cpu_load(cpu);
	/* calculate_imbalance() for overloaded groups: move at most what brings both to the
	 * average. */
	imbalance = busiest_load - avg < avg - this_load ? busiest_load - avg : avg - this_load;
	if (imbalance <= 0 || rq_runnable(rq_get(src) ?: rq) <= rq_runnable(rq))
		return;
	pl.params = params;
	pl.st = st;
	pl.now = now;
	pl.max_load = imbalance;
	pl.failed = rq->nr_balance_failed;
	pl.dst = cpu;
	pl.src = src;
	pl.custody = true;
	t = pull_task(&pl);
	if (!t) {
		rq->nr_balance_failed++;
		return;
	}
	rq->nr_balance_failed = 0;
	lab_count(st, LAB_ST_PULL_PERIODIC);
	bpf_task_release(t);
}
