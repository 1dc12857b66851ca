//! Database counter snapshots: PostgreSQL's statistics views (database, WAL, bgwriter and
//! checkpointer, table I/O, pg_stat_statements, pg_stat_io), MariaDB/MySQL's ([`super::mysql`])
//! and SQLite's file sizes, each a [`Section`]; a view that is absent or refused becomes a
//! missing section with the reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dbscope_core::observe::Section;
use dbscope_core::RunClock;

use dbscope_db::{Param, Session, Target};

use super::mysql::{self, RunWaits, WaitsHistory};
use super::probe::SessionProbe;

/// How many pg_stat_statements entries a snapshot keeps (by total execution time).
const TOP_STATEMENTS: usize = 10;

/// A connection that takes snapshots of one target's counters.
pub struct DbProbe {
    kind: &'static str,
    sess: Option<Box<dyn Session>>,
    /// Why there is no connection (the sections say so).
    no_conn: Option<String>,
    /// PostgreSQL's `server_version_num`.
    version_num: u32,
    /// PostgreSQL's data directory, when this role may read it; MariaDB/MySQL's `@@datadir`.
    data_directory: Result<PathBuf, String>,
    /// `track_wal_io_timing`.
    wal_timing: bool,
    tables: Vec<String>,
    sqlite_path: Option<PathBuf>,
    /// MariaDB/MySQL: the run's threads' waits, and the connections they were read for.
    waits: RunWaits,
    connections: Vec<u64>,
    /// MariaDB/MySQL: the server process, when it runs here (its pid file is readable).
    server_pid: Result<u32, String>,
    /// PostgreSQL: the database the probe is connected to, whose counters it reads.
    database: Option<String>,
    /// Read every user table's I/O (up to [`ALL_TABLES_MAX`]), for sessions that name none.
    all_tables: bool,
    /// MariaDB/MySQL, `--waits history`: the ring's reader (it restores the setup when dropped).
    history: Option<WaitsHistory>,
    /// `--waits history` ended (the setup restored): the timed waits are no longer read.
    history_ended: bool,
}

/// The most user tables whose I/O a probe of every table reads; a database with more is said.
pub const ALL_TABLES_MAX: usize = 1000;

impl DbProbe {
    /// Opens the probe's own connection (named `label` on PostgreSQL) and reads the server's
    /// version and data directory. Never fails: a probe without a connection reports every
    /// database section as missing.
    pub fn open(target: &dyn Target, tables: &[String], label: &str) -> DbProbe {
        let mut p = DbProbe {
            kind: target.kind(),
            sess: None,
            no_conn: None,
            version_num: 0,
            data_directory: Err("not PostgreSQL".into()),
            wal_timing: false,
            tables: tables.to_vec(),
            sqlite_path: target.data_path(),
            waits: RunWaits::default(),
            connections: Vec::new(),
            server_pid: Err("not MariaDB/MySQL".into()),
            database: None,
            all_tables: false,
            history: None,
            history_ended: false,
        };
        if p.kind == "mysql" {
            match target.connect() {
                Ok(mut s) => {
                    p.server_pid = mysql::server_pid(s.as_mut());
                    p.data_directory = s
                        .query_rows("SELECT @@datadir", &[])
                        .map_err(|e| e.message)
                        .and_then(|r| {
                            r.into_iter()
                                .next()
                                .and_then(|r| r.into_iter().next().flatten())
                                .ok_or_else(|| "@@datadir is empty".to_string())
                        })
                        .map(PathBuf::from);
                    p.sess = Some(s);
                }
                Err(e) => {
                    p.no_conn = Some(format!("cannot connect: {}", e.message));
                    p.server_pid = Err("the observer cannot connect".into());
                }
            }
            return p;
        }
        if p.kind != "postgres" {
            return p;
        }
        match target.connect() {
            Ok(mut s) => {
                let _ = s.set_label(label);
                p.version_num = setting(s.as_mut(), "server_version_num")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                p.data_directory = setting(s.as_mut(), "data_directory").map(PathBuf::from);
                p.wal_timing = setting(s.as_mut(), "track_wal_io_timing").is_ok_and(|v| v == "on");
                p.database = s
                    .query_rows("SELECT current_database()", &[])
                    .ok()
                    .and_then(|r| r.into_iter().next()?.into_iter().next()?);
                p.sess = Some(s);
            }
            Err(e) => p.no_conn = Some(format!("cannot connect: {}", e.message)),
        }
        p
    }

    /// PostgreSQL: the database the probe reads the counters of (`pg_stat_database`, tables,
    /// `pg_stat_statements`), when connected.
    pub fn database(&self) -> Option<&str> {
        self.database.as_deref()
    }

    /// Reads the I/O of every user table of the database (`pg_statio_user_tables`, up to
    /// [`ALL_TABLES_MAX`]) rather than the workload's: for sessions dbscope does not run (a
    /// capture's, a replay's), whose tables are not known beforehand.
    pub fn read_all_tables(&mut self) {
        self.all_tables = true;
    }

    /// The target kind (`postgres`, `sqlite`, `null`).
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// PostgreSQL's `server_version_num` (0 when unknown or not PostgreSQL).
    pub fn version_num(&self) -> u32 {
        self.version_num
    }

    /// Where the database's files are on this machine: PostgreSQL's data directory when it
    /// exists here (a local server), the SQLite file; else why not.
    pub fn files_path(&self) -> Result<PathBuf, super::Unavailable> {
        match self.kind {
            "sqlite" => self
                .sqlite_path
                .clone()
                .ok_or_else(|| "no SQLite path".to_string().into()),
            "postgres" => {
                let d = self.data_directory.clone().map_err(|e| {
                    format!("SHOW data_directory: {e} (needs superuser or pg_read_all_settings)")
                })?;
                if d.join("PG_VERSION").exists() {
                    Ok(d)
                } else {
                    Err(format!(
                        "the data directory {} is not on this machine (a remote server)",
                        d.display()
                    )
                    .into())
                }
            }
            "mysql" => {
                let d = self
                    .data_directory
                    .clone()
                    .map_err(|e| format!("SELECT @@datadir: {e}"))?;
                if d.is_dir() {
                    Ok(d)
                } else {
                    Err(format!(
                        "the data directory {} is not on this machine (a remote server)",
                        d.display()
                    )
                    .into())
                }
            }
            _ => Err("this target has no database files".to_string().into()),
        }
    }

    /// The data directory as the server names it (on this machine or not), when readable.
    pub fn data_directory(&self) -> Option<&Path> {
        self.data_directory.as_deref().ok()
    }

    /// The tablespaces the run uses, as the server names them: `(role, name, directory)`. The
    /// workload's own directories (`dirs`: `--tablespace-dir`, with the role it gave them), the
    /// tablespaces holding the workload's tables and their indexes, the database's default
    /// tablespace when it is not `pg_default`, and the temp tablespace: `temp_tablespaces`, or
    /// where temp objects go without it (the database's default tablespace). `data` is the
    /// data directory, for `pg_default`'s files (`base/`). Queries that fail leave their places out.
    pub(super) fn pg_places(
        &mut self,
        dirs: &[(String, PathBuf)],
        data: Option<&Path>,
    ) -> Vec<(String, Option<String>, PathBuf)> {
        let mut out = Vec::new();
        let Some(s) = self.sess.as_mut() else {
            return out;
        };
        let s = s.as_mut();
        let rows = |s: &mut dyn Session, sql: &str, args: &[Param]| -> Vec<(String, String)> {
            s.query_rows(sql, args)
                .map(|rows| {
                    rows.into_iter()
                        .filter_map(|r| {
                            let mut it = r.into_iter();
                            Some((it.next()??, it.next().flatten().unwrap_or_default()))
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        for (role, dir) in dirs {
            let loc = dir.display().to_string();
            let name = rows(
                s,
                "SELECT spcname, '' FROM pg_tablespace WHERE pg_tablespace_location(oid) = $1",
                &[Param::Text(loc)],
            )
            .into_iter()
            .next()
            .map(|r| r.0);
            out.push((role.clone(), name, dir.clone()));
        }
        if !self.tables.is_empty() {
            for (name, loc) in rows(
                s,
                "SELECT DISTINCT t.spcname, pg_tablespace_location(t.oid) FROM pg_class c \
                 JOIN pg_tablespace t ON t.oid = c.reltablespace \
                 WHERE pg_tablespace_location(t.oid) <> '' \
                 AND (c.relname = ANY(string_to_array($1, ',')) OR c.oid IN (SELECT i.indexrelid \
                 FROM pg_index i JOIN pg_class r ON r.oid = i.indrelid \
                 WHERE r.relname = ANY(string_to_array($1, ',')))) ORDER BY 1",
                &[Param::Text(self.tables.join(","))],
            ) {
                out.push(("tablespace".into(), Some(name), PathBuf::from(loc)));
            }
        }
        let default = rows(
            s,
            "SELECT t.spcname, pg_tablespace_location(t.oid) FROM pg_database d \
             JOIN pg_tablespace t ON t.oid = d.dattablespace WHERE d.datname = current_database()",
            &[],
        )
        .into_iter()
        .next();
        let default_place = |d: &(String, String)| {
            if d.1.is_empty() {
                data.map(|p| (Some(d.0.clone()), p.join("base")))
            } else {
                Some((Some(d.0.clone()), PathBuf::from(&d.1)))
            }
        };
        if let Some(d) = default.as_ref().filter(|d| !d.1.is_empty()) {
            out.push(("tablespace".into(), Some(d.0.clone()), PathBuf::from(&d.1)));
        }
        if !dirs.iter().any(|(role, _)| role == "temp") {
            let names = setting(s, "temp_tablespaces").unwrap_or_default();
            let names: Vec<String> = names
                .split(',')
                .map(|n| n.trim().trim_matches('"').to_string())
                .filter(|n| !n.is_empty())
                .collect();
            let mut found = false;
            for n in &names {
                let loc = rows(
                    s,
                    "SELECT spcname, pg_tablespace_location(oid) FROM pg_tablespace WHERE spcname = $1",
                    &[Param::Text(n.clone())],
                );
                if let Some(place) = loc.first().and_then(default_place) {
                    out.push(("temp".into(), place.0, place.1));
                    found = true;
                }
            }
            // Without temp_tablespaces (or with none that exists) temp tables and files go to
            // the database's default tablespace.
            if !found {
                if let Some(place) = default.as_ref().and_then(default_place) {
                    out.push(("temp".into(), place.0, place.1));
                }
            }
        }
        // A --tablespace-dir is also the tablespace of the workload's tables: listed once.
        let mut seen = std::collections::BTreeSet::new();
        out.retain(|p| seen.insert(p.clone()));
        out
    }

    /// The bytes the database's temp tables hold now (`pg_total_relation_size` of every temp
    /// table of every session in this database): PostgreSQL before 16 counts no temp-table I/O,
    /// and `temp_bytes` counts temp files only, so a temp load's size is what can be had of it.
    /// `None` on another target or when it cannot be read (the reason).
    pub fn temp_table_bytes(&mut self) -> Option<Result<f64, String>> {
        let s = self.sess.as_mut()?;
        Some(
            s.query_rows(
                "SELECT coalesce(sum(pg_total_relation_size(oid)), 0) FROM pg_class \
                 WHERE relpersistence = 't' AND relkind = 'r'",
                &[],
            )
            .map_err(|e| e.message)
            .map(|rows| {
                rows.into_iter()
                    .next()
                    .and_then(|r| r.into_iter().next().flatten())
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0.0)
            }),
        )
    }

    /// The pids of the run's backends that are connected now (`ended_too`: and those whose
    /// connection was closed but that have not exited yet), for their CPU time.
    pub fn backend_pids(&mut self, sessions: &SessionProbe, ended_too: bool) -> Vec<u32> {
        let Some(s) = self.sess.as_mut() else {
            return Vec::new();
        };
        let filter = sessions.backend_filter(ended_too);
        s.query_rows(
            &format!("SELECT pid FROM pg_stat_activity WHERE {}", filter.sql),
            &[Param::Text(filter.param)],
        )
        .map(|rows| {
            rows.into_iter()
                .filter_map(|r| r.into_iter().next().flatten()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
    }

    /// MariaDB/MySQL: the server process's pid when it runs on this machine, else why not.
    pub fn server_pid(&self) -> Result<u32, String> {
        self.server_pid.clone()
    }

    /// MariaDB/MySQL: reads the timed waits of the run's connections now, given as (session,
    /// connection id) (each keeps its last reading once gone). Other targets: nothing.
    pub fn read_waits(&mut self, conns: &[(u32, u64)], clock: &RunClock) {
        // After `--waits history` put the timers back, the summaries would be read with the
        // old timers' units: the last reading before stands.
        if self.kind != "mysql" || self.history_ended {
            return;
        }
        let ids: Vec<u64> = conns.iter().map(|c| c.1).collect();
        if let Some(s) = self.sess.as_mut() {
            self.waits.read(s.as_mut(), &ids);
            if let Some(h) = self.history.as_mut() {
                h.poll(s.as_mut(), conns, clock);
            }
        }
        self.connections = ids;
    }

    /// MariaDB/MySQL, `--waits history`: places the server's timer on the run's clock (at the
    /// start; again at the end, to measure the drift).
    pub fn calibrate_history(&mut self, clock: &RunClock) {
        if let (Some(h), Some(s)) = (self.history.as_mut(), self.sess.as_mut()) {
            h.calibrate(s.as_mut(), clock);
        }
    }

    /// MariaDB/MySQL: switches on the waits history for the run (`--waits history`), writing
    /// the waits into `run_dir`. The setup is restored by [`DbProbe::end_history`] or when the
    /// probe is dropped (a failed run).
    pub fn enable_history(&mut self, run_dir: &Path) {
        if self.kind != "mysql" {
            return;
        }
        self.history = Some(match self.sess.as_mut() {
            Some(s) => WaitsHistory::enable(s.as_mut(), run_dir),
            None => WaitsHistory::failed(self.no_conn.clone().unwrap_or_default()),
        });
    }

    /// MariaDB/MySQL, `--waits history`: reads the summary for the comparison and restores the
    /// setup; returns the warning when the ring lost waits. Call after the last
    /// [`DbProbe::read_waits`], before the end snapshot.
    pub fn end_history(&mut self) -> Option<String> {
        let (Some(h), Some(s)) = (self.history.as_mut(), self.sess.as_mut()) else {
            return None;
        };
        h.compare(s.as_mut());
        h.restore(s.as_mut());
        self.history_ended = true;
        h.short()
    }

    /// The database's counters now, by section name. PostgreSQL sections that cannot be read
    /// are present with `missing` set; SQLite gives its file sizes (the per-connection
    /// `sqlite3_db_status` counters come from the sessions themselves).
    pub fn snapshot(&mut self) -> BTreeMap<String, Section> {
        let mut out = BTreeMap::new();
        match self.kind {
            "postgres" => self.pg_sections(&mut out),
            "mysql" => match self.sess.as_mut() {
                Some(s) => {
                    let s = s.as_mut();
                    out.insert("mysql.status".into(), mysql::global_status(s));
                    out.insert("mysql.innodb_metrics".into(), mysql::innodb_metrics(s));
                    out.insert("mysql.file_io".into(), mysql::file_io(s));
                    out.insert("mysql.waits".into(), self.waits.section(&self.connections));
                    if let Some(h) = &self.history {
                        out.insert("mysql.waits_history".into(), h.section());
                    }
                }
                None => {
                    let why = self.no_conn.clone().unwrap_or_default();
                    for name in [
                        "mysql.status",
                        "mysql.innodb_metrics",
                        "mysql.file_io",
                        "mysql.waits",
                    ] {
                        out.insert(name.into(), Section::missing(why.clone()));
                    }
                }
            },
            "sqlite" => {
                if let Some(p) = &self.sqlite_path {
                    out.insert("sqlite.files".into(), sqlite_files(p));
                }
            }
            _ => {}
        }
        out
    }

    fn pg_sections(&mut self, out: &mut BTreeMap<String, Section>) {
        let Some(s) = self.sess.as_mut() else {
            let why = self.no_conn.clone().unwrap_or_default();
            for name in [
                "pg_stat_database",
                "pg_stat_wal",
                "pg_stat_bgwriter",
                "pg_stat_checkpointer",
                "pg_statio_user_tables",
                "pg_stat_statements",
                "pg_stat_io",
                "pg_ls_tmpdir",
            ] {
                out.insert(name.into(), Section::missing(why.clone()));
            }
            return;
        };
        let s = s.as_mut();
        let v = self.version_num;
        out.insert(
            "pg_stat_database".into(),
            one_row(
                s,
                "pg_stat_database",
                &[
                    "xact_commit",
                    "xact_rollback",
                    "blks_read",
                    "blks_hit",
                    "tup_returned",
                    "tup_fetched",
                    "tup_inserted",
                    "tup_updated",
                    "tup_deleted",
                    "conflicts",
                    "temp_files",
                    "temp_bytes",
                    "deadlocks",
                    "blk_read_time",
                    "blk_write_time",
                ],
                "WHERE datname = current_database()",
            ),
        );
        let mut wal = one_row(
            s,
            "pg_stat_wal",
            &[
                "wal_records",
                "wal_fpi",
                "wal_bytes",
                "wal_buffers_full",
                "wal_write",
                "wal_sync",
                "wal_write_time",
                "wal_sync_time",
            ],
            "",
        );
        if wal.missing.is_none() {
            wal.text.insert(
                "track_wal_io_timing".into(),
                if self.wal_timing { "on" } else { "off" }.into(),
            );
            if !self.wal_timing {
                // Without the setting the times read 0: they are not measured, not zero.
                wal.counters.remove("wal_write_time");
                wal.counters.remove("wal_sync_time");
            }
        }
        out.insert("pg_stat_wal".into(), wal);
        if v >= 170000 {
            out.insert(
                "pg_stat_bgwriter".into(),
                one_row(
                    s,
                    "pg_stat_bgwriter",
                    &["buffers_clean", "maxwritten_clean", "buffers_alloc"],
                    "",
                ),
            );
            out.insert(
                "pg_stat_checkpointer".into(),
                one_row(
                    s,
                    "pg_stat_checkpointer",
                    &[
                        "num_timed",
                        "num_requested",
                        "write_time",
                        "sync_time",
                        "buffers_written",
                    ],
                    "",
                ),
            );
        } else {
            // Before 17 the checkpointer's columns live in pg_stat_bgwriter; they are stored
            // under 17's names so that runs on either version read alike.
            let both = one_row(
                s,
                "pg_stat_bgwriter",
                &[
                    "buffers_clean",
                    "maxwritten_clean",
                    "buffers_alloc",
                    "buffers_backend",
                    "buffers_backend_fsync",
                    "checkpoints_timed AS num_timed",
                    "checkpoints_req AS num_requested",
                    "checkpoint_write_time AS write_time",
                    "checkpoint_sync_time AS sync_time",
                    "buffers_checkpoint AS buffers_written",
                ],
                "",
            );
            let (mut bg, mut cp) = (both.clone(), both);
            bg.counters
                .retain(|k, _| !CHECKPOINTER.contains(&k.as_str()));
            cp.counters
                .retain(|k, _| CHECKPOINTER.contains(&k.as_str()));
            if cp.missing.is_none() {
                cp.text
                    .insert("source".into(), "pg_stat_bgwriter (before 17)".into());
            }
            out.insert("pg_stat_bgwriter".into(), bg);
            out.insert("pg_stat_checkpointer".into(), cp);
        }
        out.insert(
            "pg_statio_user_tables".into(),
            statio(s, (!self.all_tables).then_some(&self.tables[..])),
        );
        out.insert("pg_stat_statements".into(), statements(s));
        out.insert("pg_ls_tmpdir".into(), temp_dirs(s));
        out.insert(
            "pg_stat_io".into(),
            if v >= 160000 {
                stat_io(s)
            } else {
                Section::missing(format!(
                    "pg_stat_io exists from PostgreSQL 16; this server is {}",
                    version_text(v)
                ))
            },
        );
    }
}

const CHECKPOINTER: [&str; 5] = [
    "num_timed",
    "num_requested",
    "write_time",
    "sync_time",
    "buffers_written",
];

fn version_text(v: u32) -> String {
    format!("{}.{}", v / 10000, v % 10000)
}

fn setting(s: &mut dyn Session, name: &str) -> Result<String, String> {
    s.query_rows("SELECT current_setting($1)", &[Param::Text(name.into())])
        .map_err(|e| e.message)
        .map(|rows| {
            rows.into_iter()
                .next()
                .and_then(|r| r.into_iter().next().flatten())
                .unwrap_or_default()
        })
}

/// The name a column has in the result (`expr AS name` → name).
fn out_name(col: &str) -> &str {
    col.rsplit(" AS ").next().unwrap_or(col)
}

/// One row of a view as counters (NULL columns left out).
fn one_row(s: &mut dyn Session, view: &str, cols: &[&str], filter: &str) -> Section {
    let sql = format!("SELECT {} FROM {view} {filter}", cols.join(", "));
    match s.query_rows(&sql, &[]) {
        Ok(rows) => match rows.into_iter().next() {
            Some(row) => Section {
                counters: numbers(cols, &row),
                ..Section::default()
            },
            None => Section::missing(format!("{view}: no row")),
        },
        Err(e) => Section::missing(format!("{view}: {}", e.message)),
    }
}

fn numbers(cols: &[&str], row: &[Option<String>]) -> BTreeMap<String, f64> {
    cols.iter()
        .zip(row)
        .filter_map(|(c, v)| Some((out_name(c).to_string(), v.as_deref()?.parse().ok()?)))
        .collect()
}

/// The I/O of the workload's `tables`, or (`None`) of every user table of the database.
fn statio(s: &mut dyn Session, tables: Option<&[String]>) -> Section {
    if tables.is_some_and(<[String]>::is_empty) {
        return Section::missing("the workload names no tables");
    }
    let cols = [
        "heap_blks_read",
        "heap_blks_hit",
        "idx_blks_read",
        "idx_blks_hit",
        "toast_blks_read",
        "toast_blks_hit",
    ];
    let (sql, params) = match tables {
        Some(t) => (
            format!(
                "SELECT relname, {} FROM pg_statio_user_tables WHERE relname = ANY(string_to_array($1, ','))",
                cols.join(", ")
            ),
            vec![Param::Text(t.join(","))],
        ),
        // Schema-qualified where the name alone is not the table's (another schema than public).
        None => (
            format!(
                "SELECT CASE WHEN schemaname = 'public' THEN relname ELSE schemaname || '.' || relname END, \
                 {} FROM pg_statio_user_tables LIMIT {}",
                cols.join(", "),
                ALL_TABLES_MAX + 1
            ),
            Vec::new(),
        ),
    };
    match s.query_rows(&sql, &params) {
        Ok(rows) if tables.is_none() && rows.len() > ALL_TABLES_MAX => Section::missing(format!(
            "the database has more than {ALL_TABLES_MAX} user tables: their I/O is not read"
        )),
        Ok(rows) => Section {
            rows: rows
                .into_iter()
                .map(|r| {
                    let name = r[0].clone().unwrap_or_default();
                    (name, numbers(&cols, &r[1..]))
                })
                .collect(),
            ..Section::default()
        },
        Err(e) => Section::missing(format!("pg_statio_user_tables: {}", e.message)),
    }
}

/// What the server's temporary-file directories hold now (sorts and hashes that spilled, per
/// tablespace, through `pg_ls_tmpdir`, which needs superuser or `pg_monitor`): gauges, as seed
/// 002's `dba_temp_free_space` read before and after a step. Temporary *tables* are not there:
/// their files live beside the database's, and `pg_stat_database` does not count them either.
fn temp_dirs(s: &mut dyn Session) -> Section {
    // A tablespace without a pgsql_tmp directory lists nothing (PostgreSQL 13+); pg_global holds
    // no temporary files.
    let sql = "SELECT t.spcname, count(f.name), coalesce(sum(f.size), 0) FROM pg_tablespace t \
               LEFT JOIN LATERAL pg_ls_tmpdir(t.oid) f ON true \
               WHERE t.spcname <> 'pg_global' GROUP BY t.spcname";
    match s.query_rows(sql, &[]) {
        Ok(rows) => {
            let mut sec = Section::default();
            let (mut files, mut bytes) = (0.0, 0.0);
            for r in rows {
                let num = |i: usize| -> f64 {
                    r.get(i)
                        .and_then(|v| v.as_deref()?.parse().ok())
                        .unwrap_or(0.0)
                };
                files += num(1);
                bytes += num(2);
                sec.text.insert(
                    format!("bytes.{}", r[0].clone().unwrap_or_default()),
                    num(2).to_string(),
                );
            }
            sec.gauges.insert("temp_dir_files".into(), files);
            sec.gauges.insert("temp_dir_bytes".into(), bytes);
            sec
        }
        Err(e) => Section::missing(format!(
            "pg_ls_tmpdir: {} (needs superuser or the pg_monitor role)",
            e.message
        )),
    }
}

fn statements(s: &mut dyn Session) -> Section {
    match s.query_rows(
        "SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'",
        &[],
    ) {
        Ok(rows) if rows.is_empty() => {
            return Section::missing(
                "the pg_stat_statements extension is not installed in this database \
                 (shared_preload_libraries = 'pg_stat_statements', then CREATE EXTENSION pg_stat_statements)",
            )
        }
        Ok(_) => {}
        Err(e) => return Section::missing(format!("pg_extension: {}", e.message)),
    }
    let cols = [
        "calls",
        "total_exec_time",
        "rows",
        "shared_blks_hit",
        "shared_blks_read",
        "wal_bytes",
    ];
    let sql = format!(
        "SELECT queryid, left(regexp_replace(query, '\\s+', ' ', 'g'), 80), {} FROM pg_stat_statements \
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
         ORDER BY total_exec_time DESC LIMIT {TOP_STATEMENTS}",
        cols.join(", ")
    );
    match s.query_rows(&sql, &[]) {
        Ok(rows) => {
            let mut sec = Section::default();
            for r in rows {
                let id = r[0].clone().unwrap_or_default();
                sec.text
                    .insert(id.clone(), r[1].clone().unwrap_or_default());
                sec.rows.insert(id, numbers(&cols, &r[2..]));
            }
            sec
        }
        Err(e) => Section::missing(format!("pg_stat_statements: {}", e.message)),
    }
}

fn stat_io(s: &mut dyn Session) -> Section {
    let cols = [
        "reads",
        "read_time",
        "writes",
        "write_time",
        "extends",
        "hits",
        "evictions",
        "fsyncs",
        "fsync_time",
        "op_bytes",
    ];
    let sql = format!(
        "SELECT backend_type || '/' || object || '/' || context, {} FROM pg_stat_io",
        cols.join(", ")
    );
    match s.query_rows(&sql, &[]) {
        Ok(rows) => Section {
            rows: rows
                .into_iter()
                .map(|r| (r[0].clone().unwrap_or_default(), numbers(&cols, &r[1..])))
                .filter(|(_, v)| !v.is_empty())
                .collect(),
            ..Section::default()
        },
        Err(e) => Section::missing(format!("pg_stat_io: {}", e.message)),
    }
}

/// The sizes of a SQLite database and its side files (`-wal`, `-journal`, `-shm`).
fn sqlite_files(db: &Path) -> Section {
    let mut sec = Section::default();
    for (name, suffix) in [
        ("db_bytes", ""),
        ("wal_bytes", "-wal"),
        ("journal_bytes", "-journal"),
        ("shm_bytes", "-shm"),
    ] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        let size = std::fs::metadata(&p).map_or(0, |m| m.len());
        sec.gauges.insert(name.into(), size as f64);
    }
    sec.text.insert("path".into(), db.display().to_string());
    sec
}

/// A failed run's probe puts the performance_schema setup `--waits history` changed back.
impl Drop for DbProbe {
    fn drop(&mut self) {
        if let (Some(h), Some(s)) = (self.history.as_mut(), self.sess.as_mut()) {
            h.restore(s.as_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_files_reports_side_files() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("a.db");
        std::fs::write(&db, vec![0u8; 4096]).unwrap();
        std::fs::write(dir.path().join("a.db-wal"), vec![0u8; 100]).unwrap();
        let s = sqlite_files(&db);
        assert_eq!(s.gauges["db_bytes"], 4096.0);
        assert_eq!(s.gauges["wal_bytes"], 100.0);
        assert_eq!(s.gauges["journal_bytes"], 0.0);
    }

    #[test]
    fn aliased_columns_keep_their_new_name() {
        let row = vec![Some("3".to_string()), None, Some("x".to_string())];
        let n = numbers(&["checkpoints_timed AS num_timed", "a", "b"], &row);
        assert_eq!(n, BTreeMap::from([("num_timed".to_string(), 3.0)]));
    }
}
