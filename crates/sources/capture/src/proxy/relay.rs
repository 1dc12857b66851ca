//! The forwarding loops: once a session's startup is done (on the tokio side: accepting, the
//! startup message, connecting upstream), its two sockets are handed to one of these loops, each
//! a thread of its own on an `epoll` set (`mio`), which forwards both ways, tracks the calls and
//! records them until the session ends.
//!
//! Why not tokio here: a transaction of `pgbench -S` through the proxy is two reads, two writes
//! and about one `epoll_wait`, the same system calls for every proxy; what differs is the user
//! time around them. Measured (`FLOOR=1 bench/proxy-overhead`, docs/capture.md): a bare `mio`
//! loop 0.5–0.7 µs of user CPU per transaction, the same forwarding as tokio tasks 1.35–1.75 µs
//! (a task's wake-up, the `select!` of both directions and the stop, the waker's bookkeeping),
//! PgBouncer 1.0–1.3 µs in all. The sessions are few and long, their setup rare: tokio keeps the
//! setup (timeouts, the blocking connect), the loop keeps the hot path.
//!
//! Each socket is registered for reading only (edge-triggered): a short read means the socket is
//! empty, new bytes raise a new edge. A write goes straight to `send`; only a write that would
//! block keeps the rest and asks for write readiness on that socket, and the direction writing
//! there stops reading until it is written (so a slow side holds up its own direction only, and
//! never more than one read is kept).

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

use dbscope_core::{Recorder, StopSignal};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Registry, Token, Waker};

use crate::calls::Tracker;
use crate::wire::Framer;

use super::quiet::{recv, send};
use super::shared::{Base, BUF};
use super::track::{backend_pid, client_keeps, server_keeps, take_done, Names, Shared};

/// A session whose startup is done, for a loop to serve.
pub(super) struct Handoff {
    pub(super) client: OwnedFd,
    pub(super) server: OwnedFd,
    pub(super) session: u32,
    pub(super) rec: Recorder,
    /// The session's line of the calls file so far (client, user, database, connect time).
    pub(super) line: serde_json::Value,
}

/// What the loops and whoever stops them share.
#[derive(Default)]
struct Flags {
    /// The capture is stopping: every session ends, and one handed in now ends at once.
    stopping: AtomicBool,
    /// No session will be handed in any more: a loop ends once its sessions have.
    closed: AtomicBool,
}

/// The forwarding loops.
pub(super) struct Relays {
    loops: Vec<Loop>,
    next: AtomicUsize,
    flags: Arc<Flags>,
}

struct Loop {
    tx: mpsc::Sender<Handoff>,
    waker: Arc<Waker>,
}

/// Stops the loops' sessions (the recording thread holds it: it sees the stop signal).
#[derive(Clone)]
pub(super) struct Stopper {
    flags: Arc<Flags>,
    wakers: Vec<Arc<Waker>>,
}

impl Stopper {
    /// Ends every session (once; later calls do nothing).
    pub(super) fn stop(&self) {
        if !self.flags.stopping.swap(true, Ordering::AcqRel) {
            for w in &self.wakers {
                let _ = w.wake();
            }
        }
    }
}

const WAKE: Token = Token(usize::MAX);

impl Relays {
    /// Starts `n` loops (at least one); their threads end after [`Relays::close`].
    pub(super) fn start(
        n: usize,
        base: &Arc<Base>,
        stop: &Arc<StopSignal>,
    ) -> io::Result<(Relays, Stopper, Vec<JoinHandle<()>>)> {
        // Built up loop by loop: if one cannot start, dropping this closes those that did.
        let mut relays = Relays {
            loops: Vec::new(),
            next: AtomicUsize::new(0),
            flags: Arc::new(Flags::default()),
        };
        let mut threads = Vec::new();
        for i in 0..n.max(1) {
            let poll = Poll::new()?;
            let waker = Arc::new(Waker::new(poll.registry(), WAKE)?);
            let (tx, rx) = mpsc::channel();
            let lp = Serving {
                poll,
                rx,
                base: Arc::clone(base),
                stop: Arc::clone(stop),
                flags: Arc::clone(&relays.flags),
                sessions: Vec::new(),
                free: Vec::new(),
            };
            let failed = Arc::clone(stop);
            let thread = std::thread::Builder::new()
                .name(format!("capture-relay-{i}"))
                .spawn(move || {
                    // A bug here must not leave a capture that looks whole: its sockets close
                    // with the loop, and the capture ends failed, saying why.
                    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| lp.run())).is_err()
                    {
                        failed.fail(
                            "a forwarding loop of the capture proxy failed (a bug: please report \
                             it); its sessions were cut"
                                .to_string(),
                        );
                    }
                })?;
            relays.loops.push(Loop { tx, waker });
            threads.push(thread);
        }
        let stopper = Stopper {
            flags: Arc::clone(&relays.flags),
            wakers: relays.loops.iter().map(|l| Arc::clone(&l.waker)).collect(),
        };
        Ok((relays, stopper, threads))
    }

    /// Gives a session to the next loop (round robin); back when that loop is gone (it ends
    /// only after [`Relays::close`], or after a bug, which fails the capture).
    pub(super) fn hand(&self, h: Handoff) -> Result<(), Box<Handoff>> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.loops.len();
        let l = &self.loops[i];
        l.tx.send(h).map_err(|mpsc::SendError(h)| Box::new(h))?;
        let _ = l.waker.wake();
        Ok(())
    }

    /// No more sessions will be handed in: each loop ends its sessions (as at the stop) and
    /// its thread ends.
    pub(super) fn close(&self) {
        self.flags.closed.store(true, Ordering::Release);
        for l in &self.loops {
            let _ = l.waker.wake();
        }
    }
}

impl Drop for Relays {
    /// Also when the accept loop's thread unwinds: a loop left running would keep its sessions'
    /// recorders, and the recording thread would wait for them for ever.
    fn drop(&mut self) {
        self.close();
    }
}

/// One loop's state, on its thread.
struct Serving {
    poll: Poll,
    rx: mpsc::Receiver<Handoff>,
    base: Arc<Base>,
    stop: Arc<StopSignal>,
    flags: Arc<Flags>,
    /// Sessions by slot: slot `i` has tokens `2i` (client) and `2i + 1` (server).
    sessions: Vec<Option<Relay>>,
    free: Vec<usize>,
}

const CLIENT: usize = 0;
const SERVER: usize = 1;

impl Serving {
    fn run(mut self) {
        let mut events = Events::with_capacity(256);
        let mut buf = vec![0u8; BUF];
        loop {
            if let Err(e) = self.poll.poll(&mut events, None) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return self.broken(&e);
            }
            let mut woken = false;
            for ev in events.iter() {
                if ev.token() == WAKE {
                    woken = true;
                    continue;
                }
                let (slot, side) = (ev.token().0 / 2, ev.token().0 % 2);
                let Some(Some(r)) = self.sessions.get_mut(slot) else {
                    continue;
                };
                if r.on_event(side, &mut buf, &self.base, self.poll.registry())
                    .is_err()
                {
                    self.end(slot);
                }
            }
            // Every hand-off was sent before `closed` was set: none is left behind.
            let closed = self.flags.closed.load(Ordering::Acquire);
            if woken || closed {
                self.take_handed(&mut buf);
            }
            if closed || self.flags.stopping.load(Ordering::Acquire) {
                self.end_all();
            }
            if closed {
                return;
            }
        }
    }

    /// Serves the sessions handed in since the last look.
    fn take_handed(&mut self, buf: &mut [u8]) {
        while let Ok(h) = self.rx.try_recv() {
            self.add(h, buf);
        }
    }

    fn end_all(&mut self) {
        for slot in 0..self.sessions.len() {
            self.end(slot);
        }
    }

    /// `epoll_wait` failed (it does not, short of a bug): the capture fails, its sessions end
    /// as at a stop, and sessions handed in until the close are ended as they come.
    fn broken(mut self, e: &io::Error) {
        self.stop
            .fail(format!("the capture proxy's event loop failed: {e}"));
        self.flags.stopping.store(true, Ordering::Release);
        self.end_all();
        loop {
            let closed = self.flags.closed.load(Ordering::Acquire);
            // Stopping: each is ended as it is added, nothing read.
            self.take_handed(&mut []);
            if closed {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Registers a session handed in and serves what is already waiting on its sockets.
    fn add(&mut self, h: Handoff, buf: &mut [u8]) {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.sessions.push(None);
            self.sessions.len() - 1
        });
        let mut r = Relay {
            ends: [End::new(h.client), End::new(h.server)],
            framers: [Framer::new(client_keeps), Framer::new(server_keeps)],
            shared: Shared {
                tracker: Tracker::new(h.session),
                rec: h.rec,
                names: Names::default(),
            },
            session: h.session,
            slot,
            pid: 0,
            line: h.line,
        };
        let registry = self.poll.registry();
        let registered = (0..2).try_for_each(|side| {
            registry.register(
                &mut SourceFd(&r.ends[side].fd.as_raw_fd()),
                Token(2 * slot + side),
                Interest::READABLE,
            )
        });
        // Registering reports bytes already there, but the client may have sent its first
        // messages while the session was handed over: both sides are read now (a read of an
        // empty socket costs one `recv`, once per session).
        let ok = registered.is_ok()
            && !self.flags.stopping.load(Ordering::Acquire)
            && (0..2)
                .try_for_each(|side| r.read_side(side, buf, &self.base, registry))
                .is_ok();
        self.sessions[slot] = Some(r);
        if !ok {
            self.end(slot);
        }
    }

    /// Ends the session in `slot` (if any): deregisters and closes its sockets, records its end.
    fn end(&mut self, slot: usize) {
        let Some(Some(mut r)) = self.sessions.get_mut(slot).map(Option::take) else {
            return;
        };
        self.free.push(slot);
        let registry = self.poll.registry();
        for end in &mut r.ends {
            // What the other side sent last (a server's FATAL before it closes) still goes out
            // if there is room for it.
            if !end.pending.is_empty() {
                let _ = send(&end.fd, &end.pending);
            }
            let _ = registry.deregister(&mut SourceFd(&end.fd.as_raw_fd()));
        }
        r.finish(&self.base);
    }
}

/// One socket of a session.
struct End {
    fd: OwnedFd,
    /// Bytes read from the other side that the socket had no room for yet.
    pending: Vec<u8>,
}

impl End {
    fn new(fd: OwnedFd) -> Self {
        End {
            fd,
            pending: Vec::new(),
        }
    }
}

/// The session ends (a side closed, or an error on either).
struct Ended;

/// One session being forwarded.
struct Relay {
    /// `[client, server]`.
    ends: [End; 2],
    /// The messages read from each side: `[client's, server's]`.
    framers: [Framer; 2],
    shared: Shared,
    session: u32,
    slot: usize,
    /// The backend's process id, from `BackendKeyData` (0 until then).
    pid: u32,
    /// The session's line of the calls file (its user and database among it).
    line: serde_json::Value,
}

impl Relay {
    /// An event on `side`: its pending bytes written if it has room, then what it sent read.
    fn on_event(
        &mut self,
        side: usize,
        buf: &mut [u8],
        base: &Base,
        registry: &Registry,
    ) -> Result<(), Ended> {
        // The other side's direction stopped reading when `side` had no room: once what it
        // owes is written, the bytes waiting there are read (no new edge would come for them).
        if !self.ends[side].pending.is_empty() && self.write_pending(side, registry)? {
            self.read_side(1 - side, buf, base, registry)?;
        }
        self.read_side(side, buf, base, registry)
    }

    /// Writes what `side` is owed; true when all of it is written (the socket is then watched
    /// for reading only again).
    fn write_pending(&mut self, side: usize, registry: &Registry) -> Result<bool, Ended> {
        let end = &mut self.ends[side];
        let n = match send(&end.fd, &end.pending) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
            Err(_) => return Err(Ended),
        };
        end.pending.drain(..n);
        if !end.pending.is_empty() {
            return Ok(false);
        }
        self.watch(side, Interest::READABLE, registry)?;
        Ok(true)
    }

    /// Reads what `side` sent until its socket is empty (or the other side has no room),
    /// tracking and forwarding it.
    fn read_side(
        &mut self,
        side: usize,
        buf: &mut [u8],
        base: &Base,
        registry: &Registry,
    ) -> Result<(), Ended> {
        let to = 1 - side;
        // This direction waits for room on the other side.
        if !self.ends[to].pending.is_empty() {
            return Ok(());
        }
        loop {
            let n = match recv(&self.ends[side].fd, buf) {
                Ok(0) => return Err(Ended),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(_) => return Err(Ended),
            };
            let t = base.clock.now_ns();
            let data = &buf[..n];
            if side == CLIENT {
                // Read before it is forwarded: the answer cannot be seen before its request.
                let s = &mut self.shared;
                self.framers[CLIENT].feed(data, |m| s.tracker.client(&m, t));
                let written = self.forward(SERVER, data, registry)?;
                base.live.bytes_in.fetch_add(n as u64, Ordering::Relaxed);
                if !written {
                    return Ok(());
                }
            } else {
                let written = self.forward(CLIENT, data, registry)?;
                base.live.bytes_out.fetch_add(n as u64, Ordering::Relaxed);
                let s = &mut self.shared;
                let (pid, line, session) = (&mut self.pid, &self.line, self.session);
                self.framers[SERVER].feed(data, |m| {
                    if m.kind == b'K' {
                        if let (Some(p), Some(b)) = (backend_pid(m.body), &base.backends) {
                            *pid = p;
                            let database = line.get("database").or_else(|| line.get("user"));
                            b.connected(session, p, database.and_then(|d| d.as_str()));
                        }
                    }
                    s.tracker.server(&m, t)
                });
                take_done(s, base);
                if !written {
                    return Ok(());
                }
            }
            if n < buf.len() {
                // A short read emptied the socket; new bytes raise a new edge.
                return Ok(());
            }
        }
    }

    /// Sends `data` to `to`; false when part of it had to wait (kept, write readiness asked).
    fn forward(&mut self, to: usize, data: &[u8], registry: &Registry) -> Result<bool, Ended> {
        let end = &mut self.ends[to];
        let n = match send(&end.fd, data) {
            Ok(n) if n == data.len() => return Ok(true),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
            Err(_) => return Err(Ended),
        };
        end.pending.extend_from_slice(&data[n..]);
        self.watch(to, Interest::READABLE | Interest::WRITABLE, registry)?;
        Ok(false)
    }

    /// Watches `side`'s socket for `interest` from now on.
    fn watch(&self, side: usize, interest: Interest, registry: &Registry) -> Result<(), Ended> {
        registry
            .reregister(
                &mut SourceFd(&self.ends[side].fd.as_raw_fd()),
                Token(2 * self.slot + side),
                interest,
            )
            .map_err(|_| Ended)
    }

    /// Records the session's end: its last calls, its line of the calls file.
    fn finish(mut self, base: &Base) {
        let end = base.clock.now_ns();
        if self.pid > 0 {
            self.line["backend_pid"] = serde_json::json!(self.pid);
            if let Some(b) = &base.backends {
                b.ended(self.pid);
            }
        }
        let s = &mut self.shared;
        s.tracker.end(end);
        take_done(s, base);
        s.rec.flush();
        base.live
            .unmatched
            .fetch_add(s.tracker.unmatched, Ordering::Relaxed);
        if let Some((code, message)) = &s.tracker.startup_error {
            self.line["error"] = serde_json::json!(format!("{code}: {message}"));
        }
        self.line["ready"] = serde_json::json!(s.tracker.is_ready());
        self.line["disconnect_ns"] = serde_json::json!(end);
        if s.tracker.unmatched > 0 {
            self.line["unmatched_answers"] = serde_json::json!(s.tracker.unmatched);
        }
        base.calls.push_session(self.line);
        base.live.open.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;

    use dbscope_core::manifest::{Manifest, WorkloadInfo};
    use dbscope_core::Recording;
    use serde_json::{json, Value};

    use crate::proxy::calls_file::CallsFile;
    use crate::proxy::shared::Live;

    /// Forwarding loops on a recording in a temporary directory.
    struct Rig {
        dir: tempfile::TempDir,
        base: Arc<Base>,
        sessions: dbscope_core::Sessions,
        stop: Arc<StopSignal>,
        relays: Relays,
        stopper: Stopper,
        threads: Vec<JoinHandle<()>>,
        _rec: Recording,
    }

    impl Rig {
        fn start(loops: usize) -> Rig {
            let dir = tempfile::tempdir().unwrap();
            let manifest = Manifest::new("capture", WorkloadInfo::default(), 0);
            let mut rec = Recording::begin(&dir.path().join("run"), manifest).unwrap();
            let clock = rec.start_clock().unwrap();
            let (sessions, _batches) = rec.sessions(&clock, 0, 256);
            let base = Arc::new(Base {
                fd_limit: None,
                max_sessions: None,
                upstream: String::new(),
                clock,
                calls: Arc::new(CallsFile::create(&dir.path().join("calls.jsonl")).unwrap()),
                live: Arc::new(Live::default()),
                backends: None,
            });
            let stop = Arc::new(StopSignal::new());
            let (relays, stopper, threads) = Relays::start(loops, &base, &stop).unwrap();
            Rig {
                dir,
                base,
                sessions,
                stop,
                relays,
                stopper,
                threads,
                _rec: rec,
            }
        }

        /// Hands a session to the loops, counted open as the accept loop counts it: the test's
        /// ends of its client and server sockets.
        fn hand(&self) -> (UnixStream, UnixStream) {
            let (client, client_fd) = pair();
            let (server, server_fd) = pair();
            self.base.live.open.fetch_add(1, Ordering::Relaxed);
            let handed = self.relays.hand(Handoff {
                client: client_fd,
                server: server_fd,
                session: 7,
                rec: self.sessions.recorder(7),
                line: json!({"type": "session", "session": 7, "database": "db"}),
            });
            assert!(handed.is_ok());
            (client, server)
        }

        /// Closes the loops, waits for them: the calls file's lines.
        fn close(self) -> Vec<Value> {
            self.relays.close();
            for t in self.threads {
                t.join().unwrap();
            }
            self.base.calls.flush();
            std::fs::read_to_string(self.dir.path().join("calls.jsonl"))
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        }
    }

    /// Writes `bytes` into `from`, reads as many from `to`: they must be the same.
    fn pass(mut from: &UnixStream, mut to: &UnixStream, bytes: &[u8], what: &str) {
        from.write_all(bytes).unwrap();
        let mut got = vec![0u8; bytes.len()];
        to.read_exact(&mut got).unwrap();
        assert!(got == bytes, "{what}");
    }

    /// A socket pair: the test's end (blocking) and the proxy's (non-blocking).
    fn pair() -> (UnixStream, OwnedFd) {
        let (test, proxy) = UnixStream::pair().unwrap();
        // A loop that lost a wake-up fails the test instead of hanging it.
        let limit = Some(std::time::Duration::from_secs(20));
        test.set_read_timeout(limit).unwrap();
        test.set_write_timeout(limit).unwrap();
        proxy.set_nonblocking(true).unwrap();
        (test, OwnedFd::from(proxy))
    }

    fn message(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    /// A client that does not read holds up the server's direction only: its query still reaches
    /// the server, then every byte of the 8 MiB answer arrives in order once it reads; the call
    /// is tracked across it, and the session's end is recorded when the client leaves.
    #[test]
    fn a_client_not_reading_holds_up_only_its_own_direction() {
        let rig = Rig::start(1);
        let (client, server) = rig.hand();
        // The end of the startup: the server is ready for a query.
        let ready = message(b'Z', b"I");
        pass(&server, &client, &ready, "ready");
        let first = message(b'Q', b"SELECT big\0");
        pass(&client, &server, &first, "the query");
        // Its answer: 8 MiB of DataRow, far more than both sockets' buffers and one read of the
        // loop, then its end.
        let big: Vec<u8> = (0..8 << 20).map(|i| (i % 251) as u8).collect();
        let answer = [
            message(b'D', &big),
            message(b'C', b"SELECT 1\0"),
            message(b'Z', b"I"),
        ]
        .concat();
        let mut server_out = server.try_clone().unwrap();
        let sent = answer.clone();
        let writer = std::thread::spawn(move || server_out.write_all(&sent).unwrap());
        // Let the loop fill the client's socket and keep the rest: the server's direction is
        // now waiting for the client (were it not yet, the query below would prove nothing; 200
        // ms is ample on any machine).
        std::thread::sleep(std::time::Duration::from_millis(200));
        let second = message(b'Q', b"SELECT 2\0");
        pass(
            &client,
            &server,
            &second,
            "the next query went through while the answer waited",
        );
        let mut got = vec![0u8; answer.len()];
        (&client).read_exact(&mut got).unwrap();
        assert!(got == answer, "the answer arrived whole and in order");
        writer.join().unwrap();
        let done = [message(b'C', b"SELECT 1\0"), message(b'Z', b"I")].concat();
        pass(&server, &client, &done, "the second answer");

        drop(client);
        // The server's socket is closed by the loop when the session ends.
        let mut rest = Vec::new();
        (&server).read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
        let (base, stop) = (Arc::clone(&rig.base), Arc::clone(&rig.stop));
        let lines = rig.close();
        let calls: Vec<_> = lines.iter().filter(|l| l["type"] == "call").collect();
        assert_eq!(calls.len(), 2, "{lines:?}");
        for (c, sql) in calls.iter().zip(["SELECT big", "SELECT 2"]) {
            assert_eq!(c["sql"], sql);
            assert_eq!(c["rows"], 1, "{c:?}");
            assert_eq!(c["session"], 7);
            assert!(c.get("unfinished").is_none(), "{c:?}");
        }
        let ends: Vec<_> = lines.iter().filter(|l| l["type"] == "session").collect();
        assert_eq!(ends.len(), 1, "{lines:?}");
        assert_eq!(ends[0]["ready"], true);
        assert!(ends[0]["disconnect_ns"].as_u64().is_some());
        assert_eq!(base.live.open.load(Ordering::Relaxed), 0);
        assert_eq!(
            base.live.bytes_out.load(Ordering::Relaxed),
            (ready.len() + answer.len() + done.len()) as u64
        );
        assert_eq!(
            base.live.bytes_in.load(Ordering::Relaxed),
            (first.len() + second.len()) as u64
        );
        assert!(!stop.is_set());
    }

    /// The stop ends every session (both sockets closed, the end recorded, the call in flight
    /// recorded as unfinished), and a session handed in after it is ended at once.
    #[test]
    fn the_stop_ends_every_session_and_later_ones_at_once() {
        let rig = Rig::start(2);
        let (a, server_a) = rig.hand();
        let (b, server_b) = rig.hand();
        let query = message(b'Q', b"SELECT pg_sleep(10)\0");
        pass(&a, &server_a, &query, "the query");
        rig.stopper.stop();
        rig.stopper.stop();
        for mut s in [a, b, server_a, server_b] {
            let mut rest = Vec::new();
            s.read_to_end(&mut rest).unwrap();
            assert!(rest.is_empty());
        }
        let (mut late, _late_server) = rig.hand();
        let mut rest = Vec::new();
        late.read_to_end(&mut rest).unwrap();
        let base = Arc::clone(&rig.base);
        let lines = rig.close();
        let ends = lines.iter().filter(|l| l["type"] == "session").count();
        assert_eq!(ends, 3, "{lines:?}");
        let calls: Vec<_> = lines.iter().filter(|l| l["type"] == "call").collect();
        assert_eq!(calls.len(), 1, "{lines:?}");
        assert_eq!(calls[0]["sql"], "SELECT pg_sleep(10)");
        assert_eq!(calls[0]["unfinished"], true, "{:?}", calls[0]);
        assert_eq!(base.live.open.load(Ordering::Relaxed), 0);
    }

    /// A session handed to a loop that has ended comes back (the accept side records it as
    /// refused), instead of vanishing with its socket open and its count.
    #[test]
    fn a_session_handed_to_an_ended_loop_comes_back() {
        let mut rig = Rig::start(1);
        rig.relays.close();
        for t in std::mem::take(&mut rig.threads) {
            t.join().unwrap();
        }
        let (_client, client) = pair();
        let (_server, server) = pair();
        let back = rig
            .relays
            .hand(Handoff {
                client,
                server,
                session: 3,
                rec: rig.sessions.recorder(3),
                line: json!({"type": "session", "session": 3}),
            })
            .unwrap_err();
        assert_eq!(back.session, 3);
        assert_eq!(back.line["session"], 3);
    }
}
