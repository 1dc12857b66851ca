//! The MariaDB/MySQL target: a real server over the `mysql` crate's synchronous client (text and
//! binary protocol, no TLS), reached by `mysql://` or `mariadb://` URIs.

use std::collections::BTreeMap;

use dbscope_core::redact::redact;
use dbscope_core::TargetInfo;
use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder, Value};

use std::sync::{Arc, Mutex, PoisonError};

use crate::target::{
    Dialect, Param, ScriptSend, Session, StmtId, StmtResult, Target, TargetError, TargetResult,
};

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
            mysql_code: Some(m.code),
            connection_lost: CONNECTION_ENDED.contains(&m.code),
            message: format!("{} ({}, SQLSTATE {})", m.message, m.code, m.state),
        },
        mysql::Error::IoError(e) => TargetError {
            class: "mysql:connection".into(),
            sqlstate: None,
            mysql_code: None,
            message: format!("connection lost: {e}"),
            connection_lost: true,
        },
        // A broken packet stream (its I/O failed, or packets out of sync): the connection is
        // gone, as the crate's own `is_connectivity_error` says; the session reconnects.
        mysql::Error::CodecError(e) => TargetError {
            class: "mysql:connection".into(),
            sqlstate: None,
            mysql_code: None,
            message: format!("connection lost: {e}"),
            connection_lost: true,
        },
        mysql::Error::DriverError(e) => TargetError {
            class: "mysql:driver".into(),
            sqlstate: None,
            mysql_code: None,
            message: redact(&e.to_string()),
            connection_lost: true,
        },
        e => TargetError {
            class: "mysql:client".into(),
            sqlstate: None,
            mysql_code: None,
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
                let e = classify(e);
                TargetError::config(format!(
                    "--set {what}: the server says: {}{}",
                    e.message,
                    set_hint(&what, &e.message)
                ))
            })?;
        }
        Ok(conn)
    }
}

/// What to write instead when the server refuses a `--set` for its scope: "is a GLOBAL
/// variable" (1229) for a global-only variable set for the session, "is a SESSION variable"
/// (1228, or 1238 on MariaDB) for a session-only one set globally. By the message: 1238 also
/// says "is a read only variable".
fn set_hint(what: &str, message: &str) -> String {
    let (name, value) = what.split_once('=').unwrap_or((what, ""));
    match name.strip_prefix("global.") {
        None if message.contains("is a GLOBAL variable") => format!(
            "; write --set global.{name}={value} to run SET GLOBAL (needs SUPER or \
             SYSTEM_VARIABLES_ADMIN; it stays set on the server after the run)"
        ),
        Some(n) if message.contains("is a SESSION variable") => {
            format!("; write --set {n}={value} to set it for each session (SET SESSION)")
        }
        _ => String::new(),
    }
}

impl Target for MyTarget {
    fn kind(&self) -> &'static str {
        "mysql"
    }
    fn dialect(&self) -> Dialect {
        Dialect::Mysql
    }
    fn sessions_may_share_threads(&self) -> bool {
        true
    }
    fn own_thread_by_default(&self) -> bool {
        // 16 point selects on 2 CPUs: 55-70 k/s on 2 shared threads, 100-118 k/s with a thread
        // each (the server's 16 threads leave two client threads too little of the CPUs);
        // UPDATEs gain from sharing (26-28 k/s against 22-26 k/s). `--threads` chooses.
        true
    }
    fn connect(&self) -> TargetResult<Box<dyn Session>> {
        let mut conn = self.open()?;
        // LOAD DATA LOCAL INFILE (copy_in) reads what copy_in put in this slot; the handler is
        // 'static, so the data goes through a shared buffer rather than the caller's closure.
        let infile: Arc<Mutex<Vec<u8>>> = Arc::default();
        let slot = infile.clone();
        conn.set_local_infile_handler(Some(mysql::LocalInfileHandler::new(move |_, w| {
            use std::io::Write;
            let data = std::mem::take(&mut *slot.lock().unwrap_or_else(PoisonError::into_inner));
            w.write_all(&data)
        })));
        Ok(Box::new(MySession {
            conn,
            stmts: Vec::new(),
            infile,
        }))
    }

    fn table_facts(&self) -> TargetResult<BTreeMap<String, String>> {
        engines(&mut self.open()?)
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
        effective.extend(engines(&mut conn)?);
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

/// `engine.TABLE` for each table of the connection's database that has an engine (not views).
fn engines(conn: &mut Conn) -> TargetResult<BTreeMap<String, String>> {
    let rows: Vec<(String, String)> = conn
        .exec(
            "SELECT table_name, engine FROM information_schema.tables \
             WHERE table_schema = DATABASE() AND engine IS NOT NULL ORDER BY table_name",
            (),
        )
        .map_err(classify)?;
    Ok(rows
        .into_iter()
        .map(|(t, e)| (format!("engine.{t}"), e))
        .collect())
}

struct MySession {
    conn: Conn,
    /// Prepared statements, with the order of the `$n` parameters their `?` stand for.
    stmts: Vec<(mysql::Statement, Vec<usize>)>,
    /// The data the next `LOAD DATA LOCAL INFILE` sends ([`Session::copy_in`]).
    infile: Arc<Mutex<Vec<u8>>>,
}

/// Bytes of data per `LOAD DATA LOCAL INFILE` statement in [`Session::copy_in`].
const LOAD_CHUNK: usize = 8 << 20;

/// Rewrites PostgreSQL-style `$1`, `$2`… parameters (what the script workload's extended and
/// prepared modes send) as MySQL's `?`, and returns the parameter number (from 0) each `?`
/// stands for, in order. Quoted strings, quoted identifiers and comments are left as they are,
/// and so is a `?` already there (returned as the next parameter in order).
fn to_positional(sql: &str) -> (String, Vec<usize>) {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let mut order = Vec::new();
    let mut i = 0;
    let mut plain_start = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < b.len() {
                    if b[i] == b'\\' && q != b'`' {
                        i += 2;
                        continue;
                    }
                    if b[i] == q {
                        if b.get(i + 1) == Some(&q) {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'?' => {
                order.push(order.len());
                i += 1;
            }
            b'$' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                let mut j = i + 1;
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
                match sql[i + 1..j].parse::<usize>() {
                    Ok(n) if n >= 1 => {
                        out.push_str(&sql[plain_start..i]);
                        out.push('?');
                        order.push(n - 1);
                        plain_start = j;
                    }
                    _ => {}
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    out.push_str(&sql[plain_start.min(sql.len())..]);
    (out, order)
}

/// A script's text parameter as the server should see it: an integer as one (arithmetic on a
/// string would be done in floating point), anything else as text.
fn script_value(p: &str) -> Value {
    match p.parse::<i64>() {
        Ok(i) => Value::Int(i),
        Err(_) => Value::Bytes(p.as_bytes().to_vec()),
    }
}

/// Reads every result set of a query: one [`StmtResult`] each, rows kept when asked.
fn collect_sets<T: mysql::prelude::Protocol>(
    mut r: mysql::QueryResult<'_, '_, '_, T>,
    keep_rows: bool,
) -> TargetResult<Vec<StmtResult>> {
    let mut out = Vec::new();
    while let Some(set) = r.iter() {
        let columns: Vec<String> = set
            .columns()
            .as_ref()
            .iter()
            .map(|c| c.name_str().into_owned())
            .collect();
        let has_rows = !columns.is_empty();
        let affected = set.affected_rows();
        let mut rows = Vec::new();
        let mut n = 0u64;
        for row in set {
            let row = row.map_err(classify)?;
            n += 1;
            if keep_rows {
                rows.push(row.unwrap().into_iter().map(text).collect());
            }
        }
        out.push(StmtResult {
            affected: if has_rows { n } else { affected },
            columns: if keep_rows { columns } else { Vec::new() },
            rows,
        });
    }
    Ok(out)
}

fn value(p: &Param) -> Value {
    match p {
        Param::Int(i) => Value::Int(*i),
        Param::Text(s) => Value::Bytes(s.as_bytes().to_vec()),
    }
}

/// Bound values as the crate takes them: none is `Empty`, not an empty list.
fn positional(values: Vec<Value>) -> mysql::Params {
    if values.is_empty() {
        mysql::Params::Empty
    } else {
        mysql::Params::Positional(values)
    }
}

fn values(params: &[Param]) -> mysql::Params {
    positional(params.iter().map(value).collect())
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
        let (sql, order) = to_positional(sql);
        let s = self.conn.prep(sql).map_err(classify)?;
        self.stmts.push((s, order));
        Ok(StmtId(self.stmts.len() - 1))
    }
    fn execute(&mut self, stmt: StmtId, params: &[Param]) -> TargetResult<u64> {
        // The statement is borrowed, not cloned, and the values built once: this is every
        // lookup's and commit's path.
        let (s, order) = self
            .stmts
            .get(stmt.0)
            .ok_or_else(|| TargetError::config("unknown prepared statement"))?;
        let bound = order
            .iter()
            .map(|&i| {
                params.get(i).map(value).ok_or_else(|| {
                    TargetError::config(format!(
                        "the statement uses parameter {} and {} were given",
                        i + 1,
                        params.len()
                    ))
                })
            })
            .collect::<TargetResult<Vec<Value>>>()?;
        let mut r = self
            .conn
            .exec_iter(s, positional(bound))
            .map_err(classify)?;
        let mut n = 0u64;
        let mut affected = 0u64;
        let mut returns_rows = false;
        while let Some(set) = r.iter() {
            returns_rows |= !set.columns().as_ref().is_empty();
            // Read before the set is consumed: afterwards the result has moved past its OK
            // packet and reports 0.
            affected += set.affected_rows();
            for row in set {
                row.map_err(classify)?;
                n += 1;
            }
        }
        Ok(if returns_rows { n } else { affected })
    }
    fn query_i64(&mut self, sql: &str) -> TargetResult<Vec<i64>> {
        let rows: Vec<Value> = self.conn.query(sql).map_err(classify)?;
        rows.into_iter()
            .map(|v| {
                let t = text(v).unwrap_or_default();
                TargetError::parse_i64("mysql", &t)
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
    fn multiplex(&mut self) -> TargetResult<bool> {
        // This connection's Unix socket (vendor/mysql) waits in the multiplexer when the session
        // runs inside one; only this connection's: another one used from a shared thread (an
        // observer's, say) blocks as before. A TCP stream cannot: false.
        Ok(self.conn.set_wait_hook(Some(crate::mux::wait_fd_if_shared)))
    }
    fn connection_id(&self) -> Option<u64> {
        Some(self.conn.connection_id() as u64)
    }
    fn stats_end_with_connection(&self) -> bool {
        true
    }
    fn set_label(&mut self, label: &str) -> TargetResult<()> {
        // MariaDB/MySQL have no settable connection name; the run's observer finds its sessions
        // by connection id (CONNECTION_ID()) instead.
        let _ = label;
        Ok(())
    }
    fn script(
        &mut self,
        send: ScriptSend<'_>,
        params: &[&str],
        keep_rows: bool,
    ) -> TargetResult<Vec<StmtResult>> {
        // A prepared statement is borrowed, not cloned (every `-M prepared` execution).
        let unnamed;
        let (stmt, order) = match send {
            ScriptSend::Simple(sql) => {
                let r = self.conn.query_iter(sql).map_err(classify)?;
                return collect_sets(r, keep_rows);
            }
            ScriptSend::Unnamed(sql) => {
                let (sql, order) = to_positional(sql);
                unnamed = (self.conn.prep(sql).map_err(classify)?, order);
                (&unnamed.0, &unnamed.1)
            }
            ScriptSend::Prepared(id) => self
                .stmts
                .get(id.0)
                .map(|(s, o)| (s, o))
                .ok_or_else(|| TargetError::config("unknown prepared statement"))?,
        };
        let values = order
            .iter()
            .map(|&i| {
                params
                    .get(i)
                    .map(|p| script_value(p))
                    .ok_or_else(|| TargetError {
                        class: "mysql:bind".into(),
                        sqlstate: None,
                        mysql_code: None,
                        message: format!(
                            "the statement uses parameter ${} and the command gives {}",
                            i + 1,
                            params.len()
                        ),
                        connection_lost: false,
                    })
            })
            .collect::<TargetResult<Vec<Value>>>()?;
        let result = {
            let r = self
                .conn
                .exec_iter(stmt, positional(values))
                .map_err(classify)?;
            collect_sets(r, keep_rows)
        };
        if matches!(send, ScriptSend::Unnamed(_)) {
            // The unnamed statement lives for one execution, as PostgreSQL's does.
            let _ = self.conn.close(stmt.clone());
        }
        result
    }
    /// The text protocol's rows, one at a time: every value arrives as the server's text.
    fn query_each(
        &mut self,
        sql: &str,
        each: &mut crate::target::RowSink<'_>,
    ) -> TargetResult<u64> {
        let mut r = self.conn.query_iter(sql).map_err(classify)?;
        let mut n = 0u64;
        let mut stopped = None;
        while let Some(set) = r.iter() {
            for row in set {
                let row = row.map_err(classify)?;
                if stopped.is_some() {
                    // Read to the end so the connection stays usable.
                    continue;
                }
                let owned: Vec<Option<Vec<u8>>> = row
                    .unwrap()
                    .into_iter()
                    .map(|v| match v {
                        Value::NULL => None,
                        Value::Bytes(b) => Some(b),
                        v => text(v).map(String::into_bytes),
                    })
                    .collect();
                let fields: Vec<Option<&[u8]>> = owned.iter().map(|f| f.as_deref()).collect();
                if let Err(e) = each(&fields) {
                    stopped = Some(e);
                }
                n += 1;
            }
        }
        match stopped {
            Some(e) => Err(TargetError::config(e)),
            None => Ok(n),
        }
    }
    /// `sql` is a `LOAD DATA LOCAL INFILE 'NAME' INTO TABLE …` statement; `fill`'s data is
    /// PostgreSQL COPY's text format, which is LOAD DATA's default (tab between fields, newline
    /// after each row, backslash escapes). The data is sent as one LOAD DATA statement per
    /// [`LOAD_CHUNK`] bytes: each is its own statement, so the caller wraps them in a
    /// transaction ([`Session::begin`]) to make the load all or nothing. Rows the server skipped
    /// or changed (its warnings) show as fewer rows than sent: the caller checks the count.
    fn copy_in(
        &mut self,
        sql: &str,
        fill: &mut dyn FnMut(&mut Vec<u8>) -> Result<bool, String>,
    ) -> TargetResult<u64> {
        let mut total = 0u64;
        let mut buf = Vec::with_capacity(LOAD_CHUNK + (1 << 20));
        // `fill` appends one chunk to an empty buffer (it decides its size by the buffer's
        // length), so chunks are made one at a time and gathered into `buf`.
        let mut chunk = Vec::new();
        loop {
            let mut more = true;
            while more && buf.len() < LOAD_CHUNK {
                chunk.clear();
                more = fill(&mut chunk).map_err(TargetError::config)?;
                buf.extend_from_slice(&chunk);
            }
            if buf.is_empty() {
                return Ok(total);
            }
            *self.infile.lock().unwrap_or_else(PoisonError::into_inner) = std::mem::take(&mut buf);
            self.conn.query_drop(sql).map_err(|e| {
                let mut e = classify(e);
                if e.mysql_code == Some(1148) || e.mysql_code == Some(4166) {
                    e.message.push_str(
                        " (LOAD DATA LOCAL INFILE needs local_infile=ON on the server: \
                         SET GLOBAL local_infile = ON)",
                    );
                }
                e
            })?;
            total += self.conn.affected_rows();
            if !more {
                return Ok(total);
            }
        }
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
    fn dollar_parameters_become_question_marks_outside_quotes() {
        let (sql, order) = to_positional("UPDATE t SET v = v + $2 WHERE id = $1 AND s = '$3'");
        assert_eq!(sql, "UPDATE t SET v = v + ? WHERE id = ? AND s = '$3'");
        assert_eq!(order, [1, 0]);
        let (sql, order) = to_positional("SELECT `a$1`, \"$1\", 'it''s $1' -- $1\n, $10 /* $2 */");
        assert_eq!(sql, "SELECT `a$1`, \"$1\", 'it''s $1' -- $1\n, ? /* $2 */");
        assert_eq!(order, [9]);
        let (sql, order) = to_positional("SELECT pad FROM t WHERE id = ? AND k = ?");
        assert_eq!(sql, "SELECT pad FROM t WHERE id = ? AND k = ?");
        assert_eq!(order, [0, 1]);
        assert_eq!(
            to_positional("SELECT 'a\\'$1' , $1").0,
            "SELECT 'a\\'$1' , ?"
        );
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
