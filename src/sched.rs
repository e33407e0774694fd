//! The scheduler daemon: opens, loads and attaches the BPF scheduler, serves the run loop, and
//! detaches cleanly on SIGINT/SIGTERM or when the kernel ejects the scheduler.

use crate::bpf_skel::{BpfSkel, BpfSkelBuilder};
use crate::control::{self, Knobs};
use crate::features::{FeatureSet, Tunables};
use anyhow::{Context, Result};
use libbpf_rs::OpenObject;
use log::info;
use scx_utils::{UserExitInfo, scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_report};
use std::mem::MaybeUninit;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Options of a scheduler run.
#[derive(Debug, Clone)]
pub struct RunOpts {
    pub exit_dump_len: u32,
    pub verbose: bool,
    pub features: FeatureSet,
    pub tunables: Tunables,
}

pub struct Scheduler<'a> {
    skel: BpfSkel<'a>,
    struct_ops: Option<libbpf_rs::Link>,
    /// The knobs last seen, for the change log.
    knobs: Knobs,
}

impl<'a> Scheduler<'a> {
    pub fn init(
        opts: &RunOpts,
        knobs: Knobs,
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
        let mut skel =
            scx_ops_load!(skel, lab_ops, uei).context("cannot load the BPF scheduler")?;

        // TICK_NSEC bounds lag (entity_lag()); the kernel's HZ is not in its BTF, so measure it.
        let hz = measure_hz(&skel)?;
        skel.maps.data_data.as_mut().unwrap().tick_ns = 1_000_000_000 / hz;
        info!("kernel HZ: {hz}");

        // The knobs are in place before the first callback runs, and reachable by the CLI.
        control::write_map(&skel.maps.lab_knobs, &knobs)?;
        control::pin(&skel.maps.lab_knobs)?;

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
        Ok(Self {
            skel,
            struct_ops,
            knobs,
        })
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

    /// Runs until `shutdown` is set or the kernel ejects the scheduler; then detaches.
    pub fn run(&mut self, shutdown: &AtomicBool) -> Result<UserExitInfo> {
        while !shutdown.load(Ordering::Relaxed) && !uei_exited!(&self.skel, uei) {
            self.log_knob_changes();
            std::thread::sleep(Duration::from_millis(100));
        }
        self.struct_ops.take();
        control::unpin();
        uei_report!(&self.skel, uei)
    }

    pub fn knobs(&self) -> Knobs {
        self.knobs
    }
}

impl Drop for Scheduler<'_> {
    fn drop(&mut self) {
        self.struct_ops.take();
        control::unpin();
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
    crate::preflight::require_root()?;
    crate::sysfs::require_no_scheduler()?;

    let shutdown = Arc::new(AtomicBool::new(false));
    let s = shutdown.clone();
    ctrlc::set_handler(move || s.store(true, Ordering::Relaxed))
        .context("cannot install the SIGINT/SIGTERM handler")?;

    let mut knobs = Knobs {
        seq: 1,
        features: opts.features,
        tunables: opts.tunables,
    };
    let mut open_object = MaybeUninit::uninit();
    loop {
        let mut sched = Scheduler::init(opts, knobs, &mut open_object)?;
        let uei = sched.run(&shutdown)?;
        // A restart keeps the live changes made so far.
        knobs = sched.knobs();
        drop(sched);
        if uei.should_restart() && !shutdown.load(Ordering::Relaxed) {
            info!("the kernel asked for a restart (CPU hotplug); reloading");
            continue;
        }
        info!("detached");
        return Ok(());
    }
}
