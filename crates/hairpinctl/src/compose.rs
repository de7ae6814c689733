//! A packet made from a flow description (`hairpinctl trace`), as Open vSwitch's
//! `flow_compose` makes one for `ofproto/trace`: every field the description gives is set,
//! the rest get plain defaults (zero addresses, TTL 64), prerequisites are implied (a
//! `tp_dst` with `tcp` makes a TCP header), lengths and the IPv4 checksum are right, and the
//! frame is padded to 60 bytes. A masked field takes its value.

use dataplane::checksum::checksum;
use ofp::{Match, OxmValue};

const ETH_IPV4: u16 = 0x0800;
const ETH_ARP: u16 = 0x0806;
const ETH_IPV6: u16 = 0x86dd;
const OFPVID_PRESENT: u16 = 0x1000;

/// The fields of a description, with defaults.
#[derive(Default)]
struct Fields {
    in_port: Option<u32>,
    eth_dst: [u8; 6],
    eth_src: [u8; 6],
    eth_type: Option<u16>,
    vlan: Option<u16>,
    pcp: u8,
    dscp: u8,
    ecn: u8,
    proto: Option<u8>,
    ttl: Option<u8>,
    v4: [u32; 2],
    v6: [[u8; 16]; 2],
    flabel: u32,
    ports: [u16; 2],
    icmp: [u8; 2],
    arp_op: u16,
    arp_ha: [[u8; 6]; 2],
    arp_pa: [u32; 2],
}

impl Fields {
    fn of(m: &Match) -> Self {
        let mut f = Fields::default();
        for field in &m.fields {
            match field.value {
                OxmValue::InPort(p) => f.in_port = Some(p),
                OxmValue::EthDst(a) => f.eth_dst = a,
                OxmValue::EthSrc(a) => f.eth_src = a,
                OxmValue::EthType(t) => f.eth_type = Some(t),
                OxmValue::VlanVid(v) if v & OFPVID_PRESENT != 0 => f.vlan = Some(v & 0x0fff),
                OxmValue::VlanPcp(p) => f.pcp = p,
                OxmValue::IpDscp(d) => f.dscp = d,
                OxmValue::IpEcn(e) => f.ecn = e,
                OxmValue::IpProto(p) => f.proto = Some(p),
                OxmValue::NxIpTtl(t) => f.ttl = Some(t),
                OxmValue::Ipv4Src(a) => f.v4[0] = a,
                OxmValue::Ipv4Dst(a) => f.v4[1] = a,
                OxmValue::Ipv6Src(a) => f.v6[0] = a,
                OxmValue::Ipv6Dst(a) => f.v6[1] = a,
                OxmValue::Ipv6Flabel(l) => f.flabel = l,
                OxmValue::TcpSrc(p) | OxmValue::UdpSrc(p) | OxmValue::SctpSrc(p) => f.ports[0] = p,
                OxmValue::TcpDst(p) | OxmValue::UdpDst(p) | OxmValue::SctpDst(p) => f.ports[1] = p,
                OxmValue::Icmpv4Type(t) | OxmValue::Icmpv6Type(t) => f.icmp[0] = t,
                OxmValue::Icmpv4Code(c) | OxmValue::Icmpv6Code(c) => f.icmp[1] = c,
                OxmValue::ArpOp(o) => f.arp_op = o,
                OxmValue::ArpSha(a) => f.arp_ha[0] = a,
                OxmValue::ArpTha(a) => f.arp_ha[1] = a,
                OxmValue::ArpSpa(a) => f.arp_pa[0] = a,
                OxmValue::ArpTpa(a) => f.arp_pa[1] = a,
                _ => {}
            }
        }
        f
    }
}

/// The ingress port and frame a flow description stands for; the description must name
/// `in_port`.
pub fn compose(m: &Match) -> Result<(u32, Vec<u8>), String> {
    let f = Fields::of(m);
    let in_port = f.in_port.ok_or("a packet to trace needs in_port=N")?;
    let mut frame = Vec::with_capacity(128);
    frame.extend_from_slice(&f.eth_dst);
    frame.extend_from_slice(&f.eth_src);
    if let Some(vid) = f.vlan {
        frame.extend_from_slice(&0x8100u16.to_be_bytes());
        frame.extend_from_slice(&((u16::from(f.pcp & 7) << 13) | vid).to_be_bytes());
    }
    let eth_type = f.eth_type.unwrap_or(0);
    frame.extend_from_slice(&eth_type.to_be_bytes());
    match eth_type {
        ETH_IPV4 => ipv4(&f, &mut frame),
        ETH_IPV6 => ipv6(&f, &mut frame),
        ETH_ARP => arp(&f, &mut frame),
        _ => {}
    }
    if frame.len() < 60 {
        frame.resize(60, 0);
    }
    Ok((in_port, frame))
}

/// The transport header for `proto` (TCP, UDP, SCTP, ICMP, ICMPv6), else nothing.
fn l4(f: &Fields, proto: u8) -> Vec<u8> {
    let [src, dst] = f.ports;
    let mut h = Vec::new();
    match proto {
        6 => {
            h.extend_from_slice(&src.to_be_bytes());
            h.extend_from_slice(&dst.to_be_bytes());
            h.extend_from_slice(&[0; 8]);
            h.extend_from_slice(&[0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0]);
        }
        17 => {
            h.extend_from_slice(&src.to_be_bytes());
            h.extend_from_slice(&dst.to_be_bytes());
            h.extend_from_slice(&8u16.to_be_bytes());
            h.extend_from_slice(&[0, 0]);
        }
        132 => {
            h.extend_from_slice(&src.to_be_bytes());
            h.extend_from_slice(&dst.to_be_bytes());
            h.extend_from_slice(&[0; 8]);
        }
        1 | 58 => {
            h.extend_from_slice(&f.icmp);
            h.extend_from_slice(&[0; 6]);
        }
        _ => {}
    }
    h
}

fn ipv4(f: &Fields, frame: &mut Vec<u8>) {
    let proto = f.proto.unwrap_or(0);
    let payload = l4(f, proto);
    let start = frame.len();
    let total = (20 + payload.len()) as u16;
    frame.extend_from_slice(&[0x45, (f.dscp << 2) | (f.ecn & 3)]);
    frame.extend_from_slice(&total.to_be_bytes());
    frame.extend_from_slice(&[0, 0, 0x40, 0, f.ttl.unwrap_or(64), proto, 0, 0]);
    frame.extend_from_slice(&f.v4[0].to_be_bytes());
    frame.extend_from_slice(&f.v4[1].to_be_bytes());
    let sum = checksum(&frame[start..]);
    frame[start + 10..start + 12].copy_from_slice(&sum.to_be_bytes());
    frame.extend_from_slice(&payload);
}

fn ipv6(f: &Fields, frame: &mut Vec<u8>) {
    let proto = f.proto.unwrap_or(59);
    let payload = l4(f, proto);
    let first =
        (6u32 << 28) | (u32::from((f.dscp << 2) | (f.ecn & 3)) << 20) | (f.flabel & 0xf_ffff);
    frame.extend_from_slice(&first.to_be_bytes());
    frame.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    frame.extend_from_slice(&[proto, f.ttl.unwrap_or(64)]);
    frame.extend_from_slice(&f.v6[0]);
    frame.extend_from_slice(&f.v6[1]);
    frame.extend_from_slice(&payload);
}

fn arp(f: &Fields, frame: &mut Vec<u8>) {
    frame.extend_from_slice(&[0, 1, 0x08, 0, 6, 4]);
    frame.extend_from_slice(&f.arp_op.to_be_bytes());
    frame.extend_from_slice(&f.arp_ha[0]);
    frame.extend_from_slice(&f.arp_pa[0].to_be_bytes());
    frame.extend_from_slice(&f.arp_ha[1]);
    frame.extend_from_slice(&f.arp_pa[1].to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::flow::{parse_flow, FlowUse};

    fn packet(text: &str) -> (u32, Vec<u8>) {
        compose(&parse_flow(text, FlowUse::Filter).unwrap().match_).unwrap()
    }

    #[test]
    fn a_tcp_description_becomes_a_valid_tcp_packet() {
        let (port, f) =
            packet("in_port=3,dl_vlan=10,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_dst=80");
        assert_eq!(port, 3);
        assert_eq!(&f[12..16], &[0x81, 0x00, 0x00, 10]);
        assert_eq!(&f[16..18], &[0x08, 0x00]);
        let ip = &f[18..];
        assert_eq!(ip[9], 6);
        assert_eq!(&ip[12..20], &[10, 0, 0, 1, 10, 0, 0, 2]);
        assert_eq!(checksum(&ip[..20]), 0, "the header checksum is right");
        assert_eq!(u16::from_be_bytes([ip[2], ip[3]]), 40);
        assert_eq!(&ip[22..24], &80u16.to_be_bytes());
    }

    #[test]
    fn arp_ipv6_and_bare_descriptions() {
        let (_, f) = packet("in_port=1,arp,arp_op=1,arp_spa=10.0.0.1,arp_tpa=10.0.0.9");
        assert_eq!(&f[12..14], &[0x08, 0x06]);
        assert_eq!(&f[20..22], &[0, 1]);
        assert_eq!(&f[38..42], &[10, 0, 0, 9]);
        let (_, f) = packet("in_port=1,udp6,ipv6_dst=2001:db8::1,tp_src=53");
        assert_eq!(&f[12..14], &[0x86, 0xdd]);
        assert_eq!(f[14 + 6], 17);
        assert_eq!(f[14 + 39], 1);
        assert_eq!(&f[54..56], &53u16.to_be_bytes());
        let (_, f) = packet("in_port=2");
        assert_eq!(f.len(), 60);
        let missing = compose(&parse_flow("tcp", FlowUse::Filter).unwrap().match_);
        assert!(missing.unwrap_err().contains("in_port"));
    }
}
