//! The `commit` workload (seed 001's redo-log sync test): each session updates a row and commits,
//! as fast as it can. `update` and `commit` are separate events, so commit latency (what Oracle
//! calls *log file sync*, PostgreSQL's WAL flush) is seen on its own.

use std::collections::BTreeMap;
use std::str::FromStr;

use dbscope_core::NameId;

use super::keys::{KeyDist, KeyGen};
use super::work::{check_identifier, SessionWork, Workload};
use dbscope_core::Recorder;
use dbscope_db::{Dialect, Param, Session, StmtId, Target, TargetError, TargetResult};

use crate::error::Error;

/// Which rows sessions update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keys {
    /// Each session its own row (no lock contention): session `s` updates id `s + 1`.
    Own,
    /// All sessions pick uniformly from ids `1..=N` (seeded), so they contend for row locks.
    Shared(u64),
}

impl FromStr for Keys {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        if s == "own" {
            return Ok(Keys::Own);
        }
        match s.strip_prefix("shared:").map(str::parse::<u64>) {
            Some(Ok(n)) if n > 0 => Ok(Keys::Shared(n)),
            _ => Err(Error::invalid(
                "keys",
                format!("{s:?}: expected `own` or `shared:N` with N ≥ 1 (e.g. shared:10)"),
            )),
        }
    }
}

impl std::fmt::Display for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Keys::Own => write!(f, "own"),
            Keys::Shared(n) => write!(f, "shared:{n}"),
        }
    }
}

/// The commit workload.
#[derive(Clone, Debug)]
pub struct CommitWorkload {
    table: String,
    keys: Keys,
    dist: KeyDist,
    fresh: bool,
    dialect: Dialect,
}

impl CommitWorkload {
    /// The name runs record ([`Workload::name`]).
    pub const NAME: &'static str = "commit";
    /// The headline event ([`Workload::headline_event`]).
    pub const HEADLINE: &'static str = "commit";

    /// A commit workload on `table`; `fresh` drops and recreates the table first. `dist` draws
    /// the shared keys (`Keys::Shared`); with `Keys::Own` it must be uniform.
    pub fn new(
        table: &str,
        keys: Keys,
        dist: KeyDist,
        fresh: bool,
        dialect: Dialect,
    ) -> Result<Self, Error> {
        check_identifier(table)?;
        if keys == Keys::Own && dist != KeyDist::Uniform {
            return Err(Error::invalid(
                "dist",
                format!(
                    "{dist}: with {{keys}} own each session updates its own row; a distribution \
                     needs shared keys ({{keys}} shared:N)"
                ),
            ));
        }
        Ok(CommitWorkload {
            table: table.to_string(),
            keys,
            dist,
            fresh,
            dialect,
        })
    }

    fn rows_needed(&self, sessions: u32) -> u64 {
        match self.keys {
            Keys::Own => sessions as u64,
            Keys::Shared(n) => n,
        }
    }
}

impl Workload for CommitWorkload {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn tables(&self) -> Vec<String> {
        vec![self.table.clone()]
    }
    fn params(&self) -> BTreeMap<String, serde_json::Value> {
        BTreeMap::from([
            ("table".to_string(), self.table.clone().into()),
            ("keys".to_string(), self.keys.to_string().into()),
            ("dist".to_string(), self.dist.to_string().into()),
            ("fresh".to_string(), self.fresh.into()),
        ])
    }

    fn headline_event(&self) -> &'static str {
        Self::HEADLINE
    }

    fn setup(
        &self,
        target: &dyn Target,
        sessions: u32,
        _stop: &dbscope_core::StopSignal,
    ) -> TargetResult<()> {
        let mut s = target.connect()?;
        let t = &self.table;
        if self.fresh {
            s.batch(&format!("DROP TABLE IF EXISTS {t}"))?;
        }
        s.batch(&format!(
            "CREATE TABLE IF NOT EXISTS {t} (id BIGINT PRIMARY KEY, v BIGINT NOT NULL DEFAULT 0, \
             t BIGINT NOT NULL DEFAULT 0)"
        ))?;
        let n = self.rows_needed(sessions);
        match self.dialect {
            Dialect::Postgres => s.batch(&format!(
                "INSERT INTO {t} (id) SELECT g FROM generate_series(1, {n}) g ON CONFLICT (id) DO NOTHING"
            )),
            Dialect::Sqlite => s.batch(&format!(
                "INSERT OR IGNORE INTO {t} (id) WITH RECURSIVE k(i) AS \
                 (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < {n}) SELECT i FROM k"
            )),
            // MySQL 8 stops a recursive CTE at 1000 rows (cte_max_recursion_depth): rows in
            // multi-row INSERTs of 1000 instead.
            Dialect::Mysql => (1..=n).step_by(1000).try_for_each(|from| {
                let rows: Vec<String> = (from..=n.min(from + 999)).map(|i| format!("({i})")).collect();
                s.batch(&format!("INSERT IGNORE INTO {t} (id) VALUES {}", rows.join(",")))
            }),
            Dialect::Null => Ok(()),
        }
    }

    fn session(&self, session: u32, seed: u64) -> Box<dyn SessionWork> {
        Box::new(CommitSession {
            sql: format!(
                "UPDATE {} SET v = v + 1, t = {} WHERE id = {}",
                self.table,
                self.dialect.placeholder(1),
                self.dialect.placeholder(2)
            ),
            keys: match self.keys {
                Keys::Own => None,
                Keys::Shared(n) => Some(KeyGen::new(self.dist, n, seed)),
            },
            own_key: session as i64 + 1,
            update: None,
            names: (0, 0),
            last: None,
        })
    }
}

struct CommitSession {
    sql: String,
    /// Shared keys' generator; `None`: the session's own row.
    keys: Option<KeyGen>,
    own_key: i64,
    update: Option<StmtId>,
    names: (NameId, NameId),
    /// The update's parameters last bound (`--explain`).
    last: Option<[i64; 2]>,
}

impl SessionWork for CommitSession {
    fn prepare(&mut self, sess: &mut dyn Session, rec: &Recorder) -> TargetResult<()> {
        self.update = Some(sess.prepare(&self.sql)?);
        self.names = (rec.name("update"), rec.name("commit"));
        Ok(())
    }

    fn step(&mut self, sess: &mut dyn Session, rec: &mut Recorder) -> Result<(), TargetError> {
        let stmt = self
            .update
            .ok_or_else(|| TargetError::config("commit workload used before prepare"))?;
        let key = match &mut self.keys {
            None => self.own_key,
            Some(g) => g.next_key() as i64,
        };
        let (update, commit) = self.names;
        let t0 = rec.now();
        // `t` is the client's clock in µs since the origin: cheap, and the same on every target.
        let params = [Param::Int((t0 / 1000) as i64), Param::Int(key)];
        self.last = Some([(t0 / 1000) as i64, key]);
        // The update event includes BEGIN (a round trip on PostgreSQL; pgbench's script pays it too).
        let begin_update = || sess.begin().and_then(|()| sess.execute(stmt, &params));
        let (result, t1) = super::work::timed(rec, update, t0, begin_update, |&rows| Ok(rows));
        result?;
        super::work::timed(rec, commit, t1, || sess.commit(), |()| Ok(0)).0
    }

    fn statements(&self) -> Vec<super::Statement> {
        self.last
            .map(|p| super::Statement {
                event: "update".into(),
                sql: self.sql.clone(),
                params: p.into_iter().map(Param::Int).collect(),
            })
            .into_iter()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse() {
        assert_eq!("own".parse::<Keys>().unwrap(), Keys::Own);
        assert_eq!("shared:10".parse::<Keys>().unwrap(), Keys::Shared(10));
        assert!("shared:0".parse::<Keys>().is_err());
        assert!("other".parse::<Keys>().is_err());
        let new = |t, k, d| CommitWorkload::new(t, k, d, false, Dialect::Sqlite);
        assert!(new("Bad-Name", Keys::Own, KeyDist::Uniform).is_err());
        assert!(new("t", Keys::Own, KeyDist::Zipf(1.5)).is_err());
        assert!(new("t", Keys::Shared(10), KeyDist::Zipf(1.5)).is_ok());
    }
}
