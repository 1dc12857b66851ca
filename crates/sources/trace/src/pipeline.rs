//! The chunk stream: a trace cut into chunks of whole lines, the chunks classified on worker
//! threads and handed back in file order, in bounded memory, to be accounted for one after the
//! other. The accounting thread is one of the classifying threads: whenever its next chunk is not
//! there yet it takes one to classify itself, so `workers` threads in all (one per core) are busy,
//! never more. Every input takes this way; only the cutting differs:
//!
//! - **a plain file** is cut by the workers themselves, in parallel. Chunk `i` nominally covers
//!   bytes `[i·C, (i+1)·C)`; it really starts after the first newline at or after `i·C − 1` (so
//!   at a line start) and ends where the next non-empty chunk starts. A chunk whose window holds no
//!   newline at all (inside a line longer than `C`) is empty, and the chunk where that long line
//!   starts runs on to the next newline. Every worker finds both of its borders on its own, so the
//!   only shared state is the chunk counter.
//! - **a stream** (gzip, a pipe, stdin, bytes in memory) is cut by a [`Cutter`] that one worker at
//!   a time holds: it reads (and decompresses) the next piece, lets go, and classifies the piece
//!   while another worker reads the next.
//!
//! What crosses chunk borders (cursor and session state, pending waits and calls, SQL text between
//! `PARSING IN CURSOR` and `END OF STMT`, BINDS blocks, the header) is all in the accounting, which
//! sees the chunks' records in file order; the workers only do what each line allows on its own.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard, PoisonError};

use memmap2::Mmap;

use crate::chunk::Chunk;
use crate::error::{Result, TraceReadError};
use crate::input::{Cutter, MAX_LINE};
use crate::mapped;

/// Default chunk size: big enough that handing chunks around costs nothing, small enough that a few
/// per worker in flight stay a few tens of MiB.
pub const DEFAULT_CHUNK: usize = 1 << 20;
/// Chunks in flight (being classified, or waiting for the accounting) per worker thread.
const IN_FLIGHT_PER_WORKER: usize = 3;
/// A file chunk larger than this many chunk sizes and than [`MAX_LINE`] (it holds a line that
/// long) is read through a [`Cutter`], which keeps the first `MAX_LINE + 1` bytes of each line,
/// rather than whole.
const DIRECT_CHUNKS: u64 = 4;
/// Largest chunk size taken (larger ones are cut to this): offsets in a chunk are u32.
const MAX_CHUNK: usize = 256 << 20;
/// A mapped file's pages are released (see [`mapped::release`]) in runs of this many bytes once
/// accounted: the resident size stays about this plus the chunks in flight, at the cost of one
/// `madvise` (and TLB flush) per run rather than per chunk.
const RELEASE_EVERY: usize = 16 << 20;
/// How far ahead of a window start a border search reads at a time.
const PROBE: usize = 4096;

/// What to cut into chunks.
pub(crate) enum Input<'a, R> {
    /// A plain file of `len` bytes, cut by the workers.
    File {
        /// Its path (each worker opens it).
        path: &'a Path,
        /// Its length.
        len: u64,
    },
    /// A stream, cut in order.
    Stream(R),
}

/// Where the workers get their chunks.
enum Source<'a, R> {
    /// A plain file that could be mapped: chunks are ranges of the map, not copies.
    Mapped(Arc<Mmap>),
    File {
        path: &'a Path,
        len: u64,
    },
    Stream(Mutex<Cutter<R>>),
}

/// What the workers and the accounting share.
struct Shared {
    /// Chunk slots handed to workers so far.
    next: usize,
    /// Chunks accounted for so far (all before this index).
    done: usize,
    /// The number of chunks, once known (from the start for a file).
    total: Option<usize>,
    /// The accounting stopped (an error): workers stop too.
    abort: bool,
    /// Chunks whose buffers can be reused.
    pool: Vec<Chunk>,
}

/// What a worker sends the accounting.
enum Msg {
    /// Chunk `i`, classified, or the error reading it (reported in file order).
    Chunk(usize, io::Result<Chunk>),
    /// There are this many chunks (a stream has ended).
    End(usize),
    /// A worker panicked (a bug): reported at once.
    Panic,
}

/// Cuts `input` into chunks of about `chunk` bytes, classifies them on `workers` threads (this one
/// and `workers − 1` spawned) and calls `each` on every chunk in file order, with the number of the
/// chunk's first line (from 1).
/// Returns the numbers of lines and bytes read; `name` is the input's name in errors.
pub(crate) fn for_each_chunk<R: Read + Send>(
    input: Input<'_, R>,
    name: &str,
    chunk: usize,
    workers: usize,
    mut each: impl FnMut(&Chunk, u64) -> Result<()>,
) -> Result<(u64, u64)> {
    let chunk = chunk.clamp(1, MAX_CHUNK);
    let (source, total) = match input {
        Input::File { path, len } => {
            let n = len.div_ceil(chunk as u64) as usize;
            // Mapped when it can be; else (or when it cannot even be opened here: each worker
            // then reports that) read.
            let map = File::open(path)
                .ok()
                .and_then(|f| mapped::map_whole(&f, len));
            match map {
                Some(map) => (Source::Mapped(Arc::new(map)), Some(n)),
                None => (Source::File { path, len }, Some(n)),
            }
        }
        Input::Stream(r) => (Source::Stream(Mutex::new(Cutter::new(r, chunk))), None),
    };
    let workers = workers.clamp(1, total.unwrap_or(usize::MAX).max(1));
    let in_flight = workers * IN_FLIGHT_PER_WORKER;
    let shared = Mutex::new(Shared {
        next: 0,
        done: 0,
        total,
        abort: false,
        pool: Vec::new(),
    });
    let cv = Condvar::new();
    let (tx, rx) = mpsc::channel::<Msg>();
    let lines = std::thread::scope(|scope| {
        for _ in 0..workers - 1 {
            let tx = tx.clone();
            let (source, shared, cv) = (&source, &shared, &cv);
            scope.spawn(move || work(source, chunk as u64, shared, cv, in_flight, tx));
        }
        drop(tx);
        let mut order = InOrder {
            rx,
            early: (0..in_flight).map(|_| None).collect(),
            total,
            next: 0,
        };
        let r = account(
            &mut order,
            &source,
            chunk as u64,
            in_flight,
            &shared,
            &cv,
            name,
            &mut each,
        );
        if r.is_err() {
            // The workers stop too.
            lock(&shared).abort = true;
            cv.notify_all();
        }
        r
    })?;
    let bytes = match source {
        Source::Mapped(map) => map.len() as u64,
        Source::File { len, .. } => len,
        Source::Stream(cutter) => {
            cutter
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner)
                .bytes
        }
    };
    Ok((lines, bytes))
}

/// Chunks received from the workers, handed out in file order.
struct InOrder {
    rx: mpsc::Receiver<Msg>,
    /// Chunks that arrived before their turn, at their index modulo the number in flight.
    early: Vec<Option<io::Result<Chunk>>>,
    /// The number of chunks, once known.
    total: Option<usize>,
    /// The index of the next chunk.
    next: usize,
}

impl InOrder {
    /// The next chunk in file order (or the error reading it), `None` after the last; `Err` when
    /// a worker failed (a bug). While the next chunk is not there, `help` takes and classifies one
    /// on this thread (its message, or `None` when there is none to take), so this thread never
    /// sits idle while there is reading to do.
    fn next(
        &mut self,
        mut help: impl FnMut() -> Option<Msg>,
    ) -> std::result::Result<Option<io::Result<Chunk>>, &'static str> {
        let slots = self.early.len();
        loop {
            if self.total == Some(self.next) {
                return Ok(None);
            }
            if let Some(c) = self.early[self.next % slots].take() {
                self.next += 1;
                return Ok(Some(c));
            }
            let msg = match self.rx.try_recv() {
                Ok(m) => m,
                Err(mpsc::TryRecvError::Empty) => match help() {
                    Some(m) => m,
                    None => self.rx.recv().map_err(|_| "a chunk reader stopped")?,
                },
                Err(mpsc::TryRecvError::Disconnected) => match help() {
                    Some(m) => m,
                    None => return Err("a chunk reader stopped"),
                },
            };
            match msg {
                Msg::Chunk(i, c) => self.early[i % slots] = Some(c),
                Msg::End(n) => self.total = Some(n),
                Msg::Panic => return Err("a chunk reader failed (a bug)"),
            }
        }
    }
}

/// The accounting side: every chunk to `each` in file order, with the number of its first line,
/// its buffer then back to the pool. Returns the number of lines.
#[allow(clippy::too_many_arguments)]
fn account<R: Read>(
    order: &mut InOrder,
    source: &Source<'_, R>,
    chunk: u64,
    in_flight: usize,
    shared: &Mutex<Shared>,
    cv: &Condvar,
    name: &str,
    each: &mut impl FnMut(&Chunk, u64) -> Result<()>,
) -> Result<u64> {
    let mut line = 1u64;
    // A mapped file's bytes before this offset have been released.
    let mut released = 0;
    let mut file = None;
    let mut help = || take_one(source, &mut file, chunk, shared, cv, in_flight, false);
    while let Some(got) = order
        .next(&mut help)
        .map_err(|what| TraceReadError::Internal {
            path: name.to_string(),
            what,
        })?
    {
        let c = got.map_err(|source| TraceReadError::Io {
            path: name.to_string(),
            source,
        })?;
        each(&c, line)?;
        if let Some((map, range)) = &c.mapped {
            // Chunks are accounted in file order: what is before this one's end has been read.
            if range.end - released >= RELEASE_EVERY {
                mapped::release(map, released..range.end);
                released = range.end;
            }
        }
        line += c.lines;
        let mut s = lock(shared);
        s.done = order.next;
        s.pool.push(c);
        drop(s);
        cv.notify_all();
    }
    Ok(line - 1)
}

/// Locks a mutex; a poisoned one is taken as it is (a worker that panicked is reported as such).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a worker got for a slot.
enum Got {
    /// Chunk `i`, read.
    Chunk(usize),
    /// Reading chunk `i` failed.
    Failed(usize, io::Error),
    /// The stream has ended after this many chunks.
    End(usize),
}

/// A worker: takes a slot, reads and classifies a chunk into it, sends it; until there are no
/// more chunks or the accounting stops.
fn work<R: Read>(
    source: &Source<'_, R>,
    chunk: u64,
    shared: &Mutex<Shared>,
    cv: &Condvar,
    in_flight: usize,
    tx: mpsc::Sender<Msg>,
) {
    let mut file = None;
    loop {
        let Some(msg) = take_one(source, &mut file, chunk, shared, cv, in_flight, true) else {
            return;
        };
        let more = matches!(msg, Msg::Chunk(_, Ok(_)));
        if tx.send(msg).is_err() || !more {
            return;
        }
    }
}

/// Takes the next slot, reads and classifies its chunk: the message for the accounting, or `None`
/// when there is nothing left to take (or the accounting stopped). With `wait`, waits for a slot
/// while as many chunks as may be are in flight; without, returns `None` then too.
fn take_one<R: Read>(
    source: &Source<'_, R>,
    file: &mut Option<File>,
    chunk: u64,
    shared: &Mutex<Shared>,
    cv: &Condvar,
    in_flight: usize,
    wait: bool,
) -> Option<Msg> {
    let (slot, mut c) = {
        let mut s = lock(shared);
        loop {
            if s.abort || s.total.is_some_and(|n| s.next >= n) {
                return None;
            }
            if s.next < s.done + in_flight {
                break;
            }
            if !wait {
                return None;
            }
            s = cv.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
        s.next += 1;
        (s.next - 1, s.pool.pop().unwrap_or_default())
    };
    // A panic here (a bug) must not leave the accounting waiting for this chunk.
    let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let got = read_chunk(source, file, chunk, slot, &mut c);
        if let Got::Chunk(_) = got {
            c.classify();
        }
        got
    }));
    Some(match got {
        Ok(Got::Chunk(i)) => Msg::Chunk(i, Ok(c)),
        Ok(Got::Failed(i, e)) => Msg::Chunk(i, Err(e)),
        Ok(Got::End(n)) => {
            lock(shared).total = Some(n);
            cv.notify_all();
            Msg::End(n)
        }
        Err(_) => Msg::Panic,
    })
}

/// Reads into `c` chunk `slot` of a file (through the worker's own `file` handle, opened on first
/// use) or the next piece of a stream.
fn read_chunk<R: Read>(
    source: &Source<'_, R>,
    file: &mut Option<File>,
    chunk: u64,
    slot: usize,
    c: &mut Chunk,
) -> Got {
    c.mapped = None;
    match source {
        Source::Mapped(map) => {
            fill_mapped(map, chunk, slot as u64, c);
            Got::Chunk(slot)
        }
        Source::File { path, len } => {
            let f = match file.take() {
                Some(f) => f,
                None => match File::open(path) {
                    Ok(f) => f,
                    Err(e) => return Got::Failed(slot, e),
                },
            };
            match fill(file.insert(f), *len, chunk, slot as u64, &mut c.buf) {
                Ok(()) => Got::Chunk(slot),
                Err(e) => Got::Failed(slot, e),
            }
        }
        Source::Stream(cutter) => {
            let mut cutter = lock(cutter);
            let i = cutter.pieces;
            match cutter.next_piece(&mut c.buf) {
                Ok(true) => Got::Chunk(i),
                Ok(false) => Got::End(cutter.pieces),
                Err(e) => Got::Failed(i, e),
            }
        }
    }
}

/// The first newline at or after `from`, reading forward (at most up to `limit`).
fn newline_from(
    file: &mut File,
    from: u64,
    limit: u64,
    buf: &mut Vec<u8>,
) -> io::Result<Option<u64>> {
    let mut at = from;
    while at < limit {
        let want = PROBE.min((limit - at) as usize);
        buf.resize(want, 0);
        file.seek(SeekFrom::Start(at))?;
        file.read_exact(&mut buf[..want])?;
        if let Some(i) = memchr::memchr(b'\n', &buf[..want]) {
            return Ok(Some(at + i as u64));
        }
        at += want as u64;
    }
    Ok(None)
}

/// Where chunk `i` of a file starts: after the first newline in its window `[i·C − 1, (i+1)·C −
/// 1)`, or `None` when the window has none (the chunk is empty).
fn border(
    file: &mut File,
    len: u64,
    chunk: u64,
    i: u64,
    buf: &mut Vec<u8>,
) -> io::Result<Option<u64>> {
    if i == 0 {
        return Ok(Some(0));
    }
    let from = i * chunk - 1;
    if from >= len {
        return Ok(Some(len));
    }
    let limit = ((i + 1) * chunk - 1).min(len);
    Ok(newline_from(file, from, limit, buf)?.map(|nl| nl + 1))
}

/// Where chunk `i` of a mapped file starts (see [`border`]).
fn border_mapped(data: &[u8], chunk: u64, i: u64) -> Option<usize> {
    if i == 0 {
        return Some(0);
    }
    let len = data.len() as u64;
    let from = i * chunk - 1;
    if from >= len {
        return Some(data.len());
    }
    let limit = ((i + 1) * chunk - 1).min(len);
    memchr::memchr(b'\n', &data[from as usize..limit as usize]).map(|at| from as usize + at + 1)
}

/// Chunk `i` of a mapped file into `c`: the range of the map between its borders, found as
/// [`fill`] finds them in a file; a range far longer than a chunk (it holds a line that long) is
/// copied through a [`Cutter`] as [`fill`] reads it.
fn fill_mapped(map: &Arc<Mmap>, chunk: u64, i: u64, c: &mut Chunk) {
    let data: &[u8] = map;
    let Some(start) = border_mapped(data, chunk, i) else {
        c.buf.clear();
        return;
    };
    let mut k = i + 1;
    let end = loop {
        if let Some(b) = border_mapped(data, chunk, k) {
            break b;
        }
        k += 1;
    };
    if start >= end {
        c.buf.clear();
    } else if (end - start) as u64 <= (DIRECT_CHUNKS * chunk).max(MAX_LINE as u64) {
        c.mapped = Some((Arc::clone(map), start..end));
    } else {
        // Reading a slice cannot fail.
        let _ = Cutter::new(&data[start..end], usize::MAX).next_piece(&mut c.buf);
        mapped::release(map, start..end);
    }
}

/// Reads chunk `i` of a file of `len` bytes into `data`.
fn fill(file: &mut File, len: u64, chunk: u64, i: u64, data: &mut Vec<u8>) -> io::Result<()> {
    let mut probe = Vec::new();
    let Some(start) = border(file, len, chunk, i, &mut probe)? else {
        data.clear();
        return Ok(());
    };
    // The end: the start of the next chunk that has one.
    let mut k = i + 1;
    let end = loop {
        if let Some(b) = border(file, len, chunk, k, &mut probe)? {
            break b;
        }
        k += 1;
    };
    if start >= end {
        data.clear();
        return Ok(());
    }
    file.seek(SeekFrom::Start(start))?;
    if end - start <= (DIRECT_CHUNKS * chunk).max(MAX_LINE as u64) {
        // Resized without clearing: a reused buffer is only zeroed where it grows.
        data.resize((end - start) as usize, 0);
        file.read_exact(data)?;
    } else {
        // A line far longer than a chunk: read as a stream (its first MAX_LINE + 1 bytes are kept),
        // all in one piece.
        Cutter::new(Read::by_ref(file).take(end - start), usize::MAX).next_piece(data)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Every chunk of a mapped file holds the bytes that reading the same chunk gives, whatever
    /// the chunk size: borders inside lines, empty chunks inside long lines, a line long enough to
    /// be cut, no final newline, CRLF.
    #[test]
    fn mapped_chunks_hold_what_reading_gives() {
        for long in [false, true] {
            let mut text = Vec::new();
            for i in 0..200u32 {
                text.extend_from_slice(format!("WAIT #1: nam='x' ela= {i} tim={i}\r\n").as_bytes());
                if long && i % 50 == 7 {
                    text.extend(std::iter::repeat_n(b'y', MAX_LINE + 3000));
                    text.extend_from_slice(b"\n\n");
                }
            }
            text.extend_from_slice(b"XCTEND rlbk=0, rd_only=1, tim=9");
            let sizes: &[u64] = match long {
                false => &[1, 7, 64, 4096],
                true => &[100_000, 1 << 20, 3 << 20],
            };
            same_chunks(&text, sizes);
        }
    }

    /// Whatever the number of threads (1: the accounting thread classifies every chunk itself;
    /// more: it classifies whichever chunks the workers have not taken when it needs one), every
    /// chunk reaches `each` once, in file order, with the right first line number: for a mapped
    /// file and for a stream.
    #[test]
    fn chunks_arrive_in_file_order_whoever_classifies_them() {
        let mut text = Vec::new();
        for i in 0..20_000u32 {
            text.extend_from_slice(format!("WAIT #{i}: nam='x' ela= {i} tim={i}\n").as_bytes());
        }
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&text).unwrap();
        let len = text.len() as u64;
        for workers in [1, 2, 3, 8] {
            for stream in [false, true] {
                let (mut got, mut firsts) = (Vec::new(), Vec::new());
                let mut expect_first = 1;
                let input = match stream {
                    false => Input::File {
                        path: f.path(),
                        len,
                    },
                    true => Input::Stream(&text[..]),
                };
                let (lines, bytes) = for_each_chunk(input, "t", 4096, workers, |c, first| {
                    firsts.push((first, expect_first));
                    expect_first += c.lines;
                    got.extend_from_slice(c.data());
                    Ok(())
                })
                .unwrap();
                let what = format!("{workers} threads, stream {stream}");
                assert_eq!(got, text, "{what}");
                assert_eq!((lines, bytes), (20_000, len), "{what}");
                assert!(firsts.len() > 100, "{what}: {} chunks", firsts.len());
                assert!(firsts.iter().all(|(a, b)| a == b), "{what}");
            }
        }
    }

    fn same_chunks(text: &[u8], sizes: &[u64]) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text).unwrap();
        let len = text.len() as u64;
        let map = Arc::new(mapped::map_whole(f.as_file(), len).expect("a plain file maps"));
        for &chunk in sizes.iter().chain(&[len, len + 5]) {
            let (mut read, mut got) = (Chunk::default(), Chunk::default());
            let mut file = File::open(f.path()).unwrap();
            let mut whole = Vec::new();
            for i in 0..len.div_ceil(chunk) {
                fill(&mut file, len, chunk, i, &mut read.buf).unwrap();
                got.mapped = None;
                fill_mapped(&map, chunk, i, &mut got);
                assert_eq!(got.data(), &read.buf[..], "chunk {i} of {chunk} bytes");
                whole.extend_from_slice(got.data());
            }
            // The chunks are the file, with only the cut lines shortened.
            assert!(
                whole.len() < text.len() || whole == text,
                "chunks of {chunk}"
            );
        }
    }
}
