//! The reader and the profile against the fixtures: exact totals per event, per statement and R, as
//! computed independently by `tests/fixtures/oracle-10046/totals.awk` into `expected/*.tsv`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dbscope_trace::profile::{profile_files, Profile, ProfileOptions};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oracle-10046")
}

/// (events name → (count, total), statements key → (calls, e), R)
type Totals = (
    BTreeMap<String, (u64, i64)>,
    BTreeMap<String, (u64, u64)>,
    i64,
);

fn expected(stem: &str) -> Totals {
    let path = dir().join("expected").join(format!("{stem}.tsv"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (mut ev, mut st, mut r) = (BTreeMap::new(), BTreeMap::new(), None);
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        match f[0] {
            "event" => {
                ev.insert(
                    f[1].to_string(),
                    (f[2].parse().unwrap(), f[3].parse().unwrap()),
                );
            }
            "stmt" => {
                st.insert(
                    f[1].to_string(),
                    (f[2].parse().unwrap(), f[3].parse().unwrap()),
                );
            }
            "R" => r = Some(f[1].parse().unwrap()),
            other => panic!("{}: unknown line kind {other}", path.display()),
        }
    }
    (ev, st, r.expect("an R line"))
}

fn actual(p: &Profile) -> Totals {
    let ev = p
        .events
        .iter()
        .filter(|e| e.kind == "wait")
        .map(|e| (e.name.clone(), (e.calls, e.total_us)))
        .collect();
    let st = p
        .statements
        .iter()
        .map(|s| {
            let key = if !s.sqlid.is_empty() {
                s.sqlid.clone()
            } else if let Some(hv) = s.hv {
                format!("hv {hv}")
            } else {
                "-".to_string()
            };
            (key, (s.calls, s.e_us))
        })
        .collect();
    (ev, st, p.r_us)
}

fn check(stem: &str) -> Profile {
    let path = dir().join(format!("{stem}.trc"));
    let p = profile_files(&[path.as_path()], &ProfileOptions::default()).expect("reads");
    let (ev, st, r) = actual(&p);
    let (xev, xst, xr) = expected(stem);
    assert_eq!(ev, xev, "{stem}: per-event totals");
    assert_eq!(st, xst, "{stem}: per-statement totals");
    assert_eq!(r, xr, "{stem}: R");
    // The event rows (CPU, waits, unaccounted-for) add up to R exactly.
    assert_eq!(p.rows_total_us, p.r_us, "{stem}: rows add up to R");
    p
}

#[test]
fn two_statements_one_cursor() {
    let p = check("priitp2__trctools__two_statements_one_cursor");
    assert_eq!(p.sessions, 1);
    assert_eq!(p.files[0].version.as_deref(), Some("19.14.2.0.0"));
    // The cursor number is reused for three statements: three distinct rows.
    assert_eq!(p.statements.len(), 3);
    // STAT lines give each statement its plan (ids 1..5 for the first, one line for the second).
    let plan = |id: &str| {
        p.statements
            .iter()
            .find(|s| s.sqlid == id)
            .map(|s| s.plan.clone())
            .unwrap()
    };
    let first = plan("cdgn9f8spbxnt");
    assert_eq!(
        first.iter().map(|l| l.id).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    assert_eq!((first[4].pid, first[4].obj), (4, 174336));
    assert!(first[0].op.starts_with("NESTED LOOPS"));
    assert_eq!(plan("atxg62s17nkj4").len(), 1);
    assert_eq!(plan("atxg62s17nkj4")[0].cnt, 14);
}

#[test]
fn error_trace() {
    let p = check("priitp2__trctools__error");
    assert_eq!(p.errors.get("ORA-27403"), Some(&2));
}

#[test]
fn parse_error_trace() {
    let p = check("priitp2__trctools__parse_error");
    assert_eq!(p.errors.get("PARSE ERROR ORA-10980"), Some(&1));
}

#[test]
fn lobs() {
    check("priitp2__trctools__lobs");
}

#[test]
fn broken_trace_warns_with_file_and_line() {
    let p = check("priitp2__trctools__broken_trace");
    assert!(p.warning_count >= 3, "{:?}", p.warnings);
    assert!(p
        .warnings
        .iter()
        .any(|w| w.line == 43 && w.file.ends_with("broken_trace.trc")));
    let path = dir().join("priitp2__trctools__broken_trace.trc");
    let strict = ProfileOptions {
        strict: true,
        ..ProfileOptions::default()
    };
    let err = profile_files(&[path.as_path()], &strict).unwrap_err();
    assert!(err.to_string().contains("broken_trace.trc:43"), "{err}");
}

#[test]
fn stray_close() {
    check("priitp2__trctools__stray_close");
}

#[test]
fn binds_recursive_and_continued() {
    let p = check("jkstill__ora-binds__js122a1_ora_9039_GEN-BINDS");
    assert_eq!(p.files[0].version.as_deref(), Some("12.2.0.1.0"));
}

#[test]
fn old_style_timestamps_many_binds() {
    check("jkstill__oracle-demos__js12c1_ora_21644");
}

#[test]
fn rac_waits_and_recursive_sql() {
    let p = check("skeydan__sql_trace_parser__CDB11_ora_27190");
    // Recursive SQL shows up below its parent in the call tree.
    assert!(p.tree.iter().any(|n| !n.children.is_empty()));
}

#[test]
fn eleven_g_with_memory_dumps() {
    let p = check("jkstill__sqlnet__oravm1_ora_28949_poirot");
    assert_eq!(p.warning_count, 0, "{:?}", p.warnings);
}

fn check_handmade(stem: &str) -> Profile {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/handmade");
    let p = profile_files(
        &[base.join(format!("{stem}.trc")).as_path()],
        &ProfileOptions::default(),
    )
    .expect("reads");
    let text = std::fs::read_to_string(base.join(format!("{stem}.tsv"))).expect("tsv");
    let (mut xev, mut xst, mut xr) = (BTreeMap::new(), BTreeMap::new(), 0);
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        match f[0] {
            "event" => {
                xev.insert(
                    f[1].to_string(),
                    (f[2].parse().unwrap(), f[3].parse().unwrap()),
                );
            }
            "stmt" => {
                xst.insert(
                    f[1].to_string(),
                    (f[2].parse().unwrap(), f[3].parse().unwrap()),
                );
            }
            _ => xr = f[1].parse().unwrap(),
        }
    }
    let (ev, st, r) = actual(&p);
    assert_eq!(ev, xev, "{stem}: per-event totals");
    assert_eq!(st, xst, "{stem}: per-statement totals");
    assert_eq!(r, xr, "{stem}: R");
    assert_eq!(p.rows_total_us, p.r_us, "{stem}: rows add up to R");
    p
}

#[test]
fn multi_session_file_keeps_sessions_apart() {
    let p = check_handmade("multi_session_trcsess");
    assert_eq!(p.sessions, 2);
    // Wall clock from the ISO-8601 anchor (-07:00): the slowest wait is the 291,780 µs log file sync,
    // ending 398,400 µs after tim=1000000000 ≈ 18:58:52 local (01:58:52Z).
    let top = &p.top_waits[0];
    assert_eq!((top.name.as_str(), top.ela_us), ("log file sync", 291_780));
    assert!(
        top.at.ends_with("multi_session_trcsess.trc:64"),
        "{}",
        top.at
    );
    // The recursive cursor sits below the statement that ran it.
    let parent = p
        .tree
        .iter()
        .find(|n| n.statement.starts_with("bbbbbbbbbbbb2"))
        .expect("root");
    assert_eq!(parent.children.len(), 1);
    assert!(parent.children[0].statement.starts_with("ccccccccccc3c"));
    assert_eq!(parent.children[0].e_us, 420);
}

#[test]
fn oracle10g_without_wait_tim() {
    let p = check_handmade("oracle10g_no_wait_tim");
    assert_eq!(p.files[0].version.as_deref(), Some("10.2.0.4.0"));
    assert_eq!(p.sessions, 1);
    // The FETCH's own unaccounted-for time is negative: 1700 − 1000 − 1603.
    let ua = p.events.iter().find(|e| e.kind == "unaccounted").unwrap();
    assert_eq!(ua.min_us, -903);
}

#[test]
fn oracle8i_centiseconds_are_converted() {
    let p = check_handmade("oracle8i_centiseconds");
    assert_eq!(p.files[0].unit, dbscope_trace::model::Unit::Centiseconds);
    assert_eq!(p.files[0].version.as_deref(), Some("8.1.7.4.0"));
}

/// Issue 13: a trace that starts in the middle of a FETCH (its `e` reaches back 2 s before the
/// first timestamp), with a recursive EXEC that also began before it. R is the wall span of the
/// session's window, and the profile says what was clipped. Issue 34 item 3: the session's first
/// line is a WAIT, so the window opens where that wait began and the wait counts whole (it
/// counted 0). Worked by hand in `handmade/README.md`; R and the wait totals agree with totals.awk.
#[test]
fn trace_started_mid_call_is_clipped_to_its_window() {
    let p = check_handmade("trace_started_mid_call");
    // The window: from the first wait's start, tim=10000000 − 3000, to the last tim=10112025.
    assert_eq!(p.wall_span_us, 115_025);
    assert_eq!(p.r_us, 115_025);
    assert_eq!(p.unaccounted_between_calls_us, 0);
    // The FETCH's 1.997 s before the window (its recursive EXEC's 1.497 s are inside those,
    // not on top of them).
    assert_eq!(p.clipped_us, 1_997_000);
    assert_eq!((p.clipped_calls, p.clipped_waits), (1, 0));
    let row = |name: &str| {
        let r = p.events.iter().find(|e| e.name == name).unwrap();
        (r.calls, r.total_us)
    };
    // The CPU of each call scaled by the share of its own non-wait time inside the window:
    // EXEC 1,000,000 × 3,000 / 1,500,000; FETCH (200,000 own) × 6,000 / 506,000, rounded.
    assert_eq!(row("CPU: EXEC calls"), (1, 2_000));
    assert_eq!(row("CPU: FETCH calls"), (2, 2_372));
    // EXEC 3,000 − 2,000; FETCH 6,000 − 2,372; second FETCH 20 − 0.
    assert_eq!(
        row("unaccounted-for within db calls"),
        (3, 1_000 + 3_628 + 20)
    );
    assert_eq!(p.unaccounted_in_calls_us, 4_648);
    assert_eq!(row("db file sequential read"), (1, 3_000));
    assert_eq!(row("db file scattered read"), (1, 2_000));
    // Statements keep e as the trace wrote it.
    assert_eq!(p.statements[0].e_us, 1_505_000 + 2_012_000 + 20);
    let text = dbscope_trace::profile::render_text(&p, 20);
    assert!(
        text.contains(
            "clipped: 1.997000 s of calls and waits that began before the trace's first \
             timestamp (1 call, 0 waits), left out of R"
        ),
        "{text}"
    );
}

/// Issue 34 item 3: each session's first line is a `log file sync` of known `ela`; each counts
/// whole in its row (it counted 0: the window opened at its end), and each session's window opens
/// where it began. The totals agree with totals.awk (`first_wait_per_session.tsv`).
#[test]
fn issue_34_a_sessions_first_wait_counts_whole() {
    let p = check_handmade("first_wait_per_session");
    assert_eq!(p.sessions, 2);
    let lfs = p.events.iter().find(|e| e.name == "log file sync").unwrap();
    assert_eq!((lfs.calls, lfs.total_us), (4, 1_043 + 2_210 + 877 + 1_500));
    // Session 1 from 5793959274831 − 1043 to 5793959277820, session 2 from 81234000 − 877 to
    // 81241100.
    assert_eq!(p.wall_span_us, (2_989 + 1_043) + (7_100 + 877));
    assert_eq!(p.r_us + p.unaccounted_between_calls_us, p.wall_span_us);
    assert_eq!((p.clipped_us, p.clipped_calls, p.clipped_waits), (0, 0, 0));
}

/// Issue 27 item 12: input with no recognised 10046 line — blank lines, random bytes, a binary —
/// is unrecognised (the binary refuses it), whatever the chunk size; a file whose only content is
/// one record among such lines is still a trace.
#[test]
fn garbage_is_not_recognised_as_a_trace() {
    use dbscope_trace::profile::profile_bytes;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let random: Vec<u8> = (0..200_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    let blank = b"\n\n   \n\t\n\r\n\n".repeat(1000);
    let separators = b"=====================\n\n".repeat(10);
    let cases: [(&str, &[u8]); 4] = [
        ("blank lines", &blank),
        ("random bytes", &random),
        ("a binary", &exe[..exe.len().min(1 << 20)]),
        ("separators", &separators),
    ];
    for (what, data) in cases {
        for chunk_bytes in [64, 4096, 1 << 20] {
            let opts = ProfileOptions {
                chunk_bytes,
                ..ProfileOptions::default()
            };
            let p = profile_bytes("x.trc", data, &opts).expect("garbage reads without error");
            let why = p.files[0].unrecognised_reason();
            assert!(
                why.as_deref()
                    .is_some_and(|w| w.contains("no Oracle 10046 trace content")),
                "{what} (chunks of {chunk_bytes}): {:?}",
                p.files[0]
            );
        }
    }
    let one = [
        &blank[..],
        b"WAIT #0: nam='SQL*Net message to client' ela= 2 tim=100\n",
    ]
    .concat();
    let p = profile_bytes("x.trc", &one, &ProfileOptions::default()).unwrap();
    assert!(p.files[0].recognised(), "one record is a trace");
}
