//! What watches the server while a capture or a replay runs (issue 34 item 10): the binary
//! gives the lab's observer (`dbscope_lab::observe::Attached`, which holds a database client this
//! crate does not depend on); the proxy and the replay tell it when the clock starts, which
//! backend serves which session (the `BackendKeyData` of each session's startup), when a
//! session's connection closes, and when the sessions are done. A leaf: `proxy` and `replay` use it.

use std::path::Path;
use std::sync::Arc;

use dbscope_core::{RunClock, StorageInfo};

/// Opens the watcher of a run, once its directory exists (before its clock starts); `None`:
/// the run is not watched.
pub type OpenWatch = Arc<dyn Fn(&Path) -> Option<Box<dyn Watch>> + Send + Sync>;

/// Watches the server during a capture or a replay: snapshots of its counters and devices, and
/// active-session samples of the run's backends. Nothing it does can fail the run.
pub trait Watch: Send {
    /// Where the server keeps its files and the run its own, for the manifest (called before
    /// [`Watch::start`]).
    fn storage(&self) -> Option<StorageInfo>;
    /// Where the sessions' backends are told (safe to call from any thread).
    fn backends(&self) -> Arc<dyn Backends>;
    /// The clock started: take the start snapshot, start sampling.
    fn start(&mut self, clock: &RunClock);
    /// About four times a second while the run goes.
    fn tick(&mut self);
    /// The sessions are done (their connections closed): stop sampling, take the end snapshot.
    fn finish(&mut self);
}

/// Told which server backend serves which session.
pub trait Backends: Send + Sync {
    /// Session `session`'s connection is served by backend `pid`, in `database`.
    fn connected(&self, session: u32, pid: u32, database: Option<&str>);
    /// Backend `pid`'s connection was closed.
    fn ended(&self, pid: u32);
}
