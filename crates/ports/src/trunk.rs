//! 802.1Q trunks split into logical ports, for HARMLESS (seed 000): a legacy switch tags
//! each access port's frames with that port's VLAN id and sends them over a trunk; here each
//! VLAN id of a trunk is an OpenFlow port of its own.
//!
//! On receive, [`VlanMap::demux`] reads a frame's outer 802.1Q tag (from the kernel's
//! PACKET_AUXDATA on AF_PACKET, from the bytes on AF_XDP) and names the logical port of its
//! VLAN id; [`copy_untagged`] writes the frame into the datapath's batch without that tag, in
//! the copy the receive path makes anyway. On send, the logical port's tag is inserted in the
//! copy into the transmit ring ([`crate::PacketPort::send_tagged`], [`vlan_tag`]). So the
//! pipeline sees only logical ports and untagged frames, and runs once per packet: the
//! paper's transparent setup needs a second software switch for this (S4).
//!
//! An inner tag (a host's own, QinQ, or one a controller pushed) is part of the frame and
//! passes untouched both ways. Only TPID 0x8100 is a trunk tag: an outer tag of another TPID
//! (802.1ad) leaves the frame untagged as far as the trunk goes. Untagged frames and
//! priority-tagged ones (VID 0) belong to the trunk's native VLAN; they go to the native
//! port when one is configured and are dropped otherwise, as are frames of VLAN ids no
//! logical port has (the caller counts each kind, [`Demux`]).
//!
//! Per packet: one table load, no allocation, no panic; every length is checked.

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

/// Where the outer trunk tag of a received frame is, so the copy can leave it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OuterTag {
    /// No trunk tag: the frame is copied as it was on the wire (an outer tag of another
    /// TPID that the kernel removed is put back).
    None,
    /// The kernel removed it (PACKET_AUXDATA): the bytes are copied as they are.
    Removed,
    /// It is in the bytes, after the MAC addresses (AF_XDP): copied around.
    InFrame,
}

/// What a trunk does with one received frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Demux {
    /// It enters the pipeline on logical port `port`, without its trunk tag.
    Port { port: u32, tag: OuterTag },
    /// Tagged with a VLAN id that no logical port has: dropped.
    UnknownVid(u16),
    /// Untagged (or priority-tagged) on a trunk without a native port: dropped.
    Untagged,
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

    /// Where a frame received on the trunk goes.
    #[inline]
    pub fn demux(&self, frame: &RxFrame<'_>) -> Demux {
        let (vid, tag) = match frame.vlan {
            Some(t) if t.tpid == TRUNK_TPID => (t.tci & VID_MASK, OuterTag::Removed),
            Some(_) => (0, OuterTag::None),
            None => match tag_in_frame(frame.data) {
                Some(tci) => (tci & VID_MASK, OuterTag::InFrame),
                None => (0, OuterTag::None),
            },
        };
        // `vid` is 12 bits: always inside the table.
        match self.ports[usize::from(vid & VID_MASK)] {
            0 if vid == 0 => Demux::Untagged,
            0 => Demux::UnknownVid(vid),
            port => Demux::Port { port, tag },
        }
    }
}

/// The TCI of a trunk tag in the bytes after the MACs, read as one word.
#[inline(always)]
fn tag_in_frame(data: &[u8]) -> Option<u16> {
    let word = u32::from_be_bytes(*data.get(MACS_LEN..)?.first_chunk::<VLAN_TAG_LEN>()?);
    (word >> 16 == u32::from(TRUNK_TPID)).then_some(word as u16)
}

/// Writes `frame` into `dst` without its outer trunk tag (`tag` from [`VlanMap::demux`]);
/// the length written, or `None` if `dst` is too small.
#[inline]
pub fn copy_untagged(frame: &RxFrame<'_>, tag: OuterTag, dst: &mut [u8]) -> Option<usize> {
    match tag {
        OuterTag::None => frame.copy_restored(dst),
        OuterTag::Removed => {
            let out = dst.get_mut(..frame.data.len())?;
            out.copy_from_slice(frame.data);
            Some(out.len())
        }
        OuterTag::InFrame => {
            let macs = frame.data.first_chunk::<MACS_LEN>()?;
            let rest = frame.data.get(MACS_LEN + VLAN_TAG_LEN..)?;
            let out = dst.get_mut(..MACS_LEN + rest.len())?;
            let (out_macs, out_rest) = out.split_first_chunk_mut::<MACS_LEN>()?;
            *out_macs = *macs;
            out_rest.copy_from_slice(rest);
            Some(out.len())
        }
    }
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

    /// Demuxes `frame` and copies it out: (where it went, the bytes the pipeline gets).
    fn receive(m: &VlanMap, frame: &RxFrame<'_>) -> (Demux, Option<Vec<u8>>) {
        let d = m.demux(frame);
        let bytes = match d {
            Demux::Port { tag, .. } => {
                let mut buf = [0u8; 128];
                let n = copy_untagged(frame, tag, &mut buf).expect("fits");
                Some(buf[..n].to_vec())
            }
            _ => None,
        };
        (d, bytes)
    }

    #[test]
    fn a_tag_the_kernel_removed_names_the_port_and_stays_out() {
        let untagged = wire(&[], 46);
        let frame = RxFrame {
            data: &untagged,
            vlan: Some(vlan_tag(101)),
            orig_len: 64,
        };
        let (d, bytes) = receive(&map(), &frame);
        assert_eq!(
            d,
            Demux::Port {
                port: 1,
                tag: OuterTag::Removed
            }
        );
        assert_eq!(bytes.unwrap(), untagged);
    }

    #[test]
    fn a_tag_in_the_bytes_is_cut_out_and_an_inner_tag_stays() {
        // AF_XDP: the outer tag 101 inline, an inner tag 5 (QinQ) behind it.
        let frame_bytes = wire(&[(0x8100, 0x2000 | 101), (0x8100, 5)], 40);
        let frame = RxFrame {
            data: &frame_bytes,
            vlan: None,
            orig_len: frame_bytes.len() as u32,
        };
        let (d, bytes) = receive(&map(), &frame);
        assert_eq!(
            d,
            Demux::Port {
                port: 1,
                tag: OuterTag::InFrame
            },
            "the priority bits do not change the VLAN"
        );
        assert_eq!(bytes.unwrap(), wire(&[(0x8100, 5)], 40));
        // The kernel's form of the same frame: the outer tag in auxdata, the inner in the bytes.
        let inner = wire(&[(0x8100, 5)], 40);
        let frame = RxFrame {
            data: &inner,
            vlan: Some(vlan_tag(101)),
            orig_len: 68,
        };
        assert_eq!(receive(&map(), &frame).1.unwrap(), inner);
    }

    #[test]
    fn unknown_vlans_and_untagged_frames_are_refused_without_a_native_port() {
        let m = map();
        let untagged = wire(&[], 46);
        let tagged = |tci| RxFrame {
            data: &untagged,
            vlan: Some(VlanTag { tpid: 0x8100, tci }),
            orig_len: 64,
        };
        assert_eq!(m.demux(&tagged(102)).clone(), Demux::UnknownVid(102));
        assert_eq!(m.demux(&tagged(4095)), Demux::UnknownVid(4095));
        assert_eq!(m.demux(&tagged(0)), Demux::Untagged, "priority-tagged");
        let plain = RxFrame {
            data: &untagged,
            vlan: None,
            orig_len: 60,
        };
        assert_eq!(m.demux(&plain), Demux::Untagged);
        // An 802.1ad outer tag is not a trunk tag: the frame is untagged to the trunk.
        let s_tagged = RxFrame {
            data: &untagged,
            vlan: Some(VlanTag {
                tpid: 0x88a8,
                tci: 101,
            }),
            orig_len: 64,
        };
        assert_eq!(m.demux(&s_tagged), Demux::Untagged);
    }

    #[test]
    fn the_native_port_takes_untagged_and_priority_tagged_frames() {
        let mut m = map();
        m.set_native(9).unwrap();
        let untagged = wire(&[], 46);
        let plain = RxFrame {
            data: &untagged,
            vlan: None,
            orig_len: 60,
        };
        let (d, bytes) = receive(&m, &plain);
        assert_eq!(
            d,
            Demux::Port {
                port: 9,
                tag: OuterTag::None
            }
        );
        assert_eq!(bytes.unwrap(), untagged);
        let priority = wire(&[(0x8100, 0xa000)], 42);
        let frame = RxFrame {
            data: &priority,
            vlan: None,
            orig_len: 64,
        };
        assert_eq!(receive(&m, &frame).1.unwrap(), wire(&[], 42));
        // An 802.1ad frame reaches the native port whole, its S-tag put back.
        let s_tagged = RxFrame {
            data: &untagged,
            vlan: Some(VlanTag {
                tpid: 0x88a8,
                tci: 33,
            }),
            orig_len: 64,
        };
        assert_eq!(receive(&m, &s_tagged).1.unwrap(), wire(&[(0x88a8, 33)], 46));
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
    fn short_and_hostile_frames_never_panic() {
        let mut m = map();
        m.set_native(9).unwrap();
        // Every length from 0 to 20 bytes, tag-looking bytes or not, with and without an
        // aux tag, into buffers of every size from 0 to 24: never a panic, never a copy past
        // the buffer, and a result only when it fits.
        for len in 0..=20 {
            let mut bytes: Vec<u8> = (0..len as u8).collect();
            if len >= 16 {
                bytes[12..16].copy_from_slice(&[0x81, 0x00, 0x00, 101]);
            }
            for vlan in [None, Some(vlan_tag(101)), Some(vlan_tag(4095))] {
                let frame = RxFrame {
                    data: &bytes,
                    vlan,
                    orig_len: len as u32,
                };
                let d = m.demux(&frame);
                for cap in 0..=24 {
                    let mut buf = vec![0u8; cap];
                    if let Demux::Port { tag, .. } = d {
                        if let Some(n) = copy_untagged(&frame, tag, &mut buf) {
                            assert!(n <= cap);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_tag_written_for_send_is_the_inverse_of_demux() {
        let inner = wire(&[(0x8100, 5)], 40);
        let mut out = [0u8; 128];
        let n = crate::frame::write_tagged(&inner, vlan_tag(4094), &mut out).unwrap();
        let frame = RxFrame {
            data: &out[..n],
            vlan: None,
            orig_len: n as u32,
        };
        let (d, bytes) = receive(&map(), &frame);
        assert_eq!(
            d,
            Demux::Port {
                port: 7,
                tag: OuterTag::InFrame
            }
        );
        assert_eq!(bytes.unwrap(), inner);
    }
}
