//! One OpenFlow flow table as the controller sees it (spec 1.3.5 section 6.4): entries keyed by
//! (priority, match), strict and non-strict lookups, overlap checks, cookies, timeouts. Every
//! change is mirrored into the datapath as an incremental op.

use std::collections::HashSet;
use std::hash::BuildHasher;
use std::sync::Arc;

use dataplane::classifier::hash::{SeededMap, SeededState};
use dataplane::counters::FlowCounters;
use dataplane::key::{FlowMatch, KEY_WORDS};
use dataplane::model::{FlowId, Op};
use ofp::{Action, FlowModFlags, Instruction, Match};

use crate::translate::compile_instructions;

/// Why a flow entry left its table: an `OFPRR_*` value. OpenFlow 1.3 has no reason for meter
/// deletion (1.4 added one), so entries removed with their meter report `OFPRR_DELETE`.
pub type RemovedReason = u8;

/// A flow entry with its OpenFlow-visible state.
#[derive(Clone, Debug)]
pub struct FlowEntry {
    pub id: FlowId,
    pub priority: u16,
    /// The match as the controller wrote it (dump-flows shows it back verbatim).
    pub match_: Match,
    /// The match as the datapath sees it; equality of two compiled matches is rule identity.
    pub compiled: FlowMatch,
    pub instructions: Vec<Instruction>,
    pub cookie: u64,
    pub flags: FlowModFlags,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub created_ns: u64,
    pub counters: Arc<FlowCounters>,
    /// Counter values when the entry's counters were last reset (RESET_COUNTS).
    pub counter_base: (u64, u64),
}

impl FlowEntry {
    /// Packets and bytes since the last reset, as flow stats report them.
    pub fn counts(&self) -> (u64, u64) {
        let packets = if self.flags.contains(FlowModFlags::NO_PKT_COUNTS) {
            u64::MAX
        } else {
            self.counters.packets().saturating_sub(self.counter_base.0)
        };
        let bytes = if self.flags.contains(FlowModFlags::NO_BYT_COUNTS) {
            u64::MAX
        } else {
            self.counters.bytes().saturating_sub(self.counter_base.1)
        };
        (packets, bytes)
    }

    fn reset_counts(&mut self) {
        self.counter_base = (self.counters.packets(), self.counters.bytes());
    }

    /// Whether an action of the entry outputs to `port` (the out_port filter of spec 6.4).
    pub fn outputs_to(&self, port: u32) -> bool {
        self.actions()
            .any(|a| matches!(a, Action::Output { port: p, .. } if *p == port))
    }

    /// Whether an action of the entry sends to `group` (the out_group filter).
    pub fn sends_to_group(&self, group: u32) -> bool {
        self.actions()
            .any(|a| matches!(a, Action::Group(g) if *g == group))
    }

    /// Whether the entry uses meter `meter_id`.
    pub fn uses_meter(&self, meter_id: u32) -> bool {
        self.instructions
            .iter()
            .any(|i| matches!(i, Instruction::Meter(m) if *m == meter_id))
    }

    /// The actions of its apply, write and InSP instructions (a generated packet's actions
    /// forward like the others: to ports, to groups).
    fn actions(&self) -> impl Iterator<Item = &Action> {
        self.instructions.iter().flat_map(|i| match i {
            Instruction::ApplyActions(a) | Instruction::WriteActions(a) => a.as_slice(),
            Instruction::Insp(insp) => insp.actions.as_slice(),
            _ => &[],
        })
    }

    /// When the entry expires by its timeouts, if it does.
    pub fn expiry(&self, now_ns: u64) -> Option<RemovedReason> {
        const NS: u64 = 1_000_000_000;
        if self.hard_timeout != 0
            && now_ns.saturating_sub(self.created_ns) >= u64::from(self.hard_timeout) * NS
        {
            return Some(ofp::OFPRR_HARD_TIMEOUT);
        }
        if self.idle_timeout != 0 {
            let last = self.counters.last_active_ns(now_ns).max(self.created_ns);
            if now_ns.saturating_sub(last) >= u64::from(self.idle_timeout) * NS {
                return Some(ofp::OFPRR_IDLE_TIMEOUT);
            }
        }
        None
    }
}

/// Whether `entry` is at least as specific as `filter` (non-strict modify/delete/stats).
pub fn covers(filter: &FlowMatch, entry: &FlowMatch) -> bool {
    let (fm, fk) = (filter.mask.words(), filter.key.words());
    let (em, ek) = (entry.mask.words(), entry.key.words());
    (0..KEY_WORDS).all(|i| em[i] & fm[i] == fm[i] && ek[i] & fm[i] == fk[i])
}

/// Whether some packet matches both (CHECK_OVERLAP).
pub fn overlaps(a: &FlowMatch, b: &FlowMatch) -> bool {
    let (am, ak) = (a.mask.words(), a.key.words());
    let (bm, bk) = (b.mask.words(), b.key.words());
    (0..KEY_WORDS).all(|i| (ak[i] ^ bk[i]) & am[i] & bm[i] == 0)
}

/// Which entries a modify, delete or stats request selects.
#[derive(Clone, Copy, Debug)]
pub struct Selector<'a> {
    pub compiled: &'a FlowMatch,
    /// `Some(priority)` selects strictly: identical match and priority.
    pub strict_priority: Option<u16>,
    pub cookie: u64,
    pub cookie_mask: u64,
    pub out_port: u32,
    pub out_group: u32,
}

impl Selector<'_> {
    fn selects(&self, entry: &FlowEntry) -> bool {
        let shape = match self.strict_priority {
            Some(priority) => entry.priority == priority && entry.compiled == *self.compiled,
            None => covers(self.compiled, &entry.compiled),
        };
        shape
            && (entry.cookie ^ self.cookie) & self.cookie_mask == 0
            && (self.out_port == ofp::OFPP_ANY || entry.outputs_to(self.out_port))
            && (self.out_group == ofp::OFPG_ANY || entry.sends_to_group(self.out_group))
    }
}

/// Entries sharing one (priority, match hash) slot of the identity index: almost always one.
#[derive(Debug)]
enum RuleSlot {
    One(FlowId),
    Many(Vec<FlowId>),
}

impl RuleSlot {
    fn ids(&self) -> &[FlowId] {
        match self {
            RuleSlot::One(id) => std::slice::from_ref(id),
            RuleSlot::Many(ids) => ids,
        }
    }
}

/// A flow table: the entries, an index for strict identity, and the entries with timeouts.
///
/// Entries are boxed and the identity index holds a 64-bit keyed hash of the match rather
/// than the 368-byte match itself, so growing the maps moves a few bytes per entry.
#[derive(Debug)]
pub struct FlowTable {
    pub table_id: u8,
    pub max_entries: u32,
    pub config: u32,
    entries: SeededMap<FlowId, Box<FlowEntry>>,
    by_rule: SeededMap<(u16, u64), RuleSlot>,
    rule_hasher: SeededState,
    timed: HashSet<FlowId, SeededState>,
}

/// What an add did to the table.
pub enum AddOutcome {
    Added,
    /// An entry with the same match and priority was replaced (no flow-removed is sent).
    Replaced,
}

impl FlowTable {
    pub fn new(table_id: u8, max_entries: u32) -> Self {
        Self {
            table_id,
            max_entries,
            config: 0,
            entries: SeededMap::default(),
            by_rule: SeededMap::default(),
            rule_hasher: SeededState::default(),
            timed: HashSet::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn entries(&self) -> impl Iterator<Item = &FlowEntry> {
        self.entries.values().map(|e| &**e)
    }

    pub fn get(&self, id: FlowId) -> Option<&FlowEntry> {
        self.entries.get(&id).map(|e| &**e)
    }

    fn rule_key(&self, priority: u16, compiled: &FlowMatch) -> (u16, u64) {
        (priority, self.rule_hasher.hash_one(compiled))
    }

    /// The entry with this exact match and priority, if any.
    pub fn find_strict(&self, priority: u16, compiled: &FlowMatch) -> Option<&FlowEntry> {
        let slot = self.by_rule.get(&self.rule_key(priority, compiled))?;
        slot.ids()
            .iter()
            .filter_map(|id| self.entries.get(id))
            .find(|e| e.priority == priority && e.compiled == *compiled)
            .map(|e| &**e)
    }

    fn index_rule(&mut self, entry: &FlowEntry) {
        let key = self.rule_key(entry.priority, &entry.compiled);
        match self.by_rule.get_mut(&key) {
            None => {
                self.by_rule.insert(key, RuleSlot::One(entry.id));
            }
            Some(slot) => {
                let mut ids = slot.ids().to_vec();
                ids.push(entry.id);
                *slot = RuleSlot::Many(ids);
            }
        }
    }

    fn unindex_rule(&mut self, entry: &FlowEntry) {
        let key = self.rule_key(entry.priority, &entry.compiled);
        let Some(slot) = self.by_rule.get_mut(&key) else {
            return;
        };
        let rest: Vec<FlowId> = slot
            .ids()
            .iter()
            .copied()
            .filter(|id| *id != entry.id)
            .collect();
        match rest.as_slice() {
            [] => {
                self.by_rule.remove(&key);
            }
            [one] => *slot = RuleSlot::One(*one),
            _ => *slot = RuleSlot::Many(rest),
        }
    }

    /// Whether an entry of the same priority overlaps `compiled` (CHECK_OVERLAP).
    pub fn has_overlap(&self, priority: u16, compiled: &FlowMatch) -> bool {
        self.entries
            .values()
            .any(|e| e.priority == priority && overlaps(&e.compiled, compiled))
    }

    /// Whether adding one more entry would exceed the table (replacements never do).
    pub fn is_full_for(&self, priority: u16, compiled: &FlowMatch) -> bool {
        self.entries.len() >= self.max_entries as usize
            && self.find_strict(priority, compiled).is_none()
    }

    /// Inserts `entry`, replacing an identical one (whose counters it keeps unless
    /// RESET_COUNTS), and emits the datapath ops.
    pub fn add(&mut self, mut entry: FlowEntry, ops: &mut Vec<Op>) -> AddOutcome {
        let existing = self
            .find_strict(entry.priority, &entry.compiled)
            .map(|e| e.id);
        let outcome = match existing {
            Some(old_id) => {
                if let Some(old) = self.remove_entry(old_id, ops) {
                    if !entry.flags.contains(FlowModFlags::RESET_COUNTS) {
                        entry.counters = old.counters;
                        entry.counter_base = old.counter_base;
                    }
                }
                AddOutcome::Replaced
            }
            None => AddOutcome::Added,
        };
        ops.push(Op::InsertFlow {
            table: self.table_id,
            id: entry.id,
            priority: entry.priority,
            cookie: entry.cookie,
            match_: entry.compiled,
            instructions: compile_instructions(&entry.instructions).into(),
            counters: Arc::clone(&entry.counters),
        });
        if entry.idle_timeout != 0 || entry.hard_timeout != 0 {
            self.timed.insert(entry.id);
        }
        self.index_rule(&entry);
        self.entries.insert(entry.id, Box::new(entry));
        outcome
    }

    /// The ids a selector picks, in no particular order.
    pub fn select(&self, selector: &Selector<'_>) -> Vec<FlowId> {
        if let Some(priority) = selector.strict_priority {
            return self
                .find_strict(priority, selector.compiled)
                .filter(|e| selector.selects(e))
                .map(|e| vec![e.id])
                .unwrap_or_default();
        }
        self.entries
            .values()
            .filter(|e| selector.selects(e))
            .map(|e| e.id)
            .collect()
    }

    /// Replaces the instructions of entry `id` (cookie, timeouts and flags stay).
    pub fn modify(
        &mut self,
        id: FlowId,
        instructions: &[Instruction],
        reset_counts: bool,
        ops: &mut Vec<Op>,
    ) {
        let Some(entry) = self.entries.get_mut(&id) else {
            return;
        };
        entry.instructions = instructions.to_vec();
        if reset_counts {
            entry.reset_counts();
        }
        ops.push(Op::ReplaceInstructions {
            table: self.table_id,
            id,
            instructions: compile_instructions(instructions).into(),
        });
    }

    /// Removes entry `id`, emitting the datapath op; returns it for a flow-removed message.
    pub fn remove_entry(&mut self, id: FlowId, ops: &mut Vec<Op>) -> Option<FlowEntry> {
        let entry = self.entries.remove(&id)?;
        self.unindex_rule(&entry);
        self.timed.remove(&id);
        ops.push(Op::RemoveFlow {
            table: self.table_id,
            id,
        });
        Some(*entry)
    }

    /// Entries whose idle or hard timeout has passed, with the reason.
    pub fn expired(&self, now_ns: u64) -> Vec<(FlowId, RemovedReason)> {
        self.timed
            .iter()
            .filter_map(|id| {
                let entry = self.entries.get(id)?;
                entry.expiry(now_ns).map(|reason| (*id, reason))
            })
            .collect()
    }

    /// Ids of entries for which `pred` holds (group and meter deletion sweep).
    pub fn ids_where(&self, pred: impl Fn(&FlowEntry) -> bool) -> Vec<FlowId> {
        self.entries
            .values()
            .filter(|e| pred(e))
            .map(|e| e.id)
            .collect()
    }
}
