/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Group scheduling as Linux 7.3 does it ("sched/eevdf: Move to a single runqueue" and the
 * cgroup_mode series): every task sits in its CPU's one EEVDF queue, and the cgroup hierarchy
 * above it is kept for weights only. Each group has, on every CPU, a queue that sums what its
 * members queued there (cfs_rq->load.weight: tasks at their nice weight, child groups at their
 * shares) and keeps its own load averages; each group entity's weight on a CPU, its shares,
 * comes from the group's cpu.weight by the cgroup_mode in effect (calc_group_shares()); and a
 * task's EEVDF weight is its effective weight h_load, the fraction its own weight makes of its
 * group's queue times the fraction its group entity makes of the parent's, up to the root
 * (__calc_prop_weight()). V, lag, eligibility and deadlines then use h_load where fair.c used
 * the nice weight.
 *
 * Units are the kernel's full resolution (nice 0 = 1 << 20, scale_load()): MIN_SHARES, the
 * truncations and the clamps fall where they fall in fair.c. The EEVDF sums take
 * scale_load_down(h_load), as avg_vruntime_weight() does.
 *
 * Where the groups live is the caller's: tg_get() and gq_get() (below for the host tests; the
 * BPF scheduler's in cgroup.bpf.h) map a group index (0 = the root, which has no queues of its
 * own: rq->cfs is its queue) to the group and to its queue on a CPU. All of a CPU's group queues
 * change under that CPU's queue lock; the group-wide sums are atomic.
 *
 * Differs (see README, "Groups"): the group queues' load averages accumulate their own weight
 * over time (__update_load_avg_cfs_rq()) without the jumps that attaching and detaching a
 * migrating member's history make; an idle CPU's contribution to the group-wide sums decays
 * only at its next event there; shares changed by a cpu.weight write reach each CPU at its next
 * event there (fair.c walks every CPU at once); the root queue's own load averages count member
 * tasks at their nice weight, not their groups' shares (cpu_load() and task_h_load() follow).
 */
#ifndef __LAB_GROUP_H
#define __LAB_GROUP_H

#include "pelt.h"

#define LAB_SCHED_FIXEDPOINT_SHIFT	10
#define LAB_NICE_0_LOAD_HR	(1ULL << 20)	/* NICE_0_LOAD at full resolution */
#define LAB_MIN_SHARES		2ULL		/* MIN_SHARES (full resolution) */
#define LAB_MAX_SHARES		(1ULL << 28)	/* scale_load(MAX_SHARES) */
#define LAB_WEIGHT_NICE_MIN20	88761ULL	/* sched_prio_to_weight[0]: calc_max_shares()' cap */
#define LAB_CGROUP_WEIGHT_DFL	100		/* CGROUP_WEIGHT_DFL */

/* How deep the lab follows a hierarchy: a deeper cgroup counts as its ancestor at this depth. */
#define LAB_GROUP_DEPTH		8

/* A task group (struct task_group): what is the same on every CPU. */
struct lab_tg {
	u64 cgid;		/* the cgroup's id (0: the slot is free) */
	u64 shares;		/* tg->shares, full resolution (cpu.weight 100 = 1 << 20) */
	s64 load_avg;		/* tg->load_avg: the queues' contributions, summed over the CPUs */
	s64 runnable_avg;	/* tg->runnable_avg (7.3): the same for the runnable averages */
	u32 parent;		/* the parent group's index, 0 = the root */
	u32 level;		/* 1 for a child of the root */
	u32 idle;		/* cpu.idle */
	u32 weight;		/* cpu.weight as written (1..10000), for display */
	/* cpu.max (bandwidth.h; struct cfs_bandwidth) */
	u64 bw_quota;		/* ns per period; 0: no limit (RUNTIME_INF) */
	u64 bw_period;		/* ns */
	u64 bw_burst;		/* ns the pool may hold above the quota */
	s64 bw_runtime;		/* cfs_b->runtime: the pool, >= 0 */
	u32 bw_idle;		/* cfs_b->idle: no runtime taken since the last period turn-over */
	u32 bw_gen;		/* bumped by each cpu.max write: every queue starts afresh */
	u64 bw_nr_periods;	/* cpu.stat nr_periods: turn-overs with the group active */
	u64 bw_nr_throttled;	/* cpu.stat nr_throttled: queues throttled */
	s64 bw_throttled_now;	/* queues throttled at present */
	/* cpuset_num_cpus(): the CPUs of the group's effective cpuset; 0: no cpuset of its own on
	 * the v2 hierarchy (the root's, whose CPUs are the online ones) */
	u32 nr_cpus;
	u32 h_idle;		/* cpu.idle set here or on an ancestor: its tasks count in h_nr_idle */
	u64 nr_cpus_at;		/* when nr_cpus was last read (ns) */
};

/* A group's queue on one CPU (the group's cfs_rq there), and its entity in the parent's. */
struct lab_gq {
	u64 load_weight;	/* cfs_rq->load.weight, full resolution: its queued children, ghosts
				 * included; non-zero exactly while the group entity is queued */
	u64 se_weight;		/* the group entity's weight here (its shares): its last while empty */
	u32 h_nr_runnable;	/* member tasks queued here or below, ghosts not counted */
	u32 pad;
	struct lab_sched_avg avg;	/* the queue's own load averages */
	s64 tg_load_avg_contrib;	/* what this CPU last added to tg->load_avg */
	s64 tg_runnable_avg_contrib;	/* ... and to tg->runnable_avg */
	u64 last_update_tg_load_avg;	/* when it last did (ns) */
	s64 runtime_remaining;	/* cfs_rq->runtime_remaining (bandwidth.h) */
	u32 throttled;		/* cfs_rq->throttled */
	u32 bw_gen;		/* the group's bw_gen this queue's runtime belongs to */
};

/*
 * What a walk up the groups (group_walk()) carries from one level to the next: the effective
 * weight so far, the child entity's old and new weight and what happens to it. It goes through
 * memory at each level (walk_carry(cpu), the caller's, used under @cpu's queue lock). To the BPF
 * verifier a value read back from memory is unknown: it then checks a level once, instead of
 * once for every combination of the constants that the levels below left in registers (a branch
 * it decides on a constant makes it track that constant exactly).
 */
struct lab_walk_carry {
	u64 h;
	u64 w_old;
	u64 w_new;
	u32 child;
	u32 pad;
};

#ifdef LAB_HOST
#define LAB_HOST_TGS		16
#define LAB_HOST_CPUS		4
extern struct lab_tg lab_host_tg[LAB_HOST_TGS];
extern struct lab_gq lab_host_gq[LAB_HOST_TGS][LAB_HOST_CPUS];
extern u32 lab_host_nr_cpus_online;

LAB_INLINE struct lab_tg *tg_get(u32 i)
{
	return i && i < LAB_HOST_TGS && lab_host_tg[i].cgid ? &lab_host_tg[i] : NULL;
}

LAB_INLINE struct lab_gq *gq_get(u32 i, u32 cpu)
{
	return i && i < LAB_HOST_TGS && cpu < LAB_HOST_CPUS ? &lab_host_gq[i][cpu] : NULL;
}

LAB_INLINE u32 tg_nr_cpus_online(void)
{
	return lab_host_nr_cpus_online;
}

LAB_INLINE struct lab_walk_carry *walk_carry(u32 cpu)
{
	static struct lab_walk_carry carry[LAB_HOST_CPUS];

	return &carry[cpu % LAB_HOST_CPUS];
}
#else
/* cgroup.bpf.h defines them. */
LAB_INLINE struct lab_tg *tg_get(u32 i);
LAB_INLINE struct lab_gq *gq_get(u32 i, u32 cpu);
LAB_INLINE u32 tg_nr_cpus_online(void);
LAB_INLINE struct lab_walk_carry *walk_carry(u32 cpu);
#endif

/* Whether group @i's tasks count as idle for h_nr_idle: cpu.idle on it or on an ancestor. */
LAB_INLINE bool tg_h_idle(u32 i)
{
	struct lab_tg *tg = tg_get(i);

	return tg && READ_ONCE(tg->h_idle);
}

/* scale_load() / scale_load_down() on 64-bit. */
LAB_INLINE u64 lab_scale_load(u64 w)
{
	return w << LAB_SCHED_FIXEDPOINT_SHIFT;
}

LAB_INLINE u64 lab_scale_load_down(u64 w)
{
	u64 d = w >> LAB_SCHED_FIXEDPOINT_SHIFT;

	return w ? (d > 2 ? d : 2) : 0;
}

/* sched_weight_from_cgroup(): tg->shares for cpu.weight @w (1..10000, 100 = nice 0), as
 * sched_group_set_shares() clamps it. */
LAB_INLINE u64 lab_shares_from_cgroup(u32 w)
{
	u64 s = lab_scale_load(((u64)w * 1024 + LAB_CGROUP_WEIGHT_DFL / 2) / LAB_CGROUP_WEIGHT_DFL);

	if (s < lab_scale_load(LAB_MIN_SHARES))
		return lab_scale_load(LAB_MIN_SHARES);
	return s > LAB_MAX_SHARES ? LAB_MAX_SHARES : s;
}

/* The shares of an idle group (sched_group_set_idle(): scale_load(WEIGHT_IDLEPRIO)); clearing
 * cpu.idle sets NICE_0_LOAD, whatever cpu.weight was. */
#define LAB_IDLE_SHARES		(3ULL << LAB_SCHED_FIXEDPOINT_SHIFT)

/* tg_tasks() (7.3): the group's runnable tasks, averaged over time and over its CPUs; >= 1. */
LAB_INLINE s64 tg_tasks(const struct lab_tg *tg)
{
	s64 nr = READ_ONCE(tg->runnable_avg) >> LAB_SCHED_CAPACITY_SHIFT;

	return nr > 1 ? nr : 1;
}

/* tg_cpus() (7.3): the CPUs of the group's effective cpuset, else the online CPUs; >= 1. */
LAB_INLINE s64 tg_cpus(const struct lab_tg *tg)
{
	u32 nr = READ_ONCE(tg->nr_cpus);

	if (!nr)
		nr = tg_nr_cpus_online();

	return nr ? nr : 1;
}

/*
 * __calc_smp_shares(): the share of @tg_shares that the group's load on this CPU makes of its
 * load everywhere, clamped to [MIN_SHARES, @shares_max] (the upper bound tested first, as
 * clamp_t() does). The load here is the larger of the queue's weight and its load average; the
 * group's is its tg->load_avg with this CPU's stale contribution replaced by that load.
 */
LAB_INLINE u64 calc_smp_shares(const struct lab_tg *tg, const struct lab_gq *gq, s64 tg_shares,
			       s64 shares_max)
{
	s64 load = (s64)lab_scale_load_down(gq->load_weight), tg_weight, shares;

	if ((s64)gq->avg.load_avg > load)
		load = (s64)gq->avg.load_avg;
	tg_weight = READ_ONCE(tg->load_avg) - gq->tg_load_avg_contrib + load;
	shares = tg_shares * load;
	if (tg_weight)
		shares /= tg_weight;
	if (shares >= shares_max)
		return (u64)shares_max;
	return shares <= (s64)LAB_MIN_SHARES ? LAB_MIN_SHARES : (u64)shares;
}

/*
 * calc_group_shares() under each cgroup_mode: the group entity's weight on this CPU.
 *   up      tg->shares on every CPU
 *   smp     the load-proportional part of tg->shares (7.2 and earlier)
 *   concur  the same of nr * tg->shares, nr = min(tg_tasks(), tg_cpus()) (7.3's default)
 *   max     the same of tg_cpus() * tg->shares, at most a nice -20 task's weight
 *   tasks   the same of tg_tasks() * tg->shares
 */
LAB_INLINE u64 calc_group_shares(u32 mode, const struct lab_tg *tg, const struct lab_gq *gq)
{
	s64 s = (s64)READ_ONCE(tg->shares), nr, tg_shares, shares_max;

	if (mode == LAB_CGROUP_UP)
		return (u64)s;
	if (mode == LAB_CGROUP_MAX) {
		tg_shares = s * tg_cpus(tg);
		shares_max = (s64)lab_scale_load(LAB_WEIGHT_NICE_MIN20);
	} else {
		nr = 1;
		if (mode == LAB_CGROUP_TASKS || mode == LAB_CGROUP_CONCUR)
			nr = tg_tasks(tg);
		if (mode == LAB_CGROUP_CONCUR && nr > tg_cpus(tg))
			nr = tg_cpus(tg);
		tg_shares = shares_max = nr * s;
	}
	return calc_smp_shares(tg, gq, tg_shares, shares_max);
}

/* __update_load_avg_cfs_rq() of a group's queue: its queued weight and its runnable count.
 * (Group utilisation is not kept: no decision reads it.) */
LAB_INLINE void update_gq_load_avg(u64 now, struct lab_gq *gq)
{
	if (!gq->avg.last_update_time) {
		gq->avg.last_update_time = now;
		return;
	}
	if (update_load_sum(now, &gq->avg, lab_scale_load_down(gq->load_weight), gq->h_nr_runnable,
			    0))
		update_load_avg_sa(&gq->avg, 1);
}

LAB_INLINE s64 lab_abs_s64(s64 x)
{
	return x < 0 ? -x : x;
}

/*
 * update_tg_load_avg(): bring this CPU's part of the group-wide sums up to date -- at most once
 * a millisecond, and only when either average moved by more than 1/64 of what was added last.
 */
LAB_INLINE bool update_tg_load_avg(struct lab_tg *tg, struct lab_gq *gq, u64 now)
{
	s64 dl, dr;

	if (now - gq->last_update_tg_load_avg < 1000000ULL)
		return false;
	dl = (s64)gq->avg.load_avg - gq->tg_load_avg_contrib;
	dr = (s64)gq->avg.runnable_avg - gq->tg_runnable_avg_contrib;
	if (lab_abs_s64(dl) <= gq->tg_load_avg_contrib / 64 &&
	    lab_abs_s64(dr) <= gq->tg_runnable_avg_contrib / 64)
		return false;
	lab_atomic_add(&tg->load_avg, dl);
	lab_atomic_add(&tg->runnable_avg, dr);
	gq->tg_load_avg_contrib = (s64)gq->avg.load_avg;
	gq->tg_runnable_avg_contrib = (s64)gq->avg.runnable_avg;
	gq->last_update_tg_load_avg = now;
	return true;
}

/* __calc_prop_weight(): @weight scaled by the entity's fraction of its queue (of NICE_0_LOAD at
 * the top level), at least MIN_SHARES. */
LAB_INLINE u64 calc_prop_weight(u64 weight, u64 se_weight, u64 queue_weight)
{
	weight = queue_weight ? weight * se_weight / queue_weight : weight;
	return weight > LAB_MIN_SHARES ? weight : LAB_MIN_SHARES;
}

/* What a walk up a task's groups does (enqueue_hierarchy(), dequeue_hierarchy(),
 * entity_tick(), set_next_entity()). */
#define LAB_GROUP_ENQUEUE	1	/* the task joins: its weight comes into its group's queue */
#define LAB_GROUP_DEQUEUE	2	/* the task leaves */
#define LAB_GROUP_TICK		3	/* averages and shares brought up to date (entity_tick()) */
#define LAB_GROUP_FOLD		4	/* the effective weight only (set_next_entity()) */

/* What happens to the child entity (the task, then each group entity) in a level's queue. */
#define LAB_CHILD_STAYS		0
#define LAB_CHILD_JOINS		1
#define LAB_CHILD_LEAVES	2

/*
 * One walk from the task's group up to the root on @cpu for @op, under @cpu's queue lock.
 * Returns the task's effective weight h_load (full resolution) as the walk leaves the groups
 * (0 after a dequeue). @load_w: the task's own weight (1024 = nice 0); @load_w_old: what it was
 * (a nice change of a queued task, for LAB_GROUP_TICK; otherwise the same); @runnable: for an
 * enqueue or a dequeue, whether the task counts in h_nr_runnable (a ghost does not).
 *
 * At each level the group's queue first brings its averages and its part of the group-wide sums
 * up to date (update_load_avg() with UPDATE_TG); the child joins, leaves or is reweighted there
 * (account_entity_enqueue() / _dequeue(), reweight_entity()); the group entity's shares are
 * computed from the queue as it now is (update_cfs_group(), which gives an emptied queue's
 * entity its last weight); and the child's fraction of the queue scales the effective weight.
 * The group entity then joins its parent's queue when its own queue was empty, leaves it when
 * its queue emptied, and is reweighted there otherwise.
 */
LAB_INLINE u64 group_walk(u32 tg_idx, u32 cpu, u32 load_w_old, u32 load_w, bool runnable, int op,
			  u32 mode, u64 now)
{
	struct lab_walk_carry *c = walk_carry(cpu);
	u64 h, w_old, w_new = lab_scale_load(load_w);
	u32 idx = tg_idx, i, child;

	if (!tg_idx)
		return op == LAB_GROUP_DEQUEUE ? 0 : w_new;
	WRITE_ONCE(c->h, LAB_NICE_0_LOAD_HR);
	WRITE_ONCE(c->w_old, lab_scale_load(load_w_old));
	WRITE_ONCE(c->w_new, w_new);
	WRITE_ONCE(c->child, op == LAB_GROUP_ENQUEUE ? LAB_CHILD_JOINS :
			     op == LAB_GROUP_DEQUEUE ? LAB_CHILD_LEAVES : LAB_CHILD_STAYS);
	lab_for(i, 0, LAB_GROUP_DEPTH) {
		struct lab_tg *tg = tg_get(idx);
		struct lab_gq *gq = gq_get(idx, cpu);
		bool was_queued;
		u64 shares;

		if (!tg || !gq)
			break;
		h = READ_ONCE(c->h);
		w_old = READ_ONCE(c->w_old);
		w_new = READ_ONCE(c->w_new);
		child = READ_ONCE(c->child);
		was_queued = gq->load_weight != 0;
		if (op != LAB_GROUP_FOLD) {
			update_gq_load_avg(now, gq);
			update_tg_load_avg(tg, gq, now);
		}
		if (child == LAB_CHILD_JOINS)
			gq->load_weight += w_new;
		else if (child == LAB_CHILD_LEAVES)
			gq->load_weight = lab_sub_positive(gq->load_weight, w_old);
		else
			gq->load_weight = lab_sub_positive(gq->load_weight, w_old) + w_new;
		if (runnable && op == LAB_GROUP_ENQUEUE)
			gq->h_nr_runnable++;
		else if (runnable && op == LAB_GROUP_DEQUEUE && gq->h_nr_runnable)
			gq->h_nr_runnable--;
		if (op != LAB_GROUP_DEQUEUE)
			h = calc_prop_weight(h, w_new, gq->load_weight);

		/* update_cfs_group() of this group's entity, then what it is to its parent. */
		shares = gq->se_weight;
		if ((gq->load_weight && op != LAB_GROUP_FOLD) || !shares)
			shares = calc_group_shares(mode, tg, gq);
		w_old = gq->se_weight;
		if (!was_queued && gq->load_weight) {
			child = LAB_CHILD_JOINS;
		} else if (was_queued && !gq->load_weight) {
			child = LAB_CHILD_LEAVES;
			shares = w_old;	/* it leaves with the weight it had */
		} else {
			child = LAB_CHILD_STAYS;
		}
		gq->se_weight = shares;
		WRITE_ONCE(c->h, h);
		WRITE_ONCE(c->w_old, w_old);
		WRITE_ONCE(c->w_new, shares);
		WRITE_ONCE(c->child, child);
		idx = tg->parent;
		if (!idx)
			break;
	}
	if (op == LAB_GROUP_DEQUEUE)
		return 0;
	/* The top-level group entity's fraction of NICE_0_LOAD. */
	return calc_prop_weight(READ_ONCE(c->h), READ_ONCE(c->w_new), LAB_NICE_0_LOAD_HR);
}

/*
 * The count of runnable member tasks along the task's groups on @cpu when it becomes a ghost
 * (@delta -1: set_delayed()) or a ghost wakes on its queue (+1: clear_delayed()); the ghost's
 * weight stays in the queues meanwhile.
 */
LAB_INLINE void group_runnable_delta(u32 tg_idx, u32 cpu, int delta)
{
	u32 idx = tg_idx, i;

	lab_for(i, 0, LAB_GROUP_DEPTH) {
		struct lab_tg *tg = tg_get(idx);
		struct lab_gq *gq = gq_get(idx, cpu);

		if (!tg || !gq)
			break;
		if (delta > 0)
			gq->h_nr_runnable++;
		else if (gq->h_nr_runnable)
			gq->h_nr_runnable--;
		idx = tg->parent;
		if (!idx)
			break;
	}
}

/*
 * The effective weight of a task of group @tg_idx with weight @load_w on @cpu as its groups'
 * queues stand (set_next_task_fair()'s fold: nothing is updated). A group entity that has never
 * been weighed counts at its group's shares.
 */
LAB_INLINE u64 group_fold(u32 tg_idx, u32 cpu, u32 load_w)
{
	u64 h = LAB_NICE_0_LOAD_HR, w = lab_scale_load(load_w);
	u32 idx = tg_idx, i;

	if (!tg_idx)
		return w;
	lab_for(i, 0, LAB_GROUP_DEPTH) {
		struct lab_tg *tg = tg_get(idx);
		struct lab_gq *gq = gq_get(idx, cpu);

		if (!tg || !gq)
			break;
		h = calc_prop_weight(h, w, gq->load_weight);
		w = gq->se_weight ? gq->se_weight : READ_ONCE(tg->shares);
		idx = tg->parent;
		if (!idx)
			break;
	}
	return calc_prop_weight(h, w, LAB_NICE_0_LOAD_HR);
}

/*
 * The light form of a walk, for what changes a group queue's weight without a recomputation:
 * @w (the task's own weight) joins (@join) or leaves its group's queue on @cpu and, where that
 * queue empties or stops being empty, the group entity leaves or joins its parent's with the
 * weight it last had; the runnable counts follow on every level. The queues' averages, the
 * group-wide sums and the shares are brought up to date at the next full walk on this CPU (an
 * enqueue, a pick, a tick). A dequeue takes this path (fair.c's dequeue_hierarchy() does the
 * full one), so that the many paths that dequeue -- a ghost finalized by a pick among them --
 * stay cheap for the BPF verifier.
 */
LAB_INLINE void group_account(u32 tg_idx, u32 cpu, u32 load_w, bool runnable, bool join)
{
	u64 w = lab_scale_load(load_w);
	bool moves = true;
	u32 idx = tg_idx, i;

	lab_for(i, 0, LAB_GROUP_DEPTH) {
		struct lab_tg *tg = tg_get(idx);
		struct lab_gq *gq = gq_get(idx, cpu);
		bool was_queued;

		if (!tg || !gq)
			break;
		was_queued = gq->load_weight != 0;
		if (moves)
			gq->load_weight = join ? gq->load_weight + w :
						 lab_sub_positive(gq->load_weight, w);
		if (runnable && join)
			gq->h_nr_runnable++;
		else if (runnable && gq->h_nr_runnable)
			gq->h_nr_runnable--;
		/* Its entity moves in its parent only when the queue starts or stops being empty. */
		moves = moves && was_queued != (gq->load_weight != 0);
		if (moves && !gq->se_weight)
			gq->se_weight = READ_ONCE(tg->shares);
		w = gq->se_weight;
		idx = tg->parent;
		if (!idx)
			break;
	}
}

#endif /* __LAB_GROUP_H */
