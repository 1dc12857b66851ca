//! Printing numbers the way R prints them: `format(x, digits = d)` ([`format_r`]), `zapsmall`
//! ([`zapsmall`]) and the two lines of `print(summary(x))` ([`r_summary_lines`]). A leaf of
//! `stats`: `dist` formats p-values with it, and `stats` re-exports it.

use super::ld::Ld;

/// R's `zapsmall(x)` with its default 7 digits (R 4.x): `round(x, max(0, 7 - log10(max |x|)))`
/// over the finite values, as `print(summary(x))` does before formatting. `round` takes
/// `floor(digits + 0.5)` decimals of the non-integer `digits` (not `7 - ceiling(...)`, which drops
/// a decimal whenever the largest value is below 10^k·√10 and so rounds twice).
pub fn zapsmall(values: &[f64]) -> Vec<f64> {
    let mx = values
        .iter()
        .filter(|v| v.is_finite())
        .fold(0.0f64, |m, v| m.max(v.abs()));
    let digits = if mx > 0.0 {
        (7.0 - mx.log10()).max(0.0)
    } else {
        7.0
    };
    values.iter().map(|&v| fround(v, digits)).collect()
}

/// R's `round(x, digits)` as R 4.x computes it (src/nmath/fround.c, the algorithm of R 4.0.0):
/// `floor(digits + 0.5)` decimals; of the two candidates `floor(x·10^d)/10^d` and
/// `ceil(x·10^d)/10^d` the one nearer to `x` in double arithmetic, the even one on a tie; `x` itself
/// when it has no more digits than a double holds.
pub(crate) fn fround(x: f64, digits: f64) -> f64 {
    const MAX_DIGITS: f64 = 308.0;
    if x.is_nan() || digits.is_nan() {
        return x + digits;
    }
    if !x.is_finite() || digits > MAX_DIGITS + 15.0 || x == 0.0 {
        return x;
    }
    if digits < -MAX_DIGITS {
        return 0.0;
    }
    if digits == 0.0 {
        return x.round_ties_even();
    }
    let dig = (digits + 0.5).floor() as i32;
    let (sgn, x) = if x < 0.0 { (-1.0, -x) } else { (1.0, x) };
    if dig > 0 && f64::from(dig) + (logb(x) + 0.5) * std::f64::consts::LOG10_2 > 15.0 {
        return sgn * x;
    }
    let (xd, xu, i10) = if f64::from(dig) <= MAX_DIGITS {
        let pow10 = r_pow_di(10.0, dig);
        let x10 = pow10 * x;
        let i10 = x10.floor();
        (i10 / pow10, x10.ceil() / pow10, i10)
    } else {
        // Beyond 10^308: two factors (R uses long double here; these numbers are below 1e-300).
        let p10 = r_pow_di(10.0, dig - 308);
        let pow10 = r_pow_di(10.0, 308);
        let x10 = (x * pow10) * p10;
        let i10 = x10.floor();
        (i10 / pow10 / p10, x10.ceil() / pow10 / p10, i10)
    };
    let du = xu - x;
    let dd = x - xd;
    sgn * if du < dd || (du == dd && i10 % 2.0 == 1.0) {
        xu
    } else {
        xd
    }
}

/// C's `logb`: the binary exponent of a finite non-zero `x`, as a double.
fn logb(x: f64) -> f64 {
    let e = ((x.to_bits() >> 52) & 0x7ff) as i32;
    if e == 0 {
        // Subnormal.
        x.abs().log2().floor()
    } else {
        f64::from(e - 1023)
    }
}

/// R's `R_pow_di(x, n)`: `x^n` by repeated squaring, in doubles (src/nmath/mlutils.c).
fn r_pow_di(mut x: f64, n: i32) -> f64 {
    let mut xn = 1.0;
    let neg = n < 0;
    let mut n = n.unsigned_abs();
    while n != 0 {
        if n & 1 == 1 {
            xn *= x;
        }
        n >>= 1;
        if n != 0 {
            x *= x;
        }
    }
    if neg {
        1.0 / xn
    } else {
        xn
    }
}

/// 10^0 … 10^27 as doubles (R's `(double) tbl[i]`).
const POW10: [f64; 28] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27,
];

/// For a finite non-zero `x` printed with `digits` significant digits: the number of significant
/// digits it needs (at most `digits`), its decimal exponent, and whether rounding widens it
/// (9996 to 3 digits is 1e+04 in scientific notation but 9996 in fixed). R's `scientific()` in
/// src/main/format.c, with its `long double` scaling emulated ([`Ld`]).
fn scientific(x: f64, digits: i32) -> (i32, i32, bool) {
    let r = x.abs();
    if digits >= 16 {
        // R's format_via_sprintf.
        let (nsig, kpower) = sprintf_digits(r, digits);
        return (nsig, kpower, false);
    }
    let mut kp = r.log10().floor() as i32 - digits + 1;
    let alpha = if kp.abs() <= 27 {
        let mut r_prec = match kp {
            0 => Ld::from_f64(r),
            k if k > 0 => Ld::f64_over_pow10(r, k as u32),
            k => Ld::f64_times_pow10(r, (-k) as u32),
        };
        if r_prec.lt_u64(10u64.pow((digits - 1) as u32)) {
            r_prec = r_prec.times10();
            kp -= 1;
        }
        r_prec.nearbyint()
    } else {
        // R divides by powl(10, kp) here (|x| beyond 1e±27): the exact decimal digits instead,
        // which differ from R's only when x·10^-kp lies within a long double's rounding of a tie.
        let (_, k) = sprintf_digits(r, digits);
        let s = format!("{:.*e}", (digits - 1) as usize, r);
        let mantissa = s.split_once('e').map_or("0", |(m, _)| m).replace('.', "");
        kp = k - digits + 1;
        mantissa.parse::<f64>().unwrap_or(0.0)
    };
    let mut alpha = alpha;
    let mut nsig = digits;
    for _ in 0..digits {
        alpha /= 10.0;
        if alpha == alpha.floor() {
            nsig -= 1;
        } else {
            break;
        }
    }
    if nsig == 0 && digits > 0 {
        nsig = 1;
        kp += 1;
    }
    let kpower = kp + digits - 1;
    let rgt = (digits - kpower).clamp(0, 27);
    let fuzz = 0.5 / POW10[rgt as usize];
    let widens = kpower > 0 && kpower <= 27 && {
        // r < tbl[kpower] - fuzz, in long double.
        let bound = Ld::f64_times_pow10(1.0, kpower as u32).sub(Ld::from_f64(fuzz));
        let d = Ld::from_f64(r).sub(bound);
        d.is_negative()
    };
    (nsig, kpower, widens)
}

/// Significant digits (at most `digits`) and decimal exponent from C's `%.*e` (exact decimal).
fn sprintf_digits(r: f64, digits: i32) -> (i32, i32) {
    let s = format!("{:.*e}", (digits - 1).max(0) as usize, r);
    let (mantissa, exp) = s.split_once('e').unwrap_or(("0", "0"));
    let kpower: i32 = exp.parse().unwrap_or(0);
    let nsig = mantissa.replace('.', "").trim_end_matches('0').len().max(1) as i32;
    (nsig, kpower)
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
            scientific(x, digits as i32)
        };
        let left = kpower + 1 - widens as i32;
        // The sign counts for this value only; the common width takes the widest.
        let sleft = i32::from(x < 0.0) + if left <= 0 { 1 } else { left };
        let right = nsig - left;
        rgt = rgt.max(right);
        mxl = mxl.max(left);
        mnl = mnl.min(left);
        mxsl = mxsl.max(sleft);
        mxns = mxns.max(nsig);
    }
    let mut out: Vec<String>;
    // R's field width: it can exceed every string when rounding widens a value in scientific
    // notation but not in fixed (9999.5 to 4 digits is 1e+04, printed 9999.500 in a width of 9).
    let mut width = 0usize;
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
        width = width_fixed.min(width_sci).max(0) as usize;
        out = if width_fixed <= width_sci {
            values
                .iter()
                .map(|&v| {
                    if v.is_finite() {
                        // R prints a signed zero as 0 (EncodeReal0).
                        format!("{:.*}", rgt as usize, v + 0.0)
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
                        format_sci(v + 0.0, d as usize)
                    } else {
                        na_or_inf(v)
                    }
                })
                .collect()
        };
    }
    let w = out.iter().map(|s| s.len()).max().unwrap_or(0).max(width);
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

/// C's `%.{d}e`: at least two exponent digits (`1.0e+07`, `1e-05`, `1e+100`); R pads the
/// narrower ones to the common width.
fn format_sci(v: f64, d: usize) -> String {
    let s = format!("{:.*e}", d, v);
    let (m, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{m}e{sign}{:02}", exp.abs())
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
