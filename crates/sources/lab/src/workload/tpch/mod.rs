//! The `tpch-q1` workload: each operation runs TPC-H Query 1 in SQL (the official text with DELTA
//! substituted) and checks its 40 values against the map/combine/reduce answer that `tpch load`
//! stored beside the data (and, at SF 1, against the official answer).
//!
//! The query is sent exactly as written and its rows come back as text ([`Session::query_rows`]);
//! each value is turned into an integer at its column's exact scale (flags as character codes, sums
//! at 2/2/4/6 decimals, averages × 10¹² rounded half away from zero) and compared.
//!
//! [`load`] creates and fills the tables and stores the reference answer; `reference` is the form
//! that answer is stored in.

pub mod load;
pub mod load_run;
mod reference;

use std::collections::BTreeMap;

use dbscope_core::NameId;
use dbscope_tpch::answer::{compare, official_q1_sf1, rounded, SF1_LINEITEM_ROWS};
use dbscope_tpch::decimal::{div_round, format_scaled};
use dbscope_tpch::q1::{Agg, Q1Answer, Q1Row, COLUMNS, DEFAULT_DELTA};

use crate::workload::work::{SessionWork, Workload};
use dbscope_core::Recorder;
use dbscope_db::{Dialect, Session, Target, TargetError, TargetResult};

use reference::{AVG_SCALE, REFERENCE_TABLE};

/// Q1's text for a dialect, DELTA substituted (TPC-H specification 2.4.1; SQLite has no interval
/// arithmetic, so its date is computed with `date()`).
pub fn q1_sql(dialect: Dialect, delta: u32) -> String {
    let cutoff = match dialect {
        Dialect::Sqlite => format!("date('1998-12-01', '-{delta} days')"),
        Dialect::Postgres | Dialect::Mysql | Dialect::Null => {
            format!("date '1998-12-01' - interval '{delta}' day")
        }
    };
    dbscope_tpch::q1::sql_with_cutoff(&cutoff)
}

/// MariaDB/MySQL give an AVG of DECIMAL only `div_precision_increment` (default 4) more digits
/// than the column, too few for Q1's averages to be compared at 10⁻¹²: the session asks for 30
/// (the most), so they come back exact to far more digits than compared.
fn exact_averages(sess: &mut dyn Session, dialect: Dialect) -> TargetResult<()> {
    if dialect == Dialect::Mysql {
        sess.batch("SET SESSION div_precision_increment = 30")?;
    }
    Ok(())
}

/// Decimal scale of each of Q1's ten columns in the compared form (flags and count: 0).
const SCALES: [u32; 10] = [0, 0, 2, 2, 4, 6, 12, 12, 12, 0];

/// A decimal's text (`-123.4567`, as PostgreSQL's NUMERIC or SQLite's REAL print it) as an integer
/// in units of 10^-`scale`, rounded half away from zero. `None` for anything else (exponents,
/// `NaN`, empty, more than 36 integer digits).
pub fn parse_scaled(text: &str, scale: u32) -> Option<i128> {
    let (neg, t) = match text.strip_prefix('-') {
        Some(t) => (true, t),
        None => (false, text),
    };
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || int.len() > 36 || !digits(int) || !digits(frac) {
        return None;
    }
    let mut v: i128 = int.parse().ok()?;
    let mut f = frac.bytes().map(|b| (b - b'0') as i128);
    for _ in 0..scale {
        v = v.checked_mul(10)?.checked_add(f.next().unwrap_or(0))?;
    }
    // The first dropped digit decides: ≥ 5 means the dropped part is at least one half.
    if f.next().is_some_and(|d| d >= 5) {
        v += 1;
    }
    Some(if neg { -v } else { v })
}

/// Q1's result rows as text (as [`Session::query_rows`] returns them) in the compared form: ten
/// integers per row, in [`COLUMNS`] order. `Err` names the row and column that is not a number.
pub(crate) fn values_from_rows(rows: &[Vec<Option<String>>]) -> Result<Vec<i128>, String> {
    let mut out = Vec::with_capacity(rows.len() * 10);
    for (r, row) in rows.iter().enumerate() {
        if row.len() != 10 {
            return Err(format!(
                "row {} has {} columns, Q1 has 10 ({})",
                r + 1,
                row.len(),
                COLUMNS.join(", ")
            ));
        }
        for (c, v) in row.iter().enumerate() {
            let text = v.as_deref().unwrap_or("NULL");
            let parsed = match c {
                0 | 1 => {
                    let mut chars = text.trim_end().chars();
                    match (chars.next(), chars.next(), v.is_some()) {
                        (Some(ch), None, true) => Some(ch as i128),
                        _ => None,
                    }
                }
                _ => v.as_deref().and_then(|t| parse_scaled(t, SCALES[c])),
            };
            out.push(parsed.ok_or_else(|| {
                format!(
                    "row {} {}: expected {}, got {text:?}",
                    r + 1,
                    COLUMNS[c],
                    if c < 2 {
                        "one character"
                    } else {
                        "a decimal number"
                    }
                )
            })?);
        }
    }
    Ok(out)
}

/// How closely a database's values must match the exact answer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Sums: allowed relative difference (0: digit for digit).
    pub sums_rel: f64,
    /// Averages (in units of 10⁻¹²): allowed relative difference, at least 2 units.
    pub avgs_rel: f64,
}

/// PostgreSQL computes DECIMAL sums exactly and averages as NUMERIC with at least 16 significant
/// digits; SQLite stores DECIMAL as a double, so its sums and averages are binary floating point.
pub fn tolerance(dialect: Dialect) -> Tolerance {
    match dialect {
        Dialect::Postgres | Dialect::Mysql | Dialect::Null => Tolerance {
            sums_rel: 0.0,
            avgs_rel: 1e-15,
        },
        Dialect::Sqlite => Tolerance {
            sums_rel: 1e-12,
            avgs_rel: 1e-12,
        },
    }
}

/// Compares the database's values (as [`values_from_rows`] makes them) with the reference rows;
/// `Err` shows both.
pub(crate) fn check_values(
    got: &[i128],
    reference: &[[i128; 10]],
    tol: Tolerance,
) -> Result<(), String> {
    let render = |vals: &mut dyn Iterator<Item = i128>| -> String {
        let v: Vec<i128> = vals.collect();
        v.chunks(10)
            .map(|r| {
                r.iter()
                    .enumerate()
                    .map(|(i, x)| match i {
                        0 | 1 => char::from_u32(*x as u32).unwrap_or('?').to_string(),
                        2 | 3 => format_scaled(*x, 2),
                        4 => format_scaled(*x, 4),
                        5 => format_scaled(*x, 6),
                        6..=8 => format_scaled(*x, 12),
                        _ => x.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join("|")
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let mut diffs = Vec::new();
    if got.len() != reference.len() * 10 {
        diffs.push(format!(
            "{} values ({} rows), expected {} rows",
            got.len(),
            got.len() / 10,
            reference.len()
        ));
    } else {
        for (r, exp) in reference.iter().enumerate() {
            for c in 0..10 {
                let g = got[r * 10 + c];
                let e = exp[c];
                let allowed = match c {
                    2..=5 => (e.abs() as f64 * tol.sums_rel) as i128,
                    6..=8 => ((e.abs() as f64 * tol.avgs_rel) as i128).max(2),
                    _ => 0,
                };
                if (g - e).abs() > allowed {
                    diffs.push(format!("row {} {}", r + 1, COLUMNS[c]));
                }
            }
        }
    }
    if diffs.is_empty() {
        return Ok(());
    }
    Err(format!(
        "Q1 in SQL differs from the map/combine/reduce answer ({}). database: {}. map/combine/reduce: {}",
        diffs.join(", "),
        render(&mut got.iter().copied()),
        render(&mut reference.iter().flatten().copied())
    ))
}

/// The `tpch-q1` workload.
#[derive(Clone, Debug)]
pub struct TpchQ1Workload {
    dialect: Dialect,
    delta: u32,
    /// Q1's rows as the database returned them in the checked run of `setup`, for the run's
    /// `answer` section (issue 34: the run never showed them).
    answer: std::sync::Arc<std::sync::Mutex<Vec<Vec<Option<String>>>>>,
}

impl TpchQ1Workload {
    /// The name runs record ([`Workload::name`]).
    pub const NAME: &'static str = "tpch-q1";
    /// The headline event ([`Workload::headline_event`]).
    pub const HEADLINE: &'static str = "q1";

    /// Q1 with DELTA = `delta` days on a target of `dialect`.
    pub fn new(dialect: Dialect, delta: u32) -> Self {
        TpchQ1Workload {
            dialect,
            delta,
            answer: Default::default(),
        }
    }

    /// Reads the stored reference answer (rows of 10 values).
    fn reference(&self, sess: &mut dyn Session) -> TargetResult<Vec<[i128; 10]>> {
        let v = sess
            .query_i64(&format!(
                "SELECT v FROM {REFERENCE_TABLE} WHERE delta_days = {} ORDER BY grp, col",
                self.delta
            ))
            .map_err(|e| {
                TargetError::config(format!(
                    "no map/combine/reduce reference answer in the database ({}); load the data with `dbscope tpch load DIR --target …` first",
                    e.message
                ))
            })?;
        if v.is_empty() || v.len() % 10 != 0 {
            let stored = sess
                .query_i64(&format!(
                    "SELECT DISTINCT delta_days FROM {REFERENCE_TABLE} ORDER BY delta_days"
                ))
                .unwrap_or_default();
            let stored: Vec<String> = stored.iter().map(i64::to_string).collect();
            return Err(TargetError::config(format!(
                "no map/combine/reduce reference answer for DELTA {} in {REFERENCE_TABLE} (it holds DELTA {}); store it with `dbscope tpch load DIR --target … --delta {}` (repeat --delta to keep several)",
                self.delta,
                if stored.is_empty() { "none".to_string() } else { stored.join(", ") },
                self.delta
            )));
        }
        Ok(v.chunks(10)
            .map(|c| {
                let mut r = [0i128; 10];
                for (d, s) in r.iter_mut().zip(c) {
                    *d = *s as i128;
                }
                r
            })
            .collect())
    }
}

/// Turns reference values back into an answer (for the official check).
fn answer_from_reference(reference: &[[i128; 10]], sums_disc: &[i128]) -> Q1Answer {
    Q1Answer {
        rows: reference
            .iter()
            .zip(sums_disc)
            .map(|(r, disc)| Q1Row {
                returnflag: char::from_u32(r[0] as u32).unwrap_or('?'),
                linestatus: char::from_u32(r[1] as u32).unwrap_or('?'),
                agg: Agg {
                    sum_qty: r[2] as i64,
                    sum_base_price: r[3] as i64,
                    sum_disc_price: r[4],
                    sum_charge: r[5],
                    sum_disc: *disc as i64,
                    count: r[9] as u64,
                },
            })
            .collect(),
    }
}

impl Workload for TpchQ1Workload {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn params(&self) -> BTreeMap<String, serde_json::Value> {
        BTreeMap::from([
            ("delta_days".to_string(), self.delta.into()),
            ("query".to_string(), q1_sql(self.dialect, self.delta).into()),
        ])
    }

    fn tables(&self) -> Vec<String> {
        vec!["lineitem".into()]
    }
    fn headline_event(&self) -> &'static str {
        Self::HEADLINE
    }

    /// Checks the data is loaded and Q1's rows match the reference (and the official answer at SF 1),
    /// before anything is timed: a mismatch stops here with both answers.
    fn setup(
        &self,
        target: &dyn Target,
        _sessions: u32,
        _stop: &dbscope_core::StopSignal,
    ) -> TargetResult<()> {
        if self.dialect == Dialect::Null {
            return Err(TargetError::config(
                "tpch-q1 needs the TPC-H tables: load them with `dbscope tpch load DIR --target sqlite:PATH|postgres://…` and run against that target",
            ));
        }
        let mut s = target.connect()?;
        exact_averages(s.as_mut(), self.dialect)?;
        let reference = self.reference(s.as_mut())?;
        let rows = s.query_rows(&q1_sql(self.dialect, self.delta), &[])?;
        values_from_rows(&rows)
            .and_then(|got| check_values(&got, &reference, tolerance(self.dialect)))
            .map_err(|m| TargetError {
                class: "tpch:mismatch".into(),
                sqlstate: None,
                mysql_code: None,
                message: m,
                connection_lost: false,
            })?;
        *self
            .answer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = rows;
        let lines = s.query_i64("SELECT count(*) FROM lineitem")?;
        if self.delta == DEFAULT_DELTA && lines.first() == Some(&(SF1_LINEITEM_ROWS as i64)) {
            // avg_disc's sum is not stored; recover it from the exact average (count × avg).
            let disc: Vec<i128> = reference
                .iter()
                .map(|r| div_round(r[8] * r[9] * 100, AVG_SCALE))
                .collect();
            let answer = answer_from_reference(&reference, &disc);
            compare(&rounded(&answer), &official_q1_sf1()).map_err(|m| TargetError {
                class: "tpch:mismatch".into(),
                sqlstate: None,
                mysql_code: None,
                message: format!("SF 1 answer differs from the official TPC-H answer: {m}"),
                connection_lost: false,
            })?;
        }
        Ok(())
    }

    /// Q1's answer, checked before the run: the `answer` section, one row per group.
    fn counters(&self) -> Option<dbscope_core::CounterSection> {
        use dbscope_core::counters::{Column, CounterTable, CounterValue};
        let rows = self
            .answer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if rows.is_empty() {
            return None;
        }
        Some(dbscope_core::CounterSection {
            key: "answer".into(),
            title: format!(
                "Q1's answer (DELTA {} days; as the database returned it, checked against the \
                 map/combine/reduce answer)",
                self.delta
            ),
            final_counts: true,
            counters: Vec::new(),
            tables: vec![CounterTable {
                key: "rows".into(),
                title: String::new(),
                columns: COLUMNS.iter().map(|c| Column::new(c, c, "")).collect(),
                rows: rows
                    .into_iter()
                    .map(|r| {
                        r.into_iter()
                            .map(|v| v.map_or(CounterValue::None, CounterValue::Text))
                            .collect()
                    })
                    .collect(),
            }],
            notes: Vec::new(),
        })
    }

    fn session(&self, _session: u32, _seed: u64) -> Box<dyn SessionWork> {
        Box::new(Q1Session {
            sql: q1_sql(self.dialect, self.delta),
            tol: tolerance(self.dialect),
            workload: self.clone(),
            reference: Vec::new(),
            name: 0,
        })
    }
}

struct Q1Session {
    sql: String,
    tol: Tolerance,
    workload: TpchQ1Workload,
    reference: Vec<[i128; 10]>,
    name: NameId,
}

impl SessionWork for Q1Session {
    fn prepare(&mut self, sess: &mut dyn Session, rec: &Recorder) -> TargetResult<()> {
        exact_averages(sess, self.workload.dialect)?;
        self.reference = self.workload.reference(sess)?;
        self.name = rec.name("q1");
        Ok(())
    }

    fn step(&mut self, sess: &mut dyn Session, rec: &mut Recorder) -> Result<(), TargetError> {
        let t0 = rec.now();
        let query = || sess.query_rows(&self.sql, &[]);
        let checked = |rows: &Vec<Vec<Option<String>>>| {
            values_from_rows(rows)
                .and_then(|values| check_values(&values, &self.reference, self.tol))
                .map(|()| rows.len() as u64)
                .map_err(|m| TargetError {
                    class: "tpch:mismatch".into(),
                    sqlstate: None,
                    mysql_code: None,
                    message: m,
                    connection_lost: false,
                })
        };
        super::work::timed(rec, self.name, t0, query, checked)
            .0
            .map(|_| ())
    }

    fn statements(&self) -> Vec<super::Statement> {
        vec![super::Statement {
            event: "q1".into(),
            sql: self.sql.clone(),
            params: Vec::new(),
        }]
    }
}

#[cfg(test)]
mod tests {
    use super::reference::reference_values;
    use super::*;

    #[test]
    fn query_text_per_dialect() {
        let sql = q1_sql(Dialect::Postgres, 90);
        assert!(sql.contains("l_shipdate <= date '1998-12-01' - interval '90' day"));
        let lite = q1_sql(Dialect::Sqlite, 112);
        assert!(lite.contains("date('1998-12-01', '-112 days')"));
    }

    #[test]
    fn decimals_parse_at_their_scale() {
        assert_eq!(
            parse_scaled("55909065222.827692", 6),
            Some(55909065222827692)
        );
        assert_eq!(parse_scaled("37734107.00", 2), Some(3773410700));
        assert_eq!(parse_scaled("37734107", 2), Some(3773410700));
        // PostgreSQL's NUMERIC average: 20 decimals, rounded half away from zero to 12.
        assert_eq!(
            parse_scaled("25.52200585325733700000", 12),
            Some(25522005853257)
        );
        assert_eq!(
            parse_scaled("0.04998529583839761400", 12),
            Some(49985295838)
        );
        assert_eq!(parse_scaled("0.0000000000005", 12), Some(1));
        assert_eq!(parse_scaled("-0.0000000000005", 12), Some(-1));
        assert_eq!(parse_scaled("0.00000000000049", 12), Some(0));
        for bad in ["", "-", ".5", "1e5", "NaN", "1.2.3", "12a", " 1"] {
            assert_eq!(parse_scaled(bad, 2), None, "{bad}");
        }
    }

    #[test]
    fn text_rows_become_values_or_a_clear_error() {
        let row = |v: &[&str]| v.iter().map(|s| Some(s.to_string())).collect::<Vec<_>>();
        let rows = vec![row(&[
            "A",
            "F",
            "37734107.00",
            "56586554400.73",
            "53758257134.8700",
            "55909065222.827692",
            "25.5220058532573370",
            "38273.129734621672",
            "0.04998529583839761162",
            "1478493",
        ])];
        let v = values_from_rows(&rows).unwrap();
        assert_eq!(v[0], 'A' as i128);
        assert_eq!(v[5], 55909065222827692);
        assert_eq!(v[7], 38273129734621672);
        assert_eq!(v[9], 1478493);
        let mut bad = rows.clone();
        bad[0][4] = None;
        let e = values_from_rows(&bad).unwrap_err();
        assert!(
            e.contains("row 1 sum_disc_price: expected a decimal number, got \"NULL\""),
            "{e}"
        );
        bad[0].pop();
        assert!(values_from_rows(&bad).unwrap_err().contains("9 columns"));
    }

    #[test]
    fn values_compare_within_tolerance_and_show_both() {
        let row = Q1Row {
            returnflag: 'A',
            linestatus: 'F',
            agg: Agg {
                sum_qty: 3773410700,
                sum_base_price: 5658655440073,
                sum_disc_price: 537582571348700,
                sum_charge: 55909065222827692,
                sum_disc: 7390250,
                count: 1478493,
            },
        };
        let reference = vec![reference_values(&row)];
        let exact: Vec<i128> = reference[0].to_vec();
        assert!(check_values(&exact, &reference, tolerance(Dialect::Postgres)).is_ok());
        let mut off = exact.clone();
        off[5] += 1; // sum_charge off by 0.000001
        let err = check_values(&off, &reference, tolerance(Dialect::Postgres)).unwrap_err();
        assert!(err.contains("row 1 sum_charge"), "{err}");
        assert!(
            err.contains("55909065222.827693") && err.contains("55909065222.827692"),
            "{err}"
        );
        // SQLite's doubles: a relative error of 1e-14 is accepted.
        assert!(check_values(&off, &reference, tolerance(Dialect::Sqlite)).is_ok());
        assert!(check_values(&exact[..9], &reference, tolerance(Dialect::Sqlite)).is_err());
    }
}
