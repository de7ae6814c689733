//! Interface facts read through `ioctl` on any socket of the namespace.

use std::io;
use std::os::fd::RawFd;

use crate::sys::{self, IfReq};

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
