//! One tuple of the tuple space: every rule with the same mask, indexed by a keyed hash of
//! its masked key.

use super::hash::{hash_lanes, Lane, RawIndex, Seed};
use crate::key::KEY_WORDS;
use std::collections::BTreeMap;

/// Key or mask words.
pub type Words = [u64; KEY_WORDS];

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
    pub index: RawIndex,
    /// Priority -> number of rules, for the subtable's maximum priority.
    prios: BTreeMap<u16, u32>,
    /// Creation sequence number: the deterministic tie-break between equal maxima.
    pub seq: u64,
    /// Position and mask of the first significant word (`word0`), 0 and 0 when none.
    first: usize,
    first_mask: u64,
}

impl Subtable {
    pub fn new(seed: Seed, mask: Words, seq: u64) -> Self {
        let words: Box<[u8]> = mask
            .iter()
            .enumerate()
            .filter(|(_, w)| **w != 0)
            .filter_map(|(i, _)| u8::try_from(i).ok())
            .collect();
        let lanes = words
            .iter()
            .map(|&i| {
                seed.lane(
                    usize::from(i),
                    mask.get(usize::from(i)).copied().unwrap_or(0),
                )
            })
            .collect();
        let (first, first_mask) = mask
            .iter()
            .enumerate()
            .find(|(_, w)| **w != 0)
            .map_or((0, 0), |(i, w)| (i, *w));
        Subtable {
            mask,
            words,
            lanes,
            seed,
            index: RawIndex::default(),
            prios: BTreeMap::new(),
            seq,
            first,
            first_mask,
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

    pub fn count_rule(&mut self, priority: u16) {
        *self.prios.entry(priority).or_insert(0) += 1;
    }

    pub fn uncount_rule(&mut self, priority: u16) {
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

    /// The first significant word of `key & mask` (stored in the index entries).
    #[inline(always)]
    pub fn word0(&self, key: &Words) -> u64 {
        key.get(self.first).copied().unwrap_or(0) & self.first_mask
    }

    /// Whether `key & mask` equals the masked rule key `rule` on the significant words after
    /// the first (which the index entry already compared).
    #[inline(always)]
    pub fn rest_eq(&self, key: &Words, rule: &Words) -> bool {
        self.lanes
            .get(1..)
            .unwrap_or(&[])
            .iter()
            .all(|l| match (key.get(l.at), rule.get(l.at)) {
                (Some(k), Some(r)) => k & l.mask == *r,
                _ => false,
            })
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
