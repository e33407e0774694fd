//! Scheduler counters that need no perf tool: per-task switch counts, run_delay and migrations
//! from `/proc/<pid>/task/<tid>/{status,schedstat,sched}`, the system-wide switches, migrations
//! and per-CPU idle time of [`super::system`], CPU pressure from `/proc/pressure/cpu`, and
//! children's rusage from `wait4`.
//!
//! Every source is optional: a kernel without schedstat or PSI yields `None` for those fields
//! instead of an error, so the workloads run on any host. Snapshots are taken by the controller
//! at the edges of the measurement window; the delta is the run's counters.

use super::system::SystemSnapshot;
use super::trace::{TraceCounts, TraceReading};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;

/// One task's cumulative counters at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskCounters {
    /// `voluntary_ctxt_switches` (the task blocked).
    pub voluntary: u64,
    /// `nonvoluntary_ctxt_switches` (the task was preempted).
    pub involuntary: u64,
    /// Time spent on CPU (schedstat field 1).
    pub exec_ns: u64,
    /// Time spent runnable but waiting for a CPU (schedstat field 2).
    pub run_delay_ns: u64,
    /// Number of times the task was given a CPU (schedstat field 3).
    pub timeslices: u64,
    /// `se.nr_migrations` from `/proc/<tid>/sched`, when readable.
    pub migrations: Option<u64>,
}

/// `(voluntary, involuntary)` from a status file.
pub fn parse_status(text: &str) -> Option<(u64, u64)> {
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    Some((
        field("voluntary_ctxt_switches:")?,
        field("nonvoluntary_ctxt_switches:")?,
    ))
}

/// `(exec_ns, run_delay_ns, timeslices)` from a schedstat file.
pub fn parse_schedstat(text: &str) -> Option<(u64, u64, u64)> {
    let mut it = text.split_whitespace().map(|v| v.parse::<u64>().ok());
    Some((it.next()??, it.next()??, it.next()??))
}

/// One `key : value` field of `/proc/<tid>/sched` as an integer (the file prints some fields
/// with a fractional part; the integer part is kept).
pub fn parse_sched_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        if k.trim() != key {
            return None;
        }
        let v = v.trim();
        v.split('.').next()?.parse().ok()
    })
}

/// `ctxt` (context switches since boot, all CPUs) from `/proc/stat`.
pub fn parse_proc_stat_ctxt(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("ctxt "))
        .and_then(|v| v.trim().parse().ok())
}

/// The `total=` microseconds of the `some` line of `/proc/pressure/cpu`.
pub fn parse_psi_some_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace()
        .find_map(|f| f.strip_prefix("total="))
        .and_then(|v| v.parse().ok())
}

pub fn read_task(pid: i32, tid: i32) -> Option<TaskCounters> {
    let dir = format!("/proc/{pid}/task/{tid}");
    let (voluntary, involuntary) =
        parse_status(&fs::read_to_string(format!("{dir}/status")).ok()?)?;
    let (exec_ns, run_delay_ns, timeslices) = fs::read_to_string(format!("{dir}/schedstat"))
        .ok()
        .and_then(|t| parse_schedstat(&t))
        .unwrap_or((0, 0, 0));
    let migrations = fs::read_to_string(format!("{dir}/sched"))
        .ok()
        .and_then(|t| parse_sched_field(&t, "se.nr_migrations"));
    Some(TaskCounters {
        voluntary,
        involuntary,
        exec_ns,
        run_delay_ns,
        timeslices,
        migrations,
    })
}

/// Counters of a set of tasks and of the whole system at one instant.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub tasks: Vec<Option<TaskCounters>>,
    pub sys: SystemSnapshot,
    pub psi_some_us: Option<u64>,
    /// The tracer's reading, with `bench --trace` (it then follows these tasks).
    pub trace: Option<TraceReading>,
}

impl Snapshot {
    /// The counters of `tasks` (pid, tid) and of the whole system; with no tasks, only the
    /// system's (external tools, whose tasks the bench does not know).
    pub fn take(tasks: &[(i32, i32)]) -> Self {
        // The tracer first: it may first have to be told which tasks to follow, which takes a
        // while; read right before the tasks' counters at both edges, its window matches theirs.
        let trace = super::trace::reading(tasks);
        Snapshot {
            tasks: tasks.iter().map(|&(p, t)| read_task(p, t)).collect(),
            sys: SystemSnapshot::take(),
            psi_some_us: fs::read_to_string("/proc/pressure/cpu")
                .ok()
                .and_then(|t| parse_psi_some_total(&t)),
            trace,
        }
    }
}

/// What happened during a window: sums over the workload's tasks, plus system-wide counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// Tasks whose counters could be read at both edges.
    pub tasks: usize,
    pub voluntary: u64,
    pub involuntary: u64,
    pub exec_ns: u64,
    pub run_delay_ns: u64,
    pub timeslices: u64,
    /// None when `/proc/<tid>/sched` was not readable.
    pub migrations: Option<u64>,
    /// Context switches of the whole system (`/proc/stat ctxt`).
    pub system_switches: Option<u64>,
    /// Task migrations of the whole system (the `cpu-migrations` software counters).
    #[serde(default)]
    pub system_migrations: Option<u64>,
    /// Each CPU's idle time in the window, ms (clock-tick resolution).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cpu_idle_ms: BTreeMap<usize, u64>,
    /// Microseconds in which some runnable task waited for a CPU (PSI), whole system.
    pub psi_cpu_some_us: Option<u64>,
    /// What `bench --trace` saw in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceCounts>,
    /// CPU time of each task in the window, in task order (for share computations).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_task_exec_ns: Vec<u64>,
}

impl Counters {
    pub fn delta(a: &Snapshot, b: &Snapshot) -> Counters {
        let mut c = Counters {
            migrations: Some(0),
            ..Default::default()
        };
        c.add_system(a, b);
        for (x, y) in a.tasks.iter().zip(&b.tasks) {
            let (Some(x), Some(y)) = (x, y) else {
                c.per_task_exec_ns.push(0);
                continue;
            };
            c.tasks += 1;
            c.voluntary += y.voluntary.saturating_sub(x.voluntary);
            c.involuntary += y.involuntary.saturating_sub(x.involuntary);
            c.exec_ns += y.exec_ns.saturating_sub(x.exec_ns);
            c.run_delay_ns += y.run_delay_ns.saturating_sub(x.run_delay_ns);
            c.timeslices += y.timeslices.saturating_sub(x.timeslices);
            c.per_task_exec_ns.push(y.exec_ns.saturating_sub(x.exec_ns));
            c.migrations = match (c.migrations, x.migrations, y.migrations) {
                (Some(m), Some(x), Some(y)) => Some(m + y.saturating_sub(x)),
                _ => None,
            };
        }
        if c.tasks == 0 {
            c.migrations = None;
        }
        c
    }

    /// The system-wide counters between `a` and `b` (switches, migrations, idle, pressure).
    pub fn add_system(&mut self, a: &Snapshot, b: &Snapshot) {
        let d = |b: Option<u64>, a: Option<u64>| b.zip(a).map(|(b, a)| b.saturating_sub(a));
        self.system_switches = d(b.sys.ctxt, a.sys.ctxt);
        self.system_migrations = d(b.sys.migrations, a.sys.migrations);
        self.cpu_idle_ms = b.sys.idle_ms_since(&a.sys);
        self.psi_cpu_some_us = d(b.psi_some_us, a.psi_some_us);
        self.trace = a
            .trace
            .as_ref()
            .zip(b.trace.as_ref())
            .map(|(a, b)| TraceCounts::between(a, b));
    }

    /// Adds children's rusage (external tools): only switch counts are known there.
    pub fn from_rusage(ru: &libc::rusage) -> Counters {
        Counters {
            voluntary: ru.ru_nvcsw.max(0) as u64,
            involuntary: ru.ru_nivcsw.max(0) as u64,
            exec_ns: (tv_ns(&ru.ru_utime) + tv_ns(&ru.ru_stime)),
            ..Default::default()
        }
    }
}

fn tv_ns(tv: &libc::timeval) -> u64 {
    (tv.tv_sec.max(0) as u64) * 1_000_000_000 + (tv.tv_usec.max(0) as u64) * 1000
}

/// CPU time (ns) a process's threads have used so far, summed over `/proc/<pid>/task/*/schedstat`
/// (exact, unlike the tick-sampled utime and stime of `/proc/<pid>/stat`): charged against an arm
/// whose scheduler has a userspace part. Threads that exited are no longer counted.
pub fn process_cpu_ns(pid: i32) -> Option<u64> {
    let mut total = None;
    for entry in fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
        let ns = fs::read_to_string(entry.path().join("schedstat"))
            .ok()
            .and_then(|t| parse_schedstat(&t))
            .map(|(exec_ns, _, _)| exec_ns);
        if let Some(ns) = ns {
            total = Some(total.unwrap_or(0) + ns);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_schedstat_and_sched() {
        let status = "Name:\tx\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(parse_status(status), Some((12, 3)));
        assert_eq!(parse_schedstat("100 20 7\n"), Some((100, 20, 7)));
        assert_eq!(parse_schedstat("100 20\n"), None);
        let sched = "x (1, #threads: 1)\n---\nse.exec_start                  :       1234.567\n\
                     se.nr_migrations                             :                    5\n";
        assert_eq!(parse_sched_field(sched, "se.nr_migrations"), Some(5));
        assert_eq!(parse_sched_field(sched, "se.exec_start"), Some(1234));
        assert_eq!(parse_sched_field(sched, "nope"), None);
    }

    #[test]
    fn parses_proc_stat_and_psi() {
        assert_eq!(
            parse_proc_stat_ctxt("cpu 1 2\nctxt 987\nbtime 5\n"),
            Some(987)
        );
        let psi = "some avg10=0.00 avg60=0.10 avg300=0.00 total=4242\nfull avg10=0 total=1\n";
        assert_eq!(parse_psi_some_total(psi), Some(4242));
    }

    #[test]
    fn process_cpu_sums_this_process_threads() {
        let me = std::process::id() as i32;
        let before = process_cpu_ns(me).expect("own schedstat readable");
        let spin = std::thread::spawn(|| {
            let t = std::time::Instant::now();
            while t.elapsed() < std::time::Duration::from_millis(30) {
                std::hint::black_box(0u64);
            }
        });
        spin.join().unwrap();
        // The spinner exited, so only the main thread's share is certain to remain: grow it.
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_millis(20) {
            std::hint::black_box(0u64);
        }
        assert!(process_cpu_ns(me).unwrap() > before);
        assert_eq!(process_cpu_ns(-1), None);
    }

    #[test]
    fn delta_sums_tasks_and_tolerates_missing_ones() {
        let t = |v, i, e, d, m| {
            Some(TaskCounters {
                voluntary: v,
                involuntary: i,
                exec_ns: e,
                run_delay_ns: d,
                timeslices: v + i,
                migrations: m,
            })
        };
        let sys = |ctxt, mig, idle| SystemSnapshot {
            ctxt: Some(ctxt),
            migrations: mig,
            idle_ticks: BTreeMap::from([(0, idle), (1, 7)]),
        };
        let a = Snapshot {
            tasks: vec![t(1, 1, 10, 5, Some(1)), t(0, 0, 0, 0, Some(0)), None],
            sys: sys(100, Some(4), 10),
            psi_some_us: None,
            trace: None,
        };
        let b = Snapshot {
            tasks: vec![
                t(5, 2, 30, 9, Some(3)),
                t(2, 0, 5, 1, Some(1)),
                t(9, 9, 9, 9, None),
            ],
            sys: sys(150, Some(10), 30),
            psi_some_us: Some(3),
            trace: None,
        };
        let c = Counters::delta(&a, &b);
        assert_eq!(c.tasks, 2);
        assert_eq!((c.voluntary, c.involuntary), (6, 1));
        assert_eq!((c.exec_ns, c.run_delay_ns), (25, 5));
        assert_eq!(c.migrations, Some(3));
        assert_eq!(c.system_switches, Some(50));
        assert_eq!(c.system_migrations, Some(6));
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
        assert_eq!(c.cpu_idle_ms, BTreeMap::from([(0, 20 * 1000 / hz), (1, 0)]));
        assert_eq!(c.psi_cpu_some_us, None);
        assert_eq!(c.per_task_exec_ns, vec![20, 5, 0]);
    }

    #[test]
    fn reads_this_thread() {
        let pid = std::process::id() as i32;
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let c = read_task(pid, tid).expect("own status is readable");
        assert!(c.voluntary + c.involuntary < u64::MAX);
    }
}
