//! What IPv4 and IPv6 share: the version nibble that starts both headers, and the protocol
//! numbers of the headers that follow them.

/// The IP version in the first byte of an IPv4 or IPv6 header.
#[inline(always)]
pub(crate) fn version(first: u8) -> u8 {
    first >> 4
}

/// IP protocol numbers (IPv4's protocol field, IPv6's next header).
pub(crate) mod protocol {
    pub const HOP_BY_HOP: u8 = 0;
    pub const ICMP: u8 = 1;
    pub const TCP: u8 = 6;
    pub const UDP: u8 = 17;
    pub const ROUTING: u8 = 43;
    pub const FRAGMENT: u8 = 44;
    pub const ESP: u8 = 50;
    pub const AUTH: u8 = 51;
    pub const ICMPV6: u8 = 58;
    pub const NO_NEXT: u8 = 59;
    pub const DEST_OPTS: u8 = 60;
    pub const SCTP: u8 = 132;
}

/// The port pair TCP, UDP and SCTP share at the start of their headers.
pub(crate) mod ports {
    use crate::wire::Field;

    pub(crate) mod field {
        use super::Field;
        pub const SRC: Field = 0..2;
        pub const DST: Field = 2..4;
        /// Both ports.
        pub const PAIR: Field = 0..4;
    }

    pub(crate) const LEN: usize = 4;
}
