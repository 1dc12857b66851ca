//! Parameters into what the client does (`ConnInfo`): host and port lists paired as libpq pairs
//! them, the `PG*` environment and the OS user as defaults, the endpoints in order.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::error::{err, ConnInfoError, Result};
use super::parse::{is_space, parse, Params, DEFAULT_PORT, SUPPORTED};

/// Where one connection attempt goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// A Unix-domain socket directory (a host beginning with `/`): `DIR/.s.PGSQL.PORT`.
    Socket(PathBuf),
    /// An abstract Unix socket (a host beginning with `@`, Linux only).
    Abstract(String),
    /// A host name (or numeric address) to look up; every address it has is tried in turn.
    Name(String),
    /// A `hostaddr` (numeric, no lookup); `name` is the matching `host`, if one was given.
    Addr {
        /// The address connected to.
        ip: IpAddr,
        /// The host name that went with it.
        name: Option<String>,
    },
}

/// One host of the list, with its port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Where to connect.
    pub host: Host,
    /// TCP port, or the number naming the socket file.
    pub port: u16,
}

/// How long to wait for a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectTimeout {
    /// Not given: the caller's default applies.
    Default,
    /// `connect_timeout=0` (or negative): wait as long as the system does.
    Forever,
    /// A limit per address tried, at least 2 s as in libpq.
    Limit(Duration),
}

/// How long dbscope waits for each address when the connection string sets no `connect_timeout`
/// (libpq waits forever; a benchmark should not).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl ConnectTimeout {
    /// The limit per address: [`DEFAULT_CONNECT_TIMEOUT`] when none was given, `None` for none.
    pub fn limit(self) -> Option<Duration> {
        match self {
            ConnectTimeout::Default => Some(DEFAULT_CONNECT_TIMEOUT),
            ConnectTimeout::Forever => None,
            ConnectTimeout::Limit(t) => Some(t),
        }
    }
}

/// A connection string resolved to what the client does.
#[derive(Clone, PartialEq, Eq)]
pub struct ConnInfo {
    /// The hosts to try, in order; the first that accepts a connection is used.
    pub endpoints: Vec<Endpoint>,
    /// The role to log in as.
    pub user: String,
    /// The password, if any (never shown: see the `Debug` impl).
    pub password: Option<String>,
    /// The database.
    pub dbname: String,
    /// How long to wait per address.
    pub connect_timeout: ConnectTimeout,
    /// `application_name` sent to the server.
    pub application_name: String,
    /// Command-line options for the server (`-c name=value …`), sent as the startup `options`.
    pub options: Option<String>,
}

impl std::fmt::Debug for ConnInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnInfo")
            .field("endpoints", &self.endpoints)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("dbname", &self.dbname)
            .field("connect_timeout", &self.connect_timeout)
            .field("application_name", &self.application_name)
            .field("options", &self.options)
            .finish()
    }
}

/// What resolution reads from outside the string, so tests can set it.
pub struct Defaults<'a> {
    /// Environment lookup (`std::env::var` in real use).
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// The OS user name, libpq's default user.
    pub os_user: Option<String>,
    /// Socket directory used when no host is given.
    pub socket_dir: PathBuf,
    /// `application_name` when neither it, `PGAPPNAME` nor `fallback_application_name` is given.
    pub application_name: &'a str,
}

impl Defaults<'_> {
    /// The process environment, the effective user's name, and `/var/run/postgresql` if it
    /// exists (Debian's and Red Hat's libpq default) else `/tmp` (upstream libpq's).
    pub fn system() -> Defaults<'static> {
        let dir = if std::path::Path::new("/var/run/postgresql").is_dir() {
            "/var/run/postgresql"
        } else {
            "/tmp"
        };
        Defaults {
            env: &process_env,
            os_user: os_user(),
            socket_dir: PathBuf::from(dir),
            application_name: "dbscope",
        }
    }
}

fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The effective user's login name (`pg_fe_getauthname`: `getpwuid_r(geteuid())`, so NSS
/// sources such as LDAP count, as for libpq).
#[allow(unsafe_code)]
fn os_user() -> Option<String> {
    let mut buf = vec![0u8; 4096];
    // SAFETY: passwd is plain old data; all-zero is a valid value that getpwuid_r overwrites.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: pwd, buf and result outlive the call; buf's length is passed with it.
    let rc = unsafe {
        libc::getpwuid_r(
            libc::geteuid(),
            &mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 || result.is_null() {
        return None;
    }
    // SAFETY: on success pw_name points to a NUL-terminated string inside buf.
    let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
    Some(name.to_string_lossy().into_owned())
}

/// Parses `s` and resolves it with `defaults`, as `PQconnectdb` would.
pub fn resolve(s: &str, defaults: &Defaults) -> Result<ConnInfo> {
    resolve_params(&parse(s)?, defaults)
}

/// libpq's `strtol`-based `parse_int_param`: optional white space and sign, digits, optional
/// trailing white space, within `int`.
fn parse_int(value: &str, option: &str) -> Result<i64> {
    let t = value.trim_start_matches(|c: char| c.is_ascii() && is_space(c as u8));
    let t = t.trim_end_matches(|c: char| c.is_ascii() && is_space(c as u8));
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    match t.parse::<i64>() {
        Ok(n) if !digits.is_empty() && i32::try_from(n).is_ok() => Ok(n),
        _ => err(format!(
            "invalid integer value \"{value}\" for connection option \"{option}\""
        )),
    }
}

/// libpq's `parse_comma_separated_list`: split on every comma, nothing trimmed.
fn list(s: &str) -> Vec<&str> {
    s.split(',').collect()
}

/// Applies defaults (`conninfo_add_defaults`) and `connectOptions2`'s pairing of hosts,
/// addresses and ports.
pub fn resolve_params(params: &Params, d: &Defaults) -> Result<ConnInfo> {
    let get = |k: &str| -> Option<String> {
        if let Some(v) = params.get(k) {
            return Some(v.clone());
        }
        let var = SUPPORTED
            .iter()
            .find(|(n, _)| *n == k)
            .and_then(|(_, v)| *v)?;
        (d.env)(var)
    };
    let nonempty = |k: &str| get(k).filter(|v| !v.is_empty());
    if let Some(service) = (d.env)("PGSERVICE").filter(|v| !v.is_empty()) {
        return err(format!(
            "PGSERVICE={service} is set, but dbscope does not read connection service files; \
             unset it and give the parameters in the connection string"
        ));
    }

    match get("target_session_attrs").as_deref().unwrap_or("any") {
        "any" => {}
        m @ ("read-write" | "read-only" | "primary" | "standby" | "prefer-standby") => {
            return err(format!(
                "target_session_attrs={m}: dbscope's PostgreSQL client supports only \
                 target_session_attrs=any (it uses the first host that accepts a connection)"
            ))
        }
        m => return err(format!("invalid target_session_attrs value: \"{m}\"")),
    }
    if let Some(enc) = nonempty("client_encoding") {
        let e = enc.to_ascii_lowercase().replace(['-', '_'], "");
        if e != "utf8" && e != "unicode" {
            return err(format!(
                "client_encoding={enc}: dbscope's PostgreSQL client talks UTF8 only"
            ));
        }
    }

    // Hosts: one slot per hostaddr entry if hostaddr is given, else per host entry, else one.
    let hostaddr = nonempty("hostaddr");
    let host = nonempty("host");
    let mut slots: Vec<(Option<String>, Option<String>)> = match (&hostaddr, &host) {
        (Some(a), _) => list(a)
            .into_iter()
            .map(|a| (Some(a.to_string()), None))
            .collect(),
        (None, Some(h)) => list(h)
            .into_iter()
            .map(|h| (None, Some(h.to_string())))
            .collect(),
        (None, None) => vec![(None, None)],
    };
    if let (Some(a), Some(h)) = (&hostaddr, &host) {
        let names = list(h);
        if names.len() != slots.len() {
            return err(format!(
                "could not match {} host names to {} hostaddr values",
                names.len(),
                list(a).len()
            ));
        }
        for (slot, name) in slots.iter_mut().zip(names) {
            slot.1 = Some(name.to_string());
        }
    }
    let mut hosts = Vec::with_capacity(slots.len());
    for (addr, name) in slots {
        let name = name.filter(|n| !n.is_empty());
        let h = match (addr.filter(|a| !a.is_empty()), name) {
            (Some(a), name) => match a.parse::<IpAddr>() {
                Ok(ip) => Host::Addr { ip, name },
                Err(_) => return err(format!("could not parse network address \"{a}\"")),
            },
            (None, Some(n)) if n.starts_with('/') => Host::Socket(PathBuf::from(n)),
            (None, Some(n)) if n.starts_with('@') => Host::Abstract(n[1..].to_string()),
            (None, Some(n)) => Host::Name(n),
            (None, None) => Host::Socket(d.socket_dir.clone()),
        };
        hosts.push(h);
    }

    // Ports: one for every host, or one per host; empty entries mean 5432.
    let ports: Vec<String> = match nonempty("port") {
        None => vec![String::new(); hosts.len()],
        Some(p) => {
            let given = list(&p);
            if given.len() == 1 {
                vec![given[0].to_string(); hosts.len()]
            } else if given.len() == hosts.len() {
                given.into_iter().map(str::to_string).collect()
            } else {
                return err(format!(
                    "could not match {} port numbers to {} hosts",
                    given.len(),
                    hosts.len()
                ));
            }
        }
    };
    let mut endpoints = Vec::with_capacity(hosts.len());
    for (host, port) in hosts.into_iter().zip(ports) {
        let port = if port.is_empty() {
            DEFAULT_PORT
        } else {
            let n = parse_int(&port, "port")?;
            u16::try_from(n)
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| ConnInfoError(format!("invalid port number: \"{port}\"")))?
        };
        endpoints.push(Endpoint { host, port });
    }

    let tcp = endpoints
        .iter()
        .any(|e| !matches!(e.host, Host::Socket(_) | Host::Abstract(_)));
    let sslmode = get("sslmode").or_else(|| {
        (d.env)("PGREQUIRESSL")
            .filter(|v| v.starts_with('1'))
            .map(|_| "require".to_string())
    });
    match sslmode.as_deref().unwrap_or("prefer") {
        "disable" | "allow" | "prefer" => {}
        // libpq ignores sslmode on Unix sockets, so only a TCP host needs TLS.
        "require" | "verify-ca" | "verify-full" if !tcp => {}
        m @ ("require" | "verify-ca" | "verify-full") => {
            return err(format!(
                "sslmode={m}: dbscope's PostgreSQL client does not support TLS; it connects \
                 without encryption (sslmode=disable, allow or prefer), so use a Unix socket, a \
                 trusted network or a TLS tunnel"
            ))
        }
        m => return err(format!("invalid sslmode value: \"{m}\"")),
    }
    match get("gssencmode").as_deref().unwrap_or("prefer") {
        "disable" | "prefer" => {}
        "require" if !tcp => {}
        "require" => {
            return err(
                "gssencmode=require: dbscope's PostgreSQL client does not support GSSAPI \
                 encryption",
            )
        }
        m => return err(format!("invalid gssencmode value: \"{m}\"")),
    }
    let user = match nonempty("user").or_else(|| d.os_user.clone()) {
        Some(u) => u,
        None => return err("could not look up the local user name: give user= or set PGUSER"),
    };
    let dbname = nonempty("dbname").unwrap_or_else(|| user.clone());
    let connect_timeout = match get("connect_timeout") {
        None => ConnectTimeout::Default,
        Some(t) => match parse_int(&t, "connect_timeout")? {
            n if n <= 0 => ConnectTimeout::Forever,
            n => ConnectTimeout::Limit(Duration::from_secs(n.max(2) as u64)),
        },
    };
    let application_name = nonempty("application_name")
        .or_else(|| nonempty("fallback_application_name"))
        .unwrap_or_else(|| d.application_name.to_string());
    Ok(ConnInfo {
        endpoints,
        user,
        password: nonempty("password"),
        dbname,
        connect_timeout,
        application_name,
        options: nonempty("options"),
    })
}

/// Percent-encodes all but RFC 3986's unreserved characters (and `/` when `keep_slash`).
fn pct(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || (keep_slash && b == b'/') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

impl Endpoint {
    /// Where this endpoint connects, for messages: `host:port`, `[::1]:port` or the socket file.
    pub fn address(&self) -> String {
        match &self.host {
            Host::Socket(dir) => dir
                .join(format!(".s.PGSQL.{}", self.port))
                .display()
                .to_string(),
            Host::Abstract(name) => format!("@{name}/.s.PGSQL.{}", self.port),
            Host::Name(h) if h.contains(':') => format!("[{h}]:{}", self.port),
            Host::Name(h) => format!("{h}:{}", self.port),
            Host::Addr {
                ip: IpAddr::V6(ip), ..
            } => format!("[{ip}]:{}", self.port),
            Host::Addr { ip, .. } => format!("{ip}:{}", self.port),
        }
    }

    /// The `host[:port]` of a URI authority for this endpoint (sockets percent-encoded).
    fn netloc(&self) -> String {
        let host = match &self.host {
            Host::Socket(dir) => pct(&dir.to_string_lossy(), false),
            Host::Abstract(name) => pct(&format!("@{name}"), false),
            Host::Name(h) if h.contains(':') => format!("[{}]", h.replace('%', "%25")),
            Host::Name(h) => pct(h, false),
            Host::Addr { name: Some(n), .. } => pct(n, false),
            Host::Addr {
                ip: IpAddr::V6(ip), ..
            } => format!("[{ip}]"),
            Host::Addr { ip, .. } => ip.to_string(),
        };
        format!("{host}:{}", self.port)
    }
}

impl ConnInfo {
    /// A URI for one endpoint (`Some(i)`) or the whole host list, without the password, that
    /// libpq and dbscope read back as the same user, database and endpoint(s):
    /// `postgres://user@host:port/db`, or `postgres://user@/db?host=/socket/dir&port=N` for a
    /// single Unix socket.
    pub fn location(&self, endpoint: Option<usize>) -> String {
        let user = pct(&self.user, false);
        let db = pct(&self.dbname, false);
        let chosen: Vec<&Endpoint> = match endpoint {
            Some(i) => self.endpoints.get(i).into_iter().collect(),
            None => self.endpoints.iter().collect(),
        };
        if let [e] = chosen[..] {
            match &e.host {
                Host::Socket(dir) => {
                    return format!(
                        "postgres://{user}@/{db}?host={}&port={}",
                        pct(&dir.to_string_lossy(), true),
                        e.port
                    )
                }
                Host::Addr { ip, name: Some(_) } => {
                    return format!("postgres://{user}@{}/{db}?hostaddr={ip}", e.netloc())
                }
                _ => {}
            }
        }
        let netlocs: Vec<String> = chosen.iter().map(|e| e.netloc()).collect();
        let mut s = format!("postgres://{user}@{}/{db}", netlocs.join(","));
        let addrs: Vec<String> = chosen
            .iter()
            .map(|e| match &e.host {
                Host::Addr { ip, name: Some(_) } => ip.to_string(),
                _ => String::new(),
            })
            .collect();
        if addrs.iter().any(|a| !a.is_empty()) {
            let _ = write!(s, "?hostaddr={}", addrs.join(","));
        }
        s
    }
}
