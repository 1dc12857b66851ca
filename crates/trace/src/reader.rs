//! The 10046 reader: a streaming state machine over classified lines that keeps per-session cursor
//! state and does Method R response-time accounting, handing each accounted db call and wait to a
//! [`Sink`].
//!
//! Accounting rules (Millsap & Holt, *Optimizing Oracle Performance*, ch. 5–6):
//! - a db call line is written when the call ends; WAIT lines written before it that fall within its
//!   interval `[tim − e, tim]` happened inside it (a wait is inside when it ended after the call began;
//!   without wait `tim=`, as before 11g, the latest waits are taken while their `ela` fits in the call's
//!   `e`, never `SQL*Net message from client`);
//! - calls of depth `d + 1` written before a call of depth `d` are its recursive children: the parent's
//!   `c` and `e` include theirs;
//! - waits inside no call at depth 0 are *between calls* (think time, network);
//! - `R = Σ e(root calls) + Σ ela(between-call waits)`, where root calls are depth-0 calls and calls
//!   whose parent is not in the file (trace started or ended mid-call);
//! - per call, *unaccounted-for* = self `e` − self `c` − Σ own waits (self = minus the children's), and
//!   may be negative (CPU accounting granularity); for the file, wall span − R.
//!
//! Times are normalised to microseconds (centisecond traces from releases before 9i are multiplied
//! by 10,000); `tim` values are anchored to the `***` timestamp lines to give wall-clock times.

use std::collections::VecDeque;
use std::io::Read;
use std::path::Path;

use rustc_hash::FxHashMap;

use crate::chunk::{self, Chunk, Kind};
use crate::error::TraceReadError;
use crate::input;
use crate::line::{classify, Call, CallKind, Parsing, Record};
use crate::model::{
    AccountedCall, AccountedWait, FileInfo, Origin, PlanLine, SessionInfo, Statement, Tables,
    TraceError, Unit, Warning,
};
use crate::pipeline::{self, Input};
use crate::sink::Sink;
use crate::timestamp::parse_timestamp;

/// Pending waits kept per session while no db call claims them; beyond this, the oldest are counted as
/// between-call waits (bounded memory on traces with millions of waits and no call).
const MAX_PENDING_WAITS: usize = 100_000;
/// Pending recursive calls kept per session; beyond this the oldest become roots.
const MAX_PENDING_CALLS: usize = 100_000;
/// Characters of SQL text kept per statement.
const SQL_EXCERPT: usize = 240;
/// Plan lines kept per statement.
const MAX_PLAN_LINES: usize = 500;
/// Warnings kept with their text (all are counted).
const MAX_WARNINGS_KEPT: usize = 1000;
/// Largest `tim` kept, µs (about 2,280 years after its epoch).
const MAX_TIM_US: u64 = 1 << 56;
/// Largest duration kept, µs (about 12.7 days).
const MAX_DURATION_US: u64 = 1 << 40;

/// Reader options.
#[derive(Clone, Debug)]
pub struct Options {
    /// Stop at the first malformed line with an error.
    pub strict: bool,
    /// Keep wait parameters as text (for import).
    pub keep_params: bool,
    /// Inputs are cut into chunks of this many bytes, classified on all cores (see "How it runs
    /// in parallel" in docs/trace.md): plain files by the workers in parallel, streams (gzip
    /// files, pipes) in order. 0 reads plain files as a stream too, in chunks of the default
    /// size. The result is the same either way.
    pub chunk_bytes: usize,
}

impl Default for Options {
    /// Lenient, no parameters, 1 MiB chunks.
    fn default() -> Self {
        Options {
            strict: false,
            keep_params: false,
            chunk_bytes: pipeline::DEFAULT_CHUNK,
        }
    }
}

#[derive(Clone, Debug)]
struct PendingWait {
    w: AccountedWait,
}

#[derive(Default)]
struct Session {
    index: u32,
    offset_us: Option<i64>,
    cursors: FxHashMap<u64, u32>,
    waits: VecDeque<PendingWait>,
    calls: VecDeque<AccountedCall>,
}

enum Mode {
    Normal,
    /// Inside SQL text after PARSING IN CURSOR (line where it started, cursor, pending statement,
    /// and the statement when it is known already: then its text is not collected again).
    SqlText {
        start_line: u64,
        cursor: u64,
        stmt: Statement,
        known: Option<u32>,
    },
    /// After PARSE ERROR: its text lines follow.
    ParseErrorText,
    /// Inside a BINDS block.
    Binds,
}

/// Reads 10046 traces one after the other into one set of [`Tables`] and one sink.
pub struct Reader<'s, S: Sink> {
    sink: &'s mut S,
    opts: Options,
    /// Names, statements, files, sessions seen so far.
    pub tables: Tables,
    /// Warnings kept (the first 1000).
    pub warnings: Vec<Warning>,
    /// All warnings, counted.
    pub warning_count: u64,
    // Per file:
    /// Sessions of the current file, and where to find them by `sid`.
    sessions: Vec<Session>,
    session_keys: FxHashMap<String, usize>,
    /// The current session's `sid`, and its slot once it has one (set by `cur()`).
    current: String,
    current_slot: Option<usize>,
    cur_i: usize,
    file: u32,
    unit_mult: u64,
    anchor_wall_us: Option<i64>,
    offset_us: Option<i64>,
    mode: Mode,
    header_done: bool,
    pending_info: SessionInfo,
    /// The name index of `SQL*Net message from client`, as of when `names` had this many entries.
    idle: (usize, Option<u32>),
}

impl<'s, S: Sink> Reader<'s, S> {
    /// A reader that hands records to `sink`.
    pub fn new(sink: &'s mut S, opts: Options) -> Self {
        Reader {
            sink,
            opts,
            tables: Tables::default(),
            warnings: Vec::new(),
            warning_count: 0,
            sessions: Vec::new(),
            session_keys: FxHashMap::default(),
            current: String::new(),
            current_slot: None,
            cur_i: 0,
            file: 0,
            unit_mult: 1,
            anchor_wall_us: None,
            offset_us: None,
            mode: Mode::Normal,
            header_done: false,
            pending_info: SessionInfo::default(),
            idle: (usize::MAX, None),
        }
    }

    /// Reads a file (plain or gzip): a plain file in chunks that workers cut in parallel (unless
    /// [`Options::chunk_bytes`] is 0), a gzip file (or a pipe) as a stream cut in order.
    pub fn read_path(&mut self, path: &Path) -> Result<(), TraceReadError> {
        let shown = path.display().to_string();
        let io_err = |source| TraceReadError::Io {
            path: shown.clone(),
            source,
        };
        let len = match self.opts.chunk_bytes {
            0 => None,
            _ => input::plain_len(path).map_err(io_err)?,
        };
        let input = match len {
            Some(len) => Input::File { path, len },
            None => Input::Stream(input::open(path).map_err(io_err)?),
        };
        self.read_input(&shown, input)
    }

    /// Reads one trace from any reader (as a stream); `name` is used in warnings.
    pub fn read(&mut self, name: &str, input: impl Read + Send) -> Result<(), TraceReadError> {
        self.read_input(name, Input::Stream(input))
    }

    /// Reads one trace: its chunks classified on all cores, accounted for in file order here.
    fn read_input<R: Read + Send>(
        &mut self,
        name: &str,
        input: Input<'_, R>,
    ) -> Result<(), TraceReadError> {
        self.begin_file(name);
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
        let chunk = match self.opts.chunk_bytes {
            0 => pipeline::DEFAULT_CHUNK,
            c => c,
        };
        let (lines, bytes) = pipeline::for_each_chunk(input, name, chunk, workers, |c, first| {
            self.account_chunk(c, first)
        })?;
        self.end_file(lines, bytes)
    }

    /// Starts a file: its [`FileInfo`] and fresh per-file state.
    fn begin_file(&mut self, name: &str) {
        self.file = self.tables.files.len() as u32;
        self.tables.files.push(FileInfo {
            path: name.to_string(),
            version: None,
            unit: Unit::Microseconds,
            unit_source: "default",
            lines: 0,
            bytes: 0,
            skipped_lines: 0,
            malformed_lines: 0,
        });
        self.sessions.clear();
        self.session_keys.clear();
        self.unit_mult = 1;
        self.anchor_wall_us = None;
        self.offset_us = None;
        self.mode = Mode::Normal;
        self.header_done = false;
        self.switch_session(String::new());
    }

    /// Accounts for the records of one chunk whose first line is number `first`.
    fn account_chunk(&mut self, c: &Chunk, first: u64) -> Result<(), TraceReadError> {
        // The chunk's names, interned in order of first appearance (as line by line would).
        let names: Vec<u32> = (0..c.names.len() as u32)
            .map(|i| self.tables.name(c.name(i)))
            .collect();
        for it in &c.items {
            let no = first + it.line as u64;
            // WAIT and db call lines take the fast path below unless they end SQL text (which
            // `process` handles); a BINDS block or PARSE ERROR text simply ends at them.
            let normal = match self.mode {
                Mode::Normal => true,
                Mode::SqlText { .. } => false,
                Mode::Binds | Mode::ParseErrorText => {
                    let record = matches!(it.kind, Kind::Wait { .. } | Kind::Call(..));
                    if record {
                        self.mode = Mode::Normal;
                    }
                    record
                }
            };
            match it.kind {
                Kind::Wait {
                    cursor,
                    ela,
                    obj,
                    tim,
                    name,
                } if normal && !self.opts.keep_params => {
                    self.header_done = true;
                    let obj = (obj != chunk::NO_OBJ).then_some(obj);
                    let tim = chunk::opt(tim);
                    let name = names[name as usize];
                    self.push_wait(name, cursor, ela as u64, obj, tim, String::new(), no);
                }
                Kind::Call(kind, f) if normal => {
                    self.header_done = true;
                    let call = Call {
                        cursor: f.cursor,
                        c: f.c as u64,
                        e: f.e as u64,
                        p: f.p as u64,
                        cr: f.cr as u64,
                        cu: f.cu as u64,
                        mis: f.mis as u64,
                        r: f.r as u64,
                        dep: f.dep,
                        plh: None,
                        tim: chunk::opt(f.tim),
                        lob: &[],
                    };
                    let lob = (kind == CallKind::Lob).then(|| names[f.lob as usize]);
                    self.push_call(kind, lob, &call, no);
                }
                Kind::Others { n } => match &mut self.mode {
                    Mode::Normal => {
                        self.tables.files[self.file as usize].skipped_lines += n as u64;
                        if !self.header_done {
                            for l in chunk::run_lines(c.bytes(it)) {
                                self.header_line(l);
                            }
                        }
                    }
                    Mode::SqlText {
                        stmt, known: None, ..
                    } => {
                        for l in chunk::run_lines(c.bytes(it)) {
                            if stmt.text.len() >= SQL_EXCERPT {
                                break;
                            }
                            add_sql_text(&mut stmt.text, l);
                        }
                    }
                    Mode::SqlText { .. } | Mode::ParseErrorText | Mode::Binds => {}
                },
                Kind::Parsing {
                    cursor,
                    dep,
                    tim,
                    hv,
                    sqlid,
                } => {
                    let rec = Record::Parsing(Parsing {
                        cursor,
                        dep,
                        oct: 0,
                        tim: chunk::opt(tim),
                        hv: chunk::opt(hv),
                        sqlid: c.short(&sqlid),
                    });
                    self.process(c.bytes(it), rec, no)?;
                }
                Kind::Stat {
                    cursor,
                    id,
                    pid,
                    pos,
                    cnt,
                    obj,
                    op,
                } => {
                    let rec = Record::Stat {
                        cursor,
                        id,
                        pid,
                        pos,
                        cnt,
                        obj,
                        op: c.span(op),
                    };
                    self.process(c.bytes(it), rec, no)?;
                }
                Kind::Timestamp { ts, wall } => {
                    let rec = Record::Timestamp(c.span(ts));
                    self.process_with(c.bytes(it), rec, no, Some(wall))?;
                }
                Kind::Tagged {
                    key,
                    value,
                    ts,
                    wall,
                } => {
                    let rec = Record::Tagged {
                        key: c.span(key),
                        value: c.span(value),
                        ts: c.span(ts),
                    };
                    self.process_with(c.bytes(it), rec, no, Some(wall))?;
                }
                Kind::Plain(rec) => self.process(c.bytes(it), rec.record(), no)?,
                _ => {
                    // Everything else (rare) is classified again from its line.
                    let line = c.bytes(it);
                    self.process(line, classify(line), no)?;
                }
            }
            if it.cut {
                self.warn(
                    no,
                    "line longer than 1 MiB; the rest of it was skipped".into(),
                )?;
            }
        }
        Ok(())
    }

    /// Ends a file: its counts, a statement left open, whatever is still pending.
    fn end_file(&mut self, lines: u64, bytes: u64) -> Result<(), TraceReadError> {
        let f = &mut self.tables.files[self.file as usize];
        f.lines = lines;
        f.bytes = bytes;
        if let Mode::SqlText { start_line, .. } = self.mode {
            self.warn(
                start_line,
                "PARSING IN CURSOR has no END OF STMT before the end of the file".into(),
            )?;
        }
        self.mode = Mode::Normal;
        // Whatever is still pending is resolved: waits are between calls, calls are roots.
        let mut sessions = std::mem::take(&mut self.sessions);
        for s in &mut sessions {
            self.flush_session(s);
        }
        Ok(())
    }

    fn warn(&mut self, line: u64, msg: String) -> Result<(), TraceReadError> {
        let w = Warning {
            file: self.tables.files[self.file as usize].path.clone(),
            line,
            msg,
        };
        if self.opts.strict {
            return Err(TraceReadError::Strict(w));
        }
        self.warning_count += 1;
        if self.warnings.len() < MAX_WARNINGS_KEPT {
            self.warnings.push(w);
        }
        Ok(())
    }

    /// Makes `sid` the current session; it is created when its first record is read, so the
    /// `*** [ Unix process pid ]` and pre-`SESSION ID` parts only count when they hold records.
    fn switch_session(&mut self, sid: String) {
        self.current_slot = self.session_keys.get(&sid).copied();
        self.current = sid;
    }

    /// The current session, created on first use (its slot is also left in `cur_i`).
    fn cur(&mut self) -> &mut Session {
        let i = match self.current_slot {
            Some(i) => i,
            None => {
                let index = self.tables.sessions.len() as u32;
                let pending = std::mem::take(&mut self.pending_info);
                self.tables.sessions.push(SessionInfo {
                    file: self.file,
                    sid: self.current.clone(),
                    ..pending
                });
                self.sessions.push(Session {
                    index,
                    ..Session::default()
                });
                let i = self.sessions.len() - 1;
                self.session_keys.insert(self.current.clone(), i);
                self.current_slot = Some(i);
                i
            }
        };
        self.cur_i = i;
        &mut self.sessions[i]
    }

    /// A `tim` in µs, clamped so that sums and differences stay far from overflow on hostile input.
    fn us(&self, v: u64) -> u64 {
        v.saturating_mul(self.unit_mult).min(MAX_TIM_US)
    }

    /// A duration (`e=`, `c=`, `ela=`) in µs, clamped likewise (no real call or wait lasts 12 days).
    fn dur(&self, v: u64) -> u64 {
        v.saturating_mul(self.unit_mult).min(MAX_DURATION_US)
    }

    /// Wall clock of a `tim` (already in µs), anchoring on the last `***` timestamp if needed. Each
    /// session (process) has its own `tim` epoch: the offset is kept per session, and a session
    /// without an anchor of its own borrows the file's last one.
    fn wall(&mut self, tim_us: Option<u64>) -> Option<i64> {
        let t = tim_us? as i64;
        let anchor = self.anchor_wall_us.take();
        let file_offset = self.offset_us;
        let s = self.cur();
        if let Some(a) = anchor {
            s.offset_us = Some(a.saturating_sub(t));
        }
        let off = s.offset_us.or(file_offset);
        if anchor.is_some() {
            self.offset_us = off;
        }
        off.map(|o| o.saturating_add(t))
    }

    fn process(&mut self, line: &[u8], rec: Record<'_>, no: u64) -> Result<(), TraceReadError> {
        self.process_with(line, rec, no, None)
    }

    /// [`Self::process`], with the timestamp of a `***` line already parsed (`wall`) when a chunk
    /// worker did it.
    fn process_with(
        &mut self,
        line: &[u8],
        rec: Record<'_>,
        no: u64,
        wall: Option<Option<i64>>,
    ) -> Result<(), TraceReadError> {
        match &mut self.mode {
            Mode::Normal => {}
            Mode::SqlText { stmt, known, .. } => match rec {
                Record::EndOfStmt => {
                    let Mode::SqlText {
                        cursor,
                        stmt,
                        known,
                        ..
                    } = std::mem::replace(&mut self.mode, Mode::Normal)
                    else {
                        unreachable!("matched above")
                    };
                    self.define_cursor(cursor, stmt, known);
                    return Ok(());
                }
                Record::Other | Record::Blank | Record::Separator | Record::Malformed(_) => {
                    if known.is_none() && stmt.text.len() < SQL_EXCERPT {
                        add_sql_text(&mut stmt.text, line);
                    }
                    return Ok(());
                }
                _ => {
                    // A record where SQL text should be: the END OF STMT is missing.
                    let Mode::SqlText {
                        cursor,
                        stmt,
                        start_line,
                        known,
                    } = std::mem::replace(&mut self.mode, Mode::Normal)
                    else {
                        unreachable!("matched above")
                    };
                    self.define_cursor(cursor, stmt, known);
                    self.warn(
                        start_line,
                        format!("PARSING IN CURSOR has no END OF STMT (line {no} is a record)"),
                    )?;
                }
            },
            Mode::ParseErrorText | Mode::Binds => match rec {
                Record::Other | Record::Blank | Record::Malformed(_) => return Ok(()),
                _ => self.mode = Mode::Normal,
            },
        }
        match rec {
            Record::Call(kind, c) => {
                self.header_done = true;
                let lob = (kind == CallKind::Lob).then(|| self.tables.name(c.lob));
                self.push_call(kind, lob, &c, no);
            }
            Record::Wait(w) => {
                self.header_done = true;
                let name = self.tables.name(w.name);
                let params = if self.opts.keep_params {
                    let mut s = String::new();
                    for (k, v) in &w.params[..w.nparams] {
                        if !s.is_empty() {
                            s.push(' ');
                        }
                        s.push_str(&String::from_utf8_lossy(k));
                        s.push('=');
                        s.push_str(&String::from_utf8_lossy(v));
                    }
                    s
                } else {
                    String::new()
                };
                self.push_wait(name, w.cursor, w.ela, w.obj, w.tim, params, no);
            }
            Record::Parsing(p) => {
                self.header_done = true;
                let tim = p.tim.map(|t| self.us(t));
                self.wall(tim);
                let sqlid = String::from_utf8_lossy(p.sqlid);
                let known = self.tables.known_statement(&sqlid, p.hv);
                self.mode = Mode::SqlText {
                    start_line: no,
                    cursor: p.cursor,
                    stmt: Statement {
                        sqlid: if known.is_some() {
                            String::new()
                        } else {
                            sqlid.into_owned()
                        },
                        hv: p.hv,
                        dep: p.dep,
                        text: String::new(),
                        plan: Vec::new(),
                    },
                    known,
                };
            }
            Record::EndOfStmt => self.warn(no, "END OF STMT without PARSING IN CURSOR".into())?,
            Record::ParseError {
                cursor,
                dep: _,
                err,
                tim,
            } => {
                let tim = tim.map(|t| self.us(t));
                let wall_us = self.wall(tim);
                self.cur();
                let sess = &mut self.sessions[self.cur_i];
                // The failed statement's cursor no longer maps to an earlier statement.
                sess.cursors.remove(&cursor);
                let e = TraceError {
                    at: Origin {
                        file: self.file,
                        line: no,
                        session: sess.index,
                    },
                    cursor,
                    stmt: None,
                    err,
                    parse: true,
                    tim,
                    wall_us,
                };
                self.sink.error(&self.tables, &e);
                self.mode = Mode::ParseErrorText;
            }
            Record::Error { cursor, err, tim } => {
                let tim = tim.map(|t| self.us(t));
                let wall_us = self.wall(tim);
                self.cur();
                let sess = &mut self.sessions[self.cur_i];
                let e = TraceError {
                    at: Origin {
                        file: self.file,
                        line: no,
                        session: sess.index,
                    },
                    cursor,
                    stmt: sess.cursors.get(&cursor).copied(),
                    err,
                    parse: false,
                    tim,
                    wall_us,
                };
                self.sink.error(&self.tables, &e);
            }
            Record::XctEnd { tim, .. } => {
                let tim = tim.map(|t| self.us(t));
                self.wall(tim);
            }
            Record::Stat {
                cursor,
                id,
                pid,
                pos,
                cnt,
                obj,
                op,
            } => {
                self.cur();
                let sess = &self.sessions[self.cur_i];
                if let Some(&st) = sess.cursors.get(&cursor) {
                    let plan = &mut self.tables.statements[st as usize].plan;
                    if plan.len() < MAX_PLAN_LINES && !plan.iter().any(|l| l.id == id) {
                        plan.push(PlanLine {
                            id,
                            pid,
                            pos,
                            cnt,
                            obj,
                            op: String::from_utf8_lossy(op).into_owned(),
                        });
                    }
                }
            }
            Record::Binds { .. } => self.mode = Mode::Binds,
            Record::Timestamp(ts) => {
                if let Some(w) = wall.unwrap_or_else(|| parse_timestamp(ts)) {
                    self.anchor_wall_us = Some(w);
                } else {
                    self.warn(no, "*** line whose timestamp cannot be read".into())?;
                }
            }
            Record::Tagged { key, value, ts } => {
                if let Some(w) = wall.unwrap_or_else(|| parse_timestamp(ts)) {
                    self.anchor_wall_us = Some(w);
                }
                let value = String::from_utf8_lossy(value).into_owned();
                match key {
                    b"SESSION ID" => self.switch_session(value),
                    _ => {
                        // 10g writes MODULE/ACTION before SESSION ID: keep them for the session
                        // that comes next rather than opening one for them.
                        let info = match self.current_slot {
                            Some(i) => &mut self.tables.sessions[self.sessions[i].index as usize],
                            None => &mut self.pending_info,
                        };
                        match key {
                            b"MODULE NAME" => info.module = value,
                            b"ACTION NAME" => info.action = value,
                            b"SERVICE NAME" => info.service = value,
                            _ => {}
                        }
                    }
                }
            }
            Record::Star(rest) => {
                // trcsess output: `*** [ Unix process pid: N ]` starts another process's section.
                if let Some(pid) = rest.strip_prefix(b"[ Unix process pid: ") {
                    let pid = String::from_utf8_lossy(pid.strip_suffix(b" ]").unwrap_or(pid));
                    self.switch_session(format!("pid {}", pid.trim()));
                }
            }
            Record::Separator | Record::Blank => {}
            Record::Malformed(why) => {
                self.tables.files[self.file as usize].malformed_lines += 1;
                self.warn(no, why.to_string())?;
            }
            Record::Other => {
                self.tables.files[self.file as usize].skipped_lines += 1;
                if !self.header_done {
                    self.header_line(line);
                }
            }
        }
        Ok(())
    }

    /// A db call line (times still in the trace's unit): accounted, or kept pending for its parent.
    fn push_call(&mut self, kind: CallKind, lob: Option<u32>, c: &Call<'_>, no: u64) {
        let tim = c.tim.map(|t| self.us(t));
        let wall_end_us = self.wall(tim);
        self.cur();
        let sess = &mut self.sessions[self.cur_i];
        let stmt = sess.cursors.get(&c.cursor).copied();
        let call = AccountedCall {
            at: Origin {
                file: self.file,
                line: no,
                session: sess.index,
            },
            kind: Some(kind),
            lob,
            cursor: c.cursor,
            stmt: if kind == CallKind::Lob { None } else { stmt },
            dep: c.dep,
            c: self.dur(c.c),
            e: self.dur(c.e),
            p: c.p,
            cr: c.cr,
            cu: c.cu,
            r: c.r,
            mis: c.mis,
            tim,
            wall_end_us,
            ..AccountedCall::default()
        };
        self.on_call(call);
    }

    /// A WAIT line (times still in the trace's unit; `name` interned): pending until a call
    /// claims it or a depth-0 call shows it was between calls.
    #[allow(clippy::too_many_arguments)]
    fn push_wait(
        &mut self,
        name: u32,
        cursor: u64,
        ela: u64,
        obj: Option<i64>,
        tim: Option<u64>,
        params: String,
        no: u64,
    ) {
        let tim = tim.map(|t| self.us(t));
        let wall_end_us = self.wall(tim);
        let ela = self.dur(ela);
        self.cur();
        let sess = &mut self.sessions[self.cur_i];
        let stmt = sess.cursors.get(&cursor).copied();
        let pw = PendingWait {
            w: AccountedWait {
                at: Origin {
                    file: self.file,
                    line: no,
                    session: sess.index,
                },
                name,
                cursor,
                stmt,
                ela,
                obj,
                tim,
                wall_end_us,
                in_call: false,
                params,
            },
        };
        sess.waits.push_back(pw);
        if sess.waits.len() > MAX_PENDING_WAITS {
            let old = sess.waits.pop_front().expect("non-empty");
            self.sink.wait(&self.tables, &old.w);
        }
    }

    fn header_line(&mut self, line: &[u8]) {
        let f = &mut self.tables.files[self.file as usize];
        if line.starts_with(b"Oracle") {
            if let Some(at) = memchr::memmem::find(line, b"Release ") {
                let rel = &line[at + 8..];
                let end = rel.iter().position(|&b| b == b' ').unwrap_or(rel.len());
                let rel = String::from_utf8_lossy(&rel[..end]).into_owned();
                let major: u32 = rel
                    .split('.')
                    .next()
                    .and_then(|m| m.parse().ok())
                    .unwrap_or(0);
                if major > 0 {
                    f.unit_source = "header";
                    if major < 9 {
                        f.unit = Unit::Centiseconds;
                        self.unit_mult = 10_000;
                    }
                    if f.version.is_none() {
                        f.version = Some(rel);
                    }
                }
            }
        } else if let Some(v) = line.strip_prefix(b"Version ") {
            // 18c+ print the full version on a line of its own.
            if v.first().is_some_and(|b| b.is_ascii_digit()) {
                f.version = Some(String::from_utf8_lossy(v).trim().to_string());
            }
        }
    }

    /// Binds a cursor to its statement: `known` when [`Tables::known_statement`] found it at the
    /// PARSING line, else `stmt` (added when new).
    fn define_cursor(&mut self, cursor: u64, stmt: Statement, known: Option<u32>) {
        let idx = match known {
            Some(i) => i,
            None => self.tables.statement(stmt),
        };
        self.cur();
        let sess = &mut self.sessions[self.cur_i];
        sess.cursors.insert(cursor, idx);
    }

    fn on_call(&mut self, mut call: AccountedCall) {
        self.cur();
        let sess = &mut self.sessions[self.cur_i];
        // 1. Children: pending calls one level deeper; deeper ones than that are orphans (roots).
        // Pending calls are in non-decreasing depth order (each call takes the deeper ones and is
        // then appended), so the deeper ones are a suffix: only that is looked at, which keeps a
        // long run of recursive calls without a parent linear.
        let mut start = sess.calls.len();
        while start > 0 && sess.calls[start - 1].dep > call.dep {
            start -= 1;
        }
        debug_assert!(sess.calls.range(..start).all(|c| c.dep <= call.dep));
        let mut children = Vec::new();
        for mut pending in sess.calls.drain(start..) {
            if pending.dep == call.dep + 1 {
                children.push(pending);
            } else {
                pending.root = true;
                self.sink.call(&self.tables, &pending);
            }
        }
        for ch in &mut children {
            call.children_e += ch.e;
            call.children_c += ch.c;
            ch.parent_stmt = call.stmt;
            ch.root = false;
        }
        // 2. Waits inside the call: the latest pending ones that fall in its interval.
        if self.idle.0 != self.tables.names.len() {
            // Looked up again only when names were added.
            self.idle = (
                self.tables.names.len(),
                self.tables.find_name(b"SQL*Net message from client"),
            );
        }
        let inside = waits_inside(&sess.waits, &call, self.idle.1);
        let first_inside = sess.waits.len() - inside;
        for mut w in sess.waits.drain(first_inside..) {
            w.w.in_call = true;
            call.waits_ela += w.w.ela;
            self.sink.wait(&self.tables, &w.w);
        }
        if call.dep == 0 {
            // Whatever is left before a depth-0 call happened between calls.
            for w in sess.waits.drain(..) {
                self.sink.wait(&self.tables, &w.w);
            }
        }
        for ch in &children {
            self.sink.call(&self.tables, ch);
        }
        if call.dep == 0 {
            call.root = true;
            self.sink.call(&self.tables, &call);
        } else {
            // Resolved when its parent arrives (or at the end: a root).
            call.root = true;
            sess.calls.push_back(call);
            if sess.calls.len() > MAX_PENDING_CALLS {
                let old = sess.calls.pop_front().expect("non-empty");
                self.sink.call(&self.tables, &old);
            }
        }
    }

    fn flush_session(&mut self, s: &mut Session) {
        for w in s.waits.drain(..) {
            self.sink.wait(&self.tables, &w.w);
        }
        for mut c in s.calls.drain(..) {
            c.root = true;
            self.sink.call(&self.tables, &c);
        }
    }
}

/// Appends the words of a line of SQL text to a statement's excerpt (whitespace collapsed, at most
/// [`SQL_EXCERPT`] bytes, cut at a character boundary).
fn add_sql_text(text: &mut String, line: &[u8]) {
    let line = String::from_utf8_lossy(line);
    for word in line.split_whitespace() {
        if text.len() >= SQL_EXCERPT {
            break;
        }
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(word);
    }
    if text.len() > SQL_EXCERPT {
        let mut cut = SQL_EXCERPT;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
}

/// How many of the latest pending waits happened inside `call`.
fn waits_inside(waits: &VecDeque<PendingWait>, call: &AccountedCall, idle: Option<u32>) -> usize {
    let budget = call.e.saturating_sub(call.children_e);
    let start = call.tim.map(|t| t.saturating_sub(call.e));
    let mut n = 0;
    let mut used = 0u64;
    for pw in waits.iter().rev() {
        let w = &pw.w;
        let inside = match (w.tim, start) {
            (Some(wt), Some(s)) => wt > s,
            _ => Some(w.name) != idle && used + w.ela <= budget,
        };
        if !inside {
            break;
        }
        used += w.ela;
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Rec {
        calls: Vec<AccountedCall>,
        waits: Vec<AccountedWait>,
        errors: Vec<TraceError>,
    }

    impl Sink for Rec {
        fn call(&mut self, _t: &Tables, c: &AccountedCall) {
            self.calls.push(*c);
        }
        fn wait(&mut self, _t: &Tables, w: &AccountedWait) {
            self.waits.push(w.clone());
        }
        fn error(&mut self, _t: &Tables, e: &TraceError) {
            self.errors.push(*e);
        }
    }

    fn read(text: &str) -> (Rec, Tables, Vec<Warning>) {
        let mut rec = Rec::default();
        let (tables, warnings) = {
            let mut r = Reader::new(&mut rec, Options::default());
            r.read("t.trc", text.as_bytes()).expect("reads");
            (r.tables, r.warnings)
        };
        (rec, tables, warnings)
    }

    #[test]
    fn children_and_waits_are_attributed() {
        let (rec, _, w) = read(
            "PARSING IN CURSOR #1 len=1 dep=0 uid=0 oct=3 lid=0 tim=0 hv=1 ad='0' sqlid='a'\nselect 1\nEND OF STMT\n\
             WAIT #1: nam='SQL*Net message from client' ela= 50 p1=0 p2=0 p3=0 obj#=-1 tim=100\n\
             EXEC #2:c=5,e=30,p=0,cr=0,cu=0,mis=0,r=0,dep=1,og=4,plh=0,tim=150\n\
             WAIT #1: nam='db file sequential read' ela= 20 file#=1 block#=2 blocks=1 obj#=9 tim=180\n\
             EXEC #1:c=40,e=90,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=200\n",
        );
        assert!(w.is_empty(), "{w:?}");
        let parent = rec.calls.iter().find(|c| c.dep == 0).unwrap();
        assert!(parent.root);
        assert_eq!(
            (parent.children_e, parent.children_c, parent.waits_ela),
            (30, 5, 20)
        );
        // Own e 60, own c 35, own waits 20: 5 µs unaccounted for.
        assert_eq!(parent.unaccounted(), 5);
        let child = rec.calls.iter().find(|c| c.dep == 1).unwrap();
        assert!(!child.root);
        assert_eq!(child.parent_stmt, parent.stmt);
        let idle = rec.waits.iter().find(|w| w.ela == 50).unwrap();
        assert!(!idle.in_call, "ended at 100, before the EXEC began at 110");
        assert!(rec.waits.iter().find(|w| w.ela == 20).unwrap().in_call);
    }

    #[test]
    fn cursor_reuse_and_missing_end_of_stmt() {
        let (rec, t, w) = read(
            "PARSING IN CURSOR #7 len=1 dep=0 uid=0 oct=3 lid=0 tim=0 hv=1 ad='0' sqlid='first'\nselect 1\n\
             EXEC #7:c=1,e=1,dep=0,tim=10\n\
             CLOSE #7:c=0,e=1,dep=0,type=0,tim=20\n\
             PARSING IN CURSOR #7 len=1 dep=0 uid=0 oct=3 lid=0 tim=30 hv=2 ad='0' sqlid='second'\nselect\n  2\nEND OF STMT\n\
             EXEC #7:c=1,e=1,dep=0,tim=40\n\
             ERROR #7:err=942 tim=41\n",
        );
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].line, 1);
        assert!(w[0].msg.contains("END OF STMT"));
        let names: Vec<&str> = rec
            .calls
            .iter()
            .map(|c| t.statements[c.stmt.unwrap() as usize].sqlid.as_str())
            .collect();
        assert_eq!(names, ["first", "first", "second"]);
        assert_eq!(t.statements[1].text, "select 2");
        assert_eq!(rec.errors[0].err, 942);
        assert_eq!(rec.errors[0].stmt, Some(1));
    }

    #[test]
    fn wall_clock_is_anchored_per_session() {
        let (rec, t, _) = read(
            "*** SESSION ID:(1.1) 2024-01-01T00:00:00.000000+00:00\n\
             WAIT #0: nam='x' ela= 1 p1=0 obj#=-1 tim=5000\n\
             *** SESSION ID:(2.2) 2024-01-01T00:00:10.000000+00:00\n\
             WAIT #0: nam='x' ela= 1 p1=0 obj#=-1 tim=900\n\
             *** SESSION ID:(1.1)\n\
             WAIT #0: nam='x' ela= 1 p1=0 obj#=-1 tim=6000\n",
        );
        assert_eq!(t.sessions.len(), 2);
        let base = 1_704_067_200_000_000i64;
        let walls: Vec<i64> = rec
            .waits
            .iter()
            .map(|w| w.wall_end_us.unwrap() - base)
            .collect();
        // Session 1's offset survives the switch to session 2 and back.
        let mut sorted = walls.clone();
        sorted.sort();
        assert_eq!(sorted, [0, 1000, 10_000_000]);
    }
}
