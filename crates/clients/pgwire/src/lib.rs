//! dbscope-pgwire: dbscope's PostgreSQL client. A blocking wire-protocol connection on
//! `postgres-protocol`'s codec — no async runtime between the timer and the socket — used by the
//! lab's PostgreSQL target, `transfer`, the capture proxy and replay.
//!
//! - [`conninfo`]: connection strings by libpq's rules (URIs, key/value, `PG*` defaults).
//! - [`conn`]: [`WireConn`], connect and authenticate, queries, prepared statements.
//! - [`copy`]: `COPY … FROM STDIN` / `TO STDOUT` on a connection.
//! - [`replay`]: calls sent as an application sent them, and the server's [`Answer`].
//! - [`stream`]: sockets in libpq's order; the raw socket a proxy takes over.
//! - [`tag`]: the row count of a command tag.
//! - [`error`]: [`WireError`] (a statement or the socket failed), [`ConnectError`].
//! - [`sqlstate`]: [`SqlState`], a server error's code kept as data.
//! - [`mux`]: the coroutine multiplexer sessions wait for the server in.

pub mod conn;
pub mod conninfo;
pub mod copy;
pub mod error;
pub mod mux;
pub mod replay;
pub mod sqlstate;
pub mod stream;
pub mod tag;

pub use conn::WireConn;
pub use error::{ConnectError, WireError};
pub use replay::{Answer, ReplayCall};
pub use sqlstate::SqlState;
pub use stream::{connect_socket, RawSocket};
pub use tag::tag_rows;

use conninfo::{resolve, Defaults};

/// A connection string without dbscope's `postgres:` prefix of key/value strings (URIs keep
/// their scheme).
pub(crate) fn spec_body(spec: &str) -> &str {
    let spec = spec.trim();
    match spec.strip_prefix("postgres:") {
        Some(kv) if !spec.starts_with("postgres://") => kv,
        _ => spec,
    }
}

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
