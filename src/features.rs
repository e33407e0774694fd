//! Feature flags in the kernel's own syntax.
//!
//! One parser for the daemon's start options, the live-control CLI and the bench's arms:
//! `PLACE_LAG NO_DELAY_ZERO ...` exactly as `/sys/kernel/debug/sched/features` reads and writes
//! them (the tunables, `base_slice_ns=3000000 ...`, are in `tunables`). This module knows names,
//! bits and defaults; it neither reads nor writes any kernel or BPF state.

use crate::bpf_intf;
use anyhow::Result;
use std::fmt;

/// How faithfully the mirror reproduces a feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mirror {
    /// The BPF scheduler implements the feature at the point where fair.c tests it.
    Exact,
    /// Implemented, with the stated difference from the kernel.
    Approx(&'static str),
    /// Accepted and shown, but it steers a part of the kernel that has no sched_ext counterpart.
    Inert(&'static str),
}

/// One feature flag.
#[derive(Debug, PartialEq, Eq)]
pub struct Feature {
    pub name: &'static str,
    pub bit: u32,
    /// The kernel's default (7.2 and 7.3 Debian cloud kernels), or the lab knob's default.
    pub default_on: bool,
    /// True for the kernel's flags, false for the lab's own experiment knobs.
    pub in_kernel: bool,
    pub mirror: Mirror,
    pub help: &'static str,
}

macro_rules! feat {
    ($name:ident, $on:expr, $kernel:expr, $mirror:expr, $help:expr) => {
        Feature {
            name: stringify!($name),
            bit: paste_bit!($name),
            default_on: $on,
            in_kernel: $kernel,
            mirror: $mirror,
            help: $help,
        }
    };
}

macro_rules! paste_bit {
    ($name:ident) => {
        scx_utils::paste! { bpf_intf::[<lab_feat_LAB_FEAT_ $name>] as u32 }
    };
}

use Mirror::{Approx, Exact, Inert};

/// Every flag, in the order the kernel prints its own (features.h), then the lab's knobs.
pub static FEATURES: &[Feature] = &[
    feat!(
        PLACE_LAG,
        true,
        true,
        Exact,
        "keep a task's lag across sleep and migration, inflated by (W+w)/W when it rejoins"
    ),
    feat!(
        PLACE_DEADLINE_INITIAL,
        true,
        true,
        Exact,
        "a new task's first virtual deadline is half a slice away"
    ),
    feat!(
        PLACE_REL_DEADLINE,
        true,
        true,
        Exact,
        "a task moved while runnable keeps its deadline relative to its vruntime"
    ),
    feat!(
        RUN_TO_PARITY,
        true,
        true,
        Exact,
        "protect the current task until it is no longer eligible or ran the queue's shortest slice"
    ),
    feat!(
        PREEMPT_SHORT,
        true,
        true,
        Exact,
        "a waking task with a shorter slice may preempt through the protection"
    ),
    feat!(
        NEXT_BUDDY,
        false,
        true,
        Exact,
        "make the wakee the next buddy (WF_SYNC wakeups may then preempt at once)"
    ),
    feat!(
        PICK_BUDDY,
        true,
        true,
        Exact,
        "pick an eligible next buddy before the earliest deadline"
    ),
    feat!(
        CACHE_HOT_BUDDY,
        true,
        true,
        Exact,
        "the balancer treats the next buddy as cache hot"
    ),
    feat!(
        DELAY_DEQUEUE,
        true,
        true,
        Approx(
            "a sleeping ineligible task stays in its CPU's queue as a ghost; only our scheduler sees it"
        ),
        "keep an ineligible sleeper queued until it is picked or wakes"
    ),
    feat!(
        DELAY_ZERO,
        true,
        true,
        Exact,
        "clip the lag of a delayed task to <= 0 when it leaves or wakes"
    ),
    feat!(
        PARANOID_AVG,
        false,
        true,
        Exact,
        "overflow-checked sums of the weighted average vruntime"
    ),
    feat!(
        WAKEUP_PREEMPTION,
        true,
        true,
        Exact,
        "a waking task may preempt the current one"
    ),
    feat!(
        HRTICK,
        true,
        true,
        Approx(
            "a BPF timer stands in for the scheduler hrtick: no stretch for IRQ pressure, and one armed by an enqueue on another CPU fires there and kicks the target"
        ),
        "end a slice at its deadline instead of at the next tick"
    ),
    feat!(
        HRTICK_DL,
        true,
        true,
        Inert("deadline class"),
        "high-resolution tick for SCHED_DEADLINE"
    ),
    feat!(
        NONTASK_CAPACITY,
        true,
        true,
        Approx(
            "capacity_of() counts IRQ and steal time only on kernels that average them (IRQ or paravirt time accounting); off, the lab drops them at once where the kernel's average decays"
        ),
        "reduce CPU capacity by IRQ/RT/DL time"
    ),
    feat!(
        TTWU_QUEUE,
        true,
        true,
        Inert("wakelist queueing is an ops flag fixed at load time"),
        "queue remote wakeups on the target CPU's wakelist"
    ),
    feat!(
        SIS_UTIL,
        true,
        true,
        Approx(
            "the scan limit comes from PELT kept as the kernel's on the lab's own queues and clock (no frequency or capacity invariance), summed at the lab's tick instead of the LLC's load balance"
        ),
        "limit the idle-CPU scan by the LLC's utilisation"
    ),
    feat!(
        WARN_DOUBLE_CLOCK,
        false,
        true,
        Inert("kernel debug check"),
        "warn on double rq clock updates"
    ),
    feat!(
        RT_PUSH_IPI,
        false,
        true,
        Inert("real-time class"),
        "push RT tasks by IPI"
    ),
    feat!(
        RT_RUNTIME_SHARE,
        false,
        true,
        Inert("real-time class"),
        "share RT runtime between CPUs"
    ),
    feat!(
        LB_MIN,
        false,
        true,
        Inert("the kernel's load balancer"),
        "skip tiny loads when balancing"
    ),
    feat!(
        ATTACH_AGE_LOAD,
        true,
        true,
        Inert(
            "the age of a task's load when it switches into the fair class; lab tasks start from the averages the kernel kept for them"
        ),
        "age PELT load on attach"
    ),
    feat!(
        WA_IDLE,
        true,
        true,
        Exact,
        "wake-affine: prefer an idle waker or previous CPU"
    ),
    feat!(
        WA_WEIGHT,
        true,
        true,
        Approx(
            "loads are PELT kept as the kernel's on the lab's own queues and clock (no frequency or capacity invariance)"
        ),
        "wake-affine: compare the waker's and previous CPU's loads"
    ),
    feat!(
        WA_BIAS,
        true,
        true,
        Exact,
        "wake-affine: bias the load comparison by imbalance_pct"
    ),
    feat!(UTIL_EST, true, true, Exact, "estimated utilisation"),
    feat!(
        LATENCY_WARN,
        false,
        true,
        Inert("kernel debug check"),
        "warn on long resched latency"
    ),
    feat!(
        NI_RANDOM,
        true,
        true,
        Exact,
        "gate newidle balancing randomly by its success ratio"
    ),
    feat!(
        NI_RATE,
        true,
        true,
        Exact,
        "always allow rare newidle balancing"
    ),
    feat!(
        DELAY_WAKE_COLD,
        false,
        false,
        Exact,
        "lab knob: a delayed task whose last run ended more than migration_cost_ns ago is \
         finalized at wakeup and placed by normal CPU selection (the hot/cold proposal from the \
         2026 DELAY_DEQUEUE pipe-regression thread)"
    ),
    feat!(
        DELAY_REQUEUE_SELECT,
        false,
        false,
        Exact,
        "lab knob: always run CPU selection for a woken delayed task instead of requeueing it \
         on its old CPU (Mike Galbraith's 2024 MIGRATE_DELAYED experiment)"
    ),
    feat!(
        CPU_MAX,
        true,
        false,
        Exact,
        "lab knob: enforce cpu.max as fair.c's CFS bandwidth control does, holding the tasks of \
         throttled groups off the queue once a tick finds them in user space; NO_CPU_MAX leaves \
         every group's tasks unthrottled (README, \"Groups\")"
    ),
    feat!(
        CPUFREQ,
        true,
        false,
        Exact,
        "lab knob: hand each CPU's utilisation to schedutil as its performance target, as the \
         fair class's cpufreq_update_util() does (scx_bpf_cpuperf_set); NO_CPUFREQ leaves every \
         CPU at the maximum target, sched_ext's own"
    ),
];

/// Looks a feature up by its name (without `NO_`).
pub fn find(name: &str) -> Option<&'static Feature> {
    FEATURES.iter().find(|f| f.name == name)
}

fn valid_names() -> String {
    FEATURES
        .iter()
        .map(|f| f.name)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A set of enabled features: bit `LAB_FEAT_X` set means X is on.
#[derive(Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct FeatureSet(pub u64);

impl FeatureSet {
    pub fn defaults() -> Self {
        let mut s = FeatureSet(0);
        for f in FEATURES {
            s.set(f, f.default_on);
        }
        s
    }

    pub fn is_on(&self, f: &Feature) -> bool {
        self.0 & (1 << f.bit) != 0
    }

    pub fn set(&mut self, f: &Feature, on: bool) {
        if on {
            self.0 |= 1 << f.bit;
        } else {
            self.0 &= !(1 << f.bit);
        }
    }

    /// Applies tokens in the kernel's syntax (`NAME` turns on, `NO_NAME` off). All or nothing:
    /// one unknown name fails the whole call, listing the valid ones.
    pub fn apply<S: AsRef<str>>(&self, tokens: &[S]) -> Result<FeatureSet> {
        let mut out = *self;
        for (f, on) in parse_tokens(tokens)? {
            out.set(f, on);
        }
        Ok(out)
    }

    /// The line `/sys/kernel/debug/sched/features` would print: every flag followed by a space,
    /// disabled ones prefixed with `NO_`.
    pub fn to_line(self) -> String {
        let mut s = String::new();
        for f in FEATURES {
            if !self.is_on(f) {
                s.push_str("NO_");
            }
            s.push_str(f.name);
            s.push(' ');
        }
        s
    }

    /// The tokens that turn `self` into `other` (in table order).
    pub fn diff_tokens(&self, other: &FeatureSet) -> Vec<String> {
        FEATURES
            .iter()
            .filter(|f| self.is_on(f) != other.is_on(f))
            .map(|f| {
                if other.is_on(f) {
                    f.name.to_string()
                } else {
                    format!("NO_{}", f.name)
                }
            })
            .collect()
    }
}

impl fmt::Debug for FeatureSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FeatureSet({})", self.to_line().trim_end())
    }
}

/// Parses tokens in the kernel's syntax. Tokens may also be whitespace-separated inside one
/// string (`--features "NO_A B"`).
pub fn parse_tokens<S: AsRef<str>>(tokens: &[S]) -> Result<Vec<(&'static Feature, bool)>> {
    let mut out = Vec::new();
    let mut unknown = Vec::new();
    for tok in tokens.iter().flat_map(|t| t.as_ref().split_whitespace()) {
        let (name, on) = match tok.strip_prefix("NO_") {
            Some(rest) => (rest, false),
            None => (tok, true),
        };
        match find(name) {
            Some(f) => out.push((f, on)),
            None => unknown.push(tok.to_string()),
        }
    }
    if !unknown.is_empty() {
        const SHOWN: usize = 5;
        let mut names = unknown
            .iter()
            .take(SHOWN)
            .cloned()
            .collect::<Vec<_>>()
            .join(" ");
        if unknown.len() > SHOWN {
            names.push_str(&format!(" and {} more", unknown.len() - SHOWN));
        }
        return Err(crate::input::bad_msg(format!(
            "unknown feature{} {names}; valid names (prefix NO_ to turn one off): {}",
            if unknown.len() > 1 { "s" } else { "" },
            valid_names()
        )));
    }
    Ok(out)
}

/// A feature line as the kernel prints it, split into the flags we know and the names we do not.
#[derive(Debug, Clone)]
pub struct KernelLine {
    pub known: Vec<(&'static Feature, bool)>,
    pub unknown: Vec<String>,
}

pub fn parse_kernel_line(line: &str) -> KernelLine {
    let mut known = Vec::new();
    let mut unknown = Vec::new();
    for tok in line.split_whitespace() {
        let (name, on) = match tok.strip_prefix("NO_") {
            Some(rest) => (rest, false),
            None => (tok, true),
        };
        match find(name).filter(|f| f.in_kernel) {
            Some(f) => known.push((f, on)),
            None => unknown.push(tok.to_string()),
        }
    }
    KernelLine { known, unknown }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What 7.2.13 and 7.3.4 print on boot (read in the VM; both kernels print the same line).
    const KERNEL_LINE: &str = "PLACE_LAG PLACE_DEADLINE_INITIAL PLACE_REL_DEADLINE RUN_TO_PARITY \
        PREEMPT_SHORT NO_NEXT_BUDDY PICK_BUDDY CACHE_HOT_BUDDY DELAY_DEQUEUE DELAY_ZERO \
        NO_PARANOID_AVG WAKEUP_PREEMPTION HRTICK HRTICK_DL NONTASK_CAPACITY TTWU_QUEUE SIS_UTIL \
        NO_WARN_DOUBLE_CLOCK NO_RT_PUSH_IPI NO_RT_RUNTIME_SHARE NO_LB_MIN ATTACH_AGE_LOAD WA_IDLE \
        WA_WEIGHT WA_BIAS UTIL_EST NO_LATENCY_WARN NI_RANDOM NI_RATE ";

    #[test]
    fn bits_are_unique_and_dense() {
        let mut bits: Vec<u32> = FEATURES.iter().map(|f| f.bit).collect();
        bits.sort();
        assert_eq!(bits, (0..FEATURES.len() as u32).collect::<Vec<_>>());
        assert_eq!(FEATURES.len(), bpf_intf::lab_feat_LAB_NR_FEATS as usize);
    }

    #[test]
    fn defaults_print_the_kernels_line_then_the_lab_knobs() {
        let line = FeatureSet::defaults().to_line();
        let kernel_part: String = KERNEL_LINE
            .split_whitespace()
            .map(|t| format!("{t} "))
            .collect::<String>();
        assert!(line.starts_with(&kernel_part), "{line}");
        assert!(line.ends_with("NO_DELAY_WAKE_COLD NO_DELAY_REQUEUE_SELECT CPU_MAX CPUFREQ "));
    }

    #[test]
    fn kernel_line_round_trips() {
        let k = parse_kernel_line(KERNEL_LINE);
        assert!(k.unknown.is_empty(), "{:?}", k.unknown);
        assert_eq!(k.known.len(), KERNEL_LINE.split_whitespace().count());
        // The lab's knobs are not in the line: they keep their defaults.
        let mut s = FeatureSet(0);
        for f in FEATURES.iter().filter(|f| !f.in_kernel) {
            s.set(f, f.default_on);
        }
        for (f, on) in &k.known {
            s.set(f, *on);
        }
        assert_eq!(s, FeatureSet::defaults());
        // And a line with two flags flipped comes back flipped.
        let flipped = KERNEL_LINE
            .replace("DELAY_ZERO", "NO_DELAY_ZERO")
            .replace("NO_NEXT_BUDDY", "NEXT_BUDDY");
        let k = parse_kernel_line(&flipped);
        let mut t = FeatureSet::defaults();
        for (f, on) in &k.known {
            t.set(f, *on);
        }
        assert_eq!(
            FeatureSet::defaults().diff_tokens(&t),
            vec!["NEXT_BUDDY", "NO_DELAY_ZERO"]
        );
    }

    #[test]
    fn unknown_kernel_names_are_reported_not_dropped() {
        let k = parse_kernel_line("PLACE_LAG NO_FUTURE_FLAG DELAY_WAKE_COLD");
        assert_eq!(k.known.len(), 1);
        // Lab knobs are not kernel flags: a kernel line naming one is foreign.
        assert_eq!(k.unknown, vec!["NO_FUTURE_FLAG", "DELAY_WAKE_COLD"]);
    }

    #[test]
    fn apply_is_all_or_nothing_and_lists_valid_names() {
        let d = FeatureSet::defaults();
        let err = d
            .apply(&["NO_DELAY_ZERO", "NO_SUCH_THING"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("NO_SUCH_THING"), "{err}");
        assert!(
            err.contains("PLACE_LAG") && err.contains("DELAY_WAKE_COLD"),
            "{err}"
        );
        let s = d
            .apply(&["NO_DELAY_ZERO RUN_TO_PARITY", "NEXT_BUDDY"])
            .unwrap();
        assert!(!s.is_on(find("DELAY_ZERO").unwrap()));
        assert!(s.is_on(find("NEXT_BUDDY").unwrap()));
        assert_eq!(s.apply(&["DELAY_ZERO", "NO_NEXT_BUDDY"]).unwrap(), d);
    }
}
