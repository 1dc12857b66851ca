//! The error of a transfer, by category (as DataFusion's), each message saying what to do: what
//! the user gave, the export directory, the database, the run directory.

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
    #[error("{0}")]
    Connect(String),
    /// The server refused a statement (its message and SQLSTATE), or the table is not one a
    /// transfer can take (no key to split by, not empty).
    #[error("{0}")]
    Database(String),
    /// The run directory could not be written.
    #[error(transparent)]
    Core(#[from] dbscope_core::Error),
}
