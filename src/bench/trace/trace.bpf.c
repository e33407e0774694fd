/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The bench's scheduling tracer (`bench --trace`): a tracing program on the sched_switch,
 * sched_waking, sched_wakeup and sched_wakeup_new tracepoints that keeps, for the traced tasks,
 *
 *  - the wakeup latency: from sched_wakeup (or sched_wakeup_new) to the task's next switch in;
 *  - the run length before an involuntary switch (preempted, or left runnable) and before a
 *    voluntary one (it blocked): from its switch in to its switch out;
 *  - how many wakeups ran on another CPU than the one the task last ran on, and how many of
 *    those on the waker's CPU (where sched_waking fired; the forking CPU for a new task): the
 *    outcome of the wake-affine choice, whatever the scheduler;
 *  - its switches out, voluntary and involuntary, as the kernel counts nvcsw and nivcsw;
 *  - the program's own cost: the time from its entry to its last update, per event.
 *
 * It runs on every context switch and wakeup of the system, whatever the scheduler. The work
 * per event is constant: two lookups in the filter, two task-storage lookups and a few atomic
 * adds to global counters; no loop depends on the data. Histograms and counters are cumulative
 * globals that userspace reads through the mapped .bss and subtracts at the edges of a window.
 * The traced tasks are the tids in `traced`, or every task but the idle ones with `trace_all`.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "hist.h"

char _license[] SEC("license") = "GPL";

/* The histograms and counters; the Rust side (mod.rs) uses the same indices. */
enum lab_trace_hist { H_WAKEUP, H_RUN_INVOL, H_RUN_VOL, NR_HISTS };
enum lab_trace_count {
	C_WAKEUPS,	 /* wakeups that ran (the events of H_WAKEUP) */
	C_WAKE_MIGRATED, /* ... on another CPU than the task last ran on */
	C_SW_VOL,	 /* switches out of traced tasks that blocked */
	C_SW_INVOL,	 /* ... that were preempted or stayed runnable */
	C_EVENTS,	 /* tracepoint hits that touched a traced task */
	C_COST_NS,	 /* the programs' time on those hits */
	C_WAKE_TO_WAKER, /* migrated wakeups that ran on the waker's CPU */
	NR_COUNTS,
};

/* Cumulative since load: userspace takes differences. */
__u64 hist[NR_HISTS][TRACE_BUCKETS];
__u64 counts[NR_COUNTS];
/* The largest value since userspace last reset it (it swaps in 0 at every read). */
__u64 max_ns[NR_HISTS];
/* 1: trace every task (external tools, whose tids the bench does not know). */
__u32 trace_all;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
} traced SEC(".maps");

/* A traced task's state between its events. */
struct task_ctx {
	__u64 wake_ts;	 /* its last wakeup, until it runs (0: none pending) */
	__u64 run_start; /* its last switch in, until it switches out (0: unknown) */
	__s32 last_cpu;	 /* the CPU it last ran on, + 1 (0: unknown) */
	__s32 waker_cpu; /* the CPU its pending wakeup came from, + 1 (0: unknown) */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctxs SEC(".maps");

/* How often a racing update of max_ns is retried before it gives up (the max is a report). */
#define MAX_RETRIES 4

static __always_inline bool is_traced(struct task_struct *p)
{
	__u32 pid = p->pid;

	if (!pid)
		return false;
	if (trace_all)
		return true;
	return bpf_map_lookup_elem(&traced, &pid) != NULL;
}

static __always_inline void record(int h, __u64 v)
{
	unsigned int b = trace_bucket(v);
	__u64 m;
	int i;

	/* Keep the bound visible to the verifier, whatever the compiler proved. */
	asm volatile("" : "+r"(b));
	if (b >= TRACE_BUCKETS)
		b = TRACE_BUCKETS - 1;
	__sync_fetch_and_add(&hist[h][b], 1);
	m = max_ns[h];
	for (i = 0; i < MAX_RETRIES && v > m; i++) {
		__u64 old = __sync_val_compare_and_swap(&max_ns[h], m, v);

		if (old == m)
			break;
		m = old;
	}
}

static __always_inline struct task_ctx *ctx_of(struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

static __always_inline void charge(__u64 start)
{
	__sync_fetch_and_add(&counts[C_EVENTS], 1);
	__sync_fetch_and_add(&counts[C_COST_NS], bpf_ktime_get_ns() - start);
}

static __always_inline int on_wakeup(struct task_struct *p, bool new)
{
	__u64 now = bpf_ktime_get_ns();
	struct task_ctx *c;

	if (!is_traced(p))
		return 0;
	c = ctx_of(p);
	if (c) {
		c->wake_ts = now;
		if (new)
			c->waker_cpu = bpf_get_smp_processor_id() + 1;
	}
	charge(now);
	return 0;
}

/* try_to_wake_up() fires it on the waker's CPU, before the CPU choice. */
SEC("tp_btf/sched_waking")
int BPF_PROG(lab_trace_waking, struct task_struct *p)
{
	__u64 now = bpf_ktime_get_ns();
	struct task_ctx *c;

	if (!is_traced(p))
		return 0;
	c = ctx_of(p);
	if (c)
		c->waker_cpu = bpf_get_smp_processor_id() + 1;
	charge(now);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(lab_trace_wakeup, struct task_struct *p)
{
	return on_wakeup(p, false);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(lab_trace_wakeup_new, struct task_struct *p)
{
	return on_wakeup(p, true);
}

/*
 * A switch out is involuntary as the kernel counts nivcsw: the task was preempted, or it was
 * still runnable (TASK_RUNNING: a yield, or a blocking attempt undone by a signal). A pending
 * wakeup of a task that switches out is dropped: it was woken while it still ran (ttwu_runnable),
 * and its next switch in ends no wait.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(lab_trace_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	__s32 cpu = bpf_get_smp_processor_id() + 1;
	struct task_ctx *c;
	bool hit = false;

	if (is_traced(prev)) {
		bool invol = preempt || prev_state == 0;

		hit = true;
		__sync_fetch_and_add(&counts[invol ? C_SW_INVOL : C_SW_VOL], 1);
		c = ctx_of(prev);
		if (c) {
			if (c->run_start && now > c->run_start) {
				if (invol)
					record(H_RUN_INVOL, now - c->run_start);
				else
					record(H_RUN_VOL, now - c->run_start);
			}
			c->run_start = 0;
			c->wake_ts = 0;
			c->waker_cpu = 0;
			c->last_cpu = cpu;
		}
	}
	if (is_traced(next)) {
		hit = true;
		c = ctx_of(next);
		if (c) {
			if (c->wake_ts && now >= c->wake_ts) {
				record(H_WAKEUP, now - c->wake_ts);
				__sync_fetch_and_add(&counts[C_WAKEUPS], 1);
				if (c->last_cpu && c->last_cpu != cpu) {
					__sync_fetch_and_add(&counts[C_WAKE_MIGRATED], 1);
					if (c->waker_cpu == cpu)
						__sync_fetch_and_add(&counts[C_WAKE_TO_WAKER], 1);
				}
			}
			c->wake_ts = 0;
			c->waker_cpu = 0;
			c->run_start = now;
		}
	}
	if (hit)
		charge(now);
	return 0;
}
