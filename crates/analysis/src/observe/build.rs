//! The five entry points that build the section of a run.
//!
//! From its event report ([`build`]), with the client's commit count given ([`build_with`]), with
//! the samples already joined ([`build_joined`]), and each with unreadable files turned into a
//! note ([`build_or_note`], [`build_or_note_joined`]).

use dbscope_core::observe::{read_lines, Snapshot, SAMPLES_FILE, SNAPSHOTS_FILE};
use dbscope_core::RunDir;

use super::join::{top_from_samples, SampleJoin};
use super::model::ObserveReport;
use super::mysql::{history_figures, my_figures};
use super::os::os_figures;
use super::postgres::pg_figures;
use super::sqlite::sqlite_figures;
use super::steps::step_rows;
use super::trace::from_trace;
use crate::summary::EventReport;

/// Builds the section for a run; `None` when the run has neither snapshots nor samples and is
/// not an imported trace.
pub fn build(
    run: &RunDir,
    events: &[EventReport],
) -> Result<Option<ObserveReport>, dbscope_core::Error> {
    let client_commits = events
        .iter()
        .find(|e| e.name == "commit")
        .map(|e| (e.count + e.warmup_excluded) as f64);
    build_with(run, events, client_commits)
}

/// [`build`] with the client's commit count given (`compare` has it without event reports).
pub fn build_with(
    run: &RunDir,
    events: &[EventReport],
    client_commits: Option<f64>,
) -> Result<Option<ObserveReport>, dbscope_core::Error> {
    build_joined(run, events, client_commits, None)
}

/// [`build_with`], with the samples already read and joined to the client events.
pub fn build_joined(
    run: &RunDir,
    events: &[EventReport],
    client_commits: Option<f64>,
    join: Option<SampleJoin>,
) -> Result<Option<ObserveReport>, dbscope_core::Error> {
    let snaps: Option<Vec<Snapshot>> = read_lines(&run.path, SNAPSHOTS_FILE)?;
    let (samples, during, waits) = match join {
        Some(j) => j.into_parts(),
        None => (None, None, None),
    };
    // Samples the join could not read (or no join): read here, so that an unreadable file is
    // the report's note.
    let samples = match samples {
        Some(s) => Some(s),
        None => read_lines(&run.path, SAMPLES_FILE)?,
    };
    if run.manifest.source == "trace" {
        return Ok(Some(from_trace(events)));
    }
    let Some(snaps) = snaps.filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    let target = run
        .manifest
        .target
        .as_ref()
        .map_or("unknown".to_string(), |t| t.kind.clone());
    let mut r = ObserveReport {
        target: target.clone(),
        snapshots: snaps.len() as u64,
        wait_interface: target == "postgres" || target == "mysql",
        storage: run.manifest.storage.clone(),
        ..ObserveReport::default()
    };
    let first = &snaps[0];
    let last = &snaps[snaps.len() - 1];
    if last.label != "end" {
        r.notes.push(format!(
            "no end snapshot (the run did not finish): the figures run to the last snapshot ({})",
            last.label
        ));
    }
    if snaps.len() < 2 {
        r.notes
            .push("only one snapshot: no deltas can be made".into());
        return Ok(Some(r));
    }
    step_rows(&mut r, &snaps);
    let d = last.delta(first);
    let span = d.span_ns.unwrap_or(0) as f64 / 1e9;
    r.span_s = Some(span);
    if span <= 0.0 {
        r.notes.push(
            "the first and the last snapshot were taken at the same instant: no rates".into(),
        );
        return Ok(Some(r));
    }
    for (name, s) in &last.sections {
        if let Some(why) = &s.missing {
            r.missing.insert(name.clone(), why.clone());
        }
    }
    // What the observer says about its figures' scope (a capture's sessions in another database).
    if let Some(n) = last
        .sections
        .get("observe")
        .and_then(|s| s.text.get("note"))
    {
        r.notes.push(n.clone());
    }
    // The client's commits span the whole run: they match the snapshots only when the last one
    // is the end snapshot.
    let client_commits = client_commits.filter(|&n| n > 0.0 && last.label == "end");
    match target.as_str() {
        "postgres" => pg_figures(&mut r, &d, span, client_commits),
        "mysql" => {
            my_figures(&mut r, &d, span, client_commits);
            // `--waits history`: its section holds totals of the run (end snapshot only).
            if let Some(h) = last.sections.get("mysql.waits_history") {
                history_figures(&mut r, h, waits.as_ref());
            }
        }
        "sqlite" => {
            r.notes.push(
                "SQLite has no wait interface: there are no wait events to sample; its own counters \
                 (sqlite3_db_status) and the OS figures follow"
                    .into(),
            );
            sqlite_figures(&mut r, &d, client_commits);
        }
        _ => {}
    }
    if let Some(lines) = samples {
        r.top_events = Some(top_from_samples(&lines, None, during.as_ref()));
    } else if target == "postgres" {
        r.notes
            .push("no active-session samples (--sample-hz 0)".into());
    }
    os_figures(&mut r, &d, span, client_commits);
    Ok(Some(r))
}

/// [`build`], with a file that cannot be read turned into a note (the rest of the report stands).
pub fn build_or_note(run: &RunDir, events: &[EventReport]) -> Option<ObserveReport> {
    build_or_note_joined(run, events, None)
}

/// [`build_or_note`] with the samples joined to the client events ([`SampleJoin`]).
pub fn build_or_note_joined(
    run: &RunDir,
    events: &[EventReport],
    join: Option<SampleJoin>,
) -> Option<ObserveReport> {
    let client_commits = events
        .iter()
        .find(|e| e.name == "commit")
        .map(|e| (e.count + e.warmup_excluded) as f64);
    build_joined(run, events, client_commits, join).unwrap_or_else(|e| {
        Some(ObserveReport {
            notes: vec![format!("the snapshots or samples cannot be read: {e}")],
            ..ObserveReport::default()
        })
    })
}
