//! A lineitem row as Q1 reads it, and the names of lineitem's fields.
//!
//! The vocabulary shared by the text parsers, the Parquet reader and the aggregation.

/// Names of lineitem's fields up to l_shipdate (0-based index), for error messages.
pub const FIELD_NAMES: [&str; 11] = [
    "l_orderkey",
    "l_partkey",
    "l_suppkey",
    "l_linenumber",
    "l_quantity",
    "l_extendedprice",
    "l_discount",
    "l_tax",
    "l_returnflag",
    "l_linestatus",
    "l_shipdate",
];

/// One lineitem row's values that Q1 needs, in hundredths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowValues {
    /// `l_returnflag` byte.
    pub flag: u8,
    /// `l_linestatus` byte.
    pub status: u8,
    /// `l_quantity` × 100.
    pub qty: i64,
    /// `l_extendedprice` × 100.
    pub price: i64,
    /// `l_discount` × 100.
    pub disc: i64,
    /// `l_tax` × 100.
    pub tax: i64,
}
