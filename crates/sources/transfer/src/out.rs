//! Out: a table to files, one mapper (connection, COPY … TO STDOUT) per block or key range, in the
//! coordinator's exported snapshot, each file written under a temporary name and renamed when whole.

use std::io::{BufWriter, Write};
use std::path::Path;

use dbscope_core::RunClock;

use dbscope_pgwire::WireError;

use crate::config::{Format, MapperWork, TransferConfig, TransferResult};
use crate::error::{db, Error};
use crate::files::Compress;
use crate::files::{Counted, Encoder};
use crate::pq::{self, PqColumn, PqWriter};
use crate::record::{begin, finish};
use crate::sealing::{mark_unfinished, seal};
use crate::session::{connect, one, row_hash, SESSION_SETTINGS};
use crate::split;

type FileOut = BufWriter<std::fs::File>;

/// The table to files: one file per mapper, `transfer.json` beside them.
pub fn transfer_out(cfg: &TransferConfig) -> Result<TransferResult, Error> {
    cfg.file.validate()?;
    if cfg.mappers == 0 {
        return Err(Error::Config("--mappers must be at least 1".into()));
    }
    if cfg.table.conn.starts_with("sqlite:") {
        return Err(Error::Config(
            "transfer out reads PostgreSQL tables; a SQLite table can only be loaded into".into(),
        ));
    }
    if crate::config::is_mysql(&cfg.table.conn) {
        #[cfg(feature = "mysql")]
        return crate::my::transfer_out_mysql(cfg);
        #[cfg(not(feature = "mysql"))]
        return Err(Error::Config(
            "a MariaDB/MySQL table: this build of dbscope-transfer has no `mysql` feature".into(),
        ));
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
    mark_unfinished(cfg, table)?;

    let mut rec = begin(cfg, "transfer-out", spec, Some(plan.kind))?;
    let clock = rec.start_clock()?;
    let opts = cfg.file.copy_options();
    // Each repetition copies the same snapshot again into the same files; a failed one ends it.
    let mut reps: Vec<Vec<MapperWork>> = Vec::new();
    for _ in 0..cfg.repeat.max(1) {
        let works = copy_out_once(cfg, &plan, columns.as_deref(), &snapshot, &clock, &opts);
        let failed = works.iter().any(|w| w.error.is_some());
        reps.push(works);
        if failed {
            break;
        }
    }
    let _ = one(&mut coord, "COMMIT");
    let detail = seal(
        cfg,
        table,
        &plan,
        reps.last().expect("at least one repetition"),
    )?;
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

/// One copy of the table: a mapper per part, each writing its file.
fn copy_out_once(
    cfg: &TransferConfig,
    plan: &split::Plan,
    columns: Option<&[PqColumn]>,
    snapshot: &str,
    clock: &RunClock,
    opts: &str,
) -> Vec<MapperWork> {
    let spec = cfg.table.conn.as_str();
    let table = cfg.table.table.as_str();
    std::thread::scope(|s| {
        let handles: Vec<_> = plan
            .parts
            .iter()
            .enumerate()
            .map(|(i, part)| {
                let name = cfg.file.part_file(i);
                let path = cfg.dir.join(&name);
                s.spawn(move || {
                    let sql = format!("COPY ({}) TO STDOUT {opts}", part.select_all(table));
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
        handles
            .into_iter()
            .map(|h| h.join().expect("mapper thread"))
            .collect()
    })
}

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
