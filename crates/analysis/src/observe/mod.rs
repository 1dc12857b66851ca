//! The AWR-like part of a report: top timed events from active-session samples (or an imported
//! Oracle trace's waits), counter deltas per second and per commit, I/O by file type, and an
//! `iostat -x` style OS table, from a run's `snapshots.jsonl` and `samples.jsonl`.
//!
//! - `model`: what the section holds ([`ObserveReport`] and its rows);
//! - `build`: the five entry points that build it for a run;
//! - `join`: active-session samples joined to the client events, the top timed events;
//! - `postgres`, `mysql`, `sqlite`, `os`: the figures of each side from a snapshot delta;
//! - `steps`: the counters of each step of a workload that marks them (bulkload);
//! - `trace`: an imported Oracle trace's waits as the top timed events;
//! - `text`: the section as text;
//! - `compare`: two runs' sections side by side.

mod build;
mod compare;
mod join;
mod model;
mod mysql;
mod os;
mod postgres;
mod sqlite;
mod steps;
mod text;
mod trace;

pub use build::{build, build_joined, build_or_note, build_or_note_joined, build_with};
pub use compare::{compare, compare_runs, push_compare_text, FigureChange, ObserveComparison};
pub use join::{top_wait_event, SampleJoin};
pub use model::{
    DiskRow, During, Figure, IoRow, ObserveReport, StatementRow, StepRow, TableIoRow, TopEvents,
    TopRow, NO_CLIENT_EVENT,
};
pub use text::push_text;
