//! ARP (RFC 826) for IPv4 over Ethernet.

use super::{get, get16, get32, header_view, Field};

pub(crate) mod field {
    use super::Field;
    /// Hardware and protocol types and address lengths.
    pub const FORMAT: Field = 0..6;
    pub const OPER: Field = 6..8;
    pub const SHA: Field = 8..14;
    pub const SPA: Field = 14..18;
    pub const THA: Field = 18..24;
    pub const TPA: Field = 24..28;
}

pub(crate) const LEN: usize = 28;
/// The format of Ethernet / IPv4 ARP: hardware type 1, protocol 0x0800, lengths 6 and 4. Only
/// it has OpenFlow fields.
pub(crate) const ETHERNET_IPV4: [u8; 6] = [0, 1, 0x08, 0x00, 6, 4];

header_view! {
    /// An ARP packet.
    Packet, LEN
}

impl<B: core::borrow::Borrow<[u8; LEN]>> Packet<B> {
    #[inline(always)]
    pub fn format(&self) -> [u8; 6] {
        get(self.bytes(), field::FORMAT)
    }

    #[inline(always)]
    pub fn oper(&self) -> u16 {
        get16(self.bytes(), field::OPER)
    }

    #[inline(always)]
    pub fn sha(&self) -> [u8; 6] {
        get(self.bytes(), field::SHA)
    }

    #[inline(always)]
    pub fn spa(&self) -> u32 {
        get32(self.bytes(), field::SPA)
    }

    #[inline(always)]
    pub fn tha(&self) -> [u8; 6] {
        get(self.bytes(), field::THA)
    }

    #[inline(always)]
    pub fn tpa(&self) -> u32 {
        get32(self.bytes(), field::TPA)
    }
}
