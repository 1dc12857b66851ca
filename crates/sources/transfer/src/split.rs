//! How `transfer` out cuts a table among its mappers: by physical block ranges (`ctid`, a TID
//! Range Scan per mapper on PostgreSQL ≥ 14, no scan to plan it), by ranges of an integer key
//! (Sqoop's `--split-by`: `min/max/count(*)` first), or not at all (one mapper).

use serde::{Deserialize, Serialize};

use crate::session::one;
use crate::Error;
use dbscope_pgwire::WireConn;

/// Which split a transfer out used (`transfer.json`'s `split`, the run's `transfer` counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SplitKind {
    /// One mapper: the whole table, no filter.
    Whole,
    /// Ranges of physical blocks: `ctid >= '(a,0)' AND ctid < '(b,0)'`.
    Ctid,
    /// Ranges of an integer key: `key BETWEEN lo AND hi`.
    Key,
}

impl SplitKind {
    /// The name recorded (`whole`, `ctid`, `key`).
    pub fn name(self) -> &'static str {
        match self {
            SplitKind::Whole => "whole",
            SplitKind::Ctid => "ctid",
            SplitKind::Key => "key",
        }
    }
}

/// One mapper's share of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    /// The condition the mapper's `SELECT * FROM t WHERE …` filters by; `None` for the whole table.
    pub filter: Option<String>,
    /// The key range (inclusive), key split.
    pub key_range: Option<(i64, i64)>,
    /// The block range `[from, to)`, `to = None` for the last (open-ended), ctid split.
    pub block_range: Option<(u64, Option<u64>)>,
}

impl Part {
    /// The rows it holds, as its mapper's errors and the run's per-mapper table name them.
    pub fn describe(&self) -> &str {
        self.filter.as_deref().unwrap_or("the whole table")
    }

    /// Its mapper's query: `SELECT * FROM table WHERE filter`.
    pub fn select_all(&self, table: &str) -> String {
        match &self.filter {
            Some(f) => format!("SELECT * FROM {table} WHERE {f}"),
            None => format!("SELECT * FROM {table}"),
        }
    }
}

/// The split a transfer out runs with.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Which split.
    pub kind: SplitKind,
    /// The key column (key split, or a `--key` checked for one mapper); empty otherwise.
    pub key: String,
    /// One part per mapper.
    pub parts: Vec<Part>,
    /// `count(*)` of the table when the key split read it (to check the ranges covered it).
    pub count: Option<u64>,
    /// Why this split and not another (printed and recorded).
    pub why: String,
}

/// PostgreSQL 14 brought the TID Range Scan; before it a `ctid` range is a sequential scan.
pub const TID_RANGE_SCAN_SINCE: u32 = 140_000;

/// Cuts `blocks` blocks into at most `n` ranges of (nearly) equal block counts, the last one
/// open-ended (`ctid >= '(b,0)'`) so rows on blocks added after the size was read are not lost;
/// an empty relation is one open range from block 0.
pub fn ctid_ranges(blocks: u64, n: u32) -> Vec<(u64, Option<u64>)> {
    let k = (n as u64).min(blocks).max(1);
    (0..k)
        .map(|i| {
            let from = blocks * i / k;
            let to = (i + 1 < k).then(|| blocks * (i + 1) / k);
            (from, to)
        })
        .collect()
}

/// The condition selecting the rows on blocks `[from, to)`, answered by a TID Range Scan.
pub fn ctid_filter(from: u64, to: Option<u64>) -> String {
    match to {
        Some(to) => format!("ctid >= '({from},0)'::tid AND ctid < '({to},0)'::tid"),
        None => format!("ctid >= '({from},0)'::tid"),
    }
}

/// Splits `lo..=hi` into `n` ranges of (nearly) equal width, as Sqoop splits an integer column;
/// one `None` (the whole table) when the table is empty.
pub fn split_ranges(lo: Option<i64>, hi: Option<i64>, n: u32) -> Vec<Option<(i64, i64)>> {
    let (Some(lo), Some(hi)) = (lo, hi) else {
        return vec![None];
    };
    let span = hi as i128 - lo as i128 + 1;
    let n = (n as i128).min(span).max(1);
    (0..n)
        .map(|i| {
            let a = lo as i128 + span * i / n;
            let b = lo as i128 + span * (i + 1) / n - 1;
            Some((a as i64, b as i64))
        })
        .collect()
}

/// Why a table cannot be split by blocks on this server, if it cannot: `None` when it can.
pub fn no_ctid_split(server_version_num: u32, relkind: &str) -> Option<String> {
    if server_version_num < TID_RANGE_SCAN_SINCE {
        let v = server_version_num;
        let major = match v >= 100_000 {
            true => format!("{}", v / 10_000),
            false => format!("{}.{}", v / 10_000, v / 100 % 100),
        };
        return Some(format!(
            "PostgreSQL {major} has no TID Range Scan (14 and later have): a ctid range would scan the whole table per mapper"
        ));
    }
    match relkind {
        "r" | "m" => None,
        "p" => Some(
            "a partitioned table has no blocks of its own (each partition has its ctids)".into(),
        ),
        k => Some(format!("relkind {k:?} is not a table with blocks")),
    }
}

fn plain_column(key: &str) -> Result<(), Error> {
    if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(Error::Config(format!("--key {key:?}: a plain column name")));
    }
    Ok(())
}

/// Decides the split inside the coordinator's repeatable-read transaction (so the block count is
/// read after its snapshot was taken): the whole table for one mapper; ranges of `--key` when
/// given; otherwise block ranges when the server and the relation allow, else the primary key.
pub fn plan(
    coord: &mut WireConn,
    table: &str,
    mappers: u32,
    key: Option<&str>,
) -> Result<Plan, Error> {
    let cfgerr = |e| Error::database(table, e);
    if mappers == 1 {
        // With --key too: one range is the whole table whatever the key holds, so the key is
        // only checked in the catalog (an integer column), never scanned (a full pass).
        if let Some(key) = key {
            plain_column(key)?;
            let row = one(
                coord,
                &format!(
                    "SELECT atttypid::regtype::text FROM pg_attribute WHERE attrelid = \
                     '{table}'::regclass AND attname = '{key}' AND attnum > 0 AND NOT attisdropped"
                ),
            )
            .map_err(cfgerr)?;
            let why = match row.first().cloned().flatten() {
                None => Some(format!("{table} has no column {key}")),
                Some(t) if !["smallint", "integer", "bigint"].contains(&t.as_str()) => {
                    Some(format!("{key} is {t}"))
                }
                Some(_) => None,
            };
            if let Some(why) = why {
                return Err(Error::Table(format!(
                    "{table} split by {key} (an integer column): {why}"
                )));
            }
        }
        return Ok(Plan {
            kind: SplitKind::Whole,
            key: key.unwrap_or_default().to_string(),
            parts: vec![Part {
                filter: None,
                key_range: None,
                block_range: None,
            }],
            count: None,
            why: "one mapper copies the whole table".into(),
        });
    }
    let mut fallback = None;
    if key.is_none() {
        let row = one(
            coord,
            &format!(
                "SELECT current_setting('server_version_num')::int, c.relkind::text, \
                 pg_relation_size(c.oid) / current_setting('block_size')::bigint \
                 FROM pg_class c WHERE c.oid = '{table}'::regclass"
            ),
        )
        .map_err(cfgerr)?;
        let get = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        let version: u32 = get(0).parse().unwrap_or(0);
        let blocks: u64 = get(2).parse().unwrap_or(0);
        match no_ctid_split(version, &get(1)) {
            None => {
                let parts: Vec<Part> = ctid_ranges(blocks, mappers)
                    .into_iter()
                    .map(|(from, to)| Part {
                        filter: Some(ctid_filter(from, to)),
                        key_range: None,
                        block_range: Some((from, to)),
                    })
                    .collect();
                let why = format!(
                    "no --key: {blocks} blocks of {table} cut into {} block ranges (TID Range Scans, \
                     no scan to plan them; the last range is open-ended)",
                    parts.len()
                );
                return Ok(Plan {
                    kind: SplitKind::Ctid,
                    key: String::new(),
                    parts,
                    count: None,
                    why,
                });
            }
            Some(why) => fallback = Some(why),
        }
    }
    let key = match key {
        Some(k) => k.to_string(),
        None => {
            let sql = format!(
                "SELECT a.attname, i.indnatts FROM pg_index i JOIN pg_attribute a \
                 ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] \
                 WHERE i.indrelid = '{table}'::regclass AND i.indisprimary"
            );
            let row = one(coord, &sql).map_err(cfgerr)?;
            match row.first().cloned().flatten() {
                Some(k) => k,
                None => {
                    return Err(Error::Table(format!(
                    "{table} has no primary key to split by{}: name an integer column with --key",
                    fallback
                        .map(|w| format!(" (not by blocks: {w})"))
                        .unwrap_or_default()
                )))
                }
            }
        }
    };
    plain_column(&key)?;
    let row = one(
        coord,
        &format!("SELECT min({key})::bigint, max({key})::bigint, count(*) FROM {table}"),
    )
    .map_err(|e| Error::database(&format!("{table} split by {key} (an integer column)"), e))?;
    let num = |i: usize| {
        row.get(i)
            .cloned()
            .flatten()
            .and_then(|v| v.parse::<i64>().ok())
    };
    let ranges = split_ranges(num(0), num(1), mappers);
    let single = ranges.len() == 1;
    let parts = ranges
        .into_iter()
        .map(|r| Part {
            // One range (an empty table) is the whole snapshot: no filter per row.
            filter: r
                .filter(|_| !single)
                .map(|(a, b)| format!("{key} BETWEEN {a} AND {b}")),
            key_range: r,
            block_range: None,
        })
        .collect();
    let why = match fallback {
        Some(w) => format!("split by the primary key {key}, not by blocks: {w}"),
        None => format!("--key {key}: ranges of equal width between its min and max"),
    };
    Ok(Plan {
        kind: SplitKind::Key,
        key,
        parts,
        count: num(2).map(|c| c.max(0) as u64),
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_ranges_cover_every_block_once_and_end_open() {
        assert_eq!(ctid_ranges(0, 4), vec![(0, None)]);
        assert_eq!(
            ctid_ranges(3, 4),
            vec![(0, Some(1)), (1, Some(2)), (2, None)]
        );
        assert_eq!(ctid_ranges(10, 1), vec![(0, None)]);
        let r = ctid_ranges(8_000_003, 4);
        assert_eq!(r.len(), 4);
        assert_eq!(r[0].0, 0);
        assert_eq!(r[3].1, None);
        for w in r.windows(2) {
            assert_eq!(w[0].1, Some(w[1].0));
        }
        let sizes: Vec<u64> = r[..3].iter().map(|(a, b)| b.unwrap() - a).collect();
        assert!(
            sizes.iter().all(|&s| s == 2_000_000 || s == 2_000_001),
            "{sizes:?}"
        );
        assert_eq!(
            ctid_filter(5, Some(9)),
            "ctid >= '(5,0)'::tid AND ctid < '(9,0)'::tid"
        );
        assert_eq!(ctid_filter(9, None), "ctid >= '(9,0)'::tid");
    }

    #[test]
    fn ctid_split_needs_postgres_14_and_a_plain_table() {
        assert!(no_ctid_split(140_000, "r").is_none());
        assert!(no_ctid_split(150_018, "m").is_none());
        let why = no_ctid_split(130_011, "r").unwrap();
        assert!(
            why.contains("PostgreSQL 13 ") && why.contains("TID Range Scan"),
            "{why}"
        );
        assert!(no_ctid_split(90_624, "r")
            .unwrap()
            .contains("PostgreSQL 9.6 "));
        assert!(no_ctid_split(160_000, "p").unwrap().contains("partitioned"));
        assert!(no_ctid_split(160_000, "v").is_some());
    }

    #[test]
    fn ranges_cover_the_keys_once() {
        assert_eq!(split_ranges(None, None, 4), vec![None]);
        assert_eq!(
            split_ranges(Some(1), Some(10), 3),
            vec![Some((1, 3)), Some((4, 6)), Some((7, 10))]
        );
        assert_eq!(
            split_ranges(Some(5), Some(6), 4),
            vec![Some((5, 5)), Some((6, 6))]
        );
        let r = split_ranges(Some(i64::MIN), Some(i64::MAX), 4);
        assert_eq!(r[0].unwrap().0, i64::MIN);
        assert_eq!(r[3].unwrap().1, i64::MAX);
        for w in r.windows(2) {
            assert_eq!(w[0].unwrap().1 + 1, w[1].unwrap().0);
        }
    }
}
