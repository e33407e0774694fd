/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The queue operations: every change of a CPU's EEVDF queue, each under that queue's lock, and
 * the time accounting they start with (update_curr()). main.bpf.c's callbacks call them; they
 * turn the pure EEVDF core (eevdf.h) into locked steps. Included by main.bpf.c after its maps,
 * lookups and the hrtick.
 */
#ifndef __LAB_QUEUE_BPF_H
#define __LAB_QUEUE_BPF_H

/* The time of the operation that just took @rq's lock, for the load signals it updates: the
 * latest this queue has seen (another CPU's clock may read a little behind). */
static __always_inline void pelt_clock(struct lab_rq *rq, u64 now)
{
	if ((s64)(now - rq->cfs.clock_pelt) > 0)
		rq->cfs.clock_pelt = now;
}

/* util_est_enqueue() / util_est_dequeue() of a task when UTIL_EST is on. A ghost's estimate
 * left the queue's sum at its sleep. */
static __always_inline void util_est_enqueue_task(struct lab_cfs *cfs, const lab_se_t *se,
						  const struct lab_params *p)
{
	if (sched_feat(p, UTIL_EST))
		util_est_enqueue(cfs, se);
}

static __always_inline void util_est_dequeue_task(struct lab_cfs *cfs, const lab_se_t *se,
						  const struct lab_params *p)
{
	if (sched_feat(p, UTIL_EST) && !se->delayed)
		util_est_dequeue(cfs, se);
}

/* The kernel's runqueue of @cpu, to read its running task (rq->curr) and clock. */
static __always_inline struct rq *krq_of(s32 cpu)
{
	return bpf_per_cpu_ptr(&runqueues, cpu);
}

/*
 * RT tasks are runnable on @krq: a higher class holds (or is about to take) the CPU, and our
 * tasks run there only in the slivers its deadline server grants. ops.cpu_release says so only
 * when a task of ours was running at the switch (after a server window that ran none of ours,
 * the CPU reads as acquired while RT runs on); the count is the kernel's own. A plain load:
 * callable with a queue lock held.
 */
static __always_inline bool krq_rt_busy(struct rq *krq)
{
	return krq && READ_ONCE(krq->rt.rt_nr_running) > 0;
}

/*
 * The task running on @krq and its execution time current to the rq clock: what the kernel's
 * update_curr() would charge it. Plain loads, no helper: callable with a queue lock held, so that
 * the charge and what the queue does next see the same instant. Returns the task's pid (0: none).
 */
static __always_inline s32 krq_curr_exec(struct rq *krq, u64 *total)
{
	struct task_struct *curr;
	s64 d;

	*total = 0;
	if (!krq)
		return 0;
	curr = krq->curr;
	if (!curr)
		return 0;
	*total = curr->se.sum_exec_runtime;
	d = (s64)(krq->clock_task - curr->se.exec_start);
	if (d > 0)
		*total += d;
	return curr->pid;
}

/* The running task's execution time for @p running on @cpu (its rq lock held by the caller). */
static __always_inline u64 exec_now(struct task_struct *p, s32 cpu)
{
	struct rq *krq = krq_of(cpu);
	u64 total;

	if (krq && krq->curr == p && krq_curr_exec(krq, &total))
		return total;
	return p->se.sum_exec_runtime;
}

/*
 * update_curr(): charge the queue's running entity for what it ran since it was last charged.
 * Call with the queue locked; @total and @pid describe the task on the CPU right now.
 */
static __always_inline int account_curr(struct lab_cfs *cfs, lab_pool_t *pool, u64 total,
					s32 pid, const struct lab_params *p, u64 *st)
{
	lab_se_t *se;
	s64 delta;

	if (!cfs->curr)
		return LAB_RESCHED_NONE;
	se = SE(pool, cfs->curr);
	if (!se->running || se->pid != pid)
		return LAB_RESCHED_NONE;
	delta = (s64)(total - se->exec_snap);
	if (delta <= 0)
		return LAB_RESCHED_NONE;
	se->exec_snap = total;
	return update_curr_math(cfs, pool, delta, p, st);
}

/*
 * update_curr() of @cpu's running entity, with the running task read under the lock: a remote
 * charge (a wakeup, a dequeue, a pull from another CPU). Skipped when the queue has no running
 * entity, which is the common case of a wakeup onto an idle CPU.
 */
static __always_inline int account_remote(struct lab_cfs *cfs, lab_pool_t *pool,
					  struct rq *krq, const struct lab_params *p, u64 *st)
{
	u64 total;
	s32 pid;

	if (!cfs->curr)
		return LAB_RESCHED_NONE;
	pid = krq_curr_exec(krq, &total);
	return account_curr(cfs, pool, total, pid, p, st);
}

/*
 * resched_curr_lazy() as update_curr() calls it when a task joins @rq: ask for the CPU to
 * reschedule (counted as preempt_enqueue) unless a request is already pending. Returns true when
 * the caller must kick the CPU (after dropping the lock).
 */
static __always_inline bool resched_curr_lazy(struct lab_rq *rq, u64 *st)
{
	if (rq->kicked)
		return false;
	rq->kicked = 1;
	lab_count(st, LAB_ST_PREEMPT_ENQUEUE);
	return true;
}

/*
 * How many queues have two or more runnable entities: the lab's rd->overloaded. With none, a
 * newidle balance has nothing to pull and returns at once, as sched_balance_newidle() does
 * without an overloaded root domain. On its own cache line: written only when a queue crosses
 * the threshold.
 */
u64 nr_overloaded __attribute__((aligned(64)));
u64 nr_overloaded_pad[7];

/* Keep @rq's share of nr_overloaded current (call with the queue locked, after a change): two
 * or more runnable entities, or one behind a higher class's task (lab_nr_busy()) or on a CPU
 * going offline (what ops.cpu_offline did not move, the balancer pulls). */
static __always_inline void rq_overload_update(struct lab_rq *rq)
{
	u32 q = rq->cfs.nr_queued, d = rq->cfs.nr_delayed, n = q > d ? q - d : 0;
	u8 ov = n && n + (rq->released | rq->offline) >= 2;

	if (ov == rq->overloaded)
		return;
	rq->overloaded = ov;
	__sync_fetch_and_add(&nr_overloaded, ov ? 1 : -1);
}

/* The pick waiting in the local DSQ is @n: note it (lab_set_next() clears it). */
static __always_inline void rq_set_pending(struct lab_rq *rq, lab_se_t *se, u32 n)
{
	se->custody = 0;
	se->picked = 1;
	rq->pending = n;
	rq->pending_stale = 0;
}

/* ---------------------------------------------------------------------------------------------
 * Queue operations
 *
 * The non-static functions below are global BPF subprograms: the verifier checks each once, not
 * once per callback that calls it, which keeps the load time down under emulation. They take
 * scalars (and the task's storage), look up the rest themselves, and are never called with a
 * queue lock held. Moving an entity between queues never holds two queue locks. Each takes one
 * queue lock once; the work under it is bounded by the tree's depth (LAB_TREE_MAX_DEPTH) per
 * tree operation.
 */

/*
 * Take @n off whatever queue it is on, as a dequeue without DEQUEUE_SLEEP (dequeue_entity()): the
 * queue's running entity is accounted first (update_curr()), then the lag is saved and, with
 * PLACE_REL_DEADLINE, the deadline kept relative. A ghost is finalized instead. @migrate: the
 * entity moves to another CPU's queue (task_on_rq_migrating()): its load history goes with it.
 * Differs: a reschedule that this update_curr() would ask for waits for the CPU's next decision
 * or tick.
 */
static __always_inline void leave_locked(struct lab_rq *rq, lab_pool_t *pool, u32 n, u32 migrate,
					 const struct lab_params *p, u64 *st)
{
	lab_se_t *se = SE(pool, n);

	if (se->delayed) {
		dequeue_entity(&rq->cfs, pool, n, LAB_DEQ_SLEEP | LAB_DEQ_DELAYED, p, st);
		lab_count(st, LAB_ST_GHOST_FINALIZED_OTHER);
	} else {
		util_est_dequeue_task(&rq->cfs, se, p);
		dequeue_entity(&rq->cfs, pool, n, migrate ? LAB_DEQ_MIGRATE : 0, p, st);
	}
	if (rq->pending == n)
		rq->pending = 0;
	se->custody = 0;
	se->running = 0;
	se->picked = 0;
	se->cpu = -1;
}

__noinline int lab_leave(u32 n, u64 now, u32 migrate)
{
	const struct lab_params *p = params_get();
	lab_pool_t *pool = pool_get();
	u64 *st = stats_row();
	struct lab_rq *rq;
	lab_se_t *se;
	struct rq *krq;
	s32 cpu;

	if (!pool)
		return 0;
	se = SE(pool, n);
	cpu = se->cpu;
	if (cpu < 0 || !se->on_rq || !(rq = rq_get(cpu)))
		return 0;
	krq = krq_of(cpu);
	bpf_spin_lock(&rq->lock);
	if (se->on_rq && se->cpu == cpu) {
		pelt_clock(rq, now);
		account_remote(&rq->cfs, pool, krq, p, st);
		leave_locked(rq, pool, n, migrate, p, st);
		rq_overload_update(rq);
	}
	bpf_spin_unlock(&rq->lock);
	return 0;
}

/*
 * A full walk of a task's groups on @cpu (group_walk()) under that CPU's queue lock, for @op:
 * the join of an enqueue (whose effective weight the placement then uses), or a tick's update;
 * returns the effective weight, for se->h_next. LAB_GROUP_DEQUEUE takes back a join that the
 * enqueue did not use (group_account()). Global subprograms, one per operation, so that the BPF
 * verifier checks a walk once per program that makes it rather than on every path to a queue
 * operation; a global subprogram cannot run under the queue's lock, hence the critical section
 * of its own.
 */
static __always_inline u64 group_op(s32 cpu, u32 tg, u32 load_w, const u32 op, u64 now)
{
	const struct lab_params *params = params_get();
	struct lab_rq *rq = rq_get(cpu);
	u64 h = 0;

	if (!rq || !tg)
		return 0;
	bpf_spin_lock(&rq->lock);
	if (op == LAB_GROUP_DEQUEUE)
		group_account(tg, cpu, load_w, true, false);
	else
		h = group_walk(tg, cpu, load_w, load_w, true, op, (u32)params->cgroup_mode, now);
	bpf_spin_unlock(&rq->lock);
	return h;
}

__noinline u64 lab_group_join(s32 cpu, u32 tg, u32 load_w, u64 now)
{
	return group_op(cpu, tg, load_w, LAB_GROUP_ENQUEUE, now);
}

__noinline u64 lab_group_tick(s32 cpu, u32 tg, u32 load_w, u64 now)
{
	return group_op(cpu, tg, load_w, LAB_GROUP_TICK, now);
}

/*
 * The hrtick of @cpu fired (its running task's slice ended): hrtick() runs task_tick_fair() with
 * queued set, whose entity_tick() brings each level of the running task's groups up to date --
 * averages, group-wide sums, shares. Its effective weight follows at its next pick (the tick's
 * own reweight of curr is moot: it is being switched out).
 */
__noinline int lab_group_hrtick(s32 cpu, u64 now)
{
	const struct lab_params *params = params_get();
	lab_pool_t *pool = pool_get();
	struct lab_rq *rq = rq_get(cpu);
	lab_se_t *se;
	u32 n;

	if (!pool || !rq || !READ_ONCE(rq->cfs.curr))
		return 0;
	bpf_spin_lock(&rq->lock);
	n = rq->cfs.curr;
	if (n) {
		se = SE(pool, n);
		if (se->tg && se->on_rq && se->running)
			group_walk(se->tg, cpu, se_load_w(se), se_load_w(se), true, LAB_GROUP_TICK,
				   (u32)params->cgroup_mode, now);
	}
	bpf_spin_unlock(&rq->lock);
	return 0;
}

__noinline u64 lab_group_unjoin(s32 cpu, u32 tg, u32 load_w)
{
	return group_op(cpu, tg, load_w, LAB_GROUP_DEQUEUE, 0);
}

/* set_next_task_fair()'s fold of a task's groups' weights on @cpu (group_fold()), under its
 * queue lock: the effective weight, for se->h_next. A global subprogram, as lab_group_join(). */
__noinline u64 lab_group_fold(s32 cpu, u32 tg, u32 load_w)
{
	struct lab_rq *rq = rq_get(cpu);
	u64 h;

	if (!rq || !tg)
		return 0;
	bpf_spin_lock(&rq->lock);
	h = group_fold(tg, cpu, load_w);
	bpf_spin_unlock(&rq->lock);
	return h;
}

/* Leave se->h_next for @op on @n: a walk of its groups on @cpu. */
static __always_inline void group_prepare(lab_se_t *se, s32 cpu, u32 op)
{
	if (op == LAB_GROUP_FOLD)
		se->h_next = lab_group_fold(cpu, se->tg, se_load_w(se));
	else if (op == LAB_GROUP_TICK)
		se->h_next = lab_group_tick(cpu, se->tg, se_load_w(se), scx_bpf_now());
	else
		se->h_next = lab_group_join(cpu, se->tg, se_load_w(se), scx_bpf_now());
	se->h_next_op = se->h_next ? op : 0;
}

#include "enqueue.bpf.h"

/* Entities lab_offline_next() looks at past running and inserted ones. */
#define LAB_PULL_SCAN_OFFLINE	8

/* What lab_dispatch_pick() found. */
#define LAB_PICK_NONE	0	/* nothing to run: balance */
#define LAB_PICK_KEEP	-1	/* keep prev running */
#define LAB_PICK_BUSY	-2	/* the pick is not ours to dispatch (already dispatched) */
#define LAB_PICK_AGAIN	-3	/* the pick finalized its quota of ghosts: pick again */

/*
 * pick_task_fair(): account prev, pick (finalizing ghosts). Returns a slot to dispatch (taken
 * out of the scheduler's custody), or one of LAB_PICK_*.
 */
__noinline long lab_dispatch_pick(s32 cpu, u64 total, s32 prev_pid, u64 now)
{
	const struct lab_params *params = params_get();
	lab_pool_t *pool = pool_get();
	struct lab_rq *rq = rq_get(cpu);
	u64 *st = stats_row();
	long ret = LAB_PICK_NONE;
	u32 n;

	if (!pool || !rq)
		return LAB_PICK_NONE;
	bpf_spin_lock(&rq->lock);
	pelt_clock(rq, now);
	account_curr(&rq->cfs, pool, total, prev_pid, params, st);
	n = pick_next_entity(&rq->cfs, pool, true, params, st, NULL);
	if (n == LAB_PICK_RETRY) {
		ret = LAB_PICK_AGAIN;
	} else if (n) {
		lab_se_t *se = SE(pool, n);

		lab_count(st, LAB_ST_DISPATCH);
		if (n == rq->cfs.curr && se->running && se->pid == prev_pid) {
			ret = LAB_PICK_KEEP;
			rq->kicked = 0;	/* the reschedule we asked for happened: prev won again */
			lab_count(st, LAB_ST_DISPATCH_KEEP);
		} else if (se->custody && !rq->pending) {
			rq_set_pending(rq, se, n);
			ret = n;
		} else {
			ret = LAB_PICK_BUSY;
		}
	}
	rq_overload_update(rq);
	bpf_spin_unlock(&rq->lock);
	return ret;
}

/* Set @cpu's released (a higher class holds it) or offline flag to @val, under its lock. */
#define LAB_RQ_RELEASED	0
#define LAB_RQ_OFFLINE	1
__noinline int lab_rq_set(s32 cpu, u32 which, u32 val)
{
	struct lab_rq *rq = rq_get(cpu);

	if (!rq)
		return 0;
	bpf_spin_lock(&rq->lock);
	if (which == LAB_RQ_RELEASED)
		rq->released = val;
	else
		rq->offline = val;
	rq_overload_update(rq);
	bpf_spin_unlock(&rq->lock);
	return 0;
}

/*
 * What ops.cpu_offline finds in @cpu's queue, one entity at a time: the first in the scheduler's
 * custody (not running, not inserted), or 0 when none is left. Ghosts met on the way are
 * finalized on the spot, under the same lock (their tasks sleep: a dequeue with DEQUEUE_SLEEP,
 * as dequeue_entities() finishes a delayed entity; they are placed anew where they wake).
 */
__noinline u32 lab_offline_next(s32 cpu, u64 now)
{
	const struct lab_params *p = params_get();
	lab_pool_t *pool = pool_get();
	struct lab_rq *rq = rq_get(cpu);
	struct rq *krq = krq_of(cpu);
	u64 *st = stats_row();
	u32 n, next, found = 0;
	int i;

	if (!pool || !rq)
		return 0;
	bpf_spin_lock(&rq->lock);
	pelt_clock(rq, now);
	account_remote(&rq->cfs, pool, krq, p, st);
	n = rb_first(&rq->cfs, pool);
	bpf_for(i, 0, LAB_PULL_SCAN_OFFLINE) {
		lab_se_t *se;

		if (!n)
			break;
		se = SE(pool, n);
		next = rb_next(pool, n);
		if (se->delayed) {
			leave_locked(rq, pool, n, 0, p, st);
		} else if (se->custody && !se->running) {
			found = n;
			break;
		}
		n = next;
	}
	rq_overload_update(rq);
	bpf_spin_unlock(&rq->lock);
	return found;
}

/* Give @slot back to the custody of @cpu's queue after a dispatch that could not happen. */
__noinline int lab_undispatch(u32 slot, s32 cpu)
{
	lab_pool_t *pool = pool_get();
	struct lab_rq *rq = rq_get(cpu);

	if (!pool || !rq)
		return 0;
	bpf_spin_lock(&rq->lock);
	if (SE(pool, slot)->on_rq && SE(pool, slot)->cpu == cpu) {
		SE(pool, slot)->custody = 1;
		SE(pool, slot)->picked = 0;
	}
	if (rq->pending == slot)
		rq->pending = 0;
	bpf_spin_unlock(&rq->lock);
	return 0;
}

/* lab_set_next()'s answer when the pick waiting in the local DSQ is no longer the pick. */
#define LAB_SET_NEXT_REPICK	(-1)

/*
 * set_next_task_fair(): entity @n starts running on @cpu (@sum_exec: its execution time so far),
 * as the pick (@first, set_next_entity(first)) or re-run after a property change. Returns how
 * long until its deadline when the hrtick should be armed, else 0; or LAB_SET_NEXT_REPICK when
 * entities joined the queue after @n was picked and the pick now chooses another one (the
 * kernel picks when the CPU switches, not before): the caller reschedules, and ops.dispatch
 * picks again.
 */
__noinline long lab_set_next(u32 n, s32 cpu, u64 sum_exec, u64 now)
{
	const struct lab_params *params = params_get();
	lab_pool_t *pool = pool_get();
	struct lab_rq *rq = rq_get(cpu);
	u64 *st = stats_row();
	lab_se_t *se;
	long hrtick_ns = 0;

	if (!pool || !rq)
		return 0;
	se = SE(pool, n);
	bpf_spin_lock(&rq->lock);
	pelt_clock(rq, now);
	if (se->on_rq && se->cpu == cpu) {
		bool stale = rq->pending == n && rq->pending_stale && se->picked;

		if (rq->pending == n)
			rq->pending = 0;
		if (stale && pick_next_entity(&rq->cfs, pool, true, params, st, NULL) != n) {
			lab_count(st, LAB_ST_DISPATCH_REPICK);
			hrtick_ns = LAB_SET_NEXT_REPICK;
		}
		set_next_entity(&rq->cfs, pool, n, se->picked, params, st);
		se->picked = 0;
		se->running = 1;
		se->custody = 0;
		se->exec_snap = sum_exec;
		rq->kicked = hrtick_ns == LAB_SET_NEXT_REPICK;
		rq->lazy = 0;	/* __schedule() clears both need-resched bits */
		/* hrtick_start_fair(): only when there is someone to switch to. */
		if (!hrtick_ns && sched_feat(params, HRTICK) && rq->cfs.nr_queued > 1)
			hrtick_ns = (long)lab_max_u64(hrtick_delay_ns(se), 1);
		rq_overload_update(rq);
	}
	bpf_spin_unlock(&rq->lock);
	return hrtick_ns;
}

/*
 * put_prev_task_fair() for @p leaving @cpu: update_curr() with @sum_exec, its execution time so
 * far, and, when it stays runnable, back into the tree. Call with nothing locked.
 */
static __always_inline void lab_put_prev(struct lab_rq *rq, lab_pool_t *pool, u32 n, s32 cpu,
					 u64 sum_exec, s32 pid, bool runnable, u64 now,
					 const struct lab_params *params, u64 *st)
{
	lab_se_t *se = SE(pool, n);

	pelt_clock(rq, now);
	if (se->cpu == cpu) {
		account_curr(&rq->cfs, pool, sum_exec, pid, params, st);
		se->running = 0;
		se->last_ran = now;
		if (runnable)
			put_prev_entity(&rq->cfs, pool, n, params, st);
	}
}

/* ops.stopping(runnable)'s queue part: lab_put_prev() under @cpu's queue lock. */
__noinline int lab_stop(u32 n, s32 cpu, u64 sum_exec, s32 pid, u32 runnable)
{
	const struct lab_params *params = params_get();
	lab_pool_t *pool = pool_get();
	struct lab_rq *rq = rq_get(cpu);
	u64 *st = stats_row(), now = scx_bpf_now();

	if (!pool || !rq)
		return 0;
	bpf_spin_lock(&rq->lock);
	lab_put_prev(rq, pool, n, cpu, sum_exec, pid, runnable, now, params, st);
	bpf_spin_unlock(&rq->lock);
	return 0;
}

/*
 * dequeue_task_fair(): entity @n leaves its queue (@flags: LAB_DEQ_*), maybe as a ghost, after
 * update_curr() of the queue's running entity. @sum_exec != 0: the entity is the task running
 * on this CPU and stopping now (ops.stopping(false), which does nothing, ran just before): this
 * is its put_prev_task_fair() too, charged with that execution time, under the same lock.
 */
__noinline int lab_dequeue_entity(u32 n, u32 flags, u64 sum_exec, s32 pid, u64 now)
{
	const struct lab_params *params = params_get();
	lab_pool_t *pool = pool_get();
	u64 *st = stats_row();
	struct lab_rq *rq;
	lab_se_t *se;
	struct rq *krq;
	s32 cpu;

	if (!pool)
		return 0;
	se = SE(pool, n);
	cpu = se->cpu;
	if (cpu < 0 || !(rq = rq_get(cpu)))
		return 0;
	krq = sum_exec ? NULL : krq_of(cpu);
	bpf_spin_lock(&rq->lock);
	pelt_clock(rq, now);
	if (sum_exec)
		lab_put_prev(rq, pool, n, cpu, sum_exec, pid, false, now, params, st);
	else
		account_remote(&rq->cfs, pool, krq, params, st);
	if (se->on_rq && se->cpu == cpu) {
		if (rq->pending == n)
			rq->pending = 0;
		se->running = 0;
		se->custody = 0;
		se->picked = 0;
		/* dequeue_task_fair(): the estimates before the entity leaves (a ghost's went at
		 * its sleep). */
		if (!(flags & LAB_DEQ_DELAYED)) {
			util_est_dequeue_task(&rq->cfs, se, params);
			if (sched_feat(params, UTIL_EST))
				util_est_update(se, flags & LAB_DEQ_SLEEP);
		}
		if (dequeue_entity(&rq->cfs, pool, n, flags, params, st))
			se->cpu = -1;
		rq_overload_update(rq);
	}
	bpf_spin_unlock(&rq->lock);
	return 0;
}

/* sched_balance_update_blocked_averages() of @cpu's queue: bring its load signals to @now (what
 * departed is taken off). For a CPU that runs none of our tasks, whose signals nothing else
 * updates meanwhile. */
__noinline int lab_update_blocked(s32 cpu, u64 now)
{
	struct lab_rq *rq = rq_get(cpu);
	u64 *st = stats_row();

	if (!rq)
		return 0;
	bpf_spin_lock(&rq->lock);
	pelt_clock(rq, now);
	update_blocked_load(&rq->cfs, st);
	bpf_spin_unlock(&rq->lock);
	return 0;
}

/* Or'ed into lab_tick_account()'s result: a lazy reschedule was pending. */
#define LAB_RESCHED_LAZY	0x100

/* task_tick_fair(): account the running entity; returns update_curr()'s reschedule reason, with
 * LAB_RESCHED_LAZY when a lazy one was pending (sched_tick() upgrades it: the switch is now). */
__noinline int lab_tick_account(s32 cpu, u64 sum_exec, s32 pid, u64 now)
{
	const struct lab_params *params = params_get();
	lab_pool_t *pool = pool_get();
	struct lab_rq *rq = rq_get(cpu);
	u64 *st = stats_row();
	int resched;

	if (!pool || !rq)
		return 0;
	bpf_spin_lock(&rq->lock);
	pelt_clock(rq, now);
	resched = account_curr(&rq->cfs, pool, sum_exec, pid, params, st);
	entity_tick_load(&rq->cfs, pool, st);
	entity_tick_group(&rq->cfs, pool, params, st);
	if (rq->lazy)
		resched |= LAB_RESCHED_LAZY;
	rq->lazy = 0;
	if (resched)
		rq->kicked = 1;
	bpf_spin_unlock(&rq->lock);
	return resched;
}

/*
 * reweight_task_fair(): entity @n gets @weight (and its inverse), keeping its lag (and V), after
 * update_curr() of its queue. Usually the entity is not queued here: the core wraps a nice change
 * in a dequeue/enqueue pair (DEQUEUE_SAVE), so only its saved lag is rescaled.
 */
__noinline int lab_reweight(u32 n, u32 weight, u32 inv_weight)
{
	const struct lab_params *params = params_get();
	lab_pool_t *pool = pool_get();
	u64 *st = stats_row();
	struct lab_rq *rq;
	lab_se_t *se;
	struct rq *krq;
	s32 cpu;

	if (!pool)
		return 0;
	se = SE(pool, n);
	cpu = se->cpu;
	if (se->on_rq && cpu >= 0 && (rq = rq_get(cpu))) {
		krq = krq_of(cpu);
		bpf_spin_lock(&rq->lock);
		account_remote(&rq->cfs, pool, krq, params, st);
		if (se->on_rq && se->cpu == cpu)
			reweight_entity(&rq->cfs, pool, n, weight, inv_weight, params, st);
		else
			reweight_entity(NULL, pool, n, weight, inv_weight, params, NULL);
		bpf_spin_unlock(&rq->lock);
	} else {
		reweight_entity(NULL, pool, n, weight, inv_weight, params, NULL);
	}
	return 0;
}

#endif /* __LAB_QUEUE_BPF_H */
