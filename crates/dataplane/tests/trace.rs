//! Tracing a packet through the tables: the entries it meets, the rewrites that steer it
//! to later tables, where it would go, and that nothing is counted or sent.

mod common;
use common::*;
use dataplane::ir::{port, Action, Instruction};
use dataplane::key::{Field, FieldValue};
use dataplane::model::OpSink;
use dataplane::trace::TracedEntry;
use std::sync::atomic::Ordering::Relaxed;

const SRC: u32 = 0x0a00_0001;
const DST: u32 = 0x0a00_0002;

#[test]
fn a_trace_follows_rewrites_and_gotos_and_counts_nothing() {
    let (mut w, f) = datapath_readers(4);
    // Table 0 rewrites the destination and goes on; table 1 sends the rewritten address to
    // port 3 (the original one would go to port 2) and writes a decrement into the set.
    let c0 = add_flow(
        &mut w,
        0,
        7,
        100,
        m(&[(Field::InPort, 1)]),
        vec![
            apply(vec![Action::SetField(
                Field::Ipv4Dst,
                FieldValue::from(0x0b00_0009u32),
            )]),
            Instruction::WriteMetadata {
                value: 0x5,
                mask: 0xff,
            },
            Instruction::GotoTable(1),
        ],
    );
    add_flow(
        &mut w,
        1,
        8,
        10,
        m(&[(Field::EthType, 0x800), (Field::Ipv4Dst, u128::from(DST))]),
        vec![apply(vec![out(2)])],
    );
    let c1 = add_flow(
        &mut w,
        1,
        9,
        20,
        m(&[(Field::EthType, 0x800), (Field::Ipv4Dst, 0x0b00_0009)]),
        vec![Instruction::WriteActions(vec![Action::DecNwTtl, out(3)])],
    );
    w.publish();
    let frame = udp4(SRC, DST, 1000, 2000, 64, 64);
    let trace = f.trace(1, &frame).unwrap();
    assert_eq!(trace.steps.len(), 2, "{trace:?}");
    assert_eq!(
        trace.steps[0].entry,
        Some(TracedEntry {
            flow_id: 7,
            priority: 100,
            cookie: 7
        })
    );
    assert_eq!(
        trace.steps[0].ops,
        [
            "apply: set_field:0xb000009->Ipv4Dst",
            "write_metadata:0x5/0xff",
            "goto_table:1"
        ]
    );
    assert_eq!(trace.steps[1].entry.map(|e| e.flow_id), Some(9));
    assert_eq!(trace.action_set, ["dec_ttl", "output:3"]);
    assert_eq!(trace.outputs, ["output:3"]);
    assert_eq!(trace.dropped, None);
    assert_eq!(
        &trace.frame[14 + 16..14 + 20],
        &0x0b00_0009u32.to_be_bytes()
    );
    assert_eq!(
        trace.frame[14 + 8],
        63,
        "TTL decremented in the traced copy"
    );
    // Nothing counted: flows, tables, ports.
    assert_eq!((c0.packets(), c1.packets()), (0, 0));
    let shared = f.shared();
    assert_eq!(shared.table_counters(0).map(|c| c.lookups()), Some(0));
    let mut r = f.reader();
    let rec = send(&mut r, 1, &[(1, frame.clone())]);
    assert_eq!(
        rec.ports(),
        vec![3],
        "the real packet goes where the trace said"
    );
    assert_eq!(c0.packets(), 1);
}

#[test]
fn a_trace_reports_misses_controller_and_malformed_frames() {
    let (mut w, f) = datapath_readers(2);
    add_flow(
        &mut w,
        0,
        1,
        10,
        m(&[(Field::InPort, 2)]),
        vec![apply(vec![Action::Output {
            port: port::CONTROLLER,
            max_len: 128,
        }])],
    );
    w.publish();
    let frame = udp4(SRC, DST, 1, 2, 64, 64);
    let miss = f.trace(1, &frame).unwrap();
    assert_eq!(miss.steps.len(), 1);
    assert_eq!(miss.steps[0].entry, None);
    assert_eq!(miss.dropped.as_deref(), Some("no entry matched in table 0"));
    let hit = f.trace(2, &frame).unwrap();
    assert_eq!(hit.outputs, ["output:CONTROLLER:128"]);
    let short = f.trace(2, &frame[..10]).unwrap();
    assert!(
        short.dropped.unwrap().starts_with("malformed"),
        "{:?}",
        short.steps
    );
    assert!(f.trace(1, &[]).unwrap().dropped.is_some());
}

#[test]
fn a_trace_ends_where_a_ttl_runs_out_as_the_packet_does() {
    let (mut w, f) = datapath_readers(2);
    add_flow(
        &mut w,
        0,
        1,
        10,
        m(&[(Field::InPort, 1)]),
        vec![apply(vec![Action::DecNwTtl, out(2)])],
    );
    w.publish();
    let last_hop = udp4(SRC, DST, 1, 2, 1, 64);
    let trace = f.trace(1, &last_hop).unwrap();
    assert_eq!(trace.dropped.as_deref(), Some("IP TTL expired"));
    assert!(trace.outputs.is_empty(), "{trace:?}");
    let mut r = f.reader();
    let rec = send(&mut r, 1, &[(1, last_hop)]);
    assert!(rec.ports().is_empty(), "the real packet is dropped too");
    assert_eq!(f.shared().drops.invalid_ttl.load(Relaxed), 1);
    let fine = f.trace(1, &udp4(SRC, DST, 1, 2, 64, 64)).unwrap();
    assert_eq!(
        (fine.dropped, fine.outputs),
        (None, vec!["output:2".to_string()])
    );
}
