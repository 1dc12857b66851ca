//! A validated sample of real values (finite, at least two), sorted once, with its exact mean and
//! variance: the input every comparison method in this module takes.

use crate::error::{Error, Result};

/// Neumaier's compensated sum (Neumaier 1974, an improved Kahan summation): the error does not grow
/// with the number of terms, so means of millions of values agree with R's long-double sums.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CompensatedSum {
    sum: f64,
    c: f64,
}

impl CompensatedSum {
    /// Adds one term.
    #[inline]
    pub(crate) fn add(&mut self, x: f64) {
        let t = self.sum + x;
        if self.sum.abs() >= x.abs() {
            self.c += (self.sum - t) + x;
        } else {
            self.c += (x - t) + self.sum;
        }
        self.sum = t;
    }

    /// The sum so far.
    #[inline]
    pub(crate) fn value(&self) -> f64 {
        self.sum + self.c
    }
}

/// A sample for statistical tests: every value finite, at least two values, kept sorted ascending.
///
/// Construction costs one sort (O(n log n)) and two passes for mean and variance; the tests then
/// read the sorted values without copying them.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    sorted: Vec<f64>,
    mean: f64,
    var: f64,
}

impl Sample {
    /// Validates and sorts `values`. Errors name what is wrong: fewer than two values, or the index
    /// of the first value that is NaN or infinite.
    pub fn new(mut values: Vec<f64>) -> Result<Self> {
        if values.len() < 2 {
            return Err(Error::InvalidInput(format!(
                "{} value{}: at least 2 are needed",
                values.len(),
                if values.len() == 1 { "" } else { "s" }
            )));
        }
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(Error::InvalidInput(format!(
                "value {} (index {i}) is not a finite number",
                values[i]
            )));
        }
        let mean = super::ld::mean_r(|| values.iter().copied());
        values.sort_unstable_by(f64::total_cmp);
        Ok(Self::from_sorted_finite(values, mean))
    }

    /// A sample of durations in nanoseconds, converted to `f64` after dividing by `scale` (1000 gives
    /// microseconds). Needs at least two values.
    pub fn from_u64(values: &[u64], scale: f64) -> Result<Self> {
        if values.len() < 2 {
            return Err(Error::InvalidInput(format!(
                "{} value{}: at least 2 are needed",
                values.len(),
                if values.len() == 1 { "" } else { "s" }
            )));
        }
        if !(scale.is_finite() && scale > 0.0) {
            return Err(Error::InvalidInput(format!(
                "scale {scale} is not positive"
            )));
        }
        // R's mean of the values as given (R sums in vector order), before sorting.
        let mean = super::ld::mean_r(|| values.iter().map(|&v| v as f64 / scale));
        let mut sorted_ns = values.to_vec();
        sorted_ns.sort_unstable();
        let sorted = sorted_ns.into_iter().map(|v| v as f64 / scale).collect();
        Ok(Self::from_sorted_finite(sorted, mean))
    }

    /// From sorted finite values and R's mean of them.
    fn from_sorted_finite(sorted: Vec<f64>, mean: f64) -> Self {
        let n = sorted.len() as f64;
        // R's var(): two-pass sum of squared deviations over n - 1.
        let mut ss = CompensatedSum::default();
        for &v in &sorted {
            let d = v - mean;
            ss.add(d * d);
        }
        let var = ss.value() / (n - 1.0);
        Sample { sorted, mean, var }
    }

    /// Number of values (at least 2).
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// Always false: a sample has at least two values.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The values, sorted ascending.
    pub fn sorted(&self) -> &[f64] {
        &self.sorted
    }

    /// Arithmetic mean (as R's `mean`).
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Sample variance with the n - 1 denominator (as R's `var`).
    pub fn var(&self) -> f64 {
        self.var
    }

    /// Sample standard deviation (as R's `sd`).
    pub fn sd(&self) -> f64 {
        self.var.sqrt()
    }

    /// Quantile of type 7 (R's default; Hyndman & Fan 1996), `p` clamped to `[0, 1]`. O(1).
    pub fn quantile(&self, p: f64) -> f64 {
        super::summary::quantile_type7_by(&self.sorted, p, |v| v)
    }

    /// R's `summary()`: Min, 1st Qu., Median, Mean, 3rd Qu., Max (and n and sd).
    pub fn summary(&self) -> super::summary::Summary {
        super::summary::Summary {
            n: self.len() as u64,
            min: self.sorted[0],
            q1: self.quantile(0.25),
            median: self.quantile(0.5),
            mean: self.mean,
            q3: self.quantile(0.75),
            max: self.sorted[self.len() - 1],
            sd: self.sd(),
        }
    }

    /// Number of values strictly greater than `threshold`. O(log n).
    pub fn count_above(&self, threshold: f64) -> usize {
        self.len() - self.sorted.partition_point(|&v| v <= threshold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_input() {
        assert!(Sample::new(vec![])
            .unwrap_err()
            .to_string()
            .contains("0 values"));
        assert!(Sample::new(vec![1.0])
            .unwrap_err()
            .to_string()
            .contains("1 value:"));
        let e = Sample::new(vec![1.0, f64::NAN, 2.0])
            .unwrap_err()
            .to_string();
        assert!(e.contains("index 1"), "{e}");
        assert!(Sample::new(vec![1.0, f64::INFINITY]).is_err());
        assert!(Sample::from_u64(&[5], 1.0).is_err());
    }

    #[test]
    fn mean_is_exact_for_many_values() {
        // 1e6 copies of 0.1 plus 1e6 of 1e6: naive summation drifts, the compensated one does not.
        let mut v = vec![0.1; 1_000_000];
        v.extend(std::iter::repeat_n(1e6, 1_000_000));
        let s = Sample::new(v).unwrap();
        assert_eq!(s.mean(), (1e6 + 0.1) / 2.0);
        assert_eq!(s.quantile(0.5), (0.1 + 1e6) / 2.0);
        assert_eq!(s.count_above(0.1), 1_000_000);
        assert_eq!(s.count_above(1e6), 0);
    }
}
