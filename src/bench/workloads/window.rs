//! The measurement window of time-based workloads: release the team, let it warm up, read
//! every task's counters at both edges of the window, sample the rate in between, and stop.
//! As a part of a composite ([`RunConfig::gate`]) the controller of the composite releases the
//! team and opens and closes the window, for all parts at once.
//!
//! Workloads that do a fixed amount of work (messaging, the external tools) time themselves
//! and do not use this.

use super::RunConfig;
use super::team::{PHASE_DONE, PHASE_MEASURE, Team};
use crate::bench::counters::{Counters, Snapshot};
use anyhow::{Result, bail};
use std::time::{Duration, Instant};

/// How often a sleep of the controller checks for an interrupt.
const INTERRUPT_POLL: Duration = Duration::from_millis(10);
/// Rate samples per window, at most one a [`MAX_SAMPLE_STEP`].
const SAMPLES_PER_WINDOW: u32 = 5;
const MAX_SAMPLE_STEP: Duration = Duration::from_secs(1);
/// How long the tasks may take to stop after the window.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// What the controller saw in the window.
pub struct Window {
    pub elapsed_s: f64,
    /// Per-slot operations in the window.
    pub ops: Vec<u64>,
    pub counters: Counters,
    pub samples: Vec<f64>,
    pub interrupted: bool,
}

/// Sleeps `d` in small steps, or until a composite's window is closed; false when the run is
/// to stop (interrupted, or the composite stopped).
fn sleep_checked(d: Duration, rc: &RunConfig) -> bool {
    let end = Instant::now() + d;
    loop {
        if rc.stopping() {
            return false;
        }
        let now = Instant::now();
        if now >= end || rc.gate.as_ref().is_some_and(|g| g.window_over()) {
            return true;
        }
        std::thread::sleep((end - now).min(INTERRUPT_POLL));
    }
}

/// Releases the team, lets it warm up, measures one window and stops the team. `op_slots`
/// are the slots whose ops make the per-second samples.
pub fn timed_window(
    team: &mut Team,
    tasks: &[(i32, i32)],
    rc: &RunConfig,
    op_slots: &[usize],
) -> Result<Window> {
    let mut interrupted = match &rc.gate {
        None => {
            team.go();
            !sleep_checked(rc.warmup, rc)
        }
        Some(g) => {
            g.ready()?;
            team.go();
            g.warm();
            g.wait_window()?;
            false
        }
    };
    let s0 = Snapshot::take(tasks);
    let o0 = team.ops_each();
    let t0 = Instant::now();
    team.ctl.set_phase(PHASE_MEASURE);
    if let Some(g) = &rc.gate {
        g.measuring();
    }
    let step = (rc.window / SAMPLES_PER_WINDOW).min(MAX_SAMPLE_STEP);
    let mut samples = Vec::new();
    let mut last = (t0, team.ops(op_slots.iter().copied()));
    let over = || match &rc.gate {
        None => t0.elapsed() >= rc.window,
        Some(g) => g.window_over(),
    };
    while !interrupted && !over() {
        let left = match &rc.gate {
            None => rc.window.saturating_sub(t0.elapsed()),
            Some(_) => step,
        };
        interrupted = !sleep_checked(step.min(left), rc);
        let now = (Instant::now(), team.ops(op_slots.iter().copied()));
        let dt = (now.0 - last.0).as_secs_f64();
        if dt > 0.0 && !interrupted {
            samples.push((now.1 - last.1) as f64 / dt);
        }
        last = now;
    }
    team.ctl.set_phase(PHASE_DONE);
    let o1 = team.ops_each();
    let elapsed_s = t0.elapsed().as_secs_f64();
    let s1 = Snapshot::take(tasks);
    team.finish(STOP_TIMEOUT)?;
    if rc.gate.as_ref().is_some_and(|g| g.aborted()) {
        bail!(super::gate::ABORTED);
    }
    Ok(Window {
        elapsed_s,
        ops: o1.iter().zip(&o0).map(|(b, a)| b - a).collect(),
        counters: Counters::delta(&s0, &s1),
        samples,
        interrupted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::workloads::testutil::quick_rc;

    #[test]
    fn a_team_of_threads_starts_stops_and_exits() {
        let mut team = Team::new().unwrap();
        for _ in 0..3 {
            team.spawn_thread(|ctl, slot| {
                while !ctl.stopped() {
                    ctl.add_ops(slot, 1);
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
            .unwrap();
        }
        let tasks = team.wait_ready(Duration::from_secs(10)).unwrap();
        assert_eq!(tasks.len(), 3);
        assert!(tasks.iter().all(|&(p, t)| p > 0 && t > 0));
        let w = timed_window(&mut team, &tasks, &quick_rc(), &[0, 1, 2]).unwrap();
        assert!(w.ops.iter().all(|&o| o > 0), "{:?}", w.ops);
        assert_eq!(w.counters.tasks, 3);
        assert!(w.counters.voluntary > 0);
    }
}
