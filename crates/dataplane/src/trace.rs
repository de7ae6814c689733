//! Tracing one packet through the tables without sending it (what `ofproto/trace` is to Open
//! vSwitch): the packet is parsed as on a port, looked up table by table in the published
//! snapshot the datapath threads run, and each matched entry's instructions are followed with
//! the pipeline's own header actions on a private copy of the frame, so a set-field or a
//! goto-table leads where it leads a real packet.
//!
//! Read-only: no flow, port, group or meter counter moves, no meter token is taken, nothing
//! is buffered, learned or sent. What would leave the pipeline (outputs, packet-ins, groups,
//! meters, InSP generation) is reported, not done; a group's buckets and a meter's bands are
//! not entered (their counters and token buckets would be).

use crate::actions::{self, ActionSet, Edit, Frame};
use crate::ir::{port, Action};
use crate::key::{FlowKey, ParseDepth};
use crate::parse::parse_to;
use crate::program::{action_of, flag, CompiledAction};
use crate::snapshot::Snapshot;

/// What happened to the traced packet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// The tables visited, in order.
    pub steps: Vec<TraceStep>,
    /// The action set executed at the end of the pipeline (empty when none was written).
    pub action_set: Vec<String>,
    /// Where the packet would go: outputs, packet-ins, groups, each as an action.
    pub outputs: Vec<String>,
    /// Why the pipeline ended without an output, if it did.
    pub dropped: Option<String>,
    /// The frame as it would leave the last action (after every rewrite).
    pub frame: Vec<u8>,
}

/// One table's lookup and what its entry did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceStep {
    pub table: u8,
    /// The entry the packet matched (`None`: a miss without a table-miss entry).
    pub entry: Option<TracedEntry>,
    /// The entry's instructions as they ran: `apply:…`, `write:…`, `meter:…`, `goto_table:…`.
    pub ops: Vec<String>,
}

/// The matched entry: its datapath id (the switch core's flow id), priority and cookie.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TracedEntry {
    pub flow_id: u64,
    pub priority: u16,
    pub cookie: u64,
}

const HEADROOM: usize = crate::batch::DEFAULT_HEADROOM;

/// Traces `frame` arriving on `in_port` through `state`'s tables.
pub(crate) fn trace(state: &Snapshot, in_port: u32, frame: &[u8]) -> Trace {
    let mut out = Trace::default();
    let mut buf = vec![0u8; HEADROOM + frame.len().max(64)];
    buf[HEADROOM..HEADROOM + frame.len()].copy_from_slice(frame);
    let Some(mut frame) = Frame::new(&mut buf, HEADROOM, frame.len()) else {
        out.dropped = Some("the frame is empty".into());
        return out;
    };
    let mut key = FlowKey::default();
    if let Err(e) = parse_to(frame.bytes(), in_port, ParseDepth::L4, &mut key) {
        out.dropped = Some(format!("malformed: {e:?}"));
        out.frame = frame.bytes().to_vec();
        return out;
    }
    let mut set = ActionSet::default();
    let mut table_id = 0u8;
    while let Some(table) = state.table(table_id) {
        let rule = table.rule(table.lookup_one(key.words()));
        let Some(rule) = rule else {
            out.steps.push(TraceStep {
                table: table_id,
                entry: None,
                ops: Vec::new(),
            });
            out.dropped = Some(format!("no entry matched in table {table_id}"));
            break;
        };
        let entry = rule.payload;
        let program = &entry.program;
        let mut step = TraceStep {
            table: table_id,
            entry: Some(TracedEntry {
                flow_id: rule.id,
                priority: rule.priority,
                cookie: entry.cookie,
            }),
            ops: Vec::new(),
        };
        let slow = program.slow();
        if program.flags & flag::METER != 0 {
            step.ops
                .push(format!("meter:{} (not run by a trace)", program.meter));
        }
        let mut ended = None;
        for op in program.apply() {
            let Some(action) = action_of(*op, slow) else {
                continue;
            };
            step.ops.push(format!("apply: {}", describe(&action)));
            if let Err(why) = act(&mut frame, &mut key, action, &mut out.outputs) {
                ended = Some(why);
                break;
            }
        }
        if let Some(why) = ended {
            out.dropped = Some(why);
            out.steps.push(step);
            break;
        }
        if let Some(insp) = program.insp() {
            step.ops.push(format!(
                "insp: template {} (a packet would be generated)",
                insp.template_id
            ));
        }
        if program.flags & flag::CLEAR != 0 {
            step.ops.push("clear_actions".into());
            set.clear();
        }
        let write: &[CompiledAction] = if program.flags & flag::WRITE != 0 {
            program.write()
        } else {
            &[]
        };
        for op in write {
            if let Some(action) = action_of(*op, slow) {
                step.ops.push(format!("write: {}", describe(&action)));
                set.write_one(action);
            }
        }
        if let Some((value, mask)) = program.metadata() {
            key.metadata = (key.metadata & !mask) | (value & mask);
            step.ops
                .push(format!("write_metadata:{value:#x}/{mask:#x}"));
        }
        let goto = program.goto().filter(|next| *next > table_id);
        out.steps.push(step);
        match goto {
            Some(next) => {
                if let Some(step) = out.steps.last_mut() {
                    step.ops.push(format!("goto_table:{next}"));
                }
                table_id = next;
            }
            None => {
                let mut ended = None;
                set.for_each(|action| {
                    out.action_set.push(describe(&action));
                    match act(&mut frame, &mut key, action, &mut out.outputs) {
                        Ok(()) => true,
                        Err(why) => {
                            ended = Some(why);
                            false
                        }
                    }
                });
                out.dropped = ended;
                break;
            }
        }
    }
    if out.dropped.is_none() && out.outputs.is_empty() {
        out.dropped = Some("no output action".into());
    }
    out.frame = frame.bytes().to_vec();
    out
}

/// Applies one action to the private copy; outputs and groups are noted, never done.
fn act(
    frame: &mut Frame<'_>,
    key: &mut FlowKey,
    action: Action,
    outputs: &mut Vec<String>,
) -> Result<(), String> {
    match action {
        Action::Output { .. } | Action::Group(_) => outputs.push(describe(&action)),
        Action::SetField(..) => actions::ensure_depth(frame, key, ParseDepth::L4),
        _ => {}
    }
    match actions::edit_headers(frame, key, action) {
        Edit::Applied => Ok(()),
        Edit::NoRoom => Err("no room to push a header".into()),
        Edit::TtlExpired(_) if action == Action::DecMplsTtl => Err("MPLS TTL expired".into()),
        Edit::TtlExpired(_) => Err("IP TTL expired".into()),
    }
}

/// An action in `ovs-ofctl`'s words where it has one.
pub fn describe(action: &Action) -> String {
    match *action {
        Action::Output { port, max_len } => match port {
            port::IN_PORT => "output:IN_PORT".into(),
            port::TABLE => "output:TABLE".into(),
            port::NORMAL => "output:NORMAL".into(),
            port::FLOOD => "output:FLOOD".into(),
            port::ALL => "output:ALL".into(),
            port::CONTROLLER => format!("output:CONTROLLER:{max_len}"),
            port::LOCAL => "output:LOCAL".into(),
            n => format!("output:{n}"),
        },
        Action::Group(g) => format!("group:{g}"),
        Action::SetQueue(q) => format!("set_queue:{q}"),
        Action::SetField(f, v) => format!("set_field:{:#x}->{f:?}", v.0),
        Action::PushVlan(e) => format!("push_vlan:{e:#06x}"),
        Action::PopVlan => "pop_vlan".into(),
        Action::PushMpls(e) => format!("push_mpls:{e:#06x}"),
        Action::PopMpls(e) => format!("pop_mpls:{e:#06x}"),
        Action::PushPbb(e) => format!("push_pbb:{e:#06x}"),
        Action::PopPbb => "pop_pbb".into(),
        Action::SetMplsTtl(t) => format!("set_mpls_ttl:{t}"),
        Action::DecMplsTtl => "dec_mpls_ttl".into(),
        Action::SetNwTtl(t) => format!("set_nw_ttl:{t}"),
        Action::DecNwTtl => "dec_ttl".into(),
        Action::CopyTtlOut => "copy_ttl_out".into(),
        Action::CopyTtlIn => "copy_ttl_in".into(),
    }
}
