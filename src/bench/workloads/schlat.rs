//! `schlat`: wakeup and request latency of message/worker threads (schbench's model).
//!
//! Each messenger owns `workers` worker threads. A worker queues itself on its messenger and
//! sleeps; the messenger takes the whole queue, reads the clock once for the batch, hands that
//! timestamp to every worker and wakes them. Wakeup latency is a worker's time after waking minus
//! that single timestamp (so a waker preempted by its wakees shows up). The worker then serves a
//! request: it sleeps `sleep_us`, then multiplies two matrices of a private `footprint_kb`
//! footprint `ops` times while holding its CPU's lock (so being preempted or migrated mid-request
//! costs). Request latency runs from the request's start to its end; RPS counts requests.
//!
//! With `rps=R` (schbench's `-R`), each messenger instead issues R requests per second, dealt
//! round-robin to its workers (at most [`MAX_PENDING`] queued per worker, the rest dropped and
//! counted). Each request carries the time it was due; a worker that slept wakes for it, and
//! its wakeup latency is its time after waking minus that time; its request latency runs from
//! that time to the end of the work, so queueing behind earlier requests counts. Threads only.

use super::{
    Key, Measurement, MetricDef, Params, RunConfig, Team, Workload, futex_wait, futex_wake, key,
    latency_histogram, metric, mono_ns, pct_us, timed_window,
};
use crate::bench::stats::{Better, MeanKind};
use anyhow::{Result, bail};
use crossbeam::queue::SegQueue;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct Schlat {
    messengers: usize,
    workers: usize,
    /// Requests per second per messenger; 0: as fast as the workers go.
    rps: u64,
    sleep_us: u64,
    ops: u64,
    footprint_kb: u64,
    lock: bool,
}

const KEYS: &[Key] = &[
    key("messengers", "message threads, each with its own workers"),
    key(
        "workers",
        "worker threads per messenger (default: one per allowed CPU)",
    ),
    key("sleep_us", "a request's sleep before its work, µs"),
    key("ops", "matrix multiplications per request"),
    key("footprint_kb", "each worker's matrices, KiB (1..=65536)"),
    key("lock", "1: hold the CPU's lock during the work; 0: do not"),
    key(
        "rps",
        "requests/s per messenger (schbench -R); 0: as fast as workers go",
    ),
];

/// The most requests queued for one worker in rps mode (schbench's bound).
pub const MAX_PENDING: u32 = 128;
/// The longest a messenger sleeps before it looks at the clock again.
const MESSENGER_NAP: Duration = Duration::from_millis(5);

impl Schlat {
    pub fn new(spec: &str, quick: bool, ncpus: usize) -> Result<Self> {
        let p = Params::parse(spec, KEYS)?;
        let w = Schlat {
            messengers: p.u64("messengers", 1)? as usize,
            workers: p.u64("workers", ncpus as u64)? as usize,
            sleep_us: p.u64("sleep_us", 100)?,
            ops: p.u64("ops", 5)?,
            footprint_kb: p.u64("footprint_kb", if quick { 32 } else { 256 })?,
            lock: p.flag("lock", true)?,
            rps: p.u64("rps", 0)?,
        };
        if w.rps > 1_000_000 {
            bail!("schlat: rps must be 0..=1000000 per messenger");
        }
        if w.messengers == 0 || w.workers == 0 || w.messengers * (w.workers + 1) > 1024 {
            bail!("schlat: messengers and workers must be > 0, at most 1024 threads in all");
        }
        if w.footprint_kb == 0 || w.footprint_kb > 64 * 1024 {
            bail!("schlat: footprint_kb must be 1..=65536");
        }
        Ok(w)
    }
}

/// State shared by one run's threads.
struct Shared {
    queues: Vec<SegQueue<usize>>,
    /// Messenger doorbells (futex words).
    bells: Vec<AtomicU32>,
    /// Per worker: woken flag (futex word) and the batch timestamp.
    woken: Vec<AtomicU32>,
    stamp: Vec<AtomicU64>,
    cpu_locks: Vec<Mutex<()>>,
    hists: Mutex<(Histogram<u64>, Histogram<u64>)>,
    /// rps mode: per worker, the due times of its queued requests and how many there are.
    requests: Vec<SegQueue<u64>>,
    queued: Vec<AtomicU32>,
    /// rps mode: requests dropped in the window because their worker had MAX_PENDING queued.
    dropped: AtomicU64,
}

/// Naive n×n multiply, `c = a·b`, repeated `reps` times.
fn matmul(a: &[f64], b: &[f64], c: &mut [f64], n: usize, reps: u64) {
    for _ in 0..reps {
        for i in 0..n {
            for j in 0..n {
                let mut s = 0.0;
                for k in 0..n {
                    s += a[i * n + k] * b[k * n + j];
                }
                c[i * n + j] = s;
            }
        }
    }
}

fn current_cpu() -> usize {
    // SAFETY: no preconditions.
    let c = unsafe { libc::sched_getcpu() };
    if c < 0 { 0 } else { c as usize }
}

fn messenger(ctl: &super::Ctl, sh: &Shared, m: usize) {
    let mut batch = Vec::new();
    while !ctl.stopped() {
        while let Some(w) = sh.queues[m].pop() {
            batch.push(w);
        }
        if batch.is_empty() {
            sh.bells[m].store(0, Ordering::SeqCst);
            if sh.queues[m].is_empty() {
                futex_wait(&sh.bells[m], 0, Duration::from_millis(10));
            }
            continue;
        }
        let t0 = mono_ns();
        for &w in &batch {
            sh.stamp[w].store(t0, Ordering::Relaxed);
            sh.woken[w].store(1, Ordering::Release);
            futex_wake(&sh.woken[w]);
        }
        batch.clear();
    }
}

/// rps mode: issues `rps` requests a second, each stamped with the time it was due, round-robin
/// over the messenger's `workers` workers; a late messenger catches up at once.
fn rps_messenger(ctl: &super::Ctl, sh: &Shared, m: usize, workers: usize, rps: u64) {
    let period_ns = 1e9 / rps as f64;
    let start = mono_ns();
    let mut k: u64 = 0;
    while !ctl.stopped() {
        let due = start + (k as f64 * period_ns) as u64;
        let now = mono_ns();
        if now < due {
            std::thread::sleep(Duration::from_nanos(due - now).min(MESSENGER_NAP));
            continue;
        }
        let w = m * workers + (k % workers as u64) as usize;
        if sh.queued[w].load(Ordering::Acquire) < MAX_PENDING {
            sh.queued[w].fetch_add(1, Ordering::AcqRel);
            sh.requests[w].push(due);
            if sh.woken[w].swap(1, Ordering::AcqRel) == 0 {
                futex_wake(&sh.woken[w]);
            }
        } else if ctl.measuring() {
            sh.dropped.fetch_add(1, Ordering::Relaxed);
        }
        k += 1;
    }
}

/// One request's work: the sleep, then the multiplications (under the CPU's lock).
fn serve(sh: &Shared, mats: (&[f64], &[f64], &mut [f64]), cfg: (u64, u64, usize, bool)) {
    let (sleep_us, reps, n, lock) = cfg;
    let (a, b, c) = mats;
    std::thread::sleep(Duration::from_micros(sleep_us));
    if lock {
        let l = &sh.cpu_locks[current_cpu() % sh.cpu_locks.len()];
        let _g = l.lock().unwrap_or_else(|e| e.into_inner());
        matmul(a, b, c, n, reps);
    } else {
        matmul(a, b, c, n, reps);
    }
    std::hint::black_box(&c);
}

/// rps mode: serves the worker's queued requests in order, sleeping when there are none.
fn rps_worker(ctl: &super::Ctl, slot: usize, sh: &Shared, w: usize, cfg: (u64, u64, usize, bool)) {
    let n = cfg.2;
    let a = vec![1.0f64; n * n];
    let b = vec![0.5f64; n * n];
    let mut c = vec![0.0f64; n * n];
    let mut wake_h = latency_histogram();
    let mut req_h = latency_histogram();
    let mut woke_at: Option<u64> = None;
    while !ctl.stopped() {
        if let Some(due) = sh.requests[w].pop() {
            sh.queued[w].fetch_sub(1, Ordering::AcqRel);
            let wake_lat = woke_at.take().map(|t| t.saturating_sub(due));
            serve(sh, (&a, &b, &mut c), cfg);
            let req_lat = mono_ns().saturating_sub(due);
            if ctl.measuring() {
                if let Some(l) = wake_lat {
                    let _ = wake_h.record(l.max(1));
                }
                let _ = req_h.record(req_lat.max(1));
                ctl.add_ops(slot, 1);
            }
            continue;
        }
        sh.woken[w].store(0, Ordering::SeqCst);
        if !sh.requests[w].is_empty() {
            continue;
        }
        futex_wait(&sh.woken[w], 0, Duration::from_millis(20));
        if sh.woken[w].load(Ordering::Acquire) != 0 {
            woke_at = Some(mono_ns());
        }
    }
    let mut h = sh.hists.lock().unwrap_or_else(|e| e.into_inner());
    let _ = h.0.add(&wake_h);
    let _ = h.1.add(&req_h);
}

#[allow(clippy::too_many_arguments)]
fn worker(
    ctl: &super::Ctl,
    slot: usize,
    sh: &Shared,
    m: usize,
    w: usize,
    cfg: (u64, u64, usize, bool),
) {
    let n = cfg.2;
    let a = vec![1.0f64; n * n];
    let b = vec![0.5f64; n * n];
    let mut c = vec![0.0f64; n * n];
    let mut wake_h = latency_histogram();
    let mut req_h = latency_histogram();
    while !ctl.stopped() {
        sh.woken[w].store(0, Ordering::SeqCst);
        sh.queues[m].push(w);
        sh.bells[m].store(1, Ordering::SeqCst);
        futex_wake(&sh.bells[m]);
        while sh.woken[w].load(Ordering::Acquire) == 0 && !ctl.stopped() {
            futex_wait(&sh.woken[w], 0, Duration::from_millis(20));
        }
        if ctl.stopped() {
            break;
        }
        let woke = mono_ns();
        let wake_lat = woke.saturating_sub(sh.stamp[w].load(Ordering::Relaxed));
        serve(sh, (&a, &b, &mut c), cfg);
        let req_lat = mono_ns().saturating_sub(woke);
        if ctl.measuring() {
            let _ = wake_h.record(wake_lat.max(1));
            let _ = req_h.record(req_lat.max(1));
            ctl.add_ops(slot, 1);
        }
    }
    let mut h = sh.hists.lock().unwrap_or_else(|e| e.into_inner());
    let _ = h.0.add(&wake_h);
    let _ = h.1.add(&req_h);
}

const PCTS: [(&str, f64); 4] = [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)];

impl Workload for Schlat {
    fn name(&self) -> &'static str {
        "schlat"
    }

    fn describe(&self) -> String {
        format!(
            "{} messenger(s) × {} workers, requests of {} µs sleep + {}× matmul over {} KB{}",
            self.messengers,
            self.workers,
            self.sleep_us,
            self.ops,
            self.footprint_kb,
            if self.lock {
                " under a per-CPU lock"
            } else {
                ""
            }
        ) + &if self.rps > 0 {
            format!(", {} requests/s per messenger", self.rps)
        } else {
            String::new()
        }
    }

    fn keys(&self) -> &'static [Key] {
        KEYS
    }

    fn params(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("messengers".into(), self.messengers.to_string()),
            ("workers".into(), self.workers.to_string()),
            ("sleep_us".into(), self.sleep_us.to_string()),
            ("ops".into(), self.ops.to_string()),
            ("footprint_kb".into(), self.footprint_kb.to_string()),
            ("lock".into(), (self.lock as u8).to_string()),
            ("rps".into(), self.rps.to_string()),
        ])
    }

    fn metrics(&self) -> Vec<MetricDef> {
        vec![
            metric("rps", "requests/s", Better::Higher, MeanKind::Harmonic),
            metric("wakeup_p50_us", "µs", Better::Lower, MeanKind::Median),
            metric("wakeup_p90_us", "µs", Better::Lower, MeanKind::Median),
            metric("wakeup_p99_us", "µs", Better::Lower, MeanKind::Median),
            metric("wakeup_p99.9_us", "µs", Better::Lower, MeanKind::Median),
            metric("request_p50_us", "µs", Better::Lower, MeanKind::Median),
            metric("request_p90_us", "µs", Better::Lower, MeanKind::Median),
            metric("request_p99_us", "µs", Better::Lower, MeanKind::Median),
            metric("request_p99.9_us", "µs", Better::Lower, MeanKind::Median),
        ]
    }

    fn run(&self, rc: &RunConfig) -> Result<Measurement> {
        if rc.processes {
            bail!("schlat runs as threads only");
        }
        let nworkers = self.messengers * self.workers;
        let ncpu_locks = super::allowed_cpus().iter().max().copied().unwrap_or(0) + 1;
        let sh = Arc::new(Shared {
            queues: (0..self.messengers).map(|_| SegQueue::new()).collect(),
            bells: (0..self.messengers).map(|_| AtomicU32::new(0)).collect(),
            woken: (0..nworkers).map(|_| AtomicU32::new(0)).collect(),
            stamp: (0..nworkers).map(|_| AtomicU64::new(0)).collect(),
            cpu_locks: (0..ncpu_locks).map(|_| Mutex::new(())).collect(),
            hists: Mutex::new((latency_histogram(), latency_histogram())),
            requests: (0..nworkers).map(|_| SegQueue::new()).collect(),
            queued: (0..nworkers).map(|_| AtomicU32::new(0)).collect(),
            dropped: AtomicU64::new(0),
        });
        // Three n×n matrices of f64 fill the footprint.
        let n = (((self.footprint_kb * 1024) as f64 / 24.0).sqrt() as usize).max(2);
        let cfg = (self.sleep_us, self.ops, n, self.lock);
        let mut team = Team::new()?;
        let mut worker_slots = Vec::new();
        let (workers, rps) = (self.workers, self.rps);
        for m in 0..self.messengers {
            let s = sh.clone();
            if rps > 0 {
                team.spawn_thread(move |ctl, _| rps_messenger(ctl, &s, m, workers, rps))?;
            } else {
                team.spawn_thread(move |ctl, _| messenger(ctl, &s, m))?;
            }
        }
        for m in 0..self.messengers {
            for i in 0..self.workers {
                let s = sh.clone();
                let w = m * self.workers + i;
                worker_slots.push(if rps > 0 {
                    team.spawn_thread(move |ctl, slot| rps_worker(ctl, slot, &s, w, cfg))?
                } else {
                    team.spawn_thread(move |ctl, slot| worker(ctl, slot, &s, m, w, cfg))?
                });
            }
        }
        let tasks = team.wait_ready(Duration::from_secs(30))?;
        let win = timed_window(&mut team, &tasks, rc, &worker_slots)?;
        let reqs: u64 = worker_slots.iter().map(|&s| win.ops[s]).sum();
        let mut m = Measurement {
            ops: reqs,
            elapsed_s: win.elapsed_s,
            samples: win.samples,
            counters: win.counters,
            ..Default::default()
        };
        if win.interrupted {
            m.invalid.push("interrupted".into());
        }
        if reqs == 0 {
            m.invalid.push("no request completed in the window".into());
            return Ok(m);
        }
        let h = sh.hists.lock().unwrap_or_else(|e| e.into_inner());
        m.metrics.insert("rps".into(), reqs as f64 / win.elapsed_s);
        for (label, q) in PCTS {
            m.metrics
                .insert(format!("wakeup_{label}_us"), pct_us(&h.0, q));
            m.metrics
                .insert(format!("request_{label}_us"), pct_us(&h.1, q));
        }
        m.extra.insert(
            "wakeup_max_us".into(),
            serde_json::json!(h.0.max() as f64 / 1000.0),
        );
        m.extra.insert(
            "request_max_us".into(),
            serde_json::json!(h.1.max() as f64 / 1000.0),
        );
        m.extra.insert("matrix_n".into(), serde_json::json!(n));
        if self.rps > 0 {
            m.extra.insert(
                "target_rps".into(),
                serde_json::json!(self.rps * self.messengers as u64),
            );
            m.extra.insert(
                "dropped".into(),
                serde_json::json!(sh.dropped.load(Ordering::Relaxed)),
            );
        }
        // schbench's "sched delay": run_delay per timeslice, all threads together.
        if m.counters.timeslices > 0 {
            m.extra.insert(
                "sched_delay_us".into(),
                serde_json::json!(
                    m.counters.run_delay_ns as f64 / m.counters.timeslices as f64 / 1000.0
                ),
            );
        }
        super::pingpong::per_op_extra(&mut m.extra, &m.counters, reqs);
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::workloads::testutil::quick_rc;

    #[test]
    fn schlat_reports_ordered_percentiles() {
        let w = Schlat::new("workers=2:footprint_kb=8:sleep_us=50", true, 2).unwrap();
        let m = w.run(&quick_rc()).unwrap();
        assert!(m.invalid.is_empty(), "{:?}", m.invalid);
        assert!(m.metrics["rps"] > 0.0);
        for kind in ["wakeup", "request"] {
            let p = |l: &str| m.metrics[&format!("{kind}_{l}_us")];
            assert!(p("p50") <= p("p90") && p("p90") <= p("p99") && p("p99") <= p("p99.9"));
        }
        // A request sleeps, so it takes at least sleep_us.
        assert!(m.metrics["request_p50_us"] >= 50.0);
        assert!(m.counters.voluntary > 0);
    }

    #[test]
    fn rps_mode_paces_requests_and_times_them_from_their_due_time() {
        let w = Schlat::new("workers=2:footprint_kb=8:sleep_us=50:rps=400", true, 2).unwrap();
        assert!(w.describe().contains("400 requests/s per messenger"));
        let m = w.run(&quick_rc()).unwrap();
        assert!(m.invalid.is_empty(), "{:?}", m.invalid);
        // Requests are issued at 400/s: the workers cannot complete more than were issued
        // (the window's edges allow a few more than 400 × its length).
        let issued_max = 400.0 * m.elapsed_s + 2.0 * MAX_PENDING as f64;
        assert!(m.ops > 0 && (m.ops as f64) <= issued_max, "{} ops", m.ops);
        for kind in ["wakeup", "request"] {
            let p = |l: &str| m.metrics[&format!("{kind}_{l}_us")];
            assert!(p("p50") <= p("p90") && p("p90") <= p("p99") && p("p99") <= p("p99.9"));
        }
        assert!(m.metrics["request_p50_us"] >= 50.0);
        assert_eq!(m.extra["target_rps"], 400);
        assert!(Schlat::new("rps=2000000", true, 2).is_err());
    }
}
