//! The session's results as text: the terminal table in the style of LKML A/B posts
//! (`value [Δ%](CV)` with `*` and `?` markers, counters below, invalid runs and restore
//! warnings after it) and the CSV of the raw runs.
//!
//! It only formats what [`super::analysis`] computed and the [`Report`] holds; the JSON document
//! is the [`Report`] itself, serialized.

use super::analysis::ArmCounters;
use super::{Report, WorkloadInfo};
use crate::bench::arms::Arm;
use crate::bench::protocol::{Order, RunRecord};
use crate::bench::stats::Better;
use comfy_table::{Cell, ContentArrangement, Table, presets};
use std::fmt::Write as _;

/// Decimals of a number by its magnitude: from the first band whose floor |v| reaches, else
/// [`SMALL_DECIMALS`].
const PRECISION_BANDS: [(f64, usize); 3] = [(1e5, 0), (100.0, 1), (1.0, 3)];
const SMALL_DECIMALS: usize = 4;

/// A number with a precision that suits its size.
pub fn num(v: f64) -> String {
    let a = v.abs();
    let decimals = PRECISION_BANDS
        .iter()
        .find(|&&(floor, _)| a >= floor)
        .map_or(SMALL_DECIMALS, |&(_, d)| d);
    format!("{v:.decimals$}")
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
    if let Some(n) = e.autogroup_note(&r.arms) {
        let _ = writeln!(s, "note: {n}");
    }
    sources(&mut s, r);
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
                row.push(Cell::new(cell(r, &wl.label, &m.name, a.label())));
            }
            t.add_row(row);
        }
        let ctr = |a: &Arm| {
            r.counters
                .iter()
                .find(|c| c.arm == a.label() && c.workload == wl.label)
        };
        let idle_cpus: Vec<usize> = {
            let mut v: Vec<usize> = r
                .counters
                .iter()
                .filter(|c| c.workload == wl.label)
                .flat_map(|c| c.cpu_idle_pct.keys().copied())
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let idle_label = format!(
            "idle % per CPU ({})",
            idle_cpus
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(" / ")
        );
        let footer: [(&str, CounterCell); 9] = [
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
            (
                "system switches per run",
                Box::new(|c| opt(c.system_switches_per_run, num)),
            ),
            (
                "system switches per op",
                Box::new(|c| opt(c.system_switches_per_op, num)),
            ),
            (
                "system migrations per run",
                Box::new(|c| opt(c.system_migrations_per_run, num)),
            ),
            (
                &idle_label,
                Box::new(move |c| {
                    if c.cpu_idle_pct.is_empty() {
                        return "-".into();
                    }
                    idle_cpus
                        .iter()
                        .map(|k| opt(c.cpu_idle_pct.get(k).copied(), |v| format!("{v:.0}")))
                        .collect::<Vec<_>>()
                        .join(" / ")
                }),
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
        if r.bpf_stats {
            let mut row = vec![Cell::new("BPF time per op (ns, --bpf-stats)")];
            for a in &r.arms {
                row.push(Cell::new(
                    ctr(a)
                        .map(|c| opt(c.bpf_ns_per_op, |v| format!("{v:.0}")))
                        .unwrap_or_default(),
                ));
            }
            t.add_row(row);
        }
        let _ = writeln!(s, "{t}");
        for a in &r.arms {
            let Some(c) = ctr(a).filter(|c| !c.bpf_callbacks.is_empty()) else {
                continue;
            };
            let cbs: Vec<String> = c
                .bpf_callbacks
                .iter()
                .map(|cb| format!("{} {:.2}×{:.0}", cb.name, cb.calls_per_op, cb.ns_per_call))
                .collect();
            let _ = writeln!(
                s,
                "BPF per op, {} (callback calls×ns): {}",
                a.label(),
                cbs.join(", ")
            );
        }
        if let Some(b) = crate::bench::trace::report::table_block(r, wl) {
            s.push_str(&b);
        }
    }
    sweep_tables(&mut s, r);
    let _ = writeln!(
        s,
        "\nvalue [Δ% vs base](CV): Δ% + = better; `*` Holm-adjusted p < 0.05 and |Δ| ≥ max(1%, 2× \
         A/A noise); `?` CV > 5% in either arm. 95% CI of Δ% from Welch on log values."
    );
    // The pairs compared, in the order of the comparisons; cross-boot ones marked.
    let mut bases: Vec<String> = Vec::new();
    for c in &r.comparisons {
        let b = format!(
            "{} vs {}{}",
            c.arm,
            c.base_arm,
            if c.cross_boot { " (×)" } else { "" }
        );
        if !bases.contains(&b) {
            bases.push(b);
        }
    }
    if !bases.is_empty() {
        let _ = writeln!(s, "Comparisons: {}", bases.join("; "));
    }
    if r.comparisons.iter().any(|c| c.cross_boot) {
        let _ = writeln!(
            s,
            "(×) cross-boot: the two arms ran in different sessions, so the Δ includes boot-to-boot \
             noise; judge it against an A/A pair across two boots (the same arm and kernel in two \
             sessions)."
        );
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
    for f in &r.failed_arms {
        let _ = writeln!(
            s,
            "\nArm {} FAILED after {} of its rounds, {}; its other runs were skipped.",
            f.arm, f.slots_run, f.reason
        );
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

/// The sessions a `bench compare` report comes from, its notes, and the boot noise that its
/// A/A pairs across boots measured (the same arm on the same kernel in two sessions).
fn sources(s: &mut String, r: &Report) {
    match r.sources.as_slice() {
        [] => return,
        [one] => {
            let _ = writeln!(s, "Re-rendered from {} (kernel {})", one.file, one.kernel);
            return;
        }
        many => {
            let _ = writeln!(s, "bench compare of {} sessions:", many.len());
            for src in many {
                let _ = writeln!(
                    s,
                    "  {} {}: kernel {} on {}: {}",
                    src.tag,
                    src.file,
                    src.kernel,
                    src.host,
                    src.command_line.join(" ")
                );
            }
        }
    }
    for n in &r.merge_notes {
        let _ = writeln!(s, "  note: {n}");
    }
    let kernel_of = |arm: &str| {
        let tag = arm.rsplit(' ').next().unwrap_or("");
        r.sources
            .iter()
            .find(|x| x.tag == tag)
            .map(|x| x.kernel.as_str())
    };
    for wl in &r.workloads {
        let Some(m) = wl.metrics.first() else {
            continue;
        };
        for c in r.comparisons.iter().filter(|c| {
            c.cross_boot
                && c.workload == wl.label
                && c.metric == m.name
                && kernel_of(&c.arm) == kernel_of(&c.base_arm)
        }) {
            let _ = writeln!(
                s,
                "  boot noise (A/A across boots, same kernel): {} vs {} on {} {}: {:+.2}%{}",
                c.arm,
                c.base_arm,
                c.workload,
                c.metric,
                c.delta_pct,
                c.ci_delta_pct
                    .map(|(a, b)| format!(" [{a:+.1}, {b:+.1}]"))
                    .unwrap_or_default()
            );
        }
    }
}

/// The sweeps of the session, in the order given: one table each for its primary metric, one
/// line per point, the arms as columns.
pub fn sweeps(r: &Report) -> Vec<(&str, Vec<&WorkloadInfo>)> {
    let mut out: Vec<(&str, Vec<&WorkloadInfo>)> = Vec::new();
    for wl in &r.workloads {
        let Some(p) = &wl.sweep else { continue };
        match out.iter_mut().find(|(spec, _)| *spec == p.spec) {
            Some((_, pts)) => pts.push(wl),
            None => out.push((p.spec.as_str(), vec![wl])),
        }
    }
    out
}

fn sweep_tables(s: &mut String, r: &Report) {
    for (spec, points) in sweeps(r) {
        let (Some(first), Some(m)) = (points.first(), points[0].metrics.first()) else {
            continue;
        };
        let key = first.sweep.as_ref().map_or("", |p| p.key.as_str());
        let _ = writeln!(
            s,
            "\nsweep {spec} — {} ({}, {} is better, {}), one line per {key}",
            m.name,
            m.unit,
            match m.better {
                Better::Higher => "higher",
                Better::Lower => "lower",
            },
            m.mean.label()
        );
        let mut t = Table::new();
        t.load_style(presets::ASCII_FULL)
            .set_content_arrangement(ContentArrangement::Disabled);
        let mut header = vec![Cell::new(key)];
        header.extend(r.arms.iter().map(|a| Cell::new(a.label())));
        t.set_header(header);
        for wl in points {
            let value = wl.sweep.as_ref().map_or("", |p| p.value.as_str());
            let mut row = vec![Cell::new(value)];
            for a in &r.arms {
                let c = cell(r, &wl.label, &m.name, a.label());
                row.push(Cell::new(c.lines().next().unwrap_or("-")));
            }
            t.add_row(row);
        }
        let _ = writeln!(s, "{t}");
    }
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
         involuntary,run_delay_ns,migrations,invalid_reasons,system_switches,system_migrations,\
         cpu_idle_ms\n",
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
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
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
                csv_field(&x.invalid_reasons.join("; ")),
                c.and_then(|c| c.system_switches)
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
                c.and_then(|c| c.system_migrations)
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
                c.map(|c| c
                    .cpu_idle_ms
                    .iter()
                    .map(|(k, v)| format!("{k}:{v}"))
                    .collect::<Vec<_>>()
                    .join(";"))
                    .unwrap_or_default(),
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::report::tests::sample_report;

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
        // The system-wide counters: 2500 switches and 7 migrations per run, CPU 0 idle half of
        // each 1 s window, CPU 1 a quarter.
        let row = |name: &str| {
            t.lines()
                .find(|l| l.contains(name))
                .unwrap_or("")
                .to_string()
        };
        assert!(row("system switches per run").contains("2500.0 "), "{t}");
        assert!(row("system switches per op").contains("2.500"), "{t}");
        assert!(row("system migrations per run").contains("7.000"), "{t}");
        assert!(row("idle % per CPU (0 / 1)").contains("50 / 25"), "{t}");
    }

    #[test]
    fn a_failed_arm_is_reported() {
        let mut r = sample_report();
        r.failed_arms.push(crate::bench::protocol::FailedArm {
            arm: "scx:/bin/false".into(),
            reason: "cannot put it in effect: the scheduler exited".into(),
            slots_run: 0,
        });
        let t = table(&r);
        assert!(
            t.contains("Arm scx:/bin/false FAILED after 0 of its rounds, cannot put it in effect"),
            "{t}"
        );
    }

    #[test]
    fn csv_has_a_line_per_run_and_metric() {
        let c = csv(&sample_report());
        assert_eq!(c.lines().count(), 1 + 12 * 2);
        assert!(
            c.lines()
                .next()
                .unwrap()
                .ends_with(",system_switches,system_migrations,cpu_idle_ms")
        );
        assert!(
            c.lines().nth(1).unwrap().ends_with(",2500,7,0:500;1:250"),
            "{c}"
        );
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
}
