//! What a connection string can be refused for.

/// A connection string libpq would refuse, or one asking for something dbscope's client cannot do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConnInfoError(pub String);

pub(super) type Result<T, E = ConnInfoError> = std::result::Result<T, E>;

pub(super) fn err<T>(msg: impl Into<String>) -> Result<T> {
    Err(ConnInfoError(msg.into()))
}
