//! pgscript's expressions, generator and random functions against what PostgreSQL 15's own
//! code answered: `tests/data/*`, made by `tests/data/make_reference.sh` (see its header for
//! how and with what).

use std::collections::HashMap;
use std::path::PathBuf;

use dbscope_pgscript::expr::{self, Env};
use dbscope_pgscript::{EvalError, Prng, Value};

fn data(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `--random-seed` of every pgbench run in the data.
const SEED: u64 = 12345;

/// pgbench's start-up draws from its base sequence, seeded with the run's seed: each client's
/// generator (`initRandomState` of `cs_func_rs`, clients in order), then `:default_seed`.
fn pgbench_client(seed: u64) -> (Prng, i64) {
    let mut base = Prng::seed(seed);
    let client = Prng::seed(base.next_u64());
    let default_seed = base.next_u64() as i64;
    (client, default_seed)
}

/// A pgbench client's variables: text ones (`-D`) are converted on use; `\set` stores values.
struct Client {
    vars: HashMap<String, Result<Value, String>>,
    rng: Prng,
    default_seed: i64,
}

impl Client {
    fn new() -> Client {
        let (rng, default_seed) = pgbench_client(SEED);
        let mut c = Client {
            vars: HashMap::new(),
            rng,
            default_seed,
        };
        // make_reference.sh's DEFINES
        for (k, v) in [
            ("txt", "2.5e1"),
            ("txt2", "+12"),
            ("b", "yes"),
            ("nb", "of"),
            ("n", "null"),
            ("big", "9223372036854775807"),
            ("s", "abc"),
        ] {
            c.vars.insert(k.to_string(), Value::from_text(k, v));
        }
        // pgbench's built-in variables (no -s, no built-in script: scale 1)
        c.set("scale", Value::Int(1));
        c.set("client_id", Value::Int(0));
        c.set("default_seed", Value::Int(default_seed));
        c.set("random_seed", Value::Int(SEED as i64));
        c
    }
    fn set(&mut self, name: &str, v: Value) {
        self.vars.insert(name.to_string(), Ok(v));
    }
}

impl Env for Client {
    fn var(&self, name: &str) -> Option<Value> {
        self.vars.get(name).and_then(|v| v.clone().ok())
    }
    fn lookup(&self, name: &str) -> Result<Value, EvalError> {
        match self.vars.get(name) {
            None => Err(expr::undefined_variable(name)),
            Some(Ok(v)) => Ok(v.clone()),
            Some(Err(message)) => Err(EvalError {
                class: "script:type",
                message: message.clone(),
            }),
        }
    }
    fn rng(&mut self) -> &mut Prng {
        &mut self.rng
    }
    fn default_seed(&self) -> i64 {
        self.default_seed
    }
    fn debug(&mut self, _value: &Value) {}
}

#[test]
fn prng_is_postgresqls_own() {
    // setseed(f) is pg_prng_fseed: pg_prng_seed((int64) (f * (2^52 - 1))); random() is
    // pg_prng_double
    let mut rows = 0;
    let mut current: Option<(String, Prng)> = None;
    for line in data("prng_setseed.tsv").lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let (fseed, want): (&str, f64) = (f[0], f[2].parse().unwrap());
        if current.as_ref().is_none_or(|(s, _)| s != fseed) {
            let x: f64 = fseed.parse().unwrap();
            let seed = (((1u64 << 52) - 1) as f64 * x) as i64 as u64;
            current = Some((fseed.to_string(), Prng::seed(seed)));
        }
        let got = current.as_mut().unwrap().1.double();
        assert_eq!(got, want, "setseed({fseed}), draw {}", f[1]);
        rows += 1;
    }
    assert_eq!(rows, 120);
}

#[test]
fn expressions_give_pgbenchs_values() {
    // one client running every case in order, as the reference run did: the random*() cases
    // at the end draw pgbench's very values
    let mut client = Client::new();
    let mut wrong = Vec::new();
    let text = data("expr_values.tsv");
    for (k, line) in text.lines().enumerate() {
        let (e, want) = line.split_once('\t').unwrap();
        let got = expr::parse(e)
            .map_err(|err| err.to_string())
            .and_then(|x| expr::eval(&x, &mut client).map_err(|err| err.message));
        match got {
            Ok(v) => {
                if v.to_text() != want {
                    wrong.push(format!("{e}: pgbench {want}, we {}", v.to_text()));
                }
                client.set(&format!("e{}", k + 1), v);
            }
            Err(err) => wrong.push(format!("{e}: pgbench {want}, we fail: {err}")),
        }
    }
    assert!(text.lines().count() > 140);
    assert!(
        wrong.is_empty(),
        "{} of {} differ:\n{}",
        wrong.len(),
        text.lines().count(),
        wrong.join("\n")
    );
}

#[test]
fn run_time_errors_say_what_pgbench_says() {
    let mut wrong = Vec::new();
    for line in data("expr_errors.tsv").lines() {
        let (e, want) = line.split_once('\t').unwrap();
        let x = expr::parse(e).unwrap_or_else(|err| panic!("{e}: {err}"));
        match expr::eval(&x, &mut Client::new()) {
            Err(err) if err.message == want => {}
            other => wrong.push(format!("{e}: pgbench \"{want}\", we {other:?}")),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn parse_errors_say_what_and_where_pgbench_says() {
    // the caret's column is in the line "\set e EXPR": 7 characters before the expression
    let mut wrong = Vec::new();
    for line in data("expr_syntax_errors.tsv").lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let (e, want, col): (&str, &str, usize) = (f[0], f[1], f[2].parse().unwrap());
        match expr::parse(e) {
            Err(err) if err.message == want && err.offset + 7 == col => {}
            other => wrong.push(format!(
                "{e}: pgbench \"{want}\" at {}, we {other:?}",
                col - 7
            )),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn zipfian_below_one_is_refused_as_pgbench_15_refuses_it() {
    let want = data("zipfian_s05.txt");
    let want = want.trim().trim_start_matches("pgbench: error: ");
    let x = expr::parse("random_zipfian(1, 100, 0.5)").unwrap();
    assert_eq!(
        expr::eval(&x, &mut Client::new()).unwrap_err().message,
        want
    );
}

/// One samples_*.txt file.
struct Samples {
    expr: String,
    n: u64,
    sum: i128,
    weighted: i128,
    first: Vec<i64>,
    counts: HashMap<i64, u64>,
}

fn samples(name: &str) -> Samples {
    let text = data(&format!("samples_{name}.txt"));
    let mut s = Samples {
        expr: String::new(),
        n: 0,
        sum: 0,
        weighted: 0,
        first: vec![],
        counts: HashMap::new(),
    };
    for line in text.lines() {
        let (k, rest) = line.split_once(' ').unwrap();
        match k {
            "#" => s.expr = rest.split(", pgbench").next().unwrap().to_string(),
            "n" => s.n = rest.parse().unwrap(),
            "sum" => s.sum = rest.parse().unwrap(),
            "weighted" => s.weighted = rest.parse().unwrap(),
            "first" => s.first = rest.split(' ').map(|v| v.parse().unwrap()).collect(),
            "count" => {
                let (v, c) = rest.split_once(' ').unwrap();
                s.counts.insert(v.parse().unwrap(), c.parse().unwrap());
            }
            _ => panic!("{name}: {line}"),
        }
    }
    s
}

/// `n` evaluations of `e` by a client seeded as pgbench seeds one with `seed`.
fn draw(e: &str, seed: u64, n: usize) -> Vec<i64> {
    let x = expr::parse(e).unwrap();
    let mut c = Client::new();
    (c.rng, c.default_seed) = pgbench_client(seed);
    (0..n)
        .map(|_| match expr::eval(&x, &mut c) {
            Ok(Value::Int(v)) => v,
            other => panic!("{e}: {other:?}"),
        })
        .collect()
}

const DISTRIBUTIONS: [&str; 6] = [
    "zipfian_s1.5",
    "zipfian_s1.01",
    "exponential_p2.5",
    "exponential_p10",
    "gaussian_p2.5",
    "gaussian_p5",
];

#[test]
fn same_seed_gives_pgbenchs_sequence_of_draws() {
    for name in ["uniform"].iter().chain(DISTRIBUTIONS.iter()) {
        let want = samples(name);
        let got = draw(&want.expr, SEED, want.n as usize);
        assert_eq!(
            &got[..want.first.len()],
            &want.first[..],
            "{name}: the first draws"
        );
        let sum: i128 = got.iter().map(|&v| v as i128).sum();
        let weighted: i128 = got
            .iter()
            .enumerate()
            .map(|(i, &v)| (i as i128 + 1) * v as i128)
            .sum();
        assert_eq!(
            (sum, weighted),
            (want.sum, want.weighted),
            "{name}: all {} draws",
            want.n
        );
    }
}

/// Two-sample Kolmogorov–Smirnov statistic D = sup |F1 − F2| from counts per value.
fn ks_d(a: &HashMap<i64, u64>, b: &HashMap<i64, u64>) -> f64 {
    let (na, nb) = (
        a.values().sum::<u64>() as f64,
        b.values().sum::<u64>() as f64,
    );
    let mut keys: Vec<i64> = a.keys().chain(b.keys()).copied().collect();
    keys.sort_unstable();
    keys.dedup();
    let (mut fa, mut fb, mut d) = (0.0, 0.0, 0.0f64);
    for k in keys {
        fa += *a.get(&k).unwrap_or(&0) as f64 / na;
        fb += *b.get(&k).unwrap_or(&0) as f64 / nb;
        d = d.max((fa - fb).abs());
    }
    d
}

/// The critical D at level α for samples of n and m: c(α)·√((n+m)/(n·m)),
/// c(α) = √(−ln(α/2)/2) (1.9495 at α = 0.001).
fn ks_critical(alpha: f64, n: f64, m: f64) -> f64 {
    (-(alpha / 2.0).ln() / 2.0).sqrt() * ((n + m) / (n * m)).sqrt()
}

fn counts(v: &[i64]) -> HashMap<i64, u64> {
    let mut c = HashMap::new();
    for &x in v {
        *c.entry(x).or_insert(0) += 1;
    }
    c
}

#[test]
fn distributions_match_pgbenchs_by_kolmogorov_smirnov() {
    let crit = ks_critical(0.001, 10_000.0, 10_000.0);
    assert!((crit - 0.02757).abs() < 1e-4, "{crit}");
    for name in DISTRIBUTIONS {
        let want = samples(name);
        assert_eq!(want.counts.values().sum::<u64>(), 10_000, "{name}");
        // our own draws from another seed: the same distribution, not the same values
        let ours = counts(&draw(&want.expr, 987_654_321, 10_000));
        let d = ks_d(&ours, &want.counts);
        assert!(d < crit, "{name}: D = {d:.4} ≥ {crit:.4}");
        assert!(d > 0.0, "{name}: another seed gave the very same counts");
    }
}

#[test]
fn kolmogorov_smirnov_tells_neighbouring_parameters_apart() {
    // the test above can fail: s = 1.5 against pgbench's s = 1.01, p = 2.5 against p = 5
    let crit = ks_critical(0.001, 10_000.0, 10_000.0);
    for (ours, theirs) in [
        ("random_zipfian(1, 100, 1.5)", "zipfian_s1.01"),
        ("random_gaussian(1, 100, 2.5)", "gaussian_p5"),
        ("random_exponential(1, 100, 2.5)", "exponential_p10"),
    ] {
        let d = ks_d(
            &counts(&draw(ours, 987_654_321, 10_000)),
            &samples(theirs).counts,
        );
        assert!(d > crit, "{ours} vs {theirs}: D = {d:.4}");
    }
}
