/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The EEVDF core of kernel/sched/fair.c as plain C, one header per concept:
 *
 *   entity.h        struct sched_entity / cfs_rq, the build glue, the knobs snapshot
 *   weight.h        nice -> weight and inverse weight, calc_delta_fair()
 *   avg_vruntime.h  V, eligibility, lag
 *   rbtree.h        the deadline-ordered augmented tree
 *   runqueue.h      enqueue, dequeue, delayed dequeue, update_curr(), protection, reweight, yield
 *   pick.h          pick_eevdf(), pick_next_entity(), wakeup_preempt_fair()
 *   pelt.h          the load signals (PELT), with the kernel's arithmetic
 *   load.h          the wake-affine / SIS_UTIL / newidle arithmetic
 *
 * Nothing here calls a BPF helper: main.bpf.c includes it, and so does the host test library
 * (src/bpf/host.c), where cargo test checks every function. Each function is named after the
 * fair.c function it mirrors; its comment says how it differs.
 */
#ifndef __LAB_EEVDF_H
#define __LAB_EEVDF_H

#include "pick.h"
#include "load.h"

/* One CPU's queue in the BPF scheduler: the EEVDF state behind its lock, and what CPU selection
 * and balancing read about it. */
struct lab_rq {
	struct bpf_spin_lock lock;
	u32 kicked;		/* a reschedule we asked for is pending (need_resched) */
	struct lab_cfs cfs;
	u32 nr_balance_failed;	/* periodic pulls refused in a row (hot or ineligible tasks) */
	/* The pick inserted into the CPU's local DSQ that has not started running yet (0: none):
	 * the CPU runs it next, so nothing else may be inserted meanwhile. */
	u32 pending;
	u16 cpu;		/* the CPU this queue belongs to */
	u8 pending_stale;	/* an entity joined after that pick: ops.running picks again */
	u8 overloaded;		/* counted in nr_overloaded: two or more runnable (lab_nr_busy()) */
	u8 released;		/* a higher class (RT, deadline) holds the CPU: ops.cpu_release */
	u8 offline;		/* the CPU is offline: ops.cpu_offline */
	u8 lazy;		/* TIF_NEED_RESCHED_LAZY: the next tick reschedules */
	u8 nohz_ilb;		/* kicked as the idle load balancer (NOHZ_BALANCE_KICK) */
	/* pull_candidates()' count of candidates, kept here (under the lock) rather than in a
	 * register: a count carried from one iteration to the next would keep the BPF verifier
	 * from seeing the scan converge. */
	u32 pull_found;
	/* Tasks of throttled groups held off the queue (bandwidth.bpf.h): a list of slots, oldest
	 * first, and whether some of them may rejoin (a refill unthrottled a group here). */
	u32 limbo_head;
	u32 limbo_tail;
	u32 nr_limbo;
	u32 limbo_release;
	/* The performance target last handed to cpufreq (cpufreq_update_util(), CPUFREQ):
	 * 0..1024, 1024 (sched_ext's own at attach) until the CPU first hands one over. */
	u32 perf_target;
	/* An active balance asked for (1 + the CPU to push the running task to; 0: none). */
	u32 push_cpu;
	/* capacity_of() and arch_scale_cpu_capacity() as update_cpu_capacity() last found them
	 * (0: not yet, read as SCHED_CAPACITY_SCALE, the kernel's value at boot), and when they
	 * are due again (ns; the lowest group's sgc->next_update). */
	u32 cpu_capacity;
	u32 cpu_capacity_orig;
	u64 capacity_next;
	/* When the CPU went idle (rq->idle_stamp, ns: its newidle balance found nothing), 0 once
	 * a task woke onto it or was pulled: a fork's slow path prefers the idle CPU that went
	 * idle last, and the idle period's length feeds avg_idle when a wakeup ends it. */
	u64 idle_stamp;
} __attribute__((aligned(64)));

#endif /* __LAB_EEVDF_H */
