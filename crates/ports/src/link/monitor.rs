//! Follows link changes through NETLINK_ROUTE (RTMGRP_LINK) and turns them into
//! per-interface events: added, removed, up, down, modified.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use super::netlink::{self, LinkMessage, Message};
use crate::sys;

/// Netlink datagrams are at most a few pages; this holds any of them.
const RECV_BUFFER: usize = 64 * 1024;

/// What happened to a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkChange {
    /// A link the monitor had not seen appeared.
    Added,
    /// The link was deleted.
    Removed,
    /// It became usable: administratively up with carrier.
    Up,
    /// It stopped being usable: set down or lost carrier.
    Down,
    /// Something else changed (name, MTU, or one flag while still down).
    Modified,
}

/// One change to one link, with its state after the change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkEvent {
    pub ifindex: u32,
    pub ifname: String,
    pub change: LinkChange,
    /// IFF_UP.
    pub admin_up: bool,
    /// IFF_RUNNING (carrier).
    pub running: bool,
    pub mtu: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct LinkState {
    ifname: String,
    admin_up: bool,
    running: bool,
    mtu: u32,
}

impl LinkState {
    fn from_message(msg: &LinkMessage) -> Self {
        LinkState {
            ifname: msg.ifname.clone(),
            admin_up: msg.flags & libc::IFF_UP as u32 != 0,
            running: msg.flags & libc::IFF_RUNNING as u32 != 0,
            mtu: msg.mtu,
        }
    }

    fn usable(&self) -> bool {
        self.admin_up && self.running
    }

    fn event(&self, ifindex: u32, change: LinkChange) -> LinkEvent {
        LinkEvent {
            ifindex,
            ifname: self.ifname.clone(),
            change,
            admin_up: self.admin_up,
            running: self.running,
            mtu: self.mtu,
        }
    }
}

/// Watches every link of the network namespace it was created in.
pub struct LinkMonitor {
    events: OwnedFd,
    /// A second socket for dumps, so dump answers never mix with events.
    dumps: OwnedFd,
    buf: Vec<u8>,
    links: HashMap<u32, LinkState>,
    seq: u32,
}

fn netlink_socket(groups: u32, nonblocking: bool, what: &str) -> io::Result<OwnedFd> {
    let ty = libc::SOCK_RAW | if nonblocking { libc::SOCK_NONBLOCK } else { 0 };
    let fd = sys::socket(libc::AF_NETLINK, ty, libc::NETLINK_ROUTE, what)?;
    // SAFETY: sockaddr_nl is plain data; zero is a valid starting value.
    let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    addr.nl_family = libc::AF_NETLINK as u16;
    addr.nl_groups = groups;
    sys::bind(fd.as_raw_fd(), &addr, what)?;
    Ok(fd)
}

impl LinkMonitor {
    /// Subscribes to link events and records the current links (without reporting
    /// them as added).
    pub fn new() -> io::Result<Self> {
        let events = netlink_socket(libc::RTMGRP_LINK as u32, true, "netlink RTMGRP_LINK socket")?;
        let dumps = netlink_socket(0, false, "netlink dump socket")?;
        let mut monitor = LinkMonitor {
            events,
            dumps,
            buf: vec![0; RECV_BUFFER],
            links: HashMap::new(),
            seq: 0,
        };
        // Nothing is recorded yet: every link would read as added; stay silent.
        monitor.resync(|_| {})?;
        Ok(monitor)
    }

    /// The event socket, readable when events wait.
    pub fn fd(&self) -> RawFd {
        self.events.as_raw_fd()
    }

    /// Reports every change that arrived since the last call, without blocking;
    /// returns how many events were reported. If the kernel dropped events (the
    /// socket overflowed), the state is re-read and the differences reported.
    pub fn poll_events(&mut self, mut f: impl FnMut(LinkEvent)) -> io::Result<usize> {
        let mut reported = 0;
        let mut count = |event: LinkEvent| {
            reported += 1;
            f(event);
        };
        loop {
            match sys::read_some(self.events.as_raw_fd(), &mut self.buf) {
                Ok(Some(0) | None) => break,
                Ok(Some(n)) => {
                    let mut messages = Vec::new();
                    netlink::for_each_message(self.buf.get(..n).unwrap_or_default(), |m| {
                        if let Message::Link(link) = m {
                            messages.push(link);
                        }
                    });
                    for msg in messages {
                        self.apply(msg, &mut count);
                    }
                }
                Err(err) if err.raw_os_error() == Some(libc::ENOBUFS) => self.resync(&mut count)?,
                Err(err) => return Err(sys::with_context(err, "reading link events")),
            }
        }
        Ok(reported)
    }

    /// Updates the recorded state from one message and reports what changed.
    fn apply(&mut self, msg: LinkMessage, f: &mut impl FnMut(LinkEvent)) {
        if msg.removed {
            if let Some(old) = self.links.remove(&msg.ifindex) {
                f(old.event(msg.ifindex, LinkChange::Removed));
            }
            return;
        }
        let new = LinkState::from_message(&msg);
        let change = match self.links.get(&msg.ifindex) {
            None => Some(LinkChange::Added),
            Some(old) if old == &new => None,
            Some(old) if !old.usable() && new.usable() => Some(LinkChange::Up),
            Some(old) if old.usable() && !new.usable() => Some(LinkChange::Down),
            Some(_) => Some(LinkChange::Modified),
        };
        if let Some(change) = change {
            f(new.event(msg.ifindex, change));
        }
        self.links.insert(msg.ifindex, new);
    }

    /// Re-reads every link with a dump and reports the differences to the recorded
    /// state (links gone are reported removed).
    fn resync(&mut self, mut f: impl FnMut(LinkEvent)) -> io::Result<()> {
        self.seq = self.seq.wrapping_add(1);
        sys::send(
            self.dumps.as_raw_fd(),
            &netlink::dump_request(self.seq),
            "netlink RTM_GETLINK dump",
        )?;
        let mut current = Vec::new();
        let mut done = false;
        while !done {
            let n = sys::read_some(self.dumps.as_raw_fd(), &mut self.buf)
                .map_err(|e| sys::with_context(e, "reading link dump"))?
                .unwrap_or(0);
            if n == 0 {
                break;
            }
            netlink::for_each_message(self.buf.get(..n).unwrap_or_default(), |m| match m {
                Message::Link(link) => current.push(link),
                Message::Done => done = true,
                Message::Other => {}
            });
        }
        let gone: Vec<u32> = self
            .links
            .keys()
            .filter(|index| !current.iter().any(|m| m.ifindex == **index))
            .copied()
            .collect();
        for ifindex in gone {
            if let Some(old) = self.links.remove(&ifindex) {
                f(old.event(ifindex, LinkChange::Removed));
            }
        }
        for msg in current {
            self.apply(msg, &mut f);
        }
        Ok(())
    }
}
