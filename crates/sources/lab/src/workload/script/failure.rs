//! What a failed command does: [`retryable`] says which failures pgbench retries, [`OnError`]
//! what any other one does. A leaf of `script`: the session decides with it, `script` re-exports it.

use dbscope_db::TargetError;

use crate::error::Error;

/// What a session does after a command fails with an error it does not retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OnError {
    /// The transaction ends (recorded with its error class) and the session goes on.
    #[default]
    Continue,
    /// The run stops, failed (pgbench aborts the client).
    Stop,
}

impl std::str::FromStr for OnError {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "continue" => Ok(OnError::Continue),
            "stop" => Ok(OnError::Stop),
            _ => Err(Error::invalid(
                "on_error",
                format!("{s:?}: expected `continue` or `stop`"),
            )),
        }
    }
}

impl OnError {
    /// The word the option takes.
    pub fn as_str(&self) -> &'static str {
        match self {
            OnError::Continue => "continue",
            OnError::Stop => "stop",
        }
    }
}

/// True for the failures pgbench retries: serialization failure and deadlock (40001, 40P01),
/// and the same conflicts on the other targets: MariaDB/MySQL's deadlock and lock wait timeout
/// (1213, 1205), SQLite's busy and locked database ([`TargetError::is_retryable_conflict`]).
pub fn retryable(e: &TargetError) -> bool {
    e.is_retryable_conflict()
}
