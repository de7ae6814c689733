//! What each datapath thread reports about itself, for operators (metrics, `summary`): rounds
//! that found work and rounds that did not, the time spent in busy rounds, and the sleeps.
//!
//! A thread counts in plain locals and publishes them with its sockets' losses, once a
//! second: no atomic per round, and no clock read beyond the one each round already takes (a
//! busy round's time is the gap between its start and the next round's).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One thread's published counters.
#[derive(Debug, Default)]
pub struct ThreadStats {
    busy_rounds: AtomicU64,
    idle_rounds: AtomicU64,
    busy_ns: AtomicU64,
    sleeps: AtomicU64,
}

/// A copy of one thread's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ThreadSnapshot {
    pub busy_rounds: u64,
    pub idle_rounds: u64,
    pub busy_ns: u64,
    pub sleeps: u64,
}

impl ThreadStats {
    pub fn snapshot(&self) -> ThreadSnapshot {
        ThreadSnapshot {
            busy_rounds: self.busy_rounds.load(Ordering::Relaxed),
            idle_rounds: self.idle_rounds.load(Ordering::Relaxed),
            busy_ns: self.busy_ns.load(Ordering::Relaxed),
            sleeps: self.sleeps.load(Ordering::Relaxed),
        }
    }
}

/// Every datapath thread's counters, by thread index.
pub type AllThreads = Arc<[ThreadStats]>;

/// Counters for `n` threads.
pub fn new(n: usize) -> AllThreads {
    (0..n).map(|_| ThreadStats::default()).collect()
}

/// A thread's running tally, published by [`Tally::publish`].
#[derive(Debug, Default)]
pub struct Tally {
    counts: ThreadSnapshot,
    /// Start of the last round, when it found work.
    busy_since: Option<u64>,
}

impl Tally {
    /// A round started at `now`; closes the previous one if it was busy.
    #[inline]
    pub fn round_starts(&mut self, now: u64) {
        if let Some(start) = self.busy_since.take() {
            self.counts.busy_ns += now.saturating_sub(start);
        }
    }

    /// The round that started at `now` ended, having found work or not.
    #[inline]
    pub fn round_ends(&mut self, now: u64, busy: bool) {
        if busy {
            self.counts.busy_rounds += 1;
            self.busy_since = Some(now);
        } else {
            self.counts.idle_rounds += 1;
        }
    }

    pub fn slept(&mut self) {
        self.counts.sleeps += 1;
    }

    pub fn publish(&self, to: &ThreadStats) {
        let c = &self.counts;
        to.busy_rounds.store(c.busy_rounds, Ordering::Relaxed);
        to.idle_rounds.store(c.idle_rounds, Ordering::Relaxed);
        to.busy_ns.store(c.busy_ns, Ordering::Relaxed);
        to.sleeps.store(c.sleeps, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_time_is_the_span_of_busy_rounds_only() {
        let mut t = Tally::default();
        t.round_starts(100);
        t.round_ends(100, true);
        t.round_starts(150); // the busy round took 50
        t.round_ends(150, false);
        t.slept();
        t.round_starts(10_000); // an idle round and a sleep: not busy
        t.round_ends(10_000, true);
        t.round_starts(10_007);
        let out = ThreadStats::default();
        t.publish(&out);
        assert_eq!(
            out.snapshot(),
            ThreadSnapshot {
                busy_rounds: 2,
                idle_rounds: 1,
                busy_ns: 57,
                sleeps: 1
            }
        );
    }
}
