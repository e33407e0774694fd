//! scx_eevdf_lab: a sched_ext mirror of Linux's EEVDF with live feature flags, and an A/B lab
//! that compares it with the kernel's own EEVDF.

mod bench;
mod bpf_intf;
mod bpf_skel;
mod bpfstats;
mod cli;
mod control;
mod eevdf;
#[cfg(test)]
mod eevdf_tests;
mod events;
mod features;
mod kernel;
mod preflight;
mod sched;
#[cfg(test)]
mod select_tests;
mod spawn;
mod stats;
mod sysfs;
mod topology;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    init_log(args.verbose);
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("scx_eevdf_lab: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_log(verbose: bool) {
    let level = if verbose {
        simplelog::LevelFilter::Debug
    } else {
        simplelog::LevelFilter::Info
    };
    let cfg = simplelog::ConfigBuilder::new()
        .set_time_level(simplelog::LevelFilter::Off)
        .set_target_level(simplelog::LevelFilter::Off)
        .set_thread_level(simplelog::LevelFilter::Off)
        .build();
    let _ = simplelog::TermLogger::init(
        level,
        cfg,
        simplelog::TerminalMode::Stderr,
        simplelog::ColorChoice::Auto,
    );
}
