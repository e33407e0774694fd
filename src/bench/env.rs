//! The environment of a bench session, captured once for the JSON document: what a reader
//! needs to judge or repeat the numbers (kernel, command line, topology, preempt model,
//! autogroup, cgroup, every debugfs sched knob, sched_ext state, tool versions).
//!
//! Every source is optional; what cannot be read is recorded as null.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Environment {
    pub uname: Uname,
    pub cmdline: Option<String>,
    pub cpu_model: Option<String>,
    pub topology: Topology,
    /// The preempt model: debugfs `sched/preempt` when present, else the kernel version string.
    pub preempt: Option<String>,
    pub autogroup: Option<String>,
    /// The bench's own autogroup (/proc/self/autogroup: `/autogroup-N nice K`) when the kernel
    /// uses it for the bench's tasks; none in the default group (a session that never called
    /// setsid, or init's), or when the tasks' cpu cgroup is not the root (autogroups apply only
    /// there).
    #[serde(default)]
    pub session_autogroup: Option<String>,
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

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Uname {
    pub sysname: String,
    pub nodename: String,
    pub release: String,
    pub version: String,
    pub machine: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
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
    let allowed = crate::topology::allowed_cpus();
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

/// Every knob file of the kernel's sched debugfs: the top level (without the `debug` dump) and
/// the per-CPU deadline servers (`fair_server/cpuN/*`, `ext_server/cpuN/*`), whose settings
/// must match between arms.
pub fn debugfs_sched() -> BTreeMap<String, String> {
    let dir = std::env::var_os("LAB_DEBUGFS_SCHED")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| crate::kernel::DEBUGFS_SCHED.into());
    let mut out = BTreeMap::new();
    collect(&dir, "", 0, &mut out);
    out
}

fn collect(dir: &Path, prefix: &str, depth: usize, out: &mut BTreeMap<String, String>) {
    let Ok(rd) = fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let name = format!("{prefix}{}", e.file_name().to_string_lossy());
        let p = e.path();
        if p.is_dir() {
            let server = name.starts_with("fair_server") || name.starts_with("ext_server");
            if server && depth < 2 {
                collect(&p, &format!("{name}/"), depth + 1, out);
            }
            continue;
        }
        if name == "debug" {
            continue;
        }
        if let Some(v) = read(&p) {
            out.insert(name, v);
        }
    }
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

impl Environment {
    /// Why the kernel's arms may not be like-for-like with sched_ext arms: the bench's tasks
    /// (and the workloads' without `cgroup=`) share an autogroup that fair.c weighs as one group
    /// and that sched_ext never sees. None when autogroup is off, the bench is not in one, or
    /// the arms do not mix the kernel's fair class with a sched_ext scheduler.
    pub fn autogroup_note(&self, arms: &[crate::bench::arms::Arm]) -> Option<String> {
        use crate::bench::arms::ArmKind;
        let kernel = arms.iter().any(|a| a.spec.kind == ArmKind::Eevdf);
        if !kernel || arms.iter().all(|a| a.spec.kind == ArmKind::Eevdf) {
            return None;
        }
        let group = self.session_autogroup.as_deref()?;
        if self.autogroup.as_deref() != Some("1") {
            return None;
        }
        let name = group.split_whitespace().next().unwrap_or(group);
        Some(format!(
            "the bench runs in {name}: the kernel's fair class weighs the tasks of workloads \
             without cgroup= as that one group, which sched_ext schedulers do not see; for \
             like-for-like arms set kernel.sched_autogroup_enabled=0 or give the workloads \
             cgroup=NAME"
        ))
    }
}

/// Is a task of membership `cgroup` (a `/proc/PID/cgroup` text) in the root cpu group? With the
/// cpu controller on a v1 hierarchy, that line's path says; on v2 its cpu cgroup is the nearest
/// one up its path whose `cgroup.controllers` under `root` lists `cpu` (the root when none
/// does). Unknown (no such line, unreadable files): false.
pub fn in_root_cpu_group(root: &Path, cgroup: &str) -> bool {
    for l in cgroup.lines() {
        let mut f = l.splitn(3, ':');
        let (_, ctrls, path) = (f.next(), f.next().unwrap_or(""), f.next().unwrap_or(""));
        if ctrls.split(',').any(|c| c == "cpu") {
            return path.trim() == "/";
        }
    }
    let Some(path) = cgroup.lines().find_map(|l| l.strip_prefix("0::")) else {
        return false;
    };
    let mut dir = Path::new(path.trim());
    while let Ok(rest) = dir.strip_prefix("/") {
        if rest.as_os_str().is_empty() {
            return true;
        }
        let Ok(c) = fs::read_to_string(root.join(rest).join("cgroup.controllers")) else {
            return false;
        };
        if c.split_whitespace().any(|w| w == "cpu") {
            return false;
        }
        dir = match dir.parent() {
            Some(p) => p,
            None => return true,
        };
    }
    false
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
        session_autogroup: read("/proc/self/autogroup").filter(|s| {
            !s.is_empty()
                && read("/proc/self/cgroup")
                    .is_some_and(|c| in_root_cpu_group(&crate::bench::cgroup::root(), &c))
        }),
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
    fn an_autogroup_is_noted_only_when_it_applies() {
        let arms = |specs: &[&str]| -> Vec<crate::bench::arms::Arm> {
            let base = crate::bench::arms::baseline(4);
            specs
                .iter()
                .map(|s| {
                    let spec = crate::bench::arms::ArmSpec::parse(s).unwrap();
                    crate::bench::arms::Arm::resolve(spec, &base, 4).unwrap()
                })
                .collect()
        };
        let mixed = arms(&["eevdf", "lab"]);
        let mut e = capture(&[]);
        e.autogroup = Some("1".into());
        e.session_autogroup = Some("/autogroup-23 nice 0".into());
        let n = e.autogroup_note(&mixed).unwrap();
        assert!(n.starts_with("the bench runs in /autogroup-23: "), "{n}");
        assert!(n.contains("kernel.sched_autogroup_enabled=0"), "{n}");
        // Arms of one kind each see the group the same way.
        assert_eq!(
            e.autogroup_note(&arms(&["eevdf", "eevdf:NO_WA_WEIGHT"])),
            None
        );
        assert_eq!(e.autogroup_note(&arms(&["lab", "lab:NO_WA_WEIGHT"])), None);
        e.autogroup = Some("0".into());
        assert_eq!(e.autogroup_note(&mixed), None);
        e.autogroup = Some("1".into());
        e.session_autogroup = None;
        assert_eq!(e.autogroup_note(&mixed), None);
        // bench.json of an earlier version has no field: none.
        let mut v = serde_json::to_value(&e).unwrap();
        v.as_object_mut().unwrap().remove("session_autogroup");
        let back: Environment = serde_json::from_value(v).unwrap();
        assert_eq!(back.session_autogroup, None);
    }

    #[test]
    fn the_root_cpu_group_is_found_up_the_path() {
        let d = std::env::temp_dir().join(format!("lab-env-cg-{}", std::process::id()));
        fs::create_dir_all(d.join("user.slice/session-1.scope")).unwrap();
        fs::create_dir_all(d.join("system.slice/cron.service")).unwrap();
        fs::write(d.join("cgroup.controllers"), "cpuset cpu io memory\n").unwrap();
        fs::write(d.join("user.slice/cgroup.controllers"), "memory pids\n").unwrap();
        fs::write(d.join("user.slice/session-1.scope/cgroup.controllers"), "").unwrap();
        fs::write(d.join("system.slice/cgroup.controllers"), "cpu memory\n").unwrap();
        fs::write(d.join("system.slice/cron.service/cgroup.controllers"), "").unwrap();
        // No cpu controller below the root: the root group's, where autogroups apply.
        assert!(in_root_cpu_group(&d, "0::/user.slice/session-1.scope\n"));
        assert!(in_root_cpu_group(&d, "0::/\n"));
        // A cpu-enabled ancestor: its group.
        assert!(!in_root_cpu_group(&d, "0::/system.slice/cron.service\n"));
        // The cpu controller on a v1 hierarchy: its line decides.
        assert!(in_root_cpu_group(
            &d,
            "2:cpu,cpuacct:/\n1:memory:/x\n0::/system.slice\n"
        ));
        assert!(!in_root_cpu_group(&d, "2:cpu,cpuacct:/docker/abc\n0::/\n"));
        // No v2 line, or a path that is not there: unknown.
        assert!(!in_root_cpu_group(&d, "1:name=systemd:/\n"));
        assert!(!in_root_cpu_group(&d, "0::/gone\n"));
        fs::remove_dir_all(&d).unwrap();
    }

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

    #[test]
    fn reads_knobs_and_server_settings_but_not_the_debug_dump() {
        let d = std::env::temp_dir().join(format!("lab-env-{}", std::process::id()));
        fs::create_dir_all(d.join("fair_server/cpu0")).unwrap();
        fs::create_dir_all(d.join("domains/cpu0")).unwrap();
        fs::write(d.join("features"), "PLACE_LAG NO_NEXT_BUDDY \n").unwrap();
        fs::write(d.join("debug"), "live statistics").unwrap();
        fs::write(d.join("fair_server/cpu0/runtime"), "50000000\n").unwrap();
        fs::write(d.join("domains/cpu0/flags"), "SD_SHARE_LLC").unwrap();
        let mut out = BTreeMap::new();
        collect(&d, "", 0, &mut out);
        let keys: Vec<&str> = out.keys().map(|k| k.as_str()).collect();
        assert_eq!(keys, vec!["fair_server/cpu0/runtime", "features"]);
        assert_eq!(out["features"], "PLACE_LAG NO_NEXT_BUDDY");
        fs::remove_dir_all(&d).unwrap();
    }
}
