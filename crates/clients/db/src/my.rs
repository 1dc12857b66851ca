//! The MariaDB/MySQL target: a real server over the `mysql` crate's synchronous client (text and
//! binary protocol, no TLS), reached by `mysql://` or `mariadb://` URIs.

use std::collections::BTreeMap;

use dbscope_core::redact::redact;
use dbscope_core::TargetInfo;
use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder, Value};

use crate::target::{Dialect, Param, Session, StmtId, Target, TargetError, TargetResult};

/// Variables always read back and recorded, besides those the user sets (missing ones, e.g. a
/// MySQL-only name on MariaDB, are left out).
const REPORTED: [&str; 9] = [
    "innodb_flush_log_at_trx_commit",
    "innodb_flush_method",
    "innodb_log_file_size",
    "innodb_buffer_pool_size",
    "innodb_doublewrite",
    "sync_binlog",
    "log_bin",
    "default_storage_engine",
    "tx_isolation",
];

/// Where the mysql command-line client looks when neither the URI nor MYSQL_UNIX_PORT names a
/// socket (Debian's MariaDB and MySQL packages).
const DEFAULT_SOCKET: &str = "/run/mysqld/mysqld.sock";

/// Where to connect: a Unix socket or host and port.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Endpoint {
    Socket(String),
    Tcp(String, u16),
}

/// A parsed `mysql://` URI with the environment's defaults filled in.
#[derive(Clone, PartialEq, Eq)]
struct MyConnInfo {
    user: String,
    password: Option<String>,
    db: String,
    endpoint: Endpoint,
}

impl MyConnInfo {
    /// The URI without the password, as recorded in the manifest.
    fn location(&self) -> String {
        match &self.endpoint {
            Endpoint::Socket(s) => format!("mysql://{}@/{}?socket={s}", self.user, self.db),
            Endpoint::Tcp(h, p) => format!("mysql://{}@{h}:{p}/{}", self.user, self.db),
        }
    }
}

/// Decodes `%XX` escapes (a URI's user, password, host, database and query values).
fn percent_decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad percent escape at byte {i}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "percent escapes do not decode to UTF-8".to_string())
}

/// Parses `mysql://[user[:password]@][host][:port]/db[?socket=/path]` (or `mariadb://`), filling
/// what is missing from the environment the mysql client reads: MYSQL_HOST, MYSQL_TCP_PORT,
/// MYSQL_UNIX_PORT, MYSQL_PWD, then USER. No host (or `localhost` without a port) means the Unix
/// socket, as for the mysql client.
fn parse_uri(spec: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<MyConnInfo, String> {
    let rest = spec
        .strip_prefix("mysql://")
        .or_else(|| spec.strip_prefix("mariadb://"))
        .ok_or("expected mysql:// or mariadb://")?;
    let (main, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (authority, path) = main.split_once('/').unwrap_or((main, ""));
    let (userinfo, hostport) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    let (user, password) = match userinfo {
        Some(u) => match u.split_once(':') {
            Some((u, p)) => (percent_decode(u)?, Some(percent_decode(p)?)),
            None => (percent_decode(u)?, None),
        },
        None => (String::new(), None),
    };
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) => {
            let port: u16 = p
                .parse()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| format!("invalid port {p:?}"))?;
            (percent_decode(h)?, Some(port))
        }
        None => (percent_decode(hostport)?, None),
    };
    let mut socket = None;
    for kv in query.split('&').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        match k {
            "socket" => socket = Some(percent_decode(v)?),
            _ => return Err(format!("unknown URI parameter {k:?} (known: socket)")),
        }
    }
    let db = percent_decode(path.trim_end_matches('/'))?;
    if db.is_empty() {
        return Err("the URI needs a database: mysql://user@host/DATABASE".into());
    }
    let user = if user.is_empty() {
        env("USER").unwrap_or_else(|| "root".into())
    } else {
        user
    };
    let password = password.or_else(|| env("MYSQL_PWD"));
    let host = if host.is_empty() {
        env("MYSQL_HOST").unwrap_or_default()
    } else {
        host
    };
    let port = match port {
        Some(p) => Some(p),
        None => match env("MYSQL_TCP_PORT") {
            Some(p) => Some(
                p.parse()
                    .map_err(|_| format!("MYSQL_TCP_PORT={p:?} is not a port"))?,
            ),
            None => None,
        },
    };
    let endpoint = match socket {
        Some(s) => Endpoint::Socket(s),
        None if host.is_empty() || (host == "localhost" && port.is_none()) => {
            Endpoint::Socket(env("MYSQL_UNIX_PORT").unwrap_or_else(|| DEFAULT_SOCKET.to_string()))
        }
        None => Endpoint::Tcp(host, port.unwrap_or(3306)),
    };
    Ok(MyConnInfo {
        user,
        password,
        db,
        endpoint,
    })
}

/// A `--set` value as SQL: numbers and plain words as they are, anything else quoted.
fn sql_value(v: &str) -> String {
    if !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-')
    {
        v.to_string()
    } else {
        format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

/// A MariaDB or MySQL server.
pub struct MyTarget {
    info: MyConnInfo,
    settings: Vec<(String, String)>,
}

impl std::fmt::Debug for MyTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MyTarget")
            .field("location", &self.info.location())
            .finish()
    }
}

/// Error codes after which the connection is gone: 1053 server shutdown, 1927 connection
/// killed, 4031 disconnected for inactivity, 2006/2013 the client's "server has gone away".
const CONNECTION_ENDED: [u16; 5] = [1053, 1927, 4031, 2006, 2013];

fn classify(e: mysql::Error) -> TargetError {
    match e {
        mysql::Error::MySqlError(m) => TargetError {
            class: format!("mysql:{}", m.code),
            sqlstate: None,
            connection_lost: CONNECTION_ENDED.contains(&m.code),
            message: format!("{} ({}, SQLSTATE {})", m.message, m.code, m.state),
        },
        mysql::Error::IoError(e) => TargetError {
            class: "mysql:connection".into(),
            sqlstate: None,
            message: format!("connection lost: {e}"),
            connection_lost: true,
        },
        mysql::Error::DriverError(e) => TargetError {
            class: "mysql:driver".into(),
            sqlstate: None,
            message: redact(&e.to_string()),
            connection_lost: true,
        },
        e => TargetError {
            class: "mysql:client".into(),
            sqlstate: None,
            message: redact(&e.to_string()),
            connection_lost: false,
        },
    }
}

impl MyTarget {
    /// Parses a `mysql://` or `mariadb://` URI ([`parse_uri`]) with the process's environment.
    pub fn new(spec: &str, settings: &[(String, String)]) -> TargetResult<Self> {
        Self::with_env(spec, settings, &|k| std::env::var(k).ok())
    }

    fn with_env(
        spec: &str,
        settings: &[(String, String)],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> TargetResult<Self> {
        let info = parse_uri(spec, env).map_err(|e| {
            TargetError::config(format!(
                "MariaDB/MySQL URI {:?}: {}",
                redact(spec),
                redact(&e)
            ))
        })?;
        Ok(MyTarget {
            info,
            settings: settings.to_vec(),
        })
    }

    /// `--set NAME=VALUE` is a session variable (`SET SESSION`) on every connection;
    /// `--set global.NAME=VALUE` a global one (`SET GLOBAL`, needs SUPER or
    /// SYSTEM_VARIABLES_ADMIN), which stays set on the server after the run.
    fn set_statements(&self) -> Vec<(String, String)> {
        self.settings
            .iter()
            .map(|(n, v)| {
                let sql = match n.strip_prefix("global.") {
                    Some(g) => format!("SET GLOBAL {g} = {}", sql_value(v)),
                    None => format!("SET SESSION {n} = {}", sql_value(v)),
                };
                (format!("{n}={v}"), sql)
            })
            .collect()
    }

    fn open(&self) -> TargetResult<Conn> {
        let i = &self.info;
        let mut b = OptsBuilder::new()
            .user(Some(&i.user))
            .pass(i.password.as_deref())
            .db_name(Some(&i.db))
            .prefer_socket(false)
            .stmt_cache_size(Some(0));
        b = match &i.endpoint {
            Endpoint::Socket(s) => b.socket(Some(s)),
            Endpoint::Tcp(h, p) => b.ip_or_hostname(Some(h)).tcp_port(*p),
        };
        let mut conn = Conn::new(b).map_err(|e| {
            let mut err = classify(e);
            err.message = redact(&format!(
                "cannot connect to MariaDB/MySQL at {}: {}",
                i.location(),
                err.message
            ));
            if let Some(p) = &i.password {
                if !p.is_empty() {
                    err.message = err.message.replace(p.as_str(), "***");
                }
            }
            err.connection_lost = true;
            err
        })?;
        for (what, sql) in self.set_statements() {
            conn.query_drop(&sql).map_err(|e| {
                TargetError::config(format!(
                    "--set {what}: the server says: {}",
                    classify(e).message
                ))
            })?;
        }
        Ok(conn)
    }
}

impl Target for MyTarget {
    fn kind(&self) -> &'static str {
        "mysql"
    }
    fn dialect(&self) -> Dialect {
        Dialect::Mysql
    }
    fn connect(&self) -> TargetResult<Box<dyn Session>> {
        let conn = self.open()?;
        Ok(Box::new(MySession {
            conn,
            stmts: Vec::new(),
        }))
    }
    fn describe(&self) -> TargetResult<TargetInfo> {
        let mut conn = self.open()?;
        let (version, comment): (String, String) = conn
            .query_first("SELECT @@version, @@version_comment")
            .map_err(classify)?
            .unwrap_or_default();
        let mut effective = BTreeMap::new();
        for name in REPORTED.iter().map(|s| s.to_string()) {
            // SHOW cannot be prepared; the names are constants or identifiers (parse_setting).
            let row: Option<(String, String)> = conn
                .query_first(format!("SHOW VARIABLES WHERE Variable_name = '{name}'"))
                .map_err(classify)?;
            if let Some((_, v)) = row {
                effective.insert(name, v);
            }
        }
        for (name, _) in &self.settings {
            let (scope, var) = match name.strip_prefix("global.") {
                Some(g) => ("GLOBAL", g),
                None => ("SESSION", name.as_str()),
            };
            let row: Option<(String, String)> = conn
                .query_first(format!(
                    "SHOW {scope} VARIABLES WHERE Variable_name = '{var}'"
                ))
                .map_err(classify)?;
            effective.insert(name.clone(), row.map(|r| r.1).unwrap_or_default());
        }
        let engines: Vec<(String, String)> = conn
            .exec(
                "SELECT table_name, engine FROM information_schema.tables \
                 WHERE table_schema = DATABASE() AND engine IS NOT NULL ORDER BY table_name",
                (),
            )
            .map_err(classify)?;
        for (t, e) in engines {
            effective.insert(format!("engine.{t}"), e);
        }
        Ok(TargetInfo {
            kind: "mysql".into(),
            location: self.info.location(),
            server_version: if comment.is_empty() {
                version
            } else {
                format!("{version} ({comment})")
            },
            settings_requested: self.settings.clone(),
            settings_effective: effective,
        })
    }
}

struct MySession {
    conn: Conn,
    stmts: Vec<mysql::Statement>,
}

fn values(params: &[Param]) -> mysql::Params {
    if params.is_empty() {
        return mysql::Params::Empty;
    }
    mysql::Params::Positional(
        params
            .iter()
            .map(|p| match p {
                Param::Int(i) => Value::Int(*i),
                Param::Text(s) => Value::Bytes(s.as_bytes().to_vec()),
            })
            .collect(),
    )
}

/// A value as text: integers and floats printed, strings and DECIMALs as the server sent them.
fn text(v: Value) -> Option<String> {
    match v {
        Value::NULL => None,
        Value::Bytes(b) => Some(String::from_utf8_lossy(&b).into_owned()),
        Value::Int(i) => Some(i.to_string()),
        Value::UInt(u) => Some(u.to_string()),
        Value::Float(f) => Some(f.to_string()),
        Value::Double(f) => Some(f.to_string()),
        v => Some(v.as_sql(true).trim_matches('\'').to_string()),
    }
}

impl Session for MySession {
    fn batch(&mut self, sql: &str) -> TargetResult<()> {
        // The text protocol runs several statements separated by ';' (multi-statements are on
        // in the mysql crate); every result is read.
        self.conn.query_drop(sql).map_err(classify)
    }
    fn prepare(&mut self, sql: &str) -> TargetResult<StmtId> {
        let s = self.conn.prep(sql).map_err(classify)?;
        self.stmts.push(s);
        Ok(StmtId(self.stmts.len() - 1))
    }
    fn execute(&mut self, stmt: StmtId, params: &[Param]) -> TargetResult<u64> {
        let s = self
            .stmts
            .get(stmt.0)
            .ok_or_else(|| TargetError::config("unknown prepared statement"))?
            .clone();
        let mut r = self.conn.exec_iter(&s, values(params)).map_err(classify)?;
        let mut n = 0u64;
        let mut returns_rows = false;
        while let Some(set) = r.iter() {
            returns_rows |= !set.columns().as_ref().is_empty();
            for row in set {
                row.map_err(classify)?;
                n += 1;
            }
        }
        if returns_rows {
            Ok(n)
        } else {
            Ok(r.affected_rows())
        }
    }
    fn query_i64(&mut self, sql: &str) -> TargetResult<Vec<i64>> {
        let rows: Vec<Value> = self.conn.query(sql).map_err(classify)?;
        rows.into_iter()
            .map(|v| {
                let t = text(v).unwrap_or_default();
                t.parse::<i64>().map_err(|_| TargetError {
                    class: "mysql:type".into(),
                    sqlstate: None,
                    message: format!("expected an integer, got {t:?}"),
                    connection_lost: false,
                })
            })
            .collect()
    }
    fn query_rows(
        &mut self,
        sql: &str,
        params: &[Param],
    ) -> TargetResult<Vec<Vec<Option<String>>>> {
        let rows: Vec<mysql::Row> = if params.is_empty() {
            self.conn.query(sql).map_err(classify)?
        } else {
            self.conn.exec(sql, values(params)).map_err(classify)?
        };
        Ok(rows
            .into_iter()
            .map(|r| r.unwrap().into_iter().map(text).collect())
            .collect())
    }
    fn begin(&mut self) -> TargetResult<()> {
        self.conn.query_drop("BEGIN").map_err(classify)
    }
    fn commit(&mut self) -> TargetResult<()> {
        self.conn.query_drop("COMMIT").map_err(classify)
    }
    fn rollback(&mut self) -> TargetResult<()> {
        self.conn.query_drop("ROLLBACK").map_err(classify)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn uris_parse_with_the_clients_defaults() {
        let none = env_of(&[("USER", "osuser")]);
        let i = parse_uri("mysql://bench:s3cret@db.example:3307/app", &none).unwrap();
        assert_eq!(i.endpoint, Endpoint::Tcp("db.example".into(), 3307));
        assert_eq!(i.password.as_deref(), Some("s3cret"));
        assert_eq!(i.location(), "mysql://bench@db.example:3307/app");
        let i = parse_uri("mariadb:///app?socket=%2Ftmp%2Fm.sock", &none).unwrap();
        assert_eq!(i.endpoint, Endpoint::Socket("/tmp/m.sock".into()));
        assert_eq!(i.user, "osuser");
        let i = parse_uri("mysql://u@localhost/app", &none).unwrap();
        assert_eq!(i.endpoint, Endpoint::Socket(DEFAULT_SOCKET.into()));
        let env = env_of(&[
            ("MYSQL_HOST", "h"),
            ("MYSQL_TCP_PORT", "3399"),
            ("MYSQL_PWD", "pw"),
        ]);
        let i = parse_uri("mysql://u@/app", &env).unwrap();
        assert_eq!(i.endpoint, Endpoint::Tcp("h".into(), 3399));
        assert_eq!(i.password.as_deref(), Some("pw"));
        let env = env_of(&[("MYSQL_UNIX_PORT", "/s/sock")]);
        let i = parse_uri("mysql://u@/app", &env).unwrap();
        assert_eq!(i.endpoint, Endpoint::Socket("/s/sock".into()));
    }

    #[test]
    fn bad_uris_are_clear_errors_without_the_password() {
        for (uri, want) in [
            ("mysql://u:hunter2@h:notaport/db", "invalid port"),
            ("mysql://u:hunter2@h/", "needs a database"),
            ("mysql://u:hunter2@h/db?ssl=1", "unknown URI parameter"),
        ] {
            let e = MyTarget::new(uri, &[]).unwrap_err();
            assert!(e.message.contains(want), "{uri}: {e}");
            assert!(!e.message.contains("hunter2"), "{e}");
        }
        let t = MyTarget::new("mysql://u:hunter2@h/db", &[]).unwrap();
        assert!(!format!("{t:?}").contains("hunter2"));
    }

    #[test]
    fn set_values_are_quoted_unless_plain() {
        assert_eq!(sql_value("2"), "2");
        assert_eq!(sql_value("ON"), "ON");
        assert_eq!(sql_value("a b'c"), "'a b\\'c'");
        let t = MyTarget::new(
            "mysql://u@h/db",
            &[
                ("global.innodb_flush_log_at_trx_commit".into(), "2".into()),
                ("sql_mode".into(), "".into()),
            ],
        )
        .unwrap();
        let s: Vec<String> = t.set_statements().into_iter().map(|s| s.1).collect();
        assert_eq!(
            s,
            [
                "SET GLOBAL innodb_flush_log_at_trx_commit = 2",
                "SET SESSION sql_mode = ''"
            ]
        );
    }
}
