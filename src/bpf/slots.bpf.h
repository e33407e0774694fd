/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The entity pool's slots: one struct lab_se per task under the scheduler, claimed at
 * ops.init_task and released at ops.exit_task, with a reference to the task for ops.dispatch.
 * Included by main.bpf.c after its maps and lookups.
 */
#ifndef __LAB_SLOTS_BPF_H
#define __LAB_SLOTS_BPF_H

/*
 * A reference to the task of each slot, for ops.dispatch: pid lookups fail for an exiting task
 * whose pid is already unhashed while it still has to run (do_exit()'s last schedule).
 */
struct lab_task_ref {
	struct task_struct __kptr *task;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LAB_NR_SLOTS);
	__type(key, u32);
	__type(value, struct lab_task_ref);
} lab_task_refs SEC(".maps");

/* A reference to the task in @slot (NULL if none); release it with bpf_task_release(). */
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

/* Knuth's multiplicative hash constant (2^32 / golden ratio): spreads pids over the slots. */
#define LAB_SLOT_HASH		2654435761U
/* How many slots a claim probes before it gives up (the pool is then nearly full). */
#define LAB_SLOT_PROBES		8192

/*
 * Claim a free slot for @p by open addressing from a hash of its pid (slot 0 means "none"),
 * reset its entity and take a reference to the task. @fork: a new task (placed as
 * ENQUEUE_INITIAL). Returns 0, or -ENOMEM when no slot is free (counted in nr_alloc_fail).
 */
static __always_inline s32 slot_claim(struct task_struct *p, struct task_ctx *tc, bool fork)
{
	struct lab_pool *pool = pool_get();
	u32 start, i, n;
	s32 pid = p->pid;

	if (!pool)
		return -ENOMEM;
	start = (u32)pid * LAB_SLOT_HASH;
	bpf_for(i, 0, LAB_SLOT_PROBES) {
		n = (start + i) & LAB_SLOT_MASK;
		if (!n)
			continue;
		if (__sync_val_compare_and_swap(&SE(pool, n)->pid, 0, pid) == 0) {
			struct lab_se *se = SE(pool, n);
			struct lab_task_ref *ref = bpf_map_lookup_elem(&lab_task_refs, &n);
			struct task_struct *t, *old;

			if (ref && (t = bpf_task_acquire(p))) {
				old = bpf_kptr_xchg(&ref->task, t);
				if (old)
					bpf_task_release(old);
			}
			tc->slot = n;
			tc->last_cpu = -1;
			tc->recent_used_cpu = -1;
			se->cpu = -1;
			se->last_ran = 0;
			se->on_rq = se->in_tree = se->delayed = se->running = se->custody = 0;
			se->left = se->right = se->parent = 0;
			se->vruntime = se->deadline = se->vprot = se->exec_snap = 0;
			se->vlag = 0;
			se->rel_deadline = 0;
			se->is_new = fork;
			se->weight = task_weight(p);
			se->inv_weight = task_inv_weight(p);
			se->picked = 0;
			se->slice = 0;
			se->custom_slice = 0;
			return 0;
		}
	}
	__sync_fetch_and_add(&nr_alloc_fail, 1);
	return -ENOMEM;
}

/* Give @tc's slot back: drop the task reference and free the entity. */
static __always_inline void slot_release(struct task_ctx *tc)
{
	struct lab_pool *pool = pool_get();
	struct task_struct *old;
	struct lab_task_ref *ref;
	u32 slot = tc->slot;

	if (!pool || !slot)
		return;
	ref = bpf_map_lookup_elem(&lab_task_refs, &slot);
	if (ref) {
		old = bpf_kptr_xchg(&ref->task, NULL);
		if (old)
			bpf_task_release(old);
	}
	tc->slot = 0;
	__sync_lock_test_and_set(&SE(pool, slot)->pid, 0);
}

#endif /* __LAB_SLOTS_BPF_H */
