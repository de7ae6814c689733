//! Packet rewriting for actions: set-field with incremental checksums, push/pop of VLAN,
//! MPLS and PBB headers, TTL operations, and the OpenFlow action set.
//!
//! Every function takes the frame and the key whose `layout` describes it, checks every offset
//! against the frame, and leaves the packet untouched when the header it needs is absent.

use crate::checksum::{self, udp_fixup, update16, update32, update_bytes};
pub(crate) use crate::frame::Frame;
use crate::ir::Action;
use crate::key::{frag, Field, FieldValue, FlowKey, ParseDepth, NO_OFFSET};

/// Parses the frame down to `depth` if the key has not been parsed that deep yet (the
/// pipeline parses only as deep as its matches need; actions go deeper on demand).
#[inline(always)]
pub(crate) fn ensure_depth(frame: &Frame<'_>, key: &mut FlowKey, depth: ParseDepth) {
    if key.layout.depth < depth {
        // A malformed deeper header leaves its fields and offsets unset: actions skip them.
        let _ = crate::parse::parse_deeper(frame.bytes(), depth, key);
    }
}

/// A TTL reached zero (or was already at most one when decremented).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct InvalidTtl;

fn off(o: u16) -> Option<usize> {
    (o != NO_OFFSET).then_some(usize::from(o))
}

/// Rewrites a 16-bit checksum field at `at` with `f(old) -> new`.
fn fix_csum(frame: &mut Frame<'_>, at: usize, f: impl FnOnce(u16) -> u16) {
    if let Some(old) = frame.get16(at) {
        frame.put(at, &f(old).to_be_bytes());
    }
}

/// Offset of the L4 checksum covering the IP pseudo-header, if the packet has one.
fn l4_csum_at(key: &FlowKey) -> Option<(usize, bool)> {
    let l4 = off(key.layout.l4)?;
    if key.layout.frag & frag::LATER != 0 {
        return None;
    }
    match key.ip_proto {
        6 => Some((l4 + 16, false)),
        17 => Some((l4 + 6, true)),
        58 if key.eth_type == 0x86dd => Some((l4 + 2, false)),
        _ => None,
    }
}

/// Updates the L4 checksum after pseudo-header bytes `old` -> `new` changed.
fn fix_l4_pseudo(frame: &mut Frame<'_>, key: &FlowKey, old: &[u8], new: &[u8]) {
    fix_l4_checksum(frame, key, |c| update_bytes(c, old, new));
}

/// Rewrites the L4 checksum covering the IP pseudo-header, if the packet has one, with
/// `update(old) -> new` (keeping UDP's "no checksum" zero).
#[inline(always)]
fn fix_l4_checksum(frame: &mut Frame<'_>, key: &FlowKey, update: impl FnOnce(u16) -> u16) {
    if let Some((at, udp)) = l4_csum_at(key) {
        fix_csum(frame, at, |c| {
            let u = update(c);
            if udp {
                udp_fixup(c, u)
            } else {
                u
            }
        });
    }
}

/// Writes an IPv4 header byte pair at `l3 + at` and fixes the header checksum.
fn set_ipv4_word(frame: &mut Frame<'_>, l3: usize, at: usize, new: [u8; 2]) {
    if let Some(old) = frame.get16(l3 + at) {
        frame.put(l3 + at, &new);
        fix_csum(frame, l3 + 10, |c| {
            update16(c, old, u16::from_be_bytes(new))
        });
    }
}

/// Rewrites the IPv4 address at `l3 + at` (12 source, 16 destination) with the header and
/// transport checksums.
#[inline(always)]
fn set_ipv4_addr(frame: &mut Frame<'_>, key: &FlowKey, l3: usize, at: usize, new: u32) {
    let Some(h) = frame
        .bytes_mut()
        .get_mut(l3..)
        .and_then(|h| h.first_chunk_mut::<20>())
    else {
        return;
    };
    let Some(addr) = h.get_mut(at..at + 4) else {
        return;
    };
    let old = u32::from_be_bytes([addr[0], addr[1], addr[2], addr[3]]);
    addr.copy_from_slice(&new.to_be_bytes());
    let c = update32(u16::from_be_bytes([h[10], h[11]]), old, new).to_be_bytes();
    (h[10], h[11]) = (c[0], c[1]);
    fix_l4_checksum(frame, key, |c| update32(c, old, new));
}

/// Set-field on `ipv4_src` (`dst` false) or `ipv4_dst`, the NAT rewrite, without the generic
/// field dispatch. Nothing changes unless the packet is IPv4.
#[inline(always)]
pub(crate) fn set_ipv4(frame: &mut Frame<'_>, key: &mut FlowKey, dst: bool, addr: u32) {
    ensure_depth(frame, key, ParseDepth::L3);
    let Some(l3) = off(key.layout.l3).filter(|_| key.eth_type == 0x0800) else {
        return;
    };
    set_ipv4_addr(frame, key, l3, if dst { 16 } else { 12 }, addr);
    if dst {
        key.ipv4_dst = addr;
    } else {
        key.ipv4_src = addr;
    }
}

fn set_l4_port(frame: &mut Frame<'_>, key: &FlowKey, at: usize, new: u16) {
    let Some(l4) = off(key.layout.l4) else { return };
    if key.ip_proto == 132 {
        set_sctp_port(frame, key, l4, at, new);
        return;
    }
    let Some(old) = frame.get16(l4 + at) else {
        return;
    };
    frame.put(l4 + at, &new.to_be_bytes());
    match key.ip_proto {
        6 => fix_csum(frame, l4 + 16, |c| update16(c, old, new)),
        17 => fix_csum(frame, l4 + 6, |c| udp_fixup(c, update16(c, old, new))),
        _ => {}
    }
}

/// The SCTP packet (common header and chunks) inside the IP packet, without Ethernet padding.
fn sctp_packet<'f>(frame: &'f Frame<'_>, key: &FlowKey, l4: usize) -> Option<&'f [u8]> {
    let end = off(key.layout.l3_end).unwrap_or(frame.len());
    frame.bytes().get(l4..end)
}

/// Rewrites an SCTP port and its CRC32c. Like Open vSwitch, the checksum changes by exactly
/// the difference the new port makes, so a packet that arrived with a bad checksum still has
/// one (a switch must not bless corrupted data); a good one stays good.
fn set_sctp_port(frame: &mut Frame<'_>, key: &FlowKey, l4: usize, at: usize, new: u16) {
    let Some(before) = sctp_packet(frame, key, l4).and_then(checksum::sctp) else {
        return;
    };
    let Some(stored) = frame.get_at::<4>(l4 + 8).map(u32::from_le_bytes) else {
        return;
    };
    frame.put(l4 + at, &new.to_be_bytes());
    if let Some(after) = sctp_packet(frame, key, l4).and_then(checksum::sctp) {
        frame.put(l4 + 8, &(stored ^ before ^ after).to_le_bytes());
    }
}

/// Rewrites an ICMP header byte (type at 0, code at 1) and its checksum.
fn set_icmp_byte(frame: &mut Frame<'_>, key: &FlowKey, at: usize, new: u8) {
    let Some(l4) = off(key.layout.l4) else { return };
    let Some(old) = frame.get16(l4) else { return };
    let mut word = old.to_be_bytes();
    if let Some(b) = word.get_mut(at) {
        *b = new;
    }
    frame.put(l4, &word);
    fix_csum(frame, l4 + 2, |c| {
        update16(c, old, u16::from_be_bytes(word))
    });
}

/// Rewrites bytes covered by the ICMPv6 checksum (ND target and options).
fn set_icmp6_bytes(frame: &mut Frame<'_>, key: &FlowKey, at: usize, new: &[u8]) {
    let Some(l4) = off(key.layout.l4) else { return };
    let mut old = [0u8; 16];
    let Some(cur) = frame.bytes().get(at..at + new.len()) else {
        return;
    };
    let Some(old) = old.get_mut(..new.len()) else {
        return;
    };
    old.copy_from_slice(cur);
    frame.put(at, new);
    // Keep 16-bit alignment relative to the ICMPv6 header for the incremental update.
    if (at - l4).is_multiple_of(2) && new.len().is_multiple_of(2) {
        fix_csum(frame, l4 + 2, |c| update_bytes(c, old, new));
    }
}

/// Offset of the first ND option of `kind` (1 = source, 2 = target link-layer address).
fn nd_option(frame: &Frame<'_>, key: &FlowKey, kind: u8) -> Option<usize> {
    let l4 = off(key.layout.l4)?;
    let mut at = l4 + 24;
    for _ in 0..16 {
        let [t, len] = frame.get_at::<2>(at)?;
        if len == 0 {
            return None;
        }
        if t == kind && len == 1 {
            return Some(at + 2);
        }
        at += usize::from(len) * 8;
    }
    None
}

/// Applies a set-field to packet and key; fields whose header is absent are left alone.
pub(crate) fn set_field(frame: &mut Frame<'_>, key: &mut FlowKey, field: Field, value: FieldValue) {
    // The common L2 rewrites first, without the generic field machinery.
    match field {
        Field::EthDst => {
            key.eth_dst = value.to_mac();
            frame.put(0, &key.eth_dst);
            return;
        }
        Field::EthSrc => {
            key.eth_src = value.to_mac();
            frame.put(6, &key.eth_src);
            return;
        }
        Field::EthType => {
            set_eth_type(frame, key, value.0 as u16);
            return;
        }
        Field::IpProto => {
            set_ip_proto(frame, key, value.0 as u8);
            return;
        }
        Field::Ipv4Src | Field::Ipv4Dst => {
            set_ipv4(frame, key, field == Field::Ipv4Dst, value.0 as u32);
            return;
        }
        _ => {}
    }
    let needed = match field {
        Field::IpDscp | Field::IpEcn | Field::Ipv4Src | Field::Ipv4Dst => ParseDepth::L3,
        f => f.depth(),
    };
    ensure_depth(frame, key, needed);
    let l3 = off(key.layout.l3);
    let ipv4 = key.eth_type == 0x0800;
    let ipv6 = key.eth_type == 0x86dd;
    let arp = key.eth_type == 0x0806;
    let v = value.0;
    match field {
        Field::EthDst => {
            frame.put(0, &value.to_mac());
        }
        Field::EthSrc => {
            frame.put(6, &value.to_mac());
        }
        Field::VlanVid | Field::VlanPcp => {
            let Some(vlan) = off(key.layout.vlan) else {
                return;
            };
            let Some(tci) = frame.get16(vlan + 2) else {
                return;
            };
            let tci = if field == Field::VlanVid {
                (tci & 0xf000) | (v as u16 & 0x0fff)
            } else {
                (tci & 0x1fff) | ((v as u16 & 7) << 13)
            };
            frame.put(vlan + 2, &tci.to_be_bytes());
            key.vlan_vid = (tci & 0x0fff) | crate::key::OFPVID_PRESENT;
            key.vlan_pcp = (tci >> 13) as u8;
            return;
        }
        Field::IpDscp | Field::IpEcn => {
            let Some(l3) = l3 else { return };
            let Some(word) = frame.get16(l3) else { return };
            let (shift, mask) = if field == Field::IpDscp {
                (2, 0xfc)
            } else {
                (0, 0x03)
            };
            let bits = ((v as u16) << shift) & mask;
            if ipv4 {
                let new = (word & !mask) | bits;
                set_ipv4_word(frame, l3, 0, new.to_be_bytes());
            } else if ipv6 {
                // Traffic class spans the low nibble of byte 0 and high nibble of byte 1.
                let new = (word & !(mask << 4)) | (bits << 4);
                frame.put(l3, &new.to_be_bytes());
            } else {
                return;
            }
        }
        Field::TcpSrc | Field::UdpSrc | Field::SctpSrc => set_l4_port(frame, key, 0, v as u16),
        Field::TcpDst | Field::UdpDst | Field::SctpDst => set_l4_port(frame, key, 2, v as u16),
        Field::Icmpv4Type | Field::Icmpv6Type => set_icmp_byte(frame, key, 0, v as u8),
        Field::Icmpv4Code | Field::Icmpv6Code => set_icmp_byte(frame, key, 1, v as u8),
        Field::ArpOp | Field::ArpSpa | Field::ArpTpa | Field::ArpSha | Field::ArpTha if arp => {
            let Some(l3) = l3 else { return };
            match field {
                Field::ArpOp => frame.put(l3 + 6, &(v as u16).to_be_bytes()),
                Field::ArpSha => frame.put(l3 + 8, &value.to_mac()),
                Field::ArpSpa => frame.put(l3 + 14, &(v as u32).to_be_bytes()),
                Field::ArpTha => frame.put(l3 + 18, &value.to_mac()),
                _ => frame.put(l3 + 24, &(v as u32).to_be_bytes()),
            };
        }
        Field::Ipv6Src | Field::Ipv6Dst if ipv6 => {
            let Some(l3) = l3 else { return };
            let at = l3 + if field == Field::Ipv6Src { 8 } else { 24 };
            let Some(old) = frame.get_at::<16>(at) else {
                return;
            };
            let new = value.to_ipv6();
            frame.put(at, &new);
            fix_l4_pseudo(frame, key, &old, &new);
        }
        Field::Ipv6Flabel if ipv6 => {
            let Some(l3) = l3 else { return };
            let Some(old) = frame.get_at::<4>(l3) else {
                return;
            };
            let word = (u32::from_be_bytes(old) & 0xfff0_0000) | (v as u32 & 0x000f_ffff);
            frame.put(l3, &word.to_be_bytes());
        }
        Field::Ipv6NdTarget => {
            let Some(l4) = off(key.layout.l4) else { return };
            set_icmp6_bytes(frame, key, l4 + 8, &value.to_ipv6());
        }
        Field::Ipv6NdSll | Field::Ipv6NdTll => {
            let kind = if field == Field::Ipv6NdSll { 1 } else { 2 };
            let Some(at) = nd_option(frame, key, kind) else {
                return;
            };
            set_icmp6_bytes(frame, key, at, &value.to_mac());
        }
        Field::MplsLabel | Field::MplsTc | Field::MplsBos => {
            let Some(m) = off(key.layout.mpls) else {
                return;
            };
            let Some(lse) = frame.get_at::<4>(m) else {
                return;
            };
            let lse = u32::from_be_bytes(lse);
            let v = v as u32;
            let new = match field {
                Field::MplsLabel => (lse & 0x0000_0fff) | ((v & 0xf_ffff) << 12),
                Field::MplsTc => (lse & !(7 << 9)) | ((v & 7) << 9),
                _ => (lse & !(1 << 8)) | ((v & 1) << 8),
            };
            frame.put(m, &new.to_be_bytes());
        }
        Field::PbbIsid => {
            let Some(p) = off(key.layout.pbb) else { return };
            frame.put(p + 1, &(v as u32).to_be_bytes()[1..]);
        }
        Field::Metadata | Field::TunnelId => {}
        // IN_PORT, IN_PHY_PORT, IPV6_EXTHDR and the IP TTL (SET_NW_TTL sets it) are not
        // settable by set-field, and address fields of an
        // absent protocol are ignored.
        _ => return,
    }
    field.set_in(key, &value);
}

/// Rewrites the EtherType the key reports (after VLAN tags, or in an 802.2 SNAP header) and
/// re-reads the headers: what follows it now means something else.
fn set_eth_type(frame: &mut Frame<'_>, key: &mut FlowKey, ethertype: u16) {
    let Some(at) = off(key.layout.eth_type) else {
        return;
    };
    let at = match frame.get16(at) {
        Some(t) if t >= 0x0600 => at,
        // 802.3 length: the EtherType is the SNAP one; plain 802.2 frames have none.
        Some(_) if frame.bytes().get(at + 2..at + 8) == Some(&[0xaa, 0xaa, 0x03, 0, 0, 0]) => {
            at + 8
        }
        _ => return,
    };
    frame.put(at, &ethertype.to_be_bytes());
    reparse(frame, key);
}

/// Offset of the byte holding the IPv6 packet's final next-header value (the fixed header's
/// or the last extension header's), walked as the parser walks the chain.
fn ipv6_proto_at(frame: &Frame<'_>, key: &FlowKey, l3: usize) -> Option<usize> {
    let mut at = l3 + 6;
    let mut next = l3 + 40;
    for _ in 0..16 {
        let &nh = frame.bytes().get(at)?;
        let len = match nh {
            0 | 43 | 60 => (usize::from(*frame.bytes().get(next + 1)?) + 1) * 8,
            51 => (usize::from(*frame.bytes().get(next + 1)?) + 2) * 4,
            44 => 8,
            _ => break,
        };
        at = next;
        next += len;
        if nh == 44 && frame.get16(at + 2)? & 0xfff8 != 0 {
            // A later fragment: the parser stops at the fragment header.
            break;
        }
    }
    (frame.bytes().get(at) == Some(&key.ip_proto)).then_some(at)
}

/// Rewrites the IP protocol (IPv4) or final next header (IPv6). The IPv4 header checksum is
/// updated, and so is the transport checksum of the header actually present, whose
/// pseudo-header carries the protocol (RFC 793, 768, 8200 section 8.1); then the headers are
/// re-read under the new protocol.
fn set_ip_proto(frame: &mut Frame<'_>, key: &mut FlowKey, proto: u8) {
    ensure_depth(frame, key, ParseDepth::L3);
    let Some(l3) = off(key.layout.l3) else { return };
    let old = key.ip_proto;
    match key.eth_type {
        0x0800 => {
            let Some([ttl, _]) = frame.get_at::<2>(l3 + 8) else {
                return;
            };
            set_ipv4_word(frame, l3, 8, [ttl, proto]);
        }
        0x86dd => {
            let Some(at) = ipv6_proto_at(frame, key, l3) else {
                return;
            };
            frame.put(at, &[proto]);
        }
        _ => return,
    }
    fix_l4_pseudo(frame, key, &[0, old], &[0, proto]);
    reparse(frame, key);
}

/// The parse depth and metadata to restore after a header push/pop re-parse.
fn keep_pipeline_fields(key: &FlowKey) -> (u32, u32, u64, u64) {
    (key.in_port, key.in_phy_port, key.metadata, key.tunnel_id)
}

/// Re-parses the frame after its header stack changed, keeping the pipeline fields.
pub(crate) fn reparse(frame: &Frame<'_>, key: &mut FlowKey) {
    let (in_port, in_phy, metadata, tunnel) = keep_pipeline_fields(key);
    let depth = key.layout.depth;
    // A re-parse of a frame we built ourselves; its outcome is reflected in the key.
    let _ = crate::parse::parse_to(frame.bytes(), in_port, depth, key);
    key.in_phy_port = in_phy;
    key.metadata = metadata;
    key.tunnel_id = tunnel;
}

pub(crate) fn push_vlan(frame: &mut Frame<'_>, key: &mut FlowKey, ethertype: u16) -> bool {
    // The new tag copies VID and PCP from an existing outer tag (OpenFlow 1.3 sec. 5.12.1).
    let tci = off(key.layout.vlan)
        .and_then(|v| frame.get16(v + 2))
        .unwrap_or(0);
    if !frame.insert_gap(12, 4) {
        return false;
    }
    let mut tag = [0u8; 4];
    tag[..2].copy_from_slice(&ethertype.to_be_bytes());
    tag[2..].copy_from_slice(&tci.to_be_bytes());
    frame.put(12, &tag);
    reparse(frame, key);
    true
}

pub(crate) fn pop_vlan(frame: &mut Frame<'_>, key: &mut FlowKey) -> bool {
    if off(key.layout.vlan).is_none() || !frame.remove_gap(12, 4) {
        return false;
    }
    frame.pad_to_minimum();
    reparse(frame, key);
    true
}

pub(crate) fn push_mpls(frame: &mut Frame<'_>, key: &mut FlowKey, ethertype: u16) -> bool {
    ensure_depth(frame, key, ParseDepth::L3);
    let Some(et) = off(key.layout.eth_type) else {
        return false;
    };
    let lse = match off(key.layout.mpls).and_then(|m| frame.get_at::<4>(m)) {
        Some(top) => u32::from_be_bytes(top) & !(1 << 8),
        // A first label takes the IP TTL; without an IP header the TTL, like every field
        // with nothing to copy from, starts at zero (OpenFlow 1.3 section 5.12.1; Open
        // vSwitch uses 64 there).
        None => (1 << 8) | u32::from(key.ip_ttl),
    };
    if !frame.insert_gap(et + 2, 4) {
        return false;
    }
    frame.put(et, &ethertype.to_be_bytes());
    frame.put(et + 2, &lse.to_be_bytes());
    reparse(frame, key);
    true
}

pub(crate) fn pop_mpls(frame: &mut Frame<'_>, key: &mut FlowKey, ethertype: u16) -> bool {
    let (Some(et), Some(m)) = (off(key.layout.eth_type), off(key.layout.mpls)) else {
        return false;
    };
    frame.put(et, &ethertype.to_be_bytes());
    // The moved bytes end with the EtherType we just wrote.
    if !frame.remove_gap(m, 4) {
        return false;
    }
    frame.pad_to_minimum();
    reparse(frame, key);
    true
}

pub(crate) fn push_pbb(frame: &mut Frame<'_>, key: &mut FlowKey, ethertype: u16) -> bool {
    let isid = if off(key.layout.pbb).is_some() {
        key.pbb_isid
    } else {
        0
    };
    let Some(macs) = frame
        .bytes()
        .get(..12)
        .and_then(|m| <[u8; 12]>::try_from(m).ok())
    else {
        return false;
    };
    if !frame.insert_gap(0, 18) {
        return false;
    }
    frame.put(0, &macs);
    frame.put(12, &ethertype.to_be_bytes());
    frame.put(14, &(isid & 0x00ff_ffff).to_be_bytes());
    reparse(frame, key);
    true
}

pub(crate) fn pop_pbb(frame: &mut Frame<'_>, key: &mut FlowKey) -> bool {
    let Some(p) = off(key.layout.pbb) else {
        return false;
    };
    if !frame.remove_front(p + 4) {
        return false;
    }
    frame.pad_to_minimum();
    reparse(frame, key);
    true
}

/// Offset of the IP TTL byte and whether it is IPv4.
fn ip_ttl_at(key: &FlowKey) -> Option<(usize, bool)> {
    let l3 = off(key.layout.l3)?;
    match key.eth_type {
        0x0800 => Some((l3 + 8, true)),
        0x86dd => Some((l3 + 7, false)),
        _ => None,
    }
}

fn write_ip_ttl(frame: &mut Frame<'_>, key: &mut FlowKey, ttl: u8) {
    if let Some(at) = ip_ttl_at(key) {
        write_ttl_at(frame, key, at, ttl);
    }
}

/// Writes the IP TTL at `at` (from [`ip_ttl_at`]), fixing the IPv4 header checksum.
#[inline(always)]
fn write_ttl_at(frame: &mut Frame<'_>, key: &mut FlowKey, (at, v4): (usize, bool), ttl: u8) {
    if v4 {
        // TTL and protocol form one 16-bit word of the header; the checksum follows it.
        let Some(h) = frame
            .bytes_mut()
            .get_mut(at..)
            .and_then(|h| h.first_chunk_mut::<4>())
        else {
            return;
        };
        let old = u16::from_be_bytes([h[0], h[1]]);
        let new = (u16::from(ttl) << 8) | u16::from(h[1]);
        let c = update16(u16::from_be_bytes([h[2], h[3]]), old, new).to_be_bytes();
        (h[0], h[2], h[3]) = (ttl, c[0], c[1]);
    } else {
        frame.put(at, &[ttl]);
    }
    key.ip_ttl = ttl;
}

pub(crate) fn set_nw_ttl(frame: &mut Frame<'_>, key: &mut FlowKey, ttl: u8) {
    ensure_depth(frame, key, ParseDepth::L3);
    write_ip_ttl(frame, key, ttl);
}

/// Decrements the IP TTL (inlined: it is the routing action).
#[inline(always)]
pub(crate) fn dec_nw_ttl(frame: &mut Frame<'_>, key: &mut FlowKey) -> Result<(), InvalidTtl> {
    ensure_depth(frame, key, ParseDepth::L3);
    let Some(at) = ip_ttl_at(key) else {
        return Ok(());
    };
    let ttl = key.ip_ttl;
    if ttl <= 1 {
        return Err(InvalidTtl);
    }
    write_ttl_at(frame, key, at, ttl - 1);
    Ok(())
}

fn write_mpls_ttl(frame: &mut Frame<'_>, key: &mut FlowKey, ttl: u8) {
    let Some(m) = off(key.layout.mpls) else {
        return;
    };
    frame.put(m + 3, &[ttl]);
    key.layout.mpls_ttl = ttl;
}

pub(crate) fn set_mpls_ttl(frame: &mut Frame<'_>, key: &mut FlowKey, ttl: u8) {
    write_mpls_ttl(frame, key, ttl);
}

pub(crate) fn dec_mpls_ttl(frame: &mut Frame<'_>, key: &mut FlowKey) -> Result<(), InvalidTtl> {
    if off(key.layout.mpls).is_none() {
        return Ok(());
    }
    let ttl = key.layout.mpls_ttl;
    if ttl <= 1 {
        return Err(InvalidTtl);
    }
    write_mpls_ttl(frame, key, ttl - 1);
    Ok(())
}

/// TTL of the header just inside the outermost MPLS label: the next label, or the IP header
/// under the bottom of stack.
fn inner_ttl_at(frame: &Frame<'_>, key: &FlowKey) -> Option<(usize, bool)> {
    let m = off(key.layout.mpls)?;
    if key.mpls_bos == 0 {
        frame.bytes().get(m + 7)?;
        return Some((m + 7, false));
    }
    let l3 = off(key.layout.l3)?;
    match frame.bytes().get(l3)? >> 4 {
        4 => Some((l3 + 8, true)),
        6 => Some((l3 + 7, false)),
        _ => None,
    }
}

pub(crate) fn copy_ttl_out(frame: &mut Frame<'_>, key: &mut FlowKey) {
    ensure_depth(frame, key, ParseDepth::L3);
    let Some((at, _)) = inner_ttl_at(frame, key) else {
        return;
    };
    let Some(&ttl) = frame.bytes().get(at) else {
        return;
    };
    write_mpls_ttl(frame, key, ttl);
}

pub(crate) fn copy_ttl_in(frame: &mut Frame<'_>, key: &mut FlowKey) {
    ensure_depth(frame, key, ParseDepth::L3);
    let Some((at, v4)) = inner_ttl_at(frame, key) else {
        return;
    };
    let ttl = key.layout.mpls_ttl;
    if v4 {
        let Some(word) = frame.get16(at) else { return };
        let l3 = at - 8;
        set_ipv4_word(
            frame,
            l3,
            8,
            ((u16::from(ttl) << 8) | (word & 0xff)).to_be_bytes(),
        );
    } else {
        frame.put(at, &[ttl]);
    }
}

/// The OpenFlow action set: at most one action of each kind (set-field: one per field),
/// executed in the order of spec section 5.10 whatever order they were written in.
#[derive(Clone, Debug)]
#[repr(C)]
pub(crate) struct ActionSet {
    /// Bit per [`Slot`] present. The two masks come first so clearing or testing an empty
    /// set touches one cache line.
    present: u16,
    /// Bit per field (OXM number) with a pending set-field.
    fields: u64,
    slots: [Option<Action>; SLOT_COUNT],
    values: [FieldValue; 40],
}

/// Action-set positions, in execution order.
#[derive(Clone, Copy)]
enum Slot {
    CopyTtlIn,
    PopVlan,
    PopMpls,
    PopPbb,
    PushMpls,
    PushPbb,
    PushVlan,
    CopyTtlOut,
    DecMplsTtl,
    DecNwTtl,
    SetMplsTtl,
    SetNwTtl,
    SetQueue,
    Group,
    Output,
}

const SLOT_COUNT: usize = 15;

/// Position of set-field among the slots: after the TTL sets (both are "set").
const SET_FIELD_AFTER: usize = Slot::SetNwTtl as usize;

fn slot_of(a: &Action) -> Option<Slot> {
    Some(match a {
        Action::CopyTtlIn => Slot::CopyTtlIn,
        Action::PopVlan => Slot::PopVlan,
        Action::PopMpls(_) => Slot::PopMpls,
        Action::PopPbb => Slot::PopPbb,
        Action::PushMpls(_) => Slot::PushMpls,
        Action::PushPbb(_) => Slot::PushPbb,
        Action::PushVlan(_) => Slot::PushVlan,
        Action::CopyTtlOut => Slot::CopyTtlOut,
        Action::DecMplsTtl => Slot::DecMplsTtl,
        Action::DecNwTtl => Slot::DecNwTtl,
        Action::SetMplsTtl(_) => Slot::SetMplsTtl,
        Action::SetNwTtl(_) => Slot::SetNwTtl,
        Action::SetQueue(_) => Slot::SetQueue,
        Action::Group(_) => Slot::Group,
        Action::Output { .. } => Slot::Output,
        Action::SetField(..) => return None,
    })
}

impl Default for ActionSet {
    fn default() -> Self {
        ActionSet {
            present: 0,
            slots: [None; SLOT_COUNT],
            fields: 0,
            values: [FieldValue::default(); 40],
        }
    }
}

impl ActionSet {
    #[inline(always)]
    pub fn clear(&mut self) {
        self.present = 0;
        self.fields = 0;
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.present == 0 && self.fields == 0
    }

    /// Merges actions in (Write-Actions): each replaces the set's action of its kind.
    pub fn write(&mut self, actions: &[Action]) {
        for a in actions {
            self.write_one(*a);
        }
    }

    /// Merges one action in.
    pub fn write_one(&mut self, a: Action) {
        match (a, slot_of(&a)) {
            (Action::SetField(f, v), _) => {
                let bit = f.oxm();
                self.fields |= 1u64 << bit;
                if let Some(slot) = self.values.get_mut(usize::from(bit)) {
                    *slot = v;
                }
            }
            (_, Some(s)) => {
                self.present |= 1 << (s as u16);
                if let Some(slot) = self.slots.get_mut(s as usize) {
                    *slot = Some(a);
                }
            }
            (_, None) => {}
        }
    }

    /// Calls `f` on each action in execution order; stops when `f` returns false.
    pub fn for_each(&self, mut f: impl FnMut(Action) -> bool) {
        for i in 0..SLOT_COUNT {
            if self.present & (1 << i) != 0 {
                if let Some(Some(a)) = self.slots.get(i) {
                    // A group takes over forwarding: the set's output is then ignored.
                    if i == Slot::Output as usize && self.present & (1 << Slot::Group as u16) != 0 {
                        continue;
                    }
                    if !f(*a) {
                        return;
                    }
                }
            }
            if i == SET_FIELD_AFTER {
                let mut fields = self.fields;
                while fields != 0 {
                    let bit = fields.trailing_zeros();
                    fields &= fields - 1;
                    let (Some(field), Some(v)) =
                        (Field::from_oxm(bit as u8), self.values.get(bit as usize))
                    else {
                        continue;
                    };
                    if !f(Action::SetField(field, *v)) {
                        return;
                    }
                }
            }
        }
    }
}
