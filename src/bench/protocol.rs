//! The run protocol: which arm runs when, warm-up runs after every switch, validity checks
//! around every run, and the raw records of all of it.
//!
//! Arms are interleaved in rounds (one run of each workload per arm per round), in a seeded
//! order: ABAB repeats the first round's order, ABBA reverses every second round to cancel a
//! linear drift. Whenever the arm in effect changes (scheduler attached or detached, a feature
//! or tunable written), one run is made and discarded before the measured ones. Each run is
//! bracketed by [`Runner::check`] and observations of the sched_ext state; any problem marks the
//! run invalid with the reason, and invalid runs are kept in the records but left out of the
//! statistics. An arm that cannot be put in effect (a scheduler that does not load) is marked
//! failed with the reason and its slots are skipped; the other arms go on.

use super::arms::Arm;
use super::runner::{self, Runner};
use super::workloads::{Measurement, RunConfig, Workload};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Every round in the same (seeded) order.
    Abab,
    /// Every second round reversed.
    Abba,
}

/// The arm of each slot: `runs` rounds over the arms, `family[i]` naming arm `i`'s scheduler.
///
/// A round shuffles the families and, within each, its arms, and keeps every family's arms
/// together: a change of scheduler costs an attach (a BPF verification: about 20 s in an emulated
/// VM) and a discarded warm-up run, a change of features within the lab neither attach nor more
/// than that run. With ABBA the reversed rounds keep the families together as well, and the
/// round boundary joins the same family, so `runs` rounds of two schedulers attach about
/// `runs / 2 + 1` times instead of up to once per arm and round.
pub fn schedule(family: &[usize], runs: usize, order: Order, seed: u64) -> Vec<usize> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut families: Vec<usize> = family.to_vec();
    families.sort_unstable();
    families.dedup();
    families.shuffle(&mut rng);
    let mut first = Vec::with_capacity(family.len());
    for f in families {
        let mut members: Vec<usize> = (0..family.len()).filter(|&i| family[i] == f).collect();
        members.shuffle(&mut rng);
        first.extend(members);
    }
    let mut out = Vec::with_capacity(family.len() * runs);
    for r in 0..runs {
        let mut round = first.clone();
        if order == Order::Abba && r % 2 == 1 {
            round.reverse();
        }
        out.extend(round);
    }
    out
}

/// A workload as named on the command line.
pub struct NamedWorkload {
    pub label: String,
    pub workload: Box<dyn Workload>,
}

/// One run, measured or discarded, valid or not.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// Position in the session (0-based, warm-up runs included).
    pub index: usize,
    pub round: usize,
    pub arm: usize,
    pub arm_label: String,
    pub workload: usize,
    pub workload_label: String,
    /// A warm-up run after a switch: never part of the statistics.
    pub discarded: bool,
    pub valid: bool,
    pub invalid_reasons: Vec<String>,
    pub start_unix_ms: u128,
    pub duration_s: f64,
    /// The features line in effect after the run, re-read from the kernel or the lab.
    pub features_in_effect: Option<String>,
    pub measurement: Option<Measurement>,
    /// `root/events` counters that moved during the run.
    pub scx_events: Vec<(String, u64)>,
    /// CPU time of the scheduler's userspace process during the run.
    pub sched_cpu_ns: Option<u64>,
    /// Each BPF callback's calls and run time during the run (--bpf-stats).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub bpf: BTreeMap<String, crate::bpfstats::Cost>,
}

/// An arm that could not be put in effect: it has no runs after its failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedArm {
    pub arm: String,
    pub reason: String,
    /// Slots of the schedule it had before it failed (0: it never ran).
    pub slots_run: usize,
}

/// Everything the protocol produced.
#[derive(Debug, Default, Serialize)]
pub struct Outcome {
    pub order: Vec<usize>,
    pub runs: Vec<RunRecord>,
    pub interrupted: bool,
    /// Why the session stopped early, if it did for another reason than an interrupt.
    pub fatal: Option<String>,
    pub failed_arms: Vec<FailedArm>,
}

pub struct Session<'a> {
    pub arms: &'a [Arm],
    pub workloads: &'a [NamedWorkload],
    pub rc: RunConfig,
    pub order: Vec<usize>,
}

impl Session<'_> {
    /// Runs the whole schedule; stops early on interrupt. An arm that cannot be put in effect is
    /// recorded as failed and skipped from then on.
    pub fn execute(&self, runner: &mut Runner) -> Outcome {
        let mut out = Outcome {
            order: self.order.clone(),
            ..Default::default()
        };
        let narms = self.arms.len().max(1);
        let total = self.order.len() * self.workloads.len();
        let progress = Progress::new(total as u64);
        let mut done = 0;
        let mut slots_run = vec![0usize; self.arms.len()];
        for (slot, &arm) in self.order.iter().enumerate() {
            if super::interrupted() {
                break;
            }
            let label = self.arms[arm].label();
            if out.failed_arms.iter().any(|f| f.arm == label) {
                done += self.workloads.len() as u64;
                progress.set(done);
                continue;
            }
            let switched = match runner.switch(self.arms, arm) {
                Ok(s) => s,
                Err(e) => {
                    if super::interrupted() {
                        break;
                    }
                    let reason = format!("cannot put it in effect: {e:#}");
                    progress.println(&format!(
                        "arm {label} failed ({reason}); its remaining runs are skipped"
                    ));
                    out.failed_arms.push(FailedArm {
                        arm: label.to_string(),
                        reason,
                        slots_run: slots_run[arm],
                    });
                    done += self.workloads.len() as u64;
                    progress.set(done);
                    continue;
                }
            };
            slots_run[arm] += 1;
            if switched && !self.workloads.is_empty() {
                progress.message(&format!(
                    "{} / {} (warm-up)",
                    self.arms[arm].label(),
                    self.workloads[0].label
                ));
                let rec = self.one_run(runner, out.runs.len(), slot / narms, arm, 0, true);
                progress.line(&rec, &self.primary(0));
                out.runs.push(rec);
            }
            for w in 0..self.workloads.len() {
                if super::interrupted() {
                    break;
                }
                progress.message(&format!(
                    "{} / {}",
                    self.arms[arm].label(),
                    self.workloads[w].label
                ));
                let rec = self.one_run(runner, out.runs.len(), slot / narms, arm, w, false);
                progress.line(&rec, &self.primary(w));
                out.runs.push(rec);
                done += 1;
                progress.set(done);
            }
        }
        out.interrupted = super::interrupted();
        progress.finish();
        out
    }

    fn primary(&self, w: usize) -> String {
        self.workloads[w]
            .workload
            .metrics()
            .first()
            .map(|m| m.name.to_string())
            .unwrap_or_default()
    }

    fn one_run(
        &self,
        runner: &mut Runner,
        index: usize,
        round: usize,
        arm: usize,
        w: usize,
        discarded: bool,
    ) -> RunRecord {
        let a = &self.arms[arm];
        let pre = runner.check(self.arms, arm);
        let obs0 = runner.observe();
        let start_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let t = Instant::now();
        let result = self.workloads[w].workload.run(&self.rc);
        let duration_s = t.elapsed().as_secs_f64();
        let obs1 = runner.observe();
        let post = runner.check(self.arms, arm);
        let mut invalid: Vec<String> = Vec::new();
        invalid.extend(pre.into_iter().map(|p| format!("before the run: {p}")));
        invalid.extend(post.into_iter().map(|p| format!("after the run: {p}")));
        invalid.extend(runner::compare_observations(&a.spec.kind, &obs0, &obs1));
        let measurement = match result {
            Ok(m) => {
                invalid.extend(m.invalid.iter().cloned());
                Some(m)
            }
            Err(e) => {
                invalid.push(format!("the workload failed: {e:#}"));
                None
            }
        };
        if super::interrupted() && !invalid.iter().any(|r| r.contains("interrupted")) {
            invalid.push("interrupted".into());
        }
        RunRecord {
            index,
            round,
            arm,
            arm_label: a.label().to_string(),
            workload: w,
            workload_label: self.workloads[w].label.clone(),
            discarded,
            valid: invalid.is_empty(),
            invalid_reasons: invalid,
            start_unix_ms,
            duration_s,
            features_in_effect: runner.features_in_effect(a),
            measurement,
            scx_events: runner::event_deltas(&obs0, &obs1),
            sched_cpu_ns: obs1
                .sched_cpu_ns
                .zip(obs0.sched_cpu_ns)
                .map(|(b, a)| b.saturating_sub(a)),
            bpf: crate::bpfstats::delta(&obs0.bpf, &obs1.bpf),
        }
    }
}

/// A progress bar on a terminal; one line per run otherwise (logs, VMs).
struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    fn new(total: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = indicatif::ProgressBar::new(total);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:30}] {pos}/{len} runs, ETA {eta}  {msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            b
        });
        Progress { bar }
    }

    fn message(&self, m: &str) {
        if let Some(b) = &self.bar {
            b.set_message(m.to_string());
        }
    }

    fn set(&self, n: u64) {
        if let Some(b) = &self.bar {
            b.set_position(n);
        }
    }

    fn println(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None => eprintln!("{line}"),
        }
    }

    fn line(&self, r: &RunRecord, primary: &str) {
        let primary = r
            .measurement
            .as_ref()
            .and_then(|m| m.metrics.get(primary).map(|v| format!("{primary}={v:.4}")))
            .unwrap_or_default();
        let state = if r.valid {
            String::new()
        } else {
            format!("  INVALID: {}", r.invalid_reasons.join("; "))
        };
        let line = format!(
            "run {:>3}: {:<24} {:<16} {}{}{}",
            r.index,
            r.arm_label,
            r.workload_label,
            if r.discarded { "(warm-up) " } else { "" },
            primary,
            state
        );
        match &self.bar {
            Some(b) => b.println(line),
            None => eprintln!("{line}"),
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_are_seeded_interleaved_and_balanced() {
        let a = schedule(&[0, 1], 4, Order::Abab, 1);
        assert_eq!(a, schedule(&[0, 1], 4, Order::Abab, 1));
        assert_eq!(a.len(), 8);
        assert!(a.chunks(2).all(|c| c == &a[..2]));
        let b = schedule(&[0, 1], 4, Order::Abba, 1);
        assert_eq!(&b[..2], &a[..2]);
        assert_eq!(b[2], b[1]);
        assert_eq!(b[3], b[0]);
        for arms in 1..5 {
            let fam: Vec<usize> = (0..arms).collect();
            let s = schedule(&fam, 3, Order::Abba, 9);
            for i in 0..arms {
                assert_eq!(s.iter().filter(|&&x| x == i).count(), 3);
            }
        }
        // Some seed must put the second arm first: the order is not fixed.
        assert!((0..64).any(|seed| schedule(&[0, 1], 1, Order::Abab, seed)[0] == 1));
    }

    #[test]
    fn schedules_keep_each_scheduler_together() {
        // Three arms of the kernel (0) and three of the lab (1), as --fidelity makes them.
        let family = [0, 0, 0, 1, 1, 1];
        let switches = |s: &[usize]| {
            s.windows(2)
                .filter(|w| family[w[0]] != family[w[1]])
                .count()
        };
        for seed in 0..32 {
            let s = schedule(&family, 5, Order::Abba, seed);
            for round in s.chunks(6) {
                assert_eq!(switches(round), 1, "seed {seed}: {round:?}");
            }
            // ABBA: the rounds meet in one family, so 5 rounds switch 5 times in all.
            assert_eq!(switches(&s), 5, "seed {seed}: {s:?}");
            let t = schedule(&family, 5, Order::Abab, seed);
            assert_eq!(switches(&t), 9, "seed {seed}: {t:?}");
        }
        // Both the family order and the order within a family vary with the seed.
        let firsts: std::collections::BTreeSet<usize> = (0..64)
            .map(|seed| schedule(&family, 1, Order::Abab, seed)[0])
            .collect();
        assert_eq!(firsts.len(), 6);
    }
}
