//! UDP (RFC 768): the fields the datapath reads or rewrites.

pub(crate) mod field {
    use crate::wire::Field;
    pub const CHECKSUM: Field = 6..8;
}

pub(crate) const HEADER_LEN: usize = 8;
/// A checksum field of 0 means "none" (over IPv4); a computed 0 is sent as this.
pub(crate) const CHECKSUM_OF_ZERO: u16 = 0xffff;
