/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The cgroups of the cpu controller as group.h's groups: the kernel tells the scheduler of each
 * one (ops.cgroup_init, in pre-order at attach, then as they are created; ops.cgroup_exit), of
 * its cpu.weight and cpu.idle (ops.cgroup_set_weight / _set_idle), and of each task's moves
 * (ops.cgroup_move, with the task off its queue). A group has a slot of lab_tgs[] and a queue on
 * every possible CPU in the arena (allocated at its init). The root cgroup is group 0 and has no
 * queues: its tasks sit in the CPUs' queues at their own weight.
 *
 * A cgroup gets its own group unless it is deeper than LAB_GROUP_DEPTH, or the slots or the
 * arena are exhausted: then it counts as its parent (cgroup_flattened), and the kernel's mkdir
 * never fails because of the scheduler.
 */
#ifndef __LAB_CGROUP_BPF_H
#define __LAB_CGROUP_BPF_H

/* The groups; slot 0 is the root's (never used: tg_get(0) is NULL). */
struct lab_tg lab_tgs[LAB_MAX_TGS];
/* Each group's queues, one per possible CPU (arena pages). */
struct lab_gq __lab_arena *lab_tg_gq[LAB_MAX_TGS];
/* Groups in use; the online CPUs (tg_cpus()), set by user space before the attach and kept by
 * ops.cpu_online / ops.cpu_offline. */
u32 lab_tgs_used;
u32 lab_nr_cpus_online;

/* A cgroup's group index (0: the root, or a cgroup that counts as the root). */
struct {
	__uint(type, BPF_MAP_TYPE_CGRP_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, u32);
} lab_cgrp_tg SEC(".maps");

LAB_INLINE struct lab_tg *tg_get(u32 i)
{
	struct lab_tg *tg;

	if (!i || i >= LAB_MAX_TGS)
		return NULL;
	tg = &lab_tgs[i & (LAB_MAX_TGS - 1)];
	return READ_ONCE(tg->cgid) ? tg : NULL;
}

LAB_INLINE struct lab_gq *gq_get(u32 i, u32 cpu)
{
	struct lab_gq __lab_arena *q;

	if (!i || i >= LAB_MAX_TGS || cpu >= LAB_MAX_CPUS)
		return NULL;
	/* Name the arena: a program that reaches the queues must be associated with it. */
	asm volatile("" :: "r"(&lab_arena));
	q = lab_tg_gq[i & (LAB_MAX_TGS - 1)];
	return q ? (struct lab_gq *)&q[cpu] : NULL;
}

LAB_INLINE u32 tg_nr_cpus_online(void)
{
	return READ_ONCE(lab_nr_cpus_online);
}

/* group_walk()'s carried values, one set per CPU (used under that CPU's queue lock). */
struct lab_walk_carry lab_walk_carries[LAB_MAX_CPUS];

LAB_INLINE struct lab_walk_carry *walk_carry(u32 cpu)
{
	return &lab_walk_carries[cpu & (LAB_MAX_CPUS - 1)];
}

/* The arena pages that hold one group's queues. */
static __always_inline u32 gq_pages(void)
{
	return (u32)(((u64)topo.nr_cpus * sizeof(struct lab_gq) + LAB_PAGE_SIZE - 1) /
		     LAB_PAGE_SIZE);
}

/* @cgrp's group index (0 when it has none). */
static __always_inline u32 cgroup_tg(struct cgroup *cgrp)
{
	u32 *idx = cgrp ? bpf_cgrp_storage_get(&lab_cgrp_tg, cgrp, 0, 0) : NULL;

	return idx ? *idx : 0;
}

/* The group index of the cgroup with id @cgid (a cgroup known only through an untrusted pointer,
 * like ops.init_task's args->cgroup). */
static __always_inline u32 cgroup_id_tg(u64 cgid)
{
	struct cgroup *cgrp = bpf_cgroup_from_id(cgid);
	u32 idx;

	if (!cgrp)
		return 0;
	idx = cgroup_tg(cgrp);
	bpf_cgroup_release(cgrp);
	return idx;
}

/*
 * cpuset_num_cpus() on the v2 hierarchy: the CPUs of @cgrp's effective cpuset -- its own when
 * the cpuset controller is enabled for it, else its nearest ancestor's (cgroup_e_css()). 0 when
 * that is the root's, whose CPUs are the active ones (tg_cpus() then counts the online CPUs, kept
 * by ops.cpu_online / ops.cpu_offline), or when cpusets are not on the v2 hierarchy. @cgrp may be
 * trusted or not: every field is read with a probe.
 *
 * Debian's kernels keep a cpuset's masks off its struct (CONFIG_CPUMASK_OFFSTACK); the two
 * flavours below let CO-RE find the mask either way.
 */
struct cpuset___lab_ptr {
	struct cgroup_subsys_state css;
	struct cpumask *effective_cpus;
} __attribute__((preserve_access_index));

struct cpuset___lab_arr {
	struct cgroup_subsys_state css;
	struct cpumask effective_cpus[1];
} __attribute__((preserve_access_index));

#define LAB_CPUSET_MAX_LEVELS	64	/* ancestors looked at for a cpuset, the cgroup included */

static __always_inline u32 cpuset_num_cpus(struct cgroup *cgrp)
{
	struct cgroup_subsys_state *css = NULL;
	struct cgroup *c = cgrp;
	void *cs, *mask;
	u64 word, off;
	u32 i, id, words, nr = 0, level = 0;

	if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, cpuset_cgrp_id))
		return 0;
	id = bpf_core_enum_value(enum cgroup_subsys_id, cpuset_cgrp_id);
	off = bpf_core_field_offset(struct cgroup, subsys) + (u64)id * sizeof(void *);
	bpf_for(i, 0, LAB_CPUSET_MAX_LEVELS) {
		if (!c || bpf_probe_read_kernel(&css, sizeof(css), (void *)c + off))
			return 0;
		level = BPF_CORE_READ(c, level);
		if (css)
			break;
		c = BPF_CORE_READ(c, self.parent, cgroup);
	}
	if (!css || !level)
		return 0;
	cs = (void *)css - bpf_core_field_offset(struct cpuset___lab_ptr, css);
	if (bpf_core_field_exists(struct cpuset___lab_ptr, effective_cpus))
		mask = BPF_CORE_READ((struct cpuset___lab_ptr *)cs, effective_cpus);
	else
		mask = cs + bpf_core_field_offset(struct cpuset___lab_arr, effective_cpus);
	if (!mask)
		return 0;
	words = (topo.nr_cpus + 63) / 64;
	bpf_for(i, 0, words) {
		if (bpf_probe_read_kernel(&word, sizeof(word), mask + (u64)i * sizeof(word)))
			return 0;
		if ((i + 1) * 64 > topo.nr_cpus)
			word &= (1ULL << (topo.nr_cpus & 63)) - 1;
		nr += __builtin_popcountll(word);
	}
	return nr;
}

/* How long a group's copy of its cpuset's size serves before the tick reads it again. */
#define LAB_CPUSET_REFRESH_NS	(10ULL * 1000 * 1000)

/*
 * Group @idx's cpuset_num_cpus() read again, when @force or when its copy is older than
 * LAB_CPUSET_REFRESH_NS (the kernel reads the mask at each calc_group_shares()). Called on a
 * move into the group and at the tick of its running tasks.
 */
__noinline int lab_tg_cpus_refresh(u32 idx, u64 now, u32 force)
{
	struct lab_tg *tg = tg_get(idx);
	struct cgroup *cgrp;
	u32 nr;

	if (!tg || (!force && now - READ_ONCE(tg->nr_cpus_at) < LAB_CPUSET_REFRESH_NS))
		return 0;
	WRITE_ONCE(tg->nr_cpus_at, now);
	cgrp = bpf_cgroup_from_id(READ_ONCE(tg->cgid));
	if (!cgrp)
		return 0;
	nr = cpuset_num_cpus(cgrp);
	bpf_cgroup_release(cgrp);
	WRITE_ONCE(tg->nr_cpus, nr);
	return 0;
}

/*
 * ops.cgroup_init: a cgroup of the cpu controller, at attach (parents first) or when created. It
 * gets a group (sched_create_group() / alloc_fair_sched_group()) with the shares of its
 * cpu.weight (or of cpu.idle), and a zeroed queue on every CPU.
 */
s32 BPF_STRUCT_OPS_SLEEPABLE(lab_cgroup_init, struct cgroup *cgrp, struct scx_cgroup_init_args *args)
{
	u32 *slot, parent = 0, level = cgrp->level, idx = 0, i;
	struct lab_gq __lab_arena *q;
	struct cgroup *up;
	struct lab_tg *tg;
	bool idle = false;

	slot = bpf_cgrp_storage_get(&lab_cgrp_tg, cgrp, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!slot) {
		stat_inc(LAB_ST_CGROUP_FLATTENED);
		return 0;
	}
	*slot = 0;
	if (!level)
		return 0;
	if (level > 1 && (up = bpf_cgroup_ancestor(cgrp, level - 1))) {
		parent = cgroup_tg(up);
		bpf_cgroup_release(up);
	}
	if (level > LAB_GROUP_DEPTH) {
		*slot = parent;
		stat_inc(LAB_ST_CGROUP_FLATTENED);
		return 0;
	}
	bpf_for(i, 1, LAB_MAX_TGS) {
		if (!lab_tgs[i & (LAB_MAX_TGS - 1)].cgid) {
			idx = i;
			break;
		}
	}
	q = idx ? bpf_arena_alloc_pages(&lab_arena, NULL, gq_pages(), NUMA_NO_NODE, 0) : NULL;
	if (!q) {
		*slot = parent;
		stat_inc(LAB_ST_CGROUP_FLATTENED);
		return 0;
	}
	if (bpf_core_field_exists(args->sched_idle))
		idle = BPF_CORE_READ(args, sched_idle);
	tg = &lab_tgs[idx & (LAB_MAX_TGS - 1)];
	__builtin_memset(tg, 0, sizeof(*tg));
	tg->parent = parent;
	tg->level = level;
	tg->weight = args->weight;
	tg->idle = idle;
	tg->shares = idle ? LAB_IDLE_SHARES : lab_shares_from_cgroup(args->weight);
	tg->nr_cpus = cpuset_num_cpus(cgrp);
	tg->h_idle = idle || tg_h_idle(parent);
	lab_tg_gq[idx & (LAB_MAX_TGS - 1)] = q;
	WRITE_ONCE(tg->cgid, cgrp->kn->id);
	/* Its cpu.max, if the kernel passes it (6.17+). */
	if (bpf_core_field_exists(args->bw_quota_us))
		tg_set_cfs_bandwidth(idx, args->bw_period_us, args->bw_quota_us, args->bw_burst_us);
	__sync_fetch_and_add(&lab_tgs_used, 1);
	*slot = idx;
	stat_inc(LAB_ST_CGROUP_INIT);
	return 0;
}

/* ops.cgroup_exit: the cgroup is gone (no task is left in it): its group and queues go. */
void BPF_STRUCT_OPS_SLEEPABLE(lab_cgroup_exit, struct cgroup *cgrp)
{
	u32 idx = cgroup_tg(cgrp);
	struct lab_gq __lab_arena *q;
	struct lab_tg *tg = tg_get(idx);

	if (!tg || tg->cgid != cgrp->kn->id)
		return;
	stat_inc(LAB_ST_CGROUP_EXIT);
	if (tg->bw_quota) {
		tg->bw_quota = 0;
		__sync_fetch_and_sub(&lab_bw_groups, 1);
	}
	q = lab_tg_gq[idx & (LAB_MAX_TGS - 1)];
	lab_tg_gq[idx & (LAB_MAX_TGS - 1)] = NULL;
	WRITE_ONCE(tg->cgid, 0);
	__sync_fetch_and_sub(&lab_tgs_used, 1);
	if (q)
		bpf_arena_free_pages(&lab_arena, q, gq_pages());
}

/*
 * @n joins group @tg. A task is off its queue when the kernel moves it (sched_move_task()); one
 * that is not (kept for any path that does that) moves its own weight from its old group's
 * queues to the new one's at once and takes its new effective weight at its next pick or tick.
 */
__noinline int lab_regroup(u32 n, u32 tg)
{
	lab_pool_t *pool = pool_get();
	struct lab_rq *rq;
	lab_se_t *se;
	s32 cpu;

	if (!pool)
		return 0;
	se = SE(pool, n);
	cpu = se->cpu;
	if (!se->on_rq || cpu < 0 || !(rq = rq_get(cpu))) {
		se->tg = tg;
		return 0;
	}
	bpf_spin_lock(&rq->lock);
	if (se->on_rq && se->cpu == cpu && se->tg != tg) {
		group_account(se->tg, cpu, se_load_w(se), !se->delayed, false);
		group_account(tg, cpu, se_load_w(se), !se->delayed, true);
	}
	se->tg = tg;
	bpf_spin_unlock(&rq->lock);
	return 0;
}

/*
 * ops.cgroup_move: @p moves from @from to @to (sched_move_task(); the task is off its queue, or
 * asleep). A ghost is finalized first: its weight is still in its old group's queue. The next
 * enqueue counts it in the new group.
 */
void BPF_STRUCT_OPS(lab_cgroup_move, struct task_struct *p, struct cgroup *from, struct cgroup *to)
{
	lab_pool_t *pool = pool_get();
	struct task_ctx *tc = tctx_get(p);
	lab_se_t *se;

	if (!pool || !tc)
		return;
	stat_inc(LAB_ST_CGROUP_MOVE);
	se = SE(pool, tc->slot);
	if (se->on_rq && se->delayed)
		lab_leave(tc->slot, scx_bpf_now(), 0);
	lab_regroup(tc->slot, cgroup_tg(to));
	lab_tg_cpus_refresh(cgroup_tg(to), scx_bpf_now(), 1);
}

/* The group of @cgrp itself: NULL for a cgroup that counts as its ancestor (whose settings are
 * the ancestor's, not the cgroup's). */
static __always_inline struct lab_tg *tg_own(struct cgroup *cgrp)
{
	struct lab_tg *tg = tg_get(cgroup_tg(cgrp));

	return tg && tg->cgid == cgrp->kn->id ? tg : NULL;
}

/* ops.cgroup_set_weight: cpu.weight (sched_group_set_shares()). Differs: each CPU takes the new
 * shares at its next event there, not all at once. */
void BPF_STRUCT_OPS(lab_cgroup_set_weight, struct cgroup *cgrp, u32 weight)
{
	struct lab_tg *tg = tg_own(cgrp);

	if (!tg)
		return;
	tg->weight = weight;
	if (!tg->idle)
		WRITE_ONCE(tg->shares, lab_shares_from_cgroup(weight));
}

/*
 * Every group's h_idle again, from its ancestors' cpu.idle: after a write, a group's tasks join
 * queues as idle (h_nr_idle) exactly when it or an ancestor is idle. Differs: the kernel also
 * moves the tasks already queued (sched_group_set_idle()); here they count from their next join.
 */
static __always_inline void tgs_update_h_idle(void)
{
	u32 i, d, j, h;

	bpf_for(i, 1, LAB_MAX_TGS) {
		struct lab_tg *tg = tg_get(i);

		if (!tg)
			continue;
		h = 0;
		j = i;
		bpf_for(d, 0, LAB_GROUP_DEPTH) {
			struct lab_tg *up = tg_get(j);

			if (!up)
				break;
			if (READ_ONCE(up->idle)) {
				h = 1;
				break;
			}
			j = up->parent;
		}
		WRITE_ONCE(tg->h_idle, h);
	}
}

/* ops.cgroup_set_idle: cpu.idle (sched_group_set_idle(): an idle group weighs
 * WEIGHT_IDLEPRIO, and its tasks count in h_nr_idle; clearing it gives NICE_0_LOAD, whatever
 * cpu.weight said). */
void BPF_STRUCT_OPS(lab_cgroup_set_idle, struct cgroup *cgrp, bool idle)
{
	struct lab_tg *tg = tg_own(cgrp);

	if (!tg)
		return;
	tg->idle = idle;
	WRITE_ONCE(tg->shares, idle ? LAB_IDLE_SHARES : LAB_NICE_0_LOAD_HR);
	tgs_update_h_idle();
}

/* ops.cgroup_set_bandwidth: cpu.max (and cpu.max.burst) written (tg_set_cfs_bandwidth()). */
void BPF_STRUCT_OPS(lab_cgroup_set_bandwidth, struct cgroup *cgrp, u64 period_us, u64 quota_us,
		    u64 burst_us)
{
	if (tg_own(cgrp) && tg_set_cfs_bandwidth(cgroup_tg(cgrp), period_us, quota_us, burst_us))
		bw_release_all();
}

#endif /* __LAB_CGROUP_BPF_H */
