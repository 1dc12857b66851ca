//! Tests against R on generated samples: `summary()`'s printed lines and numbers, type-7
//! quantiles and `format()`, digit for digit. The references are reference/r/summary_ref/*.tsv,
//! written by its gen.R (issue 34 items 1 and 2).

use super::format::{format_r, r_summary_lines};
use super::summary::{quantile_type7_by, Summary};

const SUMMARY: &str = include_str!("../../../../reference/r/summary_ref/summary.tsv");
const FORMAT: &str = include_str!("../../../../reference/r/summary_ref/format.tsv");
const PROBS: [f64; 4] = [0.9, 0.99, 0.999, 0.9999];

fn doubles(s: &str) -> Vec<f64> {
    s.split_whitespace().map(|v| v.parse().unwrap()).collect()
}

/// The durations (ns) of a case's input column, in R's order.
fn input(spec: &str) -> Vec<u64> {
    let mut f = spec.split_whitespace();
    match f.next() {
        Some("v") => f.map(|v| v.parse().unwrap()).collect(),
        Some("lcg") => {
            let p: Vec<u64> = f.map(|v| v.parse().unwrap()).collect();
            let (mut s, n, lo, div) = (p[0], p[1], p[2], p[3]);
            (0..n)
                .map(|_| {
                    s = 48271 * s % 2_147_483_647;
                    let u = s % 1_000_000;
                    lo + u * u / div
                })
                .collect()
        }
        other => panic!("unknown input {other:?}"),
    }
}

/// Every sample's summary line, six numbers and high quantiles equal R's.
#[test]
fn summaries_and_quantiles_equal_r_on_generated_samples() {
    let mut failures = Vec::new();
    let mut cases = 0;
    for line in SUMMARY.lines() {
        let c: Vec<&str> = line.split('\t').collect();
        let (id, head, values) = (c[0], c[2], c[3]);
        let mut ns = input(c[1]);
        let s = Summary::from_values(&mut ns, 1000.0).unwrap();
        let six = s.six();
        let (h, v) = r_summary_lines(six);
        if (h.as_str(), v.as_str()) != (head, values) {
            failures.push(format!("{id}: summary\n  R:   {values}\n  got: {v}"));
        }
        if six.to_vec() != doubles(c[4]) {
            failures.push(format!("{id}: six numbers {six:?}, R {}", c[4]));
        }
        let q: Vec<f64> = PROBS
            .iter()
            .map(|&p| quantile_type7_by(&ns, p, |x| x as f64 / 1000.0))
            .collect();
        if q != doubles(c[5]) {
            failures.push(format!("{id}: quantiles {q:?}, R {}", c[5]));
        }
        cases += 1;
    }
    assert!(cases >= 600, "{cases} cases");
    assert!(
        failures.is_empty(),
        "{} of {cases} differ from R:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `format(x, digits)` and the summary lines of six given numbers (negative ones too) equal R's.
#[test]
fn format_and_summary_lines_equal_r() {
    let mut failures = Vec::new();
    for line in FORMAT.lines() {
        let c: Vec<&str> = line.split('\t').collect();
        let (id, digits, x) = (c[0], c[1].parse::<usize>().unwrap(), doubles(c[2]));
        match c[3] {
            "format" => {
                let got = format_r(&x, digits).join("|");
                if got != c[4] {
                    failures.push(format!(
                        "{id}: format({x:?}, {digits})\n  R:   {}\n  got: {got}",
                        c[4]
                    ));
                }
            }
            _ => {
                let six: [f64; 6] = x.try_into().unwrap();
                let (h, v) = r_summary_lines(six);
                if (h.as_str(), v.as_str()) != (c[4], c[5]) {
                    failures.push(format!("{id}: {six:?}\n  R:   {}\n  got: {v}", c[5]));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differ from R:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
