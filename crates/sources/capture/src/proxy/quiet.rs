//! A forwarded socket that wakes the proxy only when there is something to read.
//!
//! tokio registers every socket for reading *and* writing, edge-triggered. A Unix socket signals
//! "writable" each time its peer reads what was written to it (the kernel's `unix_write_space`):
//! the server reading a query, or a client reading its answer, woke the proxy for nothing, once
//! per message. Measured under `pgbench -S -c 4` through the proxy (2 CPUs): 1.34 `epoll_wait`s
//! and 1.22 context switches per transaction against PgBouncer's 1.00 and 0.98, PgBouncer asking
//! for write readiness only when a write would block. These halves do the same: the socket is
//! registered for reading only, a write goes straight to `send`, and only a write that would
//! block registers a duplicate of the descriptor for write readiness, until that write is done.

use std::io;
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use rustix::io::Errno;
use rustix::net::{RecvFlags, SendFlags, Shutdown};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};

/// The reading half.
pub(super) struct QuietReader(Arc<AsyncFd<OwnedFd>>);

/// The writing half: shuts the socket down for writing when dropped, as tokio's own halves do.
pub(super) struct QuietWriter {
    fd: Arc<AsyncFd<OwnedFd>>,
    /// Handed over whole ([`rejoin`]): not shut down when dropped.
    detached: bool,
    /// A duplicate registered for write readiness while a write would block.
    blocked: Option<AsyncFd<OwnedFd>>,
}

/// Splits a connected, non-blocking stream socket (TCP or Unix) into quiet halves. Must be
/// called within the runtime.
pub(super) fn split(fd: OwnedFd) -> io::Result<(QuietReader, QuietWriter)> {
    let fd = Arc::new(register(fd, Interest::READABLE)?);
    Ok((
        QuietReader(Arc::clone(&fd)),
        QuietWriter {
            fd,
            detached: false,
            blocked: None,
        },
    ))
}

/// Registers `fd` with the runtime for `interest`.
#[allow(unsafe_code)]
fn register(fd: OwnedFd, interest: Interest) -> io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: an `OwnedFd` is an open descriptor that stays open, and its `as_raw_fd` the same
    // number, until it is dropped, which the `AsyncFd` owning it does only after deregistering.
    unsafe { AsyncFd::register_with_interest(fd, interest) }.map_err(io::Error::from)
}

/// `recv`, again when a signal interrupted it.
pub(super) fn recv(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match rustix::net::recv(fd, &mut *buf, RecvFlags::empty()) {
            Err(Errno::INTR) => continue,
            r => return Ok(r?.0),
        }
    }
}

/// `send`, again when a signal interrupted it. NOSIGNAL: a peer gone is an error here, never a
/// SIGPIPE.
pub(super) fn send(fd: &OwnedFd, data: &[u8]) -> io::Result<usize> {
    loop {
        match rustix::net::send(fd, data, SendFlags::NOSIGNAL) {
            Err(Errno::INTR) => continue,
            r => return Ok(r?),
        }
    }
}

impl AsyncRead for QuietReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            let mut guard = ready!(self.0.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            let len = unfilled.len();
            match guard.try_io(|fd| recv(fd.get_ref(), unfilled)) {
                Ok(Ok(n)) => {
                    // A short read emptied the socket (as tokio's own streams assume): the next
                    // read waits for the next event instead of paying a `recv` that would block.
                    if n > 0 && n < len {
                        guard.clear_ready();
                    }
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
    }
}

impl AsyncWrite for QuietWriter {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            if let Some(w) = &self.blocked {
                let mut guard = ready!(w.poll_write_ready(cx))?;
                match guard.try_io(|fd| send(fd.get_ref(), data)) {
                    Ok(r) => {
                        // Written: back to read readiness only.
                        self.blocked = None;
                        return Poll::Ready(r);
                    }
                    Err(_would_block) => continue,
                }
            }
            match send(self.fd.get_ref(), data) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // The peer is not reading: wait for room on a duplicate registered for
                    // writing (epoll keeps a registration per descriptor; tokio's drop of it
                    // deregisters before closing). Registering reports room already there.
                    let dup = self.fd.get_ref().try_clone()?;
                    self.blocked = Some(register(dup, Interest::WRITABLE)?);
                }
                r => return Poll::Ready(r),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(shutdown_write(self.fd.get_ref()))
    }
}

fn shutdown_write(fd: &OwnedFd) -> io::Result<()> {
    match rustix::net::shutdown(fd, Shutdown::Write) {
        // Already disconnected: nothing left to shut.
        Err(Errno::NOTCONN) => Ok(()),
        r => Ok(r?),
    }
}

impl Drop for QuietWriter {
    fn drop(&mut self) {
        if !self.detached {
            let _ = shutdown_write(self.fd.get_ref());
        }
    }
}

/// The socket of both halves, deregistered from the runtime, for another event loop to serve.
pub(super) fn rejoin(r: QuietReader, mut w: QuietWriter) -> io::Result<OwnedFd> {
    w.detached = true;
    w.blocked = None;
    let fd = Arc::clone(&w.fd);
    drop((r, w));
    Arc::try_unwrap(fd)
        .map(AsyncFd::into_inner)
        .map_err(|_| io::Error::other("the socket is still in use"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    fn pair() -> (QuietReader, QuietWriter, std::os::unix::net::UnixStream) {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        let (r, w) = split(OwnedFd::from(a)).unwrap();
        (r, w, b)
    }

    /// Bytes both ways, a peer that stops reading until the socket is full (the write waits for
    /// room, then completes), and end of stream after the writer's shutdown.
    #[test]
    fn forwards_both_ways_waits_for_room_and_shuts_down() {
        rt().block_on(async {
            let (mut r, mut w, peer) = pair();
            let peer = {
                peer.set_nonblocking(true).unwrap();
                tokio::net::UnixStream::from_std(peer).unwrap()
            };
            let (mut pr, mut pw) = peer.into_split();
            pw.write_all(b"hello").await.unwrap();
            let mut buf = [0u8; 16];
            let n = r.read(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], b"hello");
            // 8 MiB: far more than a Unix socket's buffer, so writes block until the peer reads.
            let big: Vec<u8> = (0..8 << 20).map(|i| (i % 251) as u8).collect();
            let expect = big.clone();
            let writer = async move {
                w.write_all(&big).await.unwrap();
                w.shutdown().await.unwrap();
                w
            };
            let reader = async move {
                let mut got = Vec::new();
                pr.read_to_end(&mut got).await.unwrap();
                got
            };
            let (_w, got) = tokio::join!(writer, reader);
            assert_eq!(got.len(), expect.len());
            assert!(got == expect, "bytes differ");
        });
    }

    /// The peer closing gives end of stream (a read of 0), and a write to a closed peer an
    /// error, not a signal.
    #[test]
    fn a_closed_peer_is_end_of_stream_and_a_write_error() {
        rt().block_on(async {
            let (mut r, mut w, peer) = pair();
            drop(peer);
            let mut buf = [0u8; 8];
            assert_eq!(r.read(&mut buf).await.unwrap(), 0);
            let e = w.write_all(b"x").await.unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::BrokenPipe, "{e}");
        });
    }
}
