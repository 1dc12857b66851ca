//! `dbscope capture proxy`: a PostgreSQL wire-protocol proxy that forwards every byte unchanged and
//! records every call of every session (see [`crate::calls`]) into a capture.
//!
//! Each client connection gets two threads, one per direction, each blocked in `read` on its
//! socket: a message costs one wake-up, as it would through the server's own socket, and a slow
//! direction never holds up the other. What the client sends is read by the tracker *before* it
//! is forwarded (so the server's answer can never be seen before the request it answers); what
//! the server sends is forwarded first and read afterwards. Authentication passes through
//! untouched (password, MD5, SCRAM-SHA-256: the proxy never sees a password in clear, and the
//! `PasswordMessage` body is not even kept in memory). TLS is declined (`N` to an `SSLRequest` or
//! `GSSENCRequest`): a client with `sslmode=prefer` (libpq's default) goes on in clear, one with
//! `sslmode=require` is refused by its own library, which says so.

use std::io::{self, BufWriter, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use dbscope_core::manifest::{Manifest, Outcome, TargetInfo, WorkloadInfo};
use dbscope_core::redact::redact;
use dbscope_core::{Recorder, Recording, RunClock, StopSignal};
use dbscope_lab::db::{connect_socket, RawSocket};
use serde_json::json;

use crate::calls::{Call, Tracker};
use crate::fingerprint::fingerprint;
use crate::wire::{
    startup_params, Framer, CANCEL_REQUEST, GSSENC_REQUEST, PROTOCOL_3, SSL_REQUEST,
};
use crate::{CaptureError, CALLS_FILE};

/// How long a client may take to send its startup message.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How often blocked reads look at the stop signal.
const POLL: Duration = Duration::from_millis(200);
/// How often the calls file is flushed (so a crash loses at most this much).
const FLUSH_EVERY: Duration = Duration::from_millis(200);

/// What to run.
pub struct ProxyConfig {
    /// Address to listen on, e.g. `127.0.0.1:6543`.
    pub listen: String,
    /// The server, as a libpq connection string (only where it is: host, port, socket).
    pub upstream: String,
    /// The capture directory to create.
    pub out: PathBuf,
    /// Stop by itself after this long (else on the stop signal only).
    pub duration: Option<Duration>,
    /// The command line, for the manifest (redacted there).
    pub command_line: Vec<String>,
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

/// Live figures, shared by the session threads.
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
}

/// The calls file, written by every session.
pub(crate) struct CallsFile {
    out: Mutex<BufWriter<std::fs::File>>,
    error: Mutex<Option<String>>,
    path: PathBuf,
}

impl CallsFile {
    fn create(path: &Path) -> Result<Self, CaptureError> {
        let f = std::fs::File::create(path).map_err(|e| CaptureError::io(path, e))?;
        Ok(CallsFile {
            out: Mutex::new(BufWriter::with_capacity(1 << 16, f)),
            error: Mutex::new(None),
            path: path.to_path_buf(),
        })
    }

    /// Appends lines (each a JSON object ending in a newline); the first failure is kept.
    fn write(&self, text: &str) {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = out.write_all(text.as_bytes()) {
            self.fail(e);
        }
    }

    fn flush(&self) {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = out.flush() {
            self.fail(e);
        }
    }

    fn fail(&self, e: io::Error) {
        let mut err = self.error.lock().unwrap_or_else(PoisonError::into_inner);
        err.get_or_insert_with(|| format!("{}: {e}", self.path.display()));
    }
}

/// One side of a session: a TCP or Unix socket.
enum Sock {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Sock {
    fn try_clone(&self) -> io::Result<Sock> {
        Ok(match self {
            Sock::Tcp(s) => Sock::Tcp(s.try_clone()?),
            Sock::Unix(s) => Sock::Unix(s.try_clone()?),
        })
    }

    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Sock::Tcp(s) => s.set_read_timeout(t),
            Sock::Unix(s) => s.set_read_timeout(t),
        }
    }

    fn shutdown(&self, how: Shutdown) {
        let _ = match self {
            Sock::Tcp(s) => s.shutdown(how),
            Sock::Unix(s) => s.shutdown(how),
        };
    }
}

impl Read for Sock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.read(buf),
            Sock::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Sock {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.write(buf),
            Sock::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Runs the proxy until `stop` fires (or `duration` passes): accepts clients, forwards, records.
/// `progress` is called about every second with the live figures.
/// `listening` is told the address listened on (a port 0 in `listen` is chosen by the system)
/// once the upstream has answered and the capture has begun.
pub fn run(
    cfg: &ProxyConfig,
    stop: &Arc<StopSignal>,
    listening: impl FnOnce(SocketAddr),
    mut progress: impl FnMut(&Live, Duration),
) -> Result<ProxySummary, CaptureError> {
    let cannot =
        |e: io::Error| CaptureError::Config(format!("cannot listen on {}: {e}", cfg.listen));
    let listener = TcpListener::bind(&cfg.listen).map_err(cannot)?;
    let local = listener.local_addr().map_err(cannot)?;
    // The upstream must be reachable now: better said at once than at the first client.
    match connect_socket(&cfg.upstream) {
        Ok(s) => drop(s),
        Err(why) => {
            return Err(CaptureError::Config(format!(
                "upstream {} is not reachable: {why}",
                redact(&cfg.upstream)
            )))
        }
    }
    let mut params = std::collections::BTreeMap::new();
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
    let mut rec = Recording::begin(&cfg.out, manifest)?;
    let calls = Arc::new(CallsFile::create(&cfg.out.join(CALLS_FILE))?);
    let clock = rec.start_clock()?;
    let (sessions, batches) = rec.sessions(&clock, 0, 256);
    let live = Arc::new(Live::default());
    listener
        .set_nonblocking(true)
        .map_err(|e| CaptureError::Config(format!("cannot listen on {}: {e}", cfg.listen)))?;
    let started = Instant::now();
    listening(local);
    let accept = {
        let clock = clock.clone();
        let (stop, live, calls, upstream) = (
            Arc::clone(stop),
            Arc::clone(&live),
            Arc::clone(&calls),
            cfg.upstream.clone(),
        );
        let duration = cfg.duration;
        std::thread::Builder::new()
            .name("capture-accept".into())
            .spawn(move || {
                let mut threads = Vec::new();
                let mut next = 0u32;
                while !stop.is_set() {
                    if duration.is_some_and(|d| started.elapsed() >= d) {
                        stop.interrupt();
                        break;
                    }
                    match listener.accept() {
                        Ok((client, addr)) => {
                            let session = next;
                            next += 1;
                            live.sessions.fetch_add(1, Ordering::Relaxed);
                            let ctx = SessionCtx {
                                session,
                                addr,
                                upstream: upstream.clone(),
                                clock: clock.clone(),
                                calls: Arc::clone(&calls),
                                live: Arc::clone(&live),
                                stop: Arc::clone(&stop),
                            };
                            let rec = sessions.recorder(session);
                            let spawned = std::thread::Builder::new()
                                .name(format!("capture-{session}"))
                                .spawn(move || serve(client, ctx, rec));
                            match spawned {
                                Ok(h) => threads.push(h),
                                Err(e) => stop.fail(format!("cannot start a session thread: {e}")),
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            stop.fail(format!("accepting connections failed: {e}"));
                            break;
                        }
                    }
                    threads.retain(|h: &std::thread::JoinHandle<()>| !h.is_finished());
                }
                drop(sessions);
                for h in threads {
                    let _ = h.join();
                }
            })
            .map_err(|e| CaptureError::Config(format!("cannot start the proxy: {e}")))?
    };
    let mut last_flush = Instant::now();
    let mut last_progress = Instant::now();
    let write_error = rec.pump(batches, FLUSH_EVERY, |_| {
        if last_flush.elapsed() >= FLUSH_EVERY {
            calls.flush();
            last_flush = Instant::now();
        }
        if last_progress.elapsed() >= Duration::from_secs(1) {
            progress(&live, started.elapsed());
            last_progress = Instant::now();
        }
    });
    let _ = accept.join();
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

/// What a session thread needs.
struct SessionCtx {
    session: u32,
    addr: SocketAddr,
    upstream: String,
    clock: RunClock,
    calls: Arc<CallsFile>,
    live: Arc<Live>,
    stop: Arc<StopSignal>,
}

/// What both directions of a session share.
struct Shared {
    tracker: Tracker,
    rec: Recorder,
}

/// One client connection, from its startup message to its end.
fn serve(client: TcpStream, ctx: SessionCtx, rec: Recorder) {
    let _ = client.set_nodelay(true);
    let _ = client.set_nonblocking(false);
    ctx.live.open.fetch_add(1, Ordering::Relaxed);
    let mut client = Sock::Tcp(client);
    let connected = ctx.clock.now_ns();
    let mut line = json!({"type": "session", "session": ctx.session, "connect_ns": connected,
        "client": ctx.addr.to_string()});
    match startup(&mut client, &ctx, &mut line) {
        Ok(Some(upstream)) => relay(client, upstream, &ctx, rec, line),
        Ok(None) => {}
        Err(why) => {
            line["error"] = json!(why);
            line["disconnect_ns"] = json!(ctx.clock.now_ns());
            ctx.calls.write(&format!("{line}\n"));
        }
    }
    ctx.live.open.fetch_sub(1, Ordering::Relaxed);
}

/// Reads the client's startup message (declining TLS and GSS encryption), connects to the
/// upstream and sends it there. `None` for a cancel request (forwarded, nothing to record).
fn startup(
    client: &mut Sock,
    ctx: &SessionCtx,
    line: &mut serde_json::Value,
) -> Result<Option<Sock>, String> {
    client
        .set_read_timeout(Some(STARTUP_TIMEOUT))
        .map_err(|e| e.to_string())?;
    loop {
        let mut head = [0u8; 8];
        client
            .read_exact(&mut head)
            .map_err(|e| format!("no startup message from the client: {e}"))?;
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let code = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
        if !(8..=10_000).contains(&len) {
            return Err(format!("not a PostgreSQL startup message (length {len})"));
        }
        let mut rest = vec![0u8; len - 8];
        client
            .read_exact(&mut rest)
            .map_err(|e| format!("startup message cut short: {e}"))?;
        match code {
            SSL_REQUEST | GSSENC_REQUEST => {
                client
                    .write_all(b"N")
                    .map_err(|e| format!("client went away: {e}"))?;
            }
            CANCEL_REQUEST => {
                let mut up = open_upstream(&ctx.upstream)?;
                let mut msg = head.to_vec();
                msg.extend_from_slice(&rest);
                let _ = up.write_all(&msg);
                return Ok(None);
            }
            PROTOCOL_3 => {
                for (k, v) in startup_params(&rest) {
                    if matches!(k.as_str(), "user" | "database" | "application_name") {
                        line[k] = json!(v);
                    }
                }
                let mut up = match open_upstream(&ctx.upstream) {
                    Ok(up) => up,
                    Err(why) => {
                        let _ = client.write_all(&error_response(&format!(
                            "dbscope capture proxy: cannot reach the upstream server: {why}"
                        )));
                        return Err(why);
                    }
                };
                let mut msg = head.to_vec();
                msg.extend_from_slice(&rest);
                up.write_all(&msg)
                    .map_err(|e| format!("upstream went away: {e}"))?;
                client
                    .set_read_timeout(Some(POLL))
                    .map_err(|e| e.to_string())?;
                return Ok(Some(up));
            }
            other => {
                let _ = client.write_all(&error_response(&format!(
                    "dbscope capture proxy: unsupported protocol {}.{}",
                    other >> 16,
                    other & 0xffff
                )));
                return Err(format!("unsupported protocol version code {other}"));
            }
        }
    }
}

fn open_upstream(spec: &str) -> Result<Sock, String> {
    let s = match connect_socket(spec)? {
        RawSocket::Tcp(s) => Sock::Tcp(s),
        RawSocket::Unix(s) => Sock::Unix(s),
    };
    s.set_read_timeout(Some(POLL)).map_err(|e| e.to_string())?;
    Ok(s)
}

/// A FATAL `ErrorResponse` (SQLSTATE 08006) with `message`.
fn error_response(message: &str) -> Vec<u8> {
    let mut body = Vec::new();
    for (t, v) in [
        (b'S', "FATAL"),
        (b'V', "FATAL"),
        (b'C', "08006"),
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
fn relay(client: Sock, upstream: Sock, ctx: &SessionCtx, rec: Recorder, line: serde_json::Value) {
    let shared = Mutex::new(Shared {
        tracker: Tracker::new(ctx.session),
        rec,
    });
    let (Ok(client2), Ok(upstream2)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let mut session_line = line;
    std::thread::scope(|scope| {
        // Server to client.
        scope.spawn(|| {
            let (mut from, mut to) = (upstream2, client2);
            let mut framer = Framer::new(server_keeps);
            let mut buf = vec![0u8; 1 << 16];
            while let Some(n) = read_some(&mut from, &mut buf, ctx) {
                let t = ctx.clock.now_ns();
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
                ctx.live.bytes_out.fetch_add(n as u64, Ordering::Relaxed);
                let done = {
                    let mut s = shared.lock().unwrap_or_else(PoisonError::into_inner);
                    let s = &mut *s;
                    framer.feed(&buf[..n], |m| s.tracker.server(&m, t));
                    take_done(s, ctx)
                };
                write_calls(&done, ctx);
            }
            from.shutdown(Shutdown::Both);
            to.shutdown(Shutdown::Both);
        });
        // Client to server, here.
        let (mut from, mut to) = (client, upstream);
        let mut framer = Framer::new(client_keeps);
        let mut buf = vec![0u8; 1 << 16];
        while let Some(n) = read_some(&mut from, &mut buf, ctx) {
            let t = ctx.clock.now_ns();
            {
                let mut s = shared.lock().unwrap_or_else(PoisonError::into_inner);
                framer.feed(&buf[..n], |m| s.tracker.client(&m, t));
            }
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
            ctx.live.bytes_in.fetch_add(n as u64, Ordering::Relaxed);
        }
        from.shutdown(Shutdown::Both);
        to.shutdown(Shutdown::Both);
    });
    let end = ctx.clock.now_ns();
    let mut s = shared.into_inner().unwrap_or_else(PoisonError::into_inner);
    s.tracker.end(end);
    let done = take_done(&mut s, ctx);
    write_calls(&done, ctx);
    s.rec.flush();
    ctx.live
        .unmatched
        .fetch_add(s.tracker.unmatched, Ordering::Relaxed);
    if let Some((code, message)) = &s.tracker.startup_error {
        session_line["error"] = json!(format!("{code}: {message}"));
    }
    session_line["ready"] = json!(s.tracker.is_ready());
    session_line["disconnect_ns"] = json!(end);
    if s.tracker.unmatched > 0 {
        session_line["unmatched_answers"] = json!(s.tracker.unmatched);
    }
    ctx.calls.write(&format!("{session_line}\n"));
}

/// The next bytes from `from` into `buf`: their count, or `None` at the end of the stream, on an
/// error, or once the capture stops (a read times out every [`POLL`] to look).
fn read_some(from: &mut Sock, buf: &mut [u8], ctx: &SessionCtx) -> Option<usize> {
    loop {
        match from.read(buf) {
            Ok(0) => return None,
            Ok(n) => return Some(n),
            Err(e) if is_timeout(&e) => {
                if ctx.stop.is_set() {
                    return None;
                }
            }
            Err(_) => return None,
        }
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Takes the finished calls and records their events (under the session's lock).
fn take_done(s: &mut Shared, ctx: &SessionCtx) -> Vec<Call> {
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
    ctx.live
        .calls
        .fetch_add(done.len() as u64, Ordering::Relaxed);
    let errors = done.iter().filter(|c| c.error.is_some()).count();
    ctx.live.errors.fetch_add(errors as u64, Ordering::Relaxed);
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

fn write_calls(done: &[Call], ctx: &SessionCtx) {
    if done.is_empty() {
        return;
    }
    let mut text = String::new();
    for c in done {
        let mut v = serde_json::to_value(c).unwrap_or_default();
        v["type"] = json!("call");
        text.push_str(&v.to_string());
        text.push('\n');
    }
    ctx.calls.write(&text);
}
