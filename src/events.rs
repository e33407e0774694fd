//! What the BPF scheduler tells the daemon (`lab_events`, a BPF ring buffer): a knobs write
//! seen, or ops.exit. A thread sleeps on the ring buffer and forwards each event to a channel,
//! so that the daemon's run loop can sleep on its channels until something asks for it instead
//! of polling.

use crate::bpf_intf;
use anyhow::{Context, Result, bail};
use crossbeam::channel::{Receiver, Sender, unbounded};
use libbpf_rs::{MapHandle, MapImpl, RingBufferBuilder};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::thread::JoinHandle;

/// One event of the scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A CPU saw the knobs at this seq (a writer changed them).
    Knobs(u64),
    /// ops.exit ran: the scheduler is leaving (see the exit info).
    Exit,
    /// A CPU is going online or offline (the scheduler handles it without a reload). The event
    /// comes from ops.cpu_online / ops.cpu_offline, which may run before the CPU's online bit
    /// changes.
    Hotplug { cpu: u32, online: bool },
    /// The listener stopped on an error: no more events will come.
    Lost,
}

impl Event {
    /// Decodes a `struct lab_event`; None for a record of another size or kind.
    pub fn decode(data: &[u8]) -> Option<Event> {
        if data.len() != std::mem::size_of::<bpf_intf::lab_event>() {
            return None;
        }
        // SAFETY: the length matches and lab_event is plain old data.
        let ev: bpf_intf::lab_event = unsafe { std::ptr::read_unaligned(data.as_ptr().cast()) };
        match ev.kind {
            bpf_intf::lab_event_kind_LAB_EV_KNOBS => Some(Event::Knobs(ev.seq)),
            bpf_intf::lab_event_kind_LAB_EV_EXIT => Some(Event::Exit),
            bpf_intf::lab_event_kind_LAB_EV_HOTPLUG => Some(Event::Hotplug {
                cpu: ev.seq as u32,
                online: ev.seq >> 32 != 0,
            }),
            _ => None,
        }
    }
}

/// The thread that forwards the ring buffer's events; stopped and joined on drop.
pub struct Listener {
    rx: Receiver<Event>,
    /// Written on drop to wake the thread out of its poll.
    stop: OwnedFd,
    thread: Option<JoinHandle<()>>,
}

impl Listener {
    /// Starts listening on the ring buffer `map` (an owned handle of it, so that the thread does
    /// not borrow the skeleton).
    pub fn start<T: std::fmt::Debug>(map: &MapImpl<'_, T>) -> Result<Listener> {
        let map = MapHandle::try_from(map).context("cannot open the events ring buffer")?;
        // SAFETY: plain syscall; a non-negative result is an fd we own.
        let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if efd < 0 {
            bail!("eventfd: {}", std::io::Error::last_os_error());
        }
        // SAFETY: see above.
        let stop = unsafe { OwnedFd::from_raw_fd(efd) };
        let (tx, rx) = unbounded();
        let thread = std::thread::Builder::new()
            .name("lab-events".into())
            .spawn(move || {
                if let Err(e) = listen(&map, efd, &tx) {
                    log::warn!("scheduler events: {e:#}");
                    let _ = tx.send(Event::Lost);
                }
            })
            .context("cannot start the events thread")?;
        Ok(Listener {
            rx,
            stop,
            thread: Some(thread),
        })
    }

    pub fn receiver(&self) -> &Receiver<Event> {
        &self.rx
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let one = 1u64;
        // SAFETY: writes 8 bytes from a valid u64 to our eventfd.
        unsafe { libc::write(self.stop.as_raw_fd(), (&one as *const u64).cast(), 8) };
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Sleeps until the ring buffer has records (forwarded to `tx`) or `stop_fd` is written.
fn listen(map: &MapHandle, stop_fd: i32, tx: &Sender<Event>) -> Result<()> {
    let mut builder = RingBufferBuilder::new();
    let sender = tx.clone();
    builder.add(map, move |data: &[u8]| {
        if let Some(ev) = Event::decode(data) {
            let _ = sender.send(ev);
        }
        0
    })?;
    let rb = builder.build()?;
    loop {
        let mut fds = [
            libc::pollfd {
                fd: rb.epoll_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: stop_fd,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two valid pollfd entries.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            bail!("poll: {e}");
        }
        if fds[1].revents != 0 {
            return Ok(());
        }
        rb.consume().context("cannot read the events ring buffer")?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(kind: u32, seq: u64) -> Vec<u8> {
        let ev = bpf_intf::lab_event { kind, pad: 0, seq };
        // SAFETY: viewing a plain old data struct as bytes.
        unsafe {
            std::slice::from_raw_parts(
                (&ev as *const bpf_intf::lab_event).cast::<u8>(),
                std::mem::size_of_val(&ev),
            )
        }
        .to_vec()
    }

    #[test]
    fn decodes_events() {
        assert_eq!(
            Event::decode(&raw(bpf_intf::lab_event_kind_LAB_EV_KNOBS, 7)),
            Some(Event::Knobs(7))
        );
        assert_eq!(
            Event::decode(&raw(bpf_intf::lab_event_kind_LAB_EV_EXIT, 0)),
            Some(Event::Exit)
        );
        assert_eq!(Event::decode(&raw(99, 0)), None);
        assert_eq!(Event::decode(&[0u8; 3]), None);
    }
}
