//! The interpreter driven as the executor drives it, with scripted results standing in for the
//! database: the steps it hands out, the variables it keeps, retries and the choice of script.

use std::sync::Arc;

use dbscope_pgscript::client::{parse_define, ResultSet};
use dbscope_pgscript::{Client, ClientConfig, QueryMode, Script, Step};

fn script(text: &str) -> Script {
    Script::parse("t.sql", "t", text, 1).unwrap_or_else(|e| panic!("{e}"))
}

fn client(scripts: Vec<Script>, mode: QueryMode) -> Client {
    Client::new(
        scripts.into(),
        ClientConfig {
            client_id: 3,
            scale: 7,
            random_seed: 42,
            default_seed: 1234,
            defines: vec![],
            mode,
            seed: 99,
        },
    )
}

fn rows(columns: &[&str], rows: &[&[Option<&str>]]) -> ResultSet {
    ResultSet {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows: rows
            .iter()
            .map(|r| r.iter().map(|v| v.map(str::to_string)).collect())
            .collect(),
    }
}

/// A step with what it borrows copied out, to be compared.
#[derive(Debug, PartialEq)]
enum Owned {
    Sql(usize, String, Vec<String>),
    Sleep(usize, u64),
    Shell(usize),
    Start(usize),
    Sync(usize),
    EndPipe(usize),
    End,
}

fn next(c: &mut Client) -> Owned {
    match c.next().unwrap_or_else(|e| panic!("{e}")) {
        Step::Sql { cmd, sql, params } => Owned::Sql(cmd, sql.to_string(), params.to_vec()),
        Step::Sleep { cmd, us } => Owned::Sleep(cmd, us),
        Step::Shell { cmd } => Owned::Shell(cmd),
        Step::StartPipeline { cmd } => Owned::Start(cmd),
        Step::SyncPipeline { cmd } => Owned::Sync(cmd),
        Step::EndPipeline { cmd } => Owned::EndPipe(cmd),
        Step::End => Owned::End,
    }
}

const EVERY_COMMAND: &str = r"\set a 5
\set b :a * 2
\if :b > 100
SELECT 'big';
\elif :b = 10
\if :a = 4
SELECT 'nested';
\else
SELECT :a AS x, :b AS y, :scale AS s \gset r_
\endif
\else
SELECT 'other';
\endif
\sleep :a ms
\setshell s echo 7
\shell true
SELECT 1 \; SELECT :s AS two, NULL AS three \aset q_
\set c :r_x + :q_two + :client_id
SELECT :c, :q_three;
";

#[test]
fn a_script_of_every_meta_command_runs_through() {
    let s = script(EVERY_COMMAND);
    let mut c = client(vec![s], QueryMode::Simple);
    assert_eq!(next(&mut c), Owned::End, "nothing before start");
    let chosen = c.choose();
    c.start(chosen);
    assert_eq!(
        next(&mut c),
        Owned::Sql(8, "SELECT 5 AS x, 10 AS y, 7 AS s ".into(), vec![])
    );
    c.store(
        8,
        &[rows(
            &["x", "y", "s"],
            &[&[Some("5"), Some("10"), Some("7")]],
        )],
    )
    .unwrap();
    assert_eq!(c.var("r_x").as_deref(), Some("5"));
    assert_eq!(c.var("r_s").as_deref(), Some("7"));
    assert_eq!(next(&mut c), Owned::Sleep(13, 5_000));
    assert_eq!(next(&mut c), Owned::Shell(14));
    assert_eq!(c.var("s").as_deref(), Some("7"));
    assert_eq!(next(&mut c), Owned::Shell(15));
    assert_eq!(
        next(&mut c),
        Owned::Sql(
            16,
            "SELECT 1 ; SELECT 7 AS two, NULL AS three ".into(),
            vec![]
        )
    );
    // \aset: every statement's last row; the first statement returned none
    c.store(
        16,
        &[
            rows(&["one"], &[]),
            rows(&["two", "three"], &[&[Some("8"), None]]),
        ],
    )
    .unwrap();
    assert_eq!(c.var("q_two").as_deref(), Some("8"));
    // a NULL column is the empty text, as pgbench stores it
    assert_eq!(next(&mut c), Owned::Sql(18, "SELECT 16, ;".into(), vec![]));
    assert_eq!(c.var("c").as_deref(), Some("16"));
    assert_eq!(next(&mut c), Owned::End);
    assert_eq!(next(&mut c), Owned::End);
}

#[test]
fn the_other_branches_are_taken() {
    let text = "\\if :v = 1\nSELECT 1;\n\\elif :v = 2\nSELECT 2;\n\\elif :v = 3\nSELECT 3;\n\\else\nSELECT 4;\n\\endif\nSELECT 'after';\n";
    for (v, want) in [
        ("1", "SELECT 1;"),
        ("2", "SELECT 2;"),
        ("3", "SELECT 3;"),
        ("9", "SELECT 4;"),
    ] {
        let mut c = Client::new(
            Arc::from(vec![script(text)]),
            ClientConfig {
                defines: vec![("v".into(), v.into())],
                ..ClientConfig::default()
            },
        );
        c.start(0);
        match next(&mut c) {
            Owned::Sql(_, sql, _) => assert_eq!(sql, want, "v = {v}"),
            other => panic!("{other:?}"),
        }
        match next(&mut c) {
            Owned::Sql(_, sql, _) => assert_eq!(sql, "SELECT 'after';", "v = {v}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(next(&mut c), Owned::End);
    }
}

#[test]
fn extended_and_prepared_modes_hand_out_parameters() {
    let s = script("\\set aid 10\n\\set d 2.5\nUPDATE t SET v = v + :d WHERE aid = :aid OR aid = :aid;\n\\startpipeline\nSELECT :aid;\n\\syncpipeline\n\\endpipeline\n");
    for mode in [QueryMode::Extended, QueryMode::Prepared] {
        let mut c = client(vec![s.clone()], mode);
        c.start(0);
        assert_eq!(
            next(&mut c),
            Owned::Sql(
                2,
                "UPDATE t SET v = v + $1 WHERE aid = $2 OR aid = $3;".into(),
                vec!["2.5".into(), "10".into(), "10".into()]
            )
        );
        assert_eq!(next(&mut c), Owned::Start(3));
        assert_eq!(
            next(&mut c),
            Owned::Sql(4, "SELECT $1;".into(), vec!["10".into()])
        );
        assert_eq!(next(&mut c), Owned::Sync(5));
        assert_eq!(next(&mut c), Owned::EndPipe(6));
        assert_eq!(next(&mut c), Owned::End);
    }
    let mut c = client(vec![s], QueryMode::Simple);
    c.start(0);
    next(&mut c);
    let err = c.next().unwrap_err();
    assert_eq!(err.class, "script:pipeline");
    assert_eq!(
        err.message,
        "cannot use pipeline mode with the simple query protocol"
    );
}

#[test]
fn builtin_variables_and_defines() {
    let s = script("SELECT :scale, :client_id, :random_seed, :default_seed, :who;\n");
    let mut c = Client::new(
        Arc::from(vec![s.clone()]),
        ClientConfig {
            client_id: 2,
            scale: 10,
            random_seed: u64::MAX,
            default_seed: -5,
            defines: vec![parse_define("who=me").unwrap()],
            ..ClientConfig::default()
        },
    );
    c.start(0);
    assert_eq!(
        next(&mut c),
        Owned::Sql(0, "SELECT 10, 2, -1, -5, me;".into(), vec![])
    );
    // -D wins over the builtins, as in pgbench
    let mut c = Client::new(
        Arc::from(vec![s]),
        ClientConfig {
            scale: 10,
            defines: vec![("scale".into(), "3".into()), ("who".into(), "x".into())],
            ..ClientConfig::default()
        },
    );
    c.start(0);
    assert_eq!(
        next(&mut c),
        Owned::Sql(0, "SELECT 3, 0, 0, 0, x;".into(), vec![])
    );
    assert_eq!(
        parse_define("=x"),
        Err("invalid variable definition: \"=x\"".into())
    );
    assert_eq!(
        parse_define("x="),
        Err("invalid variable definition: \"x=\"".into())
    );
    assert_eq!(
        parse_define("1x=2"),
        Err("option: invalid variable name: \"1x\"".into())
    );
}

#[test]
fn run_time_errors_say_what_pgbench_says() {
    let err = |text: &str, defines: &[(&str, &str)]| {
        let mut c = Client::new(
            Arc::from(vec![script(text)]),
            ClientConfig {
                defines: defines
                    .iter()
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .collect(),
                ..ClientConfig::default()
            },
        );
        c.start(0);
        loop {
            let sql = match c.next() {
                Ok(Step::End) => panic!("no error in {text:?}"),
                Ok(Step::Sql { cmd, .. }) => Some(cmd),
                Ok(_) => None,
                Err(e) => return (e.class, e.message),
            };
            if let Some(cmd) = sql {
                if let Err(e) = c.store(cmd, &[rows(&["a"], &[&[Some("1")], &[Some("2")]])]) {
                    return (e.class, e.message);
                }
            }
        }
    };
    assert_eq!(
        err("SELECT :nope;\n", &[]),
        (
            "script:undefined-variable",
            "undefined variable \"nope\"".into()
        )
    );
    assert_eq!(
        err("\\set x :nope + 1\n", &[]),
        (
            "script:undefined-variable",
            "undefined variable \"nope\"".into()
        )
    );
    assert_eq!(
        err("\\set y :x + 1\n", &[("x", "abc")]),
        (
            "script:type",
            "malformed variable \"x\" value: \"abc\"".into()
        )
    );
    assert_eq!(
        err("\\sleep :t\n", &[("t", "soon")]),
        (
            "script:sleep",
            "sleep: invalid sleep time \"soon\" for variable \"t\"".into()
        )
    );
    assert_eq!(
        err("\\setshell v echo seven\n", &[]),
        (
            "script:shell",
            "echo: shell command must return an integer (not \"seven\n\")".into()
        )
    );
    assert_eq!(
        err("\\shell false\n", &[]),
        (
            "script:shell",
            "false: could not launch shell command".into()
        )
    );
    assert_eq!(
        err("SELECT 1 \\gset\n", &[]),
        (
            "script:gset",
            "client 0 script 0 command 0 query 0: expected one row, got 2".into()
        )
    );
}

#[test]
fn gset_wants_one_row_of_the_last_statement() {
    let mut c = client(
        vec![script("SELECT 1 \\; SELECT 2 \\gset p\n")],
        QueryMode::Simple,
    );
    c.start(0);
    next(&mut c);
    let e = c.store(0, &[]).unwrap_err();
    assert_eq!(e.message, "client 3 command 0: no results");
    let e = c
        .store(0, &[rows(&["a"], &[&[Some("1")]]), rows(&[], &[])])
        .unwrap_err();
    assert_eq!(
        e.message,
        "client 3 script 0 command 0 query 1: expected one row, got 0"
    );
    c.store(0, &[rows(&["a"], &[]), rows(&["b"], &[&[Some("2")]])])
        .unwrap();
    assert_eq!(c.var("pb").as_deref(), Some("2"));
    assert_eq!(c.var("pa"), None);
    let e = c
        .store(0, &[rows(&["?column?"], &[&[Some("2")]])])
        .unwrap_err();
    assert_eq!(e.message, "gset: invalid variable name: \"p?column?\"");
}

#[test]
fn a_retry_replays_the_same_random_values() {
    let s = script(
        "\\set r random(1, 1000000000)\n\\set g random_gaussian(1, 1000, 3.0)\nSELECT :r, :g;\n",
    );
    let mut c = client(vec![s], QueryMode::Simple);
    let sql = |c: &mut Client| match next(c) {
        Owned::Sql(_, sql, _) => sql,
        other => panic!("{other:?}"),
    };
    c.start(0);
    let first = sql(&mut c);
    for _ in 0..3 {
        c.retry();
        assert_eq!(sql(&mut c), first);
    }
    c.start(0);
    let second = sql(&mut c);
    assert_ne!(second, first, "a new transaction draws new values");
    c.retry();
    assert_eq!(sql(&mut c), second);
    // the same seed gives the same sequence
    let mut d = client(vec![script("\\set r random(1, 1000000000)\n\\set g random_gaussian(1, 1000, 3.0)\nSELECT :r, :g;\n")], QueryMode::Simple);
    d.start(0);
    assert_eq!(sql(&mut d), first);
}

#[test]
fn scripts_are_chosen_in_proportion_to_their_weights() {
    let weights = [1u32, 2, 7, 0];
    let scripts: Vec<Script> = weights
        .iter()
        .map(|&w| Script::parse("w", "w", "SELECT 1;\n", w).unwrap())
        .collect();
    let mut c = client(scripts, QueryMode::Simple);
    let n = 100_000;
    let mut counts = [0u32; 4];
    for _ in 0..n {
        counts[c.choose()] += 1;
    }
    assert_eq!(counts[3], 0, "weight 0 is never chosen");
    let total: u32 = weights.iter().sum();
    let chi2: f64 = (0..3)
        .map(|i| {
            let expected = f64::from(n) * f64::from(weights[i]) / f64::from(total);
            (f64::from(counts[i]) - expected).powi(2) / expected
        })
        .sum();
    // 2 degrees of freedom: P(chi2 > 13.8) = 0.001
    assert!(chi2 < 13.8, "counts {counts:?}, chi2 {chi2}");
    // one script: always it, without drawing
    let mut one = client(vec![script("SELECT 1;\n")], QueryMode::Simple);
    assert!((0..100).all(|_| one.choose() == 0));
}

/// Rows of a scripted result: columns' text, `None` for NULL.
type Rows<'a> = &'a [&'a [Option<&'a str>]];

/// The SQL pgbench sent, from its --debug log: each `client 0 sending …` record with the lines
/// that continue it (pgbench's logging drops one trailing newline).
fn pgbench_sends(log: &str) -> Vec<String> {
    let mut sends: Vec<String> = Vec::new();
    let mut in_send = false;
    for line in log.split('\n') {
        if let Some(rest) = line.strip_prefix("pgbench: ") {
            in_send = rest.starts_with("client 0 sending ");
            if in_send {
                sends.push(rest["client 0 sending ".len()..].to_string());
            }
        } else if in_send {
            let last = sends.last_mut().unwrap();
            last.push('\n');
            last.push_str(line);
        }
    }
    sends
}

/// tests/data/pgbench-run: pgbench 15 ran ref.sql once with --random-seed=42 in simple and in
/// extended mode (its make.sh); our client, seeded as pgbench seeds its first client, sends the
/// same text: the same splitting, substitution, `\gset` storage and random values.
#[test]
fn sends_what_pgbench_15_sends() {
    let dir = format!("{}/tests/data/pgbench-run", env!("CARGO_MANIFEST_DIR"));
    let read = |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).unwrap();
    let s = Script::parse("ref.sql", "ref", &read("ref.sql"), 1).unwrap_or_else(|e| panic!("{e}"));
    // pgbench: base = pg_prng_seed(42); each client's cs_func_rs from base, then default_seed
    let mut base = dbscope_pgscript::Prng::seed(42);
    let seed = base.next_u64();
    let default_seed = base.next_u64() as i64;
    // what the server answered to the two \gset commands
    let answers: [(&[&str], Rows); 2] = [
        (&["two"], &[&[Some("10.5")]]),
        (
            &["isnull", "t", "r", "h", "p", "two"],
            &[&[
                Some("t"),
                Some("t"),
                Some("668251"),
                Some("8836847535837303587"),
                Some("5"),
                Some("10.5"),
            ]],
        ),
    ];
    for mode in [QueryMode::Simple, QueryMode::Extended] {
        let log = read(if mode == QueryMode::Simple {
            "simple.log"
        } else {
            "extended.log"
        });
        let expected = pgbench_sends(&log);
        let mut c = Client::new(
            Arc::from(vec![s.clone()]),
            ClientConfig {
                client_id: 0,
                scale: 1,
                random_seed: 42,
                default_seed,
                defines: vec![],
                mode,
                seed,
            },
        );
        c.start(0);
        let mut sent = Vec::new();
        let mut answers = answers.iter();
        loop {
            let gset = match next(&mut c) {
                Owned::End => break,
                Owned::Sql(cmd, sql, _) => {
                    sent.push(sql.strip_suffix('\n').unwrap_or(&sql).to_string());
                    let is_gset = matches!(&s.commands[cmd].kind,
                        dbscope_pgscript::CommandKind::Sql(q) if q.gset.is_some());
                    is_gset.then_some(cmd)
                }
                _ => None,
            };
            if let Some(cmd) = gset {
                let (columns, values) = answers.next().unwrap();
                // the compound command's first statement answered too
                let mut results = vec![];
                if columns == &["two"] {
                    results.push(rows(&["one"], &[&[Some("5")]]));
                }
                results.push(rows(columns, values));
                c.store(cmd, &results).unwrap();
            }
        }
        // pgbench's extended mode stopped at the compound command (the server refuses several
        // statements in one extended-protocol query)
        assert!(expected.len() >= 2, "{mode:?}: {expected:?}");
        assert_eq!(sent[..expected.len()], expected[..], "{mode:?}");
    }
}
