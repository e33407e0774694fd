//! Puts the arms of a session in effect one after the other, checks before and after every run
//! that the arm is still in effect as asked, and undoes everything at the end.
//!
//! An eevdf arm gets its debugfs features and tunables through a [`KnobGuard`] that restores
//! them; a lab or scx arm gets its scheduler started as a child of the bench (a lab scheduler
//! stays attached across consecutive lab arms and has its knobs changed live). [`Runner::check`]
//! re-reads the sched_ext state and the features and tunables in effect; anything unexpected
//! makes the run invalid, with the reason. What an arm is and how it is written is
//! [`super::arms`]; the order of the runs is [`super::protocol`]. Before it changes anything it
//! writes a [`Journal`] of what it found, removed once it has put everything back itself.

use super::arms::{Arm, ArmKind, Baseline, KERNEL_ONLY};
use super::cgroup;
use super::journal::{self, Journal, LabKnobs, Proc};
use crate::control::{self, Control, Knobs};
use crate::features::{self, FeatureSet};
use crate::kernel::{self, KnobGuard, KnobSnapshot};
use crate::sysfs::{self, ScxState};
use crate::tunables::{self, Tunables};
use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a scheduler may take to attach or detach (generous: loading and verifying the lab
/// took up to 160 s in an emulated VM on two host cores).
const ATTACH_TIMEOUT: Duration = Duration::from_secs(300);
const DETACH_TIMEOUT: Duration = Duration::from_secs(30);

/// How often the sched_ext state and a scheduler process are polled while waiting for them.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// Lines of a scheduler's log shown when it exits with an error, and when it fails to attach.
const LOG_TAIL_ON_EXIT: usize = 10;
const LOG_TAIL_ON_ATTACH_FAILURE: usize = 15;

fn kernel_flags_differ(a: &FeatureSet, b: &FeatureSet) -> Vec<&'static str> {
    features::FEATURES
        .iter()
        .filter(|f| f.in_kernel && a.is_on(f) != b.is_on(f))
        .map(|f| f.name)
        .collect()
}

fn tunables_differ(a: &Tunables, b: &Tunables) -> Vec<String> {
    tunables::TUNABLES
        .iter()
        .filter(|t| a.get(t.name) != b.get(t.name))
        .map(|t| {
            format!(
                "{} is {} (asked {})",
                t.name,
                a.show(t.name).unwrap_or_default(),
                b.show(t.name).unwrap_or_default()
            )
        })
        .collect()
}

/// What the scheduler side looked like at one edge of a run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Observation {
    pub scx: Option<ScxState>,
    /// `root/events` counters (sched_ext 6.15+).
    pub events: Vec<(String, u64)>,
    /// CPU time of the scheduler's userspace process so far (lab and scx arms).
    pub sched_cpu_ns: Option<u64>,
    /// Cost so far of every struct_ops program, by id (with --bpf-stats, lab and scx arms).
    #[serde(skip)]
    pub bpf: BTreeMap<u32, (String, crate::bpfstats::Cost)>,
}

impl Observation {
    /// The value of the `root/events` counter `name` (0 where it was not listed).
    fn event(&self, name: &str) -> u64 {
        self.events.iter().find(|e| e.0 == name).map_or(0, |e| e.1)
    }
}

/// A scheduler process the bench started.
struct Sched {
    arm: usize,
    child: Child,
    enable_seq: u64,
    ops: String,
}

/// Puts arms in effect, checks them, and undoes everything at the end.
pub struct Runner {
    guard: Option<KnobGuard>,
    base: Baseline,
    sched: Option<Sched>,
    /// A lab daemon that was already running (lab-only benches): its knobs to put back.
    adopted: Option<(Knobs, u64)>,
    current: Option<usize>,
    log_path: PathBuf,
    ncpus: u64,
    /// What to put back should the bench die without restoring (root only: others change
    /// nothing).
    journal: Option<Journal>,
    /// The kernel's BPF run-time statistics, on while this is open (--bpf-stats).
    bpf_stats: Option<std::os::fd::OwnedFd>,
    /// What the bench changed in cgroup v2 for workloads with `cgroup=`, undone at the end.
    cgroups: cgroup::Changes,
}

impl Runner {
    /// Checks the starting state (refusing a foreign scheduler) and takes the knob guard.
    pub fn new(arms: &[Arm], base: Baseline, log_path: PathBuf, ncpus: u64) -> Result<Runner> {
        let needs_knobs = arms.iter().any(|a| {
            a.spec.kind == ArmKind::Eevdf
                && (!a.spec.features.is_empty() || !a.spec.tunables.is_empty())
        });
        if needs_knobs {
            kernel::require_debugfs()?;
        }
        let any_scx = arms.iter().any(|a| a.spec.kind != ArmKind::Eevdf);
        if any_scx {
            sysfs::require_sched_ext()?;
        }
        let mut adopted = None;
        if Path::new(sysfs::SCX_ROOT).is_dir() {
            let st = sysfs::read_state()?;
            if st.state != "disabled" {
                let lab_only = arms.iter().all(|a| a.spec.kind == ArmKind::Lab);
                if st.is_ours() && lab_only && Path::new(control::PIN_PATH).exists() {
                    let k = Control::open()?.read()?;
                    log::info!(
                        "using the running lab scheduler ({}); its features and tunables are \
                         put back at the end",
                        st.ops.as_deref().unwrap_or("?")
                    );
                    adopted = Some((k, st.enable_seq));
                } else {
                    bail!(
                        "a sched_ext scheduler that this bench did not start is attached: {} \
                         (state {}); detach it first{}",
                        st.ops.as_deref().unwrap_or("?"),
                        st.state,
                        if st.is_ours() {
                            " (a running lab scheduler is only reused when every arm is a lab arm)"
                        } else {
                            ""
                        }
                    );
                }
            }
        }
        let guard = if kernel::require_debugfs().is_ok() && crate::preflight::is_root() {
            Some(KnobGuard::new()?)
        } else {
            None
        };
        let journal = if crate::preflight::is_root() {
            let j = Journal::new(
                guard.as_ref().map(|g| g.original().clone()),
                adopted.map(|(k, _): (Knobs, u64)| LabKnobs {
                    features: k.features,
                    tunables: k.tunables,
                }),
            )?;
            j.save(Path::new(journal::PATH))?;
            Some(j)
        } else {
            None
        };
        Ok(Runner {
            guard,
            base,
            sched: None,
            adopted,
            current: None,
            log_path,
            ncpus,
            journal,
            bpf_stats: None,
            cgroups: cgroup::Changes::default(),
        })
    }

    /// Creates the session's cgroups (see [`cgroup::setup`]), each change recorded in the
    /// journal before it is made; returns the bench's cgroup folder. They are removed by
    /// [`Runner::shutdown`].
    pub fn setup_cgroups(&mut self, root: &Path, specs: &[cgroup::CgroupSpec]) -> Result<PathBuf> {
        let Some(journal) = self.journal.as_mut() else {
            bail!("workloads with cgroup= need root (the bench journals the groups it creates)");
        };
        let mut names: Vec<String> = specs.iter().map(|c| c.name.clone()).collect();
        names.sort();
        names.dedup();
        let need_idle = specs.iter().any(|c| c.cpu_idle.is_some());
        cgroup::setup(root, &names, need_idle, &mut self.cgroups, &mut |c| {
            journal.cgroups = c.clone();
            journal.save(Path::new(journal::PATH))
        })
    }

    /// Records the scheduler process the bench runs now (None: none) in the journal.
    fn journal_scheduler(&mut self, s: Option<Proc>) -> Result<()> {
        if let Some(j) = self.journal.as_mut()
            && j.scheduler != s
        {
            j.scheduler = s;
            j.save(Path::new(journal::PATH))?;
        }
        Ok(())
    }

    /// The kernel knobs as found at the start, when readable.
    pub fn original_knobs(&self) -> Option<&KnobSnapshot> {
        self.guard.as_ref().map(|g| g.original())
    }

    /// Puts arm `i` in effect. Returns true when anything changed (the caller then discards a
    /// warm-up run). After an error no arm counts as in effect, so the next switch sets
    /// everything again.
    pub fn switch(&mut self, arms: &[Arm], i: usize) -> Result<bool> {
        self.reap_exited();
        if self.current == Some(i) && (arms[i].spec.kind == ArmKind::Eevdf || self.attached_ok(i)) {
            return Ok(false);
        }
        self.current = None;
        self.put_in_effect(arms, i)?;
        self.current = Some(i);
        Ok(true)
    }

    fn put_in_effect(&mut self, arms: &[Arm], i: usize) -> Result<()> {
        let arm = &arms[i];
        match &arm.spec.kind {
            ArmKind::Eevdf => {
                self.detach()?;
                self.set_kernel(&arm.features, &arm.tunables)?;
                self.set_kernel_only(&arm.spec.kernel_knobs)?;
            }
            ArmKind::Lab => {
                let base = self.base.clone();
                self.set_kernel(&base.features, &base.tunables)?;
                self.set_kernel_only(&[])?;
                let lab_attached = self.adopted.is_some()
                    || self
                        .sched
                        .as_ref()
                        .is_some_and(|s| arms[s.arm].spec.kind == ArmKind::Lab);
                if !lab_attached {
                    self.detach()?;
                    self.attach(arms, i)?;
                }
                if let Some(s) = self.sched.as_mut() {
                    s.arm = i;
                }
                let (f, t) = (arm.features, arm.tunables);
                Control::open()?.update(|k| {
                    k.features = f;
                    k.tunables = t;
                    Ok(())
                })?;
            }
            ArmKind::Scx { .. } => {
                let base = self.base.clone();
                self.set_kernel(&base.features, &base.tunables)?;
                self.set_kernel_only(&[])?;
                self.detach()?;
                self.attach(arms, i)?;
            }
        }
        Ok(())
    }

    fn attached_ok(&self, i: usize) -> bool {
        if self.adopted.is_some() {
            return true;
        }
        self.sched.as_ref().is_some_and(|s| s.arm == i)
    }

    /// Forgets a scheduler process that exited by itself (it is reported by check()).
    fn reap_exited(&mut self) {
        if let Some(s) = self.sched.as_mut()
            && let Ok(Some(st)) = s.child.try_wait()
        {
            log::warn!("the scheduler of arm {} exited ({st})", s.arm);
            self.sched = None;
            self.current = None;
            if let Err(e) = self.journal_scheduler(None) {
                log::warn!("{e:#}");
            }
            let _ = wait_state("disabled", DETACH_TIMEOUT);
        }
    }

    /// The kernel-only knobs: the arm's values, the others as the kernel had them at the start.
    fn set_kernel_only(&mut self, knobs: &[(String, String)]) -> Result<()> {
        let Some(g) = self.guard.as_mut() else {
            return Ok(());
        };
        let original = g.original().clone();
        let now = KnobSnapshot::read()?;
        for name in KERNEL_ONLY {
            let Some(orig) = original.files.get(*name) else {
                if knobs.iter().any(|(n, _)| n == name) {
                    bail!("this kernel has no {name} knob");
                }
                continue;
            };
            let want = knobs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| kernel::selected_choice(orig));
            if now.files.get(*name).map(|v| kernel::selected_choice(v)) != Some(want.clone()) {
                g.set_file(name, &want)?;
            }
        }
        Ok(())
    }

    fn set_kernel(&mut self, f: &FeatureSet, t: &Tunables) -> Result<()> {
        let Some(g) = self.guard.as_mut() else {
            return Ok(());
        };
        g.set_features(f)?;
        let now = KnobSnapshot::read()?;
        for tun in tunables::TUNABLES {
            let want = t.show(tun.name).unwrap_or_default();
            let Some(have) = now.files.get(tun.name) else {
                // Without PREEMPT_DYNAMIC there is no preempt file: the boot's model stays.
                if tun.name == "preempt" && t.preempt != tunables::PREEMPT_FULL {
                    bail!("this kernel has no preempt knob (no PREEMPT_DYNAMIC)");
                }
                // Before 7.3 there is no cgroup_mode: its group shares are smp's.
                if tun.name == "cgroup_mode" && t.cgroup_mode != tunables::CGROUP_SMP {
                    bail!(
                        "this kernel has no cgroup_mode knob (before 7.3: its groups' shares are smp's)"
                    );
                }
                continue;
            };
            if kernel::selected_choice(have) != want {
                g.set_file(tun.name, &want)?;
            }
        }
        Ok(())
    }

    fn attach(&mut self, arms: &[Arm], i: usize) -> Result<()> {
        let arm = &arms[i];
        let mut cmd = match &arm.spec.kind {
            ArmKind::Lab => {
                let exe = crate::bench::self_exe()?;
                let mut c = Command::new(exe);
                c.arg("--features")
                    .arg(arm.features.to_line().trim_end())
                    .arg("--set")
                    .arg(arm.tunables.to_assignments().join(","));
                c
            }
            ArmKind::Scx { path, args } => {
                let mut c = Command::new(path);
                c.args(args);
                c
            }
            ArmKind::Eevdf => unreachable!("eevdf arms attach nothing"),
        };
        // The kernel bumps enable_seq once the scheduler is fully enabled, which may be read a
        // moment after `state` says enabled: wait for both.
        let seq0 = sysfs::read_state()?.enable_seq;
        let log = File::options()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .with_context(|| format!("cannot open {}", self.log_path.display()))?;
        // SAFETY: getpid has no preconditions.
        let bench = unsafe { libc::getpid() };
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            // Its own process group: a terminal's Ctrl-C reaches the bench only, which then
            // detaches the scheduler in order.
            .process_group(0);
        // SAFETY: only async-signal-safe calls between fork and exec.
        let child = unsafe {
            child.pre_exec(move || {
                // Should the bench die without stopping it (SIGKILL), it detaches by itself.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGINT) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != bench {
                    libc::raise(libc::SIGINT);
                }
                Ok(())
            })
        }
        .spawn()
        .with_context(|| format!("cannot start the scheduler of arm {}", arm.label()))?;
        let proc = Proc::of(child.id());
        let mut s = Sched {
            arm: i,
            child,
            enable_seq: 0,
            ops: String::new(),
        };
        if let Err(e) = self.journal_scheduler(proc) {
            self.sched = Some(s);
            return Err(e);
        }
        let start = Instant::now();
        loop {
            if let Some(st) = s.child.try_wait()? {
                bail!(
                    "the scheduler of arm {} exited ({st}) before attaching; its log ({}):\n{}",
                    arm.label(),
                    self.log_path.display(),
                    tail(&self.log_path, LOG_TAIL_ON_ATTACH_FAILURE)
                );
            }
            if crate::bench::interrupted() {
                self.sched = Some(s);
                bail!("interrupted");
            }
            let st = sysfs::read_state()?;
            let ours_ready = st.is_ours() && Path::new(control::PIN_PATH).exists();
            let ready = st.is_enabled()
                && st.enable_seq != seq0
                && match arm.spec.kind {
                    ArmKind::Lab => ours_ready,
                    _ => true,
                };
            if ready {
                s.enable_seq = st.enable_seq;
                s.ops = st.ops.unwrap_or_default();
                break;
            }
            if start.elapsed() > ATTACH_TIMEOUT {
                // Stopped here, so that the next arm does not take it for an attached one.
                self.sched = Some(s);
                if let Err(e) = self.detach() {
                    log::warn!("stopping the scheduler that did not attach: {e:#}");
                }
                bail!(
                    "the scheduler of arm {} did not attach within {ATTACH_TIMEOUT:?}",
                    arm.label()
                );
            }
            std::thread::sleep(POLL_INTERVAL);
        }
        log::info!("attached {} ({})", arm.label(), s.ops);
        self.sched = Some(s);
        Ok(())
    }

    /// Stops the scheduler the bench started, if any, and waits for sched_ext to be disabled.
    pub fn detach(&mut self) -> Result<()> {
        let Some(mut s) = self.sched.take() else {
            return Ok(());
        };
        self.current = None;
        // SAFETY: signalling our own child.
        unsafe { libc::kill(s.child.id() as libc::pid_t, libc::SIGINT) };
        let start = Instant::now();
        let status = loop {
            if let Some(st) = s.child.try_wait()? {
                break st;
            }
            if start.elapsed() > DETACH_TIMEOUT {
                let _ = s.child.kill();
                let st = s.child.wait()?;
                log::warn!("the scheduler did not exit within {DETACH_TIMEOUT:?} of SIGINT");
                break st;
            }
            std::thread::sleep(POLL_INTERVAL);
        };
        self.journal_scheduler(None)?;
        wait_state("disabled", DETACH_TIMEOUT)?;
        if !status.success() {
            log::warn!(
                "the scheduler exited with {status}; its log ({}):\n{}",
                self.log_path.display(),
                tail(&self.log_path, LOG_TAIL_ON_EXIT)
            );
        }
        Ok(())
    }

    pub fn observe(&self) -> Observation {
        Observation {
            scx: sysfs::read_state().ok(),
            events: sysfs::read_events(),
            sched_cpu_ns: self
                .sched
                .as_ref()
                .and_then(|s| super::counters::process_cpu_ns(s.child.id() as i32)),
            bpf: if self.bpf_stats.is_some() && self.sched.is_some() {
                crate::bpfstats::struct_ops_costs()
            } else {
                BTreeMap::new()
            },
        }
    }

    /// Turns on the kernel's BPF run-time statistics until the runner is dropped.
    pub fn enable_bpf_stats(&mut self) -> Result<()> {
        self.bpf_stats = Some(crate::bpfstats::enable()?);
        Ok(())
    }

    /// Everything about arm `i` that is not as it should be right now.
    pub fn check(&mut self, arms: &[Arm], i: usize) -> Vec<String> {
        let arm = &arms[i];
        let mut bad = Vec::new();
        if self.current != Some(i) {
            bad.push(format!("arm {} is not in effect", arm.label()));
        }
        let st = sysfs::read_state().ok();
        match &arm.spec.kind {
            ArmKind::Eevdf => {
                if let Some(st) = &st
                    && st.state != "disabled"
                {
                    bad.push(format!(
                        "sched_ext is {} ({}) during a built-in EEVDF run",
                        st.state,
                        st.ops.as_deref().unwrap_or("?")
                    ));
                }
                if self.guard.is_some() || !arm.spec.features.is_empty() {
                    match KnobSnapshot::read() {
                        Ok(snap) => {
                            let (now, _) = snap.feature_set();
                            let off = kernel_flags_differ(&now, &arm.features);
                            if !off.is_empty() {
                                bad.push(format!(
                                    "kernel features not as asked: {}",
                                    off.join(" ")
                                ));
                            }
                            match snap.tunables(self.ncpus) {
                                Ok(t) => bad.extend(
                                    tunables_differ(&t, &arm.tunables)
                                        .into_iter()
                                        .map(|d| format!("kernel tunable {d}")),
                                ),
                                Err(e) => bad.push(format!("cannot read kernel tunables: {e:#}")),
                            }
                        }
                        Err(e) => bad.push(format!("cannot read kernel features: {e:#}")),
                    }
                }
            }
            ArmKind::Lab | ArmKind::Scx { .. } => {
                let (want_seq, want_ops, alive) = match (&mut self.sched, &self.adopted) {
                    (Some(s), _) => (
                        Some(s.enable_seq),
                        Some(s.ops.clone()),
                        matches!(s.child.try_wait(), Ok(None)),
                    ),
                    (None, Some((_, seq))) => (Some(*seq), None, true),
                    (None, None) => (None, None, false),
                };
                if !alive {
                    bad.push("the scheduler process exited".into());
                }
                match &st {
                    None => bad.push("cannot read /sys/kernel/sched_ext".into()),
                    Some(st) => {
                        if !st.is_enabled() {
                            bad.push(format!("sched_ext state is {}", st.state));
                        }
                        if want_seq.is_some_and(|s| s != st.enable_seq) {
                            bad.push(format!(
                                "enable_seq changed ({} → {}): the scheduler was reloaded",
                                want_seq.unwrap_or(0),
                                st.enable_seq
                            ));
                        }
                        if let Some(ops) = want_ops
                            && st.ops.as_deref() != Some(ops.as_str())
                        {
                            bad.push(format!(
                                "the attached scheduler is {} instead of {ops}",
                                st.ops.as_deref().unwrap_or("none")
                            ));
                        }
                    }
                }
                if arm.spec.kind == ArmKind::Lab && alive {
                    match Control::open().and_then(|c| c.read()) {
                        Ok(k) => {
                            let off = arm.features.diff_tokens(&k.features);
                            if !off.is_empty() {
                                bad.push(format!(
                                    "lab features not as asked (in effect: {})",
                                    off.join(" ")
                                ));
                            }
                            bad.extend(
                                tunables_differ(&k.tunables, &arm.tunables)
                                    .into_iter()
                                    .map(|d| format!("lab tunable {d}")),
                            );
                        }
                        Err(e) => bad.push(format!("cannot read the lab's knobs: {e:#}")),
                    }
                }
            }
        }
        bad
    }

    /// The features line in effect for an arm's kind, re-read (None where there is none).
    pub fn features_in_effect(&self, arm: &Arm) -> Option<String> {
        match arm.spec.kind {
            ArmKind::Eevdf => KnobSnapshot::read()
                .ok()
                .map(|s| s.features.trim().to_string()),
            ArmKind::Lab => Control::open()
                .and_then(|c| c.read())
                .ok()
                .map(|k| k.features.to_line().trim_end().to_string()),
            ArmKind::Scx { .. } => None,
        }
    }

    /// Detaches, puts an adopted scheduler's knobs back and restores the kernel's knobs.
    /// Returns every error instead of stopping at the first.
    pub fn shutdown(&mut self) -> Vec<String> {
        let mut errors = Vec::new();
        if let Err(e) = self.detach() {
            errors.push(format!("detaching: {e:#}"));
        }
        if !self.cgroups.is_empty() {
            match cgroup::undo(&self.cgroups) {
                Ok(done) => {
                    for d in done.iter().filter(|d| d.starts_with("killed")) {
                        log::warn!("{d}");
                    }
                    self.cgroups = cgroup::Changes::default();
                    if let Some(j) = self.journal.as_mut() {
                        j.cgroups = cgroup::Changes::default();
                        if let Err(e) = j.save(Path::new(journal::PATH)) {
                            errors.push(format!("{e:#}"));
                        }
                    }
                }
                Err(e) => errors.push(format!("removing the bench's cgroups: {e:#}")),
            }
        }
        if let Some((k, _)) = self.adopted.take()
            && let Err(e) = Control::open().and_then(|c| {
                c.update(|now| {
                    now.features = k.features;
                    now.tunables = k.tunables;
                    Ok(())
                })
            })
        {
            errors.push(format!("restoring the running lab's knobs: {e:#}"));
        }
        if let Some(g) = self.guard.as_mut()
            && let Err(e) = g.restore()
        {
            errors.push(format!("{e:#}"));
        }
        if self.journal.is_some() {
            if errors.is_empty() {
                match Journal::remove(Path::new(journal::PATH)) {
                    Ok(()) => self.journal = None,
                    Err(e) => errors.push(format!("{e:#}")),
                }
            } else {
                errors.push(format!(
                    "{} is kept: `scx_eevdf_lab restore` tries again",
                    journal::PATH
                ));
            }
        }
        errors
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        for e in self.shutdown() {
            log::error!("{e}");
        }
        // The guard restores again on its own drop (a no-op once restored).
    }
}

/// Waits until `/sys/kernel/sched_ext/state` reads `want` (no-op without sched_ext).
fn wait_state(want: &str, timeout: Duration) -> Result<()> {
    if !Path::new(sysfs::SCX_ROOT).is_dir() {
        return Ok(());
    }
    let start = Instant::now();
    loop {
        let st = sysfs::read_state()?;
        if st.state == want {
            return Ok(());
        }
        if start.elapsed() > timeout {
            bail!(
                "sched_ext state is {} after {timeout:?} (expected {want})",
                st.state
            );
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

fn tail(p: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(p).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Validity problems between two observations of one run (state flips, reloads, bypass).
pub fn compare_observations(kind: &ArmKind, a: &Observation, b: &Observation) -> Vec<String> {
    let mut bad = Vec::new();
    if let (Some(x), Some(y)) = (&a.scx, &b.scx) {
        if x.enable_seq != y.enable_seq {
            bad.push(format!(
                "enable_seq changed during the run ({} → {})",
                x.enable_seq, y.enable_seq
            ));
        }
        if x.state != y.state {
            bad.push(format!(
                "sched_ext state changed during the run ({} → {})",
                x.state, y.state
            ));
        }
    }
    if *kind != ArmKind::Eevdf {
        for (name, v1) in &b.events {
            let v0 = a.event(name);
            if name.contains("BYPASS_ACTIVATE") && *v1 > v0 {
                bad.push(format!(
                    "sched_ext entered bypass mode during the run ({name} +{})",
                    v1 - v0
                ));
            }
        }
    }
    bad
}

/// `root/events` deltas of a run.
pub fn event_deltas(a: &Observation, b: &Observation) -> Vec<(String, u64)> {
    b.events
        .iter()
        .map(|(n, v1)| (n.clone(), v1.saturating_sub(a.event(n))))
        .filter(|(_, d)| *d > 0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_flag_reloads_and_bypass() {
        let st = |seq| ScxState {
            state: "enabled".into(),
            ops: Some("eevdf_lab".into()),
            enable_seq: seq,
            hotplug_seq: 0,
            nr_rejected: 0,
        };
        let a = Observation {
            scx: Some(st(3)),
            events: vec![
                ("SCX_EV_BYPASS_ACTIVATE".into(), 1),
                ("SCX_EV_SELECT_CPU_FALLBACK".into(), 5),
            ],
            sched_cpu_ns: None,
            bpf: BTreeMap::new(),
        };
        let mut b = a.clone();
        assert!(compare_observations(&ArmKind::Lab, &a, &b).is_empty());
        b.scx = Some(st(4));
        b.events[0].1 = 2;
        b.events[1].1 = 9;
        let bad = compare_observations(&ArmKind::Lab, &a, &b);
        assert_eq!(bad.len(), 2, "{bad:?}");
        assert_eq!(
            event_deltas(&a, &b),
            vec![
                ("SCX_EV_BYPASS_ACTIVATE".to_string(), 1),
                ("SCX_EV_SELECT_CPU_FALLBACK".to_string(), 4)
            ]
        );
    }
}
