//! The initial population of clause 4.3.3.1, row by row: ITEM once, then per warehouse its
//! WAREHOUSE row, STOCK, DISTRICT, CUSTOMER, HISTORY, ORDERS, ORDER-LINE and NEW-ORDER rows.
//! Warehouses are independent, so a parallel build hands each session its own warehouses.

use crate::random::{last_name, Gen, NuConstants};
use crate::schema::{Dialect, TABLES};
use crate::spec::{CUSTOMERS, DISTRICTS, ITEMS, ORDERS};

/// The tables rows go to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Table {
    Warehouse,
    District,
    Customer,
    History,
    NewOrder,
    Orders,
    OrderLine,
    Item,
    Stock,
}

impl Table {
    /// The table's name in the schema.
    pub fn name(self) -> &'static str {
        TABLES[self as usize]
    }

    /// Its number of columns.
    pub fn columns(self) -> usize {
        match self {
            Table::Warehouse => 9,
            Table::District => 11,
            Table::Customer => 21,
            Table::History => 8,
            Table::NewOrder => 3,
            Table::Orders => 8,
            Table::OrderLine => 10,
            Table::Item => 5,
            Table::Stock => 17,
        }
    }

    /// `INSERT INTO t VALUES (?, …)` (SQLite) or `($1, …)` (PostgreSQL).
    pub fn insert_sql(self, dialect: Dialect) -> String {
        let params: Vec<String> = (1..=self.columns())
            .map(|i| match dialect {
                Dialect::Sqlite | Dialect::Mysql => "?".to_string(),
                Dialect::Postgres => format!("${i}"),
            })
            .collect();
        format!("INSERT INTO {} VALUES ({})", self.name(), params.join(", "))
    }

    /// `COPY t FROM STDIN` (text format; see [`copy_line`]).
    pub fn copy_sql(self) -> String {
        format!("COPY {} FROM STDIN", self.name())
    }

    /// MariaDB/MySQL's `LOAD DATA LOCAL INFILE` of the same text format (tab between fields,
    /// `\N` for NULL, newline after each row: LOAD DATA's defaults).
    pub fn load_data_sql(self) -> String {
        format!(
            "LOAD DATA LOCAL INFILE 'dbscope-tpcc-{t}' INTO TABLE {t} CHARACTER SET utf8mb4",
            t = self.name()
        )
    }
}

/// One column's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    /// An exact decimal: `units / 10^scale` (money in cents is `Dec(cents, 2)`).
    Dec(i64, u32),
    Text(String),
    Null,
}

impl Value {
    /// The value as a float (how SQLite stores NUMERIC columns' fractions).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Dec(u, s) => Some(*u as f64 / 10f64.powi(*s as i32)),
            _ => None,
        }
    }

    /// Appends the value in PostgreSQL's COPY text format.
    pub fn write_copy(&self, out: &mut String) {
        match self {
            Value::Int(i) => out.push_str(&i.to_string()),
            Value::Dec(u, s) => out.push_str(&decimal(*u, *s)),
            Value::Text(t) => {
                for ch in t.chars() {
                    match ch {
                        '\\' => out.push_str("\\\\"),
                        '\t' => out.push_str("\\t"),
                        '\n' => out.push_str("\\n"),
                        '\r' => out.push_str("\\r"),
                        c => out.push(c),
                    }
                }
            }
            Value::Null => out.push_str("\\N"),
        }
    }
}

/// `units / 10^scale` written exactly ("-10.00", "0.1234").
pub fn decimal(units: i64, scale: u32) -> String {
    if scale == 0 {
        return units.to_string();
    }
    let p = 10i64.pow(scale);
    let sign = if units < 0 { "-" } else { "" };
    let a = units.unsigned_abs();
    format!(
        "{sign}{}.{:0width$}",
        a / p as u64,
        a % p as u64,
        width = scale as usize
    )
}

/// A row as one line of COPY text, newline included.
pub fn copy_line(values: &[Value]) -> String {
    let mut out = String::with_capacity(values.len() * 12);
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push('\t');
        }
        v.write_copy(&mut out);
    }
    out.push('\n');
    out
}

/// A row: the table it goes to and its values in column order.
pub type Row = (Table, Vec<Value>);

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

/// Address columns: street 1, street 2, city, state, zip.
fn address(g: &mut Gen) -> [Value; 5] {
    [
        text(g.astring(10, 20)),
        text(g.astring(10, 20)),
        text(g.astring(10, 20)),
        text(g.astring(2, 2).to_uppercase()),
        text(g.zip()),
    ]
}

/// The ITEM table's 100,000 rows, given to `sink` one at a time.
pub fn items<E>(seed: u64, sink: &mut impl FnMut(Row) -> Result<(), E>) -> Result<(), E> {
    let mut g = Gen::new(seed ^ 0x17E5);
    for i in 1..=ITEMS {
        sink((
            Table::Item,
            vec![
                Value::Int(i),
                Value::Int(g.int(1, 10_000)),
                text(g.astring(14, 24)),
                Value::Dec(g.int(100, 10_000), 2),
                text(g.data_maybe_original(26, 50)),
            ],
        ))?;
    }
    Ok(())
}

/// Warehouse `w`'s rows in every table but ITEM. `now` is the load's timestamp text
/// (`YYYY-MM-DD HH:MM:SS`), `nu` the load's NURand constants.
pub fn warehouse<E>(
    w: i64,
    seed: u64,
    now: &str,
    nu: &NuConstants,
    sink: &mut impl FnMut(Row) -> Result<(), E>,
) -> Result<(), E> {
    let mut g = Gen::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ w as u64);
    let mut row = vec![Value::Int(w), text(g.astring(6, 10))];
    row.extend(address(&mut g));
    row.push(Value::Dec(g.int(0, 2000), 4));
    row.push(Value::Dec(30_000_000, 2)); // 300,000.00
    sink((Table::Warehouse, row))?;

    for i in 1..=ITEMS {
        let mut row = vec![Value::Int(i), Value::Int(w), Value::Int(g.int(10, 100))];
        for _ in 0..10 {
            row.push(text(g.astring(24, 24)));
        }
        row.extend([
            Value::Int(0),
            Value::Int(0),
            Value::Int(0),
            text(g.data_maybe_original(26, 50)),
        ]);
        sink((Table::Stock, row))?;
    }

    for d in 1..=DISTRICTS {
        let mut row = vec![Value::Int(d), Value::Int(w), text(g.astring(6, 10))];
        row.extend(address(&mut g));
        row.extend([
            Value::Dec(g.int(0, 2000), 4),
            Value::Dec(3_000_000, 2), // 30,000.00
            Value::Int(ORDERS + 1),
        ]);
        sink((Table::District, row))?;

        for c in 1..=CUSTOMERS {
            let last = if c <= 1000 {
                last_name(c - 1)
            } else {
                last_name(g.nurand(255, 0, 999, nu))
            };
            let mut row = vec![
                Value::Int(c),
                Value::Int(d),
                Value::Int(w),
                text(g.astring(8, 16)),
                text("OE"),
                text(last),
            ];
            row.extend(address(&mut g));
            row.extend([
                text(g.nstring(16, 16)),
                text(now),
                text(if g.int(1, 10) == 1 { "BC" } else { "GC" }),
                Value::Dec(5_000_000, 2),
                Value::Dec(g.int(0, 5000), 4),
                Value::Dec(-1000, 2),
                Value::Dec(1000, 2),
                Value::Int(1),
                Value::Int(0),
                text(g.astring(300, 500)),
            ]);
            sink((Table::Customer, row))?;
            sink((
                Table::History,
                vec![
                    Value::Int(c),
                    Value::Int(d),
                    Value::Int(w),
                    Value::Int(d),
                    Value::Int(w),
                    text(now),
                    Value::Dec(1000, 2),
                    text(g.astring(12, 24)),
                ],
            ))?;
        }

        // O_C_ID is a random permutation of the customers (clause 4.3.3.1).
        let mut customers: Vec<i64> = (1..=CUSTOMERS).collect();
        for i in (1..customers.len()).rev() {
            let j = g.int(0, i as i64) as usize;
            customers.swap(i, j);
        }
        let delivered = ORDERS - 900; // orders 1..=2100 delivered, the last 900 new
        for o in 1..=ORDERS {
            let ol_cnt = g.int(5, 15);
            let carrier = if o <= delivered {
                Value::Int(g.int(1, 10))
            } else {
                Value::Null
            };
            sink((
                Table::Orders,
                vec![
                    Value::Int(o),
                    Value::Int(d),
                    Value::Int(w),
                    Value::Int(customers[(o - 1) as usize]),
                    text(now),
                    carrier,
                    Value::Int(ol_cnt),
                    Value::Int(1),
                ],
            ))?;
            for n in 1..=ol_cnt {
                let (delivery, amount) = if o <= delivered {
                    (text(now), Value::Dec(0, 2))
                } else {
                    (Value::Null, Value::Dec(g.int(1, 999_999), 2))
                };
                sink((
                    Table::OrderLine,
                    vec![
                        Value::Int(o),
                        Value::Int(d),
                        Value::Int(w),
                        Value::Int(n),
                        Value::Int(g.int(1, ITEMS)),
                        Value::Int(w),
                        delivery,
                        Value::Int(5),
                        amount,
                        text(g.astring(24, 24)),
                    ],
                ))?;
            }
            if o > delivered {
                sink((
                    Table::NewOrder,
                    vec![Value::Int(o), Value::Int(d), Value::Int(w)],
                ))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_and_copy_text() {
        assert_eq!(decimal(-1000, 2), "-10.00");
        assert_eq!(decimal(1234, 4), "0.1234");
        assert_eq!(decimal(30_000_000, 2), "300000.00");
        assert_eq!(
            copy_line(&[Value::Int(1), Value::Null, text("a\tb\\")]),
            "1\t\\N\ta\\tb\\\\\n"
        );
    }

    #[test]
    fn one_warehouse_has_the_specified_cardinalities() {
        let mut counts = std::collections::HashMap::new();
        let nu = NuConstants::draw(&mut Gen::new(5));
        warehouse::<()>(1, 42, "2026-01-01 00:00:00", &nu, &mut |(t, v)| {
            assert_eq!(v.len(), t.columns(), "{t:?}");
            *counts.entry(t).or_insert(0i64) += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(counts[&Table::Warehouse], 1);
        assert_eq!(counts[&Table::Stock], 100_000);
        assert_eq!(counts[&Table::District], 10);
        assert_eq!(counts[&Table::Customer], 30_000);
        assert_eq!(counts[&Table::History], 30_000);
        assert_eq!(counts[&Table::Orders], 30_000);
        assert_eq!(counts[&Table::NewOrder], 9_000);
        // 5..=15 lines per order: about 10 on average.
        let ol = counts[&Table::OrderLine];
        assert!((290_000..310_000).contains(&ol), "{ol}");
    }
}
