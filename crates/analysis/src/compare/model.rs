//! What a comparison holds ([`Comparison`] and its parts), its options and its errors.

use std::collections::BTreeMap;

use serde::Serialize;

use dbscope_core::stats::{BootstrapOptions, OverThreshold, QuantileDiff, RankSumTest, WelchTest};
use dbscope_core::{Error, Outcome};

use crate::counters::SectionComparison;
use crate::summary::{FromIntended, SummaryUs};

/// Quantiles compared by default.
pub const DEFAULT_QUANTILES: [f64; 4] = [0.5, 0.9, 0.99, 0.999];

/// The default of [`CompareOptions::memory_bytes`]: 1 GiB.
pub const DEFAULT_MEMORY_BYTES: u64 = 1 << 30;

/// What to compare and how.
#[derive(Clone, Debug, Serialize)]
pub struct CompareOptions {
    /// Compare only this event name.
    pub event: Option<String>,
    /// Count events longer than this many µs.
    pub outlier_us: Option<f64>,
    /// Half-width of the noise band as a fraction of A's value (0.01 is ±1%).
    pub noise: f64,
    /// Count warm-up events as measured events.
    pub include_warmup: bool,
    /// Compare runs with no recorded end or damaged event files instead of refusing them.
    pub allow_incomplete: bool,
    /// Bootstrap settings of the quantile intervals (seeded).
    pub bootstrap: BootstrapOptions,
    /// Quantiles to compare, each in [0, 1].
    pub quantiles: Vec<f64>,
    /// About how many bytes of latencies to hold in memory; an event name whose samples do not
    /// fit is sorted on disk (in `$TMPDIR`) and its statistics read from there.
    pub memory_bytes: u64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            event: None,
            outlier_us: None,
            noise: 0.01,
            include_warmup: false,
            allow_incomplete: false,
            bootstrap: BootstrapOptions::default(),
            quantiles: DEFAULT_QUANTILES.to_vec(),
            memory_bytes: DEFAULT_MEMORY_BYTES,
        }
    }
}

/// Why a comparison cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// A run could not be read.
    #[error(transparent)]
    Run(#[from] Error),
    /// A run has no recorded end or damaged data, and `allow_incomplete` was not set.
    #[error("{label} ({path}) is incomplete: {why}; pass --allow-incomplete to compare the events read so far")]
    Incomplete {
        /// `A` or `B`.
        label: &'static str,
        /// The run directory.
        path: String,
        /// What is missing.
        why: String,
    },
    /// Nothing to compare.
    #[error("{0}")]
    Nothing(String),
    /// Invalid options.
    #[error("{0}")]
    Options(String),
}

impl CompareError {
    /// A temporary file of durations sorted on disk could not be written or read.
    pub fn spill(e: std::io::Error) -> Self {
        CompareError::Run(Error::spill(e))
    }
}

/// The comparison of run B against run A; serialized as is for `--json`.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// Run A (the baseline).
    pub a: RunSide,
    /// Run B (the candidate).
    pub b: RunSide,
    /// The options used (the noise band, the bootstrap seed, ...).
    pub options: CompareOptions,
    /// Manifest fields whose values differ between A and B (timestamps and command lines left out).
    pub manifest_diff: Vec<ManifestDiff>,
    /// Where the files moved between A and B (the manifests' `storage`): per role whose devices
    /// differ, e.g. `WAL: vda → loop0` (left out of the JSON when nothing moved).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<StorageMove>,
    /// One entry per event name in both runs with at least two successful events in each, in order
    /// of first appearance in A.
    pub events: Vec<EventComparison>,
    /// The other event names, side by side without a test: one run lacks the name, or has fewer
    /// than two successful events of it (a bulk load's steps, a single job), or only failures. In
    /// order of first appearance in A, then B's own.
    pub untested: Vec<SideBySide>,
    /// Run-level counter sections both runs have (same key): their numeric counters side by side
    /// (left out of the JSON when there are none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<SectionComparison>,
    /// The database's and the OS's side of both runs ([`crate::observe`]), when either has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observe: Option<crate::observe::ObserveComparison>,
    /// Latency from the intended start per event name, when a run was paced open-loop (left out
    /// of the JSON otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub from_intended: Vec<FromIntendedComparison>,
    /// The plans of the statements `run --explain` explained, paired by event (and place among the event's plans), with
    /// whether their shape changed ([`crate::plans`]); left out when neither run has plans.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plans: Option<crate::plans::PlansComparison>,
}

/// One of the two runs.
#[derive(Clone, Debug, Serialize)]
pub struct RunSide {
    /// The run directory.
    pub path: String,
    /// Workload name.
    pub workload: String,
    /// How the run ended.
    pub outcome: Outcome,
    /// Why its data may be incomplete (only with `allow_incomplete`).
    pub incomplete: Option<String>,
    /// A replay that lost connections (its `partial` parameter): calls not replayed, the
    /// database neither the captured state nor a clean prefix of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial: Option<String>,
    /// Events read (all names, warm-up and errors included).
    pub events_read: u64,
    /// Elapsed time of the measured events, s: from the first one's start to the last one's end
    /// (what "elapsed time reduced by 70%" compares); `None` without measured events.
    pub elapsed_s: Option<f64>,
}

/// A role (data, WAL, tablespace, temp, run) whose device differs between A and B.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StorageMove {
    /// `data`, `WAL`, `tablespace`, `temp` or `run`.
    pub role: String,
    /// A's devices (`+`-joined when several; `(none)` when A has no such place, `?` unknown).
    pub a: String,
    /// B's devices, as for A.
    pub b: String,
}

/// A manifest field that differs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ManifestDiff {
    /// Dotted path, e.g. `target.settings_effective.synchronous`.
    pub field: String,
    /// A's value (`None`: absent in A).
    pub a: Option<String>,
    /// B's value (`None`: absent in B).
    pub b: Option<String>,
}

/// An event name shown side by side without a test.
#[derive(Clone, Debug, Serialize)]
pub struct SideBySide {
    /// Event name.
    pub name: String,
    /// Run A's events of the name; `None` when A has none (printed `—`).
    pub a: Option<SideFacts>,
    /// Run B's events of the name; `None` when B has none.
    pub b: Option<SideFacts>,
    /// Why there is no test, e.g. `one sample: no test`.
    pub reason: String,
}

/// One run's events of a name that is not tested.
#[derive(Clone, Debug, Serialize)]
pub struct SideFacts {
    /// Successful measured events.
    pub n: u64,
    /// Failed measured events by error class.
    pub errors: BTreeMap<String, u64>,
    /// R's `summary()` of the successful durations (µs); `None` without one.
    pub summary: Option<SummaryUs>,
    /// From the first successful event's start to the last one's end, s (a single event's
    /// duration); `None` without one.
    pub elapsed_s: Option<f64>,
    /// Rows of the successful events.
    pub rows: u64,
    /// Rows per second of `elapsed_s`, when there are rows and time.
    pub rows_per_s: Option<f64>,
}

/// R's `summary()` of one side, in µs, with n and sd (JSON: `n`, `min` … `max`, `sd` side by side).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SideSummary {
    /// Successful measured events.
    pub n: u64,
    /// Min., 1st Qu., Median, Mean, 3rd Qu., Max. (type-7 quantiles).
    #[serde(flatten)]
    pub summary: SummaryUs,
    /// Sample standard deviation.
    pub sd: f64,
}

/// The comparison of one event name.
#[derive(Clone, Debug, Serialize)]
pub struct EventComparison {
    /// Event name.
    pub name: String,
    /// A's summary (µs).
    pub a: SideSummary,
    /// B's summary (µs).
    pub b: SideSummary,
    /// Welch's t-test of B against A (difference B − A, µs); `None` when the data are constant.
    pub welch: Option<WelchTest>,
    /// Why there is no t-test, when there is none.
    pub welch_note: Option<String>,
    /// Wilcoxon rank-sum test of B against A (`W` is B's statistic).
    pub rank_test: RankSumTest,
    /// Hodges–Lehmann shift of B against A: the median of all B − A differences (µs).
    pub hl_shift_us: f64,
    /// Quantile differences with bootstrap intervals (µs and relative).
    pub quantiles: Vec<QuantileDiff>,
    /// Events over the outlier threshold in A and B, when `--outlier` was given.
    pub outliers: Option<[OverThreshold; 2]>,
    /// Successful measured events per second of each run's elapsed time, A and B.
    pub throughput_per_s: [Option<f64>; 2],
    /// Failed measured events by error class, A and B.
    pub errors: [BTreeMap<String, u64>; 2],
    /// The verdict.
    pub verdict: Verdict,
}

/// Which way a statistic moved, judged against the noise band.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// B is slower (larger latencies): the interval lies wholly above the band.
    Slower,
    /// B is faster: the interval lies wholly below the band.
    Faster,
    /// The interval overlaps the band: no difference detected.
    None,
}

/// The verdict for one event name.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    /// Overall: `slower`, `faster`, `mixed` (some statistics each way), `none`, or `too_few` (the
    /// samples are too small for any test to decide, whatever the intervals say).
    pub call: String,
    /// The mean's direction.
    pub mean: Direction,
    /// Each compared quantile's direction, in the order of [`EventComparison::quantiles`].
    pub quantiles: Vec<Direction>,
    /// The verdict in plain words.
    pub text: String,
}

/// One event name's latency from the intended start in two runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FromIntendedComparison {
    /// Event name.
    pub name: String,
    /// Run A's figures.
    pub a: FromIntended,
    /// Run B's figures.
    pub b: FromIntended,
}
