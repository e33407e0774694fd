//! One SVG per workload: on the left every valid run of the primary metric per arm (in run
//! order, with the arm's mean as a bar), on the right each comparison's ratio to its base with
//! its 95 % interval and a line at 1. One SVG per sweep: the primary metric's central value at
//! every point, one line per arm, with ± one standard deviation. SVG text needs no font library,
//! so this works in the minimal VM.

use super::report::{Report, WorkloadInfo};
use anyhow::{Context, Result};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};

/// The x labels' font size, px; and the width of one character at that size, estimated on the
/// wide side (SVG text has no font metrics here: `NO_RUN_TO_PARITY` is all capitals).
const LABEL_FONT_PX: u32 = 11;
const LABEL_CHAR_PX: f64 = 7.0;
const LABEL_LINE_PX: u32 = 14;
/// At most this many lines per label; a longer one ends in "…" (the table has it whole).
const LABEL_MAX_LINES: usize = 4;
const MARGIN_PX: u32 = 12;

/// Lays out one x label per slot of `slot_px` pixels: each label is cut into lines that fit
/// its slot (`eevdf,` `preempt=full:` `NO_RUN_TO_PARITY`), so that neighbours never overlap.
/// Labels are drawn by [`draw_labels`], not by the mesh: plotters' axis labels are one line.
pub fn label_lines(labels: &[String], slot_px: f64) -> Vec<Vec<String>> {
    let width = ((slot_px / LABEL_CHAR_PX).floor() as usize).max(4);
    labels
        .iter()
        .map(|l| wrap(l, width, LABEL_MAX_LINES))
        .collect()
}

/// Greedy wrapping of `text` into at most `max_lines` lines of at most `width` characters.
fn wrap(text: &str, width: usize, max_lines: usize) -> Vec<String> {
    // Pieces end after a `,` `:` `/` or space; a piece wider than a line is cut after its last
    // `=` (`base_slice_ns=`), or anywhere.
    let mut pieces: Vec<String> = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        cur.push(c);
        if matches!(c, ',' | ':' | '/' | ' ') {
            pieces.push(std::mem::take(&mut cur));
        } else if cur.chars().count() == width {
            // Too long for a line: cut after its last '=' where it has one, else here.
            let cut = cur.rfind('=').map_or(cur.len(), |i| i + 1);
            let rest = cur.split_off(cut);
            pieces.push(std::mem::replace(&mut cur, rest));
        }
    }
    if !cur.is_empty() {
        pieces.push(cur);
    }
    let mut lines: Vec<String> = Vec::new();
    for p in pieces {
        match lines.last_mut() {
            Some(l) if l.chars().count() + p.chars().count() <= width => l.push_str(&p),
            _ => lines.push(p),
        }
    }
    let mut lines: Vec<String> = lines.iter().map(|l| l.trim().to_string()).collect();
    if lines.len() > max_lines {
        lines.truncate(max_lines);
        let last = &mut lines[max_lines - 1];
        let keep: String = last.chars().take(width - 1).collect();
        *last = format!("{keep}…");
    }
    lines
}

fn range(v: impl Iterator<Item = f64> + Clone, pad: f64) -> (f64, f64) {
    let lo = v.clone().fold(f64::INFINITY, f64::min);
    let hi = v.fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() || !hi.is_finite() {
        return (0.0, 1.0);
    }
    let span = (hi - lo).max(hi.abs() * 0.02).max(1e-9);
    (lo - span * pad, hi + span * pad)
}

/// File name for a workload label (`messaging:groups=4` → `messaging_groups-4.svg`).
pub fn file_name(label: &str) -> String {
    let s: String = label
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' | '.' => c,
            '=' => '-',
            _ => '_',
        })
        .collect();
    format!("{s}.svg")
}

pub fn write_all(r: &Report, dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for wl in &r.workloads {
        let p = dir.join(file_name(&wl.label));
        plot_workload(r, wl, &p).with_context(|| format!("cannot draw {}", p.display()))?;
        out.push(p);
    }
    for wl in r
        .workloads
        .iter()
        .filter(|w| r.traces.iter().any(|t| t.workload == w.label))
    {
        let p = dir.join(format!("trace_{}", file_name(&wl.label)));
        super::trace::report::plot(r, wl, &p)
            .with_context(|| format!("cannot draw {}", p.display()))?;
        out.push(p);
    }
    for (spec, points) in super::report::render::sweeps(r) {
        let p = dir.join(format!("sweep_{}", file_name(spec)));
        plot_sweep(r, spec, &points, &p).with_context(|| format!("cannot draw {}", p.display()))?;
        out.push(p);
    }
    Ok(out)
}

fn plot_sweep(r: &Report, spec: &str, points: &[&WorkloadInfo], path: &Path) -> Result<()> {
    let Some(m) = points.first().and_then(|w| w.metrics.first()) else {
        return Ok(());
    };
    let summary = |arm: &str, wl: &str| {
        r.summaries
            .iter()
            .find(|s| s.arm == arm && s.workload == wl && s.metric == m.name)
            .and_then(|s| s.summary.clone())
    };
    let all: Vec<(f64, f64)> = r
        .arms
        .iter()
        .flat_map(|a| points.iter().filter_map(|w| summary(a.label(), &w.label)))
        .map(|s| (s.mean - s.stddev, s.mean + s.stddev))
        .collect();
    let (y0, y1) = range(all.iter().flat_map(|&(a, b)| [a, b]), 0.1);
    let n = points.len();
    let root = SVGBackend::new(path, (900, 460)).into_drawing_area();
    root.fill(&WHITE)?;
    let key = points[0].sweep.as_ref().map_or("", |p| p.key.as_str());
    let values: Vec<String> = points
        .iter()
        .map(|w| w.sweep.as_ref().map_or(String::new(), |p| p.value.clone()))
        .collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{spec}: {} ({})", m.name, m.unit),
            ("sans-serif", 18),
        )
        .margin(MARGIN_PX)
        .x_label_area_size(40)
        .y_label_area_size(LEFT_Y_AREA_PX)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), y0..y1)?;
    chart
        .configure_mesh()
        .x_labels(n.max(1))
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                values.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .x_desc(key)
        .y_desc(m.unit.as_ref())
        .disable_x_mesh()
        .draw()?;
    for (i, a) in r.arms.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let pts: Vec<(f64, f64, f64)> = points
            .iter()
            .enumerate()
            .filter_map(|(k, w)| summary(a.label(), &w.label).map(|s| (k as f64, s.mean, s.stddev)))
            .collect();
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|&(x, y, _)| (x, y)),
                color.stroke_width(2),
            ))?
            .label(a.label().to_string())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2)));
        chart.draw_series(pts.iter().map(|&(x, y, sd)| {
            ErrorBar::new_vertical(x, y - sd, y, y + sd, color.stroke_width(1), 8)
        }))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

const LEFT_Y_AREA_PX: u32 = 80;
const RIGHT_Y_AREA_PX: u32 = 60;

/// The width of one category's slot in a chart of `width` pixels with `n` categories.
fn slot_px(width: u32, y_area: u32, n: usize) -> f64 {
    f64::from(width.saturating_sub(2 * MARGIN_PX + y_area)) / n.max(1) as f64
}

/// Draws label `i`'s lines centred under `at(i)`, the bottom of the plotting area at category
/// `i` (backend pixels). The SVG backend draws text a little smaller than asked, which only adds
/// room.
fn draw_labels(
    root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    lines: &[Vec<String>],
    at: impl Fn(usize) -> (i32, i32),
) -> Result<()> {
    let style = TextStyle::from(("sans-serif", LABEL_FONT_PX).into_font())
        .pos(Pos::new(HPos::Center, VPos::Top));
    for (i, label) in lines.iter().enumerate() {
        let (x, y) = at(i);
        for (k, line) in label.iter().enumerate() {
            let y = y + 8 + (LABEL_LINE_PX as usize * k) as i32;
            root.draw(&Text::new(line.clone(), (x, y), style.clone()))?;
        }
    }
    Ok(())
}

fn plot_workload(r: &Report, wl: &WorkloadInfo, path: &Path) -> Result<()> {
    let Some(m) = wl.metrics.first() else {
        return Ok(());
    };
    let root = SVGBackend::new(path, (1100, 460)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(620);
    let narms = r.arms.len();
    let per_arm: Vec<Vec<f64>> = r
        .arms
        .iter()
        .map(|a| {
            r.summaries
                .iter()
                .find(|s| s.arm == a.label() && s.workload == wl.label && s.metric == m.name)
                .map(|s| s.values.clone())
                .unwrap_or_default()
        })
        .collect();
    let (y0, y1) = range(per_arm.iter().flatten().copied(), 0.15);
    let labels: Vec<String> = r.arms.iter().map(|a| a.label().to_string()).collect();
    let (left_w, right_w) = (left.dim_in_pixel().0, right.dim_in_pixel().0);
    let arm_lines = label_lines(&labels, slot_px(left_w, LEFT_Y_AREA_PX, narms));
    let cmps: Vec<_> = r
        .comparisons
        .iter()
        .filter(|c| c.workload == wl.label && c.metric == m.name)
        .collect();
    let nc = cmps.len().max(1);
    let clabels: Vec<String> = cmps
        .iter()
        .map(|c| format!("{} / {}", c.arm, c.base_arm))
        .collect();
    let cmp_lines = label_lines(&clabels, slot_px(right_w, RIGHT_Y_AREA_PX, nc));
    // Both charts keep the same height, so that their plotting areas line up.
    let nlines = arm_lines.iter().chain(&cmp_lines).map(Vec::len).max();
    let x_area = 12 + LABEL_LINE_PX * nlines.unwrap_or(1).max(1) as u32;
    let mut chart = ChartBuilder::on(&left)
        .caption(
            format!("{}: {} ({})", wl.label, m.name, m.unit),
            ("sans-serif", 18),
        )
        .margin(MARGIN_PX)
        .x_label_area_size(x_area)
        .y_label_area_size(LEFT_Y_AREA_PX)
        .build_cartesian_2d(-0.5f64..(narms as f64 - 0.5), y0..y1)?;
    chart
        .configure_mesh()
        .x_labels(narms.max(1))
        .x_label_formatter(&|_| String::new())
        .y_desc(m.unit.as_ref())
        .disable_x_mesh()
        .draw()?;
    draw_labels(&root, &arm_lines, |i| chart.backend_coord(&(i as f64, y0)))?;
    for (i, vals) in per_arm.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let n = vals.len().max(1) as f64;
        // Runs spread left to right in run order, so a drift shows as a slope.
        chart.draw_series(vals.iter().enumerate().map(|(k, &v)| {
            let x = i as f64 - 0.3 + 0.6 * (k as f64 + 0.5) / n;
            Circle::new((x, v), 4, color.filled())
        }))?;
        if let Some(s) = r
            .summaries
            .iter()
            .find(|s| s.arm == labels[i] && s.workload == wl.label && s.metric == m.name)
            .and_then(|s| s.summary.as_ref())
        {
            chart.draw_series(LineSeries::new(
                [(i as f64 - 0.35, s.mean), (i as f64 + 0.35, s.mean)],
                color.stroke_width(2),
            ))?;
        }
    }
    // Ratios with their intervals.
    let pts = cmps
        .iter()
        .flat_map(|c| {
            let ci = c.welch.map(|w| w.ci).unwrap_or((c.ratio, c.ratio));
            [c.ratio, ci.0, ci.1, 1.0]
        })
        .collect::<Vec<_>>();
    let (r0, r1) = range(pts.iter().copied(), 0.2);
    let mut rc = ChartBuilder::on(&right)
        .caption("ratio to base, 95% CI", ("sans-serif", 18))
        .margin(MARGIN_PX)
        .x_label_area_size(x_area)
        .y_label_area_size(RIGHT_Y_AREA_PX)
        .build_cartesian_2d(-0.5f64..(nc as f64 - 0.5), r0..r1)?;
    rc.configure_mesh()
        .x_labels(nc)
        .x_label_formatter(&|_| String::new())
        .disable_x_mesh()
        .draw()?;
    draw_labels(&root, &cmp_lines, |i| rc.backend_coord(&(i as f64, r0)))?;
    rc.draw_series(LineSeries::new(
        [(-0.5, 1.0), (nc as f64 - 0.5, 1.0)],
        BLACK.mix(0.5).stroke_width(1),
    ))?;
    for (i, c) in cmps.iter().enumerate() {
        let (lo, hi) = c.welch.map(|w| w.ci).unwrap_or((c.ratio, c.ratio));
        let color = if c.marker == "*" { RED } else { BLUE };
        rc.draw_series(std::iter::once(ErrorBar::new_vertical(
            i as f64,
            lo,
            c.ratio,
            hi,
            color.stroke_width(2),
            12,
        )))?;
        rc.draw_series(std::iter::once(Circle::new(
            (i as f64, c.ratio),
            4,
            color.filled(),
        )))?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_an_svg_per_workload() {
        let r = crate::bench::report::tests::sample_report();
        let dir = std::env::temp_dir().join(format!("lab-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = write_all(&r, &dir).unwrap();
        assert_eq!(files.len(), 1);
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(svg.contains("<svg"), "{}", &svg[..svg.len().min(200)]);
        assert!(svg.contains("pingpong"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(file_name("messaging:groups=4"), "messaging_groups-4.svg");
    }

    #[test]
    fn long_labels_wrap_within_their_slots() {
        let labels: Vec<String> = [
            "eevdf",
            "eevdf,preempt=full:NO_RUN_TO_PARITY",
            "lab:NO_RUN_TO_PARITY,base_slice_ns=3000000",
            "eevdf,preempt=full:NO_RUN_TO_PARITY / eevdf",
        ]
        .map(String::from)
        .to_vec();
        // Four arms on the left chart of a 1100 px plot: about 129 px each.
        let slot = slot_px(620, LEFT_Y_AREA_PX, labels.len());
        let lines = label_lines(&labels, slot);
        assert_eq!(lines[0], ["eevdf"]);
        assert_eq!(lines[1], ["eevdf,", "preempt=full:", "NO_RUN_TO_PARITY"]);
        for (l, ls) in labels.iter().zip(&lines) {
            assert!(ls.len() <= LABEL_MAX_LINES, "{ls:?}");
            for line in ls {
                // Every line fits its slot: neighbours cannot overlap.
                let px = line.chars().count() as f64 * LABEL_CHAR_PX;
                assert!(px <= slot, "{line:?} is {px} px in a {slot} px slot");
            }
            // Nothing is lost where it fits: the lines are the label, cut at its breaks.
            assert_eq!(ls.join("").replace(' ', ""), l.replace(' ', ""));
        }
        // Too long for the lines it may take: cut, and marked.
        let tiny = label_lines(&labels[2..3], 40.0);
        assert_eq!(tiny[0].len(), LABEL_MAX_LINES);
        assert!(tiny[0].last().unwrap().ends_with('…'), "{tiny:?}");
    }
}
