//! The tasks of one run (a team) and the control block they share with the controller.
//!
//! Every task registers, waits for one "go", runs until told to stop, and waits for leave to
//! exit, so that the controller can read each task's counters at both edges of the measurement
//! window. A task is a thread or a process of this same binary (`--processes`, see
//! [`super::worker`]); the control block lives in a shared mapping of a memfd, so both use the
//! same atomics and futexes. This module starts, releases, stops and reaps tasks; what a task
//! does is the workloads' business.

use super::sys::{FUTEX_RECHECK, futex_wait, futex_wake, gettid, wait_for};
use anyhow::{Context, Result, bail};
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

/// A block of atomics that is valid when all-zero, so that a fresh mapping of a memfd is one.
///
/// # Safety
/// The type must hold only atomics (or other types valid as all-zero bytes and usable through
/// a shared reference from several processes at once).
pub unsafe trait ZeroInit {}

// SAFETY: Ctl holds only atomics.
unsafe impl ZeroInit for Ctl {}

/// A `T` in a shared mapping of a memfd, which worker processes inherit (the team's control
/// block, a composite's gate).
pub struct Shared<T: ZeroInit> {
    ptr: *mut T,
    fd: OwnedFd,
}

// SAFETY: T holds only atomics (ZeroInit); the mapping lives as long as the Shared.
unsafe impl<T: ZeroInit> Send for Shared<T> {}
unsafe impl<T: ZeroInit> Sync for Shared<T> {}

/// The team's control block.
pub type SharedCtl = Shared<Ctl>;

impl<T: ZeroInit> Shared<T> {
    pub fn new() -> Result<Self> {
        // SAFETY: plain syscalls on a fresh fd.
        let fd = unsafe { libc::memfd_create(c"lab-bench-ctl".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error()).context("memfd_create");
        }
        // SAFETY: fd was just created and is owned here.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let len = std::mem::size_of::<T>();
        // SAFETY: fd is valid.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(std::io::Error::last_os_error()).context("ftruncate of a shared block");
        }
        Self::map(fd)
    }

    /// Maps a block inherited as `fd` (worker processes).
    pub fn from_fd(fd: OwnedFd) -> Result<Self> {
        Self::map(fd)
    }

    fn map(fd: OwnedFd) -> Result<Self> {
        let len = std::mem::size_of::<T>();
        // SAFETY: a shared mapping of a file at least `len` long; zero pages are a valid T.
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
            return Err(std::io::Error::last_os_error()).context("mmap of a shared block");
        }
        Ok(Shared {
            ptr: ptr.cast(),
            fd,
        })
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl<T: ZeroInit> Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: mapped in new()/from_fd() and unmapped only in drop.
        unsafe { &*self.ptr }
    }
}

impl<T: ZeroInit> Drop for Shared<T> {
    fn drop(&mut self) {
        // SAFETY: the mapping made in map().
        unsafe { libc::munmap(self.ptr.cast(), std::mem::size_of::<T>()) };
    }
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

/// The worker process's view of its file descriptors: the control block is [`CTL_FD`], the
/// role's descriptors follow from [`FIRST_ROLE_FD`].
pub const CTL_FD: RawFd = 3;
pub const FIRST_ROLE_FD: RawFd = CTL_FD + 1;

/// The most descriptors a worker process inherits, the control block included.
const MAX_WORKER_FDS: usize = 64;

/// Where the descriptors are parked between fork and exec before they are moved into place:
/// above any that the targets [`CTL_FD`].. could be, so that no move overwrites a source.
const FD_PARK_FLOOR: RawFd = 1000;

const USEC_PER_SEC: libc::suseconds_t = 1_000_000;

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
    /// block as [`CTL_FD`] and `fds` from [`FIRST_ROLE_FD`] on.
    pub fn spawn_process(
        &mut self,
        role: &str,
        fds: &[RawFd],
        params: &[(&str, String)],
    ) -> Result<usize> {
        let slot = self.next_slot()?;
        let exe = crate::bench::self_exe()?;
        let mut cmd = Command::new(&exe);
        cmd.args(["worker", "--role", role, "--slot", &slot.to_string()]);
        cmd.args(["--nfds", &fds.len().to_string()]);
        for (k, v) in params {
            cmd.arg("--param").arg(format!("{k}={v}"));
        }
        let mut src = vec![self.ctl.raw_fd()];
        src.extend_from_slice(fds);
        if src.len() > MAX_WORKER_FDS {
            bail!(
                "a worker process takes at most {} descriptors",
                MAX_WORKER_FDS - 1
            );
        }
        // SAFETY: only async-signal-safe calls (fcntl, dup2) between fork and exec, on a vector
        // allocated before the fork.
        unsafe {
            cmd.pre_exec(move || {
                let mut tmp = [-1; MAX_WORKER_FDS];
                for (i, &s) in src.iter().enumerate() {
                    tmp[i] = libc::fcntl(s, libc::F_DUPFD_CLOEXEC, FD_PARK_FLOOR);
                    if tmp[i] < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                for (i, &t) in tmp.iter().take(src.len()).enumerate() {
                    if libc::dup2(t, CTL_FD + i as RawFd) < 0 {
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
            futex_wait(&self.ctl.ready, r as u32, FUTEX_RECHECK);
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
            futex_wait(&self.ctl.done, d as u32, FUTEX_RECHECK);
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
    if a.tv_usec >= USEC_PER_SEC {
        a.tv_sec += 1;
        a.tv_usec -= USEC_PER_SEC;
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
