//! The files of `transfer`: what is written is counted and CRC-32'd on its way to the file.

use std::io::{self, Write};

/// A writer that counts the bytes it passes on and keeps their CRC-32.
pub struct Counted<W> {
    inner: W,
    /// Bytes written.
    pub bytes: u64,
    crc: crc32fast::Hasher,
}

impl<W: Write> Counted<W> {
    /// Counts what goes to `inner`.
    pub fn new(inner: W) -> Self {
        Counted {
            inner,
            bytes: 0,
            crc: crc32fast::Hasher::new(),
        }
    }

    /// CRC-32 of the bytes written so far.
    pub fn crc32(&self) -> u32 {
        self.crc.clone().finalize()
    }

    /// The writer inside.
    pub fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        self.crc.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
