//! `trace import`: 10046 traces into an ordinary run directory, so `report`, `export` and `compare`
//! work on them unchanged.
//!
//! Each wait becomes an event named after the wait event (`log file sync`), each db call an event
//! named after its kind (`PARSE`, `EXEC`, `FETCH`, `CLOSE`, `UNMAP`, or the LOB keyword such as
//! `LOBWRITE`), and each `ERROR`/`PARSE ERROR` line a zero-length event of that name whose outcome is
//! `ora-NNNNN`. Sessions are numbered in order of appearance (one per `SESSION ID` per file). Start
//! and duration are in ns; the start is the end (`tim`, anchored to the `***` wall-clock lines) minus
//! the duration; a record without a wall-clock time (waits before 11g have no `tim`; records before a
//! file's first `***` line have no anchor) takes the end of the previous record of its session. When
//! no record at all is anchored, the raw `tim` clock is used instead of the wall clock. Rows are `r=` for calls.
//!
//! As in the profile, a call or wait that began before its session's first timestamp (the call that
//! switched tracing on, a trace started mid-call) is clipped to it: its event starts at that
//! timestamp and lasts what of it lies after, so the run's clock origin is the trace's first
//! timestamp (where the first wait began, when a session's first line is a WAIT: it counts whole),
//! not a time before tracing began. The part left out is `clipped_us` in its attributes.
//!
//! A wait's `obj#` and its three parameters (values, and their names when the trace gives them:
//! `file#=4 block#=123 blocks=1`, not `p1=`) are the event's [`EventParams`], which `export` writes
//! as columns.
//!
//! Attributes that the event format has no field for go in `trace-attrs.jsonl` beside the events: one
//! JSON object per event, in the order the events were written, with `i` (event index), `file`,
//! `line`, `cursor`, `dep`, `sqlid`, `hv`, `clipped_us`, and for waits `obj`, `params` (`name=value …`)
//! and `in_call`, for calls `c_us`, `p`, `cr`, `cu`, `mis`. The statements are listed in `trace-statements.jsonl`.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use dbscope_core::{Event, EventParams, Manifest, NameTable, Outcome, Recording, WorkloadInfo};
use serde_json::json;

use crate::error::TraceReadError;
use crate::line::CallKind;
use crate::model::{AccountedCall, AccountedWait, Tables, TraceError};
use crate::reader::{Options, Reader};
use crate::sink::Sink;

/// Name of the side file with per-event attributes.
pub const ATTRS_FILE: &str = "trace-attrs.jsonl";
/// Name of the side file listing the statements.
pub const STATEMENTS_FILE: &str = "trace-statements.jsonl";
const BLOCK: usize = 4096;

/// Errors of an import.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// Reading a trace failed.
    #[error(transparent)]
    Read(#[from] TraceReadError),
    /// Writing the run failed.
    #[error(transparent)]
    Run(#[from] dbscope_core::Error),
    /// Writing a side file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Standard input in a temporary file when `-` is among `paths` and it is not a regular file (a
/// pipe cannot be read twice); `None` otherwise.
fn spool_stdin(paths: &[&Path]) -> Result<Option<tempfile::NamedTempFile>, ImportError> {
    let stdin = Path::new("/dev/stdin");
    if !paths.iter().any(|p| p.as_os_str() == "-") || stdin.metadata().is_ok_and(|m| m.is_file()) {
        return Ok(None);
    }
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ImportError::Io { path, source }
    };
    let mut t = tempfile::Builder::new()
        .prefix("dbscope-stdin-")
        .suffix(".trc")
        .tempfile()
        .map_err(io_err(&std::env::temp_dir()))?;
    std::io::copy(&mut std::io::stdin().lock(), t.as_file_mut()).map_err(io_err(t.path()))?;
    Ok(Some(t))
}

/// What an import wrote.
#[derive(Clone, Debug, Default)]
pub struct ImportSummary {
    /// The run directory.
    pub dir: PathBuf,
    /// Events written.
    pub events: u64,
    /// Sessions.
    pub sessions: usize,
    /// Warnings (malformed lines).
    pub warning_count: u64,
    /// The first warnings as `file:line: message`.
    pub warnings: Vec<String>,
    /// The files read, with what was recognised in each.
    pub files: Vec<crate::model::FileInfo>,
}

/// Pass 1: the earliest start (clipped to its session's window), to place the clock origin: on the
/// wall clock when any record is anchored to a `***` timestamp, else on the raw `tim` clock.
#[derive(Default)]
struct Earliest {
    min_wall_us: Option<i64>,
    min_tim_us: Option<i64>,
}

fn min_start(m: &mut Option<i64>, end: Option<i64>, dur: u64) {
    if let Some(e) = end {
        let s = e.saturating_sub(dur as i64);
        *m = Some(m.map_or(s, |m| m.min(s)));
    }
}

impl Sink for Earliest {
    fn call(&mut self, _t: &Tables, c: &AccountedCall) {
        min_start(&mut self.min_wall_us, c.wall_end_us, c.window_e());
        min_start(&mut self.min_tim_us, c.tim.map(|t| t as i64), c.window_e());
    }
    fn wait(&mut self, _t: &Tables, w: &AccountedWait) {
        min_start(&mut self.min_wall_us, w.wall_end_us, w.ela - w.clipped);
        min_start(
            &mut self.min_tim_us,
            w.tim.map(|t| t as i64),
            w.ela - w.clipped,
        );
    }
}

struct Writer {
    origin_us: i64,
    /// No record is anchored to the wall clock: place events on the raw `tim` clock.
    tim_clock: bool,
    names: NameTable,
    events: Recording,
    attrs: BufWriter<File>,
    attrs_path: PathBuf,
    buf: Vec<Event>,
    /// The parameters of the events in `buf` (one each).
    params: Vec<EventParams>,
    written: u64,
    last_end: HashMap<u32, i64>,
    max_end_us: i64,
    error: Option<ImportError>,
}

impl Writer {
    #[allow(clippy::too_many_arguments)] // one event's fields; a struct would only rename them
    fn push(
        &mut self,
        session: u32,
        name: &str,
        end: Option<i64>,
        dur_us: u64,
        outcome: u16,
        rows: u64,
        params: EventParams,
        attrs: serde_json::Value,
    ) {
        if self.error.is_some() {
            return;
        }
        let end = end
            .or_else(|| self.last_end.get(&session).copied())
            .unwrap_or(self.origin_us);
        self.last_end.insert(session, end);
        self.max_end_us = self.max_end_us.max(end);
        let start = end
            .saturating_sub(dur_us as i64)
            .saturating_sub(self.origin_us)
            .max(0) as u64;
        let ev = Event {
            session,
            name: self.names.intern(name),
            start_ns: start.saturating_mul(1000),
            duration_ns: dur_us.saturating_mul(1000),
            intended_start_ns: None,
            outcome,
            flags: 0,
            rows: rows.min(u32::MAX as u64) as u32,
        };
        let mut a = attrs;
        a["i"] = json!(self.written);
        if let Err(source) = serde_json::to_writer(&mut self.attrs, &a)
            .map_err(std::io::Error::from)
            .and_then(|_| self.attrs.write_all(b"\n"))
        {
            self.error = Some(ImportError::Io {
                path: self.attrs_path.clone(),
                source,
            });
            return;
        }
        self.written += 1;
        self.buf.push(ev);
        self.params.push(params);
        if self.buf.len() >= BLOCK {
            self.flush();
        }
    }

    /// The end of a record on the run's clock; None (take the session's previous end) when it has
    /// no time on that clock, e.g. records before a file's first `***` timestamp.
    fn end(&self, wall: Option<i64>, tim: Option<u64>) -> Option<i64> {
        if self.tim_clock {
            tim.map(|t| t as i64)
        } else {
            wall
        }
    }

    /// A wait's `obj#` and parameters as the event's parameters: a value that is no integer of 64
    /// signed bits is left out (it stays in `trace-attrs.jsonl`); the name is kept unless it is
    /// just `pN` in place N (the trace named nothing).
    fn params_of(&self, w: &AccountedWait) -> EventParams {
        let mut p = EventParams {
            obj: w.obj,
            ..EventParams::default()
        };
        for (i, (name, value)) in w.params.iter().take(3).enumerate() {
            p.p[i] = value.parse().ok();
            if p.p[i].is_some() && *name != format!("p{}", i + 1) {
                p.p_names[i] = self.names.intern(name);
            }
        }
        p
    }

    fn flush(&mut self) {
        if self.error.is_none() && !self.buf.is_empty() {
            if let Err(e) = self.events.write_block_with_params(&self.buf, &self.params) {
                self.error = Some(e.into());
            }
        }
        self.buf.clear();
        self.params.clear();
    }
}

fn stmt_attrs(t: &Tables, stmt: Option<u32>) -> (String, Option<u64>) {
    match stmt {
        Some(i) => {
            let s = &t.statements[i as usize];
            (s.sqlid.clone(), s.hv)
        }
        None => (String::new(), None),
    }
}

impl Sink for Writer {
    fn call(&mut self, t: &Tables, c: &AccountedCall) {
        let name = match (c.kind, c.lob) {
            (Some(CallKind::Lob), Some(n)) => t.names[n as usize].as_str(),
            (Some(k), _) => k.as_str(),
            (None, _) => "?",
        };
        let (sqlid, hv) = stmt_attrs(t, c.stmt);
        let attrs = json!({
            "file": t.files[c.at.file as usize].path, "line": c.at.line, "cursor": c.cursor,
            "dep": c.dep, "sqlid": sqlid, "hv": hv, "c_us": c.c, "p": c.p, "cr": c.cr, "cu": c.cu,
            "mis": c.mis, "clipped_us": c.clipped,
        });
        let end = self.end(c.wall_end_us, c.tim);
        let name = name.to_string();
        let no = EventParams::default();
        self.push(c.at.session, &name, end, c.window_e(), 0, c.r, no, attrs);
    }

    fn wait(&mut self, t: &Tables, w: &AccountedWait) {
        let (sqlid, hv) = stmt_attrs(t, w.stmt);
        let attrs = json!({
            "file": t.files[w.at.file as usize].path, "line": w.at.line, "cursor": w.cursor,
            "sqlid": sqlid, "hv": hv, "obj": w.obj, "params": w.params_text(), "in_call": w.in_call,
            "clipped_us": w.clipped,
        });
        let end = self.end(w.wall_end_us, w.tim);
        let name = t.names[w.name as usize].clone();
        let params = self.params_of(w);
        self.push(
            w.at.session,
            &name,
            end,
            w.ela - w.clipped,
            0,
            0,
            params,
            attrs,
        );
    }

    fn error(&mut self, t: &Tables, e: &TraceError) {
        let (sqlid, hv) = stmt_attrs(t, e.stmt);
        let attrs = json!({
            "file": t.files[e.at.file as usize].path, "line": e.at.line, "cursor": e.cursor,
            "sqlid": sqlid, "hv": hv,
        });
        let outcome = self.names.intern_outcome(&format!("ora-{:05}", e.err));
        let end = self.end(e.wall_us, e.tim);
        let name = if e.parse { "PARSE ERROR" } else { "ERROR" };
        let no = EventParams::default();
        self.push(e.at.session, name, end, 0, outcome, 0, no, attrs);
    }
}

/// Imports `paths` (read in order, merged into one run) into a new run directory `out`.
pub fn import_files(
    paths: &[&Path],
    out: &Path,
    command_line: Vec<String>,
    strict: bool,
) -> Result<ImportSummary, ImportError> {
    import_files_chunked(
        paths,
        out,
        command_line,
        strict,
        Options::default().chunk_bytes,
    )
}

/// [`import_files`] reading plain files in chunks of `chunk_bytes` (0: as a stream; see
/// [`Options::chunk_bytes`]).
pub fn import_files_chunked(
    paths: &[&Path],
    out: &Path,
    command_line: Vec<String>,
    strict: bool,
    chunk_bytes: usize,
) -> Result<ImportSummary, ImportError> {
    // Both passes read every input: a piped standard input (`-`) is kept in a temporary file.
    let spooled = spool_stdin(paths)?;
    let inputs: Vec<(&Path, String)> = paths
        .iter()
        .map(|p| match (&spooled, p.as_os_str() == "-") {
            (Some(t), true) => (t.path(), "stdin".to_string()),
            (None, true) => (Path::new("/dev/stdin"), "stdin".to_string()),
            _ => (*p, p.display().to_string()),
        })
        .collect();
    // Pass 1: where the clock starts (the earliest start of any record).
    let mut earliest = Earliest::default();
    {
        let mut r = Reader::new(
            &mut earliest,
            Options {
                strict,
                keep_params: false,
                chunk_bytes,
            },
        );
        for (p, shown) in &inputs {
            r.read_path_as(p, shown)?;
        }
    }
    let tim_clock = earliest.min_wall_us.is_none();
    let origin_us = earliest.min_wall_us.or(earliest.min_tim_us).unwrap_or(0);
    let mut params = BTreeMap::new();
    params.insert(
        "files".to_string(),
        json!(paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()),
    );
    let mut manifest = Manifest::new(
        "trace",
        WorkloadInfo {
            name: "oracle-10046".into(),
            params,
        },
        0,
    );
    manifest.command_line = command_line;
    manifest.clock_origin_unix_ns = origin_us.saturating_mul(1000);
    if let Some(t) = chrono::DateTime::from_timestamp_micros(origin_us) {
        manifest.started_utc = t;
    }
    let mut rec = Recording::begin(out, manifest)?;
    // The catalogue's figures as the blocks go by (up to 64 MiB of durations) rather than
    // reading the run back once it is written.
    rec.gather_headline(8 << 20);
    let names = rec.names().clone();
    let attrs_path = out.join(ATTRS_FILE);
    let attrs_file = File::create(&attrs_path).map_err(|source| ImportError::Io {
        path: attrs_path.clone(),
        source,
    })?;
    let mut w = Writer {
        origin_us,
        tim_clock,
        names: names.clone(),
        events: rec,
        attrs: BufWriter::new(attrs_file),
        attrs_path: attrs_path.clone(),
        buf: Vec::with_capacity(BLOCK),
        params: Vec::with_capacity(BLOCK),
        written: 0,
        last_end: HashMap::new(),
        max_end_us: origin_us,
        error: None,
    };
    let (tables, warnings, warning_count) = {
        let mut r = Reader::new(
            &mut w,
            Options {
                strict,
                keep_params: true,
                chunk_bytes,
            },
        );
        for (p, shown) in &inputs {
            r.read_path_as(p, shown)?;
        }
        (r.tables, r.warnings, r.warning_count)
    };
    w.flush();
    if let Some(e) = w.error.take() {
        return Err(e);
    }
    w.attrs.flush().map_err(|source| ImportError::Io {
        path: attrs_path.clone(),
        source,
    })?;
    let spath = out.join(STATEMENTS_FILE);
    let write_statements = || -> std::io::Result<()> {
        let mut f = BufWriter::new(File::create(&spath)?);
        for (i, s) in tables.statements.iter().enumerate() {
            serde_json::to_writer(
                &mut f,
                &json!({"statement": i, "sqlid": s.sqlid, "hv": s.hv, "dep": s.dep, "text": s.text, "plan": s.plan}),
            )?;
            f.write_all(b"\n")?;
        }
        f.flush()
    };
    write_statements().map_err(|source| ImportError::Io {
        path: spath.clone(),
        source,
    })?;
    let written = w.written;
    let ended = chrono::DateTime::from_timestamp_micros(w.max_end_us);
    let mut rec = w.events;
    let detail =
        (warning_count > 0).then(|| format!("{warning_count} malformed trace lines skipped"));
    let params = &mut rec.manifest_mut().workload.params;
    params.insert(
        "versions".into(),
        json!(tables
            .files
            .iter()
            .map(|f| f.version.clone())
            .collect::<Vec<_>>()),
    );
    params.insert(
        "units".into(),
        json!(tables.files.iter().map(|f| f.unit).collect::<Vec<_>>()),
    );
    params.insert("sessions".into(), json!(tables.sessions.len()));
    rec.finish_at(Outcome::Complete, detail, ended)?;
    Ok(ImportSummary {
        dir: out.to_path_buf(),
        events: written,
        sessions: tables.sessions.len(),
        warning_count,
        warnings: warnings.iter().take(20).map(|w| w.to_string()).collect(),
        files: tables.files.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbscope_core::RunDir;

    #[test]
    fn records_before_the_first_anchor_do_not_move_the_origin() {
        let dir = tempfile::tempdir().unwrap();
        let trc = dir.path().join("t.trc");
        std::fs::write(
            &trc,
            "WAIT #0: nam='early' ela= 5 p1=0 obj#=-1 tim=1000\n\
             *** 2024-01-01T00:00:00.000000+00:00\n\
             WAIT #0: nam='x' ela= 10 p1=1 p2=2 p3=3 obj#=7 tim=2000\n\
             EXEC #1:c=1,e=4,p=0,cr=0,cu=0,mis=0,r=3,dep=0,og=1,plh=0,tim=2010\n",
        )
        .unwrap();
        let out = dir.path().join("run");
        let s = import_files(&[trc.as_path()], &out, vec![], false).unwrap();
        assert_eq!(s.events, 3);
        let run = RunDir::open(&out).unwrap();
        assert_eq!(
            run.manifest.clock_origin_unix_ns,
            1_704_067_200_000_000_000 - 10_000
        );
        let mut events = Vec::new();
        let (names, _) = run
            .for_each_block(|_, b| events.extend_from_slice(b))
            .unwrap();
        let by_name = |n: &str| *events.iter().find(|e| names.name(e.name) == n).unwrap();
        // The early wait has no wall clock: it takes the session's previous end (the origin).
        assert_eq!(by_name("early").start_ns, 0);
        assert_eq!(by_name("x").start_ns, 0);
        assert_eq!(by_name("x").duration_ns, 10_000);
        let exec = by_name("EXEC");
        assert_eq!(
            (exec.start_ns, exec.duration_ns, exec.rows),
            (16_000, 4_000, 3)
        );
        let attrs = std::fs::read_to_string(out.join(ATTRS_FILE)).unwrap();
        assert_eq!(attrs.lines().count(), 3);
        assert!(attrs.contains(r#""params":"p1=1 p2=2 p3=3""#), "{attrs}");
    }

    /// Issue 13: the run of a trace that starts mid-call begins at the trace's first timestamp;
    /// the calls and waits that began before it are clipped to it, as in the profile. Issue 34
    /// item 3: the session's first line is a WAIT, which opens the window where it began (it
    /// counted 0 when the window opened at its end).
    #[test]
    fn a_trace_started_mid_call_is_clipped_to_its_first_timestamp() {
        let trc = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/handmade/trace_started_mid_call.trc");
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        import_files(&[trc.as_path()], &out, vec![], false).unwrap();
        let run = RunDir::open(&out).unwrap();
        // *** 2024-05-01T10:00:00Z is tim=10000000, the end of the first wait (ela 3000).
        assert_eq!(
            run.manifest.clock_origin_unix_ns,
            1_714_557_600_000_000_000 - 3_000_000
        );
        let mut events = Vec::new();
        let (names, _) = run
            .for_each_block(|_, b| events.extend_from_slice(b))
            .unwrap();
        let got: Vec<(String, u64, u64)> = events
            .iter()
            .map(|e| (names.name(e.name), e.start_ns / 1000, e.duration_ns / 1000))
            .collect();
        // In the order they are accounted for: a call's waits, then its children, then itself.
        let want = [
            // Inside the EXEC: the first line of the trace, whole.
            ("db file sequential read", 0, 3_000),
            ("db file scattered read", 3_000, 2_000),
            ("direct path read", 12_000, 1_000),
            // 1.505 s before 10_005_000 on the tim clock: 8 ms inside the window.
            ("EXEC", 0, 8_000),
            // e = 2.012 s: 15 ms inside the window.
            ("FETCH", 0, 15_000),
            ("SQL*Net message to client", 15_000, 5),
            ("SQL*Net message from client", 15_005, 100_000),
            ("FETCH", 115_005, 20),
        ];
        let want: Vec<(String, u64, u64)> = want
            .iter()
            .map(|(n, s, d)| (n.to_string(), *s, *d))
            .collect();
        assert_eq!(got, want);
        // The run ends at the last timestamp: its span from the origin, 115,025 µs, is the
        // profile's R.
        assert_eq!(
            run.manifest.ended_utc.map(|t| t.timestamp_micros()),
            Some(1_714_557_600_000_000 + 112_025)
        );
        let attrs: Vec<serde_json::Value> = std::fs::read_to_string(out.join(ATTRS_FILE))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let clipped: Vec<u64> = attrs
            .iter()
            .map(|a| a["clipped_us"].as_u64().unwrap())
            .collect();
        assert_eq!(clipped, [0, 0, 0, 1_497_000, 1_997_000, 0, 0, 0]);
    }
}
