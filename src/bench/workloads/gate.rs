//! The gate of a composite workload: how its parts, which run at once (threads of the bench,
//! or child processes in their cgroups), start together and share one measurement window.
//!
//! The gate is a block of atomics in a shared memfd mapping (like a team's control block), so a
//! child process sees the same words. Each part marks its own steps in its slot: ready (its
//! tasks started), warm (its warm-up done: at once for a time-based part, after the warm-up pass
//! for messaging), measuring (a time-based part's window began), finished (a fixed-work part's
//! timed work done) and left (its run returned).
//! The controller ([`super::composite`]) releases every part at once (`go`), opens the window
//! for all (`PHASE_MEASURE`) and closes it (`PHASE_DONE`); `abort` stops every part when one
//! fails or the bench is interrupted.

use super::sys::{FUTEX_RECHECK, futex_wait, futex_wake};
use super::team::{PHASE_DONE, PHASE_MEASURE, Shared, ZeroInit};
use anyhow::{Result, bail};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// The most parts a composite may have.
pub const MAX_PARTS: usize = 8;

/// A part's steps, bits of its slot.
pub const READY: u32 = 1;
pub const WARM: u32 = 2;
pub const FINISHED: u32 = 4;
pub const LEFT: u32 = 8;
pub const MEASURING: u32 = 16;

/// Why a part stops when the gate is aborted.
pub const ABORTED: &str =
    "stopped: another part of the composite ended early, or the bench was interrupted";

#[repr(C)]
pub struct Gate {
    /// Bumped and woken at every step of a part: the controller waits on it.
    pub seq: AtomicU32,
    pub go: AtomicU32,
    pub phase: AtomicU32,
    pub abort: AtomicU32,
    pub state: [AtomicU32; MAX_PARTS],
}

// SAFETY: Gate holds only atomics.
unsafe impl ZeroInit for Gate {}

pub type SharedGate = Shared<Gate>;

impl Gate {
    /// Releases every part.
    pub fn open(&self) {
        self.go.store(1, Ordering::Release);
        futex_wake(&self.go);
    }

    pub fn set_phase(&self, p: u32) {
        self.phase.store(p, Ordering::Release);
        futex_wake(&self.phase);
    }

    /// Stops every part: whatever it waits for now fails with [`ABORTED`].
    pub fn abort(&self) {
        self.abort.store(1, Ordering::Release);
        self.open();
        self.set_phase(PHASE_DONE);
    }

    pub fn aborted(&self) -> bool {
        self.abort.load(Ordering::Acquire) != 0
    }

    /// How many of the first `n` parts have all of `bits`.
    pub fn count(&self, n: usize, bits: u32) -> usize {
        self.state[..n]
            .iter()
            .filter(|s| s.load(Ordering::Acquire) & bits == bits)
            .count()
    }

    pub fn state_of(&self, i: usize) -> u32 {
        self.state[i].load(Ordering::Acquire)
    }

    /// Waits (at most `max`) for the next step of any part.
    pub fn wait_step(&self, seen: u32, max: std::time::Duration) {
        futex_wait(&self.seq, seen, max);
    }

    pub fn seq(&self) -> u32 {
        self.seq.load(Ordering::Acquire)
    }
}

/// One part's side of the gate.
#[derive(Clone)]
pub struct PartGate {
    pub gate: Arc<SharedGate>,
    pub index: usize,
}

impl std::fmt::Debug for PartGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PartGate(part {})", self.index)
    }
}

impl PartGate {
    fn mark(&self, bit: u32) {
        self.gate.state[self.index].fetch_or(bit, Ordering::AcqRel);
        self.gate.seq.fetch_add(1, Ordering::AcqRel);
        futex_wake(&self.gate.seq);
    }

    /// Waits until `word` satisfies `pred`; fails once the gate is aborted.
    fn wait(&self, word: &AtomicU32, pred: impl Fn(u32) -> bool) -> Result<()> {
        loop {
            if self.gate.aborted() {
                bail!(ABORTED);
            }
            let v = word.load(Ordering::Acquire);
            if pred(v) {
                return Ok(());
            }
            futex_wait(word, v, FUTEX_RECHECK);
        }
    }

    /// Says the part's tasks are ready, and waits for the release of all parts.
    pub fn ready(&self) -> Result<()> {
        self.mark(READY);
        self.wait(&self.gate.go, |v| v != 0)
    }

    /// Says the part is warm (time-based parts: at once; messaging: after its warm-up pass).
    pub fn warm(&self) {
        self.mark(WARM);
    }

    /// Waits until the controller opens the window.
    pub fn wait_window(&self) -> Result<()> {
        self.wait(&self.gate.phase, |p| p >= PHASE_MEASURE)
    }

    /// Says a time-based part took its first reading of the window.
    pub fn measuring(&self) {
        self.mark(MEASURING);
    }

    /// Says a fixed-work part has done its timed work.
    pub fn finished(&self) {
        self.mark(FINISHED);
    }

    /// Says the part's run returned (whatever it returned).
    pub fn left(&self) {
        self.mark(LEFT);
    }

    /// True once the controller closed the window.
    pub fn window_over(&self) -> bool {
        self.gate.phase.load(Ordering::Acquire) >= PHASE_DONE
    }

    pub fn aborted(&self) -> bool {
        self.gate.aborted()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_mark_their_steps_and_an_abort_releases_every_wait() {
        let g = Arc::new(SharedGate::new().unwrap());
        let parts: Vec<PartGate> = (0..2)
            .map(|index| PartGate {
                gate: g.clone(),
                index,
            })
            .collect();
        let p0 = parts[0].clone();
        let t = std::thread::spawn(move || p0.ready().and_then(|_| p0.wait_window()));
        while g.count(2, READY) < 1 {
            g.wait_step(g.seq(), FUTEX_RECHECK);
        }
        assert_eq!(g.state_of(0), READY);
        parts[1].warm();
        assert_eq!(g.count(2, WARM), 1);
        g.abort();
        let e = t.join().unwrap().unwrap_err();
        assert_eq!(e.to_string(), ABORTED);
        assert!(parts[1].window_over() && parts[1].aborted());
    }
}
