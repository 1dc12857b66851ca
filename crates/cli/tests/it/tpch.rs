//! `dbscope tpch gen|q1|load` and `dbscope run tpch-q1` on real files, a real SQLite database and a
//! real PostgreSQL server; Q1's answer is checked against DuckDB's (reference/tpch, committed).

use std::path::{Path, PathBuf};

use crate::cli::*;
use crate::common::pg::PgCluster;

/// DuckDB's Q1 answer over SF 0.01 lineitem.tbl (see reference/tpch/README.md for the command).
fn duckdb_reference() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../reference/tpch/q1_sf0.01.duckdb.out");
    std::fs::read_to_string(p).expect("reference/tpch/q1_sf0.01.duckdb.out")
}

/// Generates SF 0.01 `tables` into `dir/data` and returns that directory.
pub(crate) fn gen(dir: &Path, table: &str, extra: &[&str]) -> PathBuf {
    let mut args = vec![
        "tpch", "gen", "--sf", "0.01", "--table", table, "--out", "data", "-q",
    ];
    args.extend_from_slice(extra);
    ok(dir, &args);
    dir.join("data")
}

/// The answer table (header + rows) at the top of `tpch q1`'s output.
fn answer_lines(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .take_while(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

/// Asserts an answer equals DuckDB's: flags, sums and counts digit for digit; averages (DuckDB's
/// are doubles from its own division) to a relative 1e-15.
fn assert_matches_duckdb(lines: &[String]) {
    let reference = duckdb_reference();
    let expected: Vec<&str> = reference.lines().collect();
    assert_eq!(lines.len(), expected.len(), "{lines:?}");
    assert_eq!(lines[0], expected[0]);
    for (got, exp) in lines[1..].iter().zip(&expected[1..]) {
        let g: Vec<&str> = got.split('|').collect();
        let e: Vec<&str> = exp.split('|').collect();
        assert_eq!(g.len(), 10, "{got}");
        for i in [0, 1, 2, 3, 4, 5, 9] {
            assert_eq!(g[i], e[i], "column {i}: {got} vs {exp}");
        }
        for i in 6..9 {
            let (a, b): (f64, f64) = (g[i].parse().unwrap(), e[i].parse().unwrap());
            assert!(((a - b) / b).abs() < 1e-15, "column {i}: {got} vs {exp}");
        }
    }
}

#[test]
fn gen_writes_dbgen_row_counts() {
    let dir = tempdir();
    let out = ok(
        dir.path(),
        &[
            "tpch", "gen", "--sf", "0.01", "--out", "all", "--parts", "2",
        ],
    );
    // dbgen's row counts at SF 0.01; nation and region are written whole, once.
    for (file, rows) in [
        ("lineitem.1.tbl", 30_000),
        ("orders.1.tbl", 7_500),
        ("nation.tbl", 25),
        ("region.tbl", 5),
    ] {
        let line = out
            .lines()
            .find(|l| l.contains(&format!("/{file}\t")))
            .unwrap_or_else(|| panic!("{file} in {out}"));
        if file.starts_with("lineitem") {
            assert!(line.contains(" rows"), "{line}");
        } else {
            assert!(line.contains(&format!("\t{rows} rows\t")), "{line}");
        }
    }
    assert!(
        out.contains("generated 86805 rows in 14 file(s) at SF 0.01"),
        "{out}"
    );
    let data = gen(dir.path(), "nation", &["--format", "csv"]);
    let text = std::fs::read_to_string(data.join("nation.csv")).unwrap();
    assert!(text.starts_with("n_nationkey,n_name,n_regionkey,n_comment\n0,ALGERIA,0,"));
}

#[test]
fn q1_matches_duckdb_with_any_mappers_and_with_or_without_combiner() {
    let dir = tempdir();
    let data = gen(dir.path(), "lineitem", &[]);
    let file = data.join("lineitem.tbl");
    let mut first: Option<Vec<String>> = None;
    for mappers in ["1", "2", "7"] {
        for combiner in [true, false] {
            let mut args = vec!["tpch", "q1", s(&file), "--mappers", mappers, "--no-record"];
            if !combiner {
                args.push("--no-combiner");
            }
            let out = ok(dir.path(), &args);
            let lines = answer_lines(&out);
            assert_matches_duckdb(&lines);
            assert!(out.contains("60175 lines (59307 rows aggregated)"), "{out}");
            assert!(
                out.contains(&format!(
                    "{mappers} mapper(s), {mappers} split(s), combiner {}",
                    if combiner { "on" } else { "off" }
                )),
                "{out}"
            );
            // Not SF 1: no official check claimed.
            assert!(!out.contains("official"), "{out}");
            match &first {
                None => first = Some(lines),
                Some(f) => assert_eq!(&lines, f, "identical to the digit"),
            }
        }
    }
    // A directory of parts gives the same answer.
    let parts = tempdir();
    let pdata = gen(parts.path(), "lineitem", &["--parts", "3"]);
    let out = ok(
        parts.path(),
        &["tpch", "q1", s(&pdata), "--mappers", "2", "--no-record"],
    );
    let first = first.unwrap();
    assert_eq!(answer_lines(&out), first);
    assert!(out.contains("6 split(s)"), "{out}");

    // Parquet written by `tpch gen`: row groups are the splits; the same answer.
    let pq = tempdir();
    let pdata = gen(
        pq.path(),
        "lineitem",
        &["--format", "parquet", "--row-group-rows", "7000"],
    );
    for mappers in ["1", "2", "7"] {
        for combiner in [true, false] {
            let mut args = vec!["tpch", "q1", s(&pdata), "--mappers", mappers, "--no-record"];
            if !combiner {
                args.push("--no-combiner");
            }
            let out = ok(pq.path(), &args);
            assert_eq!(answer_lines(&out), first, "parquet, {mappers} mappers");
            assert!(out.contains("9 split(s)"), "{out}");
            // Issue 13: Parquet is counted in rows, not lines.
            assert!(
                out.contains(" rows (") && !out.contains(" lines ("),
                "{out}"
            );
        }
    }
}

#[test]
fn q1_is_recorded_as_a_run() {
    let dir = tempdir();
    let data = gen(dir.path(), "lineitem", &[]);
    for (m, name) in [("1", "m1"), ("2", "m2")] {
        let out = ok(
            dir.path(),
            &[
                "tpch",
                "q1",
                s(&data),
                "--mappers",
                m,
                "--repeat",
                "3",
                "--out",
                name,
            ],
        );
        assert!(out.contains(&format!("recorded in {name}")), "{out}");
        assert!(out.contains("(median of 3)"), "{out}");
        let run = join(dir.path(), name);
        let m_json = manifest(&run);
        assert_eq!(m_json["outcome"], "complete");
        assert_eq!(m_json["workload"]["name"], "tpch-q1-mapreduce");
        assert_eq!(m_json["workload"]["params"]["lines"], 60175);
        assert_eq!(m_json["workload"]["params"]["repeat"], 3);
        let r = report_json(dir.path(), &run);
        assert_eq!(event(&r, "q1")["count"], 3);
        assert_eq!(event(&r, "map")["count"], 3 * m.parse::<u64>().unwrap());
        assert_eq!(event(&r, "reduce")["count"], 3);
        assert_eq!(event(&r, "finalize")["count"], 3);
        assert_summary_sane(event(&r, "q1"));
        // Issue 34 item 5: Hadoop's job counters, one row per job: with the combiner each map
        // task ships at most Q1's 4 groups; the CPU time of the job's threads is there.
        assert!(out.contains("records shipped from map to reduce"), "{out}");
        let jobs = r["job"]["jobs"].as_array().expect("the job counters");
        assert_eq!(jobs.len(), 3, "{}", r["job"]);
        for j in jobs {
            assert_eq!(j["map_input_records"], 60175);
            assert_eq!(
                j["map_output_records"], 59307,
                "R: sum of the answer's count_order"
            );
            let shipped = j["reduce_input_records"].as_u64().unwrap();
            assert!(
                (4..=4 * 2 * m.parse::<u64>().unwrap()).contains(&shipped),
                "{j}"
            );
            assert_eq!(j["combine_output_records"], shipped);
            let cpu = j["cpu_ms"].as_f64().unwrap();
            assert!(cpu > 0.0, "{j}");
            let parts = j["map_cpu_ms"].as_f64().unwrap() + j["reduce_cpu_ms"].as_f64().unwrap();
            assert!((cpu - parts).abs() < 1e-6, "{j}");
        }
    }
    // Without the combiner every row that passed the filter is shipped.
    ok(
        dir.path(),
        &[
            "tpch",
            "q1",
            s(&data),
            "--mappers",
            "2",
            "--no-combiner",
            "--out",
            "nc",
        ],
    );
    let r = report_json(dir.path(), &join(dir.path(), "nc"));
    let j = &r["job"]["jobs"][0];
    assert_eq!(j["reduce_input_records"], 59307, "{j}");
    assert!(j["combine_output_records"].is_null(), "{j}");
    let text = ok(dir.path(), &["report", "nc"]);
    assert!(
        text.contains("records shipped to reduce") && text.contains("cumulative CPU"),
        "{text}"
    );
    // `compare` applies: --mappers 1 against --mappers 2.
    let out = ok(dir.path(), &["compare", "m1", "m2", "--event", "q1"]);
    assert!(out.contains("workload.params.mappers"), "{out}");
    assert!(out.contains("verdict"), "{out}");
}

/// Issue 27 item 5: `tpch q1 --repeat N` on a file another process truncates while the jobs run
/// (mapped or read, text or Parquet) ends with one error line naming the file, exit 2 — not a
/// SIGBUS (exit 135, no message) and not an answer of part of the file.
#[test]
fn q1_on_a_file_truncated_while_it_runs_is_a_clear_error() {
    let d = tempdir();
    let text = gen(d.path(), "lineitem", &[]).join("lineitem.tbl");
    let pq = d.path().join("pq");
    ok(
        d.path(),
        &[
            "tpch", "gen", "--sf", "0.01", "--table", "lineitem", "--format", "parquet", "--out",
            "pq", "-q",
        ],
    );
    let pq = std::fs::read_dir(&pq)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    for (file, extra) in [(&text, None), (&text, Some("--no-mmap")), (&pq, None)] {
        let copy = d.path().join(format!(
            "big.{}",
            file.extension().unwrap().to_str().unwrap()
        ));
        std::fs::copy(file, &copy).unwrap();
        let mut args = vec![
            "tpch",
            "q1",
            s(&copy),
            "--repeat",
            "1000",
            "--no-record",
            "-q",
        ];
        args.extend(extra);
        let child = dbscope(d.path())
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let len = std::fs::metadata(&copy).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&copy)
            .unwrap()
            .set_len(len / 3)
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(3),
            "{extra:?}: {:?}: {stderr}",
            out.status
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(&format!(
                "{}: the file changed while it was read",
                copy.display()
            )),
            "{stderr}"
        );
    }
    // Recorded, the failed job is a failed run that says why, with the repetitions before it.
    let copy = d.path().join("recorded.tbl");
    std::fs::copy(&text, &copy).unwrap();
    let run = d.path().join("failed-run");
    let child = dbscope(d.path())
        .args([
            "tpch",
            "q1",
            s(&copy),
            "--repeat",
            "1000",
            "-q",
            "--out",
            s(&run),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    std::fs::OpenOptions::new()
        .write(true)
        .open(&copy)
        .unwrap()
        .set_len(1000)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("the failed run is recorded in"), "{stderr}");
    let m = manifest(&run);
    assert_eq!(m["outcome"], "failed", "{m}");
    let why = m["outcome_detail"].as_str().unwrap();
    assert!(why.contains("the file changed while it was read"), "{why}");
    let done = m["workload"]["params"]["repeat"].as_u64().unwrap();
    assert!(
        done >= 1,
        "the repetitions before the failure are kept: {m}"
    );
    // The report reads it and says how it ended.
    let text = ok(d.path(), &["report", s(&run)]);
    assert!(text.contains("failed"), "{text}");
}

#[test]
fn q1_explain_prints_the_plan_without_running() {
    let dir = tempdir();
    let data = gen(dir.path(), "lineitem", &[]);
    let out = ok(
        dir.path(),
        &[
            "tpch",
            "q1",
            s(&data),
            "--explain",
            "--mappers",
            "3",
            "--delta",
            "112",
        ],
    );
    let order = [
        "scan", "filter", "project", "combine", "shuffle", "merge", "sort",
    ];
    let mut at = 0;
    for step in order {
        let i = out[at..]
            .find(step)
            .unwrap_or_else(|| panic!("{step} after byte {at} in {out}"));
        at += i;
    }
    assert!(out.contains("interval '112' day  (= 1998-08-11)"), "{out}");
    assert!(out.contains("map ×3"), "{out}");
    assert!(
        !dir.path().join("runs").exists(),
        "--explain records nothing"
    );
}

#[test]
fn q1_bad_input_is_a_clear_error() {
    let dir = tempdir();
    let good = "1|155190|7706|1|17|21168.23|0.04|0.02|N|O|1996-03-13|1996-02-12|1996-03-22|DELIVER IN PERSON|TRUCK|egular courts above the|\n";
    let write = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let truncated = write("cut.tbl", format!("{good}{good}{}", &good[..60]));
    fails(
        dir.path(),
        &["tpch", "q1", s(&truncated), "--no-record"],
        3,
        &["cut.tbl:3: truncated last line"],
    );
    let bad_date = write(
        "date.tbl",
        format!("{good}{good}{}", good.replace("1996-03-13", "1996-3-13")),
    );
    fails(
        dir.path(),
        &["tpch", "q1", s(&bad_date), "--mappers", "2", "--no-record"],
        3,
        &["date.tbl:3: field 11 (l_shipdate): expected a date YYYY-MM-DD, found \"1996-3-13\""],
    );
    let bad_num = write(
        "num.tbl",
        format!("{}{good}", good.replace("0.04", "0.04x")),
    );
    fails(
        dir.path(),
        &["tpch", "q1", s(&bad_num), "--no-record"],
        3,
        &[
            "num.tbl:1: field 7 (l_discount): expected a decimal",
            "\"0.04x\"",
        ],
    );
    let empty = write("empty.tbl", String::new());
    fails(
        dir.path(),
        &["tpch", "q1", s(&empty), "--no-record"],
        3,
        &["empty.tbl: empty file"],
    );
    let no_tbl = dir.path().join("none");
    std::fs::create_dir(&no_tbl).unwrap();
    std::fs::write(no_tbl.join("readme.txt"), "x").unwrap();
    fails(
        dir.path(),
        &["tpch", "q1", s(&no_tbl), "--no-record"],
        3,
        &["no lineitem*.tbl files in this directory"],
    );
    // Issue 13: CSV and Parquet made by `tpch gen` are named, with the command that makes what
    // each command reads.
    let csv = gen(dir.path(), "lineitem", &["--format", "csv"]);
    fails(
        dir.path(),
        &["tpch", "q1", s(&csv), "--no-record"],
        3,
        &[
            "lineitem.csv (CSV, from `dbscope tpch gen --format csv`)",
            "--format parquet",
        ],
    );
    fails(
        dir.path(),
        &["tpch", "load", s(&csv), "--target", "null", "-q"],
        3,
        &[
            "lineitem.csv (from `dbscope tpch gen --format csv`)",
            "tpch gen --format tbl",
        ],
    );
    std::fs::rename(&csv, dir.path().join("csvdata")).unwrap();
    // Corrupt Parquet (bytes flipped all over its data pages): an error, never a panic.
    let pq = gen(
        dir.path(),
        "lineitem",
        &["--format", "parquet", "--row-group-rows", "20000"],
    );
    fails(
        dir.path(),
        &["tpch", "load", s(&pq), "--target", "null", "-q"],
        3,
        &["lineitem.parquet (from `dbscope tpch gen --format parquet`)"],
    );
    let mut bytes = std::fs::read(pq.join("lineitem.parquet")).unwrap();
    let end = bytes.len() - 20_000;
    for i in (1000..end).step_by(997) {
        bytes[i] ^= 0x5a;
    }
    let corrupt = dir.path().join("corrupt.parquet");
    std::fs::write(&corrupt, &bytes).unwrap();
    fails(
        dir.path(),
        &["tpch", "q1", s(&corrupt), "--mappers", "2", "--no-record"],
        3,
        &["corrupt.parquet: "],
    );
    // tpch-q1 without loaded data.
    fails(
        dir.path(),
        &["run", "tpch-q1", "--target", "null", "--ops", "1", "-q"],
        2,
        &["tpch-q1 needs the TPC-H tables"],
    );
    let empty_db = format!("sqlite:{}", dir.path().join("empty.db").display());
    fails(
        dir.path(),
        &["run", "tpch-q1", "--target", &empty_db, "--ops", "1", "-q"],
        2,
        &[
            "no map/combine/reduce reference answer",
            "dbscope tpch load",
        ],
    );
    let fake = write("lineitem.parquet", "PAR1 but not Parquet".into());
    fails(
        dir.path(),
        &["tpch", "q1", s(&fake), "--no-record"],
        3,
        &["lineitem.parquet: not a Parquet file"],
    );
    fails(
        dir.path(),
        &["tpch", "q1", s(&truncated), "--mappers", "0"],
        2,
        &["--mappers must be between 1 and 4096"],
    );
}

/// Loads SF 0.01 into `target`, runs `tpch-q1` twice, then corrupts one price and expects a loud
/// failure showing both answers.
fn load_run_and_detect_a_mismatch(dir: &Path, target: &str, parts: &str, corrupt: impl FnOnce()) {
    gen(dir, "all", &["--parts", parts]);
    let out = ok(
        dir,
        &[
            "tpch", "load", "data", "--target", target, "--fresh", "-q", "--delta", "90",
            "--delta", "60", "--run", "load-run",
        ],
    );
    assert!(out.contains("lineitem\t60175 rows"), "{out}");
    // Issue 15: the load is a run: an event per file named by its table, counters per table.
    let load_run = join(dir, "load-run");
    assert!(
        out.contains("recorded") && out.contains("load-run"),
        "{out}"
    );
    let m = manifest(&load_run);
    assert_eq!(m["outcome"], "complete");
    assert_eq!(m["workload"]["name"], "tpch-load");
    if target.starts_with("mysql:") {
        // The load made the tables: their engines are read once they exist.
        assert_eq!(
            m["target"]["settings_effective"]["engine.lineitem"], "InnoDB",
            "{}",
            m["target"]
        );
    }
    // postgres://dbscope:PASSWORD@/…: the password is nowhere in the run's manifest.
    if let Some(pw) = target
        .strip_prefix("postgres://dbscope:")
        .and_then(|r| r.split('@').next())
    {
        let text = std::fs::read_to_string(load_run.join("manifest.json")).unwrap();
        assert!(!text.contains(pw), "password in the manifest");
    }
    let r = report_json(dir, &load_run);
    let parts_n: u64 = parts.parse().unwrap();
    let li = event(&r, "lineitem");
    assert_eq!(li["count"], parts_n, "{li}");
    assert_eq!(li["errors"], 0);
    assert_eq!(event(&r, "region")["count"], 1);
    assert_eq!(event(&r, "create-tables")["count"], 1);
    // The chunks the loader sent (1 MiB COPY data / 1,000-row INSERTs): ≥ 2 per table this size.
    let chunks = event(&r, "lineitem chunk");
    assert!(chunks["count"].as_u64().unwrap() >= 2, "{chunks}");
    assert_eq!(r["tpch_load"]["rows"], 86_805);
    let tables = r["tpch_load"]["tables"].as_array().unwrap();
    assert_eq!(tables.len(), 8);
    let li_row = tables.iter().find(|t| t["table"] == "lineitem").unwrap();
    assert_eq!(li_row["rows"], 60_175);
    assert_eq!(li_row["files"], parts_n);
    assert_eq!(li_row["outcome"], "ok");
    assert!(li_row["rows_per_s"].as_f64().unwrap() > 0.0, "{li_row}");
    assert!(li_row["mb_per_s"].as_f64().unwrap() > 0.0, "{li_row}");
    let files_bytes: u64 = std::fs::read_dir(join(dir, "data"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().starts_with("lineitem"))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert_eq!(li_row["bytes"], files_bytes);
    assert!(out.contains("(DELTA 60, 90)"), "{out}");
    assert!(
        out.contains("stored the map/combine/reduce Q1 answer"),
        "{out}"
    );
    // Issue 13: the closing line names the way the rows went in.
    let method = if target.starts_with("postgres") {
        "COPY … FROM STDIN"
    } else if target.starts_with("mysql") {
        "LOAD DATA LOCAL INFILE"
    } else {
        "prepared multi-row INSERTs"
    };
    assert!(out.contains(method), "{out}");
    fails(
        dir,
        &[
            "tpch",
            "load",
            "data",
            "--target",
            target,
            "-q",
            "--run",
            "load-again",
        ],
        2,
        &["cannot create table region", "add --fresh"],
    );
    // A load that failed is recorded as failed, its reason kept; compare reads two loads.
    let again = manifest(&join(dir, "load-again"));
    assert_eq!(again["outcome"], "failed");
    assert!(
        again["outcome_detail"]
            .as_str()
            .unwrap()
            .contains("cannot create table region"),
        "{again}"
    );
    ok(
        dir,
        &[
            "tpch", "load", "data", "--target", target, "--fresh", "-q", "--delta", "90",
            "--delta", "60", "--run", "load-2",
        ],
    );
    let cmp = ok(dir, &["compare", "load-run", "load-2"]);
    assert!(
        cmp.contains("lineitem") && cmp.contains("TPC-H load"),
        "{cmp}"
    );
    ok(
        dir,
        &[
            "run", "tpch-q1", "--target", target, "--ops", "2", "--out", "r", "-q",
        ],
    );
    let run = join(dir, "r");
    let r = report_json(dir, &run);
    let e = event(&r, "q1");
    assert_eq!(e["count"], 2);
    assert_eq!(e["errors"], 0);
    assert_eq!(manifest(&run)["workload"]["name"], "tpch-q1");
    // Issue 34: the run prints Q1's answer after its summary, as psql would; the same rows are
    // in the run (report --json).
    let shown = ok(
        dir,
        &[
            "run", "tpch-q1", "--target", target, "--ops", "1", "--out", "r-shown",
        ],
    );
    let head = shown
        .lines()
        .position(|l| l.starts_with(" l_returnflag | l_linestatus |"))
        .unwrap_or_else(|| panic!("no answer rows: {shown}"));
    let lines: Vec<&str> = shown.lines().skip(head).collect();
    assert!(
        lines[1].starts_with("--------------+--------------+"),
        "{shown}"
    );
    let rows = report_json(dir, &join(dir, "r-shown"))["answer"]["rows"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!rows.is_empty());
    assert_eq!(
        lines[2 + rows.len()],
        format!("({} rows)", rows.len()),
        "{shown}"
    );
    for (line, row) in lines[2..].iter().zip(&rows) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 10, "{line}");
        assert_eq!(
            cells[0],
            row["l_returnflag"].as_str().unwrap().trim(),
            "{line}"
        );
        assert_eq!(cells[2], row["sum_qty"].as_str().unwrap(), "{line}");
        assert_eq!(cells[9], row["count_order"].as_str().unwrap(), "{line}");
    }
    // Issue 13: another DELTA, checked against the answer stored for it.
    ok(
        dir,
        &[
            "run", "tpch-q1", "--target", target, "--ops", "1", "--delta", "60", "--out", "r60",
            "-q",
        ],
    );
    let run60 = join(dir, "r60");
    assert_eq!(event(&report_json(dir, &run60), "q1")["errors"], 0);
    let params = &manifest(&run60)["workload"]["params"];
    assert_eq!(params["delta_days"], 60, "{params}");
    assert!(params["query"].as_str().unwrap().contains("60"), "{params}");
    fails(
        dir,
        &[
            "run", "tpch-q1", "--target", target, "--ops", "1", "--delta", "30", "--out", "r30",
            "-q",
        ],
        2,
        &[
            "no map/combine/reduce reference answer for DELTA 30",
            "it holds DELTA 60, 90",
            "--delta 30",
        ],
    );
    corrupt();
    let err = fails(
        dir,
        &[
            "run", "tpch-q1", "--target", target, "--ops", "1", "--out", "bad", "-q",
        ],
        1,
        &[
            "Q1 in SQL differs from the map/combine/reduce answer (row 3 sum_base_price",
            "database: A|F|380456.00|",
            "N|O|742802.00|1041502841.46|",
            "map/combine/reduce: A|F|380456.00|",
            "N|O|742802.00|1041502841.45|",
        ],
    );
    assert!(!err.contains("panicked"));
}

#[test]
fn sqlite_load_and_run_tpch_q1() {
    let dir = tempdir();
    let db = dir.path().join("tpch.db");
    let target = format!("sqlite:{}", db.display());
    load_run_and_detect_a_mismatch(dir.path(), &target, "1", || {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute(
            "UPDATE lineitem SET l_extendedprice = l_extendedprice + 0.01 WHERE rowid = 1",
            [],
        )
        .unwrap();
    });
}

#[test]
fn postgres_load_and_run_tpch_q1() {
    let pg = PgCluster::shared();
    let db = pg.create_db("tpch");
    let dir = tempdir();
    let uri = pg.uri(&db);
    // Three parts per table: loaded by parallel sessions.
    load_run_and_detect_a_mismatch(dir.path(), &uri, "3", || {
        pg.query(
            &db,
            "UPDATE lineitem SET l_extendedprice = l_extendedprice + 0.01 \
             WHERE l_orderkey = 1 AND l_linenumber = 1",
        );
    });
}

/// Issue 30: the same on MariaDB: LOAD DATA LOCAL INFILE by parallel sessions, Q1's sums exact
/// and its averages (with div_precision_increment 30) to 10⁻¹², a corrupted price caught.
#[test]
fn mariadb_load_and_run_tpch_q1() {
    let my = crate::common::mariadb::MariaDb::shared();
    let db = my.create_db("tpch");
    let dir = tempdir();
    let uri = my.uri(&db);
    load_run_and_detect_a_mismatch(dir.path(), &uri, "3", || {
        my.query(
            &db,
            "UPDATE lineitem SET l_extendedprice = l_extendedprice + 0.01 \
             WHERE l_orderkey = 1 AND l_linenumber = 1",
        );
    });
}

#[test]
fn postgres_copy_refuses_a_bad_line_and_loads_nothing_of_that_file() {
    let pg = PgCluster::shared();
    let db = pg.create_db("tpchbad");
    let dir = tempdir();
    gen(dir.path(), "region", &[]);
    let file = join(dir.path(), "data/region.tbl");
    let text = std::fs::read_to_string(&file).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "2|ASIA|"; // one field missing
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    fails(
        dir.path(),
        &[
            "tpch",
            "load",
            "data",
            "--target",
            &pg.uri(&db),
            "--fresh",
            "-q",
            "--run",
            "bad-run",
        ],
        // A malformed input file is bad input (exit 3), as for every other reader.
        3,
        &["region.tbl:3: expected 3 '|'-terminated fields for table region, found 2"],
    );
    // Issue 15: recorded as a failed run, the file's event failed with it.
    let m = manifest(&join(dir.path(), "bad-run"));
    assert_eq!(m["outcome"], "failed");
    assert!(
        m["outcome_detail"]
            .as_str()
            .unwrap()
            .contains("region.tbl:3"),
        "{m}"
    );
    let r = report_json(dir.path(), &join(dir.path(), "bad-run"));
    assert_eq!(event(&r, "region")["errors"], 1);
    assert_eq!(
        pg.query(&db, "SELECT count(*) FROM region"),
        "0",
        "COPY is all or nothing"
    );
}

/// `Session::query_rows` (what `run tpch-q1` reads Q1's rows with) on a real SQLite file and the
/// real PostgreSQL server: text values, NULL as `None`, exact NUMERIC, bound parameters.
#[test]
fn query_rows_returns_text_rows_on_sqlite_and_postgres() {
    use dbscope_db::{open_target, Param};
    let dir = tempdir();
    let pg = PgCluster::shared();
    let db = pg.create_db("rows");
    let targets = [
        (
            format!("sqlite:{}", dir.path().join("rows.db").display()),
            "?1",
            "?2",
            "1.25",
        ),
        (pg.uri(&db), "$1", "$2", "1.2500"),
    ];
    for (spec, p1, p2, price) in targets {
        let target = open_target(&spec, &[]).unwrap();
        let mut s = target.connect().unwrap();
        s.batch(
            "CREATE TABLE t (k INTEGER, name VARCHAR(10), price DECIMAL(15,4), note VARCHAR(5))",
        )
        .unwrap();
        s.batch(
            "INSERT INTO t VALUES (1, 'one', 1.2500, NULL), (2, 'two', 20.5, 'x'), (3, 'three', 300, 'y')",
        )
        .unwrap();
        let rows = s
            .query_rows(
                &format!("SELECT k, name, price, note FROM t WHERE k >= {p1} AND name <> {p2} ORDER BY k"),
                &[Param::Int(1), Param::Text("two".into())],
            )
            .unwrap();
        let text = |v: &Option<String>| v.clone().unwrap_or_else(|| "NULL".into());
        let got: Vec<String> = rows
            .iter()
            .map(|r| r.iter().map(text).collect::<Vec<_>>().join("|"))
            .collect();
        let (a, b) = match price {
            "1.25" => ("1|one|1.25|NULL", "3|three|300|y"),
            _ => ("1|one|1.2500|NULL", "3|three|300.0000|y"),
        };
        assert_eq!(got, [a, b], "{spec}");
        // NUMERIC sums are exact on PostgreSQL; SQLite's are doubles.
        let sum = s.query_rows("SELECT sum(price) FROM t", &[]).unwrap();
        assert!(
            sum == [[Some("321.75".to_string())]] || sum == [[Some("321.7500".to_string())]],
            "{spec}: {sum:?}"
        );
        let e = s.query_rows("SELECT nope FROM t", &[]).unwrap_err();
        assert!(e.message.contains("nope"), "{spec}: {e}");
        // The session still works after the error.
        assert_eq!(
            s.query_rows("SELECT 7", &[]).unwrap(),
            [[Some("7".to_string())]]
        );
    }
}
