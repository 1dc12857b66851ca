//! The lab notebook's catalogue: one SQLite file per runs directory (`<runs>/.dbscope-history.sqlite`)
//! listing every run under it — when, what, against which target, its outcome and headline figures.
//!
//! It is an index, never the record: every row is derived from a run's `manifest.json` and events,
//! so [`rebuild`] recreates it identically from the manifests. [`crate::run::RunDir::save_manifest`]
//! keeps it up to date for every source (a run is entered as `running` when created, so a run killed
//! by SIGKILL stays listed as incomplete; its figures are filled in when its final manifest is saved).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::manifest::Outcome;
use crate::run::{RunDir, MANIFEST_FILE};
use crate::stats::quantile_type7;

/// The catalogue's file name inside a runs directory.
pub const CATALOG_FILE: &str = ".dbscope-history.sqlite";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
    dir TEXT PRIMARY KEY,
    started_utc TEXT NOT NULL,
    ended_utc TEXT,
    source TEXT NOT NULL,
    workload TEXT NOT NULL,
    target TEXT NOT NULL,
    server_version TEXT NOT NULL,
    settings TEXT NOT NULL,
    outcome TEXT NOT NULL,
    headline_event TEXT,
    ops INTEGER,
    errors INTEGER,
    throughput REAL,
    p50_ms REAL,
    p99_ms REAL
);
CREATE INDEX IF NOT EXISTS runs_started ON runs(started_utc);
CREATE INDEX IF NOT EXISTS runs_workload ON runs(workload, started_utc);
CREATE TABLE IF NOT EXISTS settings (
    dir TEXT NOT NULL,
    name TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (dir, name)
);
CREATE INDEX IF NOT EXISTS settings_nv ON settings(name, value);
";

/// One catalogued run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Entry {
    /// The run directory's name inside the runs directory.
    pub dir: String,
    /// When it started (RFC 3339, UTC).
    pub started_utc: String,
    /// When it ended, if it recorded an end.
    pub ended_utc: Option<String>,
    /// The source that made it (`run`, `io redo`, `import`, …).
    pub source: String,
    /// The workload's name.
    pub workload: String,
    /// The target's kind (`sqlite`, `postgres`, `null`; empty when the source has none).
    pub target: String,
    /// The server's version, as reported.
    pub server_version: String,
    /// The settings requested with `--set` (they differ from the server's defaults), `k=v` joined by `,`.
    pub settings: String,
    /// `running` (still running, or killed), `complete`, `interrupted`, `failed`.
    pub outcome: String,
    /// The headline event: the most frequent measured (non-warm-up) event.
    pub headline_event: Option<String>,
    /// Measured events of the headline event.
    pub ops: Option<i64>,
    /// Failed measured events (all names).
    pub errors: Option<i64>,
    /// Successful measured operations (all names) per second of measured time.
    pub throughput: Option<f64>,
    /// Median latency of the headline event's successful operations, ms (R's type 7 quantile).
    pub p50_ms: Option<f64>,
    /// 99th percentile, ms (R's type 7 quantile).
    pub p99_ms: Option<f64>,
}

impl Entry {
    /// True when the run never recorded an end.
    pub fn is_incomplete(&self) -> bool {
        self.outcome == Outcome::Running.as_str()
    }

    /// The named figure (`throughput`, `p50`, `p99`, `errors`, `ops`), if the run has it.
    pub fn figure(&self, name: &str) -> Option<f64> {
        match name {
            "throughput" => self.throughput,
            "p50" => self.p50_ms,
            "p99" => self.p99_ms,
            "errors" => self.errors.map(|v| v as f64),
            "ops" => self.ops.map(|v| v as f64),
            _ => None,
        }
    }
}

/// The figures [`Entry::figure`] knows.
pub const FIGURES: &[&str] = &["throughput", "p50", "p99", "errors", "ops"];

/// What to list.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Only this workload.
    pub workload: Option<String>,
    /// Only this target kind.
    pub target: Option<String>,
    /// Only runs started at or after this RFC 3339 time (a prefix such as `2026-12-01` works).
    pub since: Option<String>,
    /// Only runs with all these `--set` settings.
    pub settings: Vec<(String, String)>,
}

fn db_err(path: &Path, e: rusqlite::Error) -> Error {
    Error::Format {
        path: path.to_owned(),
        msg: format!("run catalogue: {e}"),
    }
}

/// Opens (creating if needed) the catalogue of a runs directory.
pub fn open(runs: &Path) -> Result<Connection> {
    let path = runs.join(CATALOG_FILE);
    let conn = Connection::open(&path).map_err(|e| db_err(&path, e))?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(|e| db_err(&path, e))?;
    conn.execute_batch(SCHEMA).map_err(|e| db_err(&path, e))?;
    Ok(conn)
}

/// The runs directory a run belongs to (its parent; `.` for a bare relative name).
pub fn runs_dir_of(run: &Path) -> PathBuf {
    match run.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// Computes a run's catalogue entry from its manifest (and, once it has ended, its events).
pub fn entry_for(run: &RunDir) -> Result<Entry> {
    let m = &run.manifest;
    let dir = run
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| run.path.display().to_string());
    let (target, server_version, settings) = match &m.target {
        Some(t) => (
            t.kind.clone(),
            t.server_version.clone(),
            t.settings_requested
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(","),
        ),
        None => (String::new(), String::new(), String::new()),
    };
    let mut e = Entry {
        dir,
        started_utc: m.started_utc.to_rfc3339(),
        ended_utc: m.ended_utc.map(|t| t.to_rfc3339()),
        source: m.source.clone(),
        workload: m.workload.name.clone(),
        target,
        server_version,
        settings,
        outcome: m.outcome.as_str().to_string(),
        headline_event: None,
        ops: None,
        errors: None,
        throughput: None,
        p50_ms: None,
        p99_ms: None,
    };
    if m.outcome != Outcome::Running {
        headline(run, &mut e)?;
    }
    Ok(e)
}

fn headline(run: &RunDir, e: &mut Entry) -> Result<()> {
    let mut ok: HashMap<u32, Vec<u64>> = HashMap::new();
    let mut count: HashMap<u32, u64> = HashMap::new();
    let (mut errors, mut oks) = (0u64, 0u64);
    let (mut first, mut last) = (u64::MAX, 0u64);
    let (names, _tail) = run.for_each_block(|_, block| {
        for ev in block.iter().filter(|ev| !ev.is_warmup()) {
            *count.entry(ev.name).or_default() += 1;
            first = first.min(ev.start_ns);
            last = last.max(ev.start_ns.saturating_add(ev.duration_ns));
            if ev.is_error() {
                errors += 1;
            } else {
                oks += 1;
                ok.entry(ev.name).or_default().push(ev.duration_ns);
            }
        }
    })?;
    let Some((&top, &n)) = count
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
    else {
        e.ops = Some(0);
        e.errors = Some(0);
        return Ok(());
    };
    e.headline_event = Some(names.name(top));
    e.ops = Some(n as i64);
    e.errors = Some(errors as i64);
    if last > first {
        e.throughput = Some(oks as f64 / ((last - first) as f64 / 1e9));
    }
    if let Some(d) = ok.get_mut(&top) {
        d.sort_unstable();
        e.p50_ms = Some(quantile_type7(d, 0.5) / 1e6);
        e.p99_ms = Some(quantile_type7(d, 0.99) / 1e6);
    }
    Ok(())
}

/// Enters (or replaces) a run in its runs directory's catalogue.
pub fn record(run: &RunDir) -> Result<()> {
    let entry = entry_for(run)?;
    let settings = run
        .manifest
        .target
        .as_ref()
        .map(|t| t.settings_requested.clone())
        .unwrap_or_default();
    let mut conn = open(&runs_dir_of(&run.path))?;
    put(&mut conn, &run.path, &entry, &settings)
}

fn put(conn: &mut Connection, path: &Path, e: &Entry, settings: &[(String, String)]) -> Result<()> {
    let tx = conn.transaction().map_err(|er| db_err(path, er))?;
    put_in(&tx, e, settings).map_err(|er| db_err(path, er))?;
    tx.commit().map_err(|er| db_err(path, er))
}

fn put_in(
    tx: &rusqlite::Transaction<'_>,
    e: &Entry,
    settings: &[(String, String)],
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT OR REPLACE INTO runs VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15)",
        params![
            e.dir,
            e.started_utc,
            e.ended_utc,
            e.source,
            e.workload,
            e.target,
            e.server_version,
            e.settings,
            e.outcome,
            e.headline_event,
            e.ops,
            e.errors,
            e.throughput,
            e.p50_ms,
            e.p99_ms
        ],
    )?;
    tx.execute("DELETE FROM settings WHERE dir = ?1", params![e.dir])?;
    for (k, v) in settings {
        tx.execute(
            "INSERT OR REPLACE INTO settings VALUES (?1,?2,?3)",
            params![e.dir, k, v],
        )?;
    }
    Ok(())
}

/// What [`rebuild`] did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Rebuilt {
    /// Runs catalogued.
    pub runs: usize,
    /// Directories with a manifest that could not be read, with why (they are left out).
    pub unreadable: Vec<String>,
}

/// Deletes the catalogue and recreates it from every run directory's manifest under `runs`.
pub fn rebuild(runs: &Path) -> Result<Rebuilt> {
    let path = runs.join(CATALOG_FILE);
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let p = PathBuf::from(format!("{}{suffix}", path.display()));
        if p.exists() {
            std::fs::remove_file(&p).map_err(|e| Error::io(&p, e))?;
        }
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(runs)
        .map_err(|e| Error::io(runs, e))?
        .filter_map(|d| d.ok().map(|d| d.path()))
        .filter(|p| p.join(MANIFEST_FILE).is_file())
        .collect();
    dirs.sort();
    let mut conn = open(runs)?;
    let tx = conn.transaction().map_err(|e| db_err(&path, e))?;
    let mut out = Rebuilt::default();
    for d in dirs {
        let entry = RunDir::open(&d).and_then(|r| Ok((entry_for(&r)?, r)));
        match entry {
            Ok((e, r)) => {
                let s = r
                    .manifest
                    .target
                    .as_ref()
                    .map(|t| t.settings_requested.clone())
                    .unwrap_or_default();
                put_in(&tx, &e, &s).map_err(|er| db_err(&path, er))?;
                out.runs += 1;
            }
            Err(err) => out.unreadable.push(format!("{}: {err}", d.display())),
        }
    }
    tx.commit().map_err(|e| db_err(&path, e))?;
    Ok(out)
}

/// Lists catalogued runs matching `f`, oldest first.
pub fn list(runs: &Path, f: &Filter) -> Result<Vec<Entry>> {
    let path = runs.join(CATALOG_FILE);
    let conn = open(runs)?;
    let mut sql = String::from("SELECT * FROM runs r WHERE 1=1");
    let mut args: Vec<String> = Vec::new();
    if let Some(w) = &f.workload {
        args.push(w.clone());
        sql.push_str(&format!(" AND workload = ?{}", args.len()));
    }
    if let Some(t) = &f.target {
        args.push(t.clone());
        sql.push_str(&format!(" AND target = ?{}", args.len()));
    }
    if let Some(s) = &f.since {
        args.push(s.clone());
        sql.push_str(&format!(" AND started_utc >= ?{}", args.len()));
    }
    for (k, v) in &f.settings {
        args.push(k.clone());
        args.push(v.clone());
        sql.push_str(&format!(
            " AND EXISTS (SELECT 1 FROM settings s WHERE s.dir = r.dir AND s.name = ?{} AND s.value = ?{})",
            args.len() - 1,
            args.len()
        ));
    }
    sql.push_str(" ORDER BY started_utc, dir");
    let mut stmt = conn.prepare(&sql).map_err(|e| db_err(&path, e))?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(args.iter()), |r| {
            Ok(Entry {
                dir: r.get(0)?,
                started_utc: r.get(1)?,
                ended_utc: r.get(2)?,
                source: r.get(3)?,
                workload: r.get(4)?,
                target: r.get(5)?,
                server_version: r.get(6)?,
                settings: r.get(7)?,
                outcome: r.get(8)?,
                headline_event: r.get(9)?,
                ops: r.get(10)?,
                errors: r.get(11)?,
                throughput: r.get(12)?,
                p50_ms: r.get(13)?,
                p99_ms: r.get(14)?,
            })
        })
        .map_err(|e| db_err(&path, e))?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .map_err(|e| db_err(&path, e))
}

/// True when the runs directory has a catalogue file.
pub fn exists(runs: &Path) -> bool {
    runs.join(CATALOG_FILE).is_file()
}

/// Looks up one run by directory name.
pub fn get(runs: &Path, dir: &str) -> Result<Option<Entry>> {
    let all = list(runs, &Filter::default())?;
    Ok(all.into_iter().find(|e| e.dir == dir))
}

/// A text sparkline of `values` (one block character each, low to high).
pub fn sparkline(values: &[f64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
            (l.min(v), h.max(v))
        });
    values
        .iter()
        .map(|&v| {
            if hi > lo {
                BARS[(((v - lo) / (hi - lo)) * 7.0).round() as usize]
            } else {
                BARS[3]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Event, NameTable, EVENT_WARMUP};
    use crate::files::EVENTS_FILE;
    use crate::manifest::{Manifest, TargetInfo, WorkloadInfo};
    use crate::run::EventWriter;

    const MS: u64 = 1_000_000;

    /// A run under `runs/NAME` as a source makes one: created (`running`), events written, then
    /// its final manifest saved with `outcome` — or never, when `outcome` is `Running` (killed).
    fn make_run(runs: &Path, name: &str, workload: &str, set: &[(&str, &str)], outcome: Outcome) {
        let mut m = Manifest::new(
            "run",
            WorkloadInfo {
                name: workload.into(),
                ..WorkloadInfo::default()
            },
            1,
        );
        m.target = Some(TargetInfo {
            kind: "sqlite".into(),
            server_version: "3.50.2".into(),
            settings_requested: set
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..TargetInfo::default()
        });
        let mut run = RunDir::create(&runs.join(name), m).unwrap();
        let names = NameTable::new();
        let mut w = EventWriter::create(&run.path.join(EVENTS_FILE), names.clone()).unwrap();
        let q = names.intern("q");
        let connect = names.intern("connect");
        // 100 measured `q`: durations 1..=100 ms, one every 10 ms; 3 warm-up ones (left out);
        // 5 failed `connect`.
        let mut evs: Vec<Event> = (1..=100u64)
            .map(|i| Event {
                name: q,
                start_ns: (i - 1) * 10 * MS,
                duration_ns: i * MS,
                ..Event::default()
            })
            .collect();
        evs.extend((0..3).map(|_| Event {
            name: q,
            duration_ns: 5000 * MS,
            flags: EVENT_WARMUP,
            ..Event::default()
        }));
        evs.extend((0..5).map(|i| Event {
            name: connect,
            start_ns: i * MS,
            duration_ns: MS,
            outcome: 1,
            ..Event::default()
        }));
        w.write_block(&evs).unwrap();
        w.sync().unwrap();
        if outcome != Outcome::Running {
            run.manifest.outcome = outcome;
            run.manifest.ended_utc = Some(chrono::Utc::now());
            run.save_manifest().unwrap();
        }
    }

    #[test]
    fn a_run_is_listed_running_then_with_its_headline_figures_as_r_computes_them() {
        let tmp = tempfile::tempdir().unwrap();
        let runs = tmp.path().join("runs");
        make_run(&runs, "a", "commit", &[], Outcome::Running);
        let e = get(&runs, "a").unwrap().expect("listed as soon as created");
        assert!(e.is_incomplete());
        assert_eq!(e.p99_ms, None);

        make_run(&runs, "b", "commit", &[], Outcome::Complete);
        let e = get(&runs, "b").unwrap().unwrap();
        assert_eq!(e.outcome, "complete");
        assert_eq!(e.headline_event.as_deref(), Some("q"));
        assert_eq!(e.ops, Some(100));
        assert_eq!(e.errors, Some(5));
        // R: quantile(1:100, c(.5, .99)) -> 50.50 99.01
        assert!((e.p50_ms.unwrap() - 50.5).abs() < 1e-9, "{e:?}");
        assert!((e.p99_ms.unwrap() - 99.01).abs() < 1e-9, "{e:?}");
        // 100 successful ops from 0 to the last end, 990 + 100 ms.
        assert!((e.throughput.unwrap() - 100.0 / 1.09).abs() < 1e-9, "{e:?}");
        assert_eq!(e.target, "sqlite");
        assert_eq!(e.server_version, "3.50.2");
    }

    #[test]
    fn rebuild_from_the_manifests_gives_the_same_catalogue() {
        let tmp = tempfile::tempdir().unwrap();
        let runs = tmp.path().to_path_buf();
        make_run(
            &runs,
            "r1",
            "commit",
            &[("synchronous", "off")],
            Outcome::Complete,
        );
        make_run(&runs, "r2", "select", &[], Outcome::Failed);
        make_run(&runs, "r3", "commit", &[], Outcome::Running);
        std::fs::create_dir(runs.join("broken")).unwrap();
        std::fs::write(runs.join("broken").join(MANIFEST_FILE), "{ not json").unwrap();
        let before = list(&runs, &Filter::default()).unwrap();
        assert_eq!(before.len(), 3);

        std::fs::remove_file(runs.join(CATALOG_FILE)).unwrap();
        let r = rebuild(&runs).unwrap();
        assert_eq!(r.runs, 3);
        assert_eq!(r.unreadable.len(), 1, "{r:?}");
        assert!(r.unreadable[0].contains("broken"), "{r:?}");
        assert_eq!(list(&runs, &Filter::default()).unwrap(), before);
        // Rebuilding over an existing catalogue is the same too.
        rebuild(&runs).unwrap();
        assert_eq!(list(&runs, &Filter::default()).unwrap(), before);
    }

    #[test]
    fn filters_select_by_workload_target_time_and_setting() {
        let tmp = tempfile::tempdir().unwrap();
        let runs = tmp.path().to_path_buf();
        make_run(
            &runs,
            "r1",
            "commit",
            &[("synchronous", "off")],
            Outcome::Complete,
        );
        make_run(
            &runs,
            "r2",
            "select",
            &[("synchronous", "full")],
            Outcome::Complete,
        );
        make_run(&runs, "r3", "commit", &[], Outcome::Complete);
        let dirs = |f: Filter| -> Vec<String> {
            list(&runs, &f)
                .unwrap()
                .into_iter()
                .map(|e| e.dir)
                .collect()
        };
        let w = Filter {
            workload: Some("commit".into()),
            ..Filter::default()
        };
        assert_eq!(dirs(w), ["r1", "r3"]);
        let s = Filter {
            settings: vec![("synchronous".into(), "off".into())],
            ..Filter::default()
        };
        assert_eq!(dirs(s), ["r1"]);
        let t = Filter {
            target: Some("postgres".into()),
            ..Filter::default()
        };
        assert!(dirs(t).is_empty());
        let since = Filter {
            since: Some("2999-01-01".into()),
            ..Filter::default()
        };
        assert!(dirs(since).is_empty());
        let since = Filter {
            since: Some("2000-01-01".into()),
            ..Filter::default()
        };
        assert_eq!(dirs(since).len(), 3);
    }

    #[test]
    fn sparkline_spans_low_to_high() {
        assert_eq!(sparkline(&[1.0, 2.0, 8.0]), "▁▂█");
        assert_eq!(sparkline(&[3.0, 3.0]), "▄▄");
        assert_eq!(sparkline(&[]), "");
    }
}
