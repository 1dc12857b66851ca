//! Statistics for reports and comparisons: R's `summary()` (type-7 quantiles), HDR-histogram
//! percentiles, printing numbers the way R prints them, and (in the submodules) Welch's t-test, the
//! Wilcoxon rank-sum test, the Hodges–Lehmann shift and bootstrap intervals of quantile differences,
//! all agreeing with R. Pure functions, no I/O; inputs are validated when a [`Sample`] is built.

pub mod dist;
mod format;
mod ld;
#[cfg(test)]
mod proptests;
pub mod quantile_ci;
#[cfg(test)]
mod r_reference;
pub mod rank;
#[cfg(test)]
mod reference;
pub mod sample;
pub mod sequential;
pub mod spill;
mod summary;
pub mod tail;
pub mod ttest;

pub use dist::{format_pvalue, pnorm, pt, qt};
pub use format::{format_r, r_summary_lines, zapsmall};
pub use ld::mean_r;
pub use quantile_ci::{quantile_diff, BootstrapOptions, QuantileDiff};
pub use rank::{hodges_lehmann, wilcoxon_rank_sum, RankSumTest};
pub use sample::Sample;
pub use spill::{Durations, SortedFile};
pub use summary::{
    order_statistics, quantile_type7, quantile_type7_at, quantile_type7_by,
    quantile_type7_unsorted, quantiles_type7_unsorted, Summary,
};
pub use tail::{largest_indices, over_threshold, OverThreshold};
pub use ttest::{welch_t_test, welch_t_test_level, WelchTest};

use hdrhistogram::Histogram;

/// A latency histogram (HDR, 3 significant digits) over nanosecond values.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram that grows to fit any value (1 ns resolution, 3 significant digits).
    pub fn new() -> Self {
        let mut hist = Histogram::new(3).expect("3 significant digits is valid");
        hist.auto(true);
        LatencyHistogram { hist }
    }

    /// Records one value in ns (0 is recorded as 1 ns: the histogram's lowest bucket).
    pub fn record(&mut self, ns: u64) {
        // Auto-resizing histograms accept any value, so this cannot fail.
        let _ = self.hist.record(ns.max(1));
    }

    /// Adds all values of another histogram.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        let _ = self.hist.add(&other.hist);
    }

    /// Number of values recorded.
    pub fn len(&self) -> u64 {
        self.hist.len()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// The value at percentile `p` (0–100), in ns, to 3 significant digits.
    pub fn percentile(&self, p: f64) -> u64 {
        self.hist.value_at_quantile(p / 100.0)
    }

    /// Resets to empty, keeping the allocation.
    pub fn clear(&mut self) {
        self.hist.reset();
    }

    /// Every recorded bucket as (value in ns, count), ascending; for plotting distributions.
    pub fn iter_values(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.hist
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_selection_equal_quantiles_of_the_sorted_values() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x9e37_79b9_7f4a_7c15);
        let mut next = || rng.random::<u64>();
        for case in 0..300 {
            let n = 1 + (next() % 3000) as usize;
            let spread = [3, 1000, u64::MAX / 4][case % 3];
            let v: Vec<u64> = (0..n).map(|_| next() % spread).collect();
            let mut sorted = v.clone();
            sorted.sort_unstable();
            for p in [0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0] {
                let mut w = v.clone();
                let got = quantile_type7_unsorted(&mut w, p);
                assert_eq!(
                    got.to_bits(),
                    quantile_type7(&sorted, p).to_bits(),
                    "n {n} p {p}"
                );
            }
        }
        assert!(quantile_type7_unsorted(&mut [], 0.5).is_nan());
    }

    /// Above the histogram threshold: several probabilities at once, on spreads from all-tied to
    /// the full range, with heavy tails and clusters, equal the sorted values' quantiles.
    #[test]
    fn quantiles_through_the_histogram_equal_quantiles_of_the_sorted_values() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x0005_e1ec_7104);
        let ps = [
            0.0, 1e-6, 0.01, 0.25, 0.5, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 1.0,
        ];
        for case in 0..24 {
            let n = [65_536, 65_537, 100_003, 400_000][case % 4];
            let v: Vec<u64> = (0..n)
                .map(|_| match case % 6 {
                    0 => 7,
                    1 => rng.random::<u64>(),
                    2 => rng.random_range(0..5),
                    // A log-normal-like body with a long tail.
                    3 => {
                        let u: f64 = rng.random();
                        (500_000.0 * (u * 3.0).exp() / (1.0 - u).max(1e-9).powf(0.7)) as u64
                    }
                    // Two tight clusters far apart: most buckets empty.
                    4 => [1_000, u64::MAX - 1_000][rng.random_range(0..2)] + rng.random_range(0..3),
                    _ => rng.random_range(0..1u64 << 20) << 30,
                })
                .collect();
            let mut sorted = v.clone();
            sorted.sort_unstable();
            let mut w = v.clone();
            let got = quantiles_type7_unsorted(&mut w, &ps);
            for (p, g) in ps.iter().zip(&got) {
                assert_eq!(
                    g.to_bits(),
                    quantile_type7(&sorted, *p).to_bits(),
                    "case {case} n {n} p {p}"
                );
            }
            let ranks = [0, 1, n / 3, n / 2, n - 2, n - 1];
            let mut w = v.clone();
            let stats = order_statistics(&mut w, &ranks);
            assert_eq!(stats, ranks.map(|r| sorted[r]), "case {case}");
        }
        assert!(quantiles_type7_unsorted(&mut [], &[0.5, 0.9])
            .iter()
            .all(|q| q.is_nan()));
    }

    // Reference values from R 4.2.2 (reference/r/summary.R prints them):
    //   x <- c(3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5); summary(x); quantile(x, c(.9, .99)); sd(x)
    #[test]
    fn summary_matches_r() {
        let mut x = vec![3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5];
        let s = Summary::from_values(&mut x, 1.0).unwrap();
        assert_eq!(s.six(), [1.0, 2.5, 4.0, 4.0, 5.0, 9.0]);
        assert!((quantile_type7(&x, 0.9) - 6.0).abs() < 1e-12);
        assert!((quantile_type7(&x, 0.99) - 8.7).abs() < 1e-12);
        assert!((s.sd - 2.366431913).abs() < 1e-9);
        let (head, line) = r_summary_lines(s.six());
        assert_eq!(head, "   Min. 1st Qu.  Median    Mean 3rd Qu.    Max.");
        assert_eq!(line, "    1.0     2.5     4.0     4.0     5.0     9.0");
    }

    #[test]
    fn format_matches_r() {
        // format(c(1.0, 452.0, 500.0, 542.4, 567.0, 3999.0), digits = 4): seed 001's summary line
        assert_eq!(
            format_r(&[1.0, 452.0, 500.0, 542.4, 567.0, 3999.0], 4),
            ["   1.0", " 452.0", " 500.0", " 542.4", " 567.0", "3999.0"]
        );
        // format(c(1, 12345.6), digits = 4); format(c(0.012345, 1.5), digits = 4)
        assert_eq!(format_r(&[1.0, 12345.6], 4), ["    1", "12346"]);
        assert_eq!(format_r(&[0.012345, 1.5], 4), ["0.01235", "1.50000"]);
    }

    #[test]
    fn summary_lines_switch_notation_like_r() {
        // summary(c(1, 1e7)): 1.0e+00 2.5e+06 5.0e+06 5.0e+06 7.5e+06 1.0e+07
        let mut v = vec![1, 10_000_000];
        let s = Summary::from_values(&mut v, 1.0).unwrap();
        assert_eq!(
            r_summary_lines(s.six()).1,
            "1.0e+00 2.5e+06 5.0e+06 5.0e+06 7.5e+06 1.0e+07"
        );
        // summary(c(1.5, 2, 1e6)): 1.5 1.8 2.0 333334.5 500001.0 1000000.0
        let six = [1.5, 1.75, 2.0, 333334.5, 500001.0, 1e6];
        assert_eq!(
            r_summary_lines(six).1,
            "      1.5       1.8       2.0  333334.5  500001.0 1000000.0"
        );
    }

    #[test]
    fn empty_summary_is_an_error() {
        assert!(Summary::from_values(&mut [], 1.0).is_err());
    }

    #[test]
    fn histogram_percentiles_are_close() {
        let mut h = LatencyHistogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        let p99 = h.percentile(99.0) as f64;
        assert!((p99 - 99_000_000.0).abs() / 99_000_000.0 < 0.001, "{p99}");
        assert_eq!(h.len(), 100_000);
    }
}
