//! Keyed hashing of masked flow-key words and the open-addressing index the subtables use.
//!
//! Why keyed: packet fields are attacker-controlled, so an unkeyed hash would let a sender
//! pick keys that all land in one probe chain. The two seed words come from std's
//! `RandomState` (randomly keyed per process) and are mixed with a folded 64x64->128
//! multiply (the foldhash/wyhash construction): fast, and without the seed an attacker cannot
//! predict which keys collide. Both left-right copies of the datapath share the process seed,
//! so they stay bit-identical.

use crate::key::{Words, KEY_WORDS};
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

/// The per-process hash key.
#[derive(Clone, Copy, Debug)]
pub struct Seed {
    a: u64,
    b: u64,
}

impl Seed {
    /// The random per-process seed.
    pub fn process() -> Seed {
        static SEED: OnceLock<Seed> = OnceLock::new();
        *SEED.get_or_init(|| {
            let state = RandomState::new();
            let a = state.hash_one(0x5eed_u64);
            let b = state.hash_one(0xf00d_u64) | 1;
            Seed { a, b }
        })
    }
}

#[inline(always)]
fn fold_mul(x: u64, y: u64) -> u64 {
    let p = u128::from(x).wrapping_mul(u128::from(y));
    (p as u64) ^ ((p >> 64) as u64)
}

/// One significant word of a mask, ready for hashing: its position, its bits and the
/// per-position multiplier (precomputed so a probe does one load, one AND and one multiply
/// per word).
#[derive(Clone, Copy, Debug)]
pub struct Lane {
    /// The word's position, below [`KEY_WORDS`] (made so by [`Seed::lane`]).
    at: usize,
    pub mask: u64,
    salt: u64,
}

impl Lane {
    /// The word's position in a key.
    #[inline(always)]
    pub fn at(&self) -> usize {
        self.at
    }

    /// This lane's word of `key` under the mask.
    #[inline(always)]
    pub fn word(&self, key: &Words) -> u64 {
        // SAFETY: `at < KEY_WORDS`, the length of `key`: `Seed::lane`, the only constructor,
        // reduces it modulo `KEY_WORDS` (a probe reads several lanes per packet and table;
        // the check the compiler cannot drop by itself is a tenth of a lane's cost).
        unsafe { *key.get_unchecked(self.at) & self.mask }
    }

    /// Folds the masked word `w` into the running hash `h`.
    #[inline(always)]
    pub fn mix(&self, h: u64, w: u64) -> u64 {
        fold_mul(h ^ w, self.salt)
    }
}

impl Seed {
    /// The initial value of every hash.
    #[inline(always)]
    pub fn a(self) -> u64 {
        self.a
    }

    /// The last step of every hash, after the lanes.
    #[inline(always)]
    pub fn finish(self, h: u64) -> u64 {
        fold_mul(h, self.b)
    }

    /// The lane of word `at` (below [`KEY_WORDS`]) under `mask`.
    pub fn lane(self, at: usize, mask: u64) -> Lane {
        let at = at % KEY_WORDS;
        Lane {
            at,
            mask,
            salt: self.b ^ (at as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
        }
    }
}

/// Hashes `key & mask` over the mask's lanes (its non-zero words): one folded multiply per
/// lane, each keyed by the seed and the lane's position, and a final one so that every bit
/// of the result depends on every bit of the key (the index takes its home from the high
/// half; without the final mix, keys that differ only in a few low bits, such as port
/// numbers, crowd into a fraction of the homes under some seeds).
#[inline(always)]
pub fn hash_lanes(seed: Seed, key: &Words, lanes: &[Lane]) -> u64 {
    let mut h = seed.a;
    for l in lanes {
        h = l.mix(h, l.word(key));
    }
    seed.finish(h)
}

/// Hashes `key & mask` over the word positions in `words` (the mask's non-zero words); equal
/// to [`hash_lanes`] over the same words.
#[inline(always)]
pub fn hash_masked(seed: Seed, key: &Words, mask: &Words, words: &[u8]) -> u64 {
    let mut h = seed.a;
    for &i in words {
        let i = usize::from(i);
        let l = seed.lane(i, mask.get(i).copied().unwrap_or(0));
        h = l.mix(h, l.word(key));
    }
    seed.finish(h)
}

/// A seeded `BuildHasher` for the control-side maps (ids, masks), deterministic per process
/// so both left-right copies iterate and choose identically.
#[derive(Clone, Copy, Debug)]
pub struct SeededState(Seed);

impl Default for SeededState {
    fn default() -> Self {
        SeededState(Seed::process())
    }
}

impl BuildHasher for SeededState {
    type Hasher = SeededHasher;
    fn build_hasher(&self) -> SeededHasher {
        SeededHasher {
            seed: self.0,
            h: self.0.a,
        }
    }
}

/// Hasher behind [`SeededState`].
#[derive(Clone, Copy, Debug)]
pub struct SeededHasher {
    seed: Seed,
    h: u64,
}

impl Hasher for SeededHasher {
    fn finish(&self) -> u64 {
        fold_mul(self.h, self.seed.b)
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(w));
        }
    }

    fn write_u64(&mut self, i: u64) {
        self.h = fold_mul(self.h ^ i, self.seed.b);
    }

    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }

    fn write_u16(&mut self, i: u16) {
        self.write_u64(u64::from(i));
    }

    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }

    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
}

/// Seeded std `HashMap` used on the control side.
pub type SeededMap<K, V> = std::collections::HashMap<K, V, SeededState>;

/// Significant masked key words a wide index entry holds beyond the first.
pub const ENTRY_REST: usize = 2;

/// What a probe finds: the rule slot heading the chain of its masked key, and its priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hit {
    pub slot: u32,
    pub priority: u16,
}

/// One index slot: the first `1 + R` significant masked key words (so a match on that many
/// words is verified without touching the rule), the rule slot, its priority, and 16 hash
/// bits as a tag.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct IndexEntry<const R: usize> {
    word0: u64,
    rest: [u64; R],
    slot: u32,
    priority: u16,
    tag: u16,
}

impl<const R: usize> IndexEntry<R> {
    const EMPTY: Self = IndexEntry {
        word0: 0,
        rest: [0; R],
        slot: u32::MAX,
        priority: 0,
        tag: 0,
    };

    #[inline(always)]
    fn hit(&self) -> Hit {
        Hit {
            slot: self.slot,
            priority: self.priority,
        }
    }
}

/// Indexes with fewer entries than this are kept at most a quarter full, larger ones half.
const SPARSE_BELOW: usize = 4096;

#[inline(always)]
fn tag(hash: u64) -> u16 {
    (hash >> 16) as u16
}

/// Linear-probing index from a masked-key hash to the rule slot, entries of `1 + R` key
/// words. Load factor at most 1/2 (1/4 below `SPARSE_BELOW` entries); deletion shifts
/// entries back so no tombstones accumulate. Homes are recomputed from the rules (`rehash`)
/// when growing or deleting.
#[derive(Clone, Debug)]
pub struct RawIndex<const R: usize> {
    entries: Box<[IndexEntry<R>]>,
    len: usize,
}

impl<const R: usize> Default for RawIndex<R> {
    fn default() -> Self {
        RawIndex {
            entries: vec![IndexEntry::EMPTY; 8].into_boxed_slice(),
            len: 0,
        }
    }
}

impl<const R: usize> RawIndex<R> {
    #[inline(always)]
    fn home(&self, hash: u64) -> usize {
        ((hash >> 32) as usize) & (self.entries.len() - 1)
    }

    /// Every occupied entry.
    fn iter(&self) -> impl Iterator<Item = &IndexEntry<R>> {
        self.entries.iter().filter(|e| e.slot != u32::MAX)
    }

    /// A read-only view for probing many keys (the entry array and its mask loaded once).
    #[inline(always)]
    fn view(&self) -> IndexView<'_, R> {
        IndexView {
            entries: &self.entries,
            mask: self.entries.len() - 1,
        }
    }

    /// Inserts an entry (the caller ensures no equal key is present).
    fn insert(&mut self, hash: u64, key: ([u64; R], u64), hit: Hit, rehash: impl Fn(u32) -> u64) {
        // Small indexes stay at most a quarter full: their probes end sooner (a miss too),
        // and the extra space is a few cache lines.
        let spread = if self.entries.len() < SPARSE_BELOW {
            4
        } else {
            2
        };
        if (self.len + 1) * spread > self.entries.len() {
            let bigger = vec![IndexEntry::EMPTY; self.entries.len() * 2].into_boxed_slice();
            let old = std::mem::replace(&mut self.entries, bigger);
            for e in old.iter().filter(|e| e.slot != u32::MAX) {
                self.place(rehash(e.slot), *e);
            }
        }
        let (rest, word0) = key;
        self.place(
            hash,
            IndexEntry {
                word0,
                rest,
                slot: hit.slot,
                priority: hit.priority,
                tag: tag(hash),
            },
        );
        self.len += 1;
    }

    fn place(&mut self, hash: u64, entry: IndexEntry<R>) {
        let mask = self.entries.len() - 1;
        let mut pos = self.home(hash);
        while let Some(e) = self.entries.get_mut(pos) {
            if e.slot == u32::MAX {
                *e = entry;
                return;
            }
            pos = (pos + 1) & mask;
        }
    }

    fn position(&self, hash: u64, slot: u32) -> Option<usize> {
        let mask = self.entries.len() - 1;
        let mut pos = self.home(hash);
        loop {
            let e = self.entries.get(pos)?;
            if e.slot == u32::MAX {
                return None;
            }
            if e.slot == slot {
                return Some(pos);
            }
            pos = (pos + 1) & mask;
        }
    }

    /// Points the entry of (`hash`, `old`) at `new`.
    fn replace(&mut self, hash: u64, old: u32, new: Hit) -> bool {
        let Some(pos) = self.position(hash, old) else {
            return false;
        };
        match self.entries.get_mut(pos) {
            Some(e) => {
                e.slot = new.slot;
                e.priority = new.priority;
                true
            }
            None => false,
        }
    }

    /// Removes the entry (`hash`, `slot`); returns whether it was present.
    fn remove(&mut self, hash: u64, slot: u32, rehash: impl Fn(u32) -> u64) -> bool {
        let Some(mut hole) = self.position(hash, slot) else {
            return false;
        };
        let mask = self.entries.len() - 1;
        let mut pos = hole;
        loop {
            pos = (pos + 1) & mask;
            let e = self.entries.get(pos).copied().unwrap_or(IndexEntry::EMPTY);
            if e.slot == u32::MAX {
                break;
            }
            // Move `e` into the hole unless its home lies cyclically in (hole, pos].
            let home = self.home(rehash(e.slot));
            let stays = if hole < pos {
                hole < home && home <= pos
            } else {
                hole < home || home <= pos
            };
            if !stays {
                if let Some(h) = self.entries.get_mut(hole) {
                    *h = e;
                }
                hole = pos;
            }
        }
        if let Some(h) = self.entries.get_mut(hole) {
            *h = IndexEntry::EMPTY;
        }
        self.len -= 1;
        true
    }
}

/// [`RawIndex`] as the probes of a batch see it.
#[derive(Clone, Copy, Debug)]
pub struct IndexView<'a, const R: usize> {
    entries: &'a [IndexEntry<R>],
    mask: usize,
}

impl<const R: usize> IndexView<'_, R> {
    #[inline(always)]
    fn home(&self, hash: u64) -> usize {
        ((hash >> 32) as usize) & self.mask
    }

    /// Hints the CPU to load the line the probe for `hash` starts at.
    #[inline(always)]
    pub fn prefetch(&self, hash: u64) {
        if let Some(e) = self.entries.get(self.home(hash)) {
            prefetch_read(e);
        }
    }

    /// The entry whose tag and words match and for which `tail_eq(slot)` holds.
    #[inline(always)]
    pub fn find(
        &self,
        hash: u64,
        word0: u64,
        rest: [u64; R],
        mut tail_eq: impl FnMut(u32) -> bool,
    ) -> Option<Hit> {
        let t = tag(hash);
        let mut pos = self.home(hash);
        loop {
            let e = self.entries.get(pos)?;
            if e.slot == u32::MAX {
                return None;
            }
            if e.tag == t && e.word0 == word0 && e.rest == rest && tail_eq(e.slot) {
                return Some(e.hit());
            }
            pos = (pos + 1) & self.mask;
        }
    }
}

/// A subtable's index: for a mask of one word, entries of that word (four to a cache line,
/// so a large MAC table stays compact); for wider masks, entries of the first three words (a
/// 5-tuple is verified in the entry, without loading the rule's key).
#[derive(Clone, Debug)]
pub enum Index {
    Narrow(RawIndex<0>),
    Wide(RawIndex<ENTRY_REST>),
}

/// The rest words of a key for a narrow entry (none).
fn narrow(_: [u64; ENTRY_REST]) -> [u64; 0] {
    []
}

impl Index {
    /// The index for a mask of `words` significant words.
    pub fn for_words(words: usize) -> Index {
        if words <= 1 {
            Index::Narrow(RawIndex::default())
        } else {
            Index::Wide(RawIndex::default())
        }
    }

    /// Significant words an entry holds (a probe reads the rule's key for the others).
    pub fn held_words(&self) -> usize {
        match self {
            Index::Narrow(_) => 1,
            Index::Wide(_) => 1 + ENTRY_REST,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Index::Narrow(i) => i.len,
            Index::Wide(i) => i.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every entry's first word and hit.
    pub fn iter(&self) -> impl Iterator<Item = (u64, Hit)> + '_ {
        let (narrow, wide) = match self {
            Index::Narrow(i) => (Some(i.iter()), None),
            Index::Wide(i) => (None, Some(i.iter())),
        };
        let narrow = narrow.into_iter().flatten().map(|e| (e.word0, e.hit()));
        narrow.chain(wide.into_iter().flatten().map(|e| (e.word0, e.hit())))
    }

    /// The probe view.
    #[inline(always)]
    pub fn view(&self) -> IndexProbe<'_> {
        match self {
            Index::Narrow(i) => IndexProbe::Narrow(i.view()),
            Index::Wide(i) => IndexProbe::Wide(i.view()),
        }
    }

    /// Inserts an entry (the caller ensures no equal key is present).
    pub fn insert(
        &mut self,
        hash: u64,
        word0: u64,
        rest: [u64; ENTRY_REST],
        hit: Hit,
        rehash: impl Fn(u32) -> u64,
    ) {
        match self {
            Index::Narrow(i) => i.insert(hash, (narrow(rest), word0), hit, rehash),
            Index::Wide(i) => i.insert(hash, (rest, word0), hit, rehash),
        }
    }

    /// Points the entry of (`hash`, `old`) at `new`.
    pub fn replace(&mut self, hash: u64, old: u32, new: Hit) -> bool {
        match self {
            Index::Narrow(i) => i.replace(hash, old, new),
            Index::Wide(i) => i.replace(hash, old, new),
        }
    }

    /// Removes the entry (`hash`, `slot`); returns whether it was present.
    pub fn remove(&mut self, hash: u64, slot: u32, rehash: impl Fn(u32) -> u64) -> bool {
        match self {
            Index::Narrow(i) => i.remove(hash, slot, rehash),
            Index::Wide(i) => i.remove(hash, slot, rehash),
        }
    }
}

/// [`Index`] as the probes of a batch see it.
#[derive(Clone, Copy, Debug)]
pub enum IndexProbe<'a> {
    Narrow(IndexView<'a, 0>),
    Wide(IndexView<'a, ENTRY_REST>),
}

impl IndexProbe<'_> {
    /// Hints the CPU to load the line the probe for `hash` starts at.
    #[inline(always)]
    pub fn prefetch(&self, hash: u64) {
        match self {
            IndexProbe::Narrow(v) => v.prefetch(hash),
            IndexProbe::Wide(v) => v.prefetch(hash),
        }
    }

    /// The hit for masked key words `word0` and `rest` (the words after it, 0 past the
    /// mask's) for which `tail_eq(slot)` holds.
    #[inline(always)]
    pub fn find(
        &self,
        hash: u64,
        word0: u64,
        rest: [u64; ENTRY_REST],
        tail_eq: impl FnMut(u32) -> bool,
    ) -> Option<Hit> {
        match self {
            IndexProbe::Narrow(v) => v.find(hash, word0, narrow(rest), tail_eq),
            IndexProbe::Wide(v) => v.find(hash, word0, rest, tail_eq),
        }
    }
}

/// Hints the CPU to load the cache line holding `p`.
#[inline(always)]
pub(crate) fn prefetch_read<T>(p: &T) {
    prefetch_ptr(core::ptr::from_ref(p).cast::<u8>());
}

/// Hints the CPU to load the cache line at address `p` (any address: a prefetch never faults).
#[inline(always)]
pub(crate) fn prefetch_ptr(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it never faults, whatever the address, and reads nothing
    // observable.
    unsafe {
        core::arch::x86_64::_mm_prefetch(p.cast::<i8>(), core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mean displacement of `n` small consecutive keys (port numbers in one lane) in a
    /// linear-probing index of twice their number, under `seed`.
    fn mean_displacement(seed: Seed, n: u64) -> f64 {
        let size = (2 * n).next_power_of_two() as usize;
        let lanes = [seed.lane(0, u64::from(u32::MAX))];
        let mut used = vec![false; size];
        let mut total = 0usize;
        for port in 1..=n {
            let mut key = [0; KEY_WORDS];
            key[0] = port;
            let home = ((hash_lanes(seed, &key, &lanes) >> 32) as usize) & (size - 1);
            let mut pos = home;
            while used[pos] {
                pos = (pos + 1) & (size - 1);
            }
            used[pos] = true;
            total += (pos + size - home) & (size - 1);
        }
        total as f64 / n as f64
    }

    #[test]
    fn an_entry_answers_only_a_probe_with_all_its_words() {
        let mut index = Index::for_words(3);
        // Three keys in one probe chain (one hash, so one home and tag): only the words and
        // the tail tell them apart.
        let h = 0x1234_5678_9abc_def0;
        let keys = [(7, [1, 2]), (7, [1, 3]), (8, [1, 2])];
        for (slot, &(word0, rest)) in keys.iter().enumerate() {
            let hit = Hit {
                slot: slot as u32,
                priority: 10,
            };
            index.insert(h, word0, rest, hit, |_| h);
        }
        for (slot, &(word0, rest)) in keys.iter().enumerate() {
            let found = index.view().find(h, word0, rest, |_| true).map(|e| e.slot);
            assert_eq!(found, Some(slot as u32));
        }
        assert!(index.view().find(h, 7, [2, 2], |_| true).is_none());
        assert!(index.view().find(h, 7, [1, 2], |_| false).is_none());
        assert!(index
            .view()
            .find(h ^ (1 << 20), 7, [1, 2], |_| true)
            .is_none());
    }

    #[test]
    fn small_keys_spread_over_the_index_under_every_seed() {
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let z = (state ^ (state >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z ^ (z >> 31)
        };
        for _ in 0..500 {
            let seed = Seed {
                a: next(),
                b: next() | 1,
            };
            for n in [48, 200] {
                let d = mean_displacement(seed, n);
                assert!(
                    d < 2.0,
                    "mean displacement {d} for {n} ports under {seed:?}"
                );
            }
        }
    }
}
