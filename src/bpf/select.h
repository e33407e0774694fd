/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __LAB_SELECT_H
#define __LAB_SELECT_H

#include "load.h"

/*
 * CPU selection at wakeup as decisions over a snapshot (fair.c: select_task_rq_fair(),
 * wake_affine(), select_idle_sibling(), select_idle_cpu(), choose_idle_cpu(), sched_idle_rq()).
 *
 * select.bpf.h reads the facts of each CPU it considers into a struct lab_cpu_snap (idle mask,
 * queue counts, load, topology, affinity) and asks the functions here what to do; the host
 * tests (src/select_tests.rs) ask them the same questions about made-up CPUs. No BPF helper is
 * called from this header.
 */

/* imbalance_pct of the domains the lab knows (topology.c's sd_init() defaults). */
#define LAB_LLC_IMBALANCE_PCT	117	/* MC (LLC) and wider domains */
#define LAB_SMT_IMBALANCE_PCT	110	/* SMT siblings */
/* How often SIS_UTIL's scan budget is recomputed: the kernel does it at the LLC domain's
 * periodic load balance; the lab at most once per this period, from a tick or a wakeup. */
#define LAB_IDLE_SCAN_PERIOD_NS	4000000ULL

/* What selection and balancing read about one CPU. */
struct lab_cpu_snap {
	s64 load;		/* cpu_load(): the queue's PELT load average */
	u64 weight;		/* total weight of its queued entities, running one and ghosts included
			 * (cfs_rq->load.weight) */
	s32 cpu;
	u32 llc;		/* LLC index */
	u32 core;		/* core index: SMT siblings share it */
	u32 nr_queued;		/* queued entities, running one and ghosts included (rq->nr_running) */
	u32 nr_delayed;		/* ghosts among them */
	u8 idle;		/* idle in the built-in idle mask */
	u8 allowed;		/* in the task's cpus_ptr (and online) */
	u8 released;		/* a higher scheduling class holds the CPU (ops.cpu_release) */
	u8 all_idle;		/* every one of them SCHED_IDLE or in a cpu.idle group when it joined
				 * (h_nr_idle == nr_running); a flag, not the count: the snapshot
				 * stays 40 bytes, and select's stack holds several */
};

/* ops.select_cpu keeps several snapshots on its stack, which the verifier bounds at 512 bytes
 * over a call chain: 8 more bytes each took it to 528 on a two-node SMT machine. */
_Static_assert(sizeof(struct lab_cpu_snap) == 40, "lab_cpu_snap grew: check select's stack");

/* cpus_share_cache() */
LAB_INLINE bool lab_cpus_share_cache(const struct lab_cpu_snap *a, const struct lab_cpu_snap *b)
{
	return a->llc == b->llc;
}

/* The imbalance_pct of the lowest domain spanning both CPUs: SMT if they share a core. */
LAB_INLINE u32 lab_domain_imbalance_pct(const struct lab_cpu_snap *a, const struct lab_cpu_snap *b)
{
	return a->core == b->core ? LAB_SMT_IMBALANCE_PCT : LAB_LLC_IMBALANCE_PCT;
}

/* available_idle_cpu(): idle, and nothing of ours queued (a ghost keeps the kernel's rq from
 * being idle too). The lab cannot see vCPU preemption. */
LAB_INLINE bool lab_available_idle(const struct lab_cpu_snap *c)
{
	return c->idle && !c->nr_queued;
}

/*
 * sched_idle_rq(): the CPU has entities and every one of them is idle: SCHED_IDLE, or below a
 * cpu.idle group (h_nr_idle == nr_running).
 *
 * The queue counts them as they join (nr_idle). A task made SCHED_IDLE while queued counts from
 * its next join, so the weights are read too: a SCHED_IDLE entity weighs WEIGHT_IDLEPRIO (3) and
 * every other weight is at least 15 (nice 19), so n entities weigh exactly 3n if and only if all
 * n are SCHED_IDLE.
 */
LAB_INLINE bool lab_sched_idle_rq(const struct lab_cpu_snap *c)
{
	return c->nr_queued && (c->all_idle || c->weight == (u64)WEIGHT_IDLEPRIO * c->nr_queued);
}

/* choose_idle_cpu(): idle, or running only SCHED_IDLE entities while the wakee is not one. */
LAB_INLINE bool lab_choose_idle_cpu(const struct lab_cpu_snap *c, bool wakee_idle)
{
	return lab_available_idle(c) || (lab_sched_idle_rq(c) && !wakee_idle);
}

/*
 * select_task_rq_fair()'s want_affine for a wakeup (WF_TTWU): try the waker's CPU unless
 * wake_wide() spreads the pair, and only if the wakee may run there. @flips_known is false when
 * the waker has no task context of ours (a task of another class): then wake_wide() is false.
 */
LAB_INLINE bool lab_want_affine(bool flips_known, u32 waker_flips, u32 wakee_flips, u32 llc_size,
				bool this_allowed)
{
	if (flips_known && wake_wide_math(waker_flips, wakee_flips, llc_size))
		return false;
	return this_allowed;
}

/* wake_affine()'s answers, and what decided them. */
#define LAB_WA_IDLE_THIS	0	/* WA_IDLE: the waker's CPU */
#define LAB_WA_IDLE_PREV	1	/* WA_IDLE: the previous CPU */
#define LAB_WA_WEIGHT_THIS	2	/* WA_WEIGHT: the waker's CPU */
#define LAB_WA_PREV		3	/* nothing spoke for the waker's CPU */

/* The facts wake_affine() weighs. */
struct lab_wake_affine {
	struct lab_cpu_snap this_cpu, prev_cpu;
	s64 task_load;		/* task_h_load(p) */
	s64 waker_load;		/* task_h_load(current) */
	u8 sync;		/* WF_SYNC and the waker is not exiting */
	u8 wa_idle, wa_weight, wa_bias;	/* the features */
	u16 this_capacity, prev_capacity;	/* capacity_of() of the two CPUs */
};

/*
 * wake_affine_idle(): the waker's CPU when it is idle and shares the LLC (the previous CPU
 * instead if that is idle too); the waker's CPU for a sync wakeup when the waker is alone there
 * (ghosts aside: the waker is about to sleep); else the previous CPU when idle. -1: no opinion.
 */
LAB_INLINE s32 lab_wake_affine_idle(const struct lab_cpu_snap *this_cpu,
				    const struct lab_cpu_snap *prev_cpu, bool sync)
{
	if (lab_available_idle(this_cpu) && lab_cpus_share_cache(this_cpu, prev_cpu))
		return lab_available_idle(prev_cpu) ? prev_cpu->cpu : this_cpu->cpu;
	if (sync && this_cpu->nr_queued - this_cpu->nr_delayed == 1)
		return this_cpu->cpu;
	if (lab_available_idle(prev_cpu))
		return prev_cpu->cpu;
	return -1;
}

/* Does wake_affine() come to WA_WEIGHT, the only step that reads the loads and capacities? (No
 * when WA_IDLE already decided: the caller then leaves them unread.) */
LAB_INLINE bool lab_wake_affine_weighs(const struct lab_wake_affine *wa)
{
	return wa->wa_weight &&
	       (!wa->wa_idle || lab_wake_affine_idle(&wa->this_cpu, &wa->prev_cpu, wa->sync) < 0);
}

/* wake_affine(): WA_IDLE first, then WA_WEIGHT (with WA_BIAS); one of LAB_WA_*. Only
 * LAB_WA_IDLE_THIS and LAB_WA_WEIGHT_THIS move the target to the waker's CPU. */
LAB_INLINE u32 lab_wake_affine(const struct lab_wake_affine *wa)
{
	if (wa->wa_idle) {
		s32 t = lab_wake_affine_idle(&wa->this_cpu, &wa->prev_cpu, wa->sync);

		if (t == wa->this_cpu.cpu)
			return LAB_WA_IDLE_THIS;
		if (t == wa->prev_cpu.cpu)
			return LAB_WA_IDLE_PREV;
	}
	if (wa->wa_weight &&
	    wake_affine_weight_math(wa->this_cpu.load, wa->prev_cpu.load, wa->task_load,
				    wa->waker_load, wa->sync,
				    lab_domain_imbalance_pct(&wa->this_cpu, &wa->prev_cpu), wa->wa_bias,
				    wa->this_capacity, wa->prev_capacity))
		return LAB_WA_WEIGHT_THIS;
	return LAB_WA_PREV;
}

/* select_idle_sibling()'s early answers, before the LLC scan. */
#define LAB_SIS_TARGET		0	/* the target is idle */
#define LAB_SIS_PREV		1	/* the previous CPU is idle and shares the target's LLC */
#define LAB_SIS_KTHREAD		2	/* stacked behind a per-CPU kthread waker on its CPU */
#define LAB_SIS_RECENT		3	/* the recently used CPU is idle and shares the LLC */
#define LAB_SIS_SCAN		4	/* none of those: scan the target's LLC */

/* The facts select_idle_sibling() looks at before it scans. */
struct lab_sis {
	struct lab_cpu_snap target, prev, recent;
	u32 this_nr_queued;	/* the waker's CPU's queue (this_rq()->nr_running) */
	s32 this_cpu;		/* the CPU the wakeup runs on */
	u8 has_recent;		/* p->recent_used_cpu is a CPU */
	u8 waker_percpu_kthread;	/* is_per_cpu_kthread(current) */
	u8 wakee_idle;		/* the wakee is SCHED_IDLE */
	u8 pad;
};

/*
 * select_idle_sibling() up to the scan, in the kernel's order: the target; the previous CPU
 * (sharing the target's LLC); the IO-completion case (a per-CPU kthread wakes the task on its
 * own CPU, where it is alone); the recently used CPU (sharing the target's LLC). Returns one of
 * LAB_SIS_*; @cpu is the chosen CPU (the target for LAB_SIS_SCAN). Differs: no cluster and no
 * asymmetric-capacity passes; the previous CPU must be allowed (the kernel relies on the core's
 * later affinity check).
 */
LAB_INLINE u32 lab_select_idle_sibling(const struct lab_sis *s, s32 *cpu)
{
	bool wi = s->wakee_idle;

	*cpu = s->target.cpu;
	if (lab_choose_idle_cpu(&s->target, wi))
		return LAB_SIS_TARGET;
	if (s->prev.cpu != s->target.cpu && lab_cpus_share_cache(&s->prev, &s->target) &&
	    s->prev.allowed && lab_choose_idle_cpu(&s->prev, wi)) {
		*cpu = s->prev.cpu;
		return LAB_SIS_PREV;
	}
	if (s->waker_percpu_kthread && s->prev.cpu == s->this_cpu && s->this_nr_queued <= 1) {
		*cpu = s->prev.cpu;
		return LAB_SIS_KTHREAD;
	}
	if (s->has_recent && s->recent.cpu != s->prev.cpu && s->recent.cpu != s->target.cpu &&
	    lab_cpus_share_cache(&s->recent, &s->target) && lab_choose_idle_cpu(&s->recent, wi) &&
	    s->recent.allowed) {
		*cpu = s->recent.cpu;
		return LAB_SIS_RECENT;
	}
	return LAB_SIS_SCAN;
}

/*
 * select_idle_cpu()'s budget: with SIS_UTIL, nr_idle_scan + 1, where 1 means "do not scan" (the
 * LLC is busy); without it, the whole LLC (the count never runs out).
 */
LAB_INLINE s32 lab_idle_scan_budget(u32 nr_idle_scan, u32 llc_size, bool sis_util)
{
	return sis_util ? (s32)nr_idle_scan + 1 : (s32)llc_size + 1;
}

/* One CPU of select_idle_cpu()'s scan (from target + 1 around the LLC back to the target). */
#define LAB_SCAN_NEXT		0	/* not this one: go on */
#define LAB_SCAN_FOUND		1	/* an idle CPU: take it */
#define LAB_SCAN_STOP		2	/* SIS_UTIL's budget is spent: give up */

/*
 * Visit @c: a CPU outside the task's affinity is not part of the scanned mask and costs nothing;
 * every other one first spends a unit of @budget (the scan gives up when it reaches 0), then is
 * taken if choose_idle_cpu() says so. (With an idle core known, the scan looks at whole cores
 * instead: lab_select_idle_core_step().)
 */
LAB_INLINE u32 lab_select_idle_cpu_step(const struct lab_cpu_snap *c, bool wakee_idle, s32 *budget)
{
	if (!c->allowed)
		return LAB_SCAN_NEXT;
	if (--*budget <= 0)
		return LAB_SCAN_STOP;
	return lab_choose_idle_cpu(c, wakee_idle) ? LAB_SCAN_FOUND : LAB_SCAN_NEXT;
}

/*
 * select_idle_smt()'s test of @c, an SMT sibling of the previous CPU @prev: another CPU, in the
 * target's LLC (@llc), allowed and idle (choose_idle_cpu()).
 */
LAB_INLINE bool lab_select_idle_smt_ok(const struct lab_cpu_snap *c, s32 prev, u32 llc,
				       bool wakee_idle)
{
	return c->cpu != prev && c->llc == llc && c->allowed && lab_choose_idle_cpu(c, wakee_idle);
}

/* Where the LLC position @at comes in a scan that starts after @target_pos and wraps around an
 * LLC of @size CPUs: 0 for the first CPU visited, size - 1 for the target itself. */
LAB_INLINE u32 lab_scan_rank(u32 at, u32 target_pos, u32 size)
{
	return (at + size - target_pos - 1) % size;
}

/*
 * One SMT sibling @c of select_idle_core()'s look at a core, in CPU order: a sibling that is not
 * idle makes the core busy (@core_idle false); until a fallback is known (@idle_cpu -1), the first
 * allowed sibling that is idle, or that runs only SCHED_IDLE entities, becomes it. Returns true
 * when the look at this core can stop: the core is busy and a fallback is known.
 */
LAB_INLINE bool lab_select_idle_core_step(const struct lab_cpu_snap *c, bool wakee_idle,
					  bool *core_idle, s32 *idle_cpu)
{
	if (!lab_available_idle(c)) {
		*core_idle = false;
		if (*idle_cpu == -1) {
			if (lab_choose_idle_cpu(c, wakee_idle) && c->allowed) {
				*idle_cpu = c->cpu;
				return true;
			}
			return false;
		}
		return true;
	}
	if (*idle_cpu == -1 && c->allowed)
		*idle_cpu = c->cpu;
	return false;
}

/* Is the LLC's scan budget, computed at @stamp, due for a refresh at @now? (0: never computed) */
LAB_INLINE bool lab_idle_scan_stale(u64 now, u64 stamp)
{
	return !stamp || now - stamp >= LAB_IDLE_SCAN_PERIOD_NS;
}

#endif /* __LAB_SELECT_H */
