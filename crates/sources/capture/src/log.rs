//! `dbscope capture log FILE… --out CAP`: a capture read from PostgreSQL's own server logs, written
//! with `log_min_duration_statement = 0`, `log_connections` and `log_disconnections` (as pgreplay
//! reads them), in csvlog, jsonlog (15+) or stderr format with a known `log_line_prefix`.
//!
//! Each `duration: … statement:` line is a simple-protocol call, each `duration: … execute …:` line
//! an extended-protocol call with the values of its `parameters:` detail (the `parse` and `bind`
//! lines before it move its start earlier); an `ERROR` with its statement is a failed call. The log
//! says when a statement ended (to the millisecond in csvlog and stderr) and how long it took (to
//! the microsecond), so a call starts at its end minus its duration. It does not say how many rows
//! a statement touched nor its command tag, nor the transaction state: calls from a log are marked
//! `from_log` (a replay then compares errors only), and the state is inferred from `BEGIN`/`COMMIT`.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDateTime};
use dbscope_core::manifest::{Manifest, Outcome, WorkloadInfo};
use dbscope_core::{Event, Recording};
use serde_json::json;

use crate::calls::{Call, Protocol};
use crate::proxy::event_name;
use crate::{CaptureError, CALLS_FILE};

/// The log formats read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// `log_destination = csvlog`.
    Csv,
    /// `log_destination = jsonlog` (PostgreSQL 15+).
    Json,
    /// `log_destination = stderr`, lines beginning with `log_line_prefix`.
    Stderr,
}

/// The `log_line_prefix` assumed for stderr logs unless given: PostgreSQL's own default.
pub const DEFAULT_PREFIX: &str = "%m [%p] ";

/// How to read the logs.
#[derive(Debug, Clone)]
pub struct LogOptions {
    /// The format; `None`: by file name (`.csv`, `.json`), else stderr.
    pub format: Option<LogFormat>,
    /// `log_line_prefix` of stderr logs (escapes `%m %t %n %p %c %l %u %d %a %h %r %q %%`).
    pub prefix: String,
    /// Only sessions of this database.
    pub database: Option<String>,
}

/// One log record, whatever the format.
#[derive(Debug, Default, Clone, PartialEq)]
struct Record {
    /// Unix ns.
    time_ns: i64,
    session: String,
    user: String,
    database: String,
    application: String,
    severity: String,
    state: String,
    message: String,
    detail: String,
    statement: String,
}

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

fn format_of(path: &Path, opts: &LogOptions) -> LogFormat {
    opts.format.unwrap_or_else(|| {
        let name = path.to_string_lossy().to_ascii_lowercase();
        if name.ends_with(".csv") {
            LogFormat::Csv
        } else if name.ends_with(".json") {
            LogFormat::Json
        } else {
            LogFormat::Stderr
        }
    })
}

/// A log timestamp (`2024-05-01 12:00:00.123 UTC`, `… +02`, `…` without zone taken as UTC) in Unix ns.
fn parse_time(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return t.timestamp_nanos_opt();
    }
    // "YYYY-MM-DD HH:MM:SS[.fff] ZONE": a zone name (UTC, GMT) or a numeric offset.
    let mut parts = s.splitn(3, ' ');
    let (date, time, zone) = (parts.next()?, parts.next()?, parts.next().unwrap_or("UTC"));
    let naive =
        NaiveDateTime::parse_from_str(&format!("{date} {time}"), "%Y-%m-%d %H:%M:%S%.f").ok()?;
    let base = naive.and_utc().timestamp_nanos_opt()?;
    let offset_s: i64 = match zone.as_bytes().first() {
        Some(b'+') | Some(b'-') => {
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            let digits: String = zone[1..].chars().filter(char::is_ascii_digit).collect();
            let (h, m) = match digits.len() {
                1 | 2 => (digits.parse::<i64>().ok()?, 0),
                4 => (digits[..2].parse().ok()?, digits[2..].parse().ok()?),
                _ => return None,
            };
            sign * (h * 3600 + m * 60)
        }
        _ => 0,
    };
    Some(base - offset_s * 1_000_000_000)
}

/// Reads every record of one file.
fn read_file(path: &Path, opts: &LogOptions, bad: &mut u64) -> Result<Vec<Record>, CaptureError> {
    let f = std::fs::File::open(path).map_err(|e| CaptureError::io(path, e))?;
    match format_of(path, opts) {
        LogFormat::Csv => read_csv(f, bad),
        LogFormat::Json => read_json(f, path, bad),
        LogFormat::Stderr => read_stderr(f, path, &opts.prefix, bad),
    }
}

/// Whether a file's last byte is not a newline: its last line or record was cut while being
/// written (PostgreSQL ends every record of every log format with one).
fn ends_cut(f: &std::fs::File) -> bool {
    use std::os::unix::fs::FileExt;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut last = [b'\n'];
    len > 0 && f.read_exact_at(&mut last, len - 1).is_ok() && last[0] != b'\n'
}

fn read_csv(f: std::fs::File, bad: &mut u64) -> Result<Vec<Record>, CaptureError> {
    let cut = ends_cut(&f);
    let mut r = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(f);
    let mut out = Vec::new();
    // Whether the last row read became a record: a cut last row must not (issue 27: `alter system
    // res` was read as a whole statement).
    let mut last_kept = false;
    for row in r.records() {
        last_kept = false;
        let Ok(row) = row else {
            *bad += 1;
            continue;
        };
        let get = |i: usize| row.get(i).unwrap_or("").to_string();
        let Some(time_ns) = parse_time(&get(0)) else {
            *bad += 1;
            continue;
        };
        // PostgreSQL's csvlog columns: log_time, user_name, database_name, process_id,
        // connection_from, session_id, session_line_num, command_tag, session_start_time,
        // virtual_transaction_id, transaction_id, error_severity, sql_state_code, message,
        // detail, hint, internal_query, internal_query_pos, context, query, query_pos, location,
        // application_name, …
        if row.len() < 14 {
            *bad += 1;
            continue;
        }
        out.push(Record {
            time_ns,
            user: get(1),
            database: get(2),
            session: get(5),
            severity: get(11),
            state: get(12),
            message: get(13),
            detail: get(14),
            statement: get(19),
            application: get(22),
        });
        last_kept = true;
    }
    if cut && last_kept {
        out.pop();
        *bad += 1;
    }
    Ok(out)
}

fn read_json(f: std::fs::File, path: &Path, bad: &mut u64) -> Result<Vec<Record>, CaptureError> {
    let mut out = Vec::new();
    for line in BufReader::new(f).split(b'\n') {
        let line = line.map_err(|e| CaptureError::io(path, e))?;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line) else {
            *bad += 1;
            continue;
        };
        let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
        let Some(time_ns) = parse_time(&s("timestamp")) else {
            *bad += 1;
            continue;
        };
        out.push(Record {
            time_ns,
            user: s("user"),
            database: s("dbname"),
            session: s("session_id"),
            severity: s("error_severity"),
            state: s("state_code"),
            message: s("message"),
            detail: s("detail"),
            statement: s("statement"),
            application: s("application_name"),
        });
    }
    Ok(out)
}

/// What a `log_line_prefix` escape matched.
#[derive(Default)]
struct Prefix {
    time: Option<String>,
    epoch: Option<String>,
    pid: String,
    session: String,
    user: String,
    database: String,
    application: String,
}

/// Matches `line` against the prefix template; returns the fields and the rest of the line.
fn match_prefix<'a>(template: &str, line: &'a str) -> Option<(Prefix, &'a str)> {
    let t: Vec<char> = template.chars().collect();
    let mut rest = line;
    let mut p = Prefix::default();
    let mut i = 0;
    while i < t.len() {
        if t[i] != '%' {
            rest = rest.strip_prefix(t[i])?;
            i += 1;
            continue;
        }
        let esc = *t.get(i + 1)?;
        i += 2;
        // The text an escape matches runs to the next literal character of the template (or,
        // for the timestamps, is a fixed number of words).
        let next = t[i..]
            .iter()
            .position(|&c| c == '%')
            .map_or(&t[i..], |k| &t[i..i + k])
            .first()
            .copied();
        let take_words = |rest: &mut &'a str, n: usize| -> Option<&'a str> {
            let mut end = 0;
            for _ in 0..n {
                let from = end + rest[end..].len() - rest[end..].trim_start().len();
                let w = rest[from..].find(' ').map_or(rest.len(), |k| from + k);
                end = w;
            }
            let (a, b) = rest.split_at(end);
            *rest = b;
            Some(a)
        };
        let take_until = |rest: &mut &'a str| -> Option<&'a str> {
            let end = match next {
                Some(c) => rest.find(c)?,
                None => rest.len(),
            };
            let (a, b) = rest.split_at(end);
            *rest = b;
            Some(a)
        };
        match esc {
            'm' | 't' => p.time = Some(take_words(&mut rest, 3)?.to_string()),
            'n' => p.epoch = Some(take_until(&mut rest)?.to_string()),
            'p' => p.pid = take_until(&mut rest)?.to_string(),
            'c' => p.session = take_until(&mut rest)?.to_string(),
            'u' => p.user = take_until(&mut rest)?.to_string(),
            'd' => p.database = take_until(&mut rest)?.to_string(),
            'a' => p.application = take_until(&mut rest)?.to_string(),
            'l' | 'h' | 'r' | 'v' | 'x' | 'e' | 'b' | 'i' | 's' | 'Q' | 'P' => {
                take_until(&mut rest)?;
            }
            // What follows %q is only written for session processes: optional.
            'q' => {
                let tail: String = t[i..].iter().collect();
                return match match_prefix(&tail, rest) {
                    Some((q, r)) => Some((merge(p, q), r)),
                    None => Some((p, rest)),
                };
            }
            '%' => rest = rest.strip_prefix('%')?,
            _ => return None,
        }
    }
    Some((p, rest))
}

fn merge(mut a: Prefix, b: Prefix) -> Prefix {
    let pick = |x: String, y: String| if y.is_empty() { x } else { y };
    a.time = b.time.or(a.time);
    a.epoch = b.epoch.or(a.epoch);
    a.pid = pick(a.pid, b.pid);
    a.session = pick(a.session, b.session);
    a.user = pick(a.user, b.user);
    a.database = pick(a.database, b.database);
    a.application = pick(a.application, b.application);
    a
}

const SEVERITIES: [&str; 11] = [
    "LOG",
    "ERROR",
    "FATAL",
    "PANIC",
    "WARNING",
    "NOTICE",
    "INFO",
    "DEBUG",
    "DETAIL",
    "HINT",
    "STATEMENT",
];

fn read_stderr(
    f: impl Read,
    path: &Path,
    prefix: &str,
    bad: &mut u64,
) -> Result<Vec<Record>, CaptureError> {
    let mut out: Vec<Record> = Vec::new();
    // The record lines continue (a statement over several lines: continuation lines begin with a
    // tab), and which field they continue.
    let mut field: Option<&'static str> = None;
    let mut reader = BufReader::new(f);
    let mut buf = Vec::new();
    // Whether the line just read made or changed the last record, and whether it was cut (the
    // file ends without a newline): a record with a cut line is not whole (issue 27: an
    // `execute` lost its parameters, a statement its end), so it is dropped and counted.
    // A cut line that cannot be read may have been the last record's DETAIL or STATEMENT line:
    // that record is dropped and counted too.
    let mut touched = false;
    let mut unreadable = false;
    let mut cut = false;
    loop {
        if cut && (touched || unreadable) && !out.is_empty() {
            out.pop();
            *bad += 1;
        }
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| CaptureError::io(path, e))?;
        if n == 0 {
            break;
        }
        cut = buf.last() != Some(&b'\n');
        touched = false;
        unreadable = false;
        let line = String::from_utf8_lossy(buf.strip_suffix(b"\n").unwrap_or(&buf));
        let line = line.trim_end_matches('\r');
        if let Some(cont) = line.strip_prefix('\t') {
            if let (Some(r), Some(fld)) = (out.last_mut(), field) {
                touched = true;
                let target = match fld {
                    "message" => &mut r.message,
                    "detail" => &mut r.detail,
                    _ => &mut r.statement,
                };
                target.push('\n');
                target.push_str(cont);
            }
            continue;
        }
        let parsed = match_prefix(prefix, line).and_then(|(p, rest)| {
            let (sev, text) = rest.split_once(":  ")?;
            SEVERITIES.contains(&sev).then_some((p, sev, text))
        });
        let Some((p, sev, text)) = parsed else {
            if !line.trim().is_empty() {
                *bad += 1;
                unreadable = true;
            }
            field = None;
            continue;
        };
        let time_ns = p.time.as_deref().and_then(parse_time).or_else(|| {
            p.epoch
                .as_deref()
                .and_then(|e| e.parse::<f64>().ok())
                .map(|s| (s * 1e9) as i64)
        });
        let session = match (p.session.is_empty(), p.pid.is_empty()) {
            (false, _) => p.session.clone(),
            (true, false) => p.pid.clone(),
            _ => String::new(),
        };
        match sev {
            // Details of the record before, from the same process.
            "DETAIL" | "STATEMENT" | "HINT" => {
                if let Some(r) = out.last_mut().filter(|r| r.session == session) {
                    touched = true;
                    match sev {
                        "DETAIL" => {
                            r.detail = text.to_string();
                            field = Some("detail");
                        }
                        "STATEMENT" => {
                            r.statement = text.to_string();
                            field = Some("statement");
                        }
                        _ => field = None,
                    }
                }
                continue;
            }
            _ => {}
        }
        let Some(time_ns) = time_ns else {
            *bad += 1;
            continue;
        };
        out.push(Record {
            time_ns,
            session,
            user: p.user,
            database: p.database,
            application: p.application,
            severity: sev.to_string(),
            message: text.to_string(),
            ..Record::default()
        });
        touched = true;
        field = Some("message");
    }
    Ok(out)
}

/// The values of a `parameters: $1 = '42', $2 = NULL` detail, in order.
fn parameters(detail: &str) -> Vec<Option<String>> {
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
fn duration_line(message: &str) -> Option<(f64, &str, &str)> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_and_durations() {
        assert_eq!(
            parameters("parameters: $1 = '-17', $2 = NULL, $3 = 'it''s, $4 = x'"),
            vec![Some("-17".into()), None, Some("it's, $4 = x".into())]
        );
        assert_eq!(
            parameters("no parameters here"),
            Vec::<Option<String>>::new()
        );
        assert_eq!(
            duration_line("duration: 0.123 ms  execute S_1: SELECT 1"),
            Some((0.123, "execute S_1", "SELECT 1"))
        );
        assert_eq!(
            duration_line("duration: 1.5 ms  statement: BEGIN;"),
            Some((1.5, "statement", "BEGIN;"))
        );
        assert_eq!(duration_line("connection authorized: user=x"), None);
    }

    #[test]
    fn times() {
        assert_eq!(
            parse_time("2024-05-01 12:00:00.123 UTC"),
            Some(1_714_564_800_123_000_000)
        );
        assert_eq!(
            parse_time("2024-05-01 14:00:00.123 +02"),
            Some(1_714_564_800_123_000_000)
        );
        assert_eq!(
            parse_time("2024-05-01T12:00:00.123+00:00"),
            Some(1_714_564_800_123_000_000)
        );
        assert_eq!(parse_time("yesterday"), None);
    }

    /// Found by the `log` fuzz target (issue 27): a log whose times lie centuries apart, or whose
    /// duration is absurd, made the time arithmetic overflow (a panic; in release a wrapped time).
    #[test]
    fn far_apart_times_and_absurd_durations_do_not_overflow() {
        let dir = std::env::temp_dir().join(format!("dbscope-log-far-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("pg.log");
        std::fs::write(
            &log,
            "1720-05-01 12:00:00.300 UTC [42] bob@db1 LOG:  duration: 0.100 ms  statement: SELECT 1\n\
             2024-05-01 12:00:00.200 UTC [42] bob@db1 LOG:  duration: 0.500 ms  statement: SELECT 2\n\
             2024-05-01 12:00:00.300 UTC [42] bob@db1 LOG:  duration: 99999999999999999999 ms  statement: SELECT 3\n",
        )
        .unwrap();
        let opts = LogOptions {
            format: None,
            prefix: "%m [%p] %q%u@%d ".into(),
            database: None,
        };
        let out = dir.join("cap");
        let summary = capture_log(&[log], &out, &opts, vec![]).unwrap();
        assert_eq!(summary.calls, 3);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A stderr log with the default prefix: a statement over two lines, parameters in a DETAIL
    /// line, an error with its STATEMENT line, a line of another process, and a torn last line.
    #[test]
    fn stderr_records() {
        let log = "2024-05-01 12:00:00.100 UTC [42] bob@db1 LOG:  connection authorized: user=bob database=db1\n\
                   2024-05-01 12:00:00.200 UTC [42] bob@db1 LOG:  duration: 0.500 ms  statement: SELECT 1\n\
                   \tFROM t\n\
                   2024-05-01 12:00:00.300 UTC [42] bob@db1 LOG:  duration: 0.100 ms  execute <unnamed>: UPDATE t SET x = $1\n\
                   2024-05-01 12:00:00.300 UTC [42] bob@db1 DETAIL:  parameters: $1 = '7'\n\
                   2024-05-01 12:00:00.400 UTC [42] bob@db1 ERROR:  division by zero\n\
                   2024-05-01 12:00:00.400 UTC [42] bob@db1 STATEMENT:  SELECT 1/0\n\
                   2024-05-01 12:00:00.500 UTC [7] LOG:  checkpoint starting: time\n\
                   2024-05-01 12:00:00.600 UTC [42] bob@db1 LOG:  duration: 0.1";
        let mut bad = 0;
        let r = read_stderr(
            log.as_bytes(),
            Path::new("x.log"),
            "%m [%p] %q%u@%d ",
            &mut bad,
        )
        .unwrap();
        // The torn last line is counted, not read as a record (issue 27).
        assert_eq!(bad, 1);
        assert_eq!(r.len(), 5);
        assert_eq!(
            r[1].message,
            "duration: 0.500 ms  statement: SELECT 1\nFROM t"
        );
        assert_eq!(
            (
                r[1].user.as_str(),
                r[1].database.as_str(),
                r[1].session.as_str()
            ),
            ("bob", "db1", "42")
        );
        assert_eq!(r[2].detail, "parameters: $1 = '7'");
        assert_eq!(
            (r[3].severity.as_str(), r[3].statement.as_str()),
            ("ERROR", "SELECT 1/0")
        );
        assert_eq!(r[4].user, "", "%q: no user for a non-session process");
    }

    const STDERR_LOG: &str = "2024-05-01 12:00:00.200 UTC [42] bob@db1 LOG:  duration: 0.500 ms  statement: SELECT 1\n\
        2024-05-01 12:00:00.300 UTC [42] bob@db1 LOG:  duration: 0.100 ms  execute <unnamed>: UPDATE t SET x = $1\n\
        2024-05-01 12:00:00.300 UTC [42] bob@db1 DETAIL:  parameters: $1 = '7'\n\
        2024-05-01 12:00:00.400 UTC [42] bob@db1 LOG:  duration: 0.200 ms  statement: alter system reset all\n\
        \tand more\n";

    /// Issue 27: a stderr log cut at any byte of its last record (an `execute` and its
    /// parameters, a statement over two lines) reads every whole record and counts the cut one.
    #[test]
    fn issue_27_a_stderr_log_cut_anywhere_in_a_record_counts_it() {
        let read = |text: &[u8]| {
            let mut bad = 0;
            let r = read_stderr(text, Path::new("x.log"), "%m [%p] %q%u@%d ", &mut bad).unwrap();
            (r, bad)
        };
        let whole = STDERR_LOG.as_bytes();
        let (all, bad) = read(whole);
        assert_eq!((all.len(), bad), (3, 0));
        assert_eq!(
            all[2].message,
            "duration: 0.200 ms  statement: alter system reset all\nand more"
        );
        // Where each record starts: a cut after it leaves the records before whole.
        let starts: Vec<usize> = [0, 1, 3]
            .iter()
            .map(|&line| {
                whole
                    .split_inclusive(|&b| b == b'\n')
                    .take(line)
                    .map(<[u8]>::len)
                    .sum()
            })
            .collect();
        for cut in 1..whole.len() {
            let (r, bad) = read(&whole[..cut]);
            if whole[cut - 1] == b'\n' {
                // Cut at a line end: no line is torn (a record may end early: that is no damage
                // a reader can see).
                assert_eq!(bad, 0, "cut at {cut}");
                continue;
            }
            // The records begun before the cut: the cut one is never read, the others are read
            // whole or counted (the one before a cut line that cannot be read is dropped too).
            let begun = starts.iter().filter(|&&s| s < cut).count();
            assert!(r.len() < begun, "cut at {cut}: {r:?}");
            assert_eq!(r[..], all[..r.len()], "cut at {cut}");
            assert!(
                bad >= 1 && r.len() as u64 + bad >= begun as u64,
                "cut at {cut}: {bad}"
            );
        }
    }

    /// Issue 27: the same for csvlog, cut at every byte of its last record (a quoted statement).
    #[test]
    fn issue_27_a_csvlog_cut_anywhere_in_its_last_record_counts_it() {
        let row = |t: &str, sql: &str| {
            format!(
                "{t},bob,db1,42,[local],6630a2f0.2a,1,SELECT,2024-05-01 12:00:00 UTC,3/4,0,LOG,00000,\
                 \"duration: 0.100 ms  statement: {sql}\",,,,,,,,,psql,client backend,,0\n"
            )
        };
        let first = row("2024-05-01 12:00:00.100 UTC", "SELECT 1");
        let last = row("2024-05-01 12:00:00.200 UTC", "alter system reset all");
        let whole = format!("{first}{last}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.csv");
        let read = |text: &str| {
            std::fs::write(&path, text).unwrap();
            let mut bad = 0;
            let r = read_csv(std::fs::File::open(&path).unwrap(), &mut bad).unwrap();
            (r, bad)
        };
        let (all, bad) = read(&whole);
        assert_eq!((all.len(), bad), (2, 0));
        for cut in first.len() + 1..whole.len() {
            let (r, bad) = read(&whole[..cut]);
            assert_eq!(r, all[..1], "cut at {cut}");
            assert_eq!(bad, 1, "cut at {cut}");
        }
    }
}
