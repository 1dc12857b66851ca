//! The N slowest events of a run with where they happened (session, start offset, UTC time, and for
//! runs imported from 10046 traces the trace file and line): the seed's "top 10,000 waits", for
//! `dbscope report RUN --top N`.
//!
//! One pass over the event blocks with a bounded min-heap: O(events · log N) time, O(N) memory.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use dbscope_core::{Error, Event, NameId, NameTable, RunDir};

use crate::text::{column_width, one_line};

/// One of the slowest events.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TopEvent {
    /// 1 for the slowest.
    pub rank: usize,
    /// Event name.
    pub name: String,
    /// Duration in µs.
    pub duration_us: f64,
    /// Session number.
    pub session: u32,
    /// Start, in seconds since the run's clock origin.
    pub start_s: f64,
    /// Start as a UTC time.
    pub start_utc: Option<DateTime<Utc>>,
    /// For runs imported from traces: `file:line` of the trace line the event came from.
    pub source: Option<String>,
}

/// Side file of trace imports: one JSON object per event, in the order the events were written,
/// with `file` and `line` (written by `dbscope trace import`).
pub const TRACE_ATTRS_FILE: &str = "trace-attrs.jsonl";

/// `file:line` per event index (0-based, in file order) for the wanted indices, from the trace
/// side file when the run has one; unreadable lines are left out.
fn trace_sources(run: &RunDir, wanted: &HashMap<u64, usize>) -> HashMap<u64, String> {
    use std::io::BufRead;
    let mut out = HashMap::new();
    let Ok(f) = std::fs::File::open(run.path.join(TRACE_ATTRS_FILE)) else {
        return out;
    };
    for (i, line) in std::io::BufReader::new(f).lines().enumerate() {
        let Ok(line) = line else { break };
        if !wanted.contains_key(&(i as u64)) {
            continue;
        }
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
            let idx = v.get("i").and_then(|x| x.as_u64()).unwrap_or(i as u64);
            if let (Some(file), Some(l)) = (
                v.get("file").and_then(|x| x.as_str()),
                v.get("line").and_then(|x| x.as_u64()),
            ) {
                out.insert(idx, format!("{file}:{l}"));
            }
        }
        if out.len() == wanted.len() {
            break;
        }
    }
    out
}

/// The slowest successful events of the measured set (warm-up left out unless included).
#[derive(Clone, Debug, Serialize)]
pub struct TopEvents {
    /// How many were asked for.
    pub n: usize,
    /// The one event name considered (`--event`), or `None` for all.
    pub event: Option<String>,
    /// Successful measured events considered.
    pub of: u64,
    /// Slowest first; equal durations in file order.
    pub events: Vec<TopEvent>,
}

/// A heap entry: duration, reversed sequence number, session, start, name slot.
type Candidate = (u64, Reverse<u64>, u32, u64, usize);

/// Finds the `n` slowest successful events of `run`, of the name `event` only when given.
///
/// Errors: the run cannot be read; `event` names no event of the run (the error lists its names).
pub fn top_events(
    run: &RunDir,
    n: usize,
    include_warmup: bool,
    event: Option<&str>,
) -> Result<TopEvents, Error> {
    let mut readable = run.clone();
    readable
        .manifest
        .event_files
        .retain(|f| run.path.join(f).is_file());
    // Heap entries: (duration, Reverse(sequence)) first, so that the minimum is the least deserving.
    let mut heap: BinaryHeap<Reverse<Candidate>> = BinaryHeap::with_capacity(n.min(1 << 20) + 1);
    let mut names: Vec<String> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut block_ids: HashMap<NameId, usize> = HashMap::new();
    let mut seq = 0u64;
    let mut of = 0u64;
    // With `event`: whether the run has it at all, and otherwise the names it has.
    let mut found = false;
    let mut seen: std::collections::BTreeSet<String> = Default::default();
    readable.for_each_block(|table: &NameTable, events: &[Event]| {
        block_ids.clear();
        // Ids are per event file: look the wanted name up in this block's table.
        let wanted = event.map(|name| table.lookup(name));
        if let Some(None) = wanted {
            seq += events.len() as u64;
            if !found {
                let ids: std::collections::BTreeSet<NameId> =
                    events.iter().map(|e| e.name).collect();
                seen.extend(ids.into_iter().map(|id| table.name(id)));
            }
            return;
        }
        for e in events {
            seq += 1;
            if let Some(Some(id)) = wanted {
                if e.name != id {
                    continue;
                }
                found = true;
            }
            if e.is_error() || (e.is_warmup() && !include_warmup) {
                continue;
            }
            of += 1;
            if n == 0 {
                continue;
            }
            let key = (e.duration_ns, Reverse(seq));
            if heap.len() == n {
                match heap.peek() {
                    Some(Reverse(min)) if (min.0, min.1) < key => {
                        heap.pop();
                    }
                    _ => continue,
                }
            }
            let slot = *block_ids.entry(e.name).or_insert_with(|| {
                let name = table.name(e.name);
                *index.entry(name.clone()).or_insert_with(|| {
                    names.push(name);
                    names.len() - 1
                })
            });
            heap.push(Reverse((
                e.duration_ns,
                Reverse(seq),
                e.session,
                e.start_ns,
                slot,
            )));
        }
    })?;
    if let (Some(name), false) = (event, found) {
        let names: Vec<String> = seen.iter().map(|n| format!("{n:?}")).collect();
        return Err(Error::InvalidInput(format!(
            "--event {name:?}: the run has no such event (it has {})",
            if names.is_empty() {
                "no events".to_string()
            } else {
                names.join(", ")
            }
        )));
    }
    let mut list: Vec<_> = heap.into_iter().map(|Reverse(t)| t).collect();
    list.sort_unstable_by_key(|t| Reverse((t.0, t.1)));
    let origin = run.manifest.clock_origin_unix_ns;
    // Sequence numbers count from 1; event indices in the trace side file from 0.
    let wanted: HashMap<u64, usize> = list
        .iter()
        .enumerate()
        .map(|(i, t)| (t.1 .0 - 1, i))
        .collect();
    let sources = trace_sources(run, &wanted);
    let events = list
        .into_iter()
        .enumerate()
        .map(|(i, (d, Reverse(seq), session, start, slot))| TopEvent {
            source: sources.get(&(seq - 1)).cloned(),
            rank: i + 1,
            name: names[slot].clone(),
            duration_us: d as f64 / 1000.0,
            session,
            start_s: start as f64 / 1e9,
            start_utc: i64::try_from(start)
                .ok()
                .and_then(|s| origin.checked_add(s))
                .map(DateTime::from_timestamp_nanos),
        })
        .collect();
    Ok(TopEvents {
        n,
        event: event.map(str::to_string),
        of,
        events,
    })
}

/// The list as text: one line per event, slowest first.
pub fn render_text(t: &TopEvents) -> String {
    let what = match &t.event {
        Some(name) => format!("successful {:?} events", one_line(name)),
        None => "successful events".into(),
    };
    let mut out = format!("top {} of {} {what}, slowest first\n", t.events.len(), t.of);
    let w = column_width(t.events.iter().map(|e| e.name.as_str()), 5).min(40);
    let sources = t.events.iter().any(|e| e.source.is_some());
    out.push_str(&format!(
        "{:>6}  {:<w$}  {:>14}  {:>7}  {:>14}  start (UTC){}\n",
        "rank",
        "event",
        "duration (µs)",
        "session",
        "start (s)",
        if sources {
            "                  trace line"
        } else {
            ""
        }
    ));
    for e in &t.events {
        let name: String = one_line(&e.name).chars().take(40).collect();
        let src = match (&e.source, sources) {
            (Some(s), _) => format!("  {s}"),
            (None, true) => "  -".to_string(),
            (None, false) => String::new(),
        };
        out.push_str(&format!(
            "{:>6}  {:<w$}  {:>14.3}  {:>7}  {:>14.6}  {}{src}\n",
            e.rank,
            name,
            e.duration_us,
            e.session,
            e.start_s,
            e.start_utc
                .map(|t| t.format("%Y-%m-%d %H:%M:%S%.6f").to_string())
                .unwrap_or_else(|| "-".into())
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbscope_core::fake::FakeRun;
    use dbscope_core::manifest::WorkloadInfo;
    use dbscope_core::{Manifest, EVENT_WARMUP};

    #[test]
    fn slowest_first_with_where() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Manifest::new("workload", WorkloadInfo::default(), 1);
        m.clock_origin_unix_ns = 1_700_000_000_000_000_000;
        let mut w = FakeRun::with_manifest(dir.path(), m);
        let c = w.name("commit");
        let u = w.name("update");
        let ev = FakeRun::event;
        w.block(&[
            Event {
                flags: EVENT_WARMUP,
                ..ev(c, 0, 0, 99_000_000)
            },
            ev(c, 1, 1_000, 500_000),
            ev(u, 2, 2_000, 7_000_000),
            ev(c, 3, 3_000, 500_000),
            Event {
                outcome: 1,
                ..ev(c, 0, 4_000, 50_000_000)
            },
        ]);
        w.block(&[ev(c, 4, 1_500_000_000, 600_000)]);
        let run = w.finish();
        // As `trace import` writes it: one object per event, in order (index 2 is the `update`).
        let attrs: String = (0..6)
            .map(|i| format!("{{\"i\":{i},\"file\":\"x.trc\",\"line\":{}}}\n", 100 + i))
            .collect();
        std::fs::write(dir.path().join(TRACE_ATTRS_FILE), attrs).unwrap();
        let t = top_events(&run, 3, false, None).unwrap();
        assert_eq!(t.of, 4);
        assert_eq!(t.events[0].source.as_deref(), Some("x.trc:102"));
        assert_eq!(t.events[1].source.as_deref(), Some("x.trc:105"));
        let got: Vec<(String, f64, u32)> = t
            .events
            .iter()
            .map(|e| (e.name.clone(), e.duration_us, e.session))
            .collect();
        assert_eq!(
            got,
            vec![
                ("update".to_string(), 7000.0, 2),
                ("commit".to_string(), 600.0, 4),
                ("commit".to_string(), 500.0, 1),
            ]
        );
        assert_eq!(t.events[1].start_s, 1.5);
        let text = render_text(&t);
        assert!(text.contains("2023-11-14 22:13:21.500000"), "{text}");
        assert_eq!(
            top_events(&run, 10, true, None).unwrap().events[0].duration_us,
            99_000.0
        );
        // Issue 34: one event name alone.
        let t = top_events(&run, 2, false, Some("commit")).unwrap();
        assert_eq!(t.of, 3);
        let got: Vec<(&str, f64)> = t
            .events
            .iter()
            .map(|e| (e.name.as_str(), e.duration_us))
            .collect();
        assert_eq!(got, [("commit", 600.0), ("commit", 500.0)]);
        assert_eq!(t.events[1].source.as_deref(), Some("x.trc:101"));
        assert!(
            render_text(&t).starts_with("top 2 of 3 successful \"commit\" events, slowest first\n")
        );
        let e = top_events(&run, 2, false, Some("log file sync")).unwrap_err();
        assert!(
            e.to_string()
                .contains("--event \"log file sync\": the run has no such event (it has \"commit\", \"update\")"),
            "{e}"
        );
    }
}
