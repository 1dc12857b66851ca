//! What every call of a forwarded session goes through: which messages the tracker reads, the
//! session's state shared by both directions, the calls' event names and their recording.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use dbscope_core::{NameId, Recorder};

use crate::calls::{Call, Tracker};
use crate::fingerprint::fingerprint_into;

use super::shared::Base;

/// What both directions of a session share: its calls tracked, their events recorded.
pub(super) struct Shared {
    pub(super) tracker: Tracker,
    pub(super) rec: Recorder,
    pub(super) names: Names,
}

/// A session's event names by fingerprint: the statements it ran last, so a call's name is found
/// by comparing its fingerprint (written into one reused buffer) with a few strings, not by an
/// allocation and a look-up in the run's shared name table per call.
#[derive(Default)]
pub(super) struct Names {
    recent: Vec<(String, NameId)>,
    scratch: String,
}

/// Statements a session's name cache keeps (a session cycling through more looks the rest up in
/// the run's table).
const RECENT_NAMES: usize = 16;

impl Names {
    /// The name of call `c`, interned in `rec`'s table.
    fn of(&mut self, c: &Call, rec: &Recorder) -> NameId {
        event_name_into(c, &mut self.scratch);
        if let Some(&(_, id)) = self.recent.iter().find(|(f, _)| *f == self.scratch) {
            return id;
        }
        let id = rec.name(&self.scratch);
        if self.recent.len() == RECENT_NAMES {
            self.recent.remove(0);
        }
        self.recent.push((self.scratch.clone(), id));
        id
    }
}

/// Which client messages the tracker reads the body of.
pub(super) fn client_keeps(kind: u8) -> bool {
    matches!(kind, b'Q' | b'P' | b'B' | b'E' | b'F')
}

/// Which server messages the tracker reads the body of (and `BackendKeyData`, for the
/// backend's pid).
pub(super) fn server_keeps(kind: u8) -> bool {
    matches!(kind, b'C' | b'E' | b'Z' | b'K')
}

/// The backend's process id from a `BackendKeyData` body (pid, then the secret key).
pub(super) fn backend_pid(body: &[u8]) -> Option<u32> {
    let b: [u8; 4] = body.get(..4)?.try_into().ok()?;
    u32::try_from(i32::from_be_bytes(b)).ok().filter(|&p| p > 0)
}

/// Records the finished calls' events and hands the calls to the calls file (under the
/// session's lock).
pub(super) fn take_done(s: &mut Shared, base: &Base) {
    if s.tracker.done.is_empty() {
        return;
    }
    let done = &mut s.tracker.done;
    for c in done.iter() {
        let name = s.names.of(c, &s.rec);
        match (&c.error, c.skipped, c.unfinished) {
            (_, true, _) => s.rec.error(name, c.start_ns, c.end_ns, "not executed"),
            (_, _, true) => s.rec.error(name, c.start_ns, c.end_ns, "unfinished"),
            (Some((code, _)), _, _) => {
                s.rec
                    .error(name, c.start_ns, c.end_ns, &format!("pg:{code}"))
            }
            (None, _, _) => s.rec.ok(name, c.start_ns, c.end_ns, c.rows),
        }
    }
    base.live
        .calls
        .fetch_add(done.len() as u64, Ordering::Relaxed);
    let errors = done.iter().filter(|c| c.error.is_some()).count();
    base.live.errors.fetch_add(errors as u64, Ordering::Relaxed);
    base.calls.push_calls(done);
}

/// A call's event name: its statement's fingerprint (or what it was when there is no text).
pub fn event_name(c: &Call) -> String {
    let mut name = String::new();
    event_name_into(c, &mut name);
    name
}

/// [`event_name`], written into `out` (cleared first).
fn event_name_into(c: &Call, out: &mut String) {
    if c.unknown_statement {
        out.clear();
        match &c.statement {
            Some(s) => {
                let _ = write!(out, "(statement {s} prepared before the capture)");
            }
            None => out.push_str("(statement prepared before the capture)"),
        }
        return;
    }
    fingerprint_into(&c.sql, out);
    if out.is_empty() {
        out.push_str("(empty query)");
    }
}
