//! `dbscope capture proxy`: a PostgreSQL wire-protocol proxy that forwards every byte unchanged and
//! records every call of every session (see [`crate::calls`]) into a capture.
//!
//! A session is set up on tokio (its startup message, connecting upstream), then forwarded by one
//! of the forwarding loops (`relay`: one thread by default, on `mio`): a thread wakes only when no
//! socket was ready, so under load one wake-up serves many messages, and a slow direction never
//! holds up the other. What the client sends is read by the tracker *before* it is
//! forwarded (so the server's answer can never be seen before the request it answers); what the
//! server sends is forwarded first and read afterwards. Authentication passes through
//! untouched (password, MD5, SCRAM-SHA-256: the proxy never sees a password in clear, and the
//! `PasswordMessage` body is not even kept in memory). TLS is declined (`N` to an `SSLRequest` or
//! `GSSENCRequest`): a client with `sslmode=prefer` (libpq's default) goes on in clear, one with
//! `sslmode=require` is refused by its own library, which says so.
//!
//! Modules: `listen` (the listening socket, the descriptor limit, the loop check), `session` (the
//! accept loop and a session's setup), `relay` (the forwarding loops), `track` (what each call
//! goes through: the messages tracked, event names, recording), `quiet` (sockets on tokio that
//! wake it only to read), `calls_file` (the calls written as JSON lines), `shared` (what they
//! share); this module runs a capture from start to end.

mod calls_file;
mod listen;
mod quiet;
mod relay;
mod session;
mod shared;
mod track;

pub(crate) use calls_file::CallsFile;
pub use listen::Listening;
pub use shared::Live;
pub use track::event_name;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use dbscope_core::manifest::{Manifest, Outcome, TargetInfo, WorkloadInfo};
use dbscope_core::redact::redact;
use dbscope_core::{Recording, StopSignal};
use dbscope_pgwire::connect_socket;
use serde_json::json;
use tokio::sync::watch;

use crate::watch::OpenWatch;
use crate::{CaptureError, CALLS_FILE};

use listen::{loops_back, raise_fd_limit, sessions_within, Listener};
use relay::Relays;
use session::serve_all;
use shared::{Base, FLUSH_EVERY, WATCH_EVERY};

/// What to run.
pub struct ProxyConfig {
    /// Where to listen: `IP:PORT` (TCP), or a path (a Unix socket, e.g. `/tmp/.s.PGSQL.6543`, which
    /// libpq clients reach with `host=/tmp port=6543`).
    pub listen: String,
    /// The server, as a libpq connection string (only where it is: host, port, socket).
    pub upstream: String,
    /// The capture directory to create.
    pub out: PathBuf,
    /// Stop by itself after this long (else on the stop signal only).
    pub duration: Option<Duration>,
    /// Forwarding loops, a thread each (1: one loop for every session, the least wake-ups).
    pub threads: usize,
    /// The command line, for the manifest (redacted there).
    pub command_line: Vec<String>,
    /// Permissions of a Unix socket (PostgreSQL's `unix_socket_permissions`, default 0777: any
    /// local user may connect, authentication decides); ignored for TCP.
    pub socket_mode: u32,
    /// Watches the upstream server while the capture runs (its counters, devices and the
    /// captured sessions' waits): the binary gives the lab's observer; `None`: not watched.
    pub watch: Option<OpenWatch>,
    /// The upstream's server version and settings as the binary read them (recorded as every
    /// run's target is); `None`: the kind and location only.
    pub target_info: Option<TargetInfo>,
}

/// PostgreSQL's default `unix_socket_permissions`.
pub const DEFAULT_SOCKET_MODE: u32 = 0o777;

/// What a capture recorded.
#[derive(Debug, Default, Clone)]
pub struct ProxySummary {
    /// The capture directory.
    pub dir: PathBuf,
    /// Sessions that connected.
    pub sessions: u32,
    /// Calls recorded.
    pub calls: u64,
    /// Calls that ended in an error.
    pub errors: u64,
    /// Seconds from the first connection to the stop.
    pub seconds: f64,
}

/// Runs the proxy until `stop` fires (or `duration` passes): accepts clients, forwards, records.
/// `progress` is called about every second with the live figures.
/// `listening` is told where the proxy listens (a port 0 in `listen` is chosen by the system)
/// once the upstream has answered and the capture has begun.
///
/// Every session is forwarded by one loop ([`ProxyConfig::threads`] = 1, the default) or a few:
/// a message costs the proxy a `read` and a `write`, and a thread wakes only when nothing was
/// ready, so under load one wake-up serves many messages. (One thread per direction per session
/// costs two wake-ups per round trip: on two cores that halved `pgbench -S`.) A call is serialized
/// by the loop that tracked it; writing the calls file happens on the recording thread, off the
/// forwarding path.
pub fn run(
    cfg: &ProxyConfig,
    stop: &Arc<StopSignal>,
    listening: impl FnOnce(&Listening),
    mut progress: impl FnMut(&Live, Duration),
) -> Result<ProxySummary, CaptureError> {
    // The runtime accepts clients and sets their sessions up; the forwarding loops serve them.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CaptureError::Config(format!("cannot start the proxy: {e}")))?;
    let (listener, local) = {
        let _in = rt.enter();
        Listener::bind(&cfg.listen, cfg.socket_mode)
            .map_err(|e| CaptureError::Config(format!("cannot listen on {}: {e}", cfg.listen)))?
    };
    if let Some(why) = loops_back(&cfg.upstream, &local) {
        return Err(CaptureError::Config(format!(
            "--upstream {} is the proxy's own --listen address ({why}): every client would be \
             sent back to the proxy; give the server's address",
            redact(&cfg.upstream)
        )));
    }
    // The upstream must be reachable now: better said at once than at the first client.
    match connect_socket(&cfg.upstream) {
        Ok(s) => drop(s),
        Err(why) => {
            return Err(CaptureError::Connect {
                message: format!("upstream {} is not reachable: {why}", redact(&cfg.upstream)),
                source: why,
            })
        }
    }
    let mut params = BTreeMap::new();
    params.insert("listen".to_string(), json!(cfg.listen));
    let mut manifest = Manifest::new(
        "capture",
        WorkloadInfo {
            name: "pg-capture".into(),
            params,
        },
        0,
    );
    manifest.command_line = cfg.command_line.clone();
    manifest.target = Some(TargetInfo {
        kind: "postgres".into(),
        location: redact(&cfg.upstream),
        ..cfg.target_info.clone().unwrap_or_default()
    });
    // Each client costs two descriptors (its socket and the upstream's): the soft limit (often
    // 1,024) is raised to the hard one, and what the proxy has is recorded.
    let fd_limit = raise_fd_limit();
    let max_sessions = fd_limit.map(sessions_within);
    manifest
        .workload
        .params
        .insert("fd_limit".into(), json!(fd_limit));
    manifest
        .workload
        .params
        .insert("max_sessions".into(), json!(max_sessions));
    let mut rec = Recording::begin(&cfg.out, manifest)?;
    crate::private::private_dir(&cfg.out).map_err(|e| CaptureError::io(&cfg.out, e))?;
    let calls = Arc::new(CallsFile::create(&cfg.out.join(CALLS_FILE))?);
    // The observer's connection is opened and the server's places found before the clock starts
    // (the manifest records them), its start snapshot taken before any client is let in.
    let mut watch = cfg.watch.as_ref().and_then(|open| open(rec.dir()));
    if let Some(w) = &watch {
        rec.manifest_mut().storage = w.storage();
    }
    let clock = rec.start_clock()?;
    if let Some(w) = watch.as_mut() {
        w.start(&clock);
    }
    let (sessions, batches) = rec.sessions(&clock, 0, 256);
    let live = Arc::new(Live::default());
    let started = Instant::now();
    listening(&local);
    let base = Arc::new(Base {
        fd_limit,
        max_sessions,
        upstream: cfg.upstream.clone(),
        clock,
        calls: Arc::clone(&calls),
        live: Arc::clone(&live),
        backends: watch.as_ref().map(|w| w.backends()),
    });
    // The stop reaches the event loop through a channel (set below by the recording thread's
    // ticks), so the loop has no timer of its own and sleeps in epoll_wait without a timeout.
    let (stopping, stopped) = watch::channel(false);
    let (relays, stopper, loops) = Relays::start(cfg.threads, &base, stop)
        .map_err(|e| CaptureError::Config(format!("cannot start the proxy: {e}")))?;
    let forward = {
        let stop = Arc::clone(stop);
        let relays = Arc::new(relays);
        std::thread::Builder::new()
            .name("capture-proxy".into())
            .spawn(move || {
                rt.block_on(serve_all(
                    listener,
                    base,
                    sessions,
                    stop,
                    stopped,
                    Arc::clone(&relays),
                ));
                // Sessions still being set up (connecting upstream) are dropped here.
                rt.shutdown_timeout(Duration::from_secs(1));
                // Then the loops end theirs, and hand in what they recorded.
                relays.close();
                for l in loops {
                    let _ = l.join();
                }
            })
            .map_err(|e| CaptureError::Config(format!("cannot start the proxy: {e}")))?
    };
    let mut last_flush = Instant::now();
    let mut last_progress = Instant::now();
    let mut last_watch = Instant::now();
    let write_error = rec.pump(batches, FLUSH_EVERY, |_| {
        if last_watch.elapsed() >= WATCH_EVERY {
            if let Some(w) = watch.as_mut() {
                w.tick();
            }
            last_watch = Instant::now();
        }
        if cfg.duration.is_some_and(|d| started.elapsed() >= d) {
            stop.interrupt();
        }
        if stop.is_set() {
            let _ = stopping.send(true);
            stopper.stop();
        }
        if last_flush.elapsed() >= FLUSH_EVERY {
            calls.flush();
            last_flush = Instant::now();
        }
        if last_progress.elapsed() >= Duration::from_secs(1) {
            progress(&live, started.elapsed());
            last_progress = Instant::now();
        }
    });
    let _ = forward.join();
    calls.flush();
    // Every session's connection is closed: the end snapshot waits for their backends to exit
    // (they hand their last statistics to the server as they do).
    if let Some(w) = watch.as_mut() {
        w.finish();
    }
    let seconds = started.elapsed().as_secs_f64();
    let calls_error = calls
        .error
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let (outcome, detail) = match (write_error.or(calls_error), stop.outcome()) {
        (Some(why), _) => (Outcome::Failed, Some(why)),
        (None, (Outcome::Failed, why)) => (Outcome::Failed, why),
        // Stopping is how a capture ends.
        (None, _) => (Outcome::Complete, None),
    };
    let unmatched = live.unmatched.load(Ordering::Relaxed);
    rec.manifest_mut().workload.params.insert(
        "sessions".into(),
        json!(live.sessions.load(Ordering::Relaxed)),
    );
    let refused = live.refused.load(Ordering::Relaxed);
    if refused > 0 {
        rec.manifest_mut()
            .workload
            .params
            .insert("refused_by_proxy".into(), json!(refused));
    }
    if unmatched > 0 {
        rec.manifest_mut()
            .workload
            .params
            .insert("unmatched_answers".into(), json!(unmatched));
    }
    let dir = rec.finish(outcome, detail.clone())?.path;
    if outcome == Outcome::Failed {
        return Err(CaptureError::Failed {
            dir,
            why: detail.unwrap_or_default(),
        });
    }
    Ok(ProxySummary {
        dir,
        sessions: live.sessions.load(Ordering::Relaxed),
        calls: live.calls.load(Ordering::Relaxed),
        errors: live.errors.load(Ordering::Relaxed),
        seconds,
    })
}
