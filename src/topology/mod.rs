//! The machine's CPUs: how many are online (what the kernel scales base_slice_ns by), which
//! ones this process may run on (what the bench places its tasks on), and the topology the BPF
//! scheduler's CPU selection and balancing work with: NUMA nodes, LLCs (the balancing and
//! idle-scan domain) and cores (SMT siblings), from scx_utils' Topology.
//!
//! It only reads; it does not decide placement or scheduling policy (that is BPF's and the
//! bench workloads').

use crate::bpf_intf;
use anyhow::{Result, bail};

const MAX: usize = bpf_intf::lab_consts_LAB_MAX_CPUS as usize;
/// SMT siblings per core the BPF side walks at most.
const SMT_MAX: usize = bpf_intf::lab_consts_LAB_MAX_SMT as usize;

mod numa;
pub use numa::{NumaLevel, node_reclaim_distance, numa_levels};

/// Where the kernel lists the online CPUs (a cpulist such as `0-3,8`).
const ONLINE_CPUS_PATH: &str = "/sys/devices/system/cpu/online";

/// The number of online CPUs, as the kernel's num_online_cpus() counts them when it scales
/// base_slice_ns: not this process's affinity (a bench under `taskset -c 3` sees one CPU).
pub fn online_cpus() -> u64 {
    std::fs::read_to_string(ONLINE_CPUS_PATH)
        .ok()
        .and_then(|s| scx_utils::Cpumask::from_cpulist(s.trim()).ok())
        .map(|m| m.weight() as u64)
        .filter(|&n| n > 0)
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get() as u64)
                .unwrap_or(1)
        })
}

/// The online CPUs, in order (system-wide counters open one per CPU); 0..n when unreadable.
pub fn online_cpu_list() -> Vec<usize> {
    std::fs::read_to_string(ONLINE_CPUS_PATH)
        .ok()
        .and_then(|s| scx_utils::Cpumask::from_cpulist(s.trim()).ok())
        .map(|m| m.iter().collect::<Vec<usize>>())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| (0..online_cpus() as usize).collect())
}

/// The CPUs this process may run on, in order (its affinity; `[0]` when unreadable).
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain old data; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return vec![0];
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// The layout BPF reads (struct lab_topo in src/bpf/intf.h), independent of the skeleton type.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Topo {
    pub nr_cpus: u32,
    /// NUMA node index (dense, 0..) of each CPU.
    pub cpu_node: Vec<u32>,
    pub nr_nodes: u32,
    /// LLC index (dense, 0..) of each CPU.
    pub cpu_llc: Vec<u32>,
    /// Core index (dense, 0..) of each CPU (SMT siblings share it).
    pub cpu_core: Vec<u32>,
    /// CPUs grouped by LLC, and where each LLC starts in that list.
    pub llc_cpus: Vec<u32>,
    pub llc_start: Vec<u32>,
    pub llc_size: Vec<u32>,
    pub cpu_llc_pos: Vec<u32>,
    /// CPUs grouped by core (each core's SMT siblings, in CPU order), and where each core starts.
    pub core_cpus: Vec<u32>,
    pub core_start: Vec<u32>,
    pub core_size: Vec<u32>,
    /// Some core has more than one CPU: sched_smt_active().
    pub smt_active: bool,
    /// The topology listed the CPU (it was online); an unlisted one has an LLC and a core of its
    /// own until a reload reads its place.
    pub cpu_known: Vec<bool>,
    /// The CPUs by node, LLC and core: every sched domain is a run of this order.
    pub cpu_order: Vec<u32>,
    pub cpu_order_pos: Vec<u32>,
    /// The sched domains, lowest level first.
    pub levels: Vec<Level>,
    /// node_reclaim_distance as the NUMA levels were judged against it (0: not applied).
    pub reclaim_distance: u32,
    /// The NUMA levels by distance (numa_levels()), and whether the distances nested.
    pub numa: Vec<NumaLevel>,
    pub numa_nested: bool,
}

/// One level of sched domains, as topology.c's sd_init() and build_sched_domains() set it up.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Level {
    pub name: &'static str,
    /// LAB_SD_* flags.
    pub flags: u32,
    pub imbalance_pct: u32,
    pub cache_nice_tries: u32,
    /// sd->imb_numa_nr: the task imbalance a NUMA domain leaves alone while the destination is
    /// lightly loaded.
    pub imb_numa_nr: u32,
    /// A NUMA level's node distance (the largest between two of its nodes), else 0.
    pub distance: u32,
    /// Each CPU's domain at this level: its first position in cpu_order and its size.
    pub start: Vec<u32>,
    pub size: Vec<u32>,
}

const SD_SMT: u32 = bpf_intf::LAB_SD_SHARE_CPUCAPACITY;
const SD_LLC: u32 = bpf_intf::LAB_SD_SHARE_LLC;
const SD_SIBLING: u32 = bpf_intf::LAB_SD_PREFER_SIBLING;
const SD_NUMA: u32 = bpf_intf::LAB_SD_NUMA;
const SD_WAKE_AFFINE: u32 = bpf_intf::LAB_SD_WAKE_AFFINE;
const SD_BALANCE_FORK: u32 = bpf_intf::LAB_SD_BALANCE_FORK;
/// sd_init()'s default flags of every level: SD_BALANCE_FORK and SD_WAKE_AFFINE (a NUMA level
/// beyond node_reclaim_distance loses them: Topo::apply_reclaim_distance()).
const SD_DEFAULT: u32 = SD_WAKE_AFFINE | SD_BALANCE_FORK;

/// A span's key: CPUs with equal keys share the span.
type SpanKey<'a> = &'a dyn Fn(usize) -> u64;

/// The sched domains of @order (CPUs by node, LLC, core) for CPUs whose node, LLC and core
/// indices are given. Candidates SMT, MC, PKG and NUMA get sd_init()'s settings (SMT: 110 %,
/// no cache_nice_tries; MC and PKG: 117 %, 1; NUMA: 117 %, 2, no PREFER_SIBLING); a level that
/// spans, for every CPU, what the level below it spans (or a single CPU, at the bottom) is
/// dropped as the kernel drops degenerate domains. imb_numa_nr follows build_sched_domains():
/// the first level above the LLC allows its number of LLCs (an eighth of its span when it holds
/// one), at least 1, and the levels above it that many per span of the first NUMA domain.
/// The NUMA candidates are @numa's, lowest distance first (sched_init_numa(): one level per
/// distance); they must nest (numa_levels()), so that every domain is a run of @order.
fn sched_domains(
    order: &[u32],
    node: &[u32],
    llc: &[u32],
    core: &[u32],
    numa: &[NumaLevel],
) -> Vec<Level> {
    let nr = node.len();
    // Each CPU's span: the run of CPUs in @order sharing its key.
    let spans = |key: &dyn Fn(usize) -> u64| -> (Vec<u32>, Vec<u32>) {
        let (mut start, mut size) = (vec![0u32; nr], vec![0u32; nr]);
        let mut i = 0;
        while i < order.len() {
            let k = key(order[i] as usize);
            let mut j = i;
            while j < order.len() && key(order[j] as usize) == k {
                j += 1;
            }
            for &c in &order[i..j] {
                start[c as usize] = i as u32;
                size[c as usize] = (j - i) as u32;
            }
            i = j;
        }
        (start, size)
    };
    let node_of = |c: usize| node[c] as u64;
    let llc_of = |c: usize| ((node[c] as u64) << 42) | ((llc[c] as u64) << 21);
    let core_of = |c: usize| llc_of(c) | core[c] as u64;
    let numa_keys: Vec<Box<dyn Fn(usize) -> u64 + '_>> = numa
        .iter()
        .map(|l| {
            Box::new(move |c: usize| l.cluster[node[c] as usize] as u64)
                as Box<dyn Fn(usize) -> u64>
        })
        .collect();
    let mut candidates: Vec<(&'static str, u32, u32, u32, SpanKey, u32)> = vec![
        (
            "SMT",
            SD_DEFAULT | SD_SMT | SD_LLC | SD_SIBLING,
            110,
            0,
            &core_of,
            0,
        ),
        ("MC", SD_DEFAULT | SD_LLC | SD_SIBLING, 117, 1, &llc_of, 0),
        ("PKG", SD_DEFAULT | SD_SIBLING, 117, 1, &node_of, 0),
    ];
    for (l, key) in numa.iter().zip(&numa_keys) {
        candidates.push((
            "NUMA",
            SD_DEFAULT | SD_NUMA,
            117,
            2,
            key.as_ref(),
            l.distance,
        ));
    }
    let mut levels: Vec<Level> = Vec::new();
    for (name, flags, imbalance_pct, cache_nice_tries, key, distance) in candidates {
        let (start, size) = spans(key);
        let same = match levels.last() {
            Some(below) => below.size == size,
            None => size.iter().all(|&s| s == 1),
        };
        if !same {
            levels.push(Level {
                name,
                flags,
                imbalance_pct,
                cache_nice_tries,
                imb_numa_nr: 0,
                distance,
                start,
                size,
            });
        }
    }
    // imb_numa_nr, from CPU 0's domains (the lab assumes symmetric nodes).
    let (mut imb, mut imb_span) = (0u32, 1u32);
    let first_numa = levels
        .iter()
        .find(|l| l.flags & SD_NUMA != 0)
        .map(|l| l.size[order[0] as usize]);
    for i in 0..levels.len() {
        let span = levels[i].size[order[0] as usize];
        let child_llc = i > 0 && levels[i - 1].flags & SD_LLC != 0;
        if levels[i].flags & SD_LLC == 0 && child_llc {
            let nr_llcs = span / levels[i - 1].size[order[0] as usize];
            imb = if nr_llcs == 1 { span >> 3 } else { nr_llcs }.max(1);
            levels[i].imb_numa_nr = imb;
            imb_span = first_numa.unwrap_or(span);
        } else {
            levels[i].imb_numa_nr = imb * (span / imb_span).max(1);
        }
    }
    levels
}

/// A CPU as the topology lists it: its number, NUMA node, LLC and core (ids need not be dense).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuIds {
    pub cpu: usize,
    pub node: usize,
    pub llc: usize,
    pub core: usize,
}

/// Sorted, deduplicated ids and the dense index of each.
fn dense<T: Ord + Copy>(ids: impl Iterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = ids.collect();
    v.sort();
    v.dedup();
    v
}

/// The members of each group, in ascending order, laid out one group after another: (list,
/// start of each group, size of each group, position of each member in its group).
fn runs(groups: &mut [Vec<u32>], nr: usize) -> (Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>) {
    let (mut list, mut start, mut size, mut pos) =
        (Vec::new(), Vec::new(), Vec::new(), vec![0; nr]);
    for g in groups.iter_mut() {
        g.sort();
        start.push(list.len() as u32);
        size.push(g.len() as u32);
        for (i, &cpu) in g.iter().enumerate() {
            pos[cpu as usize] = i as u32;
            list.push(cpu);
        }
    }
    (list, start, size, pos)
}

impl Topo {
    /// Builds the layout for @nr_cpus possible CPUs from the CPUs the topology lists, with one
    /// NUMA level over every node. A CPU it does not list (offline) gets an LLC and a core of
    /// its own, in node 0. (The tests' shapes; the daemon's is detect()'s.)
    #[cfg(test)]
    pub fn from_cpus(nr_cpus: usize, cpus: &[CpuIds]) -> Result<Topo> {
        Topo::build(nr_cpus, cpus, &|_, _| 0, 0)
    }

    /// from_cpus() with the NUMA levels of the node distances @distance(node id, node id), each
    /// judged against @reclaim (node_reclaim_distance: apply_reclaim_distance()).
    pub fn build(
        nr_cpus: usize,
        cpus: &[CpuIds],
        distance: &dyn Fn(usize, usize) -> u32,
        reclaim: u32,
    ) -> Result<Topo> {
        if nr_cpus == 0 || nr_cpus > MAX {
            bail!("{nr_cpus} possible CPUs: the lab supports 1..={MAX}");
        }
        let cpus: Vec<CpuIds> = cpus.iter().copied().filter(|c| c.cpu < nr_cpus).collect();
        let node_ids = dense(cpus.iter().map(|c| c.node));
        let llc_ids = dense(cpus.iter().map(|c| (c.node, c.llc)));
        let core_ids = dense(cpus.iter().map(|c| (c.node, c.llc, c.core)));
        let mut t = Topo {
            nr_cpus: nr_cpus as u32,
            cpu_node: vec![0; nr_cpus],
            nr_nodes: node_ids.len().max(1) as u32,
            cpu_llc: vec![0; nr_cpus],
            cpu_core: vec![0; nr_cpus],
            ..Default::default()
        };
        let mut llcs: Vec<Vec<u32>> = vec![Vec::new(); llc_ids.len()];
        let mut cores: Vec<Vec<u32>> = vec![Vec::new(); core_ids.len()];
        let mut listed = vec![false; nr_cpus];
        for c in &cpus {
            let l = llc_ids.binary_search(&(c.node, c.llc)).unwrap();
            let k = core_ids.binary_search(&(c.node, c.llc, c.core)).unwrap();
            t.cpu_node[c.cpu] = node_ids.binary_search(&c.node).unwrap() as u32;
            t.cpu_llc[c.cpu] = l as u32;
            t.cpu_core[c.cpu] = k as u32;
            llcs[l].push(c.cpu as u32);
            cores[k].push(c.cpu as u32);
            listed[c.cpu] = true;
        }
        t.cpu_known = listed.clone();
        for cpu in (0..nr_cpus).filter(|&c| !listed[c]) {
            t.cpu_llc[cpu] = llcs.len() as u32;
            llcs.push(vec![cpu as u32]);
            t.cpu_core[cpu] = cores.len() as u32;
            cores.push(vec![cpu as u32]);
        }
        if cores.iter().any(|c| c.len() > SMT_MAX) {
            bail!("a core with more than {SMT_MAX} SMT siblings: the lab supports {SMT_MAX}");
        }
        t.smt_active = cores.iter().any(|c| c.len() > 1);
        (t.llc_cpus, t.llc_start, t.llc_size, t.cpu_llc_pos) = runs(&mut llcs, nr_cpus);
        (t.core_cpus, t.core_start, t.core_size, _) = runs(&mut cores, nr_cpus);
        let dist: Vec<Vec<u32>> = node_ids
            .iter()
            .map(|&a| node_ids.iter().map(|&b| distance(a, b)).collect())
            .collect();
        // Room for SMT, MC and PKG below the NUMA levels.
        let max_numa = bpf_intf::lab_consts_LAB_MAX_LEVELS as usize - 3;
        (t.numa, t.numa_nested) = numa_levels(&dist, max_numa);
        // Nodes by their clusters, largest distance first: every NUMA domain is a run.
        let mut order: Vec<u32> = (0..nr_cpus as u32).collect();
        order.sort_by_key(|&c| {
            let c = c as usize;
            let n = t.cpu_node[c] as usize;
            let clusters: Vec<u32> = t.numa.iter().rev().map(|l| l.cluster[n]).collect();
            (clusters, t.cpu_node[c], t.cpu_llc[c], t.cpu_core[c], c)
        });
        t.cpu_order_pos = vec![0; nr_cpus];
        for (i, &c) in order.iter().enumerate() {
            t.cpu_order_pos[c as usize] = i as u32;
        }
        t.levels = sched_domains(&order, &t.cpu_node, &t.cpu_llc, &t.cpu_core, &t.numa);
        t.cpu_order = order;
        if reclaim > 0 {
            t.apply_reclaim_distance(reclaim);
        }
        Ok(t)
    }

    /// The running machine's topology. A CPU going offline while sysfs is read takes its files
    /// away under the reader: the read is tried again (10 times, 50 ms apart) before that is an
    /// error.
    pub fn detect() -> Result<Topo> {
        let mut tries = 1;
        let topo = loop {
            match scx_utils::Topology::new() {
                Ok(t) => break t,
                Err(e) if tries < 10 => {
                    log::debug!("reading the CPU topology again (try {tries}): {e:#}");
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(e) => return Err(e.context(format!("after {tries} tries"))),
            }
        };
        let nr = libbpf_rs::num_possible_cpus()?;
        let cpus: Vec<CpuIds> = topo
            .all_cpus
            .values()
            .map(|c| CpuIds {
                cpu: c.id,
                node: c.node_id,
                llc: c.llc_id,
                core: c.core_id,
            })
            .collect();
        let distance = |a: usize, b: usize| {
            topo.nodes
                .get(&a)
                .and_then(|n| n.distance.get(b))
                .map_or(0, |&d| d as u32)
        };
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        Topo::build(nr, &cpus, &distance, node_reclaim_distance(&cpuinfo))
    }

    /// sd_init() for each NUMA level at its node distance: beyond @reclaim
    /// (node_reclaim_distance) neither a wakeup (SD_WAKE_AFFINE) nor a fork (SD_BALANCE_FORK)
    /// crosses it; the balancer still does.
    pub fn apply_reclaim_distance(&mut self, reclaim: u32) {
        self.reclaim_distance = reclaim;
        for l in self.levels.iter_mut().filter(|l| l.flags & SD_NUMA != 0) {
            if l.distance > reclaim {
                l.flags &= !SD_DEFAULT;
            } else {
                l.flags |= SD_DEFAULT;
            }
        }
    }

    /// How many levels from the lowest up have all of @flags: what select_task_rq_fair()'s
    /// walk up the domains reaches (BPF reads it instead of walking).
    pub fn levels_with(&self, flags: u32) -> u32 {
        self.levels
            .iter()
            .take_while(|l| l.flags & flags == flags)
            .count() as u32
    }

    pub fn nr_llcs(&self) -> u32 {
        self.llc_size.len() as u32
    }

    pub fn nr_cores(&self) -> u32 {
        self.core_size.len() as u32
    }

    /// The sched domains for the log, as CPU 0 sees them: "SMT 2, MC 4, NUMA 8 (imb_numa_nr 2)".
    pub fn describe_domains(&self) -> String {
        let first = self.cpu_order.first().copied().unwrap_or(0) as usize;
        let v: Vec<String> = self
            .levels
            .iter()
            .map(|l| {
                let numa = if l.flags & SD_NUMA != 0 && l.distance > self.reclaim_distance {
                    format!(
                        " (imb_numa_nr {}, distance {} > node_reclaim_distance {}: no wake \
                         affine or fork placement across it)",
                        l.imb_numa_nr, l.distance, self.reclaim_distance
                    )
                } else if l.flags & SD_NUMA != 0 && l.distance > 0 {
                    format!(" (imb_numa_nr {}, distance {})", l.imb_numa_nr, l.distance)
                } else if l.flags & SD_NUMA != 0 {
                    format!(" (imb_numa_nr {})", l.imb_numa_nr)
                } else {
                    String::new()
                };
                format!("{} {}{}", l.name, l.size[first], numa)
            })
            .collect();
        v.join(", ")
    }

    /// One line for the log: "8 CPUs in 2 LLCs, 2 NUMA nodes, 4 cores (SMT)".
    pub fn describe(&self) -> String {
        let n = |k: u32, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
        let unknown = self.cpu_known.iter().filter(|&&k| !k).count() as u32;
        format!(
            "{} in {}, {}, {}{}{}",
            n(self.nr_cpus, "CPU", "CPUs"),
            n(self.nr_llcs(), "LLC", "LLCs"),
            n(self.nr_nodes, "NUMA node", "NUMA nodes"),
            n(self.nr_cores(), "core", "cores"),
            if self.smt_active { " (SMT)" } else { "" },
            if unknown > 0 {
                format!(
                    "; {} offline, placed by a reload when it comes online",
                    n(unknown, "CPU", "CPUs")
                )
            } else {
                String::new()
            }
        )
    }
}

/// Copies a layout into fixed-size arrays of the BPF struct (by field, whatever its Rust type).
macro_rules! fill_topo {
    ($dst:expr, $t:expr) => {{
        let t: &$crate::topology::Topo = $t;
        $dst.nr_cpus = t.nr_cpus;
        $dst.nr_llcs = t.nr_llcs();
        $dst.nr_nodes = t.nr_nodes;
        $dst.nr_cores = t.nr_cores();
        $dst.smt_active = t.smt_active as u32;
        $dst.cpu_node[..t.cpu_node.len()].copy_from_slice(&t.cpu_node);
        $dst.core_start[..t.core_start.len()].copy_from_slice(&t.core_start);
        $dst.core_size[..t.core_size.len()].copy_from_slice(&t.core_size);
        $dst.core_cpus[..t.core_cpus.len()].copy_from_slice(&t.core_cpus);
        $dst.cpu_llc[..t.cpu_llc.len()].copy_from_slice(&t.cpu_llc);
        $dst.cpu_core[..t.cpu_core.len()].copy_from_slice(&t.cpu_core);
        $dst.cpu_llc_pos[..t.cpu_llc_pos.len()].copy_from_slice(&t.cpu_llc_pos);
        $dst.llc_start[..t.llc_start.len()].copy_from_slice(&t.llc_start);
        $dst.llc_size[..t.llc_size.len()].copy_from_slice(&t.llc_size);
        $dst.llc_cpus[..t.llc_cpus.len()].copy_from_slice(&t.llc_cpus);
        for (i, v) in t.cpu_known.iter().enumerate() {
            $dst.cpu_known[i] = *v as u8;
        }
        $dst.cpu_order[..t.cpu_order.len()].copy_from_slice(&t.cpu_order);
        $dst.cpu_order_pos[..t.cpu_order_pos.len()].copy_from_slice(&t.cpu_order_pos);
        $dst.nr_levels = t.levels.len() as u32;
        $dst.wa_levels = t.levels_with(bpf_intf::LAB_SD_WAKE_AFFINE);
        $dst.fork_levels = t.levels_with(bpf_intf::LAB_SD_BALANCE_FORK);
        for (l, lvl) in t.levels.iter().enumerate() {
            $dst.lvl_flags[l] = lvl.flags;
            $dst.lvl_imbalance_pct[l] = lvl.imbalance_pct;
            $dst.lvl_cache_nice_tries[l] = lvl.cache_nice_tries;
            $dst.lvl_imb_numa_nr[l] = lvl.imb_numa_nr;
            for (i, v) in lvl.start.iter().enumerate() {
                $dst.lvl_start[l][i] = *v as u16;
            }
            for (i, v) in lvl.size.iter().enumerate() {
                $dst.lvl_size[l][i] = *v as u16;
            }
        }
    }};
}
pub(crate) use fill_topo;

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[(usize, usize, usize, usize)]) -> Vec<CpuIds> {
        v.iter()
            .map(|&(cpu, node, llc, core)| CpuIds {
                cpu,
                node,
                llc,
                core,
            })
            .collect()
    }

    #[test]
    fn groups_cpus_by_llc_with_positions() {
        // Two LLCs (ids 7 and 3), SMT pairs (0,4) (1,5) in LLC 7, CPU 6 unlisted (offline).
        let cpus = ids(&[
            (0, 0, 7, 0),
            (4, 0, 7, 0),
            (1, 0, 7, 1),
            (5, 0, 7, 1),
            (2, 0, 3, 2),
            (3, 0, 3, 3),
        ]);
        let t = Topo::from_cpus(7, &cpus).unwrap();
        assert_eq!(t.nr_llcs(), 3);
        // LLC ids are dense and sorted: 3 -> 0, 7 -> 1; the offline CPU gets LLC 2.
        assert_eq!(t.cpu_llc, vec![1, 1, 0, 0, 1, 1, 2]);
        assert_eq!(t.llc_size, vec![2, 4, 1]);
        assert_eq!(t.llc_cpus, vec![2, 3, 0, 1, 4, 5, 6]);
        assert_eq!(t.llc_start, vec![0, 2, 6]);
        for cpu in 0..7 {
            let l = t.cpu_llc[cpu] as usize;
            let at = (t.llc_start[l] + t.cpu_llc_pos[cpu]) as usize;
            assert_eq!(t.llc_cpus[at], cpu as u32);
        }
        // SMT siblings share a core index, others do not; cores are dense.
        assert_eq!(t.cpu_core[0], t.cpu_core[4]);
        assert_ne!(t.cpu_core[0], t.cpu_core[1]);
        assert_ne!(t.cpu_core[6], t.cpu_core[0]);
        assert_eq!(t.nr_cores(), 5);
        assert!(t.smt_active);
        for cpu in 0..7u32 {
            let k = t.cpu_core[cpu as usize] as usize;
            let (s, n) = (t.core_start[k] as usize, t.core_size[k] as usize);
            assert!(t.core_cpus[s..s + n].contains(&cpu));
        }
        assert_eq!(
            t.describe(),
            "7 CPUs in 3 LLCs, 1 NUMA node, 5 cores (SMT); 1 CPU offline, placed by a reload when it comes online"
        );
        // Only the offline CPU's place is unknown (a reload reads it once it is online).
        assert_eq!(t.cpu_known, [true, true, true, true, true, true, false]);
        assert!(Topo::from_cpus(0, &[]).is_err());
    }

    /// `--smp sockets=2,cores=2,threads=2`: Linux numbers the threads of a core next to each
    /// other; each socket is a node and an LLC.
    #[test]
    fn two_sockets_of_smt_cores() {
        let cpus: Vec<_> = (0..8).map(|c| (c, c / 4, c / 4, c / 2)).collect();
        let t = Topo::from_cpus(8, &ids(&cpus)).unwrap();
        assert_eq!(t.cpu_node, vec![0, 0, 0, 0, 1, 1, 1, 1]);
        assert_eq!(t.nr_nodes, 2);
        assert_eq!(t.cpu_core, vec![0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(t.core_cpus, (0..8).collect::<Vec<u32>>());
        assert_eq!(t.core_size, vec![2; 4]);
        assert_eq!(
            t.describe(),
            "8 CPUs in 2 LLCs, 2 NUMA nodes, 4 cores (SMT)"
        );
        // One thread per core: no SMT.
        let flat: Vec<_> = (0..4).map(|c| (c, 0, 0, c)).collect();
        let t = Topo::from_cpus(4, &ids(&flat)).unwrap();
        assert!(!t.smt_active);
        assert_eq!(t.describe(), "4 CPUs in 1 LLC, 1 NUMA node, 4 cores");
        // More siblings than the BPF side walks.
        let wide: Vec<_> = (0..SMT_MAX + 1).map(|c| (c, 0, 0, 0)).collect();
        assert!(Topo::from_cpus(SMT_MAX + 1, &ids(&wide)).is_err());
    }

    /// The sched domains of the VM's multi-level shape, of a flat machine and of a 2 x 64-core
    /// EPYC in NPS1 (the numbers in the commit that set imb_numa_nr this way).
    #[test]
    fn sched_domain_levels() {
        let cpus: Vec<_> = (0..8).map(|c| (c, c / 4, c / 4, c / 2)).collect();
        let t = Topo::from_cpus(8, &ids(&cpus)).unwrap();
        assert_eq!(t.describe_domains(), "SMT 2, MC 4, NUMA 8 (imb_numa_nr 2)");
        let smt = &t.levels[0];
        assert_eq!((smt.imbalance_pct, smt.cache_nice_tries), (110, 0));
        assert_eq!(smt.flags, SD_DEFAULT | SD_SMT | SD_LLC | SD_SIBLING);
        assert_eq!((smt.start[5], smt.size[5]), (4, 2));
        let numa = &t.levels[2];
        assert_eq!((numa.cache_nice_tries, numa.flags & SD_SIBLING), (2, 0));
        assert_eq!((t.levels[1].start[6], t.levels[1].size[6]), (4, 4));

        let flat: Vec<_> = (0..4).map(|c| (c, 0, 0, c)).collect();
        let t = Topo::from_cpus(4, &ids(&flat)).unwrap();
        assert_eq!(t.describe_domains(), "MC 4");

        // CPUs numbered across the sockets: the order still makes every domain one run.
        let epyc: Vec<_> = (0..256)
            .map(|c| (c, (c % 128) / 64, (c % 128) / 8, c % 128))
            .collect();
        let t = Topo::from_cpus(256, &ids(&epyc)).unwrap();
        assert_eq!(
            t.describe_domains(),
            "SMT 2, MC 16, PKG 128, NUMA 256 (imb_numa_nr 8)"
        );
        for l in &t.levels {
            for cpu in 0..256 {
                let (s, n) = (l.start[cpu] as usize, l.size[cpu] as usize);
                assert!(t.cpu_order[s..s + n].contains(&(cpu as u32)));
            }
        }
        assert_eq!(t.levels[2].imb_numa_nr, 8);
    }

    /// sd_init() at a NUMA level: at a distance up to node_reclaim_distance (QEMU's 20, EPYC's
    /// 32 on Zen, whose kernel raises the limit to 32) wakeups and forks may cross it; beyond,
    /// neither does, and every lower level keeps both flags.
    #[test]
    fn numa_distance_beyond_reclaim_drops_wake_affine_and_fork_balance() {
        let cpus = ids(&(0..8).map(|c| (c, c / 4, c / 4, c / 2)).collect::<Vec<_>>());
        let at = |remote: u32| move |a: usize, b: usize| if a == b { 10 } else { remote };
        for (distance, reclaim, crosses) in [
            (20, 30, true),
            (30, 30, true),
            (32, 32, true),
            (32, 30, false),
            (40, 32, false),
        ] {
            let t = Topo::build(8, &cpus, &at(distance), reclaim).unwrap();
            let numa = t.levels.last().unwrap();
            assert_eq!(numa.distance, distance);
            assert_eq!(
                numa.flags & SD_DEFAULT == SD_DEFAULT,
                crosses,
                "{distance} vs {reclaim}"
            );
            assert_eq!(numa.flags & SD_DEFAULT == 0, !crosses);
            assert!(
                t.levels[..2]
                    .iter()
                    .all(|l| l.flags & SD_DEFAULT == SD_DEFAULT)
            );
        }
        let t = Topo::build(8, &cpus, &at(40), 30).unwrap();
        assert_eq!(
            t.describe_domains(),
            "SMT 2, MC 4, NUMA 8 (imb_numa_nr 2, distance 40 > node_reclaim_distance 30: no wake \
             affine or fork placement across it)"
        );
        let t = Topo::build(8, &cpus, &at(20), 30).unwrap();
        assert_eq!(
            t.describe_domains(),
            "SMT 2, MC 4, NUMA 8 (imb_numa_nr 2, distance 20)"
        );
        // One node: no NUMA level, nothing to judge.
        let flat = ids(&(0..4).map(|c| (c, 0, 0, c)).collect::<Vec<_>>());
        let t = Topo::build(4, &flat, &at(40), 30).unwrap();
        assert_eq!(t.levels.len(), 1);
        assert_eq!(t.levels[0].flags & SD_DEFAULT, SD_DEFAULT);
    }

    /// sched_init_numa(): one NUMA level per distance. Four nodes of two CPUs (an LLC each) in
    /// pairs at 20, the pairs at 30 -- numbered within the pairs (0-1, 2-3) or across them (0-2,
    /// 1-3: the order puts each pair's CPUs next to each other) -- get NUMA 4 and NUMA 8 above
    /// the LLCs, the upper one beyond node_reclaim_distance when it is 30 or less.
    #[test]
    fn numa_levels_by_distance() {
        let cpus = ids(&(0..8).map(|c| (c, c / 2, c / 2, c)).collect::<Vec<_>>());
        for pair in [|a: usize| a / 2, |a: usize| a % 2] {
            let dist = move |a: usize, b: usize| match (a == b, pair(a) == pair(b)) {
                (true, _) => 10,
                (false, true) => 20,
                (false, false) => 30,
            };
            let t = Topo::build(8, &cpus, &dist, 25).unwrap();
            assert!(t.numa_nested);
            assert_eq!(
                t.describe_domains(),
                "MC 2, NUMA 4 (imb_numa_nr 2, distance 20), NUMA 8 (imb_numa_nr 4, distance 30 > \
                 node_reclaim_distance 25: no wake affine or fork placement across it)"
            );
            for l in &t.levels {
                for cpu in 0..8 {
                    let (s, n) = (l.start[cpu] as usize, l.size[cpu] as usize);
                    let span = &t.cpu_order[s..s + n];
                    assert!(span.contains(&(cpu as u32)));
                    // A NUMA 4 domain is a node and the node at 20 from it.
                    if l.distance == 20 {
                        assert!(span.iter().all(|&o| pair(o as usize / 2) == pair(cpu / 2)));
                    }
                }
            }
            assert_eq!(t.levels[1].flags & SD_DEFAULT, SD_DEFAULT);
            assert_eq!(t.levels[2].flags & SD_DEFAULT, 0);
            // What BPF reads instead of walking the levels.
            assert_eq!(t.levels_with(SD_WAKE_AFFINE), 2);
            assert_eq!(t.levels_with(SD_BALANCE_FORK), 2);
        }
        // Three nodes in a row (0-1 and 1-2 at 20, 0-2 at 30): node 1's span at 20 holds nodes
        // whose spans differ (the kernel's overlapping groups): one level at 30.
        let row = ids(&(0..6).map(|c| (c, c / 2, c / 2, c)).collect::<Vec<_>>());
        let dist = |a: usize, b: usize| (10 * a.abs_diff(b) as u32 + 10).max(10);
        let t = Topo::build(6, &row, &dist, 30).unwrap();
        assert!(!t.numa_nested);
        assert_eq!(
            t.describe_domains(),
            "MC 2, NUMA 6 (imb_numa_nr 3, distance 30)"
        );
        let (levels, nested) =
            numa_levels(&[vec![10, 20, 30], vec![20, 10, 20], vec![30, 20, 10]], 5);
        assert!(!nested);
        assert_eq!(
            levels,
            vec![NumaLevel {
                distance: 30,
                cluster: vec![0, 0, 0]
            }]
        );
        // More levels than the BPF side holds: one level too.
        let d5: Vec<Vec<u32>> = (0..6)
            .map(|a| {
                (0..6)
                    .map(|b| {
                        if a == b {
                            10
                        } else {
                            10 + 10 * (a.max(b) as u32)
                        }
                    })
                    .collect()
            })
            .collect();
        assert!(!numa_levels(&d5, 2).1);
    }

    /// A big host: 4,096 CPUs in 2 nodes of 32 LLCs of 32 SMT-2 cores, and the data structures'
    /// whole range; one CPU more is refused with the limit in the message.
    #[test]
    fn thousands_of_cpus() {
        let big: Vec<_> = (0..4096).map(|c| (c, c / 2048, c / 64, c / 2)).collect();
        let t = Topo::from_cpus(4096, &ids(&big)).unwrap();
        assert_eq!(
            t.describe(),
            "4096 CPUs in 64 LLCs, 2 NUMA nodes, 2048 cores (SMT)"
        );
        assert_eq!(t.llc_size, vec![64; 64]);
        assert_eq!(t.cpu_core[4095], 2047);
        const _: () = assert!(MAX >= 4096);
        let all: Vec<_> = (0..MAX).map(|c| (c, 0, c / 64, c)).collect();
        assert!(Topo::from_cpus(MAX, &ids(&all)).is_ok());
        let err = Topo::from_cpus(MAX + 1, &ids(&all))
            .unwrap_err()
            .to_string();
        assert!(err.contains(&MAX.to_string()), "{err}");
    }

    /// A process pinned to one CPU (a bench under `taskset -c 3`) must still scale the slice by
    /// the machine's CPU count, as the kernel does.
    #[test]
    fn online_cpus_ignores_the_affinity_of_the_caller() {
        let all = online_cpus();
        let t = std::thread::spawn(|| {
            // SAFETY: a zeroed cpu_set_t is valid; the call only changes this thread's affinity.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(0, &mut set);
                assert_eq!(
                    libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
                    0
                );
            }
            assert_eq!(std::thread::available_parallelism().unwrap().get(), 1);
            online_cpus()
        });
        assert_eq!(t.join().unwrap(), all);
        let sysfs = std::fs::read_to_string(ONLINE_CPUS_PATH).unwrap();
        assert_eq!(
            all,
            scx_utils::Cpumask::from_cpulist(sysfs.trim())
                .unwrap()
                .weight() as u64
        );
    }
}
