//! dbscope-lab: targets (SQLite, PostgreSQL, null), workloads, the runner and imports.

pub mod db;
pub mod error;
pub mod import;
pub mod mux;
pub mod observe;
pub mod pace;
pub mod runner;
pub mod transfer;
pub mod workload;

pub use error::Error;
