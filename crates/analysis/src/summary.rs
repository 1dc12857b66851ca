//! The figures of one event name that every consumer shares, with [`EventReport`] holding them.
//!
//! R's `summary()` and R's type-7 percentiles in µs ([`Latencies`], gathered by a
//! [`LatencyAcc`] within a [`MemoryBudget`]), the spread over sessions, and the latency from the
//! intended start. A leaf: `report`, `observe`, `openloop` and `compare` all use it.

use std::collections::BTreeMap;

use serde::Serialize;

use dbscope_core::stats::{format_r, quantile_type7_by, zapsmall, LatencyHistogram, Summary};

/// Durations a report keeps in memory to sort, over all its event names (8 bytes each: 48 MB),
/// so that two runs read side by side stay within about 100 MB. A name whose durations do not
/// fit is summarised from an HDR histogram instead (see [`LatencyAcc`]).
pub const EXACT_BUDGET_VALUES: usize = 6_000_000;

/// How many more durations the accumulators of one run may keep to sort.
#[derive(Clone, Copy, Debug)]
pub struct MemoryBudget {
    left: usize,
}

impl MemoryBudget {
    /// A budget of `values` durations.
    pub fn new(values: usize) -> Self {
        MemoryBudget { left: values }
    }

    /// True when no more durations can be kept.
    pub fn is_spent(&self) -> bool {
        self.left == 0
    }
}

impl Default for MemoryBudget {
    fn default() -> Self {
        MemoryBudget::new(EXACT_BUDGET_VALUES)
    }
}

/// The durations (ns) of one event name as they are read: kept, in the order read, while the
/// run's [`MemoryBudget`] allows, for R's exact `summary()` and quantiles; once spilled
/// ([`LatencyAcc::spill`]: the owner of several accumulators spills the one keeping the most when
/// the budget is spent, and one that finds it spent spills itself), its durations go into an HDR
/// histogram and the kept ones are freed, their share of the budget going back to the others.
/// Count, min and max are exact either way.
#[derive(Clone, Debug, Default)]
pub struct LatencyAcc {
    kept: Vec<u64>,
    hist: Option<LatencyHistogram>,
    n: u64,
    min: u64,
    max: u64,
    sum: u128,
    /// Welford's running mean and sum of squared deviations, in µs (for the HDR case's sd).
    w_mean: f64,
    w_m2: f64,
}

impl LatencyAcc {
    /// An accumulator that keeps all of `values` (for callers that hold them anyway).
    pub fn from_values(values: Vec<u64>) -> Self {
        let mut acc = LatencyAcc::default();
        let mut budget = MemoryBudget::new(values.len());
        for v in values {
            acc.push(v, &mut budget);
        }
        acc
    }

    /// Number of durations.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// True without durations.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Adds one duration in ns.
    pub fn push(&mut self, ns: u64, budget: &mut MemoryBudget) {
        if self.n == 0 {
            self.min = ns;
            self.max = ns;
        } else {
            self.min = self.min.min(ns);
            self.max = self.max.max(ns);
        }
        self.n += 1;
        self.sum += u128::from(ns);
        let us = ns as f64 / 1000.0;
        let d = us - self.w_mean;
        self.w_mean += d / self.n as f64;
        self.w_m2 += d * (us - self.w_mean);
        if self.hist.is_none() && budget.left == 0 {
            self.spill(budget);
        }
        if let Some(h) = &mut self.hist {
            h.record(ns);
        } else {
            budget.left -= 1;
            self.kept.push(ns);
        }
    }

    /// Durations kept to sort (0 once spilled).
    pub fn kept(&self) -> usize {
        self.kept.len()
    }

    /// Moves the kept durations into an HDR histogram, frees them and gives their share of the
    /// budget back; later durations go to the histogram.
    pub fn spill(&mut self, budget: &mut MemoryBudget) {
        if self.hist.is_some() {
            return;
        }
        let mut h = LatencyHistogram::new();
        for &v in &self.kept {
            h.record(v);
        }
        budget.left += self.kept.len();
        self.kept = Vec::new();
        self.hist = Some(h);
    }

    /// The statistics, `None` without durations.
    pub fn finish(mut self) -> Option<Latencies> {
        if self.n == 0 {
            return None;
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        let (min, max) = (us(self.min), us(self.max));
        match &self.hist {
            None => {
                let s = Summary::from_values(&mut self.kept, 1000.0).ok()?;
                // `kept` is sorted now.
                let q = |p: f64| quantile_type7_by(&self.kept, p, us);
                Some(Latencies {
                    summary_us: SummaryUs::from_six(s.six()),
                    sd_us: (s.n > 1).then_some(s.sd),
                    percentiles_us: PercentilesUs {
                        p90: q(0.9),
                        p99: q(0.99),
                        p99_9: q(0.999),
                        p99_99: q(0.9999),
                        exact: true,
                    },
                })
            }
            Some(h) => {
                // HDR values are bucket edges: never outside what was measured.
                let q = |p: f64| us(h.percentile(p)).clamp(min, max);
                let mean = (self.sum as f64 / self.n as f64 / 1000.0).clamp(min, max);
                Some(Latencies {
                    summary_us: SummaryUs::from_six([min, q(25.0), q(50.0), mean, q(75.0), max]),
                    sd_us: (self.n > 1).then(|| (self.w_m2 / (self.n - 1) as f64).sqrt()),
                    percentiles_us: PercentilesUs {
                        p90: q(90.0),
                        p99: q(99.0),
                        p99_9: q(99.9),
                        p99_99: q(99.99),
                        exact: false,
                    },
                })
            }
        }
    }
}

/// R's `summary()`, sd and high percentiles of one name's durations, in µs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Latencies {
    /// R's `summary()`.
    pub summary_us: SummaryUs,
    /// Sample standard deviation; `None` with fewer than two (R's `NA`).
    pub sd_us: Option<f64>,
    /// p90 … p99.99.
    pub percentiles_us: PercentilesUs,
}

/// The statistics of one event name over the measured set.
#[derive(Clone, Debug, Serialize)]
pub struct EventReport {
    /// Event name.
    pub name: String,
    /// Successful events.
    pub count: u64,
    /// Failed events.
    pub errors: u64,
    /// Failed events by error class.
    pub error_classes: BTreeMap<String, u64>,
    /// Warm-up events of this name left out (0 with `include_warmup`).
    pub warmup_excluded: u64,
    /// Successful events per second of the measured span; `None` when the span is empty.
    pub throughput_per_s: Option<f64>,
    /// R's `summary()` of the successful durations in µs; `None` without successful events.
    pub summary_us: Option<SummaryUs>,
    /// Sample standard deviation of the durations in µs; `None` with fewer than two (R's `NA`).
    pub sd_us: Option<f64>,
    /// High percentiles of the durations in µs: R's type-7 quantiles, or HDR approximations when
    /// the name had more events than the memory budget (see [`PercentilesUs::exact`]); `None`
    /// without successful events.
    pub percentiles_us: Option<PercentilesUs>,
    /// How the events spread over sessions; `None` when one session recorded them all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionSpread>,
    /// Latency from the intended start (coordinated-omission corrected), when the events carry
    /// intended starts (open-loop runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_intended: Option<FromIntended>,
}

/// R's `summary()` of durations, in microseconds (type-7 quantiles, R's mean).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SummaryUs {
    /// Smallest duration.
    pub min: f64,
    /// First quartile.
    pub q1: f64,
    /// Median.
    pub median: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Third quartile.
    pub q3: f64,
    /// Largest duration.
    pub max: f64,
}

impl SummaryUs {
    /// From the six numbers of R's `summary()`, in R's order.
    pub fn from_six([min, q1, median, mean, q3, max]: [f64; 6]) -> Self {
        SummaryUs {
            min,
            q1,
            median,
            mean,
            q3,
            max,
        }
    }

    /// The six numbers in R's order (Min., 1st Qu., Median, Mean, 3rd Qu., Max.).
    pub fn six(&self) -> [f64; 6] {
        [self.min, self.q1, self.median, self.mean, self.q3, self.max]
    }
}

/// High percentiles of durations, in microseconds: R's `quantile(x, type = 7)` of every value, or,
/// when there were too many values to keep in memory, HDR-histogram values (3 significant digits)
/// clamped to [min, max].
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PercentilesUs {
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p99_9: f64,
    /// 99.99th percentile.
    pub p99_99: f64,
    /// True for R's type-7 quantiles of every value; false when they (and the summary's quartiles
    /// and mean) come from an HDR histogram because the event name had more events than the
    /// memory budget ([`EXACT_BUDGET_VALUES`]).
    pub exact: bool,
}

impl PercentilesUs {
    /// p90, p99, p99.9 and p99.99 as text: R's quantiles formatted together as R's
    /// `format(zapsmall(q), digits = 4)` formats them (as `compare` prints its quantiles); HDR
    /// values to the 3 significant digits they have, with thousands separators.
    pub fn texts(&self) -> [String; 4] {
        let ps = [self.p90, self.p99, self.p99_9, self.p99_99];
        if self.exact {
            let f = format_r(&zapsmall(&ps), 4);
            std::array::from_fn(|i| f[i].trim().to_string())
        } else {
            ps.map(crate::text::sig3)
        }
    }

    /// How the percentiles were computed, for a line's unit note.
    pub fn method(&self) -> &'static str {
        if self.exact {
            "percentiles as R's quantile()"
        } else {
            "percentiles HDR, 3 digits"
        }
    }
}

/// How the successful events of one name spread over the sessions that recorded it: a starved
/// session (SQLite's busy handler backing off while another session re-takes the lock) shows here.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionSpread {
    /// Successful measured events per session (JSON keys are session numbers).
    pub per_session: BTreeMap<u32, u64>,
    /// Fewest events of one session.
    pub min: u64,
    /// Median over the sessions (type 7).
    pub median: f64,
    /// Most events of one session.
    pub max: u64,
    /// Jain's fairness index, (Σx)² / (n·Σx²): 1 when every session did the same, 1/n when one did
    /// everything.
    pub fairness: f64,
    /// Sessions with fewer than a tenth of the mean (starved; the mean, not the median, so that a
    /// majority of starved sessions is still seen).
    pub starved: Vec<u32>,
    /// What the spread means when the sessions are not peers competing for work (io redo's
    /// destination writers race the same writes: the slower one writes less often, each write
    /// carrying more), said instead of `starved`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl SessionSpread {
    /// The spread, when at least two sessions recorded the name.
    pub fn of(per_session: &BTreeMap<u32, u64>) -> Option<SessionSpread> {
        if per_session.len() < 2 {
            return None;
        }
        let mut counts: Vec<u64> = per_session.values().copied().collect();
        counts.sort_unstable();
        let median = dbscope_core::stats::quantile_type7(&counts, 0.5);
        let sum: f64 = counts.iter().map(|&c| c as f64).sum();
        let sum_sq: f64 = counts.iter().map(|&c| (c as f64) * (c as f64)).sum();
        let fairness = if sum_sq > 0.0 {
            sum * sum / (counts.len() as f64 * sum_sq)
        } else {
            1.0
        };
        let mean = sum / counts.len() as f64;
        let starved = per_session
            .iter()
            .filter(|&(_, &c)| (c as f64) < mean / 10.0)
            .map(|(&s, _)| s)
            .collect();
        Some(SessionSpread {
            per_session: per_session.clone(),
            min: counts[0],
            median,
            max: counts[counts.len() - 1],
            fairness,
            starved,
            note: None,
        })
    }
}

/// Latency from the intended start to the end of the event, over the successful measured events
/// of one name that carry an intended start.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FromIntended {
    /// Events with an intended start.
    pub count: u64,
    /// R's `summary()` of (end − intended start), in µs.
    pub summary_us: SummaryUs,
    /// High percentiles of (end − intended start), in µs.
    pub percentiles_us: PercentilesUs,
    /// Events that started after their intended start.
    pub late: u64,
}

impl FromIntended {
    /// From the latencies (ns) and the count of late starts; `None` when there are none.
    pub fn of(latencies: LatencyAcc, late: u64) -> Option<FromIntended> {
        let count = latencies.len();
        let l = latencies.finish()?;
        Some(FromIntended {
            count,
            summary_us: l.summary_us,
            percentiles_us: l.percentiles_us,
            late,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbscope_core::stats::r_summary_lines;
    use proptest::prelude::*;

    /// reference/r/summary_ref/summary.tsv: R's summary() and quantile(type = 7) of generated
    /// samples (written by its gen.R).
    const R_SUMMARY: &str = include_str!("../../../reference/r/summary_ref/summary.tsv");

    /// The samples with their values in the file (the LCG ones are checked in dbscope-core).
    fn r_cases() -> impl Iterator<Item = (String, Vec<u64>, [String; 2], Vec<f64>)> {
        R_SUMMARY.lines().filter_map(|line| {
            let c: Vec<&str> = line.split('\t').collect();
            let values = c[1].strip_prefix("v ")?;
            let ns = values.split(' ').map(|v| v.parse().unwrap()).collect();
            let q = c[5].split(' ').map(|v| v.parse().unwrap()).collect();
            Some((
                c[0].to_string(),
                ns,
                [c[2].to_string(), c[3].to_string()],
                q,
            ))
        })
    }

    /// Issue 34 items 1 and 2: what report prints for a name (its summary lines and percentiles)
    /// is R's `summary()` and `quantile(type = 7)` of the µs values, to the last digit and bit.
    #[test]
    fn report_latencies_equal_r_on_generated_samples() {
        let mut n = 0;
        for (id, ns, lines, q) in r_cases() {
            let l = LatencyAcc::from_values(ns).finish().unwrap();
            let (head, values) = r_summary_lines(l.summary_us.six());
            assert_eq!([head, values], lines, "{id}");
            let p = l.percentiles_us;
            assert!(p.exact, "{id}");
            assert_eq!(vec![p.p90, p.p99, p.p99_9, p.p99_99], q, "{id}");
            n += 1;
        }
        assert!(n > 600, "{n} samples");
    }

    /// Issue 34 item 2: HDR's p90 292,028 above the maximum 291,780 µs. Over the budget the HDR
    /// values are clamped to [min, max] and marked as not exact.
    #[test]
    fn hdr_percentiles_over_the_budget_stay_within_min_and_max() {
        let mut acc = LatencyAcc::default();
        let mut budget = MemoryBudget::new(3);
        for _ in 0..10 {
            acc.push(291_780_000, &mut budget);
        }
        let l = acc.finish().unwrap();
        let p = l.percentiles_us;
        assert!(!p.exact);
        assert_eq!([p.p90, p.p99, p.p99_9, p.p99_99], [291_780.0; 4]);
        assert_eq!(l.summary_us.six(), [291_780.0; 6]);
        assert!(p.method().contains("HDR"));
    }

    /// The budget is shared: one accumulator spilling gives its share back to the others.
    #[test]
    fn spilling_frees_the_budget_for_the_others() {
        let mut budget = MemoryBudget::new(5);
        let (mut big, mut small) = (LatencyAcc::default(), LatencyAcc::default());
        for v in 1..=5 {
            big.push(v * 1000, &mut budget);
        }
        assert!(budget.is_spent());
        big.spill(&mut budget);
        for v in 1..=3 {
            small.push(v * 1000, &mut budget);
            big.push(v * 1000, &mut budget);
        }
        assert_eq!((big.kept(), small.kept()), (0, 3));
        assert!(small.finish().unwrap().percentiles_us.exact);
        let b = big.finish().unwrap();
        assert!(!b.percentiles_us.exact);
        assert_eq!(big_count(&b), (1.0, 5.0));
    }

    fn big_count(l: &Latencies) -> (f64, f64) {
        (l.summary_us.min, l.summary_us.max)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// A percentile or quartile is never outside [min, max], exact or HDR, and they are
        /// ordered.
        #[test]
        fn percentiles_are_within_min_and_max(
            ns in prop::collection::vec(prop_oneof![0u64..2_000, 0u64..u64::MAX / 2, 1_000u64..400_000_000], 1..400),
            budget in prop_oneof![Just(usize::MAX), 0usize..50],
        ) {
            let mut acc = LatencyAcc::default();
            let mut b = MemoryBudget::new(budget);
            for &v in &ns {
                acc.push(v, &mut b);
            }
            let l = acc.finish().unwrap();
            let s = l.summary_us;
            let p = l.percentiles_us;
            let (min, max) = (*ns.iter().min().unwrap() as f64 / 1000.0, *ns.iter().max().unwrap() as f64 / 1000.0);
            prop_assert_eq!((s.min, s.max), (min, max));
            let all = [s.q1, s.median, s.mean, s.q3, p.p90, p.p99, p.p99_9, p.p99_99];
            for v in all {
                prop_assert!(min <= v && v <= max, "{v} outside [{min}, {max}]: {l:?}");
            }
            prop_assert!(s.q1 <= s.median && s.median <= s.q3);
            prop_assert!(p.p90 <= p.p99 && p.p99 <= p.p99_9 && p.p99_9 <= p.p99_99);
            prop_assert_eq!(p.exact, budget >= ns.len());
        }
    }
}
