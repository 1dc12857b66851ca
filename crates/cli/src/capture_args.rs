//! Arguments of `dbscope capture …`: record what an application does to PostgreSQL, and look at
//! what was recorded.

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
}

/// `dbscope capture proxy --listen ADDR --upstream URI --out CAP`
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  dbscope capture proxy --listen 127.0.0.1:6543 --upstream postgres://localhost:5432 --out cap1
  pgbench -h 127.0.0.1 -p 6543 -c 4 -T 60 bench      # the application, pointed at the proxy
  dbscope capture info cap1

Stop with Ctrl-C (or --duration): everything recorded is kept. The capture is a run: `dbscope
report cap1` shows every statement's latency as the application saw it (through the proxy), and
cap1/capture-calls.jsonl holds each call with its values, timing, command tags and errors.
Authentication passes through untouched (trust, password, MD5, SCRAM-SHA-256). TLS is declined:
clients with sslmode=prefer (libpq's default) continue in clear; sslmode=require is refused by the
client's own library. Only where the upstream is is taken from --upstream (host, port or socket):
the application's own user, database and password reach the server.")]
pub struct CaptureProxyArgs {
    /// Address to listen on (IP:PORT).
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
    /// No progress line.
    #[arg(long, short)]
    pub quiet: bool,
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
