//! The normal and Student t distributions as R computes them (`pnorm`, `pt`, `qt`), and p-values
//! printed as R's `print.htest` prints them.
//!
//! `pt` follows R's nmath/pt.c: the regularized incomplete beta function at every df (R 4.2 no
//! longer switches to a normal approximation for large df; the reference values for df = 400001 and
//! 7977922 show it), so Welch tests on millions of samples give R's p-values. `erfc` and `ln Γ` come
//! from the `statrs` crate; the incomplete beta function is computed here from `x` and `1 - x` given
//! separately, with `ln B(a, b)` from Stirling differences when one argument is huge (statrs's
//! version lost 8 digits at df = 8e6). Quantiles are found by bisection on `pt` to full precision.

use statrs::function::{erf::erfc, gamma::ln_gamma};

/// Lower tail of the standard normal distribution, `P(Z <= z)` (R's `pnorm(z)`).
pub fn pnorm(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// Upper tail of the standard normal distribution, `P(Z > z)` (R's `pnorm(z, lower.tail = FALSE)`).
pub fn pnorm_upper(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// `P(T <= -|t|)` for Student's t with `df` degrees of freedom: the small tail, computed directly
/// (never as 1 minus something) so tiny p-values keep their relative precision.
fn pt_small_tail(t: f64, df: f64) -> f64 {
    let x = t.abs();
    if df > 1e300 {
        return pnorm_upper(x);
    }
    // P(|T| > x) = I_{df / (df + x^2)}(df / 2, 1 / 2); half of it is one tail.
    let nx = 1.0 + (x / df) * x;
    if nx > 1e100 {
        // R's asymptotic branch, where df / (df + x^2) underflows.
        let lval = -0.5 * df * (2.0 * x.ln() - df.ln()) - ln_beta(0.5 * df, 0.5) - (0.5 * df).ln();
        return lval.exp() / 2.0;
    }
    // Both df / (df + x^2) and its complement x^2 / (df + x^2), each without cancellation.
    let (w, v) = if x * x < df {
        let r = (x / df) * x;
        (1.0 / (1.0 + r), r / (1.0 + r))
    } else {
        let r = df / x / x;
        (r / (1.0 + r), 1.0 / (1.0 + r))
    };
    beta_reg(df / 2.0, 0.5, w, v) / 2.0
}

/// `ln Γ(z + a) - ln Γ(z)` for `z >= 15`, from Stirling's series, without the cancellation of two
/// huge log-gammas (at df = 8e6 they are 6e7 each, and their difference lost 8 digits).
fn ln_gamma_diff(z: f64, a: f64) -> f64 {
    // delta(z) = ln Γ(z) - ((z - 1/2) ln z - z + ln(2 pi) / 2), the Stirling remainder.
    fn delta(z: f64) -> f64 {
        let z2 = z * z;
        (1.0 / 12.0 - (1.0 / 360.0 - (1.0 / 1260.0 - 1.0 / (1680.0 * z2)) / z2) / z2) / z
    }
    (z - 0.5) * (a / z).ln_1p() + a * (z + a).ln() - a + delta(z + a) - delta(z)
}

/// `ln B(a, b)`, accurate when one argument is huge and the other small.
fn ln_beta(a: f64, b: f64) -> f64 {
    let (small, big) = if a < b { (a, b) } else { (b, a) };
    if big >= 15.0 {
        ln_gamma(small) - ln_gamma_diff(big, small)
    } else {
        ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b)
    }
}

/// The regularized incomplete beta function `I_x(a, b)`, given `x` and `y = 1 - x` separately so
/// neither loses digits near 0 or 1: the continued fraction of Numerical Recipes (3rd ed., 6.4,
/// modified Lentz), evaluated on whichever of `(a, b, x)` and `(b, a, y)` converges fast, with the
/// prefactor `x^a y^b / (a B(a, b))` from [`ln_beta`].
fn beta_reg(a: f64, b: f64, x: f64, y: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if y <= 0.0 {
        return 1.0;
    }
    let swap = x > (a + 1.0) / (a + b + 2.0);
    let (a, b, x, y) = if swap { (b, a, y, x) } else { (a, b, x, y) };
    let ln_front = a * x.ln() + b * y.ln() - ln_beta(a, b) - a.ln();
    let front = ln_front.exp();
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..100_000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() <= f64::EPSILON {
            break;
        }
    }
    let v = front * h;
    if swap {
        1.0 - v
    } else {
        v
    }
}

/// Lower tail of Student's t distribution, `P(T <= t)` (R's `pt(t, df)`). `df > 0`.
pub fn pt(t: f64, df: f64) -> f64 {
    let small = pt_small_tail(t, df);
    if t <= 0.0 {
        small
    } else {
        1.0 - small
    }
}

/// Two-sided p-value of a t statistic: `2 * pt(-|t|, df)`, as R's `t.test` reports it.
pub fn pt_two_sided(t: f64, df: f64) -> f64 {
    (2.0 * pt_small_tail(t, df)).min(1.0)
}

/// The quantile `q` with `pt(q, df) = p` (R's `qt(p, df)`), for `0 < p < 1` and `df > 0`; found by
/// bisection on [`pt`] until the bracket stops shrinking, so it inverts R's `pt` to the last bit.
pub fn qt(p: f64, df: f64) -> f64 {
    if p.is_nan() || p <= 0.0 || p >= 1.0 || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if p == 0.5 {
        return 0.0;
    }
    // Solve on the upper half: small tail(q) = min(p, 1 - p), then give q its sign.
    let target = if p > 0.5 { 1.0 - p } else { p };
    let mut hi = 1.0;
    while pt_small_tail(hi, df) > target && hi < 1e300 {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..2000 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if pt_small_tail(mid, df) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let q = 0.5 * (lo + hi);
    if p > 0.5 {
        q
    } else {
        -q
    }
}

/// A p-value as R's `print.htest` prints it: `< 2.2e-16` below machine epsilon, else
/// `format.pval(p, digits = 4)` (4 significant digits, scientific notation when shorter).
pub fn format_pvalue(p: f64) -> String {
    if p.is_nan() {
        return "NA".into();
    }
    if p < f64::EPSILON {
        return "< 2.2e-16".into();
    }
    super::format::format_r(&[p], 4)
        .into_iter()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::reference::{close, reference_lines};

    #[test]
    fn pt_and_qt_match_r() {
        let mut seen = 0;
        for fields in reference_lines().filter(|f| f[0] == "pt") {
            let v: Vec<f64> = fields[1..].iter().map(|s| s.parse().unwrap()).collect();
            let df = v[0];
            for (i, t) in [-0.3, -2.5, -9.0].into_iter().enumerate() {
                close(pt(t, df), v[1 + i], 1e-9, &format!("pt({t}, {df})"));
            }
            close(qt(0.975, df), v[4], 1e-9, &format!("qt(0.975, {df})"));
            close(qt(0.025, df), -v[4], 1e-9, &format!("qt(0.025, {df})"));
            seen += 1;
        }
        assert_eq!(seen, 6);
    }

    #[test]
    fn pnorm_matches_r() {
        let line = reference_lines().find(|f| f[0] == "pnorm").unwrap();
        for (z, want) in [-1.0, -5.0, -20.0, -37.0].iter().zip(&line[1..]) {
            close(
                pnorm(*z),
                want.parse().unwrap(),
                1e-9,
                &format!("pnorm({z})"),
            );
            close(pnorm_upper(-z), want.parse().unwrap(), 1e-9, "upper tail");
        }
    }

    #[test]
    fn pvalues_print_like_r() {
        // sapply(c(0.5, 0.04321987, 1.234e-5, 3e-17), format.pval, digits = 4)
        let line = crate::stats::reference::REFERENCE
            .lines()
            .find(|l| l.starts_with("fmt|"))
            .unwrap();
        let want: Vec<&str> = line.split('|').skip(1).collect();
        let got: Vec<String> = [0.5, 0.04321987, 1.234e-5, 3e-17]
            .into_iter()
            .map(format_pvalue)
            .collect();
        assert_eq!(got, want);
    }
}
