//! The plans of a run's statements (`plans.json`, written by `run --explain`): each distinct
//! statement of the workload explained once after warm-up, with the event it belongs to, the
//! parameters it was explained with, when, and the plan as the database gave it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::files::PLANS_FILE;

/// Everything in `plans.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunPlans {
    /// The database's kind (`postgres`, `sqlite`, `null`).
    pub target: String,
    /// The command the plans were taken with, e.g. `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)`.
    pub method: String,
    /// One entry per distinct statement (event name and text), in the order they were taken.
    pub plans: Vec<PlanEntry>,
    /// What could not be explained, and other things a reader should know.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// One statement's plan.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanEntry {
    /// The event the statement's executions are recorded under.
    pub event: String,
    /// The statement's text as the workload sends it (placeholders kept).
    pub sql: String,
    /// The parameters it was explained with, as text (the values last bound by the session).
    #[serde(default)]
    pub params: Vec<String>,
    /// The session that took the plan.
    pub session: u32,
    /// When the plan was taken, in ns on the run's clock (after warm-up, or after the session's
    /// first operation without one).
    pub taken_ns: u64,
    /// How long explaining took, in ms (not part of any event).
    pub took_ms: f64,
    /// True when EXPLAIN ANALYZE executed the statement inside a transaction that was then rolled
    /// back (PostgreSQL: every statement, so a write leaves nothing behind); false where the plan
    /// was only planned (SQLite's `EXPLAIN QUERY PLAN`).
    pub rolled_back: bool,
    /// PostgreSQL: the first element of `EXPLAIN (FORMAT JSON)`'s array (`Plan`, `Planning Time`,
    /// `Execution Time`…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json: Option<serde_json::Value>,
    /// SQLite: the query plan's lines, indented two spaces per level as the `sqlite3` shell
    /// shows them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<String>,
    /// Why there is no plan (the database refused the EXPLAIN).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl RunPlans {
    /// Reads `plans.json` from a run directory; `None` when the run has none (no `--explain`).
    pub fn read(dir: &Path) -> Result<Option<Self>> {
        let path = dir.join(PLANS_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, e)),
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| Error::Format {
                path,
                msg: format!("line {}: not valid plans: {e}", e.line()),
            })
    }

    /// Writes `plans.json` into a run directory, atomically.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let path = dir.join(PLANS_FILE);
        let text = serde_json::to_string_pretty(self).map_err(|e| Error::Format {
            path: path.clone(),
            msg: format!("cannot encode plans: {e}"),
        })?;
        crate::atomic::write_atomic(&path, (text + "\n").as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_round_trip_and_a_run_without_them_has_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(RunPlans::read(dir.path()).unwrap(), None);
        let plans = RunPlans {
            target: "sqlite".into(),
            method: "EXPLAIN QUERY PLAN".into(),
            plans: vec![PlanEntry {
                event: "lookup".into(),
                sql: "SELECT pad FROM t WHERE id = ?1".into(),
                params: vec!["7".into()],
                lines: vec!["SEARCH t USING INTEGER PRIMARY KEY (rowid=?)".into()],
                ..PlanEntry::default()
            }],
            notes: vec![],
        };
        plans.write(dir.path()).unwrap();
        assert_eq!(RunPlans::read(dir.path()).unwrap(), Some(plans));
        std::fs::write(dir.path().join(PLANS_FILE), "{").unwrap();
        assert!(RunPlans::read(dir.path()).is_err(), "damage is an error");
    }
}
