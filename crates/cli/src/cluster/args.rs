//! Arguments of `dbscope cluster`: Ballista's scheduler and executor, embedded (clap).
//!
//! Apache DataFusion Ballista, built with the `cluster` cargo feature.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `dbscope cluster …`.
#[derive(Debug, Args)]
pub struct ClusterArgs {
    /// Which node to run.
    #[command(subcommand)]
    pub command: ClusterCommand,
}

/// The `cluster` subcommands.
#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Run a Ballista scheduler (clients and executors connect to it) until Ctrl-C.
    Scheduler(SchedulerArgs),
    /// Run a Ballista executor that registers with a scheduler and runs its tasks, until Ctrl-C.
    Executor(ExecutorArgs),
}

/// `dbscope cluster scheduler`.
#[derive(Debug, Args)]
#[command(
    after_help = "Ballista's own scheduler (the ballista-scheduler crate, embedded). Jobs come from
`dbscope tpch q1 DIR --engine ballista --scheduler df://HOST:PORT` or any Ballista client.

Examples:
  dbscope cluster scheduler --bind 127.0.0.1:50050
  dbscope cluster executor --scheduler 127.0.0.1:50050 --slots 2 --work-dir /tmp/exec1"
)]
pub struct SchedulerArgs {
    /// Address to listen on (gRPC for clients and executors).
    #[arg(long, default_value = "127.0.0.1:50050", value_name = "HOST:PORT")]
    pub bind: String,
    /// Host name to advertise to clients and executors. Default: the --bind host.
    #[arg(long, value_name = "HOST")]
    pub external_host: Option<String>,
    /// Seconds without a heartbeat after which an executor counts as lost: its tasks (and the
    /// shuffle output it held) are run again on the others. Keep it above the executors'
    /// --heartbeat (Ballista's default, 180, with its 60 s heartbeat).
    #[arg(long, default_value_t = 180, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub executor_timeout: u64,
}

/// `dbscope cluster executor`.
#[derive(Debug, Args)]
#[command(
    after_help = "Ballista's own executor (the ballista-executor crate, embedded). It reads the job's
input files at the paths the client gives, so every executor must see the data at the same absolute
path (a shared file system); shuffle files go to --work-dir.

Examples:
  dbscope cluster executor --scheduler 127.0.0.1:50050 --slots 2 --work-dir /tmp/exec1
  dbscope cluster executor --scheduler 127.0.0.1:50050 --slots 2 --work-dir /tmp/exec2 --bind 127.0.0.1:50061"
)]
pub struct ExecutorArgs {
    /// The scheduler's address.
    #[arg(long, value_name = "HOST:PORT")]
    pub scheduler: String,
    /// Tasks this executor runs at once.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub slots: usize,
    /// Directory for shuffle files (created if missing).
    #[arg(long, value_name = "DIR")]
    pub work_dir: PathBuf,
    /// Address of the executor's Arrow Flight service (shuffle and result data are fetched from
    /// it); its gRPC service listens on the next port unless --grpc-port says otherwise.
    #[arg(long, default_value = "127.0.0.1:50051", value_name = "HOST:PORT")]
    pub bind: String,
    /// Port of the executor's gRPC service (tasks pushed by the scheduler). Default: --bind's + 1.
    #[arg(long, value_name = "PORT")]
    pub grpc_port: Option<u16>,
    /// Host name to advertise to the scheduler and other executors. Default: the --bind host.
    #[arg(long, value_name = "HOST")]
    pub external_host: Option<String>,
    /// Seconds between heartbeats to the scheduler (it declares the executor lost after its
    /// --executor-timeout without one).
    #[arg(long, default_value_t = 60, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub heartbeat: u64,
}
