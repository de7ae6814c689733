//! One tuple of the tuple space: every rule with the same mask, indexed by a keyed hash of
//! its masked key.

use super::hash::{hash_lanes, Index, Lane, Seed, ENTRY_REST};
use crate::key::{FlowKey, Words};
use std::collections::BTreeMap;

/// Rules sharing one mask.
#[derive(Clone, Debug)]
pub struct Subtable {
    pub mask: Words,
    /// Positions of the mask's non-zero words: only those are hashed and compared.
    pub words: Box<[u8]>,
    /// The same words with their mask bits and hash multipliers (the probe's view).
    lanes: Box<[Lane]>,
    seed: Seed,
    /// Masked key hash -> slot of the highest-priority rule with that masked key.
    pub index: Index,
    /// Priority -> number of rules, for the subtable's maximum priority.
    prios: BTreeMap<u16, u32>,
    /// Creation sequence number: the deterministic tie-break between equal maxima.
    pub seq: u64,
    ports: PortFilter,
    /// Per lane, the masked value every rule has there, or `None` once two rules differ.
    shared: Box<[Option<u64>]>,
    guard: Option<Guard>,
}

/// A lane on which every rule of a subtable has the same value (an ACL's protocol and port,
/// the EtherType of IPv4 rules): a key that differs there matches none of them, so its probe
/// ends before hashing, on a test of a word the packet already holds.
#[derive(Clone, Copy, Debug)]
pub struct Guard {
    lane: Lane,
    value: u64,
}

impl Guard {
    /// Whether a rule of the subtable may match `key`.
    #[inline(always)]
    pub fn admits(&self, key: &Words) -> bool {
        self.lane.word(key) == self.value
    }
}

/// The ingress ports a subtable's rules match, folded to 64 buckets, when its mask covers
/// in_port entirely (as the tables of a port-based pipeline do): a packet from a port no rule
/// names skips the subtable without hashing. Without in_port in the mask, every packet may
/// match.
#[derive(Clone, Debug)]
struct PortFilter {
    /// Rules per bucket (`in_port % 64`), or `None` when the mask does not cover in_port.
    rules: Option<Box<[u32; 64]>>,
    /// Buckets with rules (all bits when not filtering).
    bits: u64,
}

/// The key word holding `in_port`, and the position of its lowest bit in that word.
pub(crate) const IN_PORT_AT: (usize, u32) = {
    let offset = core::mem::offset_of!(FlowKey, in_port);
    let byte = (offset % 8) as u32;
    let shift = if cfg!(target_endian = "little") {
        byte * 8
    } else {
        64 - 32 - byte * 8
    };
    (offset / 8, shift)
};

/// The in_port of `key` folded to its filter bucket.
#[inline(always)]
fn port_bucket(key: &Words) -> u32 {
    let (at, shift) = IN_PORT_AT;
    (key.get(at).copied().unwrap_or(0) >> shift) as u32 & 63
}

impl PortFilter {
    fn new(mask: &Words) -> Self {
        let (at, shift) = IN_PORT_AT;
        let covers = mask
            .get(at)
            .is_some_and(|w| (w >> shift) as u32 == u32::MAX);
        PortFilter {
            rules: covers.then(|| Box::new([0; 64])),
            bits: if covers { 0 } else { u64::MAX },
        }
    }

    fn add(&mut self, key: &Words, delta: i32) {
        if let Some(rules) = &mut self.rules {
            let bucket = port_bucket(key) as usize;
            if let Some(n) = rules.get_mut(bucket) {
                *n = n.saturating_add_signed(delta);
                let bit = 1u64 << bucket;
                self.bits = if *n == 0 {
                    self.bits & !bit
                } else {
                    self.bits | bit
                };
            }
        }
    }
}

impl Subtable {
    pub fn new(seed: Seed, mask: Words, seq: u64) -> Self {
        let words: Box<[u8]> = mask
            .iter()
            .enumerate()
            .filter(|(_, w)| **w != 0)
            .filter_map(|(i, _)| u8::try_from(i).ok())
            .collect();
        let lanes: Box<[Lane]> = words
            .iter()
            .map(|&i| {
                seed.lane(
                    usize::from(i),
                    mask.get(usize::from(i)).copied().unwrap_or(0),
                )
            })
            .collect();
        let index = Index::for_words(words.len());
        Subtable {
            mask,
            words,
            shared: vec![None; lanes.len()].into(),
            lanes,
            seed,
            index,
            prios: BTreeMap::new(),
            seq,
            ports: PortFilter::new(&mask),
            guard: None,
        }
    }

    /// Highest priority of any rule in the subtable (0 when empty).
    pub fn max_priority(&self) -> u16 {
        self.prios.last_key_value().map_or(0, |(p, _)| *p)
    }

    /// Lowest priority of any rule in the subtable.
    pub fn min_priority(&self) -> u16 {
        self.prios.first_key_value().map_or(0, |(p, _)| *p)
    }

    /// Accounts for a new rule with masked key `key`.
    pub fn count_rule(&mut self, priority: u16, key: &Words) {
        let first = self.prios.is_empty();
        for (shared, lane) in self.shared.iter_mut().zip(self.lanes.iter()) {
            let value = lane.word(key);
            if first {
                *shared = Some(value);
            } else if *shared != Some(value) {
                *shared = None;
            }
        }
        self.guard = self.choose_guard();
        *self.prios.entry(priority).or_insert(0) += 1;
        self.ports.add(key, 1);
    }

    /// The shared lane with the most mask bits (the likeliest to turn a key away). Rules
    /// removed later never reopen a lane: the guard stays correct, if weaker.
    fn choose_guard(&self) -> Option<Guard> {
        self.shared
            .iter()
            .zip(self.lanes.iter())
            .filter_map(|(shared, lane)| shared.map(|value| Guard { lane: *lane, value }))
            .max_by_key(|g| g.lane.mask.count_ones())
    }

    /// The test a key must pass for a rule of this subtable to match it, if there is one.
    #[inline(always)]
    pub fn guard(&self) -> Option<Guard> {
        self.guard
    }

    /// Accounts for the removal of a rule with masked key `key`.
    pub fn uncount_rule(&mut self, priority: u16, key: &Words) {
        self.ports.add(key, -1);
        if let Some(n) = self.prios.get_mut(&priority) {
            *n -= 1;
            if *n == 0 {
                self.prios.remove(&priority);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.prios.is_empty()
    }

    /// False when no rule can match a packet with `key` because none names its in_port.
    #[inline(always)]
    pub fn may_match(&self, key: &Words) -> bool {
        self.ports.bits & (1 << port_bucket(key)) != 0
    }

    /// The mask's significant words with their hash multipliers.
    #[inline(always)]
    pub fn lanes(&self) -> &[Lane] {
        &self.lanes
    }

    /// The hash key.
    #[inline(always)]
    pub fn seed(&self) -> Seed {
        self.seed
    }

    /// The keyed hash of `key & mask` (what the index is keyed by).
    #[inline(always)]
    pub fn hash(&self, key: &Words) -> u64 {
        hash_lanes(self.seed, key, &self.lanes)
    }

    /// The first significant word of `key & mask` (stored in the index entries; 0 for a
    /// match-all mask).
    #[inline(always)]
    pub fn word0(&self, key: &Words) -> u64 {
        self.lanes.first().map_or(0, |l| l.word(key))
    }

    /// The significant words of `key & mask` after the first that index entries hold (0 for
    /// a mask with fewer words).
    #[inline(always)]
    pub fn rest(&self, key: &Words) -> [u64; ENTRY_REST] {
        std::array::from_fn(|i| self.lanes.get(i + 1).map_or(0, |l| l.word(key)))
    }

    /// Whether `key & mask` equals the masked rule key `rule` on the significant words beyond
    /// those the index entry holds.
    #[inline(always)]
    pub fn tail_eq(&self, key: &Words, rule: &Words) -> bool {
        self.lanes
            .get(self.index.held_words()..)
            .unwrap_or(&[])
            .iter()
            .all(|l| rule.get(l.at()) == Some(&l.word(key)))
    }

    /// Whether `key & mask` equals the masked rule key `rule` on the significant words.
    #[inline(always)]
    pub fn key_eq(&self, key: &Words, rule: &Words) -> bool {
        self.words.iter().all(|&i| {
            let i = usize::from(i);
            match (key.get(i), self.mask.get(i), rule.get(i)) {
                (Some(k), Some(m), Some(r)) => k & m == *r,
                _ => false,
            }
        })
    }
}
