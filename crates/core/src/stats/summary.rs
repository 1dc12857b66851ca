//! R's `summary()` of a numeric vector ([`Summary`]) and its type-7 quantile
//! ([`quantile_type7`]). A leaf of `stats`: `sample` builds a [`Summary`], and `stats` re-exports
//! both.

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
