//! The statistics of a session: per-arm summaries of every metric, scheduler counters per
//! operation, the comparisons between arms (Δ%, intervals, markers) and the fidelity rows that
//! set a feature's effect in the kernel beside its effect in the mirror.
//!
//! It only computes; the numbers become text in [`super::render`], and the statistical methods
//! themselves are [`crate::bench::stats`].

use super::WorkloadInfo;
use crate::bench::arms::Arm;
use crate::bench::protocol::RunRecord;
use crate::bench::stats::{self, Comparison, Summary};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

const NS_PER_US: f64 = 1e3;
const NS_PER_MS: f64 = 1e6;
const MS_PER_S: f64 = 1e3;
const PCT: f64 = 100.0;

/// One arm's valid runs of one workload and metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmSummary {
    pub arm: String,
    pub workload: String,
    pub metric: String,
    pub values: Vec<f64>,
    pub summary: Option<Summary>,
}

/// Scheduler counters of one arm and workload, per operation over its valid runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// Context switches of the whole system per run and per op (`/proc/stat ctxt`).
    pub system_switches_per_run: Option<f64>,
    pub system_switches_per_op: Option<f64>,
    /// Task migrations of the whole system per run.
    pub system_migrations_per_run: Option<f64>,
    /// Each CPU's idle share of the window, %, averaged over the valid runs.
    pub cpu_idle_pct: BTreeMap<usize, f64>,
    /// BPF run time of all callbacks per operation, ns (--bpf-stats; sched_ext arms).
    pub bpf_ns_per_op: Option<f64>,
    /// Each callback's calls per operation and ns per call (--bpf-stats), costliest first.
    pub bpf_callbacks: Vec<CallbackRow>,
}

/// One BPF callback's share of an arm's work on a workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallbackRow {
    pub name: String,
    pub calls_per_op: f64,
    pub ns_per_call: f64,
}

/// A feature's effect in the kernel and in the mirror, side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// `agrees` (same sign, intervals overlap), `agrees: no effect` (intervals overlap and both
    /// hold 0: neither effect is told apart from noise, whatever the signs of the means),
    /// `agrees: within the kernel's noise` (the kernel's interval holds 0 and the mirror's mean:
    /// the kernel's runs are as consistent with the mirror's effect as with none), `differs`, or
    /// `unknown` (too few runs).
    pub verdict: String,
}

/// The (base, arm, is A/A) pairs to compare: each arm against the first arm of its own scheduler,
/// the first arm of each scheduler against the session's first arm, the A/A copy against its
/// original.
pub fn pairs(arms: &[Arm], aa: Option<usize>) -> Vec<Pair> {
    let mut out = Vec::new();
    for i in 1..arms.len() {
        if Some(i) == aa {
            out.push(Pair::new(0, i, true));
            continue;
        }
        let base = (0..i)
            .find(|&j| Some(j) != aa && arms[j].spec.same_scheduler(&arms[i].spec))
            .unwrap_or(0);
        out.push(Pair::new(base, i, false));
    }
    out
}

/// One comparison to make: arm `arm` against arm `base` (indices into the arms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair {
    pub base: usize,
    pub arm: usize,
    /// The A/A copy against its original: the noise floor.
    pub is_aa: bool,
    /// The two arms ran in different sessions (`bench compare`): boot noise is in the Δ.
    pub cross_boot: bool,
}

impl Pair {
    pub fn new(base: usize, arm: usize, is_aa: bool) -> Pair {
        Pair {
            base,
            arm,
            is_aa,
            cross_boot: false,
        }
    }
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
    pairs: &[Pair],
    seed: u64,
    boot_reps: usize,
) -> (Vec<ArmSummary>, Vec<ArmCounters>, Vec<Comparison>) {
    let mut sums = Vec::new();
    let mut ctrs = Vec::new();
    for (w, wl) in workloads.iter().enumerate() {
        for (a, arm) in arms.iter().enumerate() {
            for m in &wl.metrics {
                let v = values(runs, a, w, &m.name);
                sums.push(ArmSummary {
                    arm: arm.label().into(),
                    workload: wl.label.clone(),
                    metric: m.name.to_string(),
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
            for p in pairs {
                let (b, a) = (p.base, p.arm);
                let (vb, va) = (values(runs, b, w, &m.name), values(runs, a, w, &m.name));
                k += 1;
                let Some((ratio, welch, boot)) =
                    stats::compare(&vb, &va, m.mean, seed.wrapping_add(k), boot_reps)
                else {
                    continue;
                };
                let excludes_one = |ci: (f64, f64)| ci.0 > 1.0 || ci.1 < 1.0;
                cmps.push(Comparison {
                    workload: wl.label.clone(),
                    metric: m.name.to_string(),
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
                    is_aa: p.is_aa,
                    cross_boot: p.cross_boot,
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
    let mut bpf: BTreeMap<&str, crate::bpfstats::Cost> = BTreeMap::new();
    let (mut sys_sw, mut sys_mig) = (Vec::new(), Vec::new());
    let mut sys_sw_ops = 0u64;
    let mut idle: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for r in &valid {
        let Some(m) = &r.measurement else { continue };
        for (name, c) in &r.bpf {
            let e = bpf.entry(name.as_str()).or_default();
            e.calls += c.calls;
            e.ns += c.ns;
        }
        ops += m.ops;
        vol += m.counters.voluntary;
        inv += m.counters.involuntary;
        delay += m.counters.run_delay_ns;
        mig = mig.zip(m.counters.migrations).map(|(a, b)| a + b);
        if let Some(c) = r.sched_cpu_ns {
            cpu.push(c as f64 / NS_PER_MS);
        }
        if let Some(s) = m.counters.system_switches {
            sys_sw.push(s as f64);
            sys_sw_ops += m.ops;
        }
        if let Some(s) = m.counters.system_migrations {
            sys_mig.push(s as f64);
        }
        if m.elapsed_s > 0.0 {
            for (&c, &ms) in &m.counters.cpu_idle_ms {
                let pct = ms as f64 / (m.elapsed_s * MS_PER_S) * PCT;
                idle.entry(c).or_default().push(pct.min(PCT));
            }
        }
    }
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
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
        run_delay_us_per_op: per(delay).map(|d| d / NS_PER_US),
        sched_cpu_ms_per_run: mean(&cpu),
        system_switches_per_run: mean(&sys_sw),
        system_switches_per_op: (sys_sw_ops > 0)
            .then(|| sys_sw.iter().sum::<f64>() / sys_sw_ops as f64),
        system_migrations_per_run: mean(&sys_mig),
        cpu_idle_pct: idle
            .iter()
            .filter_map(|(&c, v)| Some((c, mean(v)?)))
            .collect(),
        bpf_ns_per_op: (!bpf.is_empty())
            .then(|| per(bpf.values().map(|c| c.ns).sum()))
            .flatten(),
        bpf_callbacks: callback_rows(&bpf, ops),
    }
}

/// The callbacks of `bpf` (summed over `ops` operations) per operation, costliest first.
fn callback_rows(bpf: &BTreeMap<&str, crate::bpfstats::Cost>, ops: u64) -> Vec<CallbackRow> {
    if ops == 0 {
        return Vec::new();
    }
    let mut rows: Vec<(u64, CallbackRow)> = bpf
        .iter()
        .map(|(name, c)| {
            (
                c.ns,
                CallbackRow {
                    name: name.to_string(),
                    calls_per_op: c.calls as f64 / ops as f64,
                    ns_per_call: c.ns as f64 / c.calls.max(1) as f64,
                },
            )
        })
        .collect();
    rows.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
    rows.into_iter().map(|(_, r)| r).collect()
}

/// The features of a `--fidelity` value, `FEATURE[+FEATURE...][,SETTING...]`, without NO_.
pub fn fidelity_features(f: &str) -> Vec<&str> {
    let names = f.split(',').next().unwrap_or(f);
    names
        .split('+')
        .map(|n| n.trim())
        .map(|n| n.strip_prefix("NO_").unwrap_or(n))
        .collect()
}

/// The fidelity rows for the features `fs` from the arms of `--fidelity` (bench's
/// fidelity_arms()): the kernel's base arm, one arm per feature turned off, then the same for
/// the lab.
pub fn fidelity(fs: &[&str], arms: &[Arm], cmps: &[Comparison]) -> Vec<FidelityRow> {
    let n = fs.len();
    if n == 0 || arms.len() < 2 * (n + 1) {
        return Vec::new();
    }
    let find = |b: usize, a: usize| {
        move |c: &&Comparison| c.base_arm == arms[b].label() && c.arm == arms[a].label()
    };
    let mut rows = Vec::new();
    for (i, feature) in fs.iter().enumerate() {
        rows.extend(fidelity_rows(
            feature,
            cmps,
            find(0, 1 + i),
            find(n + 1, n + 2 + i),
        ));
    }
    rows
}

/// One feature's rows: each kernel comparison (`kernel` picks them) beside the lab's of the same
/// workload and metric (`lab`).
fn fidelity_rows(
    feature: &str,
    cmps: &[Comparison],
    kernel: impl Fn(&&Comparison) -> bool,
    lab: impl Fn(&&Comparison) -> bool,
) -> Vec<FidelityRow> {
    let mut rows = Vec::new();
    for k in cmps.iter().filter(&kernel) {
        let Some(m) = cmps
            .iter()
            .filter(&lab)
            .find(|c| c.workload == k.workload && c.metric == k.metric)
        else {
            continue;
        };
        let same_sign = k.delta_pct.signum() == m.delta_pct.signum();
        let overlap = k
            .ci_delta_pct
            .zip(m.ci_delta_pct)
            .map(|(a, b)| a.0 <= b.1 && b.0 <= a.1);
        let null = |ci: Option<(f64, f64)>| ci.is_some_and(|(lo, hi)| lo <= 0.0 && 0.0 <= hi);
        let no_effect = null(k.ci_delta_pct) && null(m.ci_delta_pct);
        // The kernel is the reference: where it shows no effect and its interval holds the
        // mirror's estimate, its runs cannot tell the two apart.
        let within_kernel = k
            .ci_delta_pct
            .is_some_and(|(lo, hi)| lo <= m.delta_pct.min(0.0) && m.delta_pct.max(0.0) <= hi);
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
                Some(true) if no_effect => "agrees: no effect".into(),
                Some(true) if within_kernel => "agrees: within the kernel's noise".into(),
                Some(_) => "differs".into(),
            },
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::arms::{ArmSpec, baseline};
    use crate::bench::report::tests::sample_report;

    #[test]
    fn callback_costs_per_op_costliest_first() {
        use crate::bpfstats::Cost;
        let bpf = BTreeMap::from([
            (
                "lab_enqueue",
                Cost {
                    calls: 20,
                    ns: 8000,
                },
            ),
            (
                "lab_dispatch",
                Cost {
                    calls: 40,
                    ns: 20000,
                },
            ),
            ("lab_tick", Cost { calls: 1, ns: 500 }),
        ]);
        let rows = callback_rows(&bpf, 10);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["lab_dispatch", "lab_enqueue", "lab_tick"]);
        assert_eq!(rows[0].calls_per_op, 4.0);
        assert_eq!(rows[0].ns_per_call, 500.0);
        assert_eq!(rows[1].ns_per_call, 400.0);
        assert!(callback_rows(&bpf, 0).is_empty());
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
    fn pairs_compare_within_kind_then_with_the_first_arm() {
        let base = baseline(4);
        let arms: Vec<Arm> = ["eevdf", "eevdf:NO_DELAY_ZERO", "lab", "lab:NO_DELAY_ZERO"]
            .iter()
            .map(|s| Arm::resolve(ArmSpec::parse(s).unwrap(), &base, 4).unwrap())
            .collect();
        let p: Vec<(usize, usize, bool)> = pairs(&arms, None)
            .iter()
            .map(|p| (p.base, p.arm, p.is_aa))
            .collect();
        assert_eq!(p, vec![(0, 1, false), (0, 2, false), (2, 3, false)]);
        // Two sched_ext binaries are two schedulers: each is compared with the first arm; two
        // arms of one binary with each other.
        let arms: Vec<Arm> = ["eevdf", "scx:/bin/false", "scx:/x/flash", "scx:/x/flash -a"]
            .iter()
            .map(|s| Arm::resolve(ArmSpec::parse(s).unwrap(), &base, 4).unwrap())
            .collect();
        let p: Vec<(usize, usize)> = pairs(&arms, None).iter().map(|p| (p.base, p.arm)).collect();
        assert_eq!(p, vec![(0, 1), (0, 2), (2, 3)]);
    }

    /// The verdicts, with the kernel's and the mirror's Δ% and intervals as given.
    #[test]
    fn fidelity_verdicts() {
        let base = baseline(4);
        let arms: Vec<Arm> = [
            "eevdf:WA_WEIGHT",
            "eevdf:NO_WA_WEIGHT",
            "lab:WA_WEIGHT",
            "lab:NO_WA_WEIGHT",
        ]
        .iter()
        .map(|s| Arm::resolve(ArmSpec::parse(s).unwrap(), &base, 4).unwrap())
        .collect();
        let cmp = |b: usize, a: usize, d: f64, ci: Option<(f64, f64)>| Comparison {
            workload: "messaging".into(),
            metric: "seconds".into(),
            base_arm: arms[b].label().to_string(),
            arm: arms[a].label().to_string(),
            better: crate::bench::stats::Better::Lower,
            ratio: 1.0,
            delta_pct: d,
            welch: None,
            ci_delta_pct: ci,
            bootstrap_ci: None,
            bootstrap_agrees: None,
            p_adj: None,
            noise_floor_pct: None,
            marker: String::new(),
            is_aa: false,
            cross_boot: false,
        };
        let verdict = |k: (f64, Option<(f64, f64)>), m: (f64, Option<(f64, f64)>)| {
            let rows = fidelity(
                &["WA_WEIGHT"],
                &arms,
                &[cmp(0, 1, k.0, k.1), cmp(2, 3, m.0, m.1)],
            );
            assert_eq!(rows.len(), 1);
            rows[0].verdict.clone()
        };
        // Same sign, overlapping intervals.
        assert_eq!(
            verdict((24.5, Some((-1.6, 42.8))), (33.7, Some((28.6, 38.3)))),
            "agrees"
        );
        // Opposite means, but both intervals hold 0: no effect on either side.
        assert_eq!(
            verdict((-2.7, Some((-9.8, 3.8))), (4.0, Some((-1.7, 9.4)))),
            "agrees: no effect"
        );
        // Opposite means and the kernel's effect is real: the mirror's interval overlaps, yet
        // it differs.
        assert_eq!(
            verdict((-5.5, Some((-9.7, -1.5))), (0.7, Some((-10.7, 11.2)))),
            "differs"
        );
        // Opposite means, the mirror's effect is real but the kernel's interval holds both 0 and
        // the mirror's estimate: the kernel's runs cannot tell them apart.
        assert_eq!(
            verdict((-1.46, Some((-14.0, 10.3))), (4.17, Some((0.3, 7.9)))),
            "agrees: within the kernel's noise"
        );
        // ... but not when the mirror's estimate lies outside the kernel's interval.
        assert_eq!(
            verdict((-0.92, Some((-8.3, 5.9))), (14.33, Some((1.1, 25.3)))),
            "differs"
        );
        // Same sign, disjoint intervals.
        assert_eq!(
            verdict((5.0, Some((4.0, 6.0))), (20.0, Some((18.0, 22.0)))),
            "differs"
        );
        assert_eq!(verdict((5.0, None), (5.0, Some((4.0, 6.0)))), "unknown");
    }

    /// Two features in one session: each is read off its own arm against its side's base.
    #[test]
    fn fidelity_of_two_features_pairs_each_with_its_base() {
        let base = baseline(4);
        let labels = [
            "eevdf:WA_WEIGHT+WA_IDLE",
            "eevdf:NO_WA_WEIGHT+WA_IDLE",
            "eevdf:WA_WEIGHT+NO_WA_IDLE",
            "lab:WA_WEIGHT+WA_IDLE",
            "lab:NO_WA_WEIGHT+WA_IDLE",
            "lab:WA_WEIGHT+NO_WA_IDLE",
        ];
        let arms: Vec<Arm> = labels
            .iter()
            .map(|s| Arm::resolve(ArmSpec::parse(s).unwrap(), &base, 4).unwrap())
            .collect();
        let mut cmps = Vec::new();
        for p in pairs(&arms, None) {
            let mut c = sample_report().comparisons[0].clone();
            c.workload = "messaging".into();
            c.base_arm = arms[p.base].label().to_string();
            c.arm = arms[p.arm].label().to_string();
            c.delta_pct = p.arm as f64;
            c.ci_delta_pct = Some((p.arm as f64 - 0.5, p.arm as f64 + 0.5));
            cmps.push(c);
        }
        let rows = fidelity(&fidelity_features("WA_WEIGHT+WA_IDLE"), &arms, &cmps);
        let got: Vec<(&str, f64, f64)> = rows
            .iter()
            .map(|r| (r.feature.as_str(), r.kernel_delta_pct, r.mirror_delta_pct))
            .collect();
        assert_eq!(got, [("WA_WEIGHT", 1.0, 4.0), ("WA_IDLE", 2.0, 5.0)]);
    }
}
