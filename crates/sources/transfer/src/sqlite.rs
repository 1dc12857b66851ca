//! In, into a SQLite table (`sqlite:FILE/TABLE`, issue 34 item 12): the files' rows decoded from
//! PostgreSQL's text or CSV format (Parquet through its COPY text) and inserted in one
//! transaction, appended or upserted with SQLite's `INSERT … ON CONFLICT (key) DO UPDATE`, rows
//! inserted vs updated counted from the table's count before and after (SQLite's write lock holds
//! others out), verified by row counts and the files' CRC-32s.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use rusqlite::{params_from_iter, Connection};

use crate::config::{
    FileEntry, FileOptions, Format, LoadMode, MapperWork, TransferConfig, TransferResult,
};
use crate::error::Error;
use crate::fields::{csv_fields, text_fields};
use crate::files::{Compress, Decoder};
use crate::pq::PqRows;
use crate::record::{begin, finish};

/// The SQLite file of a `sqlite:FILE` connection string.
fn file_of(conn: &str) -> &Path {
    Path::new(conn.strip_prefix("sqlite:").unwrap_or(conn))
}

/// Parquet's rows as COPY text, read as a stream.
struct PqText {
    rows: PqRows,
    buf: Vec<u8>,
    at: usize,
    more: bool,
}

impl Read for PqText {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.buf.len() && self.more {
            self.buf.clear();
            self.at = 0;
            self.more = self
                .rows
                .fill(&mut self.buf, 1 << 20)
                .map_err(std::io::Error::other)?;
        }
        let n = out.len().min(self.buf.len() - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// CRC-32 and size of a whole file.
fn crc_of(path: &Path) -> Result<(u64, u32), String> {
    let mut f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut h = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if n == 0 {
            return Ok((bytes, h.finalize()));
        }
        h.update(&buf[..n]);
        bytes += n as u64;
    }
}

/// `"name"` in SQLite.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The table's columns and, for an upsert, its key checked to be the primary key or a unique
/// index that is not partial (what SQLite's ON CONFLICT can name).
fn inspect(
    db: &Connection,
    table: &str,
    mode: &LoadMode,
) -> Result<(Vec<String>, Vec<String>), Error> {
    let sql_err = |e: rusqlite::Error| Error::Table(format!("{table}: {e}"));
    let mut cols: Vec<(String, i64)> = Vec::new();
    let mut st = db
        .prepare(&format!(
            "SELECT name, pk FROM pragma_table_info({})",
            sq(table)
        ))
        .map_err(sql_err)?;
    let rows = st
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .map_err(sql_err)?;
    for r in rows {
        cols.push(r.map_err(sql_err)?);
    }
    if cols.is_empty() {
        return Err(Error::Table(format!(
            "{table}: no such table in {}",
            db.path().unwrap_or("the database")
        )));
    }
    let names: Vec<String> = cols.iter().map(|c| c.0.clone()).collect();
    let LoadMode::Upsert(given) = mode else {
        return Ok((names, Vec::new()));
    };
    let mut pk: Vec<(i64, String)> = cols
        .iter()
        .filter(|c| c.1 > 0)
        .map(|c| (c.1, c.0.to_ascii_lowercase()))
        .collect();
    pk.sort();
    let mut keys: Vec<(String, Vec<String>)> = Vec::new();
    if !pk.is_empty() {
        let mut k: Vec<String> = pk.into_iter().map(|p| p.1).collect();
        k.sort();
        keys.push(("primary key".into(), k));
    }
    let mut st = db
        .prepare(&format!(
            "SELECT il.name, il.origin, il.partial, ii.name FROM pragma_index_list({0}) il \
             JOIN pragma_index_info(il.name) ii WHERE il.\"unique\" ORDER BY il.seq, ii.seqno",
            sq(table)
        ))
        .map_err(sql_err)?;
    let rows = st
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, Option<String>>(3)?,
            ))
        })
        .map_err(sql_err)?;
    let mut idx: Vec<(String, bool, Vec<String>)> = Vec::new();
    for r in rows {
        let (name, origin, partial, col) = r.map_err(sql_err)?;
        if origin == "pk" {
            continue;
        }
        match idx.last_mut() {
            Some(last) if last.0 == name => last.2.extend(col.map(|c| c.to_ascii_lowercase())),
            _ => idx.push((
                name,
                partial == 0,
                col.map(|c| c.to_ascii_lowercase()).into_iter().collect(),
            )),
        }
    }
    for (_, usable, mut c) in idx {
        c.sort();
        keys.push((
            if usable {
                "unique"
            } else {
                "unique (partial: ON CONFLICT cannot use it)"
            }
            .into(),
            c,
        ));
    }
    let mut want: Vec<String> = given.iter().map(|g| g.to_ascii_lowercase()).collect();
    want.sort();
    want.dedup();
    let found = keys.iter().find(|(kind, c)| match want.is_empty() {
        true => kind == "primary key",
        false => !kind.contains("partial") && *c == want,
    });
    if let Some((_, c)) = found {
        return Ok((names, c.clone()));
    }
    let has = keys
        .iter()
        .map(|(k, c)| format!("{k} ({})", c.join(",")))
        .collect::<Vec<_>>()
        .join(", ");
    let has = if has.is_empty() { "none".into() } else { has };
    Err(Error::Table(match want.is_empty() {
        true => format!(
            "{table} has no primary key: --mode upsert needs --key COL[,COL…] naming a unique key \
             of it (its unique keys: {has})"
        ),
        false => format!(
            "--key {}: not a unique key of {table}: an upsert (INSERT … ON CONFLICT) needs a \
             primary key or unique index on exactly these columns (its unique keys: {has}); \
             nothing was loaded",
            want.join(",")
        ),
    }))
}

/// A string literal in SQLite.
fn sq(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn count(db: &Connection, table: &str) -> Result<u64, rusqlite::Error> {
    db.query_row(&format!("SELECT count(*) FROM {}", quote(table)), [], |r| {
        r.get::<_, i64>(0)
    })
    .map(|n| n as u64)
}

/// Files into a SQLite table: one mapper (SQLite has one writer), one transaction.
pub(crate) fn transfer_in_sqlite(
    cfg: &TransferConfig,
    files: &[(String, Option<FileEntry>)],
    fopts: &FileOptions,
    manifest_rows: Option<u64>,
) -> Result<TransferResult, Error> {
    if cfg.repeat > 1 {
        return Err(Error::Config(
            "--repeat: not for a SQLite table yet (one load, one transaction)".into(),
        ));
    }
    let spec = cfg.table.conn.as_str();
    let table = cfg.table.table.as_str();
    let path = file_of(spec);
    if !path.exists() {
        return Err(Error::Input(format!(
            "{}: no such SQLite file (create the table first)",
            path.display()
        )));
    }
    let mut db = Connection::open(path)
        .map_err(|e| Error::Io(format!("cannot open {}: {e}", path.display())))?;
    let (cols, key) = inspect(&db, table, &cfg.mode)?;
    let before = count(&db, table).map_err(|e| Error::Table(format!("{table}: {e}")))?;
    if cfg.mode == LoadMode::Empty && before > 0 {
        return Err(Error::Table(format!(
            "{table} is not empty: transfer loads into an empty table (so the row count can be \
             verified); --mode append adds the rows to those there, --mode upsert --key COL \
             replaces the rows whose key is in the files"
        )));
    }
    let mut rec = begin(cfg, "transfer-in", spec, None)?;
    let clock = rec.start_clock()?;
    let mut w = MapperWork {
        start_ns: clock.now_ns(),
        ..Default::default()
    };
    let loaded = (|| -> Result<u64, String> {
        let tx = db
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| format!("BEGIN: {e}"))?;
        let mut rows = 0u64;
        for (name, entry) in files {
            rows += load_file(&tx, cfg, fopts, (table, &cols, &key), name, entry.as_ref())?;
            w.files.push(name.clone());
        }
        let after = count(&tx, table).map_err(|e| e.to_string())?;
        tx.commit().map_err(|e| format!("COMMIT: {e}"))?;
        w.rows = rows;
        Ok(after)
    })();
    w.end_ns = clock.now_ns();
    w.bytes = files
        .iter()
        .filter_map(|(n, _)| std::fs::metadata(cfg.dir.join(n)).ok())
        .map(|m| m.len())
        .sum();
    let (detail, counts) = match loaded {
        Err(e) => {
            w.error = Some(format!("mapper 0: {e}"));
            (
                Some(format!(
                    "mapper 0: {e}; nothing was loaded into {table} (one transaction, rolled back)"
                )),
                (0, 0),
            )
        }
        Ok(after) => {
            let inserted = after.saturating_sub(before);
            let counts = (inserted, w.rows.saturating_sub(inserted));
            let detail = match manifest_rows {
                Some(m) if m != w.rows => Some(format!(
                    "{} rows were loaded into {table}; {m} were transferred out",
                    w.rows
                )),
                // Appended (or loaded into the empty table): every row is a new one.
                _ if !matches!(cfg.mode, LoadMode::Upsert(_)) && inserted != w.rows => {
                    Some(format!(
                        "{table} holds {after} rows after the load and held {before}; {} were \
                         loaded",
                        w.rows
                    ))
                }
                _ => None,
            };
            (detail, counts)
        }
    };
    let reps = vec![vec![w]];
    finish(
        rec,
        &clock,
        "copy-in",
        (&reps, &[]),
        detail,
        None,
        Some(counts),
    )
}

/// One file's rows into the table; its CRC-32 checked against `transfer.json` first.
fn load_file(
    tx: &Connection,
    cfg: &TransferConfig,
    fopts: &FileOptions,
    (table, cols, key): (&str, &[String], &[String]),
    name: &str,
    entry: Option<&FileEntry>,
) -> Result<u64, String> {
    let path = cfg.dir.join(name);
    let shown = path.display();
    if let Some(e) = entry {
        // Of the file as it lies on disk, compressed or not, before any row goes in.
        let (_, crc) = crc_of(&path)?;
        if crc != e.crc32 {
            return Err(format!(
                "{shown}: CRC-32 {crc:08x}, transfer.json says {:08x} (the file changed)",
                e.crc32
            ));
        }
    }
    let f = std::fs::File::open(&path).map_err(|e| format!("{shown}: {e}"))?;
    let (reader, names, csv, delim, null): (Box<dyn Read>, Vec<String>, bool, u8, Vec<u8>) =
        match fopts.format {
            Format::Parquet => {
                let rows = PqRows::open(&path)?;
                let list = rows.column_list();
                let names = list[1..list.len() - 1]
                    .split(", ")
                    .map(|c| c.trim_matches('"').replace("\"\"", "\""))
                    .collect();
                let r = PqText {
                    rows,
                    buf: Vec::new(),
                    at: 0,
                    more: true,
                };
                (Box::new(r), names, false, b'\t', b"\\N".to_vec())
            }
            fmt => {
                let d = Decoder::new(f, Compress::of_name(name))
                    .map_err(|e| format!("{shown}: {e}"))?;
                let csv = fmt == Format::Csv;
                let delim = fopts
                    .delimiter
                    .map_or(if csv { b',' } else { b'|' }, |c| c as u8);
                let null =
                    fopts
                        .null
                        .clone()
                        .unwrap_or(if csv { String::new() } else { "\\N".into() });
                (Box::new(d), cols.to_vec(), csv, delim, null.into_bytes())
            }
        };
    let qcols: Vec<String> = names.iter().map(|c| quote(c)).collect();
    let marks = vec!["?"; qcols.len()].join(", ");
    let mut sql = format!(
        "INSERT INTO {} ({}) VALUES ({marks})",
        quote(table),
        qcols.join(", ")
    );
    if !key.is_empty() {
        let set: Vec<String> = names
            .iter()
            .filter(|c| !key.contains(&c.to_ascii_lowercase()))
            .map(|c| format!("{0} = excluded.{0}", quote(c)))
            .collect();
        let set = if set.is_empty() {
            format!("{0} = excluded.{0}", quote(&key[0]))
        } else {
            set.join(", ")
        };
        let k: Vec<String> = key.iter().map(|c| quote(c)).collect();
        sql += &format!(" ON CONFLICT ({}) DO UPDATE SET {set}", k.join(", "));
    }
    let mut st = tx.prepare(&sql).map_err(|e| format!("{table}: {e}"))?;
    let mut r = BufReader::with_capacity(1 << 20, reader);
    let (mut line, mut rec) = (Vec::new(), Vec::new());
    let (mut n, mut lineno, mut header) = (0u64, 0u64, csv && fopts.header);
    loop {
        line.clear();
        let got = r
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("{shown}: {e}"))?;
        if got == 0 {
            if !rec.is_empty() {
                return Err(format!(
                    "{shown}, line {lineno}: a quoted field is not closed"
                ));
            }
            break;
        }
        lineno += 1;
        let fields = if csv {
            rec.extend_from_slice(&line);
            match csv_fields(&rec, delim, &null) {
                None => continue,
                Some(f) => {
                    rec.clear();
                    f
                }
            }
        } else {
            text_fields(&line, delim, &null)
        };
        if std::mem::take(&mut header) {
            continue;
        }
        if fields.len() != names.len() {
            return Err(format!(
                "{shown}, line {lineno}: {} fields, {table} takes {}",
                fields.len(),
                names.len()
            ));
        }
        let vals = fields
            .into_iter()
            .map(|f| f.map(|b| String::from_utf8_lossy(&b).into_owned()));
        st.execute(params_from_iter(vals))
            .map_err(|e| format!("{shown}, line {lineno}: {e}"))?;
        n += 1;
    }
    Ok(n)
}

/// Whether a table string names a SQLite table.
pub(crate) fn is_sqlite(conn: &str) -> bool {
    conn.starts_with("sqlite:")
}
