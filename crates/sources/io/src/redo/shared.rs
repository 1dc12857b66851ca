//! What the committers and writers share: the commit queue, the race bookkeeping, the batches handed to destination writers, and the failure switch.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};

use dbscope_core::record::StopSignal;

use super::super::block::{AlignedBuf, LogLayout, Record};
use super::config::RedoConfig;
use super::counters::Counters;

/// Commit records waiting for the log writer, and how far the log is durable.
pub(super) struct Queue {
    pub(super) pending: VecDeque<Record>,
    pub(super) next_commit: u64,
    pub(super) durable: u64,
    pub(super) committers_left: u32,
    pub(super) failed: bool,
    /// The log writer is waiting on `lgwr_cv` (else it is busy and will look at the queue).
    pub(super) lgwr_waiting: bool,
}

impl Queue {
    /// An empty queue for `committers` committer threads.
    pub(super) fn new(committers: u32) -> Self {
        Queue {
            pending: VecDeque::new(),
            next_commit: 1,
            durable: 0,
            committers_left: committers,
            failed: false,
            lgwr_waiting: false,
        }
    }
}

/// One batch handed to the destination writers.
pub(super) struct Batch {
    pub(super) id: u64,
    pub(super) offset: u64,
    pub(super) blocks: u32,
    pub(super) buf: Arc<AlignedBuf>,
}

/// Race bookkeeping shared by the destination writers and the log writer.
#[derive(Default)]
pub(super) struct Race {
    /// Per destination, the id of the latest write it completed (writes complete in order).
    pub(super) done: Vec<u64>,
    /// Per destination, the blocks it has completed.
    pub(super) done_blocks: Vec<u64>,
    /// Blocks the log writer has handed to every destination.
    pub(super) issued_blocks: u64,
    /// Writes one destination completed and the other not yet: id → the winner's service time.
    pub(super) first: std::collections::HashMap<u64, u64>,
    /// While the log writer holds a write for the slower destination: the blocks every
    /// destination must have completed to release it. The destination writer whose write
    /// does so clears it, noting the time in `released_ns`.
    pub(super) hold: Option<u64>,
    pub(super) released_ns: u64,
    /// The log writer is waiting at a log switch for a destination to finish the next group.
    pub(super) switch_wait: bool,
    /// Holds and switch waits begun so far: a destination write during which this changed (or
    /// one was in progress) made the log writer, and so commits, wait.
    pub(super) waits_begun: u64,
    pub(super) failed: Option<String>,
}

impl Race {
    /// A race between `ndest` destinations (one: no race, just the bookkeeping).
    pub(super) fn new(ndest: usize) -> Self {
        Race {
            done: vec![0; ndest],
            done_blocks: vec![0; ndest],
            ..Race::default()
        }
    }

    /// Blocks every destination has completed.
    pub(super) fn all_done_blocks(&self) -> u64 {
        self.done_blocks.iter().copied().min().unwrap_or(0)
    }

    /// Whether the log writer is waiting for a destination (a hold or a switch), and how many
    /// such waits have begun: compared before and after a write, they say whether the log
    /// writer waited for anything while it was in progress.
    pub(super) fn waits(&self) -> (bool, u64) {
        (self.hold.is_some() || self.switch_wait, self.waits_begun)
    }
}

/// The most a destination that fell behind writes in one catch-up write: 1 MiB, Oracle's
/// largest log write, or one batch when that is larger.
pub(super) const CATCH_UP_BYTES: usize = 1 << 20;

/// What every committer and writer thread of a run sees.
pub(super) struct Shared<'a> {
    pub(super) cfg: &'a RedoConfig,
    pub(super) layout: LogLayout,
    pub(super) queue: &'a Mutex<Queue>,
    pub(super) lgwr_cv: &'a Condvar,
    pub(super) ack_cv: &'a Condvar,
    pub(super) counters: &'a Counters,
    pub(super) stop: &'a StopSignal,
    pub(super) failure: Mutex<Option<String>>,
}

impl Shared<'_> {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stops the run as failed and releases every waiting committer.
    pub(super) fn fail(&self, why: String) {
        self.failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(|| why.clone());
        self.stop.fail(why);
        self.lock().failed = true;
        self.ack_cv.notify_all();
        self.lgwr_cv.notify_all();
    }
}
