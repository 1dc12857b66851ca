//! dbscope-lab: targets (SQLite, PostgreSQL, null), workloads, the runner, reports and exports.

pub mod export;
pub mod report;
