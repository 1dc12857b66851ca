//! A server log's records, whatever its format (csvlog, jsonlog, stderr with a `log_line_prefix`),
//! each record whole or counted as unreadable, a record cut by the end of the file included.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use chrono::{DateTime, NaiveDateTime};

use crate::CaptureError;

use super::options::{format_of, LogFormat, LogOptions};

/// One log record, whatever the format.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Record {
    /// Unix ns.
    pub(super) time_ns: i64,
    pub(super) session: String,
    pub(super) user: String,
    pub(super) database: String,
    pub(super) application: String,
    pub(super) severity: String,
    pub(super) state: String,
    pub(super) message: String,
    pub(super) detail: String,
    pub(super) statement: String,
}

/// A log timestamp (`2024-05-01 12:00:00.123 UTC`, `… +02`, `…` without zone taken as UTC) in Unix ns.
pub(super) fn parse_time(s: &str) -> Option<i64> {
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
pub(super) fn read_file(
    path: &Path,
    opts: &LogOptions,
    bad: &mut u64,
) -> Result<Vec<Record>, CaptureError> {
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

pub(super) fn read_csv(f: std::fs::File, bad: &mut u64) -> Result<Vec<Record>, CaptureError> {
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

pub(super) fn read_stderr(
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
