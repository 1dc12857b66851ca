//! Q1's line parsers over `.tbl` text: a fast one, and a careful one that names what is wrong.
//!
//! The fast one finds the field delimiters in one 64-byte window, reads each decimal with one
//! 8-byte load and compares the date as two integers; the careful one accepts exactly the same
//! lines and, otherwise, names the field and what it expected.

use chrono::NaiveDate;

use crate::decimal::parse_cents;
use crate::lineitem::RowValues;
use crate::simd::swar::{all_digits, ONES};
use crate::simd::{masks64, newlines32};

/// `1998-12-01 - DELTA days` as a `YYYYMMDD` number, the form dates are compared in.
pub fn cutoff(delta_days: u32) -> u32 {
    let d = NaiveDate::from_ymd_opt(1998, 12, 1).expect("valid date")
        - chrono::Duration::days(delta_days as i64);
    d.format("%Y%m%d").to_string().parse().expect("digits only")
}

/// The Q1 cutoff date in the two forms the parsers compare against.
#[derive(Clone, Copy, Debug)]
pub struct DateCut {
    /// `YYYYMMDD`, for the careful parser.
    pub ymd: u32,
    /// `YYYY-MM-DD` as (big-endian first 8 bytes, big-endian last 2): for well-formed dates the
    /// byte order is the date order, so the hot path compares two integers and converts nothing.
    key: (u64, u16),
}

impl DateCut {
    /// From `YYYYMMDD` (as [`cutoff`] returns it).
    pub fn new(ymd: u32) -> DateCut {
        let s = format!("{:04}-{:02}-{:02}", ymd / 10000, ymd / 100 % 100, ymd % 100);
        let b = s.as_bytes();
        let key = (
            u64::from_be_bytes(b[..8].try_into().expect("8 bytes")),
            u16::from_be_bytes([b[8], b[9]]),
        );
        DateCut { ymd, key }
    }
}

/// A parsed line: its row (`None` when the filter drops it) and a length in bytes.
pub(super) type Parsed = (Option<RowValues>, usize);

/// The line at the start of `text`: `Ok(Some((row, length with its newline)))`, the row `None` when
/// the filter drops it; `Ok(None)` when `text` holds no newline (read more, or the file was cut
/// short); `Err((field index, message))` for a bad line.
#[inline(always)]
pub(super) fn next_line(text: &[u8], cut: &DateCut) -> Result<Option<Parsed>, (usize, String)> {
    // Hot path: parse the first 11 fields in place, then look for the end of the line only from
    // there (the rest of the line is never parsed).
    if let Some((row, p)) = parse_line_fast(text, cut) {
        return Ok(find_newline(&text[p..]).map(|nl| (row, p + nl + 1)));
    }
    let Some(nl) = memchr::memchr(b'\n', text) else {
        return Ok(None);
    };
    // Something unusual: the careful parser says exactly what is wrong (or accepts it).
    parse_line(&text[..nl], cut.ymd).map(|row| Some((row, nl + 1)))
}

/// The eight bytes at `t[p..]`, first byte lowest.
#[inline(always)]
fn word_at(t: &[u8], p: usize) -> Option<u64> {
    Some(u64::from_le_bytes(t.get(p..p + 8)?.try_into().ok()?))
}

/// The decimal `t[s..s + len]` in hundredths. The forms dbgen writes — `ddd` and `ddd.dd` with at
/// most 8 integer digits — take one 8-byte load and no loop; anything else goes to
/// [`parse_cents`], so the grammar (and the answer) is exactly the careful parser's.
#[inline(always)]
fn field_cents(t: &[u8], s: usize, len: usize) -> Option<i64> {
    let f = t.get(s..s + len)?;
    // l_discount and l_tax are always "0.dd": four bytes, no word needed.
    if let [a, b'.', b, c] = *f {
        if a.is_ascii_digit() && b.is_ascii_digit() && c.is_ascii_digit() {
            return Some((a - b'0') as i64 * 100 + (b - b'0') as i64 * 10 + (c - b'0') as i64);
        }
    }
    // l_quantity is "d" or "dd" (1–50): two bytes, the first replaced by '0' when absent.
    if let 1..=2 = len {
        let hi = if len == 2 { f[0] } else { b'0' };
        let lo = f[len - 1];
        if hi.is_ascii_digit() && lo.is_ascii_digit() {
            return Some((hi - b'0') as i64 * 1000 + (lo - b'0') as i64 * 100);
        }
    }
    let frac = len >= 4 && f[len - 3] == b'.';
    let int_len = if frac { len - 3 } else { len };
    if (1..=8).contains(&int_len) && s + int_len >= 8 {
        // The 8 bytes that end with the integer part; the bytes before it are set to '0'.
        let w = word_at(t, s + int_len - 8)?;
        let keep = u64::MAX << (8 * (8 - int_len));
        let w = (w & keep) | ((ONES * b'0' as u64) & !keep);
        let (a, b) = if frac {
            (f[len - 2], f[len - 1])
        } else {
            (b'0', b'0')
        };
        if all_digits(w) && a.is_ascii_digit() && b.is_ascii_digit() {
            // Eight digits, most significant in the lowest byte, to their value in three steps.
            let mut v = w - ONES * b'0' as u64;
            v = (v * 10).wrapping_add(v >> 8) & 0x00ff_00ff_00ff_00ff;
            v = (v * 100).wrapping_add(v >> 16) & 0x0000_ffff_0000_ffff;
            v = (v * 10000).wrapping_add(v >> 32) & 0xffff_ffff;
            return Some(v as i64 * 100 + (a - b'0') as i64 * 10 + (b - b'0') as i64);
        }
    }
    parse_cents(f)
}

/// `YYYY-MM-DD` (month 01–12, day 01–31, as [`parse_date`] accepts) → its comparison key.
#[inline(always)]
fn date_key(d: &[u8; 10]) -> Option<(u64, u16)> {
    let w = u64::from_le_bytes(d[..8].try_into().expect("8 bytes"));
    // The two '-' (bytes 4 and 7) turned into '0' so that one test checks all eight bytes.
    let dash = (b'-' ^ b'0') as u64;
    let digits = w ^ (dash << 32 | dash << 56);
    let (mm, dd) = (
        u16::from_be_bytes([d[5], d[6]]),
        u16::from_be_bytes([d[8], d[9]]),
    );
    let ok = d[4] == b'-'
        && d[7] == b'-'
        && all_digits(digits)
        && d[8].is_ascii_digit()
        && d[9].is_ascii_digit()
        // With digits checked, byte pairs compare as numbers: "01" ≤ MM ≤ "12", "01" ≤ DD ≤ "31".
        && (0x3031..=0x3132).contains(&mm)
        && (0x3031..=0x3331).contains(&dd);
    ok.then(|| (u64::from_be_bytes(w.to_le_bytes()), dd))
}

/// The hot path: parses and filters a well-formed line in one pass over its first 11 fields,
/// reading from the start of `text` and never taking a byte past a newline as part of the line.
/// Returns the row (or `None` when the filter drops it) and the offset just after the l_shipdate
/// field. `None` when anything is unusual (or fewer than 64 bytes are left in `text`);
/// [`parse_line`] then produces the result or the precise error.
#[inline(always)]
fn parse_line_fast(text: &[u8], cut: &DateCut) -> Option<Parsed> {
    let [e0, e1, e2, e3, e4] = field_ends(text)?;
    let qty = field_cents(text, e0 + 1, e1 - e0 - 1)?;
    let price = field_cents(text, e1 + 1, e2 - e1 - 1)?;
    let disc = field_cents(text, e2 + 1, e3 - e2 - 1)?;
    let tax = field_cents(text, e3 + 1, e4 - e3 - 1)?;
    let q = e4 + 1;
    let (flag, status, date) = flags_and_date(text, q)?;
    let row = (date <= cut.key).then_some(RowValues {
        flag,
        status,
        qty,
        price,
        disc,
        tax,
    });
    Some((row, q + 15))
}

/// The offsets of the 4th…8th `|` of the line at the start of `text` (the ends of fields 4…8, the
/// last one l_tax's), all found in its first 64 bytes at once. `None` when those bytes hold fewer
/// than eight `|` before a newline (the careful parser decides), or fewer than 64 bytes are left.
#[inline(always)]
fn field_ends(text: &[u8]) -> Option<[usize; 5]> {
    // Fields 1–8 fit in the first 64 bytes (55 at most up to SF 1000): find their '|' at once.
    let (bars, nls) = masks64(text.get(..64)?.try_into().ok()?);
    let mut b = bars;
    // Drop the first three '|' (fields 1–3 are not needed), then the 4th…8th end fields 4…8.
    b &= b.wrapping_sub(1);
    b &= b.wrapping_sub(1);
    b &= b.wrapping_sub(1);
    let e0 = b.trailing_zeros() as usize;
    b &= b.wrapping_sub(1);
    let e1 = b.trailing_zeros() as usize;
    b &= b.wrapping_sub(1);
    let e2 = b.trailing_zeros() as usize;
    b &= b.wrapping_sub(1);
    let e3 = b.trailing_zeros() as usize;
    b &= b.wrapping_sub(1);
    // Eight '|' and no newline before the last of them (else the careful parser decides).
    if b == 0 || nls & ((b & b.wrapping_neg()) - 1) != 0 {
        return None;
    }
    let e4 = b.trailing_zeros() as usize;
    Some([e0, e1, e2, e3, e4])
}

/// Fields 9–11 at `text[q..]`, which have fixed widths — `F|S|YYYY-MM-DD|` — as the two flag bytes
/// and the date's comparison key; `None` when they are not in that form.
#[inline(always)]
fn flags_and_date(text: &[u8], q: usize) -> Option<(u8, u8, (u64, u16))> {
    let rest: &[u8; 15] = text.get(q..q + 15)?.try_into().ok()?;
    let (flag, status) = (rest[0], rest[2]);
    if rest[1] != b'|'
        || rest[3] != b'|'
        || rest[14] != b'|'
        || matches!(flag, b'|' | b'\n')
        || matches!(status, b'|' | b'\n')
    {
        return None;
    }
    let date = date_key(rest[4..14].try_into().expect("10 bytes"))?;
    Some((flag, status, date))
}

/// The offset of the first newline in `text`, which starts just after l_shipdate. In lineitem
/// that newline is 42–92 bytes on (commit and receipt dates, 4–17 + 3–7 + 10–43 bytes of
/// instructions, mode and comment): one mask of bytes 32–95 finds it, after a check that bytes
/// 0–31 hold none. Both branches go the same way on every real line, so no misprediction; memchr
/// for anything longer.
#[inline(always)]
fn find_newline(text: &[u8]) -> Option<usize> {
    let Some(c) = text.get(..96) else {
        return memchr::memchr(b'\n', text);
    };
    let early = newlines32(c[..32].try_into().expect("32 bytes"));
    if early != 0 {
        return Some(early.trailing_zeros() as usize);
    }
    let (_, nls) = masks64(c[32..96].try_into().expect("64 bytes"));
    if nls != 0 {
        return Some(32 + nls.trailing_zeros() as usize);
    }
    memchr::memchr(b'\n', &text[96..]).map(|i| i + 96)
}

/// Parses one lineitem line (no newline) and applies Q1's filter. `Err((field index, message))`.
#[inline]
pub fn parse_line(line: &[u8], cutoff: u32) -> Result<Option<RowValues>, (usize, String)> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let [qty, price, disc, tax, flag, status, ship] = q1_fields(line)?;
    let date = parse_date(ship).ok_or_else(|| {
        (
            10,
            format!(
                "expected a date YYYY-MM-DD, found {:?}",
                String::from_utf8_lossy(ship)
            ),
        )
    })?;
    let (qty, price, disc, tax) = (
        decimal_field(4, qty)?,
        decimal_field(5, price)?,
        decimal_field(6, disc)?,
        decimal_field(7, tax)?,
    );
    let (flag, status) = (one_char_field(8, flag)?, one_char_field(9, status)?);
    if date > cutoff {
        return Ok(None);
    }
    Ok(Some(RowValues {
        flag,
        status,
        qty,
        price,
        disc,
        tax,
    }))
}

/// Fields 5–11 of a line (l_quantity … l_shipdate), each ended by `|`. `Err` names the first field
/// that is missing and how many the line has.
#[inline]
fn q1_fields(line: &[u8]) -> Result<[&[u8]; 7], (usize, String)> {
    let mut p = 0usize;
    let mut field = |idx: usize| -> Result<&[u8], (usize, String)> {
        // Fields are short (1–15 bytes): a byte loop beats a memchr call per field.
        match line[p..].iter().position(|&b| b == b'|') {
            Some(j) => {
                let f = &line[p..p + j];
                p += j + 1;
                Ok(f)
            }
            None => Err((
                idx,
                format!(
                    "missing: the line has {} '|'-separated fields, lineitem has 16",
                    memchr::memchr_iter(b'|', line).count()
                        + usize::from(!line.is_empty() && !line.ends_with(b"|"))
                ),
            )),
        }
    };
    for i in 0..4 {
        field(i)?;
    }
    Ok([
        field(4)?,
        field(5)?,
        field(6)?,
        field(7)?,
        field(8)?,
        field(9)?,
        field(10)?,
    ])
}

/// Field `idx` as a decimal in hundredths, or the error naming it.
#[inline]
fn decimal_field(idx: usize, f: &[u8]) -> Result<i64, (usize, String)> {
    parse_cents(f).ok_or_else(|| {
        (
            idx,
            format!(
                "expected a decimal with at most 2 fractional digits, found {:?}",
                String::from_utf8_lossy(f)
            ),
        )
    })
}

/// Field `idx` as one byte (not `|`), or the error naming it.
#[inline]
fn one_char_field(idx: usize, f: &[u8]) -> Result<u8, (usize, String)> {
    match f {
        [b] if *b != b'|' => Ok(*b),
        _ => Err((
            idx,
            format!(
                "expected one character, found {:?}",
                String::from_utf8_lossy(f)
            ),
        )),
    }
}

/// `YYYY-MM-DD` → `YYYYMMDD` (month 1–12, day 1–31).
#[inline(always)]
fn parse_date(f: &[u8]) -> Option<u32> {
    let f: &[u8; 10] = f.try_into().ok()?;
    if f[4] != b'-' || f[7] != b'-' {
        return None;
    }
    let d = [f[0], f[1], f[2], f[3], f[5], f[6], f[8], f[9]].map(|b| b.wrapping_sub(b'0'));
    if d.iter().fold(0u8, |m, &x| m.max(x)) > 9 {
        return None;
    }
    let v = d.iter().fold(0u32, |v, &x| v * 10 + x as u32);
    let (m, day) = ((v / 100) % 100, v % 100);
    ((1..=12).contains(&m) && (1..=31).contains(&day)).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::q1::testdata::LINES;

    #[test]
    fn cutoff_dates() {
        assert_eq!(cutoff(90), 19980902);
        assert_eq!(cutoff(112), 19980811);
        assert_eq!(cutoff(0), 19981201);
    }

    #[test]
    fn parses_and_filters() {
        let cut = cutoff(90);
        let mut lines = LINES.lines();
        let r = parse_line(lines.next().unwrap().as_bytes(), cut)
            .unwrap()
            .unwrap();
        assert_eq!(
            r,
            RowValues {
                flag: b'N',
                status: b'O',
                qty: 1700,
                price: 2116823,
                disc: 4,
                tax: 2
            }
        );
        let last = LINES.lines().nth(3).unwrap();
        assert_eq!(parse_line(last.as_bytes(), cut).unwrap(), None);
    }

    #[test]
    fn fast_and_careful_parsers_agree() {
        let cut = cutoff(90);
        let base = LINES.lines().next().unwrap();
        let mut cases: Vec<String> = LINES.lines().map(String::from).collect();
        for (from, to) in [
            ("|17|", "|17.5|"),
            ("|17|", "|-17|"),
            ("|17|", "|17.|"),
            ("|17|", "||"),
            ("21168.23", "21168.2"),
            ("21168.23", "21168.234"),
            ("0.04", ".04"),
            ("|N|O|", "|NN|O|"),
            ("|N|O|", "||O|"),
            ("1996-03-13", "1996-13-13"),
            ("1996-03-13", "1996-03-1"),
            ("1996-03-13", "1996-03-133"),
        ] {
            cases.push(base.replacen(from, to, 1));
        }
        cases.push(base[..40].to_string());
        // Never reads past a newline into the next line.
        let after_ship = base.match_indices('|').nth(10).unwrap().0 + 1;
        for cut_at in [10, 30, 45, 52, after_ship - 1, after_ship, 70] {
            let text = format!("{}\n{base}", &base[..cut_at]);
            match parse_line_fast(text.as_bytes(), &DateCut::new(cut)) {
                None => assert!(cut_at < after_ship, "{text}"),
                Some((_, p)) => assert_eq!(p, after_ship, "{text}"),
            }
        }
        cases.push(String::new());
        for c in &cases {
            let careful = parse_line(c.as_bytes(), cut);
            match parse_line_fast(c.as_bytes(), &DateCut::new(cut)) {
                Some((fast, _)) => assert_eq!(Ok(fast), careful, "{c}"),
                None => assert!(careful.is_err(), "fast path refused a good line: {c}"),
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// The one-load decimal parser takes exactly the careful parser's grammar and values, for
        /// fields of any length and any mix of digits, '.', '-' and other bytes.
        #[test]
        fn swar_decimals_agree_with_parse_cents(
            field in proptest::collection::vec(
                proptest::sample::select(b"0123456789..-x |".to_vec()), 0..12),
            lead in proptest::collection::vec(proptest::sample::select(b"0123456789|-.\n".to_vec()), 8),
        ) {
            // The field sits after 8 bytes of other text, as fields 5-8 always do.
            let mut t = lead.clone();
            t.extend_from_slice(&field);
            t.extend_from_slice(b"|rest of the line|\n");
            proptest::prop_assert_eq!(field_cents(&t, 8, field.len()), parse_cents(&field));
        }

        /// The packed date test accepts exactly what `parse_date` accepts, and orders dates as
        /// `YYYYMMDD` numbers do.
        #[test]
        fn date_keys_agree_with_parse_date(
            d in proptest::collection::vec(proptest::sample::select(b"0123456789-/x".to_vec()), 10),
            y in 1900u32..2100, m in 0u32..14, day in 0u32..33,
        ) {
            let d: [u8; 10] = d.try_into().unwrap();
            proptest::prop_assert_eq!(date_key(&d).is_some(), parse_date(&d).is_some());
            let s = format!("{y:04}-{m:02}-{day:02}");
            let d: [u8; 10] = s.as_bytes().try_into().unwrap();
            if let (Some(k), Some(v)) = (date_key(&d), parse_date(&d)) {
                for cut in [19980902, 19981201, v, v - 1, v + 1, 19000101, 20991231] {
                    proptest::prop_assert_eq!(k <= DateCut::new(cut).key, v <= cut, "{} vs {}", s, cut);
                }
            } else {
                proptest::prop_assert!(date_key(&d).is_none() && parse_date(&d).is_none());
            }
        }
    }

    #[test]
    fn swar_decimals_edge_cases() {
        for f in [
            "1",
            "17",
            "50",
            "0.04",
            "0.10",
            "21168.23",
            "104949.50",
            "99999999.99",
            "12345678",
            "123456789",
            "123456789.12",
            "00000000.01",
            "007",
            "17.5",
            "17.",
            ".04",
            "-17",
            "-0.04",
            "1a",
            "1.a4",
            "1.4a",
            "",
            "1234567890123456",
            "12345678901234567",
        ] {
            let mut t = b"1|2|3|4|".to_vec();
            t.extend_from_slice(f.as_bytes());
            t.extend_from_slice(b"|x|\n");
            assert_eq!(
                field_cents(&t, 8, f.len()),
                parse_cents(f.as_bytes()),
                "{f}"
            );
        }
        assert_eq!(field_cents(b"1|2|3|4|104949.50|", 8, 9), Some(10494950));
    }

    #[test]
    fn bad_fields_are_named() {
        let cut = cutoff(90);
        let bad_date = "1|2|3|4|17|21168.23|0.04|0.02|N|O|1996-13-13|x|";
        assert_eq!(parse_line(bad_date.as_bytes(), cut).unwrap_err().0, 10);
        let bad_num = "1|2|3|4|17|21x68.23|0.04|0.02|N|O|1996-03-13|x|";
        let e = parse_line(bad_num.as_bytes(), cut).unwrap_err();
        assert_eq!(e.0, 5);
        assert!(e.1.contains("21x68.23"), "{}", e.1);
        let short = "1|2|3|4|17|";
        assert_eq!(parse_line(short.as_bytes(), cut).unwrap_err().0, 5);
        assert_eq!(parse_line(b"", cut).unwrap_err().0, 0);
        let flag = "1|2|3|4|17|21168.23|0.04|0.02|NN|O|1996-03-13|x|";
        assert_eq!(parse_line(flag.as_bytes(), cut).unwrap_err().0, 8);
    }
}
