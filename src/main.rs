//! scx_eevdf_lab: a sched_ext mirror of Linux's EEVDF with live feature flags, and an A/B lab
//! that compares it with the kernel's own EEVDF.

mod bench;
mod bpf_intf;
mod bpf_skel;
mod bpfstats;
mod cli;
mod control;
#[cfg(test)]
mod domain_tests;
mod eevdf;
#[cfg(test)]
mod eevdf_tests;
mod events;
mod features;
mod input;
mod kernel;
mod monitor;
mod preflight;
mod sched;
#[cfg(test)]
mod select_tests;
mod spawn;
mod stats;
mod sysfs;
mod topology;
mod tunables;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = match cli::Cli::try_parse() {
        Ok(a) => a,
        Err(e) => return usage_error(e),
    };
    init_log(args.verbose);
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!(
                "scx_eevdf_lab: error: {}",
                input::one_line(&format!("{e:#}"))
            );
            if input::is_bad(&e) {
                ExitCode::from(input::EXIT_BAD_INPUT)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// A command line clap refused: its first line, bounded, and exit status 2 (help and version
/// requests print as clap prints them).
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or("invalid command line");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    eprintln!(
        "scx_eevdf_lab: error: {} (try --help)",
        input::one_line(first)
    );
    ExitCode::from(input::EXIT_BAD_INPUT)
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
