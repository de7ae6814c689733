//! What each pipeline must do with a frame, computed without the datapath: the use cases of
//! seed 000 sec. IV-B written as plain Rust over hash maps, reading and rewriting frames at
//! fixed offsets and recomputing checksums from scratch (the datapath parses, classifies and
//! updates checksums incrementally). The benchmark checks every output frame, whole, against
//! these before it times anything.

use super::frames::{self, at, mac, FrameBytes, TCP};
use std::collections::HashMap;

/// Where everything unmatched goes (seed 000: "default catch-all rules forward
/// unmatched/dropped packets to the external port").
pub const EXTERNAL: u32 = 49;
/// The ports of the "legacy switch" (HARMLESS tags the traces' packets with VLAN ids 1..48).
pub const ACCESS_PORTS: u32 = 48;
/// The uplinks LB's and GW's network-side traffic arrives on.
pub const UPLINKS: std::ops::RangeInclusive<u32> = 45..=48;

/// What a pipeline does with one frame.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Output(u32, FrameBytes),
    Controller,
    Drop,
}

/// A pipeline's expected behaviour.
pub trait Reference: Send {
    fn forward(&self, in_port: u32, frame: &FrameBytes) -> Verdict;
}

/// Sends `frame` to `port`, or drops it when that is where it came from (OpenFlow sends to
/// the ingress port only through OFPP_IN_PORT).
fn send(in_port: u32, port: u32, frame: FrameBytes) -> Verdict {
    if port == in_port {
        Verdict::Drop
    } else {
        Verdict::Output(port, frame)
    }
}

/// Longest-prefix match over IPv4 prefixes, one hash probe per prefix length.
#[derive(Default)]
pub struct Routes<T> {
    by_prefix: HashMap<(u32, u8), T>,
    /// The lengths present, longest first.
    lengths: Vec<u8>,
}

impl<T: Copy> Routes<T> {
    pub fn insert(&mut self, addr: u32, len: u8, value: T) {
        self.by_prefix.insert((addr & prefix_mask(len), len), value);
        if !self.lengths.contains(&len) {
            self.lengths.push(len);
            self.lengths.sort_unstable_by(|a, b| b.cmp(a));
        }
    }

    pub fn lookup(&self, addr: u32) -> Option<T> {
        self.lengths
            .iter()
            .find_map(|&len| self.by_prefix.get(&(addr & prefix_mask(len), len)).copied())
    }
}

/// The network mask of a prefix of `len` bits.
pub fn prefix_mask(len: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0)
}

fn put_mac(p: &mut FrameBytes, field: usize, m: [u8; 6]) {
    p[field..field + 6].copy_from_slice(&m);
}

fn put_addr(p: &mut FrameBytes, field: usize, a: u32) {
    p[field..field + 4].copy_from_slice(&a.to_be_bytes());
}

/// L2: a static MAC table.
pub struct L2 {
    pub ports: HashMap<[u8; 6], u32>,
}

impl Reference for L2 {
    fn forward(&self, in_port: u32, frame: &FrameBytes) -> Verdict {
        let dst = frames::fields(frame).dst_mac;
        let port = self.ports.get(&dst).copied().unwrap_or(EXTERNAL);
        send(in_port, port, *frame)
    }
}

/// The next hop of L3's group `g`: its router MAC addresses and port.
pub fn l3_next_hop(g: u32) -> ([u8; 6], [u8; 6], u32) {
    (mac(3, 0), mac(4, g), 1 + g)
}

/// L3 (Fig. 5): access ports only, IPv4 only (else the controller), routes to next-hop
/// groups that rewrite both MAC addresses and decrement the TTL.
pub struct L3 {
    pub routes: Routes<u32>,
}

impl Reference for L3 {
    fn forward(&self, in_port: u32, frame: &FrameBytes) -> Verdict {
        if !(1..=ACCESS_PORTS).contains(&in_port) {
            return send(in_port, EXTERNAL, *frame);
        }
        let f = frames::fields(frame);
        if !f.ipv4 {
            return Verdict::Controller;
        }
        let Some(g) = self.routes.lookup(f.dst) else {
            return send(in_port, EXTERNAL, *frame);
        };
        if f.ttl <= 1 {
            return Verdict::Drop;
        }
        let (src_mac, dst_mac, port) = l3_next_hop(g);
        let mut out = *frame;
        put_mac(&mut out, at::ETH_SRC, src_mac);
        put_mac(&mut out, at::ETH_DST, dst_mac);
        out[at::IP_TTL] = f.ttl - 1;
        frames::seal(&mut out);
        send(in_port, port, out)
    }
}

/// LB's services.
pub const LB_SERVICES: u32 = 100;
/// The ports LB's backends sit on.
pub const LB_INTERNAL: u32 = 44;

pub fn lb_service(s: u32) -> u32 {
    0xc0a8_0000 | s
}

/// The backend of service `s` for the half `half` of the source address space: the MAC
/// address the balancer writes and the port it sends to.
pub fn lb_backend(s: u32, half: u32) -> ([u8; 6], u32) {
    let b = s * 2 + half;
    (mac(6, b), 1 + b % LB_INTERNAL)
}

/// Load balancer and ACL (Fig. 6): internal traffic leaves by the external port; traffic
/// from the uplinks to a service's TCP port 80 goes to the backend for its source's half,
/// the rest to the external port.
pub struct Lb {
    pub services: HashMap<u32, u32>,
}

impl Reference for Lb {
    fn forward(&self, in_port: u32, frame: &FrameBytes) -> Verdict {
        if !UPLINKS.contains(&in_port) {
            return send(in_port, EXTERNAL, *frame);
        }
        let f = frames::fields(frame);
        let web = f.ipv4 && f.proto == TCP && f.dport == 80;
        let Some(&s) = self.services.get(&f.dst).filter(|_| web) else {
            return send(in_port, EXTERNAL, *frame);
        };
        let (backend_mac, port) = lb_backend(s, f.src >> 31);
        let mut out = *frame;
        put_mac(&mut out, at::ETH_DST, backend_mac);
        send(in_port, port, out)
    }
}

pub const GW_CES: u32 = 10;
pub const GW_USERS: u32 = 20;

/// The port customer endpoint `ce` is attached to.
pub fn gw_ce_port(ce: u32) -> u32 {
    1 + ce
}

pub fn gw_private(u: u32) -> u32 {
    0x0a00_0000 | (u + 1)
}

pub fn gw_public(ce: u32, u: u32) -> u32 {
    0xc633_6400 | (ce * GW_USERS + u)
}

/// The MAC address and uplink of the gateway's route `i`.
pub fn gw_route_hop(i: u32) -> ([u8; 6], u32) {
    let uplinks = UPLINKS.end() - UPLINKS.start() + 1;
    (mac(11, i % 16), UPLINKS.start() + i % uplinks)
}

/// Access gateway (Fig. 7): a customer endpoint's traffic has its user's private source
/// address translated to the user's public one and is routed to an uplink (TTL
/// decremented, next hop's MAC address); traffic from the uplinks to a user's public address
/// is translated back and sent to the user's endpoint. Unknown users go to the controller.
pub struct Gw {
    pub routes: Routes<u32>,
}

impl Gw {
    fn upstream(&self, in_port: u32, frame: &FrameBytes, ce: u32) -> Verdict {
        let f = frames::fields(frame);
        let user = (0..GW_USERS).find(|&u| gw_private(u) == f.src);
        let (Some(u), true) = (user, f.ipv4) else {
            return Verdict::Controller;
        };
        let mut out = *frame;
        put_addr(&mut out, at::IP_SRC, gw_public(ce, u));
        let Some(i) = self.routes.lookup(f.dst) else {
            frames::seal(&mut out);
            return send(in_port, EXTERNAL, out);
        };
        if f.ttl <= 1 {
            return Verdict::Drop;
        }
        let (hop_mac, port) = gw_route_hop(i);
        out[at::IP_TTL] = f.ttl - 1;
        put_mac(&mut out, at::ETH_DST, hop_mac);
        frames::seal(&mut out);
        send(in_port, port, out)
    }

    fn downstream(&self, in_port: u32, frame: &FrameBytes) -> Verdict {
        let f = frames::fields(frame);
        let user = (0..GW_CES)
            .flat_map(|ce| (0..GW_USERS).map(move |u| (ce, u)))
            .find(|&(ce, u)| gw_public(ce, u) == f.dst);
        let (Some((ce, u)), true) = (user, f.ipv4) else {
            return send(in_port, EXTERNAL, *frame);
        };
        let mut out = *frame;
        put_addr(&mut out, at::IP_DST, gw_private(u));
        put_mac(&mut out, at::ETH_DST, mac(10, ce));
        frames::seal(&mut out);
        send(in_port, gw_ce_port(ce), out)
    }
}

impl Reference for Gw {
    fn forward(&self, in_port: u32, frame: &FrameBytes) -> Verdict {
        let src_mac = frames::fields(frame).src_mac;
        let ce = (0..GW_CES).find(|&ce| gw_ce_port(ce) == in_port && mac(10, ce) == src_mac);
        match ce {
            Some(ce) => self.upstream(in_port, frame, ce),
            None if UPLINKS.contains(&in_port) => self.downstream(in_port, frame),
            None => send(in_port, EXTERNAL, *frame),
        }
    }
}
