//! `dbscope capture proxy`: a PostgreSQL wire-protocol proxy that forwards every byte unchanged and
//! records every call of every session (see [`crate::calls`]) into a capture.
//!
//! Every session is served by one event loop (tokio, one thread by default): a thread wakes only
//! when no socket was ready, so under load one wake-up serves many messages, and a slow direction
//! never holds up the other. What the client sends is read by the tracker *before* it is
//! forwarded (so the server's answer can never be seen before the request it answers); what the
//! server sends is forwarded first and read afterwards. Authentication passes through
//! untouched (password, MD5, SCRAM-SHA-256: the proxy never sees a password in clear, and the
//! `PasswordMessage` body is not even kept in memory). TLS is declined (`N` to an `SSLRequest` or
//! `GSSENCRequest`): a client with `sslmode=prefer` (libpq's default) goes on in clear, one with
//! `sslmode=require` is refused by its own library, which says so.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, BufWriter, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use dbscope_core::manifest::{Manifest, Outcome, TargetInfo, WorkloadInfo};
use dbscope_core::redact::redact;
use dbscope_core::{Recorder, Recording, RunClock, Sessions, StopSignal};
use dbscope_pgwire::{connect_socket, RawSocket};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;

use crate::calls::{Call, Tracker};
use crate::fingerprint::fingerprint;
use crate::wire::{
    startup_params, Framer, CANCEL_REQUEST, GSSENC_REQUEST, PROTOCOL_3, SSL_REQUEST,
};
use crate::{CaptureError, CALLS_FILE};

/// How long a client may take to send its startup message.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How often the calls file is written and flushed (so a crash loses at most this much).
const FLUSH_EVERY: Duration = Duration::from_millis(200);
/// Bytes read at once from a socket.
const BUF: usize = 1 << 16;

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
    /// Threads forwarding (1: one event loop for every session, the least wake-ups).
    pub threads: usize,
    /// The command line, for the manifest (redacted there).
    pub command_line: Vec<String>,
}

/// Where the proxy listens, once it does.
#[derive(Debug, Clone)]
pub enum Listening {
    /// A TCP address (a port 0 asked for is resolved).
    Tcp(SocketAddr),
    /// A Unix socket's path.
    Unix(PathBuf),
}

impl fmt::Display for Listening {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Listening::Tcp(a) => write!(f, "{a}"),
            Listening::Unix(p) => write!(f, "{}", p.display()),
        }
    }
}

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

/// Live figures, shared by the sessions.
#[derive(Default)]
pub struct Live {
    /// Sessions so far.
    pub sessions: AtomicU32,
    /// Sessions open now.
    pub open: AtomicU32,
    /// Calls recorded so far.
    pub calls: AtomicU64,
    /// Calls that failed.
    pub errors: AtomicU64,
    /// Bytes from clients.
    pub bytes_in: AtomicU64,
    /// Bytes from the server.
    pub bytes_out: AtomicU64,
    /// Server answers the tracker could not match to a request.
    pub unmatched: AtomicU64,
    /// Clients the proxy refused because it had no file descriptor left for them.
    pub refused: AtomicU32,
}

/// One line of the calls file, waiting to be written. (Nearly every line is a call: boxing the
/// call to shrink the rare session line would cost an allocation per call.)
#[allow(clippy::large_enum_variant)]
enum Line {
    Call(Call),
    Session(serde_json::Value),
}

/// The calls file. Sessions hand it finished calls (a push under a lock, nothing else on the
/// forwarding path); [`CallsFile::flush`], called by the recording thread every [`FLUSH_EVERY`],
/// turns them into JSON and writes them.
pub(crate) struct CallsFile {
    pending: Mutex<Vec<Line>>,
    out: Mutex<BufWriter<std::fs::File>>,
    error: Mutex<Option<String>>,
    path: PathBuf,
}

impl CallsFile {
    fn create(path: &Path) -> Result<Self, CaptureError> {
        let f = crate::private::create_private(path).map_err(|e| CaptureError::io(path, e))?;
        Ok(CallsFile {
            pending: Mutex::new(Vec::new()),
            out: Mutex::new(BufWriter::with_capacity(1 << 16, f)),
            error: Mutex::new(None),
            path: path.to_path_buf(),
        })
    }

    fn push_calls(&self, done: Vec<Call>) {
        if done.is_empty() {
            return;
        }
        let mut p = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        p.extend(done.into_iter().map(Line::Call));
    }

    fn push_session(&self, line: serde_json::Value) {
        let mut p = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        p.push(Line::Session(line));
    }

    /// Writes what the sessions handed in so far and flushes; the first failure is kept.
    fn flush(&self) {
        let lines =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        let mut text = String::new();
        for l in lines {
            match l {
                Line::Call(c) => {
                    let mut v = serde_json::to_value(&c).unwrap_or_default();
                    v["type"] = json!("call");
                    text.push_str(&v.to_string());
                }
                Line::Session(v) => text.push_str(&v.to_string()),
            }
            text.push('\n');
            if text.len() >= 1 << 16 {
                if let Err(e) = out.write_all(text.as_bytes()) {
                    self.fail(e);
                }
                text.clear();
            }
        }
        if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            self.fail(e);
        }
    }

    fn fail(&self, e: io::Error) {
        let mut err = self.error.lock().unwrap_or_else(PoisonError::into_inner);
        err.get_or_insert_with(|| format!("{}: {e}", self.path.display()));
    }
}

/// The reading half of a socket (TCP or Unix).
type Reader = Box<dyn AsyncRead + Unpin + Send>;
/// The writing half of a socket (TCP or Unix).
type Writer = Box<dyn AsyncWrite + Unpin + Send>;

/// The listening socket.
enum Listener {
    Tcp(tokio::net::TcpListener),
    Unix(tokio::net::UnixListener, PathBuf),
}

impl Listener {
    /// Binds `spec`: a path (anything with a `/`) is a Unix socket, the rest `IP:PORT`.
    fn bind(spec: &str) -> Result<(Listener, Listening), String> {
        if spec.contains('/') {
            let path = PathBuf::from(spec);
            if path.exists() {
                return Err(format!(
                    "{spec} already exists (another proxy or server listening there, or a socket left \
                     by one that died: remove it if nothing listens)"
                ));
            }
            let l = tokio::net::UnixListener::bind(&path).map_err(|e| e.to_string())?;
            Ok((Listener::Unix(l, path.clone()), Listening::Unix(path)))
        } else {
            let std = std::net::TcpListener::bind(spec).map_err(|e| e.to_string())?;
            let addr = std.local_addr().map_err(|e| e.to_string())?;
            std.set_nonblocking(true).map_err(|e| e.to_string())?;
            let l = tokio::net::TcpListener::from_std(std).map_err(|e| e.to_string())?;
            Ok((Listener::Tcp(l), Listening::Tcp(addr)))
        }
    }

    /// The next client: its halves and what to call it in the capture.
    async fn accept(&self) -> io::Result<(Reader, Writer, String)> {
        match self {
            Listener::Tcp(l) => {
                let (s, addr) = l.accept().await?;
                let _ = s.set_nodelay(true);
                let (r, w) = s.into_split();
                Ok((Box::new(r), Box::new(w), addr.to_string()))
            }
            Listener::Unix(l, path) => {
                let (s, _) = l.accept().await?;
                let (r, w) = s.into_split();
                Ok((Box::new(r), Box::new(w), format!("unix:{}", path.display())))
            }
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Runs the proxy until `stop` fires (or `duration` passes): accepts clients, forwards, records.
/// `progress` is called about every second with the live figures.
/// `listening` is told where the proxy listens (a port 0 in `listen` is chosen by the system)
/// once the upstream has answered and the capture has begun.
///
/// Every session is served by one event loop ([`ProxyConfig::threads`] = 1, the default) or a
/// few: a message costs the proxy a `read` and a `write`, and a thread wakes only when nothing was
/// ready, so under load one wake-up serves many messages. (One thread per direction per session
/// costs two wake-ups per round trip: on two cores that halved `pgbench -S`.) Writing the calls
/// file happens on the recording thread, off the forwarding path.
pub fn run(
    cfg: &ProxyConfig,
    stop: &Arc<StopSignal>,
    listening: impl FnOnce(&Listening),
    mut progress: impl FnMut(&Live, Duration),
) -> Result<ProxySummary, CaptureError> {
    let rt = match cfg.threads {
        0 | 1 => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        n => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .thread_name("capture-proxy")
            .enable_all()
            .build(),
    }
    .map_err(|e| CaptureError::Config(format!("cannot start the proxy: {e}")))?;
    let (listener, local) = {
        let _in = rt.enter();
        Listener::bind(&cfg.listen)
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
        ..TargetInfo::default()
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
    let clock = rec.start_clock()?;
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
    });
    // The stop reaches the event loop through a channel (set below by the recording thread's
    // ticks), so the loop has no timer of its own and sleeps in epoll_wait without a timeout.
    let (stopping, stopped) = watch::channel(false);
    let forward = {
        let stop = Arc::clone(stop);
        std::thread::Builder::new()
            .name("capture-proxy".into())
            .spawn(move || {
                rt.block_on(serve_all(listener, base, sessions, stop, stopped));
                // Sessions still being set up (connecting upstream) are dropped here.
                rt.shutdown_timeout(Duration::from_secs(1));
            })
            .map_err(|e| CaptureError::Config(format!("cannot start the proxy: {e}")))?
    };
    let mut last_flush = Instant::now();
    let mut last_progress = Instant::now();
    let write_error = rec.pump(batches, FLUSH_EVERY, |_| {
        if cfg.duration.is_some_and(|d| started.elapsed() >= d) {
            stop.interrupt();
        }
        if stop.is_set() {
            let _ = stopping.send(true);
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

/// What every session needs.
struct Base {
    /// The open-files limit the proxy runs with.
    fd_limit: Option<u64>,
    /// Sessions the limit allows (each needs two descriptors); more are refused.
    max_sessions: Option<u32>,
    upstream: String,
    clock: RunClock,
    calls: Arc<CallsFile>,
    live: Arc<Live>,
}

/// Accepts clients until `stopped` (the stop signal or the duration, seen by the recording
/// thread) or an accept error, then stops every session and waits for them to hand in what they
/// recorded.
async fn serve_all(
    listener: Listener,
    base: Arc<Base>,
    sessions: Sessions,
    stop: Arc<StopSignal>,
    stopped: watch::Receiver<bool>,
) {
    let mut tasks = tokio::task::JoinSet::new();
    let mut next = 0u32;
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((r, mut w, peer)) if base.max_sessions
                    .is_some_and(|m| base.live.open.load(Ordering::Relaxed) >= m) =>
                {
                    // No descriptors for another client and its upstream (issue 27: the proxy
                    // ran out and exited, dropping every client): this one is refused as a
                    // server refuses one too many (53300), the others go on.
                    let session = next;
                    next += 1;
                    base.live.refused.fetch_add(1, Ordering::Relaxed);
                    let why = format!(
                        "sorry, too many clients already: the capture proxy's open-file limit \
                         ({}) allows {} sessions",
                        base.fd_limit.unwrap_or_default(),
                        base.max_sessions.unwrap_or_default()
                    );
                    base.calls.push_session(json!({"type": "session", "session": session,
                        "connect_ns": base.clock.now_ns(), "client": peer,
                        "refused_by": "proxy", "error": why}));
                    tasks.spawn(async move {
                        let _ = w.write_all(&error_response("53300", &why)).await;
                        let _ = w.shutdown().await;
                        drop(r);
                    });
                }
                Ok((r, w, peer)) => {
                    let session = next;
                    next += 1;
                    base.live.sessions.fetch_add(1, Ordering::Relaxed);
                    let rec = sessions.recorder(session);
                    tasks.spawn(serve(r, w, peer, session, Arc::clone(&base), rec, stopped.clone()));
                }
                Err(e) if matches!(e.kind(), io::ErrorKind::Interrupted
                    | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset) => {}
                // Out of descriptors all the same (another process's share of the system's,
                // or the blocking pool's): wait for one to be freed rather than end the capture.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(e) => {
                    stop.fail(format!("accepting connections failed: {e}"));
                    break;
                }
            },
            _ = until_stopped(stopped.clone()) => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    drop(listener);
    // After an accept error too, the sessions end when the recording thread sees the (failed)
    // stop signal: each hands in what it recorded.
    while tasks.join_next().await.is_some() {}
    // The last recorder is gone with the sessions: the recording thread's pump ends.
    drop(sessions);
}

/// What both directions of a session share.
struct Shared {
    tracker: Tracker,
    rec: Recorder,
}

/// One client connection, from its startup message to its end.
async fn serve(
    mut cr: Reader,
    mut cw: Writer,
    peer: String,
    session: u32,
    base: Arc<Base>,
    rec: Recorder,
    stopped: watch::Receiver<bool>,
) {
    base.live.open.fetch_add(1, Ordering::Relaxed);
    let connected = base.clock.now_ns();
    let mut line = json!({"type": "session", "session": session, "connect_ns": connected,
        "client": peer});
    let started = tokio::select! {
        s = startup(&mut cr, &mut cw, &base, &mut line) => s,
        _ = until_stopped(stopped.clone()) => Ok(None),
    };
    match started {
        Ok(Some((ur, uw))) => relay(cr, cw, ur, uw, session, &base, rec, line, stopped).await,
        Ok(None) => {}
        Err(why) => {
            line["error"] = json!(why);
            line["disconnect_ns"] = json!(base.clock.now_ns());
            base.calls.push_session(line);
        }
    }
    base.live.open.fetch_sub(1, Ordering::Relaxed);
}

/// Descriptors kept for the proxy's own use beyond those open now (files, the blocking pool's
/// connects, name lookups).
const SPARE_FDS: u64 = 12;

/// How many sessions `fd_limit` descriptors allow: each takes two (its client and its upstream),
/// after those open now and [`SPARE_FDS`].
fn sessions_within(fd_limit: u64) -> u32 {
    let open = std::fs::read_dir("/proc/self/fd").map_or(16, |d| d.count() as u64);
    (fd_limit.saturating_sub(open + SPARE_FDS) / 2).min(u32::MAX as u64) as u32
}

/// Raises the soft limit on open files to the hard one; returns the limit the proxy runs with
/// (`None`: unlimited or not known).
fn raise_fd_limit() -> Option<u64> {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut lim = getrlimit(Resource::Nofile);
    if lim.current < lim.maximum || (lim.current.is_some() && lim.maximum.is_none()) {
        lim.current = lim.maximum;
        let _ = setrlimit(Resource::Nofile, lim);
    }
    getrlimit(Resource::Nofile).current
}

/// Why the upstream `spec` is the proxy's own listening address, if it is (each of its hosts,
/// resolved by libpq's rules, compared with where the proxy listens).
fn loops_back(spec: &str, local: &Listening) -> Option<String> {
    use dbscope_pgwire::conninfo::{resolve, Defaults, Host};
    use std::net::ToSocketAddrs;
    let spec = spec.trim();
    let body = match spec.strip_prefix("postgres:") {
        Some(kv) if !spec.starts_with("postgres://") => kv,
        _ => spec,
    };
    let info = resolve(body, &Defaults::system()).ok()?;
    info.endpoints.iter().find_map(|e| match (&e.host, local) {
        (Host::Socket(dir), Listening::Unix(path)) => {
            let up = dir.join(format!(".s.PGSQL.{}", e.port));
            (up == *path).then(|| up.display().to_string())
        }
        (Host::Name(h), Listening::Tcp(at)) => (h.as_str(), e.port)
            .to_socket_addrs()
            .ok()?
            .find(|a| same_endpoint(a, at))
            .map(|a| a.to_string()),
        (Host::Addr { ip, .. }, Listening::Tcp(at)) => {
            let a = SocketAddr::new(*ip, e.port);
            same_endpoint(&a, at).then(|| a.to_string())
        }
        _ => None,
    })
}

/// Whether a connection to `to` reaches a socket listening on `at` (which may be a wildcard).
fn same_endpoint(to: &SocketAddr, at: &SocketAddr) -> bool {
    to.port() == at.port()
        && (to.ip() == at.ip() || (at.ip().is_unspecified() && to.ip().is_loopback()))
}

async fn until_stopped(mut stopped: watch::Receiver<bool>) {
    let _ = stopped.wait_for(|s| *s).await;
}

/// Reads the client's startup message (declining TLS and GSS encryption), connects to the
/// upstream and sends it there. `None` for a cancel request (forwarded, nothing to record).
async fn startup(
    cr: &mut Reader,
    cw: &mut Writer,
    base: &Base,
    line: &mut serde_json::Value,
) -> Result<Option<(Reader, Writer)>, String> {
    loop {
        let mut head = [0u8; 8];
        match tokio::time::timeout(STARTUP_TIMEOUT, cr.read_exact(&mut head)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(format!("no startup message from the client: {e}")),
            Err(_) => {
                return Err(format!(
                    "no startup message from the client in {} s",
                    STARTUP_TIMEOUT.as_secs()
                ))
            }
        }
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let code = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
        if !(8..=10_000).contains(&len) {
            return Err(format!("not a PostgreSQL startup message (length {len})"));
        }
        let mut rest = vec![0u8; len - 8];
        match tokio::time::timeout(STARTUP_TIMEOUT, cr.read_exact(&mut rest)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(format!("startup message cut short: {e}")),
            Err(_) => return Err("startup message cut short: timed out".to_string()),
        }
        let mut msg = head.to_vec();
        msg.extend_from_slice(&rest);
        match code {
            SSL_REQUEST | GSSENC_REQUEST => {
                cw.write_all(b"N")
                    .await
                    .map_err(|e| format!("client went away: {e}"))?;
            }
            CANCEL_REQUEST => {
                let (_, mut uw) = open_upstream(&base.upstream).await?;
                let _ = uw.write_all(&msg).await;
                let _ = uw.shutdown().await;
                return Ok(None);
            }
            PROTOCOL_3 => {
                for (k, v) in startup_params(&rest) {
                    if matches!(k.as_str(), "user" | "database" | "application_name") {
                        line[k] = json!(v);
                    }
                }
                let (ur, mut uw) = match open_upstream(&base.upstream).await {
                    Ok(up) => up,
                    Err(why) => {
                        let _ = cw
                            .write_all(&error_response(
                                "08006",
                                &format!(
                                "dbscope capture proxy: cannot reach the upstream server: {why}"
                            ),
                            ))
                            .await;
                        return Err(why);
                    }
                };
                uw.write_all(&msg)
                    .await
                    .map_err(|e| format!("upstream went away: {e}"))?;
                return Ok(Some((ur, uw)));
            }
            other => {
                let _ = cw
                    .write_all(&error_response(
                        "08006",
                        &format!(
                            "dbscope capture proxy: unsupported protocol {}.{}",
                            other >> 16,
                            other & 0xffff
                        ),
                    ))
                    .await;
                return Err(format!("unsupported protocol version code {other}"));
            }
        }
    }
}

/// Connects to the upstream (libpq's rules, on a blocking-pool thread: the event loop goes on).
async fn open_upstream(spec: &str) -> Result<(Reader, Writer), String> {
    let spec = spec.to_string();
    let raw = tokio::task::spawn_blocking(move || connect_socket(&spec))
        .await
        .map_err(|e| format!("connecting failed: {e}"))?
        .map_err(|e| e.to_string())?;
    let halves = match raw {
        RawSocket::Tcp(s) => {
            let _ = s.set_nodelay(true);
            s.set_nonblocking(true).map_err(|e| e.to_string())?;
            let (r, w) = tokio::net::TcpStream::from_std(s)
                .map_err(|e| e.to_string())?
                .into_split();
            (Box::new(r) as Reader, Box::new(w) as Writer)
        }
        RawSocket::Unix(s) => {
            s.set_nonblocking(true).map_err(|e| e.to_string())?;
            let (r, w) = tokio::net::UnixStream::from_std(s)
                .map_err(|e| e.to_string())?
                .into_split();
            (Box::new(r) as Reader, Box::new(w) as Writer)
        }
    };
    Ok(halves)
}

/// A FATAL `ErrorResponse` (SQLSTATE 08006) with `message`.
fn error_response(code: &str, message: &str) -> Vec<u8> {
    let mut body = Vec::new();
    for (t, v) in [
        (b'S', "FATAL"),
        (b'V', "FATAL"),
        (b'C', code),
        (b'M', message),
    ] {
        body.push(t);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut m = vec![b'E'];
    m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    m.extend_from_slice(&body);
    m
}

/// Which client messages the tracker reads the body of.
fn client_keeps(kind: u8) -> bool {
    matches!(kind, b'Q' | b'P' | b'B' | b'E' | b'F')
}

/// Which server messages the tracker reads the body of.
fn server_keeps(kind: u8) -> bool {
    matches!(kind, b'C' | b'E' | b'Z')
}

/// Forwards both directions until either side closes or the capture stops; records the calls.
/// What the client sends is given to the tracker before it is forwarded; what the server sends
/// is forwarded first. Each direction waits on its own socket, so a slow side never holds up the
/// other (a client writing a long COPY while its answers pile up is served both ways).
#[allow(clippy::too_many_arguments)]
async fn relay(
    mut cr: Reader,
    mut cw: Writer,
    mut ur: Reader,
    mut uw: Writer,
    session: u32,
    base: &Base,
    rec: Recorder,
    mut line: serde_json::Value,
    stopped: watch::Receiver<bool>,
) {
    let shared = Mutex::new(Shared {
        tracker: Tracker::new(session),
        rec,
    });
    let lock = || shared.lock().unwrap_or_else(PoisonError::into_inner);
    let client_to_server = async {
        let mut framer = Framer::new(client_keeps);
        let mut buf = vec![0u8; BUF];
        while let Ok(n @ 1..) = cr.read(&mut buf).await {
            let t = base.clock.now_ns();
            {
                let mut s = lock();
                framer.feed(&buf[..n], |m| s.tracker.client(&m, t));
            }
            if uw.write_all(&buf[..n]).await.is_err() {
                break;
            }
            base.live.bytes_in.fetch_add(n as u64, Ordering::Relaxed);
        }
    };
    let server_to_client = async {
        let mut framer = Framer::new(server_keeps);
        let mut buf = vec![0u8; BUF];
        while let Ok(n @ 1..) = ur.read(&mut buf).await {
            let t = base.clock.now_ns();
            if cw.write_all(&buf[..n]).await.is_err() {
                break;
            }
            base.live.bytes_out.fetch_add(n as u64, Ordering::Relaxed);
            let done = {
                let mut s = lock();
                let s = &mut *s;
                framer.feed(&buf[..n], |m| s.tracker.server(&m, t));
                take_done(s, base)
            };
            base.calls.push_calls(done);
        }
    };
    // The first direction to end ends the session: the other is dropped, closing both sockets.
    tokio::select! {
        _ = client_to_server => {}
        _ = server_to_client => {}
        _ = until_stopped(stopped) => {}
    }
    let end = base.clock.now_ns();
    let mut s = shared.into_inner().unwrap_or_else(PoisonError::into_inner);
    s.tracker.end(end);
    let done = take_done(&mut s, base);
    base.calls.push_calls(done);
    s.rec.flush();
    base.live
        .unmatched
        .fetch_add(s.tracker.unmatched, Ordering::Relaxed);
    if let Some((code, message)) = &s.tracker.startup_error {
        line["error"] = json!(format!("{code}: {message}"));
    }
    line["ready"] = json!(s.tracker.is_ready());
    line["disconnect_ns"] = json!(end);
    if s.tracker.unmatched > 0 {
        line["unmatched_answers"] = json!(s.tracker.unmatched);
    }
    base.calls.push_session(line);
}

/// Takes the finished calls and records their events (under the session's lock).
fn take_done(s: &mut Shared, base: &Base) -> Vec<Call> {
    if s.tracker.done.is_empty() {
        return Vec::new();
    }
    let done = std::mem::take(&mut s.tracker.done);
    for c in &done {
        let name = s.rec.name(&event_name(c));
        match (&c.error, c.skipped, c.unfinished) {
            (_, true, _) => s.rec.error(name, c.start_ns, c.end_ns, "not executed"),
            (_, _, true) => s.rec.error(name, c.start_ns, c.end_ns, "unfinished"),
            (Some((code, _)), _, _) => {
                s.rec
                    .error(name, c.start_ns, c.end_ns, &format!("pg:{code}"))
            }
            (None, _, _) => s.rec.ok(name, c.start_ns, c.end_ns, c.rows),
        }
    }
    base.live
        .calls
        .fetch_add(done.len() as u64, Ordering::Relaxed);
    let errors = done.iter().filter(|c| c.error.is_some()).count();
    base.live.errors.fetch_add(errors as u64, Ordering::Relaxed);
    done
}

/// A call's event name: its statement's fingerprint (or what it was when there is no text).
pub fn event_name(c: &Call) -> String {
    if c.unknown_statement {
        return match &c.statement {
            Some(s) => format!("(statement {s} prepared before the capture)"),
            None => "(statement prepared before the capture)".to_string(),
        };
    }
    let f = fingerprint(&c.sql);
    if f.is_empty() {
        "(empty query)".to_string()
    } else {
        f
    }
}
