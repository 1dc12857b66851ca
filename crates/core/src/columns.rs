//! The packed events block (format 2.0): a block's events stored column by column, each column as
//! the smallest bit width that holds its values above their minimum.
//!
//! A 40-byte event mostly repeats itself: the session and name take a few bits in a block, the
//! outcome, flags and rows are usually the same for all, consecutive start times are close, and a
//! duration needs 20–30 bits. Packed, an event of an import or a lookup run takes about 6 bytes
//! instead of 40, so a run file is a sixth of the size and reading or writing it moves a sixth of
//! the bytes (`bench/compare-vs-R`: the two 4 M-event imports and the compare that reads both).
//!
//! Payload: eight columns in the order of [`Event`]'s fields — session, name, start, duration,
//! intended start, outcome, flags, rows. Each column is a byte `width` (0–56 or 64) and a u64
//! `base` (little-endian); the start and intended-start columns then have a u64 `origin`; then
//! `ceil(count × width / 8)` bytes: value `i` is `base` plus the `width` bits starting at bit
//! `i × width` (least significant bit first). Width 0 means every value is `base`. The start and
//! intended-start columns hold each value's difference from the one before (the first event's
//! from `origin`, which the writer sets to the first event's own value), zigzag-encoded so a step
//! back stays small; "no intended start" (u64::MAX) is an ordinary value there.

use crate::event::Event;

const COLUMNS: usize = 8;
/// Widths above this are stored as 64: a value then always lies within one unaligned 8-byte load
/// (at most 7 bits of shift + 56 bits).
const MAX_PACKED: u32 = 56;
const NO_INTENDED: u64 = u64::MAX;

fn zigzag(d: u64) -> u64 {
    (d << 1) ^ ((d as i64 >> 63) as u64)
}

fn unzigzag(z: u64) -> u64 {
    (z >> 1) ^ (z & 1).wrapping_neg()
}

const START: usize = 2;
const DURATION: usize = 3;
const INTENDED: usize = 4;

/// The eight column values of one event (start and intended start as zigzagged steps from the
/// previous event's, kept in `prev`).
#[inline(always)]
fn row(e: &Event, prev: &mut (u64, u64)) -> [u64; COLUMNS] {
    let intended = e.intended_start_ns.unwrap_or(NO_INTENDED);
    let r = [
        u64::from(e.session),
        u64::from(e.name),
        zigzag(e.start_ns.wrapping_sub(prev.0)),
        e.duration_ns,
        zigzag(intended.wrapping_sub(prev.1)),
        u64::from(e.outcome),
        u64::from(e.flags),
        u64::from(e.rows),
    ];
    *prev = (e.start_ns, intended);
    r
}

/// Appends `values` less `base`, `width` bits each, least significant bit first. Below 57 bits
/// without a branch a value: the pending bits (fewer than 8) and the new value always fit in 64,
/// which are stored whole at the current byte (the buffer has 8 bytes of slack) before the
/// completed bytes are shifted out.
fn pack(values: impl Iterator<Item = u64>, count: usize, base: u64, width: u32, out: &mut Vec<u8>) {
    if width == 64 {
        for v in values {
            out.extend_from_slice(&(v - base).to_le_bytes());
        }
        return;
    }
    let at = out.len();
    let n = packed_len(count, width);
    out.resize(at + n + 8, 0);
    let buf = &mut out[at..];
    let (mut acc, mut bits, mut byte) = (0u64, 0u32, 0usize);
    for v in values {
        acc |= (v - base) << bits;
        bits += width;
        let slot: &mut [u8; 8] = (&mut buf[byte..byte + 8]).try_into().expect("8 bytes");
        *slot = acc.to_le_bytes();
        let done = bits >> 3;
        byte += done as usize;
        // done ≤ 7 (bits ≤ 7 + 56), so the shift stays below 64.
        acc >>= done * 8;
        bits &= 7;
    }
    out.truncate(at + n);
}

fn width_of(range: u64) -> u32 {
    match 64 - range.leading_zeros() {
        w if w > MAX_PACKED => 64,
        w => w,
    }
}

fn packed_len(count: usize, width: u32) -> usize {
    (count * width as usize).div_ceil(8)
}

fn header_len(c: usize) -> usize {
    if c == START || c == INTENDED {
        17
    } else {
        9
    }
}

/// Appends the packed payload of `events` to `out` when it is shorter than the 40-byte encoding
/// (it nearly always is; a block of wildly varying values is not), and says whether it did.
/// `scratch` is a buffer the caller keeps between blocks.
///
/// One pass over the events finds the ranges of the start steps and durations, copying them into
/// `scratch` to be packed from there, and whether any other field differs from the first
/// event's; only then (several sessions or names, errors, open-loop pacing) are the events read
/// again, a pass for each such column. (A block comes from another thread's cache, and an event
/// is 48 bytes in memory: reading the events once is what makes packing cheap.)
pub(crate) fn encode(events: &[Event], out: &mut Vec<u8>, scratch: &mut Vec<u64>) -> bool {
    let n = events.len();
    let Some(f) = events.first() else {
        return false;
    };
    let origin = (f.start_ns, f.intended_start_ns.unwrap_or(NO_INTENDED));
    scratch.clear();
    scratch.resize(2 * n, 0);
    let (steps, durations) = scratch.split_at_mut(n);
    let (mut prev, mut same) = (f.start_ns, true);
    let (mut s_lo, mut s_hi, mut d_lo, mut d_hi) = (u64::MAX, 0, u64::MAX, 0);
    for ((e, s), d) in events
        .iter()
        .zip(steps.iter_mut())
        .zip(durations.iter_mut())
    {
        let step = zigzag(e.start_ns.wrapping_sub(prev));
        prev = e.start_ns;
        (*s, *d) = (step, e.duration_ns);
        (s_lo, s_hi) = (s_lo.min(step), s_hi.max(step));
        (d_lo, d_hi) = (d_lo.min(e.duration_ns), d_hi.max(e.duration_ns));
        same &= (e.session == f.session)
            & (e.name == f.name)
            & (e.intended_start_ns == f.intended_start_ns)
            & (e.outcome == f.outcome)
            & (e.flags == f.flags)
            & (e.rows == f.rows);
    }
    let column = |c: usize| {
        let mut prev = origin;
        events.iter().map(move |e| row(e, &mut prev)[c])
    };
    let first = row(f, &mut origin.clone());
    let (mut lo, mut hi) = (first, first);
    (lo[START], hi[START], lo[DURATION], hi[DURATION]) = (s_lo, s_hi, d_lo, d_hi);
    if !same {
        for c in [0, 1, INTENDED, 5, 6, 7] {
            (lo[c], hi[c]) = column(c).fold((u64::MAX, 0), |(l, h), v| (l.min(v), h.max(v)));
        }
    }
    let widths: [u32; COLUMNS] = std::array::from_fn(|c| width_of(hi[c] - lo[c]));
    let len: usize = (0..COLUMNS)
        .map(|c| header_len(c) + packed_len(n, widths[c]))
        .sum();
    if len >= n * Event::ENCODED_LEN {
        return false;
    }
    out.reserve(len + 8);
    for c in 0..COLUMNS {
        out.push(widths[c] as u8);
        out.extend_from_slice(&lo[c].to_le_bytes());
        match c {
            START => out.extend_from_slice(&origin.0.to_le_bytes()),
            INTENDED => out.extend_from_slice(&origin.1.to_le_bytes()),
            _ => {}
        }
        match (widths[c], c) {
            (0, _) => {}
            (w, START) => pack(steps.iter().copied(), n, lo[c], w, out),
            (w, DURATION) => pack(durations.iter().copied(), n, lo[c], w, out),
            (w, _) => pack(column(c), n, lo[c], w, out),
        }
    }
    true
}

/// One column of a payload being decoded.
struct Col<'a> {
    base: u64,
    width: u32,
    mask: u64,
    bytes: &'a [u8],
}

impl Col<'_> {
    #[inline]
    fn get(&self, i: usize) -> u64 {
        if self.width == 0 {
            return self.base;
        }
        let bit = i * self.width as usize;
        let (byte, shift) = (bit / 8, bit % 8);
        let word = match self.bytes.get(byte..byte + 8) {
            Some(b) => u64::from_le_bytes(b.try_into().expect("8 bytes")),
            None => {
                // The last values of the column: fewer than 8 bytes remain.
                let mut b = [0u8; 8];
                let rest = &self.bytes[byte.min(self.bytes.len())..];
                b[..rest.len()].copy_from_slice(rest);
                u64::from_le_bytes(b)
            }
        };
        self.base.wrapping_add((word >> shift) & self.mask)
    }
}

/// Decodes a packed payload of `count` events, appending them to `out`. A payload whose columns do
/// not add up to its length, or whose widths are not ones [`encode`] writes, is an error (the
/// block's checksum matched, so it was written that way: a bug or a hand-made file).
pub(crate) fn decode(payload: &[u8], count: usize, out: &mut Vec<Event>) -> Result<(), String> {
    let mut cols: Vec<Col<'_>> = Vec::with_capacity(COLUMNS);
    let mut origins = [0u64; COLUMNS];
    let mut at = 0usize;
    let limits: [u32; COLUMNS] = [32, 32, 64, 64, 64, 16, 16, 32];
    for (c, &limit) in limits.iter().enumerate() {
        let head = payload
            .get(at..at + header_len(c))
            .ok_or_else(|| format!("column {c} runs past the block"))?;
        let width = u32::from(head[0]);
        let base = u64::from_le_bytes(head[1..9].try_into().expect("8 bytes"));
        if (width > MAX_PACKED && width != 64) || width > limit {
            return Err(format!("column {c} has width {width}"));
        }
        if limit < 64 && base >> limit != 0 {
            return Err(format!(
                "column {c} has base {base}, beyond its {limit} bits"
            ));
        }
        if head.len() == 17 {
            origins[c] = u64::from_le_bytes(head[9..17].try_into().expect("8 bytes"));
        }
        at += head.len();
        let n = packed_len(count, width);
        let bytes = payload
            .get(at..at + n)
            .ok_or_else(|| format!("column {c} runs past the block"))?;
        at += n;
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        cols.push(Col {
            base,
            width,
            mask,
            bytes,
        });
    }
    if at != payload.len() {
        return Err(format!(
            "{} bytes after the last column",
            payload.len() - at
        ));
    }
    let [session, name, start, duration, intended, outcome, flags, rows] = &cols[..] else {
        unreachable!("eight columns were read");
    };
    out.reserve(count);
    let (mut prev_start, mut prev_intended) = (origins[START], origins[INTENDED]);
    // Narrow columns are cut to their field's width: their base and width were checked above, so
    // only a hand-made file whose values overflow the field can lose bits here.
    out.extend((0..count).map(|i| {
        prev_start = prev_start.wrapping_add(unzigzag(start.get(i)));
        prev_intended = prev_intended.wrapping_add(unzigzag(intended.get(i)));
        Event {
            session: session.get(i) as u32,
            name: name.get(i) as u32,
            start_ns: prev_start,
            duration_ns: duration.get(i),
            intended_start_ns: (prev_intended != NO_INTENDED).then_some(prev_intended),
            outcome: outcome.get(i) as u16,
            flags: flags.get(i) as u16,
            rows: rows.get(i) as u32,
        }
    }));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// An import's events: one session, one name, closed loop, consecutive waits of 300 µs ..
    /// 2 ms (21 bits each for the duration and the step to the next start).
    pub(super) fn import_like(n: usize, seed: u64) -> Vec<Event> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut t = 0u64;
        (0..n)
            .map(|_| {
                let d = rng.random_range(300_000..2_000_000u64);
                let e = Event {
                    name: 1,
                    start_ns: t,
                    duration_ns: d,
                    ..Event::default()
                };
                t += d;
                e
            })
            .collect()
    }

    fn round_trip(events: &[Event]) -> Option<usize> {
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        if !encode(events, &mut out, &mut scratch) {
            return None;
        }
        let mut back = vec![Event::default()];
        decode(&out, events.len(), &mut back).expect("decodes");
        assert_eq!(&back[1..], events, "appended after what was there");
        Some(out.len())
    }

    #[test]
    fn blocks_of_every_shape_come_back_unchanged() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x05ee_dc01);
        for case in 0..2000 {
            let n = rng.random_range(1..600);
            // Each field draws from a range of a random width, sometimes constant, sometimes the
            // full range of its type, so every width 0..=64 and the 56/64 boundary are crossed.
            let mut bits = |max: u32| -> u32 { rng.random_range(0..=max) };
            let (bs, bn, bt, bd, bo, bf, br) = (
                bits(32),
                bits(32),
                bits(64),
                bits(64),
                bits(16),
                bits(16),
                bits(32),
            );
            let intended_mode = case % 3;
            let mut t = rng.random::<u64>() >> rng.random_range(0..64);
            let events: Vec<Event> = (0..n)
                .map(|_| {
                    let mut draw = |b: u32| -> u64 {
                        if b == 0 {
                            0
                        } else {
                            rng.random::<u64>() >> (64 - b)
                        }
                    };
                    t = t.wrapping_add(draw(bt));
                    let intended = match intended_mode {
                        0 => None,
                        1 => Some(t.wrapping_sub(draw(bt) >> 1)),
                        _ => (draw(1) == 1).then(|| draw(bt)),
                    };
                    Event {
                        session: draw(bs) as u32,
                        name: draw(bn) as u32,
                        start_ns: if case % 7 == 0 { draw(bt) } else { t },
                        duration_ns: draw(bd),
                        intended_start_ns: intended,
                        outcome: draw(bo) as u16,
                        flags: draw(bf) as u16,
                        rows: draw(br) as u32,
                    }
                })
                .collect();
            if let Some(len) = round_trip(&events) {
                assert!(len < n * Event::ENCODED_LEN);
            }
        }
    }

    #[test]
    fn an_import_block_packs_to_a_fraction_of_its_size() {
        let events = import_like(4096, 7);
        let len = round_trip(&events).expect("packed");
        let per_event = len as f64 / events.len() as f64;
        assert!(per_event < 6.0, "{per_event} bytes an event");
    }

    #[test]
    fn malformed_payloads_are_errors_not_panics() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let events: Vec<Event> = (0..100)
            .map(|i| Event {
                session: i % 3,
                name: 1,
                start_ns: 1000 * u64::from(i),
                duration_ns: rng.random_range(1..1_000_000),
                ..Event::default()
            })
            .collect();
        let (mut good, mut scratch) = (Vec::new(), Vec::new());
        assert!(encode(&events, &mut good, &mut scratch));
        let mut out = Vec::new();
        // Every truncation, and a count that does not match.
        for cut in 0..good.len() {
            assert!(
                decode(&good[..cut], events.len(), &mut out).is_err(),
                "cut at {cut}"
            );
        }
        assert!(decode(&good, events.len() + 1, &mut out).is_err());
        assert!(decode(&good, events.len() - 1, &mut out).is_err());
        // A width the encoder never writes, and a narrow column's base beyond its field.
        let mut bad = good.clone();
        bad[0] = 60;
        assert!(decode(&bad, events.len(), &mut out).is_err());
        let mut bad = good.clone();
        bad[1..9].copy_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(decode(&bad, events.len(), &mut out).is_err());
        // Random bytes never panic.
        for _ in 0..2000 {
            let n = rng.random_range(0..200);
            let junk: Vec<u8> = (0..n).map(|_| rng.random()).collect();
            let _ = decode(&junk, rng.random_range(0..50), &mut out);
        }
    }
}

#[cfg(test)]
mod cost {
    use super::*;

    /// `cargo test -p dbscope-core --release -- --ignored packed_cost --nocapture`: 4 M
    /// import-like events packed, written as 40-byte records, and unpacked, in blocks of 8192
    /// and 65,536 (prints the times and the packed size; asserts nothing).
    #[test]
    #[ignore]
    fn packed_cost() {
        let events = super::tests::import_like(4_000_000, 7);
        for block in [1usize << 13, 1 << 16] {
            let (mut out, mut scratch) = (Vec::new(), Vec::new());
            let t0 = std::time::Instant::now();
            for b in events.chunks(block) {
                out.clear();
                encode(b, &mut out, &mut scratch);
            }
            let packed = t0.elapsed();
            let t0 = std::time::Instant::now();
            for b in events.chunks(block) {
                out.clear();
                for e in b {
                    e.encode(&mut out);
                }
            }
            let plain = t0.elapsed();
            let mut back = Vec::new();
            let mut enc = Vec::new();
            let mut lens = Vec::new();
            for b in events.chunks(block) {
                let at = enc.len();
                encode(b, &mut enc, &mut scratch);
                lens.push((at, b.len()));
            }
            let t0 = std::time::Instant::now();
            for (i, &(at, n)) in lens.iter().enumerate() {
                let end = lens.get(i + 1).map_or(enc.len(), |x| x.0);
                back.clear();
                decode(&enc[at..end], n, &mut back).unwrap();
            }
            let dec = t0.elapsed();
            println!(
                "block {block}: packed {packed:?} plain {plain:?} decode {dec:?} ({} bytes)",
                enc.len()
            );
        }
    }

    /// `cargo test -p dbscope-core --release -- --ignored packed_hot --nocapture`: one block
    /// of 8192 import-like events, in cache, packed again and again (prints the time an event).
    #[test]
    #[ignore]
    fn packed_hot() {
        let events = super::tests::import_like(8192, 7);
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        let t0 = std::time::Instant::now();
        for _ in 0..4880 {
            out.clear();
            encode(&events, &mut out, &mut scratch);
        }
        println!("hot: {:?} per event", t0.elapsed() / (4880 * 8192));
    }
}
