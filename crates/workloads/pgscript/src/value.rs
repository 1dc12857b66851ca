//! [`Value`]: what an expression evaluates to and what a variable holds (pgbench's PgBenchValue),
//! with pgbench's conversions and its text form for substitution into SQL.

/// A value of the expression language.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// SQL NULL (`\gset` of a NULL column, or the `NULL` literal).
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A 64-bit integer.
    Int(i64),
    /// A double.
    Double(f64),
}

impl Value {
    /// The text a variable holding this value is substituted as, as pgbench's `getVariable`
    /// makes it: integers in decimal, doubles as C's `%.15g`, booleans `true`/`false`, and NULL
    /// as `NULL` (pgbench's word; a variable set by `\gset` from a NULL column holds the empty
    /// text instead, which is the caller's to store).
    pub fn to_text(&self) -> String {
        match self {
            Value::Null => "NULL".to_string(),
            Value::Bool(b) => if *b { "true" } else { "false" }.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Double(d) => format_g(*d, 15),
        }
    }

    /// A variable's text (from `-D`, `\gset`, `\setshell`) read as a value the way pgbench's
    /// `makeVariableValue` does: `null` (any case); a prefix of `true`/`yes`, or `on`, for true; a
    /// prefix of `false`/`no`, or `off`/`of`, for false; an integer (`[+-]digits`, which must fit
    /// in 64 bits); else a double as C's `strtod` reads it; else the error pgbench prints,
    /// `malformed variable "x" value: "abc"`.
    pub fn from_text(name: &str, text: &str) -> Result<Value, String> {
        let malformed = || format!("malformed variable \"{name}\" value: \"{text}\"");
        // pgbench gives up on "" without a message; we say what it is.
        if text.is_empty() {
            return Err(malformed());
        }
        let lower = text.to_ascii_lowercase();
        let prefix_of = |word: &str| word.starts_with(lower.as_str());
        if lower == "null" {
            return Ok(Value::Null);
        }
        // "o" alone is neither; 0 and 1 are integers (read below).
        if prefix_of("true") || prefix_of("yes") || lower == "on" {
            return Ok(Value::Bool(true));
        }
        if prefix_of("false") || prefix_of("no") || lower == "off" || lower == "of" {
            return Ok(Value::Bool(false));
        }
        if is_an_int(text) {
            // strtoi64 skips the leading white space is_an_int allowed
            let t = text.trim_start_matches(is_c_space);
            let t = t.strip_prefix('+').unwrap_or(t);
            return t
                .parse::<i64>()
                .map(Value::Int)
                .map_err(|_| format!("value \"{text}\" is out of range for type bigint"));
        }
        match c_strtod(text) {
            Some(d) => Ok(Value::Double(d)),
            None => Err(malformed()),
        }
    }

    /// The value as pgbench's `debug()` prints it: `null`, `boolean true`, `int 5`,
    /// `double 1.5` (doubles as `%.15g`).
    pub fn describe(&self) -> String {
        match self {
            Value::Null => "null".to_string(),
            Value::Bool(b) => format!("boolean {b}"),
            Value::Int(i) => format!("int {i}"),
            Value::Double(d) => format!("double {}", format_g(*d, 15)),
        }
    }

    /// pgbench's name of the value's type in error messages (`valueTypeName`).
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "int",
            Value::Double(_) => "double",
        }
    }
}

/// C's `isspace` in the C locale.
pub(crate) fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\u{0b}' | '\u{0c}' | '\r')
}

/// pgbench's `is_an_int`: `^\s*[-+]?[0-9]+$`.
fn is_an_int(s: &str) -> bool {
    let t = s.trim_start_matches(is_c_space);
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())
}

/// The whole of `s` read as C's `strtod` reads it (leading white space, `inf`, `infinity`,
/// `nan`, decimal and hexadecimal forms), failing where pgbench's `strtodouble` fails: trailing
/// characters, or `ERANGE` (overflow to infinity, or underflow to zero or a subnormal).
pub(crate) fn c_strtod(s: &str) -> Option<f64> {
    let t = s.trim_start_matches(is_c_space);
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let lower = body.to_ascii_lowercase();
    let sign = if neg { -1.0 } else { 1.0 };
    if lower == "inf" || lower == "infinity" {
        return Some(sign * f64::INFINITY);
    }
    if lower == "nan"
        || (lower.starts_with("nan(")
            && lower.ends_with(')')
            && lower[4..lower.len() - 1]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_'))
    {
        return Some(f64::NAN);
    }
    let value = match lower.strip_prefix("0x") {
        Some(hex) => hex_float(hex)?,
        None => decimal_float(&lower)?,
    };
    // the mantissa's digits (before the exponent's letter) say whether a 0 is an underflow
    let nonzero_digits = match lower.strip_prefix("0x") {
        Some(hex) => hex
            .bytes()
            .take_while(|b| *b != b'p')
            .any(|b| b.is_ascii_hexdigit() && b != b'0'),
        None => lower
            .bytes()
            .take_while(|b| *b != b'e')
            .any(|b| (b'1'..=b'9').contains(&b)),
    };
    if value.is_infinite() || (nonzero_digits && (value == 0.0 || value.is_subnormal())) {
        return None;
    }
    Some(sign * value)
}

/// `digits[.digits][e[+-]digits]` with at least one digit in the mantissa, nothing after.
fn decimal_float(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = 0;
    let int_digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    i += int_digits;
    let mut frac_digits = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        frac_digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        i += frac_digits;
    }
    if int_digits + frac_digits == 0 {
        return None;
    }
    if b.get(i) == Some(&b'e') {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+') | Some(b'-')) {
            j += 1;
        }
        let exp_digits = b[j.min(b.len())..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if exp_digits == 0 {
            // strtod stops before the "e": trailing garbage
            return None;
        }
        i = j + exp_digits;
    }
    if i != b.len() {
        return None;
    }
    s.parse::<f64>().ok()
}

/// `hexdigits[.hexdigits][p[+-]digits]` (after `0x`), nothing after; exact for mantissas that
/// fit in 64 bits, which is what scripts write.
fn hex_float(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut mant: u128 = 0;
    let mut exp: i64 = 0;
    let mut digits = 0;
    let mut i = 0;
    let mut seen_dot = false;
    while i < b.len() {
        let c = b[i];
        if c == b'.' && !seen_dot {
            seen_dot = true;
        } else if let Some(d) = (c as char).to_digit(16) {
            digits += 1;
            if mant < (1u128 << 100) {
                mant = mant * 16 + d as u128;
                if seen_dot {
                    exp -= 4;
                }
            } else if !seen_dot {
                exp += 4;
            }
        } else {
            break;
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if i < b.len() && b[i] == b'p' {
        let rest = &s[i + 1..];
        let r = rest.strip_prefix(['+', '-']).unwrap_or(rest);
        if r.is_empty() || !r.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let e: i64 = r.parse().unwrap_or(i64::MAX / 4).min(100_000);
        exp += if rest.starts_with('-') { -e } else { e };
        i = b.len();
    }
    if i != b.len() {
        return None;
    }
    if mant == 0 {
        return Some(0.0);
    }
    // in two halves, so that neither factor over- or underflows on its own
    let e = exp.clamp(-5000, 5000) as i32;
    Some(mant as f64 * 2f64.powi(e / 2) * 2f64.powi(e - e / 2))
}

/// `NaN`, `Infinity`, `-Infinity`: how PostgreSQL's own `snprintf` (src/port/snprintf.c,
/// which pgbench's printf is) writes the special values, for any conversion.
pub(crate) fn special_double(d: f64) -> Option<&'static str> {
    if d.is_nan() {
        Some("NaN")
    } else if d.is_infinite() {
        Some(if d < 0.0 { "-Infinity" } else { "Infinity" })
    } else {
        None
    }
}

/// `printf("%.*g", precision, d)` as PostgreSQL's snprintf does it: C's `%g`, but `NaN`,
/// `Infinity`, `-Infinity` for the special values.
pub(crate) fn format_g(d: f64, precision: usize) -> String {
    if let Some(s) = special_double(d) {
        return s.to_string();
    }
    let p = precision.max(1);
    // the exponent %e would print with p significant digits (after rounding)
    let e_form = format!("{:.*e}", p - 1, d);
    let (mantissa, exp) = e_form.split_once('e').expect("{:e} has an exponent");
    let x: i32 = exp.parse().expect("{:e}'s exponent is an integer");
    if x < -4 || x >= p as i32 {
        let m = strip_fraction_zeros(mantissa);
        let sign = if x < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", x.unsigned_abs())
    } else {
        let decimals = (p as i32 - 1 - x) as usize;
        strip_fraction_zeros(&format!("{d:.decimals$}")).to_string()
    }
}

/// `%g` drops trailing zeros of the fraction, and the point when nothing is left after it.
fn strip_fraction_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g_format_follows_printf() {
        assert_eq!(format_g(1.0, 15), "1");
        assert_eq!(format_g(0.1, 15), "0.1");
        assert_eq!(format_g(1.0 / 3.0, 15), "0.333333333333333");
        assert_eq!(format_g(1e15, 15), "1e+15");
        assert_eq!(format_g(123456789012345.0, 15), "123456789012345");
        assert_eq!(format_g(0.0001, 15), "0.0001");
        assert_eq!(format_g(0.00001, 15), "1e-05");
        assert_eq!(format_g(-2.5e-300, 15), "-2.5e-300");
        assert_eq!(format_g(-0.0, 15), "-0");
        assert_eq!(format_g(f64::INFINITY, 15), "Infinity");
        assert_eq!(format_g(f64::NEG_INFINITY, 15), "-Infinity");
        assert_eq!(format_g(f64::NAN, 15), "NaN");
        assert_eq!(format_g(9.999999999999999e14, 15), "1e+15");
    }

    #[test]
    fn text_is_read_as_pgbench_reads_it() {
        assert_eq!(Value::from_text("x", "12"), Ok(Value::Int(12)));
        assert_eq!(Value::from_text("x", " -12"), Ok(Value::Int(-12)));
        assert_eq!(Value::from_text("x", "+7"), Ok(Value::Int(7)));
        assert_eq!(Value::from_text("x", "1.5"), Ok(Value::Double(1.5)));
        assert_eq!(Value::from_text("x", "1e3"), Ok(Value::Double(1000.0)));
        assert_eq!(Value::from_text("x", ".5"), Ok(Value::Double(0.5)));
        assert_eq!(Value::from_text("x", "0x10"), Ok(Value::Double(16.0)));
        assert_eq!(
            Value::from_text("x", "-inf"),
            Ok(Value::Double(f64::NEG_INFINITY))
        );
        assert!(matches!(Value::from_text("x", "NaN"), Ok(Value::Double(d)) if d.is_nan()));
        assert_eq!(Value::from_text("x", "NULL"), Ok(Value::Null));
        for t in ["t", "TRUE", "y", "yes", "on", "On"] {
            assert_eq!(Value::from_text("x", t), Ok(Value::Bool(true)), "{t}");
        }
        for t in ["f", "fAlSe", "n", "no", "off", "of"] {
            assert_eq!(Value::from_text("x", t), Ok(Value::Bool(false)), "{t}");
        }
        for t in ["o", "abc", "1e", "1.5x", "truee", "", "1e999", "1e-400"] {
            assert!(Value::from_text("x", t).is_err(), "{t}");
        }
        assert_eq!(
            Value::from_text("aid", "abc"),
            Err("malformed variable \"aid\" value: \"abc\"".to_string())
        );
        assert_eq!(
            Value::from_text("x", "9223372036854775808"),
            Err("value \"9223372036854775808\" is out of range for type bigint".to_string())
        );
    }

    #[test]
    fn hex_floats_at_the_edges() {
        assert_eq!(c_strtod("0x0p5000"), Some(0.0));
        assert_eq!(c_strtod("0e5"), Some(0.0));
        assert_eq!(c_strtod("-0.000e-999"), Some(-0.0));
        assert_eq!(c_strtod("0x1p-1000"), Some(2f64.powi(-1000)));
        assert_eq!(c_strtod("0x1.8p1"), Some(3.0));
        assert_eq!(c_strtod("0x1p5000"), None);
        assert_eq!(c_strtod("0x"), None);
        assert_eq!(c_strtod("0x1p"), None);
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_read_without_panicking(s in "\\PC{0,40}") {
            let _ = Value::from_text("v", &s);
        }

        #[test]
        fn number_like_text_is_read_without_panicking(s in "[-+ 0-9.eExXpPa-fA-F]{0,30}") {
            let _ = Value::from_text("v", &s);
        }

        #[test]
        fn doubles_print_and_read_back_to_15_digits(d in proptest::num::f64::NORMAL) {
            let t = Value::Double(d).to_text();
            match Value::from_text("v", &t) {
                Ok(Value::Double(back)) => proptest::prop_assert!(((back - d) / d).abs() < 1e-14, "{} {}", d, t),
                Ok(Value::Int(back)) => proptest::prop_assert!(((back as f64 - d) / d).abs() < 1e-14, "{} {}", d, t),
                other => proptest::prop_assert!(false, "{} {} {:?}", d, t, other),
            }
        }
    }

    #[test]
    fn text_round_trips() {
        for v in [
            Value::Int(-5),
            Value::Bool(true),
            Value::Double(0.25),
            Value::Null,
        ] {
            assert_eq!(Value::from_text("v", &v.to_text()), Ok(v.clone()));
        }
        assert_eq!(Value::Double(1e100).to_text(), "1e+100");
        assert_eq!(Value::Int(i64::MIN).to_text(), "-9223372036854775808");
    }
}
