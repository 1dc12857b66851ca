//! What the accept loop, the sessions and the recording thread share: the live figures, the
//! base every session needs, the limits.

use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::Arc;
use std::time::Duration;

use dbscope_core::RunClock;

use super::calls_file::CallsFile;
use crate::watch::Backends;

/// How long a client may take to send its startup message.
pub(super) const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How often the calls file is written and flushed (so a crash loses at most this much).
pub(super) const FLUSH_EVERY: Duration = Duration::from_millis(200);
/// How often the watcher of the upstream ticks (its backends' CPU time, periodic snapshots).
pub(super) const WATCH_EVERY: Duration = Duration::from_millis(250);
/// Bytes read at once from a socket.
pub(super) const BUF: usize = 1 << 16;

/// Live figures, shared by the sessions.
#[derive(Default)]
pub struct Live {
    /// Sessions so far.
    pub sessions: AtomicU32,
    /// Sessions open now.
    pub open: AtomicU32,
    /// Calls recorded so far.
    pub calls: AtomicU64,
    /// Calls that failed.
    pub errors: AtomicU64,
    /// Bytes from clients.
    pub bytes_in: AtomicU64,
    /// Bytes from the server.
    pub bytes_out: AtomicU64,
    /// Server answers the tracker could not match to a request.
    pub unmatched: AtomicU64,
    /// Clients the proxy refused because it had no file descriptor left for them.
    pub refused: AtomicU32,
}

/// What every session needs.
pub(super) struct Base {
    /// The open-files limit the proxy runs with.
    pub(super) fd_limit: Option<u64>,
    /// Sessions the limit allows (each needs two descriptors); more are refused.
    pub(super) max_sessions: Option<u32>,
    pub(super) upstream: String,
    pub(super) clock: RunClock,
    pub(super) calls: Arc<CallsFile>,
    pub(super) live: Arc<Live>,
    /// Told each session's backend (when the server is watched).
    pub(super) backends: Option<Arc<dyn Backends>>,
}
