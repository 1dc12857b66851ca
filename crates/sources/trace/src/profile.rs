//! The response-time profile of one or more traces (Method R): by event, by statement, the recursive
//! call tree, a skew histogram per event and the slowest waits, as text and JSON.
//!
//! The rows of the event profile add up to R exactly: the CPU of db calls (their own, children
//! excluded, one row per call kind), every wait event (inside calls and between them), and the
//! unaccounted-for time inside calls. R itself is computed independently as
//! `Σ e(root calls) + Σ ela(between-call waits)` and both are reported.
//!
//! Everything is taken within each session's window, from its first `tim` on: a call or wait that
//! began before it (the call that switched tracing on, a trace started mid-call) counts only from
//! there, and the profile says how much was clipped (as Method R does), so R fits the wall span.
//! The statement rows and the call tree show `e` as the trace wrote it.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::fmt::{self, Write};
use std::path::Path;

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::error::TraceReadError;
use crate::line::CallKind;
use crate::model::{
    AccountedCall, AccountedWait, FileInfo, PlanLine, Tables, TraceError, Unit, Warning,
};
use crate::reader::{Options, Reader};
use crate::sink::Sink;

/// Upper bounds (µs, exclusive) of the skew buckets: powers of ten from 1 µs to 1000 s, as mrskew.
pub const SKEW_BOUNDS_US: [u64; 10] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// What to profile.
#[derive(Clone, Debug)]
pub struct ProfileOptions {
    /// Keep records ending at or after this wall-clock time (Unix µs).
    pub since_us: Option<i64>,
    /// Keep records ending before this wall-clock time (Unix µs).
    pub until_us: Option<i64>,
    /// Keep only calls and waits of this statement (sqlid, or hash value as a number).
    pub sqlid: Option<String>,
    /// Show only these wait events in the event rows, skew and top lists.
    pub events: Vec<String>,
    /// How many slowest waits to list.
    pub top: usize,
    /// Malformed lines are errors.
    pub strict: bool,
    /// Chunk size (streams are cut into chunks of this size too); 0 reads plain files as a stream
    /// ([`Options::chunk_bytes`]).
    pub chunk_bytes: usize,
}

impl Default for ProfileOptions {
    /// Everything, with the 10 slowest waits.
    fn default() -> Self {
        ProfileOptions {
            since_us: None,
            until_us: None,
            sqlid: None,
            events: Vec::new(),
            top: 10,
            strict: false,
            chunk_bytes: Options::default().chunk_bytes,
        }
    }
}

/// One row of the event profile.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EventRow {
    /// Event name, `CPU: <call kind>` or `unaccounted-for within db calls`.
    pub name: String,
    /// Kind: `wait`, `cpu` or `unaccounted`.
    pub kind: &'static str,
    /// Number of waits or calls.
    pub calls: u64,
    /// Total µs (may be negative for `cpu` and `unaccounted` rows).
    pub total_us: i64,
    /// Mean µs per call.
    pub mean_us: f64,
    /// Smallest µs.
    pub min_us: i64,
    /// Largest µs.
    pub max_us: i64,
    /// Share of R, in percent.
    pub pct_r: f64,
    /// For waits: how many happened between calls (not inside one).
    pub between_calls: u64,
    /// For waits: the skew histogram, counts per bucket (see [`SKEW_BOUNDS_US`]; last = ≥ 1000 s).
    pub skew_counts: Vec<u64>,
    /// For waits: total µs per bucket.
    pub skew_us: Vec<u64>,
}

/// One statement.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StatementRow {
    /// SQL id (may be empty before 10g R2).
    pub sqlid: String,
    /// Hash value.
    pub hv: Option<u64>,
    /// Depth it was parsed at.
    pub dep: u32,
    /// Start of its text, or a note when the trace never showed it.
    pub text: String,
    /// Db calls.
    pub calls: u64,
    /// Σ e of its calls, µs (children included, as Oracle reports it).
    pub e_us: u64,
    /// Σ c of its calls, µs (children included).
    pub c_us: u64,
    /// Σ ela of the waits inside its calls, µs (not those of recursive children).
    pub waits_us: u64,
    /// Rows processed.
    pub rows: u64,
    /// Physical reads.
    pub p: u64,
    /// Consistent + current reads.
    pub lio: u64,
    /// Errors (ERROR lines) on its cursor.
    pub errors: u64,
    /// Its execution plan from the STAT lines (first seen), when the trace has one.
    pub plan: Vec<PlanLine>,
}

/// A node of the recursive call tree: a statement and the time its calls took under its parent.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TreeNode {
    /// The statement: sqlid (or `hv N`) and the start of its text; `(unknown cursor)` for calls on
    /// cursors the trace never parsed.
    pub statement: String,
    /// Calls of this statement under this parent.
    pub calls: u64,
    /// Σ e, µs.
    pub e_us: u64,
    /// Children (recursive SQL it ran).
    pub children: Vec<TreeNode>,
}

/// A slow wait.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct TopWait {
    /// Event name.
    pub name: String,
    /// µs.
    pub ela_us: u64,
    /// `file:line`.
    pub at: String,
    /// Statement sqlid (or empty).
    pub sqlid: String,
    /// Wall-clock end (RFC 3339), when anchored.
    pub wall_end: Option<String>,
}

/// The whole profile.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Profile {
    /// Files read.
    pub files: Vec<FileInfo>,
    /// Sessions seen.
    pub sessions: usize,
    /// R, µs: Σ e(root calls) + Σ ela(between-call waits) of the records kept.
    pub r_us: i64,
    /// Σ of the event rows, µs (equals `r_us`).
    pub rows_total_us: i64,
    /// Σ over sessions of (last end − first start) on the `tim` clock, µs, starts clipped to the
    /// session's window (its first `tim`).
    pub wall_span_us: i64,
    /// µs of root calls and between-call waits that lay before their session's window (they began
    /// before the trace's first timestamp) and are left out of R; with `--sqlid`, of the calls' own
    /// time.
    pub clipped_us: i64,
    /// Root calls (with `--sqlid`, calls) clipped.
    pub clipped_calls: u64,
    /// Between-call waits clipped.
    pub clipped_waits: u64,
    /// `wall_span_us − r_us`: time in the file accounted for by no call and no wait.
    pub unaccounted_between_calls_us: i64,
    /// Unaccounted-for time inside db calls, µs.
    pub unaccounted_in_calls_us: i64,
    /// The event profile, largest first.
    pub events: Vec<EventRow>,
    /// Statements, by e descending (each distinct statement once).
    pub statements: Vec<StatementRow>,
    /// The call tree from root calls down.
    pub tree: Vec<TreeNode>,
    /// The slowest waits.
    pub top_waits: Vec<TopWait>,
    /// Db errors by ORA- number.
    pub errors: BTreeMap<String, u64>,
    /// Warnings (malformed lines) counted.
    pub warning_count: u64,
    /// The first warnings, with file:line.
    pub warnings: Vec<Warning>,
    /// Filters applied, as given.
    pub filters: Vec<String>,
}

#[derive(Default)]
struct EventAcc {
    kind: &'static str,
    calls: u64,
    total: i64,
    min: i64,
    max: i64,
    between: u64,
    skew_n: [u64; 11],
    skew_us: [u64; 11],
}

impl EventAcc {
    fn add(&mut self, v: i64) {
        if self.calls == 0 {
            self.min = v;
            self.max = v;
        }
        self.calls += 1;
        self.total = self.total.saturating_add(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }
}

#[derive(Default)]
struct StmtAcc {
    calls: u64,
    e: u64,
    c: u64,
    waits: u64,
    rows: u64,
    p: u64,
    lio: u64,
    errors: u64,
}

/// (ela, file, line, name, statement, wall end): ordered by ela first, then place.
type TopKey = (u64, u32, u64, u32, Option<u32>, Option<i64>);

#[derive(Default)]
struct Collector {
    opts: ProfileOptions,
    sqlid_match: Option<String>,
    events: HashMap<String, EventAcc>,
    /// Per wait name id (the hot path; merged into `events` at the end).
    waits: Vec<EventAcc>,
    /// Per (call kind, LOB name id).
    cpu: FxHashMap<(CallKind, u32), EventAcc>,
    unaccounted: EventAcc,
    stmts: FxHashMap<Option<u32>, StmtAcc>,
    edges: FxHashMap<(Option<u32>, Option<u32>), (u64, u64)>,
    roots: FxHashMap<Option<u32>, (u64, u64)>,
    top: BinaryHeap<Reverse<TopKey>>,
    r: i64,
    clipped: i64,
    clipped_calls: u64,
    clipped_waits: u64,
    unaccounted_in_calls: i64,
    /// Per session index: (first start, last end) on the `tim` clock.
    span: Vec<Option<(u64, u64)>>,
    errors: BTreeMap<String, u64>,
}

fn bucket(us: u64) -> usize {
    SKEW_BOUNDS_US
        .iter()
        .position(|&b| us < b)
        .unwrap_or(SKEW_BOUNDS_US.len())
}

impl Collector {
    fn keep_time(&self, wall: Option<i64>) -> bool {
        if self.opts.since_us.is_none() && self.opts.until_us.is_none() {
            return true;
        }
        let Some(w) = wall else { return false };
        self.opts.since_us.is_none_or(|s| w >= s) && self.opts.until_us.is_none_or(|u| w < u)
    }

    #[inline]
    fn keep_stmt(&self, t: &Tables, stmt: Option<u32>) -> bool {
        match &self.sqlid_match {
            None => true,
            Some(want) => stmt.is_some_and(|i| {
                let s = &t.statements[i as usize];
                s.sqlid == *want || s.hv.is_some_and(|hv| hv.to_string() == *want)
            }),
        }
    }

    fn show_event(&self, name: &str) -> bool {
        self.opts.events.is_empty() || self.opts.events.iter().any(|e| e == name)
    }

    /// Widens the session's span to a record ending at `tim` after `dur` µs, both clipped to the
    /// session's window.
    fn note_span(&mut self, tables: &Tables, session: u32, tim: Option<u64>, dur: u64) {
        if let Some(end) = tim {
            let (mut s, mut t) = (end.saturating_sub(dur), end);
            if let Some(t0) = tables
                .sessions
                .get(session as usize)
                .and_then(|s| s.first_tim)
            {
                (s, t) = (s.max(t0), t.max(t0));
            }
            let i = session as usize;
            if self.span.len() <= i {
                self.span.resize(i + 1, None);
            }
            let e = self.span[i].get_or_insert((s, t));
            e.0 = e.0.min(s);
            e.1 = e.1.max(t);
        }
    }
}

impl Sink for Collector {
    fn call(&mut self, t: &Tables, c: &AccountedCall) {
        if !self.keep_time(c.wall_end_us) || !self.keep_stmt(t, c.stmt) {
            return;
        }
        self.note_span(t, c.at.session, c.tim, c.e);
        let cpu = self
            .cpu
            .entry((c.kind.unwrap_or(CallKind::Exec), c.lob.unwrap_or(u32::MAX)))
            .or_default();
        cpu.kind = "cpu";
        cpu.add(c.window_self_c());
        let un = c.window_unaccounted();
        self.unaccounted.kind = "unaccounted";
        self.unaccounted.add(un);
        self.unaccounted_in_calls += un;
        // With a statement filter the calls kept may be children of calls left out: count each
        // kept call's own time only, so R is the time spent in that statement's calls themselves.
        let clipped = if self.sqlid_match.is_some() {
            self.r += c.window_self_e();
            c.clipped as i64 - c.children_clipped as i64
        } else if c.root {
            self.r += c.window_e() as i64;
            c.clipped as i64
        } else {
            0
        };
        if clipped > 0 {
            self.clipped += clipped;
            self.clipped_calls += 1;
        }
        let s = self.stmts.entry(c.stmt).or_default();
        s.calls += 1;
        s.e += c.e;
        s.c += c.c;
        s.waits += c.waits_ela;
        s.rows = s.rows.saturating_add(c.r);
        s.p = s.p.saturating_add(c.p);
        s.lio = s.lio.saturating_add(c.cr.saturating_add(c.cu));
        if c.root {
            let r = self.roots.entry(c.stmt).or_default();
            r.0 += 1;
            r.1 += c.e;
        } else {
            let r = self.edges.entry((c.parent_stmt, c.stmt)).or_default();
            r.0 += 1;
            r.1 += c.e;
        }
    }

    fn wait(&mut self, t: &Tables, w: &AccountedWait) {
        if !self.keep_time(w.wall_end_us) || !self.keep_stmt(t, w.stmt) {
            return;
        }
        if self.sqlid_match.is_some() && !w.in_call {
            return;
        }
        self.note_span(t, w.at.session, w.tim, w.ela);
        let ela = w.ela - w.clipped;
        if !w.in_call {
            self.r += ela as i64;
            if w.clipped > 0 {
                self.clipped += w.clipped as i64;
                self.clipped_waits += 1;
            }
        }
        let name = &t.names[w.name as usize];
        let i = w.name as usize;
        if self.waits.len() <= i {
            self.waits.resize_with(i + 1, EventAcc::default);
        }
        let acc = &mut self.waits[i];
        acc.kind = "wait";
        acc.add(ela as i64);
        if !w.in_call {
            acc.between += 1;
        }
        let b = bucket(ela);
        acc.skew_n[b] += 1;
        acc.skew_us[b] += ela;
        if self.opts.top > 0 && self.show_event(name) {
            let item = Reverse((w.ela, w.at.file, w.at.line, w.name, w.stmt, w.wall_end_us));
            if self.top.len() < self.opts.top {
                self.top.push(item);
            } else if self.top.peek().is_some_and(|m| item < *m) {
                self.top.pop();
                self.top.push(item);
            }
        }
    }

    fn error(&mut self, t: &Tables, e: &TraceError) {
        if !self.keep_time(e.wall_us) {
            return;
        }
        if self.sqlid_match.is_some() && !self.keep_stmt(t, e.stmt) {
            return;
        }
        let key = format!(
            "{}ORA-{:05}",
            if e.parse { "PARSE ERROR " } else { "" },
            e.err
        );
        *self.errors.entry(key).or_default() += 1;
        if !e.parse {
            self.stmts.entry(e.stmt).or_default().errors += 1;
        }
    }
}

/// Reads the files (in order; each file's sessions are separate) and builds their profile.
pub fn profile_files(paths: &[&Path], opts: &ProfileOptions) -> Result<Profile, TraceReadError> {
    profile_with(opts, |reader| {
        for p in paths {
            reader.read_path(p)?;
        }
        Ok(())
    })
}

/// Profiles one trace held in memory (`name` is used in warnings); for tests and fuzzing.
pub fn profile_bytes(
    name: &str,
    data: &[u8],
    opts: &ProfileOptions,
) -> Result<Profile, TraceReadError> {
    profile_with(opts, |reader| reader.read(name, data))
}

/// The one place a profile is built: a collector set up from `opts`, a reader over it that `read`
/// feeds, then the collector finished with the reader's tables and warnings.
fn profile_with(
    opts: &ProfileOptions,
    read: impl FnOnce(&mut Reader<'_, Collector>) -> Result<(), TraceReadError>,
) -> Result<Profile, TraceReadError> {
    let mut col = Collector {
        opts: opts.clone(),
        sqlid_match: opts.sqlid.clone(),
        ..Collector::default()
    };
    let (tables, warnings, warning_count) = {
        let mut reader = Reader::new(
            &mut col,
            Options {
                strict: opts.strict,
                keep_params: false,
                chunk_bytes: opts.chunk_bytes,
            },
        );
        read(&mut reader)?;
        (reader.tables, reader.warnings, reader.warning_count)
    };
    Ok(col.finish(&tables, warnings, warning_count))
}

impl Collector {
    /// The profile of what was collected: event rows, statements, call tree, slowest waits.
    fn finish(mut self, t: &Tables, warnings: Vec<Warning>, warning_count: u64) -> Profile {
        self.merge_events(t);
        let rows_total: i64 = self.events.values().map(|e| e.total).sum();
        let wall_span: i64 = self
            .span
            .iter()
            .flatten()
            .map(|(s, e)| (e - s) as i64)
            .sum();
        let r = self.r;
        Profile {
            files: t.files.clone(),
            sessions: t.sessions.len(),
            r_us: r,
            rows_total_us: rows_total,
            wall_span_us: wall_span,
            clipped_us: self.clipped,
            clipped_calls: self.clipped_calls,
            clipped_waits: self.clipped_waits,
            unaccounted_between_calls_us: wall_span - r,
            unaccounted_in_calls_us: self.unaccounted_in_calls,
            events: self.event_rows(),
            statements: self.statement_rows(t),
            tree: self.call_tree(t),
            top_waits: self.top_waits(t),
            errors: std::mem::take(&mut self.errors),
            warning_count,
            warnings: warnings.into_iter().take(20).collect(),
            filters: self.filters(),
        }
    }

    /// Moves the waits (by name), the CPU of calls (by kind) and the unaccounted-for time into
    /// `events`, by row name.
    fn merge_events(&mut self, t: &Tables) {
        for (i, acc) in std::mem::take(&mut self.waits).into_iter().enumerate() {
            if acc.calls > 0 {
                self.events.insert(t.names[i].clone(), acc);
            }
        }
        for ((kind, lob), acc) in std::mem::take(&mut self.cpu) {
            let name = match kind {
                CallKind::Lob => t.names.get(lob as usize).map_or("LOB", |s| s.as_str()),
                k => k.as_str(),
            };
            self.events.insert(format!("CPU: {name} calls"), acc);
        }
        let un = std::mem::take(&mut self.unaccounted);
        if un.calls > 0 {
            self.events
                .insert("unaccounted-for within db calls".to_string(), un);
        }
    }

    /// The event rows shown (waits limited to `--event`), largest first.
    fn event_rows(&self) -> Vec<EventRow> {
        let r = self.r;
        let mut events: Vec<EventRow> = self
            .events
            .iter()
            .filter(|(n, a)| a.kind != "wait" || self.show_event(n))
            .map(|(n, a)| EventRow {
                name: n.clone(),
                kind: a.kind,
                calls: a.calls,
                total_us: a.total,
                mean_us: if a.calls > 0 {
                    a.total as f64 / a.calls as f64
                } else {
                    0.0
                },
                min_us: a.min,
                max_us: a.max,
                pct_r: if r != 0 {
                    100.0 * a.total as f64 / r as f64
                } else {
                    0.0
                },
                between_calls: a.between,
                skew_counts: if a.kind == "wait" {
                    a.skew_n.to_vec()
                } else {
                    Vec::new()
                },
                skew_us: if a.kind == "wait" {
                    a.skew_us.to_vec()
                } else {
                    Vec::new()
                },
            })
            .collect();
        events.sort_by(|a, b| b.total_us.cmp(&a.total_us).then(a.name.cmp(&b.name)));
        events
    }

    /// One row per statement, by e descending.
    fn statement_rows(&self, t: &Tables) -> Vec<StatementRow> {
        let mut statements: Vec<StatementRow> = self
            .stmts
            .iter()
            .map(|(k, a)| {
                let (sqlid, hv, dep, text, plan) = match k {
                    Some(i) => {
                        let s = &t.statements[*i as usize];
                        (s.sqlid.clone(), s.hv, s.dep, s.text.clone(), s.plan.clone())
                    }
                    None => (
                        String::new(),
                        None,
                        0,
                        "(cursors with no PARSING IN CURSOR in the trace, and LOB calls)".into(),
                        Vec::new(),
                    ),
                };
                StatementRow {
                    sqlid,
                    hv,
                    dep,
                    text,
                    calls: a.calls,
                    e_us: a.e,
                    c_us: a.c,
                    waits_us: a.waits,
                    rows: a.rows,
                    p: a.p,
                    lio: a.lio,
                    errors: a.errors,
                    plan,
                }
            })
            .collect();
        statements.sort_by(|a, b| {
            b.e_us
                .cmp(&a.e_us)
                .then(a.sqlid.cmp(&b.sqlid))
                .then(a.hv.cmp(&b.hv))
                .then(a.dep.cmp(&b.dep))
                .then(a.text.cmp(&b.text))
        });
        statements
    }

    /// The call tree from the root calls' statements down, largest first.
    fn call_tree(&self, t: &Tables) -> Vec<TreeNode> {
        let mut tree: Vec<TreeNode> = self
            .roots
            .iter()
            .map(|(s, (n, e))| {
                let mut path = vec![*s];
                TreeNode {
                    statement: stmt_label(t, *s),
                    calls: *n,
                    e_us: *e,
                    children: self.children_of(t, *s, &mut path),
                }
            })
            .collect();
        // Ties in a stable order (the maps' iteration order depends on the hasher).
        tree.sort_by(|a, b| {
            (Reverse(a.e_us), &a.statement, a.calls).cmp(&(Reverse(b.e_us), &b.statement, b.calls))
        });
        tree
    }

    /// The slowest waits, slowest first.
    fn top_waits(&mut self, t: &Tables) -> Vec<TopWait> {
        let mut top: Vec<_> = std::mem::take(&mut self.top)
            .into_iter()
            .map(|Reverse(x)| x)
            .collect();
        top.sort_by(|a, b| b.cmp(a));
        top.into_iter()
            .map(|(ela, file, line, name, stmt, wall)| TopWait {
                name: t.names[name as usize].clone(),
                ela_us: ela,
                at: format!("{}:{}", t.files[file as usize].path, line),
                sqlid: stmt
                    .map(|s| t.statements[s as usize].sqlid.clone())
                    .unwrap_or_default(),
                wall_end: wall.and_then(format_wall),
            })
            .collect()
    }

    /// The filters applied, as shown.
    fn filters(&self) -> Vec<String> {
        let mut filters = Vec::new();
        if let Some(s) = self.opts.since_us {
            filters.push(format!("since {}", format_wall(s).unwrap_or_default()));
        }
        if let Some(u) = self.opts.until_us {
            filters.push(format!("until {}", format_wall(u).unwrap_or_default()));
        }
        if let Some(q) = &self.opts.sqlid {
            filters.push(format!("sqlid {q}"));
        }
        for e in &self.opts.events {
            filters.push(format!("event '{e}'"));
        }
        filters
    }

    fn children_of(
        &self,
        t: &Tables,
        parent: Option<u32>,
        path: &mut Vec<Option<u32>>,
    ) -> Vec<TreeNode> {
        let mut out: Vec<TreeNode> = self
            .edges
            .iter()
            .filter(|((p, _), _)| *p == parent)
            .map(|((_, c), (n, e))| {
                // A statement can call itself (recursive PL/SQL): stop at the first repeat.
                let children = if path.contains(c) || path.len() > 32 {
                    Vec::new()
                } else {
                    path.push(*c);
                    let ch = self.children_of(t, *c, path);
                    path.pop();
                    ch
                };
                TreeNode {
                    statement: stmt_label(t, *c),
                    calls: *n,
                    e_us: *e,
                    children,
                }
            })
            .collect();
        out.sort_by(|a, b| {
            (Reverse(a.e_us), &a.statement, a.calls).cmp(&(Reverse(b.e_us), &b.statement, b.calls))
        });
        out
    }
}

/// Unix µs as RFC 3339 UTC with microseconds.
pub fn format_wall(us: i64) -> Option<String> {
    chrono::DateTime::from_timestamp_micros(us)
        .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
}

fn secs(us: i64) -> String {
    format!("{:.6}", us as f64 / 1e6)
}

/// Renders the profile as text.
pub fn render_text(p: &Profile, statements_shown: usize) -> String {
    render_text_with(p, statements_shown, false)
}

/// [`render_text`], with each listed statement's plan (its STAT lines) under it when `plans`.
pub fn render_text_with(p: &Profile, statements_shown: usize, plans: bool) -> String {
    let mut o = String::new();
    // Writing to a String does not fail.
    let _ = text_sections(&mut o, p, statements_shown, plans);
    o
}

/// The sections of the text profile, one after the other.
fn text_sections(o: &mut String, p: &Profile, statements_shown: usize, plans: bool) -> fmt::Result {
    text_summary(o, p)?;
    text_events(o, p)?;
    text_statements(o, p, statements_shown, plans)?;
    text_call_tree(o, p)?;
    text_skew(o, p)?;
    text_slowest_waits(o, p)?;
    text_errors(o, p)?;
    text_warnings(o, p)
}

/// The files read, the filters, R and the wall span.
fn text_summary(o: &mut String, p: &Profile) -> fmt::Result {
    for f in &p.files {
        writeln!(
            o,
            "file {}: Oracle {}, times in {} ({}), {} lines, {} bytes, {} skipped, {} malformed",
            f.path,
            f.version.as_deref().unwrap_or("version unknown"),
            match f.unit {
                Unit::Microseconds => "microseconds",
                Unit::Centiseconds => "centiseconds, converted to µs",
            },
            if f.unit_source == "header" {
                "from the header"
            } else {
                "no release in the header: assumed"
            },
            f.lines,
            f.bytes,
            f.skipped_lines,
            f.malformed_lines
        )?;
    }
    if !p.filters.is_empty() {
        writeln!(o, "filters: {}", p.filters.join(", "))?;
    }
    writeln!(
        o,
        "sessions {}  R = {} s  (wall span {} s; unaccounted-for between calls {} s, within calls {} s)",
        p.sessions,
        secs(p.r_us),
        secs(p.wall_span_us),
        secs(p.unaccounted_between_calls_us),
        secs(p.unaccounted_in_calls_us)
    )?;
    if p.clipped_us != 0 {
        writeln!(o, "{}", clipped_line(p))?;
    }
    writeln!(o)?;
    Ok(())
}

/// The line that says how much of the calls and waits lay before the trace's window.
pub fn clipped_line(p: &Profile) -> String {
    let n = |k: u64, one: &str| format!("{k} {one}{}", if k == 1 { "" } else { "s" });
    format!(
        "clipped: {} s of calls and waits that began before the trace's first timestamp ({}, {}), \
         left out of R",
        secs(p.clipped_us),
        n(p.clipped_calls, "call"),
        n(p.clipped_waits, "wait")
    )
}

/// The event profile.
fn text_events(o: &mut String, p: &Profile) -> fmt::Result {
    writeln!(
        o,
        "{:<44} {:>9} {:>14} {:>7} {:>12} {:>10} {:>12}",
        "response time by event", "calls", "total s", "% R", "mean µs", "min µs", "max µs"
    )?;
    for e in &p.events {
        writeln!(
            o,
            "{:<44} {:>9} {:>14} {:>6.1}% {:>12.1} {:>10} {:>12}",
            truncate(&e.name, 44),
            e.calls,
            secs(e.total_us),
            e.pct_r,
            e.mean_us,
            e.min_us,
            e.max_us
        )?;
    }
    writeln!(
        o,
        "{:<44} {:>9} {:>14} {:>6.1}%",
        "total",
        "",
        secs(p.rows_total_us),
        if p.r_us != 0 {
            100.0 * p.rows_total_us as f64 / p.r_us as f64
        } else {
            0.0
        }
    )?;
    writeln!(o)?;
    Ok(())
}

/// A statement's plan as its STAT lines gave it, indented by depth under the parent row source.
fn text_plan(o: &mut String, plan: &[crate::model::PlanLine]) -> fmt::Result {
    if plan.is_empty() {
        return writeln!(o, "    (no plan: the trace has no STAT lines for it)");
    }
    writeln!(
        o,
        "    {:>5} {:>10} {:>10}  row source",
        "id", "rows", "obj"
    )?;
    let depth_of = |id: u32| {
        let mut d = 0usize;
        let mut cur = id;
        // Parents come before children; a damaged plan cannot loop forever.
        while let Some(l) = plan.iter().find(|l| l.id == cur && l.pid != l.id) {
            if l.pid == 0 || d > plan.len() {
                break;
            }
            d += 1;
            cur = l.pid;
        }
        d
    };
    for l in plan {
        writeln!(
            o,
            "    {:>5} {:>10} {:>10}  {}{}",
            l.id,
            l.cnt,
            l.obj,
            "  ".repeat(depth_of(l.id)),
            l.op
        )?;
    }
    Ok(())
}

/// The statements, the first `shown` of them: time, rows, physical reads (`p`) and logical reads
/// (`cr + cu`), and with `plans` each one's plan under it.
fn text_statements(o: &mut String, p: &Profile, shown: usize, plans: bool) -> fmt::Result {
    writeln!(
        o,
        "{:<15} {:>3} {:>7} {:>12} {:>12} {:>12} {:>10} {:>10} {:>12}  text",
        "by statement", "dep", "calls", "e s", "c s", "waits s", "rows", "phys rd", "logical rd"
    )?;
    for s in p.statements.iter().take(shown) {
        let id = if !s.sqlid.is_empty() {
            s.sqlid.clone()
        } else {
            s.hv.map(|h| format!("hv {h}"))
                .unwrap_or_else(|| "-".into())
        };
        writeln!(
            o,
            "{:<15} {:>3} {:>7} {:>12} {:>12} {:>12} {:>10} {:>10} {:>12}  {}",
            id,
            s.dep,
            s.calls,
            secs(s.e_us as i64),
            secs(s.c_us as i64),
            secs(s.waits_us as i64),
            s.rows,
            s.p,
            s.lio,
            truncate(&s.text, 60)
        )?;
        if plans {
            text_plan(o, &s.plan)?;
        }
    }
    if p.statements.len() > shown {
        writeln!(
            o,
            "… {} more statements (--json lists all)",
            p.statements.len() - shown
        )?;
    }
    writeln!(o)?;
    Ok(())
}

/// The recursive call tree.
fn text_call_tree(o: &mut String, p: &Profile) -> fmt::Result {
    writeln!(o, "call tree (e s, calls):")?;
    fn walk(o: &mut String, n: &TreeNode, depth: usize) -> fmt::Result {
        writeln!(
            o,
            "{:indent$}{} s  {}×  {}",
            "",
            secs(n.e_us as i64),
            n.calls,
            truncate(&n.statement, 70),
            indent = 2 + depth * 2
        )?;
        for c in &n.children {
            walk(o, c, depth + 1)?;
        }
        Ok(())
    }
    for n in &p.tree {
        walk(o, n, 0)?;
    }
    writeln!(o)?;
    Ok(())
}

/// The skew histogram of each wait event.
fn text_skew(o: &mut String, p: &Profile) -> fmt::Result {
    let labels = [
        "<1µs", "1µs", "10µs", "100µs", "1ms", "10ms", "100ms", "1s", "10s", "100s", "≥1000s",
    ];
    writeln!(
        o,
        "skew (waits per duration bucket, from each bucket's lower bound):"
    )?;
    write!(o, "{:<36}", "event")?;
    for l in &labels {
        write!(o, " {l:>7}")?;
    }
    writeln!(o)?;
    for e in p.events.iter().filter(|e| e.kind == "wait") {
        write!(o, "{:<36}", truncate(&e.name, 36))?;
        for n in &e.skew_counts {
            write!(o, " {n:>7}")?;
        }
        writeln!(o)?;
    }
    Ok(())
}

/// The slowest waits.
fn text_slowest_waits(o: &mut String, p: &Profile) -> fmt::Result {
    if !p.top_waits.is_empty() {
        writeln!(o)?;
        writeln!(o, "slowest waits:")?;
        for w in &p.top_waits {
            writeln!(
                o,
                "{:>12} µs  {:<36} {}  {}{}",
                w.ela_us,
                truncate(&w.name, 36),
                w.at,
                w.sqlid,
                w.wall_end
                    .as_deref()
                    .map(|s| format!("  {s}"))
                    .unwrap_or_default()
            )?;
        }
    }
    Ok(())
}

/// The db errors, by ORA- number.
fn text_errors(o: &mut String, p: &Profile) -> fmt::Result {
    if !p.errors.is_empty() {
        writeln!(o)?;
        for (k, n) in &p.errors {
            writeln!(o, "error {k}: {n}")?;
        }
    }
    Ok(())
}

/// The warnings.
fn text_warnings(o: &mut String, p: &Profile) -> fmt::Result {
    if p.warning_count > 0 {
        writeln!(o)?;
        writeln!(o, "{} warnings (malformed lines):", p.warning_count)?;
        for w in &p.warnings {
            writeln!(o, "  {w}")?;
        }
    }
    Ok(())
}

fn stmt_label(t: &Tables, s: Option<u32>) -> String {
    match s {
        None => "(unknown cursor)".into(),
        Some(i) => {
            let st = &t.statements[i as usize];
            let id = if !st.sqlid.is_empty() {
                st.sqlid.clone()
            } else {
                st.hv
                    .map(|h| format!("hv {h}"))
                    .unwrap_or_else(|| "-".into())
            };
            format!("{id} {}", st.text)
        }
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}
