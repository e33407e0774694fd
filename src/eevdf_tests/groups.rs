//! Group scheduling (src/bpf/group.h): cpu.weight to shares, calc_group_shares() under each
//! cgroup_mode, the walks that keep the groups' per-CPU queues and give a task its effective
//! weight (h_load), and how that weight reaches the EEVDF queue. The numbers are worked out by
//! hand from 7.3's formulas (see the comments), not from the code under test.

use super::*;
use std::sync::{Mutex, MutexGuard};

/// The host's group tables are global: the tests that use them take turns.
static GROUPS: Mutex<()> = Mutex::new(());

const S100: u64 = 1 << 20; // cpu.weight 100 at full resolution
const HR: u64 = 1 << 20; // NICE_0_LOAD at full resolution
const UP: u32 = lab_cgroup_mode_LAB_CGROUP_UP;
const SMP: u32 = lab_cgroup_mode_LAB_CGROUP_SMP;
const CONCUR: u32 = lab_cgroup_mode_LAB_CGROUP_CONCUR;
const MAX: u32 = lab_cgroup_mode_LAB_CGROUP_MAX;
const TASKS: u32 = lab_cgroup_mode_LAB_CGROUP_TASKS;

/// Fresh tables with the given groups: (index, parent, cpu.weight).
fn groups(list: &[(u32, u32, u32)]) -> MutexGuard<'static, ()> {
    let g = GROUPS.lock().unwrap_or_else(|e| e.into_inner());
    unsafe {
        host_groups_reset();
        for &(i, parent, w) in list {
            let tg = &mut *std::ptr::addr_of_mut!(lab_host_tg[i as usize]);
            tg.cgid = 100 + i as u64;
            tg.parent = parent;
            tg.weight = w;
            tg.shares = host_shares_from_cgroup(w);
        }
    }
    g
}

fn tg(i: u32) -> &'static mut lab_tg {
    unsafe { &mut *std::ptr::addr_of_mut!(lab_host_tg[i as usize]) }
}

fn gq(i: u32, cpu: u32) -> &'static mut lab_gq {
    unsafe { &mut *std::ptr::addr_of_mut!(lab_host_gq[i as usize][cpu as usize]) }
}

const ENQ: u32 = LAB_GROUP_ENQUEUE;
const DEQ: u32 = LAB_GROUP_DEQUEUE;
const FOLD: u32 = LAB_GROUP_FOLD;

fn walk(tg: u32, cpu: u32, w: u32, op: u32, mode: u32) -> u64 {
    unsafe { host_group_walk(tg, cpu, w, w, true, op as i32, mode, 0) }
}

#[test]
fn cpu_weight_becomes_shares_as_sched_group_set_shares_does() {
    unsafe {
        assert_eq!(host_shares_from_cgroup(100), S100);
        // round(300 * 1024 / 100) = 3072; round(1 * 1024 / 100) = 10; 10000 -> 102400.
        assert_eq!(host_shares_from_cgroup(300), 3072 << 10);
        assert_eq!(host_shares_from_cgroup(1), 10 << 10);
        assert_eq!(host_shares_from_cgroup(10000), 102_400 << 10);
        // 50 -> 512; 33 -> round(337.92) = 338.
        assert_eq!(host_shares_from_cgroup(50), 512 << 10);
        assert_eq!(host_shares_from_cgroup(33), 338 << 10);
    }
}

/// One group of cpu.weight 100 with a hog on each of two CPUs (4 online): on each CPU its queue
/// holds one nice-0 task (load 1024, settled), the group's load is 2048 and its runnable average
/// two tasks' worth.
#[test]
fn every_cgroup_mode_on_two_busy_cpus() {
    let _g = groups(&[(1, 0, 100)]);
    let t = tg(1);
    t.load_avg = 2048;
    t.runnable_avg = 2048;
    let q = gq(1, 0);
    q.load_weight = 1024 << 10;
    q.avg.load_avg = 1024;
    q.tg_load_avg_contrib = 1024;
    let shares = |mode, t: &lab_tg, q: &lab_gq| unsafe { host_calc_group_shares(mode, t, q) };
    assert_eq!(shares(UP, t, q), S100, "up: tg->shares");
    assert_eq!(shares(SMP, t, q), S100 / 2, "smp: 1024 of 2048");
    assert_eq!(
        shares(CONCUR, t, q),
        S100,
        "concur: min(2 tasks, 4 CPUs) x half"
    );
    assert_eq!(shares(MAX, t, q), 2 * S100, "max: 4 CPUs x half");
    assert_eq!(shares(TASKS, t, q), S100, "tasks: 2 tasks x half");
    // max is capped at a nice -20 task; concur is not.
    t.shares = unsafe { host_shares_from_cgroup(10000) };
    assert_eq!(shares(MAX, t, q), 88761 << 10);
    assert_eq!(shares(CONCUR, t, q), t.shares);
    // The floor: a tiny share is MIN_SHARES (2), not 0.
    t.shares = unsafe { host_shares_from_cgroup(1) };
    t.load_avg = 1 << 30;
    assert_eq!(shares(SMP, t, q), 2);
}

/// tg_cpus() is the group's cpuset when it has one (cpuset_num_cpus()), else the online CPUs:
/// the same group and load as above, confined to two CPUs, then to one.
#[test]
fn a_cpuset_bounds_max_and_concur() {
    let _g = groups(&[(1, 0, 100)]);
    let t = tg(1);
    t.load_avg = 2048;
    t.runnable_avg = 2048;
    let q = gq(1, 0);
    q.load_weight = 1024 << 10;
    q.avg.load_avg = 1024;
    q.tg_load_avg_contrib = 1024;
    let shares = |mode, t: &lab_tg, q: &lab_gq| unsafe { host_calc_group_shares(mode, t, q) };
    t.nr_cpus = 2;
    assert_eq!(shares(MAX, t, q), S100, "max: 2 cpuset CPUs x half");
    assert_eq!(
        shares(CONCUR, t, q),
        S100,
        "concur: min(2 tasks, 2 CPUs) x half"
    );
    t.nr_cpus = 1;
    assert_eq!(shares(MAX, t, q), S100 / 2, "max: 1 cpuset CPU x half");
    assert_eq!(
        shares(CONCUR, t, q),
        S100 / 2,
        "concur: min(2 tasks, 1 CPU) x half"
    );
    assert_eq!(shares(TASKS, t, q), S100, "tasks: no CPU bound");
    assert_eq!(shares(SMP, t, q), S100 / 2, "smp: no CPU bound");
}

/// A stale contribution of this CPU is replaced by its current load; an empty group elsewhere
/// leaves all of tg->shares here.
#[test]
fn smp_shares_use_this_cpus_current_load() {
    let _g = groups(&[(1, 0, 100)]);
    let t = tg(1);
    let q = gq(1, 1);
    q.load_weight = 2048 << 10; // two tasks queued now
    q.avg.load_avg = 1024; // the average has not caught up
    q.tg_load_avg_contrib = 512;
    t.load_avg = 512 + 2048; // another CPU contributes 2048
    // load = max(2048, 1024) = 2048; tg_weight = 2560 - 512 + 2048 = 4096.
    assert_eq!(
        unsafe { host_calc_group_shares(SMP, t, q) },
        S100 * 2048 / 4096
    );
}

#[test]
fn the_group_sums_are_pushed_at_most_once_a_millisecond_and_past_a_64th() {
    let _g = groups(&[(1, 0, 100)]);
    let (t, q) = (tg(1), gq(1, 0));
    q.avg.load_avg = 1024;
    q.avg.runnable_avg = 1024;
    unsafe {
        assert!(host_update_tg_load_avg(t, q, 2_000_000));
        assert_eq!((t.load_avg, t.runnable_avg), (1024, 1024));
        q.avg.load_avg = 2000;
        assert!(!host_update_tg_load_avg(t, q, 2_500_000), "within 1 ms");
        assert!(host_update_tg_load_avg(t, q, 3_000_000));
        assert_eq!(t.load_avg, 2000);
        q.avg.load_avg = 2000 + 2000 / 64; // exactly a 64th: not more
        assert!(!host_update_tg_load_avg(t, q, 5_000_000));
        q.avg.load_avg += 1;
        assert!(host_update_tg_load_avg(t, q, 5_000_000));
        assert_eq!(t.load_avg, 2032);
    }
}

/// Tasks joining and leaving one group on one CPU (concur, nothing on other CPUs): the group's
/// entity weighs one nice-0 task whatever the count, which its members split.
#[test]
fn members_split_their_groups_weight() {
    let _g = groups(&[(1, 0, 100)]);
    let h1 = walk(1, 0, 1024, ENQ, CONCUR);
    assert_eq!(h1, HR, "alone: the whole group");
    assert_eq!(gq(1, 0).load_weight, 1024 << 10);
    assert_eq!(gq(1, 0).h_nr_runnable, 1);
    let h2 = walk(1, 0, 1024, ENQ, CONCUR);
    assert_eq!(h2, HR / 2, "two: half each");
    assert_eq!(gq(1, 0).se_weight, S100);
    // A nice -5 member (3121) beside a nice-0 one: 3121 / 4145 of the group's weight.
    let h3 = walk(1, 0, 3121, ENQ, CONCUR);
    assert_eq!(h3, HR * (3121 << 10) / ((1024 + 1024 + 3121) << 10));
    // Leaving: the queue empties, the entity keeps its last weight.
    for w in [3121, 1024, 1024] {
        assert_eq!(walk(1, 0, w, DEQ, CONCUR), 0);
    }
    assert_eq!(gq(1, 0).load_weight, 0);
    assert_eq!(gq(1, 0).h_nr_runnable, 0);
    assert_eq!(gq(1, 0).se_weight, S100);
}

/// A cgroup of weight 300 under one of 100: a lone task gets the top group's share (one nice-0
/// task's worth), the nesting changes nothing while it is alone; a second child group of weight
/// 100 beside it takes a quarter of the parent.
#[test]
fn nested_groups_multiply_fractions() {
    let _g = groups(&[(1, 0, 100), (2, 1, 300), (3, 1, 100)]);
    let h = walk(2, 0, 1024, ENQ, CONCUR);
    assert_eq!(h, HR);
    assert_eq!(gq(2, 0).se_weight, 3072 << 10);
    assert_eq!(
        gq(1, 0).load_weight,
        3072 << 10,
        "the child group's entity in the parent"
    );
    let h3 = walk(3, 0, 1024, ENQ, CONCUR);
    // Parent queue: 3072 + 1024 (scaled); the new task's group is 1024 of it.
    assert_eq!(h3, HR * (1024 << 10) / (4096 << 10));
    // The first task's weight is refreshed at its next set_next_entity() / tick.
    let h = walk(2, 0, 1024, FOLD, CONCUR);
    assert_eq!(h, HR * (3072 << 10) / (4096 << 10));
}

/// The effective weight reaches the queue: a group task enqueued with two members has half a
/// nice-0 weight, keeping the lag it saved (in service units, as reweight_eevdf() rescales it);
/// V does not move when a queued entity is reweighted.
/// A new task of weight `w` in group `tg` (0: the root), enqueued on `q` as a fork is.
fn member(q: &mut Q, tg: u32, w: u32) -> u32 {
    let n = q.next_slot;
    q.next_slot += 1;
    *q.pool.se_mut(n) = lab_se {
        weight: w,
        load_w: w,
        h_load: (w as u64) << 10,
        inv_weight: table_inv_weight(w),
        tg,
        pid: n as i32,
        cpu: 0,
        is_new: 1,
        ..Default::default()
    };
    q.enqueue(n, LAB_PLACE_INITIAL as i32);
    n
}

/// h_nr_idle: a queue counts the tasks that join it SCHED_IDLE or below a cpu.idle group
/// (group 2 is a child of idle group 1), and forgets each as it leaves.
#[test]
fn idle_groups_count_in_h_nr_idle() {
    let _g = groups(&[(1, 0, 100), (2, 1, 100), (3, 0, 100)]);
    tg(1).h_idle = 1;
    tg(2).h_idle = 1;
    let mut q = Q::new(defaults());
    let a = member(&mut q, 2, NICE_0);
    assert_eq!(
        (q.cfs.nr_queued, q.cfs.nr_idle),
        (1, 1),
        "below an idle group"
    );
    let b = member(&mut q, 0, 3);
    assert_eq!(
        (q.cfs.nr_queued, q.cfs.nr_idle),
        (2, 2),
        "SCHED_IDLE in the root"
    );
    let c = member(&mut q, 3, NICE_0);
    assert_eq!(
        (q.cfs.nr_queued, q.cfs.nr_idle),
        (3, 2),
        "a normal group's task"
    );
    assert!(q.dequeue(a, 0));
    assert_eq!((q.cfs.nr_queued, q.cfs.nr_idle), (2, 1));
    assert!(q.dequeue(c, 0));
    assert!(q.dequeue(b, 0));
    assert_eq!((q.cfs.nr_queued, q.cfs.nr_idle), (0, 0));
}

#[test]
fn the_effective_weight_reaches_the_queue() {
    let _g = groups(&[(1, 0, 100)]);
    let mut q = Q::new(defaults());
    let a = q.spawn(NICE_0);
    // Two members of group 1, then enqueued.
    let g1 = member(&mut q, 1, NICE_0);
    let g2 = member(&mut q, 1, NICE_0);
    // g1 joined alone (the whole group: 1024); g2 joined second (half: 512). g1's weight is
    // refreshed only when it runs or at a tick, as in 7.3.
    assert_eq!(q.pool.se(g1).weight, 1024);
    assert_eq!(q.pool.se(g2).weight, 512);
    assert_eq!(q.pool.se(g2).h_load, HR / 2);
    assert_eq!(
        q.pool.se(a).weight,
        1024,
        "a root-group task keeps its own weight"
    );
    // The root queue's load counts the tasks at their own weights.
    assert_eq!(q.cfs.load_weight, 3 * 1024);
    // A reweight of a queued entity leaves V where it was.
    let v0 = q.v();
    unsafe {
        host_reweight_eevdf(
            &mut q.cfs,
            q.pool.ptr(),
            g1,
            HR / 2,
            0,
            &q.p,
            q.st.as_mut_ptr(),
        )
    };
    q.check();
    assert_eq!(q.pool.se(g1).weight, 512);
    let v1 = q.v();
    assert!(v0.abs_diff(v1) <= 1, "V moved: {v0} -> {v1}");
    // Leaving: the group's queue empties again.
    assert!(q.dequeue(g1, 0));
    assert!(q.dequeue(g2, 0));
    assert_eq!(gq(1, 0).load_weight, 0);
}

/// A ghost (a delayed member) keeps its weight in the group's queue but is not runnable there;
/// its final dequeue takes the weight out.
#[test]
fn a_ghost_stays_in_its_groups_weight_but_not_in_its_runnable_count() {
    let _g = groups(&[(1, 0, 100)]);
    assert_eq!(walk(1, 0, 1024, ENQ, CONCUR), HR);
    unsafe { host_group_runnable_delta(1, 0, -1) };
    assert_eq!(gq(1, 0).h_nr_runnable, 0);
    assert_eq!(gq(1, 0).load_weight, 1024 << 10);
    unsafe { host_group_walk(1, 0, 1024, 1024, false, DEQ as i32, CONCUR, 0) };
    assert_eq!(gq(1, 0).load_weight, 0);
    assert_eq!(gq(1, 0).h_nr_runnable, 0);
}

// --- cpu.max (src/bpf/bandwidth.h) ------------------------------------------------------------

const MS: i64 = 1_000_000;

/// Group `i` with a cpu.max of `quota` ns per 100 ms and `burst`, its pool full.
fn cap(i: u32, quota: i64, burst: i64) {
    let t = tg(i);
    t.bw_quota = quota as u64;
    t.bw_period = 100 * MS as u64;
    t.bw_burst = burst as u64;
    t.bw_runtime = quota;
}

fn stats() -> Vec<u64> {
    vec![0u64; lab_stat_LAB_NR_STATS as usize]
}

#[test]
fn cpu_max_queues_draw_slices_from_the_pool_and_throttle_when_it_is_dry() {
    let _g = groups(&[(1, 0, 100)]);
    cap(1, 20 * MS, 0);
    let mut st = stats();
    let account = |ns: i64, st: &mut Vec<u64>| unsafe {
        host_bw_account_walk(1, 0, ns as u64, st.as_mut_ptr())
    };
    // 1 ms run: -1 ms, then one slice (5 ms) plus the debt is taken: 6 ms.
    assert!(!account(MS, &mut st));
    assert_eq!(
        (gq(1, 0).runtime_remaining, tg(1).bw_runtime),
        (5 * MS, 14 * MS)
    );
    // Each 5 ms run takes another slice while the pool has one; the last takes the 4 ms left.
    assert!(!account(5 * MS, &mut st));
    assert!(!account(5 * MS, &mut st));
    assert_eq!(
        (gq(1, 0).runtime_remaining, tg(1).bw_runtime),
        (5 * MS, 4 * MS)
    );
    assert!(!account(5 * MS, &mut st));
    assert_eq!((gq(1, 0).runtime_remaining, tg(1).bw_runtime), (4 * MS, 0));
    // 5 ms more: 1 ms in debt with the pool dry -- throttled, counted once.
    assert!(account(5 * MS, &mut st));
    assert!(account(MS / 2, &mut st));
    assert_eq!(gq(1, 0).throttled, 1);
    assert_eq!(gq(1, 0).runtime_remaining, -(3 * MS / 2));
    assert_eq!((tg(1).bw_nr_throttled, tg(1).bw_throttled_now), (1, 1));
    assert_eq!(st[lab_stat_LAB_ST_BW_THROTTLE as usize], 1);
    unsafe {
        assert!(host_throttled_hierarchy(1, 0));
        assert!(!host_throttled_hierarchy(1, 1), "throttling is per CPU");
        // Nothing in the pool: asking changes nothing.
        assert!(host_bw_throttled_walk(1, 0, st.as_mut_ptr()));
        // The period turns over: 20 ms; the queue gets its debt plus 1 ns and is unthrottled.
        host_refill_cfs_bandwidth_runtime(tg(1));
        assert_eq!(tg(1).bw_runtime, 20 * MS);
        assert!(!host_bw_throttled_walk(1, 0, st.as_mut_ptr()));
    }
    assert_eq!(gq(1, 0).runtime_remaining, 1);
    assert_eq!(tg(1).bw_runtime, 20 * MS - 3 * MS / 2 - 1);
    assert_eq!((gq(1, 0).throttled, tg(1).bw_throttled_now), (0, 0));
    assert_eq!(st[lab_stat_LAB_ST_BW_UNTHROTTLE as usize], 1);
}

#[test]
fn cpu_max_of_a_parent_throttles_its_children() {
    let _g = groups(&[(1, 0, 100), (2, 1, 100)]);
    cap(1, 5 * MS, 0);
    let mut st = stats();
    unsafe {
        // A task of the child runs 6 ms: the parent's queue pays, and is throttled.
        assert!(host_bw_account_walk(2, 0, (6 * MS) as u64, st.as_mut_ptr()));
        assert_eq!(gq(1, 0).throttled, 1);
        assert_eq!(
            gq(2, 0).runtime_remaining,
            0,
            "the child has no quota of its own"
        );
        assert!(host_throttled_hierarchy(2, 0));
        assert!(host_bw_throttled_walk(2, 0, st.as_mut_ptr()));
    }
}

#[test]
fn cpu_max_pool_holds_at_most_quota_plus_burst() {
    let _g = groups(&[(1, 0, 100)]);
    cap(1, 20 * MS, 5 * MS);
    unsafe {
        host_refill_cfs_bandwidth_runtime(tg(1));
        assert_eq!(tg(1).bw_runtime, 25 * MS);
        tg(1).bw_runtime = 3 * MS;
        host_refill_cfs_bandwidth_runtime(tg(1));
        assert_eq!(tg(1).bw_runtime, 23 * MS);
    }
}

#[test]
fn cpu_max_empty_queue_returns_what_it_holds_above_1ms() {
    let _g = groups(&[(1, 0, 100)]);
    cap(1, 20 * MS, 0);
    tg(1).bw_runtime = 10 * MS;
    gq(1, 0).runtime_remaining = 5 * MS;
    // Still queued there: it keeps its runtime.
    gq(1, 0).load_weight = 1 << 20;
    unsafe { host_bw_return_walk(1, 0) };
    assert_eq!(
        (gq(1, 0).runtime_remaining, tg(1).bw_runtime),
        (5 * MS, 10 * MS)
    );
    gq(1, 0).load_weight = 0;
    unsafe { host_bw_return_walk(1, 0) };
    assert_eq!(
        (gq(1, 0).runtime_remaining, tg(1).bw_runtime),
        (MS, 14 * MS)
    );
}

#[test]
fn cpu_max_write_starts_every_queue_afresh() {
    let _g = groups(&[(1, 0, 100)]);
    cap(1, 5 * MS, 0);
    let mut st = stats();
    unsafe {
        assert!(host_bw_account_walk(
            1,
            0,
            (20 * MS) as u64,
            st.as_mut_ptr()
        ));
        tg(1).bw_gen += 1;
        tg(1).bw_runtime = 5 * MS;
        assert!(!host_bw_throttled_walk(1, 0, st.as_mut_ptr()));
    }
    assert_eq!((gq(1, 0).throttled, gq(1, 0).runtime_remaining), (0, 0));
}
