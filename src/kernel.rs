//! The built-in EEVDF's knobs under `/sys/kernel/debug/sched`: read them, change them, and put
//! them back exactly as they were.
//!
//! Used by `--match-kernel` and `diff-kernel` (read only) and by the bench's `eevdf` arms, which
//! change knobs for a run under a [`KnobGuard`] that restores every file it touched, on drop and
//! therefore also on error and after Ctrl-C.

use crate::features::{self, Feature, FeatureSet};
use crate::tunables::{self, Tunables};
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

pub const DEBUGFS_SCHED: &str = "/sys/kernel/debug/sched";

/// Knob files that a bench arm may set besides `features` (the others are debug switches).
pub const SETTABLE: &[&str] = &[
    "base_slice_ns",
    "migration_cost_ns",
    "nr_migrate",
    "tunable_scaling",
    "cgroup_mode",
    "preempt",
];

fn dir() -> PathBuf {
    PathBuf::from(std::env::var_os("LAB_DEBUGFS_SCHED").unwrap_or_else(|| DEBUGFS_SCHED.into()))
}

/// Where debugfs is mounted when it is.
const DEBUGFS_ROOT: &str = "/sys/kernel/debug";

/// Fails with a remedy when the kernel's sched debugfs is not reachable.
pub fn require_debugfs() -> Result<PathBuf> {
    let d = dir();
    let features = d.join("features");
    if features.exists() {
        return Ok(d);
    }
    let custom = std::env::var_os("LAB_DEBUGFS_SCHED").is_some();
    let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let root_listing = fs::read_dir(DEBUGFS_ROOT).map(|_| ());
    bail!(
        "cannot read the kernel's EEVDF features: {}",
        debugfs_problem(
            &features,
            custom,
            &mounts,
            root_listing.err().map(|e| e.kind())
        )
    )
}

/// Why `features` (under the sched debugfs folder) cannot be read: debugfs not mounted, or only
/// root may enter it, or this kernel has no sched folder there. `custom` is true when the folder
/// was given by LAB_DEBUGFS_SCHED (then it is just missing); `mounts` is /proc/self/mounts;
/// `root_err` is the error of listing /sys/kernel/debug, if any.
fn debugfs_problem(
    features: &Path,
    custom: bool,
    mounts: &str,
    root_err: Option<std::io::ErrorKind>,
) -> String {
    let missing = format!("{} is missing", features.display());
    if custom {
        return missing;
    }
    let mounted = mounts
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(DEBUGFS_ROOT));
    if !mounted {
        return format!(
            "debugfs is not mounted on {DEBUGFS_ROOT} (as root: mount -t debugfs none {DEBUGFS_ROOT})"
        );
    }
    if root_err == Some(std::io::ErrorKind::PermissionDenied) {
        return format!("{DEBUGFS_ROOT} is readable by root only (try sudo)");
    }
    format!("{missing} (a kernel without CONFIG_SCHED_DEBUG has no sched folder in debugfs)")
}

fn read(path: &Path) -> Result<String> {
    fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

fn write(path: &Path, value: &str) -> Result<()> {
    fs::write(path, value).with_context(|| format!("cannot write {value:?} to {}", path.display()))
}

/// The value shown by a multi-choice file such as `cgroup_mode` (`up smp (concur) max tasks`)
/// or `preempt` (`full (lazy)`): the entry in parentheses; other files verbatim.
pub fn selected_choice(text: &str) -> String {
    let t = text.trim();
    match (t.find('('), t.find(')')) {
        (Some(a), Some(b)) if a < b => t[a + 1..b].to_string(),
        _ => t.to_string(),
    }
}

/// Everything the bench may change, as read from debugfs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KnobSnapshot {
    /// The features line, verbatim.
    pub features: String,
    /// Knob file → raw file content (trimmed), for the [`SETTABLE`] files this kernel has.
    pub files: BTreeMap<String, String>,
}

/// The kernel's features line, verbatim (without the newline).
pub fn read_features_line() -> Result<String> {
    let d = require_debugfs()?;
    Ok(read(&d.join("features"))?
        .trim_end_matches('\n')
        .to_string())
}

impl KnobSnapshot {
    pub fn read() -> Result<Self> {
        let d = require_debugfs()?;
        let features = read_features_line()?;
        let mut files = BTreeMap::new();
        for name in SETTABLE {
            let p = d.join(name);
            if p.is_file() {
                files.insert(name.to_string(), read(&p)?.trim().to_string());
            }
        }
        Ok(KnobSnapshot { features, files })
    }

    pub fn feature_set(&self) -> (FeatureSet, Vec<String>) {
        kernel_feature_set(&self.features)
    }

    /// The kernel's tunables in the lab's terms (ours has the same names and meaning).
    pub fn tunables(&self, ncpus: u64) -> Result<Tunables> {
        let get = |n: &str| -> Result<u64> {
            let raw = self
                .files
                .get(n)
                .with_context(|| format!("the kernel has no {n}"))?;
            raw.parse()
                .with_context(|| format!("{n}: unexpected content {raw:?}"))
        };
        let mut t = Tunables::defaults(ncpus);
        t.base_slice_ns = get("base_slice_ns")?;
        t.migration_cost_ns = get("migration_cost_ns")?;
        t.nr_migrate = get("nr_migrate")?;
        t.tunable_scaling = get("tunable_scaling")?;
        // The kernel keeps normalized_sysctl_sched_base_slice at 0.7 ms unless tunable_scaling
        // was rewritten after a base_slice_ns change; base/factor is what it would hold then.
        if t.base_slice_ns != t.derived_base_slice(ncpus) {
            t.normalized_slice_ns = t.derived_normalized_slice(ncpus);
        }
        if let Some(m) = self.preempt()? {
            t.preempt = m;
        }
        t.cgroup_mode = self.cgroup_mode()?.unwrap_or(tunables::CGROUP_SMP);
        Ok(t)
    }

    /// The kernel's cgroup mode (`cgroup_mode`'s value), None on a kernel without the knob
    /// (before 7.3, whose group shares are smp's).
    pub fn cgroup_mode(&self) -> Result<Option<u64>> {
        self.choice_file("cgroup_mode")
    }

    /// The kernel's preemption model (`preempt`'s value), None on a kernel without
    /// PREEMPT_DYNAMIC (no such file).
    pub fn preempt(&self) -> Result<Option<u64>> {
        self.choice_file("preempt")
    }

    /// The value of the multi-choice file `name` (the tunable of the same name), None when the
    /// kernel has no such file.
    fn choice_file(&self, name: &str) -> Result<Option<u64>> {
        let Some(raw) = self.files.get(name) else {
            return Ok(None);
        };
        let t = tunables::find_tunable(name).with_context(|| format!("no {name} tunable"))?;
        match t.choice(&selected_choice(raw)) {
            Some(v) => Ok(Some(v)),
            None => bail!("{name}: unexpected content {raw:?}"),
        }
    }
}

/// The tunables a lab starts with when none are given: the kernel's boot-time values for `ncpus`
/// CPUs, with the kernel's current preemption model where debugfs shows it (a boot choice, like
/// Debian's preempt=lazy), else preempt=full, and its cgroup mode (smp on a kernel without the
/// knob; concur where debugfs cannot be read).
pub fn host_defaults(ncpus: u64) -> Tunables {
    let mut t = Tunables::defaults(ncpus);
    if let Ok(snap) = KnobSnapshot::read() {
        if let Some(m) = snap.preempt().ok().flatten() {
            t.preempt = m;
        }
        if let Ok(m) = snap.cgroup_mode() {
            t.cgroup_mode = m.unwrap_or(tunables::CGROUP_SMP);
        }
    }
    t
}

/// Our feature set with the kernel's flags taken from a kernel features line (lab knobs keep
/// their defaults), plus the names in the line that the lab does not know.
pub fn kernel_feature_set(line: &str) -> (FeatureSet, Vec<String>) {
    let parsed = features::parse_kernel_line(line);
    let mut s = FeatureSet::defaults();
    for (f, on) in parsed.known {
        s.set(f, on);
    }
    (s, parsed.unknown)
}

/// Changes kernel knobs and restores, on drop, every file it changed to its original content.
pub struct KnobGuard {
    dir: PathBuf,
    original: KnobSnapshot,
    touched_features: bool,
    touched_files: Vec<String>,
}

impl KnobGuard {
    pub fn new() -> Result<Self> {
        Ok(KnobGuard {
            dir: require_debugfs()?,
            original: KnobSnapshot::read()?,
            touched_features: false,
            touched_files: Vec::new(),
        })
    }

    pub fn original(&self) -> &KnobSnapshot {
        &self.original
    }

    /// Sets the kernel's flags to `target` (lab-only knobs are ignored), one token per write as
    /// debugfs requires, then re-reads the line to confirm.
    pub fn set_features(&mut self, target: &FeatureSet) -> Result<()> {
        let path = self.dir.join("features");
        let (current, _) = kernel_feature_set(&read(&path)?);
        for f in features::FEATURES.iter().filter(|f| f.in_kernel) {
            if current.is_on(f) != target.is_on(f) {
                self.touched_features = true;
                write(&path, &token(f, target.is_on(f)))?;
            }
        }
        let (now, _) = kernel_feature_set(&read(&path)?);
        let wrong: Vec<_> = features::FEATURES
            .iter()
            .filter(|f| f.in_kernel && now.is_on(f) != target.is_on(f))
            .map(|f| f.name)
            .collect();
        if !wrong.is_empty() {
            bail!("the kernel did not take the features {}", wrong.join(" "));
        }
        Ok(())
    }

    /// Writes one knob file (one of [`SETTABLE`]) and re-reads it.
    pub fn set_file(&mut self, name: &str, value: &str) -> Result<()> {
        if !SETTABLE.contains(&name) {
            bail!(
                "{name} is not a kernel knob the lab sets; settable: {}",
                SETTABLE.join(" ")
            );
        }
        let path = self.dir.join(name);
        if !path.is_file() {
            bail!("this kernel has no {}", path.display());
        }
        if !self.touched_files.iter().any(|n| n == name) {
            self.touched_files.push(name.to_string());
        }
        write(&path, value)?;
        let now = selected_choice(&read(&path)?);
        if now != value.trim() {
            bail!(
                "{} reads back {now:?} after writing {value:?}",
                path.display()
            );
        }
        Ok(())
    }

    /// Puts every touched knob back. Called by drop; callable earlier to see errors.
    pub fn restore(&mut self) -> Result<()> {
        let mut errors = Vec::new();
        // Files first, in the order they were touched; then the features line.
        for name in std::mem::take(&mut self.touched_files) {
            let orig = &self.original.files[&name];
            let value = selected_choice(orig);
            if let Err(e) = write(&self.dir.join(&name), &value) {
                errors.push(format!("{e:#}"));
            }
        }
        if std::mem::take(&mut self.touched_features) {
            let (orig, _) = kernel_feature_set(&self.original.features);
            let path = self.dir.join("features");
            match read(&path) {
                Ok(line) => {
                    let (now, _) = kernel_feature_set(&line);
                    for f in features::FEATURES.iter().filter(|f| f.in_kernel) {
                        if now.is_on(f) != orig.is_on(f)
                            && let Err(e) = write(&path, &token(f, orig.is_on(f)))
                        {
                            errors.push(format!("{e:#}"));
                        }
                    }
                }
                Err(e) => errors.push(format!("{e:#}")),
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            bail!("restoring kernel knobs: {}", errors.join("; "))
        }
    }
}

impl Drop for KnobGuard {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            log::error!("{e:#}");
        }
    }
}

/// Puts every knob back to its value in `original` (a snapshot taken earlier, e.g. kept in the
/// bench's journal) where it differs now: the files first, then the features line one token at
/// a time. Returns what it changed, as `name: now -> original`.
pub fn put_back(original: &KnobSnapshot) -> Result<Vec<String>> {
    let d = require_debugfs()?;
    let now = KnobSnapshot::read()?;
    let mut changed = Vec::new();
    let mut errors = Vec::new();
    for (name, orig) in &original.files {
        let (want, cur) = (
            selected_choice(orig),
            now.files.get(name).map(|v| selected_choice(v)),
        );
        if cur.as_deref() == Some(want.as_str()) {
            continue;
        }
        match write(&d.join(name), &want) {
            Ok(()) => changed.push(format!(
                "{name}: {} -> {want}",
                cur.as_deref().unwrap_or("?")
            )),
            Err(e) => errors.push(format!("{e:#}")),
        }
    }
    let (orig, _) = kernel_feature_set(&original.features);
    let (cur, _) = kernel_feature_set(&now.features);
    for f in features::FEATURES.iter().filter(|f| f.in_kernel) {
        if cur.is_on(f) != orig.is_on(f) {
            match write(&d.join("features"), &token(f, orig.is_on(f))) {
                Ok(()) => changed.push(format!(
                    "features: {} -> {}",
                    token(f, cur.is_on(f)),
                    token(f, orig.is_on(f))
                )),
                Err(e) => errors.push(format!("{e:#}")),
            }
        }
    }
    if !errors.is_empty() {
        bail!("putting kernel knobs back: {}", errors.join("; "));
    }
    Ok(changed)
}

fn token(f: &Feature, on: bool) -> String {
    if on {
        f.name.to_string()
    } else {
        format!("NO_{}", f.name)
    }
}

/// The tests that point LAB_DEBUGFS_SCHED somewhere run one at a time.
#[cfg(test)]
pub static TEST_ENV: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selected_choice_reads_multi_choice_files() {
        assert_eq!(selected_choice("up smp (concur) max tasks \n"), "concur");
        assert_eq!(selected_choice("full (lazy) "), "lazy");
        assert_eq!(selected_choice("2100000\n"), "2100000");
    }

    #[test]
    fn debugfs_problems_name_their_remedy() {
        let f = Path::new("/sys/kernel/debug/sched/features");
        let none = "proc /proc proc rw 0 0\n";
        let dbg = "debugfs /sys/kernel/debug debugfs rw 0 0\n";
        assert!(debugfs_problem(f, false, none, None).contains("not mounted"));
        let denied = Some(std::io::ErrorKind::PermissionDenied);
        assert!(debugfs_problem(f, false, dbg, denied).contains("sudo"));
        assert!(debugfs_problem(f, false, dbg, None).contains("CONFIG_SCHED_DEBUG"));
        let custom = debugfs_problem(Path::new("/tmp/x/features"), true, none, None);
        assert_eq!(custom, "/tmp/x/features is missing");
    }

    /// A fake debugfs folder lets the guard's write/restore logic run on any host.
    #[test]
    fn guard_restores_everything_it_touched() {
        let _env = TEST_ENV.lock().unwrap();
        let d = tempdir();
        let line = FeatureSet::defaults().to_line();
        let kernel_line: String = line
            .split_whitespace()
            .filter(|t| features::find(t.trim_start_matches("NO_")).is_some_and(|f| f.in_kernel))
            .map(|t| format!("{t} "))
            .collect();
        fs::write(d.join("features"), &kernel_line).unwrap();
        fs::write(d.join("base_slice_ns"), "2100000\n").unwrap();
        fs::write(d.join("migration_cost_ns"), "500000\n").unwrap();
        fs::write(d.join("nr_migrate"), "32\n").unwrap();
        fs::write(d.join("tunable_scaling"), "1\n").unwrap();
        // SAFETY: tests in this module are the only users of LAB_DEBUGFS_SCHED.
        unsafe { std::env::set_var("LAB_DEBUGFS_SCHED", &d) };
        let before = KnobSnapshot::read().unwrap();
        // Without a cgroup_mode file (a kernel before 7.3) the groups' shares are smp's.
        let mut want = Tunables::defaults(4);
        want.cgroup_mode = tunables::CGROUP_SMP;
        assert_eq!(before.tunables(4).unwrap(), want);
        fs::write(d.join("cgroup_mode"), "up smp (concur) max tasks \n").unwrap();
        let with_mode = KnobSnapshot::read().unwrap();
        assert_eq!(with_mode.tunables(4).unwrap(), Tunables::defaults(4));
        assert_eq!(
            with_mode.cgroup_mode().unwrap(),
            Some(tunables::CGROUP_CONCUR)
        );
        fs::remove_file(d.join("cgroup_mode")).unwrap();
        {
            let mut g = KnobGuard::new().unwrap();
            // A real debugfs applies one token per write; the fake file just keeps the last
            // write, which is enough to see that something was written.
            g.set_file("base_slice_ns", "3000000").unwrap();
            assert_eq!(
                fs::read_to_string(d.join("base_slice_ns")).unwrap(),
                "3000000"
            );
            assert!(g.set_file("debug", "1").is_err());
        }
        assert_eq!(
            fs::read_to_string(d.join("base_slice_ns")).unwrap(),
            "2100000"
        );
        assert_eq!(KnobSnapshot::read().unwrap(), before);
        fs::remove_dir_all(&d).unwrap();
    }

    /// The kernel's preemption model becomes the lab's `preempt` (absent: the default).
    #[test]
    fn preempt_model_is_read_from_the_snapshot() {
        let mut snap = KnobSnapshot {
            features: String::new(),
            files: [
                ("base_slice_ns", "2100000"),
                ("migration_cost_ns", "500000"),
                ("nr_migrate", "32"),
                ("tunable_scaling", "1"),
            ]
            .into_iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
        };
        assert_eq!(snap.preempt().unwrap(), None);
        assert_eq!(snap.tunables(4).unwrap().preempt, tunables::PREEMPT_FULL);
        snap.files
            .insert("preempt".into(), "none voluntary full (lazy)".into());
        assert_eq!(snap.tunables(4).unwrap().preempt, tunables::PREEMPT_LAZY);
        assert_eq!(snap.tunables(4).unwrap().show("preempt").unwrap(), "lazy");
        snap.files
            .insert("preempt".into(), "(none) voluntary full lazy".into());
        assert_eq!(snap.preempt().unwrap(), Some(tunables::PREEMPT_NONE));
        snap.files.insert("preempt".into(), "sometimes".into());
        assert!(snap.tunables(4).is_err());
    }

    /// put_back() writes only what differs from the snapshot. (The fake features file keeps
    /// the last token written, where the kernel applies each: enough to see the token.)
    #[test]
    fn put_back_restores_what_differs_from_a_snapshot() {
        let _env = TEST_ENV.lock().unwrap();
        let d = std::env::temp_dir().join(format!("lab-putback-{}", std::process::id()));
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("features"), "PLACE_LAG DELAY_ZERO \n").unwrap();
        fs::write(d.join("base_slice_ns"), "2100000\n").unwrap();
        fs::write(d.join("preempt"), "none voluntary full (lazy)\n").unwrap();
        // SAFETY: ENV serializes the tests that set LAB_DEBUGFS_SCHED.
        unsafe { std::env::set_var("LAB_DEBUGFS_SCHED", &d) };
        let orig = KnobSnapshot::read().unwrap();
        assert!(put_back(&orig).unwrap().is_empty());
        fs::write(d.join("base_slice_ns"), "3000000\n").unwrap();
        fs::write(d.join("preempt"), "none voluntary (full) lazy\n").unwrap();
        fs::write(d.join("features"), "PLACE_LAG NO_DELAY_ZERO \n").unwrap();
        let changed = put_back(&orig).unwrap();
        assert_eq!(
            changed,
            [
                "base_slice_ns: 3000000 -> 2100000",
                "preempt: full -> lazy",
                "features: NO_DELAY_ZERO -> DELAY_ZERO"
            ]
        );
        assert_eq!(
            fs::read_to_string(d.join("base_slice_ns")).unwrap(),
            "2100000"
        );
        assert_eq!(fs::read_to_string(d.join("preempt")).unwrap(), "lazy");
        assert_eq!(
            fs::read_to_string(d.join("features")).unwrap(),
            "DELAY_ZERO"
        );
        fs::remove_dir_all(&d).unwrap();
    }

    fn tempdir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("lab-debugfs-{}", std::process::id()));
        fs::create_dir_all(&d).unwrap();
        d
    }
}
