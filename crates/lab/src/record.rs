//! The hot path: timing operations and handing events to the writer in batches, with negligible
//! overhead per event.

use std::sync::mpsc::SyncSender;

use dbscope_core::{Event, NameId, NameTable, EVENT_WARMUP};

/// Events a session collects before handing them to the writer as one block.
pub const BATCH_EVENTS: usize = 4096;
/// A session hands over its batch at least this often, so a crash loses little.
pub const BATCH_MAX_AGE_NS: u64 = 100_000_000;

/// The run's clock: the CPU's invariant TSC where the kernel trusts it (a few ns a read, a third of
/// `clock_gettime`), else the monotonic clock (quanta decides and calibrates once).
#[derive(Clone, Debug)]
pub struct RunClock {
    clock: quanta::Clock,
    origin: quanta::Instant,
}

impl RunClock {
    /// A clock whose offset 0 is now.
    pub fn start() -> Self {
        let clock = quanta::Clock::new();
        let origin = clock.now();
        RunClock { clock, origin }
    }

    /// Nanoseconds since the origin.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.clock.now().duration_since(self.origin).as_nanos() as u64
    }
}

/// One session's recorder: reads the clock and buffers events; the writer thread does the I/O.
pub struct Recorder {
    session: u32,
    clock: RunClock,
    warmup_end_ns: u64,
    names: NameTable,
    buf: Vec<Event>,
    batch_started_ns: u64,
    last_ns: u64,
    tx: SyncSender<Vec<Event>>,
    disconnected: bool,
}

impl Recorder {
    /// A recorder for `session`; times are ns since the clock's origin; events starting before
    /// `warmup_end_ns` are flagged as warm-up.
    pub fn new(
        session: u32,
        clock: RunClock,
        warmup_end_ns: u64,
        names: NameTable,
        tx: SyncSender<Vec<Event>>,
    ) -> Self {
        Recorder {
            session,
            clock,
            warmup_end_ns,
            names,
            buf: Vec::with_capacity(BATCH_EVENTS),
            batch_started_ns: 0,
            last_ns: 0,
            tx,
            disconnected: false,
        }
    }

    /// Nanoseconds since the run's clock origin.
    #[inline]
    pub fn now(&self) -> u64 {
        self.clock.now_ns()
    }

    /// End time of the latest recorded event (ns since the origin).
    #[inline]
    pub fn last_ns(&self) -> u64 {
        self.last_ns
    }

    /// The session number.
    pub fn session(&self) -> u32 {
        self.session
    }

    /// Interns an event name (do it once, at setup).
    pub fn name(&self, name: &str) -> NameId {
        self.names.intern(name)
    }

    /// Records a successful event from `start` to `end` (ns since the origin).
    #[inline]
    pub fn ok(&mut self, name: NameId, start: u64, end: u64, rows: u64) {
        self.push(name, start, end, None, 0, rows);
    }

    /// Records a failed event with its error class.
    pub fn error(&mut self, name: NameId, start: u64, end: u64, class: &str) {
        let outcome = self.names.intern_outcome(class).max(1);
        self.push(name, start, end, None, outcome, 0);
    }

    /// Records an event with every field given (open-loop workloads pass the intended start).
    #[inline]
    pub fn push(
        &mut self,
        name: NameId,
        start: u64,
        end: u64,
        intended_start: Option<u64>,
        outcome: u16,
        rows: u64,
    ) {
        if self.buf.is_empty() {
            self.batch_started_ns = end;
        }
        self.buf.push(Event {
            session: self.session,
            name,
            start_ns: start,
            duration_ns: end.saturating_sub(start),
            intended_start_ns: intended_start,
            outcome,
            flags: if start < self.warmup_end_ns {
                EVENT_WARMUP
            } else {
                0
            },
            rows: rows.min(u32::MAX as u64) as u32,
        });
        self.last_ns = end;
        if self.buf.len() >= BATCH_EVENTS || end - self.batch_started_ns >= BATCH_MAX_AGE_NS {
            self.flush();
        }
    }

    /// Hands the buffered events to the writer.
    pub fn flush(&mut self) {
        if self.buf.is_empty() || self.disconnected {
            return;
        }
        let batch = std::mem::replace(&mut self.buf, Vec::with_capacity(BATCH_EVENTS));
        if self.tx.send(batch).is_err() {
            // The writer is gone (it failed); the run is being stopped, nothing more can be kept.
            self.disconnected = true;
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.flush();
    }
}
