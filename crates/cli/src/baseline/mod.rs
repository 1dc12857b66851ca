//! `dbscope baseline set|list|show`: named runs to compare later runs against
//! (`dbscope_core::baseline`); `compare --baseline NAME` resolves a name with [`resolve`].

pub mod args;

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use dbscope_core::baseline::{self, Baseline};
use dbscope_core::catalog::{self, Entry};
use dbscope_core::{Outcome, RunDir};

use crate::exit::{Exit, EXIT_INPUT, EXIT_USAGE};
use args::{BaselineArgs, BaselineCommand};

pub fn cmd_baseline(a: BaselineArgs) -> Result<u8, Exit> {
    match a.command {
        BaselineCommand::Set { name, runs } => set(&name, &runs),
        BaselineCommand::List { dir, json } => list(&dir, json),
        BaselineCommand::Show { name, dir, json } => show(&name, &dir, json),
    }
}

/// The runs directory holding a run (its parent), compared by canonical path.
fn runs_dir(run: &Path) -> Result<PathBuf, Exit> {
    let d = catalog::runs_dir_of(run);
    std::fs::canonicalize(&d).map_err(|e| Exit(EXIT_INPUT, anyhow!("{}: {e}", d.display())))
}

fn set(name: &str, runs: &[PathBuf]) -> Result<u8, Exit> {
    baseline::check_name(name).map_err(|e| Exit(EXIT_USAGE, anyhow!(e)))?;
    let mut dirs = Vec::new();
    let mut workload: Option<String> = None;
    let mut home: Option<(PathBuf, PathBuf)> = None;
    for r in runs {
        let run = RunDir::open(r).map_err(|e| Exit(EXIT_INPUT, e.into()))?;
        if run.manifest.outcome != Outcome::Complete {
            return Err(Exit(
                EXIT_USAGE,
                anyhow!(
                    "{}: the run is {}, not complete; a baseline holds complete runs",
                    r.display(),
                    if run.is_incomplete() {
                        "incomplete (no recorded end)"
                    } else {
                        run.manifest.outcome.as_str()
                    }
                ),
            ));
        }
        let w = &run.manifest.workload.name;
        match &workload {
            Some(first) if first != w => {
                return Err(Exit(
                    EXIT_USAGE,
                    anyhow!(
                        "{}: workload {w}, but the baseline's first run is {first}; a baseline's \
                         runs are of one workload",
                        r.display()
                    ),
                ))
            }
            _ => workload = Some(w.clone()),
        }
        let d = runs_dir(r)?;
        match &home {
            Some((canon, shown)) if *canon != d => {
                return Err(Exit(
                    EXIT_USAGE,
                    anyhow!(
                        "{}: not in {}, the runs directory of the baseline's first run; a \
                         baseline's runs are in one runs directory",
                        r.display(),
                        shown.display()
                    ),
                ))
            }
            Some(_) => {}
            None => home = Some((d, catalog::runs_dir_of(r))),
        }
        let dir = r
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| Exit(EXIT_USAGE, anyhow!("{}: not a run directory", r.display())))?;
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    let (_, shown) = home.ok_or_else(|| Exit(EXIT_USAGE, anyhow!("no run given")))?;
    let mut all = baseline::read(&shown)?;
    let old = all.baselines.insert(
        name.to_string(),
        Baseline {
            runs: dirs.clone(),
            set_utc: chrono::Utc::now().to_rfc3339(),
            workload: workload.unwrap_or_default(),
        },
    );
    catalog::save_baselines(&shown, &all)?;
    println!(
        "baseline {name} in {}: {} ({})",
        shown.display(),
        dbscope_analysis::text::plural(dirs.len() as u64, "run"),
        dirs.join(", ")
    );
    if let Some(old) = old {
        println!("replaced the earlier {name} ({})", old.runs.join(", "));
    }
    Ok(0)
}

fn list(dir: &Path, json: bool) -> Result<u8, Exit> {
    if !dir.is_dir() {
        return Err(Exit(
            EXIT_INPUT,
            anyhow!(
                "{}: not a runs directory (no such directory)",
                dir.display()
            ),
        ));
    }
    let all = baseline::read(dir)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&all.baselines)?);
        return Ok(0);
    }
    if all.baselines.is_empty() {
        println!(
            "no baselines in {}; name one with: dbscope baseline set NAME RUN…",
            dir.display()
        );
        return Ok(0);
    }
    println!(
        "{:<20}  {:<14}  {:>4}  {:<19}  runs",
        "baseline", "workload", "runs", "set (UTC)"
    );
    for (name, b) in &all.baselines {
        println!(
            "{:<20}  {:<14}  {:>4}  {:<19}  {}",
            name,
            b.workload,
            b.runs.len(),
            b.set_utc.get(..19).unwrap_or(&b.set_utc).replace('T', " "),
            b.runs.join(", ")
        );
    }
    Ok(0)
}

/// The runs of baseline `name` in the runs directory `dir`; each must still be there.
pub fn resolve(dir: &Path, name: &str) -> Result<(Baseline, Vec<PathBuf>), Exit> {
    let all = baseline::read(dir)?;
    let Some(b) = all.baselines.get(name) else {
        let known: Vec<&str> = all.baselines.keys().map(String::as_str).collect();
        return Err(Exit(
            EXIT_USAGE,
            anyhow!(
                "no baseline named {name:?} in {} ({}); name one with: dbscope baseline set \
                 {name} RUN…",
                dir.display(),
                if known.is_empty() {
                    "it has none".to_string()
                } else {
                    format!("it has: {}", known.join(", "))
                }
            ),
        ));
    };
    let paths: Vec<PathBuf> = b.runs.iter().map(|r| dir.join(r)).collect();
    if let Some(gone) = paths.iter().find(|p| !p.is_dir()) {
        return Err(Exit(
            EXIT_INPUT,
            anyhow!(
                "baseline {name}: its run {} is gone; set the baseline again",
                gone.display()
            ),
        ));
    }
    Ok((b.clone(), paths))
}

fn show(name: &str, dir: &Path, json: bool) -> Result<u8, Exit> {
    let (b, _paths) = resolve(dir, name)?;
    if !catalog::exists(dir) {
        dbscope_core::run::rebuild_catalog(dir).map_err(|e| Exit(EXIT_INPUT, e.into()))?;
    }
    let entries: Vec<Option<Entry>> = b
        .runs
        .iter()
        .map(|r| catalog::get(dir, r))
        .collect::<Result<_, _>>()
        .map_err(|e| Exit(EXIT_INPUT, e.into()))?;
    if json {
        let v = serde_json::json!({
            "name": name,
            "workload": b.workload,
            "set_utc": b.set_utc,
            "runs": b.runs.iter().zip(&entries).map(|(r, e)| serde_json::json!({
                "dir": r, "catalogue": e,
            })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(0);
    }
    println!(
        "baseline {name} in {}: workload {}, set {}",
        dir.display(),
        b.workload,
        b.set_utc.get(..19).unwrap_or(&b.set_utc).replace('T', " ")
    );
    println!(
        "  {:<32}  {:<8}  {:>10}  {:>9}  {:>9}  {:>6}  settings",
        "run", "target", "ops/s", "p50 ms", "p99 ms", "errors"
    );
    let f = |v: Option<f64>, d: usize| v.map_or("-".to_string(), |x| format!("{x:.d$}"));
    for (r, e) in b.runs.iter().zip(&entries) {
        match e {
            Some(e) => println!(
                "  {:<32}  {:<8}  {:>10}  {:>9}  {:>9}  {:>6}  {}",
                r,
                e.target,
                f(e.throughput, 1),
                f(e.p50_ms, 3),
                f(e.p99_ms, 3),
                e.errors.map_or("-".into(), |v| v.to_string()),
                e.settings
            ),
            None => println!("  {r:<32}  (not in the catalogue: dbscope history --rebuild)"),
        }
    }
    Ok(0)
}
