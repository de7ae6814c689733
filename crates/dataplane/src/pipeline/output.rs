//! Where packets leave the pipeline: ports, reserved ports, the controller, NORMAL.

use super::{Env, Meta, COPY_HEADROOM};
use crate::actions::{self, Frame};
use crate::batch::{PacketInEvent, PacketInReason, PacketSink, NO_BUFFER};
use crate::ir::{port, NO_BUFFER_MAX_LEN};
use crate::key::{Field, FieldValue, FlowKey, ParseDepth};
use crate::normal::{Forward, TagOp};
use crate::parse::parse_to;

/// Sends on a port if it exists and forwards; counts either way.
#[inline(always)]
pub(super) fn transmit<S: PacketSink>(
    env: &mut Env<'_, S>,
    port_no: u32,
    frame: &[u8],
    meta: &Meta,
) {
    let len = frame.len() as u64;
    match env.state.ports.sending(port_no) {
        Some(tx) => tx.add(env.shard, 1, len),
        None => {
            if !count_other_output(env, port_no, len) {
                return;
            }
        }
    }
    match meta.queue {
        Some(q) => env.sink.output_queue(port_no, q, frame),
        None => env.sink.output(port_no, frame),
    }
}

/// Counts an output to a port outside the table of forwarding ports: one numbered beyond the
/// dense range is counted as sent (true), one that does not forward as dropped, and a missing
/// one as a drop of the datapath.
#[inline(never)]
fn count_other_output<S: PacketSink>(env: &mut Env<'_, S>, port_no: u32, len: u64) -> bool {
    let Some(p) = env.state.ports.get(port_no) else {
        env.drops.other += 1;
        return false;
    };
    if !p.forwards() {
        p.counters.tx_dropped.add(env.shard, 1, len);
        return false;
    }
    p.counters.tx.add(env.shard, 1, len);
    true
}

/// Output to any port, reserved ones included.
#[inline(never)]
pub(super) fn output<S: PacketSink>(
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
            let reason = if meta.table_miss() {
                PacketInReason::NoMatch
            } else {
                PacketInReason::Action
            };
            packet_in(env, frame, key, meta, reason, max_len);
        }
        port::LOCAL => env.sink.output(port::LOCAL, frame),
        port::TABLE => super::single::resubmit(env, frame, meta.in_port),
        port::NORMAL => normal(env, frame, key, meta),
        port::ANY => env.drops.other += 1,
        p if p == meta.in_port => env.drops.other += 1,
        p => transmit(env, p, frame, meta),
    }
}

#[inline(never)]
pub(super) fn packet_in<S: PacketSink>(
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
    if let Some(meter) = env.state.meters.get(crate::meter::CONTROLLER) {
        if meter.apply(env.now, frame.len()) == crate::meter::MeterVerdict::Drop {
            env.drops.meter += 1;
            return;
        }
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
        cookie: meta.cookie(),
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

/// A copy buffer for a packet nested in another (group bucket, OUTPUT TABLE, InSP);
/// `None`, the packet counted as dropped, when the nesting budget or the pool is exhausted.
/// Give it back to `env.pool`.
pub(super) fn take_buffer<S>(env: &mut Env<'_, S>) -> Option<Vec<u8>> {
    let buf = (env.depth > 0).then(|| env.pool.pop()).flatten();
    if buf.is_none() {
        env.drops.other += 1;
    }
    buf
}

/// Copies `frame` into a pool buffer and runs `f` on the copy; drops (counted) when the
/// nesting budget or the pool is exhausted.
#[inline(never)]
pub(super) fn with_copy<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &[u8],
    f: impl FnOnce(&mut Env<'_, S>, &mut Frame<'_>),
) {
    let Some(mut buf) = take_buffer(env) else {
        return;
    };
    if let Some(dst) = buf.get_mut(COPY_HEADROOM..COPY_HEADROOM + frame.len()) {
        dst.copy_from_slice(frame);
    }
    if let Some(mut copy) = Frame::new(&mut buf, COPY_HEADROOM, frame.len()) {
        env.depth -= 1;
        f(env, &mut copy);
        env.depth += 1;
    } else {
        env.drops.other += 1;
    }
    env.pool.push(buf);
}

/// NORMAL: the legacy L2 switch classifies the frame into a VLAN, learns its source and
/// picks the out ports with the tag change each needs (never the ingress port).
#[inline(never)]
pub(super) fn normal<S: PacketSink>(
    env: &mut Env<'_, S>,
    frame: &[u8],
    key: &FlowKey,
    meta: &Meta,
) {
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
