//! What the replay sessions counted, merged, and the run's `replay` counter section made of it.

use std::collections::BTreeMap;

use dbscope_core::stats::quantile_type7_by;
use dbscope_core::{Column, Counter, CounterSection, CounterTable, CounterValue};

use super::config::{ReplayConfig, ReplaySummary, DIVERGENCE_FILE, EXAMPLES};
use super::plan::Plan;

/// Not replayed: the session's connection was lost inside the call's transaction.
pub(super) const LOST_IN_TRANSACTION: &str = "connection lost inside its transaction";
/// Not replayed: the session could not (re)connect.
pub(super) const NO_CONNECTION: &str = "no connection";

/// What one session's replay counted.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) replayed: u64,
    pub(super) not_replayed: BTreeMap<&'static str, u64>,
    pub(super) diverged: BTreeMap<&'static str, u64>,
    pub(super) examples: BTreeMap<&'static str, Vec<serde_json::Value>>,
    pub(super) divergences: Vec<serde_json::Value>,
    pub(super) lags_ns: Vec<u64>,
    /// Lags of the calls the commit order did not hold back (the replayer's own precision).
    pub(super) free_lags_ns: Vec<u64>,
    pub(super) sync_waits: u64,
    pub(super) sync_timeouts: u64,
    pub(super) connect_errors: Vec<String>,
    pub(super) lost_connections: u64,
}

impl Tally {
    /// A call not replayed because its session had no connection: counted by `why` and listed
    /// with the divergences.
    pub(super) fn lost_call(&mut self, c: &crate::calls::Call, why: &'static str) {
        *self.not_replayed.entry(why).or_default() += 1;
        self.divergences
            .push(serde_json::json!({"kind": "not replayed", "reason": why,
            "session": c.session, "seq": c.seq, "sql": c.sql,
            "captured": {"tags": c.tags, "rows": c.rows, "error": c.error}}));
    }

    /// Calls not replayed because a connection was lost or could not be made.
    pub(super) fn lost_calls(&self) -> u64 {
        [LOST_IN_TRANSACTION, NO_CONNECTION]
            .iter()
            .filter_map(|k| self.not_replayed.get(k))
            .sum()
    }

    /// What makes the replay partial — calls not replayed for want of a connection, connections
    /// lost — or `None` when every replayable call was replayed on its session's connection.
    pub(super) fn partial(&self) -> Option<String> {
        let lost = self.lost_calls();
        if lost == 0 && self.lost_connections == 0 {
            return None;
        }
        let reasons: Vec<String> = [LOST_IN_TRANSACTION, NO_CONNECTION]
            .iter()
            .filter_map(|k| self.not_replayed.get(k).map(|n| format!("{k}: {n}")))
            .collect();
        Some(format!(
            "{lost} calls not replayed{}; connections lost: {} (every such call is in \
             {DIVERGENCE_FILE})",
            match reasons.is_empty() {
                true => String::new(),
                false => format!(" ({})", reasons.join(", ")),
            },
            self.lost_connections
        ))
    }

    pub(super) fn merge(&mut self, o: Tally) {
        self.replayed += o.replayed;
        for (k, v) in o.not_replayed {
            *self.not_replayed.entry(k).or_default() += v;
        }
        for (k, v) in o.diverged {
            *self.diverged.entry(k).or_default() += v;
        }
        for (k, v) in o.examples {
            let e = self.examples.entry(k).or_default();
            e.extend(v);
            e.truncate(EXAMPLES);
        }
        self.divergences.extend(o.divergences);
        self.lags_ns.extend(o.lags_ns);
        self.free_lags_ns.extend(o.free_lags_ns);
        self.sync_waits += o.sync_waits;
        self.sync_timeouts += o.sync_timeouts;
        self.connect_errors.extend(o.connect_errors);
        self.lost_connections += o.lost_connections;
    }
}

/// The `q` quantile of sorted lags (ns) in µs, by the project's definition (R's type 7, as
/// `report` computes its quantiles); `None` when there are none.
fn lag_us(sorted_ns: &[u64], q: f64) -> Option<f64> {
    (!sorted_ns.is_empty()).then(|| quantile_type7_by(sorted_ns, q, |x| x as f64 / 1e3))
}

pub(super) fn section(
    t: &Tally,
    plan: &Plan,
    s: &ReplaySummary,
    cfg: &ReplayConfig,
) -> CounterSection {
    let int = |v: u64| CounterValue::Int(v as i64);
    let mut counters = vec![
        Counter::new("replayed", "calls replayed", int(s.replayed), ""),
        Counter::new(
            "not_replayed",
            "calls not replayed",
            int(s.not_replayed),
            "",
        ),
        Counter::new(
            "diverged",
            "replayed calls that diverged",
            int(s.diverged),
            "",
        ),
        Counter::new(
            "capture_s",
            "capture duration (first call to last)",
            CounterValue::Float(s.capture_s),
            "s",
        )
        .decimals(3),
        Counter::new(
            "replay_s",
            "replay duration",
            CounterValue::Float(s.replay_s),
            "s",
        )
        .decimals(3),
    ];
    if s.capture_s > 0.0 {
        counters.push(
            Counter::new(
                "replay_over_capture",
                "replay / capture duration",
                CounterValue::Float(s.replay_s / s.capture_s),
                "",
            )
            .decimals(3),
        );
    }
    let mut lags = t.lags_ns.clone();
    lags.sort_unstable();
    for (key, label, q) in [
        ("lag_p50_us", "start lag behind schedule p50", 0.5),
        ("lag_p99_us", "start lag behind schedule p99", 0.99),
        ("lag_max_us", "start lag behind schedule max", 1.0),
    ] {
        if let Some(v) = lag_us(&lags, q) {
            counters.push(Counter::new(key, label, CounterValue::Float(v), "µs").decimals(0));
        }
    }
    if cfg.sync_commit {
        let mut free = t.free_lags_ns.clone();
        free.sort_unstable();
        for (key, label, q) in [
            (
                "free_lag_p50_us",
                "  of calls not held by the commit order p50",
                0.5,
            ),
            (
                "free_lag_p99_us",
                "  of calls not held by the commit order p99",
                0.99,
            ),
            (
                "free_lag_max_us",
                "  of calls not held by the commit order max",
                1.0,
            ),
        ] {
            if let Some(v) = lag_us(&free, q) {
                counters.push(Counter::new(key, label, CounterValue::Float(v), "µs").decimals(0));
            }
        }
        counters.push(Counter::new(
            "sync_waits",
            "calls that waited for an earlier commit",
            int(t.sync_waits),
            "",
        ));
        counters.push(Counter::new(
            "sync_timeouts",
            "of which went ahead (500 ms; 50 ms inside a transaction)",
            int(t.sync_timeouts),
            "",
        ));
    }
    if t.lost_connections > 0 {
        counters.push(Counter::new(
            "lost_connections",
            "connections lost",
            int(t.lost_connections),
            "",
        ));
    }
    if plan.bad_lines > 0 {
        counters.push(Counter::new(
            "capture_bad_lines",
            "unreadable lines in the capture",
            int(plan.bad_lines),
            "",
        ));
    }
    let mut tables = Vec::new();
    let reasons: Vec<Vec<CounterValue>> = t
        .not_replayed
        .iter()
        .map(|(k, v)| vec![CounterValue::Text(k.to_string()), int(*v)])
        .chain(
            t.diverged
                .iter()
                .map(|(k, v)| vec![CounterValue::Text(format!("diverged: {k}")), int(*v)]),
        )
        .collect();
    if !reasons.is_empty() {
        tables.push(CounterTable {
            key: "by_kind".into(),
            title: "calls not replayed, and divergence by kind".into(),
            columns: vec![
                Column::new("kind", "kind", ""),
                Column::new("calls", "calls", ""),
            ],
            rows: reasons,
        });
    }
    let examples: Vec<Vec<CounterValue>> = t
        .examples
        .values()
        .flat_map(|v| v.iter())
        .map(|e| {
            vec![
                CounterValue::Text(e["kind"].as_str().unwrap_or("").to_string()),
                int(e["session"].as_u64().unwrap_or(0)),
                int(e["seq"].as_u64().unwrap_or(0)),
                CounterValue::Text(crate::fingerprint::fingerprint(
                    e["sql"].as_str().unwrap_or(""),
                )),
                CounterValue::Text(compact(&e["captured"])),
                CounterValue::Text(compact(&e["replayed"])),
            ]
        })
        .collect();
    if !examples.is_empty() {
        tables.push(CounterTable {
            key: "examples".into(),
            title: format!(
                "divergence examples (up to {EXAMPLES} of each kind; all in {DIVERGENCE_FILE})"
            ),
            columns: vec![
                Column::new("kind", "kind", ""),
                Column::new("session", "session", ""),
                Column::new("seq", "call", ""),
                Column::new("statement", "statement", ""),
                Column::new("captured", "captured", ""),
                Column::new("replayed", "replayed", ""),
            ],
            rows: examples,
        });
    }
    let mut notes: Vec<String> = t
        .partial()
        .map(|p| format!("PARTIAL REPLAY: {p}"))
        .into_iter()
        .collect();
    notes.extend(t.connect_errors.iter().take(5).cloned());
    CounterSection {
        key: "replay".into(),
        title: "Replay".into(),
        final_counts: true,
        counters,
        tables,
        notes,
    }
}

/// An example's `captured` or `replayed` object as JSON without its null fields (no error, no
/// rows), so the report's cell has room for what is there.
fn compact(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Object(o) => {
            let kept: serde_json::Map<String, serde_json::Value> = o
                .iter()
                .filter(|(_, x)| !x.is_null())
                .map(|(k, x)| (k.clone(), x.clone()))
                .collect();
            serde_json::Value::Object(kept).to_string()
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_quantiles_interpolate_as_r_type_7() {
        let ns = [1_000, 2_000, 3_000, 10_000];
        // h = 3 × 0.5 = 1.5: halfway between 2 and 3 µs (nearest rank gave 3).
        assert_eq!(lag_us(&ns, 0.5), Some(2.5));
        // h = 3 × 0.99 = 2.97: 3 µs + 0.97 × 7 µs.
        let p99 = lag_us(&ns, 0.99).unwrap();
        assert!((p99 - 9.79).abs() < 1e-9, "{p99}");
        assert_eq!(lag_us(&ns, 1.0), Some(10.0));
        assert_eq!(lag_us(&[4_000], 0.5), Some(4.0));
        assert_eq!(lag_us(&[], 0.5), None);
        // Issue 34: R's quantile of the µs values, to the bit, not the ns quantile divided by
        // 1000. R: sprintf("%.17g", quantile(c(1000, 1234567) / 1000, c(0.9, 0.1))).
        let ns = [1_000, 1_234_567];
        assert_eq!(lag_us(&ns, 0.9), Some(1_111.210_299_999_999_7));
        assert_eq!(lag_us(&ns, 0.1), Some(124.356_700_000_000_12));
    }

    #[test]
    fn lost_connections_make_a_partial_replay_and_every_lost_call_is_listed() {
        let mut t = Tally::default();
        *t.not_replayed
            .entry("COPY (data not captured)")
            .or_default() += 3;
        assert_eq!(
            t.partial(),
            None,
            "calls never replayable do not make it partial"
        );
        let c: crate::calls::Call = serde_json::from_value(serde_json::json!({"session": 2,
            "seq": 7, "start_ns": 0, "end_ns": 1, "protocol": "simple", "sql": "COMMIT",
            "rows": 0, "tags": ["COMMIT"], "txn": "I"}))
        .unwrap();
        t.lost_call(&c, LOST_IN_TRANSACTION);
        t.lost_call(&c, NO_CONNECTION);
        t.lost_call(&c, NO_CONNECTION);
        t.lost_connections = 1;
        assert_eq!(
            t.partial().unwrap(),
            "3 calls not replayed (connection lost inside its transaction: 1, no connection: \
             2); connections lost: 1 (every such call is in replay-divergence.jsonl)"
        );
        assert_eq!(t.divergences.len(), 3);
        assert_eq!(t.divergences[0]["kind"], "not replayed");
        assert_eq!(t.divergences[0]["reason"], LOST_IN_TRANSACTION);
        assert_eq!(t.divergences[2]["seq"], 7);
    }
}
