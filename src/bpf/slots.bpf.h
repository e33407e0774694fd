/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The entity pool's slots: one struct lab_se per task under the scheduler, claimed at
 * ops.init_task and released at ops.exit_task. Included by main.bpf.c after its maps and
 * lookups.
 *
 * The pool lives in a BPF arena (lab_arena) that can hold LAB_MAX_SLOTS entities, the kernel's
 * PID_MAX_LIMIT. Slots are claimed in the range [0, lab_slots_active): a power of two whose
 * arena pages are allocated, which doubles (allocating the new half) whenever half of it is in
 * use, up to lab_slots_cap (chosen at load from pid_max and threads-max, which bound how many
 * tasks the kernel can have). So memory follows the number of tasks, and a fork never fails for
 * want of a slot: if the cap itself is ever reached (the limits were raised after load), the
 * scheduler exits with the reason and a restart request, and the daemon reloads it with a pool
 * sized for the new limits; the task that found no slot runs from the global DSQ meanwhile.
 *
 * A task in the scheduler's custody (queued, not dispatched) is referenced from lab_task_refs,
 * so that ops.dispatch can insert it by slot (an exiting task's pid may already be unhashed
 * while it still has to run). The reference is taken when the task enters custody and dropped
 * when it leaves it, so no reference outlives the task's time in the queue -- on kernels that
 * call ops.exit_task from the task's last put as on those that call it at its death.
 */
#ifndef __LAB_SLOTS_BPF_H
#define __LAB_SLOTS_BPF_H

/* A reference to the task of each slot in custody (max_entries: lab_slots_cap, set at load). */
struct lab_task_ref {
	struct task_struct __kptr *task;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, struct lab_task_ref);
} lab_task_refs SEC(".maps");

/* The slots that may be used (set by user space before load, powers of two). */
const volatile u32 lab_slots_cap = 4096;	/* at most this many: lab_task_refs' size */
const volatile u32 lab_slots_initial = 4096;	/* allocated by ops.init */

/* The claimable range [0, lab_slots_active) (its pages are allocated) and how much is used. */
u32 lab_slots_active;
u32 lab_slots_used;
u32 lab_slots_growing;		/* a claimer is allocating the next half */
/* Claims that found no slot with the pool at its cap (the scheduler then exits to grow it). */
u64 nr_alloc_fail;

/* Knuth's multiplicative hash constant (2^32 / golden ratio): spreads pids over the slots. */
#define LAB_SLOT_HASH		2654435761U
/* How many slots a claim probes before it concludes that the range is too full. */
#define LAB_SLOT_PROBES		64
/* ops.exit code: the pool is at its cap; the daemon reloads the scheduler with a larger one. */
#define LAB_EXIT_POOL_FULL	(SCX_ECODE_ACT_RESTART | LAB_EXIT_RSN_POOL_FULL)

/* Allocate the arena pages of slots [from, to) (sleepable context only). */
static __always_inline int slots_alloc(u32 from, u32 to)
{
	u64 first = (u64)from * sizeof(struct lab_se) / LAB_PAGE_SIZE;
	u64 last = ((u64)to * sizeof(struct lab_se) + LAB_PAGE_SIZE - 1) / LAB_PAGE_SIZE;
	void __lab_arena *addr;

	/* A page holding the end of slot from - 1 is already there. */
	if (from && (u64)from * sizeof(struct lab_se) % LAB_PAGE_SIZE)
		first++;
	if (last <= first)
		return 0;
	addr = (void __lab_arena *)lab_pool + first * LAB_PAGE_SIZE;
	return bpf_arena_alloc_pages(&lab_arena, addr, last - first, NUMA_NO_NODE, 0) ? 0 : -ENOMEM;
}

/* Double the claimable range if half of it is in use and the cap allows (one claimer at a time;
 * the others go on claiming in the current range, which still has free slots). */
static __always_inline void slots_grow(void)
{
	u32 active = READ_ONCE(lab_slots_active);

	if (READ_ONCE(lab_slots_used) * 2 < active || active >= lab_slots_cap ||
	    __sync_val_compare_and_swap(&lab_slots_growing, 0, 1))
		return;
	if (active == READ_ONCE(lab_slots_active) && !slots_alloc(active, active * 2))
		WRITE_ONCE(lab_slots_active, active * 2);
	WRITE_ONCE(lab_slots_growing, 0);
}

/*
 * The entity's load signals at the start: a fork's from init_entity_runnable_average() (and
 * post_init_entity_util_avg() at its first enqueue, as wake_up_new_task() does); a task that
 * was in the fair class brings the averages the kernel kept for it there. Either way it is
 * attached to a queue at its first enqueue.
 */
static __always_inline void slot_init_load(lab_se_t *se, struct task_struct *p, bool fork)
{
	init_entity_runnable_average(se);
	se->post_init = fork;
	if (!fork) {
		se->avg.load_avg = p->se.avg.load_avg;
		se->avg.runnable_avg = p->se.avg.runnable_avg;
		se->avg.util_avg = p->se.avg.util_avg;
		se->avg.util_est = p->se.avg.util_est;
	}
}

/*
 * Claim a free slot for @p by open addressing from a hash of its pid (slot 0 means "none") and
 * reset its entity. @fork: a new task (placed as ENQUEUE_INITIAL). Returns 0, or -ENOSPC when
 * the pool is at its cap (counted in nr_alloc_fail).
 */
static __always_inline s32 slot_claim(struct task_struct *p, struct task_ctx *tc, bool fork)
{
	lab_pool_t *pool = pool_get();
	u32 start, i, n, mask;
	s32 pid = p->pid;

	slots_grow();
	mask = READ_ONCE(lab_slots_active) - 1;
	start = (u32)pid * LAB_SLOT_HASH;
	bpf_for(i, 0, LAB_SLOT_PROBES) {
		lab_se_t *se;

		n = (start + i) & mask;
		if (!n)
			continue;
		se = SE(pool, n);
		if (__sync_val_compare_and_swap(&se->pid, 0, pid) != 0)
			continue;
		__sync_fetch_and_add(&lab_slots_used, 1);
		tc->slot = n;
		tc->last_cpu = -1;
		tc->recent_used_cpu = -1;
		se->cpu = -1;
		se->last_ran = 0;
		se->on_rq = se->in_tree = se->delayed = se->running = se->custody = 0;
		se->migrated = 0;
		se->left = se->right = se->parent = 0;
		se->vruntime = se->deadline = se->vprot = se->exec_snap = 0;
		se->vlag = 0;
		se->rel_deadline = 0;
		se->is_new = fork;
		se->weight = se->load_w = task_weight(p);
		se->inv_weight = task_inv_weight(p);
		se->h_load = (u64)se->weight << LAB_SCHED_FIXEDPOINT_SHIFT;
		se->tg = 0;
		se->limbo = se->bw_exempt = se->bw_user = 0;
		se->limbo_next = se->limbo_prev = 0;
		se->limbo_since = 0;
		se->picked = 0;
		se->slice = 0;
		se->custom_slice = 0;
		slot_init_load(se, p, fork);
		return 0;
	}
	__sync_fetch_and_add(&nr_alloc_fail, 1);
	return -ENOSPC;
}

/* Drop the custody reference of @slot, if it holds one. */
static __always_inline void slot_ref_drop(u32 slot)
{
	struct lab_task_ref *ref = bpf_map_lookup_elem(&lab_task_refs, &slot);
	struct task_struct *old;

	if (ref && ref->task && (old = bpf_kptr_xchg(&ref->task, NULL)))
		bpf_task_release(old);
}

/* @p (in @slot) enters the scheduler's custody: keep a reference for ops.dispatch. */
static __always_inline void slot_ref_set(u32 slot, struct task_struct *p)
{
	struct lab_task_ref *ref = bpf_map_lookup_elem(&lab_task_refs, &slot);
	struct task_struct *t, *old;

	if (!ref || ref->task || !(t = bpf_task_acquire(p)))
		return;
	old = bpf_kptr_xchg(&ref->task, t);
	if (old)
		bpf_task_release(old);
}

/* The task in @slot's custody, its reference handed to the caller (release it), or NULL. */
static __always_inline struct task_struct *slot_ref_take(u32 slot)
{
	struct lab_task_ref *ref = bpf_map_lookup_elem(&lab_task_refs, &slot);

	return ref ? bpf_kptr_xchg(&ref->task, NULL) : NULL;
}

/* A new reference to the task in @slot's custody, the slot keeping its own (NULL if none). */
static __always_inline struct task_struct *slot_task(u32 slot)
{
	struct lab_task_ref *ref = bpf_map_lookup_elem(&lab_task_refs, &slot);
	struct task_struct *t = NULL;

	if (!ref)
		return NULL;
	bpf_rcu_read_lock();
	if (ref->task)
		t = bpf_task_acquire(ref->task);
	bpf_rcu_read_unlock();
	return t;
}

/* Give @tc's slot back: drop any reference and free the entity. */
static __always_inline void slot_release(struct task_ctx *tc)
{
	lab_pool_t *pool = pool_get();
	u32 slot = tc->slot;

	if (!slot)
		return;
	slot_ref_drop(slot);
	tc->slot = 0;
	__sync_lock_test_and_set(&SE(pool, slot)->pid, 0);
	__sync_fetch_and_sub(&lab_slots_used, 1);
}

#endif /* __LAB_SLOTS_BPF_H */
