//! `forward-floor LISTEN_ADDR UPSTREAM_SOCKET`: a forwarder on one `mio` event loop, TCP clients
//! to a PostgreSQL server's Unix socket, that does nothing but move bytes: no parsing, no clock,
//! no recording. `bench/proxy-overhead` runs it (`FLOOR=1`) beside dbscope's proxy and PgBouncer
//! to show what the event loop alone costs per transaction, the floor any recording proxy sits
//! on. Like dbscope's proxy it registers sockets for reading only and takes a short read as
//! "the socket is empty" (epoll is edge-triggered: new bytes raise a new edge).
//!
//! Not a proxy for real use: a write that would block is retried at once (the bench's messages
//! are small), and a session ends at the first error on either side.
//!
//! `forward-floor --uring LISTEN_ADDR UPSTREAM_SOCKET` forwards the same way on `io_uring`
//! (`uring.rs`): what fewer system calls per transaction would save.

mod uring;

use std::io::{ErrorKind, Read, Write};

use mio::net::{TcpListener, TcpStream, UnixStream};
use mio::{Events, Interest, Poll, Token};

struct Session {
    client: TcpStream,
    server: UnixStream,
}

const LISTENER: Token = Token(usize::MAX);

fn write_all(w: &mut impl Write, mut data: &[u8]) -> std::io::Result<()> {
    while !data.is_empty() {
        match w.write(data) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => data = &data[n..],
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                std::thread::yield_now()
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    let on_uring = args.get(1).is_some_and(|a| a == "--uring");
    if on_uring {
        args.remove(1);
    }
    if args.len() != 3 {
        eprintln!("usage: forward-floor [--uring] LISTEN_ADDR UPSTREAM_SOCKET");
        std::process::exit(2);
    }
    let listen: std::net::SocketAddr = args[1].parse().expect("LISTEN_ADDR: IP:PORT");
    let upstream = &args[2];
    if on_uring {
        let listener = std::net::TcpListener::bind(listen).expect("bind");
        eprintln!("clients connect to {listen} (io_uring)");
        return uring::run(listener, upstream);
    }
    let mut poll = Poll::new().expect("epoll");
    let mut listener = TcpListener::bind(listen).expect("bind");
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)
        .expect("register");
    let mut sessions: Vec<Option<Session>> = Vec::new();
    let mut events = Events::with_capacity(1024);
    let mut buf = vec![0u8; 1 << 16];
    eprintln!("clients connect to {listen}");
    loop {
        if let Err(e) = poll.poll(&mut events, None) {
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            panic!("epoll_wait: {e}");
        }
        for ev in events.iter() {
            if ev.token() == LISTENER {
                while let Ok((mut client, _)) = listener.accept() {
                    let _ = client.set_nodelay(true);
                    let Ok(mut server) = UnixStream::connect(upstream) else {
                        continue;
                    };
                    let i = sessions.len();
                    let r = poll.registry();
                    r.register(&mut client, Token(2 * i), Interest::READABLE)
                        .expect("register");
                    r.register(&mut server, Token(2 * i + 1), Interest::READABLE)
                        .expect("register");
                    sessions.push(Some(Session { client, server }));
                }
                continue;
            }
            let i = ev.token().0 / 2;
            let from_client = ev.token().0 % 2 == 0;
            let Some(s) = sessions[i].as_mut() else {
                continue;
            };
            let ended = loop {
                let read = if from_client {
                    s.client.read(&mut buf)
                } else {
                    s.server.read(&mut buf)
                };
                match read {
                    Ok(0) => break true,
                    Ok(n) => {
                        let written = if from_client {
                            write_all(&mut s.server, &buf[..n])
                        } else {
                            write_all(&mut s.client, &buf[..n])
                        };
                        if written.is_err() {
                            break true;
                        }
                        if n < buf.len() {
                            break false;
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break false,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => break true,
                }
            };
            if ended {
                if let Some(mut s) = sessions[i].take() {
                    let _ = poll.registry().deregister(&mut s.client);
                    let _ = poll.registry().deregister(&mut s.server);
                }
            }
        }
    }
}
