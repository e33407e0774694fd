//! A/B statistics over runs (one run = one replicate): per-arm summaries, the ratio of an arm
//! to its baseline with a 95 % confidence interval, p-values with Holm's correction, and the
//! markers of the table.
//!
//! The interval comes from Welch's t-test on log values: with `d = mean(ln new) - mean(ln base)`
//! and `se² = s²(ln base)/n₁ + s²(ln new)/n₂`, `exp(d ± t₀.₉₇₅,df · se)` is a 95 % interval of the
//! ratio new/base (of geometric means), with the Welch–Satterthwaite
//! `df = se⁴ / ((s₁²/n₁)²/(n₁-1) + (s₂²/n₂)²/(n₂-1))`. A seeded percentile bootstrap of the
//! ratio of the arms' own means confirms it (it should exclude 1 exactly when Welch does).
//! Distributions and descriptive statistics come from statrs; nothing here reads a clock.

use rand::Rng;
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};
use statrs::statistics::{Data, OrderStatistics, Statistics};

/// Which direction of a metric is an improvement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Higher,
    Lower,
}

/// Which central value stands for an arm: harmonic for rates, arithmetic for times, median for
/// latency percentiles (bench-notes §2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MeanKind {
    Harmonic,
    Arithmetic,
    Median,
}

impl MeanKind {
    pub fn label(self) -> &'static str {
        match self {
            MeanKind::Harmonic => "HMean",
            MeanKind::Arithmetic => "AMean",
            MeanKind::Median => "Median",
        }
    }

    pub fn of(self, v: &[f64]) -> f64 {
        match self {
            MeanKind::Harmonic => v.iter().harmonic_mean(),
            MeanKind::Arithmetic => v.iter().mean(),
            MeanKind::Median => Data::new(v.to_vec()).median(),
        }
    }
}

/// One arm's runs of one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub mean_kind: MeanKind,
    /// The central value of the kind above.
    pub mean: f64,
    pub median: f64,
    /// Sample standard deviation (n-1).
    pub stddev: f64,
    /// stddev / arithmetic mean.
    pub cv: f64,
    pub min: f64,
    pub max: f64,
}

pub fn summarize(v: &[f64], kind: MeanKind) -> Option<Summary> {
    if v.is_empty() {
        return None;
    }
    let amean = v.iter().mean();
    let stddev = if v.len() > 1 { v.iter().std_dev() } else { 0.0 };
    Some(Summary {
        n: v.len(),
        mean_kind: kind,
        mean: kind.of(v),
        median: Data::new(v.to_vec()).median(),
        stddev,
        cv: if amean != 0.0 {
            stddev / amean.abs()
        } else {
            0.0
        },
        min: Statistics::min(v.iter()),
        max: Statistics::max(v.iter()),
    })
}

/// Welch's test on log values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Welch {
    /// mean(ln new) - mean(ln base).
    pub d: f64,
    pub se: f64,
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// 95 % interval of the ratio new/base.
    pub ci: (f64, f64),
}

/// The t quantile; `df` may be fractional (Welch).
pub fn t_quantile(df: f64, p: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df).expect("df > 0").inverse_cdf(p)
}

/// None when either side has fewer than two runs or a non-positive value.
pub fn welch_log(base: &[f64], new: &[f64]) -> Option<Welch> {
    if base.len() < 2 || new.len() < 2 || base.iter().chain(new).any(|&x| x <= 0.0) {
        return None;
    }
    let lb: Vec<f64> = base.iter().map(|x| x.ln()).collect();
    let ln: Vec<f64> = new.iter().map(|x| x.ln()).collect();
    let (n1, n2) = (lb.len() as f64, ln.len() as f64);
    let d = ln.iter().mean() - lb.iter().mean();
    let v1 = lb.iter().variance() / n1;
    let v2 = ln.iter().variance() / n2;
    let se = (v1 + v2).sqrt();
    if se == 0.0 || !se.is_finite() {
        // Identical runs within each arm: the ratio is exact.
        let r = d.exp();
        return Some(Welch {
            d,
            se: 0.0,
            df: n1 + n2 - 2.0,
            p: if d == 0.0 { 1.0 } else { 0.0 },
            ci: (r, r),
        });
    }
    let df = (v1 + v2).powi(2) / (v1 * v1 / (n1 - 1.0) + v2 * v2 / (n2 - 1.0));
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let t = d / se;
    let p = (2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0);
    let q = t_quantile(df, 0.975);
    Some(Welch {
        d,
        se,
        df,
        p,
        ci: ((d - q * se).exp(), (d + q * se).exp()),
    })
}

/// Percentile bootstrap (seeded) of `M(new*)/M(base*)` where M is the arms' mean kind.
pub fn bootstrap_ratio_ci(
    base: &[f64],
    new: &[f64],
    kind: MeanKind,
    seed: u64,
    reps: usize,
) -> Option<(f64, f64)> {
    if base.len() < 2 || new.len() < 2 || reps < 100 {
        return None;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut rb = vec![0.0; base.len()];
    let mut rn = vec![0.0; new.len()];
    let mut ratios = Vec::with_capacity(reps);
    for _ in 0..reps {
        for x in rb.iter_mut() {
            *x = base[rng.random_range(0..base.len())];
        }
        for x in rn.iter_mut() {
            *x = new[rng.random_range(0..new.len())];
        }
        let (mb, mn) = (kind.of(&rb), kind.of(&rn));
        if mb > 0.0 && mn.is_finite() {
            ratios.push(mn / mb);
        }
    }
    if ratios.len() < reps / 2 {
        return None;
    }
    let mut d = Data::new(ratios);
    Some((d.quantile(0.025), d.quantile(0.975)))
}

/// Holm's step-down adjustment, returned in the input order.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut idx: Vec<usize> = (0..m).collect();
    idx.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut out = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in idx.iter().enumerate() {
        let adj = ((m - rank) as f64 * p[i]).min(1.0);
        running = running.max(adj);
        out[i] = running;
    }
    out
}

/// Signed change in percent, + = better (mmtests' convention): new/base - 1 for higher-is-better,
/// 1 - new/base for lower-is-better.
pub fn delta_pct(ratio: f64, better: Better) -> f64 {
    match better {
        Better::Higher => (ratio - 1.0) * 100.0,
        Better::Lower => (1.0 - ratio) * 100.0,
    }
}

/// A ratio interval as a Δ% interval (lower bound first).
pub fn delta_pct_ci(ci: (f64, f64), better: Better) -> (f64, f64) {
    let (a, b) = (delta_pct(ci.0, better), delta_pct(ci.1, better));
    (a.min(b), a.max(b))
}

/// One arm against its baseline for one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub workload: String,
    pub metric: String,
    pub base_arm: String,
    pub arm: String,
    pub better: Better,
    /// mean(new)/mean(base), with the metric's mean kind.
    pub ratio: f64,
    pub delta_pct: f64,
    pub welch: Option<Welch>,
    pub ci_delta_pct: Option<(f64, f64)>,
    pub bootstrap_ci: Option<(f64, f64)>,
    /// True when the bootstrap interval excludes 1 exactly when Welch's does.
    pub bootstrap_agrees: Option<bool>,
    /// Holm-adjusted p over every comparison of the session.
    pub p_adj: Option<f64>,
    /// |Δ%| of the A/A comparison of this workload and metric, when one was run.
    pub noise_floor_pct: Option<f64>,
    /// `*` significant and above the noise floor, `?` noisy (CV > 5 %), or empty.
    pub marker: String,
    /// True for the A/A comparison itself.
    pub is_aa: bool,
    /// The arms come from different sessions (`bench compare`): the Δ includes boot noise.
    #[serde(default)]
    pub cross_boot: bool,
}

/// Threshold above which an arm's run-to-run variation makes a comparison "noisy".
pub const NOISY_CV: f64 = 0.05;

/// The ratio new/base, Welch's test on logs, and the bootstrap interval of the ratio.
pub type RatioTest = (f64, Option<Welch>, Option<(f64, f64)>);

/// Compares `new` with `base` (p_adj, noise floor and marker are filled in by [`finish`]).
pub fn compare(
    base: &[f64],
    new: &[f64],
    kind: MeanKind,
    seed: u64,
    reps: usize,
) -> Option<RatioTest> {
    if base.is_empty() || new.is_empty() {
        return None;
    }
    let (mb, mn) = (kind.of(base), kind.of(new));
    if mb <= 0.0 || !mn.is_finite() {
        return None;
    }
    Some((
        mn / mb,
        welch_log(base, new),
        bootstrap_ratio_ci(base, new, kind, seed, reps),
    ))
}

/// Holm-adjusts the p-values of all comparisons and sets the markers. `cv_of(arm, workload,
/// metric)` gives an arm's CV.
pub fn finish(cmps: &mut [Comparison], cv_of: impl Fn(&str, &str, &str) -> Option<f64>) {
    let with_p: Vec<usize> = (0..cmps.len())
        .filter(|&i| cmps[i].welch.is_some() && !cmps[i].is_aa)
        .collect();
    let adj = holm(
        &with_p
            .iter()
            .map(|&i| cmps[i].welch.unwrap().p)
            .collect::<Vec<_>>(),
    );
    for (k, &i) in with_p.iter().enumerate() {
        cmps[i].p_adj = Some(adj[k]);
    }
    // The A/A comparisons give each workload/metric its noise floor.
    let floors: Vec<(String, String, f64)> = cmps
        .iter()
        .filter(|c| c.is_aa)
        .map(|c| (c.workload.clone(), c.metric.clone(), c.delta_pct.abs()))
        .collect();
    for c in cmps.iter_mut() {
        if c.is_aa {
            c.p_adj = c.welch.map(|w| w.p);
            continue;
        }
        c.noise_floor_pct = floors
            .iter()
            .find(|f| f.0 == c.workload && f.1 == c.metric)
            .map(|f| f.2);
        let threshold = (2.0 * c.noise_floor_pct.unwrap_or(0.0)).max(1.0);
        let significant = c.p_adj.is_some_and(|p| p < 0.05) && c.delta_pct.abs() >= threshold;
        let noisy = [&c.arm, &c.base_arm]
            .iter()
            .any(|a| cv_of(a, &c.workload, &c.metric).is_some_and(|cv| cv > NOISY_CV));
        c.marker = if significant {
            "*".into()
        } else if noisy {
            "?".into()
        } else {
            String::new()
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn summary_matches_hand_computed_values() {
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let s = summarize(&v, MeanKind::Arithmetic).unwrap();
        assert_eq!(s.n, 8);
        assert!(close(s.mean, 5.0, 1e-12));
        // Σ(x-5)² = 9+1+1+1+0+0+4+16 = 32, sample variance 32/7.
        assert!(close(s.stddev, (32.0f64 / 7.0).sqrt(), 1e-12));
        assert!(close(s.cv, (32.0f64 / 7.0).sqrt() / 5.0, 1e-12));
        assert!(close(s.median, 4.5, 1e-12));
        assert_eq!((s.min, s.max), (2.0, 9.0));
        // Harmonic mean of 1, 2, 4 = 3 / (1 + 1/2 + 1/4) = 12/7.
        let h = summarize(&[1.0, 2.0, 4.0], MeanKind::Harmonic).unwrap();
        assert!(close(h.mean, 12.0 / 7.0, 1e-12));
        let m = summarize(&[3.0, 1.0, 2.0], MeanKind::Median).unwrap();
        assert_eq!(m.mean, 2.0);
    }

    #[test]
    fn t_quantiles_match_a_printed_table() {
        // Two-sided 95 % critical values from a Student-t table.
        for (df, q) in [
            (1.0, 12.706),
            (5.0, 2.571),
            (8.0, 2.306),
            (10.0, 2.228),
            (30.0, 2.042),
        ] {
            assert!(close(t_quantile(df, 0.975), q, 5e-4), "df {df}");
        }
    }

    #[test]
    fn welch_on_logs_matches_a_hand_computation() {
        // ln values 0,.1,.2,.3,.4 and .2,...,.6: d = 0.2, each sample variance 0.025, so
        // se = sqrt(2 · 0.025/5) = 0.1, df = 0.01² / (2 · 0.005²/4) = 8 and t = 2.
        let base: Vec<f64> = [0.0, 0.1, 0.2, 0.3, 0.4]
            .iter()
            .map(|x: &f64| x.exp())
            .collect();
        let new: Vec<f64> = [0.2, 0.3, 0.4, 0.5, 0.6]
            .iter()
            .map(|x: &f64| x.exp())
            .collect();
        let w = welch_log(&base, &new).unwrap();
        assert!(close(w.d, 0.2, 1e-12));
        assert!(close(w.se, 0.1, 1e-12));
        assert!(close(w.df, 8.0, 1e-9));
        // t = 2 with 8 df lies between the 0.90 (1.860) and 0.95 (2.306) two-sided critical
        // values; the exact two-sided p is 0.0805.
        assert!(close(w.p, 0.0805, 5e-4), "{}", w.p);
        assert!(close(w.ci.0, (0.2f64 - 2.306 * 0.1).exp(), 1e-3));
        assert!(close(w.ci.1, (0.2f64 + 2.306 * 0.1).exp(), 1e-3));
        // Too few runs, or non-positive values: no test.
        assert!(welch_log(&base[..1], &new).is_none());
        assert!(welch_log(&[0.0, 1.0], &new).is_none());
    }

    #[test]
    fn identical_runs_give_an_exact_ratio() {
        let w = welch_log(&[2.0, 2.0, 2.0], &[3.0, 3.0]).unwrap();
        assert!(close(w.ci.0, 1.5, 1e-12) && close(w.ci.1, 1.5, 1e-12));
        assert_eq!(w.p, 0.0);
        assert_eq!(welch_log(&[2.0, 2.0], &[2.0, 2.0]).unwrap().p, 1.0);
    }

    #[test]
    fn holm_matches_the_step_down_by_hand() {
        // Sorted: .005·4 = .02, .01·3 = .03, .03·2 = .06, .04·1 = .04 → monotone .06.
        let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
        let want = [0.03, 0.06, 0.06, 0.02];
        for (a, w) in adj.iter().zip(want) {
            assert!(close(*a, w, 1e-12), "{adj:?}");
        }
        assert_eq!(holm(&[0.9, 0.8]), vec![1.0, 1.0]);
        assert!(holm(&[]).is_empty());
    }

    #[test]
    fn delta_sign_is_plus_for_better() {
        assert!(close(delta_pct(1.10, Better::Higher), 10.0, 1e-9));
        assert!(close(delta_pct(1.10, Better::Lower), -10.0, 1e-9));
        let (lo, hi) = delta_pct_ci((0.9, 1.2), Better::Lower);
        assert!(close(lo, -20.0, 1e-9) && close(hi, 10.0, 1e-9), "{lo} {hi}");
    }

    #[test]
    fn bootstrap_is_seeded_and_agrees_with_welch_on_clear_data() {
        let base = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2];
        let new = [110.0, 111.0, 109.0, 110.5, 109.5, 110.3];
        let a = bootstrap_ratio_ci(&base, &new, MeanKind::Harmonic, 7, 2000).unwrap();
        let b = bootstrap_ratio_ci(&base, &new, MeanKind::Harmonic, 7, 2000).unwrap();
        assert_eq!(a, b);
        let w = welch_log(&base, &new).unwrap();
        assert!(a.0 > 1.0 && w.ci.0 > 1.0);
        let r = MeanKind::Harmonic.of(&new) / MeanKind::Harmonic.of(&base);
        assert!(a.0 <= r && r <= a.1);
    }

    fn cmp(arm: &str, delta: f64, p: f64, aa: bool) -> Comparison {
        Comparison {
            workload: "w".into(),
            metric: "m".into(),
            base_arm: "A".into(),
            arm: arm.into(),
            better: Better::Higher,
            ratio: 1.0 + delta / 100.0,
            delta_pct: delta,
            welch: Some(Welch {
                d: 0.0,
                se: 1.0,
                df: 5.0,
                p,
                ci: (1.0, 1.0),
            }),
            ci_delta_pct: None,
            bootstrap_ci: None,
            bootstrap_agrees: None,
            p_adj: None,
            noise_floor_pct: None,
            marker: String::new(),
            is_aa: aa,
            cross_boot: false,
        }
    }

    #[test]
    fn markers_need_significance_and_the_noise_floor() {
        let mut c = vec![
            cmp("B", 5.0, 0.001, false),
            cmp("C", 3.0, 0.001, false),
            cmp("D", 20.0, 0.5, false),
            cmp("A'", 2.0, 0.4, true),
        ];
        finish(&mut c, |arm, _, _| {
            Some(if arm == "D" { 0.2 } else { 0.01 })
        });
        // B: significant and above 2 × 2 % → *. C: 3 % < 4 % → not starred. D: noisy → ?.
        assert_eq!(c[0].marker, "*");
        assert_eq!(c[1].marker, "");
        assert_eq!(c[2].marker, "?");
        assert_eq!(c[0].noise_floor_pct, Some(2.0));
        // Holm over the three real comparisons (A/A excluded): .001·3, .001·2 → .003, .003.
        assert!(close(c[0].p_adj.unwrap(), 0.003, 1e-12));
        assert!(close(c[2].p_adj.unwrap(), 0.5, 1e-12));
    }
}
