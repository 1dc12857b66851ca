//! The tail of a sample: the N largest values with where they are, and counts above a threshold.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Indices of the `n` largest values, largest first; equal values in index order. O(len log n) time,
/// O(n) memory, so the top 10,000 of millions of events cost one pass.
pub fn largest_indices(values: &[u64], n: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    // A min-heap of the best n so far, keyed so that "smaller" means "less deserving of a place":
    // a smaller value, or the same value at a later index.
    let mut heap: BinaryHeap<Reverse<(u64, Reverse<usize>)>> = BinaryHeap::with_capacity(n + 1);
    for (i, &v) in values.iter().enumerate() {
        if heap.len() < n {
            heap.push(Reverse((v, Reverse(i))));
        } else if let Some(Reverse(min)) = heap.peek() {
            if (v, Reverse(i)) > *min {
                heap.pop();
                heap.push(Reverse((v, Reverse(i))));
            }
        }
    }
    let mut out: Vec<(u64, usize)> = heap
        .into_iter()
        .map(|Reverse((v, Reverse(i)))| (v, i))
        .collect();
    out.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    out.into_iter().map(|(_, i)| i).collect()
}

/// How many values exceed a threshold, and which share of all values that is.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct OverThreshold {
    /// The threshold (same unit as the values).
    pub threshold: f64,
    /// Values strictly above it.
    pub count: u64,
    /// `count / n` (0 when there are no values).
    pub rate: f64,
}

/// Counts values strictly above `threshold`.
pub fn over_threshold(values: impl IntoIterator<Item = f64>, threshold: f64) -> OverThreshold {
    let (mut n, mut count) = (0u64, 0u64);
    for v in values {
        n += 1;
        count += (v > threshold) as u64;
    }
    OverThreshold {
        threshold,
        count,
        rate: if n == 0 { 0.0 } else { count as f64 / n as f64 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_first_ties_by_index() {
        let v = [5, 9, 1, 9, 7, 3, 9];
        assert_eq!(largest_indices(&v, 4), vec![1, 3, 6, 4]);
        assert_eq!(largest_indices(&v, 100).len(), 7);
        assert!(largest_indices(&v, 0).is_empty());
        assert!(largest_indices(&[], 3).is_empty());
    }

    #[test]
    fn counts_above() {
        let o = over_threshold([1.0, 600.0, 500.0, 501.0], 500.0);
        assert_eq!(o.count, 2);
        assert_eq!(o.rate, 0.5);
        assert_eq!(over_threshold([], 1.0).rate, 0.0);
    }
}
