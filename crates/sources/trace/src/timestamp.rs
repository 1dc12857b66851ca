//! The wall-clock times of `***` lines: ISO 8601 with an offset, or the old form read as UTC.

use chrono::{DateTime, NaiveDateTime};

/// Parses the timestamp of a `***` line into Unix µs: ISO 8601 with offset
/// (`2024-03-26T18:58:52.935374-07:00`) or the old form (`2012-11-30 23:21:45.691`, read as UTC).
pub fn parse_timestamp(ts: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(ts).ok()?.trim();
    let first = s.split(' ').next()?;
    if first.contains('T') {
        let dt = DateTime::parse_from_rfc3339(first).ok()?;
        return Some(dt.timestamp_micros());
    }
    let mut parts = s.split(' ');
    let date = parts.next()?;
    let time = parts.next()?;
    if let Some(us) = old_timestamp_plain(date, time) {
        return Some(us);
    }
    let naive =
        NaiveDateTime::parse_from_str(&format!("{date} {time}"), "%Y-%m-%d %H:%M:%S%.f").ok()?;
    Some(naive.and_utc().timestamp_micros())
}

/// The common case of the old `***` timestamp, `YYYY-MM-DD` and `HH:MM:SS.f…` (1 to 9 digits),
/// read without chrono's format parser (these lines are frequent); `None` for anything else, which
/// the format parser then reads (with the same result where this one gives one).
fn old_timestamp_plain(date: &str, time: &str) -> Option<i64> {
    let (d, t) = (date.as_bytes(), time.as_bytes());
    if d.len() != 10 || d[4] != b'-' || d[7] != b'-' || t.len() < 10 || t.len() > 18 {
        return None;
    }
    if t[2] != b':' || t[5] != b':' || t[8] != b'.' {
        return None;
    }
    let num = |s: &[u8]| -> Option<u32> {
        s.iter().try_fold(0u32, |v, &b| {
            b.is_ascii_digit().then(|| v * 10 + (b - b'0') as u32)
        })
    };
    let (y, mo, dd) = (num(&d[..4])?, num(&d[5..7])?, num(&d[8..])?);
    let (h, mi, sec) = (num(&t[..2])?, num(&t[3..5])?, num(&t[6..8])?);
    let frac = &t[9..];
    let nanos = num(frac)? * 10u32.pow(9 - frac.len() as u32);
    if sec > 59 {
        return None;
    }
    let dt =
        chrono::NaiveDate::from_ymd_opt(y as i32, mo, dd)?.and_hms_nano_opt(h, mi, sec, nanos)?;
    Some(dt.and_utc().timestamp_micros())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_both_forms() {
        assert_eq!(
            parse_timestamp(b"2024-03-26T18:58:52.935374-07:00 (PDB1(3))"),
            Some(1_711_504_732_935_374)
        );
        assert_eq!(
            parse_timestamp(b"2012-11-30 23:21:45.691"),
            Some(1_354_317_705_691_000)
        );
        assert_eq!(parse_timestamp(b"yesterday"), None);
    }

    proptest::proptest! {
        /// The quick reading of old-style timestamps agrees with chrono's format parser.
        #[test]
        fn old_timestamps_read_as_chrono_reads_them(
            ts in "[0-9]{4}-(0[0-9]|1[0-3])-([0-2][0-9]|3[0-2]) ([01][0-9]|2[0-4]):[0-6][0-9]:[0-6][0-9](\\.[0-9]{0,10})?"
        ) {
            let mut parts = ts.split(' ');
            let (date, time) = (parts.next().unwrap(), parts.next().unwrap());
            if let Some(us) = old_timestamp_plain(date, time) {
                let chrono = NaiveDateTime::parse_from_str(&format!("{date} {time}"), "%Y-%m-%d %H:%M:%S%.f")
                    .map(|n| n.and_utc().timestamp_micros());
                proptest::prop_assert_eq!(chrono, Ok(us));
            }
        }
    }

    #[test]
    fn old_timestamps_common_and_odd() {
        for ts in [
            "2012-11-30 23:21:45.691",
            "2000-02-29 00:00:00.000001",
            "2012-11-30 23:21:45.123456789",
        ] {
            let mut parts = ts.split(' ');
            let (date, time) = (parts.next().unwrap(), parts.next().unwrap());
            let want = NaiveDateTime::parse_from_str(ts, "%Y-%m-%d %H:%M:%S%.f").unwrap();
            assert_eq!(
                old_timestamp_plain(date, time),
                Some(want.and_utc().timestamp_micros()),
                "{ts}"
            );
        }
        // Not dates, or not this form: left to chrono.
        assert_eq!(old_timestamp_plain("2012-02-30", "23:21:45.691"), None);
        assert_eq!(old_timestamp_plain("2012-11-30", "23:21:45"), None);
        assert_eq!(old_timestamp_plain("2012-11-30", "23:21:60.5"), None);
    }
}
