//! Checks that turn an environment problem into one clear sentence before anything changes:
//! root, and a kernel that has everything the BPF scheduler needs.
//!
//! The supported kernels are those whose BTF has every item of [`NEEDS`]: what the BPF object
//! calls, sets or relies on without a fallback. The features the object uses through
//! scx_utils' compat wrappers (`scx_bpf_dsq_insert`, `scx_bpf_now`...) work on any sched_ext
//! kernel and are not listed. The newest item, `SCX_DEQ_SCHED_CHANGE`, is what makes the floor
//! [`MIN_KERNEL`]; probing the items rather than the version keeps a kernel with them
//! backported usable. A host test keeps the list in step with `src/bpf/`.

use anyhow::{Result, bail};
use std::path::Path;

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

pub fn require_root() -> Result<()> {
    if !is_root() {
        bail!(
            "must run as root: loading a sched_ext scheduler needs CAP_SYS_ADMIN and CAP_BPF (try sudo)"
        );
    }
    Ok(())
}

/// The oldest kernel release that has every item of [`NEEDS`] (7.0 lacks
/// `SCX_DEQ_SCHED_CHANGE`; read from Debian's 7.0.13 and 7.1.13 builds).
pub const MIN_KERNEL: &str = "7.1";

/// Something the BPF object needs from the kernel, looked up in the kernel's BTF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// An enumerator of a kernel enum (an ops flag, a dequeue flag).
    Enum(&'static str, &'static str),
    /// A member of a kernel struct (an ops callback, a task field read by the scheduler).
    Field(&'static str, &'static str),
    /// A kfunc called without a compat fallback.
    Kfunc(&'static str),
}

impl Probe {
    /// The name shown when it is missing.
    pub fn name(&self) -> String {
        match self {
            Probe::Enum(_, n) | Probe::Kfunc(n) => n.to_string(),
            Probe::Field("sched_ext_ops", n) => format!("ops.{n}"),
            Probe::Field(t, n) => format!("{t}.{n}"),
        }
    }
}

/// One item of what the scheduler needs, and what for.
pub struct Need {
    pub probe: Probe,
    pub why: &'static str,
}

const fn need(probe: Probe, why: &'static str) -> Need {
    Need { probe, why }
}

const fn op(name: &'static str) -> Need {
    need(
        Probe::Field("sched_ext_ops", name),
        "a callback the scheduler implements",
    )
}

/// Everything the BPF object needs, newest first.
pub const NEEDS: &[Need] = &[
    need(
        Probe::Enum("scx_deq_flags", "SCX_DEQ_SCHED_CHANGE"),
        "the ops.dequeue() call of a nice, affinity or policy change",
    ),
    need(
        Probe::Enum("scx_ops_flags", "SCX_OPS_ENQ_MIGRATION_DISABLED"),
        "an ops flag the scheduler sets",
    ),
    need(
        Probe::Enum("scx_ops_flags", "SCX_OPS_ENQ_EXITING"),
        "an ops flag the scheduler sets",
    ),
    need(
        Probe::Enum("scx_ops_flags", "SCX_OPS_ENQ_LAST"),
        "the running task put back when nothing else runs (held when its group is throttled)",
    ),
    need(
        Probe::Field("sched_entity", "custom_slice"),
        "a task's own slice (sched_attr.sched_runtime)",
    ),
    op("select_cpu"),
    op("enqueue"),
    op("dequeue"),
    op("dispatch"),
    op("running"),
    op("stopping"),
    op("quiescent"),
    op("tick"),
    op("set_weight"),
    op("set_cpumask"),
    op("yield"),
    op("init_task"),
    op("enable"),
    op("disable"),
    op("exit_task"),
    op("dump"),
    op("init"),
    op("exit"),
    op("cpu_acquire"),
    op("cpu_release"),
    op("cpu_online"),
    op("cpu_offline"),
    op("cgroup_init"),
    op("cgroup_exit"),
    op("cgroup_move"),
    op("cgroup_set_weight"),
    op("cgroup_set_idle"),
    op("cgroup_set_bandwidth"),
    need(
        Probe::Kfunc("scx_bpf_pick_idle_cpu"),
        "an idle CPU for tasks moved off a CPU taken by a higher class or going offline",
    ),
    need(
        Probe::Kfunc("scx_bpf_reenqueue_local"),
        "handing back a CPU's local queue when a higher class takes it",
    ),
    need(
        Probe::Kfunc("scx_bpf_cpuperf_set"),
        "the frequency hand-off to schedutil (CPUFREQ)",
    ),
    need(
        Probe::Kfunc("scx_bpf_cpuperf_cap"),
        "each CPU's capacity (arch_scale_cpu_capacity())",
    ),
    need(
        Probe::Kfunc("scx_bpf_kick_cpu"),
        "preemption and idle kicks",
    ),
    need(Probe::Kfunc("scx_bpf_task_cpu"), "a task's CPU"),
    need(Probe::Kfunc("scx_bpf_nr_cpu_ids"), "the CPU count at init"),
    need(
        Probe::Kfunc("scx_bpf_get_idle_cpumask"),
        "idle CPUs for CPU selection",
    ),
    need(
        Probe::Kfunc("scx_bpf_put_idle_cpumask"),
        "idle CPUs for CPU selection",
    ),
    need(
        Probe::Kfunc("bpf_iter_scx_dsq_new"),
        "walking a CPU's local queue",
    ),
    need(Probe::Kfunc("scx_bpf_dump_bstr"), "the exit dump"),
    need(Probe::Kfunc("scx_bpf_error_bstr"), "error exits"),
    need(
        Probe::Kfunc("scx_bpf_exit_bstr"),
        "the restart request of a full task pool",
    ),
    need(
        Probe::Kfunc("bpf_arena_alloc_pages"),
        "the task pool's pages (a BPF arena)",
    ),
];

/// The kfuncs the object reaches through scx_utils' compat wrappers: each wrapper and the
/// kernel functions it may bind, whichever the kernel has.
pub const COMPAT_KFUNCS: &[(&str, &[&str])] = &[
    (
        "scx_bpf_dsq_insert",
        &[
            "scx_bpf_dsq_insert___v2",
            "scx_bpf_dsq_insert",
            "scx_bpf_dispatch",
        ],
    ),
    (
        "scx_bpf_dsq_move",
        &["scx_bpf_dsq_move", "scx_bpf_dispatch_from_dsq"],
    ),
    ("scx_bpf_now", &["scx_bpf_now"]),
    ("scx_bpf_task_set_slice", &["scx_bpf_task_set_slice"]),
];

/// Of the kernel's kfuncs whose BTF prototype is malformed (`bad`: they keep the implicit
/// `aux` argument, which makes a program that calls them fail to load), those the scheduler
/// calls.
pub fn malformed_used(bad: &[String]) -> Vec<&str> {
    let used = NEEDS
        .iter()
        .filter_map(|n| match n.probe {
            Probe::Kfunc(k) => Some(k),
            _ => None,
        })
        .chain(COMPAT_KFUNCS.iter().flat_map(|c| c.1.iter().copied()));
    let mut v: Vec<&str> = used.filter(|k| bad.iter().any(|b| b == k)).collect();
    v.sort();
    v.dedup();
    v
}

/// The items of [`NEEDS`] that `has` does not find.
pub fn missing(has: impl Fn(&Probe) -> bool) -> Vec<&'static Need> {
    NEEDS.iter().filter(|n| !has(&n.probe)).collect()
}

/// The one line that refuses a kernel lacking `missing` (not empty).
pub fn too_old(release: &str, missing: &[&Need]) -> String {
    let first = missing[0];
    let more = match missing.len() {
        1 => String::new(),
        n => format!(" and {} more ({})", n - 1, names(&missing[1..])),
    };
    format!(
        "this kernel ({release}) lacks {} ({}){more}, which scx_eevdf_lab needs: Linux \
         {MIN_KERNEL} or newer with CONFIG_SCHED_CLASS_EXT=y is required",
        first.probe.name(),
        first.why
    )
}

fn names(needs: &[&Need]) -> String {
    const SHOWN: usize = 4;
    let mut v: Vec<String> = needs.iter().take(SHOWN).map(|n| n.probe.name()).collect();
    if needs.len() > SHOWN {
        v.push("...".into());
    }
    v.join(", ")
}

const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

/// Fails with one line when the running kernel cannot run the scheduler: no BTF, no function
/// tracer (scx_utils attaches an fentry probe), an item of [`NEEDS`] missing, or a kfunc the
/// scheduler calls with a malformed BTF prototype.
pub fn require_supported_kernel() -> Result<()> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    if !Path::new(VMLINUX_BTF).exists() {
        bail!(
            "this kernel ({release}) has no BTF ({VMLINUX_BTF} is missing): sched_ext needs \
             CONFIG_DEBUG_INFO_BTF=y"
        );
    }
    if !scx_utils::compat::function_tracer_available() {
        bail!(
            "this kernel ({release}) has no function tracer (CONFIG_FUNCTION_TRACER), which \
             the scheduler's fentry probe needs"
        );
    }
    use scx_utils::compat::{ksym_exists, read_enum, struct_has_field};
    let gone = missing(|p| match *p {
        Probe::Enum(t, n) => read_enum(t, n).is_ok(),
        Probe::Field(t, n) => struct_has_field(t, n).unwrap_or(false),
        Probe::Kfunc(n) => ksym_exists(n).unwrap_or(false),
    });
    if !gone.is_empty() {
        bail!("{}", too_old(&release, &gone));
    }
    let bad = scx_utils::compat::malformed_scx_kfuncs();
    let bad = malformed_used(&bad);
    if !bad.is_empty() {
        bail!(
            "the BTF of this kernel ({release}) shows kfuncs the scheduler calls with their \
             implicit aux argument ({}); BPF programs are checked against these prototypes, so \
             the scheduler cannot load here (a kernel build problem: scx_utils names pahole \
             older than 1.26 as one cause)",
            bad.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn a_kernel_without_the_dequeue_flag_is_refused_in_one_line() {
        let gone = missing(|p| *p != Probe::Enum("scx_deq_flags", "SCX_DEQ_SCHED_CHANGE"));
        assert_eq!(gone.len(), 1);
        let msg = too_old("7.0.13+deb13-cloud-amd64", &gone);
        assert!(!msg.contains('\n'));
        assert!(
            msg.starts_with("this kernel (7.0.13+deb13-cloud-amd64) lacks SCX_DEQ_SCHED_CHANGE")
        );
        assert!(msg.contains("Linux 7.1 or newer"));
    }

    #[test]
    fn several_missing_items_are_counted_and_named() {
        let gone = missing(|p| !matches!(p, Probe::Field("sched_ext_ops", _)));
        let msg = too_old("6.11.0", &gone);
        assert!(msg.contains("lacks ops.select_cpu"), "{msg}");
        assert!(
            msg.contains(&format!("and {} more (ops.enqueue,", gone.len() - 1)),
            "{msg}"
        );
        assert!(msg.contains("...)"), "{msg}");
        assert!(missing(|_| true).is_empty());
    }

    #[test]
    fn malformed_kfuncs_count_only_where_the_scheduler_calls_them() {
        // Part of what Debian's 7.1.13 build reports.
        let bad: Vec<String> = [
            "scx_bpf_cpuperf_cap",
            "scx_bpf_cpuperf_cur",
            "scx_bpf_dsq_insert___v2",
            "scx_bpf_get_idle_cpumask",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            malformed_used(&bad),
            [
                "scx_bpf_cpuperf_cap",
                "scx_bpf_dsq_insert___v2",
                "scx_bpf_get_idle_cpumask"
            ]
        );
        assert!(malformed_used(&["scx_bpf_cpuperf_cur".to_string()]).is_empty());
    }

    /// The BPF sources, for the tests that keep [`NEEDS`] true.
    fn bpf_sources() -> String {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bpf");
        let mut text = String::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            if n.ends_with(".bpf.c") || n.ends_with(".bpf.h") {
                text.push_str(&std::fs::read_to_string(&p).unwrap());
            }
        }
        text
    }

    fn needed(f: impl Fn(&Probe) -> Option<&'static str>) -> BTreeSet<&'static str> {
        NEEDS.iter().filter_map(|n| f(&n.probe)).collect()
    }

    /// Every callback and ops flag in SCX_OPS_DEFINE is in NEEDS.
    #[test]
    fn needs_cover_the_ops_the_scheduler_defines() {
        let src = bpf_sources();
        const DEF: &str = "SCX_OPS_DEFINE(lab_ops,";
        let start = src.find(DEF).expect("SCX_OPS_DEFINE(lab_ops, ...)") + DEF.len();
        let block = &src[start..start + src[start..].find(");").unwrap()];
        let ops = needed(|p| match p {
            Probe::Field("sched_ext_ops", n) => Some(n),
            _ => None,
        });
        let flags = needed(|p| match p {
            Probe::Enum("scx_ops_flags", n) => Some(n),
            _ => None,
        });
        const NOT_CALLBACKS: &[&str] = &[
            "flags",
            "name",
            "timeout_ms",
            "exit_dump_len",
            "dispatch_max_batch",
        ];
        let mut set = BTreeSet::new();
        for field in block.split('.').filter(|f| !f.trim().is_empty()) {
            let name = field
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .next()
                .unwrap();
            if !NOT_CALLBACKS.contains(&name) {
                assert!(
                    ops.contains(name),
                    "ops.{name} is set but not in preflight::NEEDS"
                );
                set.insert(name);
            }
        }
        for op in &ops {
            assert!(
                set.contains(op),
                "preflight::NEEDS names ops.{op}, which is not set"
            );
        }
        let flag_words = block.split(|c: char| !c.is_alphanumeric() && c != '_');
        for f in flag_words.filter(|w| w.starts_with("SCX_OPS_")) {
            assert!(flags.contains(f), "{f} is set but not in preflight::NEEDS");
        }
    }

    /// Every scx kfunc the sources call is in NEEDS or goes through a compat wrapper of
    /// scx_utils' headers that works on every sched_ext kernel.
    #[test]
    fn needs_cover_the_kfuncs_the_scheduler_calls() {
        // common.bpf.h macros (-> the kfunc they call).
        const MACROS: &[(&str, &str)] = &[
            ("scx_bpf_dump", "scx_bpf_dump_bstr"),
            ("scx_bpf_dump_header", "scx_bpf_dump_bstr"),
            ("scx_bpf_error", "scx_bpf_error_bstr"),
            ("scx_bpf_exit", "scx_bpf_exit_bstr"),
        ];
        let kfuncs = needed(|p| match p {
            Probe::Kfunc(n) => Some(n),
            _ => None,
        });
        let src = bpf_sources();
        let words = src.split(|c: char| !c.is_alphanumeric() && c != '_');
        for w in words
            .filter(|w| w.starts_with("scx_bpf_"))
            .collect::<BTreeSet<_>>()
        {
            if COMPAT_KFUNCS.iter().any(|c| c.0 == w) {
                continue;
            }
            let k = MACROS.iter().find(|m| m.0 == w).map_or(w, |m| m.1);
            assert!(
                kfuncs.contains(k),
                "{w} is called but {k} is not in preflight::NEEDS"
            );
        }
        if src.contains("bpf_for_each(scx_dsq") {
            assert!(kfuncs.contains("bpf_iter_scx_dsq_new"));
        }
        if src.contains("SCX_DEQ_SCHED_CHANGE") {
            assert_eq!(
                NEEDS[0].probe,
                Probe::Enum("scx_deq_flags", "SCX_DEQ_SCHED_CHANGE")
            );
        }
    }
}
