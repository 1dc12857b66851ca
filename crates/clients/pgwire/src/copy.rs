//! `COPY … FROM STDIN` and `COPY … TO STDOUT` on a [`WireConn`]: CopyData messages of a size the
//! server parses in cache, and rows taken in bulk from large socket reads.

use std::time::{Duration, Instant};

use bytes::Buf;
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;

use crate::conn::WireConn;
use crate::error::{db_error, WireError};
use crate::tag::tag_rows;

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

impl WireConn {
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
                count = tag_rows(body.tag()?).unwrap_or(0);
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
                        if code.ends_session() {
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
                count = tag_rows(body.tag()?).unwrap_or(0);
            }
            Ok(())
        })?;
        Ok(count)
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
