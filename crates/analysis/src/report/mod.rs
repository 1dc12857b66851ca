//! The report of one run: what was measured and how, then per event name its count, errors,
//! throughput, R's `summary()` of the latencies and R's type-7 percentiles, as text for a terminal and
//! as JSON.
//!
//! [`build()`] streams the run's event blocks once, keeping the successful durations of each event name
//! (8 bytes per event, within [`crate::summary::EXACT_BUDGET_VALUES`] over all names; beyond it a
//! name goes to an HDR histogram), and reduces them to a [`Report`]; [`render_text`] and [`render_json`] print it.
//! The JSON output is the serialization of [`Report`], so its field names are the struct's; the
//! run-level counters of `counters.json` follow the events, each section printed the same way
//! whichever source wrote it (see [`crate::counters`]).
//!
//! Definitions used throughout:
//! - the *measured set* is every event that is not a warm-up event (or every event with
//!   [`ReportOptions::include_warmup`]);
//! - the *measured span* runs from the earliest start to the latest end of all events of the measured
//!   set, across names and including failed events; throughput is successful events over that span;
//! - latencies are the recorded durations of successful events of the measured set, in microseconds.
//!
//! Event names are listed in the order in which they first appear in the event files.
//!
//! - `model`: what a report holds ([`Report`] and its parts) and [`ReportOptions`];
//! - `build`: [`build()`], the one pass over the event files and what it adds up;
//! - `text`: [`render_text`] and [`render_json`].

mod build;
mod model;
mod text;

pub use crate::summary::{EventReport, PercentilesUs, SessionSpread, SummaryUs};
pub use build::build;
pub use model::{
    MeasuredReport, ReadReport, Report, ReportOptions, RunReport, SettingRow, TargetReport,
};
pub use text::{render_json, render_text};

#[cfg(test)]
mod tests;
