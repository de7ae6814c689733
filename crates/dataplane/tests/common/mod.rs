//! Shared helpers for the pipeline tests: packet builders, a recording sink, a datapath
//! with ports.
#![allow(dead_code)]

use dataplane::batch::{PacketBatch, PacketInEvent, PacketInReason, PacketSink};
use dataplane::counters::FlowCounters;
use dataplane::datapath::{
    self, DatapathConfig, DatapathReader, DatapathReaderFactory, DatapathWriter,
};
use dataplane::ir::{Action, Instruction};
use dataplane::key::{Field, FieldValue, FlowMatch};
use dataplane::model::{FlowId, Op, OpSink, PortInfo};
use std::sync::Arc;

pub const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
pub const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];

/// An Ethernet + IPv4 + UDP frame (checksums valid), `len` bytes long (>= 42).
pub fn udp4(src: u32, dst: u32, sport: u16, dport: u16, ttl: u8, len: usize) -> Vec<u8> {
    let mut p = Vec::with_capacity(len);
    p.extend_from_slice(&MAC_B);
    p.extend_from_slice(&MAC_A);
    p.extend_from_slice(&0x0800u16.to_be_bytes());
    let ip_len = (len - 14) as u16;
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[8] = ttl;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&src.to_be_bytes());
    ip[16..20].copy_from_slice(&dst.to_be_bytes());
    let c = dataplane::checksum::ipv4_header(&ip).unwrap_or(0);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    p.extend_from_slice(&ip);
    let udp_len = ip_len - 20;
    let mut udp = vec![0u8; usize::from(udp_len)];
    udp[0..2].copy_from_slice(&sport.to_be_bytes());
    udp[2..4].copy_from_slice(&dport.to_be_bytes());
    udp[4..6].copy_from_slice(&udp_len.to_be_bytes());
    for (i, b) in udp.iter_mut().enumerate().skip(8) {
        *b = i as u8;
    }
    let pseudo = dataplane::checksum::pseudo_v4(src, dst, 17, udp_len);
    let c = dataplane::checksum::transport(&udp, 6, pseudo, 17).unwrap_or(0);
    udp[6..8].copy_from_slice(&c.to_be_bytes());
    p.extend_from_slice(&udp);
    p
}

/// Whether the IPv4 header and UDP checksums of an untagged or single-tagged frame are valid.
pub fn checksums_ok(frame: &[u8]) -> bool {
    let l3 = if frame[12..14] == [0x81, 0x00] {
        18
    } else {
        14
    };
    let ihl = usize::from(frame[l3] & 0xf) * 4;
    let ip = &frame[l3..l3 + ihl];
    let stored = u16::from_be_bytes([ip[10], ip[11]]);
    if dataplane::checksum::ipv4_header(ip) != Some(stored) {
        return false;
    }
    let src = u32::from_be_bytes(ip[12..16].try_into().unwrap());
    let dst = u32::from_be_bytes(ip[16..20].try_into().unwrap());
    let udp = &frame[l3 + ihl..];
    let pseudo = dataplane::checksum::pseudo_v4(src, dst, 17, udp.len() as u16);
    dataplane::checksum::transport(udp, 6, pseudo, 17) == Some(u16::from_be_bytes([udp[6], udp[7]]))
}

#[derive(Debug, Clone, PartialEq)]
pub struct PacketIn {
    pub reason: PacketInReason,
    pub table_id: u8,
    pub cookie: u64,
    pub buffer_id: u32,
    pub total_len: u16,
    pub in_port: u32,
    pub data: Vec<u8>,
}

/// Records every output and packet-in.
#[derive(Default, Debug)]
pub struct Recorder {
    pub out: Vec<(u32, Vec<u8>)>,
    pub queued: Vec<(u32, u32)>,
    pub pin: Vec<PacketIn>,
}

impl Recorder {
    pub fn ports(&self) -> Vec<u32> {
        self.out.iter().map(|(p, _)| *p).collect()
    }
}

impl PacketSink for Recorder {
    fn output(&mut self, port: u32, frame: &[u8]) {
        self.out.push((port, frame.to_vec()));
    }

    fn output_queue(&mut self, port: u32, queue: u32, frame: &[u8]) {
        self.queued.push((port, queue));
        self.output(port, frame);
    }

    fn packet_in(&mut self, ev: &PacketInEvent<'_>) {
        self.pin.push(PacketIn {
            reason: ev.reason,
            table_id: ev.table_id,
            cookie: ev.cookie,
            buffer_id: ev.buffer_id,
            total_len: ev.total_len,
            in_port: ev.in_port,
            data: ev.data.to_vec(),
        });
    }
}

/// A datapath with live ports 1..=n, published, and a reader of it.
pub fn datapath(n_ports: u32) -> (DatapathWriter, DatapathReader) {
    let (w, f) = datapath_readers(n_ports);
    (w, f.reader())
}

/// A datapath with live ports 1..=n, published, for several readers.
pub fn datapath_readers(n_ports: u32) -> (DatapathWriter, DatapathReaderFactory) {
    let (mut w, f) = datapath::new(DatapathConfig::default());
    for p in 1..=n_ports {
        w.apply(Op::SetPort {
            port_no: p,
            counters: w.port_counters(p).unwrap_or_default(),
            info: PortInfo {
                live: true,
                ..PortInfo::default()
            },
        });
    }
    w.publish();
    (w, f)
}

pub fn flow(
    table: u8,
    id: u64,
    priority: u16,
    m: FlowMatch,
    ins: Vec<Instruction>,
) -> (Op, Arc<FlowCounters>) {
    let counters = FlowCounters::new();
    let op = Op::InsertFlow {
        table,
        id: FlowId(id),
        priority,
        cookie: id,
        match_: m,
        instructions: ins.into(),
        counters: counters.clone(),
    };
    (op, counters)
}

pub fn add_flow(
    w: &mut DatapathWriter,
    table: u8,
    id: u64,
    priority: u16,
    m: FlowMatch,
    ins: Vec<Instruction>,
) -> Arc<FlowCounters> {
    let (op, c) = flow(table, id, priority, m, ins);
    w.apply(op);
    c
}

pub fn out(port: u32) -> Action {
    Action::Output {
        port,
        max_len: 0xffff,
    }
}

pub fn apply(actions: Vec<Action>) -> Instruction {
    Instruction::ApplyActions(actions)
}

pub fn m(fields: &[(Field, u128)]) -> FlowMatch {
    let mut m = FlowMatch::any();
    for &(f, v) in fields {
        m.set(f, FieldValue(v), None);
    }
    m
}

/// Sends frames (in_port, bytes) through the reader as one batch.
pub fn send(r: &mut DatapathReader, now: u64, frames: &[(u32, Vec<u8>)]) -> Recorder {
    let mut batch = PacketBatch::new(frames.len().max(1), 2048);
    for (p, f) in frames {
        assert!(batch.push(*p, f));
    }
    let mut rec = Recorder::default();
    r.process(now, &mut batch, &mut rec);
    rec
}
