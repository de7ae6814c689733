//! The `xdp` backend: the planner's image written into the XDP fast path's maps
//! (`ports::xdp_offload`), and the fast path's counters merged back into the flows', ports'
//! and table's counters.
//!
//! The profile must fit the program: OpenFlow table 0 only, a TCAM on fields the program
//! parses and an exact table on destination MAC and VLAN, within the program's sizes.
//! Entries keep a counter slot while they stay in hardware, so a count read back is added
//! to the rule it was counted for; a freed slot is reused last.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use dataplane::counters::{FlowCounters, PortCounters, Shard};
use dataplane::key::{Field, FlowMatch};
use dataplane::model::FlowId;
use dataplane::shared::Shared;
use offload::image::{HwImage, ImageAction};
use offload::placement::HwCounters;
use offload::profile::{Profile, TableKind};
use offload::sink::Backend;
use ports::xdp_offload::{
    self, AclRule, AttachMode, FastAction, MacKey, OffloadProgram, PortCounts, KEY_WORDS,
};

/// Fields the program parses; an ACL structure may use only these.
const ACL_FIELDS: [Field; 12] = [
    Field::InPort,
    Field::EthDst,
    Field::EthSrc,
    Field::EthType,
    Field::VlanVid,
    Field::IpProto,
    Field::Ipv4Src,
    Field::Ipv4Dst,
    Field::TcpSrc,
    Field::TcpDst,
    Field::UdpSrc,
    Field::UdpDst,
];

/// Checks that `profile` fits the fast path; returns (ACL table, MAC table) indexes.
pub fn check_profile(profile: &Profile) -> Result<(usize, usize), String> {
    let bad = |m: &str| {
        format!(
            "profile {} does not fit the XDP fast path: {m}",
            profile.name
        )
    };
    if profile.tables.iter().any(|t| t.openflow_table != 0) {
        return Err(bad("it offloads tables other than 0"));
    }
    let acl = profile
        .tables
        .iter()
        .position(|t| t.kind == TableKind::Tcam)
        .ok_or_else(|| bad("no TCAM table"))?;
    let mac = profile
        .tables
        .iter()
        .position(|t| t.kind == TableKind::Exact)
        .ok_or_else(|| bad("no exact table"))?;
    if profile.tables.len() != 2 || acl > mac {
        return Err(bad("it needs a TCAM looked up before one exact table"));
    }
    for s in &profile.tables[acl].structures {
        if let Some(f) = s.fields.iter().find(|f| !ACL_FIELDS.contains(f)) {
            return Err(bad(&format!("the TCAM matches {}", f.name())));
        }
        if s.capacity as usize > xdp_offload::ACL_MAX {
            return Err(bad("the TCAM is larger than the program's ACL"));
        }
    }
    for s in &profile.tables[mac].structures {
        let want = [Field::EthDst, Field::VlanVid];
        if s.fields.iter().any(|f| !want.contains(&f)) || s.required.iter().count() != 2 {
            return Err(bad("the exact table is not on destination MAC and VLAN"));
        }
        if s.capacity as usize > xdp_offload::MAC_MAX {
            return Err(bad(
                "the exact table is larger than the program's MAC table",
            ));
        }
    }
    Ok((acl, mac))
}

fn value(m: &FlowMatch, f: Field, of_mask: bool) -> u64 {
    let key = if of_mask { &m.mask } else { &m.key };
    f.get(key).0 as u64
}

/// The match as the program's key words (layout in `bpf/offload.c`).
fn words(m: &FlowMatch, of_mask: bool) -> [u64; KEY_WORDS] {
    let v = |f| value(m, f, of_mask);
    [
        v(Field::InPort) << 32 | v(Field::EthType) << 16 | v(Field::VlanVid),
        v(Field::EthDst) << 16 | v(Field::IpProto) << 8,
        v(Field::EthSrc) << 16,
        v(Field::Ipv4Src) << 32 | v(Field::Ipv4Dst),
        v(Field::TcpSrc) << 16 | v(Field::TcpDst),
    ]
}

fn action(a: &ImageAction) -> FastAction {
    match a {
        ImageAction::Forward(ports) if ports.len() == 1 => FastAction::Forward(ports[0]),
        ImageAction::Drop => FastAction::Drop,
        _ => FastAction::Pass,
    }
}

/// A counter slot in use: whose it is and what was read from it last.
struct Slot {
    table: u8,
    counters: Arc<FlowCounters>,
    hw: Arc<HwCounters>,
    seen: (u64, u64),
}

/// The fast path as the offload planner's device.
pub struct XdpBackend {
    program: OffloadProgram,
    shared: Arc<Shared>,
    acl_table: usize,
    /// OpenFlow port -> interface index.
    ifindexes: HashMap<u32, u32>,
    ports: HashMap<u32, (Arc<PortCounters>, PortCounts)>,
    slots: HashMap<u32, Slot>,
    by_flow: HashMap<FlowId, u32>,
    free: VecDeque<u32>,
    mac: HashMap<MacKey, (FastAction, u32)>,
    /// How each interface runs the program.
    pub modes: Vec<(String, AttachMode)>,
}

impl XdpBackend {
    /// Loads the program and attaches it to every port's interface (natively where the
    /// driver takes it, when `native`; else generically).
    pub fn start(
        profile: &Profile,
        ports: &[(u32, String)],
        shared: Arc<Shared>,
        native: bool,
    ) -> Result<XdpBackend, String> {
        let (acl_table, _) = check_profile(profile)?;
        let io = |e: io::Error| e.to_string();
        let mut program = OffloadProgram::load().map_err(io)?;
        let mut ifindexes = HashMap::new();
        let mut modes = Vec::new();
        for (port_no, ifname) in ports {
            if *port_no >= xdp_offload::PORTS_MAX {
                return Err(format!(
                    "port {port_no}: the XDP fast path takes ports below {}",
                    xdp_offload::PORTS_MAX
                ));
            }
            ifindexes.insert(*port_no, xdp_offload::ifindex(ifname).map_err(io)?);
            modes.push((ifname.clone(), program.attach(ifname, native).map_err(io)?));
        }
        Ok(XdpBackend {
            program,
            shared,
            acl_table,
            ifindexes,
            ports: HashMap::new(),
            slots: HashMap::new(),
            by_flow: HashMap::new(),
            free: (0..xdp_offload::SLOTS).collect(),
            mac: HashMap::new(),
            modes,
        })
    }

    /// The slot of flow `id`, taking a free one (and reading where its count stands).
    fn slot_for(&mut self, image: &HwImage, i: usize) -> Option<u32> {
        let e = &image.entries()[i];
        if let Some(slot) = self.by_flow.get(&e.id) {
            return Some(*slot);
        }
        let slot = self.free.pop_front()?;
        let seen = self.program.slot(slot).unwrap_or((0, 0));
        self.slots.insert(
            slot,
            Slot {
                table: e.table,
                counters: Arc::clone(&e.counters),
                hw: Arc::clone(&e.hw),
                seen,
            },
        );
        self.by_flow.insert(e.id, slot);
        Some(slot)
    }

    /// Adds what slot `slot` counted since it was last read to its flow.
    fn merge_slot(&mut self, slot: u32) {
        let Ok(now) = self.program.slot(slot) else {
            return;
        };
        let Some(s) = self.slots.get_mut(&slot) else {
            return;
        };
        let (packets, bytes) = (now.0.wrapping_sub(s.seen.0), now.1.wrapping_sub(s.seen.1));
        s.seen = now;
        if packets == 0 {
            return;
        }
        let shard = Shard::shared();
        s.counters.add(shard, packets, bytes);
        s.hw.packets.fetch_add(packets, Relaxed);
        s.hw.bytes.fetch_add(bytes, Relaxed);
        if let Some(t) = self.shared.table_counters(s.table) {
            t.add(shard, packets, packets);
        }
    }

    fn program_ports(&mut self, image: &HwImage) {
        for (port_no, port) in &image.ports {
            let Some(&ifindex) = self.ifindexes.get(port_no) else {
                continue;
            };
            let info = &port.info;
            let receives = !info.config.no_recv && !info.config.down;
            let forwards = !info.config.down && !info.config.no_fwd && info.live;
            if let Err(e) = self.program.set_port(*port_no, ifindex, receives, forwards) {
                crate::log!(crate::log::Level::Warn, "xdp port {port_no}: {e}");
            }
            self.ports
                .entry(*port_no)
                .or_insert_with(|| (Arc::clone(&port.counters), PortCounts::default()));
        }
    }
}

impl Backend for XdpBackend {
    fn program(&mut self, image: &HwImage) {
        self.program_ports(image);
        // Rules gone from hardware: their last counts, then their slots back (reused last).
        let present: std::collections::HashSet<FlowId> =
            image.entries().iter().map(|e| e.id).collect();
        let gone: Vec<(FlowId, u32)> = self
            .by_flow
            .iter()
            .filter(|(id, _)| !present.contains(id))
            .map(|(id, slot)| (*id, *slot))
            .collect();
        for (id, slot) in gone {
            self.merge_slot(slot);
            self.slots.remove(&slot);
            self.by_flow.remove(&id);
            self.free.push_back(slot);
        }
        let mut acl = Vec::new();
        let mut mac: HashMap<MacKey, (FastAction, u32)> = HashMap::new();
        for i in 0..image.entries().len() {
            let Some(slot) = self.slot_for(image, i) else {
                continue;
            };
            let e = &image.entries()[i];
            let act = action(&e.action);
            if e.hw_table == self.acl_table {
                acl.push(AclRule {
                    key: words(&e.match_, false),
                    mask: words(&e.match_, true),
                    action: act,
                    slot,
                });
            } else {
                let key = MacKey {
                    eth_dst: Field::EthDst.get(&e.match_.key).to_mac(),
                    vlan_vid: Field::VlanVid.get(&e.match_.key).0 as u16,
                };
                mac.insert(key, (act, slot));
            }
        }
        // Fewer decisions first (MAC entries gone or changed), then the new ACL, then new
        // MAC entries: every state in between sends no frame where neither image would.
        let stale: Vec<MacKey> = self
            .mac
            .iter()
            .filter(|(k, v)| mac.get(k) != Some(v))
            .map(|(k, _)| *k)
            .collect();
        for key in &stale {
            let _ = self.program.remove_mac(key);
        }
        let complete = match self.program.set_acl(&acl) {
            Ok(taken) => taken == acl.len(),
            Err(e) => {
                crate::log!(crate::log::Level::Warn, "xdp ACL: {e}");
                false
            }
        };
        if !complete {
            // ACL entries were left out, and MAC entries rank below them all: software's.
            mac.clear();
            for key in std::mem::take(&mut self.mac).keys() {
                let _ = self.program.remove_mac(key);
            }
        }
        for (key, (act, slot)) in &mac {
            if self.mac.get(key) != Some(&(*act, *slot)) || stale.contains(key) {
                if let Err(e) = self.program.set_mac(*key, *act, *slot) {
                    crate::log!(crate::log::Level::Warn, "xdp MAC entry: {e}");
                }
            }
        }
        self.mac = mac;
    }

    fn sync_counters(&mut self) {
        let slots: Vec<u32> = self.slots.keys().copied().collect();
        for slot in slots {
            self.merge_slot(slot);
        }
        let shard = Shard::shared();
        for (port_no, (counters, seen)) in self.ports.iter_mut() {
            let Ok(now) = self.program.port(*port_no) else {
                continue;
            };
            counters.rx.add(
                shard,
                now.rx_packets - seen.rx_packets,
                now.rx_bytes - seen.rx_bytes,
            );
            counters.tx.add(
                shard,
                now.tx_packets - seen.tx_packets,
                now.tx_bytes - seen.tx_bytes,
            );
            *seen = now;
        }
    }
}
