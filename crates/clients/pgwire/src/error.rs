//! What can go wrong on a connection: a server's error (with its SQLSTATE), a broken socket, a
//! server this client does not understand; and why a connection could not be made.

use std::io;

use fallible_iterator::FallibleIterator;
use postgres_protocol::message::backend::ErrorResponseBody;

use crate::conninfo::ConnInfoError;
use crate::sqlstate::SqlState;

/// A failure of the connection or of a statement.
#[derive(Debug)]
pub enum WireError {
    /// The server reported an error (SQLSTATE and message); the connection is still usable unless
    /// the code says the session ended (class 57P).
    Db {
        /// SQLSTATE, e.g. `40P01`.
        code: SqlState,
        /// The server's message.
        message: String,
        /// Where it happened, when the server says (its `W` field: `COPY t, line 50, column
        /// id: "x"`, a PL/pgSQL call stack).
        context: Option<String>,
    },
    /// The socket failed: the connection is gone.
    Io(io::Error),
    /// The server said something this client does not understand: the connection is abandoned.
    Protocol(String),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Db { message, .. } => write!(f, "{message}"),
            WireError::Io(e) => write!(f, "{e}"),
            WireError::Protocol(m) => write!(f, "protocol error: {m}"),
        }
    }
}

impl From<io::Error> for WireError {
    fn from(e: io::Error) -> Self {
        WireError::Io(e)
    }
}

impl std::error::Error for WireError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WireError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl WireError {
    /// Where a server's error happened, when the server said (its `W` field).
    pub fn context(&self) -> Option<&str> {
        match self {
            WireError::Db { context, .. } => context.as_deref(),
            _ => None,
        }
    }

    /// The input line a server's `COPY … FROM STDIN` error is about (its context's `line N`).
    pub fn copy_line(&self) -> Option<u64> {
        let c = self.context()?;
        let at = c.find(", line ")? + ", line ".len();
        let digits: String = c[at..].chars().take_while(char::is_ascii_digit).collect();
        c.starts_with("COPY ")
            .then(|| digits.parse().ok())
            .flatten()
    }

    /// The SQLSTATE the server sent, if this is a server's error.
    pub fn sqlstate(&self) -> Option<SqlState> {
        match self {
            WireError::Db { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// Why no connection was made.
#[derive(Debug)]
pub enum ConnectError {
    /// The connection string itself is wrong (the message says where; no password in it).
    BadString(ConnInfoError),
    /// No host of the list accepted a connection: for each, where it went and why.
    Unreachable(Vec<String>),
    /// A server accepted the connection and then refused the session (authentication, a missing
    /// database, …); as in libpq, the remaining hosts are not tried.
    Refused {
        /// Index of the endpoint that answered.
        endpoint: usize,
        /// What it said.
        error: WireError,
    },
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::BadString(e) => write!(f, "{}", e.0),
            ConnectError::Unreachable(why) => write!(f, "{}", why.join("; ")),
            ConnectError::Refused { error, .. } => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConnectError::BadString(e) => Some(e),
            ConnectError::Refused { error, .. } => Some(error),
            ConnectError::Unreachable(_) => None,
        }
    }
}

impl From<ConnInfoError> for ConnectError {
    fn from(e: ConnInfoError) -> Self {
        ConnectError::BadString(e)
    }
}

/// The server's error: its SQLSTATE (`XX000` if it sent none that is valid) and message.
pub(crate) fn db_error(body: &ErrorResponseBody) -> WireError {
    let mut code = SqlState::INTERNAL_ERROR;
    let mut message = String::new();
    let mut context = None;
    let mut fields = body.fields();
    while let Ok(Some(f)) = fields.next() {
        match f.type_() {
            b'C' => {
                code = std::str::from_utf8(f.value_bytes())
                    .ok()
                    .and_then(SqlState::parse)
                    .unwrap_or(SqlState::INTERNAL_ERROR)
            }
            b'M' => message = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            b'W' => context = Some(String::from_utf8_lossy(f.value_bytes()).into_owned()),
            _ => {}
        }
    }
    WireError::Db {
        code,
        message,
        context,
    }
}
