//! The error of a transfer, by category (as DataFusion's), each message saying what to do: what
//! the user gave, the export directory, the database, the run directory. Where the database
//! said why, its error is kept as the [`source`](std::error::Error::source) (with its SQLSTATE).

use dbscope_pgwire::{ConnectError, WireError};

/// Why a transfer did not start or could not finish.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A bad option or table name; the message names it and says what is expected.
    #[error("{0}")]
    Config(String),
    /// The export directory or one of its files is not what a transfer in needs (missing, cut,
    /// changed, of another format); the message names the file.
    #[error("{0}")]
    Input(String),
    /// A file or directory could not be written or read; the message names it.
    #[error("{0}")]
    Io(String),
    /// No connection to the server (unreachable, refused, bad connection string).
    #[error("{message}")]
    Connect {
        /// What was tried and why it failed (the connection string's password redacted).
        message: String,
        /// Why: [`ConnectError::BadString`] for the string itself, else the server's side.
        source: ConnectError,
    },
    /// The server refused a statement: its message and SQLSTATE.
    #[error("{message}")]
    Database {
        /// What was being done, the server's message and its SQLSTATE.
        message: String,
        /// The server's error.
        source: WireError,
    },
    /// The table is not one a transfer can take (no key to split by, a key that is not an
    /// integer column, not empty, a column type Parquet cannot hold); the message says what to
    /// give instead.
    #[error("{0}")]
    Table(String),
    /// A MariaDB/MySQL server refused a statement or could not be reached: what was being done
    /// and the server's message with its error number (`dbscope-db`'s MariaDB client).
    #[error("{0}")]
    Server(String),
    /// The run directory could not be written.
    #[error(transparent)]
    Core(#[from] dbscope_core::Error),
}

impl Error {
    /// The server's refusal of what was being done (`what`): `what: message (SQLSTATE)`.
    pub(crate) fn database(what: &str, e: WireError) -> Self {
        Error::Database {
            message: db(what, &e),
            source: e,
        }
    }

    /// No connection to `spec` (shown redacted).
    pub(crate) fn connect(spec: &str, e: ConnectError) -> Self {
        Error::Connect {
            message: format!(
                "cannot connect to {}: {e}",
                dbscope_core::redact::redact(spec)
            ),
            source: e,
        }
    }
}

/// A server's refusal said with what was being done, its COPY line and its SQLSTATE.
pub(crate) fn db(what: &str, e: &WireError) -> String {
    // A COPY FROM STDIN the server refused names the line of the file (issue 27 item 13).
    let line = e
        .copy_line()
        .map(|n| format!(", line {n}"))
        .unwrap_or_default();
    match e {
        WireError::Db { code, .. } => format!("{what}{line}: {e} ({code})"),
        _ => format!("{what}: {e}"),
    }
}
