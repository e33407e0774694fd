//! The trace of a session for people: per arm and workload the summed histograms of its valid
//! measured runs, their percentiles, the switch counts the trace saw beside those the kernel
//! counted per task, and the tracer's measured cost; as a block of the table and one SVG per
//! workload with the three histograms side by side.

use super::TraceCounts;
use super::hist::{self, Hist};
use crate::bench::protocol::RunRecord;
use crate::bench::report::{Report, WorkloadInfo};
use anyhow::Result;
use comfy_table::{Cell, ContentArrangement, Table, presets};
use plotters::prelude::*;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;

const NS_PER_US: f64 = 1e3;
const PCT: f64 = 100.0;
/// The table's histogram bins: ×4 apart from 1.024 µs (edges that are bucket edges).
const BIN_EDGES_NS: [u64; 10] = [
    0,
    1 << 10,
    1 << 12,
    1 << 14,
    1 << 16,
    1 << 18,
    1 << 20,
    1 << 22,
    1 << 24,
    1 << 26,
];
/// One `#` per this many percent in a histogram cell.
const PCT_PER_MARK: f64 = 5.0;

/// One histogram in numbers: events and percentiles (µs; the upper edge of their bucket).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistSummary {
    pub events: u64,
    pub p50_us: Option<f64>,
    pub p90_us: Option<f64>,
    pub p99_us: Option<f64>,
    /// The largest value seen (exact, from the program).
    pub max_us: Option<f64>,
}

impl HistSummary {
    fn of(h: &Hist, max_ns: u64) -> HistSummary {
        let q = |p| h.quantile(p).map(|v| v as f64 / NS_PER_US);
        HistSummary {
            events: h.total(),
            p50_us: q(0.5),
            p90_us: q(0.9),
            p99_us: q(0.99),
            max_us: (h.total() > 0).then(|| max_ns as f64 / NS_PER_US),
        }
    }
}

/// The trace of one arm on one workload, over its valid measured runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmTrace {
    pub arm: String,
    pub workload: String,
    pub runs: usize,
    pub wakeup: HistSummary,
    pub run_involuntary: HistSummary,
    pub run_voluntary: HistSummary,
    pub migrations_per_wakeup: Option<f64>,
    /// Wakeups that moved to the waker's CPU, per wakeup.
    #[serde(default)]
    pub to_waker_per_wakeup: Option<f64>,
    /// Switches out of the traced tasks that the trace saw: voluntary, involuntary.
    pub traced_switches: (u64, u64),
    /// The same tasks' switches as the kernel counted them (`/proc/<tid>/status`), when the
    /// trace followed the workload's own tasks (not for external tools).
    pub counted_switches: Option<(u64, u64)>,
    pub events: u64,
    /// The tracer's own time per event, and as a share of all CPUs' time in the windows.
    pub cost_ns_per_event: Option<f64>,
    pub cost_share_pct: Option<f64>,
    /// The summed histograms: wakeup latency, run before involuntary, run before voluntary.
    pub hists: [Hist; 3],
}

/// The traces of a session: one per arm and workload that has traced runs.
pub fn summaries(
    arm_labels: &[&str],
    workloads: &[WorkloadInfo],
    runs: &[RunRecord],
    ncpus: usize,
) -> Vec<ArmTrace> {
    let mut out = Vec::new();
    for (w, wl) in workloads.iter().enumerate() {
        for (a, label) in arm_labels.iter().enumerate() {
            let mine: Vec<(&TraceCounts, &crate::bench::counters::Counters, f64)> = runs
                .iter()
                .filter(|r| r.arm == a && r.workload == w && r.valid && !r.discarded)
                .filter_map(|r| {
                    let m = r.measurement.as_ref()?;
                    Some((m.counters.trace.as_ref()?, &m.counters, m.elapsed_s))
                })
                .collect();
            if mine.is_empty() {
                continue;
            }
            let mut hists: [Hist; 3] = Default::default();
            let mut max = [0u64; 3];
            let (mut wakeups, mut migrated, mut to_waker, mut vol, mut invol) = (0, 0, 0, 0, 0);
            let (mut events, mut cost, mut window_ns) = (0u64, 0u64, 0.0);
            let (mut cvol, mut cinvol, mut own_tasks) = (0, 0, true);
            for (t, c, elapsed) in &mine {
                hists[0].add(&t.wakeup);
                hists[1].add(&t.run_involuntary);
                hists[2].add(&t.run_voluntary);
                for (m, x) in max.iter_mut().zip(t.max_ns) {
                    *m = (*m).max(x);
                }
                wakeups += t.wakeups;
                migrated += t.wakeups_migrated;
                to_waker += t.wakeups_to_waker;
                vol += t.switches_voluntary;
                invol += t.switches_involuntary;
                events += t.events;
                cost += t.cost_ns;
                window_ns += elapsed * 1e9;
                cvol += c.voluntary;
                cinvol += c.involuntary;
                own_tasks &= c.tasks > 0;
            }
            out.push(ArmTrace {
                arm: label.to_string(),
                workload: wl.label.clone(),
                runs: mine.len(),
                wakeup: HistSummary::of(&hists[0], max[0]),
                run_involuntary: HistSummary::of(&hists[1], max[1]),
                run_voluntary: HistSummary::of(&hists[2], max[2]),
                migrations_per_wakeup: (wakeups > 0).then(|| migrated as f64 / wakeups as f64),
                to_waker_per_wakeup: (wakeups > 0).then(|| to_waker as f64 / wakeups as f64),
                traced_switches: (vol, invol),
                counted_switches: own_tasks.then_some((cvol, cinvol)),
                events,
                cost_ns_per_event: (events > 0).then(|| cost as f64 / events as f64),
                cost_share_pct: (window_ns > 0.0)
                    .then(|| cost as f64 / (window_ns * ncpus.max(1) as f64) * PCT),
                hists,
            });
        }
    }
    out
}

/// Two significant digits of a duration in ns, in µs below 1 ms and in ms above.
fn short(ns: u64) -> String {
    let (v, unit) = if ns >= 1_000_000 {
        (ns as f64 / 1e6, "ms")
    } else {
        (ns as f64 / 1e3, "µs")
    };
    let digits = if v >= 10.0 { 0 } else { 1 };
    format!("{v:.digits$} {unit}")
}

fn us(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
    }
}

fn pcts(h: &HistSummary) -> String {
    format!(
        "{} / {} / {} / {}",
        us(h.p50_us),
        us(h.p90_us),
        us(h.p99_us),
        us(h.max_us)
    )
}

/// The labels of the table's histogram bins.
fn bin_labels() -> Vec<String> {
    let n = BIN_EDGES_NS.len();
    (0..n)
        .map(|i| match i {
            0 => format!("< {}", short(BIN_EDGES_NS[1])),
            i if i == n - 1 => format!("≥ {}", short(BIN_EDGES_NS[i])),
            i => format!(
                "{} – {}",
                short(BIN_EDGES_NS[i]),
                short(BIN_EDGES_NS[i + 1])
            ),
        })
        .collect()
}

/// The trace block of the table for workload `wl`, or None when it has no trace.
pub fn table_block(r: &Report, wl: &WorkloadInfo) -> Option<String> {
    let traces: Vec<Option<&ArmTrace>> = r
        .arms
        .iter()
        .map(|a| {
            r.traces
                .iter()
                .find(|t| t.arm == a.label() && t.workload == wl.label)
        })
        .collect();
    if traces.iter().all(Option::is_none) {
        return None;
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "trace of {} (sched_switch and sched_wakeup of the {}; percentiles are the upper edge of \
         a 1/8-octave bucket):",
        wl.label,
        if traces
            .iter()
            .flatten()
            .all(|t| t.counted_switches.is_some())
        {
            "workload's tasks"
        } else {
            "whole system"
        }
    );
    let mut t = Table::new();
    t.load_style(presets::ASCII_FULL)
        .set_content_arrangement(ContentArrangement::Disabled);
    let mut header = vec![Cell::new("trace")];
    header.extend(r.arms.iter().map(|a| Cell::new(a.label())));
    t.set_header(header);
    type Row = Box<dyn Fn(&ArmTrace) -> String>;
    let rows: Vec<(&str, Row)> = vec![
        ("runs traced", Box::new(|t| t.runs.to_string())),
        (
            "wakeup latency p50 / p90 / p99 / max (µs)",
            Box::new(|t| pcts(&t.wakeup)),
        ),
        (
            "wakeups, migrated / to the waker's CPU per wakeup",
            Box::new(|t| {
                let per = |v: Option<f64>| v.map_or("-".into(), |m| format!("{m:.3}"));
                format!(
                    "{}, {} / {}",
                    t.wakeup.events,
                    per(t.migrations_per_wakeup),
                    per(t.to_waker_per_wakeup)
                )
            }),
        ),
        (
            "run before involuntary switch p50 / p90 / p99 / max (µs)",
            Box::new(|t| pcts(&t.run_involuntary)),
        ),
        (
            "run before voluntary switch p50 / p90 / p99 / max (µs)",
            Box::new(|t| pcts(&t.run_voluntary)),
        ),
        (
            "switches vol + invol: traced / counted",
            Box::new(|t| {
                let (v, i) = t.traced_switches;
                match t.counted_switches {
                    Some((cv, ci)) => format!("{v} + {i} / {cv} + {ci}"),
                    None => format!("{v} + {i} / -"),
                }
            }),
        ),
        (
            "tracer cost per event, share of all CPUs",
            Box::new(|t| {
                format!(
                    "{} ns, {}",
                    t.cost_ns_per_event
                        .map_or("-".into(), |c| format!("{c:.0}")),
                    t.cost_share_pct.map_or("-".into(), |c| format!("{c:.2}%"))
                )
            }),
        ),
    ];
    for (name, f) in &rows {
        let mut row = vec![Cell::new(*name)];
        row.extend(traces.iter().map(|t| Cell::new(t.map_or("-".into(), f))));
        t.add_row(row);
    }
    let labels = bin_labels();
    for (h, title) in [
        "wakeup latency",
        "run before involuntary switch",
        "run before voluntary switch",
    ]
    .iter()
    .enumerate()
    {
        let bins: Vec<Option<Vec<u64>>> = traces
            .iter()
            .map(|t| t.map(|t| t.hists[h].binned(&BIN_EDGES_NS)))
            .collect();
        let used: Vec<usize> = (0..BIN_EDGES_NS.len())
            .filter(|&i| bins.iter().flatten().any(|b| b[i] > 0))
            .collect();
        let (Some(&lo), Some(&hi)) = (used.first(), used.last()) else {
            continue;
        };
        for i in lo..=hi {
            let mut row = vec![Cell::new(if i == lo {
                format!("{title}: {}", labels[i])
            } else {
                format!("  {}", labels[i])
            })];
            for b in &bins {
                row.push(Cell::new(match b {
                    Some(b) => {
                        let total: u64 = b.iter().sum();
                        let pct = if total > 0 {
                            b[i] as f64 / total as f64 * PCT
                        } else {
                            0.0
                        };
                        let marks = "#".repeat((pct / PCT_PER_MARK).round() as usize);
                        format!("{pct:5.1}% {marks}")
                    }
                    None => "-".into(),
                }));
            }
            t.add_row(row);
        }
    }
    let _ = writeln!(s, "{t}");
    Some(s)
}

/// The octave (⌊log2⌋) of each bucket's lower edge, 0 for the buckets below 2.
fn octave(b: usize) -> usize {
    let lo = hist::lower(b);
    if lo < 2 {
        0
    } else {
        63 - lo.leading_zeros() as usize
    }
}

/// One SVG: the three histograms side by side, the share of events per octave, a line per arm.
pub fn plot(r: &Report, wl: &WorkloadInfo, path: &Path) -> Result<()> {
    let traces: Vec<(usize, &ArmTrace)> = r
        .arms
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            r.traces
                .iter()
                .find(|t| t.arm == a.label() && t.workload == wl.label)
                .map(|t| (i, t))
        })
        .collect();
    let root = SVGBackend::new(path, (1200, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((1, 3));
    let titles = [
        "wakeup latency",
        "run before involuntary switch",
        "run before voluntary switch",
    ];
    for (h, panel) in panels.iter().enumerate() {
        let per_octave: Vec<(usize, Vec<f64>)> = traces
            .iter()
            .map(|&(i, t)| {
                let mut v = vec![0.0; 64];
                let total = t.hists[h].total().max(1) as f64;
                for (b, &n) in t.hists[h].0.iter().enumerate() {
                    v[octave(b)] += n as f64 / total * PCT;
                }
                (i, v)
            })
            .collect();
        let used: Vec<usize> = (0..64)
            .filter(|&o| per_octave.iter().any(|(_, v)| v[o] > 0.0))
            .collect();
        let (lo, hi) = match (used.first(), used.last()) {
            (Some(&a), Some(&b)) => (a, b.max(a + 1)),
            _ => (10, 20),
        };
        let ymax = per_octave
            .iter()
            .flat_map(|(_, v)| v.iter().copied())
            .fold(1.0, f64::max);
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("{}: {}", wl.label, titles[h]), ("sans-serif", 14))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(44)
            .build_cartesian_2d(lo as f64 - 0.5..hi as f64 + 0.5, 0.0..ymax * 1.1)?;
        chart
            .configure_mesh()
            .x_labels((hi - lo + 1).min(8))
            .x_label_formatter(&|x| short(1u64 << (x.round().max(0.0) as u32)))
            .x_desc("from (octave)")
            .y_desc("% of events")
            .draw()?;
        for (i, v) in &per_octave {
            let color = Palette99::pick(*i).to_rgba();
            let pts: Vec<(f64, f64)> = (lo..=hi).map(|o| (o as f64, v[o])).collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
                .label(r.arms[*i].label().to_string())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2))
                });
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::report::tests::sample_report;

    /// The sample session with a trace on every run: the lab's wakeups wait 8x longer.
    pub fn traced_report() -> Report {
        let mut r = sample_report();
        for run in &mut r.runs {
            let lab = run.arm == 1;
            let m = run.measurement.as_mut().unwrap();
            let mut t = TraceCounts {
                wakeups: 1000,
                wakeups_migrated: if lab { 50 } else { 10 },
                wakeups_to_waker: if lab { 20 } else { 0 },
                switches_voluntary: m.counters.voluntary,
                switches_involuntary: m.counters.involuntary,
                events: 4000,
                cost_ns: 4000 * 300,
                max_ns: [if lab { 90_000 } else { 20_000 }, 3_000_000, 50_000],
                ..Default::default()
            };
            let b = |v: u64| {
                (0..hist::BUCKETS)
                    .find(|&b| hist::lower(b) <= v && v < hist::upper(b))
                    .unwrap()
            };
            t.wakeup.0[b(if lab { 16_000 } else { 2_000 })] = 990;
            t.wakeup.0[b(if lab { 90_000 } else { 20_000 })] = 10;
            t.run_involuntary.0[b(2_900_000)] = m.counters.involuntary;
            t.run_voluntary.0[b(5_000)] = m.counters.voluntary;
            m.counters.trace = Some(t);
        }
        let labels: Vec<&str> = r.arms.iter().map(|a| a.label()).collect();
        r.traces = summaries(&labels, &r.workloads, &r.runs, 2);
        r
    }

    #[test]
    fn traces_sum_valid_runs_and_render_side_by_side() {
        let r = traced_report();
        assert_eq!(r.traces.len(), 2);
        let (e, l) = (&r.traces[0], &r.traces[1]);
        // Six runs of eevdf, five valid of the lab (run 5 is invalid).
        assert_eq!((e.runs, l.runs), (6, 5));
        assert_eq!(e.wakeup.events, 6000);
        assert_eq!(l.migrations_per_wakeup, Some(0.05));
        assert_eq!(l.to_waker_per_wakeup, Some(0.02));
        // p50 in the 2 µs bucket, p99 too (99 % of the events); the max is the program's.
        let up = |v: u64| {
            let b = (0..hist::BUCKETS)
                .find(|&b| hist::lower(b) <= v && v < hist::upper(b))
                .unwrap();
            hist::upper(b) as f64 / NS_PER_US
        };
        assert_eq!(e.wakeup.p50_us, Some(up(2_000)));
        assert_eq!(e.wakeup.p99_us, Some(up(2_000)));
        assert_eq!(e.wakeup.max_us, Some(20.0));
        assert_eq!(l.wakeup.p50_us, Some(up(16_000)));
        // The trace saw exactly the switches the kernel counted.
        assert_eq!(Some(e.traced_switches), e.counted_switches);
        assert_eq!(e.traced_switches, (6 * 2000, 6 * 20));
        // 300 ns per event; 4000 events a 1 s window on 2 CPUs: 1.2 ms of 2 s.
        assert_eq!(e.cost_ns_per_event, Some(300.0));
        assert!((e.cost_share_pct.unwrap() - 0.06).abs() < 1e-9);

        let t = table_block(&r, &r.workloads[0]).unwrap();
        assert!(
            t.contains("trace of pingpong (sched_switch and sched_wakeup of the workload's tasks"),
            "{t}"
        );
        assert!(
            t.contains("| switches vol + invol: traced / counted"),
            "{t}"
        );
        assert!(t.contains("12000 + 120 / 12000 + 120"), "{t}");
        assert!(t.contains("300 ns, 0.06%"), "{t}");
        assert!(t.contains("5000, 0.050 / 0.020"), "{t}");
        let row = |name: &str| {
            t.lines()
                .find(|l| l.contains(name))
                .unwrap_or("")
                .to_string()
        };
        assert!(
            row("wakeup latency: 1.0 µs – 4.1 µs").contains(" 99.0% ####################"),
            "{t}"
        );
        assert!(row("16 µs – 66 µs").contains("  1.0% "), "{t}");
        assert!(crate::bench::report::table(&r).contains("trace of pingpong"));

        let dir = std::env::temp_dir().join(format!("lab-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = crate::bench::plot::write_all(&r, &dir).unwrap();
        let svg = files
            .iter()
            .find(|f| f.ends_with("trace_pingpong.svg"))
            .expect("trace plot");
        let text = std::fs::read_to_string(svg).unwrap();
        assert!(text.contains("run before voluntary switch"), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bins_are_labelled_from_their_edges() {
        let l = bin_labels();
        assert_eq!(l.len(), BIN_EDGES_NS.len());
        assert_eq!(l[0], "< 1.0 µs");
        assert_eq!(l[1], "1.0 µs – 4.1 µs");
        assert_eq!(l[6], "1.0 ms – 4.2 ms");
        assert_eq!(l[9], "≥ 67 ms");
        assert_eq!((octave(0), octave(8), octave(16), octave(17)), (0, 3, 4, 4));
    }
}
