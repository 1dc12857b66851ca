//! Issue 34 item 7: where the database keeps its files — the WAL directory (a `pg_wal` symlink
//! followed), the workload's tablespace, the temp tablespace — goes into the manifest with its
//! block device, each device gets its row in the report's iostat table with its role, and
//! `compare` says what moved. The second device is an ext4 file system on a loop device; where
//! this machine cannot attach or mount one, the tests say so and skip.

use std::path::Path;

use serde_json::Value;

use crate::cli::*;
use crate::common::argv::Argv;
use crate::common::loopfs::LoopFs;
use crate::common::pg::PgCluster;

fn loop_fs(tag: &str) -> Option<LoopFs> {
    loop_fs_of(tag, 96 << 20)
}

fn loop_fs_of(tag: &str, bytes: u64) -> Option<LoopFs> {
    match LoopFs::with_size(tag, bytes) {
        Ok(fs) => Some(fs),
        Err(why) => {
            eprintln!(
                "SKIPPED (issue 34 item 7): no loop-device file system on this machine \
                 (needs root, losetup, mkfs.ext4 and mount): {why}"
            );
            None
        }
    }
}

fn manifest(run: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap()
}

/// The manifest's places of `role`.
fn places<'a>(m: &'a Value, role: &str) -> Vec<&'a Value> {
    m["storage"]["places"]
        .as_array()
        .unwrap_or_else(|| panic!("no storage in the manifest: {m}"))
        .iter()
        .filter(|p| p["role"] == role)
        .collect()
}

/// The report's iostat row of `device`.
fn disk_row<'a>(r: &'a Value, device: &str) -> &'a Value {
    r["observe"]["disks"]
        .as_array()
        .expect("observe.disks")
        .iter()
        .find(|d| d["device"] == device)
        .unwrap_or_else(|| panic!("no iostat row for {device}: {}", r["observe"]["disks"]))
}

fn commit_run(dir: &Path, uri: &str, out: &str) -> Value {
    ok(
        dir,
        &[
            "run",
            "commit",
            "--target",
            uri,
            "--duration",
            "2s",
            "--sessions",
            "2",
            "--sample-hz",
            "0",
            "--out",
            out,
            "-q",
        ],
    );
    manifest(&join(dir, out))
}

#[test]
fn issue_34_item_7_wal_on_a_loop_device_is_recorded_watched_and_compared() {
    let Some(fs) = loop_fs("wal") else {
        return;
    };
    let waldir = fs.mount_point().join("wal");
    let moved = PgCluster::throwaway_with_waldir(&waldir);
    let here = PgCluster::shared();
    let dir = tempdir();

    let a = commit_run(dir.path(), &here.uri(&here.create_db("wal_here")), "a");
    let b = commit_run(dir.path(), &moved.uri(&moved.create_db("wal_moved")), "b");

    // The manifest names the WAL directory behind the pg_wal symlink, and its device.
    let wal_b = places(&b, "WAL");
    assert_eq!(wal_b.len(), 1, "{wal_b:?}");
    assert_eq!(wal_b[0]["path"], s(&waldir), "{wal_b:?}");
    assert_eq!(wal_b[0]["device"], fs.device(), "{wal_b:?}");
    let data_b = places(&b, "data");
    assert_eq!(data_b[0]["path"], s(moved.data_dir()));
    let wal_a = places(&a, "WAL");
    let dev_a = wal_a[0]["device"]
        .as_str()
        .unwrap_or_else(|| panic!("A's WAL device: {wal_a:?}"));
    assert_ne!(dev_a, fs.device());
    assert_eq!(
        places(&a, "data")[0]["device"],
        dev_a,
        "A keeps WAL with data"
    );

    // The iostat table has the loop device's row, as WAL, written to by the commits.
    let report = report_json(dir.path(), &join(dir.path(), "b"));
    let row = disk_row(&report, fs.device());
    assert_eq!(row["role"], "WAL", "{row}");
    assert!(row["w_per_s"].as_f64().unwrap() > 0.0, "WAL writes: {row}");
    let text = ok(dir.path(), &["report", s(&join(dir.path(), "b"))]);
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("WAL") && l.contains(fs.device())),
        "{text}"
    );
    // A's one device holds everything.
    let ra = report_json(dir.path(), &join(dir.path(), "a"));
    let role_a = disk_row(&ra, dev_a)["role"].as_str().unwrap().to_string();
    assert!(role_a.starts_with("data+WAL"), "{role_a}");

    // compare says what moved.
    let cmp = ok(
        dir.path(),
        &[
            "compare",
            s(&join(dir.path(), "a")),
            s(&join(dir.path(), "b")),
        ],
    );
    let want = format!("WAL: {dev_a} → {}", fs.device());
    assert!(cmp.contains(&want), "{want:?} in:\n{cmp}");
    assert!(!cmp.contains("   data: "), "data did not move:\n{cmp}");
}

#[test]
fn issue_34_item_7_a_tablespace_dir_on_a_loop_device_has_its_row() {
    let Some(fs) = loop_fs("ts") else {
        return;
    };
    let pg = PgCluster::shared();
    let db = pg.create_db("ts_loop");
    let place = fs.mount_point().join("ts");
    PgCluster::make_server_dir(&place).unwrap();
    let dir = tempdir();
    ok(
        dir.path(),
        &Argv::run("lookup")
            .target(pg.uri(&db))
            .rows(2000)
            .ops(200)
            .opt("--tablespace-dir", s(&place))
            .out("r")
            .quiet()
            .args(),
    );
    let m = manifest(&join(dir.path(), "r"));
    let ts = places(&m, "tablespace");
    assert_eq!(ts.len(), 1, "{ts:?}");
    assert_eq!(ts[0]["path"], s(&place));
    assert_eq!(ts[0]["device"], fs.device());
    assert!(
        ts[0]["name"].as_str().unwrap().starts_with("dbscope_ts_"),
        "{ts:?}"
    );
    // With temp_tablespaces empty, temp objects go to the database's default tablespace.
    let temp = places(&m, "temp");
    assert_eq!(temp[0]["name"], "pg_default", "{temp:?}");
    let report = report_json(dir.path(), &join(dir.path(), "r"));
    assert_eq!(disk_row(&report, fs.device())["role"], "tablespace");

    // Leave the shared cluster without the tablespace.
    let name = ts[0]["name"].as_str().unwrap();
    pg.query(&db, "DROP TABLE dbscope_lookup");
    pg.query(&db, &format!("DROP TABLESPACE {name}"));
}

/// A temp load: `temp_bytes` counts temp files only, so it stays 0; the temp tablespace on its
/// own device is recorded as `temp` with its iostat row, and the temp table's size is measured
/// (its peak, polled while the run goes: the table is gone with its session by the end).
#[test]
fn issue_34_item_7_a_temp_load_is_counted_as_temp_and_its_device_watched() {
    let Some(fs) = loop_fs("temp") else {
        return;
    };
    let pg = PgCluster::shared();
    let db = pg.create_db("temp_loop");
    let place = fs.mount_point().join("temp");
    PgCluster::make_server_dir(&place).unwrap();
    let dir = tempdir();
    let rows = 200_000;
    ok(
        dir.path(),
        &Argv::run("bulkload")
            .target(pg.uri(&db))
            .rows(rows)
            .sessions(1)
            .opt("--into", "temp")
            .opt("--tablespace-dir", s(&place))
            .out("t")
            .quiet()
            .args(),
    );
    let m = manifest(&join(dir.path(), "t"));
    let temp = places(&m, "temp");
    assert_eq!(temp.len(), 1, "{temp:?}");
    assert_eq!(temp[0]["path"], s(&place));
    assert_eq!(temp[0]["device"], fs.device());
    let report = report_json(dir.path(), &join(dir.path(), "t"));
    assert_eq!(disk_row(&report, fs.device())["role"], "temp");
    let io = report["observe"]["io_by_file_type"].as_array().unwrap();
    let row = |ty: &str| {
        io.iter()
            .find(|r| r["file_type"] == ty)
            .unwrap_or_else(|| panic!("no {ty} row: {io:?}"))
    };
    assert_eq!(row("temp")["write_bytes"], 0.0, "temp files only: {io:?}");
    // Each row holds at least its 8-byte id: the table is more than rows × 8 bytes.
    let held = row("temp tbl")["write_bytes"].as_f64().unwrap();
    assert!(held > (rows * 8) as f64, "temp table bytes {held}: {io:?}");
    let ts = pg.query(
        &db,
        &format!(
            "SELECT spcname FROM pg_tablespace WHERE pg_tablespace_location(oid) = '{}'",
            s(&place)
        ),
    );
    pg.query(&db, &format!("DROP TABLESPACE {ts}"));
}

/// Issue 29 part 5, seed 001's experiment under OLTP: TPC-C with the WAL beside the data, then
/// with `pg_wal` on another device. Each run records where the WAL and the data live; the report's
/// iostat table gives the WAL device its own row, written to by the transactions; `compare` of
/// the two runs says the WAL moved and the data did not.
#[test]
fn issue_29_tpcc_with_the_wal_on_another_device_is_recorded_and_compared() {
    // A warehouse's build writes more WAL than the other tests' 96 MiB hold.
    let Some(fs) = loop_fs_of("tpccwal", 2 << 30) else {
        return;
    };
    let waldir = fs.mount_point().join("wal");
    let moved = PgCluster::throwaway_with_waldir(&waldir);
    let here = PgCluster::shared();
    let dir = tempdir();
    let d = dir.path();
    let tpcc = |uri: &str, out: &str| {
        let args = [
            "run",
            "tpcc",
            "--warehouses",
            "1",
            "--build-sessions",
            "1",
            "--sessions",
            "2",
            "--duration",
            "3s",
            "--sample-hz",
            "0",
            "--target",
            uri,
            "--out",
            out,
            "-q",
        ];
        ok(d, &args);
        manifest(&join(d, out))
    };
    let a = tpcc(&here.uri(&here.create_db("tpcc_wal_here")), "a");
    let b = tpcc(&moved.uri(&moved.create_db("tpcc_wal_moved")), "b");

    let wal_b = places(&b, "WAL");
    assert_eq!(wal_b.len(), 1, "{wal_b:?}");
    assert_eq!(wal_b[0]["path"], s(&waldir), "{wal_b:?}");
    assert_eq!(wal_b[0]["device"], fs.device(), "{wal_b:?}");
    let dev_a = places(&a, "WAL")[0]["device"].as_str().unwrap().to_string();
    assert_eq!(places(&a, "data")[0]["device"], dev_a.as_str());

    let rb = report_json(d, &join(d, "b"));
    let row = disk_row(&rb, fs.device());
    assert_eq!(row["role"], "WAL", "{row}");
    assert!(
        row["w_per_s"].as_f64().unwrap() > 0.0,
        "the WAL device was written: {row}"
    );
    assert!(rb["tpcc"]["nopm"].as_f64().unwrap() > 0.0, "{}", rb["tpcc"]);

    let cmp = ok(d, &["compare", "a", "b"]);
    let want = format!("WAL: {dev_a} → {}", fs.device());
    assert!(cmp.contains(&want), "{want:?} in:\n{cmp}");
    assert!(!cmp.contains("   data: "), "data did not move:\n{cmp}");
}
