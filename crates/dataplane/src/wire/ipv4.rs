//! IPv4 (RFC 791).

use super::{get16, get32, header_view, set, set16, set32, Field};

pub(crate) mod field {
    use super::Field;
    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    /// Version, header length, DSCP and ECN: the 16-bit word of the header checksum a DSCP or
    /// ECN change updates.
    pub const VER_TOS: Field = 0..2;
    pub const LENGTH: Field = 2..4;
    pub const FLG_OFF: Field = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    /// TTL and protocol: the 16-bit word of the header checksum a TTL change updates.
    pub const TTL_PROTOCOL: Field = 8..10;
    pub const CHECKSUM: Field = 10..12;
    pub const SRC: Field = 12..16;
    pub const DST: Field = 16..20;
}

/// The header without options.
pub(crate) const HEADER_LEN: usize = 20;
pub(crate) const VERSION: u8 = 4;
/// The version and header length byte of a header without options.
pub(crate) const VER_IHL_PLAIN: u8 = 0x45;
/// The flags and fragment offset word: more fragments, and the offset.
pub(crate) const MORE_FRAGMENTS: u16 = 0x2000;
pub(crate) const FRAG_OFFSET: u16 = 0x1fff;
/// Where the DSCP starts in its byte (the ECN is below it).
pub(crate) const DSCP_SHIFT: u8 = 2;
pub(crate) const DSCP_MASK: u8 = 0xfc;
pub(crate) const ECN_MASK: u8 = 0x03;

header_view! {
    /// An IPv4 header's first 20 bytes (options, if any, follow).
    Header, HEADER_LEN
}

impl<B: core::borrow::Borrow<[u8; HEADER_LEN]>> Header<B> {
    #[inline(always)]
    pub fn ver_ihl(&self) -> u8 {
        self.bytes()[field::VER_IHL]
    }

    #[inline(always)]
    pub fn version(&self) -> u8 {
        super::ip::version(self.ver_ihl())
    }

    /// The header's length in bytes, options included.
    #[inline(always)]
    pub fn header_len(&self) -> usize {
        usize::from(self.ver_ihl() & 0x0f) * 4
    }

    #[inline(always)]
    pub fn dscp(&self) -> u8 {
        self.bytes()[field::DSCP_ECN] >> DSCP_SHIFT
    }

    #[inline(always)]
    pub fn ecn(&self) -> u8 {
        self.bytes()[field::DSCP_ECN] & ECN_MASK
    }

    /// The IP packet's length, header included (not trusted: the parser checks it against the
    /// frame).
    #[inline(always)]
    pub fn total_len(&self) -> u16 {
        get16(self.bytes(), field::LENGTH)
    }

    /// Whether the packet is a fragment: more follow, or it is not the first.
    #[inline(always)]
    pub fn is_fragment(&self) -> bool {
        get16(self.bytes(), field::FLG_OFF) & (MORE_FRAGMENTS | FRAG_OFFSET) != 0
    }

    /// Whether the packet is a fragment other than the first (it has no transport header).
    #[inline(always)]
    pub fn is_later_fragment(&self) -> bool {
        get16(self.bytes(), field::FLG_OFF) & FRAG_OFFSET != 0
    }

    #[inline(always)]
    pub fn ttl(&self) -> u8 {
        self.bytes()[field::TTL]
    }

    #[inline(always)]
    pub fn protocol(&self) -> u8 {
        self.bytes()[field::PROTOCOL]
    }

    #[inline(always)]
    pub fn checksum(&self) -> u16 {
        get16(self.bytes(), field::CHECKSUM)
    }

    #[inline(always)]
    pub fn src(&self) -> u32 {
        get32(self.bytes(), field::SRC)
    }

    #[inline(always)]
    pub fn dst(&self) -> u32 {
        get32(self.bytes(), field::DST)
    }

    /// The address at `field` ([`field::SRC`] or [`field::DST`]).
    #[inline(always)]
    pub fn addr(&self, field: Field) -> u32 {
        get32(self.bytes(), field)
    }

    #[inline(always)]
    pub fn word(&self, field: Field) -> u16 {
        get16(self.bytes(), field)
    }
}

impl<B: core::borrow::BorrowMut<[u8; HEADER_LEN]>> Header<B> {
    #[inline(always)]
    pub fn set_checksum(&mut self, checksum: u16) {
        set16(self.bytes_mut(), field::CHECKSUM, checksum);
    }

    /// Writes the address at `field` ([`field::SRC`] or [`field::DST`]).
    #[inline(always)]
    pub fn set_addr(&mut self, field: Field, addr: u32) {
        set32(self.bytes_mut(), field, addr);
    }

    #[inline(always)]
    pub fn set_word(&mut self, field: Field, word: [u8; 2]) {
        set(self.bytes_mut(), field, word);
    }
}

/// The source and destination addresses, which the pseudo-header of TCP and UDP repeats.
pub(crate) const ADDRS: Field = field::SRC.start..field::DST.end;
