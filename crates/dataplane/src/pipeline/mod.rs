//! The OpenFlow 1.3 pipeline (spec section 5): tables, instructions, the action set, outputs.
//!
//! A batch moves through the tables stage by stage: goto-table only goes forward, so the
//! datapath repeatedly takes the lowest table any packet waits at, classifies all those
//! packets together (one lookup loop specialised to the table's shape; for a table too large
//! for the cache, with its rules and counters loaded first so their misses overlap), then runs
//! each packet's entry, which queues the packet at its next table. Working table by table
//! keeps every loop short and its branches predictable: measured against running each packet
//! through all its tables in turn (fewer instructions), this runs 10 to 30% more packets per
//! second (docs/bench/table2.md). A table 0 keyed by in_port alone is resolved at intake,
//! once per port and window ([`by_port`]). Packet-out and InSP-generated packets, which
//! arrive one at a time, use the same instruction code with a single-packet lookup
//! ([`single`]).
//!
//! Memory: a 100K-flow table's index, rules and counters are tens of megabytes, read at
//! random, so a packet's lookup, rule and counters are three dependent cache misses. What
//! decides the rate is how many misses are in flight at once. A software prefetch that finds
//! the core's miss buffers full is dropped, so prefetching a whole stage's lines in one loop
//! brings in only the first few dozen; the classifier prefetches an index bucket a fixed
//! distance ahead of its probe instead, and a large table's stage loads its matched rules in a
//! pass of independent loads (which wait for a buffer instead of being dropped, and which the
//! core runs far ahead of each other), prefetching each rule's counter cell as its rule
//! arrives, before the pass that runs the packets. On traces that visit 100K flows in random
//! order this took L2/100K from 10 to 15 and L3/100K from 6.4 to 9.5 Mpps on the shared
//! test machine (docs/bench/table2.md).

mod by_port;
mod exec;
mod output;
mod single;

pub(crate) use single::{generate, packet_out, process_normal};

use crate::actions::{ActionSet, Frame};
use crate::batch::{PacketBatch, PacketSink};
use crate::classifier::{LookupScratch, NO_RULE};
use crate::counters::{Shard, ShardLease};
use crate::isa::Isa;
use crate::key::{frag, FlowKey, ParseDepth, Words};
use crate::model::FragHandling;
use crate::parse::{parse_to, ParseStats};
use crate::program::flag;
use crate::shared::Shared;
use crate::snapshot::{FlowEntry, FlowTable, Snapshot};
use std::sync::atomic::Ordering::Relaxed;

/// Headroom of the copy buffers (group buckets, packet-out, InSP).
const COPY_HEADROOM: usize = crate::batch::DEFAULT_HEADROOM;
/// Nesting budget for groups, OUTPUT TABLE and InSP inside each other.
const MAX_DEPTH: u8 = 6;
/// Copy buffers per reader: one per nesting level plus one.
const POOL_SIZE: usize = MAX_DEPTH as usize + 2;
/// Packets a pass through the stages handles; larger batches are processed in windows.
const WINDOW: usize = 256;

/// Drops counted locally during a batch, flushed to [`Shared`] once.
#[derive(Debug, Default)]
struct Drops {
    malformed: u64,
    no_match: u64,
    invalid_ttl: u64,
    meter: u64,
    insp_failed: u64,
    other: u64,
}

/// A reader's preallocated per-batch working memory. Per-packet state lives in arrays of
/// exactly [`WINDOW`] entries indexed by a `u8`, so no access needs a bounds check.
#[derive(Debug)]
pub(crate) struct Scratch {
    pkts: Box<[PacketState; WINDOW]>,
    sets: Box<[ActionSet; WINDOW]>,
    stages: Stages,
    /// The packets of the current stage.
    sel: Selection,
    /// Each selected packet's matched rule slot.
    slots: Vec<u32>,
    lookup: LookupScratch,
    parse: ParseStats,
    pool: Vec<Vec<u8>>,
    drops: Drops,
    tally: Box<Tally>,
    by_port: Box<by_port::ByPort>,
}

/// One packet's progress through the pipeline (kept together: one bounds check, few lines).
#[derive(Clone, Copy, Debug, Default)]
struct PacketState {
    key: FlowKey,
    /// The frame's position in its slot buffer (pushes and pops move it).
    start: u32,
    len: u32,
}

/// A boxed array of `WINDOW` copies of `value` (built on the heap: the arrays are large).
fn window_array<T: Clone>(value: T) -> Box<[T; WINDOW]> {
    let v: Box<[T]> = vec![value; WINDOW].into_boxed_slice();
    match v.try_into() {
        Ok(a) => a,
        Err(_) => unreachable!("a vector of WINDOW elements converts to [T; WINDOW]"),
    }
}

impl Scratch {
    pub fn new(max_frame: usize) -> Self {
        Scratch {
            pkts: window_array(PacketState::default()),
            sets: window_array(ActionSet::default()),
            stages: Stages::default(),
            sel: Selection::default(),
            slots: vec![NO_RULE; WINDOW],
            lookup: LookupScratch::default(),
            parse: ParseStats::default(),
            pool: (0..POOL_SIZE)
                .map(|_| vec![0; COPY_HEADROOM + max_frame])
                .collect(),
            drops: Drops::default(),
            tally: Box::default(),
            by_port: Box::default(),
        }
    }

    pub fn parse_stats(&self) -> &ParseStats {
        &self.parse
    }
}

/// Some of the window's packets, in window order.
#[derive(Debug)]
struct Selection {
    idx: [u8; WINDOW],
    len: usize,
}

impl Default for Selection {
    fn default() -> Self {
        Selection {
            idx: [0; WINDOW],
            len: 0,
        }
    }
}

impl Selection {
    /// Appends `i` if `keep`, without a branch: which packets are kept depends on their
    /// data, and a mispredicted branch per packet costs more than the store.
    #[inline(always)]
    fn push_if(&mut self, i: u8, keep: bool) {
        self.idx[self.len & (WINDOW - 1)] = i;
        self.len += usize::from(keep);
    }

    /// Selects the window's first `n` packets, in order.
    #[inline(always)]
    fn take_all(&mut self, n: usize) {
        self.idx = WINDOW_ORDER;
        self.len = n.min(WINDOW);
    }

    /// The `k`th selected packet for `k` below the length (an index, masked into the array,
    /// that needs no bounds check).
    #[inline(always)]
    fn nth(&self, k: usize) -> u8 {
        self.idx[k & (WINDOW - 1)]
    }

    fn as_slice(&self) -> &[u8] {
        self.idx.get(..self.len).unwrap_or(&self.idx)
    }
}

/// The tables packets wait at: each packet's next table, and the set of tables some packet
/// waits at. Goto-table only goes forward, so taking the lowest pending table each time
/// visits every table at most once per window, and a packet's entry for a table already
/// visited can never be taken for a later one.
#[derive(Debug)]
struct Stages {
    pending: [u64; 4],
    at: [u8; WINDOW],
    /// Every packet of the window waits at the one pending table (so its stage takes them
    /// all without a scan).
    whole: bool,
}

/// Every window index in order.
const WINDOW_ORDER: [u8; WINDOW] = {
    let mut order = [0u8; WINDOW];
    let mut i = 0;
    while i < WINDOW {
        order[i] = i as u8;
        i += 1;
    }
    order
};

/// `Stages::at` of a packet waiting nowhere (table ids stop at 0xfe).
const NOWHERE: u8 = u8::MAX;

impl Default for Stages {
    fn default() -> Self {
        Stages {
            pending: [0; 4],
            at: [NOWHERE; WINDOW],
            whole: false,
        }
    }
}

impl Stages {
    /// Puts the packets among the first `n` that wait at `t` into `sel`, one step per entry.
    #[inline(always)]
    fn select(&self, t: u8, n: usize, sel: &mut Selection) {
        for (i, at) in self.at.iter().take(n).enumerate() {
            sel.push_if(i as u8, *at == t);
        }
    }

    /// [`Self::select`] for a stage of few packets (a gateway's per-customer tables): sixteen
    /// entries are compared at once and the loop runs once per packet found.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn select_few(&self, t: u8, n: usize, sel: &mut Selection) {
        use core::arch::x86_64::{
            _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
        };
        for (c, chunk) in self.at.chunks_exact(16).take(n.div_ceil(16)).enumerate() {
            // Entries at or after `n` hold NOWHERE (never a table), so whole chunks are read.
            // SAFETY: SSE2 is part of the x86_64 baseline; `chunk` is 16 readable bytes and
            // the load has no alignment requirement.
            let mut found = unsafe {
                let v = _mm_loadu_si128(chunk.as_ptr().cast());
                _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(t as i8))) as u32
            };
            while found != 0 {
                sel.push_if((c * 16 + found.trailing_zeros() as usize) as u8, true);
                found &= found - 1;
            }
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    fn select_few(&self, t: u8, n: usize, sel: &mut Selection) {
        self.select(t, n, sel);
    }

    /// Queues packet `i` at table `next`, a table after the current one (a program's goto
    /// only goes forward), or nowhere for [`NOWHERE`], whose pending bit `pop` ignores.
    #[inline(always)]
    fn push(&mut self, next: u8, i: u8) {
        let t = usize::from(next);
        self.pending[t >> 6] |= 1 << (t & 63);
        self.at[usize::from(i)] = next;
    }

    /// Notes whether all `n` packets of the window, `admitted` of which were queued, wait at
    /// one table.
    fn note_intake(&mut self, n: usize, admitted: usize) {
        let tables = self.pending.iter().map(|w| w.count_ones()).sum::<u32>();
        self.whole = admitted == n && tables == 1;
    }

    /// The lowest table with waiting packets, its packets among the window's first `n` put
    /// into `sel`.
    #[inline(always)]
    fn pop(&mut self, n: usize, sel: &mut Selection) -> Option<u8> {
        self.pending[usize::from(NOWHERE) >> 6] &= !(1 << (NOWHERE & 63));
        let w = self.pending.iter().position(|w| *w != 0)?;
        let word = self.pending.get_mut(w)?;
        let t = (w * 64) as u8 + word.trailing_zeros() as u8;
        *word &= *word - 1;
        if std::mem::take(&mut self.whole) {
            sel.take_all(n);
            return Some(t);
        }
        sel.len = 0;
        // With packets spread over several more tables, this stage has few of them. (Two
        // bits or more, tested without counting them: the x86-64 baseline has no popcnt.)
        let spread = self.pending.iter().any(|w| w & w.wrapping_sub(1) != 0)
            || self.pending.iter().filter(|w| **w != 0).count() >= 2;
        if spread {
            self.select_few(t, n, sel);
        } else {
            self.select(t, n, sel);
        }
        Some(t)
    }
}

/// Where a packet is in the pipeline, for packet-ins and port checks.
#[derive(Clone, Copy, Debug)]
struct Meta<'e> {
    in_port: u32,
    table: u8,
    entry: Option<&'e FlowEntry>,
    queue: Option<u32>,
}

impl<'e> Meta<'e> {
    /// A packet that matched `entry` in `table`.
    #[inline(always)]
    fn of_entry(key: &FlowKey, entry: &'e FlowEntry, table: u8) -> Self {
        Meta {
            in_port: key.in_port,
            table,
            entry: Some(entry),
            queue: None,
        }
    }

    /// A packet handled without a flow entry (packet-out, fail-standalone NORMAL).
    fn outside_tables(in_port: u32) -> Self {
        Meta {
            in_port,
            table: 0,
            entry: None,
            queue: None,
        }
    }

    /// The cookie of the entry whose action sent the packet (for its packet-in; all-ones
    /// outside the tables).
    fn cookie(&self) -> u64 {
        self.entry.map_or(u64::MAX, |e| e.cookie)
    }

    /// Whether the packet is at a table-miss entry (its packet-in reports NO_MATCH).
    fn table_miss(&self) -> bool {
        self.entry.is_some_and(|e| e.program.table_miss)
    }
}

/// What the rest of the pipeline should do with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Continue,
    Drop,
}

/// Everything action execution needs besides the packet itself.
struct Env<'a, S> {
    state: &'a Snapshot,
    shared: &'a Shared,
    shard: Shard,
    now: u64,
    sink: &'a mut S,
    pool: &'a mut Vec<Vec<u8>>,
    drops: &'a mut Drops,
    parse: &'a mut ParseStats,
    depth: u8,
    /// [`Snapshot::writes_action_sets`]: when false, packets' action sets are never written,
    /// so they are neither cleared nor read.
    action_sets: bool,
}

fn flush(shared: &Shared, drops: &mut Drops) {
    let d = &shared.drops;
    for (counter, n) in [
        (&d.malformed, drops.malformed),
        (&d.no_match, drops.no_match),
        (&d.invalid_ttl, drops.invalid_ttl),
        (&d.meter, drops.meter),
        (&d.insp_failed, drops.insp_failed),
        (&d.other, drops.other),
    ] {
        if n != 0 {
            counter.fetch_add(n, Relaxed);
        }
    }
    *drops = Drops::default();
}

/// What one call of the pipeline works on: the snapshot, the reader's own state, the batch
/// and where its results go.
pub(crate) struct Job<'a, S> {
    pub state: &'a Snapshot,
    pub shared: &'a Shared,
    pub lease: &'a ShardLease,
    pub scratch: &'a mut Scratch,
    pub now: u64,
    pub batch: &'a mut PacketBatch,
    pub sink: &'a mut S,
}

/// Runs a batch through the pipeline, in `isa`'s copy of the loop.
pub(crate) fn process<S: PacketSink>(isa: Isa, job: Job<'_, S>) {
    match isa {
        // SAFETY: a reader's `Isa` is X86_64V3 only when `Isa::detect` found the features
        // `x86_64_v3!` compiles for.
        #[cfg(target_arch = "x86_64")]
        Isa::X86_64V3 => unsafe { process_v3(job) },
        _ => process_baseline(job),
    }
}

/// The pipeline compiled for the x86-64 baseline (any other architecture's default).
#[inline(never)]
fn process_baseline<S: PacketSink>(job: Job<'_, S>) {
    process_windows::<S, false>(job);
}

crate::isa::x86_64_v3! {
    /// The pipeline compiled for x86-64-v3 (see [`crate::isa`]).
    #[inline(never)]
    fn process_v3<S: PacketSink>(job: Job<'_, S>) {
        process_windows::<S, true>(job);
    }
}

/// The classifier's batch lookup in the pipeline copy for x86-64-v3 (`V3`) or the baseline.
#[inline(always)]
fn classify<'k, const V3: bool>(
    table: &FlowTable,
    n: usize,
    key: impl Fn(usize) -> &'k Words,
    out: &mut [u32],
    scratch: &mut LookupScratch,
) {
    #[cfg(target_arch = "x86_64")]
    if V3 {
        // SAFETY: only `process_v3` runs the pipeline with `V3`, and only where the CPU has
        // x86-64-v3.
        return unsafe { table.lookup_batch_v3(n, key, out, scratch) };
    }
    table.lookup_batch(n, key, out, scratch);
}

/// Runs a batch through the pipeline window by window.
#[inline(always)]
fn process_windows<S: PacketSink, const V3: bool>(job: Job<'_, S>) {
    let Job {
        state,
        shared,
        lease,
        scratch,
        now,
        batch,
        sink,
    } = job;
    let mut base = 0;
    while base < batch.len() {
        let n = (batch.len() - base).min(WINDOW);
        process_window::<S, V3>(state, shared, lease, scratch, now, batch, base, n, sink);
        base += n;
    }
    flush(shared, &mut scratch.drops);
}

/// Runs packets `base..base + n` (at most [`WINDOW`]) of a batch through the pipeline.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn process_window<S: PacketSink, const V3: bool>(
    state: &Snapshot,
    shared: &Shared,
    lease: &ShardLease,
    scratch: &mut Scratch,
    now: u64,
    batch: &mut PacketBatch,
    base: usize,
    n: usize,
    sink: &mut S,
) {
    let depth = state.parse_depth();
    let Scratch {
        pkts,
        sets,
        stages,
        sel,
        slots,
        lookup,
        parse,
        pool,
        drops,
        tally,
        by_port,
    } = scratch;
    let shard = lease.shard();
    let mut env = Env {
        state,
        shared,
        shard,
        now,
        sink,
        pool,
        drops,
        parse,
        depth: MAX_DEPTH,
        action_sets: state.writes_action_sets(),
    };
    let mut w = Window {
        pkts,
        sets,
        stages,
        tally,
        batch,
        base,
    };
    w.stages.at.fill(NOWHERE);
    let mut intake = Intake::new(state, shard);
    let admitted = match state.table(0).filter(|t| t.keyed_by_in_port()) {
        Some(t0) => {
            let admitted = w.take_in(&mut env, &mut intake, n, depth, |key, len, tally| {
                by_port.first_table(t0, key, len, shard, tally)
            });
            by_port.flush(shard, w.tally);
            admitted
        }
        None => w.take_in(&mut env, &mut intake, n, depth, |_, _, _| 0),
    };
    w.stages.note_intake(n, admitted);
    while let Some(table_id) = w.stages.pop(n, sel) {
        let picked = sel.as_slice();
        let Some(table) = state.table(table_id) else {
            env.drops.other += picked.len() as u64;
            continue;
        };
        let (pkts, chosen) = (&*w.pkts, &*sel);
        classify::<V3>(
            table,
            picked.len(),
            |k| pkts[usize::from(chosen.nth(k))].key.words(),
            slots,
            lookup,
        );
        let hits = slots.get(..picked.len()).unwrap_or(&[]);
        w.tally.lookups(table_id, picked.len());
        if table.is_large() {
            // The stage's rules and counters are loaded before any packet runs, in passes of
            // independent loads, so that their cache misses overlap (see "Memory" above).
            for &s in hits {
                table.prefetch_payload(s);
            }
            for &s in hits {
                load_counters(table, s, shard);
            }
            for (&i, &s) in picked.iter().zip(hits) {
                w.visit(&mut env, table, table_id, i, s);
            }
        } else {
            for (&i, &s) in picked.iter().zip(hits) {
                w.visit(&mut env, table, table_id, i, s);
            }
        }
    }
    w.tally.flush(shared, shard);
}

/// The packets of a window on their way through the tables.
struct Window<'w> {
    pkts: &'w mut [PacketState; WINDOW],
    sets: &'w mut [ActionSet; WINDOW],
    stages: &'w mut Stages,
    tally: &'w mut Tally,
    batch: &'w mut PacketBatch,
    base: usize,
}

impl Window<'_> {
    /// Parses and admits the window's `n` received packets, each queued at the table
    /// `first` names for it; returns how many were admitted.
    #[inline(always)]
    fn take_in<S: PacketSink>(
        &mut self,
        env: &mut Env<'_, S>,
        intake: &mut Intake<'_>,
        n: usize,
        depth: ParseDepth,
        mut first: impl FnMut(&FlowKey, u32, &mut Tally) -> u8,
    ) -> usize {
        let mut admitted = 0;
        for k in 0..n.min(WINDOW) {
            // A window's indexes fit a `u8` (the range itself must not: 256 as u8 is 0).
            let i = k as u8;
            let Some((slot, frame)) = self.batch.received(self.base + usize::from(i)) else {
                continue;
            };
            let p = &mut self.pkts[usize::from(i)];
            let (drops, parse) = (&mut *env.drops, &mut *env.parse);
            if !intake.admit(drops, parse, slot.in_port, frame, depth, &mut p.key) {
                continue;
            }
            if env.action_sets {
                self.sets[usize::from(i)].clear();
            }
            p.start = slot.start;
            p.len = slot.len;
            let t = first(&p.key, slot.len, self.tally);
            self.stages.push(t, i);
            admitted += 1;
        }
        admitted
    }

    /// Runs packet `i`'s entry in `slot` of table `table_id` and queues the packet at the
    /// table its goto names.
    #[inline(always)]
    fn visit<S: PacketSink>(
        &mut self,
        env: &mut Env<'_, S>,
        table: &FlowTable,
        table_id: u8,
        i: u8,
        slot: u32,
    ) {
        let p = &mut self.pkts[usize::from(i)];
        let Some(entry) = table.payload(slot) else {
            self.tally.miss(table_id);
            env.drops.no_match += 1;
            return;
        };
        entry.cell.hit(env.shard, u64::from(p.len));
        let program = &entry.program;
        let next = if program.flags & flag::GOTO_ONLY != 0 {
            program.goto
        } else {
            let buf = self.batch.slot_buffer_mut(self.base + usize::from(i));
            let Some(mut frame) = buf.and_then(|b| Frame::new(b, p.start as usize, p.len as usize))
            else {
                return;
            };
            let set = &mut self.sets[usize::from(i)];
            let next = exec::run_entry(env, &mut frame, &mut p.key, set, entry, table_id);
            p.start = frame.start() as u32;
            p.len = frame.len() as u32;
            next.unwrap_or(NOWHERE)
        };
        self.stages.push(next, i);
    }
}

/// Lookups and misses per table during a window, added to the shared table counters once
/// at its end (a hit costs one increment; misses are rare).
#[derive(Debug)]
struct Tally {
    lookups: [u64; 256],
    misses: [u64; 256],
    touched: [u64; 4],
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            lookups: [0; 256],
            misses: [0; 256],
            touched: [0; 4],
        }
    }
}

impl Tally {
    #[inline(always)]
    fn lookups(&mut self, table: u8, n: usize) {
        let t = usize::from(table);
        self.touched[t >> 6] |= 1 << (t & 63);
        self.lookups[t] += n as u64;
    }

    #[inline(never)]
    fn miss(&mut self, table: u8) {
        self.misses[usize::from(table)] += 1;
    }

    fn flush(&mut self, shared: &Shared, shard: Shard) {
        for (w, word) in self.touched.iter_mut().enumerate() {
            while *word != 0 {
                let t = w * 64 + word.trailing_zeros() as usize;
                *word &= *word - 1;
                let (Some(c), Some(n), Some(m)) = (
                    shared.tables.get(t),
                    self.lookups.get_mut(t),
                    self.misses.get_mut(t),
                ) else {
                    continue;
                };
                c.add(shard, *n, *n - *m);
                (*n, *m) = (0, 0);
            }
        }
    }
}

/// Loads the rule in `slot` (its counter cell's address is in it) and hints the CPU to load
/// the reader's counter cell.
#[inline(always)]
fn load_counters(table: &FlowTable, slot: u32, shard: Shard) {
    if let Some(entry) = table.payload(slot) {
        entry.cell.prefetch(shard);
    }
}

/// Intake of received frames: counts each on its port, refuses it when the port does not
/// receive, parses it and applies the fragment policy. The port is looked up for every
/// packet (a dense table): a batch from a trunk mixes many logical ports, and remembering the
/// previous packet's port mispredicts whenever they alternate.
struct Intake<'s> {
    state: &'s Snapshot,
    shard: Shard,
}

impl<'s> Intake<'s> {
    fn new(state: &'s Snapshot, shard: Shard) -> Self {
        Intake { state, shard }
    }

    /// False: the frame is dropped (and counted).
    #[inline(always)]
    fn admit(
        &mut self,
        drops: &mut Drops,
        parse: &mut ParseStats,
        in_port: u32,
        frame: &[u8],
        depth: ParseDepth,
        key: &mut FlowKey,
    ) -> bool {
        let port = self.state.ports.get(in_port);
        let len = frame.len() as u64;
        if let Some(port) = port {
            port.rx.hit(self.shard, len);
            if port.info.config.no_recv || port.info.config.down {
                port.counters.rx_dropped.add(self.shard, 1, len);
                drops.other += 1;
                return false;
            }
        }
        let outcome = parse_to(frame, in_port, depth, key);
        parse.record(outcome);
        if outcome.is_err() {
            drops.malformed += 1;
            return false;
        }
        let dropped_fragment = self.state.config.frag == FragHandling::Drop
            && key.layout.frag & frag::IS_FRAGMENT != 0;
        if dropped_fragment {
            drops.other += 1;
        }
        !dropped_fragment
    }
}
