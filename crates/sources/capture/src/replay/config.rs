//! What a replay is given and gives back ([`ReplayConfig`], [`Speed`], [`ReplaySummary`]) and the
//! limits every replay session keeps (the `--sync commit` timeouts, examples kept per kind of
//! divergence). A leaf of `replay`: `run`, `check`, `session` and `tally` read it, and `replay`
//! re-exports the public part.

use std::path::PathBuf;
use std::time::Duration;

/// Every diverging call of a replay, one JSON object a line.
pub const DIVERGENCE_FILE: &str = "replay-divergence.jsonl";
/// How long a call waits for an earlier commit (`--sync commit`) before going ahead anyway, when
/// its session holds no transaction open.
pub(super) const SYNC_TIMEOUT: Duration = Duration::from_millis(500);
/// The same when its session is inside a transaction: it may hold row locks the awaited commit's
/// session is blocked on (the replay took a lock in another order than the capture), a deadlock
/// only going ahead breaks; counted.
pub(super) const SYNC_TIMEOUT_IN_TRANSACTION: Duration = Duration::from_millis(50);
/// Examples kept per kind of divergence.
pub(super) const EXAMPLES: usize = 5;

/// How fast to replay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Speed {
    /// The captured timing divided by this factor (1: as captured).
    Factor(f64),
    /// Every session's calls back to back, sessions all at once.
    Max,
}

/// What to replay, where.
pub struct ReplayConfig {
    /// The capture directory.
    pub capture: PathBuf,
    /// The target (libpq connection string): every replay session connects with it.
    pub target: String,
    /// The run directory to create.
    pub out: PathBuf,
    /// Timing.
    pub speed: Speed,
    /// Keep the captured commit order across sessions.
    pub sync_commit: bool,
    /// With `sync_commit`: how long after a write's captured end a commit may have been seen and
    /// still be waited for (see [`plan::sync_bound`](super::plan::sync_bound);
    /// [`DEFAULT_SYNC_SLACK`](super::DEFAULT_SYNC_SLACK) unless said).
    pub sync_slack: Duration,
    /// The restore point the target was reset to first (recorded in the manifest).
    pub restored_from: Option<String>,
    /// The command line (redacted in the manifest).
    pub command_line: Vec<String>,
    /// Watches the target while the replay runs (its counters, devices and the replay's
    /// sessions' waits): the binary gives the lab's observer; `None`: not watched.
    pub watch: Option<crate::watch::OpenWatch>,
    /// The target's server version and settings as the binary read them (recorded as every
    /// run's target is, so `compare` of two replays shows what changed on the system); `None`:
    /// the kind and location only.
    pub target_info: Option<dbscope_core::manifest::TargetInfo>,
}

/// What a replay did.
#[derive(Debug, Clone, Default)]
pub struct ReplaySummary {
    /// The run directory.
    pub dir: PathBuf,
    /// Calls replayed.
    pub replayed: u64,
    /// Calls not replayed (COPY, unknown statements, …).
    pub not_replayed: u64,
    /// Replayed calls that diverged.
    pub diverged: u64,
    /// Seconds the captured calls spanned, and the replay's.
    pub capture_s: f64,
    /// See `capture_s`.
    pub replay_s: f64,
    /// Why the replay is partial (connections lost, calls not replayed for want of one), if
    /// it is: the run's outcome is then `failed` and its `partial` parameter says this.
    pub partial: Option<String>,
}
