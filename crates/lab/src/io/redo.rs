//! `dbscope io redo`: a log writer on real files. Committer threads queue commit records and wait
//! until they are durable; one log-writer thread does group commit into a preallocated circular log
//! of checksummed redo blocks, on one destination or racing two, and everything is recorded as
//! Oracle names it (`log file sync`, `log file parallel write`, `log file switch`).
//!
//! Besides the manifest and events, a run directory holds `redo.json` ([`RedoCounters`]): the
//! group-commit factor and the race counters, rewritten about four times a second and at the end.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use chrono::Utc;
use dbscope_core::run::EVENTS_FILE;
use dbscope_core::{
    Event, EventWriter, Manifest, NameId, NameTable, Outcome, RunDir, RunnerInfo, TargetInfo,
    WorkloadInfo,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::block::{
    blocks_for, pack_blocks, pack_record, AlignedBuf, LogLayout, Record, WriteHeader, BLOCK_SIZES,
    FLAG_SWITCH, RECORD_HEADER,
};
use super::inject::{Injection, Injector};
use super::sector::{self, SectorSizes, Verdict};
use crate::record::{Recorder, RunClock};
use crate::runner::StopSignal;
use crate::workload::session_seed;

/// Workload name written in the manifest.
pub const WORKLOAD_NAME: &str = "io redo";
/// Side file with the counters, inside the run directory.
pub const COUNTERS_FILE: &str = "redo.json";
/// Event: what a committer waited for its record to be durable.
pub const EV_SYNC: &str = "log file sync";
/// Event: one write (and its sync) to one destination.
pub const EV_WRITE: &str = "log file parallel write";
/// Event: a log switch, timed while the log writer waits for the next group to be reusable.
pub const EV_SWITCH: &str = "log file switch";
/// Event: extra delay added by `--inject`.
pub const EV_INJECT: &str = "injected delay";

/// How each write is made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SyncMode {
    /// The file is opened with O_DSYNC: each write returns once durable.
    Dsync,
    /// A plain write, then fdatasync.
    Fdatasync,
    /// O_DIRECT | O_DSYNC with aligned buffers: no page cache.
    DirectDsync,
}

impl SyncMode {
    /// The name as the CLI spells it.
    pub fn as_str(&self) -> &'static str {
        match self {
            SyncMode::Dsync => "dsync",
            SyncMode::Fdatasync => "fdatasync",
            SyncMode::DirectDsync => "direct-dsync",
        }
    }
}

/// One log destination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Destination {
    /// Name used in counters and messages (`disk`, `flash`, or `dest1`…).
    pub name: String,
    /// The log file (or block device).
    pub path: PathBuf,
}

impl std::str::FromStr for Destination {
    type Err = String;
    /// `PATH` or `NAME=PATH`; the default name is set by the caller from the position.
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, path) = match s.split_once('=') {
            Some((n, p))
                if !n.is_empty()
                    && n.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
            {
                (n.to_string(), p)
            }
            _ => (String::new(), s),
        };
        if path.is_empty() {
            return Err(format!("--dest {s:?}: empty path; use --dest [NAME=]PATH"));
        }
        Ok(Destination {
            name,
            path: PathBuf::from(path),
        })
    }
}

/// Everything `io redo` needs.
#[derive(Clone, Debug)]
pub struct RedoConfig {
    /// One destination, or two to race.
    pub dests: Vec<Destination>,
    /// Committer threads.
    pub sessions: u32,
    /// Commits per session; `None` with a duration.
    pub ops_per_session: Option<u64>,
    /// Run length; `None` with `ops_per_session`.
    pub duration: Option<Duration>,
    /// Commits per second per session (open loop), or as fast as possible.
    pub rate_per_session: Option<f64>,
    /// Record sizes are drawn uniformly from this inclusive range (bytes, header included).
    pub record_bytes: (u32, u32),
    /// Redo block size: 512, 1024 or 4096.
    pub block_size: usize,
    /// How writes are made durable.
    pub sync: SyncMode,
    /// Group commit (false: one record per write).
    pub group_commit: bool,
    /// Size of each destination's log, bytes (header block excluded).
    pub log_size: u64,
    /// Number of groups the log is divided into (at least 2).
    pub groups: u32,
    /// A write slower than this (from issue to completion) is an outlier.
    pub outlier: Duration,
    /// Extra seeded delays.
    pub injections: Vec<Injection>,
    /// Proceed although the block size does not suit the device's logical sector size.
    pub sector_size_override: bool,
    /// Root of sysfs (normally `/sys`).
    pub sysfs_root: PathBuf,
    /// Seed of record sizes and injected delays.
    pub seed: u64,
}

/// Errors before the run starts (bad input); nothing is recorded.
#[derive(Debug, thiserror::Error)]
pub enum RedoError {
    /// Invalid configuration or destination; the message names the option or file.
    #[error("{0}")]
    Config(String),
    /// The run directory could not be written.
    #[error("{0}")]
    Core(#[from] dbscope_core::Error),
}

impl RedoConfig {
    /// Checks the options that do not need the file system; the message names the option.
    pub fn validate(&self) -> Result<(), RedoError> {
        let bad = |m: String| Err(RedoError::Config(m));
        if self.dests.is_empty() {
            return bad("io redo needs at least one --dest PATH".into());
        }
        if self.dests.len() > 2 {
            return bad(format!(
                "{} --dest options given; io redo writes one destination or races two",
                self.dests.len()
            ));
        }
        if self.dests.len() == 2 && self.dests[0].name == self.dests[1].name {
            return bad(format!(
                "both destinations are named {:?}; name them with --dest NAME=PATH",
                self.dests[0].name
            ));
        }
        if self.dests.len() == 2 && self.dests[0].path == self.dests[1].path {
            return bad(format!(
                "both --dest options are {}; the race needs two different files",
                self.dests[0].path.display()
            ));
        }
        if self.sessions == 0 {
            return bad("--sessions must be at least 1".into());
        }
        if self.ops_per_session == Some(0) {
            return bad("--ops must be at least 1".into());
        }
        if self.duration == Some(Duration::ZERO) {
            return bad("--duration must be longer than 0".into());
        }
        if let Some(r) = self.rate_per_session {
            if !(r.is_finite() && r > 0.0) {
                return bad(format!(
                    "--rate {r}: must be a positive number of commits/s"
                ));
            }
        }
        if !BLOCK_SIZES.contains(&self.block_size) {
            return bad(format!(
                "--block-size {}: redo blocks are 512, 1024 or 4096 bytes",
                self.block_size
            ));
        }
        if self.groups < 2 {
            return bad(format!(
                "--groups {}: a circular log needs at least 2 groups (one is written while the \
                 previous one is still being completed)",
                self.groups
            ));
        }
        let (lo, hi) = self.record_bytes;
        if lo < RECORD_HEADER as u32 || lo > hi || hi > 1 << 20 {
            return bad(format!(
                "--record-bytes {lo}..{hi}: need {RECORD_HEADER} <= MIN <= MAX <= 1048576"
            ));
        }
        let bpg = self.blocks_per_group();
        let need = blocks_for(hi as usize, self.block_size) as u64 * 4;
        if bpg < need.max(8) {
            return bad(format!(
                "--log-size {} with --groups {}: each group would hold {bpg} blocks of {} bytes; \
                 it needs at least {} (make --log-size larger or --groups smaller)",
                self.log_size,
                self.groups,
                self.block_size,
                need.max(8)
            ));
        }
        for inj in &self.injections {
            self.dest_index(&inj.dest)?;
        }
        Ok(())
    }

    /// Redo blocks per group.
    pub fn blocks_per_group(&self) -> u64 {
        (self.log_size / self.groups.max(1) as u64 / self.block_size as u64)
            .min(u32::MAX as u64 / 4)
    }

    /// The destination an `--inject` names (by name or 1-based index).
    fn dest_index(&self, dest: &str) -> Result<usize, RedoError> {
        if let Some(i) = self.dests.iter().position(|d| d.name == dest) {
            return Ok(i);
        }
        match dest.parse::<usize>() {
            Ok(i) if (1..=self.dests.len()).contains(&i) => Ok(i - 1),
            _ => Err(RedoError::Config(format!(
                "--inject {dest}:…: no destination {dest:?}; the destinations are {}",
                self.dests
                    .iter()
                    .enumerate()
                    .map(|(i, d)| format!("{} (or {})", d.name, i + 1))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }
}

/// What a destination looked like at the start.
#[derive(Clone, Debug, Serialize)]
pub struct DestInfo {
    /// Name.
    pub name: String,
    /// Path.
    pub path: String,
    /// Sector sizes and where they came from.
    pub sectors: SectorSizes,
    /// Warnings of the sector-size check.
    pub warnings: Vec<String>,
}

/// Counters per destination, in `redo.json`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct DestCounters {
    /// Destination name.
    pub name: String,
    /// Path of its log.
    pub path: String,
    /// Writes completed.
    pub writes: u64,
    /// Races this destination finished first (FL_<NAME>_FIRST).
    pub first: u64,
    /// Writes that took longer than the outlier threshold, from issue to completion.
    pub outliers: u64,
    /// Writes given an injected delay.
    pub injected: u64,
    /// Sum of injected delays, ns.
    pub injected_ns: u64,
}

/// The run's counters, in `redo.json`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RedoCounters {
    /// True once the run ended; false in a snapshot taken while it was running.
    pub final_counts: bool,
    /// Commits acknowledged.
    pub commits: u64,
    /// Writes issued by the log writer (each to every destination).
    pub writes: u64,
    /// Commits per write: the group-commit factor.
    pub commits_per_write: Option<f64>,
    /// Redo blocks written per destination.
    pub blocks: u64,
    /// Bytes written per destination (blocks × block size).
    pub bytes: u64,
    /// Log switches.
    pub log_switches: u64,
    /// Threshold for outliers, ms.
    pub outlier_ms: f64,
    /// Races decided (writes completed by both destinations); 0 with one destination.
    pub races: u64,
    /// Races where the loser took longer than the threshold and the winner did not.
    pub prevented_outliers: u64,
    /// Per destination.
    pub destinations: Vec<DestCounters>,
}

/// What the progress display shows.
#[derive(Clone, Debug)]
pub struct RedoProgress {
    /// Time since the start.
    pub elapsed: Duration,
    /// Commits acknowledged.
    pub commits: u64,
    /// Writes.
    pub writes: u64,
    /// Fraction done, when known.
    pub fraction: Option<f64>,
}

/// How a run ended.
#[derive(Clone, Debug)]
pub struct RedoResult {
    /// The run directory.
    pub dir: PathBuf,
    /// Complete, interrupted or failed.
    pub outcome: Outcome,
    /// Why, when not complete.
    pub detail: Option<String>,
    /// Final counters.
    pub counters: RedoCounters,
    /// Warnings to show the user (sector sizes, overrides).
    pub warnings: Vec<String>,
    /// Events written.
    pub events: u64,
}

struct Queue {
    pending: std::collections::VecDeque<Record>,
    next_commit: u64,
    durable: u64,
    committers_left: u32,
    failed: bool,
    /// The log writer is waiting on `lgwr_cv` (else it is busy and will look at the queue).
    lgwr_waiting: bool,
}

struct Counters {
    commits: AtomicU64,
    writes: AtomicU64,
    blocks: AtomicU64,
    switches: AtomicU64,
    races: AtomicU64,
    prevented: AtomicU64,
    dest_writes: Vec<AtomicU64>,
    dest_first: Vec<AtomicU64>,
    dest_outliers: Vec<AtomicU64>,
    dest_injected: Vec<AtomicU64>,
    dest_injected_ns: Vec<AtomicU64>,
}

impl Counters {
    fn new(n: usize) -> Self {
        let v = || (0..n).map(|_| AtomicU64::new(0)).collect::<Vec<_>>();
        Counters {
            commits: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            blocks: AtomicU64::new(0),
            switches: AtomicU64::new(0),
            races: AtomicU64::new(0),
            prevented: AtomicU64::new(0),
            dest_writes: v(),
            dest_first: v(),
            dest_outliers: v(),
            dest_injected: v(),
            dest_injected_ns: v(),
        }
    }

    fn snapshot(&self, cfg: &RedoConfig, final_counts: bool) -> RedoCounters {
        let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let commits = ld(&self.commits);
        let writes = ld(&self.writes);
        let blocks = ld(&self.blocks);
        RedoCounters {
            final_counts,
            commits,
            writes,
            commits_per_write: (writes > 0).then(|| commits as f64 / writes as f64),
            blocks,
            bytes: blocks * cfg.block_size as u64,
            log_switches: ld(&self.switches),
            outlier_ms: cfg.outlier.as_secs_f64() * 1e3,
            races: ld(&self.races),
            prevented_outliers: ld(&self.prevented),
            destinations: cfg
                .dests
                .iter()
                .enumerate()
                .map(|(i, d)| DestCounters {
                    name: d.name.clone(),
                    path: d.path.display().to_string(),
                    writes: ld(&self.dest_writes[i]),
                    first: ld(&self.dest_first[i]),
                    outliers: ld(&self.dest_outliers[i]),
                    injected: ld(&self.dest_injected[i]),
                    injected_ns: ld(&self.dest_injected_ns[i]),
                })
                .collect(),
        }
    }
}

/// An open destination log.
struct DestFile {
    path: PathBuf,
    file: File,
    sync: SyncMode,
}

impl DestFile {
    /// Writes `buf` at `offset` and makes it durable as the sync mode says.
    fn write_durable(&self, buf: &[u8], offset: u64) -> std::io::Result<()> {
        self.file.write_all_at(buf, offset)?;
        if self.sync == SyncMode::Fdatasync {
            self.file.sync_data()?;
        }
        Ok(())
    }
}

/// A file of [`RESERVE_BYTES`] kept in the run directory while the run goes, and deleted before
/// the end is recorded: if the events fill the file system, its space lets the counters and the
/// manifest still be written, so the run is kept with its outcome.
const RESERVE_FILE: &str = "space.reserve";
/// Enough for the final manifest and counters (each rewritten through a temporary file).
const RESERVE_BYTES: usize = 256 << 10;

/// Writes the reserve file (real blocks, not a sparse file) and makes sure it is allocated.
fn reserve_space(path: &Path) -> std::io::Result<()> {
    let result = std::fs::write(path, vec![0xA5u8; RESERVE_BYTES])
        .and_then(|()| File::open(path)?.sync_all());
    if result.is_err() {
        let _ = std::fs::remove_file(path);
    }
    result
}

/// `"; WHY"` when `e` is ENOSPC, else nothing.
fn enospc_hint(e: &std::io::Error, why: &str) -> String {
    if e.raw_os_error() == Some(libc::ENOSPC) {
        format!("; {why}")
    } else {
        String::new()
    }
}

/// The message when appending events fails, with what it means for the run.
fn events_message(e: &dbscope_core::Error) -> String {
    let full = matches!(e, dbscope_core::Error::Io { source, .. }
        if source.raw_os_error() == Some(libc::ENOSPC));
    if full {
        format!(
            "cannot write events: {e}; the file system holding the run directory is full (the \
             events recorded until then are kept)"
        )
    } else {
        format!("cannot write events: {e}")
    }
}

/// Cuts an event file after its last complete block (what a failed append left). Returns the
/// bytes cut.
fn trim_torn_tail(path: &Path) -> Result<u64, dbscope_core::Error> {
    let mut reader = dbscope_core::run::EventReader::open(path)?;
    let mut block = Vec::new();
    while reader.next_block(&mut block)? {}
    let ignored = reader.tail().ignored_bytes;
    if ignored > 0 {
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| dbscope_core::Error::io(path, e))?;
        let len = f
            .metadata()
            .map_err(|e| dbscope_core::Error::io(path, e))?
            .len();
        f.set_len(len.saturating_sub(ignored))
            .map_err(|e| dbscope_core::Error::io(path, e))?;
    }
    Ok(ignored)
}

/// Memory alignment of write buffers (enough for O_DIRECT on any sector size we accept).
const BUF_ALIGN: usize = 4096;

fn io_class(e: &std::io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::ENOSPC) => "io:ENOSPC",
        Some(libc::EIO) => "io:EIO",
        Some(libc::EINVAL) => "io:EINVAL",
        _ => "io",
    }
}

fn io_message(path: &Path, what: &str, e: &std::io::Error) -> String {
    let hint = match e.raw_os_error() {
        Some(libc::ENOSPC) => "; the file system is full",
        Some(libc::EINVAL) => "; misaligned O_DIRECT I/O or a file system without direct I/O",
        _ => "",
    };
    format!("{}: {what}: {e}{hint}", path.display())
}

/// Opens every destination (before the run directory exists, so bad paths leave nothing behind).
fn open_dest(d: &Destination, cfg: &RedoConfig) -> Result<DestFile, RedoError> {
    let is_blockdev = check_path(d)?;
    let mut flags = 0;
    match cfg.sync {
        SyncMode::Dsync => flags |= libc::O_DSYNC,
        SyncMode::Fdatasync => {}
        SyncMode::DirectDsync => flags |= libc::O_DSYNC | libc::O_DIRECT,
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(!is_blockdev)
        .custom_flags(flags)
        .open(&d.path)
        .map_err(|e| {
            RedoError::Config(format!(
                "--dest {}: cannot open for writing{}: {e}",
                d.path.display(),
                if cfg.sync == SyncMode::DirectDsync {
                    " with O_DIRECT (does the file system support direct I/O? try --sync dsync)"
                } else {
                    ""
                }
            ))
        })?;
    Ok(DestFile {
        path: d.path.clone(),
        file,
        sync: cfg.sync,
    })
}

/// Checks a destination path without touching it: its directory exists and it is not a directory.
/// Returns true for a device (block or character), which is written in place, never created.
fn check_path(d: &Destination) -> Result<bool, RedoError> {
    let is_device = std::fs::metadata(&d.path)
        .map(|m| m.file_type().is_block_device() || m.file_type().is_char_device())
        .unwrap_or(false);
    if !is_device {
        if let Some(parent) = d.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            if !parent.is_dir() {
                return Err(RedoError::Config(format!(
                    "--dest {}: the directory {} does not exist",
                    d.path.display(),
                    parent.display()
                )));
            }
        }
        if d.path.is_dir() {
            return Err(RedoError::Config(format!(
                "--dest {}: is a directory; give the log file's path, e.g. {}/redo.log",
                d.path.display(),
                d.path.display()
            )));
        }
        refuse_foreign_file(&d.path)?;
    }
    Ok(is_device)
}

/// The log is overwritten from byte 0: refuse an existing non-empty file that is not a dbscope
/// redo log, so a mistyped `--dest` cannot destroy someone's data. An empty file (or one cut
/// back to nothing after a failed preallocation) and an earlier log are reused.
fn refuse_foreign_file(path: &Path) -> Result<(), RedoError> {
    use std::io::Read;
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(()); // does not exist yet
    };
    if !meta.file_type().is_file() || meta.len() == 0 {
        return Ok(());
    }
    let mut head = [0u8; 8];
    let n = File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    if &head[..n] == super::block::FILE_MAGIC {
        return Ok(());
    }
    Err(RedoError::Config(format!(
        "--dest {}: the file exists ({} bytes) and is not a dbscope redo log; io redo overwrites \
         its log from byte 0, so give a new path or remove the file first",
        path.display(),
        meta.len()
    )))
}

/// Writes the log header at offset 0 to prove the destination takes writes before anything is
/// recorded. A full device (ENOSPC) is left to the preallocation, which keeps the run as failed.
fn probe_write(f: &DestFile, layout: &LogLayout) -> Result<(), RedoError> {
    let mut buf = AlignedBuf::zeroed(layout.block_size, BUF_ALIGN);
    buf.as_mut_slice().copy_from_slice(&layout.encode_header());
    match f.write_durable(buf.as_slice(), 0) {
        Err(e) if e.raw_os_error() != Some(libc::ENOSPC) => Err(RedoError::Config(format!(
            "--dest {}: cannot write to it: {e}",
            f.path.display()
        ))),
        _ => Ok(()),
    }
}

/// Writes the header block and zeros over the whole log, then makes it durable.
fn preallocate(f: &DestFile, layout: &LogLayout) -> std::io::Result<()> {
    if std::fs::metadata(&f.path)?.file_type().is_file() {
        f.file.set_len(0)?;
    }
    let chunk = 1 << 20;
    let mut buf = AlignedBuf::zeroed(chunk, BUF_ALIGN);
    let total = layout.file_bytes();
    let header = layout.encode_header();
    let mut at = 0u64;
    while at < total {
        let n = ((total - at) as usize).min(chunk);
        let b = buf.as_mut_slice();
        b.fill(0);
        if at == 0 {
            b[..header.len()].copy_from_slice(&header);
        }
        f.file.write_all_at(&b[..n], at)?;
        at += n as u64;
    }
    f.file.sync_all()
}

/// One batch handed to the destination writers.
struct Batch {
    id: u64,
    offset: u64,
    blocks: u32,
    buf: Arc<AlignedBuf>,
    issued_ns: u64,
}

/// Race bookkeeping shared by the destination writers and the log writer.
#[derive(Default)]
struct Race {
    done: Vec<u64>,
    first: std::collections::HashMap<u64, u64>,
    failed: Option<String>,
}

/// The sector-size check for every destination: their sizes and warnings, or the refusal. The
/// CLI calls it first to show warnings before the run; [`run_redo`] calls it again.
pub fn check_destinations(cfg: &RedoConfig) -> Result<Vec<DestInfo>, RedoError> {
    let mut infos = Vec::new();
    for d in &cfg.dests {
        check_path(d)?;
        let sectors = sector::detect(&d.path, &cfg.sysfs_root);
        let mut warnings = Vec::new();
        match sector::check(
            &d.path,
            &sectors,
            cfg.block_size,
            cfg.sync == SyncMode::DirectDsync,
            cfg.sector_size_override,
        ) {
            Verdict::Ok => {}
            Verdict::Warn(m) => warnings.push(m),
            Verdict::Refuse(m) => return Err(RedoError::Config(m)),
        }
        infos.push(DestInfo {
            name: d.name.clone(),
            path: d.path.display().to_string(),
            sectors,
            warnings,
        });
    }
    Ok(infos)
}

/// Runs `io redo` into the run directory `out`. `stop` may be fired from another thread (Ctrl-C).
pub fn run_redo(
    out: &Path,
    command_line: Vec<String>,
    cfg: &RedoConfig,
    stop: &StopSignal,
    progress: &mut dyn FnMut(&RedoProgress),
) -> Result<RedoResult, RedoError> {
    cfg.validate()?;
    let ndest = cfg.dests.len();
    let layout = LogLayout {
        block_size: cfg.block_size,
        groups: cfg.groups,
        blocks_per_group: cfg.blocks_per_group() as u32,
    };

    // The sector-size check, then open every destination: refusals leave nothing behind.
    let infos = check_destinations(cfg)?;
    let warnings: Vec<String> = infos.iter().flat_map(|i| i.warnings.clone()).collect();
    let files: Vec<DestFile> = cfg
        .dests
        .iter()
        .map(|d| open_dest(d, cfg))
        .collect::<Result<_, _>>()?;
    for f in &files {
        probe_write(f, &layout)?;
    }

    let params = params(cfg, &layout, &infos);
    let mut manifest = Manifest::new(
        "workload",
        WorkloadInfo {
            name: WORKLOAD_NAME.into(),
            params,
        },
        cfg.seed,
    );
    manifest.command_line = command_line;
    manifest.target = Some(TargetInfo {
        kind: "redo-log".into(),
        location: cfg
            .dests
            .iter()
            .map(|d| format!("{}={}", d.name, d.path.display()))
            .collect::<Vec<_>>()
            .join(" "),
        server_version: format!("dbscope redo log format {}", super::block::FILE_VERSION),
        settings_requested: Vec::new(),
        settings_effective: Default::default(),
    });
    manifest.runner = Some(RunnerInfo {
        sessions: cfg.sessions,
        ops_per_session: cfg.ops_per_session,
        duration_s: cfg.duration.map(|d| d.as_secs_f64()),
        warmup_s: 0.0,
        max_errors: 0,
        mode: if cfg.rate_per_session.is_some() {
            "open".into()
        } else {
            "closed".into()
        },
    });
    let mut rundir = RunDir::create(out, manifest)?;
    let counters = Counters::new(ndest);
    let reserve = out.join(RESERVE_FILE);
    let reserved = reserve_space(&reserve);

    // Ends the run: frees the reserve first, so the counters and the manifest can be written even
    // when the run directory's file system filled up during the run.
    let finish = |rundir: &mut RunDir,
                  outcome: Outcome,
                  detail: Option<String>,
                  events: u64|
     -> Result<RedoCounters, RedoError> {
        let _ = std::fs::remove_file(&reserve);
        let snap = counters.snapshot(cfg, true);
        write_counters(out, &snap)?;
        rundir.manifest.ended_utc = Some(Utc::now());
        rundir.manifest.outcome = outcome;
        rundir.manifest.outcome_detail = detail;
        rundir.manifest.events_written = Some(events);
        rundir.save_manifest()?;
        Ok(snap)
    };

    // Out of space before the clock starts: the run is kept, failed, with the reason.
    let mut early_failure = reserved.err().map(|e| {
        format!(
            "{}: no room for the run's events: {e}{}",
            out.display(),
            enospc_hint(&e, "the file system holding the run directory is full")
        )
    });
    for f in &files {
        if early_failure.is_some() {
            break;
        }
        if let Err(e) = preallocate(f, &layout) {
            // Give the space back: a half-written log is of no use, and the run directory may be
            // on the same file system.
            if std::fs::metadata(&f.path).is_ok_and(|m| m.file_type().is_file()) {
                let _ = f.file.set_len(0);
            }
            early_failure = Some(io_message(
                &f.path,
                &format!("cannot preallocate the log ({} bytes)", layout.file_bytes()),
                &e,
            ));
        }
    }
    if let Some(detail) = early_failure {
        EventWriter::create(&out.join(EVENTS_FILE), NameTable::new())?;
        let snap = finish(&mut rundir, Outcome::Failed, Some(detail.clone()), 0)?;
        return Ok(RedoResult {
            dir: out.to_path_buf(),
            outcome: Outcome::Failed,
            detail: Some(detail),
            counters: snap,
            warnings,
            events: 0,
        });
    }

    let names = NameTable::new();
    let mut writer = EventWriter::create(&out.join(EVENTS_FILE), names.clone())?;
    let (tx, rx) = sync_channel::<Vec<Event>>(2 * (cfg.sessions as usize + ndest) + 8);
    let clock = RunClock::start();
    let now = Utc::now();
    rundir.manifest.started_utc = now;
    rundir.manifest.clock_origin_unix_ns = now.timestamp_nanos_opt().unwrap_or(0);
    rundir.save_manifest()?;
    write_counters(out, &counters.snapshot(cfg, false))?;

    let queue = Mutex::new(Queue {
        pending: Default::default(),
        next_commit: 1,
        durable: 0,
        committers_left: cfg.sessions,
        failed: false,
        lgwr_waiting: false,
    });
    let lgwr_cv = Condvar::new();
    let ack_cv = Condvar::new();
    let shared = Shared {
        cfg,
        layout,
        queue: &queue,
        lgwr_cv: &lgwr_cv,
        ack_cv: &ack_cv,
        counters: &counters,
        stop,
        clock: clock.clone(),
        failure: Mutex::new(None),
    };
    let deadline_ns = cfg.duration.map(|d| d.as_nanos() as u64);
    let mut write_error: Option<String> = None;

    // Without group commit on one destination the committers write directly (see [`Direct`]).
    let direct_race = Mutex::new(Race {
        done: vec![0; ndest],
        ..Race::default()
    });
    let direct_race_cv = Condvar::new();

    let lg_rec = Recorder::new(cfg.sessions, clock.clone(), 0, names.clone(), tx.clone());
    let mut dest_recs: Vec<Recorder> = (0..ndest)
        .map(|d| {
            Recorder::new(
                dest_session(cfg.sessions, d),
                clock.clone(),
                0,
                names.clone(),
                tx.clone(),
            )
        })
        .collect();
    let sh = &shared;
    let files = &files;
    let mut lgwr = None;
    let direct = if !cfg.group_commit && ndest == 1 {
        let rec = dest_recs.pop().expect("one destination");
        let w = DestWriter::new(0, &files[0], rec, sh, &direct_race, &direct_race_cv);
        Some(Mutex::new(Some(Direct::new(
            sh,
            w,
            lg_rec,
            cfg.record_bytes.1,
        ))))
    } else {
        lgwr = Some((lg_rec, dest_recs));
        None
    };

    std::thread::scope(|scope| {
        let direct = direct.as_ref();
        for i in 0..cfg.sessions {
            let rec = Recorder::new(i, clock.clone(), 0, names.clone(), tx.clone());
            std::thread::Builder::new()
                .name(format!("committer-{i}"))
                .spawn_scoped(scope, move || committer(sh, i, rec, deadline_ns, direct))
                .expect("spawning a committer thread");
        }
        drop(tx);
        if let Some((lg_rec, dest_recs)) = lgwr {
            std::thread::Builder::new()
                .name("lgwr".into())
                .spawn_scoped(scope, move || log_writer(sh, files, lg_rec, dest_recs))
                .expect("spawning the log writer");
        }

        // This thread writes event blocks, the counters file and progress until all have finished.
        let mut last_tick = Instant::now();
        loop {
            match rx.recv_timeout(Duration::from_millis(250)) {
                Ok(batch) => {
                    if write_error.is_none() {
                        if let Err(e) = writer.write_block(&batch) {
                            let msg = events_message(&e);
                            write_error = Some(msg.clone());
                            shared.fail(msg);
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if last_tick.elapsed() >= Duration::from_millis(250) {
                last_tick = Instant::now();
                let _ = write_counters(out, &counters.snapshot(cfg, false));
                let elapsed = Duration::from_nanos(clock.now_ns());
                let commits = counters.commits.load(Ordering::Relaxed);
                let fraction = match (deadline_ns, cfg.ops_per_session) {
                    (Some(d), _) => Some((elapsed.as_nanos() as f64 / d as f64).min(1.0)),
                    (None, Some(n)) => Some(commits as f64 / (n * cfg.sessions as u64) as f64),
                    _ => None,
                };
                progress(&RedoProgress {
                    elapsed,
                    commits,
                    writes: counters.writes.load(Ordering::Relaxed),
                    fraction,
                });
            }
        }
    });

    if write_error.is_none() {
        if let Err(e) = writer.sync() {
            write_error = Some(format!("cannot flush events: {e}"));
        }
    } else {
        // A failed append may have left part of a block: cut it, so the run reads cleanly.
        let _ = trim_torn_tail(&out.join(EVENTS_FILE));
    }
    let failure = shared
        .failure
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .or(write_error);
    let (outcome, detail) = stop_outcome(stop, failure);
    let snap = finish(
        &mut rundir,
        outcome,
        detail.clone(),
        writer.events_written(),
    )?;
    Ok(RedoResult {
        dir: out.to_path_buf(),
        outcome,
        detail,
        counters: snap,
        warnings,
        events: writer.events_written(),
    })
}

fn stop_outcome(stop: &StopSignal, failure: Option<String>) -> (Outcome, Option<String>) {
    match failure {
        Some(why) => (Outcome::Failed, Some(why)),
        None if stop.is_set() => (Outcome::Interrupted, Some("stopped by the user".into())),
        None => (Outcome::Complete, None),
    }
}

fn params(
    cfg: &RedoConfig,
    layout: &LogLayout,
    infos: &[DestInfo],
) -> std::collections::BTreeMap<String, serde_json::Value> {
    let mut p = std::collections::BTreeMap::new();
    p.insert("destinations".into(), json!(infos));
    p.insert("block_size".into(), json!(cfg.block_size));
    p.insert("sync".into(), json!(cfg.sync.as_str()));
    p.insert("group_commit".into(), json!(cfg.group_commit));
    p.insert("record_bytes_min".into(), json!(cfg.record_bytes.0));
    p.insert("record_bytes_max".into(), json!(cfg.record_bytes.1));
    p.insert("rate_per_session".into(), json!(cfg.rate_per_session));
    p.insert("log_size".into(), json!(layout.file_bytes()));
    p.insert("groups".into(), json!(cfg.groups));
    p.insert("blocks_per_group".into(), json!(layout.blocks_per_group));
    p.insert("outlier_ms".into(), json!(cfg.outlier.as_secs_f64() * 1e3));
    p.insert(
        "inject".into(),
        json!(cfg
            .injections
            .iter()
            .map(|i| i.text.clone())
            .collect::<Vec<_>>()),
    );
    p.insert(
        "sector_size_override".into(),
        json!(cfg.sector_size_override),
    );
    p.insert("counters_file".into(), json!(COUNTERS_FILE));
    p.insert(
        "sessions_layout".into(),
        json!(format!(
            "sessions 0..{} commit; {} is the log writer; {}.. are the destinations in order",
            cfg.sessions,
            cfg.sessions,
            cfg.sessions + 1
        )),
    );
    p
}

fn write_counters(out: &Path, c: &RedoCounters) -> Result<(), RedoError> {
    let path = out.join(COUNTERS_FILE);
    let tmp = out.join("redo.json.tmp");
    let text = serde_json::to_string_pretty(c).expect("counters encode") + "\n";
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| RedoError::Core(dbscope_core::Error::io(&path, e)))
}

struct Shared<'a> {
    cfg: &'a RedoConfig,
    layout: LogLayout,
    queue: &'a Mutex<Queue>,
    lgwr_cv: &'a Condvar,
    ack_cv: &'a Condvar,
    counters: &'a Counters,
    stop: &'a StopSignal,
    clock: RunClock,
    failure: Mutex<Option<String>>,
}

impl Shared<'_> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stops the run as failed and releases every waiting committer.
    fn fail(&self, why: String) {
        self.failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(|| why.clone());
        self.stop.fail(why);
        self.lock().failed = true;
        self.ack_cv.notify_all();
        self.lgwr_cv.notify_all();
    }
}

fn committer(
    sh: &Shared<'_>,
    session: u32,
    mut rec: Recorder,
    deadline_ns: Option<u64>,
    direct: Option<&Mutex<Option<Direct<'_>>>>,
) {
    let ev = rec.name(EV_SYNC);
    let cfg = sh.cfg;
    let mut rng = ChaCha8Rng::seed_from_u64(session_seed(cfg.seed, session));
    let limit = cfg.ops_per_session.unwrap_or(u64::MAX);
    let interval_ns = cfg.rate_per_session.map(|r| (1e9 / r) as u64);
    let begin = rec.now();
    let mut n = 0u64;
    while n < limit && !sh.stop.is_set() {
        let intended = interval_ns.map(|i| begin + n * i);
        if let Some(t) = intended {
            // Open loop: wait for the scheduled start, in short sleeps so a stop is noticed.
            loop {
                let now = rec.now();
                if now >= t || sh.stop.is_set() {
                    break;
                }
                std::thread::sleep(Duration::from_nanos((t - now).min(50_000_000)));
            }
        }
        if deadline_ns.is_some_and(|d| rec.now() >= d) || sh.stop.is_set() {
            break;
        }
        n += 1;
        let bytes = rng.random_range(cfg.record_bytes.0..=cfg.record_bytes.1);
        let session_commit = n.min(u32::MAX as u64) as u32;
        let t0 = rec.now();
        let acked = match direct {
            Some(d) => {
                let mut d = d.lock().unwrap_or_else(|e| e.into_inner());
                match d.as_mut() {
                    Some(d) if !d.failed => Some(d.commit(session, session_commit, bytes)),
                    _ => None,
                }
            }
            None => queue_and_wait(sh, session, session_commit, bytes),
        };
        let t1 = rec.now();
        match acked {
            Some(true) => rec.push(ev, t0, t1, intended, 0, 1),
            Some(false) => {
                rec.error(ev, t0, t1, "io");
                break;
            }
            // The run failed before this commit was queued: nothing to record.
            None => break,
        }
    }
    rec.flush();
    let mut q = sh.lock();
    q.committers_left -= 1;
    let last = q.committers_left == 0;
    drop(q);
    sh.lgwr_cv.notify_all();
    if let (true, Some(d)) = (last, direct) {
        // The last committer drops the direct writer, flushing its recorders, so the event
        // writer sees every sender gone.
        drop(d.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}

/// Queues one record for the log writer and waits until it is durable: `Some(true)` once
/// acknowledged, `Some(false)` when the run failed meanwhile, `None` when it had already failed.
fn queue_and_wait(sh: &Shared<'_>, session: u32, session_commit: u32, bytes: u32) -> Option<bool> {
    let mut q = sh.lock();
    if q.failed {
        return None;
    }
    let commit = q.next_commit;
    q.next_commit += 1;
    q.pending.push_back(Record {
        commit,
        session,
        session_commit,
        bytes,
    });
    // Only a waiting log writer needs waking; a busy one takes the queue when its write is done
    // (waking it anyway would cost a futex call per commit, 20 per write at 20 sessions).
    if q.lgwr_waiting {
        sh.lgwr_cv.notify_one();
    }
    while q.durable < commit && !q.failed {
        q = sh.ack_cv.wait(q).unwrap_or_else(|e| e.into_inner());
    }
    Some(q.durable >= commit)
}

/// Where the next write goes in the circular log and how it links to the previous one. The log
/// writer (group commit) and the committers writing directly (no group commit) share this logic,
/// so both produce the same log.
struct Cursor {
    layout: LogLayout,
    /// Most blocks one write may take (a write's block count is a u16 in the block header).
    max_write: usize,
    group: u32,
    /// Next block within the group.
    next_block: u32,
    /// Sequence number of the next block.
    seq: u64,
    /// File block index of the previous write's first block.
    prev_pos: u32,
    /// Flags of the next write ([`FLAG_SWITCH`] after a switch).
    flags: u16,
    /// Writes placed so far (the id of the latest).
    batch_id: u64,
    /// Per group, the id of the latest write into it: it must be complete on every destination
    /// before the group is reused.
    last_batch_in_group: Vec<u64>,
}

/// One write placed in the log.
#[derive(Clone, Copy)]
struct Placed {
    header: WriteHeader,
    offset: u64,
    id: u64,
}

impl Cursor {
    fn new(layout: LogLayout) -> Self {
        Cursor {
            layout,
            max_write: layout.blocks_per_group.min(u16::MAX as u32) as usize,
            group: 0,
            next_block: 0,
            seq: 1,
            prev_pos: 0,
            flags: 0,
            batch_id: 0,
            last_batch_in_group: vec![0; layout.groups as usize],
        }
    }

    /// Blocks the next write may take without a log switch.
    fn space(&self) -> usize {
        ((self.layout.blocks_per_group - self.next_block) as usize).min(self.max_write)
    }

    /// Moves to the next group. Returns the id of the write that must be complete on every
    /// destination before the group may be written.
    fn switch(&mut self) -> u64 {
        self.group = (self.group + 1) % self.layout.groups;
        self.next_block = 0;
        self.flags = FLAG_SWITCH;
        self.last_batch_in_group[self.group as usize]
    }

    /// Places a write of `nblocks` (at most [`Cursor::space`]) and moves past it.
    fn place(&mut self, nblocks: usize) -> Placed {
        debug_assert!(nblocks <= self.space());
        let pos = self.layout.group_start(self.group) + self.next_block;
        let header = WriteHeader {
            first_seq: self.seq,
            prev_pos: self.prev_pos,
            flags: self.flags,
        };
        self.batch_id += 1;
        self.last_batch_in_group[self.group as usize] = self.batch_id;
        self.seq += nblocks as u64;
        self.prev_pos = pos;
        self.flags = 0;
        self.next_block += nblocks as u32;
        Placed {
            header,
            offset: pos as u64 * self.layout.block_size as u64,
            id: self.batch_id,
        }
    }
}

fn log_writer(sh: &Shared<'_>, files: &[DestFile], mut rec: Recorder, dest_recs: Vec<Recorder>) {
    let cfg = sh.cfg;
    let ndest = files.len();
    let ev_switch = rec.name(EV_SWITCH);
    let race = Mutex::new(Race {
        done: vec![0; ndest],
        ..Race::default()
    });
    let race_cv = Condvar::new();

    std::thread::scope(|scope| {
        let mut senders: Vec<SyncSender<Batch>> = Vec::new();
        let mut single: Option<DestWriter<'_>> = None;
        let mut dest_recs = dest_recs.into_iter();
        for (d, f) in files.iter().enumerate() {
            let rec = dest_recs.next().expect("one recorder per destination");
            let w = DestWriter::new(d, f, rec, sh, &race, &race_cv);
            if ndest == 1 {
                single = Some(w);
            } else {
                // The writer may lag a whole group behind; the reuse check bounds the lag.
                let (tx, rx) = sync_channel::<Batch>(1 << 16);
                senders.push(tx);
                std::thread::Builder::new()
                    .name(format!("dest-{d}"))
                    .spawn_scoped(scope, move || w.run(rx))
                    .expect("spawning a destination writer");
            }
        }

        let bs = cfg.block_size;
        let mut cursor = Cursor::new(sh.layout);
        let mut stream: Vec<u8> = Vec::with_capacity(1 << 20);
        let mut single_buf: Option<AlignedBuf> = None;
        let mut taken: Vec<Record> = Vec::new();

        'run: loop {
            // Take what is queued and fits in the current group.
            taken.clear();
            let mut q = sh.lock();
            loop {
                if q.failed {
                    break 'run;
                }
                if !q.pending.is_empty() {
                    break;
                }
                if q.committers_left == 0 {
                    break 'run;
                }
                q.lgwr_waiting = true;
                q = sh.lgwr_cv.wait(q).unwrap_or_else(|e| e.into_inner());
                q.lgwr_waiting = false;
            }
            let space = cursor.space();
            let mut bytes = 0usize;
            while let Some(r) = q.pending.front() {
                if blocks_for(bytes + r.bytes as usize, bs) > space
                    || (!cfg.group_commit && !taken.is_empty())
                {
                    break;
                }
                bytes += r.bytes as usize;
                taken.push(q.pending.pop_front().expect("front exists"));
            }
            drop(q);
            if taken.is_empty() {
                // Not even one record fits: switch to the next group, once it may be reused.
                let t0 = rec.now();
                let need = cursor.switch();
                let mut r = race.lock().unwrap_or_else(|e| e.into_inner());
                while r.done.iter().any(|&d| d < need) && r.failed.is_none() {
                    r = race_cv.wait(r).unwrap_or_else(|e| e.into_inner());
                }
                drop(r);
                rec.ok(ev_switch, t0, rec.now(), 0);
                sh.counters.switches.fetch_add(1, Ordering::Relaxed);
                continue;
            }

            stream.clear();
            for r in &taken {
                r.encode(&mut stream);
            }
            let nblocks = blocks_for(stream.len(), bs);
            let placed = cursor.place(nblocks);
            let issued_ns = sh.clock.now_ns();
            let ok = if let Some(w) = single.as_mut() {
                // One buffer, grown when a write needs more; each write uses its prefix.
                let len = nblocks * bs;
                let buf = match &mut single_buf {
                    Some(b) if b.as_slice().len() >= len => b,
                    slot => slot.insert(AlignedBuf::zeroed(len.next_power_of_two(), BUF_ALIGN)),
                };
                pack_blocks(&stream, bs, placed.header, &mut buf.as_mut_slice()[..len]);
                w.write(
                    placed.id,
                    &buf.as_slice()[..len],
                    placed.offset,
                    nblocks as u32,
                    issued_ns,
                )
            } else {
                let mut buf = AlignedBuf::zeroed(nblocks * bs, BUF_ALIGN);
                pack_blocks(&stream, bs, placed.header, buf.as_mut_slice());
                let b = Arc::new(buf);
                for tx in &senders {
                    let _ = tx.send(Batch {
                        id: placed.id,
                        offset: placed.offset,
                        blocks: nblocks as u32,
                        buf: Arc::clone(&b),
                        issued_ns,
                    });
                }
                // Acknowledge when the first destination has it.
                let mut r = race.lock().unwrap_or_else(|e| e.into_inner());
                while !r.done.iter().any(|&d| d >= placed.id) && r.failed.is_none() {
                    r = race_cv.wait(r).unwrap_or_else(|e| e.into_inner());
                }
                r.failed.is_none()
            };
            if !ok {
                break 'run;
            }
            let c = sh.counters;
            c.writes.fetch_add(1, Ordering::Relaxed);
            c.blocks.fetch_add(nblocks as u64, Ordering::Relaxed);
            c.commits.fetch_add(taken.len() as u64, Ordering::Relaxed);
            let last = taken.last().expect("non-empty").commit;
            let mut q = sh.lock();
            q.durable = last;
            drop(q);
            sh.ack_cv.notify_all();
        }
        drop(senders);
        rec.flush();
        if let Some(mut w) = single {
            w.rec.flush();
        }
    });
    // Release any committer still waiting (after a failure, or a stop with records queued).
    let mut q = sh.lock();
    q.failed = true;
    drop(q);
    sh.ack_cv.notify_all();
}

/// The seeded injector of destination `d`, when an `--inject` names it (the last one wins).
fn injector_for(cfg: &RedoConfig, d: usize) -> Option<Injector> {
    let inj = cfg
        .injections
        .iter()
        .rfind(|inj| cfg.dest_index(&inj.dest).ok() == Some(d))?;
    Some(Injector::new(
        inj.spec.clone(),
        session_seed(cfg.seed ^ 0x1_4EC7, 1000 + d as u32),
    ))
}

/// Without group commit on one destination, each committer writes its own record under this
/// lock: there is no log-writer thread, so `log file sync` holds no handoff between threads
/// (about 10 µs each way, more than a write to tmpfs takes). The lock keeps the writes in commit
/// order, as one log writer would, and the log, events and counters are the same as the log
/// writer's. The race (two destinations) always goes through the log writer.
struct Direct<'a> {
    cursor: Cursor,
    next_commit: u64,
    buf: AlignedBuf,
    writer: DestWriter<'a>,
    /// Records log switches under the log writer's session, as the log writer would.
    switch_rec: Recorder,
    ev_switch: NameId,
    failed: bool,
}

impl<'a> Direct<'a> {
    fn new(
        sh: &'a Shared<'a>,
        writer: DestWriter<'a>,
        switch_rec: Recorder,
        record_max: u32,
    ) -> Self {
        let max_len = blocks_for(record_max as usize, sh.layout.block_size) * sh.layout.block_size;
        Direct {
            cursor: Cursor::new(sh.layout),
            next_commit: 1,
            buf: AlignedBuf::zeroed(max_len, BUF_ALIGN),
            writer,
            ev_switch: switch_rec.name(EV_SWITCH),
            switch_rec,
            failed: false,
        }
    }

    /// Writes one commit record and makes it durable. False when the write failed (the run is
    /// then failing and the error is recorded).
    fn commit(&mut self, session: u32, session_commit: u32, bytes: u32) -> bool {
        let sh = self.writer.sh;
        let bs = sh.layout.block_size;
        let record = Record {
            commit: self.next_commit,
            session,
            session_commit,
            bytes,
        };
        let nblocks = blocks_for((bytes as usize).max(RECORD_HEADER), bs);
        if nblocks > self.cursor.space() {
            // Writes here are synchronous: every earlier write into the next group is complete.
            let t0 = self.switch_rec.now();
            self.cursor.switch();
            self.switch_rec
                .ok(self.ev_switch, t0, self.switch_rec.now(), 0);
            sh.counters.switches.fetch_add(1, Ordering::Relaxed);
        }
        let placed = self.cursor.place(nblocks);
        let len = nblocks * bs;
        let buf = &mut self.buf.as_mut_slice()[..len];
        pack_record(&record, bs, placed.header, buf);
        let issued_ns = self.writer.rec.now();
        let buf = &self.buf.as_slice()[..len];
        if !self
            .writer
            .write(placed.id, buf, placed.offset, nblocks as u32, issued_ns)
        {
            self.failed = true;
            return false;
        }
        self.next_commit += 1;
        let c = sh.counters;
        c.writes.fetch_add(1, Ordering::Relaxed);
        c.blocks.fetch_add(nblocks as u64, Ordering::Relaxed);
        c.commits.fetch_add(1, Ordering::Relaxed);
        true
    }
}

struct DestWriter<'a> {
    d: usize,
    file: &'a DestFile,
    rec: Recorder,
    ev_write: NameId,
    ev_inject: NameId,
    injector: Option<Injector>,
    sh: &'a Shared<'a>,
    race: &'a Mutex<Race>,
    race_cv: &'a Condvar,
}

impl<'a> DestWriter<'a> {
    /// The writer of destination `d`, recording with `rec` (the destination's session).
    fn new(
        d: usize,
        file: &'a DestFile,
        rec: Recorder,
        sh: &'a Shared<'a>,
        race: &'a Mutex<Race>,
        race_cv: &'a Condvar,
    ) -> Self {
        DestWriter {
            d,
            file,
            ev_write: rec.name(EV_WRITE),
            ev_inject: rec.name(EV_INJECT),
            rec,
            injector: injector_for(sh.cfg, d),
            sh,
            race,
            race_cv,
        }
    }

    fn run(mut self, rx: Receiver<Batch>) {
        while let Ok(b) = rx.recv() {
            if !self.write(b.id, b.buf.as_slice(), b.offset, b.blocks, b.issued_ns) {
                break;
            }
        }
        self.rec.flush();
    }

    /// Writes one batch, records it, and settles the race. False when the write failed.
    fn write(&mut self, id: u64, buf: &[u8], offset: u64, blocks: u32, issued_ns: u64) -> bool {
        let ev_write = self.ev_write;
        let t0 = self.rec.now();
        let result = self.file.write_durable(buf, offset);
        let mut t1 = self.rec.now();
        if let Err(e) = result {
            self.rec.error(ev_write, t0, t1, io_class(&e));
            let msg = io_message(&self.file.path, "redo write failed", &e);
            self.race.lock().unwrap_or_else(|e| e.into_inner()).failed = Some(msg.clone());
            self.race_cv.notify_all();
            self.sh.fail(msg);
            return false;
        }
        if let Some(inj) = &mut self.injector {
            let delay = inj.next_delay();
            if !delay.is_zero() {
                std::thread::sleep(delay);
                let t2 = self.rec.now();
                self.rec.ok(self.ev_inject, t1, t2, 0);
                let c = self.sh.counters;
                c.dest_injected[self.d].fetch_add(1, Ordering::Relaxed);
                c.dest_injected_ns[self.d].fetch_add(t2 - t1, Ordering::Relaxed);
                t1 = t2;
            }
        }
        self.rec.ok(ev_write, t0, t1, blocks as u64);
        let c = self.sh.counters;
        c.dest_writes[self.d].fetch_add(1, Ordering::Relaxed);
        let latency = t1.saturating_sub(issued_ns);
        let outlier_ns = self.sh.cfg.outlier.as_nanos() as u64;
        if latency > outlier_ns {
            c.dest_outliers[self.d].fetch_add(1, Ordering::Relaxed);
        }
        let mut r = self.race.lock().unwrap_or_else(|e| e.into_inner());
        r.done[self.d] = id;
        if r.done.len() == 1 {
            // One destination: its writes are synchronous in the thread that waits for them, so
            // nobody waits on the condvar (whose notify would cost a futex call per write).
            c.dest_first[self.d].fetch_add(1, Ordering::Relaxed);
            return true;
        }
        if let Some(winner_latency) = r.first.remove(&id) {
            // The loser: the race is decided.
            c.races.fetch_add(1, Ordering::Relaxed);
            if latency > outlier_ns && winner_latency <= outlier_ns {
                c.prevented.fetch_add(1, Ordering::Relaxed);
            }
        } else {
            r.first.insert(id, latency);
            c.dest_first[self.d].fetch_add(1, Ordering::Relaxed);
        }
        drop(r);
        self.race_cv.notify_all();
        true
    }
}

/// The session number a destination's events carry: committers are `0..sessions`, the log writer
/// is `sessions`, destinations follow in the order given.
pub fn dest_session(sessions: u32, dest: usize) -> u32 {
    sessions + 1 + dest as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(dir: &Path, sessions: u32, group_commit: bool) -> RedoConfig {
        RedoConfig {
            dests: vec![Destination {
                name: "dest1".into(),
                path: dir.join("redo.log"),
            }],
            sessions,
            ops_per_session: Some(200),
            duration: None,
            rate_per_session: None,
            record_bytes: (200, 2000),
            block_size: 512,
            sync: SyncMode::Fdatasync,
            group_commit,
            log_size: 1 << 20,
            groups: 3,
            outlier: Duration::from_millis(500),
            injections: Vec::new(),
            sector_size_override: false,
            sysfs_root: PathBuf::from("/sys"),
            seed: 1,
        }
    }

    #[test]
    fn runs_wrap_the_log_and_verify() {
        let dir = tempfile::tempdir().unwrap();
        let c = cfg(dir.path(), 4, true);
        let out = dir.path().join("run");
        let stop = StopSignal::new();
        let r = run_redo(&out, vec![], &c, &stop, &mut |_| {}).unwrap();
        assert_eq!(r.outcome, Outcome::Complete, "{:?}", r.detail);
        assert_eq!(r.counters.commits, 800);
        assert!(r.counters.log_switches >= 1, "1 MiB of log must wrap");
        let v = super::super::verify::verify(&c.dests[0].path).unwrap();
        assert!(v.problems.is_empty(), "{:?}", v.problems);
        assert_eq!(v.last_commit, Some(800));
        for s in 0..4 {
            assert_eq!(v.session_last.get(&s), Some(&200));
        }
    }

    #[test]
    fn committers_writing_directly_wrap_the_log_and_verify() {
        // No group commit on one destination: no log-writer thread, same log.
        let dir = tempfile::tempdir().unwrap();
        let c = cfg(dir.path(), 4, false);
        let out = dir.path().join("run");
        let stop = StopSignal::new();
        let r = run_redo(&out, vec![], &c, &stop, &mut |_| {}).unwrap();
        assert_eq!(r.outcome, Outcome::Complete, "{:?}", r.detail);
        assert_eq!((r.counters.commits, r.counters.writes), (800, 800));
        assert!(r.counters.log_switches >= 1, "1 MiB of log must wrap");
        assert_eq!(r.counters.destinations[0].writes, 800);
        let v = super::super::verify::verify(&c.dests[0].path).unwrap();
        assert!(v.problems.is_empty(), "{:?}", v.problems);
        assert_eq!(v.last_commit, Some(800));
        for s in 0..4 {
            assert_eq!(v.session_last.get(&s), Some(&200));
        }
        // Every event was recorded, under the sessions the log writer would use.
        let run = RunDir::open(&out).unwrap();
        let mut per_name = std::collections::BTreeMap::<(String, u32), u64>::new();
        let (_, tail) = run
            .for_each_block(|names, evs| {
                for e in evs {
                    *per_name.entry((names.name(e.name), e.session)).or_default() += 1;
                }
            })
            .unwrap();
        assert_eq!(tail.ignored_bytes, 0);
        let count = |n: &str, s: u32| per_name.get(&(n.to_string(), s)).copied().unwrap_or(0);
        assert_eq!(count(EV_WRITE, dest_session(4, 0)), 800);
        assert_eq!((0..4).map(|s| count(EV_SYNC, s)).sum::<u64>(), 800);
        assert_eq!(count(EV_SWITCH, 4), r.counters.log_switches);
    }

    #[test]
    fn bad_options_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = cfg(dir.path(), 1, true);
        c.block_size = 3000;
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("--block-size 3000"));
        let mut c = cfg(dir.path(), 1, true);
        c.groups = 1;
        assert!(c.validate().unwrap_err().to_string().contains("--groups 1"));
        let mut c = cfg(dir.path(), 1, true);
        c.injections = vec!["flash:1ms".parse().unwrap()];
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("no destination"));
    }
}
