//! What to do: built-in workloads as seeded, deterministic generators of operations.

pub mod bulkload;
mod commit;
pub mod events;
pub mod keys;
pub mod lookup;
pub mod place;
pub mod restart;
pub mod scan;
pub mod script;
pub mod tpcc;
pub mod tpch;
mod work;

pub use commit::{CommitWorkload, Keys};
pub use work::{check_identifier, SessionWork, Statement, Workload};
