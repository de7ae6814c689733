//! OXM match fields (spec 1.3.5 section 7.2.3): field ids, typed values, the match structure
//! and its validation (prerequisites, duplicates, masks).
//!
//! A match is a list of [`OxmField`]s; each holds the value and, for a masked TLV, the mask as
//! an [`OxmValue`] of the same variant. The OPENFLOW_BASIC class is understood, and one field
//! of Open vSwitch's NXM_1 class: NXM_NX_IP_TTL, the IP TTL that OpenFlow 1.3 cannot match
//! and routers need (ICMP Time Exceeded for TTL 1); any other field is `OFPBMC_BAD_FIELD`.

use crate::buf::{pad8, Put, Reader};
use crate::error::{BadMatchCode, OfpError};

/// OXM class of the standard fields.
pub const OFPXMC_OPENFLOW_BASIC: u16 = 0x8000;
/// OXM class of Open vSwitch's Nicira extension fields `NXM_NX_*` (`OFPXMC_NXM_1`).
pub const OFPXMC_NXM_1: u16 = 0x0001;
/// OFPMT_OXM, the only match type of OpenFlow 1.3.
pub const OFPMT_OXM: u16 = 1;
/// Marks a present 802.1Q header in VLAN_VID.
pub const OFPVID_PRESENT: u16 = 0x1000;
/// VLAN_VID value for "no 802.1Q header".
pub const OFPVID_NONE: u16 = 0x0000;

/// What a field needs to be matched before it may appear (spec table 12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prerequisite {
    /// No prerequisite.
    None,
    /// The field must also be in the match (IN_PHY_PORT needs IN_PORT).
    Present(OxmFieldId),
    /// The field must be matched exactly with one of these values.
    OneOf(OxmFieldId, &'static [u64]),
    /// VLAN_VID must be matched and must not be OFPVID_NONE.
    VlanPresent,
}

const IP: &[u64] = &[0x0800, 0x86dd];
const IPV4: &[u64] = &[0x0800];
const IPV6: &[u64] = &[0x86dd];
const ARP: &[u64] = &[0x0806];
const MPLS: &[u64] = &[0x8847, 0x8848];
const PBB: &[u64] = &[0x88e7];

/// Declares the field table once: id, wire class and number, value width in bytes,
/// significant bits, maskability and prerequisite.
macro_rules! oxm_fields {
    ($($id:ident($ty:ty) = $class:ident $num:expr, $len:expr, $bits:expr, $maskable:expr,
        $prereq:expr;)*) => {
        /// One OXM field: the OPENFLOW_BASIC ones in wire-number order, then NXM_NX_IP_TTL.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum OxmFieldId { $($id,)* }

        /// A typed OXM value (or mask). Integer fields narrower than their Rust type must
        /// fit [`OxmFieldId::bits`]; decoding rejects wider values with `OFPBMC_BAD_VALUE`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum OxmValue { $($id($ty),)* }

        impl OxmFieldId {
            /// Every field: the basic ones in wire-number order, then NXM_NX_IP_TTL.
            pub const ALL: &'static [OxmFieldId] = &[$(OxmFieldId::$id,)*];

            /// The field of wire class `class` and number `field`, if it is one we know.
            pub fn from_wire(class: u16, field: u8) -> Option<Self> {
                match (class, field) {
                    $(($class, $num) => Some(OxmFieldId::$id),)*
                    _ => None,
                }
            }
            /// Wire class (`oxm_class`).
            pub fn class(self) -> u16 {
                match self { $(OxmFieldId::$id => $class,)* }
            }
            /// Wire field number (the 7-bit `oxm_field`), within its class.
            pub fn field(self) -> u8 {
                match self { $(OxmFieldId::$id => $num,)* }
            }
            /// Value length in bytes on the wire (a mask has the same length).
            pub fn value_len(self) -> usize {
                match self { $(OxmFieldId::$id => $len,)* }
            }
            /// Number of significant bits (VLAN_VID counts OFPVID_PRESENT).
            pub fn bits(self) -> u32 {
                match self { $(OxmFieldId::$id => $bits,)* }
            }
            /// Whether the field takes a mask: the fields table 12 of the spec marks maskable,
            /// and the TCP, UDP and SCTP ports as Open vSwitch allows them (bitwise port
            /// ranges, as ACL compilers emit them).
            pub fn maskable(self) -> bool {
                match self { $(OxmFieldId::$id => $maskable,)* }
            }
            pub fn prerequisite(self) -> Prerequisite {
                match self { $(OxmFieldId::$id => $prereq,)* }
            }
        }

        impl OxmValue {
            pub fn field_id(&self) -> OxmFieldId {
                match self { $(OxmValue::$id(_) => OxmFieldId::$id,)* }
            }
            fn put(&self, out: &mut Vec<u8>) {
                match *self { $(OxmValue::$id(v) => WireValue::put(v, $len, out),)* }
            }
            fn parse(id: OxmFieldId, raw: &[u8]) -> Option<Self> {
                match id { $(OxmFieldId::$id => WireValue::parse(raw).map(OxmValue::$id),)* }
            }
        }
    };
}

use OxmFieldId as F;
use Prerequisite::{None as NoPrereq, OneOf, Present, VlanPresent};

oxm_fields! {
    InPort(u32) = OFPXMC_OPENFLOW_BASIC 0, 4, 32, false, NoPrereq;
    InPhyPort(u32) = OFPXMC_OPENFLOW_BASIC 1, 4, 32, false, Present(F::InPort);
    Metadata(u64) = OFPXMC_OPENFLOW_BASIC 2, 8, 64, true, NoPrereq;
    EthDst([u8; 6]) = OFPXMC_OPENFLOW_BASIC 3, 6, 48, true, NoPrereq;
    EthSrc([u8; 6]) = OFPXMC_OPENFLOW_BASIC 4, 6, 48, true, NoPrereq;
    EthType(u16) = OFPXMC_OPENFLOW_BASIC 5, 2, 16, false, NoPrereq;
    VlanVid(u16) = OFPXMC_OPENFLOW_BASIC 6, 2, 13, true, NoPrereq;
    VlanPcp(u8) = OFPXMC_OPENFLOW_BASIC 7, 1, 3, false, VlanPresent;
    IpDscp(u8) = OFPXMC_OPENFLOW_BASIC 8, 1, 6, false, OneOf(F::EthType, IP);
    IpEcn(u8) = OFPXMC_OPENFLOW_BASIC 9, 1, 2, false, OneOf(F::EthType, IP);
    IpProto(u8) = OFPXMC_OPENFLOW_BASIC 10, 1, 8, false, OneOf(F::EthType, IP);
    Ipv4Src(u32) = OFPXMC_OPENFLOW_BASIC 11, 4, 32, true, OneOf(F::EthType, IPV4);
    Ipv4Dst(u32) = OFPXMC_OPENFLOW_BASIC 12, 4, 32, true, OneOf(F::EthType, IPV4);
    TcpSrc(u16) = OFPXMC_OPENFLOW_BASIC 13, 2, 16, true, OneOf(F::IpProto, &[6]);
    TcpDst(u16) = OFPXMC_OPENFLOW_BASIC 14, 2, 16, true, OneOf(F::IpProto, &[6]);
    UdpSrc(u16) = OFPXMC_OPENFLOW_BASIC 15, 2, 16, true, OneOf(F::IpProto, &[17]);
    UdpDst(u16) = OFPXMC_OPENFLOW_BASIC 16, 2, 16, true, OneOf(F::IpProto, &[17]);
    SctpSrc(u16) = OFPXMC_OPENFLOW_BASIC 17, 2, 16, true, OneOf(F::IpProto, &[132]);
    SctpDst(u16) = OFPXMC_OPENFLOW_BASIC 18, 2, 16, true, OneOf(F::IpProto, &[132]);
    Icmpv4Type(u8) = OFPXMC_OPENFLOW_BASIC 19, 1, 8, false, OneOf(F::IpProto, &[1]);
    Icmpv4Code(u8) = OFPXMC_OPENFLOW_BASIC 20, 1, 8, false, OneOf(F::IpProto, &[1]);
    ArpOp(u16) = OFPXMC_OPENFLOW_BASIC 21, 2, 16, false, OneOf(F::EthType, ARP);
    ArpSpa(u32) = OFPXMC_OPENFLOW_BASIC 22, 4, 32, true, OneOf(F::EthType, ARP);
    ArpTpa(u32) = OFPXMC_OPENFLOW_BASIC 23, 4, 32, true, OneOf(F::EthType, ARP);
    ArpSha([u8; 6]) = OFPXMC_OPENFLOW_BASIC 24, 6, 48, true, OneOf(F::EthType, ARP);
    ArpTha([u8; 6]) = OFPXMC_OPENFLOW_BASIC 25, 6, 48, true, OneOf(F::EthType, ARP);
    Ipv6Src([u8; 16]) = OFPXMC_OPENFLOW_BASIC 26, 16, 128, true, OneOf(F::EthType, IPV6);
    Ipv6Dst([u8; 16]) = OFPXMC_OPENFLOW_BASIC 27, 16, 128, true, OneOf(F::EthType, IPV6);
    Ipv6Flabel(u32) = OFPXMC_OPENFLOW_BASIC 28, 4, 20, true, OneOf(F::EthType, IPV6);
    Icmpv6Type(u8) = OFPXMC_OPENFLOW_BASIC 29, 1, 8, false, OneOf(F::IpProto, &[58]);
    Icmpv6Code(u8) = OFPXMC_OPENFLOW_BASIC 30, 1, 8, false, OneOf(F::IpProto, &[58]);
    Ipv6NdTarget([u8; 16]) = OFPXMC_OPENFLOW_BASIC 31, 16, 128, false, OneOf(F::Icmpv6Type, &[135, 136]);
    Ipv6NdSll([u8; 6]) = OFPXMC_OPENFLOW_BASIC 32, 6, 48, false, OneOf(F::Icmpv6Type, &[135]);
    Ipv6NdTll([u8; 6]) = OFPXMC_OPENFLOW_BASIC 33, 6, 48, false, OneOf(F::Icmpv6Type, &[136]);
    MplsLabel(u32) = OFPXMC_OPENFLOW_BASIC 34, 4, 20, false, OneOf(F::EthType, MPLS);
    MplsTc(u8) = OFPXMC_OPENFLOW_BASIC 35, 1, 3, false, OneOf(F::EthType, MPLS);
    MplsBos(u8) = OFPXMC_OPENFLOW_BASIC 36, 1, 1, false, OneOf(F::EthType, MPLS);
    PbbIsid(u32) = OFPXMC_OPENFLOW_BASIC 37, 3, 24, true, OneOf(F::EthType, PBB);
    TunnelId(u64) = OFPXMC_OPENFLOW_BASIC 38, 8, 64, true, NoPrereq;
    Ipv6Exthdr(u16) = OFPXMC_OPENFLOW_BASIC 39, 2, 9, true, OneOf(F::EthType, IPV6);
    // Open vSwitch's NXM_NX_IP_TTL (`nw_ttl`): the IPv4 TTL or IPv6 hop limit, exact only.
    NxIpTtl(u8) = OFPXMC_NXM_1 29, 1, 8, false, OneOf(F::EthType, IP);
}

/// Conversion of a Rust value type to its big-endian OXM bytes of a given width.
trait WireValue: Sized {
    fn put(self, len: usize, out: &mut Vec<u8>);
    fn parse(raw: &[u8]) -> Option<Self>;
}

macro_rules! wire_int {
    ($($t:ty),*) => {$(
        impl WireValue for $t {
            fn put(self, len: usize, out: &mut Vec<u8>) {
                let bytes = self.to_be_bytes();
                out.extend_from_slice(&bytes[bytes.len() - len..]);
            }
            fn parse(raw: &[u8]) -> Option<Self> {
                let mut bytes = [0u8; core::mem::size_of::<$t>()];
                let start = bytes.len().checked_sub(raw.len())?;
                bytes[start..].copy_from_slice(raw);
                Some(<$t>::from_be_bytes(bytes))
            }
        }
    )*};
}
wire_int!(u8, u16, u32, u64);

impl<const N: usize> WireValue for [u8; N] {
    fn put(self, _len: usize, out: &mut Vec<u8>) {
        out.extend_from_slice(&self);
    }
    fn parse(raw: &[u8]) -> Option<Self> {
        raw.try_into().ok()
    }
}

impl OxmValue {
    /// The value of field `id` from its wire bytes; `None` unless `raw` is exactly
    /// `id.value_len()` bytes.
    pub fn from_bytes(id: OxmFieldId, raw: &[u8]) -> Option<Self> {
        if raw.len() != id.value_len() {
            return Option::None;
        }
        OxmValue::parse(id, raw)
    }

    /// The value's wire bytes (`field_id().value_len()` of them).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16);
        self.put(&mut out);
        out
    }

    /// The value as an unsigned integer, for integer fields of up to 64 bits.
    pub fn as_u64(&self) -> Option<u64> {
        if self.field_id().value_len() > 8 || matches!(self.field_id(), F::EthDst | F::EthSrc) {
            return Option::None;
        }
        let bytes = self.to_bytes();
        Some(bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    /// True if no bit beyond the field's width is set.
    pub(crate) fn fits_width(&self) -> bool {
        if let OxmValue::PbbIsid(isid) = *self {
            return isid <= 0x00ff_ffff;
        }
        let id = self.field_id();
        let bits = id.bits() as usize;
        let total = id.value_len() * 8;
        let bytes = self.to_bytes();
        (0..total - bits).all(|bit| bytes[bit / 8] & (0x80 >> (bit % 8)) == 0)
    }
}

/// One TLV of a match: a value and, when the TLV had OXM_HASMASK, its mask (same variant).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OxmField {
    pub value: OxmValue,
    pub mask: Option<OxmValue>,
}

impl OxmField {
    /// An exact-match field.
    pub fn exact(value: OxmValue) -> Self {
        OxmField { value, mask: None }
    }

    /// A masked field.
    pub fn masked(value: OxmValue, mask: OxmValue) -> Self {
        OxmField {
            value,
            mask: Some(mask),
        }
    }

    /// Bytes of this TLV on the wire.
    pub fn wire_len(&self) -> usize {
        let len = self.value.field_id().value_len();
        4 + if self.mask.is_some() { 2 * len } else { len }
    }

    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        let id = self.value.field_id();
        let has_mask = self.mask.is_some();
        out.put_u32(oxm_header(id, has_mask));
        self.value.put(out);
        if let Some(mask) = &self.mask {
            mask.put(out);
        }
    }

    /// Parses one TLV from `r`. Structural errors use `OFPBMC_*` codes.
    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let header = r.u32()?;
        let class = (header >> 16) as u16;
        let field = ((header >> 9) & 0x7f) as u8;
        let has_mask = header & 0x100 != 0;
        let len = (header & 0xff) as usize;
        let id = OxmFieldId::from_wire(class, field).ok_or(bad_match(BadMatchCode::BadField))?;
        let value_len = id.value_len();
        let expected = if has_mask { 2 * value_len } else { value_len };
        if len != expected {
            return Err(bad_match(BadMatchCode::BadLen));
        }
        let payload = r.bytes(len)?;
        if has_mask && !id.maskable() {
            return Err(bad_match(BadMatchCode::BadMask));
        }
        let value = parse_value(id, &payload[..value_len])?;
        let mask = match payload.get(value_len..) {
            Some(raw) if has_mask => Some(parse_value(id, raw)?),
            _ => None,
        };
        Ok(OxmField { value, mask })
    }
}

fn parse_value(id: OxmFieldId, raw: &[u8]) -> Result<OxmValue, OfpError> {
    OxmValue::parse(id, raw).ok_or(bad_match(BadMatchCode::BadLen))
}

/// The 32-bit OXM header of a field.
pub fn oxm_header(id: OxmFieldId, has_mask: bool) -> u32 {
    let len = id.value_len() * if has_mask { 2 } else { 1 };
    (u32::from(id.class()) << 16)
        | (u32::from(id.field()) << 9)
        | (u32::from(has_mask) << 8)
        | len as u32
}

fn bad_match(code: BadMatchCode) -> OfpError {
    OfpError::BadMatch(code)
}

/// An OXM match (`ofp_match` of type OFPMT_OXM). `Match::default()` matches every packet.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Match {
    pub fields: Vec<OxmField>,
}

impl Match {
    /// The field with this id, if present.
    pub fn get(&self, id: OxmFieldId) -> Option<&OxmField> {
        self.fields.iter().find(|f| f.value.field_id() == id)
    }

    /// Checks value widths, masks, duplicates and prerequisites (spec 7.2.3.5 - 7.2.3.8).
    pub fn validate(&self) -> Result<(), OfpError> {
        for (i, f) in self.fields.iter().enumerate() {
            let id = f.value.field_id();
            if self.fields[..i].iter().any(|g| g.value.field_id() == id) {
                return Err(bad_match(BadMatchCode::DupField));
            }
            if !f.value.fits_width() {
                return Err(bad_match(BadMatchCode::BadValue));
            }
            if let Some(mask) = &f.mask {
                if !id.maskable() || mask.field_id() != id || !mask.fits_width() {
                    return Err(bad_match(BadMatchCode::BadMask));
                }
                let outside_mask = f
                    .value
                    .to_bytes()
                    .iter()
                    .zip(mask.to_bytes())
                    .any(|(v, m)| v & !m != 0);
                if outside_mask {
                    return Err(bad_match(BadMatchCode::BadWildcards));
                }
            }
        }
        for f in &self.fields {
            if !self.prerequisite_met(f.value.field_id().prerequisite()) {
                return Err(bad_match(BadMatchCode::BadPrereq));
            }
        }
        Ok(())
    }

    fn prerequisite_met(&self, prereq: Prerequisite) -> bool {
        match prereq {
            Prerequisite::None => true,
            Prerequisite::Present(id) => self.get(id).is_some(),
            Prerequisite::OneOf(id, values) => match self.get(id) {
                Some(OxmField { value, mask: None }) => {
                    value.as_u64().is_some_and(|v| values.contains(&v))
                }
                _ => false,
            },
            Prerequisite::VlanPresent => match self.get(F::VlanVid) {
                Some(OxmField {
                    value: OxmValue::VlanVid(vid),
                    mask,
                }) => {
                    let mask = match mask {
                        Some(OxmValue::VlanVid(m)) => *m,
                        _ => 0x1fff,
                    };
                    vid & mask & OFPVID_PRESENT != 0
                }
                _ => false,
            },
        }
    }

    /// Bytes of the `ofp_match` including its trailing padding.
    pub fn wire_len(&self) -> usize {
        pad8(self.unpadded_len())
    }

    fn unpadded_len(&self) -> usize {
        4 + self.fields.iter().map(OxmField::wire_len).sum::<usize>()
    }

    /// Appends the `ofp_match` with its padding to 8 bytes.
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u16(OFPMT_OXM);
        out.put_u16(crate::buf::wire_len(self.unpadded_len()));
        for f in &self.fields {
            f.emit(out);
        }
        out.pad_to_8(start);
    }

    /// Parses an `ofp_match` and its padding from `r`, checking its structure (type, lengths,
    /// known fields, masks only on maskable fields). Messages a switch must police (flow mods,
    /// flow stats requests) also run [`Match::validate`].
    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let short = bad_match(BadMatchCode::BadLen);
        let mut header = Reader::new(r.bytes(4).map_err(|_| short)?, short);
        let match_type = header.u16()?;
        let len = usize::from(header.u16()?);
        if match_type != OFPMT_OXM {
            return Err(bad_match(BadMatchCode::BadType));
        }
        let body_len = len.checked_sub(4).ok_or(short)?;
        let body = r.bytes(body_len).map_err(|_| short)?;
        r.skip(pad8(len) - len).map_err(|_| short)?;
        let mut fields_reader = Reader::new(body, short);
        let mut fields = Vec::new();
        while !fields_reader.is_empty() {
            fields.push(OxmField::parse(&mut fields_reader)?);
        }
        Ok(Match { fields })
    }
}
