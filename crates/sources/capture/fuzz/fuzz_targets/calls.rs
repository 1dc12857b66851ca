//! Fuzz target: any bytes as a calls file (`capture-calls.jsonl`), through the one reader that
//! `capture info` and `replay` share. It never fails on content (only on I/O), its counts add up,
//! the first bad line it names begins a line, and the file cut where the first byte says reads the
//! same whole records as the whole file up to the cut, saying so when it ends cut.
#![no_main]

use dbscope_capture::calls_file::{read_from, ReadStats, Record};
use libfuzzer_sys::fuzz_target;

fn read(data: &[u8]) -> (Vec<Record>, ReadStats) {
    let mut recs = Vec::new();
    let st = read_from(data, |r| recs.push(r)).expect("reading bytes in memory cannot fail");
    (recs, st)
}

fn check(data: &[u8], recs: &[Record], st: &ReadStats) {
    assert_eq!(st.bytes, data.len() as u64);
    assert_eq!(st.records, recs.len() as u64);
    assert_eq!(st.records + st.bad_lines, st.lines);
    let tail = &data[data.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)..];
    assert_eq!(st.cut, !tail.iter().all(u8::is_ascii_whitespace));
    if let Some(bad) = &st.first_bad {
        let at = bad.offset as usize;
        assert!(at < data.len());
        assert!(at == 0 || data[at - 1] == b'\n');
        let line = 1 + data[..at].iter().filter(|&&b| b == b'\n').count() as u64;
        assert_eq!(bad.line, line);
    }
    assert!(!st.torn_last_line || (st.cut && st.bad_lines > 0));
}

fuzz_target!(|input: &[u8]| {
    let (cut, data) = match input.split_first() {
        Some((&c, rest)) => (c as usize * rest.len() / 255, rest),
        None => (0, input),
    };
    let (whole, sw) = read(data);
    check(data, &whole, &sw);
    let (part, sp) = read(&data[..cut]);
    check(&data[..cut], &part, &sp);
    // The records of the lines whole before the cut are the whole file's first records; a last
    // line without its newline that still reads is said (`cut`), never silently complete.
    let from_whole_lines = part.len() - usize::from(sp.cut && !sp.torn_last_line);
    assert_eq!(&part[..from_whole_lines], &whole[..from_whole_lines]);
});
