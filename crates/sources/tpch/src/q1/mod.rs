//! TPC-H Query 1 as a parallel map/combine/reduce job over lineitem files, exact to the digit.
//!
//! Seed 000's Hadoop job, by hand: byte-range splits aligned to line starts, mappers that parse
//! fields 5–11 straight from bytes, an optional combiner (per-mapper sums and counts), a reducer
//! that merges, divides and sorts. Decimals are scaled integers, so the answer is exact.
//!
//! `split` resolves the input and cuts it into map tasks; `scan` reads one task's rows, which
//! `parse` parses and filters; `agg` holds the exact aggregates and the answer; `job` runs the
//! mappers and the reducer; `explain` prints the plan.

mod agg;
mod explain;
mod job;
mod parse;
mod scan;
mod split;
#[cfg(test)]
mod testdata;

pub use crate::error::Q1Error;
pub use crate::lineitem::RowValues;
pub use agg::{Agg, Groups, Q1Answer, Q1Row, COLUMNS};
pub use explain::explain;
pub use job::{
    run, run_splits, MapTiming, Q1Config, Q1Output, Q1Progress, Q1Timings, Span, CHANNEL_CAPACITY,
    DEFAULT_DELTA,
};
pub use parse::{cutoff, parse_line, DateCut};
pub use split::{plan_splits, resolve_inputs, Input, Split};
