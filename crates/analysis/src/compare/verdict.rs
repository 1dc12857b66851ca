//! The verdict in plain words, and the numbers in it formatted as R prints them.
//!
//! Each statistic's direction is judged against the noise band, then the overall call is made.

use dbscope_core::stats::{format_pvalue, format_r, zapsmall, QuantileDiff, Sample, WelchTest};

use super::model::{Direction, Verdict};
use crate::text::trim_num;

/// Direction of an interval `[low, high]` of a relative change against the band `±noise`.
fn direction(low: f64, high: f64, noise: f64) -> Direction {
    if low > noise {
        Direction::Slower
    } else if high < -noise {
        Direction::Faster
    } else {
        Direction::None
    }
}

/// Significance level of the too-few-samples rule.
const ALPHA: f64 = 0.05;

/// True when samples of sizes `n` and `m` are too few for any test to decide: the smallest
/// two-sided p-value the exact Wilcoxon rank-sum test can reach with them, 2 / C(n + m, n) (all of
/// one sample below all of the other), is not below 5%. Distribution-free, so it holds whatever
/// the data: 2 and 2 (p ≥ 1/3), 3 and 3 (p ≥ 0.1), 3 and 4, 2 and 7, 1 and 39 are too few; 4 and
/// 4 (p ≥ 0.029), 3 and 5, 2 and 8, 1 and 40 are not.
pub fn too_few_to_decide(n: u64, m: u64) -> bool {
    let (small, large) = (n.min(m), n.max(m));
    // C(small + large, small), built up factor by factor; it only has to pass 2 / ALPHA.
    let mut c = 1.0_f64;
    for i in 1..=small {
        c = c * (large + i) as f64 / i as f64;
        if 2.0 / c < ALPHA {
            return false;
        }
    }
    2.0 / c >= ALPHA
}

pub(super) fn verdict(
    a: &Sample,
    b: &Sample,
    welch: Option<&WelchTest>,
    q: &[QuantileDiff],
    noise: f64,
) -> Verdict {
    let band = format!("±{}%", trim_num(noise * 100.0));
    let mean_dir = match welch {
        Some(w) if a.mean() > 0.0 => direction(w.ci_low / a.mean(), w.ci_high / a.mean(), noise),
        _ => Direction::None,
    };
    let q_dirs: Vec<Direction> = q
        .iter()
        .map(|d| match (d.rel_low, d.rel_high) {
            (Some(l), Some(h)) => direction(l, h, noise),
            _ => Direction::None,
        })
        .collect();
    let dirs: Vec<Direction> = std::iter::once(mean_dir)
        .chain(q_dirs.iter().copied())
        .filter(|d| *d != Direction::None)
        .collect();
    let call = if dirs.is_empty() {
        "none"
    } else if dirs.iter().all(|d| *d == Direction::Slower) {
        "slower"
    } else if dirs.iter().all(|d| *d == Direction::Faster) {
        "faster"
    } else {
        "mixed"
    };
    let mut parts = Vec::new();
    if let (Some(w), true) = (welch, mean_dir != Direction::None) {
        let [d, l, h] = signed3(&[w.diff, w.ci_low, w.ci_high], 3);
        parts.push(format!(
            "{d} µs mean (95% CI {l} … {h}), p {}",
            p_text(w.p_value)
        ));
    }
    for (d, dir) in q.iter().zip(&q_dirs) {
        if *dir == Direction::None {
            continue;
        }
        if let (Some(r), Some(l), Some(h)) = (d.rel, d.rel_low, d.rel_high) {
            let [r, l, h] = signed3(&[r * 100.0, l * 100.0, h * 100.0], 2);
            let word = if call == "mixed" {
                if *dir == Direction::Slower {
                    " slower"
                } else {
                    " faster"
                }
            } else {
                ""
            };
            parts.push(format!(
                "{} {r}% (CI {l} … {h}%){word}",
                quantile_label(d.p)
            ));
        }
    }
    let (na, nb) = (a.len() as u64, b.len() as u64);
    let too_few = too_few_to_decide(na, nb);
    let call = if too_few { "too_few" } else { call };
    let text = match call {
        "too_few" => format!(
            "too few samples to decide: with {na} and {nb} events no test can reach p < 0.05 \
             whatever the data (4 and 4, 3 and 5, 2 and 8 are the fewest that can)"
        ),
        "none" => format!("no difference detected beyond {band}"),
        c => {
            let head = match c {
                "slower" => "B is slower",
                "faster" => "B is faster",
                _ => "B differs",
            };
            let mut t = format!("{head}: {}", parts.join("; "));
            if mean_dir == Direction::None {
                t.push_str(&format!("; the mean shows no difference beyond {band}"));
            }
            t
        }
    };
    Verdict {
        call: call.to_string(),
        mean: mean_dir,
        quantiles: q_dirs,
        text,
    }
}

/// `p < 2.2e-16` or `p = 0.0312`, as R prints it after "p-value".
pub(super) fn p_text(p: f64) -> String {
    let f = format_pvalue(p);
    if f.starts_with('<') {
        f
    } else {
        format!("= {f}")
    }
}

/// `0.5` is `p50`, `0.999` is `p99.9`.
pub fn quantile_label(p: f64) -> String {
    format!("p{}", trim_num(p * 100.0))
}

/// Three numbers formatted together as R's `format(x, digits)` would (common decimals), each with
/// an explicit sign and no padding.
pub(super) fn signed3(v: &[f64; 3], digits: usize) -> [String; 3] {
    let f = format_r(&zapsmall(v), digits);
    let mut out: [String; 3] = Default::default();
    for (i, s) in f.iter().enumerate() {
        let s = s.trim();
        out[i] = if s.starts_with('-') {
            s.replacen('-', "−", 1)
        } else {
            format!("+{s}")
        };
    }
    out
}
