//! Reserved numbers of OpenFlow 1.3.5 (ports, groups, tables, buffers, capabilities, flags).

/// OpenFlow 1.3 wire version.
pub const OFP_VERSION: u8 = 4;
/// Length of `ofp_header`.
pub const OFP_HEADER_LEN: usize = 8;

/// Message type numbers (`OFPT_*`).
pub mod msg_type {
    pub const HELLO: u8 = 0;
    pub const ERROR: u8 = 1;
    pub const ECHO_REQUEST: u8 = 2;
    pub const ECHO_REPLY: u8 = 3;
    pub const EXPERIMENTER: u8 = 4;
    pub const FEATURES_REQUEST: u8 = 5;
    pub const FEATURES_REPLY: u8 = 6;
    pub const GET_CONFIG_REQUEST: u8 = 7;
    pub const GET_CONFIG_REPLY: u8 = 8;
    pub const SET_CONFIG: u8 = 9;
    pub const PACKET_IN: u8 = 10;
    pub const FLOW_REMOVED: u8 = 11;
    pub const PORT_STATUS: u8 = 12;
    pub const PACKET_OUT: u8 = 13;
    pub const FLOW_MOD: u8 = 14;
    pub const GROUP_MOD: u8 = 15;
    pub const PORT_MOD: u8 = 16;
    pub const TABLE_MOD: u8 = 17;
    pub const MULTIPART_REQUEST: u8 = 18;
    pub const MULTIPART_REPLY: u8 = 19;
    pub const BARRIER_REQUEST: u8 = 20;
    pub const BARRIER_REPLY: u8 = 21;
    pub const QUEUE_GET_CONFIG_REQUEST: u8 = 22;
    pub const QUEUE_GET_CONFIG_REPLY: u8 = 23;
    pub const ROLE_REQUEST: u8 = 24;
    pub const ROLE_REPLY: u8 = 25;
    pub const GET_ASYNC_REQUEST: u8 = 26;
    pub const GET_ASYNC_REPLY: u8 = 27;
    pub const SET_ASYNC: u8 = 28;
    pub const METER_MOD: u8 = 29;
}

// Reserved port numbers.
pub const OFPP_MAX: u32 = 0xffff_ff00;
pub const OFPP_IN_PORT: u32 = 0xffff_fff8;
pub const OFPP_TABLE: u32 = 0xffff_fff9;
pub const OFPP_NORMAL: u32 = 0xffff_fffa;
pub const OFPP_FLOOD: u32 = 0xffff_fffb;
pub const OFPP_ALL: u32 = 0xffff_fffc;
pub const OFPP_CONTROLLER: u32 = 0xffff_fffd;
pub const OFPP_LOCAL: u32 = 0xffff_fffe;
pub const OFPP_ANY: u32 = 0xffff_ffff;

// Groups.
pub const OFPG_MAX: u32 = 0xffff_ff00;
pub const OFPG_ALL: u32 = 0xffff_fffc;
pub const OFPG_ANY: u32 = 0xffff_ffff;

// Tables.
pub const OFPTT_MAX: u8 = 0xfe;
pub const OFPTT_ALL: u8 = 0xff;

// Meters.
pub const OFPM_MAX: u32 = 0xffff_0000;
pub const OFPM_SLOWPATH: u32 = 0xffff_fffd;
pub const OFPM_CONTROLLER: u32 = 0xffff_fffe;
pub const OFPM_ALL: u32 = 0xffff_ffff;

// Queues.
pub const OFPQ_ALL: u32 = 0xffff_ffff;

/// buffer_id meaning "not buffered".
pub const OFP_NO_BUFFER: u32 = 0xffff_ffff;
/// max_len of an output to the controller meaning "send the whole packet".
pub const OFPCML_NO_BUFFER: u16 = 0xffff;
pub const OFPCML_MAX: u16 = 0xffe5;
/// Default miss_send_len.
pub const OFP_DEFAULT_MISS_SEND_LEN: u16 = 128;
pub const OFP_TCP_PORT: u16 = 6653;

// Switch capabilities (`ofp_switch_features.capabilities`).
pub const OFPC_FLOW_STATS: u32 = 1 << 0;
pub const OFPC_TABLE_STATS: u32 = 1 << 1;
pub const OFPC_PORT_STATS: u32 = 1 << 2;
pub const OFPC_GROUP_STATS: u32 = 1 << 3;
pub const OFPC_IP_REASM: u32 = 1 << 5;
pub const OFPC_QUEUE_STATS: u32 = 1 << 6;
pub const OFPC_PORT_BLOCKED: u32 = 1 << 8;

// Switch config flags.
pub const OFPC_FRAG_NORMAL: u16 = 0;
pub const OFPC_FRAG_DROP: u16 = 1;
pub const OFPC_FRAG_REASM: u16 = 2;
pub const OFPC_FRAG_MASK: u16 = 3;

// Packet-in reasons.
pub const OFPR_NO_MATCH: u8 = 0;
pub const OFPR_ACTION: u8 = 1;
pub const OFPR_INVALID_TTL: u8 = 2;

// Flow-removed reasons.
pub const OFPRR_IDLE_TIMEOUT: u8 = 0;
pub const OFPRR_HARD_TIMEOUT: u8 = 1;
pub const OFPRR_DELETE: u8 = 2;
pub const OFPRR_GROUP_DELETE: u8 = 3;

// Port-status reasons.
pub const OFPPR_ADD: u8 = 0;
pub const OFPPR_DELETE: u8 = 1;
pub const OFPPR_MODIFY: u8 = 2;

// Port features (curr, advertised, supported, peer).
pub const OFPPF_10MB_HD: u32 = 1 << 0;
pub const OFPPF_10MB_FD: u32 = 1 << 1;
pub const OFPPF_100MB_HD: u32 = 1 << 2;
pub const OFPPF_100MB_FD: u32 = 1 << 3;
pub const OFPPF_1GB_HD: u32 = 1 << 4;
pub const OFPPF_1GB_FD: u32 = 1 << 5;
pub const OFPPF_10GB_FD: u32 = 1 << 6;
pub const OFPPF_40GB_FD: u32 = 1 << 7;
pub const OFPPF_100GB_FD: u32 = 1 << 8;
pub const OFPPF_1TB_FD: u32 = 1 << 9;
pub const OFPPF_OTHER: u32 = 1 << 10;
pub const OFPPF_COPPER: u32 = 1 << 11;
pub const OFPPF_FIBER: u32 = 1 << 12;
pub const OFPPF_AUTONEG: u32 = 1 << 13;
pub const OFPPF_PAUSE: u32 = 1 << 14;
pub const OFPPF_PAUSE_ASYM: u32 = 1 << 15;
/// Every port feature bit the spec defines.
pub const OFPPF_ALL: u32 = 0xffff;

// Group capabilities (group features).
pub const OFPGFC_SELECT_WEIGHT: u32 = 1 << 0;
pub const OFPGFC_SELECT_LIVENESS: u32 = 1 << 1;
pub const OFPGFC_CHAINING: u32 = 1 << 2;
pub const OFPGFC_CHAINING_CHECKS: u32 = 1 << 3;

// Multipart flags.
pub const OFPMPF_REQ_MORE: u16 = 1;
pub const OFPMPF_REPLY_MORE: u16 = 1;

/// Table config bits of OpenFlow 1.3 (all deprecated; only this mask is defined).
pub const OFPTC_DEPRECATED_MASK: u32 = 3;

/// Bit in a version bitmap for OpenFlow 1.3.
pub const OFP13_VERSION_BIT: u32 = 1 << 4;
