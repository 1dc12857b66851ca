//! `dbscope transfer` (issue 15 part 3) on a real PostgreSQL server: a 1,000,000-row table out to
//! files with 4 mappers and back into an empty table (same rows, same checksum); a mapper whose
//! connection is killed fails the run and leaves no file that looks complete.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::cli::*;
use crate::common::pg::PgCluster;

const SCHEMA: &str = "CREATE TABLE t (id bigint PRIMARY KEY, name text, amount numeric(12,2), \
                      note text, at timestamptz)";

/// The table's URI for `transfer`: `postgres://…/DB/TABLE?…`.
pub(crate) fn table_uri(pg: &PgCluster, db: &str, table: &str) -> String {
    pg.uri(db)
        .replacen(&format!("/{db}?"), &format!("/{db}/{table}?"), 1)
}

/// An independent digest of the whole table (not the one `transfer` uses): md5 of every row's
/// text in key order.
fn digest(pg: &PgCluster, db: &str) -> String {
    pg.query(
        db,
        "SELECT count(*) || ':' || md5(string_agg(t::text, E'\\n' ORDER BY id)) FROM t",
    )
}

fn fill(pg: &PgCluster, db: &str, rows: u64) {
    pg.query(db, SCHEMA);
    // Awkward values on purpose: delimiters, quotes, backslashes, newlines, NULLs, negatives.
    pg.query(
        db,
        &format!(
            "INSERT INTO t SELECT g, 'n|' || g || ',\"q\"' || CASE WHEN g % 97 = 0 THEN E'\\n\\\\x' ELSE '' END, \
             (g % 100000) / 100.0 - 500, CASE WHEN g % 10 = 0 THEN NULL ELSE repeat('x', (g % 50)::int) END, \
             timestamptz '2026-01-01' + g * interval '1 second' FROM generate_series(1, {rows}) g"
        ),
    );
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_million_rows_out_with_4_mappers_and_back_into_an_empty_table() {
    let pg = PgCluster::shared();
    let src = pg.create_db("transfer_src");
    let dst = pg.create_db("transfer_dst");
    fill(pg, &src, 1_000_000);
    pg.query(&dst, SCHEMA);
    let dir = tempdir();
    let data = join(dir.path(), "data");
    let out_run = join(dir.path(), "out-run");
    let from = table_uri(pg, &src, "t");
    ok(
        dir.path(),
        &[
            "transfer",
            "--from",
            &from,
            "--to",
            s(&data),
            "--mappers",
            "4",
            "--run",
            s(&out_run),
            "-q",
        ],
    );
    assert_eq!(
        files(&data),
        [
            "part-00000.tbl",
            "part-00001.tbl",
            "part-00002.tbl",
            "part-00003.tbl",
            "transfer.json"
        ]
    );
    let tj: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("transfer.json")).unwrap())
            .unwrap();
    assert_eq!(tj["rows"], 1_000_000);
    // Issue 15: the checksum is the mappers' sum over the rows they streamed.
    assert!(
        tj["checksum"].as_str().unwrap().starts_with("xxh3-sum:"),
        "{tj}"
    );
    let per_file: Vec<u64> = tj["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rows"].as_u64().unwrap())
        .collect();
    // Split by block ranges (ctid): the rows are the same size, so the files nearly even.
    assert_eq!(tj["split"], "ctid", "{tj}");
    assert_eq!(per_file.iter().sum::<u64>(), 1_000_000, "{tj}");
    assert!(
        per_file.iter().all(|&n| n.abs_diff(250_000) < 5_000),
        "{tj}"
    );
    // Every mapper's work is an event with its rows; the password is nowhere in the run.
    let r = report_json(dir.path(), &out_run);
    let ev = event(&r, "copy-out");
    assert_eq!(ev["count"], 4);
    assert_eq!(r["transfer"]["rows"], 1_000_000);
    assert_eq!(r["transfer"]["mappers"].as_array().unwrap().len(), 4);
    let manifest_text = std::fs::read_to_string(out_run.join("manifest.json")).unwrap();
    assert!(
        !manifest_text.contains(pg.password()),
        "password in the manifest"
    );

    let in_run = join(dir.path(), "in-run");
    let to = table_uri(pg, &dst, "t");
    ok(
        dir.path(),
        &[
            "transfer",
            "--from",
            s(&data),
            "--to",
            &to,
            "--mappers",
            "4",
            "--run",
            s(&in_run),
            "-q",
        ],
    );
    assert_eq!(digest(pg, &dst), digest(pg, &src));
    assert!(digest(pg, &dst).starts_with("1000000:"));
    let r = report_json(dir.path(), &in_run);
    assert_eq!(event(&r, "copy-in")["count"], 4);
    assert_eq!(r["transfer"]["verified"], true);

    // Into a table that is not empty: refused before anything is loaded.
    fails(
        dir.path(),
        &[
            "transfer",
            "--from",
            s(&data),
            "--to",
            &to,
            "--run",
            s(&join(dir.path(), "again")),
        ],
        2,
        &["not empty"],
    );
}

/// `transfer.json` of a transfer out.
fn transfer_json(data: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(data.join("transfer.json")).unwrap()).unwrap()
}

/// `transfer TABLE --to DATA --mappers N [extra…]`; returns transfer.json and the run's report.
fn out(
    pg: &PgCluster,
    db: &str,
    table: &str,
    dir: &Path,
    tag: &str,
    mappers: &str,
    extra: &[&str],
) -> (serde_json::Value, serde_json::Value) {
    let data = join(dir, &format!("data-{tag}"));
    let run_dir = join(dir, &format!("run-{tag}"));
    let from = table_uri(pg, db, table);
    let mut a = vec!["transfer", "--from", from.as_str(), "--to", s(&data)];
    a.extend(["--mappers", mappers, "--run", s(&run_dir), "-q"]);
    a.extend(extra);
    ok(dir, &a);
    (transfer_json(&data), report_json(dir, &run_dir))
}

#[test]
fn ctid_split_by_block_ranges_matches_one_mapper_and_the_key_split_issue_15() {
    let pg = PgCluster::shared();
    assert!(
        pg.server_version_num() >= 140_000,
        "the helper runs PostgreSQL 15"
    );
    let src = pg.create_db("transfer_ctid");
    fill(pg, &src, 200_000);
    // Holes: a run of whole blocks emptied and every 7th row of the rest gone, so the blocks
    // hold uneven numbers of rows; the vacuum frees the space but keeps the relation's size.
    pg.query(
        &src,
        "DELETE FROM t WHERE id BETWEEN 30000 AND 95000 OR id % 7 = 0",
    );
    pg.query(&src, "VACUUM t");
    let want: u64 = pg.query(&src, "SELECT count(*) FROM t").parse().unwrap();
    assert!(want > 100_000 && want < 200_000, "{want}");
    let dir = tempdir();
    let (one, r1) = out(pg, &src, "t", dir.path(), "one", "1", &[]);
    let (ctid, r4) = out(pg, &src, "t", dir.path(), "ctid", "4", &[]);
    let (keyed, rk) = out(pg, &src, "t", dir.path(), "key", "4", &["--key", "id"]);
    assert_eq!(one["split"], "whole", "{one}");
    assert_eq!(ctid["split"], "ctid", "{ctid}");
    assert_eq!(keyed["split"], "key", "{keyed}");
    for tj in [&one, &ctid, &keyed] {
        assert_eq!(tj["rows"], want, "{tj}");
        assert_eq!(tj["checksum"], one["checksum"], "{tj}");
    }
    assert_eq!(r1["transfer"]["split"], "whole");
    assert_eq!(rk["transfer"]["split"], "key");
    assert_eq!(r4["transfer"]["split"], "ctid");

    // Four files whose block ranges follow each other from block 0, the last open-ended; the
    // emptied blocks make the files' row counts uneven; the blocks are the table's.
    let blocks: u64 = pg
        .query(
            &src,
            "SELECT pg_relation_size('t') / current_setting('block_size')::bigint",
        )
        .parse()
        .unwrap();
    let files = ctid["files"].as_array().unwrap();
    assert_eq!(files.len(), 4, "{ctid}");
    let ranges: Vec<(u64, Option<u64>)> = files
        .iter()
        .map(|f| {
            let r = &f["block_range"];
            (r[0].as_u64().unwrap(), r[1].as_u64())
        })
        .collect();
    assert_eq!(ranges[0].0, 0);
    assert_eq!(ranges[3].1, None, "{ctid}");
    for w in ranges.windows(2) {
        assert_eq!(w[0].1, Some(w[1].0), "{ranges:?}");
    }
    assert!(
        ranges[3].0 * 4 >= blocks * 3 - 4 && ranges[3].0 < blocks,
        "{ranges:?} of {blocks}"
    );
    let rows: Vec<u64> = files.iter().map(|f| f["rows"].as_u64().unwrap()).collect();
    assert!(
        rows.iter().max().unwrap() > &(rows.iter().min().unwrap() * 2),
        "{rows:?}"
    );
    assert!(files.iter().all(|f| f["key_range"].is_null()), "{ctid}");

    // Each mapper's SELECT is a TID Range Scan: it reads its own blocks, not the table.
    let mappers = r4["transfer"]["mappers"].as_array().unwrap();
    assert_eq!(mappers.len(), 4, "{r4}");
    for m in mappers {
        let cond = m["range"].as_str().unwrap();
        assert!(cond.starts_with("ctid >= '("), "{m}");
        let plan = pg.query(&src, &format!("EXPLAIN SELECT * FROM t WHERE {cond}"));
        assert!(plan.contains("Tid Range Scan"), "{cond}: {plan}");
        assert!(!plan.contains("Seq Scan"), "{cond}: {plan}");
    }
    let m = manifest(&join(dir.path(), "run-ctid"));
    assert_eq!(m["workload"]["params"]["split"], "ctid", "{m}");

    // The files load back into an empty table with the same rows.
    let dst = pg.create_db("transfer_ctid_dst");
    pg.query(&dst, SCHEMA);
    let data = join(dir.path(), "data-ctid");
    let to = table_uri(pg, &dst, "t");
    ok(
        dir.path(),
        &[
            "transfer",
            "--from",
            s(&data),
            "--to",
            &to,
            "--run",
            s(&join(dir.path(), "in")),
            "-q",
        ],
    );
    assert_eq!(digest(pg, &dst), digest(pg, &src));

    // An empty table: one open range from block 0, no rows, the checksum of nothing.
    pg.query(&src, &SCHEMA.replace("TABLE t", "TABLE e"));
    let (e1, _) = out(pg, &src, "e", dir.path(), "e1", "1", &[]);
    let (e4, re4) = out(pg, &src, "e", dir.path(), "e4", "4", &[]);
    let (ek, _) = out(pg, &src, "e", dir.path(), "ek", "4", &["--key", "id"]);
    for tj in [&e1, &e4, &ek] {
        assert_eq!(tj["rows"], 0, "{tj}");
        assert_eq!(tj["checksum"], e1["checksum"], "{tj}");
    }
    assert_eq!(e4["split"], "ctid", "{e4}");
    assert_eq!(e4["files"].as_array().unwrap().len(), 1, "{e4}");
    assert_eq!(e4["files"][0]["block_range"], serde_json::json!([0, null]));
    assert_eq!(re4["transfer"]["rows"], 0);
}

#[test]
fn csv_with_header_round_trips_and_a_changed_file_is_caught() {
    let pg = PgCluster::shared();
    let src = pg.create_db("transfer_csv_src");
    let dst = pg.create_db("transfer_csv_dst");
    fill(pg, &src, 20_000);
    pg.query(&dst, SCHEMA);
    let dir = tempdir();
    let data = join(dir.path(), "csv");
    let base = [
        "--format",
        "csv",
        "--header",
        "--null",
        "NULL",
        "--mappers",
        "3",
        "-q",
    ];
    let mut a = vec!["transfer", "--from"];
    let from = table_uri(pg, &src, "t");
    let to = table_uri(pg, &dst, "t");
    let run1 = join(dir.path(), "r1");
    a.extend([from.as_str(), "--to", s(&data), "--run", s(&run1)]);
    a.extend(base);
    ok(dir.path(), &a);
    let first = std::fs::read_to_string(data.join("part-00000.csv")).unwrap();
    assert!(
        first.starts_with("id,name,amount,note,at\n"),
        "{}",
        &first[..80]
    );
    assert!(first.contains(",NULL,"), "NULL marker");

    let mut b = vec!["transfer", "--from", s(&data), "--to", to.as_str()];
    let run2 = join(dir.path(), "r2");
    b.extend(["--run", s(&run2)]);
    b.extend(base);
    ok(dir.path(), &b);
    assert_eq!(digest(pg, &dst), digest(pg, &src));

    // Same rows, one column rounded by the target's type: the counts agree, the checksum
    // (read back through COPY) does not.
    let dst2 = pg.create_db("transfer_csv_dst2");
    pg.query(&dst2, &SCHEMA.replace("numeric(12,2)", "numeric(12,1)"));
    let to2 = table_uri(pg, &dst2, "t");
    let mut d = vec!["transfer", "--from", s(&data), "--to", to2.as_str()];
    let run_r = join(dir.path(), "rounded");
    d.extend(["--run", s(&run_r)]);
    d.extend(base);
    let o = run(dir.path(), &d);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("checksum") && err.contains("differs") && err.contains("same row count 20000"),
        "{err}"
    );

    // A file changed after the transfer (same size): its CRC-32 no longer matches.
    pg.query(&dst, "TRUNCATE t");
    let p = data.join("part-00001.csv");
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, text.replacen("n|", "m|", 1)).unwrap();
    let run3 = join(dir.path(), "r3");
    let mut c = vec!["transfer", "--from", s(&data), "--to", to.as_str()];
    c.extend(["--run", s(&run3)]);
    c.extend(base);
    let o = run(dir.path(), &c);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("part-00001.csv") && err.contains("CRC-32"),
        "{err}"
    );
    assert_eq!(manifest(&run3)["outcome"], "failed");

    // --verify count: no table checksum in transfer.json; counts and CRC-32s still checked.
    let data2 = join(dir.path(), "counted");
    let run4 = join(dir.path(), "r4");
    ok(
        dir.path(),
        &[
            "transfer",
            "--from",
            &from,
            "--to",
            s(&data2),
            "--verify",
            "count",
            "--mappers",
            "1",
            "--run",
            s(&run4),
            "-q",
        ],
    );
    let tj: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data2.join("transfer.json")).unwrap())
            .unwrap();
    assert!(tj["checksum"].is_null(), "{tj}");
    // One mapper: one file, the whole table, no key needed.
    assert_eq!(files(&data2), ["part-00000.tbl", "transfer.json"]);
    assert_eq!(tj["rows"], 20_000);
    pg.query(&dst, "TRUNCATE t");
    let run5 = join(dir.path(), "r5");
    ok(
        dir.path(),
        &[
            "transfer",
            "--from",
            s(&data2),
            "--to",
            &to,
            "--run",
            s(&run5),
            "-q",
        ],
    );
    assert_eq!(digest(pg, &dst), digest(pg, &src));

    // Issue 15 part 4: one mapper with --key does not scan the table for min/max/count (the
    // bench's 1-mapper case paid a full pass for it): the file holds the whole table, no key
    // range; a --key that is no integer column is still refused before anything is copied.
    let data3 = join(dir.path(), "keyed");
    let keyed = |key: &'static str, run: &Path| {
        let mut a = vec!["transfer", "--from", from.as_str(), "--to", s(&data3)];
        a.extend(["--key", key, "--mappers", "1", "--run", s(run), "-q"]);
        a.into_iter().map(String::from).collect::<Vec<String>>()
    };
    let args = keyed("id", &join(dir.path(), "r6"));
    ok(
        dir.path(),
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let tj: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data3.join("transfer.json")).unwrap())
            .unwrap();
    assert_eq!(tj["rows"], 20_000, "{tj}");
    assert_eq!(tj["key"], "id", "{tj}");
    assert!(tj["files"][0]["key_range"].is_null(), "{tj}");
    for (key, why) in [("nosuch", "no column nosuch"), ("name", "name is text")] {
        let args = keyed(key, &join(dir.path(), &format!("r-{key}")));
        let o = run(
            dir.path(),
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("an integer column") && err.contains(why),
            "{err}"
        );
    }
}

#[test]
fn a_mapper_whose_connection_is_killed_fails_the_run_and_leaves_no_complete_looking_file() {
    let pg = PgCluster::shared();
    let src = pg.create_db("transfer_kill");
    fill(pg, &src, 1_000_000);
    let dir = tempdir();
    let data = join(dir.path(), "data");
    let out_run = join(dir.path(), "run");
    let from = table_uri(pg, &src, "t");
    let child = dbscope(dir.path())
        .args([
            "transfer",
            "--from",
            &from,
            "--to",
            s(&data),
            "--mappers",
            "4",
            "--run",
            s(&out_run),
            "-q",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until mapper 1's COPY is running, then terminate its backend.
    let mut client = pg.connect("postgres");
    let started = Instant::now();
    let mut killed = false;
    while started.elapsed() < Duration::from_secs(60) {
        let rows = client
            .query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = $1 AND application_name = 'dbscope/transfer/1' \
                   AND state = 'active' AND query LIKE 'COPY%'",
                &[&src],
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
        "mapper 1's COPY was never seen running; dbscope said: {err}"
    );
    assert_eq!(o.status.code(), Some(1), "{err}");
    // The server says why (57P01) unless the backend was blocked sending to us when it was
    // terminated: then it drops the message and the client sees the connection close.
    assert!(
        err.contains("mapper 1")
            && (err.contains("terminating connection") || err.contains("closed the connection")),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let names = files(&data);
    assert!(
        !names
            .iter()
            .any(|n| n.contains("00001") || n.ends_with(".partial")),
        "{names:?}"
    );
    assert!(!names.contains(&"transfer.json".to_string()), "{names:?}");
    let m = manifest(&out_run);
    assert_eq!(m["outcome"], "failed");
    assert!(
        m["outcome_detail"].as_str().unwrap().contains("mapper 1"),
        "{m}"
    );
}

/// Issue 27: a transfer out killed (SIGKILL) once one mapper's file is complete leaves a directory
/// whose files are part of the table; loading it back was reported complete and verified.
#[test]
fn issue_27_a_killed_export_is_refused_and_loaded_only_when_asked_and_then_called_partial() {
    let pg = PgCluster::shared();
    let src = pg.create_db("transfer_killed_out");
    let dst = pg.create_db("transfer_killed_in");
    pg.query(&src, SCHEMA);
    // Skewed keys: split by key into two ranges, mapper 0 has 1,000 rows and mapper 1 a million,
    // so mapper 0's file is complete long before mapper 1's.
    pg.query(
        &src,
        "INSERT INTO t SELECT g, 'n' || g, g % 1000, NULL, timestamptz '2026-01-01' \
         FROM generate_series(1, 1000) g \
         UNION ALL SELECT g, 'n' || g, g % 1000, 'x', timestamptz '2026-01-01' \
         FROM generate_series(1000001, 2000000) g",
    );
    pg.query(&dst, SCHEMA);
    let dir = tempdir();
    let data = join(dir.path(), "data");
    let mut child = dbscope(dir.path())
        .args([
            "transfer",
            "--from",
            &table_uri(pg, &src, "t"),
            "--to",
            s(&data),
            "--mappers",
            "2",
            "--key",
            "id",
            "--run",
            s(&join(dir.path(), "out-run")),
            "-q",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !data.join("part-00000.tbl").exists() && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(1));
    }
    crate::crash::sigkill(&mut child);
    let names = files(&data);
    assert!(names.contains(&"part-00000.tbl".to_string()), "{names:?}");
    assert!(
        !names.contains(&"transfer.json".to_string()),
        "killed too late: {names:?}"
    );

    let to = table_uri(pg, &dst, "t");
    let in_args = ["transfer", "--from", s(&data), "--to", &to, "--run"];
    let err = fails(
        dir.path(),
        &[&in_args[..], &[s(&join(dir.path(), "in-refused"))]].concat(),
        3,
        &["did not finish", "--allow-incomplete"],
    );
    assert!(!err.contains("verified"), "{err}");
    assert_eq!(pg.query(&dst, "SELECT count(*) FROM t"), "0");

    // Asked for: what is there is loaded, and the run says it is part of a table.
    let in_run = join(dir.path(), "in-partial");
    let o = dbscope(dir.path())
        .args(in_args)
        .args([s(&in_run), "--allow-incomplete"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let loaded: u64 = pg.query(&dst, "SELECT count(*) FROM t").parse().unwrap();
    assert!((1000..2_001_000).contains(&loaded), "{loaded}");
    let m = manifest(&in_run);
    assert_eq!(m["outcome"], "failed", "{m}");
    let detail = m["outcome_detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!("loaded {loaded} rows")) && detail.contains("did not finish"),
        "{detail}"
    );
    assert!(err.contains("did not finish"), "{err}");
    let r = report_json(dir.path(), &in_run);
    assert_eq!(r["transfer"]["verified"], false, "{r}");
}

/// Issue 27 item 13: a file that fails to load is named with its line, and the run says the
/// table now holds a partial load (the other files' COPYs committed).
#[test]
fn issue_27_a_failed_load_names_the_line_and_says_the_table_holds_part_of_it() {
    let pg = PgCluster::shared();
    let dst = pg.create_db("transfer_bad_line");
    pg.query(&dst, "CREATE TABLE t (id bigint PRIMARY KEY, v text)");
    let dir = tempdir();
    let data = join(dir.path(), "data");
    std::fs::create_dir(&data).unwrap();
    let rows =
        |from: u64, n: u64| -> String { (from..from + n).map(|i| format!("{i}|v{i}\n")).collect() };
    std::fs::write(data.join("a.tbl"), rows(1, 1000)).unwrap();
    let mut bad = rows(1001, 1000);
    bad = bad.replacen("1050|v1050", "x1050|v1050", 1);
    std::fs::write(data.join("b.tbl"), bad).unwrap();
    let run_dir = join(dir.path(), "in");
    let o = dbscope(dir.path())
        .args([
            "transfer",
            "--from",
            s(&data),
            "--to",
            &table_uri(pg, &dst, "t"),
        ])
        .args(["--mappers", "1", "--run", s(&run_dir), "-q"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let m = manifest(&run_dir);
    let detail = m["outcome_detail"].as_str().unwrap();
    assert!(
        detail.contains("COPY b.tbl, line 50: invalid input syntax"),
        "{detail}"
    );
    assert!(
        detail.contains("now holds 1000 rows") && detail.contains("partial load"),
        "{detail}"
    );
    assert_eq!(pg.query(&dst, "SELECT count(*) FROM t"), "1000");
}

/// Issue 27's standing property for transfer parts: a part file cut at any byte of its last row,
/// or at random places before, is refused by the next transfer in with the file named and its
/// size against transfer.json's, and nothing is loaded.
#[test]
fn issue_27_a_part_cut_anywhere_is_refused_and_nothing_is_loaded() {
    let pg = PgCluster::shared();
    let src = pg.create_db("transfer_cut_src");
    let dst = pg.create_db("transfer_cut_dst");
    fill(pg, &src, 2000);
    pg.query(&dst, SCHEMA);
    let dir = tempdir();
    let data = join(dir.path(), "data");
    ok(
        dir.path(),
        &[
            "transfer",
            "--from",
            &table_uri(pg, &src, "t"),
            "--to",
            s(&data),
            "--mappers",
            "1",
            "--run",
            s(&join(dir.path(), "out")),
            "-q",
        ],
    );
    let part = data.join("part-00000.tbl");
    let whole = std::fs::read(&part).unwrap();
    let last_row = whole[..whole.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    // Every byte of the last row, and a seeded spread before it.
    let mut cuts: Vec<usize> = (last_row..whole.len()).collect();
    let mut x = 12345u64;
    for _ in 0..20 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        cuts.push((x >> 33) as usize % last_row);
    }
    let to = table_uri(pg, &dst, "t");
    for (i, cut) in cuts.iter().enumerate() {
        std::fs::write(&part, &whole[..*cut]).unwrap();
        let run = join(dir.path(), &format!("in{i}"));
        let err = fails(
            dir.path(),
            &[
                "transfer",
                "--from",
                s(&data),
                "--to",
                &to,
                "--run",
                s(&run),
                "-q",
            ],
            3,
            &[
                "part-00000.tbl",
                &format!("{cut} bytes"),
                "incomplete or changed",
            ],
        );
        assert!(!err.contains("verified"), "{err}");
        assert_eq!(
            pg.query(&dst, "SELECT count(*) FROM t"),
            "0",
            "cut at {cut}"
        );
    }
    // Whole again, it loads and verifies.
    std::fs::write(&part, &whole).unwrap();
    ok(
        dir.path(),
        &[
            "transfer",
            "--from",
            s(&data),
            "--to",
            &to,
            "--run",
            s(&join(dir.path(), "in-ok")),
            "-q",
        ],
    );
    assert_eq!(pg.query(&dst, "SELECT count(*) FROM t"), "2000");
}

#[test]
fn transfer_bad_input() {
    let dir = tempdir();
    let d = s(dir.path());
    fails(
        dir.path(),
        &["transfer", "--from", d, "--to", d],
        2,
        &["neither --from nor --to"],
    );
    fails(
        dir.path(),
        &["transfer", "--from", "postgres://u:hunter2@h/db", "--to", d],
        2,
        &["DATABASE/TABLE"],
    );
    let o = run(
        dir.path(),
        &["transfer", "--from", "postgres://u:hunter2@h/db", "--to", d],
    );
    assert!(!String::from_utf8_lossy(&o.stderr).contains("hunter2"));
    fails(
        dir.path(),
        &["transfer", "--from", "postgres://h/db/t;drop", "--to", d],
        2,
        &["not a plain name"],
    );
    fails(
        dir.path(),
        &[
            "transfer",
            "--from",
            d,
            "--to",
            "postgres://h/db/t",
            "--format",
            "csv",
        ],
        3,
        &["no *.csv files"],
    );
    // Issue 34 item 12: --mode is for a transfer in; --key in only names an upsert's key.
    fails(
        dir.path(),
        &[
            "transfer",
            "--from",
            "postgres://h/db/t",
            "--to",
            d,
            "--mode",
            "append",
        ],
        2,
        &["--mode applies to a transfer into a table"],
    );
    fails(
        dir.path(),
        &[
            "transfer",
            "--from",
            d,
            "--to",
            "postgres://h/db/t",
            "--key",
            "id",
        ],
        2,
        &["--key applies", "--mode upsert"],
    );
    assert!(!dir.path().join("runs").exists());
}

/// Every column type `--format parquet` maps, with NULLs, extremes and awkward text.
const TYPED: &str = "CREATE TABLE t (id bigint PRIMARY KEY, i2 smallint, i4 integer NOT NULL, \
     amount numeric(12,2), big numeric(30,5), free numeric, f4 real, f8 double precision, \
     name text, v varchar(20), c char(5), d date, ts timestamp, tstz timestamptz, b boolean, \
     j jsonb)";

fn fill_typed(pg: &PgCluster, db: &str, rows: u64) {
    pg.query(db, TYPED);
    pg.query(
        db,
        &format!(
            "INSERT INTO t SELECT g, \
               CASE WHEN g % 7 = 0 THEN NULL ELSE (g % 65536 - 32768)::int2 END, \
               g::int4 * CASE WHEN g % 2 = 0 THEN -1 ELSE 1 END, \
               CASE WHEN g % 11 = 0 THEN NULL ELSE (g % 100000) / 100.0 - 500 END, \
               CASE WHEN g % 13 = 0 THEN NULL ELSE g * 12345678901234.56789 END, \
               CASE g % 5 WHEN 0 THEN NULL WHEN 1 THEN 'NaN'::numeric ELSE g / 7.0 END, \
               CASE WHEN g % 3 = 0 THEN NULL ELSE g / 3.0 END, \
               CASE g % 6 WHEN 0 THEN NULL WHEN 1 THEN 'Infinity' WHEN 2 THEN '-Infinity' \
                    ELSE g * 1.1e-300 END, \
               CASE WHEN g % 10 = 0 THEN NULL ELSE 'n|' || g || E',\"q\"\\t\\\\' || \
                    CASE WHEN g % 97 = 0 THEN E'\\n\\r' ELSE '' END || 'ü' END, \
               CASE WHEN g % 4 = 0 THEN '' ELSE 'v' || g END, \
               CASE WHEN g % 9 = 0 THEN NULL ELSE 'c' || (g % 10) END, \
               CASE WHEN g % 8 = 0 THEN NULL WHEN g % 8 = 1 THEN date '0044-03-15 BC' \
                    ELSE date '2000-01-01' + (g % 20000)::int - 10000 END, \
               timestamp '1969-12-31 23:59:59.5' + g * interval '1.000001 second', \
               CASE WHEN g % 12 = 0 THEN NULL ELSE timestamptz '2026-01-01 00:00:00+05' + g * interval '1 minute' END, \
               CASE g % 3 WHEN 0 THEN NULL WHEN 1 THEN true ELSE false END, \
               CASE WHEN g % 2 = 0 THEN NULL ELSE jsonb_build_object('k', g, 's', E'a\\tb') END \
             FROM generate_series(1, {rows}) g"
        ),
    );
}

#[test]
fn parquet_round_trip_keeps_types_nulls_and_values_issue_15() {
    let pg = PgCluster::shared();
    let src = pg.create_db("transfer_pq_src");
    let dst = pg.create_db("transfer_pq_dst");
    fill_typed(pg, &src, 30_000);
    pg.query(&dst, TYPED);
    let dir = tempdir();
    let data = join(dir.path(), "pq");
    let from = table_uri(pg, &src, "t");
    let to = table_uri(pg, &dst, "t");
    let run1 = join(dir.path(), "r1");
    ok(
        dir.path(),
        &[
            "transfer",
            "--from",
            &from,
            "--to",
            s(&data),
            "--format",
            "parquet",
            "--mappers",
            "2",
            // Split by the key, so part-00000 holds ids 1..=15000 (the NULL counts below).
            "--key",
            "id",
            "--run",
            s(&run1),
            "-q",
        ],
    );
    assert_eq!(
        files(&data),
        ["part-00000.parquet", "part-00001.parquet", "transfer.json"]
    );
    let run2 = join(dir.path(), "r2");
    ok(
        dir.path(),
        &[
            "transfer",
            "--from",
            s(&data),
            "--to",
            &to,
            "--format",
            "parquet",
            "--mappers",
            "2",
            "--run",
            s(&run2),
            "-q",
        ],
    );
    assert_eq!(digest(pg, &dst), digest(pg, &src));
    assert!(digest(pg, &src).starts_with("30000:"));
    let r = report_json(dir.path(), &run2);
    assert_eq!(r["transfer"]["verified"], true);
    assert_eq!(r["transfer"]["rows"], 30_000);

    // Not Parquet at all: the run fails naming the file, nothing panics.
    pg.query(&dst, "TRUNCATE t");
    let junk = join(dir.path(), "junk");
    std::fs::create_dir(&junk).unwrap();
    std::fs::write(junk.join("part-00000.parquet"), b"id|name\n1|x\n").unwrap();
    let o = run(
        dir.path(),
        &[
            "transfer",
            "--from",
            s(&junk),
            "--to",
            &to,
            "--format",
            "parquet",
            "--run",
            s(&join(dir.path(), "r3")),
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("part-00000.parquet") && !err.contains("panicked"),
        "{err}"
    );
    fails(
        dir.path(),
        &[
            "transfer",
            "--from",
            &from,
            "--to",
            s(&junk),
            "--format",
            "parquet",
            "--null",
            "x",
        ],
        2,
        &["--null apply to --format tbl|csv"],
    );

    // An Arrow reader sees the types the table has.
    if std::process::Command::new("python3")
        .args(["-c", "import pyarrow"])
        .status()
        .map_or(true, |s| !s.success())
    {
        eprintln!("SKIPPED the pyarrow check: python3 with pyarrow is not installed");
        return;
    }
    let script = r#"
import sys, pyarrow.parquet as pq
t = pq.read_table(sys.argv[1])
for f in t.schema:
    print(f"{f.name}:{f.type}:{f.nullable}:{t.column(f.name).null_count}")
ids = t.column("id").to_pylist()
i = ids.index(23)
print("row23", t.column("amount")[i].as_py(), t.column("d")[i].as_py(), t.column("tstz")[i].as_py().isoformat(), repr(t.column("name")[i].as_py()))
"#;
    let o = std::process::Command::new("python3")
        .args(["-c", script, s(&data.join("part-00000.parquet"))])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let types: Vec<&str> = out.lines().map(|l| l.rsplit_once(':').unwrap().0).collect();
    assert_eq!(
        types[..16],
        [
            "id:int64:False",
            "i2:int16:True",
            "i4:int32:False",
            "amount:decimal128(12, 2):True",
            "big:decimal128(30, 5):True",
            "free:string:True",
            "f4:float:True",
            "f8:double:True",
            "name:string:True",
            "v:string:True",
            "c:string:True",
            "d:date32[day]:True",
            "ts:timestamp[us]:True",
            "tstz:timestamp[us, tz=UTC]:True",
            "b:bool:True",
            "j:string:True",
        ],
        "{out}"
    );
    // NULLs are nulls: 15,000 rows in this file, every 11th amount NULL.
    let nulls: Vec<u64> = out
        .lines()
        .take(16)
        .map(|l| l.rsplit(':').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(nulls[0], 0);
    assert_eq!(nulls[3], 15_000 / 11, "{out}");
    assert_eq!(
        out.lines().last().unwrap(),
        "row23 -499.77 1972-09-07 2025-12-31T19:23:00+00:00 'n|23,\"q\"\\t\\\\ü'",
        "{out}"
    );
}

fn magic(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()[..4].to_vec()
}

/// The codec of every column chunk of a Parquet file.
fn parquet_codecs(path: &Path) -> Vec<String> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let r = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let md = r.metadata();
    let mut v: Vec<String> = (0..md.num_row_groups())
        .flat_map(|g| {
            md.row_group(g)
                .columns()
                .iter()
                .map(|c| c.compression().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    v.dedup();
    v
}

#[test]
fn compressed_files_round_trip_by_manifest_and_by_extension_issue_15() {
    let pg = PgCluster::shared();
    let src = pg.create_db("transfer_z_src");
    let dst = pg.create_db("transfer_z_dst");
    fill(pg, &src, 20_000);
    pg.query(&dst, SCHEMA);
    let dir = tempdir();
    let from = table_uri(pg, &src, "t");
    let to = table_uri(pg, &dst, "t");
    let mut n = 0;
    let mut transfer = |args: &[&str]| {
        n += 1;
        let run = join(dir.path(), &format!("r{n}"));
        let mut a = vec!["transfer", "--run", s(&run), "-q"];
        a.extend(args);
        ok(dir.path(), &a);
    };

    // tbl + gzip, back through transfer.json.
    let gz = join(dir.path(), "gz");
    transfer(&[
        "--from",
        &from,
        "--to",
        s(&gz),
        "--compress",
        "gzip",
        "--mappers",
        "2",
    ]);
    assert_eq!(
        files(&gz),
        ["part-00000.tbl.gz", "part-00001.tbl.gz", "transfer.json"]
    );
    assert_eq!(magic(&gz.join("part-00000.tbl.gz"))[..2], [0x1f, 0x8b]);
    let tj: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(gz.join("transfer.json")).unwrap()).unwrap();
    assert_eq!(tj["options"]["compress"], "gzip");
    transfer(&["--from", s(&gz), "--to", &to, "--mappers", "2"]);
    assert_eq!(digest(pg, &dst), digest(pg, &src));

    // csv + zstd, back without transfer.json: found and decoded by the extension.
    pg.query(&dst, "TRUNCATE t");
    let zst = join(dir.path(), "zst");
    let csv = ["--format", "csv", "--header"];
    let mut a = vec![
        "--from",
        from.as_str(),
        "--to",
        s(&zst),
        "--compress",
        "zstd",
    ];
    a.extend(csv);
    transfer(&a);
    assert_eq!(
        files(&zst),
        [
            "part-00000.csv.zst",
            "part-00001.csv.zst",
            "part-00002.csv.zst",
            "part-00003.csv.zst",
            "transfer.json"
        ]
    );
    assert_eq!(
        magic(&zst.join("part-00002.csv.zst")),
        [0x28, 0xb5, 0x2f, 0xfd]
    );
    std::fs::remove_file(zst.join("transfer.json")).unwrap();
    let mut b = vec!["--from", s(&zst), "--to", to.as_str()];
    b.extend(csv);
    transfer(&b);
    assert_eq!(digest(pg, &dst), digest(pg, &src));

    // A compressed file cut short: a clear error naming it, no panic.
    pg.query(&dst, "TRUNCATE t");
    let p = zst.join("part-00001.csv.zst");
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    let cut = join(dir.path(), "cut");
    let mut c = vec![
        "transfer",
        "--from",
        s(&zst),
        "--to",
        to.as_str(),
        "--run",
        s(&cut),
    ];
    c.extend(csv);
    let o = run(dir.path(), &c);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("part-00001.csv.zst") && !err.contains("panicked"),
        "{err}"
    );

    // Parquet: the codec is Parquet's own, inside the file.
    pg.query(&dst, "TRUNCATE t");
    let pz = join(dir.path(), "pz");
    transfer(&[
        "--from",
        &from,
        "--to",
        s(&pz),
        "--format",
        "parquet",
        "--compress",
        "zstd",
        "--mappers",
        "2",
    ]);
    assert_eq!(
        files(&pz),
        ["part-00000.parquet", "part-00001.parquet", "transfer.json"]
    );
    assert_eq!(
        parquet_codecs(&pz.join("part-00001.parquet")),
        ["ZSTD(ZstdLevel(1))"]
    );
    transfer(&["--from", s(&pz), "--to", &to, "--format", "parquet"]);
    assert_eq!(digest(pg, &dst), digest(pg, &src));
    let ps = join(dir.path(), "ps");
    transfer(&[
        "--from",
        &from,
        "--to",
        s(&ps),
        "--format",
        "parquet",
        "--compress",
        "snappy",
        "--mappers",
        "1",
    ]);
    assert_eq!(parquet_codecs(&ps.join("part-00000.parquet")), ["SNAPPY"]);

    fails(
        dir.path(),
        &[
            "transfer",
            "--from",
            &from,
            "--to",
            s(&ps),
            "--compress",
            "snappy",
        ],
        2,
        &["snappy is a Parquet codec"],
    );
}

/// Issue 34 item 6: a 1-mapper and a 4-mapper transfer side by side (one job each: "one sample:
/// no test"), `--repeat N` giving a job event per repetition that `compare` tests, a load
/// repeated into the emptied table, and `--delimiter '\t'` written as a C escape.
#[test]
fn issue_34_transfer_repeat_and_compare_of_mappers() {
    let pg = PgCluster::shared();
    let src = pg.create_db("transfer_rep_src");
    let dst = pg.create_db("transfer_rep_dst");
    fill(pg, &src, 20_000);
    pg.query(&dst, SCHEMA);
    let dir = tempdir();
    let d = dir.path();
    let tab = ["--format", "csv", "--delimiter", "\\t"];
    let (_, r1) = out(pg, &src, "t", d, "m1", "1", &tab);
    let (_, r4) = out(pg, &src, "t", d, "m4", "4", &tab);
    assert_eq!(event(&r1, "transfer")["count"], 1);
    assert_eq!(event(&r4, "copy-out")["count"], 4);
    assert_eq!(event(&r4, "transfer")["count"], 1);
    let part = std::fs::read_to_string(join(d, "data-m1").join("part-00000.csv")).unwrap();
    assert!(
        part.lines().next().unwrap().split('\t').count() == 5,
        "tab-delimited: {}",
        &part[..80]
    );
    let text = ok(
        d,
        &["compare", s(&join(d, "run-m1")), s(&join(d, "run-m4"))],
    );
    assert!(
        text.contains("transfer   n  A 1   B 1   one sample: no test\n  elapsed  A "),
        "{text}"
    );
    assert!(
        text.contains(
            "copy-out   n  A 1   B 4   1 in A and 4 in B (a test needs two in each): no test"
        ),
        "{text}"
    );
    assert!(text.contains("\n  rows/s   A "), "{text}");
    assert!(text.contains("workload.params.mappers"), "{text}");

    let rep = ["--format", "csv", "--delimiter", "\\t", "--repeat", "4"];
    let (j1, r1) = out(pg, &src, "t", d, "r1", "1", &rep);
    let (_, r2) = out(pg, &src, "t", d, "r2", "2", &rep);
    assert_eq!(j1["rows"], 20_000);
    assert_eq!(event(&r1, "transfer")["count"], 4);
    assert_eq!(event(&r2, "copy-out")["count"], 8);
    assert_eq!(r2["transfer"]["rows"], 20_000, "one repetition's rows");
    assert_eq!(r2["transfer"]["repetitions"], 4);
    let c: serde_json::Value = serde_json::from_str(&ok(
        d,
        &[
            "compare",
            s(&join(d, "run-r1")),
            s(&join(d, "run-r2")),
            "--event",
            "transfer",
            "--json",
        ],
    ))
    .unwrap();
    assert_eq!(c["events"][0]["name"], "transfer", "{c}");
    assert_eq!(c["events"][0]["a"]["n"], 4, "{c}");
    assert_ne!(c["events"][0]["verdict"]["call"], "too_few", "{c}");

    // In, twice: the table emptied before the second load, verified each time.
    let run_in = join(d, "in");
    let to = table_uri(pg, &dst, "t");
    ok(
        d,
        &[
            "transfer",
            "--from",
            s(&join(d, "data-r2")),
            "--to",
            &to,
            "--format",
            "csv",
            "--repeat",
            "2",
            "--mappers",
            "2",
            "--run",
            s(&run_in),
            "-q",
        ],
    );
    let r = report_json(d, &run_in);
    assert_eq!(event(&r, "copy-in")["count"], 4);
    assert_eq!(event(&r, "transfer")["count"], 2);
    assert_eq!(digest(pg, &dst), digest(pg, &src));
}

/// `transfer … in --mode M [extra…]` of `data` into `db.table`; returns the run's report and
/// stderr (the printed summary).
fn load(
    pg: &PgCluster,
    db: &str,
    table: &str,
    data: &Path,
    run_dir: &Path,
    extra: &[&str],
) -> (serde_json::Value, String) {
    let to = table_uri(pg, db, table);
    let mut a = vec!["transfer", "--from", s(data), "--to", to.as_str()];
    a.extend(["--mappers", "2", "--run", s(run_dir)]);
    a.extend(extra);
    let o = run(run_dir.parent().unwrap(), &a);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{a:?}: {err}");
    (report_json(run_dir.parent().unwrap(), run_dir), err)
}

/// md5 of every row's text of `sql`'s rows (`t`), in key order.
fn digest_of(pg: &PgCluster, db: &str, from: &str) -> String {
    pg.query(
        db,
        &format!(
            "SELECT count(*) || ':' || md5(string_agg(t::text, E'\\n' ORDER BY t::text)) FROM {from} t"
        ),
    )
}

#[test]
fn issue_34_append_doubles_the_rows_and_upsert_updates_half_and_inserts_the_rest() {
    let pg = PgCluster::shared();
    let src = pg.create_db("transfer_modes_src");
    let dst = pg.create_db("transfer_modes_dst");
    fill(pg, &src, 20_000);
    let dir = tempdir();
    let d = dir.path();
    let (_, _) = out(pg, &src, "t", d, "all", "2", &[]);
    let data = join(d, "data-all");

    // Append into a table without a key: twice the rows, each twice.
    pg.query(
        &dst,
        "CREATE TABLE a (id bigint, name text, amount numeric(12,2), note text, at timestamptz)",
    );
    load(pg, &dst, "a", &data, &join(d, "a1"), &["-q"]);
    let (r, err) = load(pg, &dst, "a", &data, &join(d, "a2"), &["--mode", "append"]);
    assert_eq!(r["transfer"]["verified"], true, "{r}");
    assert_eq!(r["transfer"]["inserted"], 20_000, "{r}");
    assert_eq!(r["transfer"]["updated"], 0, "{r}");
    assert!(
        err.contains("--mode append: 20000 rows inserted, 0 updated"),
        "{err}"
    );
    assert_eq!(
        digest_of(pg, &dst, "a"),
        digest_of(pg, &src, "(SELECT * FROM t UNION ALL SELECT * FROM t)")
    );
    assert!(digest_of(pg, &dst, "a").starts_with("40000:"));
    // Into a non-empty table without --mode: refused, pointing at the modes.
    fails(
        d,
        &[
            "transfer",
            "--from",
            s(&data),
            "--to",
            &table_uri(pg, &dst, "a"),
            "--run",
            s(&join(d, "a3")),
        ],
        2,
        &["not empty", "--mode append"],
    );

    // Upsert: the even keys are there with other values, one row not in the files stays.
    pg.query(&dst, SCHEMA);
    pg.query(
        &dst,
        "INSERT INTO t SELECT g, 'old', 0, 'old', now() FROM generate_series(2, 20000, 2) g; \
         INSERT INTO t VALUES (99999999, 'stays', 1, NULL, NULL)",
    );
    let run_up = join(d, "up");
    let (r, err) = load(
        pg,
        &dst,
        "t",
        &data,
        &run_up,
        &["--mode", "upsert", "--key", "id"],
    );
    assert_eq!(r["transfer"]["verified"], true, "{r}");
    assert_eq!(r["transfer"]["inserted"], 10_000, "{r}");
    assert_eq!(r["transfer"]["updated"], 10_000, "{r}");
    assert!(
        err.contains("--mode upsert: 10000 rows inserted, 10000 updated by 1 loader"),
        "{err}"
    );
    assert_eq!(event(&r, "load")["count"], 1, "{r}");
    assert_eq!(manifest(&run_up)["workload"]["params"]["mode"], "upsert");
    assert_eq!(
        digest_of(pg, &dst, "(SELECT * FROM t WHERE id <> 99999999)"),
        digest_of(pg, &src, "t")
    );
    assert_eq!(
        pg.query(&dst, "SELECT name FROM t WHERE id = 99999999"),
        "stays"
    );
    // The staging table is gone.
    assert_eq!(
        pg.query(
            &dst,
            "SELECT count(*) FROM pg_class WHERE relname LIKE 'dbscope_transfer_stage%'"
        ),
        "0"
    );
    // Again: every row is there now, so all are updated.
    let (r, _) = load(
        pg,
        &dst,
        "t",
        &data,
        &join(d, "up2"),
        &["--mode", "upsert", "-q"],
    );
    assert_eq!(
        (&r["transfer"]["inserted"], &r["transfer"]["updated"]),
        (&0.into(), &20_000.into()),
        "{r}"
    );

    // Verification holds: a trigger that changes updated rows is caught, the run fails.
    pg.query(
        &dst,
        "CREATE FUNCTION spoil() RETURNS trigger LANGUAGE plpgsql AS \
         $$BEGIN NEW.note := 'spoilt'; RETURN NEW; END$$; \
         CREATE TRIGGER spoil BEFORE UPDATE ON t FOR EACH ROW WHEN (OLD.id = 4) EXECUTE FUNCTION spoil()",
    );
    let run_bad = join(d, "bad");
    let o = run(
        d,
        &[
            "transfer",
            "--from",
            s(&data),
            "--to",
            &table_uri(pg, &dst, "t"),
            "--mode",
            "upsert",
            "--run",
            s(&run_bad),
            "-q",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let detail = manifest(&run_bad)["outcome_detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        detail.contains("rows with the files' keys: checksum") && detail.contains("differs"),
        "{detail}"
    );
}

#[test]
fn issue_34_upsert_key_that_is_not_unique_is_refused_before_anything_moves() {
    let pg = PgCluster::shared();
    let src = pg.create_db("transfer_key_src");
    let dst = pg.create_db("transfer_key_dst");
    fill(pg, &src, 100);
    let dir = tempdir();
    let d = dir.path();
    out(pg, &src, "t", d, "k", "1", &[]);
    let data = join(d, "data-k");
    pg.query(
        &dst,
        "CREATE TABLE t (id bigint, name text, amount numeric(12,2), note text, at timestamptz); \
         CREATE UNIQUE INDEX ON t (name) WHERE id > 0; \
         INSERT INTO t VALUES (1, 'x', 0, NULL, NULL)",
    );
    let to = table_uri(pg, &dst, "t");
    let args = |key: &'static str, run: &str| -> Vec<String> {
        let mut v: Vec<String> = [
            "transfer",
            "--from",
            s(&data),
            "--to",
            &to,
            "--mode",
            "upsert",
        ]
        .map(String::from)
        .to_vec();
        if !key.is_empty() {
            v.extend(["--key".to_string(), key.to_string()]);
        }
        v.extend(["--run".to_string(), s(&join(d, run)).to_string()]);
        v
    };
    let a = args("id", "r1");
    fails(
        d,
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
        2,
        &["--key id: not a unique key of t", "(partial"],
    );
    let a = args("", "r2");
    fails(
        d,
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
        2,
        &["t has no primary key", "--key"],
    );
    pg.query(&dst, "CREATE UNIQUE INDEX ON t (id, name)");
    let a = args("name,id", "r3");
    // A unique key of two columns, named in any order, is one: accepted.
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    ok(d, &a);
    assert_eq!(pg.query(&dst, "SELECT count(*) FROM t"), "101");
    let a = args("name", "r4");
    fails(
        d,
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
        2,
        &["not a unique key", "unique (id,name)"],
    );
    assert_eq!(pg.query(&dst, "SELECT count(*) FROM t"), "101");
}

#[test]
fn issue_34_partitioned_target_gets_one_loader_per_partition() {
    let pg = PgCluster::shared();
    let src = pg.create_db("transfer_part_src");
    let dst = pg.create_db("transfer_part_dst");
    fill(pg, &src, 30_000);
    let dir = tempdir();
    let d = dir.path();
    out(pg, &src, "t", d, "p", "2", &[]);
    let data = join(d, "data-p");
    pg.query(
        &dst,
        "CREATE TABLE t (id bigint PRIMARY KEY, name text, amount numeric(12,2), note text, \
         at timestamptz) PARTITION BY RANGE (id); \
         CREATE TABLE t_lo PARTITION OF t FOR VALUES FROM (MINVALUE) TO (10001); \
         CREATE TABLE t_mid PARTITION OF t FOR VALUES FROM (10001) TO (20001); \
         CREATE TABLE t_rest PARTITION OF t DEFAULT",
    );
    let run_in = join(d, "in");
    let (r, err) = load(pg, &dst, "t", &data, &run_in, &[]);
    assert_eq!(r["transfer"]["verified"], true, "{r}");
    assert_eq!(event(&r, "load")["count"], 3, "{r}");
    assert_eq!(event(&r, "copy-in")["count"], 2, "{r}");
    assert!(err.contains("by 3 loaders (one per partition)"), "{err}");
    let text = ok(d, &["report", s(&run_in)]);
    assert!(
        text.contains("per loader") && text.contains("t_mid") && text.contains("rows inserted"),
        "{text}"
    );
    assert_eq!(digest_of(pg, &dst, "t"), digest_of(pg, &src, "t"));
    for p in ["t_lo", "t_mid", "t_rest"] {
        assert_eq!(
            pg.query(&dst, &format!("SELECT count(*) FROM ONLY {p}")),
            "10000",
            "{p}"
        );
    }
    // Upsert into it: the rows of t_mid changed first are updated, the others too.
    pg.query(
        &dst,
        "UPDATE t SET name = 'old' WHERE id BETWEEN 10001 AND 20000",
    );
    pg.query(&dst, "DELETE FROM t WHERE id > 20000");
    let (r, _) = load(
        pg,
        &dst,
        "t",
        &data,
        &join(d, "up"),
        &["--mode", "upsert", "--key", "id", "-q"],
    );
    assert_eq!(r["transfer"]["verified"], true, "{r}");
    assert_eq!(event(&r, "load")["count"], 3, "{r}");
    assert_eq!(
        (&r["transfer"]["inserted"], &r["transfer"]["updated"]),
        (&10_000.into(), &20_000.into()),
        "{r}"
    );
    assert_eq!(digest_of(pg, &dst, "t"), digest_of(pg, &src, "t"));

    // Rows that fit no partition are not lost silently: the run fails saying so.
    pg.query(
        &dst,
        "CREATE TABLE u (id bigint, name text, amount numeric(12,2), note text, at timestamptz) \
         PARTITION BY RANGE (id); \
         CREATE TABLE u_lo PARTITION OF u FOR VALUES FROM (1) TO (20001)",
    );
    let run_u = join(d, "u");
    let o = run(
        d,
        &[
            "transfer",
            "--from",
            s(&data),
            "--to",
            &table_uri(pg, &dst, "u"),
            "--run",
            s(&run_u),
            "-q",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let detail = manifest(&run_u)["outcome_detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        detail.contains("moved 20000 of the 30000 rows") && detail.contains("fit no partition"),
        "{detail}"
    );

    // One partition's loader fails: the others' rows stay, and the run says which and fails.
    pg.query(
        &dst,
        "CREATE TABLE v (id bigint, name text, amount numeric(12,2), note text, at timestamptz) \
         PARTITION BY RANGE (id); \
         CREATE TABLE v_lo PARTITION OF v FOR VALUES FROM (MINVALUE) TO (15001); \
         CREATE TABLE v_hi PARTITION OF v FOR VALUES FROM (15001) TO (MAXVALUE); \
         ALTER TABLE v_hi ADD CHECK (id <> 25000)",
    );
    let run_v = join(d, "v");
    let o = run(
        d,
        &[
            "transfer",
            "--from",
            s(&data),
            "--to",
            &table_uri(pg, &dst, "v"),
            "--run",
            s(&run_v),
            "-q",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let detail = manifest(&run_v)["outcome_detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        detail.contains("loader 0 (v_hi): INSERT: new row")
            && detail.contains("(23514)")
            && detail.contains("holds the rows loaded into v_lo")
            && detail.contains("partial load"),
        "{detail}"
    );
    assert_eq!(pg.query(&dst, "SELECT count(*) FROM v"), "15000");
}

/// (id, name, note, amount as text) of every row, by id: PostgreSQL's source table.
fn pg_rows(pg: &PgCluster, db: &str) -> Vec<(i64, Option<String>, Option<String>, String)> {
    let mut c = pg.connect(db);
    c.query(
        "SELECT id, name, note, amount::text FROM t ORDER BY id",
        &[],
    )
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
    .collect()
}

/// The same of a SQLite table, the amount as PostgreSQL writes a numeric(12,2) (two decimals).
fn sqlite_rows(file: &Path, table: &str) -> Vec<(i64, Option<String>, Option<String>, String)> {
    let c = rusqlite::Connection::open(file).unwrap();
    let mut st = c
        .prepare(&format!(
            "SELECT id, name, note, printf('%.2f', amount) FROM {table} ORDER BY id, rowid"
        ))
        .unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

#[test]
fn issue_34_transfer_into_sqlite_append_and_upsert() {
    let pg = PgCluster::shared();
    let src = pg.create_db("transfer_sqlite_src");
    fill(pg, &src, 20_000);
    let dir = tempdir();
    let d = dir.path();
    out(pg, &src, "t", d, "tbl", "2", &[]);
    out(
        pg,
        &src,
        "t",
        d,
        "csv",
        "2",
        &["--format", "csv", "--header"],
    );
    let file = join(d, "t.db");
    let c = rusqlite::Connection::open(&file).unwrap();
    c.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, amount NUMERIC, note TEXT, at TEXT);
         CREATE TABLE a (id INTEGER, name TEXT, amount NUMERIC, note TEXT, at TEXT);
         CREATE UNIQUE INDEX a_name ON a (name) WHERE id < 0;",
    )
    .unwrap();
    let want = pg_rows(pg, &src);
    let to = |table: &str| format!("sqlite:{}/{table}", file.display());
    let go = |data: &str, table: &str, tag: &str, extra: &[&str]| {
        let run_dir = join(d, tag);
        let t = to(table);
        let mut a = vec!["transfer", "--from", data, "--to", t.as_str()];
        a.extend(["--run", s(&run_dir)]);
        a.extend(extra);
        let o = run(d, &a);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{a:?}: {err}");
        (report_json(d, &run_dir), err)
    };
    let tbl = join(d, "data-tbl");
    let csv = join(d, "data-csv");

    // Into the empty table: every awkward value (delimiters, quotes, backslashes, newlines,
    // NULLs) as PostgreSQL holds it.
    let (r, _) = go(s(&tbl), "t", "s1", &["-q"]);
    assert_eq!(r["transfer"]["inserted"], 20_000, "{r}");
    assert_eq!(manifest(&join(d, "s1"))["target"]["kind"], "sqlite");
    assert_eq!(sqlite_rows(&file, "t"), want);

    // Upsert from the CSV files: the even ids changed, the odd ones gone.
    c.execute_batch(
        "UPDATE t SET name = 'old', note = NULL WHERE id % 2 = 0; DELETE FROM t WHERE id % 2 = 1",
    )
    .unwrap();
    let (r, err) = go(
        s(&csv),
        "t",
        "s2",
        &["--format", "csv", "--mode", "upsert", "--key", "id"],
    );
    assert_eq!(
        (&r["transfer"]["inserted"], &r["transfer"]["updated"]),
        (&10_000.into(), &10_000.into()),
        "{r}"
    );
    assert!(
        err.contains("--mode upsert: 10000 rows inserted, 10000 updated"),
        "{err}"
    );
    assert_eq!(sqlite_rows(&file, "t"), want);

    // Append: twice the rows; a partial unique index is no key for an upsert.
    go(s(&tbl), "a", "s3", &["-q"]);
    let (r, _) = go(s(&tbl), "a", "s4", &["--mode", "append", "-q"]);
    assert_eq!(r["transfer"]["inserted"], 20_000, "{r}");
    let twice: Vec<_> = want.iter().flat_map(|r| [r.clone(), r.clone()]).collect();
    assert_eq!(sqlite_rows(&file, "a"), twice);
    let t = to("a");
    fails(
        d,
        &[
            "transfer",
            "--from",
            s(&tbl),
            "--to",
            &t,
            "--mode",
            "upsert",
            "--key",
            "name",
            "--run",
            s(&join(d, "s5")),
        ],
        2,
        &["--key name: not a unique key of a", "partial"],
    );
    fails(
        d,
        &[
            "transfer",
            "--from",
            s(&tbl),
            "--to",
            &t,
            "--run",
            s(&join(d, "s6")),
        ],
        2,
        &["a is not empty", "--mode append"],
    );
}
