//! The capture's commit order as the replay reaches it: sessions mark commits, calls wait for them.

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use dbscope_core::StopSignal;

/// The commit order of the capture, as it is reached in the replay.
pub(super) struct CommitOrder {
    state: Mutex<(Vec<bool>, usize)>,
    cv: Condvar,
}

impl CommitOrder {
    pub(super) fn new(n: usize) -> Self {
        CommitOrder {
            state: Mutex::new((vec![false; n], 0)),
            cv: Condvar::new(),
        }
    }

    /// Waits until the first `k` commits have happened; false on timeout (or stop).
    pub(super) fn wait_for(&self, k: usize, stop: &StopSignal, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while s.1 < k {
            let now = Instant::now();
            if now >= deadline || stop.is_set() {
                return false;
            }
            let wait = (deadline - now).min(Duration::from_millis(100));
            s = self
                .cv
                .wait_timeout(s, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }

    /// How many of the capture's commits, in its order, have happened in the replay.
    pub(super) fn reached(&self) -> usize {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).1
    }

    /// Marks commit `i` as happened and wakes the sessions waiting.
    pub(super) fn mark(&self, i: usize) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(d) = s.0.get_mut(i) {
            *d = true;
        }
        while s.1 < s.0.len() && s.0[s.1] {
            s.1 += 1;
        }
        drop(s);
        self.cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::super::config::SYNC_TIMEOUT;
    use super::*;

    #[test]
    fn commit_order_releases_in_sequence() {
        let o = CommitOrder::new(3);
        let stop = StopSignal::new();
        o.mark(1);
        assert_eq!(o.state.lock().unwrap().1, 0, "commit 0 has not happened");
        o.mark(0);
        let wait = Duration::from_millis(10);
        assert!(o.wait_for(2, &stop, wait));
        assert!(!o.wait_for(3, &stop, wait), "commit 2 has not happened");
        o.mark(2);
        assert!(o.wait_for(3, &stop, wait));
        stop.interrupt();
        let o = CommitOrder::new(1);
        assert!(
            !o.wait_for(1, &stop, SYNC_TIMEOUT),
            "a stopped replay does not wait"
        );
    }
}
