//! dbscope-pgwire: dbscope's PostgreSQL client. A blocking wire-protocol connection on
//! `postgres-protocol`'s codec — no async runtime between the timer and the socket — used by the
//! lab's PostgreSQL target, `transfer`, the capture proxy and replay.
//!
//! - [`conninfo`]: connection strings by libpq's rules (URIs, key/value, `PG*` defaults).
//! - [`conn`]: [`WireConn`], connect and authenticate, queries, prepared statements.
//! - [`copy`]: `COPY … FROM STDIN` / `TO STDOUT` on a connection.
//! - [`replay`]: calls sent as an application sent them, and the server's [`Answer`].
//! - [`script`]: a user script's statements, with column names, and pipelines.
//! - [`stream`]: sockets in libpq's order; the raw socket a proxy takes over.
//! - [`tag`]: the row count of a command tag.
//! - [`error`]: [`WireError`] (a statement or the socket failed), [`ConnectError`].
//! - [`sqlstate`]: [`SqlState`], a server error's code kept as data.
//! - [`mux`]: the coroutine multiplexer sessions wait for the server in.

pub mod conn;
mod connect;
pub mod conninfo;
pub mod copy;
pub mod error;
pub mod mux;
pub mod replay;
pub mod script;
mod spec;
pub mod sqlstate;
pub mod stream;
pub mod tag;

pub use conn::WireConn;
pub use connect::connect_with;
pub use error::{ConnectError, WireError};
pub use replay::{Answer, ReplayCall};
pub use script::{PipelineResults, StmtResult};
pub use spec::spec_body;
pub use sqlstate::SqlState;
pub use stream::{connect_socket, RawSocket};
pub use tag::tag_rows;
