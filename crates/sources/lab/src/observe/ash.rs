//! Active-session sampling (Oracle's ASH, for PostgreSQL): a thread with its own connection reads
//! `pg_stat_activity` for the run's backends at a fixed rate and appends what each was doing —
//! state, wait event, query id, and the client operation in flight — to `samples.jsonl`. A dead
//! connection is reopened and the gap written down.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dbscope_core::observe::{JsonLines, Sample, SampleGap, SampleLine};
use dbscope_core::RunClock;

use dbscope_db::{Param, Session, Target};

use super::probe::SessionProbe;

/// What the sampler did, for the end snapshot.
#[derive(Clone, Debug, Default)]
pub struct SamplerReport {
    /// Sampling ticks that read `pg_stat_activity`.
    pub ticks: u64,
    /// Backend samples written.
    pub samples: u64,
    /// Stretches without samples (connection lost, query failed).
    pub gaps: u64,
    /// Their total length in seconds.
    pub gap_s: f64,
    /// Why sampling stopped early or never started, if it did.
    pub error: Option<String>,
    /// Backend readings the observer's role was not allowed to see (`pg_stat_activity` shows
    /// another user's session as `<insufficient privilege>` without `pg_read_all_stats`): not
    /// written as samples.
    pub denied: u64,
    /// The observer's role, as the server names it (for the message about `denied`).
    pub role: Option<String>,
}

/// What `pg_stat_activity` shows in place of the query of a session the reader may not see.
const INSUFFICIENT_PRIVILEGE: &str = "<insufficient privilege>";

/// What the sampler thread needs.
pub struct SamplerSpec {
    /// Samples per second.
    pub hz: f64,
    /// The sampler connection's own `application_name`.
    pub label: String,
    /// PostgreSQL's `server_version_num` (query_id needs 14).
    pub version_num: u32,
    /// The run's clock.
    pub clock: RunClock,
    /// Each session's operation in flight.
    pub sessions: Arc<SessionProbe>,
    /// Set when the run's sessions are done.
    pub stop: Arc<AtomicBool>,
}

/// Samples until `spec.stop` is set, appending to `out`.
pub fn run(target: &dyn Target, spec: SamplerSpec, mut out: JsonLines) -> SamplerReport {
    let mut rep = SamplerReport::default();
    let header = SampleLine::Header {
        hz: spec.hz,
        run_id: spec.sessions.run_id().to_string(),
    };
    if let Err(e) = out.append(&[header]) {
        rep.error = Some(format!("writing samples: {e}"));
        return rep;
    }
    let query_id = if spec.version_num >= 140000 {
        "query_id"
    } else {
        "NULL::bigint"
    };
    // The run's backends: named `dbscope/<run id>/<session>`, or given by pid (a capture's or a
    // replay's sessions), which the filter says afresh each tick as sessions come and go.
    let filter_sql = spec.sessions.backend_filter(false).sql;
    let sql = format!(
        "SELECT split_part(application_name, '/', 3), state, wait_event_type, wait_event, {query_id}, \
         left(query, 40), pid, query = '{INSUFFICIENT_PRIVILEGE}' AND state IS NULL \
         FROM pg_stat_activity WHERE {filter_sql}"
    );
    let period = Duration::from_secs_f64(1.0 / spec.hz);
    let mut conn: Option<Box<dyn Session>> = None;
    // Start of the current gap and why it began.
    let mut gap: Option<(u64, String)> = None;
    let mut next = Instant::now();
    let mut first = true;
    while !spec.stop.load(Ordering::Relaxed) {
        if conn.is_none() {
            match target.connect().and_then(|mut s| {
                s.set_label(&spec.label)?;
                Ok(s)
            }) {
                Ok(mut s) => {
                    if rep.role.is_none() {
                        rep.role = s
                            .query_rows("SELECT current_user", &[])
                            .ok()
                            .and_then(|r| r.into_iter().next()?.into_iter().next()?);
                    }
                    conn = Some(s);
                }
                Err(e) if first => {
                    rep.error = Some(format!("the sampler cannot connect: {}", e.message));
                    return rep;
                }
                Err(e) => {
                    gap.get_or_insert((spec.clock.now_ns(), e.message));
                }
            }
        }
        first = false;
        if let Some(s) = conn.as_mut() {
            let t0 = spec.clock.now_ns();
            let param = spec.sessions.backend_filter(false).param;
            match s.query_rows(&sql, &[Param::Text(param)]) {
                Ok(rows) => {
                    let t = t0 + (spec.clock.now_ns() - t0) / 2;
                    let mut lines = Vec::with_capacity(rows.len() + 2);
                    if let Some((from, reason)) = gap.take() {
                        rep.gaps += 1;
                        rep.gap_s += (t0 - from) as f64 / 1e9;
                        lines.push(SampleLine::Gap(SampleGap {
                            from_ns: from,
                            to_ns: t0,
                            reason,
                        }));
                    }
                    let denied = |r: &Vec<Option<String>>| {
                        r.get(7).is_some_and(|d| d.as_deref() == Some("t"))
                    };
                    lines.push(SampleLine::Tick {
                        t_ns: t,
                        seen: rows.iter().filter(|r| !denied(r)).count() as u32,
                    });
                    for r in rows {
                        let pid = r.get(6).cloned().flatten().and_then(|p| p.parse().ok());
                        if denied(&r) {
                            rep.denied += 1;
                            continue;
                        }
                        let Some(session) = spec.sessions.session_of(pid, r[0].as_deref()) else {
                            continue;
                        };
                        let op = spec.sessions.current_op(session);
                        let mut r = r.into_iter().skip(1);
                        let mut next_text = || r.next().flatten();
                        lines.push(SampleLine::Sample(Sample {
                            t_ns: t,
                            session,
                            state: next_text().unwrap_or_default(),
                            wait_class: next_text(),
                            wait_event: next_text(),
                            query_id: next_text().and_then(|q| q.parse().ok()).filter(|&q| q != 0),
                            query: next_text(),
                            op,
                            pid,
                        }));
                        rep.samples += 1;
                    }
                    rep.ticks += 1;
                    if let Err(e) = out.append(&lines) {
                        rep.error = Some(format!("writing samples: {e}"));
                        return rep;
                    }
                }
                Err(e) => {
                    gap.get_or_insert((t0, e.message.clone()));
                    if e.connection_lost {
                        conn = None;
                    }
                }
            }
        }
        next += period;
        let now = Instant::now();
        if next < now {
            // Behind (a slow reconnect): skip the missed ticks rather than burst.
            next = now;
        }
        while !spec.stop.load(Ordering::Relaxed) {
            let left = next.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }
    if let Some((from, reason)) = gap.take() {
        let to = spec.clock.now_ns();
        rep.gaps += 1;
        rep.gap_s += (to - from) as f64 / 1e9;
        let _ = out.append(&[SampleLine::Gap(SampleGap {
            from_ns: from,
            to_ns: to,
            reason,
        })]);
    }
    rep
}
