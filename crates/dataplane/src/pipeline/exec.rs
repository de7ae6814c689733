//! Running a matched entry: its compiled instructions in the order of spec section 5.9, its
//! ops, groups and the action set.

use super::output::{output, packet_in, transmit, with_copy};
use super::{Env, Meta, Verdict};
use crate::actions::{self, ActionSet, Edit, Frame, InvalidTtl};
use crate::batch::{PacketInReason, PacketSink};
use crate::group::{self, Choice};
use crate::ir::{port, Action};
use crate::key::{Field, FieldValue, FlowKey, ParseDepth};
use crate::meter::{increase_drop_precedence, MeterVerdict};
use crate::model::GroupType;
use crate::program::{compile_action, flag, CompiledAction, CompiledActions, Mac, NO_GOTO};
use crate::snapshot::{CompiledBucket, FlowEntry};
use crate::wire::ethernet;

/// Most buckets one group executes.
const MAX_BUCKETS: usize = 64;

/// Runs a matched entry's instructions; returns the table to continue at, or `None` when the
/// packet is finished (action set executed, or dropped). Entries with nothing but
/// Apply-Actions (and a goto) take the short path; the rest [`run_entry_full`].
#[inline(always)]
pub(super) fn run_entry<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    set: &mut ActionSet,
    entry: &FlowEntry,
    table: u8,
) -> Option<u8> {
    let program = &entry.program;
    if program.flags == flag::WRITE && program.goto == NO_GOTO && set.is_empty() {
        // The last table with Write-Actions only, on an empty set: they run now, in order.
        let mut meta = Meta::of_entry(key, entry, table);
        run_sorted(env, frame, key, &mut meta, program.write(), program.slow());
        return None;
    }
    if program.flags != 0 {
        return run_entry_full(env, frame, key, set, entry, table);
    }
    let mut meta = Meta::of_entry(key, entry, table);
    if run_ops(env, frame, key, &mut meta, program.apply(), program.slow()) == Verdict::Drop {
        return None;
    }
    leave_entry(env, frame, key, set, &mut meta, program.goto())
}

/// After an entry's instructions: without a goto the pipeline ends and the action set runs.
#[inline(always)]
fn leave_entry<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    set: &ActionSet,
    meta: &mut Meta,
    goto: Option<u8>,
) -> Option<u8> {
    if goto.is_none() && env.action_sets && !set.is_empty() {
        run_action_set(env, frame, key, set, meta);
    }
    goto
}

/// [`run_entry`] for any program: meter, InSP, clear, write-actions, metadata.
#[inline(never)]
fn run_entry_full<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    set: &mut ActionSet,
    entry: &FlowEntry,
    table: u8,
) -> Option<u8> {
    let program = &entry.program;
    if program.flags & flag::GOTO_ONLY != 0 {
        return program.goto();
    }
    let mut meta = Meta::of_entry(key, entry, table);
    if program.flags & flag::METER != 0 && meter(env, frame, key, program.meter) == Verdict::Drop {
        return None;
    }
    let slow = program.slow();
    let apply = program.apply();
    if !apply.is_empty() && run_ops(env, frame, key, &mut meta, apply, slow) == Verdict::Drop {
        return None;
    }
    if let Some(step) = program.insp() {
        super::single::insp(env, frame, key, &meta, step.template_id, &step.actions);
    }
    if program.flags & flag::CLEAR != 0 {
        set.clear();
    }
    if let Some((value, mask)) = program.metadata() {
        key.metadata = (key.metadata & !mask) | (value & mask);
    }
    let goto = program.goto();
    if program.flags & flag::WRITE != 0 {
        if goto.is_none() && set.is_empty() {
            // The set would hold exactly these actions and run now: run them directly.
            run_sorted(env, frame, key, &mut meta, program.write(), slow);
            return None;
        }
        for op in program.write() {
            if let Some(a) = crate::program::action_of(*op, slow) {
                set.write_one(a);
            }
        }
    }
    leave_entry(env, frame, key, set, &mut meta, goto)
}

/// Executes the action set at the end of the pipeline.
#[inline(never)]
fn run_action_set<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    set: &ActionSet,
    meta: &mut Meta,
) {
    set.for_each(|a| apply_action(env, frame, key, meta, a, true) == Verdict::Continue);
}

/// The meter instruction: a drop band ends processing, a DSCP-remark band raises the drop
/// precedence.
#[inline(never)]
fn meter<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    id: u32,
) -> Verdict {
    let Some(meter) = env.state.meters.get(id) else {
        return Verdict::Continue;
    };
    match meter.apply(env.now, frame.len()) {
        MeterVerdict::Pass => {}
        MeterVerdict::Drop => {
            env.drops.meter += 1;
            return Verdict::Drop;
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
    Verdict::Continue
}

/// Runs an Apply-Actions list in order.
#[inline(always)]
fn run_ops<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    meta: &mut Meta,
    ops: &[CompiledAction],
    slow: &[Action],
) -> Verdict {
    for op in ops {
        if apply_op(env, frame, key, meta, *op, slow, false) == Verdict::Drop {
            return Verdict::Drop;
        }
    }
    Verdict::Continue
}

/// Runs ops already in action-set order (a bucket, or an entry's Write-Actions on an empty
/// set); the packet is finished afterwards, so the last op may consume it. Inlined: where a
/// packet usually ends (a route's Write-Actions, a next hop's bucket) the call, with its
/// register saves, costs about as much as the ops (some 50 instructions of an L3 packet).
#[inline(always)]
fn run_sorted<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    meta: &mut Meta,
    ops: &[CompiledAction],
    slow: &[Action],
) {
    let count = ops.len();
    for (i, op) in ops.iter().enumerate() {
        if apply_op(env, frame, key, meta, *op, slow, i + 1 == count) == Verdict::Drop {
            return;
        }
    }
}

/// Applies one IR action (the action set, packet-out, InSP).
pub(super) fn apply_action<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    meta: &mut Meta,
    action: Action,
    last: bool,
) -> Verdict {
    let slow = core::slice::from_ref(&action);
    apply_op(env, frame, key, meta, compile_action(action), slow, last)
}

/// Applies one op. `last` means the packet is not used afterwards, so a group may run its
/// (single) bucket on it in place instead of on a copy. Output to a port and MAC rewrites are
/// handled here; everything else out of line, so the common loop stays small.
#[inline(always)]
fn apply_op<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    meta: &mut Meta,
    op: CompiledAction,
    slow: &[Action],
    last: bool,
) -> Verdict {
    match op {
        CompiledAction::Output(port) if port != meta.in_port => {
            transmit(env, port, frame.bytes(), meta)
        }
        // Never back out of the ingress port: that takes the reserved port IN_PORT.
        CompiledAction::Output(_) => env.drops.other += 1,
        CompiledAction::SetEthDst(Mac(mac)) => {
            key.eth_dst = mac;
            frame.put_mac(ethernet::field::DST.start, mac);
        }
        CompiledAction::SetEthSrc(Mac(mac)) => {
            key.eth_src = mac;
            frame.put_mac(ethernet::field::SRC.start, mac);
        }
        CompiledAction::DecNwTtl => {
            if let Err(e) = actions::dec_nw_ttl(frame, key) {
                return ttl_expired(env, frame, key, meta, e);
            }
        }
        CompiledAction::SetIpv4Src(a) => actions::set_ipv4(frame, key, false, a),
        CompiledAction::SetIpv4Dst(a) => actions::set_ipv4(frame, key, true, a),
        CompiledAction::Group(id) => run_group(env, frame, key, meta, id, last),
        op => return apply_other(env, frame, key, meta, op, slow),
    }
    Verdict::Continue
}

/// [`apply_op`] for the ops it does not run inline: outputs to reserved ports (or back to
/// the ingress port), the queue, and actions without a specialised op.
#[inline(never)]
fn apply_other<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    meta: &mut Meta,
    op: CompiledAction,
    slow: &[Action],
) -> Verdict {
    match op {
        CompiledAction::Reserved(port) => output(env, frame.bytes(), key, meta, port, 0),
        CompiledAction::Controller(max_len) => {
            output(env, frame.bytes(), key, meta, port::CONTROLLER, max_len)
        }
        CompiledAction::SetQueue(q) => meta.queue = Some(q),
        CompiledAction::Slow(i) => {
            if let Some(a) = slow.get(usize::from(i)) {
                return edit(env, frame, key, meta, *a);
            }
        }
        // Run by `apply_op` itself.
        CompiledAction::Output(_)
        | CompiledAction::Group(_)
        | CompiledAction::SetEthDst(_)
        | CompiledAction::SetEthSrc(_)
        | CompiledAction::SetIpv4Src(_)
        | CompiledAction::SetIpv4Dst(_)
        | CompiledAction::DecNwTtl => {}
    }
    Verdict::Continue
}

/// Header-rewriting actions without a specialised op (kept out of line so the common path
/// stays small).
#[inline(never)]
fn edit<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    meta: &mut Meta,
    action: Action,
) -> Verdict {
    match actions::edit_headers(frame, key, action) {
        Edit::Applied => Verdict::Continue,
        Edit::NoRoom => {
            // No headroom left for a push: the packet cannot be built, drop it.
            env.drops.other += 1;
            Verdict::Drop
        }
        Edit::TtlExpired(e) => ttl_expired(env, frame, key, meta, e),
    }
}

/// A TTL ran out: the packet is dropped, and reported when the switch config asks for it.
#[inline(never)]
fn ttl_expired<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &Frame<'_>,
    key: &FlowKey,
    meta: &Meta,
    _: InvalidTtl,
) -> Verdict {
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

/// Runs a group's buckets (its own function: the op loop calls it without the large frame
/// of [`apply_other`]).
#[inline(never)]
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
    let len = frame.len() as u64;
    if let (GroupType::Indirect, true, 1.., Some(bucket)) =
        (entry.kind, in_place, env.depth, entry.buckets.first())
    {
        // The next hop of a route: its one bucket on the packet itself.
        entry.counter.add(env.shard, 1, len);
        count_bucket(env, bucket, len);
        run_bucket_in_place(env, frame, key, meta, &bucket.ops);
        return;
    }
    let (first, n) = match entry.kind {
        // The next hop of a route: its one bucket, usually on the packet itself.
        GroupType::Indirect => (0, entry.buckets.len().min(1)),
        GroupType::All => (0, entry.buckets.len().min(MAX_BUCKETS)),
        kind => {
            if kind == GroupType::Select {
                // The flow hash covers L3/L4 headers even when the matches did not need them.
                actions::ensure_depth(frame, key, ParseDepth::L4);
            }
            match group::choose(entry, key) {
                Choice::All => (0, entry.buckets.len().min(MAX_BUCKETS)),
                Choice::One(b) => (b, 1),
                Choice::Nothing => (0, 0),
            }
        }
    };
    entry.counter.add(env.shard, 1, len);
    if n == 0 {
        env.drops.other += 1;
        return;
    }
    for (k, b) in (first..first + n).enumerate() {
        let Some(bucket) = entry.buckets.get(b) else {
            continue;
        };
        count_bucket(env, bucket, len);
        let bucket = &bucket.ops;
        if in_place && k + 1 == n && env.depth > 0 {
            run_bucket_in_place(env, frame, key, meta, bucket);
        } else {
            let mut bucket_meta = *meta;
            let mut copy_key = *key;
            with_copy(env, frame.bytes(), |env, copy| {
                run_sorted(
                    env,
                    copy,
                    &mut copy_key,
                    &mut bucket_meta,
                    &bucket.ops,
                    &bucket.slow,
                );
            });
        }
    }
}

/// Counts a packet of `len` bytes in `bucket`'s counter.
#[inline(always)]
fn count_bucket<S: PacketSink>(env: &Env<'_, S>, bucket: &CompiledBucket, len: u64) {
    if let Some(c) = bucket.counter {
        c.add(env.shard, 1, len);
    }
}

/// Runs `bucket` on the packet itself, one nesting level down (the caller checked that
/// a level is left).
#[inline(always)]
fn run_bucket_in_place<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    meta: &Meta,
    bucket: &CompiledActions,
) {
    let mut bucket_meta = *meta;
    env.depth -= 1;
    run_sorted(env, frame, key, &mut bucket_meta, &bucket.ops, &bucket.slow);
    env.depth += 1;
}

/// Runs IR actions in list order (packet-out, InSP).
pub(super) fn apply_actions<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    meta: &mut Meta,
    list: &[Action],
) -> Verdict {
    for a in list {
        if apply_action(env, frame, key, meta, *a, false) == Verdict::Drop {
            return Verdict::Drop;
        }
    }
    Verdict::Continue
}
