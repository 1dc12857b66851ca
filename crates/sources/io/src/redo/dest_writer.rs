//! A destination writer: one durable write per batch, injected delays, outliers, and the two-destination race.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::sync::{Condvar, Mutex};

use dbscope_core::record::{session_seed, Recorder};
use dbscope_core::NameId;

use super::super::block::AlignedBuf;
use super::super::inject::Injector;
use super::config::RedoConfig;
use super::dest::{io_class, io_message, DestFile, BUF_ALIGN};
use super::names::{EV_INJECT, EV_WRITE};
use super::shared::{Batch, Race, Shared, CATCH_UP_BYTES};

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
    /// Where batches are joined into one catch-up write.
    pub(super) join_buf: Option<AlignedBuf>,
    /// Destinations in the run (the race's bookkeeping is only needed with two).
    pub(super) race_len: usize,
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
            join_buf: None,
            race_len: sh.cfg.dests.len(),
        }
    }

    /// Writes the batches of one destination of the race, in order. A destination that fell
    /// behind (a stall, or a slower device) catches up as a log writer does with queued commits:
    /// the batches queued for it that follow on in the file, up to [`CATCH_UP_BYTES`], go in one
    /// write and one sync, so a stall costs it one write, not one per batch queued meanwhile.
    pub(super) fn run(mut self, rx: Receiver<Batch>) {
        let bs = self.sh.layout.block_size as u64;
        let mut queued: VecDeque<Batch> = VecDeque::new();
        'run: loop {
            if queued.is_empty() {
                match rx.recv() {
                    Ok(b) => queued.push_back(b),
                    Err(_) => break,
                }
            }
            queued.extend(rx.try_iter());
            let max_blocks = CATCH_UP_BYTES as u64 / bs;
            // While the log writer holds a write for this destination, write only what releases
            // it first: the held commits then wait for a write about their own size, as they
            // would on this destination alone, not for a whole catch-up write.
            let target = {
                let r = self.race.lock().unwrap_or_else(|e| e.into_inner());
                match r.hold {
                    Some(need) if need > r.done_blocks[self.d] => {
                        (need - r.done_blocks[self.d]).min(max_blocks)
                    }
                    _ => max_blocks,
                }
            };
            let first = queued.pop_front().expect("a batch is queued");
            let mut end = first.offset + first.blocks as u64 * bs;
            let mut join = vec![first];
            let mut blocks = join[0].blocks as u64;
            while let Some(next) = queued.front() {
                if next.offset != end
                    || blocks >= target
                    || blocks + next.blocks as u64 > max_blocks
                {
                    break;
                }
                end += next.blocks as u64 * bs;
                blocks += next.blocks as u64;
                join.push(queued.pop_front().expect("front exists"));
            }
            let (first_id, last_id, offset) = (join[0].id, join[join.len() - 1].id, join[0].offset);
            let ok = if join.len() == 1 {
                let b = &join[0];
                self.write_io(first_id, last_id, b.buf.as_slice(), offset, b.blocks)
            } else {
                let len = (blocks * bs) as usize;
                let mut buf = match self.join_buf.take() {
                    Some(b) if b.as_slice().len() >= len => b,
                    _ => AlignedBuf::zeroed(len.max(CATCH_UP_BYTES), BUF_ALIGN),
                };
                let mut at = 0;
                for b in &join {
                    let part = b.buf.as_slice();
                    buf.as_mut_slice()[at..at + part.len()].copy_from_slice(part);
                    at += part.len();
                }
                let ok = self.write_io(
                    first_id,
                    last_id,
                    &buf.as_slice()[..len],
                    offset,
                    blocks as u32,
                );
                self.join_buf = Some(buf);
                ok
            };
            if !ok {
                break 'run;
            }
        }
        self.rec.flush();
    }

    /// Writes one batch, records it, and settles the race. False when the write failed.
    pub(super) fn write(&mut self, id: u64, buf: &[u8], offset: u64, blocks: u32) -> bool {
        self.write_io(id, id, buf, offset, blocks)
    }

    /// Writes the batches `first_id..=last_id` (consecutive in the file) with one durable write,
    /// records it, and settles their races. False when the write failed.
    fn write_io(
        &mut self,
        first_id: u64,
        last_id: u64,
        buf: &[u8],
        offset: u64,
        blocks: u32,
    ) -> bool {
        let ev_write = self.ev_write;
        // Whether the log writer waits for a destination while this write is in progress.
        let waits_before = if self.race_len > 1 {
            Some(self.race.lock().unwrap_or_else(|e| e.into_inner()).waits())
        } else {
            None
        };
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
        c.write_ended(t1);
        // A write's own service time (this destination's write and sync, injected delay included),
        // not the time since the log writer issued it: a write queued behind a stalled one is not
        // itself an outlier (issue 13: 9 injected stalls counted as 6,992 prevented outliers).
        let latency = t1.saturating_sub(t0);
        let outlier_ns = self.sh.cfg.outlier.as_nanos() as u64;
        if latency > outlier_ns {
            c.dest_outliers[self.d].fetch_add(1, Ordering::Relaxed);
        }
        let mut r = self.race.lock().unwrap_or_else(|e| e.into_inner());
        let waits_after = r.waits();
        r.done[self.d] = last_id;
        r.done_blocks[self.d] += blocks as u64;
        if r.hold.is_some_and(|need| r.all_done_blocks() >= need) {
            // This write made room in the backlog: the held write may go.
            r.hold = None;
            r.released_ns = t1;
        }
        if r.done.len() == 1 {
            // One destination: its writes are synchronous in the thread that waits for them, so
            // nobody waits on the condvar (whose notify would cost a futex call per write).
            c.dest_first[self.d].fetch_add(1, Ordering::Relaxed);
            return true;
        }
        // Per batch, the first destination to complete it wins. This write prevented an outlier
        // when it took too long but lost every batch it carried to writes that did not, and the
        // log writer never waited for a destination meanwhile (else commits waited for it):
        // counted once per write of the slower destination, however many batches it carried.
        let log_writer_waited = match waits_before {
            Some((waiting, begun)) => waiting || waits_after.0 || waits_after.1 != begun,
            None => false,
        };
        let (mut lost_all, mut winners_in_time) = (true, true);
        for id in first_id..=last_id {
            if let Some(winner_latency) = r.first.remove(&id) {
                // The loser: the race is decided.
                c.races.fetch_add(1, Ordering::Relaxed);
                winners_in_time &= winner_latency <= outlier_ns;
            } else {
                r.first.insert(id, latency);
                c.dest_first[self.d].fetch_add(1, Ordering::Relaxed);
                lost_all = false;
            }
        }
        if latency > outlier_ns && lost_all && winners_in_time && !log_writer_waited {
            c.prevented.fetch_add(1, Ordering::Relaxed);
        }
        drop(r);
        self.race_cv.notify_all();
        true
    }
}
