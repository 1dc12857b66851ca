//! The `events` tables: dropped, checked against the strategy's shape, created, pre-allocated.
//!
//! History is a table, a partitioned table (PostgreSQL's or InnoDB's, a partition per client)
//! or, on SQLite, a view over a table per client; `eventlastval` is kept by a trigger or by the client.

use std::fmt::Write as _;

use super::{Dialect, EventsWorkload, Session, Strategy, TargetError, TargetResult};
use super::{COLUMNS, HISTORY, LASTVAL};

impl EventsWorkload {
    pub(super) fn drop_all(&self, s: &mut dyn Session) -> TargetResult<()> {
        // DROP VIEW refuses a table and DROP TABLE a view: drop what is there.
        let history = match self.existing_shape(s)? {
            Some((kind, _)) if kind == "view" => format!("DROP VIEW {HISTORY}"),
            Some(_) => format!("DROP TABLE {HISTORY}"),
            None => String::new(),
        };
        match self.dialect {
            Dialect::Postgres => s.batch(&format!(
                "{}DROP TABLE IF EXISTS {LASTVAL} CASCADE; \
                 DROP FUNCTION IF EXISTS {LASTVAL}_from_history() CASCADE",
                if history.is_empty() {
                    String::new()
                } else {
                    format!("{history} CASCADE; ")
                }
            )),
            Dialect::Sqlite => {
                let mut sql = format!("{history}; DROP TABLE IF EXISTS {LASTVAL};");
                for row in s.query_rows(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'events_history_c%'",
                    &[],
                )? {
                    if let Some(Some(name)) = row.into_iter().next() {
                        let _ = write!(sql, " DROP TABLE IF EXISTS \"{name}\";");
                    }
                }
                s.batch(&sql)
            }
            Dialect::Null => Ok(()),
            // The trigger goes with its table.
            Dialect::Mysql => s.batch(&format!(
                "{}DROP TABLE IF EXISTS {LASTVAL}",
                if history.is_empty() {
                    String::new()
                } else {
                    format!("{history}; ")
                }
            )),
        }
    }

    /// What `events_history` is now: `None` when absent, else its kind (`table`, `partitioned`,
    /// `view`) and columns.
    fn existing_shape(&self, s: &mut dyn Session) -> TargetResult<Option<(String, Vec<String>)>> {
        let text = |rows: Vec<Vec<Option<String>>>| -> Vec<String> {
            rows.into_iter()
                .filter_map(|r| r.into_iter().next().flatten())
                .collect()
        };
        let (kind, cols) = match self.dialect {
            Dialect::Postgres => {
                let kind = text(s.query_rows(
                    &format!(
                        "SELECT CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'partitioned table' \
                         WHEN 'v' THEN 'view' ELSE c.relkind::text END FROM pg_class c \
                         WHERE c.oid = to_regclass('{HISTORY}')"
                    ),
                    &[],
                )?);
                let cols = text(s.query_rows(
                    &format!(
                        "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass('{HISTORY}') \
                         AND attnum > 0 AND NOT attisdropped ORDER BY attnum"
                    ),
                    &[],
                )?);
                (kind, cols)
            }
            Dialect::Sqlite => {
                let kind = text(s.query_rows(
                    &format!("SELECT type FROM sqlite_master WHERE name = '{HISTORY}'"),
                    &[],
                )?);
                let cols = text(s.query_rows(
                    &format!("SELECT name FROM pragma_table_info('{HISTORY}')"),
                    &[],
                )?);
                (kind, cols)
            }
            Dialect::Mysql => {
                let kind = text(s.query_rows(
                    &format!(
                        "SELECT CASE WHEN table_type = 'VIEW' THEN 'view' \
                         WHEN create_options LIKE '%partitioned%' THEN 'partitioned table' \
                         ELSE 'table' END FROM information_schema.tables \
                         WHERE table_schema = DATABASE() AND table_name = '{HISTORY}'"
                    ),
                    &[],
                )?);
                let cols = text(s.query_rows(
                    &format!(
                        "SELECT column_name FROM information_schema.columns \
                         WHERE table_schema = DATABASE() AND table_name = '{HISTORY}' \
                         ORDER BY ordinal_position"
                    ),
                    &[],
                )?);
                (kind, cols)
            }
            Dialect::Null => return Ok(None),
        };
        Ok(kind.into_iter().next().map(|k| (k, cols)))
    }

    pub(super) fn check_shape(&self, s: &mut dyn Session) -> TargetResult<()> {
        let Some((kind, cols)) = self.existing_shape(s)? else {
            return Ok(());
        };
        let want = match (self.cfg.strategy, self.dialect) {
            (Strategy::Partitioned, Dialect::Postgres | Dialect::Mysql) => "partitioned table",
            (Strategy::Partitioned, _) => "view",
            _ => "table",
        };
        let explain = |what: String| {
            TargetError::config(format!(
                "{HISTORY} exists from an earlier run with another shape: {what}; \
                 add --fresh to drop and rebuild {HISTORY} and {LASTVAL} (their rows are lost)"
            ))
        };
        if kind != want {
            return Err(explain(format!(
                "it is a {kind}, --strategy {} needs a {want}{}",
                self.cfg.strategy.as_str(),
                if want == "view" {
                    " over a table per client"
                } else {
                    ""
                }
            )));
        }
        if cols != COLUMNS {
            return Err(explain(format!(
                "its columns are ({}), this dbscope writes ({})",
                cols.join(", "),
                COLUMNS.join(", ")
            )));
        }
        Ok(())
    }

    /// CERN's space pre-allocation, as PostgreSQL can have it: each client's partition is grown
    /// by `preallocate` events' worth of rows, which are deleted again; `VACUUM (TRUNCATE false)`
    /// then records the empty pages in the free space map (and `vacuum_truncate = false` keeps
    /// autovacuum from giving them back), so the run's inserts fill pages that exist instead of
    /// extending the file under the relation extension lock.
    pub(super) fn preallocate(&self, s: &mut dyn Session) -> TargetResult<()> {
        let n = self.cfg.preallocate;
        if n == 0 || self.dialect != Dialect::Postgres || self.cfg.strategy != Strategy::Partitioned
        {
            return Ok(());
        }
        for c in 0..self.cfg.clients {
            let p = format!("{HISTORY}_p{c}");
            s.batch(&format!(
                "ALTER TABLE {p} SET (vacuum_truncate = false); \
                 INSERT INTO {p} SELECT {c}, 0, -g, 0, 0, repeat('x', {}) \
                 FROM generate_series(1, {n}) g; DELETE FROM {p} WHERE seq < 0",
                self.cfg.payload
            ))?;
            s.batch(&format!("VACUUM (TRUNCATE false) {p}"))?;
        }
        Ok(())
    }

    pub(super) fn create(&self, s: &mut dyn Session) -> TargetResult<()> {
        let cols = "client INTEGER NOT NULL, element INTEGER NOT NULL, seq BIGINT NOT NULL, \
                    ts BIGINT NOT NULL, value BIGINT NOT NULL, payload TEXT NOT NULL";
        let last =
            format!("CREATE TABLE IF NOT EXISTS {LASTVAL} ({cols}, PRIMARY KEY (client, element))");
        let n = self.cfg.clients;
        match (self.dialect, self.cfg.strategy) {
            (Dialect::Null, _) => Ok(()),
            (Dialect::Postgres, Strategy::Partitioned) => {
                let mut sql = format!(
                    "{last}; CREATE TABLE IF NOT EXISTS {HISTORY} ({cols}) PARTITION BY LIST (client);"
                );
                for c in 0..n {
                    let _ = write!(
                        sql,
                        " CREATE TABLE IF NOT EXISTS {HISTORY}_p{c} PARTITION OF {HISTORY} FOR VALUES IN ({c});"
                    );
                }
                s.batch(&sql)
            }
            (Dialect::Mysql, Strategy::Partitioned) => {
                // InnoDB's own partitioning: a partition per client, written by name
                // (`INSERT … PARTITION (pN)`) as PostgreSQL's strategy writes its partitions.
                let parts: Vec<String> = (0..n)
                    .map(|c| format!("PARTITION p{c} VALUES IN ({c})"))
                    .collect();
                s.batch(&format!(
                    "{last}; CREATE TABLE IF NOT EXISTS {HISTORY} ({cols}) \
                     PARTITION BY LIST (client) ({})",
                    parts.join(", ")
                ))
            }
            (Dialect::Sqlite, Strategy::Partitioned) => {
                let mut sql = format!("{last}; DROP VIEW IF EXISTS {HISTORY};");
                let mut view = Vec::new();
                for c in 0..n {
                    let _ = write!(sql, " CREATE TABLE IF NOT EXISTS {HISTORY}_c{c} ({cols});");
                    view.push(format!("SELECT * FROM {HISTORY}_c{c}"));
                }
                // Tables left by a run with more clients stay in the view, so counts stay whole.
                for row in s.query_rows(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'events_history_c%'",
                    &[],
                )? {
                    if let Some(Some(name)) = row.into_iter().next() {
                        let c: u32 = name[HISTORY.len() + 2..].parse().unwrap_or(0);
                        if c >= n {
                            view.push(format!("SELECT * FROM \"{name}\""));
                        }
                    }
                }
                // SQLite joins at most 500 SELECTs in one compound: nest them.
                let chunks: Vec<String> = view
                    .chunks(400)
                    .map(|c| format!("SELECT * FROM ({})", c.join(" UNION ALL ")))
                    .collect();
                let _ = write!(
                    sql,
                    " CREATE VIEW {HISTORY} AS {};",
                    chunks.join(" UNION ALL ")
                );
                s.batch(&sql)
            }
            (d, strategy) => {
                let mut sql = format!("{last}; CREATE TABLE IF NOT EXISTS {HISTORY} ({cols});");
                let trigger = strategy == Strategy::RowTrigger;
                match d {
                    Dialect::Postgres => {
                        sql.push_str(&format!(
                            " DROP TRIGGER IF EXISTS {LASTVAL}_trg ON {HISTORY};"
                        ));
                        if trigger {
                            sql.push_str(&format!(
                                " CREATE OR REPLACE FUNCTION {LASTVAL}_from_history() RETURNS trigger \
                                 LANGUAGE plpgsql AS $f$ BEGIN \
                                 INSERT INTO {LASTVAL} VALUES (NEW.client, NEW.element, NEW.seq, NEW.ts, NEW.value, NEW.payload) \
                                 ON CONFLICT (client, element) DO UPDATE SET seq = EXCLUDED.seq, ts = EXCLUDED.ts, \
                                 value = EXCLUDED.value, payload = EXCLUDED.payload; RETURN NULL; END $f$; \
                                 CREATE TRIGGER {LASTVAL}_trg AFTER INSERT ON {HISTORY} \
                                 FOR EACH ROW EXECUTE FUNCTION {LASTVAL}_from_history();"
                            ));
                        }
                    }
                    Dialect::Mysql => {
                        sql.push_str(&format!(" DROP TRIGGER IF EXISTS {LASTVAL}_trg;"));
                        if trigger {
                            sql.push_str(&format!(
                                " CREATE TRIGGER {LASTVAL}_trg AFTER INSERT ON {HISTORY} \
                                 FOR EACH ROW INSERT INTO {LASTVAL} VALUES (NEW.client, NEW.element, \
                                 NEW.seq, NEW.ts, NEW.value, NEW.payload) ON DUPLICATE KEY UPDATE \
                                 seq = NEW.seq, ts = NEW.ts, value = NEW.value, payload = NEW.payload;"
                            ));
                        }
                    }
                    _ => {
                        sql.push_str(&format!(" DROP TRIGGER IF EXISTS {LASTVAL}_trg;"));
                        if trigger {
                            sql.push_str(&format!(
                                " CREATE TRIGGER {LASTVAL}_trg AFTER INSERT ON {HISTORY} BEGIN \
                                 INSERT OR REPLACE INTO {LASTVAL} VALUES (NEW.client, NEW.element, NEW.seq, \
                                 NEW.ts, NEW.value, NEW.payload); END;"
                            ));
                        }
                    }
                }
                s.batch(&sql)
            }
        }
    }
}
