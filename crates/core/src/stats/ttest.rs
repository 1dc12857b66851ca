//! Welch's two-sample t-test exactly as R's `t.test(x, y)` computes it (unequal variances):
//! statistic, Welch–Satterthwaite degrees of freedom, two-sided p-value and the 95% confidence
//! interval of the difference in means.
//!
//! Source: R 4.2.2 `stats:::t.test.default` (Welch 1947; Satterthwaite 1946). Cost: O(1) on two
//! [`Sample`]s, whose construction already computed mean and variance.

use super::dist::{pt_two_sided, qt};
use super::sample::Sample;
use crate::error::{Error, Result};

/// The result of a Welch two-sample t-test of `x` against `y` (the difference is `x - y`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct WelchTest {
    /// Mean of `x`.
    pub mean_x: f64,
    /// Mean of `y`.
    pub mean_y: f64,
    /// `mean_x - mean_y`.
    pub diff: f64,
    /// The t statistic.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// Confidence level of the interval (0.95 by default).
    pub conf_level: f64,
    /// Lower end of the confidence interval of `mean_x - mean_y`.
    pub ci_low: f64,
    /// Upper end of the confidence interval of `mean_x - mean_y`.
    pub ci_high: f64,
    /// Standard error of the difference.
    pub stderr: f64,
}

/// Welch's t-test of `x` against `y` with a 95% confidence interval (R's `t.test(x, y)`).
pub fn welch_t_test(x: &Sample, y: &Sample) -> Result<WelchTest> {
    welch_t_test_level(x, y, 0.95)
}

/// Welch's t-test with a given confidence level in `(0, 1)`.
///
/// Like R, it refuses data that are essentially constant (the standard error is below
/// `10 * eps * max(|mean_x|, |mean_y|)`), where the statistic would be meaningless.
pub fn welch_t_test_level(x: &Sample, y: &Sample, conf_level: f64) -> Result<WelchTest> {
    if !(conf_level > 0.0 && conf_level < 1.0) {
        return Err(Error::InvalidInput(format!(
            "confidence level {conf_level} is not between 0 and 1"
        )));
    }
    let (nx, ny) = (x.len() as f64, y.len() as f64);
    let (mx, my) = (x.mean(), y.mean());
    let stderrx = (x.var() / nx).sqrt();
    let stderry = (y.var() / ny).sqrt();
    let stderr = (stderrx * stderrx + stderry * stderry).sqrt();
    let df = stderr.powi(4) / (stderrx.powi(4) / (nx - 1.0) + stderry.powi(4) / (ny - 1.0));
    if stderr.is_nan() || stderr < 10.0 * f64::EPSILON * mx.abs().max(my.abs()) {
        return Err(Error::InvalidInput(
            "data are essentially constant: the t-test needs some variation".into(),
        ));
    }
    let t = (mx - my) / stderr;
    let p_value = pt_two_sided(t, df);
    let q = qt(1.0 - (1.0 - conf_level) / 2.0, df);
    // R: cint <- tstat + c(-cint, cint); cint * stderr
    let ci_low = (t - q) * stderr;
    let ci_high = (t + q) * stderr;
    Ok(WelchTest {
        mean_x: mx,
        mean_y: my,
        diff: mx - my,
        t,
        df,
        p_value,
        conf_level,
        ci_low,
        ci_high,
        stderr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::dist::format_pvalue;
    use crate::stats::reference::{close, close_p, pair, text, value, values, PAIRS};

    #[test]
    fn matches_r_t_test() {
        for name in PAIRS {
            let (a, b) = pair(name);
            let (a, b) = (Sample::new(a).unwrap(), Sample::new(b).unwrap());
            let w = welch_t_test(&b, &a).unwrap();
            close(w.t, value(name, "t"), 1e-9, &format!("{name} t"));
            close(w.df, value(name, "df"), 1e-9, &format!("{name} df"));
            close_p(w.p_value, value(name, "t_p"), 1e-6, &format!("{name} p"));
            close(
                w.ci_low,
                value(name, "ci_lo"),
                1e-9,
                &format!("{name} ci low"),
            );
            close(
                w.ci_high,
                value(name, "ci_hi"),
                1e-9,
                &format!("{name} ci high"),
            );
            close(
                w.mean_x,
                value(name, "mean_b"),
                1e-12,
                &format!("{name} mean"),
            );
            close(a.sd(), value(name, "sd_a"), 1e-12, &format!("{name} sd"));
            assert_eq!(format_pvalue(w.p_value), text(name, "t_p_fmt"), "{name}");
            let s = a.summary();
            let want = values(name, "summary_a");
            for (got, want) in s.six().iter().zip(&want) {
                close(*got, *want, 1e-12, &format!("{name} summary"));
            }
            for (p, want) in [0.5, 0.9, 0.99, 0.999]
                .iter()
                .zip(values(name, "quantiles_b"))
            {
                close(b.quantile(*p), want, 1e-12, &format!("{name} quantile {p}"));
            }
        }
    }

    #[test]
    fn constant_data_is_refused() {
        let a = Sample::new(vec![5.0; 10]).unwrap();
        let e = welch_t_test(&a, &a).unwrap_err().to_string();
        assert!(e.contains("essentially constant"), "{e}");
    }
}
