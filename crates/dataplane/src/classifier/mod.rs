//! Per-table packet classification.
//!
//! A table is a tuple space: one [`Subtable`] per distinct mask, each a keyed hash of its rules'
//! masked keys. The structure specialises itself on the table's contents:
//! - one mask (e.g. an exact MAC table): a single hash probe per packet (`Kind::Hash`);
//! - masks differing only in a prefix of one IPv4 address field with priorities that follow
//!   prefix length (a routing table): the family is served by a DIR-16-8-8 longest-prefix-match
//!   table, at most three dependent loads per packet (`Kind::Lpm`, see [`lpm`]);
//! - a small table whose every rule names one ingress port (a port-based pipeline's table 0:
//!   a customer endpoint's port and address, an uplink's port alone): each port's few rules,
//!   found by the port and tested with a masked compare each (`Kind::Ports`, the `ports` module);
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
mod ports;
pub mod subtable;

use crate::key::{FlowMatch, Words, KEY_WORDS};
use hash::{hash_masked, Hit, IndexProbe, IndexView, Seed, SeededMap, ENTRY_REST};
use lpm::LpmPlan;
use ports::PortPlan;
use subtable::Subtable;

/// Subtables with at most this many index entries are probed without a prefetch pass.
const CACHED_INDEX: usize = 1024;
/// How many keys ahead of its probe a large index's bucket is prefetched: enough to cover a
/// miss with the probes between, few enough that the prefetches find a free miss buffer (a
/// prefetch of every key of a batch at once is mostly dropped).
const PROBE_AHEAD: usize = 16;
/// A single-field tuple of at most this many rules whose values all lie below
/// [`DIRECT_VALUES`] is looked up by direct indexing.
const DIRECT_RULES: usize = 256;
const DIRECT_VALUES: u64 = 4096;
/// Tables with more rules than this get the rules and counters their lookups find prefetched
/// (smaller ones stay in cache).
const LARGE: usize = 2048;

/// The key of a packet that matters to no field (probing a match-all subtable).
static ZERO: Words = [0; KEY_WORDS];

/// Marker for "no rule" in slot arrays.
pub const NO_RULE: u32 = u32::MAX;

/// The lookup structure a table currently uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Empty,
    /// One narrow field (an in_port or EtherType table): an array indexed by its value.
    Direct,
    /// Every rule names one ingress port: each port's few rules, found by the port.
    Ports,
    Hash,
    Lpm,
    TupleSpace,
}

/// One installed rule as the control path sees it: its payload, and what its owner keeps
/// with it.
#[derive(Clone, Copy, Debug)]
pub struct Rule<'c, P, C> {
    pub id: u64,
    pub priority: u16,
    pub payload: &'c P,
    pub extra: &'c C,
}

/// Everything of a rule but its payload, kept apart from the payloads: a matched packet
/// reads the payload only, so a large table's payloads pack densely (one cache line each
/// for the datapath's flow entries) and its memory holds no line a packet never reads.
#[derive(Clone, Debug)]
struct RuleMeta<C> {
    id: u64,
    priority: u16,
    subtable: u32,
    /// Next rule with the same masked key in the same subtable (lower or equal priority).
    next: u32,
    extra: C,
}

/// Reusable per-batch scratch for [`Classifier::lookup_batch`].
#[derive(Debug, Default)]
pub struct LookupScratch {
    hashes: Vec<u64>,
    best: Vec<i32>,
    hits: Vec<(u32, u32)>,
}

impl LookupScratch {
    /// `n` words of per-packet state (hashes, or LPM walk state).
    fn hashes(&mut self, n: usize) -> &mut [u64] {
        if self.hashes.len() < n {
            self.hashes.resize(n, 0);
        }
        self.hashes.get_mut(..n).unwrap_or_default()
    }
}

/// The rule a lookup falls back to when nothing better matches: a table's catch-all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fallback {
    slot: u32,
    /// -1 when there is none (any hit wins).
    priority: i32,
}

impl Fallback {
    const NONE: Fallback = Fallback {
        slot: NO_RULE,
        priority: -1,
    };

    /// The slot a tuple probe ends at: a hit of at least the catch-all's priority wins (ties
    /// go to the tuple, the first step of the probe order).
    #[inline(always)]
    fn pick(self, hit: Option<Hit>) -> u32 {
        match hit {
            Some(e) if i32::from(e.priority) >= self.priority => e.slot,
            _ => self.slot,
        }
    }

    /// Whether a route beats the catch-all. One at priority 0 loses to every route, so the
    /// route's priority (in the rule's cold half, a cache miss in a large table) is not read.
    #[inline(always)]
    fn loses_to(self, route_priority: impl FnOnce() -> u16) -> bool {
        self.priority <= 0 || i32::from(route_priority()) >= self.priority
    }
}

/// How [`Classifier::lookup_batch`] classifies the table's current contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    Empty,
    /// One tuple over a single narrow-valued field (an in_port, EtherType or VLAN table):
    /// the classifier's `direct` array, indexed by the field's value, holds the answer for
    /// every value (the rule, or the catch-all below it).
    Direct(DirectPlan),
    /// One subtable with a non-empty mask (an exact-match table), above an optional
    /// catch-all: one probe per packet.
    Hash {
        sub: u32,
        all: Fallback,
    },
    /// The LPM family, above an optional catch-all.
    Lpm {
        all: Fallback,
    },
    /// Priority-ordered tuple space search.
    TupleSpace,
    /// A table whose every rule names one ingress port, searched by port (the `ports` module).
    Ports,
}

/// Where [`Plan::Direct`] reads the field, and its answer beyond the array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct DirectPlan {
    at: u8,
    shift: u8,
    mask: u64,
    /// The answer for values beyond the array (the catch-all or [`NO_RULE`]).
    miss: u32,
}

/// A subtable with what a probe needs at hand (its index view and the rule keys).
#[derive(Clone, Copy)]
struct SubtableProbe<'s> {
    sub: &'s Subtable,
    index: IndexProbe<'s>,
    keys: &'s [Words],
}

impl<'s> SubtableProbe<'s> {
    #[inline(always)]
    fn hash(&self, key: &Words) -> u64 {
        self.sub.hash(key)
    }

    #[inline(always)]
    fn find(&self, key: &Words) -> Option<Hit> {
        self.find_hashed(self.hash(key), key)
    }

    /// A probe with the hash already computed.
    #[inline(always)]
    fn find_hashed(&self, h: u64, key: &Words) -> Option<Hit> {
        let (sub, keys) = (self.sub, self.keys);
        let held = sub.words.len() <= 1 + ENTRY_REST;
        self.index.find(h, sub.word0(key), sub.rest(key), |s| {
            held || rule_key(keys, s).is_some_and(|k| sub.tail_eq(key, k))
        })
    }

    /// The masked words of `key` under a mask of exactly `L` words, and their hash.
    #[inline(always)]
    fn masked<const L: usize>(&self, lanes: &[hash::Lane; L], key: &Words) -> ([u64; L], u64) {
        let seed = self.sub.seed();
        let mut words = [0u64; L];
        let mut h = seed.a();
        for (w, l) in words.iter_mut().zip(lanes) {
            *w = l.word(key);
            h = l.mix(h, *w);
        }
        (words, seed.finish(h))
    }

    /// The entry for masked words of a mask of exactly `L` words (unrolled).
    #[inline(always)]
    fn find_words<const L: usize>(
        &self,
        lanes: &[hash::Lane; L],
        words: &[u64; L],
        h: u64,
    ) -> Option<Hit> {
        match self.index {
            IndexProbe::Narrow(view) => self.find_in(view, lanes, words, h),
            IndexProbe::Wide(view) => self.find_in(view, lanes, words, h),
        }
    }

    /// [`Self::find_words`] in an index whose entries hold `1 + R` words; the rule keys hold
    /// the rest (a mask of up to `1 + R` words never reads them).
    #[inline(always)]
    fn find_in<const R: usize, const L: usize>(
        &self,
        view: IndexView<'_, R>,
        lanes: &[hash::Lane; L],
        words: &[u64; L],
        h: u64,
    ) -> Option<Hit> {
        let keys = self.keys;
        let rest = std::array::from_fn(|i| words.get(i + 1).copied().unwrap_or(0));
        view.find(h, words[0], rest, |s| {
            L <= 1 + R
                || rule_key(keys, s).is_some_and(|r| {
                    words
                        .iter()
                        .zip(lanes)
                        .skip(1 + R)
                        .all(|(w, l)| r.get(l.at()) == Some(w))
                })
        })
    }

    /// A probe, unrolled for masks of up to four words.
    #[inline(always)]
    fn find_any(&self, key: &Words) -> Option<Hit> {
        match *self.sub.lanes() {
            [a] => self.probe(&[a], key, None),
            [a, b] => self.probe(&[a, b], key, None),
            [a, b, c] => self.probe(&[a, b, c], key, None),
            [a, b, c, d] => self.probe(&[a, b, c, d], key, None),
            _ => self.find(key),
        }
    }

    /// A probe of a mask of exactly `L` words, with the hash when already computed (`hash`
    /// or [`Self::masked`] gave it).
    #[inline(always)]
    fn probe<const L: usize>(
        &self,
        lanes: &[hash::Lane; L],
        key: &Words,
        hash: Option<u64>,
    ) -> Option<Hit> {
        let (words, h) = self.masked(lanes, key);
        self.find_words(lanes, &words, hash.unwrap_or(h))
    }

    /// Classifies every key against this tuple alone; `hashes` (when given) turns on the
    /// two-pass probe (hash every key, then probe each with the bucket of a key
    /// [`PROBE_AHEAD`] later prefetched). The index's entry width and whether the subtable has
    /// a guard are decided once, outside the loop.
    #[inline(always)]
    fn probe_all<'k, const L: usize>(
        &self,
        lanes: &[hash::Lane; L],
        key: &impl Fn(usize) -> &'k Words,
        out: &mut [u32],
        hashes: Option<&mut [u64]>,
        pick: impl Fn(Option<Hit>) -> u32,
    ) {
        let open = |_: &Words| true;
        match (self.index, self.sub.guard()) {
            (IndexProbe::Narrow(view), Some(g)) => {
                self.probe_each(view, lanes, key, out, hashes, pick, |k| g.admits(k));
            }
            (IndexProbe::Wide(view), Some(g)) => {
                self.probe_each(view, lanes, key, out, hashes, pick, |k| g.admits(k));
            }
            (IndexProbe::Narrow(view), None) => {
                self.probe_each(view, lanes, key, out, hashes, pick, open);
            }
            (IndexProbe::Wide(view), None) => {
                self.probe_each(view, lanes, key, out, hashes, pick, open);
            }
        }
    }

    /// [`Self::probe_all`] in an index whose entries hold `1 + R` words; a key that `admits`
    /// (the subtable's guard) turns away is a miss without a probe.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn probe_each<'k, const R: usize, const L: usize>(
        &self,
        view: IndexView<'_, R>,
        lanes: &[hash::Lane; L],
        key: &impl Fn(usize) -> &'k Words,
        out: &mut [u32],
        hashes: Option<&mut [u64]>,
        pick: impl Fn(Option<Hit>) -> u32,
        admits: impl Fn(&Words) -> bool,
    ) {
        // One key's answer, with its hash when the first pass already computed it.
        let probe = |k: &Words, hashed: Option<u64>| {
            if !admits(k) {
                return pick(None);
            }
            let (words, h) = self.masked(lanes, k);
            pick(self.find_in(view, lanes, &words, hashed.unwrap_or(h)))
        };
        match hashes {
            None => {
                for (i, o) in out.iter_mut().enumerate() {
                    *o = probe(key(i), None);
                }
            }
            Some(hashes) => {
                for (i, h) in hashes.iter_mut().enumerate() {
                    let k = key(i);
                    *h = if admits(k) {
                        self.masked(lanes, k).1
                    } else {
                        0
                    };
                }
                for h in hashes.iter().take(PROBE_AHEAD) {
                    view.prefetch(*h);
                }
                for (i, (o, h)) in out.iter_mut().zip(hashes.iter()).enumerate() {
                    if let Some(ahead) = hashes.get(i + PROBE_AHEAD) {
                        view.prefetch(*ahead);
                    }
                    *o = probe(key(i), Some(*h));
                }
            }
        }
    }
}

/// One subtable's pass of the tuple space search over a batch: packets whose best match is
/// below `max` are probed (a large index in two passes, hashing first, then probing with
/// prefetches [`PROBE_AHEAD`] keys ahead).
struct Pass<'s> {
    subtable: SubtableProbe<'s>,
    max: i32,
    large: bool,
}

impl Pass<'_> {
    #[inline(always)]
    fn run<'k>(
        &self,
        key: &impl Fn(usize) -> &'k Words,
        hashes: &mut [u64],
        best: &mut [i32],
        out: &mut [u32],
        probe: impl Fn(&Words, Option<u64>) -> Option<Hit>,
    ) {
        let (t, max) = (&self.subtable, self.max);
        if self.large {
            for (i, (h, b)) in hashes.iter_mut().zip(best.iter()).enumerate() {
                let pending = *b < max && t.sub.may_match(key(i));
                *h = if pending { t.hash(key(i)) } else { 0 };
            }
            for h in hashes.iter().take(PROBE_AHEAD) {
                t.index.prefetch(*h);
            }
        }
        for (i, ((h, b), o)) in hashes
            .iter()
            .zip(best.iter_mut())
            .zip(out.iter_mut())
            .enumerate()
        {
            if let Some(ahead) = hashes.get(i + PROBE_AHEAD).filter(|_| self.large) {
                t.index.prefetch(*ahead);
            }
            let k = key(i);
            if *b >= max || !t.sub.may_match(k) {
                continue;
            }
            if let Some(e) = probe(k, self.large.then_some(*h)) {
                let p = i32::from(e.priority);
                if p > *b {
                    *b = p;
                    *o = e.slot;
                }
            }
        }
    }
}

/// A flow table's classifier; `P` is what a match returns (the compiled instructions), `C`
/// what the owner keeps with a rule that lookups never read.
#[derive(Clone, Debug)]
pub struct Classifier<P, C = ()> {
    seed: Seed,
    /// Each rule's payload, by slot.
    payloads: Vec<Option<P>>,
    /// The rest of each rule, by slot.
    rules: Vec<Option<RuleMeta<C>>>,
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
    order: Vec<SearchStep>,
    lpm: Option<LpmPlan>,
    plan: Plan,
    /// The answer per field value under [`Plan::Direct`].
    direct: Vec<u32>,
    /// Each port's rules under [`Plan::Ports`].
    by_port: PortPlan,
}

/// One step of the probe order.
#[derive(Clone, Copy, Debug)]
enum SearchStep {
    Subtable { id: u32, max: u16 },
    Lpm { max: u16 },
}

impl SearchStep {
    fn max(self) -> u16 {
        match self {
            SearchStep::Subtable { max, .. } | SearchStep::Lpm { max } => max,
        }
    }
}

impl<P, C> Default for Classifier<P, C> {
    fn default() -> Self {
        Classifier {
            seed: Seed::process(),
            payloads: Vec::new(),
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
            plan: Plan::Empty,
            direct: Vec::new(),
            by_port: PortPlan::default(),
        }
    }
}

impl<P, C> Classifier<P, C> {
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The structure lookups currently use.
    pub fn kind(&self) -> Kind {
        match self.plan {
            Plan::Direct(_) => return Kind::Direct,
            Plan::Ports => return Kind::Ports,
            _ => {}
        }
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

    /// Hints the CPU to load the first line of the payload in `slot`.
    #[inline(always)]
    pub fn prefetch_payload(&self, slot: u32) {
        if let Some(p) = self.payloads.get(slot as usize) {
            hash::prefetch_read(p);
        }
    }

    /// The payload of the rule in `slot` (from a lookup): all a matched packet reads.
    #[inline(always)]
    pub fn payload(&self, slot: u32) -> Option<&P> {
        self.payloads.get(slot as usize).and_then(Option::as_ref)
    }

    /// The rule in `slot`.
    pub fn rule(&self, slot: u32) -> Option<Rule<'_, P, C>> {
        let meta = self.rules.get(slot as usize)?.as_ref()?;
        Some(Rule {
            id: meta.id,
            priority: meta.priority,
            payload: self.payload(slot)?,
            extra: &meta.extra,
        })
    }

    /// The rule with this id.
    pub fn get(&self, id: u64) -> Option<Rule<'_, P, C>> {
        self.by_id.get(&id).and_then(|&s| self.rule(s))
    }

    /// Mutable access to a rule's payload (e.g. to replace its instructions).
    pub fn payload_mut(&mut self, id: u64) -> Option<&mut P> {
        let slot = *self.by_id.get(&id)?;
        self.payloads.get_mut(slot as usize)?.as_mut()
    }

    /// Iterates over all rules (any order).
    pub fn rules(&self) -> impl Iterator<Item = Rule<'_, P, C>> {
        (0..self.rules.len() as u32).filter_map(|s| self.rule(s))
    }

    /// Inserts a rule, replacing any rule with the same id.
    pub fn insert(&mut self, id: u64, priority: u16, m: &FlowMatch, payload: P)
    where
        C: Default,
    {
        self.insert_with(id, priority, m, payload, C::default());
    }

    /// Inserts a rule with what its owner keeps with it, replacing any rule with the same id.
    pub fn insert_with(&mut self, id: u64, priority: u16, m: &FlowMatch, payload: P, extra: C) {
        self.remove(id);
        let mask = *m.mask.words();
        let mut key = *m.key.words();
        for (k, mw) in key.iter_mut().zip(mask.iter()) {
            *k &= mw;
        }
        let (sub_id, created) = self.subtable_for(mask);
        let slot = self.alloc_rule(
            payload,
            RuleMeta {
                id,
                priority,
                subtable: sub_id,
                next: NO_RULE,
                extra,
            },
            key,
        );
        self.by_id.insert(id, slot);
        let Some(Some(sub)) = self.subtables.get_mut(sub_id as usize) else {
            return;
        };
        sub.count_rule(priority, &key);
        let h = sub.hash(&key);
        let head = find_head(&self.keys, sub, h, &key);
        match head {
            None => {
                let seed = self.seed;
                let keys = &self.keys;
                let (mask, words) = (&sub.mask, &sub.words);
                let rehash =
                    |s: u32| rule_key(keys, s).map_or(0, |k| hash_masked(seed, k, mask, words));
                let (word0, rest) = (sub.word0(&key), sub.rest(&key));
                sub.index
                    .insert(h, word0, rest, Hit { slot, priority }, rehash);
            }
            Some(head) => {
                let new_head = chain_insert(&mut self.rules, head, slot);
                if new_head != head {
                    sub.index.replace(h, head, hit_of(&self.rules, new_head));
                }
            }
        }
        if created {
            self.replan();
        } else {
            self.rule_added(sub_id, slot);
        }
    }

    /// Removes the rule with this id, returning its payload and what its owner kept with it.
    pub fn remove(&mut self, id: u64) -> Option<(P, C)> {
        let slot = self.by_id.remove(&id)?;
        let (sub_id, priority, key) = {
            let r = self.rules.get(slot as usize)?.as_ref()?;
            (r.subtable, r.priority, *rule_key(&self.keys, slot)?)
        };
        let Some(Some(sub)) = self.subtables.get_mut(sub_id as usize) else {
            return None;
        };
        sub.uncount_rule(priority, &key);
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
                    sub.index.replace(h, head, hit_of(&self.rules, new_head));
                }
            }
        }
        let now_empty = sub.is_empty();
        let rule = self.rules.get_mut(slot as usize).and_then(Option::take)?;
        let payload = self
            .payloads
            .get_mut(slot as usize)
            .and_then(Option::take)?;
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
        Some((payload, rule.extra))
    }

    fn alloc_rule(&mut self, payload: P, rule: RuleMeta<C>, key: Words) -> u32 {
        match self.free_rules.pop() {
            Some(slot) => {
                if let (Some(p), Some(r), Some(k)) = (
                    self.payloads.get_mut(slot as usize),
                    self.rules.get_mut(slot as usize),
                    self.keys.get_mut(slot as usize),
                ) {
                    *p = Some(payload);
                    *r = Some(rule);
                    *k = key;
                }
                slot
            }
            None => {
                self.payloads.push(Some(payload));
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
            self.order.push(SearchStep::Subtable {
                id,
                max: sub.max_priority(),
            });
        }
        if let Some(plan) = lpm {
            self.order.push(SearchStep::Lpm {
                max: plan.max_priority(&self.subtables),
            });
        }
        let subs = &self.subtables;
        let seq = |s: &SearchStep| match s {
            SearchStep::Subtable { id, .. } => subs
                .get(*id as usize)
                .and_then(Option::as_ref)
                .map_or(0, |s| s.seq),
            SearchStep::Lpm { .. } => 0,
        };
        self.order
            .sort_by(|a, b| b.max().cmp(&a.max()).then_with(|| seq(a).cmp(&seq(b))));
        self.plan = self.choose_plan();
        self.specialise();
        self.by_ports();
    }

    /// Turns a hash probe or tuple space search of a small table whose every rule names one
    /// ingress port into a search by port (the `ports` module).
    fn by_ports(&mut self) {
        if !matches!(self.plan, Plan::Hash { .. } | Plan::TupleSpace)
            || self.lpm.is_some()
            || self.by_id.len() > ports::MAX_RULES
        {
            return;
        }
        // The last step may be a catch-all, the rest subtables of rules on one port.
        let (steps, all) = match self.order.split_last() {
            Some((last, rest)) if !rest.is_empty() => match self.fallback(Some(last)) {
                Some(all) => (rest, all),
                None => (&self.order[..], Fallback::NONE),
            },
            _ => (&self.order[..], Fallback::NONE),
        };
        let subs: Option<Vec<&Subtable>> = steps
            .iter()
            .map(|step| match step {
                SearchStep::Subtable { id, .. } => self.subtables.get(*id as usize)?.as_ref(),
                SearchStep::Lpm { .. } => None,
            })
            .collect();
        let plan = subs.and_then(|subs| PortPlan::build(self.seed, &subs, &self.keys, all));
        if let Some(plan) = plan {
            self.by_port = plan;
            self.plan = Plan::Ports;
        }
    }

    /// Turns a plan of one small single-field tuple into a direct-indexed one (rebuilding
    /// the array: at most [`DIRECT_RULES`] rules and [`DIRECT_VALUES`] cells).
    fn specialise(&mut self) {
        let Plan::Hash { sub, all } = self.plan else {
            return;
        };
        let Some(Some(sub)) = self.subtables.get(sub as usize) else {
            return;
        };
        let ([lane], true) = (sub.lanes(), sub.index.len() <= DIRECT_RULES) else {
            return;
        };
        let shift = lane.mask.trailing_zeros();
        let Some(max) = sub.index.iter().map(|(word0, _)| word0 >> shift).max() else {
            return;
        };
        if max >= DIRECT_VALUES {
            return;
        }
        self.direct.clear();
        self.direct.resize(max as usize + 1, all.slot);
        for (word0, hit) in sub.index.iter() {
            if let Some(cell) = self.direct.get_mut((word0 >> shift) as usize) {
                *cell = all.pick(Some(hit));
            }
        }
        self.plan = Plan::Direct(DirectPlan {
            at: lane.at() as u8,
            shift: shift as u8,
            mask: lane.mask,
            miss: all.slot,
        });
    }

    /// The direct array's answer for `key`.
    #[inline(always)]
    fn direct(&self, plan: DirectPlan, key: &Words) -> u32 {
        let v = key.get(usize::from(plan.at)).copied().unwrap_or(0) & plan.mask;
        self.direct
            .get((v >> plan.shift) as usize)
            .copied()
            .unwrap_or(plan.miss)
    }

    /// The highest-priority rule matching `key` (ties: a fixed, deterministic choice).
    pub fn lookup(&self, key: &Words) -> Option<u32> {
        let mut best: Option<(u16, u32)> = None;
        for step in &self.order {
            if best.is_some_and(|(p, _)| p >= step.max()) {
                break;
            }
            let found = match *step {
                SearchStep::Subtable { id, .. } => self
                    .subtables
                    .get(id as usize)
                    .and_then(Option::as_ref)
                    .and_then(|sub| self.subtable_probe(sub).find_any(key))
                    .map(|e| (e.priority, e.slot)),
                SearchStep::Lpm { .. } => self.lpm_step(key),
            };
            if let Some((p, slot)) = found {
                if best.is_none_or(|(bp, _)| p > bp) {
                    best = Some((p, slot));
                }
            }
        }
        best.map(|(_, s)| s)
    }

    /// The routing family's match as a step of the tuple space search (kept out of line: most
    /// tables searched this way have no routes, and its state would crowd the loop).
    #[inline(never)]
    fn lpm_step(&self, key: &Words) -> Option<(u16, u32)> {
        let slot = self.lpm.as_ref()?.lookup(key)?;
        Some((prio_of(&self.rules, slot), slot))
    }

    /// The probe view of a subtable.
    #[inline(always)]
    fn subtable_probe<'s>(&'s self, sub: &'s Subtable) -> SubtableProbe<'s> {
        SubtableProbe {
            sub,
            index: sub.index.view(),
            keys: &self.keys,
        }
    }

    /// The catch-all below a single tuple or a routing family: the head of a match-all
    /// subtable, as the last step of the probe order.
    fn fallback(&self, step: Option<&SearchStep>) -> Option<Fallback> {
        let id = match step {
            None => return Some(Fallback::NONE),
            Some(SearchStep::Subtable { id, .. }) => id,
            Some(SearchStep::Lpm { .. }) => return None,
        };
        let all = self.subtables.get(*id as usize)?.as_ref()?;
        if !all.words.is_empty() {
            return None;
        }
        let probe = all.index.view();
        let head = probe.find(all.hash(&ZERO), 0, [0; ENTRY_REST], |_| true);
        Some(head.map_or(Fallback::NONE, |e| Fallback {
            slot: e.slot,
            priority: i32::from(e.priority),
        }))
    }

    /// Chooses how [`Self::lookup_batch`] classifies (after every change of the probe order
    /// or of a catch-all).
    fn choose_plan(&self) -> Plan {
        let (first, rest) = match self.order.split_first() {
            None => return Plan::Empty,
            Some(split) => split,
        };
        if rest.len() > 1 {
            return Plan::TupleSpace;
        }
        let below = self.fallback(rest.first());
        match (*first, below) {
            (SearchStep::Subtable { id, .. }, Some(all)) => match self.subtables.get(id as usize) {
                Some(Some(sub)) if !sub.words.is_empty() => Plan::Hash { sub: id, all },
                _ => Plan::TupleSpace,
            },
            (SearchStep::Lpm { .. }, Some(all)) => Plan::Lpm { all },
            _ => Plan::TupleSpace,
        }
    }

    /// Whether the rules and counters a lookup finds are worth prefetching (the table does
    /// not stay in cache).
    #[inline(always)]
    pub fn is_large(&self) -> bool {
        self.by_id.len() > LARGE
    }

    /// Whether a lookup reads nothing but the ingress port (a direct array over in_port), so
    /// that packets from one port all find the same rule.
    pub fn keyed_by_in_port(&self) -> bool {
        let (at, shift) = subtable::IN_PORT_AT;
        let in_port = u64::from(u32::MAX) << shift;
        matches!(self.plan, Plan::Direct(p) if usize::from(p.at) == at && p.mask & !in_port == 0)
    }

    /// The slot of the rule matching `key`, or [`NO_RULE`]: [`Self::lookup`] specialised to
    /// the table's plan, for packets classified one at a time (packet-out, InSP).
    #[inline(always)]
    pub fn lookup_one(&self, key: &Words) -> u32 {
        match self.plan {
            Plan::Empty => NO_RULE,
            Plan::Direct(plan) => self.direct(plan, key),
            Plan::Hash { sub, all } => {
                let Some(Some(sub)) = self.subtables.get(sub as usize) else {
                    return NO_RULE;
                };
                all.pick(self.subtable_probe(sub).find_any(key))
            }
            Plan::Lpm { all } => {
                let found = self.lpm.as_ref().and_then(|p| p.lookup(key));
                match found {
                    Some(slot) if all.loses_to(|| prio_of(&self.rules, slot)) => slot,
                    _ => all.slot,
                }
            }
            Plan::TupleSpace => self.lookup(key).unwrap_or(NO_RULE),
            Plan::Ports => self.by_port.lookup(key),
        }
    }

    /// Classifies `n` packets at once: `out[i]` receives the slot for `key(i)` or [`NO_RULE`].
    /// The common shapes (one tuple, a routing family, each above an optional catch-all) take
    /// one probe per packet; large indexes are probed in two passes, hashing every packet
    /// first and then probing with later packets' buckets prefetched, so the cache misses
    /// overlap instead of adding up.
    #[inline(never)]
    pub fn lookup_batch<'k>(
        &self,
        n: usize,
        key: impl Fn(usize) -> &'k Words,
        out: &mut [u32],
        scratch: &mut LookupScratch,
    ) {
        self.classify_batch(n, key, out, scratch);
    }

    crate::isa::x86_64_v3! {
        /// [`Self::lookup_batch`] compiled for x86-64-v3 (see [`crate::isa`]).
        ///
        /// # Safety
        ///
        /// The CPU must have x86-64-v3: [`crate::isa::Isa::detect`] said `X86_64V3`.
        #[inline(never)]
        pub fn lookup_batch_v3<'k>(
            &self,
            n: usize,
            key: impl Fn(usize) -> &'k Words,
            out: &mut [u32],
            scratch: &mut LookupScratch,
        ) {
            self.classify_batch(n, key, out, scratch);
        }
    }

    /// The body of [`Self::lookup_batch`], compiled into each instruction set's copy.
    #[inline(always)]
    fn classify_batch<'k>(
        &self,
        n: usize,
        key: impl Fn(usize) -> &'k Words,
        out: &mut [u32],
        scratch: &mut LookupScratch,
    ) {
        let n = n.min(out.len());
        let out = out.get_mut(..n).unwrap_or_default();
        match self.plan {
            Plan::Empty => out.fill(NO_RULE),
            Plan::Direct(plan) => {
                for (i, o) in out.iter_mut().enumerate() {
                    *o = self.direct(plan, key(i));
                }
            }
            Plan::Hash { sub, all } => match self.subtables.get(sub as usize) {
                Some(Some(sub)) => self.lookup_tuple(sub, all, &key, out, scratch),
                _ => out.fill(NO_RULE),
            },
            Plan::Lpm { all } => self.lookup_lpm(all, &key, out, scratch),
            Plan::TupleSpace => self.lookup_tuple_space(&key, out, scratch),
            Plan::Ports => {
                for (i, o) in out.iter_mut().enumerate() {
                    *o = self.by_port.lookup(key(i));
                }
            }
        }
    }

    /// One tuple above an optional catch-all: a hit of at least the catch-all's priority
    /// wins (ties go to the tuple, the first step of the probe order).
    #[inline(always)]
    fn lookup_tuple<'k>(
        &self,
        sub: &Subtable,
        all: Fallback,
        key: &impl Fn(usize) -> &'k Words,
        out: &mut [u32],
        scratch: &mut LookupScratch,
    ) {
        let t = self.subtable_probe(sub);
        let pick = |e: Option<Hit>| all.pick(e);
        // A large index is probed in two passes (hash every packet, then probe with the
        // buckets of later packets prefetched) so its cache misses overlap; a small one stays
        // in cache.
        let n = out.len();
        let hashes = (sub.index.len() > CACHED_INDEX).then(|| scratch.hashes(n));
        match *sub.lanes() {
            [a] => t.probe_all(&[a], key, out, hashes, pick),
            [a, b] => t.probe_all(&[a, b], key, out, hashes, pick),
            [a, b, c] => t.probe_all(&[a, b, c], key, out, hashes, pick),
            [a, b, c, d] => t.probe_all(&[a, b, c, d], key, out, hashes, pick),
            // Wider masks are rare: the tuple space search serves them (prefetching too).
            _ => self.lookup_tuple_space(key, out, scratch),
        }
    }

    /// A routing family above an optional catch-all. A catch-all at priority 0 loses to
    /// every route, so the routes' rules are not even loaded for their priority.
    #[inline(always)]
    fn lookup_lpm<'k>(
        &self,
        all: Fallback,
        key: &impl Fn(usize) -> &'k Words,
        out: &mut [u32],
        scratch: &mut LookupScratch,
    ) {
        out.fill(all.slot);
        let Some(plan) = &self.lpm else {
            return;
        };
        let state = scratch.hashes(out.len());
        plan.lookup_batch(out.len(), key, &|_| true, state, |i, slot| {
            let wins = all.loses_to(|| prio_of(&self.rules, slot));
            if let (true, Some(o)) = (wins, out.get_mut(i)) {
                *o = slot;
            }
        });
    }

    /// Priority-ordered tuple space search, subtable by subtable over the whole batch; a
    /// packet stops being probed once its best match outranks every later subtable.
    fn lookup_tuple_space<'k>(
        &self,
        key: &impl Fn(usize) -> &'k Words,
        out: &mut [u32],
        scratch: &mut LookupScratch,
    ) {
        let n = out.len();
        out.fill(NO_RULE);
        scratch.best.clear();
        scratch.best.resize(n, -1);
        scratch.hashes.resize(n, 0);
        let LookupScratch { hashes, best, hits } = scratch;
        for step in &self.order {
            let max = i32::from(step.max());
            if !best.iter().any(|b| *b < max) {
                break;
            }
            match *step {
                SearchStep::Subtable { id, .. } => {
                    let Some(Some(sub)) = self.subtables.get(id as usize) else {
                        continue;
                    };
                    let t = self.subtable_probe(sub);
                    if sub.words.is_empty() {
                        // Match-all mask: one entry at most, the same for every packet.
                        if let Some(e) = t.find(&ZERO) {
                            let p = i32::from(e.priority);
                            for (b, o) in best.iter_mut().zip(out.iter_mut()) {
                                if *b < p {
                                    *b = p;
                                    *o = e.slot;
                                }
                            }
                        }
                        continue;
                    }
                    let pass = Pass {
                        subtable: t,
                        max,
                        large: sub.index.len() > CACHED_INDEX,
                    };
                    let (hashes, best, out) = (&mut **hashes, &mut **best, &mut *out);
                    // The probe unrolled for the mask's width, chosen once per subtable.
                    match *sub.lanes() {
                        [a] => pass.run(key, hashes, best, out, |k, h| t.probe(&[a], k, h)),
                        [a, b] => pass.run(key, hashes, best, out, |k, h| t.probe(&[a, b], k, h)),
                        [a, b, c] => {
                            pass.run(key, hashes, best, out, |k, h| t.probe(&[a, b, c], k, h))
                        }
                        [a, b, c, d] => {
                            pass.run(key, hashes, best, out, |k, h| t.probe(&[a, b, c, d], k, h))
                        }
                        _ => pass.run(key, hashes, best, out, |k, h| {
                            t.find_hashed(h.unwrap_or_else(|| t.hash(k)), k)
                        }),
                    }
                }
                SearchStep::Lpm { .. } => {
                    let Some(plan) = &self.lpm else { continue };
                    let pending = |i: usize| best.get(i).is_some_and(|b| *b < max);
                    hits.clear();
                    plan.lookup_batch(n, key, &pending, hashes, |i, slot| {
                        hits.push((i as u32, slot))
                    });
                    for &(i, slot) in hits.iter() {
                        let p = i32::from(prio_of(&self.rules, slot));
                        if let (Some(b), Some(o)) =
                            (best.get_mut(i as usize), out.get_mut(i as usize))
                        {
                            if p > *b {
                                *b = p;
                                *o = slot;
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The chain head (highest-priority rule) in `sub` whose masked key equals `key`.
fn find_head(keys: &[Words], sub: &Subtable, h: u64, key: &Words) -> Option<u32> {
    sub.index
        .view()
        .find(h, sub.word0(key), sub.rest(key), |s| {
            rule_key(keys, s).is_some_and(|k| sub.key_eq(k, key))
        })
        .map(|e| e.slot)
}

/// The masked key of the live rule in `slot`.
#[inline(always)]
fn rule_key(keys: &[Words], slot: u32) -> Option<&Words> {
    keys.get(slot as usize)
}

fn next_of<C>(rules: &[Option<RuleMeta<C>>], slot: u32) -> u32 {
    rules
        .get(slot as usize)
        .and_then(Option::as_ref)
        .map_or(NO_RULE, |r| r.next)
}

/// The index entry's answer for the rule in `slot`.
fn hit_of<C>(rules: &[Option<RuleMeta<C>>], slot: u32) -> Hit {
    Hit {
        slot,
        priority: prio_of(rules, slot),
    }
}

fn prio_of<C>(rules: &[Option<RuleMeta<C>>], slot: u32) -> u16 {
    rules
        .get(slot as usize)
        .and_then(Option::as_ref)
        .map_or(0, |r| r.priority)
}

fn set_next<C>(rules: &mut [Option<RuleMeta<C>>], slot: u32, next: u32) {
    if let Some(Some(r)) = rules.get_mut(slot as usize) {
        r.next = next;
    }
}

/// Inserts `slot` into the equal-key chain starting at `head` (priority descending, a new rule
/// after existing equal-priority ones); returns the new head.
fn chain_insert<C>(rules: &mut [Option<RuleMeta<C>>], head: u32, slot: u32) -> u32 {
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
fn chain_remove<C>(rules: &mut [Option<RuleMeta<C>>], head: u32, slot: u32) -> u32 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{Field, FieldValue, FlowKey};

    /// A mask of more words than an index entry holds: the words beyond it are compared
    /// with the rule's key, even for a probe that lands in the rule's chain (as a key whose
    /// hash collides with the rule's would).
    #[test]
    fn words_beyond_the_entry_are_compared_with_the_rule() {
        let mut m = FlowMatch::any();
        m.set(Field::InPort, FieldValue::from(1u32), None);
        m.set(Field::Metadata, FieldValue::from(7u64), None);
        m.set(Field::EthType, FieldValue::from(0x0800u16), None);
        m.set(Field::Ipv4Dst, FieldValue::from(0x0a00_0001u32), None);
        m.set(Field::TcpDst, FieldValue::from(80u16), None);
        let mut c: Classifier<_> = Classifier::default();
        c.insert(1, 10, &m, ());
        let key = FlowKey {
            in_port: 1,
            metadata: 7,
            eth_type: 0x0800,
            ipv4_dst: 0x0a00_0001,
            tp_dst: 80,
            ..FlowKey::default()
        };
        let other = FlowKey { tp_dst: 81, ..key };
        let Some(Some(sub)) = c.subtables.iter().find(|s| s.is_some()) else {
            panic!("no subtable");
        };
        assert!(sub.lanes().len() > 1 + ENTRY_REST);
        let t = c.subtable_probe(sub);
        let h = t.hash(key.words());
        assert!(t.find_hashed(h, key.words()).is_some());
        assert!(t.find_hashed(h, other.words()).is_none());
        let lanes: [hash::Lane; 4] = sub.lanes().try_into().expect("four lanes");
        let (words, _) = t.masked(&lanes, key.words());
        let (other_words, _) = t.masked(&lanes, other.words());
        assert!(t.find_words(&lanes, &words, h).is_some());
        assert!(t.find_words(&lanes, &other_words, h).is_none());
    }
}
