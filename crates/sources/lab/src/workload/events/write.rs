//! How a session writes its pending events, strategy by strategy (inside the caller's transaction).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::session::{Ev, EventsSession};
use super::{Dialect, Param, Session, Strategy, TargetError, TargetResult, HISTORY, LASTVAL};

impl EventsSession {
    pub(super) fn row_params(&self, e: &Ev) -> [Param; 6] {
        [
            Param::Int(e.client as i64),
            Param::Int(e.element as i64),
            Param::Int(e.seq as i64),
            Param::Int(e.intended as i64),
            Param::Int(e.value),
            Param::Text(self.payload.clone()),
        ]
    }

    /// The events of `pending` that set each element's last value (the last one per element).
    fn last_per_element(&self) -> Vec<&Ev> {
        let mut last: BTreeMap<(u32, u32), &Ev> = BTreeMap::new();
        for e in &self.pending {
            last.insert((e.client, e.element), e);
        }
        last.into_values().collect()
    }

    fn values_sql(&self, events: &[&Ev]) -> String {
        let mut sql = String::with_capacity(events.len() * (self.payload.len() + 48));
        for (i, e) in events.iter().enumerate() {
            if i > 0 {
                sql.push(',');
            }
            let _ = write!(
                sql,
                "({},{},{},{},{},'{}')",
                e.client, e.element, e.seq, e.intended, e.value, self.payload
            );
        }
        sql
    }

    /// Writes `pending` (inside a transaction the caller commits).
    pub(super) fn write(&mut self, sess: &mut dyn Session) -> TargetResult<()> {
        let upsert_set = self.upsert_clause();
        match (self.dialect, self.cfg.strategy) {
            (Dialect::Null, _) | (_, Strategy::RowTrigger | Strategy::Row) => {
                self.stmts.last = self.pending.last().cloned();
                let insert = self.stmts.insert.ok_or_else(not_prepared)?;
                for e in &self.pending {
                    sess.execute(insert, &self.row_params(e))?;
                }
                if let Some(upsert) = self.stmts.upsert {
                    for e in self.last_per_element() {
                        sess.execute(upsert, &self.row_params(e))?;
                    }
                }
                Ok(())
            }
            (Dialect::Sqlite, Strategy::Batch) => {
                self.stmts.last = self.pending.last().cloned();
                let insert = self.stmts.insert.ok_or_else(not_prepared)?;
                let upsert = self.stmts.upsert.ok_or_else(not_prepared)?;
                for e in &self.pending {
                    sess.execute(insert, &self.row_params(e))?;
                }
                for e in self.last_per_element() {
                    sess.execute(upsert, &self.row_params(e))?;
                }
                Ok(())
            }
            (Dialect::Postgres | Dialect::Mysql, Strategy::Batch) => {
                let all: Vec<&Ev> = self.pending.iter().collect();
                let last = self.last_per_element();
                let history = format!("INSERT INTO {HISTORY} VALUES {}", self.values_sql(&all));
                let split = history.len();
                self.sql = format!(
                    "{history}; INSERT INTO {LASTVAL} VALUES {} {upsert_set}",
                    self.values_sql(&last)
                );
                self.stmts.batch_split = split;
                sess.batch(&self.sql)
            }
            (Dialect::Sqlite, Strategy::Staged | Strategy::Partitioned) => {
                let stage = self.stmts.stage.ok_or_else(not_prepared)?;
                for e in &self.pending {
                    sess.execute(stage, &self.row_params(e))?;
                }
                let mut sql = String::new();
                if self.cfg.strategy == Strategy::Partitioned {
                    for c in self.clients_in_pending() {
                        let _ = write!(
                            sql,
                            "INSERT INTO {HISTORY}_c{c} SELECT * FROM temp.events_stage WHERE client = {c}; "
                        );
                    }
                } else {
                    let _ = write!(
                        sql,
                        "INSERT INTO {HISTORY} SELECT * FROM temp.events_stage; "
                    );
                }
                // SQLite's bare columns with max(): each group's values come from its max(seq) row.
                let _ = write!(
                    sql,
                    "INSERT OR REPLACE INTO {LASTVAL} SELECT client, element, max(seq), ts, value, payload \
                     FROM temp.events_stage GROUP BY client, element; DELETE FROM temp.events_stage"
                );
                sess.batch(&sql)
            }
            (Dialect::Mysql, Strategy::Staged | Strategy::Partitioned) => {
                self.copy_in_stage(
                    sess,
                    "LOAD DATA LOCAL INFILE 'events' INTO TABLE events_stage",
                )?;
                let mut sql = String::new();
                if self.cfg.strategy == Strategy::Partitioned {
                    for c in self.clients_in_pending() {
                        let _ = write!(
                            sql,
                            "INSERT INTO {HISTORY} PARTITION (p{c}) SELECT * FROM events_stage \
                             WHERE client = {c}; "
                        );
                    }
                } else {
                    let _ = write!(sql, "INSERT INTO {HISTORY} SELECT * FROM events_stage; ");
                }
                // Each element's last event: a window over the stage (MySQL cannot open a
                // temporary table twice in one statement, so no self-join).
                let _ = write!(
                    sql,
                    "INSERT INTO {LASTVAL} SELECT client, element, seq, ts, value, payload FROM \
                     (SELECT *, ROW_NUMBER() OVER (PARTITION BY client, element ORDER BY seq DESC) \
                     AS rn FROM events_stage) s WHERE rn = 1 {upsert_set}; DELETE FROM events_stage"
                );
                sess.batch(&sql)
            }
            (Dialect::Postgres, Strategy::Staged | Strategy::Partitioned) => {
                self.copy_in_stage(sess, "COPY events_stage FROM STDIN")?;
                let mut sql = String::new();
                if self.cfg.strategy == Strategy::Partitioned {
                    for c in self.clients_in_pending() {
                        let _ = write!(
                            sql,
                            "INSERT INTO {HISTORY}_p{c} SELECT * FROM events_stage WHERE client = {c}; "
                        );
                    }
                } else {
                    let _ = write!(sql, "INSERT INTO {HISTORY} SELECT * FROM events_stage; ");
                }
                let _ = write!(
                    sql,
                    "INSERT INTO {LASTVAL} SELECT DISTINCT ON (client, element) * FROM events_stage \
                     ORDER BY client, element, seq DESC {upsert_set}"
                );
                sess.batch(&sql)
            }
        }
    }

    /// Sends `pending` to the staging table as COPY's text format (which is also LOAD DATA's
    /// default) with `sql` (COPY … FROM STDIN or LOAD DATA LOCAL INFILE).
    fn copy_in_stage(&mut self, sess: &mut dyn Session, sql: &str) -> TargetResult<()> {
        self.copy_buf.clear();
        let pending = std::mem::take(&mut self.pending);
        let mut rows = pending.iter();
        let payload = self.payload.clone();
        let mut fill = |buf: &mut Vec<u8>| -> Result<bool, String> {
            use std::io::Write as _;
            for e in rows.by_ref().take(4096) {
                let _ = writeln!(
                    buf,
                    "{}\t{}\t{}\t{}\t{}\t{payload}",
                    e.client, e.element, e.seq, e.intended, e.value
                );
            }
            Ok(rows.len() > 0)
        };
        let copied = sess.copy_in(sql, &mut fill);
        self.pending = pending;
        let n = copied?;
        let want = self.pending.len() as u64;
        if n != want {
            return Err(TargetError::config(format!(
                "the staging table took {n} of {want} events"
            )));
        }
        Ok(())
    }

    /// The clients with events in `pending`, each once, in order.
    fn clients_in_pending(&self) -> Vec<u32> {
        let mut c: Vec<u32> = self.pending.iter().map(|e| e.client).collect();
        c.sort_unstable();
        c.dedup();
        c
    }
}

fn not_prepared() -> TargetError {
    TargetError::config("events workload used before prepare")
}
