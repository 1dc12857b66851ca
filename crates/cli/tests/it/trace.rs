//! `dbscope trace profile|import` and `report FILE.trc` on the Oracle 10046 fixtures of crates/trace.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::cli::{event, fails, manifest, ok, report_json, run, s, tempdir};

pub(crate) fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../sources/trace/tests/fixtures")
        .join(rel)
}

pub(crate) const MULTI: &str = "handmade/multi_session_trcsess.trc";
const BROKEN: &str = "oracle-10046/priitp2__trctools__broken_trace.trc";
const RAC: &str = "oracle-10046/skeydan__sql_trace_parser__CDB11_ora_27190.trc";

fn profile_json(dir: &Path, args: &[&str]) -> Value {
    let mut a = vec!["trace", "profile", "--json"];
    a.extend_from_slice(args);
    serde_json::from_str(&ok(dir, &a)).expect("profile --json is JSON")
}

fn row<'a>(p: &'a Value, name: &str) -> &'a Value {
    p["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no row {name} in {p}"))
}

#[test]
fn profile_text_and_json_agree_on_r() {
    let d = tempdir();
    let f = fixture(MULTI);
    let text = ok(d.path(), &["trace", "profile", s(&f)]);
    // R from totals.awk (tests/fixtures/handmade/multi_session_trcsess.tsv): 300719 µs (the
    // 60 µs of the first PARSE lie before the trace's first timestamp).
    assert!(text.contains("R = 0.300719 s"), "{text}");
    assert!(text.contains("response time by event"), "{text}");
    assert!(text.contains("multi_session_trcsess.trc:64"), "{text}");
    let p = profile_json(d.path(), &[s(&f)]);
    assert_eq!(p["r_us"], 300719);
    assert_eq!(p["rows_total_us"], 300719);
    assert_eq!(p["sessions"], 2);
    assert_eq!(row(&p, "log file sync")["calls"], 2);
    assert_eq!(row(&p, "log file sync")["total_us"], 292823);
    // Skew: 1043 µs in the 1 ms bucket, 291780 µs in the 100 ms bucket.
    assert_eq!(
        row(&p, "log file sync")["skew_counts"],
        serde_json::json!([0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0])
    );
}

#[test]
fn profile_filters() {
    let d = tempdir();
    let f = fixture(MULTI);
    // Only statement bbbbbbbbbbbb2: its calls' own time (550 µs of e, minus its child's 420) and
    // the waits inside them.
    let p = profile_json(d.path(), &[s(&f), "--sqlid", "bbbbbbbbbbbb2"]);
    assert_eq!(p["statements"].as_array().unwrap().len(), 1);
    assert_eq!(p["statements"][0]["e_us"], 550);
    assert_eq!(p["r_us"], 550 - 420);
    // Only one event in the rows.
    let p = profile_json(d.path(), &[s(&f), "--event", "log file sync"]);
    let waits: Vec<&Value> = p["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "wait")
        .collect();
    assert_eq!(waits.len(), 1);
    // Wall clock: the second part of session 101 (tim 1000106600…) is ~0.1 s after the anchor
    // 2024-03-26T18:58:52-07:00 = 01:58:52Z; --since 01:58:52.15Z keeps only it (session 102 starts at .100).
    let p = profile_json(d.path(), &[s(&f), "--since", "2024-03-27T01:58:52.150Z"]);
    assert_eq!(row(&p, "log file sync")["calls"], 1);
    assert_eq!(p["r_us"], 90 + 291780 + 3);
    let p = profile_json(d.path(), &[s(&f), "--until", "2024-03-27 01:58:52.150000"]);
    assert_eq!(row(&p, "log file sync")["calls"], 1);
    fails(
        d.path(),
        &["trace", "profile", s(&f), "--since", "yesterday"],
        2,
        &["--since", "not a time"],
    );
}

/// `dbscope ARGS` in `dir` with `input` written to its standard input through a pipe.
fn piped(dir: &Path, args: &[&str], input: Vec<u8>) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = crate::cli::dbscope(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dbscope starts");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("dbscope ends");
    writer
        .join()
        .unwrap()
        .expect("the trace is written to the pipe");
    out
}

/// `-` is standard input, as `cat -` reads it: a pipe (read as a stream; `import` reads it twice,
/// so it keeps it in a temporary file) and a redirected file give what the file itself gives.
#[test]
fn standard_input_as_dash() {
    let d = tempdir();
    let data = std::fs::read(fixture(RAC)).unwrap();
    let from_file = profile_json(d.path(), &[s(&fixture(RAC))]);
    let out = piped(d.path(), &["trace", "profile", "--json", "-"], data.clone());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let from_pipe: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(from_pipe["r_us"], from_file["r_us"]);
    assert_eq!(from_pipe["events"], from_file["events"]);
    assert_eq!(
        from_pipe["files"][0]["path"], "stdin",
        "{}",
        from_pipe["files"]
    );
    let redirected = crate::cli::dbscope(d.path())
        .args(["trace", "profile", "--json", "-"])
        .stdin(std::fs::File::open(fixture(RAC)).unwrap())
        .output()
        .unwrap();
    let redirected: Value = serde_json::from_slice(&redirected.stdout).unwrap();
    assert_eq!(redirected["events"], from_file["events"]);

    let (a, b) = (d.path().join("from-file"), d.path().join("from-pipe"));
    ok(
        d.path(),
        &["trace", "import", s(&fixture(RAC)), "--out", s(&a)],
    );
    let out = piped(d.path(), &["trace", "import", "-", "--out", s(&b)], data);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = |run: &Path| std::fs::read(run.join("events.dsev")).unwrap();
    assert!(!events(&a).is_empty());
    assert_eq!(
        events(&a),
        events(&b),
        "the piped import holds the same events"
    );

    let out = piped(
        d.path(),
        &["trace", "profile", "-"],
        b"not a trace\n".to_vec(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("stdin: no Oracle 10046 trace content"));
}

#[test]
fn several_files_and_gzip() {
    let d = tempdir();
    let gz = d.path().join("rac.trc.gz");
    let data = std::fs::read(fixture(RAC)).unwrap();
    let status = std::process::Command::new("gzip")
        .arg("-c")
        .arg(fixture(RAC))
        .stdout(std::fs::File::create(&gz).unwrap())
        .status()
        .expect("gzip runs");
    assert!(status.success());
    assert!(std::fs::metadata(&gz).unwrap().len() < data.len() as u64);
    let plain = profile_json(d.path(), &[s(&fixture(RAC))]);
    let packed = profile_json(d.path(), &[s(&gz)]);
    assert_eq!(plain["r_us"], packed["r_us"]);
    // From totals.awk: R = 39789700 µs.
    assert_eq!(packed["r_us"], 39789700);
    let both = profile_json(d.path(), &[s(&fixture(RAC)), s(&fixture(MULTI))]);
    assert_eq!(both["r_us"], 39789700 + 300719);
    assert_eq!(both["files"].as_array().unwrap().len(), 2);
}

#[test]
fn malformed_lines_warn_and_strict_fails() {
    let d = tempdir();
    let f = fixture(BROKEN);
    let text = ok(d.path(), &["trace", "profile", s(&f)]);
    assert!(text.contains("3 warnings (malformed lines)"), "{text}");
    assert!(
        text.contains("broken_trace.trc:43: a db call field is not a number"),
        "{text}"
    );
    fails(
        d.path(),
        &["trace", "profile", "--strict", s(&f)],
        3,
        &["broken_trace.trc:43", "--strict"],
    );
    fails(
        d.path(),
        &["trace", "profile", "no-such.trc"],
        3,
        &["no-such.trc"],
    );
    // Binary garbage: no records, no panic, and (issue 13) a clear refusal rather than an empty
    // profile with exit 0.
    let junk = d.path().join("junk.trc");
    let bytes: Vec<u8> = (0..200_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(&junk, bytes).unwrap();
    fails(
        d.path(),
        &["trace", "profile", "--json", s(&junk)],
        2,
        &["junk.trc", "no Oracle 10046 trace content recognised"],
    );
}

#[test]
fn issue_13_a_trace_started_mid_call_is_clipped_to_its_window() {
    // Tracing began 2 s into a FETCH (e=2012000 ending at the first tim=10000000 + 12000); the
    // first line, a wait of 3 ms, opens the window where it began (issue 34 item 3).
    let d = tempdir();
    let f = fixture("handmade/trace_started_mid_call.trc");
    let text = ok(d.path(), &["trace", "profile", s(&f)]);
    assert!(
        text.contains(
            "R = 0.115025 s  (wall span 0.115025 s; unaccounted-for between calls 0.000000 s"
        ),
        "{text}"
    );
    assert!(
        text.contains("clipped: 1.997000 s of calls and waits that began before the trace's first timestamp (1 call, 0 waits)"),
        "{text}"
    );
    let p = profile_json(d.path(), &[s(&f)]);
    assert_eq!(p["r_us"], 115025);
    assert_eq!(p["wall_span_us"], 115025);
    assert_eq!(p["unaccounted_between_calls_us"], 0);
    assert_eq!(p["clipped_us"], 1_997_000);
    assert_eq!(p["clipped_calls"], 1);
    assert_eq!(p["clipped_waits"], 0);
    // The run made from it starts where the first wait began, and its FETCH lasts what of it lies
    // inside the trace.
    let run = d.path().join("mid");
    ok(d.path(), &["trace", "import", s(&f), "--out", s(&run)]);
    assert_eq!(manifest(&run)["started_utc"], "2024-05-01T09:59:59.997Z");
    let r = report_json(d.path(), &run);
    assert_eq!(event(&r, "FETCH")["summary_us"]["max"], 15000.0);
}

/// Issue 34 item 3: `trace import` recorded each session's first wait as 0 µs (`report` showed
/// `Min. 0.0` and `--top` left out the 1,043 µs wait that `trace profile` lists). Each session of
/// this trace begins with a `log file sync` of known `ela` (1,043 and 877 µs).
#[test]
fn issue_34_a_sessions_first_wait_is_imported_whole() {
    let d = tempdir();
    let f = fixture("handmade/first_wait_per_session.trc");
    let r: Value =
        serde_json::from_str(&ok(d.path(), &["report", s(&f), "--json", "--top", "100"]))
            .expect("report --json is JSON");
    let lfs = event(&r, "log file sync");
    assert_eq!(lfs["count"], 4);
    // The shortest is the second session's first wait, not a 0.
    assert_eq!(lfs["summary_us"]["min"], 877.0);
    let top = r["top"]["events"].as_array().unwrap();
    assert_eq!(r["top"]["of"], top.len(), "--top 100 lists every event");
    let first = top
        .iter()
        .find(|e| {
            e["source"]
                .as_str()
                .is_some_and(|s| s.ends_with("first_wait_per_session.trc:9"))
        })
        .expect("the first session's first wait is in --top");
    assert_eq!(
        (&first["name"], &first["duration_us"]),
        (&Value::from("log file sync"), &Value::from(1043.0))
    );
    let text = ok(d.path(), &["report", s(&f), "--top", "4"]);
    assert!(
        text.lines()
            .any(|l| l.contains("log file sync") && l.contains("1043.000")),
        "{text}"
    );
    // trace profile and report agree on the count and the sum per wait name.
    let p = profile_json(d.path(), &[s(&f)]);
    let mut from_report = std::collections::BTreeMap::<String, (u64, f64)>::new();
    for e in top {
        let x = from_report
            .entry(e["name"].as_str().unwrap().to_string())
            .or_default();
        x.0 += 1;
        x.1 += e["duration_us"].as_f64().unwrap();
    }
    let waits: Vec<&Value> = p["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "wait")
        .collect();
    assert_eq!(waits.len(), 3, "{p}");
    for w in waits {
        let name = w["name"].as_str().unwrap();
        let (n, sum) = from_report[name];
        assert_eq!(w["calls"].as_u64(), Some(n), "{name}");
        assert_eq!(w["total_us"].as_f64(), Some(sum), "{name}");
    }
    assert_eq!(
        row(&p, "log file sync")["total_us"],
        1043 + 2210 + 877 + 1500
    );
}

#[test]
fn import_makes_an_ordinary_run() {
    let d = tempdir();
    let run = d.path().join("flash");
    let out = ok(
        d.path(),
        &["trace", "import", s(&fixture(MULTI)), "--out", s(&run)],
    );
    assert!(out.contains("imported 17 events from 2 sessions"), "{out}");
    let m = manifest(&run);
    assert_eq!(m["source"], "trace");
    assert_eq!(m["workload"]["name"], "oracle-10046");
    assert_eq!(m["outcome"], "complete");
    assert_eq!(m["events_written"], 17);
    let r = report_json(d.path(), &run);
    let lfs = event(&r, "log file sync");
    assert_eq!(lfs["count"], 2);
    assert_eq!(lfs["summary_us"]["max"], 291780.0);
    assert_eq!(lfs["summary_us"]["min"], 1043.0);
    assert_eq!(event(&r, "EXEC")["count"], 4);
    // One attribute line per event, in event order, with file:line and p1..p3.
    let attrs = std::fs::read_to_string(run.join("trace-attrs.jsonl")).unwrap();
    let lines: Vec<Value> = attrs
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 17);
    let slow = lines
        .iter()
        .find(|a| a["line"] == 64)
        .expect("the slow log file sync");
    assert_eq!(slow["params"], "buffer#=102074 sync scn=1266588637 p3=0");
    assert_eq!(slow["obj"], -1);
    assert_eq!(slow["in_call"], false);
    // Importing twice into the same run is refused.
    fails(
        d.path(),
        &["trace", "import", s(&fixture(MULTI)), "--out", s(&run)],
        2,
        &["already holds a run"],
    );
}

#[test]
fn report_reads_a_trace_file_directly() {
    let d = tempdir();
    let r: Value =
        serde_json::from_str(&ok(d.path(), &["report", s(&fixture(MULTI)), "--json"])).unwrap();
    assert_eq!(event(&r, "log file sync")["count"], 2);
    assert_eq!(r["run"]["source"], "trace");
    // Nothing is left behind in the temp directory's run.
    let text = ok(d.path(), &["report", s(&fixture(MULTI))]);
    assert!(text.contains("log file sync"), "{text}");
}

#[test]
fn issue_13_compare_of_trace_files_names_the_files() {
    let d = tempdir();
    let (a, b) = (fixture(MULTI), fixture(RAC));
    let html = d.path().join("cmp.html");
    let text = ok(d.path(), &["compare", s(&a), s(&b), "--html", s(&html)]);
    // The header lines name the trace files, not the temporary runs they were imported into.
    assert!(text.contains(&format!("A  {}", a.display())), "{text}");
    assert!(text.contains(&format!("B  {}", b.display())), "{text}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains(&format!("A = {}", a.display())), "{page}");
}

#[test]
fn issue_13_input_that_is_not_a_trace_is_refused() {
    let d = tempdir();
    let empty = d.path().join("empty.trc");
    std::fs::write(&empty, b"").unwrap();
    let noise = d.path().join("noise.trc");
    // Bytes that are no trace: binary and text lines, none a 10046 record or header.
    let bytes: Vec<u8> = (0..4000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(
        &noise,
        [&bytes[..], b"\nhello world\nnot a trace\n"].concat(),
    )
    .unwrap();
    for (file, what) in [(&empty, "the file is empty"), (&noise, "bytes read")] {
        fails(
            d.path(),
            &["trace", "profile", s(file)],
            2,
            &["no Oracle 10046 trace content recognised", what],
        );
        fails(
            d.path(),
            &["trace", "import", s(file), "--out", "r"],
            2,
            &["no Oracle 10046 trace content recognised"],
        );
        assert!(!d.path().join("r").exists(), "no empty run is left behind");
        fails(
            d.path(),
            &["report", s(file)],
            2,
            &["no Oracle 10046 trace content recognised"],
        );
    }
    // A real trace next to it still reads.
    ok(d.path(), &["trace", "profile", s(&fixture(MULTI))]);
}

#[test]
fn issue_27_blank_lines_and_binaries_are_refused() {
    let d = tempdir();
    let blank = d.path().join("blank.trc");
    std::fs::write(&blank, b"\n\n  \n\t\r\n".repeat(500)).unwrap();
    let binary = d.path().join("binary.trc");
    let exe = std::fs::read(env!("CARGO_BIN_EXE_dbscope")).unwrap();
    std::fs::write(&binary, &exe[..exe.len().min(1 << 20)]).unwrap();
    for file in [&blank, &binary] {
        fails(
            d.path(),
            &["trace", "profile", s(file)],
            2,
            &["no Oracle 10046 trace content recognised", "bytes read"],
        );
    }
}

#[test]
fn issue_13_profile_text_shows_reads_and_plans() {
    // From the fixture's lines for sqlid atxg62s17nkj4: FETCH r=10 p=1 cr=4, FETCH r=4 p=0 cr=1,
    // one STAT line (INDEX RANGE SCAN, obj 89440, cnt 14).
    let d = tempdir();
    let f = fixture("oracle-10046/priitp2__trctools__two_statements_one_cursor.trc");
    let text = ok(d.path(), &["trace", "profile", s(&f)]);
    assert!(
        text.contains("rows    phys rd   logical rd  text"),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("atxg62s17nkj4"))
        .expect("the statement's row");
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        &cols[6..9],
        ["14", "1", "5"],
        "rows, physical and logical reads: {row}"
    );
    assert!(
        !text.contains("INDEX RANGE SCAN"),
        "plans only with --plans"
    );
    let text = ok(d.path(), &["trace", "profile", "--plans", s(&f)]);
    assert!(
        text.contains("        1         14      89440  INDEX RANGE SCAN SOMETHING_ID_IDX"),
        "{text}"
    );
}

/// Reads an export's parameter columns back with the tools people use (DuckDB on both files,
/// pandas on CSV, pyarrow on Parquet) and prints them per row, as JSON.
const PARAMS_SCRIPT: &str = r#"
import json, sys
import duckdb, pandas as pd, pyarrow.parquet as pq
csv_path, pq_path = sys.argv[1:3]
cols = ["event", "obj", "p1", "p2", "p3", "p1_name", "p2_name", "p3_name"]
def clean(v):
    if v is None or (isinstance(v, float) and v != v):
        return None
    return int(v) if isinstance(v, float) else v
lit = lambda p: "'" + p.replace("'", "''") + "'"
out = {
    "pyarrow": pq.read_table(pq_path).select(cols).to_pylist(),
    "pandas_csv": [
        {k: clean(v) for k, v in r.items()}
        for r in pd.read_csv(csv_path, dtype={c: "string" for c in cols[5:]})[cols]
        .astype(object).to_dict("records")
    ],
}
for name, src in [("duckdb_parquet", f"read_parquet({lit(pq_path)})"),
                  ("duckdb_csv", f"read_csv({lit(csv_path)}, header=true)")]:
    rel = duckdb.sql(f"select {', '.join(cols)} from {src}")
    out[name] = [dict(zip(cols, r)) for r in rel.fetchall()]
    out[name + "_types"] = {r[0]: r[1] for r in duckdb.sql(f"describe select {', '.join(cols)} from {src}").fetchall()}
print(json.dumps(out, default=str))
"#;

/// Imports `trace`, exports it to CSV and Parquet, and returns what the readers see.
fn exported_params(d: &Path, trace: &str) -> Value {
    let run = d.join(format!("run-{}", trace.replace('/', "-")));
    ok(
        d,
        &["trace", "import", s(&fixture(trace)), "--out", s(&run)],
    );
    let (csv, parquet) = (d.join("e.csv"), d.join("e.parquet"));
    // `--out` as every other command takes it, and `--output` (issue 34).
    for (format, out, flag) in [("csv", &csv, "--out"), ("parquet", &parquet, "--output")] {
        ok(d, &["export", s(&run), "--format", format, flag, s(out)]);
    }
    let out = std::process::Command::new("python3")
        .args(["-c", PARAMS_SCRIPT])
        .arg(&csv)
        .arg(&parquet)
        .output()
        .expect("python3 runs (scripts/test installs duckdb, pandas and pyarrow)");
    assert!(
        out.status.success(),
        "reader script failed (pip install duckdb pandas pyarrow):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// Issue 13: `export` of an imported trace has each wait's obj# and p1..p3, with the names the
/// trace gives them, as columns in CSV and Parquet (null for calls, and for names a trace does
/// not give).
#[test]
fn issue_13_export_of_an_imported_trace_has_obj_and_p1_to_p3() {
    let d = tempdir();
    let got = exported_params(d.path(), "handmade/trace_started_mid_call.trc");
    let row = |event: &str, obj: Option<i64>, p: [Option<i64>; 3], names: [Option<&str>; 3]| {
        serde_json::json!({
            "event": event, "obj": obj, "p1": p[0], "p2": p[1], "p3": p[2],
            "p1_name": names[0], "p2_name": names[1], "p3_name": names[2],
        })
    };
    // In event order: the EXEC's waits, the FETCH's wait, the EXEC, the FETCH, …
    let want = [
        // WAIT #7: nam='db file sequential read' ela= 3000 file#=4 block#=120 blocks=1 obj#=5678
        (
            0,
            row(
                "db file sequential read",
                Some(5678),
                [Some(4), Some(120), Some(1)],
                [Some("file#"), Some("block#"), Some("blocks")],
            ),
        ),
        // … file number=5 first dba=77 block cnt=16 obj#=9012: names with spaces.
        (
            2,
            row(
                "direct path read",
                Some(9012),
                [Some(5), Some(77), Some(16)],
                [Some("file number"), Some("first dba"), Some("block cnt")],
            ),
        ),
        // A db call has none.
        (3, row("EXEC", None, [None; 3], [None; 3])),
        // driver id=1413697536 #bytes=1 p3=0 obj#=-1: the third parameter is not named.
        (
            5,
            row(
                "SQL*Net message to client",
                Some(-1),
                [Some(1413697536), Some(1), Some(0)],
                [Some("driver id"), Some("#bytes"), None],
            ),
        ),
    ];
    for reader in ["pyarrow", "pandas_csv", "duckdb_parquet", "duckdb_csv"] {
        let rows = got[reader].as_array().expect("rows");
        assert_eq!(rows.len(), 8, "{reader}");
        for (i, expected) in &want {
            assert_eq!(&rows[*i], expected, "{reader}, row {i}");
        }
    }
    for source in ["duckdb_parquet", "duckdb_csv"] {
        let types = &got[format!("{source}_types")];
        assert_eq!(types["obj"], "BIGINT", "{source}: {types}");
        assert_eq!(types["p1"], "BIGINT", "{source}: {types}");
        assert_eq!(types["p1_name"], "VARCHAR", "{source}: {types}");
    }

    // Before 9i a WAIT line has p1= p2= p3= and no obj#: values, no names.
    let got = exported_params(d.path(), "handmade/oracle8i_centiseconds.trc");
    let read = got["pyarrow"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["event"] == "db file sequential read")
        .expect("the read")
        .clone();
    assert_eq!(
        read,
        row(
            "db file sequential read",
            None,
            [Some(4), Some(1234), Some(1)],
            [None; 3]
        )
    );
}

/// Issue 34: `report --top N --event NAME` lists the slowest events of that name alone (the
/// seed's top 10,000 of `log file sync`); a name the run lacks is refused with the names it has.
#[test]
fn issue_34_report_top_of_one_event() {
    let d = tempdir();
    let d = d.path();
    let f = fixture(MULTI);
    let all = ok(d, &["report", s(&f), "--top", "100"]);
    let text = ok(
        d,
        &["report", s(&f), "--top", "100", "--event", "log file sync"],
    );
    assert!(
        text.contains("top 2 of 2 successful \"log file sync\" events, slowest first"),
        "{text}"
    );
    let top = &text[text.find("slowest first").unwrap()..];
    let rows: Vec<&str> = top
        .lines()
        .skip(2)
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(rows.len(), 2, "{top}");
    assert!(rows.iter().all(|l| l.contains("log file sync")), "{top}");
    assert!(
        all.contains("db file sequential read"),
        "without --event every name is listed: {all}"
    );
    let j: Value = serde_json::from_str(&ok(
        d,
        &[
            "report",
            s(&f),
            "--top",
            "1",
            "--event",
            "log file sync",
            "--json",
        ],
    ))
    .unwrap();
    assert_eq!(j["top"]["event"], "log file sync");
    assert_eq!(j["top"]["events"][0]["name"], "log file sync");
    let o = run(
        d,
        &["report", s(&f), "--top", "5", "--event", "no such wait"],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        err.contains("--event \"no such wait\": the run has no such event (it has ")
            && err.contains("\"log file sync\""),
        "{err}"
    );
}
