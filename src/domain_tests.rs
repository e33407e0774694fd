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
        capacity_orig: 1024,
        nr_running: 1,
        h_nr_runnable: 1,
        ..Default::default()
    }
}

fn idle() -> lab_lb_cpu {
    lab_lb_cpu {
        capacity: 1024,
        capacity_orig: 1024,
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
        capacity_orig: 1024,
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
/// stays, unless its CPU's capacity is reduced; load is weighed against capacity), by
/// utilisation (never a lone task).
#[test]
fn busiest_cpu_of_the_group() {
    let q = |n: u32, load: u64, util: u64| lab_lb_cpu {
        load,
        util,
        capacity: 1024,
        capacity_orig: 1024,
        nr_running: n,
        h_nr_runnable: n,
        ..Default::default()
    };
    let mc = sd(MC, LAB_CPU_IDLE);
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
            host_find_src_rq(&mc, &v(LAB_MIGRATE_TASK, 1), cpus.as_ptr(), 0, 4),
            1
        );
        assert_eq!(
            host_find_src_rq(&mc, &v(LAB_MIGRATE_LOAD, 1000), cpus.as_ptr(), 0, 4),
            2
        );
        assert_eq!(
            host_find_src_rq(&mc, &v(LAB_MIGRATE_LOAD, 5000), cpus.as_ptr(), 0, 4),
            0
        );
        assert_eq!(
            host_find_src_rq(&mc, &v(LAB_MIGRATE_UTIL, 100), cpus.as_ptr(), 0, 4),
            2
        );
        assert_eq!(
            host_find_src_rq(&mc, &v(LAB_MIGRATE_TASK, 1), cpus.as_ptr(), 3, 1),
            -1
        );
    }
    // RT pressure leaves CPU 0 half its capacity (512 * 117 < 1024 * 100): its lone task no
    // longer stays, and 4000 / 512 outweighs CPU 2's 2500 / 1024.
    let mut rt = cpus;
    rt[0].capacity = 512;
    // SAFETY: @rt holds the four CPUs read.
    unsafe {
        assert_eq!(
            host_find_src_rq(&mc, &v(LAB_MIGRATE_LOAD, 1000), rt.as_ptr(), 0, 4),
            0
        );
    }
    // 900 of 1024 is within the domain's 117 %: the lone task stays.
    rt[0].capacity = 900;
    // SAFETY: as above.
    unsafe {
        assert_eq!(
            host_find_src_rq(&mc, &v(LAB_MIGRATE_LOAD, 1000), rt.as_ptr(), 0, 4),
            2
        );
    }
}

/// update_cpu_capacity()'s scale_rt_capacity(): RT and deadline time come off the top, IRQ time
/// scales what is left, and a CPU they fill keeps a capacity of 1; the hardware or cpufreq
/// pressure comes off first; check_cpu_capacity() against the domain's imbalance_pct.
#[test]
fn capacity_less_other_classes_and_irqs() {
    // SAFETY: plain values.
    unsafe {
        assert_eq!(host_scale_rt_capacity(1024, 0, 0, 0), 1024);
        assert_eq!(host_scale_rt_capacity(1024, 0, 300, 100), 624);
        // (1024 - 400) * (1024 - 256) / 1024 = 468
        assert_eq!(host_scale_rt_capacity(1024, 256, 300, 100), 468);
        assert_eq!(host_scale_rt_capacity(1024, 0, 1000, 24), 1);
        assert_eq!(host_scale_rt_capacity(1024, 1024, 0, 0), 1);
        // A little CPU of a hybrid machine (446): 446 - 100 = 346.
        assert_eq!(host_scale_rt_capacity(446, 0, 100, 0), 346);
        // (1024 - 1023) * 1 / 1024 rounds to 0: still 1.
        assert_eq!(host_scale_rt_capacity(1024, 1023, 1023, 0), 1);
        // get_actual_cpu_capacity(): the larger of the two pressures comes off.
        assert_eq!(host_actual_cpu_capacity(1024, 0, 0), 1024);
        assert_eq!(host_actual_cpu_capacity(1024, 100, 300), 724);
        assert_eq!(host_actual_cpu_capacity(1024, 300, 100), 724);
        assert_eq!(host_actual_cpu_capacity(1024, 2000, 0), 0);
        assert_eq!(
            host_scale_rt_capacity(host_actual_cpu_capacity(1024, 0, 0), 0, 0, 0),
            1024
        );
        assert_eq!(
            host_scale_rt_capacity(host_actual_cpu_capacity(1024, 2000, 0), 0, 0, 0),
            1
        );
        assert!(!host_check_cpu_capacity(1024, 1024, 117));
        assert!(!host_check_cpu_capacity(876, 1024, 117)); // 102492 >= 102400
        assert!(host_check_cpu_capacity(875, 1024, 117));
        assert!(host_check_cpu_capacity(930, 1024, 110));
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
        let full = first(busy(1024));
        let busy_mc = sd(MC, LAB_CPU_NOT_IDLE);
        let idle_mc = sd(MC, LAB_CPU_IDLE);
        // A lone task on a CPU that RT pressure took down to 400: an idle puller of full
        // capacity moves it at once; a busy one, or a puller hardly bigger, does not.
        let squeezed = lab_lb_cpu {
            capacity: 400,
            ..full
        };
        let (by, il, sq) = (&busy_mc, &idle_mc, &squeezed);
        let (task, load) = (LAB_MIGRATE_TASK, LAB_MIGRATE_LOAD);
        let (none, imbalanced, capacity) =
            (LAB_ACTIVE_NONE, LAB_ACTIVE_IMBALANCED, LAB_ACTIVE_CAPACITY);
        // (domain: by busy or il idle puller, migration type, failed balances, source, puller's
        // capacity, verdict)
        let cases = [
            (by, task, 3, &full, 1024, none),
            (by, task, 4, &full, 1024, imbalanced),
            (by, load, 9, &full, 1024, none),
            (il, load, 0, sq, 1024, capacity),
            (by, load, 0, sq, 1024, none),
            (il, load, 0, sq, 450, none),
            (il, load, 0, &full, 1024, none),
        ];
        for (i, (d, t, failed, src, dst, want)) in cases.into_iter().enumerate() {
            assert_eq!(
                host_need_active_balance(d, t, failed, 1, src, dst),
                want,
                "case {i}"
            );
        }
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

/// sched_balance_find_dst_group() at one domain: whether the task goes to the idlest group, and
/// that group's first CPU.
fn dst_group(d: &lab_sd, cpus: &[lab_lb_cpu], group: &[u32], allowed: &[u8]) -> Option<i32> {
    let mut g = lab_dst_group::default();
    // SAFETY: the arrays outlive the call and hold @cpus.len() entries each.
    let go = unsafe {
        host_find_dst_group(
            d,
            cpus.as_ptr(),
            group.as_ptr(),
            allowed.as_ptr(),
            cpus.len() as u32,
            0,
            &mut g,
        )
    };
    go.then_some(g.idlest.first)
}

/// A fork on a busy CPU of node 0, everything else idle (the smp shape): at the NUMA domain the
/// child stays on its node, since one idle CPU more on node 1 is within the allowance for a node
/// running one task; at the node's MC domain it goes to the idle core rather than the busy CPU's
/// sibling. With three tasks on node 0 the allowance is spent and the child crosses.
#[test]
fn fork_goes_to_an_idle_core_of_its_node() {
    let all = [1u8; 8];
    let one = [
        busy(1024),
        idle(),
        idle(),
        idle(),
        idle(),
        idle(),
        idle(),
        idle(),
    ];
    let nodes = [0, 0, 0, 0, 1, 1, 1, 1];
    let numa = sd(LAB_SD_NUMA, LAB_CPU_NOT_IDLE);
    assert_eq!(dst_group(&numa, &one, &nodes, &all), None);
    let mc = sd(MC, LAB_CPU_NOT_IDLE);
    assert_eq!(dst_group(&mc, &one[..4], &[0, 0, 1, 1], &all[..4]), Some(2));
    let mut three = one;
    three[1] = busy(1024);
    three[2] = busy(1024);
    assert_eq!(dst_group(&numa, &three, &nodes, &all), Some(4));
    // A task that may not use node 1 stays, whatever the load.
    let node0 = [1, 1, 1, 1, 0, 0, 0, 0];
    assert_eq!(dst_group(&numa, &three, &nodes, &node0), None);
    // Nor may it leave for a node whose CPUs it may not use: node 0 is not a candidate, and
    // the local group (node 1 here holds no allowed CPU) is skipped: the idlest wins.
    let node1 = [0, 0, 0, 0, 1, 1, 1, 1];
    assert_eq!(dst_group(&numa, &three, &nodes, &node1), Some(4));
}

/// Among groups with spare room: the most idle CPUs, then the lowest utilisation; the local
/// group keeps the task when it has as many idle CPUs as the idlest.
#[test]
fn idlest_group_by_idle_cpus_then_utilisation() {
    let all = [1u8; 6];
    let mc = sd(MC, LAB_CPU_NOT_IDLE);
    let group = [0, 0, 1, 1, 2, 2];
    // Local: one busy, one idle. Group 1: one at 300, one idle; group 2: one at 200, one idle.
    let cpus = [busy(1024), idle(), busy(300), idle(), busy(200), idle()];
    assert_eq!(dst_group(&mc, &cpus, &group, &all), None);
    // The local group full: group 2 (lower utilisation) wins over group 1.
    let mut full = cpus;
    full[1] = busy(1024);
    assert_eq!(dst_group(&mc, &full, &group, &all), Some(4));
    // Group 1 with both CPUs idle beats group 2.
    full[2] = idle();
    assert_eq!(dst_group(&mc, &full, &group, &all), Some(2));
}

/// Busy groups compare avg_load, and the local one keeps the task unless the other is lighter
/// by more than imbalance_pct and by the load of a nice-0 task's share (across nodes, the remote
/// group carries that share).
#[test]
fn busy_groups_compare_load() {
    let all = [1u8; 4];
    let group = [0, 0, 1, 1];
    let mc = sd(MC, LAB_CPU_NOT_IDLE);
    let two = overloaded;
    // 2048 per CPU against 1024: go.
    assert_eq!(
        dst_group(
            &mc,
            &[two(2048), two(2048), two(1024), two(1024)],
            &group,
            &all
        ),
        Some(2)
    );
    // 1100 against 1024: within 17 %: stay.
    assert_eq!(
        dst_group(
            &mc,
            &[two(1100), two(1100), two(1024), two(1024)],
            &group,
            &all
        ),
        None
    );
    // Across nodes the remote load plus 174 must stay below the local load.
    let numa = sd(LAB_SD_NUMA, LAB_CPU_NOT_IDLE);
    assert_eq!(
        dst_group(
            &numa,
            &[two(1300), two(1300), two(1024), two(1024)],
            &group,
            &all
        ),
        Some(2)
    );
    assert_eq!(
        dst_group(
            &numa,
            &[two(1190), two(1190), two(1024), two(1024)],
            &group,
            &all
        ),
        None
    );
    // A local group with room keeps the task against any busy one.
    assert_eq!(
        dst_group(
            &mc,
            &[busy(1024), idle(), two(1024), two(1024)],
            &group,
            &all
        ),
        None
    );
}

/// sched_balance_find_dst_group_cpu(): a CPU running only idle entities at once, else the idle
/// CPU that went idle last, else the least loaded one; a group of one CPU is that CPU; the
/// forking CPU when no allowed CPU qualifies.
#[test]
fn dst_cpu_in_the_group() {
    let cpus = [busy(1024), idle(), idle(), busy(1024)];
    let mut loads = cpus;
    loads[3].load = 512;
    let all = [1u8; 4];
    let none = [0u8; 4];
    let pick = |c: &[lab_lb_cpu], allowed: &[u8], si: &[u8], stamps: &[u64], n: u32| {
        // SAFETY: the arrays hold four entries each.
        unsafe {
            host_find_dst_group_cpu(
                c.as_ptr(),
                allowed.as_ptr(),
                si.as_ptr(),
                stamps.as_ptr(),
                0,
                n,
                7,
            )
        }
    };
    assert_eq!(pick(&cpus, &all, &none, &[0, 10, 20, 0], 4), 2);
    assert_eq!(pick(&cpus, &all, &none, &[0, 30, 20, 0], 4), 1);
    assert_eq!(pick(&cpus, &all, &[0, 0, 0, 1], &[0, 30, 20, 0], 4), 3);
    let busy_only = [busy(1024), busy(1024), busy(1024), busy(1024)];
    let mut b = busy_only;
    b[2].load = 100;
    assert_eq!(pick(&b, &all, &none, &[0; 4], 4), 2);
    assert_eq!(pick(&loads, &[1, 0, 0, 1], &none, &[0; 4], 4), 3);
    assert_eq!(pick(&cpus, &none, &none, &[0; 4], 4), 7);
    assert_eq!(pick(&cpus, &none, &none, &[0; 4], 1), 0);
}
