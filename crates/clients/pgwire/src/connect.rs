//! [`connect_with`]: one call from a dbscope connection string to an authenticated
//! [`WireConn`], with the application name and database a caller wants (re-exported at the
//! crate root).

use crate::conn::WireConn;
use crate::conninfo::{resolve, Defaults};
use crate::error::ConnectError;
use crate::spec::spec_body;

/// Connects by the connection string `spec` (libpq rules) with `application_name` set when the
/// string does not set one, to database `dbname` instead of the string's when given (a
/// maintenance connection). Returns the connection and the string's own database (the one it
/// names, or libpq's default); the error says where it failed.
pub fn connect_with(
    spec: &str,
    application_name: &str,
    dbname: Option<&str>,
) -> Result<(WireConn, String), ConnectError> {
    let defaults = Defaults {
        application_name,
        ..Defaults::system()
    };
    let mut info = resolve(spec_body(spec), &defaults)?;
    let own = info.dbname.clone();
    if let Some(db) = dbname {
        info.dbname = db.to_string();
    }
    let (c, _) = WireConn::connect(&info, info.connect_timeout.limit())?;
    Ok((c, own))
}
