//! The log writer: group commit of queued records into the circular log, log switches, and the hand-off to one or two destinations.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Condvar, Mutex};

use dbscope_core::record::Recorder;

use super::super::block::{blocks_for, pack_blocks, AlignedBuf, Record};
use super::cursor::Cursor;
use super::dest::{DestFile, BUF_ALIGN};
use super::dest_writer::DestWriter;
use super::names::{EV_HOLD, EV_SWITCH};
use super::shared::{Batch, Race, Shared};

pub(super) fn log_writer(
    sh: &Shared<'_>,
    files: &[DestFile],
    mut rec: Recorder,
    dest_recs: Vec<Recorder>,
) {
    let cfg = sh.cfg;
    let ndest = files.len();
    let ev_switch = rec.name(EV_SWITCH);
    let race = Mutex::new(Race::new(ndest));
    let race_cv = Condvar::new();
    let limit = cfg.backlog_limit_blocks();
    let ev_hold = rec.name(EV_HOLD);

    std::thread::scope(|scope| {
        let mut senders: Vec<SyncSender<Batch>> = Vec::new();
        let mut single: Option<DestWriter<'_>> = None;
        let mut dest_recs = dest_recs.into_iter();
        for (d, f) in files.iter().enumerate() {
            let rec = dest_recs.next().expect("one recorder per destination");
            let w = DestWriter::new(d, f, rec, sh, &race, &race_cv);
            if ndest == 1 {
                single = Some(w);
            } else {
                // The writer may lag behind by up to the backlog limit (see `hold_for_backlog`).
                let (tx, rx) = sync_channel::<Batch>(1 << 16);
                senders.push(tx);
                std::thread::Builder::new()
                    .name(format!("dest-{d}"))
                    .spawn_scoped(scope, move || w.run(rx))
                    .expect("spawning a destination writer");
            }
        }

        let bs = cfg.block_size;
        let mut cursor = Cursor::new(sh.layout);
        let mut stream: Vec<u8> = Vec::with_capacity(1 << 20);
        let mut single_buf: Option<AlignedBuf> = None;
        let mut taken: Vec<Record> = Vec::new();

        'run: loop {
            // Take what is queued and fits in the current group.
            taken.clear();
            let mut q = sh.lock();
            loop {
                if q.failed {
                    break 'run;
                }
                if !q.pending.is_empty() {
                    break;
                }
                if q.committers_left == 0 {
                    break 'run;
                }
                q.lgwr_waiting = true;
                q = sh.lgwr_cv.wait(q).unwrap_or_else(|e| e.into_inner());
                q.lgwr_waiting = false;
            }
            let space = cursor.space();
            let mut bytes = 0usize;
            while let Some(r) = q.pending.front() {
                if blocks_for(bytes + r.bytes as usize, bs) > space
                    || (!cfg.group_commit && !taken.is_empty())
                {
                    break;
                }
                bytes += r.bytes as usize;
                taken.push(q.pending.pop_front().expect("front exists"));
            }
            drop(q);
            if taken.is_empty() {
                // Not even one record fits: switch to the next group, once it may be reused.
                let t0 = rec.now();
                let need = cursor.switch();
                // With two destinations the backlog limit keeps the slower one out of the next
                // group (see `backlog_limit`), so this finds it complete; the wait stays as the
                // rule that guards the log, and counts as a wait for the slower destination.
                let mut r = race.lock().unwrap_or_else(|e| e.into_inner());
                let waits = r.done.iter().any(|&d| d < need) && r.failed.is_none();
                if waits {
                    r.switch_wait = true;
                    r.waits_begun += 1;
                }
                while r.done.iter().any(|&d| d < need) && r.failed.is_none() {
                    r = race_cv.wait(r).unwrap_or_else(|e| e.into_inner());
                }
                r.switch_wait = false;
                drop(r);
                rec.ok(ev_switch, t0, rec.now(), 0);
                sh.counters.switches.fetch_add(1, Ordering::Relaxed);
                continue;
            }

            stream.clear();
            for r in &taken {
                r.encode(&mut stream);
            }
            let nblocks = blocks_for(stream.len(), bs);
            let placed = cursor.place(nblocks);
            let ok = if let Some(w) = single.as_mut() {
                // One buffer, grown when a write needs more; each write uses its prefix.
                let len = nblocks * bs;
                let buf = match &mut single_buf {
                    Some(b) if b.as_slice().len() >= len => b,
                    slot => slot.insert(AlignedBuf::zeroed(len.next_power_of_two(), BUF_ALIGN)),
                };
                pack_blocks(&stream, bs, placed.header, &mut buf.as_mut_slice()[..len]);
                w.write(
                    placed.id,
                    &buf.as_slice()[..len],
                    placed.offset,
                    nblocks as u32,
                )
            } else {
                hold_for_backlog(
                    sh,
                    &mut rec,
                    ev_hold,
                    &race,
                    &race_cv,
                    nblocks as u64,
                    limit,
                );
                let mut buf = AlignedBuf::zeroed(nblocks * bs, BUF_ALIGN);
                pack_blocks(&stream, bs, placed.header, buf.as_mut_slice());
                let b = Arc::new(buf);
                for tx in &senders {
                    let _ = tx.send(Batch {
                        id: placed.id,
                        offset: placed.offset,
                        blocks: nblocks as u32,
                        buf: Arc::clone(&b),
                    });
                }
                // Acknowledge when the first destination has it.
                let mut r = race.lock().unwrap_or_else(|e| e.into_inner());
                while !r.done.iter().any(|&d| d >= placed.id) && r.failed.is_none() {
                    r = race_cv.wait(r).unwrap_or_else(|e| e.into_inner());
                }
                r.failed.is_none()
            };
            if !ok {
                break 'run;
            }
            let c = sh.counters;
            c.writes.fetch_add(1, Ordering::Relaxed);
            c.blocks.fetch_add(nblocks as u64, Ordering::Relaxed);
            c.commits.fetch_add(taken.len() as u64, Ordering::Relaxed);
            let last = taken.last().expect("non-empty").commit;
            let mut q = sh.lock();
            q.durable = last;
            drop(q);
            sh.ack_cv.notify_all();
        }
        drop(senders);
        rec.flush();
        if let Some(mut w) = single {
            w.rec.flush();
        }
    });
    // Release any committer still waiting (after a failure, or a stop with records queued).
    let mut q = sh.lock();
    q.failed = true;
    drop(q);
    sh.ack_cv.notify_all();
}

/// The race's bound on the slower destination: the log writer holds a write of `n` blocks until
/// the slower destination's backlog (blocks handed to it and not yet completed) has room for it
/// within `limit` (or is empty, for a write larger than the limit), then hands it over. The
/// slower copy keeps completing in the background while the faster one acknowledges, but never
/// more than `limit` behind: until it completes, the faster copy is the only one, and the log
/// switch and the drain at the end must not have to wait for more. A held write waits for the
/// slower destination's current write (and a catch-up write after it when that one was small):
/// about what a commit waits for on that destination alone. Recorded as [`EV_HOLD`].
fn hold_for_backlog(
    sh: &Shared<'_>,
    rec: &mut Recorder,
    ev_hold: dbscope_core::NameId,
    race: &Mutex<Race>,
    race_cv: &Condvar,
    n: u64,
    limit: u64,
) {
    let mut r = race.lock().unwrap_or_else(|e| e.into_inner());
    // Released once every destination has completed this many blocks.
    let need = if n > limit {
        r.issued_blocks
    } else {
        (r.issued_blocks + n).saturating_sub(limit)
    };
    if r.all_done_blocks() < need && r.failed.is_none() {
        let t0 = rec.now();
        r.hold = Some(need);
        r.waits_begun += 1;
        while r.hold.is_some() && r.failed.is_none() {
            r = race_cv.wait(r).unwrap_or_else(|e| e.into_inner());
        }
        let released = if r.hold.take().is_some() {
            rec.now() // the run failed meanwhile
        } else {
            r.released_ns.max(t0)
        };
        rec.ok(ev_hold, t0, released, 0);
        let c = sh.counters;
        c.backlog_waits.fetch_add(1, Ordering::Relaxed);
        c.backlog_wait_ns
            .fetch_add(released - t0, Ordering::Relaxed);
    }
    r.issued_blocks += n;
}
