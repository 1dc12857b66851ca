//! `dbscope io …`: turns the io arguments into library calls (`io redo`, `io redo verify`).

pub mod args;

use std::io::Write;

use dbscope_io::inject::Injection;
use dbscope_io::redo::{self, Destination, RedoConfig, SyncMode};
use dbscope_io::verify;

use crate::common::{
    default_run_dir, finish_run, redacted_command_line, run_progress_bar, stop_on_ctrl_c,
};
use crate::exit::{Exit, EXIT_FAILED, EXIT_USAGE};
use crate::io::args::{IoArgs, IoCommand, RedoArgs, RedoSub, SyncArg, VerifyArgs};

/// Runs `dbscope io …`.
pub fn cmd_io(a: IoArgs) -> Result<u8, Exit> {
    match a.command {
        IoCommand::Redo(r) => match r.sub {
            Some(RedoSub::Verify(v)) => cmd_verify(v),
            None => cmd_redo(r),
        },
    }
}

fn cmd_verify(a: VerifyArgs) -> Result<u8, Exit> {
    let mut reports = Vec::new();
    for p in &a.paths {
        let r = verify::verify(p).map_err(|e| Exit(EXIT_USAGE, e.into()))?;
        reports.push(r);
    }
    let mut stdout = std::io::stdout().lock();
    if a.json {
        let last = reports.iter().filter_map(|r| r.last_commit).max();
        let v = serde_json::json!({ "logs": reports, "last_durable_commit": last });
        writeln!(stdout, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        stdout.write_all(verify::render_text(&reports).as_bytes())?;
    }
    let bad = reports.iter().any(|r| !r.problems.is_empty());
    Ok(if bad { EXIT_FAILED } else { 0 })
}

/// The redo writer's configuration from its arguments (also `sweep -- io redo …`'s plan).
pub(crate) fn config(a: &RedoArgs) -> Result<RedoConfig, Exit> {
    let mut dests = Vec::new();
    for (i, d) in a.dests.iter().enumerate() {
        let mut dest: Destination = d.parse().map_err(anyhow::Error::msg)?;
        if dest.name.is_empty() {
            dest.name = format!("dest{}", i + 1);
        }
        dests.push(dest);
    }
    let injections = a
        .inject
        .iter()
        .map(|s| s.parse::<Injection>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    let duration = match (a.ops, a.duration) {
        (None, None) => Some(std::time::Duration::from_secs(10)),
        (_, d) => d,
    };
    Ok(RedoConfig {
        dests,
        sessions: a.sessions,
        ops_per_session: a.ops,
        duration,
        rate_per_session: a.rate,
        record_bytes: a.record_bytes,
        block_size: a.block_size,
        sync: match a.sync {
            SyncArg::Dsync => SyncMode::Dsync,
            SyncArg::Fdatasync => SyncMode::Fdatasync,
            SyncArg::DirectDsync => SyncMode::DirectDsync,
        },
        group_commit: !a.no_group_commit,
        log_size: a.log_size,
        groups: a.groups,
        outlier: a.outlier,
        injections,
        sector_size_override: a.sector_size_override,
        sysfs_root: a.sysfs_root.clone(),
        seed: a.seed,
    })
}

fn cmd_redo(a: RedoArgs) -> Result<u8, Exit> {
    let cfg = config(&a)?;
    cfg.validate().map_err(|e| Exit(EXIT_USAGE, e.into()))?;
    // Warnings first, so they are seen before a long run.
    let infos = redo::check_destinations(&cfg).map_err(|e| Exit(EXIT_USAGE, e.into()))?;
    for w in infos.iter().flat_map(|i| &i.warnings) {
        eprintln!("dbscope: warning: {w}");
    }
    let out = match &a.out {
        Some(p) => p.clone(),
        None => default_run_dir("io-redo")?,
    };

    let stop = stop_on_ctrl_c();
    let bar = run_progress_bar(a.quiet);
    let mut last_commits = 0u64;
    let mut last_at = std::time::Instant::now();
    let mut on_progress = |p: &redo::RedoProgress| {
        if let Some(bar) = &bar {
            if let Some(f) = p.fraction {
                bar.set_position((f * 1000.0) as u64);
            }
            let dt = last_at.elapsed().as_secs_f64().max(1e-3);
            let rate = (p.commits - last_commits) as f64 / dt;
            last_commits = p.commits;
            last_at = std::time::Instant::now();
            bar.set_message(format!(
                "commits {}  {:.0}/s  writes {}",
                p.commits, rate, p.writes
            ));
        }
    };
    let command_line = redacted_command_line();
    let result = redo::run_redo(&out, command_line, &cfg, &stop, &mut on_progress);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let result = result.map_err(|e: dbscope_io::Error| Exit(EXIT_USAGE, e.into()))?;
    finish_run(
        &result.dir,
        result.outcome,
        result.detail.as_deref(),
        result.events,
        None,
        a.quiet,
    )
}

/// Runs `cfg` into `out` as a point of a sweep, which reads the run: nothing printed; how it
/// ended.
pub(crate) fn run_redo_point(
    cfg: &RedoConfig,
    out: &std::path::Path,
) -> Result<dbscope_core::Outcome, Exit> {
    let stop = stop_on_ctrl_c();
    let result = redo::run_redo(out, redacted_command_line(), cfg, &stop, &mut |_| {})
        .map_err(|e: dbscope_io::Error| Exit(EXIT_USAGE, e.into()))?;
    Ok(result.outcome)
}
