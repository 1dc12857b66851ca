//! The committers: each draws record sizes from its seed, queues a commit (or writes it itself, without group commit) and records `log file sync`.

use std::sync::Mutex;
use std::time::Duration;

use dbscope_core::record::{session_seed, Recorder};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::super::block::Record;
use super::direct::Direct;
use super::names::EV_SYNC;
use super::shared::Shared;

pub(super) fn committer(
    sh: &Shared<'_>,
    session: u32,
    mut rec: Recorder,
    deadline_ns: Option<u64>,
    direct: Option<&Mutex<Option<Direct<'_>>>>,
) {
    let ev = rec.name(EV_SYNC);
    let cfg = sh.cfg;
    let mut rng = ChaCha8Rng::seed_from_u64(session_seed(cfg.seed, session));
    let limit = cfg.ops_per_session.unwrap_or(u64::MAX);
    let interval_ns = cfg.rate_per_session.map(|r| (1e9 / r) as u64);
    let begin = rec.now();
    let mut n = 0u64;
    while n < limit {
        if sh.stop.is_set() {
            sh.counters.stop_issuing(rec.now());
            break;
        }
        let intended = interval_ns.map(|i| begin + n * i);
        if let Some(t) = intended {
            // Open loop: wait for the scheduled start, in short sleeps so a stop is noticed.
            loop {
                let now = rec.now();
                if now >= t || sh.stop.is_set() {
                    break;
                }
                std::thread::sleep(Duration::from_nanos((t - now).min(50_000_000)));
            }
        }
        // No commit starts after the deadline (`Counters::stop_ns` holds it from the start).
        if deadline_ns.is_some_and(|d| rec.now() >= d) {
            break;
        }
        if sh.stop.is_set() {
            sh.counters.stop_issuing(rec.now());
            break;
        }
        n += 1;
        let bytes = rng.random_range(cfg.record_bytes.0..=cfg.record_bytes.1);
        let session_commit = n.min(u32::MAX as u64) as u32;
        let t0 = rec.now();
        let acked = match direct {
            Some(d) => {
                let mut d = d.lock().unwrap_or_else(|e| e.into_inner());
                match d.as_mut() {
                    Some(d) if !d.failed => Some(d.commit(session, session_commit, bytes)),
                    _ => None,
                }
            }
            None => queue_and_wait(sh, session, session_commit, bytes),
        };
        let t1 = rec.now();
        match acked {
            Some(true) => rec.push(ev, t0, t1, intended, 0, 1),
            Some(false) => {
                rec.error(ev, t0, t1, "io");
                break;
            }
            // The run failed before this commit was queued: nothing to record.
            None => break,
        }
    }
    rec.flush();
    let mut q = sh.lock();
    q.committers_left -= 1;
    let last = q.committers_left == 0;
    drop(q);
    if last {
        // Every commit has been answered: what the destinations still write is the drain.
        sh.counters.stop_issuing(rec.now());
    }
    sh.lgwr_cv.notify_all();
    if let (true, Some(d)) = (last, direct) {
        // The last committer drops the direct writer, flushing its recorders, so the event
        // writer sees every sender gone.
        drop(d.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}

/// Queues one record for the log writer and waits until it is durable: `Some(true)` once
/// acknowledged, `Some(false)` when the run failed meanwhile, `None` when it had already failed.
pub(super) fn queue_and_wait(
    sh: &Shared<'_>,
    session: u32,
    session_commit: u32,
    bytes: u32,
) -> Option<bool> {
    let mut q = sh.lock();
    if q.failed {
        return None;
    }
    let commit = q.next_commit;
    q.next_commit += 1;
    q.pending.push_back(Record {
        commit,
        session,
        session_commit,
        bytes,
    });
    // Only a waiting log writer needs waking; a busy one takes the queue when its write is done
    // (waking it anyway would cost a futex call per commit, 20 per write at 20 sessions).
    if q.lgwr_waiting {
        sh.lgwr_cv.notify_one();
    }
    while q.durable < commit && !q.failed {
        q = sh.ack_cv.wait(q).unwrap_or_else(|e| e.into_inner());
    }
    Some(q.durable >= commit)
}
