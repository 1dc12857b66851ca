//! Sockets to a server: TCP (with `TCP_NODELAY`), Unix-domain and Linux's abstract sockets, tried
//! in libpq's order; and the raw socket a proxy takes over ([`connect_socket`]).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::conninfo::{resolve, Defaults, Endpoint, Host};
use crate::error::ConnectError;

pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    pub(crate) fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t),
            Stream::Unix(s) => s.set_read_timeout(t),
        }
    }

    pub(crate) fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_nonblocking(on),
            Stream::Unix(s) => s.set_nonblocking(on),
        }
    }

    pub(crate) fn fd(&self) -> RawFd {
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

/// Opens a socket to one endpoint, trying each address a host name has; the error says where.
pub(crate) fn open_stream(e: &Endpoint, timeout: Option<Duration>) -> Result<Stream, String> {
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

fn connect_tcp(addr: SocketAddr, timeout: Option<Duration>) -> io::Result<TcpStream> {
    let s = match timeout {
        Some(t) => TcpStream::connect_timeout(&addr, t)?,
        None => TcpStream::connect(addr)?,
    };
    s.set_nodelay(true)?;
    Ok(s)
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
pub fn connect_socket(spec: &str) -> Result<RawSocket, ConnectError> {
    let info = resolve(crate::spec::spec_body(spec), &Defaults::system())?;
    let timeout = info.connect_timeout.limit();
    let mut why = Vec::new();
    for e in &info.endpoints {
        match open_stream(e, timeout) {
            Ok(Stream::Tcp(s)) => return Ok(RawSocket::Tcp(s)),
            Ok(Stream::Unix(s)) => return Ok(RawSocket::Unix(s)),
            Err(w) => why.push(w),
        }
    }
    Err(ConnectError::Unreachable(why))
}
