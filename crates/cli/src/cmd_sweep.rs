//! `dbscope sweep --sessions 1,2,4 -- run WORKLOAD …`: the workload at each concurrency, every
//! point an ordinary run under the sweep directory, and the Universal Scalability Law fitted to
//! the throughputs (issue 15 part 4). The sweep directory is itself a run: one `point` event per
//! point run and counters section `usl`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{anyhow, Context};
use clap::Parser;
use dbscope_analysis::report::{self, ReportOptions};
use dbscope_analysis::usl::{self, UslFit};
use dbscope_core::{
    Column, Counter, CounterSection, CounterTable, CounterValue, Event, Manifest, Outcome,
    Recording, RunDir, WorkloadInfo,
};
use serde::Serialize;

use crate::args::{Cli, Command, RunArgs, WorkloadName};
use crate::common::{default_run_dir, redacted_command_line, stop_signal};
use crate::exit::{Exit, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE};
use crate::sweep_args::SweepArgs;

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
    /// Headline events per second over the measured span.
    pub throughput_per_s: Option<f64>,
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
struct SweepResult<'a> {
    workload: &'a str,
    sessions: &'a [u32],
    repeat: u32,
    points: &'a [Point],
    fit: Option<&'a UslFit>,
    /// Why there is no fit.
    #[serde(skip_serializing_if = "Option::is_none")]
    fit_error: Option<String>,
}

/// The `run …` words after `--` as run arguments; clap's own message when they do not parse.
fn parse_run(words: &[String]) -> Result<RunArgs, Exit> {
    if words.first().map(String::as_str) != Some("run") {
        return Err(anyhow!(
            "sweep runs `run WORKLOAD [args…]` after --; got {:?}",
            words.join(" ")
        )
        .into());
    }
    let argv = std::iter::once("dbscope".to_string()).chain(words.iter().cloned());
    let cli = Cli::try_parse_from(argv).map_err(|e| {
        let text = e.to_string();
        let first = text.lines().next().unwrap_or_default();
        let first = first.strip_prefix("error: ").unwrap_or(first);
        let rest: Vec<&str> = text
            .lines()
            .skip(1)
            .filter(|l| l.trim_start().starts_with("[possible values") || l.contains("tip:"))
            .map(str::trim)
            .collect();
        anyhow!("after --: {first} {}", rest.join(" "))
    })?;
    match cli.command {
        Command::Run(a) => Ok(*a),
        _ => unreachable!("the first word is `run`"),
    }
}

fn workload_name(w: WorkloadName) -> (&'static str, &'static str) {
    // (workload, headline event): the event whose throughput the sweep fits.
    match w {
        WorkloadName::Commit => ("commit", "commit"),
        WorkloadName::TpchQ1 => ("tpch-q1", "q1"),
        WorkloadName::Events => ("events", "commit"),
        WorkloadName::Lookup => ("lookup", "lookup"),
        WorkloadName::Bulkload => ("bulkload", "load"),
    }
}

pub fn cmd_sweep(a: SweepArgs) -> Result<u8, Exit> {
    let first = parse_run(&a.run)?;
    if first.out.is_some() {
        return Err(anyhow!(
            "--out after --: the sweep places each point's run itself (use sweep --out)"
        )
        .into());
    }
    if a.run
        .iter()
        .any(|w| w == "--sessions" || w == "-s" || w.starts_with("--sessions="))
    {
        return Err(anyhow!(
            "--sessions after --: the sweep sets each point's sessions (sweep --sessions 1,2,4)"
        )
        .into());
    }
    if matches!(first.workload, WorkloadName::Events) {
        return Err(anyhow!("the events workload sets its concurrency with --clients/--connections; sweep runs commit, lookup, tpch-q1 and bulkload").into());
    }
    let (workload, headline) = workload_name(first.workload);
    let out = match &a.out {
        Some(p) => p.clone(),
        None => default_run_dir(&format!("sweep-{workload}"))?,
    };
    if out.join(dbscope_core::run::MANIFEST_FILE).exists() {
        return Err(anyhow!(
            "{} already holds a run; choose another --out",
            out.display()
        )
        .into());
    }

    let params = BTreeMap::from([
        ("workload".to_string(), workload.into()),
        ("sessions".to_string(), serde_json::json!(a.sessions)),
        ("repeat".to_string(), a.repeat.into()),
        (
            "run".to_string(),
            serde_json::json!(a
                .run
                .iter()
                .map(|w| dbscope_core::redact::redact(w))
                .collect::<Vec<_>>()),
        ),
    ]);
    let mut manifest = Manifest::new(
        "sweep",
        WorkloadInfo {
            name: "sweep".into(),
            params,
        },
        first.seed,
    );
    manifest.command_line = redacted_command_line();
    let mut rec = Recording::begin(&out, manifest)?;
    let clock = rec.start_clock()?;
    let point_name = rec.names().intern("point");

    let mut points: Vec<Point> = Vec::new();
    let mut outcome = (Outcome::Complete, None);
    'sweep: for &n in &a.sessions {
        for k in 1..=a.repeat {
            let dir = out.join("points").join(format!("s{n:04}-r{k}"));
            let mut run = parse_run(&a.run)?;
            run.sessions = n;
            run.out = Some(dir.clone());
            run.quiet = true;
            if !a.json {
                eprintln!(
                    "dbscope: sweep: {n} session(s), repeat {k}: {}",
                    dir.display()
                );
            }
            let t0 = clock.now_ns();
            let started = Instant::now();
            let code = crate::cmd_run::plan::build(&run)
                .and_then(|p| crate::cmd_run::run(&p, crate::cmd_run::Show::Silent));
            let code = code.map_err(|Exit(c, e)| {
                Exit(
                    c,
                    e.context(format!("sweep point {n} session(s), repeat {k}")),
                )
            });
            let code = match code {
                Ok(c) => c,
                Err(e) => {
                    if points.is_empty() && !dir.join(dbscope_core::run::MANIFEST_FILE).exists() {
                        // The very first point could not start: bad input, nothing measured.
                        let _ = rec.finish(Outcome::Failed, Some(format!("{:#}", e.1)));
                        return Err(e);
                    }
                    outcome = (
                        Outcome::Failed,
                        Some(format!("point {n} session(s), repeat {k}: {:#}", e.1)),
                    );
                    break 'sweep;
                }
            };
            let elapsed = started.elapsed().as_nanos() as u64;
            let point = read_point(&dir, n, k, headline)?;
            let ev = Event {
                session: n,
                name: point_name,
                start_ns: t0,
                duration_ns: elapsed.max(1),
                intended_start_ns: None,
                outcome: if code == 0 {
                    0
                } else {
                    rec.names().intern_outcome("point-failed")
                },
                flags: 0,
                rows: point.count.min(u32::MAX as u64) as u32,
            };
            rec.write_block(&[ev])?;
            points.push(point);
            if code == EXIT_INTERRUPTED || stop_signal().is_set() {
                outcome = (
                    Outcome::Interrupted,
                    Some(format!("interrupted at {n} session(s)")),
                );
                break 'sweep;
            }
            if code != 0 {
                outcome = (
                    Outcome::Failed,
                    Some(format!(
                        "the run at {n} session(s), repeat {k} did not complete: see {}",
                        dir.display()
                    )),
                );
                break 'sweep;
            }
        }
    }

    let xy: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|p| Some((p.sessions as f64, p.throughput_per_s?)))
        .collect();
    let (fit, fit_error) = match usl::fit(&xy) {
        Ok(f) => (Some(f), None),
        Err(e) => (None, Some(e.to_string())),
    };
    if let Some(f) = &fit {
        for p in &mut points {
            p.fitted_per_s = Some(f.predict(p.sessions as f64));
        }
    }
    let result = SweepResult {
        workload,
        sessions: &a.sessions,
        repeat: a.repeat,
        points: &points,
        fit: fit.as_ref(),
        fit_error: fit_error.clone(),
    };
    let json = serde_json::to_string_pretty(&result).context("sweep result as JSON")?;
    dbscope_core::atomic::write_atomic(&out.join("sweep.json"), format!("{json}\n").as_bytes())?;
    rec.write_counters(section(
        &points,
        fit.as_ref(),
        fit_error.as_deref(),
        headline,
    ))?;
    let (oc, detail) = outcome;
    rec.finish(oc, detail.clone())?;

    let mut stdout = std::io::stdout().lock();
    if a.json {
        writeln!(stdout, "{json}")?;
    } else {
        write!(
            stdout,
            "{}",
            render_text(
                &out,
                workload,
                headline,
                &points,
                fit.as_ref(),
                fit_error.as_deref()
            )
        )?;
    }
    if let Some(d) = detail {
        eprintln!(
            "dbscope: sweep {}: {d}; the sweep is kept in {}",
            oc.as_str(),
            out.display()
        );
    }
    Ok(crate::common::outcome_code(oc))
}

/// The headline event's figures of one point run.
fn read_point(dir: &Path, sessions: u32, repeat: u32, headline: &str) -> Result<Point, Exit> {
    let run = RunDir::open(dir).map_err(|e| Exit(EXIT_USAGE, e.into()))?;
    let r =
        report::build(&run, &ReportOptions::default()).map_err(|e| Exit(EXIT_FAILED, e.into()))?;
    let e = r.events.iter().find(|e| e.name == headline);
    Ok(Point {
        sessions,
        repeat,
        run: dir.display().to_string(),
        event: headline.to_string(),
        count: e.map_or(0, |e| e.count),
        errors: e.map_or(0, |e| e.errors),
        throughput_per_s: e.and_then(|e| e.throughput_per_s),
        median_us: e.and_then(|e| e.summary_us.map(|s| s.median)),
        p90_us: e.and_then(|e| e.percentiles_us.map(|p| p.p90)),
        p99_us: e.and_then(|e| e.percentiles_us.map(|p| p.p99)),
        fitted_per_s: None,
    })
}

/// Counters section `usl`: the fit and the measured-vs-fitted table, for `report`.
fn section(
    points: &[Point],
    fit: Option<&UslFit>,
    fit_error: Option<&str>,
    headline: &str,
) -> CounterSection {
    let mut counters = Vec::new();
    let mut notes = Vec::new();
    if let Some(f) = fit {
        counters.extend([
            Counter::new(
                "lambda",
                "λ (one session)",
                CounterValue::Float(f.lambda),
                "/s",
            )
            .decimals(1),
            Counter::new("sigma", "σ (contention)", CounterValue::Float(f.sigma), "").decimals(6),
            Counter::new("kappa", "κ (coherency)", CounterValue::Float(f.kappa), "").decimals(8),
            Counter::new("peak_n", "peak at N", CounterValue::float(f.peak_n), "").decimals(1),
            Counter::new(
                "peak_per_s",
                "peak throughput",
                CounterValue::float(f.peak_x),
                "/s",
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
        title: format!("Scalability (USL fit of {headline}/s): X(N) = λN / (1 + σ(N−1) + κN(N−1))"),
        final_counts: true,
        counters,
        tables: vec![CounterTable {
            key: "points".into(),
            title: "measured vs fitted".into(),
            columns: vec![
                Column::new("sessions", "sessions", ""),
                Column::new("repeat", "repeat", ""),
                Column::new("measured_per_s", "measured", "/s").decimals(1),
                Column::new("fitted_per_s", "fitted", "/s").decimals(1),
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
    v.map_or_else(|| "-".into(), |v| format!("{v:.d$}"))
}

fn render_text(
    out: &Path,
    workload: &str,
    headline: &str,
    points: &[Point],
    fit: Option<&UslFit>,
    fit_error: Option<&str>,
) -> String {
    let mut s = format!(
        "sweep {} ({workload}, {headline}/s per session count)\n\n",
        out.display()
    );
    s.push_str(&format!(
        "{:>8} {:>6} {:>12} {:>12} {:>8} {:>11} {:>11} {:>7}\n",
        "sessions", "repeat", "measured/s", "fitted/s", "diff %", "median µs", "p99 µs", "errors"
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
                "USL fit: λ = {:.1}/s  σ = {:.6}  κ = {:.8}  R² = {}\n",
                f.lambda,
                f.sigma,
                f.kappa,
                opt(f.r_squared, 4)
            ));
            if let (Some(n), Some(x)) = (f.peak_n, f.peak_x) {
                s.push_str(&format!("peak: {x:.1}/s at N = {n:.1} sessions\n"));
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

    #[test]
    fn parse_run_needs_run_and_a_known_workload() {
        let w = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let e = parse_run(&w("commit --duration 1s"))
            .unwrap_err()
            .1
            .to_string();
        assert!(e.contains("`run WORKLOAD"), "{e}");
        let e = parse_run(&w("run nosuch")).unwrap_err().1.to_string();
        assert!(
            e.contains("after --") && e.contains("nosuch") && e.contains("commit"),
            "{e}"
        );
        let a = parse_run(&w("run commit --duration 1s --seed 7")).unwrap();
        assert_eq!(a.seed, 7);
    }
}
