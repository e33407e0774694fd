//! The bench's workload generators and the machinery they share.
//!
//! Every workload is a team of tasks (threads by default, processes of this same binary with
//! `--processes`) that register, wait for one "go", run until told to stop, and wait for leave
//! to exit, so that the controller can read each task's counters at both edges of the
//! measurement window. The team's control block lives in a shared memory mapping (a memfd), so
//! threads and processes use the same atomics and futexes. Workloads stop by themselves: every
//! blocking wait has a timeout or is broken by a closed file descriptor, and every run has a
//! time limit.

pub mod external;
pub mod hog_probe;
pub mod messaging;
pub mod pingpong;
pub mod pipe_stream;
pub mod schlat;
pub mod weights;

pub(crate) use crate::topology::allowed_cpus;

use super::counters::{Counters, Snapshot};
use super::stats::{Better, MeanKind};
use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::collections::BTreeMap;
use std::ops::Deref;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The most tasks one team may have.
pub const MAX_TASKS: usize = 2048;

/// One metric a workload reports per run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MetricDef {
    pub name: &'static str,
    pub unit: &'static str,
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
        name,
        unit,
        better,
        mean,
    }
}

/// What one run of a workload measured.
#[derive(Debug, Clone, Default, Serialize)]
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
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// In-run warm-up before the window (time-based workloads).
    pub warmup: Duration,
    /// The measurement window (time-based workloads).
    pub window: Duration,
    /// Hard limit for one run, warm-up included; a run that hits it is invalid.
    pub max_run: Duration,
    /// Tasks as processes of this binary instead of threads.
    pub processes: bool,
}

/// A workload, configured from its `name[:key=value...]` spec.
pub trait Workload: Send + Sync {
    fn name(&self) -> &'static str;
    /// One line for the report header: what it does and with which parameters.
    fn describe(&self) -> String;
    /// The effective parameters (defaults included), for the JSON document.
    fn params(&self) -> BTreeMap<String, String>;
    /// What each run reports; the first is the primary metric.
    fn metrics(&self) -> Vec<MetricDef>;
    fn run(&self, rc: &RunConfig) -> Result<Measurement>;
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
];

/// Key/value parameters of a workload spec.
#[derive(Debug, Default)]
pub struct Params {
    kv: BTreeMap<String, String>,
}

impl Params {
    pub fn parse(spec: &str, allowed: &[&str]) -> Result<Params> {
        let mut kv = BTreeMap::new();
        for item in spec.split(':').filter(|s| !s.is_empty()) {
            let Some((k, v)) = item.split_once('=') else {
                bail!("expected KEY=VALUE in the workload parameters, got {item:?}");
            };
            if !allowed.contains(&k) {
                bail!(
                    "unknown parameter {k:?}; this workload takes: {}",
                    allowed.join(" ")
                );
            }
            kv.insert(k.to_string(), v.to_string());
        }
        Ok(Params { kv })
    }

    pub fn u64(&self, key: &str, default: u64) -> Result<u64> {
        match self.kv.get(key) {
            None => Ok(default),
            Some(v) => v
                .replace('_', "")
                .parse()
                .with_context(|| format!("{key}={v:?} is not a non-negative integer")),
        }
    }

    pub fn str<'a>(&'a self, key: &str, default: &'a str) -> &'a str {
        self.kv.get(key).map(|s| s.as_str()).unwrap_or(default)
    }

    pub fn opt(&self, key: &str) -> Option<&str> {
        self.kv.get(key).map(|s| s.as_str())
    }

    pub fn flag(&self, key: &str, default: bool) -> Result<bool> {
        match self.kv.get(key).map(|s| s.as_str()) {
            None => Ok(default),
            Some("1" | "yes" | "true" | "on") => Ok(true),
            Some("0" | "no" | "false" | "off") => Ok(false),
            Some(v) => bail!("{key}={v:?}: expected 1 or 0"),
        }
    }
}

/// Builds a workload from `name[:key=value...]`. `quick` picks smaller defaults.
pub fn parse(spec: &str, quick: bool) -> Result<Box<dyn Workload>> {
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
        _ => bail!(
            "unknown workload {name:?}; workloads: {}",
            NAMES.iter().map(|n| n.0).collect::<Vec<_>>().join(" ")
        ),
    })
}

// ------------------------------------------------------------------------------------------------
// The shared control block
// ------------------------------------------------------------------------------------------------

/// Phases of [`Ctl::phase`].
pub const PHASE_WARMUP: u32 = 0;
pub const PHASE_MEASURE: u32 = 1;
pub const PHASE_DONE: u32 = 2;

/// One task's counters, on its own cache line.
#[repr(C, align(64))]
pub struct Slot {
    /// Operations done so far (the workload's unit).
    pub ops: AtomicU64,
    /// A second per-task number (workload-specific).
    pub aux: AtomicU64,
}

/// The team's control block. All-zero is the initial state.
#[repr(C)]
pub struct Ctl {
    pub go: AtomicU32,
    pub stop: AtomicU32,
    /// Tasks may exit once this is set (after the controller read their counters).
    pub exit: AtomicU32,
    pub phase: AtomicU32,
    pub ready: AtomicU32,
    pub done: AtomicU32,
    /// Workload-specific progress count (messaging: receivers past a phase).
    pub progress: AtomicU32,
    pub tids: [AtomicI32; MAX_TASKS],
    pub slots: [Slot; MAX_TASKS],
}

/// The control block in a shared mapping of a memfd, which worker processes inherit.
pub struct SharedCtl {
    ptr: *mut Ctl,
    fd: OwnedFd,
}

// SAFETY: Ctl holds only atomics; the mapping lives as long as the SharedCtl.
unsafe impl Send for SharedCtl {}
unsafe impl Sync for SharedCtl {}

impl SharedCtl {
    pub fn new() -> Result<Self> {
        // SAFETY: plain syscalls on a fresh fd.
        let fd = unsafe { libc::memfd_create(c"lab-bench-ctl".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error()).context("memfd_create");
        }
        // SAFETY: fd was just created and is owned here.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let len = std::mem::size_of::<Ctl>();
        // SAFETY: fd is valid.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(std::io::Error::last_os_error()).context("ftruncate of the control block");
        }
        Self::map(fd)
    }

    /// Maps a control block inherited as `fd` (worker processes).
    pub fn from_fd(fd: OwnedFd) -> Result<Self> {
        Self::map(fd)
    }

    fn map(fd: OwnedFd) -> Result<Self> {
        let len = std::mem::size_of::<Ctl>();
        // SAFETY: a shared mapping of a file at least `len` long; zero pages are a valid Ctl.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error()).context("mmap of the control block");
        }
        Ok(SharedCtl {
            ptr: ptr.cast(),
            fd,
        })
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl Deref for SharedCtl {
    type Target = Ctl;
    fn deref(&self) -> &Ctl {
        // SAFETY: mapped in new()/from_fd() and unmapped only in drop.
        unsafe { &*self.ptr }
    }
}

impl Drop for SharedCtl {
    fn drop(&mut self) {
        // SAFETY: the mapping made in map().
        unsafe { libc::munmap(self.ptr.cast(), std::mem::size_of::<Ctl>()) };
    }
}

/// Sleeps until `*w != expected`, a wake-up, or the timeout. Shared (not private) futex: the
/// word may live in memory shared with other processes.
pub fn futex_wait(w: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: the futex word is a valid, aligned u32 for the duration of the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            w.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            0usize,
            0u32,
        );
    }
}

pub fn futex_wake(w: &AtomicU32) {
    // SAFETY: as futex_wait.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            w.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            0usize,
            0usize,
            0u32,
        );
    }
}

/// Waits until `pred(*w)` holds, re-checking at least every 20 ms.
pub fn wait_for(w: &AtomicU32, pred: impl Fn(u32) -> bool) {
    loop {
        let v = w.load(Ordering::Acquire);
        if pred(v) {
            return;
        }
        futex_wait(w, v, Duration::from_millis(20));
    }
}

pub fn gettid() -> i32 {
    // SAFETY: no preconditions.
    unsafe { libc::gettid() }
}

/// A task's life: register, wait for go, run `body` (unless stopped first), report done, and
/// wait for leave to exit so that the controller can still read the task's counters.
pub fn lifecycle(ctl: &Ctl, slot: usize, body: impl FnOnce()) {
    ctl.tids[slot].store(gettid(), Ordering::Release);
    ctl.ready.fetch_add(1, Ordering::AcqRel);
    futex_wake(&ctl.ready);
    wait_for(&ctl.go, |v| v != 0);
    if ctl.stop.load(Ordering::Acquire) == 0 {
        body();
    }
    ctl.done.fetch_add(1, Ordering::AcqRel);
    futex_wake(&ctl.done);
    wait_for(&ctl.exit, |v| v != 0);
}

impl Ctl {
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed) != 0
    }

    pub fn measuring(&self) -> bool {
        self.phase.load(Ordering::Relaxed) == PHASE_MEASURE
    }

    pub fn add_ops(&self, slot: usize, n: u64) {
        self.slots[slot].ops.fetch_add(n, Ordering::Relaxed);
    }

    pub fn set_phase(&self, p: u32) {
        self.phase.store(p, Ordering::Release);
        futex_wake(&self.phase);
    }
}

// ------------------------------------------------------------------------------------------------
// Teams
// ------------------------------------------------------------------------------------------------

/// The tasks of one run.
pub struct Team {
    pub ctl: Arc<SharedCtl>,
    n: usize,
    threads: Vec<JoinHandle<()>>,
    children: Vec<libc::pid_t>,
    finished: bool,
}

/// The worker process's view of its file descriptors: the control block is fd 3, the role's
/// descriptors follow from fd 4.
pub const FIRST_ROLE_FD: RawFd = 4;

impl Team {
    pub fn new() -> Result<Team> {
        Ok(Team {
            ctl: Arc::new(SharedCtl::new()?),
            n: 0,
            threads: Vec::new(),
            children: Vec::new(),
            finished: false,
        })
    }

    fn next_slot(&mut self) -> Result<usize> {
        if self.n >= MAX_TASKS {
            bail!("a workload may have at most {MAX_TASKS} tasks");
        }
        self.n += 1;
        Ok(self.n - 1)
    }

    /// Starts a task as a thread; `f` gets the control block and its slot.
    pub fn spawn_thread(&mut self, f: impl FnOnce(&Ctl, usize) + Send + 'static) -> Result<usize> {
        let slot = self.next_slot()?;
        let ctl = self.ctl.clone();
        let h = std::thread::Builder::new()
            .name(format!("bench-{slot}"))
            .spawn(move || lifecycle(&ctl, slot, || f(&ctl, slot)))
            .context("cannot start a workload thread")?;
        self.threads.push(h);
        Ok(slot)
    }

    /// Starts a task as a process of this binary (`worker --role ROLE`), which gets the control
    /// block as fd 3 and `fds` from fd 4 on.
    pub fn spawn_process(
        &mut self,
        role: &str,
        fds: &[RawFd],
        params: &[(&str, String)],
    ) -> Result<usize> {
        let slot = self.next_slot()?;
        let exe = std::env::var_os("LAB_BENCH_EXE")
            .map(std::path::PathBuf::from)
            .map(Ok)
            .unwrap_or_else(std::env::current_exe)
            .context("cannot find this program's path")?;
        let mut cmd = Command::new(&exe);
        cmd.args(["worker", "--role", role, "--slot", &slot.to_string()]);
        cmd.args(["--nfds", &fds.len().to_string()]);
        for (k, v) in params {
            cmd.arg("--param").arg(format!("{k}={v}"));
        }
        let mut src = vec![self.ctl.raw_fd()];
        src.extend_from_slice(fds);
        if src.len() > 64 {
            bail!("a worker process takes at most 63 descriptors");
        }
        // SAFETY: only async-signal-safe calls (fcntl, dup2) between fork and exec, on a vector
        // allocated before the fork.
        unsafe {
            cmd.pre_exec(move || {
                let mut tmp = [-1; 64];
                for (i, &s) in src.iter().enumerate() {
                    tmp[i] = libc::fcntl(s, libc::F_DUPFD_CLOEXEC, 1000);
                    if tmp[i] < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                for (i, &t) in tmp.iter().take(src.len()).enumerate() {
                    if libc::dup2(t, 3 + i as RawFd) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let child = cmd
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {} worker", exe.display()))?;
        self.children.push(child.id() as libc::pid_t);
        // The pid is reaped with wait4 in finish() (for its rusage), not through `child`.
        std::mem::forget(child);
        Ok(slot)
    }

    /// Waits until every task registered; returns `(pid, tid)` of each, in slot order.
    pub fn wait_ready(&self, timeout: Duration) -> Result<Vec<(i32, i32)>> {
        let start = Instant::now();
        loop {
            let r = self.ctl.ready.load(Ordering::Acquire) as usize;
            if r >= self.n {
                break;
            }
            if start.elapsed() > timeout {
                bail!(
                    "only {r} of {} workload tasks started within {timeout:?}",
                    self.n
                );
            }
            if crate::bench::interrupted() {
                bail!("interrupted");
            }
            futex_wait(&self.ctl.ready, r as u32, Duration::from_millis(20));
        }
        let me = std::process::id() as i32;
        Ok((0..self.n)
            .map(|i| {
                let tid = self.ctl.tids[i].load(Ordering::Acquire);
                let pid = if self.children.is_empty() { me } else { tid };
                (pid, tid)
            })
            .collect())
    }

    pub fn go(&self) {
        self.ctl.go.store(1, Ordering::Release);
        futex_wake(&self.ctl.go);
    }

    pub fn stop(&self) {
        self.ctl.stop.store(1, Ordering::Release);
        self.ctl.set_phase(PHASE_DONE);
        self.ctl.go.store(1, Ordering::Release);
        futex_wake(&self.ctl.go);
        futex_wake(&self.ctl.stop);
    }

    pub fn ops(&self, slots: impl Iterator<Item = usize>) -> u64 {
        slots
            .map(|i| self.ctl.slots[i].ops.load(Ordering::Relaxed))
            .sum()
    }

    pub fn ops_each(&self) -> Vec<u64> {
        (0..self.n)
            .map(|i| self.ctl.slots[i].ops.load(Ordering::Relaxed))
            .collect()
    }

    /// Stops the team, waits (up to `timeout`) until every task is done, lets them exit and
    /// reaps them. Returns the summed rusage of worker processes.
    pub fn finish(&mut self, timeout: Duration) -> Result<Option<libc::rusage>> {
        self.stop();
        let start = Instant::now();
        let mut stuck = false;
        loop {
            let d = self.ctl.done.load(Ordering::Acquire) as usize;
            if d >= self.n {
                break;
            }
            if start.elapsed() > timeout {
                stuck = true;
                break;
            }
            futex_wait(&self.ctl.done, d as u32, Duration::from_millis(20));
        }
        self.ctl.exit.store(1, Ordering::Release);
        futex_wake(&self.ctl.exit);
        self.finished = true;
        if stuck {
            self.kill_children();
            bail!(
                "{} of {} workload tasks did not stop within {timeout:?} after the window",
                self.n - self.ctl.done.load(Ordering::Acquire) as usize,
                self.n
            );
        }
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
        Ok(self.reap_children())
    }

    fn reap_children(&mut self) -> Option<libc::rusage> {
        if self.children.is_empty() {
            return None;
        }
        // SAFETY: rusage is plain old data.
        let mut sum: libc::rusage = unsafe { std::mem::zeroed() };
        for pid in self.children.drain(..) {
            let mut st = 0;
            // SAFETY: see above.
            let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: pid is our child, not reaped yet.
            if unsafe { libc::wait4(pid, &mut st, 0, &mut ru) } == pid {
                sum.ru_nvcsw += ru.ru_nvcsw;
                sum.ru_nivcsw += ru.ru_nivcsw;
                add_tv(&mut sum.ru_utime, &ru.ru_utime);
                add_tv(&mut sum.ru_stime, &ru.ru_stime);
            }
        }
        Some(sum)
    }

    fn kill_children(&mut self) {
        for &pid in &self.children {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        self.reap_children();
    }
}

fn add_tv(a: &mut libc::timeval, b: &libc::timeval) {
    a.tv_sec += b.tv_sec;
    a.tv_usec += b.tv_usec;
    if a.tv_usec >= 1_000_000 {
        a.tv_sec += 1;
        a.tv_usec -= 1_000_000;
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        if !self.finished {
            self.stop();
            self.ctl.exit.store(1, Ordering::Release);
            futex_wake(&self.ctl.exit);
            self.kill_children();
        }
    }
}

// ------------------------------------------------------------------------------------------------
// The measurement window of time-based workloads
// ------------------------------------------------------------------------------------------------

/// What the controller saw in the window.
pub struct Window {
    pub elapsed_s: f64,
    /// Per-slot operations in the window.
    pub ops: Vec<u64>,
    pub counters: Counters,
    pub samples: Vec<f64>,
    pub interrupted: bool,
}

/// Sleeps `d` in small steps; false when the bench was interrupted.
pub fn sleep_checked(d: Duration) -> bool {
    let end = Instant::now() + d;
    loop {
        if crate::bench::interrupted() {
            return false;
        }
        let now = Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(10)));
    }
}

/// Releases the team, lets it warm up, measures one window and stops the team. `op_slots`
/// are the slots whose ops make the per-second samples.
pub fn timed_window(
    team: &mut Team,
    tasks: &[(i32, i32)],
    rc: &RunConfig,
    op_slots: &[usize],
) -> Result<Window> {
    team.go();
    let mut interrupted = !sleep_checked(rc.warmup);
    let s0 = Snapshot::take(tasks);
    let o0 = team.ops_each();
    let t0 = Instant::now();
    team.ctl.set_phase(PHASE_MEASURE);
    let step = (rc.window / 5).min(Duration::from_secs(1));
    let mut samples = Vec::new();
    let mut last = (t0, team.ops(op_slots.iter().copied()));
    while !interrupted && t0.elapsed() < rc.window {
        let left = rc.window.saturating_sub(t0.elapsed());
        interrupted = !sleep_checked(step.min(left));
        let now = (Instant::now(), team.ops(op_slots.iter().copied()));
        let dt = (now.0 - last.0).as_secs_f64();
        if dt > 0.0 && !interrupted {
            samples.push((now.1 - last.1) as f64 / dt);
        }
        last = now;
    }
    team.ctl.set_phase(PHASE_DONE);
    let o1 = team.ops_each();
    let elapsed_s = t0.elapsed().as_secs_f64();
    let s1 = Snapshot::take(tasks);
    team.finish(Duration::from_secs(10))?;
    Ok(Window {
        elapsed_s,
        ops: o1.iter().zip(&o0).map(|(b, a)| b - a).collect(),
        counters: Counters::delta(&s0, &s1),
        samples,
        interrupted,
    })
}

// ------------------------------------------------------------------------------------------------
// Small system helpers shared by the workloads
// ------------------------------------------------------------------------------------------------

/// Pins the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> std::io::Result<()> {
    // SAFETY: as above; 0 = the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Task placement of the pipe workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pin {
    /// Wherever the scheduler puts them.
    None,
    /// Both ends of a pair on one CPU.
    SameCpu,
    /// The two ends of a pair on two different CPUs.
    CrossCpu,
}

impl Pin {
    pub fn parse(s: &str) -> Result<Pin> {
        Ok(match s {
            "none" => Pin::None,
            "same-cpu" => Pin::SameCpu,
            "cross-cpu" => Pin::CrossCpu,
            _ => bail!("pin={s:?}: expected none, same-cpu or cross-cpu"),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Pin::None => "none",
            Pin::SameCpu => "same-cpu",
            Pin::CrossCpu => "cross-cpu",
        }
    }

    /// The CPUs for the two ends of pair `i` (None = unpinned).
    pub fn cpus(self, i: usize) -> (Option<usize>, Option<usize>) {
        let cpus = allowed_cpus();
        let n = cpus.len();
        match self {
            Pin::None => (None, None),
            Pin::SameCpu => (Some(cpus[i % n]), Some(cpus[i % n])),
            Pin::CrossCpu => (Some(cpus[(2 * i) % n]), Some(cpus[(2 * i + 1) % n])),
        }
    }
}

/// Pins when asked; a failure to pin is an error of the run, reported by the task as a
/// stop (the controller sees fewer ops) — so it is checked before the team is released.
pub fn maybe_pin(cpu: Option<usize>) {
    if let Some(c) = cpu {
        let _ = pin_to_cpu(c);
    }
}

/// A pipe with close-on-exec ends; `packet` asks for O_DIRECT (packet mode), falling back to a
/// plain pipe where unsupported. Returns (read end, write end, packet mode in effect).
pub fn pipe(packet: bool) -> Result<(OwnedFd, OwnedFd, bool)> {
    let mut fds = [0; 2];
    let mut flags = libc::O_CLOEXEC;
    if packet {
        flags |= libc::O_DIRECT;
    }
    // SAFETY: fds has room for two descriptors.
    let mut rc = unsafe { libc::pipe2(fds.as_mut_ptr(), flags) };
    let mut is_packet = packet;
    if rc != 0 && packet {
        is_packet = false;
        // SAFETY: as above.
        rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    }
    if rc != 0 {
        return Err(std::io::Error::last_os_error()).context("pipe2");
    }
    // SAFETY: both were just created.
    Ok(unsafe {
        (
            OwnedFd::from_raw_fd(fds[0]),
            OwnedFd::from_raw_fd(fds[1]),
            is_packet,
        )
    })
}

/// An AF_UNIX stream socket pair (receiver end, sender end).
pub fn socketpair() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for two descriptors.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error()).context("socketpair");
    }
    // SAFETY: both were just created.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Writes all of `buf`; false on EOF/EPIPE or another error.
pub fn write_all(fd: RawFd, buf: &[u8]) -> bool {
    let mut off = 0;
    while off < buf.len() {
        // SAFETY: the slice is valid for its length.
        let n = unsafe { libc::write(fd, buf[off..].as_ptr().cast(), buf.len() - off) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        off += n as usize;
    }
    true
}

/// Reads exactly `buf.len()` bytes; false on EOF or error.
pub fn read_exact(fd: RawFd, buf: &mut [u8]) -> bool {
    let mut off = 0;
    while off < buf.len() {
        // SAFETY: the slice is valid for its length.
        let n = unsafe { libc::read(fd, buf[off..].as_mut_ptr().cast(), buf.len() - off) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        if n == 0 {
            return false;
        }
        off += n as usize;
    }
    true
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A latency histogram in nanoseconds (1 ns .. 100 s, 3 significant digits).
pub fn latency_histogram() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid bounds")
}

/// Percentiles of a nanosecond histogram in microseconds.
pub fn pct_us(h: &hdrhistogram::Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}

// ------------------------------------------------------------------------------------------------
// Worker processes
// ------------------------------------------------------------------------------------------------

/// The hidden `worker` subcommand: one task of a workload in `--processes` mode.
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    #[arg(long)]
    pub role: String,
    #[arg(long)]
    pub slot: usize,
    #[arg(long)]
    pub nfds: usize,
    #[arg(long = "param")]
    pub params: Vec<String>,
}

pub fn worker_main(a: WorkerArgs) -> Result<()> {
    // SAFETY: the parent placed the control block at fd 3 and the role's fds after it.
    let shared = SharedCtl::from_fd(unsafe { OwnedFd::from_raw_fd(3) })?;
    let ctl: &Ctl = &shared;
    let fds: Vec<OwnedFd> = (0..a.nfds)
        // SAFETY: as above.
        .map(|i| unsafe { OwnedFd::from_raw_fd(FIRST_ROLE_FD + i as RawFd) })
        .collect();
    let params: BTreeMap<&str, &str> = a.params.iter().filter_map(|p| p.split_once('=')).collect();
    let get = |k: &str| -> Result<u64> {
        params
            .get(k)
            .with_context(|| format!("worker parameter {k} is missing"))?
            .parse()
            .with_context(|| format!("worker parameter {k}"))
    };
    let cpu = params.get("cpu").and_then(|c| c.parse().ok());
    let slot = a.slot;
    match a.role.as_str() {
        "pingpong-a" | "pingpong-b" => {
            let size = get("size")? as usize;
            let mut it = fds.into_iter();
            let (r, w) = (it.next().context("fd")?, it.next().context("fd")?);
            let a_side = a.role == "pingpong-a";
            lifecycle(ctl, slot, move || {
                maybe_pin(cpu);
                if a_side {
                    pingpong::initiator(ctl, slot, r, w, size)
                } else {
                    pingpong::responder(r, w, size)
                }
            });
        }
        "pipe-writer" => {
            let size = get("size")? as usize;
            let w = fds.into_iter().next().context("fd")?;
            lifecycle(ctl, slot, move || {
                maybe_pin(cpu);
                pipe_stream::writer(ctl, slot, w, size)
            });
        }
        "pipe-reader" => {
            let size = get("size")? as usize;
            let r = fds.into_iter().next().context("fd")?;
            lifecycle(ctl, slot, move || {
                maybe_pin(cpu);
                pipe_stream::reader(r, size)
            });
        }
        "msg-sender" => {
            let (warm, loops, size) = (get("warm")?, get("loops")?, get("size")? as usize);
            lifecycle(ctl, slot, move || {
                messaging::sender(ctl, &fds, warm, loops, size)
            });
        }
        "msg-receiver" => {
            let (senders, warm, loops, size) =
                (get("senders")?, get("warm")?, get("loops")?, get("size")?);
            let r = fds.into_iter().next().context("fd")?;
            lifecycle(ctl, slot, move || {
                messaging::receiver(ctl, slot, r, senders, warm, loops, size)
            });
        }
        other => bail!("unknown worker role {other:?}"),
    }
    Ok(())
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
            processes: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_checked_against_the_workloads_keys() {
        let p = Params::parse("pairs=2:pin=same-cpu", &["pairs", "pin"]).unwrap();
        assert_eq!(p.u64("pairs", 1).unwrap(), 2);
        assert_eq!(p.str("pin", "none"), "same-cpu");
        assert_eq!(p.u64("other", 7).unwrap(), 7);
        let e = Params::parse("bogus=1", &["pairs"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("bogus") && e.contains("pairs"), "{e}");
        assert!(Params::parse("pairs", &["pairs"]).is_err());
        assert!(
            parse("nosuch", true)
                .err()
                .expect("an error")
                .to_string()
                .contains("pingpong")
        );
    }

    #[test]
    fn a_team_of_threads_starts_stops_and_exits() {
        let mut team = Team::new().unwrap();
        for _ in 0..3 {
            team.spawn_thread(|ctl, slot| {
                while !ctl.stopped() {
                    ctl.add_ops(slot, 1);
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
            .unwrap();
        }
        let tasks = team.wait_ready(Duration::from_secs(10)).unwrap();
        assert_eq!(tasks.len(), 3);
        assert!(tasks.iter().all(|&(p, t)| p > 0 && t > 0));
        let w = timed_window(&mut team, &tasks, &testutil::quick_rc(), &[0, 1, 2]).unwrap();
        assert!(w.ops.iter().all(|&o| o > 0), "{:?}", w.ops);
        assert_eq!(w.counters.tasks, 3);
        assert!(w.counters.voluntary > 0);
    }
}
