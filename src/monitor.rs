//! The client side of the scheduler's stats: `monitor`, `--monitor` and `--stats` ask the
//! daemon's scx_stats server (src/stats/) for samples and print them.

use crate::stats::{COUNTERS, GAUGES, Metrics};
use anyhow::{Context, Result, bail};
use scx_stats::prelude::*;
use std::io::Write;
use std::time::Duration;

/// Where scx_stats serves (its default path, shared by every scx scheduler).
const SOCKET_PATH: &str = "/var/run/scx/root/stats";

/// Removes the daemon's stats socket (it stays behind otherwise) when it is one.
pub fn remove_socket() {
    use std::os::unix::fs::FileTypeExt;
    if std::fs::symlink_metadata(SOCKET_PATH).is_ok_and(|m| m.file_type().is_socket()) {
        let _ = std::fs::remove_file(SOCKET_PATH);
    }
}

/// How long a stats request waits for the daemon's answer (it answers at once unless it is
/// stopped or stuck).
const STATS_TIMEOUT: Duration = Duration::from_secs(10);

/// What a failed stats request means for the user.
fn request_failed(e: &anyhow::Error) -> String {
    if e.to_string().ends_with("timed out") {
        format!(
            "the scheduler daemon did not answer the stats request within {} s (is it stopped?)",
            STATS_TIMEOUT.as_secs()
        )
    } else {
        "stats request".into()
    }
}

/// Fails on a `--field` name that is not a counter.
pub fn check_fields(fields: &[String]) -> Result<()> {
    for f in fields {
        if !COUNTERS.contains(&f.as_str()) && !GAUGES.contains(&f.as_str()) && f != "interval_s" {
            bail!(
                "unknown stats field {f:?}; fields: {} {}",
                COUNTERS.join(" "),
                GAUGES.join(" ")
            );
        }
    }
    Ok(())
}

/// Client side of `monitor`/`--monitor`/`--stats`: print a sample every `interval` until
/// `should_exit`, or `count` samples. With `fields`, print only those counters' values.
///
/// Without a count it waits for the scheduler to come (back), like scx's monitors; with a
/// count (scripts, tests) it gives up after a few seconds without a stats server.
pub fn monitor(
    interval: Duration,
    json: bool,
    count: Option<u64>,
    fields: &[String],
    mut should_exit: impl FnMut() -> bool,
) -> Result<()> {
    check_fields(fields)?;
    let mut n = 0u64;
    let mut waited = 0u32;
    let mut first = true;
    let mut warned = false;
    while !should_exit() && count.is_none_or(|c| n < c) {
        let mut client = match StatsClient::new().connect(Some(STATS_TIMEOUT.as_millis() as u64)) {
            Ok(c) => c,
            Err(e) => {
                waited += 1;
                if count.is_some() && waited > 5 {
                    return Err(e).context(
                        "no stats server at /var/run/scx/root/stats: is scx_eevdf_lab running?",
                    );
                }
                if waited == 2 {
                    log::info!("waiting for the scheduler's stats server...");
                }
                std::thread::sleep(Duration::from_secs(1));
                continue;
            }
        };
        waited = 0;
        while !should_exit() && count.is_none_or(|c| n < c) {
            let m: Metrics = match client.request("stats", vec![]) {
                Ok(m) => m,
                Err(e) if count.is_some() => {
                    let what = request_failed(&e);
                    return Err(e).context(what);
                }
                Err(e) => {
                    if !warned {
                        log::warn!("{}; retrying", request_failed(&e));
                        warned = true;
                    }
                    break;
                }
            };
            warned = false;
            n += 1;
            let mut out = std::io::stdout().lock();
            if !fields.is_empty() {
                let vals: Vec<String> = fields
                    .iter()
                    .map(|f| {
                        m.counter(f)
                            .map(|v| v.to_string())
                            .unwrap_or_else(|| m.interval_s.to_string())
                    })
                    .collect();
                writeln!(out, "{}", vals.join(" "))?;
            } else if json {
                writeln!(out, "{}", serde_json::to_string(&m)?)?;
            } else {
                if !first {
                    writeln!(out)?;
                }
                m.format(&mut out)?;
            }
            out.flush()?;
            first = false;
            if count.is_none_or(|c| n < c) {
                std::thread::sleep(interval);
            }
        }
    }
    Ok(())
}
