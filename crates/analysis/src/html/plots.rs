//! The plots of one event name across runs ([`event_plots`]), one function per plot.
//!
//! Latency distribution, percentile curve, the largest events, and throughput, backlog and p99
//! over time.

use super::axes::{decade_ceil, decade_floor, file_stem, format_nines, nice_max, time_axis};
use super::data::{self, EventSeries, RunSeries};
use super::svg::{self, Axis, Plot, Scale, Series, Style};
use crate::text::{format_num, format_us};

/// One run as a labelled input of the plots ("A", "B", or the run's own name).
pub struct Labelled<'a> {
    /// Legend label.
    pub label: String,
    /// Its plot data.
    pub series: &'a RunSeries,
}

/// The plots of one event name across one or more runs: distribution, percentile curve, top-N,
/// throughput and p99 over time. Returns (file name, inline SVG).
pub fn event_plots(name: &str, runs: &[Labelled<'_>], top_n: usize) -> Vec<(String, String)> {
    let picked: Vec<(usize, &Labelled<'_>, &EventSeries)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            r.series
                .events
                .iter()
                .find(|e| e.name == name)
                .map(|e| (i, r, e))
        })
        .collect();
    let stem = file_stem(name);
    let mut out = Vec::new();
    distribution(name, &stem, &picked, &mut out);
    percentiles(name, &stem, &picked, &mut out);
    largest(name, &stem, &picked, top_n, &mut out);
    over_time(name, &stem, runs, &picked, &mut out);
    out
}

/// One run's series of the event name being plotted: (its slot in the legend, the run, the series).
type Pick<'a> = (usize, &'a Labelled<'a>, &'a EventSeries);

/// The latency distribution plot.
fn distribution(name: &str, stem: &str, picked: &[Pick<'_>], out: &mut Vec<(String, String)>) {
    // Latency distribution: share of events per log-spaced bin, on a log x axis.
    let (mut lo, mut hi, mut ymax) = (f64::MAX, 0.0f64, 0.0f64);
    let mut series = Vec::new();
    for (slot, r, e) in picked {
        if e.count == 0 {
            continue;
        }
        let step = 10f64.powf(1.0 / data::BINS_PER_DECADE as f64);
        let mut pts = Vec::with_capacity(e.hist.len() + 2);
        for &(edge, c) in &e.hist {
            let share = 100.0 * c as f64 / e.count as f64;
            pts.push((edge, share));
            ymax = ymax.max(share);
            lo = lo.min(edge);
            hi = hi.max(edge * step);
        }
        if let Some(&(edge, _)) = e.hist.last() {
            pts.push((edge * step, 0.0));
        }
        series.push(Series {
            name: format!("{} (n = {})", r.label, format_num(e.count as f64)),
            points: pts,
            style: Style::Step,
            slot: *slot,
        });
    }
    if !series.is_empty() {
        let plot = Plot {
            title: format!("{name}: latency distribution (log scale)"),
            x: Axis {
                label: "latency (log scale)".into(),
                scale: Scale::Log10,
                min: decade_floor(lo),
                max: decade_ceil(hi),
                format: format_us,
            },
            y: Axis {
                label: "share of events per bin (%)".into(),
                scale: Scale::Linear,
                min: 0.0,
                max: nice_max(ymax),
                format: format_num,
            },
            series,
            shaded: Vec::new(),
        };
        out.push((format!("{stem}-distribution.svg"), svg::render(&plot)));
    }
}

/// The percentile curve plot.
fn percentiles(name: &str, stem: &str, picked: &[Pick<'_>], out: &mut Vec<(String, String)>) {
    // Percentile curve, p0 to p99.999, log latency.
    let mut series = Vec::new();
    let (mut lo, mut hi) = (f64::MAX, 0.0f64);
    for (slot, r, e) in picked {
        if e.percentiles.is_empty() {
            continue;
        }
        for &(_, v) in &e.percentiles {
            lo = lo.min(v.max(0.001));
            hi = hi.max(v);
        }
        series.push(Series {
            name: r.label.clone(),
            points: e
                .percentiles
                .iter()
                .map(|&(n, v)| (n, v.max(0.001)))
                .collect(),
            style: Style::Line,
            slot: *slot,
        });
    }
    if !series.is_empty() {
        let plot = Plot {
            title: format!("{name}: latency by percentile"),
            x: Axis {
                label: "percentile".into(),
                scale: Scale::Linear,
                min: 0.0,
                max: 5.0,
                format: format_nines,
            },
            y: Axis {
                label: "latency (log scale)".into(),
                scale: Scale::Log10,
                min: decade_floor(lo),
                max: decade_ceil(hi),
                format: format_us,
            },
            series,
            shaded: Vec::new(),
        };
        out.push((format!("{stem}-percentiles.svg"), svg::render(&plot)));
    }
}

/// The plot of the largest events.
fn largest(
    name: &str,
    stem: &str,
    picked: &[Pick<'_>],
    top_n: usize,
    out: &mut Vec<(String, String)>,
) {
    // The top-N largest events, descending, linear scale (seed 001's "top 10,000 waits").
    let mut series = Vec::new();
    let (mut n_max, mut hi) = (1usize, 0.0f64);
    for (slot, r, e) in picked {
        if e.top.is_empty() {
            continue;
        }
        n_max = n_max.max(e.top.len());
        hi = hi.max(e.top[0] as f64 / 1000.0);
        series.push(Series {
            name: r.label.clone(),
            points: thin_top(&e.top),
            style: Style::Line,
            slot: *slot,
        });
    }
    if !series.is_empty() {
        let plot = Plot {
            // As many as there are (issue 13: "the 10,000 largest" of 3,389 events).
            title: format!(
                "{name}: the {} largest, descending",
                format_num(n_max.min(top_n) as f64)
            ),
            x: Axis {
                label: "rank".into(),
                scale: Scale::Linear,
                min: 1.0,
                max: n_max as f64,
                format: format_num,
            },
            y: Axis {
                label: "latency (µs)".into(),
                scale: Scale::Linear,
                min: 0.0,
                max: nice_max(hi),
                format: format_num,
            },
            series,
            shaded: Vec::new(),
        };
        out.push((format!("{stem}-top.svg"), svg::render(&plot)));
    }
}

/// The plots over time: throughput (with the offered load of an open-loop run), the backlog of
/// an open-loop run, and p99 per interval.
fn over_time(
    name: &str,
    stem: &str,
    runs: &[Labelled<'_>],
    picked: &[Pick<'_>],
    out: &mut Vec<(String, String)>,
) {
    // Throughput and p99 over time.
    let mut tput = Vec::new();
    let mut p99 = Vec::new();
    let mut backlog = Vec::new();
    let mut backlog_max = 0.0f64;
    let (mut t_max, mut y_max, mut p_lo, mut p_hi) = (0.0f64, 0.0f64, f64::MAX, 0.0f64);
    let mut warmup = 0.0f64;
    for (slot, r, e) in picked {
        let w = r.series.interval_s;
        warmup = warmup.max(r.series.warmup_s);
        let mut pts = Vec::new();
        for (i, &n) in e.per_interval.iter().enumerate() {
            let rate = n as f64 / w;
            pts.push((i as f64 * w, rate));
            y_max = y_max.max(rate);
        }
        if let Some(&(t, _)) = pts.last() {
            t_max = t_max.max(t + w);
            pts.push((t + w, pts.last().map(|p| p.1).unwrap_or(0.0)));
        }
        tput.push(Series {
            name: if e.offered_per_interval.is_some() {
                format!("{} achieved", r.label)
            } else {
                r.label.clone()
            },
            points: pts,
            style: Style::Step,
            slot: *slot,
        });
        if let Some(offered) = &e.offered_per_interval {
            // Open loop: what was scheduled, and how far the achieved load fell behind it.
            let mut pts = Vec::new();
            let mut back = Vec::new();
            let (mut cum_offered, mut cum_done) = (0u64, 0u64);
            for (i, (&o, &n)) in offered.iter().zip(&e.per_interval).enumerate() {
                let rate = o as f64 / w;
                pts.push((i as f64 * w, rate));
                y_max = y_max.max(rate);
                cum_offered += o;
                cum_done += n;
                let b = cum_offered.saturating_sub(cum_done) as f64;
                back.push(((i + 1) as f64 * w, b));
                backlog_max = backlog_max.max(b);
            }
            if let Some(&(t, v)) = pts.last() {
                pts.push((t + w, v));
            }
            tput.push(Series {
                name: format!("{} offered", r.label),
                points: pts,
                style: Style::Step,
                slot: slot + 2,
            });
            backlog.push(Series {
                name: r.label.clone(),
                points: back,
                style: Style::Line,
                slot: *slot,
            });
        }
        let pts: Vec<(f64, f64)> = e
            .p99_per_interval
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| ((i as f64 + 0.5) * w, v.max(0.001))))
            .collect();
        for &(_, v) in &pts {
            p_lo = p_lo.min(v);
            p_hi = p_hi.max(v);
        }
        p99.push(Series {
            name: r.label.clone(),
            points: pts,
            style: Style::Line,
            slot: *slot,
        });
    }
    let shaded = if warmup > 0.0 {
        vec![(0.0, warmup, "warm-up".to_string())]
    } else {
        Vec::new()
    };
    if t_max > 0.0 {
        let interval = runs.first().map(|r| r.series.interval_s).unwrap_or(1.0);
        let plot = Plot {
            title: format!(
                "{name}: throughput over time ({} s intervals)",
                format_num(interval)
            ),
            x: time_axis(t_max),
            y: Axis {
                // Operations of this name, not the workload's own events (issue 34: `events`'
                // commits were labelled "events per second").
                label: format!(
                    "{} operations per second",
                    crate::text::truncate_middle(name, 40)
                ),
                scale: Scale::Linear,
                min: 0.0,
                max: nice_max(y_max),
                format: format_num,
            },
            series: tput,
            shaded: shaded.clone(),
        };
        out.push((format!("{stem}-throughput.svg"), svg::render(&plot)));
        if !backlog.is_empty() {
            let plot = Plot {
                title: format!("{name}: backlog (scheduled but not yet started)"),
                x: time_axis(t_max),
                y: Axis {
                    label: "operations behind schedule".into(),
                    scale: Scale::Linear,
                    min: 0.0,
                    max: nice_max(backlog_max.max(1.0)),
                    format: format_num,
                },
                series: backlog,
                shaded: shaded.clone(),
            };
            out.push((format!("{stem}-backlog.svg"), svg::render(&plot)));
        }
        if p_hi > 0.0 {
            let plot = Plot {
                title: format!("{name}: p99 per interval"),
                x: time_axis(t_max),
                y: Axis {
                    label: "p99 latency (log scale)".into(),
                    scale: Scale::Log10,
                    min: decade_floor(p_lo),
                    max: decade_ceil(p_hi),
                    format: format_us,
                },
                series: p99,
                shaded,
            };
            out.push((format!("{stem}-p99.svg"), svg::render(&plot)));
        }
    }
}

/// At most ~2,000 points of a descending top-N list, keeping the first 100 exactly.
fn thin_top(top: &[u64]) -> Vec<(f64, f64)> {
    let step = (top.len() / 2000).max(1);
    top.iter()
        .enumerate()
        .filter(|(i, _)| *i < 100 || i % step == 0 || *i == top.len() - 1)
        .map(|(i, &v)| ((i + 1) as f64, v as f64 / 1000.0))
        .collect()
}
