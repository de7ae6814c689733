//! The promotion policies: which waiting rules get room, in which order, and when a rule
//! already in hardware gives its place up.

use super::*;

impl Planner {
    pub(super) fn wait(&mut self, id: FlowId) {
        if let Some(r) = self.rules.get(&id) {
            self.waiting.insert((r.seq, id));
            self.waiting_by_priority
                .insert((Reverse(r.priority), r.seq, id));
        }
    }

    pub(super) fn unwait(&mut self, id: FlowId) {
        if let Some(r) = self.rules.get(&id) {
            self.waiting.remove(&(r.seq, id));
            self.waiting_by_priority
                .remove(&(Reverse(r.priority), r.seq, id));
        }
    }

    /// Rules waiting for room, in the policy's order (at most `n`).
    pub(super) fn waiting_in_order(&self, n: usize) -> Vec<FlowId> {
        match self.policy {
            Policy::Priority => self
                .waiting_by_priority
                .iter()
                .take(n)
                .map(|(_, _, id)| *id)
                .collect(),
            _ => self.waiting.iter().take(n).map(|(_, id)| *id).collect(),
        }
    }

    /// Fills free room from the waiting rules, in the policy's order.
    pub(super) fn promote(&mut self) {
        if !self.any_room() {
            return;
        }
        for id in self.waiting_in_order(PROMOTE_TRIES) {
            if !self.any_room() {
                break;
            }
            if self.place(id) {
                self.stats.promotions += 1;
            }
        }
    }

    pub(super) fn any_room(&self) -> bool {
        self.profile
            .tables
            .iter()
            .zip(&self.hw)
            .any(|(t, s)| t.structures.iter().any(|st| s.used + st.cost <= t.units))
    }

    /// Priority policy: a rule that found no room takes the place of the lowest-priority
    /// deciding rules below it, if that makes room.
    pub(super) fn displace_for(&mut self, id: FlowId) -> bool {
        if !self.holdable(id) || !self.decidable(id) {
            return false;
        }
        let (prio, table) = (self.rules[&id].priority, self.rules[&id].table);
        let mut victims: Vec<(u16, u64, FlowId)> = self
            .rules
            .values()
            .filter(|r| {
                r.priority < prio
                    && r.table == table
                    && matches!(
                        r.entry,
                        Some(Entry {
                            action: EntryAction::Decide(_),
                            ..
                        })
                    )
            })
            .map(|r| (r.priority, r.seq, r.id))
            .collect();
        victims.sort_by_key(|(p, s, _)| (*p, Reverse(*s)));
        for (_, _, v) in victims.into_iter().take(PROMOTE_TRIES) {
            self.evict(v);
            self.stats.demotions += 1;
            if self.place(id) {
                return true;
            }
        }
        false
    }

    /// Traffic policy: promote the hottest waiting rules while there is room, then swap the
    /// coldest hardware rules for hotter waiting ones (by `hysteresis`), within the budget.
    pub(super) fn rebalance(&mut self, params: TrafficParams) {
        let mut hot: Vec<(f64, FlowId)> = self
            .waiting
            .iter()
            .map(|(_, id)| (self.rules[id].rate, *id))
            .filter(|(rate, _)| *rate >= params.min_pps)
            .collect();
        hot.sort_by(|a, b| b.0.total_cmp(&a.0));
        // Deciding entries, coldest first: the ones to give up for hotter rules.
        let mut cold: Vec<(f64, FlowId)> = self
            .rules()
            .filter(|r| r.entry.as_ref().is_some_and(Entry::decides))
            .map(|r| (r.rate, r.id))
            .collect();
        cold.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut cold = cold.into_iter().peekable();
        for (rate, id) in hot.into_iter().take(PROMOTE_TRIES) {
            if self.budget == 0 {
                break;
            }
            let before = self.stats.entry_updates;
            if self.place(id) {
                self.stats.promotions += 1;
            } else {
                let table = self.rules[&id].table;
                let mut tried = 0;
                while let Some(&(cold_rate, c)) = cold.peek() {
                    if rate < cold_rate * params.hysteresis || tried == 8 || self.budget == 0 {
                        break;
                    }
                    cold.next();
                    let leaf = self.rules.get(&c).is_some_and(|r| {
                        r.table == table && r.entry.as_ref().is_some_and(Entry::decides)
                    }) && self.children_in_hw(c).is_empty();
                    if !leaf {
                        continue;
                    }
                    tried += 1;
                    self.evict(c);
                    self.stats.demotions += 1;
                    if self.place(id) {
                        self.stats.promotions += 1;
                        break;
                    }
                }
            }
            let spent = (self.stats.entry_updates - before) as u32;
            self.budget = self.budget.saturating_sub(spent.max(1));
        }
    }
}
