//! The lab's glue for TPC-C (`dbscope-tpcc` says what to send): building the nine tables on a
//! target ([`build`]), reusing a build whose recorded shape matches, and the consistency checks
//! of clause 3.3.2 on a target ([`check`]).

mod build;

pub use build::{build, check, BuildOptions, Built};
