//! The session's results for people and for machines, from one data structure: the [`Report`]
//! (environment, every raw run, summaries, comparisons), which is the JSON document as it is
//! written, and the checker of that document (`bench --validate`).
//!
//! The statistics are computed in [`analysis`] and turned into the terminal table and the CSV
//! in [`render`]; both are re-exported here.

pub mod analysis;
pub mod render;

pub(crate) use analysis::{
    ArmCounters, ArmSummary, FidelityRow, Pair, analyze, fidelity, fidelity_features, pairs,
};
pub(crate) use render::{csv, table};

use super::arms::{Arm, Baseline};
use super::env::Environment;
use super::protocol::{FailedArm, Order, RunRecord};
use super::stats::Comparison;
use super::workloads::MetricDef;
use super::workloads::composite::PartInfo;
use super::workloads::spec::SweepPoint;
use crate::kernel::KnobSnapshot;
use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bumped whenever a key of the JSON document changes meaning or disappears.
pub const SCHEMA_VERSION: u64 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkloadInfo {
    pub label: String,
    pub name: String,
    pub description: String,
    pub params: BTreeMap<String, String>,
    pub metrics: Vec<MetricDef>,
    /// Its place in a sweep (`messaging:groups=1,2,4`), when it is one point of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepPoint>,
    /// Its parts with their cgroups, when it is a composite or runs in a cgroup.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<PartInfo>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Report {
    pub schema_version: u64,
    pub tool: String,
    pub version: String,
    pub command_line: Vec<String>,
    pub created_unix_ms: u128,
    pub seed: u64,
    pub order_mode: Order,
    /// The arm label of each slot, in the order run.
    pub order: Vec<String>,
    pub runs_per_arm: usize,
    pub warmup_s: f64,
    pub window_s: f64,
    pub max_run_s: f64,
    pub processes: bool,
    /// The kernel's BPF run-time statistics were on (--bpf-stats).
    pub bpf_stats: bool,
    pub quick: bool,
    /// Label of the A/A copy of the first arm, when one was run.
    pub aa_arm: Option<String>,
    pub fidelity_feature: Option<String>,
    pub environment: Environment,
    pub baseline: Baseline,
    pub arms: Vec<Arm>,
    pub workloads: Vec<WorkloadInfo>,
    pub knobs_before: Option<KnobSnapshot>,
    pub knobs_after: Option<KnobSnapshot>,
    /// True when every kernel knob read back as before the session; null when unreadable.
    pub knobs_restored: Option<bool>,
    pub runs: Vec<RunRecord>,
    pub summaries: Vec<ArmSummary>,
    pub counters: Vec<ArmCounters>,
    pub comparisons: Vec<Comparison>,
    pub fidelity: Vec<FidelityRow>,
    pub interrupted: bool,
    pub fatal: Option<String>,
    /// Arms that could not be put in effect; the others ran on.
    #[serde(default)]
    pub failed_arms: Vec<FailedArm>,
    pub restore_errors: Vec<String>,
    /// Bootstrap resamples per comparison (0 in files that did not record it).
    #[serde(default)]
    pub bootstrap_reps: usize,
    /// The session ran with `--trace`; its traces per arm and workload.
    #[serde(default)]
    pub trace: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub traces: Vec<crate::bench::trace::report::ArmTrace>,
    /// The sessions a `bench compare` report merges (empty in a session's own report).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<Source>,
    /// What `bench compare` found different between the sessions it merged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merge_notes: Vec<String>,
}

/// One session merged into a `bench compare` report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    pub file: String,
    /// The suffix its arms carry in the merged report (`eevdf @2`); empty for a single file.
    pub tag: String,
    pub kernel: String,
    pub host: String,
    pub created_unix_ms: u128,
    pub command_line: Vec<String>,
}

/// Checks a JSON document against the schema this binary writes; returns a one-line summary.
pub fn validate(v: &serde_json::Value) -> Result<String> {
    use serde_json::Value;
    let obj = v
        .as_object()
        .ok_or_else(|| anyhow::anyhow!("not a JSON object"))?;
    let need = |k: &str| {
        obj.get(k)
            .ok_or_else(|| anyhow::anyhow!("missing key {k:?}"))
    };
    let ver = need("schema_version")?.as_u64();
    if ver != Some(SCHEMA_VERSION) {
        bail!("schema_version is {ver:?}, this binary reads {SCHEMA_VERSION}");
    }
    for k in [
        "tool",
        "version",
        "command_line",
        "seed",
        "order_mode",
        "order",
        "runs_per_arm",
        "environment",
        "baseline",
        "arms",
        "workloads",
        "knobs_restored",
        "runs",
        "summaries",
        "counters",
        "comparisons",
        "fidelity",
        "interrupted",
        "restore_errors",
    ] {
        need(k)?;
    }
    let env = need("environment")?;
    for k in [
        "uname",
        "cmdline",
        "topology",
        "preempt",
        "autogroup",
        "debugfs_sched",
        "sched_ext",
    ] {
        if env.get(k).is_none() {
            bail!("environment lacks {k:?}");
        }
    }
    if env["uname"]["release"].as_str().unwrap_or("").is_empty() {
        bail!("environment.uname.release is empty");
    }
    let arms = need("arms")?
        .as_array()
        .ok_or_else(|| anyhow::anyhow!("arms is not a list"))?;
    if arms.is_empty() {
        bail!("no arms");
    }
    let labels: Vec<&str> = arms
        .iter()
        .map(|a| a["spec"]["label"].as_str().unwrap_or(""))
        .collect();
    if labels.iter().any(|l| l.is_empty()) {
        bail!("an arm has no label");
    }
    let wls = need("workloads")?
        .as_array()
        .ok_or_else(|| anyhow::anyhow!("workloads is not a list"))?;
    let runs = need("runs")?
        .as_array()
        .ok_or_else(|| anyhow::anyhow!("runs is not a list"))?;
    let mut measured = 0;
    for (i, r) in runs.iter().enumerate() {
        let arm = r["arm_label"].as_str().unwrap_or("");
        if !labels.contains(&arm) {
            bail!("run {i}: unknown arm {arm:?}");
        }
        let valid = r["valid"]
            .as_bool()
            .ok_or_else(|| anyhow::anyhow!("run {i}: valid is not a bool"))?;
        let reasons = r["invalid_reasons"]
            .as_array()
            .ok_or_else(|| anyhow::anyhow!("run {i}: invalid_reasons is not a list"))?;
        if valid != reasons.is_empty() {
            bail!(
                "run {i}: valid={valid} but {} invalid reasons",
                reasons.len()
            );
        }
        if valid && !r["discarded"].as_bool().unwrap_or(true) {
            let m = &r["measurement"]["metrics"];
            if !matches!(m, Value::Object(o) if !o.is_empty()) {
                bail!("run {i}: a valid run has no metrics");
            }
            measured += 1;
        }
    }
    for (i, c) in need("comparisons")?
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for k in [
            "workload",
            "metric",
            "base_arm",
            "arm",
            "ratio",
            "delta_pct",
            "marker",
        ] {
            if c.get(k).is_none() {
                bail!("comparison {i} lacks {k:?}");
            }
        }
    }
    Ok(format!(
        "valid: schema {SCHEMA_VERSION}, {} arms, {} workloads, {} runs ({measured} valid measured), {} comparisons",
        arms.len(),
        wls.len(),
        runs.len(),
        obj["comparisons"].as_array().map(|a| a.len()).unwrap_or(0)
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bench::arms::{ArmSpec, baseline};
    use crate::bench::counters::Counters;
    use crate::bench::stats::{Better, MeanKind};
    use crate::bench::workloads::{Measurement, metric};

    /// A report with two arms and synthetic runs: B is 10 % faster with little noise.
    pub fn sample_report() -> Report {
        let base = baseline(4);
        let arms: Vec<Arm> = ["eevdf", "lab:NO_DELAY_ZERO"]
            .iter()
            .map(|s| Arm::resolve(ArmSpec::parse(s).unwrap(), &base, 4).unwrap())
            .collect();
        let wl = WorkloadInfo {
            label: "pingpong".into(),
            name: "pingpong".into(),
            description: "1 pair".into(),
            params: BTreeMap::new(),
            sweep: None,
            parts: vec![],
            metrics: vec![
                metric(
                    "handoffs_per_s",
                    "hand-offs/s",
                    Better::Higher,
                    MeanKind::Harmonic,
                ),
                metric("roundtrip_us", "µs", Better::Lower, MeanKind::Arithmetic),
            ],
        };
        let mut runs = Vec::new();
        for i in 0..12 {
            let arm = i % 2;
            let v = if arm == 0 { 100_000.0 } else { 110_000.0 } + (i as f64 * 37.0) % 500.0;
            let mut m = Measurement {
                ops: 1000,
                elapsed_s: 1.0,
                counters: Counters {
                    tasks: 2,
                    voluntary: 2000,
                    involuntary: 20,
                    migrations: Some(3),
                    system_switches: Some(2500),
                    system_migrations: Some(7),
                    cpu_idle_ms: BTreeMap::from([(0, 500), (1, 250)]),
                    ..Default::default()
                },
                ..Default::default()
            };
            m.metrics.insert("handoffs_per_s".into(), v);
            m.metrics.insert("roundtrip_us".into(), 2e6 / v);
            runs.push(RunRecord {
                index: i,
                round: i / 2,
                arm,
                arm_label: arms[arm].label().into(),
                workload: 0,
                workload_label: "pingpong".into(),
                discarded: false,
                valid: i != 5,
                invalid_reasons: if i == 5 {
                    vec!["after the run: enable_seq changed (3 → 4)".into()]
                } else {
                    vec![]
                },
                start_unix_ms: 0,
                duration_s: 1.0,
                features_in_effect: None,
                measurement: Some(m),
                scx_events: vec![],
                sched_cpu_ns: None,
                bpf: Default::default(),
            });
        }
        let workloads = vec![wl];
        let (summaries, counters, comparisons) = analyze(
            &arms,
            &workloads,
            &runs,
            &analysis::pairs(&arms, None),
            1,
            1000,
        );
        Report {
            schema_version: SCHEMA_VERSION,
            tool: "scx_eevdf_lab bench".into(),
            version: "test".into(),
            command_line: vec![],
            created_unix_ms: 0,
            seed: 1,
            order_mode: Order::Abab,
            order: vec![],
            runs_per_arm: 6,
            warmup_s: 0.1,
            window_s: 1.0,
            max_run_s: 10.0,
            processes: false,
            bpf_stats: false,
            quick: true,
            aa_arm: None,
            fidelity_feature: None,
            environment: crate::bench::env::capture(&[]),
            baseline: base,
            arms,
            workloads,
            knobs_before: None,
            knobs_after: None,
            knobs_restored: None,
            runs,
            summaries,
            counters,
            comparisons,
            fidelity: vec![],
            interrupted: false,
            fatal: None,
            failed_arms: vec![],
            restore_errors: vec![],
            bootstrap_reps: 1000,
            trace: false,
            traces: vec![],
            sources: vec![],
            merge_notes: vec![],
        }
    }

    #[test]
    fn json_has_the_schema_and_validates() {
        let r = sample_report();
        let v = serde_json::to_value(&r).unwrap();
        let msg = validate(&v).unwrap();
        assert!(msg.contains("2 arms"), "{msg}");
        for k in [
            "environment",
            "runs",
            "summaries",
            "comparisons",
            "seed",
            "order",
        ] {
            assert!(v.get(k).is_some(), "{k}");
        }
        let mut broken = v.clone();
        broken.as_object_mut().unwrap().remove("runs");
        assert!(validate(&broken).is_err());
        let mut broken = v;
        broken["runs"][5]["valid"] = serde_json::json!(true);
        assert!(
            validate(&broken)
                .unwrap_err()
                .to_string()
                .contains("invalid reasons")
        );
    }
}
