//! The hybrid switch against software alone: two switch cores get the same random flow-mod
//! sequences (adds, modifies, deletes, timeouts, port changes) and the same random packets.
//! One runs the software pipeline only; the other has the offload planner in front of its
//! datapath, and every packet meets the hardware image first (decided there, or punted to
//! its software pipeline). Every packet must leave both the same way (the same frames on the
//! same ports, the same packet-ins), and in the end every flow, table and port counter must
//! read the same. Small hardware tables keep placement under pressure, and the invariant is
//! checked after every step. Each mode and policy runs a bounded number of cases.

use std::sync::Arc;

use dataplane::batch::{PacketBatch, PacketInEvent, PacketSink};
use dataplane::datapath::{DatapathConfig, DatapathReader};
use dataplane::key::FlowKey;
use dataplane::shared::Shared;
use offload::image::Verdict;
use offload::placement::{Mode, Planner, Policy};
use offload::profile::Profile;
use offload::sink::{Offload, OffloadSink};
use ofp::{
    Action, FlowMod, FlowModCommand, FlowModFlags, Instruction, Match, MultipartReplyBody,
    MultipartRequestBody, OxmField, OxmValue, PortConfig, PortMod, OFPG_ANY, OFPP_ANY,
    OFPP_CONTROLLER, OFP_NO_BUFFER,
};
use proptest::prelude::*;
use switch_core::{DiscardPacketOuts, Switch};

/// Tables small enough that placement is always short of room: an ACL and a MAC table for
/// table 0 (in that order, as on the T1040), a TCAM for table 1.
const PROFILE: &str = r#"
name = "tiny"
device = "test"
source = "test"
line_rate_mbps = 1000
insert_us = 1
software_tables = true

[[table]]
name = "acl"
openflow_table = 0
kind = "tcam"
when_full = "software"
unsupported = "software"
actions = ["output", "drop", "controller", "goto"]

[[table.structure]]
name = "any"
fields = ["in_port", "eth_dst", "vlan_vid", "eth_type", "ipv4_dst", "ip_proto", "tcp_dst", "udp_dst"]
masked = ["ipv4_dst"]
capacity = 5

[[table]]
name = "mac"
openflow_table = 0
kind = "exact"
when_full = "software"
unsupported = "software"
actions = ["output", "controller"]

[[table.structure]]
name = "mac-vlan"
fields = ["eth_dst", "vlan_vid"]
required = ["eth_dst", "vlan_vid"]
capacity = 3

[[table]]
name = "t1"
openflow_table = 1
kind = "tcam"
when_full = "software"
unsupported = "software"
actions = ["output", "drop", "controller"]

[[table.structure]]
name = "any"
fields = ["in_port", "eth_dst", "vlan_vid", "eth_type", "ipv4_dst", "ip_proto", "tcp_dst", "udp_dst"]
masked = ["ipv4_dst"]
capacity = 4
"#;

const PORTS: [u32; 3] = [1, 2, 3];
const MACS: [[u8; 6]; 3] = [[2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 9]];
/// (address, prefix length) of rules; packets go to the first address of each and one more.
const PREFIXES: [(u32, u32); 5] = [
    (0x0a00_0000, 8),
    (0x0a01_0000, 16),
    (0x0a01_0100, 24),
    (0x0a01_0101, 32),
    (0x0b00_0000, 8),
];
const DESTS: [u32; 5] = [
    0x0a01_0101,
    0x0a01_0102,
    0x0a02_0001,
    0x0b00_0001,
    0x0c00_0001,
];

#[derive(Debug, PartialEq, Eq)]
enum Event {
    Out(u32, Vec<u8>),
    PacketIn {
        reason: u8,
        table: u8,
        cookie: u64,
        buffer: u32,
        in_port: u32,
        data: Vec<u8>,
    },
}

#[derive(Default)]
struct Collect(Vec<Event>);

impl PacketSink for Collect {
    fn output(&mut self, port: u32, frame: &[u8]) {
        self.0.push(Event::Out(port, frame.to_vec()));
    }

    fn packet_in(&mut self, ev: &PacketInEvent<'_>) {
        self.0.push(Event::PacketIn {
            reason: ev.reason as u8,
            table: ev.table_id,
            cookie: ev.cookie,
            buffer: ev.buffer_id,
            in_port: ev.in_port,
            data: ev.data.to_vec(),
        });
    }
}

struct Side {
    switch: Switch,
    reader: DatapathReader,
    shared: Arc<Shared>,
}

fn side(offload: Option<&Arc<Offload>>) -> Side {
    let config = DatapathConfig {
        n_tables: 4,
        ..DatapathConfig::default()
    };
    let (mut switch, readers) = Switch::with_datapath(
        1,
        config,
        |writer| match offload {
            Some(o) => Box::new(OffloadSink::new(Box::new(writer), Arc::clone(o))),
            None => Box::new(writer),
        },
        Box::new(DiscardPacketOuts),
    );
    let shared = Arc::clone(readers.shared());
    for p in PORTS {
        switch.add_port(port_desc(p), 0);
    }
    switch.publish();
    Side {
        switch,
        reader: readers.reader(),
        shared,
    }
}

fn port_desc(p: u32) -> ofp::Port {
    ofp::Port {
        port_no: p,
        hw_addr: [0, 0, 0, 0, 0, p as u8],
        name: format!("p{p}"),
        config: PortConfig::default(),
        state: ofp::PortState::LIVE,
        curr: 0,
        advertised: 0,
        supported: 0,
        peer: 0,
        curr_speed: 0,
        max_speed: 0,
    }
}

/// A small deterministic generator: the proptest case supplies the seed.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

fn rule_match(g: &mut Gen) -> Match {
    let mut fields = Vec::new();
    if g.chance(30) {
        fields.push(OxmField::exact(OxmValue::InPort(g.pick(&PORTS))));
    }
    if g.chance(40) {
        fields.push(OxmField::exact(OxmValue::EthDst(g.pick(&MACS[..2]))));
    }
    match g.below(4) {
        0 => fields.push(OxmField::exact(OxmValue::VlanVid(0))),
        1 => fields.push(OxmField::exact(OxmValue::VlanVid(0x1000 | 5))),
        _ => {}
    }
    match g.below(4) {
        0 | 1 => {
            fields.push(OxmField::exact(OxmValue::EthType(0x0800)));
            if g.chance(70) {
                let (addr, len) = g.pick(&PREFIXES);
                let mask = if len == 32 {
                    None
                } else {
                    Some(OxmValue::Ipv4Dst(u32::MAX << (32 - len)))
                };
                fields.push(OxmField {
                    value: OxmValue::Ipv4Dst(addr),
                    mask,
                });
            }
            if g.chance(50) {
                let tcp = g.chance(50);
                fields.push(OxmField::exact(OxmValue::IpProto(if tcp { 6 } else { 17 })));
                if g.chance(50) {
                    let port = g.pick(&[80u16, 443]);
                    fields.push(OxmField::exact(if tcp {
                        OxmValue::TcpDst(port)
                    } else {
                        OxmValue::UdpDst(port)
                    }));
                }
            }
        }
        2 => fields.push(OxmField::exact(OxmValue::EthType(0x0806))),
        _ => {}
    }
    Match { fields }
}

fn out(port: u32) -> Action {
    Action::Output { port, max_len: 128 }
}

fn instructions(g: &mut Gen, table: u8) -> Vec<Instruction> {
    use Instruction as I;
    match g.below(if table == 0 { 8 } else { 7 }) {
        0 | 1 => vec![I::ApplyActions(vec![out(g.pick(&PORTS))])],
        2 => vec![I::ApplyActions(vec![
            out(g.pick(&PORTS)),
            out(g.pick(&PORTS)),
        ])],
        3 => vec![],
        4 => vec![I::ApplyActions(vec![out(OFPP_CONTROLLER)])],
        5 => vec![I::ApplyActions(vec![Action::PopVlan, out(g.pick(&PORTS))])],
        6 => vec![I::WriteActions(vec![out(g.pick(&PORTS))])],
        _ => vec![I::GotoTable(1)],
    }
}

fn flow_mod(command: FlowModCommand, table: u8, priority: u16, m: Match) -> FlowMod {
    FlowMod {
        cookie: 0,
        cookie_mask: 0,
        table_id: table,
        command,
        idle_timeout: 0,
        hard_timeout: 0,
        priority,
        buffer_id: OFP_NO_BUFFER,
        out_port: OFPP_ANY,
        out_group: OFPG_ANY,
        flags: FlowModFlags::default(),
        match_: m,
        instructions: Vec::new(),
    }
}

/// A random frame: Ethernet, an optional VLAN tag, then IPv4 (TCP or UDP, sometimes a
/// fragment), ARP, or an unknown EtherType.
fn frame(g: &mut Gen) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&g.pick(&MACS));
    f.extend_from_slice(&[2, 0, 0, 0, 0, 0x77]);
    match g.below(3) {
        0 => f.extend_from_slice(&[0x81, 0x00, 0x00, 5]),
        1 => f.extend_from_slice(&[0x81, 0x00, 0x00, 7]),
        _ => {}
    }
    match g.below(5) {
        0..=2 => {
            f.extend_from_slice(&[0x08, 0x00]);
            let proto = g.pick(&[6u8, 17]);
            let fragment = g.chance(10);
            let l4_len = if proto == 6 { 20 } else { 8 };
            let total = 20 + l4_len as u16 + 6;
            f.extend_from_slice(&[0x45, 0]);
            f.extend_from_slice(&total.to_be_bytes());
            f.extend_from_slice(&[0, 1]);
            f.extend_from_slice(if fragment { &[0x20, 0] } else { &[0x40, 0] });
            f.extend_from_slice(&[64, proto, 0, 0, 192, 168, 0, 1]);
            f.extend_from_slice(&g.pick(&DESTS).to_be_bytes());
            f.extend_from_slice(&1234u16.to_be_bytes());
            f.extend_from_slice(&g.pick(&[80u16, 443, 22]).to_be_bytes());
            if proto == 6 {
                f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0]);
            } else {
                f.extend_from_slice(&(8u16 + 6).to_be_bytes());
                f.extend_from_slice(&[0, 0]);
            }
            f.extend_from_slice(&[0xab; 6]);
        }
        3 => {
            f.extend_from_slice(&[0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]);
            f.extend_from_slice(&[2, 0, 0, 0, 0, 0x77, 192, 168, 0, 1]);
            f.extend_from_slice(&[0; 6]);
            f.extend_from_slice(&g.pick(&DESTS).to_be_bytes());
        }
        _ => f.extend_from_slice(&[0x88, 0xb5, 1, 2, 3, 4]),
    }
    while f.len() < 60 {
        f.push(0);
    }
    f
}

struct Pair {
    sw: Side,
    hybrid: Side,
    offload: Arc<Offload>,
    now: u64,
    /// Packets the hardware decided, over the run (the test must exercise it).
    decided: u64,
}

impl Pair {
    fn new(mode: Mode, policy: Policy) -> Self {
        let profile =
            Arc::new(Profile::parse(std::path::Path::new("tiny.toml"), PROFILE).expect("parses"));
        let offload = Offload::new(Planner::new(profile, mode, policy));
        Pair {
            sw: side(None),
            hybrid: side(Some(&offload)),
            offload,
            now: 1_000_000_000,
            decided: 0,
        }
    }

    /// Applies a flow-mod to both; both must answer alike.
    fn flow_mod(&mut self, fm: FlowMod) -> Result<(), String> {
        let a = self.sw.switch.flow_mod(fm.clone(), self.now);
        let b = self.hybrid.switch.flow_mod(fm.clone(), self.now);
        if a != b {
            return Err(format!("flow-mod {fm:?} answered {a:?} and {b:?}"));
        }
        self.sw.switch.publish();
        self.hybrid.switch.publish();
        Ok(())
    }

    fn port_mod(&mut self, port: u32, config: PortConfig) -> Result<(), String> {
        let pm = PortMod {
            port_no: port,
            hw_addr: [0, 0, 0, 0, 0, port as u8],
            config,
            mask: PortConfig(PortConfig::NO_FWD.0 | PortConfig::NO_RECV.0),
            advertise: 0,
        };
        let a = self.sw.switch.port_mod(&pm).map(|_| ());
        let b = self.hybrid.switch.port_mod(&pm).map(|_| ());
        if a != b {
            return Err(format!("port-mod answered {a:?} and {b:?}"));
        }
        self.sw.switch.publish();
        self.hybrid.switch.publish();
        Ok(())
    }

    fn advance(&mut self, ns: u64) -> Result<(), String> {
        self.now += ns;
        let a = self.sw.switch.expire(self.now);
        let b = self.hybrid.switch.expire(self.now);
        if a.len() != b.len() {
            return Err(format!("{} and {} flows expired", a.len(), b.len()));
        }
        self.sw.switch.publish();
        self.hybrid.switch.publish();
        self.offload.tick(self.now);
        Ok(())
    }

    /// Sends one packet through both; returns what each did with it.
    fn packet(&mut self, in_port: u32, frame: &[u8]) -> (Vec<Event>, Vec<Event>) {
        let mut batch = PacketBatch::new(1, 2048);
        let mut a = Collect::default();
        assert!(batch.push(in_port, frame));
        self.sw.reader.process(self.now, &mut batch, &mut a);

        let mut b = Collect::default();
        let image = self.offload.image.load();
        let mut key = FlowKey::default();
        let verdict = match dataplane::parse::parse(frame, in_port, &mut key) {
            Ok(()) => image.classify(&key),
            Err(_) => Verdict::Punt,
        };
        match verdict {
            Verdict::Decided { path, len } => {
                self.decided += 1;
                let shard = self.hybrid.reader.shard();
                let outputs = image.count(
                    shard,
                    &self.hybrid.shared,
                    in_port,
                    &path[..len],
                    frame.len() as u64,
                );
                for p in outputs {
                    b.output(*p, frame);
                }
            }
            Verdict::Punt => {
                assert!(batch.push(in_port, frame));
                self.hybrid.reader.process(self.now, &mut batch, &mut b);
            }
        }
        (a.0, b.0)
    }

    fn check_invariant(&self) -> Result<(), String> {
        self.offload.state().planner.check()
    }

    /// Flow, table and port statistics of both, which must be equal.
    fn compare_counters(&self) -> Result<(), String> {
        let ask = |s: &Switch, q: MultipartRequestBody| s.multipart(&q, self.now).expect("answers");
        let flows = |s: &Switch| match ask(s, MultipartRequestBody::Flow(Default::default())) {
            MultipartReplyBody::Flow(v) => v
                .into_iter()
                .map(|f| {
                    (
                        f.table_id,
                        f.priority,
                        f.match_,
                        f.packet_count,
                        f.byte_count,
                    )
                })
                .collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        let (fa, fb) = (flows(&self.sw.switch), flows(&self.hybrid.switch));
        if fa != fb {
            return Err(format!("flow counters differ:\n{fa:?}\n{fb:?}"));
        }
        for q in [
            MultipartRequestBody::Table,
            MultipartRequestBody::PortStats { port_no: OFPP_ANY },
        ] {
            let (a, b) = (ask(&self.sw.switch, q.clone()), ask(&self.hybrid.switch, q));
            let strip = |r: MultipartReplyBody| match r {
                MultipartReplyBody::PortStats(v) => format!(
                    "{:?}",
                    v.into_iter()
                        .map(|p| (
                            p.port_no,
                            p.rx_packets,
                            p.rx_bytes,
                            p.tx_packets,
                            p.tx_bytes
                        ))
                        .collect::<Vec<_>>()
                ),
                other => format!("{other:?}"),
            };
            let (a, b) = (strip(a), strip(b));
            if a != b {
                return Err(format!("counters differ:\n{a}\n{b}"));
            }
        }
        Ok(())
    }
}

/// Runs one random sequence; returns what differed, with the step.
fn run(mode: Mode, policy: Policy, seed: u64, steps: usize) -> Result<u64, String> {
    let mut g = Gen(seed | 1);
    let mut pair = Pair::new(mode, policy);
    let mut added: Vec<(u8, u16, Match)> = Vec::new();
    for step in 0..steps {
        let what = g.below(100);
        let result = if what < 45 || added.is_empty() {
            let table = if g.chance(75) { 0 } else { 1 };
            let priority = 1 + g.below(12) as u16;
            let m = rule_match(&mut g);
            let mut fm = flow_mod(FlowModCommand::Add, table, priority, m.clone());
            fm.instructions = instructions(&mut g, table);
            // Each added flow its own cookie, so a packet-in names the entry that sent it.
            fm.cookie = step as u64 + 1;
            if g.chance(15) {
                fm.hard_timeout = 1 + g.below(3) as u16;
            } else if g.chance(15) {
                fm.idle_timeout = 1 + g.below(2) as u16;
            }
            added.push((table, priority, m));
            pair.flow_mod(fm)
        } else if what < 55 {
            let (table, priority, m) = added[g.below(added.len() as u64) as usize].clone();
            let strict = g.chance(50);
            let command = if strict {
                FlowModCommand::ModifyStrict
            } else {
                FlowModCommand::Modify
            };
            let mut fm = flow_mod(command, table, priority, m);
            fm.instructions = instructions(&mut g, table);
            pair.flow_mod(fm)
        } else if what < 65 {
            let (table, priority, m) = added[g.below(added.len() as u64) as usize].clone();
            let command = if g.chance(60) {
                FlowModCommand::DeleteStrict
            } else {
                FlowModCommand::Delete
            };
            pair.flow_mod(flow_mod(command, table, priority, m))
        } else if what < 72 {
            pair.advance(g.below(1_500_000_000))
        } else if what < 75 {
            let config = match g.below(3) {
                0 => PortConfig::NO_FWD,
                1 => PortConfig::NO_RECV,
                _ => PortConfig::default(),
            };
            pair.port_mod(g.pick(&PORTS), config)
        } else {
            let mut r = Ok(());
            for _ in 0..6 {
                let in_port = g.pick(&PORTS);
                let f = frame(&mut g);
                let (a, b) = pair.packet(in_port, &f);
                if a != b {
                    r = Err(format!(
                        "packet {f:02x?} on port {in_port}:\nsoftware {a:?}\nhybrid   {b:?}"
                    ));
                    break;
                }
            }
            r
        };
        result
            .and_then(|()| pair.check_invariant())
            .map_err(|e| format!("seed {seed:#x}, step {step}: {e}"))?;
    }
    pair.compare_counters()
        .map_err(|e| format!("seed {seed:#x}, at the end: {e}"))?;
    Ok(pair.decided)
}

fn check_mode(mode: Mode, policy: Policy, cases: u32) {
    let decided = std::sync::atomic::AtomicU64::new(0);
    proptest!(ProptestConfig::with_cases(cases), |(seed in any::<u64>())| {
        match run(mode, policy, seed, 60) {
            Ok(d) => {
                decided.fetch_add(d, std::sync::atomic::Ordering::Relaxed);
            }
            Err(e) => prop_assert!(false, "{:?}/{:?}: {}", mode, policy.name(), e),
        }
    });
    assert!(
        decided.into_inner() > 0,
        "{mode:?}: hardware decided no packet in any case"
    );
}

#[test]
fn algorithm1_fcfs_keeps_the_pipelines_meaning() {
    check_mode(Mode::Algorithm1, Policy::Fcfs, 48);
}

#[test]
fn dependent_set_keeps_the_pipelines_meaning() {
    check_mode(Mode::DependentSet, Policy::Fcfs, 48);
    check_mode(Mode::DependentSet, Policy::Priority, 24);
}

#[test]
fn cover_set_keeps_the_pipelines_meaning() {
    check_mode(Mode::CoverSet, Policy::Fcfs, 48);
    check_mode(Mode::CoverSet, Policy::Traffic(Default::default()), 24);
}

#[test]
fn algorithm1_with_priority_and_traffic_policies() {
    check_mode(Mode::Algorithm1, Policy::Priority, 24);
    check_mode(
        Mode::Algorithm1,
        Policy::Traffic(offload::placement::TrafficParams {
            hysteresis: 1.5,
            min_pps: 0.0,
            max_updates_per_sec: 50,
        }),
        24,
    );
}
