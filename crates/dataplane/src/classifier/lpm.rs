//! Longest-prefix match for a family of subtables whose masks differ only in the prefix
//! length of one IPv4 address field (a routing table: `eth_type=0x0800, ipv4_dst=P/L`).
//!
//! The family qualifies when every rule has the same values on the other matched fields and
//! priorities never contradict prefix length (`max_priority(L) <= min_priority(L')` for
//! `L < L'`), so "longest prefix" is "highest priority". It is then served by a DIR-16-8-8
//! table: a 64K-entry first level indexed by the top 16 address bits and 256-entry chunks for
//! the next 8 and last 8 bits; each leaf holds the rule slot and the prefix length that wrote
//! it. Lookup is at most three dependent loads whatever the number of prefixes.
//!
//! Updates are incremental: inserting `P/L` rewrites only the leaves `P` covers whose length is
//! `<= L`; removing it rewrites the leaves of length `L` with the next shorter covering prefix
//! (found by at most 32 subtable probes). Chunks are not reclaimed when their prefixes go away
//! (memory is bounded by the prefixes ever inserted since the family was formed).

use super::hash::SeededMap;
use super::subtable::Subtable;
use super::{ipv4_lanes, RuleMeta, NO_RULE};
use crate::key::Words;

const CHUNK_FLAG: u32 = 1 << 31;
const SLOT_BITS: u32 = 25;
const SLOT_MASK: u32 = (1 << SLOT_BITS) - 1;
const L1_SIZE: usize = 1 << 16;
const CHUNK_SIZE: usize = 256;

fn leaf(slot: u32, len: u8) -> u32 {
    (u32::from(len) << SLOT_BITS) | (slot.wrapping_add(1) & SLOT_MASK)
}

fn leaf_len(e: u32) -> u8 {
    ((e >> SLOT_BITS) & 0x3f) as u8
}

/// The DIR-16-8-8 table.
#[derive(Clone, Debug)]
struct Dir {
    l1: Box<[u32]>,
    chunks: Vec<u32>,
}

impl Dir {
    fn new() -> Self {
        Dir {
            l1: vec![0; L1_SIZE].into_boxed_slice(),
            chunks: Vec::new(),
        }
    }

    #[inline(always)]
    fn lookup(&self, addr: u32) -> u32 {
        let mut e = self.l1.get((addr >> 16) as usize).copied().unwrap_or(0);
        if e & CHUNK_FLAG != 0 {
            let at = (e & !CHUNK_FLAG) as usize * CHUNK_SIZE + ((addr >> 8) & 0xff) as usize;
            e = self.chunks.get(at).copied().unwrap_or(0);
            if e & CHUNK_FLAG != 0 {
                let at = (e & !CHUNK_FLAG) as usize * CHUNK_SIZE + (addr & 0xff) as usize;
                e = self.chunks.get(at).copied().unwrap_or(0);
            }
        }
        e
    }

    /// One lookup step: `e` is a leaf or a chunk pointer for `addr` at `level` (1 = second
    /// level, 2 = third); returns the entry one level down and prefetches the one after.
    #[inline(always)]
    fn step(&self, e: u32, addr: u32, level: u32) -> u32 {
        if e & CHUNK_FLAG == 0 {
            return e;
        }
        let shift = 16 - 8 * level;
        let at = (e & !CHUNK_FLAG) as usize * CHUNK_SIZE + ((addr >> shift) & 0xff) as usize;
        let next = self.chunks.get(at).copied().unwrap_or(0);
        if next & CHUNK_FLAG != 0 && level == 1 {
            let at = (next & !CHUNK_FLAG) as usize * CHUNK_SIZE + (addr & 0xff) as usize;
            if let Some(p) = self.chunks.get(at) {
                super::hash::prefetch_read(p);
            }
        }
        next
    }

    /// The first-level entry for `addr`, prefetching the second-level one it points to.
    #[inline(always)]
    fn first(&self, addr: u32) -> u32 {
        let e = self.l1.get((addr >> 16) as usize).copied().unwrap_or(0);
        if e & CHUNK_FLAG != 0 {
            let at = (e & !CHUNK_FLAG) as usize * CHUNK_SIZE + ((addr >> 8) & 0xff) as usize;
            if let Some(p) = self.chunks.get(at) {
                super::hash::prefetch_read(p);
            }
        }
        e
    }

    /// Turns the leaf at `chunks[at]` (or `l1[at]` when `in_l1`) into a chunk of copies of it.
    fn split(&mut self, in_l1: bool, at: usize) -> Option<usize> {
        let e = if in_l1 {
            *self.l1.get(at)?
        } else {
            *self.chunks.get(at)?
        };
        if e & CHUNK_FLAG != 0 {
            return Some((e & !CHUNK_FLAG) as usize);
        }
        let id = self.chunks.len() / CHUNK_SIZE;
        self.chunks.extend(std::iter::repeat_n(e, CHUNK_SIZE));
        let ptr = CHUNK_FLAG | u32::try_from(id).ok()?;
        if in_l1 {
            *self.l1.get_mut(at)? = ptr;
        } else {
            *self.chunks.get_mut(at)? = ptr;
        }
        Some(id)
    }

    /// Applies `f` to every leaf under `entry` (recursing into chunks).
    fn update_chunk(&mut self, chunk: usize, f: &impl Fn(u32) -> u32) {
        for i in 0..CHUNK_SIZE {
            let at = chunk * CHUNK_SIZE + i;
            let Some(&e) = self.chunks.get(at) else {
                return;
            };
            if e & CHUNK_FLAG != 0 {
                self.update_chunk((e & !CHUNK_FLAG) as usize, f);
            } else if let Some(slot) = self.chunks.get_mut(at) {
                *slot = f(e);
            }
        }
    }

    /// Applies `f` to every leaf covered by `addr/len`; `create` splits leaves into chunks
    /// where the prefix is longer than the level.
    fn update(&mut self, addr: u32, len: u8, create: bool, f: impl Fn(u32) -> u32) {
        let len = len.min(32);
        let span = |bits: u8| 1usize << (bits - len.min(bits));
        if len <= 16 {
            let start = (addr >> 16) as usize & !(span(16) - 1);
            for at in start..start + span(16) {
                let Some(&e) = self.l1.get(at) else { return };
                if e & CHUNK_FLAG != 0 {
                    self.update_chunk((e & !CHUNK_FLAG) as usize, &f);
                } else if let Some(slot) = self.l1.get_mut(at) {
                    *slot = f(e);
                }
            }
            return;
        }
        let at1 = (addr >> 16) as usize;
        let is_chunk = self.l1.get(at1).is_some_and(|e| e & CHUNK_FLAG != 0);
        if !is_chunk && !create {
            return;
        }
        let Some(c1) = self.split(true, at1) else {
            return;
        };
        let i2 = ((addr >> 8) & 0xff) as usize;
        if len <= 24 {
            let start = i2 & !(span(24) - 1);
            for i in start..start + span(24) {
                let at = c1 * CHUNK_SIZE + i;
                let Some(&e) = self.chunks.get(at) else {
                    return;
                };
                if e & CHUNK_FLAG != 0 {
                    self.update_chunk((e & !CHUNK_FLAG) as usize, &f);
                } else if let Some(slot) = self.chunks.get_mut(at) {
                    *slot = f(e);
                }
            }
            return;
        }
        let at2 = c1 * CHUNK_SIZE + i2;
        let is_chunk = self.chunks.get(at2).is_some_and(|e| e & CHUNK_FLAG != 0);
        if !is_chunk && !create {
            return;
        }
        let Some(c2) = self.split(false, at2) else {
            return;
        };
        let start = (addr & 0xff) as usize & !(span(32) - 1);
        for i in start..start + span(32) {
            if let Some(slot) = self.chunks.get_mut(c2 * CHUNK_SIZE + i) {
                *slot = f(*slot);
            }
        }
    }

    fn insert(&mut self, addr: u32, len: u8, slot: u32) {
        let new = leaf(slot, len);
        self.update(
            addr,
            len,
            true,
            |e| if leaf_len(e) <= len { new } else { e },
        );
    }

    fn remove(&mut self, addr: u32, len: u8, replacement: u32) {
        self.update(addr, len, false, |e| {
            if leaf_len(e) == len && e & SLOT_MASK != 0 {
                replacement
            } else {
                e
            }
        });
    }
}

fn prefix_len(lane_mask: u32) -> Option<u8> {
    let len = lane_mask.leading_ones();
    (lane_mask.checked_shl(len).unwrap_or(0) == 0).then_some(len as u8)
}

fn prefix_mask(len: u8) -> u32 {
    u32::MAX
        .checked_shl(32 - u32::from(len.min(32)))
        .unwrap_or(0)
}

/// A family of subtables served by longest-prefix match.
#[derive(Clone, Debug)]
pub struct LpmPlan {
    word: usize,
    shift: u32,
    /// The common mask outside the prefix field.
    base_mask: Words,
    base_words: Box<[u8]>,
    /// The common masked values outside the prefix field.
    signature: Words,
    /// Subtable id per prefix length (`NO_RULE` when absent).
    by_len: [u32; 33],
    dir: Dir,
}

impl LpmPlan {
    fn lane_value(&self, key: &Words) -> u32 {
        (key.get(self.word).copied().unwrap_or(0) >> self.shift) as u32
    }

    fn lane_bits(&self) -> u64 {
        u64::from(u32::MAX) << self.shift
    }

    /// Whether the subtable is part of the family.
    pub fn contains(&self, sub: u32) -> bool {
        self.by_len.contains(&sub)
    }

    /// Highest priority in the family.
    pub fn max_priority(&self, subtables: &[Option<Subtable>]) -> u16 {
        self.members(subtables)
            .map(|(_, s)| s.max_priority())
            .max()
            .unwrap_or(0)
    }

    fn members<'s>(
        &'s self,
        subtables: &'s [Option<Subtable>],
    ) -> impl Iterator<Item = (u8, &'s Subtable)> + 's {
        self.by_len
            .iter()
            .enumerate()
            .filter_map(move |(len, &id)| {
                let sub = subtables.get(id as usize)?.as_ref()?;
                Some((len as u8, sub))
            })
    }

    fn priorities_consistent(&self, subtables: &[Option<Subtable>]) -> bool {
        let mut prev_max = 0u16;
        for (_, sub) in self.members(subtables) {
            if sub.min_priority() < prev_max {
                return false;
            }
            prev_max = prev_max.max(sub.max_priority());
        }
        true
    }

    fn signature_of(&self, key: &Words) -> bool {
        self.base_words.iter().all(|&i| {
            let i = usize::from(i);
            match (key.get(i), self.base_mask.get(i), self.signature.get(i)) {
                (Some(k), Some(m), Some(s)) => k & m == *s,
                _ => false,
            }
        })
    }

    /// The slot of the longest matching prefix's rule, if the non-prefix fields match too.
    #[inline(always)]
    pub fn lookup(&self, key: &Words) -> Option<u32> {
        if !self.signature_of(key) {
            return None;
        }
        let slot = self.dir.lookup(self.lane_value(key)) & SLOT_MASK;
        slot.checked_sub(1)
    }

    /// Batched lookup in three passes (one per trie level) so the cache misses of many
    /// packets overlap: `state[i]` holds the entry reached so far and the address. Calls
    /// `found(i, slot)` for every pending packet with a match.
    #[inline(always)]
    pub fn lookup_batch<'k>(
        &self,
        n: usize,
        key: &impl Fn(usize) -> &'k Words,
        pending: &impl Fn(usize) -> bool,
        state: &mut [u64],
        mut found: impl FnMut(usize, u32),
    ) {
        for (i, st) in state.iter_mut().enumerate().take(n) {
            *st = 0;
            if pending(i) && self.signature_of(key(i)) {
                let addr = self.lane_value(key(i));
                *st = (u64::from(self.dir.first(addr)) << 32) | u64::from(addr);
            }
        }
        for level in 1..=2 {
            for st in state.iter_mut().take(n) {
                let (e, addr) = ((*st >> 32) as u32, *st as u32);
                if e & CHUNK_FLAG != 0 {
                    *st = (u64::from(self.dir.step(e, addr, level)) << 32) | u64::from(addr);
                }
            }
        }
        for (i, st) in state.iter().enumerate().take(n) {
            let slot = ((*st >> 32) as u32) & SLOT_MASK;
            if let Some(slot) = slot.checked_sub(1) {
                found(i, slot);
            }
        }
    }

    /// Picks the largest qualifying family of the table, if any, and builds its table.
    pub(super) fn choose<C>(
        subtables: &[Option<Subtable>],
        rules: &[Option<RuleMeta<C>>],
        keys: &[Words],
    ) -> Option<LpmPlan> {
        let mut best: Option<(usize, LpmPlan)> = None;
        for (word, shift) in ipv4_lanes() {
            let lane = u64::from(u32::MAX) << shift;
            let mut families: SeededMap<Words, [u32; 33]> = SeededMap::default();
            for (id, sub) in subtables.iter().enumerate() {
                let Some(sub) = sub else { continue };
                let Some(len) = sub
                    .mask
                    .get(word)
                    .and_then(|w| prefix_len((w >> shift) as u32))
                else {
                    continue;
                };
                let mut base = sub.mask;
                if let Some(w) = base.get_mut(word) {
                    *w &= !lane;
                }
                let fam = families.entry(base).or_insert([NO_RULE; 33]);
                if let Some(s) = fam.get_mut(usize::from(len)) {
                    *s = id as u32;
                }
            }
            for (base_mask, by_len) in families {
                if by_len.iter().filter(|&&s| s != NO_RULE).count() < 2 {
                    continue;
                }
                let base_words = base_mask
                    .iter()
                    .enumerate()
                    .filter(|(_, w)| **w != 0)
                    .filter_map(|(i, _)| u8::try_from(i).ok())
                    .collect();
                let mut plan = LpmPlan {
                    word,
                    shift,
                    base_mask,
                    base_words,
                    signature: [0; crate::key::KEY_WORDS],
                    by_len,
                    dir: Dir::new(),
                };
                if let Some(size) = plan.build(subtables, rules, keys) {
                    if best.as_ref().is_none_or(|(n, _)| size > *n) {
                        best = Some((size, plan));
                    }
                }
            }
        }
        best.map(|(_, p)| p)
    }

    /// Checks the family qualifies and fills the table; returns the number of rules.
    fn build<C>(
        &mut self,
        subtables: &[Option<Subtable>],
        rules: &[Option<RuleMeta<C>>],
        keys: &[Words],
    ) -> Option<usize> {
        if !self.priorities_consistent(subtables) || rules.len() >= SLOT_MASK as usize {
            return None;
        }
        let mut first = true;
        let mut count = 0;
        for (r, key) in live(rules, keys) {
            if !self.contains(r.subtable) {
                continue;
            }
            if first {
                for ((s, k), m) in self
                    .signature
                    .iter_mut()
                    .zip(key.iter())
                    .zip(&self.base_mask)
                {
                    *s = k & m;
                }
                first = false;
            } else if !self.signature_of(key) {
                return None;
            }
            count += 1;
        }
        let mut heads: Vec<(u8, u32, u32)> = Vec::with_capacity(count);
        for (r, key) in live(rules, keys) {
            let Some(len) = self.by_len.iter().position(|&s| s == r.subtable) else {
                continue;
            };
            let Some(sub) = subtables.get(r.subtable as usize).and_then(Option::as_ref) else {
                continue;
            };
            heads.push((len as u8, self.lane_value(key), head_of(sub, keys, key)));
        }
        heads.sort_unstable();
        heads.dedup();
        for (len, addr, head) in heads {
            self.dir.insert(addr, len, head);
        }
        Some(count)
    }

    /// A rule joined a member subtable; false when the family no longer qualifies.
    pub(super) fn rule_added<C>(
        &mut self,
        subtables: &[Option<Subtable>],
        rules: &[Option<RuleMeta<C>>],
        keys: &[Words],
        sub_id: u32,
        slot: u32,
    ) -> bool {
        let (Some(Some(_)), Some(key)) = (rules.get(slot as usize), keys.get(slot as usize)) else {
            return false;
        };
        if slot >= SLOT_MASK {
            // Leaves hold 25-bit slots: a table this large falls back to tuple space search.
            return false;
        }
        if !self.signature_of(key) || !self.priorities_consistent(subtables) {
            return false;
        }
        let Some(len) = self.by_len.iter().position(|&s| s == sub_id) else {
            return false;
        };
        let Some(sub) = subtables.get(sub_id as usize).and_then(Option::as_ref) else {
            return false;
        };
        let head = head_of(sub, keys, key);
        self.dir.insert(self.lane_value(key), len as u8, head);
        true
    }

    /// A rule left a member subtable (which still has rules).
    pub fn rule_removed(
        &mut self,
        subtables: &[Option<Subtable>],
        keys: &[Words],
        sub_id: u32,
        key: &Words,
    ) {
        let Some(len) = self.by_len.iter().position(|&s| s == sub_id) else {
            return;
        };
        let len = len as u8;
        let addr = self.lane_value(key);
        if let Some(sub) = subtables.get(sub_id as usize).and_then(Option::as_ref) {
            let head = head_of(sub, keys, key);
            if head != NO_RULE {
                self.dir.insert(addr, len, head);
                return;
            }
        }
        let lane = self.lane_bits();
        let mut replacement = 0;
        for shorter in (0..len).rev() {
            let Some(sub) = self
                .by_len
                .get(usize::from(shorter))
                .and_then(|&id| subtables.get(id as usize))
                .and_then(Option::as_ref)
            else {
                continue;
            };
            let mut probe = *key;
            if let Some(w) = probe.get_mut(self.word) {
                *w = (*w & !lane) | (u64::from(addr & prefix_mask(shorter)) << self.shift);
            }
            let head = head_of(sub, keys, &probe);
            if head != NO_RULE {
                replacement = leaf(head, shorter);
                break;
            }
        }
        self.dir.remove(addr, len, replacement);
    }
}

/// The highest-priority rule of `sub` whose masked key equals `key & mask`, or [`NO_RULE`]
/// (index entries only point at live rules, whose keys are current).
fn head_of(sub: &Subtable, keys: &[Words], key: &Words) -> u32 {
    let h = sub.hash(key);
    sub.index
        .view()
        .find(h, sub.word0(key), sub.rest(key), |s| {
            keys.get(s as usize).is_some_and(|k| sub.key_eq(key, k))
        })
        .map_or(NO_RULE, |e| e.slot)
}

/// The installed rules with their keys.
fn live<'r, C>(
    rules: &'r [Option<RuleMeta<C>>],
    keys: &'r [Words],
) -> impl Iterator<Item = (&'r RuleMeta<C>, &'r Words)> {
    rules
        .iter()
        .zip(keys)
        .filter_map(|(r, k)| Some((r.as_ref()?, k)))
}
