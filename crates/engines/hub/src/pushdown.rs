//! Which DataFusion filters a PostgreSQL or SQLite scan can send to the database, and as what
//! SQL.
//!
//! A filter is pushed only when PostgreSQL's answer is exactly DataFusion's on the values the
//! scan returns (DataFusion then does not apply it again, `Exact`); everything else stays in
//! DataFusion (`Unsupported`). Translated: comparisons (`= <> < <= > >=`) of columns and
//! literals of integer, decimal, date, timestamp and boolean type, `AND`, `OR`, `NOT`,
//! `IS [NOT] NULL`, `BETWEEN`, `IN (…)`, and value-preserving casts of a column (an integer
//! widened, a decimal given more digits). Text: only `=`, `<>` and `IN` — an ordering (`<`) or a
//! `LIKE` would follow the column's collation on the server and byte order in DataFusion.
//! Floats are not pushed (NaN orders differently).
//!
//! SQLite ([`Dialect::Sqlite`]): the scan reads only integers into Int64 columns and only text
//! into Utf8 ones (anything else fails the scan), so comparisons of those with integer and text
//! literals are SQLite's as DataFusion's. Text ordering too, under SQLite's default BINARY
//! collation (memcmp of the UTF-8 bytes: DataFusion's order); a table that declares a COLLATE
//! anywhere gets text equality and ordering left to DataFusion. Nothing else is pushed (reals,
//! blobs, `LIKE`, which SQLite folds ASCII case for).

use std::collections::HashMap;

use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::logical_expr::{BinaryExpr, Expr, Operator, TableProviderFilterPushDown};
use datafusion::scalar::ScalarValue;

/// The SQL a column is read as, and its Arrow type.
#[derive(Clone, Debug)]
pub struct PushColumn {
    /// The expression in the SELECT (a quoted name, or a cast such as `"c"::text`).
    pub sql: String,
    /// The Arrow type the scan returns.
    pub data_type: DataType,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// Ordered the same on both sides: integers, decimals, dates, timestamps.
    Ordered,
    /// Equality only (text: collations).
    EqualityOnly,
    /// Booleans (the result of a condition, or a boolean column).
    Bool,
}

/// Which database's SQL and comparison rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// PostgreSQL.
    Postgres,
    /// SQLite; `text_ordered`: text compares as bytes (no COLLATE declared in the table).
    Sqlite { text_ordered: bool },
    /// MariaDB/MySQL: integers, decimals and dates only (text follows the column's collation,
    /// case-insensitive and blank-padded by default; DATETIME and TIMESTAMP differ in time zones).
    MySql,
}

pub(crate) fn class(t: &DataType, d: Dialect) -> Option<Class> {
    if d == Dialect::MySql {
        return match t {
            DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 | DataType::Timestamp(..) => {
                None
            }
            other => class(other, Dialect::Postgres),
        };
    }
    if let Dialect::Sqlite { text_ordered } = d {
        return match t {
            DataType::Int64 => Some(Class::Ordered),
            DataType::Utf8 if text_ordered => Some(Class::Ordered),
            _ => None,
        };
    }
    match t {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::Decimal128(_, _)
        | DataType::Date32
        | DataType::Timestamp(TimeUnit::Microsecond, None) => Some(Class::Ordered),
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => Some(Class::EqualityOnly),
        DataType::Boolean => Some(Class::Bool),
        _ => None,
    }
}

/// The SQL of `e` for a table whose columns are `cols` (by name), or `None` when it cannot be
/// said exactly.
pub fn to_sql(e: &Expr, cols: &HashMap<String, PushColumn>) -> Option<String> {
    to_sql_in(e, cols, Dialect::Postgres)
}

/// The columns of `fields` by name, each said in SQL as `quote` names it (its own type, no cast).
pub fn plain_columns(
    fields: &[datafusion::arrow::datatypes::Field],
    quote: fn(&str) -> String,
) -> HashMap<String, PushColumn> {
    fields
        .iter()
        .map(|f| {
            (
                f.name().clone(),
                PushColumn {
                    sql: quote(f.name()),
                    data_type: f.data_type().clone(),
                },
            )
        })
        .collect()
}

/// What DataFusion is told of each filter: `Exact` when it is sent to the database (pushdown
/// `on` and said exactly in `dialect`), else `Unsupported`.
pub fn support(
    filters: &[&Expr],
    cols: &HashMap<String, PushColumn>,
    dialect: Dialect,
    on: bool,
) -> Vec<TableProviderFilterPushDown> {
    filters
        .iter()
        .map(|f| match on && to_sql_in(f, cols, dialect).is_some() {
            true => TableProviderFilterPushDown::Exact,
            false => TableProviderFilterPushDown::Unsupported,
        })
        .collect()
}

/// A scan's filters as it sends them: `pushed`, said exactly in the database's SQL (only with
/// pushdown `on`); `kept`, DataFusion's (as text, for `--explain`); and the LIMIT, sent only
/// when every filter went to the database.
pub struct Sent {
    pub pushed: Vec<String>,
    pub kept: Vec<String>,
    pub limit: Option<usize>,
}

/// Splits `filters` (and the `limit`) into what a scan sends to a database of `dialect` and
/// what DataFusion keeps.
pub fn sent(
    filters: &[Expr],
    cols: &HashMap<String, PushColumn>,
    dialect: Dialect,
    on: bool,
    limit: Option<usize>,
) -> Sent {
    let mut pushed = Vec::new();
    let mut kept = Vec::new();
    for f in filters {
        match to_sql_in(f, cols, dialect).filter(|_| on) {
            Some(s) => pushed.push(s),
            None => kept.push(f.to_string()),
        }
    }
    let limit = limit.filter(|_| on && kept.is_empty());
    Sent {
        pushed,
        kept,
        limit,
    }
}

/// The end of a scan's SELECT: ` WHERE c1 AND c2` (nothing without conditions) and ` LIMIT n`.
pub fn where_limit<'a>(conds: impl IntoIterator<Item = &'a str>, limit: Option<usize>) -> String {
    let conds: Vec<&str> = conds.into_iter().collect();
    let mut s = String::new();
    if !conds.is_empty() {
        s = format!(" WHERE {}", conds.join(" AND "));
    }
    if let Some(n) = limit {
        s.push_str(&format!(" LIMIT {n}"));
    }
    s
}

/// [`to_sql`] for a database of `dialect`.
pub fn to_sql_in(e: &Expr, cols: &HashMap<String, PushColumn>, dialect: Dialect) -> Option<String> {
    let (sql, c) = translate(e, cols, dialect)?;
    (c == Class::Bool).then_some(sql)
}

fn translate(e: &Expr, cols: &HashMap<String, PushColumn>, d: Dialect) -> Option<(String, Class)> {
    match e {
        Expr::Column(c) => {
            let col = cols.get(&c.name)?;
            Some((col.sql.clone(), class(&col.data_type, d)?))
        }
        Expr::Literal(v, _) => literal(v, d),
        Expr::Cast(c) => {
            let (sql, cl) = translate(&c.expr, cols, d)?;
            let from = match c.expr.as_ref() {
                Expr::Column(col) => cols.get(&col.name)?.data_type.clone(),
                _ => return None,
            };
            (!matches!(d, Dialect::Sqlite { .. }) && widening(&from, c.field.data_type()))
                .then_some((sql, cl))
        }
        Expr::Not(inner) => {
            let (s, c) = translate(inner, cols, d)?;
            (c == Class::Bool).then(|| (format!("(NOT {s})"), Class::Bool))
        }
        Expr::IsNull(inner) => {
            let (s, _) = translate(inner, cols, d)?;
            Some((format!("({s} IS NULL)"), Class::Bool))
        }
        Expr::IsNotNull(inner) => {
            let (s, _) = translate(inner, cols, d)?;
            Some((format!("({s} IS NOT NULL)"), Class::Bool))
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (l, lc) = translate(left, cols, d)?;
            let (r, rc) = translate(right, cols, d)?;
            let sym = match op {
                Operator::And | Operator::Or => {
                    if lc != Class::Bool || rc != Class::Bool {
                        return None;
                    }
                    if *op == Operator::And {
                        "AND"
                    } else {
                        "OR"
                    }
                }
                _ => comparison(op, lc, rc)?,
            };
            Some((format!("({l} {sym} {r})"), Class::Bool))
        }
        Expr::Between(b) => {
            let (x, xc) = translate(&b.expr, cols, d)?;
            let (lo, lc) = translate(&b.low, cols, d)?;
            let (hi, hc) = translate(&b.high, cols, d)?;
            if xc != Class::Ordered || lc != Class::Ordered || hc != Class::Ordered {
                return None;
            }
            let not = if b.negated { "NOT " } else { "" };
            Some((format!("({x} {not}BETWEEN {lo} AND {hi})"), Class::Bool))
        }
        Expr::InList(l) => {
            let (x, xc) = translate(&l.expr, cols, d)?;
            if l.list.is_empty() {
                return None;
            }
            let items = l
                .list
                .iter()
                .map(|i| match i {
                    Expr::Literal(..) => translate(i, cols, d).filter(|(_, c)| *c == xc),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            let not = if l.negated { "NOT " } else { "" };
            let items: Vec<String> = items.into_iter().map(|(s, _)| s).collect();
            Some((format!("({x} {not}IN ({}))", items.join(", ")), Class::Bool))
        }
        _ => None,
    }
}

/// The SQL operator of comparison `op` between values of classes `l` and `r`, when the server
/// compares them as DataFusion does: equality between values of one class, an ordering only
/// between ordered ones (text follows a collation on the server).
pub(crate) fn comparison(op: &Operator, l: Class, r: Class) -> Option<&'static str> {
    let ordered = l == Class::Ordered && r == Class::Ordered;
    match op {
        Operator::Eq if l == r => Some("="),
        Operator::NotEq if l == r => Some("<>"),
        Operator::Lt if ordered => Some("<"),
        Operator::LtEq if ordered => Some("<="),
        Operator::Gt if ordered => Some(">"),
        Operator::GtEq if ordered => Some(">="),
        _ => None,
    }
}

/// A cast that keeps every value of `from` as it is (so the server may compare the uncast column).
fn widening(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    let int_digits = |t: &DataType| match t {
        Int8 | UInt8 => Some(3),
        Int16 | UInt16 => Some(5),
        Int32 | UInt32 => Some(10),
        Int64 => Some(19),
        _ => None,
    };
    match (from, to) {
        (a, b) if a == b => true,
        (Int8, Int16 | Int32 | Int64) | (Int16, Int32 | Int64) | (Int32, Int64) => true,
        (a, Decimal128(p, s)) if int_digits(a).is_some() => {
            int_digits(a).is_some_and(|d| (*p as i32 - *s as i32) >= d)
        }
        (Decimal128(p1, s1), Decimal128(p2, s2)) => {
            s2 >= s1 && (*p2 as i32 - *s2 as i32) >= (*p1 as i32 - *s1 as i32)
        }
        _ => false,
    }
}

pub(crate) fn literal(v: &ScalarValue, d: Dialect) -> Option<(String, Class)> {
    let ordered = |s: String| Some((s, Class::Ordered));
    if d == Dialect::MySql {
        return match v {
            ScalarValue::Utf8(_)
            | ScalarValue::Utf8View(_)
            | ScalarValue::LargeUtf8(_)
            | ScalarValue::TimestampMicrosecond(..) => None,
            other => literal(other, Dialect::Postgres),
        };
    }
    if let Dialect::Sqlite { text_ordered } = d {
        return match v {
            ScalarValue::Int64(Some(x)) => ordered(x.to_string()),
            ScalarValue::Utf8(Some(s)) if text_ordered && !s.contains('\0') => {
                ordered(format!("'{}'", s.replace('\'', "''")))
            }
            _ => None,
        };
    }
    match v {
        ScalarValue::Int8(Some(x)) => ordered(x.to_string()),
        ScalarValue::Int16(Some(x)) => ordered(x.to_string()),
        ScalarValue::Int32(Some(x)) => ordered(x.to_string()),
        ScalarValue::Int64(Some(x)) => ordered(x.to_string()),
        ScalarValue::UInt8(Some(x)) => ordered(x.to_string()),
        ScalarValue::UInt16(Some(x)) => ordered(x.to_string()),
        ScalarValue::UInt32(Some(x)) => ordered(x.to_string()),
        ScalarValue::Decimal128(Some(x), _, s) => ordered(decimal(*x, *s)),
        ScalarValue::Date32(Some(d)) => {
            let date = chrono_date(*d)?;
            ordered(format!("DATE '{date}'"))
        }
        ScalarValue::TimestampMicrosecond(Some(us), None) => {
            let t = datafusion::common::arrow::temporal_conversions::timestamp_us_to_datetime(*us)?;
            ordered(format!("TIMESTAMP '{}'", t.format("%Y-%m-%d %H:%M:%S%.6f")))
        }
        ScalarValue::Boolean(Some(b)) => {
            Some((if *b { "TRUE" } else { "FALSE" }.into(), Class::Bool))
        }
        ScalarValue::Utf8(Some(s))
        | ScalarValue::Utf8View(Some(s))
        | ScalarValue::LargeUtf8(Some(s)) => {
            if s.contains('\0') {
                return None;
            }
            Some((format!("'{}'", s.replace('\'', "''")), Class::EqualityOnly))
        }
        _ => None,
    }
}

fn chrono_date(days: i32) -> Option<String> {
    let d = datafusion::common::arrow::temporal_conversions::date32_to_datetime(days)?;
    Some(d.format("%Y-%m-%d").to_string())
}

/// `x` with `scale` decimal places.
fn decimal(x: i128, scale: i8) -> String {
    if scale <= 0 {
        let zeros = "0".repeat((-scale) as usize);
        return format!("{x}{zeros}");
    }
    let s = scale as usize;
    let neg = x < 0;
    let digits = x.unsigned_abs().to_string();
    let digits = format!("{digits:0>width$}", width = s + 1);
    let (i, f) = digits.split_at(digits.len() - s);
    format!("{}{i}.{f}", if neg { "-" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::{col, lit};

    fn cols() -> HashMap<String, PushColumn> {
        let c = |sql: &str, t: DataType| PushColumn {
            sql: sql.into(),
            data_type: t,
        };
        HashMap::from([
            ("k".to_string(), c("\"k\"", DataType::Int64)),
            ("p".to_string(), c("\"p\"", DataType::Decimal128(15, 2))),
            ("s".to_string(), c("\"s\"::text", DataType::Utf8)),
            ("f".to_string(), c("\"f\"", DataType::Float64)),
        ])
    }

    #[test]
    fn where_and_limit_appear_only_when_there_is_something_to_send() {
        assert_eq!(where_limit([], None), "");
        assert_eq!(where_limit([], Some(5)), " LIMIT 5");
        assert_eq!(where_limit(["a > 1"], None), " WHERE a > 1");
        assert_eq!(
            where_limit(["ctid >= '(0,0)'", "a > 1"], Some(3)),
            " WHERE ctid >= '(0,0)' AND a > 1 LIMIT 3"
        );
    }

    #[test]
    fn exact_filters_become_sql_and_the_rest_stay() {
        let c = cols();
        assert_eq!(
            to_sql(&col("k").gt(lit(5i64)).and(col("s").eq(lit("a'b"))), &c).as_deref(),
            Some("((\"k\" > 5) AND (\"s\"::text = 'a''b'))")
        );
        assert_eq!(
            to_sql(
                &col("p").lt(lit(ScalarValue::Decimal128(Some(-5), 15, 2))),
                &c
            )
            .as_deref(),
            Some("(\"p\" < -0.05)")
        );
        assert_eq!(
            to_sql(&col("k").in_list(vec![lit(1i64), lit(2i64)], true), &c).as_deref(),
            Some("(\"k\" NOT IN (1, 2))")
        );
        assert_eq!(
            to_sql(&col("k").between(lit(1i64), lit(9i64)), &c).as_deref(),
            Some("(\"k\" BETWEEN 1 AND 9)")
        );
        // Text ordering follows the server's collation; floats, NaN; a column not in the table.
        assert_eq!(to_sql(&col("s").lt(lit("m")), &c), None);
        assert_eq!(to_sql(&col("f").gt(lit(1.5f64)), &c), None);
        assert_eq!(to_sql(&col("zz").eq(lit(1i64)), &c), None);
        // A bare column is not a condition.
        assert_eq!(to_sql(&col("k"), &c), None);
        assert_eq!(decimal(12345, 2), "123.45");
        assert_eq!(decimal(5, 3), "0.005");
        assert_eq!(decimal(-120, 0), "-120");
    }

    #[test]
    fn sqlite_takes_integers_and_text_as_bytes_only() {
        let c = HashMap::from([
            (
                "k".to_string(),
                PushColumn {
                    sql: "\"k\"".into(),
                    data_type: DataType::Int64,
                },
            ),
            (
                "s".to_string(),
                PushColumn {
                    sql: "\"s\"".into(),
                    data_type: DataType::Utf8,
                },
            ),
            (
                "f".to_string(),
                PushColumn {
                    sql: "\"f\"".into(),
                    data_type: DataType::Float64,
                },
            ),
        ]);
        let bytes = Dialect::Sqlite { text_ordered: true };
        let collated = Dialect::Sqlite {
            text_ordered: false,
        };
        let range = col("s")
            .gt_eq(lit("1995-01-01"))
            .and(col("k").lt(lit(7i64)));
        assert_eq!(
            to_sql_in(&range, &c, bytes).as_deref(),
            Some("((\"s\" >= '1995-01-01') AND (\"k\" < 7))")
        );
        // A declared collation: no text comparison at all, equality included.
        assert_eq!(to_sql_in(&range, &c, collated), None);
        assert_eq!(to_sql_in(&col("s").eq(lit("a")), &c, collated), None);
        assert_eq!(
            to_sql_in(&col("k").eq(lit(1i64)), &c, collated).as_deref(),
            Some("(\"k\" = 1)")
        );
        // Reals, LIKE (ASCII case folded in SQLite), decimals and dates are DataFusion's.
        assert_eq!(to_sql_in(&col("f").gt(lit(1.5f64)), &c, bytes), None);
        assert_eq!(to_sql_in(&col("s").like(lit("a%")), &c, bytes), None);
        assert_eq!(
            to_sql_in(
                &col("k").lt(lit(ScalarValue::Decimal128(Some(5), 15, 2))),
                &c,
                bytes
            ),
            None
        );
        assert_eq!(
            to_sql_in(
                &col("s").eq(lit(ScalarValue::Date32(Some(9000)))),
                &c,
                bytes
            ),
            None
        );
    }
}
