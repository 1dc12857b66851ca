//! The cluster's Q1 result as exact scaled integers, and its two checks: against dbscope's exact
//! local job (every sum and count to the last digit; averages at DataFusion's scale, which
//! truncates) and against the official answer (two decimals).
//!
//! DataFusion's decimal rules: `sum` of DECIMAL(p,s) is DECIMAL(p+10,s), exact; products add
//! scales (price × (1 − disc) has 4 decimals, × (1 + tax) 6), exact; `avg` of DECIMAL(15,2) is
//! DECIMAL(19,6) computed as `sum × 10⁴ / count` in integers, so it is *truncated* toward zero at
//! the 6th decimal, where dbscope's local job prints the nearest double of the exact quotient.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Int64Type};
use datafusion::arrow::record_batch::RecordBatch;
use dbscope_tpch::answer::RoundedRow;
use dbscope_tpch::decimal::{format_scaled, round_scaled};
use dbscope_tpch::q1::{Q1Answer, COLUMNS};

use crate::error::ClusterError;

/// A decimal as DataFusion returned it: `value / 10^scale`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scaled {
    /// The unscaled integer.
    pub value: i128,
    /// Fractional digits.
    pub scale: u32,
}

impl std::fmt::Display for Scaled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format_scaled(self.value, self.scale))
    }
}

/// One row of the cluster's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterRow {
    /// l_returnflag.
    pub returnflag: String,
    /// l_linestatus.
    pub linestatus: String,
    /// sum_qty, sum_base_price, sum_disc_price, sum_charge.
    pub sums: [Scaled; 4],
    /// avg_qty, avg_price, avg_disc.
    pub avgs: [Scaled; 3],
    /// count_order.
    pub count: i64,
}

/// The cluster's answer, in the order it came (Q1 sorts by the two flags).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterAnswer {
    /// Rows.
    pub rows: Vec<ClusterRow>,
}

fn shape(msg: String) -> ClusterError {
    ClusterError::Shape(msg)
}

impl ClusterAnswer {
    /// Reads Q1's ten columns (two texts, seven DECIMAL128, one integer count) from the batches.
    pub fn from_batches(batches: &[RecordBatch]) -> Result<ClusterAnswer, ClusterError> {
        let mut rows = Vec::new();
        for b in batches {
            if b.num_columns() != COLUMNS.len() {
                return Err(shape(format!(
                    "{} columns, expected {} ({})",
                    b.num_columns(),
                    COLUMNS.len(),
                    COLUMNS.join(", ")
                )));
            }
            let text = |i: usize| {
                cast(b.column(i), &DataType::Utf8)
                    .map_err(|e| shape(format!("column {}: {e}", COLUMNS[i])))
            };
            let flags = text(0)?;
            let statuses = text(1)?;
            let (flags, statuses) = (flags.as_string::<i32>(), statuses.as_string::<i32>());
            let decimal = |i: usize| match b.column(i).data_type() {
                DataType::Decimal128(_, s) if *s >= 0 => Ok((
                    b.column(i).as_primitive::<Decimal128Type>().clone(),
                    *s as u32,
                )),
                t => Err(shape(format!(
                    "column {} is {t}, expected a DECIMAL128",
                    COLUMNS[i]
                ))),
            };
            let decimals = (2..9).map(decimal).collect::<Result<Vec<_>, _>>()?;
            let count = cast(b.column(9), &DataType::Int64)
                .map_err(|e| shape(format!("column count_order: {e}")))?;
            let count = count.as_primitive::<Int64Type>();
            for r in 0..b.num_rows() {
                let null = (0..10).find(|&i| b.column(i).is_null(r));
                if let Some(i) = null {
                    return Err(shape(format!("row {}: {} is NULL", r + 1, COLUMNS[i])));
                }
                let d = |i: usize| Scaled {
                    value: decimals[i].0.value(r),
                    scale: decimals[i].1,
                };
                rows.push(ClusterRow {
                    returnflag: flags.value(r).to_string(),
                    linestatus: statuses.value(r).to_string(),
                    sums: [d(0), d(1), d(2), d(3)],
                    avgs: [d(4), d(5), d(6)],
                    count: count.value(r),
                });
            }
        }
        Ok(ClusterAnswer { rows })
    }

    /// Pipe-delimited table (header, one line per group), every value as DataFusion computed it.
    pub fn to_table(&self) -> String {
        let mut s = COLUMNS.join("|");
        s.push('\n');
        for r in &self.rows {
            let mut f = vec![r.returnflag.clone(), r.linestatus.clone()];
            f.extend(r.sums.iter().chain(&r.avgs).map(Scaled::to_string));
            f.push(r.count.to_string());
            s.push_str(&f.join("|"));
            s.push('\n');
        }
        s
    }

    /// Rounded half away from zero to two decimals, for the official answer's comparison.
    /// DataFusion's averages are truncated at 6 decimals; truncating and then rounding to 2 gives
    /// the exact quotient's rounding (a tie at 2 decimals survives truncation at 6).
    pub fn rounded(&self) -> Vec<RoundedRow> {
        let cents = |v: &Scaled| {
            if v.scale >= 2 {
                round_scaled(v.value, v.scale, 2)
            } else {
                v.value * 10i128.pow(2 - v.scale)
            }
        };
        self.rows
            .iter()
            .map(|r| {
                let mut values = [0i128; 8];
                for (i, v) in r.sums.iter().chain(&r.avgs).enumerate() {
                    values[i] = cents(v);
                }
                values[7] = r.count as i128;
                RoundedRow {
                    returnflag: r.returnflag.clone(),
                    linestatus: r.linestatus.clone(),
                    values,
                }
            })
            .collect()
    }

    /// Lines read by the aggregation (rows that passed the filter).
    pub fn rows_aggregated(&self) -> u64 {
        self.rows.iter().map(|r| r.count.max(0) as u64).sum()
    }
}

/// `v × 10^(to − from)` (exact; `to` ≥ `from`).
fn rescale_up(v: i128, from: u32, to: u32) -> Option<i128> {
    v.checked_mul(10i128.checked_pow(to.checked_sub(from)?)?)
}

/// Compares the cluster's answer with dbscope's exact local job: groups, every sum and count to
/// the last digit, each average with DataFusion's rule (`sum × 10^k / count`, truncated) applied
/// to the local job's exact sum. Returns the differences, one line each (empty: identical).
pub fn differences_from_local(got: &ClusterAnswer, local: &Q1Answer) -> Vec<String> {
    let mut out = Vec::new();
    if got.rows.len() != local.rows.len() {
        out.push(format!(
            "{} groups, the local job has {}",
            got.rows.len(),
            local.rows.len()
        ));
    }
    for (g, l) in got.rows.iter().zip(&local.rows) {
        let group = format!("{}|{}", l.returnflag, l.linestatus);
        if (g.returnflag.as_str(), g.linestatus.as_str())
            != (
                l.returnflag.to_string().as_str(),
                l.linestatus.to_string().as_str(),
            )
        {
            out.push(format!(
                "group {}|{} where the local job has {group}",
                g.returnflag, g.linestatus
            ));
            continue;
        }
        let a = &l.agg;
        let exact_sums = [
            (a.sum_qty as i128, 2),
            (a.sum_base_price as i128, 2),
            (a.sum_disc_price, 4),
            (a.sum_charge, 6),
        ];
        for (i, (&(v, s), d)) in exact_sums.iter().zip(&g.sums).enumerate() {
            let want = rescale_up(v, s, d.scale);
            if want != Some(d.value) {
                out.push(format!(
                    "{group} {}: cluster {d}, local job {}",
                    COLUMNS[2 + i],
                    format_scaled(v, s)
                ));
            }
        }
        let avg_sums = [
            a.sum_qty as i128,
            a.sum_base_price as i128,
            a.sum_disc as i128,
        ];
        for (i, (&sum, d)) in avg_sums.iter().zip(&g.avgs).enumerate() {
            // DataFusion: sum (scale 2) × 10^(scale − 2) / count, integer division (truncates).
            let want = rescale_up(sum, 2, d.scale).map(|n| n / (a.count.max(1) as i128));
            if want != Some(d.value) {
                out.push(format!(
                    "{group} {}: cluster {d}, local job's exact quotient truncated to {} decimals {}",
                    COLUMNS[6 + i],
                    d.scale,
                    want.map_or("(overflows)".to_string(), |w| format_scaled(w, d.scale))
                ));
            }
        }
        if g.count < 0 || g.count as u64 != a.count {
            out.push(format!(
                "{group} count_order: cluster {}, local job {}",
                g.count, a.count
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbscope_tpch::q1::{Agg, Q1Row};

    fn local() -> Q1Answer {
        Q1Answer {
            rows: vec![Q1Row {
                returnflag: 'A',
                linestatus: 'F',
                agg: Agg {
                    sum_qty: 3773410700,
                    sum_base_price: 5658655440073,
                    sum_disc_price: 537582571348700,
                    sum_charge: 55909065222827692,
                    sum_disc: 7390430,
                    count: 1478493,
                },
            }],
        }
    }

    fn cluster() -> ClusterAnswer {
        let s = |value, scale| Scaled { value, scale };
        ClusterAnswer {
            rows: vec![ClusterRow {
                returnflag: "A".into(),
                linestatus: "F".into(),
                sums: [
                    s(3773410700, 2),
                    s(5658655440073, 2),
                    s(537582571348700, 4),
                    s(55909065222827692, 6),
                ],
                // 37734107.00 / 1478493 = 25.5220058533…, truncated: 25.522005
                avgs: [s(25522005, 6), s(38273129734, 6), s(49986, 6)],
                count: 1478493,
            }],
        }
    }

    #[test]
    fn the_same_answer_has_no_differences() {
        assert_eq!(
            differences_from_local(&cluster(), &local()),
            Vec::<String>::new()
        );
        let r = &cluster().rounded()[0];
        assert_eq!(r.values[0], 3773410700);
        assert_eq!(r.values[3], 5590906522283);
        assert_eq!(r.values[4], 2552);
        assert_eq!(r.values[5], 3827313);
        assert_eq!(r.values[6], 5);
    }

    #[test]
    fn one_digit_off_is_named() {
        let mut c = cluster();
        c.rows[0].sums[3].value += 1;
        c.rows[0].avgs[0].value += 1; // rounded instead of truncated
        let d = differences_from_local(&c, &local());
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(
            d[0],
            "A|F sum_charge: cluster 55909065222.827693, local job 55909065222.827692"
        );
        assert!(d[1].starts_with("A|F avg_qty: cluster 25.522006, local job's exact quotient truncated to 6 decimals 25.522005"), "{}", d[1]);
        c.rows[0].count = 1;
        assert!(differences_from_local(&c, &local())
            .iter()
            .any(|l| l == "A|F count_order: cluster 1, local job 1478493"));
    }

    #[test]
    fn batches_are_read_by_type() {
        use datafusion::arrow::array::{Decimal128Array, Int64Array, StringArray};
        use std::sync::Arc;
        let dec = |v: i128, s: i8| {
            Arc::new(
                Decimal128Array::from(vec![v])
                    .with_precision_and_scale(38, s)
                    .unwrap(),
            ) as Arc<dyn Array>
        };
        let mut cols: Vec<Arc<dyn Array>> = vec![
            Arc::new(StringArray::from(vec!["A"])),
            Arc::new(StringArray::from(vec!["F"])),
        ];
        for (v, s) in [
            (3773410700, 2),
            (5658655440073, 2),
            (537582571348700, 4),
            (55909065222827692, 6),
        ] {
            cols.push(dec(v, s));
        }
        for v in [25522005, 38273129734, 49986] {
            cols.push(dec(v, 6));
        }
        cols.push(Arc::new(Int64Array::from(vec![1478493])));
        let batch =
            RecordBatch::try_from_iter(COLUMNS.iter().zip(cols).map(|(n, c)| (*n, c))).unwrap();
        assert_eq!(
            ClusterAnswer::from_batches(std::slice::from_ref(&batch)).unwrap(),
            cluster()
        );
        let short = batch.project(&[0, 1, 2]).unwrap();
        let e = ClusterAnswer::from_batches(&[short])
            .unwrap_err()
            .to_string();
        assert!(e.contains("3 columns, expected 10"), "{e}");
    }
}
