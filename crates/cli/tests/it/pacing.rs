//! Open-loop pacing (`run --rate`, issue 18): intended starts recorded with every operation, the
//! latency from them (coordinated-omission corrected) beside service time, and the backlog.

use crate::cli::*;
use crate::common::argv::Argv;

/// A rate SQLite cannot come near (a million commits a second, each fsynced): the backlog grows
/// second by second and the latency from the intended start dwarfs the service time, which is
/// what the database itself took. A closed-loop harness would have reported only the latter.
#[test]
fn an_unsustainable_rate_shows_backlog_and_co_latency_not_service_time() {
    let dir = tempdir();
    let target = format!("sqlite:{}", s(&join(dir.path(), "db.sqlite")));
    ok(
        dir.path(),
        &Argv::run("commit")
            .target(&target)
            .rate(1000000)
            .duration("3s")
            .out("r")
            .quiet()
            .args(),
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
    // Ten times is far beyond what noise can do (on a quiet machine it is thousands of times);
    // under heavy load SQLite's own fsyncs slow down too, and a tighter bound failed there once.
    assert!(
        co_p50 > 10.0 * service_p50,
        "CO median {co_p50} vs service {service_p50}"
    );
    assert!(
        co_max > 1e6,
        "the last operations waited over a second: {co_max}"
    );
    // Every operation but each session's first was due while its session was still busy with
    // the one before (late), and the backlog grew each second.
    let sessions = m["runner"]["sessions"].as_u64().unwrap();
    assert_eq!(
        co["late"].as_u64().unwrap() + sessions,
        co["count"].as_u64().unwrap(),
        "{co}"
    );
    let ol = &r["open_loop"];
    assert_eq!(ol["on_time"].as_u64(), Some(sessions), "{ol}");
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
            &Argv::run("commit")
                .target("null")
                .sessions(2)
                .rate(2000)
                .opt("--arrival", arrival)
                .duration("2s")
                .out(out)
                .quiet()
                .args(),
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

/// `report --html` and `compare --html` of an open-loop run show what the text report shows: the
/// latency from the intended start beside the service time, and the backlog second by second
/// (as a table and a plot), with the figures `report --json` gives.
#[test]
fn an_open_loop_runs_html_shows_co_latency_beside_service_time_and_the_backlog() {
    use dbscope_analysis::text::{format_num, round_sig3};
    let dir = tempdir();
    let target = format!("sqlite:{}", s(&join(dir.path(), "db.sqlite")));
    for out in ["a", "b"] {
        ok(
            dir.path(),
            &Argv::run("commit")
                .target(&target)
                .rate(20000)
                .duration("2s")
                .out(out)
                .quiet()
                .args(),
        );
    }
    let run = join(dir.path(), "a");
    let r = report_json(dir.path(), &run);
    let svg_dir = join(dir.path(), "svg");
    ok(
        dir.path(),
        &["report", "a", "--html", "a.html", "--svg", s(&svg_dir)],
    );
    let page = std::fs::read_to_string(join(dir.path(), "a.html")).unwrap();
    assert!(page.contains("<h2>Open loop</h2>"), "no open-loop section");
    assert!(page.contains("CO-corrected median"), "no CO column");
    let commit = event(&r, "commit");
    let service = round_sig3(commit["summary_us"]["median"].as_f64().unwrap());
    let co = round_sig3(
        commit["from_intended"]["summary_us"]["median"]
            .as_f64()
            .unwrap(),
    );
    let late = format_num(commit["from_intended"]["late"].as_f64().unwrap());
    let count = format_num(commit["from_intended"]["count"].as_f64().unwrap());
    let row =
        format!("<td>commit</td><td>{count}</td><td>{late}</td><td>{service}</td><td>{co}</td>");
    assert!(
        page.contains(&row),
        "service median beside CO median: {row}"
    );
    // The backlog at the end of each second, as in report --json.
    let backlog = r["open_loop"]["backlog"].as_array().unwrap();
    assert!(backlog.len() >= 2);
    let at_end = format_num(r["open_loop"]["at_end"].as_f64().unwrap());
    assert!(
        page.contains(&format!("at the end {at_end}.</p>")),
        "backlog at the end {at_end}"
    );
    let ol = &r["open_loop"];
    for (i, b) in backlog.iter().enumerate() {
        let n = |k: &str| format_num(ol[k][i].as_f64().unwrap());
        let row = format!(
            "<tr><td>{i}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            n("due_per_s"),
            n("started_per_s"),
            format_num(b.as_f64().unwrap())
        );
        assert!(page.contains(&row), "{row}");
    }
    assert!(page.contains("open loop: backlog at the end of each second"));
    let svg = std::fs::read_to_string(join(&svg_dir, "open-loop-backlog.svg")).unwrap();
    assert!(svg.contains("<polyline") || svg.contains("<path"), "{svg}");

    ok(dir.path(), &["compare", "a", "b", "--html", "c.html"]);
    let page = std::fs::read_to_string(join(dir.path(), "c.html")).unwrap();
    assert!(page.contains("<h2>Open loop</h2>"), "no open-loop section");
    assert!(
        page.contains("<td>commit</td><td>B</td>"),
        "no CO row for B"
    );
    assert!(
        page.contains("<p>A: ") && page.contains(&format!("at the end {at_end}.</p>")),
        "A's backlog at the end {at_end}"
    );
    assert!(page.contains("A backlog") && page.contains("B backlog"));
}

#[test]
fn bad_rates_are_refused() {
    let dir = tempdir();
    fails(
        dir.path(),
        &Argv::run("commit").target("null").rate(0).args(),
        2,
        &["--rate 0"],
    );
    fails(
        dir.path(),
        &Argv::run("commit").target("null").rate("fast").args(),
        2,
        &["--rate \"fast\""],
    );
    fails(
        dir.path(),
        &Argv::run("commit")
            .target("null")
            .rate(10)
            .opt("--arrival", "bursty")
            .args(),
        2,
        &["--arrival \"bursty\""],
    );
}
