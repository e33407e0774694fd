//! The bench's restore journal: what a bench found before it changed anything, kept on disk
//! while it runs, so that a bench killed with SIGKILL (which runs no destructor) leaves enough
//! for the next `bench`, or `scx_eevdf_lab restore`, to put everything back.
//!
//! One JSON file, [`PATH`], written before the first change and again when the bench starts or
//! stops a scheduler; always whole (a temporary file in the same folder, renamed over it). The
//! bench removes it once it has restored everything itself. It holds the bench's pid and start
//! time (a running bench is never restored under its feet), the kernel's debugfs knobs as found,
//! the knobs of a running lab the bench adopted, the scheduler process the bench started
//! while that runs (such a process also detaches by itself when the bench dies: it gets SIGINT
//! as its parent-death signal), and the cgroups it created and the cpu controller it turned on
//! for workloads with `cgroup=` (each recorded before it is made; see [`super::cgroup`]).

use super::cgroup::{self, Changes};
use crate::control::Control;
use crate::features::FeatureSet;
use crate::kernel::{self, KnobSnapshot};
use crate::tunables::Tunables;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

pub const PATH: &str = "/run/scx_eevdf_lab/bench.journal";

/// A process, told apart from a later one with the same pid by its start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proc {
    pub pid: u32,
    /// Field 22 of /proc/PID/stat: clock ticks after boot.
    pub started: u64,
}

impl Proc {
    pub fn of(pid: u32) -> Option<Proc> {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        Some(Proc {
            pid,
            started: start_time(&stat)?,
        })
    }

    /// True while this very process runs (not a later one that got its pid).
    pub fn alive(&self) -> bool {
        Proc::of(self.pid).is_some_and(|p| p.started == self.started)
    }
}

/// The start time in /proc/PID/stat: the 22nd field, counting after the command name, which is
/// in parentheses and may hold spaces.
fn start_time(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// A running lab's settings, as the bench found them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabKnobs {
    pub features: FeatureSet,
    pub tunables: Tunables,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Journal {
    pub bench: Proc,
    /// The kernel's debugfs knobs before the bench changed any.
    pub kernel: Option<KnobSnapshot>,
    /// The knobs of the lab that was running and that the bench changes live.
    pub lab: Option<LabKnobs>,
    /// The scheduler the bench started, while it runs.
    pub scheduler: Option<Proc>,
    /// What it changed in cgroup v2 (workloads with `cgroup=`).
    #[serde(default, skip_serializing_if = "Changes::is_empty")]
    pub cgroups: Changes,
}

impl Journal {
    /// A journal of this process.
    pub fn new(kernel: Option<KnobSnapshot>, lab: Option<LabKnobs>) -> Result<Journal> {
        let bench = Proc::of(std::process::id()).context("cannot read /proc/self/stat")?;
        Ok(Journal {
            bench,
            kernel,
            lab,
            scheduler: None,
            cgroups: Changes::default(),
        })
    }

    /// Writes the journal whole: a temporary file, synced, renamed over `path`.
    pub fn save(&self, path: &Path) -> Result<()> {
        let dir = path.parent().context("journal path without a folder")?;
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let tmp = dir.join(format!(".bench.journal.{}", std::process::id()));
        let write = || -> std::io::Result<()> {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(serde_json::to_string_pretty(self)?.as_bytes())?;
            f.sync_all()?;
            fs::rename(&tmp, path)
        };
        write()
            .inspect_err(|_| {
                let _ = fs::remove_file(&tmp);
            })
            .with_context(|| format!("cannot write the restore journal {}", path.display()))
    }

    /// The journal at `path`, if there is one.
    pub fn load(path: &Path) -> Result<Option<Journal>> {
        let text = match fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        serde_json::from_str(&text).map(Some).with_context(|| {
            format!(
                "{} is not a restore journal of this version",
                path.display()
            )
        })
    }

    pub fn remove(path: &Path) -> Result<()> {
        match fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("cannot remove {}", path.display()))
            }
            _ => Ok(()),
        }
    }

    /// Puts back everything the journal holds: stops the scheduler the bench started if it
    /// still runs, removes the cgroups it created (killing what still runs in them) and turns
    /// the cpu controller off where it turned it on, writes the kernel's knobs back, and the
    /// adopted lab's knobs if it still runs. Returns what it did, one line each.
    pub fn restore(&self) -> Result<Vec<String>> {
        let mut done = Vec::new();
        if let Some(s) = self.scheduler.filter(Proc::alive) {
            stop(&s)?;
            done.push(format!(
                "stopped the scheduler it had started (pid {})",
                s.pid
            ));
        }
        done.extend(cgroup::undo(&self.cgroups)?);
        if let Some(snap) = &self.kernel {
            done.extend(kernel::put_back(snap)?);
        }
        if let Some(k) = self.lab {
            match Control::open() {
                Ok(c) => {
                    let (before, _) = c.update(|now| {
                        now.features = k.features;
                        now.tunables = k.tunables;
                        Ok(())
                    })?;
                    if before.features != k.features || before.tunables != k.tunables {
                        done.push("the running lab's features and tunables".into());
                    }
                }
                Err(e) => done.push(format!("not the lab's knobs: {e:#}")),
            }
        }
        Ok(done)
    }
}

/// Stops a scheduler process: SIGINT (it detaches), SIGKILL if it has not exited after 30 s;
/// then waits for sched_ext to be disabled.
fn stop(s: &Proc) -> Result<()> {
    const GRACE: Duration = Duration::from_secs(30);
    // SAFETY: signalling a process checked to be the one the bench started.
    unsafe { libc::kill(s.pid as libc::pid_t, libc::SIGINT) };
    let t0 = Instant::now();
    while s.alive() {
        if t0.elapsed() > GRACE {
            // SAFETY: as above.
            unsafe { libc::kill(s.pid as libc::pid_t, libc::SIGKILL) };
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let t0 = Instant::now();
    while crate::sysfs::read_state().is_ok_and(|st| st.state != "disabled") {
        if t0.elapsed() > GRACE {
            bail!(
                "sched_ext is still not disabled 30 s after stopping pid {}",
                s.pid
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// What an unfinished bench left: the journal at `path` restored and removed. None when there is
/// no journal; an error when its bench still runs (it restores its own settings) or when
/// something could not be put back (the journal is kept for another try).
pub fn recover(path: &Path) -> Result<Option<(u32, Vec<String>)>> {
    let Some(j) = Journal::load(path)? else {
        return Ok(None);
    };
    if j.bench.alive() {
        bail!(
            "a bench is running (pid {}); it puts back what it changes when it ends",
            j.bench.pid
        );
    }
    let done = j.restore().with_context(|| {
        format!(
            "restoring what bench pid {} changed (the journal {} is kept)",
            j.bench.pid,
            path.display()
        )
    })?;
    Journal::remove(path)?;
    Ok(Some((j.bench.pid, done)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_is_read_after_the_command_name() {
        let stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 987654 \
                    1000 200 18446744073709551615";
        assert_eq!(start_time(stat), Some(987654));
        assert_eq!(start_time("1 (x) S 0"), None);
        let me = Proc::of(std::process::id()).unwrap();
        assert!(me.alive());
        assert!(
            !Proc {
                started: me.started + 1,
                ..me
            }
            .alive()
        );
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("lab-journal-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn saved_whole_loaded_back_and_removed() {
        let d = scratch("save");
        let path = d.join("bench.journal");
        assert_eq!(Journal::load(&path).unwrap(), None);
        let mut j = Journal::new(None, None).unwrap();
        j.save(&path).unwrap();
        j.scheduler = Proc::of(std::process::id());
        j.save(&path).unwrap();
        assert_eq!(Journal::load(&path).unwrap(), Some(j));
        // Only the journal is left: the temporary file was renamed over it.
        assert_eq!(fs::read_dir(&d).unwrap().count(), 1);
        Journal::remove(&path).unwrap();
        Journal::remove(&path).unwrap();
        assert_eq!(Journal::load(&path).unwrap(), None);
        fs::write(&path, "{ not json").unwrap();
        assert!(Journal::load(&path).is_err());
        fs::remove_dir_all(&d).unwrap();
    }

    /// A journal whose bench is gone: recover() puts the knobs back, removes the journal, and a
    /// second recover() finds nothing. One of a running bench is left alone.
    #[test]
    fn recover_restores_a_dead_benchs_knobs_once() {
        let _env = crate::kernel::TEST_ENV.lock().unwrap();
        let d = scratch("recover");
        let dbg = d.join("debugfs");
        fs::create_dir_all(&dbg).unwrap();
        fs::write(dbg.join("features"), "PLACE_LAG DELAY_ZERO \n").unwrap();
        fs::write(dbg.join("base_slice_ns"), "2100000\n").unwrap();
        // SAFETY: TEST_ENV serializes the tests that set LAB_DEBUGFS_SCHED.
        unsafe { std::env::set_var("LAB_DEBUGFS_SCHED", &dbg) };
        let path = d.join("bench.journal");
        let mut j = Journal::new(Some(KnobSnapshot::read().unwrap()), None).unwrap();
        // A bench that is no longer there (this pid with another start time).
        j.bench.started += 1;
        j.save(&path).unwrap();
        fs::write(dbg.join("base_slice_ns"), "3000000\n").unwrap();
        let (pid, done) = recover(&path).unwrap().unwrap();
        assert_eq!(pid, std::process::id());
        assert_eq!(done, ["base_slice_ns: 3000000 -> 2100000"]);
        assert_eq!(
            fs::read_to_string(dbg.join("base_slice_ns")).unwrap(),
            "2100000"
        );
        assert!(!path.exists());
        assert_eq!(recover(&path).unwrap(), None);

        // A journal of a bench that runs (here: pid 1, whose start time we read) is refused.
        let mut live = Journal::new(None, None).unwrap();
        live.bench = Proc::of(1).unwrap();
        live.save(&path).unwrap();
        let e = recover(&path).unwrap_err();
        assert!(format!("{e:#}").contains("a bench is running (pid 1)"));
        assert!(path.exists());
        fs::remove_dir_all(&d).unwrap();
    }

    /// A bench killed while its cgroups existed, with a process left in one of them: recover()
    /// kills it, removes the groups and the bench's folder (children first) and turns the cpu
    /// controller off where the bench had turned it on. The folder stands in for
    /// /sys/fs/cgroup, as LAB_CGROUP_ROOT lets it.
    #[test]
    fn recover_removes_a_dead_benchs_cgroups() {
        let root = cgroup::tests::fake_root("journal");
        let path = root.join("bench.journal");
        let mut j = Journal::new(None, None).unwrap();
        j.bench.started += 1;
        let names = vec!["lat".to_string(), "batch".to_string()];
        let dir = cgroup::setup(&root, &names, false, &mut j.cgroups.clone(), &mut |c| {
            // What the bench does: the journal saved before each change.
            j.cgroups = c.clone();
            j.save(&path)
        })
        .unwrap();
        assert_eq!(
            Journal::load(&path).unwrap().unwrap().cgroups.created.len(),
            3
        );
        // A leftover member of a group, as a killed bench's workload would be.
        let mut sleeper = std::process::Command::new("sleep")
            .arg("600")
            .spawn()
            .unwrap();
        fs::write(dir.join("lat/cgroup.procs"), format!("{}\n", sleeper.id())).unwrap();
        fs::write(dir.join("lat/cpu.weight"), "300").unwrap();

        let (_, done) = recover(&path).unwrap().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert!(
            sleeper.wait().unwrap().signal() == Some(libc::SIGKILL),
            "the leftover process was not killed"
        );
        assert!(!dir.exists(), "{done:?}");
        assert_eq!(
            done,
            [
                format!("removed {}", dir.join("batch").display()),
                format!(
                    "killed 1 leftover process(es) in {}",
                    dir.join("lat").display()
                ),
                format!("removed {}", dir.join("lat").display()),
                format!("removed {}", dir.display()),
                format!(
                    "took the cpu controller off in {}",
                    root.join("cgroup.subtree_control").display()
                ),
            ]
        );
        assert!(!path.exists());
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_journal_without_cgroups_reads_as_before() {
        let j = Journal::new(None, None).unwrap();
        let text = serde_json::to_string(&j).unwrap();
        assert!(!text.contains("cgroups"), "{text}");
        let back: Journal = serde_json::from_str(&text).unwrap();
        assert_eq!(back, j);
    }
}
