//! dbscope-trace: readers that turn foreign traces (Oracle 10046 extended SQL trace) into dbscope events.
//!
//! Layers, each a module: [`input`] (files, gzip, streams cut into pieces of whole lines in
//! bounded memory) → [`mod@line`] (one line classified into a record, zero-copy; [`timestamp`]
//! reads the times of `***` lines) → `chunk` (private: a chunk's lines classified into compact
//! items) → `pipeline` (private: every input cut into chunks, classified on all cores and handed
//! back in file order) → `state` (private: the per-session state machine and Method R
//! accounting, handing the [`model`]'s accounted calls and waits to a [`sink::Sink`]) →
//! [`reader`] (the [`reader::Reader`] that runs files and streams through all of that) →
//! [`profile`] (the response-time profile) and [`import`] (a run directory). Errors are
//! [`error::TraceReadError`]. See docs/trace.md.

mod chunk;
pub mod error;
pub mod import;
pub mod input;
pub mod line;
mod mapped;
pub mod model;
mod pipeline;
pub mod profile;
pub mod reader;
pub mod sink;
mod state;
pub mod timestamp;
