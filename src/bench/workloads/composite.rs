//! Workloads in cgroups, and composites: workloads that run at once, each reporting its own
//! metrics (`schlat:cgroup=lat:cpu_weight=300+pipe-stream:cgroup=batch`).
//!
//! A [`Composite`] is made of [`Part`]s. A part with `cgroup=` runs in that group for the whole
//! run: a native workload in a child process of this binary (the hidden `part` subcommand, see
//! [`part_main`]) that is moved into the group between fork and exec, so that its team, threads
//! and worker processes alike, starts there; an external tool or a `cmd` command is moved there
//! itself between fork and exec. A part without a group runs in a thread of the bench. The
//! bench's own threads and the scheduler it starts stay where the bench runs.
//!
//! The controller (the bench's thread that runs the workload) writes the groups' knobs, starts
//! the parts, and drives the [`super::gate`]: when every part's tasks are ready it releases
//! them all at once; when every part is warm and the warm-up has passed it opens one window for
//! all; it closes it after `--window`, or, when a part does fixed work or times itself
//! (messaging, the external tools, cmd), once every such part has ended: the time-based parts
//! then run until the last fixed-work part ends (a run in which one of them had not begun its
//! window by then is invalid). Each part's metrics come back under its label
//! (`lat/wakeup_p99_us`); a workload on its own in a cgroup keeps its metric names. The system
//! counters (and `--trace`, which then follows every task) are read by the controller at the
//! window's edges; the parts' task counters are summed.

use super::gate::{
    ABORTED, FINISHED, LEFT, MAX_PARTS, MEASURING, PartGate, READY, SharedGate, WARM,
};
use super::team::{PHASE_DONE, PHASE_MEASURE};
use super::{Key, Measurement, MetricDef, RunConfig, Workload};
use crate::bench::cgroup::{self, CgroupSpec};
use crate::bench::counters::{Counters, Snapshot};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::thread::ScopedJoinHandle;
use std::time::{Duration, Instant};

/// How long the parts may take to start their tasks.
const READY_TIMEOUT: Duration = Duration::from_secs(90);
/// How long a part's process may take to exit once the window is closed.
const EXIT_TIMEOUT: Duration = Duration::from_secs(30);
/// How often the controller re-checks the parts while it waits.
const POLL: Duration = Duration::from_millis(10);

/// One workload of a composite, or a workload on its own in a cgroup.
pub struct Part {
    /// Its spec without the cgroup keys (what a part's process parses).
    pub spec: String,
    pub cgroup: Option<CgroupSpec>,
    pub workload: Box<dyn Workload>,
    /// Its name in the report, and in a composite the prefix of its metrics (`lat/...`): its
    /// cgroup's name, else its workload's, with `-N` (its place) where two parts would share one.
    pub label: String,
}

impl Part {
    pub fn new(spec: String, cgroup: Option<CgroupSpec>, workload: Box<dyn Workload>) -> Part {
        Part {
            spec,
            cgroup,
            workload,
            label: String::new(),
        }
    }
}

/// A part as bench.json records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartInfo {
    pub label: String,
    pub workload: String,
    pub spec: String,
    pub description: String,
    /// What its metric names start with in the composite ("" for a workload on its own).
    pub metric_prefix: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<CgroupSpec>,
    /// The group's folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_path: Option<PathBuf>,
}

pub struct Composite {
    parts: Vec<Part>,
    quick: bool,
}

impl Composite {
    pub fn new(mut parts: Vec<Part>, quick: bool) -> Result<Composite> {
        if parts.len() > MAX_PARTS {
            bail!("a composite has at most {MAX_PARTS} parts");
        }
        for (i, p) in parts.iter().enumerate() {
            let Some(a) = &p.cgroup else { continue };
            if let Some(b) = parts[..i]
                .iter()
                .filter_map(|q| q.cgroup.as_ref())
                .find(|b| b.name == a.name && *b != a)
            {
                bail!(
                    "two parts give cgroup {} different settings ({} and {})",
                    a.name,
                    b.describe(),
                    a.describe()
                );
            }
        }
        let base: Vec<String> = parts
            .iter()
            .map(|p| match &p.cgroup {
                Some(c) => c.name.clone(),
                None => p.workload.name().to_string(),
            })
            .collect();
        for (i, p) in parts.iter_mut().enumerate() {
            p.label = if base.iter().filter(|b| **b == base[i]).count() > 1 {
                format!("{}-{}", base[i], i + 1)
            } else {
                base[i].clone()
            };
        }
        for (i, p) in parts.iter().enumerate() {
            if parts[..i].iter().any(|q| q.label == p.label) {
                bail!(
                    "two parts would report as {}: give them different cgroups",
                    p.label
                );
            }
        }
        Ok(Composite { parts, quick })
    }

    fn multi(&self) -> bool {
        self.parts.len() > 1
    }

    /// What part `p`'s metric names start with.
    fn prefix(&self, p: &Part) -> String {
        if self.multi() {
            format!("{}/", p.label)
        } else {
            String::new()
        }
    }

    /// Starts part `index` in its group, as a child process of this binary that gets the gate
    /// as an inherited descriptor and writes its outcome on its standard output.
    fn spawn_child(
        &self,
        p: &Part,
        index: usize,
        group: &Path,
        rc: &RunConfig,
        gate: &SharedGate,
    ) -> Result<Child> {
        let exe = crate::bench::self_exe()?;
        let gate_fd = gate.raw_fd();
        let mut cmd = Command::new(&exe);
        cmd.arg("part")
            .args(["--spec", &p.spec])
            .args(["--index", &index.to_string()])
            .args(["--gate-fd", &gate_fd.to_string()])
            .args(["--warmup-ns", &rc.warmup.as_nanos().to_string()])
            .args(["--window-ns", &rc.window.as_nanos().to_string()])
            .args(["--max-run-ns", &rc.max_run.as_nanos().to_string()]);
        if self.quick {
            cmd.arg("--quick");
        }
        if rc.processes {
            cmd.arg("--processes");
        }
        let procs = cgroup::procs_file(group)?;
        // SAFETY: getpid has no preconditions.
        let bench = unsafe { libc::getpid() };
        // SAFETY: only async-signal-safe calls (fcntl, prctl, getppid, raise, and enter()'s
        // open, write, close) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                // The gate stays open across exec, at the number the child is told.
                if libc::fcntl(gate_fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // Should the bench die (SIGKILL), the part goes with it.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != bench {
                    libc::raise(libc::SIGKILL);
                }
                cgroup::enter(&procs)
            });
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot start {} for part {}", exe.display(), p.label))
    }

    /// Drives the gate through one run: release, warm-up, window. Returns the controller's
    /// readings at the window's edges, or why the run failed.
    fn control(
        &self,
        gate: &SharedGate,
        rc: &RunConfig,
        running: &mut [Running<'_>],
    ) -> std::result::Result<Edges, String> {
        let n = self.parts.len();
        let fixed: Vec<usize> = (0..n)
            .filter(|&i| self.parts[i].workload.self_timed())
            .collect();
        let mut wait = |what: &str, until: Option<Instant>, done: &dyn Fn() -> bool| {
            loop {
                let seq = gate.seq();
                if done() {
                    return Ok(());
                }
                if crate::bench::interrupted() {
                    return Err("interrupted".to_string());
                }
                for (i, r) in running.iter_mut().enumerate() {
                    let st = gate.state_of(i);
                    if (st & LEFT != 0 || r.exited()) && st & FINISHED == 0 {
                        return Err(format!(
                            "part {} ended before the window closed",
                            self.parts[i].label
                        ));
                    }
                }
                if until.is_some_and(|u| Instant::now() >= u) {
                    return Err(format!("{what} took too long"));
                }
                gate.wait_step(seq, POLL);
            }
        };
        wait(
            &format!("starting the parts' tasks (limit {READY_TIMEOUT:?})"),
            Some(Instant::now() + READY_TIMEOUT),
            &|| gate.count(n, READY) == n,
        )?;
        gate.open();
        let released = Instant::now();
        let deadline = released + rc.max_run;
        let limit = format!("the run limit of {:?}", rc.max_run);
        wait(&format!("the warm-up ({limit})"), Some(deadline), &|| {
            gate.count(n, WARM) == n && released.elapsed() >= rc.warmup
        })?;
        let s0 = Snapshot::take(&[]);
        let t0 = Instant::now();
        gate.set_phase(PHASE_MEASURE);
        if fixed.is_empty() {
            wait("the window", None, &|| t0.elapsed() >= rc.window)?;
        } else {
            wait(
                &format!("the fixed work of the parts ({limit})"),
                Some(deadline),
                &|| fixed.iter().all(|&i| gate.state_of(i) & FINISHED != 0),
            )?;
            // A time-based part whose window had not begun by then would measure the machine
            // without the fixed work, or nothing at all.
            let late: Vec<&str> = (0..n)
                .filter(|i| !fixed.contains(i) && gate.state_of(*i) & MEASURING == 0)
                .map(|i| self.parts[i].label.as_str())
                .collect();
            if !late.is_empty() {
                return Err(format!(
                    "the fixed work ended before {} began measuring (give it more work)",
                    late.join(", ")
                ));
            }
        }
        let elapsed_s = t0.elapsed().as_secs_f64();
        let s1 = Snapshot::take(&[]);
        gate.set_phase(PHASE_DONE);
        Ok(Edges { s0, s1, elapsed_s })
    }

    /// One measurement of the whole composite from its parts' outcomes.
    fn merge(
        &self,
        window: std::result::Result<Edges, String>,
        outcomes: Vec<Result<Measurement>>,
    ) -> Measurement {
        let mut m = Measurement::default();
        let mut reasons = Vec::new();
        if let Err(why) = &window {
            reasons.push(why.clone());
        }
        let mut counters = Counters {
            migrations: Some(0),
            ..Default::default()
        };
        let mut parts = serde_json::Map::new();
        let mut stopped = Vec::new();
        for (p, outcome) in self.parts.iter().zip(outcomes) {
            let tag = |s: &str| {
                if self.multi() {
                    format!("{}: {s}", p.label)
                } else {
                    s.to_string()
                }
            };
            let pm = match outcome {
                Ok(pm) => pm,
                Err(e) => {
                    let e = format!("{e:#}");
                    if e == ABORTED {
                        stopped.push(tag(&e));
                    } else {
                        reasons.push(tag(&e));
                    }
                    continue;
                }
            };
            let prefix = self.prefix(p);
            for (k, v) in &pm.metrics {
                m.metrics.insert(format!("{prefix}{k}"), *v);
            }
            reasons.extend(pm.invalid.iter().map(|r| tag(r)));
            let c = &pm.counters;
            counters.tasks += c.tasks;
            counters.voluntary += c.voluntary;
            counters.involuntary += c.involuntary;
            counters.exec_ns += c.exec_ns;
            counters.run_delay_ns += c.run_delay_ns;
            counters.timeslices += c.timeslices;
            counters.migrations = counters.migrations.zip(c.migrations).map(|(a, b)| a + b);
            counters
                .per_task_exec_ns
                .extend_from_slice(&c.per_task_exec_ns);
            if self.multi() {
                if m.samples.is_empty() {
                    m.samples = pm.samples.clone();
                }
                parts.insert(
                    p.label.clone(),
                    serde_json::json!({
                        "ops": pm.ops,
                        "elapsed_s": pm.elapsed_s,
                        "counters": pm.counters,
                        "extra": pm.extra,
                    }),
                );
            } else {
                m.ops = pm.ops;
                m.samples = pm.samples;
                m.extra = pm.extra;
            }
        }
        // A part stopped because another failed says nothing more.
        if reasons.is_empty() {
            reasons = stopped;
        }
        m.invalid = reasons;
        if counters.tasks == 0 {
            counters.migrations = None;
        }
        if let Ok(e) = &window {
            counters.add_system(&e.s0, &e.s1);
            m.elapsed_s = e.elapsed_s;
        }
        m.counters = counters;
        if self.multi() {
            m.extra
                .insert("parts".into(), serde_json::Value::Object(parts));
        }
        m
    }
}

/// The controller's readings at the window's edges.
struct Edges {
    s0: Snapshot,
    s1: Snapshot,
    elapsed_s: f64,
}

/// A part while it runs.
enum Running<'s> {
    Thread(ScopedJoinHandle<'s, Result<Measurement>>),
    Child {
        child: Child,
        output: ScopedJoinHandle<'s, Vec<u8>>,
        status: Option<ExitStatus>,
    },
    NotStarted(String),
}

impl Running<'_> {
    /// True once the part's process has exited (threads leave through the gate).
    fn exited(&mut self) -> bool {
        match self {
            Running::Child { child, status, .. } => {
                if status.is_none() {
                    *status = child.try_wait().ok().flatten();
                }
                status.is_some()
            }
            Running::Thread(_) => false,
            Running::NotStarted(_) => true,
        }
    }

    /// The part's outcome, once it has ended (a process that does not exit in time is killed).
    fn outcome(self, label: &str) -> Result<Measurement> {
        match self {
            Running::Thread(h) => h
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("part {label} panicked"))),
            Running::NotStarted(e) => bail!("{e}"),
            Running::Child {
                mut child,
                output,
                mut status,
            } => {
                let t0 = Instant::now();
                while status.is_none() {
                    status = child.try_wait().ok().flatten();
                    if status.is_none() && t0.elapsed() > EXIT_TIMEOUT {
                        // SAFETY: signalling our own child's process group.
                        unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
                        status = child.wait().ok();
                        break;
                    }
                    std::thread::sleep(POLL);
                }
                let bytes = output.join().unwrap_or_default();
                match serde_json::from_slice::<PartOutcome>(&bytes) {
                    Ok(PartOutcome::Ok(m)) => Ok(*m),
                    Ok(PartOutcome::Err(e)) => bail!("{e}"),
                    Err(_) => bail!(
                        "the process of part {label} exited ({}) without a result",
                        status.map_or("not reaped".to_string(), |s| s.to_string())
                    ),
                }
            }
        }
    }
}

/// What a part's process writes on its standard output.
#[derive(Debug, Serialize, Deserialize)]
enum PartOutcome {
    Ok(Box<Measurement>),
    Err(String),
}

fn describe_part(p: &Part) -> String {
    match &p.cgroup {
        Some(c) => format!("{}; {}", p.workload.describe(), c.describe()),
        None => p.workload.describe(),
    }
}

impl Workload for Composite {
    fn name(&self) -> &'static str {
        if self.multi() {
            "composite"
        } else {
            self.parts[0].workload.name()
        }
    }

    fn describe(&self) -> String {
        if !self.multi() {
            return describe_part(&self.parts[0]);
        }
        let fixed = self
            .parts
            .iter()
            .filter(|p| p.workload.self_timed())
            .count();
        let window = match fixed {
            0 => "",
            f if f == self.parts.len() => ", until the last ends",
            _ => ", the time-based ones until the fixed-work ones end",
        };
        let mut s = format!("{} parts at once, in one window{window}:", self.parts.len());
        for p in &self.parts {
            s.push_str(&format!(
                "\n  {}: {} — {}",
                p.label,
                p.workload.name(),
                describe_part(p)
            ));
        }
        s
    }

    fn keys(&self) -> &'static [Key] {
        if self.multi() {
            &[]
        } else {
            self.parts[0].workload.keys()
        }
    }

    fn params(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for p in &self.parts {
            let prefix = self.prefix(p);
            let cg = p.cgroup.iter().flat_map(|c| c.params());
            for (k, v) in p.workload.params().into_iter().chain(cg) {
                out.insert(format!("{prefix}{k}"), v);
            }
        }
        out
    }

    fn metrics(&self) -> Vec<MetricDef> {
        self.parts
            .iter()
            .flat_map(|p| {
                let prefix = self.prefix(p);
                p.workload.metrics().into_iter().map(move |m| MetricDef {
                    name: Cow::Owned(format!("{prefix}{}", m.name)),
                    ..m
                })
            })
            .collect()
    }

    fn self_timed(&self) -> bool {
        self.parts.iter().any(|p| p.workload.self_timed())
    }

    fn names(&self) -> Vec<&'static str> {
        self.parts.iter().map(|p| p.workload.name()).collect()
    }

    fn parts(&self) -> Vec<PartInfo> {
        let base = cgroup::bench_dir(&cgroup::root());
        self.parts
            .iter()
            .map(|p| PartInfo {
                label: p.label.clone(),
                workload: p.workload.name().into(),
                spec: p.spec.clone(),
                description: p.workload.describe(),
                metric_prefix: self.prefix(p),
                cgroup: p.cgroup.clone(),
                cgroup_path: p.cgroup.as_ref().map(|c| base.join(&c.name)),
            })
            .collect()
    }

    fn cgroups(&self) -> Vec<CgroupSpec> {
        self.parts.iter().filter_map(|p| p.cgroup.clone()).collect()
    }

    fn run(&self, rc: &RunConfig) -> Result<Measurement> {
        // The groups' knobs as this workload sets them, before anything starts in them.
        let mut groups: Vec<Option<PathBuf>> = Vec::new();
        for p in &self.parts {
            groups.push(match &p.cgroup {
                None => None,
                Some(c) => {
                    let base = rc
                        .cgroups
                        .as_ref()
                        .context("no cgroups were set up for this session")?;
                    let dir = base.join(&c.name);
                    cgroup::write_knobs(&dir, c)?;
                    Some(dir)
                }
            });
        }
        let gate = Arc::new(SharedGate::new()?);
        Ok(std::thread::scope(|s| {
            let mut running: Vec<Running> = Vec::new();
            let mut failed = None;
            for (i, (p, group)) in self.parts.iter().zip(&groups).enumerate() {
                let pg = PartGate {
                    gate: gate.clone(),
                    index: i,
                };
                match group {
                    Some(dir) if !p.workload.runs_program() => {
                        match self.spawn_child(p, i, dir, rc, &gate) {
                            Ok(mut child) => {
                                let mut out = child.stdout.take();
                                let output = s.spawn(move || {
                                    let mut buf = Vec::new();
                                    if let Some(o) = out.as_mut() {
                                        let _ = o.read_to_end(&mut buf);
                                    }
                                    buf
                                });
                                running.push(Running::Child {
                                    child,
                                    output,
                                    status: None,
                                });
                            }
                            Err(e) => {
                                failed = Some(format!("part {} could not start", p.label));
                                running.push(Running::NotStarted(format!("{e:#}")));
                            }
                        }
                    }
                    _ => {
                        let prc = RunConfig {
                            gate: Some(pg.clone()),
                            program_cgroup: group.clone(),
                            ..rc.clone()
                        };
                        let w = &p.workload;
                        running.push(Running::Thread(s.spawn(move || {
                            let r = w.run(&prc);
                            pg.left();
                            r
                        })));
                    }
                }
                if failed.is_some() {
                    break;
                }
            }
            let window = match failed {
                Some(f) => Err(f),
                None => self.control(&gate, rc, &mut running),
            };
            if window.is_err() {
                gate.abort();
            }
            let mut outcomes: Vec<Result<Measurement>> = running
                .into_iter()
                .zip(&self.parts)
                .map(|(r, p)| r.outcome(&p.label))
                .collect();
            // Parts after one that could not start never ran.
            outcomes.resize_with(self.parts.len(), || Err(anyhow::anyhow!(ABORTED)));
            self.merge(window, outcomes)
        }))
    }
}

/// The hidden `part` subcommand: one part of a composite, or a workload on its own in a cgroup,
/// run by [`Composite`] as a child process of this binary that starts in the part's group.
#[derive(Debug, clap::Args)]
pub struct PartArgs {
    /// The part's spec, without the cgroup keys.
    #[arg(long)]
    pub spec: String,
    #[arg(long)]
    pub index: usize,
    /// The gate, inherited at this descriptor.
    #[arg(long)]
    pub gate_fd: RawFd,
    #[arg(long)]
    pub warmup_ns: u64,
    #[arg(long)]
    pub window_ns: u64,
    #[arg(long)]
    pub max_run_ns: u64,
    #[arg(long)]
    pub quick: bool,
    #[arg(long)]
    pub processes: bool,
}

pub fn part_main(a: PartArgs) -> Result<()> {
    if a.index >= MAX_PARTS || a.gate_fd < 3 {
        bail!("part: started with a bad index or gate descriptor");
    }
    // SAFETY: the bench left the gate open at this number for this process.
    let fd = unsafe { OwnedFd::from_raw_fd(a.gate_fd) };
    // Not for the part's own children.
    // SAFETY: fcntl on a descriptor this process owns.
    unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
    let gate = PartGate {
        gate: Arc::new(SharedGate::from_fd(fd)?),
        index: a.index,
    };
    let rc = RunConfig {
        warmup: Duration::from_nanos(a.warmup_ns),
        window: Duration::from_nanos(a.window_ns),
        max_run: Duration::from_nanos(a.max_run_ns),
        processes: a.processes,
        gate: Some(gate.clone()),
        ..Default::default()
    };
    let outcome = match super::parse_one(&a.spec, a.quick).and_then(|w| w.run(&rc)) {
        Ok(m) => PartOutcome::Ok(Box::new(m)),
        Err(e) => PartOutcome::Err(format!("{e:#}")),
    };
    let mut out = std::io::stdout().lock();
    let written = serde_json::to_writer(&mut out, &outcome)
        .map_err(anyhow::Error::from)
        .and_then(|_| out.flush().map_err(anyhow::Error::from));
    gate.left();
    written.context("part: cannot write the outcome")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::workloads::{parse, testutil::quick_rc};

    #[test]
    fn parts_are_labelled_by_cgroup_or_workload_and_metrics_prefixed() {
        let w = parse(
            "schlat:cgroup=lat:cpu_weight=300+pipe-stream:cgroup=batch:cpu_weight=100",
            true,
        )
        .unwrap();
        assert_eq!(w.name(), "composite");
        assert_eq!(w.names(), ["schlat", "pipe-stream"]);
        let names: Vec<String> = w.metrics().iter().map(|m| m.name.to_string()).collect();
        assert!(
            names.contains(&"lat/wakeup_p99_us".to_string()),
            "{names:?}"
        );
        assert!(
            names.contains(&"batch/writes_per_s".to_string()),
            "{names:?}"
        );
        assert!(
            names[0].starts_with("lat/"),
            "the first part's primary metric leads"
        );
        let d = w.describe();
        assert!(d.contains("2 parts at once"), "{d}");
        assert!(d.contains("cgroup lat, cpu.weight 300"), "{d}");
        assert!(d.contains("cgroup batch, cpu.weight 100"), "{d}");
        let parts = w.parts();
        assert_eq!(parts[1].label, "batch");
        assert_eq!(parts[1].metric_prefix, "batch/");
        assert!(
            parts[1]
                .cgroup_path
                .as_ref()
                .unwrap()
                .ends_with("scx_eevdf_lab.bench/batch")
        );
        assert_eq!(w.params()["lat/cpu_weight"], "300");
        assert_eq!(w.cgroups().len(), 2);

        // Without cgroups: the workloads' names; the same name twice: numbered by place.
        let w = parse("pingpong+pingpong:pairs=2+messaging", true).unwrap();
        let labels: Vec<String> = w.parts().into_iter().map(|p| p.label).collect();
        assert_eq!(labels, ["pingpong-1", "pingpong-2", "messaging"]);
        assert!(
            w.describe()
                .contains("the time-based ones until the fixed-work ones end")
        );

        // On its own in a cgroup: the workload's own metric names.
        let w = parse("pingpong:cgroup=a:cpu_weight=50", true).unwrap();
        assert_eq!(w.name(), "pingpong");
        assert_eq!(w.metrics()[0].name, "handoffs_per_s");
        assert!(
            w.describe().ends_with("; cgroup a, cpu.weight 50"),
            "{}",
            w.describe()
        );
        assert_eq!(w.params()["cgroup"], "a");
    }

    #[test]
    fn bad_composites_are_refused() {
        for (spec, want) in [
            (
                "pingpong:cgroup=a:cpu_weight=5+pingpong:cgroup=a",
                "different settings",
            ),
            (
                "pingpong:cgroup=pingpong-2+pingpong+pingpong",
                "would report as",
            ),
            (&["pingpong"; MAX_PARTS + 1].join("+"), "at most 8 parts"),
        ] {
            let e = format!("{:#}", parse(spec, true).err().expect(spec));
            assert!(e.contains(want), "{spec}: {e}");
        }
        // Two parts may share a group with the same settings.
        assert!(parse("pingpong:cgroup=a+hog-probe:cgroup=a", true).is_ok());
    }

    /// Two parts without cgroups run as threads: one window, each its own metrics.
    #[test]
    fn two_time_based_parts_share_one_window() {
        let w = parse("pingpong+pipe-stream", true).unwrap();
        let m = w.run(&quick_rc()).unwrap();
        assert!(m.invalid.is_empty(), "{:?}", m.invalid);
        assert!(m.metrics["pingpong/handoffs_per_s"] > 0.0);
        assert!(m.metrics["pipe-stream/writes_per_s"] > 0.0);
        assert_eq!(m.counters.tasks, 4);
        assert!(m.counters.system_switches.is_some());
        let parts = m.extra["parts"].as_object().unwrap();
        assert!(parts.contains_key("pingpong") && parts.contains_key("pipe-stream"));
        // The window is --window long (300 ms here), not longer.
        assert!(m.elapsed_s >= 0.3 && m.elapsed_s < 5.0, "{}", m.elapsed_s);
    }

    /// A fixed-work part beside a time-based one: the window lasts until the fixed work ends.
    #[test]
    fn a_fixed_work_part_closes_the_window() {
        let w = parse("messaging:groups=1:fds=2:loops=2000+pingpong", true).unwrap();
        let mut rc = quick_rc();
        rc.window = Duration::from_millis(10);
        let m = w.run(&rc).unwrap();
        assert!(m.invalid.is_empty(), "{:?}", m.invalid);
        let secs = m.metrics["messaging/seconds"];
        assert!(m.metrics["pingpong/handoffs_per_s"] > 0.0);
        // The controller's window holds the messaging part's timed pass.
        assert!(
            m.elapsed_s >= secs * 0.9,
            "window {} s, messaging {secs} s",
            m.elapsed_s
        );
    }

    /// A part that fails stops the others: the run is invalid with that part's reason.
    #[test]
    fn a_failing_part_stops_the_composite() {
        let w = parse("pingpong+cmd:'exit 3':metric=x:better=lower", true).unwrap();
        let m = w.run(&quick_rc()).unwrap();
        assert!(
            m.invalid
                .iter()
                .any(|r| r.contains("cmd: the command exited with 3")),
            "{:?}",
            m.invalid
        );
        assert!(
            m.invalid
                .iter()
                .any(|r| r.contains("part cmd ended before the window closed")),
            "{:?}",
            m.invalid
        );
        assert!(
            !m.invalid.iter().any(|r| r.contains(ABORTED)),
            "{:?}",
            m.invalid
        );
    }

    /// A workload with cgroup= needs the groups the session sets up.
    #[test]
    fn a_cgroup_part_without_the_sessions_groups_fails() {
        let w = parse("pingpong:cgroup=a", true).unwrap();
        let e = w.run(&quick_rc()).unwrap_err();
        assert!(format!("{e:#}").contains("no cgroups were set up"), "{e:#}");
    }
}
