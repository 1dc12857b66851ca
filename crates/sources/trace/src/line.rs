//! One line of a 10046 trace classified into a record, without copying: the lexical layer of the reader.
//!
//! Records and their fields (10g to 23ai; older releases lack some fields, which are then `None`):
//! - db calls `PARSE|EXEC|FETCH|CLOSE|UNMAP #c:c=,e=,p=,cr=,cu=,mis=,r=,dep=,og=,plh=,tim=` and LOB calls
//!   `LOBREAD: type=…,bytes=…,c=,e=,p=,cr=,cu=,tim=` (any `LOB…:` keyword);
//! - `WAIT #c: nam='…' ela= N <p1name>=v <p2name>=v <p3name>=v obj#= tim=`; parameter names hold spaces
//!   and `#`, so fields are found as ` name=value` pairs, not split on whitespace;
//! - `PARSING IN CURSOR #c len= dep= uid= oct= lid= tim= hv= ad= [sqlid=]`, `END OF STMT`,
//!   `PARSE ERROR #c:len= dep= … err=`, `ERROR #c:err= tim=`, `XCTEND rlbk=, rd_only=[, tim=]`,
//!   `STAT #c id= cnt= pid= pos= obj= op='…'`, `BINDS #c:`;
//! - `*** …` lines: timestamps (`*** 2012-11-30 23:21:45.691`, `*** 2024-03-26T18:58:52.935374-07:00 (PDB1(3))`)
//!   and `*** KEY:(value) timestamp` lines (`SESSION ID`, `MODULE NAME`, …), `*** TRACE CONTINUED FROM FILE`.
//!
//! A line that starts like a record but whose fields cannot be read is [`Record::Malformed`] with the
//! reason; a line that is no record at all is [`Record::Other`].

use std::sync::LazyLock;

use memchr::memmem;

/// Searchers for the needles looked for on every STAT and `***` line, built once
/// (`memmem::find` would build one per call).
static OP_QUOTE: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(b"op='"));
static COLON_PAREN: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b":("));

/// The kind of a database call line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CallKind {
    /// `PARSE`
    Parse,
    /// `EXEC`
    Exec,
    /// `FETCH`
    Fetch,
    /// `CLOSE`
    Close,
    /// `UNMAP`
    Unmap,
    /// A LOB call (`LOBREAD`, `LOBWRITE`, `LOBTMPCREATE`, …); which one is in [`Call::lob`].
    Lob,
}

impl CallKind {
    /// The keyword as written in a trace (`LOB` for LOB calls, whose exact keyword is kept separately).
    pub fn as_str(&self) -> &'static str {
        match self {
            CallKind::Parse => "PARSE",
            CallKind::Exec => "EXEC",
            CallKind::Fetch => "FETCH",
            CallKind::Close => "CLOSE",
            CallKind::Unmap => "UNMAP",
            CallKind::Lob => "LOB",
        }
    }
}

/// The statistics of a db call line; times are in the trace's own unit (µs since 9i, cs before).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Call<'a> {
    /// Cursor number (0 for LOB calls, which name none).
    pub cursor: u64,
    /// CPU time `c=`.
    pub c: u64,
    /// Elapsed time `e=`.
    pub e: u64,
    /// Physical reads `p=`.
    pub p: u64,
    /// Consistent reads `cr=`.
    pub cr: u64,
    /// Current reads `cu=`.
    pub cu: u64,
    /// Library cache misses `mis=`.
    pub mis: u64,
    /// Rows `r=`.
    pub r: u64,
    /// Recursive depth `dep=` (0 for a call the application made).
    pub dep: u32,
    /// Plan hash `plh=`.
    pub plh: Option<u64>,
    /// Timestamp `tim=` (end of the call).
    pub tim: Option<u64>,
    /// The LOB keyword (`LOBWRITE`, …) for LOB calls.
    pub lob: &'a [u8],
}

/// A `WAIT` line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wait<'a> {
    /// Cursor number (0 when the wait belongs to no cursor).
    pub cursor: u64,
    /// Event name (`nam=`).
    pub name: &'a [u8],
    /// Elapsed time `ela=`.
    pub ela: u64,
    /// Up to three event parameters as (name, value), in line order (`obj#` and `tim` excluded).
    pub params: [(&'a [u8], &'a [u8]); 3],
    /// How many of `params` are set.
    pub nparams: usize,
    /// Object number `obj#=` (-1 when none).
    pub obj: Option<i64>,
    /// Timestamp `tim=` (end of the wait); absent before 11g.
    pub tim: Option<u64>,
}

/// A `PARSING IN CURSOR` line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Parsing<'a> {
    /// Cursor number.
    pub cursor: u64,
    /// Recursive depth.
    pub dep: u32,
    /// Command type `oct=`.
    pub oct: u32,
    /// Timestamp.
    pub tim: Option<u64>,
    /// Hash value `hv=`.
    pub hv: Option<u64>,
    /// SQL id `sqlid='…'` (10g R2 onward).
    pub sqlid: &'a [u8],
}

/// One classified line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record<'a> {
    /// An empty (or all-blank) line.
    Blank,
    /// A db call line.
    Call(CallKind, Call<'a>),
    /// A WAIT line.
    Wait(Wait<'a>),
    /// `PARSING IN CURSOR`; the SQL text follows until `END OF STMT`.
    Parsing(Parsing<'a>),
    /// `END OF STMT`.
    EndOfStmt,
    /// `PARSE ERROR #c:… err=N`; the SQL text follows on the next lines.
    ParseError {
        /// Cursor number.
        cursor: u64,
        /// Recursive depth.
        dep: u32,
        /// Oracle error number.
        err: u64,
        /// Timestamp.
        tim: Option<u64>,
    },
    /// `ERROR #c:err=N tim=T`.
    Error {
        /// Cursor number.
        cursor: u64,
        /// Oracle error number.
        err: u64,
        /// Timestamp.
        tim: Option<u64>,
    },
    /// `XCTEND rlbk=, rd_only=[, tim=]`.
    XctEnd {
        /// 1 for a rollback.
        rlbk: bool,
        /// 1 when the transaction changed nothing.
        rd_only: bool,
        /// Timestamp (11g+).
        tim: Option<u64>,
    },
    /// `STAT #c id= cnt= pid= pos= obj= op='…'` (a row source line of an execution plan).
    Stat {
        /// Cursor number.
        cursor: u64,
        /// Row source id (1 is the plan's root).
        id: u32,
        /// Parent row source id.
        pid: u32,
        /// Position under the parent.
        pos: u32,
        /// Rows it produced.
        cnt: u64,
        /// Object id (0 when none).
        obj: i64,
        /// The operation with its statistics, e.g. `INDEX RANGE SCAN X (cr=5 pr=1 … card=7)`.
        op: &'a [u8],
    },
    /// `BINDS #c:`; indented bind lines follow.
    Binds {
        /// Cursor number.
        cursor: u64,
    },
    /// `*** <timestamp> [(container)]`.
    Timestamp(&'a [u8]),
    /// `*** KEY:(value) [timestamp]`, e.g. `SESSION ID`, `MODULE NAME`, `CLIENT DRIVER`.
    Tagged {
        /// The key, e.g. `SESSION ID`.
        key: &'a [u8],
        /// The text between the parentheses.
        value: &'a [u8],
        /// The timestamp after it, if any.
        ts: &'a [u8],
    },
    /// `*** TRACE CONTINUED FROM FILE …` and other `***` lines.
    Star(&'a [u8]),
    /// `=====================` separator.
    Separator,
    /// A line that starts like a record but whose fields could not be read.
    Malformed(&'static str),
    /// Any other line (header lines, SQL text, bind values, dumps from other events, free text).
    Other,
}

/// Classifies one line (without its line terminator).
///
/// Inlined, while the record parsers are not: most lines of a trace are no record (bind values,
/// SQL text), and for them this is a test or two on the first byte.
#[inline]
pub fn classify(line: &[u8]) -> Record<'_> {
    let Some(&first) = line.first() else {
        return Record::Blank;
    };
    match first {
        b'W' if line.starts_with(b"WAIT #") => parse_wait(&line[6..]),
        b'F' if line.starts_with(b"FETCH #") => call(CallKind::Fetch, &line[7..]),
        b'E' if line.starts_with(b"EXEC #") => call(CallKind::Exec, &line[6..]),
        b'E' if line.starts_with(b"ERROR #") => parse_error_line(&line[7..]),
        b'E' if line.starts_with(b"END OF STMT") => Record::EndOfStmt,
        b'P' if line.starts_with(b"PARSE #") => call(CallKind::Parse, &line[7..]),
        b'P' if line.starts_with(b"PARSING IN CURSOR #") => parse_parsing(&line[19..]),
        b'P' if line.starts_with(b"PARSE ERROR #") => parse_parse_error(&line[13..]),
        b'C' if line.starts_with(b"CLOSE #") => call(CallKind::Close, &line[7..]),
        b'U' if line.starts_with(b"UNMAP #") => call(CallKind::Unmap, &line[7..]),
        b'S' if line.starts_with(b"STAT #") => parse_stat(&line[6..]),
        b'B' if line.starts_with(b"BINDS #") => match cursor_prefix(&line[7..], b':') {
            Some((cursor, _)) => Record::Binds { cursor },
            None => Record::Malformed("BINDS line without a cursor number"),
        },
        b'X' if line.starts_with(b"XCTEND ") => parse_xctend(&line[7..]),
        b'L' if line.starts_with(b"LOB") => parse_lob(line),
        b'*' if line.starts_with(b"*** ") => parse_star(&line[4..]),
        b'=' if line.iter().all(|&b| b == b'=') && line.len() >= 5 => Record::Separator,
        b' ' | b'\t' if line.iter().all(|b| b.is_ascii_whitespace()) => Record::Blank,
        _ => Record::Other,
    }
}

/// Reads a decimal u64 at the start of `s`; returns it and the rest, or None when no digit is there or
/// the number overflows.
#[inline]
pub fn leading_u64(s: &[u8]) -> Option<(u64, &[u8])> {
    let mut v: u64 = 0;
    let mut i = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        v = v.checked_mul(10)?.checked_add((s[i] - b'0') as u64)?;
        i += 1;
    }
    (i > 0).then_some((v, &s[i..]))
}

/// A whole field value as u64 (the value must be all digits). Inlined everywhere: it runs for
/// every field of every record line, and a call cost about as much as reading a short number.
#[inline(always)]
fn full_u64(s: &[u8]) -> Option<u64> {
    match s.len() {
        0 => None,
        1..=8 => small_u64(s),
        9..=16 => {
            // 8 digits at a time (`tim=` values have 13 to 16 digits, on nearly every line): the
            // last 8, then the first `len - 8`, moved to the top of a word whose other bytes are
            // made '0'.
            let n = s.len();
            let lo = digits8(u64::from_le_bytes(s[n - 8..].try_into().expect("8 bytes")))?;
            let first = u64::from_le_bytes(s[..8].try_into().expect("8 bytes"));
            let pad = 8 * (16 - n) as u32;
            let hi = (first << pad) | (0x3030_3030_3030_3030 & ((1u64 << pad) - 1));
            Some(digits8(hi)? * 100_000_000 + lo)
        }
        _ => match leading_u64(s) {
            Some((v, [])) => Some(v),
            _ => None,
        },
    }
}

/// 1 to 8 digits (too few to overflow) as a number.
#[inline]
fn small_u64(s: &[u8]) -> Option<u64> {
    debug_assert!(!s.is_empty() && s.len() <= 8);
    let mut v = 0u64;
    for &b in s {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + d as u64;
    }
    Some(v)
}

/// The 8 ASCII digits of `w` (the first byte the most significant) as a number, or `None` when a
/// byte is no digit: a handful of word operations instead of a loop with a branch per digit
/// (`tim=` values have 13 to 16 digits, on nearly every line).
#[inline]
fn digits8(w: u64) -> Option<u64> {
    const HI: u64 = 0xf0f0_f0f0_f0f0_f0f0;
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    // Every byte 0x30..=0x3f, and still 0x3_ once 6 is added (so 0x30..=0x39); no byte can carry
    // into the next once the first test holds.
    if w & HI != ZEROS || (w + 0x0606_0606_0606_0606) & HI != ZEROS {
        return None;
    }
    let w = w - ZEROS;
    let w = (w.wrapping_mul(10) + (w >> 8)) & 0x00ff_00ff_00ff_00ff;
    let w = (w.wrapping_mul(100) + (w >> 16)) & 0x0000_ffff_0000_ffff;
    Some((w.wrapping_mul(10_000) + (w >> 32)) & 0xffff_ffff)
}

/// A whole field value as i64 (optional leading `-`).
fn full_i64(s: &[u8]) -> Option<i64> {
    match s.split_first() {
        Some((b'-', rest)) => full_u64(rest)
            .and_then(|v| i64::try_from(v).ok())
            .map(|v| -v),
        _ => full_u64(s).and_then(|v| i64::try_from(v).ok()),
    }
}

/// `123<sep>` at the start: the cursor number and what follows the separator.
#[inline]
fn cursor_prefix(s: &[u8], sep: u8) -> Option<(u64, &[u8])> {
    // Cursor numbers have up to 15 digits: the separator found first, the digits before it
    // read at once (`None` unless they are all digits, as when a digit run ends elsewhere).
    let end = find_from(s, 0, sep);
    let c = full_u64(&s[..end])?;
    Some((c, s.get(end + 1..).unwrap_or(&[])))
}

/// Iterates `key=value` pairs separated by `sep` (`,` for db calls).
fn pairs(s: &[u8], sep: u8) -> impl Iterator<Item = (&[u8], &[u8])> {
    s.split(move |&b| b == sep).filter_map(|kv| {
        let kv = trim(kv);
        let eq = memchr::memchr(b'=', kv)?;
        Some((&kv[..eq], &kv[eq + 1..]))
    })
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

/// Fills the statistics of a call from `c=…,e=…` pairs; `Err` names the first unreadable field.
fn call_fields<'a>(kv: &'a [u8], c: &mut Call<'a>) -> Result<bool, &'static str> {
    if let Some(have_e) = call_fields_usual(kv, c) {
        return Ok(have_e);
    }
    match call_fields_plain(kv, c) {
        Some(have_e) => Ok(have_e),
        None => call_fields_general(kv, c),
    }
}

/// [`call_fields`] for any line.
fn call_fields_general<'a>(kv: &'a [u8], c: &mut Call<'a>) -> Result<bool, &'static str> {
    // A hand-rolled scan of `k=v,k=v,…` (this runs for every db call line of a trace).
    let mut have_e = false;
    // Fields are short: one pass over the bytes beats a memchr call per separator.
    let mut i = 0;
    while i < kv.len() {
        let start = i;
        let mut eq = None;
        while i < kv.len() && kv[i] != b',' {
            if kv[i] == b'=' && eq.is_none() {
                eq = Some(i);
            }
            i += 1;
        }
        let end = i;
        i += 1;
        let Some(eq) = eq else {
            continue;
        };
        let (k, v) = (trim(&kv[start..eq]), trim(&kv[eq + 1..end]));
        let slot: &mut u64 = match k {
            b"c" => &mut c.c,
            b"e" => {
                have_e = true;
                &mut c.e
            }
            b"p" => &mut c.p,
            b"cr" => &mut c.cr,
            b"cu" => &mut c.cu,
            b"mis" => &mut c.mis,
            b"r" => &mut c.r,
            b"dep" => {
                let d = full_u64(v).ok_or("a db call field is not a number")?;
                c.dep = u32::try_from(d).map_err(|_| "dep= is out of range")?;
                continue;
            }
            b"plh" => {
                c.plh = Some(full_u64(v).ok_or("a db call field is not a number")?);
                continue;
            }
            b"tim" => {
                c.tim = Some(full_u64(v).ok_or("a db call field is not a number")?);
                continue;
            }
            // og=, type=, bytes= and fields of future releases are not needed for accounting.
            _ => continue,
        };
        *slot = full_u64(v).ok_or("a db call field is not a number")?;
    }
    Ok(have_e)
}

/// The fields of a PARSE, EXEC, FETCH or UNMAP line from 11g on, in the order Oracle writes them.
const USUAL_FIELDS: [&[u8]; 11] = [
    b"c=", b"e=", b"p=", b"cr=", b"cu=", b"mis=", b"r=", b"dep=", b"og=", b"plh=", b"tim=",
];

/// [`USUAL_FIELDS`] as 8-byte words (little-endian, zero-padded) and the masks of their lengths.
const USUAL_WORDS: [(u64, u64); USUAL_FIELDS.len()] = {
    let mut out = [(0u64, 0u64); USUAL_FIELDS.len()];
    let mut k = 0;
    while k < USUAL_FIELDS.len() {
        let key = USUAL_FIELDS[k];
        assert!(key.len() <= 8);
        let (mut w, mut j) = (0u64, 0);
        while j < key.len() {
            w |= (key[j] as u64) << (8 * j);
            j += 1;
        }
        out[k] = (w, u64::MAX >> (8 * (8 - key.len())));
        k += 1;
    }
    out
};

/// `s` starts with field name `k` of [`USUAL_FIELDS`]: one masked 8-byte compare when `s` has 8
/// bytes, else byte by byte (the field loop is not unrolled, so `starts_with` would call `memcmp`
/// for every field of every db call line).
#[inline(always)]
fn has_usual_field(s: &[u8], k: usize) -> bool {
    match s.get(..8) {
        Some(w) => {
            let (word, mask) = USUAL_WORDS[k];
            u64::from_le_bytes(w.try_into().expect("8 bytes")) & mask == word
        }
        None => s.starts_with(USUAL_FIELDS[k]),
    }
}

/// The most common case of [`call_fields`], fastest: exactly [`USUAL_FIELDS`] with numbers, in
/// that order (each name checked where it must be rather than read and looked up). `None` for
/// anything else, which [`call_fields_plain`] then reads (with the same result wherever this one
/// gives one).
#[inline]
fn call_fields_usual(kv: &[u8], c: &mut Call<'_>) -> Option<bool> {
    let n = kv.len();
    let mut v = [0u64; USUAL_FIELDS.len()];
    let mut i = 0;
    for (k, key) in USUAL_FIELDS.iter().enumerate() {
        if !has_usual_field(kv.get(i..)?, k) {
            return None;
        }
        i += key.len();
        let end = find_from(kv, i, b',');
        // Every field but the last ends at a comma, the last at the end of the line.
        if (end == n) != (k == USUAL_FIELDS.len() - 1) {
            return None;
        }
        v[k] = full_u64(&kv[i..end])?;
        i = end + 1;
    }
    let [cpu, e, p, cr, cu, mis, r, dep, _og, plh, tim] = v;
    *c = Call {
        c: cpu,
        e,
        p,
        cr,
        cu,
        mis,
        r,
        dep: u32::try_from(dep).ok()?,
        plh: Some(plh),
        tim: Some(tim),
        ..*c
    };
    Some(true)
}

/// The common case of [`call_fields`], faster: `k=digits,k=digits,…` with lowercase keys and no
/// spaces. `None` when the line is anything else (LOB `type=` text, spaces, a bad number): the
/// general scan then reads it, with the same result wherever this one returns one.
#[inline]
fn call_fields_plain(kv: &[u8], c: &mut Call<'_>) -> Option<bool> {
    let mut have_e = false;
    let mut i = 0;
    let n = kv.len();
    while i < n {
        let ks = i;
        while i < n && kv[i].is_ascii_lowercase() {
            i += 1;
        }
        if i == ks || i == n || kv[i] != b'=' {
            return None;
        }
        let key = &kv[ks..i];
        i += 1;
        let vs = i;
        i = find_from(kv, i, b',');
        // None unless all digits (and not empty, not too large).
        let v = full_u64(&kv[vs..i])?;
        i += 1;
        match key {
            b"c" => c.c = v,
            b"e" => {
                have_e = true;
                c.e = v;
            }
            b"p" => c.p = v,
            b"cr" => c.cr = v,
            b"cu" => c.cu = v,
            b"mis" => c.mis = v,
            b"r" => c.r = v,
            b"dep" => c.dep = u32::try_from(v).ok()?,
            b"plh" => c.plh = Some(v),
            b"tim" => c.tim = Some(v),
            _ => {}
        }
    }
    Some(have_e)
}

#[inline(never)]
fn call(kind: CallKind, rest: &[u8]) -> Record<'_> {
    let Some((cursor, kv)) = cursor_prefix(rest, b':') else {
        return Record::Malformed("db call line without a cursor number");
    };
    let mut c = Call {
        cursor,
        ..Call::default()
    };
    match call_fields(kv, &mut c) {
        Ok(true) => Record::Call(kind, c),
        Ok(false) => Record::Malformed("db call line without e="),
        Err(why) => Record::Malformed(why),
    }
}

#[inline(never)]
fn parse_lob(line: &[u8]) -> Record<'_> {
    let Some(colon) = memchr::memchr(b':', line) else {
        return Record::Other;
    };
    let kw = &line[..colon];
    if !kw.iter().all(|b| b.is_ascii_uppercase()) {
        return Record::Other;
    }
    let mut c = Call {
        lob: kw,
        ..Call::default()
    };
    match call_fields(&line[colon + 1..], &mut c) {
        Ok(true) => Record::Call(CallKind::Lob, c),
        Ok(false) => Record::Malformed("LOB call line without e="),
        Err(why) => Record::Malformed(why),
    }
}

#[inline(never)]
fn parse_wait(rest: &[u8]) -> Record<'_> {
    let Some((cursor, tail)) = cursor_prefix(rest, b':') else {
        return Record::Malformed("WAIT line without a cursor number");
    };
    let after = if let Some(a) = tail.strip_prefix(b" nam='") {
        a
    } else {
        let Some(at) = memmem::find(tail, b"nam='") else {
            return Record::Malformed("WAIT line without nam='…'");
        };
        &tail[at + 5..]
    };
    // The name ends at the quote before ` ela=`: names may themselves contain quotes.
    let mut from = 0;
    let end = loop {
        let Some(q) = memchr::memchr(b'\'', &after[from..]) else {
            return Record::Malformed("WAIT line without ela=");
        };
        if after[from + q + 1..].starts_with(b" ela=") {
            break from + q;
        }
        from += q + 1;
    };
    let name = &after[..end];
    let fields = &after[end + 6..];
    let fields = trim_start(fields);
    let Some((ela, s)) = leading_u64(fields) else {
        return Record::Malformed("WAIT line whose ela= is not a number");
    };
    let mut w = Wait {
        cursor,
        name,
        ela,
        ..Wait::default()
    };
    match wait_pairs_fast(s, &mut w) {
        Ok(()) => Record::Wait(w),
        Err(why) => Record::Malformed(why),
    }
}

/// The first `pat` in `s` at or after `from`, else `s.len()`: 8 bytes at a time (names and values
/// are a few to 16 bytes long, too short for `memchr`'s setup to pay off).
#[inline]
fn find_from(s: &[u8], from: usize, pat: u8) -> usize {
    // The high bit of each byte of `w` equal to `pat`, exactly (no borrow between bytes).
    #[inline]
    fn hits(w: u64, pat: u8) -> u64 {
        const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
        let x = w ^ u64::from_ne_bytes([pat; 8]);
        !(((x & LOW7) + LOW7) | x) & !LOW7
    }
    let word = |at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"));
    let n = s.len();
    let mut i = from;
    while i + 8 <= n {
        let m = hits(word(i), pat);
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    if i >= n {
        return n;
    }
    if n >= 8 {
        // The last word of `s`, without the bytes before `i`.
        let m = hits(word(n - 8), pat) >> (8 * (i + 8 - n));
        return if m != 0 {
            i + (m.trailing_zeros() / 8) as usize
        } else {
            n
        };
    }
    i + s[i..].iter().position(|&b| b == pat).unwrap_or(n - i)
}

/// One ` name=value` pair of a WAIT line into `w`.
#[inline(always)]
fn wait_pair<'a>(w: &mut Wait<'a>, key: &'a [u8], value: &'a [u8]) -> Result<(), &'static str> {
    match key {
        b"tim" => w.tim = Some(full_u64(value).ok_or("WAIT line whose tim= is not a number")?),
        b"obj#" => w.obj = Some(full_i64(value).ok_or("WAIT line whose obj#= is not a number")?),
        _ => {
            if w.nparams < 3 {
                w.params[w.nparams] = (key, value);
                w.nparams += 1;
            }
        }
    }
    Ok(())
}

/// The ` name=value` pairs after `ela=` of a WAIT line: names may hold spaces, so a name runs from
/// the end of the previous value to the next `=`; a value runs to the next space. The plain
/// statement of the rule, which [`wait_pairs_fast`] must agree with (tests only).
#[cfg(test)]
fn wait_pairs<'a>(mut s: &'a [u8], w: &mut Wait<'a>) -> Result<(), &'static str> {
    loop {
        s = trim_start(s);
        if s.is_empty() {
            return Ok(());
        }
        let Some(eq) = s.iter().position(|&b| b == b'=') else {
            return Err("WAIT line with text after its last name=value pair");
        };
        let key = trim(&s[..eq]);
        let v_start = trim_start(&s[eq + 1..]);
        let v_len = v_start
            .iter()
            .position(|&b| b == b' ')
            .unwrap_or(v_start.len());
        wait_pair(w, key, &v_start[..v_len])?;
        s = &v_start[v_len..];
    }
}

/// [`wait_pairs`] with indices instead of sub-slices: the same pairs in far fewer instructions
/// and branches (this runs for every WAIT line, most lines of a trace). Names and values are found
/// through bit masks of where the `=` and blanks are when the text is shorter than 128 bytes (as
/// nearly always), else a word at a time.
#[inline]
fn wait_pairs_fast<'a>(s: &'a [u8], w: &mut Wait<'a>) -> Result<(), &'static str> {
    if s.len() < 128 {
        return wait_pairs_marked(s, w);
    }
    let n = s.len();
    let mut i = 0;
    loop {
        while i < n && s[i] == b' ' {
            i += 1;
        }
        if i == n {
            return Ok(());
        }
        let ks = i;
        i = find_from(s, i, b'=');
        if i == n {
            return Err("WAIT line with text after its last name=value pair");
        }
        let ke = i;
        i += 1;
        while i < n && s[i] == b' ' {
            i += 1;
        }
        let vs = i;
        i = find_from(s, i, b' ');
        wait_pair(w, wait_key(&s[ks..ke]), &s[vs..i])?;
    }
}

/// A WAIT parameter name: names rarely have blanks around them, so they are trimmed only then.
#[inline(always)]
fn wait_key(key: &[u8]) -> &[u8] {
    match key {
        [f, .., l] if !f.is_ascii_whitespace() && !l.is_ascii_whitespace() => key,
        [f] if !f.is_ascii_whitespace() => key,
        _ => trim(key),
    }
}

/// [`wait_pairs_fast`] for text shorter than 128 bytes: where its `=`, blanks and other bytes are
/// as two 64-bit masks each, with a bit at `s.len()` in all three so that every search ends at a
/// bit (a search is then a shift and a trailing-zero count, without a loop or bounds test).
#[inline]
fn wait_pairs_marked<'a>(s: &'a [u8], w: &mut Wait<'a>) -> Result<(), &'static str> {
    let n = s.len();
    debug_assert!(n < 128);
    let ((e0, p0), (e1, p1)) = (block_marks(s, 0), block_marks(s, 64));
    // Bits of the bytes of `s`, and the bit at its end.
    let valid = [
        if n >= 64 { u64::MAX } else { (1u64 << n) - 1 },
        if n <= 64 { 0 } else { (1u64 << (n - 64)) - 1 },
    ];
    let end = if n < 64 {
        [1u64 << n, 0]
    } else {
        [0, 1u64 << (n - 64)]
    };
    let eq = [e0 | end[0], e1 | end[1]];
    let sp = [p0 | end[0], p1 | end[1]];
    let other = [(!p0 & valid[0]) | end[0], (!p1 & valid[1]) | end[1]];
    // The first bit of `m` at or after `i` (`i <= n`, so there is one).
    #[inline(always)]
    fn next(m: &[u64; 2], i: usize) -> usize {
        if i < 64 {
            let x = m[0] >> i;
            if x != 0 {
                return i + x.trailing_zeros() as usize;
            }
            return 64 + m[1].trailing_zeros() as usize;
        }
        i + (m[1] >> (i - 64)).trailing_zeros() as usize
    }
    let mut i = 0;
    loop {
        i = next(&other, i);
        if i == n {
            return Ok(());
        }
        let ks = i;
        i = next(&eq, i);
        if i == n {
            return Err("WAIT line with text after its last name=value pair");
        }
        let ke = i;
        let vs = next(&other, i + 1);
        i = next(&sp, vs);
        wait_pair(w, wait_key(&s[ks..ke]), &s[vs..i])?;
    }
}

/// The `=` and `' '` masks of `s[at..]`, up to 64 bytes (bit `k` for byte `at + k`; no bit for
/// bytes past the end of `s`).
#[inline]
fn block_marks(s: &[u8], at: usize) -> (u64, u64) {
    let n = s.len();
    let (mut eq, mut sp) = (0u64, 0u64);
    for k in 0..4 {
        let from = at + 16 * k;
        if from >= n {
            break;
        }
        let (e, p) = if from + 16 <= n {
            lane_marks(&s[from..from + 16])
        } else if n >= 16 {
            // The last 16 bytes of `s`, without those before `from`.
            let (e, p) = lane_marks(&s[n - 16..]);
            let shift = from - (n - 16);
            (e >> shift, p >> shift)
        } else {
            lane_marks_bytes(&s[from..])
        };
        eq |= (e as u64) << (16 * k);
        sp |= (p as u64) << (16 * k);
    }
    (eq, sp)
}

/// The `=` and `' '` masks of 16 bytes: one SSE2 compare each.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(unsafe_code)]
fn lane_marks(s: &[u8]) -> (u32, u32) {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_movemask_epi8, _mm_set1_epi8, _mm_set_epi64x};
    let word = |at: usize| i64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"));
    // SAFETY: SSE2 is part of x86_64 itself (every x86_64 CPU has it, and the compiler assumes it
    // for this target); the intrinsics take values, no pointer.
    let (eq, sp) = unsafe {
        let v = _mm_set_epi64x(word(8), word(0));
        (
            _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'=' as i8))),
            _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b' ' as i8))),
        )
    };
    (eq as u32 & 0xffff, sp as u32 & 0xffff)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn lane_marks(s: &[u8]) -> (u32, u32) {
    lane_marks_swar(s)
}

/// The `=` and `' '` masks of 16 bytes, a word at a time (where there is no SSE2).
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline(always)]
fn lane_marks_swar(s: &[u8]) -> (u32, u32) {
    // The high bit of each byte of `w` equal to `pat`, exactly (no borrow between bytes), then
    // those 8 bits gathered into the low byte.
    fn bits(w: u64, pat: u8) -> u32 {
        const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
        let x = w ^ u64::from_ne_bytes([pat; 8]);
        let h = !(((x & LOW7) + LOW7) | x) & !LOW7;
        ((h >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u32
    }
    let word = |at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"));
    let (lo, hi) = (word(0), word(8));
    (
        bits(lo, b'=') | bits(hi, b'=') << 8,
        bits(lo, b' ') | bits(hi, b' ') << 8,
    )
}

/// The masks of fewer than 16 bytes (a WAIT line with a very short tail).
fn lane_marks_bytes(s: &[u8]) -> (u32, u32) {
    s.iter().enumerate().fold((0, 0), |(e, p), (k, &b)| {
        (e | ((b == b'=') as u32) << k, p | ((b == b' ') as u32) << k)
    })
}

fn trim_start(s: &[u8]) -> &[u8] {
    let i = s.iter().position(|&b| b != b' ').unwrap_or(s.len());
    &s[i..]
}

#[inline(never)]
fn parse_stat(rest: &[u8]) -> Record<'_> {
    let Some((cursor, kv)) = cursor_prefix(rest, b' ') else {
        return Record::Malformed("STAT line without a cursor number");
    };
    // op='…' runs to the last quote of the line: the text may hold quotes and `=`.
    let (kv, op) = match OP_QUOTE.find(kv) {
        Some(at) => {
            let text = &kv[at + 4..];
            let end = text.iter().rposition(|&b| b == b'\'').unwrap_or(text.len());
            (&kv[..at], &text[..end])
        }
        None => (kv, &[][..]),
    };
    let (mut id, mut pid, mut pos, mut cnt, mut obj) = (None, 0, 0, 0, 0);
    for (k, v) in pairs(kv, b' ') {
        let n = || full_u64(v).and_then(|x| u32::try_from(x).ok());
        match k {
            b"id" => id = n(),
            b"pid" => pid = n().unwrap_or(0),
            b"pos" => pos = n().unwrap_or(0),
            b"cnt" => cnt = full_u64(v).unwrap_or(0),
            b"obj" => obj = full_i64(v).unwrap_or(0),
            _ => {}
        }
    }
    match id {
        Some(id) => Record::Stat {
            cursor,
            id,
            pid,
            pos,
            cnt,
            obj,
            op,
        },
        None => Record::Malformed("STAT line without id="),
    }
}

#[inline(never)]
fn parse_parsing(rest: &[u8]) -> Record<'_> {
    let Some((cursor, kv)) = cursor_prefix(rest, b' ') else {
        return Record::Malformed("PARSING IN CURSOR without a cursor number");
    };
    let mut p = Parsing {
        cursor,
        ..Parsing::default()
    };
    let mut seen_dep = false;
    for (k, v) in pairs(kv, b' ') {
        match k {
            b"dep" => match full_u64(v).and_then(|d| u32::try_from(d).ok()) {
                Some(d) => {
                    p.dep = d;
                    seen_dep = true;
                }
                None => return Record::Malformed("PARSING IN CURSOR whose dep= is not a number"),
            },
            b"oct" => p.oct = full_u64(v).and_then(|d| u32::try_from(d).ok()).unwrap_or(0),
            b"tim" => p.tim = full_u64(v),
            b"hv" => p.hv = full_u64(v),
            b"sqlid" => {
                p.sqlid = v
                    .strip_prefix(b"'")
                    .and_then(|v| v.strip_suffix(b"'"))
                    .unwrap_or(v)
            }
            _ => {}
        }
    }
    if !seen_dep {
        return Record::Malformed("PARSING IN CURSOR without dep=");
    }
    Record::Parsing(p)
}

#[inline(never)]
fn parse_parse_error(rest: &[u8]) -> Record<'_> {
    let Some((cursor, kv)) = cursor_prefix(rest, b':') else {
        return Record::Malformed("PARSE ERROR without a cursor number");
    };
    let (mut dep, mut err, mut tim) = (0, None, None);
    for (k, v) in pairs(kv, b' ') {
        match k {
            b"dep" => dep = full_u64(v).and_then(|d| u32::try_from(d).ok()).unwrap_or(0),
            b"err" => err = full_u64(v),
            b"tim" => tim = full_u64(v),
            _ => {}
        }
    }
    match err {
        Some(err) => Record::ParseError {
            cursor,
            dep,
            err,
            tim,
        },
        None => Record::Malformed("PARSE ERROR without err="),
    }
}

#[inline(never)]
fn parse_error_line(rest: &[u8]) -> Record<'_> {
    let Some((cursor, kv)) = cursor_prefix(rest, b':') else {
        return Record::Malformed("ERROR line without a cursor number");
    };
    let (mut err, mut tim) = (None, None);
    for (k, v) in pairs(kv, b' ') {
        match k {
            b"err" => err = full_u64(v),
            b"tim" => tim = full_u64(v),
            _ => {}
        }
    }
    match err {
        Some(err) => Record::Error { cursor, err, tim },
        None => Record::Malformed("ERROR line without err="),
    }
}

#[inline(never)]
fn parse_xctend(kv: &[u8]) -> Record<'_> {
    xctend_plain(kv).unwrap_or_else(|| xctend_general(kv))
}

/// The common case of [`parse_xctend`], faster: exactly `rlbk=D, rd_only=D[, tim=DIGITS]` with
/// single digits. `None` for anything else, which the general reading then takes (with the same
/// result wherever this one gives one).
#[inline]
fn xctend_plain(kv: &[u8]) -> Option<Record<'static>> {
    let digit = |b: u8| b.is_ascii_digit().then_some(b != b'0');
    let rest = kv.strip_prefix(b"rlbk=")?;
    let (&r, rest) = rest.split_first()?;
    let rest = rest.strip_prefix(b", rd_only=")?;
    let (&ro, rest) = rest.split_first()?;
    let tim = match rest {
        [] => None,
        _ => Some(full_u64(rest.strip_prefix(b", tim=")?)?),
    };
    Some(Record::XctEnd {
        rlbk: digit(r)?,
        rd_only: digit(ro)?,
        tim,
    })
}

fn xctend_general(kv: &[u8]) -> Record<'_> {
    let (mut rlbk, mut rd_only, mut tim) = (None, None, None);
    for (k, v) in pairs(kv, b',') {
        match k {
            b"rlbk" => rlbk = full_u64(v),
            b"rd_only" => rd_only = full_u64(v),
            b"tim" => tim = full_u64(v),
            _ => {}
        }
    }
    match (rlbk, rd_only) {
        (Some(r), Some(ro)) => Record::XctEnd {
            rlbk: r != 0,
            rd_only: ro != 0,
            tim,
        },
        _ => Record::Malformed("XCTEND without rlbk= and rd_only="),
    }
}

#[inline(never)]
fn parse_star(rest: &[u8]) -> Record<'_> {
    if rest.first().is_some_and(|b| b.is_ascii_digit()) {
        return Record::Timestamp(rest);
    }
    if let Some(open) = COLON_PAREN.find(rest) {
        let key = &rest[..open];
        if key.iter().all(|&b| b.is_ascii_uppercase() || b == b' ') {
            // The value may itself contain parentheses: take the last `)` that is followed by a space
            // or the end of the line.
            let after = &rest[open + 2..];
            let close = after
                .windows(2)
                .rposition(|w| w == b") ")
                .or_else(|| after.ends_with(b")").then(|| after.len() - 1));
            if let Some(close) = close {
                return Record::Tagged {
                    key,
                    value: &after[..close],
                    ts: trim(&after[close + 1..]),
                };
            }
        }
    }
    Record::Star(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_with_spaces_and_hashes_in_parameter_names() {
        let l = b"WAIT #47124064145648: nam='log file sync' ela= 1043 buffer#=101808 sync scn=1266588527 p3=0 obj#=-1 tim=1347583167588250";
        let Record::Wait(w) = classify(l) else {
            panic!("not a wait: {:?}", classify(l))
        };
        assert_eq!(w.cursor, 47124064145648);
        assert_eq!(w.name, b"log file sync");
        assert_eq!(w.ela, 1043);
        assert_eq!(w.nparams, 3);
        assert_eq!(w.params[0], (&b"buffer#"[..], &b"101808"[..]));
        assert_eq!(w.params[1], (&b"sync scn"[..], &b"1266588527"[..]));
        assert_eq!(w.params[2], (&b"p3"[..], &b"0"[..]));
        assert_eq!(w.obj, Some(-1));
        assert_eq!(w.tim, Some(1347583167588250));
    }

    #[test]
    fn wait_without_tim_and_obj_10g() {
        let l =
            b"WAIT #3: nam='SQL*Net message to client' ela= 5 driver id=1650815232 #bytes=1 p3=0";
        let Record::Wait(w) = classify(l) else {
            panic!()
        };
        assert_eq!(w.params[0].0, b"driver id");
        assert_eq!(w.params[1].0, b"#bytes");
        assert_eq!((w.obj, w.tim), (None, None));
    }

    #[test]
    fn calls_and_their_fields() {
        let l = b"FETCH #139623166535832:c=404,e=404,p=1,cr=4,cu=0,mis=0,r=10,dep=0,og=1,plh=2725028981,tim=5793964643501";
        let Record::Call(CallKind::Fetch, c) = classify(l) else {
            panic!()
        };
        assert_eq!((c.c, c.e, c.p, c.cr, c.r, c.dep), (404, 404, 1, 4, 10, 0));
        assert_eq!(c.tim, Some(5793964643501));
        let l = b"LOBWRITE: type=TEMPORARY LOB,bytes=5,c=169,e=169,p=0,cr=0,cu=7,tim=4696599871319";
        let Record::Call(CallKind::Lob, c) = classify(l) else {
            panic!()
        };
        assert_eq!((c.lob, c.e, c.cu), (&b"LOBWRITE"[..], 169, 7));
        // Truncated and joined records are malformed, not misread.
        assert!(matches!(
            classify(b"EXEC #1:c=73,e=73,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=2725028981,ti"),
            Record::Call(..)
        ));
        assert!(matches!(
            classify(b"FETCH #1:c=1,e=2,tim=5793511831311WAIT #1: nam='x' ela= 1"),
            Record::Malformed(_)
        ));
        assert!(matches!(
            classify(b"LOBWRITE: type=TEMPORARY LOB,bytes=5,c=169,e=169,p=0,cr=0,cu="),
            Record::Malformed(_)
        ));
    }

    proptest::proptest! {
        /// The reading of the usual db call fields agrees with the general scan wherever it
        /// answers (and answers on the usual lines).
        #[test]
        fn usual_call_fields_agree_with_the_general_scan(
            vals in proptest::collection::vec(
                proptest::prop_oneof![
                    40 => "[0-9]{1,16}",
                    1 => "[0-9]{17,21}",
                    1 => "[0-9]{0,3}[a ,=]?[0-9]{0,2}",
                ],
                11,
            ),
            drop in proptest::option::weighted(0.1, 0usize..11),
            extra in proptest::prop_oneof![8 => "", 1 => ",|,x=1|,tim=2| "],
            // One byte of one field name changed: the fast reading must not take it for the name.
            bend in proptest::option::weighted(0.2, (0usize..11, 0usize..5, proptest::char::range('a', 'z'))),
        ) {
            let mut kv: Vec<String> = USUAL_FIELDS
                .iter()
                .zip(&vals)
                .map(|(k, v)| format!("{}{v}", String::from_utf8_lossy(k)))
                .collect();
            if let Some((f, at, ch)) = bend {
                let name_len = USUAL_FIELDS[f].len() - 1;
                let at = at % name_len;
                kv[f].replace_range(at..at + 1, &ch.to_string());
            }
            if let Some(d) = drop {
                kv.remove(d);
            }
            let kv = kv.join(",") + &extra;
            let (mut a, mut b) = (Call::default(), Call::default());
            let usual = call_fields_usual(kv.as_bytes(), &mut a);
            if let Some(have_e) = usual {
                proptest::prop_assert_eq!(call_fields_general(kv.as_bytes(), &mut b), Ok(have_e));
                proptest::prop_assert_eq!(a, b);
            }
            let plain_digits = vals.iter().all(|v| {
                !v.is_empty() && v.len() < 20 && v.bytes().all(|b| b.is_ascii_digit())
            }) && drop.is_none() && extra.is_empty() && bend.is_none();
            if plain_digits && vals[7].parse::<u64>().is_ok_and(|d| d <= u32::MAX as u64) {
                proptest::prop_assert!(usual.is_some(), "{}", kv);
            }
        }

        /// The fast reading of XCTEND agrees with the general one wherever it answers.
        #[test]
        fn plain_xctend_agrees_with_the_general_reading(
            r in "[0-9]|[0-9a ]{0,2}", ro in "[019]|[019,]{0,2}",
            tail in "|, tim=[0-9]{1,16}|(, ?tim=[0-9]{0,20}| |,|x=1|a){0,3}"
        ) {
            let kv = format!("rlbk={r}, rd_only={ro}{tail}");
            let plain = xctend_plain(kv.as_bytes());
            if let Some(p) = plain {
                proptest::prop_assert_eq!(p, xctend_general(kv.as_bytes()));
            }
        }

        /// The fast scan of db call fields agrees with the general one wherever it answers.
        #[test]
        fn plain_call_fields_agree_with_the_general_scan(
            kv in "((c|e|p|cr|cu|mis|r|dep|og|plh|tim|type|X| e)=( ?[0-9]{0,21}|-1|ab)(,|, |;)?){0,12}"
        ) {
            let (mut a, mut b) = (Call::default(), Call::default());
            if let Some(have_e) = call_fields_plain(kv.as_bytes(), &mut a) {
                proptest::prop_assert_eq!(call_fields_general(kv.as_bytes(), &mut b), Ok(have_e));
                proptest::prop_assert_eq!(a, b);
            }
        }
    }

    /// [`wait_pairs_fast`] gives what the plain statement of the rule, [`wait_pairs`], gives: the
    /// same error, or the same pairs.
    fn fast_pairs_agree(s: &[u8]) -> Result<(), proptest::test_runner::TestCaseError> {
        let (mut a, mut b) = (Wait::default(), Wait::default());
        let ra = wait_pairs_fast(s, &mut a);
        let rb = wait_pairs(s, &mut b);
        proptest::prop_assert_eq!(ra, rb);
        if ra.is_ok() {
            proptest::prop_assert_eq!(a, b);
        }
        Ok(())
    }

    /// The reading of an ASCII number by the text's own parser: the reference for [`full_u64`].
    fn reference_u64(s: &[u8]) -> Option<u64> {
        if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(s).ok()?.parse().ok()
    }

    proptest::proptest! {
        /// The word-at-a-time search finds what a byte loop finds, from anywhere.
        #[test]
        fn find_from_agrees_with_a_byte_loop(
            s in proptest::collection::vec(proptest::sample::select(&b"= a\x80\xff\x3c\x3e"[..]), 0..40),
            from in 0usize..45,
        ) {
            let from = from.min(s.len());
            for pat in [b'=', b' '] {
                let want = s[from..].iter().position(|&b| b == pat).map_or(s.len(), |p| from + p);
                proptest::prop_assert_eq!(find_from(&s, from, pat), want);
            }
        }
    }

    proptest::proptest! {
        /// The 16-byte masks of `=` and blanks, whichever way they are built, mark what a byte
        /// loop finds.
        #[test]
        fn lane_marks_agree_with_a_byte_loop(
            s in proptest::collection::vec(proptest::sample::select(&b"= a\x80\xff\x3c\x3e\xbd\xa0"[..]), 16..17),
        ) {
            let want = lane_marks_bytes(&s);
            proptest::prop_assert_eq!(lane_marks(&s), want);
            proptest::prop_assert_eq!(lane_marks_swar(&s), want);
        }
    }

    proptest::proptest! {
        /// WAIT pairs found through masks agree with the plain rule at every length around the
        /// mask words' borders (63 to 65, 127 and 128 bytes, where the word-at-a-time scan takes
        /// over).
        #[test]
        fn marked_wait_pairs_agree_at_word_borders(
            s in proptest::collection::vec(
                proptest::sample::select(&b"   ==ab#-019"[..]), 56..136),
            tail in proptest::sample::select(&["", " tim=123", " obj#=-1 tim=9", "x", " ", "="][..]),
        ) {
            let mut s = s;
            s.extend_from_slice(tail.as_bytes());
            fast_pairs_agree(&s)?;
        }
    }

    /// Numbers of every length up to 20 digits read as the standard library reads them, and a
    /// non-digit at any place of one makes it no number.
    #[test]
    fn full_u64_reads_every_length() {
        let digits = b"98765432109876543210";
        for n in 1..=digits.len() {
            let s = &digits[..n];
            assert_eq!(full_u64(s), reference_u64(s), "{n} digits");
            for bad in 0..n {
                let mut t = s.to_vec();
                t[bad] = b':';
                assert_eq!(full_u64(&t), None, "{n} digits, byte {bad} no digit");
            }
        }
    }

    /// The reading of a cursor number before the separator by the text's own parser.
    fn reference_cursor(s: &[u8], sep: u8) -> Option<(u64, &[u8])> {
        let digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
        let c: u64 = std::str::from_utf8(&s[..digits]).ok()?.parse().ok()?;
        match &s[digits..] {
            [] => Some((c, &[])),
            [b, rest @ ..] if *b == sep => Some((c, rest)),
            _ => None,
        }
    }

    proptest::proptest! {
        /// Cursor numbers are read as the standard library reads them.
        #[test]
        fn cursor_prefix_agrees_with_parse(
            s in proptest::collection::vec(proptest::sample::select(&b"0123456789:: x9"[..]), 0..30)
        ) {
            for sep in [b':', b' '] {
                proptest::prop_assert_eq!(cursor_prefix(&s, sep), reference_cursor(&s, sep));
            }
        }
    }

    #[test]
    fn xctend_lines() {
        for (kv, want) in [
            (
                &b"rlbk=0, rd_only=1, tim=5793511831940"[..],
                Some((false, true, Some(5793511831940))),
            ),
            (b"rlbk=1, rd_only=0", Some((true, false, None))),
            (b"rlbk=0, rd_only=0, tim=", Some((false, false, None))),
            (b"rlbk=0, rd_only=0, tim=1 ", Some((false, false, Some(1)))),
            (b"rd_only=1, rlbk=0", Some((false, true, None))),
            (b"rlbk=0", None),
        ] {
            let got = match parse_xctend(kv) {
                Record::XctEnd { rlbk, rd_only, tim } => Some((rlbk, rd_only, tim)),
                _ => None,
            };
            assert_eq!(got, want, "{}", String::from_utf8_lossy(kv));
            assert_eq!(parse_xctend(kv), xctend_general(kv));
        }
    }

    #[test]
    fn whole_numbers() {
        for s in [
            &b"0"[..],
            b"7",
            b"12345678",
            b"123456789",
            b"5793959273444",
            b"1391456403012757",
            b"9999999999999999",
            b"00000000000000001",
            b"18446744073709551615",
            b"18446744073709551616",
            b"",
            b"-1",
            b"12a4",
            b"1234567/",
            b"123456:8",
            b"\xff234567",
            b" 1",
            b"1 ",
        ] {
            assert_eq!(
                full_u64(s),
                reference_u64(s),
                "{}",
                String::from_utf8_lossy(s)
            );
        }
    }

    proptest::proptest! {
        /// The word-at-a-time number reading agrees with the standard library's.
        #[test]
        fn full_u64_agrees_with_parse(s in proptest::collection::vec(
            proptest::sample::select(&b"0123456789/:a0\xff"[..]), 0..24)
        ) {
            proptest::prop_assert_eq!(full_u64(&s), reference_u64(&s));
        }

        /// The fast scan of WAIT pairs agrees with the slice-based one.
        #[test]
        fn fast_wait_pairs_agree_with_the_general_scan(
            s in proptest::collection::vec(
                proptest::sample::select(&b"  ==ab#-01\t"[..]), 0..200),
            keys in proptest::collection::vec(
                proptest::sample::select(&["tim=", "obj#=", " tim=12", " obj#=-1", "  p3 = 0"][..]), 0..4),
        ) {
            let mut s = s;
            for k in keys {
                let at = s.len() / 2;
                s.splice(at..at, k.bytes());
            }
            fast_pairs_agree(&s)?;
        }
    }

    #[test]
    fn star_lines() {
        assert!(matches!(
            classify(b"*** 2024-03-26T18:58:52.935374-07:00 (PDB1(3))"),
            Record::Timestamp(_)
        ));
        let Record::Tagged { key, value, ts } =
            classify(b"*** CLIENT DRIVER:(jdbcthin : 19.3.0.0.0) 2023-05-19T05:28:00.350106+02:00")
        else {
            panic!()
        };
        assert_eq!(key, b"CLIENT DRIVER");
        assert_eq!(value, b"jdbcthin : 19.3.0.0.0");
        assert_eq!(ts, b"2023-05-19T05:28:00.350106+02:00");
        assert!(matches!(
            classify(b"*** TRACE CONTINUED FROM FILE /u01/x.trc ***"),
            Record::Star(_)
        ));
    }

    #[test]
    fn parsing_in_cursor_and_errors() {
        let l = b"PARSING IN CURSOR #139623166535832 len=383 dep=0 uid=127 oct=3 lid=127 tim=5793959272875 hv=827717273 ad='79aaa1000' sqlid='cdgn9f8spbxnt'";
        let Record::Parsing(p) = classify(l) else {
            panic!()
        };
        assert_eq!(
            (p.cursor, p.dep, p.hv),
            (139623166535832, 0, Some(827717273))
        );
        assert_eq!(p.sqlid, b"cdgn9f8spbxnt");
        assert_eq!(
            classify(b"ERROR #139637903883184:err=27403 tim=3034700188655"),
            Record::Error {
                cursor: 139637903883184,
                err: 27403,
                tim: Some(3034700188655)
            }
        );
        assert_eq!(
            classify(b"XCTEND rlbk=0, rd_only=1, tim=5793511831940"),
            Record::XctEnd {
                rlbk: false,
                rd_only: true,
                tim: Some(5793511831940)
            }
        );
        assert!(matches!(
            classify(b"PARSE ERROR #140604232973104:len=67 dep=1 uid=112 oct=3 li"),
            Record::Malformed(_)
        ));
    }

    #[test]
    fn garbage_is_never_a_record() {
        assert_eq!(classify(b"\xff\xfe\x00WAIT"), Record::Other);
        assert!(matches!(classify(b"WAIT #"), Record::Malformed(_)));
        assert!(matches!(
            classify(b"WAIT #99999999999999999999999:"),
            Record::Malformed(_)
        ));
        assert_eq!(classify(b""), Record::Blank);
    }

    #[test]
    fn stat_lines() {
        let l = b"STAT #139623166535832 id=2 cnt=0 pid=1 pos=1 obj=76155 op='TABLE ACCESS BY INDEX ROWID SOMETHING(cr=1 pr=0 pw=0 str=1 time=8 us cost=1 size=43 card=1)'";
        let Record::Stat {
            cursor,
            id,
            pid,
            pos,
            cnt,
            obj,
            op,
        } = classify(l)
        else {
            panic!()
        };
        assert_eq!(
            (cursor, id, pid, pos, cnt, obj),
            (139623166535832, 2, 1, 1, 0, 76155)
        );
        assert!(op.starts_with(b"TABLE ACCESS BY INDEX ROWID") && op.ends_with(b"card=1)"));
        assert!(matches!(classify(b"STAT #1 cnt=3"), Record::Malformed(_)));
    }
}
