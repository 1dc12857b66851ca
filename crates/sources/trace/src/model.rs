//! The data model of an accounted trace: files, sessions, statements and plans, and the accounted
//! db calls, waits, errors and warnings handed to a [`crate::sink::Sink`].

use std::collections::hash_map::Entry;

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::line::CallKind;

/// The time unit a trace was written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Microseconds (Oracle 9i and later).
    Microseconds,
    /// Centiseconds (before 9i); converted to microseconds on reading.
    Centiseconds,
}

/// What was learnt about one input file.
#[derive(Clone, Debug, Serialize)]
pub struct FileInfo {
    /// The path as given.
    pub path: String,
    /// Oracle version from the header (`Version` line, else the `Release` of the banner), if any.
    pub version: Option<String>,
    /// The unit of its times, and how it was decided.
    pub unit: Unit,
    /// Why that unit: `header` (the release in the banner) or `default` (no banner found).
    pub unit_source: &'static str,
    /// Lines read.
    pub lines: u64,
    /// Bytes read (after decompression).
    pub bytes: u64,
    /// Lines that are neither records nor part of one (header, free text, other events' dumps).
    pub skipped_lines: u64,
    /// Malformed lines (each also a warning).
    pub malformed_lines: u64,
    /// Lines recognised as 10046 content: records, `***` lines and the lines of a block a record
    /// opens (blank lines, `=====` separators, malformed and other lines are not).
    #[serde(skip)]
    pub recognised_lines: u64,
}

impl FileInfo {
    /// True when anything in the file was recognised as Oracle 10046 content: a record (or a line
    /// of one), or a trace header naming the release. Blank lines and separators alone are not.
    pub fn recognised(&self) -> bool {
        self.version.is_some() || self.recognised_lines > 0
    }

    /// Why the file is not a 10046 trace, when nothing in it was recognised.
    pub fn unrecognised_reason(&self) -> Option<String> {
        (!self.recognised()).then(|| {
            let what = if self.bytes == 0 {
                "the file is empty".to_string()
            } else {
                format!("{} lines, {} bytes read", self.lines, self.bytes)
            };
            format!(
                "{}: no Oracle 10046 trace content recognised ({what}); give an extended SQL trace \
                 (event 10046, e.g. level 8 or 12)",
                self.path
            )
        })
    }
}

/// A session: one `*** SESSION ID:(sid.serial)` of one file (or the part before any).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SessionInfo {
    /// Index of its file in [`Tables::files`].
    pub file: u32,
    /// `sid.serial`, or empty before any SESSION ID line.
    pub sid: String,
    /// Last `MODULE NAME`.
    pub module: String,
    /// Last `ACTION NAME`.
    pub action: String,
    /// Last `SERVICE NAME`.
    pub service: String,
    /// The first `tim` read in the session (µs on its `tim` clock), less the wait's `ela` when that
    /// line is a WAIT (the wait counts whole): where the trace's window starts.
    /// Calls and waits that began before it are clipped to it (see [`AccountedCall::clipped`]).
    pub first_tim: Option<u64>,
}

/// A SQL statement (distinct by sqlid, else hash value, else cursor for cursors never parsed in the file).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Statement {
    /// SQL id, when the trace gives one.
    pub sqlid: String,
    /// Hash value.
    pub hv: Option<u64>,
    /// Depth it was parsed at.
    pub dep: u32,
    /// The start of its text (whitespace collapsed).
    pub text: String,
    /// Its execution plan: the first STAT line of each row source id seen for it (at most
    /// 500 lines).
    pub plan: Vec<PlanLine>,
}

/// One row source of an execution plan (a STAT line).
#[derive(Clone, Debug, Default, Serialize)]
pub struct PlanLine {
    /// Row source id.
    pub id: u32,
    /// Parent id.
    pub pid: u32,
    /// Position under the parent.
    pub pos: u32,
    /// Rows produced (in the execution that wrote the STAT lines).
    pub cnt: u64,
    /// Object id.
    pub obj: i64,
    /// The operation and its statistics, as written.
    pub op: String,
}

/// Names and statements referred to by index in accounted records.
#[derive(Clone, Debug, Default)]
pub struct Tables {
    /// Wait event names and LOB call names.
    pub names: Vec<String>,
    /// Statements.
    pub statements: Vec<Statement>,
    /// Input files.
    pub files: Vec<FileInfo>,
    /// Sessions.
    pub sessions: Vec<SessionInfo>,
    /// Names by their bytes.
    name_index: FxHashMap<Vec<u8>, u32>,
    /// Statements by sqlid, else by hash value, else by text (three separate key spaces).
    by_sqlid: FxHashMap<String, u32>,
    by_hv: FxHashMap<u64, u32>,
    by_text: FxHashMap<String, u32>,
}

impl Tables {
    /// The index of a name (a wait event or a LOB keyword), added when new.
    pub(crate) fn name(&mut self, n: &[u8]) -> u32 {
        if let Some(&i) = self.name_index.get(n) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(String::from_utf8_lossy(n).into_owned());
        self.name_index.insert(n.to_vec(), i);
        i
    }

    /// The index of a name already seen.
    pub(crate) fn find_name(&self, n: &[u8]) -> Option<u32> {
        self.name_index.get(n).copied()
    }

    /// The statement a `PARSING IN CURSOR` line names, when it is known already and its identity
    /// does not depend on its text (it has a sqlid or a hash value).
    pub(crate) fn known_statement(&self, sqlid: &str, hv: Option<u64>) -> Option<u32> {
        if !sqlid.is_empty() {
            self.by_sqlid.get(sqlid).copied()
        } else {
            hv.and_then(|hv| self.by_hv.get(&hv).copied())
        }
    }

    /// The index of a statement (by sqlid, else hash value, else text), added when new.
    pub(crate) fn statement(&mut self, stmt: Statement) -> u32 {
        let i = self.statements.len() as u32;
        let slot = if !stmt.sqlid.is_empty() {
            self.by_sqlid.entry(stmt.sqlid.clone())
        } else if let Some(hv) = stmt.hv {
            match self.by_hv.entry(hv) {
                Entry::Occupied(e) => return *e.get(),
                Entry::Vacant(e) => {
                    e.insert(i);
                    self.statements.push(stmt);
                    return i;
                }
            }
        } else {
            self.by_text.entry(stmt.text.clone())
        };
        match slot {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => {
                e.insert(i);
                self.statements.push(stmt);
                i
            }
        }
    }
}

/// Where a record came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Origin {
    /// Index in [`Tables::files`].
    pub file: u32,
    /// Line number, from 1.
    pub line: u64,
    /// Index in [`Tables::sessions`].
    pub session: u32,
}

/// A db call with its accounting.
#[derive(Clone, Copy, Debug, Default)]
pub struct AccountedCall {
    /// Where it was.
    pub at: Origin,
    /// PARSE, EXEC, …
    pub kind: Option<CallKind>,
    /// For LOB calls, the name index of the keyword (`LOBWRITE`).
    pub lob: Option<u32>,
    /// Cursor.
    pub cursor: u64,
    /// Statement, when the cursor's is known.
    pub stmt: Option<u32>,
    /// Depth.
    pub dep: u32,
    /// CPU µs (including children).
    pub c: u64,
    /// Elapsed µs (including children).
    pub e: u64,
    /// Physical reads.
    pub p: u64,
    /// Consistent reads.
    pub cr: u64,
    /// Current reads.
    pub cu: u64,
    /// Rows.
    pub r: u64,
    /// Library cache misses.
    pub mis: u64,
    /// End, µs on the trace's `tim` clock.
    pub tim: Option<u64>,
    /// End, wall clock µs since the Unix epoch (when anchored).
    pub wall_end_us: Option<i64>,
    /// True when no parent call is in the file (depth 0, or orphaned).
    pub root: bool,
    /// Statement of the parent call, for recursive calls that have one.
    pub parent_stmt: Option<u32>,
    /// Σ e of its children.
    pub children_e: u64,
    /// Σ c of its children.
    pub children_c: u64,
    /// Σ ela of the waits inside it (not inside its children).
    pub waits_ela: u64,
    /// µs of its `e` before its session's window (the session's first `tim`, see
    /// [`SessionInfo::first_tim`]): the call began before the trace did. At most `e`.
    pub clipped: u64,
    /// Σ `clipped` of its children.
    pub children_clipped: u64,
    /// Σ `clipped` of the waits inside it (not inside its children).
    pub waits_clipped: u64,
}

impl AccountedCall {
    /// Its own CPU, children excluded (may be negative through rounding in the trace).
    pub fn self_c(&self) -> i64 {
        self.c as i64 - self.children_c as i64
    }

    /// Unaccounted-for time inside the call: self e − self c − own waits.
    pub fn unaccounted(&self) -> i64 {
        self.e as i64 - self.children_e as i64 - self.self_c() - self.waits_ela as i64
    }

    /// Its `e` within the trace's window (children included).
    pub fn window_e(&self) -> u64 {
        self.e - self.clipped
    }

    /// Its own time within the window, children excluded: what it adds to R when its children
    /// are accounted for on their own.
    pub fn window_self_e(&self) -> i64 {
        self.window_e() as i64 - (self.children_e as i64 - self.children_clipped as i64)
    }

    /// Its own CPU within the window. The trace does not say when the CPU was used, so the own
    /// time that is neither a wait nor a child's (CPU and unaccounted-for) is taken to be spread
    /// evenly: the CPU is scaled by the share of that time inside the window. Neither it nor
    /// [`AccountedCall::window_unaccounted`] can change sign through clipping.
    pub fn window_self_c(&self) -> i64 {
        let c = self.self_c();
        if self.clipped == 0 {
            return c;
        }
        let gap = self.e as i64 - self.children_e as i64 - self.waits_ela as i64;
        let window_gap = self.window_self_e() - (self.waits_ela - self.waits_clipped) as i64;
        if gap <= 0 {
            return c;
        }
        let share = (window_gap as f64 / gap as f64).clamp(0.0, 1.0);
        (c as f64 * share).round() as i64
    }

    /// Unaccounted-for time inside the call within the window: own window time − own window CPU −
    /// own waits' window time.
    pub fn window_unaccounted(&self) -> i64 {
        self.window_self_e() - self.window_self_c() - (self.waits_ela - self.waits_clipped) as i64
    }
}

/// A wait with its accounting.
#[derive(Clone, Debug, Default)]
pub struct AccountedWait {
    /// Where it was.
    pub at: Origin,
    /// Event name index.
    pub name: u32,
    /// Cursor.
    pub cursor: u64,
    /// Statement of the cursor, when known.
    pub stmt: Option<u32>,
    /// Elapsed µs.
    pub ela: u64,
    /// `obj#`.
    pub obj: Option<i64>,
    /// End, µs on the `tim` clock.
    pub tim: Option<u64>,
    /// End, wall clock µs since the Unix epoch (when anchored).
    pub wall_end_us: Option<i64>,
    /// True when it happened inside a db call; false for between-call waits (part of R on their own).
    pub in_call: bool,
    /// µs of its `ela` before its session's window (it began before the trace did). At most `ela`.
    pub clipped: u64,
    /// The parameters as written, `(name, value)`: up to three, `p1`/`p2`/`p3` or the event's own
    /// names (`file#`, `block#`, …); only with [`crate::reader::Options::keep_params`].
    pub params: Vec<(String, String)>,
}

impl AccountedWait {
    /// The parameters as `name=value` joined by spaces.
    pub fn params_text(&self) -> String {
        let mut s = String::new();
        for (k, v) in &self.params {
            if !s.is_empty() {
                s.push(' ');
            }
            s.push_str(k);
            s.push('=');
            s.push_str(v);
        }
        s
    }
}

/// A db error (`ERROR #c:err=` or `PARSE ERROR`).
#[derive(Clone, Copy, Debug, Default)]
pub struct TraceError {
    /// Where it was.
    pub at: Origin,
    /// Cursor.
    pub cursor: u64,
    /// Statement, when known.
    pub stmt: Option<u32>,
    /// ORA- number.
    pub err: u64,
    /// True for `PARSE ERROR`.
    pub parse: bool,
    /// `tim` µs.
    pub tim: Option<u64>,
    /// Wall clock µs.
    pub wall_us: Option<i64>,
}

/// A warning about the input, with its place.
#[derive(Clone, Debug, Serialize)]
pub struct Warning {
    /// File path.
    pub file: String,
    /// Line number.
    pub line: u64,
    /// What was wrong.
    pub msg: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.msg)
    }
}
