//! A chunk of whole lines of a trace and its lines classified into compact items: the form in
//! which classified lines reach the accounting, whoever cut the chunk (a worker from a plain file,
//! or the reader of a stream).

use rustc_hash::FxHashMap;

use crate::input::MAX_LINE;
use crate::line::{classify, Call, CallKind, Record};
use crate::timestamp::parse_timestamp;

/// The fields of a db call line that the accounting reads (times in the trace's unit), packed:
/// items are written by one thread and read by another, so their size is memory traffic. Lines
/// whose counts do not fit in 32 bits become [`Kind::Again`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct CallFields {
    pub cursor: u64,
    /// `tim=`, or [`NONE`] (as the streaming reader's `line::Detached` has it, `tim=` of
    /// `u64::MAX` counts as none).
    pub tim: u64,
    pub c: u32,
    pub e: u32,
    pub p: u32,
    pub cr: u32,
    pub cu: u32,
    pub mis: u32,
    pub r: u32,
    pub dep: u32,
    /// Chunk-local name index of the LOB keyword (LOB calls only).
    pub lob: u32,
}

/// An absent `u64` field in a packed item.
pub(crate) const NONE: u64 = u64::MAX;
/// An absent `obj#` in a packed item (`line::classify` never reads `i64::MIN`).
pub(crate) const NO_OBJ: i64 = i64::MIN;

/// A packed optional field back as an Option.
#[inline]
pub(crate) fn opt(v: u64) -> Option<u64> {
    (v != NONE).then_some(v)
}

/// An optional field packed, or `None` when it is the one value that cannot be (then the line
/// is classified again by the accounting).
#[inline]
fn pack(v: Option<u64>) -> Option<u64> {
    match v {
        Some(NONE) => None,
        Some(v) => Some(v),
        None => Some(NONE),
    }
}

/// What a worker made of a line (or of a run of lines).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    /// A WAIT line, decoded (packed: `tim` may be [`NONE`], `obj` [`NO_OBJ`]); `name` is a
    /// chunk-local name index.
    Wait {
        cursor: u64,
        tim: u64,
        obj: i64,
        ela: u32,
        name: u32,
    },
    /// A db call line, decoded.
    Call(CallKind, CallFields),
    /// `n` lines that are no record (blank lines may sit between them, which no state needs): they
    /// are SQL text, bind values, header or free text depending on what comes before them.
    Others { n: u32 },
    /// `PARSING IN CURSOR`, decoded (packed: `tim` and `hv` may be [`NONE`]; `oct` is not kept).
    Parsing {
        cursor: u64,
        tim: u64,
        hv: u64,
        dep: u32,
        sqlid: Short,
    },
    /// A STAT line, decoded.
    Stat {
        cursor: u64,
        id: u32,
        pid: u32,
        pos: u32,
        cnt: u64,
        obj: i64,
        op: Span,
    },
    /// `*** <timestamp>`, its time parsed here (it is slow to parse).
    Timestamp { ts: Span, wall: Option<i64> },
    /// `*** KEY:(value) timestamp`, its time parsed here.
    Tagged {
        key: Span,
        value: Span,
        ts: Span,
        wall: Option<i64>,
    },
    /// A record without slices.
    Plain(Plain),
    /// Any other record (rare): classified again by the accounting, which needs all of it.
    Again,
}

/// Where a slice of a line is in [`Chunk::data`]: offset and length.
pub(crate) type Span = (u32, u32);

/// A slice of a line, copied when short (a sqlid has 13 bytes): the accounting thread then finds it
/// in the item it reads anyway instead of in chunk data that the worker read long ago.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Short {
    Inline { len: u8, bytes: [u8; 14] },
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

/// Records that hold no slices of their line.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Plain {
    EndOfStmt,
    Separator,
    Binds {
        cursor: u64,
    },
    XctEnd {
        rlbk: bool,
        rd_only: bool,
        tim: Option<u64>,
    },
}

impl Plain {
    /// The record it is.
    pub fn record(self) -> Record<'static> {
        match self {
            Plain::EndOfStmt => Record::EndOfStmt,
            Plain::Separator => Record::Separator,
            Plain::Binds { cursor } => Record::Binds { cursor },
            Plain::XctEnd { rlbk, rd_only, tim } => Record::XctEnd { rlbk, rd_only, tim },
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
    pub len: u32,
    /// The line was longer than [`MAX_LINE`] and was cut.
    pub cut: bool,
    pub kind: Kind,
}

// Items are the traffic between the threads: keep them small.
const _: () = assert!(std::mem::size_of::<Item>() <= 80);

/// A chunk of whole lines of a trace, its lines classified.
#[derive(Default)]
pub(crate) struct Chunk {
    /// The bytes of its lines (the last may lack its newline; a line longer than [`MAX_LINE`] may
    /// hold only its first `MAX_LINE + 1` bytes).
    pub data: Vec<u8>,
    /// Lines that are not blank, in order.
    pub items: Vec<Item>,
    /// Chunk-local names (WAIT names and LOB keywords in order of first appearance): offset and
    /// length in `data`.
    pub names: Vec<(u32, u32)>,
    /// Lines in the chunk.
    pub lines: u64,
}

impl Chunk {
    /// Splits [`Chunk::data`] into lines (the last one may lack its newline) and classifies them.
    pub fn classify(&mut self) {
        self.items.clear();
        self.names.clear();
        let spans = LineSpans {
            data: &self.data,
            newlines: memchr::memchr_iter(b'\n', &self.data),
            start: 0,
        };
        self.lines = classify_lines(&self.data, &mut self.items, &mut self.names, spans);
    }

    /// The bytes of an item.
    pub fn bytes(&self, it: &Item) -> &[u8] {
        &self.data[it.at as usize..(it.at + it.len) as usize]
    }

    /// A chunk-local name.
    pub fn name(&self, i: u32) -> &[u8] {
        self.span(self.names[i as usize])
    }

    /// The bytes of a span.
    pub fn span(&self, (at, len): Span) -> &[u8] {
        &self.data[at as usize..(at + len) as usize]
    }

    /// The bytes of a [`Short`].
    pub fn short<'a>(&'a self, s: &'a Short) -> &'a [u8] {
        match s {
            Short::Inline { len, bytes } => &bytes[..*len as usize],
            Short::At(sp) => self.span(*sp),
        }
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
        let span = line_span(self.data, self.start, end);
        self.start = end + 1;
        Some(span)
    }
}

/// A line `data[s..e]` (without its newline): where it is, its kept length and whether it was cut
/// (a cut line keeps [`MAX_LINE`] bytes, `\r` included; others lose a final `\r`).
#[inline]
fn line_span(data: &[u8], s: usize, e: usize) -> (usize, usize, bool) {
    if e - s > MAX_LINE {
        (s, MAX_LINE, true)
    } else {
        (s, strip_cr(&data[s..e]).len(), false)
    }
}

/// The chunk-local index of a name (a sub-slice of `data`), added on first sight.
fn intern<'d>(
    names: &mut FxHashMap<&'d [u8], u32>,
    out: &mut Vec<(u32, u32)>,
    data: &'d [u8],
    n: &'d [u8],
) -> u32 {
    if let Some(&i) = names.get(n) {
        return i;
    }
    let i = out.len() as u32;
    out.push(span(data, n));
    names.insert(n, i);
    i
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

/// A db call packed, or `None` when a count does not fit in 32 bits.
fn pack_call(x: &Call<'_>) -> Option<CallFields> {
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

/// Classifies the lines of `data` at `spans` into `items` (chunk-local names into `out_names`);
/// returns the number of lines.
fn classify_lines(
    data: &[u8],
    items: &mut Vec<Item>,
    out_names: &mut Vec<Span>,
    spans: impl Iterator<Item = (usize, usize, bool)>,
) -> u64 {
    let mut names: FxHashMap<&[u8], u32> = FxHashMap::default();
    let mut intern = |n, out: &mut Vec<(u32, u32)>| intern(&mut names, out, data, n);
    let mut li = 0u32;
    // The item of the run of other lines that the next other line joins, if any.
    let mut run: Option<usize> = None;
    for (at, len, cut) in spans {
        let line = &data[at..at + len];
        let kind = match classify(line) {
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
                Kind::Others { n: 1 }
            }
            Record::Other => Kind::Others { n: 1 },
            Record::Wait(w) => match (pack(w.tim), u32::try_from(w.ela)) {
                (Some(tim), Ok(ela)) if w.obj != Some(NO_OBJ) => Kind::Wait {
                    cursor: w.cursor,
                    tim,
                    obj: w.obj.unwrap_or(NO_OBJ),
                    ela,
                    name: intern(w.name, out_names),
                },
                _ => Kind::Again,
            },
            Record::Call(k, x) => match pack_call(&x) {
                Some(mut f) => {
                    if k == CallKind::Lob {
                        f.lob = intern(x.lob, out_names);
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
                ts: span(data, ts),
                wall: parse_timestamp(ts),
            },
            Record::Tagged { key, value, ts } => Kind::Tagged {
                key: span(data, key),
                value: span(data, value),
                ts: span(data, ts),
                wall: parse_timestamp(ts),
            },
            Record::EndOfStmt => Kind::Plain(Plain::EndOfStmt),
            Record::Separator => Kind::Plain(Plain::Separator),
            Record::Binds { cursor } => Kind::Plain(Plain::Binds { cursor }),
            Record::XctEnd { rlbk, rd_only, tim } => {
                Kind::Plain(Plain::XctEnd { rlbk, rd_only, tim })
            }
            _ => Kind::Again,
        };
        if !matches!(kind, Kind::Others { .. }) || cut {
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
    li as u64
}
