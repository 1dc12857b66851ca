//! TPC-C's build on real targets: a SQLite file and the CLI tests' throwaway PostgreSQL. Built,
//! consistent, reused when the shape matches, refused when it does not, rebuilt with `fresh`, and
//! a broken district named by the checks.

mod pg;

use dbscope_db::{open_target, Target};
use dbscope_lab::workload::tpcc::{build, check, BuildOptions};

fn opts(warehouses: i64, build_sessions: u32, fresh: bool) -> BuildOptions {
    BuildOptions {
        warehouses,
        build_sessions,
        seed: 29,
        fresh,
    }
}

fn rows(b: &dbscope_lab::workload::tpcc::Built, table: &str) -> u64 {
    b.rows
        .iter()
        .find(|(t, _)| *t == table)
        .map_or(0, |(_, n)| *n)
}

fn break_district(target: &dyn Target) {
    let mut s = target.connect().unwrap();
    s.batch("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 7")
        .unwrap();
}

#[test]
fn sqlite_build_is_consistent_reused_and_refused_for_another_shape() {
    let dir = tempfile::tempdir().unwrap();
    let spec = format!("sqlite:{}", dir.path().join("tpcc.db").display());
    let target = open_target(&spec, &[]).unwrap();

    let e = build(target.as_ref(), &opts(0, 1, false)).unwrap_err();
    assert!(e.message.contains("--warehouses 0"), "{e:?}");

    let b = build(target.as_ref(), &opts(1, 4, false)).unwrap();
    assert!(b.built);
    assert_eq!(b.sessions, 1, "SQLite loads with one writer");
    assert_eq!(rows(&b, "item"), 100_000);
    assert_eq!(rows(&b, "stock"), 100_000);
    assert_eq!(rows(&b, "customer"), 30_000);
    assert_eq!(rows(&b, "new_order"), 9_000);
    assert_eq!(check(target.as_ref()).unwrap(), vec![]);

    let again = build(target.as_ref(), &opts(1, 1, false)).unwrap();
    assert!(!again.built, "same shape: reused");
    assert_eq!(again.c_last, b.c_last);

    let e = build(target.as_ref(), &opts(2, 1, false)).unwrap_err();
    assert!(e.message.contains("1 warehouse(s), not 2"), "{e:?}");
    assert!(e.message.contains("--fresh"), "{e:?}");

    break_district(target.as_ref());
    let v = check(target.as_ref()).unwrap();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].to_string().contains(
            "3.3.2.2 (D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)) fails for warehouse 1 district 7"
        ),
        "{}",
        v[0]
    );

    let rebuilt = build(target.as_ref(), &opts(1, 1, true)).unwrap();
    assert!(rebuilt.built);
    assert_eq!(
        check(target.as_ref()).unwrap(),
        vec![],
        "--fresh rebuilt it"
    );
}

#[test]
fn postgres_parallel_copy_build_is_consistent_and_reused() {
    let cluster = pg::PgCluster::shared();
    let db = cluster.create_db("tpcc_build");
    let target = open_target(&cluster.uri(&db), &[]).unwrap();

    // Tables of TPC-C's names that no dbscope build recorded are not dropped by surprise.
    cluster.query(&db, "CREATE TABLE warehouse (w_id int)");
    let e = build(target.as_ref(), &opts(2, 2, false)).unwrap_err();
    assert!(e.message.contains("no recorded dbscope build"), "{e:?}");

    let b = build(target.as_ref(), &opts(2, 2, true)).unwrap();
    assert!(b.built);
    assert_eq!(b.sessions, 2);
    assert_eq!(rows(&b, "item"), 100_000, "ITEM loaded once");
    assert_eq!(rows(&b, "stock"), 200_000);
    assert_eq!(rows(&b, "district"), 20);
    assert_eq!(rows(&b, "orders"), 60_000);
    let in_db: i64 = cluster
        .query(&db, "SELECT count(*) FROM stock")
        .trim()
        .parse()
        .unwrap();
    assert_eq!(in_db, 200_000);
    assert_eq!(check(target.as_ref()).unwrap(), vec![]);

    assert!(!build(target.as_ref(), &opts(2, 2, false)).unwrap().built);

    break_district(target.as_ref());
    let v = check(target.as_ref()).unwrap();
    let at: Vec<_> = v
        .iter()
        .map(|v| (v.clause, v.warehouse, v.district))
        .collect();
    assert_eq!(at, vec![("3.3.2.2", 1, 7)], "{v:?}");
}

/// Issue 29: with one build session on PostgreSQL ITEM was not loaded at all, so every New-Order
/// rolled back; the one loader loads it.
#[test]
fn postgres_single_loader_loads_item() {
    let cluster = pg::PgCluster::shared();
    let db = cluster.create_db("tpcc_one_loader");
    let target = open_target(&cluster.uri(&db), &[]).unwrap();
    let b = build(target.as_ref(), &opts(1, 1, false)).unwrap();
    assert_eq!(b.sessions, 1);
    assert_eq!(rows(&b, "item"), 100_000);
    let in_db: i64 = cluster
        .query(&db, "SELECT count(*) FROM item")
        .trim()
        .parse()
        .unwrap();
    assert_eq!(in_db, 100_000);
}
