//! The shape every port shares, so the datapath can drive them alike.

use std::io;
use std::os::fd::RawFd;

use crate::frame::{RxFrame, SocketCounters, VlanTag};
use crate::{AfPacketPort, TapPort, XdpPort};

/// Batch receive, queued send with one kick per batch, an fd to sleep on, counters.
pub trait PacketPort {
    /// Hands up to `max` received frames to `f`; returns how many.
    fn recv_burst<F: FnMut(RxFrame<'_>)>(&mut self, max: usize, f: F) -> usize;
    /// Queues a frame; `false` means it was dropped (and counted).
    fn send(&mut self, frame: &[u8]) -> bool;
    /// Queues `frame` with `tag` inserted after its MAC addresses, written into the
    /// transmit buffer in one pass (a trunk's logical port); `false` as for `send`.
    fn send_tagged(&mut self, frame: &[u8], tag: VlanTag) -> bool;
    /// Sends whatever [`send`](Self::send) queued.
    fn flush(&mut self) -> io::Result<()>;
    /// Readable when frames wait.
    fn fd(&self) -> RawFd;
    fn stats(&self) -> SocketCounters;
    fn ifindex(&self) -> u32;
    fn mtu(&self) -> u32;
}

macro_rules! delegate_port {
    ($ty:ty) => {
        impl PacketPort for $ty {
            fn recv_burst<F: FnMut(RxFrame<'_>)>(&mut self, max: usize, f: F) -> usize {
                <$ty>::recv_burst(self, max, f)
            }
            fn send(&mut self, frame: &[u8]) -> bool {
                <$ty>::send(self, frame)
            }
            fn send_tagged(&mut self, frame: &[u8], tag: VlanTag) -> bool {
                <$ty>::send_tagged(self, frame, tag)
            }
            fn flush(&mut self) -> io::Result<()> {
                <$ty>::flush(self)
            }
            fn fd(&self) -> RawFd {
                <$ty>::fd(self)
            }
            fn stats(&self) -> SocketCounters {
                <$ty>::stats(self)
            }
            fn ifindex(&self) -> u32 {
                <$ty>::ifindex(self)
            }
            fn mtu(&self) -> u32 {
                <$ty>::mtu(self)
            }
        }
    };
}

delegate_port!(AfPacketPort);
delegate_port!(TapPort);
delegate_port!(XdpPort);

/// Either kind of port, for tables of ports without dynamic dispatch per packet.
pub enum AnyPort {
    AfPacket(AfPacketPort),
    Tap(TapPort),
    /// Boxed: the AF_XDP port carries aya's and xdpilone's state inline (about 900
    /// bytes); boxing keeps the other variants small at the cost of one pointer hop.
    Xdp(Box<XdpPort>),
}

macro_rules! each_port {
    ($self:expr, $port:ident => $body:expr) => {
        match $self {
            AnyPort::AfPacket($port) => $body,
            AnyPort::Tap($port) => $body,
            AnyPort::Xdp($port) => $body,
        }
    };
}

impl PacketPort for AnyPort {
    fn recv_burst<F: FnMut(RxFrame<'_>)>(&mut self, max: usize, f: F) -> usize {
        each_port!(self, p => p.recv_burst(max, f))
    }
    fn send(&mut self, frame: &[u8]) -> bool {
        each_port!(self, p => p.send(frame))
    }
    fn send_tagged(&mut self, frame: &[u8], tag: VlanTag) -> bool {
        each_port!(self, p => p.send_tagged(frame, tag))
    }
    fn flush(&mut self) -> io::Result<()> {
        each_port!(self, p => p.flush())
    }
    fn fd(&self) -> RawFd {
        each_port!(self, p => p.fd())
    }
    fn stats(&self) -> SocketCounters {
        each_port!(self, p => p.stats())
    }
    fn ifindex(&self) -> u32 {
        each_port!(self, p => p.ifindex())
    }
    fn mtu(&self) -> u32 {
        each_port!(self, p => p.mtu())
    }
}
