//! dbscope-cluster: TPC-H Query 1 on Apache DataFusion Ballista — Ballista's own scheduler and
//! executor embedded from the crates (`node`), Q1 planned as the official SQL or as an explicit
//! map/combine/shuffle/reduce plan (`plan`), run on a cluster (`job`) and checked against
//! dbscope's exact local job and the official answer (`answer`).
//!
//! DataFusion and Ballista take minutes to compile, so this crate is behind the `dbscope` binary's
//! `cluster` feature.

pub mod answer;
pub mod error;
pub mod job;
pub mod ledger;
pub mod monitor;
pub mod node;
pub mod plan;
pub mod record;

pub use answer::{differences_from_local, ClusterAnswer, ClusterRow, Scaled};
pub use error::{ApiError, ClusterError};
pub use job::{
    cancel_job, explain, reachable_scheduler, remote_context, run_q1, run_q1_in_process,
    scheduler_addr, ClusterJob, ClusterQ1Config, ClusterQ1Output, Way,
};
pub use monitor::{progress_line, ExecutorInfo, JobReport};
pub use node::{
    run_executor, run_scheduler, ExecutorOptions, ExecutorReady, SchedulerOptions,
    BALLISTA_VERSION, DATAFUSION_VERSION,
};
pub use plan::{Format, Lineitem};
