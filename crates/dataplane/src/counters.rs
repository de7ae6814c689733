//! Counters the datapath bumps on the hot path and the switch core reads for statistics and
//! timeouts.
//!
//! Why sharded: an atomic read-modify-write per packet per table costs ~20 cycles even when
//! uncontended, which alone would eat half the budget of a 22 Mpps core. Each datapath reader
//! leases one of [`SHARDS`]` - 1` private shards and bumps it with a plain relaxed load + store
//! (a single writer per shard makes that exact); readers beyond that share the last shard with
//! `fetch_add`. Readers of statistics sum the shards.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};

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
        self.shard().exclusive()
    }

    /// The shard to write, as a value the hot path keeps in a register.
    #[inline(always)]
    pub fn shard(&self) -> Shard {
        Shard::new(self.index)
    }
}

/// The shard a lease writes (a copy: reading it costs no load through the lease), as the
/// distance in cells from a pair's shard-0 cell to its cell of this shard, so that a count
/// adds it and nothing else.
#[derive(Clone, Copy, Debug)]
pub struct Shard(usize);

impl Shard {
    /// The shard of index `index` (taken modulo [`SHARDS`]).
    fn new(index: usize) -> Self {
        Shard((index % SHARDS) * CHUNK_PAIRS)
    }

    /// The shard every writer without a private lease adds to (atomically): for counts
    /// merged from outside the datapath threads (a hardware fast path's, read back).
    pub fn shared() -> Shard {
        Shard::new(SHARDS - 1)
    }

    /// Whether no other reader writes this shard (plain load + store suffice).
    #[inline(always)]
    fn exclusive(self) -> bool {
        self.0 < (SHARDS - 1) * CHUNK_PAIRS
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

/// Packets and bytes as one reader shard counts them.
#[derive(Debug, Default)]
#[repr(C)]
struct Cell {
    packets: AtomicU64,
    bytes: AtomicU64,
}

impl Cell {
    /// Adds to the cell: with a plain load and store when no other reader writes it
    /// (`exclusive`), atomically otherwise.
    #[inline(always)]
    fn add(&self, packets: u64, bytes: u64, exclusive: bool) {
        if exclusive {
            let (p, b) = (&self.packets, &self.bytes);
            p.store(p.load(Relaxed).wrapping_add(packets), Relaxed);
            b.store(b.load(Relaxed).wrapping_add(bytes), Relaxed);
        } else {
            self.packets.fetch_add(packets, Relaxed);
            self.bytes.fetch_add(bytes, Relaxed);
        }
    }
}

/// A packet + byte counter pair split into shards: a cell of the shard-major chunks, so
/// that one reader's cells of many pairs (the ports' transmit counters, the flows') share
/// cache lines and no two readers write one line.
#[derive(Debug)]
pub struct ShardedPair {
    cell: CounterCell,
}

impl Default for ShardedPair {
    fn default() -> Self {
        ShardedPair {
            cell: CounterCell::alloc(),
        }
    }
}

impl Drop for ShardedPair {
    fn drop(&mut self) {
        // Whoever kept a copy of the cell (a rule, the port table) held this pair alive.
        FREE_CELLS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(self.cell);
    }
}

impl ShardedPair {
    /// Adds to the lease's shard.
    #[inline]
    pub fn add(&self, shard: Shard, packets: u64, bytes: u64) {
        self.cell.add(shard, packets, bytes);
    }

    /// Total packets over all shards.
    pub fn packets(&self) -> u64 {
        self.cell
            .shards()
            .fold(0u64, |a, c| a.wrapping_add(c.packets.load(Relaxed)))
    }

    /// Total bytes over all shards.
    pub fn bytes(&self) -> u64 {
        self.cell
            .shards()
            .fold(0u64, |a, c| a.wrapping_add(c.bytes.load(Relaxed)))
    }

    /// The cell, for a hot path that keeps it beside what it reads anyway; valid while this
    /// pair lives.
    pub(crate) fn cell(&self) -> CounterCell {
        self.cell
    }
}

/// Counter pairs (of flows, ports, groups, tables) that share one allocation.
const CHUNK_PAIRS: usize = 256;

/// [`CHUNK_PAIRS`] counter pairs, shard-major: a reader's cells of neighbouring pairs are
/// packed four to a cache line (a large table's flow counters, the ports' transmit counters
/// stay dense in the cache), and no two readers write one line.
#[derive(Debug)]
#[repr(C, align(64))]
struct Chunk {
    shards: [[Cell; CHUNK_PAIRS]; SHARDS],
}

/// Chunks allocated at once: 2 MiB, so that an allocator that gives large blocks huge pages
/// (`crate::hugepages`, as the daemon does) puts a 100K-flow table's counters on a few of
/// them instead of in hundreds of 4 KiB pages, each a TLB miss for a packet that counts on a
/// rule at random. The block is allocated zeroed (zero is every cell's start), so untouched
/// chunks cost no memory where the allocator maps fresh pages.
const SLAB_CHUNKS: usize = 128;

/// Free cells of all counter pairs of the process. Chunks are allocated on demand and never
/// freed (a dropped pair's cells go back on this list), so a cell reference is `'static` and
/// the datapath keeps a bare pointer to it.
static FREE_CELLS: Mutex<Vec<CounterCell>> = Mutex::new(Vec::new());

/// Where a counter pair lives: its shard-0 cell (the other shards' cells follow at a fixed
/// stride). The datapath keeps it beside what it reads anyway: in a rule's hot line, in the
/// port table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CounterCell(&'static Cell);

impl CounterCell {
    fn alloc() -> Self {
        let mut free = FREE_CELLS.lock().unwrap_or_else(PoisonError::into_inner);
        if free.is_empty() {
            // SAFETY: a `Chunk` is atomics all the way down, for which all-zero bytes are a
            // valid value (zero counts).
            let slab = unsafe { Box::<[Chunk]>::new_zeroed_slice(SLAB_CHUNKS).assume_init() };
            let slab: &'static [Chunk] = Box::leak(slab);
            for chunk in slab.iter().rev() {
                free.extend(chunk.shards[0].iter().rev().map(CounterCell));
            }
        }
        let cell = free
            .pop()
            .unwrap_or_else(|| unreachable!("a new chunk was just added"));
        drop(free);
        for c in cell.shards() {
            c.packets.store(0, Relaxed);
            c.bytes.store(0, Relaxed);
        }
        cell
    }

    /// The cell of `shard`.
    #[inline(always)]
    fn shard(self, shard: Shard) -> &'static Cell {
        // SAFETY: `self.0` is `shards[0][slot]` of a leaked `Chunk`, whose `repr(C)` rows of
        // `CHUNK_PAIRS` cells follow each other: `shards[s][slot]` lies `s * CHUNK_PAIRS`
        // cells further, which is `shard.0` (`Shard::new`, its only constructor, makes it so
        // for an `s` below `SHARDS`), inside the chunk.
        unsafe { &*std::ptr::from_ref(self.0).add(shard.0) }
    }

    fn shards(self) -> impl Iterator<Item = &'static Cell> {
        (0..SHARDS).map(move |s| self.shard(Shard::new(s)))
    }

    /// Hints the CPU to load the cell of `shard`.
    #[inline(always)]
    pub(crate) fn prefetch(self, shard: Shard) {
        crate::classifier::hash::prefetch_read(self.shard(shard));
    }

    /// Counts a packet of `bytes` in the cell of `shard`.
    #[inline(always)]
    pub(crate) fn hit(self, shard: Shard, bytes: u64) {
        self.add(shard, 1, bytes);
    }

    /// Adds to the cell of `shard`.
    #[inline(always)]
    pub(crate) fn add(self, shard: Shard, packets: u64, bytes: u64) {
        self.shard(shard).add(packets, bytes, shard.exclusive());
    }
}

/// Per flow entry counters, shared between the switch core and the datapath (whose rules
/// keep the `CounterCell`). A hit writes 16 bytes of its reader's shard and no timestamp:
/// when a flow was last active is found by watching its packet count ([`Self::last_active_ns`]).
#[derive(Debug)]
pub struct FlowCounters {
    counts: ShardedPair,
    /// The packet count last seen by `last_active_ns` and when it was first seen.
    seen: Mutex<(u64, u64)>,
}

impl FlowCounters {
    pub fn new() -> Arc<Self> {
        Arc::new(FlowCounters {
            counts: ShardedPair::default(),
            seen: Mutex::new((0, 0)),
        })
    }

    pub(crate) fn cell(&self) -> CounterCell {
        self.counts.cell()
    }

    /// Packets matched by the entry.
    pub fn packets(&self) -> u64 {
        self.counts.packets()
    }

    /// Bytes matched by the entry.
    pub fn bytes(&self) -> u64 {
        self.counts.bytes()
    }

    /// Adds hits counted outside the pipeline: a hardware fast path merging what its own
    /// entry matched (seed 003 section 4.3), so statistics and idle timeouts see both.
    pub fn add(&self, shard: Shard, packets: u64, bytes: u64) {
        self.counts.add(shard, packets, bytes);
    }

    /// When the entry was last seen to have matched, for idle timeouts: the `now_ns` of the
    /// first call that found its packet count moved (0 = never matched). Called periodically
    /// (the switch's housekeeping), it is late by at most one period.
    pub fn last_active_ns(&self, now_ns: u64) -> u64 {
        let packets = self.packets();
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if packets != seen.0 {
            *seen = (packets, now_ns);
        }
        seen.1
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

    /// Adds lookups and matches (the pipeline per batch; a hardware fast path for the
    /// tables it decided packets in).
    pub fn add(&self, shard: Shard, lookups: u64, matches: u64) {
        self.counts.add(shard, lookups, matches);
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
        c.cell().hit(a.shard(), 60);
        c.cell().hit(b.shard(), 40);
        c.cell().hit(a.shard(), 10);
        assert_eq!((c.packets(), c.bytes()), (3, 110));
    }

    #[test]
    fn freed_cells_are_reused_cleared_and_never_shared() {
        let lease = Arc::new(ShardLeases::default()).lease();
        let live: Vec<_> = (0..CHUNK_PAIRS + 3).map(|_| FlowCounters::new()).collect();
        for (n, c) in live.iter().enumerate() {
            for _ in 0..n % 5 {
                c.cell().hit(lease.shard(), 100);
            }
        }
        for (n, c) in live.iter().enumerate() {
            assert_eq!(c.packets(), (n % 5) as u64);
        }
        drop(live);
        let fresh: Vec<_> = (0..CHUNK_PAIRS).map(|_| FlowCounters::new()).collect();
        assert!(fresh.iter().all(|c| c.packets() == 0 && c.bytes() == 0));
    }

    #[test]
    fn no_two_shards_of_a_pair_share_a_cache_line() {
        let pair = ShardedPair::default();
        let lines: Vec<usize> = (0..SHARDS)
            .map(|s| core::ptr::from_ref(pair.cell().shard(Shard::new(s))) as usize / 64)
            .collect();
        for (i, a) in lines.iter().enumerate() {
            assert!(lines.iter().skip(i + 1).all(|b| b != a), "{lines:?}");
        }
    }

    #[test]
    fn activity_is_when_the_count_was_first_seen_moving() {
        let lease = Arc::new(ShardLeases::default()).lease();
        let c = FlowCounters::new();
        assert_eq!(c.last_active_ns(100), 0);
        c.cell().hit(lease.shard(), 60);
        assert_eq!(c.last_active_ns(200), 200);
        assert_eq!(c.last_active_ns(300), 200);
        c.cell().hit(lease.shard(), 60);
        assert_eq!(c.last_active_ns(400), 400);
    }
}
