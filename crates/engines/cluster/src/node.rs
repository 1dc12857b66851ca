//! Ballista's own scheduler and executor, embedded: `dbscope cluster scheduler|executor` start them
//! from the crates (nothing reimplemented) and run them until Ctrl-C or SIGTERM.

use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ballista_core::serde::protobuf::scheduler_grpc_server::SchedulerGrpcServer;
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::create_scheduler;
use ballista_scheduler::scheduler_server::SchedulerServer;
use datafusion_proto::protobuf::{LogicalPlanNode, PhysicalPlanNode};

use crate::error::ClusterError;
use crate::ledger::{tasks_handler, Observed, TaskLedger, TASKS_ROUTE};

/// The Ballista version embedded (the wire protocol's; a stock cluster of the same major works).
pub const BALLISTA_VERSION: &str = ballista_core::BALLISTA_VERSION;
/// The DataFusion version embedded.
pub const DATAFUSION_VERSION: &str = datafusion::DATAFUSION_VERSION;

/// Splits `HOST:PORT` (IPv6 in brackets) and resolves it; `what` names the option in errors.
pub fn parse_addr(
    what: &'static str,
    given: &str,
) -> Result<(String, u16, SocketAddr), ClusterError> {
    let bad = |detail: String| ClusterError::Address {
        what,
        given: given.to_string(),
        detail,
    };
    let (host, port) = given
        .rsplit_once(':')
        .ok_or_else(|| bad("no port".into()))?;
    let port: u16 = port
        .parse()
        .map_err(|_| bad(format!("port {port:?} is not a number from 0 to 65535")))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(bad("no host".into()));
    }
    let addr = (host, port)
        .to_socket_addrs()
        .map_err(|e| bad(e.to_string()))?
        .next()
        .ok_or_else(|| bad("the host name resolves to no address".into()))?;
    Ok((host.to_string(), port, addr))
}

/// A multi-threaded runtime with the large stacks Ballista's binaries use (deep plans recurse);
/// the nodes and the client's jobs run on one.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, ClusterError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(32 * 1024 * 1024)
        .build()
        .map_err(ClusterError::Runtime)
}

/// `dbscope cluster scheduler`.
#[derive(Clone, Debug)]
pub struct SchedulerOptions {
    /// `HOST:PORT` to listen on (clients and executors connect here).
    pub bind: String,
    /// Host name executors and clients are told to use for this scheduler. Default: the bind host.
    pub external_host: Option<String>,
    /// Seconds without a heartbeat after which an executor is lost and its tasks are run again
    /// elsewhere (Ballista's default: 180).
    pub executor_timeout_s: u64,
}

/// Runs Ballista's scheduler until Ctrl-C or SIGTERM. `ready` is called once it listens, with
/// the bound address.
pub fn run_scheduler(
    opts: &SchedulerOptions,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ClusterError> {
    let (host, port, addr) = parse_addr("--bind", &opts.bind)?;
    let rt = runtime()?;
    rt.block_on(async move {
        // Bind first, ourselves, so a port in use is an error naming the address.
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ClusterError::Bind {
                addr: opts.bind.clone(),
                role: "scheduler",
                source,
            })?;
        let bound = listener.local_addr().map_err(|source| ClusterError::Bind {
            addr: opts.bind.clone(),
            role: "scheduler",
            source,
        })?;
        let config = SchedulerConfig {
            bind_host: host.clone(),
            bind_port: if port == 0 { bound.port() } else { port },
            external_host: opts.external_host.clone().unwrap_or(host),
            executor_timeout_seconds: opts.executor_timeout_s,
            // Checked often enough that a short timeout takes effect.
            expire_dead_executor_interval_seconds: (opts.executor_timeout_s / 3).clamp(1, 15),
            ..SchedulerConfig::default()
        };
        let node = |e: ballista_core::error::BallistaError| ClusterError::Node {
            role: "scheduler",
            detail: e.to_string(),
        };
        config.validate().map_err(node)?;
        let cluster = BallistaCluster::new_from_config(&config)
            .await
            .map_err(node)?;
        let scheduler =
            create_scheduler::<LogicalPlanNode, PhysicalPlanNode>(cluster, Arc::new(config))
                .await
                .map_err(node)?;
        ready(bound);
        tokio::select! {
            r = serve(listener, scheduler) => r.map_err(|e| ClusterError::Node {
                role: "scheduler",
                detail: e.to_string(),
            }),
            _ = stop_signal() => Ok(()),
        }
    })
}

/// Serves what Ballista's `start_grpc_service_with_listener` serves for this configuration —
/// the scheduler's gRPC service, its REST API (`/api/…`) and its health probes — with the gRPC
/// service wrapped in [`Observed`] and dbscope's task ledger route beside the REST API (see
/// `ledger`). Not served: Ballista's Flight SQL front end and embedded Flight proxy, both off in
/// the configuration above.
async fn serve(
    listener: tokio::net::TcpListener,
    scheduler: SchedulerServer<LogicalPlanNode, PhysicalPlanNode>,
) -> std::io::Result<()> {
    use axum::routing::get;
    let config = scheduler.state.config.clone();
    let ledger = Arc::new(TaskLedger::default());
    let grpc = SchedulerGrpcServer::new(Observed {
        inner: scheduler.clone(),
        ledger: ledger.clone(),
    })
    .max_encoding_message_size(config.grpc_server_max_encoding_message_size as usize)
    .max_decoding_message_size(config.grpc_server_max_decoding_message_size as usize);
    let mut routes = tonic::service::RoutesBuilder::default();
    routes.add_service(grpc);
    let tonic = routes
        .routes()
        .into_axum_router()
        .fallback(|| async { axum::http::StatusCode::NOT_FOUND });
    let scheduler = Arc::new(scheduler);
    let ready = scheduler.clone();
    let health = axum::Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(move || async move {
                if ready.is_ready() {
                    (axum::http::StatusCode::OK, "ready\n")
                } else {
                    (axum::http::StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
                }
            }),
        );
    let ours = axum::Router::new()
        .route(TASKS_ROUTE, get(tasks_handler))
        .with_state(ledger);
    let app = ballista_scheduler::api::get_routes(scheduler)
        .merge(ours)
        .merge(tonic)
        .merge(health);
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await
}

/// Resolves on Ctrl-C or SIGTERM.
async fn stop_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async {
            match term.as_mut() {
                Some(t) => { t.recv().await; }
                None => std::future::pending::<()>().await,
            }
        } => {}
    }
}

/// `dbscope cluster executor`.
#[derive(Clone, Debug)]
pub struct ExecutorOptions {
    /// The scheduler's `HOST:PORT`.
    pub scheduler: String,
    /// `HOST:PORT` of this executor's Arrow Flight service (shuffle data and results are fetched
    /// from it); its gRPC service (tasks pushed by the scheduler) listens on `grpc_port`.
    pub bind: String,
    /// Port of the gRPC service. Default: the Flight port + 1.
    pub grpc_port: Option<u16>,
    /// Host name the scheduler and other executors are told to reach this one at. Default: the
    /// bind host.
    pub external_host: Option<String>,
    /// Tasks run at once (Ballista's vcores).
    pub slots: usize,
    /// Where shuffle files are written (created if missing).
    pub work_dir: PathBuf,
    /// Seconds between heartbeats to the scheduler (Ballista's default: 60).
    pub heartbeat_s: u64,
}

/// What a started executor says about itself.
#[derive(Clone, Debug)]
pub struct ExecutorReady {
    /// Flight service address.
    pub flight: String,
    /// gRPC service port.
    pub grpc_port: u16,
    /// The scheduler.
    pub scheduler: String,
}

/// Runs Ballista's executor until Ctrl-C, SIGTERM or the scheduler's stop request. Checks first
/// that the scheduler answers and that both ports are free, so those failures name the address.
pub fn run_executor(
    opts: &ExecutorOptions,
    ready: impl FnOnce(&ExecutorReady),
) -> Result<(), ClusterError> {
    let (sched_host, sched_port, sched_addr) = parse_addr("--scheduler", &opts.scheduler)?;
    let (host, port, addr) = parse_addr("--bind", &opts.bind)?;
    if port == 0 {
        return Err(ClusterError::Address {
            what: "--bind",
            given: opts.bind.clone(),
            detail: "an executor needs a fixed port: the scheduler and the other executors are \
                     told it"
                .into(),
        });
    }
    let grpc_port = opts.grpc_port.unwrap_or(port.wrapping_add(1));
    if opts.slots == 0 {
        return Err(ClusterError::Input("--slots must be at least 1".into()));
    }
    if opts.heartbeat_s == 0 {
        return Err(ClusterError::Input(
            "--heartbeat must be at least 1 second".into(),
        ));
    }
    TcpStream::connect_timeout(&sched_addr, Duration::from_secs(5)).map_err(|e| {
        ClusterError::Unreachable {
            addr: opts.scheduler.clone(),
            detail: e.to_string(),
        }
    })?;
    for (p, role) in [
        (port, "executor's Arrow Flight service"),
        (grpc_port, "executor's gRPC service"),
    ] {
        let a = SocketAddr::new(addr.ip(), p);
        TcpListener::bind(a).map_err(|source| ClusterError::Bind {
            addr: a.to_string(),
            role,
            source,
        })?;
    }
    std::fs::create_dir_all(&opts.work_dir).map_err(|source| ClusterError::WorkDir {
        path: opts.work_dir.clone(),
        source,
    })?;
    let work_dir = std::fs::canonicalize(&opts.work_dir).unwrap_or(opts.work_dir.clone());
    let config = ExecutorProcessConfig {
        bind_host: host.clone(),
        external_host: Some(opts.external_host.clone().unwrap_or(host)),
        port,
        grpc_port,
        scheduler_host: sched_host,
        scheduler_port: sched_port,
        vcores: opts.slots,
        work_dir: Some(work_dir.display().to_string()),
        print_thread_info: false,
        executor_heartbeat_interval_seconds: opts.heartbeat_s,
        ..ExecutorProcessConfig::default()
    };
    let rt = runtime()?;
    ready(&ExecutorReady {
        flight: SocketAddr::new(addr.ip(), port).to_string(),
        grpc_port,
        scheduler: opts.scheduler.clone(),
    });
    rt.block_on(start_executor_process(Arc::new(config)))
        .map_err(|e| match e {
            ballista_core::error::BallistaError::GrpcConnectionError(detail) => {
                ClusterError::Unreachable {
                    addr: opts.scheduler.clone(),
                    detail,
                }
            }
            e => ClusterError::Node {
                role: "executor",
                detail: e.to_string(),
            },
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_checked() {
        assert_eq!(parse_addr("--bind", "127.0.0.1:50050").unwrap().1, 50050);
        assert_eq!(parse_addr("--bind", "[::1]:7").unwrap().0, "::1");
        for bad in ["127.0.0.1", "127.0.0.1:x", ":5", "127.0.0.1:70000"] {
            let e = parse_addr("--bind", bad).unwrap_err().to_string();
            assert!(e.starts_with("--bind \""), "{bad}: {e}");
        }
    }

    #[test]
    fn an_unreachable_scheduler_is_named() {
        // A port we bound and closed: nothing listens there.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let opts = ExecutorOptions {
            scheduler: format!("127.0.0.1:{port}"),
            bind: "127.0.0.1:1".into(),
            grpc_port: None,
            external_host: None,
            slots: 1,
            work_dir: dir.path().into(),
            heartbeat_s: 60,
        };
        let e = run_executor(&opts, |_| panic!("must not start")).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("scheduler at 127.0.0.1:{port} cannot be reached")),
            "{msg}"
        );
    }

    #[test]
    fn a_port_in_use_is_named() {
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let e = run_scheduler(
            &SchedulerOptions {
                bind: addr.to_string(),
                external_host: None,
                executor_timeout_s: 180,
            },
            |_| panic!("must not start"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with(&format!("cannot listen on {addr} for the scheduler")),
            "{e}"
        );
    }
}
