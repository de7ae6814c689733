//! The datapath's control API: the switch core writes through a [`DatapathWriter`], datapath
//! threads read through [`DatapathReader`]s.
//!
//! Concurrency design (left-right, crate `left-right`): the datapath state exists twice. The
//! writer applies each [`Op`] incrementally to the copy no reader uses; [`DatapathWriter::publish`]
//! swaps the copies, waits until every reader has left the old one (readers enter once per
//! batch, so this is one batch at most), then replays the op log on it. Readers therefore
//! never lock, never see a half-applied op, and pay one atomic increment per batch; a
//! flow-mod costs two incremental classifier updates (one per copy), never a table rebuild.
//! Counters, meters and the buffer pool are shared by both copies (behind `Arc`s) so they
//! never diverge. `publish` is the barrier: once it returns, every reader's next batch sees
//! every op applied before it.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use crate::batch::{PacketBatch, PacketSink};
use crate::buffers::{BufferPool, BufferPoolConfig};
use crate::counters::{PortCounters, ShardLease, ShardLeases, TableCounters};
use crate::ir::Action;
use crate::isa::Isa;
use crate::model::{Op, OpSink};
use crate::normal::{MacTable, MacTableConfig};
use crate::parse::ParseStats;
use crate::pipeline::Scratch;
use crate::shared::{DropCounters, Shared};
use crate::snapshot::{Snapshot, Update};

impl OpSink for DatapathWriter {
    /// Queues an op; readers see it after the next [`OpSink::publish`].
    fn apply(&mut self, op: Op) {
        self.liveness_stale |= matches!(
            op,
            Op::SetGroup { .. }
                | Op::RemoveGroup { .. }
                | Op::SetPort { .. }
                | Op::RemovePort { .. }
        );
        self.handle.append(Update::Op(op));
    }

    /// Makes every op applied so far visible to readers; returns when their next batch will
    /// see it (the OpenFlow barrier).
    fn publish(&mut self) {
        if std::mem::take(&mut self.liveness_stale) {
            self.handle.append(Update::RefreshLiveness);
        }
        self.handle.publish();
    }
}

/// Datapath construction parameters.
#[derive(Clone, Debug)]
pub struct DatapathConfig {
    /// Number of flow tables, ids `0..n_tables`. Default 254: every id OpenFlow 1.3 allows
    /// except 0xfe (`OFPTT_MAX`), which keeps `n_tables` a `u8`. Empty tables cost nothing per
    /// packet (a packet only visits tables it is sent to).
    pub n_tables: u8,
    /// Packet-in buffer slots (default 256).
    pub buffer_slots: u16,
    /// Buffered packets older than this may be reused (seed 003 sec. 4.4).
    pub buffer_max_age_ms: u64,
    /// Largest frame handled (packet-out, InSP and group copies), default 9216.
    pub max_frame: usize,
    /// Capacity of the NORMAL MAC table.
    pub mac_capacity: usize,
    /// NORMAL MAC aging time in seconds (default 300).
    pub mac_aging_secs: u64,
}

impl Default for DatapathConfig {
    fn default() -> Self {
        DatapathConfig {
            n_tables: 254,
            buffer_slots: 256,
            buffer_max_age_ms: 5_000,
            max_frame: crate::batch::DEFAULT_MAX_FRAME,
            mac_capacity: 8192,
            mac_aging_secs: 300,
        }
    }
}

/// Creates a datapath; returns its single writer and a factory of readers.
pub fn new(config: DatapathConfig) -> (DatapathWriter, DatapathReaderFactory) {
    let shared = Arc::new(Shared {
        leases: Arc::new(ShardLeases::default()),
        tables: (0..config.n_tables)
            .map(|_| TableCounters::default())
            .collect(),
        buffers: BufferPool::new(BufferPoolConfig {
            slots: config.buffer_slots,
            max_len: config.max_frame,
            max_age_ns: config.buffer_max_age_ms.saturating_mul(1_000_000),
        }),
        mac_table: MacTable::new(MacTableConfig {
            capacity: config.mac_capacity,
            max_age_ns: config.mac_aging_secs.saturating_mul(1_000_000_000),
        }),
        drops: DropCounters::default(),
        max_frame: config.max_frame,
    });
    let (write, read) =
        left_right::new_from_empty::<Snapshot, Update>(Snapshot::new(config.n_tables));
    let factory = DatapathReaderFactory {
        handles: read.factory(),
        shared: Arc::clone(&shared),
    };
    let writer = DatapathWriter {
        handle: write,
        shared,
        liveness_stale: false,
    };
    (writer, factory)
}

/// The single writer (owned by the switch core).
pub struct DatapathWriter {
    handle: left_right::WriteHandle<Snapshot, Update>,
    shared: Arc<Shared>,
    /// A group or a port changed since the last publish: buckets' liveness must be redone.
    liveness_stale: bool,
}

impl DatapathWriter {
    /// Counters of a port as of the last [`OpSink::publish`].
    pub fn port_counters(&self, port_no: u32) -> Option<Arc<PortCounters>> {
        let snapshot = self.handle.enter()?;
        snapshot.ports.get(port_no).map(|p| Arc::clone(&p.counters))
    }

    /// State shared with the readers (table counters, buffers, MAC table, drops).
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

/// Makes readers, one per datapath thread.
#[derive(Clone)]
pub struct DatapathReaderFactory {
    handles: left_right::ReadHandleFactory<Snapshot>,
    shared: Arc<Shared>,
}

impl DatapathReaderFactory {
    pub fn reader(&self) -> DatapathReader {
        DatapathReader {
            handle: self.handles.handle(),
            lease: self.shared.leases.lease(),
            scratch: Box::new(Scratch::new(self.shared.max_frame)),
            shared: Arc::clone(&self.shared),
            isa: Isa::detect(),
        }
    }

    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Follows `frame`, arriving on `in_port`, through the tables the datapath threads run
    /// now, without sending it or moving any counter (see [`crate::trace`]); `None` once the
    /// writer is gone.
    pub fn trace(&self, in_port: u32, frame: &[u8]) -> Option<crate::trace::Trace> {
        let handle = self.handles.handle();
        let state = handle.enter()?;
        Some(crate::trace::trace(&state, in_port, frame))
    }
}

/// One datapath thread's handle: classifies and acts on batches.
pub struct DatapathReader {
    handle: left_right::ReadHandle<Snapshot>,
    shared: Arc<Shared>,
    lease: ShardLease,
    scratch: Box<Scratch>,
    /// The copy of the pipeline's hot loops this reader runs.
    isa: Isa,
}

impl DatapathReader {
    /// The counter shard this reader writes; whatever else counts on the reader's thread (a
    /// hardware fast path in front of it) writes the same one.
    pub fn shard(&self) -> crate::counters::Shard {
        self.lease.shard()
    }

    /// The instruction set of the pipeline copy this reader runs (the best its CPU has).
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// Runs `isa`'s copy of the pipeline from now on, or the baseline's when this CPU
    /// lacks it (to compare the copies, or to rule one out).
    pub fn set_isa(&mut self, isa: Isa) {
        self.isa = isa.or_baseline();
    }

    /// Runs every packet of `batch` through the pipeline; results go to `sink`. The batch is
    /// consumed (cleared) afterwards.
    pub fn process(&mut self, now_ns: u64, batch: &mut PacketBatch, sink: &mut impl PacketSink) {
        let isa = self.isa;
        self.run_batch(batch, |state, shared, lease, scratch, batch| {
            let job = crate::pipeline::Job {
                state,
                shared,
                lease,
                scratch,
                now: now_ns,
                batch,
                sink,
            };
            crate::pipeline::process(isa, job);
        });
    }

    /// Forwards every packet of `batch` with NORMAL alone, bypassing the tables
    /// (fail-standalone while no controller is connected); ports count them as received.
    /// The batch is consumed (cleared) afterwards.
    pub fn process_normal(
        &mut self,
        now_ns: u64,
        batch: &mut PacketBatch,
        sink: &mut impl PacketSink,
    ) {
        self.run_batch(batch, |state, shared, lease, scratch, batch| {
            crate::pipeline::process_normal(state, shared, lease, scratch, now_ns, batch, sink);
        });
    }

    /// Runs `f` on the batch and clears it; without a snapshot (the writer has gone) the
    /// batch's packets are counted as dropped.
    fn run_batch(
        &mut self,
        batch: &mut PacketBatch,
        f: impl FnOnce(&Snapshot, &Shared, &ShardLease, &mut crate::pipeline::Scratch, &mut PacketBatch),
    ) {
        let n = batch.len() as u64;
        if !self.with_state(|state, shared, lease, scratch| f(state, shared, lease, scratch, batch))
        {
            self.shared.drops.other.fetch_add(n, Relaxed);
        }
        batch.clear();
    }

    /// Executes a packet-out: `actions` on `frame` as if received on `in_port`
    /// (`port::CONTROLLER` or `port::ANY` when none); OUTPUT TABLE runs the pipeline.
    pub fn packet_out(
        &mut self,
        now_ns: u64,
        in_port: u32,
        actions: &[Action],
        frame: &[u8],
        sink: &mut impl PacketSink,
    ) {
        self.with_state(|state, shared, lease, scratch| {
            crate::pipeline::packet_out(
                state, shared, lease, scratch, now_ns, in_port, actions, frame, sink,
            );
        });
    }

    /// Generates a packet from template `template_id` without a trigger (an InSP timer) and
    /// runs `actions` on it as on a packet-out arriving on `in_port`.
    pub fn generate(
        &mut self,
        now_ns: u64,
        template_id: u32,
        in_port: u32,
        actions: &[Action],
        sink: &mut impl PacketSink,
    ) {
        self.with_state(|state, shared, lease, scratch| {
            crate::pipeline::generate(
                state,
                shared,
                lease,
                scratch,
                now_ns,
                template_id,
                in_port,
                actions,
                sink,
            );
        });
    }

    /// Runs `f` on the current snapshot with this reader's counters and scratch; false when
    /// the writer has gone (nothing to run on).
    fn with_state(
        &mut self,
        f: impl FnOnce(&Snapshot, &Shared, &ShardLease, &mut crate::pipeline::Scratch),
    ) -> bool {
        match self.handle.enter() {
            Some(state) => {
                f(&state, &self.shared, &self.lease, &mut self.scratch);
                true
            }
            None => false,
        }
    }

    /// This reader's parse counters (packets parsed, malformed by reason).
    pub fn parse_stats(&self) -> &ParseStats {
        self.scratch.parse_stats()
    }

    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}
