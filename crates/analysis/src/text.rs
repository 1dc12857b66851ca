//! Text for people: numbers with thousands separators and just enough digits, values kept on one
//! line, and lines wrapped under [`MAX_LINE`] columns; one place for what every report prints.

/// Longest line the text outputs aim for (terminal output is kept under 110 characters).
pub const MAX_LINE: usize = 108;

/// An integer with thousands separators: `41230` is `41,230`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A signed integer with thousands separators: `-1,200`.
pub fn thousands_i(n: i64) -> String {
    let sign = if n < 0 { "-" } else { "" };
    format!("{sign}{}", thousands(n.unsigned_abs()))
}

/// A non-negative number with `decimals` decimals and thousands separators: `4123.04` with 2 is
/// `4,123.04`. Negative and non-finite values are printed plainly.
pub fn thousands_fixed(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if !v.is_finite() || v < 0.0 {
        return s;
    }
    let (int, frac) = match s.split_once('.') {
        Some((int, frac)) => (int, Some(frac)),
        None => (s.as_str(), None),
    };
    match (int.parse::<u64>(), frac) {
        (Ok(i), Some(frac)) => format!("{}.{frac}", thousands(i)),
        (Ok(i), None) => thousands(i),
        (Err(_), _) => s,
    }
}

/// A non-negative number with one decimal and thousands separators: `4123.04` is `4,123.0`.
pub fn thousands_f1(v: f64) -> String {
    thousands_fixed(v, 1)
}

/// A value known to 3 significant digits (an HDR percentile), without false precision: 3
/// significant digits below 100 (`34.1`, `5.13`, `0.512`), whole numbers from 100 (`210`, `1,020`).
pub fn sig3(v: f64) -> String {
    if !v.is_finite() || v < 0.0 {
        return format!("{v}");
    }
    if v >= 100.0 {
        thousands(v.round() as u64)
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A value rounded to 3 significant digits at any size, with thousands separators: `0.123`,
/// `12.3`, `1,650`, `16,100`; `—` when not finite.
pub fn round_sig3(v: f64) -> String {
    if !v.is_finite() {
        return "—".into();
    }
    if v.abs() >= 100.0 {
        let digits = v.abs().log10().floor() as i32 + 1;
        let unit = 10f64.powi(digits - 3);
        return format_num((v / unit).round() * unit);
    }
    let decimals = if v.abs() >= 10.0 {
        1
    } else if v.abs() >= 1.0 {
        2
    } else {
        3
    };
    format!("{v:.decimals$}")
}

/// A plain number compactly (plot ticks): `0`, `2.5`, `1,000`, `12,345`, `3.4M`.
pub fn format_num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6).replace(".0M", "M")
    } else if a >= 1000.0 {
        let i = v.round() as i64;
        format!("{},{:03}", i / 1000, (i % 1000).abs())
    } else if v == v.trunc() {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

/// The width of a text column holding `cells`: its longest cell in characters, at least `min`.
pub fn column_width<'a>(cells: impl IntoIterator<Item = &'a str>, min: usize) -> usize {
    cells
        .into_iter()
        .map(|c| c.chars().count())
        .max()
        .unwrap_or(0)
        .max(min)
}

/// A figure of a report's or comparison's table: as [`format_num`] from 1 up, and with 3
/// significant digits under 1, so that a small figure is not printed as a zero (fsyncs per
/// commit with `innodb_flush_log_at_trx_commit=2`: 0.000123, not `0` and "−100 %").
pub fn format_figure(v: f64) -> String {
    let a = v.abs();
    if a >= 1.0 || a == 0.0 || !v.is_finite() {
        return format_num(v);
    }
    let decimals = (2 - a.log10().floor() as i32).clamp(0, 12) as usize;
    let s = format!("{v:.decimals$}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// True when a number as printed is zero (`0`, `0.00`, `-0.0`, `0 µs`).
pub fn shows_zero(shown: &str) -> bool {
    let digits: Vec<char> = shown.chars().filter(char::is_ascii_digit).collect();
    !digits.is_empty() && digits.iter().all(|c| *c == '0')
}

/// The change column of a side-by-side table: from a value printed as zero, `0 → 0` when B is
/// printed as zero too and `new` otherwise (a percentage of zero means nothing); else `pct`
/// formatted by `fmt`, or `-` without one.
pub fn change_text(
    a_shown: &str,
    b_shown: &str,
    pct: Option<f64>,
    fmt: impl Fn(f64) -> String,
) -> String {
    if shows_zero(a_shown) {
        if shows_zero(b_shown) {
            "0 → 0".into()
        } else if b_shown.trim() == "-" || b_shown.trim().is_empty() {
            "-".into()
        } else {
            "new".into()
        }
    } else {
        pct.map_or_else(|| "-".into(), fmt)
    }
}

/// A duration given in µs with a unit (plot ticks): `1 µs`, `250 µs`, `10 ms`, `1.5 s`.
pub fn format_us(us: f64) -> String {
    let (v, unit) = if us >= 1e6 {
        (us / 1e6, "s")
    } else if us >= 1e3 {
        (us / 1e3, "ms")
    } else if us >= 1.0 || us == 0.0 {
        (us, "µs")
    } else {
        (us * 1e3, "ns")
    };
    let num = if v >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    let num = if num.contains('.') {
        num.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        num
    };
    format!("{num} {unit}")
}

/// A number without trailing zeros (6 decimals at most): `1`, `0.5`, `99.9`.
pub fn trim_num(v: f64) -> String {
    let s = format!("{:.6}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// A threshold given in µs, in the unit the user most likely typed it in: `500 ms` for 500000,
/// `2 s`, `250 µs`, `1.5 µs` (whole seconds or milliseconds are shown as such).
pub fn threshold_us(us: f64) -> String {
    if us >= 1e6 && (us / 1e6).fract() == 0.0 {
        format!("{} s", trim_num(us / 1e6))
    } else if us >= 1e3 && (us / 1e3).fract() == 0.0 {
        format!("{} ms", trim_num(us / 1e3))
    } else {
        format!("{} µs", trim_num(us))
    }
}

/// A count and a noun, plural unless the count is 1: `1 error`, `1,200 errors`.
pub fn plural(n: u64, noun: &str) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{} {noun}{s}", thousands(n))
}

/// A span of seconds in a readable unit: `2.000 s`, `12.500 ms`, `5.000 µs`.
pub fn span(s: f64) -> String {
    if s >= 1.0 || s == 0.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.3} µs", s * 1e6)
    }
}

/// Replaces control characters (newlines, tabs) so a value stays on its line.
pub fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Shortens `s` to at most `max` characters by replacing its middle with `…`.
pub fn truncate_middle(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max || max < 3 {
        return s.to_string();
    }
    let keep = max - 1;
    let head = keep / 2;
    let tail = keep - head;
    let start: String = s.chars().take(head).collect();
    let end: String = s.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

/// Shortens a JSON object or array (`s`, as `serde_json` writes it) towards `max` characters by
/// cutting its longest string values at a character boundary (marked `…` inside the string), never
/// its syntax: the result is still valid JSON, longer than `max` only when its keys and short
/// values (12 characters or fewer, kept whole) alone are. `None` when `s` is not a JSON object or array.
pub fn shorten_json(s: &str, max: usize) -> Option<String> {
    let t = s.trim_start();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return None;
    }
    let mut v: serde_json::Value = serde_json::from_str(s).ok()?;
    loop {
        let text = v.to_string();
        let n = text.chars().count();
        if n <= max {
            return Some(text);
        }
        let longest = longest_string(&v);
        // Short values (an SQLSTATE, a command tag) are kept whole.
        if longest <= 12 {
            return Some(text);
        }
        // Keep enough of it that the whole fits, the `…` included; at least 11 characters.
        let keep = longest.saturating_sub(n - max + 1).max(11);
        let mut done = false;
        visit_strings(&mut v, &mut |st: &mut String| {
            if done || st.chars().count() != longest {
                return;
            }
            *st = format!("{}…", st.chars().take(keep).collect::<String>());
            done = true;
        });
    }
}

/// The length in characters of the longest string value in `v`.
fn longest_string(v: &serde_json::Value) -> usize {
    use serde_json::Value;
    match v {
        Value::String(s) => s.chars().count(),
        Value::Array(a) => a.iter().map(longest_string).max().unwrap_or(0),
        Value::Object(o) => o.values().map(longest_string).max().unwrap_or(0),
        _ => 0,
    }
}

/// Calls `f` on every string value of `v` (not the keys), in order.
fn visit_strings(v: &mut serde_json::Value, f: &mut dyn FnMut(&mut String)) {
    use serde_json::Value;
    match v {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter_mut().for_each(|x| visit_strings(x, f)),
        Value::Object(o) => o.values_mut().for_each(|x| visit_strings(x, f)),
        _ => {}
    }
}

/// Splits `item` into pieces of at most `room` characters, after a `,` or a space where there is
/// one in the second half of the piece, else at `room`: a long value wrapped, never shortened.
pub fn break_item(item: &str, room: usize) -> Vec<String> {
    let room = room.max(1);
    let mut rest: Vec<char> = item.chars().collect();
    let mut pieces = Vec::new();
    while rest.len() > room {
        let at = (room / 2..room)
            .rev()
            .find(|&i| matches!(rest[i], ',' | ' '))
            .map_or(room, |i| i + 1);
        let piece: String = rest.drain(..at).collect();
        pieces.push(piece.trim_end().to_string());
        while rest.first() == Some(&' ') {
            rest.remove(0);
        }
    }
    if !rest.is_empty() || pieces.is_empty() {
        pieces.push(rest.into_iter().collect());
    }
    pieces
}

/// `first` then the items joined by `sep`, wrapped to [`MAX_LINE`] with continuation lines indented
/// as wide as `first`; an item too long for a line is shortened in the middle.
pub fn push_wrapped(out: &mut String, first: &str, items: &[String], sep: &str) {
    wrap(out, first, items.iter().map(String::as_str), sep, true);
}

/// [`push_wrapped`], but an item too long for a line is broken over lines ([`break_item`]), never
/// shortened: every character is printed.
pub fn push_wrapped_whole(out: &mut String, first: &str, items: &[String], sep: &str) {
    let room = MAX_LINE.saturating_sub(first.chars().count()).max(20);
    let pieces: Vec<String> = items.iter().flat_map(|i| break_item(i, room)).collect();
    wrap(out, first, pieces.iter().map(String::as_str), sep, false);
}

/// `first` then the words of `text`, wrapped to [`MAX_LINE`] with continuation lines indented as
/// wide as `first`; words are never shortened.
pub fn push_wrapped_words(out: &mut String, first: &str, text: &str) {
    let text = one_line(text);
    wrap(out, first, text.split_whitespace(), " ", false);
}

fn wrap<'a>(
    out: &mut String,
    first: &str,
    items: impl Iterator<Item = &'a str>,
    sep: &str,
    shorten: bool,
) {
    let indent = first.chars().count();
    let room = MAX_LINE.saturating_sub(indent).max(20);
    let mut line = first.to_string();
    let mut len = indent;
    let mut empty = true;
    for item in items {
        let item = if shorten {
            truncate_middle(item, room)
        } else {
            item.to_string()
        };
        let n = item.chars().count();
        if !empty && len + sep.len() + n > MAX_LINE {
            out.push_str(line.trim_end());
            out.push('\n');
            line = " ".repeat(indent);
            len = indent;
            empty = true;
        }
        if !empty {
            line.push_str(sep);
            len += sep.len();
        }
        line.push_str(&item);
        len += n;
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

/// A sentence word-wrapped to [`MAX_LINE`], continuation lines indented by four spaces.
pub fn push_prose(out: &mut String, text: &str) {
    let words: Vec<String> = one_line(text)
        .split_whitespace()
        .map(String::from)
        .collect();
    let (first, rest) = match words.split_first() {
        Some((f, r)) => (f.clone(), r),
        None => return,
    };
    let mut line = first;
    for w in rest {
        if line.chars().count() + 1 + w.chars().count() > MAX_LINE {
            out.push_str(&line);
            out.push('\n');
            line = format!("    {w}");
        } else {
            line.push(' ');
            line.push_str(w);
        }
    }
    out.push_str(&line);
    out.push('\n');
}

#[cfg(test)]
mod tests {
    /// Small figures keep 3 significant digits; others print as everywhere else.
    #[test]
    fn a_small_figure_is_not_printed_as_zero() {
        use super::format_figure;
        assert_eq!(format_figure(0.000_123_4), "0.000123");
        assert_eq!(format_figure(0.85), "0.85");
        assert_eq!(format_figure(0.123_456), "0.123");
        assert_eq!(format_figure(-0.004_56), "-0.00456");
        assert_eq!(format_figure(0.0), "0");
        assert_eq!(format_figure(13_125.0), "13,125");
        assert_eq!(format_figure(3.78), "3.78");
    }

    #[test]
    fn issue_34_json_is_shortened_inside_its_values_and_stays_json() {
        use super::shorten_json;
        let long = "x".repeat(300);
        let cases = [
            format!(r#"{{"error":["23505","{long}"],"rows":0,"tags":[]}}"#),
            format!(r#"{{"error":null,"rows":1,"tags":["INSERT 0 1","é€{long}"]}}"#),
            r#"{"a":"short"}"#.to_string(),
            format!(r#"["{long}","{long}",1,true,null]"#),
            format!(r#"{{"nested":{{"deep":["{long}\"quoted\\ and\nnewline"]}}}}"#),
        ];
        for c in &cases {
            for max in [10, 20, 40, 60, 200, 1000] {
                let out = shorten_json(c, max).expect("JSON");
                let v: serde_json::Value = serde_json::from_str(&out)
                    .unwrap_or_else(|e| panic!("{out:?} ({max}) is not JSON: {e}"));
                assert!(v.is_object() || v.is_array(), "{out}");
                let n = out.chars().count();
                let orig: serde_json::Value = serde_json::from_str(c).unwrap();
                if orig.to_string().chars().count() <= max {
                    assert_eq!(v, orig);
                }
                // Only the syntax and short values are left when it is still too long.
                assert!(n <= max.max(80), "{out} ({n} > {max})");
            }
        }
        assert_eq!(shorten_json("plain text", 5), None);
        assert_eq!(shorten_json("{not json", 5), None);
    }

    #[test]
    fn issue_13_thresholds_in_the_unit_typed() {
        assert_eq!(threshold_us(500_000.0), "500 ms");
        assert_eq!(threshold_us(1_000.0), "1 ms");
        assert_eq!(threshold_us(2_000_000.0), "2 s");
        assert_eq!(threshold_us(250.0), "250 µs");
        assert_eq!(threshold_us(1_500.5), "1500.5 µs");
    }

    use super::*;

    #[test]
    fn number_formats() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(41_230), "41,230");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(8_000_000), "8,000,000");
        assert_eq!(thousands_i(-1_234), "-1,234");
        assert_eq!(thousands_f1(4123.04), "4,123.0");
        assert_eq!(thousands_f1(0.0), "0.0");
        assert_eq!(thousands_fixed(1234.5, 0), "1,234");
        assert_eq!(thousands_fixed(-1234.5, 2), "-1234.50");
        assert_eq!(sig3(34.123), "34.1");
        assert_eq!(sig3(210.2), "210");
        assert_eq!(sig3(1020.4), "1,020");
        assert_eq!(sig3(0.5123), "0.512");
        assert_eq!(sig3(5.126), "5.13");
        assert_eq!(round_sig3(16105.0), "16,100");
        assert_eq!(round_sig3(1647.3), "1,650");
        assert_eq!(round_sig3(262.91), "263");
        assert_eq!(round_sig3(12.34), "12.3");
        assert_eq!(round_sig3(0.1234), "0.123");
        assert_eq!(format_num(1234.0), "1,234");
        assert_eq!(format_num(2_500_000.0), "2.5M");
        assert_eq!(format_us(0.5), "500 ns");
        assert_eq!(format_us(1500.0), "1.5 ms");
        assert_eq!(format_us(2_000_000.0), "2 s");
        assert_eq!(trim_num(99.9), "99.9");
        assert_eq!(trim_num(1.0), "1");
        assert_eq!(truncate_middle("abcdefghij", 5), "ab…ij");
        assert_eq!(truncate_middle("abc", 5), "abc");
        assert_eq!(break_item("abc, def ghi", 6), ["abc,", "def", "ghi"]);
        assert_eq!(break_item("abcdefgh", 3), ["abc", "def", "gh"]);
        assert_eq!(break_item("", 3), [""]);
        assert_eq!(plural(1, "error"), "1 error");
        assert_eq!(plural(1200, "error"), "1,200 errors");
        assert_eq!(span(2.0), "2.000 s");
        assert_eq!(span(0.0125), "12.500 ms");
        assert_eq!(span(5e-6), "5.000 µs");
    }

    #[test]
    fn wrapping() {
        let items: Vec<String> = (0..30).map(|i| format!("item{i}")).collect();
        let mut out = String::new();
        push_wrapped(&mut out, "label     ", &items, "  ");
        assert!(out.lines().count() > 1, "{out}");
        for line in out.lines().skip(1) {
            assert!(line.starts_with("          item"), "{out}");
        }
        assert!(out.lines().all(|l| l.chars().count() <= MAX_LINE), "{out}");
        let mut words = String::new();
        push_wrapped_words(&mut words, "  verdict ", &"word\t".repeat(40));
        assert!(words.starts_with("  verdict word word"), "{words}");
        assert!(words
            .lines()
            .skip(1)
            .all(|l| l.starts_with("          word")));
        let mut prose = String::new();
        push_prose(&mut prose, &"long ".repeat(40));
        assert!(
            prose.lines().nth(1).unwrap().starts_with("    long"),
            "{prose}"
        );
        assert_eq!(one_line("a\nb\tc"), "a b c");
    }
}
