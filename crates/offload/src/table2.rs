//! The rule structures of seed 004's Table 2, and the fill procedure of its section 5.1.1:
//! rules of one structure go into a table one at a time until the table refuses one or stops
//! taking them into hardware. Row `k` matches its field exactly (with the fields OpenFlow
//! 1.3 requires before it: `eth_type` before an IP field, `ip_proto` before a TCP port, a
//! present VLAN before `vlan_pcp`) and wildcards the rest. Rules differ by value where the
//! field has room and always by priority, which falls with each rule so that a rule never
//! sits above one inserted before it. The `hairpin-characterise` tool sends the same rules
//! over OpenFlow; this is the same procedure on the planner alone.

use dataplane::key::{Field, FieldValue, FlowMatch, OFPVID_PRESENT};

/// Row, the field that names it, and the published capacities (2920 v1.0, 3500 v1.0, 3500
/// v1.3, 5130 EXT, 5130 MAC-IP, 5700 EXT). The 5700 MAC-IP column has no figures in our copy
/// of the paper.
pub const TABLE2: [(u8, &str, [u32; 6]); 12] = [
    (1, "in_port", [460, 381, 0, 384, 0, 640]),
    (2, "vlan_vid", [460, 381, 0, 384, 0, 640]),
    (3, "vlan_pcp", [460, 0, 0, 384, 0, 640]),
    (4, "eth_src", [0, 0, 0, 384, 0, 640]),
    (5, "eth_dst", [0, 0, 0, 384, 16000, 640]),
    (6, "eth_type", [460, 1526, 1526, 384, 16000, 512]),
    (7, "ip_dscp", [460, 1526, 1526, 512, 0, 512]),
    (8, "ip_src", [460, 1526, 1526, 512, 0, 512]),
    (9, "ip_dst", [460, 1526, 1526, 512, 16000, 512]),
    (10, "ip_proto", [460, 1526, 1526, 512, 0, 512]),
    (11, "tcp_src", [460, 1526, 1526, 512, 0, 512]),
    (12, "tcp_dst", [460, 1526, 1526, 512, 0, 512]),
];

/// The columns: profile name and OpenFlow table.
pub const COLUMNS: [(&str, u8); 6] = [
    ("hp-2920", 0),
    ("hp-3500yl-of10", 0),
    ("hp-3500yl-of13", 0),
    ("hpe-5130", 0),
    ("hpe-5130", 1),
    ("hpe-5700", 0),
];

/// Highest priority the fill starts from.
pub const TOP_PRIORITY: u16 = 60_000;

/// The `n`th rule of row `row` (1-based) and its priority.
pub fn rule(row: u8, n: u32) -> (FlowMatch, u16) {
    let mut m = FlowMatch::any();
    let n = u128::from(n);
    let mut exact = |f: Field, v: u128| m.set(f, FieldValue(v), None);
    match row {
        1 => exact(Field::InPort, 1 + n % 24),
        2 => exact(Field::VlanVid, u128::from(OFPVID_PRESENT) | (1 + n % 4094)),
        4 => exact(Field::EthSrc, 0x0200_0000_0000 | n),
        5 => exact(Field::EthDst, 0x0200_0000_0000 | n),
        6 => exact(Field::EthType, 0x1000 + n % 0x7000),
        7 => {
            exact(Field::EthType, 0x0800);
            exact(Field::IpDscp, n % 64);
        }
        8 => {
            exact(Field::EthType, 0x0800);
            exact(Field::Ipv4Src, 0x0a00_0000 | n);
        }
        9 => {
            exact(Field::EthType, 0x0800);
            exact(Field::Ipv4Dst, 0x0a00_0000 | n);
        }
        10 => {
            exact(Field::EthType, 0x0800);
            exact(Field::IpProto, n % 256);
        }
        11 | 12 => {
            exact(Field::EthType, 0x0800);
            exact(Field::IpProto, 6);
            let port = if row == 11 {
                Field::TcpSrc
            } else {
                Field::TcpDst
            };
            exact(port, 1 + n % 65535);
        }
        _ => {}
    }
    if row == 3 {
        let present = FieldValue::from(OFPVID_PRESENT);
        m.set(Field::VlanVid, present, Some(present));
        m.set(Field::VlanPcp, FieldValue(n % 8), None);
    }
    let step = (n % u128::from(TOP_PRIORITY)) as u16;
    (m, TOP_PRIORITY - step)
}
