//! `dbscope ab` (issue 33 part 3) on the null target with scripted latencies (`--set
//! commit_delay=…`): a known difference is decided "B slower" within a few looks, identical plans
//! give "no difference larger than X%" or "undecided", every round is an ordinary catalogued run
//! in ABBA order, the `--fail-if` exit codes, a failed round, and the HTML plot of the rounds.
//! (The false-positive rate under repeated looks is a simulation test of
//! `dbscope_core::stats::sequential`, not of real runs.)

use serde_json::Value;

use crate::cli::*;

/// A plan whose commits sleep `delay`. Delays of several ms keep the scheduler's wake-up
/// latency (which grows when other tests load the machine) small beside them.
fn plan(delay: &str) -> String {
    format!("commit --target null --set commit_delay={delay} --ops 25")
}

fn ab(d: &std::path::Path, a: &str, b: &str, out: &str, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["ab", "--a", a, "--b", b, "--out", out];
    args.extend_from_slice(extra);
    let r = run(d, &args);
    let text = String::from_utf8_lossy(&r.stdout).into_owned();
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(join(d, out).join("ab.json")).expect("ab.json written"),
    )
    .unwrap_or_else(|e| panic!("ab.json: {e}\n{text}"));
    (r.status.code().unwrap_or(-1), v)
}

#[test]
fn ab_decides_b_slower_at_the_first_look_with_abba_rounds_in_the_catalogue() {
    let dir = tempdir();
    let d = dir.path();
    // 4 ms against 12 ms per commit: B/A ≈ 3, far beyond the sleep's jitter.
    let (code, v) = ab(d, &plan("4ms"), &plan("12ms"), "runs/x", &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["decision"], "slower", "{v}");
    assert!(v["verdict"]
        .as_str()
        .unwrap()
        .starts_with("B slower: p50 +"));
    let rounds = v["rounds"].as_array().unwrap();
    // Expected at the first look (--min-rounds 3); a loaded machine may need a look or two more.
    assert!(rounds.len() <= 5, "decided within 5 rounds: {v}");
    let low = v["low"].as_f64().unwrap();
    assert!(low > 0.5, "B/A − 1 well above +50%: {v}");
    assert_eq!(rounds[0]["order"], "AB");
    assert_eq!(rounds[1]["order"], "BA");
    assert!(rounds[0]["low"].is_null() && rounds[2]["low"].is_number());

    // Every round is an ordinary run in the catalogue; round 2 ran B first.
    let h: Value = serde_json::from_str(&ok(d, &["history", "runs", "--json"])).unwrap();
    let h = h.as_array().unwrap();
    assert_eq!(h.len(), 7, "the A/B run and six rounds: {h:?}");
    let started = |name: &str| {
        h.iter()
            .find(|e| e["dir"] == name)
            .unwrap_or_else(|| panic!("{name} listed"))["started_utc"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(started("x-02b") <= started("x-02a"));
    assert!(started("x-01a") <= started("x-01b"));
    assert!(started("x-03a") <= started("x-03b"));
    let b = h.iter().find(|e| e["dir"] == "x-01b").unwrap();
    assert_eq!(b["settings"], "commit_delay=12ms");
    assert_eq!(b["outcome"], "complete");
    let ab_run = h.iter().find(|e| e["dir"] == "x").unwrap();
    assert_eq!(ab_run["source"], "ab");

    // report prints the rounds; --html plots them.
    let text = ok(d, &["report", "runs/x", "--html", "ab.html"]);
    assert!(text.contains("B slower"), "{text}");
    let html = std::fs::read_to_string(join(d, "ab.html")).unwrap();
    assert!(html.contains("each round&#39;s figure") || html.contains("each round's figure"));
    assert!(html.contains("interval at each look"), "plot of the looks");
}

#[test]
fn ab_on_identical_plans_finds_no_difference_larger_than_the_band_or_stays_undecided() {
    let dir = tempdir();
    let d = dir.path();
    let same = plan("8ms");
    // 99% over all looks: a false "B slower/faster" has at most a 1% chance.
    let conf = ["--equivalence", "10%", "--confidence", "99%"];
    let (code, v) = ab(d, &same, &same, "runs/eq", &conf);
    match v["decision"].as_str().unwrap() {
        "equivalent" => {
            assert_eq!(code, 0);
            assert!(v["verdict"]
                .as_str()
                .unwrap()
                .starts_with("no difference larger than 10%"));
            let (lo, hi) = (v["low"].as_f64().unwrap(), v["high"].as_f64().unwrap());
            assert!(lo > -0.10 && hi < 0.10, "{v}");
            // Identical plans can still differ by a hair (the order of the runs): an interval
            // inside the band is the band's answer, the shift said in brackets.
            let verdict = v["verdict"].as_str().unwrap();
            assert_eq!(
                verdict.contains("(B slower, by less than that)"),
                lo > 0.0,
                "{v}"
            );
            assert_eq!(
                verdict.contains("(B faster, by less than that)"),
                hi < 0.0,
                "{v}"
            );
        }
        // A loaded machine (other tests) may keep the interval wider than ±10%.
        "undecided" => {
            assert_eq!(code, 6);
            assert_eq!(v["rounds"].as_array().unwrap().len(), 10);
        }
        other => panic!("identical plans judged {other}: {v}"),
    }
    // No band and a 99.9% sequence ending at the first look: undecided (exit 6).
    let strict = [
        "--min-rounds",
        "3",
        "--max-rounds",
        "3",
        "--confidence",
        "99.9%",
    ];
    let (code, v) = ab(d, &same, &same, "runs/und", &strict);
    assert_eq!(v["decision"], "undecided", "{v}");
    assert_eq!(code, 6);
    assert_eq!(v["rounds"].as_array().unwrap().len(), 3);
    assert!(v["low"].as_f64().unwrap() < 0.0 && v["high"].as_f64().unwrap() > 0.0);
}

#[test]
fn ab_fail_if_exit_codes_regression_improvement_no_difference_undecided() {
    let dir = tempdir();
    let d = dir.path();
    let gate = ["--fail-if", "p50>+5%"];
    let (code, v) = ab(d, &plan("4ms"), &plan("12ms"), "runs/reg", &gate);
    assert_eq!(code, 5, "a regression: {v}");
    assert_eq!(v["gate"][0]["holds"], true);
    let md = run(
        d,
        &[
            "ab",
            "--a",
            &plan("4ms"),
            "--b",
            &plan("12ms"),
            "--out",
            "runs/md",
            "--fail-if",
            "p50>+5%",
            "--markdown",
        ],
    );
    assert_eq!(md.status.code(), Some(5));
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.starts_with("❌ **dbscope ab: regression** — B slower"),
        "{md}"
    );
    assert_eq!(md.trim_end().lines().count(), 1, "{md}");
    let (code, v) = ab(d, &plan("12ms"), &plan("4ms"), "runs/imp", &gate);
    assert_eq!(code, 0, "an improvement: {v}");
    assert_eq!(v["decision"], "faster");
    assert_eq!(v["gate"][0]["holds"], false);
    let same = plan("8ms");
    let mut eq = gate.to_vec();
    eq.extend(["--equivalence", "10%", "--confidence", "99%"]);
    let (code, v) = ab(d, &same, &same, "runs/same", &eq);
    // No difference: equivalent, or undecided on a loaded machine; the gate passes either way.
    assert!(
        ["equivalent", "undecided"].contains(&v["decision"].as_str().unwrap()),
        "{v}"
    );
    assert_eq!(code, 0, "{v}");
    let mut und = gate.to_vec();
    und.extend(["--max-rounds", "3", "--confidence", "99.9%"]);
    let (code, v) = ab(d, &same, &same, "runs/und", &und);
    assert_eq!(v["decision"], "undecided", "{v}");
    assert_eq!(code, 0, "undecided is not a regression: the gate passes");
    assert_eq!(v["exit_code"], 0);
}

#[test]
fn ab_stops_on_a_failed_round_and_refuses_bad_plans() {
    let dir = tempdir();
    let d = dir.path();
    let bad = "commit --target sqlite:/nonexistent/dir/x.db --ops 5";
    let (code, v) = ab(d, &plan("4ms"), bad, "runs/f", &[]);
    assert_ne!(code, 0);
    assert_eq!(v["decision"], "failed");
    assert_eq!(v["verdict"], "failed in round 1");
    assert!(
        v["failure"].as_str().unwrap().contains("/nonexistent"),
        "{v}"
    );
    assert_eq!(manifest(&join(d, "runs/f"))["outcome"], "failed");
    // A password in a plan reaches no file and no message; the round's code is kept (4).
    let secret = "commit --target postgres://u:s3cr3tpw@127.0.0.1:1/db --ops 5";
    let r = run(
        d,
        &["ab", "--a", secret, "--b", &plan("4ms"), "--out", "runs/pw"],
    );
    assert_eq!(r.status.code(), Some(4));
    let all = format!(
        "{}{}{}{}",
        String::from_utf8_lossy(&r.stdout),
        String::from_utf8_lossy(&r.stderr),
        std::fs::read_to_string(join(d, "runs/pw/ab.json")).unwrap(),
        std::fs::read_to_string(join(d, "runs/pw/manifest.json")).unwrap()
    );
    assert!(!all.contains("s3cr3tpw"), "{all}");
    assert!(all.contains("postgres://u:***@127.0.0.1:1/db"), "{all}");
    fails(
        d,
        &["ab", "--a", "commit --out z", "--b", "commit"],
        2,
        &["--a: remove --out"],
    );
    fails(
        d,
        &["ab", "--a", "commit", "--b", "commit --nosuch"],
        2,
        &["--b: "],
    );
    fails(
        d,
        &[
            "ab",
            "--a",
            "commit",
            "--b",
            "commit",
            "--fail-if",
            "p90>+5%",
        ],
        2,
        &["ab judges p50, p99 and throughput"],
    );
    fails(
        d,
        &["ab", "--a", "commit", "--b", "commit", "--min-rounds", "1"],
        2,
        &["at least 2 rounds"],
    );
}
