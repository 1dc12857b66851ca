//! dbscope-tpch: TPC-H data generation (tpchgen, identical to dbgen), and Query 1 as a parallel
//! map/combine/reduce job with exact decimal arithmetic and the official answer check — over files,
//! with no database client (loading the tables and the `tpch-q1` workload live in dbscope-lab's
//! `workload::tpch`).

pub mod answer;
mod cpu;
pub mod decimal;
pub mod error;
pub mod gen;
pub mod lineitem;
pub mod parquet_io;
pub mod q1;
pub mod record;
mod simd;
