/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The scheduler's global state -- the knobs user space writes, the per-CPU queues and CPU
 * records, the topology, the decision counters -- and the lookups every callback uses to reach
 * it (the entity pool, a CPU's queue, a task's context, this CPU's counters, the parameters).
 * Included once, by main.bpf.c, before the headers of the callbacks' parts.
 */
#ifndef __LAB_STATE_BPF_H
#define __LAB_STATE_BPF_H

/* How long a dispatched task may run before the kernel asks us again; the tick, the hrtick
 * timer and wakeup preemption normally decide much earlier. */
#define LAB_SLICE_NS		(20ULL * 1000 * 1000)

/*
 * The sched_ext watchdog: a runnable task of ours that has not run for this long ejects the
 * scheduler (the kernel's EEVDF takes over, and the daemon reports the stall). The longest the
 * kernel allows: a fair queue makes a task wait about (queued tasks) x (slice), so with the
 * default slices a CPU can hold some ten thousand runnable tasks before a fair wait would trip it.
 */
#define LAB_WATCHDOG_MS		30000

/* __TASK_STOPPED | __TASK_TRACED | TASK_PARKED | TASK_DEAD | TASK_FROZEN (is_special_task_state) */
#define LAB_SPECIAL_STATES	(0x4 | 0x8 | 0x40 | 0x80 | 0x8000)
#define LAB_SCHED_NORMAL	0
#define LAB_SCHED_IDLE		5
#define LAB_SCHED_EXT		7
#define LAB_ENQUEUE_INITIAL	0x80000	/* the core's ENQUEUE_INITIAL: wake_up_new_task() */

/* The live knobs, pinned by the daemon for the CLI (see src/control.rs). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct lab_knobs);
} lab_knobs SEC(".maps");

/* One EEVDF queue per CPU (struct lab_rq, in eevdf.h), each with its lock. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LAB_MAX_CPUS);
	__type(key, u32);
	__type(value, struct lab_rq);
} lab_rqs SEC(".maps");

/* The entity pool's arena (slots.bpf.h manages it). */
/* The arena page size (the kernel's PAGE_SIZE on every architecture the lab builds for). */
#define LAB_PAGE_SIZE		4096ULL
/* Pages the arena can hold: LAB_MAX_SLOTS entities. */
#define LAB_ARENA_PAGES		((LAB_MAX_SLOTS * sizeof(struct lab_se) + LAB_PAGE_SIZE - 1) / \
				 LAB_PAGE_SIZE)

struct {
	__uint(type, BPF_MAP_TYPE_ARENA);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, LAB_ARENA_PAGES);
	__ulong(map_extra, LAB_ARENA_BASE);	/* its user space address: the pool starts there */
} lab_arena SEC(".maps");

/* Events for the daemon (struct lab_event), which sleeps until one arrives. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} lab_events SEC(".maps");

/* The highest knobs seq announced to the daemon (one event per write, whichever CPU sees it). */
u64 knob_seq_announced;

/* Per task: its slot and what the last select_cpu learnt about its wakeup. */
struct task_ctx {
	u32 slot;
	u32 wake_flags;		/* SCX_WAKE_* of the last select_cpu */
	s32 last_cpu;		/* the queue it last joined (migration count) */
	s32 recent_used_cpu;	/* select_idle_sibling()'s p->recent_used_cpu */
	u32 wakee_flips;	/* record_wakee(), as a waker */
	s32 last_wakee;		/* pid */
	u64 wakee_flip_decay_ts;
	u32 prio_changed;	/* LAB_PRIO_*: a reweight waits for prio_changed_fair()'s check */
	u8 select_idle;		/* the last select_cpu chose its CPU because it was idle */
	u8 repick;		/* LAB_REPICK_*: lab_enqueue_task() left its pick to lab_enqueue_repick() */
	/* An enqueue's early findings, kept here until its end rather than in registers (see
	 * enqueue_task_masked()): preempt=lazy holds its reschedule; update_curr() asked for one. */
	u8 enq_lazy;
	u8 enq_kick;
	u32 repick_curr;	/* the running entity that pick is to judge the wakee against */
	u32 push_to;		/* 1 + the CPU an active balance pushes it to when it is put back */
	u64 bw_exec;		/* its sum_exec_runtime already charged to its groups' cpu.max */
};

/* task_ctx.prio_changed: the weight changed; ... and it got lower (the priority worse). */
#define LAB_PRIO_CHANGED	1
#define LAB_PRIO_WORSE		2

/* task_ctx.wake_flags: select_cpu ran for this wakeup (the kernel's WF_RQ_SELECTED). */
#define LAB_WF_RQ_SELECTED	(1U << 31)

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctx_stor SEC(".maps");

/* Per-CPU copy of the knobs, refreshed when their sequence number moves; balance pacing. */
/* A CPU's own copy of a sched domain's balancing state (struct sched_domain's). */
struct lab_sd_state {
	u64 last_balance;	/* ns */
	u32 balance_interval;	/* ms; 0: not set up yet (min_interval) */
	u32 nr_balance_failed;
	u64 max_newidle_lb_cost;	/* ns: the longest newidle balance here, decaying */
	u64 last_decay_max_lb_cost;	/* ns */
	struct lab_newidle ni;	/* newidle_call, newidle_success, newidle_ratio, newidle_stamp */
};

struct lab_cpu {
	u64 knob_seq;
	struct lab_params params;
	u32 balance_ticks;
	struct lab_sd_state sd[LAB_MAX_LEVELS];
	u64 next_balance;	/* rq->next_balance: the earliest balance due at an idle level (ns) */
	u64 avg_idle;		/* rq->avg_idle: the CPU's idle periods, averaged (ns); 0: not set up */
	u64 max_idle_balance_cost;	/* rq->max_idle_balance_cost (ns) */
} __attribute__((aligned(64)));
struct lab_cpu lab_cpus[LAB_MAX_CPUS];

/* The topology, filled in by user space before load. */
const volatile struct lab_topo topo;

/* SIS_UTIL's scan budget per LLC and when it was last computed. */
u32 llc_nr_idle_scan[LAB_MAX_CPUS];
u64 llc_scan_stamp[LAB_MAX_CPUS];
/* sd_llc_shared's has_idle_cores per LLC: some core of it may be idle as a whole (SMT only). */
u32 llc_has_idle_cores[LAB_MAX_CPUS];

/* Decision counters, one row per CPU (read by the daemon through the mmapped .bss). */
u64 lab_stats[LAB_MAX_CPUS][LAB_STATS_STRIDE] __attribute__((aligned(64)));

/* TICK_NSEC, measured by user space before attaching (1e9 / CONFIG_HZ); until then HZ=250's. */
#define LAB_DEFAULT_TICK_NS	(4ULL * 1000 * 1000)
u64 tick_ns = LAB_DEFAULT_TICK_NS;

/* Set by lab_probe_clock() for user space to derive HZ. */
u64 probe_jiffies, probe_ns;
extern const void jiffies_64 __ksym;	/* untyped: not in the kernel's BTF */

/* ---------------------------------------------------------------------------------------------
 * Lookups
 */

/* The entity pool: the start of the arena, set by ops.init (slots.bpf.h). */
lab_pool_t *lab_pool;

static __always_inline lab_pool_t *pool_get(void)
{
	/* Name the arena: a program that reaches the pool must be associated with it. */
	asm volatile("" :: "r"(&lab_arena));
	return lab_pool;
}

/* @cpu's EEVDF queue (cpu_rq(cpu)->cfs). */
static __always_inline struct lab_rq *rq_get(s32 cpu)
{
	u32 c = cpu;

	return bpf_map_lookup_elem(&lab_rqs, &c);
}

/* @cpu is offline (ops.cpu_offline): nothing of ours goes there. */
static __always_inline bool cpu_offline(s32 cpu)
{
	struct lab_rq *rq = rq_get(cpu);

	return !rq || READ_ONCE(rq->offline);
}

/* capacity_of() of @rq's CPU: what update_cpu_capacity() last left of it to the fair class. */
static __always_inline u32 rq_capacity(const struct lab_rq *rq)
{
	u32 cap = READ_ONCE(rq->cpu_capacity);

	return cap ? cap : LAB_SCHED_CAPACITY;
}

/* arch_scale_cpu_capacity() of @rq's CPU, as update_cpu_capacity() last read it. */
static __always_inline u32 rq_capacity_orig(const struct lab_rq *rq)
{
	u32 cap = READ_ONCE(rq->cpu_capacity_orig);

	return cap ? cap : LAB_SCHED_CAPACITY;
}

/* @p's per-task context (slot, wakeup facts, load); NULL for a task without a slot (only while
 * the scheduler exits because the pool or memory ran out: see ops.init_task). */
static __always_inline struct task_ctx *tctx_get(struct task_struct *p)
{
	struct task_ctx *tc = bpf_task_storage_get(&task_ctx_stor, p, NULL, 0);

	return tc && tc->slot ? tc : NULL;
}

/*
 * Is @p's migration disabled (migrate_disable())? The BPF trampoline disables migration around
 * every program it runs, so the task the program runs in (the prev of ops.dispatch, the running
 * task of ops.tick) reads one more than its own count: a 1 there is the trampoline's alone.
 */
static __always_inline bool task_migration_disabled(const struct task_struct *p)
{
	u16 n = p->migration_disabled;

	if (n == 1)
		return (const struct task_struct *)bpf_get_current_task_btf() != p;
	return n;
}

/* The decision counters of the CPU running this program. */
static __always_inline u64 *stats_row(void)
{
	u32 c = bpf_get_smp_processor_id();

	if (c >= LAB_MAX_CPUS)
		return NULL;
	return lab_stats[c];
}

/* Count one decision on this CPU's row. */
static __always_inline void stat_inc(u32 idx)
{
	u64 *st = stats_row();

	if (st && idx < LAB_NR_STATS)
		st[idx]++;
}

/* Tell the daemon something (a global subprogram: verified once, whatever its call sites). */
__noinline int lab_announce(u32 kind, u64 seq)
{
	struct lab_event ev = { .kind = kind, .seq = seq };

	bpf_ringbuf_output(&lab_events, &ev, sizeof(ev), 0);
	return 0;
}

/* The knobs as this CPU last saw them; copied under the knobs' lock when a writer moved seq. The
 * first CPU to see a new seq announces it, so that the daemon wakes to log the change. */
static __always_inline const struct lab_params *params_get(void)
{
	u32 c = bpf_get_smp_processor_id(), zero = 0;
	struct lab_knobs *k;
	struct lab_cpu *pc;
	u64 seq, seen;

	if (c >= LAB_MAX_CPUS)
		c = 0;
	pc = &lab_cpus[c];
	k = bpf_map_lookup_elem(&lab_knobs, &zero);
	if (k && READ_ONCE(k->seq) != pc->knob_seq) {
		bpf_spin_lock(&k->lock);
		pc->knob_seq = seq = k->seq;
		pc->params.features = k->features;
		pc->params.base_slice = k->base_slice_ns;
		pc->params.normalized_slice = k->normalized_slice_ns;
		pc->params.migration_cost = k->migration_cost_ns;
		pc->params.nr_migrate = k->nr_migrate;
		pc->params.preempt = k->preempt;
		pc->params.cgroup_mode = k->cgroup_mode;
		bpf_spin_unlock(&k->lock);
		pc->params.tick_ns = tick_ns;
		seen = READ_ONCE(knob_seq_announced);
		if (seq > seen && __sync_bool_compare_and_swap(&knob_seq_announced, seen, seq))
			lab_announce(LAB_EV_KNOBS, seq);
	}
	return &pc->params;
}

/* The weight of @p: the nice table at full resolution, not the lossy p->scx.weight. */
static __always_inline u32 task_weight(const struct task_struct *p)
{
	return lab_task_weight(p->static_prio, p->policy == LAB_SCHED_IDLE);
}

/* The inverse weight that goes with task_weight() (se->load.inv_weight). */
static __always_inline u32 task_inv_weight(const struct task_struct *p)
{
	return lab_task_inv_weight(p->static_prio, p->policy == LAB_SCHED_IDLE);
}

#endif /* __LAB_STATE_BPF_H */
