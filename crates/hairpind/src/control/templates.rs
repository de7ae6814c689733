//! `templates/list`: the InSP packet templates as the switch holds them (crates/ofp/INSP.md).

use agent::Agent;
use serde_json::{json, Value};

use super::Registry;

pub fn register(registry: &mut Registry, agent: Agent) {
    registry.add(
        "templates/list",
        "InSP packet templates: size, operations, flow entries using each, packets generated, memory",
        move |_| Ok(agent.with_switch(|switch| list(&switch.template_stats(0, usize::MAX)))),
    );
}

fn list(stats: &[ofp::PktTmpStats]) -> Value {
    let entries: Vec<Value> = stats
        .iter()
        .map(|t| {
            json!({
                "pkttmp_id": t.pkttmp_id,
                "len": t.len,
                "copy_ops": t.copy_ops,
                "checksum_ops": t.checksum_ops,
                "flows": t.flow_count,
                "generated": t.generated,
                "trigger_errors": t.trigger_errors,
                "memory": t.memory,
            })
        })
        .collect();
    Value::Array(entries)
}
