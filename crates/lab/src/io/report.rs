//! The `io redo` section of `dbscope report`: group-commit factor, MB/s and write latency per
//! destination, log switches, and the race counters from `redo.json`.

use dbscope_core::stats::quantile_type7;
use dbscope_core::RunDir;
use serde::Serialize;

use super::redo::{RedoCounters, COUNTERS_FILE, EV_SWITCH, EV_SYNC, EV_WRITE, WORKLOAD_NAME};

/// One destination's writes, from the events.
#[derive(Clone, Debug, Serialize)]
pub struct DestSummary {
    /// Name.
    pub name: String,
    /// Path of its log.
    pub path: String,
    /// Writes recorded.
    pub writes: u64,
    /// Redo blocks written.
    pub blocks: u64,
    /// Megabytes (10^6 bytes) per second over the run's measured span.
    pub mb_per_s: Option<f64>,
    /// Median `log file parallel write`, µs.
    pub write_p50_us: Option<f64>,
    /// 99th percentile `log file parallel write`, µs.
    pub write_p99_us: Option<f64>,
    /// Races this destination finished first (from `redo.json`).
    pub first: Option<u64>,
    /// Writes slower than the outlier threshold (from `redo.json`).
    pub outliers: Option<u64>,
    /// Writes given an injected delay (from `redo.json`).
    pub injected: Option<u64>,
}

/// The `io redo` section of a report.
#[derive(Clone, Debug, Serialize)]
pub struct RedoSummary {
    /// Redo block size, bytes.
    pub block_size: u64,
    /// Sync mode.
    pub sync: String,
    /// Group commit on or off.
    pub group_commit: bool,
    /// Commits acknowledged (`log file sync` without error).
    pub commits: u64,
    /// Writes issued by the log writer (the most any destination recorded).
    pub writes: u64,
    /// Commits per write: the group-commit factor.
    pub commits_per_write: Option<f64>,
    /// Log switches.
    pub log_switches: u64,
    /// Per destination.
    pub destinations: Vec<DestSummary>,
    /// Races decided (both destinations done), from `redo.json`.
    pub races: Option<u64>,
    /// Races where the loser was an outlier and the winner not, from `redo.json`.
    pub prevented_outliers: Option<u64>,
    /// The outlier threshold, ms.
    pub outlier_ms: Option<f64>,
    /// Whether `redo.json` holds final counts (false: a snapshot of a killed run, or missing).
    pub counters_final: bool,
}

/// Builds the section for an `io redo` run; `None` for other runs or when the events cannot be read.
pub fn summarize(run: &RunDir) -> Option<RedoSummary> {
    let m = &run.manifest;
    if m.workload.name != WORKLOAD_NAME {
        return None;
    }
    let p = &m.workload.params;
    let sessions = m.runner.as_ref()?.sessions;
    let dests: Vec<(String, String)> = p
        .get("destinations")?
        .as_array()?
        .iter()
        .map(|d| {
            let s = |k: &str| d.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
            (s("name"), s("path"))
        })
        .collect();
    let block_size = p.get("block_size").and_then(|v| v.as_u64()).unwrap_or(0);
    let mut commits = 0u64;
    let mut switches = 0u64;
    let mut lat: Vec<Vec<u64>> = vec![Vec::new(); dests.len()];
    let mut blocks = vec![0u64; dests.len()];
    let (mut first, mut last) = (u64::MAX, 0u64);
    run.for_each_block(|names, events| {
        // Names arrive with the blocks that first use them: look them up per block.
        let (sync, write, switch) = (
            names.lookup(EV_SYNC),
            names.lookup(EV_WRITE),
            names.lookup(EV_SWITCH),
        );
        for e in events {
            first = first.min(e.start_ns);
            last = last.max(e.start_ns + e.duration_ns);
            if e.is_error() {
                continue;
            }
            if Some(e.name) == sync {
                commits += 1;
            } else if Some(e.name) == switch {
                switches += 1;
            } else if Some(e.name) == write {
                if let Some(d) = e.session.checked_sub(sessions + 1) {
                    if let Some(v) = lat.get_mut(d as usize) {
                        v.push(e.duration_ns);
                        blocks[d as usize] += e.rows as u64;
                    }
                }
            }
        }
    })
    .ok()?;
    let span_s = (last > first).then(|| (last - first) as f64 / 1e9);
    let counters: Option<RedoCounters> = std::fs::read_to_string(run.path.join(COUNTERS_FILE))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let destinations = dests
        .iter()
        .enumerate()
        .map(|(i, (name, path))| {
            let v = &mut lat[i];
            v.sort_unstable();
            let q = |p: f64| (!v.is_empty()).then(|| quantile_type7(v, p) / 1e3);
            let c = counters.as_ref().and_then(|c| c.destinations.get(i));
            DestSummary {
                name: name.clone(),
                path: path.clone(),
                writes: v.len() as u64,
                blocks: blocks[i],
                mb_per_s: span_s.map(|s| (blocks[i] * block_size) as f64 / 1e6 / s),
                write_p50_us: q(0.5),
                write_p99_us: q(0.99),
                first: c.map(|c| c.first),
                outliers: c.map(|c| c.outliers),
                injected: c.map(|c| c.injected),
            }
        })
        .collect::<Vec<_>>();
    // Every destination gets every write; the one furthest along has recorded the most.
    let writes = destinations.iter().map(|d| d.writes).max().unwrap_or(0);
    let two = dests.len() > 1;
    Some(RedoSummary {
        block_size,
        sync: p
            .get("sync")
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string(),
        group_commit: p
            .get("group_commit")
            .and_then(|v| v.as_bool())
            .unwrap_or(true),
        commits,
        writes,
        commits_per_write: (writes > 0).then(|| commits as f64 / writes as f64),
        log_switches: switches,
        destinations,
        races: counters.as_ref().filter(|_| two).map(|c| c.races),
        prevented_outliers: counters
            .as_ref()
            .filter(|_| two)
            .map(|c| c.prevented_outliers),
        outlier_ms: counters.as_ref().map(|c| c.outlier_ms),
        counters_final: counters.as_ref().is_some_and(|c| c.final_counts),
    })
}

/// Appends the section as text.
pub fn push_text(out: &mut String, s: &RedoSummary) {
    out.push_str(&format!(
        "\nredo log writer: {}-byte blocks, sync {}, group commit {}\n",
        s.block_size,
        s.sync,
        if s.group_commit { "on" } else { "off" }
    ));
    out.push_str(&format!(
        "  commits {}  writes {}  commits per write {}  log switches {}\n",
        s.commits,
        s.writes,
        s.commits_per_write
            .map(|f| format!("{f:.2}"))
            .unwrap_or_else(|| "-".into()),
        s.log_switches
    ));
    let opt = |v: Option<f64>, prec: usize| {
        v.map(|x| format!("{x:.prec$}"))
            .unwrap_or_else(|| "-".into())
    };
    for d in &s.destinations {
        out.push_str(&format!(
            "  {} ({}): {} writes, {:.1} blocks/write, {} MB/s, log file parallel write p50 {} µs p99 {} µs",
            d.name,
            d.path,
            d.writes,
            if d.writes > 0 { d.blocks as f64 / d.writes as f64 } else { 0.0 },
            opt(d.mb_per_s, 2),
            opt(d.write_p50_us, 1),
            opt(d.write_p99_us, 1)
        ));
        if let Some(n) = d.injected.filter(|&n| n > 0) {
            out.push_str(&format!(", {n} injected delays"));
        }
        out.push('\n');
    }
    if let Some(races) = s.races {
        let won: u64 = s.destinations.iter().map(|d| d.first.unwrap_or(0)).sum();
        let firsts: Vec<String> = s
            .destinations
            .iter()
            .map(|d| {
                let f = d.first.unwrap_or(0);
                let pct = if won > 0 {
                    100.0 * f as f64 / won as f64
                } else {
                    0.0
                };
                format!("FL_{}_FIRST {f} ({pct:.1} %)", d.name.to_uppercase())
            })
            .collect();
        out.push_str(&format!(
            "  race: {won} writes with a winner, {races} completed by both; {}\n",
            firsts.join(", ")
        ));
        out.push_str(&format!(
            "  FL_PREVENTED_OUTLIERS {} (loser over {} ms, winner not){}\n",
            s.prevented_outliers.unwrap_or(0),
            opt(s.outlier_ms, 0),
            if s.counters_final {
                ""
            } else {
                "; counters are a snapshot taken while the run was going"
            }
        ));
    }
}
