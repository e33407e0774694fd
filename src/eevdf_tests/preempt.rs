//! Slice protection and wakeup preemption (runqueue.h, pick.h).

use super::*;

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
