//! One warehouse loaded with COPY into a real PostgreSQL (the CLI tests' throwaway cluster): every
//! consistency condition holds, and broken ones are reported with their warehouse and district.

mod pg;

use std::collections::HashMap;
use std::io::Write;

use dbscope_tpcc::check::CONDITIONS;
use dbscope_tpcc::populate::{copy_line, items, warehouse};
use dbscope_tpcc::random::{Gen, NuConstants};
use dbscope_tpcc::schema::{create_indexes, create_tables};
use dbscope_tpcc::{Dialect, Table, Value, Violation};

fn check(db: &mut postgres::Client) -> Vec<Violation> {
    let mut out = Vec::new();
    for c in CONDITIONS {
        for r in db.query(c.sql, &[]).unwrap() {
            out.push(Violation {
                clause: c.clause,
                warehouse: i64::from(r.get::<_, i32>(0)),
                district: i64::from(r.get::<_, i32>(1)),
                found: r.get(2),
            });
        }
    }
    out
}

#[test]
fn one_warehouse_copied_into_postgres_is_consistent_and_a_break_is_named() {
    let cluster = pg::PgCluster::shared();
    let name = cluster.create_db("tpcc");
    let mut db = cluster.connect(&name);
    for s in create_tables(Dialect::Postgres) {
        db.batch_execute(&s).unwrap();
    }
    let mut text: HashMap<Table, String> = HashMap::new();
    let mut sink = |(t, v): (Table, Vec<Value>)| -> Result<(), ()> {
        text.entry(t).or_default().push_str(&copy_line(&v));
        Ok(())
    };
    items(11, &mut sink).unwrap();
    let nu = NuConstants::draw(&mut Gen::new(11));
    warehouse(1, 11, "2026-12-05 04:00:00", &nu, &mut sink).unwrap();
    for (t, body) in &text {
        let mut w = db.copy_in(&t.copy_sql()).unwrap();
        w.write_all(body.as_bytes()).unwrap();
        w.finish().unwrap();
    }
    for s in create_indexes(Dialect::Postgres) {
        db.batch_execute(&s).unwrap();
    }

    let lines: i64 = db
        .query_one("SELECT count(*) FROM order_line", &[])
        .unwrap()
        .get(0);
    let ol_cnt: i64 = db
        .query_one("SELECT sum(o_ol_cnt) FROM orders", &[])
        .unwrap()
        .get(0);
    assert_eq!(lines, ol_cnt);
    let balance: String = db
        .query_one(
            "SELECT c_balance::text FROM customer WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 1",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(balance, "-10.00");
    assert_eq!(check(&mut db), vec![]);

    db.batch_execute(
        "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 7;
         DELETE FROM new_order WHERE no_w_id = 1 AND no_d_id = 3 AND no_o_id = 2500;
         DELETE FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 9 AND ol_o_id = 10 AND ol_number = 1",
    )
    .unwrap();
    let v = check(&mut db);
    let at: Vec<(&str, i64, i64)> = v
        .iter()
        .map(|v| (v.clause, v.warehouse, v.district))
        .collect();
    assert_eq!(
        at,
        vec![("3.3.2.2", 1, 7), ("3.3.2.3", 1, 3), ("3.3.2.4", 1, 9)],
        "{v:?}"
    );
    assert!(
        v[1].found.contains("max - min + 1 = 900 but 899 rows"),
        "{}",
        v[1]
    );
}
