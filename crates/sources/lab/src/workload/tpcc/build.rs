//! Builds TPC-C's tables on a target: drop (with `fresh`), create, load ITEM and the warehouses
//! (PostgreSQL: COPY, one connection per build session, each loading its own warehouses;
//! MariaDB/MySQL the same with `LOAD DATA LOCAL INFILE` of the same text; SQLite: multi-row
//! INSERTs in one transaction, since SQLite has one writer at a time), index, and record the
//! shape in `tpcc_build` so a later run with the same shape reuses the tables.

use std::time::{SystemTime, UNIX_EPOCH};

use dbscope_db::{Dialect, Session, Target, TargetError, TargetResult};
use dbscope_tpcc::populate::{copy_line, items, warehouse, Row};
use dbscope_tpcc::random::{Gen, NuConstants};
use dbscope_tpcc::schema::{self, create_indexes, create_tables, drop_tables};
use dbscope_tpcc::{Table, Value, Violation, CONDITIONS};

/// What to build.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    pub warehouses: i64,
    /// Connections loading warehouses at once (PostgreSQL; SQLite loads with one).
    pub build_sessions: u32,
    pub seed: u64,
    /// Drop and rebuild even when a build of the same shape is there.
    pub fresh: bool,
}

/// What [`build`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct Built {
    /// False when the tables of a matching build were reused.
    pub built: bool,
    /// Rows loaded per table (empty when reused).
    pub rows: Vec<(&'static str, u64)>,
    /// The load's NURand C constant for C_LAST (the run's is drawn from it, clause 2.1.6.1).
    pub c_last: i64,
    /// Build sessions that loaded.
    pub sessions: u32,
}

const SHAPE_TABLE: &str = "tpcc_build";

fn tdialect(target: &dyn Target) -> TargetResult<schema::Dialect> {
    match target.dialect() {
        Dialect::Postgres => Ok(schema::Dialect::Postgres),
        Dialect::Sqlite => Ok(schema::Dialect::Sqlite),
        Dialect::Null => Err(TargetError::config(
            "tpcc needs a database: a sqlite:, postgres:// or mysql:// target, not null",
        )),
        Dialect::Mysql => Ok(schema::Dialect::Mysql),
    }
}

/// Which of the nine tables (and the shape table) exist.
fn existing(sess: &mut dyn Session, d: schema::Dialect) -> TargetResult<Vec<String>> {
    let sql = match d {
        schema::Dialect::Sqlite => "SELECT name FROM sqlite_master WHERE type = 'table'",
        schema::Dialect::Postgres => {
            "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()"
        }
        schema::Dialect::Mysql => {
            "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()"
        }
    };
    let rows = sess.query_rows(sql, &[])?;
    let mut names: Vec<String> = rows
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
        .collect();
    names.retain(|n| n == SHAPE_TABLE || schema::TABLES.contains(&n.as_str()));
    Ok(names)
}

/// What a database holds, for a build of a given shape ([`inspect`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A dbscope build of this shape: reused, with the load's C_LAST constant.
    Reuse { c_last: i64 },
    /// Nothing of TPC-C's (or `fresh`): build.
    Build,
}

/// Says whether a build of `warehouses` would reuse the tables there or build them; a database
/// holding some of TPC-C's tables but not a build of this shape is refused (a `config` error
/// saying to pass `--fresh`) unless `fresh`, so nobody's tables are dropped by surprise.
pub fn inspect(target: &dyn Target, warehouses: i64, fresh: bool) -> TargetResult<Shape> {
    let w = dbscope_tpcc::warehouses(warehouses).map_err(|e| TargetError::config(e.to_string()))?;
    let d = tdialect(target)?;
    let mut sess = target.connect()?;
    let there = existing(sess.as_mut(), d)?;
    if fresh || there.is_empty() {
        return Ok(Shape::Build);
    }
    let shape = if there.iter().any(|t| t == SHAPE_TABLE) {
        sess.query_rows(
            &format!("SELECT warehouses, c_last FROM {SHAPE_TABLE}"),
            &[],
        )?
    } else {
        Vec::new()
    };
    let recorded = shape.first().and_then(|r| {
        Some((
            r.first()?.as_deref()?.parse::<i64>().ok()?,
            r.get(1)?.as_deref()?.parse::<i64>().ok()?,
        ))
    });
    match recorded {
        Some((rw, c_last)) if rw == w && there.len() == schema::TABLES.len() + 1 => {
            Ok(Shape::Reuse { c_last })
        }
        Some((rw, _)) => Err(TargetError::config(format!(
            "the database holds a TPC-C build of {rw} warehouse(s), not {w}: pass --fresh to drop and rebuild it"
        ))),
        None => Err(TargetError::config(format!(
            "the database holds tables named like TPC-C's ({}) but no recorded dbscope build: pass --fresh to drop and rebuild them",
            there.join(", ")
        ))),
    }
}

/// One timed step of a build ([`build_timed`]): `create-tables`, `load` (one per build
/// session, its rows), `create-indexes`, `analyze`; times in ns on the clock given.
#[derive(Clone, Debug)]
pub struct BuildStep {
    pub session: u32,
    pub name: &'static str,
    pub start_ns: u64,
    pub end_ns: u64,
    pub rows: u64,
    /// The step's error class when it failed.
    pub error: Option<String>,
}

/// Builds (or reuses) the tables; see the module docs and [`inspect`].
pub fn build(target: &dyn Target, opts: &BuildOptions) -> TargetResult<Built> {
    build_timed(target, opts, &|| 0).0
}

/// [`build`], timing each step with `now` (ns): what the build did, and its steps.
pub fn build_timed(
    target: &dyn Target,
    opts: &BuildOptions,
    now: &(dyn Fn() -> u64 + Sync),
) -> (TargetResult<Built>, Vec<BuildStep>) {
    let steps = std::sync::Mutex::new(Vec::new());
    let r = build_steps(target, opts, now, &steps);
    (r, steps.into_inner().unwrap_or_else(|e| e.into_inner()))
}

/// Runs `f` as step `name` of build session `session`, recording it in `steps`.
fn step<T>(
    steps: &std::sync::Mutex<Vec<BuildStep>>,
    now: &(dyn Fn() -> u64 + Sync),
    session: u32,
    name: &'static str,
    rows: impl FnOnce(&T) -> u64,
    f: impl FnOnce() -> TargetResult<T>,
) -> TargetResult<T> {
    let start_ns = now();
    let r = f();
    let s = BuildStep {
        session,
        name,
        start_ns,
        end_ns: now(),
        rows: r.as_ref().map_or(0, rows),
        error: r.as_ref().err().map(|e| e.class.clone()),
    };
    steps.lock().unwrap_or_else(|e| e.into_inner()).push(s);
    r
}

fn build_steps(
    target: &dyn Target,
    opts: &BuildOptions,
    now: &(dyn Fn() -> u64 + Sync),
    steps: &std::sync::Mutex<Vec<BuildStep>>,
) -> TargetResult<Built> {
    let w = dbscope_tpcc::warehouses(opts.warehouses)
        .map_err(|e| TargetError::config(e.to_string()))?;
    let d = tdialect(target)?;
    if let Shape::Reuse { c_last } = inspect(target, w, opts.fresh)? {
        return Ok(Built {
            built: false,
            rows: Vec::new(),
            c_last,
            sessions: 0,
        });
    }
    let mut sess = target.connect()?;
    step(
        steps,
        now,
        0,
        "create-tables",
        |_| 0,
        || {
            for s in drop_tables() {
                sess.batch(&s)?;
            }
            sess.batch(&format!("DROP TABLE IF EXISTS {SHAPE_TABLE}"))?;
            for s in create_tables(d) {
                sess.batch(&s)?;
            }
            Ok(())
        },
    )?;
    let nu = NuConstants::draw(&mut Gen::new(opts.seed));
    let now_text = load_time();
    let sessions = match d {
        schema::Dialect::Sqlite => 1,
        schema::Dialect::Postgres | schema::Dialect::Mysql => {
            opts.build_sessions.clamp(1, w as u32)
        }
    };
    let total = |c: &Vec<(Table, u64)>| -> u64 { c.iter().map(|(_, n)| n).sum() };
    let mut counts: Vec<(Table, u64)> = Vec::new();
    if sessions == 1 {
        counts = step(steps, now, 0, "load", total, || {
            let mut c = Vec::new();
            load(
                sess.as_mut(),
                d,
                opts.seed,
                &now_text,
                &nu,
                // The one loader loads ITEM too (it was left out on PostgreSQL: every
                // New-Order then rolled back for want of items).
                Some(()),
                (1..=w).collect(),
                &mut c,
            )?;
            Ok(c)
        })?;
    } else {
        let results: Vec<TargetResult<Vec<(Table, u64)>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..sessions as i64)
                .map(|s| {
                    let mine: Vec<i64> =
                        (1..=w).filter(|x| (x - 1) % sessions as i64 == s).collect();
                    let now_text = now_text.clone();
                    scope.spawn(move || {
                        let mut sess = target.connect()?;
                        step(steps, now, s as u32, "load", total, || {
                            let mut c = Vec::new();
                            let items_too = (s == 0).then_some(());
                            load(
                                sess.as_mut(),
                                d,
                                opts.seed,
                                &now_text,
                                &nu,
                                items_too,
                                mine,
                                &mut c,
                            )?;
                            Ok(c)
                        })
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(TargetError::config("a build session panicked")))
                })
                .collect()
        });
        for r in results {
            for (t, n) in r? {
                add(&mut counts, t, n);
            }
        }
    }
    step(
        steps,
        now,
        0,
        "create-indexes",
        |_| 0,
        || {
            for s in create_indexes(d) {
                sess.batch(&s)?;
            }
            Ok(())
        },
    )?;
    sess.batch(&format!(
        "CREATE TABLE {SHAPE_TABLE} (warehouses INTEGER NOT NULL, c_last INTEGER NOT NULL)"
    ))?;
    sess.batch(&format!(
        "INSERT INTO {SHAPE_TABLE} VALUES ({w}, {})",
        nu.c_last
    ))?;
    let analyze = match d {
        schema::Dialect::Postgres => Some("ANALYZE"),
        // Its result set (a row per table) is read and dropped by `batch`.
        schema::Dialect::Mysql => Some("ANALYZE TABLE"),
        schema::Dialect::Sqlite => None,
    };
    if let Some(analyze) = analyze {
        step(
            steps,
            now,
            0,
            "analyze",
            |_| 0,
            || sess.batch(&format!("{analyze} {}", schema::TABLES.join(", "))),
        )?;
    }
    // In the schema's order, whichever loader sent a table first.
    counts.sort_by_key(|(t, _)| schema::TABLES.iter().position(|x| *x == t.name()));
    Ok(Built {
        built: true,
        rows: counts.into_iter().map(|(t, n)| (t.name(), n)).collect(),
        c_last: nu.c_last,
        sessions,
    })
}

fn add(counts: &mut Vec<(Table, u64)>, t: Table, n: u64) {
    match counts.iter_mut().find(|(x, _)| *x == t) {
        Some((_, c)) => *c += n,
        None => counts.push((t, n)),
    }
}

/// The load's timestamp (UTC, `YYYY-MM-DD HH:MM:SS`) for C_SINCE, O_ENTRY_D and the like.
fn load_time() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Rows gathered per table until a batch is full: a COPY body (PostgreSQL; MariaDB/MySQL's
/// LOAD DATA takes the same text) or a multi-row INSERT (SQLite). The population interleaves
/// tables (a customer, its history row; an order, its
/// lines, its new-order row), so each table has a batch of its own: one batch for all would be
/// sent every few rows.
struct Batcher<'a> {
    sess: &'a mut dyn Session,
    d: schema::Dialect,
    pending: Vec<(Table, String, u64)>,
    counts: &'a mut Vec<(Table, u64)>,
}

impl Batcher<'_> {
    fn push(&mut self, (t, v): Row) -> TargetResult<()> {
        let at = match self.pending.iter().position(|(pt, _, _)| *pt == t) {
            Some(i) => i,
            None => {
                self.pending.push((t, String::new(), 0));
                self.pending.len() - 1
            }
        };
        let (_, body, n) = &mut self.pending[at];
        match self.d {
            schema::Dialect::Postgres | schema::Dialect::Mysql => body.push_str(&copy_line(&v)),
            schema::Dialect::Sqlite => {
                if *n == 0 {
                    body.push_str(&format!("INSERT INTO {} VALUES ", t.name()));
                } else {
                    body.push(',');
                }
                literal_row(body, &v);
            }
        }
        *n += 1;
        let full = match self.d {
            schema::Dialect::Postgres | schema::Dialect::Mysql => body.len() >= (8 << 20),
            schema::Dialect::Sqlite => *n >= 500,
        };
        if full {
            let (t, body, n) = std::mem::replace(&mut self.pending[at], (t, String::new(), 0));
            self.send(t, body, n)?;
        }
        Ok(())
    }

    /// Sends every table's batch.
    fn flush(&mut self) -> TargetResult<()> {
        for (t, body, n) in std::mem::take(&mut self.pending) {
            if n > 0 {
                self.send(t, body, n)?;
            }
        }
        Ok(())
    }

    fn send(&mut self, t: Table, body: String, n: u64) -> TargetResult<()> {
        match self.d {
            schema::Dialect::Postgres | schema::Dialect::Mysql => {
                let sql = match self.d {
                    schema::Dialect::Mysql => t.load_data_sql(),
                    _ => t.copy_sql(),
                };
                let mut body = Some(body.into_bytes());
                let copied = self.sess.copy_in(&sql, &mut |buf| {
                    if let Some(b) = body.take() {
                        buf.extend_from_slice(&b);
                    }
                    Ok(false)
                })?;
                if copied != n {
                    return Err(TargetError::config(format!(
                        "{} into {} loaded {copied} rows of {n}",
                        sql.split(" INTO ").next().unwrap_or("COPY"),
                        t.name()
                    )));
                }
            }
            schema::Dialect::Sqlite => self.sess.batch(&body)?,
        }
        add(self.counts, t, n);
        Ok(())
    }
}

/// Loads ITEM (when `items_too`, and always on SQLite's single loader) and warehouses `ws`
/// through one session, in one transaction.
#[allow(clippy::too_many_arguments)]
fn load(
    sess: &mut dyn Session,
    d: schema::Dialect,
    seed: u64,
    now: &str,
    nu: &NuConstants,
    items_too: Option<()>,
    ws: Vec<i64>,
    counts: &mut Vec<(Table, u64)>,
) -> TargetResult<()> {
    let sqlite = d == schema::Dialect::Sqlite;
    // One transaction per loader: a commit (a WAL or journal sync) per batch would be most of
    // the build's time.
    sess.begin()?;
    let mut b = Batcher {
        sess,
        d,
        pending: Vec::new(),
        counts,
    };
    let r = (|| {
        if items_too.is_some() || sqlite {
            items(seed, &mut |r| b.push(r))?;
        }
        for &w in &ws {
            warehouse(w, seed, now, nu, &mut |r| b.push(r))?;
        }
        b.flush()
    })();
    match r {
        Ok(()) => b.sess.commit(),
        Err(e) => {
            let _ = b.sess.rollback();
            Err(e)
        }
    }
}

/// `(1, 'text', NULL, 12.34)` appended to `sql`.
fn literal_row(sql: &mut String, v: &[Value]) {
    sql.push('(');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            sql.push(',');
        }
        match x {
            Value::Int(n) => sql.push_str(&n.to_string()),
            Value::Dec(u, s) => sql.push_str(&dbscope_tpcc::populate::decimal(*u, *s)),
            Value::Text(t) => {
                sql.push('\'');
                sql.push_str(&t.replace('\'', "''"));
                sql.push('\'');
            }
            Value::Null => sql.push_str("NULL"),
        }
    }
    sql.push(')');
}

/// Runs the consistency conditions on the target; empty when every one holds.
pub fn check(target: &dyn Target) -> TargetResult<Vec<Violation>> {
    let d = tdialect(target)?;
    let mut sess = target.connect()?;
    if d == schema::Dialect::Mysql {
        // The conditions concatenate with `||`, which MySQL reads as OR unless told otherwise.
        sess.batch("SET SESSION sql_mode = CONCAT(@@SESSION.sql_mode, ',PIPES_AS_CONCAT')")?;
    }
    let mut out = Vec::new();
    for c in CONDITIONS {
        let sql = match d {
            // MySQL casts to CHAR, not TEXT.
            schema::Dialect::Mysql => c.sql.replace(" AS TEXT)", " AS CHAR)"),
            _ => c.sql.to_string(),
        };
        for r in sess.query_rows(&sql, &[])? {
            let num = |i: usize| {
                r.get(i)
                    .and_then(|x| x.as_deref())
                    .and_then(|x| x.parse::<i64>().ok())
                    .unwrap_or(0)
            };
            out.push(Violation {
                clause: c.clause,
                warehouse: num(0),
                district: num(1),
                found: r.get(2).cloned().flatten().unwrap_or_default(),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_time_is_a_timestamp() {
        let t = load_time();
        assert_eq!(t.len(), 19, "{t}");
        assert!(t.starts_with("20"), "{t}");
        assert_eq!(&t[4..5], "-");
        assert_eq!(&t[13..14], ":");
    }
}
