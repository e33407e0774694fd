//! `bench compare FILE...`: one report from the bench.json files of separate sessions (other
//! boots, kernels or machines), with the statistics of a session; or one file re-rendered.
//!
//! A single file is analysed again exactly as its session did (same pairs, seed and bootstrap
//! resamples), so its table, CSV and plots come back unchanged. Several files are merged: each
//! file's arms carry the suffix ` @N` (N = the file's position), each file's own comparisons
//! are kept, and every arm of a later file is also compared with the arm of the same label in
//! the first file. Those cross-boot comparisons include boot-to-boot noise, which the report
//! says; an A/A pair across two boots (the same arm on the same kernel in two sessions) measures
//! it. Workloads are matched by label; differences between the sessions' settings are listed
//! as notes. Nothing here runs a workload or touches a kernel setting.

use super::report::{self, Pair, Report, Source};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

/// Bootstrap resamples for files that did not record theirs (the session defaults).
const DEFAULT_REPS: usize = 10_000;
const DEFAULT_QUICK_REPS: usize = 2000;

/// Options of `scx_eevdf_lab bench compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// bench.json files, the baseline session first; one file is re-rendered.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,

    /// Also write the merged bench.json, runs.csv and the SVG plots in this folder.
    #[arg(short, long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Do not draw the SVG plots.
    #[arg(long)]
    pub no_plots: bool,
}

pub fn run(args: CompareArgs) -> Result<ExitCode> {
    let mut loaded = Vec::new();
    for f in &args.files {
        loaded.push((f.display().to_string(), load(f)?));
    }
    let rep = merge(loaded)?;
    match &args.out {
        Some(dir) => super::write_outputs(&rep, dir, !args.no_plots)?,
        None => print!("{}", report::table(&rep)),
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads a bench.json written by this version (checked with `bench --validate`'s rules).
pub fn load(path: &Path) -> Result<Report> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    report::validate(&v).with_context(|| format!("{} is not a bench.json", path.display()))?;
    serde_json::from_value(v).with_context(|| format!("cannot read the report {}", path.display()))
}

fn reps_of(r: &Report) -> usize {
    match r.bootstrap_reps {
        0 if r.quick => DEFAULT_QUICK_REPS,
        0 => DEFAULT_REPS,
        n => n,
    }
}

fn source(file: &str, tag: &str, r: &Report) -> Source {
    Source {
        file: file.to_string(),
        tag: tag.to_string(),
        kernel: r.environment.uname.release.clone(),
        host: r.environment.uname.nodename.clone(),
        created_unix_ms: r.created_unix_ms,
        command_line: r.command_line.clone(),
    }
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// The merged report of `files` (path, report), the first being the baseline session.
pub fn merge(files: Vec<(String, Report)>) -> Result<Report> {
    if files.is_empty() {
        bail!("no bench.json given");
    }
    if files.len() == 1 {
        let (file, r) = files.into_iter().next().expect("one file");
        return Ok(rerender(&file, r));
    }
    let mut files = files.into_iter();
    let (file0, mut out) = files.next().expect("two files at least");
    let reps = reps_of(&out);
    let tag = |k: usize| format!("@{}", k + 1);
    let tagged = |label: &str, k: usize| format!("{label} {}", tag(k));
    let first_labels: Vec<String> = out.arms.iter().map(|a| a.label().to_string()).collect();
    let aa0 = out
        .aa_arm
        .as_ref()
        .and_then(|l| out.arms.iter().position(|a| a.label() == l));
    let mut pairs = report::pairs(&out.arms, aa0);
    out.sources = vec![source(&file0, &tag(0), &out)];
    retag(&mut out, &tag(0));
    out.aa_arm = out.aa_arm.as_ref().map(|l| tagged(l, 0));
    for (k, (file, mut r)) in files.enumerate().map(|(k, f)| (k + 1, f)) {
        out.sources.push(source(&file, &tag(k), &r));
        let note = |what: &str| format!("{} ({}) {what}", tag(k), file);
        if r.window_s != out.window_s || r.warmup_s != out.warmup_s {
            out.merge_notes.push(note(&format!(
                "ran windows of {} s after {} s of warm-up ({} and {} s in {})",
                r.window_s,
                r.warmup_s,
                out.window_s,
                out.warmup_s,
                tag(0)
            )));
        }
        if r.processes != out.processes {
            out.merge_notes.push(note(
                "ran its tasks as a different kind (threads/processes)",
            ));
        }
        // This file's workloads in the merged list, by label.
        let mut wmap = Vec::new();
        for w in &r.workloads {
            match out.workloads.iter().position(|x| x.label == w.label) {
                Some(i) => {
                    if out.workloads[i].params != w.params {
                        out.merge_notes
                            .push(note(&format!("ran {} with other parameters", w.label)));
                    }
                    for m in &w.metrics {
                        if !out.workloads[i].metrics.iter().any(|x| x.name == m.name) {
                            out.workloads[i].metrics.push(m.clone());
                        }
                    }
                    wmap.push(i);
                }
                None => {
                    out.workloads.push(w.clone());
                    wmap.push(out.workloads.len() - 1);
                }
            }
        }
        let offset = out.arms.len();
        let aa = r
            .aa_arm
            .as_ref()
            .and_then(|l| r.arms.iter().position(|a| a.label() == l));
        for p in report::pairs(&r.arms, aa) {
            pairs.push(Pair {
                base: p.base + offset,
                arm: p.arm + offset,
                ..p
            });
        }
        for (i, a) in r.arms.iter().enumerate() {
            if let Some(j) = first_labels.iter().position(|l| l == a.label()) {
                pairs.push(Pair {
                    base: j,
                    arm: offset + i,
                    is_aa: false,
                    cross_boot: true,
                });
            }
        }
        retag(&mut r, &tag(k));
        for run in &mut r.runs {
            run.arm += offset;
            run.workload = wmap[run.workload];
        }
        out.arms.append(&mut r.arms);
        out.runs.append(&mut r.runs);
        out.order.append(&mut r.order);
        out.failed_arms.append(&mut r.failed_arms);
        out.restore_errors
            .extend(r.restore_errors.iter().map(|e| format!("{}: {e}", tag(k))));
        out.runs_per_arm = out.runs_per_arm.max(r.runs_per_arm);
        out.interrupted |= r.interrupted;
        if let Some(f) = r.fatal {
            out.fatal = Some(match out.fatal {
                Some(x) => format!("{x}; {}: {f}", tag(k)),
                None => format!("{}: {f}", tag(k)),
            });
        }
        out.knobs_restored = match (out.knobs_restored, r.knobs_restored) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        };
    }
    let (summaries, counters, comparisons) =
        report::analyze(&out.arms, &out.workloads, &out.runs, &pairs, out.seed, reps);
    out.summaries = summaries;
    out.counters = counters;
    out.comparisons = comparisons;
    out.traces = traces_of(&out);
    out.fidelity = Vec::new();
    out.fidelity_feature = None;
    out.bootstrap_reps = reps;
    out.tool = "scx_eevdf_lab bench compare".into();
    out.version = env!("CARGO_PKG_VERSION").into();
    out.command_line = std::env::args().collect();
    out.created_unix_ms = now_ms();
    Ok(out)
}

/// The per-arm traces of a report's runs (none when it was not traced).
fn traces_of(r: &Report) -> Vec<super::trace::report::ArmTrace> {
    let labels: Vec<&str> = r.arms.iter().map(|a| a.label()).collect();
    let ncpus = r.environment.topology.allowed.len();
    super::trace::report::summaries(&labels, &r.workloads, &r.runs, ncpus)
}

/// A session's report analysed again as the session did.
fn rerender(file: &str, mut r: Report) -> Report {
    let reps = reps_of(&r);
    let aa = r
        .aa_arm
        .as_ref()
        .and_then(|l| r.arms.iter().position(|a| a.label() == l));
    let (summaries, counters, comparisons) = report::analyze(
        &r.arms,
        &r.workloads,
        &r.runs,
        &report::pairs(&r.arms, aa),
        r.seed,
        reps,
    );
    r.fidelity = match &r.fidelity_feature {
        Some(f) => report::fidelity(&report::fidelity_features(f), &r.arms, &comparisons),
        None => Vec::new(),
    };
    r.summaries = summaries;
    r.counters = counters;
    r.comparisons = comparisons;
    r.traces = traces_of(&r);
    r.bootstrap_reps = reps;
    r.sources = vec![source(file, "", &r)];
    r
}

/// Gives every arm label of a report the suffix `tag`, wherever the report names it.
fn retag(r: &mut Report, tag: &str) {
    let t = |l: &str| format!("{l} {tag}");
    for a in &mut r.arms {
        a.spec.label = t(&a.spec.label);
    }
    for run in &mut r.runs {
        run.arm_label = t(&run.arm_label);
    }
    for o in &mut r.order {
        *o = t(o);
    }
    for f in &mut r.failed_arms {
        f.arm = t(&f.arm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::report::tests::sample_report;

    /// A session as `bench compare` finds it on disk: serialized and read back.
    fn saved(r: &Report) -> Report {
        // One folder per call: the tests run in parallel.
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("lab-compare-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("bench.json");
        std::fs::write(&p, serde_json::to_string_pretty(r).unwrap()).unwrap();
        let back = load(&p).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        back
    }

    #[test]
    fn one_file_is_rendered_again_unchanged() {
        let r = sample_report();
        let again = merge(vec![("a.json".into(), saved(&r))]).unwrap();
        assert_eq!(again.summaries, r.summaries);
        assert_eq!(again.counters, r.counters);
        assert_eq!(again.comparisons, r.comparisons);
        assert_eq!(report::csv(&again), report::csv(&r));
        assert_eq!(again.sources.len(), 1);
        // The table is the session's, with the file it came from named.
        let (t0, t1) = (report::table(&r), report::table(&again));
        assert!(t1.contains("a.json"), "{t1}");
        let body = |t: &str| t[t.find("\npingpong").unwrap()..].to_string();
        assert_eq!(body(&t0), body(&t1));
    }

    #[test]
    fn two_sessions_merge_with_each_sessions_statistics() {
        let r = sample_report();
        let merged = merge(vec![
            ("boot1/bench.json".into(), saved(&r)),
            ("boot2/bench.json".into(), saved(&r)),
        ])
        .unwrap();
        let labels: Vec<&str> = merged.arms.iter().map(|a| a.label()).collect();
        assert_eq!(
            labels,
            [
                "eevdf @1",
                "lab:NO_DELAY_ZERO @1",
                "eevdf @2",
                "lab:NO_DELAY_ZERO @2"
            ]
        );
        assert_eq!(merged.runs.len(), 2 * r.runs.len());
        // Every arm's summaries and counters are the single session's.
        for tag in ["@1", "@2"] {
            for s in &r.summaries {
                let m = merged
                    .summaries
                    .iter()
                    .find(|x| x.arm == format!("{} {tag}", s.arm) && x.metric == s.metric)
                    .unwrap();
                assert_eq!((&m.values, &m.summary), (&s.values, &s.summary));
            }
            for c in &r.counters {
                let mut want = c.clone();
                want.arm = format!("{} {tag}", c.arm);
                assert!(merged.counters.contains(&want), "{want:?}");
            }
        }
        // Each session's own comparison gives the single session's ratio and interval; only the
        // Holm correction, over more comparisons now, may differ.
        for c in &r.comparisons {
            for tag in ["@1", "@2"] {
                let m = merged
                    .comparisons
                    .iter()
                    .find(|x| {
                        x.arm == format!("{} {tag}", c.arm)
                            && x.base_arm == format!("{} {tag}", c.base_arm)
                            && x.metric == c.metric
                    })
                    .unwrap();
                assert_eq!(
                    (m.ratio, m.welch, m.delta_pct),
                    (c.ratio, c.welch, c.delta_pct)
                );
                assert!(!m.cross_boot);
            }
        }
        // The copy against the original, arm by arm: cross-boot, and exactly no difference.
        for a in ["eevdf", "lab:NO_DELAY_ZERO"] {
            let x = merged
                .comparisons
                .iter()
                .find(|c| c.arm == format!("{a} @2") && c.base_arm == format!("{a} @1"))
                .unwrap();
            let w = x.welch.unwrap();
            assert!(x.cross_boot);
            assert_eq!((x.ratio, x.delta_pct, w.d), (1.0, 0.0, 0.0));
            assert!(w.ci.0 < 1.0 && w.ci.1 > 1.0 && w.p == 1.0, "{w:?}");
        }
        let t = report::table(&merged);
        assert!(t.contains("boot2/bench.json"), "{t}");
        assert!(t.contains("includes boot-to-boot noise"), "{t}");
        assert!(t.contains("eevdf @2 vs eevdf @1 (×)"), "{t}");
        let v = serde_json::to_value(&merged).unwrap();
        assert!(report::validate(&v).is_ok());
    }

    #[test]
    fn unreadable_files_are_refused_with_the_reason() {
        let p = std::env::temp_dir().join(format!("lab-compare-bad-{}.json", std::process::id()));
        std::fs::write(&p, "{\"schema_version\": 1}").unwrap();
        let e = format!("{:#}", load(&p).unwrap_err());
        assert!(
            e.contains("is not a bench.json") && e.contains("missing key"),
            "{e}"
        );
        std::fs::remove_file(&p).unwrap();
        assert!(load(Path::new("/nonexistent/bench.json")).is_err());
        assert!(merge(vec![]).is_err());
    }
}
