//! What the sessions of a TPC-C run counted, shared between them and the workload: per
//! transaction type the ones committed, rolled back (New-Order's 1 %), failed, and the extra
//! tries; Delivery's skipped districts. A leaf of `tpcc`.

use std::sync::atomic::{AtomicU64, Ordering};

use dbscope_tpcc::TxKind;

/// Counts per transaction type, in [`TxKind::ALL`] order.
#[derive(Debug, Default)]
pub struct Tally {
    pub committed: [AtomicU64; 5],
    pub rolled_back: [AtomicU64; 5],
    pub failed: [AtomicU64; 5],
    pub retries: [AtomicU64; 5],
    pub delivery_skipped: AtomicU64,
}

/// The index of `kind` in [`TxKind::ALL`].
pub fn index(kind: TxKind) -> usize {
    TxKind::ALL.iter().position(|k| *k == kind).unwrap_or(0)
}

impl Tally {
    pub fn add(counter: &[AtomicU64; 5], kind: TxKind, n: u64) {
        counter[index(kind)].fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(counter: &[AtomicU64; 5], kind: TxKind) -> u64 {
        counter[index(kind)].load(Ordering::Relaxed)
    }

    /// Every transaction that ended committed or rolled back (dbscope's own TPM count).
    pub fn transactions(&self) -> u64 {
        TxKind::ALL
            .iter()
            .map(|k| Self::get(&self.committed, *k) + Self::get(&self.rolled_back, *k))
            .sum()
    }
}
