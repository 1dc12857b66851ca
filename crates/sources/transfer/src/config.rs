//! What a transfer is given and what it gives back: the file format and its options, the table
//! URI, the configuration, the per-mapper work, the result, and `transfer.json`.

use std::path::PathBuf;

use dbscope_core::redact::redact;
use dbscope_core::Outcome;
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::files::Compress;
use crate::split::SplitKind;

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
    pub(crate) fn file_suffix(&self) -> &'static str {
        match self.format {
            Format::Parquet => "",
            _ => self.compress.suffix(),
        }
    }

    /// The file of mapper `i`: `part-00000.csv.gz`.
    pub(crate) fn part_file(&self, i: usize) -> String {
        format!("part-{i:05}.{}{}", self.format.ext(), self.file_suffix())
    }

    /// COPY's option list, e.g. `(FORMAT csv, HEADER true, DELIMITER ',')`.
    pub(crate) fn copy_options(&self) -> String {
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

/// True for `postgres://` and `postgresql://` strings, `mysql://` and `mariadb://` ones, and
/// `sqlite:FILE/TABLE` (in only).
pub fn is_table_uri(s: &str) -> bool {
    [
        "postgres://",
        "postgresql://",
        "mysql://",
        "mariadb://",
        "sqlite:",
    ]
    .iter()
    .any(|p| s.starts_with(p))
}

/// Whether a table's connection string is a MariaDB/MySQL one.
pub(crate) fn is_mysql(conn: &str) -> bool {
    conn.starts_with("mysql://") || conn.starts_with("mariadb://")
}

/// Parses `postgres://[user[:password]@][host][:port]/DATABASE/TABLE[?params]` (or the same
/// with `mysql://`/`mariadb://`, the connection string then read by the MariaDB target's rules), or
/// `sqlite:FILE/TABLE` (the connection string `sqlite:FILE`).
pub fn parse_table_uri(s: &str) -> Result<TableUri, Error> {
    if let Some(rest) = s.strip_prefix("sqlite:") {
        let bad = |why: &str| Error::Config(format!("{s}: {why}; expected sqlite:FILE/TABLE"));
        let (file, table) = rest.rsplit_once('/').ok_or_else(|| bad("no table"))?;
        let mut c = table.chars();
        let plain = c
            .next()
            .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
            && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_');
        if file.is_empty() || !plain {
            return Err(bad(&format!(
                "table {table:?} is not a plain name (letters, digits, _)"
            )));
        }
        return Ok(TableUri {
            conn: format!("sqlite:{file}"),
            table: table.to_string(),
        });
    }
    let bad = |why: &str| {
        Error::Config(format!(
            "{}: {why}; expected postgres://[user@][host][:port]/DATABASE/TABLE[?host=…] \
             (or mysql://…/DATABASE/TABLE)",
            redact(s)
        ))
    };
    let scheme_end = s
        .find("://")
        .ok_or_else(|| bad("not a postgres:// or mysql:// URI"))?
        + 3;
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

/// How a transfer in treats the rows the table already holds (issue 34 item 12).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum LoadMode {
    /// The table must be empty (refused otherwise, before anything moves); the loaded table is
    /// verified as a whole. Today's behaviour and the default.
    #[default]
    Empty,
    /// The rows are added to what is there; verified by the table's count and checksum before
    /// and after.
    Append,
    /// A file row whose key is in the table replaces that row, the others are inserted (`INSERT …
    /// ON CONFLICT (key) DO UPDATE`); the key is these columns, which must be a primary key or
    /// unique index of the table, or its primary key when none are given.
    Upsert(Vec<String>),
}

impl LoadMode {
    /// `empty`, `append` or `upsert`, as `--mode` takes it.
    pub fn name(&self) -> &'static str {
        match self {
            LoadMode::Empty => "empty",
            LoadMode::Append => "append",
            LoadMode::Upsert(_) => "upsert",
        }
    }
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
    /// Times the transfer is done in this run (≥ 1): out rewrites the files from the same
    /// snapshot, in empties the table first; each repetition's mappers and job are events.
    pub repeat: u32,
    /// In: what happens to the rows the table already holds.
    pub mode: LoadMode,
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
    /// In: rows inserted and rows updated (an upsert's rows whose key was there), of the last
    /// repetition.
    pub inserted_updated: Option<(u64, u64)>,
    /// In: the loaders that moved the staged rows into the table (one per partition of a
    /// partitioned table), 0 when the mappers copied straight into it.
    pub loaders: usize,
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
        let t = parse_table_uri("sqlite:runs/a.db/orders").unwrap();
        assert_eq!(
            (t.conn.as_str(), t.table.as_str()),
            ("sqlite:runs/a.db", "orders")
        );
        assert!(parse_table_uri("sqlite:a.db").is_err());
        assert!(parse_table_uri("sqlite:a.db/x;y").is_err());
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
