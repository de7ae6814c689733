//! AF_PACKET port: one socket with a TPACKET_V3 receive ring and a TPACKET_V3
//! transmit ring sharing one mapping.
//!
//! Why V3 for transmit too: the kernel accepts a V3 TX ring since Linux 4.11 (it
//! treats it as fixed-size slots, like V2), and PACKET_VERSION is per socket, so V3 TX
//! keeps RX and TX on one socket and one fd. On this machine (Linux 6.18) it is used
//! as is; a kernel older than 4.11 fails `open` with a clear error.
//!
//! PACKET_VNET_HDR is on in both directions. On receive, frames that a local stack
//! sent through a veth may still carry a partial checksum or be a GSO super-frame;
//! the header says so and `offload` finishes the job, so consumers always see
//! wire-valid frames. On transmit, a header asking for no offload lets us set its
//! `hdr_len` to the whole frame: the kernel then copies the frame into the socket
//! buffer instead of referencing ring pages, which veth would otherwise have to copy
//! into a freshly allocated page per frame (measured with `benches/veth.rs`: the
//! forwarder's kernel CPU time per frame drops by about a third).

mod frame_ring;
mod rx_ring;
mod tx_ring;

use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use crate::frame::{fits_mtu, PortCounters, RxFrame, VLAN_TAG_LEN};
use crate::offload::{self, Segmenter};
use crate::sys::{self, IfReq, Mmap};
use frame_ring::FrameRing;
use rx_ring::{RingFrame, RxRing};
use tx_ring::{PushError, TxRing, V2_SLOT, V3_SLOT};

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

/// The receive ring of either kind.
enum Rx {
    Blocks(RxRing),
    Frames(FrameRing),
}

impl Rx {
    fn next_frame(&mut self, malformed: &mut u64) -> Option<RingFrame<'_>> {
        match self {
            Rx::Blocks(ring) => ring.next_frame(malformed),
            Rx::Frames(ring) => ring.next_frame(malformed),
        }
    }

    fn release_if_done(&mut self) {
        match self {
            Rx::Blocks(ring) => ring.release_if_done(),
            Rx::Frames(ring) => ring.release_if_done(),
        }
    }
}

/// Ring geometry and socket options of an [`AfPacketPort`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortOptions {
    /// Number of receive blocks.
    pub rx_ring_blocks: u32,
    /// Size of one receive block in bytes (a multiple of the page size).
    pub block_size: u32,
    /// Size of one transmit slot in bytes (multiple of 16); the largest frame that
    /// can be sent is 58 bytes less (slot and virtio-net headers), see
    /// [`AfPacketPort::max_frame_len`].
    pub frame_size: u32,
    /// Number of transmit slots (rounded up to fill whole pages).
    pub tx_frames: u32,
    /// Join this PACKET_FANOUT group (hash mode) to spread one interface over several
    /// datapath threads, each with its own port.
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
struct Geometry {
    rx: libc::tpacket_req3,
    tx: libc::tpacket_req3,
}

impl Geometry {
    fn new(opts: &PortOptions) -> io::Result<Self> {
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

    fn rx_bytes(&self) -> usize {
        self.rx.tp_block_size as usize * self.rx.tp_block_nr as usize
    }

    fn tx_bytes(&self) -> usize {
        self.tx.tp_block_size as usize * self.tx.tp_block_nr as usize
    }
}

fn page_size() -> u32 {
    // SAFETY: sysconf has no memory effects.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u32::try_from(size).unwrap_or(4096)
}

/// A Linux interface opened through AF_PACKET rings, bound to one ifindex, promiscuous.
pub struct AfPacketPort {
    // Field order matters for drop: the rings point into `map`, which must be
    // unmapped before the socket closes.
    rx: Rx,
    tx: TxRing,
    map: Mmap,
    fd: OwnedFd,
    ifname: String,
    ifindex: u32,
    mtu: u32,
    counters: PortCounters,
    segmenter: Segmenter,
    /// Receive drops the kernel reported; PACKET_STATISTICS resets on every read.
    kernel_drops: Cell<u64>,
}

impl AfPacketPort {
    /// Opens `ifname` with the given ring geometry.
    pub fn open(ifname: &str, opts: &PortOptions) -> io::Result<Self> {
        let ctx = |what: &str| format!("{what} on {ifname}");
        let geometry = Geometry::new(opts)?;
        // Protocol 0: nothing is queued to the socket before the rings exist and it is
        // bound to the interface.
        let fd = sys::socket(libc::AF_PACKET, libc::SOCK_RAW, 0, &ctx("AF_PACKET socket"))?;
        let raw = fd.as_raw_fd();
        let ifindex = interface_index(raw, ifname)?;
        let mtu = interface_mtu(raw, ifname)?;

        configure_socket(raw, opts, &geometry, &ctx)?;
        let map = Mmap::socket_rings(
            &fd,
            geometry.rx_bytes() + geometry.tx_bytes(),
            &ctx("mmap packet rings"),
        )?;

        // SAFETY: the mapping holds the RX ring first and the TX ring right after it,
        // with exactly the geometry and version given to the kernel; both live as
        // long as `map`, which the port owns and drops after the rings.
        let (rx, tx) = unsafe {
            let rx_base = map.as_ptr();
            let tx_base = map.as_ptr().add(geometry.rx_bytes());
            let (rx_block, rx_blocks) = (
                geometry.rx.tp_block_size as usize,
                geometry.rx.tp_block_nr as usize,
            );
            let frame_size = geometry.rx.tp_frame_size as usize;
            let (tx_block, tx_frames) = (
                geometry.tx.tp_block_size as usize,
                geometry.tx.tp_frame_nr as usize,
            );
            match opts.ring {
                RingKind::Blocks => (
                    Rx::Blocks(RxRing::new(rx_base, rx_block, rx_blocks)),
                    TxRing::new(V3_SLOT, tx_base, tx_block, frame_size, tx_frames),
                ),
                RingKind::Frames => (
                    Rx::Frames(FrameRing::new(
                        rx_base,
                        rx_block,
                        frame_size,
                        geometry.rx.tp_frame_nr as usize,
                        raw,
                    )),
                    TxRing::new(V2_SLOT, tx_base, tx_block, frame_size, tx_frames),
                ),
            }
        };

        // SAFETY: sockaddr_ll is plain data; zero is a valid starting value.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        addr.sll_ifindex = ifindex as i32;
        sys::bind(raw, &addr, &ctx("bind AF_PACKET"))?;

        let mreq = libc::packet_mreq {
            mr_ifindex: ifindex as i32,
            mr_type: libc::PACKET_MR_PROMISC as u16,
            mr_alen: 0,
            mr_address: [0; 8],
        };
        sys::setsockopt(
            raw,
            libc::SOL_PACKET,
            libc::PACKET_ADD_MEMBERSHIP,
            &mreq,
            &ctx("PACKET_MR_PROMISC"),
        )?;
        if let Some(group) = opts.fanout_group {
            join_fanout(raw, group, ifname)?;
        }

        Ok(AfPacketPort {
            rx,
            tx,
            map,
            fd,
            ifname: ifname.to_owned(),
            ifindex,
            mtu,
            counters: PortCounters::default(),
            segmenter: Segmenter::new(),
            kernel_drops: Cell::new(0),
        })
    }

    /// Hands up to `max` received frames to `f`; returns how many were taken from the
    /// ring. A GSO super-frame from a local stack counts once here but reaches `f` as
    /// the MTU-sized segments it stands for; partial checksums are completed.
    pub fn recv_burst(&mut self, max: usize, mut f: impl FnMut(RxFrame<'_>)) -> usize {
        let mut received = 0;
        let mut malformed = 0;
        while received < max {
            let Some(frame) = self.rx.next_frame(&mut malformed) else {
                break;
            };
            received += 1;
            let vlan = frame.vlan;
            let tag_len = if vlan.is_some() { VLAN_TAG_LEN } else { 0 };
            let counters = &mut self.counters;
            let mut deliver = |data: &[u8], orig_len: u32| {
                counters.rx_packets += 1;
                counters.rx_bytes += (data.len() + tag_len) as u64;
                f(RxFrame {
                    data,
                    vlan,
                    orig_len,
                });
            };
            if frame.vnet.is_gso() {
                let vnet = frame.vnet;
                let segments = self.segmenter.segment(frame.data, &vnet, |seg| {
                    deliver(seg, (seg.len() + tag_len) as u32);
                });
                malformed += u64::from(segments.is_none());
            } else if frame.vnet.needs_csum()
                && !offload::complete_checksum(frame.data, &frame.vnet)
            {
                malformed += 1;
            } else {
                deliver(frame.data, frame.orig_len);
            }
        }
        self.rx.release_if_done();
        self.counters.rx_dropped += malformed;
        received
    }

    /// Queues `frame` (exactly as it should appear on the wire) for the next
    /// [`flush`](Self::flush). `false` means it was dropped and counted: ring full,
    /// longer than the MTU allows, or shorter than an Ethernet header.
    pub fn send(&mut self, frame: &[u8]) -> bool {
        if !fits_mtu(frame, self.mtu) {
            self.counters.tx_errors += 1;
            return false;
        }
        match self.tx.push(frame) {
            Ok(()) => {
                self.counters.tx_packets += 1;
                self.counters.tx_bytes += frame.len() as u64;
                true
            }
            Err(PushError::RingFull) => {
                self.counters.tx_dropped += 1;
                false
            }
            Err(PushError::TooLong) => {
                self.counters.tx_errors += 1;
                false
            }
        }
    }

    /// Kicks the kernel once to send every queued frame. A full device queue is not an
    /// error (the frames stay queued for the next kick); a link that is down drops
    /// the queued frames (counted as `tx_dropped`) and reports the error.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.tx.pending() == 0 {
            return Ok(());
        }
        let fd = self.fd.as_raw_fd();
        // A link that went down and came back leaves one stale ENETDOWN on the socket,
        // reported (and cleared) by the next send: a second kick tells the two apart.
        let kicked = sys::kick_tx(fd).or_else(|err| match err.raw_os_error() {
            Some(libc::ENETDOWN) => sys::kick_tx(fd),
            _ => Err(err),
        });
        match kicked {
            Ok(()) => {
                self.tx.kicked();
                Ok(())
            }
            Err(err) => match err.raw_os_error() {
                Some(libc::EAGAIN | libc::ENOBUFS | libc::EINTR) => Ok(()),
                Some(libc::ENXIO | libc::ENETDOWN) => {
                    let (frames, bytes) = self.tx.reclaim_unsent();
                    self.counters.tx_packets -= frames;
                    self.counters.tx_bytes -= bytes;
                    self.counters.tx_dropped += frames;
                    Err(sys::with_context(
                        err,
                        format!("send on {} (link down)", self.ifname),
                    ))
                }
                _ => {
                    self.counters.tx_errors += 1;
                    Err(sys::with_context(err, format!("send on {}", self.ifname)))
                }
            },
        }
    }

    /// The socket, for poll/epoll when the port is idle (readable when a block is
    /// ready).
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Reads and clears a pending socket error (the kernel sets ENETDOWN when the link
    /// goes down, and poll reports POLLERR until it is read).
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        let code = sys::getsockopt(
            self.fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            0,
            "SO_ERROR",
        )?;
        Ok((code != 0).then(|| io::Error::from_raw_os_error(code)))
    }

    /// Counters, with the kernel's receive drops folded in.
    pub fn stats(&self) -> PortCounters {
        let initial = libc::tpacket_stats_v3 {
            tp_packets: 0,
            tp_drops: 0,
            tp_freeze_q_cnt: 0,
        };
        if let Ok(st) = sys::getsockopt(
            self.fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            initial,
            "PACKET_STATISTICS",
        ) {
            self.kernel_drops
                .set(self.kernel_drops.get() + u64::from(st.tp_drops));
        }
        let mut counters = self.counters;
        counters.rx_dropped += self.kernel_drops.get();
        counters
    }

    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// The MTU read at open or at the last [`refresh_mtu`](Self::refresh_mtu).
    pub fn mtu(&self) -> u32 {
        self.mtu
    }

    /// Re-reads the MTU (call it when the link monitor reports a change).
    pub fn refresh_mtu(&mut self) -> io::Result<u32> {
        self.mtu = interface_mtu(self.fd.as_raw_fd(), &self.ifname)?;
        Ok(self.mtu)
    }

    /// Largest frame one transmit slot holds (the `frame_size` option less the header).
    pub fn max_frame_len(&self) -> usize {
        self.tx.max_frame_len()
    }

    /// Size of the shared ring mapping in bytes.
    pub fn ring_bytes(&self) -> usize {
        self.map.len()
    }
}

/// Sets the TPACKET version and options, then creates the rings.
fn configure_socket(
    fd: RawFd,
    opts: &PortOptions,
    geometry: &Geometry,
    ctx: &dyn Fn(&str) -> String,
) -> io::Result<()> {
    let set = |name: libc::c_int, value: libc::c_int, what: &str| {
        sys::setsockopt(fd, libc::SOL_PACKET, name, &value, &ctx(what))
    };
    let version = match opts.ring {
        RingKind::Blocks => libc::tpacket_versions::TPACKET_V3,
        RingKind::Frames => libc::tpacket_versions::TPACKET_V2,
    };
    set(
        libc::PACKET_VERSION,
        version as libc::c_int,
        "PACKET_VERSION",
    )?;
    // Frames the kernel cannot send are skipped instead of stalling the ring.
    set(libc::PACKET_LOSS, 1, "PACKET_LOSS")?;
    // A virtio-net header before each frame: on receive it says which checksum or
    // segmentation a local stack left undone; on transmit it lets the kernel copy
    // the whole frame (see the module comment).
    set(libc::PACKET_VNET_HDR, 1, "PACKET_VNET_HDR")?;
    if opts.qdisc_bypass {
        set(libc::PACKET_QDISC_BYPASS, 1, "PACKET_QDISC_BYPASS")?;
    }
    set(libc::PACKET_IGNORE_OUTGOING, 1, "PACKET_IGNORE_OUTGOING")?;
    if opts.ring == RingKind::Frames {
        // Frames larger than a slot are also queued whole on the socket; give that
        // queue room for a few 64 KiB super-frames.
        set(libc::PACKET_COPY_THRESH, 1, "PACKET_COPY_THRESH")?;
        let bytes = 8 << 20;
        sys::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            &bytes,
            "SO_RCVBUFFORCE",
        )
        .or_else(|_| {
            sys::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                &bytes,
                &ctx("SO_RCVBUF"),
            )
        })?;
    }
    sys::setsockopt(
        fd,
        libc::SOL_PACKET,
        libc::PACKET_RX_RING,
        &geometry.rx,
        &ctx("PACKET_RX_RING"),
    )?;
    let tx_what = ctx("PACKET_TX_RING (a V3 TX ring needs Linux >= 4.11)");
    sys::setsockopt(
        fd,
        libc::SOL_PACKET,
        libc::PACKET_TX_RING,
        &geometry.tx,
        &tx_what,
    )
}

/// Joins a hash fanout group, asking the kernel to leave out frames sent by group
/// members (so datapath threads do not see each other's output) where it can.
fn join_fanout(fd: RawFd, group: u16, ifname: &str) -> io::Result<()> {
    let with_flag = (libc::PACKET_FANOUT_HASH | libc::PACKET_FANOUT_FLAG_IGNORE_OUTGOING) << 16
        | u32::from(group);
    let arg = with_flag as libc::c_int;
    match sys::setsockopt(
        fd,
        libc::SOL_PACKET,
        libc::PACKET_FANOUT,
        &arg,
        "PACKET_FANOUT",
    ) {
        Err(err) if err.raw_os_error() == Some(libc::EINVAL) => {
            let plain = (libc::PACKET_FANOUT_HASH << 16 | u32::from(group)) as libc::c_int;
            sys::setsockopt(
                fd,
                libc::SOL_PACKET,
                libc::PACKET_FANOUT,
                &plain,
                &format!("PACKET_FANOUT group {group} on {ifname}"),
            )
        }
        other => other.map_err(|e| sys::with_context(e, format!("group {group} on {ifname}"))),
    }
}

pub(crate) fn interface_index(fd: RawFd, ifname: &str) -> io::Result<u32> {
    let mut req = IfReq::new(ifname)?;
    sys::ioctl_ifreq(
        fd,
        sys::SIOCGIFINDEX,
        &mut req,
        &format!("SIOCGIFINDEX {ifname}"),
    )?;
    // SAFETY: SIOCGIFINDEX filled the `int` member.
    let index = unsafe { req.data.int };
    u32::try_from(index).map_err(|_| io::Error::other(format!("negative ifindex for {ifname}")))
}

pub(crate) fn interface_mtu(fd: RawFd, ifname: &str) -> io::Result<u32> {
    let mut req = IfReq::new(ifname)?;
    sys::ioctl_ifreq(
        fd,
        sys::SIOCGIFMTU,
        &mut req,
        &format!("SIOCGIFMTU {ifname}"),
    )?;
    // SAFETY: SIOCGIFMTU filled the `int` member.
    let mtu = unsafe { req.data.int };
    u32::try_from(mtu).map_err(|_| io::Error::other(format!("negative MTU for {ifname}")))
}
