//! AF_XDP port: an XDP program steers every frame of one receive queue into an AF_XDP
//! socket (made with `xdpilone`), whose rings point into a UMEM this port owns.
//!
//! # Generic mode only
//!
//! The program is attached in generic (SKB) mode, which works on any interface, veth
//! included, without driver support; the socket runs in copy mode. Frames are still
//! copied once each way, so on veth it forwards at about the rate and CPU cost of the
//! AF_PACKET port (`benches/xdp.rs` measures both on the same topology).
//!
//! What generic mode on veth cannot do:
//!
//! - **Checksum offload.** A frame that a local stack sent through the veth peer with
//!   its checksum left to the hardware (`CHECKSUM_PARTIAL`) reaches the socket with
//!   that checksum unfinished, and AF_XDP carries no metadata to say so (the AF_PACKET
//!   port reads a virtio-net header and completes it). Forwarded unchanged, such TCP
//!   and UDP frames fail the receiver's checksum check and are dropped there: with
//!   veth defaults, a TCP connection through two AF_XDP ports never gets past its SYN,
//!   while ping works (ICMP is checksummed in software).
//! - **GSO/TSO.** Super-frames of up to 64 KiB exist only with checksum offload on;
//!   with it off the kernel segments before the veth. One larger than a UMEM chunk
//!   would be dropped by the kernel and counted in `rx_dropped`.
//! - **VLAN offload.** Generic XDP runs before the kernel strips a tag, so tags
//!   arrive inline, as on the wire, and [`RxFrame::vlan`] is always `None`. A tag that
//!   a sending VLAN device left in skb metadata (its TX offload) would not be seen;
//!   untested, as this machine's kernel has no 802.1Q device support.
//!
//! Hosts that send through such a port from their own TCP/IP stack must therefore turn
//! checksum offload off on their end of the veth pair: `ethtool -K IF tx off` (this
//! also turns TSO off; `tests/xdp_tcp.rs` moves 20 MiB of TCP through two AF_XDP ports
//! that way). Traffic from another switch or from a generator that writes whole frames
//! needs nothing.
//!
//! # Sizes
//!
//! One UMEM chunk holds one frame: frames longer than `frame_size` cannot be sent and
//! an interface whose MTU does not fit a receive chunk is refused at `open` (the
//! caller falls back to AF_PACKET, see [`open_port`]).

mod fallback;
pub mod offload;
mod options;
mod program;
mod umem;

use std::io;
use std::os::fd::RawFd;

use xdpilone::xdp::XdpDesc;
use xdpilone::{DeviceQueue, IfInfo, RingRx, RingTx, Socket, SocketConfig, Umem, UmemConfig, User};

use crate::frame::{
    fits_mtu, fits_mtu_tagged, write_tagged, RxFrame, SocketCounters, VlanTag, VLAN_TAG_LEN,
};
use crate::iface::{interface_index, interface_mtu};
use crate::sys;
use program::RedirectProgram;
use umem::UmemArea;

pub use fallback::{open_port, PortKind};
pub use options::XdpOptions;

/// `setsockopt(SOL_XDP, XDP_MAX_TX_SKB_BUDGET)`: frames one send call may transmit in
/// copy mode (Linux 6.17 and later; older kernels send 32 per call).
const XDP_MAX_TX_SKB_BUDGET: libc::c_int = 9;

/// A Linux interface opened through AF_XDP in generic mode, one receive queue.
pub struct XdpPort {
    // Field order matters for drop: the program is detached first (frames stop going
    // to the socket), the rings and socket close next, the UMEM is unmapped last.
    /// Held only to stay attached; dropping it detaches the program.
    _program: RedirectProgram,
    rx: RingRx,
    tx: RingTx,
    device: DeviceQueue,
    socket: User,
    area: UmemArea,
    /// Transmit chunks owned by user space, ready to be written.
    free_tx: Vec<u64>,
    /// Receive chunks consumed and not yet back in the fill ring.
    recycle: Vec<u64>,
    /// Frames written to the TX ring since the last kick.
    unkicked: u32,
    frame_size: u32,
    tx_frames: u32,
    ifname: String,
    ifindex: u32,
    queue_id: u32,
    mtu: u32,
    counters: SocketCounters,
}

/// An `xdpilone` error with the step that failed.
fn errno(what: impl std::fmt::Display, err: xdpilone::Errno) -> io::Error {
    sys::with_context(io::Error::from_raw_os_error(err.get_raw().abs()), what)
}

/// A datagram socket for interface ioctls (AF_XDP sockets do not answer them).
fn ioctl_socket() -> io::Result<std::os::fd::OwnedFd> {
    sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0, "interface ioctl socket")
}

impl XdpPort {
    /// Loads and attaches the redirect program and binds an AF_XDP socket to
    /// `opts.queue_id` of `ifname`. Fails with `Unsupported` when this build has no XDP
    /// program (no clang at build time), and with the step and errno otherwise.
    pub fn open(ifname: &str, opts: &XdpOptions) -> io::Result<Self> {
        use std::os::fd::AsRawFd;

        opts.validate()?;
        let (ifindex, mtu) = {
            let fd = ioctl_socket()?;
            (
                interface_index(fd.as_raw_fd(), ifname)?,
                interface_mtu(fd.as_raw_fd(), ifname)?,
            )
        };
        if mtu > opts.max_mtu() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "MTU {mtu} of {ifname} does not fit an XDP frame of {} bytes (at most {})",
                    opts.frame_size,
                    opts.max_mtu()
                ),
            ));
        }
        let mut program = RedirectProgram::load()?;

        let rx_bytes = opts.rx_frames as u64 * u64::from(opts.frame_size);
        let area = UmemArea::new(opts.umem_bytes(), opts.frame_size, rx_bytes)?;
        let ctx = |what: &str| format!("{what} on {ifname} queue {}", opts.queue_id);
        let config = UmemConfig {
            fill_size: opts.rx_frames,
            complete_size: opts.tx_frames,
            frame_size: opts.frame_size,
            headroom: 0,
            flags: 0,
        };
        // SAFETY: the area is page aligned (a fresh mapping), as long as `config` says,
        // and owned by the port, which drops it after every socket that uses it.
        let umem = unsafe { Umem::new(config, area.as_slice_ptr()) }
            .map_err(|e| errno(ctx("register UMEM"), e))?;
        let mut info = IfInfo::invalid();
        info.from_ifindex(ifindex)
            .map_err(|e| errno(ctx("interface"), e))?;
        info.set_queue(opts.queue_id);
        let socket =
            Socket::with_shared(&info, &umem).map_err(|e| errno(ctx("AF_XDP socket"), e))?;
        let mut device = umem
            .fq_cq(&socket)
            .map_err(|e| errno(ctx("fill/completion rings"), e))?;
        let user = umem
            .rx_tx(
                &socket,
                &SocketConfig {
                    rx_size: std::num::NonZeroU32::new(opts.rx_frames),
                    tx_size: std::num::NonZeroU32::new(opts.tx_frames),
                    bind_flags: SocketConfig::XDP_BIND_COPY,
                },
            )
            .map_err(|e| errno(ctx("RX/TX rings"), e))?;
        let rx = user.map_rx().map_err(|e| errno(ctx("map RX ring"), e))?;
        let tx = user.map_tx().map_err(|e| errno(ctx("map TX ring"), e))?;
        // Older kernels refuse the budget; they then send 32 frames per call.
        let _ = sys::setsockopt(
            user.as_raw_fd(),
            libc::SOL_XDP,
            XDP_MAX_TX_SKB_BUDGET,
            &(opts.tx_frames as libc::c_int),
            "XDP_MAX_TX_SKB_BUDGET",
        );
        umem.bind(&user)
            .map_err(|e| errno(ctx("bind AF_XDP socket"), e))?;

        // Lend every receive chunk to the kernel.
        let mut fill = device.fill(opts.rx_frames);
        let lent =
            fill.insert((0..u64::from(opts.rx_frames)).map(|i| i * u64::from(opts.frame_size)));
        fill.commit();
        drop(fill);
        if lent != opts.rx_frames {
            return Err(io::Error::other(ctx(
                "fill ring shorter than the receive chunks",
            )));
        }

        program.register_socket(opts.queue_id, user.as_raw_fd())?;
        program.attach(ifindex, ifname)?;

        let free_tx = (0..u64::from(opts.tx_frames))
            .map(|i| rx_bytes + i * u64::from(opts.frame_size))
            .collect();
        Ok(XdpPort {
            _program: program,
            rx,
            tx,
            device,
            socket: user,
            area,
            free_tx,
            recycle: Vec::with_capacity(opts.rx_frames as usize),
            unkicked: 0,
            frame_size: opts.frame_size,
            tx_frames: opts.tx_frames,
            ifname: ifname.to_owned(),
            ifindex,
            queue_id: opts.queue_id,
            mtu,
            counters: SocketCounters::default(),
        })
    }

    /// Hands up to `max` received frames to `f`; returns how many were taken from the
    /// ring. The chunks go back to the kernel through the fill ring at the end.
    pub fn recv_burst(&mut self, max: usize, mut f: impl FnMut(RxFrame<'_>)) -> usize {
        let room = self.recycle.capacity() - self.recycle.len();
        let mut ring = self
            .rx
            .receive(u32::try_from(max.min(room)).unwrap_or(u32::MAX));
        let mut received = 0;
        while let Some(desc) = ring.read() {
            received += 1;
            match self.area.rx_frame(desc.addr, desc.len) {
                Some(data) => {
                    self.counters.rx_packets += 1;
                    self.counters.rx_bytes += data.len() as u64;
                    f(RxFrame {
                        data,
                        vlan: None,
                        orig_len: desc.len,
                    });
                    self.recycle.push(self.area.chunk_of(desc.addr));
                }
                // A descriptor outside the receive chunks: count it, never touch it.
                None => self.counters.rx_dropped += 1,
            }
        }
        ring.release();
        drop(ring);
        self.refill();
        received
    }

    /// Lends the chunks of consumed frames back to the kernel. The fill ring has room
    /// for every receive chunk, but a reservation only sees the room the ring last
    /// reported, so this reserves until everything is in or the ring is truly full.
    fn refill(&mut self) {
        let mut lent = 0;
        while lent < self.recycle.len() {
            let rest = &self.recycle[lent..];
            let mut fill = self
                .device
                .fill(u32::try_from(rest.len()).unwrap_or(u32::MAX));
            let n = fill.insert(rest.iter().copied());
            fill.commit();
            if n == 0 {
                break;
            }
            lent += n as usize;
        }
        self.recycle.drain(..lent);
    }

    /// Queues `frame` (exactly as it should appear on the wire) for the next
    /// [`flush`](Self::flush). `false` means it was dropped and counted: no free
    /// transmit chunk, longer than the MTU or a chunk allows, or shorter than an
    /// Ethernet header.
    pub fn send(&mut self, frame: &[u8]) -> bool {
        let fits = fits_mtu(frame, self.mtu);
        self.queue(frame, None, fits)
    }

    /// Queues `frame` with `tag` inserted after its MAC addresses, as
    /// [`send`](Self::send) queues a frame (a trunk's logical port sends this way).
    pub fn send_tagged(&mut self, frame: &[u8], tag: VlanTag) -> bool {
        let fits = fits_mtu_tagged(frame, self.mtu);
        self.queue(frame, Some(tag), fits)
    }

    fn queue(&mut self, frame: &[u8], tag: Option<VlanTag>, fits: bool) -> bool {
        let wire_len = frame.len() + tag.map_or(0, |_| VLAN_TAG_LEN);
        let Ok(len) = u32::try_from(wire_len) else {
            self.counters.tx_errors += 1;
            return false;
        };
        if !fits || len > self.frame_size {
            self.counters.tx_errors += 1;
            return false;
        }
        if self.free_tx.is_empty() {
            self.reclaim();
        }
        let Some(addr) = self.free_tx.pop() else {
            self.counters.tx_dropped += 1;
            return false;
        };
        let written = self.area.tx_chunk(addr).and_then(|chunk| match tag {
            Some(tag) => write_tagged(frame, tag, chunk),
            None => {
                let out = chunk.get_mut(..frame.len())?;
                out.copy_from_slice(frame);
                Some(out.len())
            }
        });
        if written != Some(wire_len) {
            self.free_tx.push(addr);
            self.counters.tx_errors += 1;
            return false;
        }
        let mut writer = self.tx.transmit(1);
        let queued = writer.insert_once(XdpDesc {
            addr,
            len,
            options: 0,
        });
        writer.commit();
        drop(writer);
        if !queued {
            self.free_tx.push(addr);
            self.counters.tx_dropped += 1;
            return false;
        }
        self.unkicked += 1;
        self.counters.tx_packets += 1;
        self.counters.tx_bytes += u64::from(len);
        true
    }

    /// Asks the kernel to send what [`send`](Self::send) queued and takes back the
    /// chunks it finished with. In copy mode each call sends a bounded number of frames,
    /// so this kicks until the ring is empty or the kernel stops making progress. A
    /// link that is down leaves the frames queued (the TX ring cannot be taken back)
    /// and reports the error, the kernel's, unnamed (as [`crate::AfPacketPort::flush`]'s).
    pub fn flush(&mut self) -> io::Result<()> {
        if self.unkicked == 0 && self.tx.pending() == 0 {
            self.reclaim();
            return Ok(());
        }
        self.unkicked = 0;
        let fd = self.tx.as_raw_fd();
        let mut pending = self.tx.pending();
        let mut result = Ok(());
        while pending > 0 {
            if let Err(err) = sys::kick_tx(fd) {
                match err.raw_os_error() {
                    Some(libc::EAGAIN | libc::EBUSY | libc::ENOBUFS | libc::EINTR) => {}
                    Some(libc::ENETDOWN | libc::ENXIO) => {
                        result = Err(err);
                        break;
                    }
                    _ => {
                        self.counters.tx_errors += 1;
                        result = Err(err);
                        break;
                    }
                }
            }
            self.reclaim();
            let now = self.tx.pending();
            if now >= pending {
                break;
            }
            pending = now;
        }
        self.reclaim();
        result
    }

    /// Returns completed transmit chunks to the free list, checking each address.
    fn reclaim(&mut self) {
        let mut done = self.device.complete(self.tx_frames);
        while let Some(addr) = done.read() {
            let ours = self.area.is_tx_chunk(addr) && self.free_tx.len() < self.free_tx.capacity();
            if ours {
                self.free_tx.push(addr);
            }
        }
        done.release();
    }

    /// The socket, for poll/epoll when the port is idle: readable when frames wait.
    pub fn fd(&self) -> RawFd {
        self.rx.as_raw_fd()
    }

    /// Counters, with the kernel's receive drops (fill ring empty, RX ring full, frame
    /// larger than a chunk) and invalid descriptors folded in.
    pub fn stats(&self) -> SocketCounters {
        let mut counters = self.counters;
        if let Ok(st) = self.socket.statistics_v2() {
            counters.rx_dropped += st.rx_dropped + st.rx_ring_full + st.rx_invalid_descs;
            counters.tx_errors += st.tx_invalid_descs;
        }
        counters
    }

    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// The receive queue the socket is bound to.
    pub fn queue_id(&self) -> u32 {
        self.queue_id
    }

    /// The MTU read at open or at the last [`refresh_mtu`](Self::refresh_mtu).
    pub fn mtu(&self) -> u32 {
        self.mtu
    }

    /// Re-reads the MTU (call it when the link monitor reports a change).
    pub fn refresh_mtu(&mut self) -> io::Result<u32> {
        use std::os::fd::AsRawFd;
        self.mtu = interface_mtu(ioctl_socket()?.as_raw_fd(), &self.ifname)?;
        Ok(self.mtu)
    }

    /// Largest frame one transmit chunk holds.
    pub fn max_frame_len(&self) -> usize {
        self.frame_size as usize
    }
}
