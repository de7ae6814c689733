//! Text of replies that have no input syntax: features, ports, tables, descriptions and
//! statistics, laid out the way `ovs-ofctl` prints them.

use ofp::{
    AggregateStats, Desc, GroupStats, MeterStats, Port, PortStats, SwitchConfig, SwitchFeatures,
    TableStats, OFPC_FLOW_STATS, OFPC_FRAG_MASK, OFPC_GROUP_STATS, OFPC_IP_REASM,
    OFPC_PORT_BLOCKED, OFPC_PORT_STATS, OFPC_QUEUE_STATS, OFPC_TABLE_STATS,
};

use crate::syntax::value::{format_mac, format_port};

/// Names of the set bits of `bits`, or `0` when none is set.
fn bit_names(bits: u32, names: &[(u32, &str)]) -> String {
    let set: Vec<&str> = names
        .iter()
        .filter(|(bit, _)| bits & bit != 0)
        .map(|(_, name)| *name)
        .collect();
    let unknown = names.iter().fold(bits, |rest, (bit, _)| rest & !bit);
    let mut text = set.join(" ");
    if unknown != 0 {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(&format!("{unknown:#x}"));
    }
    if text.is_empty() {
        text.push('0');
    }
    text
}

const CAPABILITIES: &[(u32, &str)] = &[
    (OFPC_FLOW_STATS, "FLOW_STATS"),
    (OFPC_TABLE_STATS, "TABLE_STATS"),
    (OFPC_PORT_STATS, "PORT_STATS"),
    (OFPC_GROUP_STATS, "GROUP_STATS"),
    (OFPC_IP_REASM, "IP_REASM"),
    (OFPC_QUEUE_STATS, "QUEUE_STATS"),
    (OFPC_PORT_BLOCKED, "PORT_BLOCKED"),
];

const PORT_CONFIG: &[(u32, &str)] = &[
    (1 << 0, "PORT_DOWN"),
    (1 << 2, "NO_RECV"),
    (1 << 5, "NO_FWD"),
    (1 << 6, "NO_PACKET_IN"),
];

const PORT_STATE: &[(u32, &str)] = &[(1 << 0, "LINK_DOWN"), (1 << 1, "BLOCKED"), (1 << 2, "LIVE")];

const PORT_FEATURES: &[(u32, &str)] = &[
    (1 << 0, "10MB-HD"),
    (1 << 1, "10MB-FD"),
    (1 << 2, "100MB-HD"),
    (1 << 3, "100MB-FD"),
    (1 << 4, "1GB-HD"),
    (1 << 5, "1GB-FD"),
    (1 << 6, "10GB-FD"),
    (1 << 7, "40GB-FD"),
    (1 << 8, "100GB-FD"),
    (1 << 9, "1TB-FD"),
    (1 << 10, "OTHER"),
    (1 << 11, "COPPER"),
    (1 << 12, "FIBER"),
    (1 << 13, "AUTO_NEG"),
    (1 << 14, "AUTO_PAUSE"),
    (1 << 15, "AUTO_PAUSE_ASYM"),
];

/// The features reply, as the first lines of `show`.
pub fn format_features(f: &SwitchFeatures) -> String {
    format!(
        "OFPT_FEATURES_REPLY (OF1.3): dpid:{:016x}\nn_tables:{}, n_buffers:{}\ncapabilities: {}\n",
        f.datapath_id,
        f.n_tables,
        f.n_buffers,
        bit_names(f.capabilities, CAPABILITIES)
    )
}

/// One port description, as `show` and `dump-ports-desc` print it.
pub fn format_port_desc(p: &Port) -> String {
    let mut text = format!(
        " {}({}): addr:{}\n     config:     {}\n     state:      {}\n",
        format_port(p.port_no),
        p.name,
        format_mac(&p.hw_addr),
        bit_names(p.config.0, PORT_CONFIG),
        bit_names(p.state.0, PORT_STATE)
    );
    for (label, bits) in [
        ("current:   ", p.curr),
        ("advertised:", p.advertised),
        ("supported: ", p.supported),
        ("peer:      ", p.peer),
    ] {
        if bits != 0 {
            text.push_str(&format!(
                "     {label} {}\n",
                bit_names(bits, PORT_FEATURES)
            ));
        }
    }
    text.push_str(&format!(
        "     speed: {} Mbps now, {} Mbps max\n",
        p.curr_speed / 1000,
        p.max_speed / 1000
    ));
    text
}

/// The switch configuration line of `show`.
pub fn format_config(c: &SwitchConfig) -> String {
    let frags = match c.flags & OFPC_FRAG_MASK {
        0 => "normal",
        1 => "drop",
        2 => "reassemble",
        _ => "nx-match",
    };
    format!(
        "OFPT_GET_CONFIG_REPLY (OF1.3): frags={frags} miss_send_len={}\n",
        c.miss_send_len
    )
}

/// `dump-desc`.
pub fn format_desc(d: &Desc) -> String {
    format!(
        "Manufacturer: {}\nHardware: {}\nSoftware: {}\nSerial Num: {}\nDP Description: {}\n",
        d.mfr_desc, d.hw_desc, d.sw_desc, d.serial_num, d.dp_desc
    )
}

fn counters(t: &TableStats) -> String {
    format!(
        "active={}, lookup={}, matched={}",
        t.active_count, t.lookup_count, t.matched_count
    )
}

/// `dump-tables`: one line per table; runs of consecutive tables with equal counters share
/// a line.
pub fn format_tables(tables: &[TableStats]) -> String {
    let mut text = String::new();
    let mut i = 0;
    while let Some(first) = tables.get(i) {
        let run = tables
            .get(i..)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .take_while(|(k, t)| {
                counters(t) == counters(first)
                    && usize::from(t.table_id) == usize::from(first.table_id) + k
            })
            .count();
        let last = tables.get(i + run - 1).unwrap_or(first);
        if run > 1 {
            text.push_str(&format!(
                "  tables {}-{}: {}\n",
                first.table_id,
                last.table_id,
                counters(first)
            ));
        } else {
            text.push_str(&format!(
                "  table {}: {}\n",
                first.table_id,
                counters(first)
            ));
        }
        i += run;
    }
    text
}

/// A counter, or `?` when the switch does not keep it (all ones).
fn counter(v: u64) -> String {
    if v == u64::MAX {
        "?".into()
    } else {
        v.to_string()
    }
}

fn duration(sec: u32, nsec: u32) -> String {
    format!("{sec}.{:03}s", nsec / 1_000_000)
}

/// `dump-ports`: three lines per port.
pub fn format_port_stats(p: &PortStats) -> String {
    format!(
        "  port {:>2}: rx pkts={}, bytes={}, drop={}, errs={}, frame={}, over={}, crc={}\n\
         \x20          tx pkts={}, bytes={}, drop={}, errs={}, coll={}\n\
         \x20          duration={}\n",
        format_port(p.port_no),
        counter(p.rx_packets),
        counter(p.rx_bytes),
        counter(p.rx_dropped),
        counter(p.rx_errors),
        counter(p.rx_frame_err),
        counter(p.rx_over_err),
        counter(p.rx_crc_err),
        counter(p.tx_packets),
        counter(p.tx_bytes),
        counter(p.tx_dropped),
        counter(p.tx_errors),
        counter(p.collisions),
        duration(p.duration_sec, p.duration_nsec)
    )
}

/// `dump-aggregate`.
pub fn format_aggregate(a: &AggregateStats) -> String {
    format!(
        "packet_count={} byte_count={} flow_count={}\n",
        a.packet_count, a.byte_count, a.flow_count
    )
}

/// `dump-group-stats`: one line per group.
pub fn format_group_stats(g: &GroupStats) -> String {
    let mut text = format!(
        "group_id={},duration={},ref_count={},packet_count={},byte_count={}",
        g.group_id,
        duration(g.duration_sec, g.duration_nsec),
        g.ref_count,
        counter(g.packet_count),
        counter(g.byte_count)
    );
    for (i, b) in g.bucket_stats.iter().enumerate() {
        text.push_str(&format!(
            ",bucket{i}:packet_count={},byte_count={}",
            counter(b.packet_count),
            counter(b.byte_count)
        ));
    }
    text.push('\n');
    text
}

/// `meter-stats`: one line per meter.
pub fn format_meter_stats(m: &MeterStats) -> String {
    let mut text = format!(
        "meter={} flow_count={} packet_in_count={} byte_in_count={} duration={}",
        m.meter_id,
        m.flow_count,
        counter(m.packet_in_count),
        counter(m.byte_in_count),
        duration(m.duration_sec, m.duration_nsec)
    );
    for (i, b) in m.band_stats.iter().enumerate() {
        text.push_str(&format!(
            " band{i}:packet_count={},byte_count={}",
            counter(b.packet_band_count),
            counter(b.byte_band_count)
        ));
    }
    text.push('\n');
    text
}

/// One InSP template, `key=value` like the other listings.
pub fn format_template(t: &ofp::PktTmpStats) -> String {
    format!(
        "pkttmp_id={} len={} copy_ops={} checksum_ops={} flows={} generated={} trigger_errors={} memory={}\n",
        t.pkttmp_id,
        t.len,
        t.copy_ops,
        t.checksum_ops,
        t.flow_count,
        t.generated,
        t.trigger_errors,
        t.memory
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ofp::{PortConfig, PortState, OFPP_LOCAL};

    #[test]
    fn features_and_config() {
        let f = SwitchFeatures {
            datapath_id: 0xab,
            n_buffers: 0,
            n_tables: 254,
            auxiliary_id: 0,
            capabilities: OFPC_FLOW_STATS | OFPC_PORT_STATS | (1 << 20),
            reserved: 0,
        };
        assert_eq!(
            format_features(&f),
            "OFPT_FEATURES_REPLY (OF1.3): dpid:00000000000000ab\n\
             n_tables:254, n_buffers:0\ncapabilities: FLOW_STATS PORT_STATS 0x100000\n"
        );
        let c = SwitchConfig {
            flags: 1,
            miss_send_len: 128,
        };
        assert_eq!(
            format_config(&c),
            "OFPT_GET_CONFIG_REPLY (OF1.3): frags=drop miss_send_len=128\n"
        );
    }

    #[test]
    fn port_description() {
        let p = Port {
            port_no: OFPP_LOCAL,
            hw_addr: [2, 0, 0, 0, 0, 1],
            name: "br0".into(),
            config: PortConfig::PORT_DOWN,
            state: PortState::LIVE,
            curr: (1 << 6) | (1 << 11),
            curr_speed: 10_000_000,
            max_speed: 10_000_000,
            ..Port::default()
        };
        assert_eq!(
            format_port_desc(&p),
            " LOCAL(br0): addr:02:00:00:00:00:01\n     config:     PORT_DOWN\n     \
             state:      LIVE\n     current:    10GB-FD COPPER\n     \
             speed: 10000 Mbps now, 10000 Mbps max\n"
        );
    }

    #[test]
    fn tables_share_lines_when_equal() {
        let t = |table_id, active_count| TableStats {
            table_id,
            active_count,
            lookup_count: 0,
            matched_count: 0,
        };
        let text = format_tables(&[t(0, 3), t(1, 0), t(2, 0), t(3, 0), t(5, 0)]);
        assert_eq!(
            text,
            "  table 0: active=3, lookup=0, matched=0\n  \
             tables 1-3: active=0, lookup=0, matched=0\n  \
             table 5: active=0, lookup=0, matched=0\n"
        );
        assert_eq!(format_tables(&[]), "");
    }

    #[test]
    fn port_statistics_mark_unknown_counters() {
        let p = PortStats {
            port_no: 1,
            rx_packets: 10,
            rx_bytes: 600,
            rx_frame_err: u64::MAX,
            duration_sec: 2,
            duration_nsec: 500_000_000,
            ..PortStats::default()
        };
        let text = format_port_stats(&p);
        assert!(text.starts_with("  port  1: rx pkts=10, bytes=600, drop=0, errs=0, frame=?,"));
        assert!(text.ends_with("           duration=2.500s\n"), "{text}");
    }
}
