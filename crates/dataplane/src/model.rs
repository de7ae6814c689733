//! The datapath's vocabulary: what the switch core tells the datapath (flows, groups, ports,
//! switch flags, templates) and the [`Op`]s that change it. The ground floor of the crate's
//! control side: it names only the value types below it (keys, IR, counters, meters,
//! templates), so the datapath's control API, its snapshot and its pipeline all build on it
//! and nothing here depends on them.

use std::sync::Arc;

use crate::counters::{FlowCounters, GroupCounters, PortCounters};
use crate::ir::{Action, Instruction};
use crate::key::FlowMatch;
use crate::meter::Meter;
use crate::normal::PortVlanMode;
use crate::template::PacketTemplate;

/// Identifies a flow entry; chosen by the switch core, unique per datapath.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowId(pub u64);

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
pub struct GroupBucket {
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
    pub buckets: Vec<GroupBucket>,
    /// Group and per-bucket counters (create with `GroupCounters::new(buckets.len())`).
    pub counters: Arc<GroupCounters>,
}

/// `ofp_port_config` bits the datapath honours.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortAdmin {
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
    pub config: PortAdmin,
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
pub struct SwitchFlags {
    /// `max_len` of packet-ins the switch raises on its own (invalid TTL); table-miss flows
    /// carry their own `max_len` in their CONTROLLER output (OpenFlow 1.3).
    pub miss_send_len: u16,
    /// `OFPC_INVALID_TTL_TO_CONTROLLER`.
    pub invalid_ttl_to_controller: bool,
    pub frag: FragHandling,
}

impl Default for SwitchFlags {
    fn default() -> Self {
        SwitchFlags {
            miss_send_len: 128,
            invalid_ttl_to_controller: false,
            frag: FragHandling::Normal,
        }
    }
}

/// A change to the datapath state, applied incrementally by the
/// [`crate::datapath::DatapathWriter`].
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
        /// Reported in the packet-ins the entry sends.
        cookie: u64,
        match_: FlowMatch,
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
    /// Adds or updates a port. The switch core owns its counters, so they outlive changes
    /// of the port's settings.
    SetPort {
        port_no: u32,
        info: PortInfo,
        counters: Arc<PortCounters>,
    },
    RemovePort {
        port_no: u32,
    },
    SetSwitchFlags(SwitchFlags),
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
            Op::SetPort { port_no, info, .. } => f
                .debug_struct("SetPort")
                .field("port_no", port_no)
                .field("info", info)
                .finish(),
            Op::RemovePort { port_no } => f
                .debug_struct("RemovePort")
                .field("port_no", port_no)
                .finish(),
            Op::SetSwitchFlags(flags) => f.debug_tuple("SetSwitchFlags").field(flags).finish(),
            Op::SetTemplate { id, .. } => f
                .debug_struct("SetTemplate")
                .field("id", id)
                .finish_non_exhaustive(),
            Op::RemoveTemplate { id } => f.debug_struct("RemoveTemplate").field("id", id).finish(),
        }
    }
}

/// Why a sink in front of hardware refuses a flow entry (the switch core answers the
/// OpenFlow error named beside each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// `OFPFMFC_TABLE_FULL`: the hardware table has no room and does not spill to software.
    TableFull,
    /// `OFPBMC_BAD_FIELD`: the hardware table cannot match this.
    BadMatch,
    /// `OFPBAC_BAD_TYPE`: the hardware table cannot run these actions.
    BadAction,
    /// `OFPFMFC_BAD_TABLE_ID`: the device has no such table.
    BadTable,
}

/// Where a flow entry lives, as a sink in front of hardware reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowPlacement {
    pub location: FlowLocation,
    /// Index of the hardware table holding its entry, if any.
    pub hw_table: Option<u8>,
    /// What the hardware entry decided (already included in the flow's counters).
    pub hw_packets: u64,
    pub hw_bytes: u64,
}

/// Where a flow entry decides packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowLocation {
    Software = 0,
    /// A hardware entry decides its packets.
    Hardware = 1,
    /// A hardware entry sends its packets to software (copy-to-CPU).
    HardwareToSoftware = 2,
}

/// Where the switch core sends its changes: the datapath's writer, or something in front of
/// it that sees every change first (an offload planner deciding what also goes to hardware).
pub trait OpSink: Send {
    /// Queues a change; it takes effect at the next [`Self::publish`].
    fn apply(&mut self, op: Op);
    /// Makes every change so far take effect before it returns (the OpenFlow barrier).
    fn publish(&mut self);
    /// Whether a flow entry may be added to (or, with `replacing`, change) `table`: a sink in
    /// front of hardware whose tables refuse what they cannot hold says why not. The
    /// software datapath takes everything.
    fn admit(
        &mut self,
        table: u8,
        match_: &FlowMatch,
        instructions: &[Instruction],
        replacing: Option<FlowId>,
    ) -> Result<(), Refusal> {
        let _ = (table, match_, instructions, replacing);
        Ok(())
    }
    /// Where a flow entry lives; `None` when nothing but software exists.
    fn placement(&self, id: FlowId) -> Option<FlowPlacement> {
        let _ = id;
        None
    }
    /// Capacity of `table` as the hardware has it, and the hardware table's name, for table
    /// features; `None` when software alone holds the table.
    fn table_capacity(&self, table: u8) -> Option<(u32, String)> {
        let _ = table;
        None
    }
}
