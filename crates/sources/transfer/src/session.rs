//! What every transfer session shares: connecting, one-row queries, error wording with the
//! SQLSTATE and COPY line, the session settings and the row checksum.

use dbscope_pgwire::{connect_with, ConnectError, WireConn, WireError};

pub(crate) fn connect(spec: &str, who: &str) -> Result<WireConn, ConnectError> {
    connect_with(spec, who, None).map(|(c, _)| c)
}

pub(crate) fn one(c: &mut WireConn, sql: &str) -> Result<Vec<Option<String>>, WireError> {
    Ok(c.simple_query(sql)?.into_iter().next().unwrap_or_default())
}

/// How a checksum computed from the rows as COPY sends them starts in `transfer.json`.
pub(crate) const ROW_SUM_PREFIX: &str = "xxh3-sum:";

/// The settings every transfer session runs with, so COPY's text of a value is the same on both
/// sides (and the row checksum with it): ISO dates, UTC, shortest exact floats, hex bytea.
pub(crate) const SESSION_SETTINGS: &str = "SET DateStyle = ISO, YMD; SET TimeZone = 'UTC'; \
     SET extra_float_digits = 1; SET IntervalStyle = postgres; SET bytea_output = hex";

/// The row checksum's hash of one row.
pub(crate) fn row_hash(row: &[u8]) -> u64 {
    twox_hash::XxHash3_64::oneshot(row)
}

/// Row count and checksum of a table: `sum(hashtextextended(row::text, 0))` as a decimal.
pub(crate) fn checksum_sql(table: &str) -> String {
    format!(
        "SELECT count(*), coalesce(sum(hashtextextended(dbscope_row::text, 0)::numeric), 0)::text \
         FROM {table} AS dbscope_row"
    )
}
