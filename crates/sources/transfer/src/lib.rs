//! `dbscope transfer`: a PostgreSQL table to files and files back into a table, SQOOP-style
//! (seed 001: "direct path, partition per mapper"), each mapper's work a timed event of a run
//! (issue 15 part 3).
//!
//! Out: the table is split by ranges of an integer key (its primary key unless `--key`), one
//! mapper per range, each with its own connection running `COPY (SELECT … WHERE key BETWEEN lo AND
//! hi) TO STDOUT` inside the coordinator's exported snapshot (`pg_export_snapshot`), so the
//! files are one consistent picture of the table; each file is written under a temporary name
//! and renamed when complete and synced. In: the files are spread over the mappers, each
//! streaming its files through `COPY … FROM STDIN`.
//!
//! Verification, end to end: out writes `transfer.json` beside the files (table rows, the
//! table's checksum and per file its rows, bytes and CRC-32); in checks every file's CRC-32 as it
//! streams it and, after the load, the table's row count and checksum against `transfer.json`.
//! The checksum (`xxh3-sum:`) is computed by the mappers from the rows as they stream: the
//! wrapping sum of XXH3-64 of every row's bytes as COPY sends them (one CopyData message per
//! row), so it costs the server no second pass and does not depend on the row order; in reads the
//! loaded table back through COPY with the same options and settings and sums the same way.
//! Older `transfer.json` files hold the server-side `sum(hashtextextended(row::text, 0))`, which
//! in still checks with that query.
//!
//! `--format parquet`: the mappers read COPY's text format and write Parquet typed from the
//! catalog (`pq`); in, the Parquet files are turned back into COPY text.

mod error;
mod files;
mod pq;
mod split;

pub use error::Error;

pub use files::Compress;
use files::{Counted, Decoder, Encoder};
use pq::{PqColumn, PqRows, PqWriter};
pub use split::{split_ranges, SplitKind};

use std::collections::BTreeMap;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use dbscope_core::redact::redact;
use dbscope_core::{
    Column, Counter, CounterSection, CounterTable, CounterValue, Event, Manifest, Outcome,
    Recording, RunClock, TargetInfo, WorkloadInfo,
};
use serde::{Deserialize, Serialize};

use dbscope_pgwire::{connect_with, ConnectError, WireConn, WireError};

/// The file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// PostgreSQL's text format with `|` between columns (TPC-H's `.tbl` without the trailing `|`).
    Tbl,
    /// RFC 4180 CSV (PostgreSQL's CSV format).
    Csv,
    /// Parquet, one typed column per table column (see `pq` for the types).
    Parquet,
}

impl Format {
    /// The file name extension.
    pub fn ext(self) -> &'static str {
        match self {
            Format::Tbl => "tbl",
            Format::Csv => "csv",
            Format::Parquet => "parquet",
        }
    }
}

/// How the files are written and read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileOptions {
    /// Format.
    pub format: Format,
    /// Column delimiter; default `|` (tbl) or `,` (csv).
    pub delimiter: Option<char>,
    /// CSV: a header line with the column names.
    pub header: bool,
    /// The NULL marker; default `\N` (tbl) or an empty unquoted field (csv).
    pub null: Option<String>,
    /// Compression: of whole tbl/csv files (`.gz`, `.zst`), of Parquet's pages.
    #[serde(default)]
    pub compress: Compress,
}

impl FileOptions {
    /// Refuses a delimiter or NULL marker COPY cannot use, and a header on tbl.
    pub fn validate(&self) -> Result<(), Error> {
        if let Some(d) = self.delimiter {
            if !d.is_ascii() || d == '\n' || d == '\r' || d == '\'' || d == '\\' {
                return Err(Error::Config(format!(
                    "--delimiter {d:?}: use one ASCII character other than a newline, quote or backslash"
                )));
            }
        }
        if let Some(n) = &self.null {
            if n.contains(['\n', '\r']) || n.contains('\'') {
                return Err(Error::Config(format!(
                    "--null {n:?}: a NULL marker may not hold a newline or a quote"
                )));
            }
        }
        if self.format == Format::Parquet
            && (self.header || self.delimiter.is_some() || self.null.is_some())
        {
            return Err(Error::Config(
                "--header, --delimiter and --null apply to --format tbl|csv; Parquet has typed columns and real NULLs".into(),
            ));
        }
        if self.compress == Compress::Snappy && self.format != Format::Parquet {
            return Err(Error::Config(
                "--compress snappy is a Parquet codec; tbl and csv files take gzip or zstd".into(),
            ));
        }
        if self.header && self.format == Format::Tbl {
            return Err(Error::Config("--header applies to --format csv".into()));
        }
        Ok(())
    }

    /// What follows the format's extension in a file name: `.gz`/`.zst` for compressed tbl/csv.
    fn file_suffix(&self) -> &'static str {
        match self.format {
            Format::Parquet => "",
            _ => self.compress.suffix(),
        }
    }

    /// COPY's option list, e.g. `(FORMAT csv, HEADER true, DELIMITER ',')`.
    fn copy_options(&self) -> String {
        if self.format == Format::Parquet {
            // The mappers read COPY's own text format and convert it (`pq`).
            return "(FORMAT text)".into();
        }
        let mut o = vec![match self.format {
            Format::Tbl | Format::Parquet => "FORMAT text".to_string(),
            Format::Csv => "FORMAT csv".to_string(),
        }];
        if self.header {
            o.push("HEADER true".into());
        }
        let delim = self.delimiter.unwrap_or(match self.format {
            Format::Csv => ',',
            _ => '|',
        });
        o.push(format!("DELIMITER '{delim}'"));
        if let Some(n) = &self.null {
            o.push(format!("NULL '{n}'"));
        }
        format!("({})", o.join(", "))
    }
}

/// `postgres://…/DATABASE/TABLE` split into a connection string and a table name.
#[derive(Clone, Debug, PartialEq)]
pub struct TableUri {
    /// The connection string without the table (`postgres://…/DATABASE?…`).
    pub conn: String,
    /// The table, `name` or `schema.name`.
    pub table: String,
}

/// True for `postgres://` and `postgresql://` strings.
pub fn is_table_uri(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// Parses `postgres://[user[:password]@][host][:port]/DATABASE/TABLE[?params]`.
pub fn parse_table_uri(s: &str) -> Result<TableUri, Error> {
    let bad = |why: &str| {
        Error::Config(format!(
            "{}: {why}; expected postgres://[user@][host][:port]/DATABASE/TABLE[?host=…]",
            redact(s)
        ))
    };
    let scheme_end = s.find("://").ok_or_else(|| bad("not a postgres:// URI"))? + 3;
    let (main, query) = match s.find('?') {
        Some(q) => (&s[..q], &s[q..]),
        None => (s, ""),
    };
    let slash = main[scheme_end..]
        .find('/')
        .map(|i| scheme_end + i)
        .ok_or_else(|| bad("no database and table"))?;
    let path: Vec<&str> = main[slash + 1..].split('/').collect();
    let [db, table] = path[..] else {
        return Err(bad("the path must be DATABASE/TABLE"));
    };
    if db.is_empty() {
        return Err(bad("the database name is empty"));
    }
    let ident = |p: &str| {
        let mut c = p.chars();
        c.next()
            .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
            && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '$')
    };
    let parts: Vec<&str> = table.split('.').collect();
    if parts.len() > 2 || !parts.iter().all(|p| ident(p)) {
        return Err(bad(&format!(
            "table {table:?} is not a plain name (letters, digits, _; optionally schema.name)"
        )));
    }
    Ok(TableUri {
        conn: format!("{}/{db}{query}", &main[..slash]),
        table: table.to_string(),
    })
}

/// One file of a transfer, as `transfer.json` lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileEntry {
    /// File name inside the directory.
    pub name: String,
    /// Rows (COPY's count).
    pub rows: u64,
    /// Bytes.
    pub bytes: u64,
    /// CRC-32 of the file's bytes.
    pub crc32: u32,
    /// The key range the file holds (inclusive), when written by `transfer` out split by a key.
    pub key_range: Option<(i64, i64)>,
    /// The blocks the file holds, `[from, to)`, `to` null for the last (open-ended) range, when
    /// split by ctid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_range: Option<(u64, Option<u64>)>,
}

/// `transfer.json`: what a directory written by `transfer` out holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TransferManifest {
    /// The source table.
    pub table: String,
    /// How the files are written.
    pub options: FileOptions,
    /// The key the table was split by (or a `--key` checked for one mapper); empty otherwise.
    pub key: String,
    /// How the table was split among the mappers (`whole`, `ctid`, `key`); absent in files
    /// written before the ctid split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<SplitKind>,
    /// Rows in the table (in the snapshot the files were copied in).
    pub rows: u64,
    /// `sum(hashtextextended(row::text, 0))` over the table, as a decimal number; `None` when the
    /// transfer was made with `--verify count`.
    pub checksum: Option<String>,
    /// The files.
    pub files: Vec<FileEntry>,
}

/// The name of the manifest a transfer out writes beside its files.
pub const TRANSFER_FILE: &str = "transfer.json";

/// Written by a transfer out when it starts and removed once [`TRANSFER_FILE`] is written: a
/// directory holding it is an export that did not finish (killed, failed), whose files are part
/// of the table.
pub const UNFINISHED_FILE: &str = ".transfer-out.unfinished";

/// Why the files of `dir` (which has no [`TRANSFER_FILE`]) look like an export that did not
/// finish: its [`UNFINISHED_FILE`] marker, or a mapper's `.partial` file; `None` when neither is
/// there (files made elsewhere, loaded by their extension).
fn unfinished_export(dir: &Path) -> Option<String> {
    let mut signs = Vec::new();
    if dir.join(UNFINISHED_FILE).exists() {
        signs.push(UNFINISHED_FILE.to_string());
    }
    let mut partial: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|d| d.ok())
        .map(|d| d.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.') && n.ends_with(".partial"))
        .collect();
    partial.sort();
    signs.extend(partial);
    (!signs.is_empty()).then(|| signs.join(", "))
}

/// What a transfer needs besides its direction.
#[derive(Clone, Debug)]
pub struct TransferConfig {
    /// The table.
    pub table: TableUri,
    /// The directory of the files.
    pub dir: PathBuf,
    /// Mappers (connections).
    pub mappers: u32,
    /// Key column to split by (out); default the table's primary key.
    pub key: Option<String>,
    /// File format options.
    pub file: FileOptions,
    /// Compute and check the table checksum (`--verify checksum`); row counts and file CRCs only
    /// when false (`--verify count`).
    pub checksum: bool,
    /// Run directory for the events.
    pub run: PathBuf,
    /// The command line (redacted).
    pub command_line: Vec<String>,
    /// In: load the files of an export that did not finish (no `transfer.json`, its marker or a
    /// `.partial` file there) instead of refusing them; the run then says it loaded part of a
    /// table and ends as failed.
    pub allow_incomplete: bool,
}

/// One mapper's work.
#[derive(Clone, Debug, Default)]
pub struct MapperWork {
    /// Mapper number, from 0.
    pub mapper: u32,
    /// Files written or read.
    pub files: Vec<String>,
    /// Rows.
    pub rows: u64,
    /// Bytes.
    pub bytes: u64,
    /// Start and end, ns on the run's clock.
    pub start_ns: u64,
    /// End, ns on the run's clock.
    pub end_ns: u64,
    /// CRC-32 of the file written (out).
    pub crc32: u32,
    /// Of the time, ns spent syncing the file before its rename (out).
    pub sync_ns: u64,
    /// Why it failed.
    pub error: Option<String>,
    /// The wrapping sum of XXH3-64 of the rows copied (out).
    pub row_sum: u64,
}

/// How a transfer ended.
#[derive(Debug)]
pub struct TransferResult {
    /// The run directory.
    pub run: PathBuf,
    /// Outcome of the run.
    pub outcome: Outcome,
    /// Why it did not complete.
    pub detail: Option<String>,
    /// Rows moved.
    pub rows: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Seconds from the first mapper's start to the last one's end.
    pub seconds: f64,
    /// Events written.
    pub events: u64,
    /// Out: how the table was split among the mappers and why.
    pub split: Option<String>,
}

fn db(what: &str, e: &WireError) -> String {
    // A COPY FROM STDIN the server refused names the line of the file (issue 27 item 13).
    let line = e
        .copy_line()
        .map(|n| format!(", line {n}"))
        .unwrap_or_default();
    match e {
        WireError::Db { code, .. } => format!("{what}{line}: {e} ({code})"),
        _ => format!("{what}: {e}"),
    }
}

fn connect(spec: &str, who: &str) -> Result<WireConn, ConnectError> {
    connect_with(spec, who, None).map(|(c, _)| c)
}

fn one(c: &mut WireConn, sql: &str) -> Result<Vec<Option<String>>, WireError> {
    Ok(c.simple_query(sql)?.into_iter().next().unwrap_or_default())
}

fn begin(
    cfg: &TransferConfig,
    workload: &str,
    spec: &str,
    split: Option<SplitKind>,
) -> Result<Recording, Error> {
    let mut params = BTreeMap::from([
        ("table".to_string(), cfg.table.table.clone().into()),
        ("dir".to_string(), cfg.dir.display().to_string().into()),
        ("mappers".to_string(), cfg.mappers.into()),
        ("format".to_string(), cfg.file.format.ext().into()),
    ]);
    if let Some(k) = split {
        params.insert("split".to_string(), k.name().into());
    }
    let mut m = Manifest::new(
        "transfer",
        WorkloadInfo {
            name: workload.into(),
            params,
        },
        0,
    );
    m.command_line = cfg.command_line.clone();
    m.target = Some(TargetInfo {
        kind: "postgres".into(),
        location: redact(spec),
        ..Default::default()
    });
    Ok(Recording::begin(&cfg.run, m)?)
}

/// The table to files: one file per mapper, `transfer.json` beside them.
pub fn transfer_out(cfg: &TransferConfig) -> Result<TransferResult, Error> {
    cfg.file.validate()?;
    if cfg.mappers == 0 {
        return Err(Error::Config("--mappers must be at least 1".into()));
    }
    let spec = cfg.table.conn.as_str();
    let table = cfg.table.table.as_str();
    let mut coord = connect(spec, "dbscope/transfer").map_err(|e| Error::connect(spec, e))?;
    let cfgerr = |e: WireError| Error::database(table, e);
    one(
        &mut coord,
        "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY",
    )
    .map_err(cfgerr)?;
    // One mapper copies the whole snapshot: no split, and the COPY's own count is the table's
    // (the same snapshot). More: block ranges (no scan to plan them) or ranges of a key.
    let plan = split::plan(&mut coord, table, cfg.mappers, cfg.key.as_deref())?;
    let columns: Option<Vec<PqColumn>> = if cfg.file.format == Format::Parquet {
        let rows = coord
            .simple_query(&pq::columns_sql(table))
            .map_err(cfgerr)?;
        Some(
            rows.iter()
                .map(|r| PqColumn::from_catalog(r))
                .collect::<Result<_, _>>()
                .map_err(|e| Error::Table(format!("{table}: {e}")))?,
        )
    } else {
        None
    };
    let snapshot = one(&mut coord, "SELECT pg_export_snapshot()")
        .map_err(cfgerr)?
        .first()
        .cloned()
        .flatten()
        .unwrap_or_default();
    std::fs::create_dir_all(&cfg.dir)
        .map_err(|e| Error::Io(format!("cannot create {}: {e}", cfg.dir.display())))?;
    let _ = std::fs::remove_file(cfg.dir.join(TRANSFER_FILE));
    std::fs::write(
        cfg.dir.join(UNFINISHED_FILE),
        format!(
            "A transfer out of {table} into this directory started and has not finished: its \
             files are part of the table.\n"
        ),
    )
    .map_err(|e| Error::Io(format!("cannot write in {}: {e}", cfg.dir.display())))?;

    let mut rec = begin(cfg, "transfer-out", spec, Some(plan.kind))?;
    let clock = rec.start_clock()?;
    let opts = cfg.file.copy_options();
    let ext = cfg.file.format.ext();
    let (works, checksum) = std::thread::scope(|s| {
        let handles: Vec<_> = plan
            .parts
            .iter()
            .enumerate()
            .map(|(i, part)| {
                let (clock, snapshot, opts) = (&clock, &snapshot, &opts);
                let columns = columns.as_deref();
                let name = format!("part-{i:05}.{ext}{}", cfg.file.file_suffix());
                let path = cfg.dir.join(&name);
                s.spawn(move || {
                    let where_ = part
                        .filter
                        .as_ref()
                        .map_or(String::new(), |f| format!(" WHERE {f}"));
                    let sql = format!("COPY (SELECT * FROM {table}{where_}) TO STDOUT {opts}");
                    let mut w = MapperWork {
                        mapper: i as u32,
                        files: vec![name],
                        ..Default::default()
                    };
                    if let Err(e) = mapper_out(
                        spec,
                        &path,
                        &sql,
                        snapshot,
                        (columns, cfg.file.compress, cfg.file.header),
                        clock,
                        &mut w,
                    ) {
                        w.error = Some(format!("mapper {i} ({}): {e}", part.describe()));
                    }
                    w
                })
            })
            .collect();
        // The checksum comes from the mappers' rows (`row_sum`): no second pass here.
        let checksum: Result<Option<String>, WireError> = Ok(None);
        let works: Vec<MapperWork> = handles
            .into_iter()
            .map(|h| h.join().expect("mapper thread"))
            .collect();
        (works, checksum)
    });
    let _ = one(&mut coord, "COMMIT");
    let copied: u64 = works.iter().map(|w| w.rows).sum();
    let mut detail = works.iter().find_map(|w| w.error.clone());
    let checksum = match checksum {
        Ok(c) => Some(c),
        Err(e) => {
            detail.get_or_insert(db("table checksum", &e));
            None
        }
    };
    let count = plan.count.unwrap_or(copied);
    let checksum = checksum.map(|c| {
        c.or_else(|| {
            cfg.checksum.then(|| {
                let sum = works.iter().fold(0u64, |a, w| a.wrapping_add(w.row_sum));
                format!("{ROW_SUM_PREFIX}{sum:016x}")
            })
        })
    });
    if detail.is_none() && copied != count {
        detail = Some(format!(
            "the mappers copied {copied} rows but {table} holds {count} (rows outside the key ranges?)"
        ));
    }
    if let (None, Some(checksum)) = (&detail, checksum) {
        let files = works
            .iter()
            .zip(&plan.parts)
            .map(|(w, p)| {
                Ok(FileEntry {
                    name: w.files[0].clone(),
                    rows: w.rows,
                    bytes: w.bytes,
                    crc32: w.crc32,
                    key_range: p.key_range,
                    block_range: p.block_range,
                })
            })
            .collect::<Result<Vec<_>, String>>();
        match files {
            Ok(files) => {
                let m = TransferManifest {
                    table: table.to_string(),
                    options: cfg.file.clone(),
                    key: plan.key.clone(),
                    split: Some(plan.kind),
                    rows: count,
                    checksum,
                    files,
                };
                let json = serde_json::to_vec_pretty(&m).expect("serialisable");
                dbscope_core::atomic::write_atomic(&cfg.dir.join(TRANSFER_FILE), &json)?;
                let _ = std::fs::remove_file(cfg.dir.join(UNFINISHED_FILE));
            }
            Err(e) => detail = Some(e),
        }
    }
    finish(rec, &clock, "copy-out", &works, detail, Some(&plan))
}

/// How a checksum computed from the rows as COPY sends them starts in `transfer.json`.
const ROW_SUM_PREFIX: &str = "xxh3-sum:";

/// The settings every transfer session runs with, so COPY's text of a value is the same on both
/// sides (and the row checksum with it): ISO dates, UTC, shortest exact floats, hex bytea.
const SESSION_SETTINGS: &str = "SET DateStyle = ISO, YMD; SET TimeZone = 'UTC'; \
     SET extra_float_digits = 1; SET IntervalStyle = postgres; SET bytea_output = hex";

/// The row checksum's hash of one row.
fn row_hash(row: &[u8]) -> u64 {
    twox_hash::XxHash3_64::oneshot(row)
}

/// Rows and row checksum of a table read back through COPY as a transfer out would write it.
fn table_row_sum(
    c: &mut WireConn,
    table: &str,
    cols: &str,
    opts: &FileOptions,
) -> Result<(u64, u64), WireError> {
    one(c, SESSION_SETTINGS)?;
    let mut skip = opts.header;
    let mut sum = 0u64;
    let rows = c.copy_out(
        &format!(
            "COPY (SELECT {cols} FROM {table}) TO STDOUT {}",
            opts.copy_options()
        ),
        &mut |d: &[u8]| {
            if skip {
                skip = false;
            } else {
                sum = sum.wrapping_add(row_hash(d));
            }
            Ok(())
        },
    )?;
    Ok((rows, sum))
}

/// Row count and checksum of a table: `sum(hashtextextended(row::text, 0))` as a decimal.
fn checksum_sql(table: &str) -> String {
    format!(
        "SELECT count(*), coalesce(sum(hashtextextended(dbscope_row::text, 0)::numeric), 0)::text \
         FROM {table} AS dbscope_row"
    )
}

type FileOut = BufWriter<std::fs::File>;

/// One per mapper's file, so the size of its largest variant does not matter.
#[allow(clippy::large_enum_variant)]
enum Sink {
    /// tbl and csv: COPY's bytes as they come, compressed or not, gathered into blocks first
    /// so that the CRC-32, the codec and the file see a few large writes, not one per row.
    Plain(BufWriter<Encoder<FileOut>>),
    /// Parquet: COPY's text rows converted.
    Parquet(Box<PqWriter<Counted<FileOut>>>),
}

impl Sink {
    fn row(&mut self, d: &[u8]) -> Result<(), String> {
        match self {
            Sink::Plain(w) => w.write_all(d).map_err(|e| e.to_string()),
            Sink::Parquet(p) => p.push_row(d),
        }
    }

    /// The file after the last bytes (the codec's end, Parquet's footer); the rows Parquet holds.
    fn finish(self) -> Result<(Counted<FileOut>, Option<u64>), String> {
        match self {
            Sink::Plain(w) => {
                let e = w.into_inner().map_err(|e| e.error().to_string())?;
                Ok((e.finish().map_err(|e| e.to_string())?, None))
            }
            Sink::Parquet(p) => {
                let rows = p.rows;
                Ok((p.finish()?, Some(rows)))
            }
        }
    }
}

fn mapper_out(
    spec: &str,
    path: &Path,
    sql: &str,
    snapshot: &str,
    (columns, compress, header): (Option<&[PqColumn]>, Compress, bool),
    clock: &RunClock,
    w: &mut MapperWork,
) -> Result<(), String> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.partial"));
    let mut c =
        connect(spec, &format!("dbscope/transfer/{}", w.mapper)).map_err(|e| e.to_string())?;
    // Also the text forms `pq` parses: ISO dates, timestamptz in UTC (`…+00`).
    one(&mut c, SESSION_SETTINGS).map_err(|e| db("SET", &e))?;
    one(&mut c, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY").map_err(|e| db("BEGIN", &e))?;
    one(&mut c, &format!("SET TRANSACTION SNAPSHOT '{snapshot}'"))
        .map_err(|e| db("SET TRANSACTION SNAPSHOT", &e))?;
    let file = std::fs::File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let out = Counted::new(BufWriter::with_capacity(1 << 20, file));
    w.start_ns = clock.now_ns();
    let done = (|| {
        let mut sink = match columns {
            Some(cols) => Sink::Parquet(Box::new(PqWriter::new(
                out,
                cols.to_vec(),
                compress.parquet(),
            )?)),
            None => Sink::Plain(BufWriter::with_capacity(
                1 << 20,
                Encoder::new(out, compress).map_err(|e| format!("{}: {e}", tmp.display()))?,
            )),
        };
        // A CSV header is the first message; it is not a row.
        let mut skip = header;
        let mut sum = 0u64;
        let rows = c
            .copy_out(sql, &mut |d: &[u8]| {
                if skip {
                    skip = false;
                } else {
                    sum = sum.wrapping_add(row_hash(d));
                }
                sink.row(d).map_err(|e| format!("{}: {e}", tmp.display()))
            })
            .map_err(|e| db("COPY", &e))?;
        w.row_sum = sum;
        w.rows = rows;
        let (out, written) = sink
            .finish()
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        if let Some(n) = written.filter(|&n| n != rows) {
            return Err(format!(
                "{}: {n} rows written, COPY sent {rows}",
                tmp.display()
            ));
        }
        w.bytes = out.bytes;
        w.crc32 = out.crc32();
        let f = out
            .into_inner()
            .into_inner()
            .map_err(|e| format!("{}: {}", tmp.display(), e.error()))?;
        let t = clock.now_ns();
        f.sync_all()
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        w.sync_ns = clock.now_ns() - t;
        std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
    })();
    w.end_ns = clock.now_ns();
    if done.is_err() {
        // A mapper that failed leaves nothing that looks like a finished file.
        let _ = std::fs::remove_file(&tmp);
    } else {
        let _ = one(&mut c, "COMMIT");
    }
    done
}

/// Files back into an (empty) table, verified against `transfer.json` when the directory has one.
pub fn transfer_in(cfg: &TransferConfig) -> Result<TransferResult, Error> {
    cfg.file.validate()?;
    if cfg.mappers == 0 {
        return Err(Error::Config("--mappers must be at least 1".into()));
    }
    let manifest: Option<TransferManifest> = match std::fs::read(cfg.dir.join(TRANSFER_FILE)) {
        Ok(b) => Some(serde_json::from_slice(&b).map_err(|e| {
            Error::Input(format!("{}: {e}", cfg.dir.join(TRANSFER_FILE).display()))
        })?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::Input(format!("{}: {e}", cfg.dir.display()))),
    };
    // Issue 27: the files of a killed transfer out loaded as if they were the table.
    let unfinished = match &manifest {
        None => unfinished_export(&cfg.dir),
        Some(_) => None,
    };
    if let (Some(signs), false) = (&unfinished, cfg.allow_incomplete) {
        return Err(Error::Input(format!(
            "{} is an export that did not finish (no {TRANSFER_FILE}; {signs}): its files hold \
             only part of the table. Run the transfer out again, or pass --allow-incomplete to \
             load what is there (the run then ends as failed, saying so)",
            cfg.dir.display()
        )));
    }
    let files: Vec<(String, Option<FileEntry>)> = match &manifest {
        Some(m) => {
            if m.options.format != cfg.file.format {
                return Err(Error::Input(format!(
                    "{} holds {} files (transfer.json); --format {} given",
                    cfg.dir.display(),
                    m.options.format.ext(),
                    cfg.file.format.ext()
                )));
            }
            m.files
                .iter()
                .map(|f| (f.name.clone(), Some(f.clone())))
                .collect()
        }
        None => {
            let ext = format!(".{}", cfg.file.format.ext());
            // Compressed tbl/csv files are found by their extension too.
            let exts: Vec<String> = match cfg.file.format {
                Format::Parquet => vec![ext.clone()],
                _ => vec![ext.clone(), format!("{ext}.gz"), format!("{ext}.zst")],
            };
            let mut v: Vec<(String, Option<FileEntry>)> = std::fs::read_dir(&cfg.dir)
                .map_err(|e| Error::Input(format!("{}: {e}", cfg.dir.display())))?
                .filter_map(|d| d.ok())
                .map(|d| d.file_name().to_string_lossy().into_owned())
                .filter(|n| exts.iter().any(|e| n.ends_with(e.as_str())) && !n.starts_with('.'))
                .map(|n| (n, None))
                .collect();
            v.sort_by(|a, b| a.0.cmp(&b.0));
            if v.is_empty() {
                return Err(Error::Input(format!(
                    "{} has no *{ext} files and no {TRANSFER_FILE}",
                    cfg.dir.display()
                )));
            }
            v
        }
    };
    // The options the files were written with win over the command line's.
    let opts = manifest
        .as_ref()
        .map_or(&cfg.file, |m| &m.options)
        .copy_options();
    for (name, entry) in &files {
        let p = cfg.dir.join(name);
        let len = std::fs::metadata(&p)
            .map_err(|e| Error::Input(format!("{}: {e}", p.display())))?
            .len();
        if let Some(e) = entry {
            if e.bytes != len {
                return Err(Error::Input(format!(
                    "{}: {len} bytes, {TRANSFER_FILE} says {} (incomplete or changed)",
                    p.display(),
                    e.bytes
                )));
            }
        }
    }
    let spec = cfg.table.conn.as_str();
    let table = cfg.table.table.as_str();
    let mut coord = connect(spec, "dbscope/transfer").map_err(|e| Error::connect(spec, e))?;
    let has_rows = one(
        &mut coord,
        &format!("SELECT count(*) FROM (SELECT 1 FROM {table} LIMIT 1) x"),
    )
    .map_err(|e| Error::database(table, e))?;
    if has_rows.first().cloned().flatten().as_deref() != Some("0") {
        return Err(Error::Table(format!(
            "{table} is not empty: transfer loads into an empty table (so the row count and checksum can be verified)"
        )));
    }

    let mut rec = begin(cfg, "transfer-in", spec, None)?;
    let clock = rec.start_clock()?;
    let n = (cfg.mappers as usize).min(files.len()).max(1);
    let parquet = cfg.file.format == Format::Parquet;
    let works: Vec<MapperWork> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let mine: Vec<&(String, Option<FileEntry>)> =
                    files.iter().skip(i).step_by(n).collect();
                let (clock, opts) = (&clock, &opts);
                s.spawn(move || {
                    let mut w = MapperWork {
                        mapper: i as u32,
                        ..Default::default()
                    };
                    if let Err(e) =
                        mapper_in(spec, &cfg.dir, &mine, (table, opts, parquet), clock, &mut w)
                    {
                        w.error = Some(format!("mapper {i}: {e}"));
                    }
                    w
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("mapper thread"))
            .collect()
    });
    let mut detail = works.iter().find_map(|w| w.error.clone());
    if let (None, Some(m)) = (&detail, &manifest) {
        let counted = match (&m.checksum, cfg.checksum) {
            (Some(want), true) if want.starts_with(ROW_SUM_PREFIX) => {
                // Parquet files name their columns: read them back in that order.
                let cols = match parquet {
                    true => PqRows::open(&cfg.dir.join(&files[0].0))
                        .map(|r| r.column_list())
                        .map(|l| l[1..l.len() - 1].to_string())
                        .map_err(|e| WireError::Protocol(e.to_string())),
                    false => Ok("*".to_string()),
                };
                cols.and_then(|cols| table_row_sum(&mut coord, table, &cols, &m.options))
                    .map(|(rows, sum)| (rows, Some(format!("{ROW_SUM_PREFIX}{sum:016x}"))))
            }
            (sum, verify) => {
                let sql = match (sum, verify) {
                    (Some(_), true) => checksum_sql(table),
                    _ => format!("SELECT count(*), NULL FROM {table}"),
                };
                one(&mut coord, &sql).map(|r| {
                    let rows = r
                        .first()
                        .cloned()
                        .flatten()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0);
                    (rows, r.get(1).cloned().flatten())
                })
            }
        };
        detail = match counted {
            Err(e) => Some(db("table checksum", &e)),
            Ok((rows, sum)) => {
                if rows != m.rows {
                    Some(format!(
                        "{table} holds {rows} rows after the load; {} were transferred out",
                        m.rows
                    ))
                } else if let (Some(sum), Some(want)) = (&sum, &m.checksum) {
                    (sum != want).then(|| {
                        format!(
                            "{table}'s checksum {sum} differs from the source's {want} (same row count {rows})"
                        )
                    })
                } else {
                    None
                }
            }
        };
    }
    // A mapper failed: each file's COPY commits on its own, so what the others loaded stays
    // (issue 27 item 13: the run did not say the table now held part of the load).
    if let (Some(why), true) = (&detail, works.iter().any(|w| w.error.is_some())) {
        let held = one(&mut coord, &format!("SELECT count(*) FROM {table}"))
            .ok()
            .and_then(|r| r.first().cloned().flatten());
        if let Some(n) = held.filter(|n| n != "0") {
            detail = Some(format!(
                "{why}; {table} now holds {n} rows from the files loaded before the failure \
                 (each file's COPY commits on its own): a partial load, empty the table before \
                 loading again"
            ));
        }
    }
    if let (None, Some(signs)) = (&detail, &unfinished) {
        let rows: u64 = works.iter().map(|w| w.rows).sum();
        detail = Some(format!(
            "loaded {rows} rows from an export that did not finish ({signs}; --allow-incomplete): \
             part of the table, not verified"
        ));
    }
    finish(rec, &clock, "copy-in", &works, detail, None)
}

fn mapper_in(
    spec: &str,
    dir: &Path,
    files: &[&(String, Option<FileEntry>)],
    (table, opts, parquet): (&str, &str, bool),
    clock: &RunClock,
    w: &mut MapperWork,
) -> Result<(), String> {
    let mut c =
        connect(spec, &format!("dbscope/transfer/{}", w.mapper)).map_err(|e| e.to_string())?;
    one(&mut c, SESSION_SETTINGS).map_err(|e| db("SET", &e))?;
    w.start_ns = clock.now_ns();
    for (name, entry) in files {
        let path = dir.join(name);
        if parquet {
            let (rows, bytes) = parquet_in(&mut c, &path, entry.as_ref(), table)?;
            w.rows += rows;
            w.bytes += bytes;
            w.files.push(name.clone());
            continue;
        }
        let sql = format!("COPY {table} FROM STDIN {opts}");
        let f = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        // The codec by the file's name (transfer.json lists the names it wrote).
        let mut f = Decoder::new(f, Compress::of_name(name))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut bytes = 0u64;
        let expect = entry.as_ref().map(|e| e.crc32);
        let mut fill = |chunk: &mut Vec<u8>| -> Result<bool, String> {
            chunk.resize(1 << 20, 0);
            let n = f
                .read(chunk)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            chunk.truncate(n);
            if n == 0 {
                let (b, crc) = f
                    .file_bytes_and_crc()
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                bytes = b;
                if let Some(want) = expect.filter(|&want| want != crc) {
                    return Err(format!(
                        "{}: CRC-32 {crc:08x}, {TRANSFER_FILE} says {want:08x} (the file changed)",
                        path.display()
                    ));
                }
            }
            Ok(n > 0)
        };
        let rows = c
            .copy_in(&sql, &mut fill)
            .map_err(|e| db(&format!("COPY {name}"), &e))?;
        w.rows += rows;
        w.bytes += bytes;
        w.files.push(name.clone());
    }
    w.end_ns = clock.now_ns();
    Ok(())
}

/// One Parquet file into the table: its CRC-32 checked against `transfer.json` first (the reader
/// jumps around the file), then its rows streamed as COPY text. Returns rows and file bytes.
fn parquet_in(
    c: &mut WireConn,
    path: &Path,
    entry: Option<&FileEntry>,
    table: &str,
) -> Result<(u64, u64), String> {
    let shown = path.display();
    let mut f = std::fs::File::open(path).map_err(|e| format!("{shown}: {e}"))?;
    let mut h = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(|e| format!("{shown}: {e}"))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        bytes += n as u64;
    }
    let crc = h.finalize();
    if let Some(want) = entry.map(|e| e.crc32).filter(|&want| want != crc) {
        return Err(format!(
            "{shown}: CRC-32 {crc:08x}, {TRANSFER_FILE} says {want:08x} (the file changed)"
        ));
    }
    let mut rows = PqRows::open(path)?;
    let sql = format!(
        "COPY {table} {} FROM STDIN (FORMAT text)",
        rows.column_list()
    );
    let n = c
        .copy_in(&sql, &mut |chunk: &mut Vec<u8>| rows.fill(chunk, 1 << 20))
        .map_err(|e| db(&format!("COPY {shown}"), &e))?;
    Ok((n, bytes))
}

/// Writes one event per mapper and the `transfer` counters, and ends the run.
fn finish(
    mut rec: Recording,
    clock: &RunClock,
    event: &str,
    works: &[MapperWork],
    detail: Option<String>,
    split: Option<&split::Plan>,
) -> Result<TransferResult, Error> {
    let name = rec.names().intern(event);
    let failed = rec.names().intern_outcome("mapper-failed");
    let mut events: Vec<Event> = works
        .iter()
        .map(|w| Event {
            session: w.mapper,
            name,
            start_ns: w.start_ns,
            duration_ns: w.end_ns.saturating_sub(w.start_ns).max(1),
            intended_start_ns: None,
            outcome: if w.error.is_some() { failed } else { 0 },
            flags: 0,
            rows: w.rows.min(u32::MAX as u64) as u32,
        })
        .collect();
    events.sort_by_key(|e| e.start_ns);
    rec.write_block(&events)?;
    let rows: u64 = works.iter().map(|w| w.rows).sum();
    let bytes: u64 = works.iter().map(|w| w.bytes).sum();
    let first = works.iter().map(|w| w.start_ns).min().unwrap_or(0);
    let last = works
        .iter()
        .map(|w| w.end_ns)
        .max()
        .unwrap_or(clock.now_ns());
    let seconds = last.saturating_sub(first) as f64 / 1e9;
    let rate = |v: u64, s: f64| (s > 0.0).then(|| v as f64 / s);
    let table_rows = works
        .iter()
        .map(|w| {
            let s = w.end_ns.saturating_sub(w.start_ns) as f64 / 1e9;
            let mut row = vec![
                CounterValue::count(w.mapper as u64),
                CounterValue::count(w.rows),
                CounterValue::count(w.bytes),
                CounterValue::Float(s),
                CounterValue::float(rate(w.rows, s)),
                CounterValue::float(rate(w.bytes, s).map(|b| b / 1e6)),
                CounterValue::Float(w.sync_ns as f64 / 1e9),
                CounterValue::Text(w.files.join(" ")),
                CounterValue::Text(w.error.clone().unwrap_or_default()),
            ];
            if let Some(sp) = split {
                let r = sp.parts.get(w.mapper as usize).map(split::Part::describe);
                row.push(CounterValue::Text(r.unwrap_or_default().to_string()));
            }
            row
        })
        .collect();
    rec.write_counters(CounterSection {
        key: "transfer".into(),
        title: format!("Transfer ({event})"),
        final_counts: true,
        counters: vec![
            Counter::new("rows", "rows", CounterValue::count(rows), ""),
            Counter::new("bytes", "bytes", CounterValue::count(bytes), ""),
            Counter::new("seconds", "elapsed", CounterValue::Float(seconds), "s").decimals(3),
            Counter::new(
                "rows_per_s",
                "rows/s",
                CounterValue::float(rate(rows, seconds)),
                "/s",
            )
            .decimals(0),
            Counter::new(
                "mb_per_s",
                "MB/s",
                CounterValue::float(rate(bytes, seconds).map(|b| b / 1e6)),
                "MB/s",
            )
            .decimals(1),
            Counter::new(
                "verified",
                "verified",
                CounterValue::Bool(detail.is_none()),
                "",
            ),
        ]
        .into_iter()
        .chain(split.map(|sp| {
            Counter::new(
                "split",
                "split",
                CounterValue::Text(sp.kind.name().into()),
                "",
            )
        }))
        .collect(),
        tables: vec![CounterTable {
            key: "mappers".into(),
            title: "per mapper".into(),
            columns: [
                Column::new("mapper", "mapper", ""),
                Column::new("rows", "rows", ""),
                Column::new("bytes", "bytes", ""),
                Column::new("seconds", "time", "s").decimals(3),
                Column::new("rows_per_s", "rows/s", "/s").decimals(0),
                Column::new("mb_per_s", "MB/s", "MB/s").decimals(1),
                Column::new("sync_seconds", "of which fsync", "s").decimals(3),
                Column::new("files", "files", ""),
                Column::new("error", "error", ""),
            ]
            .into_iter()
            .chain(split.map(|_| Column::new("range", "rows where", "")))
            .collect(),
            rows: table_rows,
        }],
        notes: split
            .map(|sp| format!("split: {} ({})", sp.kind.name(), sp.why))
            .into_iter()
            .collect(),
    })?;
    let outcome = if detail.is_some() {
        Outcome::Failed
    } else {
        Outcome::Complete
    };
    let run = rec.finish(outcome, detail.clone())?;
    Ok(TransferResult {
        run: run.path.clone(),
        outcome,
        detail,
        rows,
        bytes,
        seconds,
        events: events.len() as u64,
        split: split.map(|sp| format!("split by {}: {}", sp.kind.name(), sp.why)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_uris() {
        let t = parse_table_uri("postgres://bench:pw@db:5433/shop/orders?host=/tmp").unwrap();
        assert_eq!(t.conn, "postgres://bench:pw@db:5433/shop?host=/tmp");
        assert_eq!(t.table, "orders");
        let t = parse_table_uri("postgresql:///shop/public.orders").unwrap();
        assert_eq!(
            (t.conn.as_str(), t.table.as_str()),
            ("postgresql:///shop", "public.orders")
        );
        for bad in [
            "postgres://h/shop",
            "postgres://h/shop/a/b",
            "postgres://h//orders",
            "postgres://h/shop/or;ders",
            "postgres://h/shop/1x",
        ] {
            assert!(parse_table_uri(bad).is_err(), "{bad}");
        }
        let e = parse_table_uri("postgres://u:secret@h/shop")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("secret") && e.contains("DATABASE/TABLE"), "{e}");
    }

    #[test]
    fn copy_options() {
        let o = FileOptions {
            format: Format::Csv,
            delimiter: None,
            header: true,
            null: Some("NULL".into()),
            compress: Compress::None,
        };
        assert_eq!(
            o.copy_options(),
            "(FORMAT csv, HEADER true, DELIMITER ',', NULL 'NULL')"
        );
        let t = FileOptions {
            format: Format::Tbl,
            delimiter: None,
            header: false,
            null: None,
            compress: Compress::None,
        };
        assert_eq!(t.copy_options(), "(FORMAT text, DELIMITER '|')");
        assert!(FileOptions {
            delimiter: Some('\''),
            ..t.clone()
        }
        .validate()
        .is_err());
        assert!(FileOptions {
            header: true,
            ..t.clone()
        }
        .validate()
        .is_err());
        assert!(FileOptions {
            compress: Compress::Snappy,
            ..t.clone()
        }
        .validate()
        .is_err());
        assert!(FileOptions {
            null: Some("a'b".into()),
            ..t
        }
        .validate()
        .is_err());
    }
}
