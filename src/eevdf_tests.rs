//! Host tests of the EEVDF arithmetic and runqueue in src/bpf/eevdf.h: the same C the BPF
//! scheduler runs, compiled for the host by build.rs and checked here against independent
//! computations (128-bit rationals, brute-force scans, a reference tree walk).

#![allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code
)]

mod ffi {
    #![allow(
        non_upper_case_globals,
        non_camel_case_types,
        non_snake_case,
        dead_code
    )]
    include!(concat!(env!("OUT_DIR"), "/eevdf_host.rs"));
}

use ffi::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const NICE_0: u32 = 1024;

/// A zeroed entity pool on the heap (it is several MiB).
struct Pool(Box<[lab_se]>);

impl Pool {
    fn new() -> Self {
        Pool(vec![lab_se::default(); lab_consts_LAB_NR_SLOTS as usize].into_boxed_slice())
    }
    fn ptr(&mut self) -> *mut lab_pool {
        self.0.as_mut_ptr().cast()
    }
    fn se(&self, i: u32) -> &lab_se {
        &self.0[i as usize]
    }
    fn se_mut(&mut self, i: u32) -> &mut lab_se {
        &mut self.0[i as usize]
    }
}

fn vgt(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) > 0
}

/// Checks every red-black and augmentation invariant; returns the in-order slots.
fn check_tree(cfs: &lab_cfs, pool: &Pool) -> Vec<u32> {
    fn walk(pool: &Pool, n: u32, parent: u32, out: &mut Vec<u32>) -> (u32, u64, u64, u64) {
        if n == 0 {
            return (1, u64::MAX, u64::MAX, 0);
        }
        let se = pool.se(n);
        assert_eq!(se.parent, parent, "parent link of {n}");
        if se.red != 0 {
            for c in [se.left, se.right] {
                assert!(c == 0 || pool.se(c).red == 0, "red {n} has a red child {c}");
            }
        }
        let (bl, lmv, lmin, lmax) = walk(pool, se.left, n, out);
        out.push(n);
        let (br, rmv, rmin, rmax) = walk(pool, se.right, n, out);
        assert_eq!(bl, br, "black height under {n}");
        let mut mv = se.vruntime;
        for c in [lmv, rmv] {
            if c != u64::MAX && vgt(mv, c) {
                mv = c;
            }
        }
        let mins = se.slice.min(lmin).min(rmin);
        let maxs = se.slice.max(lmax).max(rmax);
        assert_eq!(se.min_vruntime, mv, "min_vruntime of {n}");
        assert_eq!(se.min_slice, mins, "min_slice of {n}");
        assert_eq!(se.max_slice, maxs, "max_slice of {n}");
        (bl + (se.red == 0) as u32, mv, mins, maxs)
    }
    let mut out = Vec::new();
    if cfs.root != 0 {
        assert_eq!(pool.se(cfs.root).red, 0, "the root is black");
    }
    walk(pool, cfs.root, 0, &mut out);
    for w in out.windows(2) {
        let (a, b) = (pool.se(w[0]).deadline, pool.se(w[1]).deadline);
        assert!(
            (b.wrapping_sub(a) as i64) >= 0,
            "deadline order {a} then {b}"
        );
    }
    out
}

#[test]
fn rb_tree_keeps_order_balance_and_aggregates_under_random_churn() {
    let mut rng = StdRng::seed_from_u64(7);
    let mut pool = Pool::new();
    let mut cfs = lab_cfs::default();
    let mut present: Vec<u32> = Vec::new();
    let base = u64::MAX - 5_000_000; // keys wrap around zero during the run
    for step in 0..20_000 {
        let insert = present.len() < 8 || (present.len() < 600 && rng.random_bool(0.55));
        if insert {
            let slot = loop {
                let s = rng.random_range(1..lab_consts_LAB_NR_SLOTS);
                if !present.contains(&s) {
                    break s;
                }
            };
            let se = pool.se_mut(slot);
            *se = lab_se::default();
            se.deadline = base.wrapping_add(rng.random_range(0..10_000_000));
            se.vruntime = base.wrapping_add(rng.random_range(0..10_000_000));
            se.slice = rng.random_range(100_000..5_000_000);
            unsafe { host_rb_insert(&mut cfs, pool.ptr(), slot) };
            present.push(slot);
        } else {
            let i = rng.random_range(0..present.len());
            let slot = present.swap_remove(i);
            unsafe { host_rb_erase(&mut cfs, pool.ptr(), slot) };
        }
        if step % 97 == 0 || present.len() < 4 {
            let order = check_tree(&cfs, &pool);
            assert_eq!(order.len(), present.len());
            // rb_first / rb_next walk the same order.
            let mut walked = Vec::new();
            let mut n = unsafe { host_rb_first(&cfs, pool.ptr()) };
            while n != 0 {
                walked.push(n);
                n = unsafe { host_rb_next(pool.ptr(), n) };
            }
            assert_eq!(walked, order);
        }
    }
}

#[test]
fn weights_follow_the_nice_table() {
    unsafe {
        assert_eq!(host_task_weight(120, false), 1024);
        assert_eq!(host_task_weight(100, false), 88761);
        assert_eq!(host_task_weight(139, false), 15);
        assert_eq!(host_task_weight(125, false), 335);
        assert_eq!(host_task_weight(120, true), 3);
        // calc_delta_fair: NICE_0 / w virtual ns per ns, exact to the kernel's full resolution:
        // delta * 2^20 / (w * 2^10) floors the same rational as delta * 1024 / w.
        for (d, w) in [
            (1_000_000u64, 335u32),
            (7, 3),
            (123_456_789, 88761),
            (5, 1024),
        ] {
            let full = (d as u128 * (1 << 20)) / (w as u128 * 1024);
            assert_eq!(host_calc_delta_fair(d, w) as u128, full);
        }
    }
}

/// V computed independently: v0 + floor((S + key_c*w_c) / (W + w_c)) in 128 bits.
fn exact_v(entities: &[(u64, u32)], curr: Option<(u64, u32)>, v0: u64) -> u64 {
    let mut s: i128 = 0;
    let mut w: i128 = 0;
    for &(v, wt) in entities.iter().chain(curr.iter()) {
        s += (v.wrapping_sub(v0) as i64 as i128) * wt as i128;
        w += wt as i128;
    }
    if w == 0 {
        return v0;
    }
    v0.wrapping_add(s.div_euclid(w) as i64 as u64)
}

fn queue_of(entities: &[(u64, u32)], v0: u64) -> lab_cfs {
    let mut cfs = lab_cfs {
        zero_vruntime: v0,
        ..Default::default()
    };
    for &(v, w) in entities {
        assert!(unsafe { host_sum_w_vruntime_add(&mut cfs, v, w, false) });
    }
    cfs
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
