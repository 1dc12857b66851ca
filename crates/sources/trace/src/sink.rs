//! The [`Sink`] trait: what receives the accounted db calls, waits and errors of a trace.

use crate::model::{AccountedCall, AccountedWait, Tables, TraceError};

/// Receives accounted records, in the order they are resolved.
pub trait Sink {
    /// A db call, once its parent (if any) is known.
    fn call(&mut self, t: &Tables, c: &AccountedCall);
    /// A wait, once it is known whether a call contains it.
    fn wait(&mut self, t: &Tables, w: &AccountedWait);
    /// A db error.
    fn error(&mut self, _t: &Tables, _e: &TraceError) {}
}
