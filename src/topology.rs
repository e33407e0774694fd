//! The machine's CPUs: how many are online (what the kernel scales base_slice_ns by), which
//! ones this process may run on (what the bench places its tasks on), and the topology the BPF
//! scheduler's CPU selection and balancing work with: LLCs (the balancing and idle-scan domain)
//! and cores (SMT siblings), from scx_utils' Topology.
//!
//! It only reads; it does not decide placement or scheduling policy (that is BPF's and the
//! bench workloads').

use crate::bpf_intf;
use anyhow::{Result, bail};

const MAX: usize = bpf_intf::lab_consts_LAB_MAX_CPUS as usize;

/// Where the kernel lists the online CPUs (a cpulist such as `0-3,8`).
const ONLINE_CPUS_PATH: &str = "/sys/devices/system/cpu/online";

/// Offset of the core index given to CPUs the topology does not list, so that no two of them
/// (and no listed CPU) share a core.
const UNLISTED_CORE_BASE: u32 = 1_000_000;

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
    /// LLC index (dense, 0..) of each CPU.
    pub cpu_llc: Vec<u32>,
    /// Core index of each CPU (SMT siblings share it).
    pub cpu_core: Vec<u32>,
    /// CPUs grouped by LLC, and where each LLC starts in that list.
    pub llc_cpus: Vec<u32>,
    pub llc_start: Vec<u32>,
    pub llc_size: Vec<u32>,
    pub cpu_llc_pos: Vec<u32>,
}

impl Topo {
    /// Builds the layout from (cpu, llc id, core id) triples; ids need not be dense.
    pub fn from_cpus(nr_cpus: usize, cpus: &[(usize, usize, usize)]) -> Result<Topo> {
        if nr_cpus == 0 || nr_cpus > MAX {
            bail!("{nr_cpus} possible CPUs: the lab supports 1..={MAX}");
        }
        let mut llc_ids: Vec<usize> = cpus.iter().map(|c| c.1).collect();
        llc_ids.sort();
        llc_ids.dedup();
        let mut core_ids: Vec<(usize, usize)> = cpus.iter().map(|c| (c.1, c.2)).collect();
        core_ids.sort();
        core_ids.dedup();
        let mut t = Topo {
            nr_cpus: nr_cpus as u32,
            cpu_llc: vec![0; nr_cpus],
            cpu_core: (0..nr_cpus as u32)
                .map(|c| c + UNLISTED_CORE_BASE)
                .collect(),
            cpu_llc_pos: vec![0; nr_cpus],
            ..Default::default()
        };
        // CPUs the topology does not list (offline) get an LLC of their own.
        let mut groups: Vec<Vec<u32>> = vec![Vec::new(); llc_ids.len()];
        let mut listed = vec![false; nr_cpus];
        for &(cpu, llc, core) in cpus {
            if cpu >= nr_cpus {
                continue;
            }
            let l = llc_ids.binary_search(&llc).unwrap();
            t.cpu_llc[cpu] = l as u32;
            t.cpu_core[cpu] = core_ids.binary_search(&(llc, core)).unwrap() as u32;
            groups[l].push(cpu as u32);
            listed[cpu] = true;
        }
        for (cpu, _) in listed.iter().enumerate().filter(|(_, l)| !**l) {
            t.cpu_llc[cpu] = groups.len() as u32;
            groups.push(vec![cpu as u32]);
        }
        for g in &mut groups {
            g.sort();
            t.llc_start.push(t.llc_cpus.len() as u32);
            t.llc_size.push(g.len() as u32);
            for (pos, &cpu) in g.iter().enumerate() {
                t.cpu_llc_pos[cpu as usize] = pos as u32;
                t.llc_cpus.push(cpu);
            }
        }
        Ok(t)
    }

    /// The running machine's topology.
    pub fn detect() -> Result<Topo> {
        let topo = scx_utils::Topology::new()?;
        let nr = libbpf_rs::num_possible_cpus()?;
        let cpus: Vec<(usize, usize, usize)> = topo
            .all_cpus
            .values()
            .map(|c| (c.id, c.llc_id, c.core_id))
            .collect();
        Topo::from_cpus(nr, &cpus)
    }

    pub fn nr_llcs(&self) -> u32 {
        self.llc_size.len() as u32
    }
}

/// Copies a layout into fixed-size arrays of the BPF struct (by field, whatever its Rust type).
macro_rules! fill_topo {
    ($dst:expr, $t:expr) => {{
        let t: &$crate::topology::Topo = $t;
        $dst.nr_cpus = t.nr_cpus;
        $dst.nr_llcs = t.nr_llcs();
        for (i, v) in t.cpu_llc.iter().enumerate() {
            $dst.cpu_llc[i] = *v;
        }
        for (i, v) in t.cpu_core.iter().enumerate() {
            $dst.cpu_core[i] = *v;
        }
        for (i, v) in t.cpu_llc_pos.iter().enumerate() {
            $dst.cpu_llc_pos[i] = *v;
        }
        for (i, v) in t.llc_start.iter().enumerate() {
            $dst.llc_start[i] = *v;
        }
        for (i, v) in t.llc_size.iter().enumerate() {
            $dst.llc_size[i] = *v;
        }
        for (i, v) in t.llc_cpus.iter().enumerate() {
            $dst.llc_cpus[i] = *v;
        }
    }};
}
pub(crate) use fill_topo;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_cpus_by_llc_with_positions() {
        // Two LLCs (ids 7 and 3), SMT pairs (0,4) (1,5) in LLC 7, CPU 6 unlisted (offline).
        let cpus = [
            (0, 7, 0),
            (4, 7, 0),
            (1, 7, 1),
            (5, 7, 1),
            (2, 3, 2),
            (3, 3, 3),
        ];
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
        // SMT siblings share a core index, others do not.
        assert_eq!(t.cpu_core[0], t.cpu_core[4]);
        assert_ne!(t.cpu_core[0], t.cpu_core[1]);
        assert_ne!(t.cpu_core[6], t.cpu_core[0]);
        assert!(Topo::from_cpus(0, &[]).is_err());
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
