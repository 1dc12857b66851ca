//! Proves the throwaway PostgreSQL harness (`common/pg.rs`) works.

use crate::common::pg::PgCluster;
use std::sync::OnceLock;

/// `(cluster address, postmaster start time)` as seen by the first test that
/// got here; every other test must see the same.
fn same_cluster_as_other_tests(cluster: &'static PgCluster) {
    static FIRST: OnceLock<(usize, String)> = OnceLock::new();
    let started = cluster.query("postgres", "SELECT pg_postmaster_start_time()");
    let seen = (cluster as *const PgCluster as usize, started);
    let first = FIRST.get_or_init(|| seen.clone());
    assert_eq!(*first, seen, "tests in one binary must share one cluster");
}

#[test]
fn cluster_starts_and_answers_queries() {
    let pg = PgCluster::shared();
    same_cluster_as_other_tests(pg);

    let version = pg.query("postgres", "select version()");
    assert!(version.contains("PostgreSQL"), "version(): {version}");

    // Unix socket only, named after the port, real durability settings.
    let socket = pg.socket_dir().join(format!(".s.PGSQL.{}", pg.port()));
    assert!(socket.exists(), "{} missing", socket.display());
    assert_eq!(pg.query("postgres", "show listen_addresses"), "");
    assert_eq!(pg.query("postgres", "show fsync"), "on");
    assert_eq!(pg.query("postgres", "show max_connections"), "100");
    assert_eq!(pg.query("postgres", "select current_user"), "dbscope");
    assert_eq!(
        pg.query("postgres", "show password_encryption"),
        "scram-sha-256"
    );

    // Multi-row, multi-column output is psql -At style.
    assert_eq!(
        pg.query(
            "postgres",
            "select g, g * 2, null from generate_series(1, 3) g"
        ),
        "1|2|\n2|4|\n3|6|"
    );
}

#[test]
fn create_db_gives_fresh_databases() {
    let pg = PgCluster::shared();
    same_cluster_as_other_tests(pg);

    let a = pg.create_db("harness test!");
    let b = pg.create_db("harness test!");
    assert_ne!(a, b);
    assert!(a.starts_with("harness_test_"), "{a}");
    for db in [&a, &b] {
        assert_eq!(pg.query(db, "select current_database()"), *db);
    }
    pg.query(&a, "create table t (x int); insert into t values (1), (2)");
    assert_eq!(pg.query(&a, "select sum(x) from t"), "3");
    assert_eq!(
        pg.query(&b, "select count(*) from pg_tables where tablename = 't'"),
        "0"
    );
}

#[test]
fn wrong_password_fails_authentication() {
    let pg = PgCluster::shared();
    same_cluster_as_other_tests(pg);

    // The right password works through the URI ...
    let mut ok = postgres::Client::connect(&pg.uri("postgres"), postgres::NoTls)
        .expect("right password must connect");
    ok.simple_query("select 1").unwrap();

    // ... a wrong one is rejected by the server (SQLSTATE 28P01).
    let wrong = format!("not-{}", pg.password());
    let err = postgres::Client::connect(&pg.uri_with_password("postgres", &wrong), postgres::NoTls)
        .err()
        .expect("wrong password must not connect");
    let db_err = err
        .as_db_error()
        .unwrap_or_else(|| panic!("expected a server error, got: {err}"));
    assert_eq!(
        db_err.code(),
        &postgres::error::SqlState::INVALID_PASSWORD,
        "{err}"
    );
    assert!(
        db_err.message().contains("password authentication failed"),
        "{err}"
    );
}

#[test]
fn kill_backends_terminates_other_sessions() {
    let pg = PgCluster::shared();
    same_cluster_as_other_tests(pg);

    let db = pg.create_db("kill");
    let mut victim = pg.connect(&db);
    victim.simple_query("select 1").unwrap();
    assert_eq!(pg.kill_backends(&db), 1);
    assert!(
        victim.simple_query("select 1").is_err(),
        "terminated session must fail"
    );
    assert_eq!(pg.kill_backends(&db), 0);
}
