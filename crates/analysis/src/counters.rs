//! Run-level counters for people and programs: every section of `counters.json` printed the same
//! way whoever wrote it (text and JSON of one run; run B against run A for `compare`).

use std::collections::BTreeMap;

use serde::Serialize;

use dbscope_core::{Column, CounterSection, CounterTable, CounterValue};

use crate::text::{
    change_text, column_width, one_line, push_wrapped, push_wrapped_words, shorten_json,
    thousands_fixed, thousands_i, truncate_middle,
};

/// Top-level fields of the report's JSON that a section must not replace (`top` is added by
/// `dbscope report --top`); a section with one of these keys goes under `counters_<key>`.
pub const RESERVED_KEYS: [&str; 8] = [
    "tpcc",
    "run",
    "incomplete",
    "settings",
    "measured",
    "read",
    "events",
    "top",
];

/// Decimals of a measurement when its source gave none.
const DEFAULT_DECIMALS: u8 = 2;

/// Longest cell of a counter table, in characters (longer ones are shortened in the middle).
const MAX_CELL: usize = 40;

/// The key a section has in a report's JSON: its own, or `counters_<key>` when that is taken.
pub fn json_key(key: &str) -> String {
    if RESERVED_KEYS.contains(&key) {
        format!("counters_{key}")
    } else {
        key.to_string()
    }
}

/// Every section as its [`CounterSection::to_json`] object under its [`json_key`].
pub fn sections_json(sections: &[CounterSection]) -> BTreeMap<String, serde_json::Value> {
    sections
        .iter()
        .map(|s| (json_key(&s.key), s.to_json()))
        .collect()
}

/// A value as text: counts with thousands separators, measurements with `decimals` (default 2),
/// `-` when not known.
pub fn value_text(v: &CounterValue, decimals: Option<u8>) -> String {
    match v {
        CounterValue::None => "-".into(),
        CounterValue::Int(i) => thousands_i(*i),
        CounterValue::Float(f) => {
            let d = decimals.unwrap_or(DEFAULT_DECIMALS) as usize;
            if *f < 0.0 {
                format!("-{}", thousands_fixed(-f, d))
            } else {
                thousands_fixed(*f, d)
            }
        }
        CounterValue::Bool(b) => if *b { "yes" } else { "no" }.into(),
        CounterValue::Text(t) => one_line(t),
    }
}

/// True when the label already says the unit (`rows/s` with unit `/s`): it is not repeated.
fn says_unit(label: &str, unit: &str) -> bool {
    unit.is_empty() || label.trim_end().ends_with(unit.trim())
}

/// `label (unit)`, or the label alone for plain counts and labels that say their unit (issue 34:
/// `rows/s (/s)`).
pub fn heading(label: &str, unit: &str) -> String {
    if says_unit(label, unit) {
        one_line(label)
    } else {
        format!("{} ({})", one_line(label), one_line(unit))
    }
}

/// The line printed under a section whose counters are not final.
pub const SNAPSHOT_NOTE: &str = "counters are a snapshot taken while the run was going";

/// Appends a section as text: a blank line, its title, its counters as `label value unit`
/// wrapped, each table as aligned columns under a heading line, its notes, and a line saying
/// when the counters are a snapshot.
pub fn push_text(out: &mut String, s: &CounterSection) {
    out.push('\n');
    let title = if s.title.is_empty() { &s.key } else { &s.title };
    out.push_str(&one_line(title));
    out.push('\n');
    let items: Vec<String> = s
        .counters
        .iter()
        .map(|c| {
            let v = value_text(&c.value, c.decimals);
            if says_unit(&c.label, &c.unit) || c.value == CounterValue::None {
                format!("{} {v}", one_line(&c.label))
            } else {
                format!("{} {v} {}", one_line(&c.label), one_line(&c.unit))
            }
        })
        .collect();
    if !items.is_empty() {
        push_wrapped(out, "   ", &items, "   ");
    }
    for t in &s.tables {
        push_table(out, t);
    }
    for n in &s.notes {
        push_wrapped_words(out, "   ", n);
    }
    if !s.final_counts {
        out.push_str(&format!("   {SNAPSHOT_NOTE}\n"));
    }
}

/// True when a column holds numbers (and nothing but numbers or unknowns): it is right-aligned.
fn numeric(rows: &[Vec<CounterValue>], i: usize) -> bool {
    let mut any = false;
    for r in rows {
        match r.get(i) {
            Some(CounterValue::Int(_)) | Some(CounterValue::Float(_)) => any = true,
            Some(CounterValue::None) | None => {}
            Some(_) => return false,
        }
    }
    any
}

/// Appends a table: its title, a heading line, then one aligned line per row.
fn push_table(out: &mut String, t: &CounterTable) {
    // No rows (a query with no database source has no scan partitions): its title says so,
    // rather than a heading over nothing.
    if t.rows.is_empty() {
        if !t.title.is_empty() {
            out.push_str(&format!("   {}: none\n", one_line(&t.title)));
        }
        return;
    }
    if !t.title.is_empty() {
        out.push_str(&format!("   {}\n", one_line(&t.title)));
    }
    // A JSON value (replay's divergence examples) is shortened inside its strings and stays
    // JSON (issue 34: it was cut mid-syntax); anything else in the middle.
    let cell =
        |s: String| shorten_json(&s, MAX_CELL).unwrap_or_else(|| truncate_middle(&s, MAX_CELL));
    let lines: Vec<Vec<String>> = std::iter::once(
        t.columns
            .iter()
            .map(|c: &Column| cell(heading(&c.label, &c.unit)))
            .collect(),
    )
    .chain(t.rows.iter().map(|r| {
        t.columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                cell(value_text(
                    r.get(i).unwrap_or(&CounterValue::None),
                    c.decimals,
                ))
            })
            .collect()
    }))
    .collect();
    let widths: Vec<usize> = (0..t.columns.len())
        .map(|i| column_width(lines.iter().map(|l| l[i].as_str()), 0))
        .collect();
    let right: Vec<bool> = (0..t.columns.len()).map(|i| numeric(&t.rows, i)).collect();
    for l in &lines {
        let cells: Vec<String> = l
            .iter()
            .zip(&widths)
            .zip(&right)
            .map(|((c, &w), &r)| {
                if r {
                    format!("{c:>w$}")
                } else {
                    format!("{c:<w$}")
                }
            })
            .collect();
        let line = format!("   {}", cells.join("   "));
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// The numeric counters of one section that both runs have, side by side.
#[derive(Clone, Debug, Serialize)]
pub struct SectionComparison {
    /// The section's key.
    pub key: String,
    /// Its title (A's).
    pub title: String,
    /// B's title when it differs from A's (it can carry a setting, e.g. the block size).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title_b: Option<String>,
    /// Whether A's and B's counters are final (false: a snapshot taken while the run was going).
    pub final_counts: [bool; 2],
    /// One entry per numeric counter, in A's order, then B's.
    pub counters: Vec<CounterChange>,
    /// The tables both runs have (same key): each row's numeric cells side by side.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tables: Vec<TableComparison>,
}

/// A table both compared runs have: per row (matched by its first cell, e.g. a destination's
/// name) and numeric column, A, B and the change.
#[derive(Clone, Debug, Serialize)]
pub struct TableComparison {
    /// The table's key.
    pub key: String,
    /// Its title (A's).
    pub title: String,
    /// What its rows are (the first column's label, e.g. `destination`).
    pub rows: String,
    /// One entry per row and numeric column: key `row.column`, label `row column`; rows in A's
    /// order, then B's own.
    pub cells: Vec<CounterChange>,
}

/// One counter in A and in B.
#[derive(Clone, Debug, Serialize)]
pub struct CounterChange {
    /// Key for machines.
    pub key: String,
    /// Label for people.
    pub label: String,
    /// Unit, empty for plain counts.
    pub unit: String,
    /// Decimals to print it with (the source's, default 2).
    #[serde(skip)]
    pub decimals: Option<u8>,
    /// A's value (`null`: A does not have it).
    pub a: CounterValue,
    /// B's value (`null`: B does not have it).
    pub b: CounterValue,
    /// B − A, when both are numbers (a whole number when both are).
    pub diff: CounterValue,
    /// 100 · (B − A) / |A|, when both are numbers and A is not 0.
    pub pct: Option<f64>,
}

impl CounterChange {
    /// The change as printed: `+25.0%`, `−100.0%`, `0 → 0` or `new` (from a value printed as
    /// zero), `-`.
    pub fn change_text(&self) -> String {
        change_text(
            &value_text(&self.a, self.decimals),
            &value_text(&self.b, self.decimals),
            self.pct,
            |p| pct_text(Some(p)),
        )
    }
}

fn number(v: &CounterValue) -> Option<f64> {
    match v {
        CounterValue::Int(i) => Some(*i as f64),
        CounterValue::Float(f) => Some(*f),
        _ => None,
    }
}

/// The sections both runs have (same key), in A's order, with their numeric counters side by side.
pub fn compare_sections(a: &[CounterSection], b: &[CounterSection]) -> Vec<SectionComparison> {
    let mut out = Vec::new();
    for sa in a {
        let Some(sb) = b.iter().find(|s| s.key == sa.key) else {
            continue;
        };
        let mut counters = Vec::new();
        let mut keys: Vec<&str> = sa.counters.iter().map(|c| c.key.as_str()).collect();
        for c in &sb.counters {
            if !keys.contains(&c.key.as_str()) {
                keys.push(&c.key);
            }
        }
        for key in keys {
            let ca = sa.counters.iter().find(|c| c.key == key);
            let cb = sb.counters.iter().find(|c| c.key == key);
            let value =
                |c: Option<&dbscope_core::Counter>| c.map(|c| c.value.clone()).unwrap_or_default();
            let Some(first) = ca.or(cb) else { continue };
            counters.extend(change(
                key,
                &first.label,
                &first.unit,
                first.decimals,
                value(ca),
                value(cb),
            ));
        }
        let tables: Vec<TableComparison> = sa
            .tables
            .iter()
            .filter_map(|ta| compare_table(ta, sb.tables.iter().find(|t| t.key == ta.key)?))
            .collect();
        if counters.is_empty() && tables.is_empty() {
            continue;
        }
        let title = |s: &CounterSection| {
            if s.title.is_empty() {
                s.key.clone()
            } else {
                s.title.clone()
            }
        };
        out.push(SectionComparison {
            key: sa.key.clone(),
            title: title(sa),
            title_b: (title(sb) != title(sa)).then(|| title(sb)),
            final_counts: [sa.final_counts, sb.final_counts],
            counters,
            tables,
        });
    }
    out
}

/// One numeric value in A and B with its difference and change; `None` when neither is a number.
fn change(
    key: &str,
    label: &str,
    unit: &str,
    decimals: Option<u8>,
    va: CounterValue,
    vb: CounterValue,
) -> Option<CounterChange> {
    let (na, nb) = (number(&va), number(&vb));
    if na.is_none() && nb.is_none() {
        return None;
    }
    let diff = match (&va, &vb) {
        (CounterValue::Int(x), CounterValue::Int(y)) => y
            .checked_sub(*x)
            .map_or(CounterValue::None, CounterValue::Int),
        _ => CounterValue::float(na.zip(nb).map(|(x, y)| y - x)),
    };
    let pct = na
        .zip(nb)
        .filter(|(x, _)| *x != 0.0)
        .map(|(x, y)| 100.0 * (y - x) / x.abs());
    Some(CounterChange {
        key: key.to_string(),
        label: label.to_string(),
        unit: unit.to_string(),
        decimals,
        a: va,
        b: vb,
        diff,
        pct,
    })
}

/// A row's name: its first cell when that is text, else its position from 1.
fn row_name(row: &[CounterValue], i: usize) -> String {
    match row.first() {
        Some(CounterValue::Text(t)) => t.clone(),
        _ => format!("#{}", i + 1),
    }
}

/// Two tables of the same key, cell by cell (rows matched by [`row_name`], columns by key);
/// `None` when no cell is numeric.
fn compare_table(ta: &CounterTable, tb: &CounterTable) -> Option<TableComparison> {
    let names_a: Vec<String> = ta
        .rows
        .iter()
        .enumerate()
        .map(|(i, r)| row_name(r, i))
        .collect();
    let names_b: Vec<String> = tb
        .rows
        .iter()
        .enumerate()
        .map(|(i, r)| row_name(r, i))
        .collect();
    let mut names: Vec<&String> = names_a.iter().collect();
    names.extend(names_b.iter().filter(|n| !names_a.contains(n)));
    let cell = |t: &CounterTable, names: &[String], row: &str, col: &str| -> CounterValue {
        let (Some(r), Some(c)) = (
            names.iter().position(|n| n == row),
            t.columns.iter().position(|c| c.key == col),
        ) else {
            return CounterValue::None;
        };
        t.rows[r].get(c).cloned().unwrap_or_default()
    };
    let mut cells = Vec::new();
    for row in names {
        for col in &ta.columns {
            cells.extend(change(
                &format!("{row}.{}", col.key),
                &format!("{row} {}", col.label),
                &col.unit,
                col.decimals,
                cell(ta, &names_a, row, &col.key),
                cell(tb, &names_b, row, &col.key),
            ));
        }
    }
    (!cells.is_empty()).then(|| TableComparison {
        key: ta.key.clone(),
        title: ta.title.clone(),
        rows: ta
            .columns
            .first()
            .map_or_else(String::new, |c| c.label.clone()),
        cells,
    })
}

/// B − A with an explicit sign (`+3.00`, `−1,200`), or `-` when not known.
pub fn signed_text(v: &CounterValue, decimals: Option<u8>) -> String {
    let t = match v {
        CounterValue::Int(i) => thousands_i(i.abs()),
        CounterValue::Float(f) => value_text(&CounterValue::Float(f.abs()), decimals),
        _ => return "-".into(),
    };
    let negative = match v {
        CounterValue::Int(i) => *i < 0,
        CounterValue::Float(f) => *f < 0.0,
        _ => false,
    };
    if negative {
        format!("−{t}")
    } else {
        format!("+{t}")
    }
}

/// A percentage change with an explicit sign and one decimal (`+50.0%`), or `-`.
pub fn pct_text(pct: Option<f64>) -> String {
    match pct {
        Some(p) if p < 0.0 => format!("−{}%", thousands_fixed(-p, 1)),
        Some(p) => format!("+{}%", thousands_fixed(p, 1)),
        None => "-".into(),
    }
}

/// Appends a section comparison as text: a blank line, the title, then one aligned line per
/// counter with A, B, B − A and the change in percent.
pub fn push_comparison_text(out: &mut String, c: &SectionComparison) {
    out.push('\n');
    match &c.title_b {
        None => out.push_str(&format!("{}   B against A\n", one_line(&c.title))),
        Some(b) => out.push_str(&format!(
            "A: {}\nB: {}   B against A\n",
            one_line(&c.title),
            one_line(b)
        )),
    }
    push_change_rows(out, "counter", &c.counters);
    for t in &c.tables {
        out.push_str(&format!("   {}\n", one_line(&t.title)));
        push_change_rows(out, &t.rows, &t.cells);
    }
    match c.final_counts {
        [true, true] => {}
        [false, true] => out.push_str(&format!("   A's {SNAPSHOT_NOTE}\n")),
        [true, false] => out.push_str(&format!("   B's {SNAPSHOT_NOTE}\n")),
        [false, false] => out.push_str(&format!("   both runs' {SNAPSHOT_NOTE}\n")),
    }
}

/// Aligned lines of changes under a heading line (`first` heads the label column).
fn push_change_rows(out: &mut String, first: &str, changes: &[CounterChange]) {
    if changes.is_empty() {
        return;
    }
    let mut rows: Vec<[String; 5]> = vec![[
        first.into(),
        "A".into(),
        "B".into(),
        "B − A".into(),
        "change".into(),
    ]];
    for k in changes {
        rows.push([
            truncate_middle(&heading(&k.label, &k.unit), MAX_CELL),
            value_text(&k.a, k.decimals),
            value_text(&k.b, k.decimals),
            signed_text(&k.diff, k.decimals),
            k.change_text(),
        ]);
    }
    let w: Vec<usize> = (0..5)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        out.push_str(&format!(
            "   {:<w0$}   {:>w1$}   {:>w2$}   {:>w3$}   {:>w4$}\n",
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3],
            w4 = w[4]
        ));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use dbscope_core::Counter;

    /// A section as a redo log writer might write it.
    pub(crate) fn section(commits: i64, rate: f64, final_counts: bool) -> CounterSection {
        CounterSection {
            key: "redo".into(),
            title: "redo log writer".into(),
            final_counts,
            counters: vec![
                Counter::new("commits", "commits", CounterValue::Int(commits), ""),
                Counter::new(
                    "commits_per_write",
                    "commits per write",
                    CounterValue::Float(rate),
                    "",
                ),
                Counter::new("sync", "sync", CounterValue::Text("fdatasync".into()), ""),
                Counter::new("outlier_ms", "outlier", CounterValue::None, "ms"),
                Counter::new("mb", "rate", CounterValue::Float(1234.5), "MB/s").decimals(1),
            ],
            tables: vec![CounterTable {
                key: "destinations".into(),
                title: "per destination".into(),
                columns: vec![
                    Column::new("name", "name", ""),
                    Column::new("writes", "writes", ""),
                    Column::new("p99", "p99", "µs").decimals(1),
                ],
                rows: vec![
                    vec![
                        CounterValue::Text("fast".into()),
                        CounterValue::Int(1200),
                        CounterValue::Float(45.25),
                    ],
                    vec![
                        CounterValue::Text("slow-disk".into()),
                        CounterValue::Int(7),
                        CounterValue::None,
                    ],
                ],
            }],
            notes: vec!["FL_PREVENTED_OUTLIERS counts races the fast log won".into()],
        }
    }

    #[test]
    fn a_section_prints_as_text() {
        let mut out = String::new();
        push_text(&mut out, &section(1200, 3.0, false));
        let want = "
redo log writer
   commits 1,200   commits per write 3.00   sync fdatasync   outlier -   rate 1,234.5 MB/s
   per destination
   name        writes   p99 (µs)
   fast         1,200       45.2
   slow-disk        7          -
   FL_PREVENTED_OUTLIERS counts races the fast log won
   counters are a snapshot taken while the run was going
";
        assert_eq!(out, want);
        let mut fin = String::new();
        push_text(&mut fin, &section(1, 1.0, true));
        assert!(!fin.contains("snapshot"), "{fin}");
        // A table without rows: its title and "none", no heading over nothing.
        let mut empty = section(1, 1.0, true);
        empty.tables[0].rows.clear();
        let mut out = String::new();
        push_text(&mut out, &empty);
        assert!(out.contains("   per destination: none\n"), "{out}");
        assert!(!out.contains("writes"), "{out}");
    }

    #[test]
    fn issue_34_a_label_that_says_its_unit_does_not_repeat_it() {
        // As transfer and `tpch load` record their rate.
        let s = CounterSection {
            key: "transfer".into(),
            title: "transfer".into(),
            final_counts: true,
            counters: vec![
                Counter::new("rows_per_s", "rows/s", CounterValue::Float(1234.0), "/s").decimals(0),
            ],
            tables: vec![CounterTable {
                key: "t".into(),
                title: String::new(),
                columns: vec![
                    Column::new("rows_per_s", "rows/s", "/s").decimals(0),
                    Column::new("p99", "p99", "µs"),
                ],
                rows: vec![vec![CounterValue::Float(10.0), CounterValue::Float(1.0)]],
            }],
            notes: Vec::new(),
        };
        let mut out = String::new();
        push_text(&mut out, &s);
        assert!(out.contains("rows/s 1,234\n"), "{out}");
        assert!(out.contains("rows/s   p99 (µs)"), "{out}");
        assert!(!out.contains("(/s)") && !out.contains(" /s"), "{out}");
    }

    #[test]
    fn json_keys_avoid_the_reports_own_fields() {
        let mut s = section(5, 2.5, true);
        let mut events = s.clone();
        events.key = "events".into();
        let j = sections_json(&[s.clone(), events]);
        assert_eq!(j["redo"]["commits_per_write"], 2.5);
        assert_eq!(j["redo"]["destinations"][0]["writes"], 1200);
        assert_eq!(j["counters_events"]["commits"], 5);
        assert!(!j.contains_key("events"));
        s.key = "top".into();
        assert_eq!(json_key(&s.key), "counters_top");
    }

    #[test]
    fn sections_in_both_runs_compare_side_by_side() {
        let a = section(1200, 3.0, true);
        let mut b = section(1500, 4.5, true);
        b.counters
            .push(Counter::new("races", "races", CounterValue::Int(9), ""));
        // Issue 34: B's own title (its block size), and the table side by side.
        b.title = "redo log writer: 4096-byte blocks".into();
        b.tables[0].rows[0][1] = CounterValue::Int(300);
        b.tables[0].rows.swap(0, 1);
        b.tables[0].rows[0][2] = CounterValue::Float(80.0);
        let mut other = section(1, 1.0, true);
        other.key = "os".into();
        let c = compare_sections(&[a.clone(), other], &[b]);
        assert_eq!(c.len(), 1, "only sections both runs have");
        let keys: Vec<&str> = c[0].counters.iter().map(|k| k.key.as_str()).collect();
        assert_eq!(
            keys,
            ["commits", "commits_per_write", "mb", "races"],
            "numbers only, A's order then B's"
        );
        let commits = &c[0].counters[0];
        assert_eq!(commits.diff, CounterValue::Int(300));
        assert_eq!(commits.pct, Some(25.0));
        let rate = &c[0].counters[1];
        assert_eq!(rate.diff, CounterValue::Float(1.5));
        assert_eq!(rate.pct, Some(50.0));
        let races = &c[0].counters[3];
        assert_eq!(
            (&races.a, &races.diff, races.pct),
            (&CounterValue::None, &CounterValue::None, None)
        );
        let mut out = String::new();
        push_comparison_text(&mut out, &c[0]);
        let want = "
A: redo log writer
B: redo log writer: 4096-byte blocks   B against A
   counter                   A         B   B − A   change
   commits               1,200     1,500    +300   +25.0%
   commits per write      3.00      4.50   +1.50   +50.0%
   rate (MB/s)         1,234.5   1,234.5    +0.0    +0.0%
   races                     -         9       -        -
   per destination
   name                     A      B   B − A   change
   fast writes          1,200    300    −900   −75.0%
   fast p99 (µs)         45.2   45.2    +0.0    +0.0%
   slow-disk writes         7      7      +0    +0.0%
   slow-disk p99 (µs)       -   80.0       -        -
";
        assert_eq!(out, want);
        let j = serde_json::to_value(&c[0]).unwrap();
        assert_eq!(j["counters"][0]["a"], 1200);
        assert_eq!(j["counters"][0]["diff"], 300);
        assert_eq!(j["counters"][1]["pct"], 50.0);
        assert!(j["counters"][3]["a"].is_null());
        let mut snap = a.clone();
        snap.final_counts = false;
        let c = compare_sections(&[snap], &[a]);
        let mut out = String::new();
        push_comparison_text(&mut out, &c[0]);
        assert!(out.ends_with("   A's counters are a snapshot taken while the run was going\n"));
        assert_eq!(signed_text(&CounterValue::Float(-2.0), Some(1)), "−2.0");
        assert_eq!(value_text(&CounterValue::Float(-1234.5), None), "-1,234.50");
        assert_eq!(value_text(&CounterValue::Int(-1234), None), "-1,234");
        assert_eq!(value_text(&CounterValue::Bool(true), None), "yes");
        assert_eq!(pct_text(Some(-12.34)), "−12.3%");
    }

    #[test]
    fn issue_34_a_change_from_zero_is_not_a_percentage() {
        let counter = |v: CounterValue| {
            let mut s = section(1, 1.0, true);
            s.counters = vec![Counter::new("temp", "temp bytes", v, "")];
            s
        };
        let text = |a: CounterValue, b: CounterValue| {
            let c = compare_sections(&[counter(a)], &[counter(b)]);
            let mut out = String::new();
            push_comparison_text(&mut out, &c[0]);
            out.lines().nth(3).unwrap().to_string()
        };
        // 0.004 prints as 0.00: from 0 to 0, not −100.0%.
        let line = text(CounterValue::Float(0.004), CounterValue::Float(0.0));
        assert!(line.ends_with("   0 → 0"), "{line}");
        assert!(!line.contains('%'), "{line}");
        let line = text(CounterValue::Int(0), CounterValue::Int(0));
        assert!(line.ends_with("   0 → 0"), "{line}");
        let line = text(CounterValue::Int(0), CounterValue::Int(4096));
        assert!(line.ends_with("   new"), "{line}");
        let line = text(CounterValue::Int(10), CounterValue::Int(0));
        assert!(line.ends_with("−100.0%"), "{line}");
    }
}
