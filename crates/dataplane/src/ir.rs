//! The datapath's instruction and action IR: what a flow entry, a group bucket or a packet-out
//! asks the datapath to do. It mirrors OpenFlow 1.3 (spec sections 5.9 and 5.12) without its wire
//! encoding, so the switch core translates OFP messages into it once, at flow-mod time.

use crate::key::{Field, FieldValue};

/// Reserved port numbers (OpenFlow 1.3 `ofp_port_no`).
pub mod port {
    /// Highest number a physical or logical port may have.
    pub const MAX: u32 = 0xffff_ff00;
    /// Send the packet back out of its ingress port.
    pub const IN_PORT: u32 = 0xffff_fff8;
    /// Submit the packet to the first flow table (packet-out and InSP only).
    pub const TABLE: u32 = 0xffff_fff9;
    /// Hand the packet to the legacy L2 switch.
    pub const NORMAL: u32 = 0xffff_fffa;
    /// Every port except the ingress port and ports with `no_fwd`/down.
    pub const FLOOD: u32 = 0xffff_fffb;
    /// Every port except the ingress port.
    pub const ALL: u32 = 0xffff_fffc;
    /// Send to the controller as a packet-in.
    pub const CONTROLLER: u32 = 0xffff_fffd;
    /// The switch's local networking stack.
    pub const LOCAL: u32 = 0xffff_fffe;
    /// Wildcard (no port); never a valid output.
    pub const ANY: u32 = 0xffff_ffff;
}

/// `max_len` meaning "send the whole packet, do not buffer it" (`OFPCML_NO_BUFFER`).
pub const NO_BUFFER_MAX_LEN: u16 = 0xffff;

/// `ofp_group` value meaning "no group" (used as `watch_group` wildcard).
pub const GROUP_ANY: u32 = 0xffff_ffff;

/// One OpenFlow 1.3 action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Output to a physical or reserved port; `max_len` only matters for CONTROLLER.
    Output {
        port: u32,
        max_len: u16,
    },
    /// Process the packet through a group.
    Group(u32),
    /// Select the queue for subsequent outputs.
    SetQueue(u32),
    /// Rewrite one header field (and fix checksums incrementally).
    SetField(Field, FieldValue),
    /// Push a new outer 802.1Q/802.1ad tag with this ethertype.
    PushVlan(u16),
    /// Remove the outer VLAN tag.
    PopVlan,
    /// Push a new MPLS label stack entry with this ethertype.
    PushMpls(u16),
    /// Pop the top MPLS label; the argument is the ethertype of the payload.
    PopMpls(u16),
    /// Push a PBB service tag (I-TAG) with this ethertype.
    PushPbb(u16),
    /// Remove the outer PBB service tag.
    PopPbb,
    SetMplsTtl(u8),
    DecMplsTtl,
    SetNwTtl(u8),
    DecNwTtl,
    /// Copy TTL from the next-to-outermost header to the outermost one.
    CopyTtlOut,
    /// Copy TTL from the outermost header to the next-to-outermost one.
    CopyTtlIn,
}

/// One OpenFlow 1.3 instruction (spec 5.9), plus the InSP packet-generation instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Instruction {
    /// Continue in a later table (forward only; validated by the switch core).
    GotoTable(u8),
    /// `metadata = (metadata & !mask) | (value & mask)`.
    WriteMetadata { value: u64, mask: u64 },
    /// Apply these actions to the packet now, in order.
    ApplyActions(Vec<Action>),
    /// Merge these actions into the action set (one per kind, the last one wins).
    WriteActions(Vec<Action>),
    /// Empty the action set.
    ClearActions,
    /// Send the packet through a meter; a drop band ends processing.
    Meter(u32),
    /// In-switch packet generation (seed 001): build a packet from a template and the
    /// triggering packet, then run `actions` on the generated packet (OUTPUT TABLE re-enters
    /// the pipeline at table 0). The triggering packet continues unchanged.
    Insp {
        template_id: u32,
        actions: Vec<Action>,
    },
}
