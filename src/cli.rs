//! Command-line interface: the daemon's options and the control subcommands.

use crate::control::Control;
use crate::features::{self, FeatureSet, Mirror};
use crate::topology::online_cpus;
use crate::tunables::{self, Tunables};
use crate::{input, kernel, monitor, sched, stats};
use anyhow::{Result, bail};
use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

/// A sched_ext mirror of Linux's EEVDF whose features and tunables can be flipped while it runs.
///
/// Without a subcommand: load and attach the scheduler and run until SIGINT/SIGTERM. The other
/// commands talk to the running scheduler (as root) or compare it with the kernel.
#[derive(Debug, Parser)]
#[command(
    name = "scx_eevdf_lab",
    version,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(flatten)]
    pub daemon: DaemonArgs,

    /// Verbose output, including libbpf's.
    #[arg(short, long, global = true)]
    pub verbose: bool,

    #[command(subcommand)]
    pub cmd: Option<Cmd>,
}

#[derive(Debug, clap::Args)]
pub struct DaemonArgs {
    /// Start with these features, in the kernel's debugfs syntax ("NO_RUN_TO_PARITY PLACE_LAG").
    /// Unknown names are refused. See `scx_eevdf_lab features --help` for the list.
    #[arg(long, value_name = "TOKENS")]
    pub features: Vec<String>,

    /// Start with these tunables (NAME=VALUE, repeatable or comma-separated).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,

    /// Start from the kernel's current debugfs features and tunables (then --features and --set
    /// apply on top), so that an A/B comparison starts from identical settings.
    #[arg(long)]
    pub match_kernel: bool,

    /// Size of the debug dump printed when the scheduler exits with an error (0 = kernel default).
    #[arg(long, default_value_t = 0)]
    pub exit_dump_len: u32,

    /// Run the scheduler and print its stats every SECS seconds.
    #[arg(long, value_name = "SECS")]
    pub stats: Option<f64>,

    /// Do not run the scheduler: print the running one's stats every SECS seconds.
    #[arg(long, value_name = "SECS")]
    pub monitor: Option<f64>,

    /// Describe every stats field and exit.
    #[arg(long)]
    pub help_stats: bool,

    /// Diagnostic: at each pick, also count how far a scan of a deadline-sorted DSQ would go to
    /// the first eligible entity (the dsq_scan_* stats), to compare with the tree search.
    #[arg(long)]
    pub measure_scan: bool,

    /// Collect the BPF run time of every callback (turns on the kernel's bpf_stats, which costs
    /// two clock reads per callback; the `bpf` line of the stats).
    #[arg(long)]
    pub bpf_stats: bool,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Print the running scheduler's features like /sys/kernel/debug/sched/features, or change
    /// them live ("NO_DELAY_ZERO RUN_TO_PARITY ...": all or nothing). Without arguments and
    /// without a running lab, print the kernel's own line.
    #[command(after_long_help = features_help())]
    Features {
        /// Tokens in the kernel's syntax: NAME turns a feature on, NO_NAME off.
        tokens: Vec<String>,
    },
    /// Print the running scheduler's tunables (all as NAME=VALUE, or the value of one).
    #[command(after_long_help = tunables_help())]
    Get {
        name: Option<String>,
        /// With NAME: print it as the kernel's debugfs file does, a tunable with choices as
        /// every choice with the one in effect in parentheses (`up smp (concur) max tasks`).
        #[arg(long, requires = "name")]
        choices: bool,
    },
    /// Change tunables of the running scheduler live (NAME=VALUE ...; all or nothing).
    #[command(after_long_help = tunables_help())]
    Set {
        #[arg(required = true, value_name = "NAME=VALUE")]
        assignments: Vec<String>,
    },
    /// Show where the running scheduler's features and tunables differ from the kernel's EEVDF
    /// (exit status 1 when they do). With only one side readable, show that side's features
    /// (exit status 2: nothing compared).
    DiffKernel,
    /// Print the running scheduler's stats (decision counters per interval, queues) until Ctrl-C.
    Monitor(MonitorArgs),
    /// A/B-benchmark the built-in EEVDF, this scheduler and other sched_ext schedulers.
    #[command(after_help = crate::bench::ARMS_HELP, args_conflicts_with_subcommands = true)]
    Bench(Box<crate::bench::BenchArgs>),
    /// Put back what a bench that did not finish (killed with SIGKILL, a crash) had changed:
    /// the kernel's debugfs knobs, a running lab's knobs, a scheduler it had started, the
    /// cgroups it had created (what still runs in them is killed) and the cpu controller it had
    /// turned on. It reads the journal every bench keeps in /run/scx_eevdf_lab (the next bench
    /// does the same).
    Restore,
    /// Print a shell completion script to stdout (e.g. `scx_eevdf_lab completions bash >
    /// /etc/bash_completion.d/scx_eevdf_lab`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) to stdout (e.g. `scx_eevdf_lab man | man -l -`).
    Man,
    /// One task of a bench workload in --processes mode (started by `bench`).
    #[command(hide = true)]
    Worker(crate::bench::workloads::WorkerArgs),
    /// One part of a bench workload, run in its cgroup (started by `bench`).
    #[command(hide = true)]
    Part(crate::bench::workloads::PartArgs),
    /// Create many tasks at once and many short-lived ones; exit status 1 if any could not be
    /// created or did not run (the guest tests' check of the per-task bookkeeping).
    #[command(hide = true)]
    Spawn(crate::spawn::SpawnArgs),
}

#[derive(Debug, clap::Args)]
pub struct MonitorArgs {
    /// Seconds between samples.
    #[arg(default_value_t = 1.0)]
    pub interval: f64,
    /// One JSON object per sample.
    #[arg(long)]
    pub json: bool,
    /// Stop after this many samples (the first one covers the time since attach).
    #[arg(long)]
    pub count: Option<u64>,
    /// Print only these counters' values, space-separated, one line per sample.
    #[arg(long = "field", value_name = "NAME")]
    pub fields: Vec<String>,
}

fn features_help() -> String {
    let mut s = String::from("Features (default first; * marks the lab's own knobs):\n");
    for f in features::FEATURES {
        let mark = if f.in_kernel { ' ' } else { '*' };
        let state = if f.default_on { "on " } else { "off" };
        let mirror = match f.mirror {
            Mirror::Exact => String::new(),
            Mirror::Approx(why) => format!(" [approximation: {why}]"),
            Mirror::Inert(why) => format!(" [no effect in sched_ext: {why}]"),
        };
        s.push_str(&format!(
            "  {mark}{:<24} {state}  {}{mirror}\n",
            f.name, f.help
        ));
    }
    s
}

fn tunables_help() -> String {
    let mut s = String::from("Tunables:\n");
    for t in tunables::TUNABLES {
        s.push_str(&format!("  {:<18} {}  {}\n", t.name, t.range(), t.help));
    }
    s
}

pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.cmd {
        None if cli.daemon.help_stats => stats::describe()?,
        None if cli.daemon.monitor.is_some() => {
            let secs = cli.daemon.monitor.unwrap_or(1.0);
            input::positive_secs("--monitor", secs, MAX_INTERVAL_S)?;
            monitor(&MonitorArgs {
                interval: secs,
                json: false,
                count: None,
                fields: vec![],
            })?;
        }
        None => {
            if let Some(secs) = cli.daemon.stats {
                input::positive_secs("--stats", secs, MAX_INTERVAL_S)?;
            }
            let start = start_knobs(&cli.daemon)?;
            sched::run(&sched::RunOpts {
                exit_dump_len: cli.daemon.exit_dump_len,
                verbose: cli.verbose,
                features: start.0,
                tunables: start.1,
                stats_interval: cli.daemon.stats,
                measure_scan: cli.daemon.measure_scan,
                bpf_stats: cli.daemon.bpf_stats,
            })?;
        }
        Some(Cmd::Monitor(args)) => monitor(&args)?,
        Some(Cmd::Features { tokens }) => cmd_features(&tokens)?,
        Some(Cmd::Get { name, choices }) => cmd_get(name.as_deref(), choices)?,
        Some(Cmd::Set { assignments }) => cmd_set(&assignments)?,
        Some(Cmd::Bench(args)) => return crate::bench::run(*args),
        Some(Cmd::Restore) => cmd_restore()?,
        Some(Cmd::Worker(args)) => crate::bench::workloads::worker_main(args)?,
        Some(Cmd::Part(args)) => crate::bench::workloads::part_main(args)?,
        Some(Cmd::Spawn(args)) => {
            if !crate::spawn::run(&args)? {
                return Ok(ExitCode::FAILURE);
            }
        }
        Some(Cmd::DiffKernel) => return cmd_diff_kernel(),
        Some(Cmd::Completions { shell }) => {
            let mut cmd = Cli::command();
            let name = cmd.get_name().to_string();
            clap_complete::generate(shell, &mut cmd, name, &mut std::io::stdout());
        }
        Some(Cmd::Man) => clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout())?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The longest interval between stats samples, seconds.
const MAX_INTERVAL_S: f64 = 3600.0;

fn monitor(args: &MonitorArgs) -> Result<()> {
    let interval = input::positive_secs("the interval", args.interval, MAX_INTERVAL_S)?;
    monitor::check_fields(&args.fields).map_err(input::bad)?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s = stop.clone();
    ctrlc::set_handler(move || s.store(true, std::sync::atomic::Ordering::Relaxed))?;
    monitor::monitor(interval, args.json, args.count, &args.fields, || {
        stop.load(std::sync::atomic::Ordering::Relaxed)
    })
}

/// The features and tunables the daemon starts with: defaults (or the kernel's), then options.
fn start_knobs(args: &DaemonArgs) -> Result<(FeatureSet, Tunables)> {
    let ncpus = online_cpus();
    let (mut feats, mut tun) = (FeatureSet::defaults(), kernel::host_defaults(ncpus));
    if args.match_kernel {
        let snap = kernel::KnobSnapshot::read()?;
        let (k, unknown) = snap.feature_set();
        if !unknown.is_empty() {
            log::warn!(
                "the kernel has features the lab does not mirror: {}",
                unknown.join(" ")
            );
        }
        feats = k;
        tun = snap.tunables(ncpus)?;
    }
    Ok((feats.apply(&args.features)?, tun.apply(&args.set, ncpus)?))
}

fn cmd_features(tokens: &[String]) -> Result<()> {
    if tokens.is_empty() {
        return show_features();
    }
    // Parse before looking for the scheduler: bad input changes nothing, running lab or not.
    features::parse_tokens(tokens)?;
    let ctl = Control::open()?;
    let (before, after) = ctl.update(|k| {
        k.features = k.features.apply(tokens)?;
        Ok(())
    })?;
    let changed = before.features.diff_tokens(&after.features);
    if changed.is_empty() {
        eprintln!("no change");
    } else {
        eprintln!("changed: {}", changed.join(" "));
    }
    Ok(())
}

/// The running lab's features line or, when the lab cannot be read, the kernel's with a note.
fn show_features() -> Result<()> {
    let lab_err = match Control::open().and_then(|c| c.read()) {
        Ok(k) => {
            println!("{}", k.features.to_line());
            return Ok(());
        }
        Err(e) => e,
    };
    match kernel::read_features_line() {
        Ok(line) => {
            eprintln!("note: {lab_err:#}; these are the kernel's own features");
            println!("{line}");
            Ok(())
        }
        Err(e) => bail!("{lab_err:#}; and {e:#}"),
    }
}

fn cmd_restore() -> Result<()> {
    use crate::bench::journal;
    let path = std::path::Path::new(journal::PATH);
    if !path.exists() {
        eprintln!("nothing to restore: no bench journal at {}", journal::PATH);
        return Ok(());
    }
    crate::preflight::require_root()?;
    match journal::recover(path)? {
        None => eprintln!("nothing to restore: no bench journal at {}", journal::PATH),
        Some((pid, done)) => {
            for d in &done {
                println!("{d}");
            }
            eprintln!(
                "put back what bench pid {pid} had changed{}",
                if done.is_empty() {
                    " (nothing had changed)"
                } else {
                    ""
                }
            );
        }
    }
    Ok(())
}

fn cmd_get(name: Option<&str>, choices: bool) -> Result<()> {
    if let Some(n) = name
        && !tunables::TUNABLES.iter().any(|t| t.name == n)
    {
        return Err(input::bad_msg(format!(
            "unknown tunable {n:?}; tunables: {}",
            tunable_names()
        )));
    }
    let k = Control::open()?.read()?;
    match name {
        Some(n) => match if choices {
            k.tunables.listing(n)
        } else {
            k.tunables.show(n)
        } {
            Some(v) => println!("{v}"),
            None => bail!("the running scheduler has no tunable {n:?}"),
        },
        None => {
            for a in k.tunables.to_assignments() {
                println!("{a}");
            }
        }
    }
    Ok(())
}

fn tunable_names() -> String {
    tunables::TUNABLES
        .iter()
        .map(|t| t.name)
        .collect::<Vec<_>>()
        .join(" ")
}

fn cmd_set(assignments: &[String]) -> Result<()> {
    tunables::parse_assignments(assignments)?;
    let ncpus = online_cpus();
    let ctl = Control::open()?;
    let (before, after) = ctl.update(|k| {
        k.tunables = k.tunables.apply(assignments, ncpus)?;
        Ok(())
    })?;
    for (b, a) in before
        .tunables
        .to_assignments()
        .iter()
        .zip(after.tunables.to_assignments())
    {
        if *b != a {
            eprintln!("{b} -> {}", a.split_once('=').map(|x| x.1).unwrap_or(""));
        }
    }
    Ok(())
}

/// Prints the differences: exit status 0 when there are none, 1 when there are. When only one
/// side is readable there is nothing to compare: it says so, shows that side's features line
/// and exits 2 (neither "same" nor "different"); neither side readable is an error.
/// diff-kernel's exit status when only one side could be read.
const NOTHING_COMPARED: u8 = 2;

fn cmd_diff_kernel() -> Result<ExitCode> {
    let (ours, snap) = match (
        Control::open().and_then(|c| c.read()),
        kernel::KnobSnapshot::read(),
    ) {
        (Ok(ours), Ok(snap)) => (ours, snap),
        (Err(lab), Ok(snap)) => {
            eprintln!("nothing to compare: {lab:#}");
            println!("kernel: {}", snap.features);
            return Ok(ExitCode::from(NOTHING_COMPARED));
        }
        (Ok(ours), Err(k)) => {
            eprintln!("nothing to compare: {k:#}");
            println!("lab: {}", ours.features.to_line());
            return Ok(ExitCode::from(NOTHING_COMPARED));
        }
        (Err(lab), Err(k)) => bail!("nothing to compare: {lab:#}; and {k:#}"),
    };
    let (theirs, unknown) = snap.feature_set();
    let mut same = true;
    diff_row("", "lab", "kernel");
    for f in features::FEATURES.iter().filter(|f| f.in_kernel) {
        let (a, b) = (ours.features.is_on(f), theirs.is_on(f));
        if a != b {
            same = false;
            diff_row(f.name, onoff(a), onoff(b));
        }
    }
    let kt = snap.tunables(online_cpus())?;
    for t in tunables::TUNABLES {
        let (a, b) = (ours.tunables.show(t.name), kt.show(t.name));
        if a != b {
            same = false;
            diff_row(t.name, &fmt_opt(a), &fmt_opt(b));
        }
    }
    for u in &unknown {
        diff_row(u, "-", "(not mirrored)");
    }
    if same {
        println!("(no differences)");
        return Ok(ExitCode::SUCCESS);
    }
    Ok(ExitCode::from(1))
}

/// One line of the diff-kernel table: the knob, the lab's value, the kernel's.
fn diff_row(name: &str, lab: &str, kernel: &str) {
    println!("{name:<24} {lab:>12} {kernel:>12}");
}

fn onoff(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

fn fmt_opt(v: Option<String>) -> String {
    v.unwrap_or_else(|| "-".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Malformed and oversized input to every subcommand is refused as bad input (exit status
    /// 2) with one bounded line, before anything is looked up: these run on a host without
    /// sched_ext, debugfs or root.
    #[test]
    fn bad_input_is_refused_before_anything_happens() {
        let big = "A".repeat(100_000);
        let cases: Vec<Vec<String>> = [
            "--features NO_SUCH",
            "--set base_slice_ns=10",
            "--set nr_migrate=x",
            "--stats 0",
            "--monitor 1e300",
            "features NO_SUCH",
            "features DELAY_ZERO NO_",
            "set base_slice_ns",
            "set nope=1",
            "set base_slice_ns=-5",
            "set base_slice_ns=99999999999999999999999",
            "set tunable_scaling=3",
            "get nope",
            "monitor 0",
            "monitor nan",
            "monitor inf",
            "monitor --count 1 --field nope",
            "bench nope",
            "bench eevdf:NO_SUCH",
            "bench eevdf:DELAY_WAKE_COLD",
            "bench lab,base_slice_ns=abc",
            "bench lab,preempt=sometimes",
            "bench lab,cgroup_mode=flat",
            "bench scx:",
            "bench eevdf eevdf",
            "bench -w nope",
            "bench -w pingpong:pairs=0",
            "bench -w pingpong:nokey=1",
            "bench -w pingpong:pairs",
            "bench -w ,",
            "bench --runs 0",
            "bench --runs 20000",
            "bench --window 0",
            "bench --warmup 1e9",
            "bench --max-run=-1",
            "bench --bootstrap 5",
            "bench --fidelity NO_SUCH",
            "bench --fidelity DELAY_WAKE_COLD",
            "bench --fidelity PLACE_LAG eevdf",
            "bench --processes -w schlat",
        ]
        .iter()
        .map(|c| c.split(' ').map(String::from).collect())
        .chain([
            vec!["features".into(), big.clone()],
            vec!["set".into(), format!("base_slice_ns={big}")],
            vec!["get".into(), big.clone()],
            vec!["bench".into(), big.clone()],
            vec!["bench".into(), "-w".into(), format!("pingpong:{big}")],
            vec!["monitor".into(), "--field".into(), big.clone()],
        ])
        .collect();
        for args in cases {
            let shown = args.join(" ").chars().take(60).collect::<String>();
            let cli = Cli::try_parse_from(std::iter::once("scx_eevdf_lab".to_string()).chain(args))
                .unwrap_or_else(|e| panic!("{shown}: clap refused it: {e}"));
            let e = run(cli)
                .err()
                .unwrap_or_else(|| panic!("{shown}: accepted"));
            assert!(crate::input::is_bad(&e), "{shown}: not bad input: {e:#}");
            let line = crate::input::one_line(&format!("{e:#}"));
            assert!(
                line.len() <= 4 * crate::input::MAX_LINE,
                "{shown}: {} bytes",
                line.len()
            );
        }
    }

    /// What clap refuses (exit status 2 in main) covers the rest: unknown subcommands and
    /// options, non-numbers where a number is expected, extra arguments.
    #[test]
    fn clap_refuses_malformed_command_lines() {
        for c in [
            "restore-all",
            "monitor --count abc",
            "monitor --count -1",
            "diff-kernel extra",
            "man extra",
            "completions bogus",
            "bench --order bogus",
            "bench --seed x",
            "bench --runs -1",
            "--exit-dump-len x",
            "set",
        ] {
            let args = std::iter::once("scx_eevdf_lab").chain(c.split(' '));
            assert!(Cli::try_parse_from(args).is_err(), "{c}");
        }
    }
}
