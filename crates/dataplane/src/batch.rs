//! Packet batches in, outputs and packet-in events out.

/// Why a packet goes to the controller (`ofp_packet_in_reason`).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketInReason {
    /// Matched a table-miss flow entry (priority 0, match-all).
    NoMatch = 0,
    /// An explicit output to CONTROLLER.
    Action = 1,
    /// The packet's TTL expired (only when the switch config asks for it).
    InvalidTtl = 2,
}

/// `buffer_id` meaning "not buffered, the whole packet is in `data`".
pub const NO_BUFFER: u32 = 0xffff_ffff;

/// A packet for the controller. `data` is the packet as it was when the output happened,
/// cut to `max_len` when it was buffered.
#[derive(Debug)]
pub struct PacketInEvent<'a> {
    pub reason: PacketInReason,
    pub table_id: u8,
    /// The cookie of the flow entry whose action sent the packet (all-ones for packet-outs
    /// and InSP-generated packets, which no entry sent).
    pub cookie: u64,
    pub buffer_id: u32,
    /// Length of the whole frame.
    pub total_len: u16,
    pub in_port: u32,
    pub in_phy_port: u32,
    pub metadata: u64,
    pub tunnel_id: u64,
    pub data: &'a [u8],
}

/// Where the datapath delivers its results. Frames are borrowed: copy them before returning.
pub trait PacketSink {
    /// Transmit `frame` on `port` (a port number or [`crate::ir::port::LOCAL`]).
    fn output(&mut self, port: u32, frame: &[u8]);

    /// Transmit on `port` through `queue` (set by SetQueue); defaults to [`Self::output`].
    fn output_queue(&mut self, port: u32, queue: u32, frame: &[u8]) {
        let _ = queue;
        self.output(port, frame);
    }

    /// Deliver a packet-in to the controller.
    fn packet_in(&mut self, ev: &PacketInEvent<'_>);
}

/// Headroom in front of every packet so pushes (VLAN 4, MPLS 4, PBB 18 bytes) move only the
/// Ethernet header.
pub const DEFAULT_HEADROOM: usize = 64;
/// Largest frame a batch slot holds by default (jumbo frames).
pub const DEFAULT_MAX_FRAME: usize = 9216;
/// Packets a receive burst hands the datapath: the daemon's batch, and the batch the Table II
/// benchmark measures with. A larger burst spreads the costs of each table's stage over more
/// packets: against bursts of 64, 256 ran most Table II cells 2 to 10% faster (L2 and L3 at
/// 100K flows within their noise), and 64 the multi-table pipelines up to 7% faster than 32.
/// 256 is a whole window of the pipeline, and VPP's vector size. A burst only fills under
/// load: the daemon never waits for one.
pub const BURST: usize = 256;
/// The alignment of the first slot.
const CACHE_LINE: usize = 64;

/// Where one packet of a batch lives: its slot's buffer holds the frame at `start`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Slot {
    pub in_port: u32,
    pub start: u32,
    pub len: u32,
}

/// A preallocated batch of packets (filled by the receiver, consumed by
/// [`crate::datapath::DatapathReader::process`]). Filling and processing never allocate.
#[derive(Debug)]
pub struct PacketBatch {
    /// The slots' buffers, from `origin` on.
    data: Box<[u8]>,
    /// Where the first slot starts in `data`: the first cache-line boundary, so a frame at a
    /// line-aligned offset of its slot spans as few lines as its length needs.
    origin: usize,
    slots: Box<[Slot]>,
    count: usize,
    slot_size: usize,
    headroom: usize,
}

impl PacketBatch {
    /// A batch of `capacity` packets of up to `max_frame` bytes each.
    pub fn new(capacity: usize, max_frame: usize) -> Self {
        Self::with_headroom(capacity, max_frame, DEFAULT_HEADROOM)
    }

    pub fn with_headroom(capacity: usize, max_frame: usize, headroom: usize) -> Self {
        let capacity = capacity.max(1);
        let slot_size = headroom + max_frame;
        let data = vec![0; capacity * slot_size + CACHE_LINE - 1].into_boxed_slice();
        // The heap buffer of a boxed slice never moves, so the offset stays right.
        let origin = data.as_ptr().align_offset(CACHE_LINE).min(CACHE_LINE - 1);
        PacketBatch {
            data,
            origin,
            slots: vec![Slot::default(); capacity].into_boxed_slice(),
            count: 0,
            slot_size,
            headroom,
        }
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn is_full(&self) -> bool {
        self.count == self.slots.len()
    }

    pub fn clear(&mut self) {
        self.count = 0;
    }

    /// Largest frame a slot holds.
    pub fn max_frame(&self) -> usize {
        self.slot_size - self.headroom
    }

    /// Copies a frame in; false when the batch is full or the frame too large.
    pub fn push(&mut self, in_port: u32, frame: &[u8]) -> bool {
        self.push_with(in_port, |buf| match buf.get_mut(..frame.len()) {
            Some(dst) => {
                dst.copy_from_slice(frame);
                frame.len()
            }
            None => 0,
        }) && !frame.is_empty()
    }

    /// Lets `fill` write a frame straight into the next slot (zero-copy receive) and return
    /// its length; false (and nothing added) when full or `fill` returns 0 or too much.
    pub fn push_with(&mut self, in_port: u32, fill: impl FnOnce(&mut [u8]) -> usize) -> bool {
        self.push_from(|buf| Some((in_port, fill(buf))))
    }

    /// Lets `fill` write a frame into the next slot and name the port it entered on (a
    /// trunk's frame learns its port as it is copied); false (and nothing added) when full or
    /// `fill` returns `None`, a length of 0 or too much.
    pub fn push_from(&mut self, fill: impl FnOnce(&mut [u8]) -> Option<(u32, usize)>) -> bool {
        if self.is_full() {
            return false;
        }
        let (base, start, max) = (self.slot_base(self.count), self.headroom, self.max_frame());
        let Some(buf) = self.data.get_mut(base + start..base + start + max) else {
            return false;
        };
        let Some((in_port, len)) = fill(buf) else {
            return false;
        };
        if len == 0 || len > max {
            return false;
        }
        if let Some(s) = self.slots.get_mut(self.count) {
            *s = Slot {
                in_port,
                start: start as u32,
                len: len as u32,
            };
            self.count += 1;
            return true;
        }
        false
    }

    /// The `i`th packet's ingress port and frame.
    pub fn packet(&self, i: usize) -> Option<(u32, &[u8])> {
        self.received(i).map(|(slot, frame)| (slot.in_port, frame))
    }

    /// The `i`th packet's ingress port and frame, to rewrite in place.
    pub fn packet_mut(&mut self, i: usize) -> Option<(u32, &mut [u8])> {
        let (slot, at) = self.frame_at(i)?;
        Some((slot.in_port, self.data.get_mut(at)?))
    }

    /// Where the `i`th packet lives, and where its frame lies in `data`.
    #[inline(always)]
    fn frame_at(&self, i: usize) -> Option<(Slot, core::ops::Range<usize>)> {
        let s = *self.slots.get(..self.count)?.get(i)?;
        let start = self.slot_base(i) + s.start as usize;
        Some((s, start..start + s.len as usize))
    }

    /// Where slot `i`'s buffer starts in `data`.
    #[inline(always)]
    fn slot_base(&self, i: usize) -> usize {
        self.origin + i * self.slot_size
    }

    /// Where the `i`th packet lives, and its frame.
    #[inline(always)]
    pub(crate) fn received(&self, i: usize) -> Option<(Slot, &[u8])> {
        let (slot, at) = self.frame_at(i)?;
        Some((slot, self.data.get(at)?))
    }

    /// The whole buffer of slot `i` (headroom included).
    #[inline(always)]
    pub(crate) fn slot_buffer_mut(&mut self, i: usize) -> Option<&mut [u8]> {
        let base = self.slot_base(i);
        self.data.get_mut(base..base + self.slot_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_start_on_cache_lines_and_keep_their_bytes() {
        for capacity in [1, 3, 32] {
            let mut batch = PacketBatch::new(capacity, 2048);
            for i in 0..capacity {
                let frame = [i as u8; 64];
                assert!(batch.push(i as u32, &frame));
            }
            assert!(!batch.push(0, &[0; 64]), "a full batch takes no more");
            for i in 0..capacity {
                let (port, frame) = batch.packet(i).expect("pushed");
                assert_eq!(port, i as u32);
                assert_eq!(frame, &[i as u8; 64]);
                // Headroom and slot size are multiples of a line: one line per 64-byte frame.
                assert_eq!(frame.as_ptr() as usize % CACHE_LINE, 0, "slot {i}");
            }
        }
    }

    #[test]
    fn a_frame_rewritten_in_place_changes_only_its_slot() {
        let mut batch = PacketBatch::new(2, 2048);
        assert!(batch.push(7, &[1; 64]) && batch.push(8, &[2; 64]));
        let (port, frame) = batch.packet_mut(0).expect("pushed");
        assert_eq!((port, frame.len()), (7, 64));
        frame[..6].copy_from_slice(&[9; 6]);
        let (_, first) = batch.packet(0).expect("pushed");
        assert_eq!(&first[..7], &[9, 9, 9, 9, 9, 9, 1]);
        assert_eq!(batch.packet(1).expect("pushed").1, &[2; 64]);
        assert!(batch.packet_mut(2).is_none(), "only pushed packets");
    }

    #[test]
    fn a_push_from_names_its_port_or_adds_nothing() {
        let mut batch = PacketBatch::new(2, 128);
        assert!(!batch.push_from(|_| None), "refused by its fill");
        assert!(!batch.push_from(|_| Some((3, 200))), "longer than a slot");
        assert!(!batch.push_from(|_| Some((3, 0))), "empty");
        assert!(batch.push_from(|buf| {
            buf[..4].copy_from_slice(&[1, 2, 3, 4]);
            Some((9, 4))
        }));
        assert_eq!(batch.len(), 1);
        assert_eq!(batch.packet(0), Some((9, &[1u8, 2, 3, 4][..])));
    }
}
