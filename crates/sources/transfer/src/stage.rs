//! The target of a transfer in as the catalog describes it (plain or partitioned with its leaf
//! partitions, its columns, an upsert's key checked to be a unique key), and the staging table
//! with the loaders that move its rows into the target: one per partition, each `INSERT INTO` its
//! partition, an upsert's with `ON CONFLICT (key) DO UPDATE` counting inserted and updated rows
//! (issue 34 item 12).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use dbscope_core::RunClock;
use dbscope_pgwire::WireConn;

use crate::config::LoadMode;
use crate::error::{db, Error};
use crate::session::{connect, one};

/// A table of a transfer in.
#[derive(Debug)]
pub(crate) struct Target {
    /// The table as given (`name` or `schema.name`).
    pub table: String,
    /// Leaf partitions with their partition constraints, when the table is partitioned.
    pub partitions: Vec<(String, String)>,
    /// Columns the loaders insert (quoted; generated columns left out), in table order.
    pub columns: Vec<String>,
    /// An upsert's key columns (quoted), empty otherwise.
    pub key: Vec<String>,
    /// An upsert's `SET` list: every inserted column not in the key from `EXCLUDED`.
    set: String,
}

/// A plain identifier as PostgreSQL folds it unquoted (lower case), or `None`.
fn plain_ident(s: &str) -> Option<String> {
    let mut c = s.chars();
    let ok = c
        .next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '$');
    ok.then(|| s.to_ascii_lowercase())
}

/// `"name"` for a column name from the catalog.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Reads the table's kind, partitions and columns and, for an upsert, checks the key: a primary
/// key or a unique index (not partial, not on expressions, not deferrable) on exactly its
/// columns, as `ON CONFLICT` needs. Nothing has moved yet when this refuses.
pub(crate) fn inspect(c: &mut WireConn, table: &str, mode: &LoadMode) -> Result<Target, Error> {
    let q =
        |c: &mut WireConn, sql: &str| c.simple_query(sql).map_err(|e| Error::database(table, e));
    let reg = format!("'{table}'::regclass");
    let kind = q(
        c,
        &format!("SELECT relkind::text FROM pg_class WHERE oid = {reg}"),
    )?
    .into_iter()
    .next()
    .and_then(|r| r.into_iter().next().flatten())
    .unwrap_or_default();
    if kind != "r" && kind != "p" {
        return Err(Error::Table(format!(
            "{table} is not a table (relkind {kind}): transfer loads into a table or a partitioned table"
        )));
    }
    let cols = q(
        c,
        &format!(
            "SELECT attname FROM pg_attribute WHERE attrelid = {reg} AND attnum > 0 \
             AND NOT attisdropped AND attgenerated = '' ORDER BY attnum"
        ),
    )?;
    let names: Vec<String> = cols
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
        .collect();
    let partitions = if kind == "p" {
        let leaves: Vec<(String, String)> = q(
            c,
            &format!(
                "SELECT relid::regclass::text, pg_get_partition_constraintdef(relid) \
                 FROM pg_partition_tree({reg}) WHERE isleaf AND relid <> {reg} ORDER BY 1"
            ),
        )?
        .into_iter()
        .filter_map(|r| match &r[..] {
            [Some(n), Some(c)] => Some((n.clone(), c.clone())),
            _ => None,
        })
        .collect();
        if leaves.is_empty() {
            return Err(Error::Table(format!(
                "{table} is partitioned but has no partitions: create them first"
            )));
        }
        leaves
    } else {
        Vec::new()
    };
    let key = match mode {
        LoadMode::Upsert(given) => unique_key(c, table, &reg, given)?,
        _ => Vec::new(),
    };
    let set_cols: Vec<&String> = names.iter().filter(|n| !key.contains(n)).collect();
    // With every column in the key an update changes nothing; it still counts the row.
    let set = match set_cols.is_empty() {
        true => format!("{0} = EXCLUDED.{0}", quote(&key[0])),
        false => set_cols
            .iter()
            .map(|n| format!("{0} = EXCLUDED.{0}", quote(n)))
            .collect::<Vec<_>>()
            .join(", "),
    };
    Ok(Target {
        table: table.to_string(),
        partitions,
        columns: names.iter().map(|n| quote(n)).collect(),
        key: key.iter().map(|n| quote(n)).collect(),
        set: if key.is_empty() { String::new() } else { set },
    })
}

/// The upsert's key columns (catalog names): `given`, checked to be a unique key of the table,
/// or the primary key when `given` is empty.
fn unique_key(
    c: &mut WireConn,
    table: &str,
    reg: &str,
    given: &[String],
) -> Result<Vec<String>, Error> {
    let mut want = Vec::new();
    for g in given {
        want.push(plain_ident(g).ok_or_else(|| {
            Error::Config(format!(
                "--key {g:?}: not a plain column name (letters, digits, _)"
            ))
        })?);
    }
    want.sort();
    want.dedup();
    // Key columns only (not an index's INCLUDE columns), sorted: ON CONFLICT matches a set.
    let rows = c
        .simple_query(&format!(
            "SELECT i.indisprimary::text, (i.indimmediate AND i.indpred IS NULL \
             AND i.indexprs IS NULL AND i.indisvalid)::text, \
             (SELECT string_agg(a.attname, ',' ORDER BY a.attname) \
              FROM unnest((i.indkey::int2[])[0:i.indnkeyatts - 1]) k \
              JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k) \
             FROM pg_index i WHERE i.indrelid = {reg} AND i.indisunique \
             ORDER BY NOT i.indisprimary, i.indexrelid"
        ))
        .map_err(|e| Error::database(table, e))?;
    let mut has = Vec::new();
    for r in rows {
        let (primary, usable, cols) = match &r[..] {
            [Some(p), Some(u), Some(c)] => (p == "true", u == "true", c.clone()),
            _ => continue,
        };
        let cols: Vec<String> = cols.split(',').map(str::to_string).collect();
        if usable && ((want.is_empty() && primary) || cols == want) {
            return Ok(cols);
        }
        has.push(format!(
            "{}({}){}",
            if primary { "primary key " } else { "unique " },
            cols.join(","),
            if usable {
                ""
            } else {
                " (partial, on expressions or deferrable: ON CONFLICT cannot use it)"
            }
        ));
    }
    let has = match has.is_empty() {
        true => "none".to_string(),
        false => has.join(", "),
    };
    Err(Error::Table(match want.is_empty() {
        true => format!(
            "{table} has no primary key: --mode upsert needs --key COL[,COL…] naming a unique key \
             of it (its unique keys: {has})"
        ),
        false => format!(
            "--key {}: not a unique key of {table}: an upsert (INSERT … ON CONFLICT) needs a \
             primary key or unique index on exactly these columns (its unique keys: {has}); \
             nothing was loaded",
            want.join(",")
        ),
    }))
}

impl Target {
    /// True when the mappers copy into a staging table and loaders move its rows: an upsert, or
    /// a partitioned table (one loader per partition).
    pub fn staged(&self, mode: &LoadMode) -> bool {
        matches!(mode, LoadMode::Upsert(_)) || !self.partitions.is_empty()
    }

    /// The staging table's name: beside the table (its schema), named after the coordinator's
    /// backend so two transfers do not share one.
    pub fn stage_name(&self, backend_pid: &str) -> String {
        let name = format!("dbscope_transfer_stage_{backend_pid}");
        match self.table.rsplit_once('.') {
            Some((schema, _)) => format!("{schema}.{name}"),
            None => name,
        }
    }

    /// `WHERE (key) IN (SELECT key FROM stage)`: the table's rows an upsert's files name.
    pub fn keyed_rows(&self, stage: &str) -> String {
        let k = self.key.join(", ");
        format!(
            "(SELECT * FROM {} WHERE ({k}) IN (SELECT {k} FROM {stage}))",
            self.table
        )
    }

    /// The statement a loader runs into `dest` (the table or one partition, rows restricted by
    /// `filter`), returning rows inserted and updated.
    fn load_sql(&self, stage: &str, dest: &str, filter: Option<&str>) -> String {
        let cols = self.columns.join(", ");
        let where_ = filter.map_or(String::new(), |f| format!(" WHERE {f}"));
        if self.key.is_empty() {
            format!(
                "WITH m AS (INSERT INTO {dest} ({cols}) SELECT {cols} FROM {stage}{where_} \
                 RETURNING 1) SELECT count(*), 0 FROM m"
            )
        } else {
            // xmax is 0 in a row version this statement inserted, the updating transaction's
            // id in one it updated.
            format!(
                "WITH m AS (INSERT INTO {dest} ({cols}) SELECT {cols} FROM {stage}{where_} \
                 ON CONFLICT ({}) DO UPDATE SET {} RETURNING (xmax = 0) AS ins) \
                 SELECT count(*) FILTER (WHERE ins), count(*) FILTER (WHERE NOT ins) FROM m",
                self.key.join(", "),
                self.set
            )
        }
    }
}

/// One loader's work: the staged rows of one partition (or of all) into it.
#[derive(Clone, Debug, Default)]
pub(crate) struct LoadWork {
    /// Loader number, from 0 (the partition's, in name order).
    pub loader: u32,
    /// The table or partition loaded.
    pub into: String,
    /// Rows inserted.
    pub inserted: u64,
    /// Rows updated (an upsert's rows whose key was there).
    pub updated: u64,
    /// Start, ns on the run's clock.
    pub start_ns: u64,
    /// End, ns on the run's clock.
    pub end_ns: u64,
    /// Why it failed.
    pub error: Option<String>,
}

/// Moves the staged rows into the target: one loader per partition (at most `parallel` at a
/// time, each on its own connection and in its own transaction), or one for a plain table.
pub(crate) fn load_stage(
    spec: &str,
    target: &Target,
    stage: &str,
    parallel: usize,
    clock: &RunClock,
) -> Vec<LoadWork> {
    let jobs: Vec<(String, Option<&str>)> = match target.partitions.is_empty() {
        true => vec![(target.table.clone(), None)],
        false => target
            .partitions
            .iter()
            .map(|(n, c)| (n.clone(), Some(c.as_str())))
            .collect(),
    };
    let next = AtomicUsize::new(0);
    let done = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..parallel.clamp(1, jobs.len()) {
            s.spawn(|| {
                let mut conn: Option<WireConn> = None;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((dest, filter)) = jobs.get(i) else {
                        break;
                    };
                    let mut w = LoadWork {
                        loader: i as u32,
                        into: dest.clone(),
                        ..Default::default()
                    };
                    w.start_ns = clock.now_ns();
                    let r = match &mut conn {
                        Some(c) => Ok(c),
                        None => connect(spec, &format!("dbscope/transfer/load/{i}"))
                            .map(|c| conn.insert(c))
                            .map_err(|e| e.to_string()),
                    }
                    .and_then(|c| {
                        one(c, &target.load_sql(stage, dest, *filter)).map_err(|e| db("INSERT", &e))
                    });
                    w.end_ns = clock.now_ns();
                    match r {
                        Ok(row) => {
                            let n = |j: usize| {
                                row.get(j)
                                    .cloned()
                                    .flatten()
                                    .and_then(|v| v.parse().ok())
                                    .unwrap_or(0)
                            };
                            (w.inserted, w.updated) = (n(0), n(1));
                        }
                        Err(e) => w.error = Some(format!("loader {i} ({dest}): {e}")),
                    }
                    done.lock().expect("loader results").push(w);
                }
            });
        }
    });
    let mut v = done.into_inner().expect("loader results");
    v.sort_by_key(|w| w.loader);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(key: &[&str], partitions: usize) -> Target {
        Target {
            table: "s.t".into(),
            partitions: (0..partitions)
                .map(|i| (format!("t{i}"), format!("(id >= {i})")))
                .collect(),
            columns: vec!["\"id\"".into(), "\"v\"".into()],
            key: key.iter().map(|k| quote(k)).collect(),
            set: "\"v\" = EXCLUDED.\"v\"".into(),
        }
    }

    #[test]
    fn statements_and_names() {
        let t = target(&["id"], 0);
        assert!(t.staged(&LoadMode::Upsert(vec![])));
        assert!(!t.staged(&LoadMode::Append));
        assert!(target(&[], 2).staged(&LoadMode::Append));
        assert_eq!(t.stage_name("42"), "s.dbscope_transfer_stage_42");
        let sql = t.load_sql("st", "s.t", None);
        assert!(
            sql.contains("ON CONFLICT (\"id\") DO UPDATE SET \"v\" = EXCLUDED.\"v\""),
            "{sql}"
        );
        let plain = target(&[], 2).load_sql("st", "t1", Some("(id >= 1)"));
        assert!(
            plain.contains(
                "INSERT INTO t1 (\"id\", \"v\") SELECT \"id\", \"v\" FROM st WHERE (id >= 1)"
            ),
            "{plain}"
        );
        assert!(!plain.contains("ON CONFLICT"));
        assert_eq!(
            t.keyed_rows("st"),
            "(SELECT * FROM s.t WHERE (\"id\") IN (SELECT \"id\" FROM st))"
        );
        assert_eq!(plain_ident("Id"), Some("id".into()));
        assert_eq!(plain_ident("a;b"), None);
        assert_eq!(quote("a\"b"), "\"a\"\"b\"");
    }
}
