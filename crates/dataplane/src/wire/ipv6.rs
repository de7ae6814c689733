//! IPv6 (RFC 8200) and its extension headers.

use super::{get, get16, get32, header_view, Field};

pub(crate) mod field {
    use super::Field;
    /// Version and traffic class.
    pub const VER_TC: Field = 0..2;
    /// Version, traffic class and flow label.
    pub const VER_TC_FLOW: Field = 0..4;
    pub const PAYLOAD_LEN: Field = 4..6;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: Field = 8..24;
    pub const DST: Field = 24..40;
}

pub(crate) const HEADER_LEN: usize = 40;
/// The source and destination addresses, which the pseudo-header of TCP, UDP and ICMPv6
/// repeats.
pub(crate) const ADDRS: Field = field::SRC.start..field::DST.end;
pub(crate) const VERSION: u8 = 6;
/// Where the traffic class sits in the first 16-bit word (below the version).
pub(crate) const TC_SHIFT: u16 = 4;
/// The flow label's bits of the first 32-bit word.
pub(crate) const FLOW_LABEL_MASK: u32 = 0x000f_ffff;

header_view! {
    /// An IPv6 fixed header.
    Header, HEADER_LEN
}

impl<B: core::borrow::Borrow<[u8; HEADER_LEN]>> Header<B> {
    #[inline(always)]
    pub fn version(&self) -> u8 {
        super::ip::version(self.bytes()[field::VER_TC.start])
    }

    #[inline(always)]
    pub fn traffic_class(&self) -> u8 {
        (get16(self.bytes(), field::VER_TC) >> TC_SHIFT) as u8
    }

    #[inline(always)]
    pub fn flow_label(&self) -> u32 {
        get32(self.bytes(), field::VER_TC_FLOW) & FLOW_LABEL_MASK
    }

    /// The payload's length (not trusted; 0 with a hop-by-hop header is a jumbogram).
    #[inline(always)]
    pub fn payload_len(&self) -> u16 {
        get16(self.bytes(), field::PAYLOAD_LEN)
    }

    #[inline(always)]
    pub fn next_header(&self) -> u8 {
        self.bytes()[field::NEXT_HEADER]
    }

    #[inline(always)]
    pub fn hop_limit(&self) -> u8 {
        self.bytes()[field::HOP_LIMIT]
    }

    #[inline(always)]
    pub fn src(&self) -> [u8; 16] {
        get(self.bytes(), field::SRC)
    }

    #[inline(always)]
    pub fn dst(&self) -> [u8; 16] {
        get(self.bytes(), field::DST)
    }
}

/// An extension header's first 8 bytes: the next header, the length, and for a fragment
/// header the offset and flags.
pub(crate) mod ext {
    use super::{get16, header_view, Field};
    use crate::wire::ip::protocol;

    pub(crate) mod field {
        use super::Field;
        pub const NEXT_HEADER: usize = 0;
        /// The length in units of the header's kind, not counting the first unit.
        pub const LEN: usize = 1;
        /// A fragment header's offset and flags.
        pub const FRAG_OFFSET: Field = 2..4;
    }

    pub(crate) const MIN_LEN: usize = 8;
    /// A fragment header's offset bits (a non-zero offset: not the first fragment).
    pub(crate) const FRAG_OFFSET_MASK: u16 = 0xfff8;

    header_view! {
        /// The first 8 bytes of an extension header (every kind has at least that many).
        Ext, MIN_LEN
    }

    impl<B: core::borrow::Borrow<[u8; MIN_LEN]>> Ext<B> {
        #[inline(always)]
        pub fn next_header(&self) -> u8 {
            self.bytes()[field::NEXT_HEADER]
        }

        /// The length in bytes of this header of kind `nh`: the authentication header counts
        /// 4-byte units beyond two, the fragment header is 8 bytes, the others count 8-byte
        /// units beyond one.
        #[inline(always)]
        pub fn len(&self, nh: u8) -> usize {
            let units = usize::from(self.bytes()[field::LEN]);
            match nh {
                protocol::FRAGMENT => MIN_LEN,
                protocol::AUTH => (units + 2) * 4,
                _ => (units + 1) * 8,
            }
        }

        /// For a fragment header: whether it is a fragment other than the first.
        #[inline(always)]
        pub fn is_later_fragment(&self) -> bool {
            get16(self.bytes(), field::FRAG_OFFSET) & FRAG_OFFSET_MASK != 0
        }
    }
}
