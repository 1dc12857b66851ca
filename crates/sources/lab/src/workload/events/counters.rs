//! The run-level counter section (`archive`): what every session measured, merged as each ends.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use dbscope_core::counters::{Column, Counter, CounterTable, CounterValue};
use dbscope_core::stats::LatencyHistogram;
use dbscope_core::CounterSection;

use super::config::EventsConfig;

/// What the sessions measured, merged as each one ends.
#[derive(Default)]
pub(super) struct Aggregate {
    pub(super) co: LatencyHistogram,
    pub(super) service: LatencyHistogram,
    /// Per second: offered (intended), written (write started), committed.
    pub(super) per_s: Vec<[u64; 3]>,
    /// Per client: events acknowledged (committed), events due by the end.
    pub(super) clients: BTreeMap<u32, (u64, u64)>,
    pub(super) batches: u64,
    /// Failed transactions whose events were resent.
    pub(super) failed_batches: u64,
    /// Transactions whose commit's answer was lost, found committed (not resent).
    pub(super) found_committed: u64,
}

/// The run-level counter section (`events`) of a run with options `cfg` from what its sessions
/// merged into `agg`: CO-corrected latency and service time per event, totals, the per-second
/// series and the per-client acknowledged counts.
pub(super) fn section(agg: &Mutex<Aggregate>, cfg: &EventsConfig) -> CounterSection {
    let a = agg.lock().unwrap_or_else(PoisonError::into_inner);
    let us = |h: &LatencyHistogram, p: f64| {
        CounterValue::float((!h.is_empty()).then(|| h.percentile(p) as f64 / 1000.0))
    };
    let offered: u64 = a.per_s.iter().map(|r| r[0]).sum();
    let committed: u64 = a.per_s.iter().map(|r| r[2]).sum();
    let written: u64 = a.per_s.iter().map(|r| r[1]).sum();
    // The measured span: from the first second with an offered event to the last with a commit.
    let secs = a
        .per_s
        .iter()
        .rposition(|r| r[2] > 0)
        .map_or(0.0, |i| (i + 1) as f64);
    let dur = cfg.until_ns.map_or(secs, |u| u as f64 / 1e9).max(1e-9);
    let mut counters = vec![
        Counter::new(
            "offered_per_s",
            "offered",
            CounterValue::float(Some(cfg.rate * cfg.clients as f64)),
            "ev/s",
        )
        .decimals(0),
        Counter::new(
            "achieved_per_s",
            "achieved (committed)",
            CounterValue::float(Some(committed as f64 / dur)),
            "ev/s",
        )
        .decimals(0),
        Counter::new(
            "offered",
            "events offered",
            CounterValue::count(offered),
            "",
        ),
        Counter::new("written", "written", CounterValue::count(written), ""),
        Counter::new(
            "committed",
            "committed (acknowledged)",
            CounterValue::count(committed),
            "",
        ),
        Counter::new(
            "backlog_at_end",
            "backlog at end (offered, not committed)",
            CounterValue::count(offered.saturating_sub(committed)),
            "",
        ),
        Counter::new(
            "batches",
            "transactions",
            CounterValue::count(a.batches),
            "",
        ),
        Counter::new(
            "failed_batches",
            "failed transactions (events resent)",
            CounterValue::count(a.failed_batches),
            "",
        ),
        Counter::new(
            "found_committed",
            "commits whose answer was lost, found committed (not resent)",
            CounterValue::count(a.found_committed),
            "",
        ),
    ];
    for (key, label, h) in [
        ("co", "latency from intended (CO-corrected)", &a.co),
        ("service", "service (write start to commit)", &a.service),
    ] {
        for (p, pl) in [(50.0, "p50"), (99.0, "p99"), (99.9, "p99.9")] {
            counters.push(
                Counter::new(
                    &format!("{key}_{}_us", pl.replace('.', "_")),
                    &format!("{label} {pl}"),
                    us(h, p),
                    "µs",
                )
                .decimals(0),
            );
        }
    }
    let mut backlog = 0i64;
    let per_second = CounterTable {
        key: "per_second".into(),
        title: "per second: events offered, written, committed; backlog (offered, not written)"
            .into(),
        columns: vec![
            Column::new("second", "second", ""),
            Column::new("offered", "offered", ""),
            Column::new("written", "written", ""),
            Column::new("committed", "committed", ""),
            Column::new("backlog", "backlog", ""),
        ],
        rows: a
            .per_s
            .iter()
            .enumerate()
            .map(|(k, r)| {
                backlog += r[0] as i64 - r[1] as i64;
                let c = CounterValue::count;
                vec![
                    c(k as u64),
                    c(r[0]),
                    c(r[1]),
                    c(r[2]),
                    c(backlog.max(0) as u64),
                ]
            })
            .collect(),
    };
    let clients = CounterTable {
        key: "clients".into(),
        title: "per client: events acknowledged and due by the end".into(),
        columns: vec![
            Column::new("client", "client", ""),
            Column::new("acknowledged", "acknowledged", ""),
            Column::new("due", "due", ""),
        ],
        rows: a
            .clients
            .iter()
            .map(|(&c, &(ack, due))| {
                let v = CounterValue::count;
                vec![v(c as u64), v(ack), v(due)]
            })
            .collect(),
    };
    CounterSection {
        key: "archive".into(),
        title: format!(
            "events: {} clients × {} ev/s, strategy {}",
            cfg.clients,
            cfg.rate,
            cfg.strategy.as_str()
        ),
        final_counts: true,
        counters,
        tables: vec![per_second, clients],
        notes: Vec::new(),
    }
}
