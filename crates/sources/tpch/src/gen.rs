//! TPC-H data generation with the `tpchgen` crate (its TBL output is identical to dbgen's): every
//! table in parallel parts, as `.tbl` (dbgen's `|`-terminated lines) or CSV with a header line.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use tpchgen::csv::{
    CustomerCsv, LineItemCsv, NationCsv, OrderCsv, PartCsv, PartSuppCsv, RegionCsv, SupplierCsv,
};
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};

pub use crate::error::{GenConfigError, GenError};

/// The eight TPC-H tables.
pub const TABLES: [&str; 8] = [
    "lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region",
];

/// Output format of `tpch gen`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenFormat {
    /// dbgen's format: `|`-separated fields, each line ending in `|`.
    Tbl,
    /// CSV with a header line; comments quoted.
    Csv,
    /// Apache Parquet (Snappy), lineitem only: decimals as INT64 DECIMAL(15,2), dates as DATE.
    Parquet,
}

impl GenFormat {
    /// File extension.
    pub fn extension(&self) -> &'static str {
        match self {
            GenFormat::Tbl => "tbl",
            GenFormat::Csv => "csv",
            GenFormat::Parquet => "parquet",
        }
    }
}

/// What to generate.
#[derive(Clone, Debug)]
pub struct GenConfig {
    /// Scale factor (1 = about 1 GB, 6,001,215 lineitem rows).
    pub scale_factor: f64,
    /// Tables to write (names from [`TABLES`]).
    pub tables: Vec<String>,
    /// Output format.
    pub format: GenFormat,
    /// Parts per table (files `TABLE.K.EXT`, K from 1; one part writes `TABLE.EXT`).
    pub parts: u32,
    /// Output directory (created).
    pub out: PathBuf,
    /// Worker threads.
    pub threads: usize,
    /// Rows per Parquet row group (Parquet's unit of splitting for `tpch q1`).
    pub row_group_rows: usize,
}

/// Progress shared with a display.
#[derive(Debug, Default)]
pub struct GenProgress {
    /// Rows written so far.
    pub rows: AtomicU64,
    /// Rows expected in total (lineitem estimated at 4 per order).
    pub rows_expected: AtomicU64,
}

/// A file written.
#[derive(Clone, Debug)]
pub struct GenFile {
    /// Table.
    pub table: String,
    /// Part number, from 1.
    pub part: u32,
    /// Path.
    pub path: PathBuf,
    /// Rows.
    pub rows: u64,
}

/// Checks the configuration: known tables, a positive scale factor, at least one part.
pub fn validate(config: &GenConfig) -> Result<(), GenError> {
    let sf = config.scale_factor;
    if sf.is_nan() || sf <= 0.0 || sf > 100_000.0 {
        return Err(GenConfigError::ScaleFactor {
            scale_factor: config.scale_factor,
        }
        .into());
    }
    if config.parts == 0 {
        return Err(GenConfigError::NoParts.into());
    }
    if config.format == GenFormat::Parquet && config.tables.iter().any(|t| t != "lineitem") {
        return Err(GenConfigError::ParquetNotLineitem.into());
    }
    for t in &config.tables {
        if !TABLES.contains(&t.as_str()) {
            return Err(GenConfigError::UnknownTable {
                table: t.clone(),
                known: &TABLES,
            }
            .into());
        }
    }
    Ok(())
}

/// Path of one part's file.
pub fn part_path(dir: &Path, table: &str, part: u32, parts: u32, format: GenFormat) -> PathBuf {
    if parts == 1 {
        dir.join(format!("{table}.{}", format.extension()))
    } else {
        dir.join(format!("{table}.{part}.{}", format.extension()))
    }
}

fn expected_rows(table: &str, sf: f64, part: i32, parts: i32) -> u64 {
    let n = match table {
        "lineitem" => OrderGenerator::calculate_row_count(sf, part, parts) * 4,
        "orders" => OrderGenerator::calculate_row_count(sf, part, parts),
        "customer" => CustomerGenerator::calculate_row_count(sf, part, parts),
        "part" => PartGenerator::calculate_row_count(sf, part, parts),
        "partsupp" => PartSuppGenerator::calculate_row_count(sf, part, parts),
        "supplier" => SupplierGenerator::calculate_row_count(sf, part, parts),
        "nation" => 25,
        _ => 5,
    };
    n.max(0) as u64
}

/// Generates the tables in parallel (one task per table part); returns the files written in order.
pub fn generate(config: &GenConfig, progress: &GenProgress) -> Result<Vec<GenFile>, GenError> {
    validate(config)?;
    std::fs::create_dir_all(&config.out).map_err(|e| GenError::Io {
        path: config.out.clone(),
        source: e,
    })?;
    let mut tasks = Vec::new();
    for t in &config.tables {
        // nation and region are tiny and fixed: dbgen writes them whole, once.
        let parts = if t == "nation" || t == "region" {
            1
        } else {
            config.parts
        };
        for p in 1..=parts {
            tasks.push((t.clone(), p, parts));
        }
    }
    let total: u64 = tasks
        .iter()
        .map(|(t, p, n)| expected_rows(t, config.scale_factor, *p as i32, *n as i32))
        .sum();
    progress.rows_expected.store(total, Ordering::Relaxed);
    let next = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let results: Mutex<Vec<Result<GenFile, GenError>>> = Mutex::new(Vec::new());
    // Several parts: one thread per part file. One part: files one after another, each generated
    // in parallel chunks (see `write_part`).
    let outer = if config.parts > 1 {
        config.threads.max(1)
    } else {
        1
    };
    std::thread::scope(|scope| {
        for _ in 0..outer {
            scope.spawn(|| loop {
                if failed.load(Ordering::Relaxed) {
                    return;
                }
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                let Some((table, part, parts)) = tasks.get(i) else {
                    return;
                };
                let path = part_path(&config.out, table, *part, *parts, config.format);
                let r =
                    write_part(config, table, *part, *parts, &path, &progress.rows).map(|rows| {
                        GenFile {
                            table: table.clone(),
                            part: *part,
                            path: path.clone(),
                            rows,
                        }
                    });
                if r.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                results
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(r);
            });
        }
    });
    let mut files = Vec::new();
    for r in results.into_inner().unwrap_or_else(PoisonError::into_inner) {
        files.push(r?);
    }
    files.sort_by(|a, b| (&a.table, a.part).cmp(&(&b.table, b.part)));
    Ok(files)
}

/// Bytes a text chunk aims at when one file is generated in parallel chunks (small in unit tests,
/// so that they exercise chunking).
#[cfg(not(test))]
const CHUNK_BYTES: u64 = 32 << 20;
#[cfg(test)]
const CHUNK_BYTES: u64 = 64 << 10;

fn write_part(
    config: &GenConfig,
    table: &str,
    part: u32,
    parts: u32,
    path: &Path,
    rows_done: &AtomicU64,
) -> Result<u64, GenError> {
    let io = |e: std::io::Error| GenError::Io {
        path: path.to_owned(),
        source: e,
    };
    if config.format == GenFormat::Parquet {
        return crate::parquet_io::write_lineitem(
            path,
            config.scale_factor,
            part as i32,
            parts as i32,
            config.row_group_rows,
            rows_done,
        )
        .map_err(|source| GenError::Parquet {
            path: path.to_owned(),
            source,
        });
    }
    let file = File::create(path).map_err(io)?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let (sf, p, n) = (config.scale_factor, part as i32, parts as i32);
    // A whole table (one part) is cut into chunks generated in parallel and written in order: the
    // chunks of tpchgen's part numbering concatenate to the whole table, byte for byte (tested).
    // A part of several is generated whole (chunk boundaries would not line up with part ones).
    let chunks = if parts == 1 && config.threads > 1 && table != "nation" && table != "region" {
        (expected_rows(table, sf, 1, 1) * 130 / CHUNK_BYTES).clamp(1, 4096) as i32
    } else {
        1
    };
    if chunks == 1 {
        let rows = render(&mut w, config, table, p, n, true, rows_done).map_err(io)?;
        w.flush().map_err(io)?;
        return Ok(rows);
    }
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    type Chunk = Result<(Vec<u8>, u64), std::io::Error>;
    let (tx, rx) = std::sync::mpsc::sync_channel::<(i32, Chunk)>(config.threads);
    let mut rows = 0u64;
    let mut outcome: Result<(), GenError> = Ok(());
    std::thread::scope(|scope| {
        for _ in 0..config.threads {
            let tx = tx.clone();
            let (next, stop) = (&next, &stop);
            scope.spawn(move || loop {
                let k = next.fetch_add(1, Ordering::Relaxed) as i32;
                if k >= chunks || stop.load(Ordering::Relaxed) {
                    return;
                }
                let mut buf = Vec::with_capacity((CHUNK_BYTES + CHUNK_BYTES / 8) as usize);
                let r = render(&mut buf, config, table, k + 1, chunks, k == 0, rows_done)
                    .map(|rows| (buf, rows));
                if tx.send((k, r)).is_err() {
                    return;
                }
            });
        }
        drop(tx);
        // Chunks arrive in any order; write them in order.
        let mut pending = std::collections::BTreeMap::new();
        let mut want = 0;
        for (k, r) in rx {
            pending.insert(k, r);
            while let Some(r) = pending.remove(&want) {
                want += 1;
                if outcome.is_err() {
                    continue;
                }
                outcome = r
                    .and_then(|(buf, n)| {
                        rows += n;
                        w.write_all(&buf)
                    })
                    .map_err(io);
                if outcome.is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
            }
        }
    });
    outcome?;
    w.flush().map_err(io)?;
    Ok(rows)
}

/// Writes part `p` of `n` of a table to `w` as TBL (`Display`) or CSV (the crate's formatter, with
/// the header line when `header`); returns the rows written.
fn render(
    w: &mut impl Write,
    config: &GenConfig,
    table: &str,
    p: i32,
    n: i32,
    header: bool,
    rows_done: &AtomicU64,
) -> std::io::Result<u64> {
    let sf = config.scale_factor;
    let csv = config.format == GenFormat::Csv;
    let mut rows = 0u64;
    macro_rules! emit {
        ($gen:expr, $csv:ident) => {{
            if csv && header {
                writeln!(w, "{}", $csv::header())?;
            }
            for row in $gen.iter() {
                if csv {
                    writeln!(w, "{}", $csv::new(row))?;
                } else {
                    writeln!(w, "{row}")?;
                }
                rows += 1;
                if rows % 8192 == 0 {
                    rows_done.fetch_add(8192, Ordering::Relaxed);
                }
            }
        }};
    }
    match table {
        "lineitem" => emit!(LineItemGenerator::new(sf, p, n), LineItemCsv),
        "orders" => emit!(OrderGenerator::new(sf, p, n), OrderCsv),
        "customer" => emit!(CustomerGenerator::new(sf, p, n), CustomerCsv),
        "part" => emit!(PartGenerator::new(sf, p, n), PartCsv),
        "partsupp" => emit!(PartSuppGenerator::new(sf, p, n), PartSuppCsv),
        "supplier" => emit!(SupplierGenerator::new(sf, p, n), SupplierCsv),
        "nation" => emit!(NationGenerator::new(sf, p, n), NationCsv),
        "region" => emit!(RegionGenerator::new(sf, p, n), RegionCsv),
        other => {
            return Err(std::io::Error::other(format!("unknown table {other:?}")));
        }
    }
    rows_done.fetch_add(rows % 8192, Ordering::Relaxed);
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path, parts: u32, format: GenFormat) -> GenConfig {
        GenConfig {
            scale_factor: 0.001,
            tables: vec!["lineitem".into(), "nation".into()],
            format,
            parts,
            out: dir.to_owned(),
            threads: 2,
            row_group_rows: 1000,
        }
    }

    #[test]
    fn parts_concatenate_to_the_whole() {
        let d = tempfile::tempdir().unwrap();
        let one = d.path().join("one");
        let three = d.path().join("three");
        let p = GenProgress::default();
        let files = generate(&config(&one, 1, GenFormat::Tbl), &p).unwrap();
        assert_eq!(files.len(), 2);
        let whole = std::fs::read(one.join("lineitem.tbl")).unwrap();
        // dbgen's layout: 16 fields, each followed by '|'.
        let first = whole.split(|b| *b == b'\n').next().unwrap();
        assert_eq!(first.iter().filter(|b| **b == b'|').count(), 16);
        assert!(first.starts_with(b"1|") && first.ends_with(b"|"));
        assert_eq!(
            p.rows.load(Ordering::Relaxed),
            files.iter().map(|f| f.rows).sum::<u64>()
        );
        let files = generate(&config(&three, 3, GenFormat::Tbl), &p).unwrap();
        assert_eq!(files.len(), 4, "nation is written once");
        let mut joined = Vec::new();
        for k in 1..=3 {
            joined.extend(std::fs::read(three.join(format!("lineitem.{k}.tbl"))).unwrap());
        }
        assert_eq!(joined, whole);
        assert_eq!(
            std::fs::read(three.join("nation.tbl")).unwrap(),
            std::fs::read(one.join("nation.tbl")).unwrap()
        );
    }

    #[test]
    fn csv_in_chunks_has_one_header() {
        let d = tempfile::tempdir().unwrap();
        let c = config(d.path(), 1, GenFormat::Csv);
        generate(&c, &GenProgress::default()).unwrap();
        let text = std::fs::read_to_string(d.path().join("lineitem.csv")).unwrap();
        assert_eq!(text.matches("l_orderkey,").count(), 1);
        let tbl = tempfile::tempdir().unwrap();
        generate(
            &config(tbl.path(), 1, GenFormat::Tbl),
            &GenProgress::default(),
        )
        .unwrap();
        let lines = std::fs::read_to_string(tbl.path().join("lineitem.tbl")).unwrap();
        assert_eq!(text.lines().count(), lines.lines().count() + 1);
        let first: Vec<&str> = lines.lines().next().unwrap().split('|').take(11).collect();
        let csv1: Vec<&str> = text.lines().nth(1).unwrap().split(',').take(11).collect();
        assert_eq!(first, csv1);
    }

    #[test]
    fn csv_has_a_header() {
        let d = tempfile::tempdir().unwrap();
        generate(
            &config(d.path(), 1, GenFormat::Csv),
            &GenProgress::default(),
        )
        .unwrap();
        let text = std::fs::read_to_string(d.path().join("nation.csv")).unwrap();
        assert!(text.starts_with("n_nationkey,n_name,n_regionkey,n_comment\n0,ALGERIA,0,"));
        assert_eq!(text.lines().count(), 26);
    }

    #[test]
    fn bad_config_is_rejected() {
        let d = tempfile::tempdir().unwrap();
        let mut c = config(d.path(), 1, GenFormat::Tbl);
        c.tables = vec!["lineitems".into()];
        assert!(generate(&c, &GenProgress::default())
            .unwrap_err()
            .to_string()
            .contains("unknown table \"lineitems\""));
        c.tables = vec!["nation".into()];
        c.scale_factor = 0.0;
        assert!(validate(&c).is_err());
        c.scale_factor = 1.0;
        c.parts = 0;
        assert!(validate(&c).is_err());
    }
}
