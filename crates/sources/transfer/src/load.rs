//! In: files into a table (empty, appended to, or upserted by a key), spread over the mappers, each
//! streaming its files through COPY … FROM STDIN with their CRC-32s checked (into a staging table
//! for an upsert or a partitioned table, then moved by `stage`'s loaders), then the table counted
//! and checksummed against `transfer.json`; an export that did not finish is refused.

use std::io::Read;
use std::path::Path;

use dbscope_core::RunClock;

use dbscope_pgwire::{WireConn, WireError};

use crate::config::{
    FileEntry, FileOptions, Format, LoadMode, MapperWork, TransferConfig, TransferManifest,
    TransferResult, TRANSFER_FILE, UNFINISHED_FILE,
};
use crate::error::{db, Error};
use crate::files::Compress;
use crate::files::Decoder;
use crate::pq::PqRows;
use crate::record::{begin, finish};
use crate::session::{checksum_sql, connect, one, row_hash, ROW_SUM_PREFIX, SESSION_SETTINGS};
#[cfg(feature = "sqlite")]
use crate::sqlite;
use crate::stage::{self, LoadWork, Target};

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
    #[cfg(not(feature = "sqlite"))]
    if cfg.table.conn.starts_with("sqlite:") {
        return Err(Error::Config(
            "a SQLite table: this build of dbscope-transfer has no `sqlite` feature".into(),
        ));
    }
    #[cfg(feature = "sqlite")]
    if sqlite::is_sqlite(&cfg.table.conn) {
        if unfinished.is_some() {
            return Err(Error::Config(
                "--allow-incomplete: not for a SQLite table (its load is one transaction)".into(),
            ));
        }
        let fopts = manifest.as_ref().map_or(&cfg.file, |m| &m.options);
        return sqlite::transfer_in_sqlite(cfg, &files, fopts, manifest.as_ref().map(|m| m.rows));
    }
    if crate::config::is_mysql(&cfg.table.conn) {
        #[cfg(feature = "mysql")]
        return crate::my::transfer_in_mysql(
            cfg,
            &files,
            manifest.as_ref().map_or(&cfg.file, |m| &m.options),
            manifest.as_ref(),
            unfinished.as_deref(),
        );
        #[cfg(not(feature = "mysql"))]
        return Err(Error::Config(
            "a MariaDB/MySQL table: this build of dbscope-transfer has no `mysql` feature".into(),
        ));
    }
    let spec = cfg.table.conn.as_str();
    let table = cfg.table.table.as_str();
    let mut coord = connect(spec, "dbscope/transfer").map_err(|e| Error::connect(spec, e))?;
    // What the table is (partitions) and an upsert's key: checked before anything moves.
    let target = stage::inspect(&mut coord, table, &cfg.mode)?;
    if cfg.mode == LoadMode::Empty {
        let has_rows = one(
            &mut coord,
            &format!("SELECT count(*) FROM (SELECT 1 FROM {table} LIMIT 1) x"),
        )
        .map_err(|e| Error::database(table, e))?;
        if has_rows.first().cloned().flatten().as_deref() != Some("0") {
            return Err(Error::Table(format!(
                "{table} is not empty: transfer loads into an empty table (so the row count and \
                 checksum can be verified); --mode append adds the rows to those there, --mode \
                 upsert --key COL replaces the rows whose key is in the files"
            )));
        }
    }
    // Upserts and partitioned tables go through a staging table the mappers fill, then loaders.
    let stage_name = match target.staged(&cfg.mode) {
        true => {
            let pid = one(&mut coord, "SELECT pg_backend_pid()")
                .map_err(|e| Error::database(table, e))?;
            Some(target.stage_name(pid.first().cloned().flatten().as_deref().unwrap_or("0")))
        }
        false => None,
    };

    let mut rec = begin(cfg, "transfer-in", spec, None)?;
    let clock = rec.start_clock()?;
    let n = (cfg.mappers as usize).min(files.len()).max(1);
    let parquet = cfg.file.format == Format::Parquet;
    // Read back with the options the files were written with, as the checksum was made.
    let checksum = (
        manifest.as_ref().and_then(|m| m.checksum.as_deref()),
        manifest.as_ref().map_or(&cfg.file, |m| &m.options),
    );
    // Each repetition loads the files again (into the table emptied first, not timed, in the
    // default mode), and is verified; a failed one ends the run.
    let mut reps: Vec<Vec<MapperWork>> = Vec::new();
    let mut load_reps: Vec<Vec<LoadWork>> = Vec::new();
    let mut detail = None;
    let mut before = None;
    for rep in 0..cfg.repeat.max(1) {
        if rep > 0 && cfg.mode == LoadMode::Empty {
            if let Err(e) = one(&mut coord, &format!("TRUNCATE {table}")) {
                detail = Some(db("TRUNCATE before the next repetition", &e));
                break;
            }
        }
        // Append: the table's count and checksum before, to verify what was added (not timed).
        if cfg.mode == LoadMode::Append {
            match measure(&mut coord, cfg, checksum, &files, table, parquet) {
                Ok(b) => before = Some(b),
                Err(e) => {
                    detail = Some(db("counting the table before the load", &e));
                    break;
                }
            }
        }
        if let Some(st) = &stage_name {
            let sql =
                format!("DROP TABLE IF EXISTS {st}; CREATE UNLOGGED TABLE {st} (LIKE {table})");
            if let Err(e) = one(&mut coord, &sql) {
                detail = Some(db("creating the staging table", &e));
                break;
            }
        }
        let into = stage_name.as_deref().unwrap_or(table);
        let works = load_once(cfg, &files, n, (into, &opts, parquet), &clock);
        detail = works.iter().find_map(|w| w.error.clone());
        let mut loads = Vec::new();
        if let (None, Some(st)) = (&detail, &stage_name) {
            loads = stage::load_stage(spec, &target, st, cfg.mappers as usize, &clock);
            detail = loads.iter().find_map(|w| w.error.clone());
            // Every staged row must land somewhere, with transfer.json or without.
            let staged: u64 = works.iter().map(|w| w.rows).sum();
            let moved: u64 = loads.iter().map(|w| w.inserted + w.updated).sum();
            if detail.is_none() && moved != staged {
                detail = Some(format!(
                    "the loaders moved {moved} of the {staged} rows the mappers staged (rows \
                     that fit no partition of {table}?)"
                ));
            }
        }
        if let (None, Some(m)) = (&detail, &manifest) {
            let v = Verify {
                target: &target,
                stage: stage_name.as_deref(),
                before: before.as_ref(),
            };
            detail = verify(&mut coord, cfg, m, &files, parquet, &v);
        }
        if let Some(st) = &stage_name {
            let _ = one(&mut coord, &format!("DROP TABLE IF EXISTS {st}"));
        }
        reps.push(works);
        load_reps.push(loads);
        if detail.is_some() {
            break;
        }
    }
    let works = reps.last().map_or(&[][..], |w| &w[..]);
    let loads = load_reps.last().map_or(&[][..], |w| &w[..]);
    let mapper_failed = works.iter().any(|w| w.error.is_some());
    match (&detail, &stage_name) {
        // Staged: a failed mapper leaves the table untouched.
        (Some(why), Some(_)) if mapper_failed => {
            detail = Some(format!(
                "{why}; nothing was loaded into {table}: the files go to a staging table first \
                 (now dropped)"
            ));
        }
        // A mapper failed: each file's COPY commits on its own, so what the others loaded stays
        // (issue 27 item 13: the run did not say the table now held part of the load).
        (Some(why), None) if mapper_failed => {
            let held: Option<u64> = one(&mut coord, &format!("SELECT count(*) FROM {table}"))
                .ok()
                .and_then(|r| r.first().cloned().flatten())
                .and_then(|n| n.parse().ok());
            let had = before.as_ref().map_or(0, |b| b.0);
            if let Some(n) = held.filter(|&n| n > had) {
                detail = Some(match cfg.mode {
                    LoadMode::Append => format!(
                        "{why}; {table} now holds {n} rows, {} more than before, from the files \
                         loaded before the failure (each file's COPY commits on its own): a \
                         partial load",
                        n - had
                    ),
                    _ => format!(
                        "{why}; {table} now holds {n} rows from the files loaded before the \
                         failure (each file's COPY commits on its own): a partial load, empty \
                         the table before loading again"
                    ),
                });
            }
        }
        // A loader failed: each partition's loader commits on its own.
        (Some(why), Some(_)) if loads.iter().any(|w| w.error.is_some()) => {
            let done: Vec<&str> = loads
                .iter()
                .filter(|w| w.error.is_none())
                .map(|w| w.into.as_str())
                .collect();
            detail = Some(match done.is_empty() {
                true => format!("{why}; nothing was loaded into {table}"),
                false => format!(
                    "{why}; {table} holds the rows loaded into {} (each partition's loader \
                     commits on its own) but not those of the failed loader: a partial load",
                    done.join(", ")
                ),
            });
        }
        _ => {}
    }
    if let (None, Some(signs)) = (&detail, &unfinished) {
        let rows: u64 = works.iter().map(|w| w.rows).sum();
        detail = Some(format!(
            "loaded {rows} rows from an export that did not finish ({signs}; --allow-incomplete): \
             part of the table, not verified"
        ));
    }
    let counts = match stage_name {
        Some(_) => (
            loads.iter().map(|w| w.inserted).sum(),
            loads.iter().map(|w| w.updated).sum(),
        ),
        None => (works.iter().map(|w| w.rows).sum(), 0),
    };
    finish(
        rec,
        &clock,
        "copy-in",
        (&reps, &load_reps),
        detail,
        None,
        Some(counts),
    )
}

/// One load of the files: a mapper per share of them.
fn load_once(
    cfg: &TransferConfig,
    files: &[(String, Option<FileEntry>)],
    n: usize,
    (table, opts, parquet): (&str, &str, bool),
    clock: &RunClock,
) -> Vec<MapperWork> {
    let spec = cfg.table.conn.as_str();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let mine: Vec<&(String, Option<FileEntry>)> =
                    files.iter().skip(i).step_by(n).collect();
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
    })
}

/// What a load is verified against besides `transfer.json`.
struct Verify<'a> {
    target: &'a Target,
    /// The staging table, still there (an upsert's keys).
    stage: Option<&'a str>,
    /// Append: the table's rows and checksum before the load.
    before: Option<&'a (u64, Option<String>)>,
}

/// Rows and checksum (as `transfer.json` writes it; `None` with `--verify count`) of `source`, a
/// table or a parenthesised query, read the way `checksum` (the manifest's) was made: with the
/// files' options `opts`.
fn measure(
    coord: &mut WireConn,
    cfg: &TransferConfig,
    (checksum, opts): (Option<&str>, &FileOptions),
    files: &[(String, Option<FileEntry>)],
    source: &str,
    parquet: bool,
) -> Result<(u64, Option<String>), WireError> {
    match (checksum, cfg.checksum) {
        (Some(want), true) if want.starts_with(ROW_SUM_PREFIX) => {
            // Parquet files name their columns: read them back in that order.
            let cols = match parquet {
                true => PqRows::open(&cfg.dir.join(&files[0].0))
                    .map(|r| r.column_list())
                    .map(|l| l[1..l.len() - 1].to_string())
                    .map_err(|e| WireError::Protocol(e.to_string())),
                false => Ok("*".to_string()),
            };
            cols.and_then(|cols| table_row_sum(coord, source, &cols, opts))
                .map(|(rows, sum)| (rows, Some(format!("{ROW_SUM_PREFIX}{sum:016x}"))))
        }
        (sum, verify) => {
            let sql = match (sum, verify) {
                (Some(_), true) => checksum_sql(source),
                _ => format!("SELECT count(*), NULL FROM {source} AS dbscope_src"),
            };
            one(coord, &sql).map(|r| {
                let rows = r
                    .first()
                    .cloned()
                    .flatten()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                (rows, r.get(1).cloned().flatten())
            })
        }
    }
}

/// `after − before` of two checksums of one kind (sums, so what a load added is their
/// difference): XXH3 sums modulo 2⁶⁴, the server's numeric sums exactly.
fn sum_minus(after: &str, before: &str) -> Option<String> {
    match (
        after.strip_prefix(ROW_SUM_PREFIX),
        before.strip_prefix(ROW_SUM_PREFIX),
    ) {
        (Some(a), Some(b)) => {
            let a = u64::from_str_radix(a, 16).ok()?;
            let b = u64::from_str_radix(b, 16).ok()?;
            Some(format!("{ROW_SUM_PREFIX}{:016x}", a.wrapping_sub(b)))
        }
        (None, None) => {
            let a: i128 = after.parse().ok()?;
            let b: i128 = before.parse().ok()?;
            Some((a - b).to_string())
        }
        _ => None,
    }
}

/// The loaded table against `transfer.json`: the whole table (default mode), what was added to
/// it (append: after minus before), or its rows with the files' keys (upsert); their row count,
/// and their checksum when asked. `Some(why)` when it does not match.
fn verify(
    coord: &mut WireConn,
    cfg: &TransferConfig,
    m: &TransferManifest,
    files: &[(String, Option<FileEntry>)],
    parquet: bool,
    v: &Verify<'_>,
) -> Option<String> {
    let table = v.target.table.as_str();
    let (source, what) = match (&cfg.mode, v.stage) {
        (LoadMode::Upsert(_), Some(st)) => (
            v.target.keyed_rows(st),
            format!("{table}'s rows with the files' keys"),
        ),
        _ => (table.to_string(), table.to_string()),
    };
    let counted = measure(
        coord,
        cfg,
        (m.checksum.as_deref(), &m.options),
        files,
        &source,
        parquet,
    );
    let (rows, sum) = match counted {
        Err(e) => return Some(db("table checksum", &e)),
        Ok(c) => c,
    };
    let (rows, sum, what) = match v.before {
        Some((r0, s0)) if cfg.mode == LoadMode::Append => {
            if rows < *r0 || rows - r0 != m.rows {
                return Some(format!(
                    "{table} holds {rows} rows after the load and held {r0} before; {} were \
                     transferred out",
                    m.rows
                ));
            }
            let sum = match (&sum, s0) {
                (Some(a), Some(b)) => sum_minus(a, b),
                _ => None,
            };
            (rows - r0, sum, format!("the rows added to {table}"))
        }
        _ => (rows, sum, what),
    };
    if rows != m.rows {
        Some(format!(
            "{what}: {rows} rows after the load; {} were transferred out",
            m.rows
        ))
    } else if let (Some(sum), Some(want)) = (&sum, &m.checksum) {
        (sum != want).then(|| {
            format!(
                "{what}: checksum {sum} differs from the source's {want} (same row count {rows})"
            )
        })
    } else {
        None
    }
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
            "COPY (SELECT {cols} FROM {table} AS dbscope_src) TO STDOUT {}",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_subtract_as_they_add() {
        let a = format!("{ROW_SUM_PREFIX}{:016x}", 5u64);
        let b = format!("{ROW_SUM_PREFIX}{:016x}", u64::MAX - 2);
        // 5 − (2⁶⁴ − 3) ≡ 8 modulo 2⁶⁴: the sum wrapped during the load.
        assert_eq!(
            sum_minus(&a, &b).as_deref(),
            Some(format!("{ROW_SUM_PREFIX}{:016x}", 8u64).as_str())
        );
        assert_eq!(sum_minus("-10", "25").as_deref(), Some("-35"));
        assert_eq!(sum_minus(&a, "25"), None);
        assert_eq!(sum_minus("xxh3-sum:zz", &b), None);
    }
}
