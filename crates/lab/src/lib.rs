//! dbscope-lab: targets (SQLite, PostgreSQL, null), workloads, the runner, reports and exports.

pub mod compare;
pub mod counters;
pub mod export;
pub mod html;
pub mod import;
pub mod io;
pub mod record;
pub mod report;
pub mod runner;
pub mod target;
pub mod text;
pub mod top;
pub mod workload;
