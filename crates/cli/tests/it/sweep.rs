//! `dbscope sweep` (issue 15 part 4): the commit workload on SQLite at several session counts, one
//! point run per count, the USL fit in the sweep run; bad input.

use crate::cli::*;

#[test]
fn sweep_on_commit_sqlite_makes_one_point_per_session_count() {
    let dir = tempdir();
    let out = join(dir.path(), "sw");
    let text = ok(
        dir.path(),
        &[
            "sweep",
            "--sessions",
            "1,2,4",
            "--json",
            "--out",
            s(&out),
            "--",
            "run",
            "commit",
            "--ops",
            "30",
            "--seed",
            "7",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&text).expect("sweep --json is JSON");
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 3, "{text}");
    for (p, n) in points.iter().zip([1u64, 2, 4]) {
        assert_eq!(p["sessions"], n);
        // --ops is per session: every point commits exactly 30 × N times.
        assert_eq!(p["count"], 30 * n, "{p}");
        assert!(p["throughput_per_s"].as_f64().unwrap() > 0.0);
        assert!(p["fitted_per_s"].as_f64().unwrap().is_finite());
        let run = std::path::PathBuf::from(p["run"].as_str().unwrap());
        assert!(run.starts_with(&out), "{}", run.display());
        let m = manifest(&run);
        assert_eq!(m["runner"]["sessions"], n, "{m}");
        assert_eq!(m["seed"], 7);
        assert_eq!(m["outcome"], "complete");
    }
    let fit = &v["fit"];
    for k in ["lambda", "sigma", "kappa"] {
        assert!(fit[k].as_f64().unwrap().is_finite(), "{fit}");
    }
    assert!(fit["sigma"].as_f64().unwrap() >= 0.0 && fit["kappa"].as_f64().unwrap() >= 0.0);
    // The sweep is itself a run: a `point` event per point, the fit in counters section `usl`.
    let r = report_json(dir.path(), &out);
    assert_eq!(event(&r, "point")["count"], 3);
    assert_eq!(
        r["usl"]["points"].as_array().unwrap().len(),
        3,
        "{}",
        r["usl"]
    );
    assert_eq!(r["usl"]["lambda"], fit["lambda"]);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(saved["points"], v["points"]);
    assert_eq!(manifest(&out)["outcome"], "complete");
}

#[test]
fn sweep_repeats_and_one_level_says_why_there_is_no_fit() {
    let dir = tempdir();
    let out = join(dir.path(), "sw");
    let text = ok(
        dir.path(),
        &[
            "sweep",
            "--sessions",
            "2",
            "--repeat",
            "2",
            "--out",
            s(&out),
            "--",
            "run",
            "commit",
            "--ops",
            "10",
        ],
    );
    assert!(
        text.contains("no USL fit") && text.contains("two concurrency levels"),
        "{text}"
    );
    assert!(!text.contains("NaN"), "{text}");
    assert!(out.join("points/s0002-r1").is_dir() && out.join("points/s0002-r2").is_dir());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(v["points"].as_array().unwrap().len(), 2);
    assert!(v["fit"].is_null());
}

#[test]
fn sweep_bad_input() {
    let dir = tempdir();
    for list in ["2,1", "1,1", "1,x", "0,2"] {
        let o = run(
            dir.path(),
            &["sweep", "--sessions", list, "--", "run", "commit"],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{list}: {err}");
        assert!(err.contains(list) && !err.contains("panicked"), "{err}");
    }
    fails(
        dir.path(),
        &["sweep", "--sessions", "1,2", "--", "run", "nosuch"],
        2,
        &["after --", "nosuch", "possible values"],
    );
    fails(
        dir.path(),
        &["sweep", "--sessions", "1,2", "--", "commit"],
        2,
        &["`run WORKLOAD"],
    );
    fails(
        dir.path(),
        &[
            "sweep",
            "--sessions",
            "1,2",
            "--",
            "run",
            "commit",
            "--sessions",
            "3",
        ],
        2,
        &["--sessions after --"],
    );
    // Nothing was run: no run directories left behind.
    assert!(!dir.path().join("runs").exists());
}

/// The points of a `sweep --json` run, each with its own report.
fn points_and_reports(
    dir: &std::path::Path,
    text: &str,
) -> Vec<(serde_json::Value, serde_json::Value)> {
    let v: serde_json::Value = serde_json::from_str(text).expect("sweep --json is JSON");
    v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let run = std::path::PathBuf::from(p["run"].as_str().unwrap());
            (p.clone(), report_json(dir, &run))
        })
        .collect()
}

#[test]
fn issue34_item11_sweep_of_events_varies_connections_and_counts_committed_events() {
    let dir = tempdir();
    let out = join(dir.path(), "sw");
    let text = ok(
        dir.path(),
        &[
            "sweep",
            "--sessions",
            "1,2",
            "--json",
            "--out",
            s(&out),
            "--",
            "run",
            "events",
            "--strategy",
            "batch",
            "--clients",
            "2",
            "--rate",
            "100",
            "--duration",
            "1s",
        ],
    );
    let points = points_and_reports(dir.path(), &text);
    assert_eq!(points.len(), 2, "{text}");
    for ((p, r), n) in points.iter().zip([1u64, 2]) {
        assert_eq!(p["sessions"], n);
        assert_eq!(p["event"], "commit");
        assert_eq!(p["unit"], "ev/s");
        // The point's sessions are the run's connections (the runner's sessions); the clients
        // stay as given.
        let m = manifest(std::path::Path::new(p["run"].as_str().unwrap()));
        assert_eq!(m["runner"]["sessions"], n, "{m}");
        assert_eq!(m["workload"]["name"], "events");
        // Throughput: committed events/s, as the point's own report counts them; latency: its
        // commits'.
        assert_eq!(p["throughput_per_s"], r["archive"]["achieved_per_s"], "{p}");
        assert!(p["throughput_per_s"].as_f64().unwrap() > 0.0);
        assert_eq!(p["median_us"], event(r, "commit")["summary_us"]["median"]);
    }
    let r = report_json(dir.path(), &out);
    assert_eq!(event(&r, "point")["count"], 2);
    assert_eq!(
        r["usl"]["points"].as_array().unwrap().len(),
        2,
        "{}",
        r["usl"]
    );
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(v["fit"]["lambda"].as_f64().unwrap() > 0.0, "{text}");
    assert_eq!(manifest(&out)["outcome"], "complete");
}

#[test]
fn issue34_item11_sweep_of_events_bad_input() {
    let dir = tempdir();
    let base = [
        "sweep",
        "--sessions",
        "1,4",
        "--",
        "run",
        "events",
        "--strategy",
        "batch",
    ];
    let with = |extra: &[&'static str]| {
        let mut v = base.to_vec();
        v.extend_from_slice(extra);
        v
    };
    fails(dir.path(), &with(&["--clients", "2"]), 2, &["--clients 4"]);
    fails(
        dir.path(),
        &with(&["--connections", "2"]),
        2,
        &["--connections after --"],
    );
    let mut iter = base.to_vec();
    iter.truncate(6);
    iter.push("--iterations");
    fails(
        dir.path(),
        &iter,
        2,
        &["--iterations after --", "--strategy"],
    );
    assert!(!dir.path().join("runs").exists());
}

#[test]
fn issue34_item11_sweep_of_io_redo_varies_committers_and_fits_mb_per_s() {
    let dir = tempdir();
    let out = join(dir.path(), "sw");
    let log = join(dir.path(), "redo.log");
    let text = ok(
        dir.path(),
        &[
            "sweep",
            "--sessions",
            "1,2,3",
            "--json",
            "--out",
            s(&out),
            "--",
            "io",
            "redo",
            "--dest",
            s(&log),
            "--ops",
            "40",
            "--log-size",
            "1MiB",
        ],
    );
    let points = points_and_reports(dir.path(), &text);
    assert_eq!(points.len(), 3, "{text}");
    for ((p, r), n) in points.iter().zip([1u64, 2, 3]) {
        assert_eq!(p["sessions"], n);
        assert_eq!(p["event"], "log file parallel write");
        assert_eq!(p["unit"], "MB/s");
        assert_eq!(r["redo"]["commits"], 40 * n, "{}", r["redo"]);
        let m = manifest(std::path::Path::new(p["run"].as_str().unwrap()));
        assert_eq!(m["runner"]["sessions"], n, "{m}");
        assert_eq!(m["workload"]["name"], "io redo");
        assert_eq!(
            p["throughput_per_s"],
            r["redo"]["destinations"][0]["mb_per_s"]
        );
        assert_eq!(
            p["p99_us"],
            event(r, "log file parallel write")["percentiles_us"]["p99"]
        );
    }
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["workload"], "io-redo");
    assert!(v["fit"]["lambda"].as_f64().unwrap() > 0.0, "{text}");
    let r = report_json(dir.path(), &out);
    assert_eq!(r["usl"]["points"].as_array().unwrap().len(), 3);
    // Text: the unit heads the columns.
    let t = ok(
        dir.path(),
        &[
            "sweep",
            "--sessions",
            "1,2",
            "--out",
            s(&join(dir.path(), "t")),
            "--",
            "io",
            "redo",
            "--dest",
            s(&log),
            "--ops",
            "20",
            "--log-size",
            "1MiB",
        ],
    );
    assert!(t.contains("meas. MB/s") && t.contains("MB/s  σ = "), "{t}");
    fails(
        dir.path(),
        &[
            "sweep",
            "--sessions",
            "1,2",
            "--",
            "io",
            "redo",
            "verify",
            s(&log),
        ],
        2,
        &["io redo verify"],
    );
}
