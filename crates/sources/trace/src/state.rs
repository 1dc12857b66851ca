//! The 10046 state machine: the classified lines of one file, chunk after chunk in file order, in;
//! per-session cursor state and Method R response-time accounting; each accounted db call, wait
//! and error out to a [`Sink`].
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
//!   may be negative (CPU accounting granularity); for the file, wall span − R;
//! - a session's window starts at its first `tim` (where the wait began when that line is a WAIT:
//!   the wait is the trace's own record, issue 34 item 3): the part of a call or wait that began before it
//!   (the call that switched tracing on, a trace started mid-call) is *clipped* (`clipped` in the
//!   model), so that R fits the window as in Method R; each call also sums its children's and own
//!   waits' clipped parts, so that every row of the profile can be taken within the window.
//!
//! Times are normalised to microseconds (centisecond traces from releases before 9i are multiplied
//! by 10,000); `tim` values are anchored to the `***` timestamp lines to give wall-clock times.
//!
//! Why one file of about 900 lines (issue 26 asks a reason of any file over ~800): the rules above
//! act together on one per-session state (pending waits, pending calls, the clipped window) in
//! one `Accounting` machine; split across files, each rule could no longer be read against the
//! others and the state it changes. Its tests are in `tests/` and the fixtures.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::chunk::{opt, run_lines, Chunk, Item, Kind, NO_OBJ};
use crate::error::{Result, TraceReadError};
use crate::line::{classify, Call, CallKind, Record};
use crate::model::{
    AccountedCall, AccountedWait, FileInfo, Origin, PlanLine, SessionInfo, Statement, Tables,
    TraceError, Unit, Warning,
};
use crate::sink::Sink;

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

/// The warning of a line longer than [`crate::input::MAX_LINE`].
const LINE_CUT: &str = "line longer than 1 MiB; the rest of it was skipped";

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

/// What the accounting of a file works on that outlives the file: the sink, the tables, the
/// warnings (all kept by the [`crate::reader::Reader`]) and the options.
pub(crate) struct Context<'a, S> {
    /// Where accounted records go.
    pub sink: &'a mut S,
    /// Names, statements, files, sessions.
    pub tables: &'a mut Tables,
    /// Warnings kept.
    pub warnings: &'a mut Vec<Warning>,
    /// Warnings counted.
    pub warning_count: &'a mut u64,
    /// MODULE/ACTION/SERVICE names read before the session they describe exists (10g writes them
    /// before SESSION ID); they go to the next session created, in this file or the next.
    pub pending_info: &'a mut SessionInfo,
    /// Malformed lines are errors.
    pub strict: bool,
    /// Keep wait parameters as text.
    pub keep_params: bool,
}

/// The accounting of one file: its sessions, the block of lines being read (SQL text, binds), its
/// unit and wall-clock anchors.
pub(crate) struct Accounting<'a, S: Sink> {
    sink: &'a mut S,
    tables: &'a mut Tables,
    warnings: &'a mut Vec<Warning>,
    warning_count: &'a mut u64,
    pending_info: &'a mut SessionInfo,
    strict: bool,
    keep_params: bool,
    /// Index of the file in [`Tables::files`].
    file: u32,
    /// Sessions of the file, and where to find them by `sid`.
    sessions: Vec<Session>,
    session_keys: FxHashMap<String, usize>,
    /// The current session's `sid`, and its slot once it has one (set by `cur()`).
    current: String,
    current_slot: Option<usize>,
    cur_i: usize,
    /// 10,000 for centisecond traces, else 1.
    unit_mult: u64,
    /// The wall clock of the last `***` timestamp, until a `tim` is anchored to it.
    anchor_wall_us: Option<i64>,
    /// The last anchored `wall − tim` offset of the file (for sessions without one of their own).
    offset_us: Option<i64>,
    mode: Mode,
    /// A record has been read: lines that are no record are no longer header lines.
    header_done: bool,
    /// The name index of `SQL*Net message from client`, as of when `names` had this many entries.
    idle: (usize, Option<u32>),
    /// The global name indexes of the current chunk's names.
    chunk_names: Vec<u32>,
}

impl<'a, S: Sink> Accounting<'a, S> {
    /// Starts the file `name`: its [`FileInfo`] and fresh per-file state.
    pub fn begin(cx: Context<'a, S>, name: &str) -> Self {
        let file = cx.tables.files.len() as u32;
        cx.tables.files.push(FileInfo {
            path: name.to_string(),
            version: None,
            unit: Unit::Microseconds,
            unit_source: "default",
            lines: 0,
            bytes: 0,
            skipped_lines: 0,
            malformed_lines: 0,
            recognised_lines: 0,
        });
        let mut a = Accounting {
            sink: cx.sink,
            tables: cx.tables,
            warnings: cx.warnings,
            warning_count: cx.warning_count,
            pending_info: cx.pending_info,
            strict: cx.strict,
            keep_params: cx.keep_params,
            file,
            sessions: Vec::new(),
            session_keys: FxHashMap::default(),
            current: String::new(),
            current_slot: None,
            cur_i: 0,
            unit_mult: 1,
            anchor_wall_us: None,
            offset_us: None,
            mode: Mode::Normal,
            header_done: false,
            idle: (usize::MAX, None),
            chunk_names: Vec::new(),
        };
        a.switch_session(String::new());
        a
    }

    /// Accounts for the items of one chunk, whose first line is number `first`.
    pub fn chunk(&mut self, c: &Chunk, first: u64) -> Result<()> {
        // The chunk's names, interned in order of first appearance (as line by line would).
        let mut names = std::mem::take(&mut self.chunk_names);
        names.clear();
        names.extend((0..c.names.len() as u32).map(|i| self.tables.name(c.name(i))));
        let r = self.items(c, &names, first);
        self.chunk_names = names;
        r
    }

    fn items(&mut self, c: &Chunk, names: &[u32], first: u64) -> Result<()> {
        let recognised = c
            .items
            .iter()
            .filter(|it| {
                !matches!(
                    it.kind,
                    Kind::Others { .. } | Kind::Blank | Kind::Separator | Kind::Malformed(_)
                )
            })
            .count();
        self.tables.files[self.file as usize].recognised_lines += recognised as u64;
        for it in &c.items {
            let no = first + it.line as u64;
            if !self.in_block(c, it, no)? {
                self.item(c, it, names, no)?;
            }
            if it.cut {
                self.warn(no, LINE_CUT.into())?;
            }
        }
        Ok(())
    }

    /// Ends the file: its counts, a statement left open, whatever is still pending.
    pub fn end(mut self, lines: u64, bytes: u64) -> Result<()> {
        let f = &mut self.tables.files[self.file as usize];
        f.lines = lines;
        f.bytes = bytes;
        if let Mode::SqlText { start_line, .. } = self.mode {
            self.warn(
                start_line,
                "PARSING IN CURSOR has no END OF STMT before the end of the file".into(),
            )?;
        }
        // Whatever is still pending is resolved: waits are between calls, calls are roots.
        for mut s in std::mem::take(&mut self.sessions) {
            self.flush_session(&mut s);
        }
        Ok(())
    }

    /// Step 1 for every item: a line inside a block of text lines (SQL text after PARSING IN
    /// CURSOR, bind values, PARSE ERROR text) is taken by the block; a record ends the block (and
    /// is then accounted for as any other). True when the block took the item.
    fn in_block(&mut self, c: &Chunk, it: &Item, no: u64) -> Result<bool> {
        match self.mode {
            Mode::Normal => Ok(false),
            Mode::SqlText { .. } => match it.kind {
                Kind::EndOfStmt => {
                    self.end_sql_text();
                    Ok(true)
                }
                Kind::Others { .. } | Kind::Blank | Kind::Separator | Kind::Malformed(_) => {
                    self.sql_text(c, it);
                    Ok(true)
                }
                _ => {
                    // A record where SQL text should be: the END OF STMT is missing.
                    if let Some(start_line) = self.end_sql_text() {
                        self.warn(
                            start_line,
                            format!("PARSING IN CURSOR has no END OF STMT (line {no} is a record)"),
                        )?;
                    }
                    Ok(false)
                }
            },
            Mode::ParseErrorText | Mode::Binds => match it.kind {
                Kind::Others { .. } | Kind::Blank | Kind::Malformed(_) => Ok(true),
                _ => {
                    self.mode = Mode::Normal;
                    Ok(false)
                }
            },
        }
    }

    /// Lines of SQL text: added to the statement's excerpt (unless the statement is known
    /// already: then its text is not collected again).
    fn sql_text(&mut self, c: &Chunk, it: &Item) {
        let Mode::SqlText {
            stmt, known: None, ..
        } = &mut self.mode
        else {
            return;
        };
        let text = &mut stmt.text;
        match it.kind {
            Kind::Others { .. } => {
                for l in run_lines(c.bytes(it)) {
                    if text.len() >= SQL_EXCERPT {
                        break;
                    }
                    add_sql_text(text, l);
                }
            }
            _ if text.len() < SQL_EXCERPT => add_sql_text(text, c.bytes(it)),
            _ => {}
        }
    }

    /// Ends SQL text: the statement is defined and bound to its cursor. Returns the line of its
    /// PARSING IN CURSOR (`None` outside SQL text).
    fn end_sql_text(&mut self) -> Option<u64> {
        let Mode::SqlText {
            start_line,
            cursor,
            stmt,
            known,
        } = std::mem::replace(&mut self.mode, Mode::Normal)
        else {
            return None;
        };
        self.define_cursor(cursor, stmt, known);
        Some(start_line)
    }

    /// Step 2: an item outside any block, by kind.
    #[inline]
    fn item(&mut self, c: &Chunk, it: &Item, names: &[u32], no: u64) -> Result<()> {
        match it.kind {
            Kind::Wait {
                cursor,
                tim,
                obj,
                ela,
                name,
            } => {
                self.header_done = true;
                let params = match self.keep_params {
                    true => wait_params(c.bytes(it)),
                    false => Vec::new(),
                };
                let obj = (obj != NO_OBJ).then_some(obj);
                let name = names[name as usize];
                self.push_wait(name, cursor, ela as u64, obj, opt(tim), params, no);
            }
            Kind::Call(kind, f) => {
                self.header_done = true;
                let lob = (kind == CallKind::Lob).then(|| names[f.lob as usize]);
                self.push_call(kind, lob, &f.unpack(), no);
            }
            Kind::Others { n } => self.other_lines(c.bytes(it), n),
            Kind::Parsing {
                cursor,
                tim,
                hv,
                dep,
                sqlid,
            } => self.parsing(cursor, dep, opt(tim), opt(hv), c.short(&sqlid), no),
            Kind::Stat {
                cursor,
                id,
                pid,
                pos,
                cnt,
                obj,
                op,
            } => self.stat(
                cursor,
                PlanLine {
                    id,
                    pid,
                    pos,
                    cnt,
                    obj,
                    op: String::new(),
                },
                c.span(op),
            ),
            Kind::Timestamp { wall } => match wall {
                Some(w) => self.anchor_wall_us = Some(w),
                None => self.warn(no, "*** line whose timestamp cannot be read".into())?,
            },
            Kind::Tagged { key, value, wall } => self.tagged(c.span(key), c.span(value), wall),
            Kind::Star(rest) => self.star(c.span(rest)),
            Kind::ParseError { cursor, err, tim } => self.db_error(cursor, err, tim, true, no),
            Kind::Error { cursor, err, tim } => self.db_error(cursor, err, tim, false, no),
            Kind::XctEnd { tim } => {
                let tim = tim.map(|t| self.us(t));
                self.wall(tim, 0);
            }
            Kind::EndOfStmt => self.warn(no, "END OF STMT without PARSING IN CURSOR".into())?,
            Kind::Binds => self.mode = Mode::Binds,
            Kind::Separator | Kind::Blank => {}
            Kind::Malformed(why) => {
                self.tables.files[self.file as usize].malformed_lines += 1;
                self.warn(no, why.to_string())?;
            }
            Kind::Again => self.again(c.bytes(it), no),
        }
        Ok(())
    }

    /// A WAIT, db call or PARSING IN CURSOR line whose numbers did not fit its item: read again.
    #[cold]
    fn again(&mut self, line: &[u8], no: u64) {
        match classify(line) {
            Record::Wait(w) => {
                self.header_done = true;
                let name = self.tables.name(w.name);
                let params = match self.keep_params {
                    true => wait_params(line),
                    false => Vec::new(),
                };
                self.push_wait(name, w.cursor, w.ela, w.obj, w.tim, params, no);
            }
            Record::Call(kind, c) => {
                self.header_done = true;
                let lob = (kind == CallKind::Lob).then(|| self.tables.name(c.lob));
                self.push_call(kind, lob, &c, no);
            }
            Record::Parsing(p) => self.parsing(p.cursor, p.dep, p.tim, p.hv, p.sqlid, no),
            // The items of all other lines hold all that is read of them (see `Kind::of`).
            _ => debug_assert!(false, "only waits, calls and PARSING lines are read again"),
        }
    }

    /// `n` lines that are no record, outside any block: skipped (header lines are read for the
    /// release and version).
    fn other_lines(&mut self, run: &[u8], n: u32) {
        self.tables.files[self.file as usize].skipped_lines += n as u64;
        if !self.header_done {
            for l in run_lines(run) {
                self.header_line(l);
            }
        }
    }

    /// `PARSING IN CURSOR`: SQL text follows, up to END OF STMT.
    fn parsing(
        &mut self,
        cursor: u64,
        dep: u32,
        tim: Option<u64>,
        hv: Option<u64>,
        sqlid: &[u8],
        no: u64,
    ) {
        self.header_done = true;
        let tim = tim.map(|t| self.us(t));
        self.wall(tim, 0);
        let sqlid = String::from_utf8_lossy(sqlid);
        let known = self.tables.known_statement(&sqlid, hv);
        self.mode = Mode::SqlText {
            start_line: no,
            cursor,
            stmt: Statement {
                sqlid: if known.is_some() {
                    String::new()
                } else {
                    sqlid.into_owned()
                },
                hv,
                dep,
                text: String::new(),
                plan: Vec::new(),
            },
            known,
        };
    }

    /// `PARSE ERROR` (`parse`) or `ERROR`.
    fn db_error(&mut self, cursor: u64, err: u64, tim: Option<u64>, parse: bool, no: u64) {
        let tim = tim.map(|t| self.us(t));
        let wall_us = self.wall(tim, 0);
        self.cur();
        let sess = &mut self.sessions[self.cur_i];
        let stmt = if parse {
            // The failed statement's cursor no longer maps to an earlier statement.
            sess.cursors.remove(&cursor);
            None
        } else {
            sess.cursors.get(&cursor).copied()
        };
        let e = TraceError {
            at: Origin {
                file: self.file,
                line: no,
                session: sess.index,
            },
            cursor,
            stmt,
            err,
            parse,
            tim,
            wall_us,
        };
        self.sink.error(self.tables, &e);
        if parse {
            self.mode = Mode::ParseErrorText;
        }
    }

    /// A STAT line: a line of its cursor's statement's plan (the first of each id).
    fn stat(&mut self, cursor: u64, mut line: PlanLine, op: &[u8]) {
        self.cur();
        let sess = &self.sessions[self.cur_i];
        if let Some(&st) = sess.cursors.get(&cursor) {
            let plan = &mut self.tables.statements[st as usize].plan;
            if plan.len() < MAX_PLAN_LINES && !plan.iter().any(|l| l.id == line.id) {
                line.op = String::from_utf8_lossy(op).into_owned();
                plan.push(line);
            }
        }
    }

    /// `*** KEY:(value) [timestamp]`: a wall-clock anchor, and a session switch or its names.
    fn tagged(&mut self, key: &[u8], value: &[u8], wall: Option<i64>) {
        if let Some(w) = wall {
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
                    None => &mut *self.pending_info,
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

    /// Another `***` line: trcsess output's `*** [ Unix process pid: N ]` starts another
    /// process's section.
    fn star(&mut self, rest: &[u8]) {
        if let Some(pid) = rest.strip_prefix(b"[ Unix process pid: ") {
            let pid = String::from_utf8_lossy(pid.strip_suffix(b" ]").unwrap_or(pid));
            self.switch_session(format!("pid {}", pid.trim()));
        }
    }

    fn warn(&mut self, line: u64, msg: String) -> Result<()> {
        let w = Warning {
            file: self.tables.files[self.file as usize].path.clone(),
            line,
            msg,
        };
        if self.strict {
            return Err(TraceReadError::Strict(w));
        }
        *self.warning_count += 1;
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
    #[inline]
    fn cur(&mut self) -> &mut Session {
        let i = match self.current_slot {
            Some(i) => i,
            None => self.new_session(),
        };
        self.cur_i = i;
        &mut self.sessions[i]
    }

    /// Creates the current session; returns its slot.
    #[cold]
    fn new_session(&mut self) -> usize {
        let index = self.tables.sessions.len() as u32;
        let pending = std::mem::take(&mut *self.pending_info);
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
    ///
    /// The session's first `tim` opens its window ([`SessionInfo::first_tim`]) at `tim − opens`:
    /// `opens` is a wait's `ela` (µs) and 0 for any other line. A WAIT line is the trace's record of
    /// that wait: when it is the session's first timed line, the window opens where it began, so it
    /// counts whole (issue 34 item 3: it counted 0, its whole `ela` lying before its own end). A
    /// call's `e` may reach back before tracing began (the call that switched it on): it opens the
    /// window at its end, as before.
    fn wall(&mut self, tim_us: Option<u64>, opens: u64) -> Option<i64> {
        let t = tim_us? as i64;
        let anchor = self.anchor_wall_us.take();
        let file_offset = self.offset_us;
        let s = self.cur();
        let index = s.index as usize;
        self.tables.sessions[index]
            .first_tim
            .get_or_insert((t as u64).saturating_sub(opens));
        let s = &mut self.sessions[self.cur_i];
        if let Some(a) = anchor {
            s.offset_us = Some(a.saturating_sub(t));
        }
        let off = s.offset_us.or(file_offset);
        if anchor.is_some() {
            self.offset_us = off;
        }
        off.map(|o| o.saturating_add(t))
    }

    /// A db call line (times still in the trace's unit): accounted, or kept pending for its parent.
    fn push_call(&mut self, kind: CallKind, lob: Option<u32>, c: &Call<'_>, no: u64) {
        let tim = c.tim.map(|t| self.us(t));
        let wall_end_us = self.wall(tim, 0);
        let e = self.dur(c.e);
        self.cur();
        let sess = &mut self.sessions[self.cur_i];
        let stmt = sess.cursors.get(&c.cursor).copied();
        let first_tim = self.tables.sessions[sess.index as usize].first_tim;
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
            e,
            clipped: clipped(first_tim, tim, e),
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
        params: Vec<(String, String)>,
        no: u64,
    ) {
        let tim = tim.map(|t| self.us(t));
        let ela = self.dur(ela);
        let wall_end_us = self.wall(tim, ela);
        self.cur();
        let sess = &mut self.sessions[self.cur_i];
        let stmt = sess.cursors.get(&cursor).copied();
        let first_tim = self.tables.sessions[sess.index as usize].first_tim;
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
                clipped: clipped(first_tim, tim, ela),
                params,
            },
        };
        sess.waits.push_back(pw);
        if sess.waits.len() > MAX_PENDING_WAITS {
            let old = sess.waits.pop_front().expect("non-empty");
            self.sink.wait(self.tables, &old.w);
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

    /// A db call, accounted: its children adopted, the waits inside it claimed, then handed to the
    /// sink (depth 0) or kept pending for its parent.
    fn on_call(&mut self, mut call: AccountedCall) {
        self.cur();
        let children = self.adopt_children(&mut call);
        self.claim_waits(&mut call);
        for ch in &children {
            self.sink.call(self.tables, ch);
        }
        // A root unless a parent adopts it.
        call.root = true;
        if call.dep == 0 {
            self.sink.call(self.tables, &call);
        } else {
            let sess = &mut self.sessions[self.cur_i];
            sess.calls.push_back(call);
            if sess.calls.len() > MAX_PENDING_CALLS {
                let old = sess.calls.pop_front().expect("non-empty");
                self.sink.call(self.tables, &old);
            }
        }
    }

    /// Step 1 of a call: its children are the current session's pending calls one level deeper
    /// (returned, their times added to the call's); deeper ones than that are orphans, handed to
    /// the sink as roots.
    fn adopt_children(&mut self, call: &mut AccountedCall) -> Vec<AccountedCall> {
        let sess = &mut self.sessions[self.cur_i];
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
                self.sink.call(self.tables, &pending);
            }
        }
        for ch in &mut children {
            call.children_e += ch.e;
            call.children_c += ch.c;
            call.children_clipped += ch.clipped;
            ch.parent_stmt = call.stmt;
            ch.root = false;
        }
        children
    }

    /// Step 2 of a call: the latest pending waits of the current session that fall in its
    /// interval happened inside it; before a depth-0 call, the others happened between calls.
    /// Both are handed to the sink.
    fn claim_waits(&mut self, call: &mut AccountedCall) {
        if self.idle.0 != self.tables.names.len() {
            // Looked up again only when names were added.
            self.idle = (
                self.tables.names.len(),
                self.tables.find_name(b"SQL*Net message from client"),
            );
        }
        let sess = &mut self.sessions[self.cur_i];
        let inside = waits_inside(&sess.waits, call, self.idle.1);
        let first_inside = sess.waits.len() - inside;
        for mut w in sess.waits.drain(first_inside..) {
            w.w.in_call = true;
            call.waits_ela += w.w.ela;
            call.waits_clipped += w.w.clipped;
            self.sink.wait(self.tables, &w.w);
        }
        if call.dep == 0 {
            for w in sess.waits.drain(..) {
                self.sink.wait(self.tables, &w.w);
            }
        }
    }

    fn flush_session(&mut self, s: &mut Session) {
        for w in s.waits.drain(..) {
            self.sink.wait(self.tables, &w.w);
        }
        for mut c in s.calls.drain(..) {
            c.root = true;
            self.sink.call(self.tables, &c);
        }
    }
}

/// The parameters of a WAIT line, `(name, value)`.
fn wait_params(line: &[u8]) -> Vec<(String, String)> {
    match classify(line) {
        Record::Wait(w) => w.params[..w.nparams]
            .iter()
            .map(|(k, v)| {
                (
                    String::from_utf8_lossy(k).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
            .collect(),
        _ => Vec::new(),
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

/// µs of a record ending at `tim` after `dur` µs that lie before its session's window, which
/// starts at the session's first `tim` (`first_tim`); all of it when it ended before the window.
/// A record without `tim` cannot be placed and is not clipped.
fn clipped(first_tim: Option<u64>, tim: Option<u64>, dur: u64) -> u64 {
    match (first_tim, tim) {
        (Some(t0), Some(end)) => t0.saturating_sub(end.saturating_sub(dur)).min(dur),
        _ => 0,
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
