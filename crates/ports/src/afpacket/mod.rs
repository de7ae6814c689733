//! AF_PACKET port: one socket with a receive ring and a transmit ring sharing one
//! mapping. By default both are TPACKET_V3 ([`RingKind::Blocks`]); the per-frame
//! TPACKET_V2 rings ([`RingKind::Frames`]) trade some cost per frame for no added
//! latency (measured with `benches/latency.rs`: ping p50 through two ports 0.06 ms
//! versus 0.8-1.5 ms with 1 ms blocks).
//!
//! Why V3 for transmit too: the kernel accepts a V3 TX ring since Linux 4.11 (it
//! treats it as fixed-size slots, like V2), and PACKET_VERSION is per socket, so V3 TX
//! keeps RX and TX on one socket and one fd. On this machine (Linux 6.18) it is used
//! as is; a kernel older than 4.11 fails `open` with a clear error.
//!
//! PACKET_VNET_HDR is on in both directions. On receive, frames that a local stack
//! sent through a veth may still carry a partial checksum or be a GSO super-frame;
//! the header says so and `vnet` finishes the job, so consumers always see
//! wire-valid frames. On transmit, a header asking for no offload lets us set its
//! `hdr_len` to the whole frame: the kernel then copies the frame into the socket
//! buffer instead of referencing ring pages, which veth would otherwise have to copy
//! into a freshly allocated page per frame (measured with `benches/veth.rs`: the
//! forwarder's kernel CPU time per frame drops by about a third).

mod frame_ring;
mod options;
mod rx_ring;
mod socket;
mod tx_ring;

use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use crate::frame::{fits_mtu, fits_mtu_tagged, RxFrame, SocketCounters, VlanTag, VLAN_TAG_LEN};
use crate::iface::{interface_index, interface_mtu};
use crate::sys::{self, Mmap};
use crate::vnet::{self, Segmenter};
use frame_ring::FrameRing;
use rx_ring::{RingFrame, RxRing};
use tx_ring::{PushError, TxRing, V2_SLOT, V3_SLOT};

use options::Geometry;
pub use options::{PortOptions, RingKind};
use socket::{attach, configure_socket};

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
    counters: SocketCounters,
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

        attach(raw, ifindex, opts.fanout_group, ifname)?;

        Ok(AfPacketPort {
            rx,
            tx,
            map,
            fd,
            ifname: ifname.to_owned(),
            ifindex,
            mtu,
            counters: SocketCounters::default(),
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
            } else if frame.vnet.needs_csum() && !vnet::complete_checksum(frame.data, &frame.vnet) {
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
        let fits = fits_mtu(frame, self.mtu);
        self.queue(frame, None, fits)
    }

    /// Queues `frame` with `tag` inserted after its MAC addresses, as [`send`](Self::send)
    /// queues a frame (a trunk's logical port sends this way: one copy into the ring).
    pub fn send_tagged(&mut self, frame: &[u8], tag: VlanTag) -> bool {
        let fits = fits_mtu_tagged(frame, self.mtu);
        self.queue(frame, Some(tag), fits)
    }

    fn queue(&mut self, frame: &[u8], tag: Option<VlanTag>, fits: bool) -> bool {
        if !fits {
            self.counters.tx_errors += 1;
            return false;
        }
        match self.tx.push(frame, tag) {
            Ok(()) => {
                self.counters.tx_packets += 1;
                self.counters.tx_bytes += (frame.len() + tag.map_or(0, |_| VLAN_TAG_LEN)) as u64;
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
    /// the queued frames (counted as `tx_dropped`) and reports the error. The error is the
    /// kernel's, unnamed: this runs every batch, so the caller that reports it names the
    /// port (naming it here would allocate on every kick of a down link).
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
                    Err(err)
                }
                _ => {
                    self.counters.tx_errors += 1;
                    Err(err)
                }
            },
        }
    }

    /// The socket, for poll/epoll when the port is idle: readable when frames are
    /// ready; POLLERR after the link went down, until [`take_error`](Self::take_error)
    /// reads the error.
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
    pub fn stats(&self) -> SocketCounters {
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
