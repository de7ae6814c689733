//! Round trip of the text syntax over generated flows, groups and meters:
//! `parse(print(x)) == x` for every x in canonical form (fields in wire order, masks that
//! are not all ones, values inside their masks, instructions in pipeline order).

use hairpinctl::syntax::flow::{format_flow, format_flow_stats, parse_flow, FlowSpec, FlowUse};
use hairpinctl::syntax::group::{format_group, parse_group};
use hairpinctl::syntax::meter::{format_meter, parse_meter};
use ofp::{
    Action, Bucket, FlowModFlags, FlowStats, GroupDesc, GroupType, InspInstruction, Instruction,
    Match, MeterBand, MeterConfig, MeterFlags, OxmField, OxmFieldId as F, OxmValue, OFPG_ANY,
    OFPP_ANY, OFPP_CONTROLLER, OFPP_IN_PORT, OFPP_LOCAL, OFPVID_PRESENT,
};
use proptest::prelude::*;

/// Random choices drawn from a fixed supply of numbers that proptest generates.
struct Picks {
    numbers: Vec<u64>,
    next: usize,
}

impl Picks {
    fn new(numbers: Vec<u64>) -> Self {
        Picks { numbers, next: 0 }
    }

    fn u64(&mut self) -> u64 {
        let v = self.numbers[self.next % self.numbers.len()];
        self.next += 1;
        // splitmix64 of the number and its position, so that a short supply still varies.
        let mut z = v.wrapping_add((self.next as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.u64() % n
    }

    fn coin(&mut self) -> bool {
        self.below(2) == 0
    }

    fn bits(&mut self, bits: u32) -> u64 {
        if bits >= 64 {
            self.u64()
        } else {
            self.u64() & ((1 << bits) - 1)
        }
    }

    /// A random value of field `id` that fits its width.
    fn value(&mut self, id: F) -> OxmValue {
        let len = id.value_len();
        let bytes: Vec<u8> = if len <= 8 {
            let v = self.bits(id.bits());
            v.to_be_bytes()[8 - len..].to_vec()
        } else {
            (0..len).map(|_| self.u64() as u8).collect()
        };
        OxmValue::from_bytes(id, &bytes).unwrap()
    }

    /// A mask of leading ones (as an IP prefix length writes it).
    fn prefix_mask(&mut self, id: F) -> OxmValue {
        let bits = id.value_len() as u32 * 8;
        let len = self.below(u64::from(bits) + 1) as u32;
        let ones = if len == 0 {
            0
        } else {
            u128::MAX << (128 - len)
        };
        let bytes = ones.to_be_bytes()[..id.value_len()].to_vec();
        OxmValue::from_bytes(id, &bytes).unwrap()
    }

    /// A field of `id`, masked (canonically) half of the time when it can be.
    fn field(&mut self, id: F) -> OxmField {
        let value = self.value(id);
        if !id.maskable() || self.coin() {
            return OxmField::exact(value);
        }
        let whole_bytes = id.bits() as usize == id.value_len() * 8;
        let mask = if whole_bytes && self.coin() {
            self.prefix_mask(id)
        } else {
            self.value(id)
        };
        let full = full_mask(id);
        let mask_bytes = mask.to_bytes();
        if mask_bytes == full {
            return OxmField::exact(value);
        }
        let masked: Vec<u8> = value
            .to_bytes()
            .iter()
            .zip(&mask_bytes)
            .map(|(v, m)| v & m)
            .collect();
        OxmField::masked(OxmValue::from_bytes(id, &masked).unwrap(), mask)
    }
}

fn full_mask(id: F) -> Vec<u8> {
    let ones = if id.bits() >= 128 {
        u128::MAX
    } else {
        (1u128 << id.bits()) - 1
    };
    ones.to_be_bytes()[16 - id.value_len()..].to_vec()
}

fn exact(v: OxmValue) -> OxmField {
    OxmField::exact(v)
}

/// A match whose prerequisites hold by construction.
fn gen_match(p: &mut Picks) -> Match {
    let mut fields = Vec::new();
    let maybe = |p: &mut Picks, fields: &mut Vec<OxmField>, id: F| {
        if p.coin() {
            fields.push(p.field(id));
        }
    };
    if p.coin() {
        fields.push(p.field(F::InPort));
        maybe(p, &mut fields, F::InPhyPort);
    }
    for id in [F::Metadata, F::EthDst, F::EthSrc, F::TunnelId] {
        maybe(p, &mut fields, id);
    }
    match p.below(3) {
        0 => {}
        1 => {
            let vid = p.bits(12) as u16 | OFPVID_PRESENT;
            fields.push(exact(OxmValue::VlanVid(vid)));
            maybe(p, &mut fields, F::VlanPcp);
        }
        _ => fields.push(p.field(F::VlanVid)),
    }
    let l3 = p.below(7);
    let eth_type: u16 = match l3 {
        0 => 0x0800,
        1 => 0x86dd,
        2 => 0x0806,
        3 => 0x8847,
        4 => 0x88e7,
        5 => p.bits(16) as u16,
        _ => 0,
    };
    if l3 == 6 {
        return sorted(fields);
    }
    fields.push(exact(OxmValue::EthType(eth_type)));
    match eth_type {
        0x0800 | 0x86dd => {
            let v6 = eth_type == 0x86dd;
            maybe(p, &mut fields, F::IpDscp);
            maybe(p, &mut fields, F::IpEcn);
            maybe(p, &mut fields, F::NxIpTtl);
            if v6 {
                for id in [F::Ipv6Src, F::Ipv6Dst, F::Ipv6Flabel, F::Ipv6Exthdr] {
                    maybe(p, &mut fields, id);
                }
            } else {
                maybe(p, &mut fields, F::Ipv4Src);
                maybe(p, &mut fields, F::Ipv4Dst);
            }
            let icmp = if v6 { 58 } else { 1 };
            let protos = [6u8, 17, 132, icmp, p.bits(8) as u8];
            let proto = protos[p.below(protos.len() as u64) as usize];
            if p.coin() {
                return sorted(fields);
            }
            fields.push(exact(OxmValue::IpProto(proto)));
            let ports = match proto {
                6 => Some((F::TcpSrc, F::TcpDst)),
                17 => Some((F::UdpSrc, F::UdpDst)),
                132 => Some((F::SctpSrc, F::SctpDst)),
                1 if !v6 => Some((F::Icmpv4Type, F::Icmpv4Code)),
                58 if v6 => Some((F::Icmpv6Type, F::Icmpv6Code)),
                _ => None,
            };
            if let Some((a, b)) = ports {
                if proto == 58 && v6 && p.coin() {
                    let nd_type = if p.coin() { 135 } else { 136 };
                    fields.push(exact(OxmValue::Icmpv6Type(nd_type)));
                    maybe(p, &mut fields, F::Ipv6NdTarget);
                    let link = if nd_type == 135 {
                        F::Ipv6NdSll
                    } else {
                        F::Ipv6NdTll
                    };
                    maybe(p, &mut fields, link);
                } else {
                    maybe(p, &mut fields, a);
                }
                maybe(p, &mut fields, b);
            }
        }
        0x0806 => {
            for id in [F::ArpOp, F::ArpSpa, F::ArpTpa, F::ArpSha, F::ArpTha] {
                maybe(p, &mut fields, id);
            }
        }
        0x8847 => {
            for id in [F::MplsLabel, F::MplsTc, F::MplsBos] {
                maybe(p, &mut fields, id);
            }
        }
        0x88e7 => maybe(p, &mut fields, F::PbbIsid),
        _ => {}
    }
    sorted(fields)
}

fn sorted(mut fields: Vec<OxmField>) -> Match {
    fields.sort_by_key(|f| f.value.field_id());
    let m = Match { fields };
    m.validate().expect("generated match is valid");
    m
}

fn gen_port(p: &mut Picks) -> u32 {
    let reserved = [
        OFPP_IN_PORT,
        OFPP_LOCAL,
        OFPP_CONTROLLER,
        OFPP_ANY,
        0xffff_fffa,
    ];
    if p.coin() {
        reserved[p.below(reserved.len() as u64) as usize]
    } else {
        p.bits(32) as u32
    }
}

fn gen_action(p: &mut Picks) -> Action {
    match p.below(17) {
        0 => Action::Output {
            port: gen_port(p),
            max_len: if p.coin() { 0 } else { p.bits(16) as u16 },
        },
        1 => Action::CopyTtlOut,
        2 => Action::CopyTtlIn,
        3 => Action::SetMplsTtl(p.bits(8) as u8),
        4 => Action::DecMplsTtl,
        5 => Action::PushVlan(p.bits(16) as u16),
        6 => Action::PopVlan,
        7 => Action::PushMpls(p.bits(16) as u16),
        8 => Action::PopMpls(p.bits(16) as u16),
        9 => Action::SetQueue(p.bits(32) as u32),
        10 => Action::Group(p.bits(32) as u32),
        11 => Action::SetNwTtl(p.bits(8) as u8),
        12 => Action::DecNwTtl,
        13 => Action::PushPbb(p.bits(16) as u16),
        14 => Action::PopPbb,
        _ => {
            let id = F::ALL[p.below(F::ALL.len() as u64) as usize];
            Action::SetField(p.value(id))
        }
    }
}

fn gen_actions(p: &mut Picks, min: u64) -> Vec<Action> {
    let n = min + p.below(4);
    (0..n).map(|_| gen_action(p)).collect()
}

fn gen_instructions(p: &mut Picks) -> Vec<Instruction> {
    let mut out = Vec::new();
    if p.coin() {
        out.push(Instruction::Meter(p.bits(32) as u32));
    }
    if p.coin() {
        out.push(Instruction::ApplyActions(gen_actions(p, 1)));
    }
    if p.coin() {
        out.push(Instruction::ClearActions);
    }
    if p.coin() {
        out.push(Instruction::WriteActions(gen_actions(p, 0)));
    }
    if p.coin() {
        let mask = if p.coin() { u64::MAX } else { p.u64() };
        out.push(Instruction::WriteMetadata {
            metadata: p.u64(),
            mask,
        });
    }
    if p.below(4) == 0 {
        out.push(Instruction::Insp(InspInstruction {
            pkttmp_id: p.bits(32) as u32,
            actions: gen_actions(p, 0),
        }));
    }
    if p.coin() {
        out.push(Instruction::GotoTable(p.bits(8) as u8));
    }
    out
}

fn gen_flow(p: &mut Picks) -> FlowSpec {
    FlowSpec {
        table_id: p.below(255) as u8,
        priority: p.bits(16) as u16,
        cookie: p.u64(),
        idle_timeout: p.bits(16) as u16,
        hard_timeout: p.bits(16) as u16,
        flags: FlowModFlags(p.bits(5) as u16),
        match_: gen_match(p),
        instructions: gen_instructions(p),
        ..FlowSpec::defaults(FlowUse::Add)
    }
}

fn stats_of(spec: &FlowSpec, p: &mut Picks) -> FlowStats {
    FlowStats {
        table_id: spec.table_id,
        duration_sec: p.bits(32) as u32,
        duration_nsec: p.below(1_000_000_000) as u32,
        priority: spec.priority,
        idle_timeout: spec.idle_timeout,
        hard_timeout: spec.hard_timeout,
        flags: spec.flags,
        cookie: spec.cookie,
        packet_count: p.u64(),
        byte_count: p.u64(),
        match_: spec.match_.clone(),
        instructions: spec.instructions.clone(),
    }
}

fn gen_group(p: &mut Picks) -> GroupDesc {
    let types = [
        GroupType::All,
        GroupType::Select,
        GroupType::Indirect,
        GroupType::FastFailover,
    ];
    let group_type = types[p.below(4) as usize];
    let buckets = (0..p.below(4))
        .map(|_| Bucket {
            weight: if p.coin() { 0 } else { p.bits(16) as u16 },
            watch_port: if p.coin() { OFPP_ANY } else { gen_port(p) },
            watch_group: if p.coin() {
                OFPG_ANY
            } else {
                p.bits(32) as u32
            },
            actions: gen_actions(p, 0),
        })
        .collect();
    GroupDesc {
        group_type,
        group_id: p.bits(32) as u32,
        buckets,
    }
}

fn gen_meter(p: &mut Picks) -> MeterConfig {
    let unit = [
        MeterFlags::KBPS,
        MeterFlags::PKTPS,
        MeterFlags::KBPS | MeterFlags::PKTPS,
    ];
    let mut flags = unit[p.below(3) as usize];
    if p.coin() {
        flags = flags | MeterFlags::BURST;
    }
    if p.coin() {
        flags = flags | MeterFlags::STATS;
    }
    let bands = (0..p.below(4))
        .map(|_| {
            let rate = p.bits(32) as u32;
            let burst_size = if p.coin() { 0 } else { p.bits(32) as u32 };
            if p.coin() {
                MeterBand::Drop { rate, burst_size }
            } else {
                MeterBand::DscpRemark {
                    rate,
                    burst_size,
                    prec_level: p.bits(8) as u8,
                }
            }
        })
        .collect();
    MeterConfig {
        flags,
        meter_id: p.bits(32) as u32,
        bands,
    }
}

fn supply() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(any::<u64>(), 1..200)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn flows_round_trip_through_dump_lines(numbers in supply()) {
        let mut p = Picks::new(numbers);
        let spec = gen_flow(&mut p);
        let line = format_flow_stats(&stats_of(&spec, &mut p));
        prop_assert_eq!(parse_flow(&line, FlowUse::Add), Ok(spec.clone()), "{}", line);
        let text = format_flow(&spec);
        prop_assert_eq!(parse_flow(&text, FlowUse::Add), Ok(spec), "{}", text);
    }

    #[test]
    fn groups_round_trip(numbers in supply()) {
        let group = gen_group(&mut Picks::new(numbers));
        let text = format_group(&group);
        prop_assert_eq!(parse_group(&text), Ok(group), "{}", text);
    }

    #[test]
    fn meters_round_trip(numbers in supply()) {
        let meter = gen_meter(&mut Picks::new(numbers));
        let text = format_meter(&meter);
        prop_assert_eq!(parse_meter(&text), Ok(meter), "{}", text);
    }
}

/// Text made of the syntax's own pieces, so that random input gets deep into the parsers.
fn syntax_soup() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "actions=",
        "bucket=",
        "band=",
        "type=",
        "meter=",
        "group_id=",
        "table=",
        "priority=",
        "cookie=",
        "tcp",
        "ip",
        "ipv6",
        "arp",
        "dl_vlan=",
        "tp_src=",
        "nw_src=",
        "in_port=",
        "write_actions(",
        "insp(",
        "output(",
        ")",
        "(",
        ",",
        " ",
        "=",
        ":",
        "/",
        "->",
        "0x",
        "set_field:",
        "goto_table:",
        "drop",
        "0",
        "1",
        "255",
        "65536",
        "ffff",
        "::",
        ".",
        "10.0.0.1",
        "00:00:00:00:00:01",
        "\u{e9}",
        "weight:",
        "rate=",
        "kbps",
    ]);
    prop::collection::vec(pieces, 0..24).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Parsers return errors on bad input; they never panic.
    #[test]
    fn parsers_never_panic(text in prop_oneof![syntax_soup(), any::<String>()]) {
        for use_ in [FlowUse::Add, FlowUse::Modify, FlowUse::Filter] {
            let _ = parse_flow(&text, use_);
        }
        let _ = parse_group(&text);
        let _ = parse_meter(&text);
    }
}

/// The generator covers every OXM field, so the property exercises all of them.
#[test]
fn generator_reaches_every_field() {
    let mut seen = std::collections::HashSet::new();
    for seed in 0..3000u64 {
        let mut p = Picks::new(vec![seed]);
        for f in gen_match(&mut p).fields {
            seen.insert(f.value.field_id());
        }
    }
    let missing: Vec<F> = F::ALL
        .iter()
        .copied()
        .filter(|id| !seen.contains(id))
        .collect();
    assert!(missing.is_empty(), "never generated: {missing:?}");
}
