//! Putting rules into hardware and taking them out: choosing a table, a deciding or a
//! punting entry, the mode's plan (a rule alone, with its ancestors, with covers), and the
//! bookkeeping of each hardware table.

use super::*;

impl Planner {
    /// Places a rule that just arrived (or changed), as the mode and policy say.
    pub(super) fn place_new(&mut self, id: FlowId) -> bool {
        if self.place(id) {
            return true;
        }
        if self.policy == Policy::Priority {
            return self.displace_for(id);
        }
        false
    }

    /// Tries to put rule `id` into hardware as the mode does it; true when it decides there
    /// (or, for a rule that cannot decide, punts there as Algorithm 1's copy-to-CPU or as a
    /// device that keeps every rule it has room for does).
    pub(super) fn place(&mut self, id: FlowId) -> bool {
        let Some(rule) = self.rules.get(&id) else {
            return false;
        };
        match &rule.entry {
            Some(e) if e.decides() => return true,
            Some(e) if !e.cover => return false,
            // A cover may become the rule's own deciding entry.
            Some(e) => {
                let old = e.clone();
                if !self.decidable(id) {
                    return false;
                }
                self.unplace(id);
                if self.place_fresh(id) {
                    return true;
                }
                self.add_entry(id, old);
                return false;
            }
            None => {}
        }
        if self.place_fresh(id) {
            return true;
        }
        let rule = &self.rules[&id];
        let punts = match self.mode {
            Mode::Algorithm1 => !self.decidable(id),
            _ => false,
        } || self.keeps_all(rule.table);
        if punts {
            if let Some(entry) = self.punt_entry(id, false) {
                self.commit(vec![(id, entry)]);
            }
        }
        false
    }

    /// Places a rule with no entry yet as a deciding entry, the mode's way.
    pub(super) fn place_fresh(&mut self, id: FlowId) -> bool {
        if !self.decidable(id) || !self.room_for(id) {
            return false;
        }
        match self.mode {
            Mode::Algorithm1 => match self.decide_entry(id, true) {
                Some(entry) => self.commit(vec![(id, entry)]),
                None => false,
            },
            Mode::DependentSet => {
                let Some(closure) = self.ancestors(id, self.free_entries(id)) else {
                    return false;
                };
                // Ancestors must sit before the rule: with any to place, everything goes to
                // the TCAM, in priority order.
                let alone = closure.iter().all(|a| self.rules[a].entry.is_some());
                let mut plan = Vec::with_capacity(closure.len() + 1);
                for a in closure.into_iter().chain(std::iter::once(id)) {
                    if self.rules[&a].entry.is_some() {
                        continue;
                    }
                    // An ancestor with a parent of its own priority cannot decide (neither of
                    // two equal rules comes first): it goes down as a punt.
                    let tied = a != id && {
                        let prio = self.rules[&a].priority;
                        self.parents(a)
                            .iter()
                            .any(|p| self.rules[p].priority == prio)
                    };
                    let entry = if self.decidable(a) && !tied {
                        self.decide_entry_with(a, alone, &plan)
                    } else {
                        None
                    };
                    let entry = match entry {
                        Some(e) => Some(e),
                        None if a != id => self.punt_entry_with(a, false, &plan),
                        None => None,
                    };
                    match entry {
                        Some(e) => plan.push((a, e)),
                        None => return false,
                    }
                }
                self.commit(plan)
            }
            Mode::CoverSet => {
                let missing: Vec<FlowId> = self
                    .parents(id)
                    .into_iter()
                    .filter(|p| self.rules[p].entry.is_none())
                    .collect();
                let Some(entry) = self.decide_entry(id, missing.is_empty()) else {
                    return false;
                };
                let mut plan = vec![(id, entry)];
                for p in missing {
                    match self.punt_entry_with(p, true, &plan) {
                        Some(mut e) => {
                            e.cover = true;
                            plan.push((p, e));
                        }
                        None => return false,
                    }
                }
                self.commit(plan)
            }
        }
    }

    /// How many more entries the rule's tables could take at most (by their cheapest
    /// structure).
    pub(super) fn free_entries(&self, id: FlowId) -> usize {
        let table = self.rules[&id].table;
        self.profile
            .tables_for(table)
            .map(|t| {
                let hw = &self.profile.tables[t];
                let cheapest = hw
                    .structures
                    .iter()
                    .map(|s| s.cost)
                    .min()
                    .unwrap_or(1)
                    .max(1);
                ((hw.units - self.hw[t].used) / cheapest) as usize
            })
            .sum()
    }

    /// Whether some table that could hold the rule has room for it now (a quick refusal for
    /// the common case of a full table).
    pub(super) fn room_for(&self, id: FlowId) -> bool {
        let r = &self.rules[&id];
        self.profile.tables_for(r.table).any(|t| {
            let hw = &self.profile.tables[t];
            hw.structure_for_fields(r.fields, &r.match_)
                .is_some_and(|s| self.hw[t].used + hw.structures[s].cost <= hw.units)
        })
    }

    /// Whether the tables of OpenFlow table `table` keep every rule they have room for (a
    /// device whose full table refuses or ignores, rather than spilling to software).
    pub(super) fn keeps_all(&self, table: u8) -> bool {
        self.profile
            .tables_for(table)
            .any(|t| self.profile.tables[t].when_full != Fallback::Software)
    }

    /// Whether the rule's actions can run in hardware (a decide entry, not a punt).
    pub(super) fn decidable(&self, id: FlowId) -> bool {
        let r = &self.rules[&id];
        !matches!(r.program, HwProgram::Software | HwProgram::ToCpu) && self.goto_ok(&r.program)
    }

    /// Whether any of the rule's tables could hold it at all (it waits for room).
    pub(super) fn holdable(&self, id: FlowId) -> bool {
        let r = &self.rules[&id];
        self.profile.tables_for(r.table).any(|t| {
            self.profile.tables[t]
                .structure_for_fields(r.fields, &r.match_)
                .is_some()
        })
    }

    pub(super) fn full_ignores(&self, id: FlowId) -> bool {
        let r = &self.rules[&id];
        self.profile
            .tables_for(r.table)
            .all(|t| self.profile.tables[t].when_full == Fallback::Ignore)
    }

    pub(super) fn decide_entry(&self, id: FlowId, prefer_exact: bool) -> Option<Entry> {
        self.decide_entry_with(id, prefer_exact, &[])
    }

    /// A deciding entry for the rule in the best table with room, given entries `planned`
    /// to be added with it: an exact table when one fits (large and cheap), else the first
    /// TCAM. A table is skipped when a lower-priority entry of an earlier table overlaps the
    /// rule (that entry would catch its packets first).
    pub(super) fn decide_entry_with(
        &self,
        id: FlowId,
        prefer_exact: bool,
        planned: &[(FlowId, Entry)],
    ) -> Option<Entry> {
        let r = &self.rules[&id];
        let kind = r.program.kind()?;
        let of = |kind: TableKind| {
            self.profile
                .tables_for(r.table)
                .filter(move |t| self.profile.tables[*t].kind == kind)
        };
        let exact = of(TableKind::Exact).filter(|_| prefer_exact);
        for t in exact.chain(of(TableKind::Tcam)) {
            let hw = &self.profile.tables[t];
            if !hw.supports(kind) {
                continue;
            }
            let Some(s) = hw.structure_for_fields(r.fields, &r.match_) else {
                continue;
            };
            if !self.has_room(t, hw.structures[s].cost, planned) {
                continue;
            }
            if self.earlier_lower_overlap(id, t) {
                continue;
            }
            if hw.kind == TableKind::Exact && self.exact_clash(id, t, &r.match_) {
                continue;
            }
            return Some(Entry {
                table: t,
                structure: s,
                match_: r.match_,
                action: EntryAction::Decide(r.program.clone()),
                cover: false,
            });
        }
        None
    }

    /// A punting entry for the rule: its own match, or (a cover) its match widened to what
    /// a table can match, in the first table with room that can send to the CPU.
    pub(super) fn punt_entry(&self, id: FlowId, widen: bool) -> Option<Entry> {
        self.punt_entry_with(id, widen, &[])
    }

    pub(super) fn punt_entry_with(
        &self,
        id: FlowId,
        widen: bool,
        planned: &[(FlowId, Entry)],
    ) -> Option<Entry> {
        let r = &self.rules[&id];
        for t in self.profile.tables_for(r.table) {
            let hw = &self.profile.tables[t];
            if !hw.supports(HwActionKind::Controller) {
                continue;
            }
            let candidates = hw.structures.iter().enumerate().filter_map(|(s, st)| {
                if st.fits(&r.match_) {
                    Some((s, r.match_))
                } else if widen {
                    let w = widened(&r.match_, st);
                    st.fits(&w).then_some((s, w))
                } else {
                    None
                }
            });
            for (s, m) in candidates {
                if !self.has_room(t, hw.structures[s].cost, planned) {
                    continue;
                }
                if hw.kind == TableKind::Exact && self.exact_clash(id, t, &m) {
                    continue;
                }
                return Some(Entry {
                    table: t,
                    structure: s,
                    match_: m,
                    action: EntryAction::Punt,
                    cover: false,
                });
            }
        }
        None
    }

    pub(super) fn has_room(&self, t: usize, cost: u64, planned: &[(FlowId, Entry)]) -> bool {
        let hw = &self.profile.tables[t];
        let pending: u64 = planned
            .iter()
            .filter(|(_, e)| e.table == t)
            .map(|(_, e)| hw.structures[e.structure].cost)
            .sum();
        self.hw[t].used + pending + cost <= hw.units
    }

    /// Whether an exact table already holds an entry with this very key (an exact table
    /// keeps one entry per key).
    pub(super) fn exact_clash(&self, id: FlowId, t: usize, m: &FlowMatch) -> bool {
        let r = &self.rules[&id];
        self.overlapping(r.table, m).into_iter().any(|o| {
            o != id
                && self.rules[&o]
                    .entry
                    .as_ref()
                    .is_some_and(|e| e.table == t && e.match_.mask == m.mask)
        })
    }

    /// Whether a lower-priority entry in a table before `t` overlaps rule `id`.
    pub(super) fn earlier_lower_overlap(&self, id: FlowId, t: usize) -> bool {
        let r = &self.rules[&id];
        let first = self.profile.tables_for(r.table).next().unwrap_or(t);
        if first == t {
            return false;
        }
        self.overlapping(r.table, &r.match_).into_iter().any(|o| {
            let other = &self.rules[&o];
            o != id
                && other.priority <= r.priority
                && other.entry.as_ref().is_some_and(|e| e.table < t)
        })
    }

    /// Adds the planned entries if the invariant holds for each deciding one; returns false
    /// (and adds nothing) otherwise.
    pub(super) fn commit(&mut self, plan: Vec<(FlowId, Entry)>) -> bool {
        if plan.is_empty() {
            return false;
        }
        for (id, entry) in &plan {
            if matches!(entry.action, EntryAction::Decide(_))
                && !self.parents_present(*id, Some(&plan))
            {
                return false;
            }
        }
        for (id, entry) in plan {
            self.add_entry(id, entry);
        }
        true
    }

    pub(super) fn add_entry(&mut self, id: FlowId, entry: Entry) {
        let Some(rule) = self.rules.get(&id) else {
            return;
        };
        let key = (Reverse(rule.priority), rule.seq, id);
        let hw = &self.profile.tables[entry.table];
        let state = &mut self.hw[entry.table];
        state.used += hw.structures[entry.structure].cost;
        state.order.insert(key);
        // An ordered TCAM shifts every entry below the new one (seed 003 section 3.3).
        let moved = match hw.kind {
            TableKind::Tcam => state.order.range(key..).count() as u64 - 1,
            TableKind::Exact => 0,
        };
        self.stats.hw_writes += 1 + moved;
        self.stats.entry_updates += 1;
        if entry.decides() || !entry.cover {
            self.unwait(id);
        }
        if let Some(rule) = self.rules.get_mut(&id) {
            rule.entry = Some(entry);
            rule.ignored = false;
        }
        self.changed = true;
    }

    /// Takes the rule's entry out of hardware (the rule itself stays).
    pub(super) fn unplace(&mut self, id: FlowId) {
        let Some(rule) = self.rules.get_mut(&id) else {
            return;
        };
        let Some(entry) = rule.entry.take() else {
            return;
        };
        let key = (Reverse(rule.priority), rule.seq, id);
        let state = &mut self.hw[entry.table];
        state.used -= self.profile.tables[entry.table].structures[entry.structure].cost;
        state.order.remove(&key);
        self.stats.hw_writes += 1;
        self.stats.entry_updates += 1;
        self.changed = true;
    }
}

/// `m` with every field a structure cannot match (or cannot mask as `m` does) wildcarded:
/// a superset of `m`'s packets that the structure may hold.
fn widened(m: &FlowMatch, st: &crate::profile::Structure) -> FlowMatch {
    let mut out = *m;
    for f in m.fields().iter() {
        let exact = f.get(&m.mask) == f.full_mask();
        if !st.fields.contains(f) || (!exact && !st.masked.contains(f)) {
            let zero = dataplane::key::FieldValue(0);
            f.set_in(&mut out.mask, &zero);
            f.set_in(&mut out.key, &zero);
        }
    }
    out
}
