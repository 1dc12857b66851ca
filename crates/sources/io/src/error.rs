//! The one error type of dbscope-io, by category (as DataFusion's): what the user gave, what a
//! file holds, what the system refused, and the run directory.

use std::path::PathBuf;

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that stops `io redo` or its verifier. Each message names the option or the file and
/// says what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A bad option or destination, refused before anything is written.
    #[error("{0}")]
    Config(String),
    /// A file that is not a dbscope redo log (or whose header is damaged).
    #[error("{path}: {msg}")]
    NotALog {
        /// The file.
        path: PathBuf,
        /// Why.
        msg: String,
    },
    /// A file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The run directory could not be written.
    #[error("{0}")]
    Run(#[from] dbscope_core::Error),
}
