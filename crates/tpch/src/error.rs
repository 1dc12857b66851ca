//! The errors of dbscope-tpch.

use std::path::PathBuf;

/// Errors of the Q1 job: every message names the file (and, for bad data, the line and field).
#[derive(Debug, thiserror::Error)]
pub enum Q1Error {
    /// An I/O error on a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A line that is not a lineitem row.
    #[error("{path}:{line}: field {field} ({name}): {msg}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Line number, from 1.
        line: u64,
        /// Field number, from 1 (as in the TPC-H specification's column order).
        field: usize,
        /// The field's name.
        name: &'static str,
        /// What was expected and what was found.
        msg: String,
    },
    /// The last line has no newline: the file was cut short.
    #[error("{path}:{line}: truncated last line (no newline at the end): the file is incomplete; regenerate it with `dbscope tpch gen`")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Line number, from 1.
        line: u64,
    },
    /// Unusable input (empty file, no lineitem files in a directory, bad option).
    #[error("{0}")]
    Input(String),
}
