//! The UMEM: one anonymous mapping split into equal chunks shared with the kernel.
//! Every address read from a ring goes through [`UmemArea::rx_frame`] or
//! [`UmemArea::tx_chunk`], which check it against the mapping and the chunk layout.

use std::io;
use std::ptr::NonNull;

/// A page-aligned anonymous mapping, unmapped on drop.
pub(super) struct UmemArea {
    ptr: NonNull<u8>,
    len: usize,
    frame_size: u64,
    /// Chunks below this offset receive, the rest transmit.
    rx_end: u64,
}

// SAFETY: the mapping is plain memory owned by this value; the port that owns it is
// used by one thread at a time.
unsafe impl Send for UmemArea {}

impl UmemArea {
    /// Maps `len` bytes of chunks of `frame_size`; the first `rx_end` bytes receive.
    pub(super) fn new(len: usize, frame_size: u32, rx_end: u64) -> io::Result<Self> {
        // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(crate::sys::last_error(format!("mmap UMEM of {len} bytes")));
        }
        let ptr =
            NonNull::new(ptr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(UmemArea {
            ptr,
            len,
            frame_size: u64::from(frame_size),
            rx_end,
        })
    }

    /// The whole area, for registering it with the kernel.
    pub(super) fn as_slice_ptr(&self) -> NonNull<[u8]> {
        NonNull::slice_from_raw_parts(self.ptr, self.len)
    }

    /// The start of the chunk that holds `addr`.
    pub(super) fn chunk_of(&self, addr: u64) -> u64 {
        addr - addr % self.frame_size
    }

    /// The received bytes a descriptor names, if they lie inside one receive chunk.
    pub(super) fn rx_frame(&self, addr: u64, len: u32) -> Option<&[u8]> {
        let end = addr.checked_add(u64::from(len))?;
        if end > self.rx_end || addr % self.frame_size + u64::from(len) > self.frame_size {
            return None;
        }
        // SAFETY: `addr..end` lies inside the mapping (checked above); the kernel wrote
        // this chunk before publishing its descriptor and does not touch it again until
        // it is handed back through the fill ring, which happens after the borrow ends.
        Some(unsafe {
            std::slice::from_raw_parts(self.ptr.as_ptr().add(addr as usize), len as usize)
        })
    }

    /// Whether `addr` is the start of a transmit chunk.
    pub(super) fn is_tx_chunk(&self, addr: u64) -> bool {
        addr >= self.rx_end
            && addr.is_multiple_of(self.frame_size)
            && addr
                .checked_add(self.frame_size)
                .is_some_and(|end| end <= self.len as u64)
    }

    /// A whole transmit chunk for writing a frame; `None` if `addr` is not the start
    /// of one.
    pub(super) fn tx_chunk(&mut self, addr: u64) -> Option<&mut [u8]> {
        if !self.is_tx_chunk(addr) {
            return None;
        }
        // SAFETY: the chunk lies inside the mapping (checked above) and is owned by
        // user space: it came from the free list, not from a ring the kernel reads.
        Some(unsafe {
            std::slice::from_raw_parts_mut(
                self.ptr.as_ptr().add(addr as usize),
                self.frame_size as usize,
            )
        })
    }
}

impl Drop for UmemArea {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the region mapped in `new`; the sockets that
        // registered it are closed before this field is dropped.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_outside_a_chunk_are_refused() {
        let area = UmemArea::new(6 * 2048, 2048, 4 * 2048).unwrap();
        assert_eq!(area.rx_frame(256, 60).map(<[u8]>::len), Some(60));
        assert_eq!(
            area.rx_frame(3 * 2048 + 256, 1792).map(<[u8]>::len),
            Some(1792)
        );
        assert!(
            area.rx_frame(3 * 2048 + 256, 1793).is_none(),
            "crosses chunk end"
        );
        assert!(area.rx_frame(4 * 2048, 1).is_none(), "a transmit chunk");
        assert!(area.rx_frame(7 * 2048, 1).is_none(), "past the area");
        assert!(
            area.rx_frame(u64::MAX - 2, 60).is_none(),
            "overflowing address"
        );
        assert_eq!(area.chunk_of(2048 + 300), 2048);
    }

    #[test]
    fn tx_chunks_must_be_aligned_and_inside() {
        let mut area = UmemArea::new(6 * 2048, 2048, 4 * 2048).unwrap();
        assert_eq!(area.tx_chunk(5 * 2048).map(|c| c.len()), Some(2048));
        assert!(area.tx_chunk(4 * 2048 + 1).is_none(), "unaligned");
        assert!(area.tx_chunk(2048).is_none(), "a receive chunk");
        assert!(area.tx_chunk(6 * 2048).is_none(), "past the area");
    }
}
