//! The error type of the core crate: each variant says what went wrong and what to do about it.

use std::path::PathBuf;

/// Result with the core [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors from reading or writing runs, and from invalid statistical input.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system I/O error on a named file.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The directory has no manifest.json, so it is not a run.
    #[error("{0}: not a dbscope run directory (no manifest.json); give a directory made by `dbscope run`")]
    NotARun(PathBuf),
    /// The output directory already holds a run, which is never overwritten.
    #[error("{0}: the output directory already holds a run; choose another --out")]
    RunExists(PathBuf),
    /// A run file exists but its content is not what the format says.
    #[error("{path}: {msg}")]
    Format {
        /// The file involved.
        path: PathBuf,
        /// What was expected and what was found.
        msg: String,
    },
    /// The run was written by a newer dbscope whose format this one cannot read.
    #[error("{path}: format_version {found} is newer than this dbscope reads ({supported}); upgrade dbscope")]
    NewerFormat {
        /// The manifest.
        path: PathBuf,
        /// The version in the manifest.
        found: String,
        /// The newest version this build reads.
        supported: String,
    },
    /// Durations that did not fit the memory budget could not be sorted on disk.
    #[error("{dir}: cannot sort durations on disk there ({source}); the comparison did not fit its memory budget: free space there, point TMPDIR elsewhere, or give more --memory")]
    Spill {
        /// The temporary directory (`$TMPDIR`).
        dir: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Input that a statistical routine cannot work with (empty, NaN, out of range).
    #[error("invalid input: {0}")]
    InvalidInput(String),
}

impl Error {
    /// A temporary file of sorted durations in `$TMPDIR` could not be written or read.
    pub fn spill(source: std::io::Error) -> Self {
        Error::Spill {
            dir: std::env::temp_dir(),
            source,
        }
    }

    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
