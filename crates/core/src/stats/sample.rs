//! A validated sample of real values (finite, at least two), sorted once, with its exact mean and
//! variance: the input every comparison method in this module takes.

use super::spill::SortedFile;
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

/// Where a sample's sorted values are: in memory, or in a sorted file of durations (ns) divided
/// by `scale` as they are read ([`super::spill`]).
#[derive(Debug)]
enum Store {
    Mem(Vec<f64>),
    File { file: SortedFile, scale: f64 },
}

/// A sample for statistical tests: every value finite, at least two values, kept sorted ascending.
///
/// Construction costs one sort (O(n log n)) and two passes for mean and variance; the tests then
/// read the sorted values without copying them. A sample too large for memory is a sorted file
/// ([`Sample::from_durations`]): the same statistics, read sequentially or at chosen ranks.
#[derive(Debug)]
pub struct Sample {
    store: Store,
    mean: f64,
    var: f64,
}

/// The values of a [`Sample`], ascending.
pub enum Ascending<'a> {
    /// From memory.
    Mem(std::iter::Copied<std::slice::Iter<'a, f64>>),
    /// From a sorted file, each duration divided by the scale.
    File(super::spill::Ascending<'a>, f64),
}

impl Iterator for Ascending<'_> {
    type Item = f64;

    #[inline]
    fn next(&mut self) -> Option<f64> {
        match self {
            Ascending::Mem(it) => it.next(),
            Ascending::File(it, scale) => it.next().map(|v| v as f64 / *scale),
        }
    }
}

fn too_few(n: u64) -> Error {
    Error::InvalidInput(format!(
        "{n} value{}: at least 2 are needed",
        if n == 1 { "" } else { "s" }
    ))
}

impl Sample {
    /// Validates and sorts `values`. Errors name what is wrong: fewer than two values, or the index
    /// of the first value that is NaN or infinite.
    pub fn new(mut values: Vec<f64>) -> Result<Self> {
        if values.len() < 2 {
            return Err(too_few(values.len() as u64));
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
        Self::from_u64_vec(values.to_vec(), scale)
    }

    /// [`Sample::from_u64`] taking the vector: sorted and converted in place, no copy.
    pub fn from_u64_vec(values: Vec<u64>, scale: f64) -> Result<Self> {
        if values.len() < 2 {
            return Err(too_few(values.len() as u64));
        }
        check_scale(scale)?;
        // Converted once, in place (same size: the vector is reused). R's mean of the values as
        // given (R sums in vector order), before sorting. They are finite and not negative (the
        // scale is positive), so their bit patterns sort as the numbers do: the integer sort.
        let x: Vec<f64> = values.into_iter().map(|v| v as f64 / scale).collect();
        let mean = super::ld::mean_r_slice(&x);
        let mut bits: Vec<u64> = x.into_iter().map(f64::to_bits).collect();
        bits.sort_unstable();
        let sorted = bits.into_iter().map(f64::from_bits).collect();
        Ok(Self::from_sorted_finite(sorted, mean))
    }

    /// A sample of the durations (ns) gathered in `d`, divided by `scale`: in memory when none
    /// were spilled to disk, else read from one sorted file. A file-backed sample's mean is R's
    /// long-double mean taken in ascending order (R sums in vector order; the two differ only
    /// where a long double's 64 bits round differently, below anything printed).
    pub fn from_durations(d: super::spill::Durations, scale: f64) -> Result<Self> {
        if d.len() < 2 {
            return Err(too_few(d.len()));
        }
        check_scale(scale)?;
        let file = match d.into_sorted_file().map_err(Error::spill)? {
            Err(values) => return Self::from_u64_vec(values, scale),
            Ok(file) => file,
        };
        let mean = super::ld::mean_r(|| file.ascending().map(|v| v as f64 / scale));
        let var = variance(file.ascending().map(|v| v as f64 / scale), mean);
        file.check().map_err(Error::spill)?;
        Ok(Sample {
            store: Store::File { file, scale },
            mean,
            var,
        })
    }

    /// From sorted finite values and R's mean of them.
    fn from_sorted_finite(sorted: Vec<f64>, mean: f64) -> Self {
        let var = variance(sorted.iter().copied(), mean);
        Sample {
            store: Store::Mem(sorted),
            mean,
            var,
        }
    }

    /// Number of values (at least 2).
    pub fn len(&self) -> usize {
        match &self.store {
            Store::Mem(v) => v.len(),
            Store::File { file, .. } => file.len() as usize,
        }
    }

    /// Always false: a sample has at least two values.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The values, sorted ascending, when they are in memory.
    pub fn as_slice(&self) -> Option<&[f64]> {
        match &self.store {
            Store::Mem(v) => Some(v),
            Store::File { .. } => None,
        }
    }

    /// The sorted file and its scale, when the values are on disk.
    pub fn as_file(&self) -> Option<(&SortedFile, f64)> {
        match &self.store {
            Store::Mem(_) => None,
            Store::File { file, scale } => Some((file, *scale)),
        }
    }

    /// The value of rank `i` (0-based) in ascending order.
    #[inline]
    pub fn at(&self, i: usize) -> f64 {
        match &self.store {
            Store::Mem(v) => v[i],
            Store::File { file, scale } => file.get(i as u64) as f64 / scale,
        }
    }

    /// Every value, ascending.
    pub fn ascending(&self) -> Ascending<'_> {
        match &self.store {
            Store::Mem(v) => Ascending::Mem(v.iter().copied()),
            Store::File { file, scale } => Ascending::File(file.ascending(), *scale),
        }
    }

    /// The first error reading a file-backed sample, if any read failed (a read that fails
    /// gives 0, so a statistic is only good when this is `Ok`).
    pub fn check(&self) -> Result<()> {
        match &self.store {
            Store::Mem(_) => Ok(()),
            Store::File { file, .. } => file.check().map_err(Error::spill),
        }
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
        super::summary::quantile_type7_at(self.len(), p, |i| self.at(i))
    }

    /// R's `summary()`: Min, 1st Qu., Median, Mean, 3rd Qu., Max (and n and sd).
    pub fn summary(&self) -> super::summary::Summary {
        super::summary::Summary {
            n: self.len() as u64,
            min: self.at(0),
            q1: self.quantile(0.25),
            median: self.quantile(0.5),
            mean: self.mean,
            q3: self.quantile(0.75),
            max: self.at(self.len() - 1),
            sd: self.sd(),
        }
    }

    /// Number of values strictly greater than `threshold`. O(log n).
    pub fn count_above(&self, threshold: f64) -> usize {
        // The first rank whose value is above the threshold, by bisection.
        let (mut lo, mut hi) = (0usize, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.at(mid) <= threshold {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        self.len() - lo
    }
}

fn check_scale(scale: f64) -> Result<()> {
    if scale.is_finite() && scale > 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidInput(format!(
            "scale {scale} is not positive"
        )))
    }
}

/// R's `var()`: the second pass, the sum of squared deviations from `mean` over n - 1.
fn variance(values: impl Iterator<Item = f64>, mean: f64) -> f64 {
    let mut ss = CompensatedSum::default();
    let mut n = 0u64;
    for v in values {
        let d = v - mean;
        ss.add(d * d);
        n += 1;
    }
    ss.value() / (n as f64 - 1.0)
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
