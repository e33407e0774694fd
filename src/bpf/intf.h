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
	/* The CPUs the data structures hold: CONFIG_NR_CPUS of the distribution kernels (Debian's
	 * amd64 and arm64 builds), so that every CPU such a kernel can bring up has a queue. A power
	 * of two: indices are masked with LAB_MAX_CPUS - 1 for the verifier. */
	LAB_MAX_CPUS = 8192,
	/* SMT siblings of one core that CPU selection walks (cpu_smt_mask()). */
	LAB_MAX_SMT = 8,
	/* Sched-domain levels the balancer walks: SMT, MC (the LLC), PKG (the node), and NUMA
	 * levels by distance (topology.rs leaves at least three for those below them). */
	LAB_MAX_LEVELS = 8,
	/* The most task slots the entity pool can grow to (one per task under the scheduler): the
	 * kernel's PID_MAX_LIMIT, so that every task the kernel can create has one. */
	LAB_MAX_SLOTS = 1 << 22,
	/* The slots of the host tests' pool. */
	LAB_NR_SLOTS = 32768,
	/* The cgroups of the cpu controller that get a group of their own (group.h); the rest
	 * count as their parent. A power of two. */
	LAB_MAX_TGS = 4096,
};

/* The user space address of the BPF arena that holds the entity pool (its map_extra): the pool
 * starts there, in the scheduler's and in the daemon's address space alike. */
#define LAB_ARENA_BASE		(1ULL << 44)

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
	LAB_FEAT_CPU_MAX,
	LAB_FEAT_CPUFREQ,
	LAB_NR_FEATS,
};

/*
 * Decision counters, one row per CPU (the CPU that made the decision). src/stats.rs names and
 * describes each; keep the two in the same order.
 */
enum lab_stat {
	/* dispatch decisions */
	LAB_ST_DISPATCH,		/* ops.dispatch picks */
	LAB_ST_DISPATCH_KEEP,		/* ... that kept the running task (its slice refilled) */
	LAB_ST_DISPATCH_MISS,		/* ... whose task could not be inserted (gone, not allowed) */
	LAB_ST_DISPATCH_REPICK,		/* picks that had to be redone when their task started
					 * running (entities joined the queue in between) */
	LAB_ST_INSERT_SELECT,		/* wakees inserted by select_cpu onto an idle, empty queue */
	LAB_ST_INSERT_ENQUEUE,		/* enqueued tasks inserted as the pick of a queue with no
					 * running entity */
	LAB_ST_INSERT_PREEMPT,		/* wakees inserted with SCX_ENQ_PREEMPT after winning the
					 * pick against the running task */
	/* picks (pick_eevdf(), for dispatch and for wakeup preemption) */
	LAB_ST_PICK,			/* pick_eevdf() calls */
	LAB_ST_PICK_CURR,		/* the pick returned the running entity */
	LAB_ST_PICK_PROTECTED,		/* ... because its slice was protected (RUN_TO_PARITY) */
	LAB_ST_PICK_BUDDY,		/* the next buddy was picked (PICK_BUDDY) */
	LAB_ST_PICK_LEFTMOST,		/* the earliest deadline was eligible */
	LAB_ST_PICK_SEARCH,		/* the tree had to be searched for an eligible entity */
	LAB_ST_PICK_NONE,		/* nothing eligible: the queue held only ghosts or was empty */
	LAB_ST_SCAN_NODES,		/* tree nodes visited by the searches */
	LAB_ST_SCAN_LEN_1,		/* searches that visited 1 node */
	LAB_ST_SCAN_LEN_2,		/* 2 nodes */
	LAB_ST_SCAN_LEN_4,		/* 3-4 nodes */
	LAB_ST_SCAN_LEN_8,		/* 5-8 nodes */
	LAB_ST_SCAN_LEN_MORE,		/* more than 8 nodes */
	/* preemption */
	LAB_ST_PREEMPT_WAKEUP,		/* a wakee won the pick against the running task */
	LAB_ST_PREEMPT_SHORT,		/* a shorter-slice wakee preempted (PREEMPT_SHORT) */
	LAB_ST_PREEMPT_IDLE,		/* a non-idle wakee preempted a SCHED_IDLE task */
	LAB_ST_PREEMPT_SYNC,		/* NEXT_BUDDY + WF_SYNC forced a resched */
	LAB_ST_PREEMPT_TICK_DEADLINE,	/* the tick ended a request (deadline reached) */
	LAB_ST_PREEMPT_TICK_PROTECT,	/* the tick ended the slice protection */
	LAB_ST_PREEMPT_HRTICK,		/* the hrtick timer ended a request */
	LAB_ST_PREEMPT_ENQUEUE,		/* a task joining the queue found curr's request or
					 * protection over (update_curr() at enqueue) */
	LAB_ST_PREEMPT_LAZY,		/* reschedules left for the tick (preempt=lazy) */
	LAB_ST_PREEMPT_LAZY_TICK,	/* lazy reschedules the tick carried out */
	LAB_ST_WAKEUP_NO_PREEMPT,	/* wakeup preemption checks that kept the running task */
	LAB_ST_PROTECT_UPDATE,		/* failed wakeup preemption shrank the protection */
	LAB_ST_DEADLINE_NEW,		/* update_deadline() issued a new request */
	/* placement */
	LAB_ST_PLACE_INITIAL,		/* new tasks placed (half-slice deadline if PLACE_DEADLINE_INITIAL) */
	LAB_ST_PLACE_LAG_POS,		/* placed with positive lag (ahead of V: credit) */
	LAB_ST_PLACE_LAG_NEG,		/* placed with negative lag */
	LAB_ST_PLACE_LAG_ZERO,		/* placed at V */
	LAB_ST_PLACE_REL_DEADLINE,	/* kept a relative deadline (PLACE_REL_DEADLINE) */
	/* delayed dequeue */
	LAB_ST_GHOST_CREATED,		/* ineligible sleepers kept queued */
	LAB_ST_GHOST_PICKED,		/* ghosts finalized because a pick selected them */
	LAB_ST_GHOST_REQUEUED,		/* ghosts that woke up and requeued */
	LAB_ST_GHOST_REQUEUE_MOVED,	/* ... whose lag changed, so they were re-placed */
	LAB_ST_GHOST_REQUEUE_POS,	/* ghosts that woke up with positive lag (only without DELAY_ZERO) */
	LAB_ST_GHOST_FINALIZED_OTHER,	/* ghosts finalized on exit, affinity change or cold wake */
	/* other EEVDF events */
	LAB_ST_REWEIGHT,		/* weight changes of queued entities */
	LAB_ST_YIELD,			/* yields that forfeited the request */
	LAB_ST_SUM_OVERFLOW,		/* V sums that overflowed (the kernel WARNs) */
	LAB_ST_PARANOID_REBUILD,	/* PARANOID_AVG rebuilds of the sums */
	/* CPU selection (select_task_rq_fair()) */
	LAB_ST_SELECT,			/* ops.select_cpu calls */
	LAB_ST_SELECT_GHOST,		/* a ghost woke on its own CPU without selection */
	LAB_ST_SELECT_WAKE_COLD,	/* a cold ghost was finalized and selected for (DELAY_WAKE_COLD) */
	LAB_ST_SELECT_FORK,		/* new tasks placed (sched_balance_find_dst_cpu()) */
	LAB_ST_FORK_IDLEST,		/* domains where a new task went to the idlest group */
	LAB_ST_WAKE_WIDE,		/* wake_wide(): no affine wakeup */
	LAB_ST_FORK_NODE_LOCAL,		/* forks placed below a NUMA level without SD_BALANCE_FORK */
	LAB_ST_WA_NODE_LOCAL,		/* affine wakeups whose CPUs no SD_WAKE_AFFINE domain spans */
	LAB_ST_WA_IDLE_THIS,		/* wake_affine_idle() chose the waker's CPU */
	LAB_ST_WA_IDLE_PREV,		/* wake_affine_idle() chose the previous CPU */
	LAB_ST_WA_WEIGHT_THIS,		/* wake_affine_weight() chose the waker's CPU */
	LAB_ST_WA_PREV,			/* wake_affine() kept the previous CPU */
	LAB_ST_SIS_TARGET,		/* select_idle_sibling(): the target was idle */
	LAB_ST_SIS_PREV,		/* ... the previous CPU was idle */
	LAB_ST_SIS_KTHREAD,		/* ... stacked behind a per-CPU kthread waker */
	LAB_ST_SIS_RECENT,		/* ... the recently used CPU was idle */
	LAB_ST_SIS_SCAN,		/* ... the LLC scan found an idle CPU */
	LAB_ST_SIS_NONE,		/* ... nothing idle: the target */
	LAB_ST_SIS_SCAN_LIMITED,	/* scans that SIS_UTIL cut short or skipped */
	LAB_ST_SIS_SMT,			/* ... an idle SMT sibling of the previous CPU (select_idle_smt()) */
	LAB_ST_SIS_IDLE_CORE,		/* ... the scan found a wholly idle core (select_idle_core()) */
	LAB_ST_SIS_IDLE_CORE_NONE,	/* idle-core scans that found none (has_idle_cores cleared) */
	LAB_ST_IDLE_CORE_SET,		/* CPUs going idle that completed an idle core (__update_idle_core()) */
	/* balancing */
	LAB_ST_MIGRATE,			/* entities that changed queue */
	LAB_ST_NEWIDLE,			/* newidle balance attempts (nothing to run at dispatch) */
	LAB_ST_NEWIDLE_GATED,		/* ... domain levels they skipped by NI_RANDOM */
	LAB_ST_NEWIDLE_IDLE,		/* ... that returned at once: no queue was overloaded */
	LAB_ST_NEWIDLE_SHORT,		/* ... skipped: idle periods shorter than the newidle cost */
	LAB_ST_PULL_NEWIDLE,		/* tasks pulled by a newidle balance */
	LAB_ST_PULL_PERIODIC,		/* tasks pulled by the periodic balance */
	LAB_ST_NOHZ_KICK,		/* idle CPUs kicked to pull from a busy one */
	LAB_ST_LB_SMT,			/* tasks pulled by a periodic or idle balance of an SMT domain */
	LAB_ST_LB_MC,			/* ... of an MC (LLC) domain */
	LAB_ST_LB_PKG,			/* ... of a PKG (node) domain */
	LAB_ST_LB_NUMA,			/* ... of a NUMA domain */
	LAB_ST_LB_ACTIVE,		/* running tasks pushed to an idle CPU (active balance) */
	LAB_ST_LB_FAILED,		/* balance passes that found an imbalance and moved nothing */
	LAB_ST_LB_ACTIVE_CAPACITY,	/* active balances asked for a lone task on a CPU of reduced
					 * capacity (need_active_balance()) */
	LAB_ST_NOHZ_KICK_CAPACITY,	/* nohz kicks for a lone task on a CPU of reduced capacity */
	LAB_ST_CAPACITY_UPDATE,		/* CPU capacities updated (update_cpu_capacity()) */
	LAB_ST_NOHZ_BALANCE,		/* idle balances run by a kicked CPU for the idle CPUs */
	LAB_ST_CPU_RELEASE,		/* CPUs taken by a higher class (ops.cpu_release) */
	LAB_ST_RELEASE_KICK,		/* idle CPUs kicked for a CPU a higher class kept a tick */
	LAB_ST_CPU_ONLINE,		/* CPUs that came online (no reload) */
	LAB_ST_CPU_OFFLINE,		/* CPUs that went offline (no reload) */
	LAB_ST_HOTPLUG_MOVED,		/* entities moved off an offline CPU, keeping their lag */
	LAB_ST_HOTPLUG_GLOBAL,		/* tasks bound to an offline CPU handed to the global DSQ */
	LAB_ST_CGROUP_INIT,		/* cgroups given a group (ops.cgroup_init) */
	LAB_ST_CGROUP_EXIT,		/* groups gone with their cgroup (ops.cgroup_exit) */
	LAB_ST_CGROUP_MOVE,		/* tasks moved between cgroups (ops.cgroup_move) */
	LAB_ST_CGROUP_FLATTENED,	/* cgroups counted as their parent (too deep, or no room) */
	LAB_ST_BW_PERIOD,		/* bandwidth period turn-overs of active groups (cpu.max) */
	LAB_ST_BW_THROTTLE,		/* group queues throttled: out of runtime, the pool dry */
	LAB_ST_BW_UNTHROTTLE,		/* ... unthrottled by a refill */
	LAB_ST_LIMBO_HELD,		/* tasks of throttled queues held off the queue */
	LAB_ST_LIMBO_RELEASED,		/* ... that rejoined it */
	LAB_ST_LIMBO_FORCED,		/* ... let out still throttled (watchdog guard, CPU offline) */
	LAB_ST_LIMBO_RCU,		/* tasks of throttled queues not held: inside an RCU reader */
	LAB_ST_BW_KERNEL,		/* ticks that found a task of a throttled queue in the kernel:
					 * it runs on to its return to user space */
	LAB_ST_CPUPERF_SET,		/* performance targets handed to cpufreq (changes only) */
	LAB_ST_PULL_REFUSED_AFFINITY,	/* candidates not allowed on the puller */
	LAB_ST_PULL_REFUSED_RUNNING,	/* candidates running or already dispatched */
	LAB_ST_PULL_REFUSED_DELAYED,	/* ghosts (never pulled) */
	LAB_ST_PULL_REFUSED_INELIGIBLE,	/* ineligible on their queue (task_is_ineligible_on_dst_cpu()) */
	LAB_ST_PULL_REFUSED_HOT,	/* cache hot (migration_cost_ns, CACHE_HOT_BUDDY) */
	LAB_ST_PULL_REFUSED_LOAD,	/* too heavy for the imbalance (periodic balance) */
	LAB_ST_PULL_REFUSED_PINNED,	/* migration disabled */
	/* load tracking (PELT) */
	LAB_ST_PELT_ATTACH,		/* entities whose averages joined a queue's (new or migrated) */
	LAB_ST_PELT_DETACH,		/* ... left it with a queued migration (a pull) */
	LAB_ST_PELT_REMOVE,		/* ... left it after a sleep, for another CPU (removed sums) */
	LAB_ST_PELT_BLOCKED,		/* blocked-average updates of an idle CPU's queue */
	/* diagnostics (--measure-scan): what a scan of a deadline-sorted DSQ would have visited */
	LAB_ST_DSQ_SCAN_NODES,		/* entities a first-eligible scan from the earliest deadline visits */
	LAB_ST_DSQ_SCAN_LEN_1,		/* picks where that scan would stop at the first entity */
	LAB_ST_DSQ_SCAN_LEN_2,		/* ... at the second */
	LAB_ST_DSQ_SCAN_LEN_4,		/* ... at the 3rd-4th */
	LAB_ST_DSQ_SCAN_LEN_8,		/* ... at the 5th-8th */
	LAB_ST_DSQ_SCAN_LEN_MORE,	/* ... later */
	LAB_NR_STATS,
};

/* A CPU's row of counters, padded to whole cache lines (no row shares one with another CPU's). */
enum lab_stats_layout {
	LAB_STATS_STRIDE = (LAB_NR_STATS + 7) / 8 * 8,
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
	u64 preempt;		/* enum lab_preempt_model: the preemption model resched_curr_lazy() follows */
	u64 cgroup_mode;	/* enum lab_cgroup_mode: how cpu.weight becomes per-CPU shares */
};

/* The kernel's preemption models (/sys/kernel/debug/sched/preempt), in its order. */
enum lab_preempt_model {
	LAB_PREEMPT_NONE = 0,
	LAB_PREEMPT_VOLUNTARY = 1,
	LAB_PREEMPT_FULL = 2,
	LAB_PREEMPT_LAZY = 3,
};

/* The kernel's cgroup_mode values (/sys/kernel/debug/sched/cgroup_mode, 7.3), in its order:
 * how a group's cpu.weight becomes its entity's weight on each CPU (calc_group_shares()). */
enum lab_cgroup_mode {
	LAB_CGROUP_UP = 0,
	LAB_CGROUP_SMP = 1,
	LAB_CGROUP_CONCUR = 2,
	LAB_CGROUP_MAX = 3,
	LAB_CGROUP_TASKS = 4,
};

/*
 * What the scheduler tells the daemon through the lab_events ring buffer. The daemon sleeps until
 * one arrives (or a stats request, or a signal): it has nothing to do otherwise.
 */
enum lab_event_kind {
	LAB_EV_KNOBS = 1,	/* a CPU saw a new knobs seq: log the change */
	LAB_EV_EXIT = 2,	/* ops.exit ran: the scheduler is leaving */
	LAB_EV_HOTPLUG = 3,	/* seq: a CPU, bit 32 set when it comes online: re-derive the base slice */
};

/*
 * Why the scheduler exits asking the daemon to load it again (scx_bpf_exit() with
 * SCX_ECODE_ACT_RESTART and one of these in the low bits).
 */
enum lab_exit_reason {
	LAB_EXIT_RSN_POOL_FULL = 1,	/* the task pool reached its cap: size it anew */
	LAB_EXIT_RSN_NEW_CPU = 2,	/* a CPU came online whose place in the topology is unknown */
};

struct lab_event {
	u32 kind;		/* enum lab_event_kind */
	u32 pad;
	u64 seq;		/* LAB_EV_KNOBS: the seq seen */
};

/* The CPU topology the scheduler is loaded with (src/sched.rs fills it in). */
struct lab_topo {
	u32 nr_cpus;			/* possible CPUs */
	u32 nr_llcs;
	u32 nr_nodes;			/* NUMA nodes */
	u32 nr_cores;
	u32 smt_active;			/* some core has SMT siblings: sched_smt_active() */
	u32 cpu_node[LAB_MAX_CPUS];	/* NUMA node index of each CPU */
	u32 cpu_llc[LAB_MAX_CPUS];	/* LLC index of each CPU */
	u32 cpu_core[LAB_MAX_CPUS];	/* core index (SMT siblings share it) */
	u32 cpu_llc_pos[LAB_MAX_CPUS];	/* the CPU's position in llc_cpus[] */
	u32 llc_start[LAB_MAX_CPUS];	/* first position of each LLC in llc_cpus[] */
	u32 llc_size[LAB_MAX_CPUS];	/* CPUs of each LLC */
	u32 llc_cpus[LAB_MAX_CPUS];	/* CPUs grouped by LLC */
	u32 core_start[LAB_MAX_CPUS];	/* first position of each core in core_cpus[] */
	u32 core_size[LAB_MAX_CPUS];	/* CPUs of each core (its SMT siblings) */
	u32 core_cpus[LAB_MAX_CPUS];	/* CPUs grouped by core: cpu_smt_mask() of each */
	u8 cpu_known[LAB_MAX_CPUS];	/* online at load: the topology above is the CPU's own */
	/*
	 * The sched domains (topology.c's build_sched_domains()), lowest level first: SMT (a core),
	 * MC (an LLC), PKG (a node), NUMA (one level per node distance, when the distances nest;
	 * else one over every node); a level that spans what the level below spans is left out, as
	 * the kernel drops degenerate domains. Every domain is a run of cpu_order[]; a domain's
	 * groups are the domains of the level below it (single CPUs at the lowest level).
	 */
	u32 nr_levels;
	/* The levels from the lowest up that have SD_WAKE_AFFINE, and SD_BALANCE_FORK (only NUMA
	 * levels beyond node_reclaim_distance lack them, and distances grow upwards): a wakeup's
	 * wake_affine() needs the waker's domain at level wa_levels - 1 to span the previous CPU;
	 * a fork's descent starts at level fork_levels - 1. */
	u32 wa_levels;
	u32 fork_levels;
	u32 lvl_flags[LAB_MAX_LEVELS];		/* LAB_SD_* */
	u32 lvl_imbalance_pct[LAB_MAX_LEVELS];
	u32 lvl_cache_nice_tries[LAB_MAX_LEVELS];
	u32 lvl_imb_numa_nr[LAB_MAX_LEVELS];	/* sd->imb_numa_nr */
	u32 cpu_order[LAB_MAX_CPUS];		/* CPUs by node, LLC, core */
	u32 cpu_order_pos[LAB_MAX_CPUS];	/* each CPU's position in cpu_order[] */
	u16 lvl_start[LAB_MAX_LEVELS][LAB_MAX_CPUS];	/* each CPU's domain: first position */
	u16 lvl_size[LAB_MAX_LEVELS][LAB_MAX_CPUS];	/* ... and its CPUs */
};

/* The sched-domain flags the balancer reads (the kernel's SD_* of the same names). */
#define LAB_SD_SHARE_CPUCAPACITY	0x1
#define LAB_SD_SHARE_LLC		0x2
#define LAB_SD_PREFER_SIBLING		0x4
#define LAB_SD_NUMA			0x8
#define LAB_SD_WAKE_AFFINE		0x10	/* wake_affine() may pull a wakee across it */
#define LAB_SD_BALANCE_FORK		0x20	/* a fork may be placed anywhere in it */

#endif /* __LAB_INTF_H */
