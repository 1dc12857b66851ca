//! The replay as a run: a thread per captured session, the divergence file and counters written.
//!
//! The plan is loaded and the target checked first; the manifest says how it ended.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dbscope_core::manifest::{Manifest, Outcome, RunnerInfo, TargetInfo, WorkloadInfo};
use dbscope_core::redact::redact;
use dbscope_core::{Recording, StopSignal};
use serde_json::json;

use super::check::check_target;
use super::config::{ReplayConfig, ReplaySummary, Speed, DIVERGENCE_FILE};
use super::order::CommitOrder;
use super::plan::load;
use super::session::{replay_session, Ctx};
use super::tally::{section, Tally};
use crate::CaptureError;

/// Runs the replay. `progress` is called about every second with (calls replayed so far is not
/// known here; elapsed seconds).
pub fn run(
    cfg: &ReplayConfig,
    stop: &Arc<StopSignal>,
    mut progress: impl FnMut(Duration),
) -> Result<ReplaySummary, CaptureError> {
    let plan = load(&cfg.capture)?;
    if plan.sessions.is_empty() {
        return Err(CaptureError::Config(format!(
            "{}: the capture holds no calls",
            cfg.capture.display()
        )));
    }
    check_target(cfg, &plan)?;
    let mut params = BTreeMap::new();
    params.insert(
        "capture".to_string(),
        json!(cfg.capture.display().to_string()),
    );
    params.insert(
        "speed".to_string(),
        match cfg.speed {
            Speed::Max => json!("max"),
            Speed::Factor(f) => json!(f),
        },
    );
    params.insert(
        "sync".to_string(),
        json!(if cfg.sync_commit { "commit" } else { "none" }),
    );
    if cfg.sync_commit {
        params.insert(
            "sync_slack_us".to_string(),
            json!(cfg.sync_slack.as_micros() as u64),
        );
    }
    if let Some(rp) = &cfg.restored_from {
        params.insert("restore_point".to_string(), json!(rp));
    }
    let mut manifest = Manifest::new(
        "replay",
        WorkloadInfo {
            name: "pg-replay".into(),
            params,
        },
        0,
    );
    manifest.command_line = cfg.command_line.clone();
    manifest.target = Some(TargetInfo {
        kind: "postgres".into(),
        location: redact(&cfg.target),
        ..cfg.target_info.clone().unwrap_or_default()
    });
    manifest.runner = Some(RunnerInfo {
        sessions: plan.sessions.len() as u32,
        // Calls start at their captured times (scaled): open loop; `--speed max` sends each
        // session's calls back to back: closed loop (issue 34: the mode was left empty).
        mode: match cfg.speed {
            Speed::Factor(_) => "open",
            Speed::Max => "closed",
        }
        .into(),
        ..RunnerInfo::default()
    });
    let mut rec = Recording::begin(&cfg.out, manifest)?;
    crate::private::private_dir(&cfg.out).map_err(|e| CaptureError::io(&cfg.out, e))?;
    // The target's observer: its places recorded before the clock starts, its start snapshot
    // taken before any replay session connects.
    let mut watch = cfg.watch.as_ref().and_then(|open| open(rec.dir()));
    if let Some(w) = &watch {
        rec.manifest_mut().storage = w.storage();
    }
    let clock = rec.start_clock()?;
    if let Some(w) = watch.as_mut() {
        w.start(&clock);
    }
    let (sessions, batches) = rec.sessions(&clock, 0, 256);
    let order = CommitOrder::new(plan.commits.len());
    let ctx = Ctx {
        cfg,
        plan: &plan,
        t0: clock.now_ns() + 20_000_000,
        clock: clock.clone(),
        order: &order,
        stop,
        backends: watch.as_ref().map(|w| w.backends()),
    };
    let started = Instant::now();
    let mut tally = Tally::default();
    let write_error = std::thread::scope(|scope| {
        let handles: Vec<_> = plan
            .sessions
            .iter()
            .map(|s| {
                let rec = sessions.recorder(s.id);
                let ctx = &ctx;
                scope.spawn(move || replay_session(s, ctx, rec))
            })
            .collect();
        drop(sessions);
        let mut last = Instant::now();
        let mut last_watch = Instant::now();
        let err = rec.pump(batches, Duration::from_millis(200), |_| {
            if last_watch.elapsed() >= Duration::from_millis(250) {
                if let Some(w) = watch.as_mut() {
                    w.tick();
                }
                last_watch = Instant::now();
            }
            if last.elapsed() >= Duration::from_secs(1) {
                progress(started.elapsed());
                last = Instant::now();
            }
        });
        for h in handles {
            match h.join() {
                Ok(t) => tally.merge(t),
                Err(_) => stop.fail("a replay session failed (a bug)".into()),
            }
        }
        err
    });
    let replay_ns = clock.now_ns().saturating_sub(ctx.t0);
    // Every replay session's connection is closed: the end snapshot waits for their backends.
    if let Some(w) = watch.as_mut() {
        w.finish();
    }
    let path = cfg.out.join(DIVERGENCE_FILE);
    let mut text = String::new();
    for d in &tally.divergences {
        text.push_str(&d.to_string());
        text.push('\n');
    }
    crate::private::create_private(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| CaptureError::io(&path, e))?;
    let summary = ReplaySummary {
        dir: cfg.out.clone(),
        replayed: tally.replayed,
        not_replayed: tally.not_replayed.values().sum(),
        diverged: tally.diverged.values().sum(),
        capture_s: plan.span_ns as f64 / 1e9,
        replay_s: replay_ns as f64 / 1e9,
        partial: tally.partial(),
    };
    rec.write_counters(section(&tally, &plan, &summary, cfg))?;
    let (outcome, detail) = match (write_error, stop.outcome()) {
        (Some(why), _) => (Outcome::Failed, Some(why)),
        (None, o) => o,
    };
    let outcome = match (outcome, tally.connect_errors.first()) {
        (Outcome::Complete, Some(_)) if tally.replayed == 0 => Outcome::Failed,
        (o, _) => o,
    };
    let detail =
        detail.or_else(|| (outcome == Outcome::Failed).then(|| tally.connect_errors.join("; ")));
    // A replay that lost connections is partial: neither the captured state nor a clean prefix
    // of it. It fails (exit 1), says so, and records it for `compare`.
    let mut partial_only = false;
    let (outcome, detail) = match (summary.partial.clone(), outcome) {
        (None, o) => (o, detail),
        (Some(p), o) => {
            rec.manifest_mut()
                .workload
                .params
                .insert("partial".to_string(), json!(p));
            let p = format!("partial replay: {p}");
            match (o, detail) {
                (Outcome::Complete, _) => {
                    partial_only = true;
                    (Outcome::Failed, Some(p))
                }
                (o, Some(d)) if !d.is_empty() => (o, Some(format!("{d}; {p}"))),
                (o, _) => (o, Some(p)),
            }
        }
    };
    rec.finish(outcome, detail.clone())?;
    // Partial only: the run is a whole record of what happened; the caller reports it as any
    // run, and its outcome (failed) gives the exit code.
    if outcome == Outcome::Failed && !partial_only {
        return Err(CaptureError::Failed {
            dir: cfg.out.clone(),
            why: detail.unwrap_or_default(),
        });
    }
    Ok(summary)
}
