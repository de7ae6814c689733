//! What a caller can choose about an AF_PACKET port, and the ring geometry that
//! follows from it.

use std::io;

/// How the receive ring hands frames over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RingKind {
    /// TPACKET_V3 blocks: the kernel fills a block and hands it over whole, when it
    /// is full or `block_timeout_ms` after its first frame. Cheapest per frame; at
    /// low rates a frame waits up to the timeout.
    #[default]
    Blocks,
    /// TPACKET_V2 slots: each frame is handed over as soon as it is written (no
    /// added latency); frames larger than `frame_size` come through the socket
    /// queue instead.
    Frames,
}

/// Ring geometry and socket options of an [`AfPacketPort`](crate::AfPacketPort).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortOptions {
    /// Number of receive blocks.
    pub rx_ring_blocks: u32,
    /// Size of one receive block in bytes (a multiple of the page size).
    pub block_size: u32,
    /// Size of one transmit slot in bytes (multiple of 16), and of one receive slot
    /// with [`RingKind::Frames`]. The largest frame that can be sent is the slot less
    /// its headers (58 bytes with blocks, 42 with frames), see
    /// [`AfPacketPort::max_frame_len`](crate::AfPacketPort::max_frame_len).
    pub frame_size: u32,
    /// Number of transmit slots (rounded up to fill whole pages).
    pub tx_frames: u32,
    /// Join this PACKET_FANOUT group (hash mode) to spread one interface over several
    /// datapath threads, each with its own port. Group ids are shared by the whole
    /// network namespace: use a different one for each interface.
    pub fanout_group: Option<u16>,
    /// Hand frames straight to the driver, skipping the qdisc layer.
    pub qdisc_bypass: bool,
    /// How long the kernel may keep a partly filled receive block before handing it
    /// over (milliseconds, at least 1): the latency bound at low packet rates.
    pub block_timeout_ms: u32,
    /// Block ring (default) or per-frame ring.
    pub ring: RingKind,
}

impl Default for PortOptions {
    fn default() -> Self {
        PortOptions {
            rx_ring_blocks: 64,
            block_size: 1 << 18,
            frame_size: 2048,
            tx_frames: 4096,
            fanout_group: None,
            qdisc_bypass: true,
            block_timeout_ms: 1,
            ring: RingKind::Blocks,
        }
    }
}

/// The ring layout derived from validated [`PortOptions`].
pub(super) struct Geometry {
    pub(super) rx: libc::tpacket_req3,
    pub(super) tx: libc::tpacket_req3,
}

impl Geometry {
    pub(super) fn new(opts: &PortOptions) -> io::Result<Self> {
        let page = page_size();
        let invalid = |msg: String| io::Error::new(io::ErrorKind::InvalidInput, msg);
        let frame_size = opts.frame_size;
        if frame_size < 128 || !frame_size.is_multiple_of(libc::TPACKET_ALIGNMENT as u32) {
            return Err(invalid(format!(
                "frame_size {frame_size} must be a multiple of 16 and >= 128"
            )));
        }
        if opts.block_size == 0
            || !opts.block_size.is_multiple_of(page)
            || opts.block_size < frame_size
        {
            return Err(invalid(format!(
                "block_size {} must be a non-zero multiple of the page size ({page}) and >= frame_size",
                opts.block_size
            )));
        }
        if opts.rx_ring_blocks == 0 || opts.tx_frames == 0 {
            return Err(invalid(
                "rx_ring_blocks and tx_frames must be non-zero".into(),
            ));
        }
        let rx_frames_per_block = opts.block_size / frame_size;
        let rx = libc::tpacket_req3 {
            tp_block_size: opts.block_size,
            tp_block_nr: opts.rx_ring_blocks,
            tp_frame_size: frame_size,
            tp_frame_nr: rx_frames_per_block * opts.rx_ring_blocks,
            tp_retire_blk_tov: opts.block_timeout_ms.max(1),
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        let tx_block_size = frame_size.div_ceil(page) * page;
        let tx_per_block = tx_block_size / frame_size;
        let tx_blocks = opts.tx_frames.div_ceil(tx_per_block);
        let tx = libc::tpacket_req3 {
            tp_block_size: tx_block_size,
            tp_block_nr: tx_blocks,
            tp_frame_size: frame_size,
            tp_frame_nr: tx_per_block * tx_blocks,
            tp_retire_blk_tov: 0,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        Ok(Geometry { rx, tx })
    }

    pub(super) fn rx_bytes(&self) -> usize {
        self.rx.tp_block_size as usize * self.rx.tp_block_nr as usize
    }

    pub(super) fn tx_bytes(&self) -> usize {
        self.tx.tp_block_size as usize * self.tx.tp_block_nr as usize
    }
}

fn page_size() -> u32 {
    // SAFETY: sysconf has no memory effects.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u32::try_from(size).unwrap_or(4096)
}
