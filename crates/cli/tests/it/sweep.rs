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
