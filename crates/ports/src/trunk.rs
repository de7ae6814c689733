//! 802.1Q trunks split into logical ports, for HARMLESS (seed 000): a legacy switch tags
//! each access port's frames with that port's VLAN id and sends them over a trunk; here each
//! VLAN id of a trunk is an OpenFlow port of its own.
//!
//! On receive, [`VlanMap::receive`] reads a frame's outer 802.1Q tag (from the kernel's
//! PACKET_AUXDATA on AF_PACKET, from the bytes on AF_XDP), names the logical port of its VLAN
//! id and writes the frame into the datapath's batch without that tag, in the copy the receive
//! path makes anyway. On send, the logical port's tag is inserted in the copy into the
//! transmit ring ([`crate::PacketPort::send_tagged`], [`vlan_tag`]). So the pipeline sees only
//! logical ports and untagged frames, and runs once per packet: the paper's transparent setup
//! needs a second software switch for this (S4).
//!
//! An inner tag (a host's own, QinQ, or one a controller pushed) is part of the frame and
//! passes untouched both ways. Only TPID 0x8100 is a trunk tag: an outer tag of another TPID
//! (802.1ad) leaves the frame untagged as far as the trunk goes. Untagged frames and
//! priority-tagged ones (VID 0) belong to the trunk's native VLAN; they go to the native
//! port when one is configured and are dropped otherwise, as are frames of VLAN ids no
//! logical port has (the caller counts each kind, [`Refused`]).
//!
//! Per packet: one table load and one copy call, no allocation, no panic; every length is
//! checked (`benches/trunk.rs` measures what it adds to a frame).

use crate::frame::{RxFrame, VlanTag, MACS_LEN, VLAN_TAG_LEN};

/// The tag protocol identifier of a trunk's tags (IEEE 802.1Q).
pub const TRUNK_TPID: u16 = 0x8100;
/// The largest VLAN id a logical port may have (4095 is reserved).
pub const MAX_VID: u16 = 4094;
/// VLAN ids are 12 bits.
const VID_MASK: u16 = 0x0fff;
/// The table slot of untagged and priority-tagged frames (VID 0: the native VLAN).
const NATIVE: usize = 0;

/// The outer 802.1Q tag `vid` with priority 0, as a logical port's frames carry it on the
/// trunk.
pub fn vlan_tag(vid: u16) -> VlanTag {
    VlanTag {
        tpid: TRUNK_TPID,
        tci: vid & VID_MASK,
    }
}

/// Why a frame received on a trunk enters no logical port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Tagged with a VLAN id that no logical port has.
    UnknownVid(u16),
    /// Untagged (or priority-tagged) on a trunk without a native port.
    Untagged,
    /// Longer than the buffer it was to be copied into.
    TooLong,
}

/// Why a logical port cannot be added to a trunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VlanMapError {
    /// The VLAN id is 0 or above [`MAX_VID`].
    BadVid(u16),
    /// Port numbers are 1 or more (0 marks a free slot).
    BadPort,
    /// The VLAN id (or the native slot, `None`) already has this logical port.
    Taken { vid: Option<u16>, port: u32 },
}

impl std::fmt::Display for VlanMapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VlanMapError::BadVid(vid) => write!(f, "VLAN id {vid} is not in 1..={MAX_VID}"),
            VlanMapError::BadPort => write!(f, "port number 0 is not a port"),
            VlanMapError::Taken {
                vid: Some(vid),
                port,
            } => write!(f, "VLAN {vid} is already port {port}"),
            VlanMapError::Taken { vid: None, port } => {
                write!(f, "the native VLAN is already port {port}")
            }
        }
    }
}

impl std::error::Error for VlanMapError {}

/// One trunk's VLAN ids to logical OpenFlow port numbers (0: none), slot 0 being the native
/// port. A flat table of 16 KiB: one load per frame whatever the number of ports.
#[derive(Clone)]
pub struct VlanMap {
    ports: Box<[u32; 4096]>,
}

impl Default for VlanMap {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for VlanMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let used = self.ports.iter().enumerate().filter(|(_, p)| **p != 0);
        f.debug_map().entries(used).finish()
    }
}

impl VlanMap {
    pub fn new() -> Self {
        VlanMap {
            ports: Box::new([0; 4096]),
        }
    }

    /// Frames tagged `vid` enter on `port`.
    pub fn insert(&mut self, vid: u16, port: u32) -> Result<(), VlanMapError> {
        if vid == 0 || vid > MAX_VID {
            return Err(VlanMapError::BadVid(vid));
        }
        self.claim(usize::from(vid), Some(vid), port)
    }

    /// Untagged and priority-tagged frames enter on `port`.
    pub fn set_native(&mut self, port: u32) -> Result<(), VlanMapError> {
        self.claim(NATIVE, None, port)
    }

    fn claim(&mut self, slot: usize, vid: Option<u16>, port: u32) -> Result<(), VlanMapError> {
        if port == 0 {
            return Err(VlanMapError::BadPort);
        }
        match self.ports.get_mut(slot) {
            Some(taken @ 0) => {
                *taken = port;
                Ok(())
            }
            Some(other) => Err(VlanMapError::Taken { vid, port: *other }),
            None => Err(VlanMapError::BadVid(vid.unwrap_or(0))),
        }
    }

    /// The logical port of `vid` (`None` for 0, the native slot, and unused ids).
    pub fn port_of(&self, vid: u16) -> Option<u32> {
        match vid {
            0 => None,
            v => self.ports.get(usize::from(v)).copied().filter(|&p| p != 0),
        }
    }

    /// The native port, if any.
    pub fn native(&self) -> Option<u32> {
        Some(self.ports[NATIVE]).filter(|&p| p != 0)
    }

    /// The port of VLAN `vid` (0: the native VLAN), or why there is none.
    #[inline(always)]
    fn port_at(&self, vid: u16) -> Result<u32, Refused> {
        // `vid` is 12 bits: always inside the table.
        match self.ports[usize::from(vid & VID_MASK)] {
            0 if vid & VID_MASK == 0 => Err(Refused::Untagged),
            0 => Err(Refused::UnknownVid(vid & VID_MASK)),
            port => Ok(port),
        }
    }

    /// Writes a frame received on the trunk into `dst` without its trunk tag: the logical
    /// port it enters on and the length written, or why it enters none.
    #[inline(always)]
    pub fn receive(&self, frame: &RxFrame<'_>, dst: &mut [u8]) -> Result<(u32, usize), Refused> {
        let data = frame.data;
        let (port, len) = match frame.vlan {
            // AF_PACKET: the kernel removed the tag and says what it was.
            Some(tag) if tag.tpid == TRUNK_TPID => (self.port_at(tag.tci)?, copy(data, dst)),
            // Another outer tag (802.1ad): untagged as far as the trunk goes, kept.
            Some(_) => (self.port_at(0)?, frame.copy_restored(dst)),
            None => match tag_in_frame(data) {
                // AF_XDP: the tag in the bytes, copied around.
                Some(tci) => (self.port_at(tci)?, copy_around_tag(data, dst)),
                None => (self.port_at(0)?, copy(data, dst)),
            },
        };
        len.map(|len| (port, len)).ok_or(Refused::TooLong)
    }
}

/// The TCI of a trunk tag in the bytes after the MACs, read as one big-endian word.
#[inline(always)]
fn tag_in_frame(data: &[u8]) -> Option<u16> {
    let word = u32::from_be_bytes(
        data.get(MACS_LEN..MACS_LEN + VLAN_TAG_LEN)?
            .try_into()
            .ok()?,
    );
    (word >> 16 == u32::from(TRUNK_TPID)).then_some(word as u16)
}

/// Copies `data` into the start of `dst`; its length, or `None` if `dst` is too small.
#[inline(always)]
fn copy(data: &[u8], dst: &mut [u8]) -> Option<usize> {
    let out = dst.get_mut(..data.len())?;
    out.copy_from_slice(data);
    Some(out.len())
}

/// Copies a frame with a tag after its MACs into `dst` without the tag: the MACs as two
/// words, then what follows the tag in one copy call (in that order nothing has to live across
/// the call, and the compiler cannot fold the MACs into a second call, as it does a 12-byte
/// copy that another path shares).
#[inline(always)]
fn copy_around_tag(data: &[u8], dst: &mut [u8]) -> Option<usize> {
    let macs_head = u64::from_ne_bytes(*data.first_chunk::<8>()?);
    let macs_tail = u32::from_ne_bytes(*data.get(8..)?.first_chunk::<4>()?);
    let rest = data.get(MACS_LEN + VLAN_TAG_LEN..)?;
    let out = dst.get_mut(..MACS_LEN + rest.len())?;
    let (out_macs, out_rest) = out.split_first_chunk_mut::<MACS_LEN>()?;
    let (out_head, out_tail) = out_macs.split_first_chunk_mut::<8>()?;
    *out_head = macs_head.to_ne_bytes();
    out_tail.copy_from_slice(&macs_tail.to_ne_bytes());
    out_rest.copy_from_slice(rest);
    Some(out.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame as on the wire: MACs, then `tags` (TPID, TCI) outermost first, then an
    /// EtherType and a payload.
    fn wire(tags: &[(u16, u16)], payload_len: usize) -> Vec<u8> {
        let mut f: Vec<u8> = (1..=12).collect();
        for (tpid, tci) in tags {
            f.extend_from_slice(&tpid.to_be_bytes());
            f.extend_from_slice(&tci.to_be_bytes());
        }
        f.extend_from_slice(&[0x08, 0x00]);
        f.extend((0..payload_len).map(|i| i as u8));
        f
    }

    fn map() -> VlanMap {
        let mut m = VlanMap::new();
        m.insert(101, 1).unwrap();
        m.insert(4094, 7).unwrap();
        m
    }

    /// Receives `frame`: the port it enters on and the bytes the pipeline gets.
    fn receive(m: &VlanMap, frame: &RxFrame<'_>) -> Result<(u32, Vec<u8>), Refused> {
        let mut buf = [0u8; 128];
        m.receive(frame, &mut buf)
            .map(|(port, n)| (port, buf[..n].to_vec()))
    }

    fn rx<'a>(data: &'a [u8], vlan: Option<VlanTag>) -> RxFrame<'a> {
        RxFrame {
            data,
            vlan,
            orig_len: data.len() as u32,
        }
    }

    #[test]
    fn a_tag_the_kernel_removed_names_the_port_and_stays_out() {
        let untagged = wire(&[], 46);
        let got = receive(&map(), &rx(&untagged, Some(vlan_tag(101))));
        assert_eq!(got, Ok((1, untagged)));
    }

    #[test]
    fn a_tag_in_the_bytes_is_cut_out_and_an_inner_tag_stays() {
        // AF_XDP: the outer tag 101 inline (priority 1), an inner tag 5 (QinQ) behind it.
        let frame = wire(&[(0x8100, 0x2000 | 101), (0x8100, 5)], 40);
        let inner = wire(&[(0x8100, 5)], 40);
        assert_eq!(receive(&map(), &rx(&frame, None)), Ok((1, inner.clone())));
        // The kernel's form of the same frame: the outer tag in auxdata, the inner in the bytes.
        assert_eq!(
            receive(&map(), &rx(&inner, Some(vlan_tag(101)))),
            Ok((1, inner))
        );
    }

    #[test]
    fn unknown_vlans_and_untagged_frames_are_refused_without_a_native_port() {
        let m = map();
        let untagged = wire(&[], 46);
        let tagged = |tci| rx(&untagged, Some(VlanTag { tpid: 0x8100, tci }));
        assert_eq!(receive(&m, &tagged(102)), Err(Refused::UnknownVid(102)));
        assert_eq!(receive(&m, &tagged(4095)), Err(Refused::UnknownVid(4095)));
        assert_eq!(
            receive(&m, &tagged(0xe000)),
            Err(Refused::Untagged),
            "priority-tagged"
        );
        assert_eq!(receive(&m, &rx(&untagged, None)), Err(Refused::Untagged));
        let inline_unknown = wire(&[(0x8100, 102)], 40);
        assert_eq!(
            receive(&m, &rx(&inline_unknown, None)),
            Err(Refused::UnknownVid(102))
        );
        // An 802.1ad outer tag is not a trunk tag: the frame is untagged to the trunk.
        let s_tag = VlanTag {
            tpid: 0x88a8,
            tci: 101,
        };
        assert_eq!(
            receive(&m, &rx(&untagged, Some(s_tag))),
            Err(Refused::Untagged)
        );
        let s_tagged = wire(&[(0x88a8, 101)], 40);
        assert_eq!(receive(&m, &rx(&s_tagged, None)), Err(Refused::Untagged));
    }

    #[test]
    fn the_native_port_takes_untagged_and_priority_tagged_frames() {
        let mut m = map();
        m.set_native(9).unwrap();
        let untagged = wire(&[], 46);
        assert_eq!(receive(&m, &rx(&untagged, None)), Ok((9, untagged.clone())));
        let priority = wire(&[(0x8100, 0xa000)], 42);
        assert_eq!(receive(&m, &rx(&priority, None)), Ok((9, wire(&[], 42))));
        // An 802.1ad frame reaches the native port whole, its S-tag put back.
        let s_tag = VlanTag {
            tpid: 0x88a8,
            tci: 33,
        };
        assert_eq!(
            receive(&m, &rx(&untagged, Some(s_tag))),
            Ok((9, wire(&[(0x88a8, 33)], 46)))
        );
        assert_eq!(m.native(), Some(9));
    }

    #[test]
    fn a_map_refuses_bad_ids_and_double_claims() {
        let mut m = map();
        assert_eq!(m.insert(0, 2), Err(VlanMapError::BadVid(0)));
        assert_eq!(m.insert(4095, 2), Err(VlanMapError::BadVid(4095)));
        assert_eq!(m.insert(5, 0), Err(VlanMapError::BadPort));
        assert_eq!(
            m.insert(101, 2),
            Err(VlanMapError::Taken {
                vid: Some(101),
                port: 1
            })
        );
        m.set_native(3).unwrap();
        assert_eq!(
            m.set_native(4),
            Err(VlanMapError::Taken { vid: None, port: 3 })
        );
        assert_eq!((m.port_of(101), m.port_of(4094)), (Some(1), Some(7)));
        assert_eq!(
            (m.port_of(0), m.port_of(102), m.port_of(9999)),
            (None, None, None)
        );
    }

    #[test]
    fn short_and_hostile_frames_never_panic_nor_overflow() {
        let mut m = map();
        m.set_native(9).unwrap();
        // Every length from 0 to 20 bytes, tag-looking bytes or not, with and without an aux
        // tag, into buffers of every size from 0 to 24: never a panic, and a frame only when
        // it fits.
        for len in 0..=20 {
            let mut bytes: Vec<u8> = (0..len as u8).collect();
            if len >= 16 {
                bytes[12..16].copy_from_slice(&[0x81, 0x00, 0x00, 101]);
            }
            for vlan in [None, Some(vlan_tag(101)), Some(vlan_tag(4095))] {
                for cap in 0..=24 {
                    let mut buf = vec![0u8; cap];
                    match m.receive(&rx(&bytes, vlan), &mut buf) {
                        Ok((_, n)) => assert!(n <= cap && n <= len),
                        Err(Refused::TooLong) => assert!(cap < len),
                        Err(_) => {}
                    }
                }
            }
        }
    }

    #[test]
    fn a_tag_written_for_send_is_the_inverse_of_receive() {
        let inner = wire(&[(0x8100, 5)], 40);
        let mut out = [0u8; 128];
        let n = crate::frame::write_tagged(&inner, vlan_tag(4094), &mut out).unwrap();
        assert_eq!(&out[12..16], &[0x81, 0x00, 0x0f, 0xfe]);
        assert_eq!(receive(&map(), &rx(&out[..n], None)), Ok((7, inner)));
    }
}
