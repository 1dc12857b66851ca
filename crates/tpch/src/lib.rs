//! dbscope-tpch: TPC-H data generation (tpchgen, identical to dbgen), Query 1 as a parallel
//! map/combine/reduce job with exact decimal arithmetic, loading the tables into a target, and the
//! `tpch-q1` workload that runs Query 1 in SQL and checks its rows.

pub mod answer;
pub mod decimal;
pub mod error;
pub mod gen;
pub mod lineitem;
pub mod load;
mod mapped;
pub mod parquet_io;
pub mod q1;
pub mod record;
pub mod reference;
mod simd;
pub mod workload;
