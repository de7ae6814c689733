//! The invariant checked exactly, for tests.

use super::*;

impl Planner {
    /// Verifies the invariant exactly (with unbounded reach sets): for every deciding entry,
    /// every packet of it that a higher rule takes in software meets an earlier entry in
    /// hardware. Returns the first violation. For tests: it walks every pair of rules.
    pub fn check(&self) -> Result<(), String> {
        for r in self.rules.values() {
            let Some(e) = &r.entry else { continue };
            if e.action == EntryAction::Punt {
                continue;
            }
            let at = self.position(r.id, e);
            // Packets of r whose software rule is a higher one, minus those an earlier entry
            // catches, must be none.
            let mut above: Vec<&Rule> = self
                .rules()
                .filter(|o| o.id != r.id && o.table == r.table && o.priority >= r.priority)
                .collect();
            above.sort_by_key(|o| (Reverse(o.priority), o.seq));
            let mut earlier: Vec<FlowMatch> = self
                .rules
                .values()
                .filter(|o| o.table == r.table && o.id != r.id)
                .filter_map(|o| o.entry.as_ref().map(|oe| (o, oe)))
                .filter(|(o, oe)| self.position(o.id, oe) < at)
                .map(|(_, oe)| oe.match_)
                .collect();
            earlier.sort_by_key(|m| m.mask.words().iter().map(|w| w.count_ones()).sum::<u32>());
            for o in above {
                if !overlaps(&o.match_, &r.match_) {
                    continue;
                }
                let mut stolen = CubeSet::new(&intersect(&o.match_, &r.match_), usize::MAX);
                for m in &earlier {
                    stolen.subtract(m);
                }
                if !stolen.is_empty() {
                    return Err(format!(
                        "rule {:?} (priority {}) decides in hardware table {} but rule {:?} (priority {}) above it is not caught before it",
                        r.id, r.priority, e.table, o.id, o.priority
                    ));
                }
            }
        }
        for (t, state) in self.hw.iter().enumerate() {
            if state.used > self.profile.tables[t].units {
                return Err(format!("hardware table {t} over its capacity"));
            }
        }
        Ok(())
    }
}
