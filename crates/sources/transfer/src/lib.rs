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

//!
//! Modules: `config` (what a transfer is given, what it returns, `transfer.json`), `out` and
//! `load` (the two directions), `split` (how a table is cut among the mappers), `files` and `pq`
//! (tbl/csv with their codecs, and Parquet), `session` (what every connection shares), `record`
//! (the run), `stage` (the target's partitions and key, the staging table and its loaders),
//! `error`.

mod config;
mod error;
#[cfg(any(feature = "sqlite", feature = "mysql"))]
mod fields;
mod files;
mod load;
#[cfg(feature = "mysql")]
mod my;
mod out;
mod pq;
mod record;
mod sealing;
mod session;
mod split;
#[cfg(feature = "sqlite")]
mod sqlite;
mod stage;

pub use config::*;
pub use error::Error;
pub use files::Compress;
pub use load::transfer_in;
pub use out::transfer_out;
// The hub (dbscope-hub) reads PostgreSQL tables by the same block ranges.
pub use split::{
    ctid_filter, ctid_ranges, no_ctid_split, plan as split_plan, split_ranges, Part, Plan,
    SplitKind,
};
