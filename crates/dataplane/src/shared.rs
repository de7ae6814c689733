//! State every datapath thread and the writer share, outside the double-buffered snapshot:
//! counters, the packet-in buffer pool, NORMAL's MAC table and the drop counters. These never
//! diverge between the snapshot's two copies because there is only one of each.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use crate::buffers::BufferPool;
use crate::counters::{ShardLeases, TableCounters};
use crate::normal::MacTable;

/// Datapath-wide drop counters by reason.
#[derive(Debug, Default)]
pub struct DropCounters {
    /// Malformed or truncated packets (see [`crate::datapath::DatapathReader::parse_stats`]
    /// for reasons).
    pub malformed: AtomicU64,
    /// Packets that matched no entry (no table-miss flow).
    pub no_match: AtomicU64,
    /// Packets whose TTL expired.
    pub invalid_ttl: AtomicU64,
    /// Packets dropped by a meter band.
    pub meter: AtomicU64,
    /// InSP instructions that generated no packet (template error or missing template).
    pub insp_failed: AtomicU64,
    /// Packets dropped by a port's `no_recv`, down state, or an exhausted recursion budget.
    pub other: AtomicU64,
}

/// State shared by the writer and every reader (not double-buffered).
pub struct Shared {
    pub(crate) leases: Arc<ShardLeases>,
    pub(crate) tables: Box<[TableCounters]>,
    /// Packet-in buffers; the switch core takes packets out for packet-out with a buffer id.
    pub buffers: BufferPool,
    /// The NORMAL port's learning table.
    pub mac_table: MacTable,
    pub drops: DropCounters,
    pub(crate) max_frame: usize,
}

impl Shared {
    /// Lookup/match counters of a table.
    pub fn table_counters(&self, table: u8) -> Option<&TableCounters> {
        self.tables.get(usize::from(table))
    }
}
