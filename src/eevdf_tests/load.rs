//! The wake-affine, SIS_UTIL and newidle arithmetic (load.h).

use super::*;

#[test]
fn wake_wide_needs_many_flips_on_both_sides() {
    unsafe {
        // llc_size 4: the less flippy side needs >= 4 flips and the other >= 4x that.
        assert!(!host_wake_wide(3, 100, 4));
        assert!(!host_wake_wide(4, 15, 4));
        assert!(host_wake_wide(4, 16, 4));
        assert!(host_wake_wide(40, 10, 4));
        assert!(!host_wake_wide(0, 0, 4));
    }
}

/// wake_affine_weight() between two CPUs of full capacity.
fn weight(this: i64, prev: i64, task: i64, waker: i64, sync: bool, pct: u32, bias: bool) -> bool {
    // SAFETY: plain values.
    unsafe { host_wake_affine_weight(this, prev, task, waker, sync, pct, bias, 1024, 1024) }
}

#[test]
fn wake_affine_weight_is_biased_towards_the_waker() {
    // Equal loads, task load 100: this = 1000+100 vs prev = 1000-100: prev wins without bias.
    assert!(!weight(1000, 1000, 100, 0, false, 117, false));
    // this 1100*100 vs prev 900*108: still prev.
    assert!(!weight(1000, 1000, 100, 0, false, 117, true));
    // A lighter waker CPU wins: (800+100)*100 < (1000-100)*108.
    assert!(weight(800, 1000, 100, 0, false, 117, true));
    // ... but not without WA_BIAS: 900 vs 900 is a tie, and ties go to prev.
    assert!(!weight(800, 1000, 100, 0, false, 117, false));
    // sync: the waker's own load leaves this CPU; a waker heavier than its CPU's load
    // means this CPU.
    assert!(weight(500, 1000, 100, 600, true, 117, true));
    assert!(weight(1000, 1000, 100, 300, true, 117, true));
    // sync ties are broken towards the waker (prev_eff + 1).
    assert!(weight(100, 300, 100, 0, true, 100, false));
}

/// The loads are weighed against the capacities: each side's load times the other CPU's
/// capacity, so a CPU that RT pressure halved carries its load twice over.
#[test]
fn wake_affine_weight_weighs_capacities() {
    // SAFETY: plain values.
    unsafe {
        // (800+100)*100*1024 vs (1000-100)*108*1024: this CPU, at equal capacities.
        assert!(host_wake_affine_weight(
            800, 1000, 100, 0, false, 117, true, 1024, 1024
        ));
        // The waker's CPU at half capacity: 900*100*1024 vs 900*108*512: prev.
        assert!(!host_wake_affine_weight(
            800, 1000, 100, 0, false, 117, true, 512, 1024
        ));
        // A waker's CPU that loses at equal capacities (1100*100 vs 900*108) wins against a
        // previous CPU at half capacity: 1100*100*512 < 900*108*1024.
        assert!(!host_wake_affine_weight(
            1000, 1000, 100, 0, false, 117, true, 1024, 1024
        ));
        assert!(host_wake_affine_weight(
            1000, 1000, 100, 0, false, 117, true, 1024, 512
        ));
    }
}

#[test]
fn sis_util_scan_shrinks_with_utilisation() {
    unsafe {
        assert_eq!(host_nr_idle_scan(0, 4, 117), 4);
        // x = 512 per CPU: 1024 - 512^2 * 117^2 / 10240000 = 674 -> 674 * 4 / 1024 = 2
        assert_eq!(host_nr_idle_scan(4 * 512, 4, 117), 2);
        // Above ~85 % (100/117) nothing is scanned.
        assert_eq!(host_nr_idle_scan(4 * 880, 4, 117), 0);
        assert_eq!(host_nr_idle_scan(4 * 1024, 4, 117), 0);
        let mut last = u32::MAX;
        for u in (0..=1024).step_by(64) {
            let n = host_nr_idle_scan(8 * u, 8, 117);
            assert!(n <= last);
            last = n;
        }
    }
}

#[test]
fn newidle_statistics_follow_success() {
    let mut ni = lab_newidle::default();
    unsafe {
        host_newidle_init(&mut ni, 0);
        assert_eq!((ni.calls, ni.success, ni.ratio), (512, 256, 512));
        // Always failing, called often (NI_RATE adds nothing within 1 ms): the ratio drops.
        let mut now = 0;
        for _ in 0..4096 {
            now += 1000;
            host_newidle_account(&mut ni, true, false, now, false, true);
        }
        assert!(ni.ratio < 64, "{}", ni.ratio);
        // NI_RANDOM then mostly skips: with ratio r the balance runs for rnd % 1024 <= 1 + r.
        let runs = (0..1024u32)
            .filter(|&r| host_newidle_should_run(&ni, r, true))
            .count();
        assert_eq!(runs as u32, 2 + ni.ratio);
        assert!(
            host_newidle_should_run(&ni, 1000, false),
            "without NI_RANDOM it always runs"
        );
        // Rare calls (seconds apart) bring the ratio back up through NI_RATE's term.
        for _ in 0..1024 {
            now += 100_000_000;
            host_newidle_account(&mut ni, false, false, now, true, true);
        }
        assert_eq!(ni.ratio, 1024);
    }
}

/// rq->avg_idle moves an eighth of the way to each idle period (update_avg()), capped at twice
/// max_idle_balance_cost; max_newidle_lb_cost takes any longer balance at once and otherwise
/// decays by 3/256 once a second.
#[test]
fn newidle_budget_and_costs() {
    unsafe {
        let mut avg = 1_000_000u64;
        host_update_avg_idle(&mut avg, 200_000, 500_000);
        assert_eq!(avg, 900_000);
        host_update_avg_idle(&mut avg, 100_000_000, 500_000);
        assert_eq!(avg, 1_000_000, "capped at twice the balance cost");
        // A shorter period: the signed step rounds towards zero, like the kernel's s64 division.
        let mut avg = 15u64;
        host_update_avg_idle(&mut avg, 0, 500_000);
        assert_eq!(avg, 14);

        let (mut max, mut last) = (0u64, 0u64);
        assert!(!host_update_newidle_cost(&mut max, &mut last, 40_000, 5));
        assert_eq!((max, last), (40_000, 5));
        // Within the second: no decay.
        assert!(!host_update_newidle_cost(
            &mut max,
            &mut last,
            0,
            900_000_000
        ));
        assert_eq!(max, 40_000);
        // After it: 40000 * 253 / 256.
        assert!(host_update_newidle_cost(
            &mut max,
            &mut last,
            0,
            1_100_000_000
        ));
        assert_eq!((max, last), (39_531, 1_100_000_000));
    }
}
