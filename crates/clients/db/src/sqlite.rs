//! The SQLite target (rusqlite, bundled): the embedded default, one connection per session to one
//! file; with a key (`sqlcipher:PATH`, the `sqlcipher` feature) the same file encrypted by SQLCipher.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dbscope_core::TargetInfo;
use rusqlite::types::{ToSqlOutput, Value};
use rusqlite::{Connection, OpenFlags, ToSql};

use crate::cipher::{Key, CIPHER_PRAGMAS, CIPHER_REPORTED};
use crate::target::{
    Dialect, Param, ScriptSend, Session, StmtId, StmtResult, Target, TargetError, TargetResult,
};

/// Settings always read back and recorded, besides those the user sets.
const REPORTED: [&str; 4] = ["journal_mode", "synchronous", "page_size", "busy_timeout"];

/// How long a session waits for another session's lock before SQLITE_BUSY (unless `--set busy_timeout`).
const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a session blocked by another's lock tries again. SQLite's own busy handler
/// (`busy_timeout`) sleeps 1, 2, 5, 10 … 100 ms between tries, and a session that loops
/// UPDATE + COMMIT re-takes the lock long before a sleeper wakes: in 3 s one session did 2,930
/// commits and another 134 (Jain's fairness 0.45; with WAL one did 15,409 and another 601). Trying
/// every 50 µs gave 563…905 (0.97; with WAL 1,707…1,783, 1.00). `--set busy_timeout=MS` brings
/// SQLite's own handler back.
const BUSY_RETRY: Duration = Duration::from_micros(50);

/// The default busy handler: try again after [`BUSY_RETRY`], for up to [`DEFAULT_BUSY_TIMEOUT`].
fn prompt_busy_handler(tries: i32) -> bool {
    std::thread::sleep(BUSY_RETRY);
    (tries as u128) < DEFAULT_BUSY_TIMEOUT.as_micros() / BUSY_RETRY.as_micros()
}

/// What the manifest records as `busy_handler`.
fn busy_handler_text(settings: &[(String, String)]) -> String {
    if settings.iter().any(|(n, _)| n == "busy_timeout") {
        "sqlite busy_timeout (its own back-off: sleeps of 1 to 100 ms)".into()
    } else {
        format!(
            "dbscope: retry every {} µs for up to {} s (busy_timeout reads 0; --set busy_timeout=MS \
             restores SQLite's back-off)",
            BUSY_RETRY.as_micros(),
            DEFAULT_BUSY_TIMEOUT.as_secs()
        )
    }
}

/// A SQLite database file (encrypted by SQLCipher when it has a key).
#[derive(Debug, Clone)]
pub struct SqliteTarget {
    path: PathBuf,
    settings: Vec<(String, String)>,
    key: Option<Key>,
}

/// A connection and how long its key derivation took (SQLCipher derives the page key from the
/// passphrase at the first read: PBKDF2 with `kdf_iter` rounds, slow on purpose).
struct Opened {
    conn: Connection,
    /// When the key derivation started, and how long it took.
    key_derivation: Option<(std::time::Instant, Duration)>,
}

impl SqliteTarget {
    /// A target on `path` (created if missing) with `PRAGMA` settings applied to every connection.
    pub fn new(path: &Path, settings: &[(String, String)]) -> TargetResult<Self> {
        for (name, value) in settings {
            if value.is_empty()
                || !value
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            {
                return Err(TargetError::config(format!(
                    "--set {name}={value}: a SQLite pragma value must be a word or number"
                )));
            }
        }
        Ok(SqliteTarget {
            path: path.to_owned(),
            settings: settings.to_vec(),
            key: None,
        })
    }

    /// A SQLCipher target: `path` encrypted with `key`; cipher pragmas among `settings`
    /// ([`CIPHER_PRAGMAS`]) are applied after the key. Needs the `sqlcipher` feature.
    pub fn encrypted(path: &Path, settings: &[(String, String)], key: Key) -> TargetResult<Self> {
        if !crate::cipher::BUILT_WITH_SQLCIPHER {
            return Err(TargetError::config(
                "sqlcipher: targets need a dbscope built with SQLCipher:                  cargo build --release --features sqlcipher (needs libssl-dev; docs/tde.md)",
            ));
        }
        for (name, _) in settings {
            crate::cipher::check_cipher_setting(name)?;
        }
        let mut t = SqliteTarget::new(path, settings)?;
        t.key = Some(key);
        Ok(t)
    }

    fn open(&self) -> TargetResult<Connection> {
        self.open_timed().map(|o| o.conn)
    }

    /// `sqlcipher:PATH` or `sqlite:PATH`, for messages.
    fn spec(&self) -> String {
        let scheme = if self.key.is_some() {
            "sqlcipher"
        } else {
            "sqlite"
        };
        format!("{scheme}:{}", self.path.display())
    }

    /// Keys a new connection: the key, the cipher pragmas, then a first read that derives the
    /// page key and checks it (a wrong key reads as "file is not a database"). Errors never hold
    /// the key: SQLite's message for `PRAGMA key` is replaced, not passed on.
    fn apply_key(
        &self,
        conn: &Connection,
        key: &Key,
    ) -> TargetResult<(std::time::Instant, Duration)> {
        conn.execute_batch(&key.pragma()).map_err(|e| {
            let code = match &e {
                rusqlite::Error::SqliteFailure(f, _) => format!("{:?}", f.code),
                _ => "other".into(),
            };
            TargetError::config(format!(
                "{}: SQLCipher refused the key ({code}; the key is not shown)",
                self.spec()
            ))
        })?;
        // SQLCipher logs a failed page check to stderr ("hmac check failed for pgno=1") before
        // the error below says it plainly; the run's output stays dbscope's.
        let _ = run_pragma(conn, "PRAGMA cipher_log_level = NONE");
        for (name, value) in &self.settings {
            if CIPHER_PRAGMAS.contains(&name.as_str()) {
                run_pragma(conn, &format!("PRAGMA {name} = {value}")).map_err(|e| {
                    TargetError::config(format!(
                        "--set {name}={value}: SQLCipher refused it: {}",
                        e.message
                    ))
                })?;
            }
        }
        let started = std::time::Instant::now();
        let read = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
            r.get::<_, i64>(0)
        });
        let took = started.elapsed();
        match read {
            Ok(_) => Ok((started, took)),
            Err(rusqlite::Error::SqliteFailure(f, _))
                if f.code == rusqlite::ErrorCode::NotADatabase =>
            {
                Err(TargetError {
                    class: "sqlite:WrongKey".into(),
                    sqlstate: None,
                    mysql_code: None,
                    message: format!(
                        "{}: the key does not open this file: a wrong key, cipher settings other \
                         than the file was written with (--set kdf_iter, cipher_page_size, \
                         cipher_use_hmac, cipher_hmac_algorithm, cipher_kdf_algorithm), or not a \
                         SQLCipher file (SQLite said: file is not a database)",
                        self.spec()
                    ),
                    connection_lost: false,
                })
            }
            Err(e) => Err(classify(e)),
        }
    }

    fn open_timed(&self) -> TargetResult<Opened> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| {
            let hint = match self.path.parent() {
                Some(p) if !p.as_os_str().is_empty() && !p.exists() => {
                    format!(" (directory {} does not exist)", p.display())
                }
                _ => String::new(),
            };
            TargetError::config(format!(
                "cannot open sqlite:{}: {e}{hint}",
                self.path.display()
            ))
        })?;
        // A prompt busy handler so that every session makes progress; `--set busy_timeout`
        // (applied below) replaces it with SQLite's own.
        conn.busy_handler(Some(prompt_busy_handler))
            .map_err(classify)?;
        conn.set_prepared_statement_cache_capacity(32);
        let key_derivation = match &self.key {
            Some(key) => Some(self.apply_key(&conn, key)?),
            None => None,
        };
        let known = known_pragmas(&conn)?;
        for (name, value) in &self.settings {
            if self.key.is_some() && CIPHER_PRAGMAS.contains(&name.as_str()) {
                continue; // applied with the key
            }
            if !known.iter().any(|k| k == name) {
                return Err(TargetError::config(format!(
                    "--set {name}={value}: SQLite has no pragma named {name:?} (see PRAGMA pragma_list)"
                )));
            }
            run_pragma(&conn, &format!("PRAGMA {name} = {value}")).map_err(|e| {
                TargetError::config(format!(
                    "--set {name}={value}: SQLite refused it: {}",
                    e.message
                ))
            })?;
        }
        Ok(Opened {
            conn,
            key_derivation,
        })
    }
}

fn known_pragmas(conn: &Connection) -> TargetResult<Vec<String>> {
    let mut st = conn.prepare("PRAGMA pragma_list").map_err(classify)?;
    let names = st
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(classify)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(classify)?;
    Ok(names)
}

/// Runs a pragma and returns its first value as text (pragmas may or may not return a row).
fn run_pragma(conn: &Connection, sql: &str) -> TargetResult<Option<String>> {
    let mut st = conn.prepare(sql).map_err(classify)?;
    let mut rows = st.query([]).map_err(classify)?;
    let mut first = None;
    while let Some(row) = rows.next().map_err(classify)? {
        if first.is_none() {
            let v: Value = row.get(0).map_err(classify)?;
            first = Some(match v {
                Value::Null => "NULL".to_string(),
                Value::Integer(i) => i.to_string(),
                Value::Real(f) => f.to_string(),
                Value::Text(t) => t,
                Value::Blob(b) => format!("<{} bytes>", b.len()),
            });
        }
    }
    Ok(first)
}

fn classify(e: rusqlite::Error) -> TargetError {
    let class = match &e {
        rusqlite::Error::SqliteFailure(f, _) => format!("sqlite:{:?}", f.code),
        _ => "sqlite:other".to_string(),
    };
    TargetError {
        class,
        sqlstate: None,
        mysql_code: None,
        message: e.to_string(),
        connection_lost: false,
    }
}

impl Target for SqliteTarget {
    fn kind(&self) -> &'static str {
        "sqlite"
    }
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }
    fn connect(&self) -> TargetResult<Box<dyn Session>> {
        Ok(Box::new(SqliteSession {
            conn: self.open()?,
            stmts: Vec::new(),
            target: self.clone(),
            carried: Vec::new(),
        }))
    }
    fn data_path(&self) -> Option<PathBuf> {
        Some(std::path::absolute(&self.path).unwrap_or_else(|_| self.path.clone()))
    }
    fn describe(&self) -> TargetResult<TargetInfo> {
        // SQLCipher derives the key at the first read of page 1: a new (empty) file has none yet.
        let had_pages = std::fs::metadata(&self.path).is_ok_and(|m| m.len() > 0);
        let Opened {
            conn,
            key_derivation,
        } = self.open_timed()?;
        let mut effective = BTreeMap::new();
        let cipher_names = match self.key {
            Some(_) => &CIPHER_REPORTED[..],
            None => &[],
        };
        let names = REPORTED
            .iter()
            .chain(cipher_names)
            .map(|s| s.to_string())
            .chain(self.settings.iter().map(|(n, _)| n.clone()));
        for name in names {
            if effective.contains_key(&name) {
                continue;
            }
            if let Some(v) = run_pragma(&conn, &format!("PRAGMA {name}"))? {
                effective.insert(name, v);
            }
        }
        effective.insert("busy_handler".into(), busy_handler_text(&self.settings));
        // `--aes-ni off` runs in a child with OpenSSL's AES-NI masked: said, with OpenSSL's AES
        // rate in this process (and in the parent, unmasked, when it measured it).
        if let Ok(mask) = std::env::var("OPENSSL_ia32cap") {
            effective.insert("openssl_ia32cap".into(), mask);
        }
        if let Ok(rate) = std::env::var(crate::cipher::UNMASKED_RATE_ENV) {
            effective.insert("aes_probe_unmasked_mb_s".into(), rate);
        }
        if key_derivation.is_some() {
            if let Some(rate) = crate::cipher::aes_probe_mb_s(100) {
                effective.insert("aes_probe_mb_s".into(), format!("{rate:.0}"));
            }
        }
        if let Some((_, d)) = key_derivation {
            effective.insert("encryption".into(), "SQLCipher (keyed)".into());
            // The first read after PRAGMA key: PBKDF2 over the passphrase, then one page.
            effective.insert(
                "key_derivation_ms".into(),
                match had_pages {
                    true => format!("{:.3}", d.as_secs_f64() * 1e3),
                    false => "- (a new file: the key is derived at its first write)".into(),
                },
            );
        }
        let location = std::path::absolute(&self.path)
            .unwrap_or_else(|_| self.path.clone())
            .display()
            .to_string();
        Ok(TargetInfo {
            kind: "sqlite".into(),
            location,
            server_version: match crate::cipher::BUILT_WITH_SQLCIPHER {
                true => format!("SQLite {} (SQLCipher build)", rusqlite::version()),
                false => format!("SQLite {}", rusqlite::version()),
            },
            settings_requested: self.settings.clone(),
            settings_effective: effective,
        })
    }
}

struct SqliteSession {
    conn: Connection,
    stmts: Vec<String>,
    /// How to open the connection again ([`Session::reopen`]).
    target: SqliteTarget,
    /// The counters of the connections closed by [`Session::reopen`], so that
    /// [`Session::status_counters`] stays cumulative over the session.
    carried: Vec<(&'static str, i64)>,
}

impl ToSql for Param {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Param::Int(i) => ToSqlOutput::from(*i),
            Param::Text(s) => ToSqlOutput::from(s.as_str()),
        })
    }
}

/// The cumulative `sqlite3_db_status` counters a session reports, by name.
const DB_STATUS: [(&str, i32); 4] = [
    ("cache_hit", rusqlite::ffi::SQLITE_DBSTATUS_CACHE_HIT),
    ("cache_miss", rusqlite::ffi::SQLITE_DBSTATUS_CACHE_MISS),
    ("cache_write", rusqlite::ffi::SQLITE_DBSTATUS_CACHE_WRITE),
    ("cache_spill", rusqlite::ffi::SQLITE_DBSTATUS_CACHE_SPILL),
];

/// Reads one `sqlite3_db_status` counter of `conn` (its current value, not reset).
#[allow(unsafe_code)]
fn db_status(conn: &Connection, op: i32) -> Option<i64> {
    let (mut cur, mut hi) = (0i32, 0i32);
    // SAFETY: the handle is valid while `conn` lives, and this thread owns `conn` (sessions are
    // not shared between threads), so nothing else uses the handle during the call.
    let rc = unsafe { rusqlite::ffi::sqlite3_db_status(conn.handle(), op, &mut cur, &mut hi, 0) };
    (rc == rusqlite::ffi::SQLITE_OK).then_some(cur as i64)
}

impl Session for SqliteSession {
    fn reopen(&mut self) -> TargetResult<Option<(std::time::Instant, Duration)>> {
        let opened = self.target.open_timed()?;
        self.carried = self.status_counters();
        // The old connection (and its page cache) is closed when replaced.
        self.conn = opened.conn;
        Ok(opened.key_derivation)
    }
    fn status_counters(&mut self) -> Vec<(&'static str, i64)> {
        DB_STATUS
            .iter()
            .filter_map(|&(name, op)| {
                let before = self.carried.iter().find(|c| c.0 == name).map_or(0, |c| c.1);
                db_status(&self.conn, op).map(|v| (name, before + v))
            })
            .collect()
    }
    fn batch(&mut self, sql: &str) -> TargetResult<()> {
        self.conn.execute_batch(sql).map_err(classify)
    }
    fn prepare(&mut self, sql: &str) -> TargetResult<StmtId> {
        // Compile once now so a bad statement fails at setup; executions use the statement cache.
        self.conn.prepare_cached(sql).map_err(classify)?;
        self.stmts.push(sql.to_string());
        Ok(StmtId(self.stmts.len() - 1))
    }
    fn execute(&mut self, stmt: StmtId, params: &[Param]) -> TargetResult<u64> {
        let sql = self
            .stmts
            .get(stmt.0)
            .ok_or_else(|| TargetError::config("unknown prepared statement"))?;
        let mut st = self.conn.prepare_cached(sql).map_err(classify)?;
        if st.column_count() > 0 {
            // A query (a `lookup`): step through its rows and count them, as PostgreSQL's
            // execute does; rusqlite's `execute` refuses statements that return rows.
            let mut rows = st
                .query(rusqlite::params_from_iter(params.iter()))
                .map_err(classify)?;
            let mut n = 0u64;
            while rows.next().map_err(classify)?.is_some() {
                n += 1;
            }
            return Ok(n);
        }
        let n = st
            .execute(rusqlite::params_from_iter(params.iter()))
            .map_err(classify)?;
        Ok(n as u64)
    }
    fn query_i64(&mut self, sql: &str) -> TargetResult<Vec<i64>> {
        let mut st = self.conn.prepare(sql).map_err(classify)?;
        let v = st
            .query_map([], |r| r.get::<_, i64>(0))
            .map_err(classify)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(classify)?;
        Ok(v)
    }
    fn query_rows(
        &mut self,
        sql: &str,
        params: &[Param],
    ) -> TargetResult<Vec<Vec<Option<String>>>> {
        let mut st = self.conn.prepare(sql).map_err(classify)?;
        let ncols = st.column_count();
        let mut rows = st
            .query(rusqlite::params_from_iter(params.iter()))
            .map_err(classify)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(classify)? {
            out.push(row_texts(row, ncols)?);
        }
        Ok(out)
    }
    fn script(
        &mut self,
        send: ScriptSend<'_>,
        params: &[&str],
        keep_rows: bool,
    ) -> TargetResult<Vec<StmtResult>> {
        let sql = match send {
            ScriptSend::Simple(sql) => {
                // Every statement of a compound command in turn, as PostgreSQL's simple query.
                let mut out = Vec::new();
                let mut batch = rusqlite::Batch::new(&self.conn, sql);
                while let Some(mut st) =
                    rusqlite::fallible_iterator::FallibleIterator::next(&mut batch)
                        .map_err(classify)?
                {
                    out.push(script_step(&self.conn, &mut st, &[], keep_rows)?);
                }
                return Ok(out);
            }
            ScriptSend::Unnamed(sql) => sql,
            ScriptSend::Prepared(id) => self
                .stmts
                .get(id.0)
                .ok_or_else(|| TargetError::config("unknown prepared statement"))?,
        };
        let mut st = self.conn.prepare_cached(sql).map_err(classify)?;
        Ok(vec![script_step(&self.conn, &mut st, params, keep_rows)?])
    }
    fn begin(&mut self) -> TargetResult<()> {
        // IMMEDIATE takes the write lock up front, so two sessions never deadlock upgrading locks.
        self.conn.execute_batch("BEGIN IMMEDIATE").map_err(classify)
    }
    fn commit(&mut self) -> TargetResult<()> {
        self.conn.execute_batch("COMMIT").map_err(classify)
    }
    fn rollback(&mut self) -> TargetResult<()> {
        if self.conn.is_autocommit() {
            return Ok(());
        }
        self.conn.execute_batch("ROLLBACK").map_err(classify)
    }
}

/// A row's `ncols` columns as text (`None` for NULL): integers and text as stored, reals in
/// Rust's shortest text that reads back as the same double.
fn row_texts(row: &rusqlite::Row<'_>, ncols: usize) -> TargetResult<Vec<Option<String>>> {
    use rusqlite::types::ValueRef;
    (0..ncols)
        .map(|i| {
            Ok(match row.get_ref(i).map_err(classify)? {
                ValueRef::Null => None,
                ValueRef::Integer(v) => Some(v.to_string()),
                ValueRef::Real(v) => Some(v.to_string()),
                ValueRef::Text(t) | ValueRef::Blob(t) => {
                    Some(String::from_utf8_lossy(t).into_owned())
                }
            })
        })
        .collect()
}

/// A script's parameter as SQLite binds it: an integer when the text is one (pgbench's values
/// mostly are, and `LIMIT` wants one), else the text (column affinity converts it where needed).
fn script_param(p: &str) -> ToSqlOutput<'_> {
    match p.parse::<i64>() {
        Ok(i) => ToSqlOutput::from(i),
        Err(_) => ToSqlOutput::from(p),
    }
}

/// Runs one statement of a script with its parameters: the rows it returns (kept when asked) or
/// the rows it changed.
fn script_step(
    conn: &Connection,
    st: &mut rusqlite::Statement<'_>,
    params: &[&str],
    keep_rows: bool,
) -> TargetResult<StmtResult> {
    if st.parameter_count() != params.len() {
        return Err(TargetError {
            class: "sqlite:Bind".into(),
            sqlstate: None,
            mysql_code: None,
            message: format!(
                "the statement has {} parameters and the command gives {}",
                st.parameter_count(),
                params.len()
            ),
            connection_lost: false,
        });
    }
    for (i, p) in params.iter().enumerate() {
        st.raw_bind_parameter(i + 1, script_param(p))
            .map_err(classify)?;
    }
    let ncols = st.column_count();
    let mut out = StmtResult::default();
    if keep_rows {
        out.columns = st.column_names().into_iter().map(str::to_owned).collect();
    }
    let mut rows = st.raw_query();
    let mut n = 0u64;
    while let Some(row) = rows.next().map_err(classify)? {
        n += 1;
        if keep_rows {
            out.rows.push(row_texts(row, ncols)?);
        }
    }
    out.affected = if ncols > 0 { n } else { conn.changes() };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pragmas_apply_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let t = SqliteTarget::new(
            &dir.path().join("a.db"),
            &[
                ("journal_mode".into(), "wal".into()),
                ("synchronous".into(), "full".into()),
            ],
        )
        .unwrap();
        let info = t.describe().unwrap();
        assert_eq!(info.settings_effective["journal_mode"], "wal");
        assert_eq!(info.settings_effective["synchronous"], "2");
        assert!(info.server_version.starts_with("SQLite 3."));
        let mut s = t.connect().unwrap();
        s.batch("CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER)")
            .unwrap();
        let ins = s.prepare("INSERT INTO t VALUES (?1, ?2)").unwrap();
        s.begin().unwrap();
        assert_eq!(s.execute(ins, &[Param::Int(1), Param::Int(5)]).unwrap(), 1);
        s.commit().unwrap();
        assert_eq!(s.query_i64("SELECT v FROM t").unwrap(), vec![5]);
        // A prepared query counts the rows it returns.
        let sel = s.prepare("SELECT v FROM t WHERE id = ?1").unwrap();
        assert_eq!(s.execute(sel, &[Param::Int(1)]).unwrap(), 1);
        assert_eq!(s.execute(sel, &[Param::Int(2)]).unwrap(), 0);
    }

    #[test]
    fn unknown_pragma_and_bad_path_are_clear() {
        let dir = tempfile::tempdir().unwrap();
        let t = SqliteTarget::new(
            &dir.path().join("a.db"),
            &[("jurnal_mode".into(), "wal".into())],
        )
        .unwrap();
        let e = t.describe().unwrap_err();
        assert!(e.message.contains("no pragma named \"jurnal_mode\""), "{e}");
        let t = SqliteTarget::new(&dir.path().join("nope/a.db"), &[]).unwrap();
        let e = t.describe().unwrap_err();
        assert!(e.message.contains("does not exist"), "{e}");
    }
}

/// SQLCipher targets (issue 31): built with `--features sqlcipher`.
#[cfg(all(test, feature = "sqlcipher"))]
mod cipher_tests {
    use super::*;

    const MARKER: &str = "row-marker-5e1f";

    fn key(dir: &Path, text: &str) -> Key {
        let f = dir.join("key");
        std::fs::write(&f, format!("{text}\n")).unwrap();
        Key::load(Some(&f)).unwrap()
    }

    fn fill(t: &SqliteTarget) -> Vec<Vec<Option<String>>> {
        let mut s = t.connect().unwrap();
        s.batch("CREATE TABLE t(id INTEGER PRIMARY KEY, pad TEXT)")
            .unwrap();
        s.begin().unwrap();
        let ins = s.prepare("INSERT INTO t VALUES (?1, ?2)").unwrap();
        for i in 1..=500 {
            s.execute(ins, &[Param::Int(i), Param::Text(format!("{MARKER}-{i}"))])
                .unwrap();
        }
        s.commit().unwrap();
        s.query_rows("SELECT count(*), sum(length(pad)), max(pad) FROM t", &[])
            .unwrap()
    }

    #[test]
    fn clear_and_encrypted_answer_alike_and_only_the_clear_file_shows_rows() {
        let d = tempfile::tempdir().unwrap();
        let clear = SqliteTarget::new(&d.path().join("clear.db"), &[]).unwrap();
        let k = key(d.path(), "correct horse");
        let settings = [("kdf_iter".to_string(), "4000".to_string())];
        let enc = SqliteTarget::encrypted(&d.path().join("enc.db"), &settings, k.clone()).unwrap();
        assert_eq!(fill(&clear), fill(&enc));
        let bytes = |f: &str| std::fs::read(d.path().join(f)).unwrap();
        let has = |b: &[u8]| b.windows(MARKER.len()).any(|w| w == MARKER.as_bytes());
        assert!(has(&bytes("clear.db")), "the clear file holds the rows");
        assert!(!has(&bytes("enc.db")), "an encrypted page shows no row");
        assert!(!bytes("enc.db").starts_with(b"SQLite format 3"));

        let info = enc.describe().unwrap();
        let e = &info.settings_effective;
        assert_eq!(e["kdf_iter"], "4000", "{e:?}");
        assert!(e["cipher_version"].starts_with('4'), "{e:?}");
        assert_eq!(e["cipher_page_size"], "4096");
        assert!(e["cipher_hmac_algorithm"].contains("SHA512"), "{e:?}");
        assert!(e.contains_key("key_derivation_ms"));
        let json = format!("{info:?}");
        assert!(!json.contains("correct horse"), "{json}");
    }

    #[test]
    fn a_wrong_key_is_a_clear_error_that_never_shows_a_key() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("enc.db");
        let right = SqliteTarget::encrypted(&path, &[], key(d.path(), "right-key-1")).unwrap();
        fill(&right);
        let wrong = SqliteTarget::encrypted(&path, &[], key(d.path(), "wrong-key-2")).unwrap();
        let e = wrong.connect().err().expect("a wrong key must fail");
        assert_eq!(e.class, "sqlite:WrongKey");
        assert!(e.message.contains("the key does not open this file"), "{e}");
        assert!(!e.message.contains("wrong-key-2") && !e.message.contains("right-key-1"));
        // Other cipher settings than the file's read as the same refusal.
        let other = SqliteTarget::encrypted(
            &path,
            &[("kdf_iter".into(), "1000".into())],
            key(d.path(), "right-key-1"),
        )
        .unwrap();
        assert_eq!(other.describe().unwrap_err().class, "sqlite:WrongKey");
        // A reopened session derives its key again.
        let mut s = right.connect().unwrap();
        assert!(s.reopen().unwrap().is_some());
        assert_eq!(s.query_i64("SELECT count(*) FROM t").unwrap(), vec![500]);
    }
}
