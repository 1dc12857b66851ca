//! dbscope-lab: targets (SQLite, PostgreSQL, null), workloads, the runner, reports and exports.

pub mod compare;
pub mod db;
pub mod error;
pub mod export;
pub mod html;
pub mod import;
pub mod report;
pub mod runner;
pub mod top;
pub mod workload;

pub use error::Error;
