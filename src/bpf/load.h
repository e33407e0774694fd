/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __LAB_LOAD_H
#define __LAB_LOAD_H

#include "pelt.h"

/*
 * Wake-affine and balancing arithmetic (fair.c: wake_wide(), wake_affine_weight(),
 * update_idle_cpu_scan(), the newidle statistics) over the load signals of pelt.h.
 */

/* The newidle balance statistics of one CPU (fair.c: update_newidle_stats(), NI_RANDOM/NI_RATE). */
struct lab_newidle {
	u32 calls;
	u32 success;		/* weighted successes within the current window */
	u32 ratio;		/* successes per 1024 calls (plus NI_RATE's term), at most 1024 */
	u32 pad;
	u64 stamp;		/* ns when the last window closed */
};

/*
 * wake_wide(): spread the wakee when waker and wakee each switch between many partners: the
 * one with fewer flips has at least llc_size of them and the other llc_size times as many.
 */
LAB_INLINE bool wake_wide_math(u32 waker_flips, u32 wakee_flips, u32 llc_size)
{
	u32 master = waker_flips > wakee_flips ? waker_flips : wakee_flips;
	u32 slave = waker_flips > wakee_flips ? wakee_flips : waker_flips;

	if (slave < llc_size || master < slave * llc_size)
		return false;
	return true;
}

/*
 * wake_affine_weight(): pull the wakee to the waker's CPU unless that CPU, with the wakee (and,
 * for a sync wakeup, without the waker), would carry more load than the previous CPU without
 * it; WA_BIAS inflates the previous CPU's side by half the domain's imbalance_pct, tilting the
 * choice towards the waker. Each side is weighed against its CPU's capacity (capacity_of(): the
 * waker's CPU's load times the previous CPU's capacity, and the other way round). Returns true
 * for "this CPU".
 */
LAB_INLINE bool wake_affine_weight_math(s64 this_load, s64 prev_load, s64 task_load,
					s64 waker_load, bool sync, u32 imbalance_pct, bool bias,
					u32 this_capacity, u32 prev_capacity)
{
	s64 this_eff = this_load, prev_eff;

	if (sync) {
		if (waker_load > this_eff)
			return true;
		this_eff -= waker_load;
	}
	this_eff += task_load;
	if (bias)
		this_eff *= 100;
	this_eff *= prev_capacity;

	prev_eff = prev_load - task_load;
	if (bias)
		prev_eff *= 100 + ((s64)imbalance_pct - 100) / 2;
	prev_eff *= this_capacity;
	if (sync)
		prev_eff += 1;
	return this_eff < prev_eff;
}

/*
 * update_idle_cpu_scan() (SIS_UTIL): how many CPUs of an LLC the idle-CPU scan may visit,
 * shrinking quadratically with the LLC's utilisation and reaching 0 at about 100/pct.
 */
LAB_INLINE u32 nr_idle_scan_math(u64 sum_util, u32 llc_weight, u32 pct)
{
	u64 x, y;

	if (!llc_weight)
		return 0;
	x = sum_util / llc_weight;
	y = x * x * pct * pct / (10000ULL * LAB_SCHED_CAPACITY);
	if (y > LAB_SCHED_CAPACITY)
		y = LAB_SCHED_CAPACITY;
	y = LAB_SCHED_CAPACITY - y;
	return (u32)(y * llc_weight / LAB_SCHED_CAPACITY);
}

/* The newidle statistics start half successful (a ratio of 512). */
LAB_INLINE void newidle_init(struct lab_newidle *ni, u64 now)
{
	ni->calls = 512;
	ni->success = 256;
	ni->ratio = 512;
	ni->stamp = now;
}

/* NI_RANDOM: with a success ratio below 1024, run a newidle balance with chance ~(1+ratio)/1024. */
LAB_INLINE bool newidle_should_run(const struct lab_newidle *ni, u32 rnd, bool ni_random)
{
	if (!ni_random || ni->ratio >= 1024)
		return true;
	return (rnd % 1024) <= 1 + ni->ratio;
}

/*
 * update_newidle_stats(): count a call and (for a balance that ran) its success, the latter
 * weighted by 1024/(1+ratio) under NI_RANDOM to undo the sampling. Every 1024 calls the window
 * closes: ratio = successes (+ elapsed ns >> 22 with NI_RATE, so that rare newidle balancing is
 * always allowed), capped at 1024; calls and successes are halved.
 */
LAB_INLINE void newidle_account(struct lab_newidle *ni, bool ran, bool success, u64 now,
				bool ni_random, bool ni_rate)
{
	u64 r;

	ni->calls++;
	if (ran && success)
		ni->success += (ni_random && ni->ratio < 1024) ? (1024 + (1 + ni->ratio) / 2) / (1 + ni->ratio) : 1;
	if (ni->calls < 1024)
		return;
	r = ni->success;
	if (ni_rate && now > ni->stamp)
		r += (now - ni->stamp) >> 22;
	ni->ratio = r > 1024 ? 1024 : (u32)r;
	ni->calls >>= 1;
	ni->success >>= 1;
	ni->stamp = now;
}

/*
 * A wakeup ends an idle period of @idle_ns (ttwu_do_activate()): update_avg()'s 1/8 step of
 * rq->avg_idle towards it, capped at twice max_idle_balance_cost.
 */
LAB_INLINE void lab_update_avg_idle(u64 *avg_idle, u64 idle_ns, u64 max_idle_balance_cost)
{
	s64 diff = (s64)(idle_ns - *avg_idle);
	u64 max = 2 * max_idle_balance_cost;

	*avg_idle += diff / 8;
	if (*avg_idle > max)
		*avg_idle = max;
}

/*
 * update_newidle_cost(): a domain's newidle balance took @cost ns (0: the periodic balance's
 * visit). A larger cost becomes the domain's max_newidle_lb_cost; otherwise, once a second
 * (HZ jiffies) the maximum decays by 3/256. Returns whether it decayed.
 */
LAB_INLINE bool lab_update_newidle_cost(u64 *max_cost, u64 *last_decay, u64 cost, u64 now)
{
	if (cost > *max_cost) {
		*max_cost = cost;
		*last_decay = now;
		return false;
	}
	if (now > *last_decay + 1000000000ULL) {
		*max_cost = *max_cost * 253 / 256;
		*last_decay = now;
		return true;
	}
	return false;
}

#endif /* __LAB_LOAD_H */
