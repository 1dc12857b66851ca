//! Run-level counters as data: named values with units and tables of rows, in `counters.json`,
//! written by any source and read by every consumer without knowing which source wrote them.
//!
//! A run holds any number of [`CounterSection`]s, each under its own key (`redo` for the redo log
//! writer's group-commit and race counters; database snapshots and OS counters use the same form).
//! Consumers print a section as its title, its counters and its tables; JSON consumers get each
//! section as an object of `counter key → value` and `table key → [row objects]`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

pub use crate::files::COUNTERS_FILE;

/// One value: a count, a measurement, a word, a flag, or nothing (not measured).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CounterValue {
    /// Not known (e.g. a rate over an empty span).
    #[default]
    None,
    /// A whole number (counts, bytes).
    Int(i64),
    /// A measurement (rates, ratios, times).
    Float(f64),
    /// A flag.
    Bool(bool),
    /// A word or a path.
    Text(String),
}

impl CounterValue {
    /// The value as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            CounterValue::None => serde_json::Value::Null,
            CounterValue::Int(i) => (*i).into(),
            CounterValue::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            CounterValue::Bool(b) => (*b).into(),
            CounterValue::Text(s) => s.clone().into(),
        }
    }

    /// A count (saturating at `i64::MAX`).
    pub fn count(n: u64) -> Self {
        CounterValue::Int(n.min(i64::MAX as u64) as i64)
    }

    /// A measurement, or nothing.
    pub fn float(v: Option<f64>) -> Self {
        v.map_or(CounterValue::None, CounterValue::Float)
    }
}

/// A named value with its unit.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counter {
    /// Key for machines (JSON), e.g. `commits_per_write`.
    pub key: String,
    /// Label for people, e.g. `commits per write` or `FL_PREVENTED_OUTLIERS`.
    pub label: String,
    /// The value.
    pub value: CounterValue,
    /// Unit (`µs`, `MB/s`, `ms`), empty for plain counts.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unit: String,
    /// Decimals to print a measurement with (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decimals: Option<u8>,
}

impl Counter {
    /// A counter; `unit` may be empty.
    pub fn new(key: &str, label: &str, value: CounterValue, unit: &str) -> Self {
        Counter {
            key: key.into(),
            label: label.into(),
            value,
            unit: unit.into(),
            decimals: None,
        }
    }

    /// The same counter printed with `d` decimals.
    pub fn decimals(mut self, d: u8) -> Self {
        self.decimals = Some(d);
        self
    }
}

/// A column of a [`CounterTable`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Column {
    /// Key for machines.
    pub key: String,
    /// Heading for people.
    pub label: String,
    /// Unit, empty for plain counts and words.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unit: String,
    /// Decimals to print measurements with (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decimals: Option<u8>,
}

impl Column {
    /// A column; `unit` may be empty.
    pub fn new(key: &str, label: &str, unit: &str) -> Self {
        Column {
            key: key.into(),
            label: label.into(),
            unit: unit.into(),
            decimals: None,
        }
    }

    /// The same column printed with `d` decimals.
    pub fn decimals(mut self, d: u8) -> Self {
        self.decimals = Some(d);
        self
    }
}

/// Rows of values under named columns (e.g. one row per redo destination or per table).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CounterTable {
    /// Key for machines, e.g. `destinations`.
    pub key: String,
    /// Heading for people.
    pub title: String,
    /// The columns.
    pub columns: Vec<Column>,
    /// The rows, one value per column.
    pub rows: Vec<Vec<CounterValue>>,
}

/// One source's run-level counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CounterSection {
    /// Key for machines (the section's name in JSON reports), e.g. `redo`.
    pub key: String,
    /// Heading for people.
    pub title: String,
    /// False while the run goes: the counters are a snapshot, and a killed run keeps the last one.
    pub final_counts: bool,
    /// Named values.
    #[serde(default)]
    pub counters: Vec<Counter>,
    /// Tables.
    #[serde(default)]
    pub tables: Vec<CounterTable>,
    /// Lines to print under the section.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl CounterSection {
    /// The section as one JSON object: `final_counts`, each counter's key with its value, and each
    /// table's key with its rows as objects keyed by column.
    pub fn to_json(&self) -> serde_json::Value {
        let mut o = serde_json::Map::new();
        o.insert("title".into(), self.title.clone().into());
        o.insert("final_counts".into(), self.final_counts.into());
        for c in &self.counters {
            o.insert(c.key.clone(), c.value.to_json());
        }
        for t in &self.tables {
            let rows = t
                .rows
                .iter()
                .map(|r| {
                    let row: serde_json::Map<String, serde_json::Value> = t
                        .columns
                        .iter()
                        .zip(r)
                        .map(|(c, v)| (c.key.clone(), v.to_json()))
                        .collect();
                    serde_json::Value::Object(row)
                })
                .collect::<Vec<_>>();
            o.insert(t.key.clone(), rows.into());
        }
        if !self.notes.is_empty() {
            o.insert("notes".into(), self.notes.clone().into());
        }
        serde_json::Value::Object(o)
    }
}

/// Every counter section of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunCounters {
    /// Sections in the order sources first wrote them.
    pub sections: Vec<CounterSection>,
}

impl RunCounters {
    /// Adds a section, or replaces the one with the same key.
    pub fn put(&mut self, section: CounterSection) {
        match self.sections.iter_mut().find(|s| s.key == section.key) {
            Some(s) => *s = section,
            None => self.sections.push(section),
        }
    }

    /// Reads `counters.json` from a run directory; a run without one has no sections.
    pub fn read(dir: &Path) -> Result<Self> {
        let path = dir.join(COUNTERS_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(Error::io(&path, e)),
        };
        serde_json::from_str(&text).map_err(|e| Error::Format {
            path,
            msg: format!("line {}: not valid counters: {e}", e.line()),
        })
    }

    /// Writes `counters.json` into a run directory, atomically.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let path = dir.join(COUNTERS_FILE);
        let text = serde_json::to_string_pretty(self).map_err(|e| Error::Format {
            path: path.clone(),
            msg: format!("cannot encode counters: {e}"),
        })?;
        crate::atomic::write_atomic(&path, (text + "\n").as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_round_trip_and_flatten() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = RunCounters::default();
        c.put(CounterSection {
            key: "redo".into(),
            title: "redo log writer".into(),
            final_counts: false,
            counters: vec![
                Counter::new("commits", "commits", CounterValue::count(12), ""),
                Counter::new("rate", "rate", CounterValue::float(Some(1.5)), "MB/s"),
                Counter::new("none", "none", CounterValue::None, ""),
            ],
            tables: vec![CounterTable {
                key: "destinations".into(),
                title: "per destination".into(),
                columns: vec![
                    Column::new("name", "name", ""),
                    Column::new("w", "writes", ""),
                ],
                rows: vec![vec![CounterValue::Text("a".into()), CounterValue::Int(3)]],
            }],
            notes: vec![],
        });
        let mut fin = c.sections[0].clone();
        fin.final_counts = true;
        c.put(fin);
        assert_eq!(c.sections.len(), 1);
        c.write(dir.path()).unwrap();
        let back = RunCounters::read(dir.path()).unwrap();
        assert_eq!(back, c);
        let j = back.sections[0].to_json();
        assert_eq!(j["commits"], 12);
        assert_eq!(j["rate"], 1.5);
        assert!(j["none"].is_null());
        assert_eq!(j["final_counts"], true);
        assert_eq!(j["destinations"][0]["w"], 3);
        assert_eq!(j["destinations"][0]["name"], "a");
        assert_eq!(
            RunCounters::read(&dir.path().join("nowhere")).unwrap(),
            RunCounters::default()
        );
        std::fs::write(dir.path().join(COUNTERS_FILE), "{").unwrap();
        let err = RunCounters::read(dir.path()).unwrap_err().to_string();
        assert!(err.contains("not valid counters"), "{err}");
    }

    /// Issue 27's standing property for `counters.json` (one record, written atomically): cut at
    /// every offset, or zeroed as a crash before the data reached the disk can leave it, it is an
    /// error naming the file and where it stops making sense — never no counters or defaults.
    #[test]
    fn a_cut_or_zeroed_counters_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = RunCounters::default();
        for key in ["redo", "os"] {
            c.put(CounterSection {
                key: key.into(),
                title: format!("{key} counters"),
                final_counts: true,
                counters: vec![
                    Counter::new("n", "n", CounterValue::count(12), ""),
                    Counter::new("rate", "rate", CounterValue::float(Some(1.5)), "MB/s"),
                ],
                tables: vec![],
                notes: vec!["a note".into()],
            });
        }
        c.write(dir.path()).unwrap();
        let path = dir.path().join(COUNTERS_FILE);
        let bytes = std::fs::read(&path).unwrap();
        let zeros = vec![0u8; bytes.len()];
        let cuts = (0..bytes.len()).map(|cut| &bytes[..cut]);
        for data in cuts.chain([&zeros[..]]) {
            std::fs::write(&path, data).unwrap();
            let whole = bytes[data.len()..].iter().all(u8::is_ascii_whitespace) && data != zeros;
            match RunCounters::read(dir.path()) {
                Ok(back) => assert!(
                    whole && back == c,
                    "cut at {}: read as {back:?}",
                    data.len()
                ),
                Err(e) => {
                    let e = e.to_string();
                    assert!(!whole, "cut at {}: {e}", data.len());
                    assert!(e.contains(&path.display().to_string()), "{e}");
                    assert!(
                        e.contains("not valid counters") && e.contains("column"),
                        "{e}"
                    );
                }
            }
        }
    }
}
