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
use crate::offload::{VnetHeader, VNET_HDR_LEN};

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
