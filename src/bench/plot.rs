//! One SVG per workload: on the left every valid run of the primary metric per arm (in run
//! order, with the arm's mean as a bar), on the right each comparison's ratio to its base with
//! its 95 % interval and a line at 1. SVG text needs no font library, so this works in the
//! minimal VM.

use super::report::{Report, WorkloadInfo};
use anyhow::{Context, Result};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

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
    Ok(out)
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
    let mut chart = ChartBuilder::on(&left)
        .caption(
            format!("{}: {} ({})", wl.label, m.name, m.unit),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5f64..(narms as f64 - 0.5), y0..y1)?;
    chart
        .configure_mesh()
        .x_labels(narms.max(1))
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc(m.unit)
        .disable_x_mesh()
        .draw()?;
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
    let cmps: Vec<_> = r
        .comparisons
        .iter()
        .filter(|c| c.workload == wl.label && c.metric == m.name)
        .collect();
    let pts = cmps
        .iter()
        .flat_map(|c| {
            let ci = c.welch.map(|w| w.ci).unwrap_or((c.ratio, c.ratio));
            [c.ratio, ci.0, ci.1, 1.0]
        })
        .collect::<Vec<_>>();
    let (r0, r1) = range(pts.iter().copied(), 0.2);
    let clabels: Vec<String> = cmps
        .iter()
        .map(|c| format!("{} / {}", c.arm, c.base_arm))
        .collect();
    let nc = cmps.len().max(1);
    let mut rc = ChartBuilder::on(&right)
        .caption("ratio to base, 95% CI", ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5f64..(nc as f64 - 0.5), r0..r1)?;
    rc.configure_mesh()
        .x_labels(nc)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 {
                clabels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .disable_x_mesh()
        .draw()?;
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
}
