//! The `scan` workload (seed 000's TDE experiment, issue 31): one table of `--rows` rows of
//! `--row-bytes`, filled once; each operation a full scan that reads every page, in one of three
//! cache states (`--cache cold|os|engine`): *cold* empties the file's OS page cache and opens a
//! new connection with a small page cache before each scan; *os* keeps the OS cache warm but
//! SQLite's own cache too small to hold the table, so every scan reads (and on SQLCipher
//! decrypts) every page again — Oracle's direct path read; *engine* sizes SQLite's cache to hold
//! the table, so scans after the first read (and decrypt) nothing — the seed's event 10949.
//! Per scan: pages read (`sqlite3_db_status` cache misses), hits, bytes, MB/s and the process's
//! storage reads (`/proc/self/io`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use dbscope_core::counters::{Column, Counter, CounterSection, CounterTable, CounterValue};
use dbscope_core::{NameId, Recorder, StopSignal};

use super::place;
use super::work::{check_identifier, timed, SessionWork, Workload};
use crate::error::Error;
use dbscope_db::{Dialect, Session, Target, TargetError, TargetResult};

/// Pages of SQLite's page cache in the `cold` and `os` states: far too few to hold a table.
pub const SMALL_CACHE_PAGES: u64 = 16;

/// The cache state each scan starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanCache {
    /// The file's OS page cache emptied and a new connection (empty page cache) before each scan.
    Cold,
    /// OS page cache warm; SQLite's own cache too small: every scan reads every page from the OS.
    Os,
    /// SQLite's cache holds the table: scans after the first read nothing from the file.
    Engine,
}

impl ScanCache {
    /// The option's word.
    pub fn as_str(&self) -> &'static str {
        match self {
            ScanCache::Cold => "cold",
            ScanCache::Os => "os",
            ScanCache::Engine => "engine",
        }
    }
}

impl FromStr for ScanCache {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "cold" => Ok(ScanCache::Cold),
            "os" => Ok(ScanCache::Os),
            "engine" => Ok(ScanCache::Engine),
            _ => Err(Error::invalid(
                "cache",
                format!("{s:?}: the scan workload takes `cold`, `os` or `engine`"),
            )),
        }
    }
}

/// The scan workload's options.
#[derive(Clone, Debug)]
pub struct ScanConfig {
    /// Table name.
    pub table: String,
    /// Rows in the table.
    pub rows: u64,
    /// Bytes of user data per row: the 8-byte id plus a text pad of `row_bytes - 8`.
    pub row_bytes: u32,
    /// The cache state of each scan.
    pub cache: ScanCache,
    /// Drop and refill the table first.
    pub fresh: bool,
}

/// One scan's figures.
#[derive(Clone, Debug, Default)]
struct ScanStat {
    elapsed_s: f64,
    hits: i64,
    misses: i64,
    os_read_bytes: Option<u64>,
    key_derivation_s: Option<f64>,
}

/// What setup found out about the table, shared with the sessions.
#[derive(Clone, Debug, Default)]
struct TableFacts {
    file: Option<PathBuf>,
    page_size: u64,
    pages: u64,
    /// The answer every scan must give (count, sum of ids, checksum of the pads).
    answer: Vec<Option<String>>,
}

/// The scan workload.
pub struct ScanWorkload {
    cfg: ScanConfig,
    dialect: Dialect,
    notes: Arc<Mutex<Vec<String>>>,
    facts: Arc<Mutex<TableFacts>>,
    scans: Arc<Mutex<Vec<ScanStat>>>,
    fill_s: Mutex<Option<f64>>,
    /// The scan statement: ours ([`ScanWorkload::own_scan_sql`]), or one built for an existing
    /// table's columns by setup.
    sql: Mutex<String>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ScanWorkload {
    /// The name runs record ([`Workload::name`]).
    pub const NAME: &'static str = "scan";
    /// The headline event ([`Workload::headline_event`]).
    pub const HEADLINE: &'static str = "scan";

    /// Checks the options.
    pub fn new(cfg: ScanConfig, dialect: Dialect) -> Result<Self, Error> {
        check_identifier(&cfg.table)?;
        if cfg.rows == 0 || cfg.rows > i64::MAX as u64 / 2 {
            return Err(Error::invalid("rows", "must be at least 1"));
        }
        if !(9..=100_000).contains(&cfg.row_bytes) {
            return Err(Error::invalid(
                "row_bytes",
                format!(
                    "{}: expected 9 to 100000 (8 bytes of id plus at least 1 of pad)",
                    cfg.row_bytes
                ),
            ));
        }
        if dialect != Dialect::Sqlite {
            return Err(Error::Config(
                "the scan workload runs on sqlite: and sqlcipher: targets (it measures SQLite's \
                 page cache and SQLCipher's decryption; community PostgreSQL has no transparent \
                 data encryption: docs/tde.md)"
                    .into(),
            ));
        }
        Ok(ScanWorkload {
            dialect,
            notes: Arc::default(),
            facts: Arc::default(),
            scans: Arc::default(),
            fill_s: Mutex::new(None),
            sql: Mutex::new(Self::own_scan_sql(&cfg.table)),
            cfg,
        })
    }

    fn note(&self, s: String) {
        lock(&self.notes).push(s);
    }

    /// The scan: every row's id and the last character of its pad (which makes SQLite read the
    /// pad itself, overflow pages included, where `length()` would not).
    fn own_scan_sql(table: &str) -> String {
        format!("SELECT count(*), sum(id), sum(unicode(substr(pad, -1))) FROM {table}")
    }

    /// The scan of a table dbscope did not make: every column's bytes (the CAST makes SQLite read
    /// each value, which `length()` of a column alone would not).
    fn foreign_scan_sql(s: &mut dyn Session, table: &str) -> TargetResult<String> {
        let cols = s.query_rows(
            &format!("SELECT name FROM pragma_table_info('{table}')"),
            &[],
        )?;
        let terms: Vec<String> = cols
            .iter()
            .filter_map(|r| r.first().cloned().flatten())
            .map(|c| {
                format!(
                    "coalesce(length(CAST(\"{}\" AS BLOB)), 0)",
                    c.replace('"', "\"\"")
                )
            })
            .collect();
        if terms.is_empty() {
            return Err(TargetError::config(format!(
                "table {table} has no columns to scan"
            )));
        }
        Ok(format!(
            "SELECT count(*), sum({}) FROM {table}",
            terms.join(" + ")
        ))
    }

    fn setup_sqlite(&self, s: &mut dyn Session) -> TargetResult<()> {
        let t = &self.cfg.table;
        let shape = format!("rows={} row_bytes={}", self.cfg.rows, self.cfg.row_bytes);
        let exists = place::table_exists(s, Dialect::Sqlite, "", t)?;
        // The shape dbscope recorded when it made the table; none: not dbscope's table.
        let ours = match place::table_exists(s, Dialect::Sqlite, "", "dbscope_scan_shape")? {
            false => None,
            true => s
                .query_rows(
                    "SELECT shape FROM dbscope_scan_shape WHERE tbl = ?1",
                    &[dbscope_db::Param::Text(t.clone())],
                )?
                .first()
                .and_then(|r| r.first().cloned().flatten()),
        };
        if exists && ours.is_none() {
            if self.cfg.fresh {
                return Err(TargetError::config(format!(
                    "--fresh would drop table {t}, which dbscope did not make: scan it as it is \
                     (without --fresh), or name another --table"
                )));
            }
            *lock(&self.sql) = Self::foreign_scan_sql(s, t)?;
            self.note(format!(
                "table {t} exists and is not dbscope's: scanned as it is (every column of every \
                 row; --rows and --row-bytes do not apply)"
            ));
        } else if exists && !self.cfg.fresh && ours.as_deref() == Some(shape.as_str()) {
            self.note(format!("table {t} reused ({shape})"));
        } else {
            if exists {
                s.batch(&format!("DROP TABLE {t}"))?;
            }
            let started = Instant::now();
            let pad = self.cfg.row_bytes as u64 - 8;
            s.begin()?;
            // The pad: a row marker, then hex digits of a per-row value, cut to length: text an
            // eye finds in a clear file (`dbscope-row-…`), and no two rows alike.
            let filled = s
                .batch(&format!(
                    "CREATE TABLE {t} (id INTEGER PRIMARY KEY, pad TEXT NOT NULL);
                     INSERT INTO {t} (id, pad) WITH RECURSIVE k(i) AS
                       (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < {rows})
                     SELECT i, substr('dbscope-row-' || i || '-' ||
                       hex(zeroblob({pad} / 2 + 1)) || printf('%x', i * 2654435761), 1, {pad})
                     FROM k;
                     CREATE TABLE IF NOT EXISTS dbscope_scan_shape (tbl TEXT PRIMARY KEY, shape TEXT);
                     INSERT OR REPLACE INTO dbscope_scan_shape VALUES ('{t}', '{shape}');",
                    rows = self.cfg.rows
                ))
                .and_then(|()| s.commit());
            if let Err(e) = filled {
                let _ = s.rollback();
                return Err(e);
            }
            *lock(&self.fill_s) = Some(started.elapsed().as_secs_f64());
            self.note(format!(
                "table {t} created and filled in one transaction ({shape})"
            ));
        }
        // As text: on SQLCipher `PRAGMA page_size` answers with cipher_page_size, as text.
        let one = |s: &mut dyn Session, sql: &str| -> TargetResult<u64> {
            let rows = s.query_rows(sql, &[])?;
            let v = rows.first().and_then(|r| r.first().cloned().flatten());
            v.as_deref()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| TargetError::config(format!("{sql} answered {v:?}, not a number")))
        };
        let page_size = one(s, "PRAGMA page_size")?;
        let pages = one(s, "PRAGMA page_count")?;
        // The answer, read now (this also leaves the file in the OS page cache for `os`).
        let answer = s
            .query_rows(&lock(&self.sql).clone(), &[])?
            .into_iter()
            .next()
            .unwrap_or_default();
        let file = place::sqlite_file_of(s, "main")?;
        let cache_note = match self.cfg.cache {
            ScanCache::Cold => format!(
                "cold: before each scan the file's OS page cache is emptied (fdatasync, then \
                 posix_fadvise DONTNEED) and the session opens a new connection (key derivation \
                 included on SQLCipher) with cache_size = {SMALL_CACHE_PAGES} pages"
            ),
            ScanCache::Os => format!(
                "os: the file stays in the OS page cache; SQLite's cache is {SMALL_CACHE_PAGES} \
                 pages of the table's {pages}, so every scan reads (and on SQLCipher decrypts) \
                 every page again (Oracle's direct path read)"
            ),
            ScanCache::Engine => format!(
                "engine: SQLite's cache holds {} pages, the whole file of {pages}: the first \
                 scan reads the table, later ones read (and decrypt) nothing (Oracle's event \
                 10949 with a large enough buffer cache)",
                pages + 64
            ),
        };
        self.note(cache_note);
        *lock(&self.facts) = TableFacts {
            file,
            page_size,
            pages,
            answer,
        };
        Ok(())
    }
}

impl Workload for ScanWorkload {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn params(&self) -> BTreeMap<String, serde_json::Value> {
        BTreeMap::from([
            ("table".to_string(), self.cfg.table.clone().into()),
            ("rows".to_string(), self.cfg.rows.into()),
            ("row_bytes".to_string(), self.cfg.row_bytes.into()),
            ("cache".to_string(), self.cfg.cache.as_str().into()),
            ("fresh".to_string(), self.cfg.fresh.into()),
            ("setup".to_string(), lock(&self.notes).clone().into()),
        ])
    }

    fn headline_event(&self) -> &'static str {
        Self::HEADLINE
    }

    fn tables(&self) -> Vec<String> {
        vec![self.cfg.table.clone()]
    }

    fn setup(&self, target: &dyn Target, sessions: u32, _stop: &StopSignal) -> TargetResult<()> {
        if sessions != 1 {
            return Err(TargetError::config(
                "the scan workload measures one session's scans, as seed 000 did: --sessions 1 \
                 (the OS read counters are the process's, and a cold scan empties the file's cache \
                 under every session)",
            ));
        }
        match self.dialect {
            Dialect::Sqlite => {
                let mut s = target.connect()?;
                self.setup_sqlite(s.as_mut())
            }
            _ => Err(TargetError::config(
                "the scan workload runs on sqlite: and sqlcipher: targets",
            )),
        }
    }

    fn session(&self, _session: u32, _seed: u64) -> Box<dyn SessionWork> {
        Box::new(ScanSession {
            cache: self.cfg.cache,
            sql: lock(&self.sql).clone(),
            facts: self.facts.clone(),
            notes: self.notes.clone(),
            scans: self.scans.clone(),
            opened: false,
            names: None,
            warned_drop: false,
        })
    }

    fn counters(&self) -> Option<CounterSection> {
        let facts = lock(&self.facts).clone();
        let scans = lock(&self.scans).clone();
        let table_bytes = facts.pages * facts.page_size;
        let mb = |bytes: f64, s: f64| (s > 0.0).then(|| bytes / 1e6 / s);
        let mut counters = vec![
            Counter::new(
                "cache",
                "cache state",
                CounterValue::Text(self.cfg.cache.as_str().into()),
                "",
            ),
            Counter::new(
                "page_size",
                "page size",
                CounterValue::count(facts.page_size),
                "B",
            ),
            Counter::new(
                "file_pages",
                "pages in the file",
                CounterValue::count(facts.pages),
                "pages",
            ),
            Counter::new(
                "file_bytes",
                "file size",
                CounterValue::count(table_bytes),
                "B",
            ),
            Counter::new(
                "scans",
                "scans",
                CounterValue::count(scans.len() as u64),
                "",
            ),
            Counter::new(
                "answer",
                "every scan's answer (rows, sum of ids, pad checksum)",
                CounterValue::Text(
                    facts
                        .answer
                        .iter()
                        .map(|v| v.as_deref().unwrap_or("NULL"))
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                "",
            ),
        ];
        counters.splice(
            0..0,
            super::work::table_shape_counters(self.cfg.rows, self.cfg.row_bytes as u64),
        );
        if let Some(s) = *lock(&self.fill_s) {
            counters
                .push(Counter::new("fill_s", "fill time", CounterValue::Float(s), "s").decimals(3));
        }
        let rows = scans
            .iter()
            .enumerate()
            .map(|(i, st)| {
                let read = st.misses.max(0) as u64 * facts.page_size;
                vec![
                    CounterValue::count(i as u64 + 1),
                    CounterValue::Float(st.elapsed_s * 1e3),
                    CounterValue::Int(st.misses),
                    CounterValue::Int(st.hits),
                    CounterValue::count(read),
                    CounterValue::float(mb(table_bytes as f64, st.elapsed_s)),
                    match st.os_read_bytes {
                        Some(b) => CounterValue::count(b),
                        None => CounterValue::Text("-".into()),
                    },
                    CounterValue::float(st.key_derivation_s.map(|s| s * 1e3)),
                ]
            })
            .collect();
        let tables = vec![CounterTable {
            key: "scans".into(),
            title: "each scan: pages read are SQLite cache misses (each one a read, and a decrypt \
                    on SQLCipher)"
                .into(),
            columns: vec![
                Column::new("scan", "scan", ""),
                Column::new("elapsed_ms", "elapsed", "ms").decimals(2),
                Column::new("pages_read", "pages read", "pages"),
                Column::new("cache_hits", "cache hits", "pages"),
                Column::new("bytes_read", "bytes read", "B"),
                Column::new("mb_s", "file MB/s", "MB/s").decimals(1),
                Column::new("os_read_bytes", "OS reads", "B"),
                Column::new("key_derivation_ms", "key derivation", "ms").decimals(2),
            ],
            rows,
        }];
        Some(CounterSection {
            key: "scan".into(),
            title: "scan: table, cache state and each scan".into(),
            final_counts: true,
            counters,
            tables,
            notes: lock(&self.notes).clone(),
        })
    }
}

/// The process's storage reads so far (`read_bytes` of /proc/self/io), when readable.
fn os_read_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("read_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// A counter of `sqlite3_db_status` by name (0 when the target keeps none).
fn counter(now: &[(&'static str, i64)], name: &str) -> i64 {
    now.iter().find(|(n, _)| *n == name).map_or(0, |p| p.1)
}

struct ScanSession {
    cache: ScanCache,
    sql: String,
    facts: Arc<Mutex<TableFacts>>,
    notes: Arc<Mutex<Vec<String>>>,
    scans: Arc<Mutex<Vec<ScanStat>>>,
    /// The session opened its own connection (the first operation's `open` event).
    opened: bool,
    /// `open`, `key_derivation`, `scan`.
    names: Option<(NameId, NameId, NameId)>,
    warned_drop: bool,
}

impl ScanSession {
    /// Opens a new connection, recorded as `open` and, on SQLCipher, `key_derivation` inside it;
    /// then sizes its page cache for the cache state.
    fn open(&mut self, sess: &mut dyn Session, rec: &mut Recorder) -> TargetResult<Option<f64>> {
        let (open, kdf, _) = self
            .names
            .ok_or_else(|| TargetError::config("scan: not prepared"))?;
        let (t0, i0) = (rec.now(), Instant::now());
        let r = sess.reopen();
        let t1 = rec.now();
        let derived = match r {
            Ok(d) => d,
            Err(e) => {
                rec.error(open, t0, t1, &e.class);
                return Err(e);
            }
        };
        // The key derivation inside the open, placed on the run clock by its Instant; recorded
        // first, as events go in the order they end.
        if let Some((started, took)) = derived {
            let start = t0 + started.saturating_duration_since(i0).as_nanos() as u64;
            rec.ok(kdf, start, (start + took.as_nanos() as u64).min(t1), 0);
        }
        rec.ok(open, t0, t1, 0);
        let pages = match self.cache {
            ScanCache::Cold | ScanCache::Os => SMALL_CACHE_PAGES,
            ScanCache::Engine => lock(&self.facts).pages + 64,
        };
        sess.batch(&format!("PRAGMA cache_size = {pages}"))?;
        Ok(derived.map(|(_, d)| d.as_secs_f64()))
    }

    fn make_cold(&mut self) {
        let file = lock(&self.facts).file.clone();
        let why = match &file {
            None => Some("an in-memory database has no file".to_string()),
            Some(f) => place::drop_os_cache(f, false)
                .err()
                .map(|e| format!("{}: {e}", f.display())),
        };
        if let (Some(why), false) = (why, self.warned_drop) {
            self.warned_drop = true;
            lock(&self.notes).push(format!(
                "cold: the OS page cache could NOT be emptied ({why}): scans read from it"
            ));
        }
    }
}

impl SessionWork for ScanSession {
    fn prepare(&mut self, _sess: &mut dyn Session, rec: &Recorder) -> TargetResult<()> {
        self.names = Some((
            rec.name("open"),
            rec.name("key_derivation"),
            rec.name("scan"),
        ));
        // A replacement connection (after a lost one) is opened and sized again.
        self.opened = false;
        Ok(())
    }

    fn step(&mut self, sess: &mut dyn Session, rec: &mut Recorder) -> Result<(), TargetError> {
        let (_, _, scan) = self
            .names
            .ok_or_else(|| TargetError::config("scan: not prepared"))?;
        if self.cache == ScanCache::Cold {
            // Between scans and before the connection: neither event includes it.
            self.make_cold();
        }
        let mut key_derivation_s = None;
        if self.cache == ScanCache::Cold || !self.opened {
            key_derivation_s = self.open(sess, rec)?;
            self.opened = true;
        }
        let before = sess.status_counters();
        let io0 = os_read_bytes();
        let t0 = rec.now();
        let answer = lock(&self.facts).answer.clone();
        let (rows, t1) = timed(
            rec,
            scan,
            t0,
            || sess.query_rows(&self.sql, &[]),
            |rows| match rows.first() {
                Some(r) if *r == answer => {
                    Ok(r[0].as_deref().and_then(|n| n.parse().ok()).unwrap_or(0))
                }
                got => Err(TargetError {
                    class: "check:scan".into(),
                    sqlstate: None,
                    mysql_code: None,
                    message: format!("the scan answered {got:?}, setup's answer was {answer:?}"),
                    connection_lost: false,
                }),
            },
        );
        let io1 = os_read_bytes();
        let after = sess.status_counters();
        rows?;
        lock(&self.scans).push(ScanStat {
            elapsed_s: (t1 - t0) as f64 / 1e9,
            hits: counter(&after, "cache_hit") - counter(&before, "cache_hit"),
            misses: counter(&after, "cache_miss") - counter(&before, "cache_miss"),
            os_read_bytes: io0.zip(io1).map(|(a, b)| b.saturating_sub(a)),
            key_derivation_s,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_checked() {
        let cfg = ScanConfig {
            table: "t".into(),
            rows: 10,
            row_bytes: 100,
            cache: ScanCache::Os,
            fresh: false,
        };
        assert!(ScanWorkload::new(cfg.clone(), Dialect::Sqlite).is_ok());
        assert!(ScanWorkload::new(cfg.clone(), Dialect::Postgres).is_err());
        let bad = ScanConfig {
            row_bytes: 8,
            ..cfg.clone()
        };
        assert!(ScanWorkload::new(bad, Dialect::Sqlite).is_err());
        assert_eq!("engine".parse::<ScanCache>().unwrap(), ScanCache::Engine);
        assert!("warm".parse::<ScanCache>().is_err());
    }
}
