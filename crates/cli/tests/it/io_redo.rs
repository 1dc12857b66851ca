//! `dbscope io redo` on real files (the disk and tmpfs): group commit, SIGKILL then verify, the
//! two-destination race with an injected slow destination, the sector-size check, bad input.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::cli::*;
use crate::crash::{sigkill, start_and_wait};

/// A temp dir on the disk (not tmpfs), so the sector sizes come from a real block device.
fn disk_tempdir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir on disk")
}

/// A temp dir on tmpfs, the fast destination.
fn shm_tempdir() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm").expect("temp dir in /dev/shm (tmpfs)")
}

fn counters(run: &Path) -> Value {
    let text = std::fs::read_to_string(run.join("redo.json")).expect("redo.json");
    serde_json::from_str(&text).expect("redo.json is JSON")
}

/// `log file sync` events without error, per session, read back from a CSV export (of a run
/// that may have been killed: `--allow-incomplete`, since such an export exits 1 otherwise).
fn acknowledged_per_session(dir: &Path, run: &Path) -> BTreeMap<u32, u64> {
    let csv = join(dir, "acks.csv");
    ok(
        dir,
        &[
            "export",
            s(run),
            "--format",
            "csv",
            "--output",
            s(&csv),
            "--allow-incomplete",
        ],
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let (cs, ce, co) = (col("session"), col("event"), col("outcome"));
    let mut acks = BTreeMap::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        if f[ce].trim_matches('"') == "log file sync" && f[co].trim_matches('"') == "ok" {
            *acks.entry(f[cs].parse::<u32>().unwrap()).or_insert(0u64) += 1;
        }
    }
    acks
}

/// How many `log file sync` events of a run took longer than `ms`, from a CSV export.
fn syncs_longer_than(dir: &Path, run: &Path, ms: f64) -> usize {
    let csv = join(dir, "syncs.csv");
    ok(
        dir,
        &["export", s(run), "--format", "csv", "--output", s(&csv)],
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let (ce, cd) = (col("event"), col("duration_ns"));
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[ce].trim_matches('"') == "log file sync")
        .filter(|f| f[cd].parse::<f64>().unwrap() / 1e6 > ms)
        .count()
}

fn verify_json(dir: &Path, logs: &[&Path]) -> (i32, Value) {
    let mut args = vec!["io", "redo", "verify", "--json"];
    args.extend(logs.iter().map(|p| s(p)));
    let out = run(dir, &args);
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "verify --json: {e}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap(), v)
}

#[test]
fn group_commit_factor_rises_with_sessions() {
    let dir = disk_tempdir();
    let log = join(dir.path(), "redo.log");
    let factor = |sessions: &str, extra: &[&str], out: &str| {
        let mut args = vec![
            "io",
            "redo",
            "--dest",
            s(&log),
            "--sync",
            "fdatasync",
            "--sessions",
            sessions,
            "--ops",
            "150",
            "--log-size",
            "4MiB",
            "--out",
            out,
            "-q",
        ];
        args.extend_from_slice(extra);
        ok(dir.path(), &args);
        let c = counters(&join(dir.path(), out));
        assert_eq!(c["final_counts"], true);
        assert_eq!(
            c["commits"].as_u64().unwrap(),
            150 * sessions.parse::<u64>().unwrap()
        );
        c["commits_per_write"].as_f64().unwrap()
    };
    let one = factor("1", &[], "s1");
    let eight = factor("8", &[], "s8");
    let eight_off = factor("8", &["--no-group-commit"], "s8off");
    assert_eq!(one, 1.0, "one session can only commit one record per write");
    assert_eq!(
        eight_off, 1.0,
        "--no-group-commit writes one record per write"
    );
    assert!(
        eight > 2.0,
        "8 committers should share writes: {eight} commits per write"
    );
    // The report shows the same factor, computed from the events.
    let r = report_json(dir.path(), &join(dir.path(), "s8"));
    let redo = &r["redo"];
    assert!(
        (redo["commits_per_write"].as_f64().unwrap() - eight).abs() < 1e-9,
        "{redo}"
    );
    assert!(redo["destinations"][0]["mb_per_s"].as_f64().unwrap() > 0.0);
    assert_summary_sane(event(&r, "log file sync"));
    assert_summary_sane(event(&r, "log file parallel write"));
    let text = ok(dir.path(), &["report", "s8"]);
    assert!(text.contains("commits per write"), "{text}");
    // The log verifies, and holds every commit of the run.
    let (code, v) = verify_json(dir.path(), &[&log]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["last_durable_commit"], 150 * 8);
    // The last run (no group commit: committers write directly, no log-writer thread) left
    // every session's commits in order, and recorded one write per commit.
    for session in 0..8 {
        assert_eq!(
            v["logs"][0]["session_last"][session.to_string()],
            150,
            "{v}"
        );
    }
    let r = report_json(dir.path(), &join(dir.path(), "s8off"));
    assert_eq!(event(&r, "log file parallel write")["count"], 1200, "{r}");
    assert_eq!(event(&r, "log file sync")["count"], 1200, "{r}");
}

#[test]
fn every_acknowledged_commit_survives_sigkill() {
    let disk = disk_tempdir();
    let shm = shm_tempdir();
    for (name, dests, extra) in [
        ("one", vec![join(disk.path(), "one.log")], None),
        // Without group commit the committers write the log themselves.
        (
            "direct",
            vec![join(disk.path(), "direct.log")],
            Some("--no-group-commit"),
        ),
        (
            "two",
            vec![join(disk.path(), "two.log"), join(shm.path(), "two.log")],
            None,
        ),
    ] {
        let run_dir = join(disk.path(), name);
        let mut args = vec!["io", "redo", "--sessions", "4", "--duration", "60s"];
        args.extend(["--log-size", "2MiB", "--out", name, "-q"]);
        args.extend(extra);
        for d in &dests {
            args.extend(["--dest", s(d)]);
        }
        let mut child = start_and_wait(disk.path(), &args, &run_dir);
        sigkill(&mut child);
        assert_eq!(manifest(&run_dir)["outcome"], "running");

        let acks = acknowledged_per_session(disk.path(), &run_dir);
        assert!(
            !acks.is_empty(),
            "{name}: commits were recorded before the kill"
        );
        let logs: Vec<&Path> = dests.iter().map(PathBuf::as_path).collect();
        let (code, v) = verify_json(disk.path(), &logs);
        // A write cut by the kill may be torn: it was never acknowledged, and verify must say so.
        for log in v["logs"].as_array().unwrap() {
            for p in log["problems"].as_array().unwrap() {
                assert!(
                    p["what"].as_str().unwrap().contains("torn write"),
                    "{name}: {v}"
                );
            }
        }
        assert!(code == 0 || code == 1, "{name}: {v}");
        assert_acknowledged_in_log(name, &acks, &v);
    }
}

/// Races `slow` against `fast` into the run `dir/race`: one committer, 300 commits, 80 ms delays
/// injected on 5% of the slow destination's writes, outliers over 50 ms.
fn race(dir: &Path, slow: &Path, fast: &Path, inject: &str) {
    ok(
        dir,
        &[
            "io",
            "redo",
            "--dest",
            &format!("slow={}", s(slow)),
            "--dest",
            &format!("fast={}", s(fast)),
            "--inject",
            inject,
            "--outlier",
            "50ms",
            "--sessions",
            "1",
            "--ops",
            "300",
            "--log-size",
            "2MiB",
            "--out",
            "race",
            "-q",
        ],
    );
}

#[test]
fn issue_13_prevented_outliers_are_the_losers_own_slow_writes() {
    // Both logs on tmpfs, so only the injected 80 ms delays can cross the 50 ms threshold: every
    // injected write is an outlier the race prevented, and no write that merely queued behind one
    // is (the old count took the time since the write was issued: 9 stalls gave 6,992).
    let shm = shm_tempdir();
    race(
        shm.path(),
        &join(shm.path(), "slow.log"),
        &join(shm.path(), "fast.log"),
        "slow:p=0.05:80ms",
    );
    let c = counters(&join(shm.path(), "race"));
    let d = c["destinations"].as_array().unwrap();
    let injected = d[0]["injected"].as_u64().unwrap();
    assert!(injected > 0, "{c}");
    assert_eq!(d[0]["outliers"].as_u64().unwrap(), injected, "{c}");
    assert_eq!(d[1]["outliers"], 0, "{c}");
    assert_eq!(c["prevented_outliers"].as_u64().unwrap(), injected, "{c}");
}

#[test]
fn race_with_a_slow_destination() {
    let disk = disk_tempdir();
    let shm = shm_tempdir();
    let slow = join(disk.path(), "slow.log");
    let fast = join(shm.path(), "fast.log");
    // Every write of the disk log is delayed 80 ms: at p = 0.05 a CI run's disk, busy with
    // compilers, coalesced the 300 commits into 5 writes, none drawn for a delay, and the
    // prevented-outlier check had nothing to see. Each delayed write the tmpfs log beat is one.
    race(disk.path(), &slow, &fast, "slow:80ms");
    let run_dir = join(disk.path(), "race");
    let c = counters(&run_dir);
    let d = c["destinations"].as_array().unwrap();
    let (slow_first, fast_first) = (
        d[0]["first"].as_u64().unwrap(),
        d[1]["first"].as_u64().unwrap(),
    );
    assert_eq!(c["races"], 300, "{c}");
    assert_eq!(slow_first + fast_first, 300, "{c}");
    // tmpfs wins most races; by how much depends on the CPU the writers get (on a loaded
    // machine a descheduled tmpfs writer loses races it would win: the test asked for twice as
    // many and failed under load, issue 26 part 7).
    assert!(
        fast_first > slow_first,
        "the fast destination should win most races: {c}"
    );
    assert!(d[0]["injected"].as_u64().unwrap() > 0, "{c}");
    assert!(
        c["prevented_outliers"].as_u64().unwrap() >= 1,
        "an injected 80 ms delay on the loser is a prevented outlier: {c}"
    );
    let r = report_json(disk.path(), &run_dir);
    assert_eq!(r["redo"]["prevented_outliers"], c["prevented_outliers"]);
    assert!(
        event(&r, "injected delay")["count"].as_u64().unwrap()
            == d[0]["injected"].as_u64().unwrap(),
        "every injected delay is recorded as an event"
    );
    let text = ok(disk.path(), &["report", "race"]);
    assert!(
        text.contains("FL_FAST_FIRST") && text.contains("FL_PREVENTED_OUTLIERS"),
        "{text}"
    );
    // Issue 34: the slower destination is said by what was measured, not "starved"; the
    // destinations parameter is printed whole, its sector sizes included.
    assert!(!text.contains("starved"), "{text}");
    let said = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        said.contains(&format!(
            "slower: slow (session 2) won {slow_first} of 300 races"
        )),
        "{text}"
    );
    assert!(
        said.contains(&format!("fast (session 3) won {fast_first} of 300 races")),
        "{text}"
    );
    assert!(said.contains(r#""sectors":{"logical":"#), "{text}");
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with("          ") && l.contains('…')),
        "{text}"
    );
    // Both logs hold every commit: the slower write completes before the run ends.
    let (code, v) = verify_json(disk.path(), &[&slow, &fast]);
    assert_eq!(code, 0, "{v}");
    for l in v["logs"].as_array().unwrap() {
        assert_eq!(l["last_commit"], 300, "{v}");
    }
}

/// The largest `log file sync` of a run, in ms.
fn sync_max_ms(dir: &Path, run: &Path) -> f64 {
    let r = report_json(dir, run);
    event(&r, "log file sync")["summary_us"]["max"]
        .as_f64()
        .unwrap()
        / 1e3
}

#[test]
fn issue_13_the_race_never_waits_longer_than_the_slower_destination_alone() {
    // The slower destination is the disk, the faster tmpfs: the log writer then goes at tmpfs
    // pace, and the disk gets far more (smaller) writes than it can do one by one. A 1 MiB log
    // switches every few ms. Before: each switch waited for the disk to finish the group
    // (310 ms commits against 101 ms on the disk alone with the same 100 ms stalls).
    let disk = disk_tempdir();
    let shm = shm_tempdir();
    let common = [
        "io",
        "redo",
        "--inject",
        "disk:p=0.005:100ms",
        "--sessions",
        "1",
        "--duration",
        "2s",
        "--log-size",
        "1MiB",
        "-q",
    ];
    let race_log = join(disk.path(), "race.log");
    let flash_log = join(shm.path(), "race.log");
    let single_log = join(disk.path(), "single.log");
    let race_dest = format!("disk={}", s(&race_log));
    let flash_dest = format!("flash={}", s(&flash_log));
    let single_dest = format!("disk={}", s(&single_log));
    let mut args = common.to_vec();
    args.extend(["--dest", &race_dest, "--dest", &flash_dest, "--out", "race"]);
    ok(disk.path(), &args);
    let mut args = common.to_vec();
    args.extend(["--dest", &single_dest, "--out", "single"]);
    ok(disk.path(), &args);

    let (race, single) = (join(disk.path(), "race"), join(disk.path(), "single"));
    let (rc, sc) = (counters(&race), counters(&single));
    assert!(
        rc["destinations"][0]["injected"].as_u64().unwrap() > 0,
        "{rc}"
    );
    assert!(
        sc["destinations"][0]["injected"].as_u64().unwrap() > 0,
        "{sc}"
    );
    assert!(rc["log_switches"].as_u64().unwrap() > 10, "{rc}");
    let (race_max, single_max) = (
        sync_max_ms(disk.path(), &race),
        sync_max_ms(disk.path(), &single),
    );
    assert!(
        single_max >= 100.0,
        "a commit on the disk alone waited for a stall: {single_max} ms"
    );
    // The bug made the commits of every log switch wait for the slow disk's whole group (many
    // waits of two to three stalls: 310 ms against 101). Two stalls in a row on the disk are a
    // legitimate rare wait (p = 0.005 per write, thousands of writes) and a loaded machine adds
    // its own delays, so the test counts the commits that waited more than one and a half
    // stalls, rather than comparing two maxima (issue 26 part 7: it failed under load with
    // 226 ms against 104 ms).
    let (race_long, single_long) = (
        syncs_longer_than(disk.path(), &race, 150.0),
        syncs_longer_than(disk.path(), &single, 150.0),
    );
    assert!(
        race_long <= single_long + 3,
        "log file sync over 150 ms: race {race_long}, the disk alone {single_long} (max {race_max:.1} \
         and {single_max:.1} ms); {rc}"
    );
    // Both logs hold every commit once the run has drained.
    let (code, v) = verify_json(disk.path(), &[&race_log, &flash_log]);
    assert_eq!(code, 0, "{v}");
    let logs = v["logs"].as_array().unwrap();
    assert_eq!(logs[0]["last_commit"], logs[1]["last_commit"], "{v}");
    assert_eq!(logs[0]["last_commit"], rc["commits"], "{v}");
}

#[test]
fn issue_13_a_race_stops_issuing_at_its_duration_and_drains() {
    // 300 ms stalls on the disk, tmpfs as the flash, a 16 MiB log: before, the disk fell a
    // whole log behind in small writes and a 2 s run took about 10 s (a 3 s one 23 s).
    let disk = disk_tempdir();
    let shm = shm_tempdir();
    let disk_log = join(disk.path(), "redo.log");
    let flash_log = join(shm.path(), "redo.log");
    let (d1, d2) = (
        format!("disk={}", s(&disk_log)),
        format!("flash={}", s(&flash_log)),
    );
    let started = std::time::Instant::now();
    let text = ok(
        disk.path(),
        &[
            "io",
            "redo",
            "--dest",
            &d1,
            "--dest",
            &d2,
            "--inject",
            "disk:p=0.002:300ms",
            "--sessions",
            "4",
            "--duration",
            "2s",
            "--log-size",
            "16MiB",
            "--out",
            "race",
        ],
    );
    let wall = started.elapsed().as_secs_f64();
    // The bound is the recorded stop and drain below; the wall clock also holds creating and
    // syncing two 16 MiB logs, which took 4 s more on a disk busy with compilers (6.1 s in
    // all). The old fault took 10 s; 8 s still catches it.
    assert!(wall < 8.0, "a 2 s run took {wall:.1} s");
    assert!(
        text.contains("stopped issuing at 2.00 s; drained ") && text.contains(" writes in "),
        "{text}"
    );
    let run_dir = join(disk.path(), "race");
    let c = counters(&run_dir);
    assert_eq!(c["stopped_issuing_s"], 2.0, "{c}");
    let drain = c["drain_s"].as_f64().unwrap();
    assert!((0.0..2.0).contains(&drain), "{c}");
    assert!(c["drained_writes"].as_u64().is_some(), "{c}");
    let r = report_json(disk.path(), &run_dir);
    assert_eq!(r["redo"]["stopped_issuing_s"], 2.0, "{r}");
    assert_eq!(r["redo"]["drained_writes"], c["drained_writes"], "{r}");
    // What was in flight was drained to both logs.
    let (code, v) = verify_json(disk.path(), &[&disk_log, &flash_log]);
    assert_eq!(code, 0, "{v}");
    for l in v["logs"].as_array().unwrap() {
        assert_eq!(l["last_commit"], c["commits"], "{v}");
    }
}

#[test]
fn issue_13_prevented_outliers_are_the_stalls_the_other_destination_covered() {
    // Both logs on tmpfs, so only the injected 100 ms stalls cross the 50 ms threshold. A stall
    // is covered when the log writer never waited for the stalled destination meanwhile (no
    // `log backlog wait` and no log switch longer than 1 ms overlaps it): the commits went on.
    // With a 4 MiB log some stalls outlast what the backlog may hold and some do not. Before,
    // every stall counted although switches waited for most of them (77 counted, 47 covered).
    let shm = shm_tempdir();
    let (slow, fast) = (join(shm.path(), "slow.log"), join(shm.path(), "fast.log"));
    let (d1, d2) = (format!("slow={}", s(&slow)), format!("fast={}", s(&fast)));
    ok(
        shm.path(),
        &[
            "io",
            "redo",
            "--dest",
            &d1,
            "--dest",
            &d2,
            "--inject",
            "slow:p=0.02:100ms",
            "--outlier",
            "50ms",
            "--sessions",
            "1",
            "--duration",
            "2s",
            "--log-size",
            "4MiB",
            "--out",
            "race",
            "-q",
        ],
    );
    let run_dir = join(shm.path(), "race");
    let c = counters(&run_dir);
    let injected = c["destinations"][0]["injected"].as_u64().unwrap();
    assert!(injected > 0, "{c}");
    assert_eq!(c["destinations"][0]["outliers"], injected, "{c}");

    let csv = join(shm.path(), "events.csv");
    ok(
        shm.path(),
        &[
            "export",
            s(&run_dir),
            "--format",
            "csv",
            "--output",
            s(&csv),
        ],
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let (cs, ce, cst, cd) = (
        col("session"),
        col("event"),
        col("start_ns"),
        col("duration_ns"),
    );
    // (session, event, start, end) in ns.
    let events: Vec<(u32, String, u64, u64)> = lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let start: u64 = f[cst].parse().unwrap();
            let dur: u64 = f[cd].parse().unwrap();
            let name = f[ce].trim_matches('"').to_string();
            (f[cs].parse().unwrap(), name, start, start + dur)
        })
        .collect();
    let slow_session = 2; // committer 0, the log writer 1, then the destinations in order
    let waits: Vec<(u64, u64)> = events
        .iter()
        .filter(|(_, n, s, e)| {
            n == "log backlog wait" || (n == "log file switch" && e - s > 1_000_000)
        })
        .map(|&(_, _, s, e)| (s, e))
        .collect();
    let stalled: Vec<(u64, u64)> = events
        .iter()
        .filter(|(sess, n, s, e)| {
            *sess == slow_session && n == "log file parallel write" && e - s > 50_000_000
        })
        .map(|&(_, _, s, e)| (s, e))
        .collect();
    assert_eq!(stalled.len() as u64, injected, "{c}");
    let covered = stalled
        .iter()
        .filter(|(s, e)| !waits.iter().any(|(ws, we)| ws < e && we > s))
        .count() as u64;
    assert!(covered > 0, "no stall was covered: {c}");
    assert_eq!(
        c["prevented_outliers"].as_u64().unwrap(),
        covered,
        "{} stalls, {covered} covered, {} waits: {c}",
        stalled.len(),
        waits.len()
    );
}

/// A fake sysfs in which the disk holding `dir` has 4096-byte logical and physical sectors.
fn fake_sysfs_4k(dir: &Path) -> PathBuf {
    fake_sysfs(dir, 4096, 4096)
}

/// A fake sysfs in which the disk holding `dir` has these logical and physical sector sizes.
fn fake_sysfs(dir: &Path, logical: u32, physical: u32) -> PathBuf {
    let dev = std::fs::metadata(dir).unwrap().dev();
    let (ma, mi) = (libc::major(dev), libc::minor(dev));
    assert_ne!(ma, 0, "CARGO_TARGET_TMPDIR is on a block device");
    let root = join(dir, "sys");
    let q = root.join(format!("dev/block/{ma}:{mi}/queue"));
    std::fs::create_dir_all(&q).unwrap();
    std::fs::write(q.join("logical_block_size"), format!("{logical}\n")).unwrap();
    std::fs::write(q.join("physical_block_size"), format!("{physical}\n")).unwrap();
    root
}

/// Issue 34: Oracle's rule, not the logical size alone: a 512e disk (512 logical, 4096
/// physical) takes a 4096-byte redo block without the override, a 512n disk refuses it, and the
/// refusal names both sizes.
#[test]
fn issue_34_a_512e_disk_takes_4096_byte_blocks_and_a_512n_disk_refuses_them() {
    let dir = disk_tempdir();
    let log = join(dir.path(), "redo.log");
    let args = |sys: &Path, out: &str| -> Vec<String> {
        [
            "io",
            "redo",
            "--dest",
            s(&log),
            "--sysfs-root",
            s(sys),
            "--ops",
            "20",
            "--log-size",
            "2MiB",
            "--block-size",
            "4096",
            "--out",
            out,
            "-q",
        ]
        .map(String::from)
        .to_vec()
    };
    let e512 = fake_sysfs(dir.path(), 512, 4096);
    let a = args(&e512, "e512");
    let out = run(
        dir.path(),
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("ORA-01378"), "{stderr}");
    let d = &manifest(&join(dir.path(), "e512"))["workload"]["params"]["destinations"][0];
    assert_eq!(d["sectors"]["physical"], 4096, "{d}");
    assert_eq!(d["warnings"], serde_json::json!([]), "{d}");

    std::fs::remove_dir_all(&e512).unwrap();
    let n512 = fake_sysfs(dir.path(), 512, 512);
    let a = args(&n512, "n512");
    fails(
        dir.path(),
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
        2,
        &[
            "redo block size (4096)",
            "(logical 512, physical 512)",
            "ORA-01378",
            "--block-size 512",
        ],
    );
}

#[test]
fn sector_size_check_refuses_and_the_override_proceeds() {
    let dir = disk_tempdir();
    let sys = fake_sysfs_4k(dir.path());
    let log = join(dir.path(), "redo.log");
    let base = [
        "io",
        "redo",
        "--dest",
        s(&log),
        "--sysfs-root",
        s(&sys),
        "--ops",
        "20",
        "--log-size",
        "2MiB",
    ];
    let mut refused = base.to_vec();
    refused.extend(["--block-size", "512", "--out", "refused"]);
    fails(
        dir.path(),
        &refused,
        2,
        &[
            s(&log),
            "512",
            "4096",
            "ORA-01378",
            "--sector-size-override",
        ],
    );
    assert!(
        !join(dir.path(), "refused").exists(),
        "a refusal records nothing"
    );

    let mut over = base.to_vec();
    over.extend([
        "--block-size",
        "512",
        "--sector-size-override",
        "--out",
        "over",
        "-q",
    ]);
    let out = run(dir.path(), &over);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("dbscope: warning:") && stderr.contains("--sector-size-override"),
        "{stderr}"
    );
    let m = manifest(&join(dir.path(), "over"));
    let d = &m["workload"]["params"]["destinations"][0];
    assert_eq!(d["sectors"]["logical"], 4096, "{d}");
    assert_eq!(d["sectors"]["physical"], 4096, "{d}");

    // O_DIRECT with a misaligned block size is refused even with the override.
    let mut direct = base.to_vec();
    direct.extend([
        "--block-size",
        "1024",
        "--sync",
        "direct-dsync",
        "--sector-size-override",
        "--out",
        "d",
    ]);
    fails(dir.path(), &direct, 2, &["direct-dsync", "1024", "4096"]);

    // 4096 suits the device.
    let mut fine = base.to_vec();
    fine.extend(["--block-size", "4096", "--out", "fine", "-q"]);
    let out = run(dir.path(), &fine);
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn verify_reports_damage_with_its_offset() {
    let dir = disk_tempdir();
    let log = join(dir.path(), "redo.log");
    ok(
        dir.path(),
        &[
            "io",
            "redo",
            "--dest",
            s(&log),
            "--ops",
            "50",
            "--log-size",
            "2MiB",
            "-o",
            "r",
            "-q",
        ],
    );
    let text = ok(dir.path(), &["io", "redo", "verify", s(&log)]);
    assert!(
        text.contains("last durable commit: 50") && text.contains("OK"),
        "{text}"
    );
    // Flip one byte in the third redo block (byte 512 * 3 + 100).
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[512 * 3 + 100] ^= 0x40;
    std::fs::write(&log, &bytes).unwrap();
    let out = run(dir.path(), &["io", "redo", "verify", s(&log)]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("PROBLEM at byte 1536: damaged block: checksum mismatch"),
        "{text}"
    );
}

#[test]
fn bad_input_is_refused_clearly() {
    let dir = disk_tempdir();
    let d = dir.path();
    let log = join(d, "redo.log");
    let log_s = s(&log);
    fails(
        d,
        &["io", "redo", "--dest", "/no/such/dir/redo.log"],
        2,
        &["/no/such/dir", "does not exist"],
    );
    fails(d, &["io", "redo"], 2, &["--dest"]);
    fails(
        d,
        &["io", "redo", "--dest", log_s, "--block-size", "3000"],
        2,
        &["--block-size 3000", "512, 1024 or 4096"],
    );
    fails(
        d,
        &["io", "redo", "--dest", log_s, "--groups", "1"],
        2,
        &["--groups 1", "at least 2"],
    );
    fails(
        d,
        &[
            "io",
            "redo",
            "--dest",
            log_s,
            "--inject",
            "dest1:p=often:1ms",
        ],
        2,
        &["--inject", "probability"],
    );
    fails(
        d,
        &["io", "redo", "--dest", log_s, "--inject", "nope:1ms"],
        2,
        &["no destination \"nope\""],
    );
    let ro = join(d, "ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::write(join(&ro, "redo.log"), b"").unwrap();
    let mut perm = std::fs::metadata(join(&ro, "redo.log"))
        .unwrap()
        .permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o444);
    std::fs::set_permissions(join(&ro, "redo.log"), perm).unwrap();
    if unsafe_euid() != 0 {
        fails(
            d,
            &["io", "redo", "--dest", s(&join(&ro, "redo.log"))],
            2,
            &["cannot open for writing"],
        );
    }
    // Not writable even for root: refused before anything is recorded.
    fails(
        d,
        &["io", "redo", "--dest", "/proc/version", "-o", "proc"],
        2,
        &["--dest /proc/version"],
    );
    assert!(!join(d, "proc").exists());
    fails(d, &["io", "redo", "--dest", s(d)], 2, &["is a directory"]);
    let notes = join(d, "notes.txt");
    std::fs::write(&notes, "not a log\n").unwrap();
    fails(
        d,
        &["io", "redo", "verify", s(&notes)],
        3,
        &["notes.txt", "not a dbscope redo log"],
    );
    // A mistyped --dest must not overwrite someone's file.
    fails(
        d,
        &[
            "io",
            "redo",
            "--dest",
            s(&notes),
            "--ops",
            "1",
            "-o",
            "notes",
        ],
        2,
        &["notes.txt", "not a dbscope redo log", "remove the file"],
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "not a log\n");
    assert!(!join(d, "notes").exists());
    fails(
        d,
        &["io", "redo", "verify", s(&join(d, "missing.log"))],
        3,
        &["missing.log"],
    );
}

#[allow(unsafe_code)]
fn unsafe_euid() -> u32 {
    // SAFETY: geteuid(2) has no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

#[test]
fn a_full_device_stops_cleanly_and_keeps_the_run() {
    let dir = disk_tempdir();
    let out = run(
        dir.path(),
        &[
            "io",
            "redo",
            "--dest",
            "/dev/full",
            "--ops",
            "10",
            "--log-size",
            "1MiB",
            "-o",
            "full",
            "-q",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("/dev/full") && stderr.contains("full"),
        "{stderr}"
    );
    let run_dir = join(dir.path(), "full");
    let m = manifest(&run_dir);
    assert_eq!(m["outcome"], "failed");
    assert!(
        m["outcome_detail"]
            .as_str()
            .unwrap()
            .contains("No space left"),
        "{m}"
    );
    let text = ok(dir.path(), &["report", "full"]);
    assert!(text.starts_with("FAILED:"), "{text}");
}

/// A small tmpfs mounted on a temp dir for one test (needs root), unmounted when dropped: a real
/// file system that fills up.
struct SmallFs(tempfile::TempDir);

impl SmallFs {
    /// Mounts a tmpfs of `size` (e.g. `2m`); when that is impossible, prints why the test is
    /// skipped and returns None.
    fn mount_or_skip(size: &str) -> Option<SmallFs> {
        match SmallFs::mount(size) {
            Ok(fs) => Some(fs),
            Err(why) => {
                eprintln!("note: skipped, {why}");
                None
            }
        }
    }

    /// Mounts a tmpfs of `size` (e.g. `2m`), or says why it cannot.
    fn mount(size: &str) -> Result<SmallFs, String> {
        let dir = disk_tempdir();
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mount -t tmpfs failed (not root?): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(SmallFs(dir))
    }

    fn path(&self) -> &Path {
        self.0.path()
    }

    /// Writes a file until the file system is full.
    fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(join(self.path(), "filler")).unwrap();
        let chunk = vec![1u8; 64 << 10];
        while f.write_all(&chunk).is_ok() {}
        // The last pages may be in a partial chunk: fill them byte-wise.
        while f.write_all(&[1u8; 512]).is_ok() {}
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let ok = std::process::Command::new("umount")
            .arg(self.0.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(self.0.path())
                .status();
        }
    }
}

/// Every commit the run recorded as acknowledged, per session, is in one of the verified logs
/// (`v` is `io redo verify --json` output; with two destinations the further one counts).
fn assert_acknowledged_in_log(name: &str, acks: &BTreeMap<u32, u64>, v: &Value) {
    for (session, n) in acks {
        let in_log = v["logs"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|l| l["session_last"][session.to_string()].as_u64())
            .max()
            .unwrap_or(0);
        assert!(
            in_log >= *n,
            "{name}: session {session} had {n} commits acknowledged, the log holds {in_log}"
        );
    }
}

/// Waits for a child to exit (at most `secs`), returning its status and stderr.
fn wait_exit(mut child: std::process::Child, secs: u64) -> (i32, String) {
    use std::io::Read;
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > std::time::Duration::from_secs(secs) {
            let _ = child.kill();
            panic!("dbscope did not stop within {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut err).unwrap();
    }
    (status.code().unwrap_or(-1), err)
}

/// Checks a run stopped by a full file system: failed with `needles` in its detail, readable by
/// `report` without a torn block, the counters final, the space reserve gone.
fn assert_kept_as_failed(dir: &Path, run_dir: &Path, needles: &[&str]) -> Value {
    let m = manifest(run_dir);
    assert_eq!(m["outcome"], "failed", "{m}");
    let detail = m["outcome_detail"].as_str().unwrap();
    for n in needles {
        assert!(detail.contains(n), "{n:?} in {detail:?}");
    }
    let text = ok(dir, &["report", s(run_dir)]);
    assert!(text.starts_with("FAILED:"), "{text}");
    assert!(!text.contains("torn block"), "{text}");
    assert_eq!(counters(run_dir)["final_counts"], true);
    assert!(!join(run_dir, "space.reserve").exists());
    report_json(dir, run_dir)
}

#[test]
fn a_full_run_directory_stops_cleanly_and_keeps_the_run() {
    let Some(fs) = SmallFs::mount_or_skip("1m") else {
        return;
    };
    let disk = disk_tempdir();
    let shm = shm_tempdir();
    let log = join(shm.path(), "redo.log");
    // The log is elsewhere; the run directory is on the 1 MiB file system, which the events
    // (packed, 5–10 bytes each; hundreds of thousands a second on tmpfs) fill within the run
    // after the 256 KiB space reserve. The log must not wrap: a circular log keeps only its last
    // lap, and a session that stopped a lap before the other (a loaded CI machine deschedules
    // one) would have no record left in it. 768 KiB of events is at most ~160,000 commits at 5
    // bytes each; one 512-byte block each fills 80 MiB of the 128.
    let run_dir = join(fs.path(), "run");
    let out = run(
        disk.path(),
        &[
            "io",
            "redo",
            "--dest",
            s(&log),
            "--sessions",
            "2",
            "--no-group-commit",
            "--record-bytes",
            "200..400",
            "--duration",
            "60s",
            "--log-size",
            "128MiB",
            "--out",
            s(&run_dir),
            "-q",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("run directory is full") && stderr.contains("events.dsev"),
        "{stderr}"
    );
    let r = assert_kept_as_failed(
        disk.path(),
        &run_dir,
        &["No space left", "run directory is full"],
    );
    let m = manifest(&run_dir);
    let kept = m["events_written"].as_u64().unwrap();
    assert!(kept > 10_000, "events before the disk filled are kept: {m}");
    assert_eq!(
        r["read"]["events"], kept,
        "the report reads every event kept: {r}"
    );
    assert_eq!(r["read"]["ignored_bytes"], 0, "{r}");
    // Every commit the run recorded as acknowledged is in the log.
    let acks = acknowledged_per_session(disk.path(), &run_dir);
    let (code, v) = verify_json(disk.path(), &[&log]);
    assert_eq!(code, 0, "{v}");
    assert!(
        v["logs"][0]["first_commit"].as_u64().unwrap() <= 1,
        "the log wrapped, so it no longer holds every commit: {v}"
    );
    assert_acknowledged_in_log("full run directory", &acks, &v);
}

#[test]
fn a_log_larger_than_its_file_system_is_refused_before_the_clock_starts() {
    let Some(fs) = SmallFs::mount_or_skip("2m") else {
        return;
    };
    // Log and run directory on the same full file system: the half-written log is given back,
    // so the run can still record why it failed.
    let log = join(fs.path(), "redo.log");
    let run_dir = join(fs.path(), "run");
    let out = run(
        fs.path(),
        &[
            "io",
            "redo",
            "--dest",
            s(&log),
            "--ops",
            "10",
            "--log-size",
            "4MiB",
            "--out",
            s(&run_dir),
            "-q",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot preallocate the log"), "{stderr}");
    assert_kept_as_failed(
        fs.path(),
        &run_dir,
        &[s(&log), "No space left", "file system is full"],
    );
    assert_eq!(
        std::fs::metadata(&log).unwrap().len(),
        0,
        "space given back"
    );
    assert_eq!(counters(&run_dir)["commits"], 0);
}

#[test]
fn a_log_out_of_space_mid_run_stops_cleanly() {
    let Some(fs) = SmallFs::mount_or_skip("4m") else {
        return;
    };
    let disk = disk_tempdir();
    let log = join(fs.path(), "redo.log");
    let run_dir = join(disk.path(), "run");
    let child = start_and_wait(
        disk.path(),
        &[
            "io",
            "redo",
            "--dest",
            s(&log),
            "--sessions",
            "2",
            "--rate",
            "200",
            "--duration",
            "120s",
            "--log-size",
            "1MiB",
            "--out",
            "run",
            "-q",
        ],
        &run_dir,
    );
    // The log was preallocated with written zeros, so overwriting it needs no new space on
    // ext4, xfs or tmpfs. A copy-on-write file system (btrfs) or a thin device does need space
    // for every write; make it so here: give the log's blocks back (a hole after the header)
    // and let another file take all the space.
    let st = std::process::Command::new("fallocate")
        .args(["--punch-hole", "--offset", "4096", "--length", "1048576"])
        .arg(&log)
        .status();
    if !st.is_ok_and(|s| s.success()) {
        let mut child = child;
        sigkill(&mut child);
        eprintln!("note: skipped, fallocate --punch-hole is not available");
        return;
    }
    fs.fill();
    let (code, stderr) = wait_exit(child, 60);
    assert_eq!(code, 1, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains(s(&log)) && stderr.contains("No space left"),
        "{stderr}"
    );
    let r = assert_kept_as_failed(
        disk.path(),
        &run_dir,
        &[s(&log), "redo write failed", "file system is full"],
    );
    let w = event(&r, "log file parallel write");
    assert!(w["errors"].as_u64().unwrap() >= 1, "{w}");
    assert!(event(&r, "log file sync")["count"].as_u64().unwrap() > 0);
}

#[test]
fn compare_reads_redo_runs_unchanged() {
    let dir = disk_tempdir();
    let log = join(dir.path(), "redo.log");
    for (bs, out) in [("512", "b512"), ("4096", "b4096")] {
        ok(
            dir.path(),
            &[
                "io",
                "redo",
                "--dest",
                s(&log),
                "--sessions",
                "2",
                "--ops",
                "100",
                "--block-size",
                bs,
                "--log-size",
                "2MiB",
                // One of the two sizes differs from the disk's logical sector (issue 13).
                "--sector-size-override",
                "-o",
                out,
                "-q",
            ],
        );
    }
    let text = ok(dir.path(), &["compare", "b512", "b4096"]);
    for needle in ["log file sync", "log file parallel write", "block_size"] {
        assert!(text.contains(needle), "{needle:?} in: {text}");
    }
    // Issue 34: both sides' block sizes, and the per-destination table side by side.
    for needle in [
        "\nA: redo log writer: 512-byte blocks",
        "\nB: redo log writer: 4096-byte blocks",
        "   per destination (log file parallel write)\n",
        " blocks/write ",
        " MB/s ",
    ] {
        assert!(text.contains(needle), "{needle:?} in: {text}");
    }
}

/// A loop device with 4096-byte sectors over a file, detached when dropped.
struct LoopDevice(String);

impl LoopDevice {
    fn attach(backing: &Path) -> Option<LoopDevice> {
        let out = std::process::Command::new("losetup")
            .args(["--find", "--show", "--sector-size", "4096", s(backing)])
            .output()
            .ok()?;
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && dev.starts_with("/dev/")).then_some(LoopDevice(dev))
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = std::process::Command::new("losetup")
            .args(["-d", &self.0])
            .status();
    }
}

#[test]
fn a_4096_byte_sector_loop_device_is_read_by_ioctl() {
    let dir = disk_tempdir();
    let img = join(dir.path(), "loop.img");
    std::fs::write(&img, vec![0u8; 8 << 20]).unwrap();
    let Some(dev) = LoopDevice::attach(&img) else {
        // Needs root and loop devices; the fake-sysfs test above covers the check itself.
        eprintln!("note: no loop device available (not root?); ioctl path not exercised");
        return;
    };
    fails(
        dir.path(),
        &[
            "io",
            "redo",
            "--dest",
            &dev.0,
            "--block-size",
            "512",
            "--ops",
            "5",
            "--log-size",
            "2MiB",
        ],
        2,
        &[&dev.0, "512", "4096", "--sector-size-override"],
    );
    ok(
        dir.path(),
        &[
            "io",
            "redo",
            "--dest",
            &dev.0,
            "--block-size",
            "4096",
            "--sync",
            "direct-dsync",
            "--sessions",
            "2",
            "--ops",
            "50",
            "--log-size",
            "2MiB",
            "-o",
            "loop",
            "-q",
        ],
    );
    let m = manifest(&join(dir.path(), "loop"));
    let sectors = &m["workload"]["params"]["destinations"][0]["sectors"];
    assert_eq!(sectors["logical"], 4096, "{sectors}");
    assert!(
        sectors["source"].as_str().unwrap().contains("BLKSSZGET"),
        "{sectors}"
    );
    let (code, v) = verify_json(dir.path(), &[Path::new(&dev.0)]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["last_durable_commit"], 100);
}

/// The `/proc/diskstats` name of the block device holding `path`, found through the kernel's
/// `uevent` of its `major:minor` (not the canonicalised `/sys/dev/block` link dbscope follows).
fn device_name(path: &Path) -> String {
    let dev = std::fs::metadata(path).unwrap().dev();
    let (major, minor) = (
        ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff),
        (dev & 0xff) | ((dev >> 12) & !0xff),
    );
    let uevent = std::fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/uevent")).unwrap();
    uevent
        .lines()
        .find_map(|l| l.strip_prefix("DEVNAME="))
        .expect("DEVNAME in uevent")
        .to_string()
}

/// Issue 34 item 10: an `io redo` run records iostat (`/proc/diskstats`) for the device holding
/// each destination, from the clock's start to the run's end: `report` (text, JSON, HTML) shows
/// the destination's device in its "Database and OS" section with at least the bytes the run
/// wrote there; a destination on tmpfs, which has no block device, is named as not sampled, why.
#[test]
fn issue_34_io_redo_records_iostat_for_the_devices_of_its_destinations() {
    let dir = disk_tempdir();
    let shm = shm_tempdir();
    let disk_log = join(dir.path(), "redo.log");
    let shm_log = join(shm.path(), "redo.log");
    let dest_disk = format!("disk={}", s(&disk_log));
    let dest_shm = format!("shm={}", s(&shm_log));
    let out = ok(
        dir.path(),
        &[
            "io",
            "redo",
            "--dest",
            &dest_disk,
            "--dest",
            &dest_shm,
            "--ops",
            "300",
            "--log-size",
            "2MiB",
            "--out",
            "r",
        ],
    );
    assert!(out.contains("Database and OS"), "{out}");
    let run_dir = join(dir.path(), "r");
    let snaps = std::fs::read_to_string(run_dir.join("snapshots.jsonl")).expect("snapshots.jsonl");
    let labels: Vec<String> = snaps
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["label"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(labels, ["start", "end"]);

    let report = report_json(dir.path(), &run_dir);
    let obs = &report["observe"];
    let disks = obs["disks"].as_array().expect("observe.disks");
    assert_eq!(
        disks.len(),
        1,
        "only the disk destination has a device: {obs}"
    );
    assert_eq!(disks[0]["role"], "redo");
    assert_eq!(disks[0]["device"], device_name(&disk_log).as_str());
    // What the device wrote in the run covers what the run wrote to its destination (every
    // write is O_DSYNC, so it reached the device; others may have written there too).
    let written = counters(&run_dir)["bytes"].as_f64().unwrap();
    let span = obs["span_s"].as_f64().unwrap();
    let device_kb = disks[0]["wkb_per_s"].as_f64().unwrap() * span;
    assert!(
        device_kb * 1024.0 >= written * 0.99,
        "the device wrote {device_kb} kB, the run {written} bytes"
    );
    let why = obs["missing"]["os.disk.redo.1"]
        .as_str()
        .expect("the tmpfs destination is missing");
    assert!(
        why.contains(s(&shm_log)) && why.contains("without a block device"),
        "{why}"
    );

    let text = ok(dir.path(), &["report", "r"]);
    assert!(text.contains("Database and OS (redo-log"), "{text}");
    assert!(text.contains("without a block device"), "{text}");
    let html = join(dir.path(), "r.html");
    ok(dir.path(), &["report", "r", "--html", s(&html)]);
    let html = std::fs::read_to_string(html).unwrap();
    let device = device_name(&disk_log);
    assert!(
        html.contains("Database and OS (redo-log)") && html.contains(&format!(">{device}<")),
        "no iostat of {device} in the HTML"
    );
}
