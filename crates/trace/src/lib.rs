//! dbscope-trace: readers that turn foreign traces (Oracle 10046 extended SQL trace) into dbscope events.
//!
//! Layers, each a module: [`input`] (files, gzip, bounded line splitting) → [`mod@line`] (one line
//! classified into a record, zero-copy; [`timestamp`] reads the times of `***` lines) →
//! [`reader`] (the per-session state machine and Method R accounting, handing the [`model`]'s
//! accounted calls and waits to a [`sink::Sink`]) → [`profile`] (the response-time profile) and
//! [`import`] (a run directory). Plain files are split and classified in parallel chunks
//! (`chunked`, private) and accounted in file order. Errors are [`error::TraceReadError`]. See
//! docs/trace.md.

mod chunked;
pub mod error;
pub mod import;
pub mod input;
pub mod line;
pub mod model;
pub mod profile;
pub mod reader;
pub mod sink;
pub mod timestamp;
