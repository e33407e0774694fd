//! Thin wrappers around the system calls the workloads' tasks make in their hot loops: futexes
//! on the shared control block, CPU pinning, pipes and socket pairs, whole-buffer reads and
//! writes, and the monotonic clock.
//!
//! Each wrapper is a direct call (reads and writes retry on EINTR; a futex wait may return
//! early, and its callers re-check); none of them knows about teams, phases or metrics (that is
//! [`super::team`] and the workloads themselves).

use anyhow::{Context, Result};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// How often a wait on a futex re-checks its word (and an interrupt) even without a wake-up.
pub const FUTEX_RECHECK: Duration = Duration::from_millis(20);

const NS_PER_SEC: u64 = 1_000_000_000;

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

/// Waits until `pred(*w)` holds, re-checking at least every [`FUTEX_RECHECK`].
pub fn wait_for(w: &AtomicU32, pred: impl Fn(u32) -> bool) {
    loop {
        let v = w.load(Ordering::Acquire);
        if pred(v) {
            return;
        }
        futex_wait(w, v, FUTEX_RECHECK);
    }
}

pub fn gettid() -> i32 {
    // SAFETY: no preconditions.
    unsafe { libc::gettid() }
}

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
    ts.tv_sec as u64 * NS_PER_SEC + ts.tv_nsec as u64
}
