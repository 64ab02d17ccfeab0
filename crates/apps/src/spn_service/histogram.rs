//! A latency histogram: log-linear buckets (8 per power of two, so at most 12.5% wide),
//! exact minimum, maximum and mean, percentiles to bucket precision.

use std::time::Duration;

/// Sub-buckets per power of two.
const SUB: u32 = 8;
/// Buckets: powers of two up to 2^40 ns (18 minutes), `SUB` each.
const BUCKETS: usize = 41 * SUB as usize;

/// Latencies recorded in nanoseconds.
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    counts: Vec<u64>,
    n: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram { counts: vec![0; BUCKETS], n: 0, sum_ns: 0, min_ns: u64::MAX, max_ns: 0 }
    }
}

/// The bucket of `ns`.
fn bucket(ns: u64) -> usize {
    if ns < u64::from(SUB) {
        return ns as usize;
    }
    let exp = 63 - ns.leading_zeros(); // ns >= 8, so exp >= 3
    let sub = (ns >> (exp - 3)) & u64::from(SUB - 1);
    ((exp - 2) * SUB + sub as u32).min(BUCKETS as u32 - 1) as usize
}

/// The upper edge (exclusive) of bucket `b`, in ns.
fn bucket_top(b: usize) -> u64 {
    let b = b as u64;
    if b < u64::from(SUB) {
        return b + 1;
    }
    let exp = b / u64::from(SUB) + 2;
    let sub = b % u64::from(SUB);
    (u64::from(SUB) + sub + 1) << (exp - 3)
}

impl LatencyHistogram {
    /// Record one latency.
    pub fn record(&mut self, d: Duration) {
        let ns = d.as_nanos().min(u128::from(u64::MAX)) as u64;
        self.counts[bucket(ns)] += 1;
        self.n += 1;
        self.sum_ns += u128::from(ns);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// Add another histogram's records.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        self.counts.iter_mut().zip(&other.counts).for_each(|(a, b)| *a += b);
        self.n += other.n;
        self.sum_ns += other.sum_ns;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// Number of records.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Mean in ns (0 if empty).
    pub fn mean_ns(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.n as f64
        }
    }

    /// Smallest and largest record in ns (0, 0 if empty).
    pub fn min_max_ns(&self) -> (u64, u64) {
        if self.n == 0 {
            (0, 0)
        } else {
            (self.min_ns, self.max_ns)
        }
    }

    /// The value at percentile `p` (0..=100), in ns: the top of the bucket holding that rank,
    /// clamped to the exact maximum (0 if empty).
    pub fn percentile_ns(&self, p: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((p.clamp(0.0, 100.0) / 100.0 * self.n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_top(b).saturating_sub(1).clamp(self.min_ns, self.max_ns);
            }
        }
        self.max_ns
    }

    /// Non-empty buckets as (upper edge in ns, count), merged into at most `rows` rows of
    /// consecutive buckets.
    pub fn rows(&self, rows: usize) -> Vec<(u64, u64)> {
        let used: Vec<(u64, u64)> =
            self.counts.iter().enumerate().filter(|(_, c)| **c > 0).map(|(b, c)| (bucket_top(b), *c)).collect();
        if used.len() <= rows.max(1) {
            return used;
        }
        let per = used.len().div_ceil(rows.max(1));
        used.chunks(per).map(|ch| (ch[ch.len() - 1].0, ch.iter().map(|(_, c)| c).sum())).collect()
    }

    /// The histogram as text lines "≤ X µs  count  bar".
    pub fn render(&self, rows: usize) -> String {
        let rows = self.rows(rows);
        let most = rows.iter().map(|r| r.1).max().unwrap_or(1).max(1);
        rows.iter()
            .map(|(top, c)| {
                format!(
                    "  < {:>10.2} µs  {:>9}  {}\n",
                    *top as f64 / 1e3,
                    c,
                    "#".repeat((40 * c).div_ceil(most) as usize)
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_their_values() {
        for ns in [0u64, 1, 7, 8, 9, 15, 16, 100, 1_000, 12_345, 1 << 30] {
            let b = bucket(ns);
            assert!(ns < bucket_top(b), "{ns} in bucket {b} with top {}", bucket_top(b));
            assert!(b == 0 || ns >= bucket_top(b - 1), "{ns}");
        }
    }

    #[test]
    fn percentiles() {
        let mut h = LatencyHistogram::default();
        for us in 1..=100 {
            h.record(Duration::from_micros(us));
        }
        let p50 = h.percentile_ns(50.0) as f64;
        assert!((p50 - 50_000.0).abs() / 50_000.0 < 0.13, "{p50}");
        assert_eq!(h.percentile_ns(100.0), 100_000);
        assert_eq!(h.min_max_ns(), (1_000, 100_000));
        assert!((h.mean_ns() - 50_500.0).abs() < 1.0);
        assert!(h.rows(5).len() <= 5);
        assert_eq!(h.rows(5).iter().map(|r| r.1).sum::<u64>(), 100);
    }
}
