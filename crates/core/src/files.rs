//! The names of the files in a run directory, in one leaf module that the format's readers and
//! writers all use.

/// The manifest: what the run was, when, and how it ended.
pub const MANIFEST_FILE: &str = "manifest.json";
/// The event file: checksummed blocks of timed events.
pub const EVENTS_FILE: &str = "events.dsev";
/// Run-level counters (the `counters` module).
pub const COUNTERS_FILE: &str = "counters.json";
/// The plans of the workload's statements, taken once after warm-up (`run --explain`; the `plans`
/// module).
pub const PLANS_FILE: &str = "plans.json";
