//! The lab notebook's catalogue: one SQLite file per runs directory (`<runs>/.dbscope-history.sqlite`)
//! listing every run under it — when, what, against which target, its outcome and headline figures.
//!
//! It is an index, never the record: every row is derived from a run's `manifest.json` and events,
//! so [`crate::run::rebuild_catalog`] recreates it identically from the manifests. [`crate::run::RunDir::save_manifest`]
//! keeps it up to date for every source (a run is entered as `running` when created, so a run killed
//! by SIGKILL stays listed as incomplete; its figures are filled in when its final manifest is saved).

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::manifest::Outcome;

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
CREATE TABLE IF NOT EXISTS baselines (
    name TEXT NOT NULL,
    position INTEGER NOT NULL,
    dir TEXT NOT NULL,
    set_utc TEXT NOT NULL,
    PRIMARY KEY (name, position)
);
CREATE INDEX IF NOT EXISTS baselines_dir ON baselines(dir);
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
    /// Only the runs of this baseline ([`crate::baseline`]).
    pub baseline: Option<String>,
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

/// Enters (or replaces) one run.
pub fn put(
    conn: &mut Connection,
    path: &Path,
    e: &Entry,
    settings: &[(String, String)],
) -> Result<()> {
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

/// What [`crate::run::rebuild_catalog`] did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Rebuilt {
    /// Runs catalogued.
    pub runs: usize,
    /// Directories with a manifest that could not be read, with why (they are left out).
    pub unreadable: Vec<String>,
}

/// Deletes the catalogue files of a runs directory (before a rebuild).
pub fn remove(runs: &Path) -> Result<()> {
    let path = runs.join(CATALOG_FILE);
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let p = PathBuf::from(format!("{}{suffix}", path.display()));
        if p.exists() {
            std::fs::remove_file(&p).map_err(|e| Error::io(&p, e))?;
        }
    }
    Ok(())
}

/// Enters many runs, and the baselines of the runs directory's baselines file, in one transaction.
pub fn put_all(runs: &Path, entries: &[(Entry, Vec<(String, String)>)]) -> Result<()> {
    let path = runs.join(CATALOG_FILE);
    let baselines = crate::baseline::read(runs)?;
    let mut conn = open(runs)?;
    let tx = conn.transaction().map_err(|e| db_err(&path, e))?;
    for (e, s) in entries {
        put_in(&tx, e, s).map_err(|er| db_err(&path, er))?;
    }
    put_baselines_in(&tx, &baselines).map_err(|e| db_err(&path, e))?;
    tx.commit().map_err(|e| db_err(&path, e))
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
    if let Some(b) = &f.baseline {
        args.push(b.clone());
        sql.push_str(&format!(
            " AND EXISTS (SELECT 1 FROM baselines b WHERE b.dir = r.dir AND b.name = ?{})",
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

/// Writes a runs directory's baselines file (the record, [`crate::baseline::write`]) and mirrors
/// it into the catalogue's `baselines` table. A catalogue that cannot be written is reported,
/// never fails (as for runs): `history --rebuild` mirrors the file again.
pub fn save_baselines(runs: &Path, b: &crate::baseline::Baselines) -> Result<()> {
    crate::baseline::write(runs, b)?;
    if let Err(e) = put_baselines(runs, b) {
        eprintln!("dbscope: warning: baselines not mirrored in the run catalogue: {e}");
    }
    Ok(())
}

/// Replaces the catalogue's `baselines` table with the baselines of `b` (a mirror of the
/// baselines file, which is the record).
pub fn put_baselines(runs: &Path, b: &crate::baseline::Baselines) -> Result<()> {
    let path = runs.join(CATALOG_FILE);
    let mut conn = open(runs)?;
    let tx = conn.transaction().map_err(|e| db_err(&path, e))?;
    put_baselines_in(&tx, b).map_err(|e| db_err(&path, e))?;
    tx.commit().map_err(|e| db_err(&path, e))
}

fn put_baselines_in(
    tx: &rusqlite::Transaction<'_>,
    b: &crate::baseline::Baselines,
) -> rusqlite::Result<()> {
    tx.execute("DELETE FROM baselines", [])?;
    for (name, bl) in &b.baselines {
        for (i, dir) in bl.runs.iter().enumerate() {
            tx.execute(
                "INSERT INTO baselines VALUES (?1,?2,?3,?4)",
                params![name, i as i64, dir, bl.set_utc],
            )?;
        }
    }
    Ok(())
}

/// Every (baseline, run directory) pair the catalogue records, by name then position.
pub fn baseline_members(runs: &Path) -> Result<Vec<(String, String)>> {
    let path = runs.join(CATALOG_FILE);
    let conn = open(runs)?;
    let mut stmt = conn
        .prepare("SELECT name, dir FROM baselines ORDER BY name, position")
        .map_err(|e| db_err(&path, e))?;
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(|e| db_err(&path, e))?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .map_err(|e| db_err(&path, e))
}

/// Removes one run from the catalogue (a run whose directory was removed again, e.g. an import
/// that failed and left nothing behind). Nothing happens when there is no catalogue.
pub fn forget(runs: &Path, dir: &str) -> Result<()> {
    if !exists(runs) {
        return Ok(());
    }
    let path = runs.join(CATALOG_FILE);
    let conn = open(runs)?;
    conn.execute("DELETE FROM settings WHERE dir = ?1", params![dir])
        .and_then(|_| conn.execute("DELETE FROM runs WHERE dir = ?1", params![dir]))
        .map_err(|e| db_err(&path, e))?;
    Ok(())
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
