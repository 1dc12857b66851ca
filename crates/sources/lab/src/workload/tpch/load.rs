//! Loads generated `.tbl` files into a target through the `Session` trait: the TPC-H schema, then
//! prepared multi-row INSERTs (a JSON array of rows per execution, unpacked by the database) in
//! large transactions. Also stores the map/combine/reduce Q1 answer beside the data, so the
//! `tpch-q1` workload can check the database's rows against it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use dbscope_tpch::q1::Q1Answer;

use super::reference::reference_values;
pub use super::reference::REFERENCE_TABLE;
use dbscope_core::RunClock;
use dbscope_db::{Dialect, Param, Session, Target, TargetError};

/// Rows packed into one INSERT execution.
pub const ROWS_PER_INSERT: usize = 1000;

/// Column name and SQL type of each table, in TPC-H order (specification, clause 1.4).
pub const SCHEMA: [(&str, &[(&str, &str)]); 8] = [
    (
        "region",
        &[
            ("r_regionkey", "INTEGER"),
            ("r_name", "CHAR(25)"),
            ("r_comment", "VARCHAR(152)"),
        ],
    ),
    (
        "nation",
        &[
            ("n_nationkey", "INTEGER"),
            ("n_name", "CHAR(25)"),
            ("n_regionkey", "INTEGER"),
            ("n_comment", "VARCHAR(152)"),
        ],
    ),
    (
        "supplier",
        &[
            ("s_suppkey", "BIGINT"),
            ("s_name", "CHAR(25)"),
            ("s_address", "VARCHAR(40)"),
            ("s_nationkey", "INTEGER"),
            ("s_phone", "CHAR(15)"),
            ("s_acctbal", "DECIMAL(15,2)"),
            ("s_comment", "VARCHAR(101)"),
        ],
    ),
    (
        "customer",
        &[
            ("c_custkey", "BIGINT"),
            ("c_name", "VARCHAR(25)"),
            ("c_address", "VARCHAR(40)"),
            ("c_nationkey", "INTEGER"),
            ("c_phone", "CHAR(15)"),
            ("c_acctbal", "DECIMAL(15,2)"),
            ("c_mktsegment", "CHAR(10)"),
            ("c_comment", "VARCHAR(117)"),
        ],
    ),
    (
        "part",
        &[
            ("p_partkey", "BIGINT"),
            ("p_name", "VARCHAR(55)"),
            ("p_mfgr", "CHAR(25)"),
            ("p_brand", "CHAR(10)"),
            ("p_type", "VARCHAR(25)"),
            ("p_size", "INTEGER"),
            ("p_container", "CHAR(10)"),
            ("p_retailprice", "DECIMAL(15,2)"),
            ("p_comment", "VARCHAR(23)"),
        ],
    ),
    (
        "partsupp",
        &[
            ("ps_partkey", "BIGINT"),
            ("ps_suppkey", "BIGINT"),
            ("ps_availqty", "INTEGER"),
            ("ps_supplycost", "DECIMAL(15,2)"),
            ("ps_comment", "VARCHAR(199)"),
        ],
    ),
    (
        "orders",
        &[
            ("o_orderkey", "BIGINT"),
            ("o_custkey", "BIGINT"),
            ("o_orderstatus", "CHAR(1)"),
            ("o_totalprice", "DECIMAL(15,2)"),
            ("o_orderdate", "DATE"),
            ("o_orderpriority", "CHAR(15)"),
            ("o_clerk", "CHAR(15)"),
            ("o_shippriority", "INTEGER"),
            ("o_comment", "VARCHAR(79)"),
        ],
    ),
    (
        "lineitem",
        &[
            ("l_orderkey", "BIGINT"),
            ("l_partkey", "BIGINT"),
            ("l_suppkey", "BIGINT"),
            ("l_linenumber", "INTEGER"),
            ("l_quantity", "DECIMAL(15,2)"),
            ("l_extendedprice", "DECIMAL(15,2)"),
            ("l_discount", "DECIMAL(15,2)"),
            ("l_tax", "DECIMAL(15,2)"),
            ("l_returnflag", "CHAR(1)"),
            ("l_linestatus", "CHAR(1)"),
            ("l_shipdate", "DATE"),
            ("l_commitdate", "DATE"),
            ("l_receiptdate", "DATE"),
            ("l_shipinstruct", "CHAR(25)"),
            ("l_shipmode", "CHAR(10)"),
            ("l_comment", "VARCHAR(44)"),
        ],
    ),
];

/// Errors of loading.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The database refused.
    #[error("{0}")]
    Target(#[from] TargetError),
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A line with the wrong number of fields.
    #[error(
        "{path}:{line}: expected {expected} '|'-terminated fields for table {table}, found {found}"
    )]
    Parse {
        /// The file.
        path: PathBuf,
        /// Line number, from 1.
        line: u64,
        /// The table.
        table: &'static str,
        /// Fields expected.
        expected: usize,
        /// Fields found.
        found: usize,
    },
    /// Input: a directory without TPC-H .tbl files.
    #[error("{dir}: no TPC-H .tbl files (lineitem.tbl, orders.tbl, …){}", other_formats_hint(.dir, .other))]
    NoTables {
        /// The directory.
        dir: PathBuf,
        /// A TPC-H file in another format (CSV or Parquet) the directory holds instead, if any.
        other: Option<PathBuf>,
    },
    /// Input: the null target, which holds no tables.
    #[error("the null target holds no tables; load into sqlite:PATH or postgres://…")]
    NullTarget,
    /// Input: a table could not be created (it exists, most likely).
    #[error("cannot create table {table}: {message} (add --fresh to replace existing tables)")]
    CreateTable {
        /// The table.
        table: &'static str,
        /// The database's message.
        message: String,
    },
    /// A reference value beyond 64 bits (a scale factor too large to store the reference).
    #[error(
        "Q1 value {value} does not fit in 64 bits (scale factor too large to store the reference)"
    )]
    ValueTooLarge {
        /// The value.
        value: i128,
    },
}

/// The end of [`LoadError::NoTables`]'s message: what the directory holds instead, the command
/// that made it, and the one that makes what `tpch load` reads.
fn other_formats_hint(dir: &Path, other: &Option<PathBuf>) -> String {
    let Some(f) = other else {
        return format!(
            "; generate them with `dbscope tpch gen --out {}`",
            dir.display()
        );
    };
    let format = match f.extension().and_then(|e| e.to_str()) {
        Some("parquet") => "parquet",
        _ => "csv",
    };
    format!(
        "; it holds {} (from `dbscope tpch gen --format {format}`), which tpch load does not read: make .tbl files with `dbscope tpch gen --format tbl --out DIR` at the same --sf",
        f.display()
    )
}

/// One file to load.
#[derive(Clone, Debug)]
pub struct LoadFile {
    /// Table name.
    pub table: &'static str,
    /// The file.
    pub path: PathBuf,
}

/// One file's load, timed on the run's clock (`tpch load` records these as events).
#[derive(Clone, Debug)]
pub struct FileLoaded {
    /// Index into the files given to [`load_timed`].
    pub file: usize,
    /// The loading session (worker), from 0.
    pub session: u32,
    /// Start, ns on the run's clock.
    pub start_ns: u64,
    /// End, ns on the run's clock.
    pub end_ns: u64,
    /// Rows loaded (0 when it failed: its transaction rolled back).
    pub rows: u64,
    /// The file's size.
    pub bytes: u64,
    /// Why it failed.
    pub error: Option<String>,
    /// The chunks the loader sent, each (start ns, end ns, rows): 1 MiB of COPY data on
    /// PostgreSQL (read, checked and sent), one multi-row INSERT on SQLite.
    pub chunks: Vec<(u64, u64, u64)>,
}

/// Where a loader notes its chunks: the run's clock and the list.
struct Chunks<'a> {
    clock: &'a RunClock,
    list: Vec<(u64, u64, u64)>,
    start_ns: u64,
    rows_before: u64,
}

impl Chunks<'_> {
    /// A chunk ended with `rows` rows loaded so far in the file; the next starts now.
    fn mark(&mut self, rows: u64) {
        let now = self.clock.now_ns();
        if rows > self.rows_before {
            self.list
                .push((self.start_ns, now, rows - self.rows_before));
        }
        self.start_ns = now;
        self.rows_before = rows;
    }
}

/// What was loaded, per table.
#[derive(Clone, Debug, Default)]
pub struct LoadSummary {
    /// (table, rows) in load order.
    pub tables: Vec<(&'static str, u64)>,
    /// Wall time.
    pub elapsed: Duration,
    /// Sessions that loaded files in parallel.
    pub sessions: usize,
}

/// Finds `TABLE.tbl` and `TABLE.K.tbl` files in `dir`, ordered by table (as [`SCHEMA`]) then part.
pub fn find_files(dir: &Path) -> Result<Vec<LoadFile>, LoadError> {
    let entries = std::fs::read_dir(dir).map_err(|e| LoadError::Io {
        path: dir.to_owned(),
        source: e,
    })?;
    let mut found: Vec<(usize, u32, LoadFile)> = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(stem) = name.strip_suffix(".tbl") else {
            continue;
        };
        let (table, part) = match stem.split_once('.') {
            Some((t, k)) => match k.parse::<u32>() {
                Ok(k) => (t, k),
                Err(_) => continue,
            },
            None => (stem, 0),
        };
        if let Some(i) = SCHEMA.iter().position(|(t, _)| *t == table) {
            found.push((
                i,
                part,
                LoadFile {
                    table: SCHEMA[i].0,
                    path,
                },
            ));
        }
    }
    if found.is_empty() {
        // Output of `tpch gen --format csv|parquet` is a likely mistake: name it.
        let other = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|f| {
                let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
                let stem = name.split('.').next().unwrap_or("");
                SCHEMA.iter().any(|(t, _)| *t == stem)
                    && (name.ends_with(".csv") || name.ends_with(".parquet"))
            })
            .min();
        return Err(LoadError::NoTables {
            dir: dir.to_owned(),
            other,
        });
    }
    found.sort_by_key(|(i, k, _)| (*i, *k));
    Ok(found.into_iter().map(|(_, _, f)| f).collect())
}

/// `CREATE TABLE` for one table.
pub fn create_sql(table: &str) -> Option<String> {
    let (_, cols) = SCHEMA.iter().find(|(t, _)| *t == table)?;
    let cols: Vec<String> = cols
        .iter()
        .map(|(c, ty)| format!("{c} {ty} NOT NULL"))
        .collect();
    Some(format!("CREATE TABLE {table} ({})", cols.join(", ")))
}

/// SQLite's prepared statement that inserts a JSON array of rows (each an array of field strings);
/// SQLite converts by column affinity (DECIMAL → REAL or INTEGER; DATE stays text). PostgreSQL
/// loads with COPY instead (see [`load`]).
pub fn insert_sql(table: &str) -> Option<String> {
    let (_, cols) = SCHEMA.iter().find(|(t, _)| *t == table)?;
    let names: Vec<&str> = cols.iter().map(|(c, _)| *c).collect();
    let values: Vec<String> = (0..cols.len())
        .map(|i| format!("json_extract(value, '$[{i}]')"))
        .collect();
    Some(format!(
        "INSERT INTO {table} ({}) SELECT {} FROM json_each(?1)",
        names.join(", "),
        values.join(", ")
    ))
}

/// Appends `s` as a JSON string.
fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Creates the tables of `files` (dropping them first if `fresh`) and loads every file: PostgreSQL
/// with COPY, up to `parallel` files at once, each on its own session and in one transaction; SQLite
/// (one writer at a time) with prepared INSERTs on one session, committing every `commit_every` rows.
/// `progress` counts rows loaded.
pub fn load(
    target: &dyn Target,
    files: &[LoadFile],
    fresh: bool,
    commit_every: u64,
    parallel: usize,
    progress: &AtomicU64,
) -> Result<LoadSummary, LoadError> {
    let clock = RunClock::start();
    load_timed(
        target,
        files,
        fresh,
        commit_every,
        parallel,
        progress,
        &clock,
    )
    .1
}

/// [`load`], with every file's load timed on `clock` (returned even when the load failed, with
/// the table creation as file `usize::MAX`).
pub fn load_timed(
    target: &dyn Target,
    files: &[LoadFile],
    fresh: bool,
    commit_every: u64,
    parallel: usize,
    progress: &AtomicU64,
    clock: &RunClock,
) -> (Vec<FileLoaded>, Result<LoadSummary, LoadError>) {
    let timings: Mutex<Vec<FileLoaded>> = Mutex::new(Vec::new());
    let r = load_inner(
        target,
        files,
        (fresh, commit_every, parallel),
        progress,
        clock,
        &timings,
    );
    let mut t = timings.into_inner().unwrap_or_else(PoisonError::into_inner);
    t.sort_by_key(|f| (f.start_ns, f.file));
    (t, r)
}

fn load_inner(
    target: &dyn Target,
    files: &[LoadFile],
    (fresh, commit_every, parallel): (bool, u64, usize),
    progress: &AtomicU64,
    clock: &RunClock,
    timings: &Mutex<Vec<FileLoaded>>,
) -> Result<LoadSummary, LoadError> {
    let dialect = target.dialect();
    if dialect == Dialect::Null {
        return Err(LoadError::NullTarget);
    }
    let t0 = Instant::now();
    let mut tables: Vec<&'static str> = files.iter().map(|f| f.table).collect();
    tables.dedup();
    {
        let mut sess = target.connect()?;
        let start_ns = clock.now_ns();
        let created = (|| {
            for t in &tables {
                if fresh {
                    sess.batch(&format!("DROP TABLE IF EXISTS {t}"))?;
                }
                sess.batch(&create_sql(t).expect("known table"))
                    .map_err(|e| LoadError::CreateTable {
                        table: t,
                        message: e.message,
                    })?;
            }
            Ok::<(), LoadError>(())
        })();
        timings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(FileLoaded {
                file: usize::MAX,
                session: 0,
                start_ns,
                end_ns: clock.now_ns(),
                rows: 0,
                bytes: 0,
                error: created.as_ref().err().map(|e| e.to_string()),
                chunks: Vec::new(),
            });
        created?;
    }
    let workers = match dialect {
        Dialect::Postgres | Dialect::Mysql => parallel.clamp(1, files.len().max(1)),
        _ => 1,
    };
    let next = AtomicU64::new(0);
    let failed = std::sync::atomic::AtomicBool::new(false);
    let rows: Mutex<Vec<u64>> = Mutex::new(vec![0; files.len()]);
    let first_error: Mutex<Option<LoadError>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for worker in 0..workers {
            let (next, failed, rows, first_error) = (&next, &failed, &rows, &first_error);
            scope.spawn(move || {
                let fail = |e: LoadError| {
                    failed.store(true, Ordering::Relaxed);
                    first_error
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .get_or_insert(e);
                };
                let mut sess = match target.connect() {
                    Ok(s) => s,
                    Err(e) => return fail(e.into()),
                };
                while !failed.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                    let Some(f) = files.get(i) else { return };
                    let start_ns = clock.now_ns();
                    let mut chunks = Chunks {
                        clock,
                        list: Vec::new(),
                        start_ns,
                        rows_before: 0,
                    };
                    let loaded = match dialect {
                        Dialect::Postgres | Dialect::Mysql => {
                            copy_file(sess.as_mut(), dialect, f, progress, &mut chunks)
                        }
                        _ => load_file(sess.as_mut(), f, commit_every, progress, &mut chunks),
                    };
                    timings
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(FileLoaded {
                            file: i,
                            session: worker as u32,
                            start_ns,
                            end_ns: clock.now_ns(),
                            rows: *loaded.as_ref().unwrap_or(&0),
                            bytes: std::fs::metadata(&f.path).map_or(0, |m| m.len()),
                            error: loaded.as_ref().err().map(|e| e.to_string()),
                            // A failed file's chunks were rolled back: only its event remains.
                            chunks: if loaded.is_ok() {
                                chunks.list
                            } else {
                                Vec::new()
                            },
                        });
                    match loaded {
                        Ok(n) => rows.lock().unwrap_or_else(PoisonError::into_inner)[i] = n,
                        Err(e) => return fail(e),
                    }
                }
            });
        }
    });
    if let Some(e) = first_error
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
    {
        return Err(e);
    }
    let rows = rows.into_inner().unwrap_or_else(PoisonError::into_inner);
    let mut summary = LoadSummary::default();
    for t in &tables {
        let n = files
            .iter()
            .zip(&rows)
            .filter(|(f, _)| f.table == *t)
            .map(|(_, n)| n)
            .sum();
        summary.tables.push((t, n));
    }
    summary.elapsed = t0.elapsed();
    summary.sessions = workers;
    Ok(summary)
}

/// Loads one file into PostgreSQL with `COPY … FROM STDIN` (one transaction per file), or into
/// MariaDB/MySQL with `LOAD DATA LOCAL INFILE` (the same rows: COPY's text format is its default;
/// one transaction per file), streaming it in 1 MiB chunks; every line is checked as in
/// [`load_file`] before it is sent.
fn copy_file(
    sess: &mut dyn Session,
    dialect: Dialect,
    f: &LoadFile,
    progress: &AtomicU64,
    chunks: &mut Chunks,
) -> Result<u64, LoadError> {
    let columns = SCHEMA
        .iter()
        .find(|(t, _)| *t == f.table)
        .map(|(_, c)| c)
        .expect("known table");
    let ncols = columns.len();
    let names: Vec<&str> = columns.iter().map(|(n, _)| *n).collect();
    let sql = match dialect {
        Dialect::Mysql => format!(
            "LOAD DATA LOCAL INFILE 'dbscope-{}' INTO TABLE {} CHARACTER SET utf8mb4 \
             FIELDS TERMINATED BY '|' ({})",
            f.table,
            f.table,
            names.join(", ")
        ),
        _ => format!(
            "COPY {} ({}) FROM STDIN WITH (FORMAT text, DELIMITER '|')",
            f.table,
            names.join(", ")
        ),
    };
    // LOAD DATA sends a statement per chunk: one transaction makes the file all or nothing, as
    // one COPY is.
    if dialect == Dialect::Mysql {
        sess.begin()?;
    }
    let file = std::fs::File::open(&f.path).map_err(|e| LoadError::Io {
        path: f.path.clone(),
        source: e,
    })?;
    let mut lines = BufReader::with_capacity(1 << 20, file).lines().enumerate();
    let mut rows = 0u64;
    let mut bad: Option<LoadError> = None;
    let result = sess.copy_in(&sql, &mut |buf: &mut Vec<u8>| {
        // The previous chunk was sent (the client sends each chunk before asking for the next).
        chunks.mark(rows);
        let before = rows;
        while buf.len() < (1 << 20) {
            let Some((i, line)) = lines.next() else {
                progress.fetch_add(rows - before, Ordering::Relaxed);
                return Ok(false);
            };
            let line = match line {
                Ok(l) => l,
                Err(e) => {
                    let msg = format!("{}: {e}", f.path.display());
                    bad = Some(LoadError::Io {
                        path: f.path.clone(),
                        source: e,
                    });
                    return Err(msg);
                }
            };
            let line = line.strip_suffix('\r').unwrap_or(&line);
            // dbgen ends every field with '|': N columns, N '|'s, nothing after the last.
            let body = line.strip_suffix('|').unwrap_or(line);
            let found = if line.ends_with('|') {
                body.split('|').count()
            } else {
                0
            };
            if found != ncols {
                let e = LoadError::Parse {
                    path: f.path.clone(),
                    line: i as u64 + 1,
                    table: f.table,
                    expected: ncols,
                    found: line.split('|').count().saturating_sub(1),
                };
                let msg = e.to_string();
                bad = Some(e);
                return Err(msg);
            }
            // COPY's text format treats a backslash as an escape.
            if body.contains('\\') {
                buf.extend_from_slice(body.replace('\\', "\\\\").as_bytes());
            } else {
                buf.extend_from_slice(body.as_bytes());
            }
            buf.push(b'\n');
            rows += 1;
        }
        progress.fetch_add(rows - before, Ordering::Relaxed);
        Ok(true)
    });
    chunks.mark(rows);
    let result = match (dialect, result) {
        (Dialect::Mysql, Ok(n)) if bad.is_none() => sess.commit().map(|()| n),
        (Dialect::Mysql, r) => {
            let _ = sess.rollback();
            r
        }
        (_, r) => r,
    };
    match (result, bad) {
        (_, Some(e)) => Err(e),
        (Err(e), None) => Err(e.into()),
        (Ok(n), None) => Ok(n),
    }
}

/// Loads one file into SQLite with [`insert_sql`], in transactions of `commit_every` rows.
fn load_file(
    sess: &mut dyn Session,
    f: &LoadFile,
    commit_every: u64,
    progress: &AtomicU64,
    chunks: &mut Chunks,
) -> Result<u64, LoadError> {
    let ncols = SCHEMA
        .iter()
        .find(|(t, _)| *t == f.table)
        .map(|(_, c)| c.len())
        .expect("known table");
    let stmt = sess.prepare(&insert_sql(f.table).expect("known table"))?;
    let file = std::fs::File::open(&f.path).map_err(|e| LoadError::Io {
        path: f.path.clone(),
        source: e,
    })?;
    let reader = BufReader::with_capacity(1 << 20, file);
    let mut json = String::with_capacity(256 * ROWS_PER_INSERT);
    let mut in_batch = 0usize;
    let mut in_tx = 0u64;
    let mut rows = 0u64;
    let flush = |sess: &mut dyn Session, json: &mut String, n: &mut usize| {
        if *n == 0 {
            return Ok(());
        }
        json.push(']');
        let r = sess.execute(stmt, &[Param::Text(std::mem::take(json))]);
        *n = 0;
        r.map(|_| ())
    };
    sess.begin()?;
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| LoadError::Io {
            path: f.path.clone(),
            source: e,
        })?;
        let line = line.strip_suffix('\r').unwrap_or(&line);
        let fields: Vec<&str> = line.split('|').collect();
        // dbgen ends every field with '|', so a row of N columns splits into N + 1 parts.
        if fields.len() != ncols + 1 || !fields[ncols].is_empty() {
            let _ = sess.rollback();
            return Err(LoadError::Parse {
                path: f.path.clone(),
                line: i as u64 + 1,
                table: f.table,
                expected: ncols,
                found: fields.len().saturating_sub(1),
            });
        }
        json.push(if in_batch == 0 { '[' } else { ',' });
        json.push('[');
        for (k, v) in fields[..ncols].iter().enumerate() {
            if k > 0 {
                json.push(',');
            }
            push_json_str(&mut json, v);
        }
        json.push(']');
        in_batch += 1;
        rows += 1;
        in_tx += 1;
        if in_batch == ROWS_PER_INSERT {
            if let Err(e) = flush(sess, &mut json, &mut in_batch) {
                let _ = sess.rollback();
                return Err(e.into());
            }
            progress.fetch_add(ROWS_PER_INSERT as u64, Ordering::Relaxed);
            chunks.mark(rows);
        }
        if in_tx >= commit_every && in_batch == 0 {
            sess.commit()?;
            sess.begin()?;
            in_tx = 0;
        }
    }
    let tail = in_batch as u64;
    if let Err(e) = flush(sess, &mut json, &mut in_batch) {
        let _ = sess.rollback();
        return Err(e.into());
    }
    progress.fetch_add(tail, Ordering::Relaxed);
    sess.commit()?;
    chunks.mark(rows);
    Ok(rows)
}

/// Stores `answers` (the map/combine/reduce Q1 answers of the loaded files, one per DELTA in
/// days) in [`REFERENCE_TABLE`]: one row per (DELTA, group, column) with the exact value as a
/// scaled integer. Replaces what the table held.
pub fn store_reference(target: &dyn Target, answers: &[(u32, Q1Answer)]) -> Result<(), LoadError> {
    let mut sess = target.connect()?;
    sess.batch(&format!("DROP TABLE IF EXISTS {REFERENCE_TABLE}"))?;
    sess.batch(&format!(
        "CREATE TABLE {REFERENCE_TABLE} (delta_days BIGINT NOT NULL, grp BIGINT NOT NULL, col BIGINT NOT NULL, v BIGINT NOT NULL)"
    ))?;
    let mut values = Vec::new();
    for (delta, answer) in answers {
        for (g, row) in answer.rows.iter().enumerate() {
            for (c, v) in reference_values(row).iter().enumerate() {
                let v = i64::try_from(*v).map_err(|_| LoadError::ValueTooLarge { value: *v })?;
                values.push(format!("({delta}, {g}, {c}, {v})"));
            }
        }
    }
    sess.begin()?;
    if !values.is_empty() {
        sess.batch(&format!(
            "INSERT INTO {REFERENCE_TABLE} (delta_days, grp, col, v) VALUES {}",
            values.join(", ")
        ))?;
    }
    sess.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements() {
        let c = create_sql("region").unwrap();
        assert_eq!(
            c,
            "CREATE TABLE region (r_regionkey INTEGER NOT NULL, r_name CHAR(25) NOT NULL, r_comment VARCHAR(152) NOT NULL)"
        );
        let lite = insert_sql("region").unwrap();
        assert!(lite.contains("json_each(?1)"), "{lite}");
        assert!(lite.contains("json_extract(value, '$[2]')"), "{lite}");
        assert!(create_sql("nope").is_none());
    }

    #[test]
    fn json_strings_are_escaped() {
        let mut s = String::new();
        push_json_str(&mut s, "a\"b\\c\n");
        assert_eq!(s, r#""a\"b\\c\u000a""#);
    }

    #[test]
    fn finds_tables_and_parts_in_order() {
        let d = tempfile::tempdir().unwrap();
        for n in [
            "lineitem.2.tbl",
            "lineitem.1.tbl",
            "nation.tbl",
            "notes.txt",
            "lineitem.x.tbl",
        ] {
            std::fs::write(d.path().join(n), "").unwrap();
        }
        let f = find_files(d.path()).unwrap();
        let names: Vec<String> = f
            .iter()
            .map(|f| f.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["nation.tbl", "lineitem.1.tbl", "lineitem.2.tbl"]);
        let empty = tempfile::tempdir().unwrap();
        assert!(find_files(empty.path())
            .unwrap_err()
            .to_string()
            .contains("no TPC-H .tbl files"));
    }

    #[test]
    fn parquet_or_csv_data_names_the_command_to_make_tbl() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("lineitem.parquet"), "PAR1").unwrap();
        let e = find_files(d.path()).unwrap_err().to_string();
        assert!(e.contains("lineitem.parquet"), "{e}");
        assert!(e.contains("tpch gen --format parquet"), "{e}");
        assert!(e.contains("tpch gen --format tbl"), "{e}");
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("orders.csv"), "o_orderkey\n").unwrap();
        let e = find_files(d.path()).unwrap_err().to_string();
        assert!(
            e.contains("orders.csv") && e.contains("--format csv"),
            "{e}"
        );
    }
}
