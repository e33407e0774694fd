//! The session's results for people and for machines, from one data structure: the statistics
//! over valid runs, a terminal table in the style of LKML A/B posts (`value [Δ%](CV)` with `*`
//! and `?` markers), one JSON document (environment, every raw run, summaries, comparisons), a
//! CSV of the raw runs, and a checker for the JSON document (`bench --validate`).

use super::arms::{Arm, Baseline};
use super::env::Environment;
use super::protocol::{Order, RunRecord};
use super::stats::{self, Better, Comparison, Summary};
use super::workloads::MetricDef;
use crate::kernel::KnobSnapshot;
use anyhow::{Result, bail};
use comfy_table::{Cell, ContentArrangement, Table, presets};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Bumped whenever a key of the JSON document changes meaning or disappears.
pub const SCHEMA_VERSION: u64 = 1;

#[derive(Debug, Clone, Serialize)]
pub struct WorkloadInfo {
    pub label: String,
    pub name: String,
    pub description: String,
    pub params: BTreeMap<String, String>,
    pub metrics: Vec<MetricDef>,
}

/// One arm's valid runs of one workload and metric.
#[derive(Debug, Clone, Serialize)]
pub struct ArmSummary {
    pub arm: String,
    pub workload: String,
    pub metric: String,
    pub values: Vec<f64>,
    pub summary: Option<Summary>,
}

/// Scheduler counters of one arm and workload, per operation over its valid runs.
#[derive(Debug, Clone, Serialize)]
pub struct ArmCounters {
    pub arm: String,
    pub workload: String,
    pub valid_runs: usize,
    pub invalid_runs: usize,
    pub voluntary_per_op: Option<f64>,
    pub involuntary_per_op: Option<f64>,
    /// Involuntary switches / all switches.
    pub involuntary_share: Option<f64>,
    pub migrations_per_op: Option<f64>,
    pub run_delay_us_per_op: Option<f64>,
    /// CPU time of the scheduler's userspace process per run (lab and scx arms).
    pub sched_cpu_ms_per_run: Option<f64>,
}

/// A feature's effect in the kernel and in the mirror, side by side.
#[derive(Debug, Clone, Serialize)]
pub struct FidelityRow {
    pub feature: String,
    pub workload: String,
    pub metric: String,
    /// Δ% of turning the feature off, + = better, with its 95 % interval.
    pub kernel_delta_pct: f64,
    pub kernel_ci_pct: Option<(f64, f64)>,
    pub mirror_delta_pct: f64,
    pub mirror_ci_pct: Option<(f64, f64)>,
    pub same_sign: bool,
    pub cis_overlap: Option<bool>,
    /// `agrees` (same sign, intervals overlap), `differs`, or `unknown` (too few runs).
    pub verdict: String,
}

#[derive(Debug, Serialize)]
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
    pub restore_errors: Vec<String>,
}

/// The (base, arm, is A/A) pairs to compare: each arm against the first arm of its own kind,
/// the first arm of each kind against the session's first arm, the A/A copy against its original.
pub fn pairs(arms: &[Arm], aa: Option<usize>) -> Vec<(usize, usize, bool)> {
    let mut out = Vec::new();
    for i in 1..arms.len() {
        if Some(i) == aa {
            out.push((0, i, true));
            continue;
        }
        let base = (0..i)
            .find(|&j| Some(j) != aa && arms[j].spec.kind_name() == arms[i].spec.kind_name())
            .unwrap_or(0);
        out.push((base, i, false));
    }
    out
}

fn values(runs: &[RunRecord], arm: usize, w: usize, metric: &str) -> Vec<f64> {
    runs.iter()
        .filter(|r| r.arm == arm && r.workload == w && r.valid && !r.discarded)
        .filter_map(|r| r.measurement.as_ref()?.metrics.get(metric).copied())
        .filter(|v| v.is_finite())
        .collect()
}

/// Summaries, counters and comparisons of a session's runs.
pub fn analyze(
    arms: &[Arm],
    workloads: &[WorkloadInfo],
    runs: &[RunRecord],
    aa: Option<usize>,
    seed: u64,
    boot_reps: usize,
) -> (Vec<ArmSummary>, Vec<ArmCounters>, Vec<Comparison>) {
    let mut sums = Vec::new();
    let mut ctrs = Vec::new();
    for (w, wl) in workloads.iter().enumerate() {
        for (a, arm) in arms.iter().enumerate() {
            for m in &wl.metrics {
                let v = values(runs, a, w, m.name);
                sums.push(ArmSummary {
                    arm: arm.label().into(),
                    workload: wl.label.clone(),
                    metric: m.name.into(),
                    summary: stats::summarize(&v, m.mean),
                    values: v,
                });
            }
            ctrs.push(arm_counters(runs, arm.label(), a, w, &wl.label));
        }
    }
    let mut cmps = Vec::new();
    let mut k = 0u64;
    for (w, wl) in workloads.iter().enumerate() {
        for m in &wl.metrics {
            for &(b, a, is_aa) in &pairs(arms, aa) {
                let (vb, va) = (values(runs, b, w, m.name), values(runs, a, w, m.name));
                k += 1;
                let Some((ratio, welch, boot)) =
                    stats::compare(&vb, &va, m.mean, seed.wrapping_add(k), boot_reps)
                else {
                    continue;
                };
                let excludes_one = |ci: (f64, f64)| ci.0 > 1.0 || ci.1 < 1.0;
                cmps.push(Comparison {
                    workload: wl.label.clone(),
                    metric: m.name.into(),
                    base_arm: arms[b].label().into(),
                    arm: arms[a].label().into(),
                    better: m.better,
                    ratio,
                    delta_pct: stats::delta_pct(ratio, m.better),
                    ci_delta_pct: welch.map(|w| stats::delta_pct_ci(w.ci, m.better)),
                    bootstrap_agrees: welch
                        .zip(boot)
                        .map(|(w, bc)| excludes_one(w.ci) == excludes_one(bc)),
                    welch,
                    bootstrap_ci: boot,
                    p_adj: None,
                    noise_floor_pct: None,
                    marker: String::new(),
                    is_aa,
                });
            }
        }
    }
    let cv = |arm: &str, w: &str, m: &str| {
        sums.iter()
            .find(|s| s.arm == arm && s.workload == w && s.metric == m)
            .and_then(|s| s.summary.as_ref().map(|x| x.cv))
    };
    stats::finish(&mut cmps, cv);
    (sums, ctrs, cmps)
}

fn arm_counters(runs: &[RunRecord], label: &str, a: usize, w: usize, wl: &str) -> ArmCounters {
    let mine: Vec<&RunRecord> = runs
        .iter()
        .filter(|r| r.arm == a && r.workload == w && !r.discarded)
        .collect();
    let valid: Vec<&RunRecord> = mine.iter().copied().filter(|r| r.valid).collect();
    let (mut ops, mut vol, mut inv, mut delay) = (0u64, 0u64, 0u64, 0u64);
    let mut mig = Some(0u64);
    let mut cpu = Vec::new();
    for r in &valid {
        let Some(m) = &r.measurement else { continue };
        ops += m.ops;
        vol += m.counters.voluntary;
        inv += m.counters.involuntary;
        delay += m.counters.run_delay_ns;
        mig = mig.zip(m.counters.migrations).map(|(a, b)| a + b);
        if let Some(c) = r.sched_cpu_ns {
            cpu.push(c as f64 / 1e6);
        }
    }
    let per = |x: u64| (ops > 0).then(|| x as f64 / ops as f64);
    ArmCounters {
        arm: label.into(),
        workload: wl.into(),
        valid_runs: valid.len(),
        invalid_runs: mine.len() - valid.len(),
        voluntary_per_op: per(vol),
        involuntary_per_op: per(inv),
        involuntary_share: (vol + inv > 0).then(|| inv as f64 / (vol + inv) as f64),
        migrations_per_op: if valid.is_empty() {
            None
        } else {
            mig.and_then(per)
        },
        run_delay_us_per_op: per(delay).map(|d| d / 1000.0),
        sched_cpu_ms_per_run: (!cpu.is_empty()).then(|| cpu.iter().sum::<f64>() / cpu.len() as f64),
    }
}

/// The fidelity rows for feature `f` from arms [eevdf:F, eevdf:NO_F, lab:F, lab:NO_F].
pub fn fidelity(feature: &str, arms: &[Arm], cmps: &[Comparison]) -> Vec<FidelityRow> {
    if arms.len() < 4 {
        return Vec::new();
    }
    let find = |b: usize, a: usize| {
        move |c: &&Comparison| c.base_arm == arms[b].label() && c.arm == arms[a].label()
    };
    let mut rows = Vec::new();
    for k in cmps.iter().filter(find(0, 1)) {
        let Some(m) = cmps
            .iter()
            .filter(find(2, 3))
            .find(|c| c.workload == k.workload && c.metric == k.metric)
        else {
            continue;
        };
        let same_sign = k.delta_pct.signum() == m.delta_pct.signum();
        let overlap = k
            .ci_delta_pct
            .zip(m.ci_delta_pct)
            .map(|(a, b)| a.0 <= b.1 && b.0 <= a.1);
        rows.push(FidelityRow {
            feature: feature.into(),
            workload: k.workload.clone(),
            metric: k.metric.clone(),
            kernel_delta_pct: k.delta_pct,
            kernel_ci_pct: k.ci_delta_pct,
            mirror_delta_pct: m.delta_pct,
            mirror_ci_pct: m.ci_delta_pct,
            same_sign,
            cis_overlap: overlap,
            verdict: match overlap {
                None => "unknown".into(),
                Some(true) if same_sign => "agrees".into(),
                Some(_) => "differs".into(),
            },
        });
    }
    rows
}

/// A number with a precision that suits its size.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e5 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

/// How one footer row of the table renders an arm's counters.
type CounterCell = Box<dyn Fn(&ArmCounters) -> String>;

/// The terminal table: one block per workload, arms as columns.
pub fn table(r: &Report) -> String {
    let mut s = String::new();
    let e = &r.environment;
    let _ = writeln!(
        s,
        "scx_eevdf_lab bench {} — kernel {} ({}), {} CPUs, preempt {}, autogroup {}",
        r.version,
        e.uname.release,
        e.uname.machine,
        e.topology.allowed.len(),
        e.preempt.as_deref().unwrap_or("?"),
        e.autogroup.as_deref().unwrap_or("?"),
    );
    let _ = writeln!(
        s,
        "{} runs per arm, {} order (seed {}), warm-up {:.2} s, window {:.2} s, {}{}",
        r.runs_per_arm,
        match r.order_mode {
            Order::Abab => "ABAB",
            Order::Abba => "ABBA",
        },
        r.seed,
        r.warmup_s,
        r.window_s,
        if r.processes { "processes" } else { "threads" },
        r.aa_arm
            .as_ref()
            .map(|a| format!(", A/A arm {a}"))
            .unwrap_or_default()
    );
    for wl in &r.workloads {
        let _ = writeln!(s, "\n{} — {}", wl.label, wl.description);
        let mut t = Table::new();
        t.load_style(presets::ASCII_FULL)
            .set_content_arrangement(ContentArrangement::Disabled);
        let mut header = vec![Cell::new("metric")];
        header.extend(r.arms.iter().map(|a| Cell::new(a.label())));
        t.set_header(header);
        for m in &wl.metrics {
            let mut row = vec![Cell::new(format!(
                "{} ({}, {} is better, {})",
                m.name,
                m.unit,
                match m.better {
                    Better::Higher => "higher",
                    Better::Lower => "lower",
                },
                m.mean.label()
            ))];
            for a in &r.arms {
                row.push(Cell::new(cell(r, &wl.label, m.name, a.label())));
            }
            t.add_row(row);
        }
        let ctr = |a: &Arm| {
            r.counters
                .iter()
                .find(|c| c.arm == a.label() && c.workload == wl.label)
        };
        let footer: [(&str, CounterCell); 5] = [
            (
                "runs valid / invalid",
                Box::new(|c| format!("{} / {}", c.valid_runs, c.invalid_runs)),
            ),
            (
                "involuntary share of switches",
                Box::new(|c| opt(c.involuntary_share, |v| format!("{:.1}%", v * 100.0))),
            ),
            (
                "switches per op (vol + invol)",
                Box::new(|c| match (c.voluntary_per_op, c.involuntary_per_op) {
                    (Some(v), Some(i)) => format!("{} + {}", num(v), num(i)),
                    _ => "-".into(),
                }),
            ),
            (
                "migrations per op",
                Box::new(|c| opt(c.migrations_per_op, num)),
            ),
            (
                "run_delay per op (µs)",
                Box::new(|c| opt(c.run_delay_us_per_op, num)),
            ),
        ];
        for (name, f) in &footer {
            let mut row = vec![Cell::new(*name)];
            for a in &r.arms {
                row.push(Cell::new(ctr(a).map(f).unwrap_or_default()));
            }
            t.add_row(row);
        }
        if r.arms.iter().any(|a| a.spec.kind_name() != "eevdf") {
            let mut row = vec![Cell::new("scheduler CPU per run (ms)")];
            for a in &r.arms {
                row.push(Cell::new(
                    ctr(a)
                        .map(|c| opt(c.sched_cpu_ms_per_run, num))
                        .unwrap_or_default(),
                ));
            }
            t.add_row(row);
        }
        let _ = writeln!(s, "{t}");
    }
    let _ = writeln!(
        s,
        "\nvalue [Δ% vs base](CV): Δ% + = better; `*` Holm-adjusted p < 0.05 and |Δ| ≥ max(1%, 2× \
         A/A noise); `?` CV > 5% in either arm. 95% CI of Δ% from Welch on log values."
    );
    let bases: Vec<String> = pairs(
        &r.arms,
        r.aa_arm
            .as_ref()
            .and_then(|l| r.arms.iter().position(|a| a.label() == l)),
    )
    .iter()
    .map(|&(b, a, _)| format!("{} vs {}", r.arms[a].label(), r.arms[b].label()))
    .collect();
    if !bases.is_empty() {
        let _ = writeln!(s, "Comparisons: {}", bases.join("; "));
    }
    for f in &r.fidelity {
        let ci = |c: Option<(f64, f64)>| {
            c.map(|(a, b)| format!(" [{a:+.1}, {b:+.1}]"))
                .unwrap_or_default()
        };
        let _ = writeln!(
            s,
            "fidelity {} on {} {}: kernel {:+.2}%{} vs mirror {:+.2}%{} → {}",
            f.feature,
            f.workload,
            f.metric,
            f.kernel_delta_pct,
            ci(f.kernel_ci_pct),
            f.mirror_delta_pct,
            ci(f.mirror_ci_pct),
            f.verdict
        );
    }
    let invalid: Vec<&RunRecord> = r.runs.iter().filter(|x| !x.valid).collect();
    if !invalid.is_empty() {
        let _ = writeln!(s, "\nInvalid runs (left out of the statistics):");
        for x in invalid {
            let _ = writeln!(
                s,
                "  run {} ({} / {}{}): {}",
                x.index,
                x.arm_label,
                x.workload_label,
                if x.discarded { ", warm-up" } else { "" },
                x.invalid_reasons.join("; ")
            );
        }
    }
    if let Some(f) = &r.fatal {
        let _ = writeln!(s, "\nThe session stopped early: {f}");
    }
    if r.interrupted {
        let _ = writeln!(
            s,
            "\nThe session was interrupted; the runs above are partial."
        );
    }
    match r.knobs_restored {
        Some(true) => {
            let _ = writeln!(s, "Kernel sched knobs read back as before the session.");
        }
        Some(false) => {
            let _ = writeln!(
                s,
                "WARNING: kernel sched knobs differ from before the session!"
            );
        }
        None => {}
    }
    for e in &r.restore_errors {
        let _ = writeln!(s, "WARNING: {e}");
    }
    s
}

fn cell(r: &Report, wl: &str, metric: &str, arm: &str) -> String {
    let Some(sum) = r
        .summaries
        .iter()
        .find(|s| s.workload == wl && s.metric == metric && s.arm == arm)
        .and_then(|s| s.summary.as_ref())
    else {
        return "-".into();
    };
    let mut out = num(sum.mean);
    let c = r
        .comparisons
        .iter()
        .find(|c| c.workload == wl && c.metric == metric && c.arm == arm);
    if let Some(c) = c {
        let first = r.arms.first().map(|a| a.label()).unwrap_or("");
        let vs = if c.base_arm != first {
            format!(" vs {}", c.base_arm)
        } else {
            String::new()
        };
        let _ = write!(out, " [{:+.2}%{vs}]", c.delta_pct);
    }
    let _ = write!(out, "({:.2}%)", sum.cv * 100.0);
    if let Some(c) = c {
        out.push_str(&c.marker);
        if let Some((lo, hi)) = c.ci_delta_pct {
            let _ = write!(out, "\nCI [{lo:+.1}, {hi:+.1}]%");
            if let Some(p) = c.p_adj {
                let _ = write!(out, " p={p:.3}");
            }
        }
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The raw runs, one line per run and metric (runs without a value get one line).
pub fn csv(r: &Report) -> String {
    let mut s = String::from(
        "index,round,arm,workload,discarded,valid,metric,value,ops,elapsed_s,voluntary,\
         involuntary,run_delay_ns,migrations,invalid_reasons\n",
    );
    for x in &r.runs {
        let m = x.measurement.as_ref();
        let metrics: Vec<(String, String)> = match m {
            Some(m) if !m.metrics.is_empty() => m
                .metrics
                .iter()
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect(),
            _ => vec![(String::new(), String::new())],
        };
        for (k, v) in metrics {
            let c = m.map(|m| &m.counters);
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                x.index,
                x.round,
                csv_field(&x.arm_label),
                csv_field(&x.workload_label),
                x.discarded,
                x.valid,
                csv_field(&k),
                v,
                m.map(|m| m.ops.to_string()).unwrap_or_default(),
                m.map(|m| m.elapsed_s.to_string()).unwrap_or_default(),
                c.map(|c| c.voluntary.to_string()).unwrap_or_default(),
                c.map(|c| c.involuntary.to_string()).unwrap_or_default(),
                c.map(|c| c.run_delay_ns.to_string()).unwrap_or_default(),
                c.and_then(|c| c.migrations)
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
                csv_field(&x.invalid_reasons.join("; "))
            );
        }
    }
    s
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
    use crate::bench::stats::MeanKind;
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
            });
        }
        let workloads = vec![wl];
        let (summaries, counters, comparisons) = analyze(&arms, &workloads, &runs, None, 1, 1000);
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
            restore_errors: vec![],
        }
    }

    #[test]
    fn analysis_compares_and_marks() {
        let r = sample_report();
        let c = r
            .comparisons
            .iter()
            .find(|c| c.metric == "handoffs_per_s")
            .unwrap();
        assert!((c.delta_pct - 10.0).abs() < 1.0, "{}", c.delta_pct);
        assert_eq!(c.marker, "*");
        // Lower-is-better metric: fewer µs per round trip is also + (better).
        let d = r
            .comparisons
            .iter()
            .find(|c| c.metric == "roundtrip_us")
            .unwrap();
        assert!(d.delta_pct > 8.0, "{}", d.delta_pct);
        assert_eq!(d.bootstrap_agrees, Some(true));
        let lab = r
            .counters
            .iter()
            .find(|c| c.arm.starts_with("lab"))
            .unwrap();
        assert_eq!((lab.valid_runs, lab.invalid_runs), (5, 1));
        assert!((lab.involuntary_share.unwrap() - 20.0 / 2020.0).abs() < 1e-12);
    }

    #[test]
    fn table_shows_arms_deltas_and_invalid_runs() {
        let t = table(&sample_report());
        assert!(
            t.contains("eevdf") && t.contains("lab:NO_DELAY_ZERO"),
            "{t}"
        );
        assert!(t.contains("handoffs_per_s"));
        assert!(t.contains("[+"), "{t}");
        assert!(t.contains("enable_seq changed"), "{t}");
        assert!(t.contains("involuntary share"));
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

    #[test]
    fn csv_has_a_line_per_run_and_metric() {
        let c = csv(&sample_report());
        assert_eq!(c.lines().count(), 1 + 12 * 2);
        assert!(
            c.lines()
                .nth(1)
                .unwrap()
                .starts_with("0,0,eevdf,pingpong,false,true,")
        );
        assert!(
            c.contains("\"after the run: enable_seq changed (3 → 4)\"")
                || c.contains("enable_seq changed")
        );
    }

    #[test]
    fn pairs_compare_within_kind_then_with_the_first_arm() {
        let base = baseline(4);
        let arms: Vec<Arm> = ["eevdf", "eevdf:NO_DELAY_ZERO", "lab", "lab:NO_DELAY_ZERO"]
            .iter()
            .map(|s| Arm::resolve(ArmSpec::parse(s).unwrap(), &base, 4).unwrap())
            .collect();
        assert_eq!(
            pairs(&arms, None),
            vec![(0, 1, false), (0, 2, false), (2, 3, false)]
        );
    }
}
