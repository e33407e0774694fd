//! Host tests of the per-domain balancing decisions in src/bpf/domains.h (the same C that
//! sd_balance.bpf.h runs over the real CPUs): group classes, the busiest group, the kernel's
//! decision matrix of sched_balance_find_src_group(), calculate_imbalance() with the NUMA
//! allowance, the busiest CPU and the balance intervals. Each case is worked out by hand from
//! fair.c's rules on the VM's multi-level shape (two nodes of two SMT-2 cores) unless it says
//! otherwise.

use crate::eevdf::ffi::*;

const SMT: u32 = LAB_SD_SHARE_CPUCAPACITY | LAB_SD_SHARE_LLC | LAB_SD_PREFER_SIBLING;
const MC: u32 = LAB_SD_SHARE_LLC | LAB_SD_PREFER_SIBLING;

/// A CPU running one task of utilisation @util (a hog: 1024).
fn busy(util: u64) -> lab_lb_cpu {
    lab_lb_cpu {
        load: 1024,
        util,
        runnable: util,
        capacity: 1024,
        nr_running: 1,
        h_nr_runnable: 1,
        ..Default::default()
    }
}

fn idle() -> lab_lb_cpu {
    lab_lb_cpu {
        capacity: 1024,
        idle: 1,
        ..Default::default()
    }
}

/// A core's first CPU running two tasks of load @load together: full utilisation, twice the
/// runnable average.
fn overloaded(load: u64) -> lab_lb_cpu {
    lab_lb_cpu {
        load,
        util: 1024,
        runnable: 2048,
        capacity: 1024,
        nr_running: 2,
        h_nr_runnable: 2,
        core_first: 1,
        ..Default::default()
    }
}

/// The first CPU of a core in its group (what sg->cores counts).
fn first(mut c: lab_lb_cpu) -> lab_lb_cpu {
    c.core_first = 1;
    c
}

fn sd(flags: u32, idle: u32) -> lab_sd {
    lab_sd {
        flags,
        imbalance_pct: if flags & LAB_SD_SHARE_CPUCAPACITY != 0 {
            110
        } else {
            117
        },
        imb_numa_nr: if flags & LAB_SD_NUMA != 0 { 2 } else { 0 },
        idle,
    }
}

/// update_sd_lb_stats() then sched_balance_find_src_group(): the verdict, if any, and the stats.
fn balance(
    d: &lab_sd,
    cpus: &[lab_lb_cpu],
    group: &[u32],
    local: u32,
    flags: &[u32],
) -> (Option<(u32, i64)>, lab_sd_lb) {
    let mut sds = lab_sd_lb::default();
    let mut v = lab_lb_verdict::default();
    // SAFETY: the arrays outlive the calls and hold @cpus.len() entries (flags: one per group).
    let found = unsafe {
        host_sd_lb_stats(
            d,
            cpus.as_ptr(),
            group.as_ptr(),
            cpus.len() as u32,
            local,
            flags.as_ptr(),
            &mut sds,
        );
        host_find_src_group(d, &mut sds, &mut v)
    };
    (found.then_some((v.migration_type, v.imbalance)), sds)
}

/// Four hogs on node 0, node 1 idle, an idle CPU of node 1 balancing the NUMA domain: node 0 is
/// fully busy and prefers its siblings, so sibling_imbalance() says 4, which the NUMA allowance
/// keeps (node 1 runs nothing) and halves: two tasks move.
#[test]
fn numa_spreads_a_full_node() {
    let cpus = [
        first(busy(1024)),
        busy(1024),
        first(busy(1024)),
        busy(1024),
        first(idle()),
        idle(),
        first(idle()),
        idle(),
    ];
    let group = [0, 0, 0, 0, 1, 1, 1, 1];
    let d = sd(LAB_SD_NUMA, LAB_CPU_IDLE);
    let (v, sds) = balance(&d, &cpus, &group, 1, &[MC, MC]);
    assert_eq!(sds.busiest.group_type, LAB_GROUP_FULLY_BUSY);
    assert_eq!(sds.local.group_type, LAB_GROUP_HAS_SPARE);
    assert_eq!((sds.busiest.cores, sds.local.idle_cpus), (2, 4));
    assert_eq!(v, Some((LAB_MIGRATE_TASK, 2)));
    // A busy CPU leaves a node that is not overloaded to an idle one.
    let (v, _) = balance(
        &sd(LAB_SD_NUMA, LAB_CPU_NOT_IDLE),
        &cpus,
        &group,
        1,
        &[MC, MC],
    );
    assert_eq!(v, None);
}

/// Two tasks on node 0 and none on node 1: a communicating pair may stay (adjust_numa_imbalance()
/// with imb_numa_nr 2); at the MC level of a node (no NUMA allowance) the same counts move one.
#[test]
fn numa_leaves_a_pair_alone() {
    let cpus = [
        first(busy(1024)),
        idle(),
        first(busy(1024)),
        idle(),
        first(idle()),
        idle(),
        first(idle()),
        idle(),
    ];
    let group = [0, 0, 0, 0, 1, 1, 1, 1];
    let (v, _) = balance(&sd(LAB_SD_NUMA, LAB_CPU_IDLE), &cpus, &group, 1, &[MC, MC]);
    assert_eq!(v, None);
    let (v, _) = balance(
        &sd(MC | LAB_SD_PREFER_SIBLING, LAB_CPU_IDLE),
        &cpus,
        &group,
        1,
        &[MC, MC],
    );
    assert_eq!(v, Some((LAB_MIGRATE_TASK, 1)));
    // Three on node 0: 3 > 2, so one of them moves even across nodes.
    let mut three = cpus;
    three[1] = busy(1024);
    let (v, _) = balance(&sd(LAB_SD_NUMA, LAB_CPU_IDLE), &three, &group, 1, &[MC, MC]);
    assert_eq!(v, Some((LAB_MIGRATE_TASK, 1)));
}

/// Two tasks on the SMT siblings of one core, the other core of the LLC idle: an idle CPU of the
/// idle core sees group_smt_balance and moves one task; a busy one does not.
#[test]
fn smt_core_gives_a_task_to_an_idle_core() {
    let cpus = [first(busy(1024)), busy(1024), first(idle()), idle()];
    let group = [0, 0, 1, 1];
    let (v, sds) = balance(&sd(MC, LAB_CPU_IDLE), &cpus, &group, 1, &[SMT, SMT]);
    assert_eq!(sds.busiest.group_type, LAB_GROUP_SMT_BALANCE);
    assert_eq!(v, Some((LAB_MIGRATE_TASK, 1)));
    let (v, sds) = balance(&sd(MC, LAB_CPU_NOT_IDLE), &cpus, &group, 1, &[SMT, SMT]);
    assert_eq!(sds.busiest.group_type, LAB_GROUP_FULLY_BUSY);
    assert_eq!(v, None);
    // One task per core: balanced.
    let spread = [first(busy(1024)), idle(), first(busy(1024)), idle()];
    let (v, _) = balance(&sd(MC, LAB_CPU_IDLE), &spread, &group, 1, &[SMT, SMT]);
    assert_eq!(v, None);
}

/// Overloaded groups balance by avg_load, only beyond imbalance_pct, and move what brings both
/// to the domain's average (calculate_imbalance()'s migrate_load).
#[test]
fn overloaded_groups_balance_load() {
    let two = overloaded;
    let group = [0, 1];
    let d = sd(MC, LAB_CPU_NOT_IDLE);
    // 3072 vs 2048: 3072 * 100 > 2048 * 117; average 2560: move 512.
    let (v, sds) = balance(&d, &[two(3072), two(2048)], &group, 1, &[0, 0]);
    assert_eq!(sds.busiest.group_type, LAB_GROUP_OVERLOADED);
    assert_eq!(v, Some((LAB_MIGRATE_LOAD, 512)));
    // 2300 vs 2048: within 17 %.
    let (v, _) = balance(&d, &[two(2300), two(2048)], &group, 1, &[0, 0]);
    assert_eq!(v, None);
}

/// An overloaded CPU beside one with spare room, across LLCs: fill the room (migrate_util);
/// inside an LLC the tasks are spread by count instead (the SD_SHARE_LLC exception).
#[test]
fn spare_room_pulls_utilisation_across_llcs() {
    let over = overloaded(2048);
    let half = lab_lb_cpu {
        util: 300,
        ..first(busy(300))
    };
    let group = [0, 1];
    let (v, _) = balance(
        &sd(LAB_SD_PREFER_SIBLING, LAB_CPU_IDLE),
        &[over, half],
        &group,
        1,
        &[0, 0],
    );
    assert_eq!(v, Some((LAB_MIGRATE_UTIL, 724)));
    // Inside an LLC, 2 against 1 is as even as it gets (moving one makes it 1 against 2); an
    // idle CPU takes one.
    let (v, _) = balance(&sd(MC, LAB_CPU_IDLE), &[over, half], &group, 1, &[0, 0]);
    assert_eq!(v, None);
    let (v, _) = balance(
        &sd(MC, LAB_CPU_IDLE),
        &[over, first(idle())],
        &group,
        1,
        &[0, 0],
    );
    assert_eq!(v, Some((LAB_MIGRATE_TASK, 1)));
}

/// sched_balance_find_src_rq(): by task count, by load (a lone task heavier than the imbalance
/// stays), by utilisation (never a lone task).
#[test]
fn busiest_cpu_of_the_group() {
    let q = |n: u32, load: u64, util: u64| lab_lb_cpu {
        load,
        util,
        capacity: 1024,
        nr_running: n,
        h_nr_runnable: n,
        ..Default::default()
    };
    let cpus = [
        q(1, 4000, 900),
        q(3, 1500, 800),
        q(2, 2500, 1000),
        q(0, 0, 0),
    ];
    let v = |t: u32, imb: i64| lab_lb_verdict {
        migration_type: t,
        imbalance: imb,
        ..Default::default()
    };
    // SAFETY: @cpus holds the four CPUs read.
    unsafe {
        assert_eq!(
            host_find_src_rq(&v(LAB_MIGRATE_TASK, 1), cpus.as_ptr(), 0, 4),
            1
        );
        assert_eq!(
            host_find_src_rq(&v(LAB_MIGRATE_LOAD, 1000), cpus.as_ptr(), 0, 4),
            2
        );
        assert_eq!(
            host_find_src_rq(&v(LAB_MIGRATE_LOAD, 5000), cpus.as_ptr(), 0, 4),
            0
        );
        assert_eq!(
            host_find_src_rq(&v(LAB_MIGRATE_UTIL, 100), cpus.as_ptr(), 0, 4),
            2
        );
        assert_eq!(
            host_find_src_rq(&v(LAB_MIGRATE_TASK, 1), cpus.as_ptr(), 3, 1),
            -1
        );
    }
}

/// detach_tasks()' fit rules, active balance after cache_nice_tries + 3 failures, the NUMA
/// allowance and get_sd_balance_interval() (HZ=250: 4 ms ticks).
#[test]
fn detach_rules_and_intervals() {
    // SAFETY: plain value functions.
    unsafe {
        assert!(!host_detach_fits(LAB_MIGRATE_LOAD, 2048, 0, 1000, false));
        assert!(host_detach_fits(LAB_MIGRATE_LOAD, 2048, 2, 1000, false));
        assert!(!host_detach_fits(LAB_MIGRATE_LOAD, 10, 0, 1000, true));
        assert!(host_detach_fits(LAB_MIGRATE_UTIL, 700, 0, 724, false));
        assert!(host_detach_fits(LAB_MIGRATE_TASK, 1 << 40, 0, 1, false));
        assert!(!host_need_active_balance(LAB_MIGRATE_TASK, 3, 1));
        assert!(host_need_active_balance(LAB_MIGRATE_TASK, 4, 1));
        assert!(!host_need_active_balance(LAB_MIGRATE_LOAD, 9, 1));
        assert_eq!(host_adjust_numa_imbalance(2, 1, 2), 0);
        assert_eq!(host_adjust_numa_imbalance(3, 1, 2), 3);
        assert_eq!(host_adjust_numa_imbalance(2, 3, 2), 2);
        // An SMT domain (2 ms): 28 ms busy, a tick idle; a NUMA domain of 8 CPUs busy: 124 ms,
        // and at most HZ * CPUs / 10 ticks (800 ms on 8 CPUs).
        assert_eq!(host_sd_balance_interval_ms(2, true, 4, 8), 28);
        assert_eq!(host_sd_balance_interval_ms(2, false, 4, 8), 4);
        assert_eq!(host_sd_balance_interval_ms(8, true, 4, 8), 124);
        assert_eq!(host_sd_balance_interval_ms(1024, false, 4, 8), 800);
    }
}
