//! A sweep's library side (issue 15 part 4): the points (one run at one session count each),
//! the Universal Scalability Law fitted to their throughputs ([`crate::usl`]), the `usl` counters
//! section that `report` shows, `sweep.json`, and the text table. Running the points is the
//! front end's (`dbscope sweep`).

use std::path::Path;

use dbscope_core::{Column, Counter, CounterSection, CounterTable, CounterValue};
use serde::Serialize;

use crate::report::Report;
use crate::usl::{self, UslFit};

/// What heads a sweep's points: the event whose latency each point reports, and where its
/// throughput comes from (issue 34 item 11: `events` counts committed events, not commits;
/// `io redo` the megabytes its writes put on the log).
#[derive(Clone, Debug)]
pub struct Headline {
    /// The event whose latency (and, with [`Rate::Events`], throughput) heads each point.
    pub event: String,
    /// Where each point's throughput comes from.
    pub rate: Rate,
}

/// Where a point's throughput is read.
#[derive(Clone, Debug)]
pub enum Rate {
    /// The headline event's successful events per second.
    Events,
    /// A run-level counter: `section`'s `key`, in `unit` (events: committed ev/s).
    Counter {
        /// Counter section key.
        section: String,
        /// Counter key.
        key: String,
        /// Its unit, e.g. `ev/s`.
        unit: String,
    },
    /// The largest value of one column of a run-level counter table (io redo: MB/s per
    /// destination, the faster one when two race).
    TableMax {
        /// Counter section key.
        section: String,
        /// Table key.
        table: String,
        /// Column key.
        column: String,
        /// Its unit, e.g. `MB/s`.
        unit: String,
    },
}

impl Headline {
    /// A headline of `event`'s own throughput, as `commit`, `lookup`, `q1` sweeps have.
    pub fn event(event: &str) -> Headline {
        Headline {
            event: event.to_string(),
            rate: Rate::Events,
        }
    }

    /// The throughput's unit: `commit/s`, `ev/s`, `MB/s`.
    pub fn unit(&self) -> String {
        match &self.rate {
            Rate::Events => format!("{}/s", self.event),
            Rate::Counter { unit, .. } | Rate::TableMax { unit, .. } => unit.clone(),
        }
    }

    /// The unit after a number: `/s` for an event's own rate (`1000.0/s`), else ` ev/s`.
    fn per(&self) -> String {
        match &self.rate {
            Rate::Events => "/s".into(),
            _ => format!(" {}", self.unit()),
        }
    }

    /// The throughput of a run whose report is `report`.
    fn throughput(&self, report: &Report) -> Option<f64> {
        let num = |v: &CounterValue| match v {
            CounterValue::Int(n) => Some(*n as f64),
            CounterValue::Float(f) if f.is_finite() => Some(*f),
            _ => None,
        };
        let section = |key: &str| report.counters.iter().find(|s| s.key == key);
        match &self.rate {
            Rate::Events => report
                .events
                .iter()
                .find(|e| e.name == self.event)
                .and_then(|e| e.throughput_per_s),
            Rate::Counter {
                section: sk, key, ..
            } => section(sk)?
                .counters
                .iter()
                .find(|c| &c.key == key)
                .and_then(|c| num(&c.value)),
            Rate::TableMax {
                section: sk,
                table,
                column,
                ..
            } => {
                let t = section(sk)?.tables.iter().find(|t| &t.key == table)?;
                let i = t.columns.iter().position(|c| &c.key == column)?;
                t.rows
                    .iter()
                    .filter_map(|r| r.get(i).and_then(num))
                    .reduce(f64::max)
            }
        }
    }
}

/// One point of a sweep: a run at one session count.
#[derive(Debug, Serialize)]
pub struct Point {
    /// Sessions.
    pub sessions: u32,
    /// Repeat number, from 1.
    pub repeat: u32,
    /// The point's run directory.
    pub run: String,
    /// The headline event (`commit`, `lookup`, `q1`, …).
    pub event: String,
    /// Successful headline events measured.
    pub count: u64,
    /// Failed headline events.
    pub errors: u64,
    /// Throughput over the measured span, in [`Point::unit`] (the headline event's per second
    /// unless the workload counts its work otherwise).
    pub throughput_per_s: Option<f64>,
    /// The throughput's unit (`commit/s`, `ev/s`, `MB/s`).
    pub unit: String,
    /// Median latency, µs.
    pub median_us: Option<f64>,
    /// 90th percentile, µs.
    pub p90_us: Option<f64>,
    /// 99th percentile, µs.
    pub p99_us: Option<f64>,
    /// Throughput the fit predicts at this session count.
    pub fitted_per_s: Option<f64>,
}

/// What `sweep.json` holds.
#[derive(Debug, Serialize)]
pub struct SweepResult<'a> {
    /// The workload.
    pub workload: &'a str,
    /// The session counts asked for.
    pub sessions: &'a [u32],
    /// Runs per session count.
    pub repeat: u32,
    /// The points run.
    pub points: &'a [Point],
    /// The fit.
    pub fit: Option<&'a UslFit>,
    /// Why there is no fit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fit_error: Option<String>,
}

/// The headline's figures of one point run, from its report; `run` is its directory.
pub fn point(
    report: &Report,
    sessions: u32,
    repeat: u32,
    run: String,
    headline: &Headline,
) -> Point {
    let e = report.events.iter().find(|e| e.name == headline.event);
    Point {
        sessions,
        repeat,
        run,
        event: headline.event.clone(),
        count: e.map_or(0, |e| e.count),
        errors: e.map_or(0, |e| e.errors),
        throughput_per_s: headline.throughput(report),
        unit: headline.unit(),
        median_us: e.and_then(|e| e.summary_us.map(|s| s.median)),
        p90_us: e.and_then(|e| e.percentiles_us.map(|p| p.p90)),
        p99_us: e.and_then(|e| e.percentiles_us.map(|p| p.p99)),
        fitted_per_s: None,
    }
}

/// Fits the USL to the points' throughputs and sets each point's fitted throughput; the fit, or
/// why there is none.
pub fn fit(points: &mut [Point]) -> (Option<UslFit>, Option<String>) {
    let xy: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|p| Some((p.sessions as f64, p.throughput_per_s?)))
        .collect();
    let (fit, fit_error) = match usl::fit(&xy) {
        Ok(f) => (Some(f), None),
        Err(e) => (None, Some(e.to_string())),
    };
    if let Some(f) = &fit {
        for p in points.iter_mut() {
            p.fitted_per_s = Some(f.predict(p.sessions as f64));
        }
    }
    (fit, fit_error)
}

/// Counters section `usl`: the fit and the measured-vs-fitted table, for `report`.
pub fn section(
    points: &[Point],
    fit: Option<&UslFit>,
    fit_error: Option<&str>,
    headline: &Headline,
) -> CounterSection {
    // Counters print their unit after the number: `/s` for an event's own rate, as before.
    let unit = headline.per();
    let unit = unit.trim_start();
    let mut counters = Vec::new();
    let mut notes = Vec::new();
    if let Some(f) = fit {
        counters.extend([
            Counter::new(
                "lambda",
                "λ (one session)",
                CounterValue::Float(f.lambda),
                unit,
            )
            .decimals(1),
            Counter::new("sigma", "σ (contention)", CounterValue::Float(f.sigma), "").decimals(6),
            Counter::new("kappa", "κ (coherency)", CounterValue::Float(f.kappa), "").decimals(8),
            Counter::new("peak_n", "peak at N", CounterValue::float(f.peak_n), "").decimals(1),
            Counter::new(
                "peak_per_s",
                "peak throughput",
                CounterValue::float(f.peak_x),
                unit,
            )
            .decimals(1),
            Counter::new("r_squared", "R²", CounterValue::float(f.r_squared), "").decimals(4),
        ]);
        notes.extend(f.notes.iter().cloned());
    }
    if let Some(e) = fit_error {
        notes.push(format!("no fit: {e}"));
    }
    let rows = points
        .iter()
        .map(|p| {
            vec![
                CounterValue::count(p.sessions as u64),
                CounterValue::count(p.repeat as u64),
                CounterValue::float(p.throughput_per_s),
                CounterValue::float(p.fitted_per_s),
                CounterValue::float(p.median_us),
                CounterValue::float(p.p99_us),
                CounterValue::count(p.errors),
                CounterValue::Text(p.run.clone()),
            ]
        })
        .collect();
    CounterSection {
        key: "usl".into(),
        title: format!(
            "Scalability (USL fit of {}, {} latency): X(N) = λN / (1 + σ(N−1) + κN(N−1))",
            headline.unit(),
            headline.event
        ),
        final_counts: true,
        counters,
        tables: vec![CounterTable {
            key: "points".into(),
            title: "measured vs fitted".into(),
            columns: vec![
                Column::new("sessions", "sessions", ""),
                Column::new("repeat", "repeat", ""),
                Column::new("measured_per_s", "measured", unit).decimals(1),
                Column::new("fitted_per_s", "fitted", unit).decimals(1),
                Column::new("median_us", "median", "µs").decimals(1),
                Column::new("p99_us", "p99", "µs").decimals(1),
                Column::new("errors", "errors", ""),
                Column::new("run", "run", ""),
            ],
            rows,
        }],
        notes,
    }
}

fn opt(v: Option<f64>, d: usize) -> String {
    v.map_or_else(|| "-".into(), |v| crate::text::thousands_fixed(v, d))
}

/// The sweep as text: the points measured vs fitted, the fit, where to look next.
pub fn render_text(
    out: &Path,
    workload: &str,
    headline: &Headline,
    points: &[Point],
    fit: Option<&UslFit>,
    fit_error: Option<&str>,
) -> String {
    let unit = headline.unit();
    let per = headline.per();
    let mut s = format!(
        "sweep {} ({workload}, {unit} and {} latency per session count)\n\n",
        out.display(),
        headline.event
    );
    // The unit heads the throughput columns when it is not the plain `/s`.
    let (measured, fitted) = match &headline.rate {
        Rate::Events => ("measured/s".to_string(), "fitted/s".to_string()),
        _ => (format!("meas. {unit}"), format!("fitted {unit}")),
    };
    s.push_str(&format!(
        "{:>8} {:>6} {:>12} {:>12} {:>8} {:>11} {:>11} {:>7}\n",
        "sessions", "repeat", measured, fitted, "diff %", "median µs", "p99 µs", "errors"
    ));
    for p in points {
        let diff = match (p.throughput_per_s, p.fitted_per_s) {
            (Some(m), Some(f)) if m > 0.0 => Some(100.0 * (f - m) / m),
            _ => None,
        };
        s.push_str(&format!(
            "{:>8} {:>6} {:>12} {:>12} {:>8} {:>11} {:>11} {:>7}\n",
            p.sessions,
            p.repeat,
            opt(p.throughput_per_s, 1),
            opt(p.fitted_per_s, 1),
            opt(diff, 1),
            opt(p.median_us, 1),
            opt(p.p99_us, 1),
            p.errors
        ));
    }
    s.push('\n');
    match (fit, fit_error) {
        (Some(f), _) => {
            s.push_str(&format!(
                "USL fit: λ = {}{per}  σ = {:.6}  κ = {:.8}  R² = {}\n",
                crate::text::thousands_fixed(f.lambda, 1),
                f.sigma,
                f.kappa,
                opt(f.r_squared, 4)
            ));
            if let (Some(n), Some(x)) = (f.peak_n, f.peak_x) {
                s.push_str(&format!(
                    "peak: {}{per} at N = {n:.1} sessions\n",
                    crate::text::thousands_fixed(x, 1)
                ));
            }
            for n in &f.notes {
                s.push_str(&format!("note: {n}\n"));
            }
        }
        (None, Some(e)) => s.push_str(&format!("no USL fit: {e}\n")),
        (None, None) => {}
    }
    s.push_str(&format!(
        "see: dbscope report {}  (points in {}/points)\n",
        out.display(),
        out.display()
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(sessions: u32, x: f64) -> Point {
        Point {
            sessions,
            repeat: 1,
            run: format!("sweep/points/s{sessions:04}-r1"),
            event: "commit".into(),
            count: 100,
            errors: 0,
            throughput_per_s: Some(x),
            unit: "commit/s".into(),
            median_us: Some(10.0),
            p90_us: Some(20.0),
            p99_us: Some(30.0),
            fitted_per_s: None,
        }
    }

    #[test]
    fn the_fit_fills_in_each_points_prediction() {
        let mut points: Vec<Point> = [(1, 1000.0), (2, 1900.0), (4, 3400.0), (8, 5000.0)]
            .into_iter()
            .map(|(n, x)| p(n, x))
            .collect();
        let (f, e) = fit(&mut points);
        assert!(f.is_some() && e.is_none(), "{e:?}");
        assert!(points.iter().all(|p| p.fitted_per_s.is_some()));
        let h = Headline::event("commit");
        let s = section(&points, f.as_ref(), None, &h);
        assert_eq!(s.key, "usl");
        assert_eq!(s.tables[0].rows.len(), 4);
        let t = render_text(Path::new("sweep"), "commit", &h, &points, f.as_ref(), None);
        assert!(
            t.contains("USL fit: λ = ") && t.contains("see: dbscope report sweep"),
            "{t}"
        );
    }

    #[test]
    fn one_level_has_no_fit_and_says_why() {
        let mut points = vec![p(2, 1000.0), p(2, 1010.0)];
        let (f, e) = fit(&mut points);
        assert!(f.is_none());
        let e = e.expect("why there is no fit");
        let t = render_text(
            Path::new("s"),
            "commit",
            &Headline::event("commit"),
            &points,
            None,
            Some(&e),
        );
        assert!(t.contains("no USL fit"), "{t}");
        assert!(points.iter().all(|p| p.fitted_per_s.is_none()));
    }
}
