//! A TAP device (`/dev/net/tun`, IFF_TAP | IFF_NO_PI) for the OpenFlow LOCAL port:
//! frames the host stack sends into the device are received here, and frames sent
//! here enter the host stack.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use crate::frame::{fits_mtu, fits_mtu_tagged, write_tagged, RxFrame, SocketCounters, VlanTag};
use crate::sys::{self, IfReq};

/// Largest frame a TAP device can hand over (its MTU cannot exceed 64 KiB).
const MAX_FRAME: usize = 65_536;
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

pub struct TapPort {
    fd: OwnedFd,
    ifname: String,
    ifindex: u32,
    mtu: u32,
    /// One receive buffer, reused for every frame.
    buf: Box<[u8]>,
    counters: SocketCounters,
}

impl TapPort {
    /// Creates the TAP device `name` (or attaches to it if it exists and is free).
    /// The device starts down; see [`crate::set_link_up`].
    pub fn open(name: &str) -> io::Result<Self> {
        let fd = sys::open(
            c"/dev/net/tun",
            libc::O_RDWR | libc::O_NONBLOCK,
            "open /dev/net/tun",
        )?;
        let mut req = IfReq::new(name)?;
        req.data.flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
        sys::ioctl_ifreq(
            fd.as_raw_fd(),
            TUNSETIFF,
            &mut req,
            &format!("TUNSETIFF {name}"),
        )?;
        let len = req
            .name
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(req.name.len());
        let ifname = String::from_utf8_lossy(req.name.get(..len).unwrap_or_default()).into_owned();

        let ctl = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0, "interface ioctl socket")?;
        let ifindex = crate::iface::interface_index(ctl.as_raw_fd(), &ifname)?;
        let mtu = crate::iface::interface_mtu(ctl.as_raw_fd(), &ifname)?;
        Ok(TapPort {
            fd,
            ifname,
            ifindex,
            mtu,
            buf: vec![0; MAX_FRAME].into_boxed_slice(),
            counters: SocketCounters::default(),
        })
    }

    /// Hands up to `max` frames from the host stack to `f`; returns how many.
    pub fn recv_burst(&mut self, max: usize, mut f: impl FnMut(RxFrame<'_>)) -> usize {
        let mut received = 0;
        while received < max {
            let n = match sys::read_some(self.fd.as_raw_fd(), &mut self.buf) {
                Ok(Some(n)) if n > 0 => n,
                Ok(_) => break,
                Err(_) => {
                    self.counters.rx_dropped += 1;
                    break;
                }
            };
            let data = self.buf.get(..n).unwrap_or_default();
            self.counters.rx_packets += 1;
            self.counters.rx_bytes += n as u64;
            f(RxFrame {
                data,
                vlan: None,
                orig_len: n as u32,
            });
            received += 1;
        }
        received
    }

    /// Hands `frame` to the host stack at once (a TAP device has no ring to batch
    /// into). `false` means it was dropped and counted.
    pub fn send(&mut self, frame: &[u8]) -> bool {
        if !fits_mtu(frame, self.mtu) {
            self.counters.tx_errors += 1;
            return false;
        }
        self.write(frame)
    }

    /// Hands `frame` with `tag` inserted after its MAC addresses to the host stack
    /// (composed in the port's own buffer); `false` as for [`send`](Self::send).
    pub fn send_tagged(&mut self, frame: &[u8], tag: VlanTag) -> bool {
        if !fits_mtu_tagged(frame, self.mtu) {
            self.counters.tx_errors += 1;
            return false;
        }
        let mut buf = std::mem::take(&mut self.buf);
        let sent = match write_tagged(frame, tag, &mut buf) {
            Some(len) => self.write(buf.get(..len).unwrap_or_default()),
            None => {
                self.counters.tx_errors += 1;
                false
            }
        };
        self.buf = buf;
        sent
    }

    fn write(&mut self, frame: &[u8]) -> bool {
        match sys::write(self.fd.as_raw_fd(), frame) {
            Ok(n) if n == frame.len() => {
                self.counters.tx_packets += 1;
                self.counters.tx_bytes += n as u64;
                true
            }
            Err(err)
                if matches!(
                    err.raw_os_error(),
                    Some(libc::EAGAIN | libc::ENOBUFS | libc::EIO)
                ) =>
            {
                self.counters.tx_dropped += 1;
                false
            }
            _ => {
                self.counters.tx_errors += 1;
                false
            }
        }
    }

    /// Nothing to do: [`send`](Self::send) already wrote each frame.
    pub fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// The device fd, readable when the host stack sent a frame.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    pub fn stats(&self) -> SocketCounters {
        self.counters
    }

    /// The device name the kernel gave (a `%d` in the requested name is expanded).
    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    pub fn mtu(&self) -> u32 {
        self.mtu
    }

    /// Re-reads the MTU (call it when the link monitor reports a change).
    pub fn refresh_mtu(&mut self) -> io::Result<u32> {
        let ctl = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0, "interface ioctl socket")?;
        self.mtu = crate::iface::interface_mtu(ctl.as_raw_fd(), &self.ifname)?;
        Ok(self.mtu)
    }
}
