/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The scheduling entity (struct sched_entity) and the EEVDF queue (struct cfs_rq) as plain C,
 * with the build glue that lets the same headers compile into BPF and, with LAB_HOST defined,
 * into the host test library (src/bpf/host.c). No BPF helper is called from these headers.
 *
 * Units. Weights are the nice table's values (nice 0 = 1024), i.e. scale_load_down() of the
 * kernel's full-resolution se->load.weight (nice 0 = 1 << 20). V = sum(w*v)/sum(w) and the lag
 * inflation (W+w)/W are ratios of weights, so they come out as in the kernel while the products
 * that feed the sums stay 1024 times further from overflow; calc_delta_fair() uses the kernel's
 * own inverse-weight table (weight.h), which does not depend on the scale.
 *
 * Entities live in a pool of slots (struct lab_se); trees link slots by index, slot 0 is "none".
 */
#ifndef __LAB_ENTITY_H
#define __LAB_ENTITY_H

#ifdef LAB_HOST
#include <stdbool.h>
#include <stddef.h>
#define LAB_INLINE static inline
#define LAB_NOINLINE static
/* A bounded loop: bpf_for() in BPF, a plain for loop on the host. */
#define lab_for(i, start, end) for ((i) = (start); (i) < (end); (i)++)
#define READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, val) (*(volatile __typeof__(x) *)&(x) = (val))
#else
#define LAB_INLINE static __always_inline
#define LAB_NOINLINE static __noinline
#define lab_for(i, start, end) bpf_for(i, start, end)
#endif

#include "intf.h"

/* ---------------------------------------------------------------------------------------------
 * Constants (sched.h, fair.c)
 */
#define NICE_0_LOAD		1024ULL	/* nice 0 in our units; the kernel's 1 << 20 >> 10 */
#define WEIGHT_IDLEPRIO		3	/* SCHED_IDLE */
#define LAB_MIN_CUSTOM_SLICE	100000ULL	/* __setparam_fair(): clamp of sched_runtime */
#define LAB_MAX_CUSTOM_SLICE	100000000ULL
/* An RB tree of n < 2^32 nodes is at most 64 levels deep: the bound of every tree walk. */
#define LAB_TREE_MAX_DEPTH	64

/* ---------------------------------------------------------------------------------------------
 * The load signals (struct sched_avg, pelt.h): an entity's and a queue's. Times are the lab's
 * clock in ns; sums count 1024 ns units, as the kernel's.
 */
struct lab_sched_avg {
	u64 last_update_time;	/* 0: not attached to a queue (new, or migrating) */
	u64 load_sum;
	u64 runnable_sum;
	u32 util_sum;
	u32 period_contrib;	/* units of the current period already accumulated */
	u64 load_avg;
	u64 runnable_avg;
	u64 util_avg;
	u32 util_est;		/* a task's EWMA (| UTIL_AVG_UNCHANGED); a queue's enqueued sum */
	u32 pad;
};

/* What departed entities took from a queue's averages, added without its lock
 * (cfs_rq->removed); the next update_cfs_rq_load_avg() of the queue takes it off. */
struct lab_removed {
	u64 nr;
	u64 load_avg;
	u64 util_avg;
	u64 runnable_avg;
};

/* ---------------------------------------------------------------------------------------------
 * The scheduling entity (struct sched_entity) and the runqueue (struct cfs_rq).
 */
struct lab_se {
	u64 vruntime;		/* v_i */
	u64 deadline;		/* vd_i; relative to vruntime while rel_deadline */
	u64 vprot;		/* slice protection: curr is protected while vruntime < vprot */
	s64 vlag;		/* saved lag V - v_i (while not queued, or a ghost's lag at sleep) */
	u64 slice;		/* request size r_i, ns */
	u64 min_vruntime;	/* augmented: min vruntime of the subtree */
	u64 min_slice;		/* augmented: min slice of the subtree */
	u64 max_slice;		/* augmented: max slice of the subtree */
	u32 weight;		/* the EEVDF weight: scale_load_down(h_load), which for a task of the
				 * root group is its nice-table weight (1024 = nice 0) */
	u32 inv_weight;		/* 2^32 / weight: the table's for a root-group task; 0 = derive it */
	u32 left, right, parent;	/* tree links (slots), 0 = none */
	s32 pid;		/* the task in this slot; 0 = free */
	s16 cpu;		/* the queue the entity is accounted in, -1 = none */
	u8 red;			/* RB colour */
	u8 on_rq;		/* queued: in the tree, or the queue's curr (ghosts included) */
	u8 delayed;		/* sched_delayed: asleep but kept queued (a ghost) */
	u8 rel_deadline;	/* deadline holds d - v */
	u8 custom_slice;	/* slice set through sched_setattr(sched_runtime) */
	u8 in_tree;		/* linked into its queue's tree (and counted in the sums) */
	u8 is_new;		/* not enqueued yet: the next placement is ENQUEUE_INITIAL */
	/* sched_ext bookkeeping, kept here so that it changes under the queue lock */
	u8 custody;		/* held by the scheduler (ops.enqueue), not yet dispatched */
	u8 running;		/* between ops.running and ops.stopping */
	u8 picked;		/* dispatched by a pick: the next ops.running is set_next_entity(first) */
	u8 migrated;		/* moved queues and not run since: task_hot() finds it cold (the
				 * kernel zeroes exec_start on ENQUEUE_MIGRATED) */
	u8 post_init;		/* forked: post_init_entity_util_avg() at its first enqueue */
	u32 load_w;		/* se->load.weight scaled down: the nice-table weight, which the load
				 * averages and the groups' queues count */
	u32 tg;			/* the task's group (group.h; 0 = the root group) */
	u32 limbo_next;		/* the CPU's limbo list of tasks of throttled groups (bandwidth.bpf.h): */
	u32 limbo_prev;		/* ... slots, 0 = none */
	u16 limbo_cpu;		/* the CPU whose limbo list holds it, while limbo is set */
	u8 limbo;		/* held off the queue: its group is throttled there (cpu.max) */
	u8 bw_exempt;		/* let out of the limbo by the watchdog guard or a CPU going offline:
				 * not held again until it has run */
	u8 bw_user;		/* a tick found it in user space with its group throttled there: held
				 * when it is put back or picked, until it runs (the kernel throttles
				 * a task on its return to user space only) */
	u8 idle_counted;	/* counted in its queue's nr_idle (h_nr_idle): SCHED_IDLE, or in a
				 * cpu.idle group, when it joined */
	u8 pad_limbo[2];
	u64 limbo_since;	/* when it was first held since it last ran (ns), 0: not held since */
	u64 h_load;		/* se->h_load.weight (7.3), full resolution: the effective weight */
	u64 h_next;		/* the effective weight a full walk of its groups computed before the
				 * queue's lock for the operation h_next_op (BPF; see group_h()) */
	u32 h_next_op;		/* LAB_GROUP_ENQUEUE / _FOLD / _TICK; 0: none */
	u32 pad_h;
	u64 exec_snap;		/* the task's sum_exec_runtime already charged to vruntime */
	u64 last_ran;		/* when it last stopped running (task_hot()) */
	struct lab_sched_avg avg;	/* se->avg */
};

/*
 * The pool of entities, one slot per task. The BPF scheduler keeps it in a BPF arena of
 * LAB_MAX_SLOTS slots whose pages are allocated as slots are first claimed, and uses the first
 * lab_nr_slots of them (a power of two chosen at load, grown while the scheduler runs: see
 * slots.bpf.h); the host tests use an array of LAB_NR_SLOTS.
 */
#ifdef LAB_HOST
#define LAB_POOL_SLOTS		LAB_NR_SLOTS
#define LAB_SLOT_MASK		(LAB_NR_SLOTS - 1)
#define __lab_arena
#else
#define LAB_POOL_SLOTS		LAB_MAX_SLOTS
#define LAB_SLOT_MASK		(LAB_MAX_SLOTS - 1)
/* Arena memory: loads and stores through these pointers go to the pool's arena. */
#define __lab_arena		__attribute__((address_space(1)))
#endif

/* The pool is arena memory; an entity taken from it (SE()) is a plain pointer: the compiler casts
 * its address once, into the kernel's view of the arena, where every access then goes. In BPF
 * the pool is the arena's array of entities itself (a struct around LAB_MAX_SLOTS of them would
 * not fit BTF's 32-bit member offsets). */
typedef struct lab_se lab_se_t;
#ifdef LAB_HOST
struct lab_pool {
	struct lab_se se[LAB_POOL_SLOTS];
};
typedef struct lab_pool lab_pool_t;
#define SE(pool, i) ((lab_se_t *)&(pool)->se[(i) & LAB_SLOT_MASK])
#else
typedef struct lab_se __lab_arena lab_pool_t;
#define SE(pool, i) ((lab_se_t *)&(pool)[(i) & LAB_SLOT_MASK])
#endif

struct lab_cfs {
	u32 root;		/* tree of queued entities other than curr, ordered by deadline */
	u32 curr;		/* the running entity: outside the tree and the sums */
	u32 next;		/* the next buddy */
	u32 nr_queued;		/* tree + curr, ghosts included */
	u32 nr_delayed;		/* ghosts */
	u32 sum_shift;		/* PARANOID_AVG: extra right shift of weights in the sums */
	u64 zero_vruntime;	/* v0, the origin of the keys */
	s64 sum_w_vruntime;	/* sum over the tree of (v_i - v0) * w_i' */
	u64 sum_weight;		/* sum over the tree of w_i' */
	u64 nr_overflow;	/* times a sum overflowed (the kernel WARNs) */
	u64 load_weight;	/* cfs_rq->load.weight: every queued entity, curr and ghosts too (their
				 * nice weights: see group.h) */
	u32 cpu;		/* the CPU whose queue this is (its group queues are on the same) */
	u32 nr_idle;		/* h_nr_idle: queued entities (ghosts too) that are SCHED_IDLE or in a
				 * cpu.idle group, as they were when they joined */
	u64 clock_pelt;		/* the time of the operation in progress (set under the lock) */
	struct lab_sched_avg avg;	/* cfs_rq->avg */
	struct lab_removed removed;	/* cfs_rq->removed */
};


LAB_INLINE u64 lab_min_u64(u64 a, u64 b) { return a < b ? a : b; }
LAB_INLINE u64 lab_max_u64(u64 a, u64 b) { return a > b ? a : b; }
LAB_INLINE s64 lab_min_s64(s64 a, s64 b) { return a < b ? a : b; }
LAB_INLINE s64 lab_max_s64(s64 a, s64 b) { return a > b ? a : b; }
/* Virtual times wrap: compare them by signed difference, like the kernel. */
LAB_INLINE bool vruntime_gt(u64 a, u64 b) { return (s64)(a - b) > 0; }
LAB_INLINE u64 min_vruntime_of(u64 a, u64 b) { return vruntime_gt(a, b) ? b : a; }

/* se->load.weight scaled down: the entity's own (nice-table) weight. An entity built without it
 * (the host tests) has the EEVDF weight for it, as a root-group task does. */
LAB_INLINE u32 se_load_w(const lab_se_t *se)
{
	return se->load_w ? se->load_w : se->weight;
}

/* A snapshot of the knobs the arithmetic needs. */
struct lab_params {
	u64 features;		/* 1 << LAB_FEAT_* */
	u64 base_slice;		/* sysctl_sched_base_slice */
	u64 normalized_slice;	/* normalized_sysctl_sched_base_slice */
	u64 migration_cost;	/* sysctl_sched_migration_cost */
	u64 tick_ns;		/* TICK_NSEC */
	u64 measure_scan;	/* count what a scan of a deadline-sorted DSQ would visit (the host
				 * tests; BPF reads a load-time constant: pick.h) */
	u64 nr_migrate;		/* sysctl_sched_nr_migrate: tasks one periodic balance may move */
	u64 preempt;		/* enum lab_preempt_model */
	u64 cgroup_mode;	/* enum lab_cgroup_mode */
};

#define sched_feat(p, X) (((p)->features >> LAB_FEAT_##X) & 1)

LAB_INLINE void lab_count(u64 *st, u32 idx)
{
	if (st && idx < LAB_NR_STATS)
		st[idx]++;
}

#endif /* __LAB_ENTITY_H */
