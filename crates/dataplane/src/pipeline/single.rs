//! Packets that arrive one at a time: packet-out, OUTPUT TABLE, InSP-generated packets and
//! fail-standalone NORMAL. They use the batch path's instruction code with a single-packet
//! lookup.

use super::exec::{apply_actions, run_entry};
use super::output::{normal, take_buffer, with_copy};
use super::{flush, Env, Intake, Meta, Scratch, COPY_HEADROOM, MAX_DEPTH};
use crate::actions::{ActionSet, Frame};
use crate::batch::{PacketBatch, PacketSink};
use crate::counters::ShardLease;
use crate::ir::Action;
use crate::key::{FlowKey, ParseDepth};
use crate::parse::parse_to;
use crate::shared::Shared;
use crate::snapshot::Snapshot;

/// The environment of the per-packet paths: the reader's copy pool and drop counters, the
/// full nesting budget.
fn single_env<'a, S>(
    state: &'a Snapshot,
    shared: &'a Shared,
    lease: &'a ShardLease,
    scratch: &'a mut Scratch,
    now: u64,
    sink: &'a mut S,
) -> Env<'a, S> {
    Env {
        state,
        shared,
        shard: lease.shard(),
        now,
        sink,
        pool: &mut scratch.pool,
        drops: &mut scratch.drops,
        parse: &mut scratch.parse,
        depth: MAX_DEPTH,
        action_sets: state.writes_action_sets(),
    }
}

/// Runs a batch through NORMAL alone (fail-standalone with no controller): the same intake
/// and counters as [`super::process`], then the legacy learning switch instead of the tables.
pub(crate) fn process_normal<S: PacketSink>(
    state: &Snapshot,
    shared: &Shared,
    lease: &ShardLease,
    scratch: &mut Scratch,
    now: u64,
    batch: &PacketBatch,
    sink: &mut S,
) {
    let mut env = single_env(state, shared, lease, scratch, now, sink);
    let mut intake = Intake::new(state, lease.shard());
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

/// Runs one packet through the pipeline from table 0 (OUTPUT TABLE).
#[inline(never)]
pub(super) fn resubmit<S: PacketSink>(env: &mut Env<'_, S>, frame: &[u8], in_port: u32) {
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
        let Some(entry) = table.payload(table.lookup_one(key.words())) else {
            env.drops.no_match += 1;
            break;
        };
        entry.cell.hit(env.shard, frame.len() as u64);
        match run_entry(env, frame, key, &mut set, entry, table_id) {
            Some(next) if next > table_id => table_id = next,
            _ => break,
        }
    }
}

/// InSP: builds a packet from the template and the triggering packet and runs `list` on it.
#[inline(never)]
pub(super) fn insp<S: PacketSink>(
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
    let Some(mut buf) = take_buffer(env) else {
        return;
    };
    let generated = buf
        .get_mut(COPY_HEADROOM..)
        .map(|out| template.instantiate(trigger.bytes(), out));
    match generated {
        Some(Ok(len)) if len > 0 => {
            let Some(mut frame) = Frame::new(&mut buf, COPY_HEADROOM, len) else {
                env.drops.insp_failed += 1;
                env.pool.push(buf);
                return;
            };
            let mut gen_key = FlowKey::default();
            let _ = parse_to(frame.bytes(), key.in_port, ParseDepth::L4, &mut gen_key);
            let mut gen_meta = Meta {
                entry: None,
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

/// Generates a packet from template `template_id` without a trigger (an InSP timer) and
/// runs `list` on it as on a packet-out arriving on `in_port`. A template that is gone or
/// needs a trigger generates nothing and counts an InSP failure.
#[allow(clippy::too_many_arguments)]
pub(crate) fn generate<S: PacketSink>(
    state: &Snapshot,
    shared: &Shared,
    lease: &ShardLease,
    scratch: &mut Scratch,
    now: u64,
    template_id: u32,
    in_port: u32,
    list: &[Action],
    sink: &mut S,
) {
    let mut env = single_env(state, shared, lease, scratch, now, sink);
    match state.templates.get(template_id) {
        Some(template) => generated(&mut env, template, in_port, list),
        None => env.drops.insp_failed += 1,
    }
    flush(shared, env.drops);
}

fn generated<S: PacketSink>(
    env: &mut Env<'_, S>,
    template: &crate::template::PacketTemplate,
    in_port: u32,
    list: &[Action],
) {
    let Some(mut buf) = take_buffer(env) else {
        return;
    };
    let len = buf
        .get_mut(COPY_HEADROOM..)
        .map(|out| template.instantiate(&[], out));
    let frame = match len {
        Some(Ok(len)) if len > 0 => Frame::new(&mut buf, COPY_HEADROOM, len),
        _ => None,
    };
    match frame {
        Some(mut frame) => {
            let mut key = FlowKey::default();
            let outcome = parse_to(frame.bytes(), in_port, ParseDepth::L4, &mut key);
            env.parse.record(outcome);
            let mut meta = Meta::outside_tables(in_port);
            env.depth -= 1;
            apply_actions(env, &mut frame, &mut key, &mut meta, list);
            env.depth += 1;
        }
        None => env.drops.insp_failed += 1,
    }
    env.pool.push(buf);
}

/// Executes a packet-out.
#[allow(clippy::too_many_arguments)]
pub(crate) fn packet_out<S: PacketSink>(
    state: &Snapshot,
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
