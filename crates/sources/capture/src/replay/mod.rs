//! `dbscope replay CAP --target …`: a capture played back against a (changed) system.
//!
//! With its timing and concurrency: one replay session per captured session, each connecting at its
//! captured offset and issuing each call at its captured start (scaled by `--speed`; think time
//! kept), or back to back with `--speed max`. With `--sync commit` a call also waits until every
//! commit that preceded it in the capture has happened in the replay (Oracle's replay does this
//! with SCNs), so concurrent sessions see the data in the order they saw it (see
//! [`plan::sync_bound`] for what "preceded" means for reads and for writes).
//!
//! Every replayed call becomes an event named as in the capture (the statement's fingerprint), with
//! its scheduled start as the intended start, so `report` shows how far the replay fell behind and
//! `compare CAP REPLAY` compares statement by statement. Divergence — a call whose rows, command or
//! error differ from the capture — is counted by kind with examples (`counters.json`, section
//! `replay`) and every diverging call is listed in `replay-divergence.jsonl`.
//!
//! `plan` reads the capture back and decides what is replayed and waited for; `order` is the
//! commit order the sessions keep; `session` replays one captured session; `tally` counts what
//! the sessions saw and makes the counter section; `check` looks at the target first; `run` does
//! the whole replay as a run.

mod check;
mod order;
mod plan;
mod run;
mod session;
mod tally;

use std::path::PathBuf;
use std::time::Duration;

// The wire client, imported once here for the submodules (`use super::…`).
use dbscope_pgwire::{connect_with, Answer, ReplayCall, WireConn, WireError};

pub use plan::DEFAULT_SYNC_SLACK;
pub use run::run;

/// Every diverging call of a replay, one JSON object a line.
pub const DIVERGENCE_FILE: &str = "replay-divergence.jsonl";
/// How long a call waits for an earlier commit (`--sync commit`) before going ahead anyway, when
/// its session holds no transaction open.
const SYNC_TIMEOUT: Duration = Duration::from_millis(500);
/// The same when its session is inside a transaction: it may hold row locks the awaited commit's
/// session is blocked on (the replay took a lock in another order than the capture), a deadlock
/// only going ahead breaks; counted.
const SYNC_TIMEOUT_IN_TRANSACTION: Duration = Duration::from_millis(50);
/// Examples kept per kind of divergence.
const EXAMPLES: usize = 5;

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
    /// still be waited for (see [`plan::sync_bound`]; [`DEFAULT_SYNC_SLACK`] unless said).
    pub sync_slack: Duration,
    /// The restore point the target was reset to first (recorded in the manifest).
    pub restored_from: Option<String>,
    /// The command line (redacted in the manifest).
    pub command_line: Vec<String>,
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
