//! Restore points for a PostgreSQL database: a copy taken by name and put back by name, so a
//! replay starts from the state the capture started from. The copy is a database made with
//! `CREATE DATABASE … TEMPLATE` (the server copies the files itself, fast; PostgreSQL refuses while
//! anyone else is connected to the source, and says so), named `dbscope_rp_<name>`; resetting drops
//! the database (`WITH (FORCE)`, ending its sessions) and copies it back from the restore point.
//! Both run from a maintenance connection to the `postgres` database of the same server.

use dbscope_core::redact::redact;
use dbscope_pgwire::{connect_with, WireConn};

use crate::CaptureError;

/// Prefix of restore point databases.
pub const PREFIX: &str = "dbscope_rp_";

/// A restore point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestorePoint {
    /// Its name.
    pub name: String,
    /// The database it copies.
    pub database: String,
    /// When it was taken (the server's clock), as the server prints it.
    pub taken: String,
}

fn check_name(name: &str) -> Result<(), CaptureError> {
    let ok = !name.is_empty()
        && name.len() + PREFIX.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(CaptureError::Config(format!(
            "restore point name {name:?}: use lower-case letters, digits and '_' (at most {} characters)",
            63 - PREFIX.len()
        )))
    }
}

fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

fn quote_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The maintenance connection and the target's own database name.
fn maintenance(target: &str) -> Result<(WireConn, String), CaptureError> {
    let unreachable = |why: dbscope_pgwire::ConnectError| CaptureError::Connect {
        message: format!("cannot connect to {}: {why}", redact(target)),
        source: why,
    };
    let (conn, db) =
        connect_with(target, "dbscope restore-point", Some("postgres")).map_err(unreachable)?;
    if db == "postgres" {
        return Err(CaptureError::Config(
            "restore points copy one database: give a target whose database is not `postgres` \
             (e.g. postgres://…/bench)"
                .into(),
        ));
    }
    Ok((conn, db))
}

fn sql(conn: &mut WireConn, text: &str) -> Result<Vec<Vec<Option<String>>>, CaptureError> {
    conn.simple_query(text).map_err(|e| CaptureError::Database {
        message: e.to_string(),
        source: e,
    })
}

/// Takes restore point `name` of the target's database.
pub fn create(target: &str, name: &str) -> Result<RestorePoint, CaptureError> {
    check_name(name)?;
    let (mut conn, db) = maintenance(target)?;
    let rp = format!("{PREFIX}{name}");
    let exists = sql(
        &mut conn,
        &format!(
            "SELECT 1 FROM pg_database WHERE datname = {}",
            quote_literal(&rp)
        ),
    )?;
    if !exists.is_empty() {
        return Err(CaptureError::Config(format!(
            "restore point {name:?} exists already (database {rp}); drop it first: dbscope restore-point drop {name} --target …"
        )));
    }
    conn.simple_query(&format!(
        "CREATE DATABASE {} TEMPLATE {}",
        quote_ident(&rp),
        quote_ident(&db)
    ))
    .map_err(|e| CaptureError::Database {
        message: format!(
            "cannot copy database {db} to restore point {name:?}: {e} (PostgreSQL copies a database only while no one else is connected to it)"
        ),
        source: e,
    })?;
    let now = sql(&mut conn, "SELECT now()::text")?;
    let taken = now
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .unwrap_or_default();
    sql(
        &mut conn,
        &format!(
            "COMMENT ON DATABASE {} IS {}",
            quote_ident(&rp),
            quote_literal(&format!("dbscope restore point of {db} taken {taken}"))
        ),
    )?;
    Ok(RestorePoint {
        name: name.to_string(),
        database: db,
        taken,
    })
}

/// Puts the target's database back to restore point `name`: drops it (ending its sessions) and
/// copies it back from the restore point.
pub fn reset(target: &str, name: &str) -> Result<RestorePoint, CaptureError> {
    check_name(name)?;
    let (mut conn, db) = maintenance(target)?;
    let rp = find(&mut conn, name)?;
    if rp.database != db {
        return Err(CaptureError::Config(format!(
            "restore point {name:?} is of database {}, not of the target's database {db}",
            rp.database
        )));
    }
    sql(
        &mut conn,
        &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", quote_ident(&db)),
    )?;
    sql(
        &mut conn,
        &format!(
            "CREATE DATABASE {} TEMPLATE {}",
            quote_ident(&db),
            quote_ident(&format!("{PREFIX}{name}"))
        ),
    )?;
    Ok(rp)
}

/// Drops restore point `name`.
pub fn drop_point(target: &str, name: &str) -> Result<(), CaptureError> {
    check_name(name)?;
    let (mut conn, _) = maintenance(target)?;
    find(&mut conn, name)?;
    sql(
        &mut conn,
        &format!(
            "DROP DATABASE {} WITH (FORCE)",
            quote_ident(&format!("{PREFIX}{name}"))
        ),
    )?;
    Ok(())
}

/// Every restore point on the target's server.
pub fn list(target: &str) -> Result<Vec<RestorePoint>, CaptureError> {
    let (mut conn, _) = maintenance(target)?;
    let rows = sql(
        &mut conn,
        &format!(
            "SELECT substr(datname, {}), coalesce(shobj_description(oid, 'pg_database'), '') \
             FROM pg_database WHERE datname LIKE {} ORDER BY 1",
            PREFIX.len() + 1,
            quote_literal(&format!("{}%", PREFIX.replace('_', "\\_")))
        ),
    )?;
    Ok(rows.into_iter().map(|r| point(&r)).collect())
}

/// Parses "dbscope restore point of DB taken TIME".
fn point(row: &[Option<String>]) -> RestorePoint {
    let name = row.first().cloned().flatten().unwrap_or_default();
    let comment = row.get(1).cloned().flatten().unwrap_or_default();
    let rest = comment
        .strip_prefix("dbscope restore point of ")
        .unwrap_or("");
    let (database, taken) = rest.split_once(" taken ").unwrap_or((rest, ""));
    RestorePoint {
        name,
        database: database.to_string(),
        taken: taken.to_string(),
    }
}

fn find(conn: &mut WireConn, name: &str) -> Result<RestorePoint, CaptureError> {
    let rows = sql(
        conn,
        &format!(
            "SELECT substr(datname, {}), coalesce(shobj_description(oid, 'pg_database'), '') \
             FROM pg_database WHERE datname = {}",
            PREFIX.len() + 1,
            quote_literal(&format!("{PREFIX}{name}"))
        ),
    )?;
    match rows.first() {
        Some(r) => Ok(point(r)),
        None => Err(CaptureError::Config(format!(
            "no restore point {name:?} on this server (dbscope restore-point list --target … shows them)"
        ))),
    }
}
