//! The augmented RB tree (rbtree.h).

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

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

/// A tree that empties and fills again, as a CPU's does at every wakeup onto it when idle: the
/// shortcuts for a lone node (insert into an empty tree, erase of the only node) leave what the
/// general paths leave, and the tree grows and shrinks from there as before.
#[test]
fn rb_tree_empties_and_refills() {
    let mut rng = StdRng::seed_from_u64(11);
    let mut pool = Pool::new();
    let mut cfs = lab_cfs::default();
    for round in 0..200u64 {
        let size = 1 + (round % 5) as u32;
        let slots: Vec<u32> = (1..=size).map(|k| k + (round as u32 % 7) * 8).collect();
        for &slot in &slots {
            let se = pool.se_mut(slot);
            // Stale links from an earlier round must not matter.
            se.left = rng.random_range(0..64);
            se.right = rng.random_range(0..64);
            se.parent = rng.random_range(0..64);
            se.red = rng.random_range(0..2);
            se.deadline = rng.random_range(0..10_000_000);
            se.vruntime = rng.random_range(0..10_000_000);
            se.slice = rng.random_range(100_000..5_000_000);
            unsafe { host_rb_insert(&mut cfs, pool.ptr(), slot) };
            check_tree(&cfs, &pool);
        }
        assert_eq!(check_tree(&cfs, &pool).len(), size as usize);
        if size == 1 {
            let se = pool.se(slots[0]);
            assert_eq!(
                (cfs.root, se.red, se.left, se.right, se.parent),
                (slots[0], 0, 0, 0, 0)
            );
            assert_eq!(
                (se.min_vruntime, se.min_slice, se.max_slice),
                (se.vruntime, se.slice, se.slice)
            );
        }
        let mut order = slots.clone();
        order.sort_by_key(|_| rng.random::<u32>());
        for (k, &slot) in order.iter().enumerate() {
            unsafe { host_rb_erase(&mut cfs, pool.ptr(), slot) };
            assert_eq!(check_tree(&cfs, &pool).len(), order.len() - k - 1);
            let se = pool.se(slot);
            assert_eq!(
                (se.left, se.right, se.parent),
                (0, 0, 0),
                "erased {slot} keeps no links"
            );
        }
        assert_eq!(cfs.root, 0);
    }
}
