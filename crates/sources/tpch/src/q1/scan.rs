//! One map task's scan: a split's rows from a memory map, `read()` into a buffer, or Parquet.
//!
//! Text is parsed in place through a memory map, or read into a buffer when it cannot be mapped;
//! a Parquet split is a row group. Every row that passes the filter goes to the task's `emit`.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{LineitemParquetError, Q1Error};
use crate::lineitem::{RowValues, FIELD_NAMES};

use super::parse::{next_line, DateCut};
use super::split::{Input, ParquetInput, Split};

/// Bytes a mapper reads at a time.
pub(super) const CHUNK: usize = 4 << 20;
/// Bytes between two updates of the progress counter (one atomic add per ~4 MiB, not per line).
const PROGRESS_STEP: usize = 4 << 20;

/// What a map task reads from: the inputs, their open files, how to read text, the cutoff, and
/// the progress counter of input bytes consumed.
pub(super) struct Sources<'a> {
    /// The job's input files.
    pub inputs: &'a [Input],
    /// Each input, open.
    pub files: &'a [File],
    /// Parse text in place through a memory map (else `read()` into a buffer).
    pub mmap: bool,
    /// The filter's cutoff date.
    pub cut: &'a DateCut,
    /// Input bytes consumed, for progress.
    pub bytes_mapped: &'a AtomicU64,
}

impl Sources<'_> {
    /// Runs one map task over `split`: Parquet row group, mapped text or read() text.
    ///
    /// The file must have the length the splits were planned on, before and after the scan: a
    /// file that shrank (or grew) under the job would give an answer that is not the file's —
    /// lines past a new end silently missing, or the zeros a map reads past it (see
    /// `dbscope_core::mapped`) — so the task fails naming the file instead.
    #[inline(always)]
    pub fn scan(&self, split: &Split, emit: impl FnMut(RowValues)) -> Result<u64, ScanError> {
        let input = &self.inputs[split.file];
        let file = &self.files[split.file];
        unchanged(input, file, false)?;
        let (r, faulted) = match &input.parquet {
            Some(parquet) => {
                let r = self.scan_parquet(parquet, split, emit);
                let faulted = parquet
                    .faulted
                    .as_ref()
                    .is_some_and(|f| f.load(Ordering::Acquire));
                (r, faulted)
            }
            None => self.scan_text(split, emit),
        };
        unchanged(input, file, faulted)?;
        r
    }

    /// A Parquet row group (`split.start` is its number), read through the job's one reader.
    #[inline(always)]
    fn scan_parquet(
        &self,
        parquet: &ParquetInput,
        split: &Split,
        emit: impl FnMut(RowValues),
    ) -> Result<u64, ScanError> {
        let rg = split.start as usize;
        let r = crate::parquet_io::scan_row_group(&parquet.reader, rg, self.cut.ymd, emit)
            .map_err(ScanError::Parquet);
        let size = parquet.row_groups.get(rg).copied().unwrap_or(0);
        self.bytes_mapped.fetch_add(size, Ordering::Relaxed);
        r
    }

    /// A byte range of a text file: through a memory map, or `read()` when off or impossible.
    /// Also says whether a read of the map faulted (the file shrank under it).
    #[inline(always)]
    fn scan_text(
        &self,
        split: &Split,
        emit: impl FnMut(RowValues),
    ) -> (Result<u64, ScanError>, bool) {
        let file = &self.files[split.file];
        // Each task maps its own range (from the byte before it to the end of the file: only the
        // pages it touches cost anything), so the mappers also unmap in parallel when they finish
        // rather than the whole file at once at the end of the job.
        let base = split.start.saturating_sub(1);
        match self
            .mmap
            .then(|| dbscope_core::mapped::map_from(file, base))
            .flatten()
        {
            Some(data) => {
                let r = scan_mapped(
                    &data,
                    base,
                    split.start,
                    split.end,
                    self.cut,
                    self.bytes_mapped,
                    emit,
                );
                (r, data.faulted())
            }
            None => (
                scan_range(
                    file,
                    split.start,
                    split.end,
                    self.cut,
                    self.bytes_mapped,
                    emit,
                ),
                false,
            ),
        }
    }
}

/// `Err(Changed)` when `file` no longer has the length `input` was planned with, or a read of its
/// map `faulted`.
fn unchanged(input: &Input, file: &File, faulted: bool) -> Result<(), ScanError> {
    let now = file.metadata().map_err(ScanError::Io)?.len();
    if now != input.len || faulted {
        return Err(ScanError::Changed {
            was: input.len,
            now,
        });
    }
    Ok(())
}

/// A bad line found while scanning, located by byte offset (turned into a line number later).
#[derive(Debug)]
pub(super) enum ScanError {
    /// Reading the file failed.
    Io(std::io::Error),
    /// The line at byte `offset` is bad in field `field` (from 0).
    Parse {
        offset: u64,
        field: usize,
        msg: String,
    },
    /// The line at byte `offset` has no newline and the file ends.
    Truncated { offset: u64 },
    /// The Parquet row group could not be read.
    Parquet(LineitemParquetError),
    /// The file's length is no longer the one the job was planned with (or its map faulted).
    Changed { was: u64, now: u64 },
}

impl ScanError {
    /// The job's error for this one: names the file and, for a bad line, its number.
    pub(super) fn into_error(self, path: &Path, file: &File) -> Q1Error {
        match self {
            ScanError::Io(e) => Q1Error::Io {
                path: path.to_owned(),
                source: e,
            },
            ScanError::Parse { offset, field, msg } => Q1Error::Parse {
                path: path.to_owned(),
                line: line_number(file, offset),
                field: field + 1,
                name: FIELD_NAMES.get(field).copied().unwrap_or("?"),
                msg,
            },
            ScanError::Truncated { offset } => Q1Error::Truncated {
                path: path.to_owned(),
                line: line_number(file, offset),
            },
            ScanError::Parquet(source) => Q1Error::Parquet {
                path: path.to_owned(),
                source,
            },
            ScanError::Changed { was, now } => Q1Error::Changed {
                path: path.to_owned(),
                was,
                now,
            },
        }
    }
}

/// The 1-based number of the line that starts at `offset` (counts newlines before it; error path only).
fn line_number(file: &File, offset: u64) -> u64 {
    let mut buf = vec![0u8; 1 << 20];
    let mut pos = 0u64;
    let mut lines = 1u64;
    while pos < offset {
        let want = ((offset - pos) as usize).min(buf.len());
        match file.read_at(&mut buf[..want], pos) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                lines += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
                pos += n as u64;
            }
        }
    }
    lines
}

/// Scans the lines that start in `[start, end)` of a file, in place in `data`, the file mapped
/// from offset `base` (≤ `start`) to its end; calls `emit` for each row with
/// `l_shipdate <= cutoff`. Returns the number of lines read.
fn scan_mapped(
    data: &[u8],
    base: u64,
    start: u64,
    end: u64,
    cut: &DateCut,
    bytes_mapped: &AtomicU64,
    mut emit: impl FnMut(RowValues),
) -> Result<u64, ScanError> {
    let start = (start - base) as usize;
    let end = ((end - base) as usize).min(data.len());
    let mut pos = start;
    // The line that starts exactly at `start` is ours only if the byte before ends a line.
    if start > 0 && data[start - 1] != b'\n' {
        pos = match memchr::memchr(b'\n', &data[start..]) {
            Some(nl) => start + nl + 1,
            None => data.len(),
        };
    }
    let mut lines = 0u64;
    let mut accounted = start;
    while pos < end {
        match next_line(&data[pos..], cut) {
            Ok(Some((row, n))) => {
                lines += 1;
                if let Some(row) = row {
                    emit(row);
                }
                pos += n;
            }
            // No newline before the end of the file: the last line was cut short.
            Ok(None) => {
                return Err(ScanError::Truncated {
                    offset: base + pos as u64,
                })
            }
            Err((field, msg)) => {
                return Err(ScanError::Parse {
                    offset: base + pos as u64,
                    field,
                    msg,
                })
            }
        }
        if pos - accounted >= PROGRESS_STEP {
            let upto = pos.min(end);
            bytes_mapped.fetch_add((upto - accounted) as u64, Ordering::Relaxed);
            accounted = upto;
        }
    }
    bytes_mapped.fetch_add(end.saturating_sub(accounted) as u64, Ordering::Relaxed);
    Ok(lines)
}

/// Scans the lines that start in `[start, end)` of `file` with `read()` into a buffer (for files
/// that cannot be mapped, and `--no-mmap`); calls `emit` for each row with `l_shipdate <= cutoff`.
/// Returns the number of lines read.
fn scan_range(
    file: &File,
    start: u64,
    end: u64,
    cut: &DateCut,
    bytes_mapped: &AtomicU64,
    mut emit: impl FnMut(RowValues),
) -> Result<u64, ScanError> {
    let mut buf: Vec<u8> = vec![0; CHUNK];
    let Some(pos) = first_line_start(file, start, &mut buf)? else {
        bytes_mapped.fetch_add(end - start, Ordering::Relaxed);
        return Ok(0);
    };
    let mut lines = 0u64;
    // buf[..filled] holds file bytes from `base`.
    let mut base = pos;
    let mut filled = 0usize;
    let mut eof = false;
    let mut accounted = start;
    loop {
        if base >= end && filled == 0 {
            break;
        }
        if !eof {
            if filled == buf.len() {
                buf.resize(buf.len() * 2, 0);
            }
            let n = file
                .read_at(&mut buf[filled..], base + filled as u64)
                .map_err(ScanError::Io)?;
            if n == 0 {
                eof = true;
            }
            filled += n;
        }
        let i = scan_buffered(&buf[..filled], base, end, cut, &mut lines, &mut emit)?;
        let consumed = (base + i as u64).min(end);
        if consumed > accounted {
            bytes_mapped.fetch_add(consumed - accounted, Ordering::Relaxed);
            accounted = consumed;
        }
        if base + i as u64 >= end {
            break;
        }
        if eof && i >= filled {
            break;
        }
        if eof {
            // Bytes left with no newline and no more file: the last line was cut short.
            return Err(ScanError::Truncated {
                offset: base + i as u64,
            });
        }
        buf.copy_within(i..filled, 0);
        filled -= i;
        base += i as u64;
    }
    bytes_mapped.fetch_add(end.saturating_sub(accounted), Ordering::Relaxed);
    Ok(lines)
}

/// Where the first line of the range that starts at `start` begins: the line that starts exactly at
/// `start` is the range's only if the byte before ends a line; otherwise the next line is. `None`
/// when the file ends first. Reads through `buf`.
fn first_line_start(file: &File, start: u64, buf: &mut [u8]) -> Result<Option<u64>, ScanError> {
    if start == 0 {
        return Ok(Some(0));
    }
    let mut probe = start - 1;
    loop {
        let n = file.read_at(buf, probe).map_err(ScanError::Io)?;
        if n == 0 {
            return Ok(None);
        }
        if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
            return Ok(Some(probe + i as u64 + 1));
        }
        probe += n as u64;
    }
}

/// Parses the whole lines at the start of `buf` (file bytes from `base`) that start before `end`,
/// counting them in `lines`; returns the bytes they take. Stops at a line that goes on past `buf`.
#[inline(always)]
fn scan_buffered(
    buf: &[u8],
    base: u64,
    end: u64,
    cut: &DateCut,
    lines: &mut u64,
    emit: &mut impl FnMut(RowValues),
) -> Result<usize, ScanError> {
    let mut i = 0usize;
    while i < buf.len() {
        let line_start = base + i as u64;
        if line_start >= end {
            break;
        }
        match next_line(&buf[i..], cut) {
            Ok(Some((row, n))) => {
                *lines += 1;
                if let Some(row) = row {
                    emit(row);
                }
                i += n;
            }
            // The line goes on past the buffer: read more.
            Ok(None) => break,
            Err((field, msg)) => {
                return Err(ScanError::Parse {
                    offset: line_start,
                    field,
                    msg,
                })
            }
        }
    }
    Ok(i)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;

    /// Parquet as `tpch gen` writes it reads back as the rows the text parser finds in the same data.
    #[test]
    fn round_trip_through_parquet() {
        use crate::parquet_io::{open_lineitem, scan_row_group, write_lineitem};
        use tpchgen::generators::LineItemGenerator;
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("lineitem.parquet");
        let rows = write_lineitem(&path, 0.001, 1, 1, 1000, &AtomicU64::new(0)).unwrap();
        let (reader, sizes) = open_lineitem(&path).unwrap();
        assert_eq!(sizes.len() as u64, rows.div_ceil(1000));
        let mut got = Vec::new();
        let mut read = 0;
        for rg in 0..sizes.len() {
            read += scan_row_group(&reader, rg, 19981201, |r| got.push(r)).unwrap();
        }
        assert_eq!(read, rows);
        // The same rows as the text format, parsed by the text mapper.
        let mut want = Vec::new();
        for l in LineItemGenerator::new(0.001, 1, 1).iter() {
            let line = l.to_string();
            if let Some(r) = crate::q1::parse::parse_line(line.as_bytes(), 19981201).unwrap() {
                want.push(r);
            }
        }
        assert_eq!(got, want);
        let other = d.path().join("other.parquet");
        std::fs::write(&other, b"PAR1 not really").unwrap();
        match open_lineitem(&other).map_err(|e| e.to_string()) {
            Err(e) => assert!(e.contains("not a Parquet file"), "{e}"),
            Ok(_) => panic!("a non-Parquet file was accepted"),
        }
    }
}
