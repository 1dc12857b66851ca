//! The PostgreSQL target: a real server, reached through libpq-style URIs or key/value strings.

use std::collections::BTreeMap;

use dbscope_core::redact::redact;
use dbscope_core::TargetInfo;

use dbscope_pgwire::conninfo::{self, ConnInfo, Defaults};
use dbscope_pgwire::{ConnectError, WireConn, WireError};

use crate::target::{
    Dialect, Param, ScriptSend, Session, StmtId, StmtResult, Target, TargetError, TargetResult,
};

/// Settings always read back and recorded, besides those the user sets.
const REPORTED: [&str; 6] = [
    "synchronous_commit",
    "wal_sync_method",
    "fsync",
    "commit_delay",
    "wal_level",
    "shared_buffers",
];

/// A PostgreSQL server.
pub struct PgTarget {
    info: ConnInfo,
    location: String,
    settings: Vec<(String, String)>,
}

impl std::fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTarget")
            .field("location", &self.location)
            .finish()
    }
}

impl PgTarget {
    /// Parses and resolves a connection string by libpq's rules ([`conninfo`]): query parameters
    /// override the URI's authority; missing parts come from PGHOST, PGPORT, PGUSER, PGPASSWORD,
    /// PGDATABASE, … then the OS user and the socket in /var/run/postgresql (else /tmp).
    pub fn new(spec: &str, settings: &[(String, String)]) -> TargetResult<Self> {
        Self::with_defaults(spec, settings, &Defaults::system())
    }

    fn with_defaults(
        spec: &str,
        settings: &[(String, String)],
        defaults: &Defaults,
    ) -> TargetResult<Self> {
        let info = conninfo::resolve(spec, defaults).map_err(|e| {
            TargetError::config(format!(
                "PostgreSQL connection string {:?}: {}",
                redact(spec),
                redact(&e.to_string())
            ))
        })?;
        let location = info.location(None);
        Ok(PgTarget {
            info,
            location,
            settings: settings.to_vec(),
        })
    }

    /// Connects to the first host that answers; returns the connection and that host's location.
    fn open(&self) -> TargetResult<(WireConn, String)> {
        let timeout = self.info.connect_timeout.limit();
        let (mut conn, used) = WireConn::connect(&self.info, timeout).map_err(|e| match e {
            ConnectError::BadString(e) => TargetError::config(redact(&e.0)),
            ConnectError::Unreachable(why) => TargetError {
                class: "pg:connection".into(),
                sqlstate: None,
                mysql_code: None,
                message: redact(&format!(
                    "cannot connect to PostgreSQL at {}: {}",
                    self.location,
                    why.join("; ")
                )),
                connection_lost: true,
            },
            ConnectError::Refused { endpoint, error } => TargetError {
                class: match &error {
                    WireError::Db { code, .. } => format!("pg:{code}"),
                    _ => "pg:connection".into(),
                },
                sqlstate: error.sqlstate(),
                mysql_code: None,
                message: redact(&format!(
                    "cannot connect to PostgreSQL at {} ({}): {error}",
                    self.info.location(Some(endpoint)),
                    self.info.endpoints[endpoint].address()
                )),
                connection_lost: true,
            },
        })?;
        for (name, value) in &self.settings {
            conn.prepare("", "SELECT set_config($1, $2, false)")
                .and_then(|()| conn.execute("", &[name, value]))
                .map_err(|e| {
                    TargetError::config(format!("--set {name}={value}: PostgreSQL says: {e}"))
                })?;
        }
        Ok((conn, self.info.location(Some(used))))
    }
}

fn classify(e: WireError, conn: &WireConn) -> TargetError {
    let lost = conn.is_broken();
    match e {
        WireError::Db { code, message, .. } => TargetError {
            // 57P01..57P05: the server ended the session (terminated, shutting down, ...).
            connection_lost: lost || code.ends_session(),
            class: format!("pg:{code}"),
            sqlstate: Some(code),
            mysql_code: None,
            message,
        },
        WireError::Io(e) => TargetError {
            class: "pg:connection".into(),
            sqlstate: None,
            mysql_code: None,
            message: format!("connection lost: {e}"),
            connection_lost: true,
        },
        WireError::Protocol(m) => TargetError {
            class: "pg:protocol".into(),
            sqlstate: None,
            mysql_code: None,
            message: m,
            connection_lost: true,
        },
    }
}

impl Target for PgTarget {
    fn kind(&self) -> &'static str {
        "postgres"
    }
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }
    fn connect(&self) -> TargetResult<Box<dyn Session>> {
        let mut conn = self.open()?.0;
        for (name, sql) in [(BEGIN, "BEGIN"), (COMMIT, "COMMIT")] {
            conn.prepare(name, sql).map_err(|e| classify(e, &conn))?;
        }
        Ok(Box::new(PgSession {
            conn,
            stmts: Vec::new(),
            pipeline: Pipeline::default(),
        }))
    }
    fn sessions_may_share_threads(&self) -> bool {
        true
    }
    fn describe(&self) -> TargetResult<TargetInfo> {
        let (mut conn, location) = self.open()?;
        let mut show = |name: &str| -> TargetResult<String> {
            // SHOW takes no parameters; names were checked to be identifiers by parse_setting.
            let rows = conn
                .simple_query(&format!("SHOW {name}"))
                .map_err(|e| TargetError::config(format!("SHOW {name}: {e}")))?;
            Ok(rows
                .into_iter()
                .next()
                .and_then(|r| r.into_iter().next().flatten())
                .unwrap_or_default())
        };
        let version = show("server_version")?;
        let mut effective = BTreeMap::new();
        for name in REPORTED
            .iter()
            .map(|s| s.to_string())
            .chain(self.settings.iter().map(|(n, _)| n.clone()))
        {
            let v = show(&name)?;
            effective.insert(name, v);
        }
        Ok(TargetInfo {
            kind: "postgres".into(),
            location,
            server_version: format!("PostgreSQL {version}"),
            settings_requested: self.settings.clone(),
            settings_effective: effective,
        })
    }
}

/// BEGIN and COMMIT, prepared on every session's connection as `pgbench -M prepared` runs them:
/// the server binds them instead of parsing their text every time.
const BEGIN: &str = "dbscope_begin";
const COMMIT: &str = "dbscope_commit";

/// The prepared statement's name, or the unnamed statement's SQL, of a script send.
fn resolve<'a>(
    stmts: &'a [String],
    send: ScriptSend<'a>,
) -> TargetResult<(Option<&'a str>, &'a str)> {
    match send {
        ScriptSend::Simple(sql) | ScriptSend::Unnamed(sql) => Ok((None, sql)),
        ScriptSend::Prepared(id) => stmts
            .get(id.0)
            .map(|n| (Some(n.as_str()), ""))
            .ok_or_else(|| TargetError::config("unknown prepared statement")),
    }
}

struct PgSession {
    conn: WireConn,
    stmts: Vec<String>,
    pipeline: Pipeline,
}

/// A script's pipeline in flight: statements queued per sync segment, and whose rows are kept.
#[derive(Default)]
struct Pipeline {
    segments: Vec<usize>,
    keep: Vec<bool>,
}

impl PgSession {
    /// Runs the prepared statement `name` that takes no parameters ([`BEGIN`], [`COMMIT`]).
    fn run_prepared(&mut self, name: &str) -> TargetResult<()> {
        self.conn
            .execute(name, &[])
            .map(|_| ())
            .map_err(|e| classify(e, &self.conn))
    }
}

impl Session for PgSession {
    fn set_label(&mut self, label: &str) -> TargetResult<()> {
        self.conn
            .query("SELECT set_config('application_name', $1, false)", &[label])
            .map(|_| ())
            .map_err(|e| classify(e, &self.conn))
    }
    fn multiplex(&mut self) -> TargetResult<bool> {
        self.conn
            .set_nonblocking()
            .map_err(|e| classify(e, &self.conn))?;
        Ok(true)
    }
    fn batch(&mut self, sql: &str) -> TargetResult<()> {
        match self.conn.simple_query(sql) {
            Ok(_) => Ok(()),
            Err(e) => Err(classify(e, &self.conn)),
        }
    }
    fn prepare(&mut self, sql: &str) -> TargetResult<StmtId> {
        let name = format!("dbscope_{}", self.stmts.len());
        self.conn
            .prepare(&name, sql)
            .map_err(|e| classify(e, &self.conn))?;
        self.stmts.push(name);
        Ok(StmtId(self.stmts.len() - 1))
    }
    fn execute(&mut self, stmt: StmtId, params: &[Param]) -> TargetResult<u64> {
        let name = self
            .stmts
            .get(stmt.0)
            .ok_or_else(|| TargetError::config("unknown prepared statement"))?;
        let texts = param_texts(params);
        let refs: Vec<&str> = texts.iter().map(|c| c.as_ref()).collect();
        self.conn
            .execute(name, &refs)
            .map_err(|e| classify(e, &self.conn))
    }
    fn query_i64(&mut self, sql: &str) -> TargetResult<Vec<i64>> {
        let rows = self
            .conn
            .simple_query(sql)
            .map_err(|e| classify(e, &self.conn))?;
        rows.into_iter()
            .map(|r| {
                let v = r.into_iter().next().flatten().unwrap_or_default();
                TargetError::parse_i64("pg", &v)
            })
            .collect()
    }
    fn query_rows(
        &mut self,
        sql: &str,
        params: &[Param],
    ) -> TargetResult<Vec<Vec<Option<String>>>> {
        let texts = param_texts(params);
        let refs: Vec<&str> = texts.iter().map(|c| c.as_ref()).collect();
        self.conn
            .query(sql, &refs)
            .map_err(|e| classify(e, &self.conn))
    }
    fn begin(&mut self) -> TargetResult<()> {
        self.run_prepared(BEGIN)
    }
    fn commit(&mut self) -> TargetResult<()> {
        self.run_prepared(COMMIT)
    }
    fn rollback(&mut self) -> TargetResult<()> {
        if self.conn.is_broken() {
            return Ok(());
        }
        self.batch("ROLLBACK")
    }
    fn script(
        &mut self,
        send: ScriptSend<'_>,
        params: &[&str],
        keep_rows: bool,
    ) -> TargetResult<Vec<StmtResult>> {
        let r = match send {
            ScriptSend::Simple(sql) => self.conn.script_simple(sql, keep_rows),
            send => {
                let (stmt, sql) = resolve(&self.stmts, send)?;
                self.conn
                    .script_extended(stmt, sql, params, keep_rows)
                    .map(|r| vec![r])
            }
        };
        r.map_err(|e| classify(e, &self.conn))
    }
    fn can_pipeline(&self) -> bool {
        true
    }
    fn pipeline_queue(
        &mut self,
        send: ScriptSend<'_>,
        params: &[&str],
        keep_rows: bool,
    ) -> TargetResult<()> {
        if matches!(send, ScriptSend::Simple(_)) {
            return Err(TargetError::config(
                "a pipeline needs the extended protocol: -M extended or -M prepared (as pgbench)",
            ));
        }
        let (stmt, sql) = resolve(&self.stmts, send)?;
        if self.pipeline.segments.is_empty() {
            self.pipeline.segments.push(0);
        }
        if let Some(n) = self.pipeline.segments.last_mut() {
            *n += 1;
        }
        self.pipeline.keep.push(keep_rows);
        self.conn
            .pipeline_queue(stmt, sql, params, keep_rows)
            .map_err(|e| classify(e, &self.conn))
    }
    fn pipeline_sync(&mut self) -> TargetResult<()> {
        self.pipeline.segments.push(0);
        self.conn
            .pipeline_sync()
            .map_err(|e| classify(e, &self.conn))
    }
    fn pipeline_end(&mut self) -> TargetResult<crate::target::PipelineEnd> {
        let Pipeline { segments, keep } = std::mem::take(&mut self.pipeline);
        let segments = if segments.is_empty() {
            vec![0]
        } else {
            segments
        };
        let r = self
            .conn
            .pipeline_end(&segments, &keep)
            .map_err(|e| classify(e, &self.conn))?;
        let failed = r.failed.map(|(i, e)| (i, classify(e, &self.conn)));
        Ok((r.results, failed))
    }
    fn copy_in(
        &mut self,
        sql: &str,
        fill: &mut dyn FnMut(&mut Vec<u8>) -> Result<bool, String>,
    ) -> TargetResult<u64> {
        self.conn.copy_in(sql, fill).map_err(|e| match e {
            // The loader's own refusal (bad input line): not a database failure.
            WireError::Protocol(m) if !self.conn.is_broken() => TargetError::config(m),
            e => classify(e, &self.conn),
        })
    }
}

/// Parameters in PostgreSQL's text format (integers printed, text borrowed), as both prepared
/// statements and `query_rows` send them.
fn param_texts(params: &[Param]) -> Vec<std::borrow::Cow<'_, str>> {
    params
        .iter()
        .map(|p| match p {
            Param::Int(i) => std::borrow::Cow::Owned(i.to_string()),
            Param::Text(s) => std::borrow::Cow::Borrowed(s.as_str()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_never_shows_the_password() {
        let t = PgTarget::new("postgres://bench:s3cret@db.example:5433/app", &[]).unwrap();
        assert_eq!(t.location, "postgres://bench@db.example:5433/app");
        assert!(!format!("{t:?}").contains("s3cret"));
        let t = PgTarget::new("postgresql://u:pw@/db?host=/tmp/sock&port=5999", &[]).unwrap();
        assert_eq!(t.location, "postgres://u@/db?host=/tmp/sock&port=5999");
    }

    /// The issue's URI: `?host=` and `?port=` override the authority's `localhost` (libpq's
    /// rule), so the target is the socket, not localhost:5432.
    #[test]
    fn issue_13_query_parameters_override_the_authority() {
        let no_env = |_: &str| None;
        let defaults = Defaults {
            env: &no_env,
            os_user: Some("osuser".into()),
            socket_dir: "/var/run/postgresql".into(),
            application_name: "dbscope",
        };
        let uri = "postgres://postgres@localhost/postgres?host=/tmp/sock&port=55439";
        let t = PgTarget::with_defaults(uri, &[], &defaults).unwrap();
        assert_eq!(
            t.location,
            "postgres://postgres@/postgres?host=/tmp/sock&port=55439"
        );
        let e = t.describe().unwrap_err();
        assert!(
            e.message.contains("/tmp/sock/.s.PGSQL.55439"),
            "the error names the socket tried: {e}"
        );
    }

    #[test]
    fn malformed_uri_is_a_clear_error() {
        let e = PgTarget::new("postgres://u:hunter2@host:notaport/db", &[]).unwrap_err();
        assert!(e.message.starts_with("PostgreSQL connection string"), "{e}");
        assert!(
            e.message
                .contains("invalid integer value \"notaport\" for connection option \"port\""),
            "{e}"
        );
        assert!(!e.message.contains("hunter2"), "{e}");
    }

    #[test]
    fn unreachable_server_fails_fast_and_names_the_socket() {
        let dir = tempfile::tempdir().unwrap();
        let uri = format!(
            "postgres://u:pw@/db?host={}&port=5999&connect_timeout=2",
            dir.path().display()
        );
        let t = PgTarget::new(&uri, &[]).unwrap();
        let e = t.describe().unwrap_err();
        assert!(e.message.contains(&dir.path().display().to_string()), "{e}");
        assert!(e.message.contains("cannot connect"), "{e}");
        assert!(!e.message.contains(":pw"), "{e}");
    }
}
