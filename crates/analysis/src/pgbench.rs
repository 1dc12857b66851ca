//! pgbench's figures of a `script` run, so a user can put dbscope's report beside pgbench's
//! output: transactions processed, failed, retried and skipped, latency average and stddev, TPS
//! without and with the initial connection time, the schedule lag under `--rate`, and the
//! transactions over `--latency-limit`.
//!
//! Read from the transaction events (one per script execution, named after its script; its
//! `rows` is its number of tries) of the measured set, in the report's one pass over the events.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use dbscope_core::{Event, Manifest, NameId, NameTable};

/// The event of a transaction skipped because it was already late when due.
pub const SKIPPED: &str = "skipped (late)";

/// pgbench's headline figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PgbenchFigures {
    /// The scripts (pgbench's "transaction type"), with their weights.
    pub scripts: Vec<(String, u64)>,
    /// `:scale`.
    pub scale: Option<i64>,
    /// `-M`.
    pub mode: Option<String>,
    /// `--max-tries`.
    pub max_tries: Option<u64>,
    /// Sessions (pgbench's clients) and client threads.
    pub clients: u32,
    /// Client threads.
    pub threads: u32,
    /// Transactions that committed (pgbench's "actually processed").
    pub processed: u64,
    /// Transactions that failed in the end, by error class.
    pub failed: BTreeMap<String, u64>,
    /// Transactions that needed more than one try, and succeeded or failed in the end.
    pub retried: u64,
    /// Tries beyond the first, in all.
    pub retries: u64,
    /// Transactions skipped because they were already later than `--latency-limit` when due.
    pub skipped: u64,
    /// Mean and sample standard deviation of the processed transactions' latency, in ms (from
    /// the intended start under `--rate`, as pgbench measures then).
    pub latency_avg_ms: Option<f64>,
    /// Standard deviation, ms.
    pub latency_stddev_ms: Option<f64>,
    /// Mean lag between the intended and the actual start, ms, under `--rate`.
    pub lag_avg_ms: Option<f64>,
    /// Largest lag, ms.
    pub lag_max_ms: Option<f64>,
    /// `--latency-limit` in ms and the processed transactions over it.
    pub late: Option<(f64, u64)>,
    /// Seconds to open every connection, before the clock started.
    pub connect_s: Option<f64>,
    /// Processed transactions per second of the measured span.
    pub tps: Option<f64>,
    /// The same with the connection time added to the span.
    pub tps_with_connect: Option<f64>,
    /// Every transaction that ended (processed and failed) per second of the measured span:
    /// throughput, where `tps` is the goodput.
    pub throughput: Option<f64>,
}

/// Accumulates a script run's transaction events.
#[derive(Debug)]
pub struct PgbenchAcc {
    include_warmup: bool,
    scripts: Vec<(String, u64)>,
    /// Name ids of the current block's name table that are transactions (`true`) or the skip
    /// marker (`false`).
    ids: HashMap<NameId, bool>,
    processed: u64,
    failed: HashMap<u16, u64>,
    failed_names: BTreeMap<String, u64>,
    retried: u64,
    retries: u64,
    skipped: u64,
    sum_ms: f64,
    sum_sq_ms: f64,
    lag_sum_ms: f64,
    lag_max_ms: f64,
    lag_n: u64,
    limit_ns: Option<u64>,
    late: u64,
}

impl PgbenchAcc {
    /// An accumulator for a `script` run, `None` for any other run.
    pub fn for_run(m: &Manifest, include_warmup: bool) -> Option<PgbenchAcc> {
        if m.workload.name != "script" {
            return None;
        }
        let scripts = m
            .workload
            .params
            .get("scripts")?
            .as_array()?
            .iter()
            .filter_map(|s| {
                Some((
                    s.get("name")?.as_str()?.to_string(),
                    s.get("weight")?.as_u64()?,
                ))
            })
            .collect();
        let limit_ns = m
            .workload
            .params
            .get("latency_limit_ms")
            .and_then(|v| v.as_f64())
            .map(|ms| (ms * 1e6) as u64);
        Some(PgbenchAcc {
            include_warmup,
            scripts,
            ids: HashMap::new(),
            processed: 0,
            failed: HashMap::new(),
            failed_names: BTreeMap::new(),
            retried: 0,
            retries: 0,
            skipped: 0,
            sum_ms: 0.0,
            sum_sq_ms: 0.0,
            lag_sum_ms: 0.0,
            lag_max_ms: 0.0,
            lag_n: 0,
            limit_ns,
            late: 0,
        })
    }

    /// Adds one block of events (ids resolved through its name table).
    pub fn add_block(&mut self, names: &NameTable, events: &[Event]) {
        self.ids.clear();
        for (s, _) in &self.scripts {
            if let Some(id) = names.lookup(s) {
                self.ids.insert(id, true);
            }
        }
        if let Some(id) = names.lookup(SKIPPED) {
            self.ids.insert(id, false);
        }
        for e in events {
            let Some(&txn) = self.ids.get(&e.name) else {
                continue;
            };
            if e.is_warmup() && !self.include_warmup {
                continue;
            }
            if !txn {
                self.skipped += 1;
                continue;
            }
            let tries = u64::from(e.rows.max(1));
            if tries > 1 {
                self.retried += 1;
                self.retries += tries - 1;
            }
            if e.is_error() {
                *self.failed.entry(e.outcome).or_default() += 1;
                continue;
            }
            self.processed += 1;
            let ns = e.latency_from_intended_ns();
            let ms = ns as f64 / 1e6;
            self.sum_ms += ms;
            self.sum_sq_ms += ms * ms;
            if let Some(i) = e.intended_start_ns {
                let lag = e.start_ns.saturating_sub(i) as f64 / 1e6;
                self.lag_sum_ms += lag;
                self.lag_max_ms = self.lag_max_ms.max(lag);
                self.lag_n += 1;
            }
            if self.limit_ns.is_some_and(|l| ns > l) {
                self.late += 1;
            }
        }
        for (outcome, n) in self.failed.drain() {
            *self
                .failed_names
                .entry(names.name(outcome as NameId))
                .or_default() += n;
        }
    }

    /// The figures, given the measured span in seconds and the manifest.
    pub fn finish(self, span_s: Option<f64>, m: &Manifest) -> PgbenchFigures {
        let n = self.processed as f64;
        let failed: u64 = self.failed_names.values().sum();
        let avg = (self.processed > 0).then(|| self.sum_ms / n);
        // Sample standard deviation from the sums (pgbench prints its own the same way).
        let sd = (self.processed > 1).then(|| {
            let var = (self.sum_sq_ms - self.sum_ms * self.sum_ms / n) / (n - 1.0);
            var.max(0.0).sqrt()
        });
        let runner = m.runner.as_ref();
        let connect_s = runner.and_then(|r| r.connect_s);
        let p = &m.workload.params;
        let sessions = runner.map_or(1, |r| r.sessions);
        PgbenchFigures {
            scripts: self.scripts,
            scale: p.get("scale").and_then(|v| v.as_i64()),
            mode: p.get("mode").and_then(|v| v.as_str()).map(str::to_owned),
            max_tries: p.get("max_tries").and_then(|v| v.as_u64()),
            clients: sessions,
            threads: runner.and_then(|r| r.threads).unwrap_or(sessions),
            processed: self.processed,
            failed: self.failed_names,
            retried: self.retried,
            retries: self.retries,
            skipped: self.skipped,
            latency_avg_ms: avg,
            latency_stddev_ms: sd,
            lag_avg_ms: (self.lag_n > 0).then(|| self.lag_sum_ms / self.lag_n as f64),
            lag_max_ms: (self.lag_n > 0).then_some(self.lag_max_ms),
            late: self.limit_ns.map(|l| (l as f64 / 1e6, self.late)),
            connect_s,
            tps: span_s.filter(|&s| s > 0.0).map(|s| n / s),
            tps_with_connect: span_s
                .filter(|&s| s > 0.0)
                .map(|s| n / (s + connect_s.unwrap_or(0.0))),
            throughput: span_s.filter(|&s| s > 0.0).map(|s| (n + failed as f64) / s),
        }
    }
}

impl PgbenchFigures {
    /// The block as pgbench 15+ prints its summary, line for line where pgbench has the line.
    pub fn render(&self) -> String {
        use std::fmt::Write;
        let mut o = String::new();
        let failed: u64 = self.failed.values().sum();
        let all = self.processed + failed;
        let pct = |k: u64| {
            if all == 0 {
                0.0
            } else {
                100.0 * k as f64 / all as f64
            }
        };
        let _ = writeln!(
            o,
            "pgbench's figures (the transactions of the measured set):"
        );
        let types: Vec<String> = self
            .scripts
            .iter()
            .map(|(n, w)| match self.scripts.len() {
                1 => n.clone(),
                _ => format!("{n} (weight {w})"),
            })
            .collect();
        let _ = writeln!(o, "  transaction type: {}", types.join(", "));
        if let Some(s) = self.scale {
            let _ = writeln!(o, "  scaling factor: {s}");
        }
        if let Some(m) = &self.mode {
            let _ = writeln!(o, "  query mode: {m}");
        }
        let _ = writeln!(o, "  number of clients: {}", self.clients);
        let _ = writeln!(o, "  number of threads: {}", self.threads);
        if let Some(t) = self.max_tries {
            let _ = writeln!(o, "  maximum number of tries: {t}");
        }
        let _ = writeln!(
            o,
            "  number of transactions actually processed: {}",
            self.processed
        );
        let _ = writeln!(
            o,
            "  number of failed transactions: {failed} ({:.3}%)",
            pct(failed)
        );
        for (class, n) in &self.failed {
            let _ = writeln!(o, "    {class}: {n} ({:.3}%)", pct(*n));
        }
        if self.max_tries.is_some_and(|t| t > 1) || self.retried > 0 {
            let _ = writeln!(
                o,
                "  number of transactions retried: {} ({:.3}%)",
                self.retried,
                pct(self.retried)
            );
            let _ = writeln!(o, "  total number of retries: {}", self.retries);
        }
        if self.skipped > 0 {
            let _ = writeln!(o, "  number of transactions skipped: {}", self.skipped);
        }
        if let Some((limit, late)) = self.late {
            let _ = writeln!(
                o,
                "  number of transactions above the {limit:.1} ms latency limit: {late}/{} ({:.3}%)",
                self.processed,
                if self.processed == 0 { 0.0 } else { 100.0 * late as f64 / self.processed as f64 }
            );
        }
        if let Some(a) = self.latency_avg_ms {
            let _ = writeln!(o, "  latency average = {a:.3} ms");
        }
        if let Some(s) = self.latency_stddev_ms {
            let _ = writeln!(o, "  latency stddev = {s:.3} ms");
        }
        if let (Some(a), Some(m)) = (self.lag_avg_ms, self.lag_max_ms) {
            let _ = writeln!(o, "  rate limit schedule lag: avg {a:.3} (max {m:.3}) ms");
        }
        if let Some(c) = self.connect_s {
            let _ = writeln!(o, "  initial connection time = {:.3} ms", c * 1e3);
        }
        if let Some(t) = self.tps {
            let _ = writeln!(o, "  tps = {t:.6} (without initial connection time)");
        }
        if let (Some(t), Some(_)) = (self.tps_with_connect, self.connect_s) {
            let _ = writeln!(o, "  tps = {t:.6} (including initial connection time)");
        }
        if let (Some(t), true) = (self.throughput, failed > 0) {
            let _ = writeln!(
                o,
                "  throughput = {t:.6} transactions/s, failed ones included (tps above is the goodput)"
            );
        }
        o
    }
}
