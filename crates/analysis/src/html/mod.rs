//! The self-contained HTML report: tables and SVG plots (log-scale latency distributions, percentile
//! curves, the top-N largest events, throughput and p99 over time) in one file with inline CSS, no
//! scripts and no network, readable in light and dark mode and printable. Every string that comes
//! from a run (SQL text, event names, paths, settings, counters) is escaped. Run-level counter
//! sections follow the summary table: one table of counters and one per counter table. An open-loop
//! run adds its CO-corrected latencies and backlog plot after the summary ([`openloop`]); a sweep
//! its throughput-vs-sessions plot with the fitted USL curve after its `usl` section (`usl`); an
//! A/B run its rounds and intervals after its `ab` section (`ab`).
//!
//! - `run_page`, `compare_page`: the report of a run ([`render_run`]) and of a comparison
//!   ([`render_compare`]);
//! - `tables`: the run, settings, summary and counter tables;
//! - `plots`: the plots of one event name ([`event_plots`]); `axes`: what the plots share;
//! - `observe`, `openloop`: the *Database and OS* section and the open-loop figures;
//! - `page`: the document around them, the options and the rendered page;
//! - [`data`]: what the plots are drawn from, read from a run; [`svg`]: the SVG plots themselves.

mod ab;
mod axes;
mod compare_page;
pub mod data;
mod observe;
mod openloop;
mod page;
mod plots;
mod run_page;
pub mod svg;
mod tables;
mod trend;
mod usl;

pub use ab::SECTION as AB_SECTION;
pub use axes::file_stem;
pub use compare_page::render_compare;
pub use page::{page, HtmlOptions, HtmlPage};
pub use plots::{event_plots, Labelled};
pub use run_page::render_run;
pub use trend::{render_trend, TrendPoint};

#[cfg(test)]
mod tests;
