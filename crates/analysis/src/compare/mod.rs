//! `dbscope compare A B`: is B faster than A, by how much, and how sure are we? Per event name in
//! both runs: R's `summary()` of each, Welch's t-test of the means, the Hodges–Lehmann shift with
//! the Wilcoxon rank-sum test, bootstrap intervals of quantile differences, counts over a threshold,
//! a verdict in plain words, and what differs between the two manifests.
//!
//! [`compare`] reads both runs once and reduces them to a [`Comparison`]; [`render_text`] and
//! [`render_json`] print it (the JSON is the serialization of [`Comparison`]). All latencies are in
//! microseconds; every difference is B − A. Run-level counter sections that both runs have are
//! compared side by side after the events (see [`crate::counters`]).
//!
//! The verdict calls a change only when a 95% interval lies wholly outside the noise band (±1% of
//! A's value by default): for the mean the Welch interval of the difference, for a quantile the
//! bootstrap interval of the relative change. Otherwise it says no difference was detected.
//!
//! - `model`: what a comparison holds, its options and errors;
//! - `build`: [`compare`] itself; `load`: one pass over each run's events;
//! - `stats`: the statistical tests of one event name; `verdict`: the verdict in words;
//! - `manifest`: what differs between the manifests ([`manifest_diff`]);
//! - `text`: [`render_text`], [`render_json`] and the [`elapsed_line`] the HTML report shares.

mod build;
mod load;
mod manifest;
mod model;
mod stats;
mod text;
mod verdict;

pub use build::compare;
pub use manifest::manifest_diff;
pub use model::{
    CompareError, CompareOptions, Comparison, Direction, EventComparison, FromIntendedComparison,
    ManifestDiff, RunSide, SideBySide, SideFacts, SideSummary, StorageMove, Verdict,
    DEFAULT_QUANTILES,
};
pub use text::{elapsed_line, render_json, render_text};
pub use verdict::{quantile_label, too_few_to_decide};

#[cfg(test)]
mod tests;
