//! Keeping the invariant when the rules above an entry change: bring the missing parent
//! down the mode's way, or take the entry out, and look at the entries below it in turn.

use super::*;

impl Planner {
    /// Entries whose parents changed (a new rule above them, one taken out of hardware, one
    /// gone that shadowed another): each keeps deciding only if every direct parent has an
    /// earlier entry. A missing parent is brought down the mode's way (Algorithm 1 and
    /// dependent-set place it, cover-set covers it); failing that, the entry is taken out,
    /// and the entries below that needed it are looked at in turn. A worklist, not
    /// recursion: a chain of thousands of entries must not exhaust the stack.
    pub(super) fn repair(&mut self, mut work: Vec<FlowId>) {
        // Placing parents adds entries and evicting takes them out; past this many rounds
        // only eviction remains, which ends.
        let mut placing_rounds = 4 * self.rules.len() + 64;
        while let Some(id) = work.pop() {
            if !self
                .rules
                .get(&id)
                .and_then(|r| r.entry.as_ref())
                .is_some_and(Entry::decides)
            {
                continue;
            }
            if self.parents_present(id, None) {
                continue;
            }
            placing_rounds = placing_rounds.saturating_sub(1);
            for p in self.parents(id) {
                if self.rules[&p].entry.is_some() || placing_rounds == 0 {
                    continue;
                }
                match self.mode {
                    Mode::Algorithm1 | Mode::DependentSet => {
                        self.place(p);
                    }
                    Mode::CoverSet => {
                        if let Some(mut e) = self.punt_entry(p, true) {
                            e.cover = true;
                            self.add_entry(p, e);
                        }
                    }
                }
            }
            if self.parents_present(id, None) {
                continue;
            }
            let children = self.children_in_hw(id);
            let parents = self.parents(id);
            self.unplace(id);
            self.stats.evictions += 1;
            if self.holdable(id) {
                self.wait(id);
            }
            work.extend(children);
            self.drop_unneeded_covers(&parents);
        }
    }

    /// Takes a deciding entry out of hardware (for a hotter or higher rule), and repairs the
    /// entries below that needed it.
    pub(super) fn evict(&mut self, id: FlowId) {
        let children = self.children_in_hw(id);
        let parents = self.parents(id);
        self.unplace(id);
        self.stats.evictions += 1;
        if self.holdable(id) {
            self.wait(id);
        }
        self.repair(children);
        self.drop_unneeded_covers(&parents);
    }

    /// Takes out the covers among `parents` that no deciding entry needs any more.
    pub(super) fn drop_unneeded_covers(&mut self, parents: &[FlowId]) {
        for &p in parents {
            let cover = self
                .rules
                .get(&p)
                .and_then(|r| r.entry.as_ref())
                .is_some_and(|e| e.cover && !e.decides());
            if cover && self.children_in_hw(p).is_empty() {
                self.unplace(p);
            }
        }
    }
}
