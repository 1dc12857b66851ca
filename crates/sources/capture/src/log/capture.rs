//! Records into a capture: sessions, calls with their statements, parameters and durations,
//! written as the proxy writes its captures.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use chrono::DateTime;
use dbscope_core::manifest::{Manifest, Outcome, WorkloadInfo};
use dbscope_core::{Event, Recording};
use serde_json::json;

use crate::calls::{Call, Protocol};
use crate::proxy::event_name;
use crate::{CaptureError, CALLS_FILE};

use super::options::LogOptions;
use super::records::read_file;

/// What reading the logs found.
#[derive(Debug, Clone, Default)]
pub struct LogSummary {
    /// The capture directory.
    pub dir: PathBuf,
    /// Sessions.
    pub sessions: u32,
    /// Calls.
    pub calls: u64,
    /// Records read.
    pub records: u64,
    /// Lines or records that could not be read (a torn last line, another format).
    pub bad: u64,
}

/// The values of a `parameters: $1 = '42', $2 = NULL` detail, in order.
pub(super) fn parameters(detail: &str) -> Vec<Option<String>> {
    let Some(at) = detail.find("parameters: ") else {
        return Vec::new();
    };
    let s = &detail[at + "parameters: ".len()..];
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        // "$N = "
        let Some(eq) = s[i..].find(" = ") else { break };
        i += eq + 3;
        if s[i..].starts_with("NULL") {
            out.push(None);
            i += 4;
        } else if b.get(i) == Some(&b'\'') {
            let mut v = String::new();
            i += 1;
            while i < b.len() {
                if b[i] == b'\'' {
                    if b.get(i + 1) == Some(&b'\'') {
                        v.push('\'');
                        i += 2;
                        continue;
                    }
                    i += 1;
                    break;
                }
                let ch = s[i..].chars().next().unwrap_or('\u{fffd}');
                v.push(ch);
                i += ch.len_utf8();
            }
            out.push(Some(v));
        } else {
            break;
        }
        match s[i..].find(", $") {
            Some(0) => i += 2,
            _ => break,
        }
    }
    out
}

/// `duration: 0.123 ms  KIND: TEXT` → (ms, KIND, TEXT).
pub(super) fn duration_line(message: &str) -> Option<(f64, &str, &str)> {
    let rest = message.strip_prefix("duration: ")?;
    let (ms, rest) = rest.split_once(" ms")?;
    let ms: f64 = ms.trim().parse().ok()?;
    let rest = rest.trim_start();
    let (kind, text) = rest.split_once(": ")?;
    Some((ms, kind, text))
}

/// One session being rebuilt.
struct Sess {
    id: u32,
    seq: u64,
    connect_ns: i64,
    in_block: bool,
    pending_start: Option<i64>,
    statements: HashMap<String, String>,
    user: String,
    database: String,
    application: String,
    last_ns: i64,
    ended: bool,
}

/// Reads the logs into the capture `out`.
pub fn capture_log(
    files: &[PathBuf],
    out: &Path,
    opts: &LogOptions,
    command_line: Vec<String>,
) -> Result<LogSummary, CaptureError> {
    let mut bad = 0;
    let mut records = Vec::new();
    for f in files {
        records.extend(read_file(f, opts, &mut bad)?);
    }
    records.sort_by_key(|r| r.time_ns);
    let statements_seen = records
        .iter()
        .filter(|r| duration_line(&r.message).is_some())
        .count();
    if statements_seen == 0 {
        let formats = "csvlog (*.csv), jsonlog (*.json) or stderr with log_line_prefix (--prefix, default '%m [%p] %q%u@%d ')";
        return Err(CaptureError::Config(format!(
            "no statement durations found in {} ({} records read, {bad} unreadable): the logs must be \
             written with log_min_duration_statement = 0 (and log_connections, log_disconnections), \
             as {formats}",
            files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            records.len()
        )));
    }
    let origin = records.first().map_or(0, |r| r.time_ns);
    // Exact for any two i64 times (a log can hold a far-off date): no overflow, nothing negative.
    let rel = |t: i64| u64::try_from(i128::from(t) - i128::from(origin)).unwrap_or(0);
    let mut sessions: BTreeMap<String, Sess> = BTreeMap::new();
    let mut finished: Vec<Sess> = Vec::new();
    let mut calls: Vec<Call> = Vec::new();
    let mut next_id = 0u32;
    for r in &records {
        if r.session.is_empty() {
            continue;
        }
        if r.message.starts_with("connection received") {
            continue;
        }
        // A process id (the stderr key) is reused by a later connection: a new session.
        if r.message.starts_with("connection authorized") {
            if let Some(old) = sessions.remove(&r.session) {
                finished.push(old);
            }
        }
        let s = sessions.entry(r.session.clone()).or_insert_with(|| {
            next_id += 1;
            Sess {
                id: next_id - 1,
                seq: 0,
                connect_ns: r.time_ns,
                in_block: false,
                pending_start: None,
                statements: HashMap::new(),
                user: r.user.clone(),
                database: r.database.clone(),
                application: r.application.clone(),
                last_ns: r.time_ns,
                ended: false,
            }
        });
        s.last_ns = r.time_ns;
        if s.application.is_empty() {
            s.application = r.application.clone();
        }
        if let Some(kv) = r.message.strip_prefix("connection authorized: ") {
            // user=bob database=bench application_name=psql (what a stderr prefix may not say)
            for pair in kv.split(' ') {
                match pair.split_once('=') {
                    Some(("user", v)) => s.user = v.to_string(),
                    Some(("database", v)) => s.database = v.to_string(),
                    Some(("application_name", v)) => s.application = v.to_string(),
                    _ => {}
                }
            }
            continue;
        }
        if let Some(db) = &opts.database {
            if !s.database.is_empty() && &s.database != db {
                continue;
            }
        }
        if r.message.starts_with("disconnection:") {
            s.ended = true;
            continue;
        }
        if r.message.starts_with("duration: ") && duration_line(&r.message).is_none() {
            // A torn line (the log was cut while being written).
            bad += 1;
            continue;
        }
        if let Some((ms, kind, text)) = duration_line(&r.message) {
            let start = r.time_ns.saturating_sub((ms * 1e6) as i64);
            let mut words = kind.split(' ');
            let verb = words.next().unwrap_or("");
            let name = words.next().unwrap_or("").split('/').next().unwrap_or("");
            let name = if name == "<unnamed>" { "" } else { name };
            let (protocol, statement) = match verb {
                "statement" => (Protocol::Simple, None),
                "parse" => {
                    s.statements.insert(name.to_string(), text.to_string());
                    s.pending_start = Some(s.pending_start.map_or(start, |p| p.min(start)));
                    continue;
                }
                "bind" => {
                    s.pending_start = Some(s.pending_start.map_or(start, |p| p.min(start)));
                    continue;
                }
                "execute" => (
                    Protocol::Extended,
                    (!name.is_empty()).then(|| name.to_string()),
                ),
                _ => continue,
            };
            let start = match protocol {
                Protocol::Extended => s.pending_start.take().map_or(start, |p| p.min(start)),
                _ => start,
            };
            calls.push(log_call(
                s,
                protocol,
                text,
                statement,
                parameters(&r.detail),
                start,
                r.time_ns,
                None,
                &rel,
            ));
        } else if matches!(r.severity.as_str(), "ERROR" | "FATAL") && !r.statement.is_empty() {
            let sql = r.statement.clone();
            s.pending_start = None;
            calls.push(log_call(
                s,
                Protocol::Simple,
                &sql,
                None,
                Vec::new(),
                r.time_ns,
                r.time_ns,
                Some((r.state.clone(), r.message.clone())),
                &rel,
            ));
        }
    }
    // Sessions that ran no statement (or are of another database) are left out.
    let all: Vec<Sess> = finished
        .into_iter()
        .chain(sessions.into_values())
        .filter(|s| s.seq > 0)
        .filter(|s| opts.database.as_ref().is_none_or(|db| &s.database == db))
        .collect();
    let kept: std::collections::HashSet<u32> = all.iter().map(|s| s.id).collect();
    calls.retain(|c| kept.contains(&c.session));
    write_capture(
        files,
        out,
        opts,
        command_line,
        origin,
        &all,
        &calls,
        records.len() as u64,
        bad,
        &rel,
    )
}

#[allow(clippy::too_many_arguments)]
fn log_call(
    s: &mut Sess,
    protocol: Protocol,
    sql: &str,
    statement: Option<String>,
    params: Vec<Option<String>>,
    start: i64,
    end: i64,
    error: Option<(String, String)>,
    rel: &dyn Fn(i64) -> u64,
) -> Call {
    // The transaction state after the call, inferred: the log does not say.
    let first = sql
        .trim_start()
        .split(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or("")
        .to_ascii_uppercase();
    match first.as_str() {
        "BEGIN" | "START" => s.in_block = error.is_none(),
        "COMMIT" | "END" | "ROLLBACK" | "ABORT" => s.in_block = false,
        _ => {}
    }
    let txn = if s.in_block {
        if error.is_some() {
            'E'
        } else {
            'T'
        }
    } else {
        'I'
    };
    let seq = s.seq;
    s.seq += 1;
    Call {
        session: s.id,
        seq,
        start_ns: rel(start),
        end_ns: rel(end),
        protocol,
        // A role's password is never written down (issue 27 item 8).
        sql: crate::private::redact_password(sql).unwrap_or_else(|| sql.to_string()),
        statement,
        params,
        formats: Vec::new(),
        tags: Vec::new(),
        rows: 0,
        error,
        skipped: false,
        copy: None,
        txn: Some(txn),
        unfinished: false,
        unknown_statement: false,
        cut: false,
        from_log: true,
    }
}

#[allow(clippy::too_many_arguments)]
fn write_capture(
    files: &[PathBuf],
    out: &Path,
    opts: &LogOptions,
    command_line: Vec<String>,
    origin: i64,
    sessions: &[Sess],
    calls: &[Call],
    records: u64,
    bad: u64,
    rel: &dyn Fn(i64) -> u64,
) -> Result<LogSummary, CaptureError> {
    let mut params = BTreeMap::new();
    params.insert(
        "logs".to_string(),
        json!(files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()),
    );
    if let Some(db) = &opts.database {
        params.insert("database".to_string(), json!(db));
    }
    params.insert("sessions".to_string(), json!(sessions.len()));
    let mut manifest = Manifest::new(
        "capture",
        WorkloadInfo {
            name: "pg-log-capture".into(),
            params,
        },
        0,
    );
    manifest.command_line = command_line;
    manifest.clock_origin_unix_ns = origin;
    manifest.started_utc = DateTime::from_timestamp_nanos(origin);
    let mut rec = Recording::begin(out, manifest)?;
    crate::private::private_dir(out).map_err(|e| CaptureError::io(out, e))?;
    let names = rec.names().clone();
    let mut text = String::new();
    let mut by_session: Vec<&Sess> = sessions.iter().collect();
    by_session.sort_by_key(|s| s.id);
    for s in &by_session {
        let mut v = json!({"type": "session", "session": s.id, "connect_ns": rel(s.connect_ns),
            "user": s.user, "database": s.database, "ready": true});
        if !s.application.is_empty() {
            v["application_name"] = json!(s.application);
        }
        if s.ended {
            v["disconnect_ns"] = json!(rel(s.last_ns));
        }
        text.push_str(&v.to_string());
        text.push('\n');
    }
    let mut events = Vec::with_capacity(calls.len());
    for c in calls {
        let mut v = serde_json::to_value(c).unwrap_or_default();
        v["type"] = json!("call");
        text.push_str(&v.to_string());
        text.push('\n');
        let outcome = match &c.error {
            Some((code, _)) => names.intern_outcome(&format!("pg:{code}")).max(1),
            None => 0,
        };
        events.push(Event {
            session: c.session,
            name: names.intern(&event_name(c)),
            start_ns: c.start_ns,
            duration_ns: c.end_ns.saturating_sub(c.start_ns),
            outcome,
            ..Event::default()
        });
    }
    let path = out.join(CALLS_FILE);
    crate::private::create_private(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
        .map_err(|e| CaptureError::io(&path, e))?;
    for block in events.chunks(4096) {
        rec.write_block(block)?;
    }
    let ended = calls
        .iter()
        .map(|c| c.end_ns)
        .max()
        .map(|e| DateTime::from_timestamp_nanos(origin.saturating_add_unsigned(e)));
    let detail = (bad > 0).then(|| format!("{bad} log lines or records could not be read"));
    rec.finish_at(Outcome::Complete, detail, ended)?;
    Ok(LogSummary {
        dir: out.to_path_buf(),
        sessions: sessions.len() as u32,
        calls: calls.len() as u64,
        records,
        bad,
    })
}
