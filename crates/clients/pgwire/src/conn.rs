//! A blocking PostgreSQL wire-protocol client: one socket, one thread, one `write` and blocking
//! reads per round trip, as libpq does. The async client (tokio-postgres) spends most of a short
//! round trip in its reactor (epoll, wake-ups); a load generator must not.
//!
//! Messages are encoded and parsed by `postgres-protocol` (the codec under tokio-postgres, with
//! SCRAM-SHA-256 and MD5); connection strings are resolved by [`super::conninfo`]. Parameters go as
//! text and results come back as text, so no type mapping is needed for the workloads' statements.

use std::io::{self, Read, Write};
use std::time::Duration;

use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256, SCRAM_SHA_256};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;
use postgres_protocol::IsNull;

use crate::conninfo::ConnInfo;
use crate::error::{db_error, ConnectError, WireError};
use crate::stream::{open_stream, Stream};
use crate::tag::tag_rows;

/// What one read asks the socket for, at least, on ordinary round trips.
const READ_SIZE: usize = 16 << 10;

/// One connection to a PostgreSQL server.
pub struct WireConn {
    pub(crate) stream: Stream,
    pub(crate) rbuf: BytesMut,
    /// What a read lands in before it is appended to `rbuf`: zeroed once, when it grows (see
    /// [`WireConn::read_more`]).
    landing: Vec<u8>,
    pub(crate) wbuf: BytesMut,
    pub(crate) broken: bool,
    /// The server process serving this connection (its `BackendKeyData`).
    pub(crate) backend_pid: Option<u32>,
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
                landing: Vec::new(),
                wbuf: BytesMut::with_capacity(1024),
                broken: false,
                backend_pid: None,
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

    /// The process id of the server backend serving this connection, as the server said at
    /// startup (`BackendKeyData`; `pg_stat_activity.pid`).
    pub fn backend_pid(&self) -> Option<u32> {
        self.backend_pid
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
                Message::BackendKeyData(body) => {
                    self.backend_pid = u32::try_from(body.process_id()).ok();
                }
                Message::ParameterStatus(_) | Message::NoticeResponse(_) => {}
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
    pub(crate) fn bind_text(&mut self, stmt: &str, params: &[&str]) -> Result<(), WireError> {
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
                    count = tag_rows(body.tag()?).unwrap_or(data_rows);
                }
                Message::DataRow(_) => data_rows += 1,
                _ => {}
            }
            Ok(())
        })?;
        Ok(count)
    }

    /// Reads messages until ReadyForQuery, giving each to `f`; the first ErrorResponse is returned
    /// after the server is ready again, so the connection stays in step.
    pub(crate) fn until_ready(
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
                        if code.ends_session() {
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

    pub(crate) fn send(&mut self) -> Result<(), WireError> {
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

    pub(crate) fn recv(&mut self) -> Result<Message, WireError> {
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

    /// Reads what the socket has, up to `at_least` bytes, into the read buffer; waits when
    /// nothing is there yet.
    ///
    /// The read lands in a buffer of its own, then the bytes read are appended. Reading straight
    /// into the read buffer, in safe code, meant zeroing `at_least` bytes of it first at every
    /// read: 16 KiB for each answer of a primary-key lookup that is a hundred bytes long, and
    /// 256 KiB for every read of a `COPY`. The landing buffer is zeroed once; copying what was
    /// read costs no more than zeroing room for it did.
    pub(crate) fn read_more(&mut self, at_least: usize) -> Result<(), WireError> {
        if self.landing.len() < at_least {
            self.landing.resize(at_least, 0);
        }
        let r = loop {
            match self.stream.read(&mut self.landing[..at_least]) {
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
        match r {
            Ok(n) => {
                self.rbuf.extend_from_slice(&self.landing[..n]);
                Ok(())
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    pub(crate) fn fail(&mut self, e: io::Error) -> WireError {
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
