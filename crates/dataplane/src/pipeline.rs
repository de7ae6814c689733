//! The OpenFlow 1.3 pipeline (spec section 5): tables, instructions, the action set, outputs.
//!
//! A batch moves through the tables stage by stage: goto-table only goes forward, so the
//! datapath repeatedly takes the lowest table any live packet is waiting at, classifies all
//! those packets together (one batched, prefetching lookup), and runs their instructions.
//! Packet-out and InSP-generated packets, which arrive one at a time, use the same instruction
//! code with a single-packet lookup.

use crate::actions::{self, ActionSet, Frame, InvalidTtl};
use crate::batch::{PacketBatch, PacketInEvent, PacketInReason, PacketSink, NO_BUFFER};
use crate::classifier::{LookupScratch, Words, NO_RULE};
use crate::counters::ShardLease;
use crate::datapath::{FlowId, FragHandling, Shared};
use crate::group::{self, Choice};
use crate::ir::{port, Action, NO_BUFFER_MAX_LEN};
use crate::key::{frag, Field, FieldValue, FlowKey, ParseDepth};
use crate::meter::{increase_drop_precedence, MeterVerdict};
use crate::normal::{Forward, TagOp};
use crate::parse::{parse_to, ParseStats};
use crate::program::Step;
use crate::state::{FlowEntry, PortEntry, State};
use std::sync::atomic::Ordering::Relaxed;

/// Headroom of the copy buffers (group buckets, packet-out, InSP).
const COPY_HEADROOM: usize = crate::batch::DEFAULT_HEADROOM;
/// Nesting budget for groups, OUTPUT TABLE and InSP inside each other.
const MAX_DEPTH: u8 = 6;
/// Copy buffers per reader: one per nesting level plus one.
const POOL_SIZE: usize = MAX_DEPTH as usize + 2;
/// Tables with more rules than this get their matched entries prefetched (smaller ones stay
/// in cache).
const PREFETCH_ABOVE: usize = 2048;
/// Most buckets one group executes.
const MAX_BUCKETS: usize = 64;

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

/// A reader's preallocated per-batch working memory.
#[derive(Debug)]
pub(crate) struct Scratch {
    pkts: Vec<PacketState>,
    /// The table each packet waits at, or [`DONE`] (compact: scanned once per stage).
    at: Vec<u8>,
    sets: Vec<ActionSet>,
    sel: Vec<u16>,
    slots: Vec<u32>,
    lookup: LookupScratch,
    parse: ParseStats,
    pool: Vec<Vec<u8>>,
    drops: Drops,
}

/// One packet's progress through the pipeline (kept together: one bounds check, few lines).
#[derive(Clone, Copy, Debug, Default)]
struct PacketState {
    key: FlowKey,
    /// The frame's position in its batch buffer (pushes and pops move it).
    start: u32,
    len: u32,
}

/// `Scratch::at` value of a packet that left the pipeline (table ids stop at 0xfe).
const DONE: u8 = u8::MAX;

impl Scratch {
    pub fn new(max_frame: usize) -> Self {
        const RESERVE: usize = 256;
        Scratch {
            pkts: Vec::with_capacity(RESERVE),
            at: Vec::with_capacity(RESERVE),
            sets: Vec::with_capacity(RESERVE),
            sel: Vec::with_capacity(RESERVE),
            slots: Vec::with_capacity(RESERVE),
            lookup: LookupScratch::default(),
            parse: ParseStats::default(),
            pool: (0..POOL_SIZE)
                .map(|_| vec![0; COPY_HEADROOM + max_frame])
                .collect(),
            drops: Drops::default(),
        }
    }

    pub fn parse_stats(&self) -> &ParseStats {
        &self.parse
    }
}

/// Where a packet is in the pipeline, for packet-ins and port checks.
#[derive(Clone, Copy, Debug)]
struct Meta {
    in_port: u32,
    table: u8,
    flow: Option<FlowId>,
    table_miss: bool,
    queue: Option<u32>,
}

impl Meta {
    /// A packet handled without a flow entry (packet-out, fail-standalone NORMAL).
    fn outside_tables(in_port: u32) -> Self {
        Meta {
            in_port,
            table: 0,
            flow: None,
            table_miss: false,
            queue: None,
        }
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
    state: &'a State,
    shared: &'a Shared,
    lease: &'a ShardLease,
    now: u64,
    sink: &'a mut S,
    pool: &'a mut Vec<Vec<u8>>,
    drops: &'a mut Drops,
    parse: &'a mut ParseStats,
    depth: u8,
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

static ZERO_WORDS: Words = [0; crate::key::KEY_WORDS];

/// Runs a batch through the pipeline.
#[inline(never)]
pub(crate) fn process<S: PacketSink>(
    state: &State,
    shared: &Shared,
    lease: &ShardLease,
    scratch: &mut Scratch,
    now: u64,
    batch: &mut PacketBatch,
    sink: &mut S,
) {
    let n = batch.len();
    let depth = state.parse_depth();
    let Scratch {
        pkts,
        at,
        sets,
        sel,
        slots,
        lookup,
        parse,
        pool,
        drops,
    } = scratch;
    pkts.resize(n, PacketState::default());
    at.clear();
    at.resize(n, DONE);
    sets.resize_with(n, ActionSet::default);
    slots.resize(n, NO_RULE);

    let mut intake = Intake::new(state, lease);
    for (i, ((p, set), table)) in pkts
        .iter_mut()
        .zip(sets.iter_mut())
        .zip(at.iter_mut())
        .enumerate()
    {
        let (Some(slot), Some((buf, start, len))) = (batch.slot(i), batch.buffer_mut(i)) else {
            continue;
        };
        let frame = buf.get(start..start + len).unwrap_or(&[]);
        if !intake.admit(drops, parse, slot.in_port, frame, depth, &mut p.key) {
            continue;
        }
        set.clear();
        p.start = start as u32;
        p.len = len as u32;
        *table = 0;
    }

    let mut env = Env {
        state,
        shared,
        lease,
        now,
        sink,
        pool,
        drops,
        parse,
        depth: MAX_DEPTH,
    };
    loop {
        let table_id = at.iter().copied().min().unwrap_or(DONE);
        if table_id == DONE {
            break;
        }
        sel.clear();
        for (i, &t) in at.iter().enumerate() {
            if t == table_id {
                sel.push(i as u16);
            }
        }
        let Some(table) = state.table(table_id) else {
            for &i in sel.iter() {
                if let Some(t) = at.get_mut(usize::from(i)) {
                    *t = DONE;
                }
            }
            env.drops.other += sel.len() as u64;
            continue;
        };
        table.lookup_batch(
            sel.len(),
            |k| {
                sel.get(k)
                    .and_then(|&i| pkts.get(usize::from(i)))
                    .map_or(&ZERO_WORDS, |p| p.key.words())
            },
            slots,
            lookup,
        );
        let hits = slots.get(..sel.len()).unwrap_or(&[]);
        if table.len() > PREFETCH_ABOVE {
            // Large table: start loading every matched entry, then its counters, before
            // touching any, so their cache misses overlap.
            for &s in hits {
                table.prefetch_rule(s);
            }
            for &s in hits {
                if let Some(rule) = table.rule(s) {
                    crate::classifier::hash::prefetch_read(&*rule.payload.counters);
                }
            }
        }
        let mut matched = 0u64;
        for (&i, &s) in sel.iter().zip(hits) {
            let i = usize::from(i);
            let (Some(p), Some(set), Some(at_i), Some((buf, _, _))) = (
                pkts.get_mut(i),
                sets.get_mut(i),
                at.get_mut(i),
                batch.buffer_mut(i),
            ) else {
                continue;
            };
            let Some(rule) = table.rule(s) else {
                *at_i = DONE;
                env.drops.no_match += 1;
                continue;
            };
            matched += 1;
            let entry = &rule.payload;
            entry.counters.hit(lease, u64::from(p.len), now);
            let mut frame = Frame {
                buf,
                start: p.start as usize,
                len: p.len as usize,
            };
            let next = run_entry(&mut env, &mut frame, &mut p.key, set, entry, table_id);
            p.start = frame.start as u32;
            p.len = frame.len as u32;
            match next {
                Some(g) if g > table_id && g != DONE => *at_i = g,
                _ => *at_i = DONE,
            }
        }
        if let Some(c) = shared.tables.get(usize::from(table_id)) {
            c.add(sel.len() as u64, matched);
        }
    }
    flush(shared, drops);
}

/// Intake of received frames: counts each on its port (remembering the previous packet's
/// port, as a batch usually comes from one), refuses it when the port does not receive,
/// parses it and applies the fragment policy.
struct Intake<'s> {
    state: &'s State,
    lease: &'s ShardLease,
    last: Option<(u32, Option<&'s PortEntry>)>,
}

impl<'s> Intake<'s> {
    fn new(state: &'s State, lease: &'s ShardLease) -> Self {
        Intake {
            state,
            lease,
            last: None,
        }
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
        let port = match self.last {
            Some((p, e)) if p == in_port => e,
            _ => {
                let e = self.state.ports.get(in_port);
                self.last = Some((in_port, e));
                e
            }
        };
        let len = frame.len() as u64;
        if let Some(port) = port {
            port.counters.rx.add(self.lease, 1, len);
            if port.info.config.no_recv || port.info.config.down {
                port.counters.rx_dropped.add(self.lease, 1, len);
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

/// The environment of the per-packet paths (standalone NORMAL, packet-out): the reader's
/// copy pool and drop counters, the full nesting budget.
fn single_env<'a, S>(
    state: &'a State,
    shared: &'a Shared,
    lease: &'a ShardLease,
    scratch: &'a mut Scratch,
    now: u64,
    sink: &'a mut S,
) -> Env<'a, S> {
    Env {
        state,
        shared,
        lease,
        now,
        sink,
        pool: &mut scratch.pool,
        drops: &mut scratch.drops,
        parse: &mut scratch.parse,
        depth: MAX_DEPTH,
    }
}

/// Runs a batch through NORMAL alone (fail-standalone with no controller): the same intake
/// and counters as [`process`], then the legacy learning switch instead of the tables.
pub(crate) fn process_normal<S: PacketSink>(
    state: &State,
    shared: &Shared,
    lease: &ShardLease,
    scratch: &mut Scratch,
    now: u64,
    batch: &PacketBatch,
    sink: &mut S,
) {
    let mut env = single_env(state, shared, lease, scratch, now, sink);
    let mut intake = Intake::new(state, lease);
    let mut key = FlowKey::default();
    for i in 0..batch.len() {
        let Some((in_port, frame)) = batch.packet(i) else {
            continue;
        };
        let (drops, parse) = (&mut *env.drops, &mut *env.parse);
        if !intake.admit(drops, parse, in_port, frame, ParseDepth::L2, &mut key) {
            continue;
        }
        normal(&mut env, frame, &key, &Meta::outside_tables(in_port));
    }
    flush(shared, env.drops);
}

/// Runs a matched entry's instructions; returns the table to continue at, or `None` when the
/// packet is finished (action set executed, or dropped).
fn run_entry<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    set: &mut ActionSet,
    entry: &FlowEntry,
    table: u8,
) -> Option<u8> {
    if entry.program.goto_only {
        return entry.program.goto;
    }
    let mut meta = Meta {
        in_port: key.in_port,
        table,
        flow: Some(entry.id),
        table_miss: entry.table_miss,
        queue: None,
    };
    let program = &entry.program;
    if let Some(id) = program.meter {
        if let Some(meter) = env.state.meters.get(id) {
            match meter.apply(env.now, frame.len) {
                MeterVerdict::Pass => {}
                MeterVerdict::Drop => {
                    env.drops.meter += 1;
                    return None;
                }
                MeterVerdict::RemarkDscp { prec_level } => {
                    // The tables may not have needed the IP header: read the DSCP first.
                    actions::ensure_depth(frame, key, ParseDepth::L3);
                    if key.eth_type == 0x0800 || key.eth_type == 0x86dd {
                        let dscp = increase_drop_precedence(key.ip_dscp, prec_level);
                        actions::set_field(frame, key, Field::IpDscp, FieldValue::from(dscp));
                    }
                }
            }
        }
    }
    let apply = program.apply();
    if !apply.is_empty() && apply_list(env, frame, key, &mut meta, apply) == Verdict::Drop {
        return None;
    }
    if let Some(step) = &program.insp {
        insp(env, frame, key, &meta, step.template_id, &step.actions);
    }
    if program.clear {
        set.clear();
    }
    if let Some((value, mask)) = program.metadata {
        key.metadata = (key.metadata & !mask) | (value & mask);
    }
    if program.has_write {
        if program.goto.is_none() && set.is_empty() {
            // The set would hold exactly these actions and run now: run them directly.
            run_sorted(env, frame, key, &mut meta, program.write());
            return None;
        }
        for step in program.write() {
            set.write_one(Action::from(*step));
        }
    }
    if program.goto.is_none() && !set.is_empty() {
        run_action_set(env, frame, key, set, &mut meta);
    }
    program.goto
}

fn run_action_set<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    set: &ActionSet,
    meta: &mut Meta,
) {
    set.for_each(|a| apply_one(env, frame, key, meta, Step::from(a), true) == Verdict::Continue);
}

fn apply_list<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    meta: &mut Meta,
    list: &[Step],
) -> Verdict {
    for step in list {
        if apply_one(env, frame, key, meta, *step, false) == Verdict::Drop {
            return Verdict::Drop;
        }
    }
    Verdict::Continue
}

/// [`apply_list`] for IR actions not compiled ahead (packet-out, InSP).
fn apply_actions<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    meta: &mut Meta,
    list: &[Action],
) -> Verdict {
    for a in list {
        if apply_one(env, frame, key, meta, Step::from(*a), false) == Verdict::Drop {
            return Verdict::Drop;
        }
    }
    Verdict::Continue
}

/// Applies one action. `last` means the packet is not used afterwards, so a group may run
/// its (single) bucket on it in place instead of on a copy.
#[inline(always)]
fn apply_one<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    meta: &mut Meta,
    step: Step,
    last: bool,
) -> Verdict {
    match step {
        // Physical ports first: one compare instead of the reserved-port match.
        Step::Output(port) if port <= port::MAX && port != meta.in_port => {
            transmit(env, port, frame.bytes(), meta)
        }
        Step::Output(port) => output(env, frame.bytes(), key, meta, port, 0),
        Step::Controller(max_len) => {
            output(env, frame.bytes(), key, meta, port::CONTROLLER, max_len)
        }
        Step::Group(id) => run_group(env, frame, key, meta, id, last),
        Step::SetQueue(q) => meta.queue = Some(q),
        Step::SetEthDst(mac) => {
            key.eth_dst = mac;
            frame.put_mac(0, mac);
        }
        Step::SetEthSrc(mac) => {
            key.eth_src = mac;
            frame.put_mac(6, mac);
        }
        Step::DecNwTtl => {
            let r = actions::dec_nw_ttl(frame, key);
            return ttl_result(env, frame, key, meta, r);
        }
        Step::Other(action) => return edit(env, frame, key, meta, action),
    }
    Verdict::Continue
}

/// Header-rewriting actions (kept out of line so the common output path stays small).
#[inline(never)]
fn edit<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    meta: &mut Meta,
    action: Action,
) -> Verdict {
    let ok = match action {
        Action::Output { .. } | Action::Group(_) | Action::SetQueue(_) => true,
        Action::SetField(f, v) => {
            actions::set_field(frame, key, f, v);
            true
        }
        Action::PushVlan(e) => actions::push_vlan(frame, key, e),
        Action::PopVlan => {
            actions::pop_vlan(frame, key);
            true
        }
        Action::PushMpls(e) => actions::push_mpls(frame, key, e),
        Action::PopMpls(e) => {
            actions::pop_mpls(frame, key, e);
            true
        }
        Action::PushPbb(e) => actions::push_pbb(frame, key, e),
        Action::PopPbb => {
            actions::pop_pbb(frame, key);
            true
        }
        Action::SetMplsTtl(t) => {
            actions::set_mpls_ttl(frame, key, t);
            true
        }
        Action::SetNwTtl(t) => {
            actions::set_nw_ttl(frame, key, t);
            true
        }
        Action::DecMplsTtl => {
            let r = actions::dec_mpls_ttl(frame, key);
            return ttl_result(env, frame, key, meta, r);
        }
        Action::DecNwTtl => {
            let r = actions::dec_nw_ttl(frame, key);
            return ttl_result(env, frame, key, meta, r);
        }
        Action::CopyTtlOut => {
            actions::copy_ttl_out(frame, key);
            true
        }
        Action::CopyTtlIn => {
            actions::copy_ttl_in(frame, key);
            true
        }
    };
    if ok {
        Verdict::Continue
    } else {
        // No headroom left for a push: the packet cannot be built, drop it.
        env.drops.other += 1;
        Verdict::Drop
    }
}

fn ttl_result<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &Frame<'_>,
    key: &FlowKey,
    meta: &Meta,
    r: Result<(), InvalidTtl>,
) -> Verdict {
    match r {
        Ok(()) => Verdict::Continue,
        Err(InvalidTtl) => {
            env.drops.invalid_ttl += 1;
            if env.state.config.invalid_ttl_to_controller {
                let max_len = env.state.config.miss_send_len;
                packet_in(
                    env,
                    frame.bytes(),
                    key,
                    meta,
                    PacketInReason::InvalidTtl,
                    max_len,
                );
            }
            Verdict::Drop
        }
    }
}

/// Sends on a port if it exists and forwards; counts either way.
fn transmit<S: PacketSink>(env: &mut Env<'_, S>, port_no: u32, frame: &[u8], meta: &Meta) {
    let Some(p) = env.state.ports.get(port_no) else {
        env.drops.other += 1;
        return;
    };
    if !p.forwards() {
        p.counters.tx_dropped.add(env.lease, 1, frame.len() as u64);
        return;
    }
    p.counters.tx.add(env.lease, 1, frame.len() as u64);
    match meta.queue {
        Some(q) => env.sink.output_queue(port_no, q, frame),
        None => env.sink.output(port_no, frame),
    }
}

fn output<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &[u8],
    key: &FlowKey,
    meta: &Meta,
    out_port: u32,
    max_len: u16,
) {
    match out_port {
        port::IN_PORT => transmit(env, meta.in_port, frame, meta),
        port::FLOOD | port::ALL => {
            let state = env.state;
            for (p, _) in state
                .ports
                .iter()
                .filter(|(p, e)| *p != meta.in_port && e.forwards())
            {
                transmit(env, p, frame, meta);
            }
        }
        port::CONTROLLER => {
            let reason = if meta.table_miss {
                PacketInReason::NoMatch
            } else {
                PacketInReason::Action
            };
            packet_in(env, frame, key, meta, reason, max_len);
        }
        port::LOCAL => env.sink.output(port::LOCAL, frame),
        port::TABLE => resubmit(env, frame, meta.in_port),
        port::NORMAL => normal(env, frame, key, meta),
        port::ANY => env.drops.other += 1,
        p if p == meta.in_port => env.drops.other += 1,
        p => transmit(env, p, frame, meta),
    }
}

#[inline(never)]
fn packet_in<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &[u8],
    key: &FlowKey,
    meta: &Meta,
    reason: PacketInReason,
    max_len: u16,
) {
    if env
        .state
        .ports
        .get(meta.in_port)
        .is_some_and(|p| p.info.config.no_packet_in)
    {
        return;
    }
    let mut buffer_id = NO_BUFFER;
    let mut data = frame;
    if max_len != NO_BUFFER_MAX_LEN {
        if let Some(id) = env.shared.buffers.store(frame, meta.in_port, env.now) {
            buffer_id = id;
            data = frame
                .get(..usize::from(max_len).min(frame.len()))
                .unwrap_or(frame);
        }
    }
    let ev = PacketInEvent {
        reason,
        table_id: meta.table,
        flow: meta.flow,
        buffer_id,
        total_len: u16::try_from(frame.len()).unwrap_or(u16::MAX),
        in_port: meta.in_port,
        in_phy_port: key.in_phy_port,
        metadata: key.metadata,
        tunnel_id: key.tunnel_id,
        data,
    };
    env.sink.packet_in(&ev);
}

/// Copies `frame` into a pool buffer and runs `f` on the copy; drops (counted) when the
/// nesting budget or the pool is exhausted.
#[inline(never)]
fn with_copy<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &[u8],
    f: impl FnOnce(&mut Env<'_, S>, &mut Frame<'_>),
) {
    if env.depth == 0 {
        env.drops.other += 1;
        return;
    }
    let Some(mut buf) = env.pool.pop() else {
        env.drops.other += 1;
        return;
    };
    if let Some(dst) = buf.get_mut(COPY_HEADROOM..COPY_HEADROOM + frame.len()) {
        dst.copy_from_slice(frame);
        let mut copy = Frame {
            buf: &mut buf,
            start: COPY_HEADROOM,
            len: frame.len(),
        };
        env.depth -= 1;
        f(env, &mut copy);
        env.depth += 1;
    } else {
        env.drops.other += 1;
    }
    env.pool.push(buf);
}

fn run_group<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    meta: &Meta,
    id: u32,
    in_place: bool,
) {
    let state = env.state;
    let Some(entry) = state.groups.get(id) else {
        env.drops.other += 1;
        return;
    };
    let g = &entry.group;
    if g.kind == crate::datapath::GroupType::Select {
        // The flow hash covers L3/L4 headers even when the matches did not need them.
        actions::ensure_depth(frame, key, ParseDepth::L4);
    }
    let len = frame.len as u64;
    g.counters.group.add(env.lease, 1, len);
    let (first, n) = match group::choose(state, g, key) {
        Choice::All => (0, g.buckets.len().min(MAX_BUCKETS)),
        Choice::One(b) => (b, 1),
        Choice::Nothing => {
            env.drops.other += 1;
            return;
        }
    };
    for (k, b) in (first..first + n).enumerate() {
        let Some(steps) = entry.steps.get(b) else {
            continue;
        };
        if let Some(c) = g.counters.buckets.get(b) {
            c.add(env.lease, 1, len);
        }
        let mut bucket_meta = *meta;
        if in_place && k + 1 == n && env.depth > 0 {
            env.depth -= 1;
            run_sorted(env, frame, key, &mut bucket_meta, steps);
            env.depth += 1;
        } else {
            let mut copy_key = *key;
            with_copy(env, frame.bytes(), |env, copy| {
                run_sorted(env, copy, &mut copy_key, &mut bucket_meta, steps);
            });
        }
    }
}

/// Runs actions already in action-set order (a bucket, or an entry's Write-Actions on an
/// empty set); the packet is finished afterwards.
fn run_sorted<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    meta: &mut Meta,
    list: &[Step],
) {
    let count = list.len();
    for (i, step) in list.iter().enumerate() {
        if apply_one(env, frame, key, meta, *step, i + 1 == count) == Verdict::Drop {
            return;
        }
    }
}

/// Runs one packet through the pipeline from table 0 (OUTPUT TABLE).
#[inline(never)]
fn resubmit<S: PacketSink>(env: &mut Env<'_, S>, frame: &[u8], in_port: u32) {
    with_copy(env, frame, |env, copy| {
        let mut key = FlowKey::default();
        let outcome = parse_to(copy.bytes(), in_port, ParseDepth::L4, &mut key);
        env.parse.record(outcome);
        if outcome.is_err() {
            env.drops.malformed += 1;
            return;
        }
        run_single(env, copy, &mut key);
    });
}

/// The single-packet pipeline (packet-out through TABLE, InSP).
#[inline(never)]
fn run_single<S: PacketSink>(env: &mut Env<'_, S>, frame: &mut Frame<'_>, key: &mut FlowKey) {
    let mut set = ActionSet::default();
    let mut table_id = 0u8;
    while let Some(table) = env.state.table(table_id) {
        let rule = table.lookup(key.words()).and_then(|s| table.rule(s));
        let Some(rule) = rule else {
            env.drops.no_match += 1;
            break;
        };
        let entry = &rule.payload;
        entry.counters.hit(env.lease, frame.len as u64, env.now);
        match run_entry(env, frame, key, &mut set, entry, table_id) {
            Some(next) if next > table_id => table_id = next,
            _ => break,
        }
    }
}

/// InSP: builds a packet from the template and the triggering packet and runs `list` on it.
#[inline(never)]
fn insp<S: PacketSink>(
    env: &mut Env<'_, S>,
    trigger: &Frame<'_>,
    key: &FlowKey,
    meta: &Meta,
    template_id: u32,
    list: &[Action],
) {
    let Some(template) = env.state.templates.get(template_id) else {
        env.drops.insp_failed += 1;
        return;
    };
    if env.depth == 0 {
        env.drops.other += 1;
        return;
    }
    let Some(mut buf) = env.pool.pop() else {
        env.drops.other += 1;
        return;
    };
    let generated = buf
        .get_mut(COPY_HEADROOM..)
        .map(|out| template.instantiate(trigger.bytes(), out));
    match generated {
        Some(Ok(len)) if len > 0 => {
            let mut frame = Frame {
                buf: &mut buf,
                start: COPY_HEADROOM,
                len,
            };
            let mut gen_key = FlowKey::default();
            let _ = parse_to(frame.bytes(), key.in_port, ParseDepth::L4, &mut gen_key);
            let mut gen_meta = Meta {
                flow: None,
                table_miss: false,
                queue: None,
                ..*meta
            };
            env.depth -= 1;
            apply_actions(env, &mut frame, &mut gen_key, &mut gen_meta, list);
            env.depth += 1;
        }
        _ => env.drops.insp_failed += 1,
    }
    env.pool.push(buf);
}

/// NORMAL: the legacy L2 switch classifies the frame into a VLAN, learns its source and
/// picks the out ports with the tag change each needs (never the ingress port).
#[inline(never)]
fn normal<S: PacketSink>(env: &mut Env<'_, S>, frame: &[u8], key: &FlowKey, meta: &Meta) {
    let state = env.state;
    let tag = (key.vlan_vid & crate::key::OFPVID_PRESENT != 0).then_some(key.vlan_vid & 0x0fff);
    let decision = env.shared.mac_table.decide(
        &state.normal_ports,
        meta.in_port,
        tag,
        key.eth_src,
        key.eth_dst,
        env.now,
    );
    if matches!(decision.forward, Forward::Drop(_)) {
        env.drops.other += 1;
        return;
    }
    for (out_port, op) in decision.outputs(&state.normal_ports) {
        if out_port == meta.in_port {
            continue;
        }
        match op {
            TagOp::Keep => transmit(env, out_port, frame, meta),
            op => with_copy(env, frame, |env, copy| {
                let mut k = FlowKey::default();
                let _ = parse_to(copy.bytes(), meta.in_port, ParseDepth::L2, &mut k);
                let ok = match op {
                    TagOp::Push(vid) => {
                        actions::push_vlan(copy, &mut k, 0x8100) && set_vid(copy, &mut k, vid)
                    }
                    TagOp::Pop => actions::pop_vlan(copy, &mut k),
                    TagOp::SetVid(vid) => set_vid(copy, &mut k, vid),
                    TagOp::Keep => true,
                };
                if ok {
                    transmit(env, out_port, copy.bytes(), meta);
                } else {
                    env.drops.other += 1;
                }
            }),
        }
    }
}

fn set_vid(frame: &mut Frame<'_>, key: &mut FlowKey, vid: u16) -> bool {
    actions::set_field(frame, key, Field::VlanVid, FieldValue::from(vid));
    key.vlan_vid & 0x0fff == vid & 0x0fff
}

/// Executes a packet-out.
#[allow(clippy::too_many_arguments)]
pub(crate) fn packet_out<S: PacketSink>(
    state: &State,
    shared: &Shared,
    lease: &ShardLease,
    scratch: &mut Scratch,
    now: u64,
    in_port: u32,
    list: &[Action],
    frame: &[u8],
    sink: &mut S,
) {
    let mut env = single_env(state, shared, lease, scratch, now, sink);
    with_copy(&mut env, frame, |env, copy| {
        let mut key = FlowKey::default();
        let outcome = parse_to(copy.bytes(), in_port, ParseDepth::L4, &mut key);
        env.parse.record(outcome);
        let mut meta = Meta::outside_tables(in_port);
        apply_actions(env, copy, &mut key, &mut meta, list);
    });
    flush(shared, env.drops);
}
