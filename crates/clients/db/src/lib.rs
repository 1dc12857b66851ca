//! dbscope-db: where a workload runs. One trait for connect/execute/settings ([`Target`],
//! [`Session`]), with SQLite (the embedded default, [`sqlite`]), PostgreSQL (a real server over
//! `dbscope-pgwire`, [`pg`]), MariaDB/MySQL (the `mysql` crate, [`my`]) and `null` (does nothing: measures the harness itself, [`null`]).
//! A further database is one more module beside these, and one more arm in [`open_target`].

pub mod cipher;
mod my;
mod null;
mod pg;
mod sqlite;
mod target;

/// The coroutine multiplexer sessions share threads with ([`Session::multiplex`]).
pub use dbscope_pgwire::mux;
/// A server error's SQLSTATE ([`TargetError::sqlstate`]).
pub use dbscope_pgwire::SqlState;

use std::path::Path;

pub use my::MyTarget;
pub use null::NullTarget;
pub use pg::PgTarget;
pub use sqlite::SqliteTarget;
pub use target::{
    Dialect, Param, RowSink, ScriptSend, Session, StmtId, StmtResult, Target, TargetError,
    TargetResult,
};

/// Parses a `--target` string: `sqlite:PATH`, `postgres://…` / `postgresql://…` (libpq URI or
/// key/value string after `postgres:`), or `null`. `settings` are `--set NAME=VALUE` pairs.
/// A `sqlcipher:PATH` target takes its key from `$DBSCOPE_SQLITE_KEY` ([`open_target_keyed`]).
pub fn open_target(spec: &str, settings: &[(String, String)]) -> TargetResult<Box<dyn Target>> {
    open_target_keyed(spec, settings, None)
}

/// [`open_target`], with `sqlcipher:PATH`'s key read from `key_file` (`--key-file`) when given,
/// else from `$DBSCOPE_SQLITE_KEY`; a key file for any other target is refused.
pub fn open_target_keyed(
    spec: &str,
    settings: &[(String, String)],
    key_file: Option<&Path>,
) -> TargetResult<Box<dyn Target>> {
    let spec = spec.trim();
    if let Some(path) = spec.strip_prefix("sqlcipher:") {
        let path = path.strip_prefix("//").unwrap_or(path);
        if path.is_empty() {
            return Err(TargetError::config(
                "sqlcipher target needs a file path, e.g. sqlcipher:secret.db",
            ));
        }
        let key = cipher::Key::load(key_file)?;
        return Ok(Box::new(SqliteTarget::encrypted(
            Path::new(path),
            settings,
            key,
        )?));
    }
    if key_file.is_some() {
        return Err(TargetError::config(
            "--key-file is the key of a sqlcipher:PATH target; this target takes none",
        ));
    }
    if spec == "null" {
        return Ok(Box::new(NullTarget::new(settings)?));
    }
    if let Some(path) = spec.strip_prefix("sqlite:") {
        let path = path.strip_prefix("//").unwrap_or(path);
        if path.is_empty() {
            return Err(TargetError::config(
                "sqlite target needs a file path, e.g. sqlite:bench.db",
            ));
        }
        return Ok(Box::new(SqliteTarget::new(Path::new(path), settings)?));
    }
    if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        return Ok(Box::new(PgTarget::new(spec, settings)?));
    }
    if spec.starts_with("mysql://") || spec.starts_with("mariadb://") {
        return Ok(Box::new(MyTarget::new(spec, settings)?));
    }
    if let Some(kv) = spec.strip_prefix("postgres:") {
        return Ok(Box::new(PgTarget::new(kv, settings)?));
    }
    let scheme = spec.split(':').next().unwrap_or(spec);
    Err(TargetError::config(format!(
        "unknown target {:?}: expected sqlite:PATH, sqlcipher:PATH, postgres://[user[:password]@][host][:port][/db][?param=value…], \
         postgres:KEY=VALUE…, mysql://[user[:password]@][host][:port]/db[?socket=PATH], or null",
        dbscope_core::redact::redact(scheme)
    )))
}

/// Splits `NAME=VALUE` from `--set`; the name must be a plain identifier.
pub fn parse_setting(s: &str) -> Result<(String, String), TargetError> {
    let (name, value) = s.split_once('=').ok_or_else(|| {
        TargetError::config(format!(
            "--set {s:?}: expected NAME=VALUE, e.g. synchronous_commit=off"
        ))
    })?;
    let name = name.trim();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    {
        return Err(TargetError::config(format!(
            "--set {s:?}: setting name {name:?} must be letters, digits, '_' or '.'"
        )));
    }
    Ok((name.to_string(), value.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_scheme_is_a_clear_error() {
        let err = open_target("oracle://root:pw@h/db", &[])
            .err()
            .expect("must fail");
        assert!(err.message.contains("unknown target \"oracle\""), "{err}");
        assert!(!err.message.contains("pw"));
    }

    #[test]
    fn settings_parse() {
        assert_eq!(
            parse_setting("synchronous_commit=off").unwrap(),
            ("synchronous_commit".into(), "off".into())
        );
        assert!(parse_setting("nonsense").is_err());
        assert!(parse_setting("a;drop=1").is_err());
    }
}
