//! A destination writer: one durable write per batch, injected delays, outliers, and the two-destination race.

use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::sync::{Condvar, Mutex};

use dbscope_core::record::{session_seed, Recorder};
use dbscope_core::NameId;

use super::super::inject::Injector;
use super::config::RedoConfig;
use super::dest::{io_class, io_message, DestFile};
use super::names::{EV_INJECT, EV_WRITE};
use super::shared::{Batch, Race, Shared};

/// The seeded injector of destination `d`, when an `--inject` names it (the last one wins).
pub(super) fn injector_for(cfg: &RedoConfig, d: usize) -> Option<Injector> {
    let inj = cfg
        .injections
        .iter()
        .rfind(|inj| cfg.dest_index(&inj.dest).ok() == Some(d))?;
    Some(Injector::new(
        inj.spec.clone(),
        session_seed(cfg.seed ^ 0x1_4EC7, 1000 + d as u32),
    ))
}

pub(super) struct DestWriter<'a> {
    pub(super) d: usize,
    pub(super) file: &'a DestFile,
    pub(super) rec: Recorder,
    pub(super) ev_write: NameId,
    pub(super) ev_inject: NameId,
    pub(super) injector: Option<Injector>,
    pub(super) sh: &'a Shared<'a>,
    pub(super) race: &'a Mutex<Race>,
    pub(super) race_cv: &'a Condvar,
}

impl<'a> DestWriter<'a> {
    /// The writer of destination `d`, recording with `rec` (the destination's session).
    pub(super) fn new(
        d: usize,
        file: &'a DestFile,
        rec: Recorder,
        sh: &'a Shared<'a>,
        race: &'a Mutex<Race>,
        race_cv: &'a Condvar,
    ) -> Self {
        DestWriter {
            d,
            file,
            ev_write: rec.name(EV_WRITE),
            ev_inject: rec.name(EV_INJECT),
            rec,
            injector: injector_for(sh.cfg, d),
            sh,
            race,
            race_cv,
        }
    }

    pub(super) fn run(mut self, rx: Receiver<Batch>) {
        while let Ok(b) = rx.recv() {
            if !self.write(b.id, b.buf.as_slice(), b.offset, b.blocks) {
                break;
            }
        }
        self.rec.flush();
    }

    /// Writes one batch, records it, and settles the race. False when the write failed.
    pub(super) fn write(&mut self, id: u64, buf: &[u8], offset: u64, blocks: u32) -> bool {
        let ev_write = self.ev_write;
        let t0 = self.rec.now();
        let result = self.file.write_durable(buf, offset);
        let mut t1 = self.rec.now();
        if let Err(e) = result {
            self.rec.error(ev_write, t0, t1, io_class(&e));
            let msg = io_message(&self.file.path, "redo write failed", &e);
            self.race.lock().unwrap_or_else(|e| e.into_inner()).failed = Some(msg.clone());
            self.race_cv.notify_all();
            self.sh.fail(msg);
            return false;
        }
        if let Some(inj) = &mut self.injector {
            let delay = inj.next_delay();
            if !delay.is_zero() {
                std::thread::sleep(delay);
                let t2 = self.rec.now();
                self.rec.ok(self.ev_inject, t1, t2, 0);
                let c = self.sh.counters;
                c.dest_injected[self.d].fetch_add(1, Ordering::Relaxed);
                c.dest_injected_ns[self.d].fetch_add(t2 - t1, Ordering::Relaxed);
                t1 = t2;
            }
        }
        self.rec.ok(ev_write, t0, t1, blocks as u64);
        let c = self.sh.counters;
        c.dest_writes[self.d].fetch_add(1, Ordering::Relaxed);
        // A write's own service time (this destination's write and sync, injected delay included),
        // not the time since the log writer issued it: a write queued behind a stalled one is not
        // itself an outlier (issue 13: 9 injected stalls counted as 6,992 prevented outliers).
        let latency = t1.saturating_sub(t0);
        let outlier_ns = self.sh.cfg.outlier.as_nanos() as u64;
        if latency > outlier_ns {
            c.dest_outliers[self.d].fetch_add(1, Ordering::Relaxed);
        }
        let mut r = self.race.lock().unwrap_or_else(|e| e.into_inner());
        r.done[self.d] = id;
        if r.done.len() == 1 {
            // One destination: its writes are synchronous in the thread that waits for them, so
            // nobody waits on the condvar (whose notify would cost a futex call per write).
            c.dest_first[self.d].fetch_add(1, Ordering::Relaxed);
            return true;
        }
        if let Some(winner_latency) = r.first.remove(&id) {
            // The loser: the race is decided.
            c.races.fetch_add(1, Ordering::Relaxed);
            if latency > outlier_ns && winner_latency <= outlier_ns {
                c.prevented.fetch_add(1, Ordering::Relaxed);
            }
        } else {
            r.first.insert(id, latency);
            c.dest_first[self.d].fetch_add(1, Ordering::Relaxed);
        }
        drop(r);
        self.race_cv.notify_all();
        true
    }
}
