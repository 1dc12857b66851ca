//! `forward-floor --uring`: the same forwarding on one `io_uring` instead of `epoll`, to measure
//! what fewer system calls would save. Each direction keeps one `recv` armed; when it completes,
//! a `send` of those bytes to the other side goes in linked to the next `recv` on the same side
//! (`IO_LINK`: the buffer is read again only once it is sent), the `send`'s success posting no
//! completion (`SKIP_SUCCESS`). A transaction is then one `io_uring_enter` per direction, where
//! the `epoll` loop makes a `recv`, a `send` and about one `epoll_wait` per direction.
//!
//! Not a proxy for real use either: a session ends at its first error, and its slot is not
//! reused.

use std::net::TcpListener;
use std::os::fd::{AsRawFd, IntoRawFd};
use std::os::unix::net::UnixStream;

use io_uring::{opcode, squeue, types, IoUring};

/// A session: `[client, server]` sockets and a buffer for what each sends.
struct Session {
    fds: [i32; 2],
    bufs: [Vec<u8>; 2],
    live: bool,
}

const ACCEPT: u64 = u64::MAX;

/// A completion's tag: the session, the side read (or written from), and whether it is a send.
fn tag(session: usize, side: usize, send: bool) -> u64 {
    ((session as u64) << 2) | ((side as u64) << 1) | send as u64
}

fn recv(s: &mut Session, i: usize, side: usize) -> squeue::Entry {
    let b = &mut s.bufs[side];
    opcode::Recv::new(types::Fd(s.fds[side]), b.as_mut_ptr(), b.len() as u32)
        .build()
        .user_data(tag(i, side, false))
}

pub fn run(listener: TcpListener, upstream: &str) {
    let mut ring: IoUring = IoUring::builder()
        .setup_single_issuer()
        .setup_coop_taskrun()
        .build(256)
        .expect("io_uring_setup");
    let accept = opcode::AcceptMulti::new(types::Fd(listener.as_raw_fd()))
        .build()
        .user_data(ACCEPT);
    let mut sessions: Vec<Session> = Vec::new();
    let mut todo: Vec<squeue::Entry> = vec![accept];
    loop {
        for e in todo.drain(..) {
            // SAFETY: every buffer an entry points into lives in `sessions`, whose buffers are
            // never freed or moved (a `Vec<u8>`'s heap block stays put when `sessions` grows).
            while unsafe { ring.submission().push(&e) }.is_err() {
                ring.submit().expect("io_uring_enter");
            }
        }
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            Err(e) => panic!("io_uring_enter: {e}"),
        }
        let done: Vec<(u64, i32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (t, res) in done {
            if t == ACCEPT {
                assert!(
                    res >= 0,
                    "accept: {}",
                    std::io::Error::from_raw_os_error(-res)
                );
                let one: libc::c_int = 1;
                // SAFETY: `res` is the accepted socket; `one` outlives the call.
                unsafe {
                    libc::setsockopt(
                        res,
                        libc::IPPROTO_TCP,
                        libc::TCP_NODELAY,
                        (&one as *const libc::c_int).cast(),
                        std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                    );
                }
                let Ok(server) = UnixStream::connect(upstream) else {
                    // SAFETY: the accepted socket is ours to close.
                    unsafe { libc::close(res) };
                    continue;
                };
                let i = sessions.len();
                sessions.push(Session {
                    fds: [res, server.into_raw_fd()],
                    bufs: [vec![0; 1 << 16], vec![0; 1 << 16]],
                    live: true,
                });
                let s = &mut sessions[i];
                todo.push(recv(s, i, 0));
                todo.push(recv(s, i, 1));
                continue;
            }
            let (i, side, send) = ((t >> 2) as usize, ((t >> 1) & 1) as usize, t & 1 == 1);
            let s = &mut sessions[i];
            if !s.live {
                continue;
            }
            // A send posts a completion only when it failed; a recv of 0 is the side closing.
            if send || res <= 0 {
                s.live = false;
                // SAFETY: both sockets are the session's, closed once (`live` is now false).
                unsafe {
                    libc::close(s.fds[0]);
                    libc::close(s.fds[1]);
                }
                continue;
            }
            let to = 1 - side;
            let data = &s.bufs[side];
            todo.push(
                opcode::Send::new(types::Fd(s.fds[to]), data.as_ptr(), res as u32)
                    // The whole of it, or a failure: a short send would break the link.
                    .flags(libc::MSG_WAITALL | libc::MSG_NOSIGNAL)
                    .build()
                    .flags(squeue::Flags::IO_LINK | squeue::Flags::SKIP_SUCCESS)
                    .user_data(tag(i, side, true)),
            );
            todo.push(recv(s, i, side));
        }
    }
}
