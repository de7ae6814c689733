//! A packet being rewritten: a frame inside a buffer with headroom in front of it, so
//! pushes move only the bytes before the new header.

/// Shortest Ethernet frame without its FCS.
const ETH_MIN_FRAME: usize = 60;

/// A frame at `start..start + len` of `buf`.
///
/// Invariant: `start + len <= buf.len()`. The constructor checks it and every method that
/// moves the frame keeps it, which is what lets [`Frame::bytes`] and [`Frame::bytes_mut`]
/// (called for every action) skip the range check. Reads and writes inside the frame are
/// still checked against `len`: frames may be shorter than the header an action expects.
#[derive(Debug)]
pub(crate) struct Frame<'b> {
    buf: &'b mut [u8],
    start: usize,
    len: usize,
}

impl<'b> Frame<'b> {
    /// The frame at `start..start + len` of `buf`, if that lies inside it.
    #[inline(always)]
    pub fn new(buf: &'b mut [u8], start: usize, len: usize) -> Option<Self> {
        let end = start.checked_add(len)?;
        (end <= buf.len()).then_some(Frame { buf, start, len })
    }

    /// Where the frame starts in its buffer.
    #[inline(always)]
    pub fn start(&self) -> usize {
        self.start
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `start + len <= buf.len()` (the type's invariant).
        unsafe { self.buf.get_unchecked(self.start..self.start + self.len) }
    }

    #[inline(always)]
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `start + len <= buf.len()` (the type's invariant).
        unsafe {
            self.buf
                .get_unchecked_mut(self.start..self.start + self.len)
        }
    }

    /// `N` bytes at offset `at` of the frame.
    pub fn get_at<const N: usize>(&self, at: usize) -> Option<[u8; N]> {
        self.bytes().get(at..)?.first_chunk::<N>().copied()
    }

    /// Writes `data` at offset `at`; false (nothing written) when it does not fit.
    pub fn put(&mut self, at: usize, data: &[u8]) -> bool {
        match self.bytes_mut().get_mut(at..at + data.len()) {
            Some(dst) => {
                dst.copy_from_slice(data);
                true
            }
            None => false,
        }
    }

    /// Writes a MAC address at `at` (0 = destination, 6 = source).
    #[inline(always)]
    pub fn put_mac(&mut self, at: usize, mac: [u8; 6]) {
        if let Some(dst) = self
            .bytes_mut()
            .get_mut(at..)
            .and_then(|b| b.first_chunk_mut::<6>())
        {
            *dst = mac;
        }
    }

    /// The big-endian 16-bit word at `at`.
    pub fn get16(&self, at: usize) -> Option<u16> {
        self.get_at::<2>(at).map(u16::from_be_bytes)
    }

    /// Opens `n` bytes at offset `at` by moving the first `at` bytes into the headroom.
    pub fn insert_gap(&mut self, at: usize, n: usize) -> bool {
        if self.start < n || at > self.len {
            return false;
        }
        self.buf
            .copy_within(self.start..self.start + at, self.start - n);
        self.start -= n;
        self.len += n;
        true
    }

    /// Removes `n` bytes at offset `at` by moving the first `at` bytes forward.
    pub fn remove_gap(&mut self, at: usize, n: usize) -> bool {
        if at + n > self.len {
            return false;
        }
        self.buf
            .copy_within(self.start..self.start + at, self.start + n);
        self.start += n;
        self.len -= n;
        true
    }

    /// Drops the first `n` bytes (a decapsulated outer header).
    pub fn remove_front(&mut self, n: usize) -> bool {
        if n > self.len {
            return false;
        }
        self.start += n;
        self.len -= n;
        true
    }

    /// Zero-pads a frame that a pop left shorter than the Ethernet minimum back to it, as a
    /// NIC pads on transmit (virtual links such as veth do not, and a receiver compares the
    /// padded frame).
    pub fn pad_to_minimum(&mut self) {
        if self.len >= ETH_MIN_FRAME {
            return;
        }
        let end = self.start + self.len;
        if let Some(pad) = self.buf.get_mut(end..self.start + ETH_MIN_FRAME) {
            pad.fill(0);
            self.len = ETH_MIN_FRAME;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_stay_inside_their_buffer() {
        let mut buf = [0u8; 80];
        assert!(Frame::new(&mut buf, 70, 11).is_none());
        assert!(Frame::new(&mut buf, usize::MAX, 2).is_none());
        let mut f = Frame::new(&mut buf, 8, 64).expect("fits");
        assert!(!f.insert_gap(0, 9), "no headroom for 9 bytes");
        assert!(f.insert_gap(12, 8));
        assert_eq!((f.start(), f.len()), (0, 72));
        assert!(!f.remove_gap(70, 4));
        assert!(f.remove_front(30));
        assert_eq!((f.start(), f.len(), f.bytes().len()), (30, 42, 42));
        f.pad_to_minimum();
        assert_eq!(f.len(), 42, "no room in the buffer to pad: left as it is");
        f.put_mac(40, [1; 6]);
        assert_eq!(
            f.get_at::<2>(40),
            Some([0, 0]),
            "a write past the end is refused"
        );
        f.put_mac(36, [7; 6]);
        assert_eq!(f.get16(40), Some(0x0707));
        assert_eq!(f.get16(41), None);
        let mut buf = [0u8; 100];
        let mut f = Frame::new(&mut buf, 20, 40).expect("fits");
        f.pad_to_minimum();
        assert_eq!(f.bytes().len(), 60);
    }
}
