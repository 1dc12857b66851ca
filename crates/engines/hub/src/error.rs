//! The hub's error, by what the user should look at (and the exit code the binary gives).

/// Why a query did not start or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A bad option, source specification or query (unknown table or column, SQL syntax): the
    /// message says what is expected.
    #[error("{0}")]
    Usage(String),
    /// A file source, sources file or run directory that cannot be read, or an output that cannot
    /// be written; the message names it.
    #[error("{0}")]
    Input(String),
    /// A database source that cannot be reached or refused (password redacted), or a column
    /// whose type cannot be mapped (named with its table).
    #[error("{0}")]
    Source(String),
    /// The run directory could not be written.
    #[error(transparent)]
    Core(#[from] dbscope_core::Error),
}

/// DataFusion's message on one line (some span several: "… Valid fields are …").
pub(crate) fn one_line(e: &impl std::fmt::Display) -> String {
    e.to_string()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
