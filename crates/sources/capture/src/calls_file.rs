//! The calls file read back ([`crate::CALLS_FILE`]): the one reader `capture info` and `replay`
//! share, and what it saw of the file's state.
//!
//! The file is read as bytes, line by line on `\n`, and each line is checked as UTF-8 and JSON on
//! its own: a torn or damaged line is counted (with the first one's line number and byte offset),
//! never fatal, and a file whose last line has no newline says it ends cut (its writer stopped
//! in the middle of that line). A record is either read whole or counted as bad: a cut line is
//! never read as a shorter record (a JSON object cut anywhere before its closing brace is not
//! JSON).

use std::io::BufRead;
use std::path::Path;

use serde::Serialize;

use crate::calls::Call;
use crate::CaptureError;

/// One record of the calls file.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// `{"type":"session",…}`, as written (the proxy adds fields over time: kept as JSON).
    Session(serde_json::Value),
    /// `{"type":"call",…}`.
    Call(Box<Call>),
}

/// A line that could not be read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BadLine {
    /// Its number in the file, from 1.
    pub line: u64,
    /// The byte offset of its first byte.
    pub offset: u64,
    /// Why it was not read.
    pub why: String,
}

/// What the reader saw of the file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReadStats {
    /// Bytes read (the whole file).
    pub bytes: u64,
    /// Lines read, blank ones aside (records and bad lines).
    pub lines: u64,
    /// Records read: session lines and call lines.
    pub records: u64,
    /// Lines that are not a readable session or call.
    pub bad_lines: u64,
    /// The first of them.
    pub first_bad: Option<BadLine>,
    /// The file's last line has no newline: its writer stopped in the middle of writing it
    /// (whether that line reads or not: see `torn_last_line`).
    pub cut: bool,
    /// The last line is cut and unreadable (one of `bad_lines`).
    pub torn_last_line: bool,
    /// Where the last line begins (line number from 1, byte offset), when the file ends cut.
    pub last_line: Option<(u64, u64)>,
}

impl ReadStats {
    /// Bad lines other than a torn last line (damage in the middle of the file).
    pub fn bad_inside(&self) -> u64 {
        self.bad_lines - u64::from(self.torn_last_line)
    }
}

/// One line (without its newline) as a record, or why it is not one.
pub fn parse_line(bytes: &[u8]) -> Result<Record, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8 ({e})"))?;
    let v =
        serde_json::from_str::<serde_json::Value>(text).map_err(|e| format!("not JSON ({e})"))?;
    match v["type"].as_str() {
        Some("session") => Ok(Record::Session(v)),
        Some("call") => serde_json::from_value::<Call>(v)
            .map(|c| Record::Call(Box::new(c)))
            .map_err(|e| format!("not a call ({e})")),
        Some(t) => Err(format!("unknown record type {t:?}")),
        None => Err("no record type".into()),
    }
}

/// Reads calls-file bytes from `r`, handing each record to `each` in file order.
pub fn read_from(mut r: impl BufRead, mut each: impl FnMut(Record)) -> std::io::Result<ReadStats> {
    let mut st = ReadStats::default();
    let mut buf = Vec::new();
    let mut number = 0u64;
    loop {
        buf.clear();
        let n = r.read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        number += 1;
        let offset = st.bytes;
        st.bytes += n as u64;
        let ended = buf.last() == Some(&b'\n');
        let line = if ended { &buf[..n - 1] } else { &buf[..] };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        st.lines += 1;
        if !ended {
            st.cut = true;
            st.last_line = Some((number, offset));
        }
        match parse_line(line) {
            Ok(rec) => {
                st.records += 1;
                each(rec);
            }
            Err(why) => {
                st.bad_lines += 1;
                st.torn_last_line = !ended;
                st.first_bad.get_or_insert(BadLine {
                    line: number,
                    offset,
                    why,
                });
            }
        }
    }
    Ok(st)
}

/// Reads the calls file at `path` (see [`read_from`]).
pub fn read(path: &Path, each: impl FnMut(Record)) -> Result<ReadStats, CaptureError> {
    let f = std::fs::File::open(path).map_err(|e| CaptureError::io(path, e))?;
    read_from(std::io::BufReader::new(f), each).map_err(|e| CaptureError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calls::Protocol;
    use proptest::prelude::*;

    fn call(session: u32, seq: u64, sql: &str) -> Call {
        Call {
            session,
            seq,
            start_ns: 1000 * seq,
            end_ns: 1000 * seq + 500,
            protocol: Protocol::Simple,
            sql: sql.into(),
            statement: None,
            params: vec![Some("é€😀".into())],
            formats: Vec::new(),
            tags: vec!["SELECT 1".into()],
            rows: 1,
            error: None,
            skipped: false,
            copy: None,
            txn: Some('I'),
            unfinished: false,
            unknown_statement: false,
            cut: false,
            from_log: false,
        }
    }

    /// A calls file as the proxy writes it, with multi-byte characters in every record; the
    /// byte offset where each line begins.
    fn file(n: u64) -> (Vec<u8>, Vec<usize>) {
        let mut out = Vec::new();
        let mut starts = Vec::new();
        for i in 0..n {
            starts.push(out.len());
            let mut v =
                serde_json::to_value(call((i % 3) as u32, i, "SELECT 'ünïcödé ✓'")).unwrap();
            v["type"] = serde_json::json!("call");
            out.extend_from_slice(v.to_string().as_bytes());
            out.push(b'\n');
        }
        starts.push(out.len());
        let session = serde_json::json!({"type": "session", "session": 0, "connect_ns": 0,
            "client": "hé", "ready": true, "error": "déjà ✓ ü"});
        out.extend_from_slice(session.to_string().as_bytes()); // raw UTF-8, not escapes
        out.push(b'\n');
        (out, starts)
    }

    fn read_bytes(b: &[u8]) -> (Vec<Record>, ReadStats) {
        let mut recs = Vec::new();
        let st = read_from(b, |r| recs.push(r)).unwrap();
        (recs, st)
    }

    /// The property every reader of the calls file keeps: cut anywhere, it reads every record
    /// that is whole and, when it did not reach the end of one, says exactly where it stopped.
    fn check_cut(whole: &[u8], starts: &[usize], at: usize) {
        let (all, _) = read_bytes(whole);
        let (recs, st) = read_bytes(&whole[..at]);
        // Records whose line (without the newline) is wholly before the cut.
        let complete = starts
            .iter()
            .enumerate()
            .filter(|&(i, _)| {
                let end = starts.get(i + 1).copied().unwrap_or(whole.len()) - 1;
                end <= at
            })
            .count();
        assert_eq!(recs.len(), complete, "cut at {at}");
        assert_eq!(&recs[..], &all[..complete], "cut at {at}");
        let line_start = starts.iter().rposition(|&s| s < at);
        let at_boundary = at == 0 || whole[at - 1] == b'\n';
        assert_eq!(st.cut, !at_boundary, "cut at {at}");
        if at_boundary {
            assert_eq!(st.bad_lines, 0, "cut at {at}");
            assert_eq!(st.first_bad, None);
        } else {
            let i = line_start.unwrap();
            assert_eq!(st.last_line, Some((i as u64 + 1, starts[i] as u64)));
            if complete == i + 1 {
                // Only the newline is missing: the record is whole.
                assert_eq!(st.bad_lines, 0, "cut at {at}");
            } else {
                assert_eq!(st.bad_lines, 1, "cut at {at}");
                assert!(st.torn_last_line);
                let bad = st.first_bad.clone().unwrap();
                assert_eq!((bad.line, bad.offset), (i as u64 + 1, starts[i] as u64));
                assert_eq!(st.bad_inside(), 0);
            }
        }
    }

    #[test]
    fn a_file_cut_at_every_offset_of_its_last_records_reads_every_whole_record() {
        let (whole, starts) = file(4);
        // The last two records: a call and a session, both with multi-byte characters.
        for at in starts[3]..=whole.len() {
            check_cut(&whole, &starts, at);
        }
        let (recs, st) = read_bytes(&whole);
        assert_eq!(recs.len(), 5);
        assert_eq!(st.records, 5);
        assert!(!st.cut && st.bad_lines == 0);
    }

    #[test]
    fn a_line_cut_inside_a_multibyte_character_is_a_torn_line_not_an_error() {
        let (whole, starts) = file(2);
        let last = &whole[starts[2]..];
        let inside = last.iter().position(|&b| b >= 0xc0).unwrap() + 1;
        let (recs, st) = read_bytes(&whole[..starts[2] + inside]);
        assert_eq!(recs.len(), 2);
        assert!(st.cut && st.torn_last_line);
        let bad = st.first_bad.unwrap();
        assert_eq!((bad.line, bad.offset), (3, starts[2] as u64));
        assert!(bad.why.starts_with("not UTF-8"), "{}", bad.why);
    }

    #[test]
    fn a_bad_line_in_the_middle_is_located_and_the_rest_read() {
        let (mut whole, starts) = file(3);
        whole[starts[1] + 5] = 0xff;
        let (recs, st) = read_bytes(&whole);
        assert_eq!(recs.len(), 3);
        assert!(!st.cut && !st.torn_last_line);
        assert_eq!(st.bad_lines, 1);
        assert_eq!(st.bad_inside(), 1);
        let bad = st.first_bad.unwrap();
        assert_eq!((bad.line, bad.offset), (2, starts[1] as u64));
        assert_eq!(st.lines, 4);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn a_file_cut_anywhere_reads_every_whole_record(n in 1u64..12, frac in 0.0f64..1.0) {
            let (whole, starts) = file(n);
            let at = (frac * whole.len() as f64) as usize;
            check_cut(&whole, &starts, at);
        }
    }
}
