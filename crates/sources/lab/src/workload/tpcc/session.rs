//! One session of the TPC-C workload: draws each transaction's type from the mix and its inputs
//! for the session's home warehouse, runs it ([`txn::attempt`]), retries what pgbench retries
//! (`workload::script::retryable`, up to `--max-tries`), and records one event per transaction
//! named after its type (`rows`: its tries), and with `--per-statement` one per statement of it
//! (`new_order.update_stock` …: `rows` the rows it returned or changed). With
//! `--keying-thinking` the keying time before and the think time after each transaction are
//! events of their own (`new_order.keying`, `new_order.think`), the transaction's event keeping
//! its own latency (its intended start the end of the keying time).

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
    /// `--keying-thinking`: clause 5.2.5's keying time before each transaction and think time
    /// after it, each an event (`new_order.keying`, `new_order.think`), cut at `deadline_ns`.
    pub keying_thinking: bool,
    /// The end of the run on the recorder's clock (`--duration`), so no delay outlasts it.
    pub deadline_ns: Option<u64>,
    /// Per type, the names of its keying and think events.
    pub delay_names: [[NameId; 2]; 5],
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
        if self.keying_thinking {
            self.delay_names = TxKind::ALL.map(|k| {
                [
                    rec.name(&format!("{}.keying", k.name())),
                    rec.name(&format!("{}.think", k.name())),
                ]
            });
        }
        Ok(())
    }

    fn step(&mut self, sess: &mut dyn Session, rec: &mut Recorder) -> Result<(), TargetError> {
        if self.all_warehouses {
            self.home.w = self.gen.int(1, self.home.warehouses);
        }
        let kind = self.mix.pick(self.gen.int(0, 99) as u32);
        let input = Input::draw(kind, &self.home, &mut self.gen, &self.nu);
        let name = self.names[index(kind)];
        // The keying time: the transaction is due when it ends (its intended start, so an
        // oversleep counts against it, open loop); the run's end cuts it short.
        let mut intended = None;
        if self.keying_thinking {
            let due = rec.now() + secs_ns(kind.keying_s());
            if !self.delay(rec, self.delay_names[index(kind)][0], due) {
                return Ok(());
            }
            intended = Some(due);
        }
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
                    rec.push(name, start, end, intended, 0, tries as u64);
                    let t = &self.tally;
                    match ended.rolled_back {
                        true => Tally::add(&t.rolled_back, kind, 1),
                        false => Tally::add(&t.committed, kind, 1),
                    }
                    Tally::add(&t.retries, kind, (tries - 1) as u64);
                    t.delivery_skipped
                        .fetch_add(ended.skipped, std::sync::atomic::Ordering::Relaxed);
                    if self.keying_thinking {
                        let think = self.gen.think_s(kind.think_mean_s());
                        let until = rec.now() + secs_ns(think);
                        self.delay(rec, self.delay_names[index(kind)][1], until);
                    }
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
            rec.push(
                name,
                start,
                end,
                intended,
                rec.outcome(&e.class),
                tries as u64,
            );
            Tally::add(&self.tally.failed, kind, 1);
            Tally::add(&self.tally.retries, kind, (tries - 1) as u64);
            return Err(e);
        }
    }
}

impl TpccSession {
    /// Waits until `until` (the recorder's clock) or the run's end, whichever comes first,
    /// recorded as event `name`; true when it waited the whole time.
    fn delay(&self, rec: &mut Recorder, name: NameId, until: u64) -> bool {
        let t0 = rec.now();
        let stop = self.deadline_ns.map_or(until, |d| until.min(d));
        crate::pace::wait_until(rec, stop);
        rec.push_unpaced(name, t0, rec.now(), 0, 0);
        until <= stop
    }
}

fn secs_ns(s: f64) -> u64 {
    (s * 1e9) as u64
}
