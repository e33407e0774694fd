//! NUMA distance as the kernel reads it: node_reclaim_distance (which NUMA levels keep wake
//! affinity and fork placement) and sched_init_numa()'s levels, one per distinct distance.

/// node_reclaim_distance: RECLAIM_DISTANCE (30), or 32 where the kernel raises it (AMD's Zen
/// families, 0x17 and later: init_amd_zen_common()), from /proc/cpuinfo's first CPU.
pub fn node_reclaim_distance(cpuinfo: &str) -> u32 {
    let field = |name: &str| {
        cpuinfo
            .lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let amd = field("vendor_id").as_deref() == Some("AuthenticAMD");
    let family = field("cpu family").and_then(|f| f.parse::<u32>().ok());
    if amd && family.is_some_and(|f| f >= 0x17) {
        32
    } else {
        30
    }
}

/// One NUMA level of sched_init_numa(): its distance and each (dense) node's cluster -- the
/// smallest node within that distance of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaLevel {
    pub distance: u32,
    pub cluster: Vec<u32>,
}

/// sched_init_numa()'s levels for the node distance matrix @dist (dense nodes): one per distinct
/// distance between two nodes, each node's span the nodes within that distance. When those spans
/// do not nest (a node's span holding a node whose span differs: the kernel's overlapping groups)
/// or are more than @max_levels, one level at the largest distance spans every node, and the
/// second value is false. With one node (or no distances: @dist empty), a single level of
/// distance 0 over every node.
pub fn numa_levels(dist: &[Vec<u32>], max_levels: usize) -> (Vec<NumaLevel>, bool) {
    let n = dist.len().max(1);
    let d = |a: usize, b: usize| dist.get(a).and_then(|r| r.get(b)).copied().unwrap_or(0);
    let mut ds: Vec<u32> = (0..n)
        .flat_map(|a| (0..n).filter(move |&b| b != a).map(move |b| (a, b)))
        .map(|(a, b)| d(a, b))
        .collect();
    ds.sort();
    ds.dedup();
    let one = |distance| {
        vec![NumaLevel {
            distance,
            cluster: vec![0; n],
        }]
    };
    if ds.len() <= 1 {
        return (one(ds.first().copied().unwrap_or(0)), true);
    }
    let span = |a: usize, lim: u32| -> Vec<usize> {
        (0..n).filter(|&b| b == a || d(a, b) <= lim).collect()
    };
    let mut levels = Vec::new();
    for &lim in &ds {
        let spans: Vec<Vec<usize>> = (0..n).map(|a| span(a, lim)).collect();
        if (0..n).any(|a| spans[a].iter().any(|&b| spans[b] != spans[a])) {
            return (one(*ds.last().unwrap()), false);
        }
        levels.push(NumaLevel {
            distance: lim,
            cluster: spans.iter().map(|s| s[0] as u32).collect(),
        });
    }
    if levels.len() > max_levels {
        return (one(*ds.last().unwrap()), false);
    }
    (levels, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_reclaim_distance_is_32_on_zen() {
        let cpuinfo = |vendor: &str, family: u32| {
            format!("processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: 1\n")
        };
        assert_eq!(node_reclaim_distance(&cpuinfo("AuthenticAMD", 0x19)), 32);
        assert_eq!(node_reclaim_distance(&cpuinfo("AuthenticAMD", 0x17)), 32);
        assert_eq!(node_reclaim_distance(&cpuinfo("AuthenticAMD", 0x15)), 30);
        assert_eq!(node_reclaim_distance(&cpuinfo("GenuineIntel", 6)), 30);
        assert_eq!(node_reclaim_distance(""), 30);
    }
}
