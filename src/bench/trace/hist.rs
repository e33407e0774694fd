//! The tracer's histograms on the Rust side: the edges of the buckets that `hist.h` fills, the
//! difference of two cumulative readings, sums over runs, and percentiles.
//!
//! A bucket's edges: values below 8 ns have one bucket each; above, bucket `8 + 8·(e−3) + s`
//! holds `[(8+s)·2^(e−3), (8+s+1)·2^(e−3))` for the octave `[2^e, 2^(e+1))`. A percentile is the
//! upper edge of the bucket where the running count reaches it, so it is at most 12.5 % above
//! the true value and never below it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `TRACE_SUB_BITS`, `TRACE_SUB`, `TRACE_MAX_EXP` and `TRACE_BUCKETS` of hist.h.
pub const SUB_BITS: u32 = 3;
pub const SUB: u64 = 1 << SUB_BITS;
pub const MAX_EXP: u32 = 40;
pub const BUCKETS: usize = (SUB + (MAX_EXP - SUB_BITS + 1) as u64 * SUB) as usize;

/// The lowest value of bucket `b`.
pub fn lower(b: usize) -> u64 {
    let b = b as u64;
    if b < SUB {
        return b;
    }
    let e = (b - SUB) / SUB + u64::from(SUB_BITS);
    let s = (b - SUB) % SUB;
    (SUB + s) << (e - u64::from(SUB_BITS))
}

/// The first value above bucket `b` (the last bucket is open: u64::MAX).
pub fn upper(b: usize) -> u64 {
    if b + 1 >= BUCKETS {
        u64::MAX
    } else {
        lower(b + 1)
    }
}

/// Event counts per bucket (always [`BUCKETS`] long). Written as `[[bucket, count], ...]` with
/// the empty buckets left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hist(pub Vec<u64>);

impl Default for Hist {
    fn default() -> Self {
        Hist(vec![0; BUCKETS])
    }
}

impl Hist {
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// `self − earlier`, bucket by bucket (a cumulative reading minus an earlier one).
    pub fn since(&self, earlier: &Hist) -> Hist {
        Hist(
            self.0
                .iter()
                .zip(&earlier.0)
                .map(|(b, a)| b.saturating_sub(*a))
                .collect(),
        )
    }

    pub fn add(&mut self, other: &Hist) {
        for (x, y) in self.0.iter_mut().zip(&other.0) {
            *x += y;
        }
    }

    /// The value at quantile `q` (0 < q <= 1): the upper edge of the bucket holding it, in ns;
    /// None for an empty histogram.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        let want = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (b, &n) in self.0.iter().enumerate() {
            seen += n;
            if seen >= want {
                // The last bucket is open: its lower edge is all that is known.
                return Some(if b + 1 < BUCKETS { upper(b) } else { lower(b) });
            }
        }
        None
    }

    /// Counts summed into bins of `bins` edges (ns): bin i holds the buckets whose lower edge
    /// is in `[edges[i], edges[i+1])`, the last bin everything from its edge up.
    pub fn binned(&self, edges: &[u64]) -> Vec<u64> {
        let mut out = vec![0; edges.len()];
        for (b, &n) in self.0.iter().enumerate() {
            let lo = lower(b);
            let i = edges.iter().rposition(|&e| lo >= e).unwrap_or(0);
            out[i] += n;
        }
        out
    }
}

impl Serialize for Hist {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let sparse: Vec<(usize, u64)> = self
            .0
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(b, n)| (b, *n))
            .collect();
        sparse.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Hist {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let sparse = Vec::<(usize, u64)>::deserialize(d)?;
        let mut h = Hist::default();
        for (b, n) in sparse {
            if b >= BUCKETS {
                return Err(serde::de::Error::custom(format!(
                    "histogram bucket {b} is out of range (0..{BUCKETS})"
                )));
            }
            h.0[b] = n;
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    unsafe extern "C" {
        fn trace_hist_bucket(v: u64) -> u32;
        fn trace_hist_buckets() -> u32;
    }

    fn bucket(v: u64) -> usize {
        // SAFETY: a pure function of its argument (src/bench/trace/host.c).
        unsafe { trace_hist_bucket(v) as usize }
    }

    #[test]
    fn the_c_buckets_hold_their_values_between_the_rust_edges() {
        // SAFETY: as above.
        assert_eq!(unsafe { trace_hist_buckets() } as usize, BUCKETS);
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut values: Vec<u64> = (0..64).flat_map(|e| [1u64 << e, (1u64 << e) - 1]).collect();
        values.extend((0..20_000).map(|_| rng.random::<u64>() >> rng.random_range(0..64)));
        values.extend(0..1000);
        for v in values {
            let b = bucket(v);
            assert!(b < BUCKETS, "{v}");
            assert!(lower(b) <= v, "{v} in bucket {b} starting at {}", lower(b));
            if b + 1 < BUCKETS {
                assert!(v < upper(b), "{v} in bucket {b} ending at {}", upper(b));
                // A bucket is at most an eighth of its lower edge wide.
                assert!(upper(b) - lower(b) <= (lower(b) / SUB).max(1), "bucket {b}");
            } else {
                assert!(v >= 1u64 << (MAX_EXP + 1) || v >= lower(b));
            }
        }
        // The edges are contiguous and increasing.
        for b in 1..BUCKETS {
            assert_eq!(lower(b), upper(b - 1));
            assert!(lower(b) > lower(b - 1));
        }
        assert_eq!((lower(8), upper(8), lower(16), upper(16)), (8, 9, 16, 18));
    }

    #[test]
    fn percentiles_are_the_upper_edge_of_their_bucket() {
        let mut h = Hist::default();
        // 90 events of 1000 ns, 9 of 20 µs, 1 of 5 ms.
        h.0[bucket(1000)] += 90;
        h.0[bucket(20_000)] += 9;
        h.0[bucket(5_000_000)] += 1;
        let up = |v| upper(bucket(v));
        assert_eq!(h.total(), 100);
        assert_eq!(h.quantile(0.5), Some(up(1000)));
        assert_eq!(h.quantile(0.9), Some(up(1000)));
        assert_eq!(h.quantile(0.91), Some(up(20_000)));
        assert_eq!(h.quantile(0.99), Some(up(20_000)));
        assert_eq!(h.quantile(1.0), Some(up(5_000_000)));
        for v in [1000u64, 20_000, 5_000_000] {
            assert!(up(v) > v && (up(v) - v) as f64 <= v as f64 / 8.0, "{v}");
        }
        assert_eq!(Hist::default().quantile(0.5), None);
    }

    #[test]
    fn readings_subtract_sum_bin_and_round_trip_sparsely() {
        let mut a = Hist::default();
        let mut b = Hist::default();
        a.0[10] = 5;
        b.0[10] = 8;
        b.0[100] = 2;
        let d = b.since(&a);
        assert_eq!((d.0[10], d.0[100], d.total()), (3, 2, 5));
        let mut s = d.clone();
        s.add(&d);
        assert_eq!(s.total(), 10);
        let edges = [0, lower(50), lower(100)];
        assert_eq!(d.binned(&edges), vec![3, 0, 2]);
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(json, "[[10,3],[100,2]]");
        assert_eq!(serde_json::from_str::<Hist>(&json).unwrap(), d);
        assert!(serde_json::from_str::<Hist>("[[999,1]]").is_err());
    }
}
