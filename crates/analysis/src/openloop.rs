//! Open-loop figures of a run whose operations carry intended starts (`run --rate`, `io redo`):
//! latency from the intended start (coordinated-omission corrected) per event name, and the
//! backlog (operations due but not yet started) second by second.
//!
//! An operation is the run of consecutive events of one session that share an intended start
//! (e.g. `update` + `commit`); it is *due* at its intended start and *started* at the start of
//! its first event. The backlog at the end of second k is the operations due by then minus those
//! started by then. An operation is *late* when its session was still busy with an earlier one at
//! its intended start (it then starts at once, behind schedule); otherwise it is *on time*: the
//! session waited for the intended start, and what it started after it is the client's own
//! wake-up, reported apart since every latency from the intended start holds it too.

use std::collections::hash_map::{Entry, HashMap};

use serde::Serialize;

use dbscope_core::Event;

pub use crate::summary::FromIntended;
use crate::text::{sig3, thousands};

/// Operations offered, started and waiting, second by second from the run's clock origin.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Backlog {
    /// Operations whose intended start fell in each second.
    pub due_per_s: Vec<u64>,
    /// Operations that started in each second.
    pub started_per_s: Vec<u64>,
    /// Operations due but not started at the end of each second.
    pub backlog: Vec<u64>,
    /// The largest backlog at the end of a second.
    pub max: u64,
    /// Operations due by the end of the run that never started.
    pub at_end: u64,
    /// Operations that started (warm-up included), and of them those on time (their session
    /// idle at their intended start).
    pub operations: u64,
    pub on_time: u64,
    /// How long after their intended start the on-time operations started (the client's
    /// wake-up), µs; `None` without any.
    pub start_lag_us: Option<StartLag>,
}

/// The start lag of on-time operations, from 1-µs buckets (exact to the µs below 10 ms).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StartLag {
    pub median: f64,
    pub p99: f64,
    pub max: f64,
}

impl Backlog {
    /// Takes the operations due per second from the run's `pacing` counters (the runner counts
    /// every intended start up to the end, started or not), when it has them, and recomputes the
    /// backlog with them; [`Backlog::at_end`] is then what was due and never started.
    pub fn with_pacing(self, sections: &[dbscope_core::CounterSection]) -> Backlog {
        let Some(table) = sections
            .iter()
            .filter(|s| s.key == "pacing")
            .flat_map(|s| &s.tables)
            .find(|t| t.key == "per_second")
        else {
            return self;
        };
        let due: Vec<u64> = table
            .rows
            .iter()
            .map(|r| r.get(1).and_then(|v| v.to_json().as_u64()).unwrap_or(0))
            .collect();
        Backlog {
            operations: self.operations,
            on_time: self.on_time,
            start_lag_us: self.start_lag_us,
            ..Backlog::from_series(due, self.started_per_s)
        }
    }

    fn from_series(mut due: Vec<u64>, mut started: Vec<u64>) -> Backlog {
        let n = due.len().max(started.len());
        due.resize(n, 0);
        started.resize(n, 0);
        let (mut cd, mut cs) = (0u64, 0u64);
        let backlog: Vec<u64> = due
            .iter()
            .zip(&started)
            .map(|(d, s)| {
                cd += d;
                cs += s;
                cd.saturating_sub(cs)
            })
            .collect();
        Backlog {
            max: backlog.iter().copied().max().unwrap_or(0),
            at_end: cd.saturating_sub(cs),
            due_per_s: due,
            started_per_s: started,
            backlog,
            operations: 0,
            on_time: 0,
            start_lag_us: None,
        }
    }
}

/// Collects operations while blocks stream by (each session's events in the order it recorded
/// them, as the event files keep them).
#[derive(Debug, Default)]
pub struct BacklogAcc {
    /// Per session: its current operation.
    current: HashMap<u32, Current>,
    due: Vec<u64>,
    started: Vec<u64>,
    operations: u64,
    on_time: u64,
    /// On-time start lags in 1-µs buckets; the last bucket holds 10 ms and more.
    lag_us: Vec<u64>,
    lag_max_ns: u64,
}

#[derive(Debug)]
struct Current {
    intended: u64,
    late: bool,
    /// The latest end of the session's events so far.
    end: u64,
}

const LAG_BUCKETS: usize = 10_000;

impl BacklogAcc {
    /// Counts `e` if it opens an operation (warm-up included: this is a time series); true when
    /// `e`'s operation is late (false for an event without an intended start).
    pub fn add(&mut self, e: &Event) -> bool {
        let Some(intended) = e.intended_start_ns else {
            return false;
        };
        let end = e.start_ns.saturating_add(e.duration_ns);
        // One look-up per event: the session's current operation, opened here if new.
        let late = match self.current.entry(e.session) {
            Entry::Occupied(o) => {
                let c = o.into_mut();
                if c.intended == intended {
                    c.end = c.end.max(end);
                    return c.late;
                }
                let late = c.end > intended;
                *c = Current {
                    intended,
                    late,
                    end: c.end.max(end),
                };
                late
            }
            Entry::Vacant(v) => {
                v.insert(Current {
                    intended,
                    late: false,
                    end,
                });
                false
            }
        };
        bump(&mut self.due, intended);
        bump(&mut self.started, e.start_ns.max(intended));
        self.operations += 1;
        if !late {
            self.on_time += 1;
            let lag = e.start_ns.saturating_sub(intended);
            if self.lag_us.is_empty() {
                self.lag_us = vec![0; LAG_BUCKETS];
            }
            self.lag_us[((lag / 1000) as usize).min(LAG_BUCKETS - 1)] += 1;
            self.lag_max_ns = self.lag_max_ns.max(lag);
        }
        late
    }

    /// The series, or `None` when no event carried an intended start.
    pub fn finish(self) -> Option<Backlog> {
        if self.current.is_empty() {
            return None;
        }
        let start_lag_us = (self.on_time > 0).then(|| {
            let max = self.lag_max_ns as f64 / 1e3;
            // The bucket holding rank ⌈q·n⌉, at its lower edge, and never above the max.
            let at = |q: f64| {
                let rank = ((q * self.on_time as f64).ceil() as u64).max(1);
                let mut seen = 0;
                for (us, n) in self.lag_us.iter().enumerate() {
                    seen += n;
                    if seen >= rank {
                        return (us as f64).min(max);
                    }
                }
                max
            };
            StartLag {
                median: at(0.5),
                p99: at(0.99),
                max,
            }
        });
        Some(Backlog {
            operations: self.operations,
            on_time: self.on_time,
            start_lag_us,
            ..Backlog::from_series(self.due, self.started)
        })
    }
}

fn bump(v: &mut Vec<u64>, ns: u64) {
    let s = (ns / 1_000_000_000) as usize;
    if v.len() <= s {
        v.resize(s + 1, 0);
    }
    v[s] += 1;
}

/// The backlog series of a run alone (what `report` computes with the rest), for `compare
/// --html`; `None` when no event carries an intended start.
pub fn backlog_of(run: &dbscope_core::RunDir) -> Result<Option<Backlog>, dbscope_core::Error> {
    let mut acc = BacklogAcc::default();
    run.for_each_block(|_, events| {
        for e in events {
            acc.add(e);
        }
    })?;
    // Without readable counters the series stands on the events alone, as in `report`.
    let counters = run.counters().map(|c| c.sections).unwrap_or_default();
    Ok(acc.finish().map(|b| b.with_pacing(&counters)))
}

/// The CO-corrected line of one event, under its service-time lines.
pub fn push_event_text(out: &mut String, f: &FromIntended) {
    let s = &f.summary_us;
    let p = &f.percentiles_us;
    out.push_str(&format!(
        "   from intended start (CO-corrected): median {}  mean {}  p90 {}  p99 {}  p99.9 {}  max {}  \
         late {} of {}   (µs)\n",
        sig3(s.median),
        sig3(s.mean),
        sig3(p.p90),
        sig3(p.p99),
        sig3(p.p99_9),
        sig3(s.max),
        thousands(f.late),
        thousands(f.count)
    ));
}

/// The backlog section: totals, then the per-second series (at most 60 seconds shown).
pub fn push_backlog_text(out: &mut String, b: &Backlog) {
    let started: u64 = b.started_per_s.iter().sum();
    out.push_str(&format!(
        "\nopen loop   {} operations started; backlog (due, not started) max {}, at the end {}\n",
        thousands(started),
        thousands(b.max),
        thousands(b.at_end)
    ));
    if b.operations > 0 {
        out.push_str(&format!(
            "   on time {} of {} (their session idle at the intended start; late: behind its last)\n",
            thousands(b.on_time),
            thousands(b.operations)
        ));
    }
    if let Some(l) = &b.start_lag_us {
        out.push_str(&format!(
            "   on-time start lag: median {}  p99 {}  max {}   (µs after the intended start: the \
             client's wake-up)\n",
            sig3(l.median),
            sig3(l.p99),
            sig3(l.max)
        ));
    }
    let shown = b.backlog.len().min(60);
    out.push_str("   second        due    started    backlog\n");
    for i in 0..shown {
        out.push_str(&format!(
            "   {:>6}   {:>8}   {:>8}   {:>8}\n",
            i,
            thousands(b.due_per_s[i]),
            thousands(b.started_per_s[i]),
            thousands(b.backlog[i])
        ));
    }
    if b.backlog.len() > shown {
        out.push_str(&format!(
            "   … {} more seconds (report --json has them all)\n",
            b.backlog.len() - shown
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(session: u32, start_s: f64, intended_s: f64) -> Event {
        Event {
            session,
            name: 0,
            start_ns: (start_s * 1e9) as u64,
            duration_ns: 1000,
            intended_start_ns: Some((intended_s * 1e9) as u64),
            outcome: 0,
            flags: 0,
            rows: 0,
        }
    }

    #[test]
    fn backlog_counts_operations_not_events() {
        let mut acc = BacklogAcc::default();
        // Session 0: on time. Session 1: falls behind, second event of each op shares its start.
        for (start, intended) in [(0.1, 0.1), (1.1, 1.1), (2.1, 2.1)] {
            acc.add(&ev(0, start, intended));
            acc.add(&ev(0, start + 0.01, intended));
        }
        for (start, intended) in [(0.2, 0.2), (1.9, 0.4), (2.9, 0.6), (3.5, 0.8)] {
            acc.add(&ev(1, start, intended));
            acc.add(&ev(1, start + 0.01, intended));
        }
        let b = acc.finish().unwrap();
        assert_eq!(b.due_per_s, vec![5, 1, 1, 0]);
        assert_eq!(b.started_per_s, vec![2, 2, 2, 1]);
        assert_eq!(b.backlog, vec![3, 2, 1, 0]);
        assert_eq!(b.max, 3);
        assert_eq!(b.at_end, 0);
    }

    /// Late means the session was busy at the intended start, whatever the start's lag; the
    /// on-time operations' lags are the client's wake-up, reported to the µs.
    #[test]
    fn an_operation_is_late_when_its_session_was_busy_at_its_intended_start() {
        let mut acc = BacklogAcc::default();
        let op = |acc: &mut BacklogAcc, intended_us: u64, start_us: u64, dur_us: u64| {
            let e = Event {
                session: 0,
                name: 0,
                start_ns: start_us * 1000,
                duration_ns: dur_us * 1000,
                intended_start_ns: Some(intended_us * 1000),
                outcome: 0,
                flags: 0,
                rows: 0,
            };
            // An operation of two events (update + commit): both share its lateness.
            let first = acc.add(&e);
            let second = acc.add(&Event {
                start_ns: e.start_ns + e.duration_ns,
                ..e
            });
            assert_eq!(first, second);
            first
        };
        // On time (idle session), 20 µs after the intended start; ends at 1,220.
        assert!(!op(&mut acc, 1_000, 1_020, 100));
        // Due at 1,200 while the one before ran: late, though it started only 30 µs after.
        assert!(op(&mut acc, 1_200, 1_230, 100));
        // Due at 5,000, long after: on time, 3,000 µs after it (the client was starved).
        assert!(!op(&mut acc, 5_000, 8_000, 10));
        // On time, 40 µs.
        assert!(!op(&mut acc, 9_000, 9_040, 10));
        // Another session is its own schedule.
        let other = Event {
            session: 1,
            name: 0,
            start_ns: 1_210_000,
            duration_ns: 10_000,
            intended_start_ns: Some(1_200_000),
            outcome: 0,
            flags: 0,
            rows: 0,
        };
        assert!(!acc.add(&other));
        let b = acc.finish().unwrap();
        assert_eq!((b.operations, b.on_time), (5, 4));
        let l = b.start_lag_us.unwrap();
        // Lags 10, 20, 40, 3,000 µs: the median is the 2nd, p99 the 4th.
        assert_eq!((l.median, l.p99, l.max), (20.0, 3_000.0, 3_000.0));
    }

    #[test]
    fn closed_loop_events_give_no_backlog() {
        let mut acc = BacklogAcc::default();
        let mut e = ev(0, 1.0, 1.0);
        e.intended_start_ns = None;
        acc.add(&e);
        assert!(acc.finish().is_none());
    }
}
