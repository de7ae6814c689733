//! The per-port choice between AF_PACKET and AF_XDP, falling back to AF_PACKET when
//! AF_XDP cannot be set up on an interface.

use std::io;

use super::{XdpOptions, XdpPort};
use crate::{AfPacketPort, AnyPort, PortOptions};

/// How to open one port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortKind {
    /// AF_PACKET rings.
    AfPacket(PortOptions),
    /// AF_XDP in generic mode; AF_PACKET with `fallback` when that fails.
    Xdp {
        xdp: XdpOptions,
        fallback: PortOptions,
    },
}

impl Default for PortKind {
    fn default() -> Self {
        PortKind::AfPacket(PortOptions::default())
    }
}

impl PortKind {
    /// AF_XDP with default sizes, falling back to AF_PACKET with default rings.
    pub fn xdp() -> Self {
        PortKind::Xdp {
            xdp: XdpOptions::default(),
            fallback: PortOptions::default(),
        }
    }
}

/// Opens `ifname` as `kind` asks. When AF_XDP was asked for and could not be set up
/// (no XDP program in this build, a kernel or interface that refuses it, an MTU too
/// large for the chunks), the port is opened with AF_PACKET instead and the second
/// value says why, for the caller to log. Errors only when no port could be opened.
pub fn open_port(ifname: &str, kind: &PortKind) -> io::Result<(AnyPort, Option<io::Error>)> {
    match kind {
        PortKind::AfPacket(opts) => {
            Ok((AnyPort::AfPacket(AfPacketPort::open(ifname, opts)?), None))
        }
        PortKind::Xdp { xdp, fallback } => match XdpPort::open(ifname, xdp) {
            Ok(port) => Ok((AnyPort::Xdp(Box::new(port)), None)),
            Err(xdp_err) => {
                let port = AfPacketPort::open(ifname, fallback).map_err(|err| {
                    io::Error::new(
                        err.kind(),
                        format!("{err} (after AF_XDP failed: {xdp_err})"),
                    )
                })?;
                let reason = io::Error::new(
                    xdp_err.kind(),
                    format!("AF_XDP on {ifname} failed, using AF_PACKET: {xdp_err}"),
                );
                Ok((AnyPort::AfPacket(port), Some(reason)))
            }
        },
    }
}
