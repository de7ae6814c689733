//! What a port hands to its consumer, and the counters every port keeps.

/// Length of the two MAC addresses that precede an 802.1Q tag on the wire.
pub(crate) const MACS_LEN: usize = 12;
/// Length of an 802.1Q / 802.1ad tag (TPID + TCI).
pub const VLAN_TAG_LEN: usize = 4;
/// Ethernet header length without any tag.
pub const ETH_HEADER_LEN: usize = 14;

/// An outer VLAN tag that the kernel removed from a received frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanTag {
    /// Tag protocol identifier (0x8100 for 802.1Q, 0x88a8 for 802.1ad).
    pub tpid: u16,
    /// Tag control information: PCP (3 bits), DEI (1 bit), VID (12 bits).
    pub tci: u16,
}

/// One received frame, borrowed from the port until the callback returns.
#[derive(Debug, Clone, Copy)]
pub struct RxFrame<'a> {
    /// The bytes as delivered by the kernel: without `vlan` when that is `Some`.
    pub data: &'a [u8],
    /// The outer tag the kernel stripped, to be re-inserted after the MACs.
    pub vlan: Option<VlanTag>,
    /// The frame's length on the wire (tag included); larger than `wire_len()` only
    /// when the kernel truncated the capture.
    pub orig_len: u32,
}

impl RxFrame<'_> {
    /// Length of the frame as it was on the wire, as far as it was captured.
    pub fn wire_len(&self) -> usize {
        match self.vlan {
            Some(_) if self.data.len() >= MACS_LEN => self.data.len() + VLAN_TAG_LEN,
            _ => self.data.len(),
        }
    }

    /// Writes the frame exactly as it was on the wire (the stripped tag put back right
    /// after the MAC addresses) into `dst`; `None` if `dst` is too small.
    pub fn copy_restored(&self, dst: &mut [u8]) -> Option<usize> {
        match self.vlan {
            Some(tag) => write_tagged(self.data, tag, dst),
            None => {
                let out = dst.get_mut(..self.data.len())?;
                out.copy_from_slice(self.data);
                Some(out.len())
            }
        }
    }
}

/// Writes `frame` into `dst` with `tag` inserted right after its MAC addresses (a frame
/// too short to have them is written as it is); the length written, or `None` if `dst`
/// is too small.
#[inline]
pub fn write_tagged(frame: &[u8], tag: VlanTag, dst: &mut [u8]) -> Option<usize> {
    let Some((macs, rest)) = frame.split_first_chunk::<MACS_LEN>() else {
        let out = dst.get_mut(..frame.len())?;
        out.copy_from_slice(frame);
        return Some(out.len());
    };
    let out = dst.get_mut(..frame.len() + VLAN_TAG_LEN)?;
    let (head, out_rest) = out.split_first_chunk_mut::<{ MACS_LEN + VLAN_TAG_LEN }>()?;
    // The MACs and the tag as words, then the rest in one copy call: nothing lives across the
    // call, and no second call copies the MACs.
    let word = u32::from(tag.tpid) << 16 | u32::from(tag.tci);
    head[..8].copy_from_slice(&macs[..8]);
    head[8..MACS_LEN].copy_from_slice(&macs[8..]);
    head[MACS_LEN..].copy_from_slice(&word.to_be_bytes());
    out_rest.copy_from_slice(rest);
    Some(frame.len() + VLAN_TAG_LEN)
}

/// One socket's counters, in the shape of OpenFlow port statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SocketCounters {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    /// Frames lost on receive: the kernel's ring-full drops plus malformed ring entries.
    pub rx_dropped: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Frames not sent because the TX ring was full or the link was down.
    pub tx_dropped: u64,
    /// Frames refused because they were too long or too short, or failed in the kernel.
    pub tx_errors: u64,
}

/// Whether `frame` fits the interface MTU: the payload after the Ethernet header, and
/// after one VLAN tag when the frame carries one (the same allowance the kernel makes).
pub(crate) fn fits_mtu(frame: &[u8], mtu: u32) -> bool {
    if frame.len() < ETH_HEADER_LEN {
        return false;
    }
    let tagged = matches!(frame.get(12..14), Some([0x81, 0x00] | [0x88, 0xa8]));
    let l2 = if tagged {
        ETH_HEADER_LEN + VLAN_TAG_LEN
    } else {
        ETH_HEADER_LEN
    };
    frame.len() <= mtu as usize + l2
}

/// Whether `frame` with an outer tag inserted fits the interface MTU (the tag is the
/// one allowance [`fits_mtu`] makes, so what follows it must fit the MTU itself).
pub(crate) fn fits_mtu_tagged(frame: &[u8], mtu: u32) -> bool {
    frame.len() >= ETH_HEADER_LEN && frame.len() <= mtu as usize + ETH_HEADER_LEN
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restores_tag_after_macs() {
        let data: Vec<u8> = (0u8..20).collect();
        let frame = RxFrame {
            data: &data,
            vlan: Some(VlanTag {
                tpid: 0x8100,
                tci: 0x2064,
            }),
            orig_len: 24,
        };
        let mut out = [0u8; 64];
        let n = frame.copy_restored(&mut out).unwrap();
        assert_eq!(n, 24);
        assert_eq!(&out[..12], &data[..12]);
        assert_eq!(&out[12..16], &[0x81, 0x00, 0x20, 0x64]);
        assert_eq!(&out[16..24], &data[12..]);
        assert_eq!(frame.copy_restored(&mut out[..23]), None);
    }

    #[test]
    fn untagged_copies_as_is() {
        let data = [7u8; 60];
        let frame = RxFrame {
            data: &data,
            vlan: None,
            orig_len: 60,
        };
        let mut out = [0u8; 60];
        assert_eq!(frame.copy_restored(&mut out), Some(60));
        assert_eq!(out, data);
    }

    #[test]
    fn mtu_allows_one_tag() {
        let mut frame = vec![0u8; 1518];
        assert!(!fits_mtu(&frame, 1500));
        frame[12] = 0x81;
        assert!(fits_mtu(&frame, 1500));
        assert!(!fits_mtu(&frame[..13], 1500));
        assert!(fits_mtu(&frame[..1514], 1500));
    }
}
