//! Per-table packet classification.
//!
//! A table is a tuple space: one [`Subtable`] per distinct mask, each a keyed hash of its rules'
//! masked keys. The structure specialises itself on the table's contents:
//! - one mask (e.g. an exact MAC table): a single hash probe per packet (`Kind::Hash`);
//! - masks differing only in a prefix of one IPv4 address field with priorities that follow
//!   prefix length (a routing table): the family is served by a DIR-16-8-8 longest-prefix-match
//!   table, at most three dependent loads per packet (`Kind::Lpm`, see [`lpm`]);
//! - anything else: priority-ordered tuple space search (`Kind::TupleSpace`). Subtables are
//!   sorted by their maximum priority and the search stops as soon as the best match found so
//!   far outranks the next subtable's maximum.
//!
//! Tuple space explosion (seed 000 ref. 33) is an attack on caches that *learn* masks from
//! traffic (OVS megaflows). Here no mask is ever derived from packets: the number of subtables
//! is bounded by the distinct masks the controller installed, traffic cannot add one, and keys
//! are hashed with a per-process random seed so colliding keys cannot be crafted. There is no
//! microflow cache at all; the specialised structures are the fast path.
//!
//! Every update is incremental: insert/remove touch one subtable (and the LPM table's covered
//! range); only a change of the set of masks (a first rule with a new mask, or the last one of
//! a mask removed) re-examines the table's layout, in O(rules). A routing table of any size
//! goes through at most 33 such changes per prefix field. A rule that breaks the LPM
//! conditions demotes the family to tuple space search at once; it is re-examined at the next
//! mask-set change.

pub mod hash;
pub mod lpm;
pub mod subtable;

use crate::key::{Match, KEY_WORDS};
use hash::{hash_masked, Seed, SeededMap};
use lpm::LpmPlan;
use subtable::Subtable;
pub use subtable::Words;

/// Subtables with at most this many index entries are probed without a prefetch pass.
const CACHED_INDEX: usize = 1024;

/// The key of a packet that matters to no field (probing a match-all subtable).
static ZERO: Words = [0; KEY_WORDS];

/// Marker for "no rule" in slot arrays.
pub const NO_RULE: u32 = u32::MAX;

/// The lookup structure a table currently uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Empty,
    Hash,
    Lpm,
    TupleSpace,
}

/// One installed rule. `repr(C)` with the payload first: a matched packet touches the
/// payload's first lines only (the key words are compared from the index entry).
#[derive(Clone, Debug)]
#[repr(C)]
pub struct Rule<P> {
    pub payload: P,
    pub id: u64,
    pub priority: u16,
    subtable: u32,
    /// Next rule with the same masked key in the same subtable (lower or equal priority).
    next: u32,
}

/// Reusable per-batch scratch for [`Classifier::lookup_batch`].
#[derive(Debug, Default)]
pub struct LookupScratch {
    hashes: Vec<u64>,
    word0: Vec<u64>,
    best: Vec<i32>,
    hits: Vec<(u32, u32)>,
}

/// A flow table's classifier; `P` is what a match returns (the compiled instructions).
#[derive(Clone, Debug)]
pub struct Classifier<P> {
    seed: Seed,
    rules: Vec<Option<Rule<P>>>,
    /// Each rule's masked key words, by slot (apart from the rules: no allocation per rule,
    /// and a multi-word compare loads one line instead of chasing a pointer). Entries of free
    /// slots are stale and never read: index entries only point at live rules.
    keys: Vec<Words>,
    free_rules: Vec<u32>,
    by_id: SeededMap<u64, u32>,
    subtables: Vec<Option<Subtable>>,
    free_subtables: Vec<u32>,
    by_mask: SeededMap<Words, u32>,
    next_seq: u64,
    /// Probe order: subtables (or the LPM family as one step) by maximum priority, descending.
    order: Vec<Step>,
    lpm: Option<LpmPlan>,
}

/// One step of the probe order.
#[derive(Clone, Copy, Debug)]
enum Step {
    Subtable { id: u32, max: u16 },
    Lpm { max: u16 },
}

impl Step {
    fn max(self) -> u16 {
        match self {
            Step::Subtable { max, .. } | Step::Lpm { max } => max,
        }
    }
}

impl<P> Default for Classifier<P> {
    fn default() -> Self {
        Classifier {
            seed: Seed::process(),
            rules: Vec::new(),
            keys: Vec::new(),
            free_rules: Vec::new(),
            by_id: SeededMap::default(),
            subtables: Vec::new(),
            free_subtables: Vec::new(),
            by_mask: SeededMap::default(),
            next_seq: 0,
            order: Vec::new(),
            lpm: None,
        }
    }
}

impl<P> Classifier<P> {
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The structure lookups currently use.
    pub fn kind(&self) -> Kind {
        match (self.order.len(), &self.lpm) {
            (0, _) => Kind::Empty,
            (_, Some(_)) => Kind::Lpm,
            (1, None) => Kind::Hash,
            _ => Kind::TupleSpace,
        }
    }

    /// Number of distinct masks (tuples).
    pub fn subtable_count(&self) -> usize {
        self.by_mask.len()
    }

    /// Hints the CPU to load the start of the rule in `slot` (its payload's hot part).
    #[inline(always)]
    pub fn prefetch_rule(&self, slot: u32) {
        if let Some(r) = self.rules.get(slot as usize) {
            let start = core::ptr::from_ref(r).cast::<u8>();
            hash::prefetch_ptr(start);
            hash::prefetch_ptr(start.wrapping_add(64));
        }
    }

    /// The rule in `slot` (from a lookup).
    #[inline(always)]
    pub fn rule(&self, slot: u32) -> Option<&Rule<P>> {
        self.rules.get(slot as usize).and_then(Option::as_ref)
    }

    /// The rule with this id.
    pub fn get(&self, id: u64) -> Option<&Rule<P>> {
        self.by_id.get(&id).and_then(|&s| self.rule(s))
    }

    /// Mutable access to a rule's payload (e.g. to replace its instructions).
    pub fn payload_mut(&mut self, id: u64) -> Option<&mut P> {
        let slot = *self.by_id.get(&id)?;
        self.rules
            .get_mut(slot as usize)?
            .as_mut()
            .map(|r| &mut r.payload)
    }

    /// Iterates over all rules (any order).
    pub fn rules(&self) -> impl Iterator<Item = &Rule<P>> {
        self.rules.iter().flatten()
    }

    /// Inserts a rule, replacing any rule with the same id.
    pub fn insert(&mut self, id: u64, priority: u16, m: &Match, payload: P) {
        self.remove(id);
        let mask = *m.mask.words();
        let mut key = *m.key.words();
        for (k, mw) in key.iter_mut().zip(mask.iter()) {
            *k &= mw;
        }
        let (sub_id, created) = self.subtable_for(mask);
        let slot = self.alloc_rule(
            Rule {
                id,
                priority,
                payload,
                subtable: sub_id,
                next: NO_RULE,
            },
            key,
        );
        self.by_id.insert(id, slot);
        let Some(Some(sub)) = self.subtables.get_mut(sub_id as usize) else {
            return;
        };
        sub.count_rule(priority);
        let h = sub.hash(&key);
        let head = find_head(&self.keys, sub, h, &key);
        match head {
            None => {
                let seed = self.seed;
                let keys = &self.keys;
                let (mask, words) = (&sub.mask, &sub.words);
                let rehash =
                    |s: u32| rule_key(keys, s).map_or(0, |k| hash_masked(seed, k, mask, words));
                let word0 = sub.word0(&key);
                sub.index.insert(h, word0, slot, priority, rehash);
            }
            Some(head) => {
                let new_head = chain_insert(&mut self.rules, head, slot);
                if new_head != head {
                    sub.index
                        .replace(h, head, new_head, prio_of(&self.rules, new_head));
                }
            }
        }
        if created {
            self.replan();
        } else {
            self.rule_added(sub_id, slot);
        }
    }

    /// Removes the rule with this id, returning its payload.
    pub fn remove(&mut self, id: u64) -> Option<P> {
        let slot = self.by_id.remove(&id)?;
        let (sub_id, priority, key) = {
            let r = self.rule(slot)?;
            (r.subtable, r.priority, *rule_key(&self.keys, slot)?)
        };
        let Some(Some(sub)) = self.subtables.get_mut(sub_id as usize) else {
            return None;
        };
        sub.uncount_rule(priority);
        let h = sub.hash(&key);
        if let Some(head) = find_head(&self.keys, sub, h, &key) {
            let new_head = chain_remove(&mut self.rules, head, slot);
            if new_head != head {
                if new_head == NO_RULE {
                    let seed = self.seed;
                    let keys = &self.keys;
                    let (mask, words) = (&sub.mask, &sub.words);
                    let rehash =
                        |s: u32| rule_key(keys, s).map_or(0, |k| hash_masked(seed, k, mask, words));
                    sub.index.remove(h, head, rehash);
                } else {
                    sub.index
                        .replace(h, head, new_head, prio_of(&self.rules, new_head));
                }
            }
        }
        let now_empty = sub.is_empty();
        let rule = self.rules.get_mut(slot as usize).and_then(Option::take)?;
        self.free_rules.push(slot);
        if now_empty {
            if let Some(s) = self
                .subtables
                .get_mut(sub_id as usize)
                .and_then(Option::take)
            {
                self.by_mask.remove(&s.mask);
            }
            self.free_subtables.push(sub_id);
            self.replan();
        } else {
            self.rule_removed(sub_id, &key);
        }
        Some(rule.payload)
    }

    fn alloc_rule(&mut self, rule: Rule<P>, key: Words) -> u32 {
        match self.free_rules.pop() {
            Some(slot) => {
                if let (Some(r), Some(k)) = (
                    self.rules.get_mut(slot as usize),
                    self.keys.get_mut(slot as usize),
                ) {
                    *r = Some(rule);
                    *k = key;
                }
                slot
            }
            None => {
                self.rules.push(Some(rule));
                self.keys.push(key);
                (self.rules.len() - 1) as u32
            }
        }
    }

    fn subtable_for(&mut self, mask: Words) -> (u32, bool) {
        if let Some(&id) = self.by_mask.get(&mask) {
            return (id, false);
        }
        let sub = Subtable::new(self.seed, mask, self.next_seq);
        self.next_seq += 1;
        let id = match self.free_subtables.pop() {
            Some(id) => {
                if let Some(s) = self.subtables.get_mut(id as usize) {
                    *s = Some(sub);
                }
                id
            }
            None => {
                self.subtables.push(Some(sub));
                (self.subtables.len() - 1) as u32
            }
        };
        self.by_mask.insert(mask, id);
        (id, true)
    }

    /// A rule joined an existing subtable: keep the LPM table and the probe order current.
    fn rule_added(&mut self, sub_id: u32, slot: u32) {
        if let Some(plan) = &mut self.lpm {
            if plan.contains(sub_id)
                && !plan.rule_added(&self.subtables, &self.rules, &self.keys, sub_id, slot)
            {
                self.lpm = None;
            }
        }
        self.reorder();
    }

    fn rule_removed(&mut self, sub_id: u32, key: &Words) {
        if let Some(plan) = &mut self.lpm {
            if plan.contains(sub_id) {
                plan.rule_removed(&self.subtables, &self.keys, sub_id, key);
            }
        }
        self.reorder();
    }

    /// The set of masks changed: choose the structure again.
    fn replan(&mut self) {
        self.lpm = LpmPlan::choose(&self.subtables, &self.rules, &self.keys);
        self.reorder();
    }

    fn reorder(&mut self) {
        self.order.clear();
        let lpm = self.lpm.as_ref();
        for (id, sub) in self.subtables.iter().enumerate() {
            let Some(sub) = sub else { continue };
            let id = id as u32;
            if lpm.is_some_and(|p| p.contains(id)) {
                continue;
            }
            self.order.push(Step::Subtable {
                id,
                max: sub.max_priority(),
            });
        }
        if let Some(plan) = lpm {
            self.order.push(Step::Lpm {
                max: plan.max_priority(&self.subtables),
            });
        }
        let subs = &self.subtables;
        let seq = |s: &Step| match s {
            Step::Subtable { id, .. } => subs
                .get(*id as usize)
                .and_then(Option::as_ref)
                .map_or(0, |s| s.seq),
            Step::Lpm { .. } => 0,
        };
        self.order
            .sort_by(|a, b| b.max().cmp(&a.max()).then_with(|| seq(a).cmp(&seq(b))));
    }

    /// The highest-priority rule matching `key` (ties: a fixed, deterministic choice).
    pub fn lookup(&self, key: &Words) -> Option<u32> {
        let mut best: Option<(u16, u32)> = None;
        for step in &self.order {
            if best.is_some_and(|(p, _)| p >= step.max()) {
                break;
            }
            let found = match *step {
                Step::Subtable { id, .. } => self.probe(id, key),
                Step::Lpm { .. } => self.lpm.as_ref().and_then(|p| p.lookup(key)),
            };
            if let Some(slot) = found {
                let p = self.rule(slot).map_or(0, |r| r.priority);
                if best.is_none_or(|(bp, _)| p > bp) {
                    best = Some((p, slot));
                }
            }
        }
        best.map(|(_, s)| s)
    }

    #[inline(always)]
    fn probe(&self, sub_id: u32, key: &Words) -> Option<u32> {
        let sub = self.subtables.get(sub_id as usize)?.as_ref()?;
        let h = sub.hash(key);
        self.find_in(sub, h, key)
    }

    #[inline(always)]
    fn find_in(&self, sub: &Subtable, h: u64, key: &Words) -> Option<u32> {
        self.find_entry(sub, h, key).map(|e| e.slot)
    }

    /// The index entry matching `key` (its priority is the slot's, without loading the rule).
    #[inline(always)]
    fn find_entry<'s>(
        &self,
        sub: &'s Subtable,
        h: u64,
        key: &Words,
    ) -> Option<&'s hash::IndexEntry> {
        let single = sub.words.len() <= 1;
        sub.index.find(h, sub.word0(key), |s| {
            single || rule_key(&self.keys, s).is_some_and(|k| sub.rest_eq(key, k))
        })
    }

    /// [`Self::lookup_batch`] for the most common table shape: one small tuple, optionally
    /// below a match-all catch-all. One probe per packet and no priority bookkeeping; false
    /// (nothing written) for any other shape.
    #[inline(always)]
    fn lookup_batch_small<'k>(
        &self,
        n: usize,
        key: &impl Fn(usize) -> &'k Words,
        out: &mut [u32],
    ) -> bool {
        let (id, fallback) = match self.order.as_slice() {
            [Step::Subtable { id, .. }] => (*id, None),
            [Step::Subtable { id, .. }, Step::Subtable { id: all, .. }] => (*id, Some(*all)),
            _ => return false,
        };
        let Some(Some(sub)) = self.subtables.get(id as usize) else {
            return false;
        };
        if sub.words.is_empty() || sub.index.len() > CACHED_INDEX {
            return false;
        }
        // The catch-all's entry: it wins over a hit of lower priority (equal: the first step).
        let (all_slot, all_priority) = match fallback {
            None => (NO_RULE, None),
            Some(all) => match self.catch_all(all) {
                Some(all) => all,
                None => return false,
            },
        };
        let single = sub.words.len() <= 1;
        for (i, o) in out.iter_mut().take(n).enumerate() {
            let k = key(i);
            let found = sub.index.find(sub.hash(k), sub.word0(k), |s| {
                single || rule_key(&self.keys, s).is_some_and(|r| sub.rest_eq(k, r))
            });
            *o = match found {
                Some(e) if all_priority.is_none_or(|q| e.priority >= q) => e.slot,
                _ => all_slot,
            };
        }
        true
    }

    /// The entry of a match-all subtable (slot, priority); `None` when `id` is not one.
    fn catch_all(&self, id: u32) -> Option<(u32, Option<u16>)> {
        let all = self.subtables.get(id as usize)?.as_ref()?;
        if !all.words.is_empty() {
            return None;
        }
        Some(match all.index.find(all.hash(&ZERO), 0, |_| true) {
            Some(e) => (e.slot, Some(e.priority)),
            None => (NO_RULE, None),
        })
    }

    /// [`Self::lookup_batch`] for a routing table: the LPM family, optionally above a
    /// match-all catch-all. A catch-all at priority 0 loses to every route, so the routes'
    /// rules are not even loaded for their priority; false (nothing written) for any other
    /// shape.
    #[inline(always)]
    fn lookup_batch_routes<'k>(
        &self,
        n: usize,
        key: &impl Fn(usize) -> &'k Words,
        out: &mut [u32],
        state: &mut [u64],
    ) -> bool {
        let (all_slot, all_priority) = match self.order.as_slice() {
            [Step::Lpm { .. }] => (NO_RULE, None),
            [Step::Lpm { .. }, Step::Subtable { id, .. }] => match self.catch_all(*id) {
                Some(all) => all,
                None => return false,
            },
            _ => return false,
        };
        let Some(plan) = &self.lpm else {
            return false;
        };
        for o in out.iter_mut().take(n) {
            *o = all_slot;
        }
        plan.lookup_batch(n, key, &|_| true, state, |i, slot| {
            let wins = match all_priority {
                None | Some(0) => true,
                Some(q) => self.rule(slot).is_some_and(|r| r.priority >= q),
            };
            if let (true, Some(o)) = (wins, out.get_mut(i)) {
                *o = slot;
            }
        });
        true
    }

    /// Classifies `n` packets at once: `out[i]` receives the slot for `key(i)` or [`NO_RULE`].
    /// Subtable by subtable, it hashes and prefetches every pending packet's bucket before
    /// probing any, so the cache misses of a large table overlap instead of adding up.
    #[inline(never)]
    pub fn lookup_batch<'k>(
        &self,
        n: usize,
        key: impl Fn(usize) -> &'k Words,
        out: &mut [u32],
        scratch: &mut LookupScratch,
    ) {
        let n = n.min(out.len());
        if self.lookup_batch_small(n, &key, out) {
            return;
        }
        scratch.hashes.resize(n, 0);
        if self.lookup_batch_routes(n, &key, out, &mut scratch.hashes) {
            return;
        }
        scratch.word0.resize(n, 0);
        scratch.best.clear();
        scratch.best.resize(n, -1);
        for o in out.iter_mut().take(n) {
            *o = NO_RULE;
        }
        for step in &self.order {
            let max = i32::from(step.max());
            match *step {
                Step::Subtable { id, .. } => {
                    let Some(Some(sub)) = self.subtables.get(id as usize) else {
                        continue;
                    };
                    let single = sub.words.len() <= 1;
                    if sub.words.is_empty() {
                        // Match-all mask: one entry at most, the same for every packet.
                        let Some(e) = sub.index.find(sub.hash(&ZERO), 0, |_| true) else {
                            continue;
                        };
                        let p = i32::from(e.priority);
                        for (b, o) in scratch.best.iter_mut().zip(out.iter_mut()) {
                            if *b < p {
                                *b = p;
                                *o = e.slot;
                            }
                        }
                        continue;
                    }
                    if sub.index.len() <= CACHED_INDEX {
                        // A small index stays in cache: probe at once, no prefetch pass.
                        let mut pending = 0usize;
                        for (i, (b, o)) in scratch.best.iter_mut().zip(out.iter_mut()).enumerate() {
                            if *b < max {
                                pending += 1;
                                let k = key(i);
                                let found = sub.index.find(sub.hash(k), sub.word0(k), |s| {
                                    single
                                        || rule_key(&self.keys, s)
                                            .is_some_and(|r| sub.rest_eq(k, r))
                                });
                                if let Some(e) = found {
                                    let p = i32::from(e.priority);
                                    if p > *b {
                                        *b = p;
                                        *o = e.slot;
                                    }
                                }
                            }
                        }
                        if pending == 0 {
                            break;
                        }
                        continue;
                    }
                    let mut pending = 0usize;
                    for (i, ((h, w0), b)) in scratch
                        .hashes
                        .iter_mut()
                        .zip(scratch.word0.iter_mut())
                        .zip(&scratch.best)
                        .enumerate()
                    {
                        if *b < max {
                            let k = key(i);
                            *h = sub.hash(k);
                            *w0 = sub.word0(k);
                            sub.index.prefetch(*h);
                            pending += 1;
                        }
                    }
                    if pending == 0 {
                        break;
                    }
                    for (i, (((h, w0), b), o)) in scratch
                        .hashes
                        .iter()
                        .zip(&scratch.word0)
                        .zip(scratch.best.iter_mut())
                        .zip(out.iter_mut())
                        .enumerate()
                    {
                        if *b < max {
                            let found = sub.index.find(*h, *w0, |s| {
                                single
                                    || rule_key(&self.keys, s)
                                        .is_some_and(|k| sub.rest_eq(key(i), k))
                            });
                            if let Some(e) = found {
                                let p = i32::from(e.priority);
                                if p > *b {
                                    *b = p;
                                    *o = e.slot;
                                }
                            }
                        }
                    }
                }
                Step::Lpm { .. } => {
                    let Some(plan) = &self.lpm else { continue };
                    let best = &mut scratch.best;
                    if !best.iter().take(n).any(|b| *b < max) {
                        break;
                    }
                    let pending = |i: usize| best.get(i).is_some_and(|b| *b < max);
                    let mut hits = std::mem::take(&mut scratch.hits);
                    hits.clear();
                    plan.lookup_batch(n, &key, &pending, &mut scratch.hashes, |i, slot| {
                        hits.push((i as u32, slot))
                    });
                    for &(i, slot) in &hits {
                        let p = self.rule(slot).map_or(0, |r| i32::from(r.priority));
                        if let (Some(b), Some(o)) =
                            (best.get_mut(i as usize), out.get_mut(i as usize))
                        {
                            if p > *b {
                                *b = p;
                                *o = slot;
                            }
                        }
                    }
                    scratch.hits = hits;
                }
            }
        }
    }
}

/// The chain head (highest-priority rule) in `sub` whose masked key equals `key`.
fn find_head(keys: &[Words], sub: &Subtable, h: u64, key: &Words) -> Option<u32> {
    sub.index
        .find(h, sub.word0(key), |s| {
            rule_key(keys, s).is_some_and(|k| sub.key_eq(k, key))
        })
        .map(|e| e.slot)
}

/// The masked key of the live rule in `slot`.
#[inline(always)]
fn rule_key(keys: &[Words], slot: u32) -> Option<&Words> {
    keys.get(slot as usize)
}

fn next_of<P>(rules: &[Option<Rule<P>>], slot: u32) -> u32 {
    rules
        .get(slot as usize)
        .and_then(Option::as_ref)
        .map_or(NO_RULE, |r| r.next)
}

fn prio_of<P>(rules: &[Option<Rule<P>>], slot: u32) -> u16 {
    rules
        .get(slot as usize)
        .and_then(Option::as_ref)
        .map_or(0, |r| r.priority)
}

fn set_next<P>(rules: &mut [Option<Rule<P>>], slot: u32, next: u32) {
    if let Some(Some(r)) = rules.get_mut(slot as usize) {
        r.next = next;
    }
}

/// Inserts `slot` into the equal-key chain starting at `head` (priority descending, a new rule
/// after existing equal-priority ones); returns the new head.
fn chain_insert<P>(rules: &mut [Option<Rule<P>>], head: u32, slot: u32) -> u32 {
    let p = prio_of(rules, slot);
    if p > prio_of(rules, head) {
        set_next(rules, slot, head);
        return slot;
    }
    let mut cur = head;
    loop {
        let next = next_of(rules, cur);
        if next == NO_RULE || prio_of(rules, next) < p {
            set_next(rules, slot, next);
            set_next(rules, cur, slot);
            return head;
        }
        cur = next;
    }
}

/// Unlinks `slot` from the chain at `head`; returns the new head (or [`NO_RULE`]).
fn chain_remove<P>(rules: &mut [Option<Rule<P>>], head: u32, slot: u32) -> u32 {
    if head == slot {
        return next_of(rules, slot);
    }
    let mut cur = head;
    while cur != NO_RULE {
        let next = next_of(rules, cur);
        if next == slot {
            let after = next_of(rules, slot);
            set_next(rules, cur, after);
            break;
        }
        cur = next;
    }
    head
}

/// Word index and bit shift of the IPv4 prefix fields inside the key words.
pub(crate) fn ipv4_lanes() -> [(usize, u32); 2] {
    let lane = |offset: usize| (offset / 8, ((offset % 8) * 8) as u32);
    [
        lane(core::mem::offset_of!(crate::key::FlowKey, ipv4_dst)),
        lane(core::mem::offset_of!(crate::key::FlowKey, ipv4_src)),
    ]
}

const _: () = assert!(KEY_WORDS <= u8::MAX as usize);
