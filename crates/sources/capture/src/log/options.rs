//! What `capture log` is told: the log's format and, for stderr logs, the line prefix.

use std::path::Path;

/// The log formats read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// `log_destination = csvlog`.
    Csv,
    /// `log_destination = jsonlog` (PostgreSQL 15+).
    Json,
    /// `log_destination = stderr`, lines beginning with `log_line_prefix`.
    Stderr,
}

/// The `log_line_prefix` assumed for stderr logs unless given: PostgreSQL's own default.
pub const DEFAULT_PREFIX: &str = "%m [%p] ";

/// How to read the logs.
#[derive(Debug, Clone)]
pub struct LogOptions {
    /// The format; `None`: by file name (`.csv`, `.json`), else stderr.
    pub format: Option<LogFormat>,
    /// `log_line_prefix` of stderr logs (escapes `%m %t %n %p %c %l %u %d %a %h %r %q %%`).
    pub prefix: String,
    /// Only sessions of this database.
    pub database: Option<String>,
}

pub(super) fn format_of(path: &Path, opts: &LogOptions) -> LogFormat {
    opts.format.unwrap_or_else(|| {
        let name = path.to_string_lossy().to_ascii_lowercase();
        if name.ends_with(".csv") {
            LogFormat::Csv
        } else if name.ends_with(".json") {
            LogFormat::Json
        } else {
            LogFormat::Stderr
        }
    })
}
