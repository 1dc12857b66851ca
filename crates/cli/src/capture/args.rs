//! Arguments of `dbscope capture …`, `dbscope replay` and `dbscope restore-point …` (clap).
//!
//! Record what an application does to PostgreSQL, look at what was recorded, replay it, and reset
//! the database to a restore point before each replay.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

/// `dbscope capture` and its subcommands.
#[derive(Debug, Args)]
pub struct CaptureArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: CaptureCommand,
}

/// Subcommands of `dbscope capture`.
#[derive(Debug, Subcommand)]
pub enum CaptureCommand {
    /// A PostgreSQL wire-protocol proxy: the application connects to it instead of the server;
    /// every byte is forwarded unchanged and every call of every session recorded.
    Proxy(CaptureProxyArgs),
    /// What a capture holds: sessions, calls, time span, statements by frequency and total time,
    /// the read/write mix, and what could not be captured.
    Info(CaptureInfoArgs),
    /// A capture from PostgreSQL's own server logs (log_min_duration_statement = 0,
    /// log_connections, log_disconnections): csvlog, jsonlog or stderr.
    Log(CaptureLogArgs),
}

/// `--format` of `capture log`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum LogFormatArg {
    /// log_destination = csvlog.
    Csv,
    /// log_destination = jsonlog (PostgreSQL 15+).
    Json,
    /// log_destination = stderr, with --prefix.
    Stderr,
}

/// `dbscope capture log FILE… --out CAP`
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  dbscope capture log /var/lib/postgresql/15/main/log/postgresql-*.csv --out cap1 --database bench
  dbscope capture log postgresql.json --out cap2
  dbscope capture log postgresql.log --prefix '%m [%p] %q%u@%d ' --out cap3

The server must log every statement with its duration, and connections:
  log_min_duration_statement = 0, log_connections = on, log_disconnections = on
(and for csvlog/jsonlog: logging_collector = on, log_destination = 'csvlog' or 'jsonlog').
A simple query is one call; an extended-protocol execution is one call with the values of its
`parameters:` detail; an ERROR with its statement is a failed call. Logs do not say how many rows a
statement touched nor its command tag: a replay of a log capture compares errors only. Times are
as exact as the log: the end to the millisecond (csvlog, %m), the duration to the microsecond.")]
pub struct CaptureLogArgs {
    /// Server log files, in any order (they are merged by time).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The capture directory to create.
    #[arg(long, value_name = "CAP")]
    pub out: PathBuf,
    /// The format (default: by file name: .csv, .json, else stderr).
    #[arg(long, value_enum)]
    pub format: Option<LogFormatArg>,
    /// log_line_prefix of a stderr log (%m %t %n %p %c %l %u %d %a %h %r %q are understood).
    #[arg(long, default_value = dbscope_capture::log::DEFAULT_PREFIX)]
    pub prefix: String,
    /// Only the sessions of this database.
    #[arg(long, value_name = "DB")]
    pub database: Option<String>,
}

/// `dbscope capture proxy --listen ADDR --upstream URI --out CAP`
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  dbscope capture proxy --listen 127.0.0.1:6543 --upstream postgres://localhost:5432 --out cap1
  pgbench -h 127.0.0.1 -p 6543 -c 4 -T 60 bench      # the application, pointed at the proxy
  dbscope capture info cap1
  dbscope capture proxy --listen /tmp/.s.PGSQL.6543 --upstream 'host=/var/run/postgresql' --out cap2
  psql -h /tmp -p 6543 bench                          # a Unix socket: libpq's host=DIR port=N

Stop with Ctrl-C (or --duration): everything recorded is kept. The capture is a run: `dbscope
report cap1` shows every statement's latency as the application saw it (through the proxy), and
cap1/capture-calls.jsonl holds each call with its values, timing, command tags and errors.
Authentication passes through untouched (trust, password, MD5, SCRAM-SHA-256). TLS is declined:
clients with sslmode=prefer (libpq's default) continue in clear; sslmode=require is refused by the
client's own library. Only where the upstream is is taken from --upstream (host, port or socket):
the application's own user, database and password reach the server.")]
pub struct CaptureProxyArgs {
    /// Where to listen: IP:PORT, a directory (the Unix socket DIR/.s.PGSQL.6543), or a Unix
    /// socket's path (libpq clients reach DIR/.s.PGSQL.N with host=DIR port=N, and no other name).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:6543")]
    pub listen: String,
    /// The server to forward to: a libpq connection string (URI or key=value; only host, port and
    /// socket directory are used).
    #[arg(long, value_name = "URI")]
    pub upstream: String,
    /// The capture directory to create.
    #[arg(long, value_name = "CAP")]
    pub out: PathBuf,
    /// Stop after this long (e.g. 60s, 10m); default: until Ctrl-C.
    #[arg(long, value_parser = crate::parse::parse_duration)]
    pub duration: Option<Duration>,
    /// Threads forwarding messages. One event loop serves every session with the fewest
    /// wake-ups (best on small machines); give more when one core cannot keep up with many
    /// busy clients.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: u16,
    /// Permissions of the Unix socket, in octal, as PostgreSQL's unix_socket_permissions
    /// (default 0777: any local user may connect; authentication decides). Only with a socket
    /// path as --listen.
    #[arg(long, value_name = "OCTAL", value_parser = parse_socket_mode)]
    pub socket_mode: Option<u32>,
    #[command(flatten)]
    pub observe: ObserveArgs,
    /// No progress line.
    #[arg(long, short)]
    pub quiet: bool,
}

/// How the server is watched while a capture or a replay runs (the report's "Database and OS").
#[derive(Debug, Args)]
pub struct ObserveArgs {
    /// The observer's own connection to the server (a libpq connection string, with the user,
    /// password and database to read the counters of). Default: the capture's --upstream or the
    /// replay's --target as given. Its database is the one whose counters (pg_stat_database,
    /// pg_stat_statements) are read; its role should have pg_monitor to see other users'
    /// sessions' waits.
    #[arg(long = "observe", value_name = "URI")]
    pub observe: Option<String>,
    /// Do not watch the server (no "Database and OS" section).
    #[arg(long, conflicts_with_all = ["observe", "sample_hz", "snapshot_every"])]
    pub no_observe: bool,
    /// Active-session samples per second of the sessions' backends (told by pid); 0: none.
    #[arg(long, default_value_t = 10.0, value_name = "HZ")]
    pub sample_hz: f64,
    /// Besides the start and the end, snapshot the server's and the OS's counters this often.
    #[arg(long, value_name = "DURATION", value_parser = crate::parse::parse_duration)]
    pub snapshot_every: Option<Duration>,
}

/// `--socket-mode`: octal permission bits, 0 to 0777 (an optional leading `0o`).
fn parse_socket_mode(s: &str) -> Result<u32, String> {
    let digits = s.strip_prefix("0o").unwrap_or(s);
    match u32::from_str_radix(digits, 8) {
        Ok(m) if m <= 0o777 && !digits.is_empty() => Ok(m),
        _ => Err(format!(
            "{s:?}: expected permission bits in octal, 0 to 0777 (e.g. 0777, 0770)"
        )),
    }
}

/// `dbscope capture info CAP`
#[derive(Debug, Args)]
pub struct CaptureInfoArgs {
    /// The capture directory.
    #[arg(value_name = "CAP")]
    pub capture: PathBuf,
    /// As JSON.
    #[arg(long)]
    pub json: bool,
    /// Statements listed.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
}

/// How fast to replay: a factor of the captured timing, or `max`.
#[derive(Debug, Clone, Copy)]
pub struct SpeedArg(pub dbscope_capture::replay::Speed);

fn parse_speed(s: &str) -> Result<SpeedArg, String> {
    use dbscope_capture::replay::Speed;
    if s.eq_ignore_ascii_case("max") {
        return Ok(SpeedArg(Speed::Max));
    }
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 => Ok(SpeedArg(Speed::Factor(f))),
        _ => Err(format!(
            "{s:?}: expected a factor above 0 (1 = as captured, 2 = twice as fast) or `max`"
        )),
    }
}

/// `--sync`
#[derive(Debug, Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub enum SyncArg {
    /// A call waits until every commit that preceded it in the capture has happened.
    Commit,
    /// Sessions keep only their own order.
    None,
}

/// `dbscope replay CAP --target URI`
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  dbscope restore-point create before --target postgres://bench@localhost/bench   # before capturing
  dbscope capture proxy --upstream postgres://localhost --out cap1                   # the application runs
  dbscope replay cap1 --target postgres://bench@localhost/bench --restore before     # same start, same calls
  dbscope replay cap1 --target … --restore before --speed max --out replay-max
  dbscope compare cap1 runs/…-replay                                                 # per statement

One replay session per captured session, connecting at its captured offset; each call is issued at
its captured start (think time kept) divided by --speed, so the concurrency is what it was; --speed
max issues every session's calls back to back. Each replayed call is an event named by its
statement (as in the capture) whose intended start is its scheduled time: `report` shows how far the
replay fell behind. Calls whose rows, command or error differ from the capture are counted by kind
in the report's Replay section and listed in replay-divergence.jsonl. COPY calls (their data is not
captured), statements prepared before the capture and calls the server skipped are not replayed.
A session that loses its connection inside a transaction skips to that transaction's end (those
calls are not replayed, and listed); a replay that lost connections is partial: it ends failed
(exit 1) and `compare` warns about it.")]
pub struct ReplayArgs {
    /// The capture directory (from `dbscope capture proxy`).
    #[arg(value_name = "CAP")]
    pub capture: PathBuf,
    /// Where to replay: a libpq connection string (every session uses it).
    #[arg(long, value_name = "URI")]
    pub target: String,
    /// Reset the target's database to this restore point first (`dbscope restore-point create`).
    #[arg(long, value_name = "NAME")]
    pub restore: Option<String>,
    /// Timing: a factor of the captured timing (1 = as captured, 2 = twice as fast) or `max`.
    #[arg(long, default_value = "1", value_parser = parse_speed)]
    pub speed: SpeedArg,
    /// Keep the captured commit order across sessions (`commit`) or not (`none`).
    #[arg(long, value_enum, default_value = "commit")]
    pub sync: SyncArg,
    /// With --sync commit, a write (anything but a read) waits for the commits that ended before
    /// its own captured end, and up to this much after it: the capture can see a commit's answer
    /// a little after the answer of a write that waited for that commit's locks. Less slack, less
    /// waiting; too little, and a write can take a lock before the commit it waited for in the
    /// capture (the replay then goes ahead after 50 ms and counts it).
    #[arg(long, value_name = "DURATION", default_value = "2ms", value_parser = crate::parse::parse_duration)]
    pub sync_slack: Duration,
    /// The run directory to create (default: runs/<timestamp>-replay).
    #[arg(long, value_name = "RUN")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub observe: ObserveArgs,
    /// Print only the run directory at the end.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `dbscope restore-point …`
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  dbscope restore-point create before --target postgres://bench@localhost/bench
  dbscope restore-point reset before --target postgres://bench@localhost/bench
  dbscope restore-point list --target postgres://bench@localhost/bench

A restore point is a copy of the target's database made by the server (CREATE DATABASE … TEMPLATE,
named dbscope_rp_NAME). PostgreSQL copies a database only while no one else is connected to it;
`reset` ends the sessions of the target's database (DROP DATABASE … WITH (FORCE)) and copies it
back. Both run on a connection to the `postgres` database of the same server.")]
pub struct RestorePointArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: RestorePointCommand,
}

/// Subcommands of `dbscope restore-point`.
#[derive(Debug, Subcommand)]
pub enum RestorePointCommand {
    /// Take restore point NAME of the target's database.
    Create(RestorePointName),
    /// Put the target's database back to restore point NAME.
    Reset(RestorePointName),
    /// Drop restore point NAME.
    Drop(RestorePointName),
    /// List the restore points on the target's server.
    List(RestorePointTarget),
}

/// A restore point's name and the target.
#[derive(Debug, Args)]
pub struct RestorePointName {
    /// The restore point's name (lower-case letters, digits, '_').
    pub name: String,
    /// The database (libpq connection string).
    #[arg(long, value_name = "URI")]
    pub target: String,
}

/// The target only.
#[derive(Debug, Args)]
pub struct RestorePointTarget {
    /// The database (libpq connection string).
    #[arg(long, value_name = "URI")]
    pub target: String,
}
