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
    /// with the value or what is wrong (`must be at least 1`, `0: expected …`), or with `:`. It
    /// names other fields as `{field}` (`… with {sessions} 2`), said as the front end says them.
    #[error("{}", render_invalid(field, &fill(problem, &|f| f.to_string())))]
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

/// `text` with each `{field}` (a lower-case identifier in braces) said by `name`.
fn fill(text: &str, name: &dyn Fn(&'static str) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let len = after
            .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
            .unwrap_or(after.len());
        match (
            len > 0 && after[len..].starts_with('}'),
            FIELDS.iter().find(|f| **f == &after[..len]),
        ) {
            (true, Some(f)) => {
                out.push_str(&name(f));
                rest = &after[len + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The plan's fields a problem may name (`{sessions}`): `RunPlan`'s, its `RunConfig`'s and the
/// workloads' options.
pub const FIELDS: &[&str] = &[
    "sessions",
    "ops_per_session",
    "duration",
    "warmup",
    "seed",
    "max_errors",
    "threads",
    "rate",
    "arrival",
    "sample_hz",
    "snapshot_every",
    "settings",
    "table",
    "fresh",
    "keys",
    "delta",
    "rows",
    "row_bytes",
    "dist",
    "place",
    "cache",
    "restart_cmd",
    "restart_timeout",
    "groups",
    "into",
    "clients",
    "connections",
    "elements",
    "payload",
    "strategy",
    "batch",
    "batch_wait",
    "preallocate",
    "scripts",
    "mode",
    "max_tries",
    "on_error",
];

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
            Error::Invalid { field, problem } => {
                render_invalid(&name(field), &fill(problem, &|f| name(f)))
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_is_named_by_the_front_end_and_so_are_the_fields_its_problem_names() {
        let e = Error::invalid("threads", "3: … leave {threads} out; {not_a_field} {x");
        assert_eq!(
            e.to_string(),
            "threads 3: … leave threads out; {not_a_field} {x"
        );
        assert_eq!(
            as_flags(&e),
            "--threads 3: … leave --threads out; {not_a_field} {x"
        );
        let e = Error::invalid("clients", ": at most 100,000");
        assert_eq!(e.to_string(), "clients: at most 100,000");
        assert_eq!(as_flags(&Error::Config("as is".into())), "as is");
    }
}
