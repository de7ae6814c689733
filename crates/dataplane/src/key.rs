//! Flow key: every OpenFlow 1.3 OXM basic field as a typed field, laid out so a key can be
//! masked and hashed as a fixed array of `u64` words.
//!
//! The first [`KEY_WORDS`] words of a [`FlowKey`] hold only matchable fields (no padding, no
//! bookkeeping), so `key.words()[i] & mask.words()[i]` is a valid masked comparison. Packet
//! bookkeeping the pipeline needs (header offsets, the MPLS TTL, fragment flags) lives in
//! [`FlowKey::layout`], after the matchable words, and is never part of a match.
//!
//! Besides the 40 OXM basic fields the key holds the IP TTL, which OpenFlow 1.3 cannot match
//! but Open vSwitch's NXM_NX_IP_TTL can ([`Field::IpTtl`]): routers match TTL 1 to answer
//! ICMP Time Exceeded (seed 001 Fig. 6).

use core::mem::{offset_of, size_of};

/// Number of matchable 64-bit words at the start of a [`FlowKey`].
pub const KEY_WORDS: usize = 20;

/// A key's or a mask's matchable words, as classifiers hash and compare them.
pub type Words = [u64; KEY_WORDS];

/// OXM `VLAN_VID` bit meaning "a VLAN tag is present".
pub const OFPVID_PRESENT: u16 = 0x1000;

/// OXM `IPV6_EXTHDR` flags (OpenFlow 1.3 `ofp_ipv6exthdr_flags`).
pub mod exthdr {
    /// A "No next header" value was seen.
    pub const NONEXT: u16 = 1 << 0;
    /// Encrypted Security Payload header present.
    pub const ESP: u16 = 1 << 1;
    /// Authentication header present.
    pub const AUTH: u16 = 1 << 2;
    /// One or two destination-options headers present.
    pub const DEST: u16 = 1 << 3;
    /// Fragment header present.
    pub const FRAG: u16 = 1 << 4;
    /// Routing header present.
    pub const ROUTER: u16 = 1 << 5;
    /// Hop-by-hop header present.
    pub const HOP: u16 = 1 << 6;
    /// Unexpected repeats encountered.
    pub const UNREP: u16 = 1 << 7;
    /// Unexpected sequencing encountered.
    pub const UNSEQ: u16 = 1 << 8;
}

/// How deep a packet is (or must be) parsed. Ordered: `L2 < L3 < L4`.
#[repr(u8)]
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum ParseDepth {
    /// Ethernet, VLAN tags, PBB I-TAG and the top MPLS label.
    #[default]
    L2 = 0,
    /// Also ARP, IPv4 and IPv6 (including the IPv6 extension-header chain).
    L3 = 1,
    /// Also TCP, UDP, SCTP, ICMPv4 and ICMPv6 (with ND).
    L4 = 2,
}

/// Marker for an absent header offset in [`Layout`].
pub const NO_OFFSET: u16 = u16::MAX;

/// Flag bits of [`Layout::frag`].
pub mod frag {
    /// The IP packet is a fragment (first or later).
    pub const IS_FRAGMENT: u8 = 1 << 0;
    /// The IP packet is a non-first fragment (no L4 header in it).
    pub const LATER: u8 = 1 << 1;
}

/// Non-matchable packet bookkeeping filled by the parser, for actions and the pipeline.
///
/// Offsets are from the start of the frame; [`NO_OFFSET`] when the header is absent or was
/// not reached at the parse depth used.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Layout {
    /// Offset of the outermost VLAN tag (802.1Q or 802.1ad), i.e. 12 when tagged.
    pub vlan: u16,
    /// Offset of the EtherType that follows the VLAN tags (where MPLS/PBB push inserts).
    pub eth_type: u16,
    /// Offset of the PBB I-TAG.
    pub pbb: u16,
    /// Offset of the top MPLS label stack entry.
    pub mpls: u16,
    /// Offset of the network header (ARP, IPv4, IPv6).
    pub l3: u16,
    /// Offset of the transport header (TCP, UDP, SCTP, ICMP).
    pub l4: u16,
    /// End of the IP packet per its length field (Ethernet padding excluded).
    pub l3_end: u16,
    /// TTL of the top MPLS label (0 when none).
    pub mpls_ttl: u8,
    /// Number of VLAN tags seen.
    pub vlan_tags: u8,
    /// [`frag`] flag bits.
    pub frag: u8,
    /// The deepest parse stage that has run on this key (it may have stopped early on a
    /// short or malformed packet); lets the pipeline resume parsing only when needed.
    pub depth: ParseDepth,
}

impl Default for Layout {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl Layout {
    /// Nothing parsed yet: every offset absent.
    pub const EMPTY: Layout = Layout {
        vlan: NO_OFFSET,
        eth_type: NO_OFFSET,
        pbb: NO_OFFSET,
        mpls: NO_OFFSET,
        l3: NO_OFFSET,
        l4: NO_OFFSET,
        l3_end: NO_OFFSET,
        mpls_ttl: 0,
        vlan_tags: 0,
        frag: 0,
        depth: ParseDepth::L2,
    };
}

/// Types of key fields, with their zero usable in const context.
trait ConstZero {
    const ZERO: Self;
}

macro_rules! const_zero {
    ($($t:ty = $z:expr),*) => {$( impl ConstZero for $t { const ZERO: Self = $z; } )*};
}
const_zero!(
    u8 = 0,
    u16 = 0,
    u32 = 0,
    u64 = 0,
    [u8; 6] = [0; 6],
    [u8; 16] = [0; 16]
);

/// Declares [`FlowKey`] with its matchable fields in order and checks at compile time that
/// they are contiguous (no padding), so [`FlowKey::words`] only ever reads initialised bytes.
macro_rules! flow_key {
    ($( $(#[$doc:meta])* $name:ident : $ty:ty, )*) => {
        /// Parsed packet headers plus pipeline metadata, one typed field per OXM basic field.
        ///
        /// Integer fields are in host order and hold exactly the value OXM carries for them
        /// (e.g. `vlan_vid` includes [`OFPVID_PRESENT`]). Absent headers leave their fields 0.
        /// TCP, UDP and SCTP share `tp_src`/`tp_dst`; ICMPv4 and ICMPv6 share `icmp_type`/
        /// `icmp_code` (the ip_proto prerequisite tells them apart).
        #[repr(C, align(8))]
        #[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
        pub struct FlowKey {
            $( $(#[$doc])* pub $name: $ty, )*
            /// Pad so the matchable part is a whole number of words; always zero.
            pub pad: [u8; 3],
            /// Non-matchable bookkeeping.
            pub layout: Layout,
        }

        impl FlowKey {
            /// The all-zero key with an empty layout (same as `default()`, usable in const
            /// context so resetting a key compiles to plain stores).
            pub const EMPTY: FlowKey = FlowKey {
                $( $name: <$ty as ConstZero>::ZERO, )*
                pad: [0; 3],
                layout: Layout::EMPTY,
            };
        }

        const _: () = {
            let mut end = 0usize;
            $(
                assert!(offset_of!(FlowKey, $name) == end, "padding inside the matchable words");
                end += size_of::<$ty>();
            )*
            assert!(offset_of!(FlowKey, pad) == end);
            assert!(end + 3 == KEY_WORDS * 8);
            assert!(offset_of!(FlowKey, layout) == KEY_WORDS * 8);
            assert!(size_of::<FlowKey>() % 8 == 0);
        };
    };
}

// The order puts fields matched together into the same words: the IPv4 addresses in one
// word, and in the next the ports, the IP protocol and the EtherType, which every IP match
// names as its prerequisite. So an IPv4 5-tuple match hashes two words, and an ACL entry on
// a destination address, protocol and port two rather than three.
flow_key! {
    /// Ingress port.
    in_port: u32,
    /// Physical ingress port.
    in_phy_port: u32,
    /// Pipeline metadata register.
    metadata: u64,
    /// Logical-port tunnel id.
    tunnel_id: u64,
    /// Ethernet destination.
    eth_dst: [u8; 6],
    /// Ethernet source.
    eth_src: [u8; 6],
    /// IP ECN (2 bits).
    ip_ecn: u8,
    /// ICMPv4 or ICMPv6 type.
    icmp_type: u8,
    /// Outer VLAN id with [`OFPVID_PRESENT`], 0 if untagged.
    vlan_vid: u16,
    /// IPv4 source.
    ipv4_src: u32,
    /// IPv4 destination.
    ipv4_dst: u32,
    /// TCP/UDP/SCTP source port.
    tp_src: u16,
    /// TCP/UDP/SCTP destination port.
    tp_dst: u16,
    /// EtherType after VLAN tags (and of the PBB-encapsulated frame's outer header).
    eth_type: u16,
    /// IP protocol / IPv6 final next header.
    ip_proto: u8,
    /// IP DSCP (6 bits).
    ip_dscp: u8,
    /// ICMPv4 or ICMPv6 code.
    icmp_code: u8,
    /// Top MPLS traffic class (3 bits).
    mpls_tc: u8,
    /// Top MPLS bottom-of-stack bit.
    mpls_bos: u8,
    /// Outer VLAN priority (3 bits).
    vlan_pcp: u8,
    /// ARP opcode.
    arp_op: u16,
    /// IPv6 extension-header flags ([`exthdr`]).
    ipv6_exthdr: u16,
    /// IPv6 source.
    ipv6_src: [u8; 16],
    /// IPv6 destination.
    ipv6_dst: [u8; 16],
    /// ND target address.
    nd_target: [u8; 16],
    /// IPv6 flow label (20 bits).
    ipv6_flabel: u32,
    /// ARP sender protocol address.
    arp_spa: u32,
    /// ARP target protocol address.
    arp_tpa: u32,
    /// Top MPLS label (20 bits).
    mpls_label: u32,
    /// PBB I-SID (24 bits).
    pbb_isid: u32,
    /// ARP sender hardware address.
    arp_sha: [u8; 6],
    /// ARP target hardware address.
    arp_tha: [u8; 6],
    /// ND source link-layer address.
    nd_sll: [u8; 6],
    /// ND target link-layer address.
    nd_tll: [u8; 6],
    /// IPv4 TTL or IPv6 hop limit (0 when no IP header): Open vSwitch's NXM_NX_IP_TTL, in
    /// what was the last word's padding.
    ip_ttl: u8,
}

/// Hashes the matchable words in one piece (field by field costs a hasher call per field;
/// the switch core hashes matches per flow-mod). Consistent with `Eq`: the words cover every
/// field and the padding, `layout` is hashed beside them.
impl core::hash::Hash for FlowKey {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        for w in self.words() {
            state.write_u64(*w);
        }
        self.layout.hash(state);
    }
}

impl FlowKey {
    /// The matchable part as words, for masked comparison and hashing.
    #[inline(always)]
    pub fn words(&self) -> &[u64; KEY_WORDS] {
        // SAFETY: FlowKey is repr(C, align(8)); the compile-time check above proves its first
        // KEY_WORDS * 8 bytes are plain integer fields with no padding, so they are
        // initialised, suitably aligned, and valid for any u64 bit pattern.
        unsafe { &*(self as *const FlowKey).cast::<[u64; KEY_WORDS]>() }
    }

    /// Mutable view of the matchable words.
    #[inline(always)]
    pub fn words_mut(&mut self) -> &mut [u64; KEY_WORDS] {
        // SAFETY: as in `words`; every bit pattern is valid for the integer fields written.
        unsafe { &mut *(self as *mut FlowKey).cast::<[u64; KEY_WORDS]>() }
    }

    /// A key with every matchable bit set (the mask of an exact match on everything).
    pub fn all_ones() -> Self {
        let mut k = Self::default();
        *k.words_mut() = [u64::MAX; KEY_WORDS];
        k.pad = [0; 3];
        k
    }

    /// Clears everything the parser fills (headers and layout) but keeps the pipeline
    /// metadata (`in_port`, `in_phy_port`, `metadata`, `tunnel_id`).
    #[inline]
    pub fn clear_headers(&mut self) {
        let keep = (
            self.in_port,
            self.in_phy_port,
            self.metadata,
            self.tunnel_id,
        );
        *self = Self::default();
        (
            self.in_port,
            self.in_phy_port,
            self.metadata,
            self.tunnel_id,
        ) = keep;
    }
}

/// A field value as an unsigned number of up to 128 bits: integers as themselves, MAC
/// addresses as 48-bit big-endian numbers, IPv6 addresses as 128-bit big-endian numbers.
///
/// Conversions to a field take the low bits the field is wide; nothing can fail.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, Debug)]
pub struct FieldValue(pub u128);

impl FieldValue {
    /// A MAC address value.
    pub fn mac(mac: [u8; 6]) -> Self {
        let mut b = [0u8; 16];
        b[10..].copy_from_slice(&mac);
        Self(u128::from_be_bytes(b))
    }

    /// An IPv6 address value.
    pub fn ipv6(addr: [u8; 16]) -> Self {
        Self(u128::from_be_bytes(addr))
    }

    /// The low 48 bits as a MAC address.
    pub fn to_mac(self) -> [u8; 6] {
        let b = self.0.to_be_bytes();
        [b[10], b[11], b[12], b[13], b[14], b[15]]
    }

    /// The value as an IPv6 address.
    pub fn to_ipv6(self) -> [u8; 16] {
        self.0.to_be_bytes()
    }

    /// Decodes a big-endian value of at most 16 bytes; `None` when longer.
    pub fn from_be_bytes(bytes: &[u8]) -> Option<Self> {
        if bytes.len() > 16 {
            return None;
        }
        let mut b = [0u8; 16];
        b[16 - bytes.len()..].copy_from_slice(bytes);
        Some(Self(u128::from_be_bytes(b)))
    }

    /// Writes the low `out.len()` bytes (at most 16) big-endian into `out`.
    pub fn write_be_bytes(self, out: &mut [u8]) {
        let b = self.0.to_be_bytes();
        let n = out.len().min(16);
        let dst_start = out.len() - n;
        out[dst_start..].copy_from_slice(&b[16 - n..]);
    }
}

impl From<u64> for FieldValue {
    fn from(v: u64) -> Self {
        Self(u128::from(v))
    }
}

impl From<u32> for FieldValue {
    fn from(v: u32) -> Self {
        Self(u128::from(v))
    }
}

impl From<u16> for FieldValue {
    fn from(v: u16) -> Self {
        Self(u128::from(v))
    }
}

impl From<u8> for FieldValue {
    fn from(v: u8) -> Self {
        Self(u128::from(v))
    }
}

/// Conversion between a key field's storage type and [`FieldValue`].
trait FieldRepr: Copy {
    fn from_value(v: FieldValue) -> Self;
    fn to_value(self) -> FieldValue;
}

macro_rules! int_repr {
    ($($t:ty),*) => {$(
        impl FieldRepr for $t {
            #[inline]
            fn from_value(v: FieldValue) -> Self {
                // Truncation to the storage width is the documented conversion.
                v.0 as $t
            }
            #[inline]
            fn to_value(self) -> FieldValue {
                FieldValue(u128::from(self))
            }
        }
    )*};
}
int_repr!(u8, u16, u32, u64);

impl FieldRepr for [u8; 6] {
    fn from_value(v: FieldValue) -> Self {
        v.to_mac()
    }
    fn to_value(self) -> FieldValue {
        FieldValue::mac(self)
    }
}

impl FieldRepr for [u8; 16] {
    fn from_value(v: FieldValue) -> Self {
        v.to_ipv6()
    }
    fn to_value(self) -> FieldValue {
        FieldValue::ipv6(self)
    }
}

/// Declares [`Field`] and its per-field table: OXM number, key storage, width in bits, OXM
/// payload length in bytes, whether OXM allows a mask, and the parse depth it needs.
macro_rules! fields {
    ($( $variant:ident = $num:literal, $name:literal, $slot:ident, $bits:literal, $len:literal,
        $maskable:literal, $depth:ident; )*) => {
        /// One matchable field: an OpenFlow 1.3 OXM basic field (`OFPXMC_OPENFLOW_BASIC`),
        /// whose discriminant is its OXM field number, or [`Field::IpTtl`] (40, after them).
        #[repr(u8)]
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
        pub enum Field {
            $(
                #[doc = concat!("OXM `OFPXMT_OFB_", $name, "`.")]
                $variant = $num,
            )*
        }

        impl Field {
            /// Every field, in number order.
            pub const ALL: [Field; 41] = [$(Field::$variant),*];

            /// The field numbered `n`: an OXM basic field's number, or 40 for [`Field::IpTtl`].
            pub fn from_oxm(n: u8) -> Option<Field> {
                match n {
                    $($num => Some(Field::$variant),)*
                    _ => None,
                }
            }

            /// The field's number (its OXM number for a basic field).
            pub fn oxm(self) -> u8 {
                self as u8
            }

            /// The OpenFlow name without the `OFPXMT_OFB_` prefix (`NXM_NX_IP_TTL` for the TTL).
            pub fn name(self) -> &'static str {
                match self { $(Field::$variant => $name,)* }
            }

            /// Significant bits of the value (e.g. 13 for VLAN_VID, 20 for MPLS_LABEL).
            pub fn bits(self) -> u32 {
                match self { $(Field::$variant => $bits,)* }
            }

            /// OXM payload length in bytes (without a mask).
            pub fn oxm_len(self) -> usize {
                match self { $(Field::$variant => $len,)* }
            }

            /// Whether the switch accepts a mask on this field (OpenFlow 1.3's maskable
            /// fields, and the transport ports as Open vSwitch allows them).
            pub fn is_maskable(self) -> bool {
                match self { $(Field::$variant => $maskable,)* }
            }

            /// The parse depth at which the parser fills this field.
            pub fn depth(self) -> ParseDepth {
                match self { $(Field::$variant => ParseDepth::$depth,)* }
            }

            /// All-ones value of the field's width.
            pub fn full_mask(self) -> FieldValue {
                FieldValue(u128::MAX >> (128 - self.bits()))
            }

            /// Reads the field from a key.
            pub fn get(self, key: &FlowKey) -> FieldValue {
                match self { $(Field::$variant => FieldRepr::to_value(key.$slot),)* }
            }

            /// Writes `value` (cut to the field's width) into the key.
            pub fn set_in(self, key: &mut FlowKey, value: &FieldValue) {
                let v = FieldValue(value.0 & self.full_mask().0);
                match self { $(Field::$variant => key.$slot = FieldRepr::from_value(v),)* }
            }
        }
    };
}

fields! {
    InPort = 0, "IN_PORT", in_port, 32, 4, false, L2;
    InPhyPort = 1, "IN_PHY_PORT", in_phy_port, 32, 4, false, L2;
    Metadata = 2, "METADATA", metadata, 64, 8, true, L2;
    EthDst = 3, "ETH_DST", eth_dst, 48, 6, true, L2;
    EthSrc = 4, "ETH_SRC", eth_src, 48, 6, true, L2;
    EthType = 5, "ETH_TYPE", eth_type, 16, 2, false, L2;
    VlanVid = 6, "VLAN_VID", vlan_vid, 13, 2, true, L2;
    VlanPcp = 7, "VLAN_PCP", vlan_pcp, 3, 1, false, L2;
    IpDscp = 8, "IP_DSCP", ip_dscp, 6, 1, false, L3;
    IpEcn = 9, "IP_ECN", ip_ecn, 2, 1, false, L3;
    IpProto = 10, "IP_PROTO", ip_proto, 8, 1, false, L3;
    Ipv4Src = 11, "IPV4_SRC", ipv4_src, 32, 4, true, L3;
    Ipv4Dst = 12, "IPV4_DST", ipv4_dst, 32, 4, true, L3;
    TcpSrc = 13, "TCP_SRC", tp_src, 16, 2, true, L4;
    TcpDst = 14, "TCP_DST", tp_dst, 16, 2, true, L4;
    UdpSrc = 15, "UDP_SRC", tp_src, 16, 2, true, L4;
    UdpDst = 16, "UDP_DST", tp_dst, 16, 2, true, L4;
    SctpSrc = 17, "SCTP_SRC", tp_src, 16, 2, true, L4;
    SctpDst = 18, "SCTP_DST", tp_dst, 16, 2, true, L4;
    Icmpv4Type = 19, "ICMPV4_TYPE", icmp_type, 8, 1, false, L4;
    Icmpv4Code = 20, "ICMPV4_CODE", icmp_code, 8, 1, false, L4;
    ArpOp = 21, "ARP_OP", arp_op, 16, 2, false, L3;
    ArpSpa = 22, "ARP_SPA", arp_spa, 32, 4, true, L3;
    ArpTpa = 23, "ARP_TPA", arp_tpa, 32, 4, true, L3;
    ArpSha = 24, "ARP_SHA", arp_sha, 48, 6, true, L3;
    ArpTha = 25, "ARP_THA", arp_tha, 48, 6, true, L3;
    Ipv6Src = 26, "IPV6_SRC", ipv6_src, 128, 16, true, L3;
    Ipv6Dst = 27, "IPV6_DST", ipv6_dst, 128, 16, true, L3;
    Ipv6Flabel = 28, "IPV6_FLABEL", ipv6_flabel, 20, 4, true, L3;
    Icmpv6Type = 29, "ICMPV6_TYPE", icmp_type, 8, 1, false, L4;
    Icmpv6Code = 30, "ICMPV6_CODE", icmp_code, 8, 1, false, L4;
    Ipv6NdTarget = 31, "IPV6_ND_TARGET", nd_target, 128, 16, false, L4;
    Ipv6NdSll = 32, "IPV6_ND_SLL", nd_sll, 48, 6, false, L4;
    Ipv6NdTll = 33, "IPV6_ND_TLL", nd_tll, 48, 6, false, L4;
    MplsLabel = 34, "MPLS_LABEL", mpls_label, 20, 4, false, L2;
    MplsTc = 35, "MPLS_TC", mpls_tc, 3, 1, false, L2;
    MplsBos = 36, "MPLS_BOS", mpls_bos, 1, 1, false, L2;
    PbbIsid = 37, "PBB_ISID", pbb_isid, 24, 3, true, L2;
    TunnelId = 38, "TUNNEL_ID", tunnel_id, 64, 8, true, L2;
    Ipv6Exthdr = 39, "IPV6_EXTHDR", ipv6_exthdr, 9, 2, true, L3;
    IpTtl = 40, "NXM_NX_IP_TTL", ip_ttl, 8, 1, false, L3;
}

impl Field {
    /// Sets the field to all ones in `mask` (an exact match on it).
    pub fn mask_all(self, mask: &mut FlowKey) {
        self.set_in(mask, &self.full_mask());
    }

    /// Adds `field == value` (under `mask_value`, or exactly when `None`) to a match's key and
    /// mask. The key keeps only the masked bits, as [`FlowMatch::matches`] requires.
    pub fn set_masked(
        self,
        key: &mut FlowKey,
        mask: &mut FlowKey,
        value: &FieldValue,
        mask_value: Option<&FieldValue>,
    ) {
        let m = mask_value.copied().unwrap_or(self.full_mask());
        self.set_in(mask, &m);
        self.set_in(key, &FieldValue(value.0 & m.0));
    }

    /// The fields sharing this field's key slot (TCP/UDP/SCTP ports, ICMPv4/v6 type/code).
    fn slot_group(self) -> &'static [Field] {
        use Field::*;
        match self {
            TcpSrc | UdpSrc | SctpSrc => &[TcpSrc, UdpSrc, SctpSrc],
            TcpDst | UdpDst | SctpDst => &[TcpDst, UdpDst, SctpDst],
            Icmpv4Type | Icmpv6Type => &[Icmpv4Type, Icmpv6Type],
            Icmpv4Code | Icmpv6Code => &[Icmpv4Code, Icmpv6Code],
            _ => &[],
        }
    }

    /// The `(field, value)` that must be matched exactly before this field may be matched
    /// (OpenFlow 1.3 table 11), as alternatives; empty when there is no prerequisite.
    /// `VLAN_PCP` needs `VLAN_VID != NONE`, checked separately by [`FlowMatch::check_prerequisites`].
    pub fn prerequisites(self) -> &'static [(Field, u16)] {
        use Field::*;
        match self {
            InPhyPort | VlanPcp => &[],
            IpDscp | IpEcn | IpProto | IpTtl => &[(EthType, 0x0800), (EthType, 0x86dd)],
            Ipv4Src | Ipv4Dst => &[(EthType, 0x0800)],
            TcpSrc | TcpDst => &[(IpProto, 6)],
            UdpSrc | UdpDst => &[(IpProto, 17)],
            SctpSrc | SctpDst => &[(IpProto, 132)],
            Icmpv4Type | Icmpv4Code => &[(IpProto, 1)],
            ArpOp | ArpSpa | ArpTpa | ArpSha | ArpTha => &[(EthType, 0x0806)],
            Ipv6Src | Ipv6Dst | Ipv6Flabel | Ipv6Exthdr => &[(EthType, 0x86dd)],
            Icmpv6Type | Icmpv6Code => &[(IpProto, 58)],
            Ipv6NdTarget => &[(Icmpv6Type, 135), (Icmpv6Type, 136)],
            Ipv6NdSll => &[(Icmpv6Type, 135)],
            Ipv6NdTll => &[(Icmpv6Type, 136)],
            MplsLabel | MplsTc | MplsBos => &[(EthType, 0x8847), (EthType, 0x8848)],
            PbbIsid => &[(EthType, 0x88e7)],
            InPort | Metadata | EthDst | EthSrc | EthType | VlanVid | TunnelId => &[],
        }
    }

    /// Whether the packet `key` describes carries this field's header: some alternative of
    /// each prerequisite holds, recursively (TCP_SRC needs IP_PROTO 6, which needs an IP
    /// EtherType). A set-field whose flow match did not ensure this (a group bucket, a
    /// packet-out) must leave a packet without the header alone.
    pub fn present_in(self, key: &FlowKey) -> bool {
        let alternatives = self.prerequisites();
        alternatives.is_empty()
            || alternatives
                .iter()
                .any(|&(f, v)| f.get(key).0 == u128::from(v) && f.present_in(key))
    }
}

/// A set of [`Field`]s, one bit per field number.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, Debug)]
pub struct FieldSet(pub u64);

impl FieldSet {
    /// Adds a field.
    pub fn insert(&mut self, f: Field) {
        self.0 |= 1 << f.oxm();
    }

    /// Whether the field is in the set.
    pub fn contains(self, f: Field) -> bool {
        self.0 & (1 << f.oxm()) != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The fields in OXM number order.
    pub fn iter(self) -> impl Iterator<Item = Field> {
        Field::ALL.into_iter().filter(move |f| self.contains(*f))
    }

    /// The deepest parse any field of the set needs (`L2` for the empty set).
    pub fn depth(self) -> ParseDepth {
        self.iter().map(Field::depth).max().unwrap_or_default()
    }
}

/// Why a match's prerequisites fail: the field whose prerequisite is missing.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PrerequisiteError(pub Field);

/// A flow match: `packet & mask == key`, with `key` holding only masked bits.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, Debug)]
pub struct FlowMatch {
    /// Values of the matched bits (zero wherever `mask` is zero).
    pub key: FlowKey,
    /// Bits that must match.
    pub mask: FlowKey,
}

impl FlowMatch {
    /// Matches every packet.
    pub fn any() -> Self {
        Self::default()
    }

    /// Adds a field (exact when `mask` is `None`).
    pub fn set(&mut self, field: Field, value: FieldValue, mask: Option<FieldValue>) {
        field.set_masked(&mut self.key, &mut self.mask, &value, mask.as_ref());
    }

    /// Whether packet key `k` matches.
    #[inline]
    pub fn matches(&self, k: &FlowKey) -> bool {
        let (kw, mw, vw) = (k.words(), self.mask.words(), self.key.words());
        let mut diff = 0u64;
        for i in 0..KEY_WORDS {
            diff |= (kw[i] & mw[i]) ^ vw[i];
        }
        diff == 0
    }

    /// True when no field is partially masked: every field is either wildcarded or matched
    /// exactly, so the match fits an exact-match hash over its field set.
    pub fn is_exact(&self) -> bool {
        self.fields()
            .iter()
            .all(|f| f.get(&self.mask) == f.full_mask())
    }

    /// The fields with at least one mask bit. Fields sharing a slot (TCP/UDP/SCTP ports,
    /// ICMPv4/v6) are told apart by the matched `ip_proto`; without it the TCP / ICMPv4 name
    /// is reported.
    pub fn fields(&self) -> FieldSet {
        let mut set = FieldSet::default();
        let proto = if self.mask.ip_proto == 0xff {
            self.key.ip_proto
        } else {
            0
        };
        let mask = self.mask.words();
        let table = field_bits();
        // Only fields lying in a non-zero mask word can be matched: test just those.
        let mut candidates = mask
            .iter()
            .zip(&table.by_word)
            .filter(|(m, _)| **m != 0)
            .fold(0u64, |acc, (_, fields)| acc | fields);
        while candidates != 0 {
            let i = candidates.trailing_zeros() as usize;
            candidates &= candidates - 1;
            let (Some(&f), Some(bits)) = (Field::ALL.get(i), table.by_field.get(i)) else {
                continue;
            };
            let matched = bits
                .iter()
                .any(|&(w, b)| mask.get(usize::from(w)).is_some_and(|m| m & b != 0));
            if !matched {
                continue;
            }
            let group = f.slot_group();
            let chosen = match group.first() {
                None => f,
                Some(&first) => group
                    .iter()
                    .copied()
                    .find(|g| {
                        g.prerequisites()
                            .iter()
                            .any(|&(_, v)| v == u16::from(proto))
                    })
                    .unwrap_or(first),
            };
            set.insert(chosen);
        }
        set
    }

    /// The parse depth the match needs: `self.fields().depth()` without walking the fields
    /// (one masked test per depth over the key words; used per flow-mod).
    pub fn parse_depth(&self) -> ParseDepth {
        let [l3, l4] = depth_masks();
        let touches =
            |bits: &[u64; KEY_WORDS]| self.mask.words().iter().zip(bits).any(|(m, b)| m & b != 0);
        if touches(l4) {
            ParseDepth::L4
        } else if touches(l3) {
            ParseDepth::L3
        } else {
            ParseDepth::L2
        }
    }

    /// Checks OpenFlow 1.3 prerequisites (table 11): every matched field's prerequisite
    /// field must be matched exactly to an allowed value.
    pub fn check_prerequisites(&self) -> Result<(), PrerequisiteError> {
        let fields = self.fields();
        for f in fields.iter() {
            let ok = match f {
                Field::InPhyPort => fields.contains(Field::InPort),
                Field::VlanPcp => {
                    self.mask.vlan_vid & OFPVID_PRESENT != 0
                        && self.key.vlan_vid & OFPVID_PRESENT != 0
                }
                _ => {
                    let pre = f.prerequisites();
                    pre.is_empty()
                        || pre.iter().any(|&(p, v)| {
                            p.get(&self.mask) == p.full_mask()
                                && p.get(&self.key).0 == u128::from(v)
                        })
                }
            };
            if !ok {
                return Err(PrerequisiteError(f));
            }
        }
        Ok(())
    }
}

/// Where the fields lie in the key words.
struct FieldBits {
    /// Per field of [`Field::ALL`]: up to three (word, bits) pairs (a 16-byte field spans at
    /// most three words), unused pairs with no bits.
    by_field: [[(u8, u64); 3]; Field::ALL.len()],
    /// Per key word: the fields (bit i = `Field::ALL[i]`) with bits in it.
    by_word: [u64; KEY_WORDS],
}

fn field_bits() -> &'static FieldBits {
    static BITS: std::sync::OnceLock<FieldBits> = std::sync::OnceLock::new();
    BITS.get_or_init(|| {
        let mut table = FieldBits {
            by_field: [[(0, 0); 3]; Field::ALL.len()],
            by_word: [0; KEY_WORDS],
        };
        for (i, (f, pairs)) in Field::ALL
            .into_iter()
            .zip(table.by_field.iter_mut())
            .enumerate()
        {
            let mut k = FlowKey::default();
            f.mask_all(&mut k);
            let used = k
                .words()
                .iter()
                .enumerate()
                .filter(|(_, b)| **b != 0)
                .filter_map(|(w, b)| Some((u8::try_from(w).ok()?, *b)));
            for (pair, (w, b)) in pairs.iter_mut().zip(used) {
                *pair = (w, b);
                if let Some(fields) = table.by_word.get_mut(usize::from(w)) {
                    *fields |= 1 << i;
                }
            }
        }
        table
    })
}

/// The key bits of the L3 fields and of the L4 fields (fields sharing a slot share a depth).
fn depth_masks() -> &'static [[u64; KEY_WORDS]; 2] {
    static MASKS: std::sync::OnceLock<[[u64; KEY_WORDS]; 2]> = std::sync::OnceLock::new();
    MASKS.get_or_init(|| {
        let mut by_depth = [FlowKey::default(), FlowKey::default()];
        for f in Field::ALL {
            let slot = match f.depth() {
                ParseDepth::L2 => None,
                ParseDepth::L3 => by_depth.get_mut(0),
                ParseDepth::L4 => by_depth.get_mut(1),
            };
            if let Some(k) = slot {
                f.mask_all(k);
            }
        }
        let [l3, l4] = by_depth;
        [*l3.words(), *l4.words()]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_is_seen_by_fields() {
        for f in Field::ALL {
            let mut mask = FlowKey::default();
            f.mask_all(&mut mask);
            assert!(mask.words().iter().filter(|w| **w != 0).count() <= 3);
            let m = FlowMatch {
                key: FlowKey::default(),
                mask,
            };
            let seen = m.fields();
            let expected = f.slot_group().first().copied().unwrap_or(f);
            assert_eq!(
                seen.iter().collect::<Vec<_>>(),
                vec![expected],
                "{}",
                f.name()
            );
        }
    }

    #[test]
    fn parse_depth_agrees_with_the_field_walk() {
        let mut m = FlowMatch::any();
        assert_eq!(m.parse_depth(), m.fields().depth());
        for f in Field::ALL {
            let mut one = FlowMatch::any();
            one.set(f, FieldValue(1), None);
            assert_eq!(one.parse_depth(), one.fields().depth(), "{}", f.name());
            m.set(f, FieldValue(1), None);
            assert_eq!(m.parse_depth(), m.fields().depth(), "{}", f.name());
        }
    }

    #[test]
    fn layout_is_word_sized() {
        assert_eq!(size_of::<FlowKey>() % 8, 0);
        assert_eq!(FlowKey::EMPTY, FlowKey::default());
        assert_eq!(offset_of!(FlowKey, layout), KEY_WORDS * 8);
    }

    #[test]
    fn every_field_round_trips_and_is_cut_to_width() {
        for f in Field::ALL {
            let mut k = FlowKey::default();
            f.set_in(&mut k, &FieldValue(u128::MAX));
            assert_eq!(f.get(&k), f.full_mask(), "{}", f.name());
            assert_eq!(Field::from_oxm(f.oxm()), Some(f));
            assert!(f.oxm_len() * 8 >= f.bits() as usize);
        }
        assert_eq!(Field::from_oxm(41), None);
        assert_eq!(Field::VlanVid.full_mask().0, 0x1fff);
        assert_eq!(Field::PbbIsid.full_mask().0, 0xff_ffff);
    }

    #[test]
    fn distinct_slots_do_not_alias() {
        for f in Field::ALL {
            let mut k = FlowKey::default();
            f.mask_all(&mut k);
            for g in Field::ALL {
                let shares = g == f || f.slot_group().contains(&g);
                assert_eq!(g.get(&k).0 != 0, shares, "{} vs {}", f.name(), g.name());
            }
        }
    }

    #[test]
    fn masked_match_on_ipv4_prefix() {
        let mut m = FlowMatch::any();
        m.set(Field::EthType, 0x0800u16.into(), None);
        m.set(
            Field::Ipv4Dst,
            0x0a01_0203u32.into(),
            Some(0xffff_0000u32.into()),
        );
        assert_eq!(m.key.ipv4_dst, 0x0a01_0000, "key keeps only masked bits");
        let mut k = FlowKey {
            eth_type: 0x0800,
            ipv4_dst: 0x0a01_ffee,
            ..FlowKey::default()
        };
        assert!(m.matches(&k));
        k.ipv4_dst = 0x0a02_0000;
        assert!(!m.matches(&k));
        k.ipv4_dst = 0x0a01_0000;
        k.layout.l3 = 14;
        assert!(m.matches(&k), "layout is not matchable");
        assert!(!m.is_exact());
        assert!(FlowMatch::any().matches(&k));
    }

    #[test]
    fn fields_disambiguates_shared_slots() {
        let mut m = FlowMatch::any();
        m.set(Field::EthType, 0x86ddu16.into(), None);
        m.set(Field::IpProto, 58u8.into(), None);
        m.set(Field::Icmpv6Type, 135u8.into(), None);
        m.set(Field::Ipv6NdTarget, FieldValue::ipv6([1; 16]), None);
        let fs = m.fields();
        assert!(fs.contains(Field::Icmpv6Type) && !fs.contains(Field::Icmpv4Type));
        assert_eq!(fs.depth(), ParseDepth::L4);
        assert!(m.is_exact());
        assert_eq!(m.check_prerequisites(), Ok(()));

        let mut udp = FlowMatch::any();
        udp.set(Field::EthType, 0x0800u16.into(), None);
        udp.set(Field::IpProto, 17u8.into(), None);
        udp.set(Field::UdpDst, 53u16.into(), None);
        assert!(udp.fields().contains(Field::UdpDst));
        assert_eq!(udp.check_prerequisites(), Ok(()));
    }

    #[test]
    fn prerequisites_are_enforced() {
        let mut m = FlowMatch::any();
        m.set(Field::TcpDst, 80u16.into(), None);
        assert_eq!(
            m.check_prerequisites(),
            Err(PrerequisiteError(Field::TcpDst))
        );

        let mut pcp = FlowMatch::any();
        pcp.set(Field::VlanPcp, 3u8.into(), None);
        assert_eq!(
            pcp.check_prerequisites(),
            Err(PrerequisiteError(Field::VlanPcp))
        );
        pcp.set(
            Field::VlanVid,
            FieldValue::from(OFPVID_PRESENT),
            Some(OFPVID_PRESENT.into()),
        );
        assert_eq!(pcp.check_prerequisites(), Ok(()));

        let mut v4 = FlowMatch::any();
        v4.set(Field::Ipv4Src, 1u32.into(), None);
        v4.set(Field::EthType, 0x86ddu16.into(), None);
        assert_eq!(
            v4.check_prerequisites(),
            Err(PrerequisiteError(Field::Ipv4Src))
        );
    }

    #[test]
    fn field_value_byte_conversions() {
        let v = FieldValue::from_be_bytes(&[0x12, 0x34, 0x56]).unwrap_or_default();
        assert_eq!(v.0, 0x123456);
        let mut out = [0u8; 3];
        v.write_be_bytes(&mut out);
        assert_eq!(out, [0x12, 0x34, 0x56]);
        assert_eq!(FieldValue::from_be_bytes(&[0; 17]), None);
        let mac = [1, 2, 3, 4, 5, 6];
        assert_eq!(FieldValue::mac(mac).to_mac(), mac);
        assert_eq!(FieldValue::mac(mac).0, 0x0102_0304_0506);
    }

    fn field_strategy() -> impl proptest::strategy::Strategy<Value = Field> {
        proptest::sample::select(Field::ALL.to_vec())
    }

    proptest::proptest! {
        /// `matches` over words agrees with a field-by-field masked comparison.
        #[test]
        fn word_match_equals_field_match(
            fields in proptest::collection::vec((field_strategy(), proptest::num::u128::ANY, proptest::num::u128::ANY), 0..6),
            packet in proptest::collection::vec((field_strategy(), proptest::num::u128::ANY), 0..12),
            copy_from_match in proptest::bool::ANY,
        ) {
            let mut m = FlowMatch::any();
            for &(f, v, mask) in &fields {
                m.set(f, FieldValue(v), Some(FieldValue(mask)));
            }
            let mut k = if copy_from_match { m.key } else { FlowKey::default() };
            for &(f, v) in &packet {
                f.set_in(&mut k, &FieldValue(v));
            }
            let by_field = Field::ALL.iter().all(|f| {
                f.get(&k).0 & f.get(&m.mask).0 == f.get(&m.key).0
            });
            proptest::prop_assert_eq!(m.matches(&k), by_field);
        }
    }

    #[test]
    fn clear_headers_keeps_metadata() {
        let mut k = FlowKey {
            in_port: 3,
            metadata: 9,
            eth_type: 0x800,
            ..FlowKey::default()
        };
        k.layout.l3 = 14;
        k.clear_headers();
        assert_eq!((k.in_port, k.metadata, k.eth_type), (3, 9, 0));
        assert_eq!(k.layout, Layout::default());
    }
}
