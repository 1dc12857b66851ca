//! Printing numbers the way R prints them: `format(x, digits = d)` ([`format_r`]), `zapsmall`
//! ([`zapsmall`]) and the two lines of `print(summary(x))` ([`r_summary_lines`]). A leaf of
//! `stats`: `dist` formats p-values with it, and `stats` re-exports it.

/// R's `zapsmall(x)` with its default 7 digits: rounds every value to
/// `max(0, 7 - ceiling(log10(max |x|)))` decimals, as `print(summary(x))` does before formatting.
pub fn zapsmall(values: &[f64]) -> Vec<f64> {
    let mx = values
        .iter()
        .filter(|v| v.is_finite())
        .fold(0.0f64, |m, v| m.max(v.abs()));
    if mx <= 0.0 {
        return values.to_vec();
    }
    let digits = (7.0 - mx.log10().ceil()).max(0.0) as i32;
    values.iter().map(|&v| round_half_even(v, digits)).collect()
}

/// Rounds to `digits` decimals, halves to even (as R's `round`, IEC 60559).
fn round_half_even(x: f64, digits: i32) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let p = 10f64.powi(digits);
    let y = x * p;
    let r = y.round();
    let r = if (y - y.trunc()).abs() == 0.5 && r % 2.0 != 0.0 {
        r - y.signum()
    } else {
        r
    };
    r / p
}

/// Significant digits (at most `digits`), decimal exponent, and whether rounding widened the number
/// (9.9996 to 4 digits is 10.00): R's `scientific()` in src/main/format.c.
fn scientific(x: f64, digits: usize) -> (i32, i32, bool) {
    let s = format!("{:.*e}", digits - 1, x.abs());
    let (mantissa, exp) = s.split_once('e').expect("e format");
    let kpower: i32 = exp.parse().expect("exponent");
    let nsig = mantissa
        .trim_end_matches('0')
        .trim_end_matches('.')
        .replace('.', "")
        .len() as i32;
    let roundingwidens = kpower > 0 && x.abs() < 10f64.powi(kpower);
    (nsig, kpower, roundingwidens)
}

/// Formats numbers as R's `format(x, digits = d)` does (R's `formatReal`, src/main/format.c, with
/// `scipen = 0`): every value to `d` significant digits with one common number of decimals, or in
/// scientific notation when that is narrower. All strings have the same width, right-justified.
///
/// `format_r(&[1.0, 452.0, 542.4, 3999.0], 4)` gives `"   1.0"`, `" 452.0"`, `" 542.4"`, `"3999.0"`.
pub fn format_r(values: &[f64], digits: usize) -> Vec<String> {
    let digits = digits.clamp(1, 15);
    let neg = values.iter().any(|v| *v < 0.0 && v.is_finite()) as i32;
    let (mut rgt, mut mxl, mut mnl, mut mxsl, mut mxns) =
        (i32::MIN, i32::MIN, i32::MAX, i32::MIN, i32::MIN);
    for &x in values.iter().filter(|v| v.is_finite()) {
        let (nsig, kpower, widens) = if x == 0.0 {
            (1, 0, false)
        } else {
            scientific(x, digits)
        };
        let left = kpower + 1 - widens as i32;
        let sleft = neg + if left <= 0 { 1 } else { left };
        let right = nsig - left;
        rgt = rgt.max(right);
        mxl = mxl.max(left);
        mnl = mnl.min(left);
        mxsl = mxsl.max(sleft);
        mxns = mxns.max(nsig);
    }
    let mut out: Vec<String>;
    if mxns == i32::MIN {
        out = values.iter().map(|v| na_or_inf(*v)).collect();
    } else {
        if mxl < 0 {
            mxsl = 1 + neg;
        }
        let rgt = rgt.max(0);
        let width_fixed = mxsl + rgt + (rgt != 0) as i32;
        let e = if mxl > 100 || mnl <= -99 { 2 } else { 1 };
        let d = mxns - 1;
        let width_sci = neg + (d > 0) as i32 + d + 4 + e;
        out = if width_fixed <= width_sci {
            values
                .iter()
                .map(|&v| {
                    if v.is_finite() {
                        format!("{:.*}", rgt as usize, v)
                    } else {
                        na_or_inf(v)
                    }
                })
                .collect()
        } else {
            values
                .iter()
                .map(|&v| {
                    if v.is_finite() {
                        format_sci(v, d as usize, e as usize)
                    } else {
                        na_or_inf(v)
                    }
                })
                .collect()
        };
    }
    let w = out.iter().map(|s| s.len()).max().unwrap_or(0);
    for s in &mut out {
        *s = format!("{s:>w$}");
    }
    out
}

fn na_or_inf(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v > 0.0 {
        "Inf".into()
    } else {
        "-Inf".into()
    }
}

/// C's `%.{d}e` with at least `e + 1` exponent digits (R prints `1.0e+07`).
fn format_sci(v: f64, d: usize, e: usize) -> String {
    let s = format!("{:.*e}", d, v);
    let (m, exp) = s.split_once('e').expect("e format");
    let exp: i32 = exp.parse().expect("exponent");
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{m}e{sign}{:0w$}", exp.abs(), w = e + 1)
}

/// The two lines R prints for `summary(x)`: the column names and the values, every column
/// right-justified to the widest entry (R's `print.summaryDefault`: `zapsmall`, then `format` with
/// 4 significant digits, then `print.table`).
pub fn r_summary_lines(six: [f64; 6]) -> (String, String) {
    const NAMES: [&str; 6] = ["Min.", "1st Qu.", "Median", "Mean", "3rd Qu.", "Max."];
    let values = format_r(&zapsmall(&six), 4);
    // print.table gives every column of a named vector one common width.
    let w = values
        .iter()
        .map(|v| v.len())
        .chain(NAMES.iter().map(|n| n.len()))
        .max()
        .unwrap_or(0);
    let mut head = Vec::new();
    let mut line = Vec::new();
    for (name, v) in NAMES.iter().zip(&values) {
        head.push(format!("{name:>w$}"));
        line.push(format!("{v:>w$}"));
    }
    (head.join(" "), line.join(" "))
}
