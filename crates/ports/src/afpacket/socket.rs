//! Socket options of an AF_PACKET port, set before and after its rings exist.

use std::io;
use std::os::fd::RawFd;

use super::options::{Geometry, PortOptions, RingKind};
use crate::sys;

/// Sets the TPACKET version and options, then creates the rings.
pub(super) fn configure_socket(
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

/// Binds the socket to the interface (frames start to flow into the ring), makes the
/// interface promiscuous for as long as the socket lives, and joins the fanout group.
pub(super) fn attach(
    raw: RawFd,
    ifindex: u32,
    fanout_group: Option<u16>,
    ifname: &str,
) -> io::Result<()> {
    // SAFETY: sockaddr_ll is plain data; zero is a valid starting value.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
    addr.sll_ifindex = ifindex as i32;
    sys::bind(raw, &addr, &format!("bind AF_PACKET to {ifname}"))?;

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
        &format!("PACKET_MR_PROMISC on {ifname}"),
    )?;
    if let Some(group) = fanout_group {
        join_fanout(raw, group, ifname)?;
    }
    Ok(())
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
