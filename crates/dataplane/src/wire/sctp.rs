//! SCTP (RFC 9260): the common header.

pub(crate) mod field {
    use crate::wire::Field;
    /// The CRC32c, stored least significant byte first.
    pub const CHECKSUM: Field = 8..12;
}

pub(crate) const HEADER_LEN: usize = 12;
