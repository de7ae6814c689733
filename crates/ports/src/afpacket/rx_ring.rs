//! The TPACKET_V3 receive ring: blocks of frames that the kernel hands over whole.
//!
//! The kernel fills a block, marks it `TP_STATUS_USER` and moves on; we walk its
//! frames and give it back with `TP_STATUS_KERNEL`. A block is returned only once all
//! of its frames were consumed, so frames can be borrowed straight from the ring.
//! Nothing the kernel wrote is trusted: every offset and length is checked against the
//! block before a slice is formed.

use std::mem::offset_of;
use std::sync::atomic::{fence, Ordering};

use crate::frame::VlanTag;
use crate::vnet::{VnetHeader, VNET_HDR_LEN};

const BLOCK_STATUS: usize =
    offset_of!(libc::tpacket_block_desc, hdr) + offset_of!(libc::tpacket_hdr_v1, block_status);
const BLOCK_NUM_PKTS: usize =
    offset_of!(libc::tpacket_block_desc, hdr) + offset_of!(libc::tpacket_hdr_v1, num_pkts);
const BLOCK_FIRST_PKT: usize = offset_of!(libc::tpacket_block_desc, hdr)
    + offset_of!(libc::tpacket_hdr_v1, offset_to_first_pkt);
const FRAME_HEADER_LEN: usize = size_of::<libc::tpacket3_hdr>();
const VLAN_HEADER_LEN: usize = 4;

/// A frame borrowed from the ring. The data is writable so checksums can be
/// completed in place; the block is ours until it is released.
pub(crate) struct RingFrame<'a> {
    pub(crate) data: &'a mut [u8],
    pub(crate) vlan: Option<VlanTag>,
    pub(crate) orig_len: u32,
    pub(crate) vnet: VnetHeader,
}

/// Cursor over the receive ring; the memory belongs to the port's mapping.
pub(crate) struct RxRing {
    base: *mut u8,
    block_size: usize,
    block_count: usize,
    current: usize,
    /// Set while the current block is ours (status `TP_STATUS_USER`).
    in_block: bool,
    frames_left: u32,
    offset: usize,
}

// SAFETY: the ring is only reached through `&mut self` of its single owner.
unsafe impl Send for RxRing {}

impl RxRing {
    /// # Safety
    /// `base` must point to `block_size * block_count` bytes of a TPACKET_V3 RX ring
    /// mapping that stays alive (and is not accessed elsewhere) as long as the ring.
    pub(crate) unsafe fn new(base: *mut u8, block_size: usize, block_count: usize) -> Self {
        RxRing {
            base,
            block_size,
            block_count,
            current: 0,
            in_block: false,
            frames_left: 0,
            offset: 0,
        }
    }

    fn block_ptr(&self) -> *mut u8 {
        // The index is always < block_count, so the offset stays inside the mapping.
        self.base.wrapping_add(self.current * self.block_size)
    }

    fn read_block_u32(&self, field: usize) -> u32 {
        // SAFETY: `field` is a header offset well inside the block; the header is
        // 8-byte aligned because blocks start on page boundaries.
        unsafe { std::ptr::read_volatile(self.block_ptr().add(field).cast::<u32>()) }
    }

    /// Gives the current block back to the kernel and moves to the next one.
    fn release_block(&mut self) {
        fence(Ordering::Release);
        // SAFETY: as in `read_block_u32`; the block is ours until this store.
        unsafe {
            std::ptr::write_volatile(
                self.block_ptr().add(BLOCK_STATUS).cast::<u32>(),
                libc::TP_STATUS_KERNEL,
            );
        }
        self.in_block = false;
        self.current = (self.current + 1) % self.block_count;
    }

    /// Returns the block early if all its frames were consumed, so the kernel can
    /// refill it while the caller works.
    pub(crate) fn release_if_done(&mut self) {
        if self.in_block && self.frames_left == 0 {
            self.release_block();
        }
    }

    /// The next received frame, or `None` when the kernel has nothing ready.
    /// Malformed entries are skipped and reported through `malformed`.
    pub(crate) fn next_frame(&mut self, malformed: &mut u64) -> Option<RingFrame<'_>> {
        loop {
            if !self.in_block {
                if self.read_block_u32(BLOCK_STATUS) & libc::TP_STATUS_USER == 0 {
                    return None;
                }
                fence(Ordering::Acquire);
                self.in_block = true;
                self.frames_left = self.read_block_u32(BLOCK_NUM_PKTS);
                self.offset = self.read_block_u32(BLOCK_FIRST_PKT) as usize;
            }
            if self.frames_left == 0 {
                self.release_block();
                continue;
            }
            match self.locate_frame() {
                Some(found) => {
                    self.frames_left -= 1;
                    self.offset = found.next_offset;
                    // A truncated frame (larger than a block) cannot be forwarded.
                    if found.truncated {
                        *malformed += 1;
                        continue;
                    }
                    // SAFETY: `locate_frame` checked that the range lies inside the
                    // current block, which stays ours until `release_block`, and that
                    // call needs `&mut self`, which the returned borrow prevents.
                    let data = unsafe {
                        std::slice::from_raw_parts_mut(
                            self.block_ptr().add(found.data_start),
                            found.data_len,
                        )
                    };
                    return Some(RingFrame {
                        data,
                        vlan: found.vlan,
                        orig_len: found.orig_len,
                        vnet: found.vnet,
                    });
                }
                None => {
                    *malformed += u64::from(self.frames_left);
                    self.frames_left = 0;
                }
            }
        }
    }

    /// Validates the frame header at `self.offset` and where its data lies.
    fn locate_frame(&self) -> Option<FrameLocation> {
        let header_end = self.offset.checked_add(FRAME_HEADER_LEN)?;
        if header_end > self.block_size {
            return None;
        }
        // SAFETY: the header lies inside the block (checked above); it may be
        // unaligned if the kernel misbehaved, hence `read_unaligned`.
        let hdr: libc::tpacket3_hdr = unsafe {
            std::ptr::read_unaligned(
                self.block_ptr()
                    .add(self.offset)
                    .cast::<libc::tpacket3_hdr>(),
            )
        };
        let data_start = self.offset.checked_add(usize::from(hdr.tp_mac))?;
        let data_len = hdr.tp_snaplen as usize;

        let data_end = data_start.checked_add(data_len)?;
        // The kernel puts the virtio-net header right before the frame.
        if data_start < header_end + VNET_HDR_LEN || data_end > self.block_size {
            return None;
        }
        let mut vnet_raw = [0u8; VNET_HDR_LEN];
        // SAFETY: the header lies between the frame header and the data, inside the
        // block (checked above).
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.block_ptr().add(data_start - VNET_HDR_LEN),
                vnet_raw.as_mut_ptr(),
                VNET_HDR_LEN,
            );
        }
        let next_offset = if self.frames_left > 1 {
            let next = self.offset.checked_add(hdr.tp_next_offset as usize)?;
            if hdr.tp_next_offset == 0 || next >= self.block_size {
                return None;
            }
            next
        } else {
            self.offset
        };
        let vlan = vlan_from_status(hdr.tp_status, hdr.hv1.tp_vlan_tci, hdr.hv1.tp_vlan_tpid);
        let extra = if vlan.is_some() {
            VLAN_HEADER_LEN as u32
        } else {
            0
        };
        Some(FrameLocation {
            data_start,
            data_len,
            next_offset,
            vlan,
            orig_len: hdr.tp_len.saturating_add(extra),
            vnet: VnetHeader::parse(&vnet_raw),
            truncated: hdr.tp_len != hdr.tp_snaplen,
        })
    }
}

/// The outer VLAN tag the kernel stripped, from a ring header's status and fields.
pub(crate) fn vlan_from_status(status: u32, tci: u32, tpid: u16) -> Option<VlanTag> {
    (status & libc::TP_STATUS_VLAN_VALID != 0).then_some(VlanTag {
        tpid: if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
            tpid
        } else {
            libc::ETH_P_8021Q as u16
        },
        tci: tci as u16,
    })
}

struct FrameLocation {
    data_start: usize,
    data_len: usize,
    next_offset: usize,
    vlan: Option<VlanTag>,
    orig_len: u32,
    vnet: VnetHeader,
    truncated: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOCK: usize = 4096;
    const FIRST: usize = 48;
    /// Frame header, sockaddr_ll room and the virtio-net header before the data.
    const MAC: u16 = 96;

    /// Two blocks of 8-byte aligned memory standing in for a mapped ring.
    fn ring_memory() -> Vec<u64> {
        vec![0u64; 2 * BLOCK / 8]
    }

    fn bytes(mem: &mut [u64]) -> &mut [u8] {
        // SAFETY: any u64 buffer is also a valid, writable byte buffer of 8x the length.
        unsafe { std::slice::from_raw_parts_mut(mem.as_mut_ptr().cast::<u8>(), mem.len() * 8) }
    }

    fn put_u32(mem: &mut [u64], at: usize, value: u32) {
        bytes(mem)[at..at + 4].copy_from_slice(&value.to_ne_bytes());
    }

    fn put_u16(mem: &mut [u64], at: usize, value: u16) {
        bytes(mem)[at..at + 2].copy_from_slice(&value.to_ne_bytes());
    }

    /// Writes a frame header at `offset` of block 0.
    fn frame(mem: &mut [u64], offset: usize, next: u32, mac: u16, len: u32) {
        put_u32(
            mem,
            offset + offset_of!(libc::tpacket3_hdr, tp_next_offset),
            next,
        );
        put_u32(
            mem,
            offset + offset_of!(libc::tpacket3_hdr, tp_snaplen),
            len,
        );
        put_u32(mem, offset + offset_of!(libc::tpacket3_hdr, tp_len), len);
        put_u16(mem, offset + offset_of!(libc::tpacket3_hdr, tp_mac), mac);
    }

    fn hand_over(mem: &mut [u64], frames: u32) {
        put_u32(mem, BLOCK_NUM_PKTS, frames);
        put_u32(mem, BLOCK_FIRST_PKT, FIRST as u32);
        put_u32(mem, BLOCK_STATUS, libc::TP_STATUS_USER);
    }

    fn drain(mem: &mut [u64]) -> (Vec<usize>, u64) {
        // SAFETY: `mem` holds two blocks and outlives the ring.
        let mut ring = unsafe { RxRing::new(mem.as_mut_ptr().cast(), BLOCK, 2) };
        let mut lens = Vec::new();
        let mut malformed = 0;
        while let Some(f) = ring.next_frame(&mut malformed) {
            lens.push(f.data.len());
        }
        (lens, malformed)
    }

    #[test]
    fn walks_a_block_and_gives_it_back() {
        let mut mem = ring_memory();
        frame(&mut mem, FIRST, 256, MAC, 60);
        frame(&mut mem, FIRST + 256, 0, MAC, 100);
        hand_over(&mut mem, 2);
        assert_eq!(drain(&mut mem), (vec![60, 100], 0));
        assert_eq!(
            mem[BLOCK_STATUS / 8] as u32 & libc::TP_STATUS_USER,
            0,
            "released"
        );
    }

    #[test]
    fn lengths_past_the_block_are_refused() {
        let mut mem = ring_memory();
        frame(&mut mem, FIRST, 256, MAC, 60);
        frame(&mut mem, FIRST + 256, 0, MAC, BLOCK as u32);
        hand_over(&mut mem, 2);
        assert_eq!(drain(&mut mem), (vec![60], 1));

        let mut mem = ring_memory();
        frame(&mut mem, FIRST, 0, MAC, 60);
        hand_over(&mut mem, 3);
        assert_eq!(
            drain(&mut mem),
            (vec![], 3),
            "zero next offset with frames left"
        );

        let mut mem = ring_memory();
        frame(&mut mem, FIRST, 0, 8, 60);
        hand_over(&mut mem, 1);
        assert_eq!(drain(&mut mem), (vec![], 1), "data overlapping the header");

        let mut mem = ring_memory();
        put_u32(&mut mem, BLOCK_NUM_PKTS, 5);
        put_u32(&mut mem, BLOCK_FIRST_PKT, u32::MAX);
        put_u32(&mut mem, BLOCK_STATUS, libc::TP_STATUS_USER);
        assert_eq!(
            drain(&mut mem),
            (vec![], 5),
            "first frame outside the block"
        );
    }

    #[test]
    fn truncated_frames_are_skipped_alone() {
        let mut mem = ring_memory();
        frame(&mut mem, FIRST, 256, MAC, 60);
        put_u32(
            &mut mem,
            FIRST + offset_of!(libc::tpacket3_hdr, tp_len),
            9000,
        );
        frame(&mut mem, FIRST + 256, 0, MAC, 70);
        hand_over(&mut mem, 2);
        assert_eq!(drain(&mut mem), (vec![70], 1));
    }
}
