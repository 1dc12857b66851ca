//! The Q1 reference answer stored beside loaded data: its table and its exact values.
//!
//! `tpch load` stores the map/combine/reduce answer; the `tpch-q1` workload reads it back and
//! compares each row's ten values as exact integers.

use dbscope_tpch::decimal::div_round;
use dbscope_tpch::q1::Q1Row;

/// Table holding the map/combine/reduce Q1 answer of the loaded data.
pub const REFERENCE_TABLE: &str = "dbscope_tpch_q1_reference";

/// Scale of the averages in the encoded result (10¹²).
pub const AVG_SCALE: i128 = 1_000_000_000_000;

/// A row's ten values in the compared form (exact: averages rounded to 10⁻¹²).
pub fn reference_values(row: &Q1Row) -> [i128; 10] {
    let a = &row.agg;
    let avg = |sum: i128, scale: i128| div_round(sum * AVG_SCALE, scale * a.count.max(1) as i128);
    [
        row.returnflag as i128,
        row.linestatus as i128,
        a.sum_qty as i128,
        a.sum_base_price as i128,
        a.sum_disc_price,
        a.sum_charge,
        avg(a.sum_qty as i128, 100),
        avg(a.sum_base_price as i128, 100),
        avg(a.sum_disc as i128, 100),
        a.count as i128,
    ]
}
