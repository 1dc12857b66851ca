//! Arguments of `dbscope io …`: storage tests that need no database (`io redo`, `io redo verify`).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};

use crate::parse::parse_duration;

/// `dbscope io`: storage I/O tests.
#[derive(Debug, Args)]
pub struct IoArgs {
    #[command(subcommand)]
    pub command: IoCommand,
}

#[derive(Debug, Subcommand)]
pub enum IoCommand {
    /// A redo log writer on real files: group commit, 512/1024/4096-byte blocks, a two-destination
    /// race, the sector-size check. Records `log file sync` and `log file parallel write`.
    Redo(RedoArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SyncArg {
    /// Open the log with O_DSYNC: each write returns once durable.
    Dsync,
    /// write(), then fdatasync().
    Fdatasync,
    /// O_DIRECT | O_DSYNC with aligned buffers (no page cache).
    DirectDsync,
}

#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Examples:
  dbscope io redo --dest /var/tmp/redo.log --sessions 20 --duration 10s
  dbscope io redo --dest /var/tmp/redo.log --block-size 4096 --no-group-commit --ops 20000 \\
                  --sector-size-override   # 4 KiB blocks on a disk of 512-byte sectors
  dbscope io redo --dest disk=/var/tmp/redo.log --dest flash=/dev/shm/redo.log \\
                  --inject disk:p=0.001:300ms --sessions 8 --duration 30s
  dbscope io redo verify /var/tmp/redo.log /dev/shm/redo.log

The run directory holds manifest.json, events.dsev and redo.json (group-commit factor and
race counters); `dbscope report RUN` shows them."
)]
pub struct RedoArgs {
    #[command(subcommand)]
    pub sub: Option<RedoSub>,

    /// Log file (or block device), optionally named: `disk=/var/tmp/redo.log`. Give two to race
    /// them: each write goes to both and commits are acknowledged when the first completes; the
    /// slower one catches up in the background, within a bounded backlog (docs/io-redo.md).
    #[arg(long = "dest", value_name = "[NAME=]PATH")]
    pub dests: Vec<String>,

    /// Committer threads.
    #[arg(long, short = 's', default_value_t = 1, value_name = "N")]
    pub sessions: u32,

    /// Commits per session. With neither --ops nor --duration: 10s.
    #[arg(long, value_name = "N")]
    pub ops: Option<u64>,

    /// How long to issue commits, e.g. 10s, 5m; what is in flight then is drained, and the
    /// report says how long that took.
    #[arg(long, short = 'd', value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Commits per second per session (open loop; latency counts from the scheduled start).
    #[arg(long, value_name = "PER_S")]
    pub rate: Option<f64>,

    /// Commit record sizes, drawn uniformly (seeded) from MIN..MAX bytes, header included.
    #[arg(long, default_value = "200..2000", value_name = "MIN..MAX", value_parser = parse_range)]
    pub record_bytes: (u32, u32),

    /// Redo block size: 512, 1024 or 4096.
    #[arg(long, default_value_t = 512, value_name = "BYTES")]
    pub block_size: usize,

    /// How each write is made durable.
    #[arg(long, value_enum, default_value = "dsync")]
    pub sync: SyncArg,

    /// One record per write (no group commit), for comparison.
    #[arg(long)]
    pub no_group_commit: bool,

    /// Size of each destination's circular log, e.g. 64MiB.
    #[arg(long, default_value = "64MiB", value_name = "SIZE", value_parser = parse_size)]
    pub log_size: u64,

    /// Groups the log is divided into (at least 2); moving to the next is a log switch.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub groups: u32,

    /// A write whose own write + sync takes longer than this is an outlier (FL_PREVENTED_OUTLIERS
    /// counts the loser's outliers that the winner covered while no commit waited for them).
    #[arg(long, default_value = "500ms", value_name = "DURATION", value_parser = parse_duration)]
    pub outlier: Duration,

    /// Seeded, recorded extra delay on one destination's writes: DEST:p=PROB:DELAY,
    /// DEST:DELAY, or DEST:lognormal:MEDIAN:SIGMA (DEST: a name or 1, 2). Repeatable.
    #[arg(long, value_name = "DEST:SPEC")]
    pub inject: Vec<String>,

    /// Proceed although the block size is below the device's logical sector size or above its
    /// physical one (which ORA-01378 refuses; like Oracle's _disk_sector_size_override).
    #[arg(long)]
    pub sector_size_override: bool,

    /// Where sysfs is mounted (tests point this at a fake tree).
    #[arg(long, default_value = "/sys", value_name = "DIR", hide = true)]
    pub sysfs_root: PathBuf,

    /// Seed of record sizes and injected delays (recorded).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Run directory. Default: runs/<UTC timestamp>-io-redo.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// No progress display and no report at the end; print only the run directory.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Debug, Subcommand)]
pub enum RedoSub {
    /// Check a log written by `io redo`: every block's checksum and sequence, the chain of writes,
    /// the last durable commit. Exit 1 when a block is torn or damaged (reported with its offset).
    Verify(VerifyArgs),
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Log files (all destinations of one run: a commit is durable when any of them holds it).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Parses `MIN..MAX` (or a single size).
fn parse_range(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("{s:?} is not a range of bytes; use e.g. 200..2000");
    let (a, b) = s.split_once("..").unwrap_or((s, s));
    let a: u32 = a.trim().parse().map_err(|_| bad())?;
    let b: u32 = b.trim().parse().map_err(|_| bad())?;
    Ok((a, b))
}

/// Parses `64MiB`, `1GiB`, `512KiB`, `100MB`, `4096`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size; use e.g. 64MiB, 1GiB, 4096"))?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" | "k" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        "KB" | "kB" => 1000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        u => {
            return Err(format!(
                "{s:?}: unknown unit {u:?}; use KiB, MiB, GiB, KB, MB or GB"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{s:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_ranges() {
        assert_eq!(parse_size("64MiB").unwrap(), 64 << 20);
        assert_eq!(parse_size("100MB").unwrap(), 100_000_000);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5XB").is_err());
        assert_eq!(parse_range("200..2000").unwrap(), (200, 2000));
        assert_eq!(parse_range("512").unwrap(), (512, 512));
        assert!(parse_range("a..b").is_err());
    }
}
