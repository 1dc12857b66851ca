//! What a query reads: `NAME=URI` sources, from `--source` or a TOML file of them.
//!
//! | URI | in the query |
//! |-----|--------------|
//! | `postgres://…/DATABASE/TABLE` | the table as `NAME` |
//! | `postgres://…/DATABASE?tables=a,b` | `NAME.a`, `NAME.b` |
//! | `postgres://…/DATABASE[?schema=S]` | every table of schema `S` (default `public`) as `NAME.t` |
//! | `mysql://…/DATABASE/TABLE`, `?tables=a,b`, or the whole database (`mariadb://` too) | as for PostgreSQL |
//! | `sqlite:PATH[?table=T]` | `T` as `NAME`, or every table as `NAME.t` |
//! | `file:PATH` | a Parquet, CSV (header line) or TPC-H `.tbl` file or directory as `NAME` |
//! | `run:DIR` | the run's events (the export's columns) as `NAME` |

use std::path::Path;

use dbscope_core::redact::redact;

use crate::Error;

/// One source: the name the query uses and where it is.
#[derive(Clone, PartialEq, Eq)]
pub struct SourceSpec {
    /// The name in the query (a table, or a schema of tables).
    pub name: String,
    /// The URI as given (it may hold a password: show [`SourceSpec::shown`]).
    pub uri: String,
}

impl std::fmt::Debug for SourceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.shown())
    }
}

impl SourceSpec {
    /// `NAME=URI` with the password redacted.
    pub fn shown(&self) -> String {
        format!("{}={}", self.name, redact(&self.uri))
    }
}

/// Which kind of source a URI names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The connection string (hub parameters removed) and what to read.
    Postgres { conn: String, tables: PgTables },
    /// A MariaDB/MySQL database: the connection string (hub parameters removed) and what to
    /// read (`Schema` holds the database).
    MySql { conn: String, tables: PgTables },
    /// The database file and, when given, the one table.
    Sqlite { path: String, table: Option<String> },
    /// A file or directory.
    File(String),
    /// A run directory.
    Run(String),
}

/// Which tables of a PostgreSQL database a source holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PgTables {
    /// One table, the source's name in the query.
    One(String),
    /// These tables, `NAME.table` in the query.
    Listed(Vec<String>),
    /// Every table (and view) of this schema.
    Schema(String),
}

fn plain(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

/// Checks a name the query will use: lower-case letters, digits, `_` (SQL folds unquoted names
/// to lower case).
pub(crate) fn check_name(name: &str, what: &str) -> Result<(), Error> {
    if plain(name) && !name.chars().any(|c| c.is_ascii_uppercase()) {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "{what} {name:?} is not a plain lower-case name (letters, digits, _)"
        )))
    }
}

/// Parses `NAME=URI`.
pub fn parse_source(s: &str) -> Result<SourceSpec, Error> {
    let (name, uri) = s.split_once('=').ok_or_else(|| {
        Error::Usage(format!(
            "--source {}: expected NAME=URI (postgres://…, mysql://…, sqlite:PATH, file:PATH, run:DIR)",
            redact(s)
        ))
    })?;
    let spec = SourceSpec {
        name: name.trim().to_string(),
        uri: uri.trim().to_string(),
    };
    check_name(&spec.name, "source name")?;
    kind(&spec)?;
    Ok(spec)
}

/// Reads a TOML file of sources: a `[sources]` table of `NAME = "URI"`.
pub fn read_sources_file(path: &Path) -> Result<Vec<SourceSpec>, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Input(format!("{}: cannot read: {e}", path.display())))?;
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        sources: std::collections::BTreeMap<String, String>,
    }
    // The parser's message quotes the offending line, which may hold a password: only its
    // position is kept.
    let f: File = toml::from_str(&text).map_err(|e| {
        let at = e
            .span()
            .map(|r| {
                let line = text[..r.start.min(text.len())].lines().count().max(1);
                format!("line {line}: ")
            })
            .unwrap_or_default();
        Error::Input(format!(
            "{}: {at}{}; expected a [sources] table of NAME = \"URI\" lines",
            path.display(),
            e.message()
        ))
    })?;
    f.sources
        .into_iter()
        .map(|(name, uri)| {
            let spec = SourceSpec { name, uri };
            check_name(&spec.name, "source name")
                .and_then(|_| kind(&spec))
                .map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
            Ok(spec)
        })
        .collect()
}

/// Splits the hub's own parameters (`tables`, `schema`, `table`) from a URI's query string.
fn hub_params(uri: &str, own: &[&str]) -> (String, Vec<(String, String)>) {
    let Some((main, query)) = uri.split_once('?') else {
        return (uri.to_string(), Vec::new());
    };
    let mut keep = Vec::new();
    let mut mine = Vec::new();
    for kv in query.split('&').filter(|kv| !kv.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        if own.contains(&k) {
            mine.push((k.to_string(), v.to_string()));
        } else {
            keep.push(kv);
        }
    }
    let conn = if keep.is_empty() {
        main.to_string()
    } else {
        format!("{main}?{}", keep.join("&"))
    };
    (conn, mine)
}

pub(crate) fn kind(spec: &SourceSpec) -> Result<Kind, Error> {
    let uri = spec.uri.as_str();
    let bad = |why: String| Error::Usage(format!("source {}: {why}", spec.shown()));
    let mysql = uri.starts_with("mysql://") || uri.starts_with("mariadb://");
    if uri.starts_with("postgres://") || uri.starts_with("postgresql://") || mysql {
        let (conn, mine) = hub_params(uri, &["tables", "schema"]);
        if mysql && mine.iter().any(|(k, _)| k == "schema") {
            return Err(bad(
                "?schema= is PostgreSQL's: on MariaDB/MySQL the database is the path".into(),
            ));
        }
        let scheme_end = conn.find("://").map_or(0, |i| i + 3);
        let main_end = conn.find('?').unwrap_or(conn.len());
        let path: Vec<&str> = conn[scheme_end..main_end]
            .split_once('/')
            .map(|(_, p)| p.split('/').collect())
            .unwrap_or_default();
        let get = |k: &str| mine.iter().find(|(m, _)| m == k).map(|(_, v)| v.clone());
        let tables = match (&path[..], get("tables"), get("schema")) {
            ([_db, table], None, None) => {
                qualified_ok(table).map_err(&bad)?;
                let db_end = scheme_end + conn[scheme_end..].find('/').unwrap_or(0) + 1;
                let conn = format!("{}{}", &conn[..db_end + path[0].len()], &conn[main_end..]);
                let tables = PgTables::One(table.to_string());
                return Ok(if mysql {
                    Kind::MySql { conn, tables }
                } else {
                    Kind::Postgres { conn, tables }
                });
            }
            ([_, _], _, _) => {
                return Err(bad(
                    "a table in the path and ?tables= or ?schema= together".into()
                ))
            }
            ([] | [_], Some(_), Some(_)) => {
                return Err(bad("?tables= and ?schema= together: give one".into()))
            }
            ([] | [_], Some(list), None) => {
                let list: Vec<String> = list
                    .split(',')
                    .map(|t| t.trim().to_string())
                    .filter(|t| !t.is_empty())
                    .collect();
                if list.is_empty() {
                    return Err(bad("?tables= lists no table".into()));
                }
                for t in &list {
                    qualified_ok(t).map_err(&bad)?;
                }
                PgTables::Listed(list)
            }
            ([db], None, None) if mysql => {
                if !plain(db) {
                    return Err(bad(format!("database {db:?} is not a plain name")));
                }
                PgTables::Schema(db.to_string())
            }
            ([], None, None) if mysql => return Err(bad(
                "expected mysql://[user[:password]@][host][:port]/DATABASE[/TABLE][?tables=a,b]"
                    .into(),
            )),
            ([] | [_], None, schema) => {
                let schema = schema.unwrap_or_else(|| "public".into());
                if !plain(&schema) {
                    return Err(bad(format!("schema {schema:?} is not a plain name")));
                }
                PgTables::Schema(schema)
            }
            _ => return Err(bad(
                "expected postgres://[user@][host][:port]/DATABASE[/TABLE][?tables=a,b|?schema=S]"
                    .into(),
            )),
        };
        return Ok(if mysql {
            Kind::MySql { conn, tables }
        } else {
            Kind::Postgres { conn, tables }
        });
    }
    if let Some(rest) = uri.strip_prefix("sqlite:") {
        let (path, mine) = hub_params(rest, &["table"]);
        let table = mine.into_iter().find(|(k, _)| k == "table").map(|(_, v)| v);
        if path.is_empty() {
            return Err(bad("expected sqlite:PATH[?table=T]".into()));
        }
        if let Some(t) = &table {
            if !plain(t) {
                return Err(bad(format!("table {t:?} is not a plain name")));
            }
        }
        return Ok(Kind::Sqlite { path, table });
    }
    if let Some(p) = uri.strip_prefix("file:") {
        if p.is_empty() {
            return Err(bad("expected file:PATH".into()));
        }
        return Ok(Kind::File(p.to_string()));
    }
    if let Some(p) = uri.strip_prefix("run:") {
        if p.is_empty() {
            return Err(bad("expected run:DIR".into()));
        }
        return Ok(Kind::Run(p.to_string()));
    }
    Err(bad(
        "unknown kind of source; expected postgres://…, mysql://…, sqlite:PATH, file:PATH or run:DIR".into(),
    ))
}

/// A table name, optionally `schema.table`, each part plain.
fn qualified_ok(t: &str) -> Result<(), String> {
    if t.split('.').count() <= 2 && t.split('.').all(plain) {
        Ok(())
    } else {
        Err(format!(
            "table {t:?} is not a plain name (letters, digits, _; schema.table allowed)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_uris_name_one_table_a_list_or_a_schema() {
        let k = |s: &str| kind(&parse_source(s).unwrap()).unwrap();
        assert_eq!(
            k("o=postgres://u:pw@h:5433/db/orders?host=/tmp"),
            Kind::Postgres {
                conn: "postgres://u:pw@h:5433/db?host=/tmp".into(),
                tables: PgTables::One("orders".into())
            }
        );
        assert_eq!(
            k("pg=postgres://h/db?tables=a,tpch.b&sslmode=disable"),
            Kind::Postgres {
                conn: "postgres://h/db?sslmode=disable".into(),
                tables: PgTables::Listed(vec!["a".into(), "tpch.b".into()])
            }
        );
        assert_eq!(
            k("pg=postgres://h/db"),
            Kind::Postgres {
                conn: "postgres://h/db".into(),
                tables: PgTables::Schema("public".into())
            }
        );
        assert_eq!(
            k("s=sqlite:/x/y.db?table=t"),
            Kind::Sqlite {
                path: "/x/y.db".into(),
                table: Some("t".into())
            }
        );
        assert_eq!(k("f=file:a.parquet"), Kind::File("a.parquet".into()));
        assert_eq!(k("r=run:runs/x"), Kind::Run("runs/x".into()));
    }

    #[test]
    fn mysql_uris_name_one_table_a_list_or_the_database() {
        let k = |s: &str| kind(&parse_source(s).unwrap()).unwrap();
        assert_eq!(
            k("o=mysql://u:pw@/tpch/orders?socket=/tmp/s"),
            Kind::MySql {
                conn: "mysql://u:pw@/tpch?socket=/tmp/s".into(),
                tables: PgTables::One("orders".into())
            }
        );
        assert_eq!(
            k("m=mariadb://h:3307/tpch?tables=a,b"),
            Kind::MySql {
                conn: "mariadb://h:3307/tpch".into(),
                tables: PgTables::Listed(vec!["a".into(), "b".into()])
            }
        );
        assert_eq!(
            k("m=mysql://h/tpch"),
            Kind::MySql {
                conn: "mysql://h/tpch".into(),
                tables: PgTables::Schema("tpch".into())
            }
        );
        let err = |s: &str| parse_source(s).unwrap_err().to_string();
        assert!(err("m=mysql://h/tpch?schema=x").contains("the database is the path"));
        assert!(err("m=mysql://u:secret@h").contains("expected mysql://"));
        assert!(!err("m=mysql://u:secret@h").contains("secret"));
    }

    #[test]
    fn bad_specs_say_what_is_expected_without_the_password() {
        for s in [
            "orders",
            "Orders=file:x",
            "o=mysql://x",
            "o=postgres://u:secret@h/db/a;drop",
            "o=postgres://u:secret@h/db?tables=a&schema=b",
        ] {
            let e = parse_source(s).unwrap_err().to_string();
            assert!(!e.contains("secret"), "{e}");
            assert!(
                e.contains("expected") || e.contains("plain") || e.contains("together"),
                "{s}: {e}"
            );
        }
    }
}
