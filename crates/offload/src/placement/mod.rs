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
//! The work is split by job: `place` (tables, entries, plans), `deps` (overlaps, parents,
//! positions), `repair` (the invariant after a change), `promote` (the policies), `check`.
//!
//! # Costs
//!
//! Direct parents come from the tuple index (`index.rs`): an exact rule among exact rules
//! costs a hash probe per mask. Every hardware write is counted: an entry inserted into an
//! ordered TCAM moves every lower-priority entry of that TCAM (seed 003 section 3.3).

mod check;
mod deps;
mod place;
mod promote;
mod repair;

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
}
