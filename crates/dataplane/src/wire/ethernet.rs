//! Ethernet II, its 802.1Q / 802.1ad tags, and the 802.2 LLC/SNAP header that carries an
//! EtherType in an 802.3 frame.

use super::{get, get16, header_view, Field};

pub(crate) mod field {
    use super::Field;
    pub const DST: Field = 0..6;
    pub const SRC: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
}

pub(crate) const HEADER_LEN: usize = 14;
/// The width of an EtherType field (the Ethernet header's, a tag's, SNAP's).
pub(crate) const ETHERTYPE_LEN: usize = 2;

/// The EtherTypes the datapath knows.
pub(crate) mod ethertype {
    pub const IPV4: u16 = 0x0800;
    pub const ARP: u16 = 0x0806;
    pub const VLAN: u16 = 0x8100;
    pub const QINQ: u16 = 0x88a8;
    pub const IPV6: u16 = 0x86dd;
    pub const MPLS: u16 = 0x8847;
    pub const MPLS_MCAST: u16 = 0x8848;
    pub const PBB: u16 = 0x88e7;
    /// Values below are an 802.3 length, not an EtherType.
    pub const MIN: u16 = 0x0600;
    /// What OpenFlow reports for an 802.3 frame without a SNAP EtherType.
    pub const NOT_ETH: u16 = 0x05ff;
}

header_view! {
    /// An Ethernet II header.
    Header, HEADER_LEN
}

impl<B: core::borrow::Borrow<[u8; HEADER_LEN]>> Header<B> {
    #[inline(always)]
    pub fn dst(&self) -> [u8; 6] {
        get(self.bytes(), field::DST)
    }

    #[inline(always)]
    pub fn src(&self) -> [u8; 6] {
        get(self.bytes(), field::SRC)
    }

    #[inline(always)]
    pub fn ethertype(&self) -> u16 {
        get16(self.bytes(), field::ETHERTYPE)
    }
}

/// A VLAN tag: the tag control information and the EtherType after it (the tag's own
/// EtherType, 0x8100 or 0x88a8, is the field before it).
pub(crate) mod tag {
    use super::{get16, header_view, Field};

    pub(crate) mod field {
        use super::Field;
        pub const TCI: Field = 0..2;
        pub const ETHERTYPE: Field = 2..4;
    }

    pub(crate) const LEN: usize = 4;
    /// The VLAN id's bits of the TCI.
    pub(crate) const VID_MASK: u16 = 0x0fff;
    /// Where the priority code point starts in the TCI (its top three bits).
    pub(crate) const PCP_SHIFT: u16 = 13;
    /// The priority code point's bits of the TCI.
    pub(crate) const PCP_MASK: u16 = 0xe000;

    header_view! {
        /// A VLAN tag after its TPID.
        Tag, LEN
    }

    impl<B: core::borrow::Borrow<[u8; LEN]>> Tag<B> {
        #[inline(always)]
        pub fn tci(&self) -> u16 {
            get16(self.bytes(), field::TCI)
        }

        #[inline(always)]
        pub fn ethertype(&self) -> u16 {
            get16(self.bytes(), field::ETHERTYPE)
        }
    }
}

/// The 802.2 LLC header with a SNAP extension: `AA AA 03`, a zero OUI, then an EtherType.
pub(crate) mod snap {
    use super::Field;

    pub(crate) mod field {
        use super::Field;
        pub const PREFIX: Field = 0..6;
        pub const ETHERTYPE: Field = 6..8;
    }

    pub(crate) const LEN: usize = 8;
    /// LLC DSAP/SSAP `AA AA`, control `03`, OUI `00 00 00`.
    pub(crate) const PREFIX: [u8; 6] = [0xaa, 0xaa, 0x03, 0, 0, 0];
}
