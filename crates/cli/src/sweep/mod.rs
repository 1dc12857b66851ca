//! `dbscope sweep --sessions 1,2,4 -- run WORKLOAD …`: a run per concurrency, and the USL fit.
//!
//! The workload at each concurrency, every point an ordinary run under the sweep directory, and
//! the Universal Scalability Law fitted to the throughputs (issue 15 part 4). The sweep directory
//! is itself a run: one `point` event per point run and counters section `usl`.
//!
//! The words after `--` are parsed once into a run plan; `dbscope_lab::sweep` runs that plan at
//! each session count (this file says how to run and read one point); the points' figures, the
//! fit, `sweep.json` and the text are `dbscope_analysis::sweep`'s.

pub mod args;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::{anyhow, Context};
use clap::Parser;
use dbscope_analysis::report::{self, ReportOptions};
use dbscope_analysis::sweep::{self as sweep_lib, Point, SweepResult};
use dbscope_core::{Manifest, Outcome, Recording, RunDir, WorkloadInfo};
use dbscope_lab::plan::RunPlan;
use dbscope_lab::sweep::{self, point_dir, PointRunner, SweepEnd, SweepStop};

use crate::args::{Cli, Command};
use crate::common::{default_run_dir, redacted_command_line, stop_signal};
use crate::exit::{Exit, EXIT_FAILED, EXIT_USAGE};
use crate::run::args::{RunArgs, WorkloadName};
use crate::sweep::args::SweepArgs;

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
    let workload = crate::run::plan::workload_name(first.workload);
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

    // The plan every point varies, as the first point runs it; when it cannot be built, the
    // first point fails with its error.
    let mut first = first;
    first.sessions = a.sessions[0];
    first.out = Some(point_dir(&out, a.sessions[0], 1));
    let base = crate::run::plan::build(&first).map_err(|e| at_point(e, a.sessions[0], 1));
    let headline = base
        .as_ref()
        .map_or(String::new(), |p| p.workload.headline_event().to_string());
    let headline = headline.as_str();
    let mut runner = Points {
        json: a.json,
        headline,
    };
    let end = sweep::run(
        base,
        &a.sessions,
        a.repeat,
        &out,
        &mut rec,
        &clock,
        &mut runner,
    );
    let SweepEnd {
        mut points,
        outcome,
        detail,
    } = match end {
        Ok(end) => end,
        Err(SweepStop::NothingRan(e)) => {
            // The very first point could not start: bad input, nothing measured.
            let _ = rec.finish(Outcome::Failed, Some(format!("{:#}", e.1)));
            return Err(e);
        }
        Err(SweepStop::Error(e)) => return Err(e),
    };

    let (fit, fit_error) = sweep_lib::fit(&mut points);
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
    rec.write_counters(sweep_lib::section(
        &points,
        fit.as_ref(),
        fit_error.as_deref(),
        headline,
    ))?;
    rec.finish(outcome, detail.clone())?;

    let mut stdout = std::io::stdout().lock();
    if a.json {
        writeln!(stdout, "{json}")?;
    } else {
        write!(
            stdout,
            "{}",
            sweep_lib::render_text(
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
            outcome.as_str(),
            out.display()
        );
    }
    Ok(crate::common::outcome_code(outcome))
}

/// `dbscope sweep`'s side of each point: says which runs, runs it silently, reads its headline
/// event's figures.
struct Points<'a> {
    json: bool,
    headline: &'a str,
}

impl PointRunner for Points<'_> {
    type Point = Point;
    type Error = Exit;

    fn starting(&mut self, n: u32, k: u32, dir: &Path) {
        if !self.json {
            eprintln!(
                "dbscope: sweep: {n} session(s), repeat {k}: {}",
                dir.display()
            );
        }
    }

    fn run(&mut self, plan: &RunPlan, n: u32, k: u32) -> Result<Outcome, Exit> {
        crate::run::run_point(plan).map_err(|e| at_point(e, n, k))
    }

    fn measure(&mut self, dir: &Path, n: u32, k: u32) -> Result<(Point, u64), Exit> {
        let point = read_point(dir, n, k, self.headline)?;
        let count = point.count;
        Ok((point, count))
    }

    fn stopped(&self) -> bool {
        stop_signal().is_set()
    }

    fn describe(e: &Exit) -> String {
        format!("{:#}", e.1)
    }
}

/// `e` as the error of the point at `n` sessions, repeat `k`.
fn at_point(Exit(code, e): Exit, n: u32, k: u32) -> Exit {
    Exit(
        code,
        e.context(format!("sweep point {n} session(s), repeat {k}")),
    )
}

/// The headline event's figures of one point run.
fn read_point(dir: &Path, sessions: u32, repeat: u32, headline: &str) -> Result<Point, Exit> {
    let run = RunDir::open(dir).map_err(|e| Exit(EXIT_USAGE, e.into()))?;
    let r =
        report::build(&run, &ReportOptions::default()).map_err(|e| Exit(EXIT_FAILED, e.into()))?;
    Ok(sweep_lib::point(
        &r,
        sessions,
        repeat,
        dir.display().to_string(),
        headline,
    ))
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
