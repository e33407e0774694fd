/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __LAB_PELT_H
#define __LAB_PELT_H

#include "entity.h"

/*
 * Per-entity load tracking: kernel/sched/pelt.c and the PELT parts of fair.c (update_load_avg(),
 * attach/detach/remove, util_est), with the kernel's integer arithmetic, so that every sum and
 * average comes out as the kernel's would for the same history of queued, runnable and running.
 *
 * The kernel keeps no PELT for sched_ext tasks (only the fair class updates it), so the lab runs
 * its own on its own queues, at the points where fair.c updates it: enqueue, dequeue (also of a
 * ghost), set_next, put_prev, the tick, a newidle balance (the blocked averages), a migration.
 *
 * Differs: time is the lab's clock (ns), not the kernel's rq_clock_pelt(), which is scaled by
 * the CPU's capacity and frequency and excludes IRQ time; on a machine without frequency
 * invariance and with equal capacities (the VM) the two tick alike. A clock that reads earlier
 * than the last update (another CPU's clock, a little behind) moves nothing, where the kernel
 * would restart the signal from that earlier time.
 */

#define LAB_LOAD_AVG_PERIOD		32	/* periods for y^n to halve */
#define LAB_LOAD_AVG_MAX		47742	/* the largest a sum of 1024-unit periods gets */
#define LAB_PELT_MIN_DIVIDER		(LAB_LOAD_AVG_MAX - 1024)
#define LAB_SCHED_CAPACITY_SHIFT	10
#define LAB_SCHED_CAPACITY		(1 << LAB_SCHED_CAPACITY_SHIFT)
#define LAB_UTIL_AVG_UNCHANGED		0x80000000U	/* util_est: util_avg unchanged since */
#define LAB_UTIL_EST_WEIGHT_SHIFT	2		/* the EWMA's new sample weighs 1/4 */
#define LAB_UTIL_EST_MARGIN		(LAB_SCHED_CAPACITY / 100)

/*
 * y^n in 0.32 fixed point for n < 32, y^32 = 1/2: floor((2^32 - 1) * y^n), the table the kernel
 * generates (sched-pelt.h, runnable_avg_yN_inv). A host test recomputes it.
 */
static const u32 lab_runnable_avg_yN_inv[LAB_LOAD_AVG_PERIOD] = {
	0xffffffff, 0xfa83b2da, 0xf5257d14, 0xefe4b99a, 0xeac0c6e6, 0xe5b906e6,
	0xe0ccdeeb, 0xdbfbb796, 0xd744fcc9, 0xd2a81d91, 0xce248c14, 0xc9b9bd85,
	0xc5672a10, 0xc12c4cc9, 0xbd08a39e, 0xb8fbaf46, 0xb504f333, 0xb123f581,
	0xad583ee9, 0xa9a15ab4, 0xa5fed6a9, 0xa2704302, 0x9ef5325f, 0x9b8d39b9,
	0x9837f050, 0x94f4efa8, 0x91c3d373, 0x8ea4398a, 0x8b95c1e3, 0x88980e80,
	0x85aac367, 0x82cd8698,
};

/* Atomic updates of a queue's removed sums, which other CPUs add to without its lock. */
#ifdef LAB_HOST
#define lab_xchg(p, v)		__atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
#define lab_atomic_add(p, v)	__atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#else
#define lab_xchg(p, v)		__sync_lock_test_and_set((p), (v))
#define lab_atomic_add(p, v)	__sync_fetch_and_add((p), (v))
#endif

/* update_load_avg()'s flags (fair.c). */
#define LAB_DO_ATTACH		2
#define LAB_DO_DETACH		4

/* mul_u64_u32_shr(a, mul, 32): the high half of a 96-bit product, without 128-bit types. */
LAB_INLINE u64 mul_u64_u32_shr32(u64 a, u32 mul)
{
	return (((a & 0xffffffffULL) * mul) >> 32) + (a >> 32) * mul;
}

/* decay_load(): val * y^n, 0 past 63 half-lives. */
LAB_INLINE u64 decay_load(u64 val, u64 n)
{
	u32 local_n;

	if (n > LAB_LOAD_AVG_PERIOD * 63)
		return 0;
	local_n = (u32)n;
	if (local_n >= LAB_LOAD_AVG_PERIOD) {
		val >>= local_n / LAB_LOAD_AVG_PERIOD;
		local_n %= LAB_LOAD_AVG_PERIOD;
	}
	return mul_u64_u32_shr32(val, lab_runnable_avg_yN_inv[local_n & (LAB_LOAD_AVG_PERIOD - 1)]);
}

/*
 * __accumulate_pelt_segments(): what @periods crossed periods contribute: @d1 units that end
 * the last open period (decayed p times), the full periods between (1024 * sum of y^1..y^(p-1),
 * through LOAD_AVG_MAX) and @d3 units of the current one.
 */
LAB_INLINE u32 accumulate_pelt_segments(u64 periods, u32 d1, u32 d3)
{
	u32 c1 = (u32)decay_load((u64)d1, periods);
	u32 c2 = LAB_LOAD_AVG_MAX - (u32)decay_load(LAB_LOAD_AVG_MAX, periods) - 1024;

	return c1 + c2 + d3;
}

/*
 * accumulate_sum(): add @delta units (1024 ns each) at the given load, runnable count and
 * running state, decaying the old sums by the periods crossed. Returns those periods.
 */
LAB_INLINE u64 accumulate_sum(u64 delta, struct lab_sched_avg *sa, u64 load, u64 runnable,
			      u32 running)
{
	u32 contrib = (u32)delta;	/* no period crossed: delta < 1024 */
	u64 periods;

	delta += sa->period_contrib;
	periods = delta / 1024;
	if (periods) {
		sa->load_sum = decay_load(sa->load_sum, periods);
		sa->runnable_sum = decay_load(sa->runnable_sum, periods);
		sa->util_sum = (u32)decay_load((u64)sa->util_sum, periods);
		delta %= 1024;
		/* The kernel computes this only with load: without, runnable and running are 0
		 * and nothing below uses it. */
		contrib = accumulate_pelt_segments(periods, 1024 - sa->period_contrib, (u32)delta);
	}
	sa->period_contrib = (u32)delta;
	/* fair.c adds each term under an if on its factor; a factor of 0 adds 0, so the sums
	 * are the same without the branches, which would multiply the paths the verifier walks
	 * (running is 0 or 1). */
	sa->load_sum += load * contrib;
	sa->runnable_sum += runnable * contrib << LAB_SCHED_CAPACITY_SHIFT;
	sa->util_sum += running * contrib << LAB_SCHED_CAPACITY_SHIFT;
	return periods;
}

/*
 * ___update_load_sum(): bring the sums to @now (ns) with what held since the last update.
 * Returns true when a period boundary was crossed (the averages need recomputing). Differs: a
 * @now before the last update changes nothing (see the top of this file).
 */
LAB_INLINE bool update_load_sum(u64 now, struct lab_sched_avg *sa, u64 load, u64 runnable,
				bool running)
{
	u64 delta, loaded = load != 0;

	if ((s64)(now - sa->last_update_time) < 0)
		return false;
	delta = (now - sa->last_update_time) >> 10;
	if (!delta)
		return false;
	sa->last_update_time += delta << 10;
	/* running is a subset of runnable, which is a subset of load (without load both are 0:
	 * a product rather than a branch, see accumulate_sum()) */
	return accumulate_sum(delta, sa, load, runnable * loaded, (u32)running * (u32)loaded) != 0;
}

/* get_pelt_divider(): the largest sum at the current position within the period. */
LAB_INLINE u32 get_pelt_divider(const struct lab_sched_avg *sa)
{
	return LAB_PELT_MIN_DIVIDER + sa->period_contrib;
}

/* ___update_load_avg(): the averages from the sums, the load scaled by @load (a weight). */
LAB_INLINE void update_load_avg_sa(struct lab_sched_avg *sa, u64 load)
{
	u32 divider = get_pelt_divider(sa);

	sa->load_avg = load * sa->load_sum / divider;
	sa->runnable_avg = sa->runnable_sum / divider;
	sa->util_avg = sa->util_sum / divider;
}

/* cfs_se_util_change(): util_avg moved, so the next util_est_update() may sample it. */
LAB_INLINE void cfs_se_util_change(struct lab_sched_avg *avg)
{
	if (avg->util_est & LAB_UTIL_AVG_UNCHANGED)
		avg->util_est &= ~LAB_UTIL_AVG_UNCHANGED;
}

/* __update_load_avg_blocked_se(): an entity on no queue, brought to @now. */
LAB_INLINE bool update_load_avg_blocked_se(u64 now, lab_se_t *se)
{
	if (!update_load_sum(now, &se->avg, 0, 0, 0))
		return false;
	update_load_avg_sa(&se->avg, se_load_w(se));
	return true;
}

/* __update_load_avg_se(): entity @n of @cfs: queued (ghosts too), runnable (not a ghost),
 * running (the queue's curr). */
LAB_INLINE bool update_load_avg_se(u64 now, struct lab_cfs *cfs, lab_pool_t *pool, u32 n)
{
	lab_se_t *se = SE(pool, n);

	if (!update_load_sum(now, &se->avg, se->on_rq != 0, se->on_rq && !se->delayed,
			     cfs->curr == n))
		return false;
	update_load_avg_sa(&se->avg, se_load_w(se));
	cfs_se_util_change(&se->avg);
	return true;
}

/* __update_load_avg_cfs_rq(): the queue's own signal: its queued weight, its runnable count
 * (h_nr_runnable: ghosts are not runnable) and whether it runs one of its entities. */
LAB_INLINE bool update_load_avg_cfs_rq(u64 now, struct lab_cfs *cfs)
{
	u32 runnable = cfs->nr_queued > cfs->nr_delayed ? cfs->nr_queued - cfs->nr_delayed : 0;

	if (!update_load_sum(now, &cfs->avg, cfs->load_weight, runnable, cfs->curr != 0))
		return false;
	update_load_avg_sa(&cfs->avg, 1);
	return true;
}

/* sub_positive(): subtract, stopping at zero. */
LAB_INLINE u64 lab_sub_positive(u64 a, u64 b)
{
	return a > b ? a - b : 0;
}

/* max_t(u32, sum, avg * PELT_MIN_DIVIDER): a sum is never below what its average implies (the
 * kernel compares the two as u32). */
LAB_INLINE u64 lab_sum_floor(u64 sum, u64 avg)
{
	u32 a = (u32)sum, b = (u32)(avg * LAB_PELT_MIN_DIVIDER);

	return a > b ? a : b;
}

/*
 * update_cfs_rq_load_avg(): take off what departed entities left in @cfs->removed, then bring
 * the queue's signal to @now. Returns true when the averages changed.
 */
LAB_INLINE bool update_cfs_rq_load_avg(u64 now, struct lab_cfs *cfs)
{
	struct lab_sched_avg *sa = &cfs->avg;
	bool decayed = false;

	if (cfs->removed.nr) {
		u32 divider = get_pelt_divider(sa);
		u64 r;

		lab_xchg(&cfs->removed.nr, 0);
		r = lab_xchg(&cfs->removed.load_avg, 0);
		sa->load_avg = lab_sub_positive(sa->load_avg, r);
		sa->load_sum = lab_sub_positive(sa->load_sum, r * divider);
		sa->load_sum = lab_sum_floor(sa->load_sum, sa->load_avg);
		r = lab_xchg(&cfs->removed.util_avg, 0);
		sa->util_avg = lab_sub_positive(sa->util_avg, r);
		sa->util_sum = (u32)lab_sub_positive(sa->util_sum, r * divider);
		sa->util_sum = (u32)lab_sum_floor(sa->util_sum, sa->util_avg);
		r = lab_xchg(&cfs->removed.runnable_avg, 0);
		sa->runnable_avg = lab_sub_positive(sa->runnable_avg, r);
		sa->runnable_sum = lab_sub_positive(sa->runnable_sum, r * divider);
		sa->runnable_sum = lab_sum_floor(sa->runnable_sum, sa->runnable_avg);
		decayed = true;
	}
	return update_load_avg_cfs_rq(now, cfs) || decayed;
}

/* enqueue_load_avg() / dequeue_load_avg(): an entity's load history joins or leaves the
 * queue's. */
LAB_INLINE void enqueue_load_avg(struct lab_cfs *cfs, const lab_se_t *se)
{
	cfs->avg.load_avg += se->avg.load_avg;
	cfs->avg.load_sum += (u64)se_load_w(se) * se->avg.load_sum;
}

LAB_INLINE void dequeue_load_avg(struct lab_cfs *cfs, const lab_se_t *se)
{
	cfs->avg.load_avg = lab_sub_positive(cfs->avg.load_avg, se->avg.load_avg);
	cfs->avg.load_sum = lab_sub_positive(cfs->avg.load_sum,
					     (u64)se_load_w(se) * se->avg.load_sum);
	cfs->avg.load_sum = lab_sum_floor(cfs->avg.load_sum, cfs->avg.load_avg);
}

/*
 * attach_entity_load_avg(): an entity that comes to @cfs (new, or migrated) brings its
 * averages; its sums are rebuilt from them at the queue's position within the period.
 */
LAB_INLINE void attach_entity_load_avg(struct lab_cfs *cfs, lab_se_t *se)
{
	u32 divider = get_pelt_divider(&cfs->avg);

	se->avg.last_update_time = cfs->avg.last_update_time;
	se->avg.period_contrib = cfs->avg.period_contrib;
	se->avg.util_sum = (u32)(se->avg.util_avg * divider);
	se->avg.runnable_sum = se->avg.runnable_avg * divider;
	se->avg.load_sum = se->avg.load_avg * divider;
	if (se_load_w(se) < se->avg.load_sum)
		se->avg.load_sum = se->avg.load_sum / se_load_w(se);
	else
		se->avg.load_sum = 1;
	enqueue_load_avg(cfs, se);
	cfs->avg.util_avg += se->avg.util_avg;
	cfs->avg.util_sum += se->avg.util_sum;
	cfs->avg.runnable_avg += se->avg.runnable_avg;
	cfs->avg.runnable_sum += se->avg.runnable_sum;
}

/* detach_entity_load_avg(): an entity that leaves @cfs for another queue takes its averages. */
LAB_INLINE void detach_entity_load_avg(struct lab_cfs *cfs, const lab_se_t *se)
{
	dequeue_load_avg(cfs, se);
	cfs->avg.util_avg = lab_sub_positive(cfs->avg.util_avg, se->avg.util_avg);
	cfs->avg.util_sum = (u32)lab_sub_positive(cfs->avg.util_sum, se->avg.util_sum);
	cfs->avg.util_sum = (u32)lab_sum_floor(cfs->avg.util_sum, cfs->avg.util_avg);
	cfs->avg.runnable_avg = lab_sub_positive(cfs->avg.runnable_avg, se->avg.runnable_avg);
	cfs->avg.runnable_sum = lab_sub_positive(cfs->avg.runnable_sum, se->avg.runnable_sum);
	cfs->avg.runnable_sum = lab_sum_floor(cfs->avg.runnable_sum, cfs->avg.runnable_avg);
}

/*
 * update_load_avg(): entity @n of @cfs and the queue, brought to the queue's clock, then an
 * attach (LAB_DO_ATTACH, for an entity that is not attached anywhere) or a detach (LAB_DO_DETACH,
 * for a migration; the entity is then attached nowhere, as migrate_task_rq_fair() leaves it).
 * Call before changing what the entity or the queue is. Returns true when the queue's averages
 * changed (cfs_rq_util_change(): what a frequency governor would hear of).
 */
LAB_NOINLINE bool update_load_avg(struct lab_cfs *cfs, lab_pool_t *pool, u32 n, int flags,
				u64 *st)
{
	lab_se_t *se = SE(pool, n);
	u64 now = cfs->clock_pelt;
	bool decayed;

	if (se->avg.last_update_time)
		update_load_avg_se(now, cfs, pool, n);
	decayed = update_cfs_rq_load_avg(now, cfs);
	if (!se->avg.last_update_time && (flags & LAB_DO_ATTACH)) {
		attach_entity_load_avg(cfs, se);
		lab_count(st, LAB_ST_PELT_ATTACH);
		return true;
	}
	if (flags & LAB_DO_DETACH) {
		detach_entity_load_avg(cfs, se);
		se->avg.last_update_time = 0;
		lab_count(st, LAB_ST_PELT_DETACH);
		return true;
	}
	return decayed;
}

/*
 * remove_entity_load_avg() with migrate_task_rq_fair()'s reset: an entity that left @cfs asleep
 * and wakes on another CPU is brought to the queue's last update (sync_entity_load_avg()), its
 * averages go into the queue's removed sums (atomically: @cfs is not locked), and it is attached
 * nowhere until it joins its new queue.
 */
LAB_INLINE void remove_entity_load_avg(struct lab_cfs *cfs, lab_se_t *se, u64 *st)
{
	update_load_avg_blocked_se(READ_ONCE(cfs->avg.last_update_time), se);
	lab_atomic_add(&cfs->removed.util_avg, se->avg.util_avg);
	lab_atomic_add(&cfs->removed.load_avg, se->avg.load_avg);
	lab_atomic_add(&cfs->removed.runnable_avg, se->avg.runnable_avg);
	lab_atomic_add(&cfs->removed.nr, 1);
	se->avg.last_update_time = 0;
	lab_count(st, LAB_ST_PELT_REMOVE);
}

/* init_entity_runnable_average(): a new task starts as fully loaded at its weight (so that it
 * is not taken for light before it has a history), with no utilisation yet. */
LAB_INLINE void init_entity_runnable_average(lab_se_t *se)
{
	__builtin_memset(&se->avg, 0, sizeof(se->avg));
	se->avg.load_avg = se_load_w(se);
}

/*
 * post_init_entity_util_avg(): a forked task's first utilisation, before it joins @cfs: its
 * weight's share of the queue's utilisation, at most half of the capacity left (all of that
 * half on an idle queue); runnable starts equal to it.
 */
LAB_INLINE void post_init_entity_util_avg(const struct lab_cfs *cfs, lab_se_t *se)
{
	s64 cap = ((s64)LAB_SCHED_CAPACITY - (s64)cfs->avg.util_avg) / 2;

	if (cap > 0) {
		if (cfs->avg.util_avg) {
			se->avg.util_avg =
				cfs->avg.util_avg * se_load_w(se) / (cfs->avg.load_avg + 1);
			if (se->avg.util_avg > (u64)cap)
				se->avg.util_avg = (u64)cap;
		} else {
			se->avg.util_avg = (u64)cap;
		}
	}
	se->avg.runnable_avg = se->avg.util_avg;
}

/* _task_util_est(): the task's estimate without the UNCHANGED mark. */
LAB_INLINE u32 task_util_est(const lab_se_t *se)
{
	return se->avg.util_est & ~LAB_UTIL_AVG_UNCHANGED;
}

/* util_est_enqueue() / util_est_dequeue(): the queue's sum of its tasks' estimates. */
LAB_INLINE void util_est_enqueue(struct lab_cfs *cfs, const lab_se_t *se)
{
	cfs->avg.util_est += task_util_est(se);
}

LAB_INLINE void util_est_dequeue(struct lab_cfs *cfs, const lab_se_t *se)
{
	u32 est = task_util_est(se);

	cfs->avg.util_est -= cfs->avg.util_est < est ? cfs->avg.util_est : est;
}

/*
 * util_est_update(): at a sleep, the task's estimate follows its utilisation: at once upwards,
 * by 1/4 of the difference downwards, not at all within 1 % of it, or when the utilisation did
 * not move since the last sample, or when the task did not get all the CPU it wanted (runnable
 * well above util), or when the CPU was saturated (util above capacity).
 */
LAB_INLINE void util_est_update(lab_se_t *se, bool task_sleep)
{
	u32 ewma, dequeued, diff;

	if (!task_sleep)
		return;
	ewma = se->avg.util_est;
	if (ewma & LAB_UTIL_AVG_UNCHANGED)
		return;
	dequeued = (u32)se->avg.util_avg;
	if (ewma <= dequeued) {
		ewma = dequeued;
		goto done;
	}
	diff = ewma - dequeued;
	if (diff < LAB_UTIL_EST_MARGIN)
		goto done;
	if (dequeued > LAB_SCHED_CAPACITY)
		return;
	if ((u64)dequeued + LAB_UTIL_EST_MARGIN < se->avg.runnable_avg)
		goto done;
	ewma <<= LAB_UTIL_EST_WEIGHT_SHIFT;
	ewma -= diff;
	ewma >>= LAB_UTIL_EST_WEIGHT_SHIFT;
done:
	se->avg.util_est = ewma | LAB_UTIL_AVG_UNCHANGED;
}

/* cpu_util_cfs(): a CPU's utilisation, the larger of its average and (UTIL_EST) its tasks'
 * estimates, capped at the capacity. Plain loads: readable without the queue's lock. */
LAB_INLINE u64 cpu_util_cfs(const struct lab_cfs *cfs, bool util_est)
{
	u64 util = READ_ONCE(cfs->avg.util_avg);

	if (util_est) {
		u64 est = READ_ONCE(cfs->avg.util_est);

		if (est > util)
			util = est;
	}
	return util < LAB_SCHED_CAPACITY ? util : LAB_SCHED_CAPACITY;
}

/*
 * cpu_util_cfs_boost(): what schedutil reads of a CPU (sugov_get_util(); cpu_util() with boost):
 * the larger of its utilisation and runnable averages and (UTIL_EST) its tasks' estimates, capped
 * at the capacity. The frequency hand-off gives schedutil this as the CPU's performance target
 * (scx_bpf_cpuperf_set(), 0..SCX_CPUPERF_ONE = 1024, the capacity scale), which schedutil reads
 * in its place while a sched_ext scheduler runs every task; schedutil adds its own headroom.
 */
LAB_INLINE u64 cpu_util_cfs_boost(const struct lab_cfs *cfs, bool util_est)
{
	u64 util = READ_ONCE(cfs->avg.util_avg), runnable = READ_ONCE(cfs->avg.runnable_avg);

	if (runnable > util)
		util = runnable;
	if (util_est) {
		u64 est = READ_ONCE(cfs->avg.util_est);

		if (est > util)
			util = est;
	}
	return util < LAB_SCHED_CAPACITY ? util : LAB_SCHED_CAPACITY;
}

/* task_h_load() of a task in the root group: its load average scaled by h_load / (load + 1),
 * h_load being the queue's load average. */
LAB_INLINE u64 task_h_load_math(u64 se_load_avg, u64 cfs_load_avg)
{
	return se_load_avg * cfs_load_avg / (cfs_load_avg + 1);
}

#endif /* __LAB_PELT_H */
