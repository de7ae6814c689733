//! Packet I/O for Hairpin: Linux interfaces as OpenFlow ports.
//!
//! - [`AfPacketPort`]: AF_PACKET with TPACKET_V3 receive and transmit rings (or V2
//!   per-frame rings for low latency, [`RingKind`]), batching, optional fanout, qdisc
//!   bypass; outer VLAN tags the kernel strips are handed back,
//!   and frames a local stack left unfinished (partial checksum, GSO) are completed.
//! - [`XdpPort`]: AF_XDP in generic mode, chosen per port with [`PortKind`] and
//!   [`open_port`], which falls back to AF_PACKET when AF_XDP cannot be set up.
//! - [`TapPort`]: a TAP device for the OpenFlow LOCAL port.
//! - [`PcapWriter`] / [`PcapReader`]: classic pcap files for debugging and replay.
//! - [`LinkMonitor`], [`link_info`]: interface state through netlink and ioctls.
//! - [`trunk`]: 802.1Q trunks split into logical ports by VLAN id (HARMLESS): the VLAN map,
//!   tag removal on receive; [`PacketPort::send_tagged`] puts a logical port's tag back.
//!
//! Every port kind implements [`PacketPort`]; [`AnyPort`] holds any of them.

mod afpacket;
mod frame;
mod iface;
mod link;
mod pcap;
mod port;
mod sys;
mod tap;
pub mod trunk;
mod vnet;
mod xdp;

pub use afpacket::{AfPacketPort, PortOptions, RingKind};
pub use frame::{write_tagged, RxFrame, SocketCounters, VlanTag, ETH_HEADER_LEN, VLAN_TAG_LEN};
pub use link::{link_info, set_link_up, LinkChange, LinkEvent, LinkInfo, LinkMonitor};
pub use pcap::{PcapReader, PcapRecord, PcapWriter, TimestampPrecision};
pub use port::{AnyPort, PacketPort};
pub use tap::TapPort;
pub use xdp::offload as xdp_offload;
pub use xdp::{open_port, PortKind, XdpOptions, XdpPort};
