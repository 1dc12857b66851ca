//! The run directory and its event files: checksummed blocks appended as a run goes, so a run
//! killed at any moment (SIGKILL included) keeps every complete block.
//!
//! An event file is a sequence of blocks. Each block is a 20-byte header — magic `DSB1`, kind (1 = new
//! names, 2 = events, 3 = event parameters, 4 = packed events), three reserved bytes, record count
//! (u32), payload length (u32), CRC-32 of the payload (u32), all little-endian — followed by the
//! payload. A names block lists `(id u32, len u32, bytes)` for names first used since the previous
//! block; an events block holds fixed 40-byte events (see [`Event::encode`]); a packed events block
//! (format 2.0, written whenever it is the shorter) holds the same events column by column (see
//! `crate::columns`); a parameters block (format 1.1), written just before
//! the events block it belongs to and only when some of its events have parameters, holds one entry
//! per such event (see [`EventParams`]). Readers of format 1.0 skip it as an unknown kind. A torn or damaged block ends the readable part of the file: readers keep
//! everything before it and report what they ignored.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

use crate::catalog::{self, Entry, Rebuilt};
use crate::counters::RunCounters;
use crate::error::{Error, Result};
use crate::event::{Event, EventParams, NameTable};
use crate::manifest::{Manifest, Outcome};
use crate::stats::quantiles_type7_unsorted;
use std::collections::HashMap;

pub use crate::files::{EVENTS_FILE, MANIFEST_FILE};

const MAGIC: &[u8; 4] = b"DSB1";
const KIND_NAMES: u8 = 1;
const KIND_EVENTS: u8 = 2;
const KIND_PARAMS: u8 = 3;
/// Events packed column by column (format 2.0, see [`crate::columns`]).
const KIND_PACKED: u8 = 4;
const HEADER_LEN: usize = 20;
/// Refuse blocks claiming more than this (a damaged length field must not make us allocate gigabytes).
const MAX_PAYLOAD: usize = 256 << 20;

/// Appends blocks of events to an event file.
#[derive(Debug)]
pub struct EventWriter {
    path: PathBuf,
    file: File,
    names: NameTable,
    names_written: usize,
    buf: Vec<u8>,
    /// The packed encoder's columns, kept between blocks.
    scratch: Vec<u64>,
    events_written: u64,
    /// Bytes of complete blocks in the file.
    len: u64,
}

impl EventWriter {
    /// Creates (or truncates) the event file; names come from `names` as they are first used.
    pub fn create(path: &Path, names: NameTable) -> Result<Self> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        Ok(EventWriter {
            path: path.to_owned(),
            file,
            names,
            names_written: 1, // id 0, the empty name, is implicit
            buf: Vec::with_capacity(64 << 10),
            scratch: Vec::new(),
            events_written: 0,
            len: 0,
        })
    }

    /// Appends one block of events (preceded by a names block when new names appeared) with a single
    /// `write` so a crash leaves at most one torn block at the end. A failed write (a full disk) is
    /// cut back to the last complete block, so the file reads cleanly.
    pub fn write_block(&mut self, events: &[Event]) -> Result<()> {
        self.write_block_with_params(events, &[])
    }

    /// [`EventWriter::write_block`] with each event's parameters: `params` is empty or holds one
    /// entry per event; the non-empty ones go in a parameters block before the events, in the same
    /// `write`. Names in them must be interned in the writer's table.
    pub fn write_block_with_params(
        &mut self,
        events: &[Event],
        params: &[EventParams],
    ) -> Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        if !params.is_empty() && params.len() != events.len() {
            return Err(Error::InvalidInput(format!(
                "{} event parameters for {} events",
                params.len(),
                events.len()
            )));
        }
        self.buf.clear();
        let new_names = self.names.since(self.names_written);
        if !new_names.is_empty() {
            let start = self.begin_block(KIND_NAMES, new_names.len());
            for (id, name) in &new_names {
                self.buf.extend_from_slice(&id.to_le_bytes());
                self.buf
                    .extend_from_slice(&(name.len() as u32).to_le_bytes());
                self.buf.extend_from_slice(name.as_bytes());
            }
            self.end_block(start);
            self.names_written += new_names.len();
        }
        let with_params = params.iter().filter(|p| !p.is_empty()).count();
        if with_params > 0 {
            let start = self.begin_block(KIND_PARAMS, with_params);
            for (i, p) in params.iter().enumerate() {
                if !p.is_empty() {
                    p.encode(i as u32, &mut self.buf);
                }
            }
            self.end_block(start);
        }
        // Packed (a fifth of the bytes, usually); the 40-byte form when packing would not be shorter.
        let start = self.begin_block(KIND_PACKED, events.len());
        if !crate::columns::encode(events, &mut self.buf, &mut self.scratch) {
            self.buf[start + 4] = KIND_EVENTS;
            let at = self.buf.len();
            self.buf.resize(at + events.len() * Event::ENCODED_LEN, 0);
            for (slot, e) in self.buf[at..]
                .chunks_exact_mut(Event::ENCODED_LEN)
                .zip(events)
            {
                e.encode_into(slot.try_into().expect("chunks are ENCODED_LEN long"));
            }
        }
        self.end_block(start);
        if let Err(e) = self.file.write_all(&self.buf) {
            // Part of the buffer may be in the file: cut it, and write the names again next time.
            let _ = self.file.set_len(self.len);
            let _ = std::io::Seek::seek(&mut self.file, std::io::SeekFrom::Start(self.len));
            self.names_written -= new_names.len();
            return Err(Error::io(&self.path, e));
        }
        self.len += self.buf.len() as u64;
        self.events_written += events.len() as u64;
        Ok(())
    }

    /// Events written so far.
    pub fn events_written(&self) -> u64 {
        self.events_written
    }

    /// Flushes file data to stable storage (used at the end of a run, not per block).
    pub fn sync(&mut self) -> Result<()> {
        self.file.sync_data().map_err(|e| Error::io(&self.path, e))
    }

    fn begin_block(&mut self, kind: u8, count: usize) -> usize {
        let start = self.buf.len();
        self.buf.extend_from_slice(MAGIC);
        self.buf.extend_from_slice(&[kind, 0, 0, 0]);
        self.buf.extend_from_slice(&(count as u32).to_le_bytes());
        self.buf.extend_from_slice(&[0; 8]); // length and CRC, filled in by end_block
        start
    }

    fn end_block(&mut self, start: usize) {
        let payload = &self.buf[start + HEADER_LEN..];
        let len = payload.len() as u32;
        let crc = crc32fast::hash(payload);
        self.buf[start + 12..start + 16].copy_from_slice(&len.to_le_bytes());
        self.buf[start + 16..start + 20].copy_from_slice(&crc.to_le_bytes());
    }
}

/// What the reader found at the end of an event file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TailState {
    /// Complete blocks read.
    pub blocks: u64,
    /// Events read.
    pub events: u64,
    /// Bytes after the last good block (a torn write from a crash, or damage), ignored.
    pub ignored_bytes: u64,
    /// Why reading stopped early, when it did.
    pub problem: Option<String>,
}

/// Reads an event file block by block, in bounded memory.
#[derive(Debug)]
pub struct EventReader {
    path: PathBuf,
    input: BufReader<File>,
    names: NameTable,
    offset: u64,
    file_len: u64,
    tail: TailState,
    done: bool,
    payload: Vec<u8>,
    /// Parameters read for the next events block, by index in it.
    pending_params: Vec<(u32, EventParams)>,
    /// Parameters of the events of the last block returned (empty when it had none).
    params: Vec<EventParams>,
}

impl EventReader {
    /// Opens an event file.
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let file_len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        Ok(EventReader {
            path: path.to_owned(),
            input: BufReader::with_capacity(1 << 20, file),
            names: NameTable::new(),
            offset: 0,
            file_len,
            tail: TailState::default(),
            done: false,
            payload: Vec::new(),
            pending_params: Vec::new(),
            params: Vec::new(),
        })
    }

    /// Names read so far (complete once the file has been read to its end).
    pub fn names(&self) -> &NameTable {
        &self.names
    }

    /// The parameters of the events of the block [`EventReader::next_block`] returned last: one per
    /// event (empty ones for events without), or nothing at all when none of them has any (every
    /// block of a run written before format 1.1).
    pub fn params(&self) -> &[EventParams] {
        &self.params
    }

    /// What was read, and whether anything at the end was ignored.
    pub fn tail(&self) -> &TailState {
        &self.tail
    }

    /// Reads the next block of events into `out` (cleared first). Returns false at the end of the
    /// readable data. A torn or damaged block is not an error: it ends the data and is recorded in
    /// [`EventReader::tail`].
    pub fn next_block(&mut self, out: &mut Vec<Event>) -> Result<bool> {
        out.clear();
        self.params.clear();
        while !self.done {
            let mut header = [0u8; HEADER_LEN];
            match read_full(&mut self.input, &mut header).map_err(|e| Error::io(&self.path, e))? {
                0 => {
                    self.done = true;
                    break;
                }
                n if n < HEADER_LEN => {
                    self.stop(format!("torn block header at byte {}", self.offset));
                    break;
                }
                _ => {}
            }
            if &header[0..4] != MAGIC {
                self.stop(format!("no block magic at byte {}", self.offset));
                break;
            }
            let kind = header[4];
            let count = u32::from_le_bytes(header[8..12].try_into().expect("4")) as usize;
            let len = u32::from_le_bytes(header[12..16].try_into().expect("4")) as usize;
            let crc = u32::from_le_bytes(header[16..20].try_into().expect("4"));
            if len > MAX_PAYLOAD || self.offset + (HEADER_LEN + len) as u64 > self.file_len {
                self.stop(format!(
                    "torn block at byte {} (claims {len} bytes)",
                    self.offset
                ));
                break;
            }
            self.payload.resize(len, 0);
            let got = read_full(&mut self.input, &mut self.payload)
                .map_err(|e| Error::io(&self.path, e))?;
            if got < len {
                self.stop(format!("torn block at byte {}", self.offset));
                break;
            }
            if crc32fast::hash(&self.payload) != crc {
                self.stop(format!(
                    "checksum mismatch in block at byte {}",
                    self.offset
                ));
                break;
            }
            match kind {
                KIND_NAMES => {
                    if let Err(msg) = self.decode_names(count) {
                        self.stop(format!("bad names block at byte {}: {msg}", self.offset));
                        break;
                    }
                }
                KIND_PARAMS => {
                    if let Err(msg) = self.decode_params(count) {
                        self.stop(format!(
                            "bad parameters block at byte {}: {msg}",
                            self.offset
                        ));
                        break;
                    }
                }
                KIND_EVENTS | KIND_PACKED => {
                    if kind == KIND_EVENTS && count * Event::ENCODED_LEN != len {
                        self.stop(format!(
                            "events block at byte {} has {len} bytes for {count} events",
                            self.offset
                        ));
                        break;
                    }
                    if kind == KIND_PACKED && count > MAX_PAYLOAD / Event::ENCODED_LEN {
                        self.stop(format!(
                            "packed events block at byte {} claims {count} events",
                            self.offset
                        ));
                        break;
                    }
                    if let Some(&(i, _)) = self
                        .pending_params
                        .iter()
                        .find(|(i, _)| *i as usize >= count)
                    {
                        self.stop(format!(
                            "parameters for event {i} of an events block of {count} at byte {}",
                            self.offset
                        ));
                        break;
                    }
                    if !self.pending_params.is_empty() {
                        self.params.resize(count, EventParams::default());
                        for (i, p) in self.pending_params.drain(..) {
                            self.params[i as usize] = p;
                        }
                    }
                    if kind == KIND_EVENTS {
                        out.extend(
                            self.payload
                                .chunks_exact(Event::ENCODED_LEN)
                                .map(Event::decode),
                        );
                    } else if let Err(msg) = crate::columns::decode(&self.payload, count, out) {
                        self.stop(format!(
                            "bad packed events block at byte {}: {msg}",
                            self.offset
                        ));
                        break;
                    }
                }
                // Unknown kinds come from a newer minor version: skip them, keep reading.
                _ => {}
            }
            self.offset += (HEADER_LEN + len) as u64;
            self.tail.blocks += 1;
            if kind == KIND_EVENTS || kind == KIND_PACKED {
                self.tail.events += count as u64;
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn decode_params(&mut self, count: usize) -> std::result::Result<(), String> {
        self.pending_params.clear();
        let mut at = 0;
        for _ in 0..count {
            let (i, p, used) = EventParams::decode(&self.payload[at..])?;
            self.pending_params.push((i, p));
            at += used;
        }
        if at != self.payload.len() {
            return Err(format!(
                "{} bytes after the last entry",
                self.payload.len() - at
            ));
        }
        Ok(())
    }

    fn decode_names(&mut self, count: usize) -> std::result::Result<(), String> {
        let p = &self.payload;
        let mut i = 0;
        for _ in 0..count {
            if i + 8 > p.len() {
                return Err("truncated entry".into());
            }
            let id = u32::from_le_bytes(p[i..i + 4].try_into().expect("4"));
            let n = u32::from_le_bytes(p[i + 4..i + 8].try_into().expect("4")) as usize;
            i += 8;
            if i + n > p.len() {
                return Err("name runs past the block".into());
            }
            let name = String::from_utf8_lossy(&p[i..i + n]);
            self.names.insert_at(id, &name);
            i += n;
        }
        Ok(())
    }

    fn stop(&mut self, problem: String) {
        self.done = true;
        self.tail.ignored_bytes = self.file_len.saturating_sub(self.offset);
        self.tail.problem = Some(problem);
    }
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// A run directory: its manifest and event files.
#[derive(Clone, Debug)]
pub struct RunDir {
    /// The directory.
    pub path: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
}

impl RunDir {
    /// Opens an existing run, checking that it is one and that this build can read its format.
    pub fn open(path: &Path) -> Result<Self> {
        let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        if !meta.is_dir() {
            return Err(Error::NotARun(path.to_owned()));
        }
        let mpath = path.join(MANIFEST_FILE);
        if !mpath.exists() {
            return Err(Error::NotARun(path.to_owned()));
        }
        let manifest = Manifest::read(&mpath)?;
        Ok(RunDir {
            path: path.to_owned(),
            manifest,
        })
    }

    /// Creates a new run directory (which must not already hold a run) and writes its first manifest.
    pub fn create(path: &Path, manifest: Manifest) -> Result<Self> {
        // Other files may be there (the default SQLite database lives in the run directory), but
        // never overwrite another run.
        if path.join(MANIFEST_FILE).exists() || path.join(EVENTS_FILE).exists() {
            return Err(Error::RunExists(path.to_owned()));
        }
        std::fs::create_dir_all(path).map_err(|e| Error::io(path, e))?;
        let run = RunDir {
            path: path.to_owned(),
            manifest,
        };
        run.save_manifest()?;
        Ok(run)
    }

    /// Rewrites the manifest (atomically) and enters the run in its runs directory's catalogue
    /// ([`crate::catalog`]): every source saves its manifest when a run starts and when it ends, so
    /// this is the one place that keeps `dbscope history` up to date. A catalogue that cannot be
    /// written is reported on stderr, never fails the run (`history --rebuild` recreates it).
    pub fn save_manifest(&self) -> Result<()> {
        self.save_manifest_with(None)
    }

    /// [`RunDir::save_manifest`] with the catalogue's headline figures already gathered from the
    /// events as they were written (they are read back from the files otherwise).
    pub(crate) fn save_manifest_with(
        &self,
        gathered: Option<(Headline, &NameTable)>,
    ) -> Result<()> {
        self.manifest.write(&self.path.join(MANIFEST_FILE))?;
        if let Err(e) = catalog_record_with(self, gathered) {
            eprintln!(
                "dbscope: warning: run {} not entered in the run catalogue: {e}",
                self.path.display()
            );
        }
        Ok(())
    }

    /// The run-level counters (none when the run has no `counters.json`).
    pub fn counters(&self) -> Result<RunCounters> {
        RunCounters::read(&self.path)
    }

    /// Opens a reader on each event file in turn.
    pub fn event_readers(&self) -> Result<Vec<EventReader>> {
        self.manifest
            .event_files
            .iter()
            .map(|f| EventReader::open(&self.path.join(f)))
            .collect()
    }

    /// True when the run never recorded an end: it is still going or was killed.
    pub fn is_incomplete(&self) -> bool {
        self.manifest.outcome == Outcome::Running
    }

    /// Why `read` events are fewer than the run recorded writing (a block skipped as unknown, a
    /// file cut at a block boundary: they read cleanly, only the count shows the loss); `None`
    /// when all were read or the run recorded no count.
    pub fn unread_events(&self, read: u64) -> Option<String> {
        let written = self.manifest.events_written?;
        (read < written).then(|| {
            format!("the manifest records {written} events written but only {read} could be read")
        })
    }

    /// Reads every event of the run, calling `f` per block; returns the names and what was found at
    /// the end of the files. Memory stays bounded by one block.
    pub fn for_each_block(
        &self,
        mut f: impl FnMut(&NameTable, &[Event]),
    ) -> Result<(NameTable, TailState)> {
        let mut total = TailState::default();
        let mut names = NameTable::new();
        let mut block = Vec::new();
        for mut reader in self.event_readers()? {
            while reader.next_block(&mut block)? {
                f(reader.names(), &block);
            }
            let t = reader.tail().clone();
            total.blocks += t.blocks;
            total.events += t.events;
            total.ignored_bytes += t.ignored_bytes;
            if total.problem.is_none() {
                total.problem = t.problem;
            }
            names = reader.names().clone();
        }
        Ok((names, total))
    }
}

// The run catalogue's entries: crate::catalog stores them; computing one reads the run.

/// Computes a run's catalogue entry from its manifest (and, once it has ended, its events).
pub fn catalog_entry(run: &RunDir) -> Result<Entry> {
    catalog_entry_with(run, None)
}

/// [`catalog_entry`], with the headline figures from `gathered` when given and complete.
pub(crate) fn catalog_entry_with(
    run: &RunDir,
    gathered: Option<(Headline, &NameTable)>,
) -> Result<Entry> {
    let m = &run.manifest;
    let dir = run
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| run.path.display().to_string());
    let (target, server_version, settings) = match &m.target {
        Some(t) => (
            t.kind.clone(),
            t.server_version.clone(),
            t.settings_requested
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(","),
        ),
        None => (String::new(), String::new(), String::new()),
    };
    let mut e = Entry {
        dir,
        started_utc: m.started_utc.to_rfc3339(),
        ended_utc: m.ended_utc.map(|t| t.to_rfc3339()),
        source: m.source.clone(),
        workload: m.workload.name.clone(),
        target,
        server_version,
        settings,
        outcome: m.outcome.as_str().to_string(),
        headline_event: None,
        ops: None,
        errors: None,
        throughput: None,
        p50_ms: None,
        p99_ms: None,
    };
    if m.outcome != Outcome::Running {
        match gathered {
            Some((h, names)) if !h.overflowed => h.apply(run, names, &mut e),
            _ => {
                let mut h = Headline::new(usize::MAX);
                let (names, _tail) = run.for_each_block(|_, block| h.add(block))?;
                h.apply(run, &names, &mut e);
            }
        }
    }
    Ok(e)
}

/// Per event name: how many events, and the durations of those that did not fail. Names are
/// dense small numbers in a run's files, so a vector indexed by name does the counting (a hash
/// per event cost a fifth of `import csv`); a name beyond it goes to a map.
#[derive(Debug, Default)]
struct PerName {
    dense: Vec<(u64, Vec<u64>)>,
    sparse: HashMap<u32, (u64, Vec<u64>)>,
}

impl PerName {
    const DENSE: u32 = 1 << 16;

    fn slot(&mut self, id: u32) -> &mut (u64, Vec<u64>) {
        if id < Self::DENSE {
            let i = id as usize;
            if self.dense.len() <= i {
                self.dense.resize_with(i + 1, Default::default);
            }
            &mut self.dense[i]
        } else {
            self.sparse.entry(id).or_default()
        }
    }

    fn drop_durations(&mut self) {
        for (_, d) in self.dense.iter_mut().chain(self.sparse.values_mut()) {
            *d = Vec::new();
        }
    }

    fn counts(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        let dense = self.dense.iter().enumerate();
        dense
            .filter(|(_, (n, _))| *n > 0)
            .map(|(i, (n, _))| (i as u32, *n))
            .chain(self.sparse.iter().map(|(&id, (n, _))| (id, *n)))
    }
}

/// A run's headline figures for the catalogue, gathered block by block: events per name, errors,
/// the time span, and the durations of the events that did not fail (up to a number of them).
#[derive(Debug)]
pub(crate) struct Headline {
    per: PerName,
    errors: u64,
    oks: u64,
    first: u64,
    last: u64,
    /// Durations kept, and how many may be.
    kept: usize,
    cap: usize,
    /// More durations than `cap`: the figures must be read from the files instead.
    pub(crate) overflowed: bool,
}

impl Headline {
    /// Gathers up to `cap` durations.
    pub(crate) fn new(cap: usize) -> Self {
        Headline {
            per: PerName::default(),
            errors: 0,
            oks: 0,
            first: u64::MAX,
            last: 0,
            kept: 0,
            cap,
            overflowed: false,
        }
    }

    pub(crate) fn add(&mut self, block: &[Event]) {
        for ev in block.iter().filter(|ev| !ev.is_warmup()) {
            let (n, ok) = self.per.slot(ev.name);
            *n += 1;
            self.first = self.first.min(ev.start_ns);
            self.last = self.last.max(ev.start_ns.saturating_add(ev.duration_ns));
            if ev.is_error() {
                self.errors += 1;
            } else {
                self.oks += 1;
                if self.kept < self.cap {
                    ok.push(ev.duration_ns);
                    self.kept += 1;
                } else if !self.overflowed {
                    self.overflowed = true;
                    self.per.drop_durations();
                }
            }
        }
    }

    fn apply(mut self, run: &RunDir, names: &NameTable, e: &mut Entry) {
        // The source's own headline event when it names one that occurred, else the most frequent.
        let named = run
            .manifest
            .headline_event
            .as_deref()
            .and_then(|h| self.per.counts().find(|(id, _)| names.name(*id) == h));
        let Some((top, n)) = named.or_else(|| {
            self.per
                .counts()
                .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
        }) else {
            e.ops = Some(0);
            e.errors = Some(0);
            return;
        };
        e.headline_event = Some(names.name(top));
        e.ops = Some(n as i64);
        e.errors = Some(self.errors as i64);
        if self.last > self.first {
            e.throughput = Some(self.oks as f64 / ((self.last - self.first) as f64 / 1e9));
        }
        let d = &mut self.per.slot(top).1;
        if !d.is_empty() {
            let q = quantiles_type7_unsorted(d, &[0.5, 0.99]);
            e.p50_ms = Some(q[0] / 1e6);
            e.p99_ms = Some(q[1] / 1e6);
        }
    }
}

/// Enters (or replaces) a run in its runs directory's catalogue.
pub fn catalog_record(run: &RunDir) -> Result<()> {
    catalog_record_with(run, None)
}

fn catalog_record_with(run: &RunDir, gathered: Option<(Headline, &NameTable)>) -> Result<()> {
    let entry = catalog_entry_with(run, gathered)?;
    let settings = run
        .manifest
        .target
        .as_ref()
        .map(|t| t.settings_requested.clone())
        .unwrap_or_default();
    let mut conn = catalog::open(&catalog::runs_dir_of(&run.path))?;
    catalog::put(&mut conn, &run.path, &entry, &settings)
}

/// Takes a run that a source removed again (nothing of it is kept, e.g. a failed import) out of
/// its runs directory's catalogue, where its first manifest entered it as `running`. A catalogue
/// that cannot be written is reported, as in [`RunDir::save_manifest`].
pub fn catalog_forget(run: &Path) {
    let Some(name) = run.file_name() else { return };
    if let Err(e) = catalog::forget(&catalog::runs_dir_of(run), &name.to_string_lossy()) {
        eprintln!(
            "dbscope: warning: run {} not taken out of the run catalogue: {e}",
            run.display()
        );
    }
}

/// Deletes a runs directory's catalogue and recreates it from every run directory's manifest.
pub fn rebuild_catalog(runs: &Path) -> Result<Rebuilt> {
    catalog::remove(runs)?;
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(runs)
        .map_err(|e| Error::io(runs, e))?
        .filter_map(|d| d.ok().map(|d| d.path()))
        .filter(|p| p.join(MANIFEST_FILE).is_file())
        .collect();
    dirs.sort();
    let mut out = Rebuilt::default();
    let mut entries = Vec::new();
    for d in dirs {
        match RunDir::open(&d).and_then(|r| Ok((catalog_entry(&r)?, r))) {
            Ok((e, r)) => {
                let s = r
                    .manifest
                    .target
                    .as_ref()
                    .map(|t| t.settings_requested.clone())
                    .unwrap_or_default();
                entries.push((e, s));
                out.runs += 1;
            }
            Err(err) => out.unreadable.push(format!("{}: {err}", d.display())),
        }
    }
    catalog::put_all(runs, &entries)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::WorkloadInfo;

    fn ev(name: u32, i: u64) -> Event {
        Event {
            session: (i % 3) as u32,
            name,
            start_ns: i * 1000,
            duration_ns: 10 + i,
            ..Event::default()
        }
    }

    fn write_run(dir: &Path, blocks: u64, per_block: u64) -> RunDir {
        let run =
            RunDir::create(dir, Manifest::new("workload", WorkloadInfo::default(), 1)).unwrap();
        let names = NameTable::new();
        let mut w = EventWriter::create(&dir.join(EVENTS_FILE), names.clone()).unwrap();
        for b in 0..blocks {
            let id = names.intern(if b % 2 == 0 { "commit" } else { "update" });
            let evs: Vec<Event> = (0..per_block).map(|i| ev(id, b * per_block + i)).collect();
            w.write_block(&evs).unwrap();
        }
        run
    }

    /// Each block of an event file's bytes: its kind, its record count and the byte it ends at.
    fn block_list(bytes: &[u8]) -> Vec<(u8, usize, usize)> {
        let (mut at, mut list) = (0, Vec::new());
        while at < bytes.len() {
            let word = |i: usize| u32::from_le_bytes(bytes[at + i..at + i + 4].try_into().unwrap());
            let (kind, count, len) = (bytes[at + 4], word(8) as usize, word(12) as usize);
            at += HEADER_LEN + len;
            list.push((kind, count, at));
        }
        list
    }

    /// Format 1.x files hold 40-byte events blocks only; a 2.0 reader reads them, interleaved
    /// with packed blocks as a 2.0 writer leaves them, event for event.
    #[test]
    fn forty_byte_blocks_of_format_1_read_beside_packed_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(EVENTS_FILE);
        let names = NameTable::new();
        let id = names.intern("commit");
        let mut w = EventWriter::create(&path, names.clone()).unwrap();
        let packed: Vec<Event> = (0..500).map(|i| ev(id, i)).collect();
        w.write_block(&packed).unwrap();
        drop(w);
        let mut bytes = std::fs::read(&path).unwrap();
        let kinds = |b: &[u8]| block_list(b).iter().map(|x| x.0).collect::<Vec<_>>();
        assert_eq!(kinds(&bytes), [KIND_NAMES, KIND_PACKED]);
        // A block as format 1.x wrote it, appended by hand.
        let plain: Vec<Event> = (500..900).map(|i| ev(id, i)).collect();
        let mut payload = Vec::new();
        for e in &plain {
            e.encode(&mut payload);
        }
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&[KIND_EVENTS, 0, 0, 0]);
        bytes.extend_from_slice(&(plain.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        bytes.extend_from_slice(&payload);
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(kinds(&bytes), [KIND_NAMES, KIND_PACKED, KIND_EVENTS]);
        let mut r = EventReader::open(&path).unwrap();
        let (mut all, mut block) = (Vec::new(), Vec::new());
        while r.next_block(&mut block).unwrap() {
            all.extend_from_slice(&block);
        }
        assert_eq!(all, [packed, plain].concat());
        assert_eq!(r.tail().events, 900);
        assert!(r.tail().problem.is_none());
        // Packed, the 500 events took a fraction of their 40 bytes each.
        assert!(bytes.len() < 500 * 10 + 400 * Event::ENCODED_LEN + 200);
    }

    #[test]
    fn blocks_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let run = write_run(dir.path(), 5, 100);
        let mut seen = Vec::new();
        let (names, tail) = run
            .for_each_block(|_, evs| seen.extend_from_slice(evs))
            .unwrap();
        assert_eq!(seen.len(), 500);
        assert_eq!(tail.events, 500);
        assert_eq!(tail.problem, None);
        assert_eq!(names.name(seen[0].name), "commit");
        assert_eq!(names.name(seen[150].name), "update");
        assert_eq!(seen[499], ev(seen[499].name, 499));
    }

    /// Format 1.1: parameters go in their own block before the events; a block without them
    /// (as every block of a 1.0 run) reads with none, and a reader that skips the new kind (as a
    /// 1.0 reader does) reads the same events.
    #[test]
    fn event_params_round_trip_and_blocks_without_them_read_as_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(EVENTS_FILE);
        let names = NameTable::new();
        let mut w = EventWriter::create(&path, names.clone()).unwrap();
        let id = names.intern("db file sequential read");
        let file = names.intern("file#");
        let evs: Vec<Event> = (0..4).map(|i| ev(id, i)).collect();
        let mut params = vec![EventParams::default(); 4];
        params[1] = EventParams {
            obj: Some(5678),
            p: [Some(4), Some(123), None],
            p_names: [file, 0, 0],
        };
        params[3].obj = Some(-1);
        w.write_block(&evs).unwrap();
        w.write_block_with_params(&evs, &params).unwrap();
        w.write_block_with_params(&evs, &[EventParams::default(); 4])
            .unwrap();
        assert!(w.write_block_with_params(&evs, &params[..2]).is_err());
        let mut r = EventReader::open(&path).unwrap();
        let mut out = Vec::new();
        let mut got = Vec::new();
        while r.next_block(&mut out).unwrap() {
            assert_eq!(out, evs);
            got.push(r.params().to_vec());
        }
        assert_eq!(got, [vec![], params, vec![]]);
        assert_eq!(r.names().name(file), "file#");
        assert_eq!(r.tail().events, 12);

        // The same file without its parameters block is what a 1.0 reader sees: same events.
        let bytes = std::fs::read(&path).unwrap();
        let mut stripped = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let len = u32::from_le_bytes(bytes[at + 12..at + 16].try_into().unwrap()) as usize;
            if bytes[at + 4] != KIND_PARAMS {
                stripped.extend_from_slice(&bytes[at..at + HEADER_LEN + len]);
            }
            at += HEADER_LEN + len;
        }
        assert!(stripped.len() < bytes.len());
        std::fs::write(&path, &stripped).unwrap();
        let mut r = EventReader::open(&path).unwrap();
        let mut n = 0;
        while r.next_block(&mut out).unwrap() {
            assert_eq!(out, evs);
            assert!(r.params().is_empty());
            n += 1;
        }
        assert_eq!((n, r.tail().problem.clone()), (3, None));
    }

    #[test]
    fn damaged_params_block_is_reported_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(EVENTS_FILE);
        let names = NameTable::new();
        let mut w = EventWriter::create(&path, names.clone()).unwrap();
        let evs = [ev(names.intern("x"), 0)];
        w.write_block(&evs).unwrap();
        let params = [EventParams {
            obj: Some(1),
            ..EventParams::default()
        }];
        w.write_block_with_params(&evs, &params).unwrap();
        // The second block's parameter entry claims event 9 of a block of 1 (CRC fixed up).
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() - (HEADER_LEN + Event::ENCODED_LEN) - (HEADER_LEN + 13);
        assert_eq!(bytes[at + 4], KIND_PARAMS);
        bytes[at + HEADER_LEN] = 9;
        let crc = crc32fast::hash(&bytes[at + HEADER_LEN..at + HEADER_LEN + 13]);
        bytes[at + 16..at + 20].copy_from_slice(&crc.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let mut r = EventReader::open(&path).unwrap();
        let mut out = Vec::new();
        assert!(r.next_block(&mut out).unwrap());
        assert!(!r.next_block(&mut out).unwrap());
        let problem = r.tail().problem.clone().unwrap();
        assert!(problem.contains("parameters for event 9"), "{problem}");
    }

    #[test]
    fn torn_tail_keeps_complete_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let run = write_run(dir.path(), 4, 50);
        let path = dir.path().join(EVENTS_FILE);
        let len = std::fs::metadata(&path).unwrap().len();
        // Cut in the middle of the last events block, as a SIGKILL during write() could.
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len - 37).unwrap();
        let mut n = 0;
        let (_, tail) = run.for_each_block(|_, evs| n += evs.len()).unwrap();
        assert_eq!(n, 150);
        assert!(tail.problem.unwrap().contains("torn block"));
        assert!(tail.ignored_bytes > 0);
    }

    /// Issue 27's standing property for the event file: cut at every offset of its last write
    /// (a names, a parameters and an events block) and at random offsets before, a reader reads
    /// exactly the events of the blocks complete before the cut — never part of a block — and
    /// says at which byte the torn part starts and how many bytes it ignored.
    #[test]
    fn cut_at_every_offset_of_the_last_write_and_at_random_offsets_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(EVENTS_FILE);
        let names = NameTable::new();
        let mut w = EventWriter::create(&path, names.clone()).unwrap();
        let mut last_write = 0;
        for b in 0..12u64 {
            let id = names.intern(&format!("event {b}"));
            let evs: Vec<Event> = (0..(b * 7 % 13 + 1)).map(|i| ev(id, b * 100 + i)).collect();
            last_write = std::fs::metadata(&path).unwrap().len() as usize;
            if b % 3 == 2 {
                let params: Vec<EventParams> = (0..evs.len())
                    .map(|i| EventParams {
                        obj: (i % 2 == 0).then_some(i as i64),
                        ..EventParams::default()
                    })
                    .collect();
                w.write_block_with_params(&evs, &params).unwrap();
            } else {
                w.write_block(&evs).unwrap();
            }
        }
        let bytes = std::fs::read(&path).unwrap();
        // Block ends and the events complete at each.
        let mut ends = vec![(0usize, 0usize)];
        let mut events = 0;
        for (kind, count, end) in block_list(&bytes) {
            if kind == KIND_EVENTS || kind == KIND_PACKED {
                events += count;
            }
            ends.push((end, events));
        }
        assert_eq!(ends.last().unwrap().0, bytes.len());
        assert!(
            ends.iter().filter(|(e, _)| *e > last_write).count() == 3,
            "the last write is a names, a parameters and an events block"
        );
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let random = (0..300).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % last_write as u64) as usize
        });
        let cut_file = dir.path().join("cut.dsev");
        for cut in random.chain(last_write..bytes.len()) {
            std::fs::write(&cut_file, &bytes[..cut]).unwrap();
            let (complete, want) = *ends.iter().rev().find(|(e, _)| *e <= cut).unwrap();
            let mut r = EventReader::open(&cut_file).unwrap();
            let mut got = Vec::new();
            let mut block = Vec::new();
            while r.next_block(&mut block).unwrap() {
                got.extend(
                    block
                        .iter()
                        .map(|e| (r.names().name(e.name).to_string(), e.start_ns)),
                );
            }
            assert_eq!(got.len(), want, "cut at {cut}");
            assert_eq!(r.tail().events as usize, want, "cut at {cut}");
            assert_eq!(
                r.tail().ignored_bytes as usize,
                cut - complete,
                "cut at {cut}"
            );
            match &r.tail().problem {
                None => assert_eq!(cut, complete, "cut at {cut}: a torn block unreported"),
                Some(p) => assert!(
                    cut > complete && p.contains(&format!("at byte {complete}")),
                    "cut at {cut}: {p}"
                ),
            }
            // What was read is the start of the file's events, names and all.
            for (name, start) in &got {
                assert_eq!(name, &format!("event {}", start / 100_000), "cut at {cut}");
            }
        }
    }

    #[test]
    fn damaged_block_is_reported_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let run = write_run(dir.path(), 3, 10);
        let path = dir.path().join(EVENTS_FILE);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 5;
        bytes[last] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let mut n = 0;
        let (_, tail) = run.for_each_block(|_, evs| n += evs.len()).unwrap();
        assert_eq!(n, 20);
        assert!(tail.problem.unwrap().contains("checksum"));
    }

    #[test]
    fn not_a_run_and_nonempty_out() {
        let dir = tempfile::tempdir().unwrap();
        let err = RunDir::open(dir.path()).unwrap_err().to_string();
        assert!(err.contains("not a dbscope run directory"), "{err}");
        RunDir::create(dir.path(), Manifest::new("w", WorkloadInfo::default(), 0)).unwrap();
        let err = RunDir::create(dir.path(), Manifest::new("w", WorkloadInfo::default(), 0))
            .unwrap_err()
            .to_string();
        assert!(err.contains("already holds a run"), "{err}");
    }
}

#[cfg(test)]
mod catalog_tests {
    use super::*;
    use crate::catalog::*;
    use crate::event::{Event, NameTable, EVENT_WARMUP};
    use crate::files::EVENTS_FILE;
    use crate::manifest::{Manifest, TargetInfo, WorkloadInfo};

    const MS: u64 = 1_000_000;

    /// A run under `runs/NAME` as a source makes one: created (`running`), events written, then
    /// its final manifest saved with `outcome` — or never, when `outcome` is `Running` (killed).
    fn make_run(runs: &Path, name: &str, workload: &str, set: &[(&str, &str)], outcome: Outcome) {
        let mut m = Manifest::new(
            "run",
            WorkloadInfo {
                name: workload.into(),
                ..WorkloadInfo::default()
            },
            1,
        );
        m.target = Some(TargetInfo {
            kind: "sqlite".into(),
            server_version: "3.50.2".into(),
            settings_requested: set
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..TargetInfo::default()
        });
        let mut run = RunDir::create(&runs.join(name), m).unwrap();
        let names = NameTable::new();
        let mut w = EventWriter::create(&run.path.join(EVENTS_FILE), names.clone()).unwrap();
        let q = names.intern("q");
        let connect = names.intern("connect");
        // 100 measured `q`: durations 1..=100 ms, one every 10 ms; 3 warm-up ones (left out);
        // 5 failed `connect`.
        let mut evs: Vec<Event> = (1..=100u64)
            .map(|i| Event {
                name: q,
                start_ns: (i - 1) * 10 * MS,
                duration_ns: i * MS,
                ..Event::default()
            })
            .collect();
        evs.extend((0..3).map(|_| Event {
            name: q,
            duration_ns: 5000 * MS,
            flags: EVENT_WARMUP,
            ..Event::default()
        }));
        evs.extend((0..5).map(|i| Event {
            name: connect,
            start_ns: i * MS,
            duration_ns: MS,
            outcome: 1,
            ..Event::default()
        }));
        w.write_block(&evs).unwrap();
        w.sync().unwrap();
        if outcome != Outcome::Running {
            run.manifest.outcome = outcome;
            run.manifest.ended_utc = Some(chrono::Utc::now());
            run.save_manifest().unwrap();
        }
    }

    #[test]
    fn a_run_is_listed_running_then_with_its_headline_figures_as_r_computes_them() {
        let tmp = tempfile::tempdir().unwrap();
        let runs = tmp.path().join("runs");
        make_run(&runs, "a", "commit", &[], Outcome::Running);
        let e = get(&runs, "a").unwrap().expect("listed as soon as created");
        assert!(e.is_incomplete());
        assert_eq!(e.p99_ms, None);

        make_run(&runs, "b", "commit", &[], Outcome::Complete);
        let e = get(&runs, "b").unwrap().unwrap();
        assert_eq!(e.outcome, "complete");
        assert_eq!(e.headline_event.as_deref(), Some("q"));
        assert_eq!(e.ops, Some(100));
        assert_eq!(e.errors, Some(5));
        // R: quantile(1:100, c(.5, .99)) -> 50.50 99.01
        assert!((e.p50_ms.unwrap() - 50.5).abs() < 1e-9, "{e:?}");
        assert!((e.p99_ms.unwrap() - 99.01).abs() < 1e-9, "{e:?}");
        // 100 successful ops from 0 to the last end, 990 + 100 ms.
        assert!((e.throughput.unwrap() - 100.0 / 1.09).abs() < 1e-9, "{e:?}");
        assert_eq!(e.target, "sqlite");
        assert_eq!(e.server_version, "3.50.2");
    }

    #[test]
    fn rebuild_from_the_manifests_gives_the_same_catalogue() {
        let tmp = tempfile::tempdir().unwrap();
        let runs = tmp.path().to_path_buf();
        make_run(
            &runs,
            "r1",
            "commit",
            &[("synchronous", "off")],
            Outcome::Complete,
        );
        make_run(&runs, "r2", "select", &[], Outcome::Failed);
        make_run(&runs, "r3", "commit", &[], Outcome::Running);
        std::fs::create_dir(runs.join("broken")).unwrap();
        std::fs::write(runs.join("broken").join(MANIFEST_FILE), "{ not json").unwrap();
        let before = list(&runs, &Filter::default()).unwrap();
        assert_eq!(before.len(), 3);

        std::fs::remove_file(runs.join(CATALOG_FILE)).unwrap();
        let r = rebuild_catalog(&runs).unwrap();
        assert_eq!(r.runs, 3);
        assert_eq!(r.unreadable.len(), 1, "{r:?}");
        assert!(r.unreadable[0].contains("broken"), "{r:?}");
        assert_eq!(list(&runs, &Filter::default()).unwrap(), before);
        // Rebuilding over an existing catalogue is the same too.
        rebuild_catalog(&runs).unwrap();
        assert_eq!(list(&runs, &Filter::default()).unwrap(), before);
    }

    /// Baselines are the user's record (the baselines file): a rebuilt catalogue mirrors them
    /// again, and `--baseline NAME` lists a baseline's runs.
    #[test]
    fn rebuild_keeps_the_baselines_and_a_forgotten_run_is_gone() {
        let tmp = tempfile::tempdir().unwrap();
        let runs = tmp.path().to_path_buf();
        for r in ["r1", "r2", "r3"] {
            make_run(&runs, r, "commit", &[], Outcome::Complete);
        }
        let mut b = crate::baseline::Baselines::default();
        b.baselines.insert(
            "main".into(),
            crate::baseline::Baseline {
                runs: vec!["r3".into(), "r1".into()],
                set_utc: "2026-12-05T08:00:00+00:00".into(),
                workload: "commit".into(),
            },
        );
        crate::catalog::save_baselines(&runs, &b).unwrap();
        let of_main = |runs: &Path| -> Vec<String> {
            let f = Filter {
                baseline: Some("main".into()),
                ..Filter::default()
            };
            list(runs, &f).unwrap().into_iter().map(|e| e.dir).collect()
        };
        assert_eq!(of_main(&runs), ["r1", "r3"]);
        let members = crate::catalog::baseline_members(&runs).unwrap();
        let pair = |d: &str| ("main".to_string(), d.to_string());
        assert_eq!(members, [pair("r3"), pair("r1")], "in the order given");
        std::fs::remove_file(runs.join(CATALOG_FILE)).unwrap();
        rebuild_catalog(&runs).unwrap();
        assert_eq!(crate::catalog::baseline_members(&runs).unwrap(), members);
        assert_eq!(of_main(&runs), ["r1", "r3"]);

        crate::catalog::forget(&runs, "r2").unwrap();
        let all: Vec<String> = list(&runs, &Filter::default())
            .unwrap()
            .into_iter()
            .map(|e| e.dir)
            .collect();
        assert_eq!(all, ["r1", "r3"]);
    }

    #[test]
    fn filters_select_by_workload_target_time_and_setting() {
        let tmp = tempfile::tempdir().unwrap();
        let runs = tmp.path().to_path_buf();
        make_run(
            &runs,
            "r1",
            "commit",
            &[("synchronous", "off")],
            Outcome::Complete,
        );
        make_run(
            &runs,
            "r2",
            "select",
            &[("synchronous", "full")],
            Outcome::Complete,
        );
        make_run(&runs, "r3", "commit", &[], Outcome::Complete);
        let dirs = |f: Filter| -> Vec<String> {
            list(&runs, &f)
                .unwrap()
                .into_iter()
                .map(|e| e.dir)
                .collect()
        };
        let w = Filter {
            workload: Some("commit".into()),
            ..Filter::default()
        };
        assert_eq!(dirs(w), ["r1", "r3"]);
        let s = Filter {
            settings: vec![("synchronous".into(), "off".into())],
            ..Filter::default()
        };
        assert_eq!(dirs(s), ["r1"]);
        let t = Filter {
            target: Some("postgres".into()),
            ..Filter::default()
        };
        assert!(dirs(t).is_empty());
        let since = Filter {
            since: Some("2999-01-01".into()),
            ..Filter::default()
        };
        assert!(dirs(since).is_empty());
        let since = Filter {
            since: Some("2000-01-01".into()),
            ..Filter::default()
        };
        assert_eq!(dirs(since).len(), 3);
    }

    #[test]
    fn sparkline_spans_low_to_high() {
        assert_eq!(sparkline(&[1.0, 2.0, 8.0]), "▁▂█");
        assert_eq!(sparkline(&[3.0, 3.0]), "▄▄");
        assert_eq!(sparkline(&[]), "");
    }
}
