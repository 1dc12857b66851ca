//! The HTML report in a real browser (headless Chromium): plots render, nothing from the run's text
//! runs as code, no console errors; a screenshot is kept for people to look at.

use std::path::{Path, PathBuf};
use std::process::Command;

use dbscope_core::fake::FakeRun;
use dbscope_core::{Event, Manifest, WorkloadInfo, EVENT_WARMUP};

use crate::cli::*;
use crate::common::argv::Argv;

const IMG_ATTACK: &str =
    "\"><img src=x onerror=\"document.body.setAttribute('data-pwned','img')\">";
const SCRIPT_ATTACK: &str = "<script>document.body.setAttribute('data-pwned','script')</script>";

fn chromium() -> PathBuf {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::var("PATH").unwrap_or_default().split(':') {
            let p = Path::new(dir).join(name);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!("Chromium not found: install it (apt-get install chromium) — scripts/test does");
}

/// Runs headless Chromium on a local file with a fresh profile; returns (stdout, stderr).
fn browse(args: &[&str], file: &Path, profile: &Path) -> (String, String) {
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--disable-sync",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", file.display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A hand-made run whose names and command line try to inject markup.
fn hostile_run(dir: &Path) -> PathBuf {
    let path = dir.join("hostile");
    let mut m = Manifest::new(
        "import",
        WorkloadInfo {
            name: SCRIPT_ATTACK.into(),
            params: Default::default(),
        },
        1,
    );
    m.command_line = vec!["dbscope".into(), SCRIPT_ATTACK.into(), IMG_ATTACK.into()];
    m.outcome = dbscope_core::Outcome::Complete;
    let mut w = FakeRun::with_manifest(&path, m);
    let a = w.name(IMG_ATTACK);
    let b = w.name(SCRIPT_ATTACK);
    let evs: Vec<Event> = (0..5000u64)
        .map(|i| Event {
            session: (i % 2) as u32,
            name: if i % 2 == 0 { a } else { b },
            start_ns: i * 1_000_000,
            duration_ns: 20_000 + (i * 7919) % 900_000,
            flags: if i < 300 { EVENT_WARMUP } else { 0 },
            ..Event::default()
        })
        .collect();
    w.block(&evs);
    w.finish();
    path
}

fn check_page(dom: &str, stderr: &str, expected_plots: usize) {
    // The attack strings are on the page as text; had they run, <body> would carry the attribute.
    let body_tag = &dom[dom.find("<body").expect("body")..];
    let body_tag = &body_tag[..body_tag.find('>').expect("tag end")];
    assert!(
        !body_tag.contains("data-pwned"),
        "injected markup ran: {body_tag}"
    );
    assert!(!dom.contains("<img"), "injected markup became an element");
    assert!(
        !stderr.contains("Uncaught") && !stderr.contains(":ERROR:CONSOLE"),
        "console errors: {stderr}"
    );
    let svgs: Vec<&str> = dom.split("<svg class=\"plot\"").skip(1).collect();
    assert_eq!(svgs.len(), expected_plots, "plots rendered");
    for svg in &svgs {
        let svg = &svg[..svg.find("</svg>").expect("closed svg")];
        assert!(
            svg.contains("class=\"series s0\" d=\"M"),
            "a non-empty data path: {svg}"
        );
        assert!(svg.contains("class=\"tick\""), "tick labels");
        assert!(svg.contains("class=\"axis-label\""), "axis labels");
    }
    for label in [
        "latency (log scale)",
        "percentile",
        "rank",
        "operations per second",
        "p99 latency (log scale)",
    ] {
        assert!(dom.contains(label), "axis label {label:?}");
    }
}

#[test]
fn html_report_renders_in_chromium_and_escapes_everything() {
    let dir = tempdir();
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("html-report");
    std::fs::create_dir_all(&out_dir).unwrap();

    // A real run on SQLite.
    ok(
        dir.path(),
        &Argv::run("commit")
            .sessions(2)
            .duration("2s")
            .opt("--warmup", "500ms")
            .out("r")
            .quiet()
            .args(),
    );
    let html = join(dir.path(), "r.html");
    ok(
        dir.path(),
        &["report", "r", "--html", s(&html), "--svg", "plots"],
    );
    let bytes = std::fs::read(&html).unwrap();
    assert!(bytes.len() < 5 << 20);
    let text = String::from_utf8(bytes).unwrap();
    for needle in ["<script", "src=", "href=", "url(", "@import", "<link"] {
        assert!(
            !text.contains(needle),
            "self-contained page, but found {needle:?}"
        );
    }
    assert_eq!(
        std::fs::read_dir(join(dir.path(), "plots"))
            .unwrap()
            .count(),
        10,
        "5 plots × 2 events"
    );
    let profile = join(dir.path(), "profile");
    let (dom, stderr) = browse(&["--dump-dom"], &html, &profile);
    check_page(&dom, &stderr, 10);
    assert!(dom.contains("warm-up"));
    let png = out_dir.join("run-report.png");
    browse(
        &[
            "--window-size=1100,2600",
            &format!("--screenshot={}", png.display()),
        ],
        &html,
        &profile,
    );
    assert!(
        std::fs::metadata(&png).unwrap().len() > 10_000,
        "screenshot at {}",
        png.display()
    );

    // A run whose every name tries to inject markup.
    let hostile = hostile_run(dir.path());
    let html = join(dir.path(), "hostile.html");
    ok(dir.path(), &["report", s(&hostile), "--html", s(&html)]);
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(
        !text.contains(SCRIPT_ATTACK) && !text.contains(IMG_ATTACK),
        "raw markup in the file"
    );
    assert!(text.contains("&lt;script&gt;"), "shown as text");
    let (dom, stderr) = browse(&["--dump-dom"], &html, &profile);
    check_page(&dom, &stderr, 10);
    let png = out_dir.join("hostile-report.png");
    browse(
        &[
            "--window-size=1100,1600",
            &format!("--screenshot={}", png.display()),
        ],
        &html,
        &profile,
    );
    assert!(png.exists());

    // A compare report: two real runs that differ in one setting.
    ok(
        dir.path(),
        &Argv::run("commit")
            .sessions(1)
            .duration("1s")
            .set("synchronous=off")
            .out("off")
            .quiet()
            .args(),
    );
    let html = join(dir.path(), "compare.html");
    ok(
        dir.path(),
        &[
            "compare",
            "r",
            "off",
            "--html",
            s(&html),
            "--svg",
            "cmp-plots",
        ],
    );
    let text = std::fs::read_to_string(&html).unwrap();
    let verdict = text.find("<h2>Verdict</h2>").expect("verdict section");
    let differs = text
        .find("What differs between the runs")
        .expect("manifest differences");
    assert!(verdict < differs, "verdicts come first");
    assert!(
        text.contains("settings_effective.synchronous"),
        "the changed setting is shown"
    );
    let (dom, stderr) = browse(&["--dump-dom"], &html, &profile);
    check_page(&dom, &stderr, 10);
    let overlaid = dom.matches("class=\"series s1\" d=\"M").count();
    assert!(overlaid >= 8, "B is drawn over A in the plots ({overlaid})");
    let png = out_dir.join("compare-report.png");
    browse(
        &[
            "--window-size=1100,2600",
            &format!("--screenshot={}", png.display()),
        ],
        &html,
        &profile,
    );
    assert!(std::fs::metadata(&png).unwrap().len() > 10_000);
}

#[test]
fn issue34_item11_sweep_html_plots_points_and_the_fitted_curve() {
    let dir = tempdir();
    let out = join(dir.path(), "sw");
    ok(
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
        ],
    );
    let html = join(dir.path(), "sweep.html");
    ok(
        dir.path(),
        &[
            "report",
            s(&out),
            "--html",
            s(&html),
            "--svg",
            "sweep-plots",
        ],
    );
    let text = std::fs::read_to_string(&html).unwrap();
    let start = text
        .find("throughput vs sessions: measured and USL fit")
        .expect("the sweep's plot");
    let svg = &text[text[..start].rfind("<svg").unwrap()..];
    let svg = &svg[..svg.find("</svg>").unwrap()];
    // The three measured points (and the legend's marker) and the fitted curve.
    assert_eq!(
        svg.matches("<circle class=\"series point s0\"").count(),
        4,
        "{svg}"
    );
    assert!(svg.contains("<path class=\"series s1\" d=\"M"), "{svg}");
    assert!(svg.contains("USL fit: λ = "), "{svg}");
    assert!(dir.path().join("sweep-plots/sweep-usl.svg").is_file());
    let profile = join(dir.path(), "profile");
    let (dom, _) = browse(&["--dump-dom"], &html, &profile);
    assert!(
        dom.contains("<circle class=\"series point s0\""),
        "rendered in Chromium"
    );
}
