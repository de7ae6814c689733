//! Interface state: one-shot queries ([`link_info`], [`set_link_up`]) and the netlink
//! [`LinkMonitor`] that follows changes.

mod ethtool;
mod monitor;
mod netlink;

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use crate::sys::{self, IfReq};

pub use monitor::{LinkChange, LinkEvent, LinkMonitor};

/// What an OpenFlow port description needs to know about an interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkInfo {
    pub ifindex: u32,
    pub mac: [u8; 6],
    pub mtu: u32,
    /// Administratively up (IFF_UP).
    pub up: bool,
    /// Carrier present and operational (IFF_RUNNING).
    pub running: bool,
    /// Link speed from ethtool, when the driver reports one.
    pub speed_mbps: Option<u32>,
}

/// A datagram socket in the calling thread's network namespace, for interface ioctls.
fn ioctl_socket() -> io::Result<OwnedFd> {
    sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0, "interface ioctl socket")
}

fn interface_flags(fd: &OwnedFd, ifname: &str) -> io::Result<libc::c_short> {
    let mut req = IfReq::new(ifname)?;
    sys::ioctl_ifreq(
        fd.as_raw_fd(),
        sys::SIOCGIFFLAGS,
        &mut req,
        &format!("SIOCGIFFLAGS {ifname}"),
    )?;
    // SAFETY: SIOCGIFFLAGS filled the `flags` member.
    Ok(unsafe { req.data.flags })
}

/// Reads an interface's index, MAC address, MTU, state and speed.
pub fn link_info(ifname: &str) -> io::Result<LinkInfo> {
    let fd = ioctl_socket()?;
    let raw = fd.as_raw_fd();
    let ifindex = crate::iface::interface_index(raw, ifname)?;
    let mtu = crate::iface::interface_mtu(raw, ifname)?;
    let flags = i32::from(interface_flags(&fd, ifname)?);

    let mut req = IfReq::new(ifname)?;
    sys::ioctl_ifreq(
        raw,
        sys::SIOCGIFHWADDR,
        &mut req,
        &format!("SIOCGIFHWADDR {ifname}"),
    )?;
    // SAFETY: SIOCGIFHWADDR filled the `hwaddr` member.
    let hw = unsafe { req.data.hwaddr };
    let mut mac = [0u8; 6];
    for (dst, src) in mac.iter_mut().zip(hw.sa_data.iter()) {
        *dst = *src as u8;
    }

    Ok(LinkInfo {
        ifindex,
        mac,
        mtu,
        up: flags & libc::IFF_UP != 0,
        running: flags & libc::IFF_RUNNING != 0,
        speed_mbps: ethtool::speed_mbps(&fd, ifname),
    })
}

/// Sets an interface administratively up or down (IFF_UP).
pub fn set_link_up(ifname: &str, up: bool) -> io::Result<()> {
    let fd = ioctl_socket()?;
    let flags = interface_flags(&fd, ifname)?;
    let up_bit = libc::IFF_UP as libc::c_short;
    let mut req = IfReq::new(ifname)?;
    req.data.flags = if up { flags | up_bit } else { flags & !up_bit };
    sys::ioctl_ifreq(
        fd.as_raw_fd(),
        sys::SIOCSIFFLAGS,
        &mut req,
        &format!("SIOCSIFFLAGS {ifname}"),
    )
}
