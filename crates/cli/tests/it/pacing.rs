//! Open-loop pacing (`run --rate`, issue 18): intended starts recorded with every operation, the
//! latency from them (coordinated-omission corrected) beside service time, and the backlog.

use crate::cli::*;

/// A rate SQLite cannot come near (a million commits a second, each fsynced): the backlog grows
/// second by second and the latency from the intended start dwarfs the service time, which is
/// what the database itself took. A closed-loop harness would have reported only the latter.
#[test]
fn an_unsustainable_rate_shows_backlog_and_co_latency_not_service_time() {
    let dir = tempdir();
    let target = format!("sqlite:{}", s(&join(dir.path(), "db.sqlite")));
    ok(
        dir.path(),
        &[
            "run",
            "commit",
            "--target",
            &target,
            "--rate",
            "1000000",
            "--duration",
            "3s",
            "--out",
            "r",
            "-q",
        ],
    );
    let run = join(dir.path(), "r");
    let m = manifest(&run);
    assert_eq!(m["runner"]["mode"], "open");
    assert_eq!(m["workload"]["params"]["rate_per_s"], 1_000_000.0);
    assert_eq!(m["workload"]["params"]["arrival"], "constant");
    let r = report_json(dir.path(), &run);
    let commit = event(&r, "commit");
    let service_p50 = commit["summary_us"]["median"].as_f64().unwrap();
    let co = &commit["from_intended"];
    assert!(co.is_object(), "no CO-corrected latency: {commit}");
    let co_p50 = co["summary_us"]["median"].as_f64().unwrap();
    let co_max = co["summary_us"]["max"].as_f64().unwrap();
    assert!(
        co_p50 > 100.0 * service_p50,
        "CO median {co_p50} vs service {service_p50}"
    );
    assert!(
        co_max > 1e6,
        "the last operations waited over a second: {co_max}"
    );
    // Every operation started late, and the backlog grew each second.
    assert_eq!(co["late"], co["count"]);
    let backlog: Vec<u64> = r["open_loop"]["backlog"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert!(backlog.len() >= 3, "{backlog:?}");
    assert!(
        backlog[0] < backlog[1] && backlog[1] < backlog[2],
        "{backlog:?}"
    );
    // Nearly all of the three million operations due were never started.
    let left = r["pacing"]["backlog_at_end"].as_u64().unwrap();
    assert!(left > 2_000_000, "{left}");
    assert_eq!(r["open_loop"]["at_end"].as_u64().unwrap(), left);
    let text = ok(dir.path(), &["report", "r"]);
    assert!(
        text.contains("from intended start (CO-corrected)"),
        "{text}"
    );
    assert!(text.contains("open loop "), "{text}");
}

/// A rate the target sustains: operations start on time (no backlog left), the rate achieved is
/// the rate asked for, and `compare` shows the CO-corrected latencies of both runs.
#[test]
fn a_sustainable_rate_is_met_and_compare_shows_co_latency() {
    let dir = tempdir();
    for (out, arrival) in [("a", "constant"), ("b", "poisson")] {
        ok(
            dir.path(),
            &[
                "run",
                "commit",
                "--target",
                "null",
                "--sessions",
                "2",
                "--rate",
                "2000",
                "--arrival",
                arrival,
                "--duration",
                "2s",
                "--out",
                out,
                "-q",
            ],
        );
    }
    let r = report_json(dir.path(), &join(dir.path(), "a"));
    let n = event(&r, "commit")["count"].as_u64().unwrap();
    // 2 s at 2,000/s: about 4,000 intended starts before the deadline (each session's clock
    // starts when it is ready), and every one of them either started or is counted as left.
    let due: u64 = r["pacing"]["per_second"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["due"].as_u64().unwrap())
        .sum();
    let left = r["pacing"]["backlog_at_end"].as_u64().unwrap();
    assert!((3_800..=4_000).contains(&due), "{due}");
    assert_eq!(n + left, due);
    assert_eq!(r["open_loop"]["at_end"].as_u64().unwrap(), left);
    let rb = report_json(dir.path(), &join(dir.path(), "b"));
    assert_eq!(
        manifest(&join(dir.path(), "b"))["workload"]["params"]["arrival"],
        "poisson"
    );
    let nb = event(&rb, "commit")["count"].as_u64().unwrap();
    assert!(
        nb != n && (3_500..4_500).contains(&nb),
        "poisson arrivals: {nb}"
    );
    let text = ok(dir.path(), &["compare", "a", "b"]);
    assert!(
        text.contains("latency from the intended start (CO-corrected"),
        "{text}"
    );
    let json = ok(dir.path(), &["compare", "a", "b", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["from_intended"][0]["name"], "update");
}

#[test]
fn bad_rates_are_refused() {
    let dir = tempdir();
    fails(
        dir.path(),
        &["run", "commit", "--target", "null", "--rate", "0"],
        2,
        &["--rate 0"],
    );
    fails(
        dir.path(),
        &["run", "commit", "--target", "null", "--rate", "fast"],
        2,
        &["--rate \"fast\""],
    );
    fails(
        dir.path(),
        &[
            "run",
            "commit",
            "--target",
            "null",
            "--rate",
            "10",
            "--arrival",
            "bursty",
        ],
        2,
        &["--arrival \"bursty\""],
    );
}
