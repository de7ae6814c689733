//! Regressions for datapath defects the os-ken OpenFlow 1.3 switch test tool found. Each
//! case sends the tool's own ingress frame (as os-ken serializes it) through the pipeline and
//! compares the output with the tool's expected egress frame, byte for byte.

mod common;
use common::*;
use dataplane::checksum;
use dataplane::counters::GroupCounters;
use dataplane::datapath::{DatapathReader, DatapathWriter};
use dataplane::ir::{port, Action, Instruction, GROUP_ANY};
use dataplane::key::{Field, FieldValue, FlowMatch};
use dataplane::model::{Group, GroupBucket, GroupType, Op, OpSink};

fn hex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

fn set(field: Field, value: u128) -> Action {
    Action::SetField(field, FieldValue(value))
}

/// The frame that leaves on port 2 when `ingress` enters on port 1 of a switch with `flows`
/// (table, match, instructions).
fn egress(flows: Vec<(u8, FlowMatch, Vec<Instruction>)>, ingress: &str) -> Vec<u8> {
    let (mut w, mut r) = datapath(3);
    for (i, (table, m, ins)) in flows.into_iter().enumerate() {
        add_flow(&mut w, table, i as u64 + 1, 10, m, ins);
    }
    w.publish();
    let rec = send(&mut r, 1, &[(1, hex(ingress))]);
    assert_eq!(rec.ports(), vec![2], "one frame out of port 2");
    rec.out
        .into_iter()
        .next()
        .map(|(_, f)| f)
        .unwrap_or_default()
}

/// One table: `m` → apply `actions` then output:2.
fn one_table(m: FlowMatch, mut actions: Vec<Action>) -> Vec<(u8, FlowMatch, Vec<Instruction>)> {
    actions.push(out(2));
    vec![(0, m, vec![apply(actions)])]
}

/// Table 0 pops a header (`pop`) and goes to table 1, which matches `m` and applies
/// `actions` then output:2 (the os-ken "pop then match the inner packet" cases).
fn after_pop(
    pop: Action,
    m: FlowMatch,
    actions: Vec<Action>,
) -> Vec<(u8, FlowMatch, Vec<Instruction>)> {
    let mut flows = vec![(
        0,
        FlowMatch::any(),
        vec![apply(vec![pop]), Instruction::GotoTable(1)],
    )];
    let (_, m, ins) = one_table(m, actions).remove(0);
    flows.push((1, m, ins));
    flows
}

const POP_MPLS_V4: Action = Action::PopMpls(0x0800);
const POP_MPLS_V6: Action = Action::PopMpls(0x86dd);

// ---- set_field eth_type ------------------------------------------------------------------

#[test]
fn set_eth_type_rewrites_the_ethertype_of_ipv4_ipv6_and_arp() {
    let cases = [
        (
            0x0800,
            "22222222222212111111111108004520004b000000004006db1ec0a80a0ac0a814142b6708ae000000000000000060000000cb4c0000000000000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            "22222222222212111111111188484520004b000000004006db1ec0a80a0ac0a814142b6708ae000000000000000060000000cb4c0000000000000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
        ),
        (
            0x86dd,
            "22222222222212111111111186dd620000640037064000100000000000000000000000000010002000000000000000000000000000202b6708ae0000000000000000600000006a5c0000000000000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            "2222222222221211111111118848620000640037064000100000000000000000000000000010002000000000000000000000000000202b6708ae0000000000000000600000006a5c0000000000000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
        ),
        (
            0x0806,
            "22222222222212111111111108060001080006040001121111111111c0a80a0a222222222222c0a81414000000000000000000000000000000000000",
            "22222222222212111111111188480001080006040001121111111111c0a80a0a222222222222c0a81414000000000000000000000000000000000000",
        ),
    ];
    for (eth_type, ingress, expected) in cases {
        let flows = one_table(
            m(&[(Field::EthType, eth_type)]),
            vec![set(Field::EthType, 0x8848)],
        );
        assert_eq!(
            egress(flows, ingress),
            hex(expected),
            "eth_type {eth_type:#x}"
        );
    }
}

#[test]
fn later_tables_see_the_new_eth_type() {
    let ingress = "22222222222212111111111108060001080006040001121111111111c0a80a0a222222222222c0a81414000000000000000000000000000000000000";
    let flows = vec![
        (
            0,
            m(&[(Field::EthType, 0x0806)]),
            vec![
                apply(vec![set(Field::EthType, 0x88b5)]),
                Instruction::GotoTable(1),
            ],
        ),
        (1, m(&[(Field::EthType, 0x88b5)]), vec![apply(vec![out(2)])]),
    ];
    assert_eq!(&egress(flows, ingress)[12..14], &[0x88, 0xb5]);
}

// ---- set_field ip_proto ------------------------------------------------------------------

/// IPv4/TCP with proto 6 and the same packet as os-ken expects it after set ip_proto 17: the
/// header checksum and the TCP checksum (whose pseudo-header holds the protocol) follow.
const V4_TCP: &str = "4520004b000000004006db1ec0a80a0ac0a814142b6708ae000000000000000060000000cb4c0000000000000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const V4_PROTO17: &str = "4520004b000000004011db13c0a80a0ac0a814142b6708ae000000000000000060000000cb410000000000000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const V6_TCP: &str = "620000640037064000100000000000000000000000000010002000000000000000000000000000202b6708ae0000000000000000600000006a5c0000000000000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const V6_PROTO17: &str = "620000640037114000100000000000000000000000000010002000000000000000000000000000202b6708ae0000000000000000600000006a510000000000000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

const MACS: &str = "222222222222121111111111";
const VLAN_TAG: &str = "81006064";
const MPLS_LABEL: &str = "00064740";
/// Outer Ethernet header and I-TAG of os-ken's PBB frames.
const PBB_OUTER: &str = "22222222222212111111111188e700000064";

#[test]
fn set_ip_proto_on_ipv4_and_ipv6_plain_tagged_and_after_pops() {
    for (et, ip, expected_ip) in [("0800", V4_TCP, V4_PROTO17), ("86dd", V6_TCP, V6_PROTO17)] {
        let eth_type = u128::from_str_radix(et, 16).unwrap_or_default();
        let pop = if et == "0800" {
            POP_MPLS_V4
        } else {
            POP_MPLS_V6
        };
        let plain = format!("{MACS}{et}{ip}");
        let expected = hex(&format!("{MACS}{et}{expected_ip}"));
        let match_tcp = || m(&[(Field::EthType, eth_type), (Field::IpProto, 6)]);
        let to_udp = || vec![set(Field::IpProto, 17)];

        assert_eq!(
            egress(one_table(match_tcp(), to_udp()), &plain),
            expected,
            "{et} untagged"
        );
        let tagged = format!("{MACS}{VLAN_TAG}{et}{ip}");
        assert_eq!(
            egress(one_table(match_tcp(), to_udp()), &tagged),
            hex(&format!("{MACS}{VLAN_TAG}{et}{expected_ip}")),
            "{et} behind a VLAN tag"
        );
        let mpls = format!("{MACS}8847{MPLS_LABEL}{ip}");
        assert_eq!(
            egress(after_pop(pop, match_tcp(), to_udp()), &mpls),
            expected,
            "{et} after pop_mpls"
        );
        let pbb = format!("{PBB_OUTER}{plain}");
        assert_eq!(
            egress(after_pop(Action::PopPbb, match_tcp(), to_udp()), &pbb),
            expected,
            "{et} after pop_pbb"
        );
    }
}

/// Whether the TCP checksum of an IPv6 frame (fixed header at 14) verifies with `proto` in the
/// pseudo-header, the segment starting at `l4`.
fn tcp6_checksum_ok(frame: &[u8], l4: usize, proto: u8) -> bool {
    let src: [u8; 16] = frame[22..38].try_into().unwrap_or_default();
    let dst: [u8; 16] = frame[38..54].try_into().unwrap_or_default();
    let seg = &frame[l4..];
    let pseudo = checksum::pseudo_v6(&src, &dst, proto, seg.len() as u32);
    checksum::transport(seg, 16, pseudo, proto) == Some(u16::from_be_bytes([seg[16], seg[17]]))
}

#[test]
fn set_ip_proto_rewrites_the_last_ipv6_extension_header() {
    // IPv6 (next header 0) + hop-by-hop options (next header 6, a PadN option) + TCP.
    let tcp = &V6_TCP[80..];
    let addrs = &V6_TCP[16..80];
    let ingress = format!(
        "{MACS}86dd62000064{:04x}0040{addrs}0600010400000000{tcp}",
        tcp.len() / 2 + 8
    );
    let mut frame = hex(&ingress);
    // Make the original TCP checksum valid for this header chain.
    let c = {
        let src: [u8; 16] = frame[22..38].try_into().unwrap_or_default();
        let dst: [u8; 16] = frame[38..54].try_into().unwrap_or_default();
        let seg = &frame[62..];
        let pseudo = checksum::pseudo_v6(&src, &dst, 6, seg.len() as u32);
        checksum::transport(seg, 16, pseudo, 6).unwrap_or_default()
    };
    frame[78..80].copy_from_slice(&c.to_be_bytes());
    assert!(tcp6_checksum_ok(&frame, 62, 6));
    let ingress: String = frame.iter().map(|b| format!("{b:02x}")).collect();

    let out = egress(
        one_table(
            m(&[(Field::EthType, 0x86dd), (Field::IpProto, 6)]),
            vec![set(Field::IpProto, 17)],
        ),
        &ingress,
    );
    assert_eq!(out[20], 0, "the fixed header still points at hop-by-hop");
    assert_eq!(
        out[54], 17,
        "the hop-by-hop header's next header is the protocol"
    );
    assert!(tcp6_checksum_ok(&out, 62, 17));
    assert_eq!(out[..54], frame[..54]);
}

// ---- set_field sctp_src / sctp_dst ---------------------------------------------------------

/// os-ken's SCTP ingress and expected egress for `set_field:6789->sctp_dst` over IPv6. os-ken
/// computes its SCTP checksums over the Python repr of the bytes (`str(bytearray)`), so both
/// of its checksums are wrong; the tests put the real CRC32c in.
const SCTP6_IN: &str = "22222222222212111111111186dd620000640024844000100000000000000000000000000010002000000000000000000000000000202b6708ae00000000a1137046000000180000000000000000000000000123456789abcdef";
const SCTP6_OUT: &str = "22222222222212111111111186dd620000640024844000100000000000000000000000000010002000000000000000000000000000202b671a8500000000602416c0000000180000000000000000000000000123456789abcdef";
const SCTP6_L4: usize = 54;

/// Writes the correct SCTP checksum into an SCTP-over-IPv6 frame.
fn with_sctp_checksum(mut frame: Vec<u8>) -> Vec<u8> {
    let c = checksum::sctp(&frame[SCTP6_L4..]).unwrap_or_default();
    frame[SCTP6_L4 + 8..SCTP6_L4 + 12].copy_from_slice(&c.to_le_bytes());
    frame
}

fn stored_sctp(frame: &[u8]) -> u32 {
    u32::from_le_bytes(
        frame[SCTP6_L4 + 8..SCTP6_L4 + 12]
            .try_into()
            .unwrap_or_default(),
    )
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn set_sctp_port_keeps_a_good_crc32c_good() {
    let ingress = with_sctp_checksum(hex(SCTP6_IN));
    let flows = || {
        one_table(
            m(&[(Field::EthType, 0x86dd), (Field::IpProto, 132)]),
            vec![set(Field::SctpDst, 6789)],
        )
    };
    let out = egress(flows(), &to_hex(&ingress));
    assert_eq!(out, with_sctp_checksum(hex(SCTP6_OUT)));
    // The checksum bytes the Linux stack would send for this packet.
    assert_eq!(&out[SCTP6_L4 + 8..SCTP6_L4 + 12], &[0x37, 0xc3, 0xfe, 0x86]);
    let src = one_table(
        m(&[(Field::EthType, 0x86dd), (Field::IpProto, 132)]),
        vec![set(Field::SctpSrc, 12345)],
    );
    let out = egress(src, &to_hex(&ingress));
    assert_eq!(&out[SCTP6_L4..SCTP6_L4 + 2], &12345u16.to_be_bytes());
    assert_eq!(Some(stored_sctp(&out)), checksum::sctp(&out[SCTP6_L4..]));
}

#[test]
fn set_sctp_port_keeps_a_bad_crc32c_bad_by_the_same_difference() {
    // os-ken's own (wrong) checksum: the switch must not turn a corrupt packet into a valid one.
    let ingress = hex(SCTP6_IN);
    let error_in = stored_sctp(&ingress) ^ checksum::sctp(&ingress[SCTP6_L4..]).unwrap_or(0);
    assert_ne!(error_in, 0);
    let out = egress(
        one_table(
            m(&[(Field::EthType, 0x86dd), (Field::IpProto, 132)]),
            vec![set(Field::SctpDst, 6789)],
        ),
        SCTP6_IN,
    );
    let error_out = stored_sctp(&out) ^ checksum::sctp(&out[SCTP6_L4..]).unwrap_or(0);
    assert_eq!(error_out, error_in);
}

// ---- pop to below the Ethernet minimum -----------------------------------------------------

#[test]
fn pop_mpls_pads_a_short_frame_to_the_ethernet_minimum() {
    // ethernet/mpls/ipv4/icmp: 54 bytes of headers padded to 60 by the sender; after
    // pop_mpls the frame must again be 60 bytes with zero padding, not 56.
    let ingress = "22222222222212111111111188470006474045200024000000004001db4ac0a80a0ac0a81414080059da000000000123456789abcdef000000000000";
    let icmp_type_0 = "222222222222121111111111080045200024000000004001db4ac0a80a0ac0a81414000061da000000000123456789abcdef00000000000000000000";
    let icmp_code_10 = "222222222222121111111111080045200024000000004001db4ac0a80a0ac0a81414080a59d0000000000123456789abcdef00000000000000000000";
    let flows = after_pop(
        POP_MPLS_V4,
        m(&[
            (Field::EthType, 0x0800),
            (Field::IpProto, 1),
            (Field::Icmpv4Type, 8),
        ]),
        vec![set(Field::Icmpv4Type, 0)],
    );
    assert_eq!(egress(flows, ingress), hex(icmp_type_0));
    let flows = after_pop(
        POP_MPLS_V4,
        m(&[
            (Field::EthType, 0x0800),
            (Field::IpProto, 1),
            (Field::Icmpv4Code, 0),
        ]),
        vec![set(Field::Icmpv4Code, 10)],
    );
    assert_eq!(egress(flows, ingress), hex(icmp_code_10));
}

#[test]
fn pop_vlan_of_a_minimum_frame_stays_at_the_minimum() {
    let tagged = format!("{MACS}{VLAN_TAG}0800{}", &V4_TCP[..40]);
    let mut ingress = hex(&tagged);
    ingress.resize(60, 0);
    let out = egress(
        one_table(FlowMatch::any(), vec![Action::PopVlan]),
        &to_hex(&ingress),
    );
    assert_eq!(out.len(), 60);
    assert_eq!(
        &out[..34],
        &hex(&format!("{MACS}0800{}", &V4_TCP[..40]))[..]
    );
    assert!(out[34..].iter().all(|&b| b == 0));
}

#[test]
fn push_mpls_on_a_non_ip_packet_starts_with_ttl_zero() {
    let arp = "22222222222212111111111108060001080006040001121111111111c0a80a0a222222222222c0a81414000000000000000000000000000000000000";
    let expected = "2222222222221211111111118847000001000001080006040001121111111111c0a80a0a222222222222c0a81414000000000000000000000000000000000000";
    let flows = one_table(
        m(&[(Field::EthType, 0x0806)]),
        vec![Action::PushMpls(0x8847)],
    );
    assert_eq!(egress(flows, arp), hex(expected));
}

// ---- SELECT groups -------------------------------------------------------------------------

fn lcg(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    *state >> 16
}

fn random_bytes<const N: usize>(state: &mut u64) -> [u8; N] {
    let mut out = [0u8; N];
    for b in &mut out {
        *b = lcg(state) as u8;
    }
    out
}

fn bucket(weight: u16, port_no: u32) -> GroupBucket {
    GroupBucket {
        weight,
        watch_port: port::ANY,
        watch_group: GROUP_ANY,
        actions: vec![out(port_no)],
    }
}

/// A switch whose only flow (`in_port=1`, needing no more than L2) sends to SELECT group 0
/// with one bucket per (weight, port). The writer must outlive the reader's use.
fn select_switch(buckets: &[(u16, u32)]) -> (DatapathWriter, DatapathReader) {
    let (mut w, r) = datapath(4);
    let buckets: Vec<_> = buckets.iter().map(|&(wt, p)| bucket(wt, p)).collect();
    let counters = GroupCounters::new(buckets.len());
    w.apply(Op::SetGroup {
        id: 0,
        group: Group {
            kind: GroupType::Select,
            buckets,
            counters,
        },
    });
    add_flow(
        &mut w,
        0,
        1,
        1,
        m(&[(Field::InPort, 1)]),
        vec![apply(vec![Action::Group(0)])],
    );
    w.publish();
    (w, r)
}

/// Frames out of each port for `frames`, sent in batches of 64 like the daemon does.
fn spread(r: &mut DatapathReader, frames: Vec<Vec<u8>>) -> [usize; 5] {
    let mut per_port = [0usize; 5];
    let frames: Vec<_> = frames.into_iter().map(|f| (1, f)).collect();
    for batch in frames.chunks(64) {
        let rec = send(r, 1, batch);
        assert_eq!(rec.out.len(), batch.len(), "every packet leaves once");
        for p in rec.ports() {
            per_port[p as usize] += 1;
        }
    }
    per_port
}

const FLOWS: usize = 1000;

/// The os-ken SELECT test traffic: 1000 flows of IPv4/TCP, IPv6/TCP and ARP frames with
/// random MACs, random IP addresses and ports, or random ARP addresses.
fn random_flows(kind: &str, seed: u64) -> Vec<Vec<u8>> {
    let v4 = hex(&format!("{MACS}0800{V4_TCP}"));
    let v6 = hex(&format!("{MACS}86dd{V6_TCP}"));
    let arp = hex("22222222222212111111111108060001080006040001121111111111c0a80a0a222222222222c0a81414000000000000000000000000000000000000");
    let mut s = seed;
    (0..FLOWS)
        .map(|_| {
            let mut f = match kind {
                "v4 macs" | "v4 addrs" => v4.clone(),
                "v6 macs" | "v6 addrs" => v6.clone(),
                _ => arp.clone(),
            };
            match kind {
                "v4 macs" | "v6 macs" | "arp macs" => {
                    f[..12].copy_from_slice(&random_bytes::<12>(&mut s));
                    f[6] &= 0xfe;
                }
                "v4 addrs" => f[26..38].copy_from_slice(&random_bytes::<12>(&mut s)),
                "v6 addrs" => {
                    f[22..54].copy_from_slice(&random_bytes::<32>(&mut s));
                    f[54..58].copy_from_slice(&random_bytes::<4>(&mut s));
                }
                _ => {
                    f[28..32].copy_from_slice(&random_bytes::<4>(&mut s));
                    f[38..42].copy_from_slice(&random_bytes::<4>(&mut s));
                }
            }
            f
        })
        .collect()
}

const KINDS: [&str; 6] = [
    "v4 macs",
    "v6 macs",
    "arp macs",
    "v4 addrs",
    "v6 addrs",
    "arp addrs",
];

#[test]
fn select_splits_random_flows_evenly_whatever_field_varies() {
    let (_w, mut r) = select_switch(&[(1, 2), (1, 3)]);
    for (i, kind) in KINDS.into_iter().enumerate() {
        let n = spread(&mut r, random_flows(kind, i as u64 + 1));
        let share = n[2] as f64 / FLOWS as f64;
        assert!((0.40..=0.60).contains(&share), "{kind}: port 2 got {share}");
        assert_eq!(n[2] + n[3], FLOWS, "{kind}");
    }
}

#[test]
fn select_follows_weights_one_to_two() {
    let (_w, mut r) = select_switch(&[(1, 2), (2, 3)]);
    for (i, kind) in KINDS.into_iter().enumerate() {
        let n = spread(&mut r, random_flows(kind, 100 + i as u64));
        let share = n[2] as f64 / FLOWS as f64;
        assert!(
            (0.28..=0.39).contains(&share),
            "{kind}: weight 1 of 3 got {share}"
        );
    }
}

#[test]
fn select_weight_zero_takes_no_share_unless_all_are_zero() {
    let (_w, mut r) = select_switch(&[(0, 2), (1, 3), (0, 4)]);
    let n = spread(&mut r, random_flows("v4 addrs", 7));
    assert_eq!(n[3], FLOWS, "weight-0 buckets chosen: {n:?}");

    let (_w, mut r) = select_switch(&[(0, 2), (0, 3)]);
    let n = spread(&mut r, random_flows("v4 addrs", 8));
    let share = n[2] as f64 / FLOWS as f64;
    assert!(
        (0.40..=0.60).contains(&share),
        "unset weights: port 2 got {share}"
    );
}
