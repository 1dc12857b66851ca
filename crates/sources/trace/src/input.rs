//! Trace input: files opened plain or gzip (detected by their magic bytes), and a `Cutter` that
//! cuts any byte stream into pieces of whole lines in bounded memory (lines past [`MAX_LINE`] are
//! cut, a missing final newline is fine).

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

/// Longest line kept; the rest of a longer line is skipped (and the line flagged as cut). A line is
/// cut exactly when it has more than this many bytes before its newline, however it was read
/// (from a plain file at chunk borders, or from a stream).
pub const MAX_LINE: usize = 1 << 20;

/// Largest single read from a stream.
const MAX_READ: usize = 1 << 20;
/// Reads from a stream shorter than this go through a buffer of this size (small pieces then do
/// not cost a read, or a decompression call, each); longer ones go straight into the piece.
const READ_BUFFER: usize = 64 << 10;

/// Opens a trace file, decompressing it on the fly when it is gzip (`.gz` or not: the content decides).
pub fn open(path: &Path) -> io::Result<Box<dyn Read + Send>> {
    let mut f = BufReader::with_capacity(1 << 16, File::open(path)?);
    let mut magic = [0u8; 2];
    let n = read_full(&mut f, &mut magic)?;
    let head = io::Cursor::new(magic[..n].to_vec());
    let chained = head.chain(f);
    if n == 2 && magic == [0x1f, 0x8b] {
        Ok(Box::new(flate2::read::MultiGzDecoder::new(chained)))
    } else {
        Ok(Box::new(chained))
    }
}

/// The length of a plain (not gzip) regular file, or `None` when it is compressed or not a regular
/// file (a pipe, a device): those are read as a stream.
pub fn plain_len(path: &Path) -> io::Result<Option<u64>> {
    let mut f = File::open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Ok(None);
    }
    let mut magic = [0u8; 2];
    let n = read_full(&mut f, &mut magic)?;
    Ok((n < 2 || magic != [0x1f, 0x8b]).then_some(meta.len()))
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match read_some(r, &mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

/// One `read`, retried when interrupted.
fn read_some(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

/// Cuts a byte stream into pieces of whole lines, in bounded memory. A piece ends at the last
/// newline read once it holds `size` bytes (so it holds at least one line, and a line is never
/// split between pieces); the last piece may end without a newline. A line longer than
/// [`MAX_LINE`] that does not end within the read that brought its first `MAX_LINE + 1` bytes
/// keeps only those (enough for the classifier to cut it as any other); the rest, up to its
/// newline, is read and dropped. So a piece holds at most about `size` + 2 MiB.
pub(crate) struct Cutter<R> {
    input: BufReader<R>,
    size: usize,
    /// The start of the line the last piece stopped inside: the start of the next piece.
    carry: Vec<u8>,
    /// Dropping the rest of a line longer than `MAX_LINE + 1` bytes.
    skipping: bool,
    /// The input has ended (or failed).
    eof: bool,
    /// Bytes read from the input.
    pub bytes: u64,
    /// Pieces handed out (a piece whose reading failed included).
    pub pieces: usize,
}

impl<R: Read> Cutter<R> {
    /// Cuts `input` into pieces of about `size` bytes (at least 1).
    pub fn new(input: R, size: usize) -> Self {
        Cutter {
            input: BufReader::with_capacity(READ_BUFFER, input),
            size: size.max(1),
            carry: Vec::new(),
            skipping: false,
            eof: false,
            bytes: 0,
            pieces: 0,
        }
    }

    /// Fills `data` with the next piece; `false` (with `data` empty) at the end of the input. After
    /// an error the input counts as ended.
    pub fn next_piece(&mut self, data: &mut Vec<u8>) -> io::Result<bool> {
        let r = self.fill(data);
        if r.is_err() {
            self.eof = true;
            self.pieces += 1;
            data.clear();
        }
        r
    }

    fn fill(&mut self, data: &mut Vec<u8>) -> io::Result<bool> {
        // `data` is a reused buffer: bytes past `filled` are stale and overwritten before they are
        // read, so that it is only zeroed where it grows.
        let mut filled = self.carry.len();
        if data.len() < filled {
            data.resize(filled, 0);
        }
        data[..filled].copy_from_slice(&self.carry);
        self.carry.clear();
        // Where the line being read starts (0 until a newline is read: the carry holds none).
        let mut line_start = 0;
        while !self.eof && (filled < self.size || line_start == 0) {
            let room = if filled < self.size {
                self.size - filled
            } else {
                self.size
            };
            let end = filled + room.min(MAX_READ);
            if data.len() < end {
                data.resize(end, 0);
            }
            let n = read_some(&mut self.input, &mut data[filled..end])?;
            self.bytes += n as u64;
            if n == 0 {
                self.eof = true;
                break;
            }
            let mut new = filled..filled + n;
            if self.skipping {
                // The rest of a line that is too long: dropped up to its newline.
                let Some(nl) = memchr::memchr(b'\n', &data[new.clone()]) else {
                    continue;
                };
                data.copy_within(filled + nl..filled + n, filled);
                new = filled..filled + n - nl;
                self.skipping = false;
            }
            filled = new.end;
            if let Some(nl) = memchr::memrchr(b'\n', &data[new.clone()]) {
                line_start = new.start + nl + 1;
            }
            if filled - line_start > MAX_LINE + 1 {
                filled = line_start + MAX_LINE + 1;
                self.skipping = true;
            }
        }
        if !self.eof {
            self.carry.extend_from_slice(&data[line_start..filled]);
            filled = line_start;
        }
        data.truncate(filled);
        if filled == 0 {
            return Ok(false);
        }
        self.pieces += 1;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of `data` as the classifier sees them once cut into pieces of `size` bytes: kept
    /// bytes (without `\n` or `\r\n`) and whether the line was cut; and the bytes read.
    fn lines(data: &[u8], size: usize) -> (Vec<(Vec<u8>, bool)>, u64) {
        let mut cutter = Cutter::new(data, size);
        let mut piece = Vec::new();
        let mut out = Vec::new();
        while cutter.next_piece(&mut piece).unwrap() {
            assert!(!piece.is_empty());
            let body = piece.strip_suffix(b"\n").unwrap_or(&piece);
            for l in body.split(|&b| b == b'\n') {
                if l.len() > MAX_LINE {
                    out.push((l[..MAX_LINE].to_vec(), true));
                } else {
                    out.push((l.strip_suffix(b"\r").unwrap_or(l).to_vec(), false));
                }
            }
        }
        (out, cutter.bytes)
    }

    #[test]
    fn crlf_and_a_missing_last_newline() {
        for size in [1, 2, 3, 5, 100] {
            let (v, bytes) = lines(b"a\r\nbb\n\nlast", size);
            let want: Vec<(Vec<u8>, bool)> = [&b"a"[..], b"bb", b"", b"last"]
                .iter()
                .map(|l| (l.to_vec(), false))
                .collect();
            assert_eq!(v, want, "pieces of {size}");
            assert_eq!(bytes, 11);
        }
        assert_eq!(lines(b"", 7), (vec![], 0));
        assert_eq!(lines(b"x\n", 7), (vec![(b"x".to_vec(), false)], 2));
    }

    #[test]
    fn a_huge_line_is_cut_and_the_next_one_kept() {
        for (size, tail) in [(1 << 20, &b"\nnext\n"[..]), (4096, b"\r\nnext"), (7, b"\n")] {
            let mut data = vec![b'x'; MAX_LINE * 3 + 17];
            data.extend_from_slice(tail);
            let (v, bytes) = lines(&data, size);
            assert_eq!(v[0], (vec![b'x'; MAX_LINE], true), "pieces of {size}");
            let rest: Vec<&[u8]> = v[1..].iter().map(|(l, _)| &l[..]).collect();
            let want: &[&[u8]] = if tail.len() > 2 { &[b"next"] } else { &[] };
            assert_eq!(rest, want, "pieces of {size}");
            assert_eq!(bytes, data.len() as u64);
        }
    }

    proptest::proptest! {
        /// Pieces of any size hold the same lines as the whole input split at once.
        #[test]
        fn pieces_hold_the_lines_of_the_whole(
            data in proptest::collection::vec(proptest::sample::select(&b"ab\r\n"[..]), 0..300),
            size in 1usize..40,
        ) {
            let whole = lines(&data, usize::MAX);
            proptest::prop_assert_eq!(lines(&data, size), whole);
        }
    }

    #[test]
    fn gzip_is_detected_by_content() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.trc.gz");
        let mut gz =
            flate2::write::GzEncoder::new(File::create(&p).unwrap(), flate2::Compression::fast());
        gz.write_all(b"one\ntwo\n").unwrap();
        gz.finish().unwrap();
        assert_eq!(plain_len(&p).unwrap(), None);
        let mut text = String::new();
        open(&p).unwrap().read_to_string(&mut text).unwrap();
        assert_eq!(text, "one\ntwo\n");
    }
}
