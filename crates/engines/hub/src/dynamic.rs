//! A join's run-time filter said in PostgreSQL's SQL, so that a database scan on the probe side
//! of a hash join returns only the rows that can join.
//!
//! DataFusion's hash join, once it has built its table, publishes a *dynamic filter* on the probe
//! side's join keys: the keys' bounds (`k >= min AND k <= max`) and, when the build side holds few
//! distinct keys, their list (`k IN (…)`), one branch per join partition. A Parquet scan prunes
//! row groups with it; a PostgreSQL scan can do better and send it with the COPY, so that the
//! server returns the 29,000 orders that have a matching lineitem instead of all 1,500,000 (TPC-H
//! Q12 at SF 1). The join still decides which rows join: the SQL sent only has to keep every row
//! the filter keeps, and it may keep more. So a part that cannot be said is dropped from an `AND`
//! (the rest still holds), an `OR` needs both sides, and the join partitions' `CASE` becomes the
//! `OR` of its branches.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{
    BinaryExpr, CaseExpr, Column, DynamicFilterPhysicalExpr, InListExpr, IsNullExpr, Literal,
};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::scalar::ScalarValue;

use dbscope_analysis::text::thousands;

use crate::pushdown::{class, comparison, literal, Class, Dialect, PushColumn};

/// Lists longer than this go as one array constant (`= ANY('{…}'::int8[])`): PostgreSQL parses
/// one string instead of thousands of constants (0.15 s against 0.18 s for a 29,099-key list on
/// orders at SF 1), and hashes it for the lookup as it does an `IN` list.
const ARRAY_FROM: usize = 16;

/// Lists are sent only to servers that look them up by hashing (PostgreSQL 14 and later); an
/// older server compares every row with every key, so it gets the bounds alone.
const HASHED_LISTS_SINCE: u32 = 140_000;

/// A run-time filter as a scan sends it: the SQL, and a short form for `--explain` and the run
/// (long lists shown by their length).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Implied {
    pub sql: String,
    pub shown: String,
}

/// The condition, in PostgreSQL's SQL for a scan returning `schema` whose columns a filter names
/// as `cols` says, that every row `e` keeps also meets; `None` when nothing useful can be said.
/// `version` is the server's `server_version_num`.
pub(crate) fn implied(
    e: &Arc<dyn PhysicalExpr>,
    schema: &Schema,
    cols: &HashMap<String, PushColumn>,
    version: u32,
) -> Option<Implied> {
    let cx = Cx {
        schema,
        cols,
        lists: version >= HASHED_LISTS_SINCE,
    };
    match cx.superset(e)? {
        Said::True => None,
        Said::False => Some(Implied {
            sql: "FALSE".into(),
            shown: "FALSE".into(),
        }),
        Said::Cond(sql, shown) => Some(Implied { sql, shown }),
    }
}

/// Whether `e` holds a dynamic filter (a join's or a TopK's, filled in as the query runs).
pub(crate) fn is_dynamic(e: &Arc<dyn PhysicalExpr>) -> bool {
    e.downcast_ref::<DynamicFilterPhysicalExpr>().is_some()
        || e.children().iter().any(|c| is_dynamic(c))
}

/// The expression ids of the dynamic filters in `e`.
pub(crate) fn dynamic_ids(e: &Arc<dyn PhysicalExpr>, ids: &mut Vec<(u64, Arc<dyn PhysicalExpr>)>) {
    if e.downcast_ref::<DynamicFilterPhysicalExpr>().is_some() {
        if let Some(id) = e.expression_id() {
            ids.push((id, e.clone()));
        }
        return;
    }
    for c in e.children() {
        dynamic_ids(c, ids);
    }
}

/// A condition: always true (nothing to send), never true, or SQL with its short form.
enum Said {
    True,
    False,
    Cond(String, String),
}

struct Cx<'a> {
    schema: &'a Schema,
    cols: &'a HashMap<String, PushColumn>,
    lists: bool,
}

impl Cx<'_> {
    /// A condition that every row `e` keeps meets.
    fn superset(&self, e: &Arc<dyn PhysicalExpr>) -> Option<Said> {
        if let Some(d) = e.downcast_ref::<DynamicFilterPhysicalExpr>() {
            return self.superset(&d.current().ok()?);
        }
        if let Some(b) = e.downcast_ref::<BinaryExpr>() {
            match b.op() {
                Operator::And => {
                    return match (self.superset(b.left()), self.superset(b.right())) {
                        (Some(Said::False), _) | (_, Some(Said::False)) => Some(Said::False),
                        (None | Some(Said::True), x) | (x, None | Some(Said::True)) => x,
                        (Some(Said::Cond(l, ls)), Some(Said::Cond(r, rs))) => {
                            Some(Said::Cond(format!("{l} AND {r}"), format!("{ls} AND {rs}")))
                        }
                    };
                }
                Operator::Or => {
                    let l = self.superset(b.left())?;
                    let r = self.superset(b.right())?;
                    return Some(or(vec![l, r]));
                }
                _ => {}
            }
        }
        if let Some(c) = e.downcast_ref::<CaseExpr>() {
            // The join partitions' routing (`CASE hash(k) % n WHEN 0 THEN f0 … ELSE f`): a row
            // the CASE keeps meets one of the branches.
            if let Some(one) = self.one_list(c) {
                return Some(one);
            }
            let mut branches = Vec::new();
            for (_, then) in c.when_then_expr() {
                branches.push(self.superset(then)?);
            }
            if let Some(x) = c.else_expr() {
                branches.push(self.superset(x)?);
            }
            return Some(or(branches));
        }
        if let Some(l) = e.downcast_ref::<Literal>() {
            return match l.value() {
                ScalarValue::Boolean(Some(true)) => Some(Said::True),
                ScalarValue::Boolean(Some(false)) | ScalarValue::Boolean(None) => Some(Said::False),
                _ => None,
            };
        }
        let (sql, shown) = self.exact(e)?;
        Some(Said::Cond(sql, shown))
    }

    /// `e` said exactly (a comparison, a list, `IS NULL`), as SQL and its short form.
    fn exact(&self, e: &Arc<dyn PhysicalExpr>) -> Option<(String, String)> {
        if let Some(b) = e.downcast_ref::<BinaryExpr>() {
            let (l, lc) = self.value(b.left())?;
            let (r, rc) = self.value(b.right())?;
            let sym = comparison(b.op(), lc, rc)?;
            let s = format!("{l} {sym} {r}");
            return Some((s.clone(), s));
        }
        if let Some(n) = e.downcast_ref::<IsNullExpr>() {
            let (x, _) = self.value(n.arg())?;
            let s = format!("{x} IS NULL");
            return Some((s.clone(), s));
        }
        if let Some(l) = e.downcast_ref::<InListExpr>() {
            if l.negated() {
                return None;
            }
            return self.list(l.expr(), l.list().iter());
        }
        None
    }

    /// `x IN (values)`: an array constant for a long list of integers.
    fn list<'e>(
        &self,
        x: &Arc<dyn PhysicalExpr>,
        values: impl Iterator<Item = &'e Arc<dyn PhysicalExpr>>,
    ) -> Option<(String, String)> {
        if !self.lists {
            return None;
        }
        let (xs, xc) = self.value(x)?;
        let values = values
            .map(|v| {
                let lit = v.downcast_ref::<Literal>()?;
                match literal(lit.value(), Dialect::Postgres) {
                    Some((s, c)) if c == xc => Some(s),
                    _ => None,
                }
            })
            .collect::<Option<Vec<_>>>()?;
        // The build side's keys, one per build row: each value once.
        let mut seen = std::collections::HashSet::with_capacity(values.len());
        let values: Vec<String> = values
            .into_iter()
            .filter(|v| seen.insert(v.clone()))
            .collect();
        let n = values.len();
        if n == 0 {
            return None;
        }
        let shown = if n <= 5 {
            format!("{xs} IN ({})", values.join(", "))
        } else {
            format!("{xs} IN ({} values)", thousands(n as u64))
        };
        let array = match x.data_type(self.schema).ok()? {
            DataType::Int8 | DataType::Int16 | DataType::UInt8 => Some("int2"),
            DataType::Int32 | DataType::UInt16 => Some("int4"),
            DataType::Int64 | DataType::UInt32 => Some("int8"),
            _ => None,
        };
        let sql = match array {
            Some(t) if n >= ARRAY_FROM => format!("{xs} = ANY('{{{}}}'::{t}[])", values.join(",")),
            _ => format!("{xs} IN ({})", values.join(", ")),
        };
        Some((sql, shown))
    }

    /// The join partitions' `CASE` when every partition that has rows lists its keys of the same
    /// column: one list of all the keys (the partitions' keys are disjoint), so the server looks
    /// each row up once instead of once per partition, and the bounds go (the list says more).
    fn one_list(&self, c: &CaseExpr) -> Option<Said> {
        let mut column: Option<&Arc<dyn PhysicalExpr>> = None;
        let mut values: Vec<&Arc<dyn PhysicalExpr>> = Vec::new();
        let branches = c
            .when_then_expr()
            .iter()
            .map(|(_, t)| t)
            .chain(c.else_expr());
        for b in branches {
            if let Some(l) = b.downcast_ref::<Literal>() {
                if matches!(l.value(), ScalarValue::Boolean(Some(false))) {
                    continue;
                }
                return None;
            }
            let list = conjuncts(b)
                .into_iter()
                .find_map(|x| x.downcast_ref::<InListExpr>().filter(|l| !l.negated()))?;
            let x = list.expr();
            x.downcast_ref::<Column>()?;
            match column {
                None => column = Some(x),
                Some(c) if c == x => {}
                Some(_) => return None,
            }
            values.extend(list.list());
        }
        let (sql, shown) = self.list(column?, values.into_iter())?;
        Some(Said::Cond(sql, shown))
    }

    /// A column of the scan or a literal, as SQL with its comparison class.
    fn value(&self, e: &Arc<dyn PhysicalExpr>) -> Option<(String, Class)> {
        if let Some(c) = e.downcast_ref::<Column>() {
            let f = self.schema.fields().get(c.index())?;
            if f.name() != c.name() {
                return None;
            }
            let col = self.cols.get(c.name())?;
            return Some((col.sql.clone(), class(&col.data_type, Dialect::Postgres)?));
        }
        if let Some(l) = e.downcast_ref::<Literal>() {
            return literal(l.value(), Dialect::Postgres);
        }
        None
    }
}

/// The terms of `e` as an `AND` of them.
fn conjuncts(e: &Arc<dyn PhysicalExpr>) -> Vec<&Arc<dyn PhysicalExpr>> {
    match e.downcast_ref::<BinaryExpr>() {
        Some(b) if *b.op() == Operator::And => {
            let mut v = conjuncts(b.left());
            v.extend(conjuncts(b.right()));
            v
        }
        _ => vec![e],
    }
}

/// The `OR` of conditions.
fn or(parts: Vec<Said>) -> Said {
    let mut sql = Vec::new();
    let mut shown = Vec::new();
    for p in parts {
        match p {
            Said::True => return Said::True,
            Said::False => {}
            Said::Cond(s, w) => {
                sql.push(s);
                shown.push(w);
            }
        }
    }
    match sql.len() {
        0 => Said::False,
        1 => Said::Cond(sql.remove(0), shown.remove(0)),
        _ => Said::Cond(
            format!("(({}))", sql.join(") OR (")),
            format!("(({}))", shown.join(") OR (")),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{ArrayRef, Int64Array, StringArray};
    use datafusion::arrow::datatypes::Field;
    use datafusion::physical_expr::expressions::{lit, BinaryExpr};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("p", DataType::Utf8, true),
            Field::new("f", DataType::Float64, true),
        ])
    }

    fn cols() -> HashMap<String, PushColumn> {
        [
            ("k", "\"k\"", DataType::Int64),
            ("p", "\"p\"::text", DataType::Utf8),
            ("f", "\"f\"", DataType::Float64),
        ]
        .into_iter()
        .map(|(n, s, t)| {
            (
                n.to_string(),
                PushColumn {
                    sql: s.into(),
                    data_type: t,
                },
            )
        })
        .collect()
    }

    fn col(name: &str) -> Arc<dyn PhysicalExpr> {
        let s = schema();
        Arc::new(Column::new(name, s.index_of(name).unwrap()))
    }

    fn bin(
        l: Arc<dyn PhysicalExpr>,
        op: Operator,
        r: Arc<dyn PhysicalExpr>,
    ) -> Arc<dyn PhysicalExpr> {
        Arc::new(BinaryExpr::new(l, op, r))
    }

    fn keys(v: &[i64]) -> Arc<dyn PhysicalExpr> {
        let a: ArrayRef = Arc::new(Int64Array::from(v.to_vec()));
        Arc::new(InListExpr::try_new_from_array(col("k"), a, false, &schema()).unwrap())
    }

    fn said(e: &Arc<dyn PhysicalExpr>) -> Option<(String, String)> {
        implied(e, &schema(), &cols(), 150_000).map(|i| (i.sql, i.shown))
    }

    fn bounds(lo: i64, hi: i64) -> Arc<dyn PhysicalExpr> {
        bin(
            bin(col("k"), Operator::GtEq, lit(lo)),
            Operator::And,
            bin(col("k"), Operator::LtEq, lit(hi)),
        )
    }

    #[test]
    fn a_join_partitions_bounds_and_keys_become_sql() {
        let e = bin(bounds(3, 40), Operator::And, keys(&[3, 7, 40]));
        assert_eq!(
            said(&e).unwrap().0,
            "\"k\" >= 3 AND \"k\" <= 40 AND \"k\" IN (3, 7, 40)"
        );
        // Long lists go as one array and are shown by their length.
        let many: Vec<i64> = (1..=20_000).collect();
        let (sql, shown) = said(&bin(bounds(1, 20_000), Operator::And, keys(&many))).unwrap();
        assert!(sql.contains("\"k\" = ANY('{1,2,3,"), "{sql}");
        assert!(sql.ends_with(",19999,20000}'::int8[])"), "{sql}");
        assert_eq!(
            shown,
            "\"k\" >= 1 AND \"k\" <= 20000 AND \"k\" IN (20,000 values)"
        );
        // A server that compares every row with every key gets the bounds only.
        let old = implied(
            &bin(bounds(1, 20_000), Operator::And, keys(&many)),
            &schema(),
            &cols(),
            130_000,
        )
        .unwrap();
        assert_eq!(old.sql, "\"k\" >= 1 AND \"k\" <= 20000");
    }

    #[test]
    fn what_cannot_be_said_is_dropped_from_an_and_and_spoils_an_or() {
        // A float comparison is not said (NaN orders differently): the bounds still go.
        let f = bin(col("f"), Operator::Gt, lit(1.5f64));
        assert_eq!(
            said(&bin(f.clone(), Operator::And, bounds(1, 9)))
                .unwrap()
                .0,
            "\"k\" >= 1 AND \"k\" <= 9"
        );
        assert_eq!(said(&bin(f.clone(), Operator::Or, bounds(1, 9))), None);
        assert_eq!(said(&f), None);
        // Text: equality and lists, never an ordering (collations).
        let t: ArrayRef = Arc::new(StringArray::from(vec!["a", "b'c"]));
        let l: Arc<dyn PhysicalExpr> =
            Arc::new(InListExpr::try_new_from_array(col("p"), t, false, &schema()).unwrap());
        assert_eq!(said(&l).unwrap().0, "\"p\"::text IN ('a', 'b''c')");
        assert_eq!(said(&bin(col("p"), Operator::Lt, lit("m"))), None);
        // A negated list keeps rows the join does not want to see dropped: not sent.
        let a: ArrayRef = Arc::new(Int64Array::from(vec![1, 2]));
        let not: Arc<dyn PhysicalExpr> =
            Arc::new(InListExpr::try_new_from_array(col("k"), a, true, &schema()).unwrap());
        assert_eq!(said(&not), None);
    }

    #[test]
    fn the_partitions_case_becomes_the_or_of_its_branches() {
        let route = bin(col("k"), Operator::Modulo, lit(2i64));
        let case: Arc<dyn PhysicalExpr> = Arc::new(
            CaseExpr::try_new(
                Some(route.clone()),
                vec![(lit(0i64), bounds(2, 8)), (lit(1i64), bounds(11, 13))],
                Some(lit(false)),
            )
            .unwrap(),
        );
        assert_eq!(
            said(&case).unwrap().0,
            "((\"k\" >= 2 AND \"k\" <= 8) OR (\"k\" >= 11 AND \"k\" <= 13))"
        );
        // An empty partition (FALSE) drops out; a partition with nothing known (TRUE) makes the
        // whole filter say nothing.
        let one: Arc<dyn PhysicalExpr> = Arc::new(
            CaseExpr::try_new(
                Some(route.clone()),
                vec![(lit(0i64), lit(false)), (lit(1i64), bounds(11, 13))],
                Some(lit(false)),
            )
            .unwrap(),
        );
        assert_eq!(said(&one).unwrap().0, "\"k\" >= 11 AND \"k\" <= 13");
        let open: Arc<dyn PhysicalExpr> = Arc::new(
            CaseExpr::try_new(
                Some(route),
                vec![(lit(0i64), lit(true)), (lit(1i64), bounds(11, 13))],
                Some(lit(false)),
            )
            .unwrap(),
        );
        assert_eq!(said(&open), None);
        // Partitions that list their keys: one list of them all, without the bounds.
        let lists: Arc<dyn PhysicalExpr> = Arc::new(
            CaseExpr::try_new(
                Some(bin(col("k"), Operator::Modulo, lit(3i64))),
                vec![
                    (
                        lit(0i64),
                        bin(bounds(3, 9), Operator::And, keys(&[3, 9, 3])),
                    ),
                    (lit(1i64), lit(false)),
                    (lit(2i64), bin(bounds(4, 4), Operator::And, keys(&[4]))),
                ],
                Some(lit(false)),
            )
            .unwrap(),
        );
        assert_eq!(said(&lists).unwrap().0, "\"k\" IN (3, 9, 4)");
        // A partition without a list: the OR of the branches.
        let mixed: Arc<dyn PhysicalExpr> = Arc::new(
            CaseExpr::try_new(
                Some(bin(col("k"), Operator::Modulo, lit(2i64))),
                vec![
                    (lit(0i64), bin(bounds(3, 9), Operator::And, keys(&[3, 9]))),
                    (lit(1i64), bounds(4, 5)),
                ],
                Some(lit(false)),
            )
            .unwrap(),
        );
        assert_eq!(
            said(&mixed).unwrap().0,
            "((\"k\" >= 3 AND \"k\" <= 9 AND \"k\" IN (3, 9)) OR (\"k\" >= 4 AND \"k\" <= 5))"
        );
        // An empty build side: nothing can join.
        assert_eq!(said(&lit(false)).unwrap().0, "FALSE");
        assert_eq!(said(&lit(true)), None);
    }

    #[test]
    fn a_dynamic_filter_is_read_as_it_is_now() {
        let d = Arc::new(DynamicFilterPhysicalExpr::new(vec![col("k")], lit(true)));
        let e: Arc<dyn PhysicalExpr> = d.clone();
        assert!(is_dynamic(&e));
        assert!(!is_dynamic(&bounds(1, 2)));
        assert_eq!(said(&e), None, "before the join has built its table");
        d.update(bounds(5, 6)).unwrap();
        assert_eq!(said(&e).unwrap().0, "\"k\" >= 5 AND \"k\" <= 6");
        let mut ids = Vec::new();
        dynamic_ids(&bin(e.clone(), Operator::And, bounds(1, 2)), &mut ids);
        assert_eq!(ids.len(), 1);
        assert_eq!(Some(ids[0].0), e.expression_id());
    }
}
