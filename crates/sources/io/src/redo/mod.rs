//! `dbscope io redo`: a log writer on real files. Committer threads queue commit records and wait
//! until they are durable; one log-writer thread does group commit into a preallocated circular log
//! of checksummed redo blocks, on one destination or racing two, and everything is recorded as
//! Oracle names it (`log file sync`, `log file parallel write`, `log file switch`).
//!
//! Besides the manifest and events, a run directory holds `redo.json` ([`RedoCounters`]): the
//! group-commit factor and the race counters, rewritten about four times a second and at the end;
//! the same figures, with write latency per destination, go into the run's generic counter
//! section (key `redo`) that `report` prints.
//!
//! The modules, from the bottom up: [`names`] and [`config`]; `dest` (opening destinations, the
//! sector-size check); `counters`; `shared` (queue, race, failure); `cursor` (placement in the
//! circular log); `dest_writer`; `direct` (no group commit); `log_writer`; `committer`; and here
//! the run's lifecycle.

mod committer;
pub mod config;
mod counters;
mod cursor;
mod dest;
mod dest_writer;
mod direct;
mod iostat;
mod log_writer;
pub mod names;
mod shared;

use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use dbscope_core::record::{Pumped, Recorder, Recording, Sessions, StopSignal};
use dbscope_core::{Manifest, Outcome, RunnerInfo, TargetInfo, WorkloadInfo};
use serde_json::json;

pub use crate::error::Error;
pub use config::{Destination, RedoConfig, SyncMode};
pub use counters::{DestCounters, RedoCounters};
pub use dest::{check_destinations, DestInfo};
pub use names::{
    dest_session, COUNTERS_FILE, EV_HOLD, EV_INJECT, EV_SWITCH, EV_SYNC, EV_WRITE, SECTION_KEY,
    WORKLOAD_NAME,
};

use super::block::LogLayout;
use committer::committer;
use counters::{write_counters, Counters, EventTally};
use dest::{enospc_hint, io_message, open_dest, preallocate, probe_write, DestFile};
use dest_writer::DestWriter;
use direct::Direct;
use iostat::DestDisks;
use log_writer::log_writer;
use shared::{Queue, Race, Shared};

/// How often progress and counter snapshots are written.
const TICK: Duration = Duration::from_millis(250);

/// What the progress display shows.
#[derive(Clone, Debug)]
pub struct RedoProgress {
    /// Time since the start.
    pub elapsed: Duration,
    /// Commits acknowledged.
    pub commits: u64,
    /// Writes.
    pub writes: u64,
    /// Fraction done, when known.
    pub fraction: Option<f64>,
}

/// How a run ended.
#[derive(Clone, Debug)]
pub struct RedoResult {
    /// The run directory.
    pub dir: PathBuf,
    /// Complete, interrupted or failed.
    pub outcome: Outcome,
    /// Why, when not complete.
    pub detail: Option<String>,
    /// Final counters.
    pub counters: RedoCounters,
    /// Warnings to show the user (sector sizes, overrides).
    pub warnings: Vec<String>,
    /// Events written.
    pub events: u64,
}

/// Runs `io redo` into the run directory `out`. `stop` may be fired from another thread (Ctrl-C).
///
/// Refusals (bad options, destinations that cannot be opened or written) come before anything is
/// recorded. After that the run is kept whatever happens: a destination or the run directory
/// filling up stops it as failed, with every event recorded until then.
pub fn run_redo(
    out: &Path,
    command_line: Vec<String>,
    cfg: &RedoConfig,
    stop: &StopSignal,
    progress: &mut dyn FnMut(&RedoProgress),
) -> Result<RedoResult, Error> {
    cfg.validate()?;
    let layout = LogLayout {
        block_size: cfg.block_size,
        groups: cfg.groups,
        blocks_per_group: cfg.blocks_per_group() as u32,
    };

    // The sector-size check, then open every destination: refusals leave nothing behind.
    let infos = check_destinations(cfg)?;
    let warnings: Vec<String> = infos.iter().flat_map(|i| i.warnings.clone()).collect();
    let files: Vec<DestFile> = cfg
        .dests
        .iter()
        .map(|d| open_dest(d, cfg))
        .collect::<Result<_, _>>()?;
    for f in &files {
        probe_write(f, &layout)?;
    }

    let mut rec = Recording::begin(out, manifest(cfg, &layout, &infos, command_line))?;
    let counters = Counters::new(cfg.dests.len());
    let mut tally = EventTally::new(rec.names(), cfg.sessions, cfg.dests.len());
    let reserved = rec.reserve_space();

    // Out of space before the clock starts: the run is kept, failed, with the reason.
    let early_failure = match reserved {
        Err(e) => Some(format!(
            "{}: no room for the run's events: {e}{}",
            out.display(),
            enospc_hint(&e, "the file system holding the run directory is full")
        )),
        Ok(()) => files.iter().find_map(|f| {
            preallocate(f, &layout).err().map(|e| {
                // Give the space back: a half-written log is of no use, and the run directory
                // may be on the same file system.
                if std::fs::metadata(&f.path).is_ok_and(|m| m.file_type().is_file()) {
                    let _ = f.file.set_len(0);
                }
                io_message(
                    &f.path,
                    &format!("cannot preallocate the log ({} bytes)", layout.file_bytes()),
                    &e,
                )
            })
        }),
    };
    if let Some(detail) = early_failure {
        let snap = finish(
            rec,
            cfg,
            &counters,
            &mut tally,
            0,
            Outcome::Failed,
            Some(detail.clone()),
        )?;
        return Ok(RedoResult {
            dir: out.to_path_buf(),
            outcome: Outcome::Failed,
            detail: Some(detail),
            counters: snap,
            warnings,
            events: 0,
        });
    }

    let mut disks = DestDisks::new(&cfg.dests);
    let clock = rec.start_clock()?;
    disks.snapshot(out, "start", 0);
    let deadline_ns = cfg.duration.map(|d| d.as_nanos() as u64);
    if let Some(d) = deadline_ns {
        counters.stop_issuing(d);
    }
    write_counters(out, &counters.snapshot(cfg, 0, false))?;
    let (sessions, batches) =
        rec.sessions(&clock, 0, 2 * (cfg.sessions as usize + files.len()) + 8);
    let queue = Mutex::new(Queue::new(cfg.sessions));
    let (lgwr_cv, ack_cv) = (Condvar::new(), Condvar::new());
    let shared = Shared {
        cfg,
        layout,
        queue: &queue,
        lgwr_cv: &lgwr_cv,
        ack_cv: &ack_cv,
        counters: &counters,
        stop,
        failure: Mutex::new(None),
    };
    // Without group commit on one destination the committers write directly (see [`Direct`]).
    let direct_race = Mutex::new(Race::new(files.len()));
    let direct_race_cv = Condvar::new();

    let (direct, lgwr) = match writers(&shared, &files, &sessions, &direct_race, &direct_race_cv) {
        Writers::Direct(d) => (Some(d), None),
        Writers::LogWriter(lg_rec, dest_recs) => (None, Some((lg_rec, dest_recs))),
    };

    let write_error = std::thread::scope(|scope| {
        let sh = &shared;
        let files = &files;
        if let Some((lg_rec, dest_recs)) = lgwr {
            std::thread::Builder::new()
                .name("lgwr".into())
                .spawn_scoped(scope, move || log_writer(sh, files, lg_rec, dest_recs))
                .expect("spawning the log writer");
        }
        for i in 0..cfg.sessions {
            let r = sessions.recorder(i);
            let direct = direct.as_ref();
            std::thread::Builder::new()
                .name(format!("committer-{i}"))
                .spawn_scoped(scope, move || committer(sh, i, r, deadline_ns, direct))
                .expect("spawning a committer thread");
        }
        drop(sessions);

        // This thread writes event blocks, the counters and progress until all have finished.
        let mut writing = true;
        rec.pump(batches, TICK, |p| match p {
            Pumped::Batch(b) if writing => tally.add(b),
            Pumped::Batch(_) => {}
            Pumped::WriteFailed(msg) => {
                writing = false;
                shared.fail(msg.to_string());
            }
            Pumped::Tick(mut snapshots) => {
                let snap = counters.snapshot(cfg, clock.now_ns(), false);
                let _ = write_counters(out, &snap);
                let _ = snapshots.write(tally.section(cfg, &snap));
                let elapsed = Duration::from_nanos(clock.now_ns());
                let commits = counters.commits();
                let fraction = match (deadline_ns, cfg.ops_per_session) {
                    (Some(d), _) => Some((elapsed.as_nanos() as f64 / d as f64).min(1.0)),
                    (None, Some(n)) => Some(commits as f64 / (n * cfg.sessions as u64) as f64),
                    _ => None,
                };
                progress(&RedoProgress {
                    elapsed,
                    commits,
                    writes: counters.writes(),
                    fraction,
                });
            }
        })
    });
    let failure = shared
        .failure
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .or(write_error);
    let (outcome, detail) = match failure {
        Some(why) => (Outcome::Failed, Some(why)),
        None => stop.outcome(),
    };
    let events = rec.events_written();
    let end_ns = clock.now_ns();
    disks.snapshot(out, "end", end_ns);
    let snap = finish(
        rec,
        cfg,
        &counters,
        &mut tally,
        end_ns,
        outcome,
        detail.clone(),
    )?;
    Ok(RedoResult {
        dir: out.to_path_buf(),
        outcome,
        detail,
        counters: snap,
        warnings: warnings.into_iter().chain(disks.failed).collect(),
        events,
    })
}

/// The manifest of a redo run: the configuration, the destinations as found, how sessions map to
/// committers, the log writer and the destinations.
fn manifest(
    cfg: &RedoConfig,
    layout: &LogLayout,
    infos: &[DestInfo],
    command_line: Vec<String>,
) -> Manifest {
    let mut manifest = Manifest::new(
        "workload",
        WorkloadInfo {
            name: WORKLOAD_NAME.into(),
            params: params(cfg, layout, infos),
        },
        cfg.seed,
    );
    manifest.command_line = command_line;
    manifest.target = Some(TargetInfo {
        kind: "redo-log".into(),
        location: cfg
            .dests
            .iter()
            .map(|d| format!("{}={}", d.name, d.path.display()))
            .collect::<Vec<_>>()
            .join(" "),
        server_version: format!("dbscope redo log format {}", super::block::FILE_VERSION),
        settings_requested: Vec::new(),
        settings_effective: Default::default(),
    });
    manifest.runner = Some(RunnerInfo {
        sessions: cfg.sessions,
        ops_per_session: cfg.ops_per_session,
        duration_s: cfg.duration.map(|d| d.as_secs_f64()),
        warmup_s: 0.0,
        max_errors: None,
        mode: if cfg.rate_per_session.is_some() {
            "open".into()
        } else {
            "closed".into()
        },
        threads: None,
        connect_s: None,
    });
    manifest
}

/// The manifest parameters of a redo run: the configuration and the destinations as found.
fn params(
    cfg: &RedoConfig,
    layout: &LogLayout,
    infos: &[DestInfo],
) -> std::collections::BTreeMap<String, serde_json::Value> {
    let mut p = std::collections::BTreeMap::new();
    p.insert("destinations".into(), json!(infos));
    p.insert("block_size".into(), json!(cfg.block_size));
    p.insert("sync".into(), json!(cfg.sync.as_str()));
    p.insert("group_commit".into(), json!(cfg.group_commit));
    p.insert("record_bytes_min".into(), json!(cfg.record_bytes.0));
    p.insert("record_bytes_max".into(), json!(cfg.record_bytes.1));
    p.insert("rate_per_session".into(), json!(cfg.rate_per_session));
    p.insert("log_size".into(), json!(layout.file_bytes()));
    p.insert("groups".into(), json!(cfg.groups));
    p.insert("blocks_per_group".into(), json!(layout.blocks_per_group));
    p.insert("outlier_ms".into(), json!(cfg.outlier.as_secs_f64() * 1e3));
    p.insert(
        "inject".into(),
        json!(cfg
            .injections
            .iter()
            .map(|i| i.text.clone())
            .collect::<Vec<_>>()),
    );
    p.insert(
        "sector_size_override".into(),
        json!(cfg.sector_size_override),
    );
    p.insert("counters_file".into(), json!(COUNTERS_FILE));
    p.insert(
        "sessions_layout".into(),
        json!(format!(
            "sessions 0..{} commit; {} is the log writer; {}.. are the destinations in order",
            cfg.sessions,
            cfg.sessions,
            cfg.sessions + 1
        )),
    );
    p
}

/// Who writes the log: the committers themselves through one shared direct writer (no group
/// commit, one destination), or a log-writer thread with a recorder of its own and one per
/// destination. Built once per run, so the size difference of the variants does not matter.
#[allow(clippy::large_enum_variant)]
enum Writers<'a> {
    Direct(Mutex<Option<Direct<'a>>>),
    LogWriter(Recorder, Vec<Recorder>),
}

fn writers<'a>(
    sh: &'a Shared<'a>,
    files: &'a [DestFile],
    sessions: &Sessions,
    race: &'a Mutex<Race>,
    race_cv: &'a Condvar,
) -> Writers<'a> {
    let cfg = sh.cfg;
    let lg_rec = sessions.recorder(cfg.sessions);
    let mut dest_recs: Vec<_> = (0..files.len())
        .map(|d| sessions.recorder(dest_session(cfg.sessions, d)))
        .collect();
    if !cfg.group_commit && files.len() == 1 {
        let rec = dest_recs.pop().expect("one destination");
        let w = DestWriter::new(0, &files[0], rec, sh, race, race_cv);
        return Writers::Direct(Mutex::new(Some(Direct::new(
            sh,
            w,
            lg_rec,
            cfg.record_bytes.1,
        ))));
    }
    Writers::LogWriter(lg_rec, dest_recs)
}

/// Ends the run: frees the space reserve first, so the counters and the manifest can be written
/// even when the run directory's file system filled up during the run.
fn finish(
    mut rec: Recording,
    cfg: &RedoConfig,
    counters: &Counters,
    tally: &mut EventTally,
    now_ns: u64,
    outcome: Outcome,
    detail: Option<String>,
) -> Result<RedoCounters, Error> {
    rec.release_space();
    let snap = counters.snapshot(cfg, now_ns, true);
    write_counters(rec.dir(), &snap)?;
    rec.write_counters(tally.section(cfg, &snap))?;
    rec.finish(outcome, detail)?;
    Ok(snap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbscope_core::RunDir;

    fn cfg(dir: &Path, sessions: u32, group_commit: bool) -> RedoConfig {
        RedoConfig {
            dests: vec![Destination {
                name: "dest1".into(),
                path: dir.join("redo.log"),
            }],
            sessions,
            ops_per_session: Some(200),
            duration: None,
            rate_per_session: None,
            record_bytes: (200, 2000),
            block_size: 512,
            sync: SyncMode::Fdatasync,
            group_commit,
            log_size: 1 << 20,
            groups: 3,
            outlier: Duration::from_millis(500),
            injections: Vec::new(),
            sector_size_override: false,
            sysfs_root: PathBuf::from("/sys"),
            seed: 1,
        }
    }

    #[test]
    fn runs_wrap_the_log_and_verify() {
        let dir = tempfile::tempdir().unwrap();
        let c = cfg(dir.path(), 4, true);
        let out = dir.path().join("run");
        let stop = StopSignal::new();
        let r = run_redo(&out, vec![], &c, &stop, &mut |_| {}).unwrap();
        assert_eq!(r.outcome, Outcome::Complete, "{:?}", r.detail);
        assert_eq!(r.counters.commits, 800);
        assert!(r.counters.log_switches >= 1, "1 MiB of log must wrap");
        let v = super::super::verify::verify(&c.dests[0].path).unwrap();
        assert!(v.problems.is_empty(), "{:?}", v.problems);
        assert_eq!(v.last_commit, Some(800));
        for s in 0..4 {
            assert_eq!(v.session_last.get(&s), Some(&200));
        }
    }

    #[test]
    fn committers_writing_directly_wrap_the_log_and_verify() {
        // No group commit on one destination: no log-writer thread, same log.
        let dir = tempfile::tempdir().unwrap();
        let c = cfg(dir.path(), 4, false);
        let out = dir.path().join("run");
        let stop = StopSignal::new();
        let r = run_redo(&out, vec![], &c, &stop, &mut |_| {}).unwrap();
        assert_eq!(r.outcome, Outcome::Complete, "{:?}", r.detail);
        assert_eq!((r.counters.commits, r.counters.writes), (800, 800));
        assert!(r.counters.log_switches >= 1, "1 MiB of log must wrap");
        assert_eq!(r.counters.destinations[0].writes, 800);
        let v = super::super::verify::verify(&c.dests[0].path).unwrap();
        assert!(v.problems.is_empty(), "{:?}", v.problems);
        assert_eq!(v.last_commit, Some(800));
        for s in 0..4 {
            assert_eq!(v.session_last.get(&s), Some(&200));
        }
        // Every event was recorded, under the sessions the log writer would use.
        let run = RunDir::open(&out).unwrap();
        let mut per_name = std::collections::BTreeMap::<(String, u32), u64>::new();
        let (_, tail) = run
            .for_each_block(|names, evs| {
                for e in evs {
                    *per_name.entry((names.name(e.name), e.session)).or_default() += 1;
                }
            })
            .unwrap();
        assert_eq!(tail.ignored_bytes, 0);
        let count = |n: &str, s: u32| per_name.get(&(n.to_string(), s)).copied().unwrap_or(0);
        assert_eq!(count(EV_WRITE, dest_session(4, 0)), 800);
        assert_eq!((0..4).map(|s| count(EV_SYNC, s)).sum::<u64>(), 800);
        assert_eq!(count(EV_SWITCH, 4), r.counters.log_switches);
    }

    #[test]
    fn bad_options_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = cfg(dir.path(), 1, true);
        c.block_size = 3000;
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("--block-size 3000"));
        let mut c = cfg(dir.path(), 1, true);
        c.groups = 1;
        assert!(c.validate().unwrap_err().to_string().contains("--groups 1"));
        let mut c = cfg(dir.path(), 1, true);
        c.injections = vec!["flash:1ms".parse().unwrap()];
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("no destination"));
    }
}
