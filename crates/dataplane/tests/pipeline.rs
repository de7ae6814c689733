//! The OpenFlow 1.3 pipeline against the spec: instructions, the action set, outputs,
//! table-miss, TTL, packet-in/out, counters, and the publish barrier.

mod common;
use common::*;
use dataplane::batch::{PacketInReason, NO_BUFFER};
use dataplane::datapath::{DatapathReader, DatapathWriter};
use dataplane::ir::{port, Action, Instruction};
use dataplane::isa::Isa;
use dataplane::key::{Field, FieldValue, FlowMatch};
use dataplane::model::{FlowId, Op, OpSink, PortAdmin, PortInfo, SwitchFlags};
use std::sync::atomic::Ordering::Relaxed;

const SRC: u32 = 0x0a00_0001;
const DST: u32 = 0x0a00_0002;

fn pkt() -> Vec<u8> {
    udp4(SRC, DST, 1000, 2000, 64, 64)
}

#[test]
fn action_set_runs_in_spec_order_whatever_the_write_order() {
    let (mut w, mut r) = datapath(4);
    // Written "backwards": output first, push-vlan last. Spec order: push VLAN, dec TTL,
    // set-field, output.
    add_flow(
        &mut w,
        0,
        1,
        10,
        FlowMatch::any(),
        vec![Instruction::WriteActions(vec![
            out(2),
            Action::SetField(Field::Ipv4Dst, FieldValue::from(0x0b00_0009u32)),
            Action::DecNwTtl,
            Action::SetField(Field::VlanVid, FieldValue::from(0x1000u16 | 42)),
            Action::PushVlan(0x8100),
        ])],
    );
    w.publish();
    let rec = send(&mut r, 1, &[(1, pkt())]);
    assert_eq!(rec.ports(), vec![2]);
    let f = &rec.out[0].1;
    assert_eq!(f.len(), 68);
    assert_eq!(&f[12..14], &[0x81, 0x00]);
    // VID set after the push (set comes after push in the action set).
    assert_eq!(u16::from_be_bytes([f[14], f[15]]) & 0xfff, 42);
    assert_eq!(f[18 + 8], 63, "TTL decremented");
    assert_eq!(&f[18 + 16..18 + 20], &0x0b00_0009u32.to_be_bytes());
    assert!(checksums_ok(f), "incremental checksums are valid");
}

#[test]
fn action_sets_follow_write_actions_as_flows_come_and_go() {
    // The pipeline only keeps action sets while some flow writes one; a set written for an
    // earlier packet must never run for a later one.
    let (mut w, mut r) = datapath(4);
    let write_goto = |port| {
        vec![
            Instruction::WriteActions(vec![out(port)]),
            Instruction::GotoTable(1),
        ]
    };
    let replace = |w: &mut DatapathWriter, table, id, instructions: Vec<Instruction>| {
        w.apply(Op::ReplaceInstructions {
            table,
            id: FlowId(id),
            instructions: instructions.into(),
        });
        w.publish();
    };
    let ports = |r: &mut dataplane::datapath::DatapathReader| send(r, 1, &[(1, pkt())]).ports();
    add_flow(&mut w, 0, 1, 10, FlowMatch::any(), write_goto(2));
    add_flow(&mut w, 1, 2, 0, FlowMatch::any(), vec![apply(vec![])]);
    w.publish();
    assert_eq!(
        ports(&mut r),
        [2],
        "the set runs at the end of the pipeline"
    );
    replace(&mut w, 0, 1, vec![Instruction::GotoTable(1)]);
    assert_eq!(
        ports(&mut r),
        [] as [u32; 0],
        "no flow writes: nothing left from before"
    );
    replace(&mut w, 0, 1, write_goto(3));
    assert_eq!(ports(&mut r), [3]);
    let write = |port| vec![Instruction::WriteActions(vec![out(port)])];
    add_flow(&mut w, 1, 3, 5, FlowMatch::any(), write(4));
    w.publish();
    assert_eq!(ports(&mut r), [4], "the later write replaces the output");
    remove(&mut w, 0, 1);
    add_flow(
        &mut w,
        0,
        5,
        10,
        FlowMatch::any(),
        vec![Instruction::GotoTable(1)],
    );
    w.publish();
    assert_eq!(ports(&mut r), [4], "a flow of table 1 still writes");
    remove(&mut w, 1, 3);
    assert_eq!(ports(&mut r), [] as [u32; 0]);
    add_flow(&mut w, 1, 2, 0, FlowMatch::any(), write(2));
    w.publish();
    assert_eq!(ports(&mut r), [2], "a flow replaced by one that writes");
    add_flow(&mut w, 1, 2, 0, FlowMatch::any(), vec![apply(vec![])]);
    w.publish();
    assert_eq!(ports(&mut r), [] as [u32; 0], "and back");
}

fn remove(w: &mut DatapathWriter, table: u8, id: u64) {
    w.apply(Op::RemoveFlow {
        table,
        id: FlowId(id),
    });
    w.publish();
}

#[test]
fn apply_actions_run_in_list_order_and_output_the_packet_as_it_is_then() {
    let (mut w, mut r) = datapath(4);
    add_flow(
        &mut w,
        0,
        1,
        10,
        FlowMatch::any(),
        vec![apply(vec![
            out(2),
            Action::SetField(Field::UdpDst, FieldValue::from(53u16)),
            out(3),
        ])],
    );
    w.publish();
    let rec = send(&mut r, 1, &[(1, pkt())]);
    assert_eq!(rec.ports(), vec![2, 3]);
    assert_eq!(&rec.out[0].1[36..38], &2000u16.to_be_bytes());
    assert_eq!(&rec.out[1].1[36..38], &53u16.to_be_bytes());
    assert!(checksums_ok(&rec.out[1].1));
}

#[test]
fn clear_actions_empties_the_set_and_group_overrides_output() {
    let (mut w, mut r) = datapath(4);
    add_flow(
        &mut w,
        0,
        1,
        10,
        FlowMatch::any(),
        vec![
            Instruction::WriteActions(vec![out(2)]),
            Instruction::GotoTable(1),
        ],
    );
    add_flow(
        &mut w,
        1,
        2,
        10,
        FlowMatch::any(),
        vec![
            Instruction::ClearActions,
            Instruction::WriteActions(vec![out(3)]),
        ],
    );
    w.publish();
    assert_eq!(send(&mut r, 1, &[(1, pkt())]).ports(), vec![3]);

    w.apply(Op::SetGroup {
        id: 7,
        group: indirect(4),
    });
    add_flow(
        &mut w,
        1,
        2,
        10,
        FlowMatch::any(),
        vec![Instruction::WriteActions(vec![out(3), Action::Group(7)])],
    );
    w.publish();
    assert_eq!(
        send(&mut r, 1, &[(1, pkt())]).ports(),
        vec![4],
        "output is ignored when a group is in the set"
    );
}

fn indirect(p: u32) -> dataplane::model::Group {
    dataplane::model::Group {
        kind: dataplane::model::GroupType::Indirect,
        buckets: vec![dataplane::model::GroupBucket {
            weight: 0,
            watch_port: port::ANY,
            watch_group: dataplane::ir::GROUP_ANY,
            actions: vec![out(p)],
        }],
        counters: dataplane::counters::GroupCounters::new(1),
    }
}

#[test]
fn every_packet_of_a_large_batch_is_processed_in_order() {
    // The pipeline works in windows of 256 packets; batches at, around and across that size.
    let (mut w, mut r) = datapath(2);
    add_flow(&mut w, 0, 1, 1, FlowMatch::any(), vec![apply(vec![out(2)])]);
    w.publish();
    for n in [255, 256, 257, 300, 512, 513] {
        let frames: Vec<(u32, Vec<u8>)> = (0..n)
            .map(|i| (1, udp4(SRC, DST, i as u16, 2000, 64, 64)))
            .collect();
        let rec = send(&mut r, 1, &frames);
        let sent: Vec<_> = frames.into_iter().map(|(_, f)| (2, f)).collect();
        assert_eq!(rec.out, sent, "batch of {n}");
    }
}

#[test]
fn every_instruction_set_copy_of_the_pipeline_forwards_alike() {
    // Table 0 sends port 1 on to table 1 and port 2 to table 2; table 1 holds exact
    // destinations (a hash probe) and table 2 routes (longest prefix match), each above a
    // catch-all.
    let (mut w, f) = datapath_readers(4);
    let goto = |t| vec![Instruction::GotoTable(t)];
    add_flow(&mut w, 0, 1, 1, m(&[(Field::InPort, 1)]), goto(1));
    add_flow(&mut w, 0, 4, 1, m(&[(Field::InPort, 2)]), goto(2));
    add_flow(&mut w, 1, 2, 0, FlowMatch::any(), goto(2));
    add_flow(&mut w, 2, 3, 0, FlowMatch::any(), vec![apply(vec![out(4)])]);
    for i in 0..64u32 {
        let dst = m(&[
            (Field::EthType, 0x0800),
            (Field::Ipv4Dst, u128::from(DST + i)),
        ]);
        let rewrite = Action::SetField(Field::EthDst, FieldValue(u128::from(i)));
        add_flow(
            &mut w,
            1,
            100 + u64::from(i),
            5,
            dst,
            vec![apply(vec![rewrite, out(2)])],
        );
        let mut route = m(&[(Field::EthType, 0x0800)]);
        let prefix = FieldValue::from(0x0c00_0000 | (i << 16));
        route.set(
            Field::Ipv4Dst,
            prefix,
            Some(FieldValue::from(0xffff_0000u32)),
        );
        add_flow(
            &mut w,
            2,
            200 + u64::from(i),
            16,
            route,
            vec![apply(vec![out(3)])],
        );
    }
    w.publish();
    let frames: Vec<(u32, Vec<u8>)> = (0..300u32)
        .map(|i| {
            let dst = match i % 3 {
                0 => DST + i % 80,
                1 => 0x0c00_0000 | ((i % 70) << 16) | i,
                _ => 0x0d00_0000 | i,
            };
            (1 + i % 2, udp4(SRC, dst, i as u16, 53, 64, 64))
        })
        .collect();
    let mut baseline = f.reader();
    baseline.set_isa(Isa::Baseline);
    let mut best = f.reader();
    best.set_isa(Isa::detect());
    let expected = send(&mut baseline, 1, &frames);
    assert_eq!(expected.out.len(), frames.len(), "every frame is forwarded");
    let mut ports = expected.ports();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(
        ports,
        [2, 3, 4],
        "through each of the tables' kinds of entry"
    );
    assert_eq!(
        send(&mut best, 1, &frames).out,
        expected.out,
        "{:?}",
        best.isa()
    );
}

#[test]
fn priorities_and_overlapping_matches() {
    let (mut w, mut r) = datapath(4);
    add_flow(&mut w, 0, 1, 1, FlowMatch::any(), vec![apply(vec![out(2)])]);
    add_flow(
        &mut w,
        0,
        2,
        100,
        m(&[
            (Field::EthType, 0x0800),
            (Field::UdpDst, 2000),
            (Field::IpProto, 17),
        ]),
        vec![apply(vec![out(3)])],
    );
    let mut pfx = m(&[(Field::EthType, 0x0800)]);
    pfx.set(
        Field::Ipv4Dst,
        FieldValue::from(DST),
        Some(FieldValue::from(0xffff_ff00u32)),
    );
    add_flow(&mut w, 0, 3, 50, pfx, vec![apply(vec![out(4)])]);
    w.publish();
    let rec = send(
        &mut r,
        1,
        &[
            (1, pkt()),
            (1, udp4(SRC, DST, 1, 9, 64, 64)),
            (1, udp4(SRC, 0x0c00_0000, 1, 9, 64, 64)),
        ],
    );
    assert_eq!(rec.ports(), vec![3, 4, 2]);
}

#[test]
fn goto_and_metadata_reach_later_tables() {
    let (mut w, mut r) = datapath(4);
    add_flow(
        &mut w,
        0,
        1,
        1,
        FlowMatch::any(),
        vec![
            Instruction::WriteMetadata {
                value: 0xab00,
                mask: 0xff00,
            },
            Instruction::GotoTable(5),
        ],
    );
    add_flow(
        &mut w,
        5,
        2,
        1,
        m(&[(Field::Metadata, 0xab00)]),
        vec![apply(vec![out(2)])],
    );
    add_flow(&mut w, 5, 3, 0, FlowMatch::any(), vec![apply(vec![out(3)])]);
    w.publish();
    assert_eq!(send(&mut r, 1, &[(1, pkt())]).ports(), vec![2]);
}

#[test]
fn table_miss_drops_without_an_entry_and_reports_no_match_with_one() {
    let (mut w, mut r) = datapath(4);
    w.publish();
    let rec = send(&mut r, 1, &[(1, pkt())]);
    assert!(rec.out.is_empty() && rec.pin.is_empty());
    assert_eq!(
        r.shared()
            .drops
            .no_match
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );

    add_flow(
        &mut w,
        0,
        9,
        0,
        FlowMatch::any(),
        vec![apply(vec![Action::Output {
            port: port::CONTROLLER,
            max_len: 32,
        }])],
    );
    w.publish();
    let rec = send(&mut r, 1, &[(1, pkt())]);
    let pin = &rec.pin[0];
    assert_eq!(
        (
            pin.reason,
            pin.cookie,
            pin.table_id,
            pin.in_port,
            pin.total_len
        ),
        (PacketInReason::NoMatch, 9, 0, 1, 64)
    );
    assert_eq!(pin.data.len(), 32, "buffered: only max_len bytes sent");
    assert_ne!(pin.buffer_id, NO_BUFFER);
    let stored = r
        .shared()
        .buffers
        .take(pin.buffer_id)
        .expect("buffered packet");
    assert_eq!(stored, (1, pkt()));
}

#[test]
fn controller_action_with_no_buffer_sends_everything() {
    let (mut w, mut r) = datapath(4);
    add_flow(
        &mut w,
        0,
        1,
        5,
        FlowMatch::any(),
        vec![apply(vec![Action::Output {
            port: port::CONTROLLER,
            max_len: 0xffff,
        }])],
    );
    w.publish();
    let rec = send(&mut r, 1, &[(1, pkt())]);
    assert_eq!(
        (
            rec.pin[0].reason,
            rec.pin[0].buffer_id,
            rec.pin[0].data.len()
        ),
        (PacketInReason::Action, NO_BUFFER, 64)
    );
}

#[test]
fn flood_and_all_never_return_to_the_ingress_port() {
    let (mut w, mut r) = datapath(4);
    w.apply(Op::SetPort {
        port_no: 4,
        counters: w.port_counters(4).unwrap_or_default(),
        info: PortInfo {
            live: true,
            config: PortAdmin {
                no_fwd: true,
                ..PortAdmin::default()
            },
            vlan_mode: None,
        },
    });
    add_flow(
        &mut w,
        0,
        1,
        5,
        m(&[(Field::InPort, 1)]),
        vec![apply(vec![out(port::FLOOD)])],
    );
    add_flow(
        &mut w,
        0,
        2,
        5,
        m(&[(Field::InPort, 2)]),
        vec![apply(vec![out(port::ALL)])],
    );
    add_flow(
        &mut w,
        0,
        3,
        5,
        m(&[(Field::InPort, 3)]),
        vec![apply(vec![out(3), out(port::IN_PORT)])],
    );
    w.publish();
    assert_eq!(send(&mut r, 1, &[(1, pkt())]).ports(), vec![2, 3]);
    assert_eq!(send(&mut r, 1, &[(2, pkt())]).ports(), vec![1, 3]);
    assert_eq!(
        send(&mut r, 1, &[(3, pkt())]).ports(),
        vec![3],
        "explicit out to in_port is dropped, IN_PORT is not"
    );
}

#[test]
fn ip_ttl_matches_what_the_packet_carries_after_earlier_decrements() {
    let (mut w, mut r) = datapath(4);
    let ipv4 = (Field::EthType, 0x0800);
    // Table 0: TTL 1 to port 4 (the router's expiry), else decrement and go on; table 1 sees
    // the decremented TTL.
    add_flow(
        &mut w,
        0,
        1,
        20,
        m(&[ipv4, (Field::IpTtl, 1)]),
        vec![apply(vec![out(4)])],
    );
    add_flow(
        &mut w,
        0,
        2,
        10,
        m(&[ipv4]),
        vec![apply(vec![Action::DecNwTtl]), Instruction::GotoTable(1)],
    );
    add_flow(
        &mut w,
        1,
        3,
        20,
        m(&[ipv4, (Field::IpTtl, 63)]),
        vec![apply(vec![out(2)])],
    );
    add_flow(&mut w, 1, 4, 10, m(&[ipv4]), vec![apply(vec![out(3)])]);
    w.publish();
    let rec = send(
        &mut r,
        1,
        &[
            (1, udp4(SRC, DST, 1, 2, 1, 64)),
            (1, udp4(SRC, DST, 1, 2, 64, 64)),
            (1, udp4(SRC, DST, 1, 2, 9, 64)),
        ],
    );
    assert_eq!(rec.ports(), vec![4, 2, 3]);
    assert_eq!(rec.out[1].1[22], 63, "the decrement reached the packet too");
}

#[test]
fn ttl_expiry_goes_to_the_controller_only_when_configured() {
    let (mut w, mut r) = datapath(4);
    add_flow(
        &mut w,
        0,
        1,
        5,
        FlowMatch::any(),
        vec![apply(vec![Action::DecNwTtl, out(2)])],
    );
    w.publish();
    let expiring = udp4(SRC, DST, 1, 2, 1, 64);
    let rec = send(&mut r, 1, &[(1, expiring.clone())]);
    assert!(rec.out.is_empty() && rec.pin.is_empty());
    w.apply(Op::SetSwitchFlags(SwitchFlags {
        miss_send_len: 128,
        invalid_ttl_to_controller: true,
        frag: Default::default(),
    }));
    w.publish();
    let rec = send(&mut r, 1, &[(1, expiring), (1, pkt())]);
    assert_eq!(rec.pin.len(), 1);
    assert_eq!(rec.pin[0].reason, PacketInReason::InvalidTtl);
    assert_eq!(rec.ports(), vec![2]);
}

#[test]
fn packet_out_outputs_and_table_runs_the_pipeline() {
    let (mut w, mut r) = datapath(4);
    add_flow(
        &mut w,
        0,
        1,
        5,
        m(&[(Field::InPort, 2)]),
        vec![apply(vec![out(3)])],
    );
    w.publish();
    let mut rec = Recorder::default();
    r.packet_out(1, port::CONTROLLER, &[out(1), out(4)], &pkt(), &mut rec);
    assert_eq!(rec.ports(), vec![1, 4]);
    let mut rec = Recorder::default();
    r.packet_out(1, 2, &[out(port::TABLE)], &pkt(), &mut rec);
    assert_eq!(rec.ports(), vec![3]);
}

#[test]
fn counters_count_flows_tables_and_ports() {
    let (mut w, mut r) = datapath(4);
    let c = add_flow(&mut w, 0, 1, 5, FlowMatch::any(), vec![apply(vec![out(2)])]);
    w.publish();
    send(
        &mut r,
        77,
        &[(1, pkt()), (1, pkt()), (3, udp4(SRC, DST, 1, 2, 64, 100))],
    );
    assert_eq!((c.packets(), c.bytes(), c.last_active_ns(80)), (3, 228, 80));
    assert_eq!(table_counts(&r, 0), (3, 3));
    let p2 = w.port_counters(2).unwrap();
    assert_eq!((p2.tx.packets(), p2.tx.bytes()), (3, 228));
    assert_eq!(w.port_counters(1).unwrap().rx.packets(), 2);
}

#[test]
fn outputs_are_counted_as_each_port_stands_at_the_time() {
    let (mut w, mut r) = datapath(2);
    let set_port = |w: &mut DatapathWriter, port_no: u32, down: bool| {
        w.apply(Op::SetPort {
            port_no,
            counters: w.port_counters(port_no).unwrap_or_default(),
            info: PortInfo {
                live: true,
                config: PortAdmin {
                    down,
                    ..PortAdmin::default()
                },
                vlan_mode: None,
            },
        });
    };
    // A port numbered beyond the densely indexed range, and port 7 that does not exist.
    set_port(&mut w, 70_000, false);
    add_flow(
        &mut w,
        0,
        1,
        5,
        FlowMatch::any(),
        vec![apply(vec![out(2), out(70_000), out(7)])],
    );
    w.publish();
    let tx = |w: &DatapathWriter, p: u32| {
        let c = w.port_counters(p).unwrap();
        (c.tx.packets(), c.tx_dropped.packets())
    };
    let dropped = |w: &DatapathWriter| w.shared().drops.other.load(Relaxed);
    let before = dropped(&w);
    assert_eq!(send(&mut r, 1, &[(1, pkt())]).ports(), vec![2, 70_000]);
    assert_eq!((tx(&w, 2), tx(&w, 70_000)), ((1, 0), (1, 0)));
    assert_eq!(dropped(&w) - before, 1, "the output to the missing port");

    set_port(&mut w, 2, true);
    w.publish();
    assert_eq!(send(&mut r, 1, &[(1, pkt())]).ports(), vec![70_000]);
    assert_eq!((tx(&w, 2), tx(&w, 70_000)), ((1, 1), (2, 0)));

    set_port(&mut w, 2, false);
    w.apply(Op::RemovePort { port_no: 70_000 });
    w.publish();
    assert_eq!(send(&mut r, 1, &[(1, pkt())]).ports(), vec![2]);
    assert_eq!(tx(&w, 2), (2, 1));
    assert_eq!(
        dropped(&w) - before,
        4,
        "port 7 three times, the removed port once"
    );
}

#[test]
fn ops_are_invisible_until_publish() {
    let (mut w, mut r) = datapath(4);
    add_flow(&mut w, 0, 1, 5, FlowMatch::any(), vec![apply(vec![out(2)])]);
    assert!(send(&mut r, 1, &[(1, pkt())]).out.is_empty());
    w.publish();
    assert_eq!(send(&mut r, 1, &[(1, pkt())]).ports(), vec![2]);
    w.apply(Op::ReplaceInstructions {
        table: 0,
        id: FlowId(1),
        instructions: vec![apply(vec![out(3)])].into(),
    });
    w.publish();
    assert_eq!(send(&mut r, 1, &[(1, pkt())]).ports(), vec![3]);
    w.apply(Op::RemoveFlow {
        table: 0,
        id: FlowId(1),
    });
    w.publish();
    assert!(send(&mut r, 1, &[(1, pkt())]).out.is_empty());
}

#[test]
fn push_pop_mpls_and_pbb_round_trip() {
    let (mut w, mut r) = datapath(4);
    add_flow(
        &mut w,
        0,
        1,
        5,
        m(&[(Field::InPort, 1)]),
        vec![apply(vec![
            Action::PushMpls(0x8847),
            Action::SetField(Field::MplsLabel, FieldValue::from(777u32)),
            Action::CopyTtlOut,
            Action::DecMplsTtl,
            out(2),
            Action::PopMpls(0x0800),
            Action::PushPbb(0x88e7),
            Action::SetField(Field::PbbIsid, FieldValue::from(0xabcdefu32)),
            out(3),
            Action::PopPbb,
            out(4),
        ])],
    );
    w.publish();
    let rec = send(&mut r, 1, &[(1, pkt())]);
    assert_eq!(rec.ports(), vec![2, 3, 4]);
    let mpls = &rec.out[0].1;
    assert_eq!(&mpls[12..14], &[0x88, 0x47]);
    let lse = u32::from_be_bytes(mpls[14..18].try_into().unwrap());
    assert_eq!((lse >> 12, (lse >> 8) & 1, lse & 0xff), (777, 1, 63));
    let pbb = &rec.out[1].1;
    assert_eq!(
        (&pbb[12..14], &pbb[15..18]),
        (&[0x88, 0xe7][..], &[0xab, 0xcd, 0xef][..])
    );
    assert_eq!(&pbb[18..], &pkt()[..]);
    assert_eq!(rec.out[2].1, pkt());
}

#[test]
fn set_queue_reaches_the_sink() {
    let (mut w, mut r) = datapath(4);
    add_flow(
        &mut w,
        0,
        1,
        5,
        FlowMatch::any(),
        vec![apply(vec![Action::SetQueue(3), out(2)])],
    );
    w.publish();
    let rec = send(&mut r, 1, &[(1, pkt())]);
    assert_eq!(rec.queued, vec![(2, 3)]);
}

#[test]
fn malformed_packets_are_counted_and_dropped() {
    let (mut w, mut r) = datapath(4);
    add_flow(&mut w, 0, 1, 5, FlowMatch::any(), vec![apply(vec![out(2)])]);
    add_flow(
        &mut w,
        0,
        2,
        6,
        m(&[
            (Field::EthType, 0x0800),
            (Field::IpProto, 17),
            (Field::UdpDst, 1),
        ]),
        vec![apply(vec![out(3)])],
    );
    w.publish();
    let mut bad = pkt();
    bad.truncate(20);
    let rec = send(&mut r, 1, &[(1, bad), (1, pkt())]);
    assert_eq!(rec.ports(), vec![2]);
    assert_eq!(r.parse_stats().malformed(), 1);
}

/// A table too large to stay in cache, between two small ones: packets run through the small
/// tables one by one, wait at the large one for its batched lookup, and go on from there,
/// each with the rule it matched, in the order they came; table counters count them all.
#[test]
fn a_large_table_between_small_ones_keeps_every_packet_and_its_match() {
    const RULES: u32 = 3000;
    let (mut w, mut r) = datapath(4);
    let mac = |tag: u8, i: u32| {
        let b = i.to_be_bytes();
        [0x02, tag, b[0], b[1], b[2], b[3]]
    };
    for p in 1..=2u32 {
        add_flow(
            &mut w,
            0,
            u64::from(p),
            10,
            m(&[(Field::InPort, u128::from(p))]),
            vec![Instruction::GotoTable(1)],
        );
    }
    let counters: Vec<_> = (0..RULES)
        .map(|i| {
            add_flow(
                &mut w,
                1,
                100 + u64::from(i),
                10,
                m(&[(Field::EthDst, FieldValue::mac(mac(1, i)).0)]),
                vec![
                    apply(vec![Action::SetField(
                        Field::EthSrc,
                        FieldValue::mac(mac(2, i)),
                    )]),
                    Instruction::GotoTable(2),
                ],
            )
        })
        .collect();
    add_flow(
        &mut w,
        2,
        10_000,
        10,
        m(&[(Field::EthType, 0x0800)]),
        vec![apply(vec![out(3)])],
    );
    w.publish();
    // Every 7th packet has an unknown destination (no rule, no table-miss entry in table 1).
    let picks: Vec<Option<u32>> = (0..90u32)
        .map(|k| (k % 7 != 6).then_some((k * 37) % RULES))
        .collect();
    let frames: Vec<(u32, Vec<u8>)> = picks
        .iter()
        .enumerate()
        .map(|(k, pick)| {
            let mut f = pkt();
            f[..6].copy_from_slice(&pick.map_or(mac(9, 9), |i| mac(1, i)));
            (1 + (k as u32 % 2), f)
        })
        .collect();
    let rec = send(&mut r, 5, &frames);
    let expected: Vec<[u8; 6]> = picks.iter().flatten().map(|&i| mac(2, i)).collect();
    let got: Vec<[u8; 6]> = rec
        .out
        .iter()
        .map(|(_, f)| f[6..12].try_into().unwrap())
        .collect();
    assert_eq!(
        got, expected,
        "each packet rewritten by its own rule, in order"
    );
    assert!(rec.out.iter().all(|(p, _)| *p == 3));
    let matched = picks.iter().flatten().count() as u64;
    for (i, c) in counters.iter().enumerate() {
        let hits = picks.iter().flatten().filter(|&&p| p == i as u32).count() as u64;
        assert_eq!(c.packets(), hits, "rule {i}");
    }
    assert_eq!(table_counts(&r, 0), (90, 90));
    assert_eq!(table_counts(&r, 1), (90, matched));
    assert_eq!(table_counts(&r, 2), (matched, matched));
}

/// An in_port table 0 (direct-indexed): a port whose entry only sends packets on, a port whose
/// entry has actions and a port without an entry (a table miss) in one batch, with exact flow
/// and table counters.
#[test]
fn an_in_port_table_zero_sends_each_port_its_own_way() {
    let (mut w, mut r) = datapath(4);
    let onward = add_flow(
        &mut w,
        0,
        1,
        10,
        m(&[(Field::InPort, 1)]),
        vec![Instruction::GotoTable(3)],
    );
    let direct = add_flow(
        &mut w,
        0,
        2,
        10,
        m(&[(Field::InPort, 2)]),
        vec![apply(vec![out(4)])],
    );
    let next = add_flow(
        &mut w,
        3,
        3,
        10,
        FlowMatch::any(),
        vec![apply(vec![out(2)])],
    );
    w.publish();
    let frames: Vec<(u32, Vec<u8>)> = [1, 2, 1, 3, 1, 2].iter().map(|&p| (p, pkt())).collect();
    let rec = send(&mut r, 5, &frames);
    let mut ports = rec.ports();
    ports.sort_unstable();
    assert_eq!(ports, vec![2, 2, 2, 4, 4]);
    let len = pkt().len() as u64;
    assert_eq!((onward.packets(), onward.bytes()), (3, 3 * len));
    assert_eq!((direct.packets(), direct.bytes()), (2, 2 * len));
    assert_eq!(next.packets(), 3);
    assert_eq!(table_counts(&r, 0), (6, 5));
    assert_eq!(table_counts(&r, 3), (3, 3));
}

/// A batch spread over many tables (as a gateway's per-customer tables spread it): each table's
/// stage finds exactly the packets sent to it, across a window of several 16-packet groups,
/// and every packet comes out of the port its table names, in arrival order per table.
#[test]
fn a_batch_spread_over_many_tables_reaches_each_table_whole() {
    const TABLES: u8 = 7;
    let (mut w, mut r) = datapath(u32::from(TABLES) + 1);
    for t in 1..=TABLES {
        add_flow(
            &mut w,
            0,
            u64::from(t),
            10,
            m(&[(Field::IpDscp, u128::from(t))]),
            vec![Instruction::GotoTable(10 + t)],
        );
        add_flow(
            &mut w,
            10 + t,
            100 + u64::from(t),
            10,
            FlowMatch::any(),
            vec![apply(vec![
                Action::SetField(Field::EthSrc, FieldValue::mac([2, 0, 0, 0, 0, t])),
                out(u32::from(t)),
            ])],
        );
    }
    w.publish();
    // 45 packets: table 1 + (k * 5) % 7 for packet k, its index in the last byte of eth_dst.
    let frames: Vec<(u32, Vec<u8>)> = (0..45u8)
        .map(|k| {
            let mut f = pkt();
            f[5] = k;
            f[15] = (1 + (k * 5) % TABLES) << 2;
            (u32::from(TABLES) + 1, f)
        })
        .collect();
    let rec = send(&mut r, 5, &frames);
    assert_eq!(rec.out.len(), frames.len());
    for t in 1..=TABLES {
        let got: Vec<u8> = rec
            .out
            .iter()
            .filter(|(p, _)| *p == u32::from(t))
            .map(|(_, f)| {
                assert_eq!(f[11], t, "rewritten by table {}", 10 + t);
                f[5]
            })
            .collect();
        let sent: Vec<u8> = (0..45u8).filter(|k| 1 + (k * 5) % TABLES == t).collect();
        assert_eq!(got, sent, "table {}", 10 + t);
    }
}

/// An in_port table 0 whose entries only send packets on is resolved once per port and
/// window: across windows of a large batch, with two ports that share a place in the
/// per-port memo (1 and 65) alternating, every packet still reaches its table and every
/// entry and table counts exactly what went through it; a changed entry takes effect at the
/// next batch.
#[test]
fn an_in_port_table_zero_counts_every_port_across_windows() {
    let (mut w, mut r) = datapath(66);
    let mut onward = Vec::new();
    for (id, port, table) in [(1, 1, 3), (2, 65, 4), (3, 2, 3)] {
        onward.push(add_flow(
            &mut w,
            0,
            id,
            10,
            m(&[(Field::InPort, port)]),
            vec![Instruction::GotoTable(table)],
        ));
    }
    let at3 = add_flow(
        &mut w,
        3,
        10,
        10,
        FlowMatch::any(),
        vec![apply(vec![out(66)])],
    );
    let at4 = add_flow(
        &mut w,
        4,
        11,
        10,
        FlowMatch::any(),
        vec![apply(vec![out(5)])],
    );
    w.publish();
    let ports = [1u32, 65, 1, 65, 2, 65];
    let frames: Vec<(u32, Vec<u8>)> = (0..600).map(|k| (ports[k % ports.len()], pkt())).collect();
    let rec = send(&mut r, 5, &frames);
    let expected: Vec<u32> = frames
        .iter()
        .map(|(p, _)| if *p == 65 { 5 } else { 66 })
        .collect();
    let mut got = rec.ports();
    got.sort_unstable();
    let mut want = expected.clone();
    want.sort_unstable();
    assert_eq!(got, want);
    let len = pkt().len() as u64;
    let counts: Vec<(u64, u64)> = onward.iter().map(|c| (c.packets(), c.bytes())).collect();
    assert_eq!(
        counts,
        vec![(200, 200 * len), (300, 300 * len), (100, 100 * len)]
    );
    assert_eq!((at3.packets(), at4.packets()), (300, 300));
    assert_eq!(table_counts(&r, 0), (600, 600));
    assert_eq!(table_counts(&r, 3), (300, 300));
    assert_eq!(table_counts(&r, 4), (300, 300));

    // Port 1's entry now outputs by itself: the next batch follows it.
    remove(&mut w, 0, 1);
    let direct = add_flow(
        &mut w,
        0,
        4,
        10,
        m(&[(Field::InPort, 1)]),
        vec![apply(vec![out(2)])],
    );
    w.publish();
    let rec = send(&mut r, 6, &[(1, pkt()), (65, pkt()), (1, pkt())]);
    assert_eq!(rec.ports(), vec![2, 2, 5]);
    assert_eq!(direct.packets(), 2);
    assert_eq!(onward[1].packets(), 301);
    assert_eq!(table_counts(&r, 0), (603, 603));
}

/// A table's lookups and matches so far.
fn table_counts(r: &DatapathReader, table: u8) -> (u64, u64) {
    let c = r.shared().table_counters(table).unwrap();
    (c.lookups(), c.matches())
}
