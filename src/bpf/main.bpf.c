/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * scx_eevdf_lab: Linux's EEVDF (kernel/sched/fair.c) as a sched_ext scheduler.
 *
 * The EEVDF state -- one runqueue per CPU with V, lag, eligibility, virtual deadlines, slice
 * protection and delayed ("ghost") entities -- is plain C in eevdf.h and the headers it
 * includes, shared with the host tests. This file maps it onto sched_ext:
 *
 *   fair.c                          sched_ext
 *   select_task_rq_fair()           ops.select_cpu; onto an idle CPU with nothing of ours queued
 *                                   there, the wakee is that CPU's pick: it joins the queue and
 *                                   goes straight to the local DSQ (no ops.enqueue, no dispatch)
 *   enqueue_task_fair()             ops.enqueue: join the queue and the scheduler's custody,
 *                                   then wakeup_preempt_fair(); a wakee that wins the pick is
 *                                   inserted with SCX_ENQ_PREEMPT, other preemptions kick
 *                                   (preempt=lazy: both wait for the next tick)
 *   pick_task_fair()                ops.dispatch: pick, then insert that one task into the CPU's
 *                                   local DSQ (or keep prev running by refilling its slice)
 *   set_next_task_fair()            ops.running
 *   put_prev_task_fair()            ops.stopping(runnable); for a task that stops because it
 *                                   sleeps, ops.quiescent (under the dequeue's lock)
 *   dequeue_task_fair()             ops.quiescent (sleep: maybe a ghost), ops.dequeue (moves)
 *   task_tick_fair() / hrtick       ops.tick, a CPU-pinned BPF timer
 *   reweight_task_fair()            ops.set_weight
 *   yield_task_fair()               ops.yield
 *
 * The global state and its lookups are in state.bpf.h; the locked queue operations these
 * callbacks call are in queue.bpf.h; CPU selection (select_task_rq_fair()) is in select.bpf.h
 * over the pure decisions of select.h, balancing in balance.bpf.h over balance.h, the entity
 * slots in slots.bpf.h, the hrtick timer in hrtick.bpf.h, ops.dump in dump.bpf.h, and a task's
 * entity from fork to exit (ops.init_task, enable, disable, exit_task, set_weight,
 * set_cpumask) in tasks.bpf.h.
 *
 * Tasks stay in the scheduler's custody until dispatched, so the queues here are the only
 * source of truth for the order. Each queue has its own lock; the kernel's rq lock of the same
 * CPU is also held in every callback but the cross-CPU ones (steals, remote wakeups) need ours.
 *
 * Why a BPF-owned tree rather than a DSQ sorted by deadline and scanned for the first eligible
 * task (scx_bpf_dsq_move() from a bpf_for_each(scx_dsq) loop): the pick must be the earliest
 * deadline among eligible entities, and eligibility depends on V, which every change of the queue
 * moves. A sorted DSQ makes the pick a scan past every ineligible task with an earlier deadline:
 * O(n) in the worst case, each step a kfunc call, while the V sums live apart from the DSQ
 * under a different lock. The augmented tree (eevdf.h) gives the kernel's O(log n) descent and,
 * from the same aggregates, the queue's minimum and maximum slice that lag clamping and slice
 * protection need; V, tree and counts change together under one lock. Measured with
 * --measure-scan, which counts at every pick how far such a DSQ scan would go (7.3 VM, 4 vCPUs):
 * hackbench -g 4: 96 % of 56k picks would stop at the first task, 1.05 tasks per pick, 26 picks
 * past 8 tasks; twelve hogs at nice -15..19 on two CPUs plus hackbench: 92 %, 1.06. The tree's
 * own search ran for 3 % and 7 % of those picks and visited 2.9 and 2.0 nodes. So a sorted DSQ
 * would be cheap on typical loads too; the tree is here for its bound, for the slice aggregates
 * and for keeping the EEVDF state under one lock.
 */
#include <scx/common.bpf.h>
#include "intf.h"
#include "eevdf.h"

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

#include "state.bpf.h"

#include "hrtick.bpf.h"
#include "queue.bpf.h"

#include "slots.bpf.h"
#include "select.bpf.h"
#include "balance.bpf.h"
#include "sd_balance.bpf.h"
#include "dst_cpu.bpf.h"
#include "bandwidth.bpf.h"
#include "cgroup.bpf.h"
#include "dump.bpf.h"
#include "cpus.bpf.h"
#include "tasks.bpf.h"

/* ---------------------------------------------------------------------------------------------
 * sched_ext operations
 */

/*
 * ops.select_cpu: select_task_rq_fair() (select.bpf.h), with ttwu_runnable()'s shortcut for a
 * woken ghost. A wakee whose CPU came out idle, with nothing of ours queued there, is that
 * CPU's pick: it joins the queue and goes to the CPU's local DSQ at once (ops.enqueue and
 * ops.dispatch are then skipped). Differs: the lab's experiment knobs DELAY_WAKE_COLD /
 * DELAY_REQUEUE_SELECT.
 */
s32 BPF_STRUCT_OPS(lab_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	lab_pool_t *pool = pool_get();
	struct task_ctx *tc = tctx_get(p);
	u64 now = scx_bpf_now();
	const struct lab_params *params;
	lab_se_t *se;
	s32 cpu;
	u32 wk;

	if (!tc || !pool)
		return prev_cpu;
	stat_inc(LAB_ST_SELECT);
	tc->wake_flags = wake_flags | LAB_WF_RQ_SELECTED;
	se = SE(pool, tc->slot);

	/*
	 * A ghost wakes on its own CPU without CPU selection, as ttwu_runnable() does for a delayed
	 * task -- unless DELAY_WAKE_COLD finds it cold (its last run ended more than
	 * migration_cost_ns ago: then it is finalized and selected for like any sleeper) or
	 * DELAY_REQUEUE_SELECT asks for a selection (the ghost then requeues only if the same CPU
	 * comes out, and is finalized otherwise).
	 */
	cpu = se->cpu;
	if (se->delayed && cpu >= 0) {
		params = params_get();
		if (sched_feat(params, DELAY_WAKE_COLD) && now - se->last_ran > params->migration_cost) {
			lab_leave(tc->slot, now, 0);
			stat_inc(LAB_ST_SELECT_WAKE_COLD);
		} else if (!sched_feat(params, DELAY_REQUEUE_SELECT) && allowed(p, cpu) &&
			   !cpu_offline(cpu)) {
			stat_inc(LAB_ST_SELECT_GHOST);
			return cpu;
		}
	}
	if (wake_flags & SCX_WAKE_FORK)
		cpu = select_task_rq_fork(p, tc, prev_cpu, wake_flags, now);
	else
		cpu = select_task_rq_fair(p, tc, prev_cpu, wake_flags, now);
	/* (A wakee of a throttled group runs too, until a tick finds it in user space.) */
	if (!tc->select_idle || se->on_rq || cpu_offline(cpu))
		return cpu;
	/* enqueue_task_fair() on the idle CPU, whose next pick is this task. */
	wk = LAB_WK_IF_IDLE | LAB_WK_INSERT;
	if (wake_flags & SCX_WAKE_FORK)
		wk |= LAB_WK_INITIAL;
	if (enqueue_task(tc, cpu, wk, task_custom_slice(p), LAB_WK_IDLE_JOIN) == LAB_ENQ_INSERT) {
		ttwu_idle_end(cpu, now);
		tc->wake_flags = 0;
		tc->prio_changed = 0;
		stat_inc(LAB_ST_INSERT_SELECT);
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, LAB_SLICE_NS, 0);
	}
	return cpu;
}

/*
 * ops.enqueue: enqueue_task_fair() -- the task joins its CPU's queue and enters the
 * scheduler's custody -- then wakeup_preempt_fair() (or prio_changed_fair()'s check) against
 * the running task, all under one lock (lab_enqueue_task()). A known pick is inserted at once:
 * a wakee that won the pick preempts with SCX_ENQ_PREEMPT, the pick of a queue with no running
 * task goes to the local DSQ. Other preemptions are a kick of the CPU (the kernel's resched_curr(),
 * whose effect on a task in the kernel follows the boot's model). Under the tunable preempt=lazy
 * both wait for the CPU's next tick instead (resched_curr_lazy()).
 */
void BPF_STRUCT_OPS(lab_enqueue, struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *tc = tctx_get(p);
	s32 cpu = scx_bpf_task_cpu(p), to = -1;
	u32 wk = LAB_WK_INSERT;
	lab_pool_t *pool;
	struct lab_rq *rq;
	long ret;

	if (!tc) {
		/* No entity: run it in FIFO order until the scheduler has exited. */
		scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, LAB_SLICE_NS, enq_flags);
		return;
	}
	/* wakeup_preempt() for a wakeup or a new task, and prio_changed_fair()'s for a queued task
	 * whose weight changed. */
	if (enq_flags & LAB_ENQUEUE_INITIAL)
		wk |= LAB_WK_INITIAL | LAB_WK_FORK | LAB_WK_CHECK;
	if ((enq_flags & SCX_ENQ_WAKEUP) || tc->prio_changed)
		wk |= LAB_WK_CHECK;
	tc->prio_changed = 0;
	if (tc->wake_flags & SCX_WAKE_SYNC)
		wk |= LAB_WK_SYNC;
	if (tc->wake_flags & LAB_WF_RQ_SELECTED)
		wk |= LAB_WK_SELECTED;
	if (p->policy == LAB_SCHED_IDLE)
		wk |= LAB_WK_IDLE;
	if (p->policy == LAB_SCHED_NORMAL || p->policy == LAB_SCHED_EXT)
		wk |= LAB_WK_NORMAL;
	tc->wake_flags = 0;

	/* Moved before it joins a queue: the running task that ops.dispatch let go for an active
	 * balance (sched_balance_rq()'s stopper work) goes to the CPU that asked for it, keeping its
	 * lag. A task back from the local DSQ of a CPU that a higher class took (ops.cpu_release,
	 * SCX_ENQ_REENQ) stays here, as a fair task preempted by an RT one stays on its runqueue:
	 * the balancer moves it if the higher class keeps the CPU (lab_release_tick()). */
	if (tc->push_to) {
		s32 dst = (s32)tc->push_to - 1;

		tc->push_to = 0;
		if (dst != cpu && dst < (s32)topo.nr_cpus && !cpu_offline(dst) &&
		    bpf_cpumask_test_cpu(dst, p->cpus_ptr)) {
			stat_inc(LAB_ST_LB_ACTIVE);
			to = dst;
			/* Its queue may be busy: then the CPU decides again after the join. */
			enq_flags |= SCX_ENQ_LAST;
		}
	}
	if (to >= 0) {
		lab_leave(tc->slot, scx_bpf_now(), 1);
		if (enqueue_task(tc, to, LAB_WK_IF_IDLE | LAB_WK_INSERT, task_custom_slice(p),
				 LAB_WK_ALL) == LAB_ENQ_INSERT) {
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | to, LAB_SLICE_NS, enq_flags);
			return;
		}
		/* Joins that queue below; nothing goes into this CPU's local DSQ. */
		cpu = to;
		wk &= ~LAB_WK_INSERT;
	}

	/* ttwu_do_activate(): a wakeup ends the CPU's idle period. */
	if (enq_flags & SCX_ENQ_WAKEUP)
		ttwu_idle_end(cpu, 0);

	/* cpu.max (CPU_MAX): a task of a group throttled here that a tick found in user space
	 * waits in the limbo list (throttle_cfs_rq_work() at its return to user). The CPU then
	 * decides again if others wait. */
	if (bw_enabled() && (pool = pool_get()) && bw_hold(p, SE(pool, tc->slot), cpu)) {
		limbo_hold(p, tc->slot, cpu);
		if ((rq = rq_get(cpu)) && READ_ONCE(rq->cfs.nr_queued))
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		return;
	}

	ret = enqueue_task(tc, cpu, wk, task_custom_slice(p), LAB_WK_ALL);
	switch (ret) {
	case LAB_ENQ_KICK:
		slot_ref_set(tc->slot, p);
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
		break;
	case LAB_ENQ_INSERT:
		stat_inc(LAB_ST_INSERT_ENQUEUE);
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, LAB_SLICE_NS, enq_flags);
		break;
	case LAB_ENQ_PREEMPT:
		stat_inc(LAB_ST_INSERT_PREEMPT);
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, LAB_SLICE_NS, enq_flags | SCX_ENQ_PREEMPT);
		break;
	default:
		/* In the scheduler's custody until ops.dispatch inserts it by slot. */
		slot_ref_set(tc->slot, p);
		if (ret > 0)
			hrtick_update(cpu, ret);
		/* The CPU is about to go idle (SCX_ENQ_LAST): it decides again. */
		if (enq_flags & SCX_ENQ_LAST)
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
	}
}

/* ops.dequeue: dequeue_entity() without DEQUEUE_SLEEP for a property change (DEQUEUE_SAVE);
 * a sleep is ops.quiescent's. */
void BPF_STRUCT_OPS(lab_dequeue, struct task_struct *p, u64 deq_flags)
{
	lab_pool_t *pool;
	struct task_ctx *tc;

	/* The task left our custody (a dispatch, a core-sched pick, a property change); only a
	 * property change moves the entity here: the sleep path is ops.quiescent. */
	tc = tctx_get(p);
	if (!tc)
		return;
	slot_ref_drop(tc->slot);
	/* Held (cpu.max): off the limbo list; the next enqueue decides again. */
	if ((pool = pool_get()) && SE(pool, tc->slot)->limbo)
		lab_limbo_unlink(tc->slot);
	if (deq_flags & SCX_DEQ_SCHED_CHANGE)
		lab_leave(tc->slot, scx_bpf_now(), 0);
}

/* How many picks one ops.dispatch makes before it leaves the rest to a kick of its CPU (each
 * pick finalizes at most LAB_PICK_GHOSTS ghosts under the lock). */
#define LAB_DISPATCH_PICKS	4

/*
 * A picked task that cannot run here (its affinity or migration-disabled state changed while it
 * waited, or ops.cpu_offline moved it off a CPU it is bound to): move its entity to a CPU it may
 * run on, keep it in custody there and kick that CPU. Differs: the kernel would have moved it
 * when the change happened.
 *
 * A task that may run only on a CPU going offline (a per-CPU kthread, a migration-disabled task
 * of that CPU) cannot wait in that CPU's queue: sched_ext no longer calls ops.dispatch on it.
 * It goes to the global DSQ, which that CPU still consumes until it is down (its hotplug waits
 * for it), and leaves our queues as a migration does, keeping its lag; it joins a queue again
 * when it runs (ops.running).
 */
static __always_inline void dispatch_rehome(struct task_struct *t, u32 slot, s32 cpu)
{
	s32 dst = scx_bpf_task_cpu(t);

	if (!task_migration_disabled(t) && !bpf_cpumask_test_cpu(dst, t->cpus_ptr))
		dst = bpf_cpumask_any_distribute(t->cpus_ptr);
	if (dst >= 0 && dst < topo.nr_cpus && dst != cpu && cpu_offline(dst)) {
		lab_leave(slot, scx_bpf_now(), 1);
		stat_inc(LAB_ST_HOTPLUG_GLOBAL);
		scx_bpf_dsq_insert(t, SCX_DSQ_GLOBAL, LAB_SLICE_NS, 0);
		scx_bpf_kick_cpu(dst, SCX_KICK_IDLE);
		return;
	}
	if (dst < 0 || dst >= topo.nr_cpus || dst == cpu) {
		lab_undispatch(slot, cpu);
		slot_ref_set(slot, t);
		return;
	}
	join_queue(t, dst, 0);
	slot_ref_set(slot, t);
	scx_bpf_kick_cpu(dst, SCX_KICK_IDLE);
}

/*
 * ops.dispatch: pick_task_fair() and, with nothing to run, sched_balance_newidle(). Differs:
 * exactly one task goes to the local DSQ, or prev keeps running with a refilled slice. Every
 * path that does not insert a task leaves none of ours waiting here, or kicks the CPU to
 * decide again.
 */
void BPF_STRUCT_OPS(lab_dispatch, s32 cpu, struct task_struct *prev)
{
	struct lab_rq *rq = rq_get(cpu);
	struct task_ctx *tc;
	struct task_struct *t;
	s32 prev_pid = 0;
	u64 total = 0;
	long slot;
	u32 i, push;

	if (!rq)
		return;
	/* Kicked by the nohz idle balance: this CPU's idle balance first (into its queue). */
	if (READ_ONCE(rq->nohz_ilb)) {
		WRITE_ONCE(rq->nohz_ilb, 0);
		nohz_idle_balance(cpu, rq, scx_bpf_now());
	}
	/* An active balance asked for this CPU's running task: marked here, let go below, moved by
	 * ops.enqueue when the core puts it back. */
	if ((push = READ_ONCE(rq->push_cpu))) {
		WRITE_ONCE(rq->push_cpu, 0);
		if (prev && (tc = tctx_get(prev)) && push - 1 < topo.nr_cpus &&
		    !task_migration_disabled(prev) && bpf_cpumask_test_cpu(push - 1, prev->cpus_ptr))
			tc->push_to = push;
	}
	/* Held tasks that a refill lets out rejoin first. */
	limbo_release_pending(cpu, rq);
	/* An empty queue has nothing to pick (a running prev of ours would still be queued):
	 * sched_balance_newidle() first, which pulls into the queue. */
	if (!READ_ONCE(rq->cfs.nr_queued) && !newidle_balance(cpu, rq))
		return;
	if (prev) {
		total = exec_now(prev, cpu);
		prev_pid = prev->pid;
	}
	bpf_for(i, 0, LAB_DISPATCH_PICKS) {
		slot = lab_dispatch_pick(cpu, total, prev_pid, scx_bpf_now());
		if (slot == LAB_PICK_KEEP && prev) {
			/* A prev an active balance pushes is not kept: ops.enqueue moves it. */
			if ((tc = tctx_get(prev)) && tc->push_to)
				return;
			/* A throttled prev is not kept: ops.enqueue holds it (SCX_ENQ_LAST). */
			if (bw_enabled() && (tc = tctx_get(prev)) && bw_hold(prev, SE(pool_get(), tc->slot), cpu))
				return;
			scx_bpf_task_set_slice(prev, LAB_SLICE_NS);
			return;
		}
		if (slot == LAB_PICK_NONE)
			goto newidle;
		if (slot == LAB_PICK_AGAIN)	/* ghosts finalized, more to go */
			continue;
		if (slot <= 0)			/* the pick is already inserted */
			return;
		t = slot_ref_take(slot);
		if (!t)
			t = bpf_task_from_pid(SE(pool_get(), slot)->pid);
		if (!t) {
			/* The task is gone: its entity leaves the queue. */
			stat_inc(LAB_ST_DISPATCH_MISS);
			lab_leave(slot, scx_bpf_now(), 0);
			continue;
		}
		/* pick_task_fair() chose a task whose group is throttled here and that a tick found
		 * in user space: held instead of run (fair.c would throttle it on its return to
		 * user space, at once). Any other runs on to that return, as in fair.c. */
		if (bw_enabled() && bw_hold(t, SE(pool_get(), slot), cpu)) {
			limbo_hold(t, slot, cpu);
			bpf_task_release(t);
			continue;
		}
		if (bpf_cpumask_test_cpu(cpu, t->cpus_ptr) &&
		    !(task_migration_disabled(t) && scx_bpf_task_cpu(t) != cpu)) {
			scx_bpf_dsq_insert(t, SCX_DSQ_LOCAL, LAB_SLICE_NS, 0);
			bpf_task_release(t);
			return;
		}
		stat_inc(LAB_ST_DISPATCH_MISS);
		dispatch_rehome(t, slot, cpu);
		bpf_task_release(t);
	}
	/* Picks left for later: decide again once this dispatch is over. */
	scx_bpf_kick_cpu(cpu, 0);
	return;

newidle:
	/* Nothing left here but ghosts, now gone: sched_balance_newidle(); what it pulled is
	 * picked at the CPU's next decision. */
	if (newidle_balance(cpu, rq))
		scx_bpf_kick_cpu(cpu, 0);
}

/* ops.running: set_next_task_fair(first) and hrtick_start_fair(); prio_changed_fair() for a
 * running task whose priority got worse. */
void BPF_STRUCT_OPS(lab_running, struct task_struct *p)
{
	lab_pool_t *pool = pool_get();
	struct task_ctx *tc = tctx_get(p);
	s32 cpu = scx_bpf_task_cpu(p);
	struct lab_rq *rq;
	lab_se_t *se;
	long hrtick_ns;

	if (!pool || !tc)
		return;
	se = SE(pool, tc->slot);
	if (!se->on_rq || se->cpu != cpu || se->delayed)
		join_queue(p, cpu, 0);
	se->migrated = 0;
	tc->push_to = 0;
	/* cpu.max charges what it runs from here; a task let out of the limbo may be held again. */
	tc->bw_exec = p->se.sum_exec_runtime;
	se->bw_exempt = 0;
	se->bw_user = 0;
	se->limbo_since = 0;
	/* set_next_task_fair()'s fold of its groups' weights. */
	if (se->tg)
		group_prepare(se, cpu, LAB_GROUP_FOLD);
	hrtick_ns = lab_set_next(tc->slot, cpu, p->se.sum_exec_runtime, scx_bpf_now());
	if (hrtick_ns > 0)
		hrtick_start(cpu, hrtick_ns);
	/* prio_changed_fair() for the running task: a lower priority reschedules; so does a pick
	 * that entities joining since made stale. */
	if (tc->prio_changed == LAB_PRIO_WORSE || hrtick_ns == LAB_SET_NEXT_REPICK)
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	tc->prio_changed = 0;
	if ((rq = rq_get(cpu)))
		cpufreq_update_util(cpu, rq);
}

/* TASK_ON_RQ_MIGRATING (p->on_rq while the core moves a queued task between CPUs). */
#define LAB_TASK_ON_RQ_MIGRATING	2

/*
 * ops.stopping: put_prev_task_fair(): update_curr(), and a runnable task goes back into the
 * tree. A task that stops because it is being dequeued (runnable false) is followed at once by
 * ops.quiescent, which does this under the dequeue's lock -- unless the dequeue is a migration
 * (no ops.quiescent then).
 */
void BPF_STRUCT_OPS(lab_stopping, struct task_struct *p, bool runnable)
{
	struct task_ctx *tc = NULL;
	s32 cpu = scx_bpf_task_cpu(p);
	lab_pool_t *pool;

	hrtick_cancel(cpu);
	/* cpu.max: charge what it ran (update_curr()'s account_cfs_rq_runtime()). */
	if (bw_enabled() && (tc = tctx_get(p)) && (pool = pool_get()))
		bw_charge(p, tc, SE(pool, tc->slot)->tg, cpu);
	if (!runnable && p->on_rq != LAB_TASK_ON_RQ_MIGRATING)
		return;
	if (!tc)
		tc = tctx_get(p);
	if (tc)
		lab_stop(tc->slot, cpu, p->se.sum_exec_runtime, p->pid, runnable);
}

/* ops.quiescent: dequeue_task_fair() for a sleep (maybe a ghost, DELAY_DEQUEUE) or another
 * dequeue, with put_prev_task_fair() for the task that was running. Differs: a ghost is
 * invisible to the rest of the kernel (the task is asleep there). */
void BPF_STRUCT_OPS(lab_quiescent, struct task_struct *p, u64 deq_flags)
{
	lab_pool_t *pool = pool_get();
	struct task_ctx *tc = tctx_get(p);
	struct lab_rq *rq;
	bool cur;
	u32 flags = 0;
	u64 now, sum = 0;

	if (!pool || !tc)
		return;
	if (deq_flags & SCX_DEQ_SLEEP) {
		flags = LAB_DEQ_SLEEP;
		/* It sleeps in the kernel, and wakes there: not held then. */
		SE(pool, tc->slot)->bw_user = 0;
		if (p->__state & LAB_SPECIAL_STATES)
			flags |= LAB_DEQ_SPECIAL;
	}
	now = scx_bpf_now();
	/* The task leaving the CPU it runs on: ops.stopping(false) left its accounting to us. */
	cur = p == bpf_get_current_task_btf();
	if (cur)
		sum = lab_max_u64(p->se.sum_exec_runtime, 1);
	lab_dequeue_entity(tc->slot, flags, sum, p->pid, now);
	if (cur && (rq = rq_get(scx_bpf_task_cpu(p))))
		cpufreq_update_util(scx_bpf_task_cpu(p), rq);
	/* return_cfs_rq_runtime() of the queues this left empty. */
	if (bw_enabled() && SE(pool, tc->slot)->tg)
		lab_bw_return(SE(pool, tc->slot)->tg, scx_bpf_task_cpu(p));
}

/* ops.tick: task_tick_fair(): update_curr() and its reschedule, the running entity's load
 * signals, then the idle CPUs' blocked averages, the SIS_UTIL budget and periodic balancing.
 * Differs: the reschedule is a zero slice (the core switches at the tick). */
void BPF_STRUCT_OPS(lab_tick, struct task_struct *p)
{
	lab_pool_t *pool = pool_get();
	struct task_ctx *tc = tctx_get(p);
	s32 cpu = scx_bpf_task_cpu(p);
	u64 now = scx_bpf_now();
	struct lab_rq *rq;
	int resched;

	if (!pool || !tc || !(rq = rq_get(cpu)))
		return;
	/* Held tasks that a refill lets out rejoin before the tick decides. */
	limbo_release_pending(cpu, rq);
	/* cpu.max: a queue of its that ran dry reschedules it; found in user space with its group
	 * throttled, it is held when put back. */
	if (bw_tick(p, tc, SE(pool, tc->slot), cpu))
		scx_bpf_task_set_slice(p, 0);
	/* entity_tick() of the running task's groups. */
	if (SE(pool, tc->slot)->tg) {
		lab_tg_cpus_refresh(SE(pool, tc->slot)->tg, now, 0);
		group_prepare(SE(pool, tc->slot), cpu, LAB_GROUP_TICK);
	}
	resched = lab_tick_account(cpu, p->se.sum_exec_runtime, p->pid, now);
	if (resched) {
		if (resched & LAB_RESCHED_LAZY)
			stat_inc(LAB_ST_PREEMPT_LAZY_TICK);
		resched &= ~LAB_RESCHED_LAZY;
		if (resched)
			stat_inc(resched == LAB_RESCHED_DEADLINE ? LAB_ST_PREEMPT_TICK_DEADLINE :
								 LAB_ST_PREEMPT_TICK_PROTECT);
		/* resched_curr_lazy(): the kernel switches at this tick once the slice is gone. */
		scx_bpf_task_set_slice(p, 0);
	}
	cpufreq_update_util(cpu, rq);
	nohz_update_blocked(now);
	update_idle_cpu_scan(cpu, now);
	periodic_balance(cpu, rq, params_get(), now, stats_row());
}

/* ops.yield: yield_task_fair(), and yield_to_task_fair()'s next buddy for @to. */
bool BPF_STRUCT_OPS(lab_yield, struct task_struct *from, struct task_struct *to)
{
	const struct lab_params *params = params_get();
	lab_pool_t *pool = pool_get();
	struct task_ctx *tc = tctx_get(from), *tto = to ? tctx_get(to) : NULL;
	s32 cpu = scx_bpf_task_cpu(from);
	u64 *st = stats_row();
	struct lab_rq *rq;
	bool buddy = false;

	if (!pool || !tc || !(rq = rq_get(cpu)))
		return false;
	bpf_spin_lock(&rq->lock);
	account_curr(&rq->cfs, pool, from->se.sum_exec_runtime, from->pid, params, st);
	/* yield_to_task_fair(): make @to the next buddy when it is queued here (not a ghost). */
	if (tto && SE(pool, tto->slot)->cpu == cpu && SE(pool, tto->slot)->on_rq &&
	    !SE(pool, tto->slot)->delayed) {
		set_next_buddy(&rq->cfs, pool, tto->slot, false);
		buddy = true;
	}
	yield_entity(&rq->cfs, pool, st);
	bpf_spin_unlock(&rq->lock);
	scx_bpf_task_set_slice(from, 0);
	return buddy;
}

/* ops.init: init_cfs_rq() for every CPU's queue, the newidle statistics, the hrtick timers
 * and the SIS_UTIL budget. */
s32 BPF_STRUCT_OPS_SLEEPABLE(lab_init)
{
	s32 cpu, nr = scx_bpf_nr_cpu_ids();
	u32 l;

	/* The pool's first slots (the rest comes as tasks need it: slot_claim()). */
	lab_pool = bpf_arena_alloc_pages(&lab_arena, (void __lab_arena *)LAB_ARENA_BASE, 1,
					 NUMA_NO_NODE, 0);
	if (!lab_pool || slots_alloc(1, lab_slots_initial)) {
		scx_bpf_error("cannot allocate the task pool (%u slots)", lab_slots_initial);
		return -ENOMEM;
	}
	lab_slots_active = lab_slots_initial;

	bpf_for(cpu, 0, nr) {
		struct lab_rq *rq = rq_get(cpu);

		if (!rq)
			break;
		/* init_cfs_rq(): start v0 just below zero so that wrap-around bugs show early. */
		rq->cfs.zero_vruntime = (u64)(-(1LL << 20));
		rq->cfs.cpu = cpu;
		rq->cpu = cpu;
		rq->perf_target = LAB_SCHED_CAPACITY;
		bpf_for(l, 0, LAB_MAX_LEVELS)
			newidle_init(&lab_cpus[cpu & (LAB_MAX_CPUS - 1)].sd[l & (LAB_MAX_LEVELS - 1)].ni,
				     bpf_ktime_get_ns());
		if (hrtick_init(cpu))
			break;
	}
	init_idle_cpu_scan();
	return 0;
}

/* ops.exit: record why the scheduler stops, for the daemon's report. */
void BPF_STRUCT_OPS(lab_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
	lab_announce(LAB_EV_EXIT, 0);
}

/* Run by user space (BPF_PROG_TEST_RUN) twice, some time apart, to measure HZ. */
SEC("syscall")
int lab_probe_clock(void *ctx)
{
	bpf_probe_read_kernel(&probe_jiffies, sizeof(probe_jiffies), &jiffies_64);
	probe_ns = bpf_ktime_get_ns();
	return 0;
}

SCX_OPS_DEFINE(lab_ops,
	       .select_cpu = (void *)lab_select_cpu,
	       .enqueue = (void *)lab_enqueue,
	       .dequeue = (void *)lab_dequeue,
	       .dispatch = (void *)lab_dispatch,
	       .running = (void *)lab_running,
	       .stopping = (void *)lab_stopping,
	       .quiescent = (void *)lab_quiescent,
	       .tick = (void *)lab_tick,
	       .set_weight = (void *)lab_set_weight,
	       .set_cpumask = (void *)lab_set_cpumask,
	       .yield = (void *)lab_yield,
	       .cpu_acquire = (void *)lab_cpu_acquire,
	       .cpu_release = (void *)lab_cpu_release,
	       .cpu_online = (void *)lab_cpu_online,
	       .cpu_offline = (void *)lab_cpu_offline,
	       .cgroup_init = (void *)lab_cgroup_init,
	       .cgroup_exit = (void *)lab_cgroup_exit,
	       .cgroup_move = (void *)lab_cgroup_move,
	       .cgroup_set_weight = (void *)lab_cgroup_set_weight,
	       .cgroup_set_idle = (void *)lab_cgroup_set_idle,
	       .cgroup_set_bandwidth = (void *)lab_cgroup_set_bandwidth,
	       .init_task = (void *)lab_init_task,
	       .enable = (void *)lab_enable,
	       .disable = (void *)lab_disable,
	       .exit_task = (void *)lab_exit_task,
	       .dump = (void *)lab_dump,
	       .init = (void *)lab_init,
	       .exit = (void *)lab_exit,
	       .flags = SCX_OPS_ENQ_EXITING | SCX_OPS_ENQ_MIGRATION_DISABLED |
			SCX_OPS_ENQ_LAST,
	       .timeout_ms = LAB_WATCHDOG_MS,
	       .name = "eevdf_lab");
