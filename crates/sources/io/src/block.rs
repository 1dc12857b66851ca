//! The redo log's on-disk format: a file header, checksummed redo blocks, and commit records packed
//! into the blocks of one write.
//!
//! A log file is one header block followed by `groups × blocks_per_group` redo blocks, all
//! `block_size` bytes. The header block holds [`FILE_MAGIC`], the format version, the block size,
//! the group count and the blocks per group (little-endian u32s), then a CRC-32 of those bytes.
//!
//! Every redo block starts with a 32-byte header (little-endian):
//!
//! | bytes | field |
//! |---|---|
//! | 0..4 | magic `DSRB` |
//! | 4..12 | block sequence number (from 1, never reused, counts every block written) |
//! | 12..14 | index of this block in its write |
//! | 14..16 | number of blocks in its write |
//! | 16..18 | payload bytes used in this block |
//! | 18..20 | flags (bit 0: first write after a log switch) |
//! | 20..24 | block index (in the file) of the previous write's first block, 0 for none |
//! | 24..28 | CRC-32 of the whole block with these four bytes taken as zero |
//! | 28..32 | reserved (zero) |
//!
//! One write packs commit records back to back into the payloads of its blocks (a record may cross
//! a block boundary, never a write boundary) and pads the tail block with zeros. A record is a
//! 24-byte header — commit sequence (u64, from 1), session (u32), the session's commit number
//! (u32, from 1), body length (u32), reserved (u32) — and a body whose byte `i` is
//! `(commit + i) mod 256`, so verification can check it.

use std::path::Path;

use crate::error::Error;

/// Magic at the start of a log file.
pub const FILE_MAGIC: &[u8; 8] = b"DSREDO01";
/// Format version written in the file header.
pub const FILE_VERSION: u32 = 1;
/// Magic at the start of every redo block.
pub const BLOCK_MAGIC: &[u8; 4] = b"DSRB";
/// Bytes of the redo block header.
pub const BLOCK_HEADER: usize = 32;
/// Bytes of a record header.
pub const RECORD_HEADER: usize = 24;
/// Block flag: the first write after a log switch.
pub const FLAG_SWITCH: u16 = 1;
/// Block sizes a log may use.
pub const BLOCK_SIZES: [usize; 3] = [512, 1024, 4096];

/// The layout stored in a log's header block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogLayout {
    /// Bytes per block (header block and redo blocks alike).
    pub block_size: usize,
    /// Number of log groups (regions used in turn).
    pub groups: u32,
    /// Redo blocks per group.
    pub blocks_per_group: u32,
}

impl LogLayout {
    /// Total file size in bytes: the header block plus every group.
    pub fn file_bytes(&self) -> u64 {
        self.block_size as u64 * (1 + self.groups as u64 * self.blocks_per_group as u64)
    }

    /// File block index of the first block of group `g`.
    pub fn group_start(&self, g: u32) -> u32 {
        1 + g * self.blocks_per_group
    }

    /// The header block, `block_size` bytes.
    pub fn encode_header(&self) -> Vec<u8> {
        let mut b = vec![0u8; self.block_size];
        b[0..8].copy_from_slice(FILE_MAGIC);
        b[8..12].copy_from_slice(&FILE_VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&(self.block_size as u32).to_le_bytes());
        b[16..20].copy_from_slice(&self.groups.to_le_bytes());
        b[20..24].copy_from_slice(&self.blocks_per_group.to_le_bytes());
        let crc = crc32fast::hash(&b[0..24]);
        b[24..28].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Reads a header from the first bytes of the file `path`; the error says what is wrong.
    pub fn decode_header(b: &[u8], path: &Path) -> Result<LogLayout, Error> {
        let bad = |msg: String| Error::NotALog {
            path: path.to_owned(),
            msg,
        };
        if b.len() < 28 || &b[0..8] != FILE_MAGIC {
            return Err(bad(
                "no DSREDO01 header at byte 0: not a dbscope redo log".into()
            ));
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        if crc32fast::hash(&b[0..24]) != u32_at(24) {
            return Err(bad("the log header at byte 0 fails its checksum".into()));
        }
        let version = u32_at(8);
        if version != FILE_VERSION {
            return Err(bad(format!(
                "log format version {version}, this dbscope reads version {FILE_VERSION}"
            )));
        }
        let layout = LogLayout {
            block_size: u32_at(12) as usize,
            groups: u32_at(16),
            blocks_per_group: u32_at(20),
        };
        if !BLOCK_SIZES.contains(&layout.block_size) || layout.groups < 2 {
            return Err(bad(format!(
                "the log header at byte 0 is implausible (block size {}, {} groups)",
                layout.block_size, layout.groups
            )));
        }
        Ok(layout)
    }
}

/// One commit record as the log writer packs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Commit sequence, from 1, in the order commits were queued.
    pub commit: u64,
    /// Committing session.
    pub session: u32,
    /// The session's own commit number, from 1.
    pub session_commit: u32,
    /// Total record size in bytes (header included).
    pub bytes: u32,
}

impl Record {
    /// The 24-byte record header.
    fn header(&self) -> [u8; RECORD_HEADER] {
        let body = (self.bytes as usize).saturating_sub(RECORD_HEADER);
        let mut h = [0u8; RECORD_HEADER];
        h[0..8].copy_from_slice(&self.commit.to_le_bytes());
        h[8..12].copy_from_slice(&self.session.to_le_bytes());
        h[12..16].copy_from_slice(&self.session_commit.to_le_bytes());
        h[16..20].copy_from_slice(&(body as u32).to_le_bytes());
        h
    }

    /// Appends the record (header and checkable body) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let at = out.len();
        out.resize(at + (self.bytes as usize).max(RECORD_HEADER), 0);
        self.write_at(0, &mut out[at..]);
    }

    /// Fills `dst` with the record's encoding from byte `from` on (`from + dst.len()` at most
    /// the record's size).
    fn write_at(&self, from: usize, dst: &mut [u8]) {
        let mut dst = dst;
        let mut at = from;
        if at < RECORD_HEADER {
            let n = (RECORD_HEADER - at).min(dst.len());
            dst[..n].copy_from_slice(&self.header()[at..at + n]);
            dst = &mut dst[n..];
            at += n;
        }
        // The body repeats every 256 bytes, so it is copied from a table rather than built byte
        // by byte (this runs once per commit on the hot path).
        let mut phase = (self.commit as usize + (at - RECORD_HEADER)) % 256;
        while !dst.is_empty() {
            let n = dst.len().min(256);
            dst[..n].copy_from_slice(&BODY_PATTERN[phase..phase + n]);
            dst = &mut dst[n..];
            phase = (phase + n) % 256;
        }
    }
}

/// Bytes `i mod 256` for `i` in `0..512`: any 256-byte window is a stretch of record body.
static BODY_PATTERN: [u8; 512] = {
    let mut t = [0u8; 512];
    let mut i = 0;
    while i < 512 {
        t[i] = i as u8;
        i += 1;
    }
    t
};

/// Memory aligned for O_DIRECT (the start address is a multiple of `align`), built without unsafe
/// code by over-allocating and starting at the first aligned byte.
#[derive(Debug)]
pub struct AlignedBuf {
    raw: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes starting on an `align`-byte boundary (`align` a power of two).
    pub fn zeroed(len: usize, align: usize) -> Self {
        let raw = vec![0u8; len + align];
        let addr = raw.as_ptr() as usize;
        let start = (align - addr % align) % align;
        AlignedBuf { raw, start, len }
    }

    /// The aligned bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.raw[self.start..self.start + self.len]
    }

    /// The aligned bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.raw[self.start..self.start + self.len]
    }
}

/// What a write carries besides its records: where it goes and how it links to the previous one.
#[derive(Clone, Copy, Debug)]
pub struct WriteHeader {
    /// Sequence number of the write's first block.
    pub first_seq: u64,
    /// File block index of the previous write's first block (0: none).
    pub prev_pos: u32,
    /// Block flags ([`FLAG_SWITCH`]).
    pub flags: u16,
}

/// Number of blocks needed for `stream_bytes` bytes of records.
pub fn blocks_for(stream_bytes: usize, block_size: usize) -> usize {
    stream_bytes.div_ceil(block_size - BLOCK_HEADER).max(1)
}

/// Lays a record stream out as complete redo blocks in `out` (which must hold exactly
/// [`blocks_for`] blocks), tail block padded with zeros.
pub fn pack_blocks(stream: &[u8], block_size: usize, h: WriteHeader, out: &mut [u8]) {
    debug_assert_eq!(out.len() / block_size, blocks_for(stream.len(), block_size));
    pack_with(stream.len(), block_size, h, out, |from, dst| {
        dst.copy_from_slice(&stream[from..from + dst.len()])
    });
}

/// Lays one record out as complete redo blocks in `out` (which must hold exactly [`blocks_for`]
/// its size): the same bytes as [`Record::encode`] then [`pack_blocks`], without the intermediate
/// copy (a write of one record is the hot path without group commit).
pub fn pack_record(r: &Record, block_size: usize, h: WriteHeader, out: &mut [u8]) {
    let len = (r.bytes as usize).max(RECORD_HEADER);
    debug_assert_eq!(out.len() / block_size, blocks_for(len, block_size));
    pack_with(len, block_size, h, out, |from, dst| r.write_at(from, dst));
}

/// Writes the blocks of a write whose record stream is `len` bytes; `fill(from, dst)` fills a
/// block's payload with the stream's bytes from `from` on.
fn pack_with(
    len: usize,
    block_size: usize,
    h: WriteHeader,
    out: &mut [u8],
    mut fill: impl FnMut(usize, &mut [u8]),
) {
    let payload = block_size - BLOCK_HEADER;
    let n = out.len() / block_size;
    for (i, block) in out.chunks_exact_mut(block_size).enumerate() {
        let from = (i * payload).min(len);
        let to = ((i + 1) * payload).min(len);
        block[0..4].copy_from_slice(BLOCK_MAGIC);
        block[4..12].copy_from_slice(&(h.first_seq + i as u64).to_le_bytes());
        block[12..14].copy_from_slice(&(i as u16).to_le_bytes());
        block[14..16].copy_from_slice(&(n as u16).to_le_bytes());
        block[16..18].copy_from_slice(&((to - from) as u16).to_le_bytes());
        block[18..20].copy_from_slice(&h.flags.to_le_bytes());
        block[20..24].copy_from_slice(&h.prev_pos.to_le_bytes());
        block[28..32].fill(0);
        fill(from, &mut block[BLOCK_HEADER..BLOCK_HEADER + (to - from)]);
        // Only the tail block has padding; zero it here rather than clearing every block first.
        block[BLOCK_HEADER + (to - from)..].fill(0);
        let crc = block_crc(block);
        block[24..28].copy_from_slice(&crc.to_le_bytes());
    }
}

/// CRC-32 of a block with its checksum field taken as zero.
pub fn block_crc(block: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&block[0..24]);
    h.update(&[0; 4]);
    h.update(&block[28..]);
    h.finalize()
}

/// A decoded redo block header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    /// Block sequence number.
    pub seq: u64,
    /// Index in its write.
    pub index: u16,
    /// Blocks in its write.
    pub count: u16,
    /// Payload bytes used.
    pub used: u16,
    /// Flags.
    pub flags: u16,
    /// File block index of the previous write's first block.
    pub prev_pos: u32,
}

impl BlockHeader {
    /// Sequence number of the first block of this block's write.
    pub fn first_seq(&self) -> u64 {
        self.seq - self.index as u64
    }
}

/// What one block on disk holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockState {
    /// Never written (all zeros, as preallocated).
    Empty,
    /// A valid redo block.
    Valid(BlockHeader),
    /// Anything else: the reason.
    Bad(&'static str),
}

/// Decodes and checks one block.
pub fn decode_block(block: &[u8]) -> BlockState {
    if block.iter().all(|&b| b == 0) {
        return BlockState::Empty;
    }
    if &block[0..4] != BLOCK_MAGIC {
        return BlockState::Bad("no redo block magic");
    }
    let stored = u32::from_le_bytes(block[24..28].try_into().expect("4 bytes"));
    if block_crc(block) != stored {
        return BlockState::Bad("checksum mismatch");
    }
    let u16_at = |i: usize| u16::from_le_bytes(block[i..i + 2].try_into().expect("2 bytes"));
    let h = BlockHeader {
        seq: u64::from_le_bytes(block[4..12].try_into().expect("8 bytes")),
        index: u16_at(12),
        count: u16_at(14),
        used: u16_at(16),
        flags: u16_at(18),
        prev_pos: u32::from_le_bytes(block[20..24].try_into().expect("4 bytes")),
    };
    if h.count == 0
        || h.index >= h.count
        || h.used as usize > block.len() - BLOCK_HEADER
        || h.seq < h.index as u64 + 1
    {
        return BlockState::Bad("inconsistent block header");
    }
    BlockState::Valid(h)
}

/// Parses the record stream of one write. Returns the records, or the byte offset (in the stream)
/// and reason of the first malformed one.
pub fn parse_records(stream: &[u8]) -> Result<Vec<Record>, (usize, String)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + RECORD_HEADER <= stream.len() {
        let h = &stream[at..at + RECORD_HEADER];
        let commit = u64::from_le_bytes(h[0..8].try_into().expect("8 bytes"));
        let session = u32::from_le_bytes(h[8..12].try_into().expect("4 bytes"));
        let session_commit = u32::from_le_bytes(h[12..16].try_into().expect("4 bytes"));
        let body = u32::from_le_bytes(h[16..20].try_into().expect("4 bytes")) as usize;
        if commit == 0 || session_commit == 0 {
            return Err((at, "record header with commit number 0".into()));
        }
        let end = at + RECORD_HEADER + body;
        if end > stream.len() {
            return Err((
                at,
                format!("record of commit {commit} runs past the end of its write"),
            ));
        }
        let c = commit as u8;
        let body_ok = stream[at + RECORD_HEADER..end]
            .iter()
            .enumerate()
            .all(|(i, &b)| b == c.wrapping_add(i as u8));
        if !body_ok {
            return Err((at, format!("record of commit {commit} has a damaged body")));
        }
        out.push(Record {
            commit,
            session,
            session_commit,
            bytes: (RECORD_HEADER + body) as u32,
        });
        at = end;
    }
    if at != stream.len() {
        return Err((at, "a partial record header at the end of a write".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_across_blocks() {
        let recs = [
            Record {
                commit: 1,
                session: 0,
                session_commit: 1,
                bytes: 700,
            },
            Record {
                commit: 2,
                session: 3,
                session_commit: 1,
                bytes: 200,
            },
        ];
        let mut stream = Vec::new();
        for r in &recs {
            r.encode(&mut stream);
        }
        assert_eq!(stream.len(), 900);
        // The table-copied body is byte i = (commit + i) mod 256, whatever the phase and length.
        for (commit, bytes) in [(250u64, 1000u32), (256, 24), (511, 281)] {
            let mut one = Vec::new();
            Record {
                commit,
                session: 0,
                session_commit: 1,
                bytes,
            }
            .encode(&mut one);
            assert_eq!(one.len(), bytes as usize);
            let body = &one[RECORD_HEADER..];
            assert!(body
                .iter()
                .enumerate()
                .all(|(i, &b)| b == (commit as u8).wrapping_add(i as u8)));
        }
        let n = blocks_for(stream.len(), 512);
        assert_eq!(n, 2, "900 bytes need two 480-byte payloads");
        let mut out = vec![0u8; n * 512];
        let h = WriteHeader {
            first_seq: 10,
            prev_pos: 3,
            flags: FLAG_SWITCH,
        };
        pack_blocks(&stream, 512, h, &mut out);
        let mut back = Vec::new();
        for (i, b) in out.chunks(512).enumerate() {
            let BlockState::Valid(bh) = decode_block(b) else {
                panic!("block {i} invalid")
            };
            assert_eq!(
                (bh.seq, bh.index, bh.count, bh.prev_pos),
                (10 + i as u64, i as u16, 2, 3)
            );
            back.extend_from_slice(&b[BLOCK_HEADER..BLOCK_HEADER + bh.used as usize]);
        }
        assert_eq!(parse_records(&back).unwrap(), recs);
    }

    #[test]
    fn packing_one_record_directly_matches_the_stream_path() {
        for (bs, commit, bytes) in [
            (512, 1u64, 24u32),
            (512, 300, 481),
            (1024, 255, 5000),
            (4096, 7, 4064),
        ] {
            let r = Record {
                commit,
                session: 2,
                session_commit: 9,
                bytes,
            };
            let mut stream = Vec::new();
            r.encode(&mut stream);
            let n = blocks_for(stream.len(), bs);
            let h = WriteHeader {
                first_seq: 40,
                prev_pos: 6,
                flags: 0,
            };
            let mut a = vec![0xEEu8; n * bs];
            let mut b = vec![0x11u8; n * bs];
            pack_blocks(&stream, bs, h, &mut a);
            pack_record(&r, bs, h, &mut b);
            assert!(a == b, "block size {bs}, record of {bytes} bytes");
        }
    }

    #[test]
    fn damage_is_detected() {
        let mut stream = Vec::new();
        Record {
            commit: 5,
            session: 1,
            session_commit: 2,
            bytes: 300,
        }
        .encode(&mut stream);
        let mut out = vec![0u8; 4096];
        let h = WriteHeader {
            first_seq: 1,
            prev_pos: 0,
            flags: 0,
        };
        pack_blocks(&stream, 4096, h, &mut out);
        assert!(matches!(decode_block(&out), BlockState::Valid(_)));
        out[100] ^= 1;
        assert_eq!(decode_block(&out), BlockState::Bad("checksum mismatch"));
        assert_eq!(decode_block(&[0u8; 512]), BlockState::Empty);
        let mut junk = vec![7u8; 512];
        junk[0] = b'X';
        assert_eq!(decode_block(&junk), BlockState::Bad("no redo block magic"));
        stream[RECORD_HEADER + 5] ^= 0xff;
        assert!(parse_records(&stream)
            .unwrap_err()
            .1
            .contains("damaged body"));
    }

    #[test]
    fn header_round_trip_and_refusals() {
        let l = LogLayout {
            block_size: 1024,
            groups: 3,
            blocks_per_group: 100,
        };
        let b = l.encode_header();
        assert_eq!(LogLayout::decode_header(&b, Path::new("t.log")).unwrap(), l);
        assert_eq!(l.file_bytes(), 1024 * 301);
        assert_eq!(l.group_start(2), 201);
        assert!(
            LogLayout::decode_header(b"hello world, not a log at all", Path::new("t.log"))
                .unwrap_err()
                .to_string()
                .contains("not a dbscope redo log")
        );
    }

    #[test]
    fn aligned_buffers_are_aligned() {
        for align in [512, 4096] {
            let mut b = AlignedBuf::zeroed(8192, align);
            assert_eq!(b.as_slice().as_ptr() as usize % align, 0);
            assert_eq!(b.as_mut_slice().len(), 8192);
        }
    }
}
