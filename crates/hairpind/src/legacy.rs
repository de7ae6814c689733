//! Legacy ports as the controller sees them (HARMLESS): each a port of its own, named after
//! the legacy switch's access port, with that port's speed and link state. Its link is up
//! while both its trunk's link and the legacy port's own link are up; the first comes from
//! the trunk interface (the link monitor), the second from whoever watches the legacy switch
//! (the `port/set-link` management command, [`LegacyLinks::set`]). Every change of either
//! reaches the controllers as PORT_STATUS.

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex};

use agent::session::Event;
use agent::Agent;
use ofp::{Port, PortConfig, PortState, PortStatus};
use serde_json::{json, Value};

use crate::config::{LegacyPort, TrunkVlan};
use crate::portmap::{LogicalPort, PortMap};

/// What the legacy switch says of one of its ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LegacyLink {
    up: bool,
    speed_mbps: Option<u32>,
}

/// The link state of every legacy port, and of the trunks under them.
pub struct LegacyLinks {
    map: Arc<PortMap>,
    state: Mutex<LinkState>,
}

#[derive(Default)]
struct LinkState {
    /// Legacy ports by OpenFlow number.
    legacy: BTreeMap<u32, LegacyLink>,
    /// Trunks' links (up and running), by interface index.
    trunk_up: BTreeMap<usize, bool>,
    /// Trunks' MAC addresses, by interface index (for the ports' hardware addresses).
    trunk_mac: BTreeMap<usize, [u8; 6]>,
}

/// Why `port/set-link` refused.
#[derive(Debug, PartialEq, Eq)]
pub enum SetLinkError {
    NoSuchPort(u32),
    NotLegacy(u32, String),
    BadSpeed,
}

impl std::fmt::Display for SetLinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetLinkError::NoSuchPort(n) => write!(f, "no port {n}"),
            SetLinkError::NotLegacy(n, ifname) => write!(
                f,
                "port {n} is interface {ifname}: its link follows the interface, not set-link"
            ),
            SetLinkError::BadSpeed => f.write_str("speed_mbps must be at least 1"),
        }
    }
}

/// A legacy port's hardware address: its trunk's, made locally administered, with the VLAN
/// id in the last two bytes (so ports of one trunk differ, and differ from the trunk).
fn hw_addr(trunk_mac: [u8; 6], vlan: TrunkVlan) -> [u8; 6] {
    let vid = match vlan {
        TrunkVlan::Id(vid) => vid,
        TrunkVlan::Native => 0,
    };
    let mut mac = trunk_mac;
    mac[0] = (mac[0] | 0x02) & !0x01;
    mac[4] ^= (vid >> 8) as u8;
    mac[5] ^= vid as u8;
    mac
}

/// The OpenFlow description of legacy port `port_no`.
fn describe(
    port_no: u32,
    legacy: &LegacyPort,
    trunk_mac: [u8; 6],
    live: bool,
    speed: Option<u32>,
) -> Port {
    let name = legacy
        .name
        .clone()
        .unwrap_or_else(|| format!("{}.{}", legacy.trunk, legacy.vlan));
    let (features, kbps) = match speed {
        Some(mbps) => (ofp::speed_feature(mbps), mbps.saturating_mul(1000)),
        None => (0, 0),
    };
    Port {
        port_no,
        hw_addr: hw_addr(trunk_mac, legacy.vlan),
        // A given name was checked to fit; a long default one is cut by the encoder.
        name,
        config: PortConfig::default(),
        state: if live {
            PortState::LIVE
        } else {
            PortState::LINK_DOWN
        },
        curr: features,
        advertised: 0,
        supported: features,
        peer: 0,
        curr_speed: kbps,
        max_speed: kbps,
    }
}

impl LegacyLinks {
    /// Every legacy port of `map` up, at its configured speed, over trunks whose state and
    /// address are read now.
    pub fn new(map: Arc<PortMap>) -> io::Result<Self> {
        let mut state = LinkState::default();
        for (i, interface) in map.interfaces.iter().enumerate() {
            if map.trunk(i).is_none() {
                continue;
            }
            let info = ports::link_info(&interface.ifname).map_err(|e| {
                io::Error::new(e.kind(), format!("trunk {}: {e}", interface.ifname))
            })?;
            state.trunk_up.insert(i, info.up && info.running);
            state.trunk_mac.insert(i, info.mac);
        }
        for port in map.ports.values() {
            if let Some(legacy) = &port.legacy {
                state.legacy.insert(
                    port.port_no,
                    LegacyLink {
                        up: true,
                        speed_mbps: legacy.speed_mbps,
                    },
                );
            }
        }
        Ok(LegacyLinks {
            map,
            state: Mutex::new(state),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LinkState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The description of legacy port `port` as things stand.
    fn describe_in(&self, state: &LinkState, port: &LogicalPort) -> Option<Port> {
        let legacy = port.legacy.as_ref()?;
        let link = state.legacy.get(&port.port_no)?;
        let trunk_up = state
            .trunk_up
            .get(&port.interface)
            .copied()
            .unwrap_or(false);
        let mac = state
            .trunk_mac
            .get(&port.interface)
            .copied()
            .unwrap_or_default();
        Some(describe(
            port.port_no,
            legacy,
            mac,
            trunk_up && link.up,
            link.speed_mbps,
        ))
    }

    /// The descriptions of every legacy port, to announce at start-up.
    pub fn descriptions(&self) -> Vec<Port> {
        let state = self.lock();
        self.map
            .ports
            .values()
            .filter_map(|p| self.describe_in(&state, p))
            .collect()
    }

    /// Applies `port`'s description as things stand to the switch core; the PORT_STATUS
    /// when it changed.
    fn apply(&self, agent: &Agent, state: &LinkState, port: &LogicalPort) -> Option<PortStatus> {
        let desc = self.describe_in(state, port)?;
        agent.with_switch(|s| {
            let status = s.update_port(port.port_no, |d| {
                d.state = desc.state;
                d.curr = desc.curr;
                d.supported = desc.supported;
                d.curr_speed = desc.curr_speed;
                d.max_speed = desc.max_speed;
            });
            s.publish();
            status
        })
    }

    /// `port/set-link`: the legacy switch says port `port_no` is up or down (and at what
    /// speed, if it says). Announces the change, if any, to the controllers.
    pub fn set(
        &self,
        agent: &Agent,
        port_no: u32,
        up: bool,
        speed_mbps: Option<u32>,
    ) -> Result<Option<PortStatus>, SetLinkError> {
        let port = self
            .map
            .ports
            .get(&port_no)
            .ok_or(SetLinkError::NoSuchPort(port_no))?;
        if port.legacy.is_none() {
            let ifname = self.map.interfaces[port.interface].ifname.clone();
            return Err(SetLinkError::NotLegacy(port_no, ifname));
        }
        if speed_mbps == Some(0) {
            return Err(SetLinkError::BadSpeed);
        }
        let mut state = self.lock();
        if let Some(link) = state.legacy.get_mut(&port_no) {
            link.up = up;
            if speed_mbps.is_some() {
                link.speed_mbps = speed_mbps;
            }
        }
        let status = self.apply(agent, &state, port);
        drop(state);
        if let Some(status) = &status {
            agent.channels().send(Event::PortStatus(status.clone()));
        }
        Ok(status)
    }

    /// The trunk on interface `interface` went up or down: every legacy port on it follows.
    pub fn trunk_changed(&self, agent: &Agent, interface: usize, up: bool) {
        let mut state = self.lock();
        if state.trunk_up.insert(interface, up) == Some(up) {
            return;
        }
        let statuses: Vec<PortStatus> = self
            .map
            .ports_on(interface)
            .filter_map(|p| self.apply(agent, &state, p))
            .collect();
        drop(state);
        let mut channels = agent.channels();
        for status in statuses {
            channels.send(Event::PortStatus(status));
        }
    }

    /// `trunk/show`: every trunk with its counters and legacy ports.
    pub fn show(&self) -> Value {
        let state = self.lock();
        let trunks: Vec<Value> = self
            .map
            .interfaces
            .iter()
            .enumerate()
            .filter_map(|(i, interface)| {
                let trunk = self.map.trunk(i)?;
                let ports: Vec<Value> = self
                    .map
                    .ports_on(i)
                    .filter_map(|p| {
                        let legacy = p.legacy.as_ref()?;
                        let link = state.legacy.get(&p.port_no)?;
                        let desc = self.describe_in(&state, p)?;
                        Some(json!({
                            "port": p.port_no,
                            "vlan": legacy.vlan.to_string(),
                            "name": desc.name,
                            "legacy_up": link.up,
                            "live": desc.state.contains(PortState::LIVE),
                            "speed_mbps": link.speed_mbps,
                        }))
                    })
                    .collect();
                Some(json!({
                    "name": trunk.name,
                    "interface": interface.ifname,
                    "up": state.trunk_up.get(&i).copied().unwrap_or(false),
                    "counters": trunk.counters.snapshot(),
                    "ports": ports,
                }))
            })
            .collect();
        json!(trunks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hardware_addresses_differ_by_vlan_and_are_local() {
        let trunk = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];
        let a = hw_addr(trunk, TrunkVlan::Id(101));
        let b = hw_addr(trunk, TrunkVlan::Id(102));
        let n = hw_addr(trunk, TrunkVlan::Native);
        assert!(a != b && a != n && b != n);
        for mac in [a, b, n] {
            assert_eq!(
                mac[0] & 0x03,
                0x02,
                "locally administered unicast: {mac:02x?}"
            );
        }
        assert_eq!(&a[..4], &[0x52, 0x54, 0x00, 0x12]);
    }

    #[test]
    fn a_description_carries_the_legacy_name_speed_and_link() {
        let legacy = LegacyPort {
            trunk: "sw1".into(),
            vlan: TrunkVlan::Id(105),
            name: Some("Gi1/0/5".into()),
            speed_mbps: Some(1000),
        };
        let d = describe(5, &legacy, [2, 0, 0, 0, 0, 1], true, Some(1000));
        assert_eq!((d.port_no, d.name.as_str()), (5, "Gi1/0/5"));
        assert_eq!((d.curr_speed, d.max_speed), (1_000_000, 1_000_000));
        assert_eq!(d.curr, ofp::OFPPF_1GB_FD);
        assert_eq!(d.state, PortState::LIVE);
        let unnamed = LegacyPort {
            name: None,
            speed_mbps: None,
            ..legacy
        };
        let d = describe(5, &unnamed, [2, 0, 0, 0, 0, 1], false, None);
        assert_eq!(d.name, "sw1.105");
        assert_eq!((d.curr_speed, d.curr), (0, 0), "unknown speed");
        assert_eq!(d.state, PortState::LINK_DOWN);
    }
}
