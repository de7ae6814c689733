//! The daemon's state as an operator reads it, gathered in one place for the metrics page
//! and the `summary` management command: ports (each OpenFlow port, logical ports of trunks
//! included) with their counters, trunks, flow tables, OpenFlow connections and datapath
//! threads. Gathering takes the agent's lock once, for as long as copying the counters takes.

use std::sync::Arc;

use agent::Agent;
use ofp::{MultipartReplyBody, MultipartRequestBody, PortConfig, PortState};
use serde::Serialize;

use crate::datapath::stats::{AllThreads, ThreadSnapshot};
use crate::portmap::{PortMap, TrunkStats};

/// What [`gather`] reads from.
#[derive(Clone)]
pub struct Sources {
    pub agent: Agent,
    pub map: Arc<PortMap>,
    pub threads: AllThreads,
    /// Controllers the daemon was told to connect to.
    pub controllers_configured: usize,
}

#[derive(Debug, Serialize)]
pub struct Status {
    pub datapath_id: u64,
    pub ports: Vec<PortRow>,
    pub trunks: Vec<TrunkRow>,
    pub tables: Vec<TableRow>,
    pub connections: Vec<ConnectionRow>,
    pub controllers_configured: usize,
    pub controllers_connected: usize,
    pub threads: Vec<ThreadSnapshot>,
}

/// One OpenFlow port with its counters.
#[derive(Debug, Serialize)]
pub struct PortRow {
    pub port: u32,
    pub name: String,
    /// The Linux interface its frames use (a trunk's, for a logical port).
    pub interface: String,
    /// The VLAN of a logical port on a trunk (`native` for untagged), else empty.
    pub vlan: String,
    pub up: bool,
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub rx_dropped: u64,
    pub rx_errors: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub tx_dropped: u64,
    pub tx_errors: u64,
}

#[derive(Debug, Serialize)]
pub struct TrunkRow {
    pub name: String,
    pub interface: String,
    pub counters: TrunkStats,
}

#[derive(Debug, Serialize)]
pub struct TableRow {
    pub table: u8,
    pub flows: u32,
    pub lookups: u64,
    pub matches: u64,
}

#[derive(Debug, Serialize)]
pub struct ConnectionRow {
    pub id: u64,
    /// `controller` (configured with --controller) or `client` (came to a listener).
    pub kind: &'static str,
    pub negotiated: bool,
    pub role: &'static str,
    pub packet_ins: u64,
    /// Packet-ins the packet-in limit dropped.
    pub packet_ins_limited: u64,
    /// Asynchronous messages dropped because the peer did not read them in time.
    pub dropped: u64,
}

fn role_name(role: ofp::ControllerRole) -> &'static str {
    match role {
        ofp::ControllerRole::Master => "master",
        ofp::ControllerRole::Slave => "slave",
        ofp::ControllerRole::Equal | ofp::ControllerRole::NoChange => "equal",
    }
}

/// Reads the daemon's state now.
pub fn gather(sources: &Sources) -> Status {
    let now = switch_core::clock::now_ns();
    let (datapath_id, descs, stats, tables) = sources.agent.with_switch(|switch| {
        let ask = |body| switch.multipart(&body, now).ok();
        (
            switch.settings().datapath_id,
            ask(MultipartRequestBody::PortDesc),
            ask(MultipartRequestBody::PortStats {
                port_no: ofp::OFPP_ANY,
            }),
            ask(MultipartRequestBody::Table),
        )
    });
    let descs = match descs {
        Some(MultipartReplyBody::PortDesc(d)) => d,
        _ => Vec::new(),
    };
    let stats = match stats {
        Some(MultipartReplyBody::PortStats(s)) => s,
        _ => Vec::new(),
    };
    let ports = descs
        .iter()
        .map(|d| {
            let s = stats.iter().find(|s| s.port_no == d.port_no);
            let mapped = sources.map.ports.get(&d.port_no);
            let interface = mapped
                .and_then(|p| sources.map.interfaces.get(p.interface))
                .map_or_else(|| d.name.clone(), |i| i.ifname.clone());
            let vlan = mapped
                .and_then(|p| p.legacy.as_ref())
                .map_or_else(String::new, |l| l.vlan.to_string());
            let get = |f: fn(&ofp::PortStats) -> u64| s.map_or(0, f);
            PortRow {
                port: d.port_no,
                name: d.name.clone(),
                interface,
                vlan,
                up: !d.state.contains(PortState::LINK_DOWN)
                    && !d.config.contains(PortConfig::PORT_DOWN),
                rx_packets: get(|s| s.rx_packets),
                rx_bytes: get(|s| s.rx_bytes),
                rx_dropped: get(|s| s.rx_dropped),
                rx_errors: get(|s| s.rx_errors),
                tx_packets: get(|s| s.tx_packets),
                tx_bytes: get(|s| s.tx_bytes),
                tx_dropped: get(|s| s.tx_dropped),
                tx_errors: get(|s| s.tx_errors),
            }
        })
        .collect();
    let trunks = sources
        .map
        .interfaces
        .iter()
        .enumerate()
        .filter_map(|(i, interface)| {
            let trunk = sources.map.trunk(i)?;
            Some(TrunkRow {
                name: trunk.name.clone(),
                interface: interface.ifname.clone(),
                counters: trunk.counters.snapshot(),
            })
        })
        .collect();
    let tables = match tables {
        Some(MultipartReplyBody::Table(t)) => t
            .iter()
            .map(|t| TableRow {
                table: t.table_id,
                flows: t.active_count,
                lookups: t.lookup_count,
                matches: t.matched_count,
            })
            .collect(),
        _ => Vec::new(),
    };
    let connections = sources
        .agent
        .connection_stats()
        .into_iter()
        .map(|c| ConnectionRow {
            id: c.id,
            kind: if c.controller { "controller" } else { "client" },
            negotiated: c.negotiated,
            role: role_name(c.role),
            packet_ins: c.packet_ins,
            packet_ins_limited: c.packet_ins_limited,
            dropped: c.async_dropped,
        })
        .collect();
    Status {
        datapath_id,
        ports,
        trunks,
        tables,
        connections,
        controllers_configured: sources.controllers_configured,
        controllers_connected: sources.agent.connected(),
        threads: sources.threads.iter().map(|t| t.snapshot()).collect(),
    }
}
