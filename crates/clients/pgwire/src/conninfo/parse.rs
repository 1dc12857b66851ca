//! A connection string into its parameters: URIs (authority, path, query) and `key=value` strings,
//! percent-decoding, the keywords dbscope acts on and those it refuses.

use std::collections::BTreeMap;

use super::error::{err, Result};

/// The parameters dbscope's client acts on, with the environment variable libpq reads for each.
pub(super) const SUPPORTED: [(&str, Option<&str>); 14] = [
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
pub(super) fn is_space(c: u8) -> bool {
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
