//! The tables both packet targets run: every action kind, groups of each type, a meter, an
//! InSP template, NORMAL and the reserved ports, over IPv4, IPv6, ARP, MPLS and anything else.

use dataplane::counters::{FlowCounters, GroupCounters};
use dataplane::datapath::{self, DatapathConfig, DatapathReaderFactory, DatapathWriter};
use dataplane::ir::{port, Action, Instruction, GROUP_ANY};
use dataplane::key::{Field, FieldValue, FlowMatch};
use dataplane::meter::{flags, Band, BandKind, Meter, MeterConfig};
use dataplane::model::{FlowId, Group, GroupBucket, GroupType, Op, OpSink, PortInfo, SwitchFlags};
use dataplane::template::{CopyOp, PacketTemplate};
use std::sync::Arc;

fn flow(w: &mut DatapathWriter, table: u8, id: u64, priority: u16, m: FlowMatch, ins: Vec<Instruction>) {
    w.apply(Op::InsertFlow { table, id: FlowId(id), priority, cookie: id, match_: m, instructions: ins.into(), counters: FlowCounters::new() });
}

fn set(f: Field, v: u128) -> Action {
    Action::SetField(f, FieldValue(v))
}

pub fn build() -> (DatapathWriter, DatapathReaderFactory) {
    let (mut w, factory) = datapath::new(DatapathConfig::default());
    for p in 1..=4 {
        w.apply(Op::SetPort { port_no: p, counters: Default::default(), info: PortInfo { live: p != 4, ..PortInfo::default() } });
    }
    w.apply(Op::SetSwitchFlags(SwitchFlags { miss_send_len: 64, invalid_ttl_to_controller: true, frag: Default::default() }));
    let out = |p| Action::Output { port: p, max_len: 32 };
    let b = |actions| GroupBucket { weight: 1, watch_port: port::ANY, watch_group: GROUP_ANY, actions };
    w.apply(Op::SetGroup { id: 1, group: Group { kind: GroupType::All, buckets: vec![b(vec![Action::PushVlan(0x88a8), out(2)]), b(vec![Action::PopVlan, Action::DecNwTtl, out(3)])], counters: GroupCounters::new(2) } });
    w.apply(Op::SetGroup { id: 2, group: Group { kind: GroupType::Select, buckets: vec![b(vec![Action::PushMpls(0x8847), Action::CopyTtlOut, out(2)]), b(vec![Action::Group(1)])], counters: GroupCounters::new(2) } });
    w.apply(Op::SetGroup {
        id: 3,
        group: Group { kind: GroupType::FastFailover, buckets: vec![GroupBucket { weight: 0, watch_port: 4, watch_group: GROUP_ANY, actions: vec![out(4)] }, b(vec![Action::PopMpls(0x0800), Action::DecMplsTtl, out(port::IN_PORT)])], counters: GroupCounters::new(2) },
    });
    let meter = MeterConfig { flags: flags::PKTPS, bands: vec![Band { kind: BandKind::DscpRemark { prec_level: 1 }, rate: 10, burst: 0 }] };
    w.apply(Op::SetMeter { id: 1, meter: Arc::new(Meter::new(meter)) });
    if let Ok(t) = PacketTemplate::new(vec![0xff; 60], vec![CopyOp { src_offset: 6, dst_offset: 0, len: 6 }, CopyOp { src_offset: 20, dst_offset: 20, len: 30 }], vec![]) {
        w.apply(Op::SetTemplate { id: 1, template: Arc::new(t) });
    }
    let mut ip = FlowMatch::any();
    ip.set(Field::EthType, FieldValue(0x0800), None);
    let mut v6 = FlowMatch::any();
    v6.set(Field::EthType, FieldValue(0x86dd), None);
    let mut arp = FlowMatch::any();
    arp.set(Field::EthType, FieldValue(0x0806), None);
    let mut mpls = FlowMatch::any();
    mpls.set(Field::EthType, FieldValue(0x8847), None);
    flow(&mut w, 0, 1, 10, ip, vec![Instruction::Meter(1), Instruction::ApplyActions(vec![set(Field::Ipv4Src, 0x0a000001), set(Field::IpDscp, 46), set(Field::TcpDst, 80), set(Field::UdpSrc, 53), set(Field::SctpDst, 9), set(Field::Icmpv4Type, 3)]), Instruction::WriteActions(vec![Action::Group(2)]), Instruction::GotoTable(1)]);
    flow(&mut w, 0, 2, 10, v6, vec![Instruction::ApplyActions(vec![set(Field::Ipv6Dst, 1), set(Field::Ipv6Flabel, 7), set(Field::Ipv6NdTarget, 9), set(Field::Ipv6NdSll, 1), set(Field::Ipv6NdTll, 2), set(Field::Icmpv6Code, 1), Action::DecNwTtl, out(port::NORMAL)]), Instruction::GotoTable(2)]);
    flow(&mut w, 0, 3, 10, arp, vec![Instruction::ApplyActions(vec![set(Field::ArpOp, 2), set(Field::ArpSha, 5), set(Field::ArpTpa, 6), out(port::FLOOD)])]);
    flow(&mut w, 0, 4, 10, mpls, vec![Instruction::ApplyActions(vec![set(Field::MplsLabel, 5), set(Field::MplsTc, 2), Action::SetMplsTtl(1), Action::DecMplsTtl, Action::CopyTtlIn]), Instruction::WriteActions(vec![Action::Group(3)])]);
    flow(&mut w, 0, 5, 0, FlowMatch::any(), vec![
        Instruction::ApplyActions(vec![Action::PushPbb(0x88e7), set(Field::PbbIsid, 77), Action::PushVlan(0x8100), set(Field::VlanVid, 0x1005), set(Field::VlanPcp, 3), out(port::ALL), Action::PopVlan, Action::PopPbb, out(port::CONTROLLER)]),
        Instruction::Insp { template_id: 1, actions: vec![out(port::TABLE)] },
        Instruction::WriteMetadata { value: 5, mask: 0xff },
        Instruction::GotoTable(3),
    ]);
    flow(&mut w, 1, 6, 1, FlowMatch::any(), vec![Instruction::ClearActions, Instruction::WriteActions(vec![Action::SetNwTtl(1), Action::DecNwTtl, Action::SetQueue(1), out(1)])]);
    flow(&mut w, 2, 7, 1, FlowMatch::any(), vec![Instruction::WriteActions(vec![Action::Group(1)])]);
    flow(&mut w, 3, 8, 1, FlowMatch::any(), vec![Instruction::ApplyActions(vec![out(port::LOCAL), out(port::IN_PORT)])]);
    w.publish();
    (w, factory)
}

