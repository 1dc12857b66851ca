//! dbscope-hub: the data hub of seed 001 — one SQL query across a database and files, planned and
//! run by Apache DataFusion, every source's part timed and recorded as a run (issue 32).
//!
//! Sources ([`source`]): PostgreSQL tables (`postgres://…`: one table, listed tables or every table
//! of a schema), SQLite databases (`sqlite:PATH`), Parquet, CSV and TPC-H `.tbl` files or
//! directories (`file:PATH`) and dbscope runs (`run:DIR`, the events with the export's columns).
//!
//! A PostgreSQL table is a DataFusion table provider ([`pg`]) that pushes the projection, the
//! filters it can say exactly in PostgreSQL's SQL ([`pushdown`]) and a LIMIT down, and reads with
//! N parallel `COPY (SELECT … WHERE ctid range AND filters) TO STDOUT` connections (transfer's
//! block ranges) under one `pg_export_snapshot()`. The query ([`query`]) is recorded as a run
//! ([`record`]): one event per scan partition, the query's phases, the output.
//!
//! DataFusion takes minutes to compile, so this crate is behind the `dbscope` binary's `hub`
//! feature (which `cluster` turns on).

mod cheap_first;
mod config;
pub mod dataflow;
mod dynamic;
pub mod error;
mod files;
mod my;
mod oneread;
mod output;
mod pg;
mod pgbinary;
pub mod pushdown;
pub mod query;
mod record;
mod scanlog;
pub mod source;
mod sqlite;
mod stage;

pub use dataflow::{parse_plan, Dataflow};
pub use error::Error;
pub use query::{run_query, Engine, QueryConfig, QueryResult, ScanSummary};
pub use source::{parse_source, read_sources_file, SourceSpec};
