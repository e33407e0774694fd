//! The live-control path: how the CLI (and the bench) find the running scheduler and change its
//! features and tunables without a reload.
//!
//! The daemon pins the scheduler's `lab_knobs` map at [`PIN_PATH`] (mode 0600) and removes the
//! pin before it detaches. A writer takes an exclusive `flock` on [`LOCK_PATH`], reads the knobs,
//! applies its change and writes the whole value back with `BPF_F_LOCK`, so that several fields
//! change at once and two writers are serialized, never interleaved. The BPF side bumps nothing:
//! every write carries a new `seq`, which the scheduler and the daemon's change log watch.
//!
//! A write can race the daemon's detach or reload. The writer therefore checks, still under
//! the lock, that the pin still leads to its change: if the pin is gone the scheduler detached
//! and the write is reported as not in effect; if the pin leads to a new map (a reload took the
//! knobs over), the change is made again there. A reloading daemon takes the same lock while it
//! carries the knobs from the old map to the new one ([`carry_over`]), so no write falls between.

use crate::bpf_intf;
use crate::features::FeatureSet;
use crate::tunables::Tunables;
use anyhow::{Context, Result, bail};
use libbpf_rs::{MapCore, MapFlags, MapHandle};
use std::fs::{self, File};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

pub const PIN_DIR: &str = "/sys/fs/bpf/scx_eevdf_lab";
pub const PIN_PATH: &str = "/sys/fs/bpf/scx_eevdf_lab/knobs";
pub const LOCK_PATH: &str = "/run/scx_eevdf_lab.lock";

/// The knobs as the CLI sees them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Knobs {
    pub seq: u64,
    pub features: FeatureSet,
    pub tunables: Tunables,
}

impl Knobs {
    pub fn from_raw(k: &bpf_intf::lab_knobs) -> Self {
        Knobs {
            seq: k.seq,
            features: FeatureSet(k.features),
            tunables: Tunables {
                base_slice_ns: k.base_slice_ns,
                normalized_slice_ns: k.normalized_slice_ns,
                migration_cost_ns: k.migration_cost_ns,
                nr_migrate: k.nr_migrate,
                tunable_scaling: k.tunable_scaling,
                preempt: k.preempt,
                cgroup_mode: k.cgroup_mode,
            },
        }
    }

    pub fn to_raw(self) -> bpf_intf::lab_knobs {
        // SAFETY: lab_knobs is plain old data; all-zero is a valid value (unlocked spin lock).
        let mut k: bpf_intf::lab_knobs = unsafe { std::mem::zeroed() };
        k.seq = self.seq;
        k.features = self.features.0;
        k.base_slice_ns = self.tunables.base_slice_ns;
        k.normalized_slice_ns = self.tunables.normalized_slice_ns;
        k.migration_cost_ns = self.tunables.migration_cost_ns;
        k.nr_migrate = self.tunables.nr_migrate;
        k.tunable_scaling = self.tunables.tunable_scaling;
        k.preempt = self.tunables.preempt;
        k.cgroup_mode = self.tunables.cgroup_mode;
        k
    }
}

fn raw_bytes(k: &bpf_intf::lab_knobs) -> &[u8] {
    // SAFETY: plain old data, read as bytes for the map syscall.
    unsafe {
        std::slice::from_raw_parts(
            (k as *const bpf_intf::lab_knobs).cast::<u8>(),
            std::mem::size_of::<bpf_intf::lab_knobs>(),
        )
    }
}

/// Reads the knobs from a map (the daemon's own handle or the pinned one).
pub fn read_map(map: &impl MapCore) -> Result<Knobs> {
    let key = 0u32.to_ne_bytes();
    let bytes = map
        .lookup(&key, MapFlags::LOCK)
        .context("cannot read the knobs map")?
        .context("the knobs map has no element 0")?;
    if bytes.len() != std::mem::size_of::<bpf_intf::lab_knobs>() {
        bail!(
            "the knobs map has {} bytes per value; this binary expects {}: version mismatch?",
            bytes.len(),
            std::mem::size_of::<bpf_intf::lab_knobs>()
        );
    }
    // SAFETY: the length matches and lab_knobs is plain old data.
    let raw: bpf_intf::lab_knobs = unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast()) };
    Ok(Knobs::from_raw(&raw))
}

/// Writes the knobs (whole value, under the map element's spin lock).
pub fn write_map(map: &impl MapCore, k: &Knobs) -> Result<()> {
    let key = 0u32.to_ne_bytes();
    let raw = k.to_raw();
    map.update(&key, raw_bytes(&raw), MapFlags::LOCK)
        .context("cannot write the knobs map")
}

/// A connection to the running scheduler's knobs.
pub struct Control {
    map: MapHandle,
}

impl Control {
    /// Finds the running scheduler. Fails plainly when none runs, or when a pin is left over
    /// from a run that did not clean up.
    pub fn open() -> Result<Self> {
        crate::sysfs::require_sched_ext()?;
        let st = crate::sysfs::read_state()?;
        if !Path::new(PIN_PATH).exists() {
            if st.is_enabled() && !st.is_ours() {
                bail!(
                    "no scx_eevdf_lab scheduler is running (the attached sched_ext scheduler is {})",
                    st.ops.as_deref().unwrap_or("?")
                );
            }
            if !crate::preflight::is_root() && Path::new(PIN_DIR).exists() {
                bail!("cannot see {PIN_PATH}: the knobs are readable by root only (try sudo)");
            }
            bail!("no scx_eevdf_lab scheduler is running (start one with `sudo scx_eevdf_lab`)");
        }
        if !st.is_ours() {
            bail!(
                "no scx_eevdf_lab scheduler is attached; {PIN_PATH} is left over from a run that \
                 did not clean up (the next start replaces it), or the daemon is reloading"
            );
        }
        let map = MapHandle::from_pinned_path(PIN_PATH).with_context(|| {
            if crate::preflight::is_root() {
                format!("cannot open {PIN_PATH}")
            } else {
                format!("cannot open {PIN_PATH} (readable by root only: try sudo)")
            }
        })?;
        Ok(Control { map })
    }

    pub fn read(&self) -> Result<Knobs> {
        read_map(&self.map)
    }

    /// Read-modify-write under the writers' lock, then a check through the pin that the change
    /// is what the scheduler has (see the module comment). Returns the knobs before and after.
    pub fn update(&self, change: impl Fn(&mut Knobs) -> Result<()>) -> Result<(Knobs, Knobs)> {
        let _lock = WriterLock::acquire(Duration::from_secs(10))?;
        let mut map = None;
        for _ in 0..WRITE_ATTEMPTS {
            let m = map.as_ref().unwrap_or(&self.map);
            let before = read_map(m)?;
            let mut after = before;
            change(&mut after)?;
            after.seq = before.seq + 1;
            write_map(m, &after)?;
            let Ok(pinned) = MapHandle::from_pinned_path(PIN_PATH) else {
                bail!(
                    "the scheduler detached while the change was being written: it is not in \
                     effect"
                );
            };
            if read_map(&pinned).is_ok_and(|now| same_settings(&now, &after)) {
                return Ok((before, after));
            }
            // A reload pinned a new map: make the change there.
            map = Some(pinned);
        }
        bail!("the knobs were replaced {WRITE_ATTEMPTS} times during this write; try again")
    }
}

/// How often a write is made again on a map that a reload pinned meanwhile.
const WRITE_ATTEMPTS: usize = 3;

fn same_settings(a: &Knobs, b: &Knobs) -> bool {
    a.features == b.features && a.tunables == b.tunables
}

/// For a reloading daemon: the knobs to start the new scheduler with, `ours` (what the old one
/// last had) or, when a writer changed the still-pinned old map since, what it holds now. Call
/// it holding the writers' lock, until the new map is pinned.
pub fn carry_over(ours: Knobs) -> Knobs {
    match MapHandle::from_pinned_path(PIN_PATH)
        .map_err(anyhow::Error::from)
        .and_then(|m| read_map(&m))
    {
        Ok(k) if k.seq > ours.seq => k,
        _ => ours,
    }
}

/// The exclusive writers' lock (an flock on [`LOCK_PATH`]); released on drop.
pub struct WriterLock(#[allow(dead_code)] File);

impl WriterLock {
    pub fn acquire(timeout: Duration) -> Result<Self> {
        let f = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(LOCK_PATH)
            .with_context(|| format!("cannot open {LOCK_PATH}"))?;
        let start = Instant::now();
        loop {
            // SAFETY: flock on an fd we own.
            if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(WriterLock(f));
            }
            if start.elapsed() > timeout {
                bail!("another writer has held {LOCK_PATH} for {timeout:?}; giving up");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Pins the daemon's knobs map with mode 0600, replacing a stale pin or, on a `reload`, the
/// previous instance's.
pub fn pin(map: &libbpf_rs::MapMut, reload: bool) -> Result<()> {
    let mut handle = MapHandle::try_from(map).context("cannot get a handle on the knobs map")?;
    fs::create_dir_all(PIN_DIR)
        .with_context(|| format!("cannot create {PIN_DIR} (is bpffs mounted on /sys/fs/bpf?)"))?;
    if Path::new(PIN_PATH).exists() {
        if !reload {
            log::warn!("replacing {PIN_PATH} left over from a run that did not clean up");
        }
        fs::remove_file(PIN_PATH).with_context(|| format!("cannot remove stale {PIN_PATH}"))?;
    }
    handle
        .pin(PIN_PATH)
        .with_context(|| format!("cannot pin the knobs map at {PIN_PATH}"))?;
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(PIN_PATH, fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot chmod {PIN_PATH}"))?;
    Ok(())
}

/// Removes the pin and its folder (best effort: the daemon is detaching or exiting).
pub fn unpin() {
    let _ = fs::remove_file(PIN_PATH);
    let _ = fs::remove_dir(PIN_DIR);
}
