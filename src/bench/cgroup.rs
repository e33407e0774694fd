//! Cgroups of bench workloads: the spec keys every workload takes (`cgroup=NAME`,
//! `cpu_weight=N`, `cpu_idle=0|1`, `cpu_max=QUOTA/PERIOD|max`), the cgroup v2 groups the bench
//! creates for a session, their knobs, and their removal: at the end of the session, or from
//! the journal after a bench that was killed.
//!
//! Layout: `ROOT/scx_eevdf_lab.bench/NAME`, ROOT being `/sys/fs/cgroup` (`LAB_CGROUP_ROOT`
//! names another folder, which tests use: a plain folder standing in for cgroupfs). The bench
//! turns the cpu controller on in ROOT's `cgroup.subtree_control` when it is off (and off again
//! at the end), and in its own folder's (which goes with the folder). Every folder it creates and
//! every controller it turns on is recorded in the journal ([`Changes`]) before it is made, so
//! that `scx_eevdf_lab restore`, or the next bench, can undo it after a SIGKILL: the groups
//! first (whatever still runs in them killed), then the bench's folder, then the controller.
//!
//! The groups' knobs are written before every run of a workload that names them (the defaults
//! for the knobs it does not name), so that workloads, and the points of a sweep, may give one
//! group different settings.

use super::workloads::spec::{split_outside_quotes, unquote};
use super::workloads::{Key, key};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::ffi::{CStr, CString};
use std::fs;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where cgroup v2 is mounted.
pub const DEFAULT_ROOT: &str = "/sys/fs/cgroup";

/// The environment variable that names another folder for ROOT (tests).
pub const ROOT_ENV: &str = "LAB_CGROUP_ROOT";

/// The bench's own folder under ROOT; the groups are its children.
pub const BENCH_DIR: &str = "scx_eevdf_lab.bench";

/// The longest group name.
pub const MAX_NAME: usize = 64;

/// cpu.weight's range, and its default.
pub const WEIGHT_MIN: u64 = 1;
pub const WEIGHT_MAX: u64 = 10_000;
pub const WEIGHT_DEFAULT: u64 = 100;

/// cpu.max's period range and default, and its quota range, µs (the kernel's limits for the
/// period; a quota below 1 ms is refused by the kernel, one above 1000 s is no limit in practice).
pub const PERIOD_MIN_US: u64 = 1_000;
pub const PERIOD_MAX_US: u64 = 1_000_000;
pub const PERIOD_DEFAULT_US: u64 = 100_000;
pub const QUOTA_MIN_US: u64 = 1_000;
pub const QUOTA_MAX_US: u64 = 1_000_000_000;

/// The spec keys that every workload takes.
pub const KEYS: &[Key] = &[
    key(
        "cgroup",
        "run the workload's tasks in a cgroup v2 group of their own, NAME ([A-Za-z0-9_.-], \
         up to 64), created under /sys/fs/cgroup/scx_eevdf_lab.bench for the session",
    ),
    key(
        "cpu_weight",
        "the group's cpu.weight, 1..=10000 (default 100; needs cgroup=)",
    ),
    key(
        "cpu_idle",
        "the group's cpu.idle, 0 or 1 (default 0; needs cgroup=; 1 takes no cpu_weight)",
    ),
    key(
        "cpu_max",
        "the group's cpu.max: QUOTA/PERIOD in µs (50000/100000 = half a CPU) or max (default)",
    ),
];

/// Prefixes of the interface files of a cgroup folder, which a group may not be named like.
const RESERVED: &[&str] = &[
    "cgroup.", "cpu.", "cpuset.", "io.", "memory.", "pids.", "hugetlb.", "rdma.", "misc.",
];

/// How long the removal of a group waits for its tasks to go.
const REMOVE_TIMEOUT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(20);

/// The cgroup a workload asked for, with its knobs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_weight: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_idle: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_max: Option<CpuMax>,
}

/// A cpu.max setting: a quota per period, or none (`max`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuMax {
    /// None: no limit.
    pub quota_us: Option<u64>,
    pub period_us: u64,
}

impl CpuMax {
    /// `QUOTA/PERIOD` (µs) or `max`.
    pub fn parse(s: &str) -> Result<CpuMax> {
        if s == "max" {
            return Ok(CpuMax {
                quota_us: None,
                period_us: PERIOD_DEFAULT_US,
            });
        }
        let Some((q, p)) = s.split_once('/') else {
            bail!("cpu_max={s:?}: expected QUOTA/PERIOD in µs (50000/100000) or max");
        };
        let num = |x: &str, what: &str| -> Result<u64> {
            x.replace('_', "")
                .parse()
                .with_context(|| format!("cpu_max={s:?}: the {what} {x:?} is not a number of µs"))
        };
        let (quota, period) = (num(q, "quota")?, num(p, "period")?);
        if !(PERIOD_MIN_US..=PERIOD_MAX_US).contains(&period) {
            bail!("cpu_max={s:?}: the period must be {PERIOD_MIN_US}..={PERIOD_MAX_US} µs");
        }
        if !(QUOTA_MIN_US..=QUOTA_MAX_US).contains(&quota) {
            bail!("cpu_max={s:?}: the quota must be {QUOTA_MIN_US}..={QUOTA_MAX_US} µs");
        }
        Ok(CpuMax {
            quota_us: Some(quota),
            period_us: period,
        })
    }

    /// As the spec writes it.
    pub fn spec(&self) -> String {
        match self.quota_us {
            Some(q) => format!("{q}/{}", self.period_us),
            None => "max".into(),
        }
    }

    /// As cpu.max takes it (`50000 100000`, `max 100000`).
    pub fn file_value(&self) -> String {
        match self.quota_us {
            Some(q) => format!("{q} {}", self.period_us),
            None => format!("max {}", self.period_us),
        }
    }
}

/// Checks a group name: 1..=64 of `[A-Za-z0-9_.-]`, starting with a letter or digit (no '/',
/// no `.` or `..`), not shaped like an interface file (`cpu.weight`).
pub fn check_name(name: &str) -> Result<()> {
    if name.is_empty() {
        bail!("cgroup= needs a name");
    }
    if name.len() > MAX_NAME {
        let head: String = name.chars().take(MAX_NAME).collect();
        bail!("cgroup={head}...: a name has at most {MAX_NAME} characters");
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
    {
        bail!("cgroup={name:?}: {c:?} is not allowed in a name (only A-Z a-z 0-9 _ . -)");
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        bail!("cgroup={name:?}: a name starts with a letter or a digit");
    }
    if let Some(p) = RESERVED.iter().find(|p| name.starts_with(*p)) {
        bail!("cgroup={name:?}: names starting with {p:?} are cgroup interface files");
    }
    Ok(())
}

impl CgroupSpec {
    /// Splits the keys of [`KEYS`] off a workload spec (`NAME[:key=value...]`, with the command
    /// of a `cmd` spec left in place); returns the rest of the spec and the cgroup it asks for.
    pub fn take(spec: &str) -> Result<(String, Option<CgroupSpec>)> {
        let items = split_outside_quotes(spec, ':')?;
        // A cmd spec's first item after its name is its command, whatever it holds.
        let fixed = if items[0] == "cmd" { 2 } else { 1 };
        let mut kept: Vec<String> = Vec::new();
        let mut kv: Vec<(String, String)> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let generic = item
                .split_once('=')
                .filter(|(k, _)| i >= fixed && KEYS.iter().any(|g| g.name == *k));
            match generic {
                Some((k, v)) => {
                    if kv.iter().any(|(x, _)| x == k) {
                        bail!("{k} is given twice");
                    }
                    kv.push((k.to_string(), unquote(v)));
                }
                None => kept.push(item.clone()),
            }
        }
        Ok((kept.join(":"), Self::from_keys(&kv)?))
    }

    /// The cgroup of these keys (None without any), checked.
    fn from_keys(kv: &[(String, String)]) -> Result<Option<CgroupSpec>> {
        let get = |k: &str| kv.iter().find(|(x, _)| x == k).map(|(_, v)| v.as_str());
        let Some(name) = get("cgroup") else {
            if let Some((k, v)) = kv.first() {
                bail!("{k}={v} needs cgroup=NAME (the group it sets)");
            }
            return Ok(None);
        };
        check_name(name)?;
        let cpu_weight = get("cpu_weight")
            .map(|w| {
                w.replace('_', "")
                    .parse::<u64>()
                    .ok()
                    .filter(|w| (WEIGHT_MIN..=WEIGHT_MAX).contains(w))
                    .with_context(|| {
                        format!(
                            "cpu_weight={w:?} is out of range: allowed {WEIGHT_MIN}..={WEIGHT_MAX}"
                        )
                    })
            })
            .transpose()?;
        let cpu_idle = match get("cpu_idle") {
            None => None,
            Some("1") => Some(true),
            Some("0") => Some(false),
            Some(v) => bail!("cpu_idle={v:?}: expected 0 or 1"),
        };
        if cpu_idle == Some(true) && cpu_weight.is_some() {
            bail!(
                "cpu_idle=1 takes no cpu_weight: the kernel gives an idle group the least weight"
            );
        }
        let cpu_max = get("cpu_max").map(CpuMax::parse).transpose()?;
        Ok(Some(CgroupSpec {
            name: name.to_string(),
            cpu_weight,
            cpu_idle,
            cpu_max,
        }))
    }

    /// `cgroup NAME, cpu.weight 300, ...`: the group and the knobs it sets, for the report.
    pub fn describe(&self) -> String {
        let mut s = format!("cgroup {}", self.name);
        if let Some(w) = self.cpu_weight {
            s.push_str(&format!(", cpu.weight {w}"));
        }
        if let Some(i) = self.cpu_idle {
            s.push_str(&format!(", cpu.idle {}", u8::from(i)));
        }
        if let Some(m) = self.cpu_max {
            s.push_str(&format!(", cpu.max {}", m.spec()));
        }
        s
    }

    /// The keys as a spec writes them, for the workload's parameters.
    pub fn params(&self) -> Vec<(String, String)> {
        let mut v = vec![("cgroup".to_string(), self.name.clone())];
        if let Some(w) = self.cpu_weight {
            v.push(("cpu_weight".into(), w.to_string()));
        }
        if let Some(i) = self.cpu_idle {
            v.push(("cpu_idle".into(), u8::from(i).to_string()));
        }
        if let Some(m) = self.cpu_max {
            v.push(("cpu_max".into(), m.spec()));
        }
        v
    }
}

/// ROOT: `LAB_CGROUP_ROOT` or `/sys/fs/cgroup`.
pub fn root() -> PathBuf {
    PathBuf::from(std::env::var_os(ROOT_ENV).unwrap_or_else(|| DEFAULT_ROOT.into()))
}

/// The bench's folder under `root`.
pub fn bench_dir(root: &Path) -> PathBuf {
    root.join(BENCH_DIR)
}

/// True when `p` is on a cgroup v2 file system (not a folder standing in for one).
pub fn is_cgroupfs(p: &Path) -> bool {
    let Ok(c) = CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs is plain old data; c is a valid C string.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return false;
    }
    // f_type's type differs between architectures.
    #[allow(clippy::unnecessary_cast)]
    let is = st.f_type as i64 == libc::CGROUP2_SUPER_MAGIC as i64;
    is
}

/// The controllers a `cgroup.controllers` or `cgroup.subtree_control` file lists.
fn controllers(file: &Path) -> Result<Vec<String>> {
    let text =
        fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    // A folder standing in for cgroupfs keeps what was written, with its '+'.
    Ok(text
        .split_whitespace()
        .map(|c| c.trim_start_matches('+').to_string())
        .collect())
}

/// Fails with a remedy when cgroup v2 with its cpu controller is not usable at `root`. A root
/// other than `/sys/fs/cgroup` (`LAB_CGROUP_ROOT`) may be a plain folder standing in for one.
pub fn check_root(root: &Path) -> Result<()> {
    if root == Path::new(DEFAULT_ROOT) && !is_cgroupfs(root) {
        bail!(
            "cgroup v2 is not mounted at {} (a workload with cgroup= needs it: mount -t cgroup2 \
             none {})",
            root.display(),
            root.display()
        );
    }
    let file = root.join("cgroup.controllers");
    if !file.exists() {
        bail!(
            "{} is missing: {} is not the root of a cgroup v2 hierarchy",
            file.display(),
            root.display()
        );
    }
    let c = controllers(&file)?;
    if !c.iter().any(|c| c == "cpu") {
        bail!(
            "the cpu controller is not available in cgroup v2 at {} (cgroup.controllers: {}); \
             is it bound to a cgroup v1 hierarchy?",
            root.display(),
            if c.is_empty() {
                "empty".into()
            } else {
                c.join(" ")
            }
        );
    }
    Ok(())
}

/// What the bench changed in cgroup v2, each item recorded before it was made.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changes {
    /// Folders whose `cgroup.subtree_control` got the cpu controller from the bench (outside
    /// the folders it created, whose control goes with them).
    pub cpu_enabled: Vec<PathBuf>,
    /// Folders the bench created, parents first.
    pub created: Vec<PathBuf>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.cpu_enabled.is_empty() && self.created.is_empty()
    }
}

fn write(file: &Path, value: &str) -> Result<()> {
    fs::write(file, value).with_context(|| format!("cannot write {value:?} to {}", file.display()))
}

/// Creates the bench's folder under `root` and a group for each name, with the cpu controller
/// on for them. Before each change it adds it to `changes` and calls `record` (which saves the
/// journal); a failure of `record` stops before the change. Returns the bench's folder.
/// `need_idle`: some workload sets cpu.idle, which the kernel must have.
pub fn setup(
    root: &Path,
    names: &[String],
    need_idle: bool,
    changes: &mut Changes,
    record: &mut dyn FnMut(&Changes) -> Result<()>,
) -> Result<PathBuf> {
    check_root(root)?;
    let dir = bench_dir(root);
    if dir.exists() {
        bail!(
            "{} exists, but no bench journal names it (a bench that is not this version's, or \
             made by hand?): remove it (rmdir its groups, then it) and try again",
            dir.display()
        );
    }
    let subtree = root.join("cgroup.subtree_control");
    if !controllers(&subtree)?.iter().any(|c| c == "cpu") {
        changes.cpu_enabled.push(root.to_path_buf());
        record(changes)?;
        write(&subtree, "+cpu")?;
    }
    changes.created.push(dir.clone());
    record(changes)?;
    fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    write(&dir.join("cgroup.subtree_control"), "+cpu")?;
    let real = is_cgroupfs(&dir);
    for name in names {
        let g = dir.join(name);
        changes.created.push(g.clone());
        record(changes)?;
        fs::create_dir(&g).with_context(|| format!("cannot create {}", g.display()))?;
        if !real {
            // What the kernel makes in a group, for a folder standing in for cgroupfs.
            write(&g.join("cgroup.procs"), "")?;
        }
        // The files of the cpu controller (a folder standing in for cgroupfs has none).
        let mut files = vec!["cpu.weight", "cpu.max"];
        if need_idle {
            files.push("cpu.idle");
        }
        if let Some(f) = files.iter().find(|f| real && !g.join(f).exists()) {
            bail!(
                "{} is missing: this kernel's cpu controller lacks {f}",
                g.join(f).display()
            );
        }
    }
    Ok(dir)
}

/// Writes a group's knobs: those the spec names, the defaults for the others (where the kernel
/// has the file). cpu.idle comes first: an idle group refuses a weight.
pub fn write_knobs(group: &Path, spec: &CgroupSpec) -> Result<()> {
    let idle = group.join("cpu.idle");
    if spec.cpu_idle.is_some() || idle.exists() {
        write(
            &idle,
            if spec.cpu_idle == Some(true) {
                "1"
            } else {
                "0"
            },
        )?;
    }
    if spec.cpu_idle != Some(true) {
        let w = spec.cpu_weight.unwrap_or(WEIGHT_DEFAULT);
        write(&group.join("cpu.weight"), &w.to_string())?;
    }
    let max = spec.cpu_max.unwrap_or(CpuMax {
        quota_us: None,
        period_us: PERIOD_DEFAULT_US,
    });
    write(&group.join("cpu.max"), &max.file_value())
}

/// The `cgroup.procs` file of a group, for [`enter`] after a fork.
pub fn procs_file(group: &Path) -> Result<CString> {
    CString::new(group.join("cgroup.procs").as_os_str().as_bytes())
        .context("a cgroup path holds a NUL byte")
}

/// Moves the calling process into the group whose `cgroup.procs` is `procs` (cgroup v2 takes
/// "0" as the writer itself). Only async-signal-safe calls: it runs between fork and exec, so
/// that the program starts, and every task it creates lives, in the group.
pub fn enter(procs: &CStr) -> std::io::Result<()> {
    // SAFETY: open, write and close of a valid C string path and a static buffer.
    unsafe {
        let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = libc::write(fd, c"0".as_ptr().cast(), 1);
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if n != 1 {
            return Err(err);
        }
    }
    Ok(())
}

/// The pids listed in a group's `cgroup.procs` (none when it cannot be read; a folder standing
/// in for cgroupfs may hold the "0" that [`enter`] wrote).
fn members(group: &Path) -> Vec<i32> {
    fs::read_to_string(group.join("cgroup.procs"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .filter(|&p| p > 1)
        .collect()
}

/// Kills what runs in a group: through `cgroup.kill` where the kernel has it (5.14+: also what
/// forks meanwhile), else each listed process. Never this process or pid 1.
fn kill_members(group: &Path, pids: &[i32]) {
    let kill = group.join("cgroup.kill");
    if kill.exists() && fs::write(&kill, "1").is_ok() {
        return;
    }
    let me = std::process::id() as i32;
    for &p in pids.iter().filter(|&&p| p > 1 && p != me) {
        // SAFETY: a signal to a process listed in a group the bench created.
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
}

/// Removes one folder the bench created: kills what still runs in it, then removes it
/// (retrying while its killed tasks exit). Returns a line when it had to kill something.
fn remove_dir(dir: &Path) -> Result<Option<String>> {
    if !dir.exists() {
        return Ok(None);
    }
    let pids = members(dir);
    if !pids.is_empty() {
        kill_members(dir, &pids);
    }
    let t0 = Instant::now();
    loop {
        let err = match fs::remove_dir(dir) {
            Ok(()) => break,
            Err(e) if e.kind() == ErrorKind::NotFound => break,
            Err(e) => e,
        };
        let busy = err.raw_os_error() == Some(libc::EBUSY);
        let not_empty = err.raw_os_error() == Some(libc::ENOTEMPTY);
        if not_empty && !is_cgroupfs(dir) {
            // A folder standing in for cgroupfs holds its knobs as plain files.
            for e in fs::read_dir(dir)?.flatten() {
                if e.file_type().is_ok_and(|t| t.is_file()) {
                    let _ = fs::remove_file(e.path());
                }
            }
            if fs::remove_dir(dir).is_ok() {
                break;
            }
        }
        if !busy || t0.elapsed() > REMOVE_TIMEOUT {
            return Err(err).with_context(|| format!("cannot remove {}", dir.display()));
        }
        // Tasks still exiting, or forked after the kill.
        kill_members(dir, &members(dir));
        std::thread::sleep(POLL);
    }
    Ok((!pids.is_empty()).then(|| {
        format!(
            "killed {} leftover process(es) in {}",
            pids.len(),
            dir.display()
        )
    }))
}

/// Undoes `changes`: removes the folders the bench created, children first (killing whatever
/// still runs in them), then takes the cpu controller off where the bench turned it on. What is
/// already gone is skipped, so that it may run again after a partial undo. Returns what it did,
/// one line each.
pub fn undo(changes: &Changes) -> Result<Vec<String>> {
    let mut done = Vec::new();
    for dir in changes.created.iter().rev() {
        let existed = dir.exists();
        if let Some(line) = remove_dir(dir)? {
            done.push(line);
        }
        if existed {
            done.push(format!("removed {}", dir.display()));
        }
    }
    for dir in changes.cpu_enabled.iter().rev() {
        let file = dir.join("cgroup.subtree_control");
        if !file.exists() || !controllers(&file)?.iter().any(|c| c == "cpu") {
            continue;
        }
        match fs::write(&file, "-cpu") {
            Ok(()) => done.push(format!("took the cpu controller off in {}", file.display())),
            // Another group below turned it on for its own children meanwhile: it stays.
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => done.push(format!(
                "left the cpu controller on in {}: a group below it uses it now",
                file.display()
            )),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot write -cpu to {}", file.display()));
            }
        }
    }
    Ok(done)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A plain folder standing in for a cgroup v2 root: cgroup.controllers with cpu, an empty
    /// cgroup.subtree_control.
    pub fn fake_root(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("lab-cgroup-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("cgroup.controllers"), "cpuset cpu io memory pids\n").unwrap();
        fs::write(d.join("cgroup.subtree_control"), "").unwrap();
        d
    }

    fn take(spec: &str) -> Result<(String, Option<CgroupSpec>)> {
        CgroupSpec::take(spec)
    }

    #[test]
    fn the_keys_come_off_the_spec_checked() {
        let (rest, cg) =
            take("pingpong:pairs=2:cgroup=lat:cpu_weight=300:pin=same-cpu:cpu_max=50000/100000")
                .unwrap();
        assert_eq!(rest, "pingpong:pairs=2:pin=same-cpu");
        let cg = cg.unwrap();
        assert_eq!(cg.name, "lat");
        assert_eq!(cg.cpu_weight, Some(300));
        assert_eq!(cg.cpu_max.unwrap().file_value(), "50000 100000");
        assert_eq!(
            cg.describe(),
            "cgroup lat, cpu.weight 300, cpu.max 50000/100000"
        );
        assert_eq!(
            take("pingpong:pairs=2").unwrap(),
            ("pingpong:pairs=2".into(), None)
        );
        // A cmd's command stays whatever it holds; its keys after it are taken.
        let (rest, cg) = take("cmd:'cgroup=x':metric=a:better=lower:cgroup=c.1-x_2").unwrap();
        assert_eq!(rest, "cmd:'cgroup=x':metric=a:better=lower");
        assert_eq!(cg.unwrap().name, "c.1-x_2");
        let (_, cg) = take("hog-probe:cgroup=b:cpu_idle=1:cpu_max=max").unwrap();
        let cg = cg.unwrap();
        assert_eq!((cg.cpu_idle, cg.cpu_weight), (Some(true), None));
        assert_eq!(cg.cpu_max.unwrap().file_value(), "max 100000");
        assert_eq!(cg.params().len(), 3);
    }

    #[test]
    fn bad_names_and_knobs_are_refused_with_the_reason() {
        let long = format!("pingpong:cgroup={}", "a".repeat(MAX_NAME + 1));
        for (spec, want) in [
            ("pingpong:cgroup=", "needs a name"),
            ("pingpong:cgroup=a/b", "'/' is not allowed"),
            ("pingpong:cgroup=..", "starts with a letter or a digit"),
            ("pingpong:cgroup=.x", "starts with a letter or a digit"),
            ("pingpong:cgroup=a b", "' ' is not allowed"),
            ("pingpong:cgroup=cpu.weight", "interface files"),
            ("pingpong:cgroup=cgroup.procs", "interface files"),
            (long.as_str(), "at most 64 characters"),
            (
                "pingpong:cpu_weight=100",
                "cpu_weight=100 needs cgroup=NAME",
            ),
            ("pingpong:cpu_max=max", "needs cgroup=NAME"),
            (
                "pingpong:cgroup=a:cpu_weight=0",
                "out of range: allowed 1..=10000",
            ),
            ("pingpong:cgroup=a:cpu_weight=10001", "out of range"),
            ("pingpong:cgroup=a:cpu_weight=x", "out of range"),
            ("pingpong:cgroup=a:cpu_weight=-1", "out of range"),
            ("pingpong:cgroup=a:cpu_idle=2", "expected 0 or 1"),
            (
                "pingpong:cgroup=a:cpu_idle=1:cpu_weight=5",
                "takes no cpu_weight",
            ),
            ("pingpong:cgroup=a:cpu_max=50000", "QUOTA/PERIOD"),
            ("pingpong:cgroup=a:cpu_max=50000/100", "period must be"),
            ("pingpong:cgroup=a:cpu_max=10/100000", "quota must be"),
            ("pingpong:cgroup=a:cpu_max=x/100000", "not a number"),
            ("pingpong:cgroup=a:cgroup=b", "cgroup is given twice"),
        ] {
            let e = format!("{:#}", take(spec).expect_err(spec));
            assert!(e.contains(want), "{spec}: {e}");
        }
        assert!(check_name(&"a".repeat(MAX_NAME)).is_ok());
    }

    #[test]
    fn setup_records_each_change_before_making_it_and_undo_removes_all() {
        let root = fake_root("setup");
        let mut changes = Changes::default();
        let mut seen: Vec<Changes> = Vec::new();
        let names = vec!["lat".to_string(), "batch".to_string()];
        let dir = setup(&root, &names, false, &mut changes, &mut |c| {
            // Recorded before it is made: the last item does not exist yet.
            if let Some(last) = c.created.last() {
                assert!(
                    !last.exists(),
                    "{} made before it was recorded",
                    last.display()
                );
            }
            seen.push(c.clone());
            Ok(())
        })
        .unwrap();
        assert_eq!(dir, root.join(BENCH_DIR));
        assert_eq!(seen.len(), 4, "{seen:?}");
        assert_eq!(changes.cpu_enabled, vec![root.clone()]);
        assert_eq!(
            changes.created,
            vec![dir.clone(), dir.join("lat"), dir.join("batch")]
        );
        assert_eq!(
            fs::read_to_string(root.join("cgroup.subtree_control")).unwrap(),
            "+cpu"
        );
        let spec = take("pingpong:cgroup=lat:cpu_weight=300")
            .unwrap()
            .1
            .unwrap();
        write_knobs(&dir.join("lat"), &spec).unwrap();
        assert_eq!(
            fs::read_to_string(dir.join("lat/cpu.weight")).unwrap(),
            "300"
        );
        assert_eq!(
            fs::read_to_string(dir.join("lat/cpu.max")).unwrap(),
            "max 100000"
        );
        // A second bench would find the folder: refused, nothing recorded.
        let mut other = Changes::default();
        let e = setup(&root, &names, false, &mut other, &mut |_| Ok(())).unwrap_err();
        assert!(format!("{e:#}").contains("exists"), "{e:#}");
        assert!(other.is_empty());

        let done = undo(&changes).unwrap();
        assert!(!dir.exists());
        assert_eq!(done.len(), 4, "{done:?}");
        assert!(done[0].ends_with("batch"), "{done:?}");
        assert!(done[3].contains("took the cpu controller off"), "{done:?}");
        assert_eq!(
            fs::read_to_string(root.join("cgroup.subtree_control")).unwrap(),
            "-cpu"
        );
        // Once more: nothing left to do.
        assert!(undo(&changes).unwrap().is_empty());
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_root_with_the_cpu_controller_on_is_left_so() {
        let root = fake_root("on");
        fs::write(root.join("cgroup.subtree_control"), "cpu memory\n").unwrap();
        let mut changes = Changes::default();
        setup(&root, &["a".into()], false, &mut changes, &mut |_| Ok(())).unwrap();
        assert!(changes.cpu_enabled.is_empty());
        undo(&changes).unwrap();
        assert_eq!(
            fs::read_to_string(root.join("cgroup.subtree_control")).unwrap(),
            "cpu memory\n"
        );
        // A failed record stops before the change.
        let mut c = Changes::default();
        let e = setup(&root, &["a".into()], false, &mut c, &mut |_| {
            bail!("disk full")
        })
        .unwrap_err();
        assert!(format!("{e:#}").contains("disk full"));
        assert!(!bench_dir(&root).exists());
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_root_without_the_cpu_controller_is_refused() {
        let root = fake_root("nocpu");
        fs::write(root.join("cgroup.controllers"), "io memory\n").unwrap();
        let msg = format!("{:#}", check_root(&root).unwrap_err());
        assert!(msg.contains("cpu controller is not available"), "{msg}");
        fs::remove_file(root.join("cgroup.controllers")).unwrap();
        let msg = format!("{:#}", check_root(&root).unwrap_err());
        assert!(
            msg.contains("not the root of a cgroup v2 hierarchy"),
            "{msg}"
        );
        fs::remove_dir_all(&root).unwrap();
    }
}
