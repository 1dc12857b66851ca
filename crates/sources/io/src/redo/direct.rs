//! Committers writing the log themselves (no group commit, one destination): no log-writer thread and no hand-off between threads.

use std::sync::atomic::Ordering;

use dbscope_core::record::Recorder;
use dbscope_core::NameId;

use super::super::block::{blocks_for, pack_record, AlignedBuf, Record, RECORD_HEADER};
use super::cursor::Cursor;
use super::dest::BUF_ALIGN;
use super::dest_writer::DestWriter;
use super::names::EV_SWITCH;
use super::shared::Shared;

/// Without group commit on one destination, each committer writes its own record under this
/// lock: there is no log-writer thread, so `log file sync` holds no handoff between threads
/// (about 10 µs each way, more than a write to tmpfs takes). The lock keeps the writes in commit
/// order, as one log writer would, and the log, events and counters are the same as the log
/// writer's. The race (two destinations) always goes through the log writer.
pub(super) struct Direct<'a> {
    pub(super) cursor: Cursor,
    pub(super) next_commit: u64,
    pub(super) buf: AlignedBuf,
    pub(super) writer: DestWriter<'a>,
    /// Records log switches under the log writer's session, as the log writer would.
    pub(super) switch_rec: Recorder,
    pub(super) ev_switch: NameId,
    pub(super) failed: bool,
}

impl<'a> Direct<'a> {
    pub(super) fn new(
        sh: &'a Shared<'a>,
        writer: DestWriter<'a>,
        switch_rec: Recorder,
        record_max: u32,
    ) -> Self {
        let max_len = blocks_for(record_max as usize, sh.layout.block_size) * sh.layout.block_size;
        Direct {
            cursor: Cursor::new(sh.layout),
            next_commit: 1,
            buf: AlignedBuf::zeroed(max_len, BUF_ALIGN),
            writer,
            ev_switch: switch_rec.name(EV_SWITCH),
            switch_rec,
            failed: false,
        }
    }

    /// Writes one commit record and makes it durable. False when the write failed (the run is
    /// then failing and the error is recorded).
    pub(super) fn commit(&mut self, session: u32, session_commit: u32, bytes: u32) -> bool {
        let sh = self.writer.sh;
        let bs = sh.layout.block_size;
        let record = Record {
            commit: self.next_commit,
            session,
            session_commit,
            bytes,
        };
        let nblocks = blocks_for((bytes as usize).max(RECORD_HEADER), bs);
        if nblocks > self.cursor.space() {
            // Writes here are synchronous: every earlier write into the next group is complete.
            let t0 = self.switch_rec.now();
            self.cursor.switch();
            self.switch_rec
                .ok(self.ev_switch, t0, self.switch_rec.now(), 0);
            sh.counters.switches.fetch_add(1, Ordering::Relaxed);
        }
        let placed = self.cursor.place(nblocks);
        let len = nblocks * bs;
        let buf = &mut self.buf.as_mut_slice()[..len];
        pack_record(&record, bs, placed.header, buf);
        let buf = &self.buf.as_slice()[..len];
        if !self
            .writer
            .write(placed.id, buf, placed.offset, nblocks as u32)
        {
            self.failed = true;
            return false;
        }
        self.next_commit += 1;
        let c = sh.counters;
        c.writes.fetch_add(1, Ordering::Relaxed);
        c.blocks.fetch_add(nblocks as u64, Ordering::Relaxed);
        c.commits.fetch_add(1, Ordering::Relaxed);
        true
    }
}
