//! Matches as sets of packets: a [`FlowMatch`] is a ternary cube over the key's bits (each
//! bit 0, 1 or don't-care). Placement asks three questions of them: do two overlap, does one
//! cover another, and what is left of one once others are taken away (the packets that can
//! still reach a rule below higher-priority rules, which decides its direct dependencies).
//!
//! The algebra works on raw key bits, so it may see an overlap no real packet has (a key with
//! both TCP and UDP ports set); every answer errs towards more overlap, which only costs
//! placement a dependency it did not need.

use dataplane::key::{FlowMatch, KEY_WORDS};

/// Whether some key matches both.
pub fn overlaps(a: &FlowMatch, b: &FlowMatch) -> bool {
    let (am, ak, bm, bk) = (a.mask.words(), a.key.words(), b.mask.words(), b.key.words());
    (0..KEY_WORDS).all(|i| (ak[i] ^ bk[i]) & am[i] & bm[i] == 0)
}

/// Whether every key matching `inner` matches `outer`.
pub fn covers(outer: &FlowMatch, inner: &FlowMatch) -> bool {
    let (om, ok, im, ik) = (
        outer.mask.words(),
        outer.key.words(),
        inner.mask.words(),
        inner.key.words(),
    );
    (0..KEY_WORDS).all(|i| om[i] & !im[i] == 0 && (ik[i] ^ ok[i]) & om[i] == 0)
}

/// The intersection of two overlapping matches.
pub fn intersect(a: &FlowMatch, b: &FlowMatch) -> FlowMatch {
    let mut out = *a;
    let (bm, bk) = (b.mask.words(), b.key.words());
    let (om, ok) = (out.mask.words_mut(), out.key.words_mut());
    for i in 0..KEY_WORDS {
        om[i] |= bm[i];
        ok[i] |= bk[i];
    }
    out
}

/// A set of keys as a union of disjoint cubes, with a bound on how many it may hold.
#[derive(Clone, Debug)]
pub struct CubeSet {
    cubes: Vec<FlowMatch>,
    limit: usize,
    /// A subtraction was skipped for the bound: the set may hold more than it should.
    pub inexact: bool,
}

impl CubeSet {
    /// The keys of `m`; subtractions that would split it into more than `limit` cubes are
    /// skipped (the set stays larger than exact, and says so).
    pub fn new(m: &FlowMatch, limit: usize) -> Self {
        CubeSet {
            cubes: vec![*m],
            limit,
            inexact: false,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.cubes.is_empty()
    }

    /// Whether some key of the set matches `m`.
    pub fn overlaps(&self, m: &FlowMatch) -> bool {
        self.cubes.iter().any(|c| overlaps(c, m))
    }

    /// Removes the keys of `m`.
    pub fn subtract(&mut self, m: &FlowMatch) {
        let mut out = Vec::with_capacity(self.cubes.len());
        for c in &self.cubes {
            if !overlaps(c, m) {
                out.push(*c);
            } else if !covers(m, c) {
                split_off(c, m, &mut out);
            }
            if out.len() > self.limit {
                self.inexact = true;
                return;
            }
        }
        self.cubes = out;
    }
}

/// Pushes the cubes of `c` minus `m` (which overlap): for each bit `m` fixes and `c` leaves
/// free, one cube with the earlier such bits as `m` has them and this one the other way.
fn split_off(c: &FlowMatch, m: &FlowMatch, out: &mut Vec<FlowMatch>) {
    let mut rest = *c;
    let (mm, mk) = (*m.mask.words(), *m.key.words());
    for i in 0..KEY_WORDS {
        let mut free = mm[i] & !rest.mask.words()[i];
        while free != 0 {
            let bit = free & free.wrapping_neg();
            free &= !bit;
            let mut piece = rest;
            piece.mask.words_mut()[i] |= bit;
            piece.key.words_mut()[i] |= !mk[i] & bit;
            out.push(piece);
            rest.mask.words_mut()[i] |= bit;
            rest.key.words_mut()[i] |= mk[i] & bit;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dataplane::key::{Field, FieldValue};

    fn ip(dst: u32, prefix: u32) -> FlowMatch {
        let mut m = FlowMatch::any();
        m.set(Field::EthType, FieldValue::from(0x0800u16), None);
        let mask = if prefix == 0 {
            0
        } else {
            u32::MAX << (32 - prefix)
        };
        m.set(
            Field::Ipv4Dst,
            FieldValue::from(dst),
            Some(FieldValue::from(mask)),
        );
        m
    }

    #[test]
    fn overlap_and_cover_follow_prefixes() {
        let (a8, a16, b16) = (ip(0x0a00_0000, 8), ip(0x0a01_0000, 16), ip(0x0b01_0000, 16));
        assert!(overlaps(&a8, &a16) && !overlaps(&a16, &b16));
        assert!(covers(&a8, &a16) && !covers(&a16, &a8));
        assert!(covers(&FlowMatch::any(), &a8));
        assert_eq!(intersect(&a8, &a16), a16);
    }

    #[test]
    fn subtraction_leaves_exactly_the_rest() {
        let mut set = CubeSet::new(&ip(0x0a00_0000, 8), 64);
        set.subtract(&ip(0x0a01_0000, 16));
        assert!(!set.inexact);
        assert!(
            !set.overlaps(&ip(0x0a01_0203, 32)),
            "subtracted keys are gone"
        );
        assert!(set.overlaps(&ip(0x0a02_0000, 16)), "the rest stays");
        assert!(set.overlaps(&ip(0x0aff_ffff, 32)));
        set.subtract(&ip(0x0a00_0000, 8));
        assert!(set.is_empty());
    }

    #[test]
    fn a_bound_makes_the_set_larger_never_smaller() {
        let mut set = CubeSet::new(&FlowMatch::any(), 4);
        set.subtract(&ip(0x0a01_0203, 32));
        assert!(set.inexact);
        assert!(set.overlaps(&ip(0x0a01_0203, 32)), "kept whole");
    }
}
