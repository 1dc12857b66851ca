//! One warehouse built into a real SQLite file from this crate's schema and population: every
//! consistency condition holds, and one broken on purpose is reported with its warehouse and
//! district.

use dbscope_tpcc::check::CONDITIONS;
use dbscope_tpcc::populate::{items, warehouse};
use dbscope_tpcc::random::{Gen, NuConstants};
use dbscope_tpcc::schema::{create_indexes, create_tables};
use dbscope_tpcc::{Dialect, Table, Value, Violation};
use rusqlite::types::ToSqlOutput;
use rusqlite::Connection;

fn bind(v: &Value) -> ToSqlOutput<'_> {
    match v {
        Value::Int(i) => ToSqlOutput::from(*i),
        Value::Dec(..) => ToSqlOutput::from(v.as_f64().unwrap_or(0.0)),
        Value::Text(t) => ToSqlOutput::from(t.as_str()),
        Value::Null => ToSqlOutput::from(rusqlite::types::Null),
    }
}

fn check(db: &Connection) -> Vec<Violation> {
    let mut out = Vec::new();
    for c in CONDITIONS {
        let mut st = db.prepare(c.sql).unwrap();
        let rows = st
            .query_map([], |r| {
                Ok(Violation {
                    clause: c.clause,
                    warehouse: r.get(0)?,
                    district: r.get(1)?,
                    found: r.get(2)?,
                })
            })
            .unwrap();
        out.extend(rows.map(Result::unwrap));
    }
    out
}

#[test]
fn one_warehouse_in_sqlite_is_consistent_and_a_break_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = Connection::open(dir.path().join("tpcc.db")).unwrap();
    for s in create_tables(Dialect::Sqlite) {
        db.execute(&s, []).unwrap();
    }
    let tx = db.transaction().unwrap();
    {
        let mut stmts = std::collections::HashMap::new();
        let mut sink = |(t, v): (Table, Vec<Value>)| -> rusqlite::Result<()> {
            let st = match stmts.entry(t) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(tx.prepare(&t.insert_sql(Dialect::Sqlite))?)
                }
            };
            st.execute(rusqlite::params_from_iter(v.iter().map(bind)))?;
            Ok(())
        };
        items(9, &mut sink).unwrap();
        let nu = NuConstants::draw(&mut Gen::new(9));
        warehouse(1, 9, "2026-12-05 04:00:00", &nu, &mut sink).unwrap();
    }
    tx.commit().unwrap();
    for s in create_indexes(Dialect::Sqlite) {
        db.execute(&s, []).unwrap();
    }

    let n: i64 = db
        .query_row("SELECT count(*) FROM new_order", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 9_000);
    let ytd: f64 = db
        .query_row("SELECT w_ytd FROM warehouse", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ytd, 300_000.0);
    assert_eq!(check(&db), vec![]);

    // The deliberate break: one district's D_NEXT_O_ID moved on.
    db.execute(
        "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 7",
        [],
    )
    .unwrap();
    // And a payment credited to a district but not its warehouse.
    db.execute("UPDATE district SET d_ytd = d_ytd + 5 WHERE d_id = 2", [])
        .unwrap();
    let v = check(&db);
    assert_eq!(v.len(), 2, "{v:?}");
    assert_eq!(v[0].clause, "3.3.2.1");
    assert_eq!((v[0].warehouse, v[0].district), (1, 0));
    assert_eq!(v[1].clause, "3.3.2.2");
    assert_eq!((v[1].warehouse, v[1].district), (1, 7));
    let said = v[1].to_string();
    assert!(said.contains("warehouse 1 district 7"), "{said}");
    assert!(
        said.contains("D_NEXT_O_ID - 1 = 3001, max(O_ID) = 3000"),
        "{said}"
    );
}
