/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPU selection at wakeup: fair.c's select_task_rq_fair() with wake_wide(), wake_affine()
 * (WA_IDLE, WA_WEIGHT, WA_BIAS) and select_idle_sibling() (recent_used_cpu, the SIS_UTIL-limited
 * LLC scan). Included by main.bpf.c.
 *
 * Differences from the kernel, all from what sched_ext lets us see:
 *  - "idle" is the built-in idle mask plus an empty queue of ours; a CPU running only SCHED_IDLE
 *    tasks is not treated as idle (sched_idle_cpu()), and vCPU preemption is not checked;
 *  - loads are the lab's own PELT-like averages (struct lab_pelt), not the kernel's PELT, which
 *    sched_ext tasks do not get; capacities are taken as equal;
 *  - one balancing level: the LLC, with imbalance_pct 117 (110 between SMT siblings);
 *  - a fork goes to the idlest allowed CPU (idle first, else least loaded) instead of the full
 *    sched_balance_find_dst_cpu() group search.
 */

static __always_inline bool cpus_share_cache(s32 a, s32 b)
{
	return topo.cpu_llc[a & (LAB_MAX_CPUS - 1)] == topo.cpu_llc[b & (LAB_MAX_CPUS - 1)];
}

/* The imbalance_pct of the lowest domain spanning both CPUs. */
static __always_inline u32 domain_imbalance_pct(s32 a, s32 b)
{
	return topo.cpu_core[a & (LAB_MAX_CPUS - 1)] == topo.cpu_core[b & (LAB_MAX_CPUS - 1)] ? 110 : 117;
}

/* available_idle_cpu(): idle in the built-in mask and nothing queued (ghosts count, as a
 * delayed task keeps the kernel's rq from being idle). */
static __always_inline bool available_idle(s32 cpu, const struct cpumask *idle)
{
	struct lab_rq *rq;

	if (cpu < 0 || !idle || !bpf_cpumask_test_cpu(cpu, idle))
		return false;
	rq = rq_get(cpu);
	return rq && !READ_ONCE(rq->cfs.nr_queued);
}

static __always_inline bool allowed(const struct task_struct *p, s32 cpu)
{
	return cpu >= 0 && bpf_cpumask_test_cpu(cpu, p->cpus_ptr);
}

/* cpu_load(): the CPU's average queued weight. */
static __always_inline s64 cpu_load(s32 cpu)
{
	struct lab_rq *rq = rq_get(cpu);

	return rq ? (s64)READ_ONCE(rq->load.avg) : 0;
}

/* task_h_load(): the task's average runnable weight (no cgroup hierarchy to scale by). */
static __always_inline s64 task_load(struct task_struct *p)
{
	struct task_ctx *tc = p ? tctx_get(p) : NULL;

	return tc ? (s64)tc->load.avg : 0;
}

/* record_wakee(): count the waker's switches of wakee, halving the count every second. */
static __always_inline void record_wakee(struct task_ctx *wc, s32 wakee_pid, u64 now)
{
	if (now - wc->wakee_flip_decay_ts > 1000000000ULL) {
		wc->wakee_flips >>= 1;
		wc->wakee_flip_decay_ts = now;
	}
	if (wc->last_wakee != wakee_pid) {
		wc->last_wakee = wakee_pid;
		wc->wakee_flips++;
	}
}

/* wake_affine_idle(). */
static __always_inline s32 wake_affine_idle(s32 this_cpu, s32 prev_cpu, bool sync,
					    const struct cpumask *idle)
{
	struct lab_rq *rq;

	if (available_idle(this_cpu, idle) && cpus_share_cache(this_cpu, prev_cpu))
		return available_idle(prev_cpu, idle) ? prev_cpu : this_cpu;
	/* The waker is alone on its CPU (ghosts aside): it is about to sleep, stack on it. */
	if (sync && (rq = rq_get(this_cpu)) &&
	    READ_ONCE(rq->cfs.nr_queued) - READ_ONCE(rq->cfs.nr_delayed) == 1)
		return this_cpu;
	if (available_idle(prev_cpu, idle))
		return prev_cpu;
	return -1;
}

/* wake_affine(): the waker's CPU or the previous one. */
static __always_inline s32 wake_affine(struct task_struct *p, struct task_struct *waker,
				       s32 this_cpu, s32 prev_cpu, bool sync,
				       const struct lab_params *params, const struct cpumask *idle)
{
	s32 target = -1;

	if (sched_feat(params, WA_IDLE)) {
		target = wake_affine_idle(this_cpu, prev_cpu, sync, idle);
		if (target == this_cpu) {
			stat_inc(LAB_ST_WA_IDLE_THIS);
			return this_cpu;
		}
		if (target == prev_cpu) {
			stat_inc(LAB_ST_WA_IDLE_PREV);
			return prev_cpu;
		}
	}
	if (sched_feat(params, WA_WEIGHT) &&
	    wake_affine_weight_math(cpu_load(this_cpu), cpu_load(prev_cpu), task_load(p),
				    task_load(waker), sync, domain_imbalance_pct(this_cpu, prev_cpu),
				    sched_feat(params, WA_BIAS))) {
		stat_inc(LAB_ST_WA_WEIGHT_THIS);
		return this_cpu;
	}
	stat_inc(LAB_ST_WA_PREV);
	return prev_cpu;
}

/*
 * select_idle_cpu(): scan the target's LLC for an idle allowed CPU, starting after the target
 * and wrapping; with SIS_UTIL the scan stops after nr_idle_scan CPUs (none at all when the LLC
 * is busy enough).
 */
static __always_inline s32 select_idle_cpu(struct task_struct *p, s32 target,
					   const struct lab_params *params,
					   const struct cpumask *idle)
{
	u32 llc = topo.cpu_llc[target & (LAB_MAX_CPUS - 1)] & (LAB_MAX_CPUS - 1);
	u32 size = topo.llc_size[llc], start = topo.llc_start[llc];
	u32 pos = topo.cpu_llc_pos[target & (LAB_MAX_CPUS - 1)];
	s32 nr = size + 1, found = -1;
	u32 k;

	if (sched_feat(params, SIS_UTIL)) {
		nr = READ_ONCE(llc_nr_idle_scan[llc]) + 1;
		if (nr == 1) {
			stat_inc(LAB_ST_SIS_SCAN_LIMITED);
			return -1;
		}
	}
	if (!size)
		return -1;
	bpf_for(k, 1, size + 1) {
		s32 cpu = topo.llc_cpus[(start + (pos + k) % size) & (LAB_MAX_CPUS - 1)];

		if (k >= (u32)nr) {
			stat_inc(LAB_ST_SIS_SCAN_LIMITED);
			break;
		}
		if (allowed(p, cpu) && available_idle(cpu, idle)) {
			found = cpu;
			break;
		}
	}
	return found;
}

/* select_idle_sibling(). */
static __always_inline s32 select_idle_sibling(struct task_struct *p, struct task_ctx *tc,
					       struct task_struct *waker, s32 this_cpu,
					       s32 prev, s32 target,
					       const struct lab_params *params,
					       const struct cpumask *idle)
{
	struct lab_rq *rq;
	s32 recent, i;

	if (available_idle(target, idle)) {
		stat_inc(LAB_ST_SIS_TARGET);
		return target;
	}
	if (prev != target && cpus_share_cache(prev, target) && available_idle(prev, idle) &&
	    allowed(p, prev)) {
		stat_inc(LAB_ST_SIS_PREV);
		return prev;
	}
	/* A per-CPU kthread waking a task on its own CPU (IO completion): stack on it. */
	if (waker && (waker->flags & PF_KTHREAD) && waker->nr_cpus_allowed == 1 &&
	    prev == this_cpu && (rq = rq_get(this_cpu)) && READ_ONCE(rq->cfs.nr_queued) <= 1) {
		stat_inc(LAB_ST_SIS_KTHREAD);
		return prev;
	}
	recent = tc->recent_used_cpu;
	tc->recent_used_cpu = prev;
	if (recent >= 0 && recent != prev && recent != target && cpus_share_cache(recent, target) &&
	    available_idle(recent, idle) && allowed(p, recent)) {
		stat_inc(LAB_ST_SIS_RECENT);
		return recent;
	}
	i = select_idle_cpu(p, target, params, idle);
	if (i >= 0) {
		stat_inc(LAB_ST_SIS_SCAN);
		return i;
	}
	stat_inc(LAB_ST_SIS_NONE);
	return target;
}

/* A new task: the idlest allowed CPU, an idle one first (from @prev on), else the least loaded. */
static __always_inline s32 find_idlest_cpu(struct task_struct *p, s32 prev,
					   const struct cpumask *idle)
{
	s32 best = prev, cpu;
	s64 best_load = 0x7fffffffffffffffLL;
	u32 i, nr = topo.nr_cpus;

	bpf_for(i, 0, nr) {
		cpu = (prev + i) % nr;
		if (!allowed(p, cpu))
			continue;
		if (available_idle(cpu, idle))
			return cpu;
		if (cpu_load(cpu) < best_load) {
			best_load = cpu_load(cpu);
			best = cpu;
		}
	}
	return best;
}

/* select_task_rq_fair(). */
static s32 select_task_rq_fair(struct task_struct *p, struct task_ctx *tc, s32 prev_cpu,
			       u64 wake_flags, const struct lab_params *params, u64 now)
{
	struct task_struct *waker = bpf_get_current_task_btf();
	s32 this_cpu = bpf_get_smp_processor_id(), new_cpu = prev_cpu, cpu;
	bool sync = (wake_flags & SCX_WAKE_SYNC) && !(waker->flags & PF_EXITING);
	bool want_affine = false;
	const struct cpumask *idle;
	struct task_ctx *wc;

	idle = scx_bpf_get_idle_cpumask();
	if (wake_flags & SCX_WAKE_FORK) {
		stat_inc(LAB_ST_SELECT_FORK);
		cpu = find_idlest_cpu(p, prev_cpu, idle);
		scx_bpf_put_idle_cpumask(idle);
		return cpu;
	}
	if (wake_flags & SCX_WAKE_TTWU) {
		wc = tctx_get(waker);
		if (wc) {
			u32 llc = topo.cpu_llc[this_cpu & (LAB_MAX_CPUS - 1)] & (LAB_MAX_CPUS - 1);

			record_wakee(wc, p->pid, now);
			if (wake_wide_math(wc->wakee_flips, tc->wakee_flips, topo.llc_size[llc]))
				stat_inc(LAB_ST_WAKE_WIDE);
			else
				want_affine = allowed(p, this_cpu);
		} else {
			want_affine = allowed(p, this_cpu);
		}
	}
	if (want_affine && this_cpu != prev_cpu)
		new_cpu = wake_affine(p, waker, this_cpu, prev_cpu, sync, params, idle);
	cpu = select_idle_sibling(p, tc, waker, this_cpu, prev_cpu, new_cpu, params, idle);
	scx_bpf_put_idle_cpumask(idle);
	return allowed(p, cpu) ? cpu : prev_cpu;
}
