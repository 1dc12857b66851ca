//! Tests of compare on made-up runs: verdicts, the text layout, incomplete runs, counters.

use super::*;
use dbscope_core::fake::FakeRun;
use dbscope_core::manifest::{TargetInfo, WorkloadInfo};
use dbscope_core::Manifest;
use dbscope_core::{Event, Outcome, RunDir};
use std::path::Path;

fn write_run(dir: &Path, sync: &str, events: &[(&str, u64)]) -> RunDir {
    fake_run(dir, sync, events).finish()
}

/// A run of `events` (name, duration) one µs apart, its target asked for `synchronous=sync`.
fn fake_run(dir: &Path, sync: &str, events: &[(&str, u64)]) -> FakeRun {
    let mut m = Manifest::new("workload", WorkloadInfo::default(), 1);
    m.target = Some(TargetInfo {
        kind: "sqlite".into(),
        settings_requested: vec![("synchronous".into(), sync.into())],
        ..TargetInfo::default()
    });
    m.outcome = Outcome::Complete;
    m.events_written = Some(events.len() as u64);
    let mut f = FakeRun::with_manifest(dir, m);
    let evs: Vec<Event> = events
        .iter()
        .enumerate()
        .map(|(i, (n, d))| FakeRun::event(f.name(n), 0, i as u64 * 1000, *d))
        .collect();
    f.block(&evs);
    f
}

fn lat(n: usize, base: u64, spread: u64) -> Vec<u64> {
    (0..n as u64).map(|i| base + (i * 7919) % spread).collect()
}

#[test]
fn clear_slowdown_is_called_with_its_cause() {
    let dir = tempfile::tempdir().unwrap();
    let a: Vec<(&str, u64)> = lat(3000, 100_000, 20_000)
        .into_iter()
        .map(|d| ("commit", d))
        .collect();
    let b: Vec<(&str, u64)> = lat(3000, 130_000, 20_000)
        .into_iter()
        .map(|d| ("commit", d))
        .collect();
    let ra = write_run(&dir.path().join("a"), "normal", &a);
    let rb = write_run(&dir.path().join("b"), "full", &b);
    let c = compare(&ra, &rb, &CompareOptions::default()).unwrap();
    let e = &c.events[0];
    assert_eq!(e.verdict.call, "slower");
    assert!(
        e.verdict.text.starts_with("B is slower: +30.0 µs mean"),
        "{}",
        e.verdict.text
    );
    assert!((e.hl_shift_us - 30.0).abs() < 1e-9);
    assert_eq!(
        c.manifest_diff,
        vec![ManifestDiff {
            field: "target.settings_requested.synchronous".into(),
            a: Some("normal".into()),
            b: Some("full".into()),
        }]
    );
    let text = render_text(&c);
    assert!(
        text.contains("target.settings_requested.synchronous  A: normal   B: full"),
        "{text}"
    );
    assert!(text.contains("p < 2.2e-16"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&render_json(&c)).unwrap();
    assert_eq!(json["events"][0]["verdict"]["call"], "slower");
}

#[test]
fn issue_13_elapsed_time_reduced_by_70_percent() {
    // Seed 001's headline: the same 1,000 commits, back to back, 10 ms each on A and 3 ms on B.
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, ms: u64| {
        let mut f = FakeRun::new(&dir.path().join(name));
        let c = f.name("commit");
        let evs: Vec<Event> = (0..1000u64)
            .map(|i| FakeRun::event(c, 0, i * ms * 1_000_000, ms * 1_000_000))
            .collect();
        f.block(&evs);
        f.finish()
    };
    let (a, b) = (run("a", 10), run("b", 3));
    let c = compare(&a, &b, &CompareOptions::default()).unwrap();
    assert_eq!(c.a.elapsed_s, Some(10.0));
    assert_eq!(c.b.elapsed_s, Some(3.0));
    assert_eq!(
        c.events[0].throughput_per_s,
        [Some(100.0), Some(1000.0 / 3.0)]
    );
    let text = render_text(&c);
    assert!(
        text.contains("elapsed  A 10.000 s   B 3.000 s   B/A 0.300 (\u{2212}70.0%)"),
        "{text}"
    );
    assert!(
        text.contains("throughput  A 100.0/s   B 333.3/s   (+233.3%)"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&render_json(&c)).unwrap();
    assert_eq!(json["b"]["elapsed_s"], 3.0);
    let page =
        crate::html::render_compare(&a, &b, &c, &crate::html::HtmlOptions::default()).unwrap();
    assert!(
        page.html.contains("B/A 0.300"),
        "the HTML header says it too"
    );
}

#[test]
fn text_layout_is_exact() {
    // R 4.2.2: x <- c(10, 12, 11, 13, 12); y <- c(14, 15, 13, 16, 15) (µs);
    // issue 13: elapsed = first start to last end (A 0 … 4 + 12 µs, B 0 … 4 + 15 µs) and
    // throughput = n / elapsed (5 / 16 µs, 5 / 19 µs);
    // t.test(y, x): t = 4.1603, df = 8, p-value = 0.003164, CI 1.337117 4.662883;
    // wilcox.test(y, x, exact = FALSE): W = 24.5, p-value = 0.01533; sd(x) = 1.140175.
    let dir = tempfile::tempdir().unwrap();
    let us = |v: &[u64]| -> Vec<(&str, u64)> { v.iter().map(|&x| ("commit", x * 1000)).collect() };
    let ra = write_run(&dir.path().join("a"), "normal", &us(&[10, 12, 11, 13, 12]));
    let rb = write_run(&dir.path().join("b"), "normal", &us(&[14, 15, 13, 16, 15]));
    let o = CompareOptions {
        outlier_us: Some(14.5),
        ..CompareOptions::default()
    };
    let mut c = compare(&ra, &rb, &o).unwrap();
    c.a.path = "runs/a".into();
    c.b.path = "runs/b".into();
    let want = "\
A  runs/a  (, complete, 5 events read)
B  runs/b  (, complete, 5 events read)
elapsed  A 16.000 µs   B 19.000 µs   B/A 1.188 (+18.8%)
manifests: no differences (timestamps and command lines aside)

commit   n  A 5   B 5
  throughput  A 312,500.0/s   B 263,157.9/s   (−15.8%)
        Min. 1st Qu.  Median    Mean 3rd Qu.    Max.   (µs)
  A     10.0    11.0    12.0    11.6    12.0    13.0   sd 1.14
  B     13.0    14.0    15.0    14.6    15.0    16.0   sd 1.14
  mean    B − A +3.000 µs (95% CI +1.337 … +4.663)   Welch t = 4.160251, df = 8, p = 0.003164
  shift   Hodges–Lehmann +3 µs   Wilcoxon rank-sum W = 24.5, p = 0.01533
  quantile           A            B   B − A (95% CI)                   change (95% CI, 2000 replicates, seed 1)
";
    let text = render_text(&c);
    assert!(text.starts_with(want), "{text}");
    assert!(
        text.contains("  over 14.5 µs   A 0 (0%)   B 3 (60%)\n"),
        "{text}"
    );
    assert!(
        text.contains("  verdict B is slower: +3.00 µs mean (95% CI +1.34 … +4.66), p = 0.003164"),
        "{text}"
    );
}

#[test]
fn same_run_is_no_difference() {
    let dir = tempfile::tempdir().unwrap();
    let a: Vec<(&str, u64)> = lat(500, 1_000, 900).into_iter().map(|d| ("q", d)).collect();
    let ra = write_run(&dir.path().join("a"), "normal", &a);
    let c = compare(&ra, &ra, &CompareOptions::default()).unwrap();
    assert_eq!(c.events[0].verdict.call, "none");
    assert_eq!(
        c.events[0].verdict.text,
        "no difference detected beyond ±1%"
    );
    assert!(c.manifest_diff.is_empty());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// compare(A, A) never reports a difference, whatever the data and the bootstrap seed.
    #[test]
    fn compare_a_with_itself_never_calls_a_change(
        // From 4 a side: fewer are "too few samples to decide" (issue 34 item 6's rule).
        d in proptest::collection::vec(1u64..50_000_000, 4..400),
        seed in proptest::prelude::any::<u64>(),
        noise in 0.0f64..0.05,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let evs: Vec<(&str, u64)> = d.iter().map(|&v| ("e", v)).collect();
        let ra = write_run(&dir.path().join("a"), "x", &evs);
        let mut o = CompareOptions { noise, ..CompareOptions::default() };
        o.bootstrap.seed = seed;
        o.bootstrap.replicates = 300;
        let c = compare(&ra, &ra, &o).unwrap();
        proptest::prop_assert_eq!(&c.events[0].verdict.call, "none");
        proptest::prop_assert!(c.events[0].verdict.text.starts_with("no difference detected"));
    }
}

#[test]
fn tail_only_change_is_seen() {
    // Same bulk, but B's slowest 2% are ten times slower: the mean interval may overlap the
    // band, the p99 interval does not.
    let dir = tempfile::tempdir().unwrap();
    let base = lat(20_000, 1_000_000, 100_000);
    let mut tail = base.clone();
    tail.sort_unstable();
    let n = tail.len();
    for v in &mut tail[n - n / 50..] {
        *v *= 10;
    }
    let a: Vec<(&str, u64)> = base.into_iter().map(|d| ("io", d)).collect();
    let b: Vec<(&str, u64)> = tail.into_iter().map(|d| ("io", d)).collect();
    let ra = write_run(&dir.path().join("a"), "x", &a);
    let rb = write_run(&dir.path().join("b"), "x", &b);
    let c = compare(&ra, &rb, &CompareOptions::default()).unwrap();
    let v = &c.events[0].verdict;
    assert_eq!(v.quantiles[0], Direction::None, "p50 unchanged: {}", v.text);
    assert_eq!(v.quantiles[2], Direction::Slower, "{}", v.text);
    assert!(v.text.contains("p99 +"), "{}", v.text);
}

#[test]
fn issue_34_item_6_names_without_a_test_are_shown_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    // Two traces with different wait names: every name, `—` where a side lacks it.
    let ra = write_run(
        &dir.path().join("a"),
        "x",
        &[("commit", 5_000), ("commit", 6_000)],
    );
    let rb = write_run(
        &dir.path().join("b"),
        "x",
        &[("wait", 5_000), ("wait", 6_000)],
    );
    let c = compare(&ra, &rb, &CompareOptions::default()).unwrap();
    assert!(c.events.is_empty());
    let names: Vec<(&str, bool, bool, &str)> = c
        .untested
        .iter()
        .map(|u| {
            (
                u.name.as_str(),
                u.a.is_some(),
                u.b.is_some(),
                u.reason.as_str(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("commit", true, false, "only in A: no test"),
            ("wait", false, true, "only in B: no test")
        ]
    );
    let text = render_text(&c);
    assert!(
        text.contains("commit   n  A 2   B —   only in A: no test"),
        "{text}"
    );
    assert!(
        text.contains("wait   n  A —   B 2   only in B: no test"),
        "{text}"
    );
    assert!(text.contains("  median   A 5.50 µs   B —\n"), "{text}");
    // Too few on one side.
    let rc = write_run(&dir.path().join("c"), "x", &[("commit", 5)]);
    let c = compare(&ra, &rc, &CompareOptions::default()).unwrap();
    assert_eq!(
        c.untested[0].reason,
        "2 in A and 1 in B (a test needs two in each): no test"
    );
    // A name in neither run is still refused.
    let opts = CompareOptions {
        event: Some("nope".into()),
        ..CompareOptions::default()
    };
    let e = compare(&ra, &rb, &opts).unwrap_err().to_string();
    assert!(
        e.contains("nothing to compare: event \"nope\" is in neither run (A has \"commit\"; B has \"wait\")"),
        "{e}"
    );
    let mut running = rc.clone();
    running.manifest.outcome = Outcome::Running;
    let e = compare(&ra, &running, &CompareOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("B (") && e.contains("did not record an end"),
        "{e}"
    );
}

/// A bulk load's steps: one event each, with rows, and a step that only failed.
fn steps_run(dir: &Path, load_s: f64, failed: bool) -> RunDir {
    let mut m = Manifest::new("bulkload", WorkloadInfo::default(), 1);
    m.outcome = Outcome::Complete;
    m.events_written = Some(3);
    let mut f = FakeRun::with_manifest(dir, m);
    let (load, group) = (f.name("load"), f.name("group by 1"));
    let dup = f.outcome("pg:23505");
    let ns = (load_s * 1e9) as u64;
    let mut evs = vec![Event {
        rows: 1_000_000,
        ..FakeRun::event(load, 0, 0, ns)
    }];
    let g = FakeRun::event(group, 0, ns, 2_000_000_000);
    evs.push(if failed {
        Event { outcome: dup, ..g }
    } else {
        g
    });
    evs.push(if failed {
        Event { outcome: dup, ..g }
    } else {
        g
    });
    f.block(&evs);
    f.finish()
}

#[test]
fn issue_34_item_6_single_steps_and_failures_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let ra = steps_run(&dir.path().join("a"), 10.0, true);
    let rb = steps_run(&dir.path().join("b"), 3.0, false);
    let c = compare(&ra, &rb, &CompareOptions::default()).unwrap();
    let load = &c.untested[0];
    assert_eq!(load.reason, "one sample: no test");
    let (a, b) = (load.a.as_ref().unwrap(), load.b.as_ref().unwrap());
    assert_eq!((a.elapsed_s, b.elapsed_s), (Some(10.0), Some(3.0)));
    assert_eq!(a.rows_per_s, Some(100_000.0));
    let group = &c.untested[1];
    assert_eq!(group.reason, "only failures in A: no test");
    assert_eq!(group.a.as_ref().unwrap().errors["pg:23505"], 2);
    assert!(group.b.as_ref().unwrap().errors.is_empty());
    let text = render_text(&c);
    for want in [
        "load   n  A 1   B 1   one sample: no test\n",
        "  elapsed  A 10.000 s   B 3.000 s   B/A 0.300 (−70.0%)\n",
        "  rows/s   A 100,000.0   B 333,333.3   B/A 3.333 (+233.3%)\n",
        "group by 1   n  A 0   B 2   only failures in A: no test\n",
        "  errors   A pg:23505 2   B none\n",
    ] {
        assert!(text.contains(want), "{want:?} in:\n{text}");
    }
}

#[test]
fn issue_34_item_6_too_few_samples_to_decide() {
    // The rule: the smallest two-sided p of the exact rank-sum test, 2 / C(n + m, n), below 5%.
    for (n, m, few) in [
        (1, 1, true),
        (2, 2, true),
        (3, 3, true),
        (3, 4, true),
        (2, 7, true),
        (1, 39, true),
        (4, 4, false),
        (5, 3, false),
        (2, 8, false),
        (40, 1, false),
        (1_000_000, 1_000_000, false),
    ] {
        assert_eq!(too_few_to_decide(n, m), few, "{n} and {m}");
    }
    let dir = tempfile::tempdir().unwrap();
    // n = 2: p50 up by 289% and still too few to decide.
    let ra = write_run(
        &dir.path().join("a"),
        "x",
        &[("q", 100_000), ("q", 101_000)],
    );
    let rb = write_run(
        &dir.path().join("b"),
        "x",
        &[("q", 389_000), ("q", 394_000)],
    );
    let c = compare(&ra, &rb, &CompareOptions::default()).unwrap();
    let v = &c.events[0].verdict;
    assert_eq!(v.call, "too_few", "{}", v.text);
    assert!(
        v.text
            .starts_with("too few samples to decide: with 2 and 2 events"),
        "{}",
        v.text
    );
    // Four in each with the same gap: called.
    let a4: Vec<(&str, u64)> = [100_000, 101_000, 100_500, 100_800]
        .into_iter()
        .map(|d| ("q", d))
        .collect();
    let b4: Vec<(&str, u64)> = [389_000, 394_000, 391_000, 390_000]
        .into_iter()
        .map(|d| ("q", d))
        .collect();
    let ra = write_run(&dir.path().join("a4"), "x", &a4);
    let rb = write_run(&dir.path().join("b4"), "x", &b4);
    let c = compare(&ra, &rb, &CompareOptions::default()).unwrap();
    assert_eq!(
        c.events[0].verdict.call, "slower",
        "{}",
        c.events[0].verdict.text
    );
}

#[test]
fn counter_sections_in_both_runs_are_compared() {
    let dir = tempfile::tempdir().unwrap();
    let evs: Vec<(&str, u64)> = lat(50, 1_000, 900).into_iter().map(|d| ("q", d)).collect();
    let ra = write_run(&dir.path().join("a"), "x", &evs);
    let rb = write_run(&dir.path().join("b"), "x", &evs);
    let c = compare(&ra, &rb, &CompareOptions::default()).unwrap();
    assert!(c.counters.is_empty());
    let json: serde_json::Value = serde_json::from_str(&render_json(&c)).unwrap();
    assert!(json.get("counters").is_none(), "no sections, no member");
    let s = crate::counters::tests::section;
    let mut fa = fake_run(&dir.path().join("ca"), "x", &evs);
    fa.counters(s(1200, 3.0, true));
    let mut fb = fake_run(&dir.path().join("cb"), "x", &evs);
    fb.counters(s(1500, 4.5, true));
    let (ra, rb) = (fa.finish(), fb.finish());
    let c = compare(&ra, &rb, &CompareOptions::default()).unwrap();
    assert_eq!(c.counters.len(), 1);
    let text = render_text(&c);
    assert!(
            text.contains("   commits per write      3.00      4.50   +1.50   +50.0%\n   rate (MB/s)         1,234.5   1,234.5    +0.0    +0.0%\n   per destination\n"),
            "{text}"
        );
    assert!(
        text.contains("\n\nredo log writer   B against A\n"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&render_json(&c)).unwrap();
    assert_eq!(json["counters"][0]["key"], "redo");
    assert_eq!(json["counters"][0]["counters"][0]["diff"], 300);
    assert_eq!(json["counters"][0]["counters"][1]["pct"], 50.0);
    std::fs::write(rb.path.join("counters.json"), "[").unwrap();
    let e = compare(&ra, &rb, &CompareOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("not valid counters"), "{e}");
}

#[test]
fn a_partial_replay_on_either_side_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let evs: Vec<(&str, u64)> = lat(50, 1_000, 900).into_iter().map(|d| ("q", d)).collect();
    let ra = write_run(&dir.path().join("a"), "x", &evs);
    let mut rb = write_run(&dir.path().join("b"), "x", &evs);
    let text = render_text(&compare(&ra, &rb, &CompareOptions::default()).unwrap());
    assert!(!text.contains("partial"), "{text}");
    rb.manifest.workload.params.insert(
        "partial".into(),
        serde_json::json!("12 calls not replayed; connections lost: 4"),
    );
    for (label, c) in [
        ("B", compare(&ra, &rb, &CompareOptions::default()).unwrap()),
        ("A", compare(&rb, &ra, &CompareOptions::default()).unwrap()),
    ] {
        let text = render_text(&c);
        assert!(
            text.contains(&format!(
                "   WARNING: {label} is a partial replay: 12 calls not replayed; connections lost: 4\n"
            )),
            "{text}"
        );
        let json: serde_json::Value = serde_json::from_str(&render_json(&c)).unwrap();
        let side = if label == "A" { "a" } else { "b" };
        assert!(json[side]["partial"].is_string(), "{json}");
    }
}

#[test]
fn issue_34_each_side_prints_as_r_prints_its_summary() {
    // R 4.2.2: summary(c(1.5, 2.25, 3, 1000.123)) prints 1.500 2.062 2.625 251.718 252.281
    // 1000.123 and summary(c(10, 20, 300, 4000)) prints 10.0 17.5 160.0 1082.5 1225.0 4000.0;
    // formatting both sides together gave B three decimals R does not print.
    let dir = tempfile::tempdir().unwrap();
    let ns = |v: &[u64]| -> Vec<(&str, u64)> { v.iter().map(|&x| ("commit", x)).collect() };
    let ra = write_run(
        &dir.path().join("a"),
        "normal",
        &ns(&[1500, 2250, 3000, 1_000_123]),
    );
    let rb = write_run(
        &dir.path().join("b"),
        "normal",
        &ns(&[10_000, 20_000, 300_000, 4_000_000]),
    );
    let text = render_text(&compare(&ra, &rb, &CompareOptions::default()).unwrap());
    let row = |label: &str| -> Vec<String> {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("  {label}  ")))
            .unwrap_or_else(|| panic!("no row {label}: {text}"));
        line.split_whitespace()
            .skip(1)
            .take(6)
            .map(String::from)
            .collect()
    };
    assert_eq!(
        row("A"),
        ["1.500", "2.062", "2.625", "251.718", "252.281", "1000.123"],
        "{text}"
    );
    assert_eq!(
        row("B"),
        ["10.0", "17.5", "160.0", "1082.5", "1225.0", "4000.0"],
        "{text}"
    );
}

/// Issue 34's budget: a comparison whose latencies do not fit `--memory` is sorted on disk and
/// gives the same figures as in memory (the shift exact in integer nanoseconds there), with a
/// name spilled while the run was read and one spilled only at the test.
#[test]
fn a_comparison_beyond_its_memory_budget_gives_the_same_figures_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    let mut a: Vec<(&str, u64)> = lat(3_000, 100_000, 20_011)
        .into_iter()
        .map(|d| ("commit", d))
        .collect();
    a.extend(lat(300, 5_000, 977).into_iter().map(|d| ("begin", d)));
    let mut b: Vec<(&str, u64)> = lat(2_500, 103_000, 25_013)
        .into_iter()
        .map(|d| ("commit", d))
        .collect();
    b.extend(lat(310, 5_100, 977).into_iter().map(|d| ("begin", d)));
    let ra = write_run(&dir.path().join("a"), "normal", &a);
    let rb = write_run(&dir.path().join("b"), "full", &b);
    let mem = compare(&ra, &rb, &CompareOptions::default()).unwrap();
    // 16 KiB: 1,024 durations buffered per run while reading (commit spills then); "begin"'s
    // 610 values need 12 KiB in memory (stays there), more than 4 KiB (sorted on disk).
    let small = CompareOptions {
        memory_bytes: 16 << 10,
        ..CompareOptions::default()
    };
    let disk = compare(&ra, &rb, &small).unwrap();
    let tiny = CompareOptions {
        memory_bytes: 4 << 10,
        ..CompareOptions::default()
    };
    let disk2 = compare(&ra, &rb, &tiny).unwrap();
    for d in [&disk, &disk2] {
        assert_eq!(d.events.len(), 2);
        for (m, f) in mem.events.iter().zip(&d.events) {
            assert_eq!(m.name, f.name);
            assert_eq!(m.a.n, f.a.n);
            // Every figure alike; the mean is summed in ascending order on disk (R sums in
            // event order), which can move its last bit.
            let (sm, sf) = (m.b.summary, f.b.summary);
            assert_eq!(
                [sm.min, sm.q1, sm.median, sm.q3, sm.max],
                [sf.min, sf.q1, sf.median, sf.q3, sf.max],
                "{}",
                m.name
            );
            assert!(
                (sm.mean - sf.mean).abs() <= 4.0 * f64::EPSILON * sm.mean,
                "{}",
                m.name
            );
            assert_eq!(m.rank_test, f.rank_test, "{}", m.name);
            assert_eq!(m.quantiles, f.quantiles, "{}", m.name);
            assert!((m.hl_shift_us - f.hl_shift_us).abs() < 1e-9, "{}", m.name);
            let (wm, wf) = (m.welch.unwrap(), f.welch.unwrap());
            assert!((wm.t - wf.t).abs() < 1e-9 * wm.t.abs(), "{}", m.name);
            assert_eq!(m.verdict.text, f.verdict.text, "{}", m.name);
        }
    }
    // The shift of commit is the median of 7.5 M differences, checked the slow way.
    let (va, vb) = (lat(3_000, 100_000, 20_011), lat(2_500, 103_000, 25_013));
    let mut d: Vec<i64> = Vec::with_capacity(va.len() * vb.len());
    for &x in &vb {
        for &y in &va {
            d.push(x as i64 - y as i64);
        }
    }
    let k = d.len() / 2;
    let (_, hi, _) = d.select_nth_unstable(k);
    let hi = *hi;
    let lo = *d[..k].iter().max().unwrap();
    assert_eq!(disk.events[0].hl_shift_us, (lo + hi) as f64 / 2.0 / 1000.0);
}

/// Open-loop runs: the latencies from the intended start stay exact within the budget and fall
/// back to an HDR histogram beyond it, said in the table, instead of being held whole.
#[test]
fn open_loop_latencies_beyond_the_budget_are_summarised_from_a_histogram() {
    let dir = tempfile::tempdir().unwrap();
    let open_run = |name: &str, base: u64| {
        let mut m = Manifest::new("workload", WorkloadInfo::default(), 1);
        m.runner = Some(dbscope_core::manifest::RunnerInfo {
            mode: "open".into(),
            ..Default::default()
        });
        m.outcome = Outcome::Complete;
        m.events_written = Some(3000);
        let mut f = FakeRun::with_manifest(&dir.path().join(name), m);
        let id = f.name("commit");
        let evs: Vec<Event> = lat(3000, base, 20_000)
            .into_iter()
            .enumerate()
            .map(|(i, d)| {
                // One operation a millisecond, each well under it.
                let start = 1_000_000 + i as u64 * 1_000_000;
                Event {
                    // Every third operation (from the second) was due while the one before it
                    // ran: late. The others started 50 µs after their intended start, on time.
                    intended_start_ns: Some(if i % 3 == 1 {
                        start - 1_000_000 + 1_000
                    } else {
                        start - 50_000
                    }),
                    ..FakeRun::event(id, 0, start, d)
                }
            })
            .collect();
        f.block(&evs);
        f.finish()
    };
    let (ra, rb) = (open_run("a", 100_000), open_run("b", 120_000));
    let exact = compare(&ra, &rb, &CompareOptions::default()).unwrap();
    let small = CompareOptions {
        memory_bytes: 4 << 10, // 1,024 values a run: fewer than the 3,000 events
        ..CompareOptions::default()
    };
    let hdr = compare(&ra, &rb, &small).unwrap();
    let (e, h) = (&exact.from_intended[0], &hdr.from_intended[0]);
    assert!(e.a.percentiles_us.exact && e.b.percentiles_us.exact);
    assert!(!h.a.percentiles_us.exact && !h.b.percentiles_us.exact);
    assert_eq!((e.a.count, e.a.late), (h.a.count, h.a.late));
    assert_eq!(e.a.late, 1000);
    for (x, y) in [
        (e.a.summary_us.median, h.a.summary_us.median),
        (e.b.percentiles_us.p99, h.b.percentiles_us.p99),
    ] {
        assert!((x - y).abs() <= 0.01 * x, "{x} vs {y}");
    }
    assert_eq!(e.a.summary_us.max, h.a.summary_us.max);
    assert!(render_text(&hdr).contains("HDR histogram, 3 digits"));
    assert!(!render_text(&exact).contains("HDR histogram"));
}

/// A run of many names with one event each, past the budget: single values written out on their
/// own are read back for the side-by-side rows, not refused.
#[test]
fn single_events_written_out_under_a_small_budget_are_still_shown() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..1100).map(|i| format!("step{i}")).collect();
    let events: Vec<(&str, u64)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), 1000 + i as u64))
        .collect();
    let ra = write_run(&dir.path().join("a"), "normal", &events);
    let rb = write_run(&dir.path().join("b"), "normal", &events);
    let tiny = CompareOptions {
        memory_bytes: 4 << 10,
        ..CompareOptions::default()
    };
    let c = compare(&ra, &rb, &tiny).unwrap();
    assert_eq!(c.untested.len(), 1100);
    for (i, u) in c.untested.iter().enumerate() {
        let a = u.a.as_ref().unwrap();
        assert_eq!(a.n, 1);
        assert_eq!(
            a.summary.unwrap().max,
            (1000 + i) as f64 / 1000.0,
            "{}",
            u.name
        );
    }
}
