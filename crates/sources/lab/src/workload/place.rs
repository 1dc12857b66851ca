//! Where a workload's table lives and what is cached of it: PostgreSQL tablespaces and SQLite
//! attached files on `--tablespace-dir`, the shape a filled table was made with, and emptying the
//! OS page cache of a table's files (`posix_fadvise(DONTNEED)`), saying what could not be emptied.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use dbscope_db::{Dialect, Param, Session, TargetError, TargetResult};

/// The schema an attached SQLite database on `--tablespace-dir` is known by in every session.
pub const SQLITE_PLACE_SCHEMA: &str = "dbscope_place";

/// Where a workload's table goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// The database's default place (PostgreSQL's default tablespace, SQLite's main file).
    Default,
    /// A directory: a PostgreSQL tablespace on it, or an attached SQLite file in it.
    Dir(PathBuf),
}

impl Placement {
    /// `--tablespace-dir`: the directory must exist here (the server is on this machine).
    pub fn from_option(dir: Option<&Path>) -> Result<Self, crate::error::Error> {
        let Some(dir) = dir else {
            return Ok(Placement::Default);
        };
        let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
        match std::fs::metadata(&abs) {
            Ok(m) if m.is_dir() => Ok(Placement::Dir(abs)),
            Ok(_) => Err(crate::error::Error::invalid(
                "place",
                format!("{}: not a directory", abs.display()),
            )),
            Err(e) => Err(crate::error::Error::invalid(
                "place",
                format!(
                    "{}: {e} (the directory must exist on this machine, where the database \
                     server runs)",
                    abs.display()
                ),
            )),
        }
    }

    /// The text recorded in the manifest and in the table's shape.
    pub fn describe(&self) -> String {
        match self {
            Placement::Default => "default".into(),
            Placement::Dir(d) => d.display().to_string(),
        }
    }

    /// The file an attached SQLite database for `table` lives in.
    pub fn sqlite_file(&self, table: &str) -> Option<PathBuf> {
        match self {
            Placement::Default => None,
            Placement::Dir(d) => Some(d.join(format!("{table}.sqlite"))),
        }
    }
}

/// Attaches the SQLite file on the placement directory to this session (every session and every
/// reconnect: an attachment belongs to one connection). Returns the schema prefix for table names
/// (`dbscope_place.` or empty).
pub fn sqlite_attach(
    sess: &mut dyn Session,
    place: &Placement,
    table: &str,
) -> TargetResult<String> {
    let Some(file) = place.sqlite_file(table) else {
        return Ok(String::new());
    };
    let already = sess
        .query_rows(
            "SELECT count(*) FROM pragma_database_list WHERE name = ?1",
            &[Param::Text(SQLITE_PLACE_SCHEMA.into())],
        )?
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .is_some_and(|n| n != "0");
    if !already {
        let path = file.display().to_string().replace('\'', "''");
        sess.batch(&format!(
            "ATTACH DATABASE '{path}' AS {SQLITE_PLACE_SCHEMA}"
        ))?;
    }
    Ok(format!("{SQLITE_PLACE_SCHEMA}."))
}

/// Makes sure a PostgreSQL tablespace exists on the placement directory and returns its name
/// (`None` for the default place). An existing tablespace on the same location is reused; a new
/// one is named `dbscope_ts_<hash of the path>`. On failure the message says why in terms of the
/// directory's owner and permissions, which is what PostgreSQL needs.
pub fn pg_tablespace(sess: &mut dyn Session, place: &Placement) -> TargetResult<Option<String>> {
    let Placement::Dir(dir) = place else {
        return Ok(None);
    };
    let loc = dir.display().to_string();
    let found = sess.query_rows(
        "SELECT spcname FROM pg_tablespace WHERE pg_tablespace_location(oid) = $1",
        &[Param::Text(loc.clone())],
    )?;
    if let Some(name) = found.first().and_then(|r| r.first().cloned().flatten()) {
        return Ok(Some(name));
    }
    let name = format!("dbscope_ts_{:08x}", crc32fast::hash(loc.as_bytes()));
    let sql = format!(
        "CREATE TABLESPACE {name} LOCATION '{}'",
        loc.replace('\'', "''")
    );
    sess.batch(&sql).map_err(|e| {
        TargetError::config(format!(
            "--tablespace-dir {loc}: PostgreSQL could not create a tablespace there: {}. {}",
            e.message,
            dir_facts(dir)
        ))
    })?;
    Ok(Some(name))
}

/// Owner and mode of a directory, and what PostgreSQL needs of it.
fn dir_facts(dir: &Path) -> String {
    match std::fs::metadata(dir) {
        Ok(m) => format!(
            "The directory is owned by uid {} with mode {:o}; PostgreSQL needs it on the \
             server's machine, empty, and owned by the user the server runs as (often `postgres`: \
             chown postgres {}), and CREATE TABLESPACE needs a superuser",
            m.uid(),
            m.mode() & 0o7777,
            dir.display()
        ),
        Err(e) => format!("The directory cannot be read here: {e}"),
    }
}

/// A table's recorded shape: the workload's parameters that decide its contents, so that a
/// later run reuses the table only when it holds what that run asks for.
pub struct Shape<'a> {
    /// Schema prefix (`dbscope_place.` on an attached SQLite file) or empty.
    pub prefix: &'a str,
    /// The table.
    pub table: &'a str,
    /// The shape text, e.g. `rows=1000000 row_bytes=100 place=default`.
    pub want: String,
}

/// What [`Shape::check`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// No table: create and fill it.
    Missing,
    /// The table holds what is asked: reuse it.
    Same,
}

impl Shape<'_> {
    fn meta(&self) -> String {
        format!("{}dbscope_shape", self.prefix)
    }

    /// Is the table there, and of the wanted shape? A table of another shape, or one without a
    /// recorded shape (made by hand, or a fill that was interrupted), is an error that says how
    /// to go on.
    pub fn check(&self, sess: &mut dyn Session, dialect: Dialect) -> TargetResult<Found> {
        let meta = self.meta();
        // MariaDB/MySQL cannot index a TEXT column without a prefix length.
        let key = match dialect {
            Dialect::Mysql => "VARCHAR(64)",
            _ => "TEXT",
        };
        sess.batch(&format!(
            "CREATE TABLE IF NOT EXISTS {meta} (tbl {key} PRIMARY KEY, shape TEXT NOT NULL)"
        ))?;
        if !table_exists(sess, dialect, self.prefix, self.table)? {
            return Ok(Found::Missing);
        }
        let p = dialect.placeholder(1);
        let rows = sess.query_rows(
            &format!("SELECT shape FROM {meta} WHERE tbl = {p}"),
            &[Param::Text(self.table.into())],
        )?;
        match rows.first().and_then(|r| r.first().cloned().flatten()) {
            Some(have) if have == self.want => Ok(Found::Same),
            Some(have) => Err(TargetError::config(format!(
                "table {} was filled for {have}, this run asks for {}: add --fresh to recreate \
                 it, or --table NAME to keep both",
                self.table, self.want
            ))),
            None => Err(TargetError::config(format!(
                "table {} exists but dbscope did not record filling it (made elsewhere, or a fill \
                 that was interrupted): add --fresh to recreate it, or --table NAME",
                self.table
            ))),
        }
    }

    /// Records the shape (inside the fill's transaction, so an interrupted fill records none).
    pub fn record(&self, sess: &mut dyn Session, dialect: Dialect) -> TargetResult<()> {
        let meta = self.meta();
        let (p1, p2) = (dialect.placeholder(1), dialect.placeholder(2));
        sess.query_rows(
            &format!("DELETE FROM {meta} WHERE tbl = {p1}"),
            &[Param::Text(self.table.into())],
        )?;
        sess.query_rows(
            &format!("INSERT INTO {meta} (tbl, shape) VALUES ({p1}, {p2})"),
            &[
                Param::Text(self.table.into()),
                Param::Text(self.want.clone()),
            ],
        )?;
        Ok(())
    }
}

/// True when `table` exists (in the attached schema when `prefix` names one).
pub fn table_exists(
    sess: &mut dyn Session,
    dialect: Dialect,
    prefix: &str,
    table: &str,
) -> TargetResult<bool> {
    let n = match dialect {
        Dialect::Postgres => sess.query_i64(&format!(
            "SELECT count(*) FROM pg_class WHERE relname = '{table}' AND relkind IN ('r', 'p') \
             AND pg_table_is_visible(oid)"
        ))?,
        Dialect::Sqlite => sess.query_i64(&format!(
            "SELECT count(*) FROM {prefix}sqlite_master WHERE type = 'table' AND name = '{table}'"
        ))?,
        Dialect::Null => vec![1],
        Dialect::Mysql => sess.query_i64(&format!(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() \
             AND table_name = '{table}'"
        ))?,
    };
    Ok(n.first().copied().unwrap_or(0) > 0)
}

/// Drops the OS page cache of `path` (and its PostgreSQL segment files `path.1`, `path.2`, …):
/// data is synced first, since the kernel keeps dirty pages. Returns the bytes advised.
#[allow(unsafe_code)]
pub fn drop_os_cache(path: &Path, segments: bool) -> std::io::Result<u64> {
    let mut total = 0;
    let mut files = vec![path.to_owned()];
    if segments {
        for i in 1.. {
            let p = PathBuf::from(format!("{}.{i}", path.display()));
            if !p.exists() {
                break;
            }
            files.push(p);
        }
    }
    for f in files {
        let file = std::fs::File::open(&f)?;
        file.sync_data()?;
        let len = file.metadata()?.len();
        // SAFETY: a valid open descriptor; the call only advises the kernel.
        let rc = unsafe {
            use std::os::fd::AsRawFd;
            libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED)
        };
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
        total += len;
    }
    Ok(total)
}

/// Empties what can be emptied of a PostgreSQL table's caches before a cold run, and returns one
/// line per cache saying whether it was: the server's shared buffers cannot be emptied short of a
/// restart (`restarted`: the caller did one), the OS page cache of the table's files can when the
/// server runs here and they are readable.
pub fn pg_make_cold(sess: &mut dyn Session, relations: &[String], restarted: bool) -> Vec<String> {
    let mut notes = Vec::new();
    if !restarted {
        notes.push(
            "PostgreSQL shared_buffers: NOT emptied (no eviction before PostgreSQL 17's \
             pg_buffercache_evict; only a server restart empties them: give --restart-cmd)"
                .to_string(),
        );
    }
    if let Err(e) = sess.batch("CHECKPOINT") {
        notes.push(format!(
            "CHECKPOINT refused ({}): dirty pages stay in the OS cache",
            e.message
        ));
    }
    let data_dir = match sess.query_rows("SELECT current_setting('data_directory')", &[]) {
        Ok(r) => r.first().and_then(|r| r.first().cloned().flatten()),
        Err(e) => {
            notes.push(format!(
                "OS page cache: NOT emptied: cannot read data_directory ({})",
                e.message
            ));
            return notes;
        }
    };
    let Some(data_dir) = data_dir else {
        return notes;
    };
    for rel in relations {
        let file = sess
            .query_rows(
                "SELECT pg_relation_filepath($1)",
                &[Param::Text(rel.clone())],
            )
            .ok()
            .and_then(|r| r.first().and_then(|r| r.first().cloned().flatten()));
        let Some(file) = file else {
            notes.push(format!(
                "OS page cache of {rel}: NOT emptied (no file path)"
            ));
            continue;
        };
        let path = Path::new(&data_dir).join(&file);
        match drop_os_cache(&path, true) {
            Ok(bytes) => notes.push(format!(
                "OS page cache of {rel}: emptied (posix_fadvise DONTNEED on {}, {bytes} bytes)",
                path.display()
            )),
            Err(e) => notes.push(format!(
                "OS page cache of {rel}: NOT emptied ({}: {e}; the server's files must be \
                 reachable from this machine)",
                path.display()
            )),
        }
    }
    notes
}

/// Empties what can be emptied of a MariaDB/MySQL table's caches before a cold run, and returns
/// one line per cache saying whether it was: InnoDB's buffer pool cannot be emptied short of a
/// restart; the OS page cache of the table's `.ibd` file can when the server runs here and the
/// file is readable (with `innodb_flush_method=O_DIRECT` InnoDB reads bypass that cache anyway).
pub fn my_make_cold(sess: &mut dyn Session, table: &str) -> Vec<String> {
    let mut notes = vec![
        "InnoDB buffer pool: NOT emptied (InnoDB cannot evict a table's pages; only a server \
         restart with innodb_buffer_pool_load_at_startup=OFF empties it)"
            .to_string(),
    ];
    let facts = sess.query_rows("SELECT @@datadir, DATABASE(), @@innodb_flush_method", &[]);
    let row = match facts {
        Ok(r) => r.into_iter().next().unwrap_or_default(),
        Err(e) => {
            notes.push(format!(
                "OS page cache: NOT emptied: cannot read @@datadir ({})",
                e.message
            ));
            return notes;
        }
    };
    let get = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
    let (datadir, db, method) = (get(0), get(1), get(2));
    let path = Path::new(&datadir).join(&db).join(format!("{table}.ibd"));
    match drop_os_cache(&path, false) {
        Ok(bytes) => notes.push(format!(
            "OS page cache of {table}: emptied (posix_fadvise DONTNEED on {}, {bytes} bytes; \
             innodb_flush_method={method})",
            path.display()
        )),
        Err(e) => notes.push(format!(
            "OS page cache of {table}: NOT emptied ({}: {e}; the server's files must be \
             reachable from this machine)",
            path.display()
        )),
    }
    notes
}

/// Empties the OS page cache of a SQLite database file (and its -wal and -journal files).
pub fn sqlite_make_cold(file: &Path) -> Vec<String> {
    let mut notes = vec![
        "SQLite page cache: empty (every session opens a new connection, whose cache starts empty)"
            .to_string(),
    ];
    for suffix in ["", "-wal", "-journal"] {
        let p = PathBuf::from(format!("{}{suffix}", file.display()));
        if suffix.is_empty() || p.exists() {
            match drop_os_cache(&p, false) {
                Ok(bytes) => notes.push(format!(
                    "OS page cache of {}: emptied (posix_fadvise DONTNEED, {bytes} bytes)",
                    p.display()
                )),
                Err(e) => notes.push(format!(
                    "OS page cache of {}: NOT emptied ({e})",
                    p.display()
                )),
            }
        }
    }
    notes
}

/// The SQLite file a schema (`main` or the attached one) is stored in.
pub fn sqlite_file_of(sess: &mut dyn Session, schema: &str) -> TargetResult<Option<PathBuf>> {
    let rows = sess.query_rows(
        "SELECT file FROM pragma_database_list WHERE name = ?1",
        &[Param::Text(schema.into())],
    )?;
    Ok(rows
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .filter(|f| !f.is_empty())
        .map(PathBuf::from))
}

/// A deterministic, incompressible pad source: `len` seeded letters and digits, twice over, so
/// any row can take a slice of any length up to `len` at any offset below `len`.
pub fn pad_source(len: usize, seed: u64) -> Vec<u8> {
    use rand::{Rng, SeedableRng};
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let n = len.max(64) * 2;
    (0..n)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbscope_db::{SqliteTarget, Target};

    #[test]
    fn placement_dir_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Placement::from_option(None).unwrap(), Placement::Default);
        let p = Placement::from_option(Some(dir.path())).unwrap();
        assert!(matches!(p, Placement::Dir(_)));
        let e = Placement::from_option(Some(&dir.path().join("nope"))).unwrap_err();
        assert!(e.to_string().contains("must exist"), "{e}");
        let f = dir.path().join("file");
        std::fs::write(&f, b"x").unwrap();
        let e = Placement::from_option(Some(&f)).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
    }

    #[test]
    fn shape_is_checked_on_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        let t = SqliteTarget::new(&dir.path().join("a.db"), &[]).unwrap();
        let mut s = t.connect().unwrap();
        let shape = |want: &str| Shape {
            prefix: "",
            table: "t",
            want: want.into(),
        };
        assert_eq!(
            shape("rows=1").check(s.as_mut(), Dialect::Sqlite).unwrap(),
            Found::Missing
        );
        s.batch("CREATE TABLE t (id INTEGER PRIMARY KEY)").unwrap();
        let e = shape("rows=1")
            .check(s.as_mut(), Dialect::Sqlite)
            .unwrap_err();
        assert!(e.message.contains("did not record filling it"), "{e}");
        shape("rows=1").record(s.as_mut(), Dialect::Sqlite).unwrap();
        assert_eq!(
            shape("rows=1").check(s.as_mut(), Dialect::Sqlite).unwrap(),
            Found::Same
        );
        let e = shape("rows=2")
            .check(s.as_mut(), Dialect::Sqlite)
            .unwrap_err();
        assert!(e.message.contains("filled for rows=1"), "{e}");
        assert!(e.message.contains("--fresh"), "{e}");
    }

    #[test]
    fn os_cache_of_a_file_can_be_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a");
        std::fs::write(&f, vec![7u8; 10_000]).unwrap();
        assert_eq!(drop_os_cache(&f, false).unwrap(), 10_000);
        assert!(drop_os_cache(&dir.path().join("missing"), false).is_err());
    }

    #[test]
    fn pad_source_is_seeded() {
        assert_eq!(pad_source(10, 1), pad_source(10, 1));
        assert_ne!(pad_source(10, 1), pad_source(10, 2));
        assert_eq!(pad_source(10, 1).len(), 128);
    }
}
