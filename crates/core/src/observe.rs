//! The database's and the OS's side of a run: counter snapshots (`snapshots.jsonl`) and
//! active-session samples (`samples.jsonl`), JSON lines appended as they are taken so a crash
//! keeps every complete line, and read back line by line.
//!
//! A snapshot is a set of named [`Section`]s (`pg_stat_database`, `pg_stat_wal`, `os.cpu`, …) of
//! cumulative counters, gauges and keyed rows; [`Snapshot::delta`] turns two of them into what
//! happened in between, without knowing what the counters mean.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Counter snapshots, one JSON object a line.
pub const SNAPSHOTS_FILE: &str = "snapshots.jsonl";
/// Active-session samples, one JSON object a line.
pub const SAMPLES_FILE: &str = "samples.jsonl";

/// The run file `--waits history` writes (MariaDB/MySQL): one [`WaitLine`] per timed wait of the
/// run's threads.
pub const WAITS_FILE: &str = "waits.jsonl";

/// One group of counters from one source (a view, a file, a `/proc` file).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Section {
    /// Why the section could not be read (view absent, no privilege, not local); the other
    /// fields are then empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
    /// Cumulative counters: a delta subtracts them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, f64>,
    /// Levels (file sizes, current values): a delta keeps the later one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub gauges: BTreeMap<String, f64>,
    /// Keyed rows of cumulative counters (a table, a statement, an I/O context).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rows: BTreeMap<String, BTreeMap<String, f64>>,
    /// Descriptive text (the device's name, the path it holds).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub text: BTreeMap<String, String>,
}

impl Section {
    /// A section that could not be read, and why.
    pub fn missing(why: impl Into<String>) -> Self {
        Section {
            missing: Some(why.into()),
            ..Section::default()
        }
    }

    /// A counter's value, if present.
    pub fn counter(&self, name: &str) -> Option<f64> {
        self.counters.get(name).copied()
    }
}

/// Counters at one moment of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// `start`, `periodic` or `end` (a delta is labelled `delta`).
    pub label: String,
    /// When it was taken, ns since the run's clock origin (a delta: its end).
    pub t_ns: u64,
    /// A delta: the time it spans, in ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_ns: Option<u64>,
    /// Sections by name.
    pub sections: BTreeMap<String, Section>,
}

impl Snapshot {
    /// What happened from `earlier` to `self`: counters and row counters subtracted (a counter
    /// that went down, e.g. a statistics reset, gives its later value), gauges and text from
    /// `self`. A section missing on either side is missing in the delta, with the reason.
    pub fn delta(&self, earlier: &Snapshot) -> Snapshot {
        let mut sections = BTreeMap::new();
        for (name, later) in &self.sections {
            let d = match (earlier.sections.get(name), &later.missing) {
                (_, Some(why)) => Section::missing(why.clone()),
                (None, None) => Section::missing("not in the earlier snapshot"),
                (Some(e), None) if e.missing.is_some() => {
                    Section::missing(e.missing.clone().unwrap())
                }
                (Some(e), None) => Section {
                    missing: None,
                    counters: diff(&later.counters, &e.counters),
                    gauges: later.gauges.clone(),
                    rows: later
                        .rows
                        .iter()
                        .map(|(k, row)| {
                            let empty = BTreeMap::new();
                            (k.clone(), diff(row, e.rows.get(k).unwrap_or(&empty)))
                        })
                        .collect(),
                    text: later.text.clone(),
                },
            };
            sections.insert(name.clone(), d);
        }
        Snapshot {
            label: "delta".into(),
            t_ns: self.t_ns,
            span_ns: Some(self.t_ns.saturating_sub(earlier.t_ns)),
            sections,
        }
    }
}

fn diff(later: &BTreeMap<String, f64>, earlier: &BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    later
        .iter()
        .map(|(k, &v)| {
            let d = match earlier.get(k) {
                Some(&e) if v >= e => v - e,
                _ => v,
            };
            (k.clone(), d)
        })
        .collect()
}

/// One active-session sample: what one of the run's backends was doing at one moment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// When, ns since the run's clock origin.
    pub t_ns: u64,
    /// The run's session number.
    pub session: u32,
    /// `active`, `idle`, `idle in transaction`, …
    pub state: String,
    /// Wait class (`IO`, `LWLock`, `Lock`, `Client`, …); none while on CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_class: Option<String>,
    /// Wait event (`WALSync`, `transactionid`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_event: Option<String>,
    /// The server's query id (PostgreSQL 14+ with `compute_query_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_id: Option<i64>,
    /// The start of the statement's text (`COMMIT`, `UPDATE …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The client operation in flight: the session's operation sequence number (1 = first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<u64>,
    /// The backend's process id, when the sampler selects backends by pid (a capture's or a
    /// replay's sessions, which dbscope does not name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// A stretch of time the sampler could not sample (its connection died).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SampleGap {
    /// Start of the gap, ns since the origin.
    pub from_ns: u64,
    /// End of the gap (the sampler was back).
    pub to_ns: u64,
    /// Why.
    pub reason: String,
}

/// One wait of one of the run's threads, from `performance_schema.events_waits_history_long`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimedWait {
    /// The server's connection id (`PROCESSLIST_ID`).
    pub conn: u64,
    /// performance_schema's `THREAD_ID`.
    pub thread: u64,
    /// `EVENT_ID`, increasing per thread.
    pub event_id: u64,
    /// `EVENT_NAME` (`wait/io/file/innodb/innodb_data_file`, `idle`, …).
    pub name: String,
    /// `TIMER_START`: the server's picosecond timer.
    #[serde(default)]
    pub timer_start_ps: Option<u64>,
    /// `TIMER_WAIT`, picoseconds.
    #[serde(default)]
    pub wait_ps: Option<u64>,
    /// `OPERATION` (`read`, `write`, `sync`, …).
    #[serde(default)]
    pub operation: Option<String>,
    /// `OBJECT_NAME` (the file, the table).
    #[serde(default)]
    pub object: Option<String>,
    /// The run's session whose connection it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u32>,
    /// The wait's start on the run's clock (ns since the origin, like the events), mapped from
    /// `timer_start_ps` by the run's timer calibration; `None` before the clock's origin or
    /// without a calibration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ns: Option<u64>,
}

/// One line of `waits.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitLine {
    /// A wait.
    Wait(TimedWait),
}

/// One line of `samples.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleLine {
    /// First line: how the samples were taken.
    Header {
        /// Samples per second.
        hz: f64,
        /// The run id in `application_name` (`dbscope/<run id>/<session>`).
        run_id: String,
    },
    /// A sampling tick: when it happened and how many backends it found (idle ones included).
    Tick {
        /// ns since the origin.
        t_ns: u64,
        /// Backends of the run seen.
        seen: u32,
    },
    /// One backend at one tick.
    Sample(Sample),
    /// A gap.
    Gap(SampleGap),
}

/// Appends JSON lines to a run file, each written with one `write(2)` as soon as it is taken.
#[derive(Debug)]
pub struct JsonLines {
    file: File,
}

impl JsonLines {
    /// Creates (or appends to) `dir/name`.
    pub fn create(dir: &Path, name: &str) -> Result<Self> {
        let path = dir.join(name);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        Ok(JsonLines { file })
    }

    /// Writes the values, one a line, in one write.
    pub fn append<T: Serialize>(&mut self, values: &[T]) -> std::io::Result<()> {
        let mut buf = Vec::with_capacity(256 * values.len());
        for v in values {
            serde_json::to_writer(&mut buf, v)?;
            buf.push(b'\n');
        }
        self.file.write_all(&buf)
    }
}

/// Reads a JSON lines run file: `None` when it does not exist; a torn last line (a crash while
/// writing) is ignored, any other bad line is an error naming the file and line.
pub fn read_lines<T: for<'de> Deserialize<'de>>(dir: &Path, name: &str) -> Result<Option<Vec<T>>> {
    let path = dir.join(name);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&path, e)),
    };
    let lines: Vec<String> = BufReader::new(file)
        .lines()
        .collect::<std::io::Result<_>>()
        .map_err(|e| Error::io(&path, e))?;
    let mut out = Vec::with_capacity(lines.len());
    let n = lines.len();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(v) => out.push(v),
            // The last line may be cut short by a crash: what came before is kept.
            Err(_) if i + 1 == n => break,
            Err(e) => {
                return Err(Error::Format {
                    path: path.clone(),
                    msg: format!("line {}: {e}", i + 1),
                })
            }
        }
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(t: u64, commits: f64, size: f64) -> Snapshot {
        let mut s = Section::default();
        s.counters.insert("xact_commit".into(), commits);
        s.gauges.insert("wal_file_bytes".into(), size);
        s.rows.insert(
            "t1".into(),
            BTreeMap::from([("heap_blks_hit".into(), commits * 2.0)]),
        );
        Snapshot {
            label: "x".into(),
            t_ns: t,
            span_ns: None,
            sections: BTreeMap::from([
                ("db".into(), s),
                ("gone".into(), Section::missing("permission denied")),
            ]),
        }
    }

    #[test]
    fn delta_subtracts_counters_and_keeps_gauges() {
        let d = snap(3_000, 150.0, 7.0).delta(&snap(1_000, 100.0, 9.0));
        assert_eq!(d.span_ns, Some(2_000));
        let s = &d.sections["db"];
        assert_eq!(s.counter("xact_commit"), Some(50.0));
        assert_eq!(s.gauges["wal_file_bytes"], 7.0);
        assert_eq!(s.rows["t1"]["heap_blks_hit"], 100.0);
        assert_eq!(
            d.sections["gone"].missing.as_deref(),
            Some("permission denied")
        );
    }

    #[test]
    fn lines_round_trip_and_a_torn_last_line_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = JsonLines::create(dir.path(), SNAPSHOTS_FILE).unwrap();
        w.append(&[snap(1, 1.0, 1.0), snap(2, 2.0, 2.0)]).unwrap();
        let read: Vec<Snapshot> = read_lines(dir.path(), SNAPSHOTS_FILE).unwrap().unwrap();
        assert_eq!(read, vec![snap(1, 1.0, 1.0), snap(2, 2.0, 2.0)]);
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(SNAPSHOTS_FILE))
            .unwrap()
            .write_all(b"{\"label\":\"en")
            .unwrap();
        let read: Vec<Snapshot> = read_lines(dir.path(), SNAPSHOTS_FILE).unwrap().unwrap();
        assert_eq!(read.len(), 2);
        assert!(read_lines::<Snapshot>(dir.path(), "absent.jsonl")
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_bad_line_in_the_middle_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(SAMPLES_FILE),
            "{\"header\":{\"hz\":10.0,\"run_id\":\"ab\"}}\nnot json\n{\"tick\":{\"t_ns\":1,\"seen\":0}}\n",
        )
        .unwrap();
        let e = read_lines::<SampleLine>(dir.path(), SAMPLES_FILE).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("samples.jsonl: line 2"), "{msg}");
    }
}
