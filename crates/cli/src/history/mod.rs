//! `dbscope history`: the catalogue of runs under a runs directory (`dbscope_core::catalog`).

pub mod args;

use anyhow::Context;
use dbscope_analysis::html::{render_trend, TrendPoint};
use dbscope_core::catalog::{self, Entry, Filter};

use crate::exit::{Exit, EXIT_INPUT};
use args::HistoryArgs;

pub fn cmd_history(a: HistoryArgs) -> Result<u8, Exit> {
    if !a.dir.is_dir() {
        return Err(Exit(
            EXIT_INPUT,
            anyhow::anyhow!(
                "{}: not a runs directory (no such directory)",
                a.dir.display()
            ),
        ));
    }
    if a.rebuild || !catalog::exists(&a.dir) {
        let r = dbscope_core::run::rebuild_catalog(&a.dir)
            .with_context(|| format!("rebuilding the catalogue of {}", a.dir.display()))
            .map_err(|e| Exit(EXIT_INPUT, e))?;
        if !a.json {
            eprintln!(
                "dbscope: catalogue of {} rebuilt from {} manifests",
                a.dir.display(),
                r.runs
            );
        }
        for u in &r.unreadable {
            eprintln!("dbscope: warning: left out, manifest unreadable: {u}");
        }
    }
    let f = Filter {
        workload: a.workload.clone(),
        target: a.target.clone(),
        since: a.since.clone(),
        settings: a.settings.clone(),
        baseline: a.baseline.clone(),
    };
    let runs = catalog::list(&a.dir, &f).map_err(|e| Exit(EXIT_INPUT, e.into()))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
        return Ok(0);
    }
    if let Some(fig) = &a.trend {
        print_trend(&runs, fig);
        if let Some(path) = &a.html {
            let points: Vec<TrendPoint> = runs
                .iter()
                .filter_map(|e| {
                    Some(TrendPoint {
                        started_utc: e.started_utc.clone(),
                        run: e.dir.clone(),
                        value: e.figure(fig)?,
                    })
                })
                .collect();
            let page = render_trend(&trend_label(fig), &points);
            crate::common::write_page(&page, Some(path), None)?;
        }
    } else {
        print_table(&runs);
    }
    Ok(0)
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.digits$}"))
        .unwrap_or_else(|| "-".into())
}

fn print_table(runs: &[Entry]) {
    println!(
        "{:<19}  {:<32}  {:<10}  {:<14}  {:<8}  {:<11}  {:>10}  {:>9}  {:>9}  {:>6}  settings",
        "started (UTC)",
        "run",
        "source",
        "workload",
        "target",
        "outcome",
        "ops/s",
        "p50 ms",
        "p99 ms",
        "errors"
    );
    for e in runs {
        let outcome = if e.is_incomplete() {
            "incomplete".to_string()
        } else {
            e.outcome.clone()
        };
        println!(
            "{:<19}  {:<32}  {:<10}  {:<14}  {:<8}  {:<11}  {:>10}  {:>9}  {:>9}  {:>6}  {}",
            e.started_utc
                .get(..19)
                .unwrap_or(&e.started_utc)
                .replace('T', " "),
            e.dir,
            e.source,
            e.workload,
            if e.target.is_empty() { "-" } else { &e.target },
            outcome,
            opt(e.throughput, 1),
            opt(e.p50_ms, 3),
            opt(e.p99_ms, 3),
            e.errors
                .map(|v| v.to_string())
                .unwrap_or_else(|| "-".into()),
            e.settings
        );
    }
    let incomplete = runs.iter().filter(|e| e.is_incomplete()).count();
    println!(
        "{} runs{}",
        runs.len(),
        if incomplete > 0 {
            format!(", {incomplete} incomplete (no recorded end: still running or killed)")
        } else {
            String::new()
        }
    );
}

/// A figure's name with its unit, for the plot's axis.
fn trend_label(fig: &str) -> String {
    match fig {
        "throughput" => "throughput (ops/s)".into(),
        "p50" | "p99" => format!("{fig} (ms)"),
        _ => fig.to_string(),
    }
}

fn print_trend(runs: &[Entry], fig: &str) {
    let points: Vec<(&Entry, f64)> = runs
        .iter()
        .filter_map(|e| e.figure(fig).map(|v| (e, v)))
        .collect();
    if points.is_empty() {
        println!("no run has a {fig} figure");
        return;
    }
    let values: Vec<f64> = points.iter().map(|p| p.1).collect();
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
            (l.min(v), h.max(v))
        });
    println!(
        "{fig} over {} runs ({} .. {}): {}",
        points.len(),
        points[0].0.started_utc.get(..19).unwrap_or(""),
        points[points.len() - 1]
            .0
            .started_utc
            .get(..19)
            .unwrap_or(""),
        catalog::sparkline(&values)
    );
    println!(
        "min {lo:.3}  max {hi:.3}  last {:.3}",
        values[values.len() - 1]
    );
}
