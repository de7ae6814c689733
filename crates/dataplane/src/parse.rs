//! Packet parser: fills a [`FlowKey`] from a frame, in stages (L2, L3, L4) so the pipeline
//! parses only as deep as its tables need and can resume later with [`parse_deeper`].
//!
//! Every read is a checked slice of the frame, through the header views of the `wire` module;
//! no length field is trusted. Semantics follow Open vSwitch where OpenFlow is silent: fields
//! of a header are filled only once the header is known valid; a non-first IP fragment has no
//! L4 fields; the first fragment has them.

use crate::key::{exthdr, frag, FlowKey, Layout, ParseDepth, NO_OFFSET, OFPVID_PRESENT};
use crate::wire::ethernet::{self, ethertype, snap, tag};
use crate::wire::icmp::{self, nd};
use crate::wire::ip::{ports, protocol};
use crate::wire::{arp, bytes_at, get, get16, ipv4, ipv6, mpls, pbb, sctp, tcp, udp};

/// EtherType OpenFlow reports for 802.3 frames without a SNAP EtherType.
pub const ETH_TYPE_NOT_ETH: u16 = ethertype::NOT_ETH;

/// Longest IPv6 extension-header chain walked before giving up (bounds per-packet work).
pub(crate) const MAX_IPV6_EXT_HEADERS: usize = 16;

macro_rules! parse_errors {
    ($( $(#[$doc:meta])* $v:ident, )*) => {
        /// Why a packet could not be parsed to the requested depth.
        #[repr(u8)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
        pub enum ParseError { $( $(#[$doc])* $v, )* }

        impl ParseError {
            /// Every reason, in discriminant order.
            pub const ALL: &'static [ParseError] = &[$(ParseError::$v),*];
            /// Number of reasons.
            pub const COUNT: usize = Self::ALL.len();

            /// A stable name for metrics.
            pub fn name(self) -> &'static str {
                match self { $(ParseError::$v => stringify!($v),)* }
            }
        }
    };
}

parse_errors! {
    /// Frame too long for 16-bit header offsets.
    FrameTooLong,
    /// Shorter than an Ethernet header.
    TruncatedEthernet,
    /// A VLAN tag runs past the end.
    TruncatedVlan,
    /// The PBB I-TAG runs past the end.
    TruncatedPbb,
    /// An MPLS label stack entry runs past the end.
    TruncatedMpls,
    /// The ARP body runs past the end.
    TruncatedArp,
    /// IPv4 header (with options) or total length runs past the end.
    TruncatedIpv4,
    /// IP version nibble does not match the EtherType.
    BadIpVersion,
    /// IPv4 IHL below 5.
    BadIpv4HeaderLen,
    /// IPv4 total length shorter than its header.
    BadIpv4TotalLen,
    /// IPv6 header or payload length runs past the end.
    TruncatedIpv6,
    /// An IPv6 extension header runs past the end of the payload.
    TruncatedIpv6Ext,
    /// More IPv6 extension headers than the parser walks.
    Ipv6ExtChainTooLong,
    /// TCP header runs past the end.
    TruncatedTcp,
    /// TCP data offset below 5.
    BadTcpOffset,
    /// UDP header runs past the end.
    TruncatedUdp,
    /// SCTP common header runs past the end.
    TruncatedSctp,
    /// ICMP / ICMPv6 header runs past the end.
    TruncatedIcmp,
    /// Neighbor Discovery body or option runs past the end.
    TruncatedNd,
    /// Neighbor Discovery option of length 0 or a repeated link-layer option.
    BadNdOption,
}

/// Result of parsing: `Ok` or the reason the packet is malformed. The fields parsed before
/// the problem stay in the key.
pub type ParseOutcome = Result<(), ParseError>;

/// Per-reader parse counters (plain integers: one per datapath thread, summed by the reader).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseStats {
    /// Packets parsed.
    pub packets: u64,
    /// Malformed packets per [`ParseError`] (index = discriminant).
    pub errors: [u64; ParseError::COUNT],
}

impl Default for ParseStats {
    fn default() -> Self {
        Self {
            packets: 0,
            errors: [0; ParseError::COUNT],
        }
    }
}

impl ParseStats {
    /// Counts one parse.
    #[inline]
    pub fn record(&mut self, outcome: ParseOutcome) {
        self.packets += 1;
        if let Err(e) = outcome {
            if let Some(c) = self.errors.get_mut(e as usize) {
                *c += 1;
            }
        }
    }

    /// Malformed packets with this reason.
    pub fn count(&self, e: ParseError) -> u64 {
        self.errors.get(e as usize).copied().unwrap_or(0)
    }

    /// All malformed packets.
    pub fn malformed(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// Adds another reader's counters.
    pub fn merge(&mut self, other: &ParseStats) {
        self.packets += other.packets;
        for (a, b) in self.errors.iter_mut().zip(other.errors.iter()) {
            *a += b;
        }
    }
}

/// Parses `pkt` fully (to L4). See [`parse_to`].
#[inline]
pub fn parse(pkt: &[u8], in_port: u32, key: &mut FlowKey) -> ParseOutcome {
    parse_to(pkt, in_port, ParseDepth::L4, key)
}

/// Resets `key` (in_port and in_phy_port = `in_port`, metadata and tunnel_id 0) and parses
/// `pkt` down to `depth`.
#[inline]
pub fn parse_to(pkt: &[u8], in_port: u32, depth: ParseDepth, key: &mut FlowKey) -> ParseOutcome {
    reset(key, in_port);
    if let Some(outcome) = parse_plain(pkt, depth, key) {
        return outcome;
    }
    parse_staged(pkt, depth, key)
}

/// Clears `key` for a frame received on `in_port`.
#[inline(always)]
fn reset(key: &mut FlowKey, in_port: u32) {
    // Word-wise: a few wide stores instead of one per field.
    *key.words_mut() = [0; crate::key::KEY_WORDS];
    key.in_port = in_port;
    key.in_phy_port = in_port;
    key.layout = Layout::EMPTY;
}

/// Parses a frame of any kind into a reset key, stage by stage down to `depth`.
#[inline(never)]
fn parse_staged(pkt: &[u8], depth: ParseDepth, key: &mut FlowKey) -> ParseOutcome {
    let l2 = if pkt.len() >= usize::from(NO_OFFSET) {
        Err(ParseError::FrameTooLong)
    } else {
        parse_l2(pkt, key)
    };
    if l2.is_err() {
        // Deeper stages have nothing to work on; mark them done so resuming is a no-op.
        key.layout.depth = depth;
        return l2;
    }
    if depth == ParseDepth::L2 {
        // L2-only pipelines (a MAC table): nothing further to parse, skip the call.
        return Ok(());
    }
    parse_deeper(pkt, depth, key)
}

/// Where the headers of a plain frame start: an untagged Ethernet II header, then IPv4
/// without options, then the transport header.
const PLAIN_L3: usize = ethernet::HEADER_LEN;
const PLAIN_L4: usize = PLAIN_L3 + ipv4::HEADER_LEN;

/// The most common frames in straight-line code: untagged Ethernet II (no MPLS or PBB)
/// when only L2 is needed, and deeper an IPv4 header without options that is not a fragment
/// with its UDP or TCP ports. Fills exactly what the staged parser would (through the
/// staged L4 stage for other transports); `None`, with the key still reset, for any other
/// frame.
#[inline(always)]
fn parse_plain(pkt: &[u8], depth: ParseDepth, key: &mut FlowKey) -> Option<ParseOutcome> {
    if depth == ParseDepth::L2 {
        let eth = ethernet::Header::at(pkt, 0)?;
        let ty = eth.ethertype();
        let stacked = matches!(
            ty,
            ethertype::VLAN
                | ethertype::QINQ
                | ethertype::MPLS
                | ethertype::MPLS_MCAST
                | ethertype::PBB
        );
        if ty < ethertype::MIN || stacked || pkt.len() >= usize::from(NO_OFFSET) {
            return None;
        }
        fill_plain_l2(key, eth, ty);
        return Some(Ok(()));
    }
    // Both headers with one bounds check.
    let h = bytes_at::<PLAIN_L4>(pkt, 0)?;
    let (Some(eth), Some(ip)) = (h.first_chunk(), h.last_chunk()) else {
        return None;
    };
    let (eth, ip) = (ethernet::Header::new(eth), ipv4::Header::new(ip));
    let total = usize::from(ip.total_len());
    let plain = eth.ethertype() == ethertype::IPV4
        && ip.ver_ihl() == ipv4::VER_IHL_PLAIN
        && !ip.is_fragment()
        && total >= ipv4::HEADER_LEN
        && total <= pkt.len() - PLAIN_L3
        && pkt.len() < usize::from(NO_OFFSET);
    if !plain {
        return None;
    }
    fill_plain_l2(key, eth, ethertype::IPV4);
    key.layout.depth = depth;
    fill_ipv4(key, ip, PLAIN_L3, total);
    key.layout.l4 = PLAIN_L4 as u16;
    if depth == ParseDepth::L3 {
        return Some(Ok(()));
    }
    // UDP and TCP whose header lies inside the IP packet; anything else (and any error)
    // through the staged L4 parser.
    let packet = pkt.get(..PLAIN_L3 + total).unwrap_or(pkt);
    // Decided by arithmetic, not by a branch per protocol: a mix of TCP and UDP in no pattern
    // would mispredict one. `header` is the transport header's length (TCP's data offset).
    let proto = ip.protocol();
    let is_tcp = proto == protocol::TCP;
    let data_off = packet.get(PLAIN_L4 + tcp::field::DATA_OFF).copied();
    let tcp_len = tcp::header_len(data_off.unwrap_or(0));
    let header = core::hint::select_unpredictable(is_tcp, tcp_len, udp::HEADER_LEN);
    let known = is_tcp | (proto == protocol::UDP);
    let least = udp::HEADER_LEN + (tcp::HEADER_LEN - udp::HEADER_LEN) * usize::from(is_tcp);
    let fits = header >= least && PLAIN_L4 + header <= packet.len();
    match bytes_at::<{ ports::LEN }>(packet, PLAIN_L4).filter(|_| known & fits) {
        Some(p) => {
            set_ports(key, p);
            Some(Ok(()))
        }
        None => Some(parse_l4(pkt, key)),
    }
}

/// The key fields of the IPv4 header `ip` at `l3`, of an IP packet `total` bytes long.
#[inline(always)]
fn fill_ipv4(
    key: &mut FlowKey,
    ip: ipv4::Header<&[u8; ipv4::HEADER_LEN]>,
    l3: usize,
    total: usize,
) {
    key.ip_dscp = ip.dscp();
    key.ip_ecn = ip.ecn();
    key.ip_proto = ip.protocol();
    key.ipv4_src = ip.src();
    key.ipv4_dst = ip.dst();
    key.ip_ttl = ip.ttl();
    key.layout.l3_end = off16(l3 + total);
}

/// The key of an untagged Ethernet II header with EtherType `ty` (what `parse_l2` gives it).
#[inline(always)]
fn fill_plain_l2(key: &mut FlowKey, eth: ethernet::Header<&[u8; ethernet::HEADER_LEN]>, ty: u16) {
    key.eth_dst = eth.dst();
    key.eth_src = eth.src();
    key.eth_type = ty;
    key.layout.eth_type = ethernet::field::ETHERTYPE.start as u16;
    key.layout.l3 = PLAIN_L3 as u16;
}

/// Continues parsing a key already filled by [`parse_to`] on the same frame down to
/// `depth`; does nothing for stages already run.
#[inline]
pub fn parse_deeper(pkt: &[u8], depth: ParseDepth, key: &mut FlowKey) -> ParseOutcome {
    let done = key.layout.depth;
    if depth <= done {
        return Ok(());
    }
    // Stages after a failed one are no-ops (their offsets stay NO_OFFSET), so the key is
    // marked as parsed to `depth` whatever happens below.
    key.layout.depth = depth;
    if done < ParseDepth::L3 {
        parse_l3(pkt, key)?;
    }
    if depth >= ParseDepth::L4 {
        parse_l4(pkt, key)?;
    }
    Ok(())
}

/// Offset as stored in [`crate::key::Layout`]; frames are shorter than `NO_OFFSET` bytes.
#[inline(always)]
fn off16(off: usize) -> u16 {
    u16::try_from(off).unwrap_or(NO_OFFSET)
}

/// Ethernet, VLAN tags, LLC/SNAP, then the top MPLS label or the PBB I-TAG.
#[inline]
fn parse_l2(pkt: &[u8], key: &mut FlowKey) -> ParseOutcome {
    let eth = ethernet::Header::at(pkt, 0).ok_or(ParseError::TruncatedEthernet)?;
    key.eth_dst = eth.dst();
    key.eth_src = eth.src();
    let mut ty = eth.ethertype();
    let mut off = ethernet::HEADER_LEN;

    if ty == ethertype::VLAN || ty == ethertype::QINQ {
        key.layout.vlan = ethernet::field::ETHERTYPE.start as u16;
        let mut first = true;
        while ty == ethertype::VLAN || ty == ethertype::QINQ {
            let t = tag::Tag::at(pkt, off).ok_or(ParseError::TruncatedVlan)?;
            if first {
                let tci = t.tci();
                key.vlan_vid = (tci & tag::VID_MASK) | OFPVID_PRESENT;
                key.vlan_pcp = (tci >> tag::PCP_SHIFT) as u8;
                first = false;
            }
            key.layout.vlan_tags = key.layout.vlan_tags.saturating_add(1);
            ty = t.ethertype();
            off += tag::LEN;
        }
    }
    // The EtherType field before `off` (the last tag's, or the Ethernet header's).
    key.layout.eth_type = off16(off - ethernet::ETHERTYPE_LEN);

    if ty < ethertype::MIN {
        match bytes_at::<{ snap::LEN }>(pkt, off) {
            Some(llc) if get::<_, 6>(llc, snap::field::PREFIX) == snap::PREFIX => {
                ty = get16(llc, snap::field::ETHERTYPE);
                off += snap::LEN;
            }
            _ => ty = ethertype::NOT_ETH,
        }
    }
    key.eth_type = ty;

    match ty {
        ethertype::MPLS | ethertype::MPLS_MCAST => parse_mpls(pkt, off, key),
        ethertype::PBB => {
            let itag = bytes_at::<{ pbb::TAG_LEN }>(pkt, off).ok_or(ParseError::TruncatedPbb)?;
            key.layout.pbb = off16(off);
            key.pbb_isid = pbb::isid(itag);
            key.layout.l3 = off16(off + pbb::TAG_LEN);
            Ok(())
        }
        _ => {
            key.layout.l3 = off16(off);
            Ok(())
        }
    }
}

/// Top label into the key; walks to the bottom of stack so `layout.l3` is the payload.
#[inline]
fn parse_mpls(pkt: &[u8], mut off: usize, key: &mut FlowKey) -> ParseOutcome {
    let top = bytes_at::<{ mpls::LEN }>(pkt, off).ok_or(ParseError::TruncatedMpls)?;
    let lse = mpls::Lse::from_bytes(*top);
    key.layout.mpls = off16(off);
    key.mpls_label = lse.label();
    key.mpls_tc = lse.tc();
    key.mpls_bos = lse.bos();
    key.layout.mpls_ttl = lse.ttl();
    let mut bos = key.mpls_bos != 0;
    off += mpls::LEN;
    while !bos {
        let lse = bytes_at::<{ mpls::LEN }>(pkt, off).ok_or(ParseError::TruncatedMpls)?;
        bos = lse[mpls::field::BOS] & mpls::BOS_BIT != 0;
        off += mpls::LEN;
    }
    key.layout.l3 = off16(off);
    Ok(())
}

#[inline]
fn parse_l3(pkt: &[u8], key: &mut FlowKey) -> ParseOutcome {
    let l3 = usize::from(key.layout.l3);
    if key.layout.l3 == NO_OFFSET {
        return Ok(());
    }
    match key.eth_type {
        ethertype::IPV4 => parse_ipv4(pkt, l3, key),
        ethertype::IPV6 => parse_ipv6(pkt, l3, key),
        ethertype::ARP => parse_arp(pkt, l3, key),
        _ => Ok(()),
    }
}

#[inline]
fn parse_ipv4(pkt: &[u8], l3: usize, key: &mut FlowKey) -> ParseOutcome {
    let ip = ipv4::Header::at(pkt, l3).ok_or(ParseError::TruncatedIpv4)?;
    if ip.version() != ipv4::VERSION {
        return Err(ParseError::BadIpVersion);
    }
    let ihl = ip.header_len();
    if ihl < ipv4::HEADER_LEN {
        return Err(ParseError::BadIpv4HeaderLen);
    }
    let total = usize::from(ip.total_len());
    if total < ihl {
        return Err(ParseError::BadIpv4TotalLen);
    }
    if total > pkt.len() - l3 {
        return Err(ParseError::TruncatedIpv4);
    }
    fill_ipv4(key, ip, l3, total);
    if ip.is_fragment() {
        key.layout.frag = frag::IS_FRAGMENT;
        if ip.is_later_fragment() {
            key.layout.frag |= frag::LATER;
            return Ok(());
        }
    }
    key.layout.l4 = off16(l3 + ihl);
    Ok(())
}

#[inline]
fn parse_arp(pkt: &[u8], l3: usize, key: &mut FlowKey) -> ParseOutcome {
    let a = arp::Packet::at(pkt, l3).ok_or(ParseError::TruncatedArp)?;
    // Only Ethernet/IPv4 ARP has the OXM fields; other formats leave them 0, as in OVS.
    if a.format() == arp::ETHERNET_IPV4 {
        key.arp_op = a.oper();
        key.arp_sha = a.sha();
        key.arp_spa = a.spa();
        key.arp_tha = a.tha();
        key.arp_tpa = a.tpa();
    }
    Ok(())
}

/// Position of an extension header in RFC 8200's recommended order.
fn ext_rank(nh: u8, dest_seen: u8, last_rank: u8) -> u8 {
    match nh {
        protocol::HOP_BY_HOP => 1,
        protocol::DEST_OPTS if dest_seen == 0 && last_rank < 3 => 2,
        protocol::DEST_OPTS => 7,
        protocol::ROUTING => 3,
        protocol::FRAGMENT => 4,
        protocol::AUTH => 5,
        _ => 6,
    }
}

fn ext_flag(nh: u8) -> u16 {
    match nh {
        protocol::HOP_BY_HOP => exthdr::HOP,
        protocol::DEST_OPTS => exthdr::DEST,
        protocol::ROUTING => exthdr::ROUTER,
        protocol::FRAGMENT => exthdr::FRAG,
        protocol::AUTH => exthdr::AUTH,
        _ => exthdr::ESP,
    }
}

#[inline]
fn parse_ipv6(pkt: &[u8], l3: usize, key: &mut FlowKey) -> ParseOutcome {
    let ip = ipv6::Header::at(pkt, l3).ok_or(ParseError::TruncatedIpv6)?;
    if ip.version() != ipv6::VERSION {
        return Err(ParseError::BadIpVersion);
    }
    let payload = usize::from(ip.payload_len());
    let avail = pkt.len() - l3 - ipv6::HEADER_LEN;
    if payload > avail {
        return Err(ParseError::TruncatedIpv6);
    }
    let mut nh = ip.next_header();
    // A zero payload length with hop-by-hop options is a jumbogram: the frame bounds it.
    let end = if payload == 0 && nh == protocol::HOP_BY_HOP {
        pkt.len()
    } else {
        l3 + ipv6::HEADER_LEN + payload
    };
    let tc = ip.traffic_class();
    key.ip_dscp = tc >> ipv4::DSCP_SHIFT;
    key.ip_ecn = tc & ipv4::ECN_MASK;
    key.ipv6_flabel = ip.flow_label();
    key.ip_ttl = ip.hop_limit();
    key.ipv6_src = ip.src();
    key.ipv6_dst = ip.dst();
    key.layout.l3_end = off16(end);

    let pkt = pkt.get(..end).unwrap_or(pkt);
    let mut off = l3 + ipv6::HEADER_LEN;
    let mut flags = 0u16;
    let mut last_rank = 0u8;
    let mut dest_seen = 0u8;
    let mut walked = 0usize;
    let mut has_l4 = true;
    loop {
        match nh {
            protocol::HOP_BY_HOP
            | protocol::ROUTING
            | protocol::FRAGMENT
            | protocol::ESP
            | protocol::AUTH
            | protocol::DEST_OPTS => {}
            protocol::NO_NEXT => {
                flags |= exthdr::NONEXT;
                has_l4 = false;
                break;
            }
            _ => break,
        }
        walked += 1;
        if walked > MAX_IPV6_EXT_HEADERS {
            key.ip_proto = nh;
            key.ipv6_exthdr = flags;
            return Err(ParseError::Ipv6ExtChainTooLong);
        }
        let rank = ext_rank(nh, dest_seen, last_rank);
        let flag = ext_flag(nh);
        if rank < last_rank || (nh == protocol::HOP_BY_HOP && last_rank != 0) {
            flags |= exthdr::UNSEQ;
        }
        let dest = nh == protocol::DEST_OPTS;
        if (dest && dest_seen >= 2) || (!dest && flags & flag != 0) {
            flags |= exthdr::UNREP;
        }
        if dest {
            dest_seen = dest_seen.saturating_add(1);
        }
        flags |= flag;
        last_rank = rank;
        if nh == protocol::ESP {
            // ESP encrypts everything after it.
            has_l4 = false;
            break;
        }
        let Some(eh) = ipv6::ext::Ext::at(pkt, off) else {
            key.ipv6_exthdr = flags;
            return Err(ParseError::TruncatedIpv6Ext);
        };
        if nh == protocol::FRAGMENT {
            key.layout.frag = frag::IS_FRAGMENT;
            if eh.is_later_fragment() {
                key.layout.frag |= frag::LATER;
                has_l4 = false;
            }
        }
        let len = eh.len(nh);
        if off + len > pkt.len() {
            key.ipv6_exthdr = flags;
            return Err(ParseError::TruncatedIpv6Ext);
        }
        nh = eh.next_header();
        off += len;
        if !has_l4 {
            break;
        }
    }
    key.ip_proto = nh;
    key.ipv6_exthdr = flags;
    if has_l4 {
        key.layout.l4 = off16(off);
    }
    Ok(())
}

#[inline]
fn parse_l4(pkt: &[u8], key: &mut FlowKey) -> ParseOutcome {
    if key.layout.l4 == NO_OFFSET {
        return Ok(());
    }
    let l4 = usize::from(key.layout.l4);
    let pkt = pkt.get(..usize::from(key.layout.l3_end)).unwrap_or(pkt);
    match (key.ip_proto, key.eth_type) {
        (protocol::UDP, _) => {
            let p = bytes_at::<{ ports::LEN }>(pkt, l4)
                .filter(|_| pkt.len() >= l4 + udp::HEADER_LEN)
                .ok_or(ParseError::TruncatedUdp)?;
            set_ports(key, p);
            Ok(())
        }
        (protocol::TCP, _) => {
            let h = bytes_at::<{ tcp::HEADER_LEN }>(pkt, l4).ok_or(ParseError::TruncatedTcp)?;
            set_ports(key, &get(h, ports::field::PAIR));
            let data_off = tcp::header_len(h[tcp::field::DATA_OFF]);
            if data_off < tcp::HEADER_LEN {
                Err(ParseError::BadTcpOffset)
            } else if l4 + data_off > pkt.len() {
                Err(ParseError::TruncatedTcp)
            } else {
                Ok(())
            }
        }
        (protocol::SCTP, _) => {
            let h = bytes_at::<{ sctp::HEADER_LEN }>(pkt, l4).ok_or(ParseError::TruncatedSctp)?;
            set_ports(key, &get(h, ports::field::PAIR));
            Ok(())
        }
        (protocol::ICMP, ethertype::IPV4) => {
            let h = bytes_at::<{ icmp::HEADER_LEN }>(pkt, l4).ok_or(ParseError::TruncatedIcmp)?;
            key.icmp_type = h[icmp::field::TYPE];
            key.icmp_code = h[icmp::field::CODE];
            Ok(())
        }
        (protocol::ICMPV6, ethertype::IPV6) => parse_icmpv6(pkt, l4, key),
        _ => Ok(()),
    }
}

/// The port pair at the start of a TCP, UDP or SCTP header.
#[inline(always)]
fn set_ports(key: &mut FlowKey, p: &[u8; ports::LEN]) {
    key.tp_src = get16(p, ports::field::SRC);
    key.tp_dst = get16(p, ports::field::DST);
}

fn parse_icmpv6(pkt: &[u8], l4: usize, key: &mut FlowKey) -> ParseOutcome {
    let h = bytes_at::<{ icmp::HEADER_LEN }>(pkt, l4).ok_or(ParseError::TruncatedIcmp)?;
    let (kind, code) = (h[icmp::field::TYPE], h[icmp::field::CODE]);
    key.icmp_type = kind;
    key.icmp_code = code;
    if code != 0 || (kind != nd::SOLICITATION && kind != nd::ADVERTISEMENT) {
        return Ok(());
    }
    let body = bytes_at::<{ nd::field::OPTIONS }>(pkt, l4).ok_or(ParseError::TruncatedNd)?;
    key.nd_target = get(body, nd::field::TARGET);
    let result = parse_nd_options(pkt, l4 + nd::field::OPTIONS, kind, key);
    if result.is_err() {
        // As in OVS, a bad option invalidates all ND fields.
        key.nd_target = [0; 16];
        key.nd_sll = [0; 6];
        key.nd_tll = [0; 6];
    }
    result
}

fn parse_nd_options(pkt: &[u8], mut off: usize, icmp_type: u8, key: &mut FlowKey) -> ParseOutcome {
    use nd::option::{self, field};
    let (mut sll_seen, mut tll_seen) = (false, false);
    while off < pkt.len() {
        let head = bytes_at::<2>(pkt, off).ok_or(ParseError::TruncatedNd)?;
        let len = usize::from(head[field::LEN]) * option::UNIT;
        if len == 0 {
            return Err(ParseError::BadNdOption);
        }
        let body = pkt.get(off..off + len).ok_or(ParseError::TruncatedNd)?;
        let lladdr = body.get(field::LLADDR).filter(|_| len == option::UNIT);
        match (head[field::TYPE], lladdr) {
            (option::SOURCE_LLADDR, Some(mac)) => {
                if sll_seen {
                    return Err(ParseError::BadNdOption);
                }
                sll_seen = true;
                if icmp_type == nd::SOLICITATION {
                    key.nd_sll.copy_from_slice(mac);
                }
            }
            (option::TARGET_LLADDR, Some(mac)) => {
                if tll_seen {
                    return Err(ParseError::BadNdOption);
                }
                tll_seen = true;
                if icmp_type == nd::ADVERTISEMENT {
                    key.nd_tll.copy_from_slice(mac);
                }
            }
            _ => {}
        }
        off += len;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Layout;
    use proptest::prelude::*;

    const DST: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x0b];
    const SRC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x0a];

    /// Ethernet header: DST, SRC, EtherType.
    fn eth(ty: u16) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend_from_slice(&DST);
        p.extend_from_slice(&SRC);
        p.extend_from_slice(&ty.to_be_bytes());
        p
    }

    /// IPv4 header 10.0.0.1 -> 10.0.0.2, TTL 64, DSCP 46 ECN 1, given options and payload.
    fn ipv4(proto: u8, frag_field: u16, options: &[u8], payload: &[u8]) -> Vec<u8> {
        let ihl = 5 + options.len() / 4;
        let total = (ihl * 4 + payload.len()) as u16;
        let mut h = vec![0x40 | ihl as u8, (46 << 2) | 1];
        h.extend_from_slice(&total.to_be_bytes());
        h.extend_from_slice(&[0x12, 0x34]);
        h.extend_from_slice(&frag_field.to_be_bytes());
        h.extend_from_slice(&[64, proto, 0, 0]);
        h.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        h.extend_from_slice(options);
        h.extend_from_slice(payload);
        h
    }

    /// IPv6 header ::1 -> ::2 (prefix fe80), TC 0xb9, flow label 0x12345, hop limit 255.
    fn ipv6(nh: u8, payload: &[u8]) -> Vec<u8> {
        let mut h = vec![0x6b, 0x91, 0x23, 0x45];
        h.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        h.extend_from_slice(&[nh, 255]);
        h.extend_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        h.extend_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        h.extend_from_slice(payload);
        h
    }

    fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
        let mut h = Vec::new();
        h.extend_from_slice(&sport.to_be_bytes());
        h.extend_from_slice(&dport.to_be_bytes());
        h.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        h.extend_from_slice(&[0, 0]);
        h.extend_from_slice(payload);
        h
    }

    fn tcp(sport: u16, dport: u16, data_offset: u8) -> Vec<u8> {
        let mut h = Vec::new();
        h.extend_from_slice(&sport.to_be_bytes());
        h.extend_from_slice(&dport.to_be_bytes());
        h.extend_from_slice(&[
            0,
            0,
            0,
            1,
            0,
            0,
            0,
            0,
            data_offset << 4,
            0x02,
            0xff,
            0xff,
            0,
            0,
            0,
            0,
        ]);
        h.resize(usize::from(data_offset).max(5) * 4, 0);
        h
    }

    fn cat(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    fn parsed(pkt: &[u8]) -> (FlowKey, ParseOutcome) {
        let mut k = FlowKey::default();
        let r = parse(pkt, 7, &mut k);
        (k, r)
    }

    fn udp4_frame() -> Vec<u8> {
        cat(&[&eth(0x0800), &ipv4(17, 0, &[], &udp(1234, 53, &[0xab; 22]))])
    }

    #[test]
    fn ipv4_udp_fills_every_layer() {
        let p = udp4_frame();
        assert_eq!(p.len(), 64);
        let (k, r) = parsed(&p);
        assert_eq!(r, Ok(()));
        assert_eq!((k.in_port, k.in_phy_port), (7, 7));
        assert_eq!((k.eth_dst, k.eth_src, k.eth_type), (DST, SRC, 0x0800));
        assert_eq!((k.vlan_vid, k.vlan_pcp), (0, 0));
        assert_eq!((k.ip_dscp, k.ip_ecn, k.ip_proto), (46, 1, 17));
        assert_eq!((k.ipv4_src, k.ipv4_dst), (0x0a00_0001, 0x0a00_0002));
        assert_eq!((k.tp_src, k.tp_dst), (1234, 53));
        let l = k.layout;
        assert_eq!(
            (l.vlan, l.eth_type, l.l3, l.l4, l.l3_end),
            (NO_OFFSET, 12, 14, 34, 64)
        );
        assert_eq!((k.ip_ttl, l.frag, l.depth), (64, 0, ParseDepth::L4));
    }

    #[test]
    fn staged_parse_stops_at_depth_and_resumes_to_the_same_key() {
        let p = udp4_frame();
        let mut k = FlowKey::default();
        assert_eq!(parse_to(&p, 7, ParseDepth::L2, &mut k), Ok(()));
        assert_eq!(
            (k.eth_type, k.ip_proto, k.ipv4_src, k.tp_src),
            (0x0800, 0, 0, 0)
        );
        assert_eq!(k.layout.depth, ParseDepth::L2);
        assert_eq!(parse_deeper(&p, ParseDepth::L3, &mut k), Ok(()));
        assert_eq!((k.ip_proto, k.tp_dst), (17, 0));
        assert_eq!(parse_deeper(&p, ParseDepth::L4, &mut k), Ok(()));
        assert_eq!(k, parsed(&p).0);
    }

    #[test]
    fn vlan_tag_gives_outer_vid_and_pcp() {
        let mut p = eth(0x8100);
        p.extend_from_slice(&[0xa0, 0x64, 0x08, 0x00]); // PCP 5, VID 100
        p.extend_from_slice(&ipv4(17, 0, &[], &udp(1, 2, &[])));
        let (k, r) = parsed(&p);
        assert_eq!(r, Ok(()));
        assert_eq!(
            (k.vlan_vid, k.vlan_pcp, k.eth_type),
            (0x1000 | 100, 5, 0x0800)
        );
        assert_eq!(
            (k.layout.vlan, k.layout.eth_type, k.layout.l3),
            (12, 16, 18)
        );
        assert_eq!((k.layout.vlan_tags, k.tp_dst), (1, 2));
    }

    #[test]
    fn qinq_matches_the_outer_tag() {
        let mut p = eth(0x88a8);
        p.extend_from_slice(&[0x20, 0x0a, 0x81, 0x00]); // S-tag PCP 1 VID 10
        p.extend_from_slice(&[0x00, 0x14, 0x08, 0x06]); // C-tag VID 20, then ARP
        p.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
        p.extend_from_slice(&SRC);
        p.extend_from_slice(&[192, 168, 0, 1]);
        p.extend_from_slice(&[0; 6]);
        p.extend_from_slice(&[192, 168, 0, 9]);
        let (k, r) = parsed(&p);
        assert_eq!(r, Ok(()));
        assert_eq!(
            (k.vlan_vid, k.vlan_pcp, k.layout.vlan_tags),
            (0x1000 | 10, 1, 2)
        );
        assert_eq!(
            (k.eth_type, k.layout.eth_type, k.layout.l3),
            (0x0806, 20, 22)
        );
        assert_eq!(
            (k.arp_op, k.arp_spa, k.arp_tpa),
            (1, 0xc0a8_0001, 0xc0a8_0009)
        );
        assert_eq!((k.arp_sha, k.arp_tha), (SRC, [0; 6]));
    }

    #[test]
    fn arp_of_other_hardware_has_no_arp_fields() {
        let mut p = eth(0x0806);
        p.extend_from_slice(&[0, 6, 8, 0, 6, 4, 0, 2]);
        p.resize(14 + 28, 0x11);
        let (k, r) = parsed(&p);
        assert_eq!((r, k.arp_op, k.arp_spa), (Ok(()), 0, 0));
        assert_eq!(parsed(&p[..41]).1, Err(ParseError::TruncatedArp));
    }

    #[test]
    fn mpls_stack_top_label_and_payload_offset() {
        let mut p = eth(0x8847);
        p.extend_from_slice(&[0x00, 0x01, 0x4a, 0x40]); // label 20, TC 5, BOS 0, TTL 64
        p.extend_from_slice(&[0x00, 0x02, 0x00, 0x3f]); // label 32, BOS 0
        p.extend_from_slice(&[0x00, 0x03, 0x01, 0x3e]); // label 48, BOS 1
        p.extend_from_slice(&ipv4(17, 0, &[], &udp(1, 2, &[])));
        let (k, r) = parsed(&p);
        assert_eq!(r, Ok(()));
        assert_eq!(
            (k.eth_type, k.mpls_label, k.mpls_tc, k.mpls_bos),
            (0x8847, 20, 5, 0)
        );
        assert_eq!(
            (k.layout.mpls, k.layout.mpls_ttl, k.layout.l3),
            (14, 64, 26)
        );
        assert_eq!((k.ip_proto, k.ipv4_src), (0, 0), "no IP fields under MPLS");
        let (k, r) = parsed(&p[..22]);
        assert_eq!((r, k.mpls_label), (Err(ParseError::TruncatedMpls), 20));
    }

    #[test]
    fn pbb_isid() {
        let mut p = eth(0x88a8);
        p.extend_from_slice(&[0x00, 0x05, 0x88, 0xe7]); // B-tag VID 5
        p.extend_from_slice(&[0x40, 0xab, 0xcd, 0xef]); // I-TAG I-SID 0xabcdef
        p.extend_from_slice(&eth(0x0800));
        let (k, r) = parsed(&p);
        assert_eq!(r, Ok(()));
        assert_eq!(
            (k.eth_type, k.pbb_isid, k.vlan_vid),
            (0x88e7, 0xabcdef, 0x1005)
        );
        assert_eq!((k.layout.pbb, k.layout.l3), (18, 22));
        assert_eq!(parsed(&p[..20]).1, Err(ParseError::TruncatedPbb));
    }

    #[test]
    fn llc_snap_and_plain_8023() {
        let mut snap = eth(60);
        snap.extend_from_slice(&[0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00]);
        snap.extend_from_slice(&ipv4(1, 0, &[], &[8, 0, 0, 0]));
        let (k, r) = parsed(&snap);
        assert_eq!(
            (r, k.eth_type, k.layout.l3, k.icmp_type),
            (Ok(()), 0x0800, 22, 8)
        );
        let mut llc = eth(40);
        llc.extend_from_slice(&[0x42, 0x42, 0x03, 0, 0, 0, 0, 0]);
        assert_eq!(parsed(&llc).0.eth_type, ETH_TYPE_NOT_ETH);
    }

    #[test]
    fn ipv4_options_and_tcp() {
        let p = cat(&[
            &eth(0x0800),
            &ipv4(6, 0, &[0x94, 4, 0, 0, 1, 1, 1, 0], &tcp(80, 4321, 6)),
        ]);
        let (k, r) = parsed(&p);
        assert_eq!(r, Ok(()));
        assert_eq!(
            (k.layout.l4, k.tp_src, k.tp_dst, k.ip_proto),
            (42, 80, 4321, 6)
        );
        let bad = cat(&[&eth(0x0800), &ipv4(6, 0, &[], &tcp(80, 1, 4))]);
        let (k, r) = parsed(&bad);
        assert_eq!((r, k.tp_src), (Err(ParseError::BadTcpOffset), 80));
        let mut short = cat(&[&eth(0x0800), &ipv4(6, 0, &[], &tcp(80, 1, 15))]);
        short.truncate(14 + 20 + 24);
        short[16..18].copy_from_slice(&44u16.to_be_bytes());
        assert_eq!(parsed(&short).1, Err(ParseError::TruncatedTcp));
    }

    #[test]
    fn ipv4_fragments() {
        let first = cat(&[&eth(0x0800), &ipv4(17, 0x2000, &[], &udp(5, 6, &[0; 8]))]);
        let (k, r) = parsed(&first);
        assert_eq!(r, Ok(()));
        assert_eq!(
            (k.layout.frag, k.tp_src, k.tp_dst),
            (frag::IS_FRAGMENT, 5, 6)
        );
        let later = cat(&[&eth(0x0800), &ipv4(17, 0x0003, &[], &udp(5, 6, &[0; 8]))]);
        let (k, r) = parsed(&later);
        assert_eq!(r, Ok(()));
        assert_eq!(k.layout.frag, frag::IS_FRAGMENT | frag::LATER);
        assert_eq!((k.ip_proto, k.tp_src, k.layout.l4), (17, 0, NO_OFFSET));
        let df = cat(&[&eth(0x0800), &ipv4(17, 0x4000, &[], &udp(5, 6, &[]))]);
        assert_eq!(parsed(&df).0.layout.frag, 0, "DF alone is not a fragment");
    }

    #[test]
    fn ipv4_total_length_bounds_l4_and_ignores_padding() {
        let mut p = cat(&[&eth(0x0800), &ipv4(17, 0, &[], &udp(1, 2, &[]))]);
        p.resize(60, 0xee);
        let (k, r) = parsed(&p);
        assert_eq!((r, k.layout.l3_end, k.tp_dst), (Ok(()), 42, 2));
        let mut cut = p.clone();
        cut[16..18].copy_from_slice(&24u16.to_be_bytes());
        assert_eq!(parsed(&cut).1, Err(ParseError::TruncatedUdp));
        let mut long = p.clone();
        long[16..18].copy_from_slice(&100u16.to_be_bytes());
        let (k, r) = parsed(&long);
        assert_eq!((r, k.ipv4_src), (Err(ParseError::TruncatedIpv4), 0));
    }

    #[test]
    fn malformed_ipv4_headers() {
        let good = cat(&[&eth(0x0800), &ipv4(17, 0, &[], &udp(1, 2, &[]))]);
        let mut v = good.clone();
        v[14] = 0x65;
        assert_eq!(parsed(&v).1, Err(ParseError::BadIpVersion));
        let mut ihl = good.clone();
        ihl[14] = 0x44;
        assert_eq!(parsed(&ihl).1, Err(ParseError::BadIpv4HeaderLen));
        let mut tot = good.clone();
        tot[16..18].copy_from_slice(&19u16.to_be_bytes());
        assert_eq!(parsed(&tot).1, Err(ParseError::BadIpv4TotalLen));
        let mut opts = good;
        opts[14] = 0x4f;
        opts[16..18].copy_from_slice(&60u16.to_be_bytes());
        assert_eq!(parsed(&opts).1, Err(ParseError::TruncatedIpv4));
    }

    /// Extension header with next header `nh` and `len8` extra 8-octet units.
    fn ext(nh: u8, len8: u8) -> Vec<u8> {
        let mut h = vec![nh, len8];
        h.resize(8 + usize::from(len8) * 8, 0);
        h
    }

    fn frag_hdr(nh: u8, offset8: u16, more: bool) -> Vec<u8> {
        let f = (offset8 << 3) | u16::from(more);
        let mut h = vec![nh, 0];
        h.extend_from_slice(&f.to_be_bytes());
        h.extend_from_slice(&[0, 0, 0, 9]);
        h
    }

    #[test]
    fn ipv6_extension_chain_to_tcp() {
        let payload = cat(&[
            &ext(43, 0),
            &ext(44, 1),
            &frag_hdr(60, 0, true),
            &ext(6, 0),
            &tcp(22, 999, 5),
        ]);
        let p = cat(&[&eth(0x86dd), &ipv6(0, &payload)]);
        let (k, r) = parsed(&p);
        assert_eq!(r, Ok(()));
        let want = exthdr::HOP | exthdr::ROUTER | exthdr::FRAG | exthdr::DEST;
        assert_eq!(k.ipv6_exthdr, want);
        assert_eq!((k.ip_proto, k.tp_src, k.tp_dst), (6, 22, 999));
        assert_eq!(
            (k.ip_dscp, k.ip_ecn, k.ipv6_flabel),
            (0xb9 >> 2, 1, 0x12345)
        );
        assert_eq!(k.ipv6_src[15], 1);
        assert_eq!(k.ipv6_dst[15], 2);
        assert_eq!(k.layout.l4, 14 + 40 + 8 + 16 + 8 + 8);
        assert_eq!(
            (k.layout.frag, k.ip_ttl),
            (frag::IS_FRAGMENT, 255),
            "the hop limit"
        );
    }

    #[test]
    fn ipv6_auth_esp_nonext_and_later_fragment() {
        let mut ah = vec![17, 4, 0, 0];
        ah.resize(24, 0); // (4 + 2) * 4 bytes
        let p = cat(&[&eth(0x86dd), &ipv6(51, &cat(&[&ah, &udp(7, 8, &[])]))]);
        let (k, r) = parsed(&p);
        assert_eq!(
            (r, k.ipv6_exthdr, k.ip_proto, k.tp_dst),
            (Ok(()), exthdr::AUTH, 17, 8)
        );

        let esp = cat(&[&eth(0x86dd), &ipv6(50, &[0; 16])]);
        let (k, r) = parsed(&esp);
        assert_eq!(
            (r, k.ipv6_exthdr, k.ip_proto, k.layout.l4),
            (Ok(()), exthdr::ESP, 50, NO_OFFSET)
        );

        let nonext = cat(&[&eth(0x86dd), &ipv6(60, &ext(59, 0))]);
        let (k, r) = parsed(&nonext);
        assert_eq!(
            (r, k.ipv6_exthdr, k.ip_proto),
            (Ok(()), exthdr::DEST | exthdr::NONEXT, 59)
        );

        let later = cat(&[
            &eth(0x86dd),
            &ipv6(44, &cat(&[&frag_hdr(17, 100, false), &udp(1, 2, &[])])),
        ]);
        let (k, r) = parsed(&later);
        assert_eq!((r, k.ip_proto, k.tp_src), (Ok(()), 17, 0));
        assert_eq!(k.layout.frag, frag::IS_FRAGMENT | frag::LATER);
    }

    #[test]
    fn ipv6_unexpected_repeats_and_sequence() {
        let rep = cat(&[
            &eth(0x86dd),
            &ipv6(0, &cat(&[&ext(0, 0), &ext(17, 0), &udp(1, 2, &[])])),
        ]);
        let k = parsed(&rep).0;
        assert_eq!(k.ipv6_exthdr, exthdr::HOP | exthdr::UNREP | exthdr::UNSEQ);
        assert_eq!(k.tp_dst, 2);
        let seq = cat(&[
            &eth(0x86dd),
            &ipv6(43, &cat(&[&ext(0, 0), &ext(17, 0), &udp(1, 2, &[])])),
        ]);
        assert_eq!(
            parsed(&seq).0.ipv6_exthdr,
            exthdr::HOP | exthdr::ROUTER | exthdr::UNSEQ
        );
        let two_dest = cat(&[
            &eth(0x86dd),
            &ipv6(60, &cat(&[&ext(60, 0), &ext(17, 0), &udp(1, 2, &[])])),
        ]);
        assert_eq!(parsed(&two_dest).0.ipv6_exthdr, exthdr::DEST);
        let three = cat(&[
            &eth(0x86dd),
            &ipv6(60, &cat(&[&ext(60, 0), &ext(60, 0), &ext(17, 0)])),
        ]);
        assert_eq!(parsed(&three).0.ipv6_exthdr, exthdr::DEST | exthdr::UNREP);
    }

    #[test]
    fn ipv6_jumbogram_is_bounded_by_the_frame() {
        // Hop-by-hop with a Jumbo Payload option (type 0xc2) and a zero payload length.
        let hop = [17, 0, 0xc2, 4, 0, 0, 0, 16];
        let mut p = cat(&[&eth(0x86dd), &ipv6(0, &cat(&[&hop, &udp(9, 10, &[])]))]);
        p[18..20].copy_from_slice(&[0, 0]);
        let (k, r) = parsed(&p);
        assert_eq!((r, k.ipv6_exthdr, k.tp_src), (Ok(()), exthdr::HOP, 9));
        assert_eq!(usize::from(k.layout.l3_end), p.len());
    }

    #[test]
    fn ipv6_bounds() {
        let long_chain: Vec<u8> = (0..20).flat_map(|_| ext(60, 0)).collect();
        let p = cat(&[&eth(0x86dd), &ipv6(60, &long_chain)]);
        assert_eq!(parsed(&p).1, Err(ParseError::Ipv6ExtChainTooLong));
        let mut cut = cat(&[&eth(0x86dd), &ipv6(0, &ext(17, 2))]);
        cut[18..20].copy_from_slice(&16u16.to_be_bytes());
        cut.truncate(14 + 40 + 16);
        assert_eq!(parsed(&cut).1, Err(ParseError::TruncatedIpv6Ext));
        let mut v = cat(&[&eth(0x86dd), &ipv6(17, &udp(1, 2, &[]))]);
        v[14] = 0x4b;
        assert_eq!(parsed(&v).1, Err(ParseError::BadIpVersion));
        let p = cat(&[&eth(0x86dd), &ipv6(17, &udp(1, 2, &[]))]);
        assert_eq!(parsed(&p[..p.len() - 1]).1, Err(ParseError::TruncatedIpv6));
    }

    #[test]
    fn sctp_and_icmpv4() {
        let mut sctp = vec![0x0b, 0xb8, 0x0f, 0xa0];
        sctp.resize(12, 0);
        let p = cat(&[&eth(0x0800), &ipv4(132, 0, &[], &sctp)]);
        let (k, r) = parsed(&p);
        assert_eq!((r, k.tp_src, k.tp_dst), (Ok(()), 3000, 4000));
        assert_eq!(parsed(&p[..p.len() - 1]).1, Err(ParseError::TruncatedIpv4));
        let short = cat(&[&eth(0x0800), &ipv4(132, 0, &[], &sctp[..11])]);
        assert_eq!(parsed(&short).1, Err(ParseError::TruncatedSctp));

        let p = cat(&[
            &eth(0x0800),
            &ipv4(1, 0, &[], &[11, 0, 0xf4, 0xff, 0, 0, 0, 0]),
        ]);
        let (k, r) = parsed(&p);
        assert_eq!((r, k.icmp_type, k.icmp_code, k.tp_src), (Ok(()), 11, 0, 0));
    }

    fn nd(icmp_type: u8, options: &[u8]) -> Vec<u8> {
        let mut h = vec![icmp_type, 0, 0, 0, 0x60, 0, 0, 0];
        h.extend_from_slice(&[
            0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x42,
        ]);
        h.extend_from_slice(options);
        cat(&[&eth(0x86dd), &ipv6(58, &h)])
    }

    #[test]
    fn icmpv6_neighbor_discovery() {
        let sll = [1, 1, 0x02, 0, 0, 0, 0, 0x0a];
        let tll = [2, 1, 0x02, 0, 0, 0, 0, 0x0b];
        let nonce = [14, 1, 1, 2, 3, 4, 5, 6];
        let (k, r) = parsed(&nd(135, &cat(&[&nonce, &sll])));
        assert_eq!((r, k.icmp_type, k.ip_proto), (Ok(()), 135, 58));
        assert_eq!(
            (k.nd_target[0], k.nd_target[15], k.nd_sll, k.nd_tll),
            (0x20, 0x42, SRC, [0; 6])
        );
        let (k, r) = parsed(&nd(136, &tll));
        assert_eq!((r, k.nd_tll, k.nd_sll), (Ok(()), DST, [0; 6]));

        let (k, r) = parsed(&nd(135, &cat(&[&sll, &sll])));
        assert_eq!(
            (r, k.nd_target, k.nd_sll),
            (Err(ParseError::BadNdOption), [0; 16], [0; 6])
        );
        assert_eq!(
            parsed(&nd(135, &[1, 0, 0, 0, 0, 0, 0, 0])).1,
            Err(ParseError::BadNdOption)
        );
        assert_eq!(
            parsed(&nd(135, &[1, 2, 0, 0, 0, 0, 0, 0])).1,
            Err(ParseError::TruncatedNd)
        );
        assert_eq!(parsed(&nd(135, &[1])).1, Err(ParseError::TruncatedNd));
        let p = nd(135, &[]);
        let mut short = p[..p.len() - 1].to_vec();
        short[18..20].copy_from_slice(&23u16.to_be_bytes());
        assert_eq!(parsed(&short).1, Err(ParseError::TruncatedNd));

        let echo = cat(&[&eth(0x86dd), &ipv6(58, &[128, 0, 0, 0, 0, 1, 0, 1])]);
        let (k, r) = parsed(&echo);
        assert_eq!((r, k.icmp_type, k.nd_target), (Ok(()), 128, [0; 16]));
    }

    fn offsets_within(layout: &Layout, len: usize) -> bool {
        [
            layout.vlan,
            layout.eth_type,
            layout.pbb,
            layout.mpls,
            layout.l3,
            layout.l4,
            layout.l3_end,
        ]
        .iter()
        .all(|&o| o == NO_OFFSET || usize::from(o) <= len)
    }

    fn sample_frames() -> Vec<Vec<u8>> {
        let mut vlan = eth(0x8100);
        vlan.extend_from_slice(&[0, 5, 0x86, 0xdd]);
        vlan.extend_from_slice(&ipv6(6, &tcp(1, 2, 5)));
        vec![
            udp4_frame(),
            vlan,
            cat(&[&eth(0x0800), &ipv4(6, 0, &[1, 1, 1, 0], &tcp(80, 1, 6))]),
            cat(&[
                &eth(0x86dd),
                &ipv6(
                    0,
                    &cat(&[
                        &ext(43, 0),
                        &ext(44, 0),
                        &frag_hdr(17, 0, true),
                        &udp(1, 2, &[]),
                    ]),
                ),
            ]),
            nd(135, &[1, 1, 2, 0, 0, 0, 0, 0x0a]),
            cat(&[&eth(0x8847), &[0, 1, 0x41, 64]]),
        ]
    }

    #[test]
    fn every_truncation_is_safe_and_reported() {
        for frame in sample_frames() {
            let (full, r) = parsed(&frame);
            assert_eq!(r, Ok(()));
            for n in 0..frame.len() {
                let (k, r) = parsed(&frame[..n]);
                assert!(offsets_within(&k.layout, n), "len {n}: {:?}", k.layout);
                if n < 14 {
                    assert_eq!(r, Err(ParseError::TruncatedEthernet));
                }
                if r.is_ok() {
                    assert_ne!(k, full, "a cut frame that parses cleanly must differ ({n})");
                }
            }
        }
    }

    #[test]
    fn stats_count_by_reason() {
        let mut s = ParseStats::default();
        s.record(Ok(()));
        s.record(Err(ParseError::TruncatedUdp));
        s.record(Err(ParseError::TruncatedUdp));
        let mut t = ParseStats::default();
        t.record(Err(ParseError::BadNdOption));
        s.merge(&t);
        assert_eq!((s.packets, s.malformed()), (4, 3));
        assert_eq!(s.count(ParseError::TruncatedUdp), 2);
        assert_eq!(
            ParseError::ALL[ParseError::BadNdOption as usize],
            ParseError::BadNdOption
        );
        assert_eq!(ParseError::TruncatedUdp.name(), "TruncatedUdp");
    }

    #[test]
    fn oversized_frame_is_refused() {
        let big = vec![0u8; 70_000];
        assert_eq!(parsed(&big).1, Err(ParseError::FrameTooLong));
    }

    /// Frames around the plain-IPv4 fast path: any version/IHL byte, fragment field, total
    /// length and protocol, with UDP/TCP-like headers of any length behind.
    fn plain_ipv4_like() -> impl Strategy<Value = Vec<u8>> {
        (
            prop::sample::select(vec![0x45u8, 0x46, 0x44, 0x55, 0x0f]),
            any::<u8>(),
            prop::sample::select(vec![0u16, 0x4000, 0x2000, 0x0001, 0x8000]),
            prop::sample::select(vec![6u8, 17, 1, 132, 58, 0]),
            prop::collection::vec(any::<u8>(), 0..60),
            prop::option::of(0u16..120),
            prop::sample::select(vec![
                0x0800u16, 0x0806, 0x8100, 0x86dd, 0x8847, 0x0600, 0x05ff,
            ]),
        )
            .prop_map(|(vihl, tos, frag_field, proto, payload, total, ty)| {
                let total = total.unwrap_or(20 + payload.len() as u16);
                let mut ip = [0u8; 20];
                ip[0] = vihl;
                ip[1] = tos;
                ip[2..4].copy_from_slice(&total.to_be_bytes());
                ip[6..8].copy_from_slice(&frag_field.to_be_bytes());
                ip[8] = 64;
                ip[9] = proto;
                ip[12..20].copy_from_slice(&[10, 0, 0, 1, 192, 168, 7, 9]);
                cat(&[&eth(ty), &ip, &payload])
            })
    }

    /// The staged parser alone (no fast path), as the fast path's reference.
    fn staged_parse(
        pkt: &[u8],
        in_port: u32,
        depth: ParseDepth,
        key: &mut FlowKey,
    ) -> ParseOutcome {
        reset(key, in_port);
        parse_staged(pkt, depth, key)
    }

    fn header_prefix() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            Just(Vec::new()),
            Just(eth(0x0800)),
            Just(eth(0x86dd)),
            Just(eth(0x8100)),
            Just(eth(0x8847)),
            Just(eth(0x0806)),
            Just(cat(&[
                &eth(0x0800),
                &[0x45, 0, 0x05, 0xdc, 0, 0, 0, 0, 64, 6]
            ])),
            Just(cat(&[&eth(0x86dd), &[0x60, 0, 0, 0, 0x05, 0xdc]])),
        ]
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(prefix in header_prefix(), tail in prop::collection::vec(any::<u8>(), 0..300)) {
            let frame = cat(&[&prefix, &tail]);
            let (k, _) = parsed(&frame);
            prop_assert!(offsets_within(&k.layout, frame.len()));
            let mut staged = FlowKey::default();
            let _ = parse_to(&frame, 7, ParseDepth::L2, &mut staged);
            let _ = parse_deeper(&frame, ParseDepth::L4, &mut staged);
            prop_assert_eq!(staged, k);
        }

        /// Frames built from random field values parse back to exactly those values.
        #[test]
        fn built_frames_round_trip(
            dst in any::<[u8; 6]>(), src in any::<[u8; 6]>(),
            tag in proptest::option::of((0u16..8, 0u16..4096)),
            v6 in any::<bool>(), tcp_proto in any::<bool>(),
            ip_src in any::<[u8; 16]>(), ip_dst in any::<[u8; 16]>(),
            tos in any::<u8>(), ttl in any::<u8>(), flabel in 0u32..(1 << 20),
            sport in any::<u16>(), dport in any::<u16>(),
        ) {
            let mut p = Vec::new();
            p.extend_from_slice(&dst);
            p.extend_from_slice(&src);
            if let Some((pcp, vid)) = tag {
                p.extend_from_slice(&[0x81, 0x00]);
                p.extend_from_slice(&((pcp << 13) | vid).to_be_bytes());
            }
            let (proto, l4) = if tcp_proto { (6, tcp(sport, dport, 5)) } else { (17, udp(sport, dport, &[7; 5])) };
            if v6 {
                p.extend_from_slice(&[0x86, 0xdd]);
                let vtc = 0x6000_0000u32 | (u32::from(tos) << 20) | flabel;
                p.extend_from_slice(&vtc.to_be_bytes());
                p.extend_from_slice(&(l4.len() as u16).to_be_bytes());
                p.extend_from_slice(&[proto, ttl]);
                p.extend_from_slice(&ip_src);
                p.extend_from_slice(&ip_dst);
            } else {
                p.extend_from_slice(&[0x08, 0x00, 0x45, tos]);
                p.extend_from_slice(&(20 + l4.len() as u16).to_be_bytes());
                p.extend_from_slice(&[0, 0, 0, 0, ttl, proto, 0, 0]);
                p.extend_from_slice(&ip_src[..8]);
            }
            p.extend_from_slice(&l4);
            let (k, r) = parsed(&p);
            prop_assert_eq!(r, Ok(()));
            prop_assert_eq!((k.eth_dst, k.eth_src), (dst, src));
            let want_vid = tag.map_or(0, |(_, vid)| vid | OFPVID_PRESENT);
            prop_assert_eq!((k.vlan_vid, k.vlan_pcp), (want_vid, tag.map_or(0, |(pcp, _)| pcp as u8)));
            prop_assert_eq!((k.ip_dscp, k.ip_ecn, k.ip_proto, k.ip_ttl), (tos >> 2, tos & 3, proto, ttl));
            prop_assert_eq!((k.tp_src, k.tp_dst), (sport, dport));
            if v6 {
                prop_assert_eq!((k.eth_type, k.ipv6_src, k.ipv6_dst, k.ipv6_flabel), (0x86dd, ip_src, ip_dst, flabel));
            } else {
                let a = u32::from_be_bytes([ip_src[0], ip_src[1], ip_src[2], ip_src[3]]);
                let b = u32::from_be_bytes([ip_src[4], ip_src[5], ip_src[6], ip_src[7]]);
                prop_assert_eq!((k.eth_type, k.ipv4_src, k.ipv4_dst), (0x0800, a, b));
            }
        }

        #[test]
        fn the_plain_path_fills_the_key_the_staged_parser_would(
            frame in plain_ipv4_like(),
            depth in prop::sample::select(vec![ParseDepth::L2, ParseDepth::L3, ParseDepth::L4]),
        ) {
            let mut fast = FlowKey::default();
            let fast_outcome = parse_to(&frame, 3, depth, &mut fast);
            let mut staged = FlowKey::default();
            let staged_outcome = staged_parse(&frame, 3, depth, &mut staged);
            prop_assert_eq!(fast_outcome, staged_outcome);
            prop_assert_eq!(fast, staged);
        }

        #[test]
        fn bytes_past_the_end_are_never_read(frame in prop::collection::vec(any::<u8>(), 0..200), n in 0usize..200, fill in any::<u8>()) {
            let n = n.min(frame.len());
            let mut other = frame.clone();
            other[n..].fill(fill);
            prop_assert_eq!(parsed(&frame[..n]), parsed(&other[..n]));
        }
    }
}
