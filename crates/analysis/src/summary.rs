//! The figures of one event name that every consumer shares, with [`EventReport`] holding them.
//!
//! R's `summary()` and HDR percentiles in µs, the spread over sessions, and the latency from the
//! intended start. A leaf: `report`, `observe`, `openloop` and `compare` all use it.

use std::collections::BTreeMap;

use serde::Serialize;

use dbscope_core::stats::{LatencyHistogram, Summary};

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
    /// High percentiles of the durations in µs from an HDR histogram (3 significant digits);
    /// `None` without successful events.
    pub percentiles_us: Option<PercentilesUs>,
    /// How the events spread over sessions; `None` when one session recorded them all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionSpread>,
    /// Latency from the intended start (coordinated-omission corrected), when the events carry
    /// intended starts (open-loop runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_intended: Option<FromIntended>,
}

/// R's `summary()` of durations, in microseconds (type-7 quantiles, exact mean).
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

/// High percentiles of durations, in microseconds, from an HDR histogram (3 significant digits).
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
    /// HDR percentiles of (end − intended start), in µs.
    pub percentiles_us: PercentilesUs,
    /// Events that started after their intended start.
    pub late: u64,
}

impl FromIntended {
    /// From the latencies (ns) and the count of late starts; `None` when there are none.
    pub fn of(latencies: &mut [u64], late: u64) -> Option<FromIntended> {
        let s = Summary::from_values(latencies, 1000.0).ok()?;
        let mut hist = LatencyHistogram::new();
        for &d in latencies.iter() {
            hist.record(d);
        }
        let us = |p: f64| hist.percentile(p) as f64 / 1000.0;
        Some(FromIntended {
            count: latencies.len() as u64,
            summary_us: SummaryUs::from_six(s.six()),
            percentiles_us: PercentilesUs {
                p90: us(90.0),
                p99: us(99.0),
                p99_9: us(99.9),
                p99_99: us(99.99),
            },
            late,
        })
    }
}
