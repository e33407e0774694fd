//! The load signals (pelt.h): the kernel's PELT arithmetic, checked against the definition of
//! the signal (a geometric series over 1024 us periods, computed in floating point unit by unit)
//! and against values the kernel's integer arithmetic gives by hand.

use super::*;

const UNIT: u64 = 1024; // ns: PELT's time unit
const PERIOD: u64 = 1024 * UNIT; // 1024 units

fn y() -> f64 {
    0.5f64.powf(1.0 / 32.0)
}

#[test]
fn the_decay_table_is_the_kernels() {
    // sched-pelt.h is generated as floor((2^32 - 1) * y^n); two of its entries as printed there.
    for n in 0..32 {
        let want = (((1u64 << 32) - 1) as f64 * y().powi(n as i32)) as u32;
        assert_eq!(unsafe { host_pelt_yN_inv(n) }, want, "y^{n}");
    }
    assert_eq!(unsafe { host_pelt_yN_inv(1) }, 0xfa83b2da);
    assert_eq!(unsafe { host_pelt_yN_inv(31) }, 0x82cd8698);
}

#[test]
fn decay_load_is_the_kernels_integer_arithmetic() {
    unsafe {
        // The table's y^0 is just below one: the kernel's decay_load() loses a unit there.
        assert_eq!(host_decay_load(1024, 0), 1023);
        assert_eq!(host_decay_load(47742, 32), 23870); // (47742 >> 1) * y^0
        assert_eq!(host_decay_load(47742, 1), 46718);
        // Past 63 half-lives everything is gone; at 63 a large value still leaves a trace.
        assert_eq!(host_decay_load(u64::MAX, 32 * 63 + 1), 0);
        assert_eq!(host_decay_load(u64::MAX, 32 * 63), 0);
        assert_eq!(host_decay_load(u64::MAX, 32 * 62), 2); // (2^64 - 1) >> 62, times y^0
        // Against a 128-bit product, for values wider than 32 bits.
        let mut x = 0x9e3779b97f4a7c15u64;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = x % 400;
            let v = x >> (x % 40);
            let want = (((v >> (n / 32)) as u128 * host_pelt_yN_inv((n % 32) as u32) as u128) >> 32)
                as u64;
            assert_eq!(host_decay_load(v, n), want, "decay_load({v}, {n})");
        }
    }
}

/// The signal by its definition: each 1024 ns unit adds `value` to the sum, which is multiplied
/// by y at every period boundary; the average is the sum over the largest sum possible at the
/// same position in the period (LOAD_AVG_MAX * y + the units of the current period).
struct Definition {
    sum: f64,
    units: u64, // units since the clock started (periods are aligned to that start)
}

impl Definition {
    fn run(&mut self, units: u64, value: f64) {
        for _ in 0..units {
            self.units += 1;
            self.sum += value;
            if self.units.is_multiple_of(1024) {
                self.sum *= y();
            }
        }
    }
    fn avg(&self) -> f64 {
        let max = 1024.0 / (1.0 - y());
        self.sum / (max * y() + (self.units % 1024) as f64)
    }
}

/// A queue (`cfs`) with one entity (slot 1) of weight 1024, running or asleep by `pattern`: the
/// lab's update points (enqueue, set_next, tick, dequeue) at irregular instants.
#[test]
fn a_run_sleep_pattern_gives_the_definitions_averages() {
    let mut pool = Pool::new();
    let mut cfs = lab_cfs::default();
    let mut st = vec![0u64; lab_stat_LAB_NR_STATS as usize];
    let p = params_all();
    *pool.se_mut(1) = lab_se {
        weight: 1024,
        inv_weight: table_inv_weight(1024),
        pid: 1,
        cpu: 0,
        ..Default::default()
    };
    let t0 = 1u64 << 40; // a multiple of the period: the definition's periods line up
    // Attached from the start with no history, as the definition starts.
    pool.se_mut(1).avg.last_update_time = t0;
    cfs.clock_pelt = t0;
    cfs.avg.last_update_time = t0;
    let mut def = Definition { sum: 0.0, units: 0 };
    let mut t = t0;
    let mut rng = 12345u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    // 30 % running in bursts of 1-5 ms, the rest asleep; ticks every ~1 ms while running.
    for _ in 0..300 {
        let run = (1 + next() % 5) * 1_000_000 + next() % 1000;
        let sleep = run * 7 / 3;
        cfs.clock_pelt = t;
        unsafe {
            host_enqueue_entity(&mut cfs, pool.ptr(), 1, 0, &p, st.as_mut_ptr());
            host_set_next_entity(&mut cfs, pool.ptr(), 1, true, &p);
        }
        let end = t + run;
        while t < end {
            let step = (700_000 + next() % 600_000).min(end - t);
            def.run(((t + step - t0) >> 10) - ((t - t0) >> 10), 1.0);
            t += step;
            cfs.clock_pelt = t;
            unsafe { host_entity_tick_load(&mut cfs, pool.ptr(), st.as_mut_ptr()) };
        }
        unsafe {
            host_dequeue_entity(
                &mut cfs,
                pool.ptr(),
                1,
                LAB_DEQ_SLEEP as i32,
                &p,
                st.as_mut_ptr(),
            )
        };
        def.run(((t + sleep - t0) >> 10) - ((t - t0) >> 10), 0.0);
        t += sleep;
        let se = pool.se(1).avg;
        assert!(se.util_avg <= 1024 && se.load_avg <= 1024 && se.runnable_avg <= 1024);
    }
    // Bring both to the same instant and compare the averages.
    cfs.clock_pelt = t;
    unsafe {
        host_enqueue_entity(&mut cfs, pool.ptr(), 1, 0, &p, st.as_mut_ptr());
    }
    let se = pool.se(1).avg;
    let want = def.avg() * 1024.0;
    for (name, got) in [
        ("util", se.util_avg),
        ("load", se.load_avg),
        ("runnable", se.runnable_avg),
    ] {
        assert!(
            (got as f64 - want).abs() <= 0.01 * 1024.0,
            "{name}_avg {got} vs the definition's {want:.1}"
        );
    }
    // The queue's own signal saw the same history (one entity, weight 1024).
    for (name, got) in [
        ("util", cfs.avg.util_avg),
        ("load", cfs.avg.load_avg),
        ("runnable", cfs.avg.runnable_avg),
    ] {
        assert!(
            (got as f64 - want).abs() <= 0.01 * 1024.0,
            "queue {name}_avg {got} vs {want:.1}"
        );
    }
    // Roughly the duty cycle, too.
    assert!((250..=360).contains(&se.util_avg), "{}", se.util_avg);
    assert_eq!(
        st[lab_stat_LAB_ST_PELT_ATTACH as usize], 0,
        "attached from the start"
    );
}

/// Every knob at its default (PLACE_LAG etc.), as the runqueue tests use.
fn params_all() -> lab_params {
    lab_params {
        features: u64::MAX,
        base_slice: 3_000_000,
        normalized_slice: 3_000_000,
        migration_cost: 500_000,
        tick_ns: 4_000_000,
        ..Default::default()
    }
}

#[test]
fn an_always_running_entity_saturates_and_a_sleeper_halves_every_32ms() {
    let mut sa = lab_sched_avg {
        last_update_time: PERIOD,
        ..Default::default()
    };
    unsafe {
        host_update_load_sum(PERIOD + 2000 * PERIOD, &mut sa, 1, 1, 1);
        host_update_load_avg_sa(&mut sa, 1024);
    }
    assert!(
        sa.util_avg >= 1002 && sa.util_avg <= 1024,
        "{}",
        sa.util_avg
    );
    assert!(
        sa.load_avg >= 1002 && sa.load_avg <= 1024,
        "{}",
        sa.load_avg
    );
    let full = sa.util_avg;
    // 32 periods asleep: half of it.
    let t = sa.last_update_time;
    unsafe {
        host_update_load_sum(t + 32 * PERIOD, &mut sa, 0, 0, 0);
        host_update_load_avg_sa(&mut sa, 1024);
    }
    assert!(
        (sa.util_avg as i64 - full as i64 / 2).abs() <= 2,
        "{}",
        sa.util_avg
    );
    // Less than a unit changes nothing; an earlier clock changes nothing.
    let before = sa;
    unsafe {
        assert!(!host_update_load_sum(
            before.last_update_time + UNIT - 1,
            &mut sa,
            1,
            1,
            1
        ));
        assert!(!host_update_load_sum(
            before.last_update_time - 5 * PERIOD,
            &mut sa,
            1,
            1,
            1
        ));
    }
    assert_eq!(sa.last_update_time, before.last_update_time);
    assert_eq!(sa.util_sum, before.util_sum);
}

#[test]
fn updates_in_small_steps_agree_with_one_big_step() {
    let start = lab_sched_avg {
        last_update_time: 1 << 30,
        util_sum: 20_000 * 1024,
        runnable_sum: 20_000 * 1024,
        load_sum: 20_000,
        ..Default::default()
    };
    let (mut a, mut b) = (start, start);
    let end = (1u64 << 30) + 50 * PERIOD + 12_345;
    let mut t = 1u64 << 30;
    while t < end {
        t = (t + 333_333).min(end);
        unsafe { host_update_load_sum(t, &mut a, 1, 1, 1) };
    }
    unsafe {
        host_update_load_sum(end, &mut b, 1, 1, 1);
        host_update_load_avg_sa(&mut a, 1024);
        host_update_load_avg_sa(&mut b, 1024);
    }
    assert_eq!(a.last_update_time, b.last_update_time);
    assert_eq!(a.period_contrib, b.period_contrib);
    assert!(
        (a.util_avg as i64 - b.util_avg as i64).abs() <= 2,
        "{} {}",
        a.util_avg,
        b.util_avg
    );
    assert!((a.load_avg as i64 - b.load_avg as i64).abs() <= 2);
}

#[test]
fn attach_and_detach_move_an_entitys_history_between_queues() {
    let mut pool = Pool::new();
    let mut st = vec![0u64; lab_stat_LAB_NR_STATS as usize];
    let mut a = lab_cfs::default();
    let t = 1u64 << 40;
    a.clock_pelt = t;
    a.avg.last_update_time = t;
    a.avg.period_contrib = 300;
    *pool.se_mut(1) = lab_se {
        weight: 2048,
        ..Default::default()
    };
    {
        let se = pool.se_mut(1);
        se.avg.load_avg = 1500;
        se.avg.util_avg = 700;
        se.avg.runnable_avg = 800;
    }
    unsafe {
        assert!(host_update_load_avg(
            &mut a,
            pool.ptr(),
            1,
            LAB_DO_ATTACH as i32,
            st.as_mut_ptr()
        ));
    }
    let se = pool.se(1).avg;
    let divider = 47742 - 1024 + 300;
    // attach_entity_load_avg(): sums rebuilt from the averages at the queue's position.
    assert_eq!(se.last_update_time, t);
    assert_eq!(se.period_contrib, 300);
    assert_eq!(se.util_sum as u64, 700 * divider);
    assert_eq!(se.runnable_sum, 800 * divider);
    assert_eq!(se.load_sum, 1500 * divider / 2048);
    assert_eq!(
        (a.avg.load_avg, a.avg.util_avg, a.avg.runnable_avg),
        (1500, 700, 800)
    );
    assert_eq!(a.avg.load_sum, 2048 * (1500 * divider / 2048));
    assert_eq!(st[lab_stat_LAB_ST_PELT_ATTACH as usize], 1);
    // Attached: a second DO_ATTACH does nothing more.
    unsafe { host_update_load_avg(&mut a, pool.ptr(), 1, LAB_DO_ATTACH as i32, st.as_mut_ptr()) };
    assert_eq!(a.avg.util_avg, 700);
    // A detach at the same instant takes it all back off, and leaves it attached nowhere.
    unsafe { host_update_load_avg(&mut a, pool.ptr(), 1, LAB_DO_DETACH as i32, st.as_mut_ptr()) };
    assert_eq!(
        (a.avg.load_avg, a.avg.util_avg, a.avg.runnable_avg),
        (0, 0, 0)
    );
    assert_eq!(
        (a.avg.load_sum, a.avg.util_sum, a.avg.runnable_sum),
        (0, 0, 0)
    );
    assert_eq!(pool.se(1).avg.last_update_time, 0);
    assert_eq!(st[lab_stat_LAB_ST_PELT_DETACH as usize], 1);
}

#[test]
fn a_removed_entity_leaves_its_old_queue_at_that_queues_next_update() {
    let mut pool = Pool::new();
    let mut st = vec![0u64; lab_stat_LAB_NR_STATS as usize];
    let mut a = lab_cfs::default();
    let t = 1u64 << 40;
    a.clock_pelt = t;
    a.avg.last_update_time = t;
    *pool.se_mut(1) = lab_se {
        weight: 1024,
        ..Default::default()
    };
    pool.se_mut(1).avg.util_avg = 400;
    pool.se_mut(1).avg.load_avg = 600;
    pool.se_mut(1).avg.runnable_avg = 450;
    unsafe { host_update_load_avg(&mut a, pool.ptr(), 1, LAB_DO_ATTACH as i32, st.as_mut_ptr()) };
    // It wakes elsewhere: its averages go to the removed sums (the queue's lock not held).
    unsafe { host_remove_entity_load_avg(&mut a, pool.se_mut(1), st.as_mut_ptr()) };
    assert_eq!(pool.se(1).avg.last_update_time, 0);
    assert_eq!(
        (a.removed.nr, a.removed.util_avg, a.removed.load_avg),
        (1, 400, 600)
    );
    assert_eq!(
        a.avg.util_avg, 400,
        "taken off only at the queue's next update"
    );
    unsafe { host_update_blocked_load(&mut a, st.as_mut_ptr()) };
    assert_eq!(
        (a.avg.load_avg, a.avg.util_avg, a.avg.runnable_avg),
        (0, 0, 0)
    );
    assert_eq!(a.removed.nr, 0);
    assert_eq!(st[lab_stat_LAB_ST_PELT_REMOVE as usize], 1);
    assert_eq!(st[lab_stat_LAB_ST_PELT_BLOCKED as usize], 1);
}

#[test]
fn the_queue_signal_counts_weight_runnable_entities_and_running() {
    // Two entities of 1024 queued, one running, for a long time: load 2048, runnable 2 x 1024,
    // utilisation 1024.
    let mut sa = lab_sched_avg {
        last_update_time: PERIOD,
        ..Default::default()
    };
    unsafe {
        host_update_load_sum(PERIOD + 3000 * PERIOD, &mut sa, 2048, 2, 1);
        host_update_load_avg_sa(&mut sa, 1);
    }
    assert!((2004..=2048).contains(&sa.load_avg), "{}", sa.load_avg);
    assert!(
        (2004..=2048).contains(&sa.runnable_avg),
        "{}",
        sa.runnable_avg
    );
    assert!((1002..=1024).contains(&sa.util_avg), "{}", sa.util_avg);
}

#[test]
fn util_est_follows_rises_at_once_and_falls_by_a_quarter() {
    let mut se = lab_se::default();
    let unchanged = LAB_UTIL_AVG_UNCHANGED;
    unsafe {
        se.avg.util_avg = 600;
        se.avg.runnable_avg = 600;
        host_util_est_update(&mut se, true);
        assert_eq!(se.avg.util_est, 600 | unchanged);
        // Not sampled again until util_avg moves (cfs_se_util_change() clears the mark).
        se.avg.util_avg = 200;
        host_util_est_update(&mut se, true);
        assert_eq!(se.avg.util_est, 600 | unchanged);
        se.avg.util_est &= !unchanged;
        se.avg.runnable_avg = 200;
        host_util_est_update(&mut se, true);
        assert_eq!(se.avg.util_est, ((600 * 4 - 400) / 4) | unchanged);
        // Within 1 % (10): unchanged value, marked.
        se.avg.util_est = 505;
        se.avg.util_avg = 500;
        host_util_est_update(&mut se, true);
        assert_eq!(se.avg.util_est, 505 | unchanged);
        // It did not get the CPU it wanted (runnable well above util): no decrease.
        se.avg.util_est = 800;
        se.avg.util_avg = 300;
        se.avg.runnable_avg = 700;
        host_util_est_update(&mut se, true);
        assert_eq!(se.avg.util_est, 800 | unchanged);
        // Only at a sleep.
        se.avg.util_est = 800;
        host_util_est_update(&mut se, false);
        assert_eq!(se.avg.util_est, 800);
        // The queue's sum, never below zero; cpu_util_cfs() takes the larger, capped.
        let mut cfs = lab_cfs::default();
        se.avg.util_est = 300 | unchanged;
        host_util_est_enqueue(&mut cfs, &se);
        host_util_est_enqueue(&mut cfs, &se);
        assert_eq!(cfs.avg.util_est, 600);
        cfs.avg.util_avg = 450;
        assert_eq!(host_cpu_util_cfs(&cfs, true), 600);
        assert_eq!(host_cpu_util_cfs(&cfs, false), 450);
        host_util_est_dequeue(&mut cfs, &se);
        host_util_est_dequeue(&mut cfs, &se);
        host_util_est_dequeue(&mut cfs, &se);
        assert_eq!(cfs.avg.util_est, 0);
        cfs.avg.util_avg = 1500;
        assert_eq!(host_cpu_util_cfs(&cfs, true), 1024);
    }
}

#[test]
fn a_forked_task_starts_with_half_the_spare_capacity_or_its_weights_share() {
    let mut pool = Pool::new();
    let mut st = vec![0u64; lab_stat_LAB_NR_STATS as usize];
    let p = params_all();
    let mut cfs = lab_cfs {
        clock_pelt: 1 << 40,
        ..Default::default()
    };
    cfs.avg.last_update_time = 1 << 40;
    *pool.se_mut(1) = lab_se {
        weight: 1024,
        inv_weight: table_inv_weight(1024),
        pid: 1,
        is_new: 1,
        post_init: 1,
        ..Default::default()
    };
    unsafe {
        host_init_entity_runnable_average(pool.se_mut(1));
        assert_eq!(
            pool.se(1).avg.load_avg,
            1024,
            "a new task starts fully loaded"
        );
        host_enqueue_entity(
            &mut cfs,
            pool.ptr(),
            1,
            LAB_PLACE_INITIAL as i32,
            &p,
            st.as_mut_ptr(),
        );
    }
    // An idle queue: half of the capacity.
    assert_eq!(pool.se(1).avg.util_avg, 512);
    assert_eq!(pool.se(1).avg.runnable_avg, 512);
    assert_eq!(pool.se(1).post_init, 0);
    assert_eq!(cfs.avg.util_avg, 512);
    assert_eq!(cfs.load_weight, 1024);
    // A busy queue (util 600, load 2047): its weight's share, at most half of what is left.
    cfs.avg.util_avg = 600;
    cfs.avg.load_avg = 2047;
    *pool.se_mut(2) = lab_se {
        weight: 1024,
        pid: 2,
        post_init: 1,
        ..Default::default()
    };
    unsafe {
        host_init_entity_runnable_average(pool.se_mut(2));
        host_enqueue_entity(
            &mut cfs,
            pool.ptr(),
            2,
            LAB_PLACE_INITIAL as i32,
            &p,
            st.as_mut_ptr(),
        );
    }
    assert_eq!(
        pool.se(2).avg.util_avg,
        212,
        "min(600 * 1024 / 2048, (1024 - 600) / 2)"
    );
    assert_eq!(cfs.load_weight, 2048);
}

#[test]
fn task_h_load_is_the_load_in_the_root_groups_proportion() {
    unsafe {
        assert_eq!(host_task_h_load(1000, 3000), 999);
        assert_eq!(host_task_h_load(1000, 0), 0);
        assert_eq!(host_task_h_load(512, 1_000_000), 511);
    }
}

#[test]
fn schedutil_reads_the_largest_of_utilisation_runnable_and_estimate_capped() {
    // cpu_util(cpu, NULL, -1, 1): runnable boosts the utilisation, then UTIL_EST, then the cap.
    let mut cfs = lab_cfs::default();
    // SAFETY: the host functions only read the queue they are given.
    unsafe {
        cfs.avg.util_avg = 300;
        cfs.avg.runnable_avg = 700;
        cfs.avg.util_est = 500;
        assert_eq!(host_cpu_util_cfs_boost(&cfs, true), 700);
        assert_eq!(host_cpu_util_cfs(&cfs, true), 500);
        cfs.avg.util_est = 900;
        assert_eq!(host_cpu_util_cfs_boost(&cfs, true), 900);
        assert_eq!(host_cpu_util_cfs_boost(&cfs, false), 700);
        // Two runnable tasks on a CPU: runnable goes past the capacity, the target does not.
        cfs.avg.runnable_avg = 2048;
        assert_eq!(host_cpu_util_cfs_boost(&cfs, false), 1024);
        // An idle CPU asks for nothing.
        assert_eq!(host_cpu_util_cfs_boost(&lab_cfs::default(), true), 0);
    }
}
