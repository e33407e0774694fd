//! Checks that turn an environment problem into one clear sentence before anything changes.

use anyhow::{Result, bail};

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

pub fn require_root() -> Result<()> {
    if !is_root() {
        bail!(
            "must run as root: loading a sched_ext scheduler needs CAP_SYS_ADMIN and CAP_BPF (try sudo)"
        );
    }
    Ok(())
}
