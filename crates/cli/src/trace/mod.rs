//! `dbscope trace profile|import`, and opening a `.trc` path as a run for `report`.

pub mod args;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use dbscope_core::RunDir;
use dbscope_trace::import::import_files;
use dbscope_trace::profile::{profile_files, render_text_with, ProfileOptions};

use crate::common::{print_examples, redacted_command_line};
use crate::exit::Exit;
use crate::trace::args::{TraceArgs, TraceCommand, TraceImportArgs, TraceProfileArgs};

/// Runs `dbscope trace …`.
pub fn cmd_trace(a: TraceArgs) -> Result<u8, Exit> {
    match a.command {
        TraceCommand::Profile(p) => cmd_profile(p),
        TraceCommand::Import(i) => cmd_import(i),
    }
}

/// Parses a wall-clock time: RFC 3339, or `YYYY-MM-DD[ T]HH:MM:SS[.f]` taken as UTC.
fn parse_time(flag: &str, s: &str) -> Result<i64, Exit> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(t.timestamp_micros());
    }
    for fmt in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%d",
    ] {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(s, fmt) {
            return Ok(t.and_utc().timestamp_micros());
        }
        if let Ok(d) = chrono::NaiveDate::parse_from_str(s, fmt) {
            return Ok(d
                .and_hms_opt(0, 0, 0)
                .expect("midnight")
                .and_utc()
                .timestamp_micros());
        }
    }
    Err(Exit::from(anyhow!(
        "{flag} {s:?} is not a time; use RFC 3339 (2024-03-26T18:58:52-07:00) or 'YYYY-MM-DD HH:MM:SS' (UTC)"
    )))
}

fn cmd_profile(a: TraceProfileArgs) -> Result<u8, Exit> {
    let opts = ProfileOptions {
        since_us: a
            .since
            .as_deref()
            .map(|s| parse_time("--since", s))
            .transpose()?,
        until_us: a
            .until
            .as_deref()
            .map(|s| parse_time("--until", s))
            .transpose()?,
        sqlid: a.sqlid.clone(),
        events: a.events.clone(),
        top: a.top,
        strict: a.strict,
        ..ProfileOptions::default()
    };
    let paths: Vec<&Path> = a.files.iter().map(|p| p.as_path()).collect();
    let p = profile_files(&paths, &opts)?;
    refuse_unrecognised(&p.files)?;
    let text = if a.json {
        serde_json::to_string_pretty(&p)?
    } else {
        render_text_with(&p, a.statements, a.plans)
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        out.write_all(b"\n")?;
    }
    Ok(0)
}

fn cmd_import(a: TraceImportArgs) -> Result<u8, Exit> {
    let paths: Vec<&Path> = a.files.iter().map(|p| p.as_path()).collect();
    let command_line = redacted_command_line();
    let existed = a.out.exists();
    let s = import_files(&paths, &a.out, command_line, a.strict)?;
    if let Err(e) = refuse_unrecognised(&s.files) {
        // Nothing of a trace was in the input: leave no empty run behind.
        if !existed {
            let _ = std::fs::remove_dir_all(&a.out);
            dbscope_core::run::catalog_forget(&a.out);
        }
        return Err(e);
    }
    print_examples("warning", &s.warnings, s.warning_count, "malformed lines");
    println!(
        "imported {} events from {} into {}; see: dbscope report {}",
        s.events,
        dbscope_analysis::text::plural(s.sessions as u64, "session"),
        s.dir.display(),
        s.dir.display()
    );
    Ok(0)
}

/// Refuses input in which nothing was recognised as a 10046 trace (an empty file, random bytes, a
/// log of something else): an empty profile with exit 0 would pass for "nothing happened".
fn refuse_unrecognised(files: &[dbscope_trace::model::FileInfo]) -> Result<(), Exit> {
    let reasons: Vec<String> = files
        .iter()
        .filter_map(|f| f.unrecognised_reason())
        .collect();
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(Exit::from(anyhow!(reasons.join("; "))))
    }
}

/// True when `path` is a trace file rather than a run directory: a regular file named `*.trc`,
/// `*.trc.gz` or `*.gz`, or whose first 64 KiB hold 10046 records. `report` then imports it first.
pub fn is_trace_file(path: &Path) -> bool {
    if !path.is_file() {
        return false;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if name.ends_with(".trc") || name.ends_with(".gz") {
        return true;
    }
    let mut head = Vec::new();
    let read = std::fs::File::open(path)
        .and_then(|f| std::io::Read::read_to_end(&mut std::io::Read::take(f, 64 << 10), &mut head));
    read.is_ok()
        && ["PARSING IN CURSOR #", "WAIT #", "EXEC #", "FETCH #"]
            .iter()
            .any(|k| head.windows(k.len()).any(|w| w == k.as_bytes()))
}

/// A run imported from a trace into a temporary directory, removed when dropped.
pub struct TempRun {
    dir: PathBuf,
    /// The run.
    pub run: RunDir,
}

impl Drop for TempRun {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Imports a trace file into a temporary run directory (for `report FILE.trc`).
pub fn temp_run_from_trace(path: &Path) -> Result<TempRun, Exit> {
    let base = std::env::temp_dir().join(format!(
        "dbscope-trace-{}-{}",
        std::process::id(),
        chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0)
    ));
    let out = base.join("run");
    let command_line = redacted_command_line();
    let made = import_files(&[path], &out, command_line, false)
        .map_err(Exit::from)
        .and_then(|s| {
            refuse_unrecognised(&s.files)?;
            Ok((s, RunDir::open(&out)?))
        });
    match made {
        Ok((s, run)) => {
            if s.warning_count > 0 {
                eprintln!(
                    "dbscope: warning: {}: {} malformed lines skipped (see dbscope trace profile)",
                    path.display(),
                    s.warning_count
                );
            }
            Ok(TempRun { dir: base, run })
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&base);
            Err(e)
        }
    }
}
