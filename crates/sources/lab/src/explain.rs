//! `run --explain`: each distinct statement of the workload (its event and its place among that
//! event's statements) explained once, after warm-up, by the session that first names it ([`crate::workload::SessionWork::statements`]), into the run's
//! `plans.json` ([`dbscope_core::plans`]).
//!
//! PostgreSQL: `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)` with the parameters the session last
//! bound, inside a transaction that is rolled back (ANALYZE executes the statement: a write
//! leaves nothing behind). SQLite: `EXPLAIN QUERY PLAN`, which plans without executing. The
//! session explains between two of its operations, so no event's time includes it (an open-loop
//! session's schedule moves later by the time it took).

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use dbscope_core::plans::{PlanEntry, RunPlans};
use dbscope_db::{Dialect, Param, Session, Target};

use crate::workload::Statement;

/// What PostgreSQL's plans are taken with.
pub const PG_EXPLAIN: &str = "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)";
/// What SQLite's plans are taken with.
pub const SQLITE_EXPLAIN: &str = "EXPLAIN QUERY PLAN";

/// Collects the plans of a run, shared by its sessions.
pub struct Explainer {
    dialect: Dialect,
    kind: &'static str,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// (event, place among the event's statements) of every statement taken or being taken.
    seen: HashSet<(String, usize)>,
    /// Events in the order a session first named them, so `plans.json` lists them in a
    /// fixed order whichever session finished explaining first.
    events: Vec<String>,
    /// Each plan with its (event's place in `events`, place among the event's statements).
    plans: Vec<((usize, usize), PlanEntry)>,
    notes: Vec<String>,
}

impl Explainer {
    /// An explainer for `target`'s dialect.
    pub fn new(target: &dyn Target) -> Self {
        Explainer {
            dialect: target.dialect(),
            kind: target.kind(),
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Explains those of `stmts` that no session has explained yet, on `sess` (idle between two
    /// operations); `now_ns` is the run clock's time. Returns how long it took.
    pub fn explain(
        &self,
        sess: &mut dyn Session,
        session: u32,
        now_ns: u64,
        stmts: Vec<Statement>,
    ) -> std::time::Duration {
        let started = Instant::now();
        let mut ordinal: std::collections::HashMap<String, usize> = Default::default();
        for st in stmts {
            // A statement is its event and its place among that event's statements, not its
            // text: `-M simple` scripts and `events`' batches inline their values, and each
            // session's text differs.
            let n = ordinal.entry(st.event.clone()).or_default();
            let place = *n;
            let key = (st.event.clone(), place);
            *n += 1;
            let order = {
                let mut state = self.state();
                if !state.seen.insert(key) {
                    continue;
                }
                match state.events.iter().position(|e| *e == st.event) {
                    Some(i) => (i, place),
                    None => {
                        state.events.push(st.event.clone());
                        (state.events.len() - 1, place)
                    }
                }
            };
            if !explainable(&st.sql) {
                self.state().notes.push(format!(
                    "{}: not explained (EXPLAIN takes SELECT, INSERT, UPDATE, DELETE, MERGE, \
                     VALUES and WITH): {}",
                    st.event,
                    one_line(&st.sql)
                ));
                continue;
            }
            let t = Instant::now();
            let mut entry = PlanEntry {
                event: st.event,
                params: st.params.iter().map(param_text).collect(),
                session,
                taken_ns: now_ns + started.elapsed().as_nanos() as u64,
                ..PlanEntry::default()
            };
            match self.dialect {
                Dialect::Postgres => {
                    entry.rolled_back = true;
                    match explain_pg(sess, &st.sql, &st.params) {
                        Ok(v) => entry.json = Some(v),
                        Err(e) => entry.error = Some(e),
                    }
                }
                Dialect::Sqlite => match explain_sqlite(sess, &st.sql, &st.params) {
                    Ok(lines) => entry.lines = lines,
                    Err(e) => entry.error = Some(e),
                },
                Dialect::Null => entry.error = Some("the null target has no plans".into()),
                Dialect::Mysql => {
                    entry.error = Some("plans are not taken on MariaDB/MySQL yet".into())
                }
            }
            entry.sql = st.sql;
            entry.took_ms = t.elapsed().as_secs_f64() * 1e3;
            self.state().plans.push((order, entry));
        }
        started.elapsed()
    }

    /// The plans taken, for `plans.json` (with a note when there are none).
    pub fn finish(self) -> RunPlans {
        let state = self
            .state
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let mut notes = state.notes;
        let mut plans = state.plans;
        // Sessions explain concurrently: order by the statement, not by who finished first.
        plans.sort_by_key(|(order, _)| *order);
        if plans.is_empty() && state.seen.is_empty() {
            notes.push(
                "no statement was explained: the workload names none here (events' staged and \
                 partitioned strategies read a staging table filled only inside their \
                 transaction), or no session finished an operation"
                    .into(),
            );
        }
        RunPlans {
            target: self.kind.to_string(),
            method: match self.dialect {
                Dialect::Postgres => format!(
                    "{PG_EXPLAIN}, in a transaction rolled back after it (ANALYZE executes the \
                     statement)"
                ),
                Dialect::Sqlite => SQLITE_EXPLAIN.to_string(),
                Dialect::Null => "none (null target)".to_string(),
                Dialect::Mysql => "none (not yet on MariaDB/MySQL)".to_string(),
            },
            plans: plans.into_iter().map(|(_, p)| p).collect(),
            notes,
        }
    }
}

/// True when EXPLAIN takes the statement: its first word, past comments, is a query or a write.
fn explainable(sql: &str) -> bool {
    let mut rest = sql.trim_start();
    loop {
        if let Some(r) = rest.strip_prefix("--") {
            rest = r.split_once('\n').map_or("", |(_, r)| r).trim_start();
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.split_once("*/").map_or("", |(_, r)| r).trim_start();
        } else if let Some(r) = rest.strip_prefix('(') {
            rest = r.trim_start();
        } else {
            break;
        }
    }
    let word: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect::<String>()
        .to_ascii_uppercase();
    matches!(
        word.as_str(),
        "SELECT" | "INSERT" | "UPDATE" | "DELETE" | "MERGE" | "VALUES" | "WITH" | "TABLE"
    )
}

fn one_line(sql: &str) -> String {
    sql.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn param_text(p: &Param) -> String {
    match p {
        Param::Int(i) => i.to_string(),
        Param::Text(s) => s.clone(),
    }
}

/// PostgreSQL's plan: the first element of the JSON array, the statement executed in a
/// transaction that is rolled back whatever happens.
fn explain_pg(
    sess: &mut dyn Session,
    sql: &str,
    params: &[Param],
) -> Result<serde_json::Value, String> {
    sess.begin().map_err(|e| format!("BEGIN: {e}"))?;
    let rows = sess.query_rows(&format!("{PG_EXPLAIN} {sql}"), params);
    let rolled = sess.rollback();
    let rows = rows.map_err(|e| e.message)?;
    rolled.map_err(|e| format!("ROLLBACK: {e}"))?;
    let text = rows
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten())
        .ok_or("EXPLAIN returned no row")?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("EXPLAIN's JSON does not parse: {e}"))?;
    match v {
        serde_json::Value::Array(mut a) if !a.is_empty() => Ok(a.swap_remove(0)),
        _ => Err("EXPLAIN's JSON is not a non-empty array".into()),
    }
}

/// SQLite's query plan as the shell prints it: each row's detail, two spaces per level.
fn explain_sqlite(
    sess: &mut dyn Session,
    sql: &str,
    params: &[Param],
) -> Result<Vec<String>, String> {
    let rows = sess
        .query_rows(&format!("{SQLITE_EXPLAIN} {sql}"), params)
        .map_err(|e| e.message)?;
    let mut depth: std::collections::HashMap<i64, usize> = std::collections::HashMap::new();
    let mut lines = Vec::new();
    for r in rows {
        let int = |i: usize| {
            r.get(i)
                .cloned()
                .flatten()
                .and_then(|v| v.parse::<i64>().ok())
        };
        let (Some(id), Some(parent)) = (int(0), int(1)) else {
            return Err("EXPLAIN QUERY PLAN gave a row without id and parent".into());
        };
        let d = depth.get(&parent).map_or(0, |d| d + 1);
        depth.insert(id, d);
        let detail = r.get(3).cloned().flatten().unwrap_or_default();
        lines.push(format!("{}{detail}", "  ".repeat(d)));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_explain_takes() {
        for yes in [
            "SELECT 1",
            "  select pad from t",
            "-- c\nUPDATE t SET v = 1",
            "/* x */ insert into t values (1)",
            "WITH a AS (SELECT 1) SELECT * FROM a",
            "(SELECT 1)",
        ] {
            assert!(explainable(yes), "{yes}");
        }
        for no in ["BEGIN", "COMMIT;", "SET x = 1", "", "-- only", "VACUUM t"] {
            assert!(!explainable(no), "{no}");
        }
    }

    #[test]
    fn sqlite_plans_are_taken_with_their_tree_and_refusals_kept() {
        let dir = tempfile::tempdir().unwrap();
        let target = dbscope_db::SqliteTarget::new(&dir.path().join("x.db"), &[]).unwrap();
        let mut s = target.connect().unwrap();
        s.batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v INT); CREATE TABLE u (a INT)")
            .unwrap();
        let x = Explainer::new(&target);
        let st = |event: &str, sql: &str| Statement {
            event: event.into(),
            sql: sql.into(),
            params: vec![Param::Int(3)],
        };
        x.explain(
            s.as_mut(),
            0,
            5,
            vec![
                st("get", "SELECT v FROM t WHERE id = ?1"),
                st(
                    "join",
                    "SELECT * FROM t WHERE v IN (SELECT a FROM u WHERE a > ?1)",
                ),
                st("bad", "SELECT nope FROM t WHERE id = ?1"),
                st("begin", "BEGIN"),
            ],
        );
        // A second session naming the same statement does not explain it again.
        x.explain(
            s.as_mut(),
            1,
            9,
            vec![st("get", "SELECT v FROM t WHERE id = ?1")],
        );
        let plans = x.finish();
        assert_eq!(plans.target, "sqlite");
        assert_eq!(plans.plans.len(), 3);
        let get = &plans.plans[0];
        assert_eq!(
            (get.session, get.params.clone()),
            (0, vec!["3".to_string()])
        );
        assert!(get.taken_ns >= 5 && !get.rolled_back);
        assert!(
            get.lines[0].starts_with("SEARCH t USING INTEGER PRIMARY KEY"),
            "{:?}",
            get.lines
        );
        let join = &plans.plans[1].lines;
        assert!(
            join.len() >= 2 && join.iter().any(|l| l.starts_with("  ")),
            "{join:?}"
        );
        assert!(plans.plans[2].error.as_deref().unwrap().contains("nope"));
        assert!(plans
            .notes
            .iter()
            .any(|n| n.starts_with("begin: not explained")));
    }
}
