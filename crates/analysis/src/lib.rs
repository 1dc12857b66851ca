//! dbscope-analysis: the consumers of runs — reports (text, JSON, HTML with SVG plots), `compare A B`,
//! the N slowest events, and CSV/Parquet exports.
//!
//! It reads runs only through `dbscope-core` (the run format, run-level counters, statistics) and
//! knows nothing of the sources that wrote them (workloads, the redo writer, trace imports).

pub mod compare;
pub mod counters;
pub mod export;
pub mod html;
pub mod observe;
pub mod openloop;
pub mod pgbench;
pub mod plans;
pub mod report;
pub mod summary;
pub mod sweep;
pub mod text;
pub mod top;
pub mod tpcc;
pub mod usl;
