/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPU selection at wakeup: fair.c's select_task_rq_fair() with wake_wide(), wake_affine()
 * (WA_IDLE, WA_WEIGHT, WA_BIAS) and select_idle_sibling() (recent_used_cpu, the SIS_UTIL-limited
 * LLC scan). Included by main.bpf.c.
 *
 * The decisions are the pure functions of select.h (tested on the host); the functions here read
 * what they need about each CPU into a struct lab_cpu_snap with kfuncs and act on the answer.
 *
 * Differences from the kernel, all from what sched_ext lets us see:
 *  - "idle" is the built-in idle mask plus an empty queue of ours; vCPU preemption is not checked;
 *    a CPU whose queue holds only SCHED_IDLE entities counts as idle for a non-SCHED_IDLE wakee
 *    (sched_idle_rq()), but tasks of other classes on it are not seen;
 *  - loads are the lab's PELT (pelt.h: the kernel's arithmetic on the lab's queues; the kernel
 *    keeps none for sched_ext tasks); capacities are update_cpu_capacity()'s (sd_balance.bpf.h),
 *    but no asymmetric-capacity pass (select_idle_capacity()) is made;
 *  - one balancing level: the LLC, with imbalance_pct 117 (110 between SMT siblings); no cluster
 *    pass; the LLC's has_idle_cores hint is set when a CPU's newidle balance ends without a
 *    task (a CPU going idle beside idle siblings), the kernel's from the idle task's
 *    set_next_task, just after;
 *  - a fork takes sched_balance_find_dst_cpu()'s descent (dst_cpu.bpf.h) with every level
 *    flagged SD_BALANCE_FORK and no idle-state exit latencies; a task that the descent cannot
 *    place goes to the idlest allowed CPU (idle first, else least loaded).
 */
#include "select.h"
#include "balance.h"	/* domains.h: the fork's group decisions */
/*
 * The queue facts of @cpu (counts, weights, load, topology), read without its lock, as the kernel
 * reads remote runqueues at wakeup. A global subprogram: the verifier checks it once, and its
 * callers see the snapshot as unknown values instead of walking every combination of facts.
 */
__noinline int lab_cpu_snap_read(s32 cpu, struct lab_cpu_snap *c)
{
	struct lab_rq *rq = rq_get(cpu);
	u32 ci = cpu & (LAB_MAX_CPUS - 1);

	if (!c)
		return 0;
	c->cpu = cpu;
	c->llc = topo.cpu_llc[ci];
	c->core = topo.cpu_core[ci];
	c->nr_queued = 0;
	c->nr_delayed = 0;
	c->all_idle = 0;
	c->load = 0;
	c->weight = 0;
	c->released = 0;
	if (!rq)
		return 0;
	/* An offline CPU, like one a higher class holds, has no capacity for our tasks. */
	c->released = READ_ONCE(rq->released) | READ_ONCE(rq->offline) | krq_rt_busy(krq_of(cpu));
	c->nr_queued = READ_ONCE(rq->cfs.nr_queued);
	c->nr_delayed = READ_ONCE(rq->cfs.nr_delayed);
	c->all_idle = READ_ONCE(rq->cfs.nr_idle) >= c->nr_queued;
	c->load = (s64)READ_ONCE(rq->cfs.avg.load_avg);
	c->weight = READ_ONCE(rq->cfs.load_weight);
	return 0;
}

/*
 * The facts of @cpu that selection and balancing decide on. @p: check its affinity (NULL: every
 * CPU is allowed); @idle: the built-in idle mask (NULL: no CPU is idle). The mask tests are
 * branch-free kfunc results (an out-of-range CPU tests false).
 */
static __always_inline void cpu_snap(s32 cpu, const struct task_struct *p,
				     const struct cpumask *idle, struct lab_cpu_snap *c)
{
	struct lab_rq *rq = rq_get(cpu);

	lab_cpu_snap_read(cpu, c);
	c->idle = idle ? bpf_cpumask_test_cpu(cpu, idle) : 0;
	c->allowed = (p ? bpf_cpumask_test_cpu(cpu, p->cpus_ptr) : 1) &&
		     !(rq && READ_ONCE(rq->offline));
}

/* available_idle_cpu() for @cpu, whose bit in the built-in idle mask is @in_idle_mask. A global
 * subprogram: its snapshot stays off the stack of its callers' call chains. */
__noinline int lab_available_idle_cpu(s32 cpu, int in_idle_mask)
{
	struct lab_cpu_snap c = {};

	lab_cpu_snap_read(cpu, &c);
	c.idle = in_idle_mask != 0;
	return lab_available_idle(&c);
}

/* Mirrors available_idle_cpu(); differs: the built-in idle mask and our queue, no vCPU check. */
static __always_inline bool available_idle(s32 cpu, const struct cpumask *idle)
{
	return lab_available_idle_cpu(cpu, idle ? bpf_cpumask_test_cpu(cpu, idle) : 0);
}

static __always_inline bool allowed(const struct task_struct *p, s32 cpu)
{
	return cpu >= 0 && bpf_cpumask_test_cpu(cpu, p->cpus_ptr);
}

/* cpu_load(): the queue's PELT load average, as last updated (an idle CPU's decays at its
 * next newidle balance, as the kernel's blocked averages do). */
static __always_inline s64 cpu_load(s32 cpu)
{
	struct lab_rq *rq = rq_get(cpu);

	return rq ? (s64)READ_ONCE(rq->cfs.avg.load_avg) : 0;
}

/* task_h_load() of the task of @tc, whose queue's load is @cpu_load: its PELT load average, in
 * the root group's proportion. */
static __noinline s64 task_h_load_slot(u32 slot, s64 cpu_load)
{
	lab_pool_t *pool = pool_get();

	if (!pool)
		return 0;
	return (s64)task_h_load_math(READ_ONCE(SE(pool, slot)->avg.load_avg),
				     cpu_load > 0 ? (u64)cpu_load : 0);
}

static __always_inline s64 task_h_load(struct task_ctx *tc, s64 cpu_load)
{
	return tc ? task_h_load_slot(tc->slot, cpu_load) : 0;
}

/* task_h_load() of @p on the CPU it last ran on. */
static __always_inline s64 task_load(struct task_struct *p)
{
	return p ? task_h_load(tctx_get(p), cpu_load(scx_bpf_task_cpu(p))) : 0;
}

/* Mirrors record_wakee(); differs: the decay uses the lab's clock in ns, not jiffies. */
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

/*
 * record_wakee()'s history of a task new to the lab. A fork copies its parent's, as
 * dup_task_struct() copies the whole task_struct and nothing resets it: a thread that never
 * wakes anyone keeps the flips of the thread that created it for good, which is what makes
 * wake_wide() hold for hackbench's receivers. A task the lab takes over at attach keeps what
 * fair.c recorded for it; its stamp (jiffies there) is taken as old, so that its first wakeup
 * of another task halves the flips once, as an old stamp does.
 */
static __always_inline void wakee_history_init(struct task_struct *p, struct task_ctx *tc,
					       bool fork)
{
	struct task_ctx *pc = fork ? tctx_get(bpf_get_current_task_btf()) : NULL;

	if (pc) {
		tc->wakee_flips = pc->wakee_flips;
		tc->last_wakee = pc->last_wakee;
		tc->wakee_flip_decay_ts = pc->wakee_flip_decay_ts;
		return;
	}
	tc->wakee_flips = BPF_CORE_READ(p, wakee_flips);
	tc->last_wakee = BPF_CORE_READ(p, last_wakee, pid);
	tc->wakee_flip_decay_ts = 0;
}

/*
 * Mirrors update_idle_cpu_scan() for @cpu's LLC (SIS_UTIL's scan budget from the sum of the
 * LLC's cpu_util_cfs()); differs: run from the tick and from wakeups when the budget is older than
 * LAB_IDLE_SCAN_PERIOD_NS (one CPU wins the stamp), not from the LLC's periodic load balance.
 */
static __always_inline void update_idle_cpu_scan(s32 cpu, u64 now)
{
	u32 llc = topo.cpu_llc[cpu & (LAB_MAX_CPUS - 1)] & (LAB_MAX_CPUS - 1);
	u32 size = topo.llc_size[llc], start = topo.llc_start[llc], i;
	u64 last = READ_ONCE(llc_scan_stamp[llc]), sum = 0;
	bool util_est;

	if (!lab_idle_scan_stale(now, last) ||
	    __sync_val_compare_and_swap(&llc_scan_stamp[llc], last, now) != last)
		return;
	util_est = sched_feat(params_get(), UTIL_EST);
	bpf_for(i, 0, size) {
		struct lab_rq *rq = rq_get(topo.llc_cpus[(start + i) & (LAB_MAX_CPUS - 1)]);

		if (rq)
			sum += cpu_util_cfs(&rq->cfs, util_est);
	}
	llc_nr_idle_scan[llc] = nr_idle_scan_math(sum, size, LAB_LLC_IMBALANCE_PCT);
}

/*
 * SIS_UTIL's budget before the first update_idle_cpu_scan(): every LLC at its full size, what an
 * idle LLC computes, so that the first wakeups after attach scan (a budget of 0 would mean "LLC
 * overloaded, no scan"). Differs: the kernel's value comes from the LLC's first periodic
 * balance. Called from ops.init.
 */
static __always_inline void init_idle_cpu_scan(void)
{
	u32 i, nr = topo.nr_llcs;

	bpf_for(i, 0, nr)
		llc_nr_idle_scan[i & (LAB_MAX_CPUS - 1)] = topo.llc_size[i & (LAB_MAX_CPUS - 1)];
}

/* Mirrors wake_affine() over the snapshots in @wa (the waker's and the previous CPU) and, when it
 * comes to WA_WEIGHT, the tasks' loads and the two CPUs' capacities (read only then, as the
 * kernel reads them). @wa comes zeroed. */
static __always_inline s32 wake_affine(struct task_ctx *tc, struct task_ctx *wc,
				       struct lab_wake_affine *wa, bool sync,
				       const struct lab_params *params)
{
	struct lab_rq *rq;
	u32 r;

	wa->sync = sync;
	wa->wa_idle = sched_feat(params, WA_IDLE);
	wa->wa_weight = sched_feat(params, WA_WEIGHT);
	wa->wa_bias = sched_feat(params, WA_BIAS);
	if (lab_wake_affine_weighs(wa)) {
		/* task_h_load() of the wakee and of the waker (none: a task of another class). */
		wa->task_load = task_h_load(tc, wa->prev_cpu.load);
		wa->waker_load = wc ? task_h_load(wc, wa->this_cpu.load) : 0;
		wa->this_capacity = (rq = rq_get(wa->this_cpu.cpu)) ? rq_capacity(rq) :
								      LAB_SCHED_CAPACITY;
		wa->prev_capacity = (rq = rq_get(wa->prev_cpu.cpu)) ? rq_capacity(rq) :
								      LAB_SCHED_CAPACITY;
	}
	r = lab_wake_affine(wa);
	switch (r) {
	case LAB_WA_IDLE_THIS:
		stat_inc(LAB_ST_WA_IDLE_THIS);
		return wa->this_cpu.cpu;
	case LAB_WA_IDLE_PREV:
		stat_inc(LAB_ST_WA_IDLE_PREV);
		return wa->prev_cpu.cpu;
	case LAB_WA_WEIGHT_THIS:
		stat_inc(LAB_ST_WA_WEIGHT_THIS);
		return wa->this_cpu.cpu;
	default:
		stat_inc(LAB_ST_WA_PREV);
		return wa->prev_cpu.cpu;
	}
}

/* The LLC index of @cpu, masked for the verifier. */
static __always_inline u32 cpu_llc(s32 cpu)
{
	return topo.cpu_llc[cpu & (LAB_MAX_CPUS - 1)] & (LAB_MAX_CPUS - 1);
}

/* test_idle_cores(): the hint of @cpu's LLC that some core of it is idle as a whole. */
static __always_inline bool test_idle_cores(s32 cpu)
{
	return READ_ONCE(llc_has_idle_cores[cpu_llc(cpu)]);
}

/* set_idle_cores() */
static __always_inline void set_idle_cores(s32 cpu, u32 val)
{
	WRITE_ONCE(llc_has_idle_cores[cpu_llc(cpu)], val);
}

/* The SMT siblings of @cpu (cpu_smt_mask(), @cpu included): where they start in topo.core_cpus
 * and how many (at most LAB_MAX_SMT). */
static __always_inline u32 core_span(s32 cpu, u32 *start)
{
	u32 core = topo.cpu_core[cpu & (LAB_MAX_CPUS - 1)] & (LAB_MAX_CPUS - 1);
	u32 n = topo.core_size[core];

	*start = topo.core_start[core];
	return n < LAB_MAX_SMT ? n : LAB_MAX_SMT;
}

/*
 * Mirrors __update_idle_core(): @cpu goes idle; if every sibling is idle too, its LLC has an idle
 * core. Called when newidle_balance() found nothing; the kernel calls it when the idle task is
 * picked, just after.
 */
static __always_inline void update_idle_core(s32 cpu)
{
	const struct cpumask *idle;
	u32 start, n, i;
	bool all = true;

	if (test_idle_cores(cpu))
		return;
	n = core_span(cpu, &start);
	idle = scx_bpf_get_idle_cpumask();
	bpf_for(i, 0, n) {
		s32 sib = topo.core_cpus[(start + i) & (LAB_MAX_CPUS - 1)];

		if (sib != cpu && !available_idle(sib, idle)) {
			all = false;
			break;
		}
	}
	scx_bpf_put_idle_cpumask(idle);
	if (all) {
		set_idle_cores(cpu, 1);
		stat_inc(LAB_ST_IDLE_CORE_SET);
	}
}

/*
 * Mirrors select_idle_smt(): an idle SMT sibling of @prev, in the target's LLC @llc, that @p may
 * run on; -1 if none. Not inlined: its snapshot stays off the stack of select_task_rq_fair().
 */
static __noinline s32 select_idle_smt(struct task_struct *p, s32 prev, u32 llc, bool wakee_idle,
				      const struct cpumask *idle)
{
	struct lab_cpu_snap c;
	u32 start, n, i;

	n = core_span(prev, &start);
	bpf_for(i, 0, n) {
		s32 sib = topo.core_cpus[(start + i) & (LAB_MAX_CPUS - 1)];

		cpu_snap(sib, p, idle, &c);
		if (lab_select_idle_smt_ok(&c, prev, llc, wakee_idle))
			return sib;
	}
	return -1;
}

/*
 * Has the idle-core scan from after the LLC position @target_pos looked at @cpu's core already?
 * It has if an allowed sibling comes earlier in the scan: the kernel takes a core's siblings out
 * of the scanned mask once it has looked at it (select_idle_core()).
 */
static __always_inline bool core_scanned(struct task_struct *p, s32 cpu, u32 target_pos, u32 size)
{
	u32 rank = lab_scan_rank(topo.cpu_llc_pos[cpu & (LAB_MAX_CPUS - 1)], target_pos, size);
	u32 start, n, i;

	n = core_span(cpu, &start);
	bpf_for(i, 0, n) {
		s32 sib = topo.core_cpus[(start + i) & (LAB_MAX_CPUS - 1)];
		u32 at = topo.cpu_llc_pos[sib & (LAB_MAX_CPUS - 1)];

		if (sib != cpu && allowed(p, sib) && lab_scan_rank(at, target_pos, size) < rank)
			return true;
	}
	return false;
}

/*
 * Mirrors select_idle_core(): @cpu if its core is idle as a whole; else -1, and *@idle_cpu
 * becomes the first allowed idle sibling if no fallback was known. Not inlined: its snapshot
 * stays off the stack of select_task_rq_fair().
 */
static __noinline s32 select_idle_core(struct task_struct *p, s32 cpu, bool wakee_idle,
				       const struct cpumask *idle, s32 *idle_cpu)
{
	struct lab_cpu_snap c;
	bool core_idle = true;
	u32 start, n, i;

	if (!idle_cpu)
		return -1;
	n = core_span(cpu, &start);
	bpf_for(i, 0, n) {
		s32 sib = topo.core_cpus[(start + i) & (LAB_MAX_CPUS - 1)];

		cpu_snap(sib, p, idle, &c);
		if (lab_select_idle_core_step(&c, wakee_idle, &core_idle, idle_cpu))
			break;
	}
	return core_idle ? cpu : -1;
}

/*
 * Mirrors select_idle_cpu(): scan the target's LLC from the CPU after the target around to the
 * target. With an idle core known (@has_idle_core) every core is looked at once for one idle as a
 * whole (select_idle_core()), the first idle CPU seen being the fallback, and the hint is cleared
 * when none is found; otherwise the first idle CPU, SIS_UTIL's budget spent on allowed CPUs only.
 * Sets *@whole_core when it returns an idle core's CPU. Differs: no cluster pass.
 */
static __always_inline s32 select_idle_cpu(struct task_struct *p, s32 target, bool has_idle_core,
					   bool wakee_idle, const struct lab_params *params,
					   const struct cpumask *idle, u64 now, bool *whole_core)
{
	u32 llc = cpu_llc(target);
	u32 size = topo.llc_size[llc], start = topo.llc_start[llc];
	u32 pos = topo.cpu_llc_pos[target & (LAB_MAX_CPUS - 1)];
	bool sis_util = sched_feat(params, SIS_UTIL);
	s32 budget, found = -1;
	u32 k;

	if (!size)
		return -1;
	update_idle_cpu_scan(target, now);
	budget = lab_idle_scan_budget(READ_ONCE(llc_nr_idle_scan[llc]), size, sis_util);
	if (sis_util && budget == 1) {
		/* The LLC counts as overloaded: no scan of either kind. */
		stat_inc(LAB_ST_SIS_SCAN_LIMITED);
		return -1;
	}
	bpf_for(k, 1, size + 1) {
		s32 cpu = topo.llc_cpus[(start + (pos + k) % size) & (LAB_MAX_CPUS - 1)];
		struct lab_cpu_snap c;
		u32 r;

		if (has_idle_core) {
			if (!allowed(p, cpu) || core_scanned(p, cpu, pos, size))
				continue;
			if (select_idle_core(p, cpu, wakee_idle, idle, &found) >= 0) {
				*whole_core = true;
				return cpu;
			}
			continue;
		}
		cpu_snap(cpu, p, idle, &c);
		r = lab_select_idle_cpu_step(&c, wakee_idle, &budget);
		if (r == LAB_SCAN_STOP) {
			stat_inc(LAB_ST_SIS_SCAN_LIMITED);
			break;
		}
		if (r == LAB_SCAN_FOUND) {
			found = cpu;
			break;
		}
	}
	if (has_idle_core) {
		set_idle_cores(target, 0);
		stat_inc(LAB_ST_SIS_IDLE_CORE_NONE);
	}
	return found;
}

/*
 * Mirrors select_idle_sibling() for the target and previous CPUs whose snapshots the caller put
 * in @s (taken once for wake_affine() and here); the recently used CPU is read only when it is a
 * third CPU (the only case the kernel looks at it). Differs: no asymmetric-capacity or cluster
 * passes, and the fallback is the target (no prev_aff).
 */
static __always_inline s32 select_idle_sibling(struct task_struct *p, struct task_ctx *tc,
					       struct task_struct *waker, s32 this_cpu,
					       struct lab_sis *s, const struct lab_params *params,
					       const struct cpumask *idle, u64 now, bool *found)
{
	s32 recent = tc->recent_used_cpu, prev = s->prev.cpu, target = s->target.cpu, cpu;
	bool has_idle_core = false, whole_core = false;
	struct lab_rq *rq;
	u32 step;

	s->has_recent = recent >= 0 && recent != prev && recent != target;
	if (s->has_recent)
		cpu_snap(recent, p, idle, &s->recent);
	s->this_cpu = this_cpu;
	rq = rq_get(this_cpu);
	s->this_nr_queued = rq ? READ_ONCE(rq->cfs.nr_queued) : 0;
	s->waker_percpu_kthread = waker && (waker->flags & PF_KTHREAD) && waker->nr_cpus_allowed == 1;
	s->wakee_idle = p->policy == LAB_SCHED_IDLE;

	step = lab_select_idle_sibling(s, &cpu);
	*found = step != LAB_SIS_KTHREAD;
	switch (step) {
	case LAB_SIS_TARGET:
		stat_inc(LAB_ST_SIS_TARGET);
		return cpu;
	case LAB_SIS_PREV:
		stat_inc(LAB_ST_SIS_PREV);
		return cpu;
	case LAB_SIS_KTHREAD:
		stat_inc(LAB_ST_SIS_KTHREAD);
		return cpu;
	}
	/* The kernel remembers prev once it gets past the early returns above. */
	tc->recent_used_cpu = prev;
	if (step == LAB_SIS_RECENT) {
		stat_inc(LAB_ST_SIS_RECENT);
		return cpu;
	}
	if (topo.smt_active) {
		has_idle_core = test_idle_cores(target);
		if (!has_idle_core && lab_cpus_share_cache(&s->prev, &s->target)) {
			cpu = select_idle_smt(p, prev, s->target.llc, s->wakee_idle, idle);
			if (cpu >= 0) {
				stat_inc(LAB_ST_SIS_SMT);
				return cpu;
			}
		}
	}
	cpu = select_idle_cpu(p, target, has_idle_core, s->wakee_idle, params, idle, now,
			      &whole_core);
	if (cpu >= 0) {
		stat_inc(whole_core ? LAB_ST_SIS_IDLE_CORE : LAB_ST_SIS_SCAN);
		return cpu;
	}
	*found = false;
	stat_inc(LAB_ST_SIS_NONE);
	return target;
}

/* The CPUs a forking task may use, for sched_balance_find_dst_cpu()'s walks (dst_cpu.bpf.h),
 * which as global subprograms cannot take the task: one bit per CPU, and the descent's groups. */
#define LAB_DST_WORDS	(LAB_MAX_CPUS / 64)
struct lab_dst_scratch {
	u64 allowed[LAB_DST_WORDS];
	struct lab_dst_group g;
	struct lab_sg_stats cur;
	struct lab_lb_cpu c;
	struct lab_sd sd;
	struct lab_cpu_snap snap;
	struct lab_dst_cpu best;
	/* the walk's current group: its end, whether it is the local one, its allowed CPUs (kept
	 * here so that the verifier checks the loop's body once, as lab_update_sd_lb_stats()) */
	u32 gend;
	u32 local;
	u32 nallowed;
	u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct lab_dst_scratch);
} dst_scratch SEC(".maps");

static __always_inline struct lab_dst_scratch *dst_scratch_get(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&dst_scratch, &zero);
}

/* Records which CPUs of ours @p may use; false when none. */
static __always_inline bool dst_allowed_fill(struct task_struct *p, struct lab_dst_scratch *sc)
{
	u32 nr = topo.nr_cpus, i;
	bool any = false;

	bpf_for(i, 0, (nr + 63) / 64)
		sc->allowed[i & (LAB_DST_WORDS - 1)] = 0;
	bpf_for(i, 0, nr) {
		if (allowed(p, i) && !cpu_offline(i)) {
			sc->allowed[(i / 64) & (LAB_DST_WORDS - 1)] |= 1ULL << (i & 63);
			any = true;
		}
	}
	return any;
}

__noinline s32 lab_find_dst_cpu(s32 this_cpu);

/*
 * The fallback of a fork that the descent cannot place (the forking CPU is not one the task may
 * use, and no level offered a group): the idlest allowed CPU (an idle one first, from @prev on,
 * else the least loaded), where the kernel takes select_fallback_rq().
 */
static __always_inline s32 find_idlest_cpu(struct task_struct *p, s32 prev,
					   const struct cpumask *idle, bool *found)
{
	s32 best = prev, cpu;
	s64 best_load = 0x7fffffffffffffffLL;
	u32 i, nr = topo.nr_cpus;

	bpf_for(i, 0, nr) {
		cpu = (prev + i) % nr;
		if (!allowed(p, cpu))
			continue;
		if (available_idle(cpu, idle)) {
			*found = true;
			return cpu;
		}
		if (cpu_load(cpu) < best_load) {
			best_load = cpu_load(cpu);
			best = cpu;
		}
	}
	return best;
}

/*
 * select_task_rq_fair() for a new task (WF_FORK): sched_balance_find_dst_cpu() from the forking
 * CPU (dst_cpu.bpf.h), or find_idlest_cpu() when the descent cannot place the task. Called by
 * ops.select_cpu beside select_task_rq_fair() (with the same arguments, @wake_flags and @now
 * unused), not from it: the descent's calls would stack on its large frame. Sets
 * tc->select_idle when the CPU returned is idle.
 */
static __noinline s32 select_task_rq_fork(struct task_struct *p, struct task_ctx *tc, s32 prev_cpu,
					  u64 wake_flags, u64 now)
{
	struct lab_dst_scratch *sc = dst_scratch_get();
	const struct cpumask *idle;
	bool found = false;
	s32 cpu;

	stat_inc(LAB_ST_SELECT_FORK);
	cpu = sc && dst_allowed_fill(p, sc) ? lab_find_dst_cpu(bpf_get_smp_processor_id()) : -1;
	idle = scx_bpf_get_idle_cpumask();
	if (allowed(p, cpu) && !cpu_offline(cpu))
		found = available_idle(cpu, idle);
	else
		cpu = find_idlest_cpu(p, prev_cpu, idle, &found);
	scx_bpf_put_idle_cpumask(idle);
	tc->select_idle = found;
	return cpu;
}

/* wake_affine()'s and select_idle_sibling()'s snapshots, one set per CPU: off the stack of the
 * selection's call chain, which the verifier bounds at 512 bytes. */
struct lab_wa_scratch {
	struct lab_wake_affine wa;
	struct lab_sis sis;
} __attribute__((aligned(64)));
struct lab_wa_scratch wa_scratch[LAB_MAX_CPUS];

/*
 * select_task_rq_fair()'s walk up @this_cpu's domains for a wakeup that wants affinity: does a
 * domain flagged SD_WAKE_AFFINE span @prev_cpu? Then wake_affine() decides between the two CPUs;
 * else (the CPUs are on nodes beyond node_reclaim_distance) the wakee stays on its side: no
 * domain has SD_BALANCE_WAKE, so select_idle_sibling() looks around @prev_cpu. The flagged
 * levels are the lowest topo.wa_levels (counted at load): the highest of them decides.
 */
static __always_inline bool wake_affine_spans(s32 this_cpu, s32 prev_cpu)
{
	u32 c = this_cpu & (LAB_MAX_CPUS - 1), pos = topo.cpu_order_pos[prev_cpu & (LAB_MAX_CPUS - 1)];
	u32 k = (topo.wa_levels - 1) & (LAB_MAX_LEVELS - 1);

	if (topo.wa_levels >= topo.nr_levels)
		return true;
	return topo.wa_levels && pos - topo.lvl_start[k][c] < topo.lvl_size[k][c];
}

/*
 * Mirrors select_task_rq_fair() for a wakeup (a fork: select_task_rq_fork()); differs: no
 * WF_CURRENT_CPU or EAS path. Sets tc->select_idle when the CPU returned was chosen because it
 * was idle. Not inlined: its snapshots stay off the stack of what ops.select_cpu calls next.
 */
static __noinline s32 select_task_rq_fair(struct task_struct *p, struct task_ctx *tc,
					  s32 prev_cpu, u64 wake_flags, u64 now)
{
	const struct lab_params *params = params_get();
	bool found = false, *idle_found = &found;
	struct task_struct *waker = bpf_get_current_task_btf();
	s32 this_cpu = bpf_get_smp_processor_id(), new_cpu = prev_cpu, cpu;
	bool sync = (wake_flags & SCX_WAKE_SYNC) && !(waker->flags & PF_EXITING);
	struct lab_wake_affine *wa = &wa_scratch[this_cpu & (LAB_MAX_CPUS - 1)].wa;
	struct lab_sis *sis = &wa_scratch[this_cpu & (LAB_MAX_CPUS - 1)].sis;
	bool want_affine = false;
	const struct cpumask *idle;
	struct task_ctx *wc = NULL;

	idle = scx_bpf_get_idle_cpumask();
	if (wake_flags & SCX_WAKE_TTWU) {
		u32 llc_size = topo.llc_size[topo.cpu_llc[this_cpu & (LAB_MAX_CPUS - 1)] &
					     (LAB_MAX_CPUS - 1)];

		wc = tctx_get(waker);
		if (wc) {
			record_wakee(wc, p->pid, now);
			if (wake_wide_math(wc->wakee_flips, tc->wakee_flips, llc_size))
				stat_inc(LAB_ST_WAKE_WIDE);
		}
		want_affine = lab_want_affine(wc != NULL, wc ? wc->wakee_flips : 0, tc->wakee_flips,
					      llc_size, allowed(p, this_cpu));
	}
	/* One snapshot per CPU, shared by wake_affine() and select_idle_sibling(). */
	__builtin_memset(wa, 0, sizeof(*wa));
	cpu_snap(prev_cpu, p, idle, &wa->prev_cpu);
	if (want_affine && this_cpu != prev_cpu && !wake_affine_spans(this_cpu, prev_cpu)) {
		stat_inc(LAB_ST_WA_NODE_LOCAL);
		want_affine = false;
	}
	if (want_affine && this_cpu != prev_cpu) {
		cpu_snap(this_cpu, p, idle, &wa->this_cpu);
		new_cpu = wake_affine(tc, wc, wa, sync, params);
	}
	/* wake_affine() answers the previous CPU or the waker's. */
	__builtin_memset(sis, 0, sizeof(*sis));
	sis->prev = wa->prev_cpu;
	sis->target = new_cpu == prev_cpu ? wa->prev_cpu : wa->this_cpu;
	cpu = select_idle_sibling(p, tc, waker, this_cpu, sis, params, idle, now, idle_found);
	scx_bpf_put_idle_cpumask(idle);
	if (allowed(p, cpu)) {
		tc->select_idle = found;
		return cpu;
	}
	tc->select_idle = 0;
	return prev_cpu;
}
