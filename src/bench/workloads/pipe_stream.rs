//! `pipe-stream`: writers streaming fixed-size packets to readers (stress-ng `--pipe`).
//!
//! Each instance is a writer and a reader joined by a packet-mode pipe (`O_DIRECT`, plain pipe
//! where unsupported). One operation is one `write()` of `size` bytes (default 512, the size of
//! Debian bookworm's stress-ng; newer stress-ng writes 4096). Sensitive to batching versus
//! immediate preemption: slice protection lets the writer fill the pipe.

use super::{
    Key, Measurement, MetricDef, Params, Pin, RunConfig, Team, Workload, key, maybe_pin, metric,
    pipe, timed_window, write_all,
};
use crate::bench::stats::{Better, MeanKind};
use anyhow::{Result, bail};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

pub struct PipeStream {
    instances: usize,
    size: usize,
    pin: Pin,
}

const KEYS: &[Key] = &[
    key("instances", "writer/reader pairs (1..=512)"),
    key("size", "bytes per write (1..=4096)"),
    key(
        "pin",
        "where the writer and reader run: none, same-cpu or cross-cpu",
    ),
];

impl PipeStream {
    pub fn new(spec: &str) -> Result<Self> {
        let p = Params::parse(spec, KEYS)?;
        let w = PipeStream {
            instances: p.u64("instances", 1)? as usize,
            size: p.u64("size", 512)? as usize,
            pin: Pin::parse(p.str("pin", "none"))?,
        };
        if w.instances == 0 || w.instances > 512 {
            bail!("pipe-stream: instances must be 1..=512");
        }
        if w.size == 0 || w.size > 4096 {
            bail!("pipe-stream: size must be 1..=4096 bytes (one packet)");
        }
        Ok(w)
    }
}

/// Writes packets until stopped or the reader is gone; counts each write.
pub fn writer(ctl: &super::Ctl, slot: usize, w: OwnedFd, size: usize) {
    let buf = vec![0x5au8; size];
    while !ctl.stopped() {
        if !write_all(w.as_raw_fd(), &buf) {
            break;
        }
        ctl.add_ops(slot, 1);
    }
}

/// Reads until the writer closes its end.
pub fn reader(r: OwnedFd, size: usize) {
    let mut buf = vec![0u8; size];
    loop {
        // SAFETY: buf is valid for its length.
        let n = unsafe { libc::read(r.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n == 0 || (n < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR))
        {
            break;
        }
    }
}

impl Workload for PipeStream {
    fn name(&self) -> &'static str {
        "pipe-stream"
    }

    fn describe(&self) -> String {
        format!(
            "{} writer→reader instance(s), {}-byte writes, pin {}",
            self.instances,
            self.size,
            self.pin.name()
        )
    }

    fn keys(&self) -> &'static [Key] {
        KEYS
    }

    fn params(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("instances".into(), self.instances.to_string()),
            ("size".into(), self.size.to_string()),
            ("pin".into(), self.pin.name().into()),
        ])
    }

    fn metrics(&self) -> Vec<MetricDef> {
        vec![
            metric(
                "writes_per_s",
                "writes/s",
                Better::Higher,
                MeanKind::Harmonic,
            ),
            metric("mb_per_s", "MB/s", Better::Higher, MeanKind::Harmonic),
        ]
    }

    fn run(&self, rc: &RunConfig) -> Result<Measurement> {
        let mut team = Team::new()?;
        let mut writers = Vec::new();
        let mut packet = true;
        for i in 0..self.instances {
            let (w_cpu, r_cpu) = self.pin.cpus(i);
            let (r, w, is_packet) = pipe(true)?;
            packet &= is_packet;
            let size = self.size;
            if rc.processes {
                let p = |cpu: Option<usize>| {
                    let mut v = vec![("size", size.to_string())];
                    if let Some(c) = cpu {
                        v.push(("cpu", c.to_string()));
                    }
                    v
                };
                writers.push(team.spawn_process("pipe-writer", &[w.as_raw_fd()], &p(w_cpu))?);
                team.spawn_process("pipe-reader", &[r.as_raw_fd()], &p(r_cpu))?;
            } else {
                writers.push(team.spawn_thread(move |ctl, slot| {
                    maybe_pin(w_cpu);
                    writer(ctl, slot, w, size)
                })?);
                team.spawn_thread(move |_, _| {
                    maybe_pin(r_cpu);
                    reader(r, size)
                })?;
            }
        }
        let tasks = team.wait_ready(Duration::from_secs(30))?;
        let w = timed_window(&mut team, &tasks, rc, &writers)?;
        let ops: u64 = writers.iter().map(|&s| w.ops[s]).sum();
        let mut m = Measurement {
            ops,
            elapsed_s: w.elapsed_s,
            samples: w.samples,
            counters: w.counters,
            ..Default::default()
        };
        m.extra
            .insert("packet_mode".into(), serde_json::json!(packet));
        if w.interrupted {
            m.invalid.push("interrupted".into());
        }
        if ops == 0 {
            m.invalid.push("no write completed in the window".into());
        } else {
            let rate = ops as f64 / w.elapsed_s;
            m.metrics.insert("writes_per_s".into(), rate);
            m.metrics
                .insert("mb_per_s".into(), rate * self.size as f64 / 1e6);
        }
        super::pingpong::per_op_extra(&mut m.extra, &m.counters, ops);
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::workloads::testutil::quick_rc;

    #[test]
    fn pipe_stream_threads_report_sane_counters() {
        let w = PipeStream::new("instances=2:size=512").unwrap();
        let m = w.run(&quick_rc()).unwrap();
        assert!(m.invalid.is_empty(), "{:?}", m.invalid);
        assert!(m.ops > 0);
        let r = m.metrics["writes_per_s"];
        assert!((m.metrics["mb_per_s"] - r * 512.0 / 1e6).abs() < 1e-6 * r.max(1.0));
        assert_eq!(m.counters.tasks, 4);
        assert!(m.counters.voluntary + m.counters.involuntary > 0);
    }
}
