//! Table II of seed 000 (HARMLESS) for this datapath: the four evaluation pipelines (L2 MAC
//! table, L3 routing with next-hop groups, load balancer + ACL, access gateway) at 100, 1K,
//! 10K and 100K flows, one core, 64-byte packets, in memory; then each pipeline at 10K flows
//! while another thread applies 10K flow-mods per second. Beside LB, the rows `LBh` run LB
//! written by hand for its rules ([`hand_lb`]): what code compiled for those tables could
//! reach.
//!
//! `cargo bench -p dataplane --bench table2`; `HAIRPIN_BENCH_QUICK=1` for a short run,
//! `HAIRPIN_BENCH_JSON=path` to also write the results as JSON, `HAIRPIN_BENCH_BATCH=n` to
//! change the batch size (default `dataplane::batch::BURST`, the daemon's receive burst of
//! 256), `HAIRPIN_BENCH_ONLY=L2:100` to run one cell
//! (`LB,GW:100`: cases and cells; `churn`: only the flow-mod run), `HAIRPIN_BENCH_PUBLISH_MS`
//! for the barrier interval of the flow-mod run (default 10), `HAIRPIN_BENCH_ISA=baseline` to
//! run the pipeline's x86-64 baseline copy instead of the best this CPU has
//! (`dataplane::isa`), `HAIRPIN_BENCH_TRACE_PACKETS=n` to lengthen each cell's trace to `n`
//! packets (see [`lengthen`]).

use dataplane::batch::{PacketBatch, PacketInEvent, PacketSink};
use dataplane::counters::{FlowCounters, GroupCounters};
use dataplane::datapath::{self, DatapathConfig, DatapathWriter};
use dataplane::ir::{port, Action, Instruction, GROUP_ANY};
use dataplane::isa::Isa;
use dataplane::key::{Field, FieldValue, FlowMatch};
use dataplane::model::{FlowId, Group, GroupBucket, GroupType, Op, OpSink, PortInfo};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "table2/hand_lb.rs"]
mod hand_lb;

/// Large tables on huge pages, as in the daemon.
#[global_allocator]
static ALLOC: dataplane::hugepages::HugePageAlloc = dataplane::hugepages::HugePageAlloc;

/// Ports 1..=48 are the "legacy switch" access ports, 49 the uplink / external port.
const ACCESS_PORTS: u32 = 48;
const EXTERNAL: u32 = 49;
const SIZES: [usize; 4] = [100, 1_000, 10_000, 100_000];

/// splitmix64: deterministic traces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A 64-byte Ethernet/IPv4/UDP or TCP frame. Traces hold their frames by value, one after
/// the other, as a receive ring does (not as separate heap allocations scattered between
/// the pipeline's own).
fn frame(
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    src: u32,
    dst: u32,
    proto: u8,
    sport: u16,
    dport: u16,
) -> [u8; 64] {
    let mut p = [0u8; 64];
    p[0..6].copy_from_slice(&dst_mac);
    p[6..12].copy_from_slice(&src_mac);
    p[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut p[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&50u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = proto;
    ip[12..16].copy_from_slice(&src.to_be_bytes());
    ip[16..20].copy_from_slice(&dst.to_be_bytes());
    let c = dataplane::checksum::ipv4_header(ip).unwrap_or(0);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    p[34..36].copy_from_slice(&sport.to_be_bytes());
    p[36..38].copy_from_slice(&dport.to_be_bytes());
    if proto == 17 {
        p[38..40].copy_from_slice(&30u16.to_be_bytes());
    } else {
        p[46] = 0x50;
    }
    p
}

fn mac(tag: u8, i: u32) -> [u8; 6] {
    let b = i.to_be_bytes();
    [0x02, tag, b[0], b[1], b[2], b[3]]
}

/// Builds a pipeline for a number of flows.
type Builder = fn(usize, &mut Rng) -> Pipeline;

struct Pipeline {
    ops: Vec<Op>,
    trace: Vec<(u32, [u8; 64])>,
    /// Flow-mods for the churn run: (insert, remove) pairs on a large table.
    churn: Vec<(Op, Op)>,
}

fn insert(table: u8, id: u64, priority: u16, match_: FlowMatch, ins: Vec<Instruction>) -> Op {
    Op::InsertFlow {
        table,
        id: FlowId(id),
        priority,
        cookie: id,
        match_,
        instructions: ins.into(),
        counters: FlowCounters::new(),
    }
}

fn out(port: u32) -> Action {
    Action::Output {
        port,
        max_len: 0xffff,
    }
}

fn fields(f: &[(Field, u128)]) -> FlowMatch {
    let mut m = FlowMatch::any();
    for &(field, v) in f {
        m.set(field, FieldValue(v), None);
    }
    m
}

fn with_prefix(mut m: FlowMatch, field: Field, addr: u32, len: u8) -> FlowMatch {
    let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
    m.set(
        field,
        FieldValue::from(addr & mask),
        Some(FieldValue::from(mask)),
    );
    m
}

/// Catch-all to the external port (seed 000: "default catch-all rules forward
/// unmatched/dropped packets to the external port").
fn catch_all(table: u8, id: u64) -> Op {
    insert(
        table,
        id,
        0,
        FlowMatch::any(),
        vec![Instruction::ApplyActions(vec![out(EXTERNAL)])],
    )
}

/// L2: one static MAC table with `n` entries; `n` destination MACs in the trace.
fn l2(n: usize, rng: &mut Rng) -> Pipeline {
    let mut ops = vec![catch_all(0, u64::MAX)];
    let mut trace = Vec::new();
    for i in 0..n as u32 {
        let port_no = 1 + i % ACCESS_PORTS;
        ops.push(insert(
            0,
            u64::from(i),
            100,
            fields(&[(Field::EthDst, FieldValue::mac(mac(1, i)).0)]),
            vec![Instruction::ApplyActions(vec![out(port_no)])],
        ));
        let in_port = 1 + (port_no + rng.below(u64::from(ACCESS_PORTS) - 1) as u32) % ACCESS_PORTS;
        trace.push((
            in_port,
            frame(
                mac(1, i),
                mac(9, rng.below(1 << 20) as u32),
                0x0a00_0001,
                0x0a00_0002,
                17,
                1,
                2,
            ),
        ));
    }
    let churn = (0..20_000u32)
        .map(|i| {
            let id = 1_000_000 + u64::from(i);
            let m = fields(&[(Field::EthDst, FieldValue::mac(mac(7, i)).0)]);
            (
                insert(0, id, 100, m, vec![Instruction::ApplyActions(vec![out(1)])]),
                Op::RemoveFlow {
                    table: 0,
                    id: FlowId(id),
                },
            )
        })
        .collect();
    Pipeline { ops, trace, churn }
}

/// Random prefixes, mostly /24 like a real routing table, inside a few /8s.
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
        let addr = (top << 24) | (rng.next() as u32 & 0x00ff_ffff);
        let mask = u32::MAX << (32 - u32::from(len));
        if seen.insert((addr & mask, len)) {
            out.push((addr & mask, len));
        }
    }
    out
}

/// An address inside a prefix.
fn inside(rng: &mut Rng, (addr, len): (u32, u8)) -> u32 {
    let host = if len >= 32 {
        0
    } else {
        (rng.next() as u32) & (u32::MAX >> len)
    };
    addr | host
}

fn next_hop_groups(ops: &mut Vec<Op>, first: u32) {
    for g in 0..10u32 {
        let actions = vec![
            Action::SetField(Field::EthSrc, FieldValue::mac(mac(3, 0))),
            Action::SetField(Field::EthDst, FieldValue::mac(mac(4, g))),
            Action::DecNwTtl,
            out(1 + g),
        ];
        let bucket = GroupBucket {
            weight: 1,
            watch_port: port::ANY,
            watch_group: GROUP_ANY,
            actions,
        };
        ops.push(Op::SetGroup {
            id: first + g,
            group: Group {
                kind: GroupType::Indirect,
                buckets: vec![bucket],
                counters: GroupCounters::new(1),
            },
        });
    }
}

/// L3 (Fig. 5): table 0 in_port, table 2 IP/non-IP (non-IP to the controller), table 10 LPM
/// over `n` prefixes spread on 10 next-hop groups.
fn l3(n: usize, rng: &mut Rng) -> Pipeline {
    let mut ops = Vec::new();
    next_hop_groups(&mut ops, 1);
    for p in 1..=ACCESS_PORTS {
        ops.push(insert(
            0,
            u64::from(p),
            10,
            fields(&[(Field::InPort, u128::from(p))]),
            vec![Instruction::GotoTable(2)],
        ));
    }
    ops.push(catch_all(0, 100));
    ops.push(insert(
        2,
        200,
        10,
        fields(&[(Field::EthType, 0x0800)]),
        vec![Instruction::GotoTable(10)],
    ));
    ops.push(insert(
        2,
        201,
        0,
        FlowMatch::any(),
        vec![Instruction::ApplyActions(vec![Action::Output {
            port: port::CONTROLLER,
            max_len: 128,
        }])],
    ));
    ops.push(catch_all(10, 300));
    let routes = prefixes(n, rng);
    let mut trace = Vec::new();
    for (i, &(addr, len)) in routes.iter().enumerate() {
        let m = with_prefix(
            fields(&[(Field::EthType, 0x0800)]),
            Field::Ipv4Dst,
            addr,
            len,
        );
        let group = 1 + (i % 10) as u32;
        ops.push(insert(
            10,
            1000 + i as u64,
            100 + u16::from(len),
            m,
            vec![Instruction::WriteActions(vec![Action::Group(group)])],
        ));
        let dst = inside(rng, (addr, len));
        let in_port = 1 + rng.below(u64::from(ACCESS_PORTS)) as u32;
        trace.push((
            in_port,
            frame(
                mac(3, 0),
                mac(5, i as u32),
                0x0b00_0000 | i as u32,
                dst,
                17,
                1000,
                2000,
            ),
        ));
    }
    let churn = prefixes(20_000, &mut Rng(99))
        .into_iter()
        .enumerate()
        .map(|(i, (addr, len))| {
            let id = 10_000_000 + i as u64;
            let m = with_prefix(
                fields(&[(Field::EthType, 0x0800)]),
                Field::Ipv4Dst,
                addr | 0x0100_0000,
                len,
            );
            (
                insert(
                    10,
                    id,
                    100 + u16::from(len),
                    m,
                    vec![Instruction::WriteActions(vec![Action::Group(1)])],
                ),
                Op::RemoveFlow {
                    table: 10,
                    id: FlowId(id),
                },
            )
        })
        .collect();
    Pipeline { ops, trace, churn }
}

/// The name of the hand-written LB's rows (`HAIRPIN_BENCH_ONLY` selects them by it).
const HAND_LB: &str = "LBh";

/// The load balancer's web services.
const LB_SERVICES: u32 = 100;

/// The address of web service `s`.
fn lb_service(s: u32) -> u32 {
    0xc0a8_0000 | s
}

/// The backend of service `s` for the half `half` of the source address space: the MAC
/// address the load balancer writes and the port it sends to.
fn lb_backend(s: u32, half: u32) -> ([u8; 6], u32) {
    let b = s * 2 + half;
    (mac(6, b), 1 + b % ACCESS_PORTS)
}

/// Load balancer + ACL (Fig. 6) with 100 web services; `n` flows, 70% to a service.
fn lb(n: usize, rng: &mut Rng) -> Pipeline {
    let mut ops = Vec::new();
    for p in 1..=ACCESS_PORTS {
        ops.push(insert(
            0,
            u64::from(p),
            10,
            fields(&[(Field::InPort, u128::from(p))]),
            vec![Instruction::ApplyActions(vec![out(EXTERNAL)])],
        ));
    }
    ops.push(insert(
        0,
        100,
        10,
        fields(&[(Field::InPort, u128::from(EXTERNAL))]),
        vec![Instruction::GotoTable(1)],
    ));
    ops.push(catch_all(1, 101));
    ops.push(catch_all(2, 102));
    for s in 0..LB_SERVICES {
        let web = fields(&[
            (Field::EthType, 0x0800),
            (Field::IpProto, 6),
            (Field::Ipv4Dst, u128::from(lb_service(s))),
            (Field::TcpDst, 80),
        ]);
        ops.push(insert(
            1,
            1000 + u64::from(s),
            10,
            web,
            vec![Instruction::GotoTable(2)],
        ));
        for half in 0..2u32 {
            let m = with_prefix(
                fields(&[
                    (Field::EthType, 0x0800),
                    (Field::Ipv4Dst, u128::from(lb_service(s))),
                ]),
                Field::Ipv4Src,
                half << 31,
                1,
            );
            let (backend_mac, backend) = lb_backend(s, half);
            let actions = vec![
                Action::SetField(Field::EthDst, FieldValue::mac(backend_mac)),
                out(backend),
            ];
            ops.push(insert(
                2,
                2000 + u64::from(s * 2 + half),
                10,
                m,
                vec![Instruction::ApplyActions(actions)],
            ));
        }
    }
    let mut trace = Vec::new();
    for i in 0..n as u32 {
        let src = rng.next() as u32;
        let sport = 1024 + rng.below(60_000) as u16;
        let f = if rng.below(100) < 70 {
            frame(
                mac(3, 0),
                mac(8, i),
                src,
                lb_service(rng.below(u64::from(LB_SERVICES)) as u32),
                6,
                sport,
                80,
            )
        } else {
            frame(mac(3, 0), mac(8, i), src, rng.next() as u32, 17, sport, 53)
        };
        trace.push((EXTERNAL, f));
    }
    let churn = (0..20_000u32)
        .map(|i| {
            let id = 10_000_000 + u64::from(i);
            let m = fields(&[
                (Field::EthType, 0x0800),
                (Field::IpProto, 6),
                (Field::Ipv4Dst, u128::from(0xac10_0000 | i)),
                (Field::TcpDst, 80),
            ]);
            (
                insert(1, id, 10, m, vec![Instruction::GotoTable(2)]),
                Op::RemoveFlow {
                    table: 1,
                    id: FlowId(id),
                },
            )
        })
        .collect();
    Pipeline { ops, trace, churn }
}

/// Access gateway (Fig. 7): 10 CEs x 20 users, per-CE NAT tables 11..=20, a 10K-prefix
/// routing table 200, network-to-user table 110; `n` flows, half each direction.
fn gw(n: usize, rng: &mut Rng) -> Pipeline {
    const CES: u32 = 10;
    const USERS: u32 = 20;
    const ACCESS: u32 = 1;
    const NETWORK: u32 = 2;
    let private = |u: u32| 0x0a00_0000 | (u + 1);
    let public = |ce: u32, u: u32| 0xc633_6400 | (ce * USERS + u);
    let mut ops = Vec::new();
    for ce in 0..CES {
        let table = 11 + ce as u8;
        ops.push(insert(
            0,
            u64::from(ce),
            10,
            fields(&[
                (Field::InPort, u128::from(ACCESS)),
                (Field::EthSrc, FieldValue::mac(mac(10, ce)).0),
            ]),
            vec![Instruction::GotoTable(table)],
        ));
        ops.push(insert(
            table,
            100 + u64::from(ce),
            0,
            FlowMatch::any(),
            vec![Instruction::ApplyActions(vec![Action::Output {
                port: port::CONTROLLER,
                max_len: 128,
            }])],
        ));
        for u in 0..USERS {
            let m = fields(&[
                (Field::EthType, 0x0800),
                (Field::Ipv4Src, u128::from(private(u))),
            ]);
            let nat = vec![
                Instruction::ApplyActions(vec![Action::SetField(
                    Field::Ipv4Src,
                    FieldValue::from(public(ce, u)),
                )]),
                Instruction::GotoTable(200),
            ];
            ops.push(insert(table, 1000 + u64::from(ce * USERS + u), 10, m, nat));
            let down = fields(&[
                (Field::EthType, 0x0800),
                (Field::Ipv4Dst, u128::from(public(ce, u))),
            ]);
            let actions = vec![
                Action::SetField(Field::Ipv4Dst, FieldValue::from(private(u))),
                Action::SetField(Field::EthDst, FieldValue::mac(mac(10, ce))),
                out(ACCESS),
            ];
            ops.push(insert(
                110,
                5000 + u64::from(ce * USERS + u),
                10,
                down,
                vec![Instruction::ApplyActions(actions)],
            ));
        }
    }
    ops.push(insert(
        0,
        50,
        10,
        fields(&[(Field::InPort, u128::from(NETWORK))]),
        vec![Instruction::GotoTable(110)],
    ));
    ops.push(catch_all(0, 51));
    ops.push(catch_all(110, 52));
    ops.push(catch_all(200, 53));
    let routes = prefixes(10_000, rng);
    for (i, &(addr, len)) in routes.iter().enumerate() {
        let m = with_prefix(
            fields(&[(Field::EthType, 0x0800)]),
            Field::Ipv4Dst,
            addr,
            len,
        );
        let actions = vec![
            Action::DecNwTtl,
            Action::SetField(Field::EthDst, FieldValue::mac(mac(11, i as u32 % 16))),
            out(NETWORK),
        ];
        ops.push(insert(
            200,
            100_000 + i as u64,
            100 + u16::from(len),
            m,
            vec![Instruction::WriteActions(actions)],
        ));
    }
    let mut trace = Vec::new();
    for i in 0..n as u32 {
        let ce = rng.below(u64::from(CES)) as u32;
        let u = rng.below(u64::from(USERS)) as u32;
        let route = routes[rng.below(routes.len() as u64) as usize];
        let remote = inside(rng, route);
        let port_no = 1024 + (i % 60_000) as u16;
        let f = if i % 2 == 0 {
            (
                ACCESS,
                frame(mac(3, 0), mac(10, ce), private(u), remote, 17, port_no, 443),
            )
        } else {
            (
                NETWORK,
                frame(
                    mac(3, 0),
                    mac(12, 0),
                    remote,
                    public(ce, u),
                    17,
                    443,
                    port_no,
                ),
            )
        };
        trace.push(f);
    }
    let churn = prefixes(20_000, &mut Rng(77))
        .into_iter()
        .enumerate()
        .map(|(i, (addr, len))| {
            let id = 10_000_000 + i as u64;
            let m = with_prefix(
                fields(&[(Field::EthType, 0x0800)]),
                Field::Ipv4Dst,
                addr | 0x0100_0000,
                len,
            );
            (
                insert(
                    200,
                    id,
                    100 + u16::from(len),
                    m,
                    vec![Instruction::WriteActions(vec![out(NETWORK)])],
                ),
                Op::RemoveFlow {
                    table: 200,
                    id: FlowId(id),
                },
            )
        })
        .collect();
    Pipeline { ops, trace, churn }
}

/// Counts what comes out and sums where it went (which also keeps it from being optimised
/// away).
#[derive(Default)]
struct CountingSink {
    outputs: u64,
    packet_ins: u64,
    checksum: u64,
}

impl PacketSink for CountingSink {
    fn output(&mut self, port: u32, frame: &[u8]) {
        self.outputs += 1;
        // The destination MAC address and the port: what the pipelines decide.
        let head = frame
            .first_chunk::<8>()
            .map_or(0, |h| u64::from_le_bytes(*h));
        self.checksum = self
            .checksum
            .rotate_left(5)
            .wrapping_add(u64::from(port) ^ head);
    }

    fn packet_in(&mut self, ev: &PacketInEvent<'_>) {
        self.packet_ins += 1;
        self.checksum = self.checksum.wrapping_add(u64::from(ev.total_len));
    }
}

struct Cell {
    /// Per CPU-second of the datapath thread (one dedicated core), best slice.
    mpps: f64,
    /// Median slice.
    median_mpps: f64,
    /// Per wall-clock second (lower when other jobs share the core).
    wall_mpps: f64,
    ns_per_packet: f64,
    outputs_per_packet: f64,
}

impl Cell {
    /// The cell's row of the printed table; `target` is left blank for rows without one.
    fn row(&self, name: &str, n: usize, target: Option<f64>) -> String {
        let mark = match target {
            Some(t) if self.mpps >= t => "",
            Some(_) => " (below target)",
            None => "",
        };
        let target = target.map_or(String::new(), |t| format!("{t:.0}"));
        format!(
            "{name:<4} {n:>7} {:>9.2} {:>9.1} {:>9.2} {:>9.2} {target:>8} {:>7.2}{mark}",
            self.mpps,
            self.ns_per_packet,
            self.median_mpps,
            self.wall_mpps,
            self.outputs_per_packet
        )
    }

    /// The cell's figures as JSON members.
    fn json_members(&self, n: usize) -> String {
        format!(
            "\"flows\":{n},\"mpps\":{:.3},\"ns_per_packet\":{:.2},\"median_mpps\":{:.3},\"wall_mpps\":{:.3}",
            self.mpps, self.ns_per_packet, self.median_mpps, self.wall_mpps
        )
    }
}

fn build(p: &Pipeline) -> (DatapathWriter, datapath::DatapathReaderFactory) {
    let (mut w, f) = datapath::new(DatapathConfig::default());
    for port_no in 1..=EXTERNAL {
        w.apply(Op::SetPort {
            port_no,
            counters: w.port_counters(port_no).unwrap_or_default(),
            info: PortInfo {
                live: true,
                ..PortInfo::default()
            },
        });
    }
    for op in &p.ops {
        w.apply(op.clone());
    }
    w.publish();
    (w, f)
}

/// CPU time this thread has run, in ns (Linux schedstat). The machine is shared by other
/// jobs, so throughput is packets per second *of CPU time the datapath thread got*: what one
/// dedicated core does. Wall-clock throughput is reported beside it.
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// What the benchmark drives with a trace: the datapath's reader, or LB written by hand.
trait Process {
    fn run(&mut self, now: u64, batch: &mut PacketBatch, sink: &mut CountingSink);
}

impl Process for datapath::DatapathReader {
    fn run(&mut self, now: u64, batch: &mut PacketBatch, sink: &mut CountingSink) {
        self.process(now, batch, sink);
    }
}

impl Process for hand_lb::HandLb {
    fn run(&mut self, _now: u64, batch: &mut PacketBatch, sink: &mut CountingSink) {
        self.process(batch, sink);
    }
}

/// Drives a reader with the trace, batch after batch, refilling each batch from the pristine
/// trace as a receive ring would.
struct Traffic<'t> {
    trace: &'t [(u32, [u8; 64])],
    batch: PacketBatch,
    sink: CountingSink,
    next: usize,
    now: u64,
}

/// One measured slice.
struct Slice {
    packets: u64,
    cpu_s: f64,
    wall_s: f64,
    outputs: u64,
}

impl Slice {
    /// Packets per CPU-second of the datapath thread, in millions.
    fn mpps(&self) -> f64 {
        self.packets as f64 / self.cpu_s / 1e6
    }
}

impl<'t> Traffic<'t> {
    fn new(trace: &'t [(u32, [u8; 64])], batch_size: usize) -> Self {
        Traffic {
            trace,
            batch: PacketBatch::new(batch_size, 2048),
            sink: CountingSink::default(),
            next: 0,
            now: 1,
        }
    }

    fn batch(&mut self, reader: &mut impl Process) -> u64 {
        let n = self.batch.capacity();
        for _ in 0..n {
            let (p, f) = &self.trace[self.next];
            self.batch.push(*p, f);
            // Wrapping by comparison: a division per packet would be the benchmark's own cost.
            self.next += 1;
            if self.next == self.trace.len() {
                self.next = 0;
            }
        }
        reader.run(self.now, &mut self.batch, &mut self.sink);
        n as u64
    }

    /// Runs for `dur` and reports the slice (CPU time of this thread: the machine is shared,
    /// and CPU time is what one dedicated core would have given).
    fn slice(&mut self, reader: &mut impl Process, dur: Duration) -> Slice {
        let (out0, in0) = (self.sink.outputs, self.sink.packet_ins);
        let start = Instant::now();
        let cpu_start = thread_cpu_ns();
        let mut packets = 0;
        loop {
            for _ in 0..64 {
                packets += self.batch(reader);
            }
            self.now += 1;
            if start.elapsed() >= dur {
                break;
            }
        }
        let wall_s = start.elapsed().as_secs_f64();
        let cpu_s = match (cpu_start, thread_cpu_ns()) {
            (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
            _ => wall_s,
        };
        Slice {
            packets,
            cpu_s,
            wall_s,
            outputs: self.sink.outputs + self.sink.packet_ins - out0 - in0,
        }
    }
}

/// Extends `trace` (one packet per flow) to `packets` packets of its flows drawn at random,
/// so the trace repeats only every `packets` packets: a replayed trace of a few thousand
/// packets is a sequence the CPU's predictors learn, and live traffic is not. A packet at
/// position `k` is drawn from the flows at positions equal to `k` modulo [`PHASE`], which
/// keeps the generators' own cycles.
fn lengthen(trace: &mut Vec<(u32, [u8; 64])>, packets: usize) {
    let flows = trace.len();
    let mut rng = Rng(flows as u64 ^ 0x5eed);
    while trace.len() < packets && flows >= PHASE {
        let phase = trace.len() % PHASE;
        let class = (flows - phase).div_ceil(PHASE) as u64;
        trace.push(trace[phase + PHASE * rng.below(class) as usize]);
    }
}

/// The generators' cycles divide it: L2 sends to the 48 access ports in turn, the gateway's
/// packets alternate between the two directions.
const PHASE: usize = 48;

/// The best and the median of some rates.
fn best_and_median(mut rates: Vec<f64>) -> (f64, f64) {
    rates.sort_by(f64::total_cmp);
    let best = rates.last().copied().unwrap_or(0.0);
    (best, rates.get(rates.len() / 2).copied().unwrap_or(0.0))
}

/// Runs the trace through a reader for `dur`: a fifth to warm up, then ten slices whose best
/// and median are kept, so other jobs' bursts on the shared machine do not decide the result.
fn measure(
    reader: &mut impl Process,
    trace: &[(u32, [u8; 64])],
    batch_size: usize,
    dur: Duration,
) -> Cell {
    const SLICES: u32 = 10;
    let mut traffic = Traffic::new(trace, batch_size);
    traffic.slice(reader, dur / 5);
    let slices: Vec<Slice> = (0..SLICES)
        .map(|_| traffic.slice(reader, dur / SLICES))
        .collect();
    std::hint::black_box(traffic.sink.checksum);
    let packets: u64 = slices.iter().map(|s| s.packets).sum();
    let wall: f64 = slices.iter().map(|s| s.wall_s).sum();
    let outputs: u64 = slices.iter().map(|s| s.outputs).sum();
    let (best, median) = best_and_median(slices.iter().map(Slice::mpps).collect());
    Cell {
        mpps: best,
        median_mpps: median,
        wall_mpps: packets as f64 / wall / 1e6,
        ns_per_packet: 1e3 / best,
        outputs_per_packet: outputs as f64 / packets as f64,
    }
}

/// Runs `packets` packets of the trace (rounded up to whole batches), untimed; returns a
/// line with the number of outputs and packet-ins and the sink's checksum (the ports and
/// frames sent), by which two implementations of one pipeline can be compared.
fn run_packets(
    reader: &mut impl Process,
    trace: &[(u32, [u8; 64])],
    batch_size: usize,
    packets: u64,
) -> String {
    let mut traffic = Traffic::new(trace, batch_size);
    let mut done = 0u64;
    while done < packets {
        done += traffic.batch(reader);
    }
    let sink = &traffic.sink;
    format!(
        "ran {done} packets, {} outputs, checksum {:#x}",
        sink.outputs + sink.packet_ins,
        sink.checksum
    )
}

/// Throughput with and without flow-mods, in alternating slices of one run: another thread
/// applies `rate` flow-mods per second (publishing, the barrier, every `publish`) during the
/// "on" slices and idles during the "off" ones. Comparing each "on" slice with the "off"
/// slice just before it keeps changes of the shared machine's load out of the loss figure.
struct Churn {
    /// Best of the slices without flow-mods.
    base: f64,
    /// Best of the slices with flow-mods.
    under: f64,
    /// Loss of throughput, in percent: one minus the median ratio of a slice with flow-mods
    /// to the slice without just before it (neighbouring slices see the same load from the
    /// rest of the machine, so the ratio keeps that load out).
    loss_percent: f64,
    flow_mods: u64,
}

fn measure_churn(
    p: Pipeline,
    isa: Isa,
    batch_size: usize,
    dur: Duration,
    rate: u64,
    publish: Duration,
) -> Churn {
    const PAIRS: u32 = 16;
    let (mut w, f) = build(&p);
    let mut reader = f.reader();
    reader.set_isa(isa);
    let active = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let (active_w, stop_w) = (Arc::clone(&active), Arc::clone(&stop));
    let churn = p.churn;
    let writer = std::thread::spawn(move || {
        let mut done = 0u64;
        let mut owed = 0f64;
        let mut i = 0usize;
        let mut installed = std::collections::VecDeque::new();
        let mut last = Instant::now();
        while !stop_w.load(Ordering::Relaxed) {
            let elapsed = last.elapsed().as_secs_f64();
            last = Instant::now();
            if !active_w.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            owed += elapsed * rate as f64;
            while owed >= 1.0 {
                if installed.len() >= 1000 {
                    if let Some(k) = installed.pop_front() {
                        let (_, remove): &(Op, Op) = &churn[k];
                        w.apply(remove.clone());
                    }
                } else {
                    w.apply(churn[i].0.clone());
                    installed.push_back(i);
                    i = (i + 1) % churn.len();
                }
                owed -= 1.0;
                done += 1;
            }
            w.publish();
            std::thread::sleep(publish);
        }
        done
    });
    let mut traffic = Traffic::new(&p.trace, batch_size);
    traffic.slice(&mut reader, dur / 5);
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..PAIRS {
        active.store(false, Ordering::Relaxed);
        off.push(traffic.slice(&mut reader, dur / PAIRS / 2).mpps());
        active.store(true, Ordering::Relaxed);
        on.push(traffic.slice(&mut reader, dur / PAIRS / 2).mpps());
    }
    std::hint::black_box(traffic.sink.checksum);
    stop.store(true, Ordering::Relaxed);
    let flow_mods = writer.join().unwrap_or(0);
    let ratios = off.iter().zip(&on).map(|(a, b)| b / a).collect();
    let (_, median_ratio) = best_and_median(ratios);
    Churn {
        base: best_and_median(off).0,
        under: best_and_median(on).0,
        loss_percent: ((1.0 - median_ratio) * 100.0).max(0.0),
        flow_mods,
    }
}

/// A number from the environment variable `name`; `None` when unset or not a number.
fn env_number<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok()?.parse().ok()
}

fn main() {
    let quick = std::env::var("HAIRPIN_BENCH_QUICK").is_ok_and(|v| v != "0" && !v.is_empty());
    let batch_size = env_number("HAIRPIN_BENCH_BATCH")
        .unwrap_or(dataplane::batch::BURST)
        .clamp(1, 256);
    let isa = match std::env::var("HAIRPIN_BENCH_ISA").as_deref() {
        Ok("baseline") => Isa::Baseline,
        _ => Isa::detect(),
    };
    let dur = if quick {
        Duration::from_millis(150)
    } else {
        Duration::from_secs(2)
    };
    let builders: [(&str, Builder, f64); 4] = [
        ("L2", l2, 22.0),
        ("L3", l3, 13.0),
        ("LB", lb, 22.0),
        ("GW", gw, 13.0),
    ];
    let trace_packets: usize = env_number("HAIRPIN_BENCH_TRACE_PACKETS").unwrap_or(0);
    println!(
        "Table II (seed 000) for the Hairpin dataplane: one core, 64-byte packets, batch \
         {batch_size}, {isa:?} pipeline{}",
        match trace_packets {
            0 => String::new(),
            n => format!(", traces of at least {n} packets"),
        }
    );
    println!(
        "Mpps = packets per CPU-second of the datapath thread, best of 10 slices (median beside)."
    );
    println!(
        "{:<4} {:>7} {:>9} {:>9} {:>9} {:>9} {:>8} {:>7}",
        "case", "flows", "Mpps", "ns/pkt", "median", "wall-Mpps", "target", "out/pkt"
    );
    // HAIRPIN_BENCH_ONLY=L2:100 restricts the run to one cell (for profiling); a comma
    // separated list of cells and cases (`LB,GW:100`) to several.
    let only = std::env::var("HAIRPIN_BENCH_ONLY").ok();
    // HAIRPIN_BENCH_PACKETS=n runs exactly n packets per cell, untimed (for instruction
    // counts under callgrind: divide `process`'s inclusive cost by n).
    let count: Option<u64> = env_number("HAIRPIN_BENCH_PACKETS");
    let selected = |name: &str, n: usize| {
        only.as_deref().is_none_or(|o| {
            o.split(',')
                .any(|c| c == name || c == format!("{name}:{n}"))
        })
    };
    let mut json = Vec::new();
    for (name, build_pipeline, target) in builders {
        for n in SIZES {
            if !selected(name, n) {
                continue;
            }
            let mut p = build_pipeline(n, &mut Rng(n as u64));
            lengthen(&mut p.trace, trace_packets);
            let (_w, f) = build(&p);
            let mut reader = f.reader();
            reader.set_isa(isa);
            if let Some(packets) = count {
                let ran = run_packets(&mut reader, &p.trace, batch_size, packets);
                println!("{name:<4} {n:>7} {ran}");
                continue;
            }
            let c = measure(&mut reader, &p.trace, batch_size, dur);
            println!("{}", c.row(name, n, Some(target)));
            json.push(format!(
                "{{\"case\":\"{name}\",{},\"target_mpps\":{target}}}",
                c.json_members(n)
            ));
        }
    }
    let mut hand_json = Vec::new();
    let hand_sizes: Vec<usize> = SIZES
        .into_iter()
        .filter(|&n| selected(HAND_LB, n))
        .collect();
    if !hand_sizes.is_empty() {
        println!();
        println!(
            "{HAND_LB}: the LB pipeline written by hand for its rules (a bound for code compiled \
             for these tables, not a switch; benches/table2/hand_lb.rs):"
        );
    }
    for n in hand_sizes {
        let mut p = lb(n, &mut Rng(n as u64));
        lengthen(&mut p.trace, trace_packets);
        let trace = &p.trace;
        // A bound only if it does the same work: one pass of the trace through both must send
        // the same frames to the same ports.
        let (_w, f) = build(&p);
        let packets = trace.len() as u64;
        let mut hand = hand_lb::HandLb::new();
        let by_datapath = run_packets(&mut f.reader(), trace, batch_size, packets);
        let by_hand = run_packets(&mut hand, trace, batch_size, packets);
        if by_hand != by_datapath {
            eprintln!("{HAND_LB} {n}: {by_hand}, but the datapath {by_datapath}");
            std::process::exit(1);
        }
        if let Some(packets) = count {
            let ran = run_packets(&mut hand, trace, batch_size, packets);
            println!("{HAND_LB:<4} {n:>7} {ran}");
            continue;
        }
        let c = measure(&mut hand, trace, batch_size, dur);
        std::hint::black_box(hand.total());
        println!("{}", c.row(HAND_LB, n, None));
        hand_json.push(format!("{{{}}}", c.json_members(n)));
    }
    if count.is_some() || only.as_deref().is_some_and(|o| o != "churn") {
        return;
    }
    println!();
    let publish_ms = env_number("HAIRPIN_BENCH_PUBLISH_MS")
        .unwrap_or(10u64)
        .max(1);
    println!(
        "Under 10K flow-mods/s (10K flows, publish every {publish_ms} ms), slices with and without \
         flow-mods alternating in one run; loss = 1 - median ratio of neighbouring slices:"
    );
    println!(
        "{:<4} {:>9} {:>9} {:>10} {:>7}",
        "case", "base", "churn", "flow-mods", "loss%"
    );
    let mut churn_json = Vec::new();
    for (name, build_pipeline, _) in builders {
        let p = build_pipeline(10_000, &mut Rng(10_000));
        let c = measure_churn(
            p,
            isa,
            batch_size,
            2 * dur,
            10_000,
            Duration::from_millis(publish_ms),
        );
        println!(
            "{name:<4} {:>9.2} {:>9.2} {:>10} {:>7.1}",
            c.base, c.under, c.flow_mods, c.loss_percent
        );
        churn_json.push(format!(
            "{{\"case\":\"{name}\",\"flows\":10000,\"base_mpps\":{:.3},\"churn_mpps\":{:.3},\"flow_mods\":{},\"loss_percent\":{:.2}}}",
            c.base, c.under, c.flow_mods, c.loss_percent
        ));
    }
    let doc = format!(
        "{{\"batch\":{batch_size},\"isa\":\"{isa:?}\",\"quick\":{quick},\"trace_packets\":{trace_packets},\"publish_ms\":{publish_ms},\"cells\":[{}],\"hand_lb\":[{}],\"churn\":[{}]}}\n",
        json.join(","),
        hand_json.join(","),
        churn_json.join(",")
    );
    if let Ok(path) = std::env::var("HAIRPIN_BENCH_JSON") {
        if let Err(e) = std::fs::write(&path, &doc) {
            eprintln!("cannot write {path}: {e}");
        }
    }
    println!("{doc}");
}
