//! The kernel behaviours that an earlier version of the lab got wrong, each pinned: yield,
//! set_next_entity(first), wakeup_preempt_fair()'s exits and protection handling, preempt_sync()'s
//! WF_RQ_SELECTED threshold, the hrtick arithmetic and the side-effect-free V read-out.

use super::*;

/// A queued entity that has not run, with a custom slice of @slice ns (0: the base slice).
fn wakee(q: &mut Q, slice: u64) -> u32 {
    let n = q.next_slot;
    q.next_slot += 1;
    *q.pool.se_mut(n) = lab_se {
        weight: 1024,
        pid: n as i32,
        custom_slice: (slice != 0) as u8,
        slice,
        ..Default::default()
    };
    q.enqueue(n, 0);
    n
}

fn wakeup(q: &mut Q, n: u32, wk: &lab_wakeup) -> i32 {
    let mut g = 0;
    let r = unsafe {
        host_wakeup_preempt(
            &mut q.cfs,
            q.pool.ptr(),
            n,
            wk,
            &q.p,
            q.st.as_mut_ptr(),
            &mut g,
        )
    };
    q.check();
    r
}

fn normal() -> lab_wakeup {
    lab_wakeup {
        wakee_normal: true,
        ..Default::default()
    }
}

#[test]
fn yield_pushes_the_deadline_one_request_and_keeps_the_slice() {
    let mut q = Q::new(defaults());
    let ids: Vec<u32> = (0..3).map(|_| q.spawn(335)).collect();
    let a = ids[0];
    // a runs less than the others, then again: it is the eligible running entity.
    q.run(a, 10_000);
    q.run(ids[1], 50_000);
    q.run(ids[2], 50_000);
    q.run(a, 1);
    assert!(q.eligible(a));
    // The base slice changed since a's request was issued: yield must not pick it up.
    let old_slice = q.pool.se(a).slice;
    q.p.base_slice = 3 * old_slice;
    let d = q.pool.se(a).deadline;
    assert!(unsafe { host_yield_entity(&mut q.cfs, q.pool.ptr(), q.st.as_mut_ptr()) });
    let se = q.pool.se(a);
    assert_eq!(se.vruntime, d, "vruntime jumps to the deadline");
    assert_eq!(se.slice, old_slice, "the slice is unchanged");
    let inv = table_inv_weight(335);
    let want = d + unsafe { host_calc_delta_fair(old_slice, 335, inv) };
    assert_eq!(
        se.deadline, want,
        "the deadline moves one request at this weight"
    );
}

#[test]
fn only_a_real_pick_starts_a_protection() {
    let mut q = Q::new(defaults());
    let a = q.spawn(1024);
    q.spawn(1024);
    assert_eq!(q.pick(true), a);
    q.run(a, 100_000);
    let vprot = q.pool.se(a).vprot;
    assert!(vgt(vprot, q.pool.se(a).vruntime), "a is protected");
    // A property change puts a back and runs it again without a pick (first = false).
    unsafe {
        host_put_prev_entity(&mut q.cfs, q.pool.ptr(), a, &q.p, q.st.as_mut_ptr());
        q.pool.se_mut(a).vprot = vprot + 12_345;
        host_set_next_entity(&mut q.cfs, q.pool.ptr(), a, false, &q.p);
    }
    assert_eq!(
        q.pool.se(a).vprot,
        vprot + 12_345,
        "a re-run keeps the protection"
    );
    unsafe {
        host_put_prev_entity(&mut q.cfs, q.pool.ptr(), a, &q.p, q.st.as_mut_ptr());
        host_set_next_entity(&mut q.cfs, q.pool.ptr(), a, true, &q.p);
    }
    assert_eq!(
        q.pool.se(a).vprot,
        q.pool.se(a).deadline,
        "a pick sets it anew"
    );
    q.check();
}

#[test]
fn early_wakeup_exits_leave_the_protection_alone_and_a_kept_pick_trims_it() {
    // PREEMPT_SHORT off, so that a short-slice wakee takes the ordinary path and its short slice
    // only shows as the queue's minimum slice, to which RUN_TO_PARITY trims the protection.
    let f = crate::features::FeatureSet::defaults().0 & !feat("PREEMPT_SHORT");
    let cases: [(&str, lab_wakeup, bool); 4] = [
        (
            "fork",
            lab_wakeup {
                fork: true,
                ..normal()
            },
            false,
        ),
        ("SCHED_BATCH wakee", lab_wakeup::default(), false),
        (
            "SCHED_IDLE wakee",
            lab_wakeup {
                wakee_idle: true,
                ..Default::default()
            },
            false,
        ),
        ("plain wakeup", normal(), true),
    ];
    for (what, wk, trims) in cases {
        let mut q = Q::new(params(f));
        let hog = q.spawn(1024);
        assert_eq!(q.pick(true), hog);
        q.run(hog, 100_000);
        let before = q.pool.se(hog).vprot;
        let n = wakee(&mut q, 100_000);
        let updates = q.stat(lab_stat_LAB_ST_PROTECT_UPDATE);
        assert_eq!(
            wakeup(&mut q, n, &wk),
            lab_preempt_LAB_PREEMPT_NO as i32,
            "{what}"
        );
        let after = q.pool.se(hog).vprot;
        if trims {
            assert!(
                vgt(before, after),
                "{what}: the kept pick trims the protection"
            );
            assert_eq!(
                q.stat(lab_stat_LAB_ST_PROTECT_UPDATE),
                updates + 1,
                "{what}"
            );
        } else {
            assert_eq!(after, before, "{what}: the protection is untouched");
            assert_eq!(q.stat(lab_stat_LAB_ST_PROTECT_UPDATE), updates, "{what}");
        }
    }
}

#[test]
fn only_a_short_slice_preemption_cancels_the_protection() {
    for short in [false, true] {
        let mut f = crate::features::FeatureSet::defaults().0;
        if !short {
            f &= !feat("PREEMPT_SHORT");
        }
        let mut q = Q::new(params(f));
        let a = q.spawn(1024);
        let b = q.spawn(1024);
        assert_eq!(q.pick(true), a);
        // a runs past V (ineligible) while still inside its protected request.
        q.run(a, 200_000);
        assert!(!q.eligible(a));
        let se = q.pool.se(a);
        assert!(vgt(se.vprot, se.vruntime), "a is still protected");
        let vprot = se.vprot;
        // A short-slice wakee has the earliest deadline and is eligible: it wins the pick.
        let n = wakee(&mut q, 100_000);
        let r = wakeup(&mut q, n, &normal());
        let se = q.pool.se(a);
        if short {
            assert_eq!(r, lab_preempt_LAB_PREEMPT_SHORT as i32);
            assert_eq!(
                se.vprot, se.vruntime,
                "PREEMPT_SHORT cancels a's protection"
            );
            assert_eq!(q.cfs.next, n, "and makes the wakee the next buddy");
        } else {
            assert_eq!(r, lab_preempt_LAB_PREEMPT_WAKEUP as i32);
            assert_eq!(
                se.vprot, vprot,
                "a pick-based preemption leaves it to the pick"
            );
            assert_ne!(q.cfs.next, n);
        }
        let _ = b;
    }
}

#[test]
fn preempt_sync_waits_a_quarter_of_migration_cost_only_after_select_cpu() {
    let f =
        (crate::features::FeatureSet::defaults().0 | feat("NEXT_BUDDY")) & !feat("PREEMPT_SHORT");
    for (selected, want) in [
        (true, lab_preempt_LAB_PREEMPT_SYNC),
        (false, lab_preempt_LAB_PREEMPT_NO),
    ] {
        let mut q = Q::new(params(f));
        let hog = q.spawn(1024);
        assert_eq!(q.pick(true), hog);
        q.run(hog, 100_000);
        let n = wakee(&mut q, 100_000);
        let wk = lab_wakeup {
            sync: true,
            rq_selected: selected,
            curr_ran_ns: 200_000, // between 500 us / 4 and 500 us
            ..normal()
        };
        assert_eq!(
            wakeup(&mut q, n, &wk),
            want as i32,
            "rq_selected {selected}"
        );
        assert_eq!(q.cfs.next, n, "the wakee is the next buddy either way");
    }
}

#[test]
fn hrtick_delay_is_the_wall_time_to_the_deadline_at_the_weight() {
    let se = |vruntime: u64, deadline: u64, weight: u32| lab_se {
        vruntime,
        deadline,
        weight,
        ..Default::default()
    };
    unsafe {
        assert_eq!(host_hrtick_delay_ns(&se(1000, 1_001_000, 1024)), 1_000_000);
        assert_eq!(
            host_hrtick_delay_ns(&se(0, 1_000_000, 335)),
            1_000_000 * 335 / 1024
        );
        assert_eq!(
            host_hrtick_delay_ns(&se(5000, 5000, 1024)),
            0,
            "at the deadline"
        );
        assert_eq!(
            host_hrtick_delay_ns(&se(u64::MAX - 10, 20, 1024)),
            31,
            "across the wrap"
        );
        assert_eq!(host_hrtick_delay_ns(&se(30, 20, 1024)), 0, "past it");
    }
}

#[test]
fn v_can_be_read_without_moving_the_origin() {
    let mut q = Q::new(defaults());
    for w in [15, 1024, 88761, 335] {
        q.spawn(w);
    }
    let c = q.pick(true);
    q.run(c, 3_000_000);
    let v0 = q.cfs.zero_vruntime;
    let curr = q.curr_ptr();
    let peek = unsafe { host_avg_vruntime_peek(&q.cfs, curr) };
    assert_eq!(q.cfs.zero_vruntime, v0, "peek leaves the origin");
    assert_eq!(q.v(), peek, "and agrees with avg_vruntime()");
    // Also with PARANOID_AVG's weight shift in the sums.
    q.cfs.sum_shift = 3;
    q.cfs.sum_w_vruntime = 0;
    q.cfs.sum_weight = 0;
    let curr = q.curr_ptr();
    let peek = unsafe { host_avg_vruntime_peek(&q.cfs, curr) };
    assert_eq!(q.v(), peek);
}
