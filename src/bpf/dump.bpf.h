/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ops.dump: every queue with V and its entities, then every group with its shares and its
 * queues, printed into the kernel's debug dump when the scheduler exits with an error (or on
 * sysrq-D), so that an ejection can be diagnosed.
 */
#ifndef __LAB_DUMP_BPF_H
#define __LAB_DUMP_BPF_H

/* Queued entities listed per CPU (the earliest deadlines first); groups listed. */
#define LAB_DUMP_MAX_ENTITIES	32
#define LAB_DUMP_MAX_GROUPS	64

/* Every group (group.h) in use: its cgroup, weight and group-wide sums, and each of its queues
 * that holds something: weight, runnable tasks, entity weight, load and runnable averages. */
static __always_inline void dump_groups(s32 nr)
{
	u32 i, shown = 0;
	s32 cpu;

	bpf_for(i, 1, LAB_MAX_TGS) {
		struct lab_tg *tg = tg_get(i);

		if (!tg)
			continue;
		if (++shown > LAB_DUMP_MAX_GROUPS)
			break;
		scx_bpf_dump("group %u cgroup=%llu parent=%u weight=%u%s shares=%llu load_avg=%lld runnable_avg=%lld cpuset=%u\n",
			     i, tg->cgid, tg->parent, tg->weight, tg->idle ? " idle" : "", tg->shares,
			     tg->load_avg, tg->runnable_avg, tg->nr_cpus);
		if (tg->bw_quota)
			scx_bpf_dump("  cpu.max quota=%llu period=%llu burst=%llu pool=%lld throttled=%lld (%llu times, %llu periods)\n",
				     tg->bw_quota, tg->bw_period, tg->bw_burst, tg->bw_runtime,
				     tg->bw_throttled_now, tg->bw_nr_throttled, tg->bw_nr_periods);
		bpf_for(cpu, 0, nr) {
			struct lab_gq *gq = gq_get(i, cpu);

			if (!gq || (!gq->load_weight && !gq->avg.load_avg && !gq->throttled))
				continue;
			scx_bpf_dump("  cpu%d load=%llu runnable=%u se_weight=%llu load_avg=%llu runnable_avg=%llu runtime=%lld%s\n",
				     cpu, gq->load_weight, gq->h_nr_runnable, gq->se_weight,
				     gq->avg.load_avg, gq->avg.runnable_avg, gq->runtime_remaining,
				     gq->throttled ? " throttled" : "");
		}
	}
}

void BPF_STRUCT_OPS(lab_dump, struct scx_dump_ctx *dctx)
{
	lab_pool_t *pool = pool_get();
	s32 cpu, nr = scx_bpf_nr_cpu_ids();
	u32 i;

	/* (scx_bpf_dump_header() would need the kernel's Kconfig file, which images often lack.) */
	scx_bpf_dump("kernel %d.%d.%d\n", LINUX_KERNEL_VERSION >> 16, (LINUX_KERNEL_VERSION >> 8) & 0xff,
		     LINUX_KERNEL_VERSION & 0xff);
	if (!pool)
		return;
	bpf_for(cpu, 0, nr) {
		struct lab_rq *rq = rq_get(cpu);
		struct lab_cfs *cfs;
		lab_se_t *curr;
		u32 n;
		u64 avg;

		if (!rq || cpu >= LAB_MAX_CPUS)
			break;
		cfs = &rq->cfs;
		if (rq->nr_limbo)
			scx_bpf_dump("cpu%d held=%u (tasks of throttled groups)\n", cpu, rq->nr_limbo);
		if (!cfs->nr_queued)
			continue;
		curr = cfs->curr ? SE(pool, cfs->curr) : NULL;
		/* V without re-centring (read-only, unlocked: a best effort). */
		avg = avg_vruntime_peek(cfs, curr && curr->on_rq ? curr : NULL);
		scx_bpf_dump("cpu%d V=%llu nr_queued=%u nr_delayed=%u curr=%d next=%d\n", cpu,
			     avg, cfs->nr_queued, cfs->nr_delayed,
			     curr ? curr->pid : 0, cfs->next ? SE(pool, cfs->next)->pid : 0);
		if (curr)
			scx_bpf_dump("  curr pid=%d v=%llu d=%llu vprot=%llu w=%u group=%u slice=%llu\n",
				     curr->pid, curr->vruntime, curr->deadline, curr->vprot,
				     curr->weight, curr->tg, curr->slice);
		n = rb_first(cfs, pool);
		bpf_for(i, 0, LAB_DUMP_MAX_ENTITIES) {
			lab_se_t *se;
			s64 lag;

			if (!n)
				break;
			se = SE(pool, n);
			lag = (s64)(avg - se->vruntime);
			scx_bpf_dump("  pid=%d v=%llu d=%llu lag=%lld %s%s w=%u group=%u slice=%llu\n",
				     se->pid, se->vruntime, se->deadline, lag, lag >= 0 ? "E" : "N",
				     se->delayed ? " ghost" : "", se->weight, se->tg, se->slice);
			n = rb_next(pool, n);
		}
	}
	dump_groups(nr);
}

#endif /* __LAB_DUMP_BPF_H */
