//! `scx_eevdf_lab bench`: A/B comparisons of the kernel's built-in EEVDF, the lab's mirror and
//! other sched_ext schedulers, with numbers a kernel developer would accept.
//!
//! This module holds the command-line options and the session driver: it resolves arms and
//! workloads, installs the interrupt handler, runs the protocol, restores every setting it
//! touched, and writes the table, JSON, CSV and SVG outputs. The pieces live in the sibling
//! modules: [`arms`] (what an arm is), [`runner`] (putting arms in effect and checking them),
//! [`protocol`] (order, warm-ups, validity), [`workloads`], [`cgroup`] (the workloads' cgroups),
//! [`counters`] and [`system`], [`stats`], [`report`],
//! [`plot`] and [`env`]. It depends on nothing of the command line above it: `cli` calls
//! [`run`], [`workloads::worker_main`] and [`workloads::part_main`].

pub mod arms;
pub mod cgroup;
pub mod compare;
pub mod counters;
pub mod env;
pub mod journal;
pub mod plot;
pub mod protocol;
pub mod report;
pub mod runner;
pub mod stats;
pub mod system;
pub mod trace;
pub mod workloads;

use crate::input::{self, bad_msg};
use anyhow::{Context, Result, bail};
use arms::{Arm, ArmSpec};
use protocol::{NamedWorkload, Order, Session};
use report::{Report, WorkloadInfo};
use runner::Runner;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// True once SIGINT, SIGTERM or SIGHUP arrived: workloads and the protocol stop promptly.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// This program's path, for the lab daemon and worker processes (`LAB_BENCH_EXE` overrides it,
/// which tests use).
pub fn self_exe() -> Result<PathBuf> {
    match std::env::var_os("LAB_BENCH_EXE") {
        Some(p) => Ok(PathBuf::from(p)),
        None => std::env::current_exe().context("cannot find this program's path"),
    }
}

/// The arm syntax and an example, shown under `bench --help`.
pub const ARMS_HELP: &str = "\
ARM is one of
  eevdf[:FEATURES][,tunable=value...]   the kernel's EEVDF with these debugfs settings
  lab[:FEATURES][,tunable=value...]     this scheduler, attached, features changed live
  scx:PATH [ARGS]                       another sched_ext scheduler binary (quote it)
FEATURES are kernel-syntax tokens joined by '+' or spaces (NO_DELAY_ZERO+NO_RUN_TO_PARITY),
applied on top of the kernel's settings at the start. Tunables: base_slice_ns, migration_cost_ns,
nr_migrate, tunable_scaling, preempt (none, voluntary, full, lazy) and cgroup_mode (up, smp,
concur, max, tasks); an arm that does not set preempt or cgroup_mode runs with the kernel's.
Every setting the bench changes is
restored on exit, error, Ctrl-C or SIGTERM (exit status 130 after an interrupt). An arm that
cannot be put in effect (a scheduler that does not load) is reported as failed and skipped; the
other arms run on, and the exit status is 1.

Example:
  scx_eevdf_lab bench eevdf eevdf:NO_DELAY_ZERO lab lab:NO_DELAY_ZERO -w pingpong,messaging --quick";

/// Options of `scx_eevdf_lab bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub cmd: Option<BenchCmd>,

    /// The arms to compare; the first is the baseline [default: eevdf lab].
    #[arg(value_name = "ARM")]
    pub arms: Vec<String>,

    /// Workloads, comma-separated or repeated: NAME[:key=value[:key=value...]]
    /// (e.g. pingpong:pairs=2:pin=same-cpu). One parameter may be a list, a sweep
    /// (messaging:groups=1,2,4,8,16: one workload per value); single-quote values that hold
    /// ':', ',' or '+'. Every workload also takes cgroup=NAME (its tasks in a cgroup v2 group
    /// of their own, created for the session and removed after it) with cpu_weight=1..10000,
    /// cpu_idle=0|1 and cpu_max=QUOTA/PERIOD|max; A+B runs workloads A and B at once, in one
    /// window, each with its own metrics (schlat:cgroup=lat+pipe-stream:cgroup=batch).
    /// `--list` shows them.
    #[arg(short, long = "workload", default_value = "pingpong")]
    pub workloads: Vec<String>,

    /// Measured runs per arm and workload, 1..=10000 [default: 10; 3 with --quick].
    #[arg(short = 'n', long)]
    pub runs: Option<usize>,

    /// Few runs and short windows: a smoke test or a demo, not a measurement.
    #[arg(long)]
    pub quick: bool,

    /// In-run warm-up before each measurement window, seconds [default: 2; 0.25 with --quick].
    #[arg(long, value_name = "SECONDS")]
    pub warmup: Option<f64>,

    /// Measurement window of time-based workloads, seconds [default: 5; 1 with --quick].
    #[arg(long, value_name = "SECONDS")]
    pub window: Option<f64>,

    /// Hard limit for one run, seconds; a run that hits it is invalid [default: 120; 30 with
    /// --quick].
    #[arg(long, value_name = "SECONDS")]
    pub max_run: Option<f64>,

    /// Interleaving of the arms.
    #[arg(long, value_enum, default_value_t = Order::Abba)]
    pub order: Order,

    /// Seed of the arm order and the bootstrap [default: from the clock; always recorded].
    #[arg(long)]
    pub seed: Option<u64>,

    /// Also run a copy of the first arm (A/A) to measure the noise floor.
    #[arg(long)]
    pub aa: bool,

    /// Run the pipe workloads' tasks as processes instead of threads.
    #[arg(long)]
    pub processes: bool,

    /// Fidelity mode: compare FEATURE's effect in the kernel and in the mirror (arms
    /// eevdf:F, eevdf:NO_F, lab:F, lab:NO_F; no ARM may be given). Several features joined by
    /// `+` share one session: a base arm with all of them on, and one arm per feature with it
    /// off, for each side. Settings after a comma go to every arm (kernel-only ones, if any, to
    /// the eevdf arms only): `--fidelity RUN_TO_PARITY,preempt=full`, `--fidelity
    /// WA_WEIGHT+WA_IDLE`.
    #[arg(long, value_name = "FEATURE[+FEATURE...][,SETTING...]")]
    pub fidelity: Option<String>,

    /// Trace every run from the sched tracepoints (a BPF tracing program): wakeup latency, run
    /// length before involuntary and voluntary switches, migrations per wakeup, per arm, with
    /// the tracer's measured cost. It costs every arm the same few hundred ns per switch: a
    /// diagnostic, not a timed A/B.
    #[arg(long)]
    pub trace: bool,

    /// Folder for bench.json, runs.csv and the SVG plots [default: bench-<time>].
    #[arg(short, long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Do not draw the SVG plots.
    #[arg(long)]
    pub no_plots: bool,

    /// Turn on the kernel's BPF run-time statistics for the session and report, for every
    /// sched_ext arm (the lab or another scheduler), each callback's calls per operation and ns
    /// per call. The statistics cost two clock reads per callback, in every arm with BPF.
    #[arg(long)]
    pub bpf_stats: bool,

    /// Bootstrap resamples per comparison, 100..=1000000 [default: 10000; 2000 with --quick].
    #[arg(long)]
    pub bootstrap: Option<usize>,

    /// List the workloads with their parameters (key, default, meaning) and metrics, and exit.
    #[arg(long)]
    pub list: bool,

    /// Check a bench.json written by this version and exit (0 = valid).
    #[arg(long, value_name = "FILE", hide = true)]
    pub validate: Option<PathBuf>,
}

#[derive(Debug, clap::Subcommand)]
pub enum BenchCmd {
    /// Merge bench.json files of separate sessions (boots, kernels, machines) into one report
    /// with the same statistics, or re-render one file.
    Compare(compare::CompareArgs),
}

/// Workloads whose tasks are threads only.
const THREADS_ONLY: &[&str] = &["schlat", "hog-probe", "weights"];

/// Exit status after an interrupt (128 + SIGINT), once everything is restored.
const EXIT_INTERRUPTED: u8 = 130;

/// What a session does where an option is not given: a measurement, or a `--quick` smoke test
/// (the options' help texts repeat these numbers).
struct Defaults {
    warmup_s: f64,
    window_s: f64,
    max_run_s: f64,
    runs: usize,
    bootstrap: usize,
}

const FULL: Defaults = Defaults {
    warmup_s: 2.0,
    window_s: 5.0,
    max_run_s: 120.0,
    runs: 10,
    bootstrap: 10_000,
};

const QUICK: Defaults = Defaults {
    warmup_s: 0.25,
    window_s: 1.0,
    max_run_s: 30.0,
    runs: 3,
    bootstrap: 2000,
};

/// The longest any time option may be, seconds.
const MAX_OPTION_S: f64 = 3600.0;

/// The most measured runs per arm and workload.
const MAX_RUNS: usize = 10_000;

/// Bootstrap resamples per comparison: fewer give no interval (stats::bootstrap_ratio_ci).
const MIN_BOOTSTRAP: usize = 100;
const MAX_BOOTSTRAP: usize = 1_000_000;

pub fn run(args: BenchArgs) -> Result<ExitCode> {
    if let Some(BenchCmd::Compare(c)) = args.cmd {
        return compare::run(c);
    }
    if let Some(f) = &args.validate {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?;
        let v: serde_json::Value =
            serde_json::from_str(&text).with_context(|| format!("{} is not JSON", f.display()))?;
        return Ok(match report::validate(&v) {
            Ok(msg) => {
                println!("{}: {msg}", f.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{}: invalid: {e:#}", f.display());
                ExitCode::FAILURE
            }
        });
    }
    if args.list {
        print!("{}", workloads::list()?);
        return Ok(ExitCode::SUCCESS);
    }

    let q = args.quick;
    let dflt = if q { &QUICK } else { &FULL };
    let rc = workloads::RunConfig {
        warmup: secs("--warmup", args.warmup.unwrap_or(dflt.warmup_s))?,
        window: secs("--window", args.window.unwrap_or(dflt.window_s))?,
        max_run: secs("--max-run", args.max_run.unwrap_or(dflt.max_run_s))?,
        processes: args.processes,
        ..Default::default()
    };
    if rc.window.is_zero() {
        return Err(bad_msg("--window must be > 0"));
    }
    let runs = args.runs.unwrap_or(dflt.runs);
    if runs == 0 || runs > MAX_RUNS {
        return Err(bad_msg(format!(
            "--runs must be 1..={MAX_RUNS}, got {runs}"
        )));
    }
    let boot_reps = args.bootstrap.unwrap_or(dflt.bootstrap);
    if !(MIN_BOOTSTRAP..=MAX_BOOTSTRAP).contains(&boot_reps) {
        return Err(bad_msg(format!(
            "--bootstrap must be {MIN_BOOTSTRAP}..={MAX_BOOTSTRAP}, got {boot_reps}"
        )));
    }
    let seed = args.seed.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });

    // Arms: as given, or the fidelity quartet; plus the A/A copy.
    let mut specs: Vec<ArmSpec> = match &args.fidelity {
        Some(f) => {
            if !args.arms.is_empty() {
                return Err(bad_msg("--fidelity chooses the arms itself; give no ARM"));
            }
            fidelity_arms(f)
                .map_err(input::bad)?
                .iter()
                .map(|s| ArmSpec::parse(s))
                .collect::<Result<_>>()
                .map_err(input::bad)?
        }
        None if args.arms.is_empty() => vec![ArmSpec::parse("eevdf")?, ArmSpec::parse("lab")?],
        None => args
            .arms
            .iter()
            .map(|s| ArmSpec::parse(s))
            .collect::<Result<_>>()
            .map_err(input::bad)?,
    };
    for (i, s) in specs.iter().enumerate() {
        if specs[..i].iter().any(|p| p.label == s.label) {
            return Err(bad_msg(format!(
                "arm {:?} is given twice (use --aa for an A/A comparison)",
                s.label
            )));
        }
    }
    let aa = if args.aa {
        let mut copy = specs[0].clone();
        copy.label = format!("{} (A/A)", copy.label);
        specs.push(copy);
        Some(specs.len() - 1)
    } else {
        None
    };
    if specs.iter().any(|s| s.needs_root()) {
        crate::preflight::require_root()?;
    }

    // Workloads: each spec, or each point of its sweep.
    let names: Vec<&str> = workloads::NAMES.iter().map(|n| n.0).collect();
    let mut wls = Vec::new();
    let mut sweeps = Vec::new();
    for spec in workloads::spec::split_specs(&args.workloads, &names).map_err(input::bad)? {
        for (w, point) in
            workloads::spec::expand(&spec, workloads::NOT_SWEPT, &names).map_err(input::bad)?
        {
            let workload = workloads::parse(&w, q)
                .with_context(|| match &point {
                    Some(p) => format!("workload {spec:?} at {}={}", p.key, p.value),
                    None => format!("workload {spec:?}"),
                })
                .map_err(input::bad)?;
            if args.processes
                && let Some(name) = workload
                    .names()
                    .into_iter()
                    .find(|n| THREADS_ONLY.contains(n))
            {
                return Err(bad_msg(format!(
                    "{name} runs as threads only; drop --processes"
                )));
            }
            if wls.iter().any(|x: &NamedWorkload| x.label == w) {
                return Err(bad_msg(format!("workload {w:?} is given twice")));
            }
            wls.push(NamedWorkload { label: w, workload });
            sweeps.push(point);
        }
    }
    if wls.is_empty() {
        return Err(bad_msg("no workload given"));
    }
    let cgroups: Vec<cgroup::CgroupSpec> = wls.iter().flat_map(|w| w.workload.cgroups()).collect();
    let cgroup_root = cgroup::root();
    if !cgroups.is_empty() {
        crate::preflight::require_root()?;
        cgroup::check_root(&cgroup_root)?;
    }
    // What a bench killed before it could restore left behind goes back first, so that this
    // one starts from (and restores to) the settings from before that one.
    if crate::preflight::is_root()
        && let Some((pid, done)) = journal::recover(std::path::Path::new(journal::PATH))?
    {
        eprintln!(
            "scx_eevdf_lab bench: put back what an unfinished bench (pid {pid}) had changed: {}",
            if done.is_empty() {
                "nothing had changed".to_string()
            } else {
                done.join("; ")
            }
        );
    }
    // The arms against the settings the bench starts from (read only), so that a bad arm is
    // refused before anything is created.
    let ncpus = crate::topology::online_cpus();
    let base = arms::baseline(ncpus);
    let arms: Vec<Arm> = specs
        .into_iter()
        .map(|s| Arm::resolve(s, &base, ncpus))
        .collect::<Result<_>>()
        .map_err(input::bad)?;
    let infos: Vec<WorkloadInfo> = wls
        .iter()
        .zip(sweeps)
        .map(|(w, sweep)| WorkloadInfo {
            label: w.label.clone(),
            name: w.workload.name().into(),
            description: w.workload.describe(),
            params: w.workload.params(),
            metrics: w.workload.metrics(),
            sweep,
            parts: w.workload.parts(),
        })
        .collect();

    let out_dir = args.out.clone().unwrap_or_else(|| {
        let t = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        PathBuf::from(format!("bench-{t}"))
    });
    std::fs::create_dir_all(&out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;

    ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, Ordering::Relaxed) {
            eprintln!("scx_eevdf_lab bench: still restoring the settings it changed; please wait");
        } else {
            eprintln!("scx_eevdf_lab bench: interrupted; stopping the run and restoring settings");
        }
    })
    .context("cannot install the SIGINT/SIGTERM handler")?;

    if args.trace {
        trace::start().context("bench --trace")?;
    }
    let environment = env::capture(&["stress-ng", "hackbench", "perf"]);

    let mut runner = Runner::new(&arms, base.clone(), out_dir.join("scheduler.log"), ncpus)?;
    if let Some(n) = environment.autogroup_note(&arms) {
        eprintln!("scx_eevdf_lab bench: note: {n}");
    }
    if args.bpf_stats {
        runner.enable_bpf_stats()?;
    }
    let mut rc = rc;
    if !cgroups.is_empty() {
        rc.cgroups = Some(runner.setup_cgroups(&cgroup_root, &cgroups)?);
    }
    let knobs_before = runner
        .original_knobs()
        .cloned()
        .or_else(|| crate::kernel::KnobSnapshot::read().ok());
    // Arms of one scheduler share a family: the order keeps them together within a round.
    let family: Vec<usize> = arms
        .iter()
        .map(|a| {
            arms.iter()
                .position(|b| b.spec.same_scheduler(&a.spec))
                .unwrap_or(0)
        })
        .collect();
    let order = protocol::schedule(&family, runs, args.order, seed);
    let session = Session {
        arms: &arms,
        workloads: &wls,
        rc: rc.clone(),
        order: order.clone(),
    };
    let outcome = session.execute(&mut runner);
    let restore_errors = runner.shutdown();
    drop(runner);
    let knobs_after = crate::kernel::KnobSnapshot::read().ok();
    let knobs_restored = knobs_before
        .as_ref()
        .zip(knobs_after.as_ref())
        .map(|(a, b)| a == b);

    let (summaries, counters, comparisons) = report::analyze(
        &arms,
        &infos,
        &outcome.runs,
        &report::pairs(&arms, aa),
        seed,
        boot_reps,
    );
    let labels: Vec<&str> = arms.iter().map(|a| a.label()).collect();
    let traces = trace::report::summaries(
        &labels,
        &infos,
        &outcome.runs,
        environment.topology.allowed.len(),
    );
    let fidelity = match &args.fidelity {
        Some(f) => report::fidelity(&fidelity_parts(f)?.0, &arms, &comparisons),
        None => Vec::new(),
    };
    let rep = Report {
        schema_version: report::SCHEMA_VERSION,
        tool: "scx_eevdf_lab bench".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        command_line: std::env::args().collect(),
        created_unix_ms: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0),
        seed,
        order_mode: args.order,
        order: order.iter().map(|&i| arms[i].label().to_string()).collect(),
        runs_per_arm: runs,
        warmup_s: rc.warmup.as_secs_f64(),
        window_s: rc.window.as_secs_f64(),
        max_run_s: rc.max_run.as_secs_f64(),
        processes: rc.processes,
        bpf_stats: args.bpf_stats,
        quick: q,
        aa_arm: aa.map(|i| arms[i].label().to_string()),
        fidelity_feature: args.fidelity.clone(),
        environment,
        baseline: base,
        arms,
        workloads: infos,
        knobs_before,
        knobs_after,
        knobs_restored,
        runs: outcome.runs,
        summaries,
        counters,
        comparisons,
        fidelity,
        interrupted: outcome.interrupted,
        fatal: outcome.fatal,
        failed_arms: outcome.failed_arms,
        bootstrap_reps: boot_reps,
        trace: args.trace,
        traces,
        sources: Vec::new(),
        merge_notes: Vec::new(),
        restore_errors,
    };

    write_outputs(&rep, &out_dir, !args.no_plots)?;

    if rep.interrupted {
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    if rep.fatal.is_some()
        || !rep.failed_arms.is_empty()
        || !rep.restore_errors.is_empty()
        || rep.knobs_restored == Some(false)
    {
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints the table and writes bench.json, runs.csv and (with `plots`) the SVGs into `dir`.
pub fn write_outputs(rep: &Report, dir: &std::path::Path, plots: bool) -> Result<()> {
    print!("{}", report::table(rep));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let json = dir.join("bench.json");
    std::fs::write(&json, serde_json::to_string_pretty(rep)?)
        .with_context(|| format!("cannot write {}", json.display()))?;
    let csv = dir.join("runs.csv");
    std::fs::write(&csv, report::csv(rep))
        .with_context(|| format!("cannot write {}", csv.display()))?;
    eprintln!("wrote {} and {}", json.display(), csv.display());
    if plots {
        match plot::write_all(rep, dir) {
            Ok(files) => eprintln!("wrote {} plot(s) in {}", files.len(), dir.display()),
            Err(e) => eprintln!("scx_eevdf_lab bench: plots: {e:#}"),
        }
    }
    Ok(())
}

/// The arms of `--fidelity FEATURE[+FEATURE...][,SETTING...]`: for the kernel and then the lab,
/// a base arm with every feature on, then one arm per feature with that one off. The settings go
/// to every arm, but the kernel-only knobs to the eevdf arms only.
fn fidelity_arms(f: &str) -> Result<Vec<String>> {
    let (names, settings) = fidelity_parts(f)?;
    let (mut kernel, mut lab) = (String::new(), String::new());
    for s in settings.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        kernel.push_str(&format!(",{s}"));
        let knob = s.split('=').next().unwrap_or("").trim();
        if !arms::KERNEL_ONLY.contains(&knob) {
            lab.push_str(&format!(",{s}"));
        }
    }
    // The features, with the `off`th one (if any) turned off.
    let feats = |off: Option<usize>| {
        let f: Vec<String> = names
            .iter()
            .enumerate()
            .map(|(i, n)| match Some(i) == off {
                true => format!("NO_{n}"),
                false => n.to_string(),
            })
            .collect();
        f.join("+")
    };
    let mut out = Vec::new();
    for (kind, settings) in [("eevdf", &kernel), ("lab", &lab)] {
        out.push(format!("{kind}:{}{settings}", feats(None)));
        for i in 0..names.len() {
            out.push(format!("{kind}:{}{settings}", feats(Some(i))));
        }
    }
    Ok(out)
}

/// `--fidelity FEATURE[+FEATURE...][,SETTING...]`: the features (without NO_), each checked to
/// be a kernel feature and given once, and the settings.
fn fidelity_parts(f: &str) -> Result<(Vec<&str>, &str)> {
    let (_, settings) = f.split_once(',').unwrap_or((f, ""));
    let names = report::fidelity_features(f);
    for (i, name) in names.iter().enumerate() {
        let feat = crate::features::find(name)
            .with_context(|| format!("--fidelity: unknown feature {name:?}"))?;
        if !feat.in_kernel {
            bail!("--fidelity: {name} is a lab knob; the kernel has no such feature");
        }
        if names[..i].contains(name) {
            bail!("--fidelity: {name} is given twice");
        }
    }
    Ok((names, settings))
}

fn secs(what: &str, s: f64) -> Result<Duration> {
    if !(0.0..=MAX_OPTION_S).contains(&s) {
        return Err(bad_msg(format!(
            "{what} {s:?} s is out of range (0..={MAX_OPTION_S})"
        )));
    }
    Ok(Duration::from_secs_f64(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fidelity_settings_go_to_the_arms_that_have_them() {
        assert_eq!(
            fidelity_arms("NO_RUN_TO_PARITY").unwrap(),
            [
                "eevdf:RUN_TO_PARITY",
                "eevdf:NO_RUN_TO_PARITY",
                "lab:RUN_TO_PARITY",
                "lab:NO_RUN_TO_PARITY"
            ]
        );
        let a = fidelity_arms("RUN_TO_PARITY,cgroup_mode=smp,preempt=full").unwrap();
        assert_eq!(a[1], "eevdf:NO_RUN_TO_PARITY,cgroup_mode=smp,preempt=full");
        assert_eq!(a[3], "lab:NO_RUN_TO_PARITY,cgroup_mode=smp,preempt=full");
        for arm in &a {
            ArmSpec::parse(arm).unwrap();
        }
        assert!(fidelity_arms("NO_SUCH,preempt=full").is_err());
        // Several features: each arm differs from its side's base in one feature.
        assert_eq!(
            fidelity_arms("WA_WEIGHT+NO_WA_IDLE,preempt=full").unwrap(),
            [
                "eevdf:WA_WEIGHT+WA_IDLE,preempt=full",
                "eevdf:NO_WA_WEIGHT+WA_IDLE,preempt=full",
                "eevdf:WA_WEIGHT+NO_WA_IDLE,preempt=full",
                "lab:WA_WEIGHT+WA_IDLE,preempt=full",
                "lab:NO_WA_WEIGHT+WA_IDLE,preempt=full",
                "lab:WA_WEIGHT+NO_WA_IDLE,preempt=full"
            ]
        );
        assert!(
            fidelity_arms("WA_IDLE+NO_WA_IDLE")
                .unwrap_err()
                .to_string()
                .contains("twice")
        );
        assert!(fidelity_arms("WA_IDLE+DELAY_WAKE_COLD").is_err());
        assert!(
            fidelity_arms("DELAY_WAKE_COLD")
                .unwrap_err()
                .to_string()
                .contains("lab knob")
        );
    }
}
