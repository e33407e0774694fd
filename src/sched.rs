//! The scheduler daemon: opens, loads and attaches the BPF scheduler, serves the run loop, and
//! detaches cleanly on SIGINT/SIGTERM or when the kernel ejects the scheduler.

use crate::bpf_intf;
use crate::bpf_skel::{BpfSkel, BpfSkelBuilder};
use crate::control::{self, Knobs};
use crate::eevdf::ffi;
use crate::events::Event;
use crate::features::FeatureSet;
use crate::stats::{self, Metrics};
use crate::tunables::Tunables;
use anyhow::{Context, Result};
use crossbeam::channel::Receiver;
use libbpf_rs::skel::{OpenSkel, Skel};
use libbpf_rs::{MapCore, MapFlags, OpenObject};
use log::{info, warn};
use scx_stats::prelude::StatsServer;
use scx_utils::{UserExitInfo, scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_report};
use std::collections::BTreeMap;
use std::mem::MaybeUninit;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use std::time::Instant;

/// Options of a scheduler run.
#[derive(Debug, Clone)]
pub struct RunOpts {
    pub exit_dump_len: u32,
    pub verbose: bool,
    pub features: FeatureSet,
    pub tunables: Tunables,
    /// Print the stats every this many seconds while running.
    pub stats_interval: Option<f64>,
    /// Count what a deadline-sorted DSQ scan would visit at each pick (a diagnostic).
    pub measure_scan: bool,
    /// Collect the BPF run time of every callback (the kernel's bpf_stats).
    pub bpf_stats: bool,
}

/// The entity pool, read where the BPF arena that holds it is mapped in this process (libbpf maps
/// it at its map_extra address, LAB_ARENA_BASE).
struct PoolView {
    base: *const ffi::lab_se,
}

impl PoolView {
    fn new() -> Self {
        PoolView {
            base: ffi::LAB_ARENA_BASE as usize as *const ffi::lab_se,
        }
    }

    /// The entity in `slot`, which must be below the pool's active size (its pages exist).
    fn se(&self, slot: u32) -> ffi::lab_se {
        // SAFETY: the arena is mapped for the scheduler's lifetime and holds `slot` (the caller
        // takes slots from the queues, which only link claimed slots); read with a volatile
        // copy because the BPF side writes concurrently (a torn read only makes one sample
        // imprecise).
        unsafe { std::ptr::read_volatile(self.base.add(slot as usize)) }
    }
}

/// How many task slots the pool starts with and may grow to: twice what the kernel allows (the
/// lower of pid_max and threads-max; every task has a pid and counts against threads-max), and
/// twice the tasks there are now, as powers of two, so that a slot is found in a few probes.
fn pool_sizes() -> (u32, u32) {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
    };
    let max = ffi::lab_consts_LAB_MAX_SLOTS as u64;
    let limit = read("/proc/sys/kernel/pid_max")
        .unwrap_or(max)
        .min(read("/proc/sys/kernel/threads-max").unwrap_or(max));
    let tasks = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(3)?
                .split('/')
                .nth(1)?
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(0);
    let pow2 = |n: u64| n.max(4096).next_power_of_two().min(max) as u32;
    let cap = pow2(2 * limit);
    (pow2(2 * tasks + 1024).min(cap), cap)
}

pub struct Scheduler<'a> {
    skel: BpfSkel<'a>,
    struct_ops: Option<libbpf_rs::Link>,
    /// Leave the knobs pinned when going away: the kernel asked for a restart, and the next
    /// instance takes them over.
    keep_pin: bool,
    /// The knobs last seen, for the change log.
    knobs: Knobs,
    pool: PoolView,
    stats_server: StatsServer<(), Metrics>,
    attached_at: Instant,
    nr_cpus: usize,
    /// Keeps the kernel's BPF run-time statistics on while open (--bpf-stats).
    bpf_stats: Option<std::os::fd::OwnedFd>,
    /// The scheduler's events (knobs writes, exit), which wake the run loop.
    events: crate::events::Listener,
}

impl<'a> Scheduler<'a> {
    /// Opens, loads and attaches the scheduler with `knobs`. On a `restart` (the kernel asked
    /// for one), the knobs are those of the previous instance's still-pinned map, written since
    /// it exited or not, re-derived for the new CPU count where nobody wrote them.
    pub fn init(
        opts: &RunOpts,
        knobs: Knobs,
        restart: bool,
        open_object: &'a mut MaybeUninit<OpenObject>,
    ) -> Result<Self> {
        let mut builder = BpfSkelBuilder::default();
        builder.obj_builder.debug(opts.verbose);
        let mut skel = scx_ops_open!(
            builder,
            open_object,
            lab_ops,
            None::<libbpf_rs::libbpf_sys::bpf_object_open_opts>
        )
        .context("cannot open the BPF scheduler")?;
        skel.struct_ops.lab_ops_mut().exit_dump_len = opts.exit_dump_len;
        let topo = crate::topology::Topo::detect().context("cannot read the CPU topology")?;
        crate::topology::fill_topo!(skel.maps.rodata_data.as_mut().unwrap().topo, &topo);
        skel.maps.rodata_data.as_mut().unwrap().measure_scan = opts.measure_scan as u64;
        let (initial, cap) = pool_sizes();
        let ro = skel.maps.rodata_data.as_mut().unwrap();
        ro.lab_slots_initial = initial;
        ro.lab_slots_cap = cap;
        skel.maps
            .lab_task_refs
            .set_max_entries(cap)
            .context("cannot size the task references")?;
        info!("task pool: {initial} slots, growing up to {cap} (from pid_max and threads-max)");
        info!("topology: {}", topo.describe());
        info!("sched domains: {}", topo.describe_domains());
        if !topo.numa_nested {
            info!(
                "NUMA distances that do not nest (or more of them than the lab's levels hold): \
                 one NUMA level spans every node, at the largest distance"
            );
        }
        let vlogs = crate::bpfstats::VerifierLogs::request(skel.open_object_mut());
        let loaded = scx_ops_load!(skel, lab_ops, uei);
        if let Some(v) = vlogs {
            v.write().context("cannot write the verifier logs")?;
        }
        let mut skel = loaded.context("cannot load the BPF scheduler")?;

        if log::log_enabled!(log::Level::Debug) {
            for prog in skel.object().progs() {
                if let Some(n) = crate::bpfstats::prog_info(prog.as_fd()).map(|i| i.verified_insns)
                {
                    log::debug!(
                        "{}: {n} instructions verified",
                        prog.name().to_string_lossy()
                    );
                }
            }
        }

        // TICK_NSEC bounds lag (entity_lag()); the kernel's HZ is not in its BTF, so measure it.
        let hz = measure_hz(&skel)?;
        skel.maps.data_data.as_mut().unwrap().tick_ns = 1_000_000_000 / hz;
        info!("kernel HZ: {hz}");
        // tg_cpus() of a group without a cpuset of its own: the online CPUs, kept by ops.cpu_online / ops.cpu_offline from here on.
        skel.maps.bss_data.as_mut().unwrap().lab_nr_cpus_online =
            crate::topology::online_cpus() as u32;

        // The knobs are in place before the first callback runs, and reachable by the CLI. A
        // reload takes them over from the old map under the writers' lock, so that a write
        // lands in the old map before the take-over or in the new one after the swap.
        let lock = control::WriterLock::acquire(Duration::from_secs(10))
            .inspect_err(|e| warn!("{e:#}; taking the knobs over without it"))
            .ok();
        let knobs = if restart {
            let carried = control::carry_over(knobs);
            if carried.seq == knobs.seq {
                let mut k = knobs;
                rederive_for_cpus(&mut k.tunables);
                k
            } else {
                info!("taking over the knobs written during the reload");
                carried
            }
        } else {
            knobs
        };
        control::write_map(&skel.maps.lab_knobs, &knobs)?;
        control::pin(&skel.maps.lab_knobs, restart)?;
        drop(lock);
        let events = crate::events::Listener::start(&skel.maps.lab_events)?;

        let struct_ops = match scx_ops_attach!(skel, lab_ops) {
            Ok(link) => Some(link),
            Err(e) => {
                control::unpin();
                return Err(e.context("cannot attach the BPF scheduler"));
            }
        };
        info!(
            "attached {}",
            crate::sysfs::read_state()
                .ok()
                .and_then(|s| s.ops)
                .unwrap_or_default()
        );
        info!("features: {}", knobs.features.to_line().trim_end());
        info!("tunables: {}", knobs.tunables.to_assignments().join(" "));
        let pool = PoolView::new();
        let stats_server = StatsServer::new(stats::server_data())
            .launch()
            .context("cannot start the stats server")?;
        let nr_cpus = libbpf_rs::num_possible_cpus()?.min(ffi::lab_consts_LAB_MAX_CPUS as usize);
        let bpf_stats = if opts.bpf_stats {
            Some(crate::bpfstats::enable()?)
        } else {
            None
        };
        Ok(Self {
            skel,
            struct_ops,
            keep_pin: false,
            knobs,
            pool,
            stats_server,
            attached_at: Instant::now(),
            nr_cpus,
            bpf_stats,
            events,
        })
    }

    /// The counters since attach and every CPU's queue now.
    fn metrics(&self) -> Metrics {
        let bss = self.skel.maps.bss_data.as_ref().unwrap();
        let rows: Vec<Vec<u64>> = bss
            .lab_stats
            .iter()
            .take(self.nr_cpus)
            .map(|r| r.to_vec())
            .collect();
        let mut cpus = BTreeMap::new();
        for cpu in 0..self.nr_cpus {
            let key = (cpu as u32).to_ne_bytes();
            let Ok(Some(bytes)) = self.skel.maps.lab_rqs.lookup(&key, MapFlags::ANY) else {
                continue;
            };
            if bytes.len() < std::mem::size_of::<ffi::lab_rq>() {
                continue;
            }
            // SAFETY: the value is a struct lab_rq (checked size); plain old data.
            let rq: ffi::lab_rq = unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast()) };
            let cfs = rq.cfs;
            let curr = (cfs.curr != 0)
                .then(|| self.pool.se(cfs.curr))
                .filter(|se| se.on_rq != 0);
            let mut q = stats::queue_state(&cfs, curr.as_ref());
            q.perf_target = rq.perf_target as u64;
            q.capacity = match rq.cpu_capacity {
                0 => 1024,
                c => c as u64,
            };
            cpus.insert(cpu, q);
        }
        let mut callbacks = BTreeMap::new();
        if self.bpf_stats.is_some() {
            for prog in self.skel.object().progs() {
                if let Some((calls, ns)) =
                    crate::bpfstats::prog_info(prog.as_fd()).map(|i| (i.run_cnt, i.run_time_ns))
                {
                    let name = prog.name().to_string_lossy().to_string();
                    callbacks.insert(name, stats::CallbackCost { calls, ns });
                }
            }
        }
        let mut m = Metrics::from_rows(
            &rows,
            cpus,
            callbacks,
            self.attached_at.elapsed().as_secs_f64(),
        );
        m.tasks = bss.lab_slots_used as u64;
        m.task_slots = bss.lab_slots_active as u64;
        m.groups = bss.lab_tgs_used as u64;
        m
    }

    /// A CPU went online or offline (the scheduler stays loaded): as the kernel's
    /// update_sysctl() does, base_slice_ns is re-derived from the normalized slice for the new
    /// CPU count -- a live write like a CLI's, under the writers' lock, logged as one.
    fn on_hotplug(&mut self, cpu: u32, online: bool) {
        // The CPU's online bit may not have changed yet: count it as the event says.
        let mut cpus = crate::topology::online_cpu_list();
        cpus.retain(|&c| c != cpu as usize);
        if online {
            cpus.push(cpu as usize);
        }
        let ncpus = cpus.len().max(1) as u64;
        let write = || -> Result<Option<(u64, u64)>> {
            let _lock = control::WriterLock::acquire(Duration::from_secs(10))?;
            let mut k = control::read_map(&self.skel.maps.lab_knobs)?;
            let (old, new) = (
                k.tunables.base_slice_ns,
                k.tunables.derived_base_slice(ncpus),
            );
            if old == new {
                return Ok(None);
            }
            k.tunables.base_slice_ns = new;
            k.seq += 1;
            control::write_map(&self.skel.maps.lab_knobs, &k)?;
            Ok(Some((old, new)))
        };
        match write() {
            Ok(Some((old, new))) => info!(
                "CPU hotplug: {ncpus} CPUs online; base_slice_ns {old} -> {new}, as the kernel's update_sysctl() does"
            ),
            Ok(None) => info!("CPU hotplug: {ncpus} CPUs online"),
            Err(e) => warn!("CPU hotplug: cannot re-derive base_slice_ns: {e:#}"),
        }
    }

    /// Logs every change a CLI writer made since the last look.
    fn log_knob_changes(&mut self) {
        let Ok(now) = control::read_map(&self.skel.maps.lab_knobs) else {
            return;
        };
        if now.seq == self.knobs.seq {
            return;
        }
        let feats = self.knobs.features.diff_tokens(&now.features);
        if !feats.is_empty() {
            info!("features changed: {}", feats.join(" "));
        }
        let (old, new) = (
            self.knobs.tunables.to_assignments(),
            now.tunables.to_assignments(),
        );
        for (a, b) in old.iter().zip(new.iter()) {
            if a != b {
                info!("tunable changed: {a} -> {b}");
            }
        }
        self.knobs = now;
    }

    /// Runs until `shutdown` is set or the kernel ejects the scheduler; then detaches. Sleeps
    /// until a stats request, a scheduler event (a knobs write, the exit) or `wake` (sent with
    /// `shutdown`) arrives: an idle daemon takes no CPU.
    pub fn run(&mut self, shutdown: &AtomicBool, wake: &Receiver<()>) -> Result<UserExitInfo> {
        let (res_ch, req_ch) = self.stats_server.channels();
        let mut req_ch = req_ch.clone();
        let mut events = self.events.receiver().clone();
        // Without the events (the listener failed), the exit is noticed by polling.
        let mut poll = None;
        while !shutdown.load(Ordering::Relaxed) && !uei_exited!(&self.skel, uei) {
            crossbeam::select! {
                recv(req_ch) -> r => match r {
                    Ok(()) => res_ch.send(self.metrics())?,
                    Err(e) => {
                        warn!("stats channel: {e}");
                        req_ch = crossbeam::channel::never();
                    }
                },
                recv(events) -> ev => match ev {
                    Ok(Event::Hotplug { cpu, online }) => self.on_hotplug(cpu, online),
                    Ok(Event::Lost) | Err(_) => {
                        warn!("no scheduler events: checking for its exit every second");
                        events = crossbeam::channel::never();
                        poll = Some(Duration::from_secs(1));
                    }
                    Ok(_) => {}
                },
                recv(wake) -> _ => {},
                default(poll.unwrap_or(Duration::MAX)) => {},
            }
            self.log_knob_changes();
        }
        let bss = self.skel.maps.bss_data.as_ref().unwrap();
        if bss.nr_alloc_fail > 0 {
            warn!(
                "{} tasks found the task pool full ({} slots): it is sized anew on reload",
                bss.nr_alloc_fail, bss.lab_slots_active
            );
        }
        let ejected = uei_exited!(&self.skel, uei);
        if !ejected {
            // Asked to stop: a control write racing the detach either lands before the pin
            // goes (while attached) or finds no pin.
            control::unpin();
        }
        self.struct_ops.take();
        let uei = uei_report!(&self.skel, uei)?;
        if ejected && uei.should_restart() && !shutdown.load(Ordering::Relaxed) {
            self.keep_pin = true;
        } else {
            control::unpin();
        }
        self.log_knob_changes();
        Ok(uei)
    }

    pub fn knobs(&self) -> Knobs {
        self.knobs
    }
}

impl Drop for Scheduler<'_> {
    fn drop(&mut self) {
        self.struct_ops.take();
        if !self.keep_pin {
            control::unpin();
        }
    }
}

/// The attempts to attach that CPU hotplug defeated, in a row: each is tried again after a
/// growing pause, up to [`AttachRetry::MAX`] of them.
#[derive(Debug, Default)]
struct AttachRetry {
    failures: u32,
}

#[derive(Debug, PartialEq, Eq)]
enum Next {
    Retry(Duration),
    GiveUp,
}

impl AttachRetry {
    const MAX: u32 = 10;

    /// One more attempt failed: wait 0.5 s, 1 s, 2 s, ... (at most 8 s) before the next, or give
    /// up after the MAX-th.
    fn failed(&mut self) -> Next {
        self.failures += 1;
        if self.failures >= Self::MAX {
            return Next::GiveUp;
        }
        Next::Retry(Duration::from_millis(500 << (self.failures - 1).min(4)))
    }

    fn gave_up(&self) -> String {
        format!(
            "cannot attach the scheduler: CPUs went on or offline during each of {} attempts \
             in a row; try again once they settle",
            self.failures
        )
    }
}

/// update_sysctl(): on hotplug the kernel re-derives the base slice from the normalized one for
/// the new CPU count, overwriting a base_slice_ns written since.
fn rederive_for_cpus(t: &mut crate::tunables::Tunables) {
    let ncpus = crate::topology::online_cpus();
    let base = t.derived_base_slice(ncpus);
    if base != t.base_slice_ns {
        info!(
            "base_slice_ns {} -> {base} for {ncpus} CPUs, as the kernel's update_sysctl() does",
            t.base_slice_ns
        );
        t.base_slice_ns = base;
    }
}

/// The kernel's HZ: jiffies counted over 200 ms of monotonic time, rounded to the nearest
/// value Linux offers (100, 250, 300, 1000).
fn measure_hz(skel: &BpfSkel) -> Result<u64> {
    let sample = || -> Result<(u64, u64)> {
        skel.progs
            .lab_probe_clock
            .test_run(libbpf_rs::ProgramInput::default())
            .context("cannot run the clock probe")?;
        let bss = skel.maps.bss_data.as_ref().unwrap();
        Ok((bss.probe_jiffies, bss.probe_ns))
    };
    let (j0, t0) = sample()?;
    std::thread::sleep(Duration::from_millis(200));
    let (j1, t1) = sample()?;
    let measured = (j1 - j0) as f64 * 1e9 / (t1 - t0).max(1) as f64;
    Ok(*[100u64, 250, 300, 1000]
        .iter()
        .min_by(|a, b| {
            let (da, db) = ((**a as f64 - measured).abs(), (**b as f64 - measured).abs());
            da.total_cmp(&db)
        })
        .unwrap())
}

/// Loads and runs the scheduler until shutdown, restarting it when the kernel asks for it
/// (CPU hotplug). Returns Ok when detached on request; an error carries the exit reason.
pub fn run(opts: &RunOpts) -> Result<()> {
    crate::sysfs::require_sched_ext()?;
    crate::preflight::require_supported_kernel()?;
    crate::preflight::require_root()?;
    crate::sysfs::require_no_scheduler()?;

    let shutdown = Arc::new(AtomicBool::new(false));
    let (wake_tx, wake_rx) = crossbeam::channel::bounded(1);
    let s = shutdown.clone();
    ctrlc::set_handler(move || {
        s.store(true, Ordering::Relaxed);
        let _ = wake_tx.try_send(());
    })
    .context("cannot install the SIGINT/SIGTERM handler")?;
    if let Some(secs) = opts.stats_interval {
        let s = shutdown.clone();
        std::thread::spawn(move || {
            let interval = Duration::from_secs_f64(secs);
            if let Err(e) =
                crate::monitor::monitor(interval, false, None, &[], || s.load(Ordering::Relaxed))
            {
                warn!("stats: {e:#}");
            }
        });
    }

    let mut knobs = Knobs {
        seq: 1,
        features: opts.features,
        tunables: opts.tunables,
    };
    let mut open_object = MaybeUninit::uninit();
    let mut restart = false;
    let mut retry = AttachRetry::default();
    let result = loop {
        let before = crate::sysfs::read_state()?;
        let mut sched = match Scheduler::init(opts, knobs, restart, &mut open_object) {
            Ok(s) => s,
            Err(e) => {
                // An attempt that failed while CPUs went on or offline may succeed once they
                // settle (a topology read or an attach racing the hotplug); any other failure
                // is final.
                let hotplug = crate::sysfs::read_state()
                    .is_ok_and(|now| now.hotplug_seq != before.hotplug_seq);
                if !hotplug || shutdown.load(Ordering::Relaxed) {
                    break Err(e);
                }
                match retry.failed() {
                    Next::Retry(wait) => {
                        warn!(
                            "attaching failed while CPUs went on or offline ({e:#}); trying \
                             again in {wait:?} ({} of {})",
                            retry.failures,
                            AttachRetry::MAX
                        );
                        let _ = wake_rx.recv_timeout(wait);
                        if shutdown.load(Ordering::Relaxed) {
                            break Ok(());
                        }
                        continue;
                    }
                    Next::GiveUp => break Err(e.context(retry.gave_up())),
                }
            }
        };
        let uei = match sched.run(&shutdown, &wake_rx) {
            Ok(u) => u,
            Err(e) => break Err(e),
        };
        // A restart keeps the live changes made so far.
        knobs = sched.knobs();
        drop(sched);
        if uei.should_restart() && !shutdown.load(Ordering::Relaxed) {
            restart = true;
            // The kernel bumps enable_seq when an enable completes: an attach it refused
            // (CPUs changed while the scheduler loaded) did not.
            let enabled =
                crate::sysfs::read_state().is_ok_and(|s| s.enable_seq != before.enable_seq);
            if enabled {
                retry = AttachRetry::default();
                match (uei.exit_code().unwrap_or(0) & 0xffff) as u32 {
                    bpf_intf::lab_exit_reason_LAB_EXIT_RSN_POOL_FULL => info!(
                        "the task pool is full; reloading with one sized for the current limits"
                    ),
                    bpf_intf::lab_exit_reason_LAB_EXIT_RSN_NEW_CPU => info!(
                        "a CPU unknown to the loaded topology came online; reloading to read its place"
                    ),
                    _ => info!("the kernel asked for a restart (CPU hotplug); reloading"),
                }
                continue;
            }
            match retry.failed() {
                Next::Retry(wait) => {
                    info!(
                        "the kernel refused the attach: CPUs went on or offline while the \
                         scheduler loaded; trying again in {wait:?} ({} of {})",
                        retry.failures,
                        AttachRetry::MAX
                    );
                    let _ = wake_rx.recv_timeout(wait);
                    if shutdown.load(Ordering::Relaxed) {
                        break Ok(());
                    }
                    continue;
                }
                Next::GiveUp => break Err(anyhow::anyhow!(retry.gave_up())),
            }
        }
        info!("detached");
        break Ok(());
    };
    // Nothing of the daemon stays behind: the knobs pin (the Scheduler's), its stats socket.
    control::unpin();
    crate::monitor::remove_socket();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attach_retries_back_off_and_are_bounded() {
        let mut r = AttachRetry::default();
        let waits: Vec<Next> = (0..AttachRetry::MAX).map(|_| r.failed()).collect();
        let ms = |n| Next::Retry(Duration::from_millis(n));
        assert_eq!(
            waits,
            [
                ms(500),
                ms(1000),
                ms(2000),
                ms(4000),
                ms(8000),
                ms(8000),
                ms(8000),
                ms(8000),
                ms(8000),
                Next::GiveUp
            ]
        );
        let msg = r.gave_up();
        assert!(msg.contains("each of 10 attempts in a row"), "{msg}");
        // An attach that succeeds starts the count again (the caller resets it).
        let mut r = AttachRetry::default();
        r.failed();
        assert_eq!(r.failures, 1);
    }
}
