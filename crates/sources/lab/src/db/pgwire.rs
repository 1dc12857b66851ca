//! A blocking PostgreSQL wire-protocol client: one socket, one thread, one `write` and blocking
//! reads per round trip, as libpq does. The async client (tokio-postgres) spends most of a short
//! round trip in its reactor (epoll, wake-ups); a load generator must not.
//!
//! Messages are encoded and parsed by `postgres-protocol` (the codec under tokio-postgres, with
//! SCRAM-SHA-256 and MD5); connection strings are resolved by [`super::conninfo`]. Parameters go as
//! text and results come back as text, so no type mapping is needed for the workloads' statements.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use fallible_iterator::FallibleIterator;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256, SCRAM_SHA_256};
use postgres_protocol::message::backend::{ErrorResponseBody, Message};
use postgres_protocol::message::frontend;
use postgres_protocol::IsNull;

use super::conninfo::{ConnInfo, Endpoint, Host};

/// A failure of the connection or of a statement.
#[derive(Debug)]
pub enum WireError {
    /// The server reported an error (SQLSTATE and message); the connection is still usable unless
    /// the code says the session ended (class 57P).
    Db {
        /// SQLSTATE, e.g. `40P01`.
        code: String,
        /// The server's message.
        message: String,
    },
    /// The socket failed: the connection is gone.
    Io(io::Error),
    /// The server said something this client does not understand: the connection is abandoned.
    Protocol(String),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Db { message, .. } => write!(f, "{message}"),
            WireError::Io(e) => write!(f, "{e}"),
            WireError::Protocol(m) => write!(f, "protocol error: {m}"),
        }
    }
}

impl From<io::Error> for WireError {
    fn from(e: io::Error) -> Self {
        WireError::Io(e)
    }
}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t),
            Stream::Unix(s) => s.set_read_timeout(t),
        }
    }

    fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_nonblocking(on),
            Stream::Unix(s) => s.set_nonblocking(on),
        }
    }

    fn fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What one read asks the socket for, at least, on ordinary round trips.
const READ_SIZE: usize = 16 << 10;

/// What one read asks for during `COPY … TO STDOUT`: as much as the socket holds (a Unix socket
/// queues about 200 KiB), so a read brings thousands of rows (libpq grows its buffer likewise).
const COPY_READ_SIZE: usize = 256 << 10;

/// During `COPY … TO STDOUT`, a read that brings less than this found the socket nearly empty:
/// the client keeps up with the server, and sleeping in `poll` on an empty socket makes every 8
/// KiB the backend sends wake this thread, which costs the backend a cross-CPU wakeup each time
/// (about 10 % of its CPU in `perf`, `sock_def_readable`); so the next read waits a little first
/// (`copy_nap`) and takes a batch.
const COPY_BATCH: usize = 64 << 10;

/// The longest wait before a COPY OUT read: the socket (about 200 KiB) must not fill meanwhile.
const COPY_NAP_MAX: Duration = Duration::from_millis(1);

/// The wait before the next COPY OUT read, from the last one and what the last read brought:
/// longer (from 50 µs, doubling) while reads bring less than [`COPY_BATCH`], shorter (halved,
/// then none) once they bring twice that.
fn copy_nap(nap: Duration, got: usize) -> Duration {
    let least = Duration::from_micros(50);
    if got < COPY_BATCH {
        (nap * 2).clamp(least, COPY_NAP_MAX)
    } else if got >= 2 * COPY_BATCH {
        Some(nap / 2).filter(|n| *n >= least).unwrap_or_default()
    } else {
        nap
    }
}

/// The CopyData messages `copy_in` sends are at most this long: the server copies each whole
/// message into its own buffer before parsing it, which stays in the CPU's cache at this size.
const COPY_MESSAGE: usize = 64 << 10;

/// One connection to a PostgreSQL server.
pub struct WireConn {
    stream: Stream,
    rbuf: BytesMut,
    wbuf: BytesMut,
    broken: bool,
}

/// Why no connection was made.
#[derive(Debug)]
pub enum ConnectError {
    /// No host of the list accepted a connection: for each, where it went and why.
    Unreachable(Vec<String>),
    /// A server accepted the connection and then refused the session (authentication, a missing
    /// database, …); as in libpq, the remaining hosts are not tried.
    Refused {
        /// Index of the endpoint that answered.
        endpoint: usize,
        /// What it said.
        error: WireError,
    },
}

/// Opens a socket to one endpoint, trying each address a host name has; the error says where.
fn open_stream(e: &Endpoint, timeout: Option<Duration>) -> Result<Stream, String> {
    let tcp = |addrs: Vec<SocketAddr>, shown: &str| -> Result<Stream, String> {
        let mut why = Vec::new();
        for addr in addrs {
            match connect_tcp(addr, timeout) {
                Ok(s) => return Ok(Stream::Tcp(s)),
                Err(err) => why.push(format!(
                    "connection to server at \"{shown}\" ({}), port {} failed: {err}",
                    addr.ip(),
                    e.port
                )),
            }
        }
        Err(why.join("; "))
    };
    match &e.host {
        Host::Socket(dir) => {
            let path = dir.join(format!(".s.PGSQL.{}", e.port));
            UnixStream::connect(&path).map(Stream::Unix).map_err(|err| {
                format!(
                    "connection to server on socket \"{}\" failed: {err}",
                    path.display()
                )
            })
        }
        Host::Abstract(name) => connect_abstract(name, e.port)
            .map(Stream::Unix)
            .map_err(|err| {
                format!(
                    "connection to server on socket \"{}\" failed: {err}",
                    e.address()
                )
            }),
        Host::Name(h) => {
            let addrs: Vec<SocketAddr> = (h.as_str(), e.port)
                .to_socket_addrs()
                .map_err(|err| format!("could not translate host name \"{h}\" to address: {err}"))?
                .collect();
            tcp(addrs, h)
        }
        Host::Addr { ip, name } => tcp(
            vec![SocketAddr::new(*ip, e.port)],
            name.as_deref().unwrap_or(&ip.to_string()),
        ),
    }
}

#[cfg(target_os = "linux")]
fn connect_abstract(name: &str, port: u16) -> io::Result<UnixStream> {
    use std::os::linux::net::SocketAddrExt;
    let addr =
        std::os::unix::net::SocketAddr::from_abstract_name(format!("{name}/.s.PGSQL.{port}"))?;
    UnixStream::connect_addr(&addr)
}

#[cfg(not(target_os = "linux"))]
fn connect_abstract(_name: &str, _port: u16) -> io::Result<UnixStream> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "abstract Unix sockets (a host beginning with @) exist only on Linux",
    ))
}

impl WireConn {
    /// Connects to the first endpoint of `info` that accepts a connection (libpq's order: each
    /// host in turn, each address of a host name in turn), authenticates (trust, password, MD5,
    /// SCRAM-SHA-256) and waits for the server to be ready. Returns the connection and the index
    /// of the endpoint used. `timeout` (`None`: no limit) bounds each TCP connect and every read
    /// until the server is ready; a host that times out or hangs up is skipped, as in libpq.
    pub fn connect(
        info: &ConnInfo,
        timeout: Option<Duration>,
    ) -> Result<(WireConn, usize), ConnectError> {
        let mut unreachable = Vec::new();
        for (i, e) in info.endpoints.iter().enumerate() {
            let stream = match open_stream(e, timeout) {
                Ok(s) => s,
                Err(why) => {
                    unreachable.push(why);
                    continue;
                }
            };
            let mut conn = WireConn {
                stream,
                rbuf: BytesMut::with_capacity(READ_SIZE),
                wbuf: BytesMut::with_capacity(1024),
                broken: false,
            };
            let started = conn
                .stream
                .set_read_timeout(timeout)
                .map_err(WireError::Io)
                .and_then(|()| conn.startup(info))
                .and_then(|()| conn.stream.set_read_timeout(None).map_err(WireError::Io));
            match started {
                Ok(()) => return Ok((conn, i)),
                Err(WireError::Io(err)) => {
                    unreachable.push(format!("{}: {err}", e.address()));
                }
                Err(error) => return Err(ConnectError::Refused { endpoint: i, error }),
            }
        }
        Err(ConnectError::Unreachable(unreachable))
    }

    /// Switches the socket to non-blocking mode: reads and writes that would block wait in
    /// [`crate::mux::wait_fd`], which lets other sessions run on this thread meanwhile.
    pub fn set_nonblocking(&mut self) -> Result<(), WireError> {
        self.stream.set_nonblocking(true).map_err(|e| self.fail(e))
    }

    /// True once the connection failed and can no longer be used.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    fn startup(&mut self, info: &ConnInfo) -> Result<(), WireError> {
        let user = info.user.as_str();
        let mut params = vec![
            ("user", user),
            ("database", info.dbname.as_str()),
            ("client_encoding", "UTF8"),
            ("application_name", info.application_name.as_str()),
        ];
        if let Some(options) = &info.options {
            params.push(("options", options.as_str()));
        }
        frontend::startup_message(params.iter().copied(), &mut self.wbuf)?;
        self.send()?;
        let password = info.password.as_deref().map(str::as_bytes);
        let need_password = || {
            WireError::Protocol(
                "the server asks for a password and none was given (postgres://user:PASSWORD@… or PGPASSWORD)"
                    .into(),
            )
        };
        let mut scram: Option<ScramSha256> = None;
        loop {
            match self.recv()? {
                Message::AuthenticationOk => {}
                Message::AuthenticationCleartextPassword => {
                    let pw = password.ok_or_else(need_password)?;
                    frontend::password_message(pw, &mut self.wbuf)?;
                    self.send()?;
                }
                Message::AuthenticationMd5Password(body) => {
                    let pw = password.ok_or_else(need_password)?;
                    let hash = md5_hash(user.as_bytes(), pw, body.salt());
                    frontend::password_message(hash.as_bytes(), &mut self.wbuf)?;
                    self.send()?;
                }
                Message::AuthenticationSasl(body) => {
                    let pw = password.ok_or_else(need_password)?;
                    let mut mechanisms = body.mechanisms();
                    let mut scram_offered = false;
                    while let Some(m) = mechanisms.next()? {
                        scram_offered |= m == SCRAM_SHA_256;
                    }
                    if !scram_offered {
                        return Err(WireError::Protocol(
                            "the server offers no SASL mechanism this client supports (SCRAM-SHA-256)".into(),
                        ));
                    }
                    let s = ScramSha256::new(pw, ChannelBinding::unsupported());
                    frontend::sasl_initial_response(SCRAM_SHA_256, s.message(), &mut self.wbuf)?;
                    self.send()?;
                    scram = Some(s);
                }
                Message::AuthenticationSaslContinue(body) => {
                    let s = scram
                        .as_mut()
                        .ok_or_else(|| WireError::Protocol("SASL continue before start".into()))?;
                    s.update(body.data())?;
                    frontend::sasl_response(s.message(), &mut self.wbuf)?;
                    self.send()?;
                }
                Message::AuthenticationSaslFinal(body) => {
                    let s = scram
                        .as_mut()
                        .ok_or_else(|| WireError::Protocol("SASL final before start".into()))?;
                    s.finish(body.data())?;
                }
                Message::ErrorResponse(body) => return Err(db_error(&body)),
                Message::ReadyForQuery(_) => return Ok(()),
                Message::ParameterStatus(_)
                | Message::BackendKeyData(_)
                | Message::NoticeResponse(_) => {}
                _ => {
                    return Err(WireError::Protocol(
                        "unsupported authentication method (this client does trust, password, md5, scram-sha-256)"
                            .into(),
                    ))
                }
            }
        }
    }

    /// Runs SQL with the simple-query protocol and returns every row's columns as text.
    pub fn simple_query(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, WireError> {
        frontend::query(sql, &mut self.wbuf)?;
        self.send()?;
        self.collect_rows()
    }

    /// Runs one statement with the extended protocol (unnamed statement and portal, parameters
    /// and results in text format) and returns every row's columns as text.
    pub fn query(
        &mut self,
        sql: &str,
        params: &[&str],
    ) -> Result<Vec<Vec<Option<String>>>, WireError> {
        frontend::parse("", sql, std::iter::empty(), &mut self.wbuf)?;
        self.bind_text("", params)?;
        frontend::execute("", 0, &mut self.wbuf)?;
        frontend::sync(&mut self.wbuf);
        self.send()?;
        self.collect_rows()
    }

    /// Reads until ReadyForQuery, keeping every DataRow's columns as text.
    fn collect_rows(&mut self) -> Result<Vec<Vec<Option<String>>>, WireError> {
        let mut rows = Vec::new();
        self.until_ready(|msg| {
            if let Message::DataRow(row) = msg {
                let buf = row.buffer();
                let mut cols = Vec::new();
                let mut ranges = row.ranges();
                while let Some(r) = ranges.next()? {
                    cols.push(r.map(|r| String::from_utf8_lossy(&buf[r]).into_owned()));
                }
                rows.push(cols);
            }
            Ok(())
        })?;
        Ok(rows)
    }

    /// Queues a Bind of statement `stmt` to the unnamed portal: text parameters, text results.
    fn bind_text(&mut self, stmt: &str, params: &[&str]) -> Result<(), WireError> {
        frontend::bind(
            "",
            stmt,
            std::iter::once(0i16), // all parameters in text format
            params.iter(),
            |p, buf| {
                buf.extend_from_slice(p.as_bytes());
                Ok(IsNull::No)
            },
            std::iter::once(0i16),
            &mut self.wbuf,
        )
        .map_err(|e| match e {
            frontend::BindError::Conversion(e) => {
                WireError::Protocol(format!("cannot encode a parameter: {e}"))
            }
            frontend::BindError::Serialization(e) => WireError::Io(e),
        })
    }

    /// Prepares `sql` as the named statement `name`.
    pub fn prepare(&mut self, name: &str, sql: &str) -> Result<(), WireError> {
        frontend::parse(name, sql, std::iter::empty(), &mut self.wbuf)?;
        frontend::sync(&mut self.wbuf);
        self.send()?;
        self.until_ready(|_| Ok(()))
    }

    /// Executes a prepared statement with text parameters; returns the rows affected or returned.
    pub fn execute(&mut self, name: &str, params: &[&str]) -> Result<u64, WireError> {
        self.bind_text(name, params)?;
        frontend::execute("", 0, &mut self.wbuf)?;
        frontend::sync(&mut self.wbuf);
        self.send()?;
        let mut count = 0u64;
        let mut data_rows = 0u64;
        self.until_ready(|msg| {
            match msg {
                Message::CommandComplete(body) => {
                    count = tag_count(body.tag()?).unwrap_or(data_rows);
                }
                Message::DataRow(_) => data_rows += 1,
                _ => {}
            }
            Ok(())
        })?;
        Ok(count)
    }

    /// Sends one call as an application sent it (see [`ReplayCall`]) and reads the answer up to
    /// `ReadyForQuery`: command tags, rows, the error and the transaction state. A server error
    /// is part of the answer, not an `Err` (the connection stays usable); `Err` is a broken
    /// connection (or one the server is ending, class 57P). A `COPY … FROM STDIN` whose data is not
    /// there is refused with CopyFail.
    pub fn replay_call(&mut self, call: &ReplayCall<'_>) -> Result<Answer, WireError> {
        match call {
            ReplayCall::Simple(sql) => frontend::query(sql, &mut self.wbuf)?,
            ReplayCall::Extended {
                statement,
                parse,
                params,
                formats,
            } => {
                if let Some(sql) = parse {
                    frontend::parse(statement, sql, std::iter::empty(), &mut self.wbuf)?;
                }
                let formats: Vec<i16> = match formats.is_empty() {
                    true => vec![0],
                    false => formats.to_vec(),
                };
                frontend::bind(
                    "",
                    statement,
                    formats,
                    params.iter(),
                    |p, buf| match p {
                        Some(v) => {
                            buf.extend_from_slice(v);
                            Ok(IsNull::No)
                        }
                        None => Ok(IsNull::Yes),
                    },
                    std::iter::once(0i16),
                    &mut self.wbuf,
                )
                .map_err(|e| match e {
                    frontend::BindError::Conversion(e) => {
                        WireError::Protocol(format!("cannot encode a parameter: {e}"))
                    }
                    frontend::BindError::Serialization(e) => WireError::Io(e),
                })?;
                frontend::execute("", 0, &mut self.wbuf)?;
                frontend::sync(&mut self.wbuf);
            }
        }
        self.send()?;
        let mut a = Answer::default();
        let mut data_rows = 0u64;
        loop {
            match self.recv()? {
                Message::ReadyForQuery(body) => {
                    a.txn = Some(body.status() as char);
                    return Ok(a);
                }
                Message::CommandComplete(body) => {
                    let tag = body.tag().map_err(WireError::Io)?.to_string();
                    a.rows += tag_count(&tag).unwrap_or(data_rows);
                    data_rows = 0;
                    a.tags.push(tag);
                }
                Message::EmptyQueryResponse => a.tags.push(String::new()),
                Message::DataRow(_) => data_rows += 1,
                Message::ErrorResponse(body) => {
                    if let WireError::Db { code, message } = db_error(&body) {
                        if code.starts_with("57P") {
                            self.broken = true;
                            return Err(WireError::Db { code, message });
                        }
                        a.error.get_or_insert((code, message));
                    }
                    data_rows = 0;
                }
                Message::CopyInResponse(_) => {
                    frontend::copy_fail(
                        "dbscope replay: the COPY data was not captured",
                        &mut self.wbuf,
                    )?;
                    self.send()?;
                }
                _ => {}
            }
        }
    }

    /// Sends a COPY statement and reads up to the response `is` recognises (`what` names it in
    /// the error when another comes); a server error is returned once the server is ready again.
    fn start_copy(
        &mut self,
        sql: &str,
        is: impl Fn(&Message) -> bool,
        what: &str,
    ) -> Result<(), WireError> {
        frontend::query(sql, &mut self.wbuf)?;
        self.send()?;
        loop {
            match self.recv()? {
                m if is(&m) => return Ok(()),
                Message::ErrorResponse(body) => {
                    let e = db_error(&body);
                    self.until_ready(|_| Ok(()))?;
                    return Err(e);
                }
                Message::NoticeResponse(_) | Message::ParameterStatus(_) => {}
                _ => {
                    self.broken = true;
                    return Err(WireError::Protocol(format!("expected {what}")));
                }
            }
        }
    }

    /// Runs `COPY … FROM STDIN` (simple-query protocol), streaming the chunks `fill` produces as
    /// CopyData messages; returns the rows copied. A `fill` error is sent as CopyFail, so the server
    /// loads nothing, and comes back as `WireError::Protocol` with `fill`'s message.
    pub fn copy_in(
        &mut self,
        sql: &str,
        fill: &mut dyn FnMut(&mut Vec<u8>) -> Result<bool, String>,
    ) -> Result<u64, WireError> {
        self.start_copy(
            sql,
            |m| matches!(m, Message::CopyInResponse(_)),
            "CopyInResponse",
        )?;
        let mut chunk = Vec::with_capacity(1 << 20);
        let mut failure = None;
        loop {
            chunk.clear();
            let more = match fill(&mut chunk) {
                Ok(more) => more,
                Err(msg) => {
                    failure = Some(msg);
                    false
                }
            };
            if failure.is_some() {
                break;
            }
            if !chunk.is_empty() {
                for piece in chunk.chunks(COPY_MESSAGE) {
                    frontend::CopyData::new(piece)?.write(&mut self.wbuf);
                }
                self.send()?;
            }
            if !more {
                break;
            }
        }
        match &failure {
            Some(msg) => frontend::copy_fail(msg, &mut self.wbuf)?,
            None => frontend::copy_done(&mut self.wbuf),
        }
        self.send()?;
        let mut count = 0u64;
        let result = self.until_ready(|msg| {
            if let Message::CommandComplete(body) = msg {
                count = tag_count(body.tag()?).unwrap_or(0);
            }
            Ok(())
        });
        match failure {
            Some(msg) => Err(WireError::Protocol(msg)),
            None => result.map(|()| count),
        }
    }

    /// Runs `COPY … TO STDOUT` (simple-query protocol), giving each CopyData message's bytes to
    /// `sink`; returns the rows copied (the server's `COPY n`). A `sink` error abandons the
    /// connection (the server cannot be stopped mid-COPY without a cancel request) and comes back
    /// as `WireError::Protocol` with `sink`'s message.
    pub fn copy_out(
        &mut self,
        sql: &str,
        sink: &mut dyn FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<u64, WireError> {
        self.start_copy(
            sql,
            |m| matches!(m, Message::CopyOutResponse(_)),
            "CopyOutResponse",
        )?;
        let mut nap = Duration::ZERO;
        loop {
            // The CopyData messages the buffer holds whole go to `sink` straight from it: no
            // message object, no copy, one read for thousands of rows.
            let (used, other) = match copy_data_run(&self.rbuf, sink) {
                Ok(r) => r,
                Err(RunError::Sink(msg)) => {
                    self.broken = true;
                    return Err(WireError::Protocol(msg));
                }
                Err(RunError::Protocol(msg)) => {
                    self.broken = true;
                    return Err(WireError::Protocol(msg));
                }
            };
            self.rbuf.advance(used);
            if !other {
                if !nap.is_zero() {
                    crate::mux::sleep_until(Instant::now() + nap);
                }
                let before = self.rbuf.len();
                self.read_more(COPY_READ_SIZE)?;
                nap = copy_nap(nap, self.rbuf.len() - before);
                continue;
            }
            // Another message comes next: the general parser takes it.
            match self.recv()? {
                Message::CopyDone => break,
                Message::ErrorResponse(body) => {
                    let e = db_error(&body);
                    if let WireError::Db { code, .. } = &e {
                        if code.starts_with("57P") {
                            self.broken = true;
                            return Err(e);
                        }
                    }
                    self.until_ready(|_| Ok(()))?;
                    return Err(e);
                }
                Message::NoticeResponse(_) | Message::ParameterStatus(_) => {}
                Message::CopyData(body) => {
                    if let Err(msg) = sink(body.data()) {
                        self.broken = true;
                        return Err(WireError::Protocol(msg));
                    }
                }
                _ => {
                    self.broken = true;
                    return Err(WireError::Protocol(
                        "unexpected message during COPY OUT".into(),
                    ));
                }
            }
        }
        let mut count = 0u64;
        self.until_ready(|msg| {
            if let Message::CommandComplete(body) = msg {
                count = tag_count(body.tag()?).unwrap_or(0);
            }
            Ok(())
        })?;
        Ok(count)
    }

    /// Reads messages until ReadyForQuery, giving each to `f`; the first ErrorResponse is returned
    /// after the server is ready again, so the connection stays in step.
    fn until_ready(
        &mut self,
        mut f: impl FnMut(Message) -> io::Result<()>,
    ) -> Result<(), WireError> {
        let mut error: Option<WireError> = None;
        loop {
            match self.recv()? {
                Message::ReadyForQuery(_) => break,
                Message::ErrorResponse(body) => {
                    let e = db_error(&body);
                    if let WireError::Db { code, .. } = &e {
                        if code.starts_with("57P") {
                            // The server is ending this session: it will not send ReadyForQuery.
                            self.broken = true;
                            return Err(e);
                        }
                    }
                    error.get_or_insert(e);
                }
                msg => f(msg)?,
            }
        }
        match error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn send(&mut self) -> Result<(), WireError> {
        let mut done = 0;
        let r = loop {
            if done == self.wbuf.len() {
                break Ok(());
            }
            match self.stream.write(&self.wbuf[done..]) {
                Ok(0) => break Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if let Err(e) = crate::mux::wait_fd(self.stream.fd(), libc::POLLOUT) {
                        break Err(e);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        self.wbuf.clear();
        r.map_err(|e| self.fail(e))
    }

    fn recv(&mut self) -> Result<Message, WireError> {
        loop {
            match Message::parse(&mut self.rbuf) {
                Ok(Some(m)) => return Ok(m),
                Ok(None) => {}
                Err(e) => {
                    self.broken = true;
                    return Err(WireError::Protocol(e.to_string()));
                }
            }
            self.read_more(READ_SIZE)?;
        }
    }

    /// Reads what the socket has, up to `at_least` bytes, straight into the read buffer (no
    /// bounce buffer); waits when nothing is there yet.
    fn read_more(&mut self, at_least: usize) -> Result<(), WireError> {
        let len = self.rbuf.len();
        // Zeroing the space first keeps this safe code; it costs far less than the read.
        self.rbuf.resize(len + at_least, 0);
        let r = loop {
            match self.stream.read(&mut self.rbuf[len..]) {
                Ok(0) => {
                    break Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed the connection",
                    ))
                }
                Ok(n) => break Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if let Err(e) = crate::mux::wait_fd(self.stream.fd(), libc::POLLIN) {
                        break Err(e);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        self.rbuf.truncate(len + *r.as_ref().unwrap_or(&0));
        r.map(|_| ()).map_err(|e| self.fail(e))
    }

    fn fail(&mut self, e: io::Error) -> WireError {
        self.broken = true;
        WireError::Io(e)
    }
}

impl Drop for WireConn {
    fn drop(&mut self) {
        if !self.broken {
            frontend::terminate(&mut self.wbuf);
            let _ = self.stream.write_all(&self.wbuf);
        }
    }
}

/// Why [`copy_data_run`] stopped.
enum RunError {
    /// `sink` refused a row.
    Sink(String),
    /// A message header that cannot be right.
    Protocol(String),
}

/// Gives `sink` the data of every whole CopyData message at the start of `buf`, in order; returns
/// the bytes they took and whether a message of another kind (or a CopyData message too long to
/// be read whole soon) comes next, which [`WireConn::recv`] then parses.
fn copy_data_run(
    buf: &[u8],
    sink: &mut dyn FnMut(&[u8]) -> Result<(), String>,
) -> Result<(usize, bool), RunError> {
    let mut at = 0;
    while let Some(head) = buf.get(at..at + 5) {
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        if len < 4 {
            return Err(RunError::Protocol(format!(
                "invalid message length {len} during COPY OUT"
            )));
        }
        if head[0] != b'd' {
            return Ok((at, true));
        }
        let Some(data) = buf.get(at + 5..at + 1 + len) else {
            // A row longer than a read: the general parser waits for all of it.
            return Ok((at, len >= COPY_READ_SIZE));
        };
        sink(data).map_err(RunError::Sink)?;
        at += 1 + len;
    }
    Ok((at, false))
}

fn connect_tcp(addr: SocketAddr, timeout: Option<Duration>) -> io::Result<TcpStream> {
    let s = match timeout {
        Some(t) => TcpStream::connect_timeout(&addr, t)?,
        None => TcpStream::connect(addr)?,
    };
    s.set_nodelay(true)?;
    Ok(s)
}

fn db_error(body: &ErrorResponseBody) -> WireError {
    let mut code = String::new();
    let mut message = String::new();
    let mut fields = body.fields();
    while let Ok(Some(f)) = fields.next() {
        match f.type_() {
            b'C' => code = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            b'M' => message = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            _ => {}
        }
    }
    WireError::Db { code, message }
}

/// A connected socket to a PostgreSQL server, before any message: for a proxy that speaks the
/// protocol on its clients' behalf (`dbscope capture proxy`).
pub enum RawSocket {
    /// TCP (with `TCP_NODELAY`).
    Tcp(TcpStream),
    /// A Unix-domain socket.
    Unix(UnixStream),
}

/// Opens a socket to the first endpoint of the connection string `spec` that accepts one (libpq's
/// order and rules for hosts, ports and sockets; `connect_timeout`, 10 s when not given, bounds
/// each TCP connect). User, database and password in `spec` are not used: the proxy's client
/// sends its own. The error says where each attempt failed.
pub fn connect_socket(spec: &str) -> Result<RawSocket, String> {
    use super::conninfo::{resolve, ConnectTimeout, Defaults};
    let spec = spec.trim();
    let spec = match spec.strip_prefix("postgres:") {
        Some(kv) if !spec.starts_with("postgres://") => kv,
        _ => spec,
    };
    let info = resolve(spec, &Defaults::system()).map_err(|e| e.0)?;
    let timeout = match info.connect_timeout {
        ConnectTimeout::Default => Some(Duration::from_secs(10)),
        ConnectTimeout::Forever => None,
        ConnectTimeout::Limit(t) => Some(t),
    };
    let mut why = Vec::new();
    for e in &info.endpoints {
        match open_stream(e, timeout) {
            Ok(Stream::Tcp(s)) => return Ok(RawSocket::Tcp(s)),
            Ok(Stream::Unix(s)) => return Ok(RawSocket::Unix(s)),
            Err(w) => why.push(w),
        }
    }
    Err(why.join("; "))
}

/// One call to replay (see [`WireConn::replay_call`]).
pub enum ReplayCall<'a> {
    /// A `Query` message: the text as sent (several statements allowed).
    Simple(&'a str),
    /// `Parse` (when `parse` holds the text: the first use of a named statement, or every use of
    /// the unnamed one), `Bind` with the values as given, `Execute`, `Sync`.
    Extended {
        /// The prepared statement's name (empty: unnamed).
        statement: &'a str,
        /// The text to parse first, if any.
        parse: Option<&'a str>,
        /// Values (`None`: NULL), as the bytes to send.
        params: &'a [Option<Vec<u8>>],
        /// Each value's format (0 text, 1 binary); empty: all text.
        formats: &'a [i16],
    },
}

/// What the server answered to a replayed call.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Command tags in order.
    pub tags: Vec<String>,
    /// Rows affected or returned (from the tags, else the data rows).
    pub rows: u64,
    /// The first error: SQLSTATE and message.
    pub error: Option<(String, String)>,
    /// Transaction state after the call (`I`, `T`, `E`).
    pub txn: Option<char>,
}

/// The row count a command tag ends with (`UPDATE 3`, `INSERT 0 5`, `SELECT 10`), if it has one.
fn tag_count(tag: &str) -> Option<u64> {
    let verb = tag.split(' ').next()?;
    matches!(
        verb,
        "INSERT" | "UPDATE" | "DELETE" | "SELECT" | "MERGE" | "FETCH" | "MOVE" | "COPY"
    )
    .then(|| tag.rsplit(' ').next()?.parse().ok())
    .flatten()
}

/// Connects by the connection string `spec` (libpq rules) with `application_name` set when the
/// string does not set one, to database `dbname` instead of the string's when given (a
/// maintenance connection). Returns the connection and the string's own database (the one it
/// names, or libpq's default); the error says where it failed.
pub fn connect_with(
    spec: &str,
    application_name: &str,
    dbname: Option<&str>,
) -> Result<(WireConn, String), String> {
    use super::conninfo::{resolve, ConnectTimeout, Defaults};
    let spec = spec.trim();
    let spec = match spec.strip_prefix("postgres:") {
        Some(kv) if !spec.starts_with("postgres://") => kv,
        _ => spec,
    };
    let defaults = Defaults {
        application_name,
        ..Defaults::system()
    };
    let mut info = resolve(spec, &defaults).map_err(|e| e.0)?;
    let own = info.dbname.clone();
    if let Some(db) = dbname {
        info.dbname = db.to_string();
    }
    let timeout = match info.connect_timeout {
        ConnectTimeout::Default => Some(Duration::from_secs(10)),
        ConnectTimeout::Forever => None,
        ConnectTimeout::Limit(t) => Some(t),
    };
    match WireConn::connect(&info, timeout) {
        Ok((c, _)) => Ok((c, own)),
        Err(ConnectError::Unreachable(why)) => Err(why.join("; ")),
        Err(ConnectError::Refused { error, .. }) => Err(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![tag];
        m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    type Taken = (Vec<Vec<u8>>, Result<(usize, bool), String>);

    fn run(buf: &[u8]) -> Taken {
        let mut rows = Vec::new();
        let r = copy_data_run(buf, &mut |d: &[u8]| {
            rows.push(d.to_vec());
            Ok(())
        })
        .map_err(|e| match e {
            RunError::Sink(m) | RunError::Protocol(m) => m,
        });
        (rows, r)
    }

    /// Issue 15 part 4: the rows of a COPY OUT come from the buffer in bulk, each row whole and
    /// in order; a partial message waits for the next read, another kind goes to `recv`.
    #[test]
    fn copy_data_run_takes_whole_rows_and_stops_where_it_must() {
        let mut buf = [msg(b'd', b"1|a\n"), msg(b'd', b""), msg(b'd', b"22|bb\n")].concat();
        let whole = buf.len();
        let (rows, r) = run(&buf);
        assert_eq!(rows, [b"1|a\n".to_vec(), vec![], b"22|bb\n".to_vec()]);
        assert_eq!(r, Ok((whole, false)));
        // The next row only partly read: the three whole ones are taken, the rest waits.
        buf.extend_from_slice(&msg(b'd', b"333|ccc\n")[..7]);
        let (rows, r) = run(&buf);
        assert_eq!(rows.len(), 3);
        assert_eq!(r, Ok((whole, false)));
        // A header cut short waits too.
        let (rows, r) = run(&buf[..whole + 3]);
        assert_eq!((rows.len(), r), (3, Ok((whole, false))));
        // CopyDone after the rows: handed over.
        let done = [&buf[..whole], &msg(b'c', b"")[..]].concat();
        assert_eq!(run(&done).1, Ok((whole, true)));
        // A row longer than a read is handed to the general parser, which waits for all of it.
        let long = msg(b'd', &vec![b'x'; COPY_READ_SIZE]);
        assert_eq!(run(&long[..100]).1, Ok((0, true)));
        // A length below 4 is refused, not looped on.
        assert!(run(&[b'd', 0, 0, 0, 2]).1.is_err());
    }

    #[test]
    fn copy_out_reads_wait_longer_while_the_socket_is_nearly_empty() {
        let us = Duration::from_micros;
        assert_eq!(copy_nap(Duration::ZERO, 8 << 10), us(50));
        assert_eq!(copy_nap(us(50), 8 << 10), us(100));
        assert_eq!(copy_nap(us(800), 0), COPY_NAP_MAX);
        assert_eq!(copy_nap(COPY_NAP_MAX, 100), COPY_NAP_MAX);
        assert_eq!(copy_nap(us(400), 100 << 10), us(400));
        assert_eq!(copy_nap(us(400), 200 << 10), us(200));
        assert_eq!(copy_nap(us(80), 200 << 10), Duration::ZERO);
        assert_eq!(copy_nap(Duration::ZERO, 256 << 10), Duration::ZERO);
    }

    #[test]
    fn copy_data_run_stops_at_a_refusing_sink() {
        let buf = [msg(b'd', b"1\n"), msg(b'd', b"2\n")].concat();
        let mut n = 0;
        let r = copy_data_run(&buf, &mut |_| {
            n += 1;
            Err("disk full".into())
        });
        assert!(matches!(r, Err(RunError::Sink(m)) if m == "disk full"));
        assert_eq!(n, 1);
    }
}
