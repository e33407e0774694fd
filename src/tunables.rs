//! The lab's tunables in the kernel's syntax: `base_slice_ns=3000000 preempt=lazy ...`, each
//! range-checked, the choices (`preempt`, `cgroup_mode`) shown as the kernel's files show them.
//! Like `features`, this module knows names, defaults and ranges, and touches no kernel or BPF
//! state.

use anyhow::Result;

/// sysctl_sched_base_slice before scaling (fair.c: normalized_sysctl_sched_base_slice).
pub const NORMALIZED_BASE_SLICE_NS: u64 = 700_000;

/// The kernel's get_update_sysctl_factor(): how the base slice grows with the CPU count.
pub fn scaling_factor(tunable_scaling: u64, ncpus: u64) -> u64 {
    let n = ncpus.clamp(1, 8);
    match tunable_scaling {
        0 => 1,
        2 => n,
        _ => 1 + n.ilog2() as u64,
    }
}

/// One tunable: its debugfs name and the values the lab accepts. A tunable with `choices` takes
/// one of those words (its value is the word's index), as the kernel's file shows them.
#[derive(Debug)]
pub struct Tunable {
    pub name: &'static str,
    pub min: u64,
    pub max: u64,
    pub choices: &'static [&'static str],
    pub help: &'static str,
}

impl Tunable {
    /// `v` as the kernel's file would show it: the number, or the word of a choice.
    pub fn show(&self, v: u64) -> String {
        match self.choices.get(v as usize) {
            Some(w) => (*w).to_string(),
            None => v.to_string(),
        }
    }

    /// `v` as the kernel's debugfs file shows it: a plain number, or for a tunable with
    /// choices every choice with the one in effect in parentheses (`up smp (concur) max tasks`).
    pub fn listing(&self, v: u64) -> String {
        if self.choices.is_empty() {
            return v.to_string();
        }
        self.choices
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i as u64 == v {
                    format!("({c})")
                } else {
                    (*c).to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The value of the choice `word` (the kernel's spelling), None for any other word.
    pub fn choice(&self, word: &str) -> Option<u64> {
        self.choices
            .iter()
            .position(|c| *c == word)
            .map(|i| i as u64)
    }

    /// The values it accepts, for help and errors.
    pub fn range(&self) -> String {
        if self.choices.is_empty() {
            format!("{}..={}", self.min, self.max)
        } else {
            self.choices.join("|")
        }
    }
}

/// The kernel's preemption models (/sys/kernel/debug/sched/preempt), as `preempt`'s values.
pub const PREEMPT_NONE: u64 = 0;
pub const PREEMPT_FULL: u64 = 2;
pub const PREEMPT_LAZY: u64 = 3;
pub const PREEMPT_CHOICES: &[&str] = &["none", "voluntary", "full", "lazy"];

/// The kernel's cgroup modes (/sys/kernel/debug/sched/cgroup_mode, 7.3), as `cgroup_mode`'s
/// values, in the kernel's order.
pub const CGROUP_SMP: u64 = 1;
pub const CGROUP_CONCUR: u64 = 2;
pub const CGROUP_TASKS: u64 = 4;
pub const CGROUP_CHOICES: &[&str] = &["up", "smp", "concur", "max", "tasks"];

pub static TUNABLES: &[Tunable] = &[
    Tunable {
        name: "base_slice_ns",
        min: 100_000,
        max: 100_000_000,
        choices: &[],
        help: "the request size of a task without a custom slice (0.1 ms to 100 ms)",
    },
    Tunable {
        name: "migration_cost_ns",
        min: 0,
        max: 1_000_000_000,
        choices: &[],
        help: "a task that ran this recently is cache hot: not pulled, and DELAY_WAKE_COLD spares it",
    },
    Tunable {
        name: "nr_migrate",
        min: 1,
        max: 4096,
        choices: &[],
        help: "the most tasks one periodic balance pass may move",
    },
    Tunable {
        name: "tunable_scaling",
        min: 0,
        max: 2,
        choices: &[],
        help: "how base_slice_ns scales with the CPU count: 0 none, 1 log, 2 linear; writing it \
               re-derives the normalized slice from base_slice_ns as the kernel does",
    },
    Tunable {
        name: "preempt",
        min: PREEMPT_NONE,
        max: PREEMPT_LAZY,
        choices: PREEMPT_CHOICES,
        help: "the preemption model of resched_curr_lazy() (wakeup preemption, update_curr() at \
               enqueue, the hrtick): lazy defers the switch to the CPU's next tick, the others \
               switch at once (default: the kernel's current model)",
    },
    Tunable {
        name: "cgroup_mode",
        min: 0,
        max: CGROUP_TASKS,
        choices: CGROUP_CHOICES,
        help: "how a cgroup's cpu.weight becomes its weight on each CPU (7.3's \
               calc_group_shares()): up = cpu.weight on every CPU, smp = the load-proportional part \
               of it (7.2's), concur = of min(tasks, CPUs) x it, max = of CPUs x it (at most a nice \
               -20 task), tasks = of tasks x it (default: the kernel's, concur; smp on a kernel \
               without the knob)",
    },
];

pub fn find_tunable(name: &str) -> Option<&'static Tunable> {
    TUNABLES.iter().find(|t| t.name == name)
}

/// The values of every tunable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tunables {
    pub base_slice_ns: u64,
    /// Not a debugfs file: the kernel's normalized_sysctl_sched_base_slice, which NO_RUN_TO_PARITY
    /// uses as the minimum quantum. Re-derived whenever tunable_scaling is written.
    pub normalized_slice_ns: u64,
    pub migration_cost_ns: u64,
    pub nr_migrate: u64,
    pub tunable_scaling: u64,
    /// PREEMPT_NONE..=PREEMPT_LAZY.
    #[serde(default = "default_preempt")]
    pub preempt: u64,
    /// CGROUP_UP..=CGROUP_TASKS.
    #[serde(default = "default_cgroup_mode")]
    pub cgroup_mode: u64,
}

fn default_preempt() -> u64 {
    PREEMPT_FULL
}

fn default_cgroup_mode() -> u64 {
    CGROUP_CONCUR
}

impl Tunables {
    /// The kernel's boot-time values for `ncpus` online CPUs (and preempt=full: the kernel's
    /// model is a boot choice, see kernel::host_defaults()).
    pub fn defaults(ncpus: u64) -> Self {
        let mut t = Tunables {
            base_slice_ns: 0,
            normalized_slice_ns: NORMALIZED_BASE_SLICE_NS,
            migration_cost_ns: 500_000,
            nr_migrate: 32,
            tunable_scaling: 1,
            preempt: PREEMPT_FULL,
            cgroup_mode: CGROUP_CONCUR,
        };
        t.base_slice_ns = t.derived_base_slice(ncpus);
        t
    }

    /// update_sysctl(): the base slice the kernel derives from the normalized one for `ncpus`
    /// online CPUs (at boot and on every CPU hotplug).
    pub fn derived_base_slice(&self, ncpus: u64) -> u64 {
        self.normalized_slice_ns * scaling_factor(self.tunable_scaling, ncpus)
    }

    /// sched_update_scaling(): the normalized slice the kernel keeps for the current base slice
    /// when tunable_scaling is written.
    pub fn derived_normalized_slice(&self, ncpus: u64) -> u64 {
        self.base_slice_ns / scaling_factor(self.tunable_scaling, ncpus)
    }

    pub fn get(&self, name: &str) -> Option<u64> {
        Some(match name {
            "base_slice_ns" => self.base_slice_ns,
            "migration_cost_ns" => self.migration_cost_ns,
            "nr_migrate" => self.nr_migrate,
            "tunable_scaling" => self.tunable_scaling,
            "preempt" => self.preempt,
            "cgroup_mode" => self.cgroup_mode,
            _ => return None,
        })
    }

    /// The value of `name` as the kernel's file shows it (`preempt`'s and `cgroup_mode`'s word).
    pub fn show(&self, name: &str) -> Option<String> {
        Some(find_tunable(name)?.show(self.get(name)?))
    }

    /// `name`'s value as the kernel's debugfs file shows it ([`Tunable::listing`]).
    pub fn listing(&self, name: &str) -> Option<String> {
        Some(find_tunable(name)?.listing(self.get(name)?))
    }

    /// Applies `name=value` assignments, all or nothing. `ncpus` is needed to re-derive the
    /// normalized slice when tunable_scaling is written (as the kernel's sched_update_scaling()).
    pub fn apply<S: AsRef<str>>(&self, assignments: &[S], ncpus: u64) -> Result<Tunables> {
        let mut out = *self;
        for (t, v) in parse_assignments(assignments)? {
            match t.name {
                "base_slice_ns" => out.base_slice_ns = v,
                "migration_cost_ns" => out.migration_cost_ns = v,
                "nr_migrate" => out.nr_migrate = v,
                "tunable_scaling" => {
                    out.tunable_scaling = v;
                    out.normalized_slice_ns = out.derived_normalized_slice(ncpus);
                }
                "preempt" => out.preempt = v,
                "cgroup_mode" => out.cgroup_mode = v,
                _ => unreachable!("parse_assignments only returns table entries"),
            }
        }
        Ok(out)
    }

    /// `name=value` for every tunable, in table order.
    pub fn to_assignments(self) -> Vec<String> {
        TUNABLES
            .iter()
            .map(|t| format!("{}={}", t.name, t.show(self.get(t.name).unwrap_or(0))))
            .collect()
    }
}

/// Parses and range-checks `name=value` assignments (values may use `_` separators).
pub fn parse_assignments<S: AsRef<str>>(items: &[S]) -> Result<Vec<(&'static Tunable, u64)>> {
    let mut out = Vec::new();
    for item in items
        .iter()
        .flat_map(|s| s.as_ref().split([',', ' ']).filter(|s| !s.is_empty()))
    {
        use crate::input::bad_msg;
        let Some((name, val)) = item.split_once('=') else {
            return Err(bad_msg(format!(
                "expected NAME=VALUE, got {item:?}; tunables: {}",
                tunable_names()
            )));
        };
        let Some(t) = find_tunable(name.trim()) else {
            return Err(bad_msg(format!(
                "unknown tunable {name:?}; tunables: {}",
                tunable_names()
            )));
        };
        let v: u64 = if t.choices.is_empty() {
            val.trim().replace('_', "").parse().map_err(|_| {
                bad_msg(format!(
                    "{}: {val:?} is not a non-negative integer (at most {})",
                    t.name, t.max
                ))
            })?
        } else {
            let w = val.trim();
            t.choice(w)
                .ok_or_else(|| bad_msg(format!("{}: {w:?} is not one of {}", t.name, t.range())))?
        };
        if v < t.min || v > t.max {
            return Err(bad_msg(format!(
                "{}={v} is out of range: allowed {}..={}",
                t.name, t.min, t.max
            )));
        }
        out.push((t, v));
    }
    Ok(out)
}

fn tunable_names() -> String {
    TUNABLES
        .iter()
        .map(|t| t.name)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One tunable reads back as its kernel file does: a number, or every choice with the one
    /// in effect in parentheses.
    #[test]
    fn a_tunable_reads_as_its_kernel_file() {
        let t = Tunables::defaults(4);
        assert_eq!(
            t.listing("cgroup_mode").unwrap(),
            "up smp (concur) max tasks"
        );
        assert_eq!(t.listing("preempt").unwrap(), "none voluntary (full) lazy");
        let v = t
            .apply(&["cgroup_mode=up", "base_slice_ns=3000000"], 4)
            .unwrap();
        assert_eq!(
            v.listing("cgroup_mode").unwrap(),
            "(up) smp concur max tasks"
        );
        assert_eq!(v.listing("base_slice_ns").unwrap(), "3000000");
        assert_eq!(t.listing("nope"), None);
    }

    /// `preempt` takes the kernel's words, shows them back, and refuses anything else.
    #[test]
    fn preempt_takes_the_kernels_words() {
        let t = Tunables::defaults(4);
        assert_eq!(t.preempt, PREEMPT_FULL);
        let v = t.apply(&["preempt=voluntary"], 4).unwrap();
        assert_eq!(PREEMPT_CHOICES[v.preempt as usize], "voluntary");
        assert_eq!(v.show("preempt").unwrap(), "voluntary");
        assert!(
            v.to_assignments()
                .contains(&"preempt=voluntary".to_string())
        );
        let l = v.apply(&["preempt=lazy,nr_migrate=8"], 4).unwrap();
        assert_eq!((l.preempt, l.nr_migrate), (PREEMPT_LAZY, 8));
        for bad in ["preempt=3", "preempt=LAZY", "preempt="] {
            let e = t.apply(&[bad], 4).unwrap_err().to_string();
            assert!(e.contains("none|voluntary|full|lazy"), "{bad}: {e}");
        }
        // A saved report from before the tunable reads as preempt=full.
        let mut j = serde_json::to_value(t).unwrap();
        j.as_object_mut().unwrap().remove("preempt");
        assert_eq!(serde_json::from_value::<Tunables>(j).unwrap(), t);
    }

    #[test]
    fn base_slice_scales_like_the_kernel() {
        // 1 CPU 0.70 ms; 2-3 CPUs 1.40 ms; 4-7 CPUs 2.10 ms; >= 8 CPUs 2.80 ms.
        assert_eq!(Tunables::defaults(1).base_slice_ns, 700_000);
        assert_eq!(Tunables::defaults(3).base_slice_ns, 1_400_000);
        assert_eq!(Tunables::defaults(4).base_slice_ns, 2_100_000);
        assert_eq!(Tunables::defaults(64).base_slice_ns, 2_800_000);
        assert_eq!(scaling_factor(0, 64), 1);
        assert_eq!(scaling_factor(2, 5), 5);
    }

    #[test]
    fn tunables_are_range_checked_all_or_nothing() {
        let t = Tunables::defaults(4);
        let err = t
            .apply(&["base_slice_ns=3000000", "migration_cost_ns=-1"], 4)
            .unwrap_err();
        assert!(err.to_string().contains("migration_cost_ns"), "{err}");
        let err = t.apply(&["base_slice_ns=1"], 4).unwrap_err().to_string();
        assert!(
            err.contains("out of range") && err.contains("100000..=100000000"),
            "{err}"
        );
        assert!(
            t.apply(&["bogus=1"], 4)
                .unwrap_err()
                .to_string()
                .contains("base_slice_ns")
        );
        let u = t
            .apply(&["base_slice_ns=3_000_000,migration_cost_ns=250000"], 4)
            .unwrap();
        assert_eq!((u.base_slice_ns, u.migration_cost_ns), (3_000_000, 250_000));
        // Writing tunable_scaling re-derives the normalized slice, like sched_update_scaling().
        let v = u.apply(&["tunable_scaling=1"], 4).unwrap();
        assert_eq!(v.normalized_slice_ns, 1_000_000);
        assert_eq!(t.to_assignments()[0], "base_slice_ns=2100000");
    }
}
