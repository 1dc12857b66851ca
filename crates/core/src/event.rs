//! The timed event, the unit of everything dbscope records, and the table that interns event names.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

/// Index of a string in a run's [`NameTable`]. Id 0 is the empty string, which as an outcome means "ok".
pub type NameId = u32;

/// Flag bit: the event happened during the warm-up period; statistics leave it out by default.
pub const EVENT_WARMUP: u16 = 1;

/// Sentinel stored on disk for "no intended start" (closed-loop events).
const NO_INTENDED: u64 = u64::MAX;

/// One timed thing that happened in one session: an operation the workload issued or a wait the
/// database reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Event {
    /// Session (connection, trace session) number, from 0.
    pub session: u32,
    /// Event name, interned in the run's [`NameTable`].
    pub name: NameId,
    /// Start, in nanoseconds since the run's clock origin (`Manifest::clock_origin_unix_ns`).
    pub start_ns: u64,
    /// How long it took, in nanoseconds.
    pub duration_ns: u64,
    /// For open-loop workloads, when the operation was scheduled to start (ns since the origin); the
    /// difference to `start_ns` is the queueing that coordinated omission would hide.
    pub intended_start_ns: Option<u64>,
    /// 0 when the operation succeeded; otherwise the interned error class (e.g. `pg:40P01`, `connection`).
    pub outcome: u16,
    /// Bit flags, see [`EVENT_WARMUP`].
    pub flags: u16,
    /// Rows affected or returned, when known.
    pub rows: u32,
}

impl Event {
    /// Size of one event on disk, in bytes.
    pub const ENCODED_LEN: usize = 40;

    /// True when the operation failed.
    pub fn is_error(&self) -> bool {
        self.outcome != 0
    }

    /// True when the event happened during warm-up.
    pub fn is_warmup(&self) -> bool {
        self.flags & EVENT_WARMUP != 0
    }

    /// Latency as an open-loop client would see it: from the intended start to the end. Equals the
    /// duration for closed-loop events.
    pub fn latency_from_intended_ns(&self) -> u64 {
        match self.intended_start_ns {
            Some(i) if i < self.start_ns => self.duration_ns + (self.start_ns - i),
            _ => self.duration_ns,
        }
    }

    /// Appends the little-endian encoding of the event to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut b = [0u8; Self::ENCODED_LEN];
        self.encode_into(&mut b);
        out.extend_from_slice(&b);
    }

    /// Writes the little-endian encoding into a fixed 40-byte slot (fixed offsets let the compiler
    /// emit a handful of stores: this runs for every event a run records).
    #[inline]
    pub fn encode_into(&self, b: &mut [u8; Self::ENCODED_LEN]) {
        b[0..4].copy_from_slice(&self.session.to_le_bytes());
        b[4..8].copy_from_slice(&self.name.to_le_bytes());
        b[8..16].copy_from_slice(&self.start_ns.to_le_bytes());
        b[16..24].copy_from_slice(&self.duration_ns.to_le_bytes());
        b[24..32].copy_from_slice(&self.intended_start_ns.unwrap_or(NO_INTENDED).to_le_bytes());
        b[32..34].copy_from_slice(&self.outcome.to_le_bytes());
        b[34..36].copy_from_slice(&self.flags.to_le_bytes());
        b[36..40].copy_from_slice(&self.rows.to_le_bytes());
    }

    /// Decodes one event from exactly [`Event::ENCODED_LEN`] bytes.
    pub fn decode(b: &[u8]) -> Event {
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let u16_at = |i: usize| u16::from_le_bytes(b[i..i + 2].try_into().expect("2 bytes"));
        let intended = u64_at(24);
        Event {
            session: u32_at(0),
            name: u32_at(4),
            start_ns: u64_at(8),
            duration_ns: u64_at(16),
            intended_start_ns: (intended != NO_INTENDED).then_some(intended),
            outcome: u16_at(32),
            flags: u16_at(34),
            rows: u32_at(36),
        }
    }
}

/// What a source knows of an event beyond its timing: an object id and up to three numeric
/// parameters with their names (an Oracle wait's `obj#` and `p1..p3`, e.g. `file#=4 block#=123
/// blocks=1`). Stored in optional blocks beside the events (see [`crate::run`]), so runs without
/// them, and readers that do not know them, are unaffected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventParams {
    /// Object id (Oracle `obj#`; −1 when the wait is on no object), when given.
    pub obj: Option<i64>,
    /// The parameters' values, when given and integers that fit 64 signed bits.
    pub p: [Option<i64>; 3],
    /// The parameters' names, interned in the run's [`NameTable`]; 0 (the empty name) when the
    /// source gives none (Oracle's plain `p1=`).
    pub p_names: [NameId; 3],
}

impl EventParams {
    /// True when there is nothing to store.
    pub fn is_empty(&self) -> bool {
        self.obj.is_none() && self.p.iter().all(Option::is_none)
    }

    /// Appends the encoding of the parameters of the event at `index` of its block: index u32,
    /// a mask u8 (bit 0 obj, bits 1–3 p1..p3), obj i64 when set, then (value i64, name u32) for
    /// each parameter set; little-endian.
    pub(crate) fn encode(&self, index: u32, out: &mut Vec<u8>) {
        out.extend_from_slice(&index.to_le_bytes());
        let mut mask = u8::from(self.obj.is_some());
        for (i, p) in self.p.iter().enumerate() {
            if p.is_some() {
                mask |= 2 << i;
            }
        }
        out.push(mask);
        if let Some(o) = self.obj {
            out.extend_from_slice(&o.to_le_bytes());
        }
        for (p, name) in self.p.iter().zip(self.p_names) {
            if let Some(v) = p {
                out.extend_from_slice(&v.to_le_bytes());
                out.extend_from_slice(&name.to_le_bytes());
            }
        }
    }

    /// Decodes one entry from the start of `b`: (event index, parameters, bytes used), or why it
    /// cannot be read.
    pub(crate) fn decode(b: &[u8]) -> Result<(u32, EventParams, usize), String> {
        let mut at = 0;
        let mut take = |n: usize| -> Result<&[u8], String> {
            let s = b
                .get(at..at + n)
                .ok_or_else(|| "parameter entry runs past the block".to_string())?;
            at += n;
            Ok(s)
        };
        let index = u32::from_le_bytes(take(4)?.try_into().expect("4"));
        let mask = take(1)?[0];
        if mask > 0b1111 {
            return Err(format!("unknown parameter mask {mask:#x}"));
        }
        let mut p = EventParams::default();
        if mask & 1 != 0 {
            p.obj = Some(i64::from_le_bytes(take(8)?.try_into().expect("8")));
        }
        for i in 0..3 {
            if mask & (2 << i) != 0 {
                p.p[i] = Some(i64::from_le_bytes(take(8)?.try_into().expect("8")));
                p.p_names[i] = u32::from_le_bytes(take(4)?.try_into().expect("4"));
            }
        }
        Ok((index, p, at))
    }
}

#[derive(Debug, Default)]
struct Names {
    list: Vec<String>,
    index: HashMap<String, NameId>,
}

/// Interns event names and error classes. Cheap to clone (shared); safe to use from every session.
///
/// Sessions intern their few names once at setup, so the lock is off the hot path.
#[derive(Clone, Debug)]
pub struct NameTable {
    inner: Arc<RwLock<Names>>,
}

impl Default for NameTable {
    fn default() -> Self {
        let t = NameTable {
            inner: Arc::new(RwLock::new(Names::default())),
        };
        t.intern("");
        t
    }
}

impl NameTable {
    /// A table holding only the empty string (id 0).
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of `name`, adding it if it is new.
    pub fn intern(&self, name: &str) -> NameId {
        if let Some(&id) = self.read().index.get(name) {
            return id;
        }
        let mut w = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(&id) = w.index.get(name) {
            return id;
        }
        let id = w.list.len() as NameId;
        w.list.push(name.to_owned());
        w.index.insert(name.to_owned(), id);
        id
    }

    /// The id for an error class, which must fit the 16-bit outcome field; classes past that limit
    /// share one catch-all class rather than being lost.
    pub fn intern_outcome(&self, class: &str) -> u16 {
        let id = self.intern(class);
        if id > u16::MAX as u32 - 1 {
            self.intern("error (too many classes)").min(u16::MAX as u32) as u16
        } else {
            id as u16
        }
    }

    /// The string of an id, or `"#<id>"` when the id is unknown (a damaged file).
    pub fn name(&self, id: NameId) -> String {
        self.read()
            .list
            .get(id as usize)
            .cloned()
            .unwrap_or_else(|| format!("#{id}"))
    }

    /// The id of a name if it is interned.
    pub fn lookup(&self, name: &str) -> Option<NameId> {
        self.read().index.get(name).copied()
    }

    /// Number of names, including the empty one.
    pub fn len(&self) -> usize {
        self.read().list.len()
    }

    /// Always false: the empty name is always present.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Names with ids `from..`, for writers that emit new names incrementally.
    pub fn since(&self, from: usize) -> Vec<(NameId, String)> {
        let r = self.read();
        r.list
            .iter()
            .enumerate()
            .skip(from)
            .map(|(i, s)| (i as NameId, s.clone()))
            .collect()
    }

    /// Sets the string of a given id (readers rebuilding a table from a file).
    pub fn insert_at(&self, id: NameId, name: &str) {
        let mut w = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        let i = id as usize;
        while w.list.len() <= i {
            let placeholder = format!("#{}", w.list.len());
            w.list.push(placeholder);
        }
        w.list[i] = name.to_owned();
        w.index.insert(name.to_owned(), id);
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Names> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip() {
        let e = Event {
            session: 7,
            name: 3,
            start_ns: 123_456_789,
            duration_ns: 42,
            intended_start_ns: Some(100),
            outcome: 2,
            flags: EVENT_WARMUP,
            rows: 1,
        };
        let mut buf = Vec::new();
        e.encode(&mut buf);
        assert_eq!(buf.len(), Event::ENCODED_LEN);
        assert_eq!(Event::decode(&buf), e);
        let closed = Event {
            intended_start_ns: None,
            ..e
        };
        buf.clear();
        closed.encode(&mut buf);
        assert_eq!(Event::decode(&buf).intended_start_ns, None);
    }

    #[test]
    fn intended_start_adds_queueing() {
        let e = Event {
            start_ns: 1_000,
            duration_ns: 10,
            intended_start_ns: Some(400),
            ..Event::default()
        };
        assert_eq!(e.latency_from_intended_ns(), 610);
    }

    #[test]
    fn params_encode_decode_round_trip() {
        let all = EventParams {
            obj: Some(-1),
            p: [Some(4), None, Some(i64::MAX)],
            p_names: [7, 0, 9],
        };
        let none = EventParams::default();
        assert!(none.is_empty() && !all.is_empty());
        for (i, p) in [
            all,
            EventParams {
                obj: Some(5678),
                ..none
            },
        ]
        .iter()
        .enumerate()
        {
            let mut buf = Vec::new();
            p.encode(i as u32 + 3, &mut buf);
            assert_eq!(EventParams::decode(&buf), Ok((i as u32 + 3, *p, buf.len())));
            // A cut entry is an error, not a panic.
            assert!(EventParams::decode(&buf[..buf.len() - 1]).is_err());
        }
        assert!(EventParams::decode(&[0, 0, 0, 0, 0x10]).is_err());
    }

    #[test]
    fn names_intern_once() {
        let t = NameTable::new();
        assert_eq!(t.lookup(""), Some(0));
        let a = t.intern("commit");
        assert_eq!(t.intern("commit"), a);
        assert_eq!(t.name(a), "commit");
        assert_eq!(t.since(1), vec![(a, "commit".to_string())]);
        assert_eq!(t.name(99), "#99");
    }
}
