//! Dependencies: overlapping rules (through the tuple index), a rule's direct parents (a
//! bounded subtraction of cubes, cached until the rule set changes), ancestors, children,
//! and where entries sit in the lookup order.

use super::*;

impl Planner {
    /// Rules of the same table that may overlap `m`.
    pub(super) fn overlapping(&self, table: u8, m: &FlowMatch) -> Vec<FlowId> {
        let mut ids = Vec::new();
        if let Some(ix) = self.index.get(&table) {
            ix.candidates(m, &mut ids);
        }
        ids.retain(|o| self.rules.get(o).is_some_and(|r| overlaps(&r.match_, m)));
        ids
    }

    /// The rule's direct parents: higher-priority (or equal-priority) overlapping rules that
    /// some of its packets reach first.
    pub fn parents(&self, id: FlowId) -> Vec<FlowId> {
        {
            let mut cache = self.parents_cache.borrow_mut();
            if cache.0 != self.rules_changed {
                cache.1.clear();
                cache.0 = self.rules_changed;
            } else if let Some(p) = cache.1.get(&id) {
                return p.clone();
            }
        }
        let parents = self.find_parents(id);
        self.parents_cache
            .borrow_mut()
            .1
            .insert(id, parents.clone());
        parents
    }

    pub(super) fn find_parents(&self, id: FlowId) -> Vec<FlowId> {
        let r = &self.rules[&id];
        let mut above: Vec<&Rule> = self
            .overlapping(r.table, &r.match_)
            .into_iter()
            .filter(|o| *o != id)
            .map(|o| &*self.rules[&o])
            .filter(|o| o.priority >= r.priority)
            .collect();
        above.sort_by_key(|o| (Reverse(o.priority), o.seq));
        let mut reach = CubeSet::new(&r.match_, REACH_LIMIT);
        let mut parents = Vec::new();
        for o in above {
            if reach.is_empty() {
                break;
            }
            if reach.overlaps(&o.match_) {
                parents.push(o.id);
                reach.subtract(&o.match_);
            }
        }
        parents
    }

    /// Every ancestor (parents, their parents, ...) not yet in hardware, highest priority
    /// first; `None` when one cannot go to hardware at all, or when there are more than
    /// `room` (they would not fit).
    pub(super) fn ancestors(&self, id: FlowId, room: usize) -> Option<Vec<FlowId>> {
        let mut seen: BTreeSet<FlowId> = BTreeSet::new();
        let mut missing = 0;
        let mut stack = self.parents(id);
        while let Some(a) = stack.pop() {
            if !seen.insert(a) {
                continue;
            }
            if self.rules[&a].entry.is_some() {
                continue;
            }
            missing += 1;
            if missing > room || !self.holdable(a) {
                return None;
            }
            if self.decidable(a) {
                stack.extend(self.parents(a));
            }
        }
        let mut out: Vec<FlowId> = seen.into_iter().collect();
        out.sort_by_key(|a| (Reverse(self.rules[a].priority), self.rules[a].seq));
        Some(out)
    }

    /// Where an entry sits in the lookup order (smaller is earlier).
    pub(super) fn position(&self, id: FlowId, entry: &Entry) -> (usize, Reverse<u16>, u64) {
        let r = &self.rules[&id];
        (entry.table, Reverse(r.priority), r.seq)
    }

    /// Whether every direct parent has an entry before the rule's (planned) entry.
    pub(super) fn parents_present(&self, id: FlowId, plan: Option<&[(FlowId, Entry)]>) -> bool {
        let planned =
            |x: FlowId| plan.and_then(|p| p.iter().find(|(i, _)| *i == x).map(|(_, e)| e));
        let mine = planned(id).or(self.rules[&id].entry.as_ref());
        let Some(mine) = mine else {
            return false;
        };
        let at = self.position(id, mine);
        self.parents(id).into_iter().all(|p| {
            planned(p)
                .or(self.rules[&p].entry.as_ref())
                .is_some_and(|e| self.position(p, e) < at)
        })
    }

    /// Deciding entries below rule `id` that have it as a direct parent.
    pub(super) fn children_in_hw(&self, id: FlowId) -> Vec<FlowId> {
        let r = &self.rules[&id];
        let mut out: Vec<FlowId> = self
            .overlapping(r.table, &r.match_)
            .into_iter()
            .filter(|o| {
                *o != id && {
                    let c = &self.rules[o];
                    c.priority <= r.priority
                        && matches!(
                            c.entry,
                            Some(Entry {
                                action: EntryAction::Decide(_),
                                ..
                            })
                        )
                }
            })
            .filter(|o| self.is_parent_of(id, *o))
            .collect();
        out.sort_by_key(|o| (Reverse(self.rules[o].priority), self.rules[o].seq));
        out
    }

    /// Whether `p` is a direct parent of `c`: some packet of `c` reaches `p` before any rule
    /// above `p`. A single higher rule covering their overlap rules it out; anything less
    /// counts as a parent (more dependencies, never fewer).
    pub(super) fn is_parent_of(&self, p: FlowId, c: FlowId) -> bool {
        let (pr, cr) = (&self.rules[&p], &self.rules[&c]);
        let both = intersect(&pr.match_, &cr.match_);
        !self.overlapping(pr.table, &both).into_iter().any(|o| {
            let or = &self.rules[&o];
            o != p && o != c && or.priority > pr.priority && covers(&or.match_, &both)
        })
    }

    /// Hardware entries below rule `id` that overlap it.
    pub(super) fn lower_entries_overlapping(&self, id: FlowId) -> Vec<FlowId> {
        let r = &self.rules[&id];
        self.overlapping(r.table, &r.match_)
            .into_iter()
            .filter(|o| {
                *o != id && self.rules[o].priority <= r.priority && self.rules[o].entry.is_some()
            })
            .collect()
    }
}
