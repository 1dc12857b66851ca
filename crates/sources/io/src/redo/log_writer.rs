//! The log writer: group commit of queued records into the circular log, log switches, and the hand-off to one or two destinations.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Condvar, Mutex};

use dbscope_core::record::Recorder;

use super::super::block::{blocks_for, pack_blocks, AlignedBuf, Record};
use super::cursor::Cursor;
use super::dest::{DestFile, BUF_ALIGN};
use super::dest_writer::DestWriter;
use super::names::EV_SWITCH;
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
                // The writer may lag a whole group behind; the reuse check bounds the lag.
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
                let mut r = race.lock().unwrap_or_else(|e| e.into_inner());
                while r.done.iter().any(|&d| d < need) && r.failed.is_none() {
                    r = race_cv.wait(r).unwrap_or_else(|e| e.into_inner());
                }
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
