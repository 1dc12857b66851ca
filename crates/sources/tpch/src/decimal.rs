//! Exact decimals as scaled integers: parsing TPC-H's `DECIMAL(15,2)` text, printing sums at their
//! exact scale, rounding half away from zero, and averages as the correctly rounded `f64`.

/// Parses a decimal with at most two fractional digits into hundredths (`"21168.23"` → 2116823,
/// `"17"` → 1700, `"0.1"` → 10). At most 16 integer digits, an optional leading `-`; anything else
/// (empty, spaces, exponent, a third fractional digit) is `None`.
#[inline]
pub fn parse_cents(f: &[u8]) -> Option<i64> {
    let (neg, digits) = match f.first() {
        Some(b'-') => (true, &f[1..]),
        _ => (false, f),
    };
    let mut int: i64 = 0;
    let mut i = 0;
    while i < digits.len() && digits[i].is_ascii_digit() {
        int = int * 10 + (digits[i] - b'0') as i64;
        i += 1;
    }
    if i == 0 || i > 16 {
        return None;
    }
    let mut cents = int * 100;
    if i < digits.len() {
        if digits[i] != b'.' {
            return None;
        }
        let frac = &digits[i + 1..];
        match frac {
            [a] if a.is_ascii_digit() => cents += (a - b'0') as i64 * 10,
            [a, b] if a.is_ascii_digit() && b.is_ascii_digit() => {
                cents += (a - b'0') as i64 * 10 + (b - b'0') as i64
            }
            _ => return None,
        }
    }
    Some(if neg { -cents } else { cents })
}

/// Prints `v / 10^scale` with exactly `scale` fractional digits (`scale` 0 prints an integer).
pub fn format_scaled(v: i128, scale: u32) -> String {
    let neg = v < 0;
    let a = v.unsigned_abs();
    let p = 10u128.pow(scale);
    let sign = if neg { "-" } else { "" };
    if scale == 0 {
        return format!("{sign}{a}");
    }
    format!("{sign}{}.{:0width$}", a / p, a % p, width = scale as usize)
}

/// `num / den` rounded half away from zero to an integer (`den` > 0).
pub fn div_round(num: i128, den: i128) -> i128 {
    debug_assert!(den > 0);
    let q = num.abs() / den;
    let r = num.abs() % den;
    let q = if 2 * r >= den { q + 1 } else { q };
    if num < 0 {
        -q
    } else {
        q
    }
}

/// Rescales `v` from `from` to `to` fractional digits (`to` ≤ `from`), rounding half away from zero.
pub fn round_scaled(v: i128, from: u32, to: u32) -> i128 {
    div_round(v, 10i128.pow(from - to))
}

/// The exact quotient `sum / 10^scale / count` as the nearest `f64` (computed from 30 significant
/// decimal digits, so it is the correctly rounded value except in pathological ties).
pub fn exact_avg_f64(sum: i128, scale: u32, count: u64) -> f64 {
    if count == 0 {
        return f64::NAN;
    }
    let den = count as i128 * 10i128.pow(scale);
    let neg = sum < 0;
    let a = sum.abs();
    let mut s = format!("{}{}.", if neg { "-" } else { "" }, a / den);
    let mut r = a % den;
    for _ in 0..30 {
        r *= 10;
        s.push((b'0' + (r / den) as u8) as char);
        r %= den;
    }
    s.parse().unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cents() {
        assert_eq!(parse_cents(b"21168.23"), Some(2116823));
        assert_eq!(parse_cents(b"17"), Some(1700));
        assert_eq!(parse_cents(b"0.04"), Some(4));
        assert_eq!(parse_cents(b"0.1"), Some(10));
        assert_eq!(parse_cents(b"-901.00"), Some(-90100));
        for bad in [
            &b""[..],
            b"-",
            b".5",
            b"1.",
            b"1.234",
            b"1e5",
            b" 1",
            b"1,5",
            b"abc",
            b"12345678901234567",
        ] {
            assert_eq!(parse_cents(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn formatting_and_rounding() {
        assert_eq!(format_scaled(55909065222827692, 6), "55909065222.827692");
        assert_eq!(format_scaled(537582571348700, 4), "53758257134.8700");
        assert_eq!(format_scaled(-5, 2), "-0.05");
        assert_eq!(format_scaled(42, 0), "42");
        assert_eq!(round_scaled(110367043872497010, 6, 2), 11036704387250);
        assert_eq!(round_scaled(1005, 3, 2), 101);
        assert_eq!(round_scaled(-1005, 3, 2), -101);
        assert_eq!(div_round(1, 3), 0);
        assert_eq!(div_round(2, 3), 1);
    }

    #[test]
    fn averages_are_correctly_rounded() {
        // A|F of the SF1 answer: sum_qty 37734107.00 over 1478493 rows.
        assert_eq!(exact_avg_f64(3773410700, 2, 1478493), 25.522005853257337);
        assert_eq!(exact_avg_f64(1, 0, 3), 1.0 / 3.0);
        assert!(exact_avg_f64(1, 0, 0).is_nan());
    }
}
