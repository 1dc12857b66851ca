//! One replay session: its calls issued on schedule, recorded, and compared with the capture's.
//!
//! A call waits for its time (scaled by `--speed`) and, with `--sync commit`, for the commits that
//! preceded it in the capture; its answer becomes an event and is checked for divergence.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use dbscope_core::{Recorder, RunClock, StopSignal};
use serde_json::json;

use super::config::{ReplayConfig, Speed, EXAMPLES, SYNC_TIMEOUT, SYNC_TIMEOUT_IN_TRANSACTION};
use super::order::CommitOrder;
use super::plan::{not_replayed, sync_bound, Plan, SessionPlan};
use super::tally::{Tally, LOST_IN_TRANSACTION, NO_CONNECTION};
use super::{connect_with, Answer, ReplayCall, WireConn, WireError};
use crate::calls::{Call, Protocol};
use crate::proxy::event_name;
use crate::watch::Backends;

/// How a replayed call differs from the captured one, if it does.
fn divergence(c: &Call, a: &Answer) -> Option<&'static str> {
    let verb = |t: &str| t.split(' ').next().unwrap_or("").to_string();
    match (&c.error, &a.error) {
        (None, Some(_)) => Some("error in the replay only"),
        (Some(_), None) => Some("error in the capture only"),
        (Some((x, _)), Some((y, _))) if x != y => Some("different error"),
        (Some(_), Some(_)) => None,
        // A log does not say what a statement answered.
        (None, None) if c.from_log => None,
        (None, None) => {
            let (cv, av): (Vec<String>, Vec<String>) = (
                c.tags.iter().map(|t| verb(t)).collect(),
                a.tags.iter().map(|t| verb(t)).collect(),
            );
            if cv != av {
                Some("different command tags")
            } else if c.rows != a.rows {
                Some("different row counts")
            } else {
                None
            }
        }
    }
}

/// Decodes a captured parameter for sending: text as it is, a binary one from its `\x` hex.
fn param_bytes(v: &Option<String>, binary: bool) -> Option<Vec<u8>> {
    let v = v.as_ref()?;
    if !binary {
        return Some(v.as_bytes().to_vec());
    }
    let decoded = v.strip_prefix("\\x").and_then(|hex| {
        if hex.len() % 2 != 0 {
            return None;
        }
        hex.as_bytes()
            .chunks(2)
            .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
            .collect::<Option<Vec<u8>>>()
    });
    // Not hex (a capture edited by hand): sent as it is; the server's answer will say.
    Some(decoded.unwrap_or_else(|| v.as_bytes().to_vec()))
}

/// What a session thread needs.
pub(super) struct Ctx<'a> {
    pub(super) cfg: &'a ReplayConfig,
    pub(super) plan: &'a Plan,
    pub(super) clock: RunClock,
    pub(super) order: &'a CommitOrder,
    pub(super) stop: &'a StopSignal,
    /// The replay's time 0 on the run clock.
    pub(super) t0: u64,
    /// Told each connection's backend (when the target is watched).
    pub(super) backends: Option<Arc<dyn Backends>>,
}

impl Ctx<'_> {
    /// Closes the session's connection, if it has one, and tells the watcher.
    fn close(&self, conn: &mut Option<WireConn>) {
        let pid = conn.take().and_then(|c| c.backend_pid());
        if let (Some(pid), Some(b)) = (pid, &self.backends) {
            b.ended(pid);
        }
    }
}

impl Ctx<'_> {
    /// When the captured instant `at` falls in the replay (run clock ns), `None` at full speed.
    fn scheduled(&self, at: u64) -> Option<u64> {
        match self.cfg.speed {
            Speed::Max => None,
            Speed::Factor(f) => {
                Some(self.t0 + (at.saturating_sub(self.plan.origin_ns) as f64 / f) as u64)
            }
        }
    }

    /// Sleeps until run-clock time `t` (or the stop).
    fn sleep_until(&self, t: u64) {
        loop {
            let now = self.clock.now_ns();
            if now >= t || self.stop.is_set() {
                return;
            }
            std::thread::sleep(Duration::from_nanos((t - now).min(50_000_000)));
        }
    }
}

/// The call left its session inside a transaction in the capture (the transaction goes on).
fn inside_transaction(c: &Call) -> bool {
    matches!(c.txn, Some('T' | 'E'))
}

pub(super) fn replay_session(s: &SessionPlan, ctx: &Ctx<'_>, mut rec: Recorder) -> Tally {
    let mut t = Tally::default();
    // Commit points of this session (call number, index), so a call never waits for one of its
    // own session's later commits, and all are released even when not reached.
    let own_commits: Vec<(u64, usize)> = s
        .calls
        .iter()
        .filter_map(|c| {
            ctx.plan
                .commit_index
                .get(&(c.session, c.seq))
                .map(|&i| (c.seq, i))
        })
        .collect();
    let mine: Vec<usize> = own_commits.iter().map(|&(_, i)| i).collect();
    if let Some(at) = ctx.scheduled(s.connect_ns) {
        ctx.sleep_until(at);
    }
    let app = format!("dbscope-replay/{}", s.id);
    let mut conn: Option<WireConn> = None;
    // The session's transaction state after its last call.
    let mut in_transaction = false;
    // The connection was lost inside a captured transaction: its remaining calls are not
    // replayed (why), up to the call that ended it, so no call runs outside its transaction.
    let mut skipping: Option<&'static str> = None;
    let mut prepared: HashSet<String> = HashSet::new();
    let connect = |t: &mut Tally| match connect_with(&ctx.cfg.target, &app, None) {
        Ok((c, _)) => {
            if let (Some(pid), Some(b)) = (c.backend_pid(), &ctx.backends) {
                b.connected(s.id, pid, None);
            }
            Some(c)
        }
        Err(why) => {
            t.connect_errors.push(format!("session {}: {}", s.id, why));
            None
        }
    };
    conn = conn.or_else(|| connect(&mut t));
    for c in &s.calls {
        if ctx.stop.is_set() {
            break;
        }
        let point = ctx.plan.commit_index.get(&(c.session, c.seq)).copied();
        if let Some(why) = skipping {
            t.lost_call(c, why);
            if let Some(i) = point {
                ctx.order.mark(i);
            }
            if !inside_transaction(c) {
                skipping = None;
            }
            continue;
        }
        if let Some(why) = not_replayed(c) {
            *t.not_replayed.entry(why).or_default() += 1;
            if let Some(i) = point {
                ctx.order.mark(i);
            }
            continue;
        }
        let scheduled = ctx.scheduled(c.start_ns);
        if let Some(at) = scheduled {
            ctx.sleep_until(at);
        }
        let mut held = false;
        if ctx.cfg.sync_commit {
            let slack_ns = u64::try_from(ctx.cfg.sync_slack.as_nanos()).unwrap_or(u64::MAX);
            // Never the session's own commit at or after this call (it cannot have happened).
            let own_next = ctx
                .plan
                .commit_index
                .get(&(c.session, c.seq))
                .copied()
                .or_else(|| {
                    own_commits
                        .iter()
                        .copied()
                        .find(|&(q, _)| q > c.seq)
                        .map(|(_, i)| i)
                })
                .unwrap_or(usize::MAX);
            let k = ctx
                .plan
                .commits
                .partition_point(|&end| end < sync_bound(c, slack_ns))
                .min(own_next);
            let reached = ctx.order.reached();
            if reached < k {
                held = true;
                t.sync_waits += 1;
                let limit = match in_transaction {
                    true => SYNC_TIMEOUT_IN_TRANSACTION,
                    false => SYNC_TIMEOUT,
                };
                if !ctx.order.wait_for(k, ctx.stop, limit) {
                    t.sync_timeouts += 1;
                }
            }
        }
        if conn.as_ref().is_none_or(WireConn::is_broken) {
            prepared.clear();
            ctx.close(&mut conn);
            conn = connect(&mut t);
        }
        let name = rec.name(&event_name(c));
        let Some(db) = conn.as_mut() else {
            t.lost_call(c, NO_CONNECTION);
            if let Some(i) = point {
                ctx.order.mark(i);
            }
            if inside_transaction(c) {
                skipping = Some(NO_CONNECTION);
            }
            continue;
        };
        let binary: Vec<bool> = (0..c.params.len())
            .map(|i| c.formats.get(i).copied().unwrap_or(0) == 1)
            .collect();
        let params: Vec<Option<Vec<u8>>> = c
            .params
            .iter()
            .zip(&binary)
            .map(|(v, &b)| param_bytes(v, b))
            .collect();
        let statement = c.statement.clone().unwrap_or_default();
        let call = match c.protocol {
            Protocol::Simple => ReplayCall::Simple(&c.sql),
            _ => ReplayCall::Extended {
                statement: &statement,
                parse: (statement.is_empty() || !prepared.contains(&statement))
                    .then_some(c.sql.as_str()),
                params: &params,
                formats: &c.formats,
            },
        };
        let start = rec.now();
        let answer = db.replay_call(&call);
        let end = rec.now();
        if let Some(at) = scheduled {
            t.lags_ns.push(start.saturating_sub(at));
            if !held {
                t.free_lags_ns.push(start.saturating_sub(at));
            }
        }
        t.replayed += 1;
        match answer {
            Ok(a) => {
                in_transaction = matches!(a.txn, Some('T' | 'E'));
                if !statement.is_empty() && a.error.is_none() {
                    prepared.insert(statement.clone());
                }
                match &a.error {
                    Some((code, _)) => {
                        let outcome = rec.outcome(&format!("pg:{code}"));
                        rec.push(name, start, end, scheduled, outcome, 0);
                    }
                    None => rec.push(name, start, end, scheduled, 0, a.rows),
                }
                if let Some(kind) = divergence(c, &a) {
                    *t.diverged.entry(kind).or_default() += 1;
                    let v = json!({"kind": kind, "session": c.session, "seq": c.seq,
                        "sql": c.sql, "captured": {"tags": c.tags, "rows": c.rows, "error": c.error},
                        "replayed": {"tags": a.tags, "rows": a.rows, "error": a.error}});
                    let ex = t.examples.entry(kind).or_default();
                    if ex.len() < EXAMPLES {
                        ex.push(v.clone());
                    }
                    t.divergences.push(v);
                }
            }
            Err(e) => {
                let class = match &e {
                    WireError::Db { code, .. } => format!("pg:{code}"),
                    _ => "connection".to_string(),
                };
                rec.error(name, start, end, &class);
                t.lost_connections += 1;
                let kind = "connection lost";
                *t.diverged.entry(kind).or_default() += 1;
                let v = json!({"kind": kind, "session": c.session, "seq": c.seq,
                    "sql": c.sql, "captured": {"tags": c.tags, "rows": c.rows, "error": c.error},
                    "replayed": {"error": [class, e.to_string()]}});
                let ex = t.examples.entry(kind).or_default();
                if ex.len() < EXAMPLES {
                    ex.push(v.clone());
                }
                t.divergences.push(v);
                // Whatever the server did with the session's open transaction, it is gone: the
                // next call reconnects, and the rest of this one is not replayed.
                ctx.close(&mut conn);
                in_transaction = false;
                if inside_transaction(c) {
                    skipping = Some(LOST_IN_TRANSACTION);
                }
            }
        }
        if let Some(i) = point {
            ctx.order.mark(i);
        }
    }
    for i in mine {
        ctx.order.mark(i);
    }
    ctx.close(&mut conn);
    rec.flush();
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_parameters_decode_from_hex() {
        assert_eq!(
            param_bytes(&Some("\\x00ff10".into()), true),
            Some(vec![0, 255, 16])
        );
        assert_eq!(
            param_bytes(&Some("\\x0".into()), true),
            Some(b"\\x0".to_vec())
        );
        assert_eq!(
            param_bytes(&Some("abc".into()), false),
            Some(b"abc".to_vec())
        );
        assert_eq!(param_bytes(&None, false), None);
    }
}
