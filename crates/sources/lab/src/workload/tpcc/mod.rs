//! The lab's TPC-C (`dbscope-tpcc` says what to send): building the nine tables on a target
//! ([`build`]), reusing a build whose recorded shape matches ([`inspect`]), the build recorded as
//! a run of its own ([`build_recorded`]), the `tpcc` workload with its five transactions
//! ([`TpccWorkload`]), and the consistency checks of clause 3.3.2 on a target ([`check`]).

mod build;
mod build_run;
mod server;
mod session;
mod tally;
mod txn;
mod workload;

pub use build::{build, build_timed, check, inspect, BuildOptions, BuildStep, Built, Shape};
pub use build_run::{build_recorded, BuildRun};
pub use workload::{refuse_target, TpccConfig, TpccWorkload};
