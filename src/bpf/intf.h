/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Types and constants shared by the BPF scheduler and its Rust side (bindgen reads this file).
 */
#ifndef __LAB_INTF_H
#define __LAB_INTF_H

#ifndef __VMLINUX_H__
typedef unsigned char u8;
typedef unsigned short u16;
typedef short s16;
typedef unsigned int u32;
typedef int s32;
typedef unsigned long long u64;
typedef long long s64;
struct bpf_spin_lock {
	u32 val;
};
#endif

enum lab_consts {
	LAB_MAX_CPUS = 512,
	/* Task slots of the entity pool (one per task under the scheduler), a power of two. */
	LAB_NR_SLOTS = 32768,
};

/*
 * Feature bits. The first block mirrors the kernel's kernel/sched/features.h in file order, so
 * that `scx_eevdf_lab features` prints the same line as /sys/kernel/debug/sched/features. The
 * second block holds the lab's own experiment knobs. src/features.rs names and documents each.
 */
enum lab_feat {
	LAB_FEAT_PLACE_LAG,
	LAB_FEAT_PLACE_DEADLINE_INITIAL,
	LAB_FEAT_PLACE_REL_DEADLINE,
	LAB_FEAT_RUN_TO_PARITY,
	LAB_FEAT_PREEMPT_SHORT,
	LAB_FEAT_NEXT_BUDDY,
	LAB_FEAT_PICK_BUDDY,
	LAB_FEAT_CACHE_HOT_BUDDY,
	LAB_FEAT_DELAY_DEQUEUE,
	LAB_FEAT_DELAY_ZERO,
	LAB_FEAT_PARANOID_AVG,
	LAB_FEAT_WAKEUP_PREEMPTION,
	LAB_FEAT_HRTICK,
	LAB_FEAT_HRTICK_DL,
	LAB_FEAT_NONTASK_CAPACITY,
	LAB_FEAT_TTWU_QUEUE,
	LAB_FEAT_SIS_UTIL,
	LAB_FEAT_WARN_DOUBLE_CLOCK,
	LAB_FEAT_RT_PUSH_IPI,
	LAB_FEAT_RT_RUNTIME_SHARE,
	LAB_FEAT_LB_MIN,
	LAB_FEAT_ATTACH_AGE_LOAD,
	LAB_FEAT_WA_IDLE,
	LAB_FEAT_WA_WEIGHT,
	LAB_FEAT_WA_BIAS,
	LAB_FEAT_UTIL_EST,
	LAB_FEAT_LATENCY_WARN,
	LAB_FEAT_NI_RANDOM,
	LAB_FEAT_NI_RATE,
	/* lab experiment knobs (not in the kernel) */
	LAB_FEAT_DELAY_WAKE_COLD,
	LAB_FEAT_DELAY_REQUEUE_SELECT,
	LAB_NR_FEATS,
};

/*
 * The live knobs: one element of a pinned array map. Writers (the daemon at start, the CLI later)
 * replace the whole value with BPF_F_LOCK, so a change of several fields lands at once; the BPF
 * side copies it under the same lock into its own snapshot when `seq` moves.
 */
struct lab_knobs {
	struct bpf_spin_lock lock;
	u32 pad;
	u64 seq;		/* bumped by every write */
	u64 features;		/* 1 << LAB_FEAT_* */
	u64 base_slice_ns;	/* sysctl_sched_base_slice */
	u64 normalized_slice_ns; /* normalized_sysctl_sched_base_slice (RUN_TO_PARITY off) */
	u64 migration_cost_ns;	/* sysctl_sched_migration_cost */
	u64 nr_migrate;		/* sysctl_sched_nr_migrate */
	u64 tunable_scaling;	/* sysctl_sched_tunable_scaling: 0 none, 1 log, 2 linear */
};

#endif /* __LAB_INTF_H */
