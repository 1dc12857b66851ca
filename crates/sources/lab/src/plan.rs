//! The run plan: everything one run needs — the workload and its options, the target, the
//! sessions, limits, pacing and observation — as plain data, built once (by `dbscope run`'s
//! arguments or any other front end) and checked in one place ([`RunPlan::validate`]).
//!
//! A plan is what a front end varies: `sweep` clones one and sets [`RunConfig::sessions`] per
//! point ([`RunPlan::with_sessions`]). What depends on the session count (lookup's per-session
//! share of the operations, bulkload's loaders) is derived when the plan runs
//! ([`RunPlan::run_config`], [`RunPlan::workload`]), so a plan stays what its author said.

use std::path::{Path, PathBuf};
use std::time::Duration;

use dbscope_db::Dialect;

use crate::error::Error;
use crate::pace::Arrival;
use crate::runner::RunConfig;
use crate::workload::bulkload::{BulkloadConfig, BulkloadWorkload};
use crate::workload::events::{EventsWorkload, Strategy};
use crate::workload::lookup::{LookupConfig, LookupWorkload};
use crate::workload::scan::{ScanConfig, ScanWorkload};
use crate::workload::script::{ScriptConfig, ScriptWorkload};
use crate::workload::tpcc::{TpccConfig, TpccWorkload};
use crate::workload::tpch::TpchQ1Workload;
use crate::workload::{CommitWorkload, Keys, Workload};

/// Which workload, with its own options.
#[derive(Clone, Debug)]
pub enum WorkloadPlan {
    /// UPDATE one row, COMMIT.
    Commit {
        /// Table name.
        table: String,
        /// Which rows sessions update.
        keys: Keys,
        /// How shared keys are drawn.
        dist: crate::workload::keys::KeyDist,
        /// Drop and recreate the table first.
        fresh: bool,
    },
    /// TPC-H Query 1 with DELTA = `delta` days.
    TpchQ1 {
        /// DELTA in days.
        delta: u32,
    },
    /// CERN's PVSS archiver (seed 003).
    Events(EventsPlan),
    /// Primary-key lookups (seed 001). [`RunConfig::ops_per_session`] of the plan is the run's
    /// total, split evenly over the sessions when the plan runs.
    Lookup(LookupConfig),
    /// Parallel bulk load then GROUP BY (seed 002): each session runs its steps once;
    /// [`BulkloadConfig::sessions`] follows the plan's sessions.
    Bulkload(BulkloadConfig),
    /// The user's own transactions in pgbench's script language.
    Script(ScriptConfig),
    /// Full scans in a cache state (seed 000's TDE experiment).
    Scan(ScanConfig),
    /// TPC-C's five transactions (HammerDB's TPROC-C) on W warehouses.
    Tpcc(TpccConfig),
}

/// The `events` workload's options (the runner's sessions are its connections).
#[derive(Clone, Debug)]
pub struct EventsPlan {
    /// Event producers.
    pub clients: u32,
    /// Connections the clients share; `None`: a default by target.
    pub connections: Option<u32>,
    /// Events per second per client.
    pub rate: f64,
    /// How intended starts are spaced.
    pub arrival: Arrival,
    /// Elements per client.
    pub elements: u32,
    /// How each event's element is drawn.
    pub dist: crate::workload::keys::KeyDist,
    /// Bytes of each event's payload.
    pub payload: usize,
    /// The strategy; `None`: every strategy in order (CERN's iterations).
    pub strategy: Option<Strategy>,
    /// Most events per transaction.
    pub batch: usize,
    /// How long a batch that is not full waits.
    pub batch_wait: Duration,
    /// Events pre-allocated per partition (`partitioned` on PostgreSQL).
    pub preallocate: u64,
    /// Drop and recreate the tables first.
    pub fresh: bool,
}

/// The database: a target string and settings for every session.
#[derive(Clone, Debug)]
pub struct TargetPlan {
    /// `sqlite:PATH`, `postgres://…`, `null`; `None`: `fallback`.
    pub spec: Option<String>,
    /// The target without `spec` (`dbscope`: `$DATABASE_URL`); `None`: a SQLite file
    /// `dbscope.sqlite` inside the run directory.
    pub fallback: Option<String>,
    /// Settings applied to every session (name, value).
    pub settings: Vec<(String, String)>,
    /// The key file of a `sqlcipher:` target (`--key-file`); `None`: `$DBSCOPE_SQLITE_KEY`.
    pub key_file: Option<PathBuf>,
}

impl TargetPlan {
    /// The target string for a run in `out`.
    pub fn spec_for(&self, out: &Path) -> String {
        match self.spec.as_ref().or(self.fallback.as_ref()) {
            Some(s) => s.clone(),
            None => format!("sqlite:{}", out.join("dbscope.sqlite").display()),
        }
    }
}

/// One run, as plain data.
#[derive(Clone, Debug)]
pub struct RunPlan {
    /// The workload and its options.
    pub workload: WorkloadPlan,
    /// The database.
    pub target: TargetPlan,
    /// Sessions, limits, warm-up, seed, threads, pacing, observation (lookup: the operations are
    /// the run's total; see [`WorkloadPlan::Lookup`]).
    pub config: RunConfig,
    /// The run directory.
    pub out: PathBuf,
}

impl WorkloadPlan {
    /// The workload's name (`commit`, `tpch-q1`, …), as its runs record it.
    pub fn name(&self) -> &'static str {
        match self {
            WorkloadPlan::Commit { .. } => CommitWorkload::NAME,
            WorkloadPlan::TpchQ1 { .. } => TpchQ1Workload::NAME,
            WorkloadPlan::Events(_) => EventsWorkload::NAME,
            WorkloadPlan::Lookup(_) => LookupWorkload::NAME,
            WorkloadPlan::Bulkload(_) => BulkloadWorkload::NAME,
            WorkloadPlan::Script(_) => ScriptWorkload::NAME,
            WorkloadPlan::Scan(_) => ScanWorkload::NAME,
            WorkloadPlan::Tpcc(_) => TpccWorkload::NAME,
        }
    }

    /// The event whose throughput and latency headline the workload's runs
    /// ([`Workload::headline_event`]).
    pub fn headline_event(&self) -> &str {
        match self {
            WorkloadPlan::Commit { .. } => CommitWorkload::HEADLINE,
            WorkloadPlan::TpchQ1 { .. } => TpchQ1Workload::HEADLINE,
            WorkloadPlan::Events(_) => EventsWorkload::HEADLINE,
            WorkloadPlan::Lookup(_) => LookupWorkload::HEADLINE,
            WorkloadPlan::Bulkload(_) => BulkloadWorkload::HEADLINE,
            WorkloadPlan::Script(c) => ScriptWorkload::headline_of(&c.scripts),
            WorkloadPlan::Scan(_) => ScanWorkload::HEADLINE,
            WorkloadPlan::Tpcc(_) => TpccWorkload::HEADLINE,
        }
    }
}

impl RunPlan {
    /// The same plan at `sessions` sessions (a sweep's point). For `events` the sessions are its
    /// connections (the database sessions the clients share), the clients staying as given.
    pub fn with_sessions(&self, sessions: u32) -> RunPlan {
        let mut p = self.clone();
        p.config.sessions = sessions;
        if let WorkloadPlan::Events(e) = &mut p.workload {
            e.connections = Some(sessions);
        }
        p
    }

    /// The same plan writing to `out`.
    pub fn with_out(&self, out: PathBuf) -> RunPlan {
        RunPlan {
            out,
            ..self.clone()
        }
    }

    /// The target string of this run.
    pub fn target_spec(&self) -> String {
        self.target.spec_for(&self.out)
    }

    /// The runner's configuration: lookup's operations split over the sessions, bulkload's one
    /// operation per session on a thread each with no error allowed; checked.
    pub fn run_config(&self) -> Result<RunConfig, Error> {
        // As given first (so `--threads 0` is refused for bulkload too), then as derived.
        self.config.validate()?;
        let mut c = self.config.clone();
        match &self.workload {
            WorkloadPlan::Lookup(_) => {
                if let Some(ops) = c.ops_per_session {
                    let s = c.sessions as u64;
                    if s > 0 && ops % s != 0 {
                        return Err(Error::Uneven {
                            field: "ops_per_session",
                            total: ops,
                            over: "sessions",
                            count: s,
                        });
                    }
                    c.ops_per_session = Some(ops / s.max(1));
                }
            }
            WorkloadPlan::Bulkload(b) => {
                // A wrong GROUP BY answer must not pass as a measurement: any error fails. One
                // operation per repetition.
                c.ops_per_session = Some(b.repeat.max(1));
                c.duration = None;
                c.max_errors = 0;
                c.threads = Some(c.sessions);
            }
            WorkloadPlan::Commit { .. }
            | WorkloadPlan::TpchQ1 { .. }
            | WorkloadPlan::Events(_)
            | WorkloadPlan::Script(_)
            | WorkloadPlan::Scan(_)
            | WorkloadPlan::Tpcc(_) => {}
        }
        c.validate()?;
        Ok(c)
    }

    /// Checks the plan: the runner's configuration ([`RunPlan::run_config`]).
    pub fn validate(&self) -> Result<(), Error> {
        self.run_config().map(drop)
    }

    /// The workload on a target of `dialect` (not `events`, which runs once per strategy: see
    /// [`EventsPlan`]).
    pub fn workload(&self, dialect: Dialect) -> Result<Box<dyn Workload>, Error> {
        Ok(match &self.workload {
            WorkloadPlan::Commit {
                table,
                keys,
                dist,
                fresh,
            } => Box::new(CommitWorkload::new(table, *keys, *dist, *fresh, dialect)?),
            WorkloadPlan::TpchQ1 { delta } => Box::new(TpchQ1Workload::new(dialect, *delta)),
            WorkloadPlan::Lookup(cfg) => Box::new(LookupWorkload::new(cfg.clone(), dialect)?),
            WorkloadPlan::Bulkload(cfg) => {
                let cfg = BulkloadConfig {
                    sessions: self.config.sessions,
                    ..cfg.clone()
                };
                Box::new(BulkloadWorkload::new(cfg, dialect)?)
            }
            WorkloadPlan::Script(cfg) => Box::new(ScriptWorkload::new(ScriptConfig {
                seed: self.config.seed,
                ..cfg.clone()
            })?),
            WorkloadPlan::Scan(cfg) => Box::new(ScanWorkload::new(cfg.clone(), dialect)?),
            WorkloadPlan::Tpcc(cfg) => Box::new(TpccWorkload::new(
                TpccConfig {
                    seed: self.config.seed,
                    ..cfg.clone()
                },
                dialect,
            )?),
            WorkloadPlan::Events(_) => {
                return Err(Error::Config(
                    "the events workload runs once per strategy, with its own sessions".into(),
                ))
            }
        })
    }
}

impl EventsPlan {
    /// The strategies to run on a target of `dialect`, in order: the one asked for, or (CERN's
    /// iterations) every one the target can do; checked against `preallocate`.
    pub fn strategies(&self, dialect: Dialect) -> Result<Vec<Strategy>, Error> {
        let strategies = match self.strategy {
            None => Strategy::ALL
                .into_iter()
                .filter(|s| supported(*s, dialect).is_ok())
                .collect(),
            Some(s) => {
                supported(s, dialect)
                    .map_err(|why| Error::invalid("strategy", format!("{}: {why}", s.as_str())))?;
                vec![s]
            }
        };
        if self.preallocate > 0
            && (dialect != Dialect::Postgres || !strategies.contains(&Strategy::Partitioned))
        {
            return Err(Error::invalid(
                "preallocate",
                ": space pre-allocation is done for {strategy} partitioned on PostgreSQL only \
                 (SQLite and PostgreSQL's other strategies extend their files as they go)",
            ));
        }
        Ok(strategies)
    }

    /// The connections (the runner's sessions) the clients share: as asked, or by target
    /// (PostgreSQL 2 per CPU, SQLite 1, null 1 per CPU), never more than the clients.
    pub fn connections(&self, dialect: Dialect, cpus: u32) -> Result<u32, Error> {
        let clients = self.clients;
        match self.connections {
            Some(0) => Err(Error::invalid("connections", "must be at least 1")),
            Some(n) if n > clients.max(1) => Err(Error::invalid(
                "connections",
                format!(
                    "{n} is more than {{clients}} {clients}: a connection serves whole clients"
                ),
            )),
            Some(n) => Ok(n),
            None => Ok(match dialect {
                Dialect::Postgres | Dialect::Mysql => 2 * cpus,
                Dialect::Sqlite => 1,
                Dialect::Null => cpus,
            }
            .min(clients.max(1))),
        }
    }
}

/// Whether a target of `dialect` can do `s`, and why not.
pub fn supported(s: Strategy, dialect: Dialect) -> Result<(), &'static str> {
    match (s, dialect) {
        (Strategy::RowTrigger | Strategy::Staged | Strategy::Partitioned, Dialect::Null) => Err(
            "the null target has no tables, triggers or staging tables: it would only repeat \
             `row` or `batch`; use those to measure the harness",
        ),
        _ => Ok(()),
    }
}

/// The strategies a target of `dialect` cannot do, said for CERN's table; `None`: none.
pub fn strategies_left_out(dialect: Dialect) -> Option<String> {
    let left: Vec<&str> = Strategy::ALL
        .into_iter()
        .filter(|s| supported(*s, dialect).is_err())
        .map(|s| s.as_str())
        .collect();
    (!left.is_empty()).then(|| {
        format!(
            "left out on this target: {} (no tables or triggers on the null target)",
            left.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::ObserveConfig;

    fn plan(workload: WorkloadPlan, ops: Option<u64>, sessions: u32) -> RunPlan {
        RunPlan {
            workload,
            target: TargetPlan {
                spec: None,
                fallback: None,
                settings: Vec::new(),
                key_file: None,
            },
            config: RunConfig {
                sessions,
                ops_per_session: ops,
                duration: None,
                warmup: Duration::ZERO,
                seed: 1,
                max_errors: 1000,
                threads: None,
                observe: ObserveConfig::default(),
                pacing: None,
                explain: false,
            },
            out: PathBuf::from("/tmp/run"),
        }
    }

    fn lookup() -> WorkloadPlan {
        WorkloadPlan::Lookup(LookupConfig {
            table: "t".into(),
            rows: 10,
            row_bytes: 100,
            dist: crate::workload::lookup::KeyDist::Uniform,
            place: crate::workload::place::Placement::Default,
            cache: crate::workload::lookup::CacheState::Warm,
            restart_cmd: None,
            restart_timeout: crate::workload::lookup::DEFAULT_RESTART_TIMEOUT,
            fresh: false,
        })
    }

    #[test]
    fn lookup_ops_are_the_runs_total() {
        let p = plan(lookup(), Some(100), 4);
        assert_eq!(p.run_config().unwrap().ops_per_session, Some(25));
        let e = p.with_sessions(3).run_config().unwrap_err();
        assert!(matches!(
            e,
            Error::Uneven {
                field: "ops_per_session",
                total: 100,
                count: 3,
                ..
            }
        ));
        assert_eq!(p.workload.headline_event(), "lookup");
    }

    #[test]
    fn sessions_are_checked_and_named() {
        let p = plan(WorkloadPlan::TpchQ1 { delta: 90 }, Some(1), 0);
        match p.validate().unwrap_err() {
            Error::Invalid { field, .. } => assert_eq!(field, "sessions"),
            e => panic!("{e}"),
        }
        assert_eq!(p.target_spec(), "sqlite:/tmp/run/dbscope.sqlite");
    }

    fn events(strategy: Option<Strategy>, connections: Option<u32>) -> EventsPlan {
        EventsPlan {
            clients: 4,
            connections,
            rate: 1000.0,
            arrival: Arrival::Constant,
            elements: 10,
            dist: crate::workload::keys::KeyDist::Uniform,
            payload: 16,
            strategy,
            batch: 5000,
            batch_wait: Duration::from_millis(10),
            preallocate: 0,
            fresh: false,
        }
    }

    #[test]
    fn events_strategies_and_connections_by_target() {
        let all = events(None, None);
        assert_eq!(all.strategies(Dialect::Sqlite).unwrap().len(), 5);
        assert_eq!(
            all.strategies(Dialect::Null).unwrap(),
            vec![Strategy::Row, Strategy::Batch]
        );
        assert!(strategies_left_out(Dialect::Null).is_some());
        assert!(strategies_left_out(Dialect::Postgres).is_none());
        let staged = events(Some(Strategy::Staged), None);
        assert!(staged.strategies(Dialect::Null).is_err());
        assert_eq!(all.connections(Dialect::Postgres, 8).unwrap(), 4);
        assert_eq!(all.connections(Dialect::Sqlite, 8).unwrap(), 1);
        let e = events(None, Some(5))
            .connections(Dialect::Sqlite, 8)
            .unwrap_err();
        assert_eq!(
            crate::error::as_flags(&e),
            "--connections 5 is more than --clients 4: a connection serves whole clients"
        );
        let e = EventsPlan {
            preallocate: 10,
            ..events(Some(Strategy::Batch), None)
        }
        .strategies(Dialect::Postgres)
        .unwrap_err();
        assert!(crate::error::as_flags(&e)
            .starts_with("--preallocate: space pre-allocation is done for --strategy partitioned"));
    }

    #[test]
    fn a_sweep_point_of_events_sets_its_connections() {
        // Issue 34 item 11: sweep's sessions are the events workload's connections.
        let p = plan(
            WorkloadPlan::Events(events(Some(Strategy::Batch), None)),
            None,
            1,
        );
        let at3 = p.with_sessions(3);
        match &at3.workload {
            WorkloadPlan::Events(e) => {
                assert_eq!(e.connections, Some(3));
                assert_eq!(e.clients, 4);
            }
            w => panic!("{w:?}"),
        }
        assert_eq!(at3.config.sessions, 3);
    }
}
