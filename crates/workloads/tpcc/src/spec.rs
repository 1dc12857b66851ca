//! The specification's sizes and the options' errors: a leaf every other module uses.

/// Items in the ITEM table, and stock rows per warehouse (clause 1.2).
pub const ITEMS: i64 = 100_000;
/// Districts per warehouse.
pub const DISTRICTS: i64 = 10;
/// Customers per district.
pub const CUSTOMERS: i64 = 3_000;
/// Orders per district in the initial population.
pub const ORDERS: i64 = 3_000;

/// Bad input to the workload's options.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    #[error("--warehouses {0}: expected a whole number of at least 1")]
    Warehouses(i64),
    #[error("--mix {given:?}: {why}")]
    Mix { given: String, why: String },
}

/// `--warehouses W` checked: at least one.
pub fn warehouses(w: i64) -> Result<i64, Error> {
    if w >= 1 {
        Ok(w)
    } else {
        Err(Error::Warehouses(w))
    }
}
