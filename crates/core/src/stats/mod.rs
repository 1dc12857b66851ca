//! Statistics for reports and comparisons: R's `summary()` (type-7 quantiles), HDR-histogram
//! percentiles, printing numbers the way R prints them, and (in the submodules) Welch's t-test, the
//! Wilcoxon rank-sum test, the Hodges–Lehmann shift and bootstrap intervals of quantile differences,
//! all agreeing with R. Pure functions, no I/O; inputs are validated when a [`Sample`] is built.

pub mod dist;
#[cfg(test)]
mod proptests;
pub mod quantile_ci;
pub mod rank;
#[cfg(test)]
mod reference;
pub mod sample;
pub mod tail;
pub mod ttest;

pub use dist::{format_pvalue, pnorm, pt, qt};
pub use quantile_ci::{quantile_diff, BootstrapOptions, QuantileDiff};
pub use rank::{hodges_lehmann, wilcoxon_rank_sum, RankSumTest};
pub use sample::Sample;
pub use tail::{largest_indices, over_threshold, OverThreshold};
pub use ttest::{welch_t_test, welch_t_test_level, WelchTest};

use hdrhistogram::Histogram;

use crate::error::{Error, Result};

/// Quantile of sorted data by R's default definition (type 7, Hyndman & Fan 1996):
/// `h = (n - 1) p`, result `x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h])` (0-based).
///
/// `sorted` must be sorted ascending and non-empty; `p` in `[0, 1]`. O(1).
pub fn quantile_type7(sorted: &[u64], p: f64) -> f64 {
    debug_assert!(!sorted.is_empty());
    let n = sorted.len();
    let h = (n - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    let frac = h - lo as f64;
    let a = sorted[lo] as f64;
    let b = sorted[hi] as f64;
    a + frac * (b - a)
}

/// R's `summary()` of a numeric vector: Min, 1st Qu., Median, Mean, 3rd Qu., Max.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// Number of values.
    pub n: u64,
    /// Smallest value.
    pub min: f64,
    /// First quartile (type 7).
    pub q1: f64,
    /// Median.
    pub median: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Third quartile (type 7).
    pub q3: f64,
    /// Largest value.
    pub max: f64,
    /// Sample standard deviation (n - 1 denominator); 0 for a single value.
    pub sd: f64,
}

impl Summary {
    /// Summarises values (e.g. durations in ns), sorting them in place. O(n log n).
    ///
    /// The mean is summed exactly in 128-bit integers, so it is exact to f64 rounding however many
    /// values there are; the standard deviation uses the two-pass formula.
    pub fn from_values(values: &mut [u64]) -> Result<Self> {
        if values.is_empty() {
            return Err(Error::InvalidInput("summary of no values".into()));
        }
        values.sort_unstable();
        let n = values.len();
        let sum: u128 = values.iter().map(|&v| v as u128).sum();
        let mean = sum as f64 / n as f64;
        let sd = if n > 1 {
            let ss: f64 = values
                .iter()
                .map(|&v| {
                    let d = v as f64 - mean;
                    d * d
                })
                .sum();
            (ss / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Ok(Summary {
            n: n as u64,
            min: values[0] as f64,
            q1: quantile_type7(values, 0.25),
            median: quantile_type7(values, 0.5),
            mean,
            q3: quantile_type7(values, 0.75),
            max: values[n - 1] as f64,
            sd,
        })
    }

    /// The six numbers of R's `summary()`, in order, each divided by `scale` (1000 turns ns into µs).
    pub fn six(&self, scale: f64) -> [f64; 6] {
        [
            self.min / scale,
            self.q1 / scale,
            self.median / scale,
            self.mean / scale,
            self.q3 / scale,
            self.max / scale,
        ]
    }
}

/// R's `zapsmall(x)` with its default 7 digits: rounds every value to
/// `max(0, 7 - ceiling(log10(max |x|)))` decimals, as `print(summary(x))` does before formatting.
pub fn zapsmall(values: &[f64]) -> Vec<f64> {
    let mx = values
        .iter()
        .filter(|v| v.is_finite())
        .fold(0.0f64, |m, v| m.max(v.abs()));
    if mx <= 0.0 {
        return values.to_vec();
    }
    let digits = (7.0 - mx.log10().ceil()).max(0.0) as i32;
    values.iter().map(|&v| round_half_even(v, digits)).collect()
}

/// Rounds to `digits` decimals, halves to even (as R's `round`, IEC 60559).
fn round_half_even(x: f64, digits: i32) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let p = 10f64.powi(digits);
    let y = x * p;
    let r = y.round();
    let r = if (y - y.trunc()).abs() == 0.5 && r % 2.0 != 0.0 {
        r - y.signum()
    } else {
        r
    };
    r / p
}

/// Significant digits (at most `digits`), decimal exponent, and whether rounding widened the number
/// (9.9996 to 4 digits is 10.00): R's `scientific()` in src/main/format.c.
fn scientific(x: f64, digits: usize) -> (i32, i32, bool) {
    let s = format!("{:.*e}", digits - 1, x.abs());
    let (mantissa, exp) = s.split_once('e').expect("e format");
    let kpower: i32 = exp.parse().expect("exponent");
    let nsig = mantissa
        .trim_end_matches('0')
        .trim_end_matches('.')
        .replace('.', "")
        .len() as i32;
    let roundingwidens = kpower > 0 && x.abs() < 10f64.powi(kpower);
    (nsig, kpower, roundingwidens)
}

/// Formats numbers as R's `format(x, digits = d)` does (R's `formatReal`, src/main/format.c, with
/// `scipen = 0`): every value to `d` significant digits with one common number of decimals, or in
/// scientific notation when that is narrower. All strings have the same width, right-justified.
///
/// `format_r(&[1.0, 452.0, 542.4, 3999.0], 4)` gives `"   1.0"`, `" 452.0"`, `" 542.4"`, `"3999.0"`.
pub fn format_r(values: &[f64], digits: usize) -> Vec<String> {
    let digits = digits.clamp(1, 15);
    let neg = values.iter().any(|v| *v < 0.0 && v.is_finite()) as i32;
    let (mut rgt, mut mxl, mut mnl, mut mxsl, mut mxns) =
        (i32::MIN, i32::MIN, i32::MAX, i32::MIN, i32::MIN);
    for &x in values.iter().filter(|v| v.is_finite()) {
        let (nsig, kpower, widens) = if x == 0.0 {
            (1, 0, false)
        } else {
            scientific(x, digits)
        };
        let left = kpower + 1 - widens as i32;
        let sleft = neg + if left <= 0 { 1 } else { left };
        let right = nsig - left;
        rgt = rgt.max(right);
        mxl = mxl.max(left);
        mnl = mnl.min(left);
        mxsl = mxsl.max(sleft);
        mxns = mxns.max(nsig);
    }
    let mut out: Vec<String>;
    if mxns == i32::MIN {
        out = values.iter().map(|v| na_or_inf(*v)).collect();
    } else {
        if mxl < 0 {
            mxsl = 1 + neg;
        }
        let rgt = rgt.max(0);
        let width_fixed = mxsl + rgt + (rgt != 0) as i32;
        let e = if mxl > 100 || mnl <= -99 { 2 } else { 1 };
        let d = mxns - 1;
        let width_sci = neg + (d > 0) as i32 + d + 4 + e;
        out = if width_fixed <= width_sci {
            values
                .iter()
                .map(|&v| {
                    if v.is_finite() {
                        format!("{:.*}", rgt as usize, v)
                    } else {
                        na_or_inf(v)
                    }
                })
                .collect()
        } else {
            values
                .iter()
                .map(|&v| {
                    if v.is_finite() {
                        format_sci(v, d as usize, e as usize)
                    } else {
                        na_or_inf(v)
                    }
                })
                .collect()
        };
    }
    let w = out.iter().map(|s| s.len()).max().unwrap_or(0);
    for s in &mut out {
        *s = format!("{s:>w$}");
    }
    out
}

fn na_or_inf(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v > 0.0 {
        "Inf".into()
    } else {
        "-Inf".into()
    }
}

/// C's `%.{d}e` with at least `e + 1` exponent digits (R prints `1.0e+07`).
fn format_sci(v: f64, d: usize, e: usize) -> String {
    let s = format!("{:.*e}", d, v);
    let (m, exp) = s.split_once('e').expect("e format");
    let exp: i32 = exp.parse().expect("exponent");
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{m}e{sign}{:0w$}", exp.abs(), w = e + 1)
}

/// The two lines R prints for `summary(x)`: the column names and the values, every column
/// right-justified to the widest entry (R's `print.summaryDefault`: `zapsmall`, then `format` with
/// 4 significant digits, then `print.table`).
pub fn r_summary_lines(six: [f64; 6]) -> (String, String) {
    const NAMES: [&str; 6] = ["Min.", "1st Qu.", "Median", "Mean", "3rd Qu.", "Max."];
    let values = format_r(&zapsmall(&six), 4);
    // print.table gives every column of a named vector one common width.
    let w = values
        .iter()
        .map(|v| v.len())
        .chain(NAMES.iter().map(|n| n.len()))
        .max()
        .unwrap_or(0);
    let mut head = Vec::new();
    let mut line = Vec::new();
    for (name, v) in NAMES.iter().zip(&values) {
        head.push(format!("{name:>w$}"));
        line.push(format!("{v:>w$}"));
    }
    (head.join(" "), line.join(" "))
}

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

    // Reference values from R 4.2.2 (reference/r/summary.R prints them):
    //   x <- c(3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5); summary(x); quantile(x, c(.9, .99)); sd(x)
    #[test]
    fn summary_matches_r() {
        let mut x = vec![3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5];
        let s = Summary::from_values(&mut x).unwrap();
        assert_eq!(s.six(1.0), [1.0, 2.5, 4.0, 4.0, 5.0, 9.0]);
        assert!((quantile_type7(&x, 0.9) - 6.0).abs() < 1e-12);
        assert!((quantile_type7(&x, 0.99) - 8.7).abs() < 1e-12);
        assert!((s.sd - 2.366431913).abs() < 1e-9);
        let (head, line) = r_summary_lines(s.six(1.0));
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
        let s = Summary::from_values(&mut v).unwrap();
        assert_eq!(
            r_summary_lines(s.six(1.0)).1,
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
        assert!(Summary::from_values(&mut []).is_err());
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
