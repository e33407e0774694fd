//! scx_eevdf_lab: a sched_ext mirror of Linux's EEVDF with live feature flags, and an A/B lab
//! that compares it with the kernel's own EEVDF.

mod bpf_intf;
mod bpf_skel;
mod preflight;
mod sched;
mod sysfs;

use clap::Parser;
use std::process::ExitCode;

/// A sched_ext mirror of Linux's EEVDF whose features can be flipped while it runs.
///
/// Without a subcommand, loads and attaches the scheduler and runs until SIGINT/SIGTERM.
#[derive(Debug, Parser)]
#[command(name = "scx_eevdf_lab", version, about, long_about = None)]
struct Cli {
    /// Size of the debug dump printed when the scheduler exits with an error (0 = kernel default).
    #[arg(long, default_value_t = 0)]
    exit_dump_len: u32,

    /// Verbose output, including libbpf's.
    #[arg(short, long)]
    verbose: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_log(cli.verbose);
    let opts = sched::RunOpts { exit_dump_len: cli.exit_dump_len, verbose: cli.verbose };
    match sched::run(&opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("scx_eevdf_lab: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_log(verbose: bool) {
    let level = if verbose { simplelog::LevelFilter::Debug } else { simplelog::LevelFilter::Info };
    let cfg = simplelog::ConfigBuilder::new()
        .set_time_level(simplelog::LevelFilter::Off)
        .set_target_level(simplelog::LevelFilter::Off)
        .set_thread_level(simplelog::LevelFilter::Off)
        .build();
    let _ = simplelog::TermLogger::init(level, cfg, simplelog::TerminalMode::Stderr, simplelog::ColorChoice::Auto);
}
