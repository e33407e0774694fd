//! The scheduler's decision counters and queue states, served the scx way: a scx_stats server in
//! the daemon (`/var/run/scx/root/stats`), `--stats` (run and print), `monitor` (client only),
//! `--help-stats` (what each field means).
//!
//! The BPF side counts per CPU in `lab_stats` (enum lab_stat in src/bpf/intf.h); this module
//! names those counters, sums them over CPUs and turns two samples into a per-interval delta.

use crate::eevdf::ffi;
use anyhow::Result;
use scx_stats::prelude::*;
use scx_stats_derive::{Stats, stat_doc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod format;

/// One CPU's EEVDF queue at the moment of the sample.
#[stat_doc]
#[derive(Clone, Debug, Default, Serialize, Deserialize, Stats)]
#[stat(desc = "one CPU's EEVDF queue")]
pub struct CpuQueue {
    #[stat(desc = "V, the queue's weighted average vruntime (ns of virtual time)")]
    pub avg_vruntime: u64,
    #[stat(desc = "entities on the queue, the running one and ghosts included")]
    pub nr_queued: u64,
    #[stat(desc = "ghosts: sleepers kept queued by DELAY_DEQUEUE")]
    pub nr_delayed: u64,
    #[stat(desc = "sum of the queued weights outside the running entity (nice 0 = 1024)")]
    pub sum_weight: u64,
    #[stat(desc = "PELT load average (cpu_load(): queued weight, decayed)")]
    pub load_avg: u64,
    #[stat(desc = "PELT runnable average (runnable entities x 1024, decayed)")]
    pub runnable_avg: u64,
    #[stat(desc = "PELT utilisation average (0..1024)")]
    pub util_avg: u64,
    #[stat(desc = "sum of the queued tasks' estimated utilisation (UTIL_EST)")]
    pub util_est: u64,
    #[stat(desc = "performance target last handed to cpufreq (0..1024; CPUFREQ)")]
    pub perf_target: u64,
    #[stat(desc = "capacity_of(): what RT, deadline and IRQ time leave of the CPU's capacity")]
    pub capacity: u64,
}

/// Everything the scheduler counts, as a delta over the sampling interval (the first sample a
/// client gets covers the time since attach).
#[stat_doc]
#[derive(Clone, Debug, Default, Serialize, Deserialize, Stats)]
#[serde(default)]
#[stat(top)]
pub struct Metrics {
    #[stat(desc = "seconds covered by this sample")]
    pub interval_s: f64,
    #[stat(desc = "ops.dispatch picks")]
    pub dispatches: u64,
    #[stat(desc = "dispatch picks that kept the running task (its slice refilled)")]
    pub dispatch_keep: u64,
    #[stat(desc = "dispatch picks whose task could not be inserted (gone, or not allowed there)")]
    pub dispatch_miss: u64,
    #[stat(desc = "picks redone when their task started running (entities joined in between)")]
    pub dispatch_repick: u64,
    #[stat(desc = "wakees that select_cpu inserted directly onto an idle, empty queue")]
    pub insert_select: u64,
    #[stat(desc = "enqueued tasks inserted directly as the pick of a queue with no running task")]
    pub insert_enqueue: u64,
    #[stat(
        desc = "wakees inserted with SCX_ENQ_PREEMPT after winning the pick against the running task"
    )]
    pub insert_preempt: u64,
    #[stat(desc = "pick_eevdf() calls, for dispatch and for wakeup preemption")]
    pub picks: u64,
    #[stat(desc = "picks that returned the running entity")]
    pub pick_curr: u64,
    #[stat(
        desc = "picks that kept the running task because its slice was protected (RUN_TO_PARITY)"
    )]
    pub pick_protected: u64,
    #[stat(desc = "picks of the next buddy (PICK_BUDDY)")]
    pub pick_buddy: u64,
    #[stat(desc = "picks where the earliest deadline was eligible")]
    pub pick_leftmost: u64,
    #[stat(desc = "picks that searched the tree for the earliest eligible deadline")]
    pub pick_search: u64,
    #[stat(desc = "picks that found nothing eligible (only ghosts, or an empty queue)")]
    pub pick_none: u64,
    #[stat(desc = "tree nodes visited by the searches")]
    pub scan_nodes: u64,
    #[stat(desc = "searches that visited 1 node")]
    pub scan_len_1: u64,
    #[stat(desc = "searches that visited 2 nodes")]
    pub scan_len_2: u64,
    #[stat(desc = "searches that visited 3-4 nodes")]
    pub scan_len_4: u64,
    #[stat(desc = "searches that visited 5-8 nodes")]
    pub scan_len_8: u64,
    #[stat(desc = "searches that visited more than 8 nodes")]
    pub scan_len_more: u64,
    #[stat(desc = "wakeup preemptions: the wakee won the pick against the running task")]
    pub preempt_wakeup: u64,
    #[stat(desc = "wakeup preemptions by a shorter-slice wakee (PREEMPT_SHORT)")]
    pub preempt_short: u64,
    #[stat(desc = "wakeup preemptions of a SCHED_IDLE task by a non-idle one")]
    pub preempt_idle: u64,
    #[stat(desc = "wakeup preemptions forced by NEXT_BUDDY with WF_SYNC")]
    pub preempt_sync: u64,
    #[stat(desc = "reschedules at the tick: the request ran out (new deadline)")]
    pub preempt_tick_deadline: u64,
    #[stat(desc = "reschedules at the tick: the slice protection ended")]
    pub preempt_tick_protect: u64,
    #[stat(desc = "reschedules by the hrtick timer at a deadline (HRTICK)")]
    pub preempt_hrtick: u64,
    #[stat(
        desc = "reschedules when a task joined: its update_curr() found the running task's request or protection over"
    )]
    pub preempt_enqueue: u64,
    #[stat(
        desc = "reschedules left for the next tick, as resched_curr_lazy() does under preempt=lazy"
    )]
    pub preempt_lazy: u64,
    #[stat(desc = "lazy reschedules carried out at the tick")]
    pub preempt_lazy_tick: u64,
    #[stat(desc = "wakeup preemption checks that kept the running task")]
    pub wakeup_no_preempt: u64,
    #[stat(desc = "failed wakeup preemptions that shrank the running task's protection")]
    pub protect_update: u64,
    #[stat(desc = "new requests issued by update_deadline()")]
    pub deadline_new: u64,
    #[stat(desc = "new tasks placed (half-slice deadline with PLACE_DEADLINE_INITIAL)")]
    pub place_initial: u64,
    #[stat(desc = "placements with positive lag (credit)")]
    pub place_lag_pos: u64,
    #[stat(desc = "placements with negative lag")]
    pub place_lag_neg: u64,
    #[stat(desc = "placements at V (zero lag)")]
    pub place_lag_zero: u64,
    #[stat(desc = "placements that restored a relative deadline (PLACE_REL_DEADLINE)")]
    pub place_rel_deadline: u64,
    #[stat(desc = "ghosts created: ineligible sleepers kept queued (DELAY_DEQUEUE)")]
    pub ghost_created: u64,
    #[stat(desc = "ghosts finalized because a pick selected them")]
    pub ghost_picked: u64,
    #[stat(desc = "ghosts that woke up and requeued on their CPU")]
    pub ghost_requeued: u64,
    #[stat(desc = "requeued ghosts whose lag changed, so they were re-placed")]
    pub ghost_requeue_moved: u64,
    #[stat(desc = "ghosts that woke up with positive lag (only without DELAY_ZERO)")]
    pub ghost_requeue_pos: u64,
    #[stat(desc = "ghosts finalized on exit, affinity change or a cold wakeup")]
    pub ghost_finalized_other: u64,
    #[stat(desc = "weight changes of queued entities")]
    pub reweight: u64,
    #[stat(desc = "yields that forfeited the rest of the request")]
    pub yields: u64,
    #[stat(desc = "overflows of the V sums (the kernel WARNs)")]
    pub sum_overflow: u64,
    #[stat(desc = "PARANOID_AVG rebuilds of the V sums")]
    pub paranoid_rebuild: u64,
    #[stat(desc = "ops.select_cpu calls")]
    pub select: u64,
    #[stat(desc = "ghosts that woke on their own CPU without selection (ttwu_runnable())")]
    pub select_ghost: u64,
    #[stat(desc = "cold ghosts finalized at wakeup and selected for (DELAY_WAKE_COLD)")]
    pub select_wake_cold: u64,
    #[stat(desc = "new tasks placed by sched_balance_find_dst_cpu()")]
    pub select_fork: u64,
    #[stat(desc = "domains where a new task went to the idlest group rather than its own")]
    pub fork_idlest: u64,
    #[stat(desc = "wakeups spread by wake_wide() (no affine wakeup)")]
    pub wake_wide: u64,
    #[stat(desc = "forks kept below a NUMA level beyond node_reclaim_distance")]
    pub fork_node_local: u64,
    #[stat(desc = "affine wakeups kept on their node (no SD_WAKE_AFFINE domain spans both)")]
    pub wa_node_local: u64,
    #[stat(desc = "wake_affine_idle() chose the waker's CPU")]
    pub wa_idle_this: u64,
    #[stat(desc = "wake_affine_idle() chose the previous CPU")]
    pub wa_idle_prev: u64,
    #[stat(desc = "wake_affine_weight() chose the waker's CPU")]
    pub wa_weight_this: u64,
    #[stat(desc = "wake_affine() kept the previous CPU")]
    pub wa_prev: u64,
    #[stat(desc = "select_idle_sibling(): the target was idle")]
    pub sis_target: u64,
    #[stat(desc = "select_idle_sibling(): the previous CPU was idle")]
    pub sis_prev: u64,
    #[stat(desc = "select_idle_sibling(): stacked behind a per-CPU kthread waker")]
    pub sis_kthread: u64,
    #[stat(desc = "select_idle_sibling(): the recently used CPU was idle")]
    pub sis_recent: u64,
    #[stat(desc = "select_idle_sibling(): the LLC scan found an idle CPU")]
    pub sis_scan: u64,
    #[stat(desc = "select_idle_sibling(): nothing idle, the target")]
    pub sis_none: u64,
    #[stat(desc = "idle scans that SIS_UTIL cut short or skipped")]
    pub sis_scan_limited: u64,
    #[stat(desc = "select_idle_sibling(): an idle SMT sibling of the previous CPU")]
    pub sis_smt: u64,
    #[stat(desc = "select_idle_sibling(): the LLC scan found a wholly idle core")]
    pub sis_idle_core: u64,
    #[stat(desc = "idle-core scans that found none (has_idle_cores cleared)")]
    pub sis_idle_core_none: u64,
    #[stat(desc = "CPUs going idle that completed an idle core (__update_idle_core())")]
    pub idle_core_set: u64,
    #[stat(desc = "entities that changed queue")]
    pub migrations: u64,
    #[stat(desc = "newidle balance attempts (nothing to run at dispatch)")]
    pub newidle: u64,
    #[stat(desc = "domain levels that newidle balances skipped by NI_RANDOM")]
    pub newidle_gated: u64,
    #[stat(desc = "newidle balances that returned at once: no queue had a task waiting")]
    pub newidle_idle: u64,
    #[stat(
        desc = "newidle balances skipped: the CPU's idle periods (avg_idle) are shorter than the cost"
    )]
    pub newidle_short: u64,
    #[stat(desc = "tasks pulled by a newidle balance")]
    pub pull_newidle: u64,
    #[stat(desc = "tasks pulled by the periodic balance")]
    pub pull_periodic: u64,
    #[stat(desc = "idle CPUs kicked to pull from a busy one")]
    pub nohz_kick: u64,
    #[stat(desc = "tasks pulled by a periodic or idle balance of an SMT domain")]
    pub lb_smt: u64,
    #[stat(desc = "tasks pulled by a periodic or idle balance of an MC (LLC) domain")]
    pub lb_mc: u64,
    #[stat(desc = "tasks pulled by a periodic or idle balance of a PKG (node) domain")]
    pub lb_pkg: u64,
    #[stat(desc = "tasks pulled by a periodic or idle balance of a NUMA domain")]
    pub lb_numa: u64,
    #[stat(desc = "running tasks pushed to an idle CPU (active balance)")]
    pub lb_active: u64,
    #[stat(desc = "balance passes that found an imbalance and moved nothing")]
    pub lb_failed: u64,
    #[stat(desc = "active balances asked for a lone task on a CPU of reduced capacity")]
    pub lb_active_capacity: u64,
    #[stat(desc = "nohz kicks for a lone task on a CPU of reduced capacity")]
    pub nohz_kick_capacity: u64,
    #[stat(desc = "CPU capacities updated (update_cpu_capacity())")]
    pub capacity_update: u64,
    #[stat(desc = "idle balances run by a kicked CPU for the idle CPUs")]
    pub nohz_balance: u64,
    #[stat(desc = "CPUs taken by a higher class (RT, deadline): ops.cpu_release")]
    pub cpu_release: u64,
    #[stat(desc = "idle CPUs kicked: a higher class held a CPU with tasks waiting a tick")]
    pub release_kick: u64,
    #[stat(desc = "CPUs that came online (handled without a reload)")]
    pub cpu_online: u64,
    #[stat(desc = "CPUs that went offline (handled without a reload)")]
    pub cpu_offline: u64,
    #[stat(desc = "entities moved off a CPU going offline, keeping their lag")]
    pub hotplug_moved: u64,
    #[stat(
        desc = "tasks bound to a CPU going offline, handed to the global DSQ that it still consumes"
    )]
    pub hotplug_global: u64,
    #[stat(desc = "cgroups of the cpu controller given a group of their own")]
    pub cgroup_init: u64,
    #[stat(desc = "groups gone with their cgroup")]
    pub cgroup_exit: u64,
    #[stat(desc = "tasks moved between cgroups")]
    pub cgroup_move: u64,
    #[stat(desc = "cgroups counted as their parent (deeper than the lab follows, or no room)")]
    pub cgroup_flattened: u64,
    #[stat(desc = "bandwidth period turn-overs of groups with a cpu.max quota")]
    pub bw_period: u64,
    #[stat(desc = "group queues throttled: out of runtime with the group's pool dry")]
    pub bw_throttle: u64,
    #[stat(desc = "group queues unthrottled by a period's refill")]
    pub bw_unthrottle: u64,
    #[stat(desc = "tasks of throttled group queues held off the queue")]
    pub limbo_held: u64,
    #[stat(desc = "held tasks that rejoined the queue")]
    pub limbo_released: u64,
    #[stat(desc = "held tasks let out while still throttled (watchdog guard, CPU going offline)")]
    pub limbo_forced: u64,
    #[stat(desc = "tasks of throttled queues not held: preempted inside an RCU read-side section")]
    pub limbo_rcu: u64,
    #[stat(desc = "ticks that found a task of a throttled queue inside the kernel: not held yet")]
    pub bw_kernel: u64,
    #[stat(desc = "performance targets handed to cpufreq (CPUFREQ; changes only)")]
    pub cpuperf_set: u64,
    #[stat(desc = "pull candidates not allowed on the puller")]
    pub pull_refused_affinity: u64,
    #[stat(desc = "pull candidates running or already dispatched")]
    pub pull_refused_running: u64,
    #[stat(desc = "pull candidates that were ghosts")]
    pub pull_refused_delayed: u64,
    #[stat(desc = "pull candidates ineligible on their queue")]
    pub pull_refused_ineligible: u64,
    #[stat(desc = "pull candidates that were cache hot")]
    pub pull_refused_hot: u64,
    #[stat(desc = "pull candidates too heavy for the imbalance")]
    pub pull_refused_load: u64,
    #[stat(desc = "pull candidates with migration disabled")]
    pub pull_refused_pinned: u64,
    #[stat(desc = "PELT: entities whose load averages joined a queue's (new or migrated)")]
    pub pelt_attach: u64,
    #[stat(desc = "PELT: entities whose averages left a queue with a pull (detach)")]
    pub pelt_detach: u64,
    #[stat(desc = "PELT: entities whose averages left a queue after a sleep (removed sums)")]
    pub pelt_remove: u64,
    #[stat(desc = "PELT: blocked-average updates of an idle CPU's queue")]
    pub pelt_blocked: u64,
    #[stat(
        desc = "entities a first-eligible scan of a deadline-sorted DSQ would visit (--measure-scan)"
    )]
    pub dsq_scan_nodes: u64,
    #[stat(desc = "picks where that scan stops at the first entity (--measure-scan)")]
    pub dsq_scan_len_1: u64,
    #[stat(desc = "picks where that scan stops at the second entity (--measure-scan)")]
    pub dsq_scan_len_2: u64,
    #[stat(desc = "picks where that scan stops at the 3rd or 4th entity (--measure-scan)")]
    pub dsq_scan_len_4: u64,
    #[stat(desc = "picks where that scan stops at the 5th to 8th entity (--measure-scan)")]
    pub dsq_scan_len_8: u64,
    #[stat(desc = "picks where that scan goes past the 8th entity (--measure-scan)")]
    pub dsq_scan_len_more: u64,
    #[stat(desc = "tasks with an entity slot, at the time of the sample")]
    pub tasks: u64,
    #[stat(desc = "entity slots the pool holds now (it doubles at half use, up to its cap)")]
    pub task_slots: u64,
    #[stat(desc = "cgroups with a group of their own, at the time of the sample")]
    pub groups: u64,
    #[stat(desc = "per-CPU queues at the time of the sample")]
    pub cpus: BTreeMap<usize, CpuQueue>,
    #[stat(desc = "BPF run time per callback (--bpf-stats)")]
    pub callbacks: BTreeMap<String, CallbackCost>,
}

/// The BPF run time of one callback program (the kernel's bpf_stats: run_cnt, run_time_ns).
#[stat_doc]
#[derive(Clone, Debug, Default, Serialize, Deserialize, Stats)]
#[stat(desc = "BPF run time of one callback")]
pub struct CallbackCost {
    #[stat(desc = "calls")]
    pub calls: u64,
    #[stat(desc = "ns spent in the program")]
    pub ns: u64,
}

/// The fields of [`Metrics`] that are levels at the time of the sample, not counts.
pub const GAUGES: &[&str] = &["tasks", "task_slots", "groups"];

/// The counter fields of [`Metrics`] in enum lab_stat order.
pub const COUNTERS: &[&str] = &[
    "dispatches",
    "dispatch_keep",
    "dispatch_miss",
    "dispatch_repick",
    "insert_select",
    "insert_enqueue",
    "insert_preempt",
    "picks",
    "pick_curr",
    "pick_protected",
    "pick_buddy",
    "pick_leftmost",
    "pick_search",
    "pick_none",
    "scan_nodes",
    "scan_len_1",
    "scan_len_2",
    "scan_len_4",
    "scan_len_8",
    "scan_len_more",
    "preempt_wakeup",
    "preempt_short",
    "preempt_idle",
    "preempt_sync",
    "preempt_tick_deadline",
    "preempt_tick_protect",
    "preempt_hrtick",
    "preempt_enqueue",
    "preempt_lazy",
    "preempt_lazy_tick",
    "wakeup_no_preempt",
    "protect_update",
    "deadline_new",
    "place_initial",
    "place_lag_pos",
    "place_lag_neg",
    "place_lag_zero",
    "place_rel_deadline",
    "ghost_created",
    "ghost_picked",
    "ghost_requeued",
    "ghost_requeue_moved",
    "ghost_requeue_pos",
    "ghost_finalized_other",
    "reweight",
    "yields",
    "sum_overflow",
    "paranoid_rebuild",
    "select",
    "select_ghost",
    "select_wake_cold",
    "select_fork",
    "fork_idlest",
    "wake_wide",
    "fork_node_local",
    "wa_node_local",
    "wa_idle_this",
    "wa_idle_prev",
    "wa_weight_this",
    "wa_prev",
    "sis_target",
    "sis_prev",
    "sis_kthread",
    "sis_recent",
    "sis_scan",
    "sis_none",
    "sis_scan_limited",
    "sis_smt",
    "sis_idle_core",
    "sis_idle_core_none",
    "idle_core_set",
    "migrations",
    "newidle",
    "newidle_gated",
    "newidle_idle",
    "newidle_short",
    "pull_newidle",
    "pull_periodic",
    "nohz_kick",
    "lb_smt",
    "lb_mc",
    "lb_pkg",
    "lb_numa",
    "lb_active",
    "lb_failed",
    "lb_active_capacity",
    "nohz_kick_capacity",
    "capacity_update",
    "nohz_balance",
    "cpu_release",
    "release_kick",
    "cpu_online",
    "cpu_offline",
    "hotplug_moved",
    "hotplug_global",
    "cgroup_init",
    "cgroup_exit",
    "cgroup_move",
    "cgroup_flattened",
    "bw_period",
    "bw_throttle",
    "bw_unthrottle",
    "limbo_held",
    "limbo_released",
    "limbo_forced",
    "limbo_rcu",
    "bw_kernel",
    "cpuperf_set",
    "pull_refused_affinity",
    "pull_refused_running",
    "pull_refused_delayed",
    "pull_refused_ineligible",
    "pull_refused_hot",
    "pull_refused_load",
    "pull_refused_pinned",
    "pelt_attach",
    "pelt_detach",
    "pelt_remove",
    "pelt_blocked",
    "dsq_scan_nodes",
    "dsq_scan_len_1",
    "dsq_scan_len_2",
    "dsq_scan_len_4",
    "dsq_scan_len_8",
    "dsq_scan_len_more",
];

impl Metrics {
    /// Builds the counters from per-CPU rows (summed) and the queue states.
    pub fn from_rows(
        rows: &[Vec<u64>],
        cpus: BTreeMap<usize, CpuQueue>,
        callbacks: BTreeMap<String, CallbackCost>,
        interval_s: f64,
    ) -> Self {
        let mut sum = vec![0u64; COUNTERS.len()];
        for row in rows {
            for (s, v) in sum.iter_mut().zip(row) {
                *s += v;
            }
        }
        let mut json = serde_json::Map::new();
        for (name, v) in COUNTERS.iter().zip(&sum) {
            json.insert(name.to_string(), (*v).into());
        }
        let mut m: Metrics =
            serde_json::from_value(serde_json::Value::Object(json)).unwrap_or_default();
        m.cpus = cpus;
        m.callbacks = callbacks;
        m.interval_s = interval_s;
        m
    }

    /// A counter by its field name.
    pub fn counter(&self, name: &str) -> Option<u64> {
        serde_json::to_value(self).ok()?.get(name)?.as_u64()
    }
}

/// V of a queue read from user space: the scheduler's own formula (avg_vruntime_peek() in
/// src/bpf/avg_vruntime.h, PARANOID_AVG's weight shift included), without re-centring.
/// `curr` is the queue's running entity while it is queued.
pub fn queue_state(cfs: &ffi::lab_cfs, curr: Option<&ffi::lab_se>) -> CpuQueue {
    let curr = curr.map_or(std::ptr::null(), |se| se as *const ffi::lab_se);
    // SAFETY: both pointers are valid for the call (or null for curr); the C function only
    // reads them.
    let avg = unsafe { ffi::host_avg_vruntime_peek(cfs, curr) };
    CpuQueue {
        avg_vruntime: avg,
        nr_queued: cfs.nr_queued as u64,
        nr_delayed: cfs.nr_delayed as u64,
        sum_weight: cfs.sum_weight,
        load_avg: cfs.avg.load_avg,
        runnable_avg: cfs.avg.runnable_avg,
        util_avg: cfs.avg.util_avg,
        util_est: cfs.avg.util_est as u64,
        perf_target: 0,
        capacity: 0,
    }
}

/// The stats server's data: metadata and the "top" reader, which asks the daemon's run loop for
/// fresh counters over the channel and returns the delta since this client's previous request.
pub fn server_data() -> StatsServerData<(), Metrics> {
    let open: Box<dyn StatsOpener<(), Metrics>> = Box::new(move |(req_ch, res_ch)| {
        let mut prev: Option<Metrics> = None;
        let read: Box<dyn StatsReader<(), Metrics>> = Box::new(move |_args, (req_ch, res_ch)| {
            req_ch.send(())?;
            let now = res_ch.recv()?;
            let out = match &prev {
                Some(p) => delta(&now, p),
                None => now.clone(),
            };
            prev = Some(now);
            out.to_json()
        });
        let _ = (req_ch, res_ch);
        Ok(read)
    });
    StatsServerData::new()
        .add_meta(Metrics::meta())
        .add_meta(CpuQueue::meta())
        .add_meta(CallbackCost::meta())
        .add_ops("top", StatsOps { open, close: None })
}

/// `now - prev` for the counters; queue states and the interval as of `now`.
pub fn delta(now: &Metrics, prev: &Metrics) -> Metrics {
    let a = serde_json::to_value(now).unwrap_or_default();
    let b = serde_json::to_value(prev).unwrap_or_default();
    let mut json = serde_json::Map::new();
    for name in COUNTERS {
        let x = a.get(name).and_then(|v| v.as_u64()).unwrap_or(0);
        let y = b.get(name).and_then(|v| v.as_u64()).unwrap_or(0);
        json.insert(name.to_string(), x.saturating_sub(y).into());
    }
    let mut m: Metrics =
        serde_json::from_value(serde_json::Value::Object(json)).unwrap_or_default();
    m.cpus = now.cpus.clone();
    m.tasks = now.tasks;
    m.task_slots = now.task_slots;
    m.groups = now.groups;
    m.callbacks = now
        .callbacks
        .iter()
        .map(|(k, c)| {
            let p = prev.callbacks.get(k).cloned().unwrap_or_default();
            let d = CallbackCost {
                calls: c.calls.saturating_sub(p.calls),
                ns: c.ns.saturating_sub(p.ns),
            };
            (k.clone(), d)
        })
        .collect();
    m.interval_s = (now.interval_s - prev.interval_s).max(0.0);
    m
}

/// `--help-stats`: every field and what it means.
pub fn describe() -> Result<()> {
    server_data().describe_meta(&mut std::io::stdout(), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_names_match_the_bpf_enum() {
        assert_eq!(COUNTERS.len(), ffi::lab_stat_LAB_NR_STATS as usize);
        // Every name is a field of Metrics (and nothing else is a u64 counter).
        let m = serde_json::to_value(Metrics::default()).unwrap();
        for c in COUNTERS {
            assert!(m.get(c).is_some(), "{c}");
        }
        assert_eq!(
            ffi::lab_stat_LAB_ST_PREEMPT_WAKEUP as usize,
            COUNTERS
                .iter()
                .position(|c| *c == "preempt_wakeup")
                .unwrap()
        );
        assert_eq!(
            ffi::lab_stat_LAB_ST_GHOST_REQUEUE_POS as usize,
            COUNTERS
                .iter()
                .position(|c| *c == "ghost_requeue_pos")
                .unwrap()
        );
        assert_eq!(
            ffi::lab_stat_LAB_ST_DSQ_SCAN_LEN_MORE as usize,
            COUNTERS.len() - 1
        );
        let select = COUNTERS.iter().position(|c| *c == "select").unwrap();
        assert_eq!(ffi::lab_stat_LAB_ST_SELECT as usize, select);
    }

    #[test]
    fn rows_sum_and_deltas_subtract() {
        let at = |name: &str| COUNTERS.iter().position(|c| *c == name).unwrap();
        let (picks, wakeup) = (at("picks"), at("preempt_wakeup"));
        let mut r0 = vec![0u64; COUNTERS.len()];
        let mut r1 = vec![0u64; COUNTERS.len()];
        r0[picks] = 5;
        r1[picks] = 7;
        r1[wakeup] = 3;
        let mut cpus = BTreeMap::new();
        cpus.insert(
            0,
            CpuQueue {
                nr_queued: 2,
                ..Default::default()
            },
        );
        let a = Metrics::from_rows(&[r0.clone(), r1.clone()], cpus, BTreeMap::new(), 1.0);
        assert_eq!(a.cpus[&0].nr_queued, 2);
        assert_eq!(a.picks, 12);
        assert_eq!(a.preempt_wakeup, 3);
        r0[picks] = 10;
        let mut cb = BTreeMap::new();
        cb.insert(
            "lab_dispatch".to_string(),
            CallbackCost {
                calls: 10,
                ns: 5000,
            },
        );
        let b = Metrics::from_rows(&[r0, r1], BTreeMap::new(), cb, 3.0);
        let d = delta(&b, &a);
        assert_eq!(d.picks, 5);
        assert_eq!(d.preempt_wakeup, 0);
        assert_eq!(d.interval_s, 2.0);
        assert_eq!(d.callbacks["lab_dispatch"].calls, 10);
        let mut s = Vec::new();
        d.format(&mut s).unwrap();
        assert!(String::from_utf8(s).unwrap().contains("picks"));
    }

    #[test]
    fn v_is_read_like_avg_vruntime() {
        let cfs = ffi::lab_cfs {
            zero_vruntime: 1000,
            sum_w_vruntime: -3,
            sum_weight: 2,
            ..Default::default()
        };
        // floor(-3 / 2) = -2
        assert_eq!(queue_state(&cfs, None).avg_vruntime, 998);
        // curr at 1010 with weight 2: (-3 + 20) / 4 = 4
        let curr = ffi::lab_se {
            vruntime: 1010,
            weight: 2,
            ..Default::default()
        };
        assert_eq!(queue_state(&cfs, Some(&curr)).avg_vruntime, 1004);
        // PARANOID_AVG's shift applies to curr's weight as to the tree's: 2 >> 1 = 1, kept at
        // the minimum of 2.
        let shifted = ffi::lab_cfs {
            sum_shift: 1,
            ..cfs
        };
        assert_eq!(queue_state(&shifted, Some(&curr)).avg_vruntime, 1004);
        let heavy = ffi::lab_se { weight: 8, ..curr };
        // w' = 8 >> 1 = 4: (-3 + 40) / 6 = 6 (unshifted it would be (-3 + 80) / 10 = 7)
        assert_eq!(queue_state(&shifted, Some(&heavy)).avg_vruntime, 1006);
    }
}
