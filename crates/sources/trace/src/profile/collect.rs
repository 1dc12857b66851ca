//! The profile's [`Sink`]: accumulators filled as the reader hands over calls, waits and errors.
//!
//! Per wait event, per call kind and per statement; the call tree's edges, the slowest waits and
//! each session's span; all within the filters and each session's window.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};

use rustc_hash::FxHashMap;

use super::{ProfileOptions, SKEW_BOUNDS_US};
use crate::line::CallKind;
use crate::model::{AccountedCall, AccountedWait, Tables, TraceError};
use crate::sink::Sink;

/// One event row in the making: count, total, extremes and, for waits, the skew buckets.
#[derive(Default)]
pub(super) struct EventAcc {
    pub(super) kind: &'static str,
    pub(super) calls: u64,
    pub(super) total: i64,
    pub(super) min: i64,
    pub(super) max: i64,
    pub(super) between: u64,
    pub(super) skew_n: [u64; 11],
    pub(super) skew_us: [u64; 11],
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

/// One statement's sums over its calls.
#[derive(Default)]
pub(super) struct StmtAcc {
    pub(super) calls: u64,
    pub(super) e: u64,
    pub(super) c: u64,
    pub(super) waits: u64,
    pub(super) rows: u64,
    pub(super) p: u64,
    pub(super) lio: u64,
    pub(super) errors: u64,
}

/// (ela, file, line, name, statement, wall end): ordered by ela first, then place.
pub(super) type TopKey = (u64, u32, u64, u32, Option<u32>, Option<i64>);

/// Everything a profile is made from, gathered in one pass over the trace.
#[derive(Default)]
pub(super) struct Collector {
    pub(super) opts: ProfileOptions,
    pub(super) sqlid_match: Option<String>,
    pub(super) events: HashMap<String, EventAcc>,
    /// Per wait name id (the hot path; merged into `events` at the end).
    pub(super) waits: Vec<EventAcc>,
    /// Per (call kind, LOB name id).
    pub(super) cpu: FxHashMap<(CallKind, u32), EventAcc>,
    pub(super) unaccounted: EventAcc,
    pub(super) stmts: FxHashMap<Option<u32>, StmtAcc>,
    pub(super) edges: FxHashMap<(Option<u32>, Option<u32>), (u64, u64)>,
    pub(super) roots: FxHashMap<Option<u32>, (u64, u64)>,
    pub(super) top: BinaryHeap<Reverse<TopKey>>,
    pub(super) r: i64,
    pub(super) clipped: i64,
    pub(super) clipped_calls: u64,
    pub(super) clipped_waits: u64,
    pub(super) unaccounted_in_calls: i64,
    /// Per session index: (first start, last end) on the `tim` clock.
    pub(super) span: Vec<Option<(u64, u64)>>,
    pub(super) errors: BTreeMap<String, u64>,
}

/// The skew bucket of a wait of `us` µs (see [`SKEW_BOUNDS_US`]).
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

    pub(super) fn show_event(&self, name: &str) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skew_buckets_are_powers_of_ten_with_exclusive_upper_bounds() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(1), 1);
        assert_eq!(bucket(9), 1);
        assert_eq!(bucket(10), 2);
        assert_eq!(bucket(999), 3);
        assert_eq!(bucket(1_000), 4);
        assert_eq!(bucket(999_999_999), 9);
        assert_eq!(bucket(1_000_000_000), 10, "1000 s and more");
        assert_eq!(bucket(u64::MAX), 10);
    }

    #[test]
    fn an_event_accumulator_keeps_count_total_and_extremes() {
        let mut a = EventAcc::default();
        for v in [5, -3, 12] {
            a.add(v);
        }
        assert_eq!((a.calls, a.total, a.min, a.max), (3, 14, -3, 12));
        // The first value sets both extremes, whatever the defaults were.
        let mut b = EventAcc::default();
        b.add(7);
        assert_eq!((b.min, b.max), (7, 7));
    }

    #[test]
    fn the_time_filter_keeps_since_inclusive_until_exclusive() {
        let all = Collector::default();
        assert!(
            all.keep_time(None),
            "no filter keeps records with no wall time"
        );
        let c = Collector {
            opts: ProfileOptions {
                since_us: Some(100),
                until_us: Some(200),
                ..ProfileOptions::default()
            },
            ..Collector::default()
        };
        assert!(!c.keep_time(None), "a filter needs a wall time");
        assert!(!c.keep_time(Some(99)));
        assert!(c.keep_time(Some(100)));
        assert!(c.keep_time(Some(199)));
        assert!(!c.keep_time(Some(200)));
    }

    #[test]
    fn the_event_filter_shows_only_the_events_named() {
        let c = Collector {
            opts: ProfileOptions {
                events: vec!["log file sync".into()],
                ..ProfileOptions::default()
            },
            ..Collector::default()
        };
        assert!(c.show_event("log file sync"));
        assert!(!c.show_event("db file sequential read"));
        assert!(Collector::default().show_event("anything"));
    }
}
