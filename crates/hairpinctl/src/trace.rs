//! `hairpinctl trace FLOW`: the packet FLOW describes (`in_port=1,tcp,nw_dst=10.0.0.2,...`)
//! run through the daemon's current tables without being sent (management command `trace`),
//! printed like `ovs-appctl ofproto/trace`: each table with the entry the packet matched, in
//! `dump-flows` syntax, and the instructions as they ran; then the action set and where the
//! packet would go.

use std::fmt::Write;

use ofp::{Message, MultipartReplyBody};
use serde_json::{json, Value};

use crate::compose::compose;
use crate::error::CtlError;
use crate::syntax::flow::{format_flow_stats, parse_flow, FlowUse};

/// The `trace` params for a flow description.
pub fn request(flow: &[String]) -> Result<Value, CtlError> {
    let text = flow.join(",");
    let spec = parse_flow(&text, FlowUse::Filter).map_err(|e| CtlError::Usage(e.to_string()))?;
    let (in_port, frame) = compose(&spec.match_).map_err(CtlError::Usage)?;
    Ok(json!({ "in_port": in_port, "frame": hex::encode(&frame) }))
}

/// The trace as the operator reads it.
pub fn format(flow: &[String], r: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Flow: {}", flow.join(","));
    let _ = writeln!(out, "Packet after the pipeline: {}", text(&r["frame"]));
    for step in r["steps"].as_array().map_or(&[][..], Vec::as_slice) {
        let table = step["table"].as_u64().unwrap_or(0);
        let _ = writeln!(out);
        match &step["entry"] {
            Value::Null => {
                let _ = writeln!(out, "{table}. No match: the packet is dropped.");
            }
            entry => {
                let shown = entry["flow"]
                    .as_str()
                    .and_then(flow_line)
                    .unwrap_or_else(|| {
                        format!(
                            "priority={}, cookie={:#x} (gone since)",
                            entry["priority"],
                            entry["cookie"].as_u64().unwrap_or(0)
                        )
                    });
                let _ = writeln!(out, "{table}. {shown}");
            }
        }
        for op in step["ops"].as_array().map_or(&[][..], Vec::as_slice) {
            let _ = writeln!(out, "    {}", text(op));
        }
    }
    let _ = writeln!(out);
    let set = list(&r["action_set"]);
    if !set.is_empty() {
        let _ = writeln!(out, "Action set: {set}");
    }
    let outputs = list(&r["outputs"]);
    let _ = writeln!(
        out,
        "Datapath actions: {}",
        if outputs.is_empty() { "drop" } else { &outputs }
    );
    if let Some(why) = r["dropped"].as_str() {
        let _ = writeln!(out, "Dropped: {why}");
    }
    out
}

fn text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

fn list(v: &Value) -> String {
    v.as_array()
        .map(|a| a.iter().map(text).collect::<Vec<_>>().join(", "))
        .unwrap_or_default()
}

/// A flow-stats reply (hex) as a `dump-flows` line.
fn flow_line(reply_hex: &str) -> Option<String> {
    let bytes = hex::decode(reply_hex).ok()?;
    let (_, Message::MultipartReply(reply)) = ofp::decode(&bytes).ok()? else {
        return None;
    };
    let MultipartReplyBody::Flow(flows) = reply.body else {
        return None;
    };
    flows.first().map(format_flow_stats)
}
