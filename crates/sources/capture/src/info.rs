//! `dbscope capture info CAP`: what a capture holds — sessions, calls, time span, statements by
//! frequency and total time, the read/write mix, and what could not be captured.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;

use dbscope_core::RunDir;
use serde::Serialize;

use crate::calls::{Call, Protocol};
use crate::fingerprint::class;
use crate::proxy::event_name;
use crate::{CaptureError, CALLS_FILE};

/// One statement (fingerprint) of a capture.
#[derive(Debug, Clone, Serialize)]
pub struct StatementInfo {
    /// The fingerprint.
    pub statement: String,
    /// `read`, `write`, `transaction` or `other`.
    pub class: String,
    /// Calls.
    pub calls: u64,
    /// Total time of its calls, ms.
    pub total_ms: f64,
    /// Mean time, ms.
    pub mean_ms: f64,
    /// Rows.
    pub rows: u64,
    /// Calls that ended in an error.
    pub errors: u64,
}

/// What a capture holds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CaptureInfo {
    /// The directory.
    pub dir: String,
    /// How the capture ended (`complete`, `running` for one still going or killed, …).
    pub outcome: String,
    /// The server it was taken from (without password).
    pub upstream: String,
    /// Sessions seen (connections that reached the server or tried to).
    pub sessions: u64,
    /// Sessions the server refused (authentication, missing database…), with the reasons.
    pub refused: Vec<String>,
    /// Clients the proxy itself refused (it had no file descriptor left for them).
    pub proxy_refused: u64,
    /// Calls.
    pub calls: u64,
    /// Calls by protocol: simple, extended, function.
    pub by_protocol: HashMap<String, u64>,
    /// Calls by class: read, write, transaction, other.
    pub by_class: HashMap<String, u64>,
    /// Seconds from the first call's start to the last call's end.
    pub span_s: f64,
    /// Calls that ended in an error.
    pub errors: u64,
    /// Executions the server skipped (an earlier message of their batch failed).
    pub skipped: u64,
    /// Calls without an answer when their session ended or the capture stopped.
    pub unfinished: u64,
    /// `COPY … FROM STDIN` / `TO STDOUT` calls: their data is not captured, so they replay without it.
    pub copy_calls: u64,
    /// Executions of statements prepared before the capture began (their text is unknown).
    pub unknown_statements: u64,
    /// Calls whose text or values were cut (longer than the proxy keeps).
    pub cut: u64,
    /// Lines of the calls file that could not be read (a torn last line after a crash).
    pub bad_lines: u64,
    /// Calls read from a server log (`capture log`): their rows and command tags are unknown.
    pub from_log: u64,
    /// Statements by total time, longest first.
    pub statements: Vec<StatementInfo>,
}

/// Reads a capture directory.
pub fn read(dir: &Path) -> Result<CaptureInfo, CaptureError> {
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
    let f = std::fs::File::open(&path).map_err(|e| CaptureError::io(&path, e))?;
    let mut info = CaptureInfo {
        dir: dir.display().to_string(),
        outcome: format!("{:?}", run.manifest.outcome).to_lowercase(),
        upstream: run
            .manifest
            .target
            .as_ref()
            .map(|t| t.location.clone())
            .unwrap_or_default(),
        ..CaptureInfo::default()
    };
    let mut by_stmt: HashMap<String, StatementInfo> = HashMap::new();
    let (mut first, mut last) = (u64::MAX, 0u64);
    for line in BufReader::new(f).lines() {
        let line = line.map_err(|e| CaptureError::io(&path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
            info.bad_lines += 1;
            continue;
        };
        match v["type"].as_str() {
            Some("session") => {
                if v["refused_by"] == "proxy" {
                    info.proxy_refused += 1;
                    continue;
                }
                info.sessions += 1;
                if v["ready"] != serde_json::Value::Bool(true) {
                    if let Some(e) = v["error"].as_str() {
                        info.refused.push(e.to_string());
                    }
                }
            }
            Some("call") => {
                let Ok(c) = serde_json::from_value::<Call>(v) else {
                    info.bad_lines += 1;
                    continue;
                };
                info.calls += 1;
                first = first.min(c.start_ns);
                last = last.max(c.end_ns);
                let protocol = match c.protocol {
                    Protocol::Simple => "simple",
                    Protocol::Extended => "extended",
                    Protocol::Function => "function",
                };
                *info.by_protocol.entry(protocol.into()).or_default() += 1;
                let cls = class(&c.sql);
                *info.by_class.entry(cls.into()).or_default() += 1;
                info.errors += u64::from(c.error.is_some() && !c.skipped);
                info.skipped += u64::from(c.skipped);
                info.unfinished += u64::from(c.unfinished);
                info.copy_calls += u64::from(c.copy.is_some());
                info.unknown_statements += u64::from(c.unknown_statement);
                info.cut += u64::from(c.cut);
                info.from_log += u64::from(c.from_log);
                let name = event_name(&c);
                let s = by_stmt
                    .entry(name.clone())
                    .or_insert_with(|| StatementInfo {
                        statement: name,
                        class: cls.into(),
                        calls: 0,
                        total_ms: 0.0,
                        mean_ms: 0.0,
                        rows: 0,
                        errors: 0,
                    });
                s.calls += 1;
                s.total_ms += c.end_ns.saturating_sub(c.start_ns) as f64 / 1e6;
                s.rows += c.rows;
                s.errors += u64::from(c.error.is_some());
            }
            _ => info.bad_lines += 1,
        }
    }
    if info.calls > 0 {
        info.span_s = last.saturating_sub(first) as f64 / 1e9;
    }
    let mut stmts: Vec<StatementInfo> = by_stmt.into_values().collect();
    for s in &mut stmts {
        s.mean_ms = s.total_ms / s.calls as f64;
    }
    stmts.sort_by(|a, b| {
        b.total_ms
            .total_cmp(&a.total_ms)
            .then(a.statement.cmp(&b.statement))
    });
    info.statements = stmts;
    Ok(info)
}

/// The text `capture info` prints (the `top` longest statements).
pub fn render(info: &CaptureInfo, top: usize) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(o, "capture   {}  ({})", info.dir, info.outcome);
    let _ = writeln!(o, "upstream  {}", info.upstream);
    let _ = writeln!(
        o,
        "sessions  {}{}   calls {}   span {:.3} s",
        info.sessions,
        match (info.refused.len(), info.proxy_refused) {
            (0, 0) => String::new(),
            (n, 0) => format!(" ({n} refused by the server)"),
            (0, p) => format!(" ({p} refused by the proxy: no file descriptor left)"),
            (n, p) =>
                format!(" ({n} refused by the server, {p} by the proxy: no file descriptor left)"),
        },
        info.calls,
        info.span_s
    );
    let pct = |n: u64| {
        if info.calls == 0 {
            0.0
        } else {
            100.0 * n as f64 / info.calls as f64
        }
    };
    let get = |m: &HashMap<String, u64>, k: &str| m.get(k).copied().unwrap_or(0);
    let _ = writeln!(
        o,
        "mix       read {} ({:.1} %)   write {} ({:.1} %)   transaction control {} ({:.1} %)   other {} ({:.1} %)",
        get(&info.by_class, "read"),
        pct(get(&info.by_class, "read")),
        get(&info.by_class, "write"),
        pct(get(&info.by_class, "write")),
        get(&info.by_class, "transaction"),
        pct(get(&info.by_class, "transaction")),
        get(&info.by_class, "other"),
        pct(get(&info.by_class, "other")),
    );
    let _ = writeln!(
        o,
        "protocol  simple {}   extended {}   function {}",
        get(&info.by_protocol, "simple"),
        get(&info.by_protocol, "extended"),
        get(&info.by_protocol, "function")
    );
    let _ = writeln!(
        o,
        "errors    {}   not executed (earlier error in the batch) {}",
        info.errors, info.skipped
    );
    let _ = writeln!(o);
    let _ = writeln!(o, "not captured or not replayable as recorded:");
    let mut any = false;
    let mut note = |n: u64, what: &str| {
        if n > 0 {
            any = true;
            let _ = writeln!(o, "  {n:>8}  {what}");
        }
    };
    note(
        info.copy_calls,
        "COPY calls: their data is not captured (replayed without it, i.e. not replayed)",
    );
    note(
        info.unknown_statements,
        "executions of statements prepared before the capture began (text unknown)",
    );
    note(
        info.unfinished,
        "calls without an answer when their session or the capture ended",
    );
    note(
        info.cut,
        "calls whose text or values exceeded 16 MiB and were cut",
    );
    note(
        info.from_log,
        "calls read from a server log: rows and command tags not known (a replay compares errors only)",
    );
    note(
        info.bad_lines,
        "unreadable lines in the calls file (a torn last line after a crash)",
    );
    if !any {
        let _ = writeln!(o, "  nothing: every call was captured whole");
    }
    for r in info.refused.iter().take(5) {
        let _ = writeln!(o, "  refused session: {r}");
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "statements by total time (top {} of {}):",
        top.min(info.statements.len()),
        info.statements.len()
    );
    let _ = writeln!(
        o,
        "  {:>9} {:>11} {:>9} {:>10} {:>6}  {:<11} statement",
        "calls", "total ms", "mean ms", "rows", "errors", "class"
    );
    for s in info.statements.iter().take(top) {
        let _ = writeln!(
            o,
            "  {:>9} {:>11.1} {:>9.3} {:>10} {:>6}  {:<11} {}",
            s.calls, s.total_ms, s.mean_ms, s.rows, s.errors, s.class, s.statement
        );
    }
    o
}
