//! The transmit ring (TPACKET_V3 or V2 slots): fixed-size slots that we fill and mark
//! `TP_STATUS_SEND_REQUEST`; one `sendto` then sends every marked slot in order.
//!
//! The kernel walks the ring from its own head and stops at the first slot that is
//! not marked, so our head must always equal the kernel's head plus the slots we
//! marked since the last kick. `reclaim_unsent` keeps that true when a kick fails.

use std::mem::offset_of;
use std::sync::atomic::{fence, Ordering};

use crate::frame::{write_tagged, VlanTag, MACS_LEN, VLAN_TAG_LEN};
use crate::vnet::VNET_HDR_LEN;

/// Where the fields of a transmit slot live for one TPACKET version.
#[derive(Clone, Copy)]
pub(crate) struct SlotLayout {
    status: usize,
    len: usize,
    snaplen: usize,
    /// `tp_next_offset`, which only V3 has (and requires to be zero).
    next_offset: Option<usize>,
    /// Where the kernel expects the frame: the header rounded up to
    /// TPACKET_ALIGNMENT (the kernel's `tp_hdrlen - sizeof(struct sockaddr_ll)`).
    pub(crate) data: usize,
}

const fn align(len: usize) -> usize {
    (len + libc::TPACKET_ALIGNMENT - 1) & !(libc::TPACKET_ALIGNMENT - 1)
}

pub(crate) const V3_SLOT: SlotLayout = SlotLayout {
    status: offset_of!(libc::tpacket3_hdr, tp_status),
    len: offset_of!(libc::tpacket3_hdr, tp_len),
    snaplen: offset_of!(libc::tpacket3_hdr, tp_snaplen),
    next_offset: Some(offset_of!(libc::tpacket3_hdr, tp_next_offset)),
    data: align(size_of::<libc::tpacket3_hdr>()),
};

pub(crate) const V2_SLOT: SlotLayout = SlotLayout {
    status: offset_of!(libc::tpacket2_hdr, tp_status),
    len: offset_of!(libc::tpacket2_hdr, tp_len),
    snaplen: offset_of!(libc::tpacket2_hdr, tp_snaplen),
    next_offset: None,
    data: align(size_of::<libc::tpacket2_hdr>()),
};

/// Why a frame could not be queued.
pub(crate) enum PushError {
    RingFull,
    TooLong,
}

/// Cursor over the transmit ring; the memory belongs to the port's mapping.
pub(crate) struct TxRing {
    layout: SlotLayout,
    base: *mut u8,
    block_size: usize,
    frame_size: usize,
    frames_per_block: usize,
    frame_count: usize,
    head: usize,
    pending: usize,
}

// SAFETY: the ring is only reached through `&mut self` of its single owner.
unsafe impl Send for TxRing {}

impl TxRing {
    /// # Safety
    /// `base` must point to a TX ring mapping of the socket's TPACKET version (whose
    /// slot `layout` is given) laid out as `block_size`-byte blocks of
    /// `frame_size`-byte slots, `frame_count` slots in all, that stays alive (and is
    /// not accessed elsewhere) as long as the ring.
    pub(crate) unsafe fn new(
        layout: SlotLayout,
        base: *mut u8,
        block_size: usize,
        frame_size: usize,
        frame_count: usize,
    ) -> Self {
        TxRing {
            layout,
            base,
            block_size,
            frame_size,
            frames_per_block: block_size / frame_size,
            frame_count,
            head: 0,
            pending: 0,
        }
    }

    /// Largest frame a slot can carry.
    pub(crate) fn max_frame_len(&self) -> usize {
        self.frame_size - self.layout.data - VNET_HDR_LEN
    }

    /// Slots marked since the last successful kick.
    pub(crate) fn pending(&self) -> usize {
        self.pending
    }

    pub(crate) fn kicked(&mut self) {
        self.pending = 0;
    }

    fn slot(&self, index: usize) -> *mut u8 {
        // `index < frame_count`, so the slot lies inside the mapping.
        let block = index / self.frames_per_block;
        let within = index % self.frames_per_block;
        self.base
            .wrapping_add(block * self.block_size + within * self.frame_size)
    }

    fn status(&self, index: usize) -> u32 {
        // SAFETY: the status word is inside slot `index`, 16-byte aligned.
        unsafe { std::ptr::read_volatile(self.slot(index).add(self.layout.status).cast::<u32>()) }
    }

    fn set_status(&mut self, index: usize, status: u32) {
        fence(Ordering::Release);
        // SAFETY: as in `status`.
        unsafe {
            std::ptr::write_volatile(
                self.slot(index).add(self.layout.status).cast::<u32>(),
                status,
            )
        }
    }

    fn is_busy(status: u32) -> bool {
        status & (libc::TP_STATUS_SEND_REQUEST | libc::TP_STATUS_SENDING) != 0
    }

    /// Copies `frame` into the next free slot, with `tag` inserted after its MAC
    /// addresses when given (in the same pass), and marks it for sending.
    pub(crate) fn push(&mut self, frame: &[u8], tag: Option<VlanTag>) -> Result<(), PushError> {
        let wire_len = match tag {
            Some(_) if frame.len() >= MACS_LEN => frame.len() + VLAN_TAG_LEN,
            _ => frame.len(),
        };
        if wire_len > self.max_frame_len() {
            return Err(PushError::TooLong);
        }
        if Self::is_busy(self.status(self.head)) {
            return Err(PushError::RingFull);
        }
        fence(Ordering::Acquire);
        let slot = self.slot(self.head);
        let len = (VNET_HDR_LEN + wire_len) as u32;
        // No offloads; `hdr_len` = the whole frame, so the kernel copies it into the
        // socket buffer instead of pointing at ring pages (which veth must copy again,
        // a page allocation per frame).
        let mut vnet = [0u8; VNET_HDR_LEN];
        let hdr_len = wire_len.min(usize::from(u16::MAX)) as u16;
        vnet[2..4].copy_from_slice(&hdr_len.to_ne_bytes());
        let layout = self.layout;
        // SAFETY: the slot is free (not owned by the kernel), the header fields and
        // `data + VNET_HDR_LEN + wire_len <= frame_size` bytes lie inside it, and nothing
        // else reads or writes it until it is marked for sending below.
        let out = unsafe {
            std::ptr::write_volatile(slot.add(layout.len).cast::<u32>(), len);
            std::ptr::write_volatile(slot.add(layout.snaplen).cast::<u32>(), len);
            if let Some(next) = layout.next_offset {
                std::ptr::write_volatile(slot.add(next).cast::<u32>(), 0);
            }
            std::ptr::copy_nonoverlapping(vnet.as_ptr(), slot.add(layout.data), VNET_HDR_LEN);
            std::slice::from_raw_parts_mut(slot.add(layout.data + VNET_HDR_LEN), wire_len)
        };
        match tag {
            Some(tag) => {
                write_tagged(frame, tag, out);
            }
            None => out.copy_from_slice(frame),
        }
        self.set_status(self.head, libc::TP_STATUS_SEND_REQUEST);
        self.head = (self.head + 1) % self.frame_count;
        self.pending += 1;
        Ok(())
    }

    /// After a kick the kernel refused (link down), takes back the slots still marked
    /// for sending so stale frames do not leave later; returns (frames, bytes).
    ///
    /// Only sound while no `sendto` runs on the socket, which `&mut self` of the port
    /// guarantees: the kernel reads the ring only inside that call.
    pub(crate) fn reclaim_unsent(&mut self) -> (u64, u64) {
        let (mut frames, mut bytes) = (0u64, 0u64);
        for _ in 0..self.frame_count {
            let prev = (self.head + self.frame_count - 1) % self.frame_count;
            if self.status(prev) != libc::TP_STATUS_SEND_REQUEST {
                break;
            }
            // SAFETY: the slot is marked but not yet taken by the kernel.
            let len = unsafe {
                std::ptr::read_volatile(self.slot(prev).add(self.layout.len).cast::<u32>())
            };
            self.set_status(prev, libc::TP_STATUS_AVAILABLE);
            self.head = prev;
            frames += 1;
            bytes += u64::from(len).saturating_sub(VNET_HDR_LEN as u64);
        }
        self.pending = 0;
        (frames, bytes)
    }
}
