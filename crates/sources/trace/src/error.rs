//! The errors of reading a trace, by category (as DataFusion's): the input cannot be read, the
//! trace is refused (`--strict`), or the reader itself failed (a bug).

use crate::model::Warning;

/// Reading errors: the file cannot be read, `--strict` met a malformed line, or a reader thread
/// failed.
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
    /// A thread of the reader failed or stopped: likely a bug.
    #[error("{path}: {what}")]
    Internal {
        /// The input being read.
        path: String,
        /// What failed.
        what: &'static str,
    },
}

/// A result whose error is a [`TraceReadError`].
pub type Result<T, E = TraceReadError> = std::result::Result<T, E>;
