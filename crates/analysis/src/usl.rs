//! The Universal Scalability Law fit of a concurrency sweep: `X(N) = λN / (1 + σ(N−1) + κN(N−1))`
//! by non-linear least squares with the bounds σ, κ ≥ 0 (`dbscope sweep`, issue 15).
//!
//! Method: Gunther's USL (*Guerrilla Capacity Planning*, 2007, ch. 4–6). The starting point is the
//! linearised form `N/X = 1/λ + (σ/λ)(N−1) + (κ/λ)N(N−1)` solved by ordinary least squares; the
//! fit itself is Levenberg–Marquardt (Marquardt's diagonal scaling, so λ in thousands and κ in
//! ten-thousandths step alike) on the residuals of X. The bounds are exact: every choice of which
//! bounded parameters sit at 0 (four at most) is fitted with the others free and clamped at 0, and
//! the smallest residual sum of squares wins — the KKT active-set search, cheap with three
//! parameters. Checked against R's `nls(…, algorithm = "port", lower = 0)` on the data sets in
//! `reference/r/usl` (script `reference/r/usl.R`, output `usl.out`).
//!
//! Cost: O(points × iterations), at most 4 × 500 iterations of a 3×3 solve.

use serde::Serialize;

/// Why no fit could be made.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum UslError {
    /// Fewer than two distinct concurrency levels.
    #[error(
        "a scalability fit needs throughput at two concurrency levels at least (three to estimate κ); got {0}"
    )]
    TooFewLevels(usize),
    /// A concurrency level below 1 or a throughput that is negative or not a number.
    #[error("point {index}: {what}")]
    BadPoint {
        /// Index of the point, from 0.
        index: usize,
        /// What is wrong with it.
        what: String,
    },
    /// Every throughput is 0.
    #[error("every point has zero throughput: nothing to fit")]
    NoThroughput,
}

/// A fitted Universal Scalability Law.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct UslFit {
    /// λ: throughput of one session (the ideal slope), in the data's unit (operations/s).
    pub lambda: f64,
    /// σ: contention (the serial fraction), ≥ 0.
    pub sigma: f64,
    /// κ: coherency (crosstalk) cost, ≥ 0.
    pub kappa: f64,
    /// Concurrency of peak throughput, `√((1−σ)/κ)`; `None` when κ = 0 (throughput never falls).
    pub peak_n: Option<f64>,
    /// Throughput the fit predicts at `peak_n` (or its limit λ/σ when κ = 0 and σ > 0).
    pub peak_x: Option<f64>,
    /// Coefficient of determination, 1 − RSS/TSS; `None` when every throughput is the same.
    pub r_squared: Option<f64>,
    /// Residual sum of squares.
    pub rss: f64,
    /// What the fit could not do with these data (e.g. κ fixed at 0 with two levels).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl UslFit {
    /// Throughput the fit predicts at concurrency `n`.
    pub fn predict(&self, n: f64) -> f64 {
        usl(n, [self.lambda, self.sigma, self.kappa])
    }
}

fn usl(n: f64, [l, s, k]: [f64; 3]) -> f64 {
    l * n / (1.0 + s * (n - 1.0) + k * n * (n - 1.0))
}

/// Fits the USL to `(N, X)` points (N sessions, X throughput; repeated N allowed).
pub fn fit(points: &[(f64, f64)]) -> Result<UslFit, UslError> {
    for (index, &(n, x)) in points.iter().enumerate() {
        if !(n.is_finite() && n >= 1.0) {
            return Err(UslError::BadPoint {
                index,
                what: format!("concurrency {n} (expected a number ≥ 1)"),
            });
        }
        if !(x.is_finite() && x >= 0.0) {
            return Err(UslError::BadPoint {
                index,
                what: format!("throughput {x} (expected a finite number ≥ 0)"),
            });
        }
    }
    let mut levels: Vec<f64> = points.iter().map(|p| p.0).collect();
    levels.sort_by(f64::total_cmp);
    levels.dedup();
    if levels.len() < 2 {
        return Err(UslError::TooFewLevels(levels.len()));
    }
    if points.iter().all(|p| p.1 == 0.0) {
        return Err(UslError::NoThroughput);
    }
    let mut notes = Vec::new();
    // Free parameters: λ always; σ and κ unless fixed at their bound 0.
    let mut candidates: Vec<[bool; 3]> = vec![[true, true, false], [true, false, false]];
    if levels.len() >= 3 {
        candidates.extend([[true, true, true], [true, false, true]]);
    } else {
        notes.push("two concurrency levels: κ fixed at 0 (three are needed to estimate it)".into());
    }
    let start = linearised_start(points);
    let mut best: Option<([f64; 3], f64, usize)> = None;
    for free in candidates {
        let mut p0 = start;
        for i in 1..3 {
            if !free[i] {
                p0[i] = 0.0;
            }
        }
        let (p, rss) = levenberg_marquardt(points, p0, free);
        if best.is_none_or(|(_, b, _)| rss < b) {
            best = Some((p, rss, free.iter().filter(|f| **f).count()));
        }
    }
    let ([lambda, sigma, kappa], rss, fitted) = best.expect("at least one candidate");
    if points.len() <= fitted {
        notes.push(format!(
            "{} points for {fitted} parameters: the curve can pass through every point, so R² \
             tells nothing; measure more session counts or --repeat",
            points.len()
        ));
    }
    let mean = points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64;
    let tss: f64 = points.iter().map(|p| (p.1 - mean).powi(2)).sum();
    let r_squared = (tss > 0.0).then(|| 1.0 - rss / tss);
    if r_squared.is_none() {
        notes.push("every throughput is the same: R² is undefined".into());
    }
    let (peak_n, peak_x) = if kappa > 0.0 {
        let n = ((1.0 - sigma) / kappa).max(0.0).sqrt().max(1.0);
        (Some(n), Some(usl(n, [lambda, sigma, kappa])))
    } else if sigma > 0.0 {
        notes.push(format!(
            "κ = 0: throughput never falls; it levels off towards λ/σ = {:.1}",
            lambda / sigma
        ));
        (None, Some(lambda / sigma))
    } else {
        notes.push("σ = κ = 0: linear scaling over the measured range".into());
        (None, None)
    };
    Ok(UslFit {
        lambda,
        sigma,
        kappa,
        peak_n,
        peak_x,
        r_squared,
        rss,
        notes,
    })
}

/// λ, σ, κ from ordinary least squares on `N/X = a + b(N−1) + cN(N−1)` (points with X > 0),
/// clamped into the bounds; λ from the best X/N when the line says nothing sensible.
fn linearised_start(points: &[(f64, f64)]) -> [f64; 3] {
    let mut ata = [[0.0; 3]; 3];
    let mut aty = [0.0; 3];
    for &(n, x) in points.iter().filter(|p| p.1 > 0.0) {
        let row = [1.0, n - 1.0, n * (n - 1.0)];
        for i in 0..3 {
            for j in 0..3 {
                ata[i][j] += row[i] * row[j];
            }
            aty[i] += row[i] * n / x;
        }
    }
    let best_slope = points.iter().map(|p| p.1 / p.0).fold(0.0, f64::max);
    match solve3(ata, aty, [true; 3]) {
        Some([a, b, c]) if a > 0.0 => [1.0 / a, (b / a).max(0.0), (c / a).max(0.0)],
        _ => [best_slope, 0.0, 0.0],
    }
}

fn rss_of(points: &[(f64, f64)], p: [f64; 3]) -> f64 {
    points.iter().map(|&(n, x)| (x - usl(n, p)).powi(2)).sum()
}

/// Levenberg–Marquardt on the free parameters, each step clamped into λ > 0, σ, κ ≥ 0.
fn levenberg_marquardt(points: &[(f64, f64)], mut p: [f64; 3], free: [bool; 3]) -> ([f64; 3], f64) {
    let mut rss = rss_of(points, p);
    let mut mu = 1e-3;
    for _ in 0..500 {
        let mut jtj = [[0.0; 3]; 3];
        let mut jtr = [0.0; 3];
        let [l, s, k] = p;
        for &(n, x) in points {
            let d = 1.0 + s * (n - 1.0) + k * n * (n - 1.0);
            let f = l * n / d;
            let g = [n / d, -f * (n - 1.0) / d, -f * n * (n - 1.0) / d];
            let r = x - f;
            for i in 0..3 {
                for j in 0..3 {
                    jtj[i][j] += g[i] * g[j];
                }
                jtr[i] += g[i] * r;
            }
        }
        let mut improved = false;
        while mu < 1e16 {
            let mut a = jtj;
            for (i, row) in a.iter_mut().enumerate() {
                // Marquardt's scaling; the floor keeps a parameter with a zero column steerable.
                row[i] += mu * jtj[i][i].max(1e-300);
            }
            let Some(step) = solve3(a, jtr, free) else {
                mu *= 10.0;
                continue;
            };
            let mut q = p;
            for i in 0..3 {
                if free[i] {
                    q[i] += step[i];
                }
            }
            q[0] = q[0].max(f64::MIN_POSITIVE);
            q[1] = q[1].max(0.0);
            q[2] = q[2].max(0.0);
            let r2 = rss_of(points, q);
            if r2.is_finite() && r2 <= rss {
                let small = (0..3).all(|i| (q[i] - p[i]).abs() <= 1e-14 * p[i].abs().max(1e-300));
                let done = rss - r2 <= 1e-16 * rss || small;
                p = q;
                rss = r2;
                mu = (mu / 10.0).max(1e-12);
                improved = !done;
                break;
            }
            mu *= 10.0;
        }
        if !improved {
            break;
        }
    }
    (p, rss)
}

/// Solves `a x = b` over the `free` unknowns (the others are 0) by Gaussian elimination with
/// partial pivoting; `None` when singular.
fn solve3(a: [[f64; 3]; 3], b: [f64; 3], free: [bool; 3]) -> Option<[f64; 3]> {
    let idx: Vec<usize> = (0..3).filter(|&i| free[i]).collect();
    let m = idx.len();
    let mut aug: Vec<Vec<f64>> = idx
        .iter()
        .map(|&i| {
            let mut row: Vec<f64> = idx.iter().map(|&j| a[i][j]).collect();
            row.push(b[i]);
            row
        })
        .collect();
    for col in 0..m {
        let piv = (col..m).max_by(|&r, &s| aug[r][col].abs().total_cmp(&aug[s][col].abs()))?;
        if aug[piv][col] == 0.0 || !aug[piv][col].is_finite() {
            return None;
        }
        aug.swap(col, piv);
        for r in 0..m {
            if r != col {
                let factor = aug[r][col] / aug[col][col];
                let pivot_row = aug[col].clone();
                for (v, p) in aug[r][col..].iter_mut().zip(&pivot_row[col..]) {
                    *v -= factor * p;
                }
            }
        }
    }
    let mut x = [0.0; 3];
    for (r, &i) in idx.iter().enumerate() {
        x[i] = aug[r][m] / aug[r][r];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn reference() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../reference/r")
    }

    fn read_set(name: &str) -> Vec<(f64, f64)> {
        let text = std::fs::read_to_string(reference().join(format!("usl/{name}.csv"))).unwrap();
        text.lines()
            .skip(1)
            .map(|l| {
                let (n, x) = l.split_once(',').unwrap();
                (n.parse().unwrap(), x.parse().unwrap())
            })
            .collect()
    }

    /// R's `nls` (port, lower = 0) on each data set: `[λ, σ, κ, rss]` (reference/r/usl.out).
    fn r_fits() -> Vec<(String, [f64; 4])> {
        let text = std::fs::read_to_string(reference().join("usl.out")).unwrap();
        text.lines()
            .map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                let v = |i: usize| w[i].parse::<f64>().unwrap();
                (w[0].to_string(), [v(1), v(2), v(3), v(4)])
            })
            .collect()
    }

    fn close(a: f64, b: f64, rel: f64, abs: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(a.abs()) + abs
    }

    #[test]
    fn matches_r_nls_on_every_reference_set() {
        let fits = r_fits();
        assert_eq!(fits.len(), 5, "reference/r/usl.out lists five data sets");
        for (name, [l, s, k, rss]) in fits {
            let f = fit(&read_set(&name)).unwrap();
            assert!(
                close(f.lambda, l, 1e-6, 0.0),
                "{name}: λ {} vs R {l}",
                f.lambda
            );
            assert!(
                close(f.sigma, s, 1e-5, 1e-12),
                "{name}: σ {} vs R {s}",
                f.sigma
            );
            assert!(
                close(f.kappa, k, 1e-5, 1e-12),
                "{name}: κ {} vs R {k}",
                f.kappa
            );
            // Our residuals are never worse than R's (beyond rounding of R's printed digits).
            assert!(
                f.rss <= rss * (1.0 + 1e-9) + 1e-12,
                "{name}: rss {} vs R {rss}",
                f.rss
            );
        }
    }

    #[test]
    fn exact_data_recovers_the_parameters_and_the_peak() {
        let f = fit(&read_set("exact")).unwrap();
        assert!(close(f.lambda, 1000.0, 1e-9, 0.0));
        assert!(close(f.sigma, 0.05, 1e-8, 0.0));
        assert!(close(f.kappa, 0.001, 1e-8, 0.0));
        // √((1 − 0.05) / 0.001) = 30.82…
        assert!(close(
            f.peak_n.unwrap(),
            (0.95f64 / 0.001).sqrt(),
            1e-8,
            0.0
        ));
        assert!(f.r_squared.unwrap() > 0.999_999_999);
    }

    #[test]
    fn kappa_at_its_bound_has_no_peak() {
        let f = fit(&read_set("bound")).unwrap();
        assert_eq!(f.kappa, 0.0);
        assert_eq!(f.peak_n, None);
        assert!(f.notes.iter().any(|n| n.contains("κ = 0")), "{:?}", f.notes);
    }

    #[test]
    fn one_level_is_a_clear_error() {
        assert_eq!(fit(&[(4.0, 100.0)]), Err(UslError::TooFewLevels(1)));
        assert_eq!(
            fit(&[(4.0, 100.0), (4.0, 110.0)]),
            Err(UslError::TooFewLevels(1))
        );
        assert_eq!(fit(&[]), Err(UslError::TooFewLevels(0)));
        let e = fit(&[(0.0, 1.0), (1.0, 2.0)]).unwrap_err().to_string();
        assert!(e.contains("point 0") && e.contains("≥ 1"), "{e}");
        let e = fit(&[(1.0, f64::NAN), (2.0, 2.0)]).unwrap_err().to_string();
        assert!(e.contains("point 0") && e.contains("throughput"), "{e}");
        assert_eq!(fit(&[(1.0, 0.0), (2.0, 0.0)]), Err(UslError::NoThroughput));
    }

    #[test]
    fn flat_throughput_fits_without_nan() {
        let pts: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0].iter().map(|&n| (n, 500.0)).collect();
        let f = fit(&pts).unwrap();
        for v in [f.lambda, f.sigma, f.kappa, f.rss] {
            assert!(v.is_finite(), "{f:?}");
        }
        assert_eq!(f.r_squared, None);
        for &(n, x) in &pts {
            assert!(close(f.predict(n), x, 1e-6, 0.0), "{f:?}");
        }
    }

    #[test]
    fn two_levels_fix_kappa_at_zero() {
        let f = fit(&[(1.0, 100.0), (2.0, 180.0)]).unwrap();
        assert_eq!(f.kappa, 0.0);
        assert!(close(f.lambda, 100.0, 1e-9, 0.0) && close(f.sigma, 1.0 / 9.0, 1e-8, 0.0));
        assert!(f.notes.iter().any(|n| n.contains("two concurrency levels")));
    }

    /// As many points as the fit's free parameters: it passes through them all and R² = 1
    /// means nothing, which the fit says; with more points it does not.
    #[test]
    fn as_many_points_as_parameters_is_said() {
        let three = [(1.0, 1726.4), (2.0, 1430.3), (4.0, 1228.7)];
        let f = fit(&three).unwrap();
        assert!(f.r_squared.unwrap() > 0.999_999, "{f:?}");
        assert!(
            f.notes
                .iter()
                .any(|n| n.contains("3 points for 3 parameters")),
            "{:?}",
            f.notes
        );
        let two = fit(&[(1.0, 100.0), (2.0, 180.0)]).unwrap();
        assert!(two
            .notes
            .iter()
            .any(|n| n.contains("2 points for 2 parameters")));
        let five = fit(&[
            (1.0, 1000.0),
            (2.0, 1800.0),
            (4.0, 2900.0),
            (8.0, 3300.0),
            (16.0, 2800.0),
        ])
        .unwrap();
        assert!(
            !five.notes.iter().any(|n| n.contains("parameters")),
            "{:?}",
            five.notes
        );
    }

    #[test]
    fn linear_scaling_has_zero_sigma_and_kappa() {
        let pts: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0]
            .iter()
            .map(|&n| (n, 250.0 * n))
            .collect();
        let f = fit(&pts).unwrap();
        assert!(close(f.lambda, 250.0, 1e-9, 0.0));
        assert!(f.sigma < 1e-9 && f.kappa < 1e-9, "{f:?}");
        assert!(f.r_squared.unwrap() > 0.999_999);
    }

    proptest::proptest! {
        #[test]
        fn never_nan(xs in proptest::collection::vec(0.0f64..1e7, 2..8)) {
            let pts: Vec<(f64, f64)> = xs.iter().enumerate().map(|(i, &x)| ((1u32 << i) as f64, x)).collect();
            if let Ok(f) = fit(&pts) {
                proptest::prop_assert!(f.lambda.is_finite() && f.sigma.is_finite() && f.kappa.is_finite());
                proptest::prop_assert!(f.sigma >= 0.0 && f.kappa >= 0.0 && f.rss.is_finite());
                proptest::prop_assert!(f.r_squared.is_none_or(|r| r.is_finite()));
                proptest::prop_assert!(f.peak_n.is_none_or(|n| n.is_finite()));
            }
        }
    }
}
