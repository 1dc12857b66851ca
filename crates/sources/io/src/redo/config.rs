//! The `io redo` configuration: destinations, sync modes, sizes, and the checks that refuse a bad one before anything is written.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::super::block::{blocks_for, BLOCK_SIZES, RECORD_HEADER};
use super::super::inject::Injection;
use crate::error::Error;

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
    type Err = Error;
    /// `PATH` or `NAME=PATH`; the default name is set by the caller from the position.
    fn from_str(s: &str) -> Result<Self, Error> {
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
            return Err(Error::Config(format!(
                "--dest {s:?}: empty path; use --dest [NAME=]PATH"
            )));
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
    /// A write whose own service time (write + sync + injected delay on its destination) exceeds
    /// this is an outlier.
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

impl RedoConfig {
    /// Checks the options that do not need the file system; the message names the option.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::Config(m));
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

    /// How far the slower of two destinations may fall behind, in blocks (see
    /// `backlog_limit`); 0 with one destination.
    pub fn backlog_limit_blocks(&self) -> u64 {
        if self.dests.len() < 2 {
            return 0;
        }
        backlog_limit(
            self.groups,
            self.blocks_per_group(),
            blocks_for(self.record_bytes.1 as usize, self.block_size) as u64,
        )
    }

    /// Redo blocks per group.
    pub fn blocks_per_group(&self) -> u64 {
        (self.log_size / self.groups.max(1) as u64 / self.block_size as u64)
            .min(u32::MAX as u64 / 4)
    }

    /// The destination an `--inject` names (by name or 1-based index).
    pub(super) fn dest_index(&self, dest: &str) -> Result<usize, Error> {
        if let Some(i) = self.dests.iter().position(|d| d.name == dest) {
            return Ok(i);
        }
        match dest.parse::<usize>() {
            Ok(i) if (1..=self.dests.len()).contains(&i) => Ok(i - 1),
            _ => Err(Error::Config(format!(
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

/// How far the slower of two destinations may fall behind, in blocks: what the other groups hold
/// after a log switch, less the tail a group may leave unused. A group is left only when a
/// record does not fit in the rest of it, so every group the log writer moved through since it
/// last wrote into a group holds more than `blocks_per_group - record_blocks` blocks (the
/// largest record's blocks); a backlog within this limit therefore never reaches back into the
/// group a log switch moves into, and a switch never waits for the slower copy. This is the
/// bound the log's reuse rule sets, enforced write by write instead of at the switch.
fn backlog_limit(groups: u32, blocks_per_group: u64, record_blocks: u64) -> u64 {
    (groups as u64).saturating_sub(1) * blocks_per_group.saturating_sub(record_blocks)
}
