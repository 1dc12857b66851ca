//! The files of `transfer`: what is written is counted and CRC-32'd on its way to the file
//! (compressed, when `--compress` says so), and read back the same way.

use std::fs::File;
use std::io::{self, BufReader, Read, Write};

use serde::{Deserialize, Serialize};

/// `--compress`: of tbl/csv files as a whole (`part-00000.tbl.gz`), of Parquet's pages inside.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compress {
    /// None.
    #[default]
    None,
    /// gzip (flate2, level 6); Parquet's GZIP codec.
    Gzip,
    /// Zstandard (level 3); Parquet's ZSTD codec.
    Zstd,
    /// Parquet's SNAPPY codec (Parquet only).
    Snappy,
}

impl Compress {
    /// The file name suffix of a tbl/csv file so compressed (`.gz`, `.zst`, or nothing).
    pub fn suffix(self) -> &'static str {
        match self {
            Compress::Gzip => ".gz",
            Compress::Zstd => ".zst",
            Compress::None | Compress::Snappy => "",
        }
    }

    /// The codec of a tbl/csv file, by its name.
    pub fn of_name(name: &str) -> Compress {
        if name.ends_with(".gz") {
            Compress::Gzip
        } else if name.ends_with(".zst") {
            Compress::Zstd
        } else {
            Compress::None
        }
    }

    /// Parquet's codec for this choice.
    pub fn parquet(self) -> parquet::basic::Compression {
        use parquet::basic::{Compression, GzipLevel, ZstdLevel};
        match self {
            Compress::None => Compression::UNCOMPRESSED,
            Compress::Snappy => Compression::SNAPPY,
            Compress::Gzip => Compression::GZIP(GzipLevel::default()),
            Compress::Zstd => Compression::ZSTD(ZstdLevel::default()),
        }
    }
}

/// A tbl/csv file being written: the encoder over the counted file.
pub enum Encoder<W: Write> {
    /// Uncompressed.
    Plain(Counted<W>),
    /// gzip.
    Gzip(flate2::write::GzEncoder<Counted<W>>),
    /// zstd.
    Zstd(zstd::Encoder<'static, Counted<W>>),
}

impl<W: Write> Encoder<W> {
    /// An encoder for `c` (`Snappy` is refused earlier: it is Parquet's).
    pub fn new(out: Counted<W>, c: Compress) -> io::Result<Self> {
        Ok(match c {
            Compress::None | Compress::Snappy => Encoder::Plain(out),
            Compress::Gzip => Encoder::Gzip(flate2::write::GzEncoder::new(
                out,
                flate2::Compression::default(),
            )),
            Compress::Zstd => Encoder::Zstd(zstd::Encoder::new(out, 3)?),
        })
    }

    /// Writes the codec's end; returns the counted file.
    pub fn finish(self) -> io::Result<Counted<W>> {
        match self {
            Encoder::Plain(w) => Ok(w),
            Encoder::Gzip(e) => e.finish(),
            Encoder::Zstd(e) => e.finish(),
        }
    }
}

impl<W: Write> Write for Encoder<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Encoder::Plain(w) => w.write(buf),
            Encoder::Gzip(e) => e.write(buf),
            Encoder::Zstd(e) => e.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Encoder::Plain(w) => w.flush(),
            Encoder::Gzip(e) => e.flush(),
            Encoder::Zstd(e) => e.flush(),
        }
    }
}

/// A reader that counts the file bytes it passes on and keeps their CRC-32.
pub struct CountedReader<R> {
    inner: R,
    /// Bytes read.
    pub bytes: u64,
    crc: crc32fast::Hasher,
}

impl<R: Read> Read for CountedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        self.crc.update(&buf[..n]);
        Ok(n)
    }
}

/// A tbl/csv file being read: the decoder over the counted file. (One per file, so the size of
/// its largest variant does not matter.)
#[allow(clippy::large_enum_variant)]
pub enum Decoder {
    /// Uncompressed.
    Plain(CountedReader<File>),
    /// gzip (every member).
    Gzip(flate2::read::MultiGzDecoder<CountedReader<File>>),
    /// zstd.
    Zstd(zstd::Decoder<'static, BufReader<CountedReader<File>>>),
}

impl Decoder {
    /// Reads `f`, decompressed as `c` says.
    pub fn new(f: File, c: Compress) -> io::Result<Self> {
        let r = CountedReader {
            inner: f,
            bytes: 0,
            crc: crc32fast::Hasher::new(),
        };
        Ok(match c {
            Compress::None | Compress::Snappy => Decoder::Plain(r),
            Compress::Gzip => Decoder::Gzip(flate2::read::MultiGzDecoder::new(r)),
            Compress::Zstd => Decoder::Zstd(zstd::Decoder::new(r)?),
        })
    }

    /// After the decoded end: reads whatever the codec left of the file, and returns the file's
    /// bytes and CRC-32.
    pub fn file_bytes_and_crc(&mut self) -> io::Result<(u64, u32)> {
        let r: &mut CountedReader<File> = match self {
            Decoder::Plain(r) => r,
            Decoder::Gzip(d) => d.get_mut(),
            Decoder::Zstd(d) => {
                io::copy(d.get_mut(), &mut io::sink())?;
                d.get_mut().get_mut()
            }
        };
        io::copy(r, &mut io::sink())?;
        Ok((r.bytes, r.crc.clone().finalize()))
    }
}

impl Read for Decoder {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Decoder::Plain(r) => r.read(buf),
            Decoder::Gzip(d) => d.read(buf),
            Decoder::Zstd(d) => d.read(buf),
        }
    }
}

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
