//! Packet rewriting for actions: set-field with incremental checksums, push/pop of VLAN,
//! MPLS and PBB headers, TTL operations, and the OpenFlow action set.
//!
//! Every function takes the frame and the key whose `layout` describes it, checks every offset
//! against the frame, and leaves the packet untouched when the header it needs is absent.
//! Headers are read and written through the named fields of [`crate::wire`].

use crate::checksum::{self, udp_fixup, update16, update32, update_bytes};
pub(crate) use crate::frame::Frame;
use crate::ir::Action;
use crate::key::{frag, Field, FieldValue, FlowKey, ParseDepth, NO_OFFSET};
use crate::wire::ethernet::{self, ethertype, snap, tag, ETHERTYPE_LEN};
use crate::wire::icmp::{self, nd};
use crate::wire::ip::{ports, protocol};
use crate::wire::{ipv4, ipv6, mpls, pbb, sctp, tcp, udp, Field as Bytes};

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

/// What [`edit_headers`] did to a frame.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Edit {
    /// Done, or nothing to do (an output, a group, a queue: they edit no header).
    Applied,
    /// A push found no headroom left: the packet cannot be built.
    NoRoom,
    /// A TTL decrement ran out.
    TtlExpired(InvalidTtl),
}

/// Applies one action's header edit: the one dispatch from an action to the rewrites below,
/// shared by the pipeline (for actions without a compiled op) and by packet traces.
pub(crate) fn edit_headers(frame: &mut Frame<'_>, key: &mut FlowKey, action: Action) -> Edit {
    let done = match action {
        Action::Output { .. } | Action::Group(_) | Action::SetQueue(_) => true,
        Action::SetField(f, v) => {
            set_field(frame, key, f, v);
            true
        }
        Action::PushVlan(e) => push_vlan(frame, key, e),
        Action::PopVlan => {
            pop_vlan(frame, key);
            true
        }
        Action::PushMpls(e) => push_mpls(frame, key, e),
        Action::PopMpls(e) => {
            pop_mpls(frame, key, e);
            true
        }
        Action::PushPbb(e) => push_pbb(frame, key, e),
        Action::PopPbb => {
            pop_pbb(frame, key);
            true
        }
        Action::SetMplsTtl(t) => {
            set_mpls_ttl(frame, key, t);
            true
        }
        Action::SetNwTtl(t) => {
            set_nw_ttl(frame, key, t);
            true
        }
        Action::DecMplsTtl => {
            return dec_mpls_ttl(frame, key).map_or_else(Edit::TtlExpired, |()| Edit::Applied)
        }
        Action::DecNwTtl => {
            return dec_nw_ttl(frame, key).map_or_else(Edit::TtlExpired, |()| Edit::Applied)
        }
        Action::CopyTtlOut => {
            copy_ttl_out(frame, key);
            true
        }
        Action::CopyTtlIn => {
            copy_ttl_in(frame, key);
            true
        }
    };
    if done {
        Edit::Applied
    } else {
        Edit::NoRoom
    }
}

fn off(o: u16) -> Option<usize> {
    (o != NO_OFFSET).then_some(usize::from(o))
}

/// Rewrites a 16-bit checksum field at `at` with `f(old) -> new`.
fn fix_csum(frame: &mut Frame<'_>, at: usize, f: impl FnOnce(u16) -> u16) {
    if let Some(old) = frame.get16(at) {
        frame.put(at, &f(old).to_be_bytes());
    }
}

/// Offset of the L4 checksum covering the IP pseudo-header, if the packet has one, and
/// whether it is UDP's.
fn l4_csum_at(key: &FlowKey) -> Option<(usize, bool)> {
    let l4 = off(key.layout.l4)?;
    if key.layout.frag & frag::LATER != 0 {
        return None;
    }
    match key.ip_proto {
        protocol::TCP => Some((l4 + tcp::field::CHECKSUM.start, false)),
        protocol::UDP => Some((l4 + udp::field::CHECKSUM.start, true)),
        protocol::ICMPV6 if key.eth_type == ethertype::IPV6 => {
            Some((l4 + icmp::field::CHECKSUM.start, false))
        }
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

/// Writes the 16-bit `word` of the IPv4 header at `l3` and fixes the header checksum.
fn set_ipv4_word(frame: &mut Frame<'_>, l3: usize, word: Bytes, new: [u8; 2]) {
    if let Some(mut ip) = ipv4::Header::at_mut(frame.bytes_mut(), l3) {
        let old = ip.word(word.clone());
        ip.set_word(word, new);
        ip.set_checksum(update16(ip.checksum(), old, u16::from_be_bytes(new)));
    }
}

/// Rewrites the IPv4 address `field` ([`ipv4::field::SRC`] or [`ipv4::field::DST`]) of the
/// header at `l3`, with the header and transport checksums.
#[inline(always)]
fn set_ipv4_addr(frame: &mut Frame<'_>, key: &FlowKey, l3: usize, field: Bytes, new: u32) {
    let Some(mut ip) = ipv4::Header::at_mut(frame.bytes_mut(), l3) else {
        return;
    };
    let old = ip.addr(field.clone());
    ip.set_addr(field, new);
    ip.set_checksum(update32(ip.checksum(), old, new));
    fix_l4_checksum(frame, key, |c| update32(c, old, new));
}

/// Set-field on `ipv4_src` (`dst` false) or `ipv4_dst`, the NAT rewrite, without the generic
/// field dispatch. Nothing changes unless the packet is IPv4.
#[inline(always)]
pub(crate) fn set_ipv4(frame: &mut Frame<'_>, key: &mut FlowKey, dst: bool, addr: u32) {
    ensure_depth(frame, key, ParseDepth::L3);
    let Some(l3) = off(key.layout.l3).filter(|_| key.eth_type == ethertype::IPV4) else {
        return;
    };
    let field = if dst {
        ipv4::field::DST
    } else {
        ipv4::field::SRC
    };
    set_ipv4_addr(frame, key, l3, field, addr);
    if dst {
        key.ipv4_dst = addr;
    } else {
        key.ipv4_src = addr;
    }
}

/// Rewrites the transport port `port` ([`ports::field::SRC`] or [`ports::field::DST`]) with
/// the transport checksum.
fn set_l4_port(frame: &mut Frame<'_>, key: &FlowKey, port: Bytes, new: u16) {
    let Some(l4) = off(key.layout.l4) else { return };
    let at = l4 + port.start;
    if key.ip_proto == protocol::SCTP {
        set_sctp_port(frame, key, l4, at, new);
        return;
    }
    let Some(old) = frame.get16(at) else {
        return;
    };
    frame.put(at, &new.to_be_bytes());
    match key.ip_proto {
        protocol::TCP => fix_csum(frame, l4 + tcp::field::CHECKSUM.start, |c| {
            update16(c, old, new)
        }),
        protocol::UDP => fix_csum(frame, l4 + udp::field::CHECKSUM.start, |c| {
            udp_fixup(c, update16(c, old, new))
        }),
        _ => {}
    }
}

/// The SCTP packet (common header and chunks) inside the IP packet, without Ethernet padding.
fn sctp_packet<'f>(frame: &'f Frame<'_>, key: &FlowKey, l4: usize) -> Option<&'f [u8]> {
    let end = off(key.layout.l3_end).unwrap_or(frame.len());
    frame.bytes().get(l4..end)
}

/// Rewrites an SCTP port at `at` and its CRC32c. Like Open vSwitch, the checksum changes by
/// exactly the difference the new port makes, so a packet that arrived with a bad checksum
/// still has one (a switch must not bless corrupted data); a good one stays good.
fn set_sctp_port(frame: &mut Frame<'_>, key: &FlowKey, l4: usize, at: usize, new: u16) {
    let Some(before) = sctp_packet(frame, key, l4).and_then(checksum::sctp) else {
        return;
    };
    let crc_at = l4 + sctp::field::CHECKSUM.start;
    let Some(stored) = frame.get_at::<4>(crc_at).map(u32::from_le_bytes) else {
        return;
    };
    frame.put(at, &new.to_be_bytes());
    if let Some(after) = sctp_packet(frame, key, l4).and_then(checksum::sctp) {
        frame.put(crc_at, &(stored ^ before ^ after).to_le_bytes());
    }
}

/// Rewrites an ICMP header byte ([`icmp::field::TYPE`] or [`icmp::field::CODE`]) and its
/// checksum.
fn set_icmp_byte(frame: &mut Frame<'_>, key: &FlowKey, at: usize, new: u8) {
    let Some(l4) = off(key.layout.l4) else { return };
    let word_at = l4 + icmp::field::TYPE_CODE.start;
    let Some(old) = frame.get16(word_at) else {
        return;
    };
    let mut word = old.to_be_bytes();
    if let Some(b) = word.get_mut(at - icmp::field::TYPE_CODE.start) {
        *b = new;
    }
    frame.put(word_at, &word);
    fix_csum(frame, l4 + icmp::field::CHECKSUM.start, |c| {
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
        fix_csum(frame, l4 + icmp::field::CHECKSUM.start, |c| {
            update_bytes(c, old, new)
        });
    }
}

/// Options walked looking for a link-layer address (bounds per-packet work).
const MAX_ND_OPTIONS: usize = 16;

/// Offset of the address in the first ND link-layer address option of `kind`
/// ([`nd::option::SOURCE_LLADDR`] or [`nd::option::TARGET_LLADDR`]).
fn nd_option(frame: &Frame<'_>, key: &FlowKey, kind: u8) -> Option<usize> {
    use nd::option::{self, field};
    let l4 = off(key.layout.l4)?;
    let mut at = l4 + nd::field::OPTIONS;
    for _ in 0..MAX_ND_OPTIONS {
        let head = frame.get_at::<2>(at)?;
        let units = head[field::LEN];
        if units == 0 {
            return None;
        }
        if head[field::TYPE] == kind && units == 1 {
            return Some(at + field::LLADDR.start);
        }
        at += usize::from(units) * option::UNIT;
    }
    None
}

/// Applies a set-field to packet and key; fields whose header is absent (by the layout, or by
/// the OpenFlow prerequisites the packet fails) are left alone.
pub(crate) fn set_field(frame: &mut Frame<'_>, key: &mut FlowKey, field: Field, value: FieldValue) {
    // The common L2 rewrites first, without the generic field machinery.
    match field {
        Field::EthDst => {
            key.eth_dst = value.to_mac();
            frame.put(ethernet::field::DST.start, &key.eth_dst);
            return;
        }
        Field::EthSrc => {
            key.eth_src = value.to_mac();
            frame.put(ethernet::field::SRC.start, &key.eth_src);
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
    if !field.present_in(key) {
        return;
    }
    let l3 = off(key.layout.l3);
    let is_ipv4 = key.eth_type == ethertype::IPV4;
    let is_ipv6 = key.eth_type == ethertype::IPV6;
    let is_arp = key.eth_type == ethertype::ARP;
    let v = value.0;
    match field {
        Field::VlanVid | Field::VlanPcp => {
            let Some(vlan) = off(key.layout.vlan) else {
                return;
            };
            // `layout.vlan` is the outer tag's TPID; its TCI follows.
            let tci_at = vlan + ETHERTYPE_LEN + tag::field::TCI.start;
            let Some(tci) = frame.get16(tci_at) else {
                return;
            };
            let tci = if field == Field::VlanVid {
                (tci & !tag::VID_MASK) | (v as u16 & tag::VID_MASK)
            } else {
                (tci & !tag::PCP_MASK) | (((v as u16) << tag::PCP_SHIFT) & tag::PCP_MASK)
            };
            frame.put(tci_at, &tci.to_be_bytes());
            key.vlan_vid = (tci & tag::VID_MASK) | crate::key::OFPVID_PRESENT;
            key.vlan_pcp = (tci >> tag::PCP_SHIFT) as u8;
            return;
        }
        Field::IpDscp | Field::IpEcn => {
            let Some(l3) = l3 else { return };
            // The 16-bit word whose low byte is IPv4's DSCP and ECN, or holds IPv6's traffic
            // class in its middle bits.
            let Some(word) = frame.get16(l3 + ipv4::field::VER_TOS.start) else {
                return;
            };
            let mask = if field == Field::IpDscp {
                ipv4::DSCP_MASK
            } else {
                ipv4::ECN_MASK
            };
            let shift = if field == Field::IpDscp {
                ipv4::DSCP_SHIFT
            } else {
                0
            };
            let (mask, bits) = (u16::from(mask), ((v as u16) << shift) & u16::from(mask));
            if is_ipv4 {
                let new = (word & !mask) | bits;
                set_ipv4_word(frame, l3, ipv4::field::VER_TOS, new.to_be_bytes());
            } else if is_ipv6 {
                let shift = ipv6::TC_SHIFT;
                let new = (word & !(mask << shift)) | (bits << shift);
                frame.put(l3 + ipv6::field::VER_TC.start, &new.to_be_bytes());
            } else {
                return;
            }
        }
        Field::TcpSrc | Field::UdpSrc | Field::SctpSrc => {
            set_l4_port(frame, key, ports::field::SRC, v as u16)
        }
        Field::TcpDst | Field::UdpDst | Field::SctpDst => {
            set_l4_port(frame, key, ports::field::DST, v as u16)
        }
        Field::Icmpv4Type | Field::Icmpv6Type => {
            set_icmp_byte(frame, key, icmp::field::TYPE, v as u8)
        }
        Field::Icmpv4Code | Field::Icmpv6Code => {
            set_icmp_byte(frame, key, icmp::field::CODE, v as u8)
        }
        Field::ArpOp | Field::ArpSpa | Field::ArpTpa | Field::ArpSha | Field::ArpTha if is_arp => {
            use crate::wire::arp::field as arp;
            let Some(l3) = l3 else { return };
            match field {
                Field::ArpOp => frame.put(l3 + arp::OPER.start, &(v as u16).to_be_bytes()),
                Field::ArpSha => frame.put(l3 + arp::SHA.start, &value.to_mac()),
                Field::ArpSpa => frame.put(l3 + arp::SPA.start, &(v as u32).to_be_bytes()),
                Field::ArpTha => frame.put(l3 + arp::THA.start, &value.to_mac()),
                _ => frame.put(l3 + arp::TPA.start, &(v as u32).to_be_bytes()),
            };
        }
        Field::Ipv6Src | Field::Ipv6Dst if is_ipv6 => {
            let Some(l3) = l3 else { return };
            let addr = if field == Field::Ipv6Src {
                ipv6::field::SRC
            } else {
                ipv6::field::DST
            };
            let at = l3 + addr.start;
            let Some(old) = frame.get_at::<16>(at) else {
                return;
            };
            let new = value.to_ipv6();
            frame.put(at, &new);
            fix_l4_pseudo(frame, key, &old, &new);
        }
        Field::Ipv6Flabel if is_ipv6 => {
            let Some(l3) = l3 else { return };
            let at = l3 + ipv6::field::VER_TC_FLOW.start;
            let Some(old) = frame.get_at::<4>(at) else {
                return;
            };
            let mask = ipv6::FLOW_LABEL_MASK;
            let word = (u32::from_be_bytes(old) & !mask) | (v as u32 & mask);
            frame.put(at, &word.to_be_bytes());
        }
        Field::Ipv6NdTarget => {
            let Some(l4) = off(key.layout.l4) else { return };
            set_icmp6_bytes(frame, key, l4 + nd::field::TARGET.start, &value.to_ipv6());
        }
        Field::Ipv6NdSll | Field::Ipv6NdTll => {
            let kind = if field == Field::Ipv6NdSll {
                nd::option::SOURCE_LLADDR
            } else {
                nd::option::TARGET_LLADDR
            };
            let Some(at) = nd_option(frame, key, kind) else {
                return;
            };
            set_icmp6_bytes(frame, key, at, &value.to_mac());
        }
        Field::MplsLabel | Field::MplsTc | Field::MplsBos => {
            let Some(m) = off(key.layout.mpls) else {
                return;
            };
            let Some(lse) = frame.get_at::<{ mpls::LEN }>(m) else {
                return;
            };
            let lse = mpls::Lse::from_bytes(lse);
            let v = v as u32;
            let new = match field {
                Field::MplsLabel => lse.with_label(v),
                Field::MplsTc => lse.with_tc(v),
                _ => lse.with_bos(v),
            };
            frame.put(m, &new.0.to_be_bytes());
        }
        Field::PbbIsid => {
            let Some(p) = off(key.layout.pbb) else { return };
            let [_, isid @ ..] = (v as u32).to_be_bytes();
            frame.put(p + pbb::field::ISID.start, &isid);
        }
        Field::Metadata | Field::TunnelId => {}
        // IN_PORT, IN_PHY_PORT, IPV6_EXTHDR and the IP TTL (SET_NW_TTL sets it) are not
        // settable by set-field, the Ethernet addresses were set above, and address fields
        // of an absent protocol are ignored.
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
    // An 802.3 length field is followed by the LLC/SNAP header.
    let llc = at + ETHERTYPE_LEN;
    let snap_prefix = llc + snap::field::PREFIX.start..llc + snap::field::PREFIX.end;
    let at = match frame.get16(at) {
        Some(t) if t >= ethertype::MIN => at,
        Some(_) if frame.bytes().get(snap_prefix) == Some(&snap::PREFIX) => {
            llc + snap::field::ETHERTYPE.start
        }
        // A plain 802.2 frame has no EtherType.
        _ => return,
    };
    frame.put(at, &ethertype.to_be_bytes());
    reparse(frame, key);
}

/// Offset of the byte holding the IPv6 packet's final next-header value (the fixed header's
/// or the last extension header's), walked as the parser walks the chain.
fn ipv6_proto_at(frame: &Frame<'_>, key: &FlowKey, l3: usize) -> Option<usize> {
    let mut at = l3 + ipv6::field::NEXT_HEADER;
    let mut next = l3 + ipv6::HEADER_LEN;
    for _ in 0..crate::parse::MAX_IPV6_EXT_HEADERS {
        let &nh = frame.bytes().get(at)?;
        let walked = matches!(
            nh,
            protocol::HOP_BY_HOP
                | protocol::ROUTING
                | protocol::DEST_OPTS
                | protocol::AUTH
                | protocol::FRAGMENT
        );
        if !walked {
            break;
        }
        let eh = ipv6::ext::Ext::at(frame.bytes(), next)?;
        at = next + ipv6::ext::field::NEXT_HEADER;
        next += eh.len(nh);
        if nh == protocol::FRAGMENT && eh.is_later_fragment() {
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
        ethertype::IPV4 => {
            let Some([ttl, _]) = frame.get_at::<2>(l3 + ipv4::field::TTL_PROTOCOL.start) else {
                return;
            };
            set_ipv4_word(frame, l3, ipv4::field::TTL_PROTOCOL, [ttl, proto]);
        }
        ethertype::IPV6 => {
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

/// Where a pushed VLAN tag goes: in place of the Ethernet header's EtherType, which moves
/// behind it.
const VLAN_TAG_AT: usize = ethernet::field::ETHERTYPE.start;

pub(crate) fn push_vlan(frame: &mut Frame<'_>, key: &mut FlowKey, tpid: u16) -> bool {
    // The new tag copies VID and PCP from an existing outer tag (OpenFlow 1.3 sec. 5.12.1).
    let tci = off(key.layout.vlan)
        .and_then(|v| frame.get16(v + ETHERTYPE_LEN + tag::field::TCI.start))
        .unwrap_or(0);
    let tag_len = ETHERTYPE_LEN + tag::field::TCI.end;
    if !frame.insert_gap(VLAN_TAG_AT, tag_len) {
        return false;
    }
    frame.put(VLAN_TAG_AT, &tpid.to_be_bytes());
    frame.put(VLAN_TAG_AT + ETHERTYPE_LEN, &tci.to_be_bytes());
    reparse(frame, key);
    true
}

pub(crate) fn pop_vlan(frame: &mut Frame<'_>, key: &mut FlowKey) -> bool {
    let tag_len = ETHERTYPE_LEN + tag::field::TCI.end;
    if off(key.layout.vlan).is_none() || !frame.remove_gap(VLAN_TAG_AT, tag_len) {
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
    let lse = match off(key.layout.mpls).and_then(|m| frame.get_at::<{ mpls::LEN }>(m)) {
        Some(top) => mpls::Lse::from_bytes(top).with_bos(0),
        // A first label takes the IP TTL; without an IP header the TTL, like every field
        // with nothing to copy from, starts at zero (OpenFlow 1.3 section 5.12.1; Open
        // vSwitch uses 64 there).
        None => mpls::Lse(0).with_bos(1).with_ttl(key.ip_ttl),
    };
    // The label goes right after the EtherType, which becomes MPLS's.
    let label_at = et + ETHERTYPE_LEN;
    if !frame.insert_gap(label_at, mpls::LEN) {
        return false;
    }
    frame.put(et, &ethertype.to_be_bytes());
    frame.put(label_at, &lse.0.to_be_bytes());
    reparse(frame, key);
    true
}

pub(crate) fn pop_mpls(frame: &mut Frame<'_>, key: &mut FlowKey, ethertype: u16) -> bool {
    let (Some(et), Some(m)) = (off(key.layout.eth_type), off(key.layout.mpls)) else {
        return false;
    };
    frame.put(et, &ethertype.to_be_bytes());
    // The moved bytes end with the EtherType we just wrote.
    if !frame.remove_gap(m, mpls::LEN) {
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
    const MACS: usize = ethernet::field::SRC.end;
    let Some(macs) = frame.get_at::<MACS>(ethernet::field::DST.start) else {
        return false;
    };
    if !frame.insert_gap(0, pbb::PUSH_LEN) {
        return false;
    }
    frame.put(ethernet::field::DST.start, &macs);
    frame.put(ethernet::field::ETHERTYPE.start, &ethertype.to_be_bytes());
    // The I-TAG, its flags zero.
    let itag = ethernet::HEADER_LEN + pbb::field::FLAGS;
    frame.put(itag, &(isid & pbb::ISID_MASK).to_be_bytes());
    reparse(frame, key);
    true
}

pub(crate) fn pop_pbb(frame: &mut Frame<'_>, key: &mut FlowKey) -> bool {
    let Some(p) = off(key.layout.pbb) else {
        return false;
    };
    if !frame.remove_front(p + pbb::TAG_LEN) {
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
        ethertype::IPV4 => Some((l3 + ipv4::field::TTL, true)),
        ethertype::IPV6 => Some((l3 + ipv6::field::HOP_LIMIT, false)),
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
        // TTL and protocol form one 16-bit word of the header checksum.
        let l3 = at - ipv4::field::TTL;
        let Some(mut ip) = ipv4::Header::at_mut(frame.bytes_mut(), l3) else {
            return;
        };
        let old = ip.word(ipv4::field::TTL_PROTOCOL);
        let new = [ttl, ip.protocol()];
        ip.set_word(ipv4::field::TTL_PROTOCOL, new);
        ip.set_checksum(update16(ip.checksum(), old, u16::from_be_bytes(new)));
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
    frame.put(m + mpls::field::TTL, &[ttl]);
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
        let next_ttl = m + mpls::LEN + mpls::field::TTL;
        frame.bytes().get(next_ttl)?;
        return Some((next_ttl, false));
    }
    let l3 = off(key.layout.l3)?;
    match crate::wire::ip::version(*frame.bytes().get(l3)?) {
        ipv4::VERSION => Some((l3 + ipv4::field::TTL, true)),
        ipv6::VERSION => Some((l3 + ipv6::field::HOP_LIMIT, false)),
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
        let Some([_, proto]) = frame.get_at::<2>(at) else {
            return;
        };
        let l3 = at - ipv4::field::TTL;
        set_ipv4_word(frame, l3, ipv4::field::TTL_PROTOCOL, [ttl, proto]);
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
