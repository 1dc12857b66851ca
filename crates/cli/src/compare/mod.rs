//! `dbscope compare A B`: argument checks, then library calls.

pub mod args;
pub mod gate;

use std::io::Write;
use std::path::PathBuf;

use anyhow::anyhow;

use dbscope_analysis::compare::{self, CompareOptions};
use dbscope_core::stats::BootstrapOptions;
use dbscope_core::{CounterValue, RunDir};

use crate::common::write_page;
use crate::compare::args::CompareArgs;
use crate::exit::{Exit, EXIT_GATE};
use crate::run::events::{ITERATIONS_SECTION, ITERATIONS_WORKLOAD};

/// Opens a run directory, or imports a 10046 trace file into a temporary run.
fn open(path: &std::path::Path) -> Result<(RunDir, Option<crate::trace::TempRun>), Exit> {
    if crate::trace::is_trace_file(path) {
        let t = crate::trace::temp_run_from_trace(path)?;
        Ok((t.run.clone(), Some(t)))
    } else {
        Ok((RunDir::open(path)?, None))
    }
}

/// One side of a comparison: one run (or trace file), or several pooled into a temporary run.
struct Side {
    run: RunDir,
    /// What to call it in the output, when not its directory.
    shown: Option<String>,
    _temp: Option<crate::trace::TempRun>,
    _pool: Option<TempDir>,
}

/// A temporary directory removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One run as a side; several are pooled (`dbscope_core::pool`) into a temporary run.
fn side(paths: &[PathBuf], shown: Option<String>) -> Result<Side, Exit> {
    if let [one] = paths {
        let (run, temp) = open(one)?;
        let shown = shown.or_else(|| temp.as_ref().map(|_| one.display().to_string()));
        return Ok(Side {
            run,
            shown,
            _temp: temp,
            _pool: None,
        });
    }
    let runs = paths
        .iter()
        .map(|p| RunDir::open(p).map_err(Exit::from))
        .collect::<Result<Vec<_>, _>>()?;
    let base = std::env::temp_dir().join(format!(
        "dbscope-pool-{}-{}",
        std::process::id(),
        chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0)
    ));
    let guard = TempDir(base.clone());
    let run = dbscope_core::pool::pool_runs(&runs, &base.join("pool"))?;
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    Ok(Side {
        run,
        shown: Some(shown.unwrap_or_else(|| format!("pooled: {}", names.join(" + ")))),
        _temp: None,
        _pool: Some(guard),
    })
}

/// Runs `dbscope compare`.
pub fn cmd_compare(a: CompareArgs) -> Result<u8, Exit> {
    let (side_a, side_b) = match &a.baseline {
        Some(name) => {
            let dir = dbscope_core::catalog::runs_dir_of(&a.runs[0]);
            let (_, paths) = crate::baseline::resolve(&dir, name)?;
            let shown = format!(
                "baseline {name} ({})",
                paths
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" + ")
            );
            (side(&paths, Some(shown))?, side(&a.runs, None)?)
        }
        None => match &a.runs[..] {
            [x, y] => (
                side(std::slice::from_ref(x), None)?,
                side(std::slice::from_ref(y), None)?,
            ),
            _ => {
                return Err(anyhow!(
                    "compare takes two runs, A and B (got {}); to compare against several runs \
                     pooled, name them as a baseline (dbscope baseline set NAME RUN…) and use \
                     --baseline NAME",
                    a.runs.len()
                )
                .into())
            }
        },
    };
    let (ra, rb) = (side_a.run.clone(), side_b.run.clone());
    let opts = CompareOptions {
        event: a.event.clone(),
        outlier_us: a.outlier.map(|d| d.as_secs_f64() * 1e6),
        noise: a.noise,
        include_warmup: a.include_warmup,
        allow_incomplete: a.allow_incomplete,
        bootstrap: BootstrapOptions {
            replicates: a.replicates,
            seed: a.seed,
            ..BootstrapOptions::default()
        },
        quantiles: a.quantiles.clone(),
        memory_bytes: a.memory,
    };
    let iterations = |r: &RunDir| r.manifest.workload.name == ITERATIONS_WORKLOAD;
    match (iterations(&ra), iterations(&rb)) {
        (true, true) => return compare_iterations(&a, &ra, &rb, &opts),
        (false, false) => {}
        _ => {
            return Err(anyhow!(
                "one of the two is an events iterations directory (`run events --iterations`): \
                 compare it with another, or compare one of its strategy runs (e.g. DIR/3-batch)"
            )
            .into())
        }
    }
    let mut c = compare::compare(&ra, &rb, &opts)?;
    // A trace file imported into a temporary run, or a pool: name them, not the temporary directory.
    if let Some(s) = &side_a.shown {
        c.a.path = s.clone();
    }
    if let Some(s) = &side_b.shown {
        c.b.path = s.clone();
    }
    if a.html.is_some() || a.svg.is_some() {
        let page = dbscope_analysis::html::render_compare(
            &ra,
            &rb,
            &c,
            &dbscope_analysis::html::HtmlOptions {
                include_warmup: a.include_warmup,
                ..Default::default()
            },
        )?;
        write_page(&page, a.html.as_deref(), a.svg.as_deref())?;
    }
    let judged = match &a.fail_if {
        Some(conds) => Some(gate::judge(&c, &ra, &rb, &conds.0, a.include_warmup)?),
        None => None,
    };
    let text = if a.json {
        let json = compare::render_json(&c);
        match &judged {
            Some(j) => {
                let mut v: serde_json::Value = serde_json::from_str(&json)?;
                v["gate"] = serde_json::json!({
                    "failed": j.iter().any(|x| x.holds),
                    "exit_code": if j.iter().any(|x| x.holds) { EXIT_GATE } else { 0 },
                    "conditions": j,
                });
                serde_json::to_string_pretty(&v)? + "\n"
            }
            None => json,
        }
    } else if a.markdown {
        gate::render_markdown(&c, judged.as_deref().unwrap_or(&[]))
    } else {
        let mut t = compare::render_text(&c);
        if let Some(j) = &judged {
            t.push_str(&gate::render_text(j));
        }
        t
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    if judged.is_some_and(|j| j.iter().any(|x| x.holds)) {
        return Ok(EXIT_GATE);
    }
    Ok(0)
}

/// The strategy runs of an events iterations run, in its order: (strategy, run directory).
fn strategy_runs(run: &RunDir) -> Result<Vec<(String, PathBuf)>, Exit> {
    let missing = || {
        anyhow!(
            "{}: an events iterations run without its table (it ended before the first \
             iteration did)",
            run.path.display()
        )
    };
    let counters = run.counters()?;
    let table = counters
        .sections
        .iter()
        .find(|s| s.key == ITERATIONS_SECTION)
        .and_then(|s| s.tables.iter().find(|t| t.key == "strategies"))
        .ok_or_else(missing)?;
    let col = |k: &str| table.columns.iter().position(|c| c.key == k);
    let (si, ri) = col("strategy").zip(col("run")).ok_or_else(missing)?;
    let text = |v: Option<&CounterValue>| match v {
        Some(CounterValue::Text(t)) if !t.is_empty() => Some(t.clone()),
        _ => None,
    };
    Ok(table
        .rows
        .iter()
        .filter_map(|r| Some((text(r.get(si))?, run.path.join(text(r.get(ri))?))))
        .collect())
}

/// `compare A B` of two events iterations runs: each strategy both ran, compared as two runs
/// (issue 34 item 11); a strategy only one of them ran is named.
fn compare_iterations(
    a: &CompareArgs,
    ra: &RunDir,
    rb: &RunDir,
    opts: &CompareOptions,
) -> Result<u8, Exit> {
    if a.html.is_some() || a.svg.is_some() {
        return Err(anyhow!(
            "--html of two events iterations directories: compare one strategy's runs, e.g. \
             dbscope compare {}/3-batch {}/3-batch --html FILE",
            ra.path.display(),
            rb.path.display()
        )
        .into());
    }
    let (sa, sb) = (strategy_runs(ra)?, strategy_runs(rb)?);
    let only = |x: &[(String, PathBuf)], y: &[(String, PathBuf)]| -> Vec<String> {
        x.iter()
            .filter(|(s, _)| !y.iter().any(|(t, _)| t == s))
            .map(|(s, _)| s.clone())
            .collect()
    };
    let (only_a, only_b) = (only(&sa, &sb), only(&sb, &sa));
    let mut text = String::new();
    let mut json = Vec::new();
    for (strategy, dir_a) in &sa {
        let Some((_, dir_b)) = sb.iter().find(|(t, _)| t == strategy) else {
            continue;
        };
        let c = compare::compare(&RunDir::open(dir_a)?, &RunDir::open(dir_b)?, opts)?;
        if a.json {
            let v: serde_json::Value = serde_json::from_str(&compare::render_json(&c))?;
            json.push(serde_json::json!({ "strategy": strategy, "comparison": v }));
        } else {
            text.push_str(&format!(
                "=== strategy {strategy}: {} vs {}\n{}\n",
                dir_a.display(),
                dir_b.display(),
                compare::render_text(&c)
            ));
        }
    }
    let mut stdout = std::io::stdout().lock();
    if a.json {
        let v = serde_json::json!({
            "a": ra.path.display().to_string(),
            "b": rb.path.display().to_string(),
            "strategies": json,
            "only_in_a": only_a,
            "only_in_b": only_b,
        });
        writeln!(stdout, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        for (side, names) in [("A", &only_a), ("B", &only_b)] {
            if !names.is_empty() {
                text.push_str(&format!("only in {side}: {}\n", names.join(", ")));
            }
        }
        stdout.write_all(text.as_bytes())?;
    }
    Ok(0)
}
