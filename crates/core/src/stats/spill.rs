//! Durations gathered within a memory budget: kept in memory while they fit, else sorted in
//! chunks into temporary files and merged into one sorted file that the statistics read
//! sequentially (rank sums, the Hodges–Lehmann counts, sums) or at chosen ranks (quantiles,
//! bootstrap order statistics).
//!
//! An external merge sort (Knuth, TAOCP vol. 3, 5.4.1): chunks sorted in memory and written as
//! runs, then one k-way merge through a binary heap. The files are anonymous temporary files in
//! `$TMPDIR` (`tempfile::tempfile`): unlinked from the start, gone when dbscope exits, however it
//! exits. The runs of all the names of one run directory go into one file ([`SpillArea`]).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};

/// Bytes read from a sorted file at a time by each sequential reader.
const READ_BUF: usize = 256 << 10;

/// One temporary file that the sorted runs of many names are appended to (a run of a thousand
/// event names spills into one file, not a thousand open ones).
#[derive(Debug)]
pub struct SpillArea {
    file: Arc<File>,
    end: Mutex<u64>,
}

impl SpillArea {
    /// A new, empty temporary file in `$TMPDIR`.
    pub fn new() -> io::Result<Self> {
        Ok(SpillArea {
            file: Arc::new(tempfile::tempfile()?),
            end: Mutex::new(0),
        })
    }

    /// Appends `values` and returns them as a sorted file's segment (they must be sorted).
    fn append(&self, values: &[u64]) -> io::Result<SortedFile> {
        let bytes = values.len() as u64 * 8;
        let base = {
            let mut end = self.end.lock().unwrap_or_else(|p| p.into_inner());
            let base = *end;
            *end += bytes;
            base
        };
        let mut chunk = Vec::with_capacity(1 << 20);
        let mut at = base;
        for part in values.chunks(1 << 17) {
            chunk.clear();
            for v in part {
                chunk.extend_from_slice(&v.to_le_bytes());
            }
            self.file.write_all_at(&chunk, at)?;
            at += chunk.len() as u64;
        }
        Ok(SortedFile {
            file: Arc::clone(&self.file),
            base,
            len: values.len() as u64,
            error: Mutex::new(None),
        })
    }
}

/// One event name's durations (ns) as they are read from a run.
#[derive(Debug, Default)]
pub struct Durations {
    buf: Vec<u64>,
    runs: Vec<SortedFile>,
    len: u64,
}

impl Durations {
    /// No durations yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one duration.
    #[inline]
    pub fn push(&mut self, ns: u64) {
        self.buf.push(ns);
        self.len += 1;
    }

    /// All durations pushed, in memory or on disk.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Durations held in memory.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// True when some durations are on disk.
    pub fn is_spilled(&self) -> bool {
        !self.runs.is_empty()
    }

    /// The durations in memory, in the order pushed, when none are on disk.
    pub fn in_memory(&self) -> Option<&[u64]> {
        (!self.is_spilled()).then_some(&self.buf[..])
    }

    /// Sorts the durations held in memory, writes them to a temporary file of their own as one
    /// sorted run and frees their memory.
    pub fn spill(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.spill_into(&SpillArea::new()?)
    }

    /// [`Durations::spill`] into `area`, shared with other names.
    pub fn spill_into(&mut self, area: &SpillArea) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.buf.sort_unstable();
        self.runs.push(area.append(&self.buf)?);
        self.buf = Vec::new();
        Ok(())
    }

    /// The durations sorted ascending: in memory (`Ok(Err(vec))`, in the order pushed, not yet
    /// sorted) when nothing was spilled, else one sorted file (the run itself when there is
    /// one, else the merge of the runs).
    pub fn into_sorted_file(mut self) -> io::Result<Result<SortedFile, Vec<u64>>> {
        if !self.is_spilled() {
            return Ok(Err(self.buf));
        }
        self.spill()?;
        let mut runs = std::mem::take(&mut self.runs);
        if runs.len() == 1 {
            return Ok(Ok(runs.pop().expect("one run")));
        }
        merge(runs).map(Ok)
    }
}

/// Merges sorted runs into one sorted file of its own.
fn merge(runs: Vec<SortedFile>) -> io::Result<SortedFile> {
    let len = runs.iter().map(|r| r.len).sum();
    let mut readers: Vec<Ascending<'_>> = runs.iter().map(SortedFile::ascending).collect();
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::with_capacity(readers.len());
    for (i, r) in readers.iter_mut().enumerate() {
        if let Some(v) = r.next() {
            heap.push(Reverse((v, i)));
        }
    }
    let out = tempfile::tempfile()?;
    let mut w = BufWriter::with_capacity(1 << 20, out);
    while let Some(Reverse((v, i))) = heap.pop() {
        w.write_all(&v.to_le_bytes())?;
        if let Some(next) = readers[i].next() {
            heap.push(Reverse((next, i)));
        }
    }
    drop(readers);
    for r in &runs {
        r.check()?;
    }
    Ok(SortedFile {
        file: Arc::new(w.into_inner().map_err(|e| e.into_error())?),
        base: 0,
        len,
        error: Mutex::new(None),
    })
}

/// Durations sorted ascending in a temporary file, 8 little-endian bytes each.
///
/// Reads never fail silently: a read error is kept, the value read as 0, and
/// [`SortedFile::check`] returns the error; the statistics check it before they answer.
#[derive(Debug)]
pub struct SortedFile {
    file: Arc<File>,
    /// Where its first value is in the file.
    base: u64,
    len: u64,
    error: Mutex<Option<io::Error>>,
}

impl SortedFile {
    /// Number of values.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when the file holds no value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn failed(&self, e: io::Error) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(e);
        }
    }

    /// The value of rank `i` (0-based).
    pub fn get(&self, i: u64) -> u64 {
        let mut b = [0u8; 8];
        match self.file.read_exact_at(&mut b, self.base + i * 8) {
            Ok(()) => u64::from_le_bytes(b),
            Err(e) => {
                self.failed(e);
                0
            }
        }
    }

    /// Every value, ascending.
    pub fn ascending(&self) -> Ascending<'_> {
        Ascending {
            file: self,
            buf: Vec::new(),
            pos: 0,
            next_offset: 0,
        }
    }

    /// The first read error, if any read failed.
    pub fn check(&self) -> io::Result<()> {
        match self.error.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// A sequential reader of a [`SortedFile`].
pub struct Ascending<'a> {
    file: &'a SortedFile,
    buf: Vec<u64>,
    pos: usize,
    next_offset: u64,
}

impl Ascending<'_> {
    #[cold]
    fn refill(&mut self) -> bool {
        let total = self.file.len * 8;
        if self.next_offset >= total {
            return false;
        }
        let want = (READ_BUF as u64).min(total - self.next_offset) as usize;
        let mut bytes = vec![0u8; want];
        let at = self.file.base + self.next_offset;
        if let Err(e) = self.file.file.read_exact_at(&mut bytes, at) {
            self.file.failed(e);
            self.next_offset = total;
            return false;
        }
        self.next_offset += want as u64;
        self.buf.clear();
        self.buf.extend(
            bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))),
        );
        self.pos = 0;
        true
    }
}

impl Iterator for Ascending<'_> {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.pos == self.buf.len() && !self.refill() {
            return None;
        }
        let v = self.buf[self.pos];
        self.pos += 1;
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spilled_chunks_merge_into_every_value_in_order() {
        let mut d = Durations::new();
        let mut expect = Vec::new();
        let mut x = 12345u64;
        for i in 0..100_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = (x >> 40) % 5000; // many ties
            d.push(v);
            expect.push(v);
            if i % 30_000 == 29_999 {
                d.spill().unwrap();
            }
        }
        assert!(d.is_spilled());
        assert_eq!(d.len(), 100_000);
        expect.sort_unstable();
        let f = d.into_sorted_file().unwrap().unwrap();
        assert_eq!(f.len(), 100_000);
        assert_eq!(f.ascending().collect::<Vec<_>>(), expect);
        for i in [0u64, 1, 777, 65_535, 99_999] {
            assert_eq!(f.get(i), expect[i as usize]);
        }
        f.check().unwrap();
        // Past the end: an error is kept and returned, not a panic.
        assert_eq!(f.get(100_000), 0);
        assert!(f.check().is_err());
    }

    #[test]
    fn names_spilled_into_one_area_read_back_apart() {
        let area = SpillArea::new().unwrap();
        let (mut a, mut b) = (Durations::new(), Durations::new());
        for i in 0..10_000u64 {
            a.push(10_000 - i);
            b.push(i * 3 % 7001);
            if i % 999 == 998 {
                a.spill_into(&area).unwrap();
                b.spill_into(&area).unwrap();
            }
        }
        let mut want_b: Vec<u64> = (0..10_000u64).map(|i| i * 3 % 7001).collect();
        want_b.sort_unstable();
        let fa = a.into_sorted_file().unwrap().unwrap();
        let fb = b.into_sorted_file().unwrap().unwrap();
        assert_eq!(
            fa.ascending().collect::<Vec<_>>(),
            (1..=10_000).collect::<Vec<_>>()
        );
        assert_eq!(fb.ascending().collect::<Vec<_>>(), want_b);
        assert_eq!((fa.get(0), fb.get(9_999)), (1, want_b[9_999]));
        fa.check().unwrap();
        fb.check().unwrap();
    }

    #[test]
    fn nothing_spilled_stays_in_memory_in_push_order() {
        let mut d = Durations::new();
        for v in [3, 1, 2] {
            d.push(v);
        }
        assert_eq!(d.in_memory(), Some(&[3, 1, 2][..]));
        assert_eq!(d.into_sorted_file().unwrap().unwrap_err(), vec![3, 1, 2]);
    }
}

/// Every statistic of a sample sorted on disk against the same sample in memory.
#[cfg(test)]
mod statistics_on_disk {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::Durations;
    use crate::stats::{
        hodges_lehmann, quantile_diff, welch_t_test, wilcoxon_rank_sum, BootstrapOptions, Sample,
    };

    /// The durations as pushed, spilled every `chunk` values.
    fn on_disk(v: &[u64], chunk: usize) -> Sample {
        let mut d = Durations::new();
        for (i, &x) in v.iter().enumerate() {
            d.push(x);
            if (i + 1) % chunk == 0 {
                d.spill().unwrap();
            }
        }
        d.spill().unwrap();
        let s = Sample::from_durations(d, 1000.0).unwrap();
        assert!(s.as_file().is_some());
        s
    }

    /// The median of all x_i - y_j in integers, divided by 1000, the slow way.
    fn hl_naive(x: &[u64], y: &[u64]) -> f64 {
        let mut d: Vec<i64> = x
            .iter()
            .flat_map(|&a| y.iter().map(move |&b| a as i64 - b as i64))
            .collect();
        d.sort_unstable();
        let n = d.len();
        let m = if n % 2 == 1 {
            d[n / 2] as f64
        } else {
            (d[n / 2 - 1] + d[n / 2]) as f64 / 2.0
        };
        m / 1000.0
    }

    #[test]
    fn every_statistic_on_disk_equals_the_one_in_memory() {
        let mut rng = ChaCha8Rng::seed_from_u64(34);
        for round in 0..40 {
            let (n, m) = (rng.random_range(2..600), rng.random_range(2..600));
            // Small ranges: many ties; heavy tails: a few values far out; a shift between sides.
            let range = [7u64, 1_000, 5_000_000][round % 3];
            let shift = rng.random_range(0..range / 2 + 1);
            let mut draw = |k: usize, add: u64| -> Vec<u64> {
                (0..k)
                    .map(|_| {
                        let tail = if rng.random_range(0..50) == 0 { 40 } else { 1 };
                        20_000 + add + rng.random_range(0..range) * tail
                    })
                    .collect()
            };
            let (va, vb) = (draw(n, 0), draw(m, shift));
            let chunk = rng.random_range(1..200);
            let (ma, mb) = (
                Sample::from_u64(&va, 1000.0).unwrap(),
                Sample::from_u64(&vb, 1000.0).unwrap(),
            );
            let (fa, fb) = (on_disk(&va, chunk), on_disk(&vb, chunk));
            let what = format!("round {round}: n {n}, m {m}, range {range}, chunk {chunk}");
            assert_eq!(ma.len(), fa.len(), "{what}");
            for (x, y) in ma.ascending().zip(fa.ascending()) {
                assert_eq!(x, y, "{what}");
            }
            let (sm, sf) = (ma.summary(), fa.summary());
            assert_eq!(
                [sm.min, sm.q1, sm.median, sm.q3, sm.max],
                [sf.min, sf.q1, sf.median, sf.q3, sf.max],
                "{what}"
            );
            // The mean is summed in ascending order on disk: equal to the last bit or next to it.
            assert!(
                (sm.mean - sf.mean).abs() <= 4.0 * f64::EPSILON * sm.mean.abs(),
                "{what}"
            );
            assert!((sm.sd - sf.sd).abs() <= 1e-12 * sm.sd.max(1e-300), "{what}");
            assert_eq!(
                wilcoxon_rank_sum(&mb, &ma),
                wilcoxon_rank_sum(&fb, &fa),
                "{what}"
            );
            match (welch_t_test(&mb, &ma), welch_t_test(&fb, &fa)) {
                (Ok(x), Ok(y)) => {
                    assert!((x.t - y.t).abs() <= 1e-9 * x.t.abs().max(1.0), "{what}");
                    assert!((x.p_value - y.p_value).abs() <= 1e-9, "{what}");
                }
                (Err(_), Err(_)) => {}
                (x, y) => panic!("{what}: {x:?} vs {y:?}"),
            }
            let opts = BootstrapOptions::default();
            for p in [0.5, 0.9, 0.99, 0.999] {
                assert_eq!(
                    quantile_diff(&ma, &mb, p, &opts).unwrap(),
                    quantile_diff(&fa, &fb, p, &opts).unwrap(),
                    "{what} p {p}"
                );
            }
            for t in [0.0, 20.5, 25.0, 1e9] {
                assert_eq!(ma.count_above(t), fa.count_above(t), "{what} over {t}");
            }
            let exact = hl_naive(&vb, &va);
            assert_eq!(hodges_lehmann(&fb, &fa).unwrap(), exact, "{what}");
            let mem = hodges_lehmann(&mb, &ma).unwrap();
            assert!(
                (mem - exact).abs() <= 1e-9 * exact.abs().max(1.0),
                "{what}: {mem} vs {exact}"
            );
        }
    }

    /// The shift's search from any first guess, however far off and however narrow its
    /// bracket, ends at the same exact median (the bench's data rarely leaves the first bracket).
    #[test]
    fn the_shift_from_any_guess_is_the_exact_median() {
        let mut rng = ChaCha8Rng::seed_from_u64(35);
        for round in 0..30 {
            let (n, m) = (rng.random_range(2..300), rng.random_range(2..300));
            let range = [3u64, 500, 1_000_000][round % 3];
            let va: Vec<u64> = (0..n).map(|_| rng.random_range(0..range)).collect();
            let vb: Vec<u64> = (0..m)
                .map(|_| rng.random_range(0..range) + range / 3)
                .collect();
            let (fa, fb) = (on_disk(&va, 50), on_disk(&vb, 50));
            let exact = hl_naive(&vb, &va) * 1000.0;
            let (x, _) = fb.as_file().unwrap();
            let (y, _) = fa.as_file().unwrap();
            let r = range as i128;
            for guess in [-10 * r, -r, 0, r / 2, r, 10 * r, rng.random_range(-r..r)] {
                for width in [1, 2, 7, r] {
                    let got = crate::stats::rank::hodges_lehmann_files_from(x, y, guess, width);
                    assert_eq!(got, exact, "round {round}: guess {guess}, width {width}");
                }
            }
        }
    }

    #[test]
    fn a_mixed_pair_is_refused_not_miscomputed() {
        let m = Sample::from_u64(&[1, 2, 3], 1000.0).unwrap();
        let f = on_disk(&[1, 2, 3], 2);
        assert!(hodges_lehmann(&m, &f).is_err());
    }
}
