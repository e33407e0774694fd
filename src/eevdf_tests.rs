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

// ------------------------------------------------------------------------------------------------
// The runqueue layer
// ------------------------------------------------------------------------------------------------

const TICK: u64 = 4_000_000;
const BASE: u64 = 2_100_000;

fn feat(name: &str) -> u64 {
    1u64 << crate::features::find(name).expect(name).bit
}

fn params(features: u64) -> lab_params {
    lab_params {
        features,
        base_slice: BASE,
        normalized_slice: 700_000,
        migration_cost: 500_000,
        tick_ns: TICK,
        measure_scan: 1,
    }
}

fn defaults() -> lab_params {
    params(crate::features::FeatureSet::defaults().0)
}

/// One queue and its entities, with the invariants checked after every step.
struct Q {
    pool: Pool,
    cfs: lab_cfs,
    p: lab_params,
    st: Vec<u64>,
    next_slot: u32,
}

impl Q {
    fn new(p: lab_params) -> Self {
        Q {
            pool: Pool::new(),
            cfs: lab_cfs {
                zero_vruntime: (-(1i64 << 20)) as u64,
                ..Default::default()
            },
            p,
            st: vec![0; lab_stat_LAB_NR_STATS as usize],
            next_slot: 1,
        }
    }
    fn stat(&self, s: lab_stat) -> u64 {
        self.st[s as usize]
    }
    /// A new runnable entity (ENQUEUE_INITIAL).
    fn spawn(&mut self, weight: u32) -> u32 {
        let n = self.next_slot;
        self.next_slot += 1;
        *self.pool.se_mut(n) = lab_se {
            weight,
            pid: n as i32,
            cpu: 0,
            is_new: 1,
            ..Default::default()
        };
        self.enqueue(n, LAB_PLACE_INITIAL as i32);
        n
    }
    fn enqueue(&mut self, n: u32, flags: i32) {
        unsafe {
            host_enqueue_entity(
                &mut self.cfs,
                self.pool.ptr(),
                n,
                flags,
                &self.p,
                self.st.as_mut_ptr(),
            )
        };
        self.check();
    }
    fn dequeue(&mut self, n: u32, flags: i32) -> bool {
        let r = unsafe {
            host_dequeue_entity(
                &mut self.cfs,
                self.pool.ptr(),
                n,
                flags,
                &self.p,
                self.st.as_mut_ptr(),
            )
        };
        self.check();
        r
    }
    fn v(&mut self) -> u64 {
        let curr = self.curr_ptr();
        unsafe { host_avg_vruntime(&mut self.cfs, curr) }
    }
    fn curr_ptr(&self) -> *const lab_se {
        if self.cfs.curr != 0 && self.pool.se(self.cfs.curr).on_rq != 0 {
            self.pool.se(self.cfs.curr)
        } else {
            std::ptr::null()
        }
    }
    fn pick(&mut self, protect: bool) -> u32 {
        let mut g = 0;
        let n = unsafe {
            host_pick_next_entity(
                &mut self.cfs,
                self.pool.ptr(),
                protect,
                &self.p,
                self.st.as_mut_ptr(),
                &mut g,
            )
        };
        self.check();
        n
    }
    /// Runs @n (picked) for @ns: put_prev of the old curr, set_next, update_curr.
    fn run(&mut self, n: u32, ns: u64) -> i32 {
        let old = self.cfs.curr;
        if old != 0 && old != n {
            unsafe {
                host_put_prev_entity(
                    &mut self.cfs,
                    self.pool.ptr(),
                    old,
                    &self.p,
                    self.st.as_mut_ptr(),
                )
            };
        }
        if self.cfs.curr != n {
            unsafe { host_set_next_entity(&mut self.cfs, self.pool.ptr(), n, &self.p) };
        }
        let r = unsafe {
            host_update_curr(
                &mut self.cfs,
                self.pool.ptr(),
                ns,
                &self.p,
                self.st.as_mut_ptr(),
            )
        };
        self.check();
        r
    }
    fn eligible(&mut self, n: u32) -> bool {
        unsafe { host_entity_eligible(&mut self.cfs, self.pool.ptr(), n) }
    }
    /// Queue invariants: tree shape and aggregates, counts, and sums equal to a recomputation.
    fn check(&self) {
        let order = check_tree(&self.cfs, &self.pool);
        let curr_queued = self.cfs.curr != 0 && self.pool.se(self.cfs.curr).on_rq != 0;
        assert_eq!(
            self.cfs.nr_queued as usize,
            order.len() + curr_queued as usize,
            "nr_queued"
        );
        let ghosts = order
            .iter()
            .filter(|&&n| self.pool.se(n).delayed != 0)
            .count();
        assert_eq!(self.cfs.nr_delayed as usize, ghosts, "nr_delayed");
        let (mut s, mut w) = (0i64, 0u64);
        for &n in &order {
            let se = self.pool.se(n);
            assert_eq!(se.in_tree, 1);
            assert_eq!(se.on_rq, 1);
            s = s.wrapping_add(
                (se.vruntime.wrapping_sub(self.cfs.zero_vruntime) as i64) * se.weight as i64,
            );
            w += se.weight as u64;
        }
        assert_eq!(self.cfs.sum_w_vruntime, s, "sum_w_vruntime");
        assert_eq!(self.cfs.sum_weight, w, "sum_weight");
    }
    /// Every queued entity: the tree plus curr.
    fn queued(&self) -> Vec<u32> {
        let mut out = check_tree(&self.cfs, &self.pool);
        if self.cfs.curr != 0 && self.pool.se(self.cfs.curr).on_rq != 0 {
            out.push(self.cfs.curr);
        }
        out
    }
}

#[test]
fn new_tasks_get_half_a_slice_with_place_deadline_initial() {
    for on in [true, false] {
        let mut f = crate::features::FeatureSet::defaults().0;
        if !on {
            f &= !feat("PLACE_DEADLINE_INITIAL");
        }
        let mut q = Q::new(params(f));
        let a = q.spawn(1024);
        let b = q.spawn(335);
        for (n, w) in [(a, 1024u64), (b, 335)] {
            let se = q.pool.se(n);
            let vslice = BASE * 1024 / w;
            let want = if on { vslice / 2 } else { vslice };
            assert_eq!(se.deadline.wrapping_sub(se.vruntime), want);
        }
        assert_eq!(q.stat(lab_stat_LAB_ST_PLACE_INITIAL), 2);
    }
}

#[test]
fn pick_is_the_earliest_eligible_deadline() {
    let mut rng = StdRng::seed_from_u64(21);
    // Without the shortcuts (protect = false, no buddy) the pick must equal a brute-force scan.
    let mut q = Q::new(params(
        crate::features::FeatureSet::defaults().0 & !feat("PICK_BUDDY"),
    ));
    let weights = [15u32, 110, 335, 1024, 1024, 3121, 9548];
    let mut tasks = Vec::new();
    for _ in 0..40 {
        tasks.push(q.spawn(weights[rng.random_range(0..weights.len())]));
    }
    for step in 0..3000 {
        let picked = q.pick(false);
        let v = q.v();
        let want = q
            .queued()
            .into_iter()
            .filter(|&n| !vgt(q.pool.se(n).vruntime, v))
            .min_by(|&a, &b| {
                let (da, db) = (q.pool.se(a).deadline, q.pool.se(b).deadline);
                (da.wrapping_sub(db) as i64)
                    .cmp(&0)
                    .then(std::cmp::Ordering::Equal)
            })
            .unwrap();
        assert_eq!(
            q.pool.se(picked).deadline,
            q.pool.se(want).deadline,
            "step {step}"
        );
        assert!(!vgt(q.pool.se(picked).vruntime, v), "the pick is eligible");
        // Run it for a random stretch; sometimes give someone a custom slice.
        q.run(picked, rng.random_range(10_000..3_000_000));
        if step % 50 == 0 {
            // A custom slice changes through a save/restore cycle, as sched_setattr() does.
            let n = tasks[rng.random_range(0..tasks.len())];
            if q.cfs.curr != n {
                q.dequeue(n, 0);
                let se = q.pool.se_mut(n);
                se.custom_slice = 1;
                se.slice = rng.random_range(100_000..4_000_000);
                q.enqueue(n, 0);
            }
        }
    }
    assert!(q.stat(lab_stat_LAB_ST_PICK_LEFTMOST) + q.stat(lab_stat_LAB_ST_PICK_SEARCH) > 0);
}

#[test]
fn running_shares_follow_the_weights() {
    // Protected picks, as the dispatch path makes them: long-run CPU shares by weight.
    let mut q = Q::new(defaults());
    let ws = [1024u32, 1024, 335, 3121];
    let ids: Vec<u32> = ws.iter().map(|&w| q.spawn(w)).collect();
    let mut ran = vec![0u64; ws.len()];
    let tick = 1_000_000u64;
    let mut curr = q.pick(true);
    for _ in 0..200_000 {
        let r = q.run(curr, tick);
        ran[ids.iter().position(|&i| i == curr).unwrap()] += tick;
        if r != lab_resched_LAB_RESCHED_NONE as i32 {
            curr = q.pick(true);
        }
    }
    let total_w: u64 = ws.iter().map(|&w| w as u64).sum();
    let total: u64 = ran.iter().sum();
    for (i, &w) in ws.iter().enumerate() {
        let want = w as f64 / total_w as f64;
        let got = ran[i] as f64 / total as f64;
        assert!(
            (got - want).abs() / want < 0.02,
            "task {i}: share {got:.4} want {want:.4}"
        );
    }
}

#[test]
fn reweight_keeps_v() {
    let mut rng = StdRng::seed_from_u64(9);
    for _ in 0..300 {
        let mut q = Q::new(defaults());
        let ids: Vec<u32> = (0..6)
            .map(|_| q.spawn(rng.random_range(15..9000)))
            .collect();
        let c = q.pick(true);
        q.run(c, rng.random_range(100_000..5_000_000));
        let before = q.v();
        let target = ids[rng.random_range(0..ids.len())];
        let w = rng.random_range(15..20000);
        unsafe {
            host_reweight_entity(&mut q.cfs, q.pool.ptr(), target, w, &q.p, q.st.as_mut_ptr())
        };
        q.check();
        let after = q.v();
        // V is invariant up to the truncations of the lag rescale (a few ns of virtual time).
        let d = after.wrapping_sub(before) as i64;
        assert!(d.abs() <= 2, "V moved by {d}");
        assert_eq!(q.pool.se(target).weight, w);
    }
}

#[test]
fn ineligible_sleepers_become_ghosts_and_leave_when_picked() {
    let mut q = Q::new(defaults());
    let a = q.spawn(1024);
    let b = q.spawn(1024);
    let c = q.spawn(1024);
    let first = q.pick(true);
    // Run it past V so that it is ineligible, then let it sleep.
    q.run(first, 6_000_000);
    assert!(!q.eligible(first));
    assert!(
        !q.dequeue(first, LAB_DEQ_SLEEP as i32),
        "an ineligible sleeper is kept"
    );
    assert_eq!(q.cfs.nr_delayed, 1);
    assert_eq!(q.cfs.nr_queued, 3, "ghosts stay counted");
    assert_eq!(q.stat(lab_stat_LAB_ST_GHOST_CREATED), 1);
    // The others run until the ghost is eligible and picked: then it is finalized, not run.
    let others: Vec<u32> = [a, b, c].into_iter().filter(|&n| n != first).collect();
    for _ in 0..100 {
        let n = q.pick(true);
        if q.cfs.nr_delayed == 0 {
            break;
        }
        assert!(others.contains(&n));
        q.run(n, 1_000_000);
    }
    assert_eq!(q.cfs.nr_delayed, 0);
    assert_eq!(q.stat(lab_stat_LAB_ST_GHOST_PICKED), 1);
    assert_eq!(q.pool.se(first).on_rq, 0);
    // DELAY_ZERO: it left with no credit.
    assert!(q.pool.se(first).vlag <= 0);

    // An eligible sleeper is not delayed: y runs ahead, x (behind V) sleeps.
    let mut q2 = Q::new(defaults());
    let x = q2.spawn(1024);
    let y = q2.spawn(1024);
    q2.run(y, 3_000_000);
    assert!(q2.eligible(x));
    q2.run(x, 1);
    assert!(q2.eligible(x));
    assert!(q2.dequeue(x, LAB_DEQ_SLEEP as i32));
    assert_eq!(q2.cfs.nr_delayed, 0);
    // Special states (stopped, dead...) are never delayed.
    let mut q3 = Q::new(defaults());
    let y = q3.spawn(1024);
    q3.spawn(1024);
    q3.run(y, 9_000_000);
    assert!(q3.dequeue(y, (LAB_DEQ_SLEEP | LAB_DEQ_SPECIAL) as i32));
}

#[test]
fn delay_zero_decides_whether_a_requeued_ghost_keeps_credit() {
    for delay_zero in [true, false] {
        let mut f = crate::features::FeatureSet::defaults().0;
        if !delay_zero {
            f &= !feat("DELAY_ZERO");
        }
        let mut pos = 0;
        let mut rng = StdRng::seed_from_u64(1);
        for _ in 0..200 {
            let mut q = Q::new(params(f));
            let ids: Vec<u32> = (0..4).map(|_| q.spawn(1024)).collect();
            let g = q.pick(true);
            q.run(g, rng.random_range(3_000_000..8_000_000));
            if q.eligible(g) || q.dequeue(g, LAB_DEQ_SLEEP as i32) {
                continue;
            }
            // Others run, V moves past the ghost, then it wakes up on its queue.
            for _ in 0..rng.random_range(1..8) {
                let n = q.pick(true);
                if n == 0 || q.pool.se(g).delayed == 0 {
                    break;
                }
                q.run(n, 2_000_000);
            }
            if q.pool.se(g).delayed == 0 {
                continue;
            }
            let put = q.cfs.curr;
            if put != 0 {
                unsafe {
                    host_put_prev_entity(&mut q.cfs, q.pool.ptr(), put, &q.p, q.st.as_mut_ptr())
                };
            }
            unsafe {
                host_requeue_delayed_entity(&mut q.cfs, q.pool.ptr(), g, &q.p, q.st.as_mut_ptr())
            };
            q.check();
            assert_eq!(q.pool.se(g).delayed, 0);
            if delay_zero {
                assert!(q.pool.se(g).vlag <= 0, "DELAY_ZERO: no credit");
            }
            pos += q.stat(lab_stat_LAB_ST_GHOST_REQUEUE_POS);
            let _ = ids;
        }
        if delay_zero {
            assert_eq!(pos, 0);
        } else {
            assert!(
                pos > 0,
                "without DELAY_ZERO some requeues keep positive lag"
            );
        }
    }
}

#[test]
fn short_slice_wakees_preempt_only_with_preempt_short() {
    for short in [true, false] {
        let mut f = crate::features::FeatureSet::defaults().0;
        if !short {
            f &= !feat("PREEMPT_SHORT");
        }
        // The hog runs alone, so it stays eligible and its slice protected.
        let mut q = Q::new(params(f));
        let hog = q.spawn(1024);
        assert_eq!(q.pick(true), hog);
        q.run(hog, 500_000);
        // A task with a 0.1 ms custom slice wakes up with zero lag.
        let n = q.next_slot;
        q.next_slot += 1;
        *q.pool.se_mut(n) = lab_se {
            weight: 1024,
            pid: n as i32,
            custom_slice: 1,
            slice: 100_000,
            ..Default::default()
        };
        q.enqueue(n, 0);
        let wk = lab_wakeup {
            wakee_normal: true,
            ..Default::default()
        };
        let mut g = 0;
        let r = unsafe {
            host_wakeup_preempt(
                &mut q.cfs,
                q.pool.ptr(),
                n,
                &wk,
                &q.p,
                q.st.as_mut_ptr(),
                &mut g,
            )
        };
        q.check();
        if short {
            assert_eq!(r, lab_preempt_LAB_PREEMPT_SHORT as i32);
            assert_eq!(q.cfs.next, n, "the short wakee becomes the next buddy");
            assert_eq!(q.pick(true), n, "and the protected pick takes it");
        } else {
            assert_eq!(
                r, lab_preempt_LAB_PREEMPT_NO as i32,
                "the hog's slice is protected"
            );
        }
    }
}

/// Three equal tasks, the first picked; returns update_curr()'s answers after it ran 0.1, 0.6 and
/// 0.8 ms in all.
fn protection_answers(f: u64) -> [i32; 3] {
    let mut q = Q::new(params(f));
    let a = q.spawn(1024);
    q.spawn(1024);
    q.spawn(1024);
    let n = q.pick(true);
    assert_eq!(n, a, "the first spawned has the earliest deadline");
    [q.run(n, 100_000), q.run(n, 500_000), q.run(n, 200_000)]
}

#[test]
fn run_to_parity_protects_the_request_and_its_absence_a_quantum_or_the_zero_lag_point() {
    const NONE: i32 = lab_resched_LAB_RESCHED_NONE as i32;
    const PROTECT: i32 = lab_resched_LAB_RESCHED_PROTECT as i32;
    let on = crate::features::FeatureSet::defaults().0;
    let (rtp, short) = (feat("RUN_TO_PARITY"), feat("PREEMPT_SHORT"));
    // Uniform slices: RUN_TO_PARITY protects up to the deadline (1.05 ms for a new task).
    assert_eq!(protection_answers(on), [NONE; 3]);
    assert_eq!(protection_answers(on & !short), [NONE; 3]);
    // Without it, the unscaled 0.7 ms quantum (7.2)...
    assert_eq!(
        protection_answers(on & !rtp & !short),
        [NONE, NONE, PROTECT]
    );
    // ...and with PREEMPT_SHORT (7.3) only until the entity reaches the zero-lag point, which a
    // zero-lag entity beside two others does at once.
    assert_eq!(protection_answers(on & !rtp), [PROTECT; 3]);
}

#[test]
fn random_churn_keeps_every_queue_invariant() {
    let mut rng = StdRng::seed_from_u64(77);
    let mut q = Q::new(defaults());
    let mut asleep: Vec<u32> = Vec::new();
    for _ in 0..12 {
        q.spawn(rng.random_range(15..10000));
    }
    for _ in 0..20_000 {
        match rng.random_range(0..10) {
            0..=4 => {
                let n = q.pick(true);
                if n != 0 {
                    q.run(n, rng.random_range(1_000..4_000_000));
                }
            }
            5 | 6 => {
                // The running task sleeps (maybe becoming a ghost).
                let c = q.cfs.curr;
                if c != 0 && q.pool.se(c).on_rq != 0 {
                    q.dequeue(c, LAB_DEQ_SLEEP as i32);
                    asleep.push(c);
                }
            }
            7 | 8 => {
                // Something wakes: a ghost requeues, a real sleeper is placed with its lag.
                if !asleep.is_empty() {
                    let n = asleep.swap_remove(rng.random_range(0..asleep.len()));
                    if q.pool.se(n).delayed != 0 {
                        unsafe {
                            host_requeue_delayed_entity(
                                &mut q.cfs,
                                q.pool.ptr(),
                                n,
                                &q.p,
                                q.st.as_mut_ptr(),
                            )
                        };
                        q.check();
                    } else if q.pool.se(n).on_rq == 0 {
                        q.enqueue(n, 0);
                    }
                }
            }
            _ => {
                let all = q.queued();
                if !all.is_empty() {
                    let n = all[rng.random_range(0..all.len())];
                    let w = rng.random_range(15..20000);
                    unsafe {
                        host_reweight_entity(
                            &mut q.cfs,
                            q.pool.ptr(),
                            n,
                            w,
                            &q.p,
                            q.st.as_mut_ptr(),
                        )
                    };
                    q.check();
                }
            }
        }
        // Lag stays within its bound for every queued, non-ghost entity.
        let v = q.v();
        let max_slice = unsafe { host_cfs_max_slice(&mut q.cfs, q.pool.ptr()) };
        for n in q.queued() {
            let se = q.pool.se(n);
            if se.delayed != 0 {
                continue;
            }
            let lag = v.wrapping_sub(se.vruntime) as i64;
            let bound = ((max_slice + TICK) * 1024 / se.weight as u64) as i64;
            assert!(lag.abs() <= 2 * bound + 1, "lag {lag} bound {bound}");
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Load tracking and wake-affine arithmetic
// ------------------------------------------------------------------------------------------------

#[test]
fn pelt_halves_every_32_periods_and_converges_to_the_value() {
    let period = 1u64 << 20;
    let mut s = lab_pelt::default();
    unsafe { host_pelt_update(&mut s, 1_000, 0) }; // starts the clock
    let t0 = 1_000;
    // Held at 1024 for a long time: converges to 1024.
    unsafe { host_pelt_update(&mut s, t0 + 2000 * period, 1024) };
    assert!(s.avg >= 1022 && s.avg <= 1024, "{}", s.avg);
    // Then 0 for 32 periods: half of it is left (y^32 = 1/2).
    let t1 = s.stamp;
    unsafe { host_pelt_update(&mut s, t1 + 32 * period, 0) };
    assert!((s.avg as i64 - 512).abs() <= 2, "{}", s.avg);
    // Less than a period changes nothing and keeps the remainder for later.
    let (avg, stamp) = (s.avg, s.stamp);
    unsafe { host_pelt_update(&mut s, stamp + period - 1, 0) };
    assert_eq!((s.avg, s.stamp), (avg, stamp));
    // Updates in small steps equal one big step (piecewise-constant input).
    let mut a = lab_pelt {
        avg: 300,
        stamp: 1 << 30,
    };
    let mut b = a;
    for k in 1..=50u64 {
        unsafe { host_pelt_update(&mut a, (1 << 30) + k * period, 800) };
    }
    unsafe { host_pelt_update(&mut b, (1 << 30) + 50 * period, 800) };
    assert!(
        (a.avg as i64 - b.avg as i64).abs() <= 50,
        "{} vs {}",
        a.avg,
        b.avg
    );
}

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

#[test]
fn wake_affine_weight_is_biased_towards_the_waker() {
    unsafe {
        // Equal loads, task load 100: this = 1000+100 vs prev = 1000-100: prev wins without bias.
        assert!(!host_wake_affine_weight(
            1000, 1000, 100, 0, false, 117, false
        ));
        // this 1100*100 vs prev 900*108: still prev.
        assert!(!host_wake_affine_weight(
            1000, 1000, 100, 0, false, 117, true
        ));
        // A lighter waker CPU wins: (800+100)*100 < (1000-100)*108.
        assert!(host_wake_affine_weight(800, 1000, 100, 0, false, 117, true));
        // ... but not without WA_BIAS: 900 vs 900 is a tie, and ties go to prev.
        assert!(!host_wake_affine_weight(
            800, 1000, 100, 0, false, 117, false
        ));
        // sync: the waker's own load leaves this CPU; a waker heavier than its CPU's load
        // means this CPU.
        assert!(host_wake_affine_weight(
            500, 1000, 100, 600, true, 117, true
        ));
        assert!(host_wake_affine_weight(
            1000, 1000, 100, 300, true, 117, true
        ));
        // sync ties are broken towards the waker (prev_eff + 1).
        assert!(host_wake_affine_weight(100, 300, 100, 0, true, 100, false));
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

#[test]
fn the_dsq_scan_diagnostic_counts_ineligible_entities_ahead_of_the_pick() {
    // Heavy tasks run ahead of V with early deadlines; the pick (earliest eligible deadline) is
    // then behind them in deadline order, which is what a sorted-DSQ scan would walk through.
    let mut q = Q::new(defaults());
    let light: Vec<u32> = (0..3).map(|_| q.spawn(15)).collect();
    let heavy: Vec<u32> = (0..3).map(|_| q.spawn(88761)).collect();
    for &h in &heavy {
        let n = q.pick(false);
        q.run(n, 300_000);
        let _ = h;
    }
    let before = q.stat(lab_stat_LAB_ST_DSQ_SCAN_NODES);
    let picks = q.stat(lab_stat_LAB_ST_PICK);
    let n = q.pick(false);
    assert!(n != 0);
    let walked = q.stat(lab_stat_LAB_ST_DSQ_SCAN_NODES) - before;
    assert_eq!(q.stat(lab_stat_LAB_ST_PICK), picks + 1);
    // Brute force: entities in deadline order before the first eligible one, plus that one.
    let v = q.v();
    let mut order: Vec<u32> = check_tree(&q.cfs, &q.pool);
    order.retain(|&m| m != q.cfs.curr);
    let first_eligible = order.iter().position(|&m| !vgt(q.pool.se(m).vruntime, v));
    if let Some(k) = first_eligible {
        assert_eq!(walked, k as u64 + 1);
    }
    let _ = light;
}
