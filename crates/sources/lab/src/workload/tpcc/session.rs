//! One session of the TPC-C workload: draws each transaction's type from the mix and its inputs
//! for the session's home warehouse, runs it ([`txn::attempt`]), retries what pgbench retries
//! (`workload::script::retryable`, up to `--max-tries`), and records one event per transaction
//! named after its type (`rows`: its tries), and with `--per-statement` one per statement of it
//! (`new_order.update_stock` …: `rows` the rows it returned or changed).

use std::sync::Arc;

use dbscope_core::{NameId, Recorder};
use dbscope_db::{Dialect, Session, TargetError, TargetResult};
use dbscope_tpcc::random::{Gen, NuConstants};
use dbscope_tpcc::{Mix, TxKind};

use super::server::{self, Calls};
use super::tally::{index, Tally};
use super::txn::{self, Cx, Home, Input, StmtNames, Stmts};
use crate::workload::script::retryable;
use crate::workload::work::SessionWork;

pub(super) struct TpccSession {
    pub home: Home,
    pub mix: Mix,
    pub gen: Gen,
    pub nu: NuConstants,
    pub max_tries: u32,
    /// Draw each transaction's warehouse from all of them (`--all-warehouses`).
    pub all_warehouses: bool,
    pub dialect: Dialect,
    pub tally: Arc<Tally>,
    pub stmts: Option<Stmts>,
    /// `--server-side`: one call of the installed PL/pgSQL function per transaction.
    pub calls: Option<Calls>,
    pub server_side: bool,
    /// `--per-statement`: each statement an event `<type>.<statement>`, by type.
    pub per_statement: bool,
    pub stmt_names: Vec<StmtNames>,
    pub names: [NameId; 5],
}

impl SessionWork for TpccSession {
    fn prepare(&mut self, sess: &mut dyn Session, rec: &Recorder) -> TargetResult<()> {
        if self.server_side {
            self.calls = Some(Calls::prepare(sess)?);
        } else {
            let stmts = Stmts::prepare(sess, self.dialect)?;
            if self.per_statement {
                self.stmt_names = TxKind::ALL
                    .iter()
                    .map(|k| StmtNames::new(*k, &stmts, rec))
                    .collect();
            }
            self.stmts = Some(stmts);
        }
        self.names = TxKind::ALL.map(|k| rec.name(k.name()));
        Ok(())
    }

    fn step(&mut self, sess: &mut dyn Session, rec: &mut Recorder) -> Result<(), TargetError> {
        if self.all_warehouses {
            self.home.w = self.gen.int(1, self.home.warehouses);
        }
        let kind = self.mix.pick(self.gen.int(0, 99) as u32);
        let input = Input::draw(kind, &self.home, &mut self.gen, &self.nu);
        let name = self.names[index(kind)];
        let start = rec.now();
        let mut tries = 1u32;
        loop {
            let result = match (&self.calls, &self.stmts) {
                (Some(calls), _) => server::attempt(sess, calls, &self.home, &input),
                (None, Some(stmts)) => {
                    let mut cx = Cx {
                        sess: &mut *sess,
                        events: self
                            .stmt_names
                            .get(index(kind))
                            .map(|names| (&mut *rec, names)),
                    };
                    txn::attempt(&mut cx, stmts, &self.home, &input)
                }
                (None, None) => {
                    return Err(TargetError::config(
                        "the TPC-C statements were not prepared",
                    ))
                }
            };
            let end = rec.now();
            let e = match result {
                Ok(ended) => {
                    rec.push(name, start, end, None, 0, tries as u64);
                    let t = &self.tally;
                    match ended.rolled_back {
                        true => Tally::add(&t.rolled_back, kind, 1),
                        false => Tally::add(&t.committed, kind, 1),
                    }
                    Tally::add(&t.retries, kind, (tries - 1) as u64);
                    t.delivery_skipped
                        .fetch_add(ended.skipped, std::sync::atomic::Ordering::Relaxed);
                    return Ok(());
                }
                Err(e) => e,
            };
            // A server-side call ran in autocommit: its failure ended its transaction.
            if !e.connection_lost && !self.server_side {
                let _ = sess.rollback();
            }
            if retryable(&e) && !e.connection_lost && tries < self.max_tries {
                tries += 1;
                continue;
            }
            rec.push(name, start, end, None, rec.outcome(&e.class), tries as u64);
            Tally::add(&self.tally.failed, kind, 1);
            Tally::add(&self.tally.retries, kind, (tries - 1) as u64);
            return Err(e);
        }
    }
}
