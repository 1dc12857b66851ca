//! Out of and into a MariaDB/MySQL table (`mysql://…/DATABASE/TABLE`, issue 30), behind the
//! `mysql` feature, over `dbscope-db`'s MariaDB client (its URI rules, its errors).
//!
//! Out: one snapshot for every mapper. InnoDB's `START TRANSACTION WITH CONSISTENT SNAPSHOT`
//! takes a snapshot per connection, at the moment each one runs it, and MariaDB has no way to
//! hand one connection's snapshot to another (PostgreSQL's `pg_export_snapshot`). So, as mydumper
//! does, a lock connection holds `FLUSH TABLES t WITH READ LOCK` (no write to the table commits
//! while it is held; it waits for the transactions writing it to end) while the planner and the
//! mappers open their snapshots, then `UNLOCK TABLES`: the snapshots all see the same table. It
//! needs the `RELOAD` and `LOCK TABLES` privileges; one mapper needs neither (one snapshot). The
//! planner reads `count(*)`, `min` and `max` of the key in its snapshot and each mapper reads
//! `SELECT * … WHERE key BETWEEN lo AND hi` streamed and writes it as COPY would have written
//! the same text values (`fields::RowFormat`), so the files load into PostgreSQL as well; the
//! checksum is the one PostgreSQL's transfer makes (the wrapping sum of XXH3-64 of every row's
//! bytes in the file's format).
//!
//! In: the files spread over the mappers, each file decoded (COPY's text or CSV) and sent as one
//! `LOAD DATA LOCAL INFILE` stream in one transaction, its CRC-32 checked at its end (a changed
//! file rolls its load back); then the table counted and read back, rendered in the files'
//! format and checksummed against `transfer.json`. `LOAD DATA LOCAL` turns bad values into
//! warnings, not errors: a row the server skipped shows as a short count, a value it changed as
//! a checksum that differs.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use dbscope_core::RunClock;
use dbscope_db::{MyTarget, Session, Target, TargetError};

use crate::config::{
    FileEntry, FileOptions, LoadMode, MapperWork, TransferConfig, TransferManifest, TransferResult,
    TRANSFER_FILE,
};
use crate::error::Error;
use crate::fields::RowFormat;
use crate::files::{Compress, Counted, Decoder, Encoder};
use crate::record::{begin, finish};
use crate::session::{row_hash, ROW_SUM_PREFIX};
use crate::split::{self, Part, Plan, SplitKind};

/// The server refused `what` (or the connection is gone): its message, with the error number.
fn server(what: &str, e: TargetError) -> Error {
    Error::Server(format!("{what}: {}", e.message))
}

fn open(spec: &str) -> Result<MyTarget, Error> {
    MyTarget::new(spec, &[]).map_err(|e| Error::Config(e.message))
}

fn connect(t: &MyTarget) -> Result<Box<dyn Session>, Error> {
    t.connect().map_err(|e| Error::Server(e.message))
}

/// `` `schema`.`name` `` of a table name (`name` or `schema.name`, plain identifiers).
fn quoted(table: &str) -> String {
    table
        .split('.')
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(".")
}

/// The `information_schema` condition naming `table`.
fn where_table(table: &str) -> String {
    match table.split_once('.') {
        Some((s, t)) => format!("table_schema = '{s}' AND table_name = '{t}'"),
        None => format!("table_schema = DATABASE() AND table_name = '{table}'"),
    }
}

/// The table's columns in order with their types; an error when there is no such table.
fn columns(s: &mut dyn Session, table: &str) -> Result<Vec<(String, String)>, Error> {
    let rows = s
        .query_rows(
            &format!(
                "SELECT column_name, data_type FROM information_schema.columns WHERE {} \
                 ORDER BY ordinal_position",
                where_table(table)
            ),
            &[],
        )
        .map_err(|e| server(table, e))?;
    let cols: Vec<(String, String)> = rows
        .into_iter()
        .map(|r| {
            let mut r = r.into_iter().map(Option::unwrap_or_default);
            (
                r.next().unwrap_or_default(),
                r.next().unwrap_or_default().to_ascii_lowercase(),
            )
        })
        .collect();
    if cols.is_empty() {
        return Err(Error::Table(format!(
            "{table}: no such table in the database (or no privilege to see it)"
        )));
    }
    Ok(cols)
}

fn is_integer(data_type: &str) -> bool {
    matches!(
        data_type,
        "tinyint" | "smallint" | "mediumint" | "int" | "integer" | "bigint"
    )
}

/// The key to split by: `--key`, else a one-column integer primary key; `None` when there is
/// none (one mapper only).
fn split_key(
    s: &mut dyn Session,
    table: &str,
    cols: &[(String, String)],
    key: Option<&str>,
) -> Result<Option<String>, Error> {
    if let Some(k) = key {
        return match cols.iter().find(|(c, _)| c.eq_ignore_ascii_case(k)) {
            None => Err(Error::Table(format!(
                "--key {k}: {table} has no such column"
            ))),
            Some((c, t)) if is_integer(t) => Ok(Some(c.clone())),
            Some((_, t)) => Err(Error::Table(format!(
                "--key {k}: a {t} column; the split needs an integer column"
            ))),
        };
    }
    let pk = s
        .query_rows(
            &format!(
                "SELECT column_name FROM information_schema.key_column_usage WHERE {} \
                 AND constraint_name = 'PRIMARY' ORDER BY ordinal_position",
                where_table(table)
            ),
            &[],
        )
        .map_err(|e| server(table, e))?;
    let pk: Vec<String> = pk
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
        .collect();
    Ok(match &pk[..] {
        [one] if cols.iter().any(|(c, t)| c == one && is_integer(t)) => Some(one.clone()),
        _ => None,
    })
}

/// One table's rows in the files' format, each handed to `row` with its bytes; the rows read.
fn render(
    s: &mut dyn Session,
    sql: &str,
    fmt: &RowFormat,
    row: &mut dyn FnMut(&[u8]) -> Result<(), String>,
) -> Result<u64, TargetError> {
    let mut buf = Vec::with_capacity(4096);
    s.query_each(sql, &mut |fields| {
        buf.clear();
        fmt.encode(fields, &mut buf);
        row(&buf)
    })
}

/// The table's rows and checksum (`xxh3-sum:`), read back in the files' format.
fn table_sum(s: &mut dyn Session, table: &str, fmt: &RowFormat) -> Result<(u64, u64), Error> {
    let mut sum = 0u64;
    let n = render(
        s,
        &format!("SELECT * FROM {}", quoted(table)),
        fmt,
        &mut |r| {
            sum = sum.wrapping_add(row_hash(r));
            Ok(())
        },
    )
    .map_err(|e| server(&format!("reading {table} back"), e))?;
    Ok((n, sum))
}

/// A MariaDB/MySQL table to files.
pub(crate) fn transfer_out_mysql(cfg: &TransferConfig) -> Result<TransferResult, Error> {
    let fmt = RowFormat::of(&cfg.file).ok_or_else(|| {
        Error::Config(
            "--format parquet: not from a MariaDB/MySQL table yet (its column types would have \
             to be mapped); use --format tbl or csv"
                .into(),
        )
    })?;
    let spec = cfg.table.conn.as_str();
    let table = cfg.table.table.as_str();
    let target = open(spec)?;
    let mut planner = connect(&target)?;
    let cols = columns(planner.as_mut(), table)?;
    let key = split_key(planner.as_mut(), table, &cols, cfg.key.as_deref())?;
    let n = cfg.mappers as usize;
    let key = match (key, n) {
        (k, 1) => k,
        (Some(k), _) => Some(k),
        (None, _) => {
            return Err(Error::Table(format!(
                "{table} has no one-column integer primary key to split among {n} mappers: give \
                 --key COL (an integer column) or --mappers 1"
            )))
        }
    };
    // Every connection first, then the snapshots under the lock (held as briefly as that).
    let mut mappers: Vec<Box<dyn Session>> =
        (0..n).map(|_| connect(&target)).collect::<Result<_, _>>()?;
    let mut lock = (n > 1).then(|| connect(&target)).transpose()?;
    for s in std::iter::once(&mut planner).chain(mappers.iter_mut()) {
        s.batch("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            .map_err(|e| server("SET TRANSACTION ISOLATION LEVEL", e))?;
    }
    if let Some(l) = lock.as_mut() {
        l.batch(&format!("FLUSH TABLES {} WITH READ LOCK", quoted(table)))
            .map_err(|e| {
                server(
                    &format!(
                        "FLUSH TABLES {table} WITH READ LOCK (one snapshot for {n} mappers needs \
                         the RELOAD and LOCK TABLES privileges; or use --mappers 1)"
                    ),
                    e,
                )
            })?;
    }
    let opened = std::iter::once(&mut planner)
        .chain(mappers.iter_mut())
        .try_for_each(|s| s.batch("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"));
    if let Some(l) = lock.as_mut() {
        let _ = l.batch("UNLOCK TABLES");
    }
    drop(lock);
    opened.map_err(|e| server("START TRANSACTION WITH CONSISTENT SNAPSHOT", e))?;
    let plan = match &key {
        Some(k) if n > 1 => {
            let r = planner
                .query_rows(
                    &format!(
                        "SELECT count(*), min(`{k}`), max(`{k}`) FROM {}",
                        quoted(table)
                    ),
                    &[],
                )
                .map_err(|e| server(table, e))?;
            let r = r.into_iter().next().unwrap_or_default();
            let num = |i: usize| r.get(i).cloned().flatten().and_then(|v| v.parse().ok());
            let ranges = split::split_ranges(num(1), num(2), cfg.mappers);
            let single = ranges.len() == 1;
            Plan {
                kind: SplitKind::Key,
                key: k.clone(),
                parts: ranges
                    .iter()
                    .enumerate()
                    .map(|(i, r)| Part {
                        // NULL keys (a --key that allows them) go with the first range.
                        filter: r.filter(|_| !single).map(|(a, b)| {
                            if i == 0 {
                                format!("(`{k}` BETWEEN {a} AND {b} OR `{k}` IS NULL)")
                            } else {
                                format!("`{k}` BETWEEN {a} AND {b}")
                            }
                        }),
                        key_range: *r,
                        block_range: None,
                    })
                    .collect(),
                count: num(0).map(|c: i64| c as u64),
                why: format!(
                    "ranges of {k}, the snapshots opened under FLUSH TABLES … WITH READ LOCK"
                ),
            }
        }
        _ => Plan {
            kind: SplitKind::Whole,
            key: key.clone().unwrap_or_default(),
            parts: vec![Part {
                filter: None,
                key_range: None,
                block_range: None,
            }],
            count: None,
            why: "one mapper copies the whole table".into(),
        },
    };
    crate::sealing::mark_unfinished(cfg, table)?;
    let mut rec = begin(cfg, "transfer-out", spec, Some(plan.kind))?;
    let clock = rec.start_clock()?;
    let header: Option<Vec<u8>> = (cfg.file.header && fmt.is_csv()).then(|| {
        let names: Vec<&[u8]> = cols.iter().map(|(c, _)| c.as_bytes()).collect();
        let fields: Vec<Option<&[u8]>> = names.into_iter().map(Some).collect();
        let mut h = Vec::new();
        fmt.encode(&fields, &mut h);
        h
    });
    mappers.truncate(plan.parts.len());
    let mut reps: Vec<Vec<MapperWork>> = Vec::new();
    for _ in 0..cfg.repeat.max(1) {
        let works = copy_out_once(cfg, &plan, &mut mappers, &fmt, header.as_deref(), &clock);
        let failed = works.iter().any(|w| w.error.is_some());
        reps.push(works);
        if failed {
            break;
        }
    }
    for s in mappers.iter_mut().chain(std::iter::once(&mut planner)) {
        let _ = s.commit();
    }
    let works = reps.last().expect("at least one repetition");
    let detail = crate::sealing::seal(cfg, table, &plan, works)?;
    finish(
        rec,
        &clock,
        "copy-out",
        (&reps, &[]),
        detail,
        Some(&plan),
        None,
    )
}

/// One copy of the snapshot: a mapper (its connection, its snapshot) per part, each its file.
fn copy_out_once(
    cfg: &TransferConfig,
    plan: &Plan,
    sessions: &mut [Box<dyn Session>],
    fmt: &RowFormat,
    header: Option<&[u8]>,
    clock: &RunClock,
) -> Vec<MapperWork> {
    let table = quoted(&cfg.table.table);
    std::thread::scope(|s| {
        let handles: Vec<_> = plan
            .parts
            .iter()
            .zip(sessions.iter_mut())
            .enumerate()
            .map(|(i, (part, sess))| {
                let name = cfg.file.part_file(i);
                let path = cfg.dir.join(&name);
                let table = &table;
                s.spawn(move || {
                    let sql = part.select_all(table);
                    let mut w = MapperWork {
                        mapper: i as u32,
                        files: vec![name],
                        ..Default::default()
                    };
                    let out = (path.as_path(), cfg.file.compress, header);
                    if let Err(e) = mapper_out(sess.as_mut(), &sql, fmt, out, clock, &mut w) {
                        w.error = Some(format!("mapper {i} ({}): {e}", part.describe()));
                    }
                    w
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("mapper thread"))
            .collect()
    })
}

fn mapper_out(
    sess: &mut dyn Session,
    sql: &str,
    fmt: &RowFormat,
    (path, compress, header): (&Path, Compress, Option<&[u8]>),
    clock: &RunClock,
    w: &mut MapperWork,
) -> Result<(), String> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.partial"));
    let shown = tmp.display().to_string();
    let file = std::fs::File::create(&tmp).map_err(|e| format!("{shown}: {e}"))?;
    w.start_ns = clock.now_ns();
    let done = (|| {
        let out = Counted::new(BufWriter::with_capacity(1 << 20, file));
        let mut sink = BufWriter::with_capacity(
            1 << 20,
            Encoder::new(out, compress).map_err(|e| format!("{shown}: {e}"))?,
        );
        if let Some(h) = header {
            sink.write_all(h).map_err(|e| format!("{shown}: {e}"))?;
        }
        let mut sum = 0u64;
        let rows = render(sess, sql, fmt, &mut |r| {
            sum = sum.wrapping_add(row_hash(r));
            sink.write_all(r).map_err(|e| format!("{shown}: {e}"))
        })
        .map_err(|e| e.message)?;
        w.row_sum = sum;
        w.rows = rows;
        let enc = sink
            .into_inner()
            .map_err(|e| format!("{shown}: {}", e.error()))?;
        let out = enc.finish().map_err(|e| format!("{shown}: {e}"))?;
        w.bytes = out.bytes;
        w.crc32 = out.crc32();
        let f = out
            .into_inner()
            .into_inner()
            .map_err(|e| format!("{shown}: {}", e.error()))?;
        let t = clock.now_ns();
        f.sync_all().map_err(|e| format!("{shown}: {e}"))?;
        w.sync_ns = clock.now_ns() - t;
        std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
    })();
    w.end_ns = clock.now_ns();
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

/// Appends one row's fields in `LOAD DATA`'s default format: tab between fields, newline after,
/// `\N` for NULL, backslash escaping backslash, tab, newline, CR and NUL.
fn load_data_row(fields: &[Option<Vec<u8>>], out: &mut Vec<u8>) {
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b'\t');
        }
        let Some(f) = f else {
            out.extend_from_slice(b"\\N");
            continue;
        };
        for &b in f {
            match b {
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\t' => out.extend_from_slice(b"\\t"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                0 => out.extend_from_slice(b"\\0"),
                b => out.push(b),
            }
        }
    }
    out.push(b'\n');
}

/// Files into a MariaDB/MySQL table (the caller checked the directory and the files' sizes).
pub(crate) fn transfer_in_mysql(
    cfg: &TransferConfig,
    files: &[(String, Option<FileEntry>)],
    fopts: &FileOptions,
    manifest: Option<&TransferManifest>,
    unfinished: Option<&str>,
) -> Result<TransferResult, Error> {
    let fmt = RowFormat::of(fopts).ok_or_else(|| {
        Error::Config(
            "--format parquet: not into a MariaDB/MySQL table yet; export as tbl or csv".into(),
        )
    })?;
    if let LoadMode::Upsert(_) = cfg.mode {
        return Err(Error::Config(
            "--mode upsert: not into a MariaDB/MySQL table yet (empty and append are)".into(),
        ));
    }
    if cfg.repeat > 1 {
        return Err(Error::Config(
            "--repeat: not into a MariaDB/MySQL table yet (one load)".into(),
        ));
    }
    let spec = cfg.table.conn.as_str();
    let table = cfg.table.table.as_str();
    let target = open(spec)?;
    let mut coord = connect(&target)?;
    let ncols = columns(coord.as_mut(), table)?.len();
    let count = |s: &mut dyn Session| -> Result<u64, Error> {
        let n = s
            .query_i64(&format!("SELECT count(*) FROM {}", quoted(table)))
            .map_err(|e| server(table, e))?;
        Ok(n.first().copied().unwrap_or(0) as u64)
    };
    let before = count(coord.as_mut())?;
    if cfg.mode == LoadMode::Empty && before > 0 {
        return Err(Error::Table(format!(
            "{table} is not empty: transfer loads into an empty table (so the row count and \
             checksum can be verified); --mode append adds the rows to those there"
        )));
    }
    // The manifest's checksum, when this side can make the same one.
    let want_sum = match manifest.and_then(|m| m.checksum.as_deref()) {
        Some(c) if cfg.checksum => match c.strip_prefix(ROW_SUM_PREFIX) {
            Some(hex) => Some(u64::from_str_radix(hex, 16).map_err(|_| {
                Error::Input(format!(
                    "{TRANSFER_FILE}: checksum {c:?} is not {ROW_SUM_PREFIX}HEX"
                ))
            })?),
            None => {
                return Err(Error::Input(format!(
                    "{TRANSFER_FILE}'s checksum is PostgreSQL's server-side hash (an older \
                     dbscope), which MariaDB/MySQL cannot compute: --verify count loads it with \
                     the row counts and CRC-32s checked"
                )))
            }
        },
        _ => None,
    };
    let before_sum = match (want_sum, cfg.mode == LoadMode::Append && before > 0) {
        (Some(_), true) => table_sum(coord.as_mut(), table, &fmt)?.1,
        _ => 0,
    };
    let mut rec = begin(cfg, "transfer-in", spec, None)?;
    let clock = rec.start_clock()?;
    let n = (cfg.mappers as usize).min(files.len()).max(1);
    let works: Vec<MapperWork> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let mine: Vec<&(String, Option<FileEntry>)> =
                    files.iter().skip(i).step_by(n).collect();
                let (target, fmt, clock) = (&target, &fmt, &clock);
                s.spawn(move || {
                    let mut w = MapperWork {
                        mapper: i as u32,
                        ..Default::default()
                    };
                    w.start_ns = clock.now_ns();
                    let r = connect(target)
                        .map_err(|e| e.to_string())
                        .and_then(|mut c| {
                            mapper_in(c.as_mut(), cfg, &mine, (table, ncols, fmt), &mut w)
                        });
                    w.end_ns = clock.now_ns();
                    if let Err(e) = r {
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
    let loaded: u64 = works.iter().map(|w| w.rows).sum();
    let mut detail = works.iter().find_map(|w| w.error.clone());
    let after = count(coord.as_mut());
    if let Some(why) = &detail {
        // Each file's load commits on its own: what the other files put there stays.
        if let Ok(after) = &after {
            if *after > before {
                detail = Some(format!(
                    "{why}; {table} now holds {after} rows, {} more than before, from the files \
                     loaded before the failure (each file's load commits on its own): a partial \
                     load",
                    after - before
                ));
            }
        }
    }
    if detail.is_none() {
        let after = after?;
        detail = if after - before.min(after) != loaded {
            Some(format!(
                "{table} holds {after} rows after the load and held {before}; {loaded} were loaded"
            ))
        } else if let Some(m) = manifest.filter(|m| m.rows != loaded) {
            Some(format!(
                "{loaded} rows were loaded into {table}; {} were transferred out",
                m.rows
            ))
        } else if let Some(want) = want_sum {
            let (_, sum) = table_sum(coord.as_mut(), table, &fmt)?;
            let got = sum.wrapping_sub(before_sum);
            (got != want).then(|| {
                format!(
                    "{table}'s checksum of the loaded rows is {ROW_SUM_PREFIX}{got:016x}, \
                     {TRANSFER_FILE} says {ROW_SUM_PREFIX}{want:016x}: a value was changed on \
                     the way in (LOAD DATA turns what a column cannot hold into a warning; the \
                     text of a value MariaDB stores differently, e.g. a boolean, also differs)"
                )
            })
        } else {
            None
        };
    }
    if let (None, Some(signs)) = (&detail, unfinished) {
        detail = Some(format!(
            "loaded {loaded} rows from an export that did not finish ({signs}; \
             --allow-incomplete): part of the table, not verified"
        ));
    }
    let reps = vec![works];
    finish(
        rec,
        &clock,
        "copy-in",
        (&reps, &[]),
        detail,
        None,
        Some((loaded, 0)),
    )
}

/// One mapper's files, each decoded and loaded in its own transaction, its CRC-32 checked at its
/// end (before the commit).
fn mapper_in(
    sess: &mut dyn Session,
    cfg: &TransferConfig,
    files: &[&(String, Option<FileEntry>)],
    (table, ncols, fmt): (&str, usize, &RowFormat),
    w: &mut MapperWork,
) -> Result<(), String> {
    let sql = format!(
        "LOAD DATA LOCAL INFILE 'dbscope-transfer' INTO TABLE {} CHARACTER SET utf8mb4",
        quoted(table)
    );
    for (name, entry) in files {
        let path = cfg.dir.join(name);
        let shown = path.display().to_string();
        let f = std::fs::File::open(&path).map_err(|e| format!("{shown}: {e}"))?;
        let mut r = BufReader::with_capacity(
            1 << 20,
            Decoder::new(f, Compress::of_name(name)).map_err(|e| format!("{shown}: {e}"))?,
        );
        let (mut line, mut rec) = (Vec::new(), Vec::new());
        let (mut rows, mut lineno, mut header) = (0u64, 0u64, fmt.is_csv() && cfg.file.header);
        let mut bytes = 0u64;
        let expect = entry.as_ref().map(|e| e.crc32);
        let mut fill = |chunk: &mut Vec<u8>| -> Result<bool, String> {
            while chunk.len() < 1 << 20 {
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
                    let (b, crc) = r
                        .get_mut()
                        .file_bytes_and_crc()
                        .map_err(|e| format!("{shown}: {e}"))?;
                    bytes = b;
                    if let Some(want) = expect.filter(|&want| want != crc) {
                        return Err(format!(
                            "{shown}: CRC-32 {crc:08x}, {TRANSFER_FILE} says {want:08x} (the file \
                             changed); its rows were rolled back"
                        ));
                    }
                    return Ok(false);
                }
                lineno += 1;
                rec.extend_from_slice(&line);
                let Some(fields) = fmt.decode(&rec) else {
                    continue;
                };
                rec.clear();
                if std::mem::take(&mut header) {
                    continue;
                }
                if fields.len() != ncols {
                    return Err(format!(
                        "{shown}, line {lineno}: {} fields, {table} takes {ncols}",
                        fields.len()
                    ));
                }
                load_data_row(&fields, chunk);
                rows += 1;
            }
            Ok(true)
        };
        sess.begin().map_err(|e| e.message)?;
        let took = sess.copy_in(&sql, &mut fill);
        let took = match took {
            Ok(n) if n == rows => sess.commit().map(|()| n).map_err(|e| e.message),
            Ok(n) => Err(format!(
                "{shown}: the server took {n} of its {rows} rows (LOAD DATA skips rows it cannot \
                 take, with a warning); its rows were rolled back"
            )),
            Err(e) => Err(e.message),
        };
        if took.is_err() {
            let _ = sess.rollback();
        }
        w.rows += took?;
        w.bytes += bytes;
        w.files.push(name.clone());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_data_rows_escape_what_load_data_reads_as_special() {
        let mut out = Vec::new();
        load_data_row(
            &[
                Some(b"a\tb\\c\nd\re\0".to_vec()),
                None,
                Some(Vec::new()),
                Some(b"N".to_vec()),
            ],
            &mut out,
        );
        assert_eq!(out, b"a\\tb\\\\c\\nd\\re\\0\t\\N\t\tN\n");
        assert_eq!(quoted("s.t"), "`s`.`t`");
    }
}
