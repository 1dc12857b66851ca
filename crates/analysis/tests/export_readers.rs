//! Exports a run to CSV and Parquet and reads both files back with the tools people analyse them with:
//! DuckDB and pandas (pyarrow), run through `python3`. Needs `pip install duckdb pandas pyarrow`; the
//! test fails (it does not skip) when they are missing.

use std::path::Path;
use std::process::Command;

use dbscope_analysis::export::{export_run, ExportFormat, ROW_GROUP_ROWS};
use dbscope_core::fake::FakeRun;
use dbscope_core::{Event, Manifest, Outcome, RunDir, WorkloadInfo, EVENT_WARMUP};
use serde_json::Value;

const INSTALL: &str = "pip install duckdb pandas pyarrow";
const TRICKY: &str = "select \"a\", b";
/// 2026-12-02T17:45:30.123456789Z
const ORIGIN: i64 = 1_796_233_530_123_456_789;

/// Reads both exports and prints what DuckDB and pandas see, as JSON.
const SCRIPT: &str = r#"
import json, sys
try:
    import duckdb
    import pandas as pd
    import pyarrow.parquet as pq
except ImportError as e:
    print(f"cannot import the readers ({e})", file=sys.stderr)
    sys.exit(3)

csv_path, pq_path, tricky = sys.argv[1:4]
lit = lambda p: "'" + p.replace("'", "''") + "'"
sources = {
    "parquet": f"read_parquet({lit(pq_path)})",
    "csv": f"read_csv({lit(csv_path)}, header=true)",
}
out = {}
for name, src in sources.items():
    row = duckdb.sql(
        "select count(*), sum(duration_ns), count(intended_start_ns), sum(warmup::int), "
        "sum((outcome <> 'ok')::int), count(distinct event), "
        f"sum((event = {lit(tricky)})::int), epoch_ns(min(start_utc)) from {src}"
    ).fetchall()[0]
    described = duckdb.sql(f"describe select * from {src}").fetchall()
    types = {r[0]: r[1] for r in described}
    columns = [r[0] for r in described]
    out[name] = {"agg": [int(v) for v in row], "types": types, "columns": columns}

df = pd.read_parquet(pq_path)
out["pandas"] = {
    "rows": len(df),
    "start_utc_dtype": str(df["start_utc"].dtype),
    "first_start_utc_ns": int(df["start_utc"].iloc[0].value),
    "intended_null": int(df["intended_start_ns"].isna().sum()),
    "tricky": int((df["event"] == tricky).sum()),
    "row_groups": pq.ParquetFile(pq_path).metadata.num_row_groups,
}
csv_df = pd.read_csv(csv_path)
out["pandas_csv"] = {"rows": len(csv_df), "tricky": int((csv_df["event"] == tricky).sum())}
print(json.dumps(out))
"#;

/// Sums over the written events, to compare with what the readers compute.
#[derive(Default)]
struct Totals {
    count: u64,
    duration: u64,
    intended: u64,
    warmup: u64,
    errors: u64,
    tricky: u64,
    min_start_ns: u64,
}

fn write_run(dir: &Path, blocks: u64, per_block: u64) -> (RunDir, Totals) {
    let mut m = Manifest::new("workload", WorkloadInfo::default(), 7);
    m.clock_origin_unix_ns = ORIGIN;
    m.outcome = Outcome::Complete;
    let mut w = FakeRun::with_manifest(&dir.join("run"), m);
    let mut t = Totals {
        min_start_ns: u64::MAX,
        ..Totals::default()
    };
    let mut evs = Vec::new();
    for b in 0..blocks {
        evs.clear();
        for j in 0..per_block {
            let i = b * per_block + j;
            let name = if i.is_multiple_of(3) {
                TRICKY
            } else {
                "commit"
            };
            let ev = Event {
                session: (i % 8) as u32,
                name: w.name(name),
                start_ns: 5_000 + i * 997,
                duration_ns: 100 + (i * 31) % 5_000,
                intended_start_ns: i.is_multiple_of(4).then_some(i * 990),
                outcome: if i % 13 == 5 {
                    w.outcome("pg:40P01")
                } else {
                    0
                },
                flags: if i < 1_000 { EVENT_WARMUP } else { 0 },
                rows: (i % 3) as u32,
            };
            t.count += 1;
            t.duration += ev.duration_ns;
            t.intended += ev.intended_start_ns.is_some() as u64;
            t.warmup += ev.is_warmup() as u64;
            t.errors += ev.is_error() as u64;
            t.tricky += (name == TRICKY) as u64;
            t.min_start_ns = t.min_start_ns.min(ev.start_ns);
            evs.push(ev);
        }
        w.block(&evs);
    }
    (w.finish(), t)
}

fn python_readers(csv: &Path, parquet: &Path) -> Value {
    let imports = Command::new("python3")
        .args(["-c", "import duckdb, pandas, pyarrow"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 ({e}): install Python 3, then `{INSTALL}`"));
    assert!(
        imports.status.success(),
        "python3 cannot import duckdb/pandas/pyarrow: run `{INSTALL}`\n{}",
        String::from_utf8_lossy(&imports.stderr)
    );
    let out = Command::new("python3")
        .args(["-c", SCRIPT])
        .arg(csv)
        .arg(parquet)
        .arg(TRICKY)
        .output()
        .expect("python3 ran a moment ago");
    assert!(
        out.status.success(),
        "reader script failed (if an import failed: `{INSTALL}`):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "reader script printed no JSON ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[test]
fn duckdb_and_pandas_read_both_exports() {
    // Just over one full row group, so the Parquet file has two.
    let per_block = 4_096;
    let blocks = (ROW_GROUP_ROWS as u64 + 3 * per_block) / per_block;
    let dir = tempfile::tempdir().unwrap();
    let (run, t) = write_run(dir.path(), blocks, per_block);
    let csv = dir.path().join("events.csv");
    let parquet = dir.path().join("events.parquet");
    for (format, out) in [(ExportFormat::Csv, &csv), (ExportFormat::Parquet, &parquet)] {
        let s = export_run(&run, format, out).unwrap();
        assert_eq!((s.rows, s.incomplete), (t.count, None));
    }

    let got = python_readers(&csv, &parquet);
    let expected_agg =
        serde_json::json!([t.count, t.duration, t.intended, t.warmup, t.errors, 2, t.tricky]);
    let first_utc_ns = ORIGIN + t.min_start_ns as i64;
    for source in ["parquet", "csv"] {
        let agg = got[source]["agg"].as_array().expect("agg list");
        assert_eq!(
            agg[..7],
            expected_agg.as_array().unwrap()[..],
            "DuckDB on {source}: {got}"
        );
        assert_eq!(
            got[source]["columns"],
            serde_json::json!(dbscope_analysis::export::COLUMNS),
            "{source}"
        );
        let types = &got[source]["types"];
        assert_eq!(types["event"], "VARCHAR", "{source}: {types}");
        assert_eq!(types["outcome"], "VARCHAR", "{source}: {types}");
        assert_eq!(types["duration_ns"], "BIGINT", "{source}: {types}");
        assert_eq!(types["warmup"], "BOOLEAN", "{source}: {types}");
        // DuckDB 1.x reads both as TIMESTAMP WITH TIME ZONE (microseconds); DuckDB 2 reads the
        // Parquet column as TIMESTAMPTZ_NS, keeping the nanoseconds.
        let ts_type = types["start_utc"].as_str().unwrap_or_default();
        let min_utc_ns = agg[7].as_i64().expect("epoch_ns");
        match ts_type {
            "TIMESTAMPTZ_NS" => assert_eq!(min_utc_ns, first_utc_ns, "{source}"),
            "TIMESTAMP WITH TIME ZONE" => {
                assert!(
                    (min_utc_ns - first_utc_ns).abs() < 1000,
                    "{source}: {min_utc_ns}"
                )
            }
            other => panic!("{source}: start_utc read as {other}, not a UTC timestamp"),
        }
    }
    let types = &got["parquet"]["types"];
    assert_eq!(types["session"], "INTEGER", "{types}");
    assert_eq!(types["intended_start_ns"], "BIGINT", "{types}");

    let pandas = &got["pandas"];
    assert_eq!(pandas["rows"], t.count);
    assert_eq!(pandas["start_utc_dtype"], "datetime64[ns, UTC]");
    // Nanoseconds survive in pandas.
    assert_eq!(pandas["first_start_utc_ns"], first_utc_ns);
    assert_eq!(pandas["intended_null"], t.count - t.intended);
    assert_eq!(pandas["tricky"], t.tricky);
    assert_eq!(pandas["row_groups"], 2);
    assert_eq!(got["pandas_csv"]["rows"], t.count);
    assert_eq!(got["pandas_csv"]["tricky"], t.tricky);
}
