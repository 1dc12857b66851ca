//! libpq's connection strings — `postgresql://` URIs and `key=value` strings — parsed and resolved
//! by libpq's rules (PostgreSQL 15 docs, "Connection Strings"; `conninfo_uri_parse_options`,
//! `conninfo_parse` and `connectOptions2` in fe-connect.c): query parameters override the URI's
//! authority, host and port lists pair up as libpq pairs them, and missing values come from the
//! `PG*` environment variables, then the OS user and the default socket directory.
//!
//! Differences from libpq, each refused with a clear error rather than silently ignored: no TLS
//! (`sslmode=require`/`verify-*`), no GSSAPI encryption, no service or password files, only
//! `target_session_attrs=any`, only UTF-8; a port outside 1–65535 refuses the whole string (libpq
//! skips that host). Without `connect_timeout` dbscope waits 10 s per address, not forever.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// A connection string libpq would refuse, or one asking for something dbscope's client cannot do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConnInfoError(pub String);

type Result<T, E = ConnInfoError> = std::result::Result<T, E>;

fn err<T>(msg: impl Into<String>) -> Result<T> {
    Err(ConnInfoError(msg.into()))
}

/// The parameters dbscope's client acts on, with the environment variable libpq reads for each.
const SUPPORTED: [(&str, Option<&str>); 14] = [
    ("host", Some("PGHOST")),
    ("hostaddr", Some("PGHOSTADDR")),
    ("port", Some("PGPORT")),
    ("user", Some("PGUSER")),
    ("password", Some("PGPASSWORD")),
    ("dbname", Some("PGDATABASE")),
    ("connect_timeout", Some("PGCONNECT_TIMEOUT")),
    ("application_name", Some("PGAPPNAME")),
    ("fallback_application_name", None),
    ("options", Some("PGOPTIONS")),
    ("sslmode", Some("PGSSLMODE")),
    ("gssencmode", Some("PGGSSENCMODE")),
    ("target_session_attrs", Some("PGTARGETSESSIONATTRS")),
    ("client_encoding", Some("PGCLIENTENCODING")),
];

/// libpq parameters (PostgreSQL 15–17) that dbscope's client does not implement: refused by name.
const UNSUPPORTED: [&str; 27] = [
    "service",
    "passfile",
    "channel_binding",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "replication",
    "sslcompression",
    "sslcert",
    "sslkey",
    "sslpassword",
    "sslcertmode",
    "sslrootcert",
    "sslcrl",
    "sslcrldir",
    "sslsni",
    "sslnegotiation",
    "requirepeer",
    "require_auth",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "krbsrvname",
    "gsslib",
    "gssdelegation",
    "load_balance_hosts",
];

/// PostgreSQL's default port.
pub const DEFAULT_PORT: u16 = 5432;

/// Parameters as written in the string, before defaults: keyword → value. A later value for the
/// same keyword replaces an earlier one, so URI query parameters override the authority.
pub type Params = BTreeMap<&'static str, String>;

/// Parses a libpq connection string: a `postgresql://` or `postgres://` URI, or else `key=value`
/// pairs. Unknown keywords are errors, as in libpq; known libpq keywords dbscope does not
/// implement are errors naming them.
pub fn parse(s: &str) -> Result<Params> {
    for prefix in ["postgresql://", "postgres://"] {
        if let Some(rest) = s.strip_prefix(prefix) {
            return parse_uri(s, rest);
        }
    }
    parse_keywords(s)
}

/// Looks `keyword` up; `uri` selects libpq's message for unknown URI query parameters.
fn keyword(kw: &str, uri_query: bool) -> Result<&'static str> {
    if let Some((k, _)) = SUPPORTED.iter().find(|(k, _)| *k == kw) {
        return Ok(k);
    }
    if UNSUPPORTED.contains(&kw) {
        return err(format!(
            "connection parameter \"{kw}\" is not supported by dbscope's PostgreSQL client \
             (supported: {})",
            SUPPORTED.map(|(k, _)| k).join(", ")
        ));
    }
    if uri_query {
        err(format!("invalid URI query parameter: \"{kw}\""))
    } else {
        err(format!("invalid connection option \"{kw}\""))
    }
}

/// Stores a value, with libpq's `requiressl` → `sslmode` translation.
fn store(params: &mut Params, kw: &str, value: String, uri_query: bool) -> Result<()> {
    if kw == "requiressl" {
        let mode = if value.starts_with('1') {
            "require"
        } else {
            "prefer"
        };
        params.insert("sslmode", mode.into());
        return Ok(());
    }
    params.insert(keyword(kw, uri_query)?, value);
    Ok(())
}

/// `conninfo_uri_parse_options`: `[user[:password]@][netloc][:port][,…][/dbname][?param=value&…]`.
fn parse_uri(uri: &str, rest: &str) -> Result<Params> {
    let mut params = Params::new();
    let b = rest.as_bytes();
    let mut p = 0;
    // libpq looks ahead for '@' up to the first '/' only: '?' may be part of a password.
    if let Some(i) = b.iter().position(|&c| c == b'@' || c == b'/') {
        if b[i] == b'@' {
            let userinfo = &rest[..i];
            let (user, password) = match userinfo.split_once(':') {
                Some((u, pw)) => (u, Some(pw)),
                None => (userinfo, None),
            };
            if !user.is_empty() {
                params.insert("user", decode(user, "the user name")?);
            }
            if let Some(pw) = password.filter(|pw| !pw.is_empty()) {
                params.insert("password", decode(pw, "the password")?);
            }
            p = i + 1;
        }
    }
    let mut hosts = String::new();
    let mut ports = String::new();
    let mut prev;
    loop {
        let host;
        if b.get(p) == Some(&b'[') {
            p += 1;
            let start = p;
            while p < b.len() && b[p] != b']' {
                p += 1;
            }
            if p == b.len() {
                return err(format!(
                    "end of string reached when looking for matching \"]\" in IPv6 host \
                     address in URI: \"{}\"",
                    crate_redact(uri)
                ));
            }
            if p == start {
                return err(format!(
                    "IPv6 host address may not be empty in URI: \"{}\"",
                    crate_redact(uri)
                ));
            }
            host = &rest[start..p];
            p += 1;
            if let Some(&c) = b.get(p) {
                if !matches!(c, b':' | b'/' | b'?' | b',') {
                    return err(format!(
                        "unexpected character \"{}\" at position {} in URI (expected \":\" or \
                         \"/\"): \"{}\"",
                        char_at(rest, p),
                        p + 1,
                        crate_redact(uri)
                    ));
                }
            }
        } else {
            let start = p;
            while p < b.len() && !matches!(b[p], b':' | b'/' | b'?' | b',') {
                p += 1;
            }
            host = &rest[start..p];
        }
        prev = b.get(p).copied();
        hosts.push_str(host);
        if prev == Some(b':') {
            p += 1;
            let start = p;
            while p < b.len() && !matches!(b[p], b'/' | b'?' | b',') {
                p += 1;
            }
            ports.push_str(&rest[start..p]);
            prev = b.get(p).copied();
        }
        if prev != Some(b',') {
            break;
        }
        p += 1;
        hosts.push(',');
        ports.push(',');
    }
    if !hosts.is_empty() {
        params.insert("host", decode(&hosts, "the host")?);
    }
    if !ports.is_empty() {
        params.insert("port", decode(&ports, "the port")?);
    }
    if prev == Some(b'/') {
        p += 1;
        let start = p;
        while p < b.len() && b[p] != b'?' {
            p += 1;
        }
        let db = &rest[start..p];
        prev = b.get(p).copied();
        // An empty dbname is not stored, so PGDATABASE still applies.
        if !db.is_empty() {
            params.insert("dbname", decode(db, "the database name")?);
        }
    }
    if prev.is_some() {
        parse_query(&rest[p + 1..], &mut params)?;
    }
    Ok(params)
}

/// `conninfo_uri_parse_params`: `key=value` pairs separated by `&`, both percent-decoded; each
/// overrides what the URI's authority and path said.
fn parse_query(query: &str, params: &mut Params) -> Result<()> {
    let mut pairs: Vec<&str> = query.split('&').collect();
    // libpq stops at the end of the string, so one trailing '&' (or an empty query) is fine.
    if pairs.last() == Some(&"") {
        pairs.pop();
    }
    for pair in pairs {
        let Some((k, v)) = pair.split_once('=') else {
            return err(format!(
                "missing key/value separator \"=\" in URI query parameter: \"{}\"",
                crate_redact(pair)
            ));
        };
        if v.contains('=') {
            return err(format!(
                "extra key/value separator \"=\" in URI query parameter: \"{k}\""
            ));
        }
        let k = decode(k, "a query parameter name")?;
        let what = format!("the value of query parameter \"{k}\"");
        let v = decode(
            v,
            if k == "password" {
                "the password"
            } else {
                &what
            },
        )?;
        // JDBC compatibility, as in libpq.
        if k == "ssl" && v == "true" {
            params.insert("sslmode", "require".into());
            continue;
        }
        store(params, &k, v, true)?;
    }
    Ok(())
}

/// `conninfo_uri_decode`: `%XX` escapes (no `+` for space); `%00` is refused. The token is not
/// echoed for the password.
fn decode(s: &str, what: &str) -> Result<String> {
    let shown = || {
        if what == "the password" {
            String::new()
        } else {
            format!(": \"{s}\"")
        }
    };
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let hex = |c: Option<&u8>| c.and_then(|c| (*c as char).to_digit(16));
        let (Some(hi), Some(lo)) = (hex(b.get(i + 1)), hex(b.get(i + 2))) else {
            return err(format!(
                "invalid percent-encoded token in {what}{}",
                shown()
            ));
        };
        let c = (hi << 4 | lo) as u8;
        if c == 0 {
            return err(format!(
                "forbidden value %00 in percent-encoded value in {what}{}",
                shown()
            ));
        }
        out.push(c);
        i += 3;
    }
    String::from_utf8(out).or_else(|_| {
        err(format!(
            "{what} is not UTF-8 once percent-decoded{}",
            shown()
        ))
    })
}

fn char_at(s: &str, i: usize) -> char {
    s[i..].chars().next().unwrap_or('?')
}

fn crate_redact(s: &str) -> String {
    dbscope_core::redact::redact(s)
}

/// libpq's `isspace` set.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// `conninfo_parse`: `key = value` pairs separated by white space; a value is a word (backslash
/// escapes the next character) or `'single quoted'` (backslash escapes `'` and `\`).
fn parse_keywords(s: &str) -> Result<Params> {
    let mut params = Params::new();
    let b = s.as_bytes();
    let mut p = 0;
    while p < b.len() {
        if is_space(b[p]) {
            p += 1;
            continue;
        }
        let start = p;
        while p < b.len() && b[p] != b'=' && !is_space(b[p]) {
            p += 1;
        }
        let name = &s[start..p];
        while p < b.len() && is_space(b[p]) {
            p += 1;
        }
        if b.get(p) != Some(&b'=') {
            return err(format!(
                "missing \"=\" after \"{name}\" in connection info string"
            ));
        }
        p += 1;
        while p < b.len() && is_space(b[p]) {
            p += 1;
        }
        let mut value = Vec::new();
        if b.get(p) == Some(&b'\'') {
            p += 1;
            loop {
                match b.get(p) {
                    None => return err("unterminated quoted string in connection info string"),
                    Some(b'\\') => {
                        p += 1;
                        if let Some(&c) = b.get(p) {
                            value.push(c);
                            p += 1;
                        }
                    }
                    Some(b'\'') => {
                        p += 1;
                        break;
                    }
                    Some(&c) => {
                        value.push(c);
                        p += 1;
                    }
                }
            }
        } else {
            while p < b.len() {
                let c = b[p];
                if is_space(c) {
                    p += 1;
                    break;
                }
                if c == b'\\' {
                    p += 1;
                    if let Some(&c) = b.get(p) {
                        value.push(c);
                        p += 1;
                    }
                } else {
                    value.push(c);
                    p += 1;
                }
            }
        }
        // Only ASCII bytes were removed (quotes, backslashes), so the value stays UTF-8.
        let value = String::from_utf8_lossy(&value).into_owned();
        store(&mut params, name, value, false)?;
    }
    Ok(params)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults_with<'a>(env: &'a dyn Fn(&str) -> Option<String>) -> Defaults<'a> {
        Defaults {
            env,
            os_user: Some("osuser".into()),
            socket_dir: PathBuf::from("/var/run/postgresql"),
            application_name: "dbscope",
        }
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn ok(s: &str) -> ConnInfo {
        resolve(s, &defaults_with(&no_env)).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    fn fail(s: &str) -> String {
        match resolve(s, &defaults_with(&no_env)) {
            Ok(c) => panic!("{s:?} should be refused, resolved to {c:?}"),
            Err(e) => e.0,
        }
    }

    /// Each string and the URI of every endpoint it resolves to (user, hosts, ports, database),
    /// as libpq 15 resolves it with no PG* variables set, OS user `osuser` and default socket
    /// directory /var/run/postgresql.
    #[test]
    fn issue_13_strings_resolve_as_libpq_resolves_them() {
        let cases: &[(&str, &str)] = &[
            // The issue: query parameters override the authority.
            (
                "postgres://postgres@localhost/postgres?host=/tmp/sock&port=55439",
                "postgres://postgres@/postgres?host=/tmp/sock&port=55439",
            ),
            (
                "postgresql://u:pw@h:1/d?host=h2&port=2&user=v&dbname=e",
                "postgres://v@h2:2/e",
            ),
            (
                "postgres://",
                "postgres://osuser@/osuser?host=/var/run/postgresql&port=5432",
            ),
            (
                "postgres:///db",
                "postgres://osuser@/db?host=/var/run/postgresql&port=5432",
            ),
            ("postgres://h", "postgres://osuser@h:5432/osuser"),
            ("postgres://h:5433/", "postgres://osuser@h:5433/osuser"),
            ("postgres://u@h/db", "postgres://u@h:5432/db"),
            (
                "postgres://%2Ftmp%2Fs:6000/db",
                "postgres://osuser@/db?host=/tmp/s&port=6000",
            ),
            (
                "postgres://%2ftmp/db",
                "postgres://osuser@/db?host=/tmp&port=5432",
            ),
            (
                "postgres://[::1]:6000/db",
                "postgres://osuser@[::1]:6000/db",
            ),
            (
                "postgres://[fe80::1%25eth0]/db",
                "postgres://osuser@[fe80::1%25eth0]:5432/db",
            ),
            ("postgres://u%40x@h/d%20b", "postgres://u%40x@h:5432/d%20b"),
            // Host lists: one port for all, or one per host; an empty entry is the default.
            (
                "postgres://h1,h2/db",
                "postgres://osuser@h1:5432,h2:5432/db",
            ),
            ("postgres://h1:1,h2:2/db", "postgres://osuser@h1:1,h2:2/db"),
            ("postgres://h1:1,h2/db", "postgres://osuser@h1:1,h2:5432/db"),
            (
                "postgres:///db?host=h1,/tmp&port=7",
                "postgres://osuser@h1:7,%2Ftmp:7/db",
            ),
            (
                "postgres://,h2/db",
                "postgres://osuser@%2Fvar%2Frun%2Fpostgresql:5432,h2:5432/db",
            ),
            (
                "postgres://[::1],h2:9/db",
                "postgres://osuser@[::1]:5432,h2:9/db",
            ),
            (
                "postgres://x/db?hostaddr=127.0.0.1&port=6",
                "postgres://osuser@x:6/db?hostaddr=127.0.0.1",
            ),
            (
                "postgres:///db?hostaddr=::1",
                "postgres://osuser@[::1]:5432/db",
            ),
            // Keyword/value strings.
            (
                "",
                "postgres://osuser@/osuser?host=/var/run/postgresql&port=5432",
            ),
            (
                "host=/tmp port=1 dbname=d user=u",
                "postgres://u@/d?host=/tmp&port=1",
            ),
            ("  host = h   port=\t2 ", "postgres://osuser@h:2/osuser"),
            (
                "host='/tmp/a b' dbname='it\\'s'",
                "postgres://osuser@/it%27s?host=/tmp/a%20b&port=5432",
            ),
            (
                "dbname=a\\ b user=''",
                "postgres://osuser@/a%20b?host=/var/run/postgresql&port=5432",
            ),
            ("host=h1,h2 port=1,2", "postgres://osuser@h1:1,h2:2/osuser"),
            (
                "port=' 7 '",
                "postgres://osuser@/osuser?host=/var/run/postgresql&port=7",
            ),
            ("host=h port=3 host=g", "postgres://osuser@g:3/osuser"),
            ("host=@abs", "postgres://osuser@%40abs:5432/osuser"),
        ];
        for (s, want) in cases {
            assert_eq!(ok(s).location(None), *want, "{s:?}");
        }
    }

    #[test]
    fn passwords_and_other_parameters() {
        let c = ok(
            "postgres://u:p%40ss:w@h/db?connect_timeout=1&application_name=x&options=-c%20a%3Db",
        );
        assert_eq!(c.password.as_deref(), Some("p@ss:w"));
        assert_eq!(
            c.connect_timeout,
            ConnectTimeout::Limit(Duration::from_secs(2))
        );
        assert_eq!(c.application_name, "x");
        assert_eq!(c.options.as_deref(), Some("-c a=b"));
        assert!(!format!("{c:?}").contains("p@ss"));
        // The look-ahead for '@' stops only at '/': '?' belongs to the password.
        assert_eq!(ok("postgres://u:a?b@h/db").password.as_deref(), Some("a?b"));
        let c = ok("postgres://u:pw@h/db?password=other");
        assert_eq!(c.password.as_deref(), Some("other"));
        assert_eq!(ok("password='a b\\'c'").password.as_deref(), Some("a b'c"));
        assert_eq!(ok("postgres://u:@h").password, None);
        assert_eq!(
            ok("connect_timeout=0").connect_timeout,
            ConnectTimeout::Forever
        );
        assert_eq!(
            ok("connect_timeout=-3").connect_timeout,
            ConnectTimeout::Forever
        );
        assert_eq!(
            ok("connect_timeout=30").connect_timeout,
            ConnectTimeout::Limit(Duration::from_secs(30))
        );
        assert_eq!(ok("").connect_timeout, ConnectTimeout::Default);
        assert_eq!(ok("").application_name, "dbscope");
        assert_eq!(ok("fallback_application_name=f").application_name, "f");
        assert_eq!(
            ok("application_name=a fallback_application_name=f").application_name,
            "a"
        );
        for mode in ["disable", "allow", "prefer"] {
            ok(&format!("sslmode={mode}"));
        }
        ok("postgres://h?sslmode=disable&gssencmode=disable&target_session_attrs=any&client_encoding=UTF8");
        ok("requiressl=0");
        // libpq ignores sslmode and gssencmode on Unix sockets.
        ok("host=/tmp,@abs sslmode=verify-full gssencmode=require");
        ok("postgres:///db?ssl=true");
    }

    #[test]
    fn environment_fills_what_the_string_leaves_out() {
        let env = |k: &str| -> Option<String> {
            match k {
                "PGHOST" => Some("envhost".into()),
                "PGPORT" => Some("6543".into()),
                "PGUSER" => Some("envuser".into()),
                "PGPASSWORD" => Some("envpw".into()),
                "PGDATABASE" => Some("envdb".into()),
                "PGAPPNAME" => Some("envapp".into()),
                "PGCONNECT_TIMEOUT" => Some("5".into()),
                "PGOPTIONS" => Some("-c x=y".into()),
                _ => None,
            }
        };
        let d = defaults_with(&env);
        let c = resolve("postgres://", &d).unwrap();
        assert_eq!(c.location(None), "postgres://envuser@envhost:6543/envdb");
        assert_eq!(c.password.as_deref(), Some("envpw"));
        assert_eq!(c.application_name, "envapp");
        assert_eq!(
            c.connect_timeout,
            ConnectTimeout::Limit(Duration::from_secs(5))
        );
        assert_eq!(c.options.as_deref(), Some("-c x=y"));
        // The string wins over the environment; an empty URI dbname leaves PGDATABASE in force.
        let c = resolve("postgres://u:pw@h:1/?host=/s&port=2", &d).unwrap();
        assert_eq!(c.location(None), "postgres://u@/envdb?host=/s&port=2");
        assert_eq!(c.password.as_deref(), Some("pw"));
        // Empty variables count as not set for host, port, user and database.
        let empty = |k: &str| {
            k.starts_with("PG")
                .then(String::new)
                .filter(|_| ["PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE"].contains(&k))
        };
        let c = resolve("connect_timeout=3", &defaults_with(&empty)).unwrap();
        assert_eq!(
            c.location(None),
            "postgres://osuser@/osuser?host=/var/run/postgresql&port=5432"
        );
        assert_eq!(c.password, None);
        let ssl = |k: &str| (k == "PGSSLMODE").then(|| "verify-full".to_string());
        assert!(resolve("host=h", &defaults_with(&ssl))
            .unwrap_err()
            .0
            .contains("does not support TLS"));
        assert!(
            resolve("", &defaults_with(&ssl)).is_ok(),
            "a socket ignores sslmode"
        );
        let service = |k: &str| (k == "PGSERVICE").then(|| "prod".to_string());
        assert!(resolve("", &defaults_with(&service))
            .unwrap_err()
            .0
            .contains("PGSERVICE=prod"));
    }

    /// libpq's own messages where libpq refuses the string; dbscope's where it cannot do what
    /// libpq would.
    #[test]
    fn refusals_name_the_problem() {
        let cases: &[(&str, &str)] = &[
            (
                "postgres://h/db?foo=bar",
                "invalid URI query parameter: \"foo\"",
            ),
            (
                "postgres://h/db?host",
                "missing key/value separator \"=\" in URI query parameter",
            ),
            (
                "postgres://h/db?a=b=c",
                "extra key/value separator \"=\" in URI query parameter: \"a\"",
            ),
            (
                "postgres://h/db?host=x&&port=1",
                "missing key/value separator",
            ),
            (
                "postgres://[::1/db",
                "end of string reached when looking for matching \"]\"",
            ),
            ("postgres://[]/db", "IPv6 host address may not be empty"),
            (
                "postgres://[::1]x/db",
                "unexpected character \"x\" at position 6 in URI",
            ),
            (
                "postgres://h/d%zz",
                "invalid percent-encoded token in the database name: \"d%zz\"",
            ),
            ("postgres://h/d%00", "forbidden value %00"),
            (
                "postgres://h:abc/db",
                "invalid integer value \"abc\" for connection option \"port\"",
            ),
            ("postgres://h:70000/db", "invalid port number: \"70000\""),
            ("postgres://h:0/db", "invalid port number: \"0\""),
            (
                "postgres://h1,h2/db?port=1,2,3",
                "could not match 3 port numbers to 2 hosts",
            ),
            (
                "host=a,b hostaddr=127.0.0.1",
                "could not match 2 host names to 1 hostaddr values",
            ),
            (
                "hostaddr=localhost",
                "could not parse network address \"localhost\"",
            ),
            ("foo=bar", "invalid connection option \"foo\""),
            (
                "host",
                "missing \"=\" after \"host\" in connection info string",
            ),
            ("host=x port", "missing \"=\" after \"port\""),
            (
                "password='abc",
                "unterminated quoted string in connection info string",
            ),
            (
                "connect_timeout=1s",
                "invalid integer value \"1s\" for connection option \"connect_timeout\"",
            ),
            (
                "connect_timeout=",
                "invalid integer value \"\" for connection option \"connect_timeout\"",
            ),
            (
                "host=h sslmode=require",
                "sslmode=require: dbscope's PostgreSQL client does not support TLS",
            ),
            ("postgres://h?sslmode=verify-full", "does not support TLS"),
            ("postgres://h?ssl=true", "sslmode=require"),
            ("host=/tmp,h requiressl=1", "sslmode=require"),
            (
                "hostaddr=127.0.0.1 host=/tmp sslmode=verify-ca",
                "sslmode=verify-ca",
            ),
            ("sslmode=bogus", "invalid sslmode value: \"bogus\""),
            ("host=h gssencmode=require", "does not support GSSAPI"),
            (
                "target_session_attrs=read-write",
                "supports only target_session_attrs=any",
            ),
            (
                "target_session_attrs=x",
                "invalid target_session_attrs value: \"x\"",
            ),
            ("client_encoding=LATIN1", "talks UTF8 only"),
            (
                "postgres://h?sslcert=/x",
                "connection parameter \"sslcert\" is not supported",
            ),
            (
                "service=prod",
                "connection parameter \"service\" is not supported",
            ),
        ];
        for (s, want) in cases {
            let e = fail(s);
            assert!(e.contains(want), "{s:?}: got {e:?}, want {want:?}");
        }
    }

    #[test]
    fn refusals_never_show_the_password() {
        for s in [
            "postgres://u:s3cr%zzet@h/db",
            "postgres://u:s3cr%00et@h/db",
            "postgres://u@h/db?password=s3cr%zzet",
            "postgres://u:s3cret@[::1/db",
            "postgres://u:s3cret@[::1]x/db",
            "postgres://u@[::1/db?password=s3cret",
        ] {
            let e = fail(s);
            assert!(!e.contains("s3cr"), "{s:?}: {e}");
        }
    }

    #[test]
    fn hostaddr_pairs_with_host_names() {
        let c = ok("host=a,b hostaddr=127.0.0.1,::1 port=1,2");
        assert_eq!(
            c.endpoints,
            vec![
                Endpoint {
                    host: Host::Addr {
                        ip: "127.0.0.1".parse().unwrap(),
                        name: Some("a".into())
                    },
                    port: 1
                },
                Endpoint {
                    host: Host::Addr {
                        ip: "::1".parse().unwrap(),
                        name: Some("b".into())
                    },
                    port: 2
                },
            ]
        );
        assert_eq!(
            c.location(None),
            "postgres://osuser@a:1,b:2/osuser?hostaddr=127.0.0.1,::1"
        );
        assert_eq!(
            c.location(Some(1)),
            "postgres://osuser@b:2/osuser?hostaddr=::1"
        );
        assert_eq!(c.endpoints[1].address(), "[::1]:2");
        // An empty hostaddr entry falls back to that slot's host.
        let c = ok("host=a,/tmp hostaddr=127.0.0.1,");
        assert_eq!(c.endpoints[1].host, Host::Socket(PathBuf::from("/tmp")));
    }

    /// Every location is itself a string that resolves back to the same endpoints.
    #[test]
    fn locations_read_back_as_themselves() {
        for s in [
            "postgres://u%40x@h1:1,%2Ftmp%2Fa%20b:2,[::1]:3/d%2Fb",
            "host='/tmp/a&b?c' port=4 user=u dbname='x y'",
            "host=a,b hostaddr=127.0.0.1,::1 port=1,2",
            "host=@abs",
        ] {
            let c = ok(s);
            let again = ok(&c.location(None));
            assert_eq!(again.endpoints, c.endpoints, "{s:?}");
            assert_eq!(
                (again.user, again.dbname),
                (c.user.clone(), c.dbname.clone()),
                "{s:?}"
            );
            for i in 0..c.endpoints.len() {
                assert_eq!(
                    ok(&c.location(Some(i))).endpoints,
                    vec![c.endpoints[i].clone()]
                );
            }
        }
    }
}
