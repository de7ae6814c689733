//! The hardware image: what the hardware tables hold after the last publish, in the form a
//! fast path looks packets up in, and the lookup itself.
//!
//! Each OpenFlow table that hardware serves gets one tuple space over the entries of all its
//! hardware tables: entries grouped by mask, a hash per mask. Every entry carries its rank
//! (its position: hardware table in lookup order, then priority, highest first), and a
//! packet takes the matching entry of lowest rank, as the hardware would (a TCAM's first hit,
//! an exact table's single hit, the ACL before the MAC table). A deciding entry that
//! continues at a later table continues the lookup there; the packet is decided only when it
//! ends at a forwarding or dropping entry, and punted to software as a whole otherwise (so
//! software counts it, once).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use dataplane::counters::{FlowCounters, PortCounters, Shard};
use dataplane::key::{frag, FlowKey, FlowMatch, KEY_WORDS};
use dataplane::model::{FlowId, PortInfo};
use dataplane::shared::Shared;

use crate::placement::{EntryAction, HwCounters, Planner};
use crate::program::HwProgram;

/// Longest chain of tables a packet may cross in hardware.
pub const MAX_CHAIN: usize = 8;

/// What a hardware entry does.
#[derive(Clone, Debug)]
pub enum ImageAction {
    Forward(Box<[u32]>),
    Drop,
    Goto(u8),
    Punt,
}

/// One hardware entry.
pub struct ImageEntry {
    /// The rule it belongs to.
    pub id: FlowId,
    /// The profile's hardware table holding it.
    pub hw_table: usize,
    pub rank: u32,
    pub table: u8,
    pub match_: FlowMatch,
    pub action: ImageAction,
    pub counters: Arc<FlowCounters>,
    pub hw: Arc<HwCounters>,
}

struct Tuple {
    mask: FlowKey,
    by_key: HashMap<u64, Vec<u32>>,
}

#[derive(Default)]
struct TableImage {
    tuples: Vec<Tuple>,
}

/// A port as hardware forwards to it.
#[derive(Clone)]
pub struct ImagePort {
    pub info: PortInfo,
    pub counters: Arc<PortCounters>,
}

impl ImagePort {
    fn receives(&self) -> bool {
        !self.info.config.no_recv && !self.info.config.down
    }

    fn forwards(&self) -> bool {
        !self.info.config.down && !self.info.config.no_fwd && self.info.live
    }
}

/// The hardware state a fast path reads.
#[derive(Default)]
pub struct HwImage {
    entries: Vec<ImageEntry>,
    tables: HashMap<u8, TableImage>,
    pub ports: HashMap<u32, ImagePort>,
}

/// How a packet fares in hardware.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Decided: the entries it met (one per table), and what the last one does.
    Decided { path: [u32; MAX_CHAIN], len: usize },
    /// Goes to software.
    Punt,
}

fn fold(key: &[u64; KEY_WORDS], mask: &[u64; KEY_WORDS]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for i in 0..KEY_WORDS {
        h = (h ^ (key[i] & mask[i]))
            .wrapping_mul(0x0100_0000_01b3)
            .rotate_left(31);
    }
    h
}

impl HwImage {
    /// The image of the planner's current placement, with the ports given.
    pub fn build(planner: &Planner, ports: HashMap<u32, ImagePort>) -> HwImage {
        let mut placed: Vec<_> = planner
            .rules()
            .filter_map(|r| r.entry.as_ref().map(|e| (r, e)))
            .collect();
        placed.sort_by_key(|(r, e)| (e.table, std::cmp::Reverse(r.priority), r.seq));
        let mut image = HwImage {
            ports,
            ..HwImage::default()
        };
        for (rank, (r, e)) in placed.into_iter().enumerate() {
            let action = match &e.action {
                EntryAction::Punt => ImageAction::Punt,
                EntryAction::Decide(HwProgram::Forward(ports)) => {
                    ImageAction::Forward(ports.clone().into_boxed_slice())
                }
                EntryAction::Decide(HwProgram::Drop) => ImageAction::Drop,
                EntryAction::Decide(HwProgram::Goto(t)) => ImageAction::Goto(*t),
                EntryAction::Decide(_) => ImageAction::Punt,
            };
            let index = image.entries.len() as u32;
            image.entries.push(ImageEntry {
                id: r.id,
                hw_table: e.table,
                rank: rank as u32,
                table: r.table,
                match_: e.match_,
                action,
                counters: Arc::clone(&r.counters),
                hw: Arc::clone(&r.hw),
            });
            let table = image.tables.entry(r.table).or_default();
            let t = match table
                .tuples
                .iter()
                .position(|t| t.mask.words() == e.match_.mask.words())
            {
                Some(t) => t,
                None => {
                    table.tuples.push(Tuple {
                        mask: e.match_.mask,
                        by_key: HashMap::new(),
                    });
                    table.tuples.len() - 1
                }
            };
            let tuple = &mut table.tuples[t];
            tuple
                .by_key
                .entry(fold(e.match_.key.words(), tuple.mask.words()))
                .or_default()
                .push(index);
        }
        image
    }

    pub fn entry(&self, i: u32) -> Option<&ImageEntry> {
        self.entries.get(i as usize)
    }

    /// Every entry, in rank order.
    pub fn entries(&self) -> &[ImageEntry] {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry a packet meets in hardware table chain `table`, if any.
    fn lookup(&self, table: u8, key: &FlowKey) -> Option<u32> {
        let t = self.tables.get(&table)?;
        let mut best: Option<(u32, u32)> = None;
        for tuple in &t.tuples {
            let Some(ids) = tuple.by_key.get(&fold(key.words(), tuple.mask.words())) else {
                continue;
            };
            for &i in ids {
                let e = &self.entries[i as usize];
                if e.match_.matches(key) && best.is_none_or(|(rank, _)| e.rank < rank) {
                    best = Some((e.rank, i));
                }
            }
        }
        best.map(|(_, i)| i)
    }

    /// Looks a parsed packet up from table 0. Packets the hardware should not touch
    /// (fragments, an ingress port that does not receive, an output it cannot send to)
    /// are punted.
    pub fn classify(&self, key: &FlowKey) -> Verdict {
        if key.layout.frag & frag::IS_FRAGMENT != 0 {
            return Verdict::Punt;
        }
        if !self
            .ports
            .get(&key.in_port)
            .is_some_and(ImagePort::receives)
        {
            return Verdict::Punt;
        }
        let mut path = [0u32; MAX_CHAIN];
        let mut table = 0u8;
        for len in 0..MAX_CHAIN {
            let Some(i) = self.lookup(table, key) else {
                return Verdict::Punt;
            };
            path[len] = i;
            match &self.entries[i as usize].action {
                ImageAction::Punt => return Verdict::Punt,
                ImageAction::Goto(next) => table = *next,
                ImageAction::Drop => return Verdict::Decided { path, len: len + 1 },
                ImageAction::Forward(ports) => {
                    let sendable = ports.iter().all(|p| {
                        *p != key.in_port && self.ports.get(p).is_some_and(ImagePort::forwards)
                    });
                    return if sendable {
                        Verdict::Decided { path, len: len + 1 }
                    } else {
                        Verdict::Punt
                    };
                }
            }
        }
        Verdict::Punt
    }

    /// Counts a decided packet of `bytes` as the pipeline would have: the ingress port's
    /// receive counter, each entry met and its table, each output's transmit counter. Returns
    /// the output ports.
    pub fn count(
        &self,
        shard: Shard,
        shared: &Shared,
        in_port: u32,
        path: &[u32],
        bytes: u64,
    ) -> &[u32] {
        if let Some(p) = self.ports.get(&in_port) {
            p.counters.rx.add(shard, 1, bytes);
        }
        let mut outputs: &[u32] = &[];
        for &i in path {
            let e = &self.entries[i as usize];
            e.counters.add(shard, 1, bytes);
            e.hw.packets
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            e.hw.bytes
                .fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
            if let Some(t) = shared.table_counters(e.table) {
                t.add(shard, 1, 1);
            }
            if let ImageAction::Forward(ports) = &e.action {
                outputs = ports;
            }
        }
        for p in outputs {
            if let Some(port) = self.ports.get(p) {
                port.counters.tx.add(shard, 1, bytes);
            }
        }
        outputs
    }
}

/// The image datapath threads read, swapped whole at each publish.
#[derive(Default)]
pub struct PublishedImage {
    current: Mutex<Arc<HwImage>>,
}

impl PublishedImage {
    /// The image now (one lock and a reference count per call: once per batch).
    pub fn load(&self) -> Arc<HwImage> {
        Arc::clone(&self.current.lock().unwrap_or_else(PoisonError::into_inner))
    }

    pub fn store(&self, image: HwImage) {
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(image);
    }
}
