//! Placement, picks, delayed dequeue and reweight on whole queues (runqueue.h, pick.h).

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

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
            host_reweight_entity(
                &mut q.cfs,
                q.pool.ptr(),
                target,
                w,
                0,
                &q.p,
                q.st.as_mut_ptr(),
            )
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
                            0,
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

#[test]
fn a_pick_finalizes_a_bounded_number_of_ghosts_and_says_so() {
    let mut q = Q::new(defaults());
    let runner = q.spawn(1024);
    let sleepers: Vec<u32> = (0..20).map(|_| q.spawn(1024)).collect();
    // Each sleeper runs past V and sleeps ineligible: a ghost.
    for &s in &sleepers {
        q.run(s, 6_000_000);
        assert!(
            !q.dequeue(s, LAB_DEQ_SLEEP as i32),
            "slot {s} should be a ghost"
        );
    }
    assert_eq!(q.cfs.nr_delayed, 20);
    // The runner alone moves V past the ghosts, whose deadlines are then the earliest.
    for _ in 0..200 {
        q.run(runner, 4_000_000);
    }
    assert!(sleepers.iter().all(|&s| q.eligible(s)));
    let first = q.pick(true);
    assert_eq!(first, LAB_PICK_RETRY, "more ghosts than one pick finalizes");
    assert_eq!(q.stat(lab_stat_LAB_ST_GHOST_PICKED), LAB_PICK_GHOSTS as u64);
    assert_eq!(q.cfs.nr_delayed, 20 - LAB_PICK_GHOSTS);
    // The next pick finalizes the rest and finds the runner.
    assert_eq!(q.pick(true), runner);
    assert_eq!(q.cfs.nr_delayed, 0);
    assert_eq!(q.stat(lab_stat_LAB_ST_GHOST_PICKED), 20);
}

#[test]
fn an_unfinalized_pick_stops_at_the_first_ghost_and_changes_nothing() {
    // ops.enqueue's pick (lab_enqueue_repick() finalizes and picks again).
    let mut q = Q::new(defaults());
    let runner = q.spawn(1024);
    let sleeper = q.spawn(1024);
    q.run(sleeper, 6_000_000);
    assert!(!q.dequeue(sleeper, LAB_DEQ_SLEEP as i32), "a ghost");
    for _ in 0..50 {
        q.run(runner, 4_000_000);
    }
    assert!(q.eligible(sleeper));
    let n = unsafe {
        host_pick_next_entity_unfinalized(&mut q.cfs, q.pool.ptr(), true, &q.p, q.st.as_mut_ptr())
    };
    q.check();
    assert_eq!(n, LAB_PICK_RETRY);
    assert_eq!(q.cfs.nr_delayed, 1, "the ghost stays");
    assert_eq!(q.stat(lab_stat_LAB_ST_GHOST_PICKED), 0);
    // The finalizing pick then finds the runner, as one pick_next_entity() does.
    assert_eq!(q.pick(true), runner);
    assert_eq!(q.cfs.nr_delayed, 0);
}
