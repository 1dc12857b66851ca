//! Issue 34's smaller defects, each on a real run (SQLite files): how `events` runs say their
//! mode and label their throughput, the open-loop section printed once, the report's wording.

use crate::cli::*;
use crate::common::argv::Argv;

/// `events` paces its clients itself: the run is open loop (manifest and report), its single
/// connection is "1 session", and the throughput plot of `commit` says it plots commits.
#[test]
fn issue_34_an_events_run_is_open_loop_and_its_plot_says_what_it_counts() {
    let dir = tempdir();
    let target = format!("sqlite:{}", s(&join(dir.path(), "ev.db")));
    ok(
        dir.path(),
        &Argv::run("events")
            .target(&target)
            .clients(3)
            .rate(50)
            .duration("1s")
            .strategy("batch")
            .out("r")
            .quiet()
            .args(),
    );
    let run = join(dir.path(), "r");
    let m = manifest(&run);
    assert_eq!(m["runner"]["mode"], "open", "{m}");
    let text = ok(dir.path(), &["report", "r"]);
    let runner = text.lines().find(|l| l.starts_with("runner")).unwrap();
    assert!(runner.contains("1 session  open loop"), "{runner}");
    let html = join(dir.path(), "r.html");
    ok(
        dir.path(),
        &["report", "r", "--html", s(&html), "--svg", "plots"],
    );
    let svg = std::fs::read_to_string(join(dir.path(), "plots/commit-throughput.svg"))
        .unwrap_or_else(|e| panic!("{e}: {:?}", std::fs::read_dir(join(dir.path(), "plots"))));
    assert!(svg.contains("commit operations per second"), "{svg}");
    assert!(!svg.contains("events per second"), "{svg}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("1 session, open loop"), "runner row");
}

/// A paced run's report prints the per-second due/started/backlog table once (the pacing
/// section had its own copy of the due column), and settings values are wrapped, never cut.
#[test]
fn issue_34_the_backlog_table_is_printed_once_and_settings_are_never_cut() {
    let dir = tempdir();
    let target = format!("sqlite:{}", s(&join(dir.path(), "c.db")));
    ok(
        dir.path(),
        &Argv::run("commit")
            .target(&target)
            .rate(100)
            .duration("2s")
            .out("r")
            .quiet()
            .args(),
    );
    let text = ok(dir.path(), &["report", "r"]);
    assert_eq!(text.matches("   second ").count(), 1, "{text}");
    assert!(!text.contains("operations due per second"), "{text}");
    assert!(
        text.contains("open-loop pacing: constant arrivals, 1 session\n"),
        "{text}"
    );
    // The busy handler's effective value, every word of it, wrapped in its column.
    let settings: String = text
        .lines()
        .skip_while(|l| !l.starts_with("settings"))
        .take_while(|l| l.starts_with("settings") || l.starts_with("     "))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ") + " ")
        .collect();
    assert!(!settings.contains('…'), "{settings}");
    assert!(
        settings.contains("restores SQLite's back-off)"),
        "{settings}"
    );
    for l in text
        .lines()
        .skip_while(|l| !l.starts_with("settings"))
        .take(8)
    {
        assert!(l.chars().count() <= 108, "{l}");
    }
}

/// An `import csv` run without start times says what the import did (rows, the file's bytes,
/// how long it took) and prints no rate: its times are made up (latencies end to end).
#[test]
fn issue_34_an_import_says_what_it_did_and_no_throughput() {
    let dir = tempdir();
    let csv = join(dir.path(), "lat.csv");
    let body: String = (1..=500).map(|i| format!("{}\n", i * 3)).collect();
    std::fs::write(&csv, &body).unwrap();
    ok(
        dir.path(),
        &[
            "import",
            "csv",
            s(&csv),
            "--event",
            "log file sync",
            "--out",
            "r",
        ],
    );
    let text = ok(dir.path(), &["report", "r"]);
    let line = text
        .lines()
        .find(|l| l.starts_with("log file sync"))
        .unwrap();
    assert!(!line.contains("/s"), "{line}");
    let imported: String = text
        .lines()
        .skip_while(|l| !l.starts_with("imported"))
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(imported.contains("500 rows"), "{text}");
    assert!(
        imported.contains(&format!(
            "from {},{:03} bytes of",
            body.len() / 1000,
            body.len() % 1000
        )),
        "{text}"
    );
    assert!(imported.contains("no throughput"), "{text}");
    assert!(!text.contains("first start to last end"), "{text}");
    let r = report_json(dir.path(), &join(dir.path(), "r"));
    assert!(r["events"][0]["throughput_per_s"].is_null(), "{r}");
}

/// Host facts: memory per NUMA node, huge pages, THP and the CPU flags that matter go into the
/// manifest, as this machine's /sys and /proc say (read here independently), and into `report`.
#[test]
fn issue_34_host_facts_have_numa_memory_huge_pages_thp_and_cpu_flags() {
    let dir = tempdir();
    let target = format!("sqlite:{}", s(&join(dir.path(), "c.db")));
    ok(
        dir.path(),
        &Argv::run("commit")
            .target(&target)
            .ops(5)
            .out("r")
            .quiet()
            .args(),
    );
    let h = &manifest(&join(dir.path(), "r"))["host"];
    let read = |p: &str| std::fs::read_to_string(p).ok();
    // THP: the bracketed word.
    if let Some(t) = read("/sys/kernel/mm/transparent_hugepage/enabled") {
        let chosen = t.split('[').nth(1).and_then(|r| r.split(']').next());
        assert_eq!(h["thp"].as_str(), chosen, "{h}");
    }
    // Huge pages from /proc/meminfo.
    let meminfo = read("/proc/meminfo").unwrap_or_default();
    let field = |k: &str| {
        meminfo
            .lines()
            .find(|l| l.starts_with(&format!("{k}:")))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    assert_eq!(
        h["hugepages_total"].as_u64(),
        field("HugePages_Total"),
        "{h}"
    );
    assert_eq!(h["hugepages_free"].as_u64(), field("HugePages_Free"), "{h}");
    assert_eq!(
        h["hugepage_bytes"].as_u64(),
        field("Hugepagesize").map(|kb| kb * 1024),
        "{h}"
    );
    // Memory of every NUMA node.
    let mut nodes = 0;
    for e in std::fs::read_dir("/sys/devices/system/node")
        .into_iter()
        .flatten()
    {
        let name = e.unwrap().file_name().to_string_lossy().to_string();
        let Some(n) = name
            .strip_prefix("node")
            .filter(|n| n.parse::<u32>().is_ok())
        else {
            continue;
        };
        nodes += 1;
        let kb: u64 = read(&format!("/sys/devices/system/node/node{n}/meminfo"))
            .unwrap()
            .lines()
            .find(|l| l.contains("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(3))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(h["numa_memory_bytes"][n].as_u64(), Some(kb * 1024), "{h}");
    }
    // The flags that matter, each recorded exactly when the CPU has it.
    let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
    let flags: Vec<&str> = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags") || l.starts_with("Features"))
        .map(|l| l.split(':').nth(1).unwrap().split_whitespace().collect())
        .unwrap_or_default();
    let recorded: Vec<&str> = h["cpu_flags"]
        .as_array()
        .map(|a| a.iter().map(|v| v.as_str().unwrap()).collect())
        .unwrap_or_default();
    for f in [
        "aes",
        "avx2",
        "avx512f",
        "sha_ni",
        "pclmulqdq",
        "sse4_2",
        "asimd",
    ] {
        assert_eq!(recorded.contains(&f), flags.contains(&f), "{f}: {h}");
    }
    let text = ok(dir.path(), &["report", "r"]);
    let host: String = text
        .lines()
        .skip_while(|l| !l.starts_with("host"))
        .take_while(|l| l.starts_with("host") || l.starts_with("   "))
        .collect::<Vec<_>>()
        .join(" ");
    if nodes > 0 {
        assert!(host.contains("NUMA memory node0"), "{host}");
    }
    if let Some(t) = h["thp"].as_str() {
        assert!(host.contains(&format!("THP {t}")), "{host}");
    }
    if !recorded.is_empty() {
        assert!(
            host.contains(&format!("CPU flags {}", recorded[0])),
            "{host}"
        );
    }
}

/// "1 session", not "1 sessions", where a command says how many it imported.
#[test]
fn issue_34_one_session_is_singular() {
    let dir = tempdir();
    let trc = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../sources/trace/tests/fixtures/oracle-10046/priitp2__trctools__error.trc");
    let out = ok(dir.path(), &["trace", "import", s(&trc), "--out", "t"]);
    let r = report_json(dir.path(), &join(dir.path(), "t"));
    let sessions: std::collections::BTreeSet<u64> = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["sessions"]["per_session"].as_object())
        .flat_map(|m| m.keys().map(|k| k.parse::<u64>().unwrap()))
        .collect();
    assert!(sessions.len() <= 1, "{sessions:?}");
    assert!(out.contains(" from 1 session into "), "{out}");
}

/// Why lookups swing (issue 34's goal): where the client runs beside the server moves a small
/// machine's throughput by tens of per cent. A run records the CPUs its client may use, `report`
/// says when it was held to some of them, and `compare` shows A's and B's.
#[test]
fn issue_34_a_run_held_to_one_cpu_says_so_and_compare_shows_it() {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let online_n: u32 = online
        .trim()
        .split(',')
        .map(|p| match p.split_once('-') {
            Some((a, b)) => b.parse::<u32>().unwrap() - a.parse::<u32>().unwrap() + 1,
            None => 1,
        })
        .sum();
    let mine = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string();
    if online_n < 2 || mine != online.trim() {
        eprintln!("skipped: needs 2 or more CPUs and a test process free to use them all");
        return;
    }
    let dir = tempdir();
    let target = format!("sqlite:{}", s(&join(dir.path(), "c.db")));
    let args = |out: &'static str| Argv::run("commit").target(&target).ops(20).out(out).quiet();
    ok(dir.path(), &args("free").args());
    // Held to CPU 0 as a user would hold it (util-linux's taskset, as the benches do).
    let Ok(out) = std::process::Command::new("taskset")
        .args(["-c", "0", env!("CARGO_BIN_EXE_dbscope")])
        .args(args("held").args())
        .current_dir(dir.path())
        .output()
    else {
        eprintln!("skipped: taskset (util-linux) is not installed");
        return;
    };
    assert!(out.status.success(), "{out:?}");

    let free = &manifest(&join(dir.path(), "free"))["host"];
    let held = &manifest(&join(dir.path(), "held"))["host"];
    assert_eq!(free["client_cpus"].as_str(), Some(online.trim()), "{free}");
    assert_eq!(held["client_cpus"].as_str(), Some("0"), "{held}");
    assert_eq!(
        held["online_cpus"].as_u64(),
        Some(online_n as u64),
        "{held}"
    );
    assert_eq!(held["cpus"].as_u64(), Some(1), "{held}");

    let host_line = |run: &str| {
        let text = ok(dir.path(), &["report", run]);
        text.lines()
            .skip_while(|l| !l.starts_with("host"))
            .take_while(|l| l.starts_with("host") || l.starts_with("   "))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let h = host_line("held");
    assert!(h.contains(&format!("{online_n} cpus")), "{h}");
    assert!(h.contains(&format!("client on CPU 0 of {online_n}")), "{h}");
    let h = host_line("free");
    assert!(h.contains(&format!("{online_n} cpus")), "{h}");
    assert!(!h.contains("client on"), "{h}");

    let cmp = ok(dir.path(), &["compare", "free", "held"]);
    let line = cmp
        .lines()
        .find(|l| l.trim_start().starts_with("host.client_cpus"))
        .unwrap_or_else(|| panic!("no host.client_cpus line:\n{cmp}"));
    assert!(
        line.contains(&format!("A: {}", online.trim())) && line.contains("B: 0"),
        "{line}"
    );
}
