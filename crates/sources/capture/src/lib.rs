//! Workload capture for PostgreSQL: `dbscope capture proxy` records what an application does
//! (every call of every session, with its values, timing and answer) by sitting between it and
//! the server, and `dbscope capture info` summarises a capture.
//!
//! A capture is a dbscope run (source `capture`): one event per call, named by the statement's
//! fingerprint, so `report`, `export` and `compare` read it as any run; and beside the events the
//! calls themselves ([`CALLS_FILE`]: one JSON object per line, sessions and calls, appended as they
//! finish), which is what a replay needs.

pub mod calls;
pub mod calls_file;
pub mod fingerprint;
pub mod info;
pub mod log;
pub mod private;
pub mod proxy;
pub mod replay;
pub mod restore;
pub mod watch;
pub mod wire;

use std::path::{Path, PathBuf};

/// The calls file of a capture: JSON lines, `{"type":"session",…}` for each connection (written
/// when it ends) and `{"type":"call",…}` for each call (see [`calls::Call`]).
pub const CALLS_FILE: &str = "capture-calls.jsonl";

/// Why a capture failed.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// Bad options, or a target that is not one this command can take (nothing recorded).
    #[error("{0}")]
    Config(String),
    /// No connection to the server (nothing recorded): unreachable, refused, or a bad
    /// connection string ([`ConnectError::BadString`](dbscope_pgwire::ConnectError::BadString)).
    #[error("{message}")]
    Connect {
        /// What was tried and why it failed (the password redacted).
        message: String,
        /// Why.
        source: dbscope_pgwire::ConnectError,
    },
    /// The server refused a statement (its message; the SQLSTATE in the source).
    #[error("{message}")]
    Database {
        /// What was being done and the server's message.
        message: String,
        /// The server's error.
        source: dbscope_pgwire::WireError,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The run directory could not be written.
    #[error(transparent)]
    Run(#[from] dbscope_core::Error),
    /// The capture stopped on a failure; what was recorded until then is in `dir`.
    #[error("capture failed: {why} (what was recorded until then is in {})", dir.display())]
    Failed {
        /// The capture directory.
        dir: PathBuf,
        /// Why.
        why: String,
    },
    /// Not a capture, or one this build cannot read.
    #[error("{path}: {why}")]
    NotACapture {
        /// The directory given.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
}

impl CaptureError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        CaptureError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
