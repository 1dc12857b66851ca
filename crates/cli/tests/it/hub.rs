//! `dbscope query` (the data hub, issue 32) on a real PostgreSQL server and real files: TPC-H
//! customer and orders in PostgreSQL joined with lineitem as Parquet gives PostgreSQL's own answer
//! (both tables in it); the filters pushed down cut the rows PostgreSQL sends (the run's counters
//! and the server's pg_stat_statements); bad input fails clearly, and a failed query leaves
//! nothing at --out.

use std::path::Path;

use crate::cli::*;
use crate::common::pg::PgCluster;
use crate::transfer::table_uri;

/// TPC-H Q3's shape: customer and orders from PostgreSQL, lineitem from wherever `lineitem` is.
const Q3: &str = "SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue, \
     o_orderdate, o_shippriority FROM {c} c, {o} o, lineitem l \
     WHERE c.c_mktsegment = 'BUILDING' AND c.c_custkey = o.o_custkey AND l.l_orderkey = o.o_orderkey \
     AND o.o_orderdate < DATE '1995-03-15' AND l.l_shipdate > DATE '1995-03-15' \
     GROUP BY l_orderkey, o_orderdate, o_shippriority \
     ORDER BY revenue DESC, o_orderdate, l_orderkey LIMIT 20";

/// TPC-H Q12's shape: orders from PostgreSQL, lineitem from a file.
const Q12: &str = "SELECT l_shipmode, \
     sum(CASE WHEN o_orderpriority = '1-URGENT' OR o_orderpriority = '2-HIGH' THEN 1 ELSE 0 END) AS high, \
     sum(CASE WHEN o_orderpriority <> '1-URGENT' AND o_orderpriority <> '2-HIGH' THEN 1 ELSE 0 END) AS low \
     FROM orders, lineitem WHERE o_orderkey = l_orderkey AND l_shipmode IN ('MAIL', 'SHIP') \
     AND l_commitdate < l_receiptdate AND l_shipdate < l_commitdate \
     AND l_receiptdate >= DATE '1994-01-01' AND l_receiptdate < DATE '1995-01-01' \
     GROUP BY l_shipmode ORDER BY l_shipmode";

/// SF 0.01 in `dir/data` (.tbl) loaded into `db`, and lineitem as Parquet in `dir/pq`.
fn tpch(pg: &PgCluster, dir: &Path, db: &str) {
    ok(dir, &["tpch", "gen", "--sf", "0.01", "--out", "data", "-q"]);
    ok(
        dir,
        &[
            "tpch", "gen", "--sf", "0.01", "--table", "lineitem", "--format", "parquet", "--out",
            "pq", "-q",
        ],
    );
    ok(
        dir,
        &[
            "tpch",
            "load",
            "data",
            "--target",
            &pg.uri(db),
            "--fresh",
            "-q",
        ],
    );
}

/// A CSV result's lines, each field trimmed (PostgreSQL pads char(n) columns).
fn csv_rows(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::trim).collect::<Vec<_>>().join("|"))
        .collect()
}

fn pg_rows(pg: &PgCluster, db: &str, sql: &str) -> Vec<String> {
    pg.query(db, sql)
        .lines()
        .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>().join("|"))
        .collect()
}

fn counters(run: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(run.join("counters.json")).expect("counters.json");
    serde_json::from_str(&text).expect("counters.json is JSON")
}

/// The `sources` table's row of `table`: (rows, bytes, pushed filters).
fn source_row(run: &Path, table: &str) -> (u64, u64, String) {
    let c = counters(run);
    let sections = c["sections"].as_array().expect("sections");
    let hub = sections
        .iter()
        .find(|s| s["key"] == "hub")
        .expect("hub section");
    let t = hub["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["key"] == "sources")
        .expect("sources table");
    let row = t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[0] == table)
        .unwrap_or_else(|| panic!("no row for {table} in {t}"));
    let num = |v: &serde_json::Value| {
        v.as_u64()
            .or_else(|| v["count"].as_u64())
            .unwrap_or_else(|| panic!("{v}"))
    };
    let text = |v: &serde_json::Value| {
        v.as_str()
            .map(String::from)
            .or_else(|| v["text"].as_str().map(String::from))
            .unwrap_or_default()
    };
    (num(&row[3]), num(&row[4]), text(&row[6]))
}

/// The rows `--explain` says the (first) source table sent.
fn received_rows(explain: &str) -> u64 {
    explain
        .lines()
        .find_map(|l| l.trim().strip_prefix("received: "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no \"received:\" line in {explain}"))
}

fn no_secret(dir: &Path, secret: &str) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            no_secret(&p, secret);
        } else {
            let bytes = std::fs::read(&p).unwrap();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(secret),
                "the password is in {}",
                p.display()
            );
        }
    }
}

#[test]
fn postgres_orders_joined_with_parquet_lineitem_give_postgres_own_answer() {
    let pg = PgCluster::with_statements();
    let db = pg.create_db("hub_q3");
    let dir = tempdir();
    tpch(pg, dir.path(), &db);
    pg.query(&db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    let uri = pg.uri(&db);
    let listed = uri.replacen('?', "?tables=customer,orders&", 1);
    let lineitem = format!(
        "lineitem=file:{}",
        s(&join(dir.path(), "pq/lineitem.parquet"))
    );
    let q3 = Q3.replace("{c}", "pg.customer").replace("{o}", "pg.orders");
    pg.query(&db, "SELECT pg_stat_statements_reset()");
    let pg_src = format!("pg={listed}");
    // Q3 with --explain, its rows to `out`.
    let q3_explained = |out: &str, more: &[&str]| {
        let mut args = vec![
            "query",
            &q3,
            "--source",
            &pg_src,
            "--source",
            &lineitem,
            "--explain",
            "--out",
            out,
        ];
        args.extend_from_slice(more);
        ok(dir.path(), &args)
    };
    let out = q3_explained("q3.csv", &["--run", "on"]);
    // The answer is PostgreSQL's own with all three tables in it.
    let want = pg_rows(
        pg,
        &db,
        &Q3.replace("{c}", "customer").replace("{o}", "orders"),
    );
    assert_eq!(want.len(), 20, "{want:?}");
    assert_eq!(csv_rows(&join(dir.path(), "q3.csv")), want);
    assert!(out.contains("20 rows"), "{out}");
    // --explain: the filters PostgreSQL got, per source table.
    assert!(
        out.contains("\"o_orderdate\" < DATE '1995-03-15'")
            && out.contains("\"c_mktsegment\"::text = 'BUILDING'"),
        "{out}"
    );
    assert!(out.contains("ctid >= '(0,0)'::tid"), "block ranges: {out}");
    // With the catalog's row estimate (after ANALYZE) the scans say how many rows they expect,
    // which DataFusion's join selection reads (PgScanExec in pg.rs).
    pg.query(&db, "ANALYZE customer; ANALYZE orders");
    let out2 = q3_explained("q3b.csv", &[]);
    assert!(
        out2.contains("estimated_rows=15000") && out2.contains("estimated_rows=1500"),
        "{out2}"
    );
    assert_eq!(
        csv_rows(&join(dir.path(), "q3b.csv")),
        csv_rows(&join(dir.path(), "q3.csv"))
    );
    // The server ran those COPY statements (pg_stat_statements keeps utility statements' text).
    let seen = pg.query(
        &db,
        "SELECT count(*) FROM pg_stat_statements WHERE query LIKE 'COPY (SELECT%o_orderdate%<%1995-03-15%'",
    );
    assert_ne!(
        seen,
        "0",
        "{}",
        pg.query(&db, "SELECT query FROM pg_stat_statements")
    );

    // The same query without pushdown: the same answer, every orders row sent.
    ok(
        dir.path(),
        &[
            "query",
            &q3,
            "--source",
            &format!("pg={listed}"),
            "--source",
            &lineitem,
            "--no-pushdown",
            "--scan-connections",
            "1",
            "--out",
            "q3-all.csv",
            "--run",
            "off",
        ],
    );
    assert_eq!(csv_rows(&join(dir.path(), "q3-all.csv")), want);
    let orders: u64 = pg
        .query(&db, "SELECT count(*) FROM orders")
        .parse()
        .unwrap();
    let below: u64 = pg
        .query(
            &db,
            "SELECT count(*) FROM orders WHERE o_orderdate < DATE '1995-03-15'",
        )
        .parse()
        .unwrap();
    let (on_rows, on_bytes, pushed) = source_row(&join(dir.path(), "on"), "pg.orders");
    assert!(counters(&join(dir.path(), "on"))
        .to_string()
        .contains("open_seconds"));
    let (off_rows, off_bytes, _) = source_row(&join(dir.path(), "off"), "pg.orders");
    // The date filter went to the server; the join's run-time filter (below) may cut more.
    assert!(
        on_rows <= below && on_rows > 0,
        "{on_rows} of {below}: {pushed}"
    );
    assert_eq!(off_rows, orders);
    assert!(
        on_rows < off_rows && on_bytes * 2 < off_bytes,
        "{on_bytes} vs {off_bytes}"
    );
    // Recorded as every run: report, compare, HTML; the password nowhere in the runs.
    let report = report_json(dir.path(), &join(dir.path(), "on"));
    event(&report, "query");
    event(&report, "scan:pg.orders");
    ok(dir.path(), &["compare", "on", "off"]);
    ok(dir.path(), &["report", "on", "--html", "on.html"]);
    no_secret(&join(dir.path(), "on"), pg.password());
    let m = manifest(&join(dir.path(), "on"));
    assert!(
        m["workload"]["params"]["plan"]
            .as_str()
            .unwrap()
            .contains("HashJoin"),
        "{m}"
    );

    // Q12: orders as one table of PostgreSQL, lineitem as .tbl (TPC-H's schema known).
    let n_orders = orders;
    let orders = format!("orders={}", table_uri(pg, &db, "orders"));
    let tbl = format!(
        "lineitem=file:{}",
        s(&join(dir.path(), "data/lineitem.tbl"))
    );
    pg.query(&db, "SELECT pg_stat_statements_reset()");
    let q12 = |out: &str, more: &[&str]| {
        let mut args = vec!["query", Q12, "--source", &orders, "--explain", "--out", out];
        args.extend_from_slice(more);
        ok(dir.path(), &args)
    };
    q12("q12.csv", &["--source", &tbl]);
    let want = pg_rows(pg, &db, Q12);
    assert_eq!(want.len(), 2, "{want:?}");
    assert_eq!(csv_rows(&join(dir.path(), "q12.csv")), want);
    // lineitem as Parquet: its statistics put the (filtered) lineitem on the join's build side.
    let explained = q12("q12-pq.csv", &["--source", &lineitem]);
    assert_eq!(csv_rows(&join(dir.path(), "q12-pq.csv")), want);
    // The hash join's run-time filter: orders, on the probe side, is read with the keys of the
    // lineitem rows that passed their filters, so PostgreSQL sends exactly the orders that join
    // (dynamic.rs), the keys as one array constant.
    let joining: u64 = pg
        .query(
            &db,
            "SELECT count(*) FROM orders WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem \
             WHERE l_shipmode IN ('MAIL', 'SHIP') AND l_commitdate < l_receiptdate \
             AND l_shipdate < l_commitdate AND l_receiptdate >= DATE '1994-01-01' \
             AND l_receiptdate < DATE '1995-01-01')",
        )
        .parse()
        .unwrap();
    assert!(
        joining > 16 && joining < n_orders / 10,
        "{joining} of {n_orders}"
    );
    assert_eq!(received_rows(&explained), joining, "{explained}");
    assert!(
        explained.contains("join's run-time filter sent: ")
            && explained.contains(&format!("\"o_orderkey\" IN ({joining} values)")),
        "{explained}"
    );
    let lists = pg.query(
        &db,
        "SELECT count(*) FROM pg_stat_statements \
         WHERE query LIKE 'COPY (SELECT%\"o_orderkey\" = ANY(%::int8[])%'",
    );
    assert_ne!(
        lists,
        "0",
        "{}",
        pg.query(&db, "SELECT query FROM pg_stat_statements")
    );
    // Without pushdown the scan sends nothing of the join: every order comes, same answer.
    let all = q12("q12-all.csv", &["--source", &lineitem, "--no-pushdown"]);
    assert_eq!(received_rows(&all), n_orders, "{all}");
    assert!(!all.contains("run-time filter sent"), "{all}");
    assert_eq!(csv_rows(&join(dir.path(), "q12-all.csv")), want);
    // A TopK (ORDER BY … LIMIT) also hands the scan a run-time filter, one that only tightens
    // as the scan's own rows arrive: the scan does not wait for it, and the answer is the
    // server's.
    let top = "SELECT o_orderkey, o_totalprice FROM orders \
               ORDER BY o_totalprice DESC, o_orderkey LIMIT 5";
    ok(
        dir.path(),
        &["query", top, "--source", &orders, "--out", "top.csv", "-q"],
    );
    assert_eq!(
        csv_rows(&join(dir.path(), "top.csv")),
        pg_rows(pg, &db, top)
    );
    duckdb_half(dir.path(), &uri, &want_q3(pg, &db));
}

fn want_q3(pg: &PgCluster, db: &str) -> Vec<String> {
    pg_rows(
        pg,
        db,
        &Q3.replace("{c}", "customer").replace("{o}", "orders"),
    )
}

/// DuckDB's answer through its postgres extension (customer and orders attached from PostgreSQL,
/// lineitem the same Parquet file). The Python is `$DBSCOPE_DUCKDB_PYTHON` (scripts/test makes a
/// venv with DuckDB 1.5.5 and the extension's PyPI wheel, so it loads without a network) and then
/// the extension must load; without the variable, `python3`'s DuckDB is tried and the half is
/// skipped, saying why, when its extension does not load offline.
fn duckdb_half(dir: &Path, uri: &str, want: &[String]) {
    let required = std::env::var("DBSCOPE_DUCKDB_PYTHON").ok();
    let python = required.clone().unwrap_or_else(|| "python3".into());
    let script = "import duckdb, os\n\
        con = duckdb.connect()\n\
        con.sql('LOAD postgres')\n\
        con.sql(\"ATTACH '\" + os.environ['PG_DSN'] + \"' AS pg (TYPE postgres, READ_ONLY)\")\n\
        con.sql(\"CREATE VIEW lineitem AS SELECT * FROM read_parquet('\" + os.environ['LINEITEM'] + \"')\")\n\
        for r in con.sql(os.environ['QUERY']).fetchall():\n    print('|'.join(str(x) for x in r))\n";
    let probe = std::process::Command::new(&python)
        .args(["-c", "import duckdb; duckdb.sql('LOAD postgres')"])
        .current_dir(dir)
        .output();
    match probe {
        Ok(o) if o.status.success() => {
            let q = Q3
                .replace("{c}", "pg.public.customer")
                .replace("{o}", "pg.public.orders");
            let out = std::process::Command::new(&python)
                .args(["-c", script])
                .env("PG_DSN", uri)
                .env("LINEITEM", join(dir, "pq/lineitem.parquet"))
                .env("QUERY", q)
                .current_dir(dir)
                .output()
                .expect("python3 runs");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let got: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>().join("|"))
                .collect();
            assert_eq!(got, want, "DuckDB's answer");
        }
        Ok(o) if required.is_some() => panic!(
            "DBSCOPE_DUCKDB_PYTHON={python}: its postgres extension does not load: {}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Ok(o) => eprintln!(
            "hub: DuckDB half skipped: its postgres extension does not load offline: {}",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or_default()
        ),
        Err(e) if required.is_some() => panic!("DBSCOPE_DUCKDB_PYTHON={python}: {e}"),
        Err(e) => eprintln!("hub: DuckDB half skipped: no python3: {e}"),
    }
}

#[test]
fn bad_input_is_named_and_a_failed_query_leaves_nothing_at_out() {
    let pg = PgCluster::shared();
    let db = pg.create_db("hub_bad");
    let dir = tempdir();
    pg.query(
        &db,
        "CREATE TABLE t (k bigint, v numeric(10,2)); \
         INSERT INTO t SELECT g, g / 100.0 FROM generate_series(1, 200000) g; \
         CREATE TABLE shapes (id int, p point)",
    );
    let t = format!("t={}", table_uri(pg, &db, "t"));
    // A table the query names and no source gives.
    fails(
        dir.path(),
        &[
            "query",
            "SELECT * FROM nowhere",
            "--source",
            &t,
            "--run",
            "r1",
        ],
        2,
        &["nowhere"],
    );
    assert!(!join(dir.path(), "r1").exists());
    // A source that cannot be reached: named, its password redacted.
    let bad = "u=postgres://dbscope:sekret-pw@127.0.0.1:1/db/t";
    let err = fails(
        dir.path(),
        &["query", "SELECT 1", "--source", bad],
        4,
        &["source u", "127.0.0.1"],
    );
    assert!(!err.contains("sekret-pw"), "{err}");
    // A wrong password: the source named, the password nowhere.
    let wrong =
        table_uri(pg, &db, "t").replacen(&format!(":{}@", pg.password()), ":not-the-pw-42@", 1);
    assert!(wrong.contains("not-the-pw-42"), "{wrong}");
    let err = fails(
        dir.path(),
        &["query", "SELECT 1", "--source", &format!("w={wrong}")],
        4,
        &["source w"],
    );
    assert!(!err.contains("not-the-pw-42"), "{err}");
    // A column of a type the hub cannot map: named with its table.
    fails(
        dir.path(),
        &[
            "query",
            "SELECT id FROM s",
            "--source",
            &format!("s={}", table_uri(pg, &db, "shapes")),
        ],
        4,
        &["table shapes, column p", "type point"],
    );
    // Not a NAME=URI, a file that is not there.
    fails(
        dir.path(),
        &["query", "SELECT 1", "--source", "nothing"],
        2,
        &["NAME=URI"],
    );
    fails(
        dir.path(),
        &["query", "SELECT 1", "--source", "f=file:missing.parquet"],
        3,
        &["missing.parquet"],
    );
    // A query failing while it runs (division by zero at one row, after rows were written):
    // exit 1, the run failed, nothing at --out and no partial file.
    let out = run(
        dir.path(),
        &[
            "query",
            "SELECT k, 1 / (k - 150000) AS x FROM t",
            "--source",
            &t,
            "--out",
            "x.parquet",
            "--run",
            "r2",
            "--scan-connections",
            "2",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("nothing was written at --out") && stderr.contains("zero"),
        "{stderr}"
    );
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("x.parquet"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(manifest(&join(dir.path(), "r2"))["outcome"], "failed");
}

#[test]
fn sqlite_tbl_files_and_runs_are_tables_too() {
    let dir = tempdir();
    let db = join(dir.path(), "x.db");
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch(
        "CREATE TABLE kv (k INTEGER NOT NULL, v TEXT, w REAL); \
         INSERT INTO kv VALUES (1, 'a', 0.5), (2, NULL, 1.5), (3, 'c', NULL);",
    )
    .unwrap();
    drop(c);
    ok(
        dir.path(),
        &[
            "tpch", "gen", "--sf", "0.01", "--table", "nation", "--out", "data", "-q",
        ],
    );
    let out = ok(
        dir.path(),
        &[
            "query",
            "SELECT count(*) AS n, sum(k) AS ks, count(v) AS vs, sum(w) AS ws, \
             (SELECT count(*) FROM nation WHERE n_regionkey = 1) AS america FROM s.kv",
            "--source",
            &format!("s=sqlite:{}", s(&db)),
            "--source",
            &format!("nation=file:{}", s(&join(dir.path(), "data"))),
            "--out",
            "a.csv",
            "--run",
            "first",
        ],
    );
    assert!(out.contains("1 rows"), "{out}");
    assert_eq!(
        std::fs::read_to_string(join(dir.path(), "a.csv")).unwrap(),
        "n,ks,vs,ws,america\n3,6,2,2.0,5\n"
    );
    // The first query's run, as a table: its events by name.
    ok(
        dir.path(),
        &[
            "query",
            "SELECT event, count(*) AS n FROM r GROUP BY event ORDER BY event",
            "--source",
            "r=run:first",
            "--out",
            "events.csv",
            "-q",
        ],
    );
    let events = std::fs::read_to_string(join(dir.path(), "events.csv")).unwrap();
    for e in ["execute,1", "output,1", "plan,1", "query,1", "scan:s.kv,1"] {
        assert!(events.contains(e), "{e} in {events}");
    }

    // Filters pushed to SQLite: integer and text comparisons (text ordered as bytes, as in
    // DataFusion) go into the WHERE, and only the matching rows are read; a table that declares a
    // collation keeps its text filters in DataFusion. The answers are those without pushdown.
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch(
        "CREATE TABLE o (k INTEGER, d TEXT, x REAL);          CREATE TABLE ci (k INTEGER, name TEXT COLLATE NOCASE);          INSERT INTO ci VALUES (1, 'abc'), (2, 'ABC'), (3, 'b');",
    )
    .unwrap();
    c.execute_batch("BEGIN").unwrap();
    for i in 0..1000 {
        c.execute(
            "INSERT INTO o VALUES (?1, ?2, ?3)",
            rusqlite::params![
                i,
                format!("1995-{:02}-{:02}", i % 12 + 1, i % 28 + 1),
                i as f64 / 3.0
            ],
        )
        .unwrap();
    }
    c.execute_batch("COMMIT").unwrap();
    drop(c);
    let want_o: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row(
            "SELECT count(*) FROM o WHERE k >= 100 AND k < 600 AND d >= '1995-06-01' AND x > 50",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let src = format!("s=sqlite:{}", s(&db));
    let q = "SELECT count(*) AS n, sum(k) AS ks FROM s.o              WHERE k >= 100 AND k < 600 AND d >= '1995-06-01' AND x > 50";
    let pushed = ok(
        dir.path(),
        &[
            "query",
            q,
            "--source",
            &src,
            "--explain",
            "--out",
            "p.csv",
            "--run",
            "p",
        ],
    );
    assert!(
        pushed.contains(
            "filters pushed: (\"k\" >= 100) AND (\"k\" < 600) AND (\"d\" >= '1995-06-01')"
        ),
        "{pushed}"
    );
    // The real's filter is DataFusion's.
    assert!(pushed.contains("FilterExec: x@1 > 50"), "{pushed}");
    let read = received_rows(&pushed);
    let narrowed: u64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row(
            "SELECT count(*) FROM o WHERE k >= 100 AND k < 600 AND d >= '1995-06-01'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(read, narrowed, "{pushed}");
    ok(
        dir.path(),
        &[
            "query",
            q,
            "--source",
            &src,
            "--no-pushdown",
            "--out",
            "np.csv",
            "-q",
        ],
    );
    let answer = std::fs::read_to_string(join(dir.path(), "p.csv")).unwrap();
    assert_eq!(
        answer,
        std::fs::read_to_string(join(dir.path(), "np.csv")).unwrap()
    );
    assert!(answer.starts_with(&format!("n,ks\n{want_o},")), "{answer}");
    // NOCASE: 'abc' = 'ABC' in SQLite, not in DataFusion; the integer filter still goes.
    let out = ok(
        dir.path(),
        &[
            "query",
            "SELECT k FROM s.ci WHERE name = 'abc' AND k > 0 ORDER BY k",
            "--source",
            &src,
            "--explain",
            "--out",
            "ci.csv",
        ],
    );
    assert!(out.contains("filters pushed: (\"k\" > 0)"), "{out}");
    assert!(out.contains("FilterExec: name@1 = abc"), "{out}");
    assert_eq!(
        std::fs::read_to_string(join(dir.path(), "ci.csv")).unwrap(),
        "k\n1\n"
    );
}

#[test]
fn values_of_every_mapped_type_come_through_and_limit_is_pushed() {
    let pg = PgCluster::shared();
    let db = pg.create_db("hub_types");
    let dir = tempdir();
    // Awkward text on purpose: empty strings, NULLs, `\N` (COPY's usual NULL marker), the byte 0x01
    // (the NULL marker of the hub's CSV COPY before binary), separators, quotes, newlines, padding.
    pg.query(
        &db,
        "CREATE TABLE t (k bigint NOT NULL, v text, b bool, ts timestamptz, d date, n numeric(12,2), \
         f float8, c char(5), u uuid, i int2, w varchar(10), i4 int4, t2 timestamp); \
         INSERT INTO t SELECT g, \
           CASE g % 5 WHEN 0 THEN NULL WHEN 1 THEN '' WHEN 2 THEN 'a,b \"q\"' WHEN 3 THEN E'x\\ny' \
           ELSE CASE WHEN g % 10 = 4 THEN '\\N' ELSE 'é' END END, \
           CASE WHEN g % 3 = 0 THEN NULL ELSE g % 2 = 0 END, \
           timestamptz '2026-01-01 00:00:00+02' + g * interval '1 minute 0.5 second', \
           date '2000-01-01' + g, (g * 7 % 100000) / 100.0 - 300, g / 4.0, \
           CASE WHEN g % 2 = 0 THEN 'ab' WHEN g % 3 = 0 THEN ' a b' END, md5(g::text)::uuid, (g % 30000)::int2, \
           CASE g % 4 WHEN 0 THEN chr(1) WHEN 1 THEN NULL ELSE 'w' || g END, g - 25000, \
           timestamp '1999-12-31 23:00:00' + g * interval '1 hour' \
         FROM generate_series(1, 50000) g",
    );
    let src = format!("t={}", table_uri(pg, &db, "t"));
    let agg = "SELECT count(*), count(v), sum(CASE WHEN v = '' THEN 1 ELSE 0 END), sum(length(v)), \
               sum(CASE WHEN b THEN 1 ELSE 0 END), count(b), \
               min(ts) = TIMESTAMPTZ '2025-12-31 22:01:00.5+00', max(d), sum(n), CAST(sum(f) * 4 AS BIGINT), \
               sum(CASE WHEN c = 'ab' THEN 1 ELSE 0 END), sum(length(c)), count(c), \
               sum(CASE WHEN c = ' a b' THEN 1 ELSE 0 END), count(DISTINCT u), sum(i), count(w), \
               sum(CASE WHEN w = chr(1) THEN 1 ELSE 0 END), sum(i4), min(i4), \
               max(t2) = TIMESTAMP '2005-09-14 07:00:00', min(t2) = TIMESTAMP '2000-01-01 00:00:00' FROM t";
    let pg_agg = agg.replace("TIMESTAMPTZ", "timestamptz");
    ok(
        dir.path(),
        &["query", agg, "--source", &src, "--out", "a.csv", "-q"],
    );
    let got = csv_rows(&join(dir.path(), "a.csv"));
    let want = pg_rows(pg, &db, &pg_agg);
    // PostgreSQL's text of the same values: t for true, float sums to 15 digits.
    let norm = |r: &str| {
        r.split('|')
            .map(|v| match v {
                "t" => "true",
                "f" => "false",
                v => v,
            })
            .collect::<Vec<_>>()
            .join("|")
    };
    assert_eq!(
        got.iter().map(|r| norm(r)).collect::<Vec<_>>(),
        want.iter().map(|r| norm(r)).collect::<Vec<_>>()
    );
    // A boolean column as a whole condition is pushed as itself (it was once sent as
    // `"b"::text`, which PostgreSQL refuses in a WHERE).
    let out = ok(
        dir.path(),
        &[
            "query",
            "SELECT count(*) AS n FROM t WHERE b AND k > 10",
            "--source",
            &src,
            "--explain",
            "--out",
            "b.csv",
        ],
    );
    assert!(out.contains("filters pushed: \"b\""), "{out}");
    assert_eq!(
        csv_rows(&join(dir.path(), "b.csv")),
        pg_rows(pg, &db, "SELECT count(*) FROM t WHERE b AND k > 10")
    );

    // LIMIT with a pushed filter goes to the server; with --sources from a file.
    std::fs::write(
        join(dir.path(), "hub.toml"),
        format!("[sources]\nt = \"{}\"\n", table_uri(pg, &db, "t")),
    )
    .unwrap();
    let out = ok(
        dir.path(),
        &[
            "query",
            "SELECT k FROM t WHERE k > 100 LIMIT 5",
            "--sources",
            "hub.toml",
            "--explain",
            "--scan-connections",
            "2",
            "--run",
            "lim",
        ],
    );
    assert!(
        out.contains("limit pushed: 5") && out.contains("LIMIT 5"),
        "{out}"
    );
    assert!(out.contains("5 rows"), "{out}");
    let (rows, _, pushed) = source_row(&join(dir.path(), "lim"), "t");
    assert_eq!(pushed, "(\"k\" > 100)");
    assert!(rows <= 10, "at most 5 rows per connection: {rows}");
    // Every table of a schema (public by default), as NAME.table; a view too (one connection).
    pg.query(&db, "CREATE VIEW big AS SELECT k FROM t WHERE k > 49990");
    let out = ok(
        dir.path(),
        &[
            "query",
            "SELECT count(*) AS n, (SELECT count(*) FROM pg.big) AS b FROM pg.t",
            "--source",
            &format!("pg={}", pg.uri(&db)),
            "--explain",
        ],
    );
    assert!(out.contains("| 50000 | 10 |"), "{out}");
    assert!(out.contains("one connection: relkind"), "{out}");
    // A value Arrow cannot hold: the row and the column named, the run failed, nothing at --out.
    pg.query(
        &db,
        "CREATE TABLE odd (k int, d date, n numeric(6,2)); \
         INSERT INTO odd VALUES (1, '2020-01-01', 1.5), (2, 'infinity', 2), (3, '2020-01-03', 'NaN')",
    );
    let odd = format!("odd={}", table_uri(pg, &db, "odd"));
    for (q, needles) in [
        ("SELECT k, d FROM odd", ["row 2, column d", "infinity"]),
        ("SELECT k, n FROM odd", ["row 3, column n", "NaN"]),
    ] {
        let o = dbscope(dir.path())
            .args([
                "query",
                q,
                "--source",
                &odd,
                "--scan-connections",
                "1",
                "--out",
                "odd.csv",
                "-q",
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            needles.iter().all(|n| err.contains(n))
                && err.contains("table odd partition 0")
                && !err.contains("protocol error")
                && !err.contains("panicked")
                && !err.contains(pg.password()),
            "{err}"
        );
        assert!(!join(dir.path(), "odd.csv").exists());
    }
    // A sources file that is not TOML: the file and line.
    std::fs::write(
        join(dir.path(), "bad.toml"),
        "[sources]\nt = postgres://x:pw@h/db\n",
    )
    .unwrap();
    let err = fails(
        dir.path(),
        &["query", "SELECT 1", "--sources", "bad.toml"],
        3,
        &["bad.toml", "line 2"],
    );
    assert!(!err.contains(":pw@"), "{err}");
}

/// A scan connection killed mid-COPY: the query fails (exit 1) naming the source, table and
/// partition, the run is kept with that partition's error, nothing at --out.
#[test]
fn a_scan_connection_killed_mid_query_fails_the_run_and_writes_nothing() {
    use std::time::{Duration, Instant};
    let pg = PgCluster::shared();
    let db = pg.create_db("hub_kill");
    pg.query(
        &db,
        "CREATE TABLE t (k bigint, v text); \
         INSERT INTO t SELECT g, repeat('x', 40) FROM generate_series(1, 1000000) g",
    );
    let dir = tempdir();
    let child = dbscope(dir.path())
        .args([
            "query",
            "SELECT k, v FROM t",
            "--source",
            &format!("t={}", table_uri(pg, &db, "t")),
            "--out",
            "all.parquet",
            "--run",
            "r",
            "--show",
            "1",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut client = pg.connect("postgres");
    let started = Instant::now();
    let mut killed = false;
    while started.elapsed() < Duration::from_secs(60) {
        let rows = client
            .query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = $1 AND application_name = 'dbscope/hub/1' \
                   AND state = 'active' AND query LIKE 'COPY%'",
                &[&db],
            )
            .unwrap();
        if rows.iter().any(|r| r.get::<_, bool>(0)) {
            killed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        killed,
        "partition 1's COPY was never seen running; dbscope said: {err}"
    );
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("table t partition 1") && !err.contains("panicked"),
        "{err}"
    );
    assert!(!err.contains(pg.password()), "{err}");
    assert!(
        !join(dir.path(), "all.parquet").exists()
            && !join(dir.path(), ".all.parquet.partial").exists()
    );
    let m = manifest(&join(dir.path(), "r"));
    assert_eq!(m["outcome"], "failed");
    let c = counters(&join(dir.path(), "r"));
    assert!(c.to_string().contains("partition 1"), "{c}");
}

/// Ctrl-C (SIGINT) while the scans run: the run ends interrupted (exit 130), nothing at --out and
/// no partial file; `count(*)` (no column read at all) counts every row.
#[test]
fn ctrl_c_interrupts_the_query_and_count_star_reads_no_column() {
    use std::time::{Duration, Instant};
    let pg = PgCluster::shared();
    let db = pg.create_db("hub_int");
    pg.query(
        &db,
        "CREATE TABLE t (k bigint, v text); \
         INSERT INTO t SELECT g, repeat('y', 40) FROM generate_series(1, 1000000) g",
    );
    let dir = tempdir();
    let src = format!("t={}", table_uri(pg, &db, "t"));
    let out = ok(
        dir.path(),
        &[
            "query",
            "SELECT count(*) AS n FROM t",
            "--source",
            &src,
            "--explain",
        ],
    );
    assert!(
        out.contains("1000000") && out.contains("SELECT 1 FROM"),
        "{out}"
    );
    let child = dbscope(dir.path())
        .args([
            "query",
            "SELECT k, v FROM t ORDER BY v, k",
            "--source",
            &src,
            "--out",
            "o.csv",
            "--run",
            "r",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut client = pg.connect("postgres");
    let started = Instant::now();
    let mut seen = false;
    while started.elapsed() < Duration::from_secs(60) && !seen {
        let n: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 \
                 AND application_name LIKE 'dbscope/hub/%' AND query LIKE 'COPY%'",
                &[&db],
            )
            .unwrap()
            .get(0);
        seen = n > 0;
        std::thread::sleep(Duration::from_millis(2));
    }
    // SAFETY: the child's pid, which this test started and has not waited for.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(rc, 0);
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(seen, "no scan was seen running: {err}");
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(
        err.contains("interrupted") && err.contains("nothing was written at --out"),
        "{err}"
    );
    assert!(!join(dir.path(), "o.csv").exists() && !join(dir.path(), ".o.csv.partial").exists());
    assert_eq!(manifest(&join(dir.path(), "r"))["outcome"], "interrupted");
}

/// Part 5: Q12 as a dataflow (filter lineitem, then join, project, group, order), run step by step
/// beside the same question in SQL: the same answer; each step an event with its rows, the filter's
/// far fewer than the load's; a bad line and an unknown column named with their line.
#[test]
fn a_dataflow_runs_step_by_step_and_answers_as_the_sql() {
    let dir = tempdir();
    for t in ["orders", "lineitem"] {
        ok(
            dir.path(),
            &[
                "tpch", "gen", "--sf", "0.01", "--table", t, "--out", "data", "-q",
            ],
        );
    }
    let li = format!(
        "lineitem=file:{}",
        s(&join(dir.path(), "data/lineitem.tbl"))
    );
    let or = format!("orders=file:{}", s(&join(dir.path(), "data/orders.tbl")));
    std::fs::write(
        join(dir.path(), "q12.dataflow"),
        "# TPC-H Q12 with lineitem filtered before the join\n\
         l = load lineitem\n\
         f = filter l by l_shipmode IN ('MAIL', 'SHIP') AND l_commitdate < l_receiptdate \
           AND l_shipdate < l_commitdate AND l_receiptdate >= DATE '1994-01-01' \
           AND l_receiptdate < DATE '1995-01-01'\n\
         o = load orders\n\
         j = join f by l_orderkey, o by o_orderkey   # keys on each side\n\
         p = project j l_shipmode, \
           CASE WHEN o_orderpriority = '1-URGENT' OR o_orderpriority = '2-HIGH' THEN 1 ELSE 0 END AS high, \
           CASE WHEN o_orderpriority <> '1-URGENT' AND o_orderpriority <> '2-HIGH' THEN 1 ELSE 0 END AS low\n\
         g = group p by l_shipmode aggregate sum(high) AS high, sum(low) AS low\n\
         s = order g by l_shipmode\n",
    )
    .unwrap();
    ok(
        dir.path(),
        &[
            "query",
            "--plan",
            "q12.dataflow",
            "--source",
            &li,
            "--source",
            &or,
            "--out",
            "df.csv",
            "--run",
            "df",
        ],
    );
    ok(
        dir.path(),
        &[
            "query", Q12, "--source", &li, "--source", &or, "--out", "sql.csv", "-q",
        ],
    );
    let df = std::fs::read_to_string(join(dir.path(), "df.csv")).unwrap();
    assert_eq!(
        df,
        std::fs::read_to_string(join(dir.path(), "sql.csv")).unwrap()
    );
    assert_eq!(df.lines().count(), 3, "{df}");
    let report = report_json(dir.path(), &join(dir.path(), "df"));
    for st in [
        "step:l", "step:f", "step:o", "step:j", "step:p", "step:g", "step:s",
    ] {
        event(&report, st);
    }
    // The steps' rows, asked of the run itself: the filter kept a small share of lineitem.
    ok(
        dir.path(),
        &[
            "query",
            "SELECT event, rows FROM r WHERE event IN ('step:l', 'step:f') ORDER BY event",
            "--source",
            "r=run:df",
            "--out",
            "steps.csv",
            "-q",
        ],
    );
    let steps = std::fs::read_to_string(join(dir.path(), "steps.csv")).unwrap();
    let n = |ev: &str| -> u64 {
        steps
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{ev},")))
            .unwrap_or_else(|| panic!("{ev} in {steps}"))
            .parse()
            .unwrap()
    };
    assert_eq!(n("step:l"), 60175);
    assert!(n("step:f") * 20 < n("step:l"), "{steps}");
    assert_eq!(
        manifest(&join(dir.path(), "df"))["workload"]["params"]["dataflow"],
        true
    );
    // Bad lines: named with the file and line, before any run.
    std::fs::write(
        join(dir.path(), "bad.dataflow"),
        "l = load lineitem\nj = join l by l_orderkey\n",
    )
    .unwrap();
    fails(
        dir.path(),
        &[
            "query",
            "--plan",
            "bad.dataflow",
            "--source",
            &li,
            "--run",
            "b",
        ],
        2,
        &["bad.dataflow line 2", "two inputs"],
    );
    std::fs::write(
        join(dir.path(), "col.dataflow"),
        "l = load lineitem\n\nf = filter l by l_nothing > 1\n",
    )
    .unwrap();
    fails(
        dir.path(),
        &[
            "query",
            "--plan",
            "col.dataflow",
            "--source",
            &li,
            "--run",
            "b",
        ],
        2,
        &["col.dataflow line 3: step f", "l_nothing"],
    );
    assert!(!join(dir.path(), "b").exists());
}

/// Part 4: the same queries as a job on a Ballista cluster (a scheduler and two executors of this
/// binary): PostgreSQL's tables staged by their scan partitions with the filters pushed, lineitem
/// read by the executors as Parquet and as `.tbl` — the answers are the in-process engine's and
/// PostgreSQL's own.
#[cfg(feature = "cluster")]
#[test]
fn q3_and_q12_on_a_ballista_cluster_answer_as_the_local_engine_and_postgres() {
    let pg = PgCluster::shared();
    let db = pg.create_db("hub_ballista");
    let dir = tempdir();
    tpch(pg, dir.path(), &db);
    let cluster = crate::cluster::start_cluster(dir.path(), "2", &[], &[]);
    let uri = pg.uri(&db);
    let listed = uri.replacen('?', "?tables=customer,orders&", 1);
    let pq = format!(
        "lineitem=file:{}",
        s(&join(dir.path(), "pq/lineitem.parquet"))
    );
    let q3 = Q3.replace("{c}", "pg.customer").replace("{o}", "pg.orders");
    let sources = ["--source", &format!("pg={listed}"), "--source", &pq];
    let mut local = vec!["query", &q3, "--out", "local.csv", "--run", "local", "-q"];
    local.extend_from_slice(&sources);
    ok(dir.path(), &local);
    let mut remote = vec![
        "query",
        &q3,
        "--engine",
        "ballista",
        "--scheduler",
        &cluster.url,
        "--explain",
        "--scan-connections",
        "4",
        "--out",
        "cluster.csv",
        "--run",
        "runs/cluster",
    ];
    remote.extend_from_slice(&sources);
    let out = ok(dir.path(), &remote);
    let want = pg_rows(
        pg,
        &db,
        &Q3.replace("{c}", "customer").replace("{o}", "orders"),
    );
    assert_eq!(want.len(), 20, "{want:?}");
    assert_eq!(csv_rows(&join(dir.path(), "local.csv")), want);
    assert_eq!(csv_rows(&join(dir.path(), "cluster.csv")), want);
    // It ran on the cluster, and PostgreSQL got the pushed filters in its staging scans.
    assert!(out.contains("DistributedQueryExec"), "{out}");
    assert!(out.contains("\"o_orderdate\" < DATE '1995-03-15'"), "{out}");
    let run = join(dir.path(), "runs/cluster");
    let m = manifest(&run);
    assert_eq!(m["workload"]["params"]["engine"], "ballista", "{m}");
    assert_eq!(m["workload"]["params"]["scheduler"], cluster.url.as_str());
    // Each table staged (one phase) by its four scan partitions, rows as PostgreSQL counts them.
    let csv = join(dir.path(), "events.csv");
    ok(dir.path(), &["export", s(&run), "-o", s(&csv)]);
    let events = std::fs::read_to_string(&csv).unwrap();
    let count = |name: &str| {
        events
            .lines()
            .filter(|l| l.split(',').any(|f| f == name))
            .count()
    };
    assert_eq!(count("stage:pg.orders"), 1, "{events}");
    assert_eq!(count("stage:pg.customer"), 1, "{events}");
    assert_eq!(count("scan:pg.orders"), 4, "{events}");
    let (rows, _, pushed) = source_row(&run, "pg.orders");
    let filtered: u64 = pg
        .query(
            &db,
            "SELECT count(*) FROM orders WHERE o_orderdate < DATE '1995-03-15'",
        )
        .parse()
        .unwrap();
    assert_eq!(rows, filtered, "staged orders rows");
    assert!(pushed.contains("1995-03-15"), "{pushed}");
    // The stage directory is gone with the query.
    let left: Vec<_> = std::fs::read_dir(join(dir.path(), "runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert!(
        left.contains(&"cluster".to_string())
            && !left.iter().any(|f| f.starts_with(".dbscope-stage")),
        "{left:?}"
    );

    // Q12 with lineitem as TPC-H .tbl files, which the executors read as CSV.
    let tbl = format!(
        "lineitem=file:{}",
        s(&join(dir.path(), "data/lineitem.tbl"))
    );
    let orders = format!("orders={}", table_uri(pg, &db, "orders"));
    ok(
        dir.path(),
        &[
            "query",
            Q12,
            "--source",
            &orders,
            "--source",
            &tbl,
            "--engine",
            "ballista",
            "--scheduler",
            &cluster.url,
            "--out",
            "q12.csv",
            "--run",
            "runs/q12",
            "-q",
        ],
    );
    let want = pg_rows(pg, &db, Q12);
    assert_eq!(want.len(), 2, "{want:?}");
    assert_eq!(csv_rows(&join(dir.path(), "q12.csv")), want);

    // A scheduler that does not answer: named, before any run; --engine ballista needs one.
    fails(
        dir.path(),
        &[
            "query",
            Q12,
            "--source",
            &orders,
            "--source",
            &tbl,
            "--engine",
            "ballista",
            "--scheduler",
            "df://127.0.0.1:1",
            "--run",
            "runs/none",
        ],
        4,
        &["127.0.0.1:1", "cannot be reached"],
    );
    assert!(!join(dir.path(), "runs/none").exists());
    fails(
        dir.path(),
        &["query", Q12, "--source", &tbl, "--engine", "ballista"],
        2,
        &["--scheduler"],
    );

    // Ctrl-C while the job runs: the run ends interrupted and the job is cancelled on the
    // scheduler, which would otherwise run it to its end.
    let addr = cluster.url.trim_start_matches("df://").to_string();
    let jobs = || -> Vec<serde_json::Value> {
        use std::io::{Read, Write};
        let mut c = std::net::TcpStream::connect(&addr).unwrap();
        write!(
            c,
            "GET /api/jobs HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut r = String::new();
        c.read_to_string(&mut r).unwrap();
        let body = r.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        // Chunked or not: the JSON array is between the first '[' and the last ']'.
        let (a, b) = (body.find('[').unwrap(), body.rfind(']').unwrap());
        serde_json::from_str(&body[a..=b]).unwrap_or_else(|e| panic!("{e}: {body}"))
    };
    let before = jobs().len();
    let child = dbscope(dir.path())
        .args([
            "query",
            "SELECT count(*) FROM lineitem a JOIN lineitem b ON a.l_quantity < b.l_quantity",
            "--source",
            &pq,
            "--engine",
            "ballista",
            "--scheduler",
            &cluster.url,
            "--run",
            "runs/int",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let running = loop {
        let all = jobs();
        if let Some(j) = all.iter().skip(before).find(|j| j["status"] == "Running") {
            break j["job_id"].as_str().unwrap().to_string();
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the job never ran: {all:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // SAFETY: the child's pid, which this test started and has not waited for.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(rc, 0);
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(
        err.contains(&format!("job {running} cancelled on the scheduler")),
        "{err}"
    );
    assert_eq!(
        manifest(&join(dir.path(), "runs/int"))["outcome"],
        "interrupted"
    );
    let after = jobs();
    let job = after
        .iter()
        .find(|j| j["job_id"] == running.as_str())
        .unwrap();
    assert_ne!(job["status"], "Running", "{job}");
    drop(cluster);
}

/// MariaDB tables as sources (part 1, now that the target exists): joined with a CSV file, the
/// answer is MariaDB's own with both tables in it; integer, decimal and date filters go into the
/// WHERE and only the matching rows are read, text filters stay in DataFusion (MariaDB's default
/// collation ignores case); a column of a type with no mapping is named; the password is in no
/// file.
#[test]
fn mariadb_tables_join_files_with_their_filters_pushed() {
    let my = crate::common::mariadb::MariaDb::shared();
    let db = my.create_db("hub_my");
    let dir = tempdir();
    let mut rows = Vec::new();
    let mut csv = String::from("k,qty\n");
    let mut lines = Vec::new();
    for i in 1..=600 {
        let prio = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED"][i % 4];
        let comment = if i % 7 == 0 {
            "NULL".to_string()
        } else {
            format!("'c{i}'")
        };
        rows.push(format!(
            "({i}, DATE '1994-01-01' + INTERVAL {} DAY, {}.{:02}, '{prio}', {comment})",
            i * 3 % 700,
            1000 + i * 37 % 5000,
            i % 100
        ));
        for j in 0..(i % 3) {
            csv.push_str(&format!("{i},{}\n", j + i % 11));
            lines.push(format!("({i}, {})", j + i % 11));
        }
    }
    my.query(
        &db,
        &format!(
            "CREATE TABLE orders (o_orderkey INT PRIMARY KEY, o_orderdate DATE NOT NULL, \
             o_totalprice DECIMAL(15,2) NOT NULL, o_orderpriority CHAR(15) NOT NULL, \
             o_comment VARCHAR(79)); INSERT INTO orders VALUES {}; \
             CREATE TABLE f (k INT, qty INT); INSERT INTO f VALUES {}; \
             CREATE TABLE g (id INT, b BIT(3))",
            rows.join(", "),
            lines.join(", ")
        ),
    );
    std::fs::write(join(dir.path(), "f.csv"), csv).unwrap();
    let uri = my.uri(&db);
    let src = format!("m={}", uri.replacen('?', "?tables=orders&", 1));
    let file = format!("f=file:{}", s(&join(dir.path(), "f.csv")));
    let q = "SELECT o_orderpriority, count(*) AS n, sum(o_totalprice) AS total, sum(qty) AS q \
             FROM {o} JOIN f ON o_orderkey = k \
             WHERE o_orderdate >= DATE '1994-06-01' AND o_orderkey < 500 \
             AND o_totalprice > 1500.50 AND o_orderpriority <> '2-HIGH' \
             GROUP BY o_orderpriority ORDER BY o_orderpriority";
    let out = ok(
        dir.path(),
        &[
            "query",
            &q.replace("{o}", "m.orders"),
            "--source",
            &src,
            "--source",
            &file,
            "--explain",
            "--out",
            "my.csv",
            "--run",
            "my",
        ],
    );
    let want: Vec<String> = my
        .query(&db, &q.replace("{o}", "orders"))
        .lines()
        .map(|l| l.replace('\t', "|"))
        .collect();
    assert_eq!(want.len(), 3, "{want:?}");
    assert_eq!(csv_rows(&join(dir.path(), "my.csv")), want);
    assert!(
        out.contains(
            "filters pushed: (`o_orderdate` >= DATE '1994-06-01') AND (`o_orderkey` < 500) \
             AND (`o_totalprice` > 1500.50)"
        ),
        "{out}"
    );
    // Text compares under the column's collation in MariaDB ('2-high' = '2-HIGH' by default):
    // DataFusion's filter.
    assert!(out.contains("FilterExec: o_orderpriority@"), "{out}");
    let read = received_rows(&out);
    let narrowed: u64 = my
        .query(
            &db,
            "SELECT count(*) FROM orders WHERE o_orderdate >= DATE '1994-06-01' \
             AND o_orderkey < 500 AND o_totalprice > 1500.50",
        )
        .parse()
        .unwrap();
    assert_eq!(read, narrowed, "{out}");
    assert!(
        out.contains("in the source's snapshot (MariaDB/MySQL)"),
        "{out}"
    );
    // Every table of the database as m.t: a type with no mapping is named with its column.
    fails(
        dir.path(),
        &[
            "query",
            "SELECT count(*) FROM m.g",
            "--source",
            &format!("m={uri}"),
            "--run",
            "g",
        ],
        4,
        &["table g: column b: type bit(3) cannot be mapped"],
    );
    assert!(!join(dir.path(), "g").exists());
    no_secret(dir.path(), my.password());
}
