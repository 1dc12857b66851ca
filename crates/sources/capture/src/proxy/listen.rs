//! Where clients connect: the listening socket (TCP or Unix), the descriptors the proxy may use,
//! and the check that the upstream is not the proxy itself.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Where the proxy listens, once it does.
#[derive(Debug, Clone)]
pub enum Listening {
    /// A TCP address (a port 0 asked for is resolved).
    Tcp(SocketAddr),
    /// A Unix socket's path.
    Unix(PathBuf),
}

/// The port a directory given as `--listen` gets its socket named after (`.s.PGSQL.6543`), as
/// the default TCP address has it.
pub const DEFAULT_PORT: u16 = 6543;

impl Listening {
    /// How a libpq client (psql, pgbench, every driver built on libpq's conventions) reaches
    /// this address, or why it cannot: libpq finds a Unix socket only as `DIR/.s.PGSQL.PORT`.
    pub fn libpq_hint(&self) -> String {
        match self {
            Listening::Tcp(a) => format!("psql -h {} -p {}", a.ip(), a.port()),
            Listening::Unix(p) => {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                let port = name
                    .strip_prefix(".s.PGSQL.")
                    .and_then(|n| n.parse::<u16>().ok());
                match (port, p.parent()) {
                    (Some(port), Some(dir)) => format!("psql -h {} -p {port}", dir.display()),
                    _ => "libpq clients cannot reach this name: they look for \
                          DIR/.s.PGSQL.PORT (give --listen that, or a directory)"
                        .to_string(),
                }
            }
        }
    }
}

impl fmt::Display for Listening {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Listening::Tcp(a) => write!(f, "{a}"),
            Listening::Unix(p) => write!(f, "{}", p.display()),
        }
    }
}

/// The reading half of a socket (TCP or Unix), woken for reading only ([`super::quiet`]).
pub(super) type Reader = super::quiet::QuietReader;
/// The writing half of a socket (TCP or Unix).
pub(super) type Writer = super::quiet::QuietWriter;

/// The listening socket.
pub(super) enum Listener {
    Tcp(tokio::net::TcpListener),
    Unix(tokio::net::UnixListener, PathBuf),
}

impl Listener {
    /// Binds `spec`: a path (anything with a `/`) is a Unix socket, given `mode` as its
    /// permissions whatever the umask (connecting needs write permission on it); a directory
    /// gets the socket `DIR/.s.PGSQL.6543` ([`DEFAULT_PORT`]), where libpq looks for it; the rest
    /// is `IP:PORT`.
    pub(super) fn bind(spec: &str, mode: u32) -> Result<(Listener, Listening), String> {
        if spec.contains('/') {
            let mut path = PathBuf::from(spec);
            if path.is_dir() {
                path.push(format!(".s.PGSQL.{DEFAULT_PORT}"));
            }
            let spec = path.display().to_string();
            if path.exists() {
                return Err(format!(
                    "{spec} already exists (another proxy or server listening there, or a socket left \
                     by one that died: remove it if nothing listens)"
                ));
            }
            let l = tokio::net::UnixListener::bind(&path).map_err(|e| e.to_string())?;
            // As PostgreSQL does with unix_socket_permissions: the umask (0755 from 022) would
            // refuse every other local user (issue 34).
            use std::os::unix::fs::PermissionsExt;
            if let Err(e) =
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode & 0o777))
            {
                let _ = std::fs::remove_file(&path);
                return Err(format!(
                    "cannot set the socket's permissions to {mode:o}: {e}"
                ));
            }
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
    pub(super) async fn accept(&self) -> io::Result<(Reader, Writer, String)> {
        match self {
            Listener::Tcp(l) => {
                let (s, addr) = l.accept().await?;
                let _ = s.set_nodelay(true);
                let (r, w) = super::quiet::split(s.into_std()?.into())?;
                Ok((r, w, addr.to_string()))
            }
            Listener::Unix(l, path) => {
                let (s, _) = l.accept().await?;
                let (r, w) = super::quiet::split(s.into_std()?.into())?;
                Ok((r, w, format!("unix:{}", path.display())))
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

/// Descriptors kept for the proxy's own use beyond those open now (files, the blocking pool's
/// connects, name lookups).
const SPARE_FDS: u64 = 12;

/// How many sessions `fd_limit` descriptors allow: each takes two (its client and its upstream),
/// after those open now and [`SPARE_FDS`].
pub(super) fn sessions_within(fd_limit: u64) -> u32 {
    let open = std::fs::read_dir("/proc/self/fd").map_or(16, |d| d.count() as u64);
    (fd_limit.saturating_sub(open + SPARE_FDS) / 2).min(u32::MAX as u64) as u32
}

/// Raises the soft limit on open files to the hard one; returns the limit the proxy runs with
/// (`None`: unlimited or not known).
pub(super) fn raise_fd_limit() -> Option<u64> {
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
pub(super) fn loops_back(spec: &str, local: &Listening) -> Option<String> {
    use dbscope_pgwire::conninfo::{resolve, Defaults, Host};
    use std::net::ToSocketAddrs;
    let info = resolve(dbscope_pgwire::spec_body(spec), &Defaults::system()).ok()?;
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
