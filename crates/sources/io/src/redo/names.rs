//! The names a redo run records under: the workload, its events, its counters file, and which
//! session is which.

/// Workload name written in the manifest.
pub const WORKLOAD_NAME: &str = "io redo";
/// Side file with the counters, inside the run directory.
pub const COUNTERS_FILE: &str = "redo.json";
/// Key of the run's generic counter section (`counters.json`, printed by `report`).
pub const SECTION_KEY: &str = "redo";
/// Event: what a committer waited for its record to be durable.
pub const EV_SYNC: &str = "log file sync";
/// Event: one write (and its sync) to one destination.
pub const EV_WRITE: &str = "log file parallel write";
/// Event: a log switch, timed while the log writer waits for the next group to be reusable.
pub const EV_SWITCH: &str = "log file switch";
/// Event: the log writer held a write until the slower of two destinations had room for it in
/// its backlog (from the hold to the write that made room).
pub const EV_HOLD: &str = "log backlog wait";
/// Event: extra delay added by `--inject`.
pub const EV_INJECT: &str = "injected delay";

/// The session number a destination's events carry: committers are `0..sessions`, the log writer
/// is `sessions`, destinations follow in the order given.
pub fn dest_session(sessions: u32, dest: usize) -> u32 {
    sessions + 1 + dest as u32
}
