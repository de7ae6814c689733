//! Placement: which rules live in which hardware table, so that a packet gets the same
//! treatment whether hardware or software decides it. Hardware is a cache of the software
//! pipeline, which always holds every rule.
//!
//! # The invariant
//!
//! A hardware entry either *decides* (forwards, drops, or continues at a later table in
//! hardware) or *punts* (sends the packet to software, seed 003's copy-to-CPU). Entries are
//! ordered by position: hardware table in lookup order, then priority, highest first. A
//! packet is decided by the first entry it matches, or punted when it matches none. Then:
//!
//! > A rule's entry decides only if every *direct parent* of the rule (a higher-priority
//! > rule of its table that some packet of the rule reaches before any other higher rule)
//! > has an entry at an earlier position, deciding or punting.
//!
//! So no packet is ever caught by a hardware entry that a software rule should have taken:
//! if software picks rule `s` for packet `p` and hardware picked `e`'s entry, then `s` is a
//! direct parent of `e` (nothing above `s` matches `p`), so `s` has an earlier entry that
//! `p` matches, and hardware would have picked that one. Rules of equal priority that overlap
//! are each other's parents, so neither decides (OpenFlow leaves their order undefined; only
//! software's choice counts). A punting entry needs nothing: software does the right thing.
//! [`Planner::check`] verifies the invariant; the property test of `tests/equivalence.rs`
//! checks its consequence packet by packet.
//!
//! # How the invariant is kept (modes)
//!
//! - [`Mode::Algorithm1`], seed 003 Algorithm 1: a rule whose match and actions hardware
//!   supports goes down when its parents are there; a supported match with unsupported
//!   actions goes down as copy-to-CPU; a rule that stays in software evicts the hardware
//!   rules it is a parent of (`check_correlation`), and their dependents with them.
//! - [`Mode::DependentSet`], CacheFlow: a rule goes down with all its ancestors.
//! - [`Mode::CoverSet`], CacheFlow: a rule goes down alone; each parent not in hardware gets
//!   a *cover*, an entry of the parent's match (widened to what the table can match) that
//!   punts. A cover holds no dependencies of its own.
//!
//! # Which rules get the room (policies)
//!
//! [`Policy::Fcfs`] is HP's rule promotion engine (seed 004 section 5.3): a rule goes down
//! when it arrives if there is room, and when room frees up the rule waiting longest goes
//! first, blind to priority and traffic. [`Policy::Priority`] prefers higher priorities and
//! displaces a lower-priority rule for a higher one. [`Policy::Traffic`] moves hot rules up
//! and cold rules down from measured packet rates, with hysteresis and a cap on hardware
//! updates per second.
//!
//! # Costs
//!
//! Direct parents come from the tuple index (`index.rs`): an exact rule among exact rules
//! costs a hash probe per mask. Every hardware write is counted: an entry inserted into an
//! ordered TCAM moves every lower-priority entry of that TCAM (seed 003 section 3.3).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use dataplane::counters::FlowCounters;
use dataplane::ir::Instruction;
use dataplane::key::{FieldSet, FlowMatch};
use dataplane::model::{FlowId, Refusal};

use crate::cube::{covers, intersect, overlaps, CubeSet};
use crate::index::TupleIndex;
use crate::profile::{Fallback, HwActionKind, Profile, TableKind};
use crate::program::HwProgram;

/// How many cubes a rule's reach may split into before parent finding stops subtracting
/// (and takes every further overlapping rule as a parent).
const REACH_LIMIT: usize = 256;
/// Candidates tried per promotion round (bounds the work one flow-mod can cause).
const PROMOTE_TRIES: usize = 64;

/// How the invariant is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Algorithm1,
    DependentSet,
    CoverSet,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "algorithm1" => Some(Mode::Algorithm1),
            "dependent-set" => Some(Mode::DependentSet),
            "cover-set" => Some(Mode::CoverSet),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::Algorithm1 => "algorithm1",
            Mode::DependentSet => "dependent-set",
            Mode::CoverSet => "cover-set",
        }
    }
}

/// Which rules get hardware room.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Policy {
    Fcfs,
    Priority,
    Traffic(TrafficParams),
}

impl Policy {
    pub fn parse(s: &str) -> Option<Policy> {
        match s {
            "fcfs" => Some(Policy::Fcfs),
            "priority" => Some(Policy::Priority),
            "traffic" => Some(Policy::Traffic(TrafficParams::default())),
            _ => None,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Policy::Fcfs => "fcfs",
            Policy::Priority => "priority",
            Policy::Traffic(_) => "traffic",
        }
    }
}

/// The `traffic` policy's knobs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrafficParams {
    /// A software rule replaces a hardware one only when its rate is this many times higher.
    pub hysteresis: f64,
    /// Rates below this (packets/s) are cold: never promoted.
    pub min_pps: f64,
    /// Hardware entries written per second at most by promotion and demotion.
    pub max_updates_per_sec: u32,
}

impl Default for TrafficParams {
    fn default() -> Self {
        TrafficParams {
            hysteresis: 2.0,
            min_pps: 1.0,
            max_updates_per_sec: 200,
        }
    }
}

/// What a hardware entry does with the packets it matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryAction {
    /// Forward, drop or continue at a later hardware table (the rule's program).
    Decide(HwProgram),
    /// Send to software.
    Punt,
}

/// A rule's hardware entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Index of the profile's table.
    pub table: usize,
    pub structure: usize,
    /// The entry's match: the rule's, or wider for a cover.
    pub match_: FlowMatch,
    pub action: EntryAction,
    /// A punting entry installed only to cover the rule for entries below it (cover-set);
    /// removed when no deciding entry needs it any more.
    pub cover: bool,
}

impl Entry {
    pub fn decides(&self) -> bool {
        matches!(self.action, EntryAction::Decide(_))
    }
}

/// Packets and bytes a rule's hardware entry decided (the hardware's own counters).
#[derive(Debug, Default)]
pub struct HwCounters {
    pub packets: AtomicU64,
    pub bytes: AtomicU64,
}

/// What the planner knows of a flow entry.
pub struct Rule {
    pub id: FlowId,
    pub table: u8,
    pub priority: u16,
    pub match_: FlowMatch,
    /// The fields the match names (computed once: structures are chosen by them).
    pub fields: FieldSet,
    pub program: HwProgram,
    /// Insertion order (fcfs).
    pub seq: u64,
    /// The merged counters the switch core reports.
    pub counters: Arc<FlowCounters>,
    /// What hardware counted of them.
    pub hw: Arc<HwCounters>,
    pub entry: Option<Entry>,
    /// The table's fallback put the rule in no table (Quanta when full).
    pub ignored: bool,
    /// Packets at the last traffic tick, and the rate measured then.
    last_packets: u64,
    rate: f64,
}

impl Rule {
    /// Where the rule lives, for operators: `hw` (decides in hardware), `hw:cpu` (its
    /// hardware entry sends to software), `sw`.
    pub fn location(&self) -> &'static str {
        match &self.entry {
            Some(Entry {
                action: EntryAction::Decide(_),
                ..
            }) => "hw",
            Some(_) => "hw:cpu",
            None => "sw",
        }
    }
}

/// Counts of what placement did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlacementStats {
    /// Entries added, removed or changed (logical updates).
    pub entry_updates: u64,
    /// Hardware writes, TCAM moves included.
    pub hw_writes: u64,
    /// Entries removed to keep the invariant.
    pub evictions: u64,
    /// Rules placed after arriving (promotion).
    pub promotions: u64,
    /// Rules taken out of hardware for a hotter or higher one.
    pub demotions: u64,
}

#[derive(Default)]
struct HwTableState {
    used: u64,
    /// Entries by position within the table.
    order: BTreeSet<(Reverse<u16>, u64, FlowId)>,
}

/// The placement of every rule of the tables the profile puts in hardware.
pub struct Planner {
    pub profile: Arc<Profile>,
    pub mode: Mode,
    pub policy: Policy,
    /// Boxed: a rule is large (its match), and the map moves its values as it grows.
    rules: HashMap<FlowId, Box<Rule>>,
    index: BTreeMap<u8, TupleIndex>,
    hw: Vec<HwTableState>,
    /// Rules that could decide in hardware and do not, by insertion order ...
    waiting: BTreeSet<(u64, FlowId)>,
    /// ... and by priority.
    waiting_by_priority: BTreeSet<(Reverse<u16>, u64, FlowId)>,
    next_seq: u64,
    pub stats: PlacementStats,
    /// The hardware image changed since [`Planner::take_changed`].
    changed: bool,
    /// Hardware updates left in this second (traffic policy).
    budget: u32,
    last_tick_ns: u64,
    /// Direct parents found since the rule set last changed (`rules_changed` counts
    /// changes; the cache belongs to the count it was filled at).
    parents_cache: std::cell::RefCell<(u64, HashMap<FlowId, Vec<FlowId>>)>,
    rules_changed: u64,
}

impl Planner {
    pub fn new(profile: Arc<Profile>, mode: Mode, policy: Policy) -> Self {
        let hw = profile
            .tables
            .iter()
            .map(|_| HwTableState::default())
            .collect();
        Planner {
            profile,
            mode,
            policy,
            rules: HashMap::new(),
            index: BTreeMap::new(),
            hw,
            waiting: BTreeSet::new(),
            waiting_by_priority: BTreeSet::new(),
            next_seq: 0,
            stats: PlacementStats::default(),
            changed: false,
            budget: 0,
            last_tick_ns: 0,
            parents_cache: std::cell::RefCell::new((0, HashMap::new())),
            rules_changed: 0,
        }
    }

    pub fn rule(&self, id: FlowId) -> Option<&Rule> {
        self.rules.get(&id).map(|r| &**r)
    }

    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        self.rules.values().map(|r| &**r)
    }

    /// Whether the hardware image changed since the last call.
    pub fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    /// Units in use and in all, per profile table.
    pub fn occupancy(&self, table: usize) -> (u64, u64) {
        (
            self.hw.get(table).map_or(0, |t| t.used),
            self.profile.tables.get(table).map_or(0, |t| t.units),
        )
    }

    /// Entries per profile table.
    pub fn entries_in(&self, table: usize) -> usize {
        self.hw.get(table).map_or(0, |t| t.order.len())
    }

    /// Whether the switch may take a rule (for the tables whose fallback is `refuse`).
    /// `replacing`: the id of an identical rule the add replaces.
    pub fn admit(
        &self,
        table: u8,
        match_: &FlowMatch,
        instructions: &[Instruction],
        replacing: Option<FlowId>,
    ) -> Result<(), Refusal> {
        let tables: Vec<usize> = self.profile.tables_for(table).collect();
        if tables.is_empty() {
            return if self.profile.software_tables {
                Ok(())
            } else {
                Err(Refusal::BadTable)
            };
        }
        let refusing = tables
            .iter()
            .all(|t| self.profile.tables[*t].unsupported == Fallback::Refuse);
        if refusing {
            let program = HwProgram::of(instructions);
            let fits = tables
                .iter()
                .any(|t| self.profile.tables[*t].structure_for(match_).is_some());
            if !fits {
                return Err(Refusal::BadMatch);
            }
            let runs = tables.iter().any(|t| {
                let hw = &self.profile.tables[*t];
                hw.structure_for(match_).is_some()
                    && program.kind().is_some_and(|k| hw.supports(k))
                    && self.goto_ok(&program)
            });
            if !runs {
                return Err(Refusal::BadAction);
            }
        }
        let full_refuses = tables
            .iter()
            .all(|t| self.profile.tables[*t].when_full == Fallback::Refuse);
        if full_refuses {
            let freed = |t: usize| {
                replacing
                    .and_then(|id| self.rules.get(&id))
                    .and_then(|r| r.entry.as_ref())
                    .filter(|e| e.table == t)
                    .map_or(0, |e| self.profile.tables[t].structures[e.structure].cost)
            };
            let room = tables.iter().any(|&t| {
                let hw = &self.profile.tables[t];
                hw.structure_for(match_)
                    .is_some_and(|s| self.hw[t].used - freed(t) + hw.structures[s].cost <= hw.units)
            });
            if !room {
                return Err(Refusal::TableFull);
            }
        }
        Ok(())
    }

    fn goto_ok(&self, program: &HwProgram) -> bool {
        match program {
            HwProgram::Goto(t) => self.profile.in_hardware(*t),
            _ => true,
        }
    }

    /// A flow entry was added (its id is new: a replaced entry was removed first).
    pub fn insert(
        &mut self,
        table: u8,
        id: FlowId,
        priority: u16,
        match_: FlowMatch,
        instructions: &[Instruction],
        counters: Arc<FlowCounters>,
    ) {
        if !self.profile.in_hardware(table) {
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let rule = Rule {
            id,
            table,
            priority,
            match_,
            fields: match_.fields(),
            program: HwProgram::of(instructions),
            seq,
            counters,
            hw: Arc::new(HwCounters::default()),
            entry: None,
            ignored: false,
            last_packets: 0,
            rate: 0.0,
        };
        self.index.entry(table).or_default().insert(id, &match_);
        self.rules.insert(id, Box::new(rule));
        self.rules_changed += 1;
        // The new rule may be a parent of entries already deciding below it.
        let children = self.children_in_hw(id);
        self.repair(children);
        let placed = self.place_new(id);
        if !placed && self.holdable(id) {
            if self.full_ignores(id) {
                if let Some(r) = self.rules.get_mut(&id) {
                    r.ignored = true;
                }
            } else {
                self.wait(id);
            }
        }
    }

    /// A flow entry left its table.
    pub fn remove(&mut self, id: FlowId) {
        let Some(rule) = self.rules.get(&id) else {
            return;
        };
        let (table, match_) = (rule.table, rule.match_);
        let decided = rule.entry.as_ref().is_some_and(Entry::decides);
        let (below, parents) = if rule.entry.is_some() {
            (
                self.lower_entries_overlapping(id),
                if decided {
                    self.parents(id)
                } else {
                    Vec::new()
                },
            )
        } else {
            (Vec::new(), Vec::new())
        };
        self.unplace(id);
        self.unwait(id);
        if let Some(ix) = self.index.get_mut(&table) {
            ix.remove(id, &match_);
        }
        self.rules.remove(&id);
        self.rules_changed += 1;
        // With the rule gone, a rule it shadowed may have become a direct parent of an entry
        // below: check those entries again.
        self.repair(below);
        self.drop_unneeded_covers(&parents);
        self.promote();
    }

    /// A flow entry's instructions changed.
    pub fn modify(&mut self, id: FlowId, instructions: &[Instruction]) {
        let program = HwProgram::of(instructions);
        let Some(rule) = self.rules.get_mut(&id) else {
            return;
        };
        if rule.program == program {
            return;
        }
        rule.program = program;
        if rule.entry.is_some() {
            // Re-place: the new actions may need another table, or only a punt.
            let children = self.children_in_hw(id);
            self.unplace(id);
            let placed = self.place_new(id);
            self.repair(children);
            if !placed && self.holdable(id) {
                self.wait(id);
            }
        }
    }

    /// Periodic work: measures rates and, under the traffic policy, moves hot rules up and
    /// cold ones down; under every policy, fills free room.
    pub fn tick(&mut self, now_ns: u64) {
        let elapsed = now_ns.saturating_sub(self.last_tick_ns);
        if elapsed == 0 {
            return;
        }
        let secs = elapsed as f64 / 1e9;
        for r in self.rules.values_mut() {
            let p = r.counters.packets();
            r.rate = p.saturating_sub(r.last_packets) as f64 / secs;
            r.last_packets = p;
        }
        self.last_tick_ns = now_ns;
        if let Policy::Traffic(params) = self.policy {
            self.budget =
                ((f64::from(params.max_updates_per_sec) * secs.min(1.0)).ceil() as u32).max(1);
            self.rebalance(params);
        } else {
            self.promote();
        }
    }

    fn wait(&mut self, id: FlowId) {
        if let Some(r) = self.rules.get(&id) {
            self.waiting.insert((r.seq, id));
            self.waiting_by_priority
                .insert((Reverse(r.priority), r.seq, id));
        }
    }

    fn unwait(&mut self, id: FlowId) {
        if let Some(r) = self.rules.get(&id) {
            self.waiting.remove(&(r.seq, id));
            self.waiting_by_priority
                .remove(&(Reverse(r.priority), r.seq, id));
        }
    }

    /// Rules waiting for room, in the policy's order (at most `n`).
    fn waiting_in_order(&self, n: usize) -> Vec<FlowId> {
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

    // ---- placing -------------------------------------------------------------------------

    /// Places a rule that just arrived (or changed), as the mode and policy say.
    fn place_new(&mut self, id: FlowId) -> bool {
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
    fn place(&mut self, id: FlowId) -> bool {
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
    fn place_fresh(&mut self, id: FlowId) -> bool {
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
    fn free_entries(&self, id: FlowId) -> usize {
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
    fn room_for(&self, id: FlowId) -> bool {
        let r = &self.rules[&id];
        self.profile.tables_for(r.table).any(|t| {
            let hw = &self.profile.tables[t];
            hw.structure_for_fields(r.fields, &r.match_)
                .is_some_and(|s| self.hw[t].used + hw.structures[s].cost <= hw.units)
        })
    }

    /// Whether the tables of OpenFlow table `table` keep every rule they have room for (a
    /// device whose full table refuses or ignores, rather than spilling to software).
    fn keeps_all(&self, table: u8) -> bool {
        self.profile
            .tables_for(table)
            .any(|t| self.profile.tables[t].when_full != Fallback::Software)
    }

    /// Whether the rule's actions can run in hardware (a decide entry, not a punt).
    fn decidable(&self, id: FlowId) -> bool {
        let r = &self.rules[&id];
        !matches!(r.program, HwProgram::Software | HwProgram::ToCpu) && self.goto_ok(&r.program)
    }

    /// Whether any of the rule's tables could hold it at all (it waits for room).
    fn holdable(&self, id: FlowId) -> bool {
        let r = &self.rules[&id];
        self.profile.tables_for(r.table).any(|t| {
            self.profile.tables[t]
                .structure_for_fields(r.fields, &r.match_)
                .is_some()
        })
    }

    fn full_ignores(&self, id: FlowId) -> bool {
        let r = &self.rules[&id];
        self.profile
            .tables_for(r.table)
            .all(|t| self.profile.tables[t].when_full == Fallback::Ignore)
    }

    fn decide_entry(&self, id: FlowId, prefer_exact: bool) -> Option<Entry> {
        self.decide_entry_with(id, prefer_exact, &[])
    }

    /// A deciding entry for the rule in the best table with room, given entries `planned`
    /// to be added with it: an exact table when one fits (large and cheap), else the first
    /// TCAM. A table is skipped when a lower-priority entry of an earlier table overlaps the
    /// rule (that entry would catch its packets first).
    fn decide_entry_with(
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
    fn punt_entry(&self, id: FlowId, widen: bool) -> Option<Entry> {
        self.punt_entry_with(id, widen, &[])
    }

    fn punt_entry_with(
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

    fn has_room(&self, t: usize, cost: u64, planned: &[(FlowId, Entry)]) -> bool {
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
    fn exact_clash(&self, id: FlowId, t: usize, m: &FlowMatch) -> bool {
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
    fn earlier_lower_overlap(&self, id: FlowId, t: usize) -> bool {
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
    fn commit(&mut self, plan: Vec<(FlowId, Entry)>) -> bool {
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

    fn add_entry(&mut self, id: FlowId, entry: Entry) {
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
    fn unplace(&mut self, id: FlowId) {
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

    // ---- dependencies --------------------------------------------------------------------

    /// Rules of the same table that may overlap `m`.
    fn overlapping(&self, table: u8, m: &FlowMatch) -> Vec<FlowId> {
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

    fn find_parents(&self, id: FlowId) -> Vec<FlowId> {
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
    fn ancestors(&self, id: FlowId, room: usize) -> Option<Vec<FlowId>> {
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
    fn position(&self, id: FlowId, entry: &Entry) -> (usize, Reverse<u16>, u64) {
        let r = &self.rules[&id];
        (entry.table, Reverse(r.priority), r.seq)
    }

    /// Whether every direct parent has an entry before the rule's (planned) entry.
    fn parents_present(&self, id: FlowId, plan: Option<&[(FlowId, Entry)]>) -> bool {
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
    fn children_in_hw(&self, id: FlowId) -> Vec<FlowId> {
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
    fn is_parent_of(&self, p: FlowId, c: FlowId) -> bool {
        let (pr, cr) = (&self.rules[&p], &self.rules[&c]);
        let both = intersect(&pr.match_, &cr.match_);
        !self.overlapping(pr.table, &both).into_iter().any(|o| {
            let or = &self.rules[&o];
            o != p && o != c && or.priority > pr.priority && covers(&or.match_, &both)
        })
    }

    /// Hardware entries below rule `id` that overlap it.
    fn lower_entries_overlapping(&self, id: FlowId) -> Vec<FlowId> {
        let r = &self.rules[&id];
        self.overlapping(r.table, &r.match_)
            .into_iter()
            .filter(|o| {
                *o != id && self.rules[o].priority <= r.priority && self.rules[o].entry.is_some()
            })
            .collect()
    }

    // ---- keeping the invariant -------------------------------------------------------------

    /// Entries whose parents changed (a new rule above them, one taken out of hardware, one
    /// gone that shadowed another): each keeps deciding only if every direct parent has an
    /// earlier entry. A missing parent is brought down the mode's way (Algorithm 1 and
    /// dependent-set place it, cover-set covers it); failing that, the entry is taken out,
    /// and the entries below that needed it are looked at in turn. A worklist, not
    /// recursion: a chain of thousands of entries must not exhaust the stack.
    fn repair(&mut self, mut work: Vec<FlowId>) {
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
    fn evict(&mut self, id: FlowId) {
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
    fn drop_unneeded_covers(&mut self, parents: &[FlowId]) {
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

    // ---- promotion -------------------------------------------------------------------------

    /// Fills free room from the waiting rules, in the policy's order.
    fn promote(&mut self) {
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

    fn any_room(&self) -> bool {
        self.profile
            .tables
            .iter()
            .zip(&self.hw)
            .any(|(t, s)| t.structures.iter().any(|st| s.used + st.cost <= t.units))
    }

    /// Priority policy: a rule that found no room takes the place of the lowest-priority
    /// deciding rules below it, if that makes room.
    fn displace_for(&mut self, id: FlowId) -> bool {
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
    fn rebalance(&mut self, params: TrafficParams) {
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

    // ---- checking --------------------------------------------------------------------------

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
