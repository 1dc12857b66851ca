//! Where the next write goes in the circular log and how it links to the previous one.

use super::super::block::{LogLayout, WriteHeader, FLAG_SWITCH};

/// Where the next write goes in the circular log and how it links to the previous one. The log
/// writer (group commit) and the committers writing directly (no group commit) share this logic,
/// so both produce the same log.
pub(super) struct Cursor {
    pub(super) layout: LogLayout,
    /// Most blocks one write may take (a write's block count is a u16 in the block header).
    pub(super) max_write: usize,
    pub(super) group: u32,
    /// Next block within the group.
    pub(super) next_block: u32,
    /// Sequence number of the next block.
    pub(super) seq: u64,
    /// File block index of the previous write's first block.
    pub(super) prev_pos: u32,
    /// Flags of the next write ([`FLAG_SWITCH`] after a switch).
    pub(super) flags: u16,
    /// Writes placed so far (the id of the latest).
    pub(super) batch_id: u64,
    /// Per group, the id of the latest write into it: it must be complete on every destination
    /// before the group is reused.
    pub(super) last_batch_in_group: Vec<u64>,
}

/// One write placed in the log.
#[derive(Clone, Copy)]
pub(super) struct Placed {
    pub(super) header: WriteHeader,
    pub(super) offset: u64,
    pub(super) id: u64,
}

impl Cursor {
    pub(super) fn new(layout: LogLayout) -> Self {
        Cursor {
            layout,
            max_write: layout.blocks_per_group.min(u16::MAX as u32) as usize,
            group: 0,
            next_block: 0,
            seq: 1,
            prev_pos: 0,
            flags: 0,
            batch_id: 0,
            last_batch_in_group: vec![0; layout.groups as usize],
        }
    }

    /// Blocks the next write may take without a log switch.
    pub(super) fn space(&self) -> usize {
        ((self.layout.blocks_per_group - self.next_block) as usize).min(self.max_write)
    }

    /// Moves to the next group. Returns the id of the write that must be complete on every
    /// destination before the group may be written.
    pub(super) fn switch(&mut self) -> u64 {
        self.group = (self.group + 1) % self.layout.groups;
        self.next_block = 0;
        self.flags = FLAG_SWITCH;
        self.last_batch_in_group[self.group as usize]
    }

    /// Places a write of `nblocks` (at most [`Cursor::space`]) and moves past it.
    pub(super) fn place(&mut self, nblocks: usize) -> Placed {
        debug_assert!(nblocks <= self.space());
        let pos = self.layout.group_start(self.group) + self.next_block;
        let header = WriteHeader {
            first_seq: self.seq,
            prev_pos: self.prev_pos,
            flags: self.flags,
        };
        self.batch_id += 1;
        self.last_batch_in_group[self.group as usize] = self.batch_id;
        self.seq += nblocks as u64;
        self.prev_pos = pos;
        self.flags = 0;
        self.next_block += nblocks as u32;
        Placed {
            header,
            offset: pos as u64 * self.layout.block_size as u64,
            id: self.batch_id,
        }
    }
}
