//! The logical-port layer's map: every OpenFlow port is a logical port, (interface, VLAN or
//! none). A port bound to an interface of its own has no VLAN; a legacy switch's access port
//! (HARMLESS) is one VLAN of a trunk, an interface that carries many. The map goes both ways:
//! OpenFlow port number to (interface, tag to push) for output, and per trunk VLAN id to
//! OpenFlow port number ([`VlanMap`]) for input.
//!
//! The map is fixed at start-up and shared by everything that needs it: the datapath threads
//! (each opens every interface once and builds its [`crate::datapath::ports::ThreadPorts`]
//! from it), the port descriptions and link monitor ([`crate::links`]), and the management
//! commands. A trunk is not an OpenFlow port: the controller sees only its logical ports.
//!
//! (NORMAL's "trunk" is the same 802.1Q notion, a link whose frames carry their VLAN in a
//! tag; the difference is what the switch does with it: NORMAL bridges a trunk port as one
//! VLAN-aware OpenFlow port, the logical-port layer splits a trunk into one OpenFlow port
//! per VLAN.)

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ports::trunk::{vlan_tag, VlanMap};
use ports::VlanTag;

use crate::config::{Interface, LegacyPort, PortBinding, PortIo, Settings, TrunkVlan};

/// Every port and interface of the daemon.
#[derive(Debug)]
pub struct PortMap {
    /// The interfaces the daemon opens, each once: ports' own interfaces, then trunks.
    pub interfaces: Vec<MappedInterface>,
    /// Every configured OpenFlow port, by number.
    pub ports: BTreeMap<u32, LogicalPort>,
}

/// An interface the daemon opens, and what its frames are.
#[derive(Debug)]
pub struct MappedInterface {
    pub ifname: String,
    pub io: PortIo,
    pub role: Role,
}

/// What an interface's frames are.
#[derive(Debug)]
pub enum Role {
    /// The frames of one OpenFlow port.
    Port(u32),
    /// The frames of many, one per VLAN.
    Trunk(Trunk),
}

/// A trunk: its name, its VLANs' ports and the counters of what none of them takes.
#[derive(Debug)]
pub struct Trunk {
    pub name: String,
    pub vlans: VlanMap,
    pub counters: Arc<TrunkCounters>,
}

/// One OpenFlow port: the interface it is on, and the VLAN its frames carry there.
#[derive(Clone, Debug)]
pub struct LogicalPort {
    pub port_no: u32,
    /// Index into [`PortMap::interfaces`].
    pub interface: usize,
    /// The legacy port this is (`None`: the port is its interface).
    pub legacy: Option<LegacyPort>,
}

impl LogicalPort {
    /// The tag its frames carry on the wire (`None`: sent as they are).
    pub fn tag(&self) -> Option<VlanTag> {
        match self.legacy.as_ref()?.vlan {
            TrunkVlan::Id(vid) => Some(vlan_tag(vid)),
            TrunkVlan::Native => None,
        }
    }
}

/// A trunk's own counters, summed over the datapath threads (each adds what it saw since its
/// last report): what reaches no logical port, and the socket's losses, which belong to no
/// single logical port.
#[derive(Debug, Default)]
pub struct TrunkCounters {
    pub rx_packets: AtomicU64,
    pub rx_bytes: AtomicU64,
    pub tx_packets: AtomicU64,
    pub tx_bytes: AtomicU64,
    /// Tagged with a VLAN id that no logical port has.
    pub rx_unknown_vlan: AtomicU64,
    /// Untagged or priority-tagged, and the trunk has no native port.
    pub rx_untagged: AtomicU64,
    /// Lost in the kernel's receive ring, or malformed there.
    pub rx_dropped: AtomicU64,
    pub tx_dropped: AtomicU64,
    pub tx_errors: AtomicU64,
}

/// A snapshot of [`TrunkCounters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TrunkStats {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub rx_unknown_vlan: u64,
    pub rx_untagged: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    pub tx_errors: u64,
}

impl TrunkCounters {
    /// Adds a thread's counts since its last report.
    pub fn add(&self, delta: &TrunkStats) {
        let add = |c: &AtomicU64, v: u64| {
            if v != 0 {
                c.fetch_add(v, Ordering::Relaxed);
            }
        };
        add(&self.rx_packets, delta.rx_packets);
        add(&self.rx_bytes, delta.rx_bytes);
        add(&self.tx_packets, delta.tx_packets);
        add(&self.tx_bytes, delta.tx_bytes);
        add(&self.rx_unknown_vlan, delta.rx_unknown_vlan);
        add(&self.rx_untagged, delta.rx_untagged);
        add(&self.rx_dropped, delta.rx_dropped);
        add(&self.tx_dropped, delta.tx_dropped);
        add(&self.tx_errors, delta.tx_errors);
    }

    pub fn snapshot(&self) -> TrunkStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        TrunkStats {
            rx_packets: get(&self.rx_packets),
            rx_bytes: get(&self.rx_bytes),
            tx_packets: get(&self.tx_packets),
            tx_bytes: get(&self.tx_bytes),
            rx_unknown_vlan: get(&self.rx_unknown_vlan),
            rx_untagged: get(&self.rx_untagged),
            rx_dropped: get(&self.rx_dropped),
            tx_dropped: get(&self.tx_dropped),
            tx_errors: get(&self.tx_errors),
        }
    }
}

impl PortMap {
    /// The map of validated settings (which guarantee that every legacy port names a trunk,
    /// that VLANs do not repeat on a trunk and that no interface is used twice).
    pub fn new(settings: &Settings) -> Result<Self, String> {
        let mut interfaces = Vec::new();
        let mut ports = BTreeMap::new();
        for (&port_no, binding) in &settings.ports {
            if let PortBinding::Interface(Interface { ifname, io }) = binding {
                ports.insert(
                    port_no,
                    LogicalPort {
                        port_no,
                        interface: interfaces.len(),
                        legacy: None,
                    },
                );
                interfaces.push(MappedInterface {
                    ifname: ifname.clone(),
                    io: *io,
                    role: Role::Port(port_no),
                });
            }
        }
        for (name, Interface { ifname, io }) in &settings.trunks {
            let interface = interfaces.len();
            let mut vlans = VlanMap::new();
            for (&port_no, binding) in &settings.ports {
                let PortBinding::Legacy(legacy) = binding else {
                    continue;
                };
                if legacy.trunk != *name {
                    continue;
                }
                match legacy.vlan {
                    TrunkVlan::Id(vid) => vlans.insert(vid, port_no),
                    TrunkVlan::Native => vlans.set_native(port_no),
                }
                .map_err(|e| format!("port {port_no}: trunk `{name}`: {e}"))?;
                ports.insert(
                    port_no,
                    LogicalPort {
                        port_no,
                        interface,
                        legacy: Some(legacy.clone()),
                    },
                );
            }
            interfaces.push(MappedInterface {
                ifname: ifname.clone(),
                io: *io,
                role: Role::Trunk(Trunk {
                    name: name.clone(),
                    vlans,
                    counters: Arc::default(),
                }),
            });
        }
        if let Some(orphan) = settings.ports.keys().find(|n| !ports.contains_key(n)) {
            return Err(format!("port {orphan}: its trunk is not configured"));
        }
        Ok(PortMap { interfaces, ports })
    }

    /// The interface `ifname`, by index.
    pub fn interface_named(&self, ifname: &str) -> Option<usize> {
        self.interfaces.iter().position(|i| i.ifname == ifname)
    }

    /// The logical ports on interface `interface`.
    pub fn ports_on(&self, interface: usize) -> impl Iterator<Item = &LogicalPort> {
        self.ports
            .values()
            .filter(move |p| p.interface == interface)
    }

    /// The trunk on interface `interface`, if it is one.
    pub fn trunk(&self, interface: usize) -> Option<&Trunk> {
        match &self.interfaces.get(interface)?.role {
            Role::Trunk(t) => Some(t),
            Role::Port(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn map(args: &[&str]) -> PortMap {
        let mut argv = vec!["hairpind"];
        argv.extend_from_slice(args);
        let settings =
            Settings::from_cli(crate::config::Cli::try_parse_from(argv).unwrap()).unwrap();
        PortMap::new(&settings).unwrap()
    }

    #[test]
    fn ports_map_to_interfaces_and_vlans_and_back() {
        let m = map(&[
            "--port",
            "1=eth0",
            "--trunk",
            "sw1=eth1",
            "--trunk",
            "sw2=eth2",
            "--port",
            "5=sw1:105:Gi0/5",
            "--port",
            "6=sw1:106",
            "--port",
            "7=sw2:105",
            "--port",
            "8=sw1:native",
        ]);
        let names: Vec<&str> = m.interfaces.iter().map(|i| i.ifname.as_str()).collect();
        assert_eq!(names, ["eth0", "eth1", "eth2"]);
        // OpenFlow port to (interface, tag) ...
        let where_ = |n: u32| {
            let p = &m.ports[&n];
            (
                m.interfaces[p.interface].ifname.as_str(),
                p.tag().map(|t| t.tci),
            )
        };
        assert_eq!(where_(1), ("eth0", None));
        assert_eq!(where_(5), ("eth1", Some(105)));
        assert_eq!(where_(6), ("eth1", Some(106)));
        assert_eq!(where_(7), ("eth2", Some(105)));
        assert_eq!(where_(8), ("eth1", None), "the native port sends untagged");
        // ... and (trunk, VLAN id) back to the OpenFlow port.
        let sw1 = m.trunk(1).unwrap();
        assert_eq!(sw1.name, "sw1");
        assert_eq!(
            (sw1.vlans.port_of(105), sw1.vlans.port_of(106)),
            (Some(5), Some(6))
        );
        assert_eq!(sw1.vlans.native(), Some(8));
        assert_eq!(m.trunk(2).unwrap().vlans.port_of(105), Some(7));
        assert!(m.trunk(0).is_none());
        assert!(matches!(m.interfaces[0].role, Role::Port(1)));
        let on_sw1: Vec<u32> = m.ports_on(1).map(|p| p.port_no).collect();
        assert_eq!(on_sw1, [5, 6, 8]);
        assert_eq!(m.interface_named("eth2"), Some(2));
    }
}
