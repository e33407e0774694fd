/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The hrtick stand-in (kernel/sched/core.c's hrtick, started by fair.c's hrtick_start_fair()):
 * one CPU-pinned BPF timer per CPU that asks for a reschedule at the running entity's deadline.
 */
#ifndef __LAB_HRTICK_BPF_H
#define __LAB_HRTICK_BPF_H

/* The hrtick stand-in: one timer per CPU (the map index is the CPU). While a higher class holds
 * the CPU no entity of ours runs there, and the same timer stands in for that CPU's tick. */
struct lab_hrtick {
	struct bpf_timer timer;
	u32 armed;		/* LAB_TIMER_* */
	u32 pad;
};

#define LAB_TIMER_HRTICK	1	/* the running entity's deadline */
#define LAB_TIMER_RELEASED	2	/* the tick of a CPU that a higher class holds */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LAB_MAX_CPUS);
	__type(key, u32);
	__type(value, struct lab_hrtick);
} lab_hrticks SEC(".maps");

/*
 * hrtick(): the deadline of @key's running entity came: its groups are brought up to date as at a
 * tick, and the pick decides (entity_tick()'s queued path reschedules unconditionally, through
 * resched_curr_lazy(): under preempt=lazy a
 * timer that fires on another CPU leaves the switch to @key's tick; on @key itself the return
 * from the interrupt acts on it at once). A timer armed from another CPU (an enqueue there)
 * fires where it was armed, so the kick names the CPU explicitly.
 */
__noinline int lab_group_hrtick(s32 cpu, u64 now);
__noinline int lab_release_tick(s32 cpu);

static int hrtick_fire(void *map, int *key, struct lab_hrtick *h)
{
	s32 cpu = *key;
	struct lab_rq *rq;
	u32 armed = h->armed;

	h->armed = 0;
	if (armed == LAB_TIMER_RELEASED) {
		if (lab_release_tick(cpu)) {
			h->armed = LAB_TIMER_RELEASED;
			bpf_timer_start(&h->timer, tick_ns, BPF_F_TIMER_CPU_PIN);
		}
		return 0;
	}
	if (armed != LAB_TIMER_HRTICK)
		return 0;
	stat_inc(LAB_ST_PREEMPT_HRTICK);
	/* hrtick() runs task_tick_fair(queued): entity_tick() on the running task's levels. */
	lab_group_hrtick(cpu, scx_bpf_now());
	if (params_get()->preempt == LAB_PREEMPT_LAZY && cpu != bpf_get_smp_processor_id() &&
	    (rq = rq_get(cpu))) {
		WRITE_ONCE(rq->lazy, 1);
		stat_inc(LAB_ST_PREEMPT_LAZY);
		return 0;
	}
	scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	return 0;
}

/*
 * hrtick_start(): arm @cpu's timer @wall_ns from now (hrtick_delay_ns()), replacing an armed one.
 * Differs: the timer is pinned to the CPU that arms it, which for an enqueue from another CPU is
 * not @cpu (hrtick_fire() kicks @cpu all the same).
 */
static void hrtick_start(s32 cpu, u64 wall_ns)
{
	struct lab_hrtick *h;
	u32 c = cpu;

	h = bpf_map_lookup_elem(&lab_hrticks, &c);
	if (!h)
		return;
	h->armed = LAB_TIMER_HRTICK;
	bpf_timer_start(&h->timer, wall_ns ? wall_ns : 1, BPF_F_TIMER_CPU_PIN);
}

/* hrtick_update(): an enqueue arms @cpu's timer for its running entity unless one is armed. */
static void hrtick_update(s32 cpu, u64 wall_ns)
{
	struct lab_hrtick *h;
	u32 c = cpu;

	h = bpf_map_lookup_elem(&lab_hrticks, &c);
	if (h && !h->armed)
		hrtick_start(cpu, wall_ns);
}

/* hrtick_cancel(): the running entity stopped. */
static void hrtick_cancel(s32 cpu)
{
	struct lab_hrtick *h;
	u32 c = cpu;

	h = bpf_map_lookup_elem(&lab_hrticks, &c);
	if (h && h->armed) {
		h->armed = 0;
		bpf_timer_cancel(&h->timer);
	}
}

/* A higher class took @cpu (ops.cpu_release, on @cpu): its tick goes on on the timer. */
static void release_tick_start(s32 cpu)
{
	struct lab_hrtick *h;
	u32 c = cpu;

	h = bpf_map_lookup_elem(&lab_hrticks, &c);
	if (!h)
		return;
	h->armed = LAB_TIMER_RELEASED;
	bpf_timer_start(&h->timer, tick_ns, BPF_F_TIMER_CPU_PIN);
}

/* @cpu is back (ops.cpu_acquire): the stand-in tick stops. */
static void release_tick_stop(s32 cpu)
{
	struct lab_hrtick *h;
	u32 c = cpu;

	h = bpf_map_lookup_elem(&lab_hrticks, &c);
	if (h && h->armed == LAB_TIMER_RELEASED) {
		h->armed = 0;
		bpf_timer_cancel(&h->timer);
	}
}

/* Set up @cpu's timer (ops.init). */
static __always_inline int hrtick_init(s32 cpu)
{
	struct lab_hrtick *h;
	u32 c = cpu;

	h = bpf_map_lookup_elem(&lab_hrticks, &c);
	if (!h)
		return -ENOENT;
	bpf_timer_init(&h->timer, &lab_hrticks, CLOCK_MONOTONIC);
	bpf_timer_set_callback(&h->timer, hrtick_fire);
	return 0;
}

#endif /* __LAB_HRTICK_BPF_H */
