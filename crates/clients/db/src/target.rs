//! The shared vocabulary of every target: the [`Target`] and [`Session`] traits, [`Dialect`],
//! [`Param`], [`StmtId`] and [`TargetError`]. A leaf module: the crate root re-exports it and the
//! target modules (`null`, `pg`, `sqlite`) implement it, so neither imports the other back.

use std::collections::BTreeMap;

use dbscope_core::TargetInfo;
use dbscope_pgwire::SqlState;

/// One statement's result ([`Session::script`]): rows affected or returned, and the columns and
/// rows when asked for.
pub use dbscope_pgwire::StmtResult;

/// A failure talking to the database.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct TargetError {
    /// Short class for counting, e.g. `pg:40P01`, `pg:connection`, `sqlite:DatabaseBusy` (written
    /// into run files as is).
    pub class: String,
    /// The server's SQLSTATE when PostgreSQL reported the error (`class` is then `pg:` and the
    /// code), for callers that decide by code: retry on [`SqlState::is_serialization_failure`],
    /// reconnect on [`SqlState::ends_session`].
    pub sqlstate: Option<SqlState>,
    /// The server's error number when MariaDB/MySQL reported the error (`class` is then
    /// `mysql:` and the number), for callers that decide by code: retry on 1213 (deadlock) and
    /// 1205 (lock wait timeout), [`TargetError::is_retryable_conflict`].
    pub mysql_code: Option<u16>,
    /// The database's message (never contains a password).
    pub message: String,
    /// True when the session's connection is gone and must be re-established.
    pub connection_lost: bool,
}

impl TargetError {
    /// `text` read as an integer, or a `<db>:type` error saying what came instead (`db`: the
    /// target's class prefix, `pg` or `mysql`).
    pub fn parse_i64(db: &str, text: &str) -> TargetResult<i64> {
        text.parse::<i64>().map_err(|_| TargetError {
            class: format!("{db}:type"),
            sqlstate: None,
            mysql_code: None,
            message: format!("expected an integer, got {text:?}"),
            connection_lost: false,
        })
    }

    /// An error in the user's input or setup (bad URI, unknown setting): not a database failure.
    pub fn config(message: impl Into<String>) -> Self {
        TargetError {
            class: "config".into(),
            sqlstate: None,
            mysql_code: None,
            message: message.into(),
            connection_lost: false,
        }
    }

    /// A workload or feature that does not run on MariaDB/MySQL yet: a `config` error naming it.
    pub fn not_on_mysql(what: &str) -> Self {
        TargetError::config(format!(
            "{what} does not run on MariaDB/MySQL targets yet (issue 30); \
             commit runs there, or use a sqlite: or postgres:// target"
        ))
    }

    /// True for a conflict between transactions that succeeds when the transaction is run
    /// again from its start: PostgreSQL's serialization failure and deadlock (40001, 40P01),
    /// MariaDB/MySQL's deadlock (1213) and lock wait timeout (1205), SQLite's busy and locked
    /// database. What pgbench (and the script workload) retries.
    pub fn is_retryable_conflict(&self) -> bool {
        self.sqlstate.is_some_and(|s| s.is_serialization_failure())
            || self
                .mysql_code
                .is_some_and(|c| MYSQL_RETRYABLE.contains(&c))
            || matches!(
                self.class.as_str(),
                "sqlite:DatabaseBusy" | "sqlite:DatabaseLocked"
            )
    }

    /// True for an error in the user's input or setup ([`TargetError::config`]).
    pub fn is_config(&self) -> bool {
        self.class == "config"
    }

    /// True when the database itself failed or refused (a `pg:…` or `sqlite:…` class: a server's
    /// error, a lost or refused connection), as opposed to the user's input (`config`) or a
    /// workload's own check of the answers (`check:…`, `tpch:…`).
    pub fn is_database(&self) -> bool {
        self.class.starts_with("pg:")
            || self.class.starts_with("sqlite:")
            || self.class.starts_with("mysql:")
    }
}

/// MariaDB/MySQL errors after which the transaction was rolled back (1213
/// ER_LOCK_DEADLOCK) or its statement was (1205 ER_LOCK_WAIT_TIMEOUT; with the default
/// `innodb_rollback_on_timeout=OFF` the transaction stays open, so the retry rolls it back first,
/// as every retry does).
pub const MYSQL_RETRYABLE: [u16; 2] = [1213, 1205];

/// Result with [`TargetError`].
pub type TargetResult<T> = Result<T, TargetError>;

/// A parameter of a prepared statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Param {
    /// A 64-bit integer.
    Int(i64),
    /// Text.
    Text(String),
}

/// How a statement of a user's script is sent ([`Session::script`]; pgbench's `-M`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScriptSend<'a> {
    /// The simple-query protocol: the text as is (variables already substituted); may hold
    /// several statements.
    Simple(&'a str),
    /// The extended protocol's unnamed statement: parsed every time, parameters `$1`… bound.
    Unnamed(&'a str),
    /// A statement prepared on this session ([`Session::prepare`]).
    Prepared(StmtId),
}

/// What a pipeline gave back at its end ([`Session::pipeline_end`]): every queued statement's
/// result (`None`: skipped after a failure) and the first failure with its statement's index.
pub type PipelineEnd = (Vec<Option<StmtResult>>, Option<(usize, TargetError)>);

/// Handle of a statement prepared in one [`Session`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StmtId(pub usize);

/// SQL dialect details a workload needs to write portable statements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite: `?1` placeholders.
    Sqlite,
    /// PostgreSQL: `$1` placeholders.
    Postgres,
    /// MariaDB/MySQL: `?` placeholders.
    Mysql,
    /// The null target accepts anything.
    Null,
}

impl Dialect {
    /// Placeholder for the `i`-th parameter, from 1.
    pub fn placeholder(&self, i: usize) -> String {
        match self {
            Dialect::Sqlite => format!("?{i}"),
            Dialect::Mysql => "?".to_string(),
            Dialect::Postgres | Dialect::Null => format!("${i}"),
        }
    }
}

/// What takes a streamed row ([`Session::query_each`]): its columns as text, `None` for NULL.
pub type RowSink<'a> = dyn FnMut(&[Option<&[u8]>]) -> Result<(), String> + 'a;

/// A database to run against. Shared by all sessions; each session opens its own connection.
pub trait Target: Send + Sync {
    /// `sqlite`, `postgres` or `null`.
    fn kind(&self) -> &'static str;
    /// The SQL dialect.
    fn dialect(&self) -> Dialect;
    /// Opens a session (one connection) with the requested settings applied.
    fn connect(&self) -> TargetResult<Box<dyn Session>>;
    /// Connects once, applies the settings, and reads back the server version and the effective
    /// values of the relevant settings, for the manifest.
    fn describe(&self) -> TargetResult<TargetInfo>;
    /// What the target knows of the database's tables now, as entries of the manifest's
    /// effective settings (MariaDB/MySQL: `engine.TABLE`, each table's storage engine).
    /// [`Target::describe`] includes them; a run reads them again once its workload has made
    /// its tables, so the tables the run created are listed too. None for other targets.
    fn table_facts(&self) -> TargetResult<BTreeMap<String, String>> {
        Ok(BTreeMap::new())
    }
    /// The database file on this machine (SQLite), for its size and the device holding it.
    fn data_path(&self) -> Option<std::path::PathBuf> {
        None
    }
    /// Whether this target's sessions may share a client thread ([`Session::multiplex`]), known
    /// before any connects, so that each client thread opens its own: PostgreSQL's can,
    /// MariaDB/MySQL's can on a Unix socket (which [`Session::multiplex`] tells once connected),
    /// SQLite's and null's run in the client's thread and keep a thread per session.
    fn sessions_may_share_threads(&self) -> bool {
        false
    }
    /// True when, without `--threads`, each session should get a thread of its own although the
    /// sessions could share: where sharing was measured to cost the server more than it saves
    /// (MariaDB point selects, docs/targets.md).
    fn own_thread_by_default(&self) -> bool {
        false
    }
}

/// One connection to the database, used by one thread.
pub trait Session: Send {
    /// Runs statements that take no parameters and return nothing (DDL, setup).
    fn batch(&mut self, sql: &str) -> TargetResult<()>;
    /// Prepares a statement for repeated execution.
    fn prepare(&mut self, sql: &str) -> TargetResult<StmtId>;
    /// Executes a prepared statement; returns the rows affected (or returned, for queries).
    fn execute(&mut self, stmt: StmtId, params: &[Param]) -> TargetResult<u64>;
    /// Runs a query and returns the first column of every row as i64 (setup checks, tests).
    fn query_i64(&mut self, sql: &str) -> TargetResult<Vec<i64>>;
    /// Runs one statement with `params` bound to its placeholders and returns every row, each
    /// column as text (`None` for NULL): SQLite's integers and text as stored and its reals in
    /// Rust's shortest round-trip form; PostgreSQL's own text output (NUMERIC exact to the digit).
    fn query_rows(&mut self, sql: &str, params: &[Param])
        -> TargetResult<Vec<Vec<Option<String>>>>;
    /// Starts a transaction.
    fn begin(&mut self) -> TargetResult<()>;
    /// Commits the transaction: the operation whose latency is the redo/WAL sync.
    fn commit(&mut self) -> TargetResult<()>;
    /// Rolls back the transaction (after an error); errors here are ignored by callers.
    fn rollback(&mut self) -> TargetResult<()>;
    /// Names the connection in the server's own views (PostgreSQL's `application_name`), so that
    /// the run's sampler can find its backends. Targets without such a name ignore it.
    fn set_label(&mut self, label: &str) -> TargetResult<()> {
        let _ = label;
        Ok(())
    }
    /// The connection's own cumulative counters (SQLite's `sqlite3_db_status` cache hits, misses,
    /// writes, spills since the connection opened); empty where the target keeps none per
    /// connection (PostgreSQL's are read from its views instead).
    fn status_counters(&mut self) -> Vec<(&'static str, i64)> {
        Vec::new()
    }
    /// Closes the connection and opens a new one with the same settings (an empty page cache):
    /// returns when the new connection's key derivation started and how long it took, where it
    /// has one (SQLCipher). Targets that cannot reopen say so.
    fn reopen(&mut self) -> TargetResult<Option<(std::time::Instant, std::time::Duration)>> {
        Err(TargetError::config(
            "this target cannot reopen a session's connection",
        ))
    }
    /// The server's id of this connection (MariaDB/MySQL's `CONNECTION_ID()`, the
    /// `PROCESSLIST_ID` of `performance_schema.threads`), so the run's observer can find the
    /// run's own threads; `None` where the target has none to give.
    fn connection_id(&self) -> Option<u64> {
        None
    }
    /// True when the server forgets this connection's own statistics as soon as it closes
    /// (MariaDB/MySQL's per-thread `performance_schema` summaries): the runner then keeps the
    /// connection open until the run's end snapshot has read them.
    fn stats_end_with_connection(&self) -> bool {
        false
    }
    /// Lets this session share its thread with others ([`mux`](crate::mux)): its connection
    /// waits for the server in [`mux::wait_fd`](crate::mux::wait_fd) from now on. Returns false
    /// where the target cannot (SQLite and null run in the client's thread; they keep a thread
    /// per session).
    fn multiplex(&mut self) -> TargetResult<bool> {
        Ok(false)
    }
    /// Runs one command of a user's script, sent as `send` says with `params` (text, as pgbench
    /// sends them) for its `$n`; returns each statement's result, with columns and rows when
    /// `keep_rows` (for `\gset`).
    fn script(
        &mut self,
        send: ScriptSend<'_>,
        params: &[&str],
        keep_rows: bool,
    ) -> TargetResult<Vec<StmtResult>> {
        let _ = (send, params, keep_rows);
        Err(TargetError::config("this target does not run scripts"))
    }
    /// True when the target can pipeline statements ([`Session::pipeline_queue`]); where it
    /// cannot, a script's pipeline runs its statements one after another.
    fn can_pipeline(&self) -> bool {
        false
    }
    /// Sends one statement of a pipeline without waiting for its result (extended or prepared
    /// sends only).
    fn pipeline_queue(
        &mut self,
        send: ScriptSend<'_>,
        params: &[&str],
        keep_rows: bool,
    ) -> TargetResult<()> {
        let _ = (send, params, keep_rows);
        Err(TargetError::config(
            "this target cannot pipeline statements",
        ))
    }
    /// Ends a sync segment of the pipeline (`\syncpipeline`).
    fn pipeline_sync(&mut self) -> TargetResult<()> {
        Err(TargetError::config(
            "this target cannot pipeline statements",
        ))
    }
    /// Ends the pipeline: every queued statement's result (`None`: skipped after a failure) and
    /// the first failure with the index of its statement.
    fn pipeline_end(&mut self) -> TargetResult<PipelineEnd> {
        Err(TargetError::config(
            "this target cannot pipeline statements",
        ))
    }
    /// Bulk-loads with PostgreSQL's `COPY … FROM STDIN` (`sql` is the COPY statement). `fill`
    /// appends the next chunk of data to the buffer and returns `Ok(false)` after the last one; an
    /// `Err` aborts the COPY (nothing is loaded) and is returned as a `config`-class error.
    /// Returns the rows copied. Targets without COPY say so.
    fn copy_in(
        &mut self,
        sql: &str,
        fill: &mut dyn FnMut(&mut Vec<u8>) -> Result<bool, String>,
    ) -> TargetResult<u64> {
        let _ = (sql, fill);
        Err(TargetError::config(
            "COPY … FROM STDIN is only available on PostgreSQL targets",
        ))
    }
    /// Runs the query `sql` and hands its rows to `each` one at a time as they arrive, each
    /// column as the server's text of it (`None` for NULL), without holding the result in
    /// memory; an `Err` from `each` stops it and comes back as a `config`-class error. Returns
    /// the rows read. Targets that cannot stream a result say so.
    fn query_each(&mut self, sql: &str, each: &mut RowSink<'_>) -> TargetResult<u64> {
        let _ = (sql, each);
        Err(TargetError::config(
            "streaming a query's rows is only available on MariaDB/MySQL targets",
        ))
    }
}
