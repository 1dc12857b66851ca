//! dbscope-lab: targets (SQLite, PostgreSQL, null), workloads, the runner, reports and exports.

pub mod export;
pub mod record;
pub mod report;
pub mod runner;
pub mod target;
pub mod workload;
