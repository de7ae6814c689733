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

/// The rules under one key of a tuple: almost always one.
enum Ids {
    One(FlowId),
    Many(Vec<FlowId>),
}

impl Ids {
    fn as_slice(&self) -> &[FlowId] {
        match self {
            Ids::One(id) => std::slice::from_ref(id),
            Ids::Many(ids) => ids,
        }
    }
}

struct Tuple {
    mask: FlowKey,
    by_key: HashMap<u64, Ids>,
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
        let h = fold(m.key.words(), tuple.mask.words());
        match tuple.by_key.get_mut(&h) {
            None => {
                tuple.by_key.insert(h, Ids::One(id));
            }
            Some(ids) => {
                let mut all = ids.as_slice().to_vec();
                all.push(id);
                *ids = Ids::Many(all);
            }
        }
        tuple.len += 1;
    }

    pub fn remove(&mut self, id: FlowId, m: &FlowMatch) {
        let Some(t) = self.tuple_of(&m.mask) else {
            return;
        };
        let tuple = &mut self.tuples[t];
        let h = fold(m.key.words(), tuple.mask.words());
        let Some(ids) = tuple.by_key.get_mut(&h) else {
            return;
        };
        let before = ids.as_slice().len();
        let rest: Vec<FlowId> = ids
            .as_slice()
            .iter()
            .copied()
            .filter(|x| *x != id)
            .collect();
        tuple.len -= before - rest.len();
        match rest.as_slice() {
            [] => {
                tuple.by_key.remove(&h);
            }
            [one] => *ids = Ids::One(*one),
            _ => *ids = Ids::Many(rest),
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
                    out.extend_from_slice(ids.as_slice());
                }
            } else {
                for ids in tuple.by_key.values() {
                    out.extend_from_slice(ids.as_slice());
                }
            }
        }
    }
}
