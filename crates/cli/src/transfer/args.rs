//! Arguments of `dbscope transfer` (SQOOP-style bulk transfer, issue 15 part 3).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::parse::parse_delimiter;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TransferFormat {
    /// PostgreSQL's text format, `|` between columns (TPC-H's .tbl without the trailing `|`).
    Tbl,
    /// CSV (PostgreSQL's CSV format).
    Csv,
    /// Parquet: typed columns from the table's column types, NULLs kept (docs/transfer.md).
    Parquet,
}

/// In: what happens to the rows the table already holds (issue 34 item 12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TransferMode {
    /// The table must be empty (refused otherwise); the loaded table is verified whole.
    Empty,
    /// The rows are added to those there (COPY); verified by count and checksum before and after.
    Append,
    /// Rows whose key is in the table replace those rows, the others are inserted (a staging
    /// table, then INSERT … ON CONFLICT (--key) DO UPDATE); the rows with the files' keys are
    /// verified.
    Upsert,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TransferCompress {
    /// Not compressed.
    None,
    /// gzip: tbl/csv files as `part-NNNNN.EXT.gz`; Parquet's GZIP codec.
    Gzip,
    /// Zstandard: tbl/csv files as `part-NNNNN.EXT.zst`; Parquet's ZSTD codec.
    Zstd,
    /// Parquet's SNAPPY codec (Parquet only).
    Snappy,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  dbscope transfer --from postgres://bench@/bench/orders?host=/tmp --to out/orders --mappers 4
  dbscope transfer --from out/orders --to postgres://bench@/copy/orders?host=/tmp --mappers 4

Out: with more than one mapper and no --key, the table is split into --mappers ranges of physical
blocks (ctid >= '(a,0)' AND ctid < '(b,0)', last range open-ended): each mapper reads only its
blocks (a TID Range Scan, PostgreSQL 14+) and nothing scans the table to plan the split. With
--key COL (Sqoop's --split-by), or on PostgreSQL 13 and older (the primary key, with a note), it is
ranges of equal width between the key's min and max, read first by one full pass; without an index
on the key every mapper scans the whole table. One mapper copies the whole table. Each range is
copied by its own connection (COPY … TO STDOUT, one snapshot for all) into DIR/part-NNNNN.EXT,
written under a temporary name and renamed when complete; the split used is printed, recorded in
the run and in DIR/transfer.json; DIR/transfer.json records rows, the table's checksum and
each file's CRC-32. In: the files are spread over the mappers (COPY … FROM STDIN) into an empty
table (--mode append: one that holds rows; --mode upsert --key COL: through a staging table and
INSERT … ON CONFLICT, rows inserted and updated counted; a partitioned table: one loader per
partition), then its row count and checksum are checked against transfer.json. Each mapper's work is an
event of the run (--run); see docs/transfer.md.")]
pub struct TransferArgs {
    /// Source: postgres://…/DATABASE/TABLE (out) or a directory of files (in).
    #[arg(long, value_name = "URI|DIR")]
    pub from: String,
    /// Destination: a directory (out) or postgres://…/DATABASE/TABLE or sqlite:FILE/TABLE (in).
    #[arg(long, value_name = "DIR|URI")]
    pub to: String,
    /// File format.
    #[arg(long, value_enum, default_value = "tbl")]
    pub format: TransferFormat,
    /// Mappers: connections (and, out, files) working in parallel.
    #[arg(long, default_value_t = 4, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub mappers: u32,
    /// Out: split by ranges of this integer column (min/max/count read first) instead of by
    /// physical block ranges (ctid, the default with more than one mapper on PostgreSQL 14+).
    /// In with --mode upsert: the key rows are matched by, COL[,COL…], a primary key or unique
    /// index of the table (default: its primary key).
    #[arg(long, value_name = "COLUMN[,COLUMN…]")]
    pub key: Option<String>,
    /// In: `empty` (the table must be empty), `append` (add the rows) or `upsert` (replace the
    /// rows whose --key is there, insert the others); a partitioned table is loaded by one loader
    /// per partition. See docs/transfer.md.
    #[arg(long, value_enum, default_value = "empty")]
    pub mode: TransferMode,
    /// Column delimiter: one ASCII character or a C escape ('\t', '\x1f'). Default: `|` (tbl),
    /// `,` (csv).
    #[arg(long, value_name = "C", value_parser = parse_delimiter)]
    pub delimiter: Option<u8>,
    /// csv: a header line with the column names.
    #[arg(long)]
    pub header: bool,
    /// The NULL marker. Default: `\N` (tbl), an empty unquoted field (csv).
    #[arg(long, value_name = "TEXT")]
    pub null: Option<String>,
    /// Compression (out): of whole tbl/csv files, or Parquet's codec. In, compressed files are
    /// read by their extension (`.gz`, `.zst`) and Parquet's own metadata.
    #[arg(long, value_enum, default_value = "none")]
    pub compress: TransferCompress,
    /// What is verified end to end: `checksum` (row counts, file CRC-32s and the table's checksum:
    /// out, a hash of every row summed as the mappers stream; in, the loaded table read back once)
    /// or `count` (row counts and CRC-32s).
    #[arg(long, default_value = "checksum", value_parser = ["checksum", "count"])]
    pub verify: String,
    /// In: load the files of an export that did not finish (killed or failed: no transfer.json,
    /// a `.partial` file or its unfinished marker there), which is refused otherwise; the run
    /// then ends as failed, saying it loaded part of a table.
    #[arg(long)]
    pub allow_incomplete: bool,
    /// Do the transfer N times in this run (out: the files rewritten from the same snapshot;
    /// in: the table emptied first), each repetition's mappers and whole job (`transfer`) an
    /// event, so `compare` has samples to test.
    #[arg(long, default_value_t = 1, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub repeat: u32,
    /// Run directory for the mappers' events. Default: runs/<UTC timestamp>-transfer.
    #[arg(long, value_name = "DIR")]
    pub run: Option<PathBuf>,
    /// Print only the run directory.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}
