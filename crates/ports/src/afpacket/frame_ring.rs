//! The TPACKET_V2 receive ring: one slot per frame, handed over as soon as the kernel
//! has written it, so a frame waits for no block timeout (the low-latency choice).
//!
//! A frame larger than a slot (a GSO super-frame from a local stack) is truncated in
//! the ring; with PACKET_COPY_THRESH the kernel also queues it whole on the socket and
//! flags the slot `TP_STATUS_COPY`, and we read it from there.

use std::os::fd::RawFd;
use std::sync::atomic::{fence, Ordering};

use super::rx_ring::{vlan_from_status, RingFrame};
use crate::sys;
use crate::vnet::{VnetHeader, MAX_GSO_FRAME, VNET_HDR_LEN};

const SLOT_HEADER_LEN: usize = size_of::<libc::tpacket2_hdr>();

/// What the current slot holds.
enum Slot {
    /// Unusable: counted and skipped.
    Bad,
    /// The frame is in the ring at `start..start + len`.
    InRing {
        start: usize,
        len: usize,
        hdr: libc::tpacket2_hdr,
        vnet: VnetHeader,
    },
    /// The frame was read whole from the socket into `overflow[..len]`.
    Copied { len: usize, hdr: libc::tpacket2_hdr },
}

/// Cursor over the receive ring; the memory belongs to the port's mapping.
pub(crate) struct FrameRing {
    base: *mut u8,
    block_size: usize,
    frame_size: usize,
    frames_per_block: usize,
    frame_count: usize,
    current: usize,
    /// Set while the current slot is lent out; it is returned on the next call.
    held: bool,
    fd: RawFd,
    /// Receives frames too large for a slot (virtio-net header first).
    overflow: Box<[u8]>,
}

// SAFETY: the ring is only reached through `&mut self` of its single owner.
unsafe impl Send for FrameRing {}

impl FrameRing {
    /// # Safety
    /// `base` must point to a TPACKET_V2 RX ring mapping of `block_size`-byte blocks
    /// of `frame_size`-byte slots, `frame_count` in all, that stays alive (and is not
    /// accessed elsewhere) as long as the ring; `fd` is the ring's socket.
    pub(crate) unsafe fn new(
        base: *mut u8,
        block_size: usize,
        frame_size: usize,
        frame_count: usize,
        fd: RawFd,
    ) -> Self {
        FrameRing {
            base,
            block_size,
            frame_size,
            frames_per_block: block_size / frame_size,
            frame_count,
            current: 0,
            held: false,
            fd,
            overflow: vec![0; MAX_GSO_FRAME + VNET_HDR_LEN].into_boxed_slice(),
        }
    }

    fn slot(&self) -> *mut u8 {
        // `current < frame_count`, so the slot lies inside the mapping.
        let block = self.current / self.frames_per_block;
        let within = self.current % self.frames_per_block;
        self.base
            .wrapping_add(block * self.block_size + within * self.frame_size)
    }

    fn status_ptr(&self) -> *mut u32 {
        self.slot()
            .wrapping_add(std::mem::offset_of!(libc::tpacket2_hdr, tp_status))
            .cast()
    }

    /// Returns the lent slot to the kernel.
    pub(crate) fn release_if_done(&mut self) {
        if self.held {
            fence(Ordering::Release);
            // SAFETY: the status word of a slot inside the mapping, 16-byte aligned.
            unsafe { std::ptr::write_volatile(self.status_ptr(), libc::TP_STATUS_KERNEL) };
            self.held = false;
            self.current = (self.current + 1) % self.frame_count;
        }
    }

    /// The next received frame, or `None` when the kernel has nothing ready.
    pub(crate) fn next_frame(&mut self, malformed: &mut u64) -> Option<RingFrame<'_>> {
        let slot = loop {
            self.release_if_done();
            // SAFETY: as in `release_if_done`.
            let status = unsafe { std::ptr::read_volatile(self.status_ptr()) };
            if status & libc::TP_STATUS_USER == 0 {
                return None;
            }
            fence(Ordering::Acquire);
            self.held = true;
            match self.inspect(status) {
                Slot::Bad => *malformed += 1,
                found => break found,
            }
        };
        let (data, hdr, vnet) = match slot {
            Slot::InRing {
                start,
                len,
                hdr,
                vnet,
            } => {
                // SAFETY: `inspect` checked that the range lies inside the slot, which
                // stays ours until `release_if_done`, and that needs `&mut self`.
                let data = unsafe { std::slice::from_raw_parts_mut(self.slot().add(start), len) };
                (data, hdr, vnet)
            }
            Slot::Copied { len, hdr } => {
                let (vnet_raw, frame) = self.overflow.get_mut(..len)?.split_at_mut(VNET_HDR_LEN);
                let vnet = VnetHeader::parse(&<[u8; VNET_HDR_LEN]>::try_from(&*vnet_raw).ok()?);
                (frame, hdr, vnet)
            }
            Slot::Bad => return None,
        };
        let vlan = vlan_from_status(hdr.tp_status, u32::from(hdr.tp_vlan_tci), hdr.tp_vlan_tpid);
        let orig_len = hdr
            .tp_len
            .saturating_add(if vlan.is_some() { 4 } else { 0 });
        Some(RingFrame {
            data,
            vlan,
            orig_len,
            vnet,
        })
    }

    /// Validates the current slot, fetching the frame from the socket if it was
    /// too large for the slot.
    fn inspect(&mut self, status: u32) -> Slot {
        // SAFETY: the header lies at the start of the slot, inside the mapping.
        let hdr: libc::tpacket2_hdr = unsafe { std::ptr::read_unaligned(self.slot().cast()) };
        if status & libc::TP_STATUS_COPY != 0 {
            return match sys::recv_dontwait(self.fd, &mut self.overflow) {
                Ok(Some(len)) if len > VNET_HDR_LEN && len < self.overflow.len() => {
                    Slot::Copied { len, hdr }
                }
                _ => Slot::Bad,
            };
        }
        let start = usize::from(hdr.tp_mac);
        let len = hdr.tp_snaplen as usize;
        let Some(end) = start.checked_add(len) else {
            return Slot::Bad;
        };
        // A truncated frame (larger than a slot, not copied) cannot be forwarded.
        if start < SLOT_HEADER_LEN + VNET_HDR_LEN
            || end > self.frame_size
            || hdr.tp_len != hdr.tp_snaplen
        {
            return Slot::Bad;
        }
        let mut vnet_raw = [0u8; VNET_HDR_LEN];
        // SAFETY: the virtio-net header lies right before the frame, after the slot
        // header (checked above).
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.slot().add(start - VNET_HDR_LEN),
                vnet_raw.as_mut_ptr(),
                VNET_HDR_LEN,
            );
        }
        Slot::InRing {
            start,
            len,
            hdr,
            vnet: VnetHeader::parse(&vnet_raw),
        }
    }
}
