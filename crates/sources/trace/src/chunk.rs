//! A chunk of whole lines and its lines classified into compact items: the one form in which
//! classified lines reach the accounting, whoever cut the chunk (a worker from a plain file, or
//! the reader of a stream).
//!
//! Items are written by a worker thread and read by the accounting thread, so their size is
//! memory traffic: fields are packed (32-bit counts, [`NONE`] and [`NO_OBJ`] for absent values),
//! short slices are copied into the item, longer ones are [`Span`]s of [`Chunk::data`], WAIT names
//! and LOB keywords are interned per chunk, `***` timestamps are parsed here (they are slow to
//! parse), blank lines are dropped and runs of lines that are no record become one item. Only
//! what the accounting reads is kept.

use std::ops::Range;
use std::sync::Arc;

use memmap2::Mmap;
use rustc_hash::FxHashMap;

use crate::input::MAX_LINE;
use crate::line::{classify, Call, CallKind, Record};
use crate::timestamp::parse_timestamp;

/// An absent `u64` field in a packed item (a `tim=` of `u64::MAX` also reads as absent).
pub(crate) const NONE: u64 = u64::MAX;
/// An absent `obj#` in a packed item (a WAIT whose `obj#` is `i64::MIN` is [`Kind::Again`]).
pub(crate) const NO_OBJ: i64 = i64::MIN;

/// A packed optional field back as an Option.
#[inline]
pub(crate) fn opt(v: u64) -> Option<u64> {
    (v != NONE).then_some(v)
}

/// An optional field packed, or `None` when it is the one value that cannot be.
#[inline]
fn pack(v: Option<u64>) -> Option<u64> {
    match v {
        Some(NONE) => None,
        Some(v) => Some(v),
        None => Some(NONE),
    }
}

/// Where a slice of a line is in [`Chunk::data`]: offset and length.
pub(crate) type Span = (u32, u32);

/// A slice of a line, copied when short (a sqlid has 13 bytes): the accounting thread then finds it
/// in the item it reads anyway instead of in chunk data that the worker read long ago.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Short {
    /// The bytes themselves.
    Inline { len: u8, bytes: [u8; 14] },
    /// Where they are.
    At(Span),
}

impl Short {
    fn of(data: &[u8], sub: &[u8]) -> Short {
        let mut bytes = [0u8; 14];
        match bytes.get_mut(..sub.len()) {
            Some(b) => {
                b.copy_from_slice(sub);
                Short::Inline {
                    len: sub.len() as u8,
                    bytes,
                }
            }
            None => Short::At(span(data, sub)),
        }
    }
}

/// The fields of a db call line that the accounting reads (times in the trace's unit), packed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CallFields {
    /// Cursor number.
    pub cursor: u64,
    /// `tim=`, or [`NONE`].
    pub tim: u64,
    /// `c=`.
    pub c: u32,
    /// `e=`.
    pub e: u32,
    /// `p=`.
    pub p: u32,
    /// `cr=`.
    pub cr: u32,
    /// `cu=`.
    pub cu: u32,
    /// `mis=`.
    pub mis: u32,
    /// `r=`.
    pub r: u32,
    /// `dep=`.
    pub dep: u32,
    /// Chunk-local name index of the LOB keyword (LOB calls only).
    pub lob: u32,
}

impl CallFields {
    /// The call packed, or `None` when a count does not fit in 32 bits.
    fn pack(x: &Call<'_>) -> Option<CallFields> {
        let n = |v: u64| u32::try_from(v).ok();
        Some(CallFields {
            cursor: x.cursor,
            tim: x.tim.unwrap_or(NONE),
            c: n(x.c)?,
            e: n(x.e)?,
            p: n(x.p)?,
            cr: n(x.cr)?,
            cu: n(x.cu)?,
            mis: n(x.mis)?,
            r: n(x.r)?,
            dep: x.dep,
            lob: u32::MAX,
        })
    }

    /// The call as the line has it (without `plh=` and the LOB keyword, which the accounting
    /// takes from [`CallFields::lob`]).
    #[inline]
    pub fn unpack(&self) -> Call<'static> {
        Call {
            cursor: self.cursor,
            c: self.c as u64,
            e: self.e as u64,
            p: self.p as u64,
            cr: self.cr as u64,
            cu: self.cu as u64,
            mis: self.mis as u64,
            r: self.r as u64,
            dep: self.dep,
            plh: None,
            tim: opt(self.tim),
            lob: &[],
        }
    }
}

/// What a line (or a run of lines) is, with the fields the accounting reads.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    /// A WAIT line (`tim` may be [`NONE`], `obj` [`NO_OBJ`]); `name` is a chunk-local name index.
    Wait {
        cursor: u64,
        tim: u64,
        obj: i64,
        ela: u32,
        name: u32,
    },
    /// A db call line.
    Call(CallKind, CallFields),
    /// `n` lines that are no record (blank lines may sit between them, which no state needs): they
    /// are SQL text, bind values, header or free text depending on what comes before them.
    Others { n: u32 },
    /// `PARSING IN CURSOR` (`tim` and `hv` may be [`NONE`]).
    Parsing {
        cursor: u64,
        tim: u64,
        hv: u64,
        dep: u32,
        sqlid: Short,
    },
    /// A STAT line.
    Stat {
        cursor: u64,
        id: u32,
        pid: u32,
        pos: u32,
        cnt: u64,
        obj: i64,
        op: Span,
    },
    /// `*** <timestamp>`: its time, when it can be read.
    Timestamp { wall: Option<i64> },
    /// `*** KEY:(value) [timestamp]`: the time, when there is one that can be read.
    Tagged {
        key: Span,
        value: Span,
        wall: Option<i64>,
    },
    /// Another `***` line (the text after `*** `).
    Star(Span),
    /// `PARSE ERROR`.
    ParseError {
        cursor: u64,
        err: u64,
        tim: Option<u64>,
    },
    /// `ERROR`.
    Error {
        cursor: u64,
        err: u64,
        tim: Option<u64>,
    },
    /// `XCTEND`.
    XctEnd { tim: Option<u64> },
    /// `END OF STMT`.
    EndOfStmt,
    /// `BINDS #c:`.
    Binds,
    /// `=====…`.
    Separator,
    /// A line that starts like a record but whose fields could not be read, and why.
    Malformed(&'static str),
    /// A blank line that was cut (other blank lines are dropped: only a cut one has a warning).
    Blank,
    /// A WAIT, db call or PARSING IN CURSOR line with a number that the packed fields cannot hold
    /// (rare): the accounting classifies the line again.
    Again,
}

impl Kind {
    /// The compact form of `rec`, a record classified from a line of `data`; WAIT names and LOB
    /// keywords interned through `intern`.
    #[inline]
    fn of<'d>(rec: Record<'d>, data: &'d [u8], mut intern: impl FnMut(&'d [u8]) -> u32) -> Kind {
        match rec {
            Record::Wait(w) => match (pack(w.tim), u32::try_from(w.ela)) {
                (Some(tim), Ok(ela)) if w.obj != Some(NO_OBJ) => Kind::Wait {
                    cursor: w.cursor,
                    tim,
                    obj: w.obj.unwrap_or(NO_OBJ),
                    ela,
                    name: intern(w.name),
                },
                _ => Kind::Again,
            },
            Record::Call(k, x) => match CallFields::pack(&x) {
                Some(mut f) => {
                    if k == CallKind::Lob {
                        f.lob = intern(x.lob);
                    }
                    Kind::Call(k, f)
                }
                None => Kind::Again,
            },
            Record::Parsing(p) => match (pack(p.tim), pack(p.hv)) {
                (Some(tim), Some(hv)) => Kind::Parsing {
                    cursor: p.cursor,
                    tim,
                    hv,
                    dep: p.dep,
                    sqlid: Short::of(data, p.sqlid),
                },
                _ => Kind::Again,
            },
            Record::Stat {
                cursor,
                id,
                pid,
                pos,
                cnt,
                obj,
                op,
            } => Kind::Stat {
                cursor,
                id,
                pid,
                pos,
                cnt,
                obj,
                op: span(data, op),
            },
            Record::Timestamp(ts) => Kind::Timestamp {
                wall: parse_timestamp(ts),
            },
            Record::Tagged { key, value, ts } => Kind::Tagged {
                key: span(data, key),
                value: span(data, value),
                wall: parse_timestamp(ts),
            },
            Record::Star(rest) => Kind::Star(span(data, rest)),
            Record::ParseError {
                cursor, err, tim, ..
            } => Kind::ParseError { cursor, err, tim },
            Record::Error { cursor, err, tim } => Kind::Error { cursor, err, tim },
            Record::XctEnd { tim, .. } => Kind::XctEnd { tim },
            Record::EndOfStmt => Kind::EndOfStmt,
            Record::Binds { .. } => Kind::Binds,
            Record::Separator => Kind::Separator,
            Record::Malformed(why) => Kind::Malformed(why),
            Record::Blank => Kind::Blank,
            Record::Other => Kind::Others { n: 1 },
        }
    }
}

/// A line (or a run of [`Kind::Others`] lines) of a chunk.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Item {
    /// Line index in the chunk, from 0 (the first line of a run).
    pub line: u32,
    /// Where its bytes are in [`Chunk::data`], without the line terminator (a run: from its first
    /// line to the end of its last, the newlines between them included).
    pub at: u32,
    /// Their length.
    pub len: u32,
    /// The line was longer than [`MAX_LINE`] and was cut.
    pub cut: bool,
    /// What it is.
    pub kind: Kind,
}

// Items are the traffic between the threads: keep them small.
const _: () = assert!(std::mem::size_of::<Item>() <= 80);

/// A chunk of whole lines of a trace, and its lines classified.
#[derive(Default)]
pub(crate) struct Chunk {
    /// The bytes of its lines when they were read into the chunk (the last may lack its newline; a
    /// line longer than [`MAX_LINE`] may hold only its first `MAX_LINE + 1` bytes).
    pub buf: Vec<u8>,
    /// When the chunk's bytes are a range of a memory-mapped file instead: the map and the range
    /// (then `buf` is not used).
    pub mapped: Option<(Arc<Mmap>, Range<usize>)>,
    /// Lines that are not blank, in order.
    pub items: Vec<Item>,
    /// Chunk-local names (WAIT names and LOB keywords in order of first appearance).
    pub names: Vec<Span>,
    /// Lines in the chunk.
    pub lines: u64,
}

impl Chunk {
    /// The bytes of its lines (see [`Chunk::buf`]).
    #[inline]
    pub fn data(&self) -> &[u8] {
        match &self.mapped {
            Some((map, range)) => &map[range.clone()],
            None => &self.buf,
        }
    }

    /// The bytes of an item.
    pub fn bytes(&self, it: &Item) -> &[u8] {
        &self.data()[it.at as usize..(it.at + it.len) as usize]
    }

    /// A chunk-local name.
    pub fn name(&self, i: u32) -> &[u8] {
        self.span(self.names[i as usize])
    }

    /// The bytes of a span.
    pub fn span(&self, (at, len): Span) -> &[u8] {
        &self.data()[at as usize..(at + len) as usize]
    }

    /// The bytes of a [`Short`].
    pub fn short<'a>(&'a self, s: &'a Short) -> &'a [u8] {
        match s {
            Short::Inline { len, bytes } => &bytes[..*len as usize],
            Short::At(sp) => self.span(*sp),
        }
    }

    /// Splits [`Chunk::data`] into lines and classifies them into [`Chunk::items`].
    pub fn classify(&mut self) {
        self.items.clear();
        self.names.clear();
        let data: &[u8] = match &self.mapped {
            Some((map, range)) => &map[range.clone()],
            None => &self.buf,
        };
        let (items, out_names) = (&mut self.items, &mut self.names);
        let mut names: FxHashMap<&[u8], u32> = FxHashMap::default();
        let mut li = 0u32;
        // The item of the run of other lines that the next other line joins, if any.
        let mut run: Option<usize> = None;
        let lines = LineSpans {
            data,
            newlines: memchr::memchr_iter(b'\n', data),
            start: 0,
        };
        for (at, len, cut) in lines {
            let line = &data[at..at + len];
            let rec = classify(line);
            match rec {
                // Blank lines change no state: dropped, and a run of other lines goes on over them.
                Record::Blank if !cut => {
                    li += 1;
                    continue;
                }
                Record::Other if !cut => {
                    if let Some(Item {
                        kind: Kind::Others { n },
                        len: run_len,
                        at: run_at,
                        ..
                    }) = run.and_then(|r| items.get_mut(r))
                    {
                        *n += 1;
                        *run_len = (at + len) as u32 - *run_at;
                        li += 1;
                        continue;
                    }
                    run = Some(items.len());
                }
                _ => run = None,
            }
            let kind = Kind::of(rec, data, |n| intern(&mut names, out_names, data, n));
            if cut {
                run = None;
            }
            items.push(Item {
                line: li,
                at: at as u32,
                len: len as u32,
                cut,
                kind,
            });
            li += 1;
        }
        self.lines = li as u64;
    }
}

/// The lines of a run of [`Kind::Others`] lines (blank ones included), without their terminators.
pub(crate) fn run_lines(run: &[u8]) -> impl Iterator<Item = &[u8]> {
    let run = run.strip_suffix(b"\n").unwrap_or(run);
    run.split(|&b| b == b'\n').map(strip_cr)
}

fn strip_cr(l: &[u8]) -> &[u8] {
    l.strip_suffix(b"\r").unwrap_or(l)
}

/// The lines of a chunk, found one at a time (as `(start, kept length, cut)`), so that each is
/// classified while it is still in cache.
struct LineSpans<'d> {
    data: &'d [u8],
    newlines: memchr::Memchr<'d>,
    start: usize,
}

impl Iterator for LineSpans<'_> {
    type Item = (usize, usize, bool);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let end = match self.newlines.next() {
            Some(nl) => nl,
            // The last line may lack its newline.
            None if self.start < self.data.len() => self.data.len(),
            None => return None,
        };
        let s = self.start;
        self.start = end + 1;
        // Cut lines keep MAX_LINE bytes, `\r` included; others lose a final `\r`.
        Some(if end - s > MAX_LINE {
            (s, MAX_LINE, true)
        } else {
            (s, strip_cr(&self.data[s..end]).len(), false)
        })
    }
}

/// Up to this many names, a chunk's names are searched one by one rather than hashed.
const FEW_NAMES: usize = 8;

/// The chunk-local index of a name (a sub-slice of `data`), added on first sight.
fn intern<'d>(
    names: &mut FxHashMap<&'d [u8], u32>,
    out: &mut Vec<Span>,
    data: &'d [u8],
    n: &'d [u8],
) -> u32 {
    // A chunk has few distinct names (a handful of wait events): comparing with each beats
    // hashing the name on every line.
    if out.len() <= FEW_NAMES {
        let found = out.iter().position(|&(at, len)| {
            len as usize == n.len() && same_name(&data[at as usize..][..n.len()], n)
        });
        if let Some(i) = found {
            return i as u32;
        }
    } else if let Some(&i) = names.get(n) {
        return i;
    }
    let i = out.len() as u32;
    out.push(span(data, n));
    names.insert(n, i);
    i
}

/// Two names of the same length are equal: 8 bytes at a time inline (wait names are 10 to 40
/// bytes; a `memcmp` call for each WAIT line cost more than the comparison).
#[inline]
fn same_name(a: &[u8], b: &[u8]) -> bool {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len();
    if n < 8 {
        return a == b;
    }
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"));
    let mut i = 0;
    while i + 8 < n {
        if word(a, i) != word(b, i) {
            return false;
        }
        i += 8;
    }
    // The last 8 bytes (overlapping the ones compared when `n` is no multiple of 8).
    word(a, n - 8) == word(b, n - 8)
}

/// Where `sub`, a slice of `data` (or empty), is.
fn span(data: &[u8], sub: &[u8]) -> Span {
    if sub.is_empty() {
        return (0, 0);
    }
    let at = sub.as_ptr() as usize - data.as_ptr() as usize;
    debug_assert!(at + sub.len() <= data.len());
    (at as u32, sub.len() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk of these lines, classified.
    fn chunk(lines: &[&[u8]]) -> Chunk {
        let mut c = Chunk {
            buf: lines.join(&b'\n').to_vec(),
            ..Chunk::default()
        };
        c.classify();
        assert_eq!(c.lines, lines.len() as u64);
        c
    }

    /// Every item holds what the accounting reads of its line, as the line classified alone has it.
    #[test]
    fn items_hold_the_fields_of_their_lines() {
        let lines: [&[u8]; 14] = [
            b"WAIT #1: nam='log file sync' ela= 1043 buffer#=101808 sync scn=1266588527 p3=0 obj#=-1 tim=1",
            b"LOBWRITE: type=TEMPORARY LOB,bytes=5,c=169,e=169,p=0,cr=0,cu=7,tim=4696599871319",
            b"FETCH #7:c=404,e=404,p=1,cr=4,cu=0,mis=0,r=10,dep=2,og=1,plh=2725028981,tim=5793964643501",
            b"PARSING IN CURSOR #1 len=1 dep=0 uid=1 oct=3 lid=1 tim=1 hv=2 ad='0' sqlid='abc'",
            b"STAT #1 id=2 cnt=0 pid=1 pos=1 obj=76155 op='TABLE ACCESS FULL T (cr=1 pr=0)'",
            b"*** 2024-03-26T18:58:52.935374-07:00 (PDB1(3))",
            b"*** MODULE NAME:(SQL*Plus) 2017-01-18 12:24:14.701",
            b"*** TRACE CONTINUED FROM FILE /x.trc ***",
            b"PARSE ERROR #140604232973104:len=67 dep=1 uid=112 oct=3 lid=112 tim=3 err=10980",
            b"ERROR #139637903883184:err=27403 tim=3034700188655",
            b"XCTEND rlbk=0, rd_only=1, tim=5793511831940",
            b"FETCH #1:c=1,e=2,tim=5793511831311WAIT #1",
            b"select 1",
            b"WAIT #2: nam='x' ela= 4294967296 p1=0",
        ];
        let c = chunk(&lines);
        assert_eq!(c.items.len(), lines.len());
        for it in &c.items {
            let line = c.bytes(it);
            let name = |i: u32| String::from_utf8_lossy(c.name(i)).into_owned();
            let text = String::from_utf8_lossy(line);
            match (it.kind, classify(line)) {
                (
                    Kind::Wait {
                        cursor,
                        tim,
                        obj,
                        ela,
                        name: n,
                    },
                    Record::Wait(w),
                ) => {
                    assert_eq!(
                        (cursor, opt(tim), Some(obj), ela as u64),
                        (w.cursor, w.tim, w.obj, w.ela)
                    );
                    assert_eq!(name(n).as_bytes(), w.name);
                }
                (Kind::Call(k, f), Record::Call(kw, x)) => {
                    assert_eq!(k, kw, "{text}");
                    assert_eq!(
                        f.unpack(),
                        Call {
                            plh: None,
                            lob: &[],
                            ..x
                        },
                        "{text}"
                    );
                    if k == CallKind::Lob {
                        assert_eq!(name(f.lob).as_bytes(), x.lob);
                    }
                }
                (
                    Kind::Parsing {
                        cursor,
                        tim,
                        hv,
                        dep,
                        sqlid,
                    },
                    Record::Parsing(p),
                ) => {
                    assert_eq!(
                        (cursor, opt(tim), opt(hv), dep),
                        (p.cursor, p.tim, p.hv, p.dep)
                    );
                    assert_eq!(c.short(&sqlid), p.sqlid);
                }
                (
                    Kind::Stat {
                        cursor,
                        id,
                        pid,
                        pos,
                        cnt,
                        obj,
                        op,
                    },
                    Record::Stat {
                        cursor: c2,
                        id: i2,
                        pid: p2,
                        pos: o2,
                        cnt: n2,
                        obj: b2,
                        op: op2,
                    },
                ) => {
                    assert_eq!((cursor, id, pid, pos, cnt, obj), (c2, i2, p2, o2, n2, b2));
                    assert_eq!(c.span(op), op2);
                }
                (Kind::Timestamp { wall }, Record::Timestamp(ts)) => {
                    assert_eq!(wall, parse_timestamp(ts));
                    assert!(wall.is_some());
                }
                (
                    Kind::Tagged { key, value, wall },
                    Record::Tagged {
                        key: k,
                        value: v,
                        ts,
                    },
                ) => {
                    assert_eq!((c.span(key), c.span(value)), (k, v));
                    assert_eq!(wall, parse_timestamp(ts));
                }
                (Kind::Star(rest), Record::Star(r)) => assert_eq!(c.span(rest), r),
                (
                    Kind::ParseError { cursor, err, tim },
                    Record::ParseError {
                        cursor: c2,
                        err: e2,
                        tim: t2,
                        ..
                    },
                )
                | (
                    Kind::Error { cursor, err, tim },
                    Record::Error {
                        cursor: c2,
                        err: e2,
                        tim: t2,
                    },
                ) => {
                    assert_eq!((cursor, err, tim), (c2, e2, t2));
                }
                (Kind::XctEnd { tim }, Record::XctEnd { tim: t2, .. }) => assert_eq!(tim, t2),
                (Kind::Malformed(why), Record::Malformed(w2)) => assert_eq!(why, w2),
                (Kind::Others { n: 1 }, Record::Other) => {}
                // ela does not fit in 32 bits.
                (Kind::Again, Record::Wait(w)) => assert_eq!(w.ela, 1 << 32),
                (k, r) => panic!("{text}: {k:?} for {r:?}"),
            }
        }
    }

    /// Wait names of the same length that differ in one byte, wherever it is, are different names
    /// (the chunk compares names 8 bytes at a time).
    #[test]
    fn names_differing_in_one_byte_are_different() {
        for n in 1..40 {
            let base: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            for at in 0..n {
                let mut other = base.clone();
                other[at] = b'Z';
                let line = |name: &[u8]| [b"WAIT #1: nam='", name, b"' ela= 1"].concat();
                let (a, b) = (line(&base), line(&other));
                let c = chunk(&[&a, &b, &a, &b]);
                let names: Vec<&[u8]> = c
                    .items
                    .iter()
                    .map(|it| match it.kind {
                        Kind::Wait { name, .. } => c.name(name),
                        k => panic!("{k:?}"),
                    })
                    .collect();
                assert_eq!(
                    names,
                    [&base[..], &other, &base, &other],
                    "{n} bytes, at {at}"
                );
                assert_eq!(c.names.len(), 2);
            }
        }
    }

    /// Blank lines are dropped (but counted), runs of other lines are one item across them, and
    /// a line longer than MAX_LINE is cut.
    #[test]
    fn blank_lines_runs_and_cut_lines() {
        let long = vec![b'x'; MAX_LINE + 1];
        let c = chunk(&[
            b"a",
            b"",
            b"  ",
            b"b",
            b"WAIT #1: nam='x' ela= 1",
            b"c\r",
            &long,
            b"d",
        ]);
        let kinds: Vec<String> = c.items.iter().map(|it| format!("{:?}", it.kind)).collect();
        assert_eq!(kinds, ["Others { n: 2 }", "Wait { cursor: 1, tim: 18446744073709551615, obj: -9223372036854775808, ela: 1, name: 0 }", "Others { n: 1 }", "Others { n: 1 }", "Others { n: 1 }"]);
        assert_eq!(c.bytes(&c.items[0]), b"a\n\n  \nb");
        assert_eq!((c.items[2].line, c.bytes(&c.items[2])), (5, &b"c"[..]));
        assert!(c.items[3].cut && c.items[3].len as usize == MAX_LINE);
        assert_eq!(c.items[4].line, 7);
    }
}
