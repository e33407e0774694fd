//! `bench --trace`: wakeup latency, run lengths before involuntary and voluntary switches, and
//! migrations per wakeup of the workload's tasks, from the sched tracepoints, per run and arm.
//!
//! A small BPF tracing program (trace.bpf.c) keeps cumulative histograms and counters; this
//! module loads it once per session, tells it which tasks to follow (the tids of the run's
//! tasks, or every task for external tools and commands) and reads it at the edges of each
//! measurement window, where the other counters are read ([`crate::bench::counters::Snapshot`]),
//! so that a run's trace covers exactly its window. [`hist`] has the bucket arithmetic and
//! [`report`] the per-arm summaries, the table block and the plot.
//!
//! The tracer runs on the bench's controller thread only (that is where windows open and
//! close); it stays loaded until the bench exits.

pub mod hist;
pub mod report;
mod skel;

use anyhow::{Context, Result};
use hist::Hist;
use libbpf_rs::MapCore;
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use serde::{Deserialize, Serialize};
use skel::{TraceSkel, TraceSkelBuilder};
use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, Ordering};

/// The histograms and counters, in the BPF program's order (`enum lab_trace_hist/count`).
const H_WAKEUP: usize = 0;
const H_RUN_INVOL: usize = 1;
const H_RUN_VOL: usize = 2;
const NR_HISTS: usize = 3;
const C_WAKEUPS: usize = 0;
const C_WAKE_MIGRATED: usize = 1;
const C_SW_VOL: usize = 2;
const C_SW_INVOL: usize = 3;
const C_EVENTS: usize = 4;
const C_COST_NS: usize = 5;
const C_WAKE_TO_WAKER: usize = 6;
const NR_COUNTS: usize = 7;

/// What the tracer saw in one window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceCounts {
    /// Wakeup → running, ns.
    pub wakeup: Hist,
    /// Run length before an involuntary switch out, ns.
    pub run_involuntary: Hist,
    /// Run length before a voluntary switch out (the task blocked), ns.
    pub run_voluntary: Hist,
    /// Wakeups that ran, those that ran on another CPU than before, and those of them that
    /// ran on the waker's CPU.
    pub wakeups: u64,
    pub wakeups_migrated: u64,
    #[serde(default)]
    pub wakeups_to_waker: u64,
    /// Switches out of the traced tasks, as the kernel counts nvcsw and nivcsw.
    pub switches_voluntary: u64,
    pub switches_involuntary: u64,
    /// Tracepoint hits on traced tasks, and the programs' own time on them (ns).
    pub events: u64,
    pub cost_ns: u64,
    /// The largest value of each histogram in the window (wakeup, involuntary, voluntary), ns.
    pub max_ns: [u64; NR_HISTS],
}

/// A cumulative reading of the tracer (the maxima since the previous reading).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceReading {
    hists: [Hist; NR_HISTS],
    counts: [u64; NR_COUNTS],
    max_ns: [u64; NR_HISTS],
}

impl TraceCounts {
    /// The window between two readings.
    pub fn between(a: &TraceReading, b: &TraceReading) -> TraceCounts {
        let c = |i: usize| b.counts[i].saturating_sub(a.counts[i]);
        TraceCounts {
            wakeup: b.hists[H_WAKEUP].since(&a.hists[H_WAKEUP]),
            run_involuntary: b.hists[H_RUN_INVOL].since(&a.hists[H_RUN_INVOL]),
            run_voluntary: b.hists[H_RUN_VOL].since(&a.hists[H_RUN_VOL]),
            wakeups: c(C_WAKEUPS),
            wakeups_migrated: c(C_WAKE_MIGRATED),
            wakeups_to_waker: c(C_WAKE_TO_WAKER),
            switches_voluntary: c(C_SW_VOL),
            switches_involuntary: c(C_SW_INVOL),
            events: c(C_EVENTS),
            cost_ns: c(C_COST_NS),
            max_ns: b.max_ns,
        }
    }
}

/// The loaded tracer and the tasks it follows now.
struct Tracer {
    skel: TraceSkel<'static>,
    tids: Vec<u32>,
}

thread_local! {
    static TRACER: RefCell<Option<Tracer>> = const { RefCell::new(None) };
}

/// Loads and attaches the tracer on this thread (the bench's controller). Needs root.
pub fn start() -> Result<()> {
    // The skeleton borrows its object for as long as it lives, which is the bench's lifetime.
    let obj = Box::leak(Box::new(MaybeUninit::uninit()));
    let open = TraceSkelBuilder::default()
        .open(obj)
        .context("cannot open the tracing program")?;
    let mut skel = open
        .load()
        .context("cannot load the tracing program (root and a kernel with BTF are needed)")?;
    skel.attach()
        .context("cannot attach to the sched_switch and sched_wakeup tracepoints")?;
    TRACER.with(|t| {
        *t.borrow_mut() = Some(Tracer {
            skel,
            tids: Vec::new(),
        })
    });
    Ok(())
}

/// Follows `tasks` (pid, tid) from now on, or every task when there are none, and reads the
/// tracer; None when it is not running.
pub fn reading(tasks: &[(i32, i32)]) -> Option<TraceReading> {
    TRACER.with(|t| {
        let mut t = t.borrow_mut();
        let tr = t.as_mut()?;
        if let Err(e) = tr.follow(tasks) {
            log::warn!("bench --trace: cannot set the traced tasks: {e:#}");
        }
        Some(tr.read())
    })
}

impl Tracer {
    fn follow(&mut self, tasks: &[(i32, i32)]) -> Result<()> {
        let mut tids: Vec<u32> = tasks.iter().map(|&(_, t)| t as u32).collect();
        tids.sort_unstable();
        tids.dedup();
        if tids == self.tids {
            return Ok(());
        }
        let map = &self.skel.maps.traced;
        for old in &self.tids {
            let _ = map.delete(&old.to_ne_bytes());
        }
        for tid in &tids {
            map.update(&tid.to_ne_bytes(), &[1u8], libbpf_rs::MapFlags::ANY)
                .with_context(|| format!("cannot follow task {tid}"))?;
        }
        let bss = self.skel.maps.bss_data.as_mut().context("no .bss")?;
        bss.trace_all = u32::from(tids.is_empty());
        self.tids = tids;
        Ok(())
    }

    fn read(&mut self) -> TraceReading {
        let Some(bss) = self.skel.maps.bss_data.as_mut() else {
            return TraceReading::default();
        };
        let mut r = TraceReading::default();
        for h in 0..NR_HISTS {
            for (b, slot) in bss.hist[h].iter().enumerate() {
                // SAFETY: the mapped .bss is live; BPF updates it concurrently, hence the
                // volatile read of each aligned u64.
                r.hists[h].0[b] = unsafe { std::ptr::read_volatile(slot) };
            }
            // SAFETY: an aligned u64 of the mapped .bss, which BPF updates atomically too.
            let max = unsafe { AtomicU64::from_ptr(&mut bss.max_ns[h]) };
            r.max_ns[h] = max.swap(0, Ordering::AcqRel);
        }
        // The program's counters are the ones named above (a type check, no copy).
        let counts: &[u64; NR_COUNTS] = &bss.counts;
        for (i, slot) in counts.iter().enumerate() {
            // SAFETY: as above.
            r.counts[i] = unsafe { std::ptr::read_volatile(slot) };
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_the_difference_of_two_readings() {
        let mut a = TraceReading::default();
        let mut b = TraceReading::default();
        a.hists[H_WAKEUP].0[20] = 3;
        b.hists[H_WAKEUP].0[20] = 10;
        b.hists[H_RUN_VOL].0[40] = 4;
        a.counts = [3, 1, 10, 2, 50, 5000, 0];
        b.counts = [10, 3, 14, 5, 80, 8000, 1];
        a.max_ns = [999, 999, 999];
        b.max_ns = [70, 0, 300];
        let w = TraceCounts::between(&a, &b);
        assert_eq!((w.wakeup.total(), w.run_voluntary.total()), (7, 4));
        assert_eq!(w.run_involuntary.total(), 0);
        assert_eq!(
            (w.wakeups, w.wakeups_migrated, w.wakeups_to_waker),
            (7, 2, 1)
        );
        assert_eq!((w.switches_voluntary, w.switches_involuntary), (4, 3));
        assert_eq!((w.events, w.cost_ns), (30, 3000));
        // The maxima are those since the first reading, which reset them.
        assert_eq!(w.max_ns, [70, 0, 300]);
        // Not started on this thread: no reading.
        assert!(reading(&[(1, 1)]).is_none());
    }
}
