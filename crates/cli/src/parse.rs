//! Value parsers shared by the argument definitions of every subcommand.
//!
//! A leaf: each subcommand's `args` module imports it, it imports none of them.

use std::time::Duration;

/// Parses `250ms`, `10s`, `2.5s`, `5m`, `1h`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration; use e.g. 500ms, 10s, 5m, 1h"))?;
    let scale = match unit.trim() {
        "" | "s" | "sec" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(format!(
                "unknown unit {other:?} in {s:?}; use ms, s, m or h (e.g. 10s)"
            ))
        }
    };
    let secs = value * scale;
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(format!("{s:?} is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a one-byte delimiter: one ASCII character, `tab`, or a C escape (`\t`, `\n`, `\r`,
/// `\\`, `\xHH` below 0x80), so `--delimiter '\t'` means a tab as it does to `cut` and `awk`.
pub fn parse_delimiter(s: &str) -> Result<u8, String> {
    let bad = || {
        format!(
            "{s:?} is not a one-character delimiter; give one ASCII character or a C escape \
             (\\t, \\n, \\r, \\\\, \\xHH)"
        )
    };
    let b = s.as_bytes();
    match b {
        [c] if c.is_ascii() => Ok(*c),
        _ if s == "tab" => Ok(b'\t'),
        [b'\\', b't'] => Ok(b'\t'),
        [b'\\', b'n'] => Ok(b'\n'),
        [b'\\', b'r'] => Ok(b'\r'),
        [b'\\', b'\\'] => Ok(b'\\'),
        [b'\\', b'x' | b'X', h @ ..] if (1..=2).contains(&h.len()) => {
            let hex = std::str::from_utf8(h).map_err(|_| bad())?;
            match u8::from_str_radix(hex, 16) {
                Ok(v) if v.is_ascii() => Ok(v),
                _ => Err(bad()),
            }
        }
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_34_delimiters_take_c_escapes() {
        for (arg, want) in [
            (";", b';'),
            ("|", b'|'),
            ("\\t", b'\t'),
            ("\t", b'\t'),
            ("tab", b'\t'),
            ("\\n", b'\n'),
            ("\\r", b'\r'),
            ("\\\\", b'\\'),
            ("\\x1f", 0x1f),
            ("\\x7C", b'|'),
            ("\\x9", b'\t'),
        ] {
            assert_eq!(parse_delimiter(arg), Ok(want), "{arg:?}");
        }
        for bad in ["", ";;", "\\q", "\\x", "\\xzz", "\\x80", "\\x123", "é"] {
            let e = parse_delimiter(bad).unwrap_err();
            assert!(e.contains("C escape"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("10parsecs").is_err());
    }
}
