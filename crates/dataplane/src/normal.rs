//! `OFPP_NORMAL`: a legacy 802.1Q learning switch, used for fail-standalone mode and as the
//! "legacy switch" of HARMLESS tests.
//!
//! Ports are access ports (one untagged VLAN) or trunks (tagged VLANs, optionally a native
//! untagged one). The MAC table learns `(vlan, source MAC) -> port`, ages entries out, and
//! is bounded: under a MAC flood the oldest entries are evicted instead of memory growing.
//! Learning and lookup take `&self` (sharded locks), so datapath threads share one table.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::Mutex;

/// A set of VLAN ids (0..4096) as a bitmap (boxed: port modes stay small).
#[derive(Clone, PartialEq, Eq)]
pub struct VlanSet(Box<[u64; 64]>);

impl VlanSet {
    /// The empty set.
    pub fn new() -> Self {
        Self(Box::new([0; 64]))
    }

    /// Adds `vid` (only its low 12 bits count).
    pub fn insert(&mut self, vid: u16) {
        let v = usize::from(vid & 0x0fff);
        if let Some(w) = self.0.get_mut(v / 64) {
            *w |= 1 << (v % 64);
        }
    }

    /// Whether `vid` is in the set.
    pub fn contains(&self, vid: u16) -> bool {
        let v = usize::from(vid & 0x0fff);
        self.0.get(v / 64).is_some_and(|w| w & (1 << (v % 64)) != 0)
    }
}

impl Default for VlanSet {
    fn default() -> Self {
        Self::new()
    }
}

impl FromIterator<u16> for VlanSet {
    fn from_iter<I: IntoIterator<Item = u16>>(iter: I) -> Self {
        let mut s = Self::new();
        iter.into_iter().for_each(|v| s.insert(v));
        s
    }
}

impl std::fmt::Debug for VlanSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set()
            .entries((0..4096u16).filter(|&v| self.contains(v)))
            .finish()
    }
}

/// How a port carries VLANs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PortVlanMode {
    /// Tagged VLANs (`allowed`, all when `None`) plus an optional untagged native VLAN.
    Trunk {
        /// VLANs accepted and sent tagged; `None` = all.
        allowed: Option<VlanSet>,
        /// VLAN of untagged (and priority-tagged) frames, sent untagged.
        native: Option<u16>,
    },
    /// One VLAN, untagged on the wire.
    Access(u16),
}

impl PortVlanMode {
    /// VLAN an incoming frame belongs to, given its VLAN id (`None` when untagged).
    fn ingress_vlan(&self, tag: Option<u16>) -> Result<u16, DropReason> {
        let tag = tag.map(|t| t & 0x0fff).filter(|&t| t != 0);
        match (self, tag) {
            (PortVlanMode::Access(v), None) => Ok(*v),
            (PortVlanMode::Access(_), Some(_)) => Err(DropReason::TaggedOnAccess),
            (PortVlanMode::Trunk { native, .. }, None) => native.ok_or(DropReason::NoNativeVlan),
            (PortVlanMode::Trunk { allowed, .. }, Some(t)) => match allowed {
                Some(set) if !set.contains(t) => Err(DropReason::VlanNotAllowed),
                _ => Ok(t),
            },
        }
    }

    /// How the port sends a frame of `vlan`, or `None` if it does not carry it.
    fn egress(&self, vlan: u16) -> Option<Egress> {
        match self {
            PortVlanMode::Access(v) => (*v == vlan).then_some(Egress::Untagged),
            PortVlanMode::Trunk { native, .. } if *native == Some(vlan) => Some(Egress::Untagged),
            PortVlanMode::Trunk { allowed, .. } => match allowed {
                Some(set) if !set.contains(vlan) => None,
                _ => Some(Egress::Tagged(vlan)),
            },
        }
    }
}

#[derive(Clone, Copy)]
enum Egress {
    Untagged,
    Tagged(u16),
}

/// VLAN tag change for one output, relative to the frame as received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TagOp {
    /// Send as received.
    Keep,
    /// Push an 802.1Q tag with this VLAN id.
    Push(u16),
    /// Pop the outer tag.
    Pop,
    /// Rewrite the outer tag's VLAN id (a priority tag leaving on a tagged VLAN).
    SetVid(u16),
}

/// Why NORMAL drops a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// The ingress port has no VLAN configuration.
    UnknownPort,
    /// A tagged (non-zero VID) frame on an access port.
    TaggedOnAccess,
    /// An untagged frame on a trunk without a native VLAN.
    NoNativeVlan,
    /// A tagged frame for a VLAN the trunk does not carry.
    VlanNotAllowed,
    /// The source MAC is multicast.
    MulticastSource,
    /// The destination is an IEEE 802.1D reserved address (01:80:c2:00:00:0x), e.g. STP.
    ReservedMulticast,
    /// The destination was learned on the ingress port.
    SameSegment,
}

/// Where the frame goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forward {
    /// Nowhere.
    Drop(DropReason),
    /// One known port.
    Unicast(u32, TagOp),
    /// Every other port of the VLAN: see [`NormalDecision::outputs`].
    Flood,
}

/// NORMAL's verdict for one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NormalDecision {
    /// VLAN the frame belongs to (0 when dropped before classification).
    pub vlan: u16,
    /// Ingress port.
    pub in_port: u32,
    /// VLAN id of the received tag, if any.
    pub in_tag: Option<u16>,
    /// Destination.
    pub forward: Forward,
}

impl NormalDecision {
    /// The output ports with their tag changes: one for unicast, every port carrying the
    /// VLAN except the ingress port for flood, none for drop. Allocation-free.
    pub fn outputs<'a>(
        &'a self,
        ports: &'a NormalPorts,
    ) -> impl Iterator<Item = (u32, TagOp)> + 'a {
        let unicast = match self.forward {
            Forward::Unicast(port, op) => Some((port, op)),
            _ => None,
        };
        let flood = matches!(self.forward, Forward::Flood);
        let flooded = ports
            .ports
            .iter()
            .filter(move |(port, _)| flood && *port != self.in_port)
            .filter_map(move |(port, mode)| {
                Some((*port, tag_op(self.in_tag, mode.egress(self.vlan)?)))
            });
        unicast.into_iter().chain(flooded)
    }
}

fn tag_op(in_tag: Option<u16>, egress: Egress) -> TagOp {
    match (in_tag, egress) {
        (None, Egress::Untagged) => TagOp::Keep,
        (None, Egress::Tagged(v)) => TagOp::Push(v),
        (Some(_), Egress::Untagged) => TagOp::Pop,
        (Some(t), Egress::Tagged(v)) if t & 0x0fff == v => TagOp::Keep,
        (Some(_), Egress::Tagged(v)) => TagOp::SetVid(v),
    }
}

/// The VLAN configuration of the ports NORMAL may use, sorted by port number.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NormalPorts {
    ports: Vec<(u32, PortVlanMode)>,
}

impl NormalPorts {
    /// No ports.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces a port.
    pub fn set(&mut self, port: u32, mode: PortVlanMode) {
        match self.ports.binary_search_by_key(&port, |p| p.0) {
            Ok(i) => {
                if let Some(slot) = self.ports.get_mut(i) {
                    slot.1 = mode;
                }
            }
            Err(i) => self.ports.insert(i, (port, mode)),
        }
    }

    /// Removes a port.
    pub fn remove(&mut self, port: u32) {
        if let Ok(i) = self.ports.binary_search_by_key(&port, |p| p.0) {
            self.ports.remove(i);
        }
    }

    /// A port's mode.
    pub fn get(&self, port: u32) -> Option<&PortVlanMode> {
        let i = self.ports.binary_search_by_key(&port, |p| p.0).ok()?;
        self.ports.get(i).map(|p| &p.1)
    }
}

/// MAC table sizing and aging.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MacTableConfig {
    /// Most entries held (shared evenly by the shards).
    pub capacity: usize,
    /// An entry not refreshed for this long is forgotten.
    pub max_age_ns: u64,
}

impl Default for MacTableConfig {
    fn default() -> Self {
        Self {
            capacity: 8192,
            max_age_ns: 300_000_000_000,
        }
    }
}

/// MAC table counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MacTableStats {
    /// New entries.
    pub learned: u64,
    /// Entries whose port changed (a station moved).
    pub moved: u64,
    /// Entries evicted to stay within capacity.
    pub evicted: u64,
    /// Entries removed after aging out.
    pub expired: u64,
}

type MacKey = (u16, [u8; 6]);

struct Entry {
    port: u32,
    last_seen: u64,
    /// Time recorded with this entry's position in the eviction queue.
    queued_at: u64,
}

/// One lock's worth of the table: entries plus their eviction order (oldest first), with
/// lazily skipped stale positions and a second chance for refreshed entries.
struct Shard {
    map: HashMap<MacKey, Entry>,
    order: VecDeque<(MacKey, u64)>,
    capacity: usize,
    stats: MacTableStats,
}

const SHARDS: usize = 8;

/// The learning table.
pub struct MacTable {
    config: MacTableConfig,
    hasher: RandomState,
    shards: [Mutex<Shard>; SHARDS],
}

impl MacTable {
    /// A table with all memory reserved up front.
    pub fn new(config: MacTableConfig) -> Self {
        let per_shard = config.capacity.div_ceil(SHARDS).max(1);
        let shards = std::array::from_fn(|_| {
            Mutex::new(Shard {
                map: HashMap::with_capacity(per_shard),
                order: VecDeque::with_capacity(per_shard * 2),
                capacity: per_shard,
                stats: MacTableStats::default(),
            })
        });
        Self {
            config,
            hasher: RandomState::new(),
            shards,
        }
    }

    fn shard(&self, key: &MacKey) -> std::sync::MutexGuard<'_, Shard> {
        let i = (self.hasher.hash_one(key) as usize) % SHARDS;
        // A poisoned lock still holds a usable table.
        self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Learns `(vlan, mac)` on `port` at `now_ns`.
    pub fn learn(&self, vlan: u16, mac: [u8; 6], port: u32, now_ns: u64) {
        let key = (vlan, mac);
        let mut shard = self.shard(&key);
        shard.learn(key, port, now_ns, self.config.max_age_ns);
    }

    /// The port `(vlan, mac)` was learned on, unless aged out.
    pub fn lookup(&self, vlan: u16, mac: [u8; 6], now_ns: u64) -> Option<u32> {
        let key = (vlan, mac);
        let shard = self.shard(&key);
        let e = shard.map.get(&key)?;
        (now_ns.saturating_sub(e.last_seen) < self.config.max_age_ns).then_some(e.port)
    }

    /// Forgets everything learned on `port` (port down or removed).
    pub fn flush_port(&self, port: u32) {
        for m in &self.shards {
            let mut s = m.lock().unwrap_or_else(|e| e.into_inner());
            s.map.retain(|_, e| e.port != port);
        }
    }

    /// Removes aged-out entries (call periodically; lookups ignore them anyway).
    pub fn expire(&self, now_ns: u64) {
        for m in &self.shards {
            let mut s = m.lock().unwrap_or_else(|e| e.into_inner());
            let before = s.map.len();
            let max_age = self.config.max_age_ns;
            s.map
                .retain(|_, e| now_ns.saturating_sub(e.last_seen) < max_age);
            s.stats.expired += (before - s.map.len()) as u64;
            s.compact_order();
        }
    }

    /// Entries held (including aged ones not yet expired).
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|m| m.lock().unwrap_or_else(|e| e.into_inner()).map.len())
            .sum()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Summed counters.
    pub fn stats(&self) -> MacTableStats {
        self.shards.iter().fold(MacTableStats::default(), |acc, m| {
            let s = m.lock().unwrap_or_else(|e| e.into_inner()).stats;
            MacTableStats {
                learned: acc.learned + s.learned,
                moved: acc.moved + s.moved,
                evicted: acc.evicted + s.evicted,
                expired: acc.expired + s.expired,
            }
        })
    }

    /// Classifies a frame into its VLAN, learns its source and decides where it goes.
    /// `in_vlan_tag` is the outer tag's VLAN id (`None` when untagged; VID 0 is a priority
    /// tag and counts as untagged for classification).
    pub fn decide(
        &self,
        ports: &NormalPorts,
        in_port: u32,
        in_vlan_tag: Option<u16>,
        eth_src: [u8; 6],
        eth_dst: [u8; 6],
        now_ns: u64,
    ) -> NormalDecision {
        let mut d = NormalDecision {
            vlan: 0,
            in_port,
            in_tag: in_vlan_tag,
            forward: Forward::Flood,
        };
        let vlan = match ports
            .get(in_port)
            .ok_or(DropReason::UnknownPort)
            .and_then(|m| m.ingress_vlan(in_vlan_tag))
        {
            Ok(v) => v,
            Err(reason) => {
                d.forward = Forward::Drop(reason);
                return d;
            }
        };
        d.vlan = vlan;
        if eth_src[0] & 1 != 0 {
            d.forward = Forward::Drop(DropReason::MulticastSource);
            return d;
        }
        if eth_dst[..5] == [0x01, 0x80, 0xc2, 0x00, 0x00] && eth_dst[5] < 0x10 {
            d.forward = Forward::Drop(DropReason::ReservedMulticast);
            return d;
        }
        self.learn(vlan, eth_src, in_port, now_ns);
        if eth_dst[0] & 1 != 0 {
            return d;
        }
        let Some(out) = self.lookup(vlan, eth_dst, now_ns) else {
            return d;
        };
        if out == in_port {
            d.forward = Forward::Drop(DropReason::SameSegment);
        } else if let Some(egress) = ports.get(out).and_then(|m| m.egress(vlan)) {
            d.forward = Forward::Unicast(out, tag_op(in_vlan_tag, egress));
        }
        d
    }
}

impl Shard {
    fn learn(&mut self, key: MacKey, port: u32, now: u64, max_age: u64) {
        if let Some(e) = self.map.get_mut(&key) {
            if e.port != port {
                e.port = port;
                self.stats.moved += 1;
            }
            e.last_seen = now;
            return;
        }
        if self.map.len() >= self.capacity {
            self.evict_one(now, max_age);
        }
        self.map.insert(
            key,
            Entry {
                port,
                last_seen: now,
                queued_at: now,
            },
        );
        self.order.push_back((key, now));
        self.stats.learned += 1;
        if self.order.len() > self.capacity * 2 {
            self.compact_order();
        }
    }

    /// Evicts the least recently refreshed entry (FIFO with a second chance for entries
    /// seen since they were queued); aged-out entries are counted as expired.
    fn evict_one(&mut self, now: u64, max_age: u64) {
        while let Some((key, queued_at)) = self.order.pop_front() {
            let Some(e) = self.map.get_mut(&key) else {
                continue;
            };
            if e.queued_at != queued_at {
                continue;
            }
            if e.last_seen > queued_at {
                e.queued_at = e.last_seen;
                self.order.push_back((key, e.last_seen));
                continue;
            }
            let aged = now.saturating_sub(e.last_seen) >= max_age;
            self.map.remove(&key);
            if aged {
                self.stats.expired += 1;
            } else {
                self.stats.evicted += 1;
            }
            return;
        }
    }

    /// Drops queue positions whose entries are gone or re-queued.
    fn compact_order(&mut self) {
        let map = &self.map;
        self.order
            .retain(|(key, queued_at)| map.get(key).is_some_and(|e| e.queued_at == *queued_at));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;
    const BCAST: [u8; 6] = [0xff; 6];

    fn mac(n: u8) -> [u8; 6] {
        [0x02, 0, 0, 0, 0, n]
    }

    /// Ports 1, 2: access VLAN 10; port 3: access VLAN 20; port 4: trunk of 10 and 20 with
    /// native 30; port 5: trunk of everything, no native.
    fn ports() -> NormalPorts {
        let mut p = NormalPorts::new();
        p.set(1, PortVlanMode::Access(10));
        p.set(2, PortVlanMode::Access(10));
        p.set(3, PortVlanMode::Access(20));
        p.set(
            4,
            PortVlanMode::Trunk {
                allowed: Some([10, 20, 30].into_iter().collect()),
                native: Some(30),
            },
        );
        p.set(
            5,
            PortVlanMode::Trunk {
                allowed: None,
                native: None,
            },
        );
        p
    }

    fn outs(d: &NormalDecision, p: &NormalPorts) -> Vec<(u32, TagOp)> {
        d.outputs(p).collect()
    }

    #[test]
    fn unknown_destination_floods_within_the_vlan_with_tagging() {
        let (t, p) = (MacTable::new(MacTableConfig::default()), ports());
        let d = t.decide(&p, 1, None, mac(1), BCAST, 0);
        assert_eq!((d.vlan, d.forward), (10, Forward::Flood));
        assert_eq!(
            outs(&d, &p),
            vec![(2, TagOp::Keep), (4, TagOp::Push(10)), (5, TagOp::Push(10))]
        );
        let d = t.decide(&p, 5, Some(10), mac(5), mac(99), 0);
        assert_eq!(
            outs(&d, &p),
            vec![(1, TagOp::Pop), (2, TagOp::Pop), (4, TagOp::Keep)]
        );
        let d = t.decide(&p, 4, None, mac(4), BCAST, 0);
        assert_eq!(d.vlan, 30, "untagged on trunk is the native VLAN");
        assert_eq!(outs(&d, &p), vec![(5, TagOp::Push(30))]);
    }

    #[test]
    fn learned_destination_is_unicast_and_never_back_to_ingress() {
        let (t, p) = (MacTable::new(MacTableConfig::default()), ports());
        t.decide(&p, 2, None, mac(2), BCAST, 0);
        let d = t.decide(&p, 1, None, mac(1), mac(2), 1);
        assert_eq!(d.forward, Forward::Unicast(2, TagOp::Keep));
        assert_eq!(outs(&d, &p), vec![(2, TagOp::Keep)]);
        let d = t.decide(&p, 5, Some(10), mac(5), mac(1), 2);
        assert_eq!(d.forward, Forward::Unicast(1, TagOp::Pop));
        let d = t.decide(&p, 1, None, mac(3), mac(1), 3);
        assert_eq!(d.forward, Forward::Drop(DropReason::SameSegment));
        assert!(outs(&d, &p).is_empty());
        // Same MAC in another VLAN is unknown there.
        let d = t.decide(&p, 3, None, mac(30), mac(2), 4);
        assert_eq!((d.vlan, d.forward), (20, Forward::Flood));
        assert_eq!(
            outs(&d, &p),
            vec![(4, TagOp::Push(20)), (5, TagOp::Push(20))]
        );
    }

    #[test]
    fn ingress_vlan_rules() {
        let (t, p) = (MacTable::new(MacTableConfig::default()), ports());
        let drop = |port, tag| t.decide(&p, port, tag, mac(9), BCAST, 0).forward;
        assert_eq!(drop(1, Some(10)), Forward::Drop(DropReason::TaggedOnAccess));
        assert_eq!(drop(4, Some(40)), Forward::Drop(DropReason::VlanNotAllowed));
        assert_eq!(drop(5, None), Forward::Drop(DropReason::NoNativeVlan));
        assert_eq!(drop(9, None), Forward::Drop(DropReason::UnknownPort));
        let prio = t.decide(&p, 1, Some(0), mac(8), BCAST, 0);
        assert_eq!(prio.vlan, 10, "priority tag on access");
        assert_eq!(
            outs(&prio, &p),
            vec![
                (2, TagOp::Pop),
                (4, TagOp::SetVid(10)),
                (5, TagOp::SetVid(10))
            ]
        );
        let d = t.decide(&p, 1, None, [0x01, 0, 0x5e, 0, 0, 1], BCAST, 0);
        assert_eq!(d.forward, Forward::Drop(DropReason::MulticastSource));
        let d = t.decide(&p, 1, None, mac(1), [0x01, 0x80, 0xc2, 0, 0, 0], 0);
        assert_eq!(d.forward, Forward::Drop(DropReason::ReservedMulticast));
    }

    #[test]
    fn entries_age_out_and_stations_move() {
        let cfg = MacTableConfig {
            capacity: 64,
            max_age_ns: 10 * S,
        };
        let (t, p) = (MacTable::new(cfg), ports());
        t.decide(&p, 2, None, mac(2), BCAST, 0);
        assert_eq!(t.lookup(10, mac(2), 9 * S), Some(2));
        assert_eq!(t.lookup(10, mac(2), 10 * S), None);
        assert_eq!(
            t.decide(&p, 1, None, mac(1), mac(2), 10 * S).forward,
            Forward::Flood
        );
        t.decide(&p, 2, None, mac(2), BCAST, 11 * S);
        t.decide(&p, 5, Some(10), mac(2), BCAST, 12 * S);
        assert_eq!(t.lookup(10, mac(2), 12 * S), Some(5));
        assert_eq!(t.stats().moved, 1);
        t.expire(30 * S);
        assert!(t.is_empty());
        assert_eq!(t.stats().expired, 2);
        t.learn(10, mac(7), 1, 0);
        t.flush_port(1);
        assert_eq!(t.lookup(10, mac(7), 0), None);
    }

    #[test]
    fn mac_flood_stays_within_capacity_and_keeps_active_stations() {
        let cfg = MacTableConfig {
            capacity: 64,
            max_age_ns: 300 * S,
        };
        let t = MacTable::new(cfg);
        let per_shard = 64usize.div_ceil(SHARDS);
        t.learn(10, mac(200), 4, 0);
        for i in 0..100_000u32 {
            let b = i.to_be_bytes();
            t.learn(
                10,
                [0x02, 0x99, b[0], b[1], b[2], b[3]],
                1,
                u64::from(i) + 1,
            );
            if i % 4 == 0 {
                // The real station keeps talking.
                t.learn(10, mac(200), 4, u64::from(i) + 1);
            }
        }
        assert!(t.len() <= per_shard * SHARDS);
        assert_eq!(
            t.lookup(10, mac(200), 100_001),
            Some(4),
            "refreshed entry survives"
        );
        let s = t.stats();
        assert_eq!(s.learned - s.evicted - s.expired, t.len() as u64);
        for m in &t.shards {
            let shard = m.lock().unwrap_or_else(|e| e.into_inner());
            assert!(shard.order.len() <= shard.capacity * 2 + 1);
        }
    }

    #[test]
    fn ports_and_vlan_sets() {
        let mut p = ports();
        p.set(1, PortVlanMode::Access(20));
        assert_eq!(p.get(1), Some(&PortVlanMode::Access(20)));
        p.remove(1);
        assert_eq!(p.get(1), None);
        let s: VlanSet = [1, 4095, 4096 + 7].into_iter().collect();
        assert!(s.contains(1) && s.contains(4095) && s.contains(7) && !s.contains(2));
        assert_eq!(format!("{s:?}"), "{1, 7, 4095}");
    }
}
