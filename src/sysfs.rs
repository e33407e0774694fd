//! The kernel's sched_ext state, read from `/sys/kernel/sched_ext`.
//!
//! Used by the daemon's pre-flight checks, by the control CLI and by the bench's validity checks.
//! Nothing here writes to the kernel.

use anyhow::{Context, Result, bail};
use std::fs;
use std::path::Path;

pub const SCX_ROOT: &str = "/sys/kernel/sched_ext";

/// What `/sys/kernel/sched_ext` says at one instant.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScxState {
    /// `disabled`, `enabling`, `enabled` or `disabling`.
    pub state: String,
    /// The attached scheduler's ops name (`root/ops`), when one is attached.
    pub ops: Option<String>,
    /// Incremented by the kernel on every successful enable.
    pub enable_seq: u64,
    pub hotplug_seq: u64,
    pub nr_rejected: u64,
}

impl ScxState {
    pub fn is_enabled(&self) -> bool {
        self.state == "enabled"
    }

    /// True when the attached scheduler is ours: the kernel reports `<ops name>_<version>_...`.
    pub fn is_ours(&self) -> bool {
        self.ops.as_deref().is_some_and(is_lab_ops_name)
    }
}

/// The ops name our BPF object registers (see SCX_OPS_DEFINE in src/bpf/main.bpf.c);
/// scx_utils appends a version suffix to it.
pub const OPS_NAME: &str = "eevdf_lab";

pub fn is_lab_ops_name(ops: &str) -> bool {
    ops == OPS_NAME || ops.starts_with(&format!("{OPS_NAME}_"))
}

fn read_trim(path: &Path) -> Result<String> {
    Ok(fs::read_to_string(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .trim()
        .to_string())
}

fn read_u64(path: &Path) -> u64 {
    read_trim(path)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Fails with a one-line explanation when the running kernel has no sched_ext.
pub fn require_sched_ext() -> Result<()> {
    if !Path::new(SCX_ROOT).is_dir() {
        let release = read_trim(Path::new("/proc/sys/kernel/osrelease")).unwrap_or_default();
        bail!(
            "this kernel ({release}) has no sched_ext: {SCX_ROOT} is missing \
             (a kernel built with CONFIG_SCHED_CLASS_EXT=y is needed, {} or newer; \
             `scripts/vm` boots one in QEMU)",
            crate::preflight::MIN_KERNEL
        );
    }
    Ok(())
}

pub fn read_state() -> Result<ScxState> {
    require_sched_ext()?;
    let root = Path::new(SCX_ROOT);
    let state = read_trim(&root.join("state"))?;
    let ops = read_trim(&root.join("root/ops"))
        .ok()
        .filter(|s| !s.is_empty());
    Ok(ScxState {
        ops: if state == "disabled" { None } else { ops },
        state,
        enable_seq: read_u64(&root.join("enable_seq")),
        hotplug_seq: read_u64(&root.join("hotplug_seq")),
        nr_rejected: read_u64(&root.join("nr_rejected")),
    })
}

/// Fails when any sched_ext scheduler is attached, naming it.
pub fn require_no_scheduler() -> Result<()> {
    let st = read_state()?;
    if st.state != "disabled" {
        bail!(
            "another sched_ext scheduler is attached: {} (state {}); detach it first",
            st.ops.as_deref().unwrap_or("<unknown>"),
            st.state
        );
    }
    Ok(())
}

/// The `SCX_EV_*` counters of `root/events` (kernel 6.15+), in file order; empty if absent.
pub fn read_events() -> Vec<(String, u64)> {
    let Ok(text) = fs::read_to_string(Path::new(SCX_ROOT).join("root/events")) else {
        return Vec::new();
    };
    parse_events(&text)
}

pub fn parse_events(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let name = it.next()?;
            let val = it.next()?.parse().ok()?;
            Some((name.to_string(), val))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_name_matches_versioned_names() {
        assert!(is_lab_ops_name("eevdf_lab"));
        assert!(is_lab_ops_name("eevdf_lab_0.1.0_x86_64_unknown_linux_gnu"));
        assert!(!is_lab_ops_name("eevdf_labx"));
        assert!(!is_lab_ops_name(
            "flash_1.0.5_g85f140fd_x86_64_unknown_linux_gnu"
        ));
    }

    #[test]
    fn events_are_parsed_generically() {
        let ev = parse_events("SCX_EV_SELECT_CPU_FALLBACK 3\nSCX_EV_BYPASS_DURATION 0\nbad\n");
        assert_eq!(
            ev,
            vec![
                ("SCX_EV_SELECT_CPU_FALLBACK".to_string(), 3),
                ("SCX_EV_BYPASS_DURATION".to_string(), 0)
            ]
        );
    }
}
