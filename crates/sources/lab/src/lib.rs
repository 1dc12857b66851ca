//! dbscope-lab: the workloads (`dbscope run …`), the runner that drives their sessions against a
//! `dbscope-db` target, its open-loop pacing, and the database-side sampler (`observe`); the run
//! plan a front end builds (`plan`) and the sweep that varies one (`sweep`).

pub mod error;
pub mod explain;
pub mod observe;
pub mod pace;
pub mod plan;
pub mod runner;
pub mod sweep;
pub mod workload;

pub use error::Error;
