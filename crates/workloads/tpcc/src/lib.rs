//! TPC-C as HammerDB's TPROC-C runs it, without database I/O: the nine tables ([`schema`]), the
//! initial population of clause 4.3.3.1 ([`populate`]), the specification's random functions
//! (NURand with its C constants, a-strings, last names: [`random`]), the transaction mix
//! ([`mix`]) and the consistency conditions of clause 3.3.2 as SQL ([`check`]).
//!
//! The lab's `tpcc` workload drives a database with these; this crate only says what to send.

pub mod check;
pub mod mix;
pub mod populate;
pub mod random;
pub mod schema;
pub mod spec;

pub use check::{Condition, Violation, CONDITIONS};
pub use mix::{Mix, TxKind};
pub use populate::{Row, Table, Value};
pub use schema::Dialect;
pub use spec::{warehouses, Error, CUSTOMERS, DISTRICTS, ITEMS, ORDERS};
