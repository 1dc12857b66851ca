//! `dbscope capture info CAP`: what a capture holds — sessions, calls, time span, statements by
//! frequency and total time, the read/write mix, and what could not be captured.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use dbscope_core::{Outcome, RunDir};
use serde::Serialize;

use crate::calls::Protocol;
use crate::calls_file::{self, ReadStats, Record};
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
    /// Sessions seen (connections that reached the server or tried to): distinct session numbers
    /// of the session lines and of the calls.
    pub sessions: u64,
    /// Sessions with calls but no session line (written when a session ends): still open when
    /// the capture stopped or was killed.
    pub sessions_without_end: u64,
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
    /// Lines of the calls file that could not be read (see `calls_file` for where and why).
    pub bad_lines: u64,
    /// What the reader saw of the calls file: lines, bad lines and the first one's place,
    /// whether it ends cut.
    pub calls_file: ReadStats,
    /// No end recorded (`running`) and no process holds the capture open: the proxy was killed.
    pub killed: bool,
    /// Calls recorded as events (the manifest's count), when the capture recorded an end.
    pub events_recorded: Option<u64>,
    /// Why the capture is incomplete or damaged, one sentence each (empty: nothing known).
    pub incomplete: Vec<String>,
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
    // Distinct sessions: from their session lines (written when a session ends) and their calls.
    let mut ids = HashSet::new();
    let mut session_lines = 0u64;
    let read = calls_file::read(&path, |rec| match rec {
        Record::Session(v) => {
            if v["refused_by"] == "proxy" {
                info.proxy_refused += 1;
                return;
            }
            session_lines += 1;
            ids.insert(v["session"].as_u64().unwrap_or(u64::MAX - session_lines));
            if v["ready"] != serde_json::Value::Bool(true) {
                if let Some(e) = v["error"].as_str() {
                    info.refused.push(e.to_string());
                }
            }
        }
        Record::Call(c) => {
            ids.insert(u64::from(c.session));
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
    })?;
    info.sessions = ids.len() as u64;
    info.sessions_without_end = info.sessions.saturating_sub(session_lines);
    info.bad_lines = read.bad_lines;
    info.calls_file = read;
    damage(&mut info, &run, &path);
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

/// What the files show of a capture's end: killed, cut, damaged, calls missing.
fn damage(info: &mut CaptureInfo, run: &RunDir, path: &Path) {
    let st = info.calls_file.clone();
    let mut why = Vec::new();
    if run.manifest.outcome == Outcome::Running {
        match open_elsewhere(path) {
            Some(false) => {
                info.killed = true;
                why.push(
                    "the proxy was killed: no end was recorded and no process has the capture open; sessions still open then have no session line, and calls not yet written (up to 200 ms of them) are missing"
                        .to_string(),
                );
            }
            Some(true) => why.push("the proxy is still capturing: no end recorded yet".into()),
            None => why.push(
                "no end recorded: the proxy is still capturing, or was killed (then the capture is incomplete)"
                    .into(),
            ),
        }
    }
    if st.torn_last_line {
        let (line, offset) = st.last_line.unwrap_or_default();
        why.push(format!(
            "the calls file ends cut inside line {line} (byte {offset}): that record is torn and not read"
        ));
    } else if st.cut {
        let (line, offset) = st.last_line.unwrap_or_default();
        why.push(format!(
            "the calls file ends without the newline of line {line} (byte {offset}): its writer stopped there (that record reads whole)"
        ));
    }
    if let Some(bad) = &st.first_bad {
        let inside = st.bad_inside();
        if inside > 0 {
            why.push(format!(
                "{inside} unreadable line{} inside the calls file, the first at line {} (byte {}): {}",
                if inside == 1 { "" } else { "s" },
                bad.line,
                bad.offset,
                bad.why
            ));
        }
    }
    if run.manifest.outcome != Outcome::Running {
        info.events_recorded = run.manifest.events_written;
        if let Some(events) = run.manifest.events_written {
            if info.calls < events {
                why.push(format!(
                    "the calls file holds {} calls but the capture recorded {} as events: \
                     {} are missing from it (the file lost its end or was damaged)",
                    info.calls,
                    events,
                    events - info.calls
                ));
            }
        }
    }
    info.incomplete = why;
}

/// Whether a process other than this one has `path` open: `None` when that cannot be known
/// (no `/proc`, or a process of the file's owner whose files cannot be listed). Only processes
/// of the file's owner (or root) can be its writer.
fn open_elsewhere(path: &Path) -> Option<bool> {
    use std::os::unix::fs::MetadataExt;
    let target = std::fs::canonicalize(path).ok()?;
    let owner = std::fs::metadata(&target).ok()?.uid();
    let me = std::process::id();
    let mut unsure = false;
    for p in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let uid = p.metadata().map(|m| m.uid()).unwrap_or(owner);
        if pid == me || (uid != owner && uid != 0) {
            continue;
        }
        match std::fs::read_dir(p.path().join("fd")) {
            Ok(fds) => {
                if fds
                    .flatten()
                    .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l == target))
                {
                    return Some(true);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => unsure |= uid == owner,
        }
    }
    (!unsure).then_some(false)
}

/// The text `capture info` prints (the `top` longest statements).
pub fn render(info: &CaptureInfo, top: usize) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let state = match (info.killed, info.outcome.as_str()) {
        (true, _) => "killed: incomplete".to_string(),
        (false, "running") => "running, no end recorded".to_string(),
        (false, o) if !info.incomplete.is_empty() => format!("{o}, but damaged: see below"),
        (false, o) => o.to_string(),
    };
    let _ = writeln!(o, "capture   {}  ({state})", info.dir);
    let _ = writeln!(o, "upstream  {}", info.upstream);
    let _ = writeln!(
        o,
        "sessions  {}{}{}   calls {}   span {:.3} s",
        info.sessions,
        match (info.refused.len(), info.proxy_refused) {
            (0, 0) => String::new(),
            (n, 0) => format!(" ({n} refused by the server)"),
            (0, p) => format!(" ({p} refused by the proxy: no file descriptor left)"),
            (n, p) =>
                format!(" ({n} refused by the server, {p} by the proxy: no file descriptor left)"),
        },
        match info.sessions_without_end {
            0 => String::new(),
            n => format!(" ({n} with no end recorded)"),
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
        "mix read {} ({:.1} %)   write {} ({:.1} %)   transaction control {} ({:.1} %)   other {} ({:.1} %)",
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
    for why in &info.incomplete {
        any = true;
        let _ = writeln!(o, "  {:>8}  {why}", "");
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calls::Call;
    use dbscope_core::manifest::{Manifest, WorkloadInfo};
    use dbscope_core::Recording;

    /// A capture of `calls` calls made by five sessions, one of which ended (its session line
    /// written), as the proxy leaves it; `finished`: an end recorded (else `running`).
    fn capture(dir: &Path, calls: u64, finished: bool) -> Vec<u8> {
        let manifest = Manifest::new(
            "capture",
            WorkloadInfo {
                name: "pg-capture".into(),
                params: Default::default(),
            },
            0,
        );
        let mut rec = Recording::begin(dir, manifest).unwrap();
        let mut text = String::new();
        let mut events = Vec::new();
        for i in 0..calls {
            let c = Call {
                session: (i % 5) as u32,
                seq: i / 5,
                start_ns: 1000 * i,
                end_ns: 1000 * i + 500,
                protocol: Protocol::Simple,
                sql: "SELECT 'déjà vu'".into(),
                statement: None,
                params: Vec::new(),
                formats: Vec::new(),
                tags: vec!["SELECT 1".into()],
                rows: 1,
                error: None,
                skipped: false,
                copy: None,
                txn: Some('I'),
                unfinished: false,
                unknown_statement: false,
                cut: false,
                from_log: false,
            };
            let mut v = serde_json::to_value(&c).unwrap();
            v["type"] = serde_json::json!("call");
            text.push_str(&v.to_string());
            text.push('\n');
            let name = rec.names().intern(&event_name(&c));
            events.push(dbscope_core::Event {
                name,
                start_ns: c.start_ns,
                duration_ns: 500,
                ..Default::default()
            });
        }
        text.push_str(
            r#"{"type":"session","session":0,"connect_ns":0,"client":"local","ready":true,"application_name":"ça"}"#,
        );
        text.push('\n');
        rec.write_block(&events).unwrap();
        std::fs::write(dir.join(CALLS_FILE), &text).unwrap();
        if finished {
            rec.finish(Outcome::Complete, None).unwrap();
        } else {
            std::mem::forget(rec);
        }
        text.into_bytes()
    }

    fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("dbscope-info-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn sessions_are_counted_from_calls_too() {
        let d = tmp("sessions");
        capture(&d, 20, true);
        let i = read(&d).unwrap();
        assert_eq!(i.sessions, 5);
        assert_eq!(i.sessions_without_end, 4);
        assert_eq!(i.calls, 20);
        assert!(i.incomplete.is_empty(), "{:?}", i.incomplete);
        assert!(render(&i, 5).contains("every call was captured whole"));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_killed_capture_says_so_and_is_not_called_whole() {
        let d = tmp("killed");
        capture(&d, 20, false);
        let i = read(&d).unwrap();
        assert_eq!(i.outcome, "running");
        assert!(i.killed, "no process holds the files open");
        let text = render(&i, 5);
        assert!(text.contains("(killed: incomplete)"), "{text}");
        assert!(
            text.contains("sessions  5 (4 with no end recorded)"),
            "{text}"
        );
        assert!(!text.contains("every call was captured whole"), "{text}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_calls_file_cut_in_half_is_not_complete() {
        let d = tmp("half");
        let bytes = capture(&d, 20, true);
        // At a line boundary: nothing in the file itself shows it, the events do.
        let half = bytes[..bytes.len() / 2]
            .iter()
            .rposition(|&b| b == b'\n')
            .unwrap()
            + 1;
        std::fs::write(d.join(CALLS_FILE), &bytes[..half]).unwrap();
        let i = read(&d).unwrap();
        let text = render(&i, 5);
        assert!(i.calls < 20);
        assert!(text.contains("(complete, but damaged"), "{text}");
        assert!(
            text.contains(&format!(
                "holds {} calls but the capture recorded 20",
                i.calls
            )),
            "{text}"
        );
        // Inside a multi-byte character of a line: counted, located, not fatal.
        let e = bytes[..bytes.len() / 2]
            .iter()
            .rposition(|&b| b == 0xc3)
            .unwrap();
        let line_start = bytes[..e].iter().rposition(|&b| b == b'\n').unwrap() + 1;
        let line = bytes[..line_start].iter().filter(|&&b| b == b'\n').count() + 1;
        std::fs::write(d.join(CALLS_FILE), &bytes[..e + 1]).unwrap();
        let i = read(&d).unwrap();
        let text = render(&i, 5);
        assert!(i.calls_file.cut && i.calls_file.torn_last_line);
        assert!(
            text.contains(&format!(
                "ends cut inside line {line} (byte {line_start}): that record is torn"
            )),
            "{text}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_bad_line_in_the_middle_is_located_not_called_a_torn_last_line() {
        let d = tmp("middle");
        let mut bytes = capture(&d, 20, true);
        let second = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
        bytes[second + 3] = b'#';
        std::fs::write(d.join(CALLS_FILE), &bytes).unwrap();
        let i = read(&d).unwrap();
        let text = render(&i, 5);
        assert_eq!(i.bad_lines, 1);
        assert!(
            text.contains(&format!(
                "1 unreadable line inside the calls file, the first at line 2 (byte {second})"
            )),
            "{text}"
        );
        assert!(!text.contains("torn"), "{text}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
