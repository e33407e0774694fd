//! The arms of an A/B comparison and the machinery that puts each one in effect.
//!
//! * `eevdf[:FEATURES][,tunable=value...]` — the kernel's built-in EEVDF, with the debugfs
//!   features and tunables set for its runs through a [`KnobGuard`] that restores them.
//! * `lab[:FEATURES][,tunable=value...]` — our scheduler, started as a child of the bench and
//!   kept attached across consecutive lab runs; features change live through the knobs map.
//! * `scx:PATH [ARGS]` — any other sched_ext scheduler binary, started and stopped around its
//!   runs.
//!
//! An eevdf arm may also set the kernel's own knobs that have no lab counterpart
//! ([`KERNEL_ONLY`]: `preempt=full`, `cgroup_mode=smp`); arms that do not name them run with the
//! values the kernel had when the bench started.
//!
//! FEATURES are tokens in the kernel's syntax (`NO_DELAY_ZERO`), separated by spaces or `+`;
//! they apply on top of the kernel's settings when the bench started, so that `eevdf` and `lab`
//! start from identical settings. Before and after every run [`Runner::check`] re-reads the
//! sched_ext state and the features and tunables in effect; anything unexpected makes the run
//! invalid, with the reason.

use crate::control::{self, Control, Knobs};
use crate::features::{self, FeatureSet, Tunables};
use crate::kernel::{self, KnobGuard, KnobSnapshot};
use crate::sysfs::{self, ScxState};
use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ArmKind {
    Eevdf,
    Lab,
    Scx { path: String, args: Vec<String> },
}

/// An arm as written on the command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArmSpec {
    pub label: String,
    #[serde(flatten)]
    pub kind: ArmKind,
    /// Feature tokens, kernel syntax.
    pub features: Vec<String>,
    /// `name=value` tunable assignments.
    pub tunables: Vec<String>,
    /// `name=value` for the kernel-only knobs of an eevdf arm.
    pub kernel_knobs: Vec<(String, String)>,
}

/// Kernel debugfs knobs without a lab counterpart that an eevdf arm may set.
pub const KERNEL_ONLY: &[&str] = &["preempt", "cgroup_mode"];

impl ArmSpec {
    pub fn parse(s: &str) -> Result<ArmSpec> {
        let s = s.trim();
        if let Some(rest) = s.strip_prefix("scx:") {
            let mut words = rest.split_whitespace().map(String::from);
            let path = words
                .next()
                .context("scx arm: expected scx:PATH [ARGS], e.g. \"scx:/usr/bin/scx_flash\"")?;
            return Ok(ArmSpec {
                label: s.to_string(),
                kind: ArmKind::Scx {
                    path,
                    args: words.collect(),
                },
                features: Vec::new(),
                tunables: Vec::new(),
                kernel_knobs: Vec::new(),
            });
        }
        let (head, tun) = s.split_once(',').unwrap_or((s, ""));
        let (kind, feats) = head.split_once(':').unwrap_or((head, ""));
        let kind = match kind {
            "eevdf" => ArmKind::Eevdf,
            "lab" => ArmKind::Lab,
            _ => bail!(
                "unknown arm {s:?}: expected eevdf[:FEATURES][,tunable=value...], \
                 lab[:FEATURES][,tunable=value...] or scx:PATH [ARGS]"
            ),
        };
        let features: Vec<String> = feats
            .replace('+', " ")
            .split_whitespace()
            .map(String::from)
            .collect();
        let parsed = features::parse_tokens(&features).with_context(|| format!("arm {s:?}"))?;
        if kind == ArmKind::Eevdf
            && let Some((f, _)) = parsed.iter().find(|(f, _)| !f.in_kernel)
        {
            bail!(
                "arm {s:?}: {} is a lab knob, not a kernel feature; it only applies to lab arms",
                f.name
            );
        }
        let mut tunables: Vec<String> = Vec::new();
        let mut kernel_knobs = Vec::new();
        for t in tun.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            match t.split_once('=') {
                Some((name, value)) if KERNEL_ONLY.contains(&name.trim()) => {
                    if kind != ArmKind::Eevdf {
                        bail!(
                            "arm {s:?}: {} is a knob of the kernel's EEVDF only (the lab \
                             preempts at once, like preempt=full, and has no cgroup_mode)",
                            name.trim()
                        );
                    }
                    kernel_knobs.push((name.trim().to_string(), value.trim().to_string()));
                }
                _ => tunables.push(t.to_string()),
            }
        }
        features::parse_assignments(&tunables).with_context(|| {
            format!(
                "arm {s:?} (kernel-only knobs of eevdf arms: {})",
                KERNEL_ONLY.join(" ")
            )
        })?;
        Ok(ArmSpec {
            label: s.to_string(),
            kind,
            features,
            tunables,
            kernel_knobs,
        })
    }

    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            ArmKind::Eevdf => "eevdf",
            ArmKind::Lab => "lab",
            ArmKind::Scx { .. } => "scx",
        }
    }

    /// True when running this arm changes a kernel or scheduler setting (needs root).
    pub fn needs_root(&self) -> bool {
        self.kind != ArmKind::Eevdf
            || !self.features.is_empty()
            || !self.tunables.is_empty()
            || !self.kernel_knobs.is_empty()
    }
}

/// An arm with its settings resolved against the baseline.
#[derive(Debug, Clone, Serialize)]
pub struct Arm {
    pub spec: ArmSpec,
    /// The features this arm runs with (lab knobs included; eevdf arms only use kernel flags).
    #[serde(serialize_with = "ser_features")]
    pub features: FeatureSet,
    pub tunables: Tunables,
}

fn ser_features<S: serde::Serializer>(f: &FeatureSet, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(f.to_line().trim_end())
}

/// The settings every arm starts from: the kernel's when readable, else the defaults.
#[derive(Debug, Clone, Serialize)]
pub struct Baseline {
    #[serde(serialize_with = "ser_features")]
    pub features: FeatureSet,
    pub tunables: Tunables,
    /// Where they came from: "kernel" or "defaults".
    pub source: String,
    /// Kernel feature names the lab does not know (kept as they are).
    pub unknown: Vec<String>,
}

pub fn baseline(ncpus: u64) -> Baseline {
    match KnobSnapshot::read().and_then(|s| {
        let (f, unknown) = s.feature_set();
        Ok((f, s.tunables(ncpus)?, unknown))
    }) {
        Ok((features, tunables, unknown)) => Baseline {
            features,
            tunables,
            source: "kernel".into(),
            unknown,
        },
        Err(_) => Baseline {
            features: FeatureSet::defaults(),
            tunables: Tunables::defaults(ncpus),
            source: "defaults".into(),
            unknown: Vec::new(),
        },
    }
}

impl Arm {
    pub fn resolve(spec: ArmSpec, base: &Baseline, ncpus: u64) -> Result<Arm> {
        Ok(Arm {
            features: base.features.apply(&spec.features)?,
            tunables: base.tunables.apply(&spec.tunables, ncpus)?,
            spec,
        })
    }

    pub fn label(&self) -> &str {
        &self.spec.label
    }
}

fn kernel_flags_differ(a: &FeatureSet, b: &FeatureSet) -> Vec<&'static str> {
    features::FEATURES
        .iter()
        .filter(|f| f.in_kernel && a.is_on(f) != b.is_on(f))
        .map(|f| f.name)
        .collect()
}

fn tunables_differ(a: &Tunables, b: &Tunables) -> Vec<String> {
    features::TUNABLES
        .iter()
        .filter(|t| a.get(t.name) != b.get(t.name))
        .map(|t| {
            format!(
                "{} is {} (asked {})",
                t.name,
                a.get(t.name).unwrap_or(0),
                b.get(t.name).unwrap_or(0)
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
}

/// How long a scheduler may take to attach or detach (generous: emulated VMs are slow).
const ATTACH_TIMEOUT: Duration = Duration::from_secs(60);
const DETACH_TIMEOUT: Duration = Duration::from_secs(30);

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
        Ok(Runner {
            guard,
            base,
            sched: None,
            adopted,
            current: None,
            log_path,
            ncpus,
        })
    }

    /// The kernel knobs as found at the start, when readable.
    pub fn original_knobs(&self) -> Option<&KnobSnapshot> {
        self.guard.as_ref().map(|g| g.original())
    }

    /// Puts arm `i` in effect. Returns true when anything changed (the caller then discards a
    /// warm-up run).
    pub fn switch(&mut self, arms: &[Arm], i: usize) -> Result<bool> {
        let arm = &arms[i];
        self.reap_exited();
        if self.current == Some(i) && (arm.spec.kind == ArmKind::Eevdf || self.attached_ok(i)) {
            return Ok(false);
        }
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
        self.current = Some(i);
        Ok(true)
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
        for tun in features::TUNABLES {
            let want = t.get(tun.name).unwrap_or(0).to_string();
            if now.files.get(tun.name).map(|s| kernel::selected_choice(s)) != Some(want.clone())
                && now.files.contains_key(tun.name)
            {
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
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            // Its own process group: a terminal's Ctrl-C reaches the bench only, which then
            // detaches the scheduler in order.
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot start the scheduler of arm {}", arm.label()))?;
        let mut s = Sched {
            arm: i,
            child,
            enable_seq: 0,
            ops: String::new(),
        };
        let start = Instant::now();
        loop {
            if let Some(st) = s.child.try_wait()? {
                bail!(
                    "the scheduler of arm {} exited ({st}) before attaching; its log ({}):\n{}",
                    arm.label(),
                    self.log_path.display(),
                    tail(&self.log_path, 15)
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
                self.sched = Some(s);
                bail!(
                    "the scheduler of arm {} did not attach within {ATTACH_TIMEOUT:?}",
                    arm.label()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
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
            std::thread::sleep(Duration::from_millis(20));
        };
        wait_state("disabled", DETACH_TIMEOUT)?;
        if !status.success() {
            log::warn!(
                "the scheduler exited with {status}; its log ({}):\n{}",
                self.log_path.display(),
                tail(&self.log_path, 10)
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
        }
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
pub fn wait_state(want: &str, timeout: Duration) -> Result<()> {
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
        std::thread::sleep(Duration::from_millis(20));
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
            let v0 = a
                .events
                .iter()
                .find(|e| &e.0 == name)
                .map(|e| e.1)
                .unwrap_or(0);
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
        .map(|(n, v1)| {
            let v0 = a
                .events
                .iter()
                .find(|e| &e.0 == n)
                .map(|e| e.1)
                .unwrap_or(0);
            (n.clone(), v1.saturating_sub(v0))
        })
        .filter(|(_, d)| *d > 0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_arm_kinds() {
        let a = ArmSpec::parse("eevdf").unwrap();
        assert_eq!(a.kind, ArmKind::Eevdf);
        assert!(a.features.is_empty() && !a.needs_root());
        let b =
            ArmSpec::parse("eevdf:NO_DELAY_ZERO+NO_RUN_TO_PARITY,base_slice_ns=3000000").unwrap();
        assert_eq!(b.features, vec!["NO_DELAY_ZERO", "NO_RUN_TO_PARITY"]);
        assert_eq!(b.tunables, vec!["base_slice_ns=3000000"]);
        let k = ArmSpec::parse("eevdf,preempt=full,cgroup_mode=smp,nr_migrate=8").unwrap();
        assert_eq!(k.tunables, vec!["nr_migrate=8"]);
        assert_eq!(
            k.kernel_knobs,
            vec![
                ("preempt".into(), "full".into()),
                ("cgroup_mode".into(), "smp".into())
            ]
        );
        assert!(ArmSpec::parse("lab,preempt=full").is_err());
        assert!(b.needs_root());
        let c = ArmSpec::parse("lab:NO_DELAY_ZERO DELAY_WAKE_COLD").unwrap();
        assert_eq!(c.kind, ArmKind::Lab);
        assert_eq!(c.features.len(), 2);
        let d = ArmSpec::parse("scx:/usr/bin/scx_flash --slice-us 1000").unwrap();
        assert_eq!(
            d.kind,
            ArmKind::Scx {
                path: "/usr/bin/scx_flash".into(),
                args: vec!["--slice-us".into(), "1000".into()]
            }
        );
        assert_eq!(
            ArmSpec::parse("lab,nr_migrate=8").unwrap().tunables,
            vec!["nr_migrate=8"]
        );
    }

    #[test]
    fn bad_arms_are_refused_with_the_reason() {
        let e = ArmSpec::parse("eevdf:NO_SUCH").unwrap_err();
        assert!(format!("{e:#}").contains("NO_SUCH"));
        let e = ArmSpec::parse("eevdf:DELAY_WAKE_COLD")
            .unwrap_err()
            .to_string();
        assert!(e.contains("lab knob"), "{e}");
        let e = ArmSpec::parse("cfs").unwrap_err().to_string();
        assert!(e.contains("eevdf[:FEATURES]"), "{e}");
        assert!(ArmSpec::parse("lab,base_slice_ns=1").is_err());
        assert!(ArmSpec::parse("scx:").is_err());
    }

    #[test]
    fn arms_resolve_on_top_of_the_baseline() {
        let base = Baseline {
            features: FeatureSet::defaults(),
            tunables: Tunables::defaults(4),
            source: "defaults".into(),
            unknown: vec![],
        };
        let a = Arm::resolve(
            ArmSpec::parse("lab:NO_DELAY_ZERO,base_slice_ns=3000000").unwrap(),
            &base,
            4,
        )
        .unwrap();
        assert_eq!(
            FeatureSet::defaults().diff_tokens(&a.features),
            vec!["NO_DELAY_ZERO"]
        );
        assert_eq!(a.tunables.base_slice_ns, 3_000_000);
        assert_eq!(a.tunables.nr_migrate, base.tunables.nr_migrate);
    }

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
