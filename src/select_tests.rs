//! Host tests of the CPU selection and balancing decisions in src/bpf/select.h and
//! src/bpf/balance.h: the same C the BPF scheduler runs (select.bpf.h and balance.bpf.h only
//! gather the facts), compiled for the host by build.rs. Each test pins one rule of fair.c's
//! select_idle_sibling(), wake_affine(), can_migrate_task() or task_hot() with made-up CPUs and
//! tasks.

use crate::eevdf::ffi::*;

/// WEIGHT_IDLEPRIO: the weight of a SCHED_IDLE entity.
const IDLE_W: u64 = 3;
/// The weight of a nice 19 entity, the lightest that is not SCHED_IDLE.
const NICE_19_W: u64 = 15;
const NICE_0_W: u64 = 1024;

/// A CPU of LLC `llc` and core `core` with the given entity weights queued (running one and
/// ghosts included), allowed for the task, not idle in the built-in mask.
fn cpu(id: i32, llc: u32, core: u32, weights: &[u64]) -> lab_cpu_snap {
    lab_cpu_snap {
        cpu: id,
        llc,
        core,
        nr_queued: weights.len() as u32,
        weight: weights.iter().sum(),
        allowed: 1,
        ..Default::default()
    }
}

/// An idle CPU: in the idle mask, nothing queued.
fn idle_cpu(id: i32, llc: u32, core: u32) -> lab_cpu_snap {
    lab_cpu_snap {
        idle: 1,
        ..cpu(id, llc, core, &[])
    }
}

fn busy_cpu(id: i32, llc: u32, core: u32) -> lab_cpu_snap {
    cpu(id, llc, core, &[NICE_0_W])
}

// ---------------------------------------------------------------------------------------------
// sched_idle_rq(), choose_idle_cpu()

#[test]
fn sched_idle_rq_needs_every_entity_sched_idle() {
    unsafe {
        assert!(host_sched_idle_rq(&cpu(0, 0, 0, &[IDLE_W])));
        assert!(host_sched_idle_rq(&cpu(0, 0, 0, &[IDLE_W, IDLE_W, IDLE_W])));
        // An empty queue is idle, not "SCHED_IDLE only".
        assert!(!host_sched_idle_rq(&cpu(0, 0, 0, &[])));
        // One nice 19 entity among them is enough to make it a busy CPU.
        assert!(!host_sched_idle_rq(&cpu(0, 0, 0, &[IDLE_W, NICE_19_W])));
        assert!(!host_sched_idle_rq(&cpu(0, 0, 0, &[NICE_0_W])));
    }
}

/// Tasks below a cpu.idle group keep their own weights; the queue counts them as they join
/// (h_nr_idle), and a CPU running nothing else is as good as idle to a wakee that is not.
#[test]
fn tasks_of_idle_groups_make_a_sched_idle_rq() {
    let idle_group = |n: usize, weights: &[u64]| lab_cpu_snap {
        all_idle: (n >= weights.len()) as u8,
        ..cpu(0, 0, 0, weights)
    };
    unsafe {
        assert!(host_sched_idle_rq(&idle_group(2, &[NICE_0_W, NICE_0_W])));
        // A SCHED_IDLE task beside them: counted too.
        assert!(host_sched_idle_rq(&idle_group(2, &[NICE_0_W, IDLE_W])));
        // One task of a normal group among them.
        assert!(!host_sched_idle_rq(&idle_group(1, &[NICE_0_W, NICE_0_W])));
        assert!(!host_sched_idle_rq(&idle_group(0, &[])));
        assert!(host_choose_idle_cpu(&idle_group(1, &[NICE_0_W]), false));
        assert!(!host_choose_idle_cpu(&idle_group(1, &[NICE_0_W]), true));
    }
}

#[test]
fn weights_identify_sched_idle_queues_exactly() {
    // The weight rule: n entities weigh 3n only when all are SCHED_IDLE, for every mix of a few
    // entities drawn from the nice table's lightest weights and WEIGHT_IDLEPRIO.
    let choices = [IDLE_W, 15, 18, 23, 29, 36, 1024];
    for a in choices {
        for b in choices {
            for c in choices {
                let all_idle = [a, b, c].iter().all(|&w| w == IDLE_W);
                assert_eq!(
                    unsafe { host_sched_idle_rq(&cpu(0, 0, 0, &[a, b, c])) },
                    all_idle,
                    "{a} {b} {c}"
                );
            }
        }
    }
}

#[test]
fn choose_idle_cpu_takes_sched_idle_cpus_for_normal_wakees_only() {
    let sched_idle = cpu(1, 0, 1, &[IDLE_W]);
    unsafe {
        assert!(host_choose_idle_cpu(&sched_idle, false));
        assert!(!host_choose_idle_cpu(&sched_idle, true));
        assert!(host_choose_idle_cpu(&idle_cpu(1, 0, 1), true));
        assert!(!host_choose_idle_cpu(&busy_cpu(1, 0, 1), false));
        // In the idle mask but a ghost is queued: not available_idle_cpu().
        let ghost = lab_cpu_snap {
            idle: 1,
            nr_delayed: 1,
            ..cpu(1, 0, 1, &[NICE_0_W])
        };
        assert!(!host_available_idle(&ghost));
        assert!(!host_choose_idle_cpu(&ghost, false));
    }
}

// ---------------------------------------------------------------------------------------------
// select_idle_sibling()

fn sis(target: lab_cpu_snap, prev: lab_cpu_snap, recent: Option<lab_cpu_snap>) -> lab_sis {
    lab_sis {
        target,
        prev,
        has_recent: recent.is_some() as u8,
        recent: recent.unwrap_or_default(),
        this_cpu: 7,
        this_nr_queued: 2,
        ..Default::default()
    }
}

fn select_idle_sibling(s: &lab_sis) -> (u32, i32) {
    let mut cpu = -1;
    let step = unsafe { host_select_idle_sibling(s, &mut cpu) };
    (step, cpu)
}

#[test]
fn sis_prefers_target_then_prev_then_recent() {
    // Target idle: the target, whatever else is idle.
    let s = sis(
        idle_cpu(0, 0, 0),
        idle_cpu(1, 0, 1),
        Some(idle_cpu(2, 0, 2)),
    );
    assert_eq!(select_idle_sibling(&s), (LAB_SIS_TARGET, 0));
    // Target busy, prev idle in the same LLC: prev.
    let s = sis(
        busy_cpu(0, 0, 0),
        idle_cpu(1, 0, 1),
        Some(idle_cpu(2, 0, 2)),
    );
    assert_eq!(select_idle_sibling(&s), (LAB_SIS_PREV, 1));
    // Prev idle but in another LLC: skipped; the recently used CPU shares the target's LLC.
    let s = sis(
        busy_cpu(0, 0, 0),
        idle_cpu(1, 1, 1),
        Some(idle_cpu(2, 0, 2)),
    );
    assert_eq!(select_idle_sibling(&s), (LAB_SIS_RECENT, 2));
    // The recently used CPU equal to prev is not a second chance for prev.
    let s = sis(
        busy_cpu(0, 0, 0),
        busy_cpu(1, 0, 1),
        Some(idle_cpu(1, 0, 1)),
    );
    assert_eq!(select_idle_sibling(&s), (LAB_SIS_SCAN, 0));
    // A recently used CPU the task may not run on is skipped.
    let mut r = idle_cpu(2, 0, 2);
    r.allowed = 0;
    let s = sis(busy_cpu(0, 0, 0), busy_cpu(1, 0, 1), Some(r));
    assert_eq!(select_idle_sibling(&s), (LAB_SIS_SCAN, 0));
    // Nothing idle: scan, the target as the fallback.
    let s = sis(busy_cpu(0, 0, 0), busy_cpu(1, 0, 1), None);
    assert_eq!(select_idle_sibling(&s), (LAB_SIS_SCAN, 0));
}

#[test]
fn sis_counts_sched_idle_cpus_as_idle() {
    // The kernel's choose_idle_cpu(): a target running only SCHED_IDLE work is taken for a
    // normal wakee ...
    let s = sis(cpu(0, 0, 0, &[IDLE_W]), idle_cpu(1, 0, 1), None);
    assert_eq!(select_idle_sibling(&s), (LAB_SIS_TARGET, 0));
    // ... and so are prev and the recently used CPU ...
    let s = sis(busy_cpu(0, 0, 0), cpu(1, 0, 1, &[IDLE_W]), None);
    assert_eq!(select_idle_sibling(&s), (LAB_SIS_PREV, 1));
    let s = sis(
        busy_cpu(0, 0, 0),
        busy_cpu(1, 0, 1),
        Some(cpu(2, 0, 2, &[IDLE_W])),
    );
    assert_eq!(select_idle_sibling(&s), (LAB_SIS_RECENT, 2));
    // ... but not for a SCHED_IDLE wakee.
    let mut s = sis(cpu(0, 0, 0, &[IDLE_W]), idle_cpu(1, 0, 1), None);
    s.wakee_idle = 1;
    assert_eq!(select_idle_sibling(&s), (LAB_SIS_PREV, 1));
}

#[test]
fn sis_stacks_behind_a_per_cpu_kthread() {
    // IO completion: a per-CPU kthread wakes the task on the task's previous CPU, where the
    // kthread is alone: stay there even though it is busy.
    let mut s = sis(
        busy_cpu(0, 0, 0),
        busy_cpu(7, 0, 7),
        Some(idle_cpu(2, 0, 2)),
    );
    s.waker_percpu_kthread = 1;
    s.this_nr_queued = 1;
    assert_eq!(select_idle_sibling(&s), (LAB_SIS_KTHREAD, 7));
    // Not alone: on to the recently used CPU.
    s.this_nr_queued = 2;
    assert_eq!(select_idle_sibling(&s), (LAB_SIS_RECENT, 2));
}

// ---------------------------------------------------------------------------------------------
// select_idle_cpu() and SIS_UTIL

/// An LLC of `n` busy CPUs 0..n.
fn busy_llc(n: i32) -> Vec<lab_cpu_snap> {
    (0..n).map(|i| busy_cpu(i, 0, i as u32)).collect()
}

fn scan(llc: &[lab_cpu_snap], target_pos: u32, budget: i32, wakee_idle: bool) -> (i32, bool) {
    let mut limited = false;
    let cpu = unsafe {
        host_select_idle_cpu(
            llc.as_ptr(),
            llc.len() as u32,
            target_pos,
            budget,
            wakee_idle,
            &mut limited,
        )
    };
    (cpu, limited)
}

#[test]
fn scan_wraps_from_after_the_target_and_ends_at_it() {
    let mut llc = busy_llc(8);
    llc[1] = idle_cpu(1, 0, 1);
    llc[6] = idle_cpu(6, 0, 6);
    let all = unsafe { host_idle_scan_budget(0, 8, false) };
    assert_eq!(scan(&llc, 5, all, false), (6, false));
    assert_eq!(scan(&llc, 6, all, false), (1, false));
    // Only the target itself is idle (select_idle_sibling() checked it already, but the scan's
    // mask includes it): found last.
    let mut llc = busy_llc(4);
    llc[2] = idle_cpu(2, 0, 2);
    assert_eq!(scan(&llc, 2, all, false), (2, false));
}

#[test]
fn sis_util_budget_limits_the_scan() {
    let mut llc = busy_llc(8);
    llc[4] = idle_cpu(4, 0, 4);
    // nr_idle_scan 0: the LLC counts as overloaded, nothing is scanned.
    let b = unsafe { host_idle_scan_budget(0, 8, true) };
    assert_eq!(b, 1);
    assert_eq!(scan(&llc, 0, b, false), (-1, true));
    // nr_idle_scan 3 from CPU 0 looks at CPUs 1, 2, 3: not 4.
    let b = unsafe { host_idle_scan_budget(3, 8, true) };
    assert_eq!(scan(&llc, 0, b, false), (-1, true));
    // nr_idle_scan 4 reaches it.
    let b = unsafe { host_idle_scan_budget(4, 8, true) };
    assert_eq!(scan(&llc, 0, b, false), (4, false));
    // CPUs outside the task's affinity are not in the scanned mask and cost nothing.
    for c in &mut llc[1..4] {
        c.allowed = 0;
    }
    let b = unsafe { host_idle_scan_budget(1, 8, true) };
    assert_eq!(scan(&llc, 0, b, false), (4, false));
}

#[test]
fn scan_takes_sched_idle_cpus_for_normal_wakees() {
    let mut llc = busy_llc(4);
    llc[3] = cpu(3, 0, 3, &[IDLE_W, IDLE_W]);
    let all = unsafe { host_idle_scan_budget(0, 4, false) };
    assert_eq!(scan(&llc, 0, all, false), (3, false));
    assert_eq!(scan(&llc, 0, all, true), (-1, false));
}

// ---------------------------------------------------------------------------------------------
// select_idle_core(), select_idle_smt()

/// An LLC of `n` CPUs in `n / 2` SMT pairs: CPUs 2k and 2k + 1 share core k; all busy.
fn busy_smt_llc(n: i32) -> Vec<lab_cpu_snap> {
    (0..n).map(|i| busy_cpu(i, 0, (i / 2) as u32)).collect()
}

fn core_scan(llc: &[lab_cpu_snap], target_pos: u32, wakee_idle: bool) -> (i32, bool) {
    let mut whole = false;
    let cpu = unsafe {
        host_select_idle_core_scan(
            llc.as_ptr(),
            llc.len() as u32,
            target_pos,
            wakee_idle,
            &mut whole,
        )
    };
    (cpu, whole)
}

#[test]
fn idle_core_scan_prefers_a_whole_idle_core() {
    // Core 1 (CPUs 2, 3) half idle, core 3 (CPUs 6, 7) wholly idle: from target 0 the scan meets
    // CPU 3 first but takes the idle core, at the CPU where the scan met it.
    let mut llc = busy_smt_llc(8);
    llc[3] = idle_cpu(3, 0, 1);
    llc[6] = idle_cpu(6, 0, 3);
    llc[7] = idle_cpu(7, 0, 3);
    assert_eq!(core_scan(&llc, 0, false), (6, true));
    // From target 6 the scan starts at CPU 7: the same core, met at 7.
    assert_eq!(core_scan(&llc, 6, false), (7, true));
    // No whole idle core: the first idle CPU the scan saw is the fallback.
    llc[7] = busy_cpu(7, 0, 3);
    assert_eq!(core_scan(&llc, 0, false), (3, false));
    // Nothing idle at all.
    assert_eq!(core_scan(&busy_smt_llc(8), 0, false), (-1, false));
}

#[test]
fn idle_core_scan_respects_affinity() {
    // Core 2 (CPUs 4, 5) is idle, but the task may not run on CPU 4: the core is still idle as a
    // whole (the kernel looks at cpu_smt_mask(), not the task's mask), and its allowed CPU 5 is
    // where the scan meets it.
    let mut llc = busy_smt_llc(6);
    llc[4] = idle_cpu(4, 0, 2);
    llc[5] = idle_cpu(5, 0, 2);
    llc[4].allowed = 0;
    assert_eq!(core_scan(&llc, 0, false), (5, true));
    // A fallback must be allowed: an idle CPU outside the mask is never it.
    let mut llc = busy_smt_llc(4);
    llc[1] = idle_cpu(1, 0, 0);
    llc[1].allowed = 0;
    assert_eq!(core_scan(&llc, 3, false), (-1, false));
}

#[test]
fn idle_core_scan_takes_sched_idle_fallbacks_for_normal_wakees() {
    let mut llc = busy_smt_llc(4);
    llc[2] = cpu(2, 0, 1, &[IDLE_W]);
    assert_eq!(core_scan(&llc, 0, false), (2, false));
    assert_eq!(core_scan(&llc, 0, true), (-1, false));
}

#[test]
fn select_idle_smt_takes_an_idle_sibling_of_prev_in_the_llc() {
    let sib = idle_cpu(5, 1, 2);
    unsafe {
        assert!(host_select_idle_smt_ok(&sib, 4, 1, false));
        // prev itself, another LLC, a disallowed or busy sibling: no.
        assert!(!host_select_idle_smt_ok(&sib, 5, 1, false));
        assert!(!host_select_idle_smt_ok(&sib, 4, 0, false));
        let mut off = sib;
        off.allowed = 0;
        assert!(!host_select_idle_smt_ok(&off, 4, 1, false));
        assert!(!host_select_idle_smt_ok(&busy_cpu(5, 1, 2), 4, 1, false));
        assert!(host_select_idle_smt_ok(
            &cpu(5, 1, 2, &[IDLE_W]),
            4,
            1,
            false
        ));
        assert!(!host_select_idle_smt_ok(
            &cpu(5, 1, 2, &[IDLE_W]),
            4,
            1,
            true
        ));
    }
}

#[test]
fn idle_scan_budget_refresh_period() {
    let period = LAB_IDLE_SCAN_PERIOD_NS as u64;
    assert_eq!(period, 4_000_000);
    unsafe {
        // Never computed (just attached): due at once.
        assert!(host_idle_scan_stale(1_000, 0));
        assert!(!host_idle_scan_stale(10_000_000 + period - 1, 10_000_000));
        assert!(host_idle_scan_stale(10_000_000 + period, 10_000_000));
        // At ops.init the lab starts every LLC at its full size; what an idle LLC computes
        // agrees, so the first refresh changes nothing until there is load.
        assert_eq!(host_nr_idle_scan(0, 8, LAB_LLC_IMBALANCE_PCT), 8);
        // Busy enough (util above ~100/117 of capacity): no scan.
        assert_eq!(host_nr_idle_scan(8 * 900, 8, LAB_LLC_IMBALANCE_PCT), 0);
    }
}

// ---------------------------------------------------------------------------------------------
// wake_affine(), want_affine

fn wa(this_cpu: lab_cpu_snap, prev_cpu: lab_cpu_snap, sync: bool) -> lab_wake_affine {
    lab_wake_affine {
        this_cpu,
        prev_cpu,
        sync: sync as u8,
        wa_idle: 1,
        wa_weight: 1,
        wa_bias: 1,
        this_capacity: 1024,
        prev_capacity: 1024,
        ..Default::default()
    }
}

#[test]
fn wake_affine_idle_rules() {
    unsafe {
        // The waker's CPU is idle and shares the LLC: it, unless prev is idle too.
        assert_eq!(
            host_wake_affine(&wa(idle_cpu(0, 0, 0), busy_cpu(1, 0, 1), false)),
            LAB_WA_IDLE_THIS
        );
        assert_eq!(
            host_wake_affine(&wa(idle_cpu(0, 0, 0), idle_cpu(1, 0, 1), false)),
            LAB_WA_IDLE_PREV
        );
        // Sync wakeup, the waker alone on its CPU (a ghost does not count): the waker's CPU.
        let mut this = busy_cpu(0, 0, 0);
        this.nr_queued = 2;
        this.nr_delayed = 1;
        assert_eq!(
            host_wake_affine(&wa(this, busy_cpu(1, 1, 1), true)),
            LAB_WA_IDLE_THIS
        );
        // The waker's CPU idle in another LLC, prev idle: prev.
        assert_eq!(
            host_wake_affine(&wa(idle_cpu(0, 1, 0), idle_cpu(1, 0, 1), false)),
            LAB_WA_IDLE_PREV
        );
    }
}

#[test]
fn wake_affine_weight_and_bias() {
    // Both busy: WA_WEIGHT compares loads. With WA_BIAS the waker's side may carry up to ~108 %
    // of prev's (LLC domain) before prev wins.
    let mut this = busy_cpu(0, 0, 0);
    let mut prev = busy_cpu(1, 0, 1);
    prev.load = 2000;
    this.load = 1500; // this_eff = 1500 + 400 = 1900 vs prev_eff = 1600 * 1.08 = 1728
    let mut w = wa(this, prev, false);
    w.task_load = 400;
    assert_eq!(unsafe { host_wake_affine(&w) }, LAB_WA_PREV);
    w.this_cpu.load = 1200; // 1600 vs 1728
    assert_eq!(unsafe { host_wake_affine(&w) }, LAB_WA_WEIGHT_THIS);
    w.wa_bias = 0; // 1600 vs 1600: a tie keeps prev without sync
    assert_eq!(unsafe { host_wake_affine(&w) }, LAB_WA_PREV);
    w.wa_weight = 0;
    w.wa_bias = 1;
    assert_eq!(unsafe { host_wake_affine(&w) }, LAB_WA_PREV);
    // SMT siblings use imbalance_pct 110: a 105 % bias.
    assert_eq!(LAB_SMT_IMBALANCE_PCT, 110);
    assert_eq!(LAB_LLC_IMBALANCE_PCT, 117);
}

/// The loads and capacities are read only when wake_affine() comes to WA_WEIGHT: whenever
/// lab_wake_affine_weighs() says no, any loads give the same answer.
#[test]
fn wake_affine_reads_loads_only_to_weigh() {
    let this_cpus = [
        idle_cpu(0, 0, 0),
        busy_cpu(0, 0, 0),
        cpu(0, 0, 0, &[NICE_0_W, NICE_0_W]),
        idle_cpu(0, 1, 0),
    ];
    let loads = [
        (0, 0, 0, 0, 1024),
        (1500, 2000, 400, 100, 1024),
        (9000, 10, 10, 5000, 400),
    ];
    let mut weighed = 0;
    for this in &this_cpus {
        for prev in [idle_cpu(1, 0, 1), busy_cpu(1, 0, 1)] {
            for sync in [false, true] {
                for (wa_idle, wa_weight) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                    let mut w = wa(*this, prev, sync);
                    w.wa_idle = wa_idle;
                    w.wa_weight = wa_weight;
                    if unsafe { host_wake_affine_weighs(&w) } {
                        weighed += 1;
                        continue;
                    }
                    let unread = unsafe { host_wake_affine(&w) };
                    for (this_load, prev_load, task, waker, cap) in loads {
                        let mut l = w;
                        l.this_cpu.load = this_load;
                        l.prev_cpu.load = prev_load;
                        l.task_load = task;
                        l.waker_load = waker;
                        l.this_capacity = cap;
                        assert_eq!(unsafe { host_wake_affine(&l) }, unread, "{l:?}");
                    }
                }
            }
        }
    }
    // Both busy with WA_WEIGHT on (and no sync shortcut) weigh.
    assert!(weighed > 0);
}

#[test]
fn want_affine_rules() {
    unsafe {
        assert!(host_want_affine(true, 1, 1, 4, true));
        // The waker's CPU is outside the wakee's affinity.
        assert!(!host_want_affine(true, 1, 1, 4, false));
        // wake_wide(): both flip among at least llc_size partners, one llc_size times more.
        assert!(!host_want_affine(true, 16, 4, 4, true));
        assert!(host_want_affine(true, 15, 4, 4, true));
        // A waker without flips of ours (another class) never spreads.
        assert!(host_want_affine(false, 0, 100, 4, true));
    }
}

// ---------------------------------------------------------------------------------------------
// task_hot(), task_is_ineligible_on_dst_cpu(), can_migrate_task()

const NOW: u64 = 1_000_000_000;
const COST: u64 = 500_000;

/// A balance attempt onto a busy puller in another core of the LLC, no failures yet.
fn env() -> lab_lb_env {
    lab_lb_env {
        now: NOW,
        migration_cost: COST,
        nr_balance_failed: 0,
        dst_nr_queued: 1,
        smt: 0,
        place_lag: 1,
        cache_hot_buddy: 1,
        ..Default::default()
    }
}

/// A queued, eligible, allowed task that last ran `ago` ns before NOW.
fn task(ago: u64) -> lab_lb_task {
    lab_lb_task {
        last_ran: NOW - ago,
        eligible: 1,
        allowed: 1,
        ..Default::default()
    }
}

fn hot(e: &lab_lb_env, t: &lab_lb_task) -> bool {
    unsafe { host_task_hot(e, t) }
}

fn can_migrate(e: &lab_lb_env, t: &lab_lb_task) -> u32 {
    unsafe { host_can_migrate_task(e, t) }
}

#[test]
fn task_hot_by_migration_cost() {
    let e = env();
    assert!(hot(&e, &task(COST - 1)));
    assert!(!hot(&e, &task(COST)));
    // migration_cost_ns 0: nothing is hot by time. (The kernel's -1, "always hot", is outside
    // the tunable's range, 0..1e9, in src/features.rs.)
    let e0 = lab_lb_env {
        migration_cost: 0,
        ..env()
    };
    assert!(!hot(&e0, &task(0)));
}

#[test]
fn cache_hot_buddy_needs_a_busy_destination() {
    let buddy = lab_lb_task {
        next_buddy: 1,
        ..task(10 * COST)
    };
    // A busy puller: the next buddy is hot even though it ran long ago ...
    assert!(hot(&env(), &buddy));
    // ... and even with migration_cost_ns 0, which the buddy rule precedes.
    let e0 = lab_lb_env {
        migration_cost: 0,
        ..env()
    };
    assert!(hot(&e0, &buddy));
    // An empty puller takes it.
    let empty = lab_lb_env {
        dst_nr_queued: 0,
        ..env()
    };
    assert!(!hot(&empty, &buddy));
    assert_eq!(can_migrate(&empty, &buddy), LAB_MIGRATE_OK);
    // Without CACHE_HOT_BUDDY it is just a task.
    let off = lab_lb_env {
        cache_hot_buddy: 0,
        ..env()
    };
    assert!(!hot(&off, &buddy));
}

#[test]
fn never_hot_sched_idle_and_smt() {
    let just_ran_buddy = lab_lb_task {
        next_buddy: 1,
        ..task(1)
    };
    let idle = lab_lb_task {
        idle_policy: 1,
        ..just_ran_buddy
    };
    assert!(hot(&env(), &just_ran_buddy));
    assert!(!hot(&env(), &idle));
    let smt = lab_lb_env { smt: 1, ..env() };
    assert!(!hot(&smt, &just_ran_buddy));
    assert_eq!(can_migrate(&smt, &just_ran_buddy), LAB_MIGRATE_OK);
}

#[test]
fn a_migrated_task_is_cold_until_it_runs() {
    // It ran 1 us ago on its old queue, then moved: the kernel zeroed exec_start.
    let moved = lab_lb_task {
        migrated: 1,
        ..task(1_000)
    };
    assert!(hot(&env(), &task(1_000)));
    assert!(!hot(&env(), &moved));
    assert_eq!(can_migrate(&env(), &moved), LAB_MIGRATE_OK);
    // The buddy rule still holds for it.
    let moved_buddy = lab_lb_task {
        next_buddy: 1,
        ..moved
    };
    assert!(hot(&env(), &moved_buddy));
}

#[test]
fn hot_tasks_move_after_cache_nice_tries_failures() {
    // The LLC's cache_nice_tries is 1: a hot task resists two failed balances.
    let t = task(1_000);
    let with = |failed| lab_lb_env {
        nr_balance_failed: failed,
        ..env()
    };
    assert_eq!(can_migrate(&with(0), &t), LAB_MIGRATE_HOT);
    assert_eq!(can_migrate(&with(1), &t), LAB_MIGRATE_HOT);
    assert_eq!(can_migrate(&with(2), &t), LAB_MIGRATE_OK);
}

#[test]
fn ineligible_tasks_stay_only_for_a_busy_destination() {
    let inel = lab_lb_task {
        eligible: 0,
        ..task(10 * COST)
    };
    assert_eq!(can_migrate(&env(), &inel), LAB_MIGRATE_INELIGIBLE);
    unsafe {
        assert!(host_task_is_ineligible_on_dst_cpu(&env(), &inel));
    }
    // An empty puller: nothing there to be placed behind.
    let empty = lab_lb_env {
        dst_nr_queued: 0,
        ..env()
    };
    assert_eq!(can_migrate(&empty, &inel), LAB_MIGRATE_OK);
    // After a failed balance, or without PLACE_LAG, it may move.
    let failed = lab_lb_env {
        nr_balance_failed: 1,
        ..env()
    };
    assert_eq!(can_migrate(&failed, &inel), LAB_MIGRATE_OK);
    let no_lag = lab_lb_env {
        place_lag: 0,
        ..env()
    };
    assert_eq!(can_migrate(&no_lag, &inel), LAB_MIGRATE_OK);
}

#[test]
fn can_migrate_task_refusals_in_kernel_order() {
    let cold = task(10 * COST);
    assert_eq!(can_migrate(&env(), &cold), LAB_MIGRATE_OK);
    let ghost = lab_lb_task {
        delayed: 1,
        eligible: 0,
        ..cold
    };
    assert_eq!(can_migrate(&env(), &ghost), LAB_MIGRATE_DELAYED);
    let pinned = lab_lb_task {
        migration_disabled: 1,
        ..cold
    };
    assert_eq!(can_migrate(&env(), &pinned), LAB_MIGRATE_PINNED);
    let elsewhere = lab_lb_task { allowed: 0, ..cold };
    assert_eq!(can_migrate(&env(), &elsewhere), LAB_MIGRATE_AFFINITY);
    let running = lab_lb_task { on_cpu: 1, ..cold };
    assert_eq!(can_migrate(&env(), &running), LAB_MIGRATE_RUNNING);
    // The ineligibility rule comes before affinity, as in fair.c.
    let inel_elsewhere = lab_lb_task {
        eligible: 0,
        ..elsewhere
    };
    assert_eq!(can_migrate(&env(), &inel_elsewhere), LAB_MIGRATE_INELIGIBLE);
}

// ---------------------------------------------------------------------------------------------
// What the balancer weighs a CPU by, the migrate_load rule

/// Runnable entities count, ghosts do not; a CPU that a higher class holds weighs more than any
/// CPU running only our tasks, as long as it has one of ours waiting (its capacity for ours is
/// gone: the kernel's load per capacity makes it the busiest).
#[test]
fn a_cpu_held_by_a_higher_class_weighs_most() {
    let mut c = cpu(0, 0, 0, &[NICE_0_W, NICE_0_W, NICE_0_W]);
    unsafe {
        assert_eq!(host_nr_busy(&c), 3);
        c.nr_delayed = 2;
        assert_eq!(host_nr_busy(&c), 1);
        let mut held = cpu(1, 0, 1, &[NICE_0_W]);
        held.released = 1;
        let busy = cpu(2, 0, 2, &[NICE_0_W; 4]);
        assert!(host_nr_busy(&held) > host_nr_busy(&busy));
        held.nr_queued = 0;
        assert_eq!(host_nr_busy(&held), 0);
    }
}

#[test]
fn migrate_load_rule() {
    unsafe {
        assert!(!host_migrate_load_fits(1000, 0, 600, false));
        // Halved for every failed balance.
        assert!(host_migrate_load_fits(1000, 1, 600, false));
        assert!(host_migrate_load_fits(600, 0, 600, false));
        // A load of 0 counts as 1.
        assert!(!host_migrate_load_fits(0, 0, 0, false));
        // LB_MIN: light tasks stay until a balance failed.
        assert!(!host_migrate_load_fits(10, 0, 600, true));
        assert!(host_migrate_load_fits(10, 1, 600, true));
        // Huge failure counts do not overflow the shift.
        assert!(host_migrate_load_fits(i64::MAX, 200, 1, false));
    }
}
