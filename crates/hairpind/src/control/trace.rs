//! `trace`: a packet followed through the tables the datapath threads run now, without being
//! sent and without moving any counter (`dataplane::trace`), like Open vSwitch's
//! `ofproto/trace`. Params: `{"in_port": N, "frame": "HEX"}` (`hairpinctl trace` composes the
//! frame from a flow description). Each table visited comes back with the entry it matched,
//! as an OpenFlow flow-stats reply (hex) for the client to print in its own syntax, and the
//! instructions as they ran; then the action set, the outputs, and why it dropped if it did.

use agent::Agent;
use dataplane::datapath::DatapathReaderFactory;
use dataplane::model::FlowId;
use ofp::{Message, MultipartReply, MultipartReplyBody};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{CommandError, Registry};

/// Largest frame a trace takes (the datapath's own largest).
const MAX_FRAME: usize = dataplane::batch::DEFAULT_MAX_FRAME;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TraceParams {
    in_port: u32,
    frame: String,
}

pub fn register(registry: &mut Registry, agent: Agent, readers: DatapathReaderFactory) {
    registry.add(
        "trace",
        "a packet through the tables, not sent: {\"in_port\": N, \"frame\": \"HEX\"}",
        move |value| {
            let p: TraceParams = serde_json::from_value(value)
                .map_err(|e| CommandError::new(format!("trace: {e}")))?;
            let frame = hex::decode(p.frame.trim())
                .map_err(|e| CommandError::new(format!("trace: `frame` is not hex bytes: {e}")))?;
            if frame.len() > MAX_FRAME {
                return Err(CommandError::new(format!(
                    "trace: a frame of {} bytes is longer than {MAX_FRAME}",
                    frame.len()
                )));
            }
            if !agent.with_switch(|s| s.has_port(p.in_port)) {
                return Err(CommandError::new(format!("trace: no port {}", p.in_port)));
            }
            let trace = readers
                .trace(p.in_port, &frame)
                .ok_or_else(|| CommandError::new("trace: the datapath is gone"))?;
            let now = switch_core::clock::now_ns();
            let steps: Vec<Value> = trace
                .steps
                .iter()
                .map(|step| {
                    let entry = step.entry.map(|e| {
                        let stats = agent.with_switch(|s| {
                            s.flow_stats_by_id(step.table, FlowId(e.flow_id), now)
                        });
                        json!({
                            "priority": e.priority,
                            "cookie": e.cookie,
                            "flow": stats.map(|stats| {
                                let mut wire = Vec::new();
                                let reply = Message::MultipartReply(MultipartReply {
                                    flags: 0,
                                    body: MultipartReplyBody::Flow(vec![stats]),
                                });
                                ofp::encode(0, &reply, &mut wire);
                                hex::encode(&wire)
                            }),
                        })
                    });
                    json!({ "table": step.table, "entry": entry, "ops": step.ops })
                })
                .collect();
            Ok(json!({
                "in_port": p.in_port,
                "steps": steps,
                "action_set": trace.action_set,
                "outputs": trace.outputs,
                "dropped": trace.dropped,
                "frame": hex::encode(&trace.frame),
            }))
        },
    );
}
