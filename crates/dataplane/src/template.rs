//! InSP packet templates (seed 001 section 3): a packet generated inside the switch from a
//! fixed byte template, copy operations taking bytes from the triggering packet, then
//! checksum operations over the result.
//!
//! A template is validated once, at creation: every operation must fit inside the template,
//! and a checksum with a pseudo-header (TCP, UDP, ICMPv6) names the IPv4/IPv6 header that
//! supplies it, which must lie in the template before the bytes it covers. Instantiation is
//! allocation-free.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::checksum;
use crate::key::NO_OFFSET;
use crate::wire::{ip, ipv4, ipv6, udp, Field};

/// Copies `len` bytes at `src_offset` of the triggering packet to `dst_offset` of the new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyOp {
    /// Offset in the triggering packet.
    pub src_offset: usize,
    /// Offset in the generated packet.
    pub dst_offset: usize,
    /// Bytes to copy.
    pub len: usize,
}

/// Which checksum a [`ChecksumOp`] computes; all are 16-bit Internet checksums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChecksumKind {
    /// IPv4 header.
    Ipv4Header,
    /// ICMPv4 message (no pseudo-header).
    Icmpv4,
    /// ICMPv6 message (IPv6 pseudo-header).
    Icmpv6,
    /// TCP segment with an IPv4 pseudo-header.
    Tcpv4,
    /// UDP datagram with an IPv4 pseudo-header (a computed 0 is sent as 0xffff).
    Udpv4,
    /// TCP segment with an IPv6 pseudo-header.
    Tcpv6,
    /// UDP datagram with an IPv6 pseudo-header (a computed 0 is sent as 0xffff).
    Udpv6,
}

impl ChecksumKind {
    /// The pseudo-header's IP version and protocol number, if the kind has one.
    fn pseudo(self) -> Option<(IpVersion, u8)> {
        use ChecksumKind::*;
        match self {
            Ipv4Header | Icmpv4 => None,
            Icmpv6 => Some((IpVersion::V6, checksum::IPPROTO_ICMPV6)),
            Tcpv4 => Some((IpVersion::V4, checksum::IPPROTO_TCP)),
            Udpv4 => Some((IpVersion::V4, checksum::IPPROTO_UDP)),
            Tcpv6 => Some((IpVersion::V6, checksum::IPPROTO_TCP)),
            Udpv6 => Some((IpVersion::V6, checksum::IPPROTO_UDP)),
        }
    }

    fn is_udp(self) -> bool {
        matches!(self, ChecksumKind::Udpv4 | ChecksumKind::Udpv6)
    }
}

/// Computes a checksum over `start..start + len` of the generated packet (with the field
/// itself counted as zero) and stores it big-endian at `dst_offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChecksumOp {
    /// Kind of checksum.
    pub kind: ChecksumKind,
    /// First covered byte.
    pub start: usize,
    /// Covered bytes (the L4 length in the pseudo-header for TCP/UDP/ICMPv6).
    pub len: usize,
    /// Where the 2-byte result goes.
    pub dst_offset: usize,
    /// Start of the IP header supplying the pseudo-header (ignored by kinds without one), so
    /// a template with several IP headers (a tunnel) names the one its checksum belongs to.
    pub ip_offset: usize,
}

/// Why a template is rejected at creation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TemplateError {
    /// Copy operation `n` writes outside the template.
    CopyOutOfBounds(usize),
    /// Checksum operation `n` covers or writes outside the template.
    ChecksumOutOfBounds(usize),
    /// Checksum operation `n` needs a pseudo-header but its `ip_offset` does not hold an IP
    /// header of the kind's version ending before the covered bytes.
    NoIpHeader(usize),
    /// Template longer than the datapath's 16-bit offsets allow.
    TooLong,
}

/// Why no packet was generated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstantiateError {
    /// A copy source runs past the end of the triggering packet.
    TriggerTooShort,
    /// The output buffer is smaller than the template.
    OutputTooSmall,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IpVersion {
    V4,
    V6,
}

impl IpVersion {
    /// The version the header's first byte carries.
    fn number(self) -> u8 {
        match self {
            IpVersion::V4 => ipv4::VERSION,
            IpVersion::V6 => ipv6::VERSION,
        }
    }

    /// Where the source and destination addresses sit in the header.
    fn addrs(self) -> Field {
        match self {
            IpVersion::V4 => ipv4::ADDRS,
            IpVersion::V6 => ipv6::ADDRS,
        }
    }
}

/// A validated packet template with its counters.
#[derive(Debug)]
pub struct PacketTemplate {
    bytes: Box<[u8]>,
    copy_ops: Vec<CopyOp>,
    checksum_ops: Vec<ChecksumOp>,
    /// Shortest trigger every copy operation can read from.
    min_trigger_len: usize,
    generated: AtomicU64,
    trigger_errors: AtomicU64,
}

fn end(offset: usize, len: usize) -> Option<usize> {
    offset.checked_add(len)
}

impl PacketTemplate {
    /// Validates and builds a template.
    pub fn new(
        bytes: Vec<u8>,
        copy_ops: Vec<CopyOp>,
        checksum_ops: Vec<ChecksumOp>,
    ) -> Result<Self, TemplateError> {
        let n = bytes.len();
        if n >= usize::from(NO_OFFSET) {
            return Err(TemplateError::TooLong);
        }
        let mut min_trigger_len = 0;
        for (i, op) in copy_ops.iter().enumerate() {
            let dst_end = end(op.dst_offset, op.len).filter(|&e| e <= n);
            let src_end = end(op.src_offset, op.len);
            match (dst_end, src_end) {
                (Some(_), Some(s)) => min_trigger_len = min_trigger_len.max(s),
                _ => return Err(TemplateError::CopyOutOfBounds(i)),
            }
        }
        for (i, op) in checksum_ops.iter().enumerate() {
            let covered = end(op.start, op.len).is_some_and(|e| e <= n);
            let field = end(op.dst_offset, 2).is_some_and(|e| e <= n);
            if !covered || !field {
                return Err(TemplateError::ChecksumOutOfBounds(i));
            }
            if let Some((version, _)) = op.kind.pseudo() {
                let header_end = end(op.ip_offset, version.addrs().end);
                let header_fits = header_end.is_some_and(|e| e <= op.start);
                let is_version = bytes
                    .get(op.ip_offset)
                    .is_some_and(|&b| ip::version(b) == version.number());
                if !header_fits || !is_version {
                    return Err(TemplateError::NoIpHeader(i));
                }
            }
        }
        Ok(Self {
            bytes: bytes.into_boxed_slice(),
            copy_ops,
            checksum_ops,
            min_trigger_len,
            generated: AtomicU64::new(0),
            trigger_errors: AtomicU64::new(0),
        })
    }

    /// Length of every generated packet.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the template is empty.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The template bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Bytes this template holds, inline and on the heap (the switch's memory accounting).
    pub fn memory(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.bytes.len()
            + self.copy_ops.capacity() * std::mem::size_of::<CopyOp>()
            + self.checksum_ops.capacity() * std::mem::size_of::<ChecksumOp>()
    }

    /// Packets generated.
    pub fn generated(&self) -> u64 {
        self.generated.load(Relaxed)
    }

    /// Triggers too short for a copy operation (no packet generated).
    pub fn trigger_errors(&self) -> u64 {
        self.trigger_errors.load(Relaxed)
    }

    /// Builds the packet for `trigger` into `out`; returns its length.
    pub fn instantiate(&self, trigger: &[u8], out: &mut [u8]) -> Result<usize, InstantiateError> {
        if trigger.len() < self.min_trigger_len {
            self.trigger_errors.fetch_add(1, Relaxed);
            return Err(InstantiateError::TriggerTooShort);
        }
        let n = self.bytes.len();
        let pkt = out.get_mut(..n).ok_or(InstantiateError::OutputTooSmall)?;
        pkt.copy_from_slice(&self.bytes);
        for op in &self.copy_ops {
            let src = trigger.get(op.src_offset..op.src_offset + op.len);
            let dst = pkt.get_mut(op.dst_offset..op.dst_offset + op.len);
            if let (Some(src), Some(dst)) = (src, dst) {
                dst.copy_from_slice(src);
            }
        }
        for op in &self.checksum_ops {
            Self::apply_checksum(pkt, op);
        }
        self.generated.fetch_add(1, Relaxed);
        Ok(n)
    }

    fn apply_checksum(pkt: &mut [u8], op: &ChecksumOp) {
        if let Some(field) = pkt.get_mut(op.dst_offset..op.dst_offset + 2) {
            field.fill(0);
        }
        let pseudo = op.kind.pseudo().map_or(0, |(version, proto)| {
            let addrs = version.addrs();
            let header = pkt.get(op.ip_offset + addrs.start..op.ip_offset + addrs.end);
            checksum::add(0, header.unwrap_or_default()) + u64::from(proto) + op.len as u64
        });
        let Some(covered) = pkt.get(op.start..op.start + op.len) else {
            return;
        };
        let mut c = !checksum::fold(checksum::add(pseudo, covered));
        if op.kind.is_udp() && c == 0 {
            c = udp::CHECKSUM_OF_ZERO;
        }
        if let Some(field) = pkt.get_mut(op.dst_offset..op.dst_offset + 2) {
            field.copy_from_slice(&c.to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::FlowKey;
    use crate::parse::parse;

    const MAC_C: [u8; 6] = [0x02, 0xcc, 0, 0, 0, 0x0c];
    const MAC_A: [u8; 6] = [0x02, 0xaa, 0, 0, 0, 0x0a];
    const IP_C: [u8; 4] = [10, 0, 0, 12];
    const IP_A: [u8; 4] = [10, 0, 0, 10];

    fn arp(
        op: u8,
        eth_dst: [u8; 6],
        sha: [u8; 6],
        spa: [u8; 4],
        tha: [u8; 6],
        tpa: [u8; 4],
    ) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend_from_slice(&eth_dst);
        p.extend_from_slice(&sha);
        p.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4, 0, op]);
        p.extend_from_slice(&sha);
        p.extend_from_slice(&spa);
        p.extend_from_slice(&tha);
        p.extend_from_slice(&tpa);
        p
    }

    #[test]
    fn arp_responder_from_figure_5() {
        // Reply from C with the requester's fields left zero, filled by copy ops.
        let template = arp(2, [0; 6], MAC_C, IP_C, [0; 6], [0; 4]);
        let copies = vec![
            CopyOp {
                src_offset: 6,
                dst_offset: 0,
                len: 6,
            }, // eth_src -> eth_dst
            CopyOp {
                src_offset: 22,
                dst_offset: 32,
                len: 6,
            }, // arp_sha -> arp_tha
            CopyOp {
                src_offset: 28,
                dst_offset: 38,
                len: 4,
            }, // arp_spa -> arp_tpa
        ];
        let t = PacketTemplate::new(template, copies, vec![]).unwrap_or_else(|e| panic!("{e:?}"));
        let request = arp(1, [0xff; 6], MAC_A, IP_A, [0; 6], IP_C);
        let mut out = [0u8; 64];
        assert_eq!(t.instantiate(&request, &mut out), Ok(42));
        let mut k = FlowKey::default();
        assert_eq!(parse(&out[..42], 0, &mut k), Ok(()));
        assert_eq!((k.eth_dst, k.eth_src, k.arp_op), (MAC_A, MAC_C, 2));
        assert_eq!(
            (k.arp_sha, k.arp_spa, k.arp_tha),
            (MAC_C, u32::from_be_bytes(IP_C), MAC_A)
        );
        assert_eq!(k.arp_tpa, u32::from_be_bytes(IP_A));
        assert_eq!(t.generated(), 1);
    }

    fn ipv4_packet(src: [u8; 4], dst: [u8; 4], ttl: u8, proto: u8, l4: &[u8]) -> Vec<u8> {
        let total = (20 + l4.len()) as u16;
        let mut p = vec![0x45, 0];
        p.extend_from_slice(&total.to_be_bytes());
        p.extend_from_slice(&[0, 1, 0, 0, ttl, proto, 0, 0]);
        p.extend_from_slice(&src);
        p.extend_from_slice(&dst);
        p.extend_from_slice(l4);
        p
    }

    #[test]
    fn icmp_time_exceeded_from_figure_6() {
        let mac_s = [0x02, 0x55, 0, 0, 0, 1];
        let ip_s = [192, 0, 2, 1];
        // Ether(MAC_S, X) / IP(IP_S, Y, C1) / ICMP(time exceeded, C2, P = 28 bytes).
        let mut icmp = vec![11, 0, 0, 0, 0, 0, 0, 0];
        icmp.resize(8 + 28, 0);
        let mut template = Vec::new();
        template.extend_from_slice(&[0; 6]);
        template.extend_from_slice(&mac_s);
        template.extend_from_slice(&[0x08, 0x00]);
        template.extend_from_slice(&ipv4_packet(ip_s, [0; 4], 64, 1, &icmp));
        let copies = vec![
            CopyOp {
                src_offset: 6,
                dst_offset: 0,
                len: 6,
            }, // eth_src -> X
            CopyOp {
                src_offset: 26,
                dst_offset: 30,
                len: 4,
            }, // ip_src -> Y
            CopyOp {
                src_offset: 14,
                dst_offset: 42,
                len: 28,
            }, // IP header + 8 bytes -> P
        ];
        let sums = vec![
            ChecksumOp {
                kind: ChecksumKind::Ipv4Header,
                start: 14,
                len: 20,
                dst_offset: 24,
                ip_offset: 0,
            },
            ChecksumOp {
                kind: ChecksumKind::Icmpv4,
                start: 34,
                len: 36,
                dst_offset: 36,
                ip_offset: 0,
            },
        ];
        let t = PacketTemplate::new(template, copies, sums).unwrap_or_else(|e| panic!("{e:?}"));

        let mut trigger = Vec::new();
        trigger.extend_from_slice(&mac_s);
        trigger.extend_from_slice(&MAC_A);
        trigger.extend_from_slice(&[0x08, 0x00]);
        trigger.extend_from_slice(&ipv4_packet(
            IP_A,
            [198, 51, 100, 7],
            1,
            17,
            &[0, 53, 0, 53, 0, 8, 0, 0],
        ));
        let mut out = [0u8; 128];
        let n = t.instantiate(&trigger, &mut out).unwrap_or_default();
        assert_eq!(n, 70);
        let pkt = &out[..n];
        assert_eq!(
            checksum::checksum(&pkt[14..34]),
            0,
            "IPv4 header checksum verifies"
        );
        assert_eq!(
            checksum::checksum(&pkt[34..70]),
            0,
            "ICMP checksum verifies"
        );
        assert_eq!(
            Some(u16::from_be_bytes([pkt[24], pkt[25]])),
            checksum::ipv4_header(&pkt[14..34])
        );
        assert_eq!(&pkt[42..70], &trigger[14..42]);
        let mut k = FlowKey::default();
        assert_eq!(parse(pkt, 0, &mut k), Ok(()));
        assert_eq!(
            (k.eth_dst, k.ipv4_dst, k.icmp_type, k.icmp_code),
            (MAC_A, u32::from_be_bytes(IP_A), 11, 0)
        );

        // A trigger shorter than the copied range generates nothing and is counted.
        assert_eq!(
            t.instantiate(&trigger[..41], &mut out),
            Err(InstantiateError::TriggerTooShort)
        );
        assert_eq!(t.trigger_errors(), 1);
        assert_eq!(
            t.instantiate(&trigger, &mut out[..69]),
            Err(InstantiateError::OutputTooSmall)
        );
        assert_eq!(t.generated(), 1);
    }

    #[test]
    fn udp_checksum_uses_the_copied_pseudo_header() {
        let mut template = vec![0u8; 12];
        template.extend_from_slice(&[0x08, 0x00]);
        template.extend_from_slice(&ipv4_packet(
            [10, 1, 1, 1],
            [0; 4],
            64,
            17,
            &[0x13, 0x88, 0, 0, 0, 12, 0, 0, 1, 2, 3, 4],
        ));
        let copies = vec![
            CopyOp {
                src_offset: 26,
                dst_offset: 30,
                len: 4,
            },
            CopyOp {
                src_offset: 34,
                dst_offset: 36,
                len: 2,
            }, // reply to the trigger's port
        ];
        let sums = vec![ChecksumOp {
            kind: ChecksumKind::Udpv4,
            start: 34,
            len: 12,
            dst_offset: 40,
            ip_offset: 14,
        }];
        let t = PacketTemplate::new(template, copies, sums).unwrap_or_else(|e| panic!("{e:?}"));
        let mut trigger = vec![0u8; 12];
        trigger.extend_from_slice(&[0x08, 0x00]);
        trigger.extend_from_slice(&ipv4_packet(
            [172, 16, 9, 9],
            [10, 1, 1, 1],
            64,
            17,
            &[0x9c, 0x40, 0x13, 0x88, 0, 8, 0, 0],
        ));
        let mut out = [0u8; 46];
        assert_eq!(t.instantiate(&trigger, &mut out), Ok(46));
        let pseudo = checksum::pseudo_v4(0x0a01_0101, 0xac10_0909, 17, 12);
        assert_eq!(checksum::fold(checksum::add(pseudo, &out[34..46])), 0xffff);
        assert_eq!(&out[36..38], &[0x9c, 0x40]);
    }

    #[test]
    fn icmpv6_checksum_over_ipv6_pseudo_header() {
        let mut template = vec![0u8; 12];
        template.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0, 0, 8, 58, 255]);
        template.extend_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        template.extend_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        template.extend_from_slice(&[129, 0, 0, 0, 0, 7, 0, 1]); // echo reply
        let sums = vec![ChecksumOp {
            kind: ChecksumKind::Icmpv6,
            start: 54,
            len: 8,
            dst_offset: 56,
            ip_offset: 14,
        }];
        let t = PacketTemplate::new(template, vec![], sums).unwrap_or_else(|e| panic!("{e:?}"));
        let mut out = [0u8; 62];
        assert_eq!(t.instantiate(&[], &mut out), Ok(62));
        let mut src = [0u8; 16];
        let mut dst = [0u8; 16];
        src.copy_from_slice(&out[22..38]);
        dst.copy_from_slice(&out[38..54]);
        let pseudo = checksum::pseudo_v6(&src, &dst, 58, 8);
        assert_eq!(checksum::fold(checksum::add(pseudo, &out[54..62])), 0xffff);
    }

    proptest::proptest! {
        /// Any trigger and any valid template: no panic, a packet exactly when the trigger
        /// covers every copy source, and the checksum ops always leave verifying sums.
        #[test]
        fn instantiate_is_total(
            trigger in proptest::collection::vec(proptest::num::u8::ANY, 0..80),
            src in 0usize..70,
            len in 0usize..20,
        ) {
            let mut template = vec![0u8; 12];
            template.extend_from_slice(&[0x08, 0x00]);
            template.extend_from_slice(&ipv4_packet([1, 2, 3, 4], [5, 6, 7, 8], 9, 17, &[0; 28]));
            let copies = vec![CopyOp { src_offset: src, dst_offset: 42, len }];
            let sums = vec![
                ChecksumOp { kind: ChecksumKind::Udpv4, start: 34, len: 28, dst_offset: 40, ip_offset: 14 },
                ChecksumOp { kind: ChecksumKind::Ipv4Header, start: 14, len: 20, dst_offset: 24, ip_offset: 0 },
            ];
            let t = PacketTemplate::new(template, copies, sums);
            proptest::prop_assert!(t.is_ok());
            let Ok(t) = t else { return Ok(()) };
            let mut out = [0u8; 62];
            let r = t.instantiate(&trigger, &mut out);
            if trigger.len() >= src + len {
                proptest::prop_assert_eq!(r, Ok(62));
                proptest::prop_assert_eq!(&out[42..42 + len], &trigger[src..src + len]);
                proptest::prop_assert_eq!(checksum::checksum(&out[14..34]), 0);
                let pseudo = checksum::pseudo_v4(0x0102_0304, 0x0506_0708, 17, 28);
                proptest::prop_assert_eq!(checksum::fold(checksum::add(pseudo, &out[34..62])), 0xffff);
            } else {
                proptest::prop_assert_eq!(r, Err(InstantiateError::TriggerTooShort));
            }
        }
    }

    #[test]
    fn invalid_templates_are_rejected() {
        let arp_t = arp(2, [0; 6], MAC_C, IP_C, [0; 6], [0; 4]);
        let copy = |src_offset, dst_offset, len| {
            vec![CopyOp {
                src_offset,
                dst_offset,
                len,
            }]
        };
        assert_eq!(
            PacketTemplate::new(arp_t.clone(), copy(0, 40, 3), vec![]).err(),
            Some(TemplateError::CopyOutOfBounds(0))
        );
        assert_eq!(
            PacketTemplate::new(arp_t.clone(), copy(usize::MAX, 0, 2), vec![]).err(),
            Some(TemplateError::CopyOutOfBounds(0))
        );
        assert_eq!(
            PacketTemplate::new(arp_t.clone(), copy(0, usize::MAX, 2), vec![]).err(),
            Some(TemplateError::CopyOutOfBounds(0))
        );
        let sum = |kind, start, len, dst_offset| {
            vec![ChecksumOp {
                kind,
                start,
                len,
                dst_offset,
                ip_offset: 14,
            }]
        };
        let e =
            PacketTemplate::new(arp_t.clone(), vec![], sum(ChecksumKind::Icmpv4, 14, 30, 16)).err();
        assert_eq!(e, Some(TemplateError::ChecksumOutOfBounds(0)));
        let e =
            PacketTemplate::new(arp_t.clone(), vec![], sum(ChecksumKind::Icmpv4, 14, 20, 41)).err();
        assert_eq!(e, Some(TemplateError::ChecksumOutOfBounds(0)));
        let e = PacketTemplate::new(arp_t, vec![], sum(ChecksumKind::Udpv4, 14, 8, 20)).err();
        assert_eq!(e, Some(TemplateError::NoIpHeader(0)));
        assert_eq!(
            PacketTemplate::new(vec![0; 70_000], vec![], vec![]).err(),
            Some(TemplateError::TooLong)
        );
        let empty = PacketTemplate::new(vec![], vec![], vec![]);
        assert!(empty.is_ok_and(|t| t.is_empty() && t.bytes().is_empty()));
    }

    /// RFC 1071 sum written out word by word, independent of the `checksum` module: the
    /// value a receiver computes over a segment whose checksum is right is 0xffff.
    fn ones_complement_sum(chunks: &[&[u8]]) -> u16 {
        let mut sum: u32 = 0;
        for chunk in chunks {
            for pair in chunk.chunks(2) {
                let hi = u32::from(pair[0]) << 8;
                let lo = pair.get(1).copied().map_or(0, u32::from);
                sum += hi | lo;
                sum = (sum & 0xffff) + (sum >> 16);
            }
        }
        sum as u16
    }

    fn ipv4_pseudo_header(header: &[u8], proto: u8, l4_len: usize) -> Vec<u8> {
        let mut p = header[12..20].to_vec();
        p.extend_from_slice(&[0, proto]);
        p.extend_from_slice(&(l4_len as u16).to_be_bytes());
        p
    }

    /// Ether / IPv4 (outer, proto 4) / IPv4 (inner, proto 17) / UDP with 6 bytes of payload.
    fn ip_in_ip_udp() -> Vec<u8> {
        let udp = [
            0x13, 0x88, 0x13, 0x89, 0, 14, 0, 0, b'h', b'a', b'i', b'r', b'p', b'n',
        ];
        let inner = ipv4_packet([172, 16, 0, 1], [172, 16, 0, 2], 64, 17, &udp);
        let mut t = vec![0u8; 12];
        t.extend_from_slice(&[0x08, 0x00]);
        t.extend_from_slice(&ipv4_packet([10, 0, 0, 1], [10, 0, 0, 2], 64, 4, &inner));
        t
    }

    #[test]
    fn pseudo_header_comes_from_the_header_at_ip_offset() {
        let template = ip_in_ip_udp();
        let n = template.len(); // 14 + 20 + 20 + 14
        let udp_sum = |ip_offset| ChecksumOp {
            kind: ChecksumKind::Udpv4,
            start: 54,
            len: 14,
            dst_offset: 60,
            ip_offset,
        };
        let inner = PacketTemplate::new(template.clone(), vec![], vec![udp_sum(34)]);
        let inner = inner.unwrap_or_else(|e| panic!("{e:?}"));
        let mut out = vec![0u8; n];
        assert_eq!(inner.instantiate(&[], &mut out), Ok(n));
        let pseudo = ipv4_pseudo_header(&out[34..54], 17, 14);
        assert_eq!(ones_complement_sum(&[&pseudo, &out[54..]]), 0xffff);
        let outer_pseudo = ipv4_pseudo_header(&out[14..34], 17, 14);
        assert_ne!(ones_complement_sum(&[&outer_pseudo, &out[54..]]), 0xffff);

        // Naming the outer header gives the checksum that verifies against the outer one.
        let outer = PacketTemplate::new(template.clone(), vec![], vec![udp_sum(14)]);
        let outer = outer.unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(outer.instantiate(&[], &mut out), Ok(n));
        assert_eq!(ones_complement_sum(&[&outer_pseudo, &out[54..]]), 0xffff);

        // Offsets that hold no IPv4 header ending before the UDP bytes are refused.
        for bad in [0, 12, 40, 50, usize::MAX] {
            let t = PacketTemplate::new(template.clone(), vec![], vec![udp_sum(bad)]);
            assert_eq!(
                t.err(),
                Some(TemplateError::NoIpHeader(0)),
                "ip_offset {bad}"
            );
        }
        let v6_kind = ChecksumOp {
            kind: ChecksumKind::Udpv6,
            ..udp_sum(14)
        };
        let t = PacketTemplate::new(template, vec![], vec![v6_kind]);
        assert_eq!(t.err(), Some(TemplateError::NoIpHeader(0)));
    }

    #[test]
    fn icmp_echo_reply_checksums_verify_independently() {
        // Ether / IPv4 / ICMP echo reply with 8 bytes of payload; identifier, sequence and
        // payload come from the triggering echo request.
        let mut icmp = vec![0u8, 0, 0, 0, 0, 0, 0, 0];
        icmp.resize(16, 0);
        let mut template = vec![0u8; 6];
        template.extend_from_slice(&MAC_C);
        template.extend_from_slice(&[0x08, 0x00]);
        template.extend_from_slice(&ipv4_packet(IP_C, [0; 4], 64, 1, &icmp));
        let copies = vec![
            CopyOp {
                src_offset: 6,
                dst_offset: 0,
                len: 6,
            },
            CopyOp {
                src_offset: 26,
                dst_offset: 30,
                len: 4,
            },
            CopyOp {
                src_offset: 38,
                dst_offset: 38,
                len: 12,
            },
        ];
        let sums = vec![
            ChecksumOp {
                kind: ChecksumKind::Ipv4Header,
                start: 14,
                len: 20,
                dst_offset: 24,
                ip_offset: 0,
            },
            ChecksumOp {
                kind: ChecksumKind::Icmpv4,
                start: 34,
                len: 16,
                dst_offset: 36,
                ip_offset: 0,
            },
        ];
        let t = PacketTemplate::new(template, copies, sums).unwrap_or_else(|e| panic!("{e:?}"));
        let mut request = vec![0u8; 6];
        request.extend_from_slice(&MAC_A);
        request.extend_from_slice(&[0x08, 0x00]);
        let echo = [8, 0, 0x12, 0x34, 0xbe, 0xef, 0, 7, 1, 2, 3, 4, 5, 6, 7, 8];
        request.extend_from_slice(&ipv4_packet(IP_A, IP_C, 64, 1, &echo));
        let mut out = [0u8; 50];
        assert_eq!(t.instantiate(&request, &mut out), Ok(50));
        assert_eq!(ones_complement_sum(&[&out[14..34]]), 0xffff, "IPv4 header");
        assert_eq!(ones_complement_sum(&[&out[34..50]]), 0xffff, "ICMP");
        assert_eq!(&out[38..50], &echo[4..]);
    }
}
