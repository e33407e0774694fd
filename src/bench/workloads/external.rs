//! External benchmark tools, driven when installed: `stress-ng --pipe` (always with an explicit
//! `--pipe-data-size`, recording its version: the default write size changed between versions),
//! rt-tests `hackbench`, and `perf bench sched pipe|messaging`.
//!
//! The tool runs in its own process group with its output in temporary files; the bench polls
//! it with `wait4` (for its rusage: switch counts of the tool and the children it reaped) and
//! kills the group on interrupt or at the run limit. Nothing here is required: a missing tool is
//! a clear error for that workload only.

use super::{Key, Measurement, MetricDef, Params, RunConfig, Workload, key, metric};
use crate::bench::counters::{Counters, Snapshot};
use crate::bench::stats::{Better, MeanKind};
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
enum Tool {
    StressNgPipe {
        instances: u64,
        size: u64,
    },
    Hackbench {
        groups: u64,
        loops: u64,
        pipes: bool,
        threads: bool,
    },
    PerfPipe {
        loops: u64,
        threads: bool,
    },
    PerfMessaging {
        groups: u64,
        loops: u64,
        pipes: bool,
        threads: bool,
    },
}

pub struct External {
    name: &'static str,
    tool: Tool,
}

/// Finds an executable on PATH.
pub fn which(bin: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(bin))
        .find(|p| p.is_file() && is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

const STRESS_NG_PIPE_KEYS: &[Key] = &[
    key("instances", "stress-ng's --pipe N: writer/reader pairs"),
    key("size", "--pipe-data-size: bytes per write"),
];

const MESSAGING_KEYS: &[Key] = &[
    key("groups", "groups of senders and receivers"),
    key("loops", "messages each sender writes to each receiver"),
    key("transport", "socket or pipe"),
    key("mode", "process or thread"),
];

const PERF_PIPE_KEYS: &[Key] = &[
    key("loops", "round trips"),
    key("mode", "process or thread"),
];

impl External {
    pub fn new(name: &str, spec: &str, quick: bool) -> Result<Self> {
        let (name, tool): (&'static str, Tool) = match name {
            "stress-ng-pipe" => {
                let p = Params::parse(spec, STRESS_NG_PIPE_KEYS)?;
                let t = Tool::StressNgPipe {
                    instances: p.u64("instances", 1)?.max(1),
                    size: p.u64("size", 512)?,
                };
                ("stress-ng-pipe", t)
            }
            "hackbench" | "perf-messaging" => {
                let p = Params::parse(spec, MESSAGING_KEYS)?;
                let (g, l) = if quick { (2, 50) } else { (4, 100) };
                let (groups, loops) = (p.u64("groups", g)?.max(1), p.u64("loops", l)?.max(1));
                let pipes = transport(p.str("transport", "socket"))?;
                let threads = mode(p.str("mode", "process"))?;
                if name == "hackbench" {
                    (
                        "hackbench",
                        Tool::Hackbench {
                            groups,
                            loops,
                            pipes,
                            threads,
                        },
                    )
                } else {
                    (
                        "perf-messaging",
                        Tool::PerfMessaging {
                            groups,
                            loops,
                            pipes,
                            threads,
                        },
                    )
                }
            }
            "perf-pipe" => {
                let p = Params::parse(spec, PERF_PIPE_KEYS)?;
                let t = Tool::PerfPipe {
                    loops: p.u64("loops", if quick { 20_000 } else { 200_000 })?.max(1),
                    threads: mode(p.str("mode", "process"))?,
                };
                ("perf-pipe", t)
            }
            _ => bail!("{name} is not an external workload"),
        };
        Ok(External { name, tool })
    }

    fn binary(&self) -> &'static str {
        match self.tool {
            Tool::StressNgPipe { .. } => "stress-ng",
            Tool::Hackbench { .. } => "hackbench",
            Tool::PerfPipe { .. } | Tool::PerfMessaging { .. } => "perf",
        }
    }

    fn args(&self, rc: &RunConfig, yaml: &Path) -> Vec<String> {
        let s = |x: &str| x.to_string();
        match &self.tool {
            Tool::StressNgPipe { instances, size } => vec![
                s("--pipe"),
                instances.to_string(),
                s("--pipe-data-size"),
                size.to_string(),
                s("-t"),
                format!("{}s", rc.window.as_secs_f64().round().max(1.0) as u64),
                s("--metrics-brief"),
                s("-Y"),
                yaml.display().to_string(),
            ],
            Tool::Hackbench {
                groups,
                loops,
                pipes,
                threads,
            } => {
                let mut v = vec![s("-g"), groups.to_string(), s("-l"), loops.to_string()];
                if *pipes {
                    v.push(s("-p"));
                }
                v.push(s(if *threads { "-T" } else { "-P" }));
                v
            }
            Tool::PerfPipe { loops, threads } => {
                let mut v = vec![s("bench"), s("--format=simple"), s("sched"), s("pipe")];
                v.extend([s("-l"), loops.to_string()]);
                if *threads {
                    v.push(s("-T"));
                }
                v
            }
            Tool::PerfMessaging {
                groups,
                loops,
                pipes,
                threads,
            } => {
                let mut v = vec![s("bench"), s("--format=simple"), s("sched"), s("messaging")];
                v.extend([s("-g"), groups.to_string(), s("-l"), loops.to_string()]);
                if *pipes {
                    v.push(s("-p"));
                }
                if *threads {
                    v.push(s("-t"));
                }
                v
            }
        }
    }
}

fn transport(t: &str) -> Result<bool> {
    match t {
        "socket" => Ok(false),
        "pipe" => Ok(true),
        _ => bail!("transport={t:?}: expected socket or pipe"),
    }
}

fn mode(t: &str) -> Result<bool> {
    match t {
        "process" => Ok(false),
        "thread" => Ok(true),
        _ => bail!("mode={t:?}: expected process or thread"),
    }
}

/// The tool's version line (first line of `--version`), or None.
pub fn version(bin: &Path) -> Option<String> {
    let out = Command::new(bin)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    text.lines()
        .next()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
}

/// `bogo-ops-per-second-real-time` of stress-ng's YAML (`-Y`), a flat key: value list.
pub fn parse_stress_ng_yaml(text: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("bogo-ops-per-second-real-time:"))
        .and_then(|v| v.trim().parse().ok())
}

/// hackbench's `Time: 0.890`.
pub fn parse_hackbench(text: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Time:"))
        .and_then(|v| v.trim().parse().ok())
}

/// `perf bench --format=simple` prints the total time in seconds as the last number.
pub fn parse_perf_simple(text: &str) -> Option<f64> {
    text.split_whitespace()
        .rev()
        .find_map(|w| w.parse::<f64>().ok())
}

/// Runs a command to completion within `limit`; returns (exit status, rusage, stdout, stderr).
/// It starts in `rc.program_cgroup` when that is set (moved there between fork and exec), and
/// is killed when the run is to stop ([`RunConfig::stopping`]).
pub(super) fn run_tool(
    bin: &Path,
    args: &[String],
    limit: Duration,
    rc: &RunConfig,
) -> Result<(i32, libc::rusage, String, String)> {
    let dir = std::env::temp_dir();
    let tag = format!("lab-bench-{}-{}", std::process::id(), super::mono_ns());
    let (out_p, err_p) = (
        dir.join(format!("{tag}.out")),
        dir.join(format!("{tag}.err")),
    );
    let out = std::fs::File::create(&out_p).context("cannot create a temporary file")?;
    let err = std::fs::File::create(&err_p).context("cannot create a temporary file")?;
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    if let Some(group) = &rc.program_cgroup {
        let procs = crate::bench::cgroup::procs_file(group)?;
        // SAFETY: enter() makes only async-signal-safe calls.
        unsafe { cmd.pre_exec(move || crate::bench::cgroup::enter(&procs)) };
    }
    let child = cmd
        .spawn()
        .with_context(|| format!("cannot start {}", bin.display()))?;
    let pid = child.id() as libc::pid_t;
    // Reaped below with wait4, which also gives its rusage.
    std::mem::forget(child);
    let start = Instant::now();
    // SAFETY: rusage is plain old data.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let mut status = 0;
    let mut killed = None;
    loop {
        // SAFETY: pid is our unreaped child.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            break;
        }
        if r < 0 {
            bail!("wait4: {}", std::io::Error::last_os_error());
        }
        if killed.is_none() && (rc.stopping() || start.elapsed() > limit) {
            killed = Some(if crate::bench::interrupted() {
                "interrupted"
            } else if rc.stopping() {
                super::gate::ABORTED
            } else {
                "run limit"
            });
            // SAFETY: signalling the tool's own process group.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let stdout = std::fs::read_to_string(&out_p).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_p).unwrap_or_default();
    let _ = std::fs::remove_file(&out_p);
    let _ = std::fs::remove_file(&err_p);
    if let Some(why) = killed {
        bail!("{} was killed: {why}", bin.display());
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    Ok((code, ru, stdout, stderr))
}

impl Workload for External {
    fn name(&self) -> &'static str {
        self.name
    }

    fn describe(&self) -> String {
        format!("external: {} {}", self.binary(), self.args_preview())
    }

    fn keys(&self) -> &'static [Key] {
        match self.tool {
            Tool::StressNgPipe { .. } => STRESS_NG_PIPE_KEYS,
            Tool::Hackbench { .. } | Tool::PerfMessaging { .. } => MESSAGING_KEYS,
            Tool::PerfPipe { .. } => PERF_PIPE_KEYS,
        }
    }

    fn params(&self) -> BTreeMap<String, String> {
        let transport = |pipes: bool| if pipes { "pipe" } else { "socket" }.to_string();
        let mode = |threads: bool| if threads { "thread" } else { "process" }.to_string();
        let kv: Vec<(&str, String)> = match self.tool {
            Tool::StressNgPipe { instances, size } => {
                vec![
                    ("instances", instances.to_string()),
                    ("size", size.to_string()),
                ]
            }
            Tool::Hackbench {
                groups,
                loops,
                pipes,
                threads,
            }
            | Tool::PerfMessaging {
                groups,
                loops,
                pipes,
                threads,
            } => vec![
                ("groups", groups.to_string()),
                ("loops", loops.to_string()),
                ("transport", transport(pipes)),
                ("mode", mode(threads)),
            ],
            Tool::PerfPipe { loops, threads } => {
                vec![("loops", loops.to_string()), ("mode", mode(threads))]
            }
        };
        kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }

    fn self_timed(&self) -> bool {
        true
    }

    fn runs_program(&self) -> bool {
        true
    }

    fn metrics(&self) -> Vec<MetricDef> {
        match self.tool {
            Tool::StressNgPipe { .. } => {
                vec![metric(
                    "writes_per_s",
                    "bogo ops/s",
                    Better::Higher,
                    MeanKind::Harmonic,
                )]
            }
            Tool::PerfPipe { .. } => {
                vec![metric(
                    "roundtrips_per_s",
                    "round trips/s",
                    Better::Higher,
                    MeanKind::Harmonic,
                )]
            }
            Tool::Hackbench { .. } | Tool::PerfMessaging { .. } => {
                vec![metric("seconds", "s", Better::Lower, MeanKind::Arithmetic)]
            }
        }
    }

    fn run(&self, rc: &RunConfig) -> Result<Measurement> {
        let bin = which(self.binary())
            .with_context(|| format!("{} is not installed (not on PATH)", self.binary()))?;
        let yaml = std::env::temp_dir().join(format!(
            "lab-bench-{}-{}.yaml",
            std::process::id(),
            super::mono_ns()
        ));
        let args = self.args(rc, &yaml);
        let limit = rc.max_run.max(rc.window + Duration::from_secs(10));
        // In a composite the tool starts when the window opens for all parts.
        if let Some(g) = &rc.gate {
            g.ready()?;
            g.warm();
            g.wait_window()?;
        }
        let s0 = Snapshot::take(&[]);
        let t0 = Instant::now();
        let run = run_tool(&bin, &args, limit, rc);
        let elapsed = t0.elapsed().as_secs_f64();
        let s1 = Snapshot::take(&[]);
        if let (Some(g), Ok((0, ..))) = (&rc.gate, &run) {
            g.finished();
        }
        let mut m = Measurement::default();
        m.extra
            .insert("tool".into(), serde_json::json!(bin.display().to_string()));
        m.extra
            .insert("version".into(), serde_json::json!(version(&bin)));
        m.extra.insert("args".into(), serde_json::json!(args));
        let (code, ru, stdout, stderr) = match run {
            Ok(r) => r,
            Err(e) => {
                let _ = std::fs::remove_file(&yaml);
                m.invalid.push(format!("{e:#}"));
                return Ok(m);
            }
        };
        m.counters = Counters::from_rusage(&ru);
        m.counters.add_system(&s0, &s1);
        m.elapsed_s = elapsed;
        if code != 0 {
            m.invalid.push(format!(
                "{} exited with {code}: {}",
                self.binary(),
                stderr.lines().last().unwrap_or("")
            ));
            let _ = std::fs::remove_file(&yaml);
            return Ok(m);
        }
        let value = match &self.tool {
            Tool::StressNgPipe { .. } => {
                let y = std::fs::read_to_string(&yaml).unwrap_or_default();
                parse_stress_ng_yaml(&y).map(|v| ("writes_per_s", v))
            }
            Tool::Hackbench { .. } => parse_hackbench(&stdout).map(|v| ("seconds", v)),
            Tool::PerfMessaging { .. } => parse_perf_simple(&stdout).map(|v| ("seconds", v)),
            Tool::PerfPipe { loops, .. } => parse_perf_simple(&stdout)
                .filter(|&s| s > 0.0)
                .map(|s| ("roundtrips_per_s", *loops as f64 / s)),
        };
        let _ = std::fs::remove_file(&yaml);
        match value {
            Some((k, v)) => {
                m.metrics.insert(k.into(), v);
            }
            None => m.invalid.push(format!(
                "cannot find the result in {}'s output",
                self.binary()
            )),
        }
        Ok(m)
    }
}

impl External {
    fn args_preview(&self) -> String {
        let rc = RunConfig {
            window: Duration::from_secs(1),
            max_run: Duration::from_secs(1),
            ..Default::default()
        };
        let mut a = self.args(&rc, Path::new("FILE"));
        if let Tool::StressNgPipe { .. } = self.tool {
            // The duration follows the window.
            if let Some(i) = a.iter().position(|x| x == "-t") {
                a[i + 1] = "WINDOW".into();
            }
        }
        a.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::workloads::testutil::quick_rc;

    #[test]
    fn parses_tool_outputs() {
        let y = "metrics:\n    - stressor: pipe\n      bogo-ops: 1380630\n      \
                 bogo-ops-per-second-usr-sys-time: 734707.1\n      \
                 bogo-ops-per-second-real-time: 1379950.602895\n";
        assert_eq!(parse_stress_ng_yaml(y), Some(1379950.602895));
        assert_eq!(
            parse_hackbench("Running in process mode\nTime: 0.890\n"),
            Some(0.89)
        );
        assert_eq!(parse_perf_simple("      0.102\n"), Some(0.102));
        assert_eq!(parse_hackbench("nothing"), None);
    }

    #[test]
    fn stress_ng_always_gets_an_explicit_write_size() {
        let w = External::new("stress-ng-pipe", "", true).unwrap();
        let a = w.args(&quick_rc(), Path::new("/tmp/x.yaml"));
        let i = a.iter().position(|x| x == "--pipe-data-size").unwrap();
        assert_eq!(a[i + 1], "512");
        assert!(External::new("hackbench", "transport=carrier", true).is_err());
    }

    #[test]
    fn runs_installed_tools() {
        // Each tool is optional; the ones installed here must give a number.
        for (name, bin) in [
            ("hackbench", "hackbench"),
            ("stress-ng-pipe", "stress-ng"),
            ("perf-pipe", "perf"),
            ("perf-messaging", "perf"),
        ] {
            if which(bin).is_none() {
                continue;
            }
            let w = External::new(name, "", true).unwrap();
            let m = w.run(&quick_rc()).unwrap();
            // perf may be present but not allowed (perf_event_paranoid does not matter for
            // `perf bench`, but a wrapper script without a matching kernel build may fail).
            if bin == "perf" && !m.invalid.is_empty() {
                continue;
            }
            assert!(m.invalid.is_empty(), "{name}: {:?}", m.invalid);
            assert_eq!(m.metrics.len(), 1, "{name}");
            assert!(m.metrics.values().all(|&v| v > 0.0));
            assert!(m.extra.contains_key("version"));
            // The system-wide counters bracket the tool's run.
            assert!(m.counters.system_switches.is_some_and(|s| s > 0), "{name}");
        }
    }
}
