//! The datapath's snapshot: one copy of the double-buffered state (flow tables, groups,
//! meters, ports, templates) and how ops apply to it (see `datapath.rs` for the left-right
//! design).

use crate::classifier::hash::SeededMap;
use crate::classifier::Classifier;
use crate::counters::{CounterCell, FlowCounters, PortCounters, ShardedPair};
use crate::ir::{port, GROUP_ANY};
use crate::key::{FlowMatch, ParseDepth};
use crate::meter::Meter;
use crate::model::{FlowId, Group, GroupBucket, GroupType, Op, PortInfo, SwitchFlags};
use crate::normal::{NormalPorts, PortVlanMode};
use crate::program::{action_set_order, flag, CompiledActions, Program};
use crate::template::PacketTemplate;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What a classifier match returns: the part of a flow entry a packet reads, one cache line
/// (a large table's entries are read at random, a line each).
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub(crate) struct FlowEntry {
    pub cell: CounterCell,
    pub program: Program,
    /// For the packet-ins the entry sends.
    pub cookie: u64,
}

// The classifier keeps `Option<FlowEntry>`s: the counter cell's pointer is their niche.
const _: () = assert!(core::mem::size_of::<Option<FlowEntry>>() == 64);

/// A flow table of the datapath.
pub(crate) type FlowTable = Classifier<FlowEntry, FlowKeep>;

/// What the datapath keeps with a flow entry that packets never read.
#[derive(Clone, Debug)]
pub(crate) struct FlowKeep {
    /// Parse depth the match needs (actions parse deeper on demand).
    pub depth: ParseDepth,
    /// Keeps the entry's counter cell allocated while the rule exists (held, never read).
    pub _cell_owner: Arc<FlowCounters>,
}

#[derive(Clone, Debug)]
pub(crate) struct PortEntry {
    pub info: PortInfo,
    pub counters: Arc<PortCounters>,
    /// The receive counter's cell (of `counters`), counted for every packet in.
    pub rx: CounterCell,
}

impl PortEntry {
    /// Usable for forwarding: up, live and not `no_fwd`.
    pub fn forwards(&self) -> bool {
        !self.info.config.down && !self.info.config.no_fwd && self.info.live
    }
}

/// Port numbers below this are looked up by index (the common case); others in a map.
const DENSE_PORTS: usize = 1024;

/// The ports, indexed for a per-packet lookup without a tree walk.
#[derive(Clone, Debug, Default)]
pub(crate) struct PortTable {
    dense: Vec<Option<PortEntry>>,
    /// Per dense port number, the transmit counter of a port that forwards (`None` when the
    /// port does not forward or does not exist): all an output to it reads, eight bytes a
    /// port instead of its entry's line and its counters' line.
    sending: Vec<Option<CounterCell>>,
    sparse: BTreeMap<u32, PortEntry>,
}

impl PortTable {
    /// The transmit counter of dense port `port_no` if it forwards; `None` sends the output
    /// through [`Self::get`].
    #[inline(always)]
    pub fn sending(&self, port_no: u32) -> Option<CounterCell> {
        self.sending.get(port_no as usize).copied().flatten()
    }

    #[inline(always)]
    pub fn get(&self, port_no: u32) -> Option<&PortEntry> {
        match self.dense.get(port_no as usize) {
            Some(e) => e.as_ref(),
            None if port_no as usize >= DENSE_PORTS => self.get_sparse(port_no),
            None => None,
        }
    }

    /// A port numbered beyond the dense range (kept out of line: rare, and a tree walk).
    #[inline(never)]
    fn get_sparse(&self, port_no: u32) -> Option<&PortEntry> {
        self.sparse.get(&port_no)
    }

    fn insert(&mut self, port_no: u32, entry: PortEntry) {
        let i = port_no as usize;
        if i < DENSE_PORTS {
            if self.dense.len() <= i {
                self.dense.resize(i + 1, None);
                self.sending.resize(i + 1, None);
            }
            if let Some(slot) = self.sending.get_mut(i) {
                *slot = entry.forwards().then(|| entry.counters.tx.cell());
            }
            if let Some(slot) = self.dense.get_mut(i) {
                *slot = Some(entry);
            }
        } else {
            self.sparse.insert(port_no, entry);
        }
    }

    fn remove(&mut self, port_no: u32) {
        match self.dense.get_mut(port_no as usize) {
            Some(slot) => {
                *slot = None;
                if let Some(tx) = self.sending.get_mut(port_no as usize) {
                    *tx = None;
                }
            }
            None => {
                self.sparse.remove(&port_no);
            }
        }
    }

    /// Every port in ascending number order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &PortEntry)> {
        let dense = self
            .dense
            .iter()
            .enumerate()
            .filter_map(|(i, e)| Some((i as u32, e.as_ref()?)));
        dense.chain(self.sparse.iter().map(|(p, e)| (*p, e)))
    }
}

/// Ids below this are looked up by index (groups, meters, templates are numbered densely by
/// controllers); others in a seeded map.
const DENSE_IDS: usize = 4096;

/// A map from OpenFlow ids (group, meter, template) fast to read on the hot path.
#[derive(Clone, Debug)]
pub(crate) struct IdMap<T> {
    dense: Vec<Option<T>>,
    sparse: SeededMap<u32, T>,
}

impl<T> Default for IdMap<T> {
    fn default() -> Self {
        IdMap {
            dense: Vec::new(),
            sparse: SeededMap::default(),
        }
    }
}

impl<T: Clone> IdMap<T> {
    #[inline(always)]
    pub fn get(&self, id: u32) -> Option<&T> {
        match self.dense.get(id as usize) {
            Some(v) => v.as_ref(),
            None if id as usize >= DENSE_IDS => self.sparse.get(&id),
            None => None,
        }
    }

    fn insert(&mut self, id: u32, value: T) -> Option<T> {
        let i = id as usize;
        if i < DENSE_IDS {
            if self.dense.len() <= i {
                self.dense.resize(i + 1, None);
            }
            self.dense.get_mut(i).and_then(|slot| slot.replace(value))
        } else {
            self.sparse.insert(id, value)
        }
    }

    fn remove(&mut self, id: u32) -> Option<T> {
        match self.dense.get_mut(id as usize) {
            Some(slot) => slot.take(),
            None => self.sparse.remove(&id),
        }
    }

    /// Every id in the map (control path).
    pub fn ids(&self) -> Vec<u32> {
        let dense = self.dense.iter().enumerate();
        let dense = dense.filter_map(|(i, v)| v.as_ref().map(|_| i as u32));
        dense.chain(self.sparse.keys().copied()).collect()
    }

    pub fn get_mut(&mut self, id: u32) -> Option<&mut T> {
        match self.dense.get_mut(id as usize) {
            Some(v) => v.as_mut(),
            None => self.sparse.get_mut(&id),
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct GroupEntry {
    /// The group as set (its `counters` keep the cells below allocated).
    pub group: Arc<Group>,
    /// The group's type and counter, at hand without going through `group`.
    pub kind: GroupType,
    pub counter: CounterCell,
    pub buckets: Box<[CompiledBucket]>,
}

/// A bucket as the hot path runs it: its actions (in action-set order) compiled, its counter
/// (none when the group came with fewer bucket counters than buckets), and whether its
/// watched port and group are live ([`Snapshot::refresh_liveness`], run at every publish
/// that changed a group or a port, so a packet never walks watch chains).
#[derive(Clone, Debug)]
pub(crate) struct CompiledBucket {
    pub ops: CompiledActions,
    pub counter: Option<CounterCell>,
    pub live: bool,
}

/// The internal op: an [`Op`], or an insert the first copy has compiled for the second.
#[derive(Clone)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Update {
    Op(Op),
    /// An `InsertFlow` the first copy has already compiled: the second copy reuses the entry
    /// instead of compiling the instructions again.
    Insert {
        table: u8,
        id: FlowId,
        priority: u16,
        match_: FlowMatch,
        entry: FlowEntry,
        keep: FlowKeep,
    },
    /// Recomputes every group bucket's liveness; the writer appends it to a publish that
    /// changed a group or a port.
    RefreshLiveness,
}

impl Update {
    /// Compiles an `InsertFlow` into its prepared form (other updates are left as they are).
    fn prepare(&mut self) {
        if let Update::Op(Op::InsertFlow {
            table,
            id,
            priority,
            cookie,
            match_,
            instructions,
            counters,
        }) = self
        {
            let mut program = Program::compile(instructions, *table);
            program.table_miss = *priority == 0 && match_.mask.words().iter().all(|w| *w == 0);
            let entry = FlowEntry {
                cookie: *cookie,
                program,
                cell: counters.cell(),
            };
            let keep = FlowKeep {
                depth: match_.parse_depth(),
                _cell_owner: Arc::clone(counters),
            };
            *self = Update::Insert {
                table: *table,
                id: *id,
                priority: *priority,
                match_: *match_,
                entry,
                keep,
            };
        }
    }
}

/// One copy of the datapath state.
#[derive(Clone)]
pub(crate) struct Snapshot {
    pub tables: Vec<FlowTable>,
    pub groups: IdMap<GroupEntry>,
    pub meters: IdMap<Arc<Meter>>,
    pub templates: IdMap<Arc<PacketTemplate>>,
    /// Ordered so FLOOD/ALL emit in port order.
    pub ports: PortTable,
    pub config: SwitchFlags,
    /// VLAN modes of the ports, for NORMAL.
    pub normal_ports: NormalPorts,
    /// Number of flows whose match needs each parse depth.
    depth_counts: [u32; 3],
    /// Number of flows with Write-Actions.
    set_writers: u32,
}

impl Snapshot {
    pub fn new(n_tables: u8) -> Self {
        Snapshot {
            tables: (0..n_tables).map(|_| Classifier::default()).collect(),
            groups: IdMap::default(),
            meters: IdMap::default(),
            templates: IdMap::default(),
            ports: PortTable::default(),
            config: SwitchFlags::default(),
            normal_ports: NormalPorts::new(),
            depth_counts: [0; 3],
            set_writers: 0,
        }
    }

    /// Whether some flow has Write-Actions. Without one every packet's action set stays
    /// empty, and the pipeline neither clears nor reads the sets (a line per packet).
    pub fn writes_action_sets(&self) -> bool {
        self.set_writers > 0
    }

    /// Counts a flow with program `flags` in or out of [`Self::writes_action_sets`].
    fn count_set_writer(&mut self, flags: u8, add: bool) {
        if flags & flag::WRITE != 0 {
            step(&mut self.set_writers, add);
        }
    }

    /// The deepest parse any installed match needs; actions needing deeper headers parse
    /// further on demand (`actions::ensure_depth`).
    pub fn parse_depth(&self) -> ParseDepth {
        match self.depth_counts {
            [_, _, n] if n > 0 => ParseDepth::L4,
            [_, n, _] if n > 0 => ParseDepth::L3,
            _ => ParseDepth::L2,
        }
    }

    fn count_depth(&mut self, d: ParseDepth, add: bool) {
        if let Some(c) = self.depth_counts.get_mut(d as usize) {
            step(c, add);
        }
    }

    pub fn table(&self, id: u8) -> Option<&FlowTable> {
        self.tables.get(usize::from(id))
    }

    fn remove_flow(&mut self, table: u8, id: FlowId) {
        let removed = self
            .tables
            .get_mut(usize::from(table))
            .and_then(|t| t.remove(id.0));
        if let Some((entry, keep)) = removed {
            self.count_depth(keep.depth, false);
            self.count_set_writer(entry.program.flags, false);
        }
    }

    fn insert_flow(
        &mut self,
        table: u8,
        id: FlowId,
        priority: u16,
        match_: &FlowMatch,
        entry: FlowEntry,
        keep: FlowKeep,
    ) {
        let (depth, flags) = (keep.depth, entry.program.flags);
        self.remove_flow(table, id);
        if let Some(t) = self.tables.get_mut(usize::from(table)) {
            t.insert_with(id.0, priority, match_, entry, keep);
            self.count_depth(depth, true);
            self.count_set_writer(flags, true);
        }
    }

    fn apply(&mut self, update: &Update) {
        match update {
            Update::Insert {
                table,
                id,
                priority,
                match_,
                entry,
                keep,
            } => self.insert_flow(*table, *id, *priority, match_, entry.clone(), keep.clone()),
            Update::Op(op) => self.apply_op(op),
            Update::RefreshLiveness => self.refresh_liveness(),
        }
    }

    fn set_port(&mut self, port_no: u32, info: &PortInfo, counters: &Arc<PortCounters>) {
        let mode = info.vlan_mode.clone().unwrap_or(PortVlanMode::Trunk {
            allowed: None,
            native: Some(1),
        });
        self.normal_ports.set(port_no, mode);
        self.ports.insert(
            port_no,
            PortEntry {
                info: info.clone(),
                counters: Arc::clone(counters),
                rx: counters.rx.cell(),
            },
        );
    }

    fn apply_op(&mut self, op: &Op) {
        match op {
            Op::InsertFlow { .. } => {
                // `absorb_first` prepares every insert; this keeps an unprepared one correct.
                let mut update = Update::Op(op.clone());
                update.prepare();
                self.apply(&update);
            }
            Op::RemoveFlow { table, id } => self.remove_flow(*table, *id),
            Op::ReplaceInstructions {
                table,
                id,
                instructions,
            } => {
                if let Some(e) = self
                    .tables
                    .get_mut(usize::from(*table))
                    .and_then(|t| t.payload_mut(id.0))
                {
                    let table_miss = e.program.table_miss;
                    let old = e.program.flags;
                    e.program = Program::compile(instructions, *table);
                    e.program.table_miss = table_miss;
                    let new = e.program.flags;
                    self.count_set_writer(old, false);
                    self.count_set_writer(new, true);
                }
            }
            Op::SetGroup { id, group } => {
                let group = normalize(group);
                let buckets = group
                    .buckets
                    .iter()
                    .enumerate()
                    .map(|(i, b)| CompiledBucket {
                        ops: CompiledActions::compile(&b.actions),
                        counter: group.counters.buckets.get(i).map(ShardedPair::cell),
                        live: true,
                    })
                    .collect();
                let entry = GroupEntry {
                    kind: group.kind,
                    counter: group.counters.group.cell(),
                    group: Arc::new(group),
                    buckets,
                };
                self.groups.insert(*id, entry);
            }
            Op::RemoveGroup { id } => {
                self.groups.remove(*id);
            }
            Op::SetMeter { id, meter } => {
                self.meters.insert(*id, Arc::clone(meter));
            }
            Op::RemoveMeter { id } => {
                self.meters.remove(*id);
            }
            Op::SetPort {
                port_no,
                info,
                counters,
            } => self.set_port(*port_no, info, counters),
            Op::RemovePort { port_no } => {
                self.ports.remove(*port_no);
                self.normal_ports.remove(*port_no);
            }
            Op::SetSwitchFlags(flags) => self.config = *flags,
            Op::SetTemplate { id, template } => {
                self.templates.insert(*id, Arc::clone(template));
            }
            Op::RemoveTemplate { id } => {
                self.templates.remove(*id);
            }
        }
    }
}

/// Counts one flow in (`add`) or out of `count`.
fn step(count: &mut u32, add: bool) {
    *count = if add {
        count.saturating_add(1)
    } else {
        count.saturating_sub(1)
    };
}

/// Watch chains longer than this count as dead: a bound on the recursion when liveness is
/// refreshed (the core rejects loops, not length). A group first met past the bound is
/// remembered as dead for the whole refresh.
const MAX_WATCH_DEPTH: u8 = 64;

/// Group bucket liveness (OpenFlow 1.3 section 5.6.1), judged here at publish so that a
/// packet reads one flag per bucket.
impl Snapshot {
    /// Sets every bucket's `live`: its watched port is live and its watched group has a live
    /// bucket. Each group is judged once (a watch graph is a DAG: the core rejects loops), so
    /// the work is linear in the buckets however the groups watch each other.
    fn refresh_liveness(&mut self) {
        let ids = self.groups.ids();
        let mut judged = SeededMap::default();
        let live: Vec<(u32, Vec<bool>)> = ids
            .iter()
            .map(|&id| {
                let buckets = self
                    .groups
                    .get(id)
                    .map_or(&[][..], |g| &g.group.buckets[..]);
                let live = buckets
                    .iter()
                    .map(|b| self.bucket_live(b, 0, &mut judged))
                    .collect();
                (id, live)
            })
            .collect();
        for (id, flags) in live {
            if let Some(entry) = self.groups.get_mut(id) {
                for (bucket, live) in entry.buckets.iter_mut().zip(flags) {
                    bucket.live = live;
                }
            }
        }
    }

    fn port_live(&self, port_no: u32) -> bool {
        port_no == port::ANY
            || self
                .ports
                .get(port_no)
                .is_some_and(|p| p.info.live && !p.info.config.down)
    }

    /// Whether a bucket's watched port and group are live; `judged` holds the groups decided
    /// so far (`None` while one is being decided, which only a loop would meet: dead).
    fn bucket_live(
        &self,
        bucket: &GroupBucket,
        depth: u8,
        judged: &mut SeededMap<u32, Option<bool>>,
    ) -> bool {
        self.port_live(bucket.watch_port)
            && (bucket.watch_group == GROUP_ANY
                || self.group_live(bucket.watch_group, depth + 1, judged))
    }

    /// A group is live when any of its buckets is.
    fn group_live(&self, id: u32, depth: u8, judged: &mut SeededMap<u32, Option<bool>>) -> bool {
        if depth > MAX_WATCH_DEPTH {
            return false;
        }
        if let Some(known) = judged.get(&id) {
            return known.unwrap_or(false);
        }
        judged.insert(id, None);
        let live = self.groups.get(id).is_some_and(|g| {
            g.group
                .buckets
                .iter()
                .any(|b| self.bucket_live(b, depth, judged))
        });
        judged.insert(id, Some(live));
        live
    }
}

impl left_right::Absorb<Update> for Snapshot {
    fn absorb_first(&mut self, update: &mut Update, _other: &Self) {
        update.prepare();
        self.apply(update);
    }

    fn absorb_second(&mut self, update: Update, _other: &Self) {
        match update {
            Update::Insert {
                table,
                id,
                priority,
                match_,
                entry,
                keep,
            } => self.insert_flow(table, id, priority, &match_, entry, keep),
            update => self.apply(&update),
        }
    }

    fn sync_with(&mut self, first: &Self) {
        *self = first.clone();
    }
}

/// Rewrites every bucket's actions into action-set order (a bucket is an action set).
fn normalize(group: &Group) -> Group {
    let buckets = group
        .buckets
        .iter()
        .map(|b| GroupBucket {
            actions: action_set_order(&b.actions),
            ..b.clone()
        })
        .collect();
    Group {
        kind: group.kind,
        buckets,
        counters: group.counters.clone(),
    }
}
