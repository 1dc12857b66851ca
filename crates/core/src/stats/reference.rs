//! Test support: the values R printed for reference/r/compare.R and the sample data it read.

/// `reference/r/compare.out`, produced by `Rscript reference/r/compare.R` (R 4.2.2).
pub const REFERENCE: &str = include_str!("../../../../reference/r/compare.out");

/// Every whitespace-separated line of the reference output.
pub fn reference_lines() -> impl Iterator<Item = Vec<&'static str>> {
    REFERENCE.lines().map(|l| l.split_whitespace().collect())
}

/// The numbers R printed for `key` of data pair `pair`.
pub fn values(pair: &str, key: &str) -> Vec<f64> {
    let line = reference_lines()
        .find(|f| f.len() > 2 && f[0] == pair && f[1] == key)
        .unwrap_or_else(|| panic!("no {pair} {key} in compare.out"));
    line[2..].iter().map(|s| s.parse().unwrap()).collect()
}

/// The text R printed for `key` of data pair `pair`.
pub fn text(pair: &str, key: &str) -> String {
    let line = reference_lines()
        .find(|f| f.len() > 2 && f[0] == pair && f[1] == key)
        .unwrap_or_else(|| panic!("no {pair} {key} in compare.out"));
    line[2..].join(" ")
}

/// One value of a reference line.
pub fn value(pair: &str, key: &str) -> f64 {
    values(pair, key)[0]
}

fn parse(text: &str) -> Vec<f64> {
    text.lines().map(|l| l.trim().parse().unwrap()).collect()
}

/// The data pair (A, B) R computed on.
pub fn pair(name: &str) -> (Vec<f64>, Vec<f64>) {
    let (a, b) = match name {
        "heavy" => (
            include_str!("../../../../reference/r/data/heavy_a.csv"),
            include_str!("../../../../reference/r/data/heavy_b.csv"),
        ),
        "ties" => (
            include_str!("../../../../reference/r/data/ties_a.csv"),
            include_str!("../../../../reference/r/data/ties_b.csv"),
        ),
        "n2" => (
            include_str!("../../../../reference/r/data/n2_a.csv"),
            include_str!("../../../../reference/r/data/n2_b.csv"),
        ),
        "big" => (
            include_str!("../../../../reference/r/data/big_a.csv"),
            include_str!("../../../../reference/r/data/big_b.csv"),
        ),
        other => panic!("no data pair {other}"),
    };
    (parse(a), parse(b))
}

/// The names of the data pairs.
pub const PAIRS: [&str; 4] = ["heavy", "ties", "n2", "big"];

/// Asserts `got` is within `rel` relative error of `want` (exact when `want` is 0).
pub fn close(got: f64, want: f64, rel: f64, what: &str) {
    let err = if want == 0.0 {
        got.abs()
    } else {
        ((got - want) / want).abs()
    };
    assert!(
        err <= rel,
        "{what}: got {got:e}, R gives {want:e} (relative error {err:e})"
    );
}

/// Asserts a p-value agrees with R to `rel`, or both are below 2.2e-16.
pub fn close_p(got: f64, want: f64, rel: f64, what: &str) {
    if got < f64::EPSILON && want < f64::EPSILON {
        return;
    }
    close(got, want, rel, what);
}
