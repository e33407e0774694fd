//! The arms of an A/B comparison: their command-line syntax, and their settings resolved
//! against the baseline the bench starts from. Putting an arm in effect and checking it is
//! [`super::runner`]'s job, not this module's.
//!
//! * `eevdf[:FEATURES][,tunable=value...]` — the kernel's built-in EEVDF, with the debugfs
//!   features and tunables set for its runs.
//! * `lab[:FEATURES][,tunable=value...]` — our scheduler, started as a child of the bench and
//!   kept attached across consecutive lab runs; features change live through the knobs map.
//! * `scx:PATH [ARGS]` — any other sched_ext scheduler binary, started and stopped around its
//!   runs.
//!
//! An eevdf arm may also set the kernel's own knobs that have no lab counterpart
//! ([`KERNEL_ONLY`], none at present); arms that do not name them run with the values the
//! kernel had when the bench started. `preempt` and `cgroup_mode` are tunables of both:
//! `eevdf,preempt=full` and `lab,cgroup_mode=smp` (an arm that does not name them runs with the
//! kernel's).
//!
//! FEATURES are tokens in the kernel's syntax (`NO_DELAY_ZERO`), separated by spaces or `+`;
//! they apply on top of the kernel's settings when the bench started, so that `eevdf` and `lab`
//! start from identical settings.

use crate::features::{self, FeatureSet};
use crate::kernel::KnobSnapshot;
use crate::tunables::{self, Tunables};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ArmKind {
    Eevdf,
    Lab,
    Scx { path: String, args: Vec<String> },
}

/// An arm as written on the command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArmSpec {
    pub label: String,
    #[serde(flatten)]
    pub kind: ArmKind,
    /// Feature tokens, kernel syntax.
    pub features: Vec<String>,
    /// `name=value` tunable assignments.
    pub tunables: Vec<String>,
    /// `name=value` for the kernel-only knobs of an eevdf arm.
    pub kernel_knobs: Vec<(String, String)>,
}

/// Kernel debugfs knobs without a lab counterpart that an eevdf arm may set.
pub const KERNEL_ONLY: &[&str] = &[];

impl ArmSpec {
    pub fn parse(s: &str) -> Result<ArmSpec> {
        let s = s.trim();
        if let Some(rest) = s.strip_prefix("scx:") {
            let mut words = rest.split_whitespace().map(String::from);
            let path = words
                .next()
                .context("scx arm: expected scx:PATH [ARGS], e.g. \"scx:/usr/bin/scx_flash\"")?;
            return Ok(ArmSpec {
                label: s.to_string(),
                kind: ArmKind::Scx {
                    path,
                    args: words.collect(),
                },
                features: Vec::new(),
                tunables: Vec::new(),
                kernel_knobs: Vec::new(),
            });
        }
        let (head, tun) = s.split_once(',').unwrap_or((s, ""));
        let (kind, feats) = head.split_once(':').unwrap_or((head, ""));
        let kind = match kind {
            "eevdf" => ArmKind::Eevdf,
            "lab" => ArmKind::Lab,
            _ => bail!(
                "unknown arm {s:?}: expected eevdf[:FEATURES][,tunable=value...], \
                 lab[:FEATURES][,tunable=value...] or scx:PATH [ARGS]"
            ),
        };
        let features: Vec<String> = feats
            .replace('+', " ")
            .split_whitespace()
            .map(String::from)
            .collect();
        let parsed = features::parse_tokens(&features).with_context(|| format!("arm {s:?}"))?;
        if kind == ArmKind::Eevdf
            && let Some((f, _)) = parsed.iter().find(|(f, _)| !f.in_kernel)
        {
            bail!(
                "arm {s:?}: {} is a lab knob, not a kernel feature; it only applies to lab arms",
                f.name
            );
        }
        let mut tunables: Vec<String> = Vec::new();
        let mut kernel_knobs = Vec::new();
        for t in tun.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            match t.split_once('=') {
                Some((name, value)) if KERNEL_ONLY.contains(&name.trim()) => {
                    if kind != ArmKind::Eevdf {
                        bail!(
                            "arm {s:?}: {} is a knob of the kernel's EEVDF only",
                            name.trim()
                        );
                    }
                    kernel_knobs.push((name.trim().to_string(), value.trim().to_string()));
                }
                _ => tunables.push(t.to_string()),
            }
        }
        tunables::parse_assignments(&tunables).with_context(|| {
            format!(
                "arm {s:?} (kernel-only knobs of eevdf arms: {})",
                KERNEL_ONLY.join(" ")
            )
        })?;
        Ok(ArmSpec {
            label: s.to_string(),
            kind,
            features,
            tunables,
            kernel_knobs,
        })
    }

    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            ArmKind::Eevdf => "eevdf",
            ArmKind::Lab => "lab",
            ArmKind::Scx { .. } => "scx",
        }
    }

    /// Whether two arms run the same scheduler: the kernel's EEVDF, the lab, or one sched_ext
    /// binary (two scx arms of different binaries are different schedulers).
    pub fn same_scheduler(&self, other: &ArmSpec) -> bool {
        match (&self.kind, &other.kind) {
            (ArmKind::Scx { path: a, .. }, ArmKind::Scx { path: b, .. }) => a == b,
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    }

    /// True when running this arm changes a kernel or scheduler setting (needs root).
    pub fn needs_root(&self) -> bool {
        self.kind != ArmKind::Eevdf
            || !self.features.is_empty()
            || !self.tunables.is_empty()
            || !self.kernel_knobs.is_empty()
    }
}

/// An arm with its settings resolved against the baseline.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Arm {
    pub spec: ArmSpec,
    /// The features this arm runs with (lab knobs included; eevdf arms only use kernel flags).
    #[serde(serialize_with = "ser_features", deserialize_with = "de_features")]
    pub features: FeatureSet,
    pub tunables: Tunables,
}

fn ser_features<S: serde::Serializer>(f: &FeatureSet, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(f.to_line().trim_end())
}

/// The features line of a saved report, read back (`bench compare`).
fn de_features<'de, D: serde::Deserializer<'de>>(d: D) -> Result<FeatureSet, D::Error> {
    let line = String::deserialize(d)?;
    let tokens: Vec<&str> = line.split_whitespace().collect();
    FeatureSet::defaults()
        .apply(&tokens)
        .map_err(|e| serde::de::Error::custom(format!("{e:#}")))
}

/// The settings every arm starts from: the kernel's when readable, else the defaults.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Baseline {
    #[serde(serialize_with = "ser_features", deserialize_with = "de_features")]
    pub features: FeatureSet,
    pub tunables: Tunables,
    /// Where they came from: "kernel" or "defaults".
    pub source: String,
    /// Kernel feature names the lab does not know (kept as they are).
    pub unknown: Vec<String>,
}

pub fn baseline(ncpus: u64) -> Baseline {
    match KnobSnapshot::read().and_then(|s| {
        let (f, unknown) = s.feature_set();
        Ok((f, s.tunables(ncpus)?, unknown))
    }) {
        Ok((features, tunables, unknown)) => Baseline {
            features,
            tunables,
            source: "kernel".into(),
            unknown,
        },
        Err(_) => Baseline {
            features: FeatureSet::defaults(),
            tunables: Tunables::defaults(ncpus),
            source: "defaults".into(),
            unknown: Vec::new(),
        },
    }
}

impl Arm {
    pub fn resolve(spec: ArmSpec, base: &Baseline, ncpus: u64) -> Result<Arm> {
        Ok(Arm {
            features: base.features.apply(&spec.features)?,
            tunables: base.tunables.apply(&spec.tunables, ncpus)?,
            spec,
        })
    }

    pub fn label(&self) -> &str {
        &self.spec.label
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_arm_kinds() {
        let a = ArmSpec::parse("eevdf").unwrap();
        assert_eq!(a.kind, ArmKind::Eevdf);
        assert!(a.features.is_empty() && !a.needs_root());
        let b =
            ArmSpec::parse("eevdf:NO_DELAY_ZERO+NO_RUN_TO_PARITY,base_slice_ns=3000000").unwrap();
        assert_eq!(b.features, vec!["NO_DELAY_ZERO", "NO_RUN_TO_PARITY"]);
        assert_eq!(b.tunables, vec!["base_slice_ns=3000000"]);
        let k = ArmSpec::parse("eevdf,preempt=full,cgroup_mode=smp,nr_migrate=8").unwrap();
        assert_eq!(
            k.tunables,
            vec!["preempt=full", "cgroup_mode=smp", "nr_migrate=8"]
        );
        assert!(k.kernel_knobs.is_empty());
        let g = ArmSpec::parse("lab,cgroup_mode=tasks").unwrap();
        assert_eq!(g.tunables, vec!["cgroup_mode=tasks"]);
        let e = ArmSpec::parse("lab,cgroup_mode=flat").unwrap_err();
        assert!(
            format!("{e:#}").contains("up|smp|concur|max|tasks"),
            "{e:#}"
        );
        let l = ArmSpec::parse("lab,preempt=lazy").unwrap();
        assert_eq!(l.tunables, vec!["preempt=lazy"]);
        let e = ArmSpec::parse("lab,preempt=sometimes").unwrap_err();
        assert!(
            format!("{e:#}").contains("none|voluntary|full|lazy"),
            "{e:#}"
        );
        assert!(b.needs_root());
        let c = ArmSpec::parse("lab:NO_DELAY_ZERO DELAY_WAKE_COLD").unwrap();
        assert_eq!(c.kind, ArmKind::Lab);
        assert_eq!(c.features.len(), 2);
        let d = ArmSpec::parse("scx:/usr/bin/scx_flash --slice-us 1000").unwrap();
        assert_eq!(
            d.kind,
            ArmKind::Scx {
                path: "/usr/bin/scx_flash".into(),
                args: vec!["--slice-us".into(), "1000".into()]
            }
        );
        assert_eq!(
            ArmSpec::parse("lab,nr_migrate=8").unwrap().tunables,
            vec!["nr_migrate=8"]
        );
    }

    #[test]
    fn bad_arms_are_refused_with_the_reason() {
        let e = ArmSpec::parse("eevdf:NO_SUCH").unwrap_err();
        assert!(format!("{e:#}").contains("NO_SUCH"));
        let e = ArmSpec::parse("eevdf:DELAY_WAKE_COLD")
            .unwrap_err()
            .to_string();
        assert!(e.contains("lab knob"), "{e}");
        let e = ArmSpec::parse("cfs").unwrap_err().to_string();
        assert!(e.contains("eevdf[:FEATURES]"), "{e}");
        assert!(ArmSpec::parse("lab,base_slice_ns=1").is_err());
        assert!(ArmSpec::parse("scx:").is_err());
    }

    #[test]
    fn arms_resolve_on_top_of_the_baseline() {
        let base = Baseline {
            features: FeatureSet::defaults(),
            tunables: Tunables::defaults(4),
            source: "defaults".into(),
            unknown: vec![],
        };
        let a = Arm::resolve(
            ArmSpec::parse("lab:NO_DELAY_ZERO,base_slice_ns=3000000").unwrap(),
            &base,
            4,
        )
        .unwrap();
        assert_eq!(
            FeatureSet::defaults().diff_tokens(&a.features),
            vec!["NO_DELAY_ZERO"]
        );
        assert_eq!(a.tunables.base_slice_ns, 3_000_000);
        assert_eq!(a.tunables.nr_migrate, base.tunables.nr_migrate);
    }
}
