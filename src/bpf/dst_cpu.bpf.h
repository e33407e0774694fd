/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where a new task starts: sched_balance_find_dst_cpu(), the slow path of select_task_rq_fair()
 * for a fork. From the forking CPU's top domain down, each level compares its groups as
 * update_sg_wakeup_stats() sees them and picks the idlest (sched_balance_find_dst_group()); when
 * that is not the forking CPU's own group, the task moves to a CPU of it
 * (sched_balance_find_dst_group_cpu()) and the descent goes on from there one level down. The
 * decisions are domains.h's (host-tested); the CPUs are read as sd_balance.bpf.h reads them for a
 * balance. Included by main.bpf.c after sd_balance.bpf.h; the CPUs the task may use are in the
 * scratch that select_task_rq_fair() filled (select.bpf.h).
 *
 * The descent starts at the highest level that it reaches through levels flagged
 * SD_BALANCE_FORK (select_task_rq_fair()'s walk up, which stops at the first without it): a NUMA
 * level beyond node_reclaim_distance has not got it (topology.rs), and a fork stays on its node.
 *
 * Differs: among idle CPUs the one that went idle last wins, as when no idle states are known
 * (the lab cannot read their exit latencies); no core-scheduling cookies, no preferred NUMA node
 * (a new task has none).
 */
#ifndef __LAB_DST_CPU_BPF_H
#define __LAB_DST_CPU_BPF_H

static __always_inline bool dst_allowed(struct lab_dst_scratch *sc, s32 cpu)
{
	return (sc->allowed[((u32)cpu / 64) & (LAB_DST_WORDS - 1)] >> (cpu & 63)) & 1;
}

/* One group's end in lab_find_dst_group_at(): a global subprogram, so that the verifier checks the
 * decisions once rather than on every pass of the walk. */
__noinline int lab_dst_group_end(u32 level, u32 local, u32 allowed)
{
	struct lab_dst_scratch *sc = dst_scratch_get();

	if (!sc)
		return 0;
	lb_sd(level, LAB_CPU_NOT_IDLE, &sc->sd);
	lab_dst_group_done(&sc->sd, &sc->g, &sc->cur, local, allowed);
	return 0;
}

/*
 * Mirrors sched_balance_find_dst_group() in @this_cpu's domain at @level: every group with a CPU
 * the task may use, counted as update_sg_wakeup_stats() counts it (offline CPUs left out).
 * Returns whether the task goes to the idlest group, which the scratch's g.idlest names (its
 * first position in cpu_order[] and its size).
 */
__noinline int lab_find_dst_group_at(s32 this_cpu, u32 level)
{
	u32 l = level & (LAB_MAX_LEVELS - 1), d = this_cpu & (LAB_MAX_CPUS - 1);
	u32 start = topo.lvl_start[l][d], size = topo.lvl_size[l][d];
	u32 dpos = topo.cpu_order_pos[d], i;
	struct lab_dst_scratch *sc = dst_scratch_get();
	const struct cpumask *idle;
	bool util_est;
	u64 now;

	if (!sc)
		return 0;
	util_est = sched_feat(params_get(), UTIL_EST);
	now = scx_bpf_now();
	lab_dst_group_init(&sc->g);
	WRITE_ONCE(sc->gend, 0);
	WRITE_ONCE(sc->local, 0);
	WRITE_ONCE(sc->nallowed, 0);
	idle = scx_bpf_get_idle_cpumask();
	bpf_for(i, 0, size) {
		u32 pos = start + i, gstart, gsize, gflags;
		s32 c = topo.cpu_order[pos & (LAB_MAX_CPUS - 1)];

		if (pos >= READ_ONCE(sc->gend)) {
			gflags = lb_group_of(c, l, &gstart, &gsize);
			WRITE_ONCE(sc->gend, gstart + gsize);
			WRITE_ONCE(sc->local, dpos >= gstart && dpos < gstart + gsize);
			WRITE_ONCE(sc->nallowed, 0);
			lab_sg_init(&sc->cur, gflags, (s32)gstart, gsize);
		}
		if (!cpu_offline(c)) {
			lb_cpu_read(c, idle, util_est, now, &sc->c);
			lab_sg_add_cpu(&sc->cur, &sc->c);
			if (dst_allowed(sc, c))
				WRITE_ONCE(sc->nallowed, READ_ONCE(sc->nallowed) + 1);
		}
		if (pos + 1 >= READ_ONCE(sc->gend) && READ_ONCE(sc->nallowed))
			lab_dst_group_end(l, READ_ONCE(sc->local), READ_ONCE(sc->nallowed));
	}
	scx_bpf_put_idle_cpumask(idle);
	lb_sd(l, LAB_CPU_NOT_IDLE, &sc->sd);
	return lab_find_dst_group(&sc->sd, &sc->g);
}

/*
 * Mirrors sched_balance_find_dst_group_cpu() for the group at positions @start, @size of
 * cpu_order[]: a CPU running only idle entities, else the idle CPU that went idle last, else the
 * least loaded; @this_cpu when none of the CPUs the task may use qualifies.
 */
__noinline s32 lab_find_dst_group_cpu(s32 this_cpu, u32 start, u32 size)
{
	struct lab_dst_scratch *sc = dst_scratch_get();
	const struct cpumask *idle;
	u32 i;

	if (size == 1)
		return topo.cpu_order[start & (LAB_MAX_CPUS - 1)];
	if (!sc)
		return this_cpu;
	lab_dst_cpu_init(&sc->best, this_cpu);
	idle = scx_bpf_get_idle_cpumask();
	bpf_for(i, 0, size) {
		s32 cpu = topo.cpu_order[(start + i) & (LAB_MAX_CPUS - 1)];
		struct lab_rq *rq = rq_get(cpu);
		struct lab_cpu_snap *c = &sc->snap;

		if (!rq || !dst_allowed(sc, cpu))
			continue;
		/* what sched_idle_cpu() and available_idle_cpu() read (lab_cpu_snap_read()'s) */
		c->nr_queued = READ_ONCE(rq->cfs.nr_queued);
		c->all_idle = READ_ONCE(rq->cfs.nr_idle) >= c->nr_queued;
		c->weight = READ_ONCE(rq->cfs.load_weight);
		c->idle = bpf_cpumask_test_cpu(cpu, idle);
		if (lab_dst_cpu_add(&sc->best, cpu, lab_sched_idle_rq(c), lab_available_idle(c),
				    READ_ONCE(rq->idle_stamp), READ_ONCE(rq->cfs.avg.load_avg)))
			break;
	}
	scx_bpf_put_idle_cpumask(idle);
	return lab_dst_cpu_result(&sc->best);
}

/*
 * Mirrors sched_balance_find_dst_cpu() from @this_cpu (the forking one) and its highest domain
 * flagged SD_BALANCE_FORK: at each level, lowest last, the idlest group and a CPU in it; the next
 * level down is that CPU's. Returns the CPU, @this_cpu when no level moved the task (the caller
 * checks that it may run there).
 */
__noinline s32 lab_find_dst_cpu(s32 this_cpu)
{
	u32 nr = topo.fork_levels, i;
	s32 cpu = this_cpu;
	struct lab_dst_scratch *sc;
	u64 *st = stats_row();

	if (this_cpu < 0 || this_cpu >= LAB_MAX_CPUS)
		return -1;
	/* The walk up from the lowest domain keeps the last one with the flag, and stops at the
	 * first without it (a fork wants no affinity): topo.fork_levels, counted at load. */
	if (nr < topo.nr_levels)
		stat_inc(LAB_ST_FORK_NODE_LOCAL);
	bpf_for(i, 0, nr) {
		u32 l = nr - 1 - i;

		if (!lab_find_dst_group_at(cpu, l) || !(sc = dst_scratch_get()))
			continue;
		lab_count(st, LAB_ST_FORK_IDLEST);
		cpu = lab_find_dst_group_cpu(cpu, sc->g.idlest.first, sc->g.idlest.size);
		if (cpu < 0 || cpu >= LAB_MAX_CPUS)
			return -1;
	}
	return cpu;
}

#endif /* __LAB_DST_CPU_BPF_H */
