//! `messaging`: hackbench / `perf bench sched messaging`.
//!
//! G groups of F senders and F receivers; every sender writes L messages of S bytes to each
//! receiver of its group over an AF_UNIX stream socket (or a pipe), so each receiver reads F·L
//! messages. The metric is the elapsed time of that fixed work (lower is better), from the
//! release of all senders to the last receiver's last byte. An in-run warm-up pass of L/10
//! loops runs first, untimed; the counters cover the timed pass only.

use super::{
    Ctl, Key, Measurement, MetricDef, PHASE_MEASURE, PHASE_WARMUP, Params, RunConfig, Team,
    Workload, futex_wait, key, metric, pipe, socketpair, wait_for, write_all,
};
use crate::bench::counters::{Counters, Snapshot};
use crate::bench::stats::{Better, MeanKind};
use anyhow::{Result, bail};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub struct Messaging {
    groups: usize,
    fds: usize,
    loops: u64,
    size: u64,
    pipes: bool,
}

const KEYS: &[Key] = &[
    key("groups", "groups of senders and receivers"),
    key("fds", "senders (and receivers) per group"),
    key(
        "loops",
        "messages each sender writes to each receiver of its group",
    ),
    key("size", "message size, bytes (1..=4096)"),
    key("transport", "socket (AF_UNIX stream) or pipe"),
];

impl Messaging {
    pub fn new(spec: &str, quick: bool) -> Result<Self> {
        let p = Params::parse(spec, KEYS)?;
        let (g, f, l) = if quick { (2, 10, 50) } else { (4, 20, 100) };
        let w = Messaging {
            groups: p.u64("groups", g)? as usize,
            fds: p.u64("fds", f)? as usize,
            loops: p.u64("loops", l)?,
            size: p.u64("size", 100)?,
            pipes: match p.str("transport", "socket") {
                "socket" => false,
                "pipe" => true,
                t => bail!("messaging: transport={t:?}: expected socket or pipe"),
            },
        };
        if w.groups == 0 || w.fds == 0 || w.loops == 0 || w.size == 0 || w.size > 4096 {
            bail!("messaging: groups, fds and loops must be > 0 and size 1..=4096");
        }
        if w.groups * w.fds * 2 > super::MAX_TASKS {
            bail!("messaging: at most {} tasks", super::MAX_TASKS);
        }
        Ok(w)
    }

    fn warm_loops(&self) -> u64 {
        (self.loops / 10).max(1)
    }
}

/// Writes `warm` loops, waits for the timed phase, then writes `loops` loops; each loop sends
/// one message to every receiver. Returns early when stopped or a receiver is gone.
pub fn sender<F: AsRawFd>(ctl: &Ctl, fds: &[F], warm: u64, loops: u64, size: usize) {
    let buf = vec![0x33u8; size];
    let pass = |n: u64| {
        for _ in 0..n {
            for fd in fds {
                if ctl.stopped() || !write_all(fd.as_raw_fd(), &buf) {
                    return false;
                }
            }
        }
        true
    };
    if !pass(warm) {
        return;
    }
    wait_for(&ctl.phase, |p| p != PHASE_WARMUP);
    if ctl.phase.load(Ordering::Acquire) == PHASE_MEASURE {
        pass(loops);
    }
}

/// Reads the warm-up bytes, reports, then the timed bytes, reports again.
pub fn receiver(
    ctl: &Ctl,
    slot: usize,
    r: OwnedFd,
    senders: u64,
    warm: u64,
    loops: u64,
    size: u64,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut take = |mut left: u64| {
        while left > 0 {
            let want = left.min(buf.len() as u64) as usize;
            // SAFETY: buf is valid for `want` bytes.
            let n = unsafe { libc::read(r.as_raw_fd(), buf.as_mut_ptr().cast(), want) };
            if n == 0 {
                return false;
            }
            if n < 0 {
                if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return false;
            }
            left -= n as u64;
        }
        true
    };
    if !take(senders * warm * size) {
        return;
    }
    ctl.progress.fetch_add(1, Ordering::AcqRel);
    super::futex_wake(&ctl.progress);
    if !take(senders * loops * size) {
        return;
    }
    ctl.add_ops(slot, senders * loops);
    ctl.progress.fetch_add(1, Ordering::AcqRel);
    super::futex_wake(&ctl.progress);
}

/// Waits until `progress >= target`; false at the deadline or when the run is to stop.
fn wait_progress(ctl: &Ctl, target: u32, deadline: Instant, rc: &RunConfig) -> bool {
    loop {
        let v = ctl.progress.load(Ordering::Acquire);
        if v >= target {
            return true;
        }
        if Instant::now() >= deadline || rc.stopping() {
            return false;
        }
        futex_wait(&ctl.progress, v, Duration::from_millis(10));
    }
}

impl Workload for Messaging {
    fn name(&self) -> &'static str {
        "messaging"
    }

    fn describe(&self) -> String {
        format!(
            "{} group(s) × {} senders × {} receivers, {} loops of {}-byte messages over {}",
            self.groups,
            self.fds,
            self.fds,
            self.loops,
            self.size,
            if self.pipes { "pipes" } else { "sockets" }
        )
    }

    fn keys(&self) -> &'static [Key] {
        KEYS
    }

    fn params(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("groups".into(), self.groups.to_string()),
            ("fds".into(), self.fds.to_string()),
            ("loops".into(), self.loops.to_string()),
            ("size".into(), self.size.to_string()),
            (
                "transport".into(),
                if self.pipes { "pipe" } else { "socket" }.into(),
            ),
        ])
    }

    fn self_timed(&self) -> bool {
        true
    }

    fn metrics(&self) -> Vec<MetricDef> {
        vec![
            metric("seconds", "s", Better::Lower, MeanKind::Arithmetic),
            metric("msgs_per_s", "msgs/s", Better::Higher, MeanKind::Harmonic),
        ]
    }

    fn run(&self, rc: &RunConfig) -> Result<Measurement> {
        let mut team = Team::new()?;
        let warm = self.warm_loops();
        let (loops, size, f) = (self.loops, self.size, self.fds as u64);
        let mut receivers = Vec::new();
        for _ in 0..self.groups {
            // One channel per receiver; every sender of the group writes to all of them.
            let mut read_ends = Vec::new();
            let mut write_ends = Vec::new();
            for _ in 0..self.fds {
                let (r, w) = if self.pipes {
                    let (r, w, _) = pipe(false)?;
                    (r, w)
                } else {
                    socketpair()?
                };
                read_ends.push(r);
                write_ends.push(w);
            }
            for r in read_ends {
                if rc.processes {
                    let p = [
                        ("senders", f.to_string()),
                        ("warm", warm.to_string()),
                        ("loops", loops.to_string()),
                        ("size", size.to_string()),
                    ];
                    receivers.push(team.spawn_process("msg-receiver", &[r.as_raw_fd()], &p)?);
                } else {
                    receivers.push(team.spawn_thread(move |ctl, slot| {
                        receiver(ctl, slot, r, f, warm, loops, size)
                    })?);
                }
            }
            if rc.processes {
                let raw: Vec<_> = write_ends.iter().map(|w| w.as_raw_fd()).collect();
                let p = [
                    ("warm", warm.to_string()),
                    ("loops", loops.to_string()),
                    ("size", size.to_string()),
                ];
                for _ in 0..self.fds {
                    team.spawn_process("msg-sender", &raw, &p)?;
                }
            } else {
                // The write ends close when the group's last sender returns.
                let shared: Arc<Vec<OwnedFd>> = Arc::new(write_ends);
                for _ in 0..self.fds {
                    let fds = shared.clone();
                    team.spawn_thread(move |ctl, _| sender(ctl, &fds, warm, loops, size as usize))?;
                }
            }
        }
        let tasks = team.wait_ready(Duration::from_secs(60))?;
        let nrecv = receivers.len() as u32;
        if let Some(g) = &rc.gate {
            g.ready()?;
        }
        let start = Instant::now();
        let deadline = start + rc.max_run;
        let mut m = Measurement::default();
        team.go();
        if !wait_progress(&team.ctl, nrecv, deadline, rc) {
            m.invalid.push(stop_reason(start, rc));
            team.finish(Duration::from_secs(10))?;
            return Ok(m);
        }
        // In a composite the timed pass starts when the controller opens the window for all
        // parts; the senders wait for it.
        if let Some(g) = &rc.gate {
            g.warm();
            if let Err(e) = g.wait_window() {
                team.finish(Duration::from_secs(10))?;
                return Err(e);
            }
        }
        let s0 = Snapshot::take(&tasks);
        let t0 = Instant::now();
        team.ctl.set_phase(PHASE_MEASURE);
        let finished = wait_progress(&team.ctl, 2 * nrecv, deadline, rc);
        let elapsed = t0.elapsed().as_secs_f64();
        let s1 = Snapshot::take(&tasks);
        if finished && let Some(g) = &rc.gate {
            g.finished();
        }
        team.finish(Duration::from_secs(10))?;
        if !finished {
            m.invalid.push(stop_reason(start, rc));
            return Ok(m);
        }
        let msgs = team.ops(receivers.iter().copied());
        m.ops = msgs;
        m.elapsed_s = elapsed;
        m.counters = Counters::delta(&s0, &s1);
        m.metrics.insert("seconds".into(), elapsed);
        m.metrics.insert("msgs_per_s".into(), msgs as f64 / elapsed);
        super::pingpong::per_op_extra(&mut m.extra, &m.counters, msgs);
        Ok(m)
    }
}

fn stop_reason(start: Instant, rc: &RunConfig) -> String {
    if crate::bench::interrupted() {
        "interrupted".into()
    } else if rc.stopping() {
        super::gate::ABORTED.into()
    } else {
        format!(
            "the fixed work did not finish within the run limit of {:?} (stopped after {:.1} s)",
            rc.max_run,
            start.elapsed().as_secs_f64()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::workloads::testutil::quick_rc;

    #[test]
    fn messaging_threads_deliver_every_message() {
        for spec in [
            "groups=2:fds=4:loops=20",
            "groups=1:fds=3:loops=10:transport=pipe",
        ] {
            let w = Messaging::new(spec, true).unwrap();
            let m = w.run(&quick_rc()).unwrap();
            assert!(m.invalid.is_empty(), "{spec}: {:?}", m.invalid);
            let (g, f, l) = (w.groups as u64, w.fds as u64, w.loops);
            assert_eq!(m.ops, g * f * f * l, "{spec}");
            assert!(m.metrics["seconds"] > 0.0);
            assert_eq!(m.counters.tasks as u64, 2 * g * f);
            assert!(m.counters.voluntary > 0, "{spec}: {:?}", m.counters);
        }
    }

    #[test]
    fn a_run_limit_stops_the_fixed_work() {
        let w = Messaging::new("groups=4:fds=20:loops=100000", false).unwrap();
        let mut rc = quick_rc();
        rc.max_run = Duration::from_millis(200);
        let m = w.run(&rc).unwrap();
        assert!(!m.invalid.is_empty());
        assert!(m.metrics.is_empty());
    }
}
