//! Property tests: a trace generated from known calls and waits reads back with the same totals, and
//! no input — fragments of real lines spliced at random, or random bytes — makes the reader panic.

use std::collections::BTreeMap;
use std::fmt::Write;

use dbscope_trace::model::{AccountedCall, AccountedWait, Tables};
use dbscope_trace::profile::{Profile, ProfileOptions};
use dbscope_trace::reader::{Options, Reader};
use dbscope_trace::sink::Sink;
use proptest::prelude::*;

const EVENTS: [&str; 4] = [
    "db file sequential read",
    "log file sync",
    "SQL*Net message from client",
    "enq: TX - row lock contention",
];

#[derive(Clone, Debug)]
struct GenCall {
    kind: usize,
    stmt: usize,
    c_frac: u8,
    slack: u64,
    waits: Vec<(usize, u64)>,
    children: Vec<GenCall>,
}

fn call_strategy() -> impl Strategy<Value = GenCall> {
    let leaf = (
        0usize..3,
        0usize..4,
        any::<u8>(),
        0u64..500,
        prop::collection::vec((0usize..4, 1u64..5000), 0..3),
    )
        .prop_map(|(kind, stmt, c_frac, slack, waits)| GenCall {
            kind,
            stmt,
            c_frac,
            slack,
            waits,
            children: Vec::new(),
        });
    leaf.prop_recursive(2, 8, 3, |inner| {
        (
            0usize..3,
            0usize..4,
            any::<u8>(),
            0u64..500,
            prop::collection::vec((0usize..4, 1u64..5000), 0..3),
            prop::collection::vec(inner, 0..3),
        )
            .prop_map(|(kind, stmt, c_frac, slack, waits, children)| GenCall {
                kind,
                stmt,
                c_frac,
                slack,
                waits,
                children,
            })
    })
}

#[derive(Default, Debug, PartialEq)]
struct Expect {
    events: BTreeMap<String, (u64, i64)>,
    stmts: BTreeMap<String, (u64, u64)>,
    r: i64,
}

fn sqlid(session: usize, stmt: usize, dep: usize) -> String {
    format!("s{session}d{dep}q{stmt:010}")
}

/// Writes `call` (at depth `dep`) starting at `t`; returns its e.
fn emit(
    out: &mut String,
    exp: &mut Expect,
    session: usize,
    dep: usize,
    call: &GenCall,
    t: u64,
) -> u64 {
    let mut now = t;
    for ch in &call.children {
        now += emit(out, exp, session, dep + 1, ch, now);
    }
    let cursor = 1000 + dep * 10 + call.stmt;
    for (ev, ela) in &call.waits {
        now += ela;
        let _ = writeln!(
            out,
            "WAIT #{cursor}: nam='{}' ela= {ela} file#=4 block#=99 blocks=1 obj#=-1 tim={now}",
            EVENTS[*ev]
        );
        let e = exp.events.entry(EVENTS[*ev].to_string()).or_default();
        e.0 += 1;
        e.1 += *ela as i64;
    }
    now += call.slack;
    let e = now - t;
    let c = e * call.c_frac as u64 / 255;
    let kind = ["PARSE", "EXEC", "FETCH"][call.kind];
    let _ = writeln!(
        out,
        "{kind} #{cursor}:c={c},e={e},p=0,cr=1,cu=0,mis=0,r=1,dep={dep},og=1,plh=7,tim={now}"
    );
    let s = exp.stmts.entry(sqlid(session, call.stmt, dep)).or_default();
    s.0 += 1;
    s.1 += e;
    if dep == 0 {
        exp.r += e as i64;
    }
    e
}

/// One session: its top-level calls, each followed by the waits between it and the next.
type GenSession = Vec<(GenCall, Vec<(usize, u64)>)>;

fn generate(sessions: &[GenSession]) -> (String, Expect) {
    generate_from(sessions, None).0
}

/// [`generate`], with each session's first timestamp (its PARSING lines' `tim`, the start of its
/// window) at `window_at`/255 of its timeline instead of before it; also returns the windows'
/// total length (Σ last tim − first tim).
fn generate_from(sessions: &[GenSession], window_at: Option<u8>) -> ((String, Expect), i64) {
    let mut out = String::from(
        "Trace file /tmp/gen.trc\nOracle Database 19c Enterprise Edition Release 19.0.0.0.0 - Production\nVersion 19.3.0.0.0\n\n",
    );
    let mut exp = Expect::default();
    let mut windows = 0;
    for (si, calls) in sessions.iter().enumerate() {
        let _ = writeln!(
            out,
            "*** SESSION ID:({si}.1) 2024-01-01T00:00:0{si}.000000+00:00"
        );
        let mut body = String::new();
        let begin = 1_000_000u64;
        let mut t = begin;
        for (call, between) in calls {
            t += emit(&mut body, &mut exp, si, 0, call, t);
            for (ev, ela) in between {
                t += ela;
                let _ = writeln!(
                    body,
                    "WAIT #0: nam='{}' ela= {ela} driver id=1 #bytes=1 p3=0 obj#=-1 tim={t}",
                    EVENTS[*ev]
                );
                let e = exp.events.entry(EVENTS[*ev].to_string()).or_default();
                e.0 += 1;
                e.1 += *ela as i64;
                exp.r += *ela as i64;
            }
        }
        let first_tim = match window_at {
            None => 1,
            Some(f) => begin + (t - begin) * f as u64 / 255,
        };
        windows += (t - first_tim.max(begin)) as i64;
        for dep in 0..4 {
            for stmt in 0..4 {
                let cursor = 1000 + dep * 10 + stmt;
                let _ = writeln!(out, "=====================\nPARSING IN CURSOR #{cursor} len=20 dep={dep} uid=1 oct=3 lid=1 tim={first_tim} hv={cursor} ad='0' sqlid='{}'\nselect {stmt} from dual\nEND OF STMT", sqlid(si, stmt, dep));
            }
        }
        out.push_str(&body);
    }
    ((out, exp), windows)
}

fn profile_of(text: &[u8]) -> Profile {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("gen.trc");
    std::fs::write(&p, text).unwrap();
    dbscope_trace::profile::profile_files(&[p.as_path()], &ProfileOptions::default()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn generated_traces_read_back_exactly(
        sessions in prop::collection::vec(
            prop::collection::vec(
                (call_strategy(), prop::collection::vec((0usize..4, 1u64..100_000), 0..3)),
                1..6,
            ),
            1..4,
        )
    ) {
        let (text, exp) = generate(&sessions);
        let p = profile_of(text.as_bytes());
        let events: BTreeMap<String, (u64, i64)> = p
            .events
            .iter()
            .filter(|e| e.kind == "wait")
            .map(|e| (e.name.clone(), (e.calls, e.total_us)))
            .collect();
        let stmts: BTreeMap<String, (u64, u64)> =
            p.statements.iter().map(|s| (s.sqlid.clone(), (s.calls, s.e_us))).collect();
        prop_assert_eq!(events, exp.events);
        prop_assert_eq!(stmts, exp.stmts);
        prop_assert_eq!(p.r_us, exp.r);
        prop_assert_eq!(p.rows_total_us, p.r_us);
        prop_assert_eq!(p.warning_count, 0);
        // Every call has exactly its own waits, so unaccounted-for time is slack − self c.
        prop_assert_eq!(p.sessions, sessions.len());
    }

    /// Issue 13: whatever point of the timeline tracing starts at (calls and waits reaching back
    /// before the first timestamp, recursive calls and waits inside them), R is the window from
    /// the first to the last timestamp (the timeline has no gaps), nothing is negative for it, the
    /// rows still add up to R, and R + clipped is the unclipped R.
    #[test]
    fn traces_started_mid_call_fit_their_window(
        sessions in prop::collection::vec(
            prop::collection::vec(
                (call_strategy(), prop::collection::vec((0usize..4, 1u64..100_000), 0..3)),
                1..6,
            ),
            1..4,
        ),
        window_at in any::<u8>(),
    ) {
        let ((text, exp), windows) = generate_from(&sessions, Some(window_at));
        let p = profile_of(text.as_bytes());
        prop_assert_eq!(p.r_us, windows);
        prop_assert_eq!(p.wall_span_us, windows);
        prop_assert_eq!(p.unaccounted_between_calls_us, 0);
        prop_assert_eq!(p.rows_total_us, p.r_us);
        prop_assert_eq!(p.r_us + p.clipped_us, exp.r);
        prop_assert!(p.events.iter().filter(|e| e.kind == "wait").all(|e| e.total_us >= 0));
    }

    #[test]
    fn spliced_lines_never_panic(
        cuts in prop::collection::vec((0usize..40, 0usize..200, 0usize..40, 0usize..200), 1..60),
        strict in any::<bool>(),
    ) {
        let real = include_str!("fixtures/oracle-10046/priitp2__trctools__two_statements_one_cursor.trc");
        let lines: Vec<&str> = real.lines().collect();
        let mut text = Vec::new();
        for (a, i, b, j) in cuts {
            let la = lines[(a + 20) % lines.len()].as_bytes();
            let lb = lines[(b + 30) % lines.len()].as_bytes();
            text.extend_from_slice(&la[..i.min(la.len())]);
            text.extend_from_slice(&lb[j.min(lb.len())..]);
            text.push(b'\n');
        }
        let mut sink = NullSink;
        let mut r = Reader::new(&mut sink, Options { strict, keep_params: true, ..Options::default() });
        let _ = r.read("spliced", &text[..]);
        let p = profile_of(&text);
        prop_assert_eq!(p.rows_total_us, p.r_us);
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..4000)) {
        let p = profile_of(&bytes);
        prop_assert_eq!(p.rows_total_us, p.r_us);
    }
}

struct NullSink;

impl Sink for NullSink {
    fn call(&mut self, _: &Tables, _: &AccountedCall) {}
    fn wait(&mut self, _: &Tables, _: &AccountedWait) {}
}
