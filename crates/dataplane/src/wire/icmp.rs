//! ICMP (RFC 792) and ICMPv6 (RFC 4443) headers, and IPv6 neighbor discovery (RFC 4861).

pub(crate) mod field {
    use crate::wire::Field;
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    /// Type and code: the 16-bit word of the checksum a change of either updates.
    pub const TYPE_CODE: Field = 0..2;
    pub const CHECKSUM: Field = 2..4;
}

pub(crate) const HEADER_LEN: usize = 4;

/// Neighbor solicitation and advertisement: a target address, then options.
pub(crate) mod nd {
    use crate::wire::Field;

    pub(crate) mod field {
        use super::Field;
        pub const TARGET: Field = 8..24;
        pub const OPTIONS: usize = 24;
    }

    pub(crate) const SOLICITATION: u8 = 135;
    pub(crate) const ADVERTISEMENT: u8 = 136;

    /// An option: type, length in units of 8 bytes, and a body; the link-layer address
    /// options are one unit with the address after type and length.
    pub(crate) mod option {
        use crate::wire::Field;

        pub(crate) mod field {
            use super::Field;
            pub const TYPE: usize = 0;
            pub const LEN: usize = 1;
            pub const LLADDR: Field = 2..8;
        }

        pub(crate) const UNIT: usize = 8;
        pub(crate) const SOURCE_LLADDR: u8 = 1;
        pub(crate) const TARGET_LLADDR: u8 = 2;
    }
}
