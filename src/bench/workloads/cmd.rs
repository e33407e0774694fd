//! `cmd`: any command as a workload, with its metric taken from its output:
//! `cmd:'COMMAND':metric=REGEX:better=higher|lower[:name=NAME][:unit=UNIT][:mean=KIND]`.
//!
//! The command runs under `/bin/sh -c` in its own process group, like the external tools
//! (rusage from `wait4`, killed at the run limit or on interrupt). The metric is the first
//! match of REGEX in its standard output, else in its standard error: the regex's first capture
//! group when it has one, else the whole match, read as a number. A command that exits non-zero,
//! or whose output has no such number, makes the run invalid with the reason. Quote the command
//! or the regex when it holds `:` or `,`.

use super::spec::{split_outside_quotes, unquote};
use super::{Key, Measurement, MetricDef, Params, RunConfig, Workload, key};
use crate::bench::counters::{Counters, Snapshot};
use crate::bench::stats::{Better, MeanKind};
use anyhow::{Context, Result, bail};
use regex::Regex;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

pub const KEYS: &[Key] = &[
    key(
        "metric",
        "regex whose first group (or whole match) is the run's number",
    ),
    key(
        "better",
        "higher or lower: which direction is an improvement",
    ),
    key("name", "the metric's name in the report"),
    key("unit", "the metric's unit"),
    key("mean", "harmonic (rates), arithmetic (times) or median"),
];

/// How the spec is written, for the errors.
pub const SYNTAX: &str =
    "cmd:'COMMAND':metric=REGEX:better=higher|lower[:name=NAME][:unit=UNIT][:mean=KIND]";

/// The shell that runs the command.
const SHELL: &str = "/bin/sh";

pub struct Cmd {
    command: String,
    regex: Regex,
    metric: MetricDef,
}

impl Cmd {
    pub fn new(spec: &str) -> Result<Self> {
        let items = split_outside_quotes(spec, ':')?;
        let command = unquote(items.first().map(String::as_str).unwrap_or(""));
        let starts_with_key = KEYS
            .iter()
            .any(|k| command.starts_with(&format!("{}=", k.name)));
        if command.trim().is_empty() || starts_with_key {
            bail!("cmd: the command comes first: {SYNTAX}");
        }
        let p =
            Params::parse(&items[1..].join(":"), KEYS).with_context(|| format!("cmd: {SYNTAX}"))?;
        let re = p
            .opt("metric")
            .with_context(|| format!("cmd: metric=REGEX is required: {SYNTAX}"))?;
        let regex = Regex::new(re).with_context(|| format!("cmd: metric={re:?} is not a regex"))?;
        if regex.captures_len() > 2 {
            bail!("cmd: metric={re:?} has more than one capture group; the first would be taken");
        }
        let better = match p.opt("better") {
            Some("higher") => Better::Higher,
            Some("lower") => Better::Lower,
            Some(b) => bail!("cmd: better={b:?}: expected higher or lower"),
            None => bail!("cmd: better=higher or better=lower is required: {SYNTAX}"),
        };
        let mean = match p.str("mean", "arithmetic") {
            "harmonic" => MeanKind::Harmonic,
            "arithmetic" => MeanKind::Arithmetic,
            "median" => MeanKind::Median,
            m => bail!("cmd: mean={m:?}: expected harmonic, arithmetic or median"),
        };
        let name = p.str("name", "value").to_string();
        if name.is_empty() || name.contains([',', ' ']) {
            bail!("cmd: name={name:?}: a metric name is one word");
        }
        Ok(Cmd {
            command,
            regex,
            metric: MetricDef {
                name: Cow::Owned(name),
                unit: Cow::Owned(p.str("unit", "").to_string()),
                better,
                mean,
            },
        })
    }

    /// The metric in the command's output: stdout first, then stderr.
    pub fn extract(&self, stdout: &str, stderr: &str) -> Result<f64> {
        for text in [stdout, stderr] {
            let Some(c) = self.regex.captures(text) else {
                continue;
            };
            let m = c.get(1).or_else(|| c.get(0)).map_or("", |m| m.as_str());
            return m.trim().parse::<f64>().with_context(|| {
                format!(
                    "metric={:?} matched {m:?}, which is not a number",
                    self.regex.as_str()
                )
            });
        }
        bail!(
            "metric={:?} matched nothing in the command's output",
            self.regex.as_str()
        )
    }
}

impl Workload for Cmd {
    fn name(&self) -> &'static str {
        "cmd"
    }

    fn describe(&self) -> String {
        format!(
            "command: {} ({} from /{}/)",
            self.command,
            self.metric.name,
            self.regex.as_str()
        )
    }

    fn keys(&self) -> &'static [Key] {
        KEYS
    }

    fn params(&self) -> BTreeMap<String, String> {
        let better = match self.metric.better {
            Better::Higher => "higher",
            Better::Lower => "lower",
        };
        BTreeMap::from([
            ("metric".into(), self.regex.as_str().to_string()),
            ("better".into(), better.into()),
            ("name".into(), self.metric.name.to_string()),
            ("unit".into(), self.metric.unit.to_string()),
            ("mean".into(), self.metric.mean.label().to_lowercase()),
        ])
    }

    fn self_timed(&self) -> bool {
        true
    }

    fn runs_program(&self) -> bool {
        true
    }

    fn metrics(&self) -> Vec<MetricDef> {
        vec![self.metric.clone()]
    }

    fn run(&self, rc: &RunConfig) -> Result<Measurement> {
        let limit = rc.max_run.max(Duration::from_secs(1));
        // In a composite the command starts when the window opens for all parts.
        if let Some(g) = &rc.gate {
            g.ready()?;
            g.warm();
            g.wait_window()?;
        }
        let s0 = Snapshot::take(&[]);
        let t0 = Instant::now();
        let run = super::external::run_tool(
            Path::new(SHELL),
            &["-c".to_string(), self.command.clone()],
            limit,
            rc,
        );
        let elapsed = t0.elapsed().as_secs_f64();
        let s1 = Snapshot::take(&[]);
        if let (Some(g), Ok((0, ..))) = (&rc.gate, &run) {
            g.finished();
        }
        let mut m = Measurement {
            elapsed_s: elapsed,
            ..Default::default()
        };
        m.extra
            .insert("command".into(), serde_json::json!(self.command));
        let (code, ru, stdout, stderr) = match run {
            Ok(r) => r,
            Err(e) => {
                m.invalid.push(format!("{e:#}"));
                return Ok(m);
            }
        };
        m.counters = Counters::from_rusage(&ru);
        m.counters.add_system(&s0, &s1);
        if code != 0 {
            m.invalid.push(format!(
                "the command exited with {code}: {}",
                stderr.lines().last().unwrap_or("")
            ));
            return Ok(m);
        }
        match self.extract(&stdout, &stderr) {
            Ok(v) => {
                m.metrics.insert(self.metric.name.to_string(), v);
            }
            Err(e) => m.invalid.push(format!("{e:#}")),
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::workloads::testutil::quick_rc;

    #[test]
    fn parses_the_spec_with_quotes() {
        let c = Cmd::new(
            "'perf bench sched pipe -l 1000':metric='([0-9.]+) usecs/op':better=lower:unit=µs",
        )
        .unwrap();
        assert_eq!(c.command, "perf bench sched pipe -l 1000");
        assert_eq!(c.metric.better, Better::Lower);
        assert_eq!(
            (c.metric.name.as_ref(), c.metric.unit.as_ref()),
            ("value", "µs")
        );
        assert_eq!(
            c.extract("     1119.501500 usecs/op\n", "").unwrap(),
            1119.5015
        );
        // A regex holding ':' and ',' when quoted; no group: the whole match.
        let d = Cmd::new("'echo a: 1,5':metric='[0-9]+,[0-9]':better=higher:name=ab").unwrap();
        assert!(d.extract("x", "a: 1,5").is_err(), "1,5 is not a number");
        let e = Cmd::new("true:metric=[0-9]+:better=higher").unwrap();
        assert_eq!(e.extract("no digits", "took 42 ms").unwrap(), 42.0);
    }

    #[test]
    fn bad_specs_are_refused_with_the_syntax() {
        for (spec, want) in [
            ("", "the command comes first"),
            ("metric=x:better=lower", "the command comes first"),
            ("'true'", "metric=REGEX is required"),
            (
                "'true':metric=x",
                "better=higher or better=lower is required",
            ),
            ("'true':metric=x:better=up", "expected higher or lower"),
            ("'true':metric=(:better=lower", "is not a regex"),
            (
                "'true':metric=(a)(b):better=lower",
                "more than one capture group",
            ),
            ("'true':metric=x:better=lower:mean=geo", "expected harmonic"),
            (
                "'true':metric=x:better=lower:colour=red",
                "unknown parameter",
            ),
            ("'true:metric=x", "unbalanced single quote"),
        ] {
            let e = format!("{:#}", Cmd::new(spec).err().expect(spec));
            assert!(e.contains(want), "{spec:?}: {e}");
        }
    }

    #[test]
    fn runs_a_command_and_reads_its_number() {
        let c = Cmd::new("'echo took 12.5 ms':metric='took ([0-9.]+)':better=lower").unwrap();
        let m = c.run(&quick_rc()).unwrap();
        assert!(m.invalid.is_empty(), "{:?}", m.invalid);
        assert_eq!(m.metrics["value"], 12.5);
        assert!(m.counters.system_switches.is_some());
        let bad = Cmd::new("'echo nothing; exit 3':metric=x:better=lower").unwrap();
        let m = bad.run(&quick_rc()).unwrap();
        assert!(m.invalid[0].contains("exited with 3"), "{:?}", m.invalid);
        let none = Cmd::new("'echo nothing':metric='([0-9]+)':better=lower").unwrap();
        let m = none.run(&quick_rc()).unwrap();
        assert!(m.invalid[0].contains("matched nothing"), "{:?}", m.invalid);
    }
}
