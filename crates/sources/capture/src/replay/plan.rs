//! The capture read back as a replay plan: sessions with their calls, and the commit order.
//!
//! Also what decides, call by call, whether it is replayed and which commits it waits for.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;

use dbscope_core::RunDir;
use serde_json::json;

use crate::calls::{Call, Protocol};
use crate::calls_file::{self, Record};
use crate::fingerprint::class;
use crate::{CaptureError, CALLS_FILE};

/// A captured session with its calls.
pub(super) struct SessionPlan {
    pub(super) id: u32,
    pub(super) connect_ns: u64,
    pub(super) calls: Vec<Call>,
}

/// The capture read back.
pub(super) struct Plan {
    pub(super) sessions: Vec<SessionPlan>,
    pub(super) origin_ns: u64,
    pub(super) span_ns: u64,
    /// Captured end times of the commit points, in order.
    pub(super) commits: Vec<u64>,
    /// (session, seq) → index in `commits`.
    pub(super) commit_index: HashMap<(u32, u64), usize>,
    pub(super) bad_lines: u64,
}

/// A call that ends a transaction (or is one, in autocommit) and changed something.
fn is_commit_point(c: &Call) -> bool {
    c.txn == Some('I')
        && c.error.is_none()
        && !c.skipped
        && matches!(class(&c.sql), "write" | "transaction")
}

/// With `--sync commit`, a call waits for every commit that ended, in the capture, before this
/// instant. For a read, its start: PostgreSQL reads take their snapshot then and never wait for
/// row locks. For anything else, its end: a write that overlapped a commit in the capture may have
/// been waiting for that commit's locks, and issuing it before that commit happens in the replay
/// would take the lock first and deadlock the two sessions against the commit order (the write's
/// session waiting in the replay for the commit, the commit's session waiting for the lock). A
/// session that held a lock at that point in the capture held it in the replay too, so no commit
/// it waits for can need it.
///
/// The capture sees a commit when the proxy reads its command tag, a little after the server
/// released the commit's locks: a write that waited for those locks can have its own tag read
/// first. So a write also waits for commits that ended up to a slack after it
/// ([`ReplayConfig::sync_slack`]).
pub(super) fn sync_bound(c: &Call, slack_ns: u64) -> u64 {
    match class(&c.sql) {
        "read" => c.start_ns,
        _ => c.end_ns + slack_ns,
    }
}

/// See [`sync_bound`].
pub const DEFAULT_SYNC_SLACK: Duration = Duration::from_millis(2);

/// Why a call is not replayed, if it is not.
pub(super) fn not_replayed(c: &Call) -> Option<&'static str> {
    if c.copy.is_some() {
        Some("COPY (data not captured)")
    } else if c.unknown_statement {
        Some("statement prepared before the capture")
    } else if c.skipped {
        Some("not executed in the capture")
    } else if c.protocol == Protocol::Function {
        Some("fast-path function call")
    } else if c.cut {
        Some("text or values cut in the capture")
    } else if c.sql.contains(crate::private::REDACTED_PASSWORD) {
        // The capture kept no role password (issue 27 item 8): nothing to re-send.
        Some("password redacted in the capture")
    } else {
        None
    }
}

pub(super) fn load(dir: &Path) -> Result<Plan, CaptureError> {
    let run = RunDir::open(dir)?;
    if run.manifest.source != "capture" {
        return Err(CaptureError::NotACapture {
            path: dir.to_path_buf(),
            why: format!(
                "a run of source `{}`, not a capture (make one with `dbscope capture proxy`)",
                run.manifest.source
            ),
        });
    }
    let path = dir.join(CALLS_FILE);
    let mut connects: HashMap<u32, (u64, bool)> = HashMap::new();
    let mut calls: BTreeMap<u32, Vec<Call>> = BTreeMap::new();
    let read = calls_file::read(&path, |rec| match rec {
        Record::Session(v) => {
            let id = v["session"].as_u64().unwrap_or(0) as u32;
            let at = v["connect_ns"].as_u64().unwrap_or(0);
            connects.insert(id, (at, v["ready"] == json!(true)));
        }
        Record::Call(c) => calls.entry(c.session).or_default().push(*c),
    })?;
    let bad_lines = read.bad_lines;
    let mut sessions = Vec::new();
    for (id, mut cs) in calls {
        cs.sort_by_key(|c| c.seq);
        // A session whose line is missing (the capture was killed): connect at its first call.
        let (connect_ns, _) = connects
            .get(&id)
            .copied()
            .unwrap_or((cs.first().map_or(0, |c| c.start_ns), true));
        sessions.push(SessionPlan {
            id,
            connect_ns: connect_ns.min(cs.first().map_or(connect_ns, |c| c.start_ns)),
            calls: cs,
        });
    }
    let origin_ns = sessions.iter().map(|s| s.connect_ns).min().unwrap_or(0);
    let last = sessions
        .iter()
        .flat_map(|s| s.calls.iter().map(|c| c.end_ns))
        .max()
        .unwrap_or(origin_ns);
    let first = sessions
        .iter()
        .flat_map(|s| s.calls.iter().map(|c| c.start_ns))
        .min()
        .unwrap_or(origin_ns);
    let mut points: Vec<(u64, u32, u64)> = sessions
        .iter()
        .flat_map(|s| s.calls.iter())
        .filter(|c| is_commit_point(c))
        .map(|c| (c.end_ns, c.session, c.seq))
        .collect();
    points.sort_unstable();
    let commit_index = points
        .iter()
        .enumerate()
        .map(|(i, &(_, s, q))| ((s, q), i))
        .collect();
    Ok(Plan {
        origin_ns,
        span_ns: last.saturating_sub(first),
        commits: points.iter().map(|p| p.0).collect(),
        commit_index,
        sessions,
        bad_lines,
    })
}
