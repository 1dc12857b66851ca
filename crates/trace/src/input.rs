//! Reading trace files as numbered lines in bounded memory: plain or gzip (detected by its magic
//! bytes), any line length (lines past [`MAX_LINE`] are cut and flagged), a missing final newline.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

/// Longest line kept; the rest of a longer line is skipped (and the line flagged as cut). A line is
/// cut exactly when it has more than this many bytes before its newline, however it was buffered
/// (the parallel reader of plain files cuts the same lines).
pub const MAX_LINE: usize = 1 << 20;

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
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Splits a byte stream into lines (without `\n` or `\r\n`), reusing one buffer.
pub struct Lines<R> {
    input: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    skipping: bool,
    long: Vec<u8>,
    /// Number of the line last returned, from 1.
    pub line_no: u64,
    /// Bytes consumed so far.
    pub bytes: u64,
    /// True when the line last returned was longer than [`MAX_LINE`] and was cut.
    pub cut: bool,
}

impl<R: Read> Lines<R> {
    /// Wraps a reader.
    pub fn new(input: R) -> Self {
        Lines {
            input,
            buf: vec![0; 1 << 18],
            start: 0,
            end: 0,
            eof: false,
            skipping: false,
            long: Vec::new(),
            line_no: 0,
            bytes: 0,
            cut: false,
        }
    }

    /// The next line, or `None` at the end of the input.
    pub fn next_line(&mut self) -> io::Result<Option<&[u8]>> {
        self.cut = false;
        let mut scanned = self.start;
        loop {
            if self.skipping {
                // The rest of a cut line: drop it up to its newline.
                if let Some(i) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                    self.bytes += (i + 1) as u64;
                    self.start += i + 1;
                    scanned = self.start;
                    self.skipping = false;
                    continue;
                }
                self.bytes += (self.end - self.start) as u64;
                self.start = 0;
                self.end = 0;
                scanned = 0;
                if self.eof {
                    return Ok(None);
                }
            } else if let Some(i) = memchr::memchr(b'\n', &self.buf[scanned..self.end]) {
                let nl = scanned + i;
                let (s, e) = (self.start, nl);
                self.start = nl + 1;
                self.bytes += (e + 1 - s) as u64;
                self.line_no += 1;
                if e - s > MAX_LINE {
                    self.cut = true;
                    return Ok(Some(&self.buf[s..s + MAX_LINE]));
                }
                return Ok(Some(strip_cr(&self.buf[s..e])));
            } else {
                scanned = self.end;
                if self.eof {
                    if self.start == self.end {
                        return Ok(None);
                    }
                    // A last line without a newline (a truncated file).
                    let (s, e) = (self.start, self.end);
                    self.start = self.end;
                    self.bytes += (e - s) as u64;
                    self.line_no += 1;
                    if e - s > MAX_LINE {
                        self.cut = true;
                        return Ok(Some(&self.buf[s..s + MAX_LINE]));
                    }
                    return Ok(Some(strip_cr(&self.buf[s..e])));
                }
                if self.end - self.start > MAX_LINE {
                    // Too long: keep MAX_LINE bytes, drop the rest up to the next newline.
                    self.long.clear();
                    self.long
                        .extend_from_slice(&self.buf[self.start..self.start + MAX_LINE]);
                    self.bytes += (self.end - self.start) as u64;
                    self.start = 0;
                    self.end = 0;
                    self.skipping = true;
                    self.line_no += 1;
                    self.cut = true;
                    return Ok(Some(&self.long));
                }
                if self.end == self.buf.len() {
                    if self.start > 0 {
                        self.buf.copy_within(self.start..self.end, 0);
                        self.end -= self.start;
                        scanned -= self.start;
                        self.start = 0;
                    } else {
                        let n = (self.buf.len() * 2).min(MAX_LINE + (1 << 16));
                        self.buf.resize(n, 0);
                    }
                }
            }
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

fn strip_cr(l: &[u8]) -> &[u8] {
    l.strip_suffix(b"\r").unwrap_or(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(data: &[u8]) -> (Vec<Vec<u8>>, Vec<bool>, u64) {
        let mut l = Lines::new(data);
        let (mut out, mut cut) = (Vec::new(), Vec::new());
        while let Some(x) = l.next_line().unwrap() {
            out.push(x.to_vec());
            cut.push(l.cut);
        }
        (out, cut, l.bytes)
    }

    #[test]
    fn lines_crlf_and_missing_newline() {
        let (v, _, bytes) = all(b"a\r\nbb\n\nlast");
        assert_eq!(
            v,
            vec![b"a".to_vec(), b"bb".to_vec(), vec![], b"last".to_vec()]
        );
        assert_eq!(bytes, 11);
    }

    #[test]
    fn a_huge_line_is_cut_and_the_next_one_kept() {
        let mut data = vec![b'x'; MAX_LINE * 3 + 17];
        data.extend_from_slice(b"\nnext\n");
        let (v, cut, bytes) = all(&data);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].len(), MAX_LINE);
        assert_eq!(cut, vec![true, false]);
        assert_eq!(v[1], b"next");
        assert_eq!(bytes, data.len() as u64);
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
        let (v, _, _) = {
            let mut l = Lines::new(open(&p).unwrap());
            let mut out = Vec::new();
            while let Some(x) = l.next_line().unwrap() {
                out.push(x.to_vec());
            }
            (out, (), ())
        };
        assert_eq!(v, vec![b"one".to_vec(), b"two".to_vec()]);
    }
}
