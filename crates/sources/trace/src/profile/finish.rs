//! The collector's accumulators turned into the [`Profile`].
//!
//! Event rows that add up to R, statements by `e`, the call tree largest first, the slowest waits
//! slowest first and the filters as shown.

use std::cmp::Reverse;

use super::collect::Collector;
use super::text::format_wall;
use super::{EventRow, Profile, StatementRow, TopWait, TreeNode};
use crate::line::CallKind;
use crate::model::{Tables, Warning};

impl Collector {
    /// The profile of what was collected: event rows, statements, call tree, slowest waits.
    pub(super) fn finish(
        mut self,
        t: &Tables,
        warnings: Vec<Warning>,
        warning_count: u64,
    ) -> Profile {
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

#[cfg(test)]
mod tests {
    use super::super::testdata::{NAME, TRACE};
    use super::super::{profile_bytes, ProfileOptions};
    use super::*;

    fn profile(opts: &ProfileOptions) -> Profile {
        profile_bytes(NAME, TRACE.as_bytes(), opts).expect("the test trace reads")
    }

    #[test]
    fn the_event_rows_add_up_to_r_as_worked_out_by_hand() {
        let p = profile(&ProfileOptions::default());
        assert_eq!(p.sessions, 1);
        assert_eq!(p.r_us, 2_520);
        assert_eq!(p.rows_total_us, 2_520);
        assert_eq!(p.wall_span_us, 2_600);
        assert_eq!(p.unaccounted_between_calls_us, 80);
        assert_eq!(p.unaccounted_in_calls_us, 10);
        assert_eq!((p.clipped_us, p.clipped_calls, p.clipped_waits), (0, 0, 0));
        let rows: Vec<(&str, &str, u64, i64)> = p
            .events
            .iter()
            .map(|e| (e.name.as_str(), e.kind, e.calls, e.total_us))
            .collect();
        assert_eq!(
            rows,
            [
                ("SQL*Net message from client", "wait", 1, 2_000),
                ("db file scattered read", "wait", 1, 300),
                ("db file sequential read", "wait", 1, 100),
                ("CPU: FETCH calls", "cpu", 1, 70),
                ("CPU: EXEC calls", "cpu", 1, 30),
                // Ties by name.
                ("CPU: PARSE calls", "cpu", 1, 10),
                ("unaccounted-for within db calls", "unaccounted", 3, 10),
            ]
        );
        let net = &p.events[0];
        assert_eq!(net.between_calls, 1);
        assert!((net.pct_r - 100.0 * 2_000.0 / 2_520.0).abs() < 1e-9);
        // 2,000 µs is in the [1 ms, 10 ms) bucket.
        assert_eq!(net.skew_counts, [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(net.skew_us[4], 2_000);
        assert_eq!(p.events[1].between_calls, 0, "inside the FETCH");
        let un = &p.events[6];
        assert_eq!((un.min_us, un.max_us), (-20, 20));
        assert!((un.mean_us - 10.0 / 3.0).abs() < 1e-9);
        assert!(un.skew_counts.is_empty() && p.events[3].skew_us.is_empty());
    }

    #[test]
    fn statements_sum_their_calls_and_the_tree_nests_recursive_sql() {
        let p = profile(&ProfileOptions::default());
        let st: Vec<_> = p
            .statements
            .iter()
            .map(|s| {
                (
                    s.sqlid.as_str(),
                    s.hv,
                    s.dep,
                    s.text.as_str(),
                    (s.calls, s.e_us, s.c_us, s.waits_us),
                    (s.rows, s.p, s.lio, s.errors),
                )
            })
            .collect();
        assert_eq!(
            st,
            [
                (
                    "aaaaaaaaaaaa1",
                    Some(111),
                    0,
                    "select * from t",
                    (2, 520, 110, 300),
                    (3, 5, 10, 0)
                ),
                (
                    "bbbbbbbbbbbb2",
                    Some(222),
                    1,
                    "select x from dual",
                    (1, 150, 30, 100),
                    (1, 1, 1, 0)
                ),
            ]
        );
        assert_eq!(p.tree.len(), 1);
        let root = &p.tree[0];
        assert_eq!(root.statement, "aaaaaaaaaaaa1 select * from t");
        assert_eq!((root.calls, root.e_us), (2, 520));
        assert_eq!(root.children.len(), 1);
        let child = &root.children[0];
        assert_eq!(child.statement, "bbbbbbbbbbbb2 select x from dual");
        assert_eq!((child.calls, child.e_us), (1, 150));
        assert!(child.children.is_empty());
    }

    #[test]
    fn the_slowest_waits_come_slowest_first_with_their_place() {
        let p = profile(&ProfileOptions {
            top: 2,
            ..ProfileOptions::default()
        });
        let top: Vec<_> = p
            .top_waits
            .iter()
            .map(|w| (w.name.as_str(), w.ela_us, w.at.as_str(), w.sqlid.as_str()))
            .collect();
        assert_eq!(
            top,
            [
                (
                    "SQL*Net message from client",
                    2_000,
                    "t.trc:17",
                    "aaaaaaaaaaaa1"
                ),
                ("db file scattered read", 300, "t.trc:15", "aaaaaaaaaaaa1"),
            ]
        );
        assert!(
            p.top_waits.iter().all(|w| w.wall_end.is_none()),
            "no *** timestamp line"
        );
        assert!(p.filters.is_empty());
    }

    #[test]
    fn a_statement_filter_counts_its_calls_own_time_only() {
        for want in ["bbbbbbbbbbbb2", "222"] {
            let p = profile(&ProfileOptions {
                sqlid: Some(want.into()),
                ..ProfileOptions::default()
            });
            assert_eq!(p.filters, [format!("sqlid {want}")]);
            assert_eq!(p.r_us, 150, "{want}");
            assert_eq!(p.rows_total_us, 150, "{want}");
            let rows: Vec<(&str, i64)> = p
                .events
                .iter()
                .map(|e| (e.name.as_str(), e.total_us))
                .collect();
            assert_eq!(
                rows,
                [
                    ("db file sequential read", 100),
                    ("CPU: EXEC calls", 30),
                    ("unaccounted-for within db calls", 20),
                ],
                "{want}"
            );
            assert_eq!(p.statements.len(), 1);
            assert_eq!(p.statements[0].sqlid, "bbbbbbbbbbbb2");
        }
    }

    #[test]
    fn an_event_filter_hides_other_waits_but_not_cpu_or_r() {
        let p = profile(&ProfileOptions {
            events: vec!["db file scattered read".into()],
            ..ProfileOptions::default()
        });
        assert_eq!(p.filters, ["event 'db file scattered read'"]);
        let names: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "db file scattered read",
                "CPU: FETCH calls",
                "CPU: EXEC calls",
                "CPU: PARSE calls",
                "unaccounted-for within db calls",
            ]
        );
        assert_eq!((p.r_us, p.rows_total_us), (2_520, 2_520));
        let top: Vec<&str> = p.top_waits.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(top, ["db file scattered read"]);
    }

    #[test]
    fn the_time_filters_are_shown_as_wall_clock_times() {
        let p = profile(&ProfileOptions {
            since_us: Some(0),
            until_us: Some(1_000_000),
            ..ProfileOptions::default()
        });
        assert_eq!(
            p.filters,
            [
                "since 1970-01-01T00:00:00.000000Z",
                "until 1970-01-01T00:00:01.000000Z"
            ]
        );
        // The trace has no wall-clock anchor: a time filter keeps nothing.
        assert_eq!((p.r_us, p.events.len()), (0, 0));
    }
}
