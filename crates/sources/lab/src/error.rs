//! The error of dbscope-lab's runs and options, by category (as DataFusion's): what the user gave,
//! what the database refused, and the run directory.
//!
//! What a database says while a run goes is a [`TargetError`] recorded as an event, not an error
//! of this kind; this one stops a run before or as it starts.

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
    /// A bad option or name; the message names it and says what is expected.
    #[error("{0}")]
    Config(String),
}
