//! The environment of a bench session, captured once for the JSON document: what a reader
//! needs to judge or repeat the numbers (kernel, command line, topology, preempt model,
//! autogroup, cgroup, every debugfs sched knob, sched_ext state, tool versions).
//!
//! Every source is optional; what cannot be read is recorded as null.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

#[derive(Debug, Clone, Serialize)]
pub struct Environment {
    pub uname: Uname,
    pub cmdline: Option<String>,
    pub cpu_model: Option<String>,
    pub topology: Topology,
    /// The preempt model: debugfs `sched/preempt` when present, else the kernel version string.
    pub preempt: Option<String>,
    pub autogroup: Option<String>,
    pub cgroup: Option<String>,
    pub governor: Option<String>,
    pub thp: Option<String>,
    pub schedstats: Option<String>,
    /// Every readable file directly under /sys/kernel/debug/sched (except the `debug` dump).
    pub debugfs_sched: BTreeMap<String, String>,
    pub sched_ext: Option<crate::sysfs::ScxState>,
    pub sched_ext_events: Vec<(String, u64)>,
    pub version: String,
    pub tools: BTreeMap<String, Option<String>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Uname {
    pub sysname: String,
    pub nodename: String,
    pub release: String,
    pub version: String,
    pub machine: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Topology {
    pub online: Option<String>,
    /// CPUs this process may use.
    pub allowed: Vec<usize>,
    /// Per CPU: (package, core id).
    pub cores: BTreeMap<usize, (Option<u64>, Option<u64>)>,
    /// Distinct SMT sibling sets.
    pub smt_siblings: Vec<String>,
    /// Distinct sets of CPUs sharing a last-level cache.
    pub llcs: Vec<String>,
    pub numa_nodes: Option<String>,
}

fn read(p: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

pub fn uname() -> Uname {
    // SAFETY: utsname is plain old data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::uname(&mut u) };
    let s = |f: &[libc::c_char]| {
        // SAFETY: uname's fields are NUL-terminated.
        unsafe { std::ffi::CStr::from_ptr(f.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    Uname {
        sysname: s(&u.sysname),
        nodename: s(&u.nodename),
        release: s(&u.release),
        version: s(&u.version),
        machine: s(&u.machine),
    }
}

fn topology() -> Topology {
    let allowed = super::workloads::allowed_cpus();
    let mut cores = BTreeMap::new();
    let mut smt = Vec::new();
    let mut llcs = Vec::new();
    for &c in &allowed {
        let t = format!("/sys/devices/system/cpu/cpu{c}/topology");
        let num = |f: &str| read(format!("{t}/{f}")).and_then(|v| v.parse().ok());
        cores.insert(c, (num("physical_package_id"), num("core_id")));
        if let Some(s) = read(format!("{t}/thread_siblings_list"))
            && !smt.contains(&s)
        {
            smt.push(s);
        }
        // The highest cache index is the last level.
        let cache = format!("/sys/devices/system/cpu/cpu{c}/cache");
        let last = (0..8)
            .rev()
            .find_map(|i| read(format!("{cache}/index{i}/shared_cpu_list")));
        if let Some(l) = last
            && !llcs.contains(&l)
        {
            llcs.push(l);
        }
    }
    Topology {
        online: read("/sys/devices/system/cpu/online"),
        allowed,
        cores,
        smt_siblings: smt,
        llcs,
        numa_nodes: read("/sys/devices/system/node/online"),
    }
}

/// Every knob file of the kernel's sched debugfs (top level; the `debug` dump is skipped).
pub fn debugfs_sched() -> BTreeMap<String, String> {
    let dir = std::env::var_os("LAB_DEBUGFS_SCHED")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| crate::kernel::DEBUGFS_SCHED.into());
    let mut out = BTreeMap::new();
    let Ok(rd) = fs::read_dir(&dir) else {
        return out;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "debug" || !e.path().is_file() {
            continue;
        }
        if let Some(v) = read(e.path()) {
            out.insert(name, v);
        }
    }
    out
}

fn preempt_model(debugfs: &BTreeMap<String, String>, u: &Uname) -> Option<String> {
    if let Some(p) = debugfs.get("preempt") {
        return Some(format!(
            "{} (debugfs: {p})",
            crate::kernel::selected_choice(p)
        ));
    }
    let v = &u.version;
    ["PREEMPT_DYNAMIC", "PREEMPT_RT", "PREEMPT_LAZY", "PREEMPT"]
        .iter()
        .find(|m| v.contains(*m))
        .map(|m| format!("{m} (from uname -v)"))
}

pub fn capture(tools: &[&str]) -> Environment {
    let u = uname();
    let debugfs = debugfs_sched();
    let cpu_model = read("/proc/cpuinfo").and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("model name"))
            .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
    });
    let mut tv = BTreeMap::new();
    for t in tools {
        let v = super::workloads::external::which(t)
            .and_then(|p| super::workloads::external::version(&p));
        tv.insert(t.to_string(), v);
    }
    Environment {
        preempt: preempt_model(&debugfs, &u),
        uname: u,
        cmdline: read("/proc/cmdline"),
        cpu_model,
        topology: topology(),
        autogroup: read("/proc/sys/kernel/sched_autogroup_enabled"),
        cgroup: read("/proc/self/cgroup"),
        governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        thp: read("/sys/kernel/mm/transparent_hugepage/enabled"),
        schedstats: read("/proc/sys/kernel/sched_schedstats"),
        debugfs_sched: debugfs,
        sched_ext: crate::sysfs::read_state().ok(),
        sched_ext_events: crate::sysfs::read_events(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        tools: tv,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_this_host() {
        let e = capture(&[]);
        assert_eq!(e.uname.sysname, "Linux");
        assert!(!e.uname.release.is_empty());
        assert!(!e.topology.allowed.is_empty());
        assert!(
            serde_json::to_value(&e)
                .unwrap()
                .get("debugfs_sched")
                .is_some()
        );
    }
}
