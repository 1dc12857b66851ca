//! The cluster crate's errors, by category: a node that cannot start or be reached, input that
//! cannot be planned, a job that failed on the cluster, an answer that is not the local job's.

use std::path::PathBuf;

/// What went wrong starting a node or running a job on the cluster.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// An address given on the command line is not HOST:PORT.
    #[error("{what} {given:?} is not HOST:PORT ({detail})")]
    Address {
        /// Which option (`--bind`, `--scheduler`, …).
        what: &'static str,
        /// What was given.
        given: String,
        /// Why it is not an address.
        detail: String,
    },
    /// A port to listen on cannot be bound (in use, or not ours to bind).
    #[error("cannot listen on {addr} for the {role}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// `scheduler`, `executor's Arrow Flight service`, …
        role: &'static str,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The scheduler does not answer at its address.
    #[error("the Ballista scheduler at {addr} cannot be reached: {detail} (is `dbscope cluster scheduler --bind {addr}` running, and is the address reachable from here?)")]
    Unreachable {
        /// `HOST:PORT`.
        addr: String,
        /// The connection error.
        detail: String,
    },
    /// Ballista's scheduler or executor stopped with an error.
    #[error("the Ballista {role} failed: {detail}")]
    Node {
        /// `scheduler` or `executor`.
        role: &'static str,
        /// Ballista's message.
        detail: String,
    },
    /// A directory for the executor cannot be created.
    #[error("cannot create the executor's work directory {path}: {source}")]
    WorkDir {
        /// The directory.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
    /// The input files cannot be planned (none, mixed formats, not absolute…).
    #[error("{0}")]
    Input(String),
    /// DataFusion could not plan the query.
    #[error("planning Q1 failed: {0}")]
    Plan(String),
    /// The job failed on the cluster (a task's error, a lost executor past Ballista's retries…).
    #[error("the Q1 job failed on the Ballista cluster at {scheduler}: {detail}")]
    Job {
        /// The scheduler's address.
        scheduler: String,
        /// Ballista's message.
        detail: String,
    },
    /// The result does not have Q1's shape (columns, types).
    #[error("the cluster's result is not Q1's: {0}")]
    Shape(String),
    /// The runtime cannot start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
}

/// Why the scheduler's REST API did not say what was asked (`crate::monitor::Rest`). Never fatal:
/// a job's report keeps these messages as what it could not read.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The path does not make a URI with the scheduler's address.
    #[error("{path}: {source}")]
    Uri {
        /// The API path.
        path: String,
        /// Why.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// No answer within the time allowed.
    #[error("{path} on {addr}: no answer in {secs} s")]
    Timeout {
        /// The API path.
        path: String,
        /// The scheduler's `HOST:PORT`.
        addr: String,
        /// Seconds waited.
        secs: u64,
    },
    /// The request or the reading of the answer failed (connection refused, reset, …).
    #[error("{path} on {addr}: {source}")]
    Http {
        /// The API path.
        path: String,
        /// The scheduler's `HOST:PORT`.
        addr: String,
        /// The HTTP client's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An HTTP status other than success.
    #[error("{path} on {addr}: HTTP {status}")]
    Status {
        /// The API path.
        path: String,
        /// The scheduler's `HOST:PORT`.
        addr: String,
        /// The status.
        status: hyper::StatusCode,
    },
    /// The scheduler does not serve the path at all.
    #[error("GET {path} on {addr}: HTTP 404 (a scheduler built without Ballista's rest-api feature does not serve it)")]
    NotServed {
        /// The API path.
        path: String,
        /// The scheduler's `HOST:PORT`.
        addr: String,
    },
    /// The answer is not JSON.
    #[error("{path} on {addr}: {source}")]
    Json {
        /// The API path.
        path: String,
        /// The scheduler's `HOST:PORT`.
        addr: String,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// The answer is JSON but not of the shape asked for.
    #[error("GET {path}: unexpected answer: {source}")]
    Unexpected {
        /// The API path.
        path: String,
        /// What did not fit.
        source: serde_json::Error,
    },
    /// `/api/executors` did not answer a list.
    #[error("GET {path}: not a list")]
    NotAList {
        /// The API path.
        path: String,
    },
}
