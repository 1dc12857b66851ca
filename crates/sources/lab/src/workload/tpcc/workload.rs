//! The `tpcc` workload: TPC-C's five transactions against tables built by [`build`], one home
//! warehouse per session (session i at warehouse i mod W + 1, as HammerDB gives each virtual user
//! one), and the figures HammerDB and go-tpc print: NOPM from the schema (`sum(d_next_o_id)`
//! before and after), TPM from the database's own transaction count (`pg_stat_database`'s commits
//! and rollbacks; MariaDB/MySQL's `Com_commit + Com_rollback`; on SQLite, which keeps none,
//! dbscope's count), tpmC and efficiency from the New-Orders
//! dbscope saw commit. Written as counter section `tpcc`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use dbscope_core::{Column, Counter, CounterSection, CounterTable, CounterValue, StopSignal};
use dbscope_db::{Dialect, Target, TargetError, TargetResult};
use dbscope_tpcc::random::{Gen, NuConstants};
use dbscope_tpcc::{Mix, TxKind, DISTRICTS};

use super::build::{build, BuildOptions};
use super::server;
use super::session::TpccSession;
use super::tally::Tally;
use super::txn::Home;
use crate::error::Error;
use crate::workload::work::{SessionWork, Workload};

/// The tpcc workload's options.
#[derive(Clone, Debug)]
pub struct TpccConfig {
    /// Warehouses (W).
    pub warehouses: i64,
    /// Build sessions (PostgreSQL's parallel COPY).
    pub build_sessions: u32,
    /// The transaction mix.
    pub mix: Mix,
    /// Tries per transaction (1: no retry).
    pub max_tries: u32,
    /// Drop and rebuild the tables in setup (the CLI builds first, recorded, and passes false).
    pub fresh: bool,
    /// The run's seed.
    pub seed: u64,
    /// The run that recorded the build, when this run built the tables.
    pub build_run: Option<String>,
    /// Run the consistency checks after the run (the front end does: [`super::check`]).
    pub check: bool,
    /// Each transaction at a warehouse drawn uniformly, not the session's home warehouse.
    pub all_warehouses: bool,
    /// `--server-side` (PostgreSQL): the transactions as PL/pgSQL functions installed in setup,
    /// one call per transaction.
    pub server_side: bool,
    /// `--per-statement`: each statement of a client-side transaction an event of its own.
    pub per_statement: bool,
    /// `--keying-thinking`: clause 5.2.5's keying and think times around each transaction.
    pub keying_thinking: bool,
    /// The sessions' run time (`--duration`), so that no keying or think time outlasts it.
    pub duration: Option<Duration>,
}

/// Figures taken from the database around the sessions.
#[derive(Debug, Default)]
struct Around {
    c_last_load: i64,
    nu: Option<NuConstants>,
    built: bool,
    next_o_before: Option<i64>,
    next_o_after: Option<i64>,
    xacts_before: Option<i64>,
    xacts_after: Option<i64>,
    elapsed: Option<Duration>,
    /// Why a figure could not be read.
    notes: Vec<String>,
}

/// The tpcc workload.
pub struct TpccWorkload {
    cfg: TpccConfig,
    dialect: Dialect,
    tally: Arc<Tally>,
    around: Mutex<Around>,
}

const SUM_NEXT_O_ID: &str = "SELECT sum(d_next_o_id) FROM district";
const MY_XACTS: &str = "SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_commit', 'Com_rollback')";
const PG_XACTS: &str = "SELECT (xact_commit + xact_rollback)::bigint FROM pg_stat_database \
                        WHERE datname = current_database()";

impl TpccWorkload {
    /// The name runs record.
    pub const NAME: &'static str = "tpcc";
    /// The headline event.
    pub const HEADLINE: &'static str = "new_order";

    /// Checks the options: at least one warehouse and one try.
    pub fn new(cfg: TpccConfig, dialect: Dialect) -> Result<Self, Error> {
        if cfg.warehouses < 1 {
            return Err(Error::invalid(
                "warehouses",
                format!("{}: expected a whole number of at least 1", cfg.warehouses),
            ));
        }
        if cfg.max_tries == 0 {
            return Err(Error::invalid("max_tries", "must be at least 1"));
        }
        if cfg.server_side && dialect != Dialect::Postgres {
            return Err(Error::invalid(
                "server_side",
                "--server-side installs PL/pgSQL functions: PostgreSQL only",
            ));
        }
        if cfg.server_side && cfg.per_statement {
            return Err(Error::invalid(
                "per_statement",
                "--per-statement times client-side statements; with --server-side each \
                 transaction is one call",
            ));
        }
        if cfg.build_sessions == 0 {
            return Err(Error::invalid("build_sessions", "must be at least 1"));
        }
        Ok(TpccWorkload {
            cfg,
            dialect,
            tally: Arc::new(Tally::default()),
            around: Mutex::new(Around::default()),
        })
    }

    fn around(&self) -> std::sync::MutexGuard<'_, Around> {
        self.around.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The database's count of transactions ended (PostgreSQL), after the sessions' backends
    /// have reported theirs: read until two reads 200 ms apart agree, for up to 3 s (a backend
    /// reports its counts when it goes idle or exits, not at each commit).
    fn settled_xacts(target: &dyn Target) -> TargetResult<i64> {
        let mut last = None;
        for _ in 0..15 {
            let mut s = target.connect()?;
            let now = s.query_i64(PG_XACTS)?.first().copied().unwrap_or(0);
            drop(s);
            // Our own read is one transaction: the next read sees it, so allow for it.
            if last.is_some_and(|l: i64| now <= l + 1) {
                return Ok(now);
            }
            last = Some(now);
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(last.unwrap_or(0))
    }
}

/// MariaDB/MySQL's count of transactions ended: `Com_commit + Com_rollback` of the server (its
/// COMMIT and ROLLBACK statements, every session's), as HammerDB reads TPM there.
fn my_xacts(target: &dyn Target) -> TargetResult<i64> {
    let mut s = target.connect()?;
    let rows = s.query_rows(MY_XACTS, &[])?;
    if rows.len() != 2 {
        return Err(TargetError::config(format!(
            "SHOW GLOBAL STATUS gave {} of Com_commit and Com_rollback",
            rows.len()
        )));
    }
    rows.iter()
        .map(|r| {
            TargetError::parse_i64(
                "mysql",
                r.get(1).cloned().flatten().as_deref().unwrap_or(""),
            )
        })
        .sum()
}

/// The database's own count of transactions ended, where it keeps one.
fn db_xacts(dialect: Dialect, target: &dyn Target) -> Option<TargetResult<i64>> {
    match dialect {
        Dialect::Postgres => Some(TpccWorkload::settled_xacts(target)),
        Dialect::Mysql => Some(my_xacts(target)),
        _ => None,
    }
}

fn sum_next_o_id(target: &dyn Target) -> TargetResult<i64> {
    let mut s = target.connect()?;
    Ok(s.query_i64(SUM_NEXT_O_ID)?.first().copied().unwrap_or(0))
}

impl Workload for TpccWorkload {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn params(&self) -> BTreeMap<String, serde_json::Value> {
        let a = self.around();
        let mix: Vec<String> = TxKind::ALL
            .iter()
            .map(|k| format!("{}={}", k.name(), self.cfg.mix.percent(*k)))
            .collect();
        let mut p = BTreeMap::from([
            ("warehouses".to_string(), self.cfg.warehouses.into()),
            ("build_sessions".to_string(), self.cfg.build_sessions.into()),
            ("mix".to_string(), mix.join(",").into()),
            ("max_tries".to_string(), self.cfg.max_tries.into()),
            ("per_statement".to_string(), self.cfg.per_statement.into()),
            (
                "keying_thinking".to_string(),
                match self.cfg.keying_thinking {
                    true => "clause 5.2.5: keying 18/3/2/2/2 s, think exp. mean 12/12/10/5/5 s (cut at 10x)",
                    false => "none",
                }
                .into(),
            ),
            (
                "home_warehouse".to_string(),
                match self.cfg.all_warehouses {
                    true => "any (--all-warehouses)",
                    false => "per session",
                }
                .into(),
            ),
            (
                "sql".to_string(),
                match self.cfg.server_side {
                    true => "server-side (PL/pgSQL functions dbscope_tpcc_*)",
                    false => "client-side",
                }
                .into(),
            ),
            (
                "build".to_string(),
                match (&self.cfg.build_run, a.built) {
                    (Some(r), _) => format!("built, recorded in {r}"),
                    (None, true) => "built in setup".to_string(),
                    (None, false) => "reused".to_string(),
                }
                .into(),
            ),
            ("c_last_load".to_string(), a.c_last_load.into()),
        ]);
        if let Some(nu) = a.nu {
            p.insert("c_last_run".into(), nu.c_last.into());
            p.insert("c_id".into(), nu.c_id.into());
            p.insert("ol_i_id".into(), nu.ol_i_id.into());
        }
        p
    }

    fn headline_event(&self) -> &str {
        Self::HEADLINE
    }

    fn tables(&self) -> Vec<String> {
        dbscope_tpcc::schema::TABLES
            .iter()
            .map(|t| t.to_string())
            .collect()
    }

    fn setup(&self, target: &dyn Target, _sessions: u32, _stop: &StopSignal) -> TargetResult<()> {
        let built = build(
            target,
            &BuildOptions {
                warehouses: self.cfg.warehouses,
                build_sessions: self.cfg.build_sessions,
                seed: self.cfg.seed,
                fresh: self.cfg.fresh,
            },
        )?;
        // The run's constants: C_ID and OL_I_ID drawn from the run's seed, C_LAST from the
        // load's by a permitted delta (clause 2.1.6.1).
        let mut g = Gen::new(self.cfg.seed ^ 0x7470_6363);
        let drawn = NuConstants::draw(&mut g);
        let load = NuConstants {
            c_last: built.c_last,
            ..drawn
        };
        let nu = NuConstants::for_run(load, &mut g);
        if self.cfg.server_side {
            server::install(target.connect()?.as_mut())?;
        }
        let next_o = sum_next_o_id(target)?;
        let xacts = db_xacts(self.dialect, target).transpose()?;
        let mut a = self.around();
        a.c_last_load = built.c_last;
        a.built = built.built;
        a.nu = Some(nu);
        a.next_o_before = Some(next_o);
        a.xacts_before = xacts;
        Ok(())
    }

    fn session(&self, session: u32, seed: u64) -> Box<dyn SessionWork> {
        let w = self.cfg.warehouses;
        let s = session as i64;
        let nu = self
            .around()
            .nu
            .unwrap_or_else(|| NuConstants::draw(&mut Gen::new(self.cfg.seed)));
        Box::new(TpccSession {
            home: Home {
                w: s % w + 1,
                warehouses: w,
                // Sessions sharing a warehouse take its districts in turn.
                stock_district: (s / w) % DISTRICTS + 1,
            },
            mix: self.cfg.mix,
            gen: Gen::new(seed),
            nu,
            max_tries: self.cfg.max_tries,
            all_warehouses: self.cfg.all_warehouses,
            dialect: self.dialect,
            tally: self.tally.clone(),
            stmts: None,
            calls: None,
            server_side: self.cfg.server_side,
            per_statement: self.cfg.per_statement,
            stmt_names: Vec::new(),
            keying_thinking: self.cfg.keying_thinking,
            deadline_ns: self.cfg.duration.map(|d| d.as_nanos() as u64),
            delay_names: [[0; 2]; 5],
            names: [0; 5],
        })
    }

    fn after_sessions(&self, target: &dyn Target, elapsed: Duration) {
        let next_o = sum_next_o_id(target);
        let xacts = db_xacts(self.dialect, target);
        let mut a = self.around();
        a.elapsed = Some(elapsed);
        match next_o {
            Ok(n) => a.next_o_after = Some(n),
            Err(e) => a
                .notes
                .push(format!("NOPM unknown: sum(d_next_o_id) after the run: {e}")),
        }
        match xacts {
            Some(Ok(n)) => a.xacts_after = Some(n),
            Some(Err(e)) => a.notes.push(format!(
                "TPM unknown: the database's count after the run: {e}"
            )),
            None => {}
        }
    }

    fn counters(&self) -> Option<CounterSection> {
        let a = self.around();
        let t = &self.tally;
        let minutes = a
            .elapsed
            .map(|d| d.as_secs_f64() / 60.0)
            .filter(|m| *m > 0.0);
        let per_min = |n: Option<i64>| match (n, minutes) {
            (Some(n), Some(m)) => CounterValue::Float(n as f64 / m),
            _ => CounterValue::None,
        };
        let new_orders = a.next_o_after.zip(a.next_o_before).map(|(x, y)| x - y);
        let (xacts, tpm_source) = match self.dialect {
            Dialect::Postgres => (
                a.xacts_after.zip(a.xacts_before).map(|(x, y)| x - y),
                "pg_stat_database: xact_commit + xact_rollback of the database",
            ),
            Dialect::Mysql => (
                a.xacts_after.zip(a.xacts_before).map(|(x, y)| x - y),
                "SHOW GLOBAL STATUS: Com_commit + Com_rollback of the server",
            ),
            _ => (
                Some(t.transactions() as i64),
                "dbscope's count of transactions committed and rolled back (SQLite keeps none)",
            ),
        };
        let committed_no = Tally::get(&t.committed, TxKind::NewOrder);
        let tpmc = minutes.map(|m| committed_no as f64 / m);
        // go-tpc's efficiency: tpmC against the 12.86 tpmC per warehouse the specification's
        // keying and think times allow at most.
        let efficiency = tpmc.map(|c| c / (12.86 * self.cfg.warehouses as f64) * 100.0);
        let mut counters = vec![
            Counter::new("nopm", "NOPM", per_min(new_orders), "new orders/min").decimals(0),
            Counter::new("tpm", "TPM", per_min(xacts), "transactions/min").decimals(0),
            Counter::new(
                "tpm_source",
                "TPM from",
                CounterValue::Text(tpm_source.into()),
                "",
            ),
            Counter::new("tpmc", "tpmC", CounterValue::float(tpmc), "").decimals(1),
            Counter::new(
                "efficiency_pct",
                "efficiency",
                CounterValue::float(efficiency),
                "%",
            )
            .decimals(2),
            Counter::new(
                "new_orders",
                "new orders (sum(d_next_o_id) after - before)",
                new_orders.map_or(CounterValue::None, CounterValue::Int),
                "",
            ),
            Counter::new(
                "new_orders_committed",
                "New-Orders dbscope saw commit",
                CounterValue::count(committed_no),
                "",
            ),
            Counter::new(
                "new_orders_rolled_back",
                "New-Orders rolled back (unused item)",
                CounterValue::count(Tally::get(&t.rolled_back, TxKind::NewOrder)),
                "",
            ),
            Counter::new(
                "tpm_transactions",
                "transactions (TPM's count)",
                xacts.map_or(CounterValue::None, CounterValue::Int),
                "",
            ),
            Counter::new("minutes", "measured", CounterValue::float(minutes), "min").decimals(3),
            Counter::new(
                "delivery_skipped",
                "Delivery districts skipped (no new order)",
                CounterValue::count(
                    t.delivery_skipped
                        .load(std::sync::atomic::Ordering::Relaxed),
                ),
                "",
            ),
        ];
        counters.retain(|c| !(c.key == "tpmc" && tpmc.is_none()));
        let rows = TxKind::ALL
            .iter()
            .map(|k| {
                vec![
                    CounterValue::Text(k.name().into()),
                    CounterValue::Int(self.cfg.mix.percent(*k) as i64),
                    CounterValue::count(Tally::get(&t.committed, *k)),
                    CounterValue::count(Tally::get(&t.rolled_back, *k)),
                    CounterValue::count(Tally::get(&t.failed, *k)),
                    CounterValue::count(Tally::get(&t.retries, *k)),
                ]
            })
            .collect();
        Some(CounterSection {
            key: "tpcc".into(),
            title: "TPC-C".into(),
            final_counts: true,
            counters,
            tables: vec![CounterTable {
                key: "transactions".into(),
                title: "transactions by type".into(),
                columns: vec![
                    Column::new("type", "type", ""),
                    Column::new("mix_pct", "mix", "%"),
                    Column::new("committed", "committed", ""),
                    Column::new("rolled_back", "rolled back", ""),
                    Column::new("failed", "failed", ""),
                    Column::new("retries", "retries", ""),
                ],
                rows,
            }],
            notes: a.notes.clone(),
        })
    }
}

/// A target the workload cannot run on, said before anything is built.
pub fn refuse_target(dialect: Dialect) -> TargetResult<()> {
    match dialect {
        Dialect::Postgres | Dialect::Sqlite | Dialect::Mysql => Ok(()),
        Dialect::Null => Err(TargetError::config(
            "tpcc needs a database: a sqlite:, postgres:// or mysql:// target, not null",
        )),
    }
}
