//! The errors of reading a trace, by category (as DataFusion's): the input cannot be read, or the
//! trace is refused (`--strict`).

use crate::model::Warning;

/// Reading errors: the file cannot be read, or `--strict` met a malformed line.
#[derive(Debug, thiserror::Error)]
pub enum TraceReadError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// A malformed line under `--strict`.
    #[error("{0} (--strict)")]
    Strict(Warning),
}

/// A result whose error is a [`TraceReadError`].
pub type Result<T, E = TraceReadError> = std::result::Result<T, E>;
