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

use crate::batch::{PacketBatch, PacketSink};
use crate::buffers::{BufferPool, BufferPoolConfig};
use crate::counters::{
    FlowCounters, GroupCounters, PortCounters, ShardLease, ShardLeases, TableCounters,
};
use crate::ir::{Action, Instruction};
use crate::isa::Isa;
use crate::key::Match;
use crate::meter::Meter;
use crate::normal::{MacTable, MacTableConfig, PortVlanMode};
use crate::parse::ParseStats;
use crate::pipeline::Scratch;
use crate::state::{State, Update};
use crate::template::PacketTemplate;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// Identifies a flow entry; chosen by the switch core, unique per datapath.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowId(pub u64);

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

/// `ofp_group_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupType {
    All,
    Select,
    Indirect,
    FastFailover,
}

/// One group bucket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// SELECT only: relative share of flows.
    pub weight: u16,
    /// FAST_FAILOVER: the bucket is live only while this port is live (`port::ANY`: no watch).
    pub watch_port: u32,
    /// FAST_FAILOVER: ... and while this group has a live bucket (`GROUP_ANY`: no watch).
    pub watch_group: u32,
    pub actions: Vec<Action>,
}

/// A group table entry.
#[derive(Clone, Debug)]
pub struct Group {
    pub kind: GroupType,
    pub buckets: Vec<Bucket>,
    /// Group and per-bucket counters (create with `GroupCounters::new(buckets.len())`).
    pub counters: Arc<GroupCounters>,
}

/// `ofp_port_config` bits the datapath honours.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortConfig {
    /// `OFPPC_PORT_DOWN`: administratively down.
    pub down: bool,
    /// `OFPPC_NO_RECV`: drop everything received.
    pub no_recv: bool,
    /// `OFPPC_NO_FWD`: drop everything sent to it.
    pub no_fwd: bool,
    /// `OFPPC_NO_PACKET_IN`: no packet-ins for packets received on it.
    pub no_packet_in: bool,
}

/// What the datapath knows about a port.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortInfo {
    pub config: PortConfig,
    /// Link up (`OFPPS_LIVE` for fast failover).
    pub live: bool,
    /// VLAN membership for NORMAL; `None` = a trunk carrying every VLAN tagged and VLAN 1
    /// untagged (the usual switch default).
    pub vlan_mode: Option<PortVlanMode>,
}

/// `ofp_config_flags` fragment handling.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FragHandling {
    /// No special handling (fragments match like any packet).
    #[default]
    Normal,
    /// Drop IP fragments.
    Drop,
}

/// The switch configuration (`OFPT_SET_CONFIG`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwitchConfig {
    /// `max_len` of packet-ins the switch raises on its own (invalid TTL); table-miss flows
    /// carry their own `max_len` in their CONTROLLER output (OpenFlow 1.3).
    pub miss_send_len: u16,
    /// `OFPC_INVALID_TTL_TO_CONTROLLER`.
    pub invalid_ttl_to_controller: bool,
    pub frag: FragHandling,
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            miss_send_len: 128,
            invalid_ttl_to_controller: false,
            frag: FragHandling::Normal,
        }
    }
}

/// A change to the datapath state, applied incrementally by [`DatapathWriter::apply`].
/// (`InsertFlow` carries its match inline: ops are built once per flow-mod, never per packet.)
#[derive(Clone)]
#[allow(clippy::large_enum_variant)]
pub enum Op {
    /// Adds a flow entry (replacing any entry with the same id). The switch core has already
    /// validated it (prerequisites, forward-only goto, existing groups/meters).
    InsertFlow {
        table: u8,
        id: FlowId,
        priority: u16,
        match_: Match,
        instructions: Arc<[Instruction]>,
        counters: Arc<FlowCounters>,
    },
    RemoveFlow {
        table: u8,
        id: FlowId,
    },
    /// Modify-flow: new instructions, same match, priority and counters.
    ReplaceInstructions {
        table: u8,
        id: FlowId,
        instructions: Arc<[Instruction]>,
    },
    SetGroup {
        id: u32,
        group: Group,
    },
    RemoveGroup {
        id: u32,
    },
    SetMeter {
        id: u32,
        meter: Arc<Meter>,
    },
    RemoveMeter {
        id: u32,
    },
    SetPort {
        port_no: u32,
        info: PortInfo,
    },
    RemovePort {
        port_no: u32,
    },
    SetSwitchConfig {
        miss_send_len: u16,
        invalid_ttl_to_controller: bool,
        frag: FragHandling,
    },
    SetTemplate {
        id: u32,
        template: Arc<PacketTemplate>,
    },
    RemoveTemplate {
        id: u32,
    },
}

impl std::fmt::Debug for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Op::InsertFlow {
                table,
                id,
                priority,
                match_,
                instructions,
                ..
            } => f
                .debug_struct("InsertFlow")
                .field("table", table)
                .field("id", id)
                .field("priority", priority)
                .field("match_", match_)
                .field("instructions", instructions)
                .finish(),
            Op::RemoveFlow { table, id } => f
                .debug_struct("RemoveFlow")
                .field("table", table)
                .field("id", id)
                .finish(),
            Op::ReplaceInstructions {
                table,
                id,
                instructions,
            } => f
                .debug_struct("ReplaceInstructions")
                .field("table", table)
                .field("id", id)
                .field("instructions", instructions)
                .finish(),
            Op::SetGroup { id, group } => f
                .debug_struct("SetGroup")
                .field("id", id)
                .field("group", group)
                .finish(),
            Op::RemoveGroup { id } => f.debug_struct("RemoveGroup").field("id", id).finish(),
            Op::SetMeter { id, .. } => f
                .debug_struct("SetMeter")
                .field("id", id)
                .finish_non_exhaustive(),
            Op::RemoveMeter { id } => f.debug_struct("RemoveMeter").field("id", id).finish(),
            Op::SetPort { port_no, info } => f
                .debug_struct("SetPort")
                .field("port_no", port_no)
                .field("info", info)
                .finish(),
            Op::RemovePort { port_no } => f
                .debug_struct("RemovePort")
                .field("port_no", port_no)
                .finish(),
            Op::SetSwitchConfig {
                miss_send_len,
                invalid_ttl_to_controller,
                frag,
            } => f
                .debug_struct("SetSwitchConfig")
                .field("miss_send_len", miss_send_len)
                .field("invalid_ttl_to_controller", invalid_ttl_to_controller)
                .field("frag", frag)
                .finish(),
            Op::SetTemplate { id, .. } => f
                .debug_struct("SetTemplate")
                .field("id", id)
                .finish_non_exhaustive(),
            Op::RemoveTemplate { id } => f.debug_struct("RemoveTemplate").field("id", id).finish(),
        }
    }
}

/// Datapath-wide drop counters by reason.
#[derive(Debug, Default)]
pub struct DropCounters {
    /// Malformed or truncated packets (see [`DatapathReader::parse_stats`] for reasons).
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
    let (write, read) = left_right::new_from_empty::<State, Update>(State::new(config.n_tables));
    let factory = DatapathReaderFactory {
        handles: read.factory(),
        shared: Arc::clone(&shared),
    };
    let writer = DatapathWriter {
        handle: write,
        shared,
        port_counters: Default::default(),
    };
    (writer, factory)
}

/// The single writer (owned by the switch core).
pub struct DatapathWriter {
    handle: left_right::WriteHandle<State, Update>,
    shared: Arc<Shared>,
    port_counters: crate::classifier::hash::SeededMap<u32, Arc<PortCounters>>,
}

impl DatapathWriter {
    /// Queues an op; readers see it after the next [`Self::publish`].
    pub fn apply(&mut self, op: Op) {
        let update = match op {
            Op::SetPort { port_no, info } => {
                let counters = Arc::clone(self.port_counters.entry(port_no).or_default());
                Update::Port {
                    port_no,
                    info,
                    counters,
                }
            }
            Op::RemovePort { port_no } => {
                self.port_counters.remove(&port_no);
                Update::Op(Op::RemovePort { port_no })
            }
            op => Update::Op(op),
        };
        self.handle.append(update);
    }

    /// Makes every op applied so far visible to readers; returns when their next batch will
    /// see it (the OpenFlow barrier).
    pub fn publish(&mut self) {
        self.handle.publish();
    }

    /// Counters of a port set with [`Op::SetPort`].
    pub fn port_counters(&self, port_no: u32) -> Option<Arc<PortCounters>> {
        self.port_counters.get(&port_no).cloned()
    }

    /// State shared with the readers (table counters, buffers, MAC table, drops).
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

/// Makes readers, one per datapath thread.
#[derive(Clone)]
pub struct DatapathReaderFactory {
    handles: left_right::ReadHandleFactory<State>,
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
}

/// One datapath thread's handle: classifies and acts on batches.
pub struct DatapathReader {
    handle: left_right::ReadHandle<State>,
    shared: Arc<Shared>,
    lease: ShardLease,
    scratch: Box<Scratch>,
    /// The copy of the pipeline's hot loops this reader runs.
    isa: Isa,
}

impl DatapathReader {
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
        f: impl FnOnce(&State, &Shared, &ShardLease, &mut crate::pipeline::Scratch, &mut PacketBatch),
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

    /// Runs `f` on the current snapshot with this reader's counters and scratch; false when
    /// the writer has gone (nothing to run on).
    fn with_state(
        &mut self,
        f: impl FnOnce(&State, &Shared, &ShardLease, &mut crate::pipeline::Scratch),
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
