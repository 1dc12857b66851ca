//! Aggregates a run into what its plots need — log-binned histograms, percentile curves, the top-N
//! largest events, and per-interval throughput and p99 — in one streaming pass with bounded memory
//! (a 4 M-event run becomes a few hundred KB of plot data).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use dbscope_core::stats::LatencyHistogram;
use dbscope_core::RunDir;

/// Histogram bins per decade of latency.
pub const BINS_PER_DECADE: u32 = 20;
/// Time-series intervals kept at most; longer runs use wider intervals (doubling).
pub const MAX_INTERVALS: usize = 600;

/// Plot data of one event name in one run.
#[derive(Clone, Debug)]
pub struct EventSeries {
    /// Event name.
    pub name: String,
    /// Successful, measured events.
    pub count: u64,
    /// Log-binned latency histogram: (bin lower edge in µs, events in the bin).
    pub hist: Vec<(f64, u64)>,
    /// Percentile curve: (nines = -log10(1 - q), latency in µs), q from 0 to 0.99999.
    pub percentiles: Vec<(f64, f64)>,
    /// The largest durations (ns), descending.
    pub top: Vec<u64>,
    /// Events (ok, warm-up included) started in each interval.
    pub per_interval: Vec<u64>,
    /// p99 (µs) of the events started in each interval, when there were any.
    pub p99_per_interval: Vec<Option<f64>>,
    /// Open-loop events only: events scheduled (intended start) in each interval — the offered load.
    pub offered_per_interval: Option<Vec<u64>>,
}

/// Plot data of one run.
#[derive(Clone, Debug)]
pub struct RunSeries {
    /// Width of one time-series interval, in seconds.
    pub interval_s: f64,
    /// End of warm-up, seconds since the start.
    pub warmup_s: f64,
    /// Per event name, in order of first appearance.
    pub events: Vec<EventSeries>,
}

struct Acc {
    name: String,
    hist: LatencyHistogram,
    top: BinaryHeap<Reverse<u64>>,
    per_interval: Vec<u64>,
    interval_hist: Vec<LatencyHistogram>,
    offered: Vec<u64>,
    open_loop: bool,
}

/// Reads the run once and aggregates every event name. Warm-up events appear in the time series
/// (the plot shades them) and, unless `include_warmup`, nowhere else.
pub fn collect(
    run: &RunDir,
    include_warmup: bool,
    top_n: usize,
) -> dbscope_core::Result<RunSeries> {
    let mut accs: Vec<Acc> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut interval_ns: u64 = 1_000_000_000;
    let mut intervals = 0usize;
    let mut ids: HashMap<u32, usize> = HashMap::new();
    run.for_each_block(|names, events| {
        // Name ids are per event file: resolve them per block.
        ids.clear();
        for ev in events {
            let i = *ids.entry(ev.name).or_insert_with(|| {
                let name = names.name(ev.name);
                *index.entry(name.clone()).or_insert_with(|| {
                    accs.push(Acc {
                        name,
                        hist: LatencyHistogram::new(),
                        top: BinaryHeap::new(),
                        per_interval: Vec::new(),
                        interval_hist: Vec::new(),
                        offered: Vec::new(),
                        open_loop: false,
                    });
                    accs.len() - 1
                })
            });
            if ev.is_error() {
                continue;
            }
            let mut slot = (ev.start_ns / interval_ns) as usize;
            while slot >= MAX_INTERVALS {
                // Too long for this interval width: double it and merge neighbours.
                interval_ns *= 2;
                for a in accs.iter_mut() {
                    merge_pairs(&mut a.per_interval, &mut a.interval_hist);
                    merge_counts(&mut a.offered);
                }
                intervals = intervals.div_ceil(2);
                slot = (ev.start_ns / interval_ns) as usize;
            }
            intervals = intervals.max(slot + 1);
            let a = &mut accs[i];
            if a.per_interval.len() <= slot {
                a.per_interval.resize(slot + 1, 0);
                a.interval_hist.resize_with(slot + 1, LatencyHistogram::new);
            }
            a.per_interval[slot] += 1;
            a.interval_hist[slot].record(ev.duration_ns);
            if let Some(intended) = ev.intended_start_ns {
                // Intended starts never come after actual ones, so this slot is not past `slot`.
                let o = ((intended / interval_ns) as usize).min(slot);
                if a.offered.len() <= slot {
                    a.offered.resize(slot + 1, 0);
                }
                a.offered[o] += 1;
                a.open_loop = true;
            }
            if ev.is_warmup() && !include_warmup {
                continue;
            }
            a.hist.record(ev.duration_ns);
            if top_n > 0 {
                if a.top.len() < top_n {
                    a.top.push(Reverse(ev.duration_ns));
                } else if a.top.peek().is_some_and(|Reverse(m)| ev.duration_ns > *m) {
                    a.top.pop();
                    a.top.push(Reverse(ev.duration_ns));
                }
            }
        }
    })?;
    let warmup_s = run
        .manifest
        .runner
        .as_ref()
        .map(|r| r.warmup_s)
        .unwrap_or(0.0);
    let events = accs
        .into_iter()
        .map(|mut a| {
            a.per_interval.resize(intervals, 0);
            a.offered.resize(intervals, 0);
            a.interval_hist
                .resize_with(intervals, LatencyHistogram::new);
            let mut top: Vec<u64> = a.top.into_iter().map(|Reverse(v)| v).collect();
            top.sort_unstable_by(|x, y| y.cmp(x));
            EventSeries {
                name: a.name,
                count: a.hist.len(),
                hist: log_bins(&a.hist),
                percentiles: percentile_curve(&a.hist),
                top,
                p99_per_interval: a
                    .interval_hist
                    .iter()
                    .map(|h| (!h.is_empty()).then(|| h.percentile(99.0) as f64 / 1000.0))
                    .collect(),
                per_interval: a.per_interval,
                offered_per_interval: a.open_loop.then_some(a.offered),
            }
        })
        .collect();
    Ok(RunSeries {
        interval_s: interval_ns as f64 / 1e9,
        warmup_s,
        events,
    })
}

fn merge_pairs(counts: &mut Vec<u64>, hists: &mut Vec<LatencyHistogram>) {
    let n = counts.len().div_ceil(2);
    for i in 0..n {
        let b = counts.get(2 * i + 1).copied().unwrap_or(0);
        counts[i] = counts[2 * i] + b;
        let mut h = std::mem::take(&mut hists[2 * i]);
        if let Some(other) = hists.get(2 * i + 1) {
            h.merge(other);
        }
        hists[i] = h;
    }
    counts.truncate(n);
    hists.truncate(n);
}

fn merge_counts(counts: &mut Vec<u64>) {
    let n = counts.len().div_ceil(2);
    for i in 0..n {
        counts[i] = counts[2 * i] + counts.get(2 * i + 1).copied().unwrap_or(0);
    }
    counts.truncate(n);
}

/// Log-spaced bins (20 per decade, from 1 ns) of an HDR histogram: (lower edge µs, count).
fn log_bins(h: &LatencyHistogram) -> Vec<(f64, u64)> {
    let mut bins: Vec<u64> = Vec::new();
    for (value, count) in h.iter_values() {
        let b = ((value.max(1) as f64).log10() * BINS_PER_DECADE as f64).floor() as usize;
        if bins.len() <= b {
            bins.resize(b + 1, 0);
        }
        bins[b] += count;
    }
    let first = bins.iter().position(|&c| c > 0).unwrap_or(0);
    bins.iter()
        .enumerate()
        .skip(first)
        .map(|(b, &c)| (10f64.powf(b as f64 / BINS_PER_DECADE as f64) / 1000.0, c))
        .collect()
}

/// Latency at q = 1 - 10^-nines, nines from 0 to 5 in steps of 0.05 (p0 to p99.999).
fn percentile_curve(h: &LatencyHistogram) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    (0..=100)
        .map(|k| {
            let nines = k as f64 * 0.05;
            let q = 1.0 - 10f64.powf(-nines);
            (nines, h.percentile(q * 100.0) as f64 / 1000.0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbscope_core::fake::FakeRun;
    use dbscope_core::{Event, Manifest, WorkloadInfo, EVENT_WARMUP};

    /// A run in `dir` whose events (name id 1) are all called "commit".
    fn run_with(dir: &std::path::Path, evs: &[Event]) -> RunDir {
        let mut f =
            FakeRun::with_manifest(dir, Manifest::new("workload", WorkloadInfo::default(), 1));
        assert_eq!(f.name("commit"), 1);
        f.block(evs);
        f.finish()
    }

    #[test]
    fn aggregates_bins_top_and_intervals() {
        let dir = tempfile::tempdir().unwrap();
        let c = 1; // "commit", the first name interned by `run_with`
        let mut evs = Vec::new();
        for i in 0..3000u64 {
            evs.push(Event {
                name: c,
                start_ns: i * 1_000_000, // 3 s of events, one per ms
                duration_ns: 1000 + i,   // 1.000 .. 3.999 µs
                flags: if i < 500 { EVENT_WARMUP } else { 0 },
                ..Event::default()
            });
        }
        let run = run_with(dir.path(), &evs);
        let s = collect(&run, false, 10).unwrap();
        let e = &s.events[0];
        assert_eq!(e.name, "commit");
        assert_eq!(e.count, 2500, "warm-up left out of the distribution");
        assert_eq!(
            e.per_interval,
            vec![1000, 1000, 1000],
            "but kept in the time series"
        );
        assert_eq!(
            e.top,
            (2990..3000).rev().map(|i| 1000 + i).collect::<Vec<_>>()
        );
        assert_eq!(e.hist.iter().map(|b| b.1).sum::<u64>(), 2500);
        assert!(
            e.hist.iter().all(|(lo, _)| *lo >= 0.89 && *lo < 4.0),
            "{:?}",
            e.hist
        );
        let p = &e.percentiles;
        assert_eq!(p.len(), 101);
        assert!(p.windows(2).all(|w| w[0].1 <= w[1].1));
        let all = collect(&run, true, 0).unwrap();
        assert_eq!(all.events[0].count, 3000);
        assert!(all.events[0].top.is_empty());
    }

    #[test]
    fn open_loop_events_give_the_offered_load() {
        let dir = tempfile::tempdir().unwrap();
        let c = 1; // "commit", the first name interned by `run_with`
                   // Scheduled 100 per second for 2 s; the second second's events all start late, in second 3.
        let evs: Vec<Event> = (0..200u64)
            .map(|i| {
                let intended = i * 10_000_000;
                let start = if i < 100 { intended } else { 2_000_000_000 + i };
                Event {
                    name: c,
                    start_ns: start,
                    duration_ns: 1000,
                    intended_start_ns: Some(intended),
                    ..Event::default()
                }
            })
            .collect();
        let run = run_with(dir.path(), &evs);
        let s = collect(&run, false, 0).unwrap();
        let e = &s.events[0];
        assert_eq!(e.per_interval, vec![100, 0, 100]);
        assert_eq!(e.offered_per_interval, Some(vec![100, 100, 0]));
    }

    #[test]
    fn long_runs_use_wider_intervals() {
        let dir = tempfile::tempdir().unwrap();
        let c = 1; // "commit", the first name interned by `run_with`
        let evs: Vec<Event> = (0..2000u64)
            .map(|s| Event {
                name: c,
                start_ns: s * 1_000_000_000, // one event a second for 2000 s
                duration_ns: 5000,
                ..Event::default()
            })
            .collect();
        let run = run_with(dir.path(), &evs);
        let s = collect(&run, false, 0).unwrap();
        assert_eq!(s.interval_s, 4.0);
        assert_eq!(s.events[0].per_interval.len(), 500);
        assert_eq!(s.events[0].per_interval.iter().sum::<u64>(), 2000);
        assert!(s.events[0].per_interval.iter().all(|&n| n == 4));
    }
}
