//! The row model every export format writes: the columns, one event as column values, and the
//! pool of distinct strings (event names, outcomes) the rows point into.

use std::collections::HashMap;

use dbscope_core::{Event, EventParams, NameId, NameTable};
use parquet::data_type::ByteArray;

/// The exported columns, in order; CSV header and Parquet schema use exactly these names.
pub const COLUMNS: [&str; 16] = [
    "session",
    "event",
    "start_utc",
    "start_ns",
    "duration_ns",
    "intended_start_ns",
    "outcome",
    "rows",
    "warmup",
    "obj",
    "p1",
    "p2",
    "p3",
    "p1_name",
    "p2_name",
    "p3_name",
];

/// One event as column values; strings are indices into a [`StringPool`].
#[derive(Clone, Copy, Debug)]
pub(super) struct Row {
    /// Session number.
    pub(super) session: i32,
    /// Event name (pool index).
    pub(super) event: u32,
    /// Wall-clock start, ns since the Unix epoch.
    pub(super) start_utc_ns: i64,
    /// Start, ns since the run's clock origin.
    pub(super) start_ns: i64,
    /// Duration, ns.
    pub(super) duration_ns: i64,
    /// Open-loop schedule, ns since the clock origin.
    pub(super) intended_start_ns: Option<i64>,
    /// `ok` or the error class (pool index).
    pub(super) outcome: u32,
    /// Rows affected or returned.
    pub(super) rows: i64,
    /// Warm-up event.
    pub(super) warmup: bool,
    /// Object id (Oracle `obj#`), when the event has one.
    pub(super) obj: Option<i64>,
    /// Parameter values (Oracle `p1..p3`), when the event has them.
    pub(super) p: [Option<i64>; 3],
    /// Parameter names (pool index), when the source named them.
    pub(super) p_names: [Option<u32>; 3],
}

impl Row {
    /// Converts an event and its parameters (default: none); the error says which value does
    /// not fit its column.
    pub(super) fn new(
        ev: &Event,
        params: &EventParams,
        origin_unix_ns: i64,
        names: &NameTable,
        strings: &mut StringPool,
    ) -> Result<Row, String> {
        let signed = |what: &str, v: u64| {
            i64::try_from(v).map_err(|_| format!("{what} {v} does not fit a signed 64-bit column"))
        };
        let session = i32::try_from(ev.session)
            .map_err(|_| format!("session {} does not fit a signed 32-bit column", ev.session))?;
        let start_ns = signed("start_ns", ev.start_ns)?;
        let start_utc_ns = origin_unix_ns.checked_add(start_ns).ok_or_else(|| {
            format!("start_ns {start_ns} past the clock origin {origin_unix_ns} is not a representable time")
        })?;
        let intended_start_ns = match ev.intended_start_ns {
            Some(v) => Some(signed("intended_start_ns", v)?),
            None => None,
        };
        let outcome = if ev.outcome == 0 {
            StringPool::OK
        } else {
            strings.resolve(names, NameId::from(ev.outcome))
        };
        Ok(Row {
            session,
            event: strings.resolve(names, ev.name),
            start_utc_ns,
            start_ns,
            duration_ns: signed("duration_ns", ev.duration_ns)?,
            intended_start_ns,
            outcome,
            rows: i64::from(ev.rows),
            warmup: ev.is_warmup(),
            obj: params.obj,
            p: params.p,
            p_names: params
                .p_names
                .map(|id| (id != 0).then(|| strings.resolve(names, id))),
        })
    }
}

/// The distinct strings of an export (event names and outcomes), each stored once.
///
/// Name ids are per event file, so the id-to-string map is reset for each file while the pool itself
/// (what buffered rows point into) lives for the whole export.
#[derive(Debug)]
pub(super) struct StringPool {
    values: Vec<ByteArray>,
    by_text: HashMap<String, u32>,
    by_id: HashMap<NameId, u32>,
}

impl Default for StringPool {
    fn default() -> Self {
        let mut pool = StringPool {
            values: Vec::new(),
            by_text: HashMap::new(),
            by_id: HashMap::new(),
        };
        pool.intern("ok".to_string());
        pool
    }
}

impl StringPool {
    /// Index of `ok`, the outcome of a successful event.
    pub(super) const OK: u32 = 0;

    /// Forgets the id mapping of the previous event file.
    pub(super) fn begin_file(&mut self) {
        self.by_id.clear();
    }

    /// The pool index of the name with this id in the current file's table.
    pub(super) fn resolve(&mut self, names: &NameTable, id: NameId) -> u32 {
        if let Some(&i) = self.by_id.get(&id) {
            return i;
        }
        let i = self.intern(names.name(id));
        // An id the table does not know yet prints as "#id"; do not pin that in case it appears later.
        if (id as usize) < names.len() {
            self.by_id.insert(id, i);
        }
        i
    }

    fn intern(&mut self, text: String) -> u32 {
        if let Some(&i) = self.by_text.get(&text) {
            return i;
        }
        let i = self.values.len() as u32;
        self.values.push(ByteArray::from(text.as_bytes().to_vec()));
        self.by_text.insert(text, i);
        i
    }

    /// The string at pool index `i`.
    pub(super) fn get(&self, i: u32) -> &ByteArray {
        &self.values[i as usize]
    }
}
