//! Which rules of a table overlap a match, without walking the table: rules are grouped by
//! mask (a tuple, as in tuple space search). For a tuple whose mask the query fixes entirely,
//! the overlapping rules are exactly those with the query's key under that mask: one hash
//! probe. A tuple with bits the query leaves free is walked. Tables of many exact rules and
//! few wildcard ones (the common shape) answer an exact query in a probe per tuple.

use std::collections::HashMap;

use dataplane::key::{FlowKey, FlowMatch, Words, KEY_WORDS};
use dataplane::model::FlowId;

/// A 64-bit fold of key words (a fast hash; collisions are resolved by the caller).
fn fold(words: &Words, mask: &Words) -> u64 {
    let mut h = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..KEY_WORDS {
        h = (h ^ (words[i] & mask[i]))
            .wrapping_mul(0x0100_0000_01b3)
            .rotate_left(29);
    }
    h
}

struct Tuple {
    mask: FlowKey,
    by_key: HashMap<u64, Vec<FlowId>>,
    len: usize,
}

/// Rules of one table grouped by mask.
#[derive(Default)]
pub struct TupleIndex {
    tuples: Vec<Tuple>,
    by_mask: HashMap<u64, Vec<usize>>,
}

impl TupleIndex {
    fn tuple_of(&self, mask: &FlowKey) -> Option<usize> {
        let h = fold(mask.words(), &[u64::MAX; KEY_WORDS]);
        self.by_mask
            .get(&h)?
            .iter()
            .copied()
            .find(|&t| self.tuples[t].mask.words() == mask.words())
    }

    pub fn insert(&mut self, id: FlowId, m: &FlowMatch) {
        let t = match self.tuple_of(&m.mask) {
            Some(t) => t,
            None => {
                let h = fold(m.mask.words(), &[u64::MAX; KEY_WORDS]);
                self.tuples.push(Tuple {
                    mask: m.mask,
                    by_key: HashMap::new(),
                    len: 0,
                });
                self.by_mask
                    .entry(h)
                    .or_default()
                    .push(self.tuples.len() - 1);
                self.tuples.len() - 1
            }
        };
        let tuple = &mut self.tuples[t];
        tuple
            .by_key
            .entry(fold(m.key.words(), tuple.mask.words()))
            .or_default()
            .push(id);
        tuple.len += 1;
    }

    pub fn remove(&mut self, id: FlowId, m: &FlowMatch) {
        let Some(t) = self.tuple_of(&m.mask) else {
            return;
        };
        let tuple = &mut self.tuples[t];
        let h = fold(m.key.words(), tuple.mask.words());
        if let Some(ids) = tuple.by_key.get_mut(&h) {
            if let Some(i) = ids.iter().position(|x| *x == id) {
                ids.swap_remove(i);
                tuple.len -= 1;
            }
            if ids.is_empty() {
                tuple.by_key.remove(&h);
            }
        }
    }

    /// Every rule that may overlap `m` (a superset: hash collisions and same-tuple rules are
    /// for the caller to test with [`crate::cube::overlaps`]).
    pub fn candidates(&self, m: &FlowMatch, out: &mut Vec<FlowId>) {
        let (qm, qk) = (m.mask.words(), m.key.words());
        for tuple in &self.tuples {
            if tuple.len == 0 {
                continue;
            }
            let tm = tuple.mask.words();
            let fixed = (0..KEY_WORDS).all(|i| tm[i] & !qm[i] == 0);
            if fixed {
                if let Some(ids) = tuple.by_key.get(&fold(qk, tm)) {
                    out.extend_from_slice(ids);
                }
            } else {
                for ids in tuple.by_key.values() {
                    out.extend_from_slice(ids);
                }
            }
        }
    }
}
