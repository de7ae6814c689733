//! An MPLS label stack entry (RFC 3032): label, traffic class, bottom of stack, TTL in one
//! big-endian 32-bit word.

pub(crate) mod field {
    pub const TTL: usize = 3;
    /// The byte holding the bottom-of-stack bit.
    pub const BOS: usize = 2;
}

pub(crate) const LEN: usize = 4;
pub(crate) const LABEL_SHIFT: u32 = 12;
pub(crate) const LABEL_MASK: u32 = 0x000f_ffff;
pub(crate) const TC_SHIFT: u32 = 9;
pub(crate) const TC_MASK: u32 = 0x7;
pub(crate) const BOS_SHIFT: u32 = 8;
/// The bottom-of-stack bit in its byte ([`field::BOS`]).
pub(crate) const BOS_BIT: u8 = 0x01;

/// A label stack entry as its 32-bit word.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lse(pub u32);

impl Lse {
    #[inline(always)]
    pub fn from_bytes(b: [u8; LEN]) -> Self {
        Lse(u32::from_be_bytes(b))
    }

    #[inline(always)]
    pub fn label(self) -> u32 {
        self.0 >> LABEL_SHIFT
    }

    #[inline(always)]
    pub fn tc(self) -> u8 {
        ((self.0 >> TC_SHIFT) & TC_MASK) as u8
    }

    #[inline(always)]
    pub fn bos(self) -> u8 {
        ((self.0 >> BOS_SHIFT) & 1) as u8
    }

    #[inline(always)]
    pub fn ttl(self) -> u8 {
        self.0 as u8
    }

    #[inline(always)]
    pub fn with_label(self, label: u32) -> Self {
        Lse((self.0 & !(LABEL_MASK << LABEL_SHIFT)) | ((label & LABEL_MASK) << LABEL_SHIFT))
    }

    #[inline(always)]
    pub fn with_tc(self, tc: u32) -> Self {
        Lse((self.0 & !(TC_MASK << TC_SHIFT)) | ((tc & TC_MASK) << TC_SHIFT))
    }

    #[inline(always)]
    pub fn with_bos(self, bos: u32) -> Self {
        Lse((self.0 & !(1 << BOS_SHIFT)) | ((bos & 1) << BOS_SHIFT))
    }

    #[inline(always)]
    pub fn with_ttl(self, ttl: u8) -> Self {
        Lse((self.0 & !0xff) | u32::from(ttl))
    }
}
