//! The run's counters: atomics bumped by the writers, `redo.json` snapshots, what the events say
//! (commits, writes and write latency per destination, tallied as they are written), and the
//! generic counter section that `report` prints without knowing this source.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use dbscope_core::stats::{quantile_type7_by, LatencyHistogram};
use dbscope_core::{
    Column, Counter, CounterSection, CounterTable, CounterValue, Event, NameId, NameTable,
};
use serde::{Deserialize, Serialize};

use super::config::RedoConfig;
use super::names::{dest_session, COUNTERS_FILE, EV_SWITCH, EV_SYNC, EV_WRITE, SECTION_KEY};
use crate::error::Error;

/// Counters per destination, in `redo.json`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct DestCounters {
    /// Destination name.
    pub name: String,
    /// Path of its log.
    pub path: String,
    /// Writes completed.
    pub writes: u64,
    /// Races this destination finished first (FL_<NAME>_FIRST).
    pub first: u64,
    /// Writes whose own service time exceeded the outlier threshold.
    pub outliers: u64,
    /// Writes given an injected delay.
    pub injected: u64,
    /// Sum of injected delays, ns.
    pub injected_ns: u64,
}

/// The run's counters, in `redo.json`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct RedoCounters {
    /// True once the run ended; false in a snapshot taken while it was running.
    pub final_counts: bool,
    /// Commits acknowledged.
    pub commits: u64,
    /// Writes issued by the log writer (each to every destination).
    pub writes: u64,
    /// Commits per write: the group-commit factor.
    pub commits_per_write: Option<f64>,
    /// Redo blocks written per destination.
    pub blocks: u64,
    /// Bytes written per destination (blocks × block size).
    pub bytes: u64,
    /// Log switches.
    pub log_switches: u64,
    /// Threshold for outliers, ms.
    pub outlier_ms: f64,
    /// Races decided (writes completed by both destinations); 0 with one destination.
    pub races: u64,
    /// Writes of the slower destination that took longer than the threshold while every log
    /// writer write they carried had already been completed by the other destination in time.
    pub prevented_outliers: u64,
    /// With two destinations, how many blocks the slower one may have outstanding.
    pub backlog_limit_blocks: u64,
    /// Log-writer writes held until the slower destination's backlog had room for them.
    pub backlog_waits: u64,
    /// Time the log writer spent holding them, ms.
    pub backlog_wait_ms: f64,
    /// When the committers stopped issuing commits (the duration's end, a stop, or the last
    /// commit with --ops), seconds from the start; `None` while they still issue.
    pub stopped_issuing_s: Option<f64>,
    /// Destination writes completed after that: the commits in flight and the slower
    /// destination's backlog.
    pub drained_writes: u64,
    /// From `stopped_issuing_s` to the last of those writes, seconds.
    pub drain_s: Option<f64>,
    /// Per destination.
    pub destinations: Vec<DestCounters>,
}

/// The live counters, bumped by the writers without locks.
pub(super) struct Counters {
    pub(super) commits: AtomicU64,
    pub(super) writes: AtomicU64,
    pub(super) blocks: AtomicU64,
    pub(super) switches: AtomicU64,
    pub(super) races: AtomicU64,
    pub(super) prevented: AtomicU64,
    pub(super) dest_writes: Vec<AtomicU64>,
    pub(super) dest_first: Vec<AtomicU64>,
    pub(super) dest_outliers: Vec<AtomicU64>,
    pub(super) dest_injected: Vec<AtomicU64>,
    pub(super) dest_injected_ns: Vec<AtomicU64>,
    pub(super) backlog_waits: AtomicU64,
    pub(super) backlog_wait_ns: AtomicU64,
    /// When the committers stopped issuing, ns from the start (`u64::MAX`: not yet). Set to the
    /// deadline up front (no commit starts after it), or lowered when they stop earlier.
    pub(super) stop_ns: AtomicU64,
    /// Destination writes completed after `stop_ns`, and when the last of them ended.
    pub(super) drained_writes: AtomicU64,
    pub(super) drain_end_ns: AtomicU64,
}

impl Counters {
    /// Commits acknowledged so far.
    pub(super) fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Writes so far.
    pub(super) fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    /// The committers stopped issuing at `now_ns` (keeps an earlier time).
    pub(super) fn stop_issuing(&self, now_ns: u64) {
        self.stop_ns.fetch_min(now_ns, Ordering::Relaxed);
    }

    /// A destination write ended at `end_ns`: counted as drained when issuing had stopped.
    pub(super) fn write_ended(&self, end_ns: u64) {
        if end_ns > self.stop_ns.load(Ordering::Relaxed) {
            self.drained_writes.fetch_add(1, Ordering::Relaxed);
            self.drain_end_ns.fetch_max(end_ns, Ordering::Relaxed);
        }
    }

    pub(super) fn new(n: usize) -> Self {
        let v = || (0..n).map(|_| AtomicU64::new(0)).collect::<Vec<_>>();
        Counters {
            commits: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            blocks: AtomicU64::new(0),
            switches: AtomicU64::new(0),
            races: AtomicU64::new(0),
            prevented: AtomicU64::new(0),
            dest_writes: v(),
            dest_first: v(),
            dest_outliers: v(),
            dest_injected: v(),
            dest_injected_ns: v(),
            backlog_waits: AtomicU64::new(0),
            backlog_wait_ns: AtomicU64::new(0),
            stop_ns: AtomicU64::new(u64::MAX),
            drained_writes: AtomicU64::new(0),
            drain_end_ns: AtomicU64::new(0),
        }
    }

    /// The counters at `now_ns` (ns from the start).
    pub(super) fn snapshot(
        &self,
        cfg: &RedoConfig,
        now_ns: u64,
        final_counts: bool,
    ) -> RedoCounters {
        let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let commits = ld(&self.commits);
        let writes = ld(&self.writes);
        let blocks = ld(&self.blocks);
        // A deadline set up front is only a stop once the clock has passed it.
        let stopped = Some(ld(&self.stop_ns)).filter(|&s| s != u64::MAX && s <= now_ns);
        RedoCounters {
            final_counts,
            commits,
            writes,
            commits_per_write: (writes > 0).then(|| commits as f64 / writes as f64),
            blocks,
            bytes: blocks * cfg.block_size as u64,
            log_switches: ld(&self.switches),
            outlier_ms: cfg.outlier.as_secs_f64() * 1e3,
            races: ld(&self.races),
            prevented_outliers: ld(&self.prevented),
            backlog_limit_blocks: cfg.backlog_limit_blocks(),
            backlog_waits: ld(&self.backlog_waits),
            backlog_wait_ms: ld(&self.backlog_wait_ns) as f64 / 1e6,
            stopped_issuing_s: stopped.map(|s| s as f64 / 1e9),
            drained_writes: ld(&self.drained_writes),
            drain_s: stopped.map(|s| ld(&self.drain_end_ns).saturating_sub(s) as f64 / 1e9),
            destinations: cfg
                .dests
                .iter()
                .enumerate()
                .map(|(i, d)| DestCounters {
                    name: d.name.clone(),
                    path: d.path.display().to_string(),
                    writes: ld(&self.dest_writes[i]),
                    first: ld(&self.dest_first[i]),
                    outliers: ld(&self.dest_outliers[i]),
                    injected: ld(&self.dest_injected[i]),
                    injected_ns: ld(&self.dest_injected_ns[i]),
                })
                .collect(),
        }
    }
}

/// The notes under the section: what FL_PREVENTED_OUTLIERS counts, and how the run ended.
fn notes(cfg: &RedoConfig, c: &RedoCounters) -> Vec<String> {
    let mut notes = Vec::new();
    if cfg.dests.len() > 1 {
        notes.push(format!(
            "FL_PREVENTED_OUTLIERS: writes of the slower destination that took longer than {} ms \
             while the other destination had completed everything they carried in less",
            c.outlier_ms
        ));
    }
    if let Some(stopped) = c.stopped_issuing_s {
        notes.push(format!(
            "stopped issuing at {stopped:.2} s; drained {} writes in {:.2} s",
            c.drained_writes,
            c.drain_s.unwrap_or(0.0)
        ));
    }
    notes
}

pub(super) fn write_counters(out: &Path, c: &RedoCounters) -> Result<(), Error> {
    let text = serde_json::to_string_pretty(c).expect("counters encode") + "\n";
    Ok(dbscope_core::atomic::write_atomic(
        &out.join(COUNTERS_FILE),
        text.as_bytes(),
    )?)
}

/// What the written events say, tallied batch by batch as the run goes (so a snapshot of a
/// killed run is at most one tick old): acknowledged commits, log switches, and per destination
/// the writes, their blocks and latencies.
pub(super) struct EventTally {
    sessions: u32,
    sync: NameId,
    write: NameId,
    switch: NameId,
    commits: u64,
    switches: u64,
    /// `log file parallel write` durations per destination, ns (exact quantiles at the end).
    latencies: Vec<Vec<u64>>,
    /// The same in histograms (quantiles of the snapshots taken while the run goes: sorting a
    /// growing list four times a second would steal CPU from the run being measured).
    histograms: Vec<LatencyHistogram>,
    blocks: Vec<u64>,
    first_ns: u64,
    last_ns: u64,
}

impl EventTally {
    pub(super) fn new(names: &NameTable, sessions: u32, ndest: usize) -> Self {
        EventTally {
            sessions,
            sync: names.intern(EV_SYNC),
            write: names.intern(EV_WRITE),
            switch: names.intern(EV_SWITCH),
            commits: 0,
            switches: 0,
            latencies: vec![Vec::new(); ndest],
            histograms: (0..ndest).map(|_| LatencyHistogram::new()).collect(),
            blocks: vec![0; ndest],
            first_ns: u64::MAX,
            last_ns: 0,
        }
    }

    /// Counts one written batch.
    pub(super) fn add(&mut self, events: &[Event]) {
        for e in events {
            self.first_ns = self.first_ns.min(e.start_ns);
            self.last_ns = self.last_ns.max(e.start_ns + e.duration_ns);
            if e.is_error() {
                continue;
            }
            if e.name == self.sync {
                self.commits += 1;
            } else if e.name == self.switch {
                self.switches += 1;
            } else if e.name == self.write {
                let d = e.session.wrapping_sub(dest_session(self.sessions, 0)) as usize;
                if let Some(v) = self.latencies.get_mut(d) {
                    v.push(e.duration_ns);
                    self.histograms[d].record(e.duration_ns);
                    self.blocks[d] += e.rows as u64;
                }
            }
        }
    }

    /// The section `report` prints: the group-commit factor, MB/s and write latency per
    /// destination, log switches, and with two destinations the race counters. Final counts
    /// (`c.final_counts`) have exact type-7 quantiles; snapshots those of the histograms.
    pub(super) fn section(&mut self, cfg: &RedoConfig, c: &RedoCounters) -> CounterSection {
        let span_s =
            (self.last_ns > self.first_ns).then(|| (self.last_ns - self.first_ns) as f64 / 1e9);
        let int = CounterValue::count;
        let mut rows = Vec::new();
        let mut writes = 0u64;
        for (i, d) in cfg.dests.iter().enumerate() {
            let v = &mut self.latencies[i];
            let h = &self.histograms[i];
            if c.final_counts {
                v.sort_unstable();
            }
            let q = |p: f64| {
                CounterValue::float((!v.is_empty()).then(|| {
                    if c.final_counts {
                        // R's quantile of the µs values, not the ns one divided.
                        quantile_type7_by(v, p, |x| x as f64 / 1e3)
                    } else {
                        h.percentile(p * 100.0) as f64 / 1e3
                    }
                }))
            };
            let n = v.len() as u64;
            writes = writes.max(n);
            let dc = c.destinations.get(i);
            let blocks = self.blocks[i];
            rows.push(vec![
                CounterValue::Text(d.name.clone()),
                CounterValue::Text(d.path.display().to_string()),
                int(n),
                int(blocks),
                CounterValue::float((n > 0).then(|| blocks as f64 / n as f64)),
                CounterValue::float(
                    span_s.map(|s| (blocks * cfg.block_size as u64) as f64 / 1e6 / s),
                ),
                q(0.5),
                q(0.99),
                dc.map_or(CounterValue::None, |d| int(d.first)),
                dc.map_or(CounterValue::None, |d| int(d.outliers)),
                dc.map_or(CounterValue::None, |d| int(d.injected)),
            ]);
        }
        let mut counters = vec![
            Counter::new(
                "block_size",
                "block size",
                int(cfg.block_size as u64),
                "bytes",
            ),
            Counter::new(
                "sync",
                "sync",
                CounterValue::Text(cfg.sync.as_str().into()),
                "",
            ),
            Counter::new(
                "group_commit",
                "group commit",
                CounterValue::Bool(cfg.group_commit),
                "",
            ),
            Counter::new("commits", "commits", int(self.commits), ""),
            Counter::new("writes", "writes", int(writes), ""),
            Counter::new(
                "commits_per_write",
                "commits per write",
                CounterValue::float((writes > 0).then(|| self.commits as f64 / writes as f64)),
                "",
            )
            .decimals(2),
            Counter::new("log_switches", "log switches", int(self.switches), ""),
            Counter::new(
                "outlier_ms",
                "outlier threshold",
                CounterValue::Float(c.outlier_ms),
                "ms",
            )
            .decimals(0),
        ];
        if let Some(stopped) = c.stopped_issuing_s {
            counters.push(
                Counter::new(
                    "stopped_issuing_s",
                    "stopped issuing at",
                    CounterValue::Float(stopped),
                    "s",
                )
                .decimals(2),
            );
            counters.push(Counter::new(
                "drained_writes",
                "writes drained after that",
                int(c.drained_writes),
                "",
            ));
            counters.push(
                Counter::new("drain_s", "drain time", CounterValue::float(c.drain_s), "s")
                    .decimals(2),
            );
        }
        if cfg.dests.len() > 1 {
            counters.push(Counter::new(
                "backlog_limit_blocks",
                "slower destination's backlog limit",
                int(c.backlog_limit_blocks),
                "blocks",
            ));
            counters.push(Counter::new(
                "backlog_waits",
                "writes held for the slower destination",
                int(c.backlog_waits),
                "",
            ));
            counters.push(
                Counter::new(
                    "backlog_wait_ms",
                    "time writes were held",
                    CounterValue::Float(c.backlog_wait_ms),
                    "ms",
                )
                .decimals(1),
            );
            counters.push(Counter::new(
                "races",
                "races completed by both",
                int(c.races),
                "",
            ));
            for d in &c.destinations {
                counters.push(Counter::new(
                    &format!("fl_{}_first", d.name.to_lowercase()),
                    &format!("FL_{}_FIRST", d.name.to_uppercase()),
                    int(d.first),
                    "",
                ));
            }
            counters.push(Counter::new(
                "prevented_outliers",
                "FL_PREVENTED_OUTLIERS",
                int(c.prevented_outliers),
                "",
            ));
        }
        CounterSection {
            key: SECTION_KEY.into(),
            title: format!(
                "redo log writer: {}-byte blocks, sync {}, group commit {}",
                cfg.block_size,
                cfg.sync.as_str(),
                if cfg.group_commit { "on" } else { "off" }
            ),
            final_counts: c.final_counts,
            counters,
            tables: vec![CounterTable {
                key: "destinations".into(),
                title: "per destination (log file parallel write)".into(),
                columns: vec![
                    Column::new("name", "destination", ""),
                    Column::new("path", "path", ""),
                    Column::new("writes", "writes", ""),
                    Column::new("blocks", "blocks", ""),
                    Column::new("blocks_per_write", "blocks/write", "").decimals(1),
                    Column::new("mb_per_s", "MB/s", "").decimals(2),
                    Column::new("write_p50_us", "p50", "µs").decimals(1),
                    Column::new("write_p99_us", "p99", "µs").decimals(1),
                    Column::new("first", "first", ""),
                    Column::new("outliers", "outliers", ""),
                    Column::new("injected", "injected delays", ""),
                ],
                rows,
            }],
            notes: notes(cfg, c),
        }
    }
}
