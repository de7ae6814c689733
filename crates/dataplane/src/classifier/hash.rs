//! Keyed hashing of masked flow-key words and the open-addressing index the subtables use.
//!
//! Why keyed: packet fields are attacker-controlled, so an unkeyed hash would let a sender
//! pick keys that all land in one probe chain. The two seed words come from std's
//! `RandomState` (randomly keyed per process) and are mixed with a folded 64x64->128
//! multiply (the foldhash/wyhash construction): fast, and without the seed an attacker cannot
//! predict which keys collide. Both left-right copies of the datapath share the process seed,
//! so they stay bit-identical.

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

/// Hashes `key & mask` over the word positions in `words` (the mask's non-zero words).
#[inline(always)]
pub fn hash_masked(seed: Seed, key: &[u64], mask: &[u64], words: &[u8]) -> u64 {
    let mut h = seed.a;
    for &i in words {
        let i = usize::from(i);
        let w = key.get(i).copied().unwrap_or(0) & mask.get(i).copied().unwrap_or(0);
        h = fold_mul(
            h ^ w,
            seed.b ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
        );
    }
    fold_mul(h, seed.b)
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

const EMPTY: u64 = u64::MAX;

/// Linear-probing index from a 64-bit hash to a `u32` slot. Each entry packs the hash's top 32
/// bits (its home position and a tag that filters almost every false candidate before the key
/// compare) with the slot, 8 entries per cache line. Load factor at most 1/2; deletion shifts
/// entries back so no tombstones accumulate.
#[derive(Clone, Debug)]
pub struct RawIndex {
    entries: Box<[u64]>,
    len: usize,
}

impl Default for RawIndex {
    fn default() -> Self {
        RawIndex {
            entries: vec![EMPTY; 8].into_boxed_slice(),
            len: 0,
        }
    }
}

#[inline(always)]
fn tag(hash: u64) -> u64 {
    hash >> 32
}

impl RawIndex {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    fn mask(&self) -> usize {
        self.entries.len() - 1
    }

    #[inline(always)]
    fn home(&self, tag: u64) -> usize {
        (tag as usize) & self.mask()
    }

    /// Hints the CPU to load the line the probe for `hash` starts at.
    #[inline(always)]
    pub fn prefetch(&self, hash: u64) {
        if let Some(e) = self.entries.get(self.home(tag(hash))) {
            prefetch_read(e);
        }
    }

    /// The first slot whose tag matches `hash` and for which `eq(slot)` holds.
    #[inline(always)]
    pub fn find(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        let mask = self.mask();
        let t = tag(hash);
        let mut pos = self.home(t);
        loop {
            let e = *self.entries.get(pos)?;
            if e == EMPTY {
                return None;
            }
            if e >> 32 == t && eq(e as u32) {
                return Some(e as u32);
            }
            pos = (pos + 1) & mask;
        }
    }

    /// Inserts `slot` under `hash` (the caller ensures no equal key is present).
    pub fn insert(&mut self, hash: u64, slot: u32) {
        if (self.len + 1) * 2 > self.entries.len() {
            self.grow();
        }
        self.place((tag(hash) << 32) | u64::from(slot));
        self.len += 1;
    }

    fn place(&mut self, entry: u64) {
        let mask = self.mask();
        let mut pos = self.home(entry >> 32);
        while let Some(e) = self.entries.get_mut(pos) {
            if *e == EMPTY {
                *e = entry;
                return;
            }
            pos = (pos + 1) & mask;
        }
    }

    fn position(&self, want: u64) -> Option<usize> {
        let mask = self.mask();
        let mut pos = self.home(want >> 32);
        loop {
            let e = *self.entries.get(pos)?;
            if e == EMPTY {
                return None;
            }
            if e == want {
                return Some(pos);
            }
            pos = (pos + 1) & mask;
        }
    }

    /// Replaces the slot stored for (`hash`, `old`) by `new`.
    pub fn replace(&mut self, hash: u64, old: u32, new: u32) -> bool {
        let Some(pos) = self.position((tag(hash) << 32) | u64::from(old)) else {
            return false;
        };
        match self.entries.get_mut(pos) {
            Some(e) => {
                *e = (tag(hash) << 32) | u64::from(new);
                true
            }
            None => false,
        }
    }

    /// Removes the entry (`hash`, `slot`); returns whether it was present.
    pub fn remove(&mut self, hash: u64, slot: u32) -> bool {
        let Some(mut hole) = self.position((tag(hash) << 32) | u64::from(slot)) else {
            return false;
        };
        let mask = self.mask();
        let mut pos = hole;
        loop {
            pos = (pos + 1) & mask;
            let e = self.entries.get(pos).copied().unwrap_or(EMPTY);
            if e == EMPTY {
                break;
            }
            // Move `e` into the hole unless its home lies cyclically in (hole, pos].
            let home = self.home(e >> 32);
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
            *h = EMPTY;
        }
        self.len -= 1;
        true
    }

    fn grow(&mut self) {
        let bigger = vec![EMPTY; self.entries.len() * 2].into_boxed_slice();
        let old = std::mem::replace(&mut self.entries, bigger);
        for e in old.iter().copied().filter(|&e| e != EMPTY) {
            self.place(e);
        }
    }
}

#[inline(always)]
pub(crate) fn prefetch_read<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it never faults and reads nothing observable.
    unsafe {
        core::arch::x86_64::_mm_prefetch(
            core::ptr::from_ref(p).cast::<i8>(),
            core::arch::x86_64::_MM_HINT_T0,
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
