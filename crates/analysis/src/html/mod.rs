//! The self-contained HTML report: tables and SVG plots (log-scale latency distributions, percentile
//! curves, the top-N largest events, throughput and p99 over time) in one file with inline CSS, no
//! scripts and no network, readable in light and dark mode and printable. Every string that comes
//! from a run (SQL text, event names, paths, settings, counters) is escaped. Run-level counter
//! sections follow the summary table: one table of counters and one per counter table. An open-loop
//! run adds its CO-corrected latencies and backlog plot after the summary ([`openloop`]).

pub mod data;
mod observe;
mod openloop;
pub mod svg;

use std::fmt::Write;

use dbscope_core::{CounterSection, RunDir};

use crate::compare::Comparison;
use crate::counters::{self, SectionComparison};
use crate::report::{self, Report, ReportOptions};
use crate::text::{format_num, format_us, round_sig3};
use data::{EventSeries, RunSeries};
use svg::{escape, Axis, Plot, Scale, Series, Style};

/// Options of the HTML report.
#[derive(Clone, Debug)]
pub struct HtmlOptions {
    /// Include warm-up events in the distributions.
    pub include_warmup: bool,
    /// How many of the largest events the top-N plot shows.
    pub top_n: usize,
}

impl Default for HtmlOptions {
    fn default() -> Self {
        HtmlOptions {
            include_warmup: false,
            top_n: 10_000,
        }
    }
}

/// A rendered report: the page, and each plot as its own SVG document (for `--svg DIR`).
#[derive(Clone, Debug)]
pub struct HtmlPage {
    /// The whole HTML document.
    pub html: String,
    /// (file name, standalone SVG document) per plot.
    pub svgs: Vec<(String, String)>,
}

/// One run as a labelled input of the plots ("A", "B", or the run's own name).
pub struct Labelled<'a> {
    /// Legend label.
    pub label: String,
    /// Its plot data.
    pub series: &'a RunSeries,
}

/// Builds the HTML report of one run.
pub fn render_run(run: &RunDir, opts: &HtmlOptions) -> dbscope_core::Result<HtmlPage> {
    let rep = report::build(
        run,
        &ReportOptions {
            include_warmup: opts.include_warmup,
        },
    )?;
    let series = data::collect(run, opts.include_warmup, opts.top_n)?;
    let mut body = String::new();
    let mut svgs = Vec::new();
    let _ = write!(
        body,
        "<header><h1>dbscope report</h1><p class=\"sub\">{}</p></header>",
        escape(&rep.run.path)
    );
    body.push_str(&banner(&rep));
    body.push_str(&run_table(&rep));
    body.push_str(&settings_table(&rep));
    body.push_str(&summary_table(&rep));
    let (open_loop, open_loop_svgs) = openloop::run_section(&rep);
    body.push_str(&open_loop);
    svgs.extend(open_loop_svgs);
    for section in &rep.counters {
        body.push_str(&counters_section(section));
    }
    if let Some(o) = &rep.observe {
        body.push_str(&observe::section(o));
    }
    let label = run
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| rep.run.path.clone());
    let inputs = [Labelled {
        label,
        series: &series,
    }];
    for ev in &series.events {
        let _ = write!(
            body,
            "<section class=\"event\"><h2>{}</h2>",
            escape(&ev.name)
        );
        for (file, svg) in event_plots(&ev.name, &inputs, opts.top_n) {
            let _ = write!(body, "<figure>{svg}</figure>");
            svgs.push((file, svg));
        }
        body.push_str("</section>");
    }
    if series.events.is_empty() {
        body.push_str("<p class=\"empty\">No events recorded.</p>");
    }
    Ok(HtmlPage {
        html: page(&format!("dbscope report — {}", rep.run.path), &body),
        svgs: svgs
            .into_iter()
            .map(|(f, s)| (f, standalone_svg(&s)))
            .collect(),
    })
}

/// Builds the HTML report of a comparison of two runs: the verdicts first, then what differs between
/// the manifests, the summaries side by side, and every plot with A and B overlaid.
pub fn render_compare(
    a: &RunDir,
    b: &RunDir,
    cmp: &Comparison,
    opts: &HtmlOptions,
) -> dbscope_core::Result<HtmlPage> {
    let sa = data::collect(a, opts.include_warmup, opts.top_n)?;
    let sb = data::collect(b, opts.include_warmup, opts.top_n)?;
    let mut body = String::new();
    let elapsed = crate::compare::elapsed_line(cmp)
        .map(|l| format!("<br>{}", escape(&l)))
        .unwrap_or_default();
    let _ = write!(
        body,
        "<header><h1>dbscope compare</h1><p class=\"sub\">A = {}<br>B = {}{elapsed}</p></header>",
        escape(&cmp.a.path),
        escape(&cmp.b.path)
    );
    for (side, label) in [(&cmp.a, "A"), (&cmp.b, "B")] {
        if let Some(why) = &side.incomplete {
            let _ = write!(
                body,
                "<p class=\"banner warn\"><strong>{label} is incomplete:</strong> {}</p>",
                escape(why)
            );
        }
    }
    body.push_str(
        "<section><h2>Verdict</h2><table class=\"verdict\"><thead><tr><th>event</th><th>call</th><th>in words</th></tr></thead><tbody>",
    );
    for e in &cmp.events {
        let _ = write!(
            body,
            "<tr><td>{}</td><td class=\"call {}\">{}</td><td>{}</td></tr>",
            escape(&e.name),
            escape(&e.verdict.call),
            escape(&e.verdict.call),
            escape(&e.verdict.text)
        );
    }
    for sk in &cmp.skipped {
        let _ = write!(
            body,
            "<tr><td>{}</td><td>skipped</td><td>{}</td></tr>",
            escape(&sk.name),
            escape(&sk.reason)
        );
    }
    body.push_str("</tbody></table></section>");
    if !cmp.manifest_diff.is_empty() {
        body.push_str(
            "<section><h2>What differs between the runs</h2><table><thead><tr><th>field</th><th>A</th><th>B</th></tr></thead><tbody>",
        );
        for d in &cmp.manifest_diff {
            let _ = write!(
                body,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&d.field),
                escape(d.a.as_deref().unwrap_or("—")),
                escape(d.b.as_deref().unwrap_or("—"))
            );
        }
        body.push_str("</tbody></table></section>");
    }
    body.push_str(
        "<section><h2>Summary (µs)</h2><table class=\"num\"><thead><tr><th>event</th><th>run</th><th>n</th>\
         <th>Min.</th><th>1st Qu.</th><th>Median</th><th>Mean</th><th>3rd Qu.</th><th>Max.</th><th>sd</th></tr></thead><tbody>",
    );
    for e in &cmp.events {
        for (label, sm) in [("A", &e.a), ("B", &e.b)] {
            let six = sm.summary.six();
            let _ = write!(
                body,
                "<tr><td>{}</td><td>{label}</td><td>{}</td>",
                escape(&e.name),
                format_num(sm.n as f64)
            );
            for v in dbscope_core::stats::format_r(&dbscope_core::stats::zapsmall(&six), 4) {
                let _ = write!(body, "<td>{}</td>", escape(v.trim()));
            }
            let _ = write!(body, "<td>{}</td></tr>", round_sig3(sm.sd));
        }
    }
    body.push_str("</tbody></table></section>");
    for section in &cmp.counters {
        body.push_str(&counters_comparison(section));
    }
    let (open_loop, open_loop_svgs) = openloop::compare_section(a, b, cmp)?;
    body.push_str(&open_loop);
    if let Some(o) = &cmp.observe {
        body.push_str(&observe::comparison(o));
    }
    let inputs = [
        Labelled {
            label: "A".into(),
            series: &sa,
        },
        Labelled {
            label: "B".into(),
            series: &sb,
        },
    ];
    let mut svgs: Vec<(String, String)> = open_loop_svgs
        .into_iter()
        .map(|(f, svg)| (f, standalone_svg(&svg)))
        .collect();
    for e in &cmp.events {
        let _ = write!(
            body,
            "<section class=\"event\"><h2>{}</h2>",
            escape(&e.name)
        );
        for (file, svg) in event_plots(&e.name, &inputs, opts.top_n) {
            let _ = write!(body, "<figure>{svg}</figure>");
            svgs.push((file, standalone_svg(&svg)));
        }
        body.push_str("</section>");
    }
    Ok(HtmlPage {
        html: page("dbscope compare", &body),
        svgs,
    })
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

    // Latency distribution: share of events per log-spaced bin, on a log x axis.
    let (mut lo, mut hi, mut ymax) = (f64::MAX, 0.0f64, 0.0f64);
    let mut series = Vec::new();
    for (slot, r, e) in &picked {
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

    // Percentile curve, p0 to p99.999, log latency.
    let mut series = Vec::new();
    let (mut lo, mut hi) = (f64::MAX, 0.0f64);
    for (slot, r, e) in &picked {
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

    // The top-N largest events, descending, linear scale (seed 001's "top 10,000 waits").
    let mut series = Vec::new();
    let (mut n_max, mut hi) = (1usize, 0.0f64);
    for (slot, r, e) in &picked {
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

    // Throughput and p99 over time.
    let mut tput = Vec::new();
    let mut p99 = Vec::new();
    let mut backlog = Vec::new();
    let mut backlog_max = 0.0f64;
    let (mut t_max, mut y_max, mut p_lo, mut p_hi) = (0.0f64, 0.0f64, f64::MAX, 0.0f64);
    let mut warmup = 0.0f64;
    for (slot, r, e) in &picked {
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
                label: "events per second".into(),
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
    out
}

/// The x axis of the time-series plots.
fn time_axis(t_max: f64) -> Axis {
    Axis {
        label: "time since start (s)".into(),
        scale: Scale::Linear,
        min: 0.0,
        max: t_max,
        format: format_num,
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

fn format_nines(n: f64) -> String {
    if n <= 0.0 {
        return "p0".into();
    }
    let q = 100.0 * (1.0 - 10f64.powf(-n));
    let s = format!("{q:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("p{s}")
}

fn decade_floor(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    10f64.powf(v.log10().floor())
}

fn decade_ceil(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 10.0;
    }
    let c = 10f64.powf(v.log10().ceil());
    if c <= v {
        c * 10.0
    } else {
        c
    }
}

/// A round upper bound a little above `v` (1, 2, 2.5, 5 × 10^k).
fn nice_max(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(v.log10().floor());
    [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|&m| m >= v * 1.05)
        .unwrap_or(10.0 * mag)
}

/// A file-name-safe version of an event name (`log file sync` → `log-file-sync`).
pub fn file_stem(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches('-').to_string();
    if s.is_empty() {
        "event".into()
    } else {
        s
    }
}

fn banner(rep: &Report) -> String {
    let mut s = String::new();
    if let Some(why) = &rep.incomplete {
        let _ = write!(
            s,
            "<p class=\"banner warn\"><strong>Incomplete:</strong> {}</p>",
            escape(why)
        );
    }
    let outcome = rep.run.outcome.as_str();
    if outcome == "interrupted" || outcome == "failed" {
        let _ = write!(
            s,
            "<p class=\"banner warn\"><strong>{}:</strong> {}</p>",
            escape(outcome),
            escape(rep.run.outcome_detail.as_deref().unwrap_or(""))
        );
    }
    s
}

fn row(s: &mut String, k: &str, v: &str) {
    let _ = write!(s, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
}

fn run_table(rep: &Report) -> String {
    let r = &rep.run;
    let mut s = String::from("<section><h2>Run</h2><table class=\"kv\">");
    row(&mut s, "outcome", r.outcome.as_str());
    let params: Vec<String> = r.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    row(
        &mut s,
        "workload",
        &format!("{} {} (seed {})", r.workload, params.join(" "), r.seed),
    );
    if let Some(t) = &r.target {
        row(
            &mut s,
            "target",
            &format!("{} {} — {}", t.kind, t.location, t.server_version),
        );
    }
    if let Some(rn) = &r.runner {
        let limit = match (rn.ops_per_session, rn.duration_s) {
            (Some(o), _) => format!("{o} ops per session"),
            (None, Some(d)) => format!("{d} s"),
            _ => String::new(),
        };
        row(
            &mut s,
            "runner",
            &format!(
                "{} sessions, {} loop, {limit}, warm-up {} s",
                rn.sessions, rn.mode, rn.warmup_s
            ),
        );
    }
    row(
        &mut s,
        "started",
        &format!(
            "{} UTC{}",
            r.started_utc.format("%Y-%m-%d %H:%M:%S"),
            r.elapsed_s
                .map(|e| format!(" + {e:.2} s"))
                .unwrap_or_default()
        ),
    );
    row(
        &mut s,
        "host",
        &format!(
            "{} — {} cpus, {:.1} GiB{}",
            r.host.uname,
            r.host.cpus,
            r.host.memory_bytes as f64 / (1u64 << 30) as f64,
            match r.host.cpu_summary() {
                c if c.is_empty() => String::new(),
                c => format!("; {c}"),
            }
        ),
    );
    row(
        &mut s,
        "dbscope",
        &format!("{} (run format {})", r.dbscope_version, r.format_version),
    );
    row(&mut s, "command", &r.command_line.join(" "));
    s.push_str("</table></section>");
    s
}

fn settings_table(rep: &Report) -> String {
    if rep.settings.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "<section><h2>Settings</h2><table><thead><tr><th>name</th><th>requested</th><th>effective</th></tr></thead><tbody>",
    );
    for st in &rep.settings {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&st.name),
            escape(st.requested.as_deref().unwrap_or("(default)")),
            escape(st.effective.as_deref().unwrap_or("—"))
        );
    }
    s.push_str("</tbody></table></section>");
    s
}

fn summary_table(rep: &Report) -> String {
    let mut s = String::from(
        "<section><h2>Summary (µs)</h2><table class=\"num\"><thead><tr><th>event</th><th>n</th><th>errors</th><th>per s</th>\
         <th>Min.</th><th>1st Qu.</th><th>Median</th><th>Mean</th><th>3rd Qu.</th><th>Max.</th>\
         <th>p90</th><th>p99</th><th>p99.9</th><th>p99.99</th></tr></thead><tbody>",
    );
    for e in &rep.events {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            escape(&e.name),
            format_num(e.count as f64),
            format_num(e.errors as f64),
            e.throughput_per_s
                .map(|t| format!("{t:.1}"))
                .unwrap_or_else(|| "—".into())
        );
        match (&e.summary_us, &e.percentiles_us) {
            (Some(sm), Some(p)) => {
                let six = sm.six();
                let formatted =
                    dbscope_core::stats::format_r(&dbscope_core::stats::zapsmall(&six), 4);
                for v in formatted {
                    let _ = write!(s, "<td>{}</td>", escape(v.trim()));
                }
                for v in [p.p90, p.p99, p.p99_9, p.p99_99] {
                    let _ = write!(s, "<td>{}</td>", round_sig3(v));
                }
            }
            _ => s.push_str("<td colspan=\"10\">no successful events</td>"),
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    // A starved session is said plainly (issue 13: SQLite's busy handler can leave a session with
    // one operation while another does thousands).
    for e in &rep.events {
        let Some(sp) = e.sessions.as_ref().filter(|sp| !sp.starved.is_empty()) else {
            continue;
        };
        let who: Vec<String> = sp
            .starved
            .iter()
            .map(|x| format!("session {x} ({})", format_num(sp.per_session[x] as f64)))
            .collect();
        let _ = write!(
            s,
            "<p class=\"banner warn\"><strong>{}: starved sessions:</strong> {} did fewer than a \
             tenth of the mean session's events ({} sessions, per session min {}, max {}, fairness \
             (Jain) {:.2}).</p>",
            escape(&e.name),
            escape(&who.join(", ")),
            sp.per_session.len(),
            format_num(sp.min as f64),
            format_num(sp.max as f64),
            sp.fairness
        );
    }
    s.push_str("</section>");
    s
}

/// A run-level counter section: its counters as a two-column table, each of its tables, its notes.
fn counters_section(sec: &CounterSection) -> String {
    let title = if sec.title.is_empty() {
        &sec.key
    } else {
        &sec.title
    };
    let mut s = format!("<section><h2>{}</h2>", escape(title));
    if !sec.counters.is_empty() {
        s.push_str("<table class=\"kv\">");
        for c in &sec.counters {
            row(
                &mut s,
                &counters::heading(&c.label, &c.unit),
                &counters::value_text(&c.value, c.decimals),
            );
        }
        s.push_str("</table>");
    }
    for t in &sec.tables {
        if !t.title.is_empty() {
            let _ = write!(s, "<h3>{}</h3>", escape(&t.title));
        }
        s.push_str("<table class=\"num\"><thead><tr>");
        for c in &t.columns {
            let _ = write!(
                s,
                "<th>{}</th>",
                escape(&counters::heading(&c.label, &c.unit))
            );
        }
        s.push_str("</tr></thead><tbody>");
        for r in &t.rows {
            s.push_str("<tr>");
            for (i, c) in t.columns.iter().enumerate() {
                let v = r.get(i).cloned().unwrap_or_default();
                let _ = write!(
                    s,
                    "<td>{}</td>",
                    escape(&counters::value_text(&v, c.decimals))
                );
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table>");
    }
    for n in &sec.notes {
        let _ = write!(s, "<p>{}</p>", escape(n));
    }
    if !sec.final_counts {
        let _ = write!(s, "<p>{}.</p>", escape(counters::SNAPSHOT_NOTE));
    }
    s.push_str("</section>");
    s
}

/// A counter section both compared runs have: A, B, B − A and the change per numeric counter.
fn counters_comparison(c: &SectionComparison) -> String {
    let mut s = format!(
        "<section><h2>{}: B against A</h2><table class=\"num\"><thead><tr><th>counter</th><th>A</th>\
         <th>B</th><th>B − A</th><th>change</th></tr></thead><tbody>",
        escape(&c.title)
    );
    for k in &c.counters {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&counters::heading(&k.label, &k.unit)),
            escape(&counters::value_text(&k.a, k.decimals)),
            escape(&counters::value_text(&k.b, k.decimals)),
            escape(&counters::signed_text(&k.diff, k.decimals)),
            escape(&counters::pct_text(k.pct))
        );
    }
    s.push_str("</tbody></table>");
    for (side, fin) in ["A", "B"].iter().zip(c.final_counts) {
        if !fin {
            let _ = write!(s, "<p>{side}: {}.</p>", escape(counters::SNAPSHOT_NOTE));
        }
    }
    s.push_str("</section>");
    s
}

/// Wraps an inline SVG as a standalone document with its own style sheet.
fn standalone_svg(svg: &str) -> String {
    let end = svg.find('>').map(|i| i + 1).unwrap_or(0);
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}<style>{SVG_CSS}</style>{}\n",
        &svg[..end],
        &svg[end..]
    )
}

const SVG_CSS: &str = "svg{font-family:sans-serif;font-size:12px;background:#fff}.title{font-weight:600;font-size:14px}.grid{stroke:#ddd}.axis{stroke:#333}\
.tick,.axis-label,.legend text,.shade-label{fill:#333}.series{fill:none;stroke-width:1.6}\
.s0{stroke:#1f6fd1}.s1{stroke:#d1561f}.s2{stroke:#2a9d4b;stroke-dasharray:5 3}.s3{stroke:#777;stroke-dasharray:5 3}.shade{fill:#999;opacity:.15}";

/// The page: inline CSS only (light, dark, print); no scripts, no external resources.
pub fn page(title: &str, body: &str) -> String {
    format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>{}</title>
<style>{PAGE_CSS}</style>
</head>
<body>
{body}
<footer>Made by dbscope {}. Plots are drawn from aggregated data: HDR histograms (3 significant digits), the largest events, and per-interval counts.</footer>
</body>
</html>
"#,
        escape(title),
        env!("CARGO_PKG_VERSION")
    )
}

const PAGE_CSS: &str = r#"
:root{--fg:#1b1f24;--muted:#5b6470;--bg:#fff;--grid:#e3e6ea;--axis:#3a4048;--a:#1f6fd1;--b:#d1561f;--c:#2a9d4b;--warn:#fff4d6;--warnb:#e0b000}
@media (prefers-color-scheme: dark){:root{--fg:#e6e9ed;--muted:#9aa4b0;--bg:#14171b;--grid:#2b3139;--axis:#c3c9d0;--a:#6aa8ff;--b:#ff9a5c;--c:#6fd38c;--warn:#3a3000;--warnb:#b08a00}}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg);max-width:1100px;margin:1.5rem auto;padding:0 1rem}
h1{font-size:1.5rem;margin:.2rem 0} h2{font-size:1.15rem;margin:1.4rem 0 .5rem} .sub{color:var(--muted);margin:0}
table{border-collapse:collapse;margin:.3rem 0;font-variant-numeric:tabular-nums} th,td{padding:.2rem .6rem;border-bottom:1px solid var(--grid);text-align:left;vertical-align:top}
table.num td:not(:first-child),table.num th:not(:first-child){text-align:right} table.kv th{color:var(--muted);font-weight:500;white-space:nowrap}
td{overflow-wrap:anywhere} table.num td:not(:first-child){white-space:nowrap;overflow-wrap:normal} table.num th{white-space:nowrap}
.banner{padding:.5rem .8rem;border-left:4px solid var(--warnb);background:var(--warn)}
figure{margin:.8rem 0} svg.plot{width:100%;height:auto;max-width:900px;font-size:12px}
svg .title{font-weight:600;font-size:14px;fill:var(--fg)} svg .grid{stroke:var(--grid)} svg .axis{stroke:var(--axis)}
svg .tick,svg .axis-label,svg .legend text,svg .shade-label{fill:var(--fg)} svg .shade{fill:var(--muted);opacity:.15}
svg .series{fill:none;stroke-width:1.6} svg .s0{stroke:var(--a)} svg .s1{stroke:var(--b)} svg .s2{stroke:var(--c)} svg .s3{stroke:var(--muted)} svg .s2,svg .s3{stroke-dasharray:5 3}
table.verdict td:nth-child(-n+2){white-space:nowrap} td.call.slower{color:var(--b);font-weight:600} td.call.faster{color:var(--c);font-weight:600}
footer{color:var(--muted);font-size:.85rem;margin-top:2rem}
@media print{body{max-width:none;margin:0;color:#000;background:#fff} section.event{break-inside:avoid} figure{break-inside:avoid}}
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use dbscope_core::fake::FakeRun;
    use dbscope_core::{Event, HostInfo, Manifest, Outcome, WorkloadInfo};

    /// A run with fixed facts and hand-made events, so its report is the same on every machine.
    fn fixed_run(dir: &std::path::Path) -> RunDir {
        let mut m = Manifest::new(
            "workload",
            WorkloadInfo {
                name: "commit".into(),
                params: Default::default(),
            },
            7,
        );
        m.host = HostInfo {
            uname: "Linux test 6.1 x86_64".into(),
            hostname: "test".into(),
            cpus: 2,
            memory_bytes: 8 << 30,
            ..HostInfo::default()
        };
        m.started_utc = chrono::DateTime::from_timestamp(1_796_233_530, 0).unwrap();
        m.ended_utc = Some(chrono::DateTime::from_timestamp(1_796_233_533, 0).unwrap());
        m.clock_origin_unix_ns = 1_796_233_530_000_000_000;
        m.command_line = vec!["dbscope".into(), "run".into(), "commit".into()];
        m.outcome = Outcome::Complete;
        m.runner = Some(dbscope_core::RunnerInfo {
            sessions: 2,
            ops_per_session: Some(60),
            duration_s: None,
            warmup_s: 0.5,
            max_errors: 10,
            mode: "closed".into(),
            threads: None,
        });
        let mut w = FakeRun::with_manifest(dir, m);
        let (u, c) = (w.name("update"), w.name("<commit>"));
        let evs: Vec<Event> = (0..120u64)
            .map(|i| Event {
                session: (i % 2) as u32,
                name: if i % 2 == 0 { u } else { c },
                start_ns: i * 25_000_000,
                duration_ns: 50_000 + (i * 7919 % 97) * 10_000,
                flags: if i < 20 {
                    dbscope_core::EVENT_WARMUP
                } else {
                    0
                },
                ..Event::default()
            })
            .collect();
        w.block(&evs);
        w.finish()
    }

    #[test]
    fn run_report_html_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let run = fixed_run(&dir.path().join("fixed-run"));
        let page = render_run(
            &run,
            &HtmlOptions {
                include_warmup: false,
                top_n: 50,
            },
        )
        .unwrap();
        let html = page.html.replace(&run.path.display().to_string(), "RUN");
        assert_eq!(page.svgs.len(), 10);
        assert!(html.contains("&lt;commit&gt;") && !html.contains("<commit>"));
        insta::assert_snapshot!("run_report", html);
    }

    #[test]
    fn issue_13_the_top_plot_says_how_many_it_shows() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = FakeRun::new(&dir.path().join("r"));
        let c = f.name("commit");
        let evs: Vec<Event> = (0..37)
            .map(|i| FakeRun::event(c, 0, i * 1_000_000, 20_000 + i * 1_000))
            .collect();
        f.block(&evs);
        let page = render_run(&f.finish(), &HtmlOptions::default()).unwrap();
        assert!(page.html.contains("commit: the 37 largest, descending"));
        assert!(!page.html.contains("10,000 largest"));
    }

    #[test]
    fn helpers() {
        assert_eq!(format_nines(0.0), "p0");
        assert_eq!(format_nines(2.0), "p99");
        assert_eq!(format_nines(5.0), "p99.999");
        assert_eq!(decade_floor(350.0), 100.0);
        assert_eq!(decade_ceil(350.0), 1000.0);
        assert_eq!(decade_ceil(1000.0), 10000.0);
        assert_eq!(nice_max(7.3), 8.0);
        assert_eq!(file_stem("log file sync"), "log-file-sync");
        assert_eq!(file_stem("\"><img>"), "img");
    }

    #[test]
    fn counter_sections_become_tables() {
        let dir = tempfile::tempdir().unwrap();
        let fake = |name: &str, commits: i64| {
            let mut f = FakeRun::new(&dir.path().join(name));
            let c = f.name("commit");
            let evs: Vec<Event> = (0..5)
                .map(|i| FakeRun::event(c, 0, i * 1_000_000, 20_000 + i * 1_000))
                .collect();
            f.block(&evs);
            let mut sec = crate::counters::tests::section(commits, 3.0, name == "a");
            sec.title = "redo <log> writer".into();
            f.counters(sec);
            f.finish()
        };
        let (a, b) = (fake("a", 1200), fake("b", 1500));
        let page = render_run(&a, &HtmlOptions::default()).unwrap();
        let html = &page.html;
        let at = html
            .find("<h2>redo &lt;log&gt; writer</h2>")
            .expect("section title");
        assert!(
            at > html.find("<h2>Summary (µs)</h2>").unwrap(),
            "after the summary"
        );
        assert!(html.contains("<tr><th>commits per write</th><td>3.00</td></tr>"));
        assert!(html.contains("<tr><th>rate (MB/s)</th><td>1,234.5</td></tr>"));
        assert!(html.contains("<h3>per destination</h3><table class=\"num\"><thead><tr><th>name</th><th>writes</th><th>p99 (µs)</th></tr></thead><tbody><tr><td>fast</td><td>1,200</td><td>45.2</td></tr>"));
        assert!(!html.contains("snapshot"), "A's counters are final");
        let page = render_run(&b, &HtmlOptions::default()).unwrap();
        assert!(page
            .html
            .contains("<p>counters are a snapshot taken while the run was going.</p>"));

        let cmp = crate::compare::compare(&a, &b, &Default::default()).unwrap();
        let page = render_compare(&a, &b, &cmp, &HtmlOptions::default()).unwrap();
        let html = &page.html;
        assert!(
            html.contains("<h2>redo &lt;log&gt; writer: B against A</h2>"),
            "{html}"
        );
        assert!(html.contains(
            "<tr><td>commits</td><td>1,200</td><td>1,500</td><td>+300</td><td>+25.0%</td></tr>"
        ));
        assert!(html.contains("<p>B: counters are a snapshot"));
    }
}
