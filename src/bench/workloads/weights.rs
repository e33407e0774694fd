//! `weights`: CPU shares of nice-weighted hogs sharing one CPU, against the shares their
//! weights promise (the kernel's nice→weight table). A sanity check for a mirror of EEVDF, with
//! no LKML counterpart. Optionally one periodic sleeper shares the CPU, and its lateness shows
//! how waking tasks are placed among the hogs (lag handling). Threads only.

use super::{
    Key, Measurement, MetricDef, Params, RunConfig, Team, Workload, hog_probe, key,
    latency_histogram, metric, pct_us, pin_to_cpu, timed_window,
};
use crate::bench::stats::{Better, MeanKind};
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The kernel's weight of each nice level, -20 (index 0) to 19: about 1.25× per step, 1024 at
/// nice 0.
pub const NICE_TO_WEIGHT: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

pub fn weight(nice: i32) -> u64 {
    NICE_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize]
}

pub struct Weights {
    nices: Vec<i32>,
    cpu: Option<usize>,
    sleeper: bool,
    interval_us: u64,
}

const KEYS: &[Key] = &[
    key(
        "nice",
        "one hog per nice level, '/'-separated (2 to 64 levels in -20..=19)",
    ),
    key("cpu", "the CPU they share (default: the last allowed CPU)"),
    key(
        "sleeper",
        "1: add a periodic sleeper on that CPU; 0: hogs only",
    ),
    key("interval_us", "the sleeper's period, µs (10..=1000000)"),
];

impl Weights {
    pub fn new(spec: &str) -> Result<Self> {
        let p = Params::parse(spec, KEYS)?;
        let nices = p
            .str("nice", "0/5")
            .split('/')
            .map(|s| {
                s.parse::<i32>()
                    .with_context(|| format!("weights: nice {s:?}"))
            })
            .collect::<Result<Vec<_>>>()?;
        if nices.len() < 2 || nices.len() > 64 || nices.iter().any(|n| !(-20..=19).contains(n)) {
            bail!("weights: nice takes 2 to 64 values in -20..=19, separated by '/' (nice=0/5/10)");
        }
        Ok(Weights {
            nices,
            cpu: p
                .opt("cpu")
                .map(|c| c.parse())
                .transpose()
                .context("weights: cpu")?,
            sleeper: p.flag("sleeper", true)?,
            interval_us: p.u64("interval_us", 1000)?.clamp(10, 1_000_000),
        })
    }

    /// Each hog's expected share of the hogs' CPU time.
    pub fn expected_shares(&self) -> Vec<f64> {
        let total: u64 = self.nices.iter().map(|&n| weight(n)).sum();
        self.nices
            .iter()
            .map(|&n| weight(n) as f64 / total as f64)
            .collect()
    }
}

/// The largest |share/expected - 1| in percent.
pub fn max_share_error_pct(got: &[f64], expected: &[f64]) -> Option<f64> {
    let total: f64 = got.iter().sum();
    if total <= 0.0 {
        return None;
    }
    got.iter()
        .zip(expected)
        .map(|(g, e)| ((g / total) / e - 1.0).abs() * 100.0)
        .reduce(f64::max)
}

impl Workload for Weights {
    fn name(&self) -> &'static str {
        "weights"
    }

    fn describe(&self) -> String {
        format!(
            "hogs at nice {} on one CPU{}",
            self.nices
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join("/"),
            if self.sleeper {
                format!(", plus a sleeper every {} µs", self.interval_us)
            } else {
                String::new()
            }
        )
    }

    fn keys(&self) -> &'static [Key] {
        KEYS
    }

    fn params(&self) -> BTreeMap<String, String> {
        let mut p = BTreeMap::from([
            (
                "nice".into(),
                self.nices
                    .iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join("/"),
            ),
            ("sleeper".into(), (self.sleeper as u8).to_string()),
            ("interval_us".into(), self.interval_us.to_string()),
        ]);
        if let Some(c) = self.cpu {
            p.insert("cpu".into(), c.to_string());
        }
        p
    }

    fn metrics(&self) -> Vec<MetricDef> {
        let mut v = vec![metric(
            "share_error_pct",
            "%",
            Better::Lower,
            MeanKind::Arithmetic,
        )];
        if self.sleeper {
            v.push(metric(
                "sleeper_p99_us",
                "µs",
                Better::Lower,
                MeanKind::Median,
            ));
        }
        v
    }

    fn run(&self, rc: &RunConfig) -> Result<Measurement> {
        if rc.processes {
            bail!("weights runs as threads only");
        }
        let cpus = super::allowed_cpus();
        let cpu = self.cpu.unwrap_or(*cpus.last().unwrap_or(&0));
        if !cpus.contains(&cpu) {
            bail!("weights: CPU {cpu} is not available to this process");
        }
        let errors = Arc::new(Mutex::new(Vec::<String>::new()));
        let hist = Arc::new(Mutex::new(latency_histogram()));
        let mut team = Team::new()?;
        let mut hogs = Vec::new();
        for &nice in &self.nices {
            let errs = errors.clone();
            hogs.push(team.spawn_thread(move |ctl, slot| {
                if let Err(e) = pin_to_cpu(cpu) {
                    errs.lock()
                        .unwrap()
                        .push(format!("cannot pin to CPU {cpu}: {e}"));
                }
                if let Err(e) = hog_probe::set_nice(nice) {
                    errs.lock()
                        .unwrap()
                        .push(format!("cannot set nice {nice}: {e}"));
                }
                hog_probe::hog(ctl, slot)
            })?);
        }
        let mut sleeper = None;
        if self.sleeper {
            let (h, interval) = (hist.clone(), self.interval_us * 1000);
            sleeper = Some(team.spawn_thread(move |ctl, slot| {
                let _ = pin_to_cpu(cpu);
                let mut mine = latency_histogram();
                hog_probe::probe(ctl, slot, interval, 0, &mut mine);
                let _ = h.lock().unwrap().add(&mine);
            })?);
        }
        let tasks = team.wait_ready(Duration::from_secs(30))?;
        let win = timed_window(&mut team, &tasks, rc, &hogs)?;
        let mut m = Measurement {
            ops: hogs.iter().map(|&s| win.ops[s]).sum(),
            elapsed_s: win.elapsed_s,
            samples: win.samples,
            ..Default::default()
        };
        m.invalid.extend(errors.lock().unwrap().drain(..));
        if win.interrupted {
            m.invalid.push("interrupted".into());
        }
        // CPU time from schedstat when the kernel keeps it; the hogs' iterations otherwise
        // (they do the same work per iteration).
        let exec: Vec<f64> = hogs
            .iter()
            .map(|&s| win.counters.per_task_exec_ns.get(s).copied().unwrap_or(0) as f64)
            .collect();
        let (got, source) = if exec.iter().all(|&e| e > 0.0) {
            (exec, "schedstat")
        } else {
            (
                hogs.iter().map(|&s| win.ops[s] as f64).collect(),
                "iterations",
            )
        };
        let expected = self.expected_shares();
        match max_share_error_pct(&got, &expected) {
            Some(e) => {
                m.metrics.insert("share_error_pct".into(), e);
            }
            None => m.invalid.push("the hogs did not run in the window".into()),
        }
        let total: f64 = got.iter().sum();
        m.extra
            .insert("share_source".into(), serde_json::json!(source));
        m.extra.insert(
            "shares".into(),
            serde_json::json!(got.iter().map(|g| g / total.max(1e-12)).collect::<Vec<_>>()),
        );
        m.extra
            .insert("expected_shares".into(), serde_json::json!(expected));
        m.extra.insert("cpu".into(), serde_json::json!(cpu));
        if let Some(s) = sleeper {
            let h = hist.lock().unwrap();
            if !h.is_empty() {
                m.metrics.insert("sleeper_p99_us".into(), pct_us(&h, 0.99));
            }
            m.extra
                .insert("sleeper_wakes".into(), serde_json::json!(win.ops[s]));
        }
        m.counters = win.counters;
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::workloads::testutil::quick_rc;

    #[test]
    fn weight_table_matches_the_known_points() {
        assert_eq!(weight(0), 1024);
        assert_eq!(weight(-20), 88761);
        assert_eq!(weight(19), 15);
        // Neighbouring levels differ by about 1.25×.
        for n in -20..19 {
            let r = weight(n) as f64 / weight(n + 1) as f64;
            assert!((1.2..1.3).contains(&r), "nice {n}: {r}");
        }
    }

    #[test]
    fn share_error_by_hand() {
        let w = Weights::new("nice=0/5").unwrap();
        let e = w.expected_shares();
        assert!((e[0] - 1024.0 / 1359.0).abs() < 1e-12);
        // Exactly the promised split → 0 %; an even split → 0.5/0.2465 - 1 for the light one.
        let exact: Vec<f64> = e.iter().map(|x| x * 1000.0).collect();
        assert!(max_share_error_pct(&exact, &e).unwrap() < 1e-9);
        let even = max_share_error_pct(&[1.0, 1.0], &e).unwrap();
        assert!((even - (0.5 / (335.0 / 1359.0) - 1.0) * 100.0).abs() < 1e-9);
    }

    #[test]
    fn weights_runs_and_reports_shares() {
        let w = Weights::new("nice=0/0").unwrap();
        let m = w.run(&quick_rc()).unwrap();
        assert!(m.invalid.is_empty(), "{:?}", m.invalid);
        assert!(m.metrics.contains_key("share_error_pct"));
        assert!(m.ops > 0);
        assert!(Weights::new("nice=0").is_err());
        assert!(Weights::new("nice=0/99").is_err());
    }
}
