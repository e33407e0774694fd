//! `pingpong`: pairs of tasks bouncing a small message through two pipes (will-it-scale's
//! context_switch1, `perf bench sched pipe`, UnixBench context1).
//!
//! One operation is one round trip, that is two hand-offs. Expect about one voluntary switch
//! per task per round trip and almost no involuntary ones; deviations flag a behaviour change.

use super::{
    Key, Measurement, MetricDef, Params, Pin, RunConfig, Team, Workload, key, maybe_pin, metric,
    pipe, read_exact, timed_window, write_all,
};
use crate::bench::counters::Counters;
use crate::bench::stats::{Better, MeanKind};
use anyhow::{Result, bail};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

pub struct PingPong {
    pairs: usize,
    pin: Pin,
    size: usize,
}

const KEYS: &[Key] = &[
    key(
        "pairs",
        "pairs of tasks, each with its own two pipes (1..=512)",
    ),
    key(
        "pin",
        "where the two ends of a pair run: none, same-cpu or cross-cpu",
    ),
    key("size", "message size, bytes (1..=4096)"),
];

impl PingPong {
    pub fn new(spec: &str) -> Result<Self> {
        let p = Params::parse(spec, KEYS)?;
        let w = PingPong {
            pairs: p.u64("pairs", 1)? as usize,
            pin: Pin::parse(p.str("pin", "none"))?,
            size: p.u64("size", 1)? as usize,
        };
        if w.pairs == 0 || w.pairs > 512 {
            bail!("pingpong: pairs must be 1..=512");
        }
        if w.size == 0 || w.size > 4096 {
            bail!("pingpong: size must be 1..=4096 bytes (one atomic pipe write)");
        }
        Ok(w)
    }
}

/// The side that starts each round trip and counts it.
pub fn initiator(ctl: &super::Ctl, slot: usize, r: OwnedFd, w: OwnedFd, size: usize) {
    let mut buf = vec![0u8; size];
    while !ctl.stopped() {
        if !write_all(w.as_raw_fd(), &buf) || !read_exact(r.as_raw_fd(), &mut buf) {
            break;
        }
        ctl.add_ops(slot, 1);
    }
    // Dropping the ends here gives the responder EOF.
}

/// The side that answers; it stops when the initiator closes its end.
pub fn responder(r: OwnedFd, w: OwnedFd, size: usize) {
    let mut buf = vec![0u8; size];
    while read_exact(r.as_raw_fd(), &mut buf) && write_all(w.as_raw_fd(), &buf) {}
}

impl Workload for PingPong {
    fn name(&self) -> &'static str {
        "pingpong"
    }

    fn describe(&self) -> String {
        format!(
            "{} pair(s) of tasks, {}-byte messages over two pipes, pin {}",
            self.pairs,
            self.size,
            self.pin.name()
        )
    }

    fn keys(&self) -> &'static [Key] {
        KEYS
    }

    fn params(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("pairs".into(), self.pairs.to_string()),
            ("pin".into(), self.pin.name().into()),
            ("size".into(), self.size.to_string()),
        ])
    }

    fn metrics(&self) -> Vec<MetricDef> {
        vec![
            metric(
                "handoffs_per_s",
                "hand-offs/s",
                Better::Higher,
                MeanKind::Harmonic,
            ),
            metric("roundtrip_us", "µs", Better::Lower, MeanKind::Arithmetic),
        ]
    }

    fn run(&self, rc: &RunConfig) -> Result<Measurement> {
        if self.pin == Pin::CrossCpu && super::allowed_cpus().len() < 2 {
            bail!("pingpong: pin=cross-cpu needs two CPUs");
        }
        let mut team = Team::new()?;
        let mut a_slots = Vec::new();
        for i in 0..self.pairs {
            let (a_cpu, b_cpu) = self.pin.cpus(i);
            let (r1, w1, _) = pipe(false)?;
            let (r2, w2, _) = pipe(false)?;
            let size = self.size;
            if rc.processes {
                let p = |cpu: Option<usize>| {
                    let mut v = vec![("size", size.to_string())];
                    if let Some(c) = cpu {
                        v.push(("cpu", c.to_string()));
                    }
                    v
                };
                a_slots.push(team.spawn_process(
                    "pingpong-a",
                    &[r2.as_raw_fd(), w1.as_raw_fd()],
                    &p(a_cpu),
                )?);
                team.spawn_process("pingpong-b", &[r1.as_raw_fd(), w2.as_raw_fd()], &p(b_cpu))?;
            } else {
                a_slots.push(team.spawn_thread(move |ctl, slot| {
                    maybe_pin(a_cpu);
                    initiator(ctl, slot, r2, w1, size)
                })?);
                team.spawn_thread(move |_, _| {
                    maybe_pin(b_cpu);
                    responder(r1, w2, size)
                })?;
            }
        }
        let tasks = team.wait_ready(Duration::from_secs(30))?;
        let w = timed_window(&mut team, &tasks, rc, &a_slots)?;
        let rt: u64 = a_slots.iter().map(|&s| w.ops[s]).sum();
        let mut m = Measurement {
            ops: rt,
            elapsed_s: w.elapsed_s,
            samples: w.samples.iter().map(|s| 2.0 * s).collect(),
            counters: w.counters,
            ..Default::default()
        };
        if w.interrupted {
            m.invalid.push("interrupted".into());
        }
        if rt == 0 {
            m.invalid
                .push("no round trip completed in the window".into());
        } else {
            m.metrics
                .insert("handoffs_per_s".into(), 2.0 * rt as f64 / w.elapsed_s);
            m.metrics.insert(
                "roundtrip_us".into(),
                w.elapsed_s * 1e6 * self.pairs as f64 / rt as f64,
            );
        }
        per_op_extra(&mut m.extra, &m.counters, rt);
        Ok(m)
    }
}

/// Switches, run_delay and migrations per operation, for the JSON document.
pub fn per_op_extra(extra: &mut BTreeMap<String, serde_json::Value>, c: &Counters, ops: u64) {
    if ops == 0 {
        return;
    }
    let per = |x: u64| serde_json::json!(x as f64 / ops as f64);
    extra.insert("voluntary_per_op".into(), per(c.voluntary));
    extra.insert("involuntary_per_op".into(), per(c.involuntary));
    extra.insert("run_delay_ns_per_op".into(), per(c.run_delay_ns));
    if let Some(mig) = c.migrations {
        extra.insert("migrations_per_op".into(), per(mig));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::workloads::testutil::quick_rc;

    #[test]
    fn pingpong_threads_report_sane_counters() {
        let w = PingPong::new("pairs=2").unwrap();
        let m = w.run(&quick_rc()).unwrap();
        assert!(m.invalid.is_empty(), "{:?}", m.invalid);
        assert!(m.ops > 0);
        assert!(m.metrics["handoffs_per_s"] > 0.0);
        assert!(m.metrics["roundtrip_us"] > 0.0);
        assert_eq!(m.counters.tasks, 4);
        // Every round trip blocks each side once (unless both sides spin on two CPUs, which
        // pipes do not).
        assert!(m.counters.voluntary > 0, "{:?}", m.counters);
    }

    #[test]
    fn pingpong_same_cpu_pins_both_ends() {
        let w = PingPong::new("pin=same-cpu:size=8").unwrap();
        let m = w.run(&quick_rc()).unwrap();
        assert!(m.ops > 0);
        assert!(
            m.counters.voluntary + m.counters.involuntary >= m.ops,
            "{:?} ops {}",
            m.counters,
            m.ops
        );
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(PingPong::new("pairs=0").is_err());
        assert!(PingPong::new("pin=sideways").is_err());
        assert!(PingPong::new("size=100000").is_err());
    }
}
