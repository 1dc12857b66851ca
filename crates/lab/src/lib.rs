//! dbscope-lab: targets (SQLite, PostgreSQL, null), workloads, the runner and imports.

pub mod import;
pub mod io;
pub mod record;
pub mod runner;
pub mod target;
pub mod workload;
