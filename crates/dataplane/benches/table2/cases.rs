//! The four pipelines of seed 000's Table II (sec. IV-B, Figs. 5-7) as a controller would
//! program them (encoded OpenFlow group-mods and flow-mods), the flows of their traffic, and
//! the reference that says what each flow's packets must become.

use super::frames::{self, mac, FrameBytes, Spec, TCP, UDP};
use super::reference::{
    self, gw_ce_port, gw_private, gw_public, gw_route_hop, l3_next_hop, lb_backend, lb_service,
    prefix_mask, Reference, Routes, ACCESS_PORTS, EXTERNAL, GW_CES, GW_USERS, LB_INTERNAL,
    LB_SERVICES, UPLINKS,
};
use ofp::{
    Action, Bucket, FlowMod, FlowModCommand, FlowModFlags, GroupMod, GroupModCommand, GroupType,
    Instruction, Match, Message, OxmField, OxmValue, OFPG_ANY, OFPP_ANY, OFPP_CONTROLLER,
    OFP_NO_BUFFER,
};
use std::collections::{HashMap, HashSet};

/// splitmix64: deterministic pipelines and traces.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform below `n` (the bias of a modulo is far below what matters here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A use case of Table II.
pub struct Case {
    pub name: &'static str,
    /// Mpps per CPU-second at every size.
    pub target_mpps: f64,
    pub build: fn(usize, &mut Rng) -> Workload,
}

pub const CASES: [Case; 4] = [
    Case {
        name: "L2",
        target_mpps: 22.0,
        build: l2,
    },
    Case {
        name: "L3",
        target_mpps: 13.0,
        build: l3,
    },
    Case {
        name: "LB",
        target_mpps: 22.0,
        build: lb,
    },
    Case {
        name: "GW",
        target_mpps: 13.0,
        build: gw,
    },
];

/// One flow of the traffic: the port its packets arrive on and their frame.
pub struct Flow {
    pub in_port: u32,
    pub frame: FrameBytes,
}

/// A pipeline with its traffic.
pub struct Workload {
    /// Encoded OpenFlow messages (group-mods, flow-mods), in the order a controller sends them.
    pub messages: Vec<Vec<u8>>,
    pub flows: Vec<Flow>,
    /// For the run under flow-mods: (add, delete) pairs of encoded flow-mods on a large table.
    pub churn: Vec<(Vec<u8>, Vec<u8>)>,
    pub reference: Box<dyn Reference>,
}

/// Collects a pipeline's messages, each encoded as on the wire.
#[derive(Default)]
struct Controller {
    messages: Vec<Vec<u8>>,
    xid: u32,
}

impl Controller {
    fn send(&mut self, msg: &Message) {
        self.xid += 1;
        self.messages.push(ofp::encode_to_vec(self.xid, msg));
    }

    fn add(&mut self, table: u8, priority: u16, fields: Vec<OxmField>, ins: Vec<Instruction>) {
        self.send(&flow_mod(FlowModCommand::Add, table, priority, fields, ins));
    }

    /// The table-miss entry to the external port.
    fn catch_all(&mut self, table: u8) {
        self.add(table, 0, vec![], vec![apply(vec![out(EXTERNAL)])]);
    }
}

fn flow_mod(
    command: FlowModCommand,
    table_id: u8,
    priority: u16,
    fields: Vec<OxmField>,
    instructions: Vec<Instruction>,
) -> Message {
    Message::FlowMod(FlowMod {
        cookie: 0,
        cookie_mask: 0,
        table_id,
        command,
        idle_timeout: 0,
        hard_timeout: 0,
        priority,
        buffer_id: OFP_NO_BUFFER,
        out_port: OFPP_ANY,
        out_group: OFPG_ANY,
        flags: FlowModFlags::default(),
        match_: Match { fields },
        instructions,
    })
}

/// An add and the strict delete that undoes it, encoded.
fn churn_pair(
    table: u8,
    priority: u16,
    fields: Vec<OxmField>,
    ins: Vec<Instruction>,
) -> (Vec<u8>, Vec<u8>) {
    let add = flow_mod(FlowModCommand::Add, table, priority, fields.clone(), ins);
    let delete = flow_mod(
        FlowModCommand::DeleteStrict,
        table,
        priority,
        fields,
        vec![],
    );
    (ofp::encode_to_vec(1, &add), ofp::encode_to_vec(2, &delete))
}

fn exact(v: OxmValue) -> OxmField {
    OxmField::exact(v)
}

fn ipv4() -> OxmField {
    exact(OxmValue::EthType(frames::ETH_IPV4))
}

fn prefix(field: fn(u32) -> OxmValue, addr: u32, len: u8) -> OxmField {
    let mask = prefix_mask(len);
    OxmField::masked(field(addr & mask), field(mask))
}

fn out(port: u32) -> Action {
    Action::Output {
        port,
        max_len: 0xffff,
    }
}

fn apply(actions: Vec<Action>) -> Instruction {
    Instruction::ApplyActions(actions)
}

/// L2: one static MAC table of `n` entries; the traffic's `n` flows go to its `n` addresses,
/// each arriving on an access port other than the one it leaves by.
fn l2(n: usize, rng: &mut Rng) -> Workload {
    let mut c = Controller::default();
    c.catch_all(0);
    let mut ports = HashMap::new();
    let mut flows = Vec::with_capacity(n);
    for i in 0..n as u32 {
        let port = 1 + i % ACCESS_PORTS;
        let dst = mac(1, i);
        c.add(
            0,
            100,
            vec![exact(OxmValue::EthDst(dst))],
            vec![apply(vec![out(port)])],
        );
        ports.insert(dst, port);
        let in_port = 1 + (port + rng.below(u64::from(ACCESS_PORTS) - 1) as u32) % ACCESS_PORTS;
        let frame = frames::build(&Spec {
            dst_mac: dst,
            src_mac: mac(9, rng.below(1 << 20) as u32),
            src: 0x0a00_0001,
            dst: 0x0a00_0002,
            proto: UDP,
            sport: 1,
            dport: 2,
            flow: i,
        });
        flows.push(Flow { in_port, frame });
    }
    let churn = (0..20_000u32)
        .map(|i| {
            let m = vec![exact(OxmValue::EthDst(mac(7, i)))];
            churn_pair(0, 100, m, vec![apply(vec![out(1)])])
        })
        .collect();
    Workload {
        messages: c.messages,
        flows,
        churn,
        reference: Box::new(reference::L2 { ports }),
    }
}

/// `n` distinct random prefixes, mostly /24 as in a real routing table, inside a few /8s.
fn prefixes(n: usize, rng: &mut Rng) -> Vec<(u32, u8)> {
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let len = match rng.below(100) {
            0..=59 => 24,
            60..=84 => 16 + rng.below(8) as u8,
            _ => 25 + rng.below(8) as u8,
        };
        let top = [10u32, 20, 30, 40, 50, 60, 70, 80][rng.below(8) as usize];
        let addr = ((top << 24) | (rng.next() as u32 & 0x00ff_ffff)) & prefix_mask(len);
        if seen.insert((addr, len)) {
            out.push((addr, len));
        }
    }
    out
}

/// A random address inside a prefix.
fn inside(rng: &mut Rng, (addr, len): (u32, u8)) -> u32 {
    addr | (rng.next() as u32 & !prefix_mask(len))
}

/// L3 (Fig. 5): table 0 admits the access ports, table 2 sends IPv4 on and the rest to the
/// controller, table 10 routes `n` prefixes to 10 next-hop groups. The traffic's `n` flows
/// each go to an address of their own prefix (or of a longer one inside it), arriving on the
/// access ports that are not next hops.
fn l3(n: usize, rng: &mut Rng) -> Workload {
    let mut c = Controller::default();
    for g in 0..10u32 {
        let (src_mac, dst_mac, port) = l3_next_hop(g);
        let actions = vec![
            Action::SetField(OxmValue::EthSrc(src_mac)),
            Action::SetField(OxmValue::EthDst(dst_mac)),
            Action::DecNwTtl,
            out(port),
        ];
        c.send(&Message::GroupMod(GroupMod {
            command: GroupModCommand::Add,
            group_type: GroupType::Indirect,
            group_id: g,
            buckets: vec![Bucket {
                weight: 0,
                watch_port: OFPP_ANY,
                watch_group: OFPG_ANY,
                actions,
            }],
        }));
    }
    for p in 1..=ACCESS_PORTS {
        c.add(
            0,
            10,
            vec![exact(OxmValue::InPort(p))],
            vec![Instruction::GotoTable(2)],
        );
    }
    c.catch_all(0);
    c.add(2, 10, vec![ipv4()], vec![Instruction::GotoTable(10)]);
    let to_controller = Action::Output {
        port: OFPP_CONTROLLER,
        max_len: 128,
    };
    c.add(2, 0, vec![], vec![apply(vec![to_controller])]);
    c.catch_all(10);
    let mut routes = Routes::default();
    let mut flows = Vec::with_capacity(n);
    for (i, &(addr, len)) in prefixes(n, rng).iter().enumerate() {
        let g = i as u32 % 10;
        let m = vec![ipv4(), prefix(OxmValue::Ipv4Dst, addr, len)];
        c.add(
            10,
            100 + u16::from(len),
            m,
            vec![Instruction::WriteActions(vec![Action::Group(g)])],
        );
        routes.insert(addr, len, g);
        let first_free = l3_next_hop(9).2 + 1;
        let in_port = first_free + rng.below(u64::from(ACCESS_PORTS - first_free + 1)) as u32;
        let frame = frames::build(&Spec {
            dst_mac: mac(3, 0),
            src_mac: mac(5, i as u32),
            src: 0x0b00_0000 | i as u32,
            dst: inside(rng, (addr, len)),
            proto: UDP,
            sport: 1000,
            dport: 2000,
            flow: i as u32,
        });
        flows.push(Flow { in_port, frame });
    }
    let churn = prefixes(20_000, &mut Rng(99))
        .into_iter()
        .map(|(addr, len)| {
            let m = vec![ipv4(), prefix(OxmValue::Ipv4Dst, addr | 0x0100_0000, len)];
            let ins = vec![Instruction::WriteActions(vec![Action::Group(1)])];
            churn_pair(10, 100 + u16::from(len), m, ins)
        })
        .collect();
    Workload {
        messages: c.messages,
        flows,
        churn,
        reference: Box::new(reference::L3 { routes }),
    }
}

/// Load balancer and ACL (Fig. 6) with 100 web services, their backends on the internal
/// ports. The traffic's `n` flows arrive on the uplinks; 70% go to a service's TCP port 80,
/// the rest (UDP to random addresses) is turned away by the ACL to the external port.
fn lb(n: usize, rng: &mut Rng) -> Workload {
    let mut c = Controller::default();
    for p in 1..=LB_INTERNAL {
        c.add(
            0,
            10,
            vec![exact(OxmValue::InPort(p))],
            vec![apply(vec![out(EXTERNAL)])],
        );
    }
    for p in UPLINKS {
        c.add(
            0,
            10,
            vec![exact(OxmValue::InPort(p))],
            vec![Instruction::GotoTable(1)],
        );
    }
    c.catch_all(1);
    c.catch_all(2);
    let mut services = HashMap::new();
    for s in 0..LB_SERVICES {
        let web = vec![
            ipv4(),
            exact(OxmValue::IpProto(TCP)),
            exact(OxmValue::Ipv4Dst(lb_service(s))),
            exact(OxmValue::TcpDst(80)),
        ];
        c.add(1, 10, web, vec![Instruction::GotoTable(2)]);
        services.insert(lb_service(s), s);
        for half in 0..2u32 {
            let m = vec![
                ipv4(),
                exact(OxmValue::Ipv4Dst(lb_service(s))),
                prefix(OxmValue::Ipv4Src, half << 31, 1),
            ];
            let (backend_mac, port) = lb_backend(s, half);
            let actions = vec![Action::SetField(OxmValue::EthDst(backend_mac)), out(port)];
            c.add(2, 10, m, vec![apply(actions)]);
        }
    }
    let uplinks = u64::from(UPLINKS.end() - UPLINKS.start() + 1);
    let flows = (0..n as u32)
        .map(|i| {
            let in_port = UPLINKS.start() + rng.below(uplinks) as u32;
            let src = rng.next() as u32;
            let sport = 1024 + rng.below(60_000) as u16;
            let web = rng.below(100) < 70;
            let (dst, proto, dport) = if web {
                (
                    lb_service(rng.below(u64::from(LB_SERVICES)) as u32),
                    TCP,
                    80,
                )
            } else {
                (rng.next() as u32, UDP, 53)
            };
            let frame = frames::build(&Spec {
                dst_mac: mac(3, 0),
                src_mac: mac(8, i),
                src,
                dst,
                proto,
                sport,
                dport,
                flow: i,
            });
            Flow { in_port, frame }
        })
        .collect();
    let churn = (0..20_000u32)
        .map(|i| {
            let m = vec![
                ipv4(),
                exact(OxmValue::IpProto(TCP)),
                exact(OxmValue::Ipv4Dst(0xac10_0000 | i)),
                exact(OxmValue::TcpDst(80)),
            ];
            churn_pair(1, 10, m, vec![Instruction::GotoTable(2)])
        })
        .collect();
    Workload {
        messages: c.messages,
        flows,
        churn,
        reference: Box::new(reference::Lb { services }),
    }
}

/// Access gateway (Fig. 7): 10 customer endpoints of 20 users each, one access port per
/// endpoint; table 0 sends an endpoint's traffic to its NAT table (11..=20) and the uplinks'
/// to table 110; table 200 routes 10K prefixes to the uplinks. The traffic's `n` flows are
/// half from users to addresses the routes cover, half from the uplinks back to users.
fn gw(n: usize, rng: &mut Rng) -> Workload {
    let mut c = Controller::default();
    for ce in 0..GW_CES {
        let table = 11 + ce as u8;
        let m = vec![
            exact(OxmValue::InPort(gw_ce_port(ce))),
            exact(OxmValue::EthSrc(mac(10, ce))),
        ];
        c.add(0, 10, m, vec![Instruction::GotoTable(table)]);
        let to_controller = Action::Output {
            port: OFPP_CONTROLLER,
            max_len: 128,
        };
        c.add(table, 0, vec![], vec![apply(vec![to_controller])]);
        for u in 0..GW_USERS {
            let m = vec![ipv4(), exact(OxmValue::Ipv4Src(gw_private(u)))];
            let nat = vec![
                apply(vec![Action::SetField(OxmValue::Ipv4Src(gw_public(ce, u)))]),
                Instruction::GotoTable(200),
            ];
            c.add(table, 10, m, nat);
            let m = vec![ipv4(), exact(OxmValue::Ipv4Dst(gw_public(ce, u)))];
            let actions = vec![
                Action::SetField(OxmValue::Ipv4Dst(gw_private(u))),
                Action::SetField(OxmValue::EthDst(mac(10, ce))),
                out(gw_ce_port(ce)),
            ];
            c.add(110, 10, m, vec![apply(actions)]);
        }
    }
    for p in UPLINKS {
        c.add(
            0,
            10,
            vec![exact(OxmValue::InPort(p))],
            vec![Instruction::GotoTable(110)],
        );
    }
    c.catch_all(0);
    c.catch_all(110);
    c.catch_all(200);
    let mut routes = Routes::default();
    let table_200 = prefixes(10_000, rng);
    for (i, &(addr, len)) in table_200.iter().enumerate() {
        let (hop_mac, port) = gw_route_hop(i as u32);
        let actions = vec![
            Action::DecNwTtl,
            Action::SetField(OxmValue::EthDst(hop_mac)),
            out(port),
        ];
        let m = vec![ipv4(), prefix(OxmValue::Ipv4Dst, addr, len)];
        c.add(
            200,
            100 + u16::from(len),
            m,
            vec![Instruction::WriteActions(actions)],
        );
        routes.insert(addr, len, i as u32);
    }
    let uplinks = u64::from(UPLINKS.end() - UPLINKS.start() + 1);
    let flows = (0..n as u32)
        .map(|i| {
            let ce = rng.below(u64::from(GW_CES)) as u32;
            let u = rng.below(u64::from(GW_USERS)) as u32;
            let route = table_200[rng.below(table_200.len() as u64) as usize];
            let remote = inside(rng, route);
            let port = 1024 + (i % 60_000) as u16;
            let (in_port, spec) = if i % 2 == 0 {
                let spec = Spec {
                    dst_mac: mac(3, 0),
                    src_mac: mac(10, ce),
                    src: gw_private(u),
                    dst: remote,
                    proto: UDP,
                    sport: port,
                    dport: 443,
                    flow: i,
                };
                (gw_ce_port(ce), spec)
            } else {
                let spec = Spec {
                    dst_mac: mac(3, 0),
                    src_mac: mac(12, 0),
                    src: remote,
                    dst: gw_public(ce, u),
                    proto: UDP,
                    sport: 443,
                    dport: port,
                    flow: i,
                };
                (UPLINKS.start() + rng.below(uplinks) as u32, spec)
            };
            Flow {
                in_port,
                frame: frames::build(&spec),
            }
        })
        .collect();
    let churn = prefixes(20_000, &mut Rng(77))
        .into_iter()
        .map(|(addr, len)| {
            let m = vec![ipv4(), prefix(OxmValue::Ipv4Dst, addr | 0x0100_0000, len)];
            let ins = vec![Instruction::WriteActions(vec![out(*UPLINKS.start())])];
            churn_pair(200, 100 + u16::from(len), m, ins)
        })
        .collect();
    Workload {
        messages: c.messages,
        flows,
        churn,
        reference: Box::new(reference::Gw { routes }),
    }
}
