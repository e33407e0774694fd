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

mod arithmetic;
mod deviations;
mod groups;
mod load;
mod pelt;
mod preempt;
mod runqueue;
mod tree;

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

/// The nice table's inverse weight for a table weight (as set_load_weight() sets it), else 0
/// (derived by calc_delta_fair(), as __update_inv_weight() does).
fn table_inv_weight(weight: u32) -> u32 {
    (100..140)
        .find(|&prio| unsafe { host_task_weight(prio, false) } == weight)
        .map_or(0, |prio| unsafe { host_task_inv_weight(prio, false) })
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

/// fair.c's __calc_delta(delta, NICE_0_LOAD, lw) with lw->inv_weight = @inv, in 128 bits:
/// fact = 1024 * inv brought under 2^32 by dropping low bits, each lowering the shift of 32.
fn kernel_calc_delta(delta: u64, inv: u32) -> u64 {
    let mut fact = 1024u64 * inv as u64;
    let mut shift = 32u32;
    while fact >> 32 != 0 {
        fact >>= 1;
        shift -= 1;
    }
    ((delta as u128 * fact as u128) >> shift) as u64
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
        nr_migrate: 32,
        preempt: 2,
        cgroup_mode: 2,
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
            inv_weight: table_inv_weight(weight),
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
            unsafe { host_set_next_entity(&mut self.cfs, self.pool.ptr(), n, true, &self.p) };
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
