//! Counters the datapath bumps on the hot path and the switch core reads for statistics and
//! timeouts.
//!
//! Why sharded: an atomic read-modify-write per packet per table costs ~20 cycles even when
//! uncontended, which alone would eat half the budget of a 22 Mpps core. Each datapath reader
//! leases one of [`SHARDS`]` - 1` private shards and bumps it with a plain relaxed load + store
//! (a single writer per shard makes that exact); readers beyond that share the last shard with
//! `fetch_add`. Readers of statistics sum the shards.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// Number of counter shards (the last one is shared by readers without a private shard).
pub const SHARDS: usize = 4;

/// Which shard a reader writes; obtained from a [`ShardLeases`] and returned on drop.
#[derive(Debug)]
pub struct ShardLease {
    index: usize,
    leases: Arc<ShardLeases>,
}

impl ShardLease {
    /// Index of the shard this lease writes.
    pub fn index(&self) -> usize {
        self.index
    }

    fn exclusive(&self) -> bool {
        self.index < SHARDS - 1
    }

    /// The shard to write, as an index the compiler knows is in range.
    #[inline(always)]
    fn shard(&self) -> usize {
        self.index % SHARDS
    }
}

const _: () = assert!(SHARDS.is_power_of_two());

impl Drop for ShardLease {
    fn drop(&mut self) {
        if self.exclusive() {
            self.leases.taken.fetch_and(!(1u64 << self.index), Relaxed);
        }
    }
}

/// Allocator of private counter shards.
#[derive(Debug, Default)]
pub struct ShardLeases {
    taken: AtomicU64,
}

impl ShardLeases {
    /// Takes a free private shard, or the shared one when all are taken.
    pub fn lease(self: &Arc<Self>) -> ShardLease {
        for index in 0..SHARDS - 1 {
            let bit = 1u64 << index;
            if self.taken.fetch_or(bit, Relaxed) & bit == 0 {
                return ShardLease {
                    index,
                    leases: Arc::clone(self),
                };
            }
        }
        ShardLease {
            index: SHARDS - 1,
            leases: Arc::clone(self),
        }
    }
}

/// A packet + byte counter pair split into shards.
#[derive(Debug, Default)]
pub struct ShardedPair {
    shards: [[AtomicU64; 2]; SHARDS],
}

impl ShardedPair {
    /// Adds to the lease's shard.
    #[inline]
    pub fn add(&self, lease: &ShardLease, packets: u64, bytes: u64) {
        let shard = &self.shards[lease.shard()];
        if lease.exclusive() {
            shard[0].store(shard[0].load(Relaxed).wrapping_add(packets), Relaxed);
            shard[1].store(shard[1].load(Relaxed).wrapping_add(bytes), Relaxed);
        } else {
            shard[0].fetch_add(packets, Relaxed);
            shard[1].fetch_add(bytes, Relaxed);
        }
    }

    /// Total packets over all shards.
    pub fn packets(&self) -> u64 {
        self.shards
            .iter()
            .fold(0u64, |a, s| a.wrapping_add(s[0].load(Relaxed)))
    }

    /// Total bytes over all shards.
    pub fn bytes(&self) -> u64 {
        self.shards
            .iter()
            .fold(0u64, |a, s| a.wrapping_add(s[1].load(Relaxed)))
    }
}

/// One reader shard of a flow's counters: everything a hit updates in 32 bytes.
#[derive(Debug, Default)]
#[repr(C, align(32))]
struct FlowShard {
    packets: AtomicU64,
    bytes: AtomicU64,
    last_hit_ns: AtomicU64,
}

/// Per flow entry counters (shared between the switch core and the datapath). A hit touches
/// only its reader's 32-byte shard: one cache line, never written by another reader.
#[derive(Debug, Default)]
pub struct FlowCounters {
    shards: [FlowShard; SHARDS],
}

impl FlowCounters {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Packets matched by the entry.
    pub fn packets(&self) -> u64 {
        self.shards
            .iter()
            .fold(0u64, |a, s| a.wrapping_add(s.packets.load(Relaxed)))
    }

    /// Bytes matched by the entry.
    pub fn bytes(&self) -> u64 {
        self.shards
            .iter()
            .fold(0u64, |a, s| a.wrapping_add(s.bytes.load(Relaxed)))
    }

    /// The `now_ns` of the last batch in which the entry matched (0 = never), for idle timeouts.
    pub fn last_hit_ns(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| s.last_hit_ns.load(Relaxed))
            .max()
            .unwrap_or(0)
    }

    #[inline(always)]
    pub(crate) fn hit(&self, lease: &ShardLease, bytes: u64, now_ns: u64) {
        let s = &self.shards[lease.shard()];
        if lease.exclusive() {
            s.packets
                .store(s.packets.load(Relaxed).wrapping_add(1), Relaxed);
            s.bytes
                .store(s.bytes.load(Relaxed).wrapping_add(bytes), Relaxed);
        } else {
            s.packets.fetch_add(1, Relaxed);
            s.bytes.fetch_add(bytes, Relaxed);
        }
        if s.last_hit_ns.load(Relaxed) < now_ns {
            if lease.exclusive() {
                s.last_hit_ns.store(now_ns, Relaxed);
            } else {
                s.last_hit_ns.fetch_max(now_ns, Relaxed);
            }
        }
    }
}

/// Per table counters, added once per batch and table by each reader (sharded like the
/// port counters: no locked instruction on the hot path).
#[derive(Debug, Default)]
pub struct TableCounters {
    /// Lookups as packets, matches as bytes.
    counts: ShardedPair,
}

impl TableCounters {
    pub fn lookups(&self) -> u64 {
        self.counts.packets()
    }

    pub fn matches(&self) -> u64 {
        self.counts.bytes()
    }

    pub(crate) fn add(&self, lease: &ShardLease, lookups: u64, matches: u64) {
        self.counts.add(lease, lookups, matches);
    }
}

/// Per port counters (created by the datapath on `SetPort`).
#[derive(Debug, Default)]
pub struct PortCounters {
    pub rx: ShardedPair,
    pub tx: ShardedPair,
    /// Packets dropped on receive (port config `no_recv`, down, parse failures).
    pub rx_dropped: ShardedPair,
    /// Packets not sent (port `no_fwd`, down or not live).
    pub tx_dropped: ShardedPair,
}

/// Per group counters with one pair per bucket.
#[derive(Debug, Default)]
pub struct GroupCounters {
    pub group: ShardedPair,
    pub buckets: Box<[ShardedPair]>,
}

impl GroupCounters {
    pub fn new(n_buckets: usize) -> Arc<Self> {
        Arc::new(Self {
            group: ShardedPair::default(),
            buckets: (0..n_buckets).map(|_| ShardedPair::default()).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_are_private_until_exhausted_then_shared() {
        let leases = Arc::new(ShardLeases::default());
        let held: Vec<_> = (0..SHARDS + 1).map(|_| leases.lease()).collect();
        let idx: Vec<_> = held.iter().map(ShardLease::index).collect();
        assert_eq!(idx, vec![0, 1, 2, 3, 3]);
        drop(held);
        assert_eq!(leases.lease().index(), 0);
    }

    #[test]
    fn shards_sum() {
        let leases = Arc::new(ShardLeases::default());
        let (a, b) = (leases.lease(), leases.lease());
        let c = FlowCounters::new();
        c.hit(&a, 60, 5);
        c.hit(&b, 40, 7);
        c.hit(&a, 10, 6);
        assert_eq!((c.packets(), c.bytes(), c.last_hit_ns()), (3, 110, 7));
    }
}
