//! The hidden `worker` subcommand: one task of a workload in `--processes` mode, started by
//! [`super::Team::spawn_process`] as a process of this same binary.
//!
//! It maps the inherited control block, takes the role's descriptors and runs the role's task
//! body through the same [`lifecycle`] as a thread would. It is not for anything a person
//! types: the bench starts it with the arguments it needs.

use super::team::{CTL_FD, Ctl, FIRST_ROLE_FD, SharedCtl, lifecycle};
use super::{maybe_pin, messaging, pingpong, pipe_stream};
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// The hidden `worker` subcommand: one task of a workload in `--processes` mode.
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    #[arg(long)]
    pub role: String,
    #[arg(long)]
    pub slot: usize,
    #[arg(long)]
    pub nfds: usize,
    #[arg(long = "param")]
    pub params: Vec<String>,
}

pub fn worker_main(a: WorkerArgs) -> Result<()> {
    // SAFETY: the parent placed the control block at CTL_FD and the role's fds after it.
    let shared = SharedCtl::from_fd(unsafe { OwnedFd::from_raw_fd(CTL_FD) })?;
    let ctl: &Ctl = &shared;
    let fds: Vec<OwnedFd> = (0..a.nfds)
        // SAFETY: as above.
        .map(|i| unsafe { OwnedFd::from_raw_fd(FIRST_ROLE_FD + i as RawFd) })
        .collect();
    let params: BTreeMap<&str, &str> = a.params.iter().filter_map(|p| p.split_once('=')).collect();
    let get = |k: &str| -> Result<u64> {
        params
            .get(k)
            .with_context(|| format!("worker parameter {k} is missing"))?
            .parse()
            .with_context(|| format!("worker parameter {k}"))
    };
    let cpu = params.get("cpu").and_then(|c| c.parse().ok());
    let slot = a.slot;
    match a.role.as_str() {
        "pingpong-a" | "pingpong-b" => {
            let size = get("size")? as usize;
            let mut it = fds.into_iter();
            let (r, w) = (it.next().context("fd")?, it.next().context("fd")?);
            let a_side = a.role == "pingpong-a";
            lifecycle(ctl, slot, move || {
                maybe_pin(cpu);
                if a_side {
                    pingpong::initiator(ctl, slot, r, w, size)
                } else {
                    pingpong::responder(r, w, size)
                }
            });
        }
        "pipe-writer" => {
            let size = get("size")? as usize;
            let w = fds.into_iter().next().context("fd")?;
            lifecycle(ctl, slot, move || {
                maybe_pin(cpu);
                pipe_stream::writer(ctl, slot, w, size)
            });
        }
        "pipe-reader" => {
            let size = get("size")? as usize;
            let r = fds.into_iter().next().context("fd")?;
            lifecycle(ctl, slot, move || {
                maybe_pin(cpu);
                pipe_stream::reader(r, size)
            });
        }
        "msg-sender" => {
            let (warm, loops, size) = (get("warm")?, get("loops")?, get("size")? as usize);
            lifecycle(ctl, slot, move || {
                messaging::sender(ctl, &fds, warm, loops, size)
            });
        }
        "msg-receiver" => {
            let (senders, warm, loops, size) =
                (get("senders")?, get("warm")?, get("loops")?, get("size")?);
            let r = fds.into_iter().next().context("fd")?;
            lifecycle(ctl, slot, move || {
                messaging::receiver(ctl, slot, r, senders, warm, loops, size)
            });
        }
        other => bail!("unknown worker role {other:?}"),
    }
    Ok(())
}
