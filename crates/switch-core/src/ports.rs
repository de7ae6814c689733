//! The OpenFlow ports the controller sees: descriptions, config bits, link state, and the
//! PORT_STATUS each change announces.

use std::collections::BTreeMap;
use std::sync::Arc;

use dataplane::counters::PortCounters;
use dataplane::model::{Op, PortAdmin, PortInfo};
use ofp::{OfpError, Port, PortConfig, PortMod, PortModFailedCode, PortState, PortStatus};

/// Config bits a PORT_MOD may change.
const SETTABLE: u32 = PortConfig::PORT_DOWN.0
    | PortConfig::NO_RECV.0
    | PortConfig::NO_FWD.0
    | PortConfig::NO_PACKET_IN.0;

/// Losses the datapath never sees because they happen in the kernel or the socket ring
/// (reported by the threads that own the sockets, added into port stats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounters {
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    pub rx_errors: u64,
    pub tx_errors: u64,
}

impl std::ops::AddAssign for IoCounters {
    fn add_assign(&mut self, other: Self) {
        self.rx_dropped += other.rx_dropped;
        self.tx_dropped += other.tx_dropped;
        self.rx_errors += other.rx_errors;
        self.tx_errors += other.tx_errors;
    }
}

/// One port with the time it was added (for port stats durations).
#[derive(Clone, Debug)]
pub struct PortEntry {
    pub desc: Port,
    pub created_ns: u64,
    pub io: IoCounters,
    /// The datapath's packet and byte counters of the port.
    pub counters: Arc<PortCounters>,
}

#[derive(Debug, Default)]
pub struct PortTable {
    ports: BTreeMap<u32, PortEntry>,
}

fn datapath_info(desc: &Port) -> PortInfo {
    let config = desc.config;
    PortInfo {
        config: PortAdmin {
            down: config.contains(PortConfig::PORT_DOWN),
            no_recv: config.contains(PortConfig::NO_RECV),
            no_fwd: config.contains(PortConfig::NO_FWD),
            no_packet_in: config.contains(PortConfig::NO_PACKET_IN),
        },
        live: desc.state.contains(PortState::LIVE),
        vlan_mode: None,
    }
}

fn status(reason: u8, desc: &Port) -> PortStatus {
    PortStatus {
        reason,
        desc: desc.clone(),
    }
}

fn set_op(entry: &PortEntry) -> Op {
    Op::SetPort {
        port_no: entry.desc.port_no,
        info: datapath_info(&entry.desc),
        counters: Arc::clone(&entry.counters),
    }
}

impl PortTable {
    pub fn get(&self, port_no: u32) -> Option<&PortEntry> {
        self.ports.get(&port_no)
    }

    pub fn iter(&self) -> impl Iterator<Item = &PortEntry> {
        self.ports.values()
    }

    /// Adds (or replaces, keeping its counters) a port; returns the PORT_STATUS ADD and the
    /// datapath op.
    pub fn add(&mut self, desc: Port, now_ns: u64) -> (PortStatus, Op) {
        let announce = status(ofp::OFPPR_ADD, &desc);
        let counters = self
            .ports
            .get(&desc.port_no)
            .map(|e| Arc::clone(&e.counters))
            .unwrap_or_default();
        let entry = PortEntry {
            desc,
            created_ns: now_ns,
            io: IoCounters::default(),
            counters,
        };
        let op = set_op(&entry);
        self.ports.insert(entry.desc.port_no, entry);
        (announce, op)
    }

    /// Adds kernel and socket losses of a port (deltas since the last report).
    pub fn record_io(&mut self, port_no: u32, delta: IoCounters) {
        if let Some(entry) = self.ports.get_mut(&port_no) {
            entry.io += delta;
        }
    }

    /// Removes a port; returns the PORT_STATUS DELETE and the datapath op.
    pub fn remove(&mut self, port_no: u32) -> Option<(PortStatus, Op)> {
        let entry = self.ports.remove(&port_no)?;
        Some((
            status(ofp::OFPPR_DELETE, &entry.desc),
            Op::RemovePort { port_no },
        ))
    }

    /// Follows a link going up or down; `None` when nothing changed.
    pub fn set_link(&mut self, port_no: u32, up: bool) -> Option<(PortStatus, Op)> {
        let state = if up {
            PortState::LIVE
        } else {
            PortState::LINK_DOWN
        };
        self.update(port_no, |desc| desc.state = state)
    }

    /// Changes a port's description (its link state, speed, features: what the port's
    /// owner learns, never a controller's config); `None` when the port does not exist or
    /// nothing changed, else the PORT_STATUS MODIFY and the datapath op.
    pub fn update(
        &mut self,
        port_no: u32,
        change: impl FnOnce(&mut Port),
    ) -> Option<(PortStatus, Op)> {
        let entry = self.ports.get_mut(&port_no)?;
        let mut desc = entry.desc.clone();
        change(&mut desc);
        desc.port_no = port_no;
        desc.config = entry.desc.config;
        if desc == entry.desc {
            return None;
        }
        entry.desc = desc;
        Some((status(ofp::OFPPR_MODIFY, &entry.desc), set_op(entry)))
    }

    /// PORT_MOD: checks port, hardware address and config bits, then applies the masked
    /// config change. A change announces PORT_STATUS MODIFY.
    pub fn modify(&mut self, pm: &PortMod) -> Result<(Option<PortStatus>, Option<Op>), OfpError> {
        let entry = self
            .ports
            .get_mut(&pm.port_no)
            .ok_or(OfpError::PortModFailed(PortModFailedCode::BadPort))?;
        if entry.desc.hw_addr != pm.hw_addr {
            return Err(OfpError::PortModFailed(PortModFailedCode::BadHwAddr));
        }
        if (pm.config.0 | pm.mask.0) & !SETTABLE != 0 {
            return Err(OfpError::PortModFailed(PortModFailedCode::BadConfig));
        }
        if pm.advertise != 0 && pm.advertise & !entry.desc.supported != 0 {
            return Err(OfpError::PortModFailed(PortModFailedCode::BadAdvertise));
        }
        let config = PortConfig((entry.desc.config.0 & !pm.mask.0) | (pm.config.0 & pm.mask.0));
        if pm.advertise != 0 {
            entry.desc.advertised = pm.advertise;
        }
        if config == entry.desc.config {
            return Ok((None, None));
        }
        entry.desc.config = config;
        Ok((
            Some(status(ofp::OFPPR_MODIFY, &entry.desc)),
            Some(set_op(entry)),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> PortTable {
        let mut t = PortTable::default();
        let desc = Port {
            port_no: 5,
            name: "Gi0/5".into(),
            state: PortState::LIVE,
            ..Port::default()
        };
        t.add(desc, 0);
        t
    }

    #[test]
    fn an_update_announces_only_a_change_of_what_the_owner_knows() {
        let mut t = table();
        assert!(
            t.update(5, |d| d.state = PortState::LIVE).is_none(),
            "no change"
        );
        assert!(t.update(6, |d| d.curr_speed = 1).is_none(), "no such port");
        let (status, op) = t
            .update(5, |d| {
                d.curr_speed = 1_000_000;
                d.state = PortState::LINK_DOWN;
            })
            .expect("changed");
        assert_eq!(status.reason, ofp::OFPPR_MODIFY);
        assert_eq!(
            (status.desc.curr_speed, status.desc.name.as_str()),
            (1_000_000, "Gi0/5")
        );
        match op {
            Op::SetPort { port_no, info, .. } => assert_eq!((port_no, info.live), (5, false)),
            other => panic!("{other:?}"),
        }
        // The controller's config bits and the port number are not the owner's to change.
        assert!(t
            .update(5, |d| {
                d.config = PortConfig::NO_FWD;
                d.port_no = 9;
            })
            .is_none());
        assert_eq!(t.get(5).map(|e| e.desc.config), Some(PortConfig::default()));
    }
}
