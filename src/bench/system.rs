//! System-wide counters of a run, the numbers `perf stat -a` and `vmstat` would show: context
//! switches of all CPUs (`ctxt` of `/proc/stat`), task migrations of all CPUs (the kernel's
//! `cpu-migrations` software counter, one per CPU, opened with `perf_event_open`), and each
//! CPU's idle time (`/proc/stat`'s per-CPU `idle` field, in clock ticks).
//!
//! Every source is optional: without the permission to open system-wide perf counters (root or
//! `perf_event_paranoid` <= 0) the migrations are `None`, and a missing `/proc/stat` leaves the
//! rest `None`. The migration counters are opened once per process and stay open; a software
//! counter costs a per-CPU increment in `set_task_cpu()`, for every arm alike.

use std::collections::BTreeMap;
use std::fs;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::OnceLock;

/// `PERF_TYPE_SOFTWARE` and `PERF_COUNT_SW_CPU_MIGRATIONS` of `<linux/perf_event.h>`.
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_CPU_MIGRATIONS: u64 = 4;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
const MS_PER_S: u64 = 1000;

/// The first version of `struct perf_event_attr` (`PERF_ATTR_SIZE_VER0`, 64 bytes), which every
/// kernel accepts; all flags zero means: enabled at once, counting user and kernel.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttrV0 {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

/// One counting `cpu-migrations` event per online CPU, or None when one cannot be opened.
fn migration_counters() -> &'static Option<Vec<OwnedFd>> {
    static FDS: OnceLock<Option<Vec<OwnedFd>>> = OnceLock::new();
    FDS.get_or_init(|| {
        let attr = PerfEventAttrV0 {
            type_: PERF_TYPE_SOFTWARE,
            size: std::mem::size_of::<PerfEventAttrV0>() as u32,
            config: PERF_COUNT_SW_CPU_MIGRATIONS,
            ..Default::default()
        };
        crate::topology::online_cpu_list()
            .iter()
            .map(|&cpu| {
                // SAFETY: attr is a valid VER0 attribute; pid -1 with a CPU counts every task
                // on that CPU; a non-negative result is an fd we now own.
                let fd = unsafe {
                    libc::syscall(
                        libc::SYS_perf_event_open,
                        &attr as *const PerfEventAttrV0,
                        -1 as libc::pid_t,
                        cpu as libc::c_int,
                        -1 as libc::c_int,
                        PERF_FLAG_FD_CLOEXEC,
                    )
                };
                // SAFETY: see above.
                (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
            })
            .collect()
    })
}

/// Task migrations of all CPUs so far (since the counters were opened).
pub fn migrations() -> Option<u64> {
    let fds = migration_counters().as_ref()?;
    let mut total = 0u64;
    for fd in fds {
        let mut v = 0u64;
        // SAFETY: reading the 8-byte count of a counting perf event into a u64.
        let n = unsafe { libc::read(fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
        if n != 8 {
            return None;
        }
        total += v;
    }
    Some(total)
}

/// Per-CPU idle time from `/proc/stat` (`cpuN user nice system idle ...`), in clock ticks.
pub fn parse_proc_stat_idle(text: &str) -> BTreeMap<usize, u64> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let cpu = f.next()?.strip_prefix("cpu")?.parse().ok()?;
            let idle = f.nth(3)?.parse().ok()?;
            Some((cpu, idle))
        })
        .collect()
}

/// Clock ticks per second of `/proc/stat` (USER_HZ).
fn ticks_per_s() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as u64 } else { 100 }
}

/// The system-wide counters at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SystemSnapshot {
    pub ctxt: Option<u64>,
    pub migrations: Option<u64>,
    /// CPU → idle ticks.
    pub idle_ticks: BTreeMap<usize, u64>,
}

impl SystemSnapshot {
    pub fn take() -> Self {
        let stat = fs::read_to_string("/proc/stat").unwrap_or_default();
        SystemSnapshot {
            ctxt: super::counters::parse_proc_stat_ctxt(&stat),
            migrations: migrations(),
            idle_ticks: parse_proc_stat_idle(&stat),
        }
    }

    /// Each CPU's idle time between `a` and `self`, in milliseconds (tick resolution).
    pub fn idle_ms_since(&self, a: &SystemSnapshot) -> BTreeMap<usize, u64> {
        let hz = ticks_per_s();
        self.idle_ticks
            .iter()
            .filter_map(|(cpu, b)| {
                let a = a.idle_ticks.get(cpu)?;
                Some((*cpu, b.saturating_sub(*a) * MS_PER_S / hz))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_per_cpu_idle_and_skips_the_total_line() {
        let stat = "cpu  10 0 20 3000 5 0 0 0 0 0\ncpu0 5 0 10 1500 2 0 0 0 0 0\n\
                    cpu1 5 0 10 1490 3 0 0 0 0 0\nintr 1 2\nctxt 77\n";
        let idle = parse_proc_stat_idle(stat);
        assert_eq!(idle, BTreeMap::from([(0, 1500), (1, 1490)]));
    }

    #[test]
    fn idle_deltas_are_per_cpu_milliseconds() {
        let a = SystemSnapshot {
            idle_ticks: BTreeMap::from([(0, 100), (1, 50)]),
            ..Default::default()
        };
        let b = SystemSnapshot {
            idle_ticks: BTreeMap::from([(0, 150), (1, 50), (2, 9)]),
            ..Default::default()
        };
        let hz = ticks_per_s();
        assert_eq!(
            b.idle_ms_since(&a),
            BTreeMap::from([(0, 50 * 1000 / hz), (1, 0)])
        );
    }

    #[test]
    fn this_host_gives_switches_and_idle_time() {
        let a = SystemSnapshot::take();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let b = SystemSnapshot::take();
        assert!(b.ctxt.unwrap() > a.ctxt.unwrap());
        assert!(!a.idle_ticks.is_empty());
        // Migrations need root or perf_event_paranoid <= 0; where they open they only grow.
        if let (Some(x), Some(y)) = (a.migrations, b.migrations) {
            assert!(y >= x);
        }
    }
}
