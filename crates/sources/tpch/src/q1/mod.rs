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

/// Q1's official text (TPC-H specification 2.4.1) with `cutoff`, an SQL expression for
/// `date '1998-12-01' - interval 'DELTA' day` in the engine's dialect, as the shipdate bound.
pub fn sql_with_cutoff(cutoff: &str) -> String {
    format!(
        "select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty, \
         sum(l_extendedprice) as sum_base_price, \
         sum(l_extendedprice * (1 - l_discount)) as sum_disc_price, \
         sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, \
         avg(l_quantity) as avg_qty, avg(l_extendedprice) as avg_price, \
         avg(l_discount) as avg_disc, count(*) as count_order \
         from lineitem where l_shipdate <= {cutoff} \
         group by l_returnflag, l_linestatus order by l_returnflag, l_linestatus"
    )
}
pub use explain::explain;
pub use job::{
    run, run_splits, MapTiming, Q1Config, Q1Output, Q1Progress, Q1Timings, Q1Work, Span,
    CHANNEL_CAPACITY, DEFAULT_DELTA,
};
pub use parse::{cutoff, parse_line, DateCut};
pub use split::{plan_splits, resolve_inputs, Input, Split};
