//! Rank methods for two samples: the Wilcoxon rank-sum (Mann–Whitney) test as R's
//! `wilcox.test(x, y, exact = FALSE, correct = TRUE)` computes it, and the Hodges–Lehmann shift
//! estimate (the median of all pairwise differences) found without forming the n × m differences.
//!
//! Sources: R 4.2.2 `stats:::wilcox.test.default` (normal approximation with the tie correction of
//! the variance and a continuity correction of 0.5); Hodges & Lehmann (1963), "Estimates of location
//! based on rank tests", Ann. Math. Statist. 34; the selection in X − Y follows Monahan (1984),
//! "Algorithm 616: fast computation of the Hodges–Lehmann location estimator", ACM TOMS 10(3),
//! with randomized pivots (Johnson & Mizoguchi 1978 give the deterministic O(n log n) bound).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::dist::{pnorm, pnorm_upper};
use super::sample::{CompensatedSum, Sample};
use super::spill::SortedFile;
use crate::error::{Error, Result};

/// The result of a two-sided Wilcoxon rank-sum test of `x` against `y`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct RankSumTest {
    /// R's statistic `W`: the rank sum of `x` minus `n_x (n_x + 1) / 2` (the Mann–Whitney U of `x`).
    pub w: f64,
    /// The continuity-corrected normal score.
    pub z: f64,
    /// Two-sided p-value (1 when every value is tied, where R would give NaN).
    pub p_value: f64,
    /// Number of tied groups (values that occur more than once across both samples).
    pub tie_groups: u64,
}

/// Wilcoxon rank-sum test (R's `wilcox.test(x, y, exact = FALSE, correct = TRUE)`). O(n + m) on the
/// already sorted samples: ranks come from merging them, tied values get their average rank.
pub fn wilcoxon_rank_sum(x: &Sample, y: &Sample) -> RankSumTest {
    match (x.as_slice(), y.as_slice()) {
        (Some(xs), Some(ys)) => rank_sum_of(xs.iter().copied(), ys.iter().copied()),
        _ => rank_sum_of(x.ascending(), y.ascending()),
    }
}

/// The rank-sum test of two ascending sequences, merged once.
fn rank_sum_of(xs: impl Iterator<Item = f64>, ys: impl Iterator<Item = f64>) -> RankSumTest {
    let (mut xs, mut ys) = (xs.peekable(), ys.peekable());
    let (mut nx, mut ny) = (0u128, 0u128);
    // Twice the rank sum of x, exact in integers: an average rank is a half-integer at worst.
    let mut rank_sum2: u128 = 0;
    let mut ties = CompensatedSum::default();
    let mut tie_groups = 0u64;
    let mut pos: u128 = 0;
    loop {
        let v = match (xs.peek(), ys.peek()) {
            (Some(&a), Some(&b)) => a.min(b),
            (Some(&a), None) => a,
            (None, Some(&b)) => b,
            (None, None) => break,
        };
        let (mut cx, mut cy) = (0u128, 0u128);
        while xs.next_if(|&a| a == v).is_some() {
            cx += 1;
        }
        while ys.next_if(|&b| b == v).is_some() {
            cy += 1;
        }
        let t = cx + cy;
        nx += cx;
        ny += cy;
        // Ranks pos+1 ..= pos+t, average (2 pos + t + 1) / 2.
        rank_sum2 += cx * (2 * pos + t + 1);
        if t > 1 {
            let tf = t as f64;
            ties.add(tf * tf * tf - tf);
            tie_groups += 1;
        }
        pos += t;
    }
    let w = (rank_sum2 - nx * (nx + 1)) as f64 / 2.0;
    let (nxf, nyf) = (nx as f64, ny as f64);
    let z0 = w - nxf * nyf / 2.0;
    let n = nxf + nyf;
    let sigma = ((nxf * nyf / 12.0) * ((n + 1.0) - ties.value() / (n * (n - 1.0)))).sqrt();
    if sigma.is_nan() || sigma <= 0.0 {
        return RankSumTest {
            w,
            z: 0.0,
            p_value: 1.0,
            tie_groups,
        };
    }
    let correction = 0.5 * z0.signum() * (z0 != 0.0) as u8 as f64;
    let z = (z0 - correction) / sigma;
    let p_value = (2.0 * pnorm(z).min(pnorm_upper(z))).min(1.0);
    RankSumTest {
        w,
        z,
        p_value,
        tie_groups,
    }
}

/// The Hodges–Lehmann estimate of the shift of `x` against `y`: the median of all `x_i - y_j`
/// (as R's `median(outer(x, y, "-"))`, and `wilcox.test(..., conf.int = TRUE)`'s estimate for
/// exact tests).
///
/// Never forms the n·m differences: a selection over the implicitly sorted matrix `x_i - y_j`
/// (rows and columns are monotone because both samples are sorted) keeps, per row, the range of
/// columns that can still hold the answer, and narrows it between two sampled pivots counted in
/// O(n + m) per step, so the expected cost is O((n + m) log(n m)) time (in practice five or six
/// sweeps over both samples) and O(m) memory. The answer does
/// not depend on the pivots; their generator is seeded only to make the running time reproducible.
pub fn hodges_lehmann(x: &Sample, y: &Sample) -> Result<f64> {
    let (q, p) = match (x.as_slice(), y.as_slice(), x.as_file(), y.as_file()) {
        (Some(q), Some(p), _, _) => (q, p),
        (_, _, Some((fx, sx)), Some((fy, sy))) if sx == sy => {
            let shift = hodges_lehmann_files(fx, fy)?;
            x.check()?;
            y.check()?;
            return Ok(shift / sx);
        }
        _ => {
            return Err(Error::InvalidInput(
                "the Hodges–Lehmann shift needs both samples in memory or both on disk, with \
                 one scale"
                    .into(),
            ))
        }
    };
    if q.len() > u32::MAX as usize || p.len() > u32::MAX as usize {
        return Err(Error::InvalidInput(
            "more than 4,294,967,295 values in one sample".into(),
        ));
    }
    let total = q.len() as u64 * p.len() as u64;
    let mut sel = PairSelector::new(q, p);
    if total % 2 == 1 {
        Ok(sel.select((total - 1) / 2, false).0)
    } else {
        let (lo, hi) = sel.select(total / 2 - 1, true);
        Ok((lo + hi) / 2.0)
    }
}

/// The Hodges–Lehmann shift of two sorted files of integers (nanoseconds), exact in integers:
/// the median of all `x_i - y_j`, in the files' unit.
///
/// Memory stays constant: the k-th smallest difference is found by bisection over the integer
/// differences, each step counting the pairs at or below a candidate in one merge-like pass over
/// both files (a pointer into x only moves forward as y grows). A subsample of 2,001 order
/// statistics of each file gives a first estimate and a narrow bracket around it, so a
/// comparison of 2 × 100 M values takes about twenty passes rather than forty.
fn hodges_lehmann_files(x: &SortedFile, y: &SortedFile) -> Result<f64> {
    // A first estimate from evenly spaced order statistics of each side.
    let pick = |f: &SortedFile| -> Vec<f64> {
        let s = f.len().min(2001);
        (0..s)
            .map(|i| f.get(i * (f.len() - 1) / (s - 1).max(1)) as f64)
            .collect()
    };
    let (sx, sy) = (pick(x), pick(y));
    x.check().map_err(Error::spill)?;
    y.check().map_err(Error::spill)?;
    let iqr = |v: &[f64]| {
        super::summary::quantile_type7_by(v, 0.75, |a| a)
            - super::summary::quantile_type7_by(v, 0.25, |a| a)
    };
    let guess = {
        let (a, b) = (Sample::new(sx.clone())?, Sample::new(sy.clone())?);
        hodges_lehmann(&a, &b)?.round() as i128
    };
    let width = ((4.0 * (iqr(&sx) + iqr(&sy)) / (sx.len() as f64).sqrt()) as i128).max(4);
    Ok(hodges_lehmann_files_from(x, y, guess, width))
}

/// [`hodges_lehmann_files`] from a first guess of the shift and a half-width around it; any
/// guess gives the same answer, a good one in fewer passes.
pub(crate) fn hodges_lehmann_files_from(
    x: &SortedFile,
    y: &SortedFile,
    guess: i128,
    width: i128,
) -> f64 {
    let (n, m) = (x.len(), y.len());
    let total = n as u128 * m as u128;
    // 0-based rank of the lower median.
    let k = (total - 1) / 2;
    // C(d) = #{(i, j): x_i - y_j <= d}, and, when asked (once, for the upper median), the
    // smallest difference above d.
    let count = |d: i128, want_above: bool| -> (u128, Option<i128>) {
        let mut xs = x.ascending().peekable();
        let mut below = 0u128;
        let mut total = 0u128;
        let mut above: Option<i128> = None;
        for yj in y.ascending() {
            let limit = yj as i128 + d;
            while xs.next_if(|&xi| (xi as i128) <= limit).is_some() {
                below += 1;
            }
            total += below;
            if !want_above {
                continue;
            }
            if let Some(&xi) = xs.peek() {
                let diff = xi as i128 - yj as i128;
                above = Some(above.map_or(diff, |a| a.min(diff)));
            }
        }
        (total, above)
    };
    let mut width = width.max(1);
    let (min_d, max_d) = (
        x.get(0) as i128 - y.get(m - 1) as i128,
        x.get(n - 1) as i128 - y.get(0) as i128,
    );
    // Invariant once found: C(lo) <= k < C(hi), so the k-th smallest is in (lo, hi].
    let (mut lo, mut hi) = (min_d - 1, max_d);
    let guess = guess.clamp(lo, hi);
    loop {
        let (a, b) = ((guess - width).max(lo), (guess + width).min(hi));
        let below_ok = a == lo || count(a, false).0 <= k;
        let above_ok = b == hi || count(b, false).0 > k;
        if below_ok && above_ok {
            (lo, hi) = (a, b);
            break;
        }
        // Each count narrows the bracket whichever way it fell.
        if below_ok {
            lo = a;
        } else {
            hi = a;
        }
        if above_ok {
            hi = hi.min(b);
        } else {
            lo = b;
        }
        width = width.saturating_mul(16);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if count(mid, false).0 > k {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let kth = hi;
    if total % 2 == 1 {
        return kth as f64;
    }
    // The (k+1)-th: the k-th again when tied, else the smallest difference above it.
    let (le, above) = count(kth, true);
    let next = if le > k + 1 {
        kth
    } else {
        above.unwrap_or(kth)
    };
    (kth + next) as f64 / 2.0
}

/// Runs `work(first row, a piece, b piece)` on the same rows of `a` and `b`, pieces of `size`
/// rows, one thread each when there are several (in order of the pieces).
fn in_pieces<T: Send>(
    pieces: usize,
    size: usize,
    a: &mut [u32],
    b: &mut [u32],
    work: impl Fn(usize, &mut [u32], &mut [u32]) -> T + Sync,
) -> Vec<T> {
    if pieces == 1 {
        return vec![work(0, a, b)];
    }
    let work = &work;
    std::thread::scope(|s| {
        let handles: Vec<_> = a
            .chunks_mut(size)
            .zip(b.chunks_mut(size))
            .enumerate()
            .map(|(i, (a, b))| s.spawn(move || work(i * size, a, b)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("the selection's sweeps do not panic"))
            .collect()
    })
}

/// Selection of the k-th smallest of `q[c] - p[r]` over all rows r (of `p`) and columns c (of `q`).
struct PairSelector<'a> {
    q: &'a [f64],
    p: &'a [f64],
    rng: ChaCha8Rng,
    lo: Vec<u32>,
    hi: Vec<u32>,
    cut_lo: Vec<u32>,
    cut_hi: Vec<u32>,
    /// Rows are handled in this many contiguous pieces, one a thread.
    pieces: usize,
}

/// Candidates sampled per step to choose the two pivots.
const SAMPLE: usize = 4096;

/// Rows per block of the candidates' running count: a sample finds its block by bisection over
/// the blocks (small enough to stay in cache) and its row by walking the block.
const BLOCK: usize = 64;

/// Below this many rows everything runs on the calling thread.
const PARALLEL_ROWS: usize = 1 << 16;

/// What a step keeps of each row's candidates, given the two pivots' counts.
#[derive(Clone, Copy)]
enum Keep {
    /// Those below the lower pivot.
    Below,
    /// Those above the upper pivot.
    Above,
    /// Those between them.
    Between,
}

impl<'a> PairSelector<'a> {
    fn new(q: &'a [f64], p: &'a [f64]) -> Self {
        let pieces = if p.len() < PARALLEL_ROWS {
            1
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
        };
        PairSelector {
            q,
            p,
            rng: ChaCha8Rng::seed_from_u64(0x484c_1984),
            lo: Vec::new(),
            hi: Vec::new(),
            cut_lo: vec![0; p.len()],
            cut_hi: vec![0; p.len()],
            pieces,
        }
    }

    #[inline]
    fn value(&self, r: usize, c: usize) -> f64 {
        self.q[c] - self.p[r]
    }

    /// Rows per piece: whole blocks, so that each piece's block sums are its own.
    fn piece_rows(&self) -> usize {
        let rows = self.p.len().max(1);
        rows.div_ceil(self.pieces).div_ceil(BLOCK).max(1) * BLOCK
    }

    /// For rows `first ..` (as many as `out` holds), the number of columns whose value is below
    /// `v` (or at most `v` when `inclusive`), into `out`; returns their total. Values fall as the
    /// row grows, so the count only grows: a bisection for the first row, then one pointer sweep.
    fn count(&self, v: f64, inclusive: bool, first: usize, out: &mut [u32]) -> u64 {
        let (q, cols) = (self.q, self.q.len());
        let Some(&p0) = self.p.get(first) else {
            return 0;
        };
        let mut c = if inclusive {
            q.partition_point(|&x| x - p0 <= v)
        } else {
            q.partition_point(|&x| x - p0 < v)
        };
        let mut total = 0u64;
        for (slot, &pr) in out.iter_mut().zip(&self.p[first..]) {
            if inclusive {
                while c < cols && q[c] - pr <= v {
                    c += 1;
                }
            } else {
                while c < cols && q[c] - pr < v {
                    c += 1;
                }
            }
            *slot = c as u32;
            total += c as u64;
        }
        total
    }

    /// Both pivots' per-row counts (into `cut_lo` and `cut_hi`) and their totals, a piece of rows
    /// a thread.
    fn count_both(&mut self, plo: f64, phi: f64) -> (u64, u64) {
        let size = self.piece_rows();
        let mut cut_lo = std::mem::take(&mut self.cut_lo);
        let mut cut_hi = std::mem::take(&mut self.cut_hi);
        let this = &*self;
        let sums = in_pieces(
            self.pieces,
            size,
            &mut cut_lo,
            &mut cut_hi,
            |first, l, h| {
                (
                    this.count(plo, false, first, l),
                    this.count(phi, true, first, h),
                )
            },
        );
        self.cut_lo = cut_lo;
        self.cut_hi = cut_hi;
        sums.iter().fold((0, 0), |(a, b), &(x, y)| (a + x, b + y))
    }

    /// Narrows each row's candidates as `keep` says, then returns how many lie left of the
    /// candidates in all and the running count of candidates at each block's start (one more
    /// entry than blocks: the last is the total). With None, every column becomes a candidate of
    /// every row.
    fn narrow(&mut self, keep: Option<Keep>) -> (u64, Vec<u64>) {
        let size = self.piece_rows();
        let cols = self.q.len() as u32;
        let (cut_lo, cut_hi) = (&self.cut_lo, &self.cut_hi);
        let work = |first: usize, lo: &mut [u32], hi: &mut [u32]| -> (u64, Vec<u64>) {
            let mut below = 0u64;
            let mut blocks = Vec::with_capacity(lo.len().div_ceil(BLOCK));
            for (b, (lo, hi)) in lo.chunks_mut(BLOCK).zip(hi.chunks_mut(BLOCK)).enumerate() {
                let at = first + b * BLOCK;
                let (cl, ch) = (&cut_lo[at..at + lo.len()], &cut_hi[at..at + lo.len()]);
                let mut sum = 0u64;
                for i in 0..lo.len() {
                    let (l, h) = (&mut lo[i], &mut hi[i]);
                    match keep {
                        Some(Keep::Below) => *h = (*h).min(cl[i]).max(*l),
                        Some(Keep::Above) => *l = (*l).max(ch[i]).min(*h),
                        Some(Keep::Between) => {
                            *l = (*l).max(cl[i]).min(*h);
                            *h = (*h).min(ch[i]).max(*l);
                        }
                        None => (*l, *h) = (0, cols),
                    }
                    below += *l as u64;
                    sum += (*h - *l) as u64;
                }
                blocks.push(sum);
            }
            (below, blocks)
        };
        let mut lo = std::mem::take(&mut self.lo);
        let mut hi = std::mem::take(&mut self.hi);
        let parts = in_pieces(self.pieces, size, &mut lo, &mut hi, work);
        self.lo = lo;
        self.hi = hi;
        let mut below = 0u64;
        let mut running = vec![0u64];
        for (b, sums) in parts {
            below += b;
            for s in sums {
                running.push(running.last().expect("starts with 0") + s);
            }
        }
        (below, running)
    }

    /// The candidate with 0-based index `t` in row-major order, `running` as [`Self::narrow`]
    /// returns it.
    fn candidate(&self, running: &[u64], t: u64) -> f64 {
        let b = running.partition_point(|&x| x <= t) - 1;
        let mut left = t - running[b];
        let mut r = b * BLOCK;
        loop {
            let len = (self.hi[r] - self.lo[r]) as u64;
            if left < len {
                return self.value(r, (self.lo[r] as u64 + left) as usize);
            }
            left -= len;
            r += 1;
        }
    }

    /// The k-th smallest (0-based) difference, and the (k+1)-th when `next` is set (else NaN).
    ///
    /// Each step samples candidates, takes two pivots that bracket the k-th with high probability
    /// (Floyd & Rivest 1975, "Expected time bounds for selection", CACM 18(3)), counts both in one
    /// sweep each, and keeps only the candidates between them: about twenty times fewer per step.
    /// The sweeps and the narrowing split the rows among the machine's cores.
    fn select(&mut self, k: u64, next: bool) -> (f64, f64) {
        let rows = self.p.len();
        // Candidates of row r are columns lo[r] .. hi[r]; everything left of lo is below the
        // answer, everything from hi on is above it. The bounds are written before they are read,
        // a piece a thread: the allocator's zeroed pages are then faulted in once each, in
        // parallel (reading a fresh page first maps the shared zero page, and the write after it
        // costs a second fault and a TLB flush on every core running the selection).
        self.lo = vec![0; rows];
        self.hi = vec![0; rows];
        let (mut below, mut running) = self.narrow(None);
        let mut previous_total = u64::MAX;
        // The (k+1)-th when the loop already knows it: the smallest candidate above the k-th when
        // the last candidates hold it, or the k-th itself when a tied pivot's count shows copies
        // beyond k. Otherwise one more count finds it below.
        let mut known_next = None;
        let kth = loop {
            let total = *running.last().expect("starts with 0");
            debug_assert!(k >= below && k < below + total);
            if total <= (2 * (rows + self.q.len())).max(SAMPLE) as u64 {
                let mut cand = Vec::with_capacity(total as usize);
                for r in 0..rows {
                    for c in self.lo[r]..self.hi[r] {
                        cand.push(self.value(r, c as usize));
                    }
                }
                let (_, v, right) =
                    cand.select_nth_unstable_by((k - below) as usize, f64::total_cmp);
                if next {
                    known_next = right.iter().copied().min_by(f64::total_cmp);
                }
                break *v;
            }
            // Sample candidates uniformly and pick pivots around the target's expected place.
            let mut sample: Vec<f64> = (0..SAMPLE)
                .map(|_| {
                    let t = self.rng.random_range(0..total);
                    self.candidate(&running, t)
                })
                .collect();
            sample.sort_unstable_by(f64::total_cmp);
            let f = (k - below) as f64 / total as f64;
            let s = SAMPLE as f64;
            let d = 3.0 * (s * f * (1.0 - f)).sqrt() + 8.0;
            let at = |x: f64| sample[(x.max(0.0) as usize).min(SAMPLE - 1)];
            let (mut plo, mut phi) = (at(f * s - d), at(f * s + d));
            if total == previous_total {
                // No progress (heavy ties put every candidate between the pivots): one pivot,
                // whose own copies then leave the candidates or are the answer.
                plo = at(f * s);
                phi = plo;
            }
            previous_total = total;
            let (n_lo, n_hi) = self.count_both(plo, phi);
            let keep = if k < n_lo {
                Keep::Below
            } else if k >= n_hi {
                Keep::Above
            } else if plo == phi {
                // Every value between the pivots is this one value; n_hi of them lie at or
                // below it.
                if n_hi > k + 1 {
                    known_next = Some(plo);
                }
                break plo;
            } else {
                Keep::Between
            };
            (below, running) = self.narrow(Some(keep));
        };
        let mut following = f64::NAN;
        if let (true, Some(v)) = (next, known_next) {
            following = v;
        } else if next {
            // The (k+1)-th is the k-th itself when it is tied, else the smallest value above it.
            let mut cut = std::mem::take(&mut self.cut_hi);
            let n_le = self.count(kth, true, 0, &mut cut);
            if n_le > k + 1 {
                following = kth;
            } else {
                following = f64::INFINITY;
                for (r, &c) in cut.iter().enumerate() {
                    if (c as usize) < self.q.len() {
                        following = following.min(self.value(r, c as usize));
                    }
                }
            }
            self.cut_hi = cut;
        }
        (kth, following)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::dist::format_pvalue;
    use crate::stats::reference::{close, close_p, pair, text, value, PAIRS};

    #[test]
    fn matches_r_wilcox_test() {
        for name in PAIRS {
            let (a, b) = pair(name);
            let (a, b) = (Sample::new(a).unwrap(), Sample::new(b).unwrap());
            let r = wilcoxon_rank_sum(&b, &a);
            close(r.w, value(name, "W"), 1e-12, &format!("{name} W"));
            close_p(r.p_value, value(name, "w_p"), 1e-6, &format!("{name} p"));
            assert_eq!(format_pvalue(r.p_value), text(name, "w_p_fmt"), "{name}");
            let hl = hodges_lehmann(&b, &a).unwrap();
            close(hl, value(name, "hl"), 1e-9, &format!("{name} HL"));
        }
    }

    /// The median of all pairwise differences, the slow way.
    fn hl_naive(x: &[f64], y: &[f64]) -> f64 {
        let mut d: Vec<f64> = x
            .iter()
            .flat_map(|a| y.iter().map(move |b| a - b))
            .collect();
        d.sort_by(f64::total_cmp);
        let n = d.len();
        if n % 2 == 1 {
            d[n / 2]
        } else {
            (d[n / 2 - 1] + d[n / 2]) / 2.0
        }
    }

    #[test]
    fn selection_agrees_with_sorting_all_pairs() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for round in 0..60 {
            let n = rng.random_range(2..90);
            let m = rng.random_range(2..70);
            // Small integer ranges make many ties, which the selection must handle.
            let range = if round % 2 == 0 { 5.0 } else { 1000.0 };
            let x: Vec<f64> = (0..n)
                .map(|_| (rng.random::<f64>() * range).floor())
                .collect();
            let y: Vec<f64> = (0..m)
                .map(|_| (rng.random::<f64>() * range).floor())
                .collect();
            let got = hodges_lehmann(
                &Sample::new(x.clone()).unwrap(),
                &Sample::new(y.clone()).unwrap(),
            )
            .unwrap();
            assert_eq!(got, hl_naive(&x, &y), "round {round}: n {n} m {m}");
        }
    }

    #[test]
    fn selection_survives_heavy_ties_at_size() {
        // Three distinct values among 3,000 × 2,500: the pivots bracket everything at first.
        let x: Vec<f64> = (0..3000).map(|i| (i % 3) as f64).collect();
        let y: Vec<f64> = (0..2500).map(|i| ((i * 7) % 2) as f64).collect();
        let got = hodges_lehmann(
            &Sample::new(x.clone()).unwrap(),
            &Sample::new(y.clone()).unwrap(),
        );
        assert_eq!(got.unwrap(), hl_naive(&x, &y));
        // Distinct values over several narrowing steps.
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let x: Vec<f64> = (0..2000).map(|_| rng.random::<f64>() * 1e3).collect();
        let y: Vec<f64> = (0..1501)
            .map(|_| rng.random::<f64>().powi(3) * 1e3)
            .collect();
        let got = hodges_lehmann(
            &Sample::new(x.clone()).unwrap(),
            &Sample::new(y.clone()).unwrap(),
        );
        assert_eq!(got.unwrap(), hl_naive(&x, &y));
        let z = vec![4.0; 5000];
        let s = Sample::new(z).unwrap();
        assert_eq!(hodges_lehmann(&s, &s).unwrap(), 0.0);
    }

    #[test]
    fn rows_split_among_threads_give_the_same_answer() {
        // The threads' pieces are whole blocks of rows: sizes around block and piece edges, ties
        // and distinct values, each against sorting all pairs.
        let mut rng = ChaCha8Rng::seed_from_u64(19);
        for round in 0..24 {
            let n = [63, 64, 65, 129, 200, 191, 700, 1500][round % 8];
            let m = rng.random_range(2..400);
            let range = if round % 3 == 0 { 7.0 } else { 1e4 };
            let mut x: Vec<f64> = (0..m)
                .map(|_| (rng.random::<f64>() * range).floor())
                .collect();
            let mut y: Vec<f64> = (0..n)
                .map(|_| (rng.random::<f64>() * range).floor() / 8.0)
                .collect();
            let want = hl_naive(&x, &y);
            x.sort_by(f64::total_cmp);
            y.sort_by(f64::total_cmp);
            for pieces in [1, 2, 3, 8] {
                let mut sel = PairSelector::new(&x, &y);
                sel.pieces = pieces;
                let total = (n * m) as u64;
                let got = if total % 2 == 1 {
                    sel.select((total - 1) / 2, false).0
                } else {
                    let (lo, hi) = sel.select(total / 2 - 1, true);
                    (lo + hi) / 2.0
                };
                assert_eq!(got, want, "round {round}: n {n} m {m} pieces {pieces}");
            }
        }
    }

    #[test]
    fn all_tied_gives_p_one_not_nan() {
        let a = Sample::new(vec![3.0; 5]).unwrap();
        let r = wilcoxon_rank_sum(&a, &a);
        assert_eq!(r.p_value, 1.0);
        assert_eq!(r.w, 12.5);
    }
}

#[cfg(test)]
mod timing {
    use super::*;

    /// `cargo test -p dbscope-core --release -- --ignored hl_cost --nocapture`: the shift of two
    /// samples of 4 M log-normal latencies (µs, three decimals), as `compare` computes it.
    #[test]
    #[ignore]
    fn hl_cost() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut draw = |scale: f64| -> Vec<f64> {
            (0..4_000_000)
                .map(|_| {
                    let u: f64 = rng.random::<f64>().max(1e-300);
                    let v: f64 = rng.random();
                    let z = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
                    ((500.0 * (0.3 * z).exp() * scale) * 1000.0).round() / 1000.0
                })
                .collect()
        };
        let (a, b) = (draw(1.0), draw(1.067));
        let (a, b) = (Sample::new(a).unwrap(), Sample::new(b).unwrap());
        let t = std::time::Instant::now();
        let hl = hodges_lehmann(&b, &a).unwrap();
        println!("shift {hl} in {:?}", t.elapsed());
    }
}
