//! The bench's workloads: what a workload is ([`Workload`], its metrics and [`Measurement`]),
//! the list of them, and [`parse`], which builds one from its `name[:key=value...]` spec.
//!
//! Every workload is a team of tasks (threads by default, processes of this same binary with
//! `--processes`) that the controller releases together and reads at both edges of the
//! measurement window. Workloads stop by themselves: every blocking wait has a timeout or is
//! broken by a closed file descriptor, and every run has a time limit.
//!
//! The machinery they share lives in the sibling modules, re-exported here so that a workload
//! imports it from one place: [`team`] (the tasks and their shared control block), [`window`]
//! (the measurement window of time-based workloads), [`worker`] (a task in `--processes`
//! mode), [`params`] (the spec's `key=value` parameters), [`spec`] (the syntax of specs) and
//! [`sys`] (system-call wrappers). [`composite`] runs workloads in cgroups and several at once
//! (`A+B`), their parts kept in step by a [`gate`]. Each workload is one file next to them.

pub mod cmd;
pub mod composite;
pub mod external;
pub mod gate;
pub mod hog_probe;
pub mod messaging;
pub mod params;
pub mod pingpong;
pub mod pipe_stream;
pub mod schlat;
pub mod spec;
pub mod sys;
pub mod team;
pub mod weights;
pub mod window;
pub mod worker;

pub(crate) use crate::topology::allowed_cpus;
pub(crate) use composite::{PartArgs, part_main};
pub(crate) use gate::PartGate;
pub(crate) use params::{Key, Params, Pin, key};
pub(crate) use sys::{
    futex_wait, futex_wake, gettid, maybe_pin, mono_ns, pin_to_cpu, pipe, read_exact, socketpair,
    wait_for, write_all,
};
pub(crate) use team::{Ctl, MAX_TASKS, PHASE_MEASURE, PHASE_WARMUP, Team};
pub(crate) use window::timed_window;
pub(crate) use worker::{WorkerArgs, worker_main};

use super::counters::Counters;
use super::stats::{Better, MeanKind};
use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// The range and precision of [`latency_histogram`]: 1 ns to 100 s, 3 significant digits.
const LATENCY_MIN_NS: u64 = 1;
const LATENCY_MAX_NS: u64 = 100_000_000_000;
const LATENCY_SIGNIFICANT_DIGITS: u8 = 3;
const NS_PER_US: f64 = 1000.0;

/// One metric a workload reports per run. Names and units are static for the built-in
/// workloads; a `cmd` workload's come from its spec, and a saved report's from its file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricDef {
    pub name: Cow<'static, str>,
    pub unit: Cow<'static, str>,
    pub better: Better,
    pub mean: MeanKind,
}

pub const fn metric(
    name: &'static str,
    unit: &'static str,
    better: Better,
    mean: MeanKind,
) -> MetricDef {
    MetricDef {
        name: Cow::Borrowed(name),
        unit: Cow::Borrowed(unit),
        better,
        mean,
    }
}

/// What one run of a workload measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Measurement {
    /// Metric name → value, for the names of [`Workload::metrics`].
    pub metrics: BTreeMap<String, f64>,
    /// Work done in the window, in the workload's own unit (round trips, writes, messages...).
    pub ops: u64,
    pub elapsed_s: f64,
    /// Operations per second in successive slices of the window (drift and warm-up checks).
    pub samples: Vec<f64>,
    pub counters: Counters,
    /// Workload-specific details (tool versions, histograms' counts, missed periods...).
    pub extra: BTreeMap<String, serde_json::Value>,
    /// Why the workload itself considers the run invalid (time limit, interrupted...).
    pub invalid: Vec<String>,
}

/// How long and how a run goes.
#[derive(Debug, Clone, Default)]
pub struct RunConfig {
    /// In-run warm-up before the window (time-based workloads).
    pub warmup: Duration,
    /// The measurement window (time-based workloads).
    pub window: Duration,
    /// Hard limit for one run, warm-up included; a run that hits it is invalid.
    pub max_run: Duration,
    /// Tasks as processes of this binary instead of threads.
    pub processes: bool,
    /// The bench's cgroup folder, whose groups the workloads with `cgroup=` use (None: no
    /// group was set up).
    pub cgroups: Option<PathBuf>,
    /// A part of a composite: the gate that releases it and opens and closes its window
    /// together with the other parts (None: a workload on its own).
    pub gate: Option<PartGate>,
    /// The group that a program the workload starts (external tools, cmd) goes into.
    pub program_cgroup: Option<PathBuf>,
}

impl RunConfig {
    /// True when the run should stop now: the bench was interrupted, or the composite this
    /// run is a part of was stopped.
    pub fn stopping(&self) -> bool {
        crate::bench::interrupted() || self.gate.as_ref().is_some_and(|g| g.aborted())
    }
}

/// A workload, configured from its `name[:key=value...]` spec.
pub trait Workload: Send + Sync {
    fn name(&self) -> &'static str;
    /// One line for the report header: what it does and with which parameters.
    fn describe(&self) -> String;
    /// The parameters its spec may set (`name:key=value`).
    fn keys(&self) -> &'static [Key];
    /// The effective parameters (defaults included), for the JSON document; with an empty spec,
    /// the defaults that `bench --list` shows.
    fn params(&self) -> BTreeMap<String, String>;
    /// What each run reports; the first is the primary metric.
    fn metrics(&self) -> Vec<MetricDef>;
    fn run(&self, rc: &RunConfig) -> Result<Measurement>;
    /// True when it does a fixed amount of work or times itself (messaging, the external tools,
    /// cmd): in a composite, the window lasts until it ends.
    fn self_timed(&self) -> bool {
        false
    }
    /// True when its tasks are a program it starts (the external tools, cmd), which goes into
    /// its cgroup between fork and exec; the others run in a child process of this binary that
    /// is put in the cgroup before it starts its tasks.
    fn runs_program(&self) -> bool {
        false
    }
    /// The workloads it runs: itself, or a composite's parts.
    fn names(&self) -> Vec<&'static str> {
        vec![self.name()]
    }
    /// Its parts, when it runs in a cgroup or is a composite (for the report).
    fn parts(&self) -> Vec<composite::PartInfo> {
        Vec::new()
    }
    /// The cgroups it runs in.
    fn cgroups(&self) -> Vec<crate::bench::cgroup::CgroupSpec> {
        Vec::new()
    }
}

/// The built-in workloads and the external tools the bench can drive.
pub const NAMES: &[(&str, &str)] = &[
    (
        "pingpong",
        "pipe hand-off pairs (context_switch1, perf bench sched pipe)",
    ),
    (
        "pipe-stream",
        "writer→reader over a packet pipe, fixed write size (stress-ng --pipe)",
    ),
    (
        "messaging",
        "groups of senders and receivers, fixed work (hackbench)",
    ),
    (
        "schlat",
        "message and worker threads, wakeup and request latency (schbench)",
    ),
    (
        "hog-probe",
        "periodic sleepers' lateness under CPU hogs (cyclictest + hogs)",
    ),
    ("weights", "CPU shares of nice-weighted hogs on one CPU"),
    (
        "stress-ng-pipe",
        "external: stress-ng --pipe (when installed)",
    ),
    ("hackbench", "external: rt-tests hackbench (when installed)"),
    (
        "perf-pipe",
        "external: perf bench sched pipe (when installed)",
    ),
    (
        "perf-messaging",
        "external: perf bench sched messaging (when installed)",
    ),
    ("cmd", "any command, with its metric taken from its output"),
];

/// Workloads whose parameters are never sweeps (a `cmd` regex may hold commas).
pub const NOT_SWEPT: &[&str] = &["cmd"];

/// Builds a workload from `name[:key=value...]`, or a composite from such specs joined by
/// `+`; any of them may take the cgroup keys ([`crate::bench::cgroup::KEYS`]). `quick` picks
/// smaller defaults.
pub fn parse(spec: &str, quick: bool) -> Result<Box<dyn Workload>> {
    let names: Vec<&str> = NAMES.iter().map(|n| n.0).collect();
    let mut parts = Vec::new();
    for p in spec::split_parts(spec, &names)? {
        let (inner, cgroup) = crate::bench::cgroup::CgroupSpec::take(&p)?;
        let workload = parse_one(&inner, quick)?;
        parts.push(composite::Part::new(inner, cgroup, workload));
    }
    if parts.len() == 1 && parts[0].cgroup.is_none() {
        return Ok(parts.remove(0).workload);
    }
    Ok(Box::new(composite::Composite::new(parts, quick)?))
}

/// Builds one workload from `name[:key=value...]` (no cgroup keys, not a composite).
pub fn parse_one(spec: &str, quick: bool) -> Result<Box<dyn Workload>> {
    let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
    let ncpus = allowed_cpus().len();
    Ok(match name {
        "pingpong" => Box::new(pingpong::PingPong::new(rest)?),
        "pipe-stream" => Box::new(pipe_stream::PipeStream::new(rest)?),
        "messaging" => Box::new(messaging::Messaging::new(rest, quick)?),
        "schlat" => Box::new(schlat::Schlat::new(rest, quick, ncpus)?),
        "hog-probe" => Box::new(hog_probe::HogProbe::new(rest, ncpus)?),
        "weights" => Box::new(weights::Weights::new(rest)?),
        "stress-ng-pipe" | "hackbench" | "perf-pipe" | "perf-messaging" => {
            Box::new(external::External::new(name, rest, quick)?)
        }
        "cmd" => Box::new(cmd::Cmd::new(rest)?),
        _ => bail!(
            "unknown workload {name:?}; workloads: {}",
            NAMES.iter().map(|n| n.0).collect::<Vec<_>>().join(" ")
        ),
    })
}

/// Where `bench --list` wraps its lists of metrics.
const LIST_WIDTH: usize = 90;

/// The text of `bench --list`: every workload with the metrics it reports and its parameters,
/// each with its default (and its `--quick` default where that differs) and meaning. All of it
/// comes from the workloads themselves, built from an empty spec.
pub fn list() -> Result<String> {
    use std::fmt::Write;
    let mut s = String::from(
        "Workloads, as NAME[:key=value...] (parameters shown as key=default). The first metric \
         is the\nprimary one (progress lines, plots); the table and bench.json have them all. \
         One parameter\nmay be a list, a sweep: messaging:groups=1,2,4,8 is one workload per \
         value. Quote values\nthat hold ':', ',' or '+' in single quotes.\n\n\
         Every workload also takes (the group is created for the session and removed after it):\n",
    );
    for k in crate::bench::cgroup::KEYS {
        let (first, rest) = wrap(k.help, LIST_WIDTH - 25);
        writeln!(s, "  {:<22} {first}", format!("{}=", k.name))?;
        for line in rest {
            writeln!(s, "  {:<22} {line}", "")?;
        }
    }
    s.push_str(
        "\nA+B runs workloads A and B at once (a composite), released together and measured \
         over one\nwindow: --window, or until the parts that do fixed work (messaging, the \
         external tools,\ncmd) end. Each part reports its own metrics, named LABEL/metric, \
         LABEL being its cgroup\nor else its workload's name: \
         schlat:cgroup=lat:cpu_weight=300+pipe-stream:cgroup=batch\n",
    );
    for (name, what) in NAMES {
        if *name == "cmd" {
            writeln!(s, "\n{name:<16} {what}")?;
            writeln!(s, "  {}", cmd::SYNTAX)?;
            for k in cmd::KEYS {
                writeln!(s, "  {:<22} {}", k.name, k.help)?;
            }
            continue;
        }
        let (full, quick) = (parse(name, false)?, parse(name, true)?);
        let (dflt, qdflt) = (full.params(), quick.params());
        writeln!(s, "\n{name:<16} {what}")?;
        let metrics = full.metrics();
        if let Some(m) = metrics.first() {
            let better = match m.better {
                Better::Higher => "higher",
                Better::Lower => "lower",
            };
            writeln!(s, "  metric: {} ({}, {better} is better)", m.name, m.unit)?;
        }
        let mut line = String::from("  also:");
        for m in metrics.iter().skip(1) {
            if line.len() + m.name.len() > LIST_WIDTH {
                writeln!(s, "{line}")?;
                line = String::from("       ");
            }
            write!(line, " {}", m.name)?;
        }
        if metrics.len() > 1 {
            writeln!(s, "{line}")?;
        }
        for k in full.keys() {
            let d = dflt.get(k.name).map_or("-", String::as_str);
            let q = match qdflt.get(k.name) {
                Some(q) if Some(q) != dflt.get(k.name) => format!(" [--quick: {q}]"),
                _ => String::new(),
            };
            writeln!(s, "  {:<22} {}{q}", format!("{}={d}", k.name), k.help)?;
        }
    }
    Ok(s)
}

/// `text` cut at spaces into a first line and the rest, each at most `width` characters.
fn wrap(text: &str, width: usize) -> (String, Vec<String>) {
    let mut lines: Vec<String> = vec![String::new()];
    for w in text.split(' ') {
        let last = lines.last_mut().expect("one line");
        if !last.is_empty() && last.len() + 1 + w.len() > width {
            lines.push(w.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(w);
        }
    }
    let first = lines.remove(0);
    (first, lines)
}

/// A latency histogram in nanoseconds (1 ns .. 100 s, 3 significant digits).
pub fn latency_histogram() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(
        LATENCY_MIN_NS,
        LATENCY_MAX_NS,
        LATENCY_SIGNIFICANT_DIGITS,
    )
    .expect("valid bounds")
}

/// Percentiles of a nanosecond histogram in microseconds.
pub fn pct_us(h: &hdrhistogram::Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / NS_PER_US
}

#[cfg(test)]
pub(crate) mod testutil {
    use super::*;

    /// A short configuration for host smoke runs (no absolute times are asserted).
    pub fn quick_rc() -> RunConfig {
        RunConfig {
            warmup: Duration::from_millis(50),
            window: Duration::from_millis(300),
            max_run: Duration::from_secs(30),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_shows_every_key_with_its_default() {
        let text = list().unwrap();
        for (name, _) in NAMES {
            assert!(text.contains(&format!("\n{name} ")), "{name}: {text}");
            if *name == "cmd" {
                assert!(text.contains("cmd:'COMMAND':metric=REGEX"), "{text}");
                continue;
            }
            let w = parse(name, false).unwrap();
            // The defaults that params() reports are exactly keys that a spec may set.
            for k in w.params().keys() {
                assert!(w.keys().iter().any(|x| x.name == k), "{name}: {k}");
            }
            for k in w.keys() {
                assert!(Params::parse(&format!("{}=1", k.name), w.keys()).is_ok());
                assert!(
                    text.contains(&format!("  {}=", k.name)),
                    "{name}: {}",
                    k.name
                );
            }
        }
        assert!(text.contains("pairs=1 "), "{text}");
        assert!(text.contains("metric: handoffs_per_s (hand-offs/s, higher is better)"));
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
        assert!(text.contains("groups=4 "), "{text}");
        assert!(text.contains("[--quick: 2]"), "{text}");
        assert!(text.contains("cpu=- "), "{text}");
        for k in crate::bench::cgroup::KEYS {
            assert!(
                text.contains(&format!("  {}= ", k.name)),
                "{}: {text}",
                k.name
            );
        }
        assert!(
            text.contains("A+B runs workloads A and B at once"),
            "{text}"
        );
    }

    #[test]
    fn unknown_workloads_are_refused_with_the_list() {
        assert!(
            parse("nosuch", true)
                .err()
                .expect("an error")
                .to_string()
                .contains("pingpong")
        );
    }
}
