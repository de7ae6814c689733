//! Groups (SELECT stability and weights, FAST_FAILOVER liveness, ALL copies, chaining),
//! meters, and InSP packet generation through the pipeline.

mod common;
use common::*;
use dataplane::batch::PacketBatch;
use dataplane::counters::GroupCounters;
use dataplane::datapath::{DatapathReader, DatapathWriter};
use dataplane::ir::{port, Action, Instruction, GROUP_ANY};
use dataplane::key::{Field, FieldValue, FlowMatch};
use dataplane::meter::{flags, Band, BandKind, Meter, MeterConfig};
use dataplane::model::{Group, GroupBucket, GroupType, Op, OpSink, PortInfo};
use dataplane::template::{CopyOp, PacketTemplate};
use std::sync::Arc;

fn bucket(weight: u16, watch_port: u32, watch_group: u32, actions: Vec<Action>) -> GroupBucket {
    GroupBucket {
        weight,
        watch_port,
        watch_group,
        actions,
    }
}

fn group(kind: GroupType, buckets: Vec<GroupBucket>) -> Group {
    let counters = GroupCounters::new(buckets.len());
    Group {
        kind,
        buckets,
        counters,
    }
}

fn to_group(w: &mut DatapathWriter, id: u32) {
    add_flow(
        w,
        0,
        1,
        1,
        FlowMatch::any(),
        vec![apply(vec![Action::Group(id)])],
    );
}

fn flow_pkt(i: u32) -> Vec<u8> {
    udp4(
        0x0a00_0000 | i,
        0x0b00_0001,
        (i % 50_000) as u16,
        80,
        64,
        64,
    )
}

fn port_of(r: &mut DatapathReader, pkt: Vec<u8>) -> Vec<u32> {
    send(r, 1, &[(1, pkt)]).ports()
}

#[test]
fn select_keeps_a_flow_on_one_bucket_and_follows_weights() {
    let (mut w, mut r) = datapath(4);
    w.apply(Op::SetGroup {
        id: 1,
        group: group(
            GroupType::Select,
            vec![
                bucket(1, port::ANY, GROUP_ANY, vec![out(2)]),
                bucket(3, port::ANY, GROUP_ANY, vec![out(3)]),
            ],
        ),
    });
    to_group(&mut w, 1);
    w.publish();
    for i in 0..20 {
        let first = port_of(&mut r, flow_pkt(i));
        for _ in 0..5 {
            assert_eq!(
                port_of(&mut r, flow_pkt(i)),
                first,
                "flow {i} changed bucket"
            );
        }
    }
    let frames: Vec<_> = (0..4000).map(|i| (1, flow_pkt(i))).collect();
    let mut on3 = 0;
    for chunk in frames.chunks(200) {
        on3 += send(&mut r, 1, chunk)
            .ports()
            .iter()
            .filter(|&&p| p == 3)
            .count();
    }
    let share = on3 as f64 / 4000.0;
    assert!((0.70..0.80).contains(&share), "weight 3 of 4 got {share}");
}

#[test]
fn select_skips_dead_buckets() {
    let (mut w, mut r) = datapath(4);
    w.apply(Op::SetGroup {
        id: 1,
        group: group(
            GroupType::Select,
            vec![
                bucket(1, 2, GROUP_ANY, vec![out(2)]),
                bucket(1, 3, GROUP_ANY, vec![out(3)]),
            ],
        ),
    });
    to_group(&mut w, 1);
    w.apply(Op::SetPort {
        port_no: 2,
        counters: w.port_counters(2).unwrap_or_default(),
        info: PortInfo {
            live: false,
            ..PortInfo::default()
        },
    });
    w.publish();
    for i in 0..50 {
        assert_eq!(port_of(&mut r, flow_pkt(i)), vec![3]);
    }
}

#[test]
fn fast_failover_follows_port_and_group_liveness() {
    let (mut w, mut r) = datapath(4);
    w.apply(Op::SetGroup {
        id: 9,
        group: group(
            GroupType::Indirect,
            vec![bucket(0, 4, GROUP_ANY, vec![out(4)])],
        ),
    });
    w.apply(Op::SetGroup {
        id: 9,
        group: group(
            GroupType::FastFailover,
            vec![bucket(0, 4, GROUP_ANY, vec![out(4)])],
        ),
    });
    w.apply(Op::SetGroup {
        id: 1,
        group: group(
            GroupType::FastFailover,
            vec![
                bucket(0, 2, GROUP_ANY, vec![out(2)]),
                bucket(0, port::ANY, 9, vec![out(3)]),
            ],
        ),
    });
    to_group(&mut w, 1);
    w.publish();
    assert_eq!(port_of(&mut r, flow_pkt(1)), vec![2]);
    w.apply(Op::SetPort {
        port_no: 2,
        counters: w.port_counters(2).unwrap_or_default(),
        info: PortInfo {
            live: false,
            ..PortInfo::default()
        },
    });
    w.publish();
    assert_eq!(
        port_of(&mut r, flow_pkt(1)),
        vec![3],
        "first bucket's port died"
    );
    w.apply(Op::SetPort {
        port_no: 4,
        counters: w.port_counters(4).unwrap_or_default(),
        info: PortInfo {
            live: false,
            ..PortInfo::default()
        },
    });
    w.publish();
    assert!(
        port_of(&mut r, flow_pkt(1)).is_empty(),
        "watched group 9 has no live bucket"
    );
    w.apply(Op::SetPort {
        port_no: 2,
        counters: w.port_counters(2).unwrap_or_default(),
        info: PortInfo {
            live: true,
            ..PortInfo::default()
        },
    });
    w.publish();
    assert_eq!(port_of(&mut r, flow_pkt(1)), vec![2]);
}

/// Marks `port_no` live or dead.
fn set_live(w: &mut DatapathWriter, port_no: u32, live: bool) {
    w.apply(Op::SetPort {
        port_no,
        counters: w.port_counters(port_no).unwrap_or_default(),
        info: PortInfo {
            live,
            ..PortInfo::default()
        },
    });
}

#[test]
fn liveness_through_wide_watch_chains_follows_ports_and_removals() {
    // Three fast-failover groups of 1024 buckets each: every bucket of group 1 but the last
    // watches group 2, every bucket of group 2 watches group 3, whose buckets watch port 4.
    // Liveness is judged when ports or groups change, not per packet (judged per packet, a
    // dead chain costs up to 1024^3 port checks a packet); a change deep in the chain must
    // still reach the top.
    let (mut w, mut r) = datapath(4);
    let wide = |watch_port: u32, watch_group: u32, port: u32| {
        let buckets = (0..1024)
            .map(|_| bucket(0, watch_port, watch_group, vec![out(port)]))
            .collect();
        group(GroupType::FastFailover, buckets)
    };
    set_live(&mut w, 4, false);
    w.apply(Op::SetGroup {
        id: 3,
        group: wide(4, GROUP_ANY, 4),
    });
    w.apply(Op::SetGroup {
        id: 2,
        group: wide(port::ANY, 3, 3),
    });
    let mut top = wide(port::ANY, 2, 3);
    top.buckets.push(bucket(0, 2, GROUP_ANY, vec![out(2)]));
    w.apply(Op::SetGroup { id: 1, group: top });
    to_group(&mut w, 1);
    w.publish();
    assert_eq!(
        port_of(&mut r, flow_pkt(1)),
        vec![2],
        "the chain is dead: the last bucket, watching port 2"
    );
    set_live(&mut w, 4, true);
    w.publish();
    assert_eq!(port_of(&mut r, flow_pkt(2)), vec![3], "port 4 came up");
    w.apply(Op::RemoveGroup { id: 3 });
    w.publish();
    assert_eq!(
        port_of(&mut r, flow_pkt(3)),
        vec![2],
        "a removed watched group is dead"
    );
}

#[test]
fn all_clones_per_bucket_chains_and_counts() {
    let (mut w, mut r) = datapath(5);
    w.apply(Op::SetGroup {
        id: 2,
        group: group(
            GroupType::Indirect,
            vec![bucket(
                0,
                port::ANY,
                GROUP_ANY,
                vec![
                    Action::SetField(Field::UdpDst, FieldValue::from(4u16)),
                    out(4),
                ],
            )],
        ),
    });
    let all = group(
        GroupType::All,
        vec![
            bucket(
                0,
                port::ANY,
                GROUP_ANY,
                vec![
                    Action::SetField(Field::UdpDst, FieldValue::from(2u16)),
                    out(2),
                ],
            ),
            bucket(0, port::ANY, GROUP_ANY, vec![out(3)]),
            bucket(0, port::ANY, GROUP_ANY, vec![Action::Group(2)]),
        ],
    );
    let counters = Arc::clone(&all.counters);
    w.apply(Op::SetGroup { id: 1, group: all });
    add_flow(
        &mut w,
        0,
        1,
        1,
        FlowMatch::any(),
        vec![apply(vec![Action::Group(1), out(5)])],
    );
    w.publish();
    let rec = send(&mut r, 1, &[(1, pkt80())]);
    assert_eq!(rec.ports(), vec![2, 3, 4, 5]);
    let dport = |f: &Vec<u8>| u16::from_be_bytes([f[36], f[37]]);
    let dports: Vec<u16> = rec.out.iter().map(|(_, f)| dport(f)).collect();
    assert_eq!(
        dports,
        vec![2, 80, 4, 80],
        "buckets work on copies; the original goes on unchanged"
    );
    assert!(rec.out.iter().all(|(_, f)| checksums_ok(f)));
    assert_eq!(counters.group.packets(), 1);
    assert!(counters.buckets.iter().all(|b| b.packets() == 1));
}

fn pkt80() -> Vec<u8> {
    udp4(0x0a00_0001, 0x0a00_0002, 1000, 80, 64, 64)
}

/// A datapath whose one flow, matching `flow_match`, goes through meter 1 (one band of
/// `kind` at 1000 pkt/s with a burst of 10) and out port 2, published. Keep the writer: the
/// readers lose their snapshot when it is dropped.
fn metered_flow(kind: BandKind, flow_match: FlowMatch) -> (DatapathWriter, DatapathReader) {
    let (mut w, r) = datapath(4);
    let config = MeterConfig {
        flags: flags::PKTPS | flags::BURST,
        bands: vec![Band {
            kind,
            rate: 1000,
            burst: 10,
        }],
    };
    w.apply(Op::SetMeter {
        id: 1,
        meter: Arc::new(Meter::new(config)),
    });
    add_flow(
        &mut w,
        0,
        1,
        1,
        flow_match,
        vec![Instruction::Meter(1), apply(vec![out(2)])],
    );
    w.publish();
    (w, r)
}

#[test]
fn meter_drop_band_limits_the_rate() {
    let (_writer, mut r) = metered_flow(BandKind::Drop, FlowMatch::any());
    // 200 packets at one instant: only the burst passes.
    let burst: Vec<_> = (0..200).map(|_| (1, pkt80())).collect();
    let passed: usize = burst
        .chunks(50)
        .map(|c| send(&mut r, 1_000_000, c).out.len())
        .sum();
    assert!((9..=11).contains(&passed), "burst passed {passed}");
    // One second later at 1000 pkt/s the bucket is full again (burst 10), not 1000.
    let passed: usize = burst
        .chunks(50)
        .map(|c| send(&mut r, 1_001_000_000, c).out.len())
        .sum();
    assert!((9..=11).contains(&passed), "after refill passed {passed}");
    // Spread over time at half the rate, everything passes.
    let mut ok = 0;
    for i in 0..100u64 {
        ok += send(&mut r, 2_000_000_000 + i * 2_000_000, &[(1, pkt80())])
            .out
            .len();
    }
    assert_eq!(ok, 100);
}

/// A template answering the trigger: destination MAC = trigger's source MAC.
fn echo_template() -> PacketTemplate {
    let mut bytes = udp4(0xc0a8_0001, 0xc0a8_0002, 7, 7, 64, 64);
    bytes[0..6].fill(0);
    PacketTemplate::new(
        bytes,
        vec![CopyOp {
            src_offset: 6,
            dst_offset: 0,
            len: 6,
        }],
        vec![],
    )
    .expect("valid template")
}

#[test]
fn insp_generates_a_packet_and_the_trigger_continues() {
    let (mut w, mut r) = datapath(4);
    w.apply(Op::SetTemplate {
        id: 5,
        template: Arc::new(echo_template()),
    });
    add_flow(
        &mut w,
        0,
        1,
        1,
        FlowMatch::any(),
        vec![
            Instruction::Insp {
                template_id: 5,
                actions: vec![out(port::IN_PORT)],
            },
            apply(vec![out(2)]),
        ],
    );
    w.publish();
    let rec = send(&mut r, 1, &[(3, pkt80())]);
    // InSP runs after Apply-Actions (it sees the packet as they left it).
    assert_eq!(rec.ports(), vec![2, 3]);
    assert_eq!(rec.out[0].1, pkt80());
    assert_eq!(
        &rec.out[1].1[0..6],
        &MAC_A,
        "trigger's source MAC copied into the new packet"
    );
}

#[test]
fn insp_output_table_reenters_the_pipeline() {
    let (mut w, mut r) = datapath(4);
    w.apply(Op::SetTemplate {
        id: 5,
        template: Arc::new(echo_template()),
    });
    // The generated packet has source 192.168.0.1; the trigger does not.
    add_flow(
        &mut w,
        0,
        1,
        10,
        m(&[(Field::EthType, 0x0800), (Field::Ipv4Src, 0xc0a8_0001)]),
        vec![apply(vec![out(4)])],
    );
    add_flow(
        &mut w,
        0,
        2,
        1,
        FlowMatch::any(),
        vec![Instruction::Insp {
            template_id: 5,
            actions: vec![out(port::TABLE)],
        }],
    );
    w.publish();
    let rec = send(&mut r, 1, &[(1, pkt80())]);
    assert_eq!(rec.ports(), vec![4]);
}

#[test]
fn insp_with_a_missing_template_generates_nothing() {
    let (mut w, mut r) = datapath(4);
    add_flow(
        &mut w,
        0,
        1,
        1,
        FlowMatch::any(),
        vec![
            Instruction::Insp {
                template_id: 77,
                actions: vec![out(3)],
            },
            apply(vec![out(2)]),
        ],
    );
    w.publish();
    assert_eq!(send(&mut r, 1, &[(1, pkt80())]).ports(), vec![2]);
    assert_eq!(
        r.shared()
            .drops
            .insp_failed
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}

#[test]
fn a_timer_generates_without_a_trigger_into_ports_or_the_pipeline() {
    let (mut w, mut r) = datapath(4);
    let bytes = udp4(0xc0a8_0001, 0xc0a8_0002, 7, 7, 64, 64);
    let standalone = PacketTemplate::new(bytes.clone(), vec![], vec![]).expect("valid");
    w.apply(Op::SetTemplate {
        id: 6,
        template: Arc::new(standalone),
    });
    w.apply(Op::SetTemplate {
        id: 5,
        template: Arc::new(echo_template()),
    });
    add_flow(
        &mut w,
        0,
        1,
        10,
        m(&[(Field::EthType, 0x0800), (Field::Ipv4Src, 0xc0a8_0001)]),
        vec![apply(vec![out(port::IN_PORT), out(4)])],
    );
    w.publish();
    let mut rec = Recorder::default();
    r.generate(0, 6, 2, &[out(3)], &mut rec);
    assert_eq!(
        rec.out,
        [(3, bytes.clone())],
        "the template's bytes, out of port 3"
    );
    // Into the pipeline as if received on port 2: the flow sends it back and to port 4.
    let mut rec = Recorder::default();
    r.generate(0, 6, 2, &[out(port::TABLE)], &mut rec);
    assert_eq!(rec.ports(), vec![2, 4]);
    // A template that copies from a trigger, or one that is gone, generates nothing.
    let mut rec = Recorder::default();
    r.generate(0, 5, 2, &[out(3)], &mut rec);
    r.generate(0, 77, 2, &[out(3)], &mut rec);
    assert!(rec.out.is_empty());
    let failed = r
        .shared()
        .drops
        .insp_failed
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(failed, 2);
}

#[test]
fn normal_floods_unknown_then_forwards_learned_never_to_ingress() {
    let (mut w, mut r) = datapath(4);
    add_flow(
        &mut w,
        0,
        1,
        1,
        FlowMatch::any(),
        vec![apply(vec![out(port::NORMAL)])],
    );
    w.publish();
    // MAC_A (source of udp4 frames) on port 1 talks to MAC_B: unknown, flooded.
    assert_eq!(send(&mut r, 1, &[(1, pkt80())]).ports(), vec![2, 3, 4]);
    // A reply from MAC_B on port 3 goes straight to port 1 where MAC_A was learned.
    let mut reply = pkt80();
    reply[0..6].copy_from_slice(&MAC_A);
    reply[6..12].copy_from_slice(&MAC_B);
    assert_eq!(send(&mut r, 2, &[(3, reply)]).ports(), vec![1]);
    assert_eq!(send(&mut r, 3, &[(1, pkt80())]).ports(), vec![3]);
}

#[test]
fn standalone_normal_bypasses_the_tables_and_counts_ports() {
    let (mut w, mut r) = datapath(4);
    // A drop-everything table: process_normal must not consult it.
    add_flow(&mut w, 0, 1, 1, FlowMatch::any(), vec![]);
    w.publish();
    let normal = |r: &mut DatapathReader, frames: &[(u32, Vec<u8>)]| {
        let mut batch = PacketBatch::new(frames.len(), 2048);
        for (p, f) in frames {
            assert!(batch.push(*p, f));
        }
        let mut rec = Recorder::default();
        r.process_normal(1, &mut batch, &mut rec);
        assert!(batch.is_empty());
        rec
    };
    assert_eq!(normal(&mut r, &[(1, pkt80())]).ports(), vec![2, 3, 4]);
    let mut reply = pkt80();
    reply[0..6].copy_from_slice(&MAC_A);
    reply[6..12].copy_from_slice(&MAC_B);
    assert_eq!(normal(&mut r, &[(3, reply)]).ports(), vec![1]);
    // A truncated frame is counted as received and as malformed, and forwarded nowhere.
    assert!(normal(&mut r, &[(2, vec![0u8; 10])]).out.is_empty());
    let rx = |p: u32| w.port_counters(p).unwrap().rx.packets();
    assert_eq!((rx(1), rx(2), rx(3)), (1, 1, 1));
    assert_eq!(w.port_counters(1).unwrap().tx.packets(), 1);
    assert_eq!(r.parse_stats().malformed(), 1);
    // The tables were never consulted: a normal `process` still drops.
    assert!(send(&mut r, 2, &[(1, pkt80())]).out.is_empty());
}

/// An IPv4/UDP frame with DSCP AF21 (18) and a correct header checksum.
fn af21_frame() -> Vec<u8> {
    let mut p = pkt80();
    p[15] = 18 << 2;
    p[24] = 0;
    p[25] = 0;
    let sum: u32 = p[14..34]
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    let folded = (sum & 0xffff) + (sum >> 16);
    let checksum = !(((folded & 0xffff) + (folded >> 16)) as u16);
    p[24..26].copy_from_slice(&checksum.to_be_bytes());
    p
}

#[test]
fn dscp_remark_band_raises_drop_precedence_when_tables_match_only_l2() {
    // A match on in_port only: the pipeline parses no deeper than L2 for its tables.
    let (_writer, mut r) = metered_flow(
        BandKind::DscpRemark { prec_level: 1 },
        m(&[(Field::InPort, 1)]),
    );
    let burst: Vec<_> = (0..200).map(|_| (1, af21_frame())).collect();
    let outputs: Vec<(u32, Vec<u8>)> = burst
        .chunks(50)
        .flat_map(|c| send(&mut r, 1_000_000, c).out)
        .collect();
    assert_eq!(outputs.len(), 200, "a remark band drops nothing");
    let remarked = outputs.iter().filter(|(_, f)| f[15] >> 2 == 20).count();
    let kept = outputs.iter().filter(|(_, f)| f[15] >> 2 == 18).count();
    assert!((9..=11).contains(&kept), "within the burst: {kept}");
    assert_eq!(remarked + kept, 200, "AF21 becomes AF22, nothing else");
    assert!(outputs.iter().all(|(_, f)| checksums_ok(f)));
}

#[test]
fn the_controller_meter_limits_packet_ins_and_nothing_else() {
    let (mut w, mut r) = datapath(4);
    w.apply(Op::SetMeter {
        id: dataplane::meter::CONTROLLER,
        meter: Arc::new(Meter::new(MeterConfig {
            flags: flags::PKTPS | flags::BURST,
            bands: vec![Band {
                kind: BandKind::Drop,
                rate: 100,
                burst: 5,
            }],
        })),
    });
    let udp_to = |dport: u16| udp4(0x0a00_0001, 0x0a00_0002, 1000, dport, 64, 64);
    // Port 80 is forwarded; everything else misses to the controller.
    add_flow(
        &mut w,
        0,
        1,
        10,
        m(&[
            (Field::EthType, 0x0800),
            (Field::IpProto, 17),
            (Field::UdpDst, 80),
        ]),
        vec![apply(vec![out(2)])],
    );
    add_flow(
        &mut w,
        0,
        2,
        0,
        FlowMatch::any(),
        vec![apply(vec![out(port::CONTROLLER)])],
    );
    w.publish();
    let storm: Vec<_> = (0..200).map(|i| (1, udp_to(1000 + i))).collect();
    let forwarded: Vec<_> = (0..200).map(|_| (1, udp_to(80))).collect();
    let mut packet_ins = 0;
    let mut out = 0;
    for (misses, hits) in storm.chunks(50).zip(forwarded.chunks(50)) {
        packet_ins += send(&mut r, 1_000_000, misses).pin.len();
        out += send(&mut r, 1_000_000, hits).out.len();
    }
    assert_eq!(packet_ins, 5, "only the burst goes to the controller");
    assert_eq!(out, 200, "matching traffic is not metered");
    // A tenth of a second later at 100 pkt/s: the burst again (5), not 10.
    let later = send(&mut r, 101_000_000, &storm[..50]).pin.len();
    assert_eq!(later, 5);
}
