//! Errors: [`ScriptError`] for a script that cannot be read (file, line, column, what was
//! expected), [`EvalError`] for a command that fails while running (pgbench's run-time errors:
//! undefined variable, bigint out of range, division by zero…).

/// A script that cannot be parsed, said as pgbench says it, with where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}\n{context}")]
pub struct ScriptError {
    /// The file (or `builtin:NAME`).
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column (in characters).
    pub column: u32,
    /// What is wrong, e.g. `unexpected character`, `\if without matching \endif`.
    pub message: String,
    /// The offending line and a caret under the column (two lines, indented by two spaces).
    pub context: String,
}

/// A command that failed while running (the transaction fails; the caller records it with
/// [`EvalError::class`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct EvalError {
    /// Short class for counting, e.g. `script:undefined-variable`, `script:overflow`,
    /// `script:division-by-zero`, `script:shell`, `script:gset`.
    pub class: &'static str,
    /// pgbench's wording, e.g. `undefined variable "aid"`, `bigint out of range`,
    /// `division by zero`, `command \setshell "…" failed: …`.
    pub message: String,
}
