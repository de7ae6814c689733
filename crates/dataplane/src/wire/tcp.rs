//! TCP (RFC 9293): the fields the datapath reads or rewrites.

pub(crate) mod field {
    use crate::wire::Field;
    /// The data offset (header length in 32-bit words) in the byte's top four bits.
    pub const DATA_OFF: usize = 12;
    pub const CHECKSUM: Field = 16..18;
}

pub(crate) const HEADER_LEN: usize = 20;

/// The header length the data offset byte `b` gives, in bytes.
#[inline(always)]
pub(crate) fn header_len(b: u8) -> usize {
    usize::from(b >> 4) * 4
}
