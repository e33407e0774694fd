//! `hog-probe`: how late periodic sleepers wake while CPU hogs run (cyclictest with
//! SCHED_OTHER threads, plus massive_intr-like hogs).
//!
//! `hogs` spinning threads per CPU compete with `probes` threads that sleep to an absolute
//! deadline every `interval_us`; lateness is the wake time minus the deadline. A probe may burn
//! `work_us` after each wake, and may ask for a custom slice (`slice_us`, through
//! `sched_setattr`'s sched_runtime) to exercise PREEMPT_SHORT. Also reports the hogs' iteration
//! rate and how evenly it is shared (Jain's index). Threads only.

use super::{
    Ctl, Key, Measurement, MetricDef, Params, RunConfig, Team, Workload, key, latency_histogram,
    metric, mono_ns, pct_us, timed_window,
};
use crate::bench::stats::{Better, MeanKind};
use anyhow::{Result, bail};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct HogProbe {
    hogs_per_cpu: usize,
    probes: usize,
    interval_us: u64,
    work_us: u64,
    slice_us: u64,
    hog_nice: i32,
}

const KEYS: &[Key] = &[
    key("hogs", "spinning threads per allowed CPU"),
    key("probes", "periodic sleepers (default: one per allowed CPU)"),
    key("interval_us", "a probe's period, µs (10..=1000000)"),
    key(
        "work_us",
        "CPU time a probe burns after each wake, µs (below interval_us)",
    ),
    key(
        "slice_us",
        "the probes' requested slice, µs (0: the default; 100..=100000)",
    ),
    key("hog_nice", "the hogs' nice level (-20..=19)"),
];

impl HogProbe {
    pub fn new(spec: &str, ncpus: usize) -> Result<Self> {
        let p = Params::parse(spec, KEYS)?;
        let hog_nice: i32 = p
            .str("hog_nice", "0")
            .parse()
            .map_err(|_| anyhow::anyhow!("hog-probe: hog_nice must be -20..=19"))?;
        let w = HogProbe {
            hogs_per_cpu: p.u64("hogs", 1)? as usize,
            probes: p.u64("probes", ncpus as u64)? as usize,
            interval_us: p.u64("interval_us", 1000)?,
            work_us: p.u64("work_us", 0)?,
            slice_us: p.u64("slice_us", 0)?,
            hog_nice,
        };
        if w.probes == 0 || w.probes + w.hogs_per_cpu * ncpus > 1024 {
            bail!("hog-probe: probes must be > 0, at most 1024 threads in all");
        }
        if !(10..=1_000_000).contains(&w.interval_us) || w.work_us >= w.interval_us {
            bail!("hog-probe: interval_us must be 10..=1000000 and work_us below it");
        }
        if !(-20..=19).contains(&w.hog_nice) {
            bail!("hog-probe: hog_nice must be -20..=19");
        }
        if w.slice_us != 0 && !(100..=100_000).contains(&w.slice_us) {
            bail!("hog-probe: slice_us must be 0 (default) or 100..=100000");
        }
        Ok(w)
    }
}

/// Spins, publishing its iteration count, until stopped.
pub fn hog(ctl: &Ctl, slot: usize) {
    let mut n: u64 = 0;
    let mut x: u64 = 1;
    while !ctl.stopped() {
        for _ in 0..1024 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        n += 1024;
        ctl.slots[slot].ops.store(n, Ordering::Relaxed);
    }
}

/// Sets the calling thread's nice value.
pub fn set_nice(nice: i32) -> std::io::Result<()> {
    // SAFETY: setpriority on our own thread id.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, super::gettid() as libc::id_t, nice) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// `struct sched_attr` (SCHED_ATTR_SIZE_VER1).
#[repr(C)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
    util_min: u32,
    util_max: u32,
}

/// Gives the calling SCHED_OTHER thread a custom slice (kernel 6.12+: sched_runtime).
pub fn set_custom_slice(slice_ns: u64) -> std::io::Result<()> {
    // SAFETY: getpriority has no preconditions (errno is not checked: nice may be -1).
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, super::gettid() as libc::id_t) };
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        policy: libc::SCHED_OTHER as u32,
        flags: 0,
        nice,
        priority: 0,
        runtime: slice_ns,
        deadline: 0,
        period: 0,
        util_min: 0,
        util_max: 0,
    };
    // SAFETY: attr is a valid sched_attr of the size it states.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn sleep_until(ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: ts is valid; an EINTR just ends this sleep early (lateness stays correct).
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

fn burn(ns: u64) {
    let end = mono_ns() + ns;
    while mono_ns() < end {
        std::hint::spin_loop();
    }
}

/// Wakes every `interval_ns` at an absolute deadline, recording lateness while measuring.
/// Counts wakes in `ops` and missed periods in `aux` (window only).
pub fn probe(ctl: &Ctl, slot: usize, interval_ns: u64, work_ns: u64, h: &mut Histogram<u64>) {
    let mut next = mono_ns() + interval_ns;
    while !ctl.stopped() {
        sleep_until(next);
        let now = mono_ns();
        if now < next {
            continue; // woken early by a signal
        }
        if ctl.measuring() {
            let _ = h.record((now - next).max(1));
            ctl.add_ops(slot, 1);
        }
        if work_ns > 0 {
            burn(work_ns);
        }
        next += interval_ns;
        let now = mono_ns();
        if next <= now {
            let skipped = (now - next) / interval_ns + 1;
            next += skipped * interval_ns;
            if ctl.measuring() {
                ctl.slots[slot].aux.fetch_add(skipped, Ordering::Relaxed);
            }
        }
    }
}

/// Jain's fairness index of a set of allocations: (Σx)² / (n·Σx²), 1 = perfectly even.
pub fn jain(x: &[f64]) -> Option<f64> {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    (s2 > 0.0).then(|| s * s / (x.len() as f64 * s2))
}

impl Workload for HogProbe {
    fn name(&self) -> &'static str {
        "hog-probe"
    }

    fn describe(&self) -> String {
        format!(
            "{} hog(s) per CPU (nice {}), {} probe(s) every {} µs{}{}",
            self.hogs_per_cpu,
            self.hog_nice,
            self.probes,
            self.interval_us,
            if self.work_us > 0 {
                format!(" + {} µs work", self.work_us)
            } else {
                String::new()
            },
            if self.slice_us > 0 {
                format!(", probe slice {} µs", self.slice_us)
            } else {
                String::new()
            }
        )
    }

    fn keys(&self) -> &'static [Key] {
        KEYS
    }

    fn params(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("hogs".into(), self.hogs_per_cpu.to_string()),
            ("probes".into(), self.probes.to_string()),
            ("interval_us".into(), self.interval_us.to_string()),
            ("work_us".into(), self.work_us.to_string()),
            ("slice_us".into(), self.slice_us.to_string()),
            ("hog_nice".into(), self.hog_nice.to_string()),
        ])
    }

    fn metrics(&self) -> Vec<MetricDef> {
        vec![
            metric("lateness_p99_us", "µs", Better::Lower, MeanKind::Median),
            metric("lateness_p50_us", "µs", Better::Lower, MeanKind::Median),
            metric("lateness_p99.9_us", "µs", Better::Lower, MeanKind::Median),
            metric("lateness_max_us", "µs", Better::Lower, MeanKind::Median),
            metric(
                "hog_iters_per_s",
                "iter/s",
                Better::Higher,
                MeanKind::Harmonic,
            ),
            metric("hog_fairness", "Jain", Better::Higher, MeanKind::Arithmetic),
        ]
    }

    fn run(&self, rc: &RunConfig) -> Result<Measurement> {
        if rc.processes {
            bail!("hog-probe runs as threads only");
        }
        let nhogs = self.hogs_per_cpu * super::allowed_cpus().len();
        let hist = Arc::new(Mutex::new(latency_histogram()));
        let errors = Arc::new(Mutex::new(Vec::<String>::new()));
        let mut team = Team::new()?;
        let mut hogs = Vec::new();
        let mut probes = Vec::new();
        for _ in 0..nhogs {
            let (nice, errs) = (self.hog_nice, errors.clone());
            hogs.push(team.spawn_thread(move |ctl, slot| {
                if nice != 0
                    && let Err(e) = set_nice(nice)
                {
                    errs.lock()
                        .unwrap()
                        .push(format!("cannot set nice {nice}: {e}"));
                }
                hog(ctl, slot)
            })?);
        }
        for _ in 0..self.probes {
            let (h, errs) = (hist.clone(), errors.clone());
            let (interval, work, slice) = (
                self.interval_us * 1000,
                self.work_us * 1000,
                self.slice_us * 1000,
            );
            probes.push(team.spawn_thread(move |ctl, slot| {
                if slice > 0
                    && let Err(e) = set_custom_slice(slice)
                {
                    errs.lock()
                        .unwrap()
                        .push(format!("cannot set a {slice} ns slice: {e}"));
                }
                let mut mine = latency_histogram();
                probe(ctl, slot, interval, work, &mut mine);
                let _ = h.lock().unwrap().add(&mine);
            })?);
        }
        let tasks = team.wait_ready(Duration::from_secs(30))?;
        let win = timed_window(&mut team, &tasks, rc, &hogs)?;
        let wakes: u64 = probes.iter().map(|&s| win.ops[s]).sum();
        let missed: u64 = probes
            .iter()
            .map(|&s| team.ctl.slots[s].aux.load(Ordering::Relaxed))
            .sum();
        let mut m = Measurement {
            ops: wakes,
            elapsed_s: win.elapsed_s,
            samples: win.samples,
            counters: win.counters,
            ..Default::default()
        };
        m.invalid.extend(errors.lock().unwrap().drain(..));
        if win.interrupted {
            m.invalid.push("interrupted".into());
        }
        if wakes == 0 {
            m.invalid.push("no probe woke in the window".into());
            return Ok(m);
        }
        let h = hist.lock().unwrap();
        m.metrics.insert("lateness_p50_us".into(), pct_us(&h, 0.5));
        m.metrics.insert("lateness_p99_us".into(), pct_us(&h, 0.99));
        m.metrics
            .insert("lateness_p99.9_us".into(), pct_us(&h, 0.999));
        m.metrics
            .insert("lateness_max_us".into(), h.max() as f64 / 1000.0);
        let per_hog: Vec<f64> = hogs.iter().map(|&s| win.ops[s] as f64).collect();
        m.metrics.insert(
            "hog_iters_per_s".into(),
            per_hog.iter().sum::<f64>() / win.elapsed_s,
        );
        if let Some(j) = jain(&per_hog) {
            m.metrics.insert("hog_fairness".into(), j);
        }
        m.extra
            .insert("probe_wakes".into(), serde_json::json!(wakes));
        m.extra
            .insert("missed_periods".into(), serde_json::json!(missed));
        super::pingpong::per_op_extra(&mut m.extra, &m.counters, wakes);
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::workloads::testutil::quick_rc;

    #[test]
    fn jain_index_by_hand() {
        assert_eq!(jain(&[1.0, 1.0, 1.0]), Some(1.0));
        // (1+3)² / (2·(1+9)) = 16/20.
        assert!((jain(&[1.0, 3.0]).unwrap() - 0.8).abs() < 1e-12);
        assert_eq!(jain(&[0.0, 0.0]), None);
    }

    #[test]
    fn hog_probe_measures_lateness_and_hog_progress() {
        let w = HogProbe::new("probes=1:interval_us=2000", 2).unwrap();
        let m = w.run(&quick_rc()).unwrap();
        assert!(m.invalid.is_empty(), "{:?}", m.invalid);
        assert!(m.ops > 0);
        assert!(m.metrics["lateness_p50_us"] <= m.metrics["lateness_p99_us"]);
        assert!(m.metrics["lateness_p99_us"] <= m.metrics["lateness_max_us"]);
        assert!(m.metrics["hog_iters_per_s"] > 0.0);
        let j = m.metrics["hog_fairness"];
        assert!(j > 0.0 && j <= 1.0 + 1e-9);
        // Probes sleep between wakes.
        assert!(m.counters.voluntary > 0);
    }
}
