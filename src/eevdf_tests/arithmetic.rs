//! Weights, calc_delta_fair(), V, eligibility and lag (weight.h, avg_vruntime.h).

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[test]
fn weights_follow_the_nice_table() {
    unsafe {
        assert_eq!(host_task_weight(120, false), 1024);
        assert_eq!(host_task_weight(100, false), 88761);
        assert_eq!(host_task_weight(139, false), 15);
        assert_eq!(host_task_weight(125, false), 335);
        assert_eq!(host_task_weight(120, true), 3);
        // calc_delta_fair(): the kernel's __calc_delta() with the table's inverse weight,
        // recomputed here in 128 bits (see kernel_calc_delta()).
        for (d, prio, idle) in [
            (1_000_000u64, 125, false),
            (7, 120, true),
            (123_456_789, 100, false),
            (5, 120, false),
            (4_000_000, 139, false),
            (1 << 40, 119, false),
            (987_654_321_987, 133, false),
        ] {
            let w = host_task_weight(prio, idle);
            let inv = host_task_inv_weight(prio, idle);
            let want = if w == NICE_0 {
                d
            } else {
                kernel_calc_delta(d, inv)
            };
            assert_eq!(host_calc_delta_fair(d, w, inv), want, "d {d} w {w}");
            // ... which is the exact quotient to within about 1e-8 of it (the inverse is
            // rounded to an integer, and low bits of weight * inverse are dropped).
            let exact = d as f64 * 1024.0 / w as f64;
            assert!(
                (want as f64 - exact).abs() <= 1.0 + exact * 1e-8,
                "d {d} w {w}"
            );
        }
        // The inverse weights are 2^32 / w to within one, SCHED_IDLE's included.
        for prio in 100..140 {
            for idle in [false, true] {
                let (w, inv) = (
                    host_task_weight(prio, idle),
                    host_task_inv_weight(prio, idle),
                );
                let err = (inv as i128 * w as i128 - (1i128 << 32)).abs();
                assert!(err < w as i128, "prio {prio} idle {idle}: {inv} * {w}");
            }
        }
        // Not bit-identical to the exact division: somewhere in the table the two differ.
        let differs = (100..140).any(|prio| {
            let w = host_task_weight(prio, false);
            let d = 3_000_000_007u64;
            host_calc_delta_fair(d, w, host_task_inv_weight(prio, false)) != d * 1024 / w as u64
        });
        assert!(differs);
        // A weight without a table inverse (0) derives it as 0xffffffff / w.
        assert_eq!(
            host_calc_delta_fair(1_000_000, 335, 0),
            kernel_calc_delta(1_000_000, u32::MAX / 335)
        );
    }
}

#[test]
fn avg_vruntime_is_the_floored_weighted_mean_and_eligibility_matches_it() {
    let mut rng = StdRng::seed_from_u64(11);
    let weights = [15u32, 335, 820, 1024, 1277, 3121, 88761, 3];
    for _ in 0..2_000 {
        let v0: u64 = rng.random();
        let n = rng.random_range(1..12);
        let ents: Vec<(u64, u32)> = (0..n)
            .map(|_| {
                let off: i64 = rng.random_range(-50_000_000..50_000_000);
                (
                    v0.wrapping_add(off as u64),
                    weights[rng.random_range(0..weights.len())],
                )
            })
            .collect();
        let curr_v = v0.wrapping_add(rng.random_range(-9_000_000i64..9_000_000) as u64);
        let curr = lab_se {
            vruntime: curr_v,
            weight: 1024,
            ..Default::default()
        };
        let with_curr = rng.random_bool(0.5);
        let cp = if with_curr {
            &curr as *const lab_se
        } else {
            std::ptr::null()
        };
        let mut cfs = queue_of(&ents, v0);
        let want = exact_v(&ents, with_curr.then_some((curr_v, 1024)), v0);
        // Eligibility is v <= V, tested without division, before and after re-centring.
        for probe in [want, want.wrapping_add(1), want.wrapping_sub(1), ents[0].0] {
            let el = unsafe { host_vruntime_eligible(&cfs, cp, probe) };
            assert_eq!(el, !vgt(probe, want), "probe {probe} V {want}");
        }
        let got = unsafe { host_avg_vruntime(&mut cfs, cp) };
        assert_eq!(got, want);
        assert_eq!(cfs.zero_vruntime, want, "avg_vruntime re-centres v0 onto V");
        // Re-centring keeps the sums consistent: V is unchanged when asked again.
        assert_eq!(unsafe { host_avg_vruntime(&mut cfs, cp) }, want);
        // Lag is conserved up to the floor: |sum w (V - v)| < W.
        let total_w: i128 =
            ents.iter().map(|e| e.1 as i128).sum::<i128>() + if with_curr { 1024 } else { 0 };
        let sum_lag: i128 = ents
            .iter()
            .chain(with_curr.then_some((curr_v, 1024u32)).iter())
            .map(|&(v, w)| (want.wrapping_sub(v) as i64 as i128) * w as i128)
            .sum();
        assert!(
            sum_lag.abs() < total_w,
            "sum of weighted lags {sum_lag}, W {total_w}"
        );
    }
}

#[test]
fn joining_at_zero_lag_leaves_v_unchanged() {
    let mut rng = StdRng::seed_from_u64(3);
    for _ in 0..1_000 {
        let v0: u64 = rng.random();
        let ents: Vec<(u64, u32)> = (0..rng.random_range(1..8))
            .map(|_| {
                (
                    v0.wrapping_add(rng.random_range(-5_000_000i64..5_000_000) as u64),
                    1024 + rng.random_range(0..3000),
                )
            })
            .collect();
        let mut cfs = queue_of(&ents, v0);
        let v = unsafe { host_avg_vruntime(&mut cfs, std::ptr::null()) };
        let w = rng.random_range(3..90_000);
        assert!(unsafe { host_sum_w_vruntime_add(&mut cfs, v, w, false) });
        assert_eq!(unsafe { host_avg_vruntime(&mut cfs, std::ptr::null()) }, v);
    }
}

#[test]
fn eligibility_survives_overflowing_products_by_the_keys_sign() {
    // A queue heavy enough that key * load overflows s64 for far-away probes.
    let v0 = 1u64 << 40;
    let ents: Vec<(u64, u32)> = (0..64).map(|i| (v0 + i * 1000, 88761)).collect();
    let cfs = queue_of(&ents, v0);
    let far_right = v0.wrapping_add(1 << 62);
    let far_left = v0.wrapping_sub(1 << 62);
    unsafe {
        assert!(!host_vruntime_eligible(&cfs, std::ptr::null(), far_right));
        assert!(host_vruntime_eligible(&cfs, std::ptr::null(), far_left));
    }
}

#[test]
fn lag_is_clamped_to_the_largest_slice_plus_a_tick() {
    let tick = 4_000_000u64;
    let max_slice = 2_100_000u64;
    for w in [15u32, 1024, 88761] {
        let limit = (max_slice + tick) * 1024 / w as u64;
        let se = lab_se {
            vruntime: 1_000_000_000,
            weight: w,
            ..Default::default()
        };
        unsafe {
            assert_eq!(
                host_entity_lag(1_000_000_000 + 10 * limit, &se, max_slice, tick),
                limit as i64
            );
            assert_eq!(
                host_entity_lag(1_000_000_000 - 10 * limit, &se, max_slice, tick),
                -(limit as i64)
            );
            assert_eq!(host_entity_lag(1_000_000_000 + 5, &se, max_slice, tick), 5);
        }
    }
    // A delayed entity's lag never grows past its lag at sleep; DELAY_ZERO takes all credit.
    unsafe {
        assert_eq!(host_delayed_entity_lag(500, -300, false), 500);
        assert_eq!(host_delayed_entity_lag(500, -300, true), 0);
        assert_eq!(host_delayed_entity_lag(-900, -300, true), -300);
        assert_eq!(host_delayed_entity_lag(-900, -300, false), -300);
    }
}

#[test]
fn place_lag_inflation_preserves_the_lag_after_joining() {
    // Join with inflated lag, then the entity's lag against the new V is the original one
    // (within the division's truncation).
    let mut rng = StdRng::seed_from_u64(5);
    for _ in 0..1_000 {
        let v0: u64 = rng.random();
        let ents: Vec<(u64, u32)> = (0..rng.random_range(1..8))
            .map(|_| {
                (
                    v0.wrapping_add(rng.random_range(-2_000_000i64..2_000_000) as u64),
                    1024,
                )
            })
            .collect();
        let mut cfs = queue_of(&ents, v0);
        let v = unsafe { host_avg_vruntime(&mut cfs, std::ptr::null()) };
        let vlag: i64 = rng.random_range(-3_000_000..3_000_000);
        let w = 1024u32;
        let lag = unsafe { host_place_lag_inflate(vlag, cfs.sum_weight, w as u64) };
        let placed = v.wrapping_sub(lag as u64);
        assert!(unsafe { host_sum_w_vruntime_add(&mut cfs, placed, w, false) });
        let v2 = unsafe { host_avg_vruntime(&mut cfs, std::ptr::null()) };
        let kept = v2.wrapping_sub(placed) as i64;
        assert!((kept - vlag).abs() <= 1, "lag {vlag} became {kept}");
    }
}
