//! The error of dbscope-lab's runs and options, by category (as DataFusion's): what the user gave,
//! what the database refused, and the run directory.
//!
//! What a database says while a run goes is a [`TargetError`] recorded as an event, not an error
//! of this kind; this one stops a run before or as it starts.
//!
//! A bad value of a plan's field is [`Error::Invalid`]: it names the field (`sessions`,
//! `ops_per_session`, `rate`, …), not a command-line flag; a front end says the field in its own
//! words ([`Error::render`]), e.g. `dbscope` as the flag that set it.

use dbscope_db::TargetError;

/// Errors that stop a run before or while it starts, and bad options.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The target refused (bad URI, unreachable, wrong password, unknown setting, setup failed).
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The run directory could not be written.
    #[error(transparent)]
    Core(#[from] dbscope_core::Error),
    /// A bad option or name; the message says what is expected.
    #[error("{0}")]
    Config(String),
    /// A field of a run's plan has a bad value. `problem` follows the field's name: it starts
    /// with the value or what is wrong (`must be at least 1`, `0: expected …`), or with `:`.
    #[error("{}", render_invalid(field, problem))]
    Invalid {
        /// The plan's field (`sessions`, `ops_per_session`, `sample_hz`, …).
        field: &'static str,
        /// What is wrong, after the field's name.
        problem: String,
    },
    /// A total that must split evenly over a count does not (lookup's operations over the
    /// sessions).
    #[error("{}", render_uneven(field, *total, over, *count))]
    Uneven {
        /// The field holding the total.
        field: &'static str,
        /// Its value.
        total: u64,
        /// The field holding the count.
        over: &'static str,
        /// Its value.
        count: u64,
    },
}

fn render_invalid(name: &str, problem: &str) -> String {
    if problem.starts_with(':') {
        format!("{name}{problem}")
    } else {
        format!("{name} {problem}")
    }
}

fn render_uneven(field: &str, total: u64, over: &str, count: u64) -> String {
    format!(
        "{field} {total} is the lookup run's total and must split evenly over {over} {count} \
         (e.g. {field} {})",
        (total / count.max(1)).max(1) * count
    )
}

impl Error {
    /// A field's bad value.
    pub fn invalid(field: &'static str, problem: impl Into<String>) -> Error {
        Error::Invalid {
            field,
            problem: problem.into(),
        }
    }

    /// The message with each field named by `name` (e.g. a command-line flag for it); other
    /// errors as they are.
    pub fn render(&self, name: impl Fn(&'static str) -> String) -> String {
        match self {
            Error::Invalid { field, problem } => render_invalid(&name(field), problem),
            Error::Uneven {
                field,
                total,
                over,
                count,
            } => render_uneven(&name(field), *total, &name(over), *count),
            e => e.to_string(),
        }
    }
}

/// The message as a command line would say it (`--row-bytes` for `row_bytes`), for tests.
#[cfg(test)]
pub(crate) fn as_flags(e: &Error) -> String {
    e.render(|f| format!("--{}", f.replace('_', "-")))
}
