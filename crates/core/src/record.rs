//! Recording a run: the one way every source (workloads, `io redo`, TPC-H jobs, trace and CSV
//! imports) turns what it measured into a run directory.
//!
//! [`Recording::begin`] creates the directory and writes the first manifest (outcome `running`,
//! command line redacted); events go in through [`Recording::write_block`] (sources that have their
//! events at hand) or through per-session [`Recorder`]s and [`Recording::pump`] (sources whose
//! sessions run in threads); run-level counters through [`Recording::write_counters`];
//! [`Recording::finish`] syncs the events and records how the run ended. A run killed at any moment
//! keeps every complete block and a manifest that says `running`, which readers report as incomplete.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::counters::{CounterSection, RunCounters};
use crate::error::{Error, Result};
use crate::event::{Event, EventParams, NameId, NameTable, EVENT_WARMUP};
use crate::manifest::{Manifest, Outcome};
use crate::redact::redact;
use crate::run::{EventWriter, Headline, RunDir, EVENTS_FILE};

/// Events a session collects before handing them to the writer as one block.
pub const BATCH_EVENTS: usize = 4096;
/// A session hands over its batch at least this often, so a crash loses little.
pub const BATCH_MAX_AGE_NS: u64 = 100_000_000;

/// A file kept in the run directory while the run goes (see [`Recording::reserve_space`]).
pub const RESERVE_FILE: &str = "space.reserve";
/// Enough for the final manifest and counters (each rewritten through a temporary file).
const RESERVE_BYTES: usize = 256 << 10;

/// The run's clock: the system's monotonic clock (`clock_gettime(CLOCK_MONOTONIC)`, read in the
/// vDSO), as ns since the run's origin.
///
/// Not the TSC read directly (quanta, a third of the cost: 9 ns a read here against 24): quanta
/// scales the TSC by a frequency it estimates once per process, off by +30 to +370 ppm on this
/// VM (a different one in each process; its issue metrics-rs/quanta#99), so every duration and
/// rate dbscope printed was up to 0.037 % off and a server's timer placed on the run's clock
/// drifted by hundreds of µs a second. The monotonic clock is the one the kernel keeps, that
/// pgbench and sysbench time with and that the servers' timers are compared against; the 15 ns
/// more per read is some 0.2 % of a client's CPU per statement at most.
#[derive(Clone, Debug)]
pub struct RunClock {
    origin: Instant,
}

impl RunClock {
    /// A clock whose offset 0 is now.
    pub fn start() -> Self {
        RunClock {
            origin: Instant::now(),
        }
    }

    /// Nanoseconds since the origin.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }
}

/// Why a run is stopping early; shared by the sessions, the Ctrl-C handler and the writer.
#[derive(Debug, Default)]
pub struct StopSignal {
    state: AtomicU8,
    detail: Mutex<Option<String>>,
}

const RUNNING: u8 = 0;
const INTERRUPTED: u8 = 1;
const FAILED: u8 = 2;

impl StopSignal {
    /// A signal that has not fired.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the run to stop and keep its data (Ctrl-C, SIGTERM).
    pub fn interrupt(&self) {
        let _ =
            self.state
                .compare_exchange(RUNNING, INTERRUPTED, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// Stops the run as failed, with the reason (the first reason given wins).
    pub fn fail(&self, why: String) {
        if self
            .state
            .compare_exchange(RUNNING, FAILED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            *self.detail.lock().unwrap_or_else(PoisonError::into_inner) = Some(why);
        }
    }

    /// True once the run should stop.
    #[inline]
    pub fn is_set(&self) -> bool {
        self.state.load(Ordering::Relaxed) != RUNNING
    }

    /// How the run ends given this signal: complete when it never fired.
    pub fn outcome(&self) -> (Outcome, Option<String>) {
        match self.state.load(Ordering::SeqCst) {
            INTERRUPTED => (Outcome::Interrupted, Some(INTERRUPTED_DETAIL.into())),
            FAILED => (
                Outcome::Failed,
                self.detail
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone(),
            ),
            _ => (Outcome::Complete, None),
        }
    }
}

/// Seed for one session, derived from the run seed (SplitMix64 step), so sessions differ but the
/// same run seed always gives the same streams.
pub fn session_seed(seed: u64, session: u32) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(session as u64 + 1));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The detail recorded for a run the user stopped.
pub const INTERRUPTED_DETAIL: &str = "stopped by the user";

/// One session's recorder: reads the clock and buffers events; the thread running
/// [`Recording::pump`] does the I/O.
pub struct Recorder {
    session: u32,
    clock: RunClock,
    warmup_end_ns: u64,
    names: NameTable,
    buf: Vec<Event>,
    batch_started_ns: u64,
    last_ns: u64,
    /// Inside an operation ([`Recorder::begin_op`]): whether its first event began in the warm-up,
    /// once that event is pushed.
    in_op: bool,
    op_warm: Option<bool>,
    /// Intended start of the current operation (open-loop pacing), given to each of its events.
    op_intended: Option<u64>,
    tx: SyncSender<Vec<Event>>,
    disconnected: bool,
}

impl Recorder {
    /// Marks the start of an operation (a workload step): until the next call, every event is
    /// flagged as warm-up by the start of the operation's first event rather than its own, so an
    /// operation straddling the end of the warm-up keeps all its events (e.g. update and commit)
    /// on one side.
    #[inline]
    pub fn begin_op(&mut self) {
        self.in_op = true;
        self.op_warm = None;
        self.op_intended = None;
    }

    /// As [`Recorder::begin_op`], for an operation paced open-loop: every event of it that gives
    /// no intended start of its own records `intended` (ns since the origin), so its latency from
    /// the intended start can be reported beside its service time.
    #[inline]
    pub fn begin_paced_op(&mut self, intended: u64) {
        self.begin_op();
        self.op_intended = Some(intended);
    }

    /// The intended start of the current operation, when it is paced open-loop
    /// ([`Recorder::begin_paced_op`]).
    #[inline]
    pub fn op_intended(&self) -> Option<u64> {
        self.op_intended
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

    /// Interns an error class (e.g. `pg:40P01`) as an event outcome, for [`Recorder::push`].
    pub fn outcome(&self, class: &str) -> u16 {
        self.names.intern_outcome(class).max(1)
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

    /// Records an event of its own inside a paced operation: it carries no intended start, so
    /// the operation's schedule (and its backlog) is counted once, by the operation's other
    /// events (a script's commands beside its transaction event).
    #[inline]
    pub fn push_unpaced(&mut self, name: NameId, start: u64, end: u64, outcome: u16, rows: u64) {
        let intended = self.op_intended.take();
        self.push(name, start, end, None, outcome, rows);
        self.op_intended = intended;
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
        let own = start < self.warmup_end_ns;
        let warm = if self.in_op {
            *self.op_warm.get_or_insert(own)
        } else {
            own
        };
        self.buf.push(Event {
            session: self.session,
            name,
            start_ns: start,
            duration_ns: end.saturating_sub(start),
            intended_start_ns: intended_start.or(self.op_intended),
            outcome,
            flags: if warm { EVENT_WARMUP } else { 0 },
            rows: rows.min(u32::MAX as u64) as u32,
        });
        self.last_ns = end;
        if self.buf.len() >= BATCH_EVENTS
            || end.saturating_sub(self.batch_started_ns) >= BATCH_MAX_AGE_NS
        {
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

/// Makes the [`Recorder`]s of a live run; cheap to clone into session threads.
#[derive(Clone)]
pub struct Sessions {
    clock: RunClock,
    names: NameTable,
    warmup_end_ns: u64,
    tx: SyncSender<Vec<Event>>,
}

impl Sessions {
    /// A recorder for `session`: events starting before the warm-up end carry the warm-up flag.
    pub fn recorder(&self, session: u32) -> Recorder {
        Recorder {
            session,
            clock: self.clock.clone(),
            warmup_end_ns: self.warmup_end_ns,
            names: self.names.clone(),
            buf: Vec::with_capacity(BATCH_EVENTS),
            batch_started_ns: 0,
            last_ns: 0,
            in_op: false,
            op_warm: None,
            op_intended: None,
            tx: self.tx.clone(),
            disconnected: false,
        }
    }
}

/// The receiving end of a live run's batches, drained by [`Recording::pump`].
pub struct Batches(Receiver<Vec<Event>>);

/// What [`Recording::pump`] reports to its caller as it goes.
pub enum Pumped<'a> {
    /// A batch was written (or, after a write failure, dropped): the caller may look at it.
    Batch(&'a [Event]),
    /// The tick interval passed: time for progress and counter snapshots (written through the
    /// handle).
    Tick(CounterSnapshots<'a>),
    /// Writing failed; the message says why (and whether the file system is full). Later
    /// batches are drained and dropped so the sessions can stop.
    WriteFailed(&'a str),
}

/// Writes counter sections while [`Recording::pump`] holds the recording.
pub struct CounterSnapshots<'a> {
    counters: &'a mut RunCounters,
    dir: &'a Path,
}

impl CounterSnapshots<'_> {
    /// Records (or replaces) one section of run-level counters, as [`Recording::write_counters`].
    pub fn write(&mut self, section: CounterSection) -> Result<()> {
        self.counters.put(section);
        self.counters.write(self.dir)
    }
}

/// A run being recorded. Dropping it without [`Recording::finish`] leaves the run as a killed run
/// would be: readable, with outcome `running`.
#[derive(Debug)]
pub struct Recording {
    run: RunDir,
    writer: EventWriter,
    names: NameTable,
    counters: RunCounters,
    reserve: Option<PathBuf>,
    write_error: Option<String>,
    /// The catalogue's headline figures, gathered from the blocks written when asked for.
    headline: Option<Headline>,
    /// Whether finishing flushes the events to stable storage first.
    final_sync: bool,
}

impl Recording {
    /// Creates the run directory `dir` (which must not hold a run yet), redacts the manifest's
    /// command line, writes the manifest (outcome `running`) and an empty event file.
    pub fn begin(dir: &Path, mut manifest: Manifest) -> Result<Recording> {
        manifest.command_line = manifest.command_line.iter().map(|a| redact(a)).collect();
        manifest.outcome = Outcome::Running;
        manifest.ended_utc = None;
        manifest.events_written = None;
        let run = RunDir::create(dir, manifest)?;
        let names = NameTable::new();
        let writer = EventWriter::create(&dir.join(EVENTS_FILE), names.clone())?;
        Ok(Recording {
            run,
            writer,
            names,
            counters: RunCounters::default(),
            reserve: None,
            write_error: None,
            headline: None,
            final_sync: true,
        })
    }

    /// The run directory.
    pub fn dir(&self) -> &Path {
        &self.run.path
    }

    /// The names of this run's events and error classes.
    pub fn names(&self) -> &NameTable {
        &self.names
    }

    /// Changes the manifest; written when the run starts its clock or finishes.
    pub fn manifest_mut(&mut self) -> &mut Manifest {
        &mut self.run.manifest
    }

    /// Starts the clock: event offset 0 is now, and the manifest says so.
    pub fn start_clock(&mut self) -> Result<RunClock> {
        let clock = RunClock::start();
        let now = Utc::now();
        self.run.manifest.started_utc = now;
        self.run.manifest.clock_origin_unix_ns = now.timestamp_nanos_opt().unwrap_or(0);
        self.run.save_manifest()?;
        Ok(clock)
    }

    /// Keeps a file of a few hundred KiB in the run directory until the end, so that a file system
    /// filled by the run's events still has room for the final counters and manifest.
    pub fn reserve_space(&mut self) -> std::io::Result<()> {
        let path = self.run.path.join(RESERVE_FILE);
        let result = std::fs::write(&path, vec![0xA5u8; RESERVE_BYTES])
            .and_then(|()| std::fs::File::open(&path)?.sync_all());
        match result {
            Ok(()) => {
                self.reserve = Some(path);
                Ok(())
            }
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                Err(e)
            }
        }
    }

    /// Appends one block of events (written at once, so a crash leaves at most one torn block).
    pub fn write_block(&mut self, events: &[Event]) -> Result<()> {
        self.writer.write_block(events)?;
        if let Some(h) = &mut self.headline {
            h.add(events);
        }
        Ok(())
    }

    /// Finishes without flushing the events to stable storage: for runs made from an input that
    /// stays where it is (an import), which can be made again. A tail lost to a crash is still
    /// detected: the manifest records how many events were written.
    pub fn skip_final_sync(&mut self) {
        self.final_sync = false;
    }

    /// Gathers the run catalogue's headline figures from the blocks given to
    /// [`Recording::write_block`] (keeping up to `max_durations` durations, 8 bytes each), so that
    /// finishing does not read the events back. Past that many the events are read back as usual.
    /// For sources that write every block themselves (imports); a live run's [`Recording::pump`]
    /// does not gather them.
    pub fn gather_headline(&mut self, max_durations: usize) {
        self.headline = Some(Headline::new(max_durations));
    }

    /// [`Recording::write_block`] with each event's parameters (`params[i]` for `events[i]`, or
    /// empty), written in the same block write.
    pub fn write_block_with_params(
        &mut self,
        events: &[Event],
        params: &[EventParams],
    ) -> Result<()> {
        self.writer.write_block_with_params(events, params)?;
        if let Some(h) = &mut self.headline {
            h.add(events);
        }
        Ok(())
    }

    /// Events written so far.
    pub fn events_written(&self) -> u64 {
        self.writer.events_written()
    }

    /// The channel of a live run: session threads get [`Recorder`]s from the [`Sessions`], and this
    /// thread drains the [`Batches`] with [`Recording::pump`]. `capacity` bounds the batches in
    /// flight (a slow disk slows the sessions rather than filling memory).
    pub fn sessions(
        &self,
        clock: &RunClock,
        warmup_end_ns: u64,
        capacity: usize,
    ) -> (Sessions, Batches) {
        let (tx, rx) = sync_channel(capacity);
        (
            Sessions {
                clock: clock.clone(),
                names: self.names.clone(),
                warmup_end_ns,
                tx,
            },
            Batches(rx),
        )
    }

    /// Writes every batch the sessions hand over until all their recorders are gone, calling `f`
    /// for each batch and every `tick`. The first write failure is reported once and returned at
    /// the end; after it, batches are drained and dropped so the sessions never block.
    pub fn pump(
        &mut self,
        batches: Batches,
        tick: Duration,
        mut f: impl FnMut(Pumped<'_>),
    ) -> Option<String> {
        let mut last_tick = Instant::now();
        loop {
            match batches.0.recv_timeout(tick) {
                Ok(batch) => {
                    if self.write_error.is_none() {
                        if let Err(e) = self.writer.write_block(&batch) {
                            let msg = events_message(&e);
                            self.write_error = Some(msg.clone());
                            f(Pumped::WriteFailed(&msg));
                        }
                    }
                    f(Pumped::Batch(&batch));
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if last_tick.elapsed() >= tick {
                last_tick = Instant::now();
                f(Pumped::Tick(CounterSnapshots {
                    counters: &mut self.counters,
                    dir: &self.run.path,
                }));
            }
        }
        self.write_error.clone()
    }

    /// Records (or replaces) one section of run-level counters in `counters.json`, atomically.
    /// Sources call it while the run goes (with `final_counts` false) and at the end.
    pub fn write_counters(&mut self, section: CounterSection) -> Result<()> {
        self.counters.put(section);
        self.counters.write(&self.run.path)
    }

    /// Frees the space reserve (see [`Recording::reserve_space`]) so that the final counters can be
    /// written on a full file system; [`Recording::finish`] does it too.
    pub fn release_space(&mut self) {
        if let Some(path) = self.reserve.take() {
            let _ = std::fs::remove_file(path);
        }
    }

    /// Ends the run: syncs the events (unless [`Recording::skip_final_sync`]), frees the space
    /// reserve, and writes the manifest with the outcome, the end time (now) and the events
    /// written.
    pub fn finish(self, outcome: Outcome, detail: Option<String>) -> Result<RunDir> {
        self.finish_at(outcome, detail, Some(Utc::now()))
    }

    /// [`Recording::finish`] with the end time given (imports take it from the data).
    pub fn finish_at(
        mut self,
        outcome: Outcome,
        detail: Option<String>,
        ended: Option<DateTime<Utc>>,
    ) -> Result<RunDir> {
        self.release_space();
        let mut sync_error = None;
        if self.write_error.is_none() && self.final_sync {
            if let Err(e) = self.writer.sync() {
                sync_error = Some(format!("cannot flush events: {e}"));
            }
        }
        let (outcome, detail) = match sync_error {
            Some(why) if outcome != Outcome::Failed => (Outcome::Failed, Some(why)),
            _ => (outcome, detail),
        };
        let m = &mut self.run.manifest;
        m.ended_utc = ended;
        m.outcome = outcome;
        m.outcome_detail = detail;
        m.events_written = Some(self.writer.events_written());
        let gathered = self.headline.take().map(|h| (h, &self.names));
        self.run.save_manifest_with(gathered)?;
        Ok(self.run)
    }
}

/// The message for a failed event write; a full file system says so, and that what was recorded
/// until then is kept.
fn events_message(e: &Error) -> String {
    let full =
        matches!(e, Error::Io { source, .. } if source.raw_os_error() == Some(28 /* ENOSPC */));
    if full {
        format!(
            "cannot write events: {e}; the file system holding the run directory is full (the \
             events recorded until then are kept)"
        )
    } else {
        format!("cannot write events: {e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::{Counter, CounterValue};
    use crate::manifest::WorkloadInfo;

    /// The run's clock is the monotonic clock: over 50 ms it reads what `Instant` reads,
    /// within the time between the readings (quanta's TSC scale, 30 to 370 ppm off here, put
    /// 1.5 to 18 µs between them).
    #[test]
    fn the_run_clock_keeps_the_monotonic_clocks_time() {
        let c = RunClock::start();
        for _ in 0..3 {
            let a = Instant::now();
            let r0 = c.now_ns();
            let b = Instant::now();
            std::thread::sleep(Duration::from_millis(50));
            let d0 = Instant::now();
            let r1 = c.now_ns();
            let d1 = Instant::now();
            let run = r1 - r0;
            let (inner, outer) = ((d0 - b).as_nanos() as u64, (d1 - a).as_nanos() as u64);
            assert!(inner <= run && run <= outer, "{inner} <= {run} <= {outer}");
        }
    }

    /// The catalogue's headline gathered while writing equals the one read back from the files,
    /// and past its limit of durations it is read back.
    #[test]
    fn a_gathered_headline_is_the_one_read_back() {
        for cap in [usize::MAX, 10, 0] {
            let dir = tempfile::tempdir().unwrap();
            let out = dir.path().join("run");
            let mut rec =
                Recording::begin(&out, Manifest::new("w", WorkloadInfo::default(), 2)).unwrap();
            let (a, b) = (rec.names().intern("a"), rec.names().intern("b"));
            let err = rec.names().intern_outcome("pg:40001");
            let mut gathered = crate::run::Headline::new(cap);
            for k in 0..40u64 {
                let block: Vec<Event> = (0..25u64)
                    .map(|i| Event {
                        session: (i % 2) as u32,
                        name: if i % 3 == 0 { b } else { a },
                        start_ns: 1_000 * (k * 25 + i),
                        duration_ns: (k * 7919 + i * 104_729) % 50_000,
                        outcome: if i == 7 { err } else { 0 },
                        flags: if k == 0 {
                            crate::event::EVENT_WARMUP
                        } else {
                            0
                        },
                        ..Event::default()
                    })
                    .collect();
                gathered.add(&block);
                rec.write_block(&block).unwrap();
            }
            let names = rec.names().clone();
            let run = rec.finish(Outcome::Complete, None).unwrap();
            let read_back = crate::run::catalog_entry(&run).unwrap();
            assert!(
                read_back.p50_ms.is_some() && read_back.ops == Some(624),
                "{read_back:?}"
            );
            assert_eq!(gathered.overflowed, cap < 1000);
            let from_gathered = crate::run::catalog_entry_with(&run, Some((gathered, &names)));
            assert_eq!(from_gathered.unwrap(), read_back, "cap {cap}");
        }
    }

    #[test]
    fn a_threaded_recording_round_trips_and_redacts() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        let mut m = Manifest::new("workload", WorkloadInfo::default(), 3);
        m.command_line = vec!["dbscope".into(), "postgres://u:secret@h/db".into()];
        let mut rec = Recording::begin(&out, m).unwrap();
        let on_disk = Manifest::read(&out.join("manifest.json")).unwrap();
        assert_eq!(on_disk.outcome, Outcome::Running);
        assert_eq!(on_disk.command_line[1], "postgres://u:***@h/db");

        let clock = rec.start_clock().unwrap();
        let (sessions, batches) = rec.sessions(&clock, 0, 4);
        std::thread::scope(|s| {
            for i in 0..3u32 {
                let mut r = sessions.recorder(i);
                s.spawn(move || {
                    let name = r.name("op");
                    for k in 0..5000u64 {
                        r.ok(name, k, k + 1, 1);
                    }
                });
            }
            drop(sessions);
            let mut seen = 0usize;
            let err = rec.pump(batches, Duration::from_millis(10), |p| {
                if let Pumped::Batch(b) = p {
                    seen += b.len();
                }
            });
            assert_eq!(err, None);
            assert_eq!(seen, 15_000);
        });
        rec.write_counters(CounterSection {
            key: "demo".into(),
            title: "demo".into(),
            final_counts: true,
            counters: vec![Counter::new("n", "n", CounterValue::Int(7), "")],
            ..CounterSection::default()
        })
        .unwrap();
        let run = rec.finish(Outcome::Complete, None).unwrap();
        let run = RunDir::open(&run.path).unwrap();
        assert_eq!(run.manifest.events_written, Some(15_000));
        assert_eq!(run.manifest.outcome, Outcome::Complete);
        let mut n = 0;
        run.for_each_block(|_, b| n += b.len()).unwrap();
        assert_eq!(n, 15_000);
        let c = run.counters().unwrap();
        assert_eq!(c.sections[0].counters[0].value, CounterValue::Int(7));
    }

    #[test]
    fn the_space_reserve_goes_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        let mut rec =
            Recording::begin(&out, Manifest::new("w", WorkloadInfo::default(), 0)).unwrap();
        rec.reserve_space().unwrap();
        assert!(out.join(RESERVE_FILE).exists());
        rec.finish(Outcome::Interrupted, Some(INTERRUPTED_DETAIL.into()))
            .unwrap();
        assert!(!out.join(RESERVE_FILE).exists());
    }

    #[test]
    fn an_operation_straddling_the_warmup_end_is_flagged_by_its_start() {
        let dir = tempfile::tempdir().unwrap();
        let mut rec = Recording::begin(
            &dir.path().join("run"),
            Manifest::new("w", WorkloadInfo::default(), 1),
        )
        .unwrap();
        let clock = rec.start_clock().unwrap();
        let warmup_end = clock.now_ns() + 20_000_000;
        let (sessions, _batches) = rec.sessions(&clock, warmup_end, 4);
        let mut r = sessions.recorder(0);
        let name = r.name("op");
        r.begin_op();
        let t0 = r.now();
        r.ok(name, t0, t0 + 1, 0);
        std::thread::sleep(Duration::from_millis(30));
        // Same operation, after the warm-up end: still warm-up, as the operation began in it.
        let t1 = r.now();
        assert!(t1 > warmup_end);
        r.ok(name, t1, t1 + 1, 0);
        r.begin_op();
        let t2 = r.now();
        r.ok(name, t2, t2 + 1, 0);
        // Without operations, each event by its own start.
        let mut plain = sessions.recorder(1);
        plain.ok(name, t0, t0 + 1, 0);
        plain.ok(name, t2, t2 + 1, 0);
        let flags: Vec<u16> = r.buf.iter().chain(&plain.buf).map(|e| e.flags).collect();
        assert_eq!(flags, [EVENT_WARMUP, EVENT_WARMUP, 0, EVENT_WARMUP, 0]);
    }

    /// An event that ends before the batch's first one (a workload recording a parent after its
    /// children, or in an order of its own) is kept, not an overflow panic.
    #[test]
    fn an_event_ending_before_the_batchs_first_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut rec = Recording::begin(
            &dir.path().join("run"),
            Manifest::new("w", WorkloadInfo::default(), 1),
        )
        .unwrap();
        let clock = rec.start_clock().unwrap();
        let (sessions, _batches) = rec.sessions(&clock, 0, 4);
        let mut r = sessions.recorder(0);
        let name = r.name("op");
        r.ok(name, 1_000_000, 2_000_000, 0);
        r.ok(name, 10, 20, 0);
        let ends: Vec<u64> = r.buf.iter().map(|e| e.start_ns + e.duration_ns).collect();
        assert_eq!(ends, [2_000_000, 20]);
    }

    #[test]
    fn stop_signal_keeps_the_first_reason() {
        let s = StopSignal::new();
        assert_eq!(s.outcome(), (Outcome::Complete, None));
        s.fail("disk".into());
        s.interrupt();
        s.fail("later".into());
        assert_eq!(s.outcome(), (Outcome::Failed, Some("disk".into())));
    }
}
