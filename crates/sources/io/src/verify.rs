//! `dbscope io redo verify`: scans a redo log, checks every block's checksum and sequence, follows
//! the chain of writes back from the newest, and reports the last durable commit. A torn or damaged
//! block is reported with its byte offset, never silently accepted.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

use serde::Serialize;

use super::block::{decode_block, parse_records, BlockHeader, BlockState, LogLayout, BLOCK_HEADER};
use crate::error::Error;

/// One thing wrong in the log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Byte offset in the file.
    pub offset: u64,
    /// What is wrong there.
    pub what: String,
}

/// What verification found in one log.
#[derive(Clone, Debug, Serialize)]
pub struct VerifyReport {
    /// The file.
    pub path: String,
    /// Block size.
    pub block_size: usize,
    /// Groups.
    pub groups: u32,
    /// Blocks per group.
    pub blocks_per_group: u32,
    /// Valid redo blocks.
    pub blocks_valid: u64,
    /// Blocks never written.
    pub blocks_empty: u64,
    /// Damaged blocks (bad magic or checksum).
    pub blocks_bad: u64,
    /// Writes on the durable chain (from the newest back to the oldest still in the log).
    pub chain_writes: u64,
    /// Commit records on the chain.
    pub chain_records: u64,
    /// First commit sequence still in the log (on the chain).
    pub first_commit: Option<u64>,
    /// Last durable commit sequence.
    pub last_commit: Option<u64>,
    /// Highest block sequence on the chain.
    pub last_block_seq: Option<u64>,
    /// Per session, its highest commit number on the chain.
    pub session_last: BTreeMap<u32, u32>,
    /// Everything wrong, by offset.
    pub problems: Vec<Problem>,
}

/// A complete write found in the log.
struct Write {
    pos: u32,
    first_seq: u64,
    count: u16,
    prev_pos: u32,
}

/// Scans the log at `path`.
pub fn verify(path: &Path) -> Result<VerifyReport, Error> {
    let p = path.display().to_string();
    let io = |e| Error::Io {
        path: path.to_owned(),
        source: e,
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let mut head = vec![0u8; 512];
    let n = read_full(&mut &f, &mut head).map_err(io)?;
    let layout = LogLayout::decode_header(&head[..n], path)?;
    let bs = layout.block_size;
    let mut rest_of_header = vec![0u8; bs - 512];
    let rest = read_full(&mut &f, &mut rest_of_header).map_err(io)?;

    let total = layout.groups as usize * layout.blocks_per_group as usize;
    let mut states: Vec<BlockState> = Vec::with_capacity(total);
    let mut problems = Vec::new();
    // A file cut short is reported where it ends, however far into a block that is.
    let ends_at = |at: u64| Problem {
        offset: at,
        what: format!(
            "the file ends here, {} bytes short of the {} the header describes",
            layout.file_bytes() - at,
            layout.file_bytes()
        ),
    };
    let header_read = (n + rest) as u64;
    if header_read < bs as u64 {
        problems.push(ends_at(header_read));
    }
    // Only block states are kept (memory stays small for large logs); the chain's payloads are
    // read again at the end.
    let mut reader = std::io::BufReader::with_capacity(1 << 20, f.try_clone().map_err(io)?);
    let mut buf = vec![0u8; bs];
    for i in 0..total {
        if header_read < bs as u64 {
            break;
        }
        let pos = i as u64 + 1;
        let got = read_full(&mut reader, &mut buf).map_err(io)?;
        if got < bs {
            problems.push(ends_at(pos * bs as u64 + got as u64));
            break;
        }
        let st = decode_block(&buf);
        if let BlockState::Bad(why) = st {
            problems.push(Problem {
                offset: pos * bs as u64,
                what: format!("damaged block: {why}"),
            });
        }
        states.push(st);
    }
    let at = |pos: u32| -> Option<&BlockState> { states.get(pos as usize - 1) };
    let offset = |pos: u32| pos as u64 * bs as u64;
    let group_of = |pos: u32| (pos - 1) / layout.blocks_per_group;

    // Complete writes, and torn ones (a block missing and not overwritten by something newer).
    let mut writes: HashMap<u64, Write> = HashMap::new();
    for (i, st) in states.iter().enumerate() {
        let pos = i as u32 + 1;
        let BlockState::Valid(h) = *st else { continue };
        if h.index != 0 {
            let head = pos.checked_sub(h.index as u32).filter(|&hp| hp >= 1);
            let head_ok = head.is_some_and(|hp| {
                group_of(hp) == group_of(pos)
                    && matches!(at(hp), Some(BlockState::Valid(g)) if g.seq == h.first_seq() && g.count == h.count)
            });
            if !head_ok {
                let newer = head
                    .and_then(at)
                    .is_some_and(|s| newer_than(s, h.first_seq()));
                if !newer {
                    problems.push(Problem {
                        offset: offset(pos),
                        what: format!(
                            "torn write: block seq {} (block {} of {}) has lost the first block of its write",
                            h.seq,
                            h.index + 1,
                            h.count
                        ),
                    });
                }
            }
            continue;
        }
        let mut complete = true;
        for k in 1..h.count as u32 {
            let q = pos + k;
            let ok = group_of(q) == group_of(pos)
                && matches!(at(q), Some(BlockState::Valid(g)) if g.seq == h.seq + k as u64 && g.count == h.count);
            if !ok {
                complete = false;
                let newer = at(q).is_some_and(|s| newer_than(s, h.seq));
                if !newer {
                    problems.push(Problem {
                        offset: offset(q),
                        what: format!(
                            "torn write: block seq {} (block {} of {} of the write at byte {}) is {}",
                            h.seq + k as u64,
                            k + 1,
                            h.count,
                            offset(pos),
                            describe(at(q))
                        ),
                    });
                }
                break;
            }
        }
        if complete {
            writes.insert(
                h.seq,
                Write {
                    pos,
                    first_seq: h.seq,
                    count: h.count,
                    prev_pos: h.prev_pos,
                },
            );
        }
    }

    // The chain: from the newest complete write back through each write's predecessor.
    let mut chain: Vec<&Write> = Vec::new();
    if let Some(newest) = writes.values().max_by_key(|w| w.first_seq) {
        let mut cur = newest;
        chain.push(cur);
        while cur.prev_pos != 0 {
            let prev = match at(cur.prev_pos) {
                Some(BlockState::Valid(h)) if h.index == 0 => writes.get(&h.seq),
                _ => None,
            };
            match prev {
                Some(w) if w.first_seq + w.count as u64 == cur.first_seq => {
                    cur = w;
                    chain.push(cur);
                }
                _ => {
                    if !at(cur.prev_pos).is_some_and(|s| newer_than(s, cur.first_seq)) {
                        problems.push(Problem {
                            offset: offset(cur.prev_pos),
                            what: format!(
                                "missing write: the write before block seq {} should start here, \
                                 but the block is {}",
                                cur.first_seq,
                                describe(at(cur.prev_pos))
                            ),
                        });
                    }
                    break;
                }
            }
        }
    }
    chain.reverse();

    // Records along the chain: commits must follow each other without a gap.
    let mut session_last = BTreeMap::new();
    let mut first_commit = None;
    let mut last_commit: Option<u64> = None;
    let mut chain_records = 0u64;
    for w in &chain {
        let mut raw = vec![0u8; w.count as usize * bs];
        f.read_exact_at(&mut raw, offset(w.pos)).map_err(io)?;
        let mut stream = Vec::with_capacity(raw.len());
        for (k, b) in raw.chunks_exact(bs).enumerate() {
            match decode_block(b) {
                BlockState::Valid(h) if h.seq == w.first_seq + k as u64 => {
                    stream.extend_from_slice(&b[BLOCK_HEADER..BLOCK_HEADER + h.used as usize])
                }
                _ => {
                    return Err(Error::Io {
                        path: path.to_owned(),
                        source: std::io::Error::other("the log changed while it was verified"),
                    })
                }
            }
        }
        match parse_records(&stream) {
            Ok(recs) => {
                for r in recs {
                    if let Some(l) = last_commit {
                        if r.commit != l + 1 {
                            problems.push(Problem {
                                offset: offset(w.pos),
                                what: format!(
                                    "commit {} follows commit {l}: commits {}..{} are missing",
                                    r.commit,
                                    l + 1,
                                    r.commit.saturating_sub(1).max(l + 1)
                                ),
                            });
                        }
                    }
                    first_commit.get_or_insert(r.commit);
                    last_commit = Some(r.commit);
                    chain_records += 1;
                    let e = session_last.entry(r.session).or_insert(0u32);
                    *e = (*e).max(r.session_commit);
                }
            }
            Err((at_byte, why)) => {
                let payload = bs - BLOCK_HEADER;
                problems.push(Problem {
                    offset: offset(w.pos + (at_byte / payload) as u32)
                        + (BLOCK_HEADER + at_byte % payload) as u64,
                    what: why,
                });
            }
        }
    }
    problems.sort_by_key(|p| p.offset);
    let count = |f: fn(&BlockState) -> bool| states.iter().filter(|s| f(s)).count() as u64;
    Ok(VerifyReport {
        path: p,
        block_size: bs,
        groups: layout.groups,
        blocks_per_group: layout.blocks_per_group,
        blocks_valid: count(|s| matches!(s, BlockState::Valid(_))),
        blocks_empty: count(|s| matches!(s, BlockState::Empty)),
        blocks_bad: count(|s| matches!(s, BlockState::Bad(_))),
        chain_writes: chain.len() as u64,
        chain_records,
        first_commit,
        last_commit,
        last_block_seq: chain.last().map(|w| w.first_seq + w.count as u64 - 1),
        session_last,
        problems,
    })
}

fn newer_than(s: &BlockState, seq: u64) -> bool {
    matches!(s, BlockState::Valid(h) if h.seq > seq)
}

fn describe(s: Option<&BlockState>) -> String {
    match s {
        None => "past the end of the file".into(),
        Some(BlockState::Empty) => "never written (zeros)".into(),
        Some(BlockState::Bad(why)) => format!("damaged ({why})"),
        Some(BlockState::Valid(BlockHeader { seq, .. })) => format!("an older block (seq {seq})"),
    }
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Renders reports as text: one paragraph per file, then the durable point across all of them.
pub fn render_text(reports: &[VerifyReport]) -> String {
    let mut out = String::new();
    for r in reports {
        out.push_str(&format!(
            "{}: dbscope redo log, {}-byte blocks, {} groups of {} blocks\n",
            r.path, r.block_size, r.groups, r.blocks_per_group
        ));
        out.push_str(&format!(
            "  blocks: {} valid, {} never written, {} damaged\n",
            r.blocks_valid, r.blocks_empty, r.blocks_bad
        ));
        match (r.first_commit, r.last_commit) {
            (Some(a), Some(b)) => out.push_str(&format!(
                "  durable chain: {} writes up to block seq {}, commits {a}..{b} ({} records, {} sessions)\n",
                r.chain_writes,
                r.last_block_seq.unwrap_or(0),
                r.chain_records,
                r.session_last.len()
            )),
            _ => out.push_str("  durable chain: no commit records\n"),
        }
        if r.problems.is_empty() {
            out.push_str("  OK: every block checks out\n");
        }
        for p in &r.problems {
            out.push_str(&format!("  PROBLEM at byte {}: {}\n", p.offset, p.what));
        }
    }
    let last = reports.iter().filter_map(|r| r.last_commit).max();
    match last {
        Some(c) => out.push_str(&format!("last durable commit: {c}\n")),
        None => out.push_str("last durable commit: none\n"),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::block::{pack_blocks, Record, WriteHeader};
    use super::*;

    /// Writes a small log by hand: `writes` of `(records, commits from)` into group 0.
    fn write_log(path: &Path, writes: &[(usize, u64)]) -> Vec<u64> {
        let layout = LogLayout {
            block_size: 512,
            groups: 2,
            blocks_per_group: 64,
        };
        let mut file = vec![0u8; layout.file_bytes() as usize];
        file[..512].copy_from_slice(&layout.encode_header());
        let (mut pos, mut seq, mut prev) = (1u32, 1u64, 0u32);
        let mut offsets = Vec::new();
        for &(n, from) in writes {
            let mut stream = Vec::new();
            for k in 0..n as u64 {
                Record {
                    commit: from + k,
                    session: 0,
                    session_commit: (from + k) as u32,
                    bytes: 300,
                }
                .encode(&mut stream);
            }
            let nb = super::super::block::blocks_for(stream.len(), 512);
            let at = pos as usize * 512;
            pack_blocks(
                &stream,
                512,
                WriteHeader {
                    first_seq: seq,
                    prev_pos: prev,
                    flags: 0,
                },
                &mut file[at..at + nb * 512],
            );
            offsets.push(at as u64);
            prev = pos;
            pos += nb as u32;
            seq += nb as u64;
        }
        std::fs::write(path, file).unwrap();
        offsets
    }

    #[test]
    fn a_clean_log_verifies() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.log");
        write_log(&p, &[(1, 1), (3, 2), (2, 5)]);
        let r = verify(&p).unwrap();
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert_eq!((r.first_commit, r.last_commit), (Some(1), Some(6)));
        assert_eq!(r.chain_writes, 3);
        assert!(render_text(&[r]).contains("last durable commit: 6"));
    }

    #[test]
    fn torn_and_damaged_blocks_are_reported_with_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.log");
        let offs = write_log(&p, &[(1, 1), (3, 2), (2, 5)]);
        let mut bytes = std::fs::read(&p).unwrap();
        // Tear the last write: its second block goes back to zeros.
        let second = offs[2] as usize + 512;
        bytes[second..second + 512].fill(0);
        // Damage one byte of the first write.
        bytes[offs[0] as usize + 100] ^= 0x55;
        std::fs::write(&p, &bytes).unwrap();
        let r = verify(&p).unwrap();
        let at: Vec<u64> = r.problems.iter().map(|p| p.offset).collect();
        assert!(at.contains(&(second as u64)), "{:?}", r.problems);
        assert!(at.contains(&offs[0]), "{:?}", r.problems);
        // The torn write is not durable; the chain ends at the write before it.
        assert_eq!(r.last_commit, Some(4));
    }

    /// Issue 27's standing property for the redo log: cut at every offset of its last write and
    /// at random offsets before (and at a few after, in the blocks never written), the verifier
    /// fails naming the file, or reports the place the file ends as a problem (so the log is not
    /// called clean, exit 1) and, as durable, exactly the commits of the writes complete before
    /// the cut — never one of a write the cut tore.
    #[test]
    fn cut_at_every_offset_of_the_last_write_and_at_random_offsets_before() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.log");
        let writes = [(1, 1), (3, 2), (2, 5), (7, 7), (4, 14)];
        let offs = write_log(&p, &writes);
        let bytes = std::fs::read(&p).unwrap();
        let whole = verify(&p).unwrap();
        assert!(whole.problems.is_empty(), "{:?}", whole.problems);
        assert_eq!(whole.last_commit, Some(17));
        // Where each write ends, and its last commit (block seq s is block s of the file).
        let last_end = (whole.last_block_seq.unwrap() + 1) * 512;
        let ends: Vec<(u64, u64)> = writes
            .iter()
            .enumerate()
            .map(|(i, &(n, from))| {
                let end = offs.get(i + 1).copied().unwrap_or(last_end);
                (end, from + n as u64 - 1)
            })
            .collect();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut random = |below: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % below
        };
        let before: Vec<u64> = (0..300).map(|_| random(*offs.last().unwrap())).collect();
        let after: Vec<u64> = (0..20)
            .map(|_| last_end + random(bytes.len() as u64 - last_end))
            .collect();
        let cut_file = dir.path().join("cut.log");
        for cut in before
            .into_iter()
            .chain(*offs.last().unwrap()..=last_end)
            .chain(after)
        {
            std::fs::write(&cut_file, &bytes[..cut as usize]).unwrap();
            let durable = ends.iter().rev().find(|(e, _)| *e <= cut).map(|&(_, c)| c);
            match verify(&cut_file) {
                Err(e) => {
                    let e = e.to_string();
                    assert!(
                        e.contains("cut.log") && e.contains("byte"),
                        "cut at {cut}: {e}"
                    );
                    assert!(cut < 512, "cut at {cut}: only a cut header is refused: {e}");
                }
                Ok(r) => {
                    assert!(
                        r.problems
                            .iter()
                            .any(|p| p.offset == cut && p.what.contains("the file ends here")),
                        "cut at {cut}: {:?}",
                        r.problems
                    );
                    assert_eq!(r.last_commit, durable, "cut at {cut}: {:?}", r.problems);
                    assert_eq!(r.first_commit, durable.map(|_| 1), "cut at {cut}");
                    assert_eq!(r.chain_records, durable.unwrap_or(0), "cut at {cut}");
                }
            }
        }
    }

    #[test]
    fn a_file_that_is_not_a_log_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("notes.txt");
        std::fs::write(&p, "hello").unwrap();
        let e = verify(&p).unwrap_err().to_string();
        assert!(
            e.contains("notes.txt") && e.contains("not a dbscope redo log"),
            "{e}"
        );
    }
}
