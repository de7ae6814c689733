//! Provider backbone bridging (802.1ah): the I-TAG after the backbone's EtherType 0x88e7.

use super::{get, Field};

pub(crate) mod field {
    use super::Field;
    /// Priority, drop eligibility and the use-customer-address bit.
    pub const FLAGS: usize = 0;
    /// The 24-bit service instance id.
    pub const ISID: Field = 1..4;
}

/// The I-TAG after its EtherType.
pub(crate) const TAG_LEN: usize = 4;
/// The whole encapsulation a push adds before the customer's addresses: backbone
/// destination and source, the EtherType and the I-TAG.
pub(crate) const PUSH_LEN: usize = 18;
pub(crate) const ISID_MASK: u32 = 0x00ff_ffff;

/// The service instance id of an I-TAG.
#[inline(always)]
pub(crate) fn isid(itag: &[u8; TAG_LEN]) -> u32 {
    let [a, b, c] = get(itag, field::ISID);
    u32::from_be_bytes([0, a, b, c])
}
